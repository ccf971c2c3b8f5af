//===- tests/unit/merge_regions_test.cpp - merge-compiler-regions, prune-regions ===//
//
// The region merge on random DAGs (property test: no cycle between regions,
// same values as the reference interpreter, no op changes target), the
// classic shapes that would create a cycle if merged naively, its speed on
// 10^5-node graphs, and prune-regions' default rule and log.
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include "interp/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/visit.h"
#include "partition/partition.h"
#include "partition/regions.h"
#include "passes/pass.h"

#include <chrono>
#include <map>
#include <random>
#include <set>
#include <unordered_map>

using namespace tessera;
using namespace tessera::ir;

namespace {

const Type kVec = Type::tensor(DType::F32, {4});

/// Runs one pass with a stats map.
std::map<std::string, int64_t> runPass(std::unique_ptr<passes::Pass> pass, Module &m) {
  std::map<std::string, int64_t> stats;
  passes::PassContext ctx;
  ctx.setStats(&stats);
  Status s = pass->run(m, ctx);
  if (!s.ok())
    FAIL(s.error().str());
  Status v = passes::verifyModule(m);
  if (!v.ok())
    FAIL(v.error().str() << "\n" << printModule(m));
  return stats;
}

Module parse(const std::string &text) {
  auto m = parseModule(text);
  if (!m.ok())
    FAIL(m.error().str());
  return std::move(m).value();
}

/// Region calls in @main: target -> count.
std::map<std::string, int> regionCounts(const Module &m) {
  std::map<std::string, int> n;
  for (const ExprNode *node : postOrder(m.find("main")->body(), false)) {
    std::string t;
    if (partition::regionFunctionOf(*node, &t))
      ++n[t];
  }
  return n;
}

/// Where each named op call ended up: the target of its region, or "" for
/// the host.
std::map<std::string, std::string> placement(const Module &m) {
  std::map<std::string, std::string> where;
  for (const ExprNode *node : postOrder(m.find("main")->body(), false)) {
    std::string t;
    if (const FunctionNode *fn = partition::regionFunctionOf(*node, &t)) {
      for (const ExprNode *inner : postOrder(fn->body(), true))
        if (const auto *c = inner->as<CallNode>(); c && c->op())
          where[c->name()] = t;
    } else if (const auto *c = node->as<CallNode>(); c && c->op()) {
      where[c->name()] = "";
    }
  }
  return where;
}

//===- Random DAGs ---------------------------------------------------------===//

/// One node of a random DAG as annotate-target would leave it.
struct RandomNode {
  std::string target;        // "" = host
  std::vector<int> operands; // value indices (0, 1: the inputs; k + 2: node k)
  std::string op;            // unary/binary op, "fma" (3 operands), "split", "concat"
};

struct RandomGraph {
  std::vector<RandomNode> nodes;
  int output2 = 0; // a second result (a value index)
};

/// Random DAGs of 1..40 nodes. A "split" (a tuple) is read only by the
/// "concat" right after it, through TupleGetItem; the concat may have another
/// target than the split.
RandomGraph randomGraph(std::mt19937_64 &rng) {
  static const char *targets[] = {"", "a", "b", "c"};
  static const char *unary[] = {"neg", "relu", "abs", "tanh"};
  static const char *binary[] = {"add", "subtract", "multiply", "maximum", "minimum"};
  RandomGraph g;
  int size = 1 + int(rng() % 40);
  auto pick = [&](int values) {
    // Prefer recent values so that chains and diamonds are common.
    int v = rng() % 3 == 0 ? int(rng() % values) : values - 1 - int(rng() % std::min(values, 4));
    if (v >= 2 && g.nodes[size_t(v - 2)].op == "split")
      ++v; // its concat
    return v;
  };
  for (int k = 0; k < size; ++k) {
    RandomNode n;
    n.target = targets[rng() % 4];
    if (k > 0 && g.nodes.back().op == "split") {
      n.op = "concat";
      n.operands = {k + 1};
      g.nodes.push_back(std::move(n));
      continue;
    }
    int values = 2 + k;
    int arity = 1 + int(rng() % 3);
    for (int i = 0; i < arity; ++i)
      n.operands.push_back(pick(values));
    if (arity == 1)
      n.op = rng() % 4 == 0 && k + 1 < size ? "split" : unary[rng() % 4];
    else if (arity == 2)
      n.op = binary[rng() % 5];
    else
      n.op = "fma";
    g.nodes.push_back(std::move(n));
  }
  g.output2 = pick(size + 2);
  return g;
}

Expr call(const std::string &op, std::vector<Expr> args, std::string name, Attrs attrs = {}) {
  return expectOk(makeCall(op, std::move(args), std::move(attrs), std::move(name)));
}

/// The ops of node k over `args` (one expression; names "n<k>", "n<k>m").
Expr nodeBody(const RandomNode &n, int k, const std::vector<Expr> &args) {
  std::string name = "n" + std::to_string(k);
  if (n.op == "fma")
    return call("add", {call("multiply", {args[0], args[1]}, name + "m"), args[2]}, name);
  if (n.op == "split")
    return call("split", {args[0]}, name,
                Attrs{{"axis", int64_t(0)}, {"sizes", std::vector<int64_t>{2, 2}}});
  if (n.op == "concat")
    return call("concat", args, name, Attrs{{"axis", int64_t(0)}});
  return call(n.op, args, name);
}

/// @main(%x0, %x1) with each targeted node wrapped in a Compiler function.
Module buildModule(const RandomGraph &g) {
  std::vector<Var> inputs = {makeVar("x0", kVec), makeVar("x1", kVec)};
  std::vector<Expr> values(inputs.begin(), inputs.end());
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const RandomNode &n = g.nodes[k];
    std::vector<Expr> args;
    if (n.op == "concat") { // the split's items, swapped
      const Expr &s = values[size_t(n.operands[0])];
      args = {expectOk(makeTupleGetItem(s, 1)), expectOk(makeTupleGetItem(s, 0))};
    } else {
      for (int v : n.operands)
        args.push_back(values[size_t(v)]);
    }
    if (n.target.empty()) {
      values.push_back(nodeBody(n, int(k), args));
      continue;
    }
    std::vector<Var> params;
    std::vector<Expr> inner;
    for (size_t i = 0; i < args.size(); ++i) {
      params.push_back(makeVar("p" + std::to_string(i), args[i]->type()));
      inner.push_back(params.back());
    }
    Function fn = makeFunction(params, nodeBody(n, int(k), inner), Attrs{{"Compiler", n.target}});
    values.push_back(expectOk(makeLocalCall(fn, std::move(args))));
  }
  Expr result = makeTuple({values.back(), values[size_t(g.output2)]});
  Module m("rand");
  m.set("main", makeFunction(inputs, result));
  return m;
}

