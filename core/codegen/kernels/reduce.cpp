//===- codegen/kernels/reduce.cpp - Reductions, arg-reductions, scans -----===//
//
// reduce_sum/mean/max/min/prod (one kernel, tk_reduce), argmax/argmin
// (tk_argmax), cumsum (tk_nn_cumsum) and topk (tk_nn_topk); semantics:
// core/ir/ops/reduce.cpp and transform.cpp. As the reference: floats
// accumulate in double, integer sums and products wrap, integer max/min
// compare values (u64 unsigned), the integer mean is the exact mean
// truncated toward zero, NaN propagates through max/min.
//
// cumsum and topk carry an "nn_" prefix in their kernel names so that they
// cannot clash with a kernel of another family.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/nn_common.h"
#include "ir/ops/sort_indices.h"

using namespace tk_nn;

namespace {

constexpr int kMaxReduceRank = 16;
enum ReduceKind { kSum = 0, kMean = 1, kMax = 2, kMin = 3, kProd = 4 };

// --- reduce: ia = kind, r, outN, count, par, offAcc, dims[r], reduced[r], ostride[r]
// The lowering collapses the input shape into r <= 16 dims alternating
// between kept and reduced ones; ostride is the element stride of a kept dim
// in the output (0 for reduced dims); par is a kept dim the threads split
// (-1: none); count is the number of elements folded into each output; the
// accumulators (outN slots of 16 bytes) live in scratch at offAcc.

struct ReduceJob {
  const tk_args *a;
  int64_t r, par;
  const int64_t *dims, *ostride;
  int64_t istride[kMaxReduceRank];
  void *acc;
};

inline double foldFloat(int kind, double acc, double v) {
  switch (kind) {
  case kSum:
  case kMean: return acc + v;
  case kProd: return acc * v;
  case kMax: return (isnan(acc) || isnan(v)) ? NAN : (acc < v ? v : acc);
  default: return (isnan(acc) || isnan(v)) ? NAN : (v < acc ? v : acc);
  }
}

/// Folds every input element of the job's range into its accumulator. For
/// integers Acc is uint64_t (sum, prod), int64_t (order keys for max, min)
/// or __int128 (mean).
template <int DT, typename Acc> void reduceBody(void *closure, int64_t begin, int64_t end) {
  using D = Dt<DT>;
  const ReduceJob &j = *(const ReduceJob *)closure;
  int kind = (int)j.a->ia[0];
  const typename D::S *x = (const typename D::S *)j.a->in[0].data;
  Acc *acc = (Acc *)j.acc;
  int64_t r = j.r, lo[kMaxReduceRank], hi[kMaxReduceRank], idx[kMaxReduceRank];
  for (int64_t d = 0; d < r; ++d) {
    lo[d] = d == j.par ? begin : 0;
    hi[d] = d == j.par ? end : j.dims[d];
    if (hi[d] <= lo[d])
      return;
    idx[d] = lo[d];
  }
  int64_t last = r - 1, os = j.ostride[last];
  for (;;) {
    int64_t ioff = 0, ooff = 0;
    for (int64_t d = 0; d < last; ++d)
      ioff += idx[d] * j.istride[d], ooff += idx[d] * j.ostride[d];
    for (int64_t t = lo[last]; t < hi[last]; ++t) {
      Acc &a = acc[ooff + t * os];
      if constexpr (D::fp) {
        a = foldFloat(kind, a, (double)D::get(x, ioff + t));
      } else if constexpr (sizeof(Acc) == 16) { // mean: exact sum
        a += (Acc)x[ioff + t];
      } else {
        typename D::S v = x[ioff + t];
        switch (kind) {
        case kSum: a = (Acc)((uint64_t)a + (uint64_t)v); break;
        case kProd: a = (Acc)((uint64_t)a * (uint64_t)v); break;
        case kMax: a = tkMax<Acc>(a, (Acc)orderKey<DT>(v)); break;
        default: a = tkMin<Acc>(a, (Acc)orderKey<DT>(v)); break;
        }
      }
    }
    int64_t d = last - 1;
    for (; d >= 0; --d) {
      if (++idx[d] < hi[d])
        break;
      idx[d] = lo[d];
    }
    if (d < 0)
      return;
  }
}

/// |num| / den for an exact 128-bit sum and den > 0, the quotient rounded
/// toward zero (it fits in 64 bits: it is a mean of 64-bit values). Long
/// division, so that no 128-bit division routine is needed at link time.
inline uint64_t meanMagnitude(unsigned __int128 num, uint64_t den) {
  uint64_t rem = (uint64_t)(num >> 64), lo = (uint64_t)num, q = 0;
  rem %= den; // the high half is below den when the quotient fits
  for (int bit = 63; bit >= 0; --bit) {
    bool carry = (rem >> 63) != 0;
    rem = (rem << 1) | ((lo >> bit) & 1u);
    q <<= 1;
    if (carry || rem >= den) {
      rem -= den;
      q |= 1u;
    }
  }
  return q;
}

template <int DT> int32_t reduceImpl(const tk_args *a, const tessera_host_ctx_t *ctx) {
  using D = Dt<DT>;
  using S = typename D::S;
  const int64_t *ia = a->ia;
  int kind = (int)ia[0];
  int64_t r = ia[1], outN = ia[2], count = ia[3];
  ReduceJob j{a, r, ia[4], ia + 6, ia + 6 + 2 * r, {}, scratchAt<void>(a, ia[5])};
  for (int64_t d = r - 1, s = 1; d >= 0; --d) {
    j.istride[d] = s;
    s *= j.dims[d];
  }
  int64_t parN = j.par >= 0 ? j.dims[j.par] : 1;
  S *y = (S *)a->out[0].data;
  if constexpr (D::fp) {
    double *acc = (double *)j.acc;
    double init = kind == kMax ? -INFINITY : kind == kMin ? INFINITY : kind == kProd ? 1.0 : 0.0;
    for (int64_t o = 0; o < outN; ++o)
      acc[o] = init;
    if (j.par >= 0)
      tk_parallel_for(ctx, parN, &reduceBody<DT, double>, &j);
    else
      reduceBody<DT, double>(&j, 0, 1);
    for (int64_t o = 0; o < outN; ++o)
      D::putd(y, o, kind == kMean ? acc[o] / (double)count : acc[o]);
  } else if (kind == kMean) {
    if (count == 0 && outN > 0)
      return TESSERA_HOST_ERR_INVALID; // mean of an empty set of integers
    __int128 *acc = (__int128 *)j.acc;
    for (int64_t o = 0; o < outN; ++o)
      acc[o] = 0;
    if (j.par >= 0)
      tk_parallel_for(ctx, parN, &reduceBody<DT, __int128>, &j);
    else
      reduceBody<DT, __int128>(&j, 0, 1);
    for (int64_t o = 0; o < outN; ++o) {
      bool neg = acc[o] < 0;
      uint64_t q = meanMagnitude(neg ? (unsigned __int128)(-acc[o]) : (unsigned __int128)acc[o],
                                 (uint64_t)count);
      y[o] = (S)(neg ? (uint64_t)0 - q : q);
    }
  } else if (kind == kMax || kind == kMin) {
    int64_t *acc = (int64_t *)j.acc;
    // The order keys of the dtype's smallest and largest values.
    int64_t lo = orderKey<DT>(minValue<S>()), hi = orderKey<DT>(maxValue<S>());
    if constexpr (DT == TK_BOOL)
      lo = 0, hi = 1;
    for (int64_t o = 0; o < outN; ++o)
      acc[o] = kind == kMax ? lo : hi;
    if (j.par >= 0)
      tk_parallel_for(ctx, parN, &reduceBody<DT, int64_t>, &j);
    else
      reduceBody<DT, int64_t>(&j, 0, 1);
    for (int64_t o = 0; o < outN; ++o)
      y[o] = (S)orderKey<DT>((S)acc[o]);
  } else {
    uint64_t *acc = (uint64_t *)j.acc;
    for (int64_t o = 0; o < outN; ++o)
      acc[o] = kind == kProd ? 1 : 0;
    if (j.par >= 0)
      tk_parallel_for(ctx, parN, &reduceBody<DT, uint64_t>, &j);
    else
      reduceBody<DT, uint64_t>(&j, 0, 1);
    for (int64_t o = 0; o < outN; ++o)
      y[o] = (S)acc[o];
  }
  return TESSERA_HOST_OK;
}

} // namespace

