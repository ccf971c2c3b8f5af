//===- tests/unit/onnx_recurrent_test.cpp - RNN/GRU/LSTM converters ------===//
//
// The RNN, GRU and LSTM converters (one core op, or unrolled) run on constant inputs (every
// call folds) and are compared with a direct loop implementation of the ONNX
// definitions, for the variants the backend tests do not cover: reverse and
// bidirectional directions, initial states, peepholes, clip, GRU's
// linear_before_reset, non-default activations with alpha, layout 1; plus
// the errors for unsupported sequence_lens and a non-constant one; which
// recurrences become one core op and which unroll; symbolic dims.
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include "onnx_test_util.h"

#include "interp/interpreter.h"
#include "ir/symbol.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>

using namespace tessera;
using namespace tessera::frontend::onnx;
using tessera::test::f32;
using tessera::test::i64;
using tessera::test::requireClose;

namespace {

using Ints = std::vector<int64_t>;
using Vec = std::vector<double>;
using AttrMap = test::OnnxAttrMap;

enum class Kind { RNN, GRU, LSTM };

Vec randomVec(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  Vec v(n);
  for (double &x : v)
    x = dist(gen);
  return v;
}

struct Act {
  std::string name;
  double alpha = 0, beta = 0;
  double operator()(double x) const {
    if (name == "Sigmoid")
      return 1 / (1 + std::exp(-x));
    if (name == "Tanh")
      return std::tanh(x);
    if (name == "Relu")
      return std::max(x, 0.0);
    if (name == "LeakyRelu")
      return x < 0 ? alpha * x : x;
    if (name == "HardSigmoid")
      return std::clamp(alpha * x + beta, 0.0, 1.0);
    FAIL("unknown activation " << name);
    return 0;
  }
};

/// A recurrent layer in layout 0 with its data; optional parts are empty.
struct Layer {
  Kind kind;
  int64_t S, B, I, H, D;
  std::string direction = "forward";
  Vec x, w, r, b, h0, c0, p;
  std::vector<Act> acts; // per direction
  double clip = 0;       // 0: none
  bool linearBeforeReset = false;

