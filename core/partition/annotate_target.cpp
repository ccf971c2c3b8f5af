//===- partition/annotate_target.cpp - Offer ops to the targets ----------===//
//
// The annotate-target pass. For each global function (functions already
// partitioned, with a Compiler attribute, are left alone) the targets are
// asked in priority order:
//
//   - a target with a whole-graph hook gets the function as a plugin graph
//     (GraphHolder) and returns a region per JSON node; the result is
//     validated (only op and composite nodes claimed, a composite only by
//     its own plugin, no cycle once each region is contracted) and each
//     region becomes one Compiler function. A region touching a call an
//     earlier target already claimed is dropped (stat "hook-regions-dropped").
//   - any other target is offered every call not claimed yet: op calls of
//     the ops it lists (Plugin::ops) through its checker, and composite
//     calls whose Composite attribute names it ("<target>.<pattern>").
//
// A claimed call becomes `fn(params) attrs{Compiler="<target>"} { ... }(args)`:
// parameters are the values the region reads from outside (deduplicated),
// constants and composite functions it reads go inside. A TupleGetItem of a
// claimed call goes inside its region (absorbProjections), so a region
// returns the items of a tuple-valued op it uses. A region with several
// results used outside returns a tuple, read back with TupleGetItem. The
// decisions are made on labels (regions.h, annotateLabels), then outlined.
//
// An op call a region rule sent back from a target (PartitionState::withheld)
// is not offered to that target again: it declines it with the rule's
// reason, and a hook region holding it is dropped (merge-composite forms no
// match of that target's holding it).
//
// Op calls nobody claims stay as they are and get a HostDecision in the
// partition log: NoTarget (no requested target lists the op) or Declined
// (the declining targets and their reasons; a hook target declines the
// calls it lists that its hook did not take). Tuple, TupleGetItem, variables
// and constants are never offered.
//
// Preconditions: a PartitionState (--target); run after merge-composite.
//
//===----------------------------------------------------------------------===//
#include "partition/partition.h"

#include "ir/visit.h"
#include "bridge/plugin_bridge.h"
#include "partition/regions.h"
#include "plugin/registry.h"
#include "support/log.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace tessera::partition {

using namespace ir;

namespace {

/// A region being formed: its target and its calls (post-order positions,
/// ascending).
struct Region {
  const Target *target = nullptr;
  std::vector<int> members;
};

/// Per-node data of the function being annotated, by post-order position.
struct Nodes {
  const NodeIndex &index;
  std::vector<int> regionOf; // region, or -1
};

/// How a call is named in the log and in messages.
std::string nodeLabel(const CallNode &call) {
  if (!call.name().empty())
    return call.name();
  std::string composite = compositeOf(call);
  return composite.empty() ? call.calleeName() : composite;
}

/// The decisions of annotate-target on one function (annotateLabels).
class Annotator {
public:
  Annotator(PartitionState &state, passes::PassContext &ctx) : state_(&state), ctx_(ctx) {}

