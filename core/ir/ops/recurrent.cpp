//===- ir/ops/recurrent.cpp - Recurrent ops -------------------------------===//
//
//   lstm   ONNX LSTM (layout 0) with its default activations (sigmoid for the
//          gates, tanh for the cell and the output), no peepholes, no clip,
//          no coupled input/forget gate, every sequence at full length.
//
// One op for the whole sequence, so that a backend runs it as a loop or as
// its own recurrent kernel (oneDNN's LSTM primitive) instead of one op per
// time step. The ONNX importer emits it for the LSTMs it can express and
// unrolls the others into core ops (converters/recurrent.cpp).
//
// Per direction d and time step t (ONNX's gate order i, o, f, c; W [4H, I],
// R [4H, H], Wb and Rb the halves of B [8H]):
//   g   = x_t W^T + h R^T + Wb + Rb        (B x 4H)
//   i, o, f = sigmoid(g_i), sigmoid(g_o), sigmoid(g_f);  c~ = tanh(g_c)
//   c   = f * c + i * c~;  h = o * tanh(c)
// "reverse" runs t from the last step to the first; "bidirectional" runs
// direction 0 forward and direction 1 in reverse. The reference kernel
// computes in double and rounds each output once.
//
//===----------------------------------------------------------------------===//
#include "ir/ops/common.h"
#include "ir/ops/ops.h"

#include <fmt/format.h>

#include <cmath>
#include <vector>

namespace tessera::ir::ops {

namespace {

/// Directions an lstm runs: 1 or 2; an error for an unknown name.
Expected<int64_t> lstmDirections(const Attrs &attrs) {
  const std::string &d = attrs.getString("direction");
  if (d == "forward" || d == "reverse")
    return 1;
  if (d == "bidirectional")
    return 2;
  return Error::format("attribute 'direction' = \"{}\" is not one of \"forward\", \"reverse\", "
                       "\"bidirectional\"",
                       d);
}

/// X [S, B, I], W [D, 4H, I], R [D, 4H, H], B [D, 8H], initial_h and
/// initial_c [D, B, H] -> (Y [S, D, B, H], Y_h [D, B, H], Y_c [D, B, H]).
Expected<Type> lstmRelation(std::span<const Type> in, const Attrs &attrs) {
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i].dtype() != DType::F32)
      return Error::format("argument {} must be f32 (lstm takes f32 only), got {}", i, in[i].str());
  TS_RETURN_IF_ERROR(requireRank(in, 0, 3, "X"));
  TS_RETURN_IF_ERROR(requireRank(in, 2, 3, "R"));
  TS_ASSIGN_OR_RETURN(int64_t D, lstmDirections(attrs));
  const Shape &x = in[0].shape();
  const int64_t S = x[0], B = x[1], I = x[2], H = in[2].shape()[2];
  auto expect = [&](size_t i, const char *name, const Shape &shape) -> Status {
    if (in[i].shape() != shape)
      return Error::format("argument {} ('{}') must be f32{}, got {}", i, name, shapeStr(shape),
                           in[i].str());
    return okStatus();
  };
  TS_RETURN_IF_ERROR(expect(1, "W", {D, 4 * H, I}));
  TS_RETURN_IF_ERROR(expect(2, "R", {D, 4 * H, H}));
  TS_RETURN_IF_ERROR(expect(3, "B", {D, 8 * H}));
  TS_RETURN_IF_ERROR(expect(4, "initial_h", {D, B, H}));
  TS_RETURN_IF_ERROR(expect(5, "initial_c", {D, B, H}));
  const Type state = Type::tensor(DType::F32, {D, B, H});
  return Type::tuple({Type::tensor(DType::F32, {S, D, B, H}), state, state});
}

double sigmoid(double v) {
  return 1.0 / (1.0 + std::exp(-v));
}

Expected<std::vector<Tensor>> lstmKernel(std::span<const Tensor> in, const Attrs &attrs,
                                         const Type &outType) {
  const Tensor &X = in[0], &W = in[1], &R = in[2], &Bias = in[3];
  TS_ASSIGN_OR_RETURN(int64_t D, lstmDirections(attrs));
  const bool reverse = attrs.getString("direction") == "reverse";
  const Shape &xs = X.shape();
  const int64_t S = xs[0], B = xs[1], I = xs[2], H = R.shape()[2];
  Tensor Y(DType::F32, outType.fields()[0].shape());
  Tensor Yh(DType::F32, outType.fields()[1].shape()), Yc(DType::F32, outType.fields()[2].shape());
  std::vector<double> h(size_t(B * H)), c(size_t(B * H)), g(size_t(4 * H));
  for (int64_t d = 0; d < D; ++d) {
    for (int64_t k = 0; k < B * H; ++k) {
      h[size_t(k)] = in[4].getDouble(d * B * H + k);
      c[size_t(k)] = in[5].getDouble(d * B * H + k);
    }
    const bool backwards = reverse || d == 1;
    for (int64_t step = 0; step < S; ++step) {
      const int64_t t = backwards ? S - 1 - step : step;
      std::vector<double> hNext(h.size());
      for (int64_t b = 0; b < B; ++b) {
        for (int64_t j = 0; j < 4 * H; ++j) {
          double v = Bias.getDouble(d * 8 * H + j) + Bias.getDouble(d * 8 * H + 4 * H + j);
          for (int64_t k = 0; k < I; ++k)
            v += X.getDouble((t * B + b) * I + k) * W.getDouble((d * 4 * H + j) * I + k);
          for (int64_t k = 0; k < H; ++k)
            v += h[size_t(b * H + k)] * R.getDouble((d * 4 * H + j) * H + k);
          g[size_t(j)] = v;
        }
        for (int64_t j = 0; j < H; ++j) {
          const double i = sigmoid(g[size_t(j)]), o = sigmoid(g[size_t(H + j)]),
                       f = sigmoid(g[size_t(2 * H + j)]), cand = std::tanh(g[size_t(3 * H + j)]);
          double &cell = c[size_t(b * H + j)];
          cell = f * cell + i * cand;
          hNext[size_t(b * H + j)] = o * std::tanh(cell);
          Y.setDouble(((t * D + d) * B + b) * H + j, hNext[size_t(b * H + j)]);
        }
      }
      h = std::move(hNext);
    }
    for (int64_t k = 0; k < B * H; ++k) {
      Yh.setDouble(d * B * H + k, h[size_t(k)]);
      Yc.setDouble(d * B * H + k, c[size_t(k)]);
    }
  }
  return std::vector<Tensor>{Y, Yh, Yc};
}

} // namespace

Status registerRecurrentOps(OpRegistry &r) {
  using K = AttrKind;
  TS_RETURN_IF_ERROR(r.add(Op{
      "lstm",
      "A whole LSTM sequence, ONNX gate order (i, o, f, c), sigmoid/tanh/tanh, f32: "
      "(X [S,B,I], W [D,4H,I], R [D,4H,H], B [D,8H], initial_h, initial_c [D,B,H]) -> "
      "tuple (Y [S,D,B,H], Y_h, Y_c [D,B,H]) (ONNX LSTM, layout 0).",
      {"X", "W", "R", "B", "initial_h", "initial_c"},
      6,
      6,
      {{"direction", K::String, AttrValue(std::string("forward")),
        "forward, reverse, or bidirectional (direction 0 forward, 1 in reverse)"}},
      OpPattern::ComputeHeavy,
      lstmRelation,
      lstmKernel,
  }));
  return okStatus();
}

} // namespace tessera::ir::ops
