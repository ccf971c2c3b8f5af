//===- tests/unit/ops_recurrent_test.cpp - The lstm, gru and rnn ops -------===//
//
// The core ops lstm, gru and rnn (ir/ops/recurrent.cpp). For lstm: its type
// relation and errors;
// its reference kernel against a direct loop of ONNX's LSTM equations
// (written here, in double, with the weights as ONNX lays them out), in
// every direction, with bias and initial states; its host kernel
// (codegen/kernels/nn_recurrent.cpp) against the reference kernel through
// the native harness, with constant weights (laid out at compile time,
// KernelCall::packed) and with weights that arrive at run time (laid out by
// the kernel), over hidden sizes that are and are not multiples of the
// 16-unit panels and step counts that are and are not multiples of the
// GEMM's 6 rows; and a model compiled into an artifact, run by the runtime
// on two threads, whose weights are stored laid out only. For gru (both
// linear_before_reset modes) and rnn (each activation): their relations and
// errors, their reference kernels against ONNX's equations written here,
// and their host kernels (codegen/kernels/nn_recurrent.cpp) against the
// reference kernels over the same shapes, with constant and run-time
// weights.
//
//===----------------------------------------------------------------------===//
#include "host_kernel_harness.h"
#include "test_util.h"

#include "codegen/kernels/recurrent_layout.h"
#include "compile/compile.h"
#include "runtime/session.h"

#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <random>

namespace tessera::test {
namespace {

Type tf32(Shape s) {
  return Type::tensor(DType::F32, std::move(s));
}

Tensor randomF32(Shape shape, uint32_t seed, double scale = 1.0) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-scale, scale);
  Tensor t(DType::F32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i)
    t.setDouble(i, dist(gen));
  return t;
}

/// The inputs of a recurrent op with G gates: X [S, B, I], W [D, GH, I],
/// R [D, GH, H], B [D, 2GH], initial_h [D, B, H] and, for lstm (G = 4),
/// initial_c [D, B, H].
std::vector<Tensor> recurrentInputs(int64_t G, int64_t S, int64_t B, int64_t I, int64_t H,
                                    int64_t D, uint32_t seed = 1) {
  const double w = 1.0 / std::sqrt(double(H)); // keeps the gates off saturation
  std::vector<Tensor> in = {randomF32({S, B, I}, seed),
                            randomF32({D, G * H, I}, seed + 1, w),
                            randomF32({D, G * H, H}, seed + 2, w),
                            randomF32({D, 2 * G * H}, seed + 3, 0.5),
                            randomF32({D, B, H}, seed + 4)};
  if (G == 4)
    in.push_back(randomF32({D, B, H}, seed + 5));
  return in;
}

std::vector<Tensor> lstmInputs(int64_t S, int64_t B, int64_t I, int64_t H, int64_t D,
                               uint32_t seed = 1) {
  return recurrentInputs(4, S, B, I, H, D, seed);
}

