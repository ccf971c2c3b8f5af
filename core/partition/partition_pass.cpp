//===- partition/partition_pass.cpp - The partition steps in one pass -----===//
//
// The `partition` pass makes the decisions of the five partition steps
// (merge-composite, annotate-target, merge-compiler-regions, prune-regions,
// partition-graph), in that order, on one compact index of each global
// function (regions.h), and then builds the function once, outlining each
// region straight into the global function partition-graph would make of
// it. Its result (module, partition log, errors) is what the five passes
// give one after the other (kPartitionSteps); a property test checks that
// on random graphs. What it saves is rebuilding the whole IR after each
// step, which made partitioning slow down per node on 10^5-node graphs
// (docs/design/0008-partitioning-at-scale.md).
//
// partitionModule runs it (kPartitionPipeline); the separate passes stay
// for tessera-opt and the lit tests, which show each step's IR. A module
// whose functions already call regions (hand-written IR) goes through the
// five passes one by one, since the steps read those regions back from the
// IR. With a whole-graph hook target, a function's composites are built
// before annotating, since the hook reads the function.
//
// Preconditions: a PartitionState (--target). Stats: those of the five
// passes.
//
//===----------------------------------------------------------------------===//
#include "partition/partition.h"
#include "partition/regions.h"

#include "ir/visit.h"
#include "plugin/registry.h"

#include <algorithm>

namespace tessera::partition {

using namespace ir;

namespace {

const passes::PassInfo kPartitionInfo{
    "partition",
    "The five partition steps in one pass, building the IR once",
    "The five partition steps (merge-composite, annotate-target, merge-compiler-regions, "
    "prune-regions, partition-graph) in one pass: the same decisions on one compact index "
    "of each function, and the IR built once, each region lifted straight to its global "
    "function. What `tessera partition` and `tessera compile` run; the steps exist for "
    "`--print-after` and the lit tests.",
    {
        {"composites-formed", "pattern matches outlined as composite functions"},
        {"matches-of-one-op", "matches of a single op, left to the checkers"},
        {"matches-skipped", "matches whose inner values are used outside them"},
        {"matches-vetoed", "matches the plugin's check_pattern refused"},
        {"ops-claimed", "op calls a target claimed"},
        {"composites-claimed", "composite calls a target claimed"},
        {"ops-left-on-host", "op calls no target claimed"},
        {"hook-regions", "regions a whole-graph partition hook formed"},
        {"hook-regions-dropped", "regions of a hook that the core refused"},
        {"regions-before", "regions before merging"},
        {"regions-after", "regions after merging"},
        {"regions-pruned", "regions sent back to the host"},
        {"rounds-reoffered", "functions partitioned again to offer the calls of regions a "
                             "measured verdict sent back to the later targets"},
        {"rounds-refined", "functions partitioned again to offer a target the rest of a "
                           "region a measured verdict sent back in part"},
        {"regions-lifted", "regions lifted into global functions"},
        {"params-merged", "region parameters that read the same value, merged"},
        {"constants-as-inputs", "constants passed to a region as inputs"},
    }};

/// Rounds that offer a target the rest of regions sent back in part (each
/// withholds at least one more call, so the rounds end anyway; this bounds
/// the measurements a compile makes).
constexpr size_t kRefineRounds = 4;

class PartitionPass : public passes::Pass {
public:
  explicit PartitionPass(PartitionState *state) : state_(state) {}
  const passes::PassInfo &info() const override { return kPartitionInfo; }