  int64_t gates() const { return kind == Kind::RNN ? 1 : kind == Kind::GRU ? 3 : 4; }
};

struct RefResult {
  Vec y, yh, yc; // [S, D, B, H], [D, B, H], [D, B, H]
};

/// The ONNX definitions, by loops.
RefResult reference(const Layer &l) {
  const int64_t S = l.S, B = l.B, I = l.I, H = l.H, D = l.D, G = l.gates();
  RefResult res{Vec(size_t(S * D * B * H)), Vec(size_t(D * B * H)), Vec(size_t(D * B * H))};
  size_t perDir = l.acts.size() / size_t(D);
  auto clip = [&](double v) { return l.clip > 0 ? std::clamp(v, -l.clip, l.clip) : v; };
  for (int64_t d = 0; d < D; ++d) {
    bool reverse = l.direction == "reverse" || d == 1;
    const Act *f = &l.acts[size_t(d) * perDir];
    Vec h(size_t(B * H), 0.0), c(size_t(B * H), 0.0);
    for (int64_t i = 0; i < B * H; ++i) {
      if (!l.h0.empty())
        h[size_t(i)] = l.h0[size_t(d * B * H + i)];
      if (!l.c0.empty())
        c[size_t(i)] = l.c0[size_t(d * B * H + i)];
    }
    auto W = [&](int64_t row, int64_t i) { return l.w[size_t((d * G * H + row) * I + i)]; };
    auto R = [&](int64_t row, int64_t m) { return l.r[size_t((d * G * H + row) * H + m)]; };
    auto Wb = [&](int64_t row) { return l.b.empty() ? 0.0 : l.b[size_t(d * 2 * G * H + row)]; };
    auto Rb = [&](int64_t row) {
      return l.b.empty() ? 0.0 : l.b[size_t(d * 2 * G * H + G * H + row)];
    };
    auto P = [&](int64_t k, int64_t j) {
      return l.p.empty() ? 0.0 : l.p[size_t(d * 3 * H + k * H + j)];
    };
    for (int64_t k = 0; k < S; ++k) {
      int64_t t = reverse ? S - 1 - k : k;
      Vec hn(h.size()), cn(c.size());
      for (int64_t b = 0; b < B; ++b) {
        auto xw = [&](int64_t row) {
          double s = Wb(row);
          for (int64_t i = 0; i < I; ++i)
            s += l.x[size_t((t * B + b) * I + i)] * W(row, i);
          return s;
        };
        auto hr = [&](int64_t row, const Vec &hv) {
          double s = 0;
          for (int64_t m = 0; m < H; ++m)
            s += hv[size_t(b * H + m)] * R(row, m);
          return s;
        };
        Vec rh(size_t(B * H)); // r * h for GRU
        for (int64_t j = 0; j < H; ++j) {
          size_t o = size_t(b * H + j);
          if (l.kind == Kind::RNN) {
            hn[o] = f[0](clip(xw(j) + hr(j, h) + Rb(j)));
          } else if (l.kind == Kind::LSTM) {
            double ci = c[o];
            double ig = f[0](clip(xw(j) + hr(j, h) + Rb(j) + P(0, j) * ci));
            double fg = f[0](clip(xw(2 * H + j) + hr(2 * H + j, h) + Rb(2 * H + j) + P(2, j) * ci));
            double cand = f[1](clip(xw(3 * H + j) + hr(3 * H + j, h) + Rb(3 * H + j)));
            cn[o] = fg * ci + ig * cand;
            double og = f[0](clip(xw(H + j) + hr(H + j, h) + Rb(H + j) + P(1, j) * cn[o]));
            hn[o] = og * f[2](cn[o]);
          }
        }
        if (l.kind == Kind::GRU) {
          Vec z(static_cast<size_t>(H)), r(static_cast<size_t>(H));
          for (int64_t j = 0; j < H; ++j) {
            z[size_t(j)] = f[0](clip(xw(j) + hr(j, h) + Rb(j)));
            r[size_t(j)] = f[0](clip(xw(H + j) + hr(H + j, h) + Rb(H + j)));
            rh[size_t(b * H + j)] = r[size_t(j)] * h[size_t(b * H + j)];
          }
          for (int64_t j = 0; j < H; ++j) {
            int64_t row = 2 * H + j;
            double pre = l.linearBeforeReset ? xw(row) + r[size_t(j)] * (hr(row, h) + Rb(row))
                                             : xw(row) + hr(row, rh) + Rb(row);
            double hh = f[1](clip(pre));
            size_t o = size_t(b * H + j);
            hn[o] = (1 - z[size_t(j)]) * hh + z[size_t(j)] * h[o];
          }
        }
      }
      h = hn;
      c = cn;
      for (int64_t i = 0; i < B * H; ++i)
        res.y[size_t((t * D + d) * B * H + i)] = h[size_t(i)];
    }
    for (int64_t i = 0; i < B * H; ++i) {
      res.yh[size_t(d * B * H + i)] = h[size_t(i)];
      res.yc[size_t(d * B * H + i)] = c[size_t(i)];
    }
  }
  return res;
}

/// A random layer; optional inputs per flags.
Layer makeLayer(Kind kind, std::string direction, bool bias, bool initial, bool peepholes) {
  Layer l;
  l.kind = kind;
  l.S = 3, l.B = 2, l.I = 3, l.H = 4;
  l.direction = direction;
  l.D = direction == "bidirectional" ? 2 : 1;
  int64_t G = l.gates();
  uint32_t seed = 7;
  l.x = randomVec(size_t(l.S * l.B * l.I), seed++);
  l.w = randomVec(size_t(l.D * G * l.H * l.I), seed++);
  l.r = randomVec(size_t(l.D * G * l.H * l.H), seed++);
  if (bias)
    l.b = randomVec(size_t(l.D * 2 * G * l.H), seed++);
  if (initial) {
    l.h0 = randomVec(size_t(l.D * l.B * l.H), seed++);
    if (kind == Kind::LSTM)
      l.c0 = randomVec(size_t(l.D * l.B * l.H), seed++);
  }
  if (peepholes)
    l.p = randomVec(size_t(l.D * 3 * l.H), seed++);
  std::vector<Act> defaults = kind == Kind::RNN ? std::vector<Act>{{"Tanh"}}
                              : kind == Kind::GRU
                                  ? std::vector<Act>{{"Sigmoid"}, {"Tanh"}}
                                  : std::vector<Act>{{"Sigmoid"}, {"Tanh"}, {"Tanh"}};
  for (int64_t d = 0; d < l.D; ++d)
    l.acts.insert(l.acts.end(), defaults.begin(), defaults.end());
  return l;
}

const char *opName(Kind k) {
  return k == Kind::RNN ? "RNN" : k == Kind::GRU ? "GRU" : "LSTM";
}

/// Converts the layer (layout 0, or layout 1 with transposed inputs) and
/// checks every output against the reference.
void checkLayer(const Layer &l, AttrMap attrs, int64_t layout = 0) {
  const int64_t S = l.S, B = l.B, H = l.H, D = l.D;
  auto konst = [](ir::Shape s, const Vec &v) -> ir::Expr {
    return v.empty() ? nullptr : ir::makeConstant(f32(std::move(s), v));
  };
  // [A, B, C] -> [B, A, C]
  auto swap01 = [](const Vec &v, int64_t a, int64_t b, int64_t c) {
    Vec out(v.size());
    for (int64_t i = 0; i < a; ++i)
      for (int64_t j = 0; j < b; ++j)
        for (int64_t k = 0; k < c; ++k)
          out[size_t((j * a + i) * c + k)] = v[size_t((i * b + j) * c + k)];
    return out;
  };
  std::vector<ir::Expr> in;
  if (layout == 0) {
    in.push_back(konst({S, B, l.I}, l.x));
  } else {
    in.push_back(konst({B, S, l.I}, swap01(l.x, S, B, l.I)));
    attrs["layout"] = int64_t(1);
  }
  int64_t G = l.gates();
  in.push_back(konst({D, G * H, l.I}, l.w));
  in.push_back(konst({D, G * H, H}, l.r));
  in.push_back(konst({D, 2 * G * H}, l.b));
  in.push_back(nullptr); // sequence_lens
  auto state = [&](const Vec &v) {
    return layout == 0 ? konst({D, B, H}, v) : konst({B, D, H}, v.empty() ? v : swap01(v, D, B, H));
  };
  in.push_back(state(l.h0));
  if (l.kind == Kind::LSTM) {
    in.push_back(state(l.c0));
    in.push_back(konst({D, 3 * H}, l.p));
  }
  attrs["hidden_size"] = H;
  attrs["direction"] = l.direction;
  size_t nOut = l.kind == Kind::LSTM ? 3 : 2;
  auto out = test::convertNode(opName(l.kind), in, attrs, nOut);
  if (!out.ok())
    FAIL("conversion failed: " << out.error().str());
  REQUIRE(out->size() == nOut);
  // Constants when the core op folds; a loop over the cell (which does not)
  // is run by the reference interpreter.
  std::vector<ir::Tensor> got;
  if (std::all_of(out->begin(), out->end(),
                  [](const ir::Expr &e) { return e->as<ir::ConstantNode>() != nullptr; })) {
    for (const auto &e : *out)
      got.push_back(e->as<ir::ConstantNode>()->data());
  } else {
    ir::Module m("layer");
    m.set("main", ir::makeFunction({}, ir::makeTuple(*out)));
    auto ran = interp::run(m, {});
    if (!ran.ok())
      FAIL("the interpreter failed: " << ran.error().str());
    got = ran->flatten();
  }
  RefResult ref = reference(l);
  if (layout == 0) {
    requireClose(got[0], f32({S, D, B, H}, ref.y), 1e-5, 1e-6);
    requireClose(got[1], f32({D, B, H}, ref.yh), 1e-5, 1e-6);
    if (nOut == 3)
      requireClose(got[2], f32({D, B, H}, ref.yc), 1e-5, 1e-6);
  } else {
    // Y [S, D, B, H] -> [B, S, D, H]
    Vec y(ref.y.size());
    for (int64_t s = 0; s < S; ++s)
      for (int64_t d = 0; d < D; ++d)
        for (int64_t b = 0; b < B; ++b)
          for (int64_t j = 0; j < H; ++j)
            y[size_t(((b * S + s) * D + d) * H + j)] = ref.y[size_t(((s * D + d) * B + b) * H + j)];
    requireClose(got[0], f32({B, S, D, H}, y), 1e-5, 1e-6);
    requireClose(got[1], f32({B, D, H}, swap01(ref.yh, D, B, H)), 1e-5, 1e-6);
    if (nOut == 3)
      requireClose(got[2], f32({B, D, H}, swap01(ref.yc, D, B, H)), 1e-5, 1e-6);
  }
}

/// How many calls of each op compute `outs`.
std::map<std::string, int> countOps(const std::vector<ir::Expr> &outs) {
  std::map<std::string, int> n;
  std::vector<ir::Expr> work(outs.begin(), outs.end());
  std::set<const ir::ExprNode *> seen;
  while (!work.empty()) {
    ir::Expr e = work.back();
    work.pop_back();
    if (!e || !seen.insert(e.get()).second)
      continue;
    if (const auto *c = e->as<ir::CallNode>()) {
      ++n[c->op()->name];
      for (const ir::Expr &a : c->args())
        work.push_back(a);
    } else if (const auto *g = e->as<ir::TupleGetItemNode>()) {
      work.push_back(g->tuple());
    }
  }
  return n;
}

} // namespace

