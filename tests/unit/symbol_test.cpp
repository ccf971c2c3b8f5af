//===- tests/unit/symbol_test.cpp - Symbolic dims ------------------------===//
//
// Shapes with symbols (ir/symbol.h): relations evaluated at probe values,
// symbols kept where a dim only passes through, derived symbols where an op
// computes a dim, equal derivations recognised as equal, bounds carried,
// printing and parsing, and the reference interpreter's refusal of symbolic
// inputs (compiling them: compile_symbolic_test, compile_derived_test).
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include "interp/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/symbol.h"
#include "passes/pass_manager.h"

using namespace tessera;
using namespace tessera::ir;

namespace {

int64_t sym(std::string_view name, int64_t lo = 1, int64_t hi = kUnbounded) {
  auto d = namedSymbol(name, lo, hi);
  REQUIRE(d.ok());
  return *d;
}

Expr call(std::string_view op, std::vector<Expr> args, Attrs attrs = {}) {
  auto c = makeCall(op, std::move(args), std::move(attrs));
  INFO((c.ok() ? std::string() : c.error().str()));
  REQUIRE(c.ok());
  return *c;
}

Attrs convAttrs(int64_t stride, int64_t pad) {
  Attrs a;
  a.set("strides", std::vector<int64_t>{stride, stride});
  a.set("pads", std::vector<int64_t>{pad, pad, pad, pad});
  return a;
}

} // namespace

TEST_CASE("symbols: named symbols are interned by name and bounds", "[symbol]") {
  const int64_t n = sym("N"), n8 = sym("N", 1, 8);
  CHECK(isSymbol(n));
  CHECK(n == sym("N"));
  CHECK(n != n8);
  CHECK(symbolInfo(n8).hi == 8);
  CHECK(dimStr(n) == "N");
  CHECK(dimStr(n8) == "N(1, 8)");
  CHECK(namedSymbol("3x").error().message().find("not a symbol name") != std::string::npos);
  CHECK(namedSymbol("H", 4, 2).error().message() == "symbol 'H': bounds 4..2 are not a range of "
                                                    "sizes");
  CHECK(Type::tensor(DType::F32, {n, 3}).str() == "f32[N, 3]");
  CHECK_FALSE(Type::tensor(DType::F32, {n, 3}).isStatic());
}

// Found by fuzz/symbolic.cpp: H(1..) and H(3..) share probe values (they
// follow the name), so the pooled dim of one model was the interned derived
// symbol of another, whose formula named the other H, and a process that
// compiled both refused the second ("symbol 'H' is no input's dim").
TEST_CASE("symbols: a dim derived from a symbol is not one derived from another of its name",
          "[symbol]") {
  const int64_t h1 = sym("Hd"), h3 = sym("Hd", 3);
  REQUIRE(h1 != h3);
  auto pooled = [](int64_t h) {
    Var x = makeVar("x", Type::tensor(DType::F32, {1, 1, h, 4}));
    Attrs a;
    a.set("pool_size", AttrValue(std::vector<int64_t>{2, 2}));
    a.set("strides", AttrValue(std::vector<int64_t>{2, 2}));
    auto call = makeCall("max_pool2d", {x}, a);
    REQUIRE(call.ok());
    return (*call)->type().shape()[2];
  };
  const int64_t p1 = pooled(h1), p3 = pooled(h3);
  REQUIRE((isSymbol(p1) && isSymbol(p3)));
  CHECK(p1 != p3);
  CHECK(symbolInfo(p1).named == std::vector<int64_t>{h1});
  CHECK(symbolInfo(p3).named == std::vector<int64_t>{h3});
  CHECK(pooled(h1) == p1); // still interned within one symbol's dims
}

