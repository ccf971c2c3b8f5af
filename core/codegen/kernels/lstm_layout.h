//===- codegen/kernels/lstm_layout.h - The lstm kernel's weight layout -*- C++ -*-===//
//
// The layout in which tk_lstm (nn_recurrent.cpp) reads W, R and B. Both the
// kernel (for weights that arrive at run time) and the host lowering
// (codegen/host_ops_recurrent.cpp, for constant weights, once, when the
// step's constant arguments are laid out at compile time) include it, so the
// layout has one definition. Plain C++ on raw pointers: the kernel rules of
// tk.h hold.
//
// Hidden units are grouped in panels of kLstmUnits = 16 (one 64-byte vector
// of f32); P = ceil(H / 16); units past H are zeros. Per direction (ONNX
// gate order i, o, f, c; g the gate, u the unit within its panel):
//   W [4H, I] -> Wp [P][4][I][16]  column panels of W^T, one per panel and
//                                  gate: the GEMM micro-kernel's B panels
//                                  (nn_common.h), so the input projection
//                                  of all steps reads them as they lie;
//   R [4H, H] -> Rp [P][H][4][16]  per panel, row k holds the 64 weights
//                                  that h[k] meets: the per-step GEMV reads
//                                  each panel as one sequential stream;
//   B [8H]    -> Bp [P][4][16]     Wb + Rb.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_CODEGEN_KERNELS_LSTM_LAYOUT_H
#define TESSERA_CODEGEN_KERNELS_LSTM_LAYOUT_H

#include <stdint.h>

namespace tk_lstm_layout {

constexpr int64_t kLstmUnits = 16;               // hidden units per panel
constexpr int64_t kLstmColumns = 4 * kLstmUnits; // a panel's gate columns
constexpr int64_t kLstmEdgeRows = 6; // rows of the GEMM micro-kernel (nn_common.h's kMR)

inline int64_t lstmPanels(int64_t H) {
  return (H + kLstmUnits - 1) / kLstmUnits;
}

/// Elements of one direction's packed W (K = I) or R (K = H).
inline int64_t lstmPackedSize(int64_t H, int64_t K) {
  return lstmPanels(H) * kLstmColumns * K;
}

/// One direction's M [4H, K] (W or R) in the panel layout: gate-major
/// ([P][4][K][16], W) or k-major ([P][K][4][16], R).
inline void lstmPackWeights(const float *M, int64_t H, int64_t K, bool gateMajor, float *out) {
  const int64_t P = lstmPanels(H), U = kLstmUnits;
  for (int64_t p = 0; p < P; ++p)
    for (int64_t g = 0; g < 4; ++g)
      for (int64_t u = 0; u < U; ++u) {
        const int64_t j = p * U + u;
        const float *row = j < H ? M + (g * H + j) * K : 0;
        float *o = gateMajor ? out + ((p * 4 + g) * K) * U + u : out + (p * K * 4 + g) * U + u;
        const int64_t stride = gateMajor ? U : 4 * U;
        for (int64_t k = 0; k < K; ++k)
          o[k * stride] = row ? row[k] : 0.0f;
      }
}

/// One direction's B [8H] as Wb + Rb in the panel layout [P][4][16].
inline void lstmPackBias(const float *B, int64_t H, float *out) {
  const int64_t P = lstmPanels(H), U = kLstmUnits;
  for (int64_t p = 0; p < P; ++p)
    for (int64_t g = 0; g < 4; ++g)
      for (int64_t u = 0; u < U; ++u) {
        const int64_t j = p * U + u;
        out[(p * 4 + g) * U + u] = j < H ? B[g * H + j] + B[4 * H + g * H + j] : 0.0f;
      }
}

} // namespace tk_lstm_layout

#endif // TESSERA_CODEGEN_KERNELS_LSTM_LAYOUT_H
