//===- ir/tensor.cpp - Dense host tensors --------------------------------===//
#include "ir/tensor.h"

#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <new>
#include <string_view>

namespace tessera::ir {

namespace {
std::shared_ptr<uint8_t[]> allocate(size_t bytes) {
  size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
  auto *p = static_cast<uint8_t *>(std::aligned_alloc(64, rounded));
  if (!p)
    throw std::bad_alloc();
  std::memset(p, 0, rounded);
  return std::shared_ptr<uint8_t[]>(p, [](uint8_t *q) { std::free(q); });
}

template <typename T> T saturatingFromDouble(double v) {
  // A C cast of an out-of-range float is undefined behaviour; clamp first.
  if (std::isnan(v))
    return T(0);
  constexpr double lo = double(std::numeric_limits<T>::min());
  constexpr double hi = double(std::numeric_limits<T>::max());
  if (v <= lo)
    return std::numeric_limits<T>::min();
  if (v >= hi)
    return std::numeric_limits<T>::max();
  return T(v);
}
} // namespace

std::vector<int64_t> rowMajorStrides(std::span<const int64_t> shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

Tensor::Tensor(DType dtype, Shape shape)
    : dtype_(dtype), shape_(std::move(shape)), numel_(numElements(shape_)),
      data_(allocate(size_t(numel_) * dtypeSize(dtype))) {}

Tensor Tensor::fromDoubles(DType dtype, Shape shape, std::span<const double> values) {
  Tensor t(dtype, std::move(shape));
  for (int64_t i = 0; i < t.numel() && i < int64_t(values.size()); ++i)
    t.setDouble(i, values[i]);
  return t;
}

Tensor Tensor::fromInts(DType dtype, Shape shape, std::span<const int64_t> values) {
  Tensor t(dtype, std::move(shape));
  for (int64_t i = 0; i < t.numel() && i < int64_t(values.size()); ++i)
    t.setInt(i, values[i]);
  return t;
}

Tensor Tensor::copyOf(const DLTensor &dl) {
  DType dtype = fromDLDataType(dl.dtype).value_or(DType::F32);
  Shape shape(dl.shape, dl.shape + dl.ndim);
  Tensor t(dtype, shape);
  size_t elem = dtypeSize(dtype);
  const auto *base = static_cast<const uint8_t *>(dl.data) + dl.byte_offset;
  if (!dl.strides) {
    std::memcpy(t.bytes(), base, t.nbytes());
    return t;
  }
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t i = 0; i < t.numel(); ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      off += index[d] * dl.strides[d];
    std::memcpy(t.bytes() + i * elem, base + off * int64_t(elem), elem);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
  return t;
}

double Tensor::getDouble(int64_t i) const {
  const uint8_t *p = data_.get();
  switch (dtype_) {
  case DType::F32: return reinterpret_cast<const float *>(p)[i];
  case DType::F64: return reinterpret_cast<const double *>(p)[i];
  case DType::F16: return halfToFloat(reinterpret_cast<const uint16_t *>(p)[i]);
  case DType::BF16: return bfloat16ToFloat(reinterpret_cast<const uint16_t *>(p)[i]);
  case DType::I8: return reinterpret_cast<const int8_t *>(p)[i];
  case DType::U8: return reinterpret_cast<const uint8_t *>(p)[i];
  case DType::I32: return reinterpret_cast<const int32_t *>(p)[i];
  case DType::I64: return double(reinterpret_cast<const int64_t *>(p)[i]);
  case DType::I16: return reinterpret_cast<const int16_t *>(p)[i];
  case DType::U16: return reinterpret_cast<const uint16_t *>(p)[i];
  case DType::U32: return reinterpret_cast<const uint32_t *>(p)[i];
  case DType::U64: return double(reinterpret_cast<const uint64_t *>(p)[i]);
  case DType::Bool: return p[i] ? 1.0 : 0.0;
  }
  return 0;
}

void Tensor::setDouble(int64_t i, double v) {
  uint8_t *p = data_.get();
  switch (dtype_) {
  case DType::F32: reinterpret_cast<float *>(p)[i] = float(v); return;
  case DType::F64: reinterpret_cast<double *>(p)[i] = v; return;
  case DType::F16: reinterpret_cast<uint16_t *>(p)[i] = floatToHalf(float(v)); return;
  case DType::BF16: reinterpret_cast<uint16_t *>(p)[i] = floatToBfloat16(float(v)); return;
  case DType::I8: reinterpret_cast<int8_t *>(p)[i] = saturatingFromDouble<int8_t>(v); return;
  case DType::U8: reinterpret_cast<uint8_t *>(p)[i] = saturatingFromDouble<uint8_t>(v); return;
  case DType::I32: reinterpret_cast<int32_t *>(p)[i] = saturatingFromDouble<int32_t>(v); return;
  case DType::I64: reinterpret_cast<int64_t *>(p)[i] = saturatingFromDouble<int64_t>(v); return;
  case DType::I16: reinterpret_cast<int16_t *>(p)[i] = saturatingFromDouble<int16_t>(v); return;
  case DType::U16: reinterpret_cast<uint16_t *>(p)[i] = saturatingFromDouble<uint16_t>(v); return;
  case DType::U32: reinterpret_cast<uint32_t *>(p)[i] = saturatingFromDouble<uint32_t>(v); return;
  case DType::U64: reinterpret_cast<uint64_t *>(p)[i] = saturatingFromDouble<uint64_t>(v); return;
  case DType::Bool: p[i] = v != 0.0 ? 1 : 0; return;
  }
}

int64_t Tensor::getInt(int64_t i) const {
  const uint8_t *p = data_.get();
  switch (dtype_) {
  case DType::I8: return reinterpret_cast<const int8_t *>(p)[i];
  case DType::U8: return reinterpret_cast<const uint8_t *>(p)[i];
  case DType::I32: return reinterpret_cast<const int32_t *>(p)[i];
  case DType::I64: return reinterpret_cast<const int64_t *>(p)[i];
  case DType::I16: return reinterpret_cast<const int16_t *>(p)[i];
  case DType::U16: return reinterpret_cast<const uint16_t *>(p)[i];
  case DType::U32: return reinterpret_cast<const uint32_t *>(p)[i];
  case DType::U64: return int64_t(reinterpret_cast<const uint64_t *>(p)[i]); // bit pattern
  case DType::Bool: return p[i] ? 1 : 0;
  default: return saturatingFromDouble<int64_t>(getDouble(i));
  }
}

void Tensor::setInt(int64_t i, int64_t v) {
  uint8_t *p = data_.get();
  switch (dtype_) {
  case DType::I8: reinterpret_cast<int8_t *>(p)[i] = int8_t(v); return;
  case DType::U8: reinterpret_cast<uint8_t *>(p)[i] = uint8_t(v); return;
  case DType::I32: reinterpret_cast<int32_t *>(p)[i] = int32_t(v); return;
  case DType::I64: reinterpret_cast<int64_t *>(p)[i] = v; return;
  case DType::I16: reinterpret_cast<int16_t *>(p)[i] = int16_t(v); return;
  case DType::U16: reinterpret_cast<uint16_t *>(p)[i] = uint16_t(v); return;
  case DType::U32: reinterpret_cast<uint32_t *>(p)[i] = uint32_t(v); return;
  case DType::U64: reinterpret_cast<uint64_t *>(p)[i] = uint64_t(v); return;
  case DType::Bool: p[i] = v != 0 ? 1 : 0; return;
  default: setDouble(i, double(v)); return;
  }
}

uint64_t Tensor::getUInt(int64_t i) const {
  if (isFloat(dtype_))
    return saturatingFromDouble<uint64_t>(std::trunc(getDouble(i)));
  return uint64_t(getInt(i)); // exact for u64: getInt returns its bits
}

void Tensor::setUInt(int64_t i, uint64_t v) {
  if (dtype_ == DType::F32) {
    data<float>()[i] = float(v); // one rounding
    return;
  }
  if (isFloat(dtype_)) {
    setDouble(i, double(v));
    return;
  }
  setInt(i, int64_t(v)); // the same bits: exact for u64, wraps otherwise
}

std::vector<double> Tensor::toDoubles() const {
  std::vector<double> out(static_cast<size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i)
    out[size_t(i)] = getDouble(i);
  return out;
}

std::vector<int64_t> Tensor::toInts() const {
  std::vector<int64_t> out(static_cast<size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i)
    out[size_t(i)] = getInt(i);
  return out;
}

DLTensor Tensor::dl() const {
  DLTensor t{};
  t.data = const_cast<uint8_t *>(data_.get());
  t.device = {kDLCPU, 0};
  t.ndim = int32_t(shape_.size());
  t.dtype = toDLDataType(dtype_);
  t.shape = const_cast<int64_t *>(shape_.data());
  t.strides = nullptr;
  t.byte_offset = 0;
  return t;
}

bool Tensor::bitwiseEqual(const Tensor &o) const {
  if (dtype_ != o.dtype_ || shape_ != o.shape_)
    return false;
  if (data_ == o.data_)
    return true;
  return std::memcmp(bytes(), o.bytes(), nbytes()) == 0;
}

size_t Tensor::hash() const {
  size_t h = std::hash<int>()(int(dtype_));
  for (int64_t d : shape_)
    h = h * 1000003u ^ std::hash<int64_t>()(d);
  if (numel_ > 0)
    h ^= std::hash<std::string_view>()(
        std::string_view(reinterpret_cast<const char *>(bytes()), nbytes()));
  return h;
}

Tensor Tensor::reshaped(Shape shape) const {
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

} // namespace tessera::ir