TEST_CASE("RNN converter: directions, bias, initial state, activations, clip",
          "[onnx][recurrent]") {
  for (std::string dir : {"forward", "reverse", "bidirectional"}) {
    CAPTURE(dir);
    checkLayer(makeLayer(Kind::RNN, dir, false, false, false), {});
    checkLayer(makeLayer(Kind::RNN, dir, true, true, false), {});
  }
  Layer l = makeLayer(Kind::RNN, "bidirectional", true, true, false);
  l.acts = {{"LeakyRelu", 0.2}, {"Relu"}};
  l.clip = 0.5;
  checkLayer(l, {{"activations", std::vector<std::string>{"LeakyRelu", "Relu"}},
                 {"activation_alpha", std::vector<float>{0.2f}},
                 {"clip", 0.5f}});
  checkLayer(makeLayer(Kind::RNN, "bidirectional", true, true, false), {}, /*layout=*/1);
}

TEST_CASE("GRU converter: directions, linear_before_reset, activations", "[onnx][recurrent]") {
  for (std::string dir : {"forward", "reverse", "bidirectional"}) {
    CAPTURE(dir);
    checkLayer(makeLayer(Kind::GRU, dir, true, true, false), {});
    Layer l = makeLayer(Kind::GRU, dir, true, true, false);
    l.linearBeforeReset = true;
    checkLayer(l, {{"linear_before_reset", int64_t(1)}});
  }
  Layer l = makeLayer(Kind::GRU, "bidirectional", false, false, false);
  l.acts = {{"HardSigmoid", 0.3, 0.4}, {"Relu"}, {"Sigmoid"}, {"Tanh"}};
  checkLayer(l,
             {{"activations", std::vector<std::string>{"HardSigmoid", "Relu", "Sigmoid", "Tanh"}},
              {"activation_alpha", std::vector<float>{0.3f}},
              {"activation_beta", std::vector<float>{0.4f}}});
  checkLayer(makeLayer(Kind::GRU, "bidirectional", true, true, false), {}, /*layout=*/1);
}

