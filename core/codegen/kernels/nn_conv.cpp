//===- codegen/kernels/nn_conv.cpp - conv2d and conv2d_transpose ----------===//
//
// NCHW convolutions (semantics: core/ir/ops/nn_conv.cpp), computed in float
// (f32, f16, bf16) or double (f64):
//  - conv2d as the GEMM of nn_gemm.h per image and group (weights
//    [Og, Cg*KH*KW] x the input's taps [Cg*KH*KW, OH*OW]): the taps gathered
//    as the GEMM packs its panels (ConvPanels) for up to one row tile of
//    output channels, else by im2col into scratch; a 1x1 stride-1 unpadded
//    conv multiplies the input directly; convolutions with
//    one input channel per group (depthwise) run directly, on vectors of
//    outputs read from zero-padded copies of the input rows (directLines).
//  - conv2d_transpose as the GEMM W_g^T x X_g into columns, then col2im
//    (scatter-add into the output).
// The lowerings (codegen/host_ops_nn.cpp) choose the mode and lay out the
// scratch; the ia layouts are documented at each kernel.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/nn_gemm.h"

using namespace tk_nn;

namespace {

struct ConvShape {
  int64_t N, C, H, W;     // input
  int64_t O, Cg, KH, KW;  // weight (conv2d: [O, Cg, KH, KW])
  int64_t OH, OW;         // output spatial size
  int64_t sh, sw, dh, dw; // strides, dilation
  int64_t pt, pl;         // leading pads
  int64_t groups;
};

/// The output columns [lo, hi) whose input column ow*sw - pl + kw*dw is
/// inside [0, W).
inline void validColumns(const ConvShape &s, int64_t kw, int64_t &lo, int64_t &hi) {
  int64_t off = kw * s.dw - s.pl; // iw = ow*sw + off
  lo = tkMax<int64_t>(0, ceilDiv(-off, s.sw));
  hi = tkMin<int64_t>(s.OW, ceilDiv(s.W - off, s.sw));
  if (hi < lo)
    hi = lo;
}

// --- conv2d --------------------------------------------------------------------

template <typename T> struct Im2col {
  const ConvShape *s;
  const T *x; // one image's channels of one group: [Cg, H, W]
  T *col;     // [Cg*KH*KW, OH*OW]
};

template <typename T> void im2colBody(void *closure, int64_t begin, int64_t end) {
  const Im2col<T> &job = *(const Im2col<T> *)closure;
  const ConvShape &s = *job.s;
  for (int64_t row = begin; row < end; ++row) {
    int64_t c = row / (s.KH * s.KW), kh = (row / s.KW) % s.KH, kw = row % s.KW;
    int64_t lo, hi;
    validColumns(s, kw, lo, hi);
    int64_t off = kw * s.dw - s.pl;
    for (int64_t oh = 0; oh < s.OH; ++oh) {
      T *dst = job.col + (row * s.OH + oh) * s.OW;
      int64_t ih = oh * s.sh - s.pt + kh * s.dh;
      if (ih < 0 || ih >= s.H) {
        for (int64_t ow = 0; ow < s.OW; ++ow)
          dst[ow] = T(0);
        continue;
      }
      const T *src = job.x + (c * s.H + ih) * s.W;
      for (int64_t ow = 0; ow < lo; ++ow)
        dst[ow] = T(0);
      for (int64_t ow = lo; ow < hi; ++ow)
        dst[ow] = src[ow * s.sw + off];
      for (int64_t ow = hi; ow < s.OW; ++ow)
        dst[ow] = T(0);
    }
  }
}

/// B of a conv's GEMM, gathered from the input as gemmTile packs it
/// (an implicit GEMM): B[k, n] for k = (c, kh, kw) and n = (oh, ow) is the
/// input element tap (kh, kw) of channel c reads for output (oh, ow), zero in
/// the padding. The [Cg*KH*KW, OH*OW] column matrix of im2col is never
/// written: for a 32-channel 3x3 conv over 256 x 256 that was 75 MB out to
/// memory and back, twice the GEMM's own time. Each row tile of the GEMM
/// gathers the panels again, so the lowering takes this mode (3) for at
/// most one tile of output channels (kMT), and im2col's mode 0 takes it at
/// run time where the GEMM keeps every row in one tile (gemmRowsInOneTile).
/// Gemm::aux is the ConvShape, B the group's input channels [Cg, H, W].
template <typename T> struct ConvPanels {
  /// d[0, len) = the row of tap (kh, kw) of channel plane `xc` under
  /// outputs (oh, ow .. ow + len), zero outside the input.
  static void segment(const ConvShape &s, const T *xc, int64_t kh, int64_t off, int64_t oh,
                      int64_t ow, int64_t len, T *d) {
    const int64_t ih = oh * s.sh - s.pt + kh * s.dh;
    int64_t lo = 0, hi = 0;
    const int64_t iw0 = ow * s.sw + off; // the input column of d[0]
    if (ih >= 0 && ih < s.H) {
      lo = iw0 >= 0 ? 0 : tkMin(len, ceilDiv(-iw0, s.sw));
      hi = tkMax(lo, tkMin(len, ceilDiv(s.W - iw0, s.sw)));
    }
    const T *row = xc + ih * s.W + iw0;
    __builtin_memset(d, 0, sizeof(T) * lo);
    if (s.sw == 1) {
      __builtin_memcpy(d + lo, row + lo, sizeof(T) * (hi - lo));
    } else {
      TK_COLD_LOOP
      for (int64_t t = lo; t < hi; ++t)
        d[t] = row[t * s.sw];
    }
    __builtin_memset(d + hi, 0, sizeof(T) * (len - hi));
  }

  static void pack(const Gemm<T> &g, const T *x, int64_t k0, int64_t kc, int64_t j, int64_t nr,
                   T *dst) {
    constexpr int NR = kNR<T>;
    const ConvShape &s = *(const ConvShape *)g.aux;
    const int64_t oh0 = j / s.OW, ow0 = j % s.OW;
    const bool oneRow = ow0 + NR <= s.OW && nr == NR;
    int64_t c = k0 / (s.KH * s.KW), kh = (k0 / s.KW) % s.KH, kw = k0 % s.KW;
    for (int64_t k = 0; k < kc; ++k, dst += NR) {
      const T *xc = x + c * s.H * s.W;
      const int64_t off = kw * s.dw - s.pl;
      const int64_t ih = oh0 * s.sh - s.pt + kh * s.dh, iw0 = ow0 * s.sw + off;
      if (oneRow && s.sw == 1 && ih >= 0 && ih < s.H && iw0 >= 0 && iw0 + NR <= s.W) {
        __builtin_memcpy(dst, xc + ih * s.W + iw0, sizeof(T) * NR); // the common case
      } else {
        // Pieces of output rows: NR columns may span several rows.
        int64_t t = 0, oh = oh0, ow = ow0;
        while (t < nr) {
          const int64_t len = tkMin(nr - t, s.OW - ow);
          segment(s, xc, kh, off, oh, ow, len, dst + t);
          t += len;
          ow = 0, ++oh;
        }
        TK_COLD_LOOP
        for (; t < NR; ++t)
          dst[t] = T(0);
      }
      if (++kw == s.KW) {
        kw = 0;
        if (++kh == s.KH)
          kh = 0, ++c;
      }
    }
  }
};

template <typename T> struct Direct {
  const ConvShape *s;
  const T *x, *w;
  T *y;
};

/// Depthwise-style, any shape: output planes (n, o) each read one input
/// plane; the output row is innermost.
template <typename T> void directPlanes(const Direct<T> &job, int64_t begin, int64_t end) {
  const ConvShape &s = *job.s;
  int64_t oPerGroup = s.O / s.groups;
  for (int64_t plane = begin; plane < end; ++plane) {
    int64_t n = plane / s.O, o = plane % s.O, ic = o / oPerGroup;
    const T *x = job.x + (n * s.C + ic) * s.H * s.W;
    const T *w = job.w + o * s.KH * s.KW;
    T *y = job.y + plane * s.OH * s.OW;
    for (int64_t oh = 0; oh < s.OH; ++oh) {
      T *yrow = y + oh * s.OW;
      for (int64_t ow = 0; ow < s.OW; ++ow)
        yrow[ow] = T(0);
      for (int64_t kh = 0; kh < s.KH; ++kh) {
        int64_t ih = oh * s.sh - s.pt + kh * s.dh;
        if (ih < 0 || ih >= s.H)
          continue;
        const T *xrow = x + ih * s.W;
        for (int64_t kw = 0; kw < s.KW; ++kw) {
          T wv = w[kh * s.KW + kw];
          int64_t lo, hi, off = kw * s.dw - s.pl;
          validColumns(s, kw, lo, hi);
          for (int64_t ow = lo; ow < hi; ++ow)
            yrow[ow] += wv * xrow[ow * s.sw + off];
        }
      }
    }
  }
}

// directLines' buffer on the thread's stack, and the most taps it takes.
constexpr int64_t kDirectBytes = 48 * 1024;
constexpr int64_t kDirectTaps = 64;
constexpr int64_t kDirectPhases = 4; // column strides up to 4

/// How directLines lays out a plane's rows: the padded input row (Wp
/// columns) split into sw phases of Qp columns each (padded column
/// p = q*sw + ph is q of phase ph), R output rows per pass. The input rows
/// sit in G groups of `rowsIn` rows: with stride 1 down the rows, one group
/// of the R + (KH-1)*dh input rows the pass reads (kernel row kh starts kh*dh
/// rows down: each input row is copied once); otherwise one group per
/// kernel row, row r of group kh being what output row r reads with it.
/// Group g's phase ph is a line of rowsIn*Qp values plus slack.
struct DirectLayout {
  int64_t Wp, Qp, R, G, rowsIn, lineLen;
  int64_t lo[kDirectPhases], hi[kDirectPhases]; // per phase: q in [lo, hi) reads input
};

/// The layout for `s` with vectors of `lanes`, or R = 0 when a single
/// output row does not fit the buffer (or there are too many taps or
/// phases).
inline DirectLayout directLayout(const ConvShape &s, int64_t lanes, int64_t elemBytes) {
  DirectLayout d{};
  if (s.KH * s.KW > kDirectTaps || s.sw > kDirectPhases)
    return d;
  d.Wp = (s.OW - 1) * s.sw + (s.KW - 1) * s.dw + 1;
  d.Qp = ceilDiv(d.Wp, s.sw);
  d.G = s.sh == 1 ? 1 : s.KH;
  int64_t extraRows = s.sh == 1 ? (s.KH - 1) * s.dh : 0;
  int64_t slack = 4 * lanes + d.Qp; // a block of 4 vectors past the end, plus a tap's offset
  int64_t perLine = kDirectBytes / elemBytes / (d.G * s.sw + 1);
  int64_t fit = perLine <= slack ? 0 : (perLine - slack) / d.Qp - extraRows;
  d.R = tkMax<int64_t>(0, tkMin(s.OH, fit));
  d.rowsIn = d.R + extraRows;
  d.lineLen = d.rowsIn * d.Qp + slack;
  for (int64_t ph = 0; ph < s.sw; ++ph) {
    // input column iw = q*sw + ph - pl in [0, W), and p = q*sw + ph < Wp
    d.lo[ph] = tkMin(d.Qp, tkMax<int64_t>(0, ceilDiv(s.pl - ph, s.sw)));
    d.hi[ph] =
        tkMax(d.lo[ph], tkMin(ceilDiv(d.Wp - ph, s.sw), ceilDiv(s.W + s.pl - ph, s.sw)));
  }
  return d;
}

/// dst[i] = src[2 * i] for the kNR<T> lanes of one vector, from two.
template <typename T> inline void evensOf(const T *src, T *dst) {
  using V = typename Vec64<T>::type;
  V a, b, e;
  __builtin_memcpy(&a, src, sizeof(V));
  __builtin_memcpy(&b, src + kNR<T>, sizeof(V));
  if constexpr (kNR<T> == 16)
    e = __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  else
    e = __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14);
  __builtin_memcpy(dst, &e, sizeof(V));
}

