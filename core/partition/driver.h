//===- partition/driver.h - Partition a module in one call -----*- C++ -*-===//
//
// The whole flow of `tessera partition` without the command line: the
// optimisation pipeline, then partitioning (kPartitionPipeline: the five
// steps in one pass)
// with the requested targets, then the list of the ops left on the host,
// each with what the passes decided about it, and what became of the
// targets' pattern matches (for the report).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "partition/partition.h"
#include "passes/pass_manager.h"

#include <string>
#include <vector>

namespace tessera::partition {

struct PartitionOptions {
  /// Plugin names, in priority order.
  std::vector<std::string> targets;
  /// Run before partitioning (empty: none).
  std::string pipeline = std::string(passes::kDefaultPipeline);
  /// Instrumentation for both pipelines (its `partition` is ignored).
  passes::PassManagerOptions pm;
  /// Measured verdicts on regions, asked before the prune rules (optional).
  RegionRule regionRule;
  /// Node names no target is offered (`--on-host`); each must name a call.
  std::vector<std::string> hostNodes;
};

/// An op call left in a global function that is not a region.
struct HostOp {
  std::string function; // "main"
  std::string node;     // the call's name, or "" when it has none
  std::string op;
  /// What the passes recorded for this call (matched by function, name
  /// and op: see collectHostOps), in the order they were recorded; empty
  /// when nothing was.
  std::vector<HostDecision> decisions;
};

struct PartitionResult {
  ir::Module module;
  std::vector<std::string> targets; // as given, priority order
  PartitionLog log; // log.patterns: every target's PatternRecords
  std::vector<HostOp> host;
  int64_t offloadedOps = 0; // op calls inside region functions
};

/// Partitions `module` among `options.targets` (loaded in `registry`).
/// Errors: an unknown target (listing the loaded ones), a failing pass.
Expected<PartitionResult> partitionModule(ir::Module module, const PartitionOptions &options,
                                          const plugin::PluginRegistry &registry);

/// The op calls of `m` outside region functions, in module order then post
/// order, with the decisions of `log` about each. A decision is about the
/// calls of its function, node name (or op, for unnamed calls) and op:
/// calls that share a name but not an op (the conv2d and bias_add of one
/// ONNX Conv) each get their own; calls sharing all three take one each, in
/// order. The ops of a composite left on the host get the composite call's.
std::vector<HostOp> collectHostOps(const ir::Module &m, const PartitionLog &log);

/// Op calls inside region (Compiler) global functions.
int64_t countOffloadedOps(const ir::Module &m);

} // namespace tessera::partition
