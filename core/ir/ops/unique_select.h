//===- ir/ops/unique_select.h - The groups of ONNX Unique -------*- C++ -*-===//
//
// Which slices of ONNX Unique are equal, in which order the unique ones come
// and where each slice goes: shared by the importer (a constant input), the
// reference kernel (ir/ops/data_dependent.cpp) and the host kernel
// (codegen/kernels/index.cpp), so the three cannot disagree. Freestanding
// (the kernel library links no C++ library): no includes beyond the sort, no
// allocation; the caller gives the scratch.
//
// `cmp(a, b)` compares slices a and b (-1, 0, 1). The n slices are sorted
// stably, and runs of equal ones form the groups: in sorted order, or
// ('sorted' false) in order of first occurrence. For each group: first[g]
// is the index of its first occurrence, counts[g] its size; inverse[i] is
// the group of slice i.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/ops/sort_indices.h"

#include <stdint.h>

namespace tessera::unique {

/// The number of groups. `scratch` holds 4 * n i64; first and counts at
/// least as many as there are groups (n), inverse n.
template <typename Compare>
inline int64_t groupSlices(int64_t n, bool sorted, int64_t *scratch, int64_t *first,
                           int64_t *inverse, int64_t *counts, Compare cmp) {
  const int64_t *s = sorting::sortIndices(n, scratch, scratch + n,
                                          [&](int64_t a, int64_t b) { return cmp(a, b) < 0; });
  int64_t u = 0;
  for (int64_t k = 0; k < n; ++k) {
    if (k == 0 || cmp(s[k - 1], s[k]) != 0) { // stable: a group's first is its lowest index
      first[u] = s[k];
      counts[u] = 0;
      ++u;
    }
    ++counts[u - 1];
    inverse[s[k]] = u - 1;
  }
  if (sorted || u < 2)
    return u;
  // By first occurrence: byFirst[p] is the group at place p.
  int64_t *byFirst = sorting::sortIndices(u, scratch + 2 * n, scratch + 3 * n,
                                          [&](int64_t a, int64_t b) { return first[a] < first[b]; });
  int64_t *place = byFirst == scratch + 2 * n ? scratch + 3 * n : scratch + 2 * n;
  int64_t *f = scratch, *c = scratch + n; // free again
  for (int64_t p = 0; p < u; ++p) {
    place[byFirst[p]] = p;
    f[p] = first[byFirst[p]];
    c[p] = counts[byFirst[p]];
  }
  for (int64_t p = 0; p < u; ++p) {
    first[p] = f[p];
    counts[p] = c[p];
  }
  for (int64_t i = 0; i < n; ++i)
    inverse[i] = place[inverse[i]];
  return u;
}

} // namespace tessera::unique
