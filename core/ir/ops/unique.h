//===- ir/ops/unique.h - ONNX Unique's groups over a tensor ----*- C++ -*-===//
//
// unique::groupSlices (ir/ops/unique_select.h) over the slices of a tensor
// along an axis: the reference kernel of the core op `unique` and the ONNX
// importer's folding of Unique on a constant use it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/tensor.h"

#include <cstdint>
#include <vector>

namespace tessera::ir::ops {

struct UniqueGroups {
  std::vector<int64_t> first;   // per group: its first occurrence along the axis
  std::vector<int64_t> inverse; // per slice: its group
  std::vector<int64_t> counts;  // per group: its size
};

/// The groups of equal slices of `x` along `axis` (0 <= axis < rank), in
/// sorted order (slices compared element by element in row-major order;
/// floats by value, NaN after every number, NaNs equal; u64 unsigned) or in
/// order of first occurrence.
UniqueGroups uniqueGroups(const Tensor &x, int64_t axis, bool sorted);

} // namespace tessera::ir::ops