/// ONNX LSTM (default activations, no peepholes), by its equations:
/// it = sigma(Xt Wi' + Ht-1 Ri' + Wbi + Rbi), ft, ct~ = tanh(...), ot;
/// Ct = ft * Ct-1 + it * ct~; Ht = ot * tanh(Ct). Gates i, o, f, c.
std::vector<Tensor> onnxLstm(const std::vector<Tensor> &in, const std::string &direction) {
  const Tensor &X = in[0], &W = in[1], &R = in[2], &Bias = in[3];
  const int64_t S = X.shape()[0], B = X.shape()[1], I = X.shape()[2], D = W.shape()[0],
                H = R.shape()[2];
  Tensor Y(DType::F32, {S, D, B, H}), Yh(DType::F32, {D, B, H}), Yc(DType::F32, {D, B, H});
  auto sig = [](double v) { return 1 / (1 + std::exp(-v)); };
  for (int64_t d = 0; d < D; ++d) {
    const bool rev = direction == "reverse" || d == 1;
    for (int64_t b = 0; b < B; ++b) {
      std::vector<double> h(static_cast<size_t>(H)), c(static_cast<size_t>(H));
      for (int64_t j = 0; j < H; ++j) {
        h[size_t(j)] = in[4].getDouble((d * B + b) * H + j);
        c[size_t(j)] = in[5].getDouble((d * B + b) * H + j);
      }
      for (int64_t k = 0; k < S; ++k) {
        const int64_t t = rev ? S - 1 - k : k;
        auto pre = [&](int64_t gate, int64_t j) {
          const int64_t row = gate * H + j;
          double v = Bias.getDouble(d * 8 * H + row) + Bias.getDouble(d * 8 * H + 4 * H + row);
          for (int64_t i = 0; i < I; ++i)
            v += X.getDouble((t * B + b) * I + i) * W.getDouble((d * 4 * H + row) * I + i);
          for (int64_t m = 0; m < H; ++m)
            v += h[size_t(m)] * R.getDouble((d * 4 * H + row) * H + m);
          return v;
        };
        std::vector<double> hn(static_cast<size_t>(H));
        for (int64_t j = 0; j < H; ++j) {
          const double it = sig(pre(0, j)), ot = sig(pre(1, j)), ft = sig(pre(2, j)),
                       ct = std::tanh(pre(3, j));
          c[size_t(j)] = ft * c[size_t(j)] + it * ct;
          hn[size_t(j)] = ot * std::tanh(c[size_t(j)]);
          Y.setDouble(((t * D + d) * B + b) * H + j, hn[size_t(j)]);
        }
        h = hn;
      }
      for (int64_t j = 0; j < H; ++j) {
        Yh.setDouble((d * B + b) * H + j, h[size_t(j)]);
        Yc.setDouble((d * B + b) * H + j, c[size_t(j)]);
      }
    }
  }
  return {Y, Yh, Yc};
}

Attrs dir(const std::string &d) {
  return Attrs{{"direction", AttrValue(d)}};
}

/// The host kernel of `op` on `in` (the weights W, R, B as constants of
/// the call when `constantWeights`, else parameters) against the reference
/// kernel; "" when they agree. Also checks which inputs the lowering laid
/// out.
std::string hostAgainstReference(const std::string &op, const std::vector<Tensor> &in,
                                 const Attrs &attrs, bool constantWeights) {
  std::vector<Expr> args;
  for (size_t i = 0; i < in.size(); ++i) {
    const bool weight = i >= 1 && i <= 3;
    args.push_back(weight && constantWeights ? makeConstant(in[i])
                                             : makeVar("x" + std::to_string(i), in[i].type()));
  }
  auto call = makeCall(op, std::move(args), attrs, "l");
  if (!call)
    return call.error().str();
  const auto *node = (*call)->as<CallNode>();
  auto lowered = codegen::lowerHostOp(*node);
  if (!lowered)
    return lowered.error().str();
  if (lowered->kernel != op)
    return "lowered to kernel " + lowered->kernel;
  if (lowered->packed.size() != (constantWeights ? 3u : 0u))
    return "the lowering laid out " + std::to_string(lowered->packed.size()) + " inputs";
  auto want = node->op()->kernel(in, node->attrs(), node->type());
  auto got = hostkernel::runNative(*node, in);
  if (!want)
    return "reference: " + want.error().str();
  if (!got)
    return "native: " + got.error().str();
  for (size_t i = 0; i < want->size(); ++i) {
    std::string diff = kit::compareTensors((*got)[i], (*want)[i]);
    if (!diff.empty())
      return "output " + std::to_string(i) + ": " + diff;
  }
  return "";
}

std::string hostAgainstReference(const std::vector<Tensor> &in, const std::string &direction,
                                 bool constantWeights) {
  return hostAgainstReference("lstm", in, dir(direction), constantWeights);
}

} // namespace

TEST_CASE("lstm infers Y, Y_h and Y_c", "[ops][lstm]") {
  auto args = [](int64_t S, int64_t B, int64_t I, int64_t H, int64_t D) {
    return std::vector<Type>{tf32({S, B, I}),  tf32({D, 4 * H, I}), tf32({D, 4 * H, H}),
                             tf32({D, 8 * H}), tf32({D, B, H}),     tf32({D, B, H})};
  };
  CHECK(inferred("lstm", args(5, 2, 3, 4, 1)) ==
        Type::tuple({tf32({5, 1, 2, 4}), tf32({1, 2, 4}), tf32({1, 2, 4})}));
  CHECK(inferred("lstm", args(5, 2, 3, 4, 1), dir("reverse")) ==
        Type::tuple({tf32({5, 1, 2, 4}), tf32({1, 2, 4}), tf32({1, 2, 4})}));
  CHECK(inferred("lstm", args(7, 1, 3, 20, 2), dir("bidirectional")) ==
        Type::tuple({tf32({7, 2, 1, 20}), tf32({2, 1, 20}), tf32({2, 1, 20})}));
}

