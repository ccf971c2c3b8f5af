//===- compile/symbol_formulas.h - Derived dims as formulas -----*- C++ -*-===//
//
// A derived symbol (a convolution's output height over a symbolic H) is
// known in the IR only by the relation that made it (ir/symbol.h
// SymbolDefinition). The artifact cannot run relations (the runtime links
// no ir), so the compiler fits the definition with a formula the runtime
// evaluates when the inputs are bound:
//
//   value = floor((c0 + c1*s1 + ... + c12*s1*s2 + ...) / divisor)
//
// a multilinear polynomial with integer coefficients over the symbols the
// dim depends on, over a positive divisor, optionally clamped into a range
// (min(R, 300), a count capped by TopK's k). Over one symbol that is
// floor((a*x + b) / c): every window op (convolution, pooling, with any
// stride, padding, dilation or ceil mode), a resize by a rational scale,
// a pad, a slice at fixed offsets; over several, the sums of a concat and
// the products of a reshape; over more than three, a linear sum (a concat
// of many run-time counts). The fit is checked against the relation at
// every value from the symbol's lower bound up to 4096 above it (above
// that at doubling steps), at pseudo-random points over every source, and
// against the other definitions the IR recorded for the same symbol.
// Where the relation fails (an input too small for the kernel), the
// formula must give a value below the least it gives elsewhere, so the
// runtime's bounds check rejects exactly those inputs. A definition that
// fits no such formula is refused with its name and the reason
// (docs/design/0013-dynamic-shapes.md, "Kernels").
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/host.h"
#include "runtime/plan.h"
#include "ir/type.h"
#include "support/error.h"

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace tessera::compile {

struct DerivedFormula {
  /// The ir symbols (named or derived) the value depends on.
  std::vector<int64_t> sources;
  /// Over positions in `sources`.
  codegen::SymbolicInt numerator;
  int64_t divisor = 1;
  /// Then clamped into atLeast..atMost (min(R, 300): a count capped by a
  /// TopK's k; the limits of int64 when not clamped).
  int64_t atLeast = std::numeric_limits<int64_t>::min();
  int64_t atMost = std::numeric_limits<int64_t>::max();
  /// The least and greatest values it takes where its definition holds
  /// (hi < 0: no upper bound).
  int64_t lo = 0;
  int64_t hi = -1;
  std::string what; // the definition: "conv2d result dim 2"
};

/// The formula of derived symbol `dim`. Errors name the definition and say
/// which form it failed ("max_pool2d result dim 2: not floor((a*H + b)/c)
/// over H ... at H = 40 it is 7").
Expected<DerivedFormula> fitDerivedSymbol(int64_t dim);

/// The plan's symbols as lowering meets them (runtime/plan.h PlanSymbol):
/// a named one added on first use, a derived one with its fitted formula,
/// after the symbols it is computed from.
class PlanSymbolTable {
public:
  explicit PlanSymbolTable(std::vector<runtime::PlanSymbol> &symbols) : symbols_(symbols) {}
  /// The plan index of ir symbol `dim` (a derived one must have been added).
  uint32_t index(int64_t dim);
  /// Adds derived symbol `dim`; `definedBy` names it in run-time errors.
  Status addDerived(int64_t dim, const std::string &definedBy);
  /// Adds the derived symbols of `type`, the result of `what` ("conv2d 'c'").
  Status addDerivedDims(const ir::Type &type, const std::string &what);
  /// Adds the derived symbols in `attrs` (a topk's k, symbol_values'
  /// values), of the call `what`.
  Status addDerivedAttrs(const ir::Attrs &attrs, const std::string &what);
  /// Adds a plan symbol that is no ir symbol (a step's scratch size), the
  /// value of `formula` over plan symbols; its index.
  uint32_t addFormula(std::string name, const codegen::SymbolicInt &formula,
                      std::string definedBy);

private:
  std::vector<runtime::PlanSymbol> &symbols_;
  std::map<int64_t, uint32_t> index_; // ir symbol -> plan symbol
};

/// floor(numerator(values) / divisor) clamped into atLeast..atMost, values
/// by position in `sources`.
int64_t evaluateFormula(const DerivedFormula &f, const std::vector<int64_t> &values);

} // namespace tessera::compile
