//===- frontend/onnx/tensor_proto.cpp - TensorProto <-> Tensor -----------===//
//
// ONNX stores tensor data in one of three ways: raw_data (little-endian
// bytes), a typed repeated field (float_data, int32_data, int64_data,
// double_data, uint64_data; int32_data also carries f16/bf16 bit patterns,
// bool, int8, uint8, int16 and uint16, one element per int32; uint64_data
// carries uint32 and uint64), or an external file (data_location =
// EXTERNAL with location/offset/length entries, relative to the model's
// directory). All three are read here, with every size checked: a malformed
// tensor is an error naming it, never a crash. The host is assumed to be
// little-endian, as ONNX's raw_data is.
//
// Sequence and optional values (SequenceProto, OptionalProto; the backend
// test data of sequence and optional inputs and outputs) are read into
// OnnxValue.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/tensor_proto.h"

#include "frontend/onnx/importer.h"

#include <onnx/onnx_pb.h>
// After onnx_pb.h, which defines ONNX_API for it.
#include <onnx/onnx-data.pb.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <algorithm>

namespace tessera::frontend::onnx {

using ir::DType;
using ::onnx::TensorProto;

std::optional<DType> dtypeFromOnnx(int32_t t) {
  switch (t) {
  case TensorProto::FLOAT: return DType::F32;
  case TensorProto::FLOAT16: return DType::F16;
  case TensorProto::BFLOAT16: return DType::BF16;
  case TensorProto::DOUBLE: return DType::F64;
  case TensorProto::INT8: return DType::I8;
  case TensorProto::UINT8: return DType::U8;
  case TensorProto::INT32: return DType::I32;
  case TensorProto::INT64: return DType::I64;
  case TensorProto::INT16: return DType::I16;
  case TensorProto::UINT16: return DType::U16;
  case TensorProto::UINT32: return DType::U32;
  case TensorProto::UINT64: return DType::U64;
  case TensorProto::BOOL: return DType::Bool;
  default: return std::nullopt;
  }
}

int32_t dtypeToOnnx(DType t) {
  switch (t) {
  case DType::F32: return TensorProto::FLOAT;
  case DType::F16: return TensorProto::FLOAT16;
  case DType::BF16: return TensorProto::BFLOAT16;
  case DType::F64: return TensorProto::DOUBLE;
  case DType::I8: return TensorProto::INT8;
  case DType::U8: return TensorProto::UINT8;
  case DType::I32: return TensorProto::INT32;
  case DType::I64: return TensorProto::INT64;
  case DType::I16: return TensorProto::INT16;
  case DType::U16: return TensorProto::UINT16;
  case DType::U32: return TensorProto::UINT32;
  case DType::U64: return TensorProto::UINT64;
  case DType::Bool: return TensorProto::BOOL;
  }
  return TensorProto::UNDEFINED;
}

std::string onnxDTypeName(int32_t t) {
  if (TensorProto::DataType_IsValid(t))
    return TensorProto::DataType_Name(static_cast<TensorProto::DataType>(t));
  return fmt::format("UNKNOWN({})", t);
}

namespace {

/// Copies t.nbytes() bytes into t. memcpy with a null source is undefined
/// even for zero bytes, and an empty repeated field has a null data().
void copyInto(ir::Tensor &t, const void *src) {
  if (t.nbytes() != 0)
    std::memcpy(t.bytes(), src, t.nbytes());
}

/// Reads `length` bytes at `offset` of an external-data file into `out`.
Expected<ir::Tensor> readExternal(const TensorProto &p, const std::string &baseDir,
                                  const std::string &what, DType dtype, const ir::Shape &shape,
                                  size_t nbytes) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto &e : p.external_data()) {
    const std::string &k = e.key();
    if (k == "location") {
      location = e.value();
    } else if (k == "offset" || k == "length") {
      int64_t v = 0;
      const std::string &s = e.value();
      bool ok = !s.empty() && s.size() < 19;
      for (char c : s)
        ok = ok && c >= '0' && c <= '9';
      if (ok)
        v = std::stoll(s);
      if (!ok)
        return Error::format("{}: external data {} '{}' is not a non-negative integer", what, k, s);
      (k == "offset" ? offset : length) = v;
    }
  }
  if (location.empty())
    return Error::format("{}: external data without a 'location'", what);
  std::filesystem::path rel(location);
  if (rel.is_absolute())
    return Error::format("{}: external data location '{}' must be relative to the model", what,
                         location);
  for (const auto &part : rel)
    if (part == "..")
      return Error::format("{}: external data location '{}' leaves the model's directory", what,
                           location);
  std::string file = (std::filesystem::path(baseDir.empty() ? "." : baseDir) / rel).string();
  if (length >= 0 && uint64_t(length) != nbytes)
    return Error::format("{}: external data length {} does not match {} ({} bytes)", what, length,
                         ir::Type::tensor(dtype, shape).str(), nbytes);
  std::ifstream in(file, std::ios::binary);
  if (!in)
    return Error::format("{}: cannot open external data file '{}': {}", what, file,
                         std::strerror(errno));
  in.seekg(0, std::ios::end);
  int64_t size = int64_t(in.tellg());
  if (size < 0 || offset > size || int64_t(nbytes) > size - offset)
    return Error::format("{}: external data file '{}' is too short ({} bytes; need {} at offset "
                         "{})",
                         what, file, size, nbytes, offset);
  ir::Tensor out(dtype, shape);
  in.seekg(offset);
  in.read(reinterpret_cast<char *>(out.bytes()), std::streamsize(nbytes));
  if (!in)
    return Error::format("{}: cannot read external data file '{}'", what, file);
  return out;
}