TEST_CASE("lstm type errors", "[ops][lstm]") {
  std::vector<Type> ok = {tf32({5, 2, 3}), tf32({1, 16, 3}), tf32({1, 16, 4}),
                          tf32({1, 32}),   tf32({1, 2, 4}),  tf32({1, 2, 4})};
  auto with = [&](size_t i, Type t) {
    std::vector<Type> a = ok;
    a[i] = std::move(t);
    return a;
  };
  CHECK_THAT(inferError("lstm", ok, dir("sideways")),
             Catch::Contains("attribute 'direction' = \"sideways\" is not one of \"forward\", "
                             "\"reverse\", \"bidirectional\""));
  // H is R's last dim: W is checked against it first.
  CHECK_THAT(inferError("lstm", with(2, tf32({1, 16, 5}))),
             Catch::Contains("argument 1 ('W') must be f32[1, 20, 3], got f32[1, 16, 3]"));
  CHECK_THAT(inferError("lstm", with(2, tf32({1, 12, 4}))),
             Catch::Contains("argument 2 ('R') must be f32[1, 16, 4], got f32[1, 12, 4]"));
  CHECK_THAT(inferError("lstm", with(1, tf32({1, 12, 3}))),
             Catch::Contains("argument 1 ('W') must be f32[1, 16, 3], got f32[1, 12, 3]"));
  CHECK_THAT(inferError("lstm", with(3, tf32({1, 16}))),
             Catch::Contains("argument 3 ('B') must be f32[1, 32], got f32[1, 16]"));
  CHECK_THAT(inferError("lstm", with(5, tf32({1, 1, 4}))),
             Catch::Contains("argument 5 ('initial_c') must be f32[1, 2, 4], got f32[1, 1, 4]"));
  CHECK_THAT(inferError("lstm", ok, dir("bidirectional")),
             Catch::Contains("argument 1 ('W') must be f32[2, 16, 3], got f32[1, 16, 3]"));
  CHECK_THAT(inferError("lstm", with(0, Type::tensor(DType::F64, {5, 2, 3}))),
             Catch::Contains("argument 0 must be f32 (lstm takes f32 only), got f64[5, 2, 3]"));
  CHECK_THAT(inferError("lstm", with(0, tf32({5, 3}))), Catch::Contains("X"));
}

TEST_CASE("lstm reference kernel follows ONNX's LSTM", "[ops][lstm]") {
  for (const std::string d : {"forward", "reverse", "bidirectional"}) {
    CAPTURE(d);
    const int64_t D = d == "bidirectional" ? 2 : 1;
    for (auto [S, B, I, H] : std::vector<std::array<int64_t, 4>>{{4, 2, 3, 5}, {1, 1, 2, 3}}) {
      CAPTURE(S, B, I, H);
      std::vector<Tensor> in = lstmInputs(S, B, I, H, D);
      std::vector<Tensor> got = runOp("lstm", in, dir(d)), want = onnxLstm(in, d);
      REQUIRE(got.size() == 3);
      for (size_t i = 0; i < 3; ++i)
        requireClose(got[i], want[i], 1e-6, 1e-7);
    }
  }
  // Zero weights: every gate is sigma(bias) / tanh(bias); c grows from c0.
  std::vector<Tensor> in = lstmInputs(2, 1, 2, 1, 1);
  in[1] = Tensor(DType::F32, {1, 4, 2});
  in[2] = Tensor(DType::F32, {1, 4, 1});
  in[3] = f32({1, 8}, {0.5, 0, 0, 1, 0, 0, 0, 0}); // Wb_i = 0.5, Wb_c = 1
  in[4] = f32({1, 1, 1}, {3});
  in[5] = f32({1, 1, 1}, {2});
  const double i = 1 / (1 + std::exp(-0.5)), half = 0.5, cand = std::tanh(1.0);
  const double c1 = half * 2 + i * cand, c2 = half * c1 + i * cand;
  std::vector<Tensor> got = runOp("lstm", in);
  requireClose(got[0], f32({2, 1, 1, 1}, {half * std::tanh(c1), half * std::tanh(c2)}), 1e-6, 1e-7);
  requireClose(got[2], f32({1, 1, 1}, {c2}), 1e-6, 1e-7);
}

