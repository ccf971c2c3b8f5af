//===- codegen/kernels/nn_recurrent.cpp - A whole LSTM sequence -----------===//
//
// tk_lstm: the core op lstm (ir/ops/recurrent.cpp) in f32, as a loop over
// the time steps rather than one host step per step of an unrolled graph.
// The weights are read in the panel layout of lstm_layout.h: the lowering
// lays constant W, R and B out once at compile time (KernelCall::packed);
// weights that arrive at run time are laid out into scratch here first.
//
// Per direction:
//  - the input projection of every step at once, XW [P][S*B][64] = X W^T,
//    as the GEMM micro-kernel (nn_common.h) on the W panels as they lie,
//    the panels split over the runtime's threads;
//  - per step, per panel of 16 hidden units (the threads share the
//    panels): its 64 gate columns of h R^T as one sequential stream of the
//    R panel with four 16-lane accumulators (a GEMV at batch 1, bound by
//    the bandwidth that streams R; batch rows go in pairs, half a panel at
//    a time, so that each load of R feeds two rows), started from XW and
//    the bias, then the gates, c and h of its units, written straight into
//    Y, Y_c. The next step reads h from Y. sigmoid and tanh are
//    fast_math.h's.
//
// ia: S, B, I, H, D, reverse, packedW, packedR, packedB, offW, offR, offB,
//     offXW, offEdge
// packed*: 1 when that input is already in the panel layout, else it is
// laid out into scratch at off* (-1 when unused). Scratch (f32): W, R, B of
// one direction, XW [P][S*B][64], the last (S*B) % 6 rows of X zero-padded
// to 6 ([6][I], for the micro-kernel's edge).
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/fast_math.h"
#include "codegen/kernels/lstm_layout.h"
#include "codegen/kernels/nn_common.h"

using namespace tk_nn;
using namespace tk_lstm_layout;

