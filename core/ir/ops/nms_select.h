//===- ir/ops/nms_select.h - Non-max suppression of one class ---*- C++ -*-===//
//
// The selection of ONNX NonMaxSuppression for one (batch, class), shared by
// the reference kernel (ir/ops/data_dependent.cpp) and the host kernel
// (codegen/kernels/index.cpp), so the two cannot disagree on which boxes
// survive. Freestanding (the kernel library links no C++ library): no
// includes, no allocation; the caller gives the scratch.
//
// Boxes by score, highest first (equal scores: lower index first); a box
// with a score not above the score threshold (when there is one) is
// skipped; a box is selected unless its IoU with a box selected before is
// above the IoU threshold, until max_output are selected. Corner boxes are
// [y1, x1, y2, x2] of any diagonal pair; centre boxes [xc, yc, w, h]. IoU is
// computed in float, and a box of no area overlaps nothing.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/ops/sort_indices.h"

#include <stdint.h>

namespace tessera::nms {

/// y_min, x_min, y_max, x_max of box i.
inline void corners(const float *boxes, int64_t i, bool centre, float out[4]) {
  const float *b = boxes + 4 * i;
  if (centre) {
    const float xc = b[0], yc = b[1], hw = b[2] / 2.0f, hh = b[3] / 2.0f;
    out[0] = yc - hh, out[1] = xc - hw, out[2] = yc + hh, out[3] = xc + hw;
    return;
  }
  out[0] = b[0] < b[2] ? b[0] : b[2], out[2] = b[0] < b[2] ? b[2] : b[0];
  out[1] = b[1] < b[3] ? b[1] : b[3], out[3] = b[1] < b[3] ? b[3] : b[1];
}

/// A box as selection compares it: corners (y0, x0, y1, x1) and area.
struct Geometry {
  float y0, x0, y1, x1, area;
};

inline Geometry geometry(const float *boxes, int64_t i, bool centre) {
  float c[4];
  corners(boxes, i, centre, c);
  return {c[0], c[1], c[2], c[3], (c[2] - c[0]) * (c[3] - c[1])};
}

/// The selected boxes' geometries, a field per array, so that a candidate is
/// compared with a block of them at once (the comparison loop vectorises:
/// torchvision's detectors send one NMS tens of thousands of boxes).
struct Kept {
  float *y0, *x0, *y1, *x1, *area;
  /// Over `5 * n` floats of scratch.
  static Kept over(float *scratch, int64_t n) {
    return {scratch, scratch + n, scratch + 2 * n, scratch + 3 * n, scratch + 4 * n};
  }
  void set(int64_t i, const Geometry &g) const {
    y0[i] = g.y0, x0[i] = g.x0, y1[i] = g.y1, x1[i] = g.x1, area[i] = g.area;
  }
};

/// Whether one of the first `count` kept boxes suppresses candidate a: their
/// IoU is above `threshold`. Boxes that do not intersect, or either of no
/// area, overlap nothing (so NaN coordinates suppress nothing). Blocks of 256
/// without an early exit inside, so that the compiler vectorises a block.
inline bool suppressed(const Geometry &a, const Kept &k, int64_t count, float threshold) {
  if (!(a.area > 0))
    return false;
  constexpr int64_t kBlock = 256;
  for (int64_t s = 0; s < count; s += kBlock) {
    const int64_t e = count - s < kBlock ? count : s + kBlock;
    int hit = 0;
    for (int64_t j = s; j < e; ++j) {
      const float y0 = a.y0 > k.y0[j] ? a.y0 : k.y0[j], x0 = a.x0 > k.x0[j] ? a.x0 : k.x0[j];
      const float y1 = a.y1 < k.y1[j] ? a.y1 : k.y1[j], x1 = a.x1 < k.x1[j] ? a.x1 : k.x1[j];
      const float inter = (y1 - y0) * (x1 - x0);
      const float uni = a.area + k.area[j] - inter;
      hit |= int(y1 > y0) & int(x1 > x0) & int(k.area[j] > 0) & int(uni > 0) &
             int(inter / uni > threshold);
    }
    if (hit)
      return true;
  }
  return false;
}

/// Selects among `n` boxes (boxes: [n, 4]; scores: element i at i *
/// scoreStride) into `selected` (at most maxOutput); returns the count.
/// Scratch: `order` and `tmp`, n each, and `kept` over 5n floats (the
/// selected boxes' geometries, compared by every later candidate).
inline int64_t select(const float *boxes, const float *scores, int64_t scoreStride, int64_t n,
                      int64_t maxOutput, float iouThreshold, bool hasScoreThreshold,
                      float scoreThreshold, bool centre, int64_t *order, int64_t *tmp,
                      int64_t *selected, float *keptScratch) {
  if (maxOutput <= 0)
    return 0;
  // By score, highest first; equal scores by index.
  const int64_t *sorted = sorting::sortIndices(n, order, tmp, [&](int64_t a, int64_t b) {
    return scores[a * scoreStride] > scores[b * scoreStride];
  });
  const Kept kept = Kept::over(keptScratch, n);
  int64_t count = 0;
  for (int64_t k = 0; k < n && count < maxOutput; ++k) {
    const int64_t i = sorted[k];
    if (hasScoreThreshold && !(scores[i * scoreStride] > scoreThreshold))
      continue;
    const Geometry g = geometry(boxes, i, centre);
    if (!suppressed(g, kept, count, iouThreshold)) {
      kept.set(count, g);
      selected[count++] = i;
    }
  }
  return count;
}

} // namespace tessera::nms
