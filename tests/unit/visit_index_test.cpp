//===- tests/unit/visit_index_test.cpp - NodeIndex, anyNode, PtrIndex -----===//
//
// The position-indexed traversal helpers of ir/visit.h that the partition
// passes use (NodeIndex, useCountsByPosition, rewrite over an index,
// anyNode) and the flat pointer table behind them (support/ptr_index.h),
// checked against the pointer-keyed originals (postOrder, useCounts,
// rewrite).
//
//===----------------------------------------------------------------------===//
#include "ir/structural.h"
#include "ir/visit.h"
#include "support/ptr_index.h"
#include "test_util.h"

#include <random>
#include <thread>

using namespace tessera;
using namespace tessera::ir;

namespace {

Type vec2() {
  return Type::tensor(DType::F32, {2});
}

/// x -> relu -> {sigmoid, tanh} -> add (a diamond), with add(x, x) beside it.
struct Diamond {
  Var x = makeVar("x", vec2());
  Expr r = expectOk(makeCall("relu", {x}));
  Expr s = expectOk(makeCall("sigmoid", {r}));
  Expr t = expectOk(makeCall("tanh", {r}));
  Expr a = expectOk(makeCall("add", {s, t}));
  Expr twice = expectOk(makeCall("add", {x, x}));
  Expr root = makeTuple({a, twice});
};

} // namespace

TEST_CASE("NodeIndex lists the nodes in post-order with operand positions", "[visit][node_index]") {
  Diamond d;
  NodeIndex index(d.root);
  std::vector<const ExprNode *> order = postOrder(d.root);
  REQUIRE(index.size() == order.size());
  for (size_t i = 0; i < index.size(); ++i) {
    REQUIRE(index.node(i) == order[i]);
    REQUIRE(index.expr(i).get() == order[i]);
    REQUIRE(index.kind(i) == order[i]->kind());
    const auto *call = order[i]->as<CallNode>();
    REQUIRE(index.op(i) == (call && call->calleeKind() == CallNode::CalleeKind::Op ? call->op()
                                                                                   : nullptr));
    REQUIRE(index.position(order[i]) == int64_t(i));
    auto ops = order[i]->operands();
    auto pos = index.operands(i);
    REQUIRE(pos.size() == ops.size());
    for (size_t k = 0; k < ops.size(); ++k) {
      REQUIRE(index.node(size_t(pos[k])) == ops[k].get());
      REQUIRE(size_t(pos[k]) < i);
    }
  }
  REQUIRE(index.node(index.size() - 1) == d.root.get());
  // add(x, x): both operand positions name x.
  auto twice = index.operands(index.at(d.twice.get()));
  REQUIRE(twice.size() == 2);
  REQUIRE(twice[0] == twice[1]);
  REQUIRE(index.node(size_t(twice[0])) == d.x.get());
  REQUIRE(index.position(makeVar("y", vec2()).get()) == -1);

  // The index holds its nodes: they outlive the graph's other owners.
  std::weak_ptr<const ExprNode> relu;
  auto held = [&] {
    Var y = makeVar("y", vec2());
    Expr r = expectOk(makeCall("relu", {y}));
    relu = r;
    return std::make_unique<NodeIndex>(makeTuple({r, y}));
  }();
  REQUIRE_FALSE(relu.expired());
  REQUIRE(held->expr(1)->as<CallNode>()->op()->name == "relu");
  held.reset();
  REQUIRE(relu.expired());
}

