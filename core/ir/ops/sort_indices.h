//===- ir/ops/sort_indices.h - A stable sort of indices ---------*- C++ -*-===//
//
// 0..n-1 sorted stably by `before(a, b)` (a strict order: a comes before b)
// with a bottom-up merge sort in caller-given scratch. Freestanding (the
// host kernel library links no C++ library), shared by the kernels that
// order by value: topk (codegen/kernels/reduce.cpp) and non-max
// suppression (ir/ops/nms_select.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <stdint.h>

namespace tessera::sorting {

/// The result is in `order` or `tmp` (n each), whichever the returned
/// pointer names.
template <typename Before>
inline int64_t *sortIndices(int64_t n, int64_t *order, int64_t *tmp, Before before) {
  for (int64_t i = 0; i < n; ++i)
    order[i] = i;
  for (int64_t width = 1; width < n; width *= 2) {
    for (int64_t lo = 0; lo < n; lo += 2 * width) {
      const int64_t mid = lo + width < n ? lo + width : n;
      const int64_t hi = lo + 2 * width < n ? lo + 2 * width : n;
      int64_t i = lo, j = mid, o = lo;
      while (i < mid && j < hi) // the right one only when strictly before: stable
        tmp[o++] = before(order[j], order[i]) ? order[j++] : order[i++];
      while (i < mid)
        tmp[o++] = order[i++];
      while (j < hi)
        tmp[o++] = order[j++];
    }
    int64_t *t = order;
    order = tmp;
    tmp = t;
  }
  return order;
}

} // namespace tessera::sorting
