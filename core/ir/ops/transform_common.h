//===- ir/ops/transform_common.h - Transform op helpers --------*- C++ -*-===//
//
// Private to the transform ops (ir/ops/transform*.cpp): the helpers their
// type relations, reference kernels and registrations share. Everything
// lives in an anonymous namespace: each transform file gets its own copy,
// so nothing here can clash with another family's helpers.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/ops/common.h"

#include <algorithm>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::ir::ops {
namespace {

using Ints = std::vector<int64_t>;

// --- Shared helpers ---------------------------------------------------------

/// "[1, 2, 3]"
inline std::string intsStr(std::span<const int64_t> v) { return shapeStr(v); }

/// Copies element `src` of `in` to element `dst` of `out` (same dtype).
inline void copyElem(const Tensor &in, int64_t src, Tensor &out, int64_t dst, size_t esize) {
  std::memcpy(out.bytes() + dst * int64_t(esize), in.bytes() + src * int64_t(esize), esize);
}

/// Flat row-major index of a multi-index given the strides.
inline int64_t ravel(std::span<const int64_t> idx, std::span<const int64_t> strides) {
  int64_t flat = 0;
  for (size_t i = 0; i < idx.size(); ++i)
    flat += idx[i] * strides[i];
  return flat;
}

/// Builds a tensor of `outShape` whose element at multi-index `o` is element
/// `srcIndex(o)` of `in`, or `fill` (converted to the dtype) when srcIndex
/// returns -1.
template <typename F>
Tensor mapElements(const Tensor &in, const Shape &outShape, F srcIndex, double fill = 0) {
  Tensor out(in.dtype(), outShape);
  size_t esize = dtypeSize(in.dtype());
  Ints idx(outShape.size());
  for (int64_t o = 0; o < out.numel(); ++o) {
    unravelIndex(o, outShape, idx);
    int64_t src = srcIndex(std::span<const int64_t>(idx));
    if (src < 0)
      out.setDouble(o, fill);
    else
      copyElem(in, src, out, o, esize);
  }
  return out;
}

/// A copy of `in` under a new shape with the same element count.
inline Tensor copyReshaped(const Tensor &in, const Shape &shape) {
  Tensor out(in.dtype(), shape);
  if (in.nbytes() > 0)
    std::memcpy(out.bytes(), in.bytes(), in.nbytes());
  return out;
}

/// Kernel for ops that only change the shape: copies the data into the
/// shape of the inferred type.
inline Expected<std::vector<Tensor>> reshapeKernel(std::span<const Tensor> in, const Attrs &,
                                                   const Type &outType) {
  return std::vector<Tensor>{copyReshaped(in[0], outType.shape())};
}

/// Normalises a list of axes (negative count from `rank`); errors on
/// out-of-range values and on repeats.
inline Expected<Ints> normalizeAxes(const Ints &axes, int64_t rank, std::string_view attrName) {
  Ints out;
  for (int64_t a : axes) {
    TS_ASSIGN_OR_RETURN(int64_t n, normalizeAxis(a, rank, attrName));
    if (std::find(out.begin(), out.end(), n) != out.end())
      return Error::format("attribute '{}' = {} repeats axis {}", attrName, intsStr(axes), n);
    out.push_back(n);
  }
  return out;
}

/// An attribute default: a list of ints (empty unless given).
inline AttrValue intsValue(Ints v = {}) { return AttrValue(std::move(v)); }

} // namespace
} // namespace tessera::ir::ops
