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

/// The op a node calls, or null when it is not a call of an op.
const Op *calledOp(const ExprNode &node) {
  const auto *call = node.as<CallNode>();
  return call && call->calleeKind() == CallNode::CalleeKind::Op ? call->op() : nullptr;
}

/// A NodeIndex::Substitutions map as a flat table: one probe per edge.
class SubstitutionTable {
public:
  explicit SubstitutionTable(const NodeIndex::Substitutions &map) : lookup_(map.size()) {
    for (const auto &[from, to] : map) {
      lookup_.insert(from, int64_t(values_.size()));
      values_.push_back(&to);
    }
  }
  /// What stands for `e`: its substitute, or `e` itself.
  const Expr &operator()(const Expr &e) const {
    if (values_.empty())
      return e;
    int64_t k = lookup_.find(e.get());
    return k < 0 ? e : *values_[size_t(k)];
  }

private:
  PtrIndex lookup_;
  std::vector<const Expr *> values_;
};
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
  const SubstitutionTable seen(substitute);
  root_ = seen(root_);
  // The walk of walkPostOrder, recording each edge's target as it goes: the
  // probe that tells whether a child was seen also gives its discovery
  // number, so the operand table costs no extra lookup.
  struct Frame {
    const Expr *expr;
    size_t next;
    int64_t pre; // discovery number
    Expr keep;   // the node, taken on the first visit
  };
  std::vector<Frame> stack;
  std::vector<int64_t> edges; // discovery numbers of the operands of the frames on the stack
  // The table maps nodes to discovery numbers during the walk, and to
  // positions once it is over.
  std::vector<int64_t> preToPost;
  stack.push_back({&root_, 0, 0, {}});
  position_.insert(root_.get(), 0);
  preToPost.push_back(-1);
  opStart_.push_back(0);
  while (!stack.empty()) {
    Frame &top = stack.back();
    const ExprNode *node = top.expr->get();
    if (!top.keep)
      top.keep = *top.expr;
    auto ops = node->operands();
    const bool leaf = !intoFunctions && node->kind() == ExprKind::Function;
    if (!leaf && top.next < ops.size()) {
      const Expr &child = seen(ops[top.next++]);
      auto [pre, fresh] = position_.insert(child.get(), int64_t(preToPost.size()));
      edges.push_back(pre);
      if (fresh) {
        preToPost.push_back(-1);
        stack.push_back({&child, 0, pre, {}});
      }
      continue;
    }
    // Every operand was emitted before this node.
    const size_t k = leaf ? 0 : ops.size();
    for (size_t e = edges.size() - k; e < edges.size(); ++e)
      opPos_.push_back(int(preToPost[size_t(edges[e])]));
    edges.resize(edges.size() - k);
    opStart_.push_back(opPos_.size());
    preToPost[size_t(top.pre)] = int64_t(nodes_.size());
    exprs_.push_back(std::move(top.keep));
    nodes_.push_back(node);
    ops_.push_back(calledOp(*node));
    kinds_.push_back(node->kind());
    stack.pop_back();
  }
  position_.transformValues([&](int64_t pre) { return preToPost[size_t(pre)]; });
}