TEST_CASE("NodeIndex without entering functions keeps them as leaves", "[visit][node_index]") {
  Var p = makeVar("p", vec2());
  Expr inner = expectOk(makeCall("relu", {p}));
  Function f = makeFunction({p}, inner, Attrs{{"Compiler", std::string("json")}});
  Var x = makeVar("x", vec2());
  Expr call = expectOk(makeLocalCall(f, {x}));
  Expr root = expectOk(makeCall("sigmoid", {call}));

  NodeIndex top(root, /*intoFunctions=*/false);
  REQUIRE(top.size() == postOrder(root, false).size());
  const size_t fi = top.at(f.get());
  REQUIRE(top.kind(fi) == ExprKind::Function);
  REQUIRE(top.operands(fi).empty());
  REQUIRE(top.position(inner.get()) == -1);
  REQUIRE(top.op(top.at(call.get())) == nullptr); // a call of a function, not of an op
  REQUIRE(top.op(top.at(root.get()))->name == "sigmoid");

  NodeIndex all(root, /*intoFunctions=*/true);
  REQUIRE(all.size() == postOrder(root, true).size());
  REQUIRE(all.operands(all.at(f.get())).size() == 1);
  REQUIRE(all.position(inner.get()) >= 0);
}

TEST_CASE("useCountsByPosition agrees with useCounts", "[visit][node_index]") {
  Diamond d;
  NodeIndex index(d.root);
  std::vector<int> uses = useCountsByPosition(index);
  auto expected = useCounts(d.root);
  REQUIRE(uses.size() == expected.size());
  for (size_t i = 0; i < index.size(); ++i)
    REQUIRE(uses[i] == expected.at(index.node(i)));
  REQUIRE(uses[index.at(d.x.get())] == 3); // relu and add(x, x) twice
  REQUIRE(uses.back() == 1);               // the root
}

TEST_CASE("rewrite over an index rebuilds only what changed", "[visit][node_index]") {
  Diamond d;
  NodeIndex index(d.root);
  // Identity: the same root, each node offered once.
  size_t calls = 0;
  auto same = rewrite(index,
                      [&](size_t i, const Expr &original, const Expr &rebuilt,
                          std::span<const Expr> replaced) -> Expected<Expr> {
                        REQUIRE(replaced.size() == i);
                        REQUIRE(original == rebuilt);
                        ++calls;
                        return rebuilt;
                      });
  REQUIRE(same.ok());
  REQUIRE(*same == d.root);
  REQUIRE(calls == index.size());

  // tanh -> relu: the add above it and the tuple are rebuilt, the rest kept.
  auto swapped = rewrite(index,
                         [&](size_t, const Expr &original, const Expr &rebuilt,
                             std::span<const Expr>) -> Expected<Expr> {
                           if (original == d.t)
                             return makeCall("relu", {rebuilt->operands()[0]});
                           return rebuilt;
                         });
  REQUIRE(swapped.ok());
  auto reference =
      rewrite(d.root, [&](const Expr &original, const Expr &rebuilt) -> Expected<Expr> {
        if (original == d.t)
          return makeCall("relu", {rebuilt->operands()[0]});
        return rebuilt;
      });
  REQUIRE(reference.ok());
  REQUIRE(structuralEqual(*swapped, *reference));
  const auto &fields = (*swapped)->operands();
  REQUIRE(fields[1] == d.twice); // untouched branch: the same node
  REQUIRE(fields[0] != d.a);
  REQUIRE(fields[0]->operands()[0] == d.s);
}

TEST_CASE("NodeIndex with substitutions indexes the graph as if rebuilt", "[visit][node_index]") {
  Diamond d;
  // sigmoid(relu(x)) becomes exp(x), the root becomes tuple(add, x); the
  // replacement of sigmoid reads x, which the walk then reaches through it.
  Expr e = expectOk(makeCall("exp", {d.x}));
  Expr root = makeTuple({d.a, d.x});
  NodeIndex::Substitutions subst{{d.s.get(), e}, {d.root.get(), root}};
  NodeIndex index(d.root, /*intoFunctions=*/true, subst);
  // The same graph, built.
  Expr a = expectOk(makeCall("add", {e, d.t}));
  Expr built = makeTuple({a, d.x});
  NodeIndex expected(built);
  REQUIRE(index.size() == expected.size());
  for (size_t i = 0; i < index.size(); ++i) {
    INFO("position " << i);
    REQUIRE(index.kind(i) == expected.kind(i));
    REQUIRE(std::vector<int>(index.operands(i).begin(), index.operands(i).end()) ==
            std::vector<int>(expected.operands(i).begin(), expected.operands(i).end()));
  }
  // Replaced nodes are not in it; their replacements are, as the map's values.
  CHECK(index.position(d.s.get()) == -1);
  CHECK(index.position(d.twice.get()) == -1); // only the old root read it
  CHECK(index.expr(size_t(index.position(e.get()))) == subst.at(d.s.get()));
  CHECK(index.root() == root);
  CHECK(index.node(index.size() - 1) == root.get());
}