TEST_CASE("LSTM converter: directions, peepholes, initial states, clip", "[onnx][recurrent]") {
  for (std::string dir : {"forward", "reverse", "bidirectional"}) {
    CAPTURE(dir);
    checkLayer(makeLayer(Kind::LSTM, dir, false, false, false), {});
    checkLayer(makeLayer(Kind::LSTM, dir, true, true, true), {});
  }
  Layer l = makeLayer(Kind::LSTM, "bidirectional", true, true, true);
  l.clip = 0.3;
  checkLayer(l, {{"clip", 0.3f}});
  checkLayer(makeLayer(Kind::LSTM, "bidirectional", true, true, true), {}, /*layout=*/1);
}

TEST_CASE("LSTM converter: the core lstm op, folded, in layout 1 and without bias",
          "[onnx][recurrent]") {
  // Default activations, no peepholes or clip: these go through the core op
  // lstm (its reference kernel folds them), the others above unroll.
  for (std::string dir : {"forward", "reverse", "bidirectional"}) {
    CAPTURE(dir);
    checkLayer(makeLayer(Kind::LSTM, dir, true, false, false), {});
    checkLayer(makeLayer(Kind::LSTM, dir, false, true, false), {}, /*layout=*/1);
  }
}

TEST_CASE("LSTM converter: one lstm op when the core op expresses it, else a loop",
          "[onnx][recurrent]") {
  Layer l = makeLayer(Kind::LSTM, "forward", true, false, false);
  const int64_t H = l.H;
  auto convert = [&](AttrMap attrs, bool peepholes) {
    std::vector<ir::Expr> in = {
        ir::makeVar("x", ir::Type::tensor(ir::DType::F32, {l.S, l.B, l.I})),
        ir::makeConstant(f32({1, 4 * H, l.I}, l.w)),
        ir::makeConstant(f32({1, 4 * H, H}, l.r)),
        ir::makeConstant(f32({1, 8 * H}, l.b)),
        nullptr,
        nullptr,
        nullptr,
        peepholes ? ir::makeConstant(f32({1, 3 * H}, randomVec(size_t(3 * H), 3))) : nullptr};
    attrs["hidden_size"] = H;
    auto out = test::convertNode("LSTM", in, attrs, 3);
    if (!out.ok())
      FAIL("conversion failed: " << out.error().str());
    return countOps(*out);
  };
  auto whole = convert({}, false);
  CHECK(whole["lstm"] == 1);
  CHECK(whole["dense"] == 0);
  // The others: a loop over the cell (its products with R inside the body),
  // the input projection of all steps outside it; never unrolled.
  auto peep = convert({}, true);
  CHECK(peep["lstm"] == 0);
  CHECK(peep["loop"] == 1);
  CHECK(peep["dense"] == 1);
  auto clipped = convert({{"clip", 0.5f}}, false);
  CHECK(clipped["lstm"] == 0);
  CHECK(clipped["loop"] == 1);
  auto acts = convert({{"activations", std::vector<std::string>{"Sigmoid", "Tanh", "Relu"}}}, false);
  CHECK(acts["lstm"] == 0);
  CHECK(acts["loop"] == 1);
}

