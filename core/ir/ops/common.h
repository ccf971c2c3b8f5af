//===- ir/ops/common.h - Helpers shared by type relations and kernels -*- C++ -*-===//
#pragma once

#include "ir/op.h"

#include <span>
#include <string_view>
#include <vector>

namespace tessera::ir::ops {

/// Numpy broadcasting of two shapes. Error: "cannot broadcast [2, 3] with [4]".
Expected<Shape> broadcastShapes(std::span<const int64_t> a, std::span<const int64_t> b);

/// Maps a possibly negative axis into [0, rank). Error names the attribute:
/// "attribute 'axis' = 5 is out of range for rank 4 (expected -4..3)".
Expected<int64_t> normalizeAxis(int64_t axis, int64_t rank, std::string_view attrName = "axis");

/// Every input must have the dtype of the first. Error names the argument
/// positions and dtypes: "argument 1 has dtype i64, expected f32 (as argument 0)".
Status requireSameDType(std::span<const Type> inputs);

/// Requires the tensor at `index` to have rank `rank`. Error: "argument 0
/// ('data') must have rank 4, got f32[1, 3]".
Status requireRank(std::span<const Type> inputs, size_t index, size_t rank,
                   std::string_view argName);
/// "argument 0 ('a') must have rank >= 1, got f32[]".
Status requireMinRank(std::span<const Type> inputs, size_t index, size_t rank,
                      std::string_view argName);
/// Any dtype but bool. "argument 0 must be a numeric tensor, got bool[2]".
Status requireNumeric(std::span<const Type> inputs, size_t index);

/// Requires the dtype to be a float type. Error: "argument 0 must be a float
/// tensor, got i32[2]".
Status requireFloat(std::span<const Type> inputs, size_t index);

/// The smallest and largest values of an integer or bool dtype (int64's
/// range for anything else). u64's largest value does not fit in int64: for
/// u64 this is {0, int64 max}, the values int64 holds as themselves; kernels
/// that need u64's whole range use orderKey or the unsigned path.
std::pair<int64_t, int64_t> intRange(DType t);

/// A float clip bound as an integer bound of dtype `t` (clip on integers,
/// in the reference kernel and the host lowering): the lower bound rounds
/// up and the upper bound down, both limited to the dtype's range; NaN means
/// no bound. u64 uses uintBound.
int64_t intBound(double v, bool lower, DType t);
/// intBound for u64: limited to [0, 2^64 - 1].
uint64_t uintBound(double v, bool lower);

/// One input dim of an ONNX Slice: first index, step and element count.
struct SliceDim {
  int64_t start = 0, step = 1, count = 0;
};
/// Per input dim of shape `s`, what slice's attributes select (dims not
/// named in 'axes' are taken whole); validates the attributes (ops/transform_slice.cpp).
Expected<std::vector<SliceDim>> sliceDims(const Shape &s, const Attrs &attrs);

/// An int64 whose signed order is the order of the dtype's values, for an
/// element read with Tensor::getInt: u64 bit patterns get their top bit
/// flipped (0 -> int64 min, 2^64 - 1 -> int64 max); other dtypes are
/// unchanged. fromOrderKey is the inverse (orderKey is its own inverse).
inline int64_t orderKey(DType t, int64_t v) {
  return t == DType::U64 ? int64_t(uint64_t(v) ^ (uint64_t(1) << 63)) : v;
}
inline int64_t fromOrderKey(DType t, int64_t key) { return orderKey(t, key); }

/// Row-major multi-index of a flat index.
void unravelIndex(int64_t flat, std::span<const int64_t> shape, std::span<int64_t> out);

/// For numpy broadcasting: the flat index into an input of shape `inShape`
/// for the output multi-index `outIndex` (inShape right-aligned with the
/// output; size-1 dims read index 0).
int64_t broadcastSourceIndex(std::span<const int64_t> outIndex, std::span<const int64_t> inShape);

} // namespace tessera::ir::ops
