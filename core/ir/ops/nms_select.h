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

/// Scratch bytes `select` needs for n boxes (besides `selected`).
inline constexpr int64_t scratchBytes(int64_t n) { return 40 * n + 64; }

/// Selects among `n` boxes (boxes: [n, 4]; scores: element i at i *
/// scoreStride) into `selected` (at most maxOutput); returns the count.
/// `scratch`: scratchBytes(n) bytes, 8-byte aligned.
///
/// A candidate is compared only with the kept boxes that may overlap it
/// along x: the kept boxes sit in buckets by their left edge (about 32 boxes
/// a bucket over the boxes' range), and a bucket is skipped when every box
/// in it, and in the buckets left of it, ends left of the candidate. Exact
/// (a box not compared does not intersect the candidate), and the verdict
/// does not depend on the order the kept boxes are compared in; it makes
/// torchvision's exports fast, whose one NMS takes every class's boxes
/// shifted apart along the diagonal.
inline int64_t select(const float *boxes, const float *scores, int64_t scoreStride, int64_t n,
                      int64_t maxOutput, float iouThreshold, bool hasScoreThreshold,
                      float scoreThreshold, bool centre, int64_t *selected, void *scratch) {
  if (maxOutput <= 0 || n <= 0)
    return 0;
  // Buckets by left edge, over the boxes that can suppress (of some area):
  // one when their edges span no finite range.
  float lo = __builtin_inff(), hi = -__builtin_inff();
  for (int64_t i = 0; i < n; ++i) {
    const Geometry g = geometry(boxes, i, centre);
    if (g.area > 0)
      lo = g.x0 < lo ? g.x0 : lo, hi = g.x0 > hi ? g.x0 : hi;
  }
  int64_t buckets = n / 32 + 1;
  if (!(hi > lo) || !(hi - lo < __builtin_inff()))
    buckets = 1;
  // The 8-byte arrays first, then the floats.
  int64_t *order = (int64_t *)scratch, *tmp = order + n, *start = tmp + n;
  int64_t *fill = start + buckets + 1;
  const Kept kept = Kept::over((float *)(fill + buckets), n);
  float *reach = kept.area + n; // the largest right edge in buckets 0..b
  const float scale = buckets > 1 ? float(buckets) / (hi - lo) : 0.0f;
  auto bucketOf = [&](float x) -> int64_t { // monotone in x
    if (buckets == 1)
      return 0;
    const float f = (x - lo) * scale;
    return f < 1.0f ? 0 : f >= float(buckets) ? buckets - 1 : int64_t(f);
  };
  for (int64_t b = 0; b <= buckets; ++b)
    start[b] = 0;
  for (int64_t b = 0; b < buckets; ++b)
    fill[b] = 0, reach[b] = -__builtin_inff();
  for (int64_t i = 0; i < n; ++i) {
    const Geometry g = geometry(boxes, i, centre);
    if (!(g.area > 0))
      continue;
    const int64_t b = bucketOf(g.x0);
    ++start[b + 1];
    reach[b] = g.x1 > reach[b] ? g.x1 : reach[b];
  }
  for (int64_t b = 0; b < buckets; ++b) {
    start[b + 1] += start[b];
    if (b > 0 && reach[b - 1] > reach[b])
      reach[b] = reach[b - 1];
  }
  // By score, highest first; equal scores by index.
  const int64_t *sorted = sorting::sortIndices(n, order, tmp, [&](int64_t a, int64_t b) {
    return scores[a * scoreStride] > scores[b * scoreStride];
  });
  int64_t count = 0;
  for (int64_t k = 0; k < n && count < maxOutput; ++k) {
    const int64_t i = sorted[k];
    if (hasScoreThreshold && !(scores[i * scoreStride] > scoreThreshold))
      continue;
    const Geometry g = geometry(boxes, i, centre);
    if (!(g.area > 0)) { // neither suppressed nor suppressing
      selected[count++] = i;
      continue;
    }
    // The first bucket whose boxes (or those left of it) may end right of g.x0.
    int64_t first = 0, past = buckets;
    while (first < past) {
      const int64_t mid = first + (past - first) / 2;
      if (reach[mid] > g.x0)
        past = mid;
      else
        first = mid + 1;
    }
    bool out = false;
    for (int64_t b = first, last = bucketOf(g.x1); !out && b <= last; ++b) {
      const int64_t at = start[b];
      const Kept part{kept.y0 + at, kept.x0 + at, kept.y1 + at, kept.x1 + at, kept.area + at};
      out = suppressed(g, part, fill[b], iouThreshold);
    }
    if (!out) {
      const int64_t b = bucketOf(g.x0);
      kept.set(start[b] + fill[b]++, g);
      selected[count++] = i;
    }
  }
  return count;
}

} // namespace tessera::nms
