//===- unit/partition_pass_test.cpp - One pass equals the four steps -----===//
//
// The `partition` pass (what partitionModule runs, kPartitionPipeline) must
// give the module, the log and the errors that annotate-target,
// merge-compiler-regions, prune-regions and partition-graph give one after
// the other (kPartitionSteps). Property test
// on random DAGs with random target lists drawn from the test targets of
// tests/plugins/targets: checkers that decline, patterns, a region rule
// (tgt_prune), a whole-graph hook (tgt_hook, which may form a cycle the
// core refuses). Both results must also compute what the input computes.
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include "interp/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "partition/driver.h"
#include "partition/partition.h"
#include "passes/pass_manager.h"
#include "plugin/registry.h"
#include "test_targets.h"

#include <fmt/format.h>

#include <random>

using namespace tessera;
using namespace tessera::ir;

namespace {

const plugin::PluginRegistry &targets() { return test::testTargets(); }

const Type kT = Type::tensor(DType::F32, {2, 4});

Expr constant(std::mt19937_64 &rng, Shape shape) {
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<double> v(size_t(numElements(shape)));
  for (double &x : v)
    x = dist(rng);
  return makeConstant(Tensor::fromDoubles(DType::F32, std::move(shape), v));
}

Expr call(const std::string &op, std::vector<Expr> args, std::string name, Attrs attrs = {}) {
  return expectOk(makeCall(op, std::move(args), std::move(attrs), std::move(name)));
}

/// A random DAG of 1..30 op calls over f32[2, 4] values, with the shapes
/// the test targets' patterns match (dense with a constant weight and bias,
/// sigmoid of a biased add, swish) and a split read by a concat.
Function randomFunction(std::mt19937_64 &rng) {
  static const char *unary[] = {"relu", "sigmoid", "tanh", "exp", "neg", "abs"};
  static const char *binary[] = {"add", "multiply", "subtract"};
  std::vector<Expr> values = {makeVar("x0", kT), makeVar("x1", kT)};
  std::vector<Var> inputs = {std::static_pointer_cast<const VarNode>(values[0]),
                             std::static_pointer_cast<const VarNode>(values[1])};
  auto pick = [&] {
    size_t n = values.size();
    return values[rng() % 3 == 0 ? rng() % n : n - 1 - rng() % std::min<size_t>(n, 3)];
  };
  const int size = 1 + int(rng() % 30);
  for (int k = 0; k < size; ++k) {
    const std::string name = fmt::format("n{}", k);
    Expr v;
    switch (rng() % 8) {
    case 0:
    case 1: v = call(unary[rng() % 6], {pick()}, name); break;
    case 2:
    case 3: v = call(binary[rng() % 3], {pick(), pick()}, name); break;
    case 4: { // dense, maybe with a constant bias (tgt_a's dense_bias)
      v = call("dense", {pick(), constant(rng, {4, 4})}, name);
      if (rng() % 2)
        v = call("add", {v, constant(rng, {2, 4})}, name + "b");
      break;
    }
    case 5: // sigmoid(add(*, const)) (tgt_b's bias_sigmoid)
      v = call("sigmoid", {call("add", {pick(), constant(rng, {2, 4})}, name + "a")}, name);
      break;
    case 6: { // multiply(*, sigmoid(*)) (tgt_b's swish)
      Expr a = pick();
      v = call("multiply", {a, call("sigmoid", {a}, name + "s")}, name);
      break;
    }
    default: { // split, its items swapped by a concat
      Expr s = call("split", {pick()}, name,
                    Attrs{{"axis", int64_t(1)}, {"sizes", std::vector<int64_t>{2, 2}}});
      v = call("concat",
               {expectOk(makeTupleGetItem(s, 1, name + "_1")),
                expectOk(makeTupleGetItem(s, 0, name + "_0"))},
               name + "c", Attrs{{"axis", int64_t(1)}});
      break;
    }
    }
    values.push_back(v);
  }
  Expr result = rng() % 2 ? values.back() : makeTuple({values.back(), pick()});
  return makeFunction(inputs, result);
}

/// @main, and sometimes a second function partitioned too (region symbols
/// count per target across the module).
Module randomModule(std::mt19937_64 &rng) {
  Module m("rand");
  m.set("main", randomFunction(rng));
  if (rng() % 3 == 0)
    m.set("aux", randomFunction(rng));
  return m;
}

std::vector<std::string> randomTargets(std::mt19937_64 &rng) {
  std::vector<std::string> all = {"tgt_a", "tgt_b", "tgt_prune", "tgt_picky", "tgt_hook"};
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(1 + rng() % 3);
  return all;
}

struct Outcome {
  std::string module; // printed, or "error: ..."
  std::vector<std::string> log;
};

Outcome partitionWith(const Module &input, const std::vector<std::string> &names,
                      std::string_view pipeline) {
  auto state = partition::PartitionState::fromNames(names, targets());
  REQUIRE(state.ok());
  passes::PassManagerOptions options;
  options.verifyEach = true;
  auto pm = passes::PassManager::fromPipeline(pipeline, partition::allPasses(state->get()), options);
  REQUIRE(pm.ok());
  Module m = input;
  Status s = pm->run(m);
  // The pass manager names the failing pass; the cause is what must agree.
  Outcome out{s.ok() ? printModule(m) : "error: " + s.error().message().substr(
                                                        s.error().message().find(':')),
              {}};
  for (const partition::HostDecision &d : (*state)->log.host)
    out.log.push_back(fmt::format("host {} {} {} {} {}: {}", int(d.kind), d.function, d.node, d.op,
                                  d.target, d.reason));
  for (const partition::RegionInfo &r : (*state)->log.regions)
    out.log.push_back(fmt::format("region {} {} {} [{}] -> [{}] {}", r.symbol, r.target, r.ops,
                                  fmt::join(r.inputs, ", "), fmt::join(r.outputs, ", "),
                                  r.flops));
  return out;
}

} // namespace

