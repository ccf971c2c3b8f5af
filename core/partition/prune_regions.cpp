//===- partition/prune_regions.cpp - Send unprofitable regions back -------===//
//
// The prune-regions pass: each region call (a call of a local function with
// Compiler="<t>") of a global function is kept or pruned:
//   - when the PartitionState has target t and its plugin has a region rule
//     (checker.keep_region), the plugin decides on the region's graph and
//     gives the reason;
//   - otherwise the default rule keeps regions holding at least one
//     compute-heavy op (composite bodies included);
//   - before both, PartitionState::regionRule when set (placement by
//     measurement) may decide; the calls of a region it sends back are
//     recorded in PartitionState::withheld, so that the `partition` pass
//     can offer them to the targets after this one; a region it sends back
//     in part withholds only the calls it names, so that the `partition`
//     pass can offer the rest to the same target again.
// A pruned region is inlined back: its ops return to the host, and
// composite calls among them are inlined too (the host runs plain ops).
// Each op of it gets a HostDecision{Pruned} in the log when there is a
// state. Then the regions are re-merged (neighbouring same-target regions
// may now merge), with merge-compiler-regions' code. Regions are judged in
// the order of their first op in post order; the plugin's rule sees the
// region as the function @tessera_<module>_<target>_<n> (n counting that
// target's regions from 0 in that order). The pass reads the regions back
// as labels (regions.h) and outlines the result; the `partition` pass calls
// pruneLabels directly.
//
// Preconditions: runs after merge-compiler-regions and before
// partition-graph (regions are still local functions). Works without
// targets (default rule only).
//
//===----------------------------------------------------------------------===//
#include "partition/partition.h"
#include "bridge/plugin_bridge.h"
#include "partition/regions.h"

#include "ir/visit.h"
#include "plugin/registry.h"

#include <unordered_map>

namespace tessera::partition {

using namespace ir;

namespace {

constexpr const char *kDefaultReason =
    "no compute-heavy op (conv2d, conv2d_transpose, dense, matmul, batch_matmul, lstm, gru, rnn)";

/// Why a region goes back to the host, or nullopt to keep it.
struct Verdict {
  bool keep = true;
  std::string reason;
  bool ruled = false; // by PartitionState::regionRule
  std::map<std::string, std::string> withhold = {}; // sent back in part: RegionVerdict's
};

/// The plugin's rule when it has one, else the default rule.
Expected<Verdict> decide(const NodeIndex &index, RegionBuilder &builder, int r,
                         const std::string &target, const std::string &symbol,
                         PartitionState *state) {
  if (state && state->regionRule) { // a measured verdict first
    std::vector<Expr> args;
    auto fn = builder.build(r, [&](size_t p) { return index.expr(p); }, args);
    if (!fn.ok())
      return std::move(fn)
          .withContext(fmt::format("region of target '{}' ({})", target, symbol))
          .error();
    TS_ASSIGN_OR_RETURN(std::optional<RegionVerdict> v, state->regionRule(*fn, target));
    if (v)
      return Verdict{v->keep, v->reason, true, v->withhold};
  }
  const Target *t = state ? state->find(target) : nullptr;
  if (t && t->plugin && t->plugin->hasRegionRule()) {
    std::vector<Expr> args;
    auto graph = [&]() -> Expected<std::unique_ptr<bridge::GraphHolder>> {
      TS_ASSIGN_OR_RETURN(Function fn, builder.build(r, [&](size_t p) { return index.expr(p); },
                                                     args));
      return bridge::GraphHolder::fromFunction(fn, symbol, t->plugin->codegenFlags());
    }();
    if (!graph.ok())
      return std::move(graph)
          .withContext(fmt::format("region of target '{}' ({})", target, symbol))
          .error();
    TS_ASSIGN_OR_RETURN(plugin::CheckResult v, t->plugin->guardedKeepRegion((*graph)->graph()));
    if (v.supported)
      return Verdict{};
    return Verdict{false, v.reason.empty()
                              ? fmt::format("plugin '{}' declined the region", target)
                              : v.reason};
  }
  // The region's own op calls first, read from the index (no node is
  // touched); composite bodies only when none of them is compute-heavy.
  const auto &members = builder.members(r);
  for (int m : members)
    if (const Op *op = index.op(size_t(m)); op && isComputeHeavy(op->name))
      return Verdict{};
  for (int m : members) {
    if (index.op(size_t(m)) || index.kind(size_t(m)) != ExprKind::Call)
      continue;
    const auto *c = index.node(size_t(m))->as<CallNode>();
    if (c->calleeKind() == CallNode::CalleeKind::Local &&
        anyNode(c->localFnExpr(), [](const ExprNode &n) {
          const auto *inner = n.as<CallNode>();
          return inner && inner->op() && isComputeHeavy(inner->op()->name);
        }))
      return Verdict{};
  }
  return Verdict{false, kDefaultReason};
}

/// One HostDecision for an op call; a composite's ops where it is called.
void logOp(const ExprNode &n, const std::string &global, const std::string &target,
           const std::string &reason, PartitionState &state) {
  const auto *c = n.as<CallNode>();
  if (c && c->calleeKind() == CallNode::CalleeKind::Local && c->localFn())
    for (const ExprNode *inner : postOrder(c->localFn()->body(), /*intoFunctions=*/false))
      logOp(*inner, global, target, reason, state); // nesting is shallow
  if (!c || !c->op())
    return;
  HostDecision d;
  d.kind = HostDecision::Kind::Pruned;
  d.function = global;
  d.node = c->name().empty() ? c->op()->name : c->name();
  d.op = c->op()->name;
  d.target = target;
  d.reason = reason;
  state.log.host.push_back(std::move(d));
}

const passes::PassInfo kPruneRegionsInfo{
    "prune-regions",
    "Send regions not worth offloading back to the host",
    "Regions not worth offloading go back to the host: the plugin's `keep_region` rule "
    "decides, or by default a region must hold a compute-heavy op (conv2d, "
    "conv2d_transpose, dense, matmul, batch_matmul, lstm, gru, rnn); the rest is merged again.",
    {
        {"regions-pruned", "regions sent back to the host"},
    }};

class PruneRegionsPass : public passes::Pass {
public:
  explicit PruneRegionsPass(PartitionState *state) : state_(state) {}
  const passes::PassInfo &info() const override { return kPruneRegionsInfo; }