  Expected<Labels> run(const Function &fn, const std::string &global, const NodeIndex &index) {
    const size_t n = index.size();
    std::vector<Region> regions;
    std::vector<int> regionOf(n, Labels::kHost);
    std::unordered_map<size_t, std::vector<std::pair<std::string, std::string>>> declines;

    for (const Target &t : state_->targets) {
      if (t.plugin->hasPartitionHook()) {
        if (!fn->type().isStatic() && !t.plugin->takesSymbolicDims()) {
          noteHookLeftovers(t, index, regionOf, declines, kSymbolicDecline);
          continue;
        }
        TS_RETURN_IF_ERROR(askHook(t, fn, global, index, regions, regionOf, ctx_));
        noteHookLeftovers(t, index, regionOf, declines);
        continue;
      }
      // Whether the target lists an op, asked once per op.
      std::unordered_map<const void *, bool> listed;
      const auto &ops = t.plugin->ops();
      const std::string prefix = t.name + ".";
      std::vector<size_t> claims;  // in node order
      std::vector<size_t> asked;   // the op calls for the checker, one batch
      std::vector<std::unique_ptr<bridge::OpDescHolder>> descs;
      for (size_t i = 0; i < n; ++i) {
        if (index.kind(i) != ExprKind::Call || regionOf[i] >= 0)
          continue;
        if (const Op *op = index.op(i)) {
          // Calls of ops the target does not list are never read.
          auto [it, fresh] = listed.emplace(op, false);
          if (fresh)
            it->second = std::find(ops.begin(), ops.end(), op->name) != ops.end();
          if (!it->second)
            continue;
          const auto &call = static_cast<const CallNode &>(*index.node(i));
          if (const std::string *why = state_->withheldFrom(global, call, t.name)) {
            declines[i].emplace_back(t.name, *why);
            continue;
          }
          if (const char *why = notOffered(call, t.plugin->takesSymbolicDims())) {
            declines[i].emplace_back(t.name, why);
            continue;
          }
          TS_ASSIGN_OR_RETURN(auto desc, bridge::OpDescHolder::fromCall(call));
          descs.push_back(std::move(desc));
          asked.push_back(i);
        } else {
          std::string composite = compositeOf(static_cast<const CallNode &>(*index.node(i)));
          if (!composite.empty() && composite.starts_with(prefix))
            claims.push_back(i);
        }
      }
      std::vector<const tessera_op_desc_t *> list;
      for (const auto &d : descs)
        list.push_back(&d->desc());
      TS_ASSIGN_OR_RETURN(std::vector<plugin::CheckResult> verdicts,
                          t.plugin->guardedCheckOps(list));
      for (size_t k = 0; k < asked.size(); ++k) {
        if (verdicts[k].supported) {
          claims.push_back(asked[k]);
          if (!verdicts[k].reason.empty()) // the plugin's note: what will run the op
            state_->log.notes.push_back(
                {t.name, descs[k]->desc().op,
                 nodeLabel(static_cast<const CallNode &>(*index.node(asked[k]))),
                 verdicts[k].reason});
          continue;
        }
        if (verdicts[k].reason.starts_with(plugin::kCheckerErrorPrefix))
          TS_LOG_WARN("plugin '{}' failed in check_op for {} '{}' ({}); the op stays off the "
                      "plugin",
                      t.name, descs[k]->desc().op,
                      nodeLabel(static_cast<const CallNode &>(*index.node(asked[k]))),
                      verdicts[k].reason);
        declines[asked[k]].emplace_back(t.name, verdicts[k].reason);
      }
      std::sort(claims.begin(), claims.end());
      for (size_t i : claims) {
        regionOf[i] = int(regions.size());
        regions.push_back(Region{&t, {int(i)}});
        ++ctx_.stat(index.op(i) ? "ops-claimed" : "composites-claimed");
      }
    }

    logHostDecisions(global, index, regionOf, declines, ctx_);
    Labels labels;
    labels.regionOf = std::move(regionOf);
    for (const Region &r : regions)
      labels.targets.push_back(r.target->name);
    absorbProjections(index, labels);
    labels.compact();
    return labels;
  }

private:
  /// Runs a target's whole-graph hook on `fn` and adds its valid regions.
  Status askHook(const Target &t, const Function &fn, const std::string &global,
                 const NodeIndex &index,
                 std::vector<Region> &regions, std::vector<int> &regionOf,
                 passes::PassContext &ctx) {
    TS_ASSIGN_OR_RETURN(auto graph, bridge::GraphHolder::fromFunction(fn, "", t.plugin->codegenFlags()));
    TS_ASSIGN_OR_RETURN(std::vector<int64_t> assigned,
                        t.plugin->guardedPartition(graph->graph(), graph->numNodes()));
    const std::vector<Expr> &jsonNodes = graph->nodeExprs();
    auto invalid = [&](const std::string &what) {
      return Error::format("plugin '{}': invalid partition: {}", t.name, what);
    };

    // Only op and composite nodes (of this plugin) may be claimed.
    std::map<int64_t, std::vector<size_t>> byRegion; // ordered: deterministic ids
    for (size_t i = 0; i < assigned.size(); ++i) {
      if (assigned[i] < 0)
        continue;
      const Expr &e = jsonNodes[i];
      const auto *call = e->as<CallNode>();
      if (!call) {
        const char *kind = e->kind() == ExprKind::Var ? "an input" : "a constant";
        return invalid(fmt::format("node {} ('{}') is {}; only op and composite nodes can be "
                                   "claimed",
                                   i, e->name(), kind));
      }
      std::string composite = compositeOf(*call);
      if (!composite.empty() && !composite.starts_with(t.name + "."))
        return invalid(fmt::format("node {} is composite '{}' of another plugin", i, composite));
      byRegion[assigned[i]].push_back(i);
    }
    if (byRegion.empty())
      return okStatus();

    // No cycle once each region is contracted.
    std::vector<int> hookRegion(index.size(), -1);
    std::vector<int64_t> ids;
    for (const auto &[id, members] : byRegion) {
      for (size_t i : members)
        if (int64_t p = index.position(jsonNodes[i].get()); p >= 0)
          hookRegion[size_t(p)] = int(ids.size());
      ids.push_back(id);
    }
    ContractedGraph contracted(index, hookRegion, int(ids.size()));
    std::vector<int> order, cycle;
    if (!contracted.order(order, cycle)) {
      std::string list;
      for (int r : cycle)
        list += (list.empty() ? "" : ", ") + std::to_string(ids[size_t(r)]);
      return invalid(cycle.size() == 1
                         ? fmt::format("region {} reaches itself through nodes outside it", list)
                         : fmt::format("regions {} reach each other in a cycle", list));
    }

    // Adopt the regions that no earlier target touched.
    std::vector<std::vector<int>> membersOf(ids.size()); // post-order
    for (size_t p = 0; p < index.size(); ++p)
      if (hookRegion[p] >= 0)
        membersOf[size_t(hookRegion[p])].push_back(int(p));
    size_t r = 0;
    for (const auto &[id, members] : byRegion) {
      std::vector<int> &region = membersOf[r++];
      bool free = std::none_of(members.begin(), members.end(), [&](size_t i) {
        int64_t p = index.position(jsonNodes[i].get());
        const auto *call = jsonNodes[i]->as<CallNode>();
        return p >= 0 && (regionOf[size_t(p)] >= 0 ||
                          (call && state_->withheldFrom(global, *call, t.name)));
      });
      if (!free) {
        ++ctx.stat("hook-regions-dropped");
        continue;
      }
      for (int p : region)
        regionOf[size_t(p)] = int(regions.size());
      regions.push_back(Region{&t, std::move(region)});
      ++ctx.stat("hook-regions");
    }
    return okStatus();
  }