TEST_CASE("lstm host kernel matches the reference kernel", "[lstm][host-kernels]") {
  SECTION("the catalogue samples") {
    auto failures = hostkernel::checkOpSamples("lstm");
    CAPTURE(failures);
    CHECK(failures.empty());
  }
  // S * B against the GEMM's 6 rows, H against the 16-unit panels.
  const std::vector<std::array<int64_t, 4>> shapes = {
      {1, 1, 3, 4}, {6, 1, 5, 16}, {7, 3, 8, 20}, {12, 2, 17, 33}, {5, 1, 1, 48}};
  for (const std::string d : {"forward", "reverse", "bidirectional"})
    for (auto [S, B, I, H] : shapes)
      for (bool constant : {true, false}) {
        INFO(d << " S=" << S << " B=" << B << " I=" << I << " H=" << H
               << (constant ? " constant" : " run-time") << " weights");
        std::string failure = hostAgainstReference(
            lstmInputs(S, B, I, H, d == "bidirectional" ? 2 : 1, uint32_t(S * 7 + H)), d, constant);
        INFO(failure);
        CHECK(failure.empty());
      }
}

TEST_CASE("lstm lowering lays out constant weights once", "[lstm][host-kernels]") {
  // H = 20: two panels of 16 units, the second half padding.
  std::vector<Tensor> in = lstmInputs(3, 2, 5, 20, 2);
  std::vector<Expr> args = {makeVar("x", in[0].type()), makeConstant(in[1]),
                            makeConstant(in[2]),        makeVar("b", in[3].type()),
                            makeVar("h", in[4].type()), makeVar("c", in[5].type())};
  auto call = makeCall("lstm", std::move(args), dir("bidirectional"));
  REQUIRE(call);
  auto lowered = codegen::lowerHostOp(*(*call)->as<CallNode>());
  REQUIRE(lowered);
  CHECK(lowered->kernel == "lstm");
  REQUIRE(lowered->packed.size() == 2);
  CHECK(lowered->packed[0].input == 1);
  CHECK(lowered->packed[0].data.shape() == Shape{2, 2, 4, 5, 16});
  CHECK(lowered->packed[1].input == 2);
  CHECK(lowered->packed[1].data.shape() == Shape{2, 2, 20, 4, 16});
  // ia[6..8]: W and R arrive laid out, B does not (the kernel lays it out).
  REQUIRE(lowered->ia.size() == 14);
  CHECK(lowered->ia[6] == 1);
  CHECK(lowered->ia[7] == 1);
  CHECK(lowered->ia[8] == 0);
  // Unit 17 of direction 1, gate f (2), weight 3 of W: [1, 1, 2, 3, 1].
  CHECK(lowered->packed[0].data.getDouble((((1 * 2 + 1) * 4 + 2) * 5 + 3) * 16 + 1) ==
        in[1].getDouble((1 * 80 + 2 * 20 + 17) * 5 + 3));
  // Padding units are zeros.
  CHECK(lowered->packed[1].data.getDouble((((0 * 2 + 1) * 20 + 7) * 4 + 3) * 16 + 9) == 0.0);
}

