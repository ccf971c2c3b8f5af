//===- tools/cmd_compile.cpp - `tessera compile` ---------------------------===//
//
//   tessera compile MODEL [--target LIST] [--input-shape NAME=D0,D1,...]...
//                   [--mcpu CPU[,CPU...]] [--opt-level N] [--jobs N] [--time-phases]
//                   -o OUT.tsr
//
// MODEL is an ONNX file (.onnx, imported as `tessera import` does) or text
// IR (anything else). Without --target everything runs on the host (the
// optimisation pipeline, then host code); with it, the model is partitioned
// among those plugins first (as `tessera partition` does) and each region
// is compiled by its plugin. Prints a line per phase, the partition summary
// and what was written; --time-phases adds the wall time of each phase
// (import, each phase line, writing). Errors are one line naming the file.
//
//===----------------------------------------------------------------------===//
#include "commands.h"
#include "placement_options.h"
#include "tool_support.h"

#include "compile/compile.h"
#include "ir/parser.h"
#include "ir/symbol.h"
#include "partition/partition.h"
#include "plugin/registry.h"
#include "runtime/artifact.h"
#include "support/file.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

namespace tessera::tools {

namespace {

struct CompileArgs {
  std::string model, out;
  std::vector<std::string> targets, inputShapes, onHost;
  std::string cpu{compile::kDefaultCpus};
  int optLevel = 2;
  unsigned jobs = 0;
  bool timePhases = false;
  std::shared_ptr<PlacementArgs> placement = std::make_shared<PlacementArgs>();
};

/// Wall time per phase: a phase runs from its begin() to the next one.
class PhaseClock {
public:
  void begin(std::string name) {
    end();
    name_ = std::move(name);
    start_ = std::chrono::steady_clock::now();
  }
  void end() {
    if (!name_.empty())
      phases_.emplace_back(std::move(name_), seconds(start_));
    name_.clear();
  }
  std::string report() const {
    std::string s = "Phases (wall time):\n";
    double total = 0;
    for (const auto &[name, t] : phases_) {
      s += fmt::format("  {:7.3f} s  {}\n", t, name);
      total += t;
    }
    return s + fmt::format("  {:7.3f} s  total\n", total);
  }

private:
  static double seconds(std::chrono::steady_clock::time_point since) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
  }
  std::string name_;
  std::chrono::steady_clock::time_point start_;
  std::vector<std::pair<std::string, double>> phases_;
};

/// "Symbolic dims: N 1.. (input 'x' dim 0), ...: ..." for a model whose
/// inputs have symbolic dims (an ONNX dim --input-shape left unbound stays
/// symbolic), else "".
std::string symbolicInputs(const ir::Module &m) {
  ir::Function main = m.find("main");
  if (!main)
    return {};
  std::vector<std::pair<int64_t, std::string>> seen;
  for (const ir::Var &p : main->params()) {
    if (!p->type().isTensor())
      continue;
    for (size_t d = 0; d < p->type().rank(); ++d) {
      const int64_t dim = p->type().shape()[d];
      if (!ir::isSymbol(dim))
        continue;
      auto it = std::find_if(seen.begin(), seen.end(), [&](const auto &s) { return s.first == dim; });
      const std::string where = fmt::format("input '{}' dim {}", p->name(), d);
      if (it == seen.end())
        seen.emplace_back(dim, where);
      else
        it->second += ", " + where;
    }
  }
  if (seen.empty())
    return {};
  std::string list;
  for (const auto &[dim, where] : seen) {
    const ir::SymbolInfo &s = ir::symbolInfo(dim);
    list += fmt::format("{}{} {}..{} ({})", list.empty() ? "" : ", ", s.name, s.lo,
                        s.bounded() ? std::to_string(s.hi) : "", where);
  }
  return fmt::format("Symbolic dims: {}. The artifact runs at every size within these bounds; "
                     "--input-shape compiles for one size (x=1,3,224,224) or bounds a dim "
                     "(x=N:1..8,3,H:32..512,W:32..512).\n",
                     list);
}

bool hasRegions(const ir::Module &m) {
  for (const auto &[name, fn] : m.functions())
    if (fn->attrs().has(partition::kCompilerAttr))
      return true;
  return false;
}

Status run(const CompileArgs &a) {
  if (a.optLevel < 0 || a.optLevel > 3)
    return Error::format("--opt-level must be 0, 1, 2 or 3, not {}", a.optLevel);
  TS_RETURN_IF_ERROR(checkWritableFile(a.out)); // before minutes of work, not after
  PhaseClock clock;
  clock.begin("import " + a.model);
  TS_ASSIGN_OR_RETURN(ir::Module module, tools::loadModel(a.model, a.inputShapes));

  compile::CompileOptions options;
  options.targets = a.targets;
  options.hostNodes = a.onHost;
  TS_RETURN_IF_ERROR(compile::setCpus(options, a.cpu));
  options.codegen.optLevel = a.optLevel;
  options.codegen.threads = a.jobs;
  options.progress = [&clock](std::string_view line) {
    std::cout << "  " << line << std::endl;
    clock.begin(std::string(line));
  };
  // Discovering plugins costs a probe per file: only when they are needed
  // (targets, or a model that was partitioned already).
  const plugin::PluginRegistry *registry = nullptr;
  if (!a.targets.empty() || hasRegions(module))
    registry = &plugin::PluginRegistry::global();

  if (a.placement->mode == "measure")
    std::cout << fmt::format("Measuring placements for {} (budget {} s)\n",
                             fmt::join(a.targets, ", "), a.placement->tuneBudget);
  TS_ASSIGN_OR_RETURN(std::optional<compile::Placement> placement,
                      compile::applyPlacement(module, placementRequest(*a.placement), options,
                                              registry));
  if (placement)
    std::cout << placement->report();
  std::cout << fmt::format("Compiling {}{}\n", a.model,
                           options.targets.empty()
                               ? std::string(" for the host")
                               : fmt::format(" for {}", fmt::join(options.targets, ", ")));
  options.outputPath = a.out;
  auto result = compile::compileModule(module, options, registry);
  if (!result)
    return std::move(result).error().addContext(a.model);
  std::cout << result->partitionSummary;
  if (std::string symbols = symbolicInputs(module); !symbols.empty())
    std::cout << symbols;

  std::cout << fmt::format("Wrote {} ({} bytes): {} host step{}, {} plugin step{}, arena {} "
                           "bytes, weights {} bytes\n",
                           a.out, result->artifactSize, result->hostSteps,
                           result->hostSteps == 1 ? "" : "s", result->externalSteps,
                           result->externalSteps == 1 ? "" : "s", result->arenaBytes,
                           result->weightsBytes);
  clock.end();
  if (a.timePhases)
    std::cout << clock.report();
  return okStatus();
}

} // namespace