TEST_CASE("the partition pass gives what the four steps give, on random graphs",
          "[partition][partition_pass]") {
  std::mt19937_64 rng(20261122);
  int regions = 0, pruned = 0, errors = 0;
  for (int iter = 0; iter < 600; ++iter) {
    Module m = randomModule(rng);
    std::vector<std::string> names = randomTargets(rng);
    INFO("iteration " << iter << ", targets " << fmt::format("{}", fmt::join(names, ","))
                      << "\ninput:\n"
                      << printModule(m));
    Outcome steps = partitionWith(m, names, partition::kPartitionSteps);
    Outcome fused = partitionWith(m, names, partition::kPartitionPipeline);
    REQUIRE(fused.module == steps.module);
    if (steps.module.starts_with("error: ")) {
      ++errors; // the same error (partitionModule then drops the log)
      continue;
    }
    REQUIRE(fused.log == steps.log);
    for (const std::string &line : steps.log) {
      regions += line.starts_with("region ");
      pruned += line.starts_with("host 2 ");
    }
    // The partitioned module computes what the input computes.
    auto parsed = parseModule(fused.module);
    REQUIRE(parsed.ok());
    std::vector<Tensor> in = {test::f32({2, 4}, {1, -2, 3, -4, 0.5, -0.5, 2, -1}),
                              test::f32({2, 4}, {-1, 2, 0.25, 4, -3, 1, 0, 2})};
    auto expected = interp::run(m, in); // @main
    auto actual = interp::run(*parsed, in);
    REQUIRE(expected.ok());
    REQUIRE(actual.ok());
    std::vector<Tensor> got = actual->flatten(), want = expected->flatten();
    REQUIRE(got.size() == want.size());
    for (size_t k = 0; k < got.size(); ++k)
      test::requireClose(got[k], want[k]);
  }
  // The property is not vacuous: regions formed, some pruned, some refused.
  CHECK(regions > 300);
  CHECK(pruned > 50);
  CHECK(errors > 0);
}

namespace {

/// relu(dense(x, w) + y): tgt_a and tgt_b both take all three ops;
/// tgt_hook takes the relu.
const char *kContested = R"(module @contested
def @main(%x: f32[2, 4], %w: f32[4, 4], %y: f32[2, 4]) -> f32[2, 4] {
  %d = dense(%x, %w)
  %a = add(%d, %y)
  %r = relu(%a)
  return %r
}
)";

/// A region rule that sends back every region of the targets in `slow`
/// and keeps the others, counting the regions it was asked about.
partition::RegionRule sendBack(std::vector<std::string> slow, std::vector<std::string> &asked) {
  return [slow, &asked](const Function &, const std::string &target)
             -> Expected<std::optional<partition::RegionVerdict>> {
    asked.push_back(target);
    bool back = std::find(slow.begin(), slow.end(), target) != slow.end();
    return partition::RegionVerdict{!back, (back ? "measured slower on " : "measured faster on ") +
                                               target};
  };
}

