//===- passes/pass.h - Passes and their registry ---------------*- C++ -*-===//
//
// A pass declares what it is once, in a PassInfo next to it: its stable
// command-line name, a one-line summary (--list-passes), what it does in
// full (docs/passes.md is generated from it: `tessera passes --markdown`)
// and every statistic it counts. It is registered explicitly
// (registerStandardPasses), never by a static initializer. Passes count
// what they did through PassContext::stat; the pass manager prints the
// counts with --stats and refuses a counter the pass does not declare.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/module.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::passes {

/// What every running pass can see besides the module. State that only
/// some passes need (the partition passes' targets and log) is given to
/// them when they are created (partition::allPasses(state)).
class PassContext {
public:
  /// A named counter of the current pass ("constants-folded").
  int64_t &stat(const std::string &counter) { return (*stats_)[counter]; }
  void setStats(std::map<std::string, int64_t> *stats) { stats_ = stats; }

private:
  std::map<std::string, int64_t> *stats_ = &scratch_;
  std::map<std::string, int64_t> scratch_;
};

/// A counter a pass reports under --stats.
struct Statistic {
  std::string_view name;        // "calls-folded"
  std::string_view description; // what one count is
};

/// What a pass is, declared once (a constant in the pass's file).
struct PassInfo {
  std::string_view name;    // on the command line: "fold-constants"
  std::string_view summary; // one line
  std::string_view details; // what it does, in full (docs/passes.md)
  std::vector<Statistic> statistics;

  bool declares(std::string_view statistic) const;
};

class Pass {
public:
  virtual ~Pass() = default;
  virtual const PassInfo &info() const = 0;
  std::string_view name() const { return info().name; }
  std::string_view description() const { return info().summary; }
  virtual Status run(ir::Module &m, PassContext &ctx) = 0;
};

/// A pass that transforms each global function on its own.
class FunctionPass : public Pass {
public:
  Status run(ir::Module &m, PassContext &ctx) override;
  virtual Expected<ir::Function> runOnFunction(const ir::Module &m, const std::string &global,
                                               const ir::Function &f, PassContext &ctx) = 0;
};

class PassRegistry {
public:
  using Factory = std::function<std::unique_ptr<Pass>()>;
  struct Entry {
    std::string name;
    std::string description;
    Factory create;
    const PassInfo *info = nullptr; // the pass's declaration (static storage)
  };

  /// Registers a pass under the name it reports.
  void add(Factory create);
  const Entry *find(std::string_view name) const;
  const std::map<std::string, Entry, std::less<>> &entries() const { return entries_; }

  /// A registry holding the passes of this layer (registerStandardPasses).
  /// Higher layers add theirs to a registry of their own (the compiler's
  /// every pass: partition::allPasses()), as MLIR registers every dialect's
  /// passes at the top.
  static const PassRegistry &standard();

private:
  std::map<std::string, Entry, std::less<>> entries_;
};

/// infer-types, verify, fold-constants, dce, cse, simplify-inference,
/// fold-reshape-transpose, fuse-activations.
void registerStandardPasses(PassRegistry &r);

/// The pipeline the tools run by default.
inline constexpr std::string_view kDefaultPipeline =
    "infer-types,simplify-inference,fold-constants,fold-reshape-transpose,cse,fuse-activations,dce";

//===- The standard passes (one file each) ---------------------------------===//
std::unique_ptr<Pass> createInferTypesPass();
std::unique_ptr<Pass> createVerifyPass();
std::unique_ptr<Pass> createFoldConstantsPass();
std::unique_ptr<Pass> createDCEPass();
std::unique_ptr<Pass> createCSEPass();
std::unique_ptr<Pass> createSimplifyInferencePass();
std::unique_ptr<Pass> createFoldReshapeTransposePass();
std::unique_ptr<Pass> createFuseActivationsPass();

/// Checks the module's invariants (see verify.cpp). Used by the verify pass
/// and by the pass manager between passes.
Status verifyModule(const ir::Module &m);

} // namespace tessera::passes