TEST_CASE("lstm compiled into an artifact matches the interpreter", "[lstm][host-kernels]") {
  // Two layers as an export has them (constant weights); the second layer's
  // W also feeds a dense, so it is stored both as it is and laid out.
  std::vector<Tensor> l1 = lstmInputs(9, 2, 6, 24, 2, 3), l2 = lstmInputs(9, 2, 48, 24, 1, 9);
  // Built with the API: the weights are constants too large to write.
  Var x = makeVar("x", l1[0].type());
  auto layer = [&](Expr input, const std::vector<Tensor> &w, const std::string &d,
                   const std::string &name) {
    auto c = makeCall("lstm",
                      {input, makeConstant(w[1]), makeConstant(w[2]), makeConstant(w[3]),
                       makeConstant(w[4]), makeConstant(w[5])},
                      dir(d), name);
    REQUIRE(c);
    return *c;
  };
  Expr first = layer(x, l1, "bidirectional", "l1");
  auto y1 = makeTupleGetItem(first, 0);
  REQUIRE(y1);
  auto flat =
      makeCall("reshape", {*y1}, Attrs{{"newshape", AttrValue(std::vector<int64_t>{9, 2, 48})}});
  REQUIRE(flat);
  // l2's W as one constant node, used by the lstm and by a dense.
  Expr w2 = makeConstant(l2[1]);
  auto second = makeCall("lstm",
                         {*flat, w2, makeConstant(l2[2]), makeConstant(l2[3]), makeConstant(l2[4]),
                          makeConstant(l2[5])},
                         dir("reverse"), "l2");
  REQUIRE(second);
  auto w2flat =
      makeCall("reshape", {w2}, Attrs{{"newshape", AttrValue(std::vector<int64_t>{96, 48})}});
  REQUIRE(w2flat);
  auto side = makeCall("dense", {*flat, *w2flat});
  REQUIRE(side);
  std::vector<Expr> outs;
  for (int i = 0; i < 3; ++i) {
    auto item = makeTupleGetItem(*second, i);
    REQUIRE(item);
    outs.push_back(*item);
  }
  outs.push_back(*side);
  ir::Module module;
  module.set("main", makeFunction({x}, makeTuple(outs)));

  auto compiled = compile::compileModule(module, compile::CompileOptions{}, nullptr);
  INFO((compiled ? "" : compiled.error().str()));
  REQUIRE(compiled);
  // Stored: W, R and B laid out, the initial states, and l2's W as it is
  // for the dense; l1's W and R and l2's R as they are would not fit.
  using namespace tk_recurrent_layout;
  auto aligned = [](int64_t floats) { return (floats * 4 + 63) / 64 * 64; };
  auto packed = [](int64_t H, int64_t K) { return recurrentPackedSize(H, K, 4); };
  const int64_t H = 24, P = recurrentPanels(H), columns = 4 * kRecurrentUnits,
                stored = aligned(2 * packed(H, 6)) + aligned(2 * packed(H, H)) +
                         aligned(2 * P * columns) + 2 * aligned(2 * 2 * H) +
                         aligned(packed(H, 48)) + aligned(packed(H, H)) + aligned(P * columns) +
                         2 * aligned(2 * H) + aligned(96 * 48);
  CHECK(int64_t(compiled->weightsBytes) <= stored);
  auto model = runtime::LoadedModel::load(compiled->artifact, "lstm.tsr");
  INFO((model ? "" : model.error().str()));
  REQUIRE(model);
  for (int threads : {1, 2}) {
    INFO(threads << " threads");
    auto session = runtime::Session::create(*model, {threads});
    REQUIRE(session);
    REQUIRE((*session)->setInput(0, l1[0].dl()).ok());
    auto ran = (*session)->run();
    INFO((ran.ok() ? "" : ran.error().str()));
    REQUIRE(ran.ok());
    auto want = interp::run(module, {l1[0]});
    REQUIRE(want);
    std::vector<Tensor> expected = want->flatten();
    REQUIRE(expected.size() == 4);
    for (size_t i = 0; i < expected.size(); ++i) {
      auto out = (*session)->output(i);
      REQUIRE(out.ok());
      INFO("output " << i);
      CHECK(kit::compareTensors(Tensor::copyOf(**out), expected[i]) == "");
    }
  }
}

