//===- tests/unit/passes_test.cpp - Pass manager and standard passes -----===//
//
// Each pass is checked for what it changes (through its statistics and the
// resulting graph) and, where it rewrites arithmetic, for leaving the
// results of the reference interpreter unchanged within float tolerance.
// Text-in/text-out cases live in tests/lit/passes.
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include "interp/interpreter.h"
#include "ir/structural.h"
#include "ir/visit.h"
#include "ir/parser.h"
#include "passes/pass_manager.h"

#include <functional>
#include <random>
#include <set>

using namespace tessera;
using namespace tessera::ir;
using tessera::test::f32;

namespace {

Tensor randomTensor(DType dtype, Shape shape, uint64_t seed, double lo = -1, double hi = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Tensor t(dtype, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i)
    t.setDouble(i, dist(rng));
  return t;
}

Expr cst(Tensor t) { return makeConstant(std::move(t)); }

Status runPipeline(Module &m, std::string_view pipeline, std::map<std::string, int64_t> *stats = nullptr) {
  passes::PassManagerOptions o;
  o.verifyEach = true;
  auto pm = passes::PassManager::fromPipeline(pipeline, passes::PassRegistry::standard(), o);
  if (!pm.ok())
    return pm.error();
  return pm->run(m);
}

int countOps(const Module &m, const std::string &op) {
  int n = 0;
  for (const auto &[name, fn] : m.functions())
    for (const ExprNode *node : postOrder(fn->body()))
      if (const auto *c = node->as<CallNode>(); c && c->op() && c->op()->name == op)
        ++n;
  return n;
}

std::vector<Tensor> evalMain(const Module &m, const std::vector<Tensor> &inputs) {
  auto r = interp::run(m, inputs);
  if (!r.ok())
    FAIL(r.error().str());
  return r->flatten();
}

/// conv2d -> [bias_add] -> batch_norm -> relu, with constant parameters.
Module convBnModule(bool withBias, bool sharedConv = false) {
  Var x = makeVar("x", Type::tensor(DType::F32, {1, 3, 6, 6}));
  Expr w = cst(randomTensor(DType::F32, {4, 3, 3, 3}, 1));
  Expr conv = expectOk(makeCall("conv2d", {x, w}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
  Expr pre = withBias ? expectOk(makeCall("bias_add", {conv, cst(randomTensor(DType::F32, {4}, 2))}))
                      : conv;
  Expr bn = expectOk(makeCall("batch_norm",
                              {pre, cst(randomTensor(DType::F32, {4}, 3, 0.5, 1.5)),
                               cst(randomTensor(DType::F32, {4}, 4)),
                               cst(randomTensor(DType::F32, {4}, 5)),
                               cst(randomTensor(DType::F32, {4}, 6, 0.2, 2.0))},
                              {{"epsilon", 1e-3}}));
  Expr out = expectOk(makeCall("relu", {bn}));
  if (sharedConv)
    out = makeTuple({out, conv});
  Module m("convbn");
  m.set("main", makeFunction({x}, out));
  return m;
}

} // namespace

TEST_CASE("pipelines parse from strings and reject unknown passes", "[passes][manager]") {
  auto pm = passes::PassManager::fromPipeline("dce, cse,fold-constants");
  REQUIRE(pm.ok());
  REQUIRE(pm->size() == 3);
  auto bad = passes::PassManager::fromPipeline("dce,frobnicate");
  REQUIRE_FALSE(bad.ok());
  REQUIRE_THAT(bad.error().str(),
               Catch::StartsWith("unknown pass 'frobnicate' in pipeline 'dce,frobnicate' (known "
                                 "passes: cse, dce, fold-constants"));
  passes::PassManagerOptions o;
  o.printAfter.insert("nope");
  REQUIRE(passes::PassManager::fromPipeline("dce", passes::PassRegistry::standard(), o)
              .error()
              .str() == "--print-after names unknown pass 'nope'");
  for (const auto &[name, entry] : passes::PassRegistry::standard().entries()) {
    REQUIRE(entry.create()->name() == name);
    REQUIRE_FALSE(entry.description.empty());
  }
}

namespace {
/// A pass that counts what it is told to, declaring only "declared".
class CountingPass final : public passes::Pass {
public:
  explicit CountingPass(std::string counter) : counter_(std::move(counter)) {}
  const passes::PassInfo &info() const override {
    static const passes::PassInfo kInfo{
        "counting", "Counts one statistic", "A test pass.", {{"declared", "a declared counter"}}};
    return kInfo;
  }
  Status run(Module &, passes::PassContext &ctx) override {
    ++ctx.stat(counter_);
    return okStatus();
  }

private:
  std::string counter_;
};
} // namespace

TEST_CASE("passes declare their statistics once, and undeclared ones are refused",
          "[passes][manager]") {
  for (const char *counter : {"declared", "undeclared"}) {
    CAPTURE(counter);
    passes::PassRegistry r;
    r.add([counter] { return std::make_unique<CountingPass>(counter); });
    auto pm = passes::PassManager::fromPipeline("counting", r);
    REQUIRE(pm.ok());
    Module m("m");
    Status s = pm->run(m);
    if (std::string_view(counter) == "declared")
      CHECK(s.ok());
    else
      CHECK(s.error().str() == "internal error: pass 'counting' counted 'undeclared', a statistic "
                               "its PassInfo does not declare");
  }
  // Every registered pass: a name, a summary, details for docs/passes.md,
  // and statistics with descriptions, none declared twice.
  for (const auto &[name, entry] : passes::PassRegistry::standard().entries()) {
    CAPTURE(name);
    REQUIRE(entry.info != nullptr);
    CHECK(entry.info->name == name);
    CHECK_FALSE(entry.info->summary.empty());
    CHECK_FALSE(entry.info->details.empty());
    std::set<std::string_view> seen;
    for (const passes::Statistic &st : entry.info->statistics) {
      CHECK_FALSE(st.description.empty());
      CHECK(seen.insert(st.name).second);
    }
  }
}

TEST_CASE("simplify-inference folds batch_norm into conv2d weights and bias", "[passes][simplify-inference]") {
  for (bool withBias : {false, true}) {
    INFO("with bias_add: " << withBias);
    Module m = convBnModule(withBias);
    Tensor input = randomTensor(DType::F32, {1, 3, 6, 6}, 42);
    auto before = evalMain(m, {input});
    REQUIRE(runPipeline(m, "simplify-inference").ok());
    REQUIRE(countOps(m, "batch_norm") == 0);
    REQUIRE(countOps(m, "multiply") == 0);
    REQUIRE(countOps(m, "add") == 0);
    REQUIRE(countOps(m, "conv2d") == 1);
    REQUIRE(countOps(m, "bias_add") == 1);
    auto after = evalMain(m, {input});
    // Folding reassociates float arithmetic: allow a few ulps of f32.
    test::requireClose(after[0], before[0], 1e-5, 1e-5);
  }
}

TEST_CASE("simplify-inference leaves a shared conv2d alone", "[passes][simplify-inference]") {
  Module m = convBnModule(false, /*sharedConv=*/true);
  Tensor input = randomTensor(DType::F32, {1, 3, 6, 6}, 7);
  auto before = evalMain(m, {input});
  REQUIRE(runPipeline(m, "simplify-inference").ok());
  REQUIRE(countOps(m, "batch_norm") == 0);
  REQUIRE(countOps(m, "multiply") == 1); // could not fold into the shared conv
  auto after = evalMain(m, {input});
  for (size_t i = 0; i < after.size(); ++i)
    test::requireClose(after[i], before[i], 1e-5, 1e-5);
}

TEST_CASE("simplify-inference decomposes batch_norm with non-constant statistics", "[passes][simplify-inference]") {
  Type c = Type::tensor(DType::F32, {3});
  Var x = makeVar("x", Type::tensor(DType::F32, {2, 3, 2}));
  Var g = makeVar("g", c), b = makeVar("b", c), mu = makeVar("mu", c), v = makeVar("v", c);
  Module m;
  m.set("main", makeFunction({x, g, b, mu, v}, expectOk(makeCall("batch_norm", {x, g, b, mu, v}))));
  std::vector<Tensor> inputs{randomTensor(DType::F32, {2, 3, 2}, 1), randomTensor(DType::F32, {3}, 2),
                             randomTensor(DType::F32, {3}, 3), randomTensor(DType::F32, {3}, 4),
                             randomTensor(DType::F32, {3}, 5, 0.1, 1.0)};
  auto before = evalMain(m, inputs);
  REQUIRE(runPipeline(m, "simplify-inference").ok());
  REQUIRE(countOps(m, "batch_norm") == 0);
  REQUIRE(countOps(m, "sqrt") == 1);
  test::requireClose(evalMain(m, inputs)[0], before[0], 1e-5, 1e-6);
}

TEST_CASE("simplify-inference drops conv2d taps that read only padding", "[passes][simplify-inference]") {
  using Ints = std::vector<int64_t>;
  struct Case {
    Shape x, w;
    Ints pads, dilation, strides;
    Shape trimmed; // the weight's shape after the pass
    Ints trimmedPads;
  };
  const Case cases[] = {
      // DeepLabV3's ASPP in small: a 3x3 at rate 3 on a 3x3 map is a 1x1
      {{1, 4, 3, 3}, {5, 4, 3, 3}, {3, 3, 3, 3}, {3, 3}, {1, 1}, {5, 4, 1, 1}, {0, 0, 0, 0}},
      // only the rows: the columns read input
      {{2, 3, 4, 6}, {2, 3, 3, 3}, {4, 1, 4, 1}, {4, 1}, {1, 1}, {2, 3, 1, 3}, {0, 1, 0, 1}},
      // strided, uneven pads: the last row tap only ever reads the bottom pad
      {{1, 2, 5, 5}, {3, 2, 3, 2}, {1, 0, 4, 1}, {3, 1}, {2, 2}, {3, 2, 2, 2}, {1, 0, 1, 1}},
      // every tap reads input somewhere: unchanged
      {{1, 2, 6, 6}, {3, 2, 3, 3}, {4, 4, 4, 4}, {4, 4}, {1, 1}, {3, 2, 3, 3}, {4, 4, 4, 4}},
  };
  for (const Case &c : cases) {
    INFO("x " << shapeStr(c.x) << " w " << shapeStr(c.w));
    Var x = makeVar("x", Type::tensor(DType::F32, c.x));
    Attrs attrs{{"pads", c.pads}, {"dilation", c.dilation}, {"strides", c.strides}};
    Expr conv = expectOk(makeCall("conv2d", {x, cst(randomTensor(DType::F32, c.w, 3))}, attrs));
    Module m;
    m.set("main", makeFunction({x}, conv));
    Tensor input = randomTensor(DType::F32, c.x, 11);
    auto before = evalMain(m, {input});
    REQUIRE(runPipeline(m, "simplify-inference").ok());
    const auto *after = m.find("main")->body()->as<CallNode>();
    REQUIRE(after);
    CHECK(after->args()[1]->type().shape() == c.trimmed);
    CHECK(after->attrs().getInts("pads") == c.trimmedPads);
    // The reference skips padding taps: the same sums, bit for bit.
    CHECK(evalMain(m, {input})[0].bitwiseEqual(before[0]));
  }
}

TEST_CASE("simplify-inference folds a per-unit scale into dense", "[passes][simplify-inference]") {
  Var x = makeVar("x", Type::tensor(DType::F32, {2, 5}));
  Expr d = expectOk(makeCall("dense", {x, cst(randomTensor(DType::F32, {3, 5}, 1))}));
  Expr s = expectOk(makeCall("multiply", {d, cst(f32({3}, {2.0, -1.0, 0.5}))}));
  Expr t = expectOk(makeCall("add", {s, cst(f32({3}, {1.0, 2.0, 3.0}))}));
  Module m;
  m.set("main", makeFunction({x}, t));
  Tensor input = randomTensor(DType::F32, {2, 5}, 9);
  auto before = evalMain(m, {input});
  REQUIRE(runPipeline(m, "simplify-inference").ok());
  REQUIRE(countOps(m, "multiply") == 0);
  REQUIRE(countOps(m, "add") == 0);
  REQUIRE(countOps(m, "bias_add") == 1);
  test::requireClose(evalMain(m, {input})[0], before[0], 1e-6, 1e-6);
}

TEST_CASE("fold-constants evaluates constant subgraphs with the reference kernels", "[passes][fold-constants]") {
  Var x = makeVar("x", Type::tensor(DType::F32, {2}));
  Expr k = expectOk(makeCall("add", {cst(f32({2}, {1, 2})), cst(f32({2}, {10, 20}))}));
  Expr k2 = expectOk(makeCall("multiply", {k, cst(f32({}, {2}))}));
  Expr parts = expectOk(makeCall("split", {cst(f32({4}, {1, 2, 3, 4}))},
                                 {{"sizes", std::vector<int64_t>{2, 2}}}));
  Expr second = expectOk(makeTupleGetItem(parts, 1));
  Expr y = expectOk(makeCall("add", {x, k2}));
  Expr z = expectOk(makeCall("add", {y, second}));
  Module m;
  m.set("main", makeFunction({x}, z));
  REQUIRE(runPipeline(m, "fold-constants").ok());
  auto body = m.find("main")->body()->as<CallNode>();
  REQUIRE(body->args()[1]->as<ConstantNode>());
  REQUIRE(body->args()[1]->as<ConstantNode>()->data().toDoubles() == std::vector<double>{3, 4});
  const auto *inner = body->args()[0]->as<CallNode>();
  REQUIRE(inner->args()[1]->as<ConstantNode>()->data().toDoubles() == std::vector<double>{22, 44});
  REQUIRE(countOps(m, "multiply") == 0);
  REQUIRE(countOps(m, "split") == 0);
}

TEST_CASE("fold-constants reports a kernel error with the node", "[passes][fold-constants]") {
  Expr g = expectOk(makeCall("gather", {cst(f32({3}, {1, 2, 3})), cst(test::i64({1}, {5}))}, {}, "g0"));
  Module m;
  Var x = makeVar("x", Type::tensor(DType::F32, {1}));
  m.set("main", makeFunction({x}, expectOk(makeCall("add", {x, g}))));
  Status s = runPipeline(m, "fold-constants");
  REQUIRE_FALSE(s.ok());
  REQUIRE_THAT(s.error().str(), Catch::StartsWith("while running pass 'fold-constants': in function '@main': while folding gather '%g0': "));
}

TEST_CASE("cse merges identical calls and constants", "[passes][cse]") {
  Var x = makeVar("x", Type::tensor(DType::F32, {2}));
  Expr a = expectOk(makeCall("exp", {x}));
  Expr b = expectOk(makeCall("exp", {x}));
  Expr c1 = cst(f32({2}, {1, 2})), c2 = cst(f32({2}, {1, 2}));
  Expr s = expectOk(makeCall("add", {expectOk(makeCall("add", {a, c1})), expectOk(makeCall("add", {b, c2}))}));
  Module m;
  m.set("main", makeFunction({x}, s));
  REQUIRE(postOrder(m.find("main")->body()).size() == 8);
  REQUIRE(runPipeline(m, "cse").ok());
  // x, exp, const, add, add(self, self)
  REQUIRE(postOrder(m.find("main")->body()).size() == 5);
  const auto *top = m.find("main")->body()->as<CallNode>();
  REQUIRE(top->args()[0] == top->args()[1]);
}

TEST_CASE("cse keeps calls that differ in attributes", "[passes][cse]") {
  Var x = makeVar("x", Type::tensor(DType::F32, {2}));
  Expr a = expectOk(makeCall("leaky_relu", {x}, {{"alpha", 0.1}}));
  Expr b = expectOk(makeCall("leaky_relu", {x}, {{"alpha", 0.2}}));
  Module m;
  m.set("main", makeFunction({x}, expectOk(makeCall("add", {a, b}))));
  REQUIRE(runPipeline(m, "cse").ok());
  REQUIRE(countOps(m, "leaky_relu") == 2);
}

TEST_CASE("dce removes unreachable globals and unused tuple fields", "[passes][dce]") {
  Type t = Type::tensor(DType::F32, {2});
  Var x = makeVar("x", t);
  Expr e = expectOk(makeCall("exp", {x}));
  Expr tup = makeTuple({e, expectOk(makeCall("log", {x}))});
  Module m;
  Var a = makeVar("a", t);
  m.set("used", makeFunction({a}, expectOk(makeCall("neg", {a}))));
  m.set("unused", makeFunction({a}, a));
  Expr call = expectOk(makeGlobalCall("used", m.find("used")->type(), {expectOk(makeTupleGetItem(tup, 0))}));
  m.set("main", makeFunction({x}, call));
  REQUIRE(runPipeline(m, "dce").ok());
  REQUIRE(m.size() == 2);
  REQUIRE_FALSE(m.has("unused"));
  REQUIRE(countOps(m, "log") == 0);
}

TEST_CASE("dce drops unused parameters of local functions", "[passes][dce]") {
  Type t = Type::tensor(DType::F32, {2});
  Var p = makeVar("p", t), q = makeVar("q", t);
  Function fn = makeFunction({p, q}, expectOk(makeCall("relu", {p})), {{"Composite", std::string("t.relu")}});
  Var x = makeVar("x", t), y = makeVar("y", t);
  Module m;
  m.set("main", makeFunction({x, y}, expectOk(makeLocalCall(fn, {x, expectOk(makeCall("exp", {y}))}))));
  Tensor in1 = f32({2}, {-1, 2}), in2 = f32({2}, {0, 1});
  auto before = evalMain(m, {in1, in2});
  REQUIRE(runPipeline(m, "dce").ok());
  const auto *call = m.find("main")->body()->as<CallNode>();
  REQUIRE(call->localFn()->params().size() == 1);
  REQUIRE(countOps(m, "exp") == 0);
  test::requireClose(evalMain(m, {in1, in2})[0], before[0]);
}

TEST_CASE("fold-reshape-transpose collapses chains", "[passes][fold-reshape-transpose]") {
  Var x = makeVar("x", Type::tensor(DType::F32, {2, 3, 4}));
  Expr r1 = expectOk(makeCall("reshape", {x}, {{"newshape", std::vector<int64_t>{6, 4}}}));
  Expr r2 = expectOk(makeCall("flatten", {r1}, {{"axis", int64_t(0)}}));
  Expr r3 = expectOk(makeCall("reshape", {r2}, {{"newshape", std::vector<int64_t>{4, 6}}}));
  Expr t1 = expectOk(makeCall("transpose", {r3}, {{"perm", std::vector<int64_t>{1, 0}}}));
  Expr t2 = expectOk(makeCall("transpose", {t1}, {{"perm", std::vector<int64_t>{1, 0}}}));
  Expr back = expectOk(makeCall("reshape", {t2}, {{"newshape", std::vector<int64_t>{2, 3, 4}}}));
  Expr u = expectOk(makeCall("unsqueeze", {back}, {{"axes", std::vector<int64_t>{0}}}));
  Expr p1 = expectOk(makeCall("transpose", {u}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}}));
  Expr p2 = expectOk(makeCall("transpose", {p1}, {{"perm", std::vector<int64_t>{3, 1, 2, 0}}}));
  Module m;
  m.set("main", makeFunction({x}, p2));
  Tensor input = randomTensor(DType::F32, {2, 3, 4}, 3);
  auto before = evalMain(m, {input});
  REQUIRE(runPipeline(m, "fold-reshape-transpose").ok());
  // reshape chain back to the input's shape vanishes, transpose pair vanishes,
  // the last two transposes compose into one.
  REQUIRE(countOps(m, "transpose") == 1);
  REQUIRE(countOps(m, "reshape") + countOps(m, "unsqueeze") + countOps(m, "flatten") == 1);
  test::requireClose(evalMain(m, {input})[0], before[0], 0, 0);
}