/// Depthwise-style with vectors of outputs. A pass computes R output rows
/// of a plane as one line of R*Qp outputs (lanes past OW in each row are
/// computed and dropped), reading input rows copied, zero-padded, end to end
/// into lines (DirectLayout), so that every tap (kh, kw) reads one
/// contiguous run for consecutive outputs, even across rows. Each output is
/// summed in registers, in the order kh, kw (directPlanes' order), four
/// vectors at a time, and rows 7 or 14 wide fill the vectors as well as
/// wide ones.
template <typename T>
void directLines(const Direct<T> &job, const DirectLayout &d, int64_t begin, int64_t end) {
  using V = typename Vec64<T>::type;
  constexpr int L = kNR<T>;
  const ConvShape &s = *job.s;
  int64_t lines = d.G * s.sw, taps = s.KH * s.KW, oPerGroup = s.O / s.groups;
  alignas(64) T buf[kDirectBytes / sizeof(T)];
  T *out = buf + lines * d.lineLen;
  for (int64_t i = 0; i < (lines + 1) * d.lineLen; ++i)
    buf[i] = T(0); // the slack is read (into dropped lanes) before it is written
  int64_t tapAt[kDirectTaps];
  for (int64_t kh = 0; kh < s.KH; ++kh)
    for (int64_t kw = 0; kw < s.KW; ++kw) {
      // Stride 1 down the rows: one group, kernel row kh kh*dh rows down;
      // else a group per kernel row (G is 1 there too when KH is 1).
      int64_t off = kw * s.dw, group = s.sh == 1 ? 0 : kh, row = s.sh == 1 ? kh * s.dh : 0;
      tapAt[kh * s.KW + kw] = (group * s.sw + off % s.sw) * d.lineLen + row * d.Qp + off / s.sw;
    }
  for (int64_t plane = begin; plane < end; ++plane) {
    int64_t n = plane / s.O, o = plane % s.O, ic = o / oPerGroup;
    const T *x = job.x + (n * s.C + ic) * s.H * s.W;
    const T *w = job.w + o * taps;
    T *y = job.y + plane * s.OH * s.OW;
    for (int64_t oh0 = 0; oh0 < s.OH; oh0 += d.R) {
      int64_t rows = tkMin(d.R, s.OH - oh0);
      int64_t rowsIn = rows + (d.rowsIn - d.R);
      for (int64_t g = 0; g < d.G; ++g)
        for (int64_t t = 0; t < rowsIn; ++t) {
          int64_t ih = s.sh == 1 ? oh0 - s.pt + t : (oh0 + t) * s.sh - s.pt + g * s.dh;
          bool inside = ih >= 0 && ih < s.H;
          const T *xrow = inside ? x + ih * s.W - s.pl : x; // (not read outside)
          for (int64_t ph = 0; ph < s.sw; ++ph) {
            T *seg = buf + (g * s.sw + ph) * d.lineLen + t * d.Qp;
            int64_t lo = inside ? d.lo[ph] : d.Qp, hi = inside ? d.hi[ph] : d.Qp;
            for (int64_t q = 0; q < lo; ++q)
              seg[q] = T(0);
            const T *src = xrow + ph;
            if (s.sw == 1) {
              for (int64_t q = lo; q < hi; ++q)
                seg[q] = src[q];
            } else if (s.sw == 2) {
              // Every other value, a vector at a time from two (scalar, this
              // copy took more time than the taps' products: a fifth of
              // EfficientNet-B0's depthwise convs). The vectors stop short
              // of the row's last value read, so nothing past it is read.
              int64_t q = lo;
              for (; q + L < hi; q += L)
                evensOf<T>(src + 2 * q, seg + q);
              for (; q < hi; ++q)
                seg[q] = src[2 * q];
            } else {
              for (int64_t q = lo; q < hi; ++q)
                seg[q] = src[q * s.sw];
            }
            for (int64_t q = hi; q < d.Qp; ++q)
              seg[q] = T(0);
          }
        }
      for (int64_t u = 0; u < rows * d.Qp; u += 4 * L) {
        V a0 = V{}, a1 = V{}, a2 = V{}, a3 = V{};
        for (int64_t t = 0; t < taps; ++t) {
          const T *src = buf + tapAt[t] + u;
          V x0, x1, x2, x3;
          __builtin_memcpy(&x0, src, sizeof(V));
          __builtin_memcpy(&x1, src + L, sizeof(V));
          __builtin_memcpy(&x2, src + 2 * L, sizeof(V));
          __builtin_memcpy(&x3, src + 3 * L, sizeof(V));
          T wv = w[t];
          a0 += x0 * wv, a1 += x1 * wv, a2 += x2 * wv, a3 += x3 * wv;
        }
        __builtin_memcpy(out + u, &a0, sizeof(V));
        __builtin_memcpy(out + u + L, &a1, sizeof(V));
        __builtin_memcpy(out + u + 2 * L, &a2, sizeof(V));
        __builtin_memcpy(out + u + 3 * L, &a3, sizeof(V));
      }
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t ow = 0; ow < s.OW; ++ow)
          y[(oh0 + r) * s.OW + ow] = out[r * d.Qp + ow];
    }
  }
}