TEST_CASE("GRU and RNN converters: one core op when it expresses them, else a loop",
          "[onnx][recurrent]") {
  const int64_t S = 4, B = 2, I = 3, H = 5;
  auto convert = [&](Kind kind, AttrMap attrs) {
    const int64_t G = kind == Kind::GRU ? 3 : 1;
    std::vector<ir::Expr> in = {
        ir::makeVar("x", ir::Type::tensor(ir::DType::F32, {S, B, I})),
        ir::makeConstant(f32({1, G * H, I}, randomVec(size_t(G * H * I), 1))),
        ir::makeConstant(f32({1, G * H, H}, randomVec(size_t(G * H * H), 2))),
        ir::makeConstant(f32({1, 2 * G * H}, randomVec(size_t(2 * G * H), 3)))};
    attrs["hidden_size"] = H;
    auto out = test::convertNode(opName(kind), in, attrs, 2);
    if (!out.ok())
      FAIL("conversion failed: " << out.error().str());
    return countOps(*out);
  };
  auto gru = convert(Kind::GRU, {{"linear_before_reset", int64_t(1)}});
  CHECK(gru["gru"] == 1);
  CHECK(gru["dense"] == 0);
  auto rnn = convert(Kind::RNN, {{"activations", std::vector<std::string>{"Relu"}}});
  CHECK(rnn["rnn"] == 1);
  CHECK(rnn["dense"] == 0);
  // The others: one loop over the cell per direction, the input projection
  // outside it; never unrolled.
  auto gruActs = convert(Kind::GRU, {{"activations", std::vector<std::string>{"HardSigmoid",
                                                                               "Tanh"}}});
  CHECK(gruActs["gru"] == 0);
  CHECK(gruActs["loop"] == 1);
  CHECK(gruActs["dense"] == 1);
  auto rnnClip = convert(Kind::RNN, {{"clip", 0.5f}});
  CHECK(rnnClip["rnn"] == 0);
  CHECK(rnnClip["loop"] == 1);
  auto rnnLeaky = convert(Kind::RNN, {{"activations", std::vector<std::string>{"LeakyRelu"}}});
  CHECK(rnnLeaky["rnn"] == 0);
  CHECK(rnnLeaky["loop"] == 1);
}

TEST_CASE("Recurrent converters: sequence_lens", "[onnx][recurrent]") {
  Layer l = makeLayer(Kind::RNN, "forward", false, false, false);
  auto inputs = [&](ir::Expr lens) {
    return std::vector<ir::Expr>{ir::makeConstant(f32({3, 2, 3}, l.x)),
                                 ir::makeConstant(f32({1, 4, 3}, l.w)),
                                 ir::makeConstant(f32({1, 4, 4}, l.r)), nullptr, lens};
  };
  AttrMap attrs{{"hidden_size", int64_t(4)}};
  SECTION("all equal to the sequence length: accepted") {
    auto out = test::convertNode("RNN", inputs(ir::makeConstant(i64({2}, {3, 3}))), attrs, 2);
    REQUIRE(out.ok());
  }
  SECTION("shorter sequences are an error") {
    auto out = test::convertNode("RNN", inputs(ir::makeConstant(i64({2}, {3, 2}))), attrs, 2);
    REQUIRE(!out.ok());
    CHECK(out.error().str() ==
          "node 'n0' (RNN): input 4 ('sequence_lens') has value 2 for batch 1; only lengths "
          "equal to the sequence length 3 are supported");
  }
  SECTION("a sequence_lens that is not a constant") {
    auto lens = ir::makeVar("lens", ir::Type::tensor(ir::DType::I32, {2}));
    auto out = test::convertNode("RNN", inputs(lens), attrs, 2);
    REQUIRE(!out.ok());
    CHECK(out.error().str() == "node 'n0' (RNN): input 4 ('sequence_lens') must be a constant "
                               "(it decides the output shape)");
  }
}

