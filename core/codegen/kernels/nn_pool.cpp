//===- codegen/kernels/nn_pool.cpp - 2-D pooling --------------------------===//
//
// max_pool2d, max_pool2d_indices, avg_pool2d, global_avg_pool2d and
// global_max_pool2d on NCHW data (semantics: core/ir/ops/nn_pool.cpp), one
// (n, c) plane per unit of work on the runtime's threads. Window attributes
// arrive flattened as   ia = KH, KW, sh, sw, dh, dw, pad_top, pad_left, ...
// (see each kernel).
//
// Comparisons follow the reference: floats as values (a leading NaN sticks,
// a later one never wins), integers in their own type; padded positions
// never take part, and a window with no input element gives 0 (max), -1
// (indices) or 0/0 (average).
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/nn_common.h"

using namespace tk_nn;

namespace {

struct PoolJob {
  const tk_args *a;
  int64_t C, H, W, OH, OW;
  int64_t KH, KW, sh, sw, dh, dw, pt, pl;
};

PoolJob poolJob(const tk_args *a) {
  const int64_t *xs = a->in[0].shape, *ys = a->out[0].shape, *ia = a->ia;
  return PoolJob{a,     xs[1], xs[2], xs[3], ys[2], ys[3], ia[0],
                 ia[1], ia[2], ia[3], ia[4], ia[5], ia[6], ia[7]};
}

/// The largest element of output position (oh, ow)'s window in plane `x`
/// and where it is (h < 0: the window holds no input element).
template <int DT> struct WindowMax {
  typename Dt<DT>::V best;
  int64_t h, w;
};

template <int DT>
inline WindowMax<DT> windowMax(const PoolJob &j, const typename Dt<DT>::S *x, int64_t oh,
                               int64_t ow) {
  using D = Dt<DT>;
  WindowMax<DT> m{typename D::V(0), -1, 0};
  for (int64_t kh = 0; kh < j.KH; ++kh) {
    int64_t ih = oh * j.sh - j.pt + kh * j.dh;
    if (ih < 0 || ih >= j.H)
      continue;
    for (int64_t kw = 0; kw < j.KW; ++kw) {
      int64_t iw = ow * j.sw - j.pl + kw * j.dw;
      if (iw < 0 || iw >= j.W)
        continue;
      typename D::V v = D::get(x, ih * j.W + iw);
      if (m.h < 0 || v > m.best)
        m = WindowMax<DT>{v, ih, iw};
    }
  }
  return m;
}

// --- max_pool2d: ia = KH, KW, sh, sw, dh, dw, pad_top, pad_left ---------------------

/// The output columns [lo, hi) whose windows lie inside the input's columns
/// (every tap reads an element), and whether row oh's lie inside its rows:
/// the outputs the pooling kernels compute tap by tap over vectors.
struct Interior {
  int64_t lo, hi;
};
inline Interior interiorColumns(const PoolJob &j) {
  int64_t lo = tkMin(j.OW, ceilDiv(j.pl, j.sw));
  return {lo, tkMax(lo, tkMin(j.OW, ceilDiv(j.W + j.pl - (j.KW - 1) * j.dw, j.sw)))};
}
inline bool rowInside(const PoolJob &j, int64_t oh) {
  int64_t ih0 = oh * j.sh - j.pt;
  return ih0 >= 0 && ih0 + (j.KH - 1) * j.dh < j.H;
}

/// Where the taps of a window row read the input, the same for every
/// output row: tap kw covers the outputs [lo, hi) whose input column it
/// reads, and is the first tap of the window for [lo, firstHi): those left
/// of the previous tap's range (the taps inside a window form one block, so
/// an output inside tap kw's range and the previous one's has had its
/// first). Outputs outside [coveredLo, coveredHi) read no input column.
struct PoolColumns {
  static constexpr int64_t kMaxTaps = 16;
  int64_t lo[kMaxTaps], hi[kMaxTaps], firstHi[kMaxTaps];
  int64_t coveredLo, coveredHi;
};

inline PoolColumns poolColumns(const PoolJob &j) {
  PoolColumns c;
  c.coveredLo = j.OW, c.coveredHi = 0;
  int64_t prevLo = j.OW; // none yet
  for (int64_t kw = 0; kw < j.KW; ++kw) {
    const int64_t off = kw * j.dw - j.pl; // iw = ow*sw + off
    const int64_t lo = tkMin(j.OW, tkMax<int64_t>(0, ceilDiv(-off, j.sw)));
    const int64_t hi = tkMax(lo, tkMin(j.OW, ceilDiv(j.W - off, j.sw)));
    c.lo[kw] = lo, c.hi[kw] = hi, c.firstHi[kw] = tkMin(hi, tkMax(lo, prevLo));
    if (lo < hi) {
      prevLo = lo;
      c.coveredLo = tkMin(c.coveredLo, lo), c.coveredHi = tkMax(c.coveredHi, hi);
    }
  }
  return c;
}

/// Output row oh of a plane of floats, tap by tap over ranges of outputs
/// (vectorised), every output included: in the window's first row inside
/// the input, a tap sets the outputs it is the first tap of, and every
/// other tap keeps the greater, as windowMax does (a leading NaN sticks, a
/// later one never wins). Outputs no tap covers get 0.
template <typename S, bool UNIT>
inline void maxPoolRow(const PoolJob &j, const PoolColumns &c, const S *x, S *y, int64_t oh) {
  const int64_t sw = UNIT ? 1 : j.sw, ih0 = oh * j.sh - j.pt;
  int64_t khLo = 0, khHi = j.KH; // the taps' rows inside the input
  while (khLo < j.KH && ih0 + khLo * j.dh < 0)
    ++khLo;
  while (khHi > khLo && ih0 + (khHi - 1) * j.dh >= j.H)
    --khHi;
  if (khLo >= khHi || c.coveredLo >= c.coveredHi) {
    for (int64_t ow = 0; ow < j.OW; ++ow)
      y[ow] = S(0);
    return;
  }
  for (int64_t ow = 0; ow < c.coveredLo; ++ow)
    y[ow] = S(0);
  for (int64_t ow = c.coveredHi; ow < j.OW; ++ow)
    y[ow] = S(0);
  for (int64_t kh = khLo; kh < khHi; ++kh) {
    const S *row = x + (ih0 + kh * j.dh) * j.W;
    for (int64_t kw = 0; kw < j.KW; ++kw) {
      const S *tap = row + kw * j.dw - j.pl;
      const int64_t lo = c.lo[kw], hi = c.hi[kw], firstHi = kh == khLo ? c.firstHi[kw] : lo;
      for (int64_t ow = lo; ow < firstHi; ++ow)
        y[ow] = tap[ow * sw];
      for (int64_t ow = firstHi; ow < hi; ++ow) {
        S v = tap[ow * sw];
        y[ow] = v > y[ow] ? v : y[ow];
      }
    }
  }
}

template <int DT> void maxPoolBody(void *closure, int64_t begin, int64_t end) {
  using D = Dt<DT>;
  const PoolJob &j = *(const PoolJob *)closure;
  const typename D::S *xall = (const typename D::S *)j.a->in[0].data;
  typename D::S *yall = (typename D::S *)j.a->out[0].data;
  constexpr bool kFloat = DT == TK_F32 || DT == TK_F64;
  const bool byRanges = kFloat && j.KW <= PoolColumns::kMaxTaps;
  const PoolColumns cols = byRanges ? poolColumns(j) : PoolColumns{};
  for (int64_t plane = begin; plane < end; ++plane) {
    const typename D::S *x = xall + plane * j.H * j.W;
    typename D::S *y = yall + plane * j.OH * j.OW;
    for (int64_t oh = 0; oh < j.OH; ++oh) {
      if constexpr (kFloat) {
        if (byRanges && j.sw == 1) {
          maxPoolRow<typename D::S, true>(j, cols, x, y + oh * j.OW, oh);
          continue;
        }
        if (byRanges) {
          maxPoolRow<typename D::S, false>(j, cols, x, y + oh * j.OW, oh);
          continue;
        }
      }
      for (int64_t ow = 0; ow < j.OW; ++ow)
        D::put(y, oh * j.OW + ow, windowMax<DT>(j, x, oh, ow).best);
    }
  }
}

template <int DT> int32_t maxPoolImpl(const tk_args *a, const tessera_host_ctx_t *ctx) {
  PoolJob j = poolJob(a);
  tk_parallel_for(ctx, a->in[0].shape[0] * j.C, &maxPoolBody<DT>, &j);
  return TESSERA_HOST_OK;
}

// --- max_pool2d_indices: ia = KH, KW, sh, sw, dh, dw, pad_top, pad_left, column_major

template <int DT> void maxPoolIndicesBody(void *closure, int64_t begin, int64_t end) {
  using D = Dt<DT>;
  const PoolJob &j = *(const PoolJob *)closure;
  bool columnMajor = j.a->ia[8] != 0;
  const typename D::S *xall = (const typename D::S *)j.a->in[0].data;
  int64_t *yall = (int64_t *)j.a->out[0].data;
  for (int64_t plane = begin; plane < end; ++plane) {
    const typename D::S *x = xall + plane * j.H * j.W;
    int64_t *y = yall + plane * j.OH * j.OW;
    const int64_t base = plane * j.H * j.W;
    for (int64_t oh = 0; oh < j.OH; ++oh)
      for (int64_t ow = 0; ow < j.OW; ++ow) {
        WindowMax<DT> m = windowMax<DT>(j, x, oh, ow);
        y[oh * j.OW + ow] =
            m.h < 0 ? -1 : base + (columnMajor ? m.w * j.H + m.h : m.h * j.W + m.w);
      }
  }
}

template <int DT> int32_t maxPoolIndicesImpl(const tk_args *a, const tessera_host_ctx_t *ctx) {
  PoolJob j = poolJob(a);
  tk_parallel_for(ctx, a->in[0].shape[0] * j.C, &maxPoolIndicesBody<DT>, &j);
  return TESSERA_HOST_OK;
}

// --- avg_pool2d: ia = KH, KW, sh, sw, dh, dw, pad_top, pad_left, pad_bottom,
//     pad_right, count_include_pad -------------------------------------------------

/// Number of taps start + k*dilation (k < size) inside [lo, hi): the count of
/// the SDK's sdk::tapsInside (tessera/sdk/shape_math.hpp), which this
/// freestanding bitcode, including no C++ library header, cannot include.
inline int64_t tapsInside(int64_t start, int64_t size, int64_t dilation, int64_t lo, int64_t hi) {
  int64_t count = 0;
  for (int64_t k = 0; k < size; ++k) {
    int64_t p = start + k * dilation;
    count += p >= lo && p < hi;
  }
  return count;
}

template <int DT> void avgPoolBody(void *closure, int64_t begin, int64_t end) {
  using D = Dt<DT>;
  const PoolJob &j = *(const PoolJob *)closure;
  const int64_t *ia = j.a->ia;
  int64_t pb = ia[8], pr = ia[9];
  bool includePad = ia[10] != 0;
  const typename D::S *xall = (const typename D::S *)j.a->in[0].data;
  typename D::S *yall = (typename D::S *)j.a->out[0].data;
  const auto [owLo, owHi] = interiorColumns(j);
  for (int64_t plane = begin; plane < end; ++plane) {
    const typename D::S *x = xall + plane * j.H * j.W;
    typename D::S *y = yall + plane * j.OH * j.OW;
    for (int64_t oh = 0; oh < j.OH; ++oh) {
      int64_t hs = oh * j.sh - j.pt;
      int64_t countH = includePad ? tapsInside(hs, j.KH, j.dh, -j.pt, j.H + pb)
                                  : tapsInside(hs, j.KH, j.dh, 0, j.H);
      int64_t skipLo = j.OW, skipHi = j.OW; // columns done below
      if constexpr (DT == TK_F32 || DT == TK_F64) {
        if (rowInside(j, oh) && owLo < owHi) {
          // Interior outputs tap by tap over vectors of double sums: the
          // same sums in the same order as the window loop.
          constexpr int64_t kChunk = 256;
          double acc[kChunk];
          double count = (double)(j.KH * j.KW);
          for (int64_t o0 = owLo; o0 < owHi; o0 += kChunk) {
            int64_t n = tkMin(kChunk, owHi - o0);
            for (int64_t i = 0; i < n; ++i)
              acc[i] = 0;
            for (int64_t kh = 0; kh < j.KH; ++kh)
              for (int64_t kw = 0; kw < j.KW; ++kw) {
                const typename D::S *tap =
                    x + (hs + kh * j.dh) * j.W + (o0 * j.sw - j.pl + kw * j.dw);
                for (int64_t i = 0; i < n; ++i)
                  acc[i] += (double)tap[i * j.sw];
              }
            for (int64_t i = 0; i < n; ++i)
              y[oh * j.OW + o0 + i] = (typename D::S)(acc[i] / count);
          }
          skipLo = owLo, skipHi = owHi;
        }
      }
      for (int64_t ow = 0; ow < j.OW; ++ow) {
        if (ow == skipLo)
          ow = skipHi;
        if (ow >= j.OW)
          break;
        int64_t ws = ow * j.sw - j.pl;
        int64_t countW = includePad ? tapsInside(ws, j.KW, j.dw, -j.pl, j.W + pr)
                                    : tapsInside(ws, j.KW, j.dw, 0, j.W);
        double sum = 0;
        for (int64_t kh = 0; kh < j.KH; ++kh) {
          int64_t ih = hs + kh * j.dh;
          if (ih < 0 || ih >= j.H)
            continue;
          for (int64_t kw = 0; kw < j.KW; ++kw) {
            int64_t iw = ws + kw * j.dw;
            if (iw >= 0 && iw < j.W)
              sum += (double)D::get(x, ih * j.W + iw);
          }
        }
        D::putd(y, oh * j.OW + ow, sum / (double)(countH * countW));
      }
    }
  }
}

template <int DT> int32_t avgPoolImpl(const tk_args *a, const tessera_host_ctx_t *ctx) {
  PoolJob j = poolJob(a);
  tk_parallel_for(ctx, a->in[0].shape[0] * j.C, &avgPoolBody<DT>, &j);
  return TESSERA_HOST_OK;
}

// --- global_avg_pool2d, global_max_pool2d (no attributes) ---------------------------

template <int DT> void globalAvgBody(void *closure, int64_t begin, int64_t end) {
  using D = Dt<DT>;
  const tk_args *a = (const tk_args *)closure;
  int64_t plane = a->in[0].shape[2] * a->in[0].shape[3];
  const typename D::S *x = (const typename D::S *)a->in[0].data;
  typename D::S *y = (typename D::S *)a->out[0].data;
  for (int64_t p = begin; p < end; ++p) {
    double sum = 0;
    for (int64_t i = 0; i < plane; ++i)
      sum += (double)D::get(x, p * plane + i);
    D::putd(y, p, sum / (double)plane);
  }
}

template <int DT> void globalMaxBody(void *closure, int64_t begin, int64_t end) {
  using D = Dt<DT>;
  const tk_args *a = (const tk_args *)closure;
  int64_t plane = a->in[0].shape[2] * a->in[0].shape[3];
  const typename D::S *x = (const typename D::S *)a->in[0].data;
  typename D::S *y = (typename D::S *)a->out[0].data;
  for (int64_t p = begin; p < end; ++p) {
    typename D::V best = D::get(x, p * plane);
    for (int64_t i = 1; i < plane; ++i) {
      typename D::V v = D::get(x, p * plane + i);
      if (v > best)
        best = v;
    }
    D::put(y, p, best);
  }
}

template <int DT> int32_t globalAvgImpl(const tk_args *a, const tessera_host_ctx_t *ctx) {
  tk_parallel_for(ctx, a->in[0].shape[0] * a->in[0].shape[1], &globalAvgBody<DT>, (void *)a);
  return TESSERA_HOST_OK;
}

template <int DT> int32_t globalMaxImpl(const tk_args *a, const tessera_host_ctx_t *ctx) {
  tk_parallel_for(ctx, a->in[0].shape[0] * a->in[0].shape[1], &globalMaxBody<DT>, (void *)a);
  return TESSERA_HOST_OK;
}

} // namespace

TK_KERNEL(max_pool2d){
    TK_NN_DISPATCH_NUMERIC(a->in[0].dtype, maxPoolImpl, a, ctx)} TK_KERNEL(max_pool2d_indices){
    TK_NN_DISPATCH_NUMERIC(a->in[0].dtype, maxPoolIndicesImpl, a, ctx)} TK_KERNEL(avg_pool2d){
    TK_NN_DISPATCH_FLOAT(a->in[0].dtype, avgPoolImpl, a, ctx)} TK_KERNEL(global_avg_pool2d){
    TK_NN_DISPATCH_FLOAT(a->in[0].dtype, globalAvgImpl, a, ctx)} TK_KERNEL(global_max_pool2d) {
  TK_NN_DISPATCH_NUMERIC(a->in[0].dtype, globalMaxImpl, a, ctx)
}
