//===- ir/visit.h - Iterative traversal and rewriting ----------*- C++ -*-===//
//
// Graphs may be 100,000 nodes deep, so nothing here recurses on graph depth:
// post-order walks use an explicit stack, and rewrite() rebuilds bottom-up
// from that order. Each node is visited once however many users it has.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/expr.h"
#include "support/ptr_index.h"

#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

namespace tessera::ir {

/// Every node reachable from `root` in post-order (operands before users),
/// each once. With `intoFunctions` false, a nested Function expression is a
/// leaf (its body is not entered).
std::vector<const ExprNode *> postOrder(const Expr &root, bool intoFunctions = true);

/// The same as a list of owning pointers.
std::vector<Expr> postOrderExprs(const Expr &root, bool intoFunctions = true);

/// Whether `pred` holds for some node reachable from `root` (each node is
/// tested at most once; the walk stops at the first hit, in no stated order).
bool anyNode(const Expr &root, const std::function<bool(const ExprNode &)> &pred,
             bool intoFunctions = true);

/// How many times each node is used as an operand inside `root` (root itself
/// gets one extra use, standing for the function's result).
std::unordered_map<const ExprNode *, int> useCounts(const Expr &root);

/// Called for each node bottom-up with the original node and the node rebuilt
/// over already-rewritten operands (the same pointer when nothing below
/// changed). Returns the replacement, usually `rebuilt`.
using RewriteFn = std::function<Expected<Expr>(const Expr &original, const Expr &rebuilt)>;

/// Rebuilds the graph under `root`. Nested Function expressions are entered
/// (their bodies rewritten) unless `intoFunctions` is false.
Expected<Expr> rewrite(const Expr &root, const RewriteFn &fn, bool intoFunctions = true);

/// The nodes under a root in post-order, walked once, with each node's
/// position, kind and operand positions: passes index per-node data by
/// position in plain vectors instead of hashing node pointers again and
/// again, and later loops over the edges read the compact operand table
/// instead of the (cache-cold) nodes. Holds a reference to every node, so
/// expr(i) is one array read and stays valid as long as the index does.
/// Movable, not copyable.
class NodeIndex {
public:
  /// Nodes to see in place of others (key: the node replaced).
  using Substitutions = std::unordered_map<const ExprNode *, Expr>;

  explicit NodeIndex(Expr root, bool intoFunctions = true);
  /// The index of the graph `root` would be with each node of
  /// `substitute` replaced by its value wherever it is used (the values'
  /// own operands are walked as they are, substitutions applied). Nothing
  /// is rebuilt: expr(i) of a replaced node is its value from the map (the
  /// index holds its own reference to every node).
  NodeIndex(Expr root, bool intoFunctions, const Substitutions &substitute);
  /// The same index as NodeIndex(base.root(), base.intoFunctions(),
  /// substitute), derived from `base`: the nodes of `base` are followed
  /// through its operand positions and never read; only the substitutes
  /// (and what they reach outside `base`) are. `base` is consumed: its
  /// references move into the new index.
  NodeIndex(NodeIndex &&base, const Substitutions &substitute);
  NodeIndex(const NodeIndex &) = delete;
  NodeIndex &operator=(const NodeIndex &) = delete;
  NodeIndex(NodeIndex &&) = default;
  NodeIndex &operator=(NodeIndex &&) = default;

  size_t size() const { return nodes_.size(); }
  /// The i-th node in post-order (the root is last).
  const Expr &expr(size_t i) const { return exprs_[i]; }
  const ExprNode *node(size_t i) const { return nodes_[i]; }
  ExprKind kind(size_t i) const { return kinds_[i]; }
  /// The op node i calls, or null when it is not a call of an op. Read from
  /// the index, without touching the node: a pass that looks for certain
  /// ops skips the others for the price of one array read.
  const Op *op(size_t i) const { return ops_[i]; }
  /// Positions of node i's operands, in operand order (all smaller than i).
  /// Empty for a Function node when the index does not enter functions.
  std::span<const int> operands(size_t i) const {
    return std::span<const int>(opPos_).subspan(opStart_[i], opStart_[i + 1] - opStart_[i]);
  }
  /// The position of `n`, or -1 when it is not under the root. (A derived
  /// index builds its table of positions on the first call.)
  int64_t position(const ExprNode *n) const { return positions().find(n); }
  /// The position of a node known to be under the root.
  size_t at(const ExprNode *n) const { return size_t(position(n)); }
  const Expr &root() const { return root_; }
  bool intoFunctions() const { return intoFunctions_; }

private:
  Expr root_;
  bool intoFunctions_;
  // Each node held here, taken when the walk first reads the node (so the
  // reference count it touches is in cache), and read without a detour
  // through the user's operand list.
  std::vector<Expr> exprs_;
  std::vector<const ExprNode *> nodes_;
  std::vector<const Op *> ops_;
  std::vector<ExprKind> kinds_;
  std::vector<size_t> opStart_; // CSR over opPos_, by position
  std::vector<int> opPos_;
  // node -> position. The walk needs the table to tell seen nodes; the
  // derived index does not, and most of its users never ask, so it builds
  // the table when first asked (once, even from several threads).
  const PtrIndex &positions() const;
  mutable PtrIndex position_;
  std::unique_ptr<std::once_flag> positionsBuilt_; // null when position_ is complete
};

/// useCounts as a vector indexed by position. Counts only the edges the
/// index walked (with an index built without entering functions, uses from
/// inside nested function bodies are not counted).
std::vector<int> useCountsByPosition(const NodeIndex &index);

/// Called for each node bottom-up with its position, the original node and
/// the node rebuilt over already-rewritten operands; `replaced` holds the
/// replacements of every earlier position.
using IndexedRewriteFn = std::function<Expected<Expr>(
    size_t i, const Expr &original, const Expr &rebuilt, std::span<const Expr> replaced)>;

/// rewrite() over an existing index (which decides whether nested functions
/// are entered). Returns the replacement of the root.
Expected<Expr> rewrite(const NodeIndex &index, const IndexedRewriteFn &fn);

/// Rewrites the body of a function; keeps params, attributes and name.
Expected<Function> rewriteFunction(const Function &f, const RewriteFn &fn,
                                   bool intoFunctions = true);

} // namespace tessera::ir
