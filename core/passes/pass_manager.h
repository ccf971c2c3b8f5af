//===- passes/pass_manager.h - Pipelines and instrumentation ---*- C++ -*-===//
//
// Runs a pipeline parsed from a string ("simplify-inference,fold-constants,
// dce"), with optional instrumentation: wall time per pass (--time-passes),
// the module printed after a named pass or after every pass, per-pass
// statistics, and the verifier after every pass (on by default in builds
// with TESSERA_VERIFY_EACH_DEFAULT, i.e. the dev and asan presets).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "passes/pass.h"

#include <iosfwd>
#include <set>

namespace tessera::passes {

struct PassManagerOptions {
  bool timePasses = false;
  bool printAfterAll = false;
  std::set<std::string> printAfter;
  bool stats = false;
#ifdef TESSERA_VERIFY_EACH_DEFAULT
  bool verifyEach = true;
#else
  bool verifyEach = false;
#endif
};

class PassManager {
public:
  explicit PassManager(PassManagerOptions options = {}) : options_(std::move(options)) {}

  /// Parses a comma-separated list of pass names. Unknown names are an error
  /// that lists the known ones.
  static Expected<PassManager> fromPipeline(std::string_view pipeline,
                                            const PassRegistry &registry = PassRegistry::standard(),
                                            PassManagerOptions options = {});

  void add(std::unique_ptr<Pass> pass) { passes_.push_back(std::move(pass)); }
  size_t size() const { return passes_.size(); }

  /// Runs every pass in order; stops at the first error, which names the
  /// pass. IR printed by --print-after goes to `irOut` (stderr if null).
  Status run(ir::Module &m, std::ostream *irOut = nullptr);

  /// Time and statistics of the last run, as requested by the options.
  void printReport(std::ostream &os) const;

private:
  struct Record {
    std::string pass;
    double seconds = 0;
    std::map<std::string, int64_t> stats;
  };
  PassManagerOptions options_;
  std::vector<std::unique_ptr<Pass>> passes_;
  std::vector<Record> records_;
};

} // namespace tessera::passes
