//===- ir/printer.h - Text IR printer --------------------------*- C++ -*-===//
//
// Prints a module in Tessera's text format, one op per line, every value named
// and typed:
//
//   def @main(%x: f32[1, 8], %w: f32[4, 8]) -> f32[1, 4] {
//     %0 = dense(%x, %w) : f32[1, 4]
//     %1 = relu(%0) : f32[1, 4]
//     return %1
//   }
//
// Constants of up to kInlineConstantLimit elements print inline as numbers;
// larger ones as a hex blob of their little-endian bytes, so printing then
// parsing is lossless. See docs/text-format.md for the grammar.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/module.h"

#include <ostream>
#include <string>

namespace tessera::ir {

inline constexpr int64_t kInlineConstantLimit = 16;

void printModule(const Module &m, std::ostream &os);
std::string printModule(const Module &m);
/// One function as `def @name(...)`.
std::string printFunction(const std::string &global, const Function &f);
/// An expression as the lines that compute it, for diagnostics and tests.
std::string printExpr(const Expr &e);

} // namespace tessera::ir
