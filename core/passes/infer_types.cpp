//===- passes/infer_types.cpp - Re-derive every type ---------------------===//
//
// Nodes are typed when they are built, so a graph is never stale inside
// itself; what can go stale is a call of a global function whose signature
// changed (binding input shapes, say, changes a parameter type). This pass
// rebuilds such calls against the callee's current type, and every node
// above them, so the change flows through every use. Global functions are
// processed callees first. Errors name the function and the value.
//
//===----------------------------------------------------------------------===//
#include "passes/pass.h"

#include "ir/visit.h"

#include <unordered_map>
#include <unordered_set>

namespace tessera::passes {

using namespace ir;

namespace {

/// Global functions in callee-before-caller order (iterative DFS).
std::vector<std::string> calleesFirst(const Module &m) {
  std::unordered_map<std::string, std::vector<std::string>> callees;
  for (const auto &[name, fn] : m.functions())
    for (const ExprNode *n : postOrder(fn))
      if (const auto *c = n->as<CallNode>(); c && !c->global().empty() && m.has(c->global()))
        callees[name].push_back(c->global());
  std::vector<std::string> order;
  std::unordered_set<std::string> seen;
  for (const auto &[root, fn] : m.functions()) {
    if (!seen.insert(root).second)
      continue;
    std::vector<std::pair<std::string, size_t>> stack{{root, 0}};
    while (!stack.empty()) {
      auto &[name, next] = stack.back();
      auto &list = callees[name];
      if (next < list.size()) {
        const std::string callee = list[next++];
        if (seen.insert(callee).second)
          stack.push_back({callee, 0});
        continue;
      }
      order.push_back(name);
      stack.pop_back();
    }
  }
  return order;
}

std::string describe(const ExprNode &n) {
  std::string what = n.as<CallNode>() ? n.as<CallNode>()->calleeName() : "value";
  if (!n.name().empty())
    what += fmt::format(" '%{}'", n.name());
  return what;
}

const PassInfo kInferTypesInfo{
    "infer-types",
    "Re-type calls of globals whose signature changed, and every value above them",
    "Nodes are typed when built, so only a call of a global whose signature changed "
    "(binding input shapes) can be stale: it is rebuilt against the callee's type, with "
    "every value above it. Globals are processed callees first.",
    {
        {"types-changed", "values whose type changed"},
    }};

class InferTypes final : public Pass {
public:
  const PassInfo &info() const override { return kInferTypesInfo; }

  Status run(Module &m, PassContext &ctx) override {
    for (const std::string &global : calleesFirst(m)) {
      Function fn = m.find(global);
      int64_t changed = 0;
      auto result = rewriteFunction(fn, [&](const Expr &orig, const Expr &rebuilt) -> Expected<Expr> {
        // rewrite() already rebuilt (and so re-inferred) every node whose
        // operands changed; only a global call can go stale on its own, when
        // its callee's signature changed.
        const auto *call = rebuilt->as<CallNode>();
        if (!call || call->calleeKind() != CallNode::CalleeKind::Global) {
          if (rebuilt->type() != orig->type())
            ++changed;
          return rebuilt;
        }
        Expected<Expr> fresh = rebuild(m, rebuilt);
        if (!fresh.ok())
          return std::move(fresh)
              .withContext("while inferring the type of " + describe(*orig))
              .withPosition(m.position(*orig))
              .error();
        if ((*fresh)->type() != orig->type())
          ++changed;
        return fresh;
      });
      if (!result.ok())
        return std::move(result).withContext(fmt::format("in function '@{}'", global)).error();
      ctx.stat("types-changed") += changed;
      if (*result != fn)
        m.set(global, std::move(result).value());
    }
    return okStatus();
  }

private:
  /// A global call built again against its callee's current signature.
  static Expected<Expr> rebuild(const Module &m, const Expr &node) {
    const auto *c = node->as<CallNode>();
    std::vector<Expr> args(c->args().begin(), c->args().end());
    TS_ASSIGN_OR_RETURN(Type fnType, m.globalType(c->global()));
    return makeGlobalCall(c->global(), fnType, std::move(args), c->name(), c->span());
  }
};

} // namespace

std::unique_ptr<Pass> createInferTypesPass() { return std::make_unique<InferTypes>(); }

} // namespace tessera::passes
