//===- unit/ops_control_test.cpp - if and loop ------------------------------===//
//
// The control-flow ops (ir/ops/control.cpp): their type relations and
// messages, text IR round trips, the reference interpreter, and compiled
// artifacts (Jump / LoopTest / Increment steps, runtime/plan.h) run by the
// runtime against the interpreter on inputs that take every path: both
// branches; zero, one and many iterations; carried values that swap; scan
// outputs of a run-time length (row copies and a SetSymbol step), up to
// their bound and refused past it, or without a bound, memory grown mid-run.
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include "compile/compile.h"
#include "interp/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/symbol.h"
#include "runtime/session.h"

using namespace tessera;
using test::f32;
using test::i64;

namespace {

ir::Tensor flag(bool v) {
  return ir::Tensor::fromInts(ir::DType::Bool, {}, std::vector<int64_t>{v ? 1 : 0});
}

ir::Module parse(const char *text) {
  auto m = ir::parseModule(text);
  if (!m.ok())
    FAIL(m.error().str());
  return std::move(m).value();
}

/// The model compiled (host only) and loaded.
std::shared_ptr<const runtime::LoadedModel> compileModel(const ir::Module &m) {
  auto r = compile::compileModule(m, {}, nullptr);
  if (!r.ok())
    FAIL(r.error().str());
  auto model = runtime::LoadedModel::load(r->artifact, "test.tsr");
  if (!model.ok())
    FAIL(model.error().str());
  return *model;
}

/// Runs `model` on `inputs` in `session` and compares every output with the
/// interpreter's on the same inputs (exact: the same f32 operations).
void runAndCompare(runtime::Session &session, const ir::Module &m,
                   const std::vector<ir::Tensor> &inputs) {
  std::vector<DLTensor> dl;
  for (const auto &t : inputs)
    dl.push_back(t.dl());
  for (size_t i = 0; i < dl.size(); ++i)
    REQUIRE(session.setInput(i, dl[i]).ok());
  auto ran = session.run();
  if (!ran.ok())
    FAIL(ran.error().str());
  auto want = interp::run(m, inputs);
  REQUIRE(want.ok());
  auto expected = want->flatten();
  for (size_t i = 0; i < expected.size(); ++i) {
    auto out = session.output(i);
    REQUIRE(out.ok());
    INFO("output " << i);
    CHECK(ir::Tensor::copyOf(**out).toDoubles() == expected[i].toDoubles());
  }
}

const char *kIf = R"(
def @main(%c: bool[], %x: f32[4], %y: f32[4]) -> (f32[4], f32[4]) {
  %t = fn(%a: f32[4], %b: f32[4]) -> (f32[4], f32[4]) {
    %s = add(%a, %b)
    %r = relu(%s)
    %o = tuple(%r, %a)
    return %o
  }
  %e = fn(%a: f32[4], %b: f32[4]) -> (f32[4], f32[4]) {
    %m = multiply(%a, %b)
    %o = tuple(%m, %m)
    return %o
  }
  %z = if(%c, %t, %e, %x, %y)
  %z0 = %z.0
  %z1 = %z.1
  %n = neg(%z0)
  %out = tuple(%n, %z1)
  return %out
}
)";

// (a, b) -> (a + b * k, a): the second carried value takes the first's
// previous value, which the same iteration overwrites (copied aside first).
const char *kLoop = R"(
def @main(%n: i64[], %a0: f32[3], %b0: f32[3], %k: f32[3]) -> (f32[3], f32[3]) {
  %yes = constant bool[] [true]
  %body = fn(%i: i64[], %c: bool[], %a: f32[3], %b: f32[3], %kk: f32[3]) -> (bool[], f32[3], f32[3]) {
    %bk = multiply(%b, %kk)
    %s = add(%a, %bk)
    %r = tuple(%c, %s, %a)
    return %r
  }
  %l = loop(%n, %yes, %body, %a0, %b0, %k) {carried=2}
  %x = %l.0
  %y = %l.1
  %o = tuple(%x, %y)
  return %o
}
)";