/// The planes [begin, end): directLines when a row fits its buffer, else
/// directPlanes.
template <typename T> void directBody(void *closure, int64_t begin, int64_t end) {
  const Direct<T> &job = *(const Direct<T> *)closure;
  DirectLayout d = directLayout(*job.s, kNR<T>, sizeof(T));
  if (d.R > 0)
    directLines<T>(job, d, begin, end);
  else
    directPlanes<T>(job, begin, end);
}

ConvShape convShape(const tk_args *a) {
  const int64_t *xs = a->in[0].shape, *ws = a->in[1].shape, *ys = a->out[0].shape;
  const int64_t *ia = a->ia;
  return ConvShape{xs[0], xs[1], xs[2], xs[3], ws[0], ws[1], ws[2], ws[3], ys[2],
                   ys[3], ia[0], ia[1], ia[2], ia[3], ia[4], ia[5], ia[6]};
}

/// The kernel taps [lo, hi) along one axis that read the input for some
/// output (passes/simplify_inference.cpp drops the others at compile time
/// when shapes are static; a dilated conv wider than its input reads only
/// padding at its outer taps). hi <= lo: none.
inline void liveTaps(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t dilation,
                     int64_t pad, int64_t &lo, int64_t &hi) {
  lo = k, hi = 0;
  for (int64_t t = 0; t < k; ++t) {
    const int64_t first = t * dilation - pad; // tap t reads first + m*stride, m < out
    const int64_t m = first >= 0 ? 0 : ceilDiv(-first, stride);
    if (m < out && first + m * stride < in) {
      lo = tkMin(lo, t);
      hi = t + 1;
    }
  }
}