template <typename Field>
Status checkCount(const Field &f, int64_t numel, const std::string &what, const char *field) {
  if (int64_t(f.size()) != numel)
    return Error::format("{}: {} has {} values, the shape needs {}", what, field, f.size(), numel);
  return okStatus();
}

} // namespace

Expected<ir::Tensor> tensorFromProto(const TensorProto &p, const std::string &baseDir,
                                     std::string_view whatArg) {
  std::string what = whatArg.empty() ? fmt::format("tensor '{}'", p.name()) : std::string(whatArg);
  std::optional<DType> dtype = dtypeFromOnnx(p.data_type());
  if (!dtype)
    return Error::format("{}: unsupported element type {}", what, onnxDTypeName(p.data_type()));
  ir::Shape shape(p.dims().begin(), p.dims().end());
  if (Status s = ir::checkShape(shape); !s.ok())
    return Error::format("{}: {}", what, s.error().message());
  int64_t numel = 1;
  for (int64_t d : shape) {
    if (d > 0 && numel > (int64_t(1) << 40) / d)
      return Error::format("{}: shape {} is too large", what, ir::shapeStr(shape));
    numel *= d;
  }
  if (p.has_segment())
    return Error::format("{}: segmented tensors are not supported", what);
  const size_t nbytes = size_t(numel) * ir::dtypeSize(*dtype);
  const bool external = p.data_location() == TensorProto::EXTERNAL;
  // Check the data's size before allocating, so that a bogus shape is an
  // error rather than a huge allocation.
  if (!external && p.has_raw_data() && p.raw_data().size() != nbytes)
    return Error::format("{}: raw_data has {} bytes, {} needs {}", what, p.raw_data().size(),
                         ir::Type::tensor(*dtype, shape).str(), nbytes);
  if (!external && !p.has_raw_data()) {
    int64_t given = std::max({p.float_data_size(), p.int32_data_size(), p.int64_data_size(),
                              p.double_data_size(), p.uint64_data_size()});
    if (given != numel) {
      const char *field = *dtype == DType::F32   ? "float_data"
                          : *dtype == DType::F64 ? "double_data"
                          : *dtype == DType::I64 ? "int64_data"
                          : *dtype == DType::U32 || *dtype == DType::U64 ? "uint64_data"
                                                                          : "int32_data";
      return Error::format("{}: {} has {} values, the shape needs {}", what, field, given,
                           numel);
    }
  }
  ir::Tensor t;
  if (external) {
    TS_ASSIGN_OR_RETURN(t, readExternal(p, baseDir, what, *dtype, shape, nbytes));
  } else if (p.has_raw_data()) {
    t = ir::Tensor(*dtype, shape);
    copyInto(t, p.raw_data().data());
  } else {
    t = ir::Tensor(*dtype, shape);
    switch (*dtype) {
    case DType::F32:
      TS_RETURN_IF_ERROR(checkCount(p.float_data(), numel, what, "float_data"));
      copyInto(t, p.float_data().data());
      break;
    case DType::F64:
      TS_RETURN_IF_ERROR(checkCount(p.double_data(), numel, what, "double_data"));
      copyInto(t, p.double_data().data());
      break;
    case DType::I64:
      TS_RETURN_IF_ERROR(checkCount(p.int64_data(), numel, what, "int64_data"));
      copyInto(t, p.int64_data().data());
      break;
    case DType::I32:
      TS_RETURN_IF_ERROR(checkCount(p.int32_data(), numel, what, "int32_data"));
      copyInto(t, p.int32_data().data());
      break;
    case DType::F16:
    case DType::BF16: {
      // The 16-bit patterns, one per int32.
      TS_RETURN_IF_ERROR(checkCount(p.int32_data(), numel, what, "int32_data"));
      auto *dst = t.data<uint16_t>();
      for (int64_t i = 0; i < numel; ++i)
        dst[i] = uint16_t(uint32_t(p.int32_data(int(i))) & 0xffffu);
      break;
    }
    case DType::I8:
    case DType::U8:
    case DType::I16:
    case DType::U16:
    case DType::Bool:
      TS_RETURN_IF_ERROR(checkCount(p.int32_data(), numel, what, "int32_data"));
      for (int64_t i = 0; i < numel; ++i)
        t.setInt(i, p.int32_data(int(i)));
      break;
    case DType::U32:
    case DType::U64:
      TS_RETURN_IF_ERROR(checkCount(p.uint64_data(), numel, what, "uint64_data"));
      for (int64_t i = 0; i < numel; ++i)
        t.setUInt(i, p.uint64_data(int(i)));
      break;
    }
  }
  if (*dtype == DType::Bool) // any non-zero byte is true; store 0/1
    for (int64_t i = 0; i < numel; ++i)
      t.bytes()[i] = t.bytes()[i] ? 1 : 0;
  return t;
}

