//===- ir/visit.cpp - Iterative traversal and rewriting ------------------===//
#include "ir/visit.h"

#include "support/ptr_index.h"

namespace tessera::ir {

namespace {
template <typename Emit>
void walkPostOrder(const Expr &root, bool intoFunctions, Emit &&emit) {
  struct Frame {
    const Expr *expr;
    size_t next;
  };
  PtrIndex seen(1024);
  std::vector<Frame> stack;
  stack.push_back({&root, 0});
  seen.insert(root.get(), 0);
  while (!stack.empty()) {
    Frame &top = stack.back();
    const ExprNode *node = top.expr->get();
    auto ops = node->operands();
    bool leaf = !intoFunctions && node->kind() == ExprKind::Function;
    if (!leaf && top.next < ops.size()) {
      const Expr &child = ops[top.next++];
      if (seen.insert(child.get(), 0).second)
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
  std::vector<const ExprNode *> order = postOrder(root);
  PtrIndex position(order.size());
  for (size_t i = 0; i < order.size(); ++i)
    position.insert(order[i], int64_t(i));
  std::vector<int> uses(order.size(), 0);
  uses.back() = 1; // the root
  for (const ExprNode *node : order)
    for (const auto &op : node->operands())
      ++uses[size_t(position.find(op.get()))];
  std::unordered_map<const ExprNode *, int> counts;
  counts.reserve(order.size());
  for (size_t i = 0; i < order.size(); ++i)
    counts.emplace(order[i], uses[i]);
  return counts;
}

Expected<Expr> rewrite(const Expr &root, const RewriteFn &fn, bool intoFunctions) {
  // Pointers to the owning slots (an operand of the first user, or `root`),
  // which outlive this call: no reference-count traffic per node.
  std::vector<const Expr *> order;
  walkPostOrder(root, intoFunctions, [&](const Expr &e) { order.push_back(&e); });
  // replaced[i] is the replacement of *order[i]; position maps a node to i.
  PtrIndex position(order.size());
  for (size_t i = 0; i < order.size(); ++i)
    position.insert(order[i]->get(), int64_t(i));
  std::vector<Expr> replaced(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    const Expr &node = *order[i];
    bool leaf = !intoFunctions && node->kind() == ExprKind::Function;
    Expr rebuilt = node;
    if (!leaf && !node->operands().empty()) {
      std::vector<Expr> operands;
      operands.reserve(node->operands().size());
      for (const auto &op : node->operands())
        operands.push_back(replaced[size_t(position.find(op.get()))]);
      TS_ASSIGN_OR_RETURN(rebuilt, withOperands(node, std::move(operands)));
    }
    TS_ASSIGN_OR_RETURN(replaced[i], fn(node, rebuilt));
  }
  return replaced.back(); // the root comes last in post-order
}

Expected<Function> rewriteFunction(const Function &f, const RewriteFn &fn, bool intoFunctions) {
  TS_ASSIGN_OR_RETURN(Expr body, rewrite(f->body(), fn, intoFunctions));
  if (body == f->body())
    return f;
  return makeFunction(f->params(), std::move(body), f->attrs(), f->name(), f->span());
}

} // namespace tessera::ir
