//===- ir/ops/recurrent.cpp - Recurrent ops -------------------------------===//
//
//   lstm   ONNX LSTM (layout 0) with its default activations (sigmoid for the
//          gates, tanh for the cell and the output), no peepholes, no clip,
//          no coupled input/forget gate, every sequence at full length.
//   gru    ONNX GRU (layout 0) with its default activations (sigmoid, tanh),
//          no clip, either linear_before_reset.
//   rnn    ONNX RNN (layout 0) with one of tanh, relu, sigmoid, no clip.
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
// GRU (gates z, r, h; W [3H, I], R [3H, H], B [6H] = Wb, Rb):
//   z, r = sigmoid(x_t W_zr^T + h R_zr^T + Wb_zr + Rb_zr)
//   h~   = tanh(x_t W_h^T + Wb_h + r * (h R_h^T + Rb_h))   linear_before_reset
//   h~   = tanh(x_t W_h^T + Wb_h + (r * h) R_h^T + Rb_h)    otherwise
//   h    = (1 - z) * h~ + z * h
// RNN (W [H, I], R [H, H], B [2H]): h = f(x_t W^T + h R^T + Wb + Rb).
// "reverse" runs t from the last step to the first; "bidirectional" runs
// direction 0 forward and direction 1 in reverse. The reference kernel
// computes in double and rounds each output once.
//
//===----------------------------------------------------------------------===//
#include "ir/ops/common.h"
#include "ir/ops/ops.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace tessera::ir::ops {

namespace {

/// Directions a recurrent op runs: 1 or 2; an error for an unknown name.
Expected<int64_t> directions(const Attrs &attrs) {
  const std::string &d = attrs.getString("direction");
  if (d == "forward" || d == "reverse")
    return 1;
  if (d == "bidirectional")
    return 2;
  return Error::format("attribute 'direction' = \"{}\" is not one of \"forward\", \"reverse\", "
                       "\"bidirectional\"",
                       d);
}

/// Gates per hidden unit of a recurrent op: lstm 4, gru 3, rnn 1.
int64_t gatesOf(std::string_view op) {
  return op == "lstm" ? 4 : op == "gru" ? 3 : 1;
}

/// X [S, B, I], W [D, GH, I], R [D, GH, H], B [D, 2GH], initial_h (and for
/// lstm initial_c) [D, B, H] -> (Y [S, D, B, H], Y_h [D, B, H] (, Y_c)),
/// G the op's gates.
Expected<Type> recurrentRelation(std::string_view op, std::span<const Type> in,
                                 const Attrs &attrs) {
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i].dtype() != DType::F32)
      return Error::format("argument {} must be f32 ({} takes f32 only), got {}", i, op,
                           in[i].str());
  TS_RETURN_IF_ERROR(requireRank(in, 0, 3, "X"));
  TS_RETURN_IF_ERROR(requireRank(in, 2, 3, "R"));
  TS_ASSIGN_OR_RETURN(int64_t D, directions(attrs));
  const int64_t G = gatesOf(op);
  const Shape &x = in[0].shape();
  const int64_t S = x[0], B = x[1], I = x[2], H = in[2].shape()[2];
  auto expect = [&](size_t i, const char *name, const Shape &shape) -> Status {
    if (in[i].shape() != shape)
      return Error::format("argument {} ('{}') must be f32{}, got {}", i, name, shapeStr(shape),
                           in[i].str());
    return okStatus();
  };
  TS_RETURN_IF_ERROR(expect(1, "W", {D, G * H, I}));
  TS_RETURN_IF_ERROR(expect(2, "R", {D, G * H, H}));
  TS_RETURN_IF_ERROR(expect(3, "B", {D, 2 * G * H}));
  TS_RETURN_IF_ERROR(expect(4, "initial_h", {D, B, H}));
  const Type state = Type::tensor(DType::F32, {D, B, H});
  if (op != "lstm")
    return Type::tuple({Type::tensor(DType::F32, {S, D, B, H}), state});
  TS_RETURN_IF_ERROR(expect(5, "initial_c", {D, B, H}));
  return Type::tuple({Type::tensor(DType::F32, {S, D, B, H}), state, state});
}

Expected<Type> lstmRelation(std::span<const Type> in, const Attrs &attrs) {
  return recurrentRelation("lstm", in, attrs);
}

