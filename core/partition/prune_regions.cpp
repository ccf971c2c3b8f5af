//===- partition/prune_regions.cpp - Send unprofitable regions back -------===//
//
// The prune-regions pass: each region call (a call of a local function with
// Compiler="<t>") of a global function is kept or pruned:
//   - when the PartitionState has target t and its plugin has a region rule
//     (checker.keep_region), the plugin decides on the region's graph and
//     gives the reason;
//   - otherwise the default rule keeps regions holding at least one
//     compute-heavy op (composite bodies included).
// A pruned region is inlined back: its call is replaced by its body with the
// parameters substituted, and composite calls inside are inlined too (the
// host runs plain ops). Each op of it gets a HostDecision{Pruned} in the log
// when there is a state. Then the regions are re-merged (neighbouring
// same-target regions may now merge), with merge-compiler-regions' code.
//
// Preconditions: runs after merge-compiler-regions and before
// partition-graph (regions are still local functions). Works without
// targets (default rule only).
//
//===----------------------------------------------------------------------===//
#include "partition/partition.h"
#include "partition/plugin_bridge.h"
#include "partition/regions.h"

#include "ir/visit.h"
#include "plugin/registry.h"

#include <unordered_map>
#include <unordered_set>

namespace tessera::partition {

using namespace ir;

namespace {

constexpr const char *kDefaultReason =
    "no compute-heavy op (conv2d, conv2d_transpose, dense, matmul, batch_matmul)";

/// Is this a call of a composite function?
bool isCompositeCall(const ExprNode &node) {
  const auto *call = node.as<CallNode>();
  return call && call->localFn() && call->localFn()->attrs().has(kCompositeAttr);
}

/// The body of `fn` with its parameters replaced by `args`, composite calls
/// inside inlined as well (nesting depth is bounded by the parser's cap).
Expected<Expr> inlineCall(const FunctionNode &fn, std::span<const Expr> args) {
  std::unordered_map<const ExprNode *, Expr> subst;
  for (size_t k = 0; k < fn.params().size() && k < args.size(); ++k)
    subst[fn.params()[k].get()] = args[k];
  return rewrite(
      fn.body(),
      [&](const Expr &orig, const Expr &rebuilt) -> Expected<Expr> {
        if (auto it = subst.find(orig.get()); it != subst.end())
          return it->second;
        if (isCompositeCall(*rebuilt)) {
          const auto *call = rebuilt->as<CallNode>();
          return inlineCall(*call->localFn(), call->args());
        }
        return rebuilt;
      },
      /*intoFunctions=*/false);
}

/// Why a region goes back to the host, or nullopt to keep it.
struct Verdict {
  bool keep = true;
  std::string reason;
};

class PruneRegionsPass : public passes::Pass {
public:
  std::string_view name() const override { return "prune-regions"; }
  std::string_view description() const override {
    return "Send regions not worth offloading back to the host";
  }

  Status run(Module &m, passes::PassContext &ctx) override {
    PartitionState *state = ctx.partition();
    auto functions = m.functions();
    for (const auto &[global, fn] : functions) {
      if (fn->attrs().has(kCompilerAttr))
        continue; // an already lifted region
      auto pruned = pruneFunction(m, global, fn, state, ctx);
      if (!pruned.ok())
        return std::move(pruned)
            .withContext(fmt::format("prune-regions: in function '@{}'", global))
            .error();
      if (*pruned != fn)
        m.set(global, std::move(pruned).value());
    }
    // Neighbours of pruned regions may merge now.
    auto merged = mergeRegions(m);
    if (!merged.ok())
      return std::move(merged).error();
    return okStatus();
  }

private:
  Expected<Function> pruneFunction(const Module &m, const std::string &global, const Function &fn,
                                   PartitionState *state, passes::PassContext &ctx) {
    std::unordered_set<const ExprNode *> prune;
    std::unordered_map<std::string, int> seen; // regions per target, for symbols
    NodeIndex index(fn->body(), /*intoFunctions=*/false);
    for (size_t i = 0; i < index.size(); ++i) {
      const Expr &node = index.expr(i);
      std::string target;
      const FunctionNode *region = regionFunctionOf(*node, &target);
      if (!region)
        continue;
      std::string symbol = fmt::format("tessera_{}_{}_{}", m.name(), target, seen[target]++);
      TS_ASSIGN_OR_RETURN(Verdict v, decide(node, target, symbol, state));
      if (v.keep)
        continue;
      prune.insert(node.get());
      ++ctx.stat("regions-pruned");
      if (state)
        logOps(*region, global, target, v.reason, *state);
    }
    if (prune.empty())
      return fn;
    return rewriteFunction(
        fn,
        [&](const Expr &orig, const Expr &rebuilt) -> Expected<Expr> {
          if (const auto *g = rebuilt->as<TupleGetItemNode>())
            if (const auto *t = g->tuple()->as<TupleNode>();
                t && prune.count(orig->as<TupleGetItemNode>()->tuple().get()))
              return t->fields()[size_t(g->index())]; // an output of an inlined region
          if (!prune.count(orig.get()))
            return rebuilt;
          const auto *call = rebuilt->as<CallNode>();
          return inlineCall(*call->localFn(), call->args());
        },
        /*intoFunctions=*/false);
  }

  /// The plugin's rule when it has one, else the default rule.
  static Expected<Verdict> decide(const Expr &node, const std::string &target,
                                  const std::string &symbol, PartitionState *state) {
    const auto *call = node->as<CallNode>();
    const Target *t = state ? state->find(target) : nullptr;
    if (t && t->plugin && t->plugin->hasRegionRule()) {
      auto fnExpr = std::static_pointer_cast<const FunctionNode>(call->localFnExpr());
      auto graph = GraphHolder::fromFunction(fnExpr, symbol, t->plugin->codegenFlags());
      if (!graph.ok())
        return std::move(graph)
            .withContext(fmt::format("region of target '{}' ({})", target, symbol))
            .error();
      plugin::CheckResult r = t->plugin->keepRegion((*graph)->graph());
      if (r.supported)
        return Verdict{};
      return Verdict{false, r.reason.empty()
                                ? fmt::format("plugin '{}' declined the region", target)
                                : r.reason};
    }
    if (anyNode(call->localFnExpr(), [](const ExprNode &n) {
          const auto *c = n.as<CallNode>();
          return c && c->op() && isComputeHeavy(c->op()->name);
        }))
      return Verdict{};
    return Verdict{false, kDefaultReason};
  }

  /// One HostDecision per core op of a pruned region, in execution order
  /// (a composite's ops where the composite is called).
  static void logOps(const FunctionNode &region, const std::string &global,
                     const std::string &target, const std::string &reason, PartitionState &state) {
    for (const ExprNode *n : postOrder(region.body(), /*intoFunctions=*/false)) {
      const auto *c = n->as<CallNode>();
      if (c && c->calleeKind() == CallNode::CalleeKind::Local && c->localFn())
        logOps(*c->localFn(), global, target, reason, state); // nesting is shallow
      if (!c || !c->op())
        continue;
      HostDecision d;
      d.kind = HostDecision::Kind::Pruned;
      d.function = global;
      d.node = c->name().empty() ? c->op()->name : c->name();
      d.op = c->op()->name;
      d.target = target;
      d.reason = reason;
      state.log.host.push_back(std::move(d));
    }
  }
};

} // namespace

std::unique_ptr<passes::Pass> createPruneRegionsPass() {
  return std::make_unique<PruneRegionsPass>();
}

} // namespace tessera::partition