TEST_CASE("infer-types propagates a changed parameter type", "[passes][infer-types]") {
  Var x = makeVar("x", Type::tensor(DType::F32, {1, 4}));
  Expr body = expectOk(makeCall("relu", {expectOk(makeCall("exp", {x}))}));
  Module m;
  Var a = makeVar("a", Type::tensor(DType::F32, {1, 4}));
  m.set("helper", makeFunction({a}, expectOk(makeCall("neg", {a}))));
  m.set("main", makeFunction({x}, expectOk(makeGlobalCall("helper", m.find("helper")->type(), {body}))));
  // Rebind both parameters to a batch of 8, as an importer does with --input-shape.
  Var x8 = makeVar("x", Type::tensor(DType::F32, {8, 4}));
  Var a8 = makeVar("a", Type::tensor(DType::F32, {8, 4}));
  auto swap = [](const Function &f, const Var &from, const Var &to) {
    auto r = rewriteFunction(f, [&](const Expr &o, const Expr &n) -> Expected<Expr> {
      return o.get() == from.get() ? Expr(to) : n;
    });
    return makeFunction({to}, (*r)->body());
  };
  // The rewrite itself must fail on the global call's now-stale type only in
  // the verifier; infer-types repairs it.
  m.set("helper", swap(m.find("helper"), a, a8));
  m.set("main", swap(m.find("main"), x, x8));
  REQUIRE_FALSE(passes::verifyModule(m).ok());
  REQUIRE(runPipeline(m, "infer-types").ok());
  REQUIRE(m.find("main")->resultType() == Type::tensor(DType::F32, {8, 4}));
  REQUIRE(passes::verifyModule(m).ok());
}