  Status run(Module &m, passes::PassContext &ctx) override {
    TS_ASSIGN_OR_RETURN(PartitionState * state, requireState(state_));
    TS_ASSIGN_OR_RETURN(std::vector<TargetPattern> patterns, parsePatterns(*state));
    const bool hook = std::any_of(state->targets.begin(), state->targets.end(),
                                  [](const Target &t) { return t.plugin->hasPartitionHook(); });
    // merge-composite's step for every function first (as the steps run).
    // A function that already calls a region sends the whole module
    // through the steps.
    std::vector<Work> work;
    for (const auto &[global, fn] : m.functions()) {
      if (fn->attrs().has(kCompilerAttr))
        continue; // already partitioned
      work.push_back(
          Work{global, fn, std::make_unique<NodeIndex>(fn->body(), /*intoFunctions=*/false), {}, {}});
      if (callsRegion(*work.back().index))
        return runSteps(m, ctx);
    }
    const Prep prep{patterns, hook};
    for (Work &w : work)
      TS_RETURN_IF_ERROR(prepare(w, prep, *state, state->log, ctx));

    RegionLifter lifter(m, ctx, state);
    Logs logs;
    Status status = okStatus();
    for (Work &w : work) {
      auto formed = form(m, w, prep, *state, lifter, logs, ctx);
      if (!formed.ok()) {
        status = std::move(formed).withContext(fmt::format("in function '@{}'", w.global)).error();
        break;
      }
      if (*formed != w.original)
        m.set(w.global, std::move(formed).value());
      w.index.reset();
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
  /// One function to partition.
  struct Work {
    std::string global;
    Function original;
    std::unique_ptr<NodeIndex> index; // of the function with its composites
    Composites composites;            // what `index` substitutes (it points into them)
    Function fn;                      // the function with composites, when built
  };

  struct Logs {
    std::vector<HostDecision> annotate, prune;
  };

  struct Prep {
    const std::vector<TargetPattern> &patterns;
    bool hook = false; // a target has a whole-graph hook
  };

  /// merge-composite's step on `w` (again, from its original function,
  /// when calls were withheld since): its composites and its index;
  /// pattern records go to `records`.
  static Status prepare(Work &w, const Prep &prep, PartitionState &state, PartitionLog &records,
                        passes::PassContext &ctx) {
    const Function &fn = w.original;
    if (w.fn || !w.composites.empty()) {
      w.fn = nullptr;
      w.composites.clear();
      w.index = std::make_unique<NodeIndex>(fn->body(), /*intoFunctions=*/false);
    }
    auto found = findComposites(fn, *w.index, prep.patterns, records, ctx, &state, w.global);
    if (!found.ok())
      return std::move(found).withContext(fmt::format("in function '@{}'", w.global)).error();
    w.composites = std::move(found).value();
    if (w.composites.empty())
      return okStatus();
    if (prep.hook) {
      // The hook reads the function itself: build it with its composites.
      TS_ASSIGN_OR_RETURN(w.fn, withComposites(fn, *w.index, w.composites));
      w.composites.clear();
      w.index = std::make_unique<NodeIndex>(w.fn->body(), /*intoFunctions=*/false);
    } else {
      // The index of the function with its composites, without building
      // it, derived from the first without reading its nodes again.
      w.index = std::make_unique<NodeIndex>(std::move(*w.index), w.composites);
    }
    return okStatus();
  }

  /// Moves what the last step appended to the log (after `from`) to `to`.
  static void take(PartitionState &state, size_t from, std::vector<HostDecision> &to) {
    auto &host = state.log.host;
    to.insert(to.end(), std::make_move_iterator(host.begin() + long(from)),
              std::make_move_iterator(host.end()));
    host.resize(from);
  }

  /// Annotates, merges and prunes `w`'s function. When the region rule
  /// sends a region back from a target that is not the last, the calls it
  /// held are withheld from that target and the three steps run again, so
  /// that the targets after it may take them (PartitionState::withheld);
  /// only the last round's decisions are logged. `formed`: whether
  /// annotate-target formed any region.
  static Expected<Labels> decide(bool &formed, const Module &m, Work &w, const Prep &prep,
                                 PartitionState &state, Logs &logs, passes::PassContext &ctx) {
    const size_t logged = state.log.host.size();
    size_t reoffered = 0, refined = 0;
    for (size_t round = 0;; ++round) {
      if (round > 0) { // the withheld calls' composites dissolved
        PartitionLog scratch; // the first round's pattern records stand
        TS_RETURN_IF_ERROR(prepare(w, prep, state, scratch, ctx));
      }
      const NodeIndex &index = *w.index;
      const Function &fn = w.fn ? w.fn : w.original;
      Logs here;
      std::erase_if(state.kept, [&](const auto &k) { return k.first.first == w.global; });
      auto annotated = annotateLabels(fn, w.global, index, state, ctx);
      take(state, logged, here.annotate);
      if (!annotated.ok())
        return annotated.error();
      Labels labels = std::move(annotated).value();
      std::vector<std::string> ruledBack;
      bool withheldPart = false;
      formed = labels.numRegions() > 0;
      if (formed) {
        MergeCounts merged = mergeLabels(index, labels);
        ctx.stat("regions-before") += merged.regionsBefore;
        ctx.stat("regions-after") += merged.regionsAfter;
        auto pruned = pruneLabels(index, labels,
                                  PruneScope{&state, m.name(), w.global, &ruledBack,
                                             &withheldPart},
                                  ctx);
        take(state, logged, here.prune);
        if (!pruned.ok())
          return pruned.error();
        mergeLabels(index, labels); // neighbours of pruned regions may merge now
      }
      // Again when a region went back from a target not the last (its ops
      // to the targets after it), or in part (the rest to its own target);
      // each kind of round bounded.
      const bool reoffer =
          reoffered + 1 < state.targets.size() &&
          std::any_of(ruledBack.begin(), ruledBack.end(),
                      [&](const std::string &t) { return t != state.targets.back().name; });
      const bool refine = withheldPart && refined < kRefineRounds;
      if (reoffer || refine) {
        ++ctx.stat(reoffer ? "rounds-reoffered" : "rounds-refined");
        reoffered += reoffer;
        refined += refine && !reoffer;
        continue;
      }
      for (auto [from, to] : {std::pair{&here.annotate, &logs.annotate},
                              std::pair{&here.prune, &logs.prune}})
        to->insert(to->end(), std::make_move_iterator(from->begin()),
                   std::make_move_iterator(from->end()));
      return labels;
    }
  }

  static Expected<Function> form(const Module &m, Work &w, const Prep &prep,
                                 PartitionState &state, RegionLifter &lifter, Logs &logs,
                                 passes::PassContext &ctx) {
    bool formed = false;
    TS_ASSIGN_OR_RETURN(Labels labels, decide(formed, m, w, prep, state, logs, ctx));
    const NodeIndex &index = *w.index;
    const Function &fn = w.fn ? w.fn : w.original;
    if (!formed && w.composites.empty())
      return fn; // nothing changes
    TS_ASSIGN_OR_RETURN(Expr body, outlineRegions(index, labels, &lifter, w.global));
    return makeFunction(fn->params(), std::move(body), fn->attrs(), fn->name(), fn->span());
  }

  static bool callsRegion(const NodeIndex &index) {
    for (size_t i = 0; i < index.size(); ++i)
      if (index.kind(i) == ExprKind::Call && !index.op(i) && regionFunctionOf(*index.node(i)))
        return true;
    return false;
  }

  Status runSteps(Module &m, passes::PassContext &ctx) const {
    std::unique_ptr<passes::Pass> steps[] = {
        createMergeCompositePass(state_), createAnnotateTargetPass(state_),
        createMergeCompilerRegionsPass(), createPruneRegionsPass(state_),
        createPartitionGraphPass(state_)};
    for (auto &step : steps)
      TS_RETURN_IF_ERROR(step->run(m, ctx));
    return okStatus();
  }

  PartitionState *state_;
};

} // namespace

std::unique_ptr<passes::Pass> createPartitionPass(PartitionState *state) {
  return std::make_unique<PartitionPass>(state);
}

} // namespace tessera::partition
