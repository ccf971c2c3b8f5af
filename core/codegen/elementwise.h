//===- codegen/elementwise.h - Fused elementwise kernels with LLVM -*- C++ -*-===//
//
// A function whose body is a tree of elementwise ops over f32 tensors of
// the result's shape becomes ONE loop nest that computes the whole tree per
// element, vectorised by LLVM for the host CPU (or `cpu`). Parameters may
// be smaller and broadcast to the result (numpy rules: a channel bias
// [C, 1, 1], a row, a scalar); they are read in place with stride 0 along
// their broadcast dims, and dims every operand walks contiguously merge, so
// the innermost loop is as long as it can be. Kernels are emitted as object
// code and linked by the system linker into a shared object
// (docs/design/0006); codegen/host.h wraps them as host steps.
//
// Kernel ABI (C):  void SYMBOL(const float *const *inputs, float *out, int64_t n)
// with inputs in the function's parameter order (each dense, in its own
// shape) and n the result's element count. Inside the host code the loop
// nest is also a function over a range of its outermost loop, which large
// fused steps run on the runtime's threads (codegen/llvm_util.h).
//
// This header includes no LLVM header: LLVM stays inside codegen/.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/expr.h"
#include "support/error.h"

#include <string>
#include <vector>

namespace tessera::codegen {

struct CodegenOptions {
  /// LLVM CPU name, or an x86-64 level ("x86-64", "x86-64-v2", "-v3",
  /// "-v4"); "native" (or "") for the compiling machine's CPU and features.
  /// The default, x86-64-v3 (AVX2 + FMA: Haswell, Zen 1 and every x86
  /// server since), makes code that runs where it is copied. One build is
  /// for one CPU; `tessera compile` builds an artifact's host code for
  /// several (compile::kDefaultCpus, docs/design/0017).
  std::string cpu = "x86-64-v3";
  /// Optimisation level (0-3).
  int optLevel = 2;
  /// Threads that optimise and emit the host code (0: one per core, at most 8).
  unsigned threads = 0;
};

struct ElementwiseKernel {
  std::string symbol;
  ir::Function fn;
  /// Over symbolic shapes: each symbol dim of the function's types with
  /// its index in the plan's symbols. The loop nest's extents and strides
  /// are then products of symbol values, read from the pointer after the
  /// parameters' and the result's in `inputs` (inputs[params + 1]: a host
  /// step's buffers, runtime/host_abi.h); same-size dims merge as they do
  /// for constant shapes (NCHW with a per-channel operand: N, C, H*W).
  std::vector<std::pair<int64_t, uint32_t>> symbols;
};

/// Ops a kernel may use (f32): add subtract multiply divide maximum minimum
/// power neg abs relu leaky_relu exp log sqrt sigmoid tanh erf floor ceil
/// clip hard_sigmoid hard_swish, and scalar (rank-0 or single-element)
/// constants. Anything else is an error naming the op.
bool isFusibleElementwise(const ir::ExprNode &node);

/// Emits the kernels as one relocatable object file (ELF bytes).
Expected<std::string> emitObject(const std::vector<ElementwiseKernel> &kernels,
                                 const CodegenOptions &options = {});

/// Links object files into a shared object with the system C compiler
/// driver (`CC`, default `cc`). Returns the shared object's bytes.
Expected<std::string> linkSharedObject(const std::vector<std::string> &objects);

} // namespace tessera::codegen
