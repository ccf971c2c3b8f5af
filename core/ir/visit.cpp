//===- ir/visit.cpp - Iterative traversal and rewriting ------------------===//
#include "ir/visit.h"

#include "support/ptr_index.h"

namespace tessera::ir {

namespace {
/// Walks in post-order, calling emit(slot) for each node once. `seen` gets
/// every visited node (with value 0); callers may reuse it afterwards.
template <typename Emit>
void walkPostOrder(const Expr &root, bool intoFunctions, PtrIndex &seen, Emit &&emit) {
  struct Frame {
    const Expr *expr;
    size_t next;
  };
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

template <typename Emit> void walkPostOrder(const Expr &root, bool intoFunctions, Emit &&emit) {
  PtrIndex seen(8); // small bodies are common: grows by doubling
  walkPostOrder(root, intoFunctions, seen, emit);
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

bool anyNode(const Expr &root, const std::function<bool(const ExprNode &)> &pred,
             bool intoFunctions) {
  PtrIndex seen(8);
  std::vector<const ExprNode *> stack{root.get()};
  seen.insert(root.get(), 0);
  while (!stack.empty()) {
    const ExprNode *node = stack.back();
    stack.pop_back();
    if (pred(*node))
      return true;
    if (!intoFunctions && node->kind() == ExprKind::Function)
      continue;
    for (const auto &op : node->operands())
      if (seen.insert(op.get(), 0).second)
        stack.push_back(op.get());
  }
  return false;
}

std::unordered_map<const ExprNode *, int> useCounts(const Expr &root) {
  NodeIndex index(root, /*intoFunctions=*/true);
  std::vector<int> uses = useCountsByPosition(index);
  std::unordered_map<const ExprNode *, int> counts;
  counts.reserve(index.size());
  for (size_t i = 0; i < index.size(); ++i)
    counts.emplace(index.node(i), uses[i]);
  return counts;
}

Expected<Expr> rewrite(const Expr &root, const RewriteFn &fn, bool intoFunctions) {
  // Pointers to the owning slots (an operand of the first user, or `root`),
  // which outlive this call: no reference-count traffic per node. The table
  // of visited nodes then maps each node to its position.
  std::vector<const Expr *> order;
  PtrIndex position(8);
  walkPostOrder(root, intoFunctions, position, [&](const Expr &e) {
    position.assign(e.get(), int64_t(order.size()));
    order.push_back(&e);
  });
  // replaced[i] is the replacement of *order[i].
  std::vector<Expr> replaced(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    const Expr &node = *order[i];
    bool leaf = !intoFunctions && node->kind() == ExprKind::Function;
    Expr rebuilt = node;
    bool changed = false;
    if (!leaf)
      for (const auto &op : node->operands())
        if (replaced[size_t(position.find(op.get()))] != op) {
          changed = true;
          break;
        }
    if (changed) {
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

NodeIndex::NodeIndex(Expr root, bool intoFunctions) : NodeIndex(std::move(root), intoFunctions, {}) {}

NodeIndex::NodeIndex(Expr root, bool intoFunctions, const Substitutions &substitute)
    : root_(std::move(root)), intoFunctions_(intoFunctions), position_(8) {
  // The substitutions in a flat table (one probe per edge, no chasing).
  std::vector<const Expr *> values;
  PtrIndex lookup(substitute.size());
  for (const auto &[from, to] : substitute) {
    lookup.insert(from, int64_t(values.size()));
    values.push_back(&to);
  }
  auto seen = [&](const Expr &e) -> const Expr & {
    if (values.empty())
      return e;
    int64_t k = lookup.find(e.get());
    return k < 0 ? e : *values[size_t(k)];
  };
  root_ = seen(root_);
  // The walk of walkPostOrder, recording each edge's target as it goes: the
  // probe that tells whether a child was seen also gives its discovery
  // number, so the operand table costs no extra lookup.
  struct Frame {
    const Expr *expr;
    size_t next;
    int64_t pre; // discovery number
  };
  std::vector<Frame> stack;
  std::vector<int64_t> edges; // discovery numbers of the operands of the frames on the stack
  stack.push_back({&root_, 0, 0});
  position_.insert(root_.get(), 0);
  preToPost_.push_back(-1);
  opStart_.push_back(0);
  while (!stack.empty()) {
    Frame &top = stack.back();
    const ExprNode *node = top.expr->get();
    auto ops = node->operands();
    const bool leaf = !intoFunctions && node->kind() == ExprKind::Function;
    if (!leaf && top.next < ops.size()) {
      const Expr &child = seen(ops[top.next++]);
      auto [pre, fresh] = position_.insert(child.get(), int64_t(preToPost_.size()));
      edges.push_back(pre);
      if (fresh) {
        preToPost_.push_back(-1);
        stack.push_back({&child, 0, pre});
      }
      continue;
    }
    // Every operand was emitted before this node.
    const size_t k = leaf ? 0 : ops.size();
    for (size_t e = edges.size() - k; e < edges.size(); ++e)
      opPos_.push_back(int(preToPost_[size_t(edges[e])]));
    edges.resize(edges.size() - k);
    opStart_.push_back(opPos_.size());
    preToPost_[size_t(top.pre)] = int64_t(slots_.size());
    slots_.push_back(top.expr);
    nodes_.push_back(node);
    const auto *call = node->as<CallNode>();
    ops_.push_back(call && call->calleeKind() == CallNode::CalleeKind::Op ? call->op() : nullptr);
    kinds_.push_back(node->kind());
    stack.pop_back();
  }
}

std::vector<int> useCountsByPosition(const NodeIndex &index) {
  std::vector<int> uses(index.size(), 0);
  if (uses.empty())
    return uses;
  uses.back() = 1; // the root
  for (size_t i = 0; i < index.size(); ++i)
    for (int p : index.operands(i))
      ++uses[size_t(p)];
  return uses;
}

Expected<Expr> rewrite(const NodeIndex &index, const IndexedRewriteFn &fn) {
  std::vector<Expr> replaced(index.size());
  std::vector<Expr> operands;
  for (size_t i = 0; i < index.size(); ++i) {
    const Expr &node = index.expr(i);
    Expr rebuilt = node;
    auto pos = index.operands(i); // empty for a function not entered
    auto ops = node->operands();
    bool changed = false;
    for (size_t k = 0; k < pos.size(); ++k)
      if (replaced[size_t(pos[k])] != ops[k]) {
        changed = true;
        break;
      }
    if (changed) {
      operands.clear();
      operands.reserve(pos.size());
      for (int p : pos)
        operands.push_back(replaced[size_t(p)]);
      TS_ASSIGN_OR_RETURN(rebuilt, withOperands(node, std::move(operands)));
    }
    TS_ASSIGN_OR_RETURN(replaced[i],
                        fn(i, node, rebuilt, std::span<const Expr>(replaced.data(), i)));
  }
  return replaced.empty() ? index.root() : replaced.back();
}

Expected<Function> rewriteFunction(const Function &f, const RewriteFn &fn, bool intoFunctions) {
  TS_ASSIGN_OR_RETURN(Expr body, rewrite(f->body(), fn, intoFunctions));
  if (body == f->body())
    return f;
  return makeFunction(f->params(), std::move(body), f->attrs(), f->name(), f->span());
}

} // namespace tessera::ir