NodeIndex::NodeIndex(NodeIndex &&base, const Substitutions &substitute)
    : root_(base.root_), intoFunctions_(base.intoFunctions_),
      positionsBuilt_(std::make_unique<std::once_flag>()) {
  // A node of the walk is a position of `base` (id >= 0) or a node outside
  // it (id < 0: -1 - its number in `outside`), so that nodes of `base` are
  // followed through its operand table without reading them.
  std::vector<const Expr *> outside;
  std::vector<int64_t> basePre(base.size(), -1); // discovery number by base position
  PtrIndex outsidePre(8);
  // The id of what stands for each position of `base` (kSelf: itself).
  constexpr int64_t kSelf = INT64_MIN;
  std::vector<int64_t> replaced(base.size(), kSelf);
  const SubstitutionTable seen(substitute);
  // The id of the node `e` (already substituted).
  auto idOf = [&](const Expr *e) -> int64_t {
    if (int64_t p = base.position(e->get()); p >= 0)
      return p;
    auto [k, fresh] = outsidePre.insert(e->get(), int64_t(outside.size()));
    if (fresh)
      outside.push_back(e);
    return -1 - k;
  };
  for (const auto &[from, to] : substitute)
    if (int64_t p = base.position(from); p >= 0)
      replaced[size_t(p)] = idOf(&to);
  // The id an edge to `e` leads to, substitutions applied (once, as in the walk).
  auto edgeTo = [&](const Expr &e) -> int64_t { return idOf(&seen(e)); };
  auto edgeToBase = [&](int p) -> int64_t {
    return replaced[size_t(p)] != kSelf ? replaced[size_t(p)] : p;
  };
  // Discovery numbers, by id.
  std::vector<int64_t> outsideDisc;
  auto discovered = [&](int64_t id) -> int64_t & {
    if (id >= 0)
      return basePre[size_t(id)];
    size_t k = size_t(-1 - id);
    if (outsideDisc.size() <= k)
      outsideDisc.resize(k + 1, -1);
    return outsideDisc[k];
  };

  struct Frame {
    int64_t id;
    size_t next;
    int64_t pre;
  };
  std::vector<Frame> stack;
  std::vector<int64_t> edges;
  std::vector<int64_t> preToPost; // by discovery number
  // About as many nodes and edges as `base`: no array grows by copying.
  const size_t expected = base.size() + substitute.size() + 1;
  exprs_.reserve(expected);
  nodes_.reserve(expected);
  ops_.reserve(expected);
  kinds_.reserve(expected);
  opStart_.reserve(expected + 1);
  preToPost.reserve(expected);
  opPos_.reserve(base.opPos_.size() + 2 * substitute.size());
  if (base.size() == 0)
    return;
  const int64_t rootId = edgeToBase(int(base.size() - 1));
  root_ = rootId >= 0 ? base.expr(size_t(rootId)) : *outside[size_t(-1 - rootId)];
  discovered(rootId) = 0;
  stack.push_back({rootId, 0, 0});
  preToPost.push_back(-1);
  opStart_.push_back(0);
  while (!stack.empty()) {
    Frame &top = stack.back();
    const int64_t id = top.id;
    size_t arity;
    const ExprNode *node = nullptr;
    if (id >= 0) {
      arity = base.operands(size_t(id)).size();
    } else {
      node = outside[size_t(-1 - id)]->get();
      const bool leaf = !intoFunctions_ && node->kind() == ExprKind::Function;
      arity = leaf ? 0 : node->operands().size();
    }
    if (top.next < arity) {
      const size_t k = top.next++;
      const int64_t child = id >= 0 ? edgeToBase(base.operands(size_t(id))[k])
                                    : edgeTo(node->operands()[k]);
      int64_t &pre = discovered(child);
      if (pre < 0) {
        pre = int64_t(preToPost.size());
        edges.push_back(pre);
        preToPost.push_back(-1);
        stack.push_back({child, 0, pre});
      } else {
        edges.push_back(pre);
      }
      continue;
    }
    for (size_t e = edges.size() - arity; e < edges.size(); ++e)
      opPos_.push_back(int(preToPost[size_t(edges[e])]));
    edges.resize(edges.size() - arity);
    opStart_.push_back(opPos_.size());
    preToPost[size_t(top.pre)] = int64_t(nodes_.size());
    if (id >= 0) {
      exprs_.push_back(std::move(base.exprs_[size_t(id)]));
      nodes_.push_back(base.nodes_[size_t(id)]);
      ops_.push_back(base.ops_[size_t(id)]);
      kinds_.push_back(base.kinds_[size_t(id)]);
    } else {
      exprs_.push_back(*outside[size_t(-1 - id)]);
      nodes_.push_back(node);
      ops_.push_back(calledOp(*node));
      kinds_.push_back(node->kind());
    }
    stack.pop_back();
  }
}

const PtrIndex &NodeIndex::positions() const {
  if (positionsBuilt_)
    std::call_once(*positionsBuilt_, [this] {
      PtrIndex table(nodes_.size());
      for (size_t i = 0; i < nodes_.size(); ++i)
        table.insert(nodes_[i], int64_t(i));
      position_ = std::move(table);
    });
  return position_;
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