/// Over sizes known only at run time (offTrim >= 0): when only a block of
/// the kernel's taps reads the input, the conv of that block, its weights
/// copied into scratch at offTrim (the centre tap's, row's or column's read
/// in place at offCentre when the lowering laid them out) and `s` narrowed
/// to it (pads reduced by what the dropped taps spanned); mode 1 when it is
/// a 1x1 conv on the input.
template <typename T>
const T *trimTaps(const tk_args *a, int64_t offTrim, int64_t offCentre, bool lines, ConvShape &s,
                  int64_t &mode, const T *w) {
  int64_t lh, hh, lw, hw;
  liveTaps(s.H, s.OH, s.KH, s.sh, s.dh, s.pt, lh, hh);
  liveTaps(s.W, s.OW, s.KW, s.sw, s.dw, s.pl, lw, hw);
  if (hh <= lh || hw <= lw || (lh == 0 && hh == s.KH && lw == 0 && hw == s.KW))
    return w;
  const int64_t kh = hh - lh, kw = hw - lw, oc = s.O * s.Cg;
  // Blocks the lowering laid out after the weights: the centre tap, then
  // (lines) the centre row and the centre column.
  const T *trimmed = nullptr;
  const bool centreRow = kh == 1 && lh == s.KH / 2, centreCol = kw == 1 && lw == s.KW / 2;
  if (offCentre >= 0 && centreRow && centreCol)
    trimmed = w + offCentre;
  else if (offCentre >= 0 && lines && centreRow && kw == s.KW)
    trimmed = w + offCentre + oc;
  else if (offCentre >= 0 && lines && centreCol && kh == s.KH)
    trimmed = w + offCentre + oc + oc * s.KW;
  if (!trimmed) {
    T *copy = scratchAt<T>(a, offTrim);
    for (int64_t oc = 0; oc < s.O * s.Cg; ++oc)
      for (int64_t r = 0; r < kh; ++r)
        for (int64_t c = 0; c < kw; ++c)
          copy[(oc * kh + r) * kw + c] = w[(oc * s.KH + lh + r) * s.KW + lw + c];
    trimmed = copy;
  }
  s.pt -= lh * s.dh;
  s.pl -= lw * s.dw;
  s.KH = kh;
  s.KW = kw;
  if (kh == 1 && kw == 1 && s.sh == 1 && s.sw == 1 && s.pt == 0 && s.pl == 0 && s.OH == s.H &&
      s.OW == s.W)
    mode = 1;
  return trimmed;
}