TEST_CASE("infer-types names the failing value", "[passes][infer-types]") {
  Var x = makeVar("x", Type::tensor(DType::F32, {2, 3}));
  Var y = makeVar("y", Type::tensor(DType::F32, {3}));
  Module m;
  m.set("main", makeFunction({x, y}, expectOk(makeCall("add", {x, y}, {}, "sum"))));
  Var y4 = makeVar("y", Type::tensor(DType::F32, {4}));
  auto r = rewriteFunction(m.find("main"), [&](const Expr &o, const Expr &n) -> Expected<Expr> {
    return o.get() == y.get() ? Expr(y4) : n;
  });
  REQUIRE_FALSE(r.ok());
  REQUIRE(r.error().str() == "add: cannot broadcast [2, 3] with [4] (inputs: f32[2, 3], f32[4])");
}

TEST_CASE("verify rejects free variables and nested captures", "[passes][verify]") {
  Type t = Type::tensor(DType::F32, {2});
  Var x = makeVar("x", t), stray = makeVar("stray", t);
  Module m;
  m.set("main", makeFunction({x}, expectOk(makeCall("add", {x, stray}))));
  Status s = passes::verifyModule(m);
  REQUIRE(s.error().str() == "in function '@main': variable '%stray' is not a parameter of any enclosing function");

  Var p = makeVar("p", t);
  Function inner = makeFunction({p}, expectOk(makeCall("add", {p, x})));
  Module m2;
  m2.set("main", makeFunction({x}, expectOk(makeLocalCall(inner, {x}))));
  REQUIRE(passes::verifyModule(m2).error().str() ==
          "in function '@main': variable '%x' is a parameter of an enclosing function: a nested "
          "function may only use its own parameters");
}

