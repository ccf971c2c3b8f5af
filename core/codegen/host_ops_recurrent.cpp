//===- codegen/host_ops_recurrent.cpp - Lowering of lstm, gru, rnn ---------===//
//
// lstm, gru and rnn as one call of tk_lstm, tk_gru or tk_rnn (codegen/
// kernels/nn_recurrent.cpp). The kernels read W, R and B in the panel
// layout of kernels/recurrent_layout.h; the ones that are constants (an
// export's weights) are laid out here, once, as KernelCall::packed, so that
// a run only streams them; the others are laid out by the kernel into
// scratch on every run.
//
//===----------------------------------------------------------------------===//
#include "codegen/host_ops.h"
#include "codegen/kernels/recurrent_layout.h"

namespace tessera::codegen {

namespace {

using ir::DType;
using ir::Shape;
using namespace tk_recurrent_layout;

/// W [D, GH, K] or R in the panel layout, as [D, P, G, K, 16] (W,
/// gate-major) or [D, P, K, G, 16] (R).
ir::Tensor packWeights(const ir::Tensor &m, int64_t H, int64_t G, bool gateMajor) {
  const int64_t D = m.shape()[0], K = m.shape()[2], P = recurrentPanels(H);
  Shape shape = gateMajor ? Shape{D, P, G, K, kRecurrentUnits} : Shape{D, P, K, G, kRecurrentUnits};
  ir::Tensor out(DType::F32, shape);
  for (int64_t d = 0; d < D; ++d)
    recurrentPackWeights(m.data<float>() + d * G * H * K, H, K, G, gateMajor,
                         out.data<float>() + d * recurrentPackedSize(H, K, G));
  return out;
}

/// B [D, 2GH] in the panel layout, [D, P, BG, 16].
ir::Tensor packBias(const ir::Tensor &b, int64_t H, int64_t G, bool gru, bool linearBeforeReset) {
  const int64_t D = b.shape()[0], P = recurrentPanels(H), BG = recurrentBiasGates(G, gru);
  ir::Tensor out(DType::F32, {D, P, BG, kRecurrentUnits});
  for (int64_t d = 0; d < D; ++d)
    recurrentPackBias(b.data<float>() + d * 2 * G * H, H, G, gru, linearBeforeReset,
                      out.data<float>() + d * P * BG * kRecurrentUnits);
  return out;
}

/// ia = S, B, I, H, D, reverse, packedW, packedR, packedB, offW, offR, offB,
/// offXW, offEdge, then gru: linear_before_reset, offZR; rnn: activation
/// (see kernels/nn_recurrent.cpp).
Expected<KernelCall> lowerRecurrent(const std::string &op, const ir::Attrs &attrs,
                                    const HostOpTypes &t) {
  const Shape &x = t.inputs[0].shape(), &r = t.inputs[2].shape();
  const int64_t S = x[0], B = x[1], I = x[2], D = r[0], H = r[2], P = recurrentPanels(H);
  const bool gru = op == "gru";
  const int64_t G = op == "lstm" ? 4 : gru ? 3 : 1, BG = recurrentBiasGates(G, gru);
  const int64_t lbr = gru ? attrs.getInt("linear_before_reset") : 0;
  KernelCall call{op, {}, {}, 0, {}};
  const ir::Tensor *w = constantInput(t, 1), *rc = constantInput(t, 2), *b = constantInput(t, 3);
  if (w)
    call.packed.push_back({1, packWeights(*w, H, G, true)});
  if (rc)
    call.packed.push_back({2, packWeights(*rc, H, G, false)});
  if (b)
    call.packed.push_back({3, packBias(*b, H, G, gru, lbr != 0)});
  Scratch s;
  auto floats = [&](int64_t n) { return s.take(uint64_t(n) * 4); };
  // XW and gru's [2][B][H] last: with sizes that vary at run time (anySize)
  // only they do (XW's size is a multiple of the alignment), and the edge
  // rows are always there.
  const int64_t offW = w ? -1 : floats(recurrentPackedSize(H, I, G)),
                offR = rc ? -1 : floats(recurrentPackedSize(H, H, G)),
                offB = b ? -1 : floats(P * BG * kRecurrentUnits),
                offEdge =
                    t.anySize || (S * B) % kRecurrentEdgeRows ? floats(kRecurrentEdgeRows * I) : -1,
                offXW = floats(P * S * B * G * kRecurrentUnits),
                offZR = gru && !lbr ? floats(2 * B * H) : -1;
  const int64_t reverse = attrs.getString("direction") == "reverse";
  call.ia = {S, B, I, H, D, reverse, w != nullptr, rc != nullptr, b != nullptr};
  call.ia.insert(call.ia.end(), {offW, offR, offB, offXW, offEdge});
  if (gru)
    call.ia.insert(call.ia.end(), {lbr, offZR});
  if (op == "rnn") {
    const std::string &f = attrs.getString("activation");
    call.ia.push_back(f == "tanh" ? 0 : f == "relu" ? 1 : 2);
  }
  call.scratchBytes = s.bytes;
  return call;
}

} // namespace

void addRecurrentLowerings(LoweringTable &table) {
  for (const char *op : {"lstm", "gru", "rnn"})
    table.add(op, [op](const ir::Attrs &attrs, const HostOpTypes &t) {
      return lowerRecurrent(op, attrs, t);
    });
}

} // namespace tessera::codegen