namespace {

/// ONNX GRU (default activations f = sigmoid, g = tanh), by its equations:
/// zt = f(Xt Wz' + Ht-1 Rz' + Wbz + Rbz), rt likewise;
/// ht~ = g(Xt Wh' + (rt (.) Ht-1) Rh' + Rbh + Wbh)       linear_before_reset 0
/// ht~ = g(Xt Wh' + (rt (.) (Ht-1 Rh' + Rbh)) + Wbh)     linear_before_reset 1
/// Ht = (1 - zt) (.) ht~ + zt (.) Ht-1.
/// ONNX RNN: Ht = f(Xt Wi' + Ht-1 Ri' + Wbi + Rbi).
std::vector<Tensor> onnxGruRnn(const std::string &op, const std::vector<Tensor> &in,
                               const std::string &direction, bool lbr,
                               const std::string &activation) {
  const Tensor &X = in[0], &W = in[1], &R = in[2], &Bias = in[3];
  const int64_t S = X.shape()[0], B = X.shape()[1], I = X.shape()[2], D = W.shape()[0],
                H = R.shape()[2], G = op == "gru" ? 3 : 1;
  Tensor Y(DType::F32, {S, D, B, H}), Yh(DType::F32, {D, B, H});
  auto sig = [](double v) { return 1 / (1 + std::exp(-v)); };
  for (int64_t d = 0; d < D; ++d) {
    const bool rev = direction == "reverse" || d == 1;
    for (int64_t b = 0; b < B; ++b) {
      std::vector<double> h(static_cast<size_t>(H));
      for (int64_t j = 0; j < H; ++j)
        h[size_t(j)] = in[4].getDouble((d * B + b) * H + j);
      for (int64_t k = 0; k < S; ++k) {
        const int64_t t = rev ? S - 1 - k : k;
        auto xw = [&](int64_t row) {
          double v = Bias.getDouble(d * 2 * G * H + row);
          for (int64_t i = 0; i < I; ++i)
            v += X.getDouble((t * B + b) * I + i) * W.getDouble((d * G * H + row) * I + i);
          return v;
        };
        auto hr = [&](int64_t row, const std::vector<double> &v) {
          double acc = Bias.getDouble(d * 2 * G * H + G * H + row);
          for (int64_t m = 0; m < H; ++m)
            acc += v[size_t(m)] * R.getDouble((d * G * H + row) * H + m);
          return acc;
        };
        std::vector<double> hn(static_cast<size_t>(H));
        if (op == "rnn") {
          for (int64_t j = 0; j < H; ++j) {
            const double v = xw(j) + hr(j, h);
            hn[size_t(j)] = activation == "tanh"   ? std::tanh(v)
                            : activation == "relu" ? std::max(v, 0.0)
                                                   : sig(v);
          }
        } else {
          std::vector<double> z(static_cast<size_t>(H)), r(static_cast<size_t>(H)), rh(h);
          for (int64_t j = 0; j < H; ++j) {
            z[size_t(j)] = sig(xw(j) + hr(j, h));
            r[size_t(j)] = sig(xw(H + j) + hr(H + j, h));
            rh[size_t(j)] *= r[size_t(j)];
          }
          for (int64_t j = 0; j < H; ++j) {
            const double cand = std::tanh(lbr ? xw(2 * H + j) + r[size_t(j)] * hr(2 * H + j, h)
                                              : xw(2 * H + j) + hr(2 * H + j, rh));
            hn[size_t(j)] = (1 - z[size_t(j)]) * cand + z[size_t(j)] * h[size_t(j)];
          }
        }
        for (int64_t j = 0; j < H; ++j)
          Y.setDouble(((t * D + d) * B + b) * H + j, hn[size_t(j)]);
        h = hn;
      }
      for (int64_t j = 0; j < H; ++j)
        Yh.setDouble((d * B + b) * H + j, h[size_t(j)]);
    }
  }
  return {Y, Yh};
}

/// The variants of gru and rnn: (op, linear_before_reset, activation).
struct Variant {
  std::string op;
  bool lbr;
  std::string activation;
  Attrs attrs(const std::string &direction) const {
    Attrs a = dir(direction);
    if (op == "gru")
      a.set("linear_before_reset", AttrValue(int64_t(lbr)));
    else
      a.set("activation", AttrValue(activation));
    return a;
  }
  int64_t gates() const { return op == "gru" ? 3 : 1; }
};

const std::vector<Variant> &variants() {
  static const std::vector<Variant> v = {{"gru", false, ""},
                                         {"gru", true, ""},
                                         {"rnn", false, "tanh"},
                                         {"rnn", false, "relu"},
                                         {"rnn", false, "sigmoid"}};
  return v;
}

} // namespace