// Doubles a while sum(2a) < limit, at most n times (the count's bound is
// 8); scan outputs: each iteration's 2a and its index.
const char *kScanLoop = R"(
def @main(%n: i64[], %a0: f32[2], %limit: f32[]) -> (f32[2], f32[steps(0, 8), 2], i64[steps(0, 8)]) {
  %yes = constant bool[] [true]
  %body = fn(%i: i64[], %c: bool[], %a: f32[2], %lim: f32[]) -> (bool[], f32[2], f32[2], i64[]) {
    %two = constant f32[] [2]
    %d = multiply(%a, %two)
    %s = reduce_sum(%d) {axes=[], keepdims=false}
    %go = less(%s, %lim)
    %r = tuple(%go, %d, %d, %i)
    return %r
  }
  %l = loop(%n, %yes, %body, %a0, %limit) {carried=1, count=steps(0, 8), scans=2}
  %x = %l.0
  %ys = %l.1
  %is = %l.2
  %o = tuple(%x, %ys, %is)
  return %o
}
)";

/// kScanLoop with the count unbounded: the session grows the scan outputs'
/// memory as rows arrive.
std::string unboundedScanLoop() {
  std::string text = kScanLoop;
  for (size_t at; (at = text.find("steps(0, 8)")) != std::string::npos;)
    text.replace(at, 11, "steps(0)");
  return text;
}

} // namespace

TEST_CASE("if: both functions take the arguments and return one type", "[op][if]") {
  using ir::DType;
  using ir::Type;
  const Type b = Type::tensor(DType::Bool, {}), x = Type::tensor(DType::F32, {4});
  auto fn = [](std::vector<Type> params, Type result) {
    return Type::func(std::move(params), std::move(result));
  };
  CHECK(test::inferred("if", {b, fn({x}, x), fn({x}, x), x}) == x);
  CHECK(test::inferred("if", {Type::tensor(DType::I32, {1}), fn({}, x), fn({}, x)}) == x);
  CHECK(test::inferError("if", {x, fn({x}, x), fn({x}, x), x}) ==
        "if: the condition must be one bool or integer, got f32[4]");
  CHECK(test::inferError("if", {b, fn({x}, x), fn({}, x), x}) ==
        "if: the else branch takes 0 parameters, 1 are passed");
  CHECK(test::inferError("if", {b, fn({x}, x), fn({x}, b), x}) ==
        "if: the then branch returns f32[4], the else branch bool[]");
  CHECK(test::inferError("if", {b, x, fn({}, x)}) ==
        "if: the then branch must be a function, got f32[4]");
  CHECK(test::inferError("relu", {fn({}, x)}) == "relu: argument 0 must be a tensor, got fn() -> f32[4]");
}

TEST_CASE("loop: the body maps (iteration, cond, carried, captured) to (cond, carried)",
          "[op][loop]") {
  using ir::DType;
  using ir::Type;
  const Type b = Type::tensor(DType::Bool, {}), i = Type::tensor(DType::I64, {}),
             x = Type::tensor(DType::F32, {4});
  auto body = [&](std::vector<Type> extra, Type result) {
    std::vector<Type> params{i, b};
    params.insert(params.end(), extra.begin(), extra.end());
    return Type::func(std::move(params), std::move(result));
  };
  const ir::Attrs one{{"carried", int64_t(1)}};
  CHECK(test::inferred("loop", {i, b, body({x, x}, Type::tuple({b, x})), x, x}, one) ==
        Type::tuple({x}));
  CHECK(test::inferError("loop", {x, b, body({x}, Type::tuple({b, x})), x}, one) ==
        "loop: the trip count must be one i64, got f32[4]");
  CHECK(test::inferError("loop", {i, b, body({x}, Type::tuple({b, x})), x}, {}) ==
        "loop: missing required attribute 'carried' (int)");
  CHECK(test::inferError("loop", {i, b, body({x}, Type::tuple({b, x})), x},
                         {{"carried", int64_t(2)}}) ==
        "loop: attribute 'carried' is 2, but 1 values follow the body");
  CHECK(test::inferError("loop", {i, b, body({x}, Type::tuple({b, b})), x}, one) ==
        "loop: carried value 0 enters the loop as f32[4] but the body returns bool[] (a carried "
        "value keeps its type)");
  CHECK(test::inferError("loop", {i, b, body({x}, x), x}, one) ==
        "loop: the body must return a tuple of the condition, 1 carried values and 0 scan "
        "slices, got f32[4]");
  CHECK(test::inferError("loop", {i, b, Type::func({b, b, x}, Type::tuple({b, x})), x}, one) ==
        "loop: the body's first parameter (the iteration) must be i64[], got bool[]");
}