TEST_CASE("the default pipeline preserves results on a small CNN", "[passes][pipeline]") {
  Module m = convBnModule(true);
  Tensor input = randomTensor(DType::F32, {1, 3, 6, 6}, 11);
  auto before = evalMain(m, {input});
  REQUIRE(runPipeline(m, passes::kDefaultPipeline).ok());
  test::requireClose(evalMain(m, {input})[0], before[0], 1e-5, 1e-5);
}

TEST_CASE("every pass runs through a 100,000-node chain", "[passes][deep]") {
  Type t = Type::tensor(DType::F32, {2});
  Var x = makeVar("x", t);
  Expr e = x;
  for (int i = 0; i < 100000; ++i)
    e = expectOk(makeCall(i % 2 ? "relu" : "neg", {e}));
  Module m;
  m.set("main", makeFunction({x}, e));
  REQUIRE(runPipeline(m, "infer-types,verify,simplify-inference,fold-constants,fold-reshape-transpose,cse,dce").ok());
  REQUIRE(postOrder(m.find("main")->body()).size() == 100001);
  auto out = evalMain(m, {f32({2}, {1.0, -2.0})});
  // 50,000 (neg, relu) pairs: relu(neg(v)) = max(-v, 0); then applied again gives 0.
  REQUIRE(out[0].toDoubles() == std::vector<double>{0.0, 0.0});
}