TEST_CASE("gru and rnn infer Y and Y_h", "[ops][gru][rnn]") {
  auto args = [](int64_t G, int64_t S, int64_t B, int64_t I, int64_t H, int64_t D) {
    return std::vector<Type>{tf32({S, B, I}), tf32({D, G * H, I}), tf32({D, G * H, H}),
                             tf32({D, 2 * G * H}), tf32({D, B, H})};
  };
  CHECK(inferred("gru", args(3, 5, 2, 3, 4, 1)) ==
        Type::tuple({tf32({5, 1, 2, 4}), tf32({1, 2, 4})}));
  CHECK(inferred("rnn", args(1, 7, 1, 3, 20, 2), dir("bidirectional")) ==
        Type::tuple({tf32({7, 2, 1, 20}), tf32({2, 1, 20})}));
  CHECK_THAT(inferError("gru", args(4, 5, 2, 3, 4, 1)),
             Catch::Contains("argument 1 ('W') must be f32[1, 12, 3], got f32[1, 16, 3]"));
  CHECK_THAT(inferError("rnn", args(1, 5, 2, 3, 4, 1),
                        Attrs{{"activation", AttrValue(std::string("gelu"))}}),
             Catch::Contains("attribute 'activation' = \"gelu\" is not one of \"tanh\", "
                             "\"relu\", \"sigmoid\""));
  CHECK_THAT(inferError("gru", args(3, 5, 2, 3, 4, 1),
                        Attrs{{"linear_before_reset", AttrValue(int64_t(2))}}),
             Catch::Contains("attribute 'linear_before_reset' = 2 must be 0 or 1"));
  std::vector<Type> bad = args(3, 5, 2, 3, 4, 1);
  bad[4] = tf32({1, 3, 4});
  CHECK_THAT(inferError("gru", bad),
             Catch::Contains("argument 4 ('initial_h') must be f32[1, 2, 4], got f32[1, 3, 4]"));
}

TEST_CASE("gru and rnn reference kernels follow ONNX's GRU and RNN", "[ops][gru][rnn]") {
  for (const Variant &v : variants())
    for (const std::string d : {"forward", "reverse", "bidirectional"}) {
      INFO(v.op << " lbr=" << v.lbr << " " << v.activation << " " << d);
      const int64_t D = d == "bidirectional" ? 2 : 1;
      for (auto [S, B, I, H] : std::vector<std::array<int64_t, 4>>{{4, 2, 3, 5}, {1, 1, 2, 3}}) {
        std::vector<Tensor> in = recurrentInputs(v.gates(), S, B, I, H, D, uint32_t(S + H));
        std::vector<Tensor> got = runOp(v.op, in, v.attrs(d)),
                            want = onnxGruRnn(v.op, in, d, v.lbr, v.activation);
        REQUIRE(got.size() == 2);
        for (size_t i = 0; i < 2; ++i)
          requireClose(got[i], want[i], 1e-6, 1e-7);
      }
    }
}

TEST_CASE("gru and rnn host kernels match the reference kernels", "[gru][rnn][host-kernels]") {
  SECTION("the catalogue samples") {
    for (const char *op : {"gru", "rnn"}) {
      auto failures = hostkernel::checkOpSamples(op);
      CAPTURE(op, failures);
      CHECK(failures.empty());
    }
  }
  // S * B against the GEMM's 6 rows, H against the 16-unit panels, odd and
  // even batches (rows go in pairs).
  const std::vector<std::array<int64_t, 4>> shapes = {
      {1, 1, 3, 4}, {6, 1, 5, 16}, {7, 3, 8, 20}, {12, 2, 17, 33}, {5, 1, 1, 48}};
  for (const Variant &v : variants())
    for (const std::string d : {"forward", "reverse", "bidirectional"})
      for (auto [S, B, I, H] : shapes)
        for (bool constant : {true, false}) {
          INFO(v.op << " lbr=" << v.lbr << " " << v.activation << " " << d << " S=" << S
                    << " B=" << B << " I=" << I << " H=" << H
                    << (constant ? " constant" : " run-time") << " weights");
          std::vector<Tensor> in = recurrentInputs(v.gates(), S, B, I, H,
                                                   d == "bidirectional" ? 2 : 1,
                                                   uint32_t(S * 7 + H));
          std::string failure = hostAgainstReference(v.op, in, v.attrs(d), constant);
          INFO(failure);
          CHECK(failure.empty());
        }
}

} // namespace tessera::test