Expected<Type> gruRelation(std::span<const Type> in, const Attrs &attrs) {
  const int64_t lbr = attrs.getInt("linear_before_reset");
  if (lbr != 0 && lbr != 1)
    return Error::format("attribute 'linear_before_reset' = {} must be 0 or 1", lbr);
  return recurrentRelation("gru", in, attrs);
}

Expected<Type> rnnRelation(std::span<const Type> in, const Attrs &attrs) {
  const std::string &a = attrs.getString("activation");
  if (a != "tanh" && a != "relu" && a != "sigmoid")
    return Error::format("attribute 'activation' = \"{}\" is not one of \"tanh\", \"relu\", "
                         "\"sigmoid\"",
                         a);
  return recurrentRelation("rnn", in, attrs);
}

double sigmoid(double v) {
  return 1.0 / (1.0 + std::exp(-v));
}

Expected<std::vector<Tensor>> lstmKernel(std::span<const Tensor> in, const Attrs &attrs,
                                         const Type &outType) {
  const Tensor &X = in[0], &W = in[1], &R = in[2], &Bias = in[3];
  TS_ASSIGN_OR_RETURN(int64_t D, directions(attrs));
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

/// gru and rnn: one loop over directions, steps and batch rows; `cell`
/// computes one row's next h [H] from x_t [I], h [H] and direction d.
template <typename Cell>
std::vector<Tensor> runSequence(std::span<const Tensor> in, const Attrs &attrs, const Type &outType,
                                Cell cell) {
  const Tensor &X = in[0];
  const int64_t D = outType.fields()[1].shape()[0];
  const bool reverse = attrs.getString("direction") == "reverse";
  const int64_t S = X.shape()[0], B = X.shape()[1], I = X.shape()[2];
  const int64_t H = outType.fields()[1].shape()[2];
  Tensor Y(DType::F32, outType.fields()[0].shape()), Yh(DType::F32, outType.fields()[1].shape());
  std::vector<double> x(static_cast<size_t>(I)), h(static_cast<size_t>(H));
  for (int64_t d = 0; d < D; ++d)
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t j = 0; j < H; ++j)
        h[size_t(j)] = in[4].getDouble((d * B + b) * H + j);
      for (int64_t step = 0; step < S; ++step) {
        const int64_t t = reverse || d == 1 ? S - 1 - step : step;
        for (int64_t k = 0; k < I; ++k)
          x[size_t(k)] = X.getDouble((t * B + b) * I + k);
        h = cell(x, h, d);
        for (int64_t j = 0; j < H; ++j)
          Y.setDouble(((t * D + d) * B + b) * H + j, h[size_t(j)]);
      }
      for (int64_t j = 0; j < H; ++j)
        Yh.setDouble((d * B + b) * H + j, h[size_t(j)]);
    }
  return {Y, Yh};
}

/// Row `row` of direction d of M [D, rows, K] times v [K].
double rowDot(const Tensor &M, int64_t d, int64_t row, const std::vector<double> &v) {
  const int64_t rows = M.shape()[1], K = M.shape()[2];
  double s = 0;
  for (int64_t k = 0; k < K; ++k)
    s += M.getDouble((d * rows + row) * K + k) * v[size_t(k)];
  return s;
}

Expected<std::vector<Tensor>> gruKernel(std::span<const Tensor> in, const Attrs &attrs,
                                        const Type &outType) {
  const Tensor &W = in[1], &R = in[2], &Bias = in[3];
  const int64_t H = R.shape()[2];
  const bool lbr = attrs.getInt("linear_before_reset") != 0;
  auto bias = [&](int64_t d, int64_t k) { return Bias.getDouble(d * 6 * H + k); };
  return runSequence(in, attrs, outType,
                     [&](const std::vector<double> &x, const std::vector<double> &h, int64_t d) {
                       std::vector<double> z(static_cast<size_t>(H)), rh(static_cast<size_t>(H)),
                           next(static_cast<size_t>(H));
                       for (int64_t j = 0; j < H; ++j) {
                         z[size_t(j)] = sigmoid(rowDot(W, d, j, x) + rowDot(R, d, j, h) +
                                                bias(d, j) + bias(d, 3 * H + j));
                         const double r = sigmoid(rowDot(W, d, H + j, x) + rowDot(R, d, H + j, h) +
                                                  bias(d, H + j) + bias(d, 4 * H + j));
                         // linear_before_reset: r scales h R_h + Rb_h (kept in rh[j]).
                         rh[size_t(j)] = lbr ? r * (rowDot(R, d, 2 * H + j, h) + bias(d, 5 * H + j))
                                             : r * h[size_t(j)];
                       }
                       for (int64_t j = 0; j < H; ++j) {
                         double pre = rowDot(W, d, 2 * H + j, x) + bias(d, 2 * H + j);
                         pre +=
                             lbr ? rh[size_t(j)] : rowDot(R, d, 2 * H + j, rh) + bias(d, 5 * H + j);
                         const double cand = std::tanh(pre);
                         next[size_t(j)] = (1 - z[size_t(j)]) * cand + z[size_t(j)] * h[size_t(j)];
                       }
                       return next;
                     });
}

