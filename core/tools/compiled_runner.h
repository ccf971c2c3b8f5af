//===- tools/compiled_runner.h - Conformance through compiled code -*- C++ -*-===//
//
// The runner behind `tessera conformance --compile`: each imported model is
// compiled to an artifact (compile::compileModule: host only, or for the
// given plugins), the artifact's bytes are loaded by the runtime
// (runtime::LoadedModel) and the inputs run through a Session, as an app
// would. It lives with the tools because the ONNX frontend must not depend
// on the compiler's back half (LLVM).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/onnx/conformance.h"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace tessera::tools {

struct CompiledRunnerOptions {
  /// Plugins to offload to, in priority order; empty: host only.
  std::vector<std::string> targets;
  /// Host code optimisation level (0-3).
  int optLevel = 2;
  /// Threads for host kernels (SessionOptions::numThreads; 0: every core).
  int threads = 0;
};

/// What the runner compiled: a model whose ops were all folded into
/// constants at compile time (every input bound as a constant), or that
/// only returns its inputs, runs no host or plugin step and so tests no
/// kernel.
struct CompiledRunStats {
  size_t models = 0; // compiled successfully
  size_t hostSteps = 0, externalSteps = 0;
  std::vector<std::string> noSteps; // module names of the models without such steps
};

/// A ConformanceRunner that compiles, loads and runs. Its errors say which
/// phase failed: "compile failed: ...", "load failed: ...", "run failed: ...".
/// `stats`, when given, is updated on every compile.
frontend::onnx::ConformanceRunner
makeCompiledRunner(const CompiledRunnerOptions &options,
                   std::shared_ptr<CompiledRunStats> stats = nullptr);

} // namespace tessera::tools
