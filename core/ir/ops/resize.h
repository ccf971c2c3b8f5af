//===- ir/ops/resize.h - resize2d's sampling taps ---------------*- C++ -*-===//
//
// Where each output coordinate of resize2d samples the input along one axis
// (ONNX Resize's _interpolate_1d_with_x): the reference kernel uses it per
// output element, the host lowering precomputes it per output row and column,
// so both sample exactly the same taps.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>

namespace tessera::ir::ops {

/// Source indices (clamped into the input) and weights of one output
/// coordinate along one axis.
struct Taps {
  int n = 0;
  bool outside = false; // tf_crop_and_resize: x_ori is outside the input
  int64_t idx[4] = {0, 0, 0, 0}; // unused taps are 0: the host kernel's parameters are deterministic
  double w[4] = {0, 0, 0, 0};
};

struct ResizeParams {
  std::string mode, coord, nearest;
  double cubicA;
  bool excludeOutside;
};

/// x_ori for output coordinate x (onnx _interpolate_1d_with_x); roi0/roi1
/// are the axis' crop region (tf_crop_and_resize only).
double sourceCoord(const std::string &coord, double x, double scale, int64_t inSize,
                   int64_t outSizeInt, double roi0, double roi1);

/// The taps of output coordinate x: 2 (nearest: one-hot weights, linear) or
/// 4 (cubic) clamped input indices with their weights.
Taps resizeTaps(const ResizeParams &p, int64_t x, double scale, int64_t inSize, int64_t outSizeInt,
                double roi0 = 0, double roi1 = 1);

} // namespace tessera::ir::ops
