//===- ir/ops/resize.h - resize2d's sampling taps ---------------*- C++ -*-===//
//
// resize2d's attributes as the sampling parameters of ir/ops/resize_taps.h,
// where the taps themselves are computed (shared with the host kernels).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/attrs.h"
#include "ir/ops/resize_taps.h"

namespace tessera::ir::ops {

/// The sampling resize2d's attributes ask for (mode, coordinate transform,
/// nearest mode, cubic coefficient, exclude_outside; exclude_outside is off
/// for nearest, whose weights are one-hot). The relation has checked them.
ResizeSampling resizeSampling(const Attrs &attrs);

} // namespace tessera::ir::ops