std::vector<std::string> regionTargets(const partition::PartitionResult &r) {
  std::vector<std::string> out;
  for (const partition::RegionInfo &info : r.log.regions)
    out.push_back(info.target);
  return out;
}

/// relu(dense(x, w) + b) with constant w and b: tgt_a's dense_bias pattern
/// matches dense + add.
const char *kContestedComposite = R"(module @contested
def @main(%x: f32[2, 4]) -> f32[2, 4] {
  %w = constant f32[4, 4] [1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0]
  %b = constant f32[2, 4] [0.5, -0.5, 0.5, -0.5, 0.5, -0.5, 0.5, -0.5]
  %d = dense(%x, %w)
  %a = add(%d, %b)
  %r = relu(%a)
  return %r
}
)";

partition::PartitionResult partitionContested(std::vector<std::string> names,
                                              partition::RegionRule rule,
                                              const char *text = kContested) {
  auto m = parseModule(text);
  REQUIRE(m.ok());
  partition::PartitionOptions options;
  options.targets = std::move(names);
  options.pipeline = "";
  options.regionRule = std::move(rule);
  auto r = partition::partitionModule(std::move(*m), options, targets());
  REQUIRE(r.ok());
  return std::move(r).value();
}

} // namespace

TEST_CASE("a region the region rule sends back is offered to the next target",
          "[partition][partition_pass][placement]") {
  std::vector<std::string> asked;
  SECTION("the first target's region goes to the second") {
    auto r = partitionContested({"tgt_a", "tgt_b"}, sendBack({"tgt_a"}, asked));
    CHECK(asked == std::vector<std::string>{"tgt_a", "tgt_b"});
    CHECK(regionTargets(r) == std::vector<std::string>{"tgt_b"});
    CHECK(r.offloadedOps == 3);
    CHECK(r.host.empty());
    // The report says why the region stayed.
    CHECK(r.log.regions[0].placement == "measured faster on tgt_b");
  }
  SECTION("down the list: what neither takes stays on the host, saying why") {
    auto r = partitionContested({"tgt_a", "tgt_b", "tgt_hook"}, sendBack({"tgt_a", "tgt_b"}, asked));
    CHECK(asked == std::vector<std::string>{"tgt_a", "tgt_b", "tgt_hook"});
    CHECK(regionTargets(r) == std::vector<std::string>{"tgt_hook"}); // the relu
    REQUIRE(r.host.size() == 2); // dense and add
    for (const partition::HostOp &op : r.host) {
      std::string reasons;
      for (const partition::HostDecision &d : op.decisions)
        reasons += d.target + ": " + d.reason + "\n";
      INFO(op.op << "\n" << reasons);
      CHECK(reasons.find("tgt_a: measured slower on tgt_a") != std::string::npos);
      CHECK(reasons.find("tgt_b: measured slower on tgt_b") != std::string::npos);
    }
  }
  SECTION("a composite of the target that lost dissolves: its ops go on") {
    auto r = partitionContested({"tgt_a", "tgt_b"}, sendBack({"tgt_a"}, asked),
                                kContestedComposite);
    CHECK(asked == std::vector<std::string>{"tgt_a", "tgt_b"});
    CHECK(regionTargets(r) == std::vector<std::string>{"tgt_b"});
    CHECK(r.offloadedOps == 3);
    CHECK(r.host.empty());
    // Without the rule, tgt_a takes the match as its composite.
    auto first = partitionContested({"tgt_a", "tgt_b"}, nullptr, kContestedComposite);
    CHECK(regionTargets(first) == std::vector<std::string>{"tgt_a"});
    CHECK(printModule(first.module).find("tgt_a.dense_bias") != std::string::npos);
  }
  SECTION("the last target's region goes to the host, without another round") {
    auto r = partitionContested({"tgt_a", "tgt_b"}, sendBack({"tgt_b"}, asked));
    CHECK(asked == std::vector<std::string>{"tgt_a"});
    CHECK(regionTargets(r) == std::vector<std::string>{"tgt_a"});
    r = partitionContested({"tgt_b"}, sendBack({"tgt_b"}, asked));
    CHECK(regionTargets(r).empty());
    CHECK(r.host.size() == 3);
  }
}
