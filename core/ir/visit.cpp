//===- ir/visit.cpp - Iterative traversal and rewriting ------------------===//
#include "ir/visit.h"

#include <unordered_set>

namespace tessera::ir {

namespace {
template <typename Emit>
void walkPostOrder(const Expr &root, bool intoFunctions, Emit &&emit) {
  struct Frame {
    const Expr *expr;
    size_t next;
  };
  std::unordered_set<const ExprNode *> seen;
  std::vector<Frame> stack;
  stack.push_back({&root, 0});
  seen.insert(root.get());
  while (!stack.empty()) {
    Frame &top = stack.back();
    const ExprNode *node = top.expr->get();
    auto ops = node->operands();
    bool leaf = !intoFunctions && node->kind() == ExprKind::Function;
    if (!leaf && top.next < ops.size()) {
      const Expr &child = ops[top.next++];
      if (seen.insert(child.get()).second)
        stack.push_back({&child, 0});
      continue;
    }
    const Expr &done = *top.expr;
    stack.pop_back();
    emit(done);
  }
}
} // namespace

std::vector<const ExprNode *> postOrder(const Expr &root, bool intoFunctions) {
  std::vector<const ExprNode *> out;
  walkPostOrder(root, intoFunctions, [&](const Expr &e) { out.push_back(e.get()); });
  return out;
}

std::vector<Expr> postOrderExprs(const Expr &root, bool intoFunctions) {
  std::vector<Expr> out;
  walkPostOrder(root, intoFunctions, [&](const Expr &e) { out.push_back(e); });
  return out;
}

std::unordered_map<const ExprNode *, int> useCounts(const Expr &root) {
  std::unordered_map<const ExprNode *, int> counts;
  counts[root.get()] = 1;
  for (const ExprNode *node : postOrder(root))
    for (const auto &op : node->operands())
      ++counts[op.get()];
  return counts;
}

Expected<Expr> rewrite(const Expr &root, const RewriteFn &fn, bool intoFunctions) {
  std::unordered_map<const ExprNode *, Expr> replaced;
  auto order = postOrderExprs(root, intoFunctions);
  replaced.reserve(order.size());
  for (const Expr &node : order) {
    bool leaf = !intoFunctions && node->kind() == ExprKind::Function;
    Expr rebuilt = node;
    if (!leaf && !node->operands().empty()) {
      std::vector<Expr> operands;
      operands.reserve(node->operands().size());
      for (const auto &op : node->operands())
        operands.push_back(replaced.at(op.get()));
      TS_ASSIGN_OR_RETURN(rebuilt, withOperands(node, std::move(operands)));
    }
    TS_ASSIGN_OR_RETURN(Expr result, fn(node, rebuilt));
    replaced[node.get()] = std::move(result);
  }
  return replaced.at(root.get());
}

Expected<Function> rewriteFunction(const Function &f, const RewriteFn &fn, bool intoFunctions) {
  TS_ASSIGN_OR_RETURN(Expr body, rewrite(f->body(), fn, intoFunctions));
  if (body == f->body())
    return f;
  return makeFunction(f->params(), std::move(body), f->attrs(), f->name(), f->span());
}

} // namespace tessera::ir
