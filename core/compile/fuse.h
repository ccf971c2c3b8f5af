//===- compile/fuse.h - Fuse elementwise chains on the host ----*- C++ -*-===//
//
// Before a function's host ops become host steps, maximal trees of fusible
// f32 elementwise ops (codegen::isFusibleElementwise) and bias_add, all of
// one shape, are outlined into local functions with the attribute
// HostFused=true, called where the tree's root was. Such a call becomes ONE host step whose loop
// computes the whole tree per element (codegen/elementwise.h): the
// intermediate tensors are never written to memory.
//
// A tree member other than the root has exactly one use (inside the tree);
// single-element f32 constants are folded into the loop; other operands
// become the fused function's parameters, each once, in first-use order,
// and may broadcast (numpy rules) where the op broadcasts: the loop reads
// them in place. bias_add(x, b) becomes add(x, b') with b' = b reshaped to
// [C, 1, ..., 1] outside the function (a constant is reshaped at compile
// time), so a conv's bias and activation run as one loop.
// Single ops stay as they are (a library kernel does them as well).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/expr.h"
#include "support/error.h"

namespace tessera::compile {

inline constexpr const char *kHostFusedAttr = "HostFused";

struct FuseStats {
  size_t groups = 0;   // fused functions made
  size_t fusedOps = 0; // op calls moved into them
};

/// Returns `fn` with its elementwise trees outlined (nested functions are
/// not entered).
Expected<ir::Function> fuseElementwise(const ir::Function &fn, FuseStats *stats = nullptr);

/// Whether `call` calls a HostFused local function.
bool isHostFusedCall(const ir::CallNode &call);

/// Whether `t` is rows of a static shape: a tensor whose first dim is a
/// symbol and whose other dims are constants. Elementwise trees over such
/// types fuse too; their loop is compiled for one row (the symbol as 1) and
/// run once per row, when every operand is `t` or static (`rowsFit`).
/// Trees over other symbolic shapes fuse into a loop nest whose extents
/// and strides are read at run time (codegen/elementwise.h).
bool isRows(const ir::Type &t);
/// Whether a fused call over `out` with operands `operands` runs as rows.
bool rowsFit(const ir::Type &out, const std::vector<ir::Type> &operands);

} // namespace tessera::compile
