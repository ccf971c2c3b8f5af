//===- compile/compile.h - Model to artifact --------------------*- C++ -*-===//
//
// The compiler's back half: a module whose types are inferred becomes one
// artifact file (runtime/artifact.h):
//   1. partition for the requested targets (partition/driver.h); no targets:
//      everything on the host;
//   2. each @tessera_<m>_<t>_<n> region compiled by its plugin's codegen,
//      the module saved through the plugin (ExternalModule sections);
//   3. @main lowered to an executor plan (runtime/plan.h): one step per host
//      op call (codegen/host_ops.h) or per region call; TupleGetItem and
//      tuples are bookkeeping; reshape-like ops may alias; constants go to
//      the weights section (64-byte aligned each); model outputs that are
//      inputs/constants/repeated get Copy steps;
//   4. memory planned (runtime::planMemory), host steps built by LLVM into
//      the host shared object (codegen/host.h);
//   5. metadata JSON: inputs/outputs (name, dtype, shape), targets, plugins
//      (name, version, type keys), regions per plugin (symbol, op count),
//      host step count, arena and weights bytes, Tessera version, triple, cpu.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/elementwise.h"
#include "ir/module.h"
#include "partition/partition.h"
#include "support/error.h"

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::plugin {
class PluginRegistry;
}

namespace tessera::compile {

/// What `--mcpu` and Python's `mcpu` mean when not given: host code for
/// x86-64-v3 (AVX2 and FMA: every x86-64 server since Haswell and Zen 1) and
/// for x86-64-v4 (AVX-512), one shared object each; the runtime loads the
/// best the CPU has (runtime/host_levels.h, docs/design/0017).
inline constexpr std::string_view kDefaultCpus = "x86-64-v3,x86-64-v4";

struct CompileOptions {
  std::vector<std::string> targets; // in priority order; empty: host only
  /// codegen.cpu is the CPU of plugin modules (ccompiler's C), and of the
  /// host code unless `hostCpus` lists several: one shared object each.
  codegen::CodegenOptions codegen;
  std::vector<std::string> hostCpus;
  /// Called with a line per phase ("partitioning", "codegen dnnl (3 regions)",
  /// "host code: 41 steps", ...).
  std::function<void(std::string_view)> progress;
  /// Where to write the artifact, section by section, without building the
  /// file in memory; empty: CompileResult::artifact holds its bytes.
  std::string outputPath;
  /// Measured verdicts on regions (compile/placement.h), asked before the
  /// prune rules; and the placement's record for the metadata (JSON).
  partition::RegionRule regionRule;
  std::string placementJson;
  /// Node names kept on the host whatever the targets take (`--on-host`).
  std::vector<std::string> hostNodes;
};

struct CompileResult {
  std::string artifact;       // the file's bytes (empty when written to outputPath)
  size_t artifactSize = 0;    // its size in bytes
  std::string partitionSummary; // human-readable (regions per target, host ops)
  size_t hostSteps = 0, externalSteps = 0;
  uint64_t arenaBytes = 0, weightsBytes = 0;
};

/// Sets options.codegen.cpu and options.hostCpus from an `--mcpu` value: a
/// CPU ("x86-64-v3", "native", "znver4") or a comma-separated list of them,
/// kept best first (most ISA extensions; ties in the order given).
/// codegen.cpu becomes the last, the most portable (plugin modules are
/// built for it). An error names an empty entry, a CPU LLVM does not know,
/// or one listed twice.
Status setCpus(CompileOptions &options, std::string_view list);

/// The CPU of options' host code this machine runs (the runtime's choice,
/// runtime/host_levels.h): what placement by measurement times. The most
/// portable (codegen.cpu) when this machine runs none.
std::string cpuRunHere(const CompileOptions &options);

/// `m` must have @main with inferred types. Plugins come from `registry`
/// (required when targets are given).
Expected<CompileResult> compileModule(const ir::Module &m, const CompileOptions &options,
                                      const plugin::PluginRegistry *registry);

} // namespace tessera::compile
