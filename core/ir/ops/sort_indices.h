//===- ir/ops/sort_indices.h - A stable sort of indices ---------*- C++ -*-===//
//
// 0..n-1 sorted stably by `before(a, b)` (a strict order: a comes before b)
// with a bottom-up merge sort in caller-given scratch, or only the first k
// of them (a selection, then a sort of k). Freestanding (the
// host kernel library links no C++ library), shared by the kernels that
// order by value: topk (codegen/kernels/reduce.cpp) and non-max
// suppression (ir/ops/nms_select.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <stdint.h>

namespace tessera::sorting {

/// `list` (m indices) sorted stably by `before`, with `tmp` (m) as scratch;
/// the result is in `list` or `tmp`, whichever the returned pointer names.
template <typename Before>
inline int64_t *sortList(int64_t m, int64_t *list, int64_t *tmp, Before before) {
  for (int64_t width = 1; width < m; width *= 2) {
    for (int64_t lo = 0; lo < m; lo += 2 * width) {
      const int64_t mid = lo + width < m ? lo + width : m;
      const int64_t hi = lo + 2 * width < m ? lo + 2 * width : m;
      int64_t i = lo, j = mid, o = lo;
      while (i < mid && j < hi) // the right one only when strictly before: stable
        tmp[o++] = before(list[j], list[i]) ? list[j++] : list[i++];
      while (i < mid)
        tmp[o++] = list[i++];
      while (j < hi)
        tmp[o++] = list[j++];
    }
    int64_t *t = list;
    list = tmp;
    tmp = t;
  }
  return list;
}

/// 0..n-1 sorted stably; the result is in `order` or `tmp` (n each),
/// whichever the returned pointer names.
template <typename Before>
inline int64_t *sortIndices(int64_t n, int64_t *order, int64_t *tmp, Before before) {
  for (int64_t i = 0; i < n; ++i)
    order[i] = i;
  return sortList(n, order, tmp, before);
}

/// The value at position r of `v` (n) ordered by `better` (a strict weak
/// order), by selection: `v` is reordered. Hoare partitions around a median
/// of three, so the pivot is always in range.
template <typename K, typename Better> inline K nth(K *v, int64_t n, int64_t r, Better better) {
  int64_t lo = 0, hi = n - 1;
  while (lo < hi) {
    K a = v[lo], b = v[lo + (hi - lo) / 2], c = v[hi], t;
    if (better(b, a))
      t = a, a = b, b = t;
    if (better(c, b))
      t = b, b = c, c = t;
    if (better(b, a))
      b = a;
    const K pivot = b;
    int64_t i = lo, j = hi;
    while (i <= j) {
      while (better(v[i], pivot))
        ++i;
      while (better(pivot, v[j]))
        --j;
      if (i <= j) {
        t = v[i], v[i] = v[j], v[j] = t;
        ++i, --j;
      }
    }
    if (r <= j)
      hi = j;
    else if (r >= i)
      lo = i;
    else
      return v[r]; // between the two parts: equal to the pivot
  }
  return v[r];
}

/// The first k of sortIndices(n, ...) ordered by `better(key[a], key[b])`
/// (the same indices in the same order: equal keys by index), in O(n + k
/// log k) rather than O(n log n): the k-th key is selected first (in
/// `scratch`, n keys), then the indices before it, and those equal to it
/// by index until there are k, are sorted. `better` must order every key
/// (no NaN). The result is in `order` or `tmp` (n each), whichever the
/// returned pointer names.
template <typename K, typename Better>
inline int64_t *firstIndices(int64_t n, int64_t k, const K *key, K *scratch, int64_t *order,
                             int64_t *tmp, Better better) {
  auto before = [&](int64_t a, int64_t b) { return better(key[a], key[b]); };
  if (k >= n)
    return sortIndices(n, order, tmp, before);
  if (k <= 0)
    return order;
  for (int64_t i = 0; i < n; ++i)
    scratch[i] = key[i];
  const K kth = nth(scratch, n, k - 1, better);
  int64_t above = 0;
  for (int64_t i = 0; i < n; ++i)
    above += better(key[i], kth) ? 1 : 0;
  int64_t ties = k - above, m = 0;
  for (int64_t i = 0; i < n && m < k; ++i)
    if (better(key[i], kth))
      order[m++] = i;
    else if (ties > 0 && !better(kth, key[i]))
      order[m++] = i, --ties;
  return sortList(k, order, tmp, before);
}

} // namespace tessera::sorting
