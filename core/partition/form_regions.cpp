//===- partition/form_regions.cpp - Annotate, merge and prune in one step -===//
//
// The form-regions pass makes the decisions of annotate-target,
// merge-compiler-regions and prune-regions, in that order, on one compact
// index of each global function (regions.h) and rebuilds the function once,
// when the regions are final. Its result is the module the three passes
// give one after the other (a property test checks it on random graphs);
// what it saves is rebuilding the whole IR after each step, which is what
// made partitioning slow down per node on 10^5-node graphs
// (docs/design/0008-partitioning-at-scale.md). partitionModule runs it
// (kPartitionPipeline); the three passes stay for tessera-opt and the lit
// tests, which show each step's IR.
//
// Preconditions: a PartitionState (--target); run after merge-composite and
// before partition-graph. Stats: those of the three passes.
//
//===----------------------------------------------------------------------===//
#include "partition/partition.h"
#include "partition/regions.h"

#include "ir/visit.h"

namespace tessera::partition {

using namespace ir;

namespace {

class FormRegionsPass : public passes::Pass {
public:
  std::string_view name() const override { return "form-regions"; }
  std::string_view description() const override {
    return "annotate-target, merge-compiler-regions and prune-regions in one step (one rebuild)";
  }

  Status run(Module &m, passes::PassContext &ctx) override {
    TS_ASSIGN_OR_RETURN(PartitionState * state, requireState(ctx, name()));
    auto functions = m.functions();
    for (const auto &[global, fn] : functions) {
      if (fn->attrs().has(kCompilerAttr))
        continue; // already partitioned
      auto formed = form(m, global, fn, *state, ctx);
      if (!formed.ok())
        return std::move(formed)
            .withContext(fmt::format("form-regions: in function '@{}'", global))
            .error();
      if (*formed != fn)
        m.set(global, std::move(formed).value());
    }
    return okStatus();
  }

private:
  static Expected<Function> form(const Module &m, const std::string &global, const Function &fn,
                                 PartitionState &state, passes::PassContext &ctx) {
    NodeIndex index(fn->body(), /*intoFunctions=*/false);
    TS_ASSIGN_OR_RETURN(Labels labels, annotateLabels(fn, global, index, state, ctx));
    if (labels.numRegions() == 0)
      return fn;
    MergeCounts merged = mergeLabels(index, labels);
    ctx.stat("regions-before") += merged.regionsBefore;
    ctx.stat("regions-after") += merged.regionsAfter;
    TS_RETURN_IF_ERROR(pruneLabels(index, labels, PruneScope{&state, m.name(), global}, ctx));
    mergeLabels(index, labels); // neighbours of pruned regions may merge now
    TS_ASSIGN_OR_RETURN(Expr body, outlineRegions(index, labels));
    return makeFunction(fn->params(), std::move(body), fn->attrs(), fn->name(), fn->span());
  }
};

} // namespace

std::unique_ptr<passes::Pass> createFormRegionsPass() {
  return std::make_unique<FormRegionsPass>();
}

} // namespace tessera::partition
