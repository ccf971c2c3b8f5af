//===- passes/infer_types.cpp - Re-derive every type ---------------------===//
//
// Rebuilds every node from its operands, so that each type is derived again
// from the op relations. Needed after anything changes the type of a
// parameter (binding input shapes, say): the change flows through every use.
// Global functions are processed callees first, so calls see their callee's
// new signature. Errors name the function and the value.
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
  if (n.span().known())
    what += fmt::format(" at line {}:{}", n.span().line, n.span().col);
  return what;
}

class InferTypes final : public Pass {
public:
  std::string_view name() const override { return "infer-types"; }
  std::string_view description() const override {
    return "Re-derive every type from the op relations (after parameter types change)";
  }

  Status run(Module &m, PassContext &ctx) override {
    for (const std::string &global : calleesFirst(m)) {
      Function fn = m.find(global);
      int64_t changed = 0;
      auto result = rewriteFunction(fn, [&](const Expr &orig, const Expr &rebuilt) -> Expected<Expr> {
        Expected<Expr> fresh = rebuild(m, rebuilt);
        if (!fresh.ok())
          return std::move(fresh).withContext("while inferring the type of " + describe(*orig))
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
  /// Builds the node again from its operands, running its type relation.
  static Expected<Expr> rebuild(const Module &m, const Expr &node) {
    std::vector<Expr> ops(node->operands().begin(), node->operands().end());
    switch (node->kind()) {
    case ExprKind::Call: {
      const auto *c = node->as<CallNode>();
      if (c->calleeKind() == CallNode::CalleeKind::Op)
        return makeCall(c->op(), std::move(ops), c->attrs(), c->name(), c->span());
      if (c->calleeKind() == CallNode::CalleeKind::Global) {
        TS_ASSIGN_OR_RETURN(Type fnType, m.globalType(c->global()));
        return makeGlobalCall(c->global(), fnType, std::move(ops), c->name(), c->span());
      }
      Expr fn = ops.front();
      ops.erase(ops.begin());
      return makeLocalCall(std::move(fn), std::move(ops), c->name(), c->span());
    }
    case ExprKind::Tuple:
      return makeTuple(std::move(ops), node->name(), node->span());
    case ExprKind::TupleGetItem:
      return makeTupleGetItem(ops[0], node->as<TupleGetItemNode>()->index(), node->name(),
                              node->span());
    case ExprKind::Function: {
      const auto *f = node->as<FunctionNode>();
      return Expr(makeFunction(f->params(), ops[0], f->attrs(), f->name(), f->span()));
    }
    default:
      return node;
    }
  }
};

} // namespace

std::unique_ptr<Pass> createInferTypesPass() { return std::make_unique<InferTypes>(); }

} // namespace tessera::passes