TK_KERNEL(reduce) {
  TK_NN_DISPATCH_ALL(a->in[0].dtype, reduceImpl, a, ctx)
}

// --- argmax / argmin: ia = outer, n, inner, is_max, select_last_index ---------------------
// Ties go to the first index (the last with select_last_index); NaN counts
// as larger and smaller than everything (the first NaN wins).

namespace {

constexpr int64_t kArgBlock = 256;

template <int DT> void argBody(void *closure, int64_t begin, int64_t end) {
  using D = Dt<DT>;
  using V = typename D::V;
  const tk_args *a = (const tk_args *)closure;
  int64_t n = a->ia[1], inner = a->ia[2];
  bool isMax = a->ia[3] != 0, last = a->ia[4] != 0;
  int64_t blocks = (inner + kArgBlock - 1) / kArgBlock;
  const typename D::S *x = (const typename D::S *)a->in[0].data;
  int64_t *y = (int64_t *)a->out[0].data;
  for (int64_t unit = begin; unit < end; ++unit) {
    int64_t o = unit / blocks, i0 = unit % blocks * kArgBlock, i1 = tkMin(inner, i0 + kArgBlock);
    const typename D::S *xo = x + o * n * inner;
    int64_t *best = y + o * inner;
    for (int64_t i = i0; i < i1; ++i)
      best[i] = 0;
    for (int64_t k = 1; k < n; ++k)
      for (int64_t i = i0; i < i1; ++i) {
        V v = D::get(xo, k * inner + i), w = D::get(xo, best[i] * inner + i);
        bool better = last ? (isMax ? v >= w : v <= w) : (isMax ? v > w : v < w);
        if constexpr (D::fp)
          if (isnan(w) || isnan(v)) // a NaN best stays unless `last` meets another NaN
            better = isnan(w) ? last && isnan(v) : true;
        if (better)
          best[i] = k;
      }
  }
}

template <int DT> int32_t argImpl(const tk_args *a, const tessera_host_ctx_t *ctx) {
  int64_t blocks = (a->ia[2] + kArgBlock - 1) / kArgBlock;
  tk_parallel_for(ctx, a->ia[0] * blocks, &argBody<DT>, (void *)a);
  return TESSERA_HOST_OK;
}

} // namespace