TEST_CASE("loop: scan outputs stack the body's slices on a run-time count", "[op][loop]") {
  using ir::DType;
  using ir::Type;
  const Type b = Type::tensor(DType::Bool, {}), i = Type::tensor(DType::I64, {}),
             x = Type::tensor(DType::F32, {4});
  auto symbol = ir::runtimeSymbol("steps", 8);
  REQUIRE(symbol.ok());
  const int64_t steps = *symbol;
  const ir::Attrs scans{{"carried", int64_t(1)}, {"scans", int64_t(2)}, {"count", steps}};
  const Type body = Type::func({i, b, x}, Type::tuple({b, x, x, i}));
  CHECK(test::inferred("loop", {i, b, body, x}, scans) ==
        Type::tuple({x, Type::tensor(DType::F32, {steps, 4}), Type::tensor(DType::I64, {steps}),
                     Type::tensor(DType::I64, {1})}));
  CHECK(test::inferError("loop", {i, b, body, x}, {{"carried", int64_t(1)}, {"scans", int64_t(2)}}) ==
        "loop: attribute 'count' = -1 must be a size (a run-time symbol): the loop has 2 scan "
        "outputs");
  CHECK(test::inferError("loop", {i, b, body, x}, {{"carried", int64_t(1)}, {"scans", int64_t(1)},
                                                   {"count", steps}}) ==
        "loop: the body must return a tuple of the condition, 1 carried values and 1 scan slices, "
        "got (bool[], f32[4], f32[4], i64[])");
  auto n = ir::namedSymbol("N", 1, 4);
  REQUIRE(n.ok());
  const Type symbolic = Type::tensor(DType::F32, {*n});
  CHECK(test::inferError("loop", {i, b, Type::func({i, b, x}, Type::tuple({b, x, symbolic})), x},
                         {{"carried", int64_t(1)}, {"scans", int64_t(1)}, {"count", steps}}) ==
        "loop: scan slice 0 must be a tensor of static shape, the body returns f32[N(1, 4)]");
}

TEST_CASE("loop: scan outputs compiled, the runtime matches the interpreter at every length",
          "[op][loop]") {
  ir::Module m = parse(kScanLoop);
  const std::string printed = ir::printModule(m);
  CHECK(ir::printModule(parse(printed.c_str())) == printed);
  auto model = compileModel(m);
  const auto &plan = model->plan();
  CHECK(std::count_if(plan.steps.begin(), plan.steps.end(), [](const runtime::Step &s) {
          return s.kind == runtime::StepKind::Copy && s.args.size() == 3;
        }) == 2);
  CHECK(std::count_if(plan.steps.begin(), plan.steps.end(), [](const runtime::Step &s) {
          return s.kind == runtime::StepKind::SetSymbol;
        }) == 1);
  auto session = runtime::Session::create(model, {1});
  REQUIRE(session.ok());
  const ir::Tensor a0 = f32({2}, {1, 1});
  auto limit = [](double v) { return f32({}, {v}); };
  // 3, 0, 8 iterations (the trip count), 4 (the data stops it: sum 32 >=
  // 20), 0 again: the scan outputs' length changes from run to run.
  const std::vector<std::pair<int64_t, double>> cases = {
      {3, 1e9}, {0, 1e9}, {8, 1e9}, {8, 20}, {0, 20}};
  for (auto [trips, lim] : cases) {
    INFO("trip count " << trips << ", limit " << lim);
    runAndCompare(**session, m, {i64({}, {trips}), a0, limit(lim)});
    auto ys = (*session)->output(1);
    REQUIRE(ys.ok());
    CHECK((*ys)->shape[0] == (lim == 20 && trips == 8 ? 4 : trips));
  }
  // Nine iterations do not fit the eight rows the scan outputs were planned
  // for: refused, not overrun; the interpreter refuses the count too.
  auto want = interp::run(m, {i64({}, {9}), a0, limit(1e9)});
  REQUIRE(!want.ok());
  CHECK_THAT(want.error().str(), Catch::Contains("steps(0, 8) = 9 is outside its bounds 0..8"));
  std::vector<ir::Tensor> in = {i64({}, {9}), a0, limit(1e9)};
  for (size_t k = 0; k < in.size(); ++k) {
    DLTensor t = in[k].dl();
    REQUIRE((*session)->setInput(k, t).ok());
  }
  auto ran = (*session)->run();
  REQUIRE(!ran.ok());
  CHECK_THAT(ran.error().str(), Catch::Contains("(loop 'l': scan output 0): row 8 is past the 8 "
                                                "rows memory was planned for"));
  // The session still runs after the refusal.
  runAndCompare(**session, m, {i64({}, {2}), a0, limit(1e9)});
}

