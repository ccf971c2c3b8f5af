//===- codegen/kernels/image.cpp - Image sampling host kernels -----------===//
//
// Kernels that sample NCHW images at fractional positions:
//   resize2d     taps (source indices and weights per output row and
//                column) precomputed by the lowering; nearest copies raw
//                elements (any dtype), linear and cubic sum in double
//   grid_sample  bilinear, nearest, bicubic; zeros, border, reflection
//   roi_align    avg and max modes
// Following the reference kernels (core/ir/ops/nn.cpp resize2d,
// core/ir/ops/image.cpp), they compute in double and round once to the
// output dtype.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/tensor_common.h"
#include "codegen/kernels/tensor_ops.h"
#include "ir/ops/resize_taps.h"

namespace {

template <class Body> static void tk_body_trampoline(void *closure, int64_t begin, int64_t end) {
  (*(const Body *)closure)(begin, end);
}

//===----------------------------------------------------------------------===//
// resize2d
//===----------------------------------------------------------------------===//

// One output coordinate's taps: ia (outside, n, idx[4]) and fa w[4].
struct Taps {
  const int64_t *i;
  const double *w;
};

struct ResizeBody {
  const tk_args *a;
  int64_t esize, H, W, OH, OW;
  bool nearest;
  const int64_t *rowIa, *colIa;
  const double *rowFa, *colFa;
  const int64_t *fill; // extrapolation_value's bytes

  /// Output rows [begin, end) (rows: (nc, oh) pairs). Each output is
  /// outside(o) (tf_crop_and_resize: outside the input) or, by `sample`,
  /// the input at its taps: one element (nearest) or a double sum over its
  /// row and column taps, read by `load(index)`.
  template <typename Outside, typename Sample>
  void rows(int64_t begin, int64_t end, Outside outside, Sample sample) const {
    for (int64_t r = begin; r < end; ++r) {
      int64_t nc = r / OH, oh = r % OH;
      const int64_t *th = rowIa + 6 * oh;
      const double *thw = rowFa + 4 * oh;
      for (int64_t ow = 0; ow < OW; ++ow) {
        const int64_t *tw = colIa + 6 * ow;
        int64_t o = r * OW + ow;
        if (th[0] || tw[0])
          outside(o);
        else
          sample(o, nc, th, thw, tw, colFa + 4 * ow);
      }
    }
  }

  /// The linear or cubic sum of one output: rows in order, each a double
  /// sum over its column taps.
  template <typename Load>
  double weightedSum(int64_t nc, const int64_t *th, const double *thw, const int64_t *tw,
                     const double *tww, Load load) const {
    double acc = 0;
    for (int64_t i = 0; i < th[1]; ++i) {
      if (thw[i] == 0)
        continue;
      const int64_t rowBase = (nc * H + th[2 + i]) * W;
      double row = 0;
      for (int64_t j = 0; j < tw[1]; ++j)
        row += tww[j] * load(rowBase + tw[2 + j]);
      acc += thw[i] * row;
    }
    return acc;
  }

  /// The widest output row cachedRows takes (its cache is on the stack:
  /// 4 rows of doubles, 64 KiB).
  static constexpr int64_t kCachedRowWidth = 2048;