TEST_CASE("symbols: relations keep symbols that pass through and derive the others",
          "[symbol]") {
  const int64_t n = sym("N", 1, 8), h = sym("H", 32, 640), w = sym("W", 32, 640);
  Var x = makeVar("x", Type::tensor(DType::F32, {n, 3, h, w}));
  Expr k3 = makeConstant(Tensor(DType::F32, {8, 3, 3, 3}));
  Expr k1 = makeConstant(Tensor(DType::F32, {8, 3, 1, 1}));

  // A same-padded 3x3 convolution keeps H and W.
  Expr same = call("conv2d", {x, k3}, convAttrs(1, 1));
  CHECK(same->type().shape() == Shape{n, 8, h, w});
  CHECK(same->type().str() == "f32[N(1, 8), 8, H(32, 640), W(32, 640)]");

  // Stride 2: a derived dim, with bounds from H's (32..640 -> 16..320).
  Expr down3 = call("conv2d", {x, k3}, convAttrs(2, 1));
  const int64_t h2 = down3->type().shape()[2];
  REQUIRE(isSymbol(h2));
  CHECK(symbolInfo(h2).derived());
  CHECK(symbolInfo(h2).lo == 16);
  CHECK(symbolInfo(h2).hi == 320);
  CHECK(dimStr(h2).starts_with("?"));
  // ResNet's shortcut: a 1x1 stride-2 convolution without padding computes
  // the same size by another formula; the two are one symbol, so the
  // residual add type-checks.
  Expr down1 = call("conv2d", {x, k1}, convAttrs(2, 0));
  CHECK(down1->type() == down3->type());
  Expr sum = call("add", {down3, down1});
  CHECK(sum->type() == down3->type());
  // A different formula is a different symbol: stride 2 without padding on a
  // 3x3 kernel is floor((H - 3) / 2) + 1, one less than the above for odd H.
  Expr valid = call("conv2d", {x, k3}, convAttrs(2, 0));
  CHECK(valid->type().shape()[2] != h2);
  auto mismatch = makeCall("add", {down3, valid});
  REQUIRE_FALSE(mismatch.ok());
  INFO(mismatch.error().str());
  CHECK(mismatch.error().str().find("cannot broadcast") != std::string::npos);
  CHECK(mismatch.error().str().find("; with N(1, 8) = ") != std::string::npos);

  // Pooling to 1x1 and flattening: the batch stays N.
  Expr pooled = call("global_avg_pool2d", {same});
  CHECK(pooled->type().shape() == Shape{n, 8, 1, 1});
  Attrs flat;
  flat.set("newshape", std::vector<int64_t>{0, -1});
  Expr flattened = call("reshape", {pooled}, flat);
  CHECK(flattened->type().shape() == Shape{n, 8});
  // Concatenating along the batch: 2N, with bounds 2..16.
  Attrs axis0;
  axis0.set("axis", int64_t(0));
  Expr both = call("concat", {flattened, flattened}, axis0);
  const int64_t twoN = both->type().shape()[0];
  REQUIRE(symbolInfo(twoN).derived());
  CHECK(symbolInfo(twoN).lo == 2);
  CHECK(symbolInfo(twoN).hi == 16);

  // A reshape that fixes the batch is refused, naming the probe values.
  Attrs fixed;
  fixed.set("newshape", std::vector<int64_t>{1, 8});
  auto pinned = makeCall("reshape", {flattened}, fixed);
  REQUIRE_FALSE(pinned.ok());
  CHECK(pinned.error().str().find("(inputs: f32[N(1, 8), 8]; with N(1, 8) = ") !=
        std::string::npos);

  // The function verifies, and prints and parses back to the same text.
  Module m;
  m.set("main", makeFunction({x}, sum));
  REQUIRE(passes::verifyModule(m).ok());
  const std::string text = printModule(m);
  CHECK(text.find("def @main(%x: f32[N(1, 8), 3, H(32, 640), W(32, 640)]) -> f32[N(1, 8), 8, " +
                  dimStr(h2)) != std::string::npos);
  auto parsed = parseModule(text, "sym.tir");
  INFO(text);
  REQUIRE(parsed.ok());
  CHECK(printModule(*parsed) == text);
}

TEST_CASE("symbols: the interpreter runs symbolic inputs; each symbol has one value",
          "[symbol]") {
  // The same model over symbols and at fixed sizes (the reference).
  auto over = [](const std::string &n, const std::string &h) {
    return parseModule(fmt::format(R"(module @s
def @main(%x: f32[{0}, 4, {1}, 8], %y: f32[{0}, 4, 8, 8]) -> f32[{0}, 4, 8, 8] {{
  %r = relu(%x)
  %p = max_pool2d(%r) {{pool_size=[2, 1], strides=[2, 1]}}
  %q = resize2d(%p) {{size=[8, 8]}}
  %s = add(%q, %y)
  return %s
}}
)",
                                   n, h));
  };
  auto m = over("batch", "H");
  REQUIRE(m.ok());
  auto fixed = over("2", "6");
  REQUIRE(fixed.ok());
  Tensor x(DType::F32, {2, 4, 6, 8}), y(DType::F32, {2, 4, 8, 8});
  for (int64_t i = 0; i < x.numel(); ++i)
    x.setDouble(i, double(i % 13) - 6);
  for (int64_t i = 0; i < y.numel(); ++i)
    y.setDouble(i, double(i % 7));
  auto run = interp::run(*m, {x, y}, "main");
  REQUIRE(run.ok());
  auto want = interp::run(*fixed, {x, y}, "main");
  REQUIRE(want.ok());
  CHECK(run->tensor.shape() == Shape{2, 4, 8, 8});
  for (int64_t i = 0; i < want->tensor.numel(); ++i)
    REQUIRE(run->tensor.getDouble(i) == want->tensor.getDouble(i));
  // Inputs that give one symbol two values are refused by name.
  auto conflict = interp::run(*m, {x, Tensor(DType::F32, {3, 4, 8, 8})}, "main");
  REQUIRE_FALSE(conflict.ok());
  CHECK_THAT(conflict.error().str(),
             Catch::StartsWith("input 'y' (#1) dim 0: batch = 3, but it was 2 before"));
}
