//===- frontend/onnx/tensor_proto.h - TensorProto <-> Tensor ----*- C++ -*-===//
//
// Internal to the ONNX frontend (importer.cpp, conformance.cpp and the unit
// tests): conversions between onnx::TensorProto and ir::Tensor, and between
// ONNX element types and ours. Protobuf types are only forward-declared
// here; include <onnx/onnx_pb.h> to use them.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/tensor.h"
#include "support/error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace onnx {
class TensorProto;
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

} // namespace tessera::frontend::onnx