/// The op names of each original node (the ops that carry "n<k>...").
std::string nodeOf(const std::string &opName) {
  size_t end = 1;
  while (end < opName.size() && std::isdigit(static_cast<unsigned char>(opName[end])))
    ++end;
  return opName.substr(0, end);
}

/// Brute force: contracts the original graph's nodes by the region each
/// landed in (from `regionOfNode`, -1 host) and looks for a path that leaves
/// a region and comes back.
bool hasCycleBetweenRegions(const RandomGraph &g, const std::vector<int> &regionOfNode) {
  const int n = int(g.nodes.size());
  std::vector<std::vector<int>> succ(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k)
    for (int v : g.nodes[size_t(k)].operands)
      if (v >= 2)
        succ[size_t(v - 2)].push_back(k);
  std::set<int> regions(regionOfNode.begin(), regionOfNode.end());
  for (int r : regions) {
    if (r < 0)
      continue;
    // Nodes reachable from r after leaving it.
    std::vector<char> seen(static_cast<size_t>(n), 0);
    std::vector<int> work;
    for (int k = 0; k < n; ++k)
      if (regionOfNode[size_t(k)] == r)
        for (int s : succ[size_t(k)])
          if (regionOfNode[size_t(s)] != r && !seen[size_t(s)]) {
            seen[size_t(s)] = 1;
            work.push_back(s);
          }
    while (!work.empty()) {
      int k = work.back();
      work.pop_back();
      if (regionOfNode[size_t(k)] == r)
        return true;
      for (int s : succ[size_t(k)])
        if (!seen[size_t(s)]) {
          seen[size_t(s)] = 1;
          work.push_back(s);
        }
    }
  }
  return false;
}

