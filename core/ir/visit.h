//===- ir/visit.h - Iterative traversal and rewriting ----------*- C++ -*-===//
//
// Graphs may be 100,000 nodes deep, so nothing here recurses on graph depth:
// post-order walks use an explicit stack, and rewrite() rebuilds bottom-up
// from that order. Each node is visited once however many users it has.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/expr.h"

#include <functional>
#include <unordered_map>
#include <vector>

namespace tessera::ir {

/// Every node reachable from `root` in post-order (operands before users),
/// each once. With `intoFunctions` false, a nested Function expression is a
/// leaf (its body is not entered).
std::vector<const ExprNode *> postOrder(const Expr &root, bool intoFunctions = true);

/// The same as a list of owning pointers.
std::vector<Expr> postOrderExprs(const Expr &root, bool intoFunctions = true);

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

/// Rewrites the body of a function; keeps params, attributes and name.
Expected<Function> rewriteFunction(const Function &f, const RewriteFn &fn,
                                   bool intoFunctions = true);

} // namespace tessera::ir