// ia: sh, sw, dh, dw, pad_top, pad_left, groups, mode, offX, offW, offCol, offY,
// offTrim, offCentre, lines
// mode 0: im2col (offCol: Cg*KH*KW*OH*OW values) + GEMM; 1: GEMM on the
// input (1x1, stride 1, no pads); 2: direct (one input channel per group);
// 3: GEMM over the taps of the input (ConvPanels: no column matrix).
// offX/offW/offY: the input, weight and output in the compute type, -1
// where the tensor's storage is the compute type. offTrim (mode 0 over
// sizes known at run time; else -1): room for the weights of the taps that
// read the input; offCentre (or -1): where the centre tap's weights follow
// the weights, and after them (lines) the centre row's and column's
// (trimTaps).
template <typename T> int32_t conv2dImpl(const tk_args *a, const tessera_host_ctx_t *ctx) {
  const int64_t *ia = a->ia;
  ConvShape s = convShape(a);
  int64_t mode = ia[7];
  const T *x = inputAs<T>(a, 0, ia[8]);
  const T *w = inputAs<T>(a, 1, ia[9]);
  if ((mode == 0 || mode == 3) && ia[12] >= 0)
    w = trimTaps<T>(a, ia[12], ia[13], ia[14] != 0, s, mode, w);
  T *y = ia[11] >= 0 ? scratchAt<T>(a, ia[11]) : (T *)a->out[0].data;
  if (mode == 2) {
    Direct<T> job{&s, x, w, y};
    tk_parallel_for(ctx, s.N * s.O, &directBody<T>, &job);
  } else {
    int64_t og = s.O / s.groups, kc = s.Cg * s.KH * s.KW, spatial = s.OH * s.OW;
    T *col = mode == 0 ? scratchAt<T>(a, ia[10]) : nullptr;
    for (int64_t n = 0; n < s.N; ++n)
      for (int64_t gi = 0; gi < s.groups; ++gi) {
        const T *xg = x + (n * s.C + gi * s.Cg) * s.H * s.W;
        Gemm<T> g{};
        g.M = og, g.N = spatial, g.K = kc;
        g.A = w + gi * og * kc, g.a_rs = kc, g.a_ks = 1;
        g.B = xg, g.b_ks = spatial, g.b_ns = 1;
        g.C = y + (n * s.O + gi * og) * spatial, g.c_rs = spatial;
        g.batches = 1;
        g.aux = &s;
        // im2col's column matrix is written out and read back: where the
        // GEMM gathers each panel once (every row of output channels in
        // one tile), the taps go straight into the panels instead.
        if (mode == 3 || (mode == 0 && s.sw == 1 && gemmRowsInOneTile(g, ctx))) {
          gemmRun<T, ConvPanels<T>>(g, false, ctx);
          continue;
        }
        if (mode == 0) {
          Im2col<T> job{&s, xg, col};
          tk_parallel_for(ctx, kc, &im2colBody<T>, &job);
          g.B = col;
        }
        gemmRun<T>(g, false, ctx);
      }
  }
  if (ia[11] >= 0)
    storeAs<T>(y, a->out[0].dtype, tk_numel(a->out[0]), a->out[0].data);
  return TESSERA_HOST_OK;
}

} // namespace