/// The region (numbered in @main's post-order) of each original node.
std::vector<int> regionsOfNodes(const Module &m, const RandomGraph &g) {
  std::vector<int> where(g.nodes.size(), -2);
  int region = 0;
  for (const ExprNode *node : postOrder(m.find("main")->body(), false)) {
    const FunctionNode *fn = partition::regionFunctionOf(*node);
    std::vector<std::pair<std::string, int>> ops;
    if (fn) {
      for (const ExprNode *inner : postOrder(fn->body(), true))
        if (const auto *c = inner->as<CallNode>(); c && c->op())
          ops.emplace_back(c->name(), region);
      ++region;
    } else if (const auto *c = node->as<CallNode>(); c && c->op()) {
      ops.emplace_back(c->name(), -1);
    }
    for (const auto &[name, r] : ops) {
      int k = std::stoi(nodeOf(name).substr(1));
      REQUIRE((where[size_t(k)] == -2 || where[size_t(k)] == r)); // a node is never split
      where[size_t(k)] = r;
    }
  }
  return where;
}

bool sameValues(const std::vector<Tensor> &a, const std::vector<Tensor> &b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].shape() != b[i].shape())
      return false;
    for (int64_t e = 0; e < a[i].numel(); ++e) {
      double x = a[i].getDouble(e), y = b[i].getDouble(e);
      if (std::isnan(x) != std::isnan(y))
        return false;
      if (!std::isnan(x) && std::abs(x - y) > 1e-6 * std::max(1.0, std::abs(y)))
        return false;
    }
  }
  return true;
}

Tensor randomInput(std::mt19937_64 &rng) {
  std::uniform_real_distribution<double> dist(-2, 2);
  std::vector<double> v(4);
  for (double &x : v)
    x = dist(rng);
  return test::f32({4}, v);
}

} // namespace

TEST_CASE("merge-compiler-regions on random DAGs: acyclic, same values, same targets",
          "[partition][merge_regions]") {
  std::mt19937_64 rng(20240605);
  int merged = 0;
  for (int iter = 0; iter < 2000; ++iter) {
    RandomGraph g = randomGraph(rng);
    Module m = buildModule(g);
    const std::string before = printModule(m);
    auto where = placement(m);
    std::vector<Tensor> inputs = {randomInput(rng), randomInput(rng)};
    auto expected = interp::run(m, inputs);
    REQUIRE(expected.ok());

    INFO("iteration " << iter << "\nbefore:\n" << before);
    auto stats = runPass(partition::createMergeCompilerRegionsPass(), m);
    INFO("after:\n" << printModule(m));
    merged += stats["regions-before"] > stats["regions-after"];
    int total = 0;
    for (const auto &[t, n] : regionCounts(m))
      total += n;
    REQUIRE(total == stats["regions-after"]);

    // (c) every op stays where it was (a target's region or the host).
    REQUIRE(placement(m) == where);
    // (a) no cycle between the regions formed.
    REQUIRE_FALSE(hasCycleBetweenRegions(g, regionsOfNodes(m, g)));
    // (b) same values.
    auto actual = interp::run(m, inputs);
    REQUIRE(actual.ok());
    REQUIRE(sameValues(actual->flatten(), expected->flatten()));
    // Idempotent: merging again changes nothing.
    const std::string once = printModule(m);
    runPass(partition::createMergeCompilerRegionsPass(), m);
    REQUIRE(printModule(m) == once);
  }
  CHECK(merged > 1000); // the property is not vacuous
}