TK_KERNEL(argmax) {
  TK_NN_DISPATCH_NUMERIC(a->in[0].dtype, argImpl, a, ctx)
}

// --- cumsum: ia = outer, n, inner, exclusive, reverse -------------------------------------

namespace {

constexpr int64_t kScanBlock = 64;

template <int DT> void cumsumBody(void *closure, int64_t begin, int64_t end) {
  using D = Dt<DT>;
  using S = typename D::S;
  const tk_args *a = (const tk_args *)closure;
  int64_t n = a->ia[1], inner = a->ia[2];
  bool exclusive = a->ia[3] != 0, reverse = a->ia[4] != 0;
  int64_t blocks = (inner + kScanBlock - 1) / kScanBlock;
  const S *x = (const S *)a->in[0].data;
  S *y = (S *)a->out[0].data;
  for (int64_t unit = begin; unit < end; ++unit) {
    int64_t o = unit / blocks, i0 = unit % blocks * kScanBlock;
    int64_t w = tkMin(inner, i0 + kScanBlock) - i0;
    double accF[kScanBlock];
    uint64_t accI[kScanBlock];
    for (int64_t i = 0; i < w; ++i)
      accF[i] = 0, accI[i] = 0;
    for (int64_t step = 0; step < n; ++step) {
      int64_t k = reverse ? n - 1 - step : step;
      int64_t at = (o * n + k) * inner + i0;
      for (int64_t i = 0; i < w; ++i) {
        if constexpr (D::fp) {
          double before = accF[i];
          accF[i] += (double)D::get(x, at + i);
          D::putd(y, at + i, exclusive ? before : accF[i]);
        } else {
          uint64_t before = accI[i];
          accI[i] += (uint64_t)x[at + i];
          y[at + i] = (S)(exclusive ? before : accI[i]);
        }
      }
    }
  }
}

template <int DT> int32_t cumsumImpl(const tk_args *a, const tessera_host_ctx_t *ctx) {
  int64_t blocks = (a->ia[2] + kScanBlock - 1) / kScanBlock;
  tk_parallel_for(ctx, a->ia[0] * blocks, &cumsumBody<DT>, (void *)a);
  return TESSERA_HOST_OK;
}

} // namespace

