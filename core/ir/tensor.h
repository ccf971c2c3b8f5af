//===- ir/tensor.h - Dense host tensors ------------------------*- C++ -*-===//
//
// Tensor is a dense, row-major host tensor that owns its (64-byte aligned)
// data. Copies share the buffer: treat a Tensor that other code can see as
// immutable, and write only into tensors you have just created. Element
// access by flat index converts through double (floats) or int64 (integers
// and bool), which is what the reference kernels use. u64 goes through int64
// as its bit pattern (values >= 2^63 read as negative); getUInt / setUInt
// are the exact unsigned path (see ir/dtype.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/dtype.h"
#include "ir/type.h"

#include <dlpack/dlpack.h>

#include <cstring>
#include <memory>
#include <span>
#include <vector>

namespace tessera::ir {

class Tensor {
public:
  /// An empty f32 scalar with no buffer; only valid() reports false.
  Tensor() = default;
  /// A zero-filled tensor.
  Tensor(DType dtype, Shape shape);

  /// A tensor holding a copy of `values` converted to `dtype`.
  static Tensor fromDoubles(DType dtype, Shape shape, std::span<const double> values);
  static Tensor fromInts(DType dtype, Shape shape, std::span<const int64_t> values);
  /// A tensor with a copy of the bytes of a DLTensor (any strides).
  static Tensor copyOf(const DLTensor &t);

  bool valid() const { return data_ != nullptr || numel_ == 0; }
  DType dtype() const { return dtype_; }
  const Shape &shape() const { return shape_; }
  size_t rank() const { return shape_.size(); }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return size_t(numel_) * dtypeSize(dtype_); }
  Type type() const { return Type::tensor(dtype_, shape_); }

  uint8_t *bytes() { return data_.get(); }
  const uint8_t *bytes() const { return data_.get(); }
  template <typename T> T *data() { return reinterpret_cast<T *>(data_.get()); }
  template <typename T> const T *data() const {
    return reinterpret_cast<const T *>(data_.get());
  }

  /// Element `i` (flat, row-major) as double. Integers and bool convert.
  double getDouble(int64_t i) const;
  /// Stores `v` converted to the dtype (float->int truncates toward zero,
  /// as a C cast does; bool is v != 0).
  void setDouble(int64_t i, double v);
  /// Element `i` as int64: the value for integer dtypes (u64: the bit
  /// pattern, so values >= 2^63 come out negative), 0/1 for bool, and for
  /// floats the value truncated toward zero and saturated to int64's range.
  int64_t getInt(int64_t i) const;
  /// Stores `v` wrapped to an integer dtype (two's complement: -1 in u8 is
  /// 255, in u64 2^64 - 1); bool is v != 0; floats convert.
  void setInt(int64_t i, int64_t v);
  /// Element `i` as uint64: exact for u64; for other integer dtypes and
  /// bool, getInt wrapped modulo 2^64 (-1 gives 2^64 - 1); floats are
  /// truncated and saturated to [0, 2^64 - 1] (NaN gives 0).
  uint64_t getUInt(int64_t i) const;
  /// Stores `v`: exact for u64; wraps to the other integer dtypes (as
  /// setInt of the same bits); bool is v != 0; floats convert (rounding).
  void setUInt(int64_t i, uint64_t v);

  /// All elements as doubles / int64 (for tests and small constants).
  std::vector<double> toDoubles() const;
  std::vector<int64_t> toInts() const;

  /// A DLTensor view of this tensor (no copy; valid while this lives).
  DLTensor dl() const;

  /// Same dtype, shape and bytes.
  bool bitwiseEqual(const Tensor &other) const;
  size_t hash() const;

  /// Shares the buffer under a new shape with the same element count.
  Tensor reshaped(Shape shape) const;

private:
  DType dtype_ = DType::F32;
  Shape shape_;
  int64_t numel_ = 1;
  std::shared_ptr<uint8_t[]> data_;
};

/// Row-major strides (in elements) of a shape.
std::vector<int64_t> rowMajorStrides(std::span<const int64_t> shape);

} // namespace tessera::ir
