//===- codegen/kernels/nn_linalg.cpp - Matrix products and det ------------===//
//
// tk_matmul: the batched matrix product behind dense, matmul and
// batch_matmul (their lowerings describe each as one batched GEMM, see
// codegen/host_ops_nn.cpp for the ia layout), on nn_gemm.h's GEMM.
// tk_det: determinants by LU with partial pivoting, in double, as the
// reference kernel computes them.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/nn_gemm.h"

#ifndef TK_BITCODE
// The host code generator defines it per CPU level (nn_gemm.h); compiled
// natively, the kernels run narrow tiles unless a test sets it.
extern "C" {
int tk_target_wide_gemm = 0;
}
#endif

using namespace tk_nn;

namespace {

// ia: M, K, N, batches, a_rs, a_ks, b_ks, b_ns, mode, offA, offB, offP, offC,
//     bcount, brank, bshape[brank], a_bstride[brank], b_bstride[brank].
// mode 0: tiled GEMM on B as given (b_ns == 1); 1: B's bcount matrices
// ([N, K] each) transposed into scratch (offP) first, then tiled; 2: dot
// products (b_ks == 1). off*: scratch byte offsets of the operands in the
// compute type CT, -1 where the tensor is used in place.
template <typename CT> int32_t matmulImpl(const tk_args *a, const tessera_host_ctx_t *ctx) {
  const int64_t *ia = a->ia;
  int64_t M = ia[0], K = ia[1], N = ia[2], mode = ia[8];
  Gemm<CT> g;
  g.M = M, g.N = N, g.K = K;
  g.A = inputAs<CT>(a, 0, ia[9]);
  g.a_rs = ia[4], g.a_ks = ia[5];
  g.B = inputAs<CT>(a, 1, ia[10]);
  g.b_ks = ia[6], g.b_ns = ia[7];
  CT *out = ia[12] >= 0 ? scratchAt<CT>(a, ia[12]) : (CT *)a->out[0].data;
  g.C = out;
  g.c_rs = N, g.c_bstride = M * N;
  g.batches = ia[3];
  g.brank = (int32_t)ia[14];
  g.bshape = ia + 15;
  g.a_bstride = ia + 15 + g.brank;
  g.b_bstride = ia + 15 + 2 * g.brank;
  if (mode == 1) {
    CT *packed = scratchAt<CT>(a, ia[11]);
    transposeMatrices<CT>(g.B, ia[13], N, K, packed);
    g.B = packed;
    g.b_ks = N, g.b_ns = 1;
  }
  gemmRun<CT>(g, mode == 2, ctx);
  if (ia[12] >= 0)
    storeAs<CT>(out, a->out[0].dtype, tk_numel(a->out[0]), a->out[0].data);
  return TESSERA_HOST_OK;
}

} // namespace

TK_KERNEL(matmul) {
  switch (a->in[0].dtype) {
  case TK_F64: return matmulImpl<double>(a, ctx);
  case TK_F32:
  case TK_F16:
  case TK_BF16: return matmulImpl<float>(a, ctx);
  case TK_I64:
  case TK_U64: return matmulImpl<uint64_t>(a, ctx);
  default: return matmulImpl<uint32_t>(a, ctx);
  }
}

namespace {

/// Determinant of the n x n row-major matrix `m` (destroyed), exactly as the
/// reference's luDeterminant.
double luDeterminant(double *m, int64_t n) {
  double det = 1.0;
  for (int64_t k = 0; k < n; ++k) {
    int64_t p = k;
    for (int64_t i = k + 1; i < n; ++i)
      if (fabs(m[i * n + k]) > fabs(m[p * n + k]))
        p = i;
    double pivot = m[p * n + k];
    if (isnan(pivot))
      return NAN;
    if (pivot == 0.0)
      return 0.0;
    if (p != k) {
      for (int64_t j = 0; j < n; ++j) {
        double t = m[k * n + j];
        m[k * n + j] = m[p * n + j];
        m[p * n + j] = t;
      }
      det = -det;
    }
    det *= pivot;
    for (int64_t i = k + 1; i < n; ++i) {
      double f = m[i * n + k] / pivot;
      if (f == 0.0)
        continue;
      for (int64_t j = k + 1; j < n; ++j)
        m[i * n + j] -= f * m[k * n + j];
    }
  }
  return det;
}

// ia: batches, n, scratch offset of one n x n double matrix.
template <int DT> int32_t detImpl(const tk_args *a, const tessera_host_ctx_t *) {
  using D = Dt<DT>;
  int64_t batches = a->ia[0], n = a->ia[1];
  const typename D::S *x = (const typename D::S *)a->in[0].data;
  typename D::S *y = (typename D::S *)a->out[0].data;
  double *m = scratchAt<double>(a, a->ia[2]);
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t i = 0; i < n * n; ++i)
      m[i] = (double)D::get(x, b * n * n + i);
    D::putd(y, b, luDeterminant(m, n)); // 0 x 0 matrices: det 1
  }
  return TESSERA_HOST_OK;
}

} // namespace

TK_KERNEL(det) {
  TK_NN_DISPATCH_FLOAT(a->in[0].dtype, detImpl, a, ctx)
}
