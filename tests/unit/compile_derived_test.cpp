//===- unit/compile_derived_test.cpp - One artifact for every image size ---===//
//
// Models whose dims are computed from symbols (a strided convolution's output
// height over a symbolic H: derived symbols, compile/symbol_formulas.h)
// compiled once and run by one session at many sizes, every output compared
// with the reference interpreter on the same model built over that size
// (|a-b| <= 1e-5 + 1e-5 |b|); the run-time refusal of an input too small for
// the model, naming the op; the compiler's refusal of a dim no formula of
// its form computes; the plan's derived symbols through JSON.
//
//===----------------------------------------------------------------------===//
#include <catch2/catch.hpp>

#include "compile/symbol_formulas.h"
#include "ir/symbol.h"
#include "runtime/plan.h"
#include "symbolic_test_util.h"

#include <random>
#include <regex>

using namespace tessera;
using namespace tessera::test;

namespace {

ir::Attrs attrs(std::initializer_list<std::pair<const char *, ir::AttrValue>> list) {
  ir::Attrs a;
  for (const auto &[k, v] : list)
    a.set(k, v);
  return a;
}

using Ints = std::vector<int64_t>;

int64_t symbol(const char *name, int64_t lo, int64_t hi) {
  auto s = ir::namedSymbol(name, lo, hi);
  REQUIRE(s.ok());
  return *s;
}

/// A small CNN over x (N, 3, H, W) whose every spatial dim after the input
/// is computed from H and W: strided, padded, dilated and ceil-mode windows,
/// a residual add of two paths that compute the same dims, a concat along
/// H (a sum), global pools and a dense head. Built over `x`'s type, so that
/// the same function gives the symbolic model and each fixed-size one.
ir::Module cnnOver(const ir::Type &x) {
  std::mt19937 rng{7};
  auto weight = [&](ir::Shape s) {
    return ir::makeConstant(randomTensor(ir::Type::tensor(ir::DType::F32, std::move(s)), rng));
  };
  auto call = [](const char *op, std::vector<ir::Expr> args, ir::Attrs a = {}) {
    return ir::expectOk(ir::makeCall(op, std::move(args), std::move(a), op));
  };
  ir::Var in = ir::makeVar("x", x);
  ir::Expr c1 = call("conv2d", {in, weight({8, 3, 3, 3})},
                     attrs({{"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}}));
  ir::Expr r1 = call("relu", {call("bias_add", {c1, weight({8})}, attrs({{"axis", int64_t(1)}}))});
  ir::Expr p1 = call("max_pool2d", {r1},
                     attrs({{"pool_size", Ints{3, 3}},
                            {"strides", Ints{2, 2}},
                            {"pads", Ints{1, 1, 1, 1}}}));
  ir::Expr c2 = call("conv2d", {p1, weight({8, 8, 3, 3})},
                     attrs({{"dilation", Ints{2, 2}}, {"pads", Ints{2, 2, 2, 2}}}));
  ir::Expr a = call("add", {p1, c2});
  ir::Expr q = call("avg_pool2d", {a},
                    attrs({{"pool_size", Ints{2, 2}}, {"strides", Ints{2, 2}}, {"ceil_mode", true}}));
  ir::Expr c3 = call("conv2d", {in, weight({8, 3, 5, 5})}, attrs({{"strides", Ints{3, 3}}}));
  ir::Expr g = call("concat", {call("global_avg_pool2d", {q}), call("global_avg_pool2d", {c3})},
                    attrs({{"axis", int64_t(1)}}));
  ir::Expr d = call("dense", {call("flatten", {g}), weight({5, 16})});
  ir::Expr stacked = call("concat", {q, call("sigmoid", {q})}, attrs({{"axis", int64_t(2)}}));
  ir::Module m("cnn");
  m.set("main", ir::makeFunction({in}, ir::makeTuple({d, stacked, c3})));
  return m;
}

/// x (N, 3, H, W) through a strided conv, then resized back to H x W (the
/// segmentation models' head): the resize's taps depend on both sizes.
ir::Module upsampleOver(const ir::Type &x, const std::string &mode, const std::string &coord) {
  std::mt19937 rng{11};
  ir::Var in = ir::makeVar("x", x);
  ir::Expr w = ir::makeConstant(
      randomTensor(ir::Type::tensor(ir::DType::F32, {3, 3, 3, 3}), rng));
  ir::Expr c = ir::expectOk(ir::makeCall(
      "conv2d", {in, w}, attrs({{"strides", Ints{3, 2}}, {"pads", Ints{1, 1, 1, 1}}}), "down"));
  ir::Expr up = ir::expectOk(ir::makeCall(
      "resize2d", {c},
      attrs({{"size", Ints{x.shape()[2], x.shape()[3]}},
             {"mode", mode},
             {"coordinate_transformation_mode", coord}}),
      "up"));
  ir::Module m("up");
  m.set("main", ir::makeFunction({in}, ir::expectOk(ir::makeCall("add", {up, in}))));
  return m;
}

/// A strided conv, then resized by scales (ONNX Resize by `scales`, as
/// F.interpolate(scale_factor=...) exports it): output dims floor(s * dim).
ir::Module scaleUpOver(const ir::Type &x) {
  std::mt19937 rng{17};
  ir::Var in = ir::makeVar("x", x);
  ir::Expr w = ir::makeConstant(
      randomTensor(ir::Type::tensor(ir::DType::F32, {4, 3, 3, 3}), rng));
  ir::Expr c = ir::expectOk(
      ir::makeCall("conv2d", {in, w}, attrs({{"strides", Ints{2, 2}}}), "down"));
  ir::Expr up = ir::expectOk(ir::makeCall(
      "resize2d", {c},
      attrs({{"size", Ints{-1, -1}},
             {"scales", std::vector<double>{2.0, 1.5}},
             {"mode", std::string("linear")},
             {"coordinate_transformation_mode", std::string("asymmetric")}}),
      "up"));
  ir::Module m("scale");
  m.set("main", ir::makeFunction({in}, up));
  return m;
}

/// DeepLabV3's ASPP in small: a strided conv, then dilated 3x3 convs whose
/// outer taps read only padding when the map is no wider than the rate
/// (the kernel drops them at run time, simplify-inference at compile time).
ir::Module asppOver(const ir::Type &x) {
  std::mt19937 rng{13};
  auto weight = [&](ir::Shape s) {
    return ir::makeConstant(randomTensor(ir::Type::tensor(ir::DType::F32, std::move(s)), rng));
  };
  ir::Var in = ir::makeVar("x", x);
  ir::Expr down = ir::expectOk(ir::makeCall("conv2d", {in, weight({6, 3, 3, 3})},
                                            attrs({{"strides", Ints{4, 4}}}), "down"));
  std::vector<ir::Expr> branches;
  for (int64_t rate : {2, 4, 7})
    branches.push_back(ir::expectOk(ir::makeCall(
        "conv2d", {down, weight({4, 6, 3, 3})},
        attrs({{"dilation", Ints{rate, rate}}, {"pads", Ints{rate, rate, rate, rate}}}),
        "rate" + std::to_string(rate))));
  // Undilated 5x5: on a 2-wide map three of its five columns read the input
  // (a block whose weights are copied per run).
  branches.push_back(ir::expectOk(ir::makeCall("conv2d", {down, weight({4, 6, 5, 5})},
                                               attrs({{"pads", Ints{2, 2, 2, 2}}}), "wide")));
  ir::Module m("aspp");
  m.set("main", ir::makeFunction({in}, ir::expectOk(ir::makeCall(
                                            "concat", branches, attrs({{"axis", int64_t(1)}})))));
  return m;
}

ir::Type image(int64_t n, int64_t h, int64_t w) {
  return ir::Type::tensor(ir::DType::F32, {n, 3, h, w});
}

ir::Type symbolicImage() {
  const int64_t n = symbol("N", 1, 4);
  const int64_t h = symbol("H", 8, 64);
  const int64_t w = symbol("W", 8, 64);
  return ir::Type::tensor(ir::DType::F32, {n, 3, h, w});
}

} // namespace

TEST_CASE("derived dims: one artifact runs every image size and matches the interpreter",
          "[compile][symbol]") {
  auto model = compileModule(cnnOver(symbolicImage()));
  const runtime::Plan &plan = model->plan();
  size_t derived = 0;
  for (const runtime::PlanSymbol &s : plan.symbols)
    derived += s.derived();
  INFO(plan.str(plan.buffers[plan.outputs[1]].info));
  CHECK(derived >= 6); // c1's, p1's, q's and c3's H and W, and the concat's sum
  auto session = runtime::Session::create(model, {1});
  REQUIRE(session.ok());
  // Sizes that cross the strides' multiples, grow, shrink and repeat.
  for (auto [n, h, w] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {1, 8, 8}, {2, 17, 23}, {1, 64, 33}, {3, 31, 9}, {4, 64, 64}, {1, 9, 10}, {1, 9, 10}}) {
    INFO("N, H, W = " << n << ", " << h << ", " << w);
    checkAgainst(**session, cnnOver(image(n, h, w)), unsigned(h * 100 + w));
  }
  SECTION("every height from 8 to 40, two threads") {
    auto two = runtime::Session::create(model, {2});
    REQUIRE(two.ok());
    for (int64_t h = 8; h <= 40; ++h) {
      INFO("H = " << h);
      checkAgainst(**two, cnnOver(image(1, h, 12)), unsigned(h));
    }
  }
}

TEST_CASE("derived dims: resizing back to the input's size samples as the interpreter does",
          "[compile][symbol][resize2d]") {
  for (auto [mode, coord] : std::vector<std::pair<std::string, std::string>>{
           {"nearest", "asymmetric"},
           {"linear", "half_pixel"},
           {"linear", "align_corners"},
           {"cubic", "pytorch_half_pixel"}}) {
    INFO(mode << ", " << coord);
    auto model = compileModule(upsampleOver(symbolicImage(), mode, coord));
    auto session = runtime::Session::create(model, {2});
    REQUIRE(session.ok());
    for (auto [n, h, w] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
             {1, 8, 8}, {2, 13, 21}, {1, 40, 17}, {1, 9, 64}}) {
      INFO("N, H, W = " << n << ", " << h << ", " << w);
      checkAgainst(**session, upsampleOver(image(n, h, w), mode, coord), unsigned(h + w));
    }
  }
}

TEST_CASE("derived dims: a resize by scales makes dims floor(scale * size)",
          "[compile][symbol][resize2d]") {
  auto model = compileModule(scaleUpOver(symbolicImage()));
  auto session = runtime::Session::create(model, {1});
  REQUIRE(session.ok());
  for (auto [h, w] : std::vector<std::pair<int64_t, int64_t>>{{8, 8}, {13, 21}, {64, 37}}) {
    INFO("H, W = " << h << ", " << w);
    checkAgainst(**session, scaleUpOver(image(1, h, w)), unsigned(h + 3 * w));
  }
}

TEST_CASE("derived dims: dilated convs drop the taps that read only padding at each size",
          "[compile][symbol][conv2d]") {
  auto model = compileModule(asppOver(symbolicImage()));
  auto session = runtime::Session::create(model, {1});
  REQUIRE(session.ok());
  // Maps of 1x1 to 15x15: every tap, the centre only (a 1x1 conv on the
  // input), the centre row or column only (laid out by the lowering), other
  // blocks (copied per run).
  for (auto [h, w] : std::vector<std::pair<int64_t, int64_t>>{
           {8, 8}, {64, 64}, {12, 64}, {64, 12}, {20, 36}, {33, 9}}) {
    INFO("H, W = " << h << ", " << w);
    checkAgainst(**session, asppOver(image(1, h, w)), unsigned(h * w));
  }
}

TEST_CASE("derived dims: the scratch of symbols without upper bounds is sized per run",
          "[compile][symbol]") {
  // H and W with no upper bound: the convs' im2col and the resize's taps
  // grow with them, so their scratch is a plan symbol each run computes.
  const int64_t n = symbol("N", 1, 4), h = symbol("H", 8, ir::kUnbounded),
                w = symbol("W", 8, ir::kUnbounded);
  const ir::Type x = ir::Type::tensor(ir::DType::F32, {n, 3, h, w});
  for (const ir::Module &m : {cnnOver(x), upsampleOver(x, "linear", "half_pixel")}) {
    auto model = compileModule(m);
    size_t scratch = 0;
    for (const runtime::PlanSymbol &s : model->plan().symbols)
      scratch += s.name.ends_with(".scratch");
    CHECK(scratch >= 2);
    // Two threads: fused loops over 150x99 planes split their batch and
    // channel loop (N = 1) between them.
    auto session = runtime::Session::create(model, {2});
    REQUIRE(session.ok());
    for (auto [hh, ww] : std::vector<std::pair<int64_t, int64_t>>{{8, 8}, {300, 197}, {9, 12}}) {
      INFO("H, W = " << hh << ", " << ww);
      checkAgainst(**session,
                   m.name() == "cnn" ? cnnOver(image(1, hh, ww))
                                     : upsampleOver(image(1, hh, ww), "linear", "half_pixel"),
                   unsigned(hh * ww));
    }
  }
}

TEST_CASE("derived dims: an input too small for the model is refused naming the op",
          "[compile][symbol]") {
  const int64_t h = symbol("H", 1, 32);
  ir::Var x = ir::makeVar("x", ir::Type::tensor(ir::DType::F32, {1, 1, h, 4}));
  ir::Expr w = ir::makeConstant(ir::Tensor(ir::DType::F32, {2, 1, 5, 1}));
  ir::Expr c = ir::expectOk(ir::makeCall("conv2d", {x, w}, {}, "tall"));
  ir::Module m("m");
  m.set("main", ir::makeFunction({x}, c));
  auto model = compileModule(m);
  auto session = runtime::Session::create(model, {1});
  REQUIRE(session.ok());
  auto f32 = [](ir::Shape s) { return ir::Tensor(ir::DType::F32, std::move(s)); };
  CHECK(runError(**session, {f32({1, 1, 5, 4})}) == "");
  const std::string error = runError(**session, {f32({1, 1, 4, 4})});
  CHECK_THAT(error, Catch::StartsWith("dim 2 of conv2d 'tall'") &&
                        Catch::Contains("with H = 4 it would be 0, outside 1..28: the inputs are "
                                        "too small for this model"));
  // The session still runs sizes that fit.
  CHECK(runError(**session, {f32({1, 1, 32, 4})}) == "");
  auto out = (*session)->output(0);
  REQUIRE(out.ok());
  CHECK((*out)->shape[2] == 28);
}

TEST_CASE("derived dims: a dim no formula of its form computes is refused by name",
          "[compile][symbol]") {
  // H * H (a [H, H] map flattened): not floor((a*H + b) / c), clamped or not.
  const int64_t h = symbol("H", 1, 64);
  ir::Var x = ir::makeVar("x", ir::Type::tensor(ir::DType::F32, {1, h}));
  ir::Expr e = ir::expectOk(ir::makeCall("expand", {x}, attrs({{"shape", Ints{h, h}}}), "square"));
  ir::Expr flat = ir::expectOk(
      ir::makeCall("reshape", {e}, attrs({{"newshape", Ints{-1}}}), "flat"));
  ir::Module m("m");
  m.set("main", ir::makeFunction({x}, ir::expectOk(ir::makeCall("relu", {flat}))));
  auto r = compile::compileModule(m, {}, nullptr);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().str(), Catch::Contains("dim 0 of reshape 'flat'") &&
                                  Catch::Contains("it is not floor((a*H + b) / c), clamped or not"));
}

TEST_CASE("derived dims: a clamped dim (a slice of the first 10) runs below and above the clamp",
          "[compile][symbol]") {
  const int64_t h = symbol("H", 1, 64);
  ir::Var x = ir::makeVar("x", ir::Type::tensor(ir::DType::F32, {2, h}));
  ir::Expr s = ir::expectOk(ir::makeCall(
      "slice", {x}, attrs({{"starts", Ints{0}}, {"ends", Ints{10}}, {"axes", Ints{1}}}), "head"));
  ir::Module m("m");
  m.set("main", ir::makeFunction({x}, ir::expectOk(ir::makeCall("relu", {s}))));
  auto model = compileModule(m);
  bool clamped = false;
  for (size_t k = 0; k < model->plan().symbols.size(); ++k)
    clamped = clamped || runtime::symbolFormula(model->plan().symbols, k) == "min(H, 10)";
  CHECK(clamped);
  auto session = runtime::Session::create(model, {1});
  REQUIRE(session.ok());
  for (int64_t size : {1, 4, 9, 10, 11, 30, 64}) {
    INFO("H = " << size);
    std::mt19937 rng{unsigned(size)};
    const ir::Tensor in = randomTensor(ir::Type::tensor(ir::DType::F32, {2, size}), rng);
    REQUIRE((*session)->setInput(0, in.dl()).ok());
    REQUIRE((*session)->run().ok());
    auto want = interp::run(m, {in});
    REQUIRE(want.ok());
    auto out = (*session)->output(0);
    REQUIRE(out.ok());
    requireClose(ir::Tensor::copyOf(**out), want->tensor);
  }
}

TEST_CASE("derived dims: formulas survive the plan's JSON and bad ones are refused",
          "[compile][symbol]") {
  auto model = compileModule(cnnOver(symbolicImage()));
  const runtime::Plan &plan = model->plan();
  auto again = runtime::parsePlan(runtime::serializePlan(plan));
  REQUIRE(again.ok());
  REQUIRE(again->symbols.size() == plan.symbols.size());
  std::vector<int64_t> a(plan.symbols.size()), b(plan.symbols.size());
  a[0] = b[0] = 3, a[1] = b[1] = 41, a[2] = b[2] = 27; // N, H, W (first use: the input)
  REQUIRE(runtime::deriveSymbolValues(plan.symbols, a).ok());
  REQUIRE(runtime::deriveSymbolValues(again->symbols, b).ok());
  CHECK(a == b);

  runtime::Plan bad = plan;
  for (runtime::PlanSymbol &s : bad.symbols)
    if (s.derived() && !s.terms.empty()) {
      s.terms[0].symbols = {uint32_t(bad.symbols.size())};
      break;
    }
  auto refused = runtime::validatePlan(bad);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.error().str(), Catch::Contains("which is not an earlier one"));
  const std::string json = std::regex_replace(runtime::serializePlan(plan),
                                              std::regex(R"("divisor":\s*\d+)"), R"("divisor":0)",
                                              std::regex_constants::format_first_only);
  auto zero = runtime::parsePlan(json);
  REQUIRE_FALSE(zero.ok());
  CHECK_THAT(zero.error().str(), Catch::Contains(".divisor: 0 is not a positive divisor"));
}
