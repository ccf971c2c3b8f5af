//===- partition/partition_pass.cpp - The partition steps in one pass -----===//
//
// The `partition` pass makes the decisions of annotate-target,
// merge-compiler-regions and prune-regions, in that order, on one compact
// index of each global function (regions.h), and then rebuilds the function
// once, outlining each region straight into the global function
// partition-graph would make of it. Its result (module, partition log,
// errors) is what those four passes give one after the other; a property
// test checks that on random graphs. What it saves is rebuilding the whole
// IR after each step, which made partitioning slow down per node on 10^5
// node graphs (docs/design/0008-partitioning-at-scale.md).
//
// partitionModule runs it after merge-composite (kPartitionPipeline); the
// separate passes stay for tessera-opt and the lit tests, which show each
// step's IR. A module whose functions already call regions (hand-written
// IR) goes through the four passes one by one, since the steps read those
// regions back from the IR.
//
// Preconditions: a PartitionState (--target); run after merge-composite.
// Stats: those of the four passes.
//
//===----------------------------------------------------------------------===//
#include "partition/partition.h"
#include "partition/regions.h"

#include "ir/visit.h"

namespace tessera::partition {

using namespace ir;

namespace {

class PartitionPass : public passes::Pass {
public:
  std::string_view name() const override { return "partition"; }
  std::string_view description() const override {
    return "annotate-target, merge-compiler-regions, prune-regions and partition-graph in one "
           "step (one rebuild)";
  }

  Status run(Module &m, passes::PassContext &ctx) override {
    TS_ASSIGN_OR_RETURN(PartitionState * state, requireState(ctx, name()));
    if (hasRegionCalls(m))
      return runSteps(m, ctx);
    RegionLifter lifter(m, ctx, state);
    Logs logs;
    Status status = okStatus();
    auto functions = m.functions(); // the lifted regions are not walked
    for (const auto &[global, fn] : functions) {
      if (fn->attrs().has(kCompilerAttr))
        continue; // already partitioned
      auto formed = form(m, global, fn, *state, lifter, logs, ctx);
      if (!formed.ok()) {
        status = std::move(formed).withContext(fmt::format("in function '@{}'", global)).error();
        break;
      }
      if (*formed != fn)
        m.set(global, std::move(formed).value());
    }
    // The log in the order of the steps: every function's annotate-target
    // decisions, then their prune-regions ones. (After an error the log is
    // partial, as it is after an error in the steps one by one.)
    auto &host = state->log.host;
    host.insert(host.end(), std::make_move_iterator(logs.annotate.begin()),
                std::make_move_iterator(logs.annotate.end()));
    host.insert(host.end(), std::make_move_iterator(logs.prune.begin()),
                std::make_move_iterator(logs.prune.end()));
    return status;
  }

private:
  struct Logs {
    std::vector<HostDecision> annotate, prune;
  };

  /// Moves what the last step appended to the log (after `from`) to `to`.
  static void take(PartitionState &state, size_t from, std::vector<HostDecision> &to) {
    auto &host = state.log.host;
    to.insert(to.end(), std::make_move_iterator(host.begin() + long(from)),
              std::make_move_iterator(host.end()));
    host.resize(from);
  }

  static Expected<Function> form(const Module &m, const std::string &global, const Function &fn,
                                 PartitionState &state, RegionLifter &lifter, Logs &logs,
                                 passes::PassContext &ctx) {
    NodeIndex index(fn->body(), /*intoFunctions=*/false);
    const size_t logged = state.log.host.size();
    auto annotated = annotateLabels(fn, global, index, state, ctx);
    take(state, logged, logs.annotate);
    if (!annotated.ok())
      return annotated.error();
    Labels labels = std::move(annotated).value();
    if (labels.numRegions() == 0)
      return fn;
    MergeCounts merged = mergeLabels(index, labels);
    ctx.stat("regions-before") += merged.regionsBefore;
    ctx.stat("regions-after") += merged.regionsAfter;
    auto pruned = pruneLabels(index, labels, PruneScope{&state, m.name(), global}, ctx);
    take(state, logged, logs.prune);
    if (!pruned.ok())
      return pruned.error();
    mergeLabels(index, labels); // neighbours of pruned regions may merge now
    TS_ASSIGN_OR_RETURN(Expr body, outlineRegions(index, labels, &lifter, global));
    return makeFunction(fn->params(), std::move(body), fn->attrs(), fn->name(), fn->span());
  }

  /// Does a function to partition already call a region?
  static bool hasRegionCalls(const Module &m) {
    for (const auto &[global, fn] : m.functions()) {
      if (fn->attrs().has(kCompilerAttr))
        continue;
      for (const ExprNode *n : postOrder(fn->body(), /*intoFunctions=*/false))
        if (regionFunctionOf(*n))
          return true;
    }
    return false;
  }

  static Status runSteps(Module &m, passes::PassContext &ctx) {
    for (auto create : {createAnnotateTargetPass, createMergeCompilerRegionsPass,
                        createPruneRegionsPass, createPartitionGraphPass})
      TS_RETURN_IF_ERROR(create()->run(m, ctx));
    return okStatus();
  }
};

} // namespace

std::unique_ptr<passes::Pass> createPartitionPass() { return std::make_unique<PartitionPass>(); }

} // namespace tessera::partition
