//===- codegen/kernels/nn_recurrent.cpp - Whole recurrent sequences -------===//
//
// tk_lstm, tk_gru, tk_rnn: the core ops lstm, gru and rnn (ir/ops/
// recurrent.cpp) in f32, as a loop over the time steps rather than one host
// step per step of an unrolled graph. The weights are read in the panel
// layout of recurrent_layout.h (G gates per unit, C = 16 G columns per
// panel): the lowering lays constant W, R and B out once at compile time
// (KernelCall::packed); weights that arrive at run time are laid out into
// scratch here first.
//
// Per direction:
//  - the input projection of every step at once, XW [P][S*B][C] = X W^T,
//    as the GEMM micro-kernel (nn_gemm.h) on the W panels as they lie,
//    the panels split over the runtime's threads;
//  - per step, per panel of 16 hidden units (the threads share the
//    panels): its gate columns of h R^T as one sequential stream of the R
//    panel into 16-lane accumulators started from XW and the bias (a GEMV
//    at batch 1, bound by the bandwidth that streams R; batch rows go in
//    pairs, two gates at a time, so that each load of R feeds two rows),
//    then the cell's gates and h of its units, written straight into Y
//    (and Y_c). The next step reads h from Y. sigmoid and tanh are
//    fast_math.h's.
//  - gru without linear_before_reset needs every unit's r * h before any
//    unit's h~: its step is two passes over the panels, z and r * h into
//    scratch, then h~ and h.
//
// ia: S, B, I, H, D, reverse, packedW, packedR, packedB, offW, offR, offB,
//     offXW, offEdge, then gru: linear_before_reset, offZR; rnn: the
//     activation (0 tanh, 1 relu, 2 sigmoid).
// packed*: 1 when that input is already in the panel layout, else it is
// laid out into scratch at off* (-1 when unused). Scratch (f32): W, R, B of
// one direction, the last (S*B) % 6 rows of X zero-padded to 6 ([6][I], for
// the micro-kernel's edge), XW [P][S*B][C], gru's z and r * h [2][B][H].
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/fast_math.h"
#include "codegen/kernels/nn_gemm.h"
#include "codegen/kernels/recurrent_layout.h"

using namespace tk_nn;
using namespace tk_recurrent_layout;

