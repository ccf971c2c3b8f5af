//===- ir/structural.cpp - Structural equality and hashing ---------------===//
//
// Both work on the post-order of the graph: two graphs with the same
// structure (including sharing) have post-orders that correspond position by
// position, so equality compares node i of one with node i of the other and
// checks that their operands sit at the same positions. Hashing numbers the
// variables the same way, so alpha-equivalent functions hash alike.
//
//===----------------------------------------------------------------------===//
#include "ir/structural.h"

#include "ir/visit.h"

#include <functional>
#include <unordered_map>

namespace tessera::ir {

namespace {
size_t mix(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }

/// Compares everything about two nodes except their operands.
bool sameLocal(const ExprNode &a, const ExprNode &b) {
  if (a.kind() != b.kind() || a.type() != b.type() || a.operands().size() != b.operands().size())
    return false;
  switch (a.kind()) {
  case ExprKind::Var: return true;
  case ExprKind::Constant:
    return a.as<ConstantNode>()->data().bitwiseEqual(b.as<ConstantNode>()->data());
  case ExprKind::Call: {
    const auto *x = a.as<CallNode>(), *y = b.as<CallNode>();
    return x->calleeKind() == y->calleeKind() && x->op() == y->op() &&
           x->global() == y->global() && x->attrs() == y->attrs();
  }
  case ExprKind::Tuple: return true;
  case ExprKind::TupleGetItem:
    return a.as<TupleGetItemNode>()->index() == b.as<TupleGetItemNode>()->index();
  case ExprKind::Function: {
    const auto *x = a.as<FunctionNode>(), *y = b.as<FunctionNode>();
    return x->params().size() == y->params().size() && x->attrs() == y->attrs();
  }
  }
  return false;
}

size_t localHash(const ExprNode &n) {
  size_t h = mix(size_t(n.kind()), n.type().hash());
  switch (n.kind()) {
  case ExprKind::Var: break;
  case ExprKind::Constant: h = mix(h, n.as<ConstantNode>()->data().hash()); break;
  case ExprKind::Call: {
    const auto *c = n.as<CallNode>();
    h = mix(h, size_t(c->calleeKind()));
    h = mix(h, std::hash<std::string>()(c->op() ? c->op()->name : c->global()));
    h = mix(h, c->attrs().hash());
    break;
  }
  case ExprKind::Tuple: break;
  case ExprKind::TupleGetItem: h = mix(h, size_t(n.as<TupleGetItemNode>()->index())); break;
  case ExprKind::Function: {
    const auto *f = n.as<FunctionNode>();
    h = mix(h, f->params().size());
    h = mix(h, f->attrs().hash());
    break;
  }
  }
  return h;
}

std::unordered_map<const ExprNode *, size_t> positions(const std::vector<const ExprNode *> &order) {
  std::unordered_map<const ExprNode *, size_t> pos;
  pos.reserve(order.size());
  for (size_t i = 0; i < order.size(); ++i)
    pos.emplace(order[i], i);
  return pos;
}
} // namespace

bool structuralEqual(const Expr &a, const Expr &b) {
  if (a == b)
    return true;
  auto orderA = postOrder(a), orderB = postOrder(b);
  if (orderA.size() != orderB.size())
    return false;
  auto posA = positions(orderA), posB = positions(orderB);
  for (size_t i = 0; i < orderA.size(); ++i) {
    const ExprNode &x = *orderA[i], &y = *orderB[i];
    if (!sameLocal(x, y))
      return false;
    for (size_t k = 0; k < x.operands().size(); ++k)
      if (posA.at(x.operands()[k].get()) != posB.at(y.operands()[k].get()))
        return false;
    if (const auto *fx = x.as<FunctionNode>()) {
      const auto *fy = y.as<FunctionNode>();
      for (size_t k = 0; k < fx->params().size(); ++k) {
        const auto &px = fx->params()[k], &py = fy->params()[k];
        if (px->type() != py->type())
          return false;
        auto ix = posA.find(px.get()), iy = posB.find(py.get());
        bool usedX = ix != posA.end(), usedY = iy != posB.end();
        if (usedX != usedY || (usedX && ix->second != iy->second))
          return false;
      }
    }
  }
  return true;
}

size_t structuralHash(const Expr &e) {
  auto order = postOrder(e);
  auto pos = positions(order);
  std::vector<size_t> hashes(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    const ExprNode &n = *order[i];
    size_t h = localHash(n);
    for (const auto &op : n.operands()) {
      size_t j = pos.at(op.get());
      // Variables hash by position, everything else by content.
      h = mix(h, op->kind() == ExprKind::Var ? mix(hashes[j], j) : hashes[j]);
    }
    if (const auto *f = n.as<FunctionNode>())
      for (const auto &p : f->params()) {
        auto it = pos.find(p.get());
        h = mix(h, it == pos.end() ? p->type().hash() : it->second);
      }
    hashes[i] = h;
  }
  return hashes.back();
}

bool structuralEqual(const Module &a, const Module &b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto &[na, fa] = a.functions()[i];
    const auto &[nb, fb] = b.functions()[i];
    if (na != nb || !structuralEqual(Expr(fa), Expr(fb)))
      return false;
  }
  return true;
}

} // namespace tessera::ir