TEST_CASE("Recurrent converters: symbolic dims", "[onnx][recurrent]") {
  // X [S, B, I] with S or B a symbol: the lstm op loops over a symbolic
  // sequence length; absent initial states over a symbolic batch are zeros
  // broadcast to it; the loop over a cell takes both symbolic too.
  Layer l = makeLayer(Kind::LSTM, "forward", true, false, false);
  const int64_t H = l.H;
  auto sym = ir::namedSymbol("T", 1, 9);
  REQUIRE(sym);
  auto run = [&](Kind kind, ir::Shape xShape, bool states, bool peepholes = false) {
    const int64_t G = kind == Kind::GRU ? 3 : 4, B = xShape[1];
    ir::Shape sShape{1, B, H};
    std::vector<ir::Expr> in = {
        ir::makeVar("x", ir::Type::tensor(ir::DType::F32, xShape)),
        ir::makeConstant(f32({1, G * H, l.I}, randomVec(size_t(G * H * l.I), 1))),
        ir::makeConstant(f32({1, G * H, H}, randomVec(size_t(G * H * H), 2))),
        nullptr,
        nullptr,
        states ? ir::makeVar("h0", ir::Type::tensor(ir::DType::F32, sShape)) : nullptr};
    if (kind == Kind::LSTM) {
      in.push_back(states ? ir::makeVar("c0", ir::Type::tensor(ir::DType::F32, sShape)) : nullptr);
      in.push_back(peepholes ? ir::makeConstant(f32({1, 3 * H}, randomVec(size_t(3 * H), 3)))
                             : nullptr);
    }
    return test::convertNode(opName(kind), in, {{"hidden_size", H}}, kind == Kind::LSTM ? 3 : 2);
  };
  auto lstmSeq = run(Kind::LSTM, {*sym, l.B, l.I}, false);
  INFO((lstmSeq.ok() ? "" : lstmSeq.error().str()));
  REQUIRE(lstmSeq.ok());
  CHECK((*lstmSeq)[0]->type() == ir::Type::tensor(ir::DType::F32, {*sym, 1, l.B, H}));
  CHECK(run(Kind::LSTM, {l.S, *sym, l.I}, true).ok());
  // Absent states over a symbolic batch: zeros broadcast to it.
  auto noStates = run(Kind::LSTM, {l.S, *sym, l.I}, false);
  INFO((noStates.ok() ? "" : noStates.error().str()));
  REQUIRE(noStates.ok());
  CHECK((*noStates)[1]->type() == ir::Type::tensor(ir::DType::F32, {1, *sym, H}));
  // A GRU the core op gru expresses loops over a symbolic sequence too.
  auto gru = run(Kind::GRU, {*sym, l.B, l.I}, false);
  INFO((gru.ok() ? "" : gru.error().str()));
  REQUIRE(gru.ok());
  CHECK((*gru)[0]->type() == ir::Type::tensor(ir::DType::F32, {*sym, 1, l.B, H}));
  CHECK(run(Kind::GRU, {l.S, *sym, l.I}, false).ok());
  // A recurrence that no core op expresses loops over its cell, over a
  // symbolic sequence length too; its scanned states need a static batch.
  auto peep = run(Kind::LSTM, {*sym, l.B, l.I}, false, true);
  INFO((peep.ok() ? "" : peep.error().str()));
  REQUIRE(peep.ok());
  CHECK((*peep)[0]->type() == ir::Type::tensor(ir::DType::F32, {*sym, 1, l.B, H}));
  auto peepBatch = run(Kind::LSTM, {l.S, *sym, l.I}, true, true);
  REQUIRE(!peepBatch.ok());
  CHECK(peepBatch.error().str() ==
        "node 'n0' (LSTM): X has the symbolic batch T(1, 9): this LSTM runs as a loop over its "
        "cell, whose scanned states need a static batch; bind it (--input-shape)");
}