  /// f32 linear and cubic: weightedSum's sums, with each input row's column
  /// sums (the inner sum) computed once per output row that reads it rather
  /// than once per output: an upsampling by 8 reads each input row from 8
  /// output rows. The same double operations in the same order as
  /// weightedSum, so the same bits.
  void cachedRows(int64_t begin, int64_t end, const float *xf, float *yf) const {
    double rows[4][kCachedRowWidth];
    int64_t key[4] = {-1, -1, -1, -1}; // nc * H + input row held by each slot
    const float fill = *(const float *)this->fill;
    for (int64_t r = begin; r < end; ++r) {
      const int64_t nc = r / OH, oh = r % OH;
      const int64_t *th = rowIa + 6 * oh;
      const double *thw = rowFa + 4 * oh;
      float *out = yf + r * OW;
      if (th[0]) {
        for (int64_t ow = 0; ow < OW; ++ow)
          out[ow] = fill;
        continue;
      }
      // The slot of each tap's input row, its column sums computed if new.
      const double *tapRow[4] = {};
      for (int64_t i = 0; i < th[1]; ++i) {
        if (thw[i] == 0)
          continue;
        const int64_t want = nc * H + th[2 + i];
        int slot = -1;
        for (int k = 0; k < 4 && slot < 0; ++k)
          if (key[k] == want)
            slot = k;
        if (slot < 0) { // a slot no tap of this output row reads
          for (int k = 0; k < 4 && slot < 0; ++k) {
            bool needed = false;
            for (int64_t t = 0; t < th[1]; ++t)
              needed = needed || (thw[t] != 0 && key[k] == nc * H + th[2 + t]);
            if (!needed)
              slot = k;
          }
          key[slot] = want;
          const float *src = xf + want * W;
          for (int64_t ow = 0; ow < OW; ++ow) {
            const int64_t *tw = colIa + 6 * ow;
            const double *tww = colFa + 4 * ow;
            double sum = 0;
            if (tw[0]) { // outside: filled below, its taps not read
              rows[slot][ow] = 0;
              continue;
            }
            for (int64_t j = 0; j < tw[1]; ++j)
              sum += tww[j] * (double)src[tw[2 + j]];
            rows[slot][ow] = sum;
          }
        }
        tapRow[i] = rows[slot];
      }
      for (int64_t ow = 0; ow < OW; ++ow) {
        if (colIa[6 * ow]) {
          out[ow] = fill;
          continue;
        }
        double acc = 0;
        for (int64_t i = 0; i < th[1]; ++i)
          if (thw[i] != 0)
            acc += thw[i] * tapRow[i][ow];
        out[ow] = (float)acc;
      }
    }
  }

