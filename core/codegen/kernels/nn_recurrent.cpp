//===- codegen/kernels/nn_recurrent.cpp - A whole LSTM sequence -----------===//
//
// tk_lstm: the core op lstm (ir/ops/recurrent.cpp) in f32, as a loop over
// the time steps rather than one host step per step of an unrolled graph.
// Per direction: the input projection of every step at once (one GEMM,
// [S*B, I] x [I, 4H]), then per step the recurrent product h R^T (a GEMM
// of B rows; dot products on R as it lies when B < 4, the GEMV case) and
// the gates in one pass over [B, 4H]. sigmoid and tanh are fast_math.h's.
//
// ia: S, B, I, H, D, reverse, offWt, offXW, offRt, offG, offH, offC
// scratch (f32): Wt [I, 4H], XW [S*B, 4H], Rt [H, 4H] (unused, -1, when
// B < 4), G [B, 4H], h and c [B, H].
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/fast_math.h"
#include "codegen/kernels/nn_common.h"

using namespace tk_nn;

namespace {

/// C [M, N] = A [M, K] x Bt^T where Bt is [N, K] as it lies (row-major):
/// transposed into `scratch` first unless M < 4 (then dot products).
void productWithTransposed(const float *A, int64_t M, int64_t K, const float *Bt, int64_t N,
                           float *scratch, float *C, const tessera_host_ctx_t *ctx) {
  Gemm<float> g;
  g.M = M, g.N = N, g.K = K;
  g.A = A, g.a_rs = K, g.a_ks = 1;
  g.C = C, g.c_rs = N, g.c_bstride = M * N;
  g.batches = 1, g.brank = 0, g.bshape = g.a_bstride = g.b_bstride = 0;
  const bool dot = M < 4 || !scratch;
  if (dot) {
    g.B = Bt, g.b_ks = 1, g.b_ns = K;
  } else {
    transposeMatrices<float>(Bt, 1, N, K, scratch);
    g.B = scratch, g.b_ks = N, g.b_ns = 1;
  }
  gemmRun<float>(g, dot, ctx);
}

inline float sigmoidf(float v) { return 1.0f / (1.0f + tk_fast_expf(-v)); }

} // namespace

TK_KERNEL(lstm) {
  const int64_t *ia = a->ia;
  const int64_t S = ia[0], B = ia[1], I = ia[2], H = ia[3], D = ia[4];
  const bool reverse = ia[5] != 0;
  float *Wt = scratchAt<float>(a, ia[6]), *XW = scratchAt<float>(a, ia[7]),
        *Rt = scratchAt<float>(a, ia[8]), *G = scratchAt<float>(a, ia[9]),
        *h = scratchAt<float>(a, ia[10]), *c = scratchAt<float>(a, ia[11]);
  const float *X = (const float *)a->in[0].data, *W = (const float *)a->in[1].data,
              *R = (const float *)a->in[2].data, *bias = (const float *)a->in[3].data,
              *h0 = (const float *)a->in[4].data, *c0 = (const float *)a->in[5].data;
  float *Y = (float *)a->out[0].data, *Yh = (float *)a->out[1].data,
        *Yc = (float *)a->out[2].data;
  const int64_t G4 = 4 * H;
  for (int64_t d = 0; d < D; ++d) {
    productWithTransposed(X, S * B, I, W + d * G4 * I, G4, Wt, XW, ctx);
    const float *wb = bias + d * 2 * G4, *rb = wb + G4;
    for (int64_t k = 0; k < B * H; ++k) {
      h[k] = h0[d * B * H + k];
      c[k] = c0[d * B * H + k];
    }
    const bool backwards = reverse || d == 1;
    // Rt is transposed once per direction, not once per step.
    const float *Rd = R + d * G4 * H;
    const bool tiled = B >= 4;
    if (tiled)
      transposeMatrices<float>(Rd, 1, G4, H, Rt);
    for (int64_t step = 0; step < S; ++step) {
      const int64_t t = backwards ? S - 1 - step : step;
      if (tiled) {
        Gemm<float> g;
        g.M = B, g.N = G4, g.K = H;
        g.A = h, g.a_rs = H, g.a_ks = 1;
        g.B = Rt, g.b_ks = G4, g.b_ns = 1;
        g.C = G, g.c_rs = G4, g.c_bstride = B * G4;
        g.batches = 1, g.brank = 0, g.bshape = g.a_bstride = g.b_bstride = 0;
        gemmRun<float>(g, false, ctx);
      } else {
        productWithTransposed(h, B, H, Rd, G4, 0, G, ctx);
      }
      const float *xw = XW + t * B * G4;
      float *y = Y + (t * D + d) * B * H;
      for (int64_t b = 0; b < B; ++b) {
        const float *gb = G + b * G4, *xb = xw + b * G4;
        for (int64_t j = 0; j < H; ++j) {
          const float gi = gb[j] + xb[j] + wb[j] + rb[j];
          const float go = gb[H + j] + xb[H + j] + wb[H + j] + rb[H + j];
          const float gf = gb[2 * H + j] + xb[2 * H + j] + wb[2 * H + j] + rb[2 * H + j];
          const float gc = gb[3 * H + j] + xb[3 * H + j] + wb[3 * H + j] + rb[3 * H + j];
          float &cell = c[b * H + j];
          cell = sigmoidf(gf) * cell + sigmoidf(gi) * tk_fast_tanhf(gc);
          const float hv = sigmoidf(go) * tk_fast_tanhf(cell);
          h[b * H + j] = hv;
          y[b * H + j] = hv;
        }
      }
    }
    for (int64_t k = 0; k < B * H; ++k) {
      Yh[d * B * H + k] = h[k];
      Yc[d * B * H + k] = c[k];
    }
  }
  return TESSERA_HOST_OK;
}
