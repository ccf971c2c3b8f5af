//===- codegen/kernels/recurrent_layout.h - Recurrent weight layout -*- C++ -*-===//
//
// The layout in which the recurrent kernels (nn_recurrent.cpp: tk_lstm,
// tk_gru, tk_rnn) read W, R and B. Both the kernels (for weights that arrive
// at run time) and the host lowering (codegen/host_ops_recurrent.cpp, for
// constant weights, once, when the step's constant arguments are laid out
// at compile time) include it, so the layout has one definition. Plain C++
// on raw pointers: the kernel rules of tk.h hold.
//
// G is the op's gates per hidden unit (lstm 4: i, o, f, c; gru 3: z, r, h;
// rnn 1). Hidden units are grouped in panels of kRecurrentUnits = 16 (one
// 64-byte vector of f32); P = ceil(H / 16); units past H are zeros. Per
// direction (g the gate, u the unit within its panel):
//   W [GH, I] -> Wp [P][G][I][16]  column panels of W^T, one per panel and
//                                  gate: the GEMM micro-kernel's B panels
//                                  (nn_gemm.h), so the input projection
//                                  of all steps reads them as they lie;
//   R [GH, H] -> Rp [P][H][G][16]  per panel, row k holds the G*16 weights
//                                  that h[k] meets: the per-step GEMV reads
//                                  each panel as one sequential stream;
//   B [2GH]   -> Bp [P][BG][16]    lstm, rnn (BG = G): Wb + Rb per gate;
//                                  gru (BG = 4): z and r as Wb + Rb, then
//                                  Wb_h and Rb_h apart when the reset gate
//                                  scales h R_h^T + Rb_h (linear_before_reset),
//                                  else Wb_h + Rb_h and zeros.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_CODEGEN_KERNELS_RECURRENT_LAYOUT_H
#define TESSERA_CODEGEN_KERNELS_RECURRENT_LAYOUT_H

#include <stdint.h>

namespace tk_recurrent_layout {

constexpr int64_t kRecurrentUnits = 16;   // hidden units per panel
constexpr int64_t kRecurrentEdgeRows = 6; // rows of the GEMM micro-kernel (nn_gemm.h's kMR)

inline int64_t recurrentPanels(int64_t H) {
  return (H + kRecurrentUnits - 1) / kRecurrentUnits;
}

/// Gates of a panel's bias: gru keeps Wb_h and Rb_h apart.
inline int64_t recurrentBiasGates(int64_t G, bool gru) {
  return gru ? 4 : G;
}

/// Elements of one direction's packed W (K = I) or R (K = H).
inline int64_t recurrentPackedSize(int64_t H, int64_t K, int64_t G) {
  return recurrentPanels(H) * G * kRecurrentUnits * K;
}

/// One direction's M [GH, K] (W or R) in the panel layout: gate-major
/// ([P][G][K][16], W) or k-major ([P][K][G][16], R).
inline void recurrentPackWeights(const float *M, int64_t H, int64_t K, int64_t G, bool gateMajor,
                                 float *out) {
  const int64_t P = recurrentPanels(H), U = kRecurrentUnits;
  for (int64_t p = 0; p < P; ++p)
    for (int64_t g = 0; g < G; ++g)
      for (int64_t u = 0; u < U; ++u) {
        const int64_t j = p * U + u;
        const float *row = j < H ? M + (g * H + j) * K : 0;
        float *o = gateMajor ? out + ((p * G + g) * K) * U + u : out + (p * K * G + g) * U + u;
        const int64_t stride = gateMajor ? U : G * U;
        for (int64_t k = 0; k < K; ++k)
          o[k * stride] = row ? row[k] : 0.0f;
      }
}

/// One direction's B [2GH] in the panel layout [P][BG][16] (see the banner).
inline void recurrentPackBias(const float *B, int64_t H, int64_t G, bool gru,
                              bool linearBeforeReset, float *out) {
  const int64_t P = recurrentPanels(H), U = kRecurrentUnits, BG = recurrentBiasGates(G, gru);
  for (int64_t p = 0; p < P; ++p)
    for (int64_t g = 0; g < BG; ++g)
      for (int64_t u = 0; u < U; ++u) {
        const int64_t j = p * U + u;
        float v = 0.0f;
        if (j < H) {
          const float *Wb = B, *Rb = B + G * H;
          if (!gru || g < 2)
            v = Wb[g * H + j] + Rb[g * H + j];
          else if (g == 2)
            v = linearBeforeReset ? Wb[2 * H + j] : Wb[2 * H + j] + Rb[2 * H + j];
          else
            v = linearBeforeReset ? Rb[2 * H + j] : 0.0f;
        }
        out[(p * BG + g) * U + u] = v;
      }
}

} // namespace tk_recurrent_layout

#endif // TESSERA_CODEGEN_KERNELS_RECURRENT_LAYOUT_H
