//===- frontend/onnx/tensor_proto.h - TensorProto <-> Tensor ----*- C++ -*-===//
//
// Internal to the ONNX frontend (importer.cpp, conformance.cpp and the unit
// tests): conversions between onnx::TensorProto and ir::Tensor, and between
// ONNX element types and ours; sequence and optional values (SequenceProto,
// OptionalProto) as OnnxValue. Protobuf types are only forward-declared
// here; include <onnx/onnx_pb.h> (and <onnx/onnx-data.pb.h>) to use them.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/tensor.h"
#include "ir/type.h"
#include "support/error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace onnx {
class TensorProto;
class SequenceProto;
class OptionalProto;
class TypeProto;
} // namespace onnx

namespace tessera::frontend::onnx {

/// ONNX TensorProto::DataType -> our dtype; nullopt for the ones we do not
/// support (string, complex, float8, ...).
std::optional<ir::DType> dtypeFromOnnx(int32_t onnxType);
/// Our dtype -> ONNX TensorProto::DataType.
int32_t dtypeToOnnx(ir::DType t);
/// "FLOAT", "STRING", ... ("UNKNOWN(42)" for values outside the enum).
std::string onnxDTypeName(int32_t onnxType);

/// Reads a TensorProto: raw_data, the typed fields (float_data, int32_data
/// carrying f16/bf16/bool/int8/uint8/int16/uint16, int64_data, double_data,
/// uint64_data carrying uint32/uint64) or external
/// data (a file relative to `baseDir`). `what` names the tensor in errors
/// (e.g. "initializer 'conv1.weight'"); empty means "tensor '<name>'".
Expected<ir::Tensor> tensorFromProto(const ::onnx::TensorProto &proto, const std::string &baseDir,
                                     std::string_view what = {});

/// Writes `t` into `proto` (dims, data_type and raw_data, or the typed field
/// ONNX uses for the dtype when `raw` is false).
void tensorToProto(const ir::Tensor &t, ::onnx::TensorProto &proto, bool raw = true);

/// A value of any ONNX type Tessera handles: a tensor, a sequence (its
/// elements, in order; each a tensor or a nested sequence) or an absent
/// optional. A present optional is represented by its value itself (see
/// docs/onnx-importer.md).
struct OnnxValue {
  enum class Kind { Tensor, Sequence, None };
  Kind kind = Kind::Tensor;
  ir::Tensor tensor;               // Kind::Tensor
  std::vector<OnnxValue> elements; // Kind::Sequence

  static OnnxValue ofTensor(ir::Tensor t);
  static OnnxValue ofSequence(std::vector<OnnxValue> elements);
  static OnnxValue none();

  /// The IR type of the value: the tensor's type, or a tuple type with one
  /// field per element; nullopt for an absent optional.
  std::optional<ir::Type> irType() const;
  /// "f32[2, 3]", "seq(i64[4], i64[3])", "none".
  std::string str() const;
};

/// Reads a SequenceProto of tensors or of nested sequences (maps, sparse
/// tensors and optionals inside sequences are errors). `what` names it.
Expected<OnnxValue> valueFromSequenceProto(const ::onnx::SequenceProto &proto,
                                           const std::string &baseDir, std::string_view what);
/// Reads an OptionalProto: no value is OnnxValue::none(), otherwise the
/// tensor or sequence it holds.
Expected<OnnxValue> valueFromOptionalProto(const ::onnx::OptionalProto &proto,
                                           const std::string &baseDir, std::string_view what);
/// Parses serialized bytes as the message `declared` calls for (a
/// TensorProto for tensor types and when `declared` is null, a SequenceProto
/// for sequence types, an OptionalProto for optional types): test data
/// files do not say which message they hold.
Expected<OnnxValue> parseValue(std::string_view bytes, const ::onnx::TypeProto *declared,
                               const std::string &baseDir, std::string_view what);

} // namespace tessera::frontend::onnx