TK_KERNEL(nn_cumsum) {
  TK_NN_DISPATCH_NUMERIC(a->in[0].dtype, cumsumImpl, a, ctx)
}

// --- topk: ia = outer, n, inner, k, largest, offKeys, offOrder, offTmp --------------------
// Outputs: values (the input dtype) and i64 indices. Each line is sorted
// stably by value (largest or smallest first; ties keep the lower index
// first) with a bottom-up merge sort in scratch: n 8-byte keys (double for
// floats, order keys for integers) and two arrays of n indices.

namespace {

template <int DT> int32_t topkImpl(const tk_args *a, const tessera_host_ctx_t *) {
  using D = Dt<DT>;
  using S = typename D::S;
  using K = typename Cond<D::fp, double, int64_t>::type;
  const int64_t *ia = a->ia;
  int64_t outer = ia[0], n = ia[1], inner = ia[2], k = ia[3];
  bool largest = ia[4] != 0;
  K *key = scratchAt<K>(a, ia[5]);
  int64_t *bufA = scratchAt<int64_t>(a, ia[6]), *bufB = scratchAt<int64_t>(a, ia[7]);
  K *selectKeys = scratchAt<K>(a, ia[8]);
  const S *x = (const S *)a->in[0].data;
  S *values = (S *)a->out[0].data;
  int64_t *indices = (int64_t *)a->out[1].data;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const S *line = x + o * n * inner + i;
      bool unordered = false; // a NaN: the full sort, as the reference kernel orders it
      for (int64_t j = 0; j < n; ++j) {
        if constexpr (D::fp) {
          key[j] = (double)D::get(line, j * inner);
          unordered |= key[j] != key[j];
        } else {
          key[j] = orderKey<DT>(line[j * inner]);
        }
      }
      auto before = [&](int64_t p, int64_t q) {
        return largest ? key[p] > key[q] : key[p] < key[q];
      };
      // A few of many (detectors' top 300 of thousands of boxes): select, then sort those.
      const int64_t *order =
          !unordered && 4 * k <= n
              ? tessera::sorting::firstIndices(n, k, key, selectKeys, bufA, bufB,
                                               [&](K p, K q) { return largest ? p > q : p < q; })
              : tessera::sorting::sortIndices(n, bufA, bufB, before);
      for (int64_t j = 0; j < k; ++j) {
        int64_t dst = (o * k + j) * inner + i;
        values[dst] = line[order[j] * inner];
        indices[dst] = order[j];
      }
    }
  return TESSERA_HOST_OK;
}

} // namespace

TK_KERNEL(nn_topk) {
  TK_NN_DISPATCH_NUMERIC(a->in[0].dtype, topkImpl, a, ctx)
}
