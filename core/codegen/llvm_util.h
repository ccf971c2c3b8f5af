//===- codegen/llvm_util.h - LLVM plumbing shared by the codegen -*- C++ -*-===//
//
// Private to core/codegen (it includes LLVM headers): the target machine for
// CodegenOptions, the optimisation pipeline, object emission, the kernel
// library's linking, and the elementwise kernel emitter that host.cpp wraps
// into host steps.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/elementwise.h"

#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>
#include <string>
#include <string_view>

namespace tessera::codegen {

/// The target machine for the process's triple and options.cpu ("" = the
/// host CPU with its features).
Expected<std::unique_ptr<llvm::TargetMachine>> makeTargetMachine(const CodegenOptions &options);

/// Verifies `m`, runs the default pipeline at `optLevel`, and emits an
/// object file.
Expected<std::string> optimiseAndEmit(llvm::Module &m, llvm::TargetMachine &tm, int optLevel);

/// Passes that run on the whole module before it is split, in LLVM's
/// textual pipeline syntax (each may be empty): `module` on the module,
/// then `exported` on each exported function alone (not on the internal
/// functions those call), then `cleanup` on the module.
struct PrePipeline {
  std::string_view module, exported, cleanup;
};

/// Verifies `m`, runs `pre` (for the first target), then the default
/// pipeline and emission for each of `targets` (CPUs with their optimisation
/// levels) over `threads` threads (0: one per core, at most 8). The first
/// target should be the most portable: `pre` may use what its CPU has. Each
/// other target gets a copy of `m` after `pre`, retargeted to its CPU, so
/// that the front of the pipeline runs once for all of them. Each target's
/// module is split into up to `threads` parts: its exported functions, and
/// the large internal functions that several functions use, are shared out
/// by size (each part a copy of the module with the other parts' functions
/// as declarations; the shared internal functions become hidden; the other
/// internal functions and constants are copied into every part that uses
/// them). Every part of every target is then optimised and emitted in its
/// own LLVMContext, on a pool of `threads` workers, the largest first. The
/// result has one list of object files per target (one per part; one in all
/// when `threads` is 1 or there are too few functions). Exported functions
/// must not call each other (host steps do not).
Expected<std::vector<std::vector<std::string>>>
optimiseAndEmitParallel(llvm::Module &m, const std::vector<CodegenOptions> &targets,
                        const PrePipeline &pre, unsigned threads = 0);

/// Sets every function `m` defines to compile for `tm`'s CPU and features
/// (the "target-cpu" and "target-features" attributes; "tune-cpu" dropped).
void retarget(llvm::Module &m, const llvm::TargetMachine &tm);

/// Defines the kernel library's per-CPU constants that `m` uses, for `tm`
/// (tk_target_wide_gemm: wide GEMM tiles with AVX-512), as internal
/// constants the optimiser folds. The passes before a module is copied per
/// CPU must not see them (optimiseAndEmitParallel defines them after).
void defineTargetConstants(llvm::Module &m, const llvm::TargetMachine &tm);

/// Links the functions `m` declares (and what they call) from the kernel
/// library's bitcode (codegen/kernels, embedded at build time) into `m`.
/// The library is read lazily: only the functions linked are ever parsed,
/// so a model pays for the kernels it uses.
Status linkKernelLibrary(llvm::Module &m);

/// Adds one elementwise kernel (ABI of codegen/elementwise.h) to `m`; it
/// may call the kernel library's fast_math.h functions (linkKernelLibrary).
/// Its loop nest is also a function of its own,
///   void elementwiseRangeSymbol(symbol)(const float *const *inputs, float *out,
///                                       int64_t begin, int64_t end)
/// running iterations [begin, end) of the outermost loop, whose extent is
/// returned: ranges of it may run on different threads. Over symbolic
/// shapes (kernel.symbols) the extent is known at run time: -1 is returned,
/// and two more functions give the outermost extent and the element count,
///   int64_t elementwiseExtentSymbol(symbol, outer / count)(const float *const *inputs)
Expected<int64_t> emitElementwiseKernel(llvm::Module &m, const ElementwiseKernel &kernel);
std::string elementwiseRangeSymbol(const std::string &symbol);
std::string elementwiseExtentSymbol(const std::string &symbol, bool outer);

} // namespace tessera::codegen
