//===- codegen/host_ops_recurrent.cpp - Lowering of lstm -------------------===//
//
// lstm as one call of tk_lstm (codegen/kernels/nn_recurrent.cpp). The
// kernel reads W, R and B in the panel layout of kernels/lstm_layout.h; the
// ones that are constants (an export's weights) are laid out here, once, as
// KernelCall::packed, so that a run only streams them; the others are laid
// out by the kernel into scratch on every run.
//
//===----------------------------------------------------------------------===//
#include "codegen/host_ops.h"
#include "codegen/kernels/lstm_layout.h"

namespace tessera::codegen {

namespace {

using ir::DType;
using ir::Shape;
using namespace tk_lstm_layout;

/// W [D, 4H, K] or R in the panel layout, as [D, P, 4, K, 16] (W, gate-major)
/// or [D, P, K, 4, 16] (R).
ir::Tensor packWeights(const ir::Tensor &m, int64_t H, bool gateMajor) {
  const int64_t D = m.shape()[0], K = m.shape()[2], P = lstmPanels(H);
  Shape shape = gateMajor ? Shape{D, P, 4, K, kLstmUnits} : Shape{D, P, K, 4, kLstmUnits};
  ir::Tensor out(DType::F32, shape);
  for (int64_t d = 0; d < D; ++d)
    lstmPackWeights(m.data<float>() + d * 4 * H * K, H, K, gateMajor,
                    out.data<float>() + d * lstmPackedSize(H, K));
  return out;
}

/// B [D, 8H] as Wb + Rb in the panel layout, [D, P, 4, 16].
ir::Tensor packBias(const ir::Tensor &b, int64_t H) {
  const int64_t D = b.shape()[0], P = lstmPanels(H);
  ir::Tensor out(DType::F32, {D, P, 4, kLstmUnits});
  for (int64_t d = 0; d < D; ++d)
    lstmPackBias(b.data<float>() + d * 8 * H, H, out.data<float>() + d * P * kLstmColumns);
  return out;
}


// lstm (f32): ia = S, B, I, H, D, reverse, packedW, packedR, packedB, offW,
// offR, offB, offXW, offEdge (see kernels/nn_recurrent.cpp).
Expected<KernelCall> lowerLstm(const ir::Attrs &attrs, const HostOpTypes &t) {
  const Shape &x = t.inputs[0].shape(), &r = t.inputs[2].shape();
  const int64_t S = x[0], B = x[1], I = x[2], D = r[0], H = r[2], P = lstmPanels(H);
  KernelCall call{"lstm", {}, {}, 0, {}};
  const ir::Tensor *w = constantInput(t, 1), *rc = constantInput(t, 2), *b = constantInput(t, 3);
  if (w)
    call.packed.push_back({1, packWeights(*w, H, true)});
  if (rc)
    call.packed.push_back({2, packWeights(*rc, H, false)});
  if (b)
    call.packed.push_back({3, packBias(*b, H)});
  Scratch s;
  auto floats = [&](int64_t n) { return s.take(uint64_t(n) * 4); };
  // XW last: with sizes that vary at run time (anySize) only the total
  // does, and the edge rows are always there.
  const int64_t offW = w ? -1 : floats(lstmPackedSize(H, I)),
                offR = rc ? -1 : floats(lstmPackedSize(H, H)),
                offB = b ? -1 : floats(P * kLstmColumns),
                offEdge = t.anySize || (S * B) % kLstmEdgeRows ? floats(kLstmEdgeRows * I) : -1,
                offXW = floats(P * S * B * kLstmColumns);
  const int64_t reverse = attrs.getString("direction") == "reverse";
  call.ia = {S, B, I, H, D, reverse, w != nullptr, rc != nullptr, b != nullptr};
  call.ia.insert(call.ia.end(), {offW, offR, offB, offXW, offEdge});
  call.scratchBytes = s.bytes;
  return call;
}

} // namespace

void addRecurrentLowerings(LoweringTable &table) {
  table.add("lstm", lowerLstm);
}

} // namespace tessera::codegen
