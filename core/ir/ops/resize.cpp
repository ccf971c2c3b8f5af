//===- ir/ops/resize.cpp - resize2d's sampling taps -----------------------===//
#include "ir/ops/resize.h"

#include <algorithm>
#include <cmath>

namespace tessera::ir::ops {

/// x_ori for output coordinate x (onnx _interpolate_1d_with_x); roi0/roi1
/// are the axis' crop region (tf_crop_and_resize only).
double sourceCoord(const std::string &coord, double x, double scale, int64_t inSize,
                   int64_t outSizeInt, double roi0, double roi1) {
  double outSize = scale * double(inSize);
  if (coord == "tf_crop_and_resize") {
    double span = (roi1 - roi0) * double(inSize - 1);
    return roi0 * double(inSize - 1) + (outSize == 1 ? span / 2 : x * span / (outSize - 1));
  }
  if (coord == "align_corners")
    return outSize == 1 ? 0.0 : x * double(inSize - 1) / (outSize - 1);
  if (coord == "asymmetric")
    return x / scale;
  if (coord == "pytorch_half_pixel")
    return outSize == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
  if (coord == "half_pixel_symmetric") {
    double adjustment = double(outSizeInt) / outSize;
    double center = double(inSize) / 2;
    double offset = center * (1 - adjustment);
    return offset + (x + 0.5) / scale - 0.5;
  }
  if (coord == "tf_half_pixel_for_nn")
    return (x + 0.5) / scale;
  return (x + 0.5) / scale - 0.5; // half_pixel
}

Taps resizeTaps(const ResizeParams &p, int64_t x, double scale, int64_t inSize, int64_t outSizeInt,
                double roi0, double roi1) {
  double xo = sourceCoord(p.coord, double(x), scale, inSize, outSizeInt, roi0, roi1);
  double fl = std::floor(xo);
  bool integral = xo == fl;
  double r = integral ? 1.0 : xo - fl;
  Taps t;
  t.outside = p.coord == "tf_crop_and_resize" && (xo < 0 || xo > double(inSize - 1));
  if (p.mode == "cubic") {
    double A = p.cubicA, s = 1 - r;
    t.n = 4;
    t.w[0] = ((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A;
    t.w[1] = ((A + 2) * r - (A + 3)) * r * r + 1;
    t.w[2] = ((A + 2) * s - (A + 3)) * s * s + 1;
    t.w[3] = ((A * (s + 1) - 5 * A) * (s + 1) + 8 * A) * (s + 1) - 4 * A;
  } else {
    t.n = 2;
    if (p.mode == "linear") {
      t.w[0] = 1 - r, t.w[1] = r;
    } else {
      bool right = integral                            ? true
                   : p.nearest == "round_prefer_floor" ? r > 0.5
                   : p.nearest == "round_prefer_ceil"  ? r >= 0.5
                   : p.nearest == "floor"              ? false
                                                       : true; // ceil
      t.w[0] = right ? 0 : 1, t.w[1] = right ? 1 : 0;
    }
  }
  // The n nearest indices to xo in the input edge-padded by ceil(n/2) on each
  // side (ties prefer the lower index): a window starting at floor(xo) (or
  // xo - 1 when integral), one lower for cubic, clamped into the padded range.
  int64_t pad = (t.n + 1) / 2;
  int64_t left = int64_t(fl) - (integral ? 1 : 0) - (t.n == 4 ? 1 : 0);
  int64_t start = std::clamp<int64_t>(left + pad, 0, inSize + 2 * pad - t.n) - pad;
  double sum = 0;
  for (int k = 0; k < t.n; ++k) {
    int64_t i = start + k;
    if (p.excludeOutside && (i < 0 || i >= inSize))
      t.w[k] = 0;
    sum += t.w[k];
    t.idx[k] = std::clamp<int64_t>(i, 0, inSize - 1);
  }
  // Nearest weights are one-hot: exclude_outside is not applied to them
  // (the reference would divide by zero when the chosen neighbour is outside).
  if (p.excludeOutside && p.mode != "nearest" && sum != 0)
    for (int k = 0; k < t.n; ++k)
      t.w[k] /= sum;
  return t;
}

} // namespace tessera::ir::ops