void tensorToProto(const ir::Tensor &t, TensorProto &p, bool raw) {
  p.clear_dims();
  for (int64_t d : t.shape())
    p.add_dims(d);
  p.set_data_type(dtypeToOnnx(t.dtype()));
  if (raw) {
    p.set_raw_data(t.bytes(), t.nbytes());
    return;
  }
  for (int64_t i = 0; i < t.numel(); ++i) {
    switch (t.dtype()) {
    case DType::F32: p.add_float_data(t.data<float>()[i]); break;
    case DType::F64: p.add_double_data(t.data<double>()[i]); break;
    case DType::I64: p.add_int64_data(t.data<int64_t>()[i]); break;
    case DType::F16:
    case DType::BF16: p.add_int32_data(int32_t(t.data<uint16_t>()[i])); break;
    case DType::I32:
    case DType::I8:
    case DType::U8:
    case DType::I16:
    case DType::U16:
    case DType::Bool: p.add_int32_data(int32_t(t.getInt(i))); break;
    case DType::U32:
    case DType::U64: p.add_uint64_data(t.getUInt(i)); break;
    }
  }
}

Expected<ir::Tensor> readTensorProtoFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Error::format("cannot open '{}': {}", path, std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  TensorProto p;
  if (!p.ParseFromString(bytes))
    return Error::format("{}: not a TensorProto (protobuf parse failed)", path);
  std::string dir = std::filesystem::path(path).parent_path().string();
  return tensorFromProto(p, dir, fmt::format("tensor file '{}'", path));
}

//===----------------------------------------------------------------------===//
// Sequences and optionals
//===----------------------------------------------------------------------===//

OnnxValue OnnxValue::ofTensor(ir::Tensor t) {
  OnnxValue v;
  v.kind = Kind::Tensor;
  v.tensor = std::move(t);
  return v;
}

OnnxValue OnnxValue::ofSequence(std::vector<OnnxValue> elements) {
  OnnxValue v;
  v.kind = Kind::Sequence;
  v.elements = std::move(elements);
  return v;
}

OnnxValue OnnxValue::none() {
  OnnxValue v;
  v.kind = Kind::None;
  return v;
}

std::optional<ir::Type> OnnxValue::irType() const {
  switch (kind) {
  case Kind::Tensor: return tensor.type();
  case Kind::None: return std::nullopt;
  case Kind::Sequence: {
    std::vector<ir::Type> fields;
    for (const auto &e : elements) {
      auto t = e.irType();
      if (!t)
        return std::nullopt; // not produced by the readers below
      fields.push_back(*t);
    }
    return ir::Type::tuple(std::move(fields));
  }
  }
  return std::nullopt;
}

