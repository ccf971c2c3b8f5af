//===- ir/ops/resize_taps.h - resize2d's sampling, freestanding -*- C++ -*-===//
//
// Where each output coordinate of resize2d samples the input along one axis
// (ONNX Resize's _interpolate_1d_with_x), in one statement shared by the
// reference kernel (per output element), the host lowering (precomputed per
// output row and column when shapes are static) and the host kernel library
// (computed per run when they are symbolic: codegen/kernels/image.cpp).
// Freestanding: no standard library, since the kernel library includes it.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_IR_OPS_RESIZE_TAPS_H
#define TESSERA_IR_OPS_RESIZE_TAPS_H

#include <stdint.h>

namespace tessera::ir::ops {

enum ResizeMode : int32_t { kResizeNearest = 0, kResizeLinear = 1, kResizeCubic = 2 };
enum ResizeCoord : int32_t {
  kCoordHalfPixel = 0,
  kCoordHalfPixelSymmetric = 1,
  kCoordPytorchHalfPixel = 2,
  kCoordAlignCorners = 3,
  kCoordAsymmetric = 4,
  kCoordTfHalfPixelForNn = 5,
  kCoordTfCropAndResize = 6,
};
enum ResizeNearestMode : int32_t {
  kNearestRoundPreferFloor = 0,
  kNearestRoundPreferCeil = 1,
  kNearestFloor = 2,
  kNearestCeil = 3,
};

struct ResizeSampling {
  int32_t mode = kResizeNearest, coord = kCoordHalfPixel, nearest = kNearestRoundPreferFloor;
  double cubicA = -0.75;
  bool excludeOutside = false;
};

/// Source indices (clamped into the input) and weights of one output
/// coordinate along one axis.
struct Taps {
  int n = 0;
  bool outside = false; // tf_crop_and_resize: x_ori is outside the input
  int64_t idx[4] = {0, 0, 0, 0}; // unused taps are 0: the host kernel's parameters are deterministic
  double w[4] = {0, 0, 0, 0};
};

/// x_ori for output coordinate x (onnx _interpolate_1d_with_x); roi0/roi1
/// are the axis' crop region (tf_crop_and_resize only).
inline double resizeSourceCoord(int32_t coord, double x, double scale, int64_t inSize,
                                int64_t outSizeInt, double roi0, double roi1) {
  const double outSize = scale * double(inSize);
  switch (coord) {
  case kCoordTfCropAndResize: {
    const double span = (roi1 - roi0) * double(inSize - 1);
    return roi0 * double(inSize - 1) + (outSize == 1 ? span / 2 : x * span / (outSize - 1));
  }
  case kCoordAlignCorners: return outSize == 1 ? 0.0 : x * double(inSize - 1) / (outSize - 1);
  case kCoordAsymmetric: return x / scale;
  case kCoordPytorchHalfPixel: return outSize == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
  case kCoordHalfPixelSymmetric: {
    const double adjustment = double(outSizeInt) / outSize;
    const double center = double(inSize) / 2;
    return center * (1 - adjustment) + (x + 0.5) / scale - 0.5;
  }
  case kCoordTfHalfPixelForNn: return (x + 0.5) / scale;
  default: return (x + 0.5) / scale - 0.5; // half_pixel
  }
}

inline int64_t resizeClamp(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/// The taps of output coordinate x: 2 (nearest: one-hot weights, linear) or
/// 4 (cubic) clamped input indices with their weights.
inline Taps resizeTapsOf(const ResizeSampling &p, int64_t x, double scale, int64_t inSize,
                         int64_t outSizeInt, double roi0 = 0, double roi1 = 1) {
  const double xo = resizeSourceCoord(p.coord, double(x), scale, inSize, outSizeInt, roi0, roi1);
  const double fl = __builtin_floor(xo);
  const bool integral = xo == fl;
  const double r = integral ? 1.0 : xo - fl;
  Taps t;
  t.outside = p.coord == kCoordTfCropAndResize && (xo < 0 || xo > double(inSize - 1));
  if (p.mode == kResizeCubic) {
    const double A = p.cubicA, s = 1 - r;
    t.n = 4;
    t.w[0] = ((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A;
    t.w[1] = ((A + 2) * r - (A + 3)) * r * r + 1;
    t.w[2] = ((A + 2) * s - (A + 3)) * s * s + 1;
    t.w[3] = ((A * (s + 1) - 5 * A) * (s + 1) + 8 * A) * (s + 1) - 4 * A;
  } else {
    t.n = 2;
    if (p.mode == kResizeLinear) {
      t.w[0] = 1 - r, t.w[1] = r;
    } else {
      const bool right = integral                                ? true
                         : p.nearest == kNearestRoundPreferFloor ? r > 0.5
                         : p.nearest == kNearestRoundPreferCeil  ? r >= 0.5
                         : p.nearest == kNearestFloor            ? false
                                                                 : true; // ceil
      t.w[0] = right ? 0 : 1, t.w[1] = right ? 1 : 0;
    }
  }
  // The n nearest indices to xo in the input edge-padded by ceil(n/2) on each
  // side (ties prefer the lower index): a window starting at floor(xo) (or
  // xo - 1 when integral), one lower for cubic, clamped into the padded range.
  const int64_t pad = (t.n + 1) / 2;
  const int64_t left = int64_t(fl) - (integral ? 1 : 0) - (t.n == 4 ? 1 : 0);
  const int64_t start = resizeClamp(left + pad, 0, inSize + 2 * pad - t.n) - pad;
  double sum = 0;
  for (int k = 0; k < t.n; ++k) {
    const int64_t i = start + k;
    if (p.excludeOutside && (i < 0 || i >= inSize))
      t.w[k] = 0;
    sum += t.w[k];
    t.idx[k] = resizeClamp(i, 0, inSize - 1);
  }
  // Nearest weights are one-hot: exclude_outside is not applied to them
  // (the reference would divide by zero when the chosen neighbour is outside).
  if (p.excludeOutside && p.mode != kResizeNearest && sum != 0)
    for (int k = 0; k < t.n; ++k)
      t.w[k] /= sum;
  return t;
}

/// The taps the host kernel reads: nearest as one tap, the chosen neighbour.
inline Taps resizeHostTaps(const ResizeSampling &p, int64_t x, double scale, int64_t inSize,
                           int64_t outSizeInt, double roi0, double roi1) {
  Taps t = resizeTapsOf(p, x, scale, inSize, outSizeInt, roi0, roi1);
  if (p.mode == kResizeNearest) {
    t.idx[0] = t.w[0] != 0 ? t.idx[0] : t.idx[1];
    t.n = 1;
    t.w[0] = 1;
  }
  return t;
}

} // namespace tessera::ir::ops

#endif