TK_KERNEL(conv2d) {
  if (a->in[0].dtype == TK_F64)
    return conv2dImpl<double>(a, ctx);
  return conv2dImpl<float>(a, ctx);
}

// --- conv2d_transpose ------------------------------------------------------------

namespace {

template <typename T> struct Col2im {
  const ConvShape *s; // here C = input channels, O = output channels, Cg = O/groups per group
  const T *col;       // [Og*KH*KW, H*W]
  T *y;               // the group's output channels [Og, OH, OW]
};

/// Scatter-adds the columns of output channels [begin, end) of one group.
template <typename T> void col2imBody(void *closure, int64_t begin, int64_t end) {
  const Col2im<T> &job = *(const Col2im<T> *)closure;
  const ConvShape &s = *job.s;
  for (int64_t oo = begin; oo < end; ++oo) {
    T *y = job.y + oo * s.OH * s.OW;
    for (int64_t ow = 0; ow < s.OH * s.OW; ++ow)
      y[ow] = T(0);
    for (int64_t kh = 0; kh < s.KH; ++kh)
      for (int64_t kw = 0; kw < s.KW; ++kw) {
        const T *col = job.col + ((oo * s.KH + kh) * s.KW + kw) * s.H * s.W;
        for (int64_t ih = 0; ih < s.H; ++ih) {
          int64_t oh = ih * s.sh - s.pt + kh * s.dh;
          if (oh < 0 || oh >= s.OH)
            continue;
          // iw with 0 <= iw*sw - pl + kw*dw < OW
          int64_t off = kw * s.dw - s.pl;
          int64_t lo = tkMax<int64_t>(0, ceilDiv(-off, s.sw));
          int64_t hi = tkMin<int64_t>(s.W, ceilDiv(s.OW - off, s.sw));
          T *yrow = y + oh * s.OW;
          const T *crow = col + ih * s.W;
          for (int64_t iw = lo; iw < hi; ++iw)
            yrow[iw * s.sw + off] += crow[iw];
        }
      }
  }
}

// ia: sh, sw, dh, dw, pad_top, pad_left, groups, offX, offW, offCol, offY
// (offCol: Og*KH*KW*H*W values; offX/offW/offY as for conv2d).
template <typename T> int32_t conv2dTransposeImpl(const tk_args *a, const tessera_host_ctx_t *ctx) {
  const int64_t *ia = a->ia;
  const int64_t *xs = a->in[0].shape, *ws = a->in[1].shape, *ys = a->out[0].shape;
  // weight [C, Og, KH, KW]; output [N, Og*groups, OH, OW]
  ConvShape s{xs[0], xs[1], xs[2], xs[3], ys[1], ws[1], ws[2], ws[3], ys[2],
              ys[3], ia[0], ia[1], ia[2], ia[3], ia[4], ia[5], ia[6]};
  const T *x = inputAs<T>(a, 0, ia[7]);
  const T *w = inputAs<T>(a, 1, ia[8]);
  T *col = scratchAt<T>(a, ia[9]);
  T *y = ia[10] >= 0 ? scratchAt<T>(a, ia[10]) : (T *)a->out[0].data;
  int64_t cg = s.C / s.groups, og = s.Cg, rows = og * s.KH * s.KW, spatial = s.H * s.W;
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t gi = 0; gi < s.groups; ++gi) {
      // col[(oo, kh, kw), (ih, iw)] = sum_c w[g*cg + c, oo, kh, kw] * x[n, g*cg + c, ih, iw]
      Gemm<T> g{};
      g.M = rows, g.N = spatial, g.K = cg;
      g.A = w + gi * cg * rows, g.a_rs = 1, g.a_ks = rows;
      g.B = x + (n * s.C + gi * cg) * spatial, g.b_ks = spatial, g.b_ns = 1;
      g.C = col, g.c_rs = spatial;
      g.batches = 1;
      gemmRun<T>(g, false, ctx);
      Col2im<T> job{&s, col, y + (n * s.O + gi * og) * s.OH * s.OW};
      tk_parallel_for(ctx, og, &col2imBody<T>, &job);
    }
  if (ia[10] >= 0)
    storeAs<T>(y, a->out[0].dtype, tk_numel(a->out[0]), a->out[0].data);
  return TESSERA_HOST_OK;
}

} // namespace

TK_KERNEL(conv2d_transpose) {
  if (a->in[0].dtype == TK_F64)
    return conv2dTransposeImpl<double>(a, ctx);
  return conv2dTransposeImpl<float>(a, ctx);
}
