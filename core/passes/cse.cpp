//===- passes/cse.cpp - Common subexpression elimination -----------------===//
//
// Bottom-up hash-consing: two nodes of the same kind, callee, attributes and
// (already de-duplicated) operands are one node; constants with the same
// dtype, shape and bytes are one constant. Variables and nested functions
// are never merged. The first node seen (in post-order) survives, so its name
// is kept.
//
//===----------------------------------------------------------------------===//
#include "passes/pass.h"

#include "ir/visit.h"

#include <unordered_map>

namespace tessera::passes {

using namespace ir;

namespace {

size_t mix(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }

size_t shallowHash(const ExprNode &n) {
  size_t h = size_t(n.kind());
  for (const auto &op : n.operands())
    h = mix(h, std::hash<const void *>()(op.get()));
  if (const auto *c = n.as<CallNode>()) {
    h = mix(h, std::hash<const void *>()(c->op()));
    h = mix(h, std::hash<std::string>()(c->global()));
    h = mix(h, c->attrs().hash());
  } else if (const auto *g = n.as<TupleGetItemNode>()) {
    h = mix(h, size_t(g->index()));
  } else if (const auto *k = n.as<ConstantNode>()) {
    h = mix(h, k->data().hash());
  }
  return h;
}

bool shallowEqual(const ExprNode &a, const ExprNode &b) {
  if (a.kind() != b.kind() || a.operands().size() != b.operands().size())
    return false;
  for (size_t i = 0; i < a.operands().size(); ++i)
    if (a.operands()[i] != b.operands()[i])
      return false;
  switch (a.kind()) {
  case ExprKind::Call: {
    const auto *x = a.as<CallNode>(), *y = b.as<CallNode>();
    return x->calleeKind() == y->calleeKind() && x->op() == y->op() &&
           x->global() == y->global() && x->attrs() == y->attrs() && x->type() == y->type();
  }
  case ExprKind::TupleGetItem:
    return a.as<TupleGetItemNode>()->index() == b.as<TupleGetItemNode>()->index();
  case ExprKind::Constant:
    return a.as<ConstantNode>()->data().bitwiseEqual(b.as<ConstantNode>()->data());
  case ExprKind::Tuple: return true;
  default: return false; // vars and functions are unique
  }
}

const PassInfo kCseInfo{
    "cse",
    "Merge identical computations and identical constants",
    "Merges identical calls (same op, attributes and operands) and bitwise-identical "
    "constants.",
    {
        {"nodes-merged", "calls and constants replaced by an identical earlier one"},
    }};

class CSE final : public FunctionPass {
public:
  const PassInfo &info() const override { return kCseInfo; }

  Expected<Function> runOnFunction(const Module &, const std::string &, const Function &f,
                                   PassContext &ctx) override {
    std::unordered_multimap<size_t, Expr> table;
    return rewriteFunction(f, [&](const Expr &, const Expr &node) -> Expected<Expr> {
      if (node->kind() == ExprKind::Var || node->kind() == ExprKind::Function)
        return node;
      size_t h = shallowHash(*node);
      auto [lo, hi] = table.equal_range(h);
      for (auto it = lo; it != hi; ++it)
        if (it->second == node || shallowEqual(*it->second, *node)) {
          if (it->second != node)
            ++ctx.stat("nodes-merged");
          return it->second;
        }
      table.emplace(h, node);
      return node;
    });
  }
};

} // namespace

std::unique_ptr<Pass> createCSEPass() { return std::make_unique<CSE>(); }

} // namespace tessera::passes