namespace {

Expr scalar(double v) {
  return cst(Tensor::fromDoubles(DType::F32, {}, std::vector<double>{v}));
}

Expr op(std::string_view name, std::vector<Expr> args, Attrs attrs = {}) {
  return expectOk(makeCall(name, std::move(args), std::move(attrs)));
}

} // namespace

TEST_CASE("fuse-activations keeps what the interpreter computes", "[passes][fuse-activations]") {
  // Each decomposed form as an exporter writes it, and the op it becomes.
  struct Form {
    const char *name;
    const char *fused;
    std::function<Expr(const Expr &)> build;
  };
  const double kRsqrt2 = 0.70710678118654752, kTanhC = 0.7978845608028654;
  std::vector<Form> forms = {
      {"hard_swish by hand", "hard_swish",
       [](const Expr &x) {
         Expr c = op("clip", {op("add", {x, scalar(3)})}, {{"min", 0.0}, {"max", 6.0}});
         return op("divide", {op("multiply", {x, c}), scalar(6)});
       }},
      {"hard_sigmoid gate", "hard_sigmoid",
       [](const Expr &x) {
         Expr c = op("clip", {op("add", {x, scalar(3)})}, {{"min", 0.0}, {"max", 6.0}});
         return op("divide", {c, scalar(6)});
       }},
      {"silu", "silu", [](const Expr &x) { return op("multiply", {op("sigmoid", {x}), x}); }},
      {"mish (torch.onnx, Softplus as imported)", "mish",
       [](const Expr &x) {
         Expr sp = op("log", {op("add", {op("exp", {x}), scalar(1)})});
         return op("multiply", {x, op("tanh", {sp})});
       }},
      {"gelu (torch.onnx)", "gelu",
       [&](const Expr &x) {
         Expr e = op("erf", {op("divide", {x, scalar(1.0 / kRsqrt2)})});
         return op("multiply", {op("multiply", {x, op("add", {e, scalar(1)})}), scalar(0.5)});
       }},
      {"gelu (tanh)", "gelu",
       [&](const Expr &x) {
         Expr x3 = op("multiply", {op("multiply", {x, x}), x});
         Expr u = op("add", {x, op("multiply", {scalar(0.044715), x3})});
         Expr t = op("tanh", {op("multiply", {u, scalar(kTanhC)})});
         return op("multiply", {op("multiply", {scalar(0.5), x}), op("add", {scalar(1), t})});
       }},
  };
  for (const Form &form : forms) {
    INFO(form.name);
    Var x = makeVar("x", Type::tensor(DType::F32, {4, 64}));
    Module m("m");
    m.set("main", makeFunction({x}, form.build(x)));
    Tensor input = randomTensor(DType::F32, {4, 64}, 5, -8, 8);
    auto before = evalMain(m, {input});
    REQUIRE(runPipeline(m, "fuse-activations,dce").ok());
    CHECK(countOps(m, form.fused) == 1);
    for (const char *gone : {"erf", "tanh", "sigmoid", "clip", "divide", "log", "exp"})
      CHECK(countOps(m, gone) == 0);
    // The chain rounds after every step: allow a few ulps of f32.
    test::requireClose(evalMain(m, {input})[0], before[0], 1e-5, 1e-6);
  }
}

