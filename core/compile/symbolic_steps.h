//===- compile/symbolic_steps.h - Host steps over symbolic shapes -*- C++ -*-===//
//
// A host op whose shapes hold pass-through symbols (a batch N, a sequence
// length S: dims that are symbols themselves, not formulas of them) runs the
// kernel it runs for fixed shapes, with its sizes read at run time. The
// op's lowering (codegen/host_ops.h) computes the kernel's integer
// parameters from shapes (a broadcast walk's collapsed sizes and strides,
// element counts, scratch offsets), so it cannot run at run time; instead it
// is run here at 2^k substitutions of the step's k symbols, and every
// parameter (and the scratch size) is fitted as a multilinear polynomial in
// them with integer coefficients, then verified at one more substitution.
// A step whose kernel, float parameters or parameter count change with the
// symbols, or whose parameters do not fit, is refused with the reason
// (docs/design/0013-dynamic-shapes.md, "Kernels").
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/host.h"
#include "ir/expr.h"
#include "support/error.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace tessera::compile {

struct SymbolicKernel {
  codegen::KernelCall call; // kernel and float parameters; ia as at the first fit point
  /// Each of call.ia's entries, over the step's symbols (SymbolicInt's
  /// symbol indices are positions in `symbols`).
  std::vector<codegen::SymbolicInt> ia;
  /// The ir symbol dims the step's types hold, in order of first use.
  std::vector<int64_t> symbols;
  /// Scratch bytes enough for every value the symbols' bounds admit ...
  uint64_t scratchBytes = 0;
  /// ... or, when a symbol without an upper bound makes it grow, a bound
  /// on it over the step's symbols, computed per run (a plan symbol).
  std::optional<codegen::SymbolicInt> scratch;
};

/// Fits `call`'s host lowering over the named symbols in its types. Errors
/// name the call and say why ("add 'a': its kernel parameters are not a
/// polynomial in N", "... its scratch memory grows with N, which has no
/// upper bound: bound it (--input-shape x=1..64,...)").
Expected<SymbolicKernel> fitSymbolicKernel(const ir::CallNode &call);

/// A polynomial bound on the scratch bytes `lowerAt` (the step lowered at
/// values of `symbols`) asks for, fitted where alignment does not round and
/// checked elsewhere; `what` names the step in errors.
Expected<codegen::SymbolicInt>
scratchBound(const std::string &what, const std::vector<int64_t> &symbols,
             const std::function<Expected<codegen::KernelCall>(const std::vector<int64_t> &)>
                 &lowerAt);

/// Monomial coefficients of the multilinear function with values f[mask] at
/// the corners of the box a..b (bit j of mask: symbol j at b[j], else at
/// a[j]); coefficient [mask] multiplies the product of the symbols in mask.
/// Nullopt when one is not an integer.
std::optional<std::vector<int64_t>> fitMultilinear(std::vector<int64_t> f,
                                                   const std::vector<int64_t> &a,
                                                   const std::vector<int64_t> &b);
/// The fitted function at `values`.
int64_t evaluate(const std::vector<int64_t> &coefficients, const std::vector<int64_t> &values);
/// The coefficients as a SymbolicInt over symbol positions 0..k-1.
codegen::SymbolicInt toSymbolicInt(const std::vector<int64_t> &coefficients);

/// A fused elementwise function over rows (compile/fuse.h isRows) as the
/// function of one row: `symbol` (the rows' count) written as 1.
Expected<ir::Function> oneRow(const ir::FunctionNode &fn, int64_t symbol);

/// Per type: the elements of one row when its first dim is `symbol`, else 0
/// (a static operand, read whole by every row).
std::vector<int64_t> rowElements(const std::vector<ir::Type> &types, int64_t symbol);

/// Whether a type holds a symbol computed from others (a derived symbol),
/// which steps cannot take yet; `where` names the first one in `dim`.
bool hasDerivedDim(const ir::Type &type, int64_t *dim = nullptr);

} // namespace tessera::compile
