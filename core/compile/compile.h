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

struct CompileOptions {
  std::vector<std::string> targets; // in priority order; empty: host only
  codegen::CodegenOptions codegen;
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

/// `m` must have @main with inferred types. Plugins come from `registry`
/// (required when targets are given).
Expected<CompileResult> compileModule(const ir::Module &m, const CompileOptions &options,
                                      const plugin::PluginRegistry *registry);

} // namespace tessera::compile