namespace {

/// The two indexes list the same nodes in the same order.
void requireSameIndex(const NodeIndex &got, const NodeIndex &want) {
  REQUIRE(got.size() == want.size());
  REQUIRE(got.root() == want.root());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("position " << i);
    REQUIRE(got.node(i) == want.node(i));
    REQUIRE(got.expr(i) == want.expr(i));
    REQUIRE(got.kind(i) == want.kind(i));
    REQUIRE(got.op(i) == want.op(i));
    REQUIRE(got.position(got.node(i)) == int64_t(i));
    REQUIRE(std::vector<int>(got.operands(i).begin(), got.operands(i).end()) ==
            std::vector<int>(want.operands(i).begin(), want.operands(i).end()));
  }
}

} // namespace

TEST_CASE("NodeIndex derived from another with substitutions is the walked one",
          "[visit][node_index]") {
  {
    Diamond d;
    Expr e = expectOk(makeCall("exp", {d.x}));
    Expr root = makeTuple({d.a, d.x});
    NodeIndex::Substitutions subst{{d.s.get(), e}, {d.root.get(), root}};
    requireSameIndex(NodeIndex(NodeIndex(d.root), subst), NodeIndex(d.root, true, subst));
    requireSameIndex(NodeIndex(NodeIndex(d.root), {}), NodeIndex(d.root));
  }
  // Random DAGs with a local function, random substitutions: each replaces
  // a node by a new call of nodes made before it (so no cycle), possibly of
  // other replaced nodes or of the function.
  std::mt19937_64 rng(20261122);
  for (int round = 0; round < 300; ++round) {
    INFO("round " << round);
    std::vector<Expr> nodes = {makeVar("x", vec2()), makeVar("y", vec2())};
    Var p = makeVar("p", vec2());
    Function f = makeFunction({p}, expectOk(makeCall("relu", {p})));
    auto pick = [&](size_t below) { return nodes[size_t(rng() % below)]; };
    const int count = 2 + int(rng() % 25);
    for (int k = 0; k < count; ++k) {
      switch (rng() % 4) {
      case 0: nodes.push_back(expectOk(makeCall("sigmoid", {pick(nodes.size())}))); break;
      case 1: nodes.push_back(expectOk(makeLocalCall(f, {pick(nodes.size())}))); break;
      default:
        nodes.push_back(expectOk(makeCall("add", {pick(nodes.size()), pick(nodes.size())})));
      }
    }
    std::vector<Expr> fields(nodes.end() - 3, nodes.end());
    Expr root = makeTuple(fields);
    nodes.push_back(root);
    NodeIndex::Substitutions subst;
    for (size_t k = 2; k < nodes.size(); ++k) {
      if (rng() % 3 != 0)
        continue;
      Expr value = rng() % 2 ? expectOk(makeCall("tanh", {pick(k)}))
                             : expectOk(makeCall("multiply", {pick(k), pick(k)}));
      subst.emplace(nodes[k].get(), value);
    }
    for (bool into : {false, true}) {
      auto base = std::make_unique<NodeIndex>(root, into);
      NodeIndex derived(std::move(*base), subst);
      base.reset(); // the derived index does not point into its base
      requireSameIndex(derived, NodeIndex(root, into, subst));
    }
  }
}

