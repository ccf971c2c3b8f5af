//===- codegen/kernels/nn_recurrent.cpp - A whole LSTM sequence -----------===//
//
// tk_lstm: the core op lstm (ir/ops/recurrent.cpp) in f32, as a loop over
// the time steps rather than one host step per step of an unrolled graph.
// Per direction: the input projection of every step at once (one GEMM,
// [S*B, I] x [I, 4H], plus both biases), then per step the recurrent
// products h R^T and the gates together, in chunks of hidden units that the
// runtime's threads share: a chunk reads the four gates' rows of R for its
// units (kChunk * 4 rows, which stay in cache across the batch rows) as dot
// products with h, eight rows at a time, then updates c and h for its units.
// At batch 1 this is a GEMV per step that streams R (4 MB for H = 512) at
// the cache's bandwidth: the bound of every LSTM at batch 1.
//
// ia: S, B, I, H, D, reverse, offWt, offXW, offH, offC
// scratch (f32): Wt [I, 4H], XW [S*B, 4H], h [2, B, H] (this step's and the
// next's), c [B, H].
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/fast_math.h"
#include "codegen/kernels/nn_common.h"

using namespace tk_nn;

namespace {

constexpr int64_t kChunk = 16; // hidden units per chunk of a step
constexpr int kRows = 8;       // rows of R per dot-product pass
constexpr int kLanes = 16;     // partial sums per row (one AVX-512 vector)

inline float sigmoidf(float v) { return 1.0f / (1.0f + tk_fast_expf(-v)); }

/// out[r] = dot(h, R[rows[r]]) for `n` rows (at most kRows), each K long.
template <int N> inline void dots(const float *const *rows, const float *h, int64_t K, float *out) {
  float part[N][kLanes] = {};
  int64_t k = 0;
  for (; k + kLanes <= K; k += kLanes)
    for (int l = 0; l < kLanes; ++l) {
      const float hv = h[k + l];
      for (int r = 0; r < N; ++r)
        part[r][l] += hv * rows[r][k + l];
    }
  for (int r = 0; r < N; ++r) {
    float s = 0;
    for (int l = 0; l < kLanes; ++l)
      s += part[r][l];
    for (int64_t kk = k; kk < K; ++kk)
      s += h[kk] * rows[r][kk];
    out[r] = s;
  }
}

struct Step {
  const float *R;  // [4H, H], this direction's
  const float *xw; // [B, 4H], this step's input projection plus biases
  const float *h;  // [B, H], the previous state
  float *hNext;    // [B, H]
  float *c;        // [B, H], updated in place
  float *y;        // [B, H], this step's output
  int64_t B, H;
};

/// Chunks [begin, end) of hidden units of one step, every batch row.
void stepChunks(void *closure, int64_t begin, int64_t end) {
  const Step &s = *(const Step *)closure;
  const int64_t H = s.H;
  for (int64_t chunk = begin; chunk < end; ++chunk) {
    const int64_t j0 = chunk * kChunk, n = tkMin(H, j0 + kChunk) - j0;
    for (int64_t b = 0; b < s.B; ++b) {
      const float *h = s.h + b * H, *xw = s.xw + b * 4 * H;
      float g[4 * kChunk];
      // Row t of the chunk: gate t / n, unit j0 + t % n.
      const float *rows[kRows];
      int pending = 0, first = 0;
      for (int t = 0; t < 4 * int(n); ++t) {
        rows[pending++] = s.R + ((t / n) * H + j0 + t % n) * H;
        if (pending == kRows) {
          dots<kRows>(rows, h, H, g + first);
          first += pending, pending = 0;
        }
      }
      for (int r = 0; r < pending; ++r)
        dots<1>(rows + r, h, H, g + first + r);
      for (int64_t t = 0; t < n; ++t) {
        const int64_t j = j0 + t;
        const float i = sigmoidf(g[t] + xw[j]), o = sigmoidf(g[n + t] + xw[H + j]),
                    f = sigmoidf(g[2 * n + t] + xw[2 * H + j]),
                    cand = tk_fast_tanhf(g[3 * n + t] + xw[3 * H + j]);
        float &cell = s.c[b * H + j];
        cell = f * cell + i * cand;
        const float hv = o * tk_fast_tanhf(cell);
        s.hNext[b * H + j] = hv;
        s.y[b * H + j] = hv;
      }
    }
  }
}

/// XW [M, N] = X [M, K] x W^T with W [N, K] as it lies (transposed into Wt).
void inputProjection(const float *X, int64_t M, int64_t K, const float *W, int64_t N, float *Wt,
                     float *XW, const tessera_host_ctx_t *ctx) {
  Gemm<float> g;
  g.M = M, g.N = N, g.K = K;
  g.A = X, g.a_rs = K, g.a_ks = 1;
  g.C = XW, g.c_rs = N, g.c_bstride = M * N;
  g.batches = 1, g.brank = 0, g.bshape = g.a_bstride = g.b_bstride = 0;
  const bool dot = M < 4;
  if (dot) {
    g.B = W, g.b_ks = 1, g.b_ns = K;
  } else {
    transposeMatrices<float>(W, 1, N, K, Wt);
    g.B = Wt, g.b_ks = N, g.b_ns = 1;
  }
  gemmRun<float>(g, dot, ctx);
}

} // namespace

TK_KERNEL(lstm) {
  const int64_t *ia = a->ia;
  const int64_t S = ia[0], B = ia[1], I = ia[2], H = ia[3], D = ia[4];
  const bool reverse = ia[5] != 0;
  float *Wt = scratchAt<float>(a, ia[6]), *XW = scratchAt<float>(a, ia[7]),
        *hs = scratchAt<float>(a, ia[8]), *c = scratchAt<float>(a, ia[9]);
  const float *X = (const float *)a->in[0].data, *W = (const float *)a->in[1].data,
              *R = (const float *)a->in[2].data, *bias = (const float *)a->in[3].data,
              *h0 = (const float *)a->in[4].data, *c0 = (const float *)a->in[5].data;
  float *Y = (float *)a->out[0].data, *Yh = (float *)a->out[1].data,
        *Yc = (float *)a->out[2].data;
  const int64_t G4 = 4 * H, chunks = (H + kChunk - 1) / kChunk;
  for (int64_t d = 0; d < D; ++d) {
    inputProjection(X, S * B, I, W + d * G4 * I, G4, Wt, XW, ctx);
    const float *wb = bias + d * 2 * G4, *rb = wb + G4;
    for (int64_t row = 0; row < S * B; ++row)
      for (int64_t j = 0; j < G4; ++j)
        XW[row * G4 + j] += wb[j] + rb[j];
    float *h = hs, *hNext = hs + B * H;
    for (int64_t k = 0; k < B * H; ++k) {
      h[k] = h0[d * B * H + k];
      c[k] = c0[d * B * H + k];
    }
    const bool backwards = reverse || d == 1;
    for (int64_t step = 0; step < S; ++step) {
      const int64_t t = backwards ? S - 1 - step : step;
      Step s{R + d * G4 * H, XW + t * B * G4, h, hNext, c, Y + (t * D + d) * B * H, B, H};
      tk_parallel_for(ctx, chunks, &stepChunks, &s);
      float *swap = h;
      h = hNext, hNext = swap;
    }
    for (int64_t k = 0; k < B * H; ++k) {
      Yh[d * B * H + k] = h[k];
      Yc[d * B * H + k] = c[k];
    }
  }
  return TESSERA_HOST_OK;
}
