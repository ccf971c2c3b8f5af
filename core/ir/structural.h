//===- ir/structural.h - Structural equality and hashing -------*- C++ -*-===//
//
// Two expressions are structurally equal when they have the same shape of
// graph, the same ops, attributes, constants (bitwise) and types, with
// variables matched by position (function parameters are bound in order;
// free variables must map one-to-one). Names and spans are ignored. Both are
// iterative and linear in the number of nodes.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/expr.h"
#include "ir/module.h"

namespace tessera::ir {

bool structuralEqual(const Expr &a, const Expr &b);
size_t structuralHash(const Expr &e);
/// Same global names in the same order, structurally equal functions.
bool structuralEqual(const Module &a, const Module &b);

} // namespace tessera::ir