Subcommand addCompileCommand(CLI::App &app) {
  auto args = std::make_shared<CompileArgs>();
  auto *cmd = app.add_subcommand(
      "compile", "Compile a model into one artifact file (.tsr) that `tessera run` and apps "
                 "linking libtessera_runtime execute without the compiler");
  cmd->add_option("model", args->model, "Model: .onnx, or text IR (.tir)")->required();
  cmd->add_option("-o,--output", args->out, "The artifact to write (e.g. model.tsr)")->required();
  cmd->add_option("--target", args->targets,
                  "Plugins to offload to, in priority order (comma-separated); none: "
                  "everything on the host")
      ->delimiter(',');
  cmd->add_option("--input-shape", args->inputShapes,
                  "ONNX input shape, NAME=D0,D1,... (repeatable)")
      ->allow_extra_args(false);
  addOnHostOption(*cmd, args->onHost);
  addPluginTimeoutOption(*cmd);
  cmd->add_option("--mcpu", args->cpu,
                  "CPUs the host code is for, comma-separated: x86-64 levels (x86-64, "
                  "x86-64-v2, x86-64-v3, x86-64-v4), LLVM CPU names (znver4, skylake-avx512), "
                  "or native (this machine's CPU and features). One shared object each; the "
                  "runtime loads the best one the CPU has (TESSERA_HOST_CPU forces one) and "
                  "refuses a CPU that runs none. Plugins compile for the most portable one")
      ->capture_default_str();
  cmd->add_option("--opt-level", args->optLevel, "Host code optimisation level, 0-3")
      ->capture_default_str();
  cmd->add_option("--jobs", args->jobs,
                  "Threads that optimise and emit the host code; default: one per core (at "
                  "most 8)");
  addPlacementOptions(*cmd, args->placement);
  cmd->add_flag("--time-phases", args->timePhases,
                "Print the wall time of each phase (import, partitioning, plugin codegen, host "
                "code, writing)");
  return {cmd, [args] {
            return runGuarded("tessera compile", args->model, [&] {
              Status s = run(*args);
              if (!s.ok())
                return reportError("tessera compile", s.error());
              return 0;
            });
          }};
}

} // namespace tessera::tools
