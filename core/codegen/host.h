//===- codegen/host.h - The host shared object of an artifact --*- C++ -*-===//
//
// Builds the native code of every host step of a plan: one exported
// function per step (runtime/host_abi.h), made by LLVM from
//   - a KernelCall: a call of the kernel library's tk_<kernel> with the
//     step's shapes, dtypes and attributes as constants, inlined and
//     specialised, or
//   - a fused elementwise function (codegen/elementwise.h): one loop.
// All steps go into one LLVM module with the kernel library's bitcode; steps
// whose code would be identical (same kernel, attributes and types, or
// structurally equal fused functions) are one function under several names.
// The kernels are inlined into the steps, then the module is split into one
// part per core, each optimised at CodegenOptions::optLevel for
// CodegenOptions::cpu and emitted on its own thread, and the objects are
// linked by the system linker into a shared object, whose bytes are
// returned. No LLVM header here.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/elementwise.h"
#include "codegen/host_ops.h"
#include "runtime/host_abi.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tessera::codegen {

/// A kernel parameter of a step over symbolic shapes: `constant` plus, per
/// term, `coefficient` times the product of the values of `symbols` (indices
/// into the plan's symbols, runtime/plan.h), computed by the step at run time
/// (docs/design/0013: kernel parameters of pass-through symbols).
struct SymbolicInt {
  struct Term {
    int64_t coefficient = 0;
    std::vector<uint32_t> symbols;
  };
  int64_t constant = 0;
  std::vector<Term> terms;
  /// "3 + 4*s0*s1"
  std::string str() const;
};

/// One host step. Its function reads `buffers` (runtime/host_abi.h) as the
/// data of types.inputs, then types.outputs, then, when call.scratchBytes is
/// non-zero, one scratch buffer of at least that many bytes (64-byte
/// aligned; the plan gives it a one-step lifetime so it is reused).
struct HostStepSpec {
  std::string symbol;
  /// A library kernel call with its types ...
  KernelCall call;
  HostOpTypes types;
  /// ... or, when set, a fused elementwise function (parameters = the
  /// step's inputs, in order; one tensor result = the step's output).
  std::optional<ir::Function> fused;
  /// Library steps over symbolic shapes: each symbol dim of `types` with
  /// the index of its plan symbol (the step reads the values from the
  /// pointer after its buffers, runtime/host_abi.h), and `call.ia`'s entries
  /// as functions of them. Empty for static steps.
  std::vector<std::pair<int64_t, uint32_t>> symbols;
  std::vector<SymbolicInt> ia;
  /// Fused steps over rows (compile/fuse.h): `fused` computes one row; the
  /// step runs it once per row, the count being plan symbol `rows`, with
  /// each input advanced by its `rowElements` (0: read whole by every row)
  /// and the output by `outputRowElements`.
  std::optional<uint32_t> rows;
  std::vector<int64_t> rowElements;
  int64_t outputRowElements = 0;
};

struct HostBuildInfo {
  std::string triple; // "x86_64-pc-linux-gnu"
  std::string cpu;    // the resolved CPU name ("znver4", "x86-64-v3")
  // The ISA extensions the code may use, by LLVM's names, among those the
  // runtime checks at load (runtime/cpu_features.h): "avx2", "fma", ...
  std::vector<std::string> features;
};

/// The ISA extensions code for `options.cpu` may use (HostBuildInfo::
/// features): what an artifact records for a plugin module compiled for a
/// CPU. An error for a CPU name LLVM does not know.
Expected<std::vector<std::string>> cpuFeatures(const CodegenOptions &options);

/// The host shared object for `options.cpu`. `progress` is told each phase
/// as it starts (for long compiles).
Expected<std::string> buildHostLibrary(const std::vector<HostStepSpec> &steps,
                                       const CodegenOptions &options, HostBuildInfo *info = nullptr,
                                       const std::function<void(std::string_view phase)> &progress = {});

/// The host shared object for each of `cpus` (in their order; `options.cpu`
/// is not used), with each one's HostBuildInfo in `info`. The steps are built
/// and simplified once, for the most portable CPU, and every CPU's code is
/// then optimised and emitted on one pool of `options.threads` workers
/// (llvm_util.h): two levels cost less than twice one.
Expected<std::vector<std::string>>
buildHostLibraries(const std::vector<HostStepSpec> &steps, const CodegenOptions &options,
                   const std::vector<std::string> &cpus, std::vector<HostBuildInfo> *info = nullptr,
                   const std::function<void(std::string_view phase)> &progress = {});

} // namespace tessera::codegen