  /// The calls a hook target lists (its ops, its composites) that its hook
  /// left unclaimed count as declined by it, not as unsupported.
  static void noteHookLeftovers(
      const Target &t, const NodeIndex &index, const std::vector<int> &regionOf,
      std::unordered_map<size_t, std::vector<std::pair<std::string, std::string>>> &declines,
      const char *reason = kNotTakenByHook) {
    const auto &ops = t.plugin->ops();
    const std::string prefix = t.name + ".";
    std::unordered_map<const void *, bool> listed;
    for (size_t i = 0; i < index.size(); ++i) {
      if (index.kind(i) != ExprKind::Call || regionOf[i] >= 0)
        continue;
      bool mine = false;
      if (const Op *op = index.op(i)) {
        auto [it, fresh] = listed.emplace(op, false);
        if (fresh)
          it->second = std::find(ops.begin(), ops.end(), op->name) != ops.end();
        mine = it->second;
      } else {
        mine = compositeOf(static_cast<const CallNode &>(*index.node(i))).starts_with(prefix);
      }
      if (mine)
        declines[i].emplace_back(t.name, reason);
    }
  }

  static constexpr const char *kNotTakenByHook = "not taken by its whole-graph partition hook";

  /// Records why each unclaimed op call stays on the host.
  void logHostDecisions(
      const std::string &global, const NodeIndex &index, const std::vector<int> &regionOf,
      const std::unordered_map<size_t, std::vector<std::pair<std::string, std::string>>> &declines,
      passes::PassContext &ctx) {
    for (size_t i = 0; i < index.size(); ++i) {
      if (index.kind(i) != ExprKind::Call || regionOf[i] >= 0)
        continue;
      const auto *call = static_cast<const CallNode *>(index.node(i));
      std::string composite = compositeOf(*call);
      if (call->calleeKind() != CallNode::CalleeKind::Op && composite.empty())
        continue; // calls of @globals and plain local functions
      HostDecision d;
      d.function = global;
      d.node = nodeLabel(*call);
      d.op = composite.empty() ? call->op()->name : composite;
      if (call->op() && call->op()->controlFlow) {
        logControlFlow(global, *call, ctx);
        continue;
      }
      auto it = declines.find(i);
      if (it == declines.end()) {
        d.kind = HostDecision::Kind::NoTarget;
        d.reason = composite.empty() ? fmt::format("no requested target takes op '{}'", d.op)
                                     : fmt::format("composite '{}' has no requested target", d.op);
      } else {
        d.kind = HostDecision::Kind::Declined;
        d.target = it->second.front().first;
        if (it->second.size() == 1) {
          d.reason = reasonText(it->second.front().second);
        } else {
          for (const auto &[target, reason] : it->second) {
            std::string text = reasonText(reason);
            if (!text.starts_with(target + ":"))
              text = target + ": " + text;
            d.reason += (d.reason.empty() ? "" : "; ") + text;
          }
        }
      }
      ++ctx.stat("ops-left-on-host");
      state_->log.host.push_back(std::move(d));
    }
  }