TEST_CASE("if and loop: text IR round trip and the interpreter", "[op][if][loop]") {
  for (const char *text : {kIf, kLoop}) {
    ir::Module m = parse(text);
    const std::string printed = ir::printModule(m);
    ir::Module again = parse(printed.c_str());
    CHECK(ir::printModule(again) == printed);
  }
  ir::Module m = parse(kIf);
  const ir::Tensor x = f32({4}, {-1, 2, -3, 4}), y = f32({4}, {0.5, -4, 1, 1});
  auto then = interp::run(m, {flag(true), x, y});
  REQUIRE(then.ok());
  CHECK(then->flatten()[0].toDoubles() == std::vector<double>{0, 0, 0, -5}); // -relu(x + y)
  CHECK(then->flatten()[1].toDoubles() == x.toDoubles());
  auto otherwise = interp::run(m, {flag(false), x, y});
  REQUIRE(otherwise.ok());
  CHECK(otherwise->flatten()[0].toDoubles() == std::vector<double>{0.5, 8, 3, -4}); // -(x * y)

  ir::Module l = parse(kLoop);
  const ir::Tensor a0 = f32({3}, {0, 1, 2}), b0 = f32({3}, {1, 1, 1}), k = f32({3}, {1, 2, 0.5});
  auto out = interp::run(l, {i64({}, {3}), a0, b0, k});
  REQUIRE(out.ok());
  // (a, b) -> (a + b k, a), three times: k = 1: (0,1) (1,0) (1,1) (2,1);
  // k = 2: (1,1) (3,1) (5,3) (11,5); k = 0.5: (2,1) (2.5,2) (3.5,2.5) (4.75,3.5)
  CHECK(out->flatten()[0].toDoubles() == std::vector<double>{2, 11, 4.75});
  CHECK(out->flatten()[1].toDoubles() == std::vector<double>{1, 5, 3.5});
}

TEST_CASE("if: compiled, both branches run by the runtime match the interpreter", "[op][if]") {
  ir::Module m = parse(kIf);
  auto model = compileModel(m);
  const auto &plan = model->plan();
  CHECK(std::count_if(plan.steps.begin(), plan.steps.end(), [](const runtime::Step &s) {
          return s.kind == runtime::StepKind::Jump;
        }) == 2);
  auto session = runtime::Session::create(model, {1});
  REQUIRE(session.ok());
  const ir::Tensor x = f32({4}, {-1, 2, -3, 4}), y = f32({4}, {0.5, -4, 1, 1});
  // One session, the branch changing from run to run.
  for (bool c : {true, false, false, true}) {
    INFO("cond " << c);
    runAndCompare(**session, m, {flag(c), x, y});
  }
}

TEST_CASE("loop: compiled, the runtime matches the interpreter for every trip count",
          "[op][loop]") {
  ir::Module m = parse(kLoop);
  auto model = compileModel(m);
  auto session = runtime::Session::create(model, {1});
  REQUIRE(session.ok());
  const ir::Tensor a0 = f32({3}, {0, 1, 2}), b0 = f32({3}, {1, 1, 1}), k = f32({3}, {1, 2, 0.5});
  for (int64_t n : {0, 1, 2, 3, 17, 0, 5}) {
    INFO("trip count " << n);
    runAndCompare(**session, m, {i64({}, {n}), a0, b0, k});
  }
}