std::string OnnxValue::str() const {
  switch (kind) {
  case Kind::Tensor: return tensor.type().str();
  case Kind::None: return "none";
  case Kind::Sequence: {
    std::string out = "seq(";
    for (size_t i = 0; i < elements.size(); ++i)
      out += (i ? ", " : "") + elements[i].str();
    return out + ")";
  }
  }
  return "?";
}

Expected<OnnxValue> valueFromSequenceProto(const ::onnx::SequenceProto &p,
                                           const std::string &baseDir, std::string_view what) {
  using SP = ::onnx::SequenceProto;
  std::vector<OnnxValue> elements;
  switch (p.elem_type()) {
  case SP::UNDEFINED:
  case SP::TENSOR:
    if (p.sequence_values_size() || p.map_values_size() || p.optional_values_size() ||
        p.sparse_tensor_values_size())
      return Error::format("{}: a sequence of tensors holds other values", what);
    for (int i = 0; i < p.tensor_values_size(); ++i) {
      TS_ASSIGN_OR_RETURN(ir::Tensor t,
                          tensorFromProto(p.tensor_values(i), baseDir,
                                          fmt::format("{}, element {}", what, i)));
      elements.push_back(OnnxValue::ofTensor(std::move(t)));
    }
    break;
  case SP::SEQUENCE:
    for (int i = 0; i < p.sequence_values_size(); ++i) {
      TS_ASSIGN_OR_RETURN(OnnxValue v,
                          valueFromSequenceProto(p.sequence_values(i), baseDir,
                                                 fmt::format("{}, element {}", what, i)));
      elements.push_back(std::move(v));
    }
    break;
  default:
    return Error::format("{}: sequences of {} are not supported", what,
                         p.elem_type() == SP::MAP             ? "maps"
                         : p.elem_type() == SP::OPTIONAL      ? "optionals"
                         : p.elem_type() == SP::SPARSE_TENSOR ? "sparse tensors"
                                                              : "unknown values");
  }
  return OnnxValue::ofSequence(std::move(elements));
}

Expected<OnnxValue> valueFromOptionalProto(const ::onnx::OptionalProto &p,
                                           const std::string &baseDir, std::string_view what) {
  using OP = ::onnx::OptionalProto;
  switch (p.elem_type()) {
  case OP::UNDEFINED: return OnnxValue::none();
  case OP::TENSOR: {
    if (!p.has_tensor_value())
      return OnnxValue::none();
    TS_ASSIGN_OR_RETURN(ir::Tensor t, tensorFromProto(p.tensor_value(), baseDir, what));
    return OnnxValue::ofTensor(std::move(t));
  }
  case OP::SEQUENCE:
    if (!p.has_sequence_value())
      return OnnxValue::none();
    return valueFromSequenceProto(p.sequence_value(), baseDir, what);
  default:
    return Error::format("{}: optionals of {} are not supported", what,
                         p.elem_type() == OP::MAP             ? "maps"
                         : p.elem_type() == OP::OPTIONAL      ? "optionals"
                         : p.elem_type() == OP::SPARSE_TENSOR ? "sparse tensors"
                                                              : "unknown values");
  }
}

Expected<OnnxValue> parseValue(std::string_view bytes, const ::onnx::TypeProto *declared,
                               const std::string &baseDir, std::string_view what) {
  if (bytes.size() > size_t(INT32_MAX))
    return Error::format("{}: larger than 2 GiB", what);
  const int n = int(bytes.size());
  if (declared && declared->has_sequence_type()) {
    ::onnx::SequenceProto p;
    if (!p.ParseFromArray(bytes.data(), n))
      return Error::format("{}: not a SequenceProto (protobuf parse failed)", what);
    return valueFromSequenceProto(p, baseDir, what);
  }
  if (declared && declared->has_optional_type()) {
    ::onnx::OptionalProto p;
    if (!p.ParseFromArray(bytes.data(), n))
      return Error::format("{}: not an OptionalProto (protobuf parse failed)", what);
    return valueFromOptionalProto(p, baseDir, what);
  }
  if (declared && (declared->has_map_type() || declared->has_sparse_tensor_type()))
    return Error::format("{}: maps and sparse tensors are not supported", what);
  TensorProto p;
  if (!p.ParseFromArray(bytes.data(), n))
    return Error::format("{}: not a TensorProto (protobuf parse failed)", what);
  TS_ASSIGN_OR_RETURN(ir::Tensor t, tensorFromProto(p, baseDir, what));
  return OnnxValue::ofTensor(std::move(t));
}

} // namespace tessera::frontend::onnx