namespace {

constexpr int64_t U = kLstmUnits, C = kLstmColumns;
using V = Vec64<float>::type; // U lanes
static_assert(sizeof(V) == U * sizeof(float), "a panel's gate is one vector");
static_assert(kLstmEdgeRows == kMR, "the lowering sizes the edge rows as the micro-kernel's");

// By reference: a vector returned by value would change the ABI without
// AVX-512 (they are inlined anyway).
inline void load(V &v, const float *p) {
  __builtin_memcpy(&v, p, sizeof v);
}
inline void addTo(V &acc, const float *p, float scale) {
  V v;
  load(v, p);
  acc += v * scale;
}

inline float sigmoidf(float v) {
  return 1.0f / (1.0f + tk_fast_expf(-v));
}

/// XW [P][M][64] = X [M, K] x W^T, W as [P][4][K][16] panels.
struct Projection {
  const float *X, *Wp, *edge; // edge: X's last M % kMR rows, zero-padded to kMR
  float *XW;
  int64_t M, K;
};

void projectPanels(void *closure, int64_t begin, int64_t end) {
  const Projection &pr = *(const Projection *)closure;
  const int64_t M = pr.M, K = pr.K, full = M / kMR * kMR;
  for (int64_t q = begin * 4; q < end * 4; ++q) { // column panel q: panel q / 4, gate q % 4
    const float *w = pr.Wp + q * K * U;
    float *xw = pr.XW + (q / 4) * M * C + (q % 4) * U;
    for (int64_t i = 0; i < full; i += kMR)
      microKernel<float>(K, pr.X + i * K, K, 1, w, xw + i * C, C, kMR, U, false);
    if (full < M)
      microKernel<float>(K, pr.edge, K, 1, w, xw + full * C, C, M - full, U, false);
  }
}

/// One time step of one direction.
struct Step {
  const float *Rp; // [P][H][64]
  const float *Bp; // [P][64]
  const float *XW; // [P][M][64]; this step's rows from row0
  const float *h;  // [B, H], the previous hidden state
  float *hNext;    // [B, H], this step's (Y's slot)
  float *c;        // [B, H], updated in place
  int64_t row0, M, B, H;
};

/// g[64] = xw + bias + h R^T for one batch row and one panel: the GEMV,
/// one sequential stream of the panel into four 16-lane accumulators.
inline void panelRow(const float *panel, const float *bias, const float *xw, const float *h,
                     int64_t H, float *g) {
  V a0, a1, a2, a3;
  load(a0, bias), load(a1, bias + U), load(a2, bias + 2 * U), load(a3, bias + 3 * U);
  addTo(a0, xw, 1.0f), addTo(a1, xw + U, 1.0f), addTo(a2, xw + 2 * U, 1.0f);
  addTo(a3, xw + 3 * U, 1.0f);
  const float *r = panel;
  for (int64_t k = 0; k < H; ++k, r += C) {
    const float hk = h[k];
    addTo(a0, r, hk);
    addTo(a1, r + U, hk);
    addTo(a2, r + 2 * U, hk);
    addTo(a3, r + 3 * U, hk);
  }
  __builtin_memcpy(g, &a0, sizeof a0), __builtin_memcpy(g + U, &a1, sizeof a1);
  __builtin_memcpy(g + 2 * U, &a2, sizeof a2), __builtin_memcpy(g + 3 * U, &a3, sizeof a3);
}

/// panelRow for two batch rows at once, half a panel (two gates) at a time:
/// each load of R feeds both rows, and the eight accumulators' worth of
/// registers (on AVX2) still fit with the loads.
inline void panelPair(const float *panel, const float *bias, const float *xw0, const float *xw1,
                      const float *h0, const float *h1, int64_t H, float *g0, float *g1) {
  for (int64_t half = 0; half < C; half += 2 * U) {
    V a0, a1, b0, b1;
    load(a0, bias + half), load(a1, bias + half + U);
    b0 = a0, b1 = a1;
    addTo(a0, xw0 + half, 1.0f), addTo(a1, xw0 + half + U, 1.0f);
    addTo(b0, xw1 + half, 1.0f), addTo(b1, xw1 + half + U, 1.0f);
    const float *r = panel + half;
    for (int64_t k = 0; k < H; ++k, r += C) {
      V r0, r1;
      load(r0, r), load(r1, r + U);
      a0 += r0 * h0[k], a1 += r1 * h0[k];
      b0 += r0 * h1[k], b1 += r1 * h1[k];
    }
    __builtin_memcpy(g0 + half, &a0, sizeof a0), __builtin_memcpy(g0 + half + U, &a1, sizeof a1);
    __builtin_memcpy(g1 + half, &b0, sizeof b0), __builtin_memcpy(g1 + half + U, &b1, sizeof b1);
  }
}

/// The gates of `n` units from their pre-activations g[64] (i, o, f, c
/// blocks of 16): c updated in place, h written.
inline void gates(const float *g, float *c, float *h, int64_t n) {
  alignas(64) float cs[U], hs[U];
  for (int64_t u = 0; u < U; ++u)
    cs[u] = u < n ? c[u] : 0.0f;
  for (int64_t u = 0; u < U; ++u) {
    const float i = sigmoidf(g[u]), o = sigmoidf(g[U + u]), f = sigmoidf(g[2 * U + u]),
                cand = tk_fast_tanhf(g[3 * U + u]);
    cs[u] = f * cs[u] + i * cand;
    hs[u] = o * tk_fast_tanhf(cs[u]);
  }
  for (int64_t u = 0; u < n; ++u)
    c[u] = cs[u], h[u] = hs[u];
}

void stepPanels(void *closure, int64_t begin, int64_t end) {
  const Step &s = *(const Step *)closure;
  const int64_t H = s.H;
  for (int64_t p = begin; p < end; ++p) {
    const float *panel = s.Rp + p * H * C, *bias = s.Bp + p * C;
    const float *xw = s.XW + (p * s.M + s.row0) * C; // row b at xw + b * C
    const int64_t j0 = p * U, n = tkMin<int64_t>(U, H - j0);
    alignas(64) float g[2][C];
    int64_t b = 0;
    for (; b + 2 <= s.B; b += 2) {
      panelPair(panel, bias, xw + b * C, xw + (b + 1) * C, s.h + b * H, s.h + (b + 1) * H, H, g[0],
                g[1]);
      for (int64_t r = 0; r < 2; ++r)
        gates(g[r], s.c + (b + r) * H + j0, s.hNext + (b + r) * H + j0, n);
    }
    if (b < s.B) {
      panelRow(panel, bias, xw + b * C, s.h + b * H, H, g[0]);
      gates(g[0], s.c + b * H + j0, s.hNext + b * H + j0, n);
    }
  }
}

} // namespace