  void operator()(int64_t begin, int64_t end) const {
    const tk_tensor &x = a->in[0], &y = a->out[0];
    uint8_t *yb = (uint8_t *)y.data;
    auto outsideRaw = [&](int64_t o) {
      memcpy(yb + o * esize, fill, (size_t)esize);
    };
    if (nearest)
      return rows(begin, end, outsideRaw,
                  [&](int64_t o, int64_t nc, const int64_t *th, const double *, const int64_t *tw,
                      const double *) {
                    int64_t src = (nc * H + th[2]) * W + tw[2];
                    memcpy(yb + o * esize, (const uint8_t *)x.data + src * esize,
                           (size_t)esize);
                  });
    if (x.dtype == TK_F32 && y.dtype == TK_F32 && OW <= kCachedRowWidth)
      return cachedRows(begin, end, (const float *)x.data, (float *)y.data);
    if (x.dtype == TK_F32 && y.dtype == TK_F32) {
      // Direct loads and stores: no dtype switch per element (DeepLabV3's
      // 14x14 to 224x224 upsampling was 16% of its time that way).
      const float *xf = (const float *)x.data;
      float *yf = (float *)y.data;
      return rows(begin, end, outsideRaw,
                  [&](int64_t o, int64_t nc, const int64_t *th, const double *thw,
                      const int64_t *tw, const double *tww) {
                    yf[o] = (float)weightedSum(nc, th, thw, tw, tww,
                                               [&](int64_t i) { return (double)xf[i]; });
                  });
    }
    rows(begin, end, outsideRaw,
         [&](int64_t o, int64_t nc, const int64_t *th, const double *thw, const int64_t *tw,
             const double *tww) {
           tk_store_f64(y, o, weightedSum(nc, th, thw, tw, tww,
                                          [&](int64_t i) { return tk_load_f64(x, i); }));
         });
  }
};

//===----------------------------------------------------------------------===//
// grid_sample
//===----------------------------------------------------------------------===//

// ONNX reference _gs_reflect: reflects x into [lo, hi].
static inline double tk_reflect(double x, double lo, double hi) {
  double range = hi - lo;
  if (range <= 0)
    return lo;
  if (x < lo) {
    double dx = lo - x;
    int64_t n = (int64_t)(dx / range);
    double r = dx - (double)n * range;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    double dx = x - hi;
    int64_t n = (int64_t)(dx / range);
    double r = dx - (double)n * range;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

static inline double tk_clampd(double v, double lo, double hi) {
  return v < lo ? lo : hi < v ? hi : v;
}
static inline int64_t tk_clampi(int64_t v, int64_t lo, int64_t hi) {
  return v < lo ? lo : hi < v ? hi : v;
}

// Cubic convolution weights (a = -0.75) of the taps at -1, 0, 1, 2.
static inline void tk_cubic_coeffs(double t, double c[4]) {
  const double a = -0.75;
  double x = fabs(t);
  c[0] = ((a * (x + 1) - 5 * a) * (x + 1) + 8 * a) * (x + 1) - 4 * a;
  c[1] = ((a + 2) * x - (a + 3)) * x * x + 1;
  c[2] = ((a + 2) * (1 - x) - (a + 3)) * (1 - x) * (1 - x) + 1;
  c[3] = ((a * (2 - x) - 5 * a) * (2 - x) + 8 * a) * (2 - x) - 4 * a;
}

struct GridSampleBody {
  const tk_tensor *x, *grid, *y;
  int64_t C, H, W, OH, OW, mode, padding;
  bool align;

  // The pixel at integer (r, col) under the padding mode.
  double pixel(int64_t base, int64_t r, int64_t col) const {
    switch (padding) {
    case TK_GS_ZEROS:
      if (r < 0 || r >= H || col < 0 || col >= W)
        return 0.0;
      break;
    case TK_GS_BORDER:
      r = tk_clampi(r, 0, H - 1);
      col = tk_clampi(col, 0, W - 1);
      break;
    default: { // reflection
      double xmin = align ? 0.0 : -0.5, xmax = align ? (double)(W - 1) : (double)W - 0.5;
      double ymin = align ? 0.0 : -0.5, ymax = align ? (double)(H - 1) : (double)H - 0.5;
      col = (int64_t)tk_reflect((double)col, xmin, xmax);
      r = (int64_t)tk_reflect((double)r, ymin, ymax);
      col = tk_clampi(col, 0, W - 1);
      r = tk_clampi(r, 0, H - 1);
      break;
    }
    }
    return tk_load_f64(*x, base + r * W + col);
  }

  double denorm(double v, int64_t len) const {
    return align ? (v + 1) / 2.0 * (double)(len - 1) : ((v + 1) * (double)len - 1) / 2.0;
  }

  // Rows: (n, c) pairs.
  void operator()(int64_t begin, int64_t end) const {
    double xmin = align ? 0.0 : -0.5, xmax = align ? (double)(W - 1) : (double)W - 0.5;
    double ymin = align ? 0.0 : -0.5, ymax = align ? (double)(H - 1) : (double)H - 0.5;
    for (int64_t nc = begin; nc < end; ++nc) {
      int64_t n = nc / C;
      const int64_t base = nc * H * W;
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          int64_t g = ((n * OH + oy) * OW + ox) * 2;
          double fx = denorm(tk_load_f64(*grid, g), W), fy = denorm(tk_load_f64(*grid, g + 1), H);
          if (mode == TK_GS_NEAREST) {
            fx = nearbyint(fx);
            fy = nearbyint(fy);
          }
          if (padding == TK_GS_BORDER) {
            fx = tk_clampd(fx, 0.0, (double)(W - 1));
            fy = tk_clampd(fy, 0.0, (double)(H - 1));
          } else if (padding == TK_GS_REFLECTION) {
            fx = tk_reflect(fx, xmin, xmax);
            fy = tk_reflect(fy, ymin, ymax);
          }
          double v;
          if (mode == TK_GS_NEAREST) {
            v = pixel(base, (int64_t)nearbyint(fy), (int64_t)nearbyint(fx));
          } else if (mode == TK_GS_BILINEAR) {
            double x1 = floor(fx), y1 = floor(fy);
            int64_t ix = (int64_t)x1, iy = (int64_t)y1;
            double dx1 = fx - x1, dx2 = x1 + 1 - fx, dy1 = fy - y1, dy2 = y1 + 1 - fy;
            v = dy2 * (dx2 * pixel(base, iy, ix) + dx1 * pixel(base, iy, ix + 1)) +
                dy1 * (dx2 * pixel(base, iy + 1, ix) + dx1 * pixel(base, iy + 1, ix + 1));
          } else {
            double x0 = floor(fx) - 1, y0 = floor(fy) - 1;
            int64_t ix = (int64_t)x0, iy = (int64_t)y0;
            double cx[4], cy[4];
            tk_cubic_coeffs(fx - x0 - 1, cx);
            tk_cubic_coeffs(fy - y0 - 1, cy);
            v = 0;
            for (int64_t h = 0; h < 4; ++h) {
              double row = 0;
              for (int64_t w = 0; w < 4; ++w)
                row += cx[w] * pixel(base, iy + h, ix + w);
              v += cy[h] * row;
            }
          }
          tk_store_f64(*y, (nc * OH + oy) * OW + ox, v);
        }
    }
  }
};

//===----------------------------------------------------------------------===//
// roi_align
//===----------------------------------------------------------------------===//

// One axis of a bilinear sample: positions lo and hi with weights wlo and
// whi, or outside the map (the sample's four taps then read position 0 with
// weight 0, as the reference's do).
struct RoiAxisTap {
  int64_t lo, hi;
  double wlo, whi;
  bool outside;
};

// The taps of a sample at coordinate v on an axis of `size` positions.
static inline RoiAxisTap roiTap(double v, int64_t size) {
  RoiAxisTap t{0, 0, 0, 0, v < -1.0 || v > (double)size};
  if (t.outside)
    return t;
  v = v < 0 ? 0 : v;
  int64_t lo = (int64_t)v, hi;
  if (lo >= size - 1) {
    hi = lo = size - 1;
    v = (double)lo;
  } else {
    hi = lo + 1;
  }
  const double l = v - (double)lo;
  t.lo = lo, t.hi = hi, t.wlo = 1 - l, t.whi = l;
  return t;
}

// The coordinate of sample i of bin p along an axis: `start` the roi's
// first coordinate, `bin` a bin's size, `grid` samples per bin.
static inline double roiSample(double start, double bin, int64_t grid, int64_t p, int64_t i) {
  return start + (double)p * bin + ((double)i + 0.5) * bin / (double)grid;
}

// A sample's four taps in a channel's plane and their weights.
struct RoiSample {
  int64_t pos[4];
  double w[4];
};

static inline RoiSample roiSampleTaps(const RoiAxisTap &ty, const RoiAxisTap &tx, int64_t W) {
  RoiSample s{{0, 0, 0, 0}, {0, 0, 0, 0}};
  if (ty.outside || tx.outside)
    return s;
  s.pos[0] = ty.lo * W + tx.lo, s.pos[1] = ty.lo * W + tx.hi;
  s.pos[2] = ty.hi * W + tx.lo, s.pos[3] = ty.hi * W + tx.hi;
  s.w[0] = ty.wlo * tx.wlo, s.w[1] = ty.wlo * tx.whi;
  s.w[2] = ty.whi * tx.wlo, s.w[3] = ty.whi * tx.whi;
  return s;
}

struct RoiAlignBody {
  const tk_tensor *x, *rois, *batch, *y;
  int64_t C, H, W, PH, PW, ratio;
  bool halfPixel, maxMode;
  double scale;

  // A roi's samples (bin by bin) are computed once and read by each of its
  // channels where there are at most this many (torchvision's box heads
  // take 7 x 7 bins of 2 x 2, its mask heads 14 x 14 of 2 x 2: 784; 48 KiB
  // of stack); a roi with more computes each channel's samples in place.
  static constexpr int64_t kMaxSamples = 1024;

  // Rows: (roi, c) pairs.
  void operator()(int64_t begin, int64_t end) const {
    const int64_t *batchIndices = (const int64_t *)batch->data;
    RoiSample table[kMaxSamples];
    int64_t tabled = -1; // the roi whose samples `table` holds
    for (int64_t rc = begin; rc < end; ++rc) {
      int64_t roi = rc / C, c = rc % C;
      int64_t b = batchIndices[roi];
      double offset = halfPixel ? 0.5 : 0.0;
      double x1 = tk_load_f64(*rois, roi * 4) * scale - offset;
      double y1 = tk_load_f64(*rois, roi * 4 + 1) * scale - offset;
      double x2 = tk_load_f64(*rois, roi * 4 + 2) * scale - offset;
      double y2 = tk_load_f64(*rois, roi * 4 + 3) * scale - offset;
      double rw = x2 - x1, rh = y2 - y1;
      if (!halfPixel) {
        rw = rw < 1.0 ? 1.0 : rw;
        rh = rh < 1.0 ? 1.0 : rh;
      }
      double binH = rh / (double)PH, binW = rw / (double)PW;
      int64_t gridH = ratio > 0 ? ratio : (int64_t)ceil(rh / (double)PH);
      int64_t gridW = ratio > 0 ? ratio : (int64_t)ceil(rw / (double)PW);
      int64_t cells = gridH * gridW;
      double count = (double)(cells > 1 ? cells : 1);
      const int64_t base = (b * C + c) * H * W, out = (roi * C + c) * PH * PW;
      // Bin (ph, pw)'s sample (iy, ix).
      auto taps = [&](int64_t ph, int64_t pw, int64_t iy, int64_t ix) {
        return roiSampleTaps(roiTap(roiSample(y1, binH, gridH, ph, iy), H),
                             roiTap(roiSample(x1, binW, gridW, pw, ix), W), W);
      };
      if (PH * PW * cells > kMaxSamples) {
        for (int64_t ph = 0; ph < PH; ++ph)
          for (int64_t pw = 0; pw < PW; ++pw) {
            double acc = 0;
            for (int64_t iy = 0; iy < gridH; ++iy)
              for (int64_t ix = 0; ix < gridW; ++ix)
                add(TkAnyFloat{x, base}, taps(ph, pw, iy, ix), acc, iy == 0 && ix == 0);
            tk_store_f64(*y, out + ph * PW + pw, maxMode ? acc : acc / count);
          }
        continue;
      }
      if (tabled != roi) {
        RoiSample *next = table;
        for (int64_t ph = 0; ph < PH; ++ph)
          for (int64_t pw = 0; pw < PW; ++pw)
            for (int64_t iy = 0; iy < gridH; ++iy)
              for (int64_t ix = 0; ix < gridW; ++ix)
                *next++ = taps(ph, pw, iy, ix);
        tabled = roi;
      }
      if (x->dtype == TK_F32 && y->dtype == TK_F32)
        channel(((const float *)x->data) + base, table, cells, count, (float *)y->data + out);
      else
        channel(TkAnyFloat{x, base}, table, cells, count, TkAnyOut{y, out});
    }
  }

  // A float tensor's elements from `base` on, as double.
  struct TkAnyFloat {
    const tk_tensor *t;
    int64_t base;
    double operator[](int64_t i) const { return tk_load_f64(*t, base + i); }
  };
  struct TkAnyOut {
    const tk_tensor *t;
    int64_t base;
    void store(int64_t i, double v) const { tk_store_f64(*t, base + i, v); }
  };
  static void store(float *y, int64_t i, double v) { y[i] = (float)v; }
  static void store(const TkAnyOut &y, int64_t i, double v) { y.store(i, v); }

  // One sample into a bin's acc. avg: the weighted sum of its taps added;
  // max: the largest weighted tap, then the largest over the bin's samples.
  template <class Plane>
  __attribute__((always_inline)) void add(const Plane &plane, const RoiSample &s, double &acc,
                                          bool first) const {
    if (maxMode) {
      double m = s.w[0] * (double)plane[s.pos[0]];
      for (int k = 1; k < 4; ++k) {
        double v = s.w[k] * (double)plane[s.pos[k]];
        m = m < v ? v : m; // std::max(m, v)
      }
      acc = first ? m : (acc < m ? m : acc);
    } else {
      // Two independent pairs: one add per sample on the bin's chain.
      acc += (s.w[0] * (double)plane[s.pos[0]] + s.w[1] * (double)plane[s.pos[1]]) +
             (s.w[2] * (double)plane[s.pos[2]] + s.w[3] * (double)plane[s.pos[3]]);
    }
  }

  // One (roi, c) row: bin by bin, `cells` samples each, from the roi's table.
  template <class Plane, class Out>
  __attribute__((always_inline)) void channel(const Plane &plane, const RoiSample *table,
                                              int64_t cells, double count, const Out &out) const {
    for (int64_t bin = 0; bin < PH * PW; ++bin, table += cells) {
      double acc = 0;
      for (int64_t k = 0; k < cells; ++k)
        add(plane, table[k], acc, k == 0);
      store(out, bin, maxMode ? acc : acc / count);
    }
  }
};

} // namespace

static void runResize(const tessera_host_ctx_t *ctx, ResizeBody &body, int64_t NC) {
  const int64_t rows = NC * body.OH;
  if (rows > 1 && rows * body.OW >= TK_CHUNK)
    tk_parallel_for(ctx, rows, &tk_body_trampoline<ResizeBody>, &body);
  else
    body(0, rows);
}

// resize2d: ia = [elem_size, nearest, H, W, OH, OW, fill_bits,
// (outside, n, idx[4]) per output row, then per output column], fa =
// [w[4] per output row, then per output column]. nearest: n = 1 and idx[0]
// the chosen source. fill_bits: extrapolation_value's bytes in the dtype.
TK_KERNEL(resize2d) {
  const int64_t *ia = a->ia;
  int64_t H = ia[2], W = ia[3], OH = ia[4], OW = ia[5];
  int64_t NC = a->in[0].shape[0] * a->in[0].shape[1];
  ResizeBody body{a,     ia[0],         H, W, OH, OW, ia[1] != 0, ia + 7, ia + 7 + 6 * OH,
                  a->fa, a->fa + 4 * OH, &ia[6]};
  runResize(ctx, body, NC);
  return TESSERA_HOST_OK;
}

// resize2d_dyn: ia = [elem_size, mode, coord, nearest_mode,
// exclude_outside, fill_bits, has_scales], fa = [cubic_a, scale_h,
// scale_w, roi0_h, roi0_w, roi1_h, roi1_w] (ir/ops/resize_taps.h enums).
// The taps resize2d's lowering precomputes, computed per run from this
// run's shapes (a step over symbolic shapes) into the scratch buffer,
// TK_RESIZE_TAP_BYTES per output row and column.
TK_KERNEL(resize2d_dyn) {
  namespace rt = tessera::ir::ops;
  const int64_t *ia = a->ia;
  const double *fa = a->fa;
  const tk_tensor &x = a->in[0], &y = a->out[0];
  const int64_t H = x.shape[2], W = x.shape[3], OH = y.shape[2], OW = y.shape[3];
  rt::ResizeSampling p;
  p.mode = (int32_t)ia[1];
  p.coord = (int32_t)ia[2];
  p.nearest = (int32_t)ia[3];
  p.excludeOutside = ia[4] != 0;
  p.cubicA = fa[0];
  int64_t *tapIa = (int64_t *)a->scratch;
  double *tapFa = (double *)(tapIa + 6 * (OH + OW));
  for (int axis = 0; axis < 2; ++axis) {
    const int64_t in = axis ? W : H, out = axis ? OW : OH, first = axis ? OH : 0;
    const double scale = ia[6] ? fa[1 + axis] : (double)out / (double)in;
    for (int64_t o = 0; o < out; ++o) {
      const rt::Taps t = rt::resizeHostTaps(p, o, scale, in, out, fa[3 + axis], fa[5 + axis]);
      int64_t *ti = tapIa + 6 * (first + o);
      double *tw = tapFa + 4 * (first + o);
      ti[0] = t.outside ? 1 : 0;
      ti[1] = t.n;
      for (int k = 0; k < 4; ++k) {
        ti[2 + k] = t.idx[k];
        tw[k] = t.w[k];
      }
    }
  }
  ResizeBody body{a,     ia[0], H,           W, OH, OW, p.mode == rt::kResizeNearest, tapIa,
                  tapIa + 6 * OH, tapFa, tapFa + 4 * OH, &ia[5]};
  runResize(ctx, body, x.shape[0] * x.shape[1]);
  return TESSERA_HOST_OK;
}

// grid_sample: ia = [mode, padding_mode, align_corners] (tensor_ops.h).
TK_KERNEL(grid_sample) {
  const tk_tensor &x = a->in[0], &grid = a->in[1], &y = a->out[0];
  GridSampleBody body{&x,         &grid,      &y,       x.shape[1], x.shape[2],   x.shape[3],
                      y.shape[2], y.shape[3], a->ia[0], a->ia[1],   a->ia[2] != 0};
  int64_t rows = x.shape[0] * x.shape[1];
  if (rows > 1 && rows * y.shape[2] * y.shape[3] >= 1024)
    tk_parallel_for(ctx, rows, &tk_body_trampoline<GridSampleBody>, &body);
  else
    body(0, rows);
  return TESSERA_HOST_OK;
}

// roi_align: ia = [output_height, output_width, sampling_ratio, half_pixel,
// max_mode], fa = [spatial_scale]. A batch index outside the batch is
// TESSERA_HOST_ERR_INVALID.
TK_KERNEL(roi_align) {
  const tk_tensor &x = a->in[0], &y = a->out[0];
  int64_t N = x.shape[0], R = a->in[1].shape[0];
  const int64_t *batch = (const int64_t *)a->in[2].data;
  for (int64_t r = 0; r < R; ++r)
    if (batch[r] < 0 || batch[r] >= N)
      return TESSERA_HOST_ERR_INVALID;
  RoiAlignBody body{&x,         &a->in[1], &a->in[2], &y,       x.shape[1],    x.shape[2],
                    x.shape[3], a->ia[0],  a->ia[1],  a->ia[2], a->ia[3] != 0, a->ia[4] != 0,
                    a->fa[0]};
  int64_t rows = R * x.shape[1];
  if (rows > 1)
    tk_parallel_for(ctx, rows, &tk_body_trampoline<RoiAlignBody>, &body);
  else
    body(0, rows);
  return TESSERA_HOST_OK;
}
