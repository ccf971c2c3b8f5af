//===- codegen/kernels/nn_norm.cpp - Bias, normalisation, softmax ---------===//
//
// bias_add, batch_norm, layer_norm, softmax and log_softmax (semantics:
// core/ir/ops/nn.cpp). Each views its data as [outer, n, inner] around the
// op's axis (the lowering passes those sizes). Normalisations and softmax
// compute in double, as the reference kernels do, and round once.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/fast_math.h"
#include "codegen/kernels/nn_common.h"

using namespace tk_nn;

namespace {

// --- bias_add: ia = outer, C, inner ---------------------------------------------------
// Floats add in V (float for f32/f16/bf16: the double sum of two floats
// rounds to the float sum); integers wrap.

template <int DT> void biasAddBody(void *closure, int64_t begin, int64_t end) {
  using D = Dt<DT>;
  const tk_args *a = (const tk_args *)closure;
  int64_t C = a->ia[1], inner = a->ia[2];
  const typename D::S *x = (const typename D::S *)a->in[0].data;
  const typename D::S *b = (const typename D::S *)a->in[1].data;
  typename D::S *y = (typename D::S *)a->out[0].data;
  for (int64_t row = begin; row < end; ++row) { // row = (o, c)
    int64_t base = row * inner;
    if constexpr (D::fp) {
      typename D::V bv = D::get(b, row % C);
      for (int64_t i = 0; i < inner; ++i)
        D::put(y, base + i, D::get(x, base + i) + bv);
    } else {
      uint64_t bv = (uint64_t)b[row % C];
      for (int64_t i = 0; i < inner; ++i)
        y[base + i] = (typename D::S)((uint64_t)x[base + i] + bv);
    }
  }
}

template <int DT> int32_t biasAddImpl(const tk_args *a, const tessera_host_ctx_t *ctx) {
  tk_parallel_for(ctx, a->ia[0] * a->ia[1], &biasAddBody<DT>, (void *)a);
  return TESSERA_HOST_OK;
}

// --- batch_norm: ia = outer, C, inner; fa = epsilon -------------------------------------
//   y = (x - mean[c]) / sqrt(var[c] + epsilon) * gamma[c] + beta[c]

template <int DT> void batchNormBody(void *closure, int64_t begin, int64_t end) {
  using D = Dt<DT>;
  using S = typename D::S;
  const tk_args *a = (const tk_args *)closure;
  int64_t C = a->ia[1], inner = a->ia[2];
  double eps = a->fa[0];
  const S *x = (const S *)a->in[0].data;
  const S *gamma = (const S *)a->in[1].data, *beta = (const S *)a->in[2].data;
  const S *mean = (const S *)a->in[3].data, *var = (const S *)a->in[4].data;
  S *y = (S *)a->out[0].data;
  for (int64_t row = begin; row < end; ++row) {
    int64_t c = row % C, base = row * inner;
    double m = D::get(mean, c), sd = sqrt((double)D::get(var, c) + eps);
    double g = D::get(gamma, c), b = D::get(beta, c);
    for (int64_t i = 0; i < inner; ++i)
      D::putd(y, base + i, ((double)D::get(x, base + i) - m) / sd * g + b);
  }
}

template <int DT> int32_t batchNormImpl(const tk_args *a, const tessera_host_ctx_t *ctx) {
  tk_parallel_for(ctx, a->ia[0] * a->ia[1], &batchNormBody<DT>, (void *)a);
  return TESSERA_HOST_OK;
}

// --- layer_norm: ia = outer, inner, R, has_beta, offGamma, offBeta, normShape[R],
//     gammaStrides[R], betaStrides[R]; fa = epsilon ----------------------------------
// gamma and beta are expanded to the normalised shape (their element strides
// over normShape, 0 where they broadcast) into two double arrays in scratch.

/// sum_j term(j) for j < n in 8 double lanes (lane l sums j = l, l+8, ...
/// in order), then the lanes and the tail in order: it vectorises, where one
/// accumulator would wait on each add; the lanes change the result by
/// rounding in double, far below a float output's.
template <typename Term> inline double laneSum(int64_t n, Term term) {
  constexpr int L = 8;
  double lanes[L] = {};
  int64_t full = n / L * L;
  for (int64_t j = 0; j < full; j += L)
    for (int l = 0; l < L; ++l)
      lanes[l] += term(j + l);
  double sum = 0;
  for (int l = 0; l < L; ++l)
    sum += lanes[l];
  for (int64_t j = full; j < n; ++j)
    sum += term(j);
  return sum;
}

template <int DT> void layerNormBody(void *closure, int64_t begin, int64_t end) {
  using D = Dt<DT>;
  using S = typename D::S;
  const tk_args *a = (const tk_args *)closure;
  int64_t inner = a->ia[1];
  double eps = a->fa[0];
  const double *gamma = scratchAt<double>(a, a->ia[4]), *beta = scratchAt<double>(a, a->ia[5]);
  bool hasBeta = a->ia[3] != 0;
  const S *x = (const S *)a->in[0].data;
  S *y = (S *)a->out[0].data;
  for (int64_t o = begin; o < end; ++o) {
    const S *xr = x + o * inner;
    double mean = laneSum(inner, [&](int64_t j) { return (double)D::get(xr, j); }) / (double)inner;
    double var = laneSum(inner, [&](int64_t j) {
                   double d = (double)D::get(xr, j) - mean;
                   return d * d;
                 }) /
                 (double)inner;
    double inv = 1.0 / sqrt(var + eps);
    for (int64_t j = 0; j < inner; ++j)
      D::putd(y, o * inner + j,
              ((double)D::get(xr, j) - mean) * inv * gamma[j] + (hasBeta ? beta[j] : 0.0));
  }
}

template <int DT> int32_t layerNormImpl(const tk_args *a, const tessera_host_ctx_t *ctx) {
  using D = Dt<DT>;
  const int64_t *ia = a->ia;
  int64_t inner = ia[1], R = ia[2];
  const int64_t *shape = ia + 6, *gs = ia + 6 + R, *bs = ia + 6 + 2 * R;
  double *gamma = scratchAt<double>(a, ia[4]), *beta = scratchAt<double>(a, ia[5]);
  bool hasBeta = ia[3] != 0;
  for (int64_t j = 0; j < inner; ++j) {
    int64_t rest = j, go = 0, bo = 0;
    for (int64_t d = R - 1; d >= 0; --d) {
      int64_t i = rest % shape[d];
      rest /= shape[d];
      go += i * gs[d], bo += i * bs[d];
    }
    gamma[j] = D::get((const typename D::S *)a->in[1].data, go);
    if (hasBeta)
      beta[j] = D::get((const typename D::S *)a->in[2].data, bo);
  }
  tk_parallel_for(ctx, ia[0], &layerNormBody<DT>, (void *)a);
  return TESSERA_HOST_OK;
}

// --- softmax, log_softmax: ia = outer, n, inner, log ------------------------------------
//   softmax(x)_i = exp(x_i - max) / sum_j exp(x_j - max)
//   log_softmax(x)_i = x_i - max - log(sum_j exp(x_j - max))
// The maximum skips NaN as the reference's std::max does (NaN then spreads
// through the sum).

/// f32 along a contiguous axis (inner == 1, attention's softmax): in float,
/// with fast_math.h's exp (vectorised), each exp computed once and kept in
/// y, the sum in 16 float lanes. Within the f32 tolerances of the
/// reference's double computation.
inline void softmaxRowsF32(const tk_args *a, int64_t begin, int64_t end) {
  constexpr int L = 16;
  int64_t n = a->ia[1];
  bool isLog = a->ia[3] != 0;
  for (int64_t line = begin; line < end; ++line) {
    const float *x = (const float *)a->in[0].data + line * n;
    float *y = (float *)a->out[0].data + line * n;
    float mx = -INFINITY;
    for (int64_t k = 0; k < n; ++k)
      mx = mx < x[k] ? x[k] : mx;
    float part[L] = {};
    int64_t k = 0;
    for (; k + L <= n; k += L)
      for (int l = 0; l < L; ++l) {
        float e = tk_fast_expf(x[k + l] - mx);
        part[l] += e;
        if (!isLog)
          y[k + l] = e;
      }
    float sum = 0;
    for (int l = 0; l < L; ++l)
      sum += part[l];
    for (; k < n; ++k) {
      float e = tk_fast_expf(x[k] - mx);
      sum += e;
      if (!isLog)
        y[k] = e;
    }
    if (isLog) {
      float shift = mx + logf(sum);
      for (int64_t j = 0; j < n; ++j)
        y[j] = x[j] - shift;
    } else {
      float scale = 1.0f / sum;
      for (int64_t j = 0; j < n; ++j)
        y[j] *= scale;
    }
  }
}

template <int DT> void softmaxBody(void *closure, int64_t begin, int64_t end) {
  using D = Dt<DT>;
  using S = typename D::S;
  const tk_args *a = (const tk_args *)closure;
  int64_t n = a->ia[1], inner = a->ia[2];
  bool isLog = a->ia[3] != 0;
  if constexpr (DT == TK_F32) {
    if (inner == 1)
      return softmaxRowsF32(a, begin, end);
  }
  const S *x = (const S *)a->in[0].data;
  S *y = (S *)a->out[0].data;
  for (int64_t line = begin; line < end; ++line) { // line = (o, i)
    int64_t o = line / inner, i = line % inner, base = o * n * inner + i;
    double mx = -INFINITY;
    for (int64_t k = 0; k < n; ++k) {
      double v = D::get(x, base + k * inner);
      mx = mx < v ? v : mx;
    }
    double sum = 0;
    for (int64_t k = 0; k < n; ++k)
      sum += exp((double)D::get(x, base + k * inner) - mx);
    double logSum = isLog ? log(sum) : 0.0;
    for (int64_t k = 0; k < n; ++k) {
      double shifted = (double)D::get(x, base + k * inner) - mx;
      D::putd(y, base + k * inner, isLog ? shifted - logSum : exp(shifted) / sum);
    }
  }
}

template <int DT> int32_t softmaxImpl(const tk_args *a, const tessera_host_ctx_t *ctx) {
  tk_parallel_for(ctx, a->ia[0] * a->ia[2], &softmaxBody<DT>, (void *)a);
  return TESSERA_HOST_OK;
}

} // namespace

TK_KERNEL(bias_add){
    TK_NN_DISPATCH_NUMERIC(a->in[0].dtype, biasAddImpl, a, ctx)} TK_KERNEL(batch_norm){
    TK_NN_DISPATCH_FLOAT(a->in[0].dtype, batchNormImpl, a, ctx)} TK_KERNEL(layer_norm){
    TK_NN_DISPATCH_FLOAT(a->in[0].dtype, layerNormImpl, a, ctx)} TK_KERNEL(softmax) {
  TK_NN_DISPATCH_FLOAT(a->in[0].dtype, softmaxImpl, a, ctx)
}