TK_KERNEL(lstm) {
  const int64_t *ia = a->ia;
  const int64_t S = ia[0], B = ia[1], I = ia[2], H = ia[3], D = ia[4];
  const bool reverse = ia[5] != 0, packedW = ia[6] != 0, packedR = ia[7] != 0, packedB = ia[8] != 0;
  float *Ws = scratchAt<float>(a, ia[9]), *Rs = scratchAt<float>(a, ia[10]),
        *Bs = scratchAt<float>(a, ia[11]), *XW = scratchAt<float>(a, ia[12]),
        *edge = scratchAt<float>(a, ia[13]);
  const float *X = (const float *)a->in[0].data, *W = (const float *)a->in[1].data,
              *R = (const float *)a->in[2].data, *bias = (const float *)a->in[3].data,
              *h0 = (const float *)a->in[4].data, *c0 = (const float *)a->in[5].data;
  float *Y = (float *)a->out[0].data, *Yh = (float *)a->out[1].data, *Yc = (float *)a->out[2].data;
  const int64_t P = lstmPanels(H), M = S * B, full = M / kMR * kMR;
  const int64_t wSize = lstmPackedSize(H, I), rSize = lstmPackedSize(H, H);
  if (edge) { // the micro-kernel reads kMR rows: the last ones padded with zeros
    TK_COLD_LOOP
    for (int64_t e = 0; e < kMR * I; ++e)
      edge[e] = full + e / I < M ? X[full * I + e] : 0.0f;
  }
  for (int64_t d = 0; d < D; ++d) {
    const float *Wp = W + d * wSize, *Rp = R + d * rSize, *Bp = bias + d * P * C;
    if (!packedW) {
      lstmPackWeights(W + d * 4 * H * I, H, I, true, Ws);
      Wp = Ws;
    }
    if (!packedR) {
      lstmPackWeights(R + d * 4 * H * H, H, H, false, Rs);
      Rp = Rs;
    }
    if (!packedB) {
      lstmPackBias(bias + d * 8 * H, H, Bs);
      Bp = Bs;
    }
    Projection pr{X, Wp, edge, XW, M, I};
    tk_parallel_for(ctx, P, &projectPanels, &pr);

    float *c = Yc + d * B * H;
    const float *h = h0 + d * B * H;
    for (int64_t k = 0; k < B * H; ++k)
      c[k] = c0[d * B * H + k];
    const bool backwards = reverse || d == 1;
    for (int64_t step = 0; step < S; ++step) {
      const int64_t t = backwards ? S - 1 - step : step;
      float *hNext = Y + (t * D + d) * B * H;
      Step s{Rp, Bp, XW, h, hNext, c, t * B, M, B, H};
      tk_parallel_for(ctx, P, &stepPanels, &s);
      h = hNext;
    }
    for (int64_t k = 0; k < B * H; ++k)
      Yh[d * B * H + k] = h[k];
  }
  return TESSERA_HOST_OK;
}