TEST_CASE("A derived NodeIndex finds positions once built, moved, and from two threads",
          "[visit][node_index]") {
  Diamond d;
  Expr e = expectOk(makeCall("exp", {d.x}));
  NodeIndex::Substitutions subst{{d.s.get(), e}};
  const NodeIndex walked(d.root, true, subst);
  // A derived index builds its table of positions on the first question;
  // moved before any, it still answers every node, and nothing else.
  NodeIndex derived(NodeIndex(d.root), subst);
  NodeIndex moved(std::move(derived));
  auto check = [&](const NodeIndex &index) {
    for (size_t i = 0; i < walked.size(); ++i)
      REQUIRE(index.position(walked.node(i)) == int64_t(i));
    REQUIRE(index.position(d.s.get()) == -1); // replaced
    REQUIRE(index.position(makeVar("y", vec2()).get()) == -1);
  };
  check(moved);
  // A chain derived twice: its base answers from a table it built lazily.
  Expr g = expectOk(makeCall("neg", {d.x}));
  NodeIndex twice(NodeIndex(NodeIndex(d.root), subst), {{e.get(), g}});
  REQUIRE(twice.position(g.get()) >= 0);
  REQUIRE(twice.position(e.get()) == -1);
  // The first questions from two threads at once see the same complete table.
  for (int round = 0; round < 50; ++round) {
    NodeIndex fresh(NodeIndex(d.root), subst);
    std::vector<int64_t> seen[2];
    std::thread other([&] {
      for (size_t i = 0; i < walked.size(); ++i)
        seen[1].push_back(fresh.position(walked.node(i)));
    });
    for (size_t i = 0; i < walked.size(); ++i)
      seen[0].push_back(fresh.position(walked.node(i)));
    other.join();
    REQUIRE(seen[0] == seen[1]);
    check(fresh);
  }
}

TEST_CASE("anyNode stops at a match and walks deep chains iteratively", "[visit][node_index]") {
  Diamond d;
  auto isOp = [](const char *name) {
    return [name](const ExprNode &n) {
      const auto *c = n.as<CallNode>();
      return c && c->op() && c->op()->name == name;
    };
  };
  REQUIRE(anyNode(d.root, isOp("tanh")));
  REQUIRE_FALSE(anyNode(d.root, isOp("dense")));

  Expr deep = makeVar("x", vec2());
  for (int i = 0; i < 100000; ++i)
    deep = expectOk(makeCall("relu", {deep}));
  REQUIRE_FALSE(anyNode(deep, isOp("sin")));
  int seen = 0;
  REQUIRE_FALSE(anyNode(deep, [&](const ExprNode &) { return ++seen < 0; }));
  REQUIRE(seen == 100001);
  NodeIndex index(deep);
  REQUIRE(index.size() == 100001);
  REQUIRE(index.kind(0) == ExprKind::Var);
}

TEST_CASE("PtrIndex stores, finds, replaces and grows", "[visit][ptr_index]") {
  std::vector<int> keys(1000);
  PtrIndex table(4);
  for (size_t i = 0; i < keys.size(); ++i) {
    auto [value, fresh] = table.insert(&keys[i], int64_t(i));
    REQUIRE(fresh);
    REQUIRE(value == int64_t(i));
  }
  REQUIRE(table.size() == keys.size());
  auto [old, fresh] = table.insert(&keys[7], 99);
  REQUIRE_FALSE(fresh);
  REQUIRE(old == 7);
  table.assign(&keys[7], 70);
  int other = 0;
  table.assign(&other, 5); // absent: no effect
  for (size_t i = 0; i < keys.size(); ++i)
    REQUIRE(table.find(&keys[i]) == (i == 7 ? 70 : int64_t(i)));
  REQUIRE(table.find(&other) == -1);
  REQUIRE_FALSE(table.contains(&other));
}