TEST_CASE("loop: unbounded scan outputs grow mid-run and match the interpreter", "[op][loop]") {
  const std::string text = unboundedScanLoop();
  ir::Module m = parse(text.c_str());
  auto model = compileModel(m);
  const auto &plan = model->plan();
  auto sym = std::find_if(plan.symbols.begin(), plan.symbols.end(),
                          [](const runtime::PlanSymbol &s) { return s.name == "steps"; });
  REQUIRE(sym != plan.symbols.end());
  CHECK(sym->runtime);
  CHECK(sym->hi < 0);
  auto session = runtime::Session::create(model, {2});
  REQUIRE(session.ok());
  const ir::Tensor a0 = f32({2}, {1e-30, 1e-30});
  // Memory is planned for 16 rows first and doubles as rows arrive: 17
  // grows it to 32 mid-loop, 200 to 256 (three doublings in one run, the
  // rows written so far moved each time); smaller runs reuse it. The limit
  // stops none of them (the values double from 1e-30).
  for (int64_t trips : {0, 5, 16, 17, 40, 200, 3, 200}) {
    INFO("trip count " << trips);
    runAndCompare(**session, m, {i64({}, {trips}), a0, f32({}, {3e38})});
    auto ys = (*session)->output(1);
    REQUIRE(ys.ok());
    CHECK((*ys)->shape[0] == trips);
  }
  // Stopped by the data after 4 iterations although 1000 are allowed.
  runAndCompare(**session, m, {i64({}, {1000}), f32({2}, {1, 1}), f32({}, {20})});
  auto ys = (*session)->output(1);
  REQUIRE(ys.ok());
  CHECK((*ys)->shape[0] == 4);
  // Memory: held for the largest run (220 rows: planned for 256) while the
  // last run used more than a quarter of it; planned again for 16 rows, and
  // the memory given back, after a run that used a quarter or less (the
  // first 5-row run is planned after the 120-row one; the second after it).
  runAndCompare(**session, m, {i64({}, {220}), a0, f32({}, {3e38})});
  const uint64_t large = (*session)->memoryBytes();
  for (int64_t trips : {120, 5}) {
    runAndCompare(**session, m, {i64({}, {trips}), a0, f32({}, {3e38})});
    CHECK((*session)->memoryBytes() == large);
  }
  runAndCompare(**session, m, {i64({}, {5}), a0, f32({}, {3e38})});
  CHECK((*session)->memoryBytes() * 4 <= large);
  runAndCompare(**session, m, {i64({}, {220}), a0, f32({}, {3e38})}); // grows again
  CHECK((*session)->memoryBytes() >= large / 2);
}

TEST_CASE("loop: a body reading a symbol's value, also read outside it, compiles and runs",
          "[op][loop]") {
  // symbol_values(L) in @main and in the body: one node after CSE, lowered
  // twice (its fitted kernel was once moved out by the first lowering and
  // the second found an empty kernel name). The body sums x's rows from the
  // last one, reading L - 1 - i.
  const char *text = R"(
def @main(%x: f32[L(1, 50), 2]) -> (i64[], f32[2]) {
  %l = symbol_values() {shape=[], values=[L(1, 50)]}
  %yes = constant bool[] [true]
  %s0 = constant f32[2] [0, 0]
  %body = fn(%i: i64[], %c: bool[], %s: f32[2], %xx: f32[L(1, 50), 2]) -> (bool[], f32[2]) {
    %l2 = symbol_values() {shape=[], values=[L(1, 50)]}
    %one = constant i64[] [1]
    %a = subtract(%l2, %one)
    %b = subtract(%a, %i)
    %st = reshape(%b) {newshape=[1]}
    %w = dynamic_slice(%xx, %st) {axes=[0], sizes=[1]}
    %q = squeeze(%w) {axes=[0]}
    %n = add(%s, %q)
    %r = tuple(%c, %n)
    return %r
  }
  %lp = loop(%l, %yes, %body, %s0, %x) {carried=1}
  %o = %lp.0
  %out = tuple(%l, %o)
  return %out
}
)";
  ir::Module m = parse(text);
  auto model = compileModel(m);
  auto session = runtime::Session::create(model, {1});
  REQUIRE(session.ok());
  for (int64_t rows : {1, 5, 50}) {
    INFO(rows << " rows");
    std::vector<double> v;
    for (int64_t i = 0; i < 2 * rows; ++i)
      v.push_back(double(i));
    runAndCompare(**session, m, {f32({rows, 2}, v)});
  }
}