TEST_CASE("merge-compiler-regions keeps the naive-cycle shapes apart", "[partition][merge_regions]") {
  // A1 -> host -> A2 and A1 -> A2: two regions stay.
  Module m = parse(R"(
def @main(%x: f32[2]) -> f32[2] {
  %f = fn(%p0: f32[2]) -> f32[2] attributes {Compiler="a"} {
    %r = relu(%p0) : f32[2]
    return %r
  }
  %a0 = %f(%x) : f32[2]
  %h = neg(%a0) : f32[2]
  %g = fn(%p0: f32[2], %p1: f32[2]) -> f32[2] attributes {Compiler="a"} {
    %s = add(%p0, %p1) : f32[2]
    return %s
  }
  %a1 = %g(%a0, %h) : f32[2]
  return %a1
}
)");
  auto stats = runPass(partition::createMergeCompilerRegionsPass(), m);
  CHECK(stats["regions-before"] == 2);
  CHECK(stats["regions-after"] == 2);

  // A1 -> B -> A3, A1 -> A2 -> A3: A1 and A2 merge, A3 does not.
  Module d = parse(R"(
def @main(%x: f32[2]) -> f32[2] {
  %f = fn(%p0: f32[2]) -> f32[2] attributes {Compiler="a"} {
    %r = relu(%p0) : f32[2]
    return %r
  }
  %g = fn(%p0: f32[2]) -> f32[2] attributes {Compiler="b"} {
    %t = tanh(%p0) : f32[2]
    return %t
  }
  %h = fn(%p0: f32[2], %p1: f32[2]) -> f32[2] attributes {Compiler="a"} {
    %s = add(%p0, %p1) : f32[2]
    return %s
  }
  %a1 = %f(%x) : f32[2]
  %b = %g(%a1) : f32[2]
  %a2 = %f(%a1) : f32[2]
  %a3 = %h(%b, %a2) : f32[2]
  return %a3
}
)");
  stats = runPass(partition::createMergeCompilerRegionsPass(), d);
  CHECK(stats["regions-before"] == 4);
  CHECK(stats["regions-after"] == 3);
  CHECK(regionCounts(d) == std::map<std::string, int>{{"a", 2}, {"b", 1}});
}

// Speed is measured by bench/bench_partition; these check that 10^5-node
// graphs go through (no recursion on depth) with the expected result.
TEST_CASE("merge-compiler-regions on 10^5-node graphs", "[partition][merge_regions]") {
  Function relu[3];
  const char *targets[] = {"a", "b", "c"};
  for (int t = 0; t < 3; ++t) {
    Var p = makeVar("p0", kVec);
    relu[t] = makeFunction({p}, call("relu", {p}, ""), Attrs{{"Compiler", std::string(targets[t])}});
  }
  SECTION("a chain with interleaved targets and host ops") {
    Var x = makeVar("x", kVec);
    Expr v = x;
    const int n = 100000;
    int runs = 0;
    for (int k = 0; k < n; ++k) {
      int kind = (k / 3) % 4; // runs of three: a, b, host, c
      runs += kind != 2 && k % 3 == 0;
      v = kind == 2 ? call("neg", {v}, "") : expectOk(makeLocalCall(relu[kind == 3 ? 2 : kind], {v}));
    }
    Module m;
    m.set("main", makeFunction({x}, v));
    runPass(partition::createMergeCompilerRegionsPass(), m);
    int total = 0;
    for (const auto &[t, c] : regionCounts(m))
      total += c;
    CHECK(total == runs); // each run of three merged
  }
  SECTION("wide layers: every node reads two nodes of the previous layer") {
    Var x = makeVar("x", kVec);
    const int width = 100, depth = 1000;
    std::vector<Expr> layer(width, x);
    std::mt19937_64 rng(7);
    for (int d = 0; d < depth; ++d) {
      std::vector<Expr> next;
      for (int w = 0; w < width; ++w) {
        Expr a = layer[rng() % width], b = layer[rng() % width];
        Expr sum = call("add", {a, b}, "");
        int t = int(rng() % 4);
        next.push_back(t == 3 ? sum : expectOk(makeLocalCall(relu[t], {sum})));
      }
      layer = std::move(next);
    }
    Module m;
    m.set("main", makeFunction({x}, makeTuple(layer)));
    auto stats = runPass(partition::createMergeCompilerRegionsPass(), m);
    CHECK(stats["regions-after"] < stats["regions-before"]);
    int total = 0;
    for (const auto &[t, c] : regionCounts(m))
      total += c;
    CHECK(total == stats["regions-after"]);
  }
}