  /// Run-time control flow stays on the host, with every op of its
  /// functions: plugins are not offered them (docs/design/0013).
  void logControlFlow(const std::string &global, const CallNode &call, passes::PassContext &ctx) {
    const std::string where = fmt::format("{} '{}'", call.op()->name, nodeLabel(call));
    auto log = [&](const CallNode &c, std::string reason) {
      HostDecision d;
      d.function = global;
      d.node = nodeLabel(c);
      d.op = c.op()->name;
      d.kind = HostDecision::Kind::NoTarget;
      d.reason = std::move(reason);
      ++ctx.stat("ops-left-on-host");
      state_->log.host.push_back(std::move(d));
    };
    log(call, "run-time control flow runs on the host");
    for (const Expr &a : call.args())
      if (a->kind() == ExprKind::Function)
        for (const ExprNode *n : postOrder(a))
          if (const auto *c = n->as<CallNode>(); c && c->op() && !c->op()->controlFlow)
            log(*c, fmt::format("inside {}, whose functions run on the host", where));
  }

  static std::string reasonText(const std::string &reason) {
    return reason.empty() ? "declined (no reason given)" : reason;
  }

  PartitionState *state_;
  passes::PassContext &ctx_;
};

const passes::PassInfo kAnnotateTargetInfo{
    "annotate-target",
    "Offer each op to the targets' checkers; wrap claimed calls in Compiler functions",
    "Each op call (and composite call) is offered to the targets' checkers in priority "
    "order; the first that accepts claims it, and the call is wrapped in a one-call local "
    "function `Compiler=\"<plugin>\"` with its constants inside; a target with a whole-graph "
    "hook partitions the function itself, and the core validates the result (only op nodes, "
    "no cycle between regions).",
    {
        {"ops-claimed", "op calls a target claimed"},
        {"composites-claimed", "composite calls a target claimed"},
        {"ops-left-on-host", "op calls no target claimed"},
        {"hook-regions", "regions a whole-graph partition hook formed"},
        {"hook-regions-dropped", "regions of a hook that the core refused"},
    }};

class AnnotateTargetPass : public passes::FunctionPass {
public:
  explicit AnnotateTargetPass(PartitionState *state) : given_(state) {}
  const passes::PassInfo &info() const override { return kAnnotateTargetInfo; }

  Status run(Module &m, passes::PassContext &ctx) override {
    TS_ASSIGN_OR_RETURN(state_, requireState(given_));
    return FunctionPass::run(m, ctx);
  }

  Expected<Function> runOnFunction(const Module &, const std::string &global, const Function &fn,
                                   passes::PassContext &ctx) override {
    if (fn->attrs().has(kCompilerAttr))
      return fn; // already partitioned
    NodeIndex index(fn->body(), /*intoFunctions=*/false);
    TS_ASSIGN_OR_RETURN(Labels labels, annotateLabels(fn, global, index, *state_, ctx));
    if (labels.numRegions() == 0)
      return fn;
    TS_ASSIGN_OR_RETURN(Expr body, outlineRegions(index, labels));
    return makeFunction(fn->params(), body, fn->attrs(), fn->name(), fn->span());
  }

private:
  PartitionState *given_;            // as created (null: no targets)
  PartitionState *state_ = nullptr;  // checked, for the run
};


} // namespace

Expected<Labels> annotateLabels(const Function &fn, const std::string &global,
                                const NodeIndex &index, PartitionState &state,
                                passes::PassContext &ctx) {
  return Annotator(state, ctx).run(fn, global, index);
}

std::unique_ptr<passes::Pass> createAnnotateTargetPass(PartitionState *state) {
  return std::make_unique<AnnotateTargetPass>(state);
}

} // namespace tessera::partition