namespace {

constexpr int64_t U = kRecurrentUnits;
using V = Vec64<float>::type; // U lanes
static_assert(sizeof(V) == U * sizeof(float), "a panel's gate is one vector");
static_assert(kRecurrentEdgeRows == kMR, "the lowering sizes the edge rows as the micro-kernel's");

enum Cell { kLstm, kGru, kRnn };

// By reference: a vector returned by value would change the ABI without
// AVX-512 (they are inlined anyway).
inline void load(V &v, const float *p) {
  __builtin_memcpy(&v, p, sizeof v);
}
inline void store(float *p, const V &v) {
  __builtin_memcpy(p, &v, sizeof v);
}

inline float sigmoidf(float v) {
  return 1.0f / (1.0f + tk_fast_expf(-v));
}

/// XW [P][M][C] = X [M, K] x W^T, W as [P][G][K][16] panels.
struct Projection {
  const float *X, *Wp, *edge; // edge: X's last M % kMR rows, zero-padded to kMR
  float *XW;
  int64_t M, K, G;
};

void projectPanels(void *closure, int64_t begin, int64_t end) {
  const Projection &pr = *(const Projection *)closure;
  const int64_t M = pr.M, K = pr.K, G = pr.G, C = G * U, full = M / kMR * kMR;
  for (int64_t q = begin * G; q < end * G; ++q) { // column panel q: panel q / G, gate q % G
    const float *w = pr.Wp + q * K * U;
    float *xw = pr.XW + (q / G) * M * C + (q % G) * U;
    for (int64_t i = 0; i < full; i += kMR)
      microKernel<float>(K, pr.X + i * K, K, 1, w, xw + i * C, C, kMR, U, false);
    if (full < M)
      microKernel<float>(K, pr.edge, K, 1, w, xw + full * C, C, M - full, U, false);
  }
}

/// acc[N*16] += h R for N gates of one panel, one batch row: `r` points at
/// the first gate's columns of row 0, rows `stride` floats apart. The rows
/// of R go round S sets of accumulators, summed at the end: N chains of
/// dependent FMAs alone left the FMA units idle most of the time (a tanh
/// RNN, N = 1, waited out each FMA's latency in turn).
template <int N, int S>
inline void gemvRow(const float *r, int64_t stride, const float *h, int64_t H, float *acc) {
  V a[S][N];
  for (int n = 0; n < N; ++n) {
    load(a[0][n], acc + n * U);
    for (int s = 1; s < S; ++s)
      a[s][n] = V{};
  }
  int64_t k = 0;
  for (; k + S <= H; k += S, r += S * stride)
    for (int s = 0; s < S; ++s) {
      const float hk = h[k + s];
      for (int n = 0; n < N; ++n) {
        V v;
        load(v, r + s * stride + n * U);
        a[s][n] += v * hk;
      }
    }
  for (; k < H; ++k, r += stride) {
    const float hk = h[k];
    for (int n = 0; n < N; ++n) {
      V v;
      load(v, r + n * U);
      a[0][n] += v * hk;
    }
  }
  for (int n = 0; n < N; ++n) {
    for (int s = 1; s < S; ++s)
      a[0][n] += a[s][n];
    store(acc + n * U, a[0][n]);
  }
}

/// gemvRow for two batch rows at once: each load of R feeds both.
template <int N>
inline void gemvPair(const float *r, int64_t stride, const float *h0, const float *h1, int64_t H,
                     float *acc0, float *acc1) {
  V a[N], b[N];
  for (int n = 0; n < N; ++n)
    load(a[n], acc0 + n * U), load(b[n], acc1 + n * U);
  for (int64_t k = 0; k < H; ++k, r += stride) {
    const float x0 = h0[k], x1 = h1[k];
    for (int n = 0; n < N; ++n) {
      V v;
      load(v, r + n * U);
      a[n] += v * x0;
      b[n] += v * x1;
    }
  }
  for (int n = 0; n < N; ++n)
    store(acc0 + n * U, a[n]), store(acc1 + n * U, b[n]);
}

/// acc += h R over gates [g, g + n) of a panel with C columns per row, for
/// one row (h1 null: all n gates in one pass) or two (two gates a pass,
/// the registers that eight accumulators take on AVX2).
inline void gemv(const float *panel, int64_t C, int64_t g, int64_t n, const float *h0,
                 const float *h1, int64_t H, float *acc0, float *acc1) {
  if (!h1) {
    const float *r = panel + g * U;
    float *acc = acc0 + g * U;
    // About 8 accumulators where a vector is one register (AVX-512), 4
    // (8 registers) where it is two (tk_target_wide_gemm, nn_gemm.h).
    const bool wide = tk_target_wide_gemm != 0;
    switch (n) {
    case 4: return wide ? gemvRow<4, 2>(r, C, h0, H, acc) : gemvRow<4, 1>(r, C, h0, H, acc);
    case 3: return wide ? gemvRow<3, 2>(r, C, h0, H, acc) : gemvRow<3, 1>(r, C, h0, H, acc);
    case 2: return wide ? gemvRow<2, 4>(r, C, h0, H, acc) : gemvRow<2, 2>(r, C, h0, H, acc);
    default: return wide ? gemvRow<1, 8>(r, C, h0, H, acc) : gemvRow<1, 4>(r, C, h0, H, acc);
    }
  }
  for (int64_t e = g + n; g < e; g += 2) {
    if (g + 2 <= e)
      gemvPair<2>(panel + g * U, C, h0, h1, H, acc0 + g * U, acc1 + g * U);
    else
      gemvPair<1>(panel + g * U, C, h0, h1, H, acc0 + g * U, acc1 + g * U);
  }
}

/// One time step of one direction.
struct Step {
  const float *Rp; // [P][H][C]
  const float *Bp; // [P][BG][16]
  const float *XW; // [P][M][C]; this step's rows from row0
  const float *h;  // [B, H], the previous hidden state
  float *hNext;    // [B, H], this step's (Y's slot)
  float *c;        // lstm: [B, H], updated in place
  float *zr;       // gru without linear_before_reset: z and r * h, [2][B][H]
  int64_t row0, M, B, H, G;
  Cell cell;
  int64_t mode; // gru: linear_before_reset; rnn: the activation
};

/// lstm: the gates of `n` units from their pre-activations g[64] (i, o, f,
/// c blocks of 16): c updated in place, h written.
inline void lstmGates(const float *g, float *c, float *h, int64_t n) {
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

/// rnn: h = f(g) for `n` units.
inline void rnnGates(const float *g, int64_t activation, float *h, int64_t n) {
  for (int64_t u = 0; u < n; ++u)
    h[u] = activation == 0   ? tk_fast_tanhf(g[u])
           : activation == 1 ? (g[u] > 0.0f ? g[u] : 0.0f)
                             : sigmoidf(g[u]);
}

/// gru with linear_before_reset: g = (z, r, h R_h + Rb_h) pre-activations,
/// xh = x W_h + Wb_h; h = h~ + z (h - h~), h~ = tanh(xh + r * g_h).
inline void gruGates(const float *g, const float *xh, const float *bh, const float *hPrev, float *h,
                     int64_t n) {
  for (int64_t u = 0; u < n; ++u) {
    const float z = sigmoidf(g[u]), r = sigmoidf(g[U + u]);
    const float cand = tk_fast_tanhf(xh[u] + bh[u] + r * g[2 * U + u]);
    h[u] = cand + z * (hPrev[u] - cand);
  }
}

/// The accumulators of a row start from its XW columns and the bias; gru's
/// hidden gate from Rb_h alone when the reset gate scales it.
inline void startRow(const Step &s, const float *bias, const float *xw, float *acc) {
  for (int64_t g = 0; g < s.G; ++g) {
    const bool rbOnly = s.cell == kGru && g == 2 && s.mode;
    for (int64_t u = 0; u < U; ++u)
      acc[g * U + u] = rbOnly ? bias[3 * U + u] : bias[g * U + u] + xw[g * U + u];
  }
}

void stepPanels(void *closure, int64_t begin, int64_t end) {
  const Step &s = *(const Step *)closure;
  const int64_t H = s.H, C = s.G * U, BG = recurrentBiasGates(s.G, s.cell == kGru);
  // gru without linear_before_reset: this pass stops after z and r.
  const int64_t gatesNow = s.cell == kGru && !s.mode ? 2 : s.G;
  for (int64_t p = begin; p < end; ++p) {
    const float *panel = s.Rp + p * H * C, *bias = s.Bp + p * BG * U;
    const float *xw = s.XW + (p * s.M + s.row0) * C; // row b at xw + b * C
    const int64_t j0 = p * U, n = tkMin<int64_t>(U, H - j0);
    alignas(64) float acc[2][4 * U];
    for (int64_t b = 0; b < s.B; b += 2) {
      const int64_t rows = tkMin<int64_t>(2, s.B - b);
      for (int64_t k = 0; k < rows; ++k)
        startRow(s, bias, xw + (b + k) * C, acc[k]);
      gemv(panel, C, 0, gatesNow, s.h + b * H, rows == 2 ? s.h + (b + 1) * H : nullptr, H, acc[0],
           acc[1]);
      for (int64_t k = 0; k < rows; ++k) {
        const int64_t at = (b + k) * H + j0;
        if (s.cell == kLstm)
          lstmGates(acc[k], s.c + at, s.hNext + at, n);
        else if (s.cell == kRnn)
          rnnGates(acc[k], s.mode, s.hNext + at, n);
        else if (s.mode)
          gruGates(acc[k], xw + (b + k) * C + 2 * U, bias + 2 * U, s.h + at, s.hNext + at, n);
        else
          for (int64_t u = 0; u < n; ++u) { // z and r * h for the second pass
            s.zr[at + u] = sigmoidf(acc[k][u]);
            s.zr[s.B * H + at + u] = sigmoidf(acc[k][U + u]) * s.h[at + u];
          }
      }
    }
  }
}

/// gru without linear_before_reset, second pass: h~ = tanh(x W_h + Wb_h +
/// Rb_h + (r * h) R_h), h = h~ + z (h - h~).
void gruHiddenPanels(void *closure, int64_t begin, int64_t end) {
  const Step &s = *(const Step *)closure;
  const int64_t H = s.H, C = 3 * U;
  const float *z = s.zr, *rh = s.zr + s.B * H;
  for (int64_t p = begin; p < end; ++p) {
    const float *panel = s.Rp + p * H * C, *bias = s.Bp + p * 4 * U;
    const float *xw = s.XW + (p * s.M + s.row0) * C;
    const int64_t j0 = p * U, n = tkMin<int64_t>(U, H - j0);
    alignas(64) float acc[2][3 * U];
    for (int64_t b = 0; b < s.B; b += 2) {
      const int64_t rows = tkMin<int64_t>(2, s.B - b);
      for (int64_t k = 0; k < rows; ++k)
        for (int64_t u = 0; u < U; ++u)
          acc[k][2 * U + u] = bias[2 * U + u] + xw[(b + k) * C + 2 * U + u];
      gemv(panel, C, 2, 1, rh + b * H, rows == 2 ? rh + (b + 1) * H : nullptr, H, acc[0], acc[1]);
      for (int64_t k = 0; k < rows; ++k) {
        const int64_t at = (b + k) * H + j0;
        for (int64_t u = 0; u < n; ++u) {
          const float cand = tk_fast_tanhf(acc[k][2 * U + u]);
          s.hNext[at + u] = cand + z[at + u] * (s.h[at + u] - cand);
        }
      }
    }
  }
}

int32_t runSequence(const tk_args *a, const tessera_host_ctx_t *ctx, Cell cell) {
  const int64_t *ia = a->ia;
  const int64_t S = ia[0], B = ia[1], I = ia[2], H = ia[3], D = ia[4];
  const bool reverse = ia[5] != 0, packedW = ia[6] != 0, packedR = ia[7] != 0, packedB = ia[8] != 0;
  float *Ws = scratchAt<float>(a, ia[9]), *Rs = scratchAt<float>(a, ia[10]),
        *Bs = scratchAt<float>(a, ia[11]), *XW = scratchAt<float>(a, ia[12]),
        *edge = scratchAt<float>(a, ia[13]);
  const int64_t mode = cell == kLstm ? 0 : ia[14];
  float *zr = cell == kGru ? scratchAt<float>(a, ia[15]) : 0;
  const float *X = (const float *)a->in[0].data, *W = (const float *)a->in[1].data,
              *R = (const float *)a->in[2].data, *bias = (const float *)a->in[3].data,
              *h0 = (const float *)a->in[4].data;
  float *Y = (float *)a->out[0].data, *Yh = (float *)a->out[1].data;
  float *Yc = cell == kLstm ? (float *)a->out[2].data : 0;
  const int64_t G = cell == kLstm ? 4 : cell == kGru ? 3 : 1;
  const int64_t BG = recurrentBiasGates(G, cell == kGru);
  const int64_t P = recurrentPanels(H), M = S * B, full = M / kMR * kMR;
  const int64_t wSize = recurrentPackedSize(H, I, G), rSize = recurrentPackedSize(H, H, G);
  if (edge) { // the micro-kernel reads kMR rows: the last ones padded with zeros
    TK_COLD_LOOP
    for (int64_t e = 0; e < kMR * I; ++e)
      edge[e] = full + e / I < M ? X[full * I + e] : 0.0f;
  }
  for (int64_t d = 0; d < D; ++d) {
    const float *Wp = W + d * wSize, *Rp = R + d * rSize, *Bp = bias + d * P * BG * U;
    if (!packedW) {
      recurrentPackWeights(W + d * G * H * I, H, I, G, true, Ws);
      Wp = Ws;
    }
    if (!packedR) {
      recurrentPackWeights(R + d * G * H * H, H, H, G, false, Rs);
      Rp = Rs;
    }
    if (!packedB) {
      recurrentPackBias(bias + d * 2 * G * H, H, G, cell == kGru, mode != 0, Bs);
      Bp = Bs;
    }
    Projection pr{X, Wp, edge, XW, M, I, G};
    tk_parallel_for(ctx, P, &projectPanels, &pr);

    float *c = 0;
    if (cell == kLstm) {
      const float *c0 = (const float *)a->in[5].data;
      c = Yc + d * B * H;
      for (int64_t k = 0; k < B * H; ++k)
        c[k] = c0[d * B * H + k];
    }
    const float *h = h0 + d * B * H;
    const bool backwards = reverse || d == 1;
    for (int64_t step = 0; step < S; ++step) {
      const int64_t t = backwards ? S - 1 - step : step;
      float *hNext = Y + (t * D + d) * B * H;
      Step s{Rp, Bp, XW, h, hNext, c, zr, t * B, M, B, H, G, cell, mode};
      tk_parallel_for(ctx, P, &stepPanels, &s);
      if (cell == kGru && !mode)
        tk_parallel_for(ctx, P, &gruHiddenPanels, &s);
      h = hNext;
    }
    for (int64_t k = 0; k < B * H; ++k)
      Yh[d * B * H + k] = h[k];
  }
  return TESSERA_HOST_OK;
}

} // namespace

TK_KERNEL(lstm) {
  return runSequence(a, ctx, kLstm);
}

TK_KERNEL(gru) {
  return runSequence(a, ctx, kGru);
}

TK_KERNEL(rnn) {
  return runSequence(a, ctx, kRnn);
}