TEST_CASE("pass errors about a node parsed from text start with FILE:LINE:COL", "[passes][verify]") {
  // One format for every diagnostic about IR, the parser's: the position of
  // the node the error is about, then the context, then the message.
  const char *text = R"(module @m
def @helper(%a: f32[2]) -> f32[2] {
  %r = relu(%a)
  return %r
}
def @main(%x: f32[2]) -> f32[2] {
  %y = @helper(%x) : f32[2]
  return %y
}
)";
  auto parsed = ir::parseModule(text, "model.tir");
  REQUIRE(parsed.ok());
  Module m = std::move(parsed).value();
  CHECK(m.sourceFile() == "model.tir");
  // @helper now takes f32[3]: the call at line 7, column 3 is stale.
  auto other = ir::parseModule(R"(module @o
def @helper(%a: f32[3]) -> f32[3] {
  %r = relu(%a)
  return %r
}
)");
  REQUIRE(other.ok());
  m.set("helper", other->find("helper"));

  Status v = passes::verifyModule(m);
  REQUIRE_FALSE(v.ok());
  CHECK(v.error().located());
  CHECK_THAT(v.error().str(),
             Catch::StartsWith("model.tir:7:3: in function '@main': @helper '%y' calls @helper of type"));

  Status t = runPipeline(m, "infer-types");
  REQUIRE_FALSE(t.ok());
  CHECK_THAT(t.error().str(), Catch::StartsWith("model.tir:7:3: while running pass 'infer-types': in "
                                         "function '@main': while inferring the type of @helper "
                                         "'%y': "));
  // The parser's own errors have the same form and are located too.
  auto bad = ir::parseModule("module @m\ndef @main(%x: f32[2]) -> f32[2] {\n  return %nope\n}\n",
                             "bad.tir");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().located());
  CHECK_THAT(bad.error().str(), Catch::StartsWith("bad.tir:3:10: "));
}