  Status run(Module &m, passes::PassContext &ctx) override {
    return relabelFunctions(
        m, "prune-regions",
        [&](const std::string &global, const NodeIndex &index, Labels &labels,
            int64_t regionCalls) -> Expected<bool> {
          TS_ASSIGN_OR_RETURN(int64_t pruned,
                              pruneLabels(index, labels,
                                          PruneScope{state_, m.name(), global}, ctx));
          MergeCounts c = mergeLabels(index, labels); // neighbours may merge now
          return pruned > 0 || c.regionsAfter != regionCalls;
        });
  }

private:
  PartitionState *state_;
};

} // namespace

Expected<int64_t> pruneLabels(const NodeIndex &index, Labels &labels, const PruneScope &scope,
                              passes::PassContext &ctx) {
  RegionBuilder builder(index, labels);
  std::unordered_map<std::string, int> seen; // regions per target, for symbols
  int64_t pruned = 0;
  for (int r = 0; r < int(labels.numRegions()); ++r) {
    const std::string &target = labels.targets[size_t(r)];
    std::string symbol = fmt::format("tessera_{}_{}_{}", scope.module, target, seen[target]++);
    TS_ASSIGN_OR_RETURN(Verdict v, decide(index, builder, r, target, symbol, scope.state));
    if (v.keep) {
      if (v.ruled && scope.state)
        for (int m : builder.members(r))
          scope.state->kept[{scope.function, m}] = v.reason;
      continue;
    }
    ++pruned;
    ++ctx.stat("regions-pruned");
    for (int m : builder.members(r)) {
      labels.regionOf[size_t(m)] = Labels::kPruned;
      if (!scope.state)
        continue;
      // A call sent back earlier from other targets says so too.
      const auto *call = index.node(size_t(m))->as<CallNode>();
      std::string reason = v.reason;
      for (const Target &t : scope.state->targets)
        if (const std::string *why = call && t.name != target
                                         ? scope.state->withheldFrom(scope.function, *call, t.name)
                                         : nullptr)
          reason += fmt::format("; before that, sent back from '{}': {}", t.name, *why);
      logOp(*index.node(size_t(m)), scope.function, target, reason, *scope.state);
      if (!v.ruled || !call)
        continue;
      if (v.withhold.empty())
        scope.state->withhold(scope.function, *call, target, v.reason);
      else if (scope.state->withholdNamed(scope.function, *call, target, v.withhold) &&
               scope.withheldPart)
        *scope.withheldPart = true;
    }
    if (v.ruled && v.withhold.empty() && scope.ruledBack)
      scope.ruledBack->push_back(target);
  }
  if (pruned)
    labels.compact();
  return pruned;
}

std::unique_ptr<passes::Pass> createPruneRegionsPass(PartitionState *state) {
  return std::make_unique<PruneRegionsPass>(state);
}

} // namespace tessera::partition