TEST_CASE("prune-regions sends regions without compute-heavy ops back", "[partition][merge_regions]") {
  // A{dense} -> A{relu} -> host -> A{exp, composite(abs, neg)}: the second
  // region has no compute-heavy op and goes back, composite inlined.
  Module m = parse(R"(
def @main(%x: f32[1, 4], %w: f32[3, 4]) -> f32[1, 3] {
  %f = fn(%p0: f32[1, 4], %p1: f32[3, 4]) -> f32[1, 3] attributes {Compiler="a"} {
    %d = dense(%p0, %p1) : f32[1, 3]
    %r = relu(%d) : f32[1, 3]
    return %r
  }
  %a0 = %f(%x, %w) : f32[1, 3]
  %h = neg(%a0) : f32[1, 3]
  %g = fn(%p0: f32[1, 3]) -> f32[1, 3] attributes {Compiler="a"} {
    %e = exp(%p0) : f32[1, 3]
    %c = fn(%q0: f32[1, 3]) -> f32[1, 3] attributes {Composite="a.abs_neg"} {
      %ab = abs(%q0) : f32[1, 3]
      %ng = neg(%ab) : f32[1, 3]
      return %ng
    }
    %cc = %c(%e) : f32[1, 3]
    return %cc
  }
  %a1 = %g(%h) : f32[1, 3]
  return %a1
}
)");
  std::vector<Tensor> inputs = {test::f32({1, 4}, {1, -2, 3, -4}),
                                test::f32({3, 4}, {1, 2, 3, 4, 5, 6, 7, 8, -1, -2, -3, -4})};
  auto expected = interp::run(m, inputs);
  REQUIRE(expected.ok());

  SECTION("without targets") {
    auto stats = runPass(partition::createPruneRegionsPass(nullptr), m);
    CHECK(stats["regions-pruned"] == 1);
    CHECK(regionCounts(m) == std::map<std::string, int>{{"a", 1}});
    auto where = placement(m);
    CHECK(where["e"] == "");
    CHECK(where["ab"] == "");
    CHECK(where["ng"] == "");
    CHECK(where["d"] == "a");
  }
  SECTION("with a state: one log entry per op") {
    partition::PartitionState state;
    runPass(partition::createPruneRegionsPass(&state), m);
    REQUIRE(state.log.host.size() == 3);
    std::vector<std::string> ops;
    for (const auto &d : state.log.host) {
      CHECK(d.kind == partition::HostDecision::Kind::Pruned);
      CHECK(d.function == "main");
      CHECK(d.target == "a");
      CHECK(d.reason ==
            "no compute-heavy op (conv2d, conv2d_transpose, dense, matmul, batch_matmul, lstm, gru, rnn)");
      CHECK(d.node == std::map<std::string, std::string>{
                          {"exp", "e"}, {"abs", "ab"}, {"neg", "ng"}}[d.op]);
      ops.push_back(d.op);
    }
    CHECK(ops == std::vector<std::string>{"exp", "abs", "neg"});
  }
  auto actual = interp::run(m, inputs);
  REQUIRE(actual.ok());
  REQUIRE(sameValues(actual->flatten(), expected->flatten()));
}

TEST_CASE("prune-regions re-merges the regions it keeps", "[partition][merge_regions]") {
  // Unmerged A{dense} -> A{dense}: both kept, then merged into one.
  Module m = parse(R"(
def @main(%x: f32[1, 4], %w: f32[4, 4]) -> f32[1, 4] {
  %f = fn(%p0: f32[1, 4], %p1: f32[4, 4]) -> f32[1, 4] attributes {Compiler="a"} {
    %d = dense(%p0, %p1) : f32[1, 4]
    return %d
  }
  %a0 = %f(%x, %w) : f32[1, 4]
  %a1 = %f(%a0, %w) : f32[1, 4]
  return %a1
}
)");
  auto stats = runPass(partition::createPruneRegionsPass(nullptr), m);
  CHECK(stats["regions-pruned"] == 0);
  CHECK(regionCounts(m) == std::map<std::string, int>{{"a", 1}});
}