Expected<std::vector<Tensor>> rnnKernel(std::span<const Tensor> in, const Attrs &attrs,
                                        const Type &outType) {
  const Tensor &W = in[1], &R = in[2], &Bias = in[3];
  const int64_t H = R.shape()[2];
  const std::string &f = attrs.getString("activation");
  return runSequence(in, attrs, outType,
                     [&](const std::vector<double> &x, const std::vector<double> &h, int64_t d) {
                       std::vector<double> next(static_cast<size_t>(H));
                       for (int64_t j = 0; j < H; ++j) {
                         const double v = rowDot(W, d, j, x) + rowDot(R, d, j, h) +
                                          Bias.getDouble(d * 2 * H + j) +
                                          Bias.getDouble(d * 2 * H + H + j);
                         next[size_t(j)] = f == "tanh"   ? std::tanh(v)
                                           : f == "relu" ? std::max(v, 0.0)
                                                         : sigmoid(v);
                       }
                       return next;
                     });
}

} // namespace

Status registerRecurrentOps(OpRegistry &r) {
  using K = AttrKind;
  const AttrSpec direction{"direction", K::String, AttrValue(std::string("forward")),
                           "forward, reverse, or bidirectional (direction 0 forward, 1 in "
                           "reverse)"};
  TS_RETURN_IF_ERROR(r.add(Op{
      "lstm",
      "A whole LSTM sequence, ONNX gate order (i, o, f, c), sigmoid/tanh/tanh, f32: "
      "(X [S,B,I], W [D,4H,I], R [D,4H,H], B [D,8H], initial_h, initial_c [D,B,H]) -> "
      "tuple (Y [S,D,B,H], Y_h, Y_c [D,B,H]) (ONNX LSTM, layout 0).",
      {"X", "W", "R", "B", "initial_h", "initial_c"},
      6,
      6,
      {direction},
      OpPattern::ComputeHeavy,
      lstmRelation,
      lstmKernel,
  }));
  TS_RETURN_IF_ERROR(r.add(Op{
      "gru",
      "A whole GRU sequence, ONNX gate order (z, r, h), sigmoid/tanh, f32: "
      "(X [S,B,I], W [D,3H,I], R [D,3H,H], B [D,6H], initial_h [D,B,H]) -> "
      "tuple (Y [S,D,B,H], Y_h [D,B,H]) (ONNX GRU, layout 0).",
      {"X", "W", "R", "B", "initial_h"},
      5,
      5,
      {direction,
       {"linear_before_reset", K::Int, AttrValue(int64_t(0)),
        "1: the reset gate scales h R_h^T + Rb_h (PyTorch's GRU); 0: it scales h first"}},
      OpPattern::ComputeHeavy,
      gruRelation,
      gruKernel,
  }));
  TS_RETURN_IF_ERROR(r.add(Op{
      "rnn",
      "A whole simple RNN sequence, f32: (X [S,B,I], W [D,H,I], R [D,H,H], B [D,2H], "
      "initial_h [D,B,H]) -> tuple (Y [S,D,B,H], Y_h [D,B,H]) (ONNX RNN, layout 0).",
      {"X", "W", "R", "B", "initial_h"},
      5,
      5,
      {direction,
       {"activation", K::String, AttrValue(std::string("tanh")), "tanh, relu, or sigmoid"}},
      OpPattern::ComputeHeavy,
      rnnRelation,
      rnnKernel,
  }));
  return okStatus();
}

} // namespace tessera::ir::ops
