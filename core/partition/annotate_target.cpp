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
// constants and composite functions it reads go inside. Tuple-returning ops
// are wrapped whole; a TupleGetItem of a claimed call used inside the same
// region goes inside. A region with several results used outside returns a
// tuple, read back with TupleGetItem.
//
// Op calls nobody claims stay as they are and get a HostDecision in the
// partition log: NoTarget (no requested target lists the op) or Declined
// (the declining targets and their reasons). Tuple, TupleGetItem, variables
// and constants are never offered.
//
// Preconditions: a PartitionState (--target); run after merge-composite.
//
//===----------------------------------------------------------------------===//
#include "partition/partition.h"

#include "ir/visit.h"
#include "partition/plugin_bridge.h"
#include "plugin/registry.h"

#include <algorithm>
#include <deque>
#include <map>
#include <unordered_map>
#include <unordered_set>

namespace tessera::partition {

using namespace ir;

namespace {

/// A region being formed: its target and its calls in post-order.
struct Region {
  const Target *target = nullptr;
  std::vector<const ExprNode *> members;
};

/// The composite name of a call of a Composite function, or "".
std::string compositeOf(const CallNode &call) {
  if (call.calleeKind() != CallNode::CalleeKind::Local)
    return {};
  const AttrValue *v = call.localFn()->attrs().find(kCompositeAttr);
  const std::string *s = v ? std::get_if<std::string>(v) : nullptr;
  return s ? *s : std::string();
}

/// How a call is named in the log and in messages.
std::string nodeLabel(const CallNode &call) {
  if (!call.name().empty())
    return call.name();
  std::string composite = compositeOf(call);
  return composite.empty() ? call.calleeName() : composite;
}

/// Finds a cycle in a graph whose vertices `left` Kahn's algorithm could not
/// order (each has a predecessor among them) by walking predecessors back;
/// returns the vertices on it.
std::vector<int> findCycle(const std::vector<std::vector<int>> &preds,
                           const std::vector<int> &indegree) {
  int start = -1;
  for (size_t v = 0; v < indegree.size() && start < 0; ++v)
    if (indegree[v] > 0)
      start = int(v);
  std::unordered_map<int, size_t> seenAt;
  std::vector<int> path;
  int v = start;
  while (v >= 0 && !seenAt.count(v)) {
    seenAt[v] = path.size();
    path.push_back(v);
    int next = -1;
    for (int p : preds[v])
      if (indegree[p] > 0) {
        next = p;
        break;
      }
    v = next;
  }
  if (v < 0)
    return {};
  return std::vector<int>(path.begin() + long(seenAt[v]), path.end());
}

/// The function's nodes as a graph whose region members are contracted into
/// one vertex per region; vertex r < numRegions is region r.
class ContractedGraph {
public:
  ContractedGraph(const std::vector<Expr> &nodes,
                  const std::unordered_map<const ExprNode *, int> &regionOf, int numRegions)
      : numRegions_(numRegions) {
    int next = numRegions;
    for (const Expr &n : nodes) {
      auto r = regionOf.find(n.get());
      vertexOf_[n.get()] = r != regionOf.end() ? r->second : next++;
    }
    preds_.resize(size_t(next));
    succs_.resize(size_t(next));
    for (const Expr &n : nodes) {
      if (n->kind() == ExprKind::Function)
        continue; // a leaf: its body is another scope
      int v = vertexOf_[n.get()];
      for (const Expr &x : n->operands()) {
        int u = vertexOf_.at(x.get());
        if (u == v)
          continue;
        preds_[size_t(v)].push_back(u);
        succs_[size_t(u)].push_back(v);
      }
    }
  }

  int vertex(const ExprNode *n) const { return vertexOf_.at(n); }

  /// A topological order of the vertices, or the regions on a cycle.
  bool order(std::vector<int> &out, std::vector<int> &cycleRegions) const {
    std::vector<int> indegree(preds_.size());
    for (size_t v = 0; v < preds_.size(); ++v)
      indegree[v] = int(preds_[v].size());
    std::deque<int> ready;
    for (size_t v = 0; v < preds_.size(); ++v)
      if (indegree[v] == 0)
        ready.push_back(int(v));
    while (!ready.empty()) {
      int v = ready.front();
      ready.pop_front();
      out.push_back(v);
      for (int s : succs_[size_t(v)])
        if (--indegree[size_t(s)] == 0)
          ready.push_back(s);
    }
    if (out.size() == preds_.size())
      return true;
    for (int v : findCycle(preds_, indegree))
      if (v < numRegions_)
        cycleRegions.push_back(v);
    std::sort(cycleRegions.begin(), cycleRegions.end());
    return false;
  }

private:
  int numRegions_;
  std::unordered_map<const ExprNode *, int> vertexOf_;
  std::vector<std::vector<int>> preds_, succs_;
};

class AnnotateTargetPass : public passes::FunctionPass {
public:
  std::string_view name() const override { return "annotate-target"; }
  std::string_view description() const override {
    return "Offer each op to the targets' checkers; wrap claimed calls in Compiler functions";
  }

  Status run(Module &m, passes::PassContext &ctx) override {
    TS_ASSIGN_OR_RETURN(state_, requireState(ctx, name()));
    return FunctionPass::run(m, ctx);
  }

  Expected<Function> runOnFunction(const Module &, const std::string &global, const Function &fn,
                                   passes::PassContext &ctx) override {
    if (fn->attrs().has(kCompilerAttr))
      return fn; // already partitioned
    std::vector<Expr> nodes = postOrderExprs(fn->body(), /*intoFunctions=*/false);
    std::vector<Region> regions;
    std::unordered_map<const ExprNode *, int> regionOf;
    std::unordered_map<const ExprNode *, std::vector<std::pair<std::string, std::string>>> declines;

    for (const Target &t : state_->targets) {
      if (t.plugin->hasPartitionHook()) {
        TS_RETURN_IF_ERROR(askHook(t, global, fn, regions, regionOf, ctx));
        continue;
      }
      for (const Expr &node : nodes) {
        const auto *call = node->as<CallNode>();
        if (!call || regionOf.count(node.get()))
          continue;
        bool claim = false;
        if (call->calleeKind() == CallNode::CalleeKind::Op) {
          const auto &ops = t.plugin->ops();
          if (std::find(ops.begin(), ops.end(), call->op()->name) == ops.end())
            continue;
          TS_ASSIGN_OR_RETURN(auto desc, OpDescHolder::fromCall(*call));
          plugin::CheckResult verdict = t.plugin->checkOp(desc->desc());
          if (!verdict.supported)
            declines[node.get()].emplace_back(t.name, verdict.reason);
          claim = verdict.supported;
        } else {
          std::string composite = compositeOf(*call);
          claim = !composite.empty() && composite.starts_with(t.name + ".");
        }
        if (claim) {
          regionOf[node.get()] = int(regions.size());
          regions.push_back(Region{&t, {node.get()}});
          ++ctx.stat(call->calleeKind() == CallNode::CalleeKind::Op ? "ops-claimed"
                                                                    : "composites-claimed");
        }
      }
    }

    logHostDecisions(global, nodes, regionOf, declines, ctx);
    if (regions.empty())
      return fn;
    absorbTupleGetItems(nodes, regions, regionOf);
    TS_ASSIGN_OR_RETURN(Expr body, outlineRegions(fn->body(), nodes, regions, regionOf));
    return makeFunction(fn->params(), body, fn->attrs(), fn->name(), fn->span());
  }

private:
  /// Runs a target's whole-graph hook on `fn` and adds its valid regions.
  Status askHook(const Target &t, const std::string &global, const Function &fn,
                 std::vector<Region> &regions, std::unordered_map<const ExprNode *, int> &regionOf,
                 passes::PassContext &ctx) {
    TS_ASSIGN_OR_RETURN(auto graph, GraphHolder::fromFunction(fn, "", t.plugin->codegenFlags()));
    TS_ASSIGN_OR_RETURN(std::vector<int64_t> assigned,
                        t.plugin->partition(graph->graph(), graph->numNodes()));
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
    std::vector<Expr> nodes = postOrderExprs(fn->body(), /*intoFunctions=*/false);
    std::unordered_map<const ExprNode *, int> hookRegion;
    std::vector<int64_t> ids;
    for (const auto &[id, members] : byRegion) {
      for (size_t i : members)
        hookRegion[jsonNodes[i].get()] = int(ids.size());
      ids.push_back(id);
    }
    ContractedGraph contracted(nodes, hookRegion, int(ids.size()));
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
    for (const auto &[id, members] : byRegion) {
      bool free = std::none_of(members.begin(), members.end(),
                               [&](size_t i) { return regionOf.count(jsonNodes[i].get()) > 0; });
      if (!free) {
        ++ctx.stat("hook-regions-dropped");
        continue;
      }
      Region region{&t, {}};
      for (const Expr &n : nodes) // post-order
        if (hookRegion.count(n.get()) && ids[size_t(hookRegion[n.get()])] == id)
          region.members.push_back(n.get());
      for (const ExprNode *n : region.members)
        regionOf[n] = int(regions.size());
      regions.push_back(std::move(region));
      ++ctx.stat("hook-regions");
    }
    return okStatus();
  }

  /// Records why each unclaimed op call stays on the host.
  void logHostDecisions(
      const std::string &global, const std::vector<Expr> &nodes,
      const std::unordered_map<const ExprNode *, int> &regionOf,
      const std::unordered_map<const ExprNode *, std::vector<std::pair<std::string, std::string>>>
          &declines,
      passes::PassContext &ctx) {
    for (const Expr &node : nodes) {
      const auto *call = node->as<CallNode>();
      if (!call || regionOf.count(node.get()))
        continue;
      std::string composite = compositeOf(*call);
      if (call->calleeKind() != CallNode::CalleeKind::Op && composite.empty())
        continue; // calls of @globals and plain local functions
      HostDecision d;
      d.function = global;
      d.node = nodeLabel(*call);
      d.op = composite.empty() ? call->op()->name : composite;
      auto it = declines.find(node.get());
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

  static std::string reasonText(const std::string &reason) {
    return reason.empty() ? "declined (no reason given)" : reason;
  }

  /// A TupleGetItem of a region's call used inside that region joins it.
  static void absorbTupleGetItems(const std::vector<Expr> &nodes, std::vector<Region> &regions,
                                  std::unordered_map<const ExprNode *, int> &regionOf) {
    std::vector<std::pair<const ExprNode *, int>> joins;
    for (const Expr &n : nodes) {
      auto r = regionOf.find(n.get());
      if (r == regionOf.end() || n->kind() == ExprKind::Function)
        continue;
      for (const Expr &x : n->operands()) {
        const auto *get = x->as<TupleGetItemNode>();
        if (!get || regionOf.count(x.get()))
          continue;
        auto t = regionOf.find(get->tuple().get());
        if (t != regionOf.end() && t->second == r->second) {
          regionOf[x.get()] = r->second;
          joins.emplace_back(x.get(), r->second);
        }
      }
    }
    if (joins.empty())
      return;
    // Keep members in post-order.
    for (Region &region : regions)
      region.members.clear();
    for (const Expr &n : nodes) {
      auto r = regionOf.find(n.get());
      if (r != regionOf.end())
        regions[size_t(r->second)].members.push_back(n.get());
    }
  }

  /// Rebuilds `body` with each region replaced by a call of a local
  /// Compiler function, in a topological order of the contracted graph.
  static Expected<Expr> outlineRegions(const Expr &body, const std::vector<Expr> &nodes,
                                       const std::vector<Region> &regions,
                                       const std::unordered_map<const ExprNode *, int> &regionOf) {
    ContractedGraph contracted(nodes, regionOf, int(regions.size()));
    std::vector<int> order, cycle;
    if (!contracted.order(order, cycle))
      return Error("annotate-target: the claimed regions form a cycle (internal error)");

    std::unordered_map<const ExprNode *, Expr> owning; // raw -> shared
    for (const Expr &n : nodes)
      owning[n.get()] = n;
    // Results of each region: members used outside it (or the body's result).
    std::vector<std::vector<const ExprNode *>> outputs(regions.size());
    std::unordered_set<const ExprNode *> isOutput;
    auto markOutput = [&](const ExprNode *x) {
      auto r = regionOf.find(x);
      if (r != regionOf.end() && isOutput.insert(x).second)
        outputs[size_t(r->second)].push_back(x);
    };
    for (const Expr &n : nodes) {
      if (n->kind() == ExprKind::Function)
        continue;
      auto rn = regionOf.find(n.get());
      for (const Expr &x : n->operands()) {
        auto rx = regionOf.find(x.get());
        if (rx != regionOf.end() && (rn == regionOf.end() || rn->second != rx->second))
          markOutput(x.get());
      }
    }
    markOutput(body.get());
    // Outputs in post-order, so that tuple fields follow the graph.
    std::unordered_map<const ExprNode *, size_t> position;
    for (size_t i = 0; i < nodes.size(); ++i)
      position[nodes[i].get()] = i;
    for (auto &outs : outputs)
      std::sort(outs.begin(), outs.end(),
                [&](const ExprNode *a, const ExprNode *b) { return position[a] < position[b]; });

    std::unordered_map<const ExprNode *, Expr> rebuilt;
    std::vector<const ExprNode *> vertexNode(nodes.size() + regions.size(), nullptr);
    for (const Expr &n : nodes)
      if (!regionOf.count(n.get()))
        vertexNode[size_t(contracted.vertex(n.get()))] = n.get();

    for (int v : order) {
      if (size_t(v) >= regions.size()) {
        const Expr &n = owning[vertexNode[size_t(v)]];
        if (n->operands().empty() || n->kind() == ExprKind::Function) {
          rebuilt[n.get()] = n;
          continue;
        }
        std::vector<Expr> operands;
        for (const Expr &x : n->operands())
          operands.push_back(rebuilt.at(x.get()));
        TS_ASSIGN_OR_RETURN(rebuilt[n.get()], withOperands(n, std::move(operands)));
        continue;
      }
      const Region &region = regions[size_t(v)];
      std::unordered_map<const ExprNode *, Expr> inner;
      std::vector<Var> params;
      std::vector<Expr> args;
      for (const ExprNode *member : region.members) {
        const Expr &m = owning[member];
        std::vector<Expr> operands;
        for (const Expr &x : m->operands()) {
          auto in = inner.find(x.get());
          if (in != inner.end()) {
            operands.push_back(in->second);
          } else if (x->kind() == ExprKind::Constant || x->kind() == ExprKind::Function) {
            operands.push_back(x); // constants and composite bodies go inside
          } else {
            Var p = makeVar(fmt::format("p{}", params.size()), x->type());
            params.push_back(p);
            args.push_back(rebuilt.at(x.get()));
            inner[x.get()] = p;
            operands.push_back(p);
          }
        }
        TS_ASSIGN_OR_RETURN(inner[member], withOperands(m, std::move(operands)));
      }
      const auto &outs = outputs[size_t(v)];
      Expr result;
      if (outs.size() == 1) {
        result = inner.at(outs[0]);
      } else {
        std::vector<Expr> fields;
        for (const ExprNode *o : outs)
          fields.push_back(inner.at(o));
        result = makeTuple(std::move(fields));
      }
      Function fn =
          makeFunction(params, result, Attrs{{kCompilerAttr, std::string(region.target->name)}});
      TS_ASSIGN_OR_RETURN(
          Expr call,
          makeLocalCall(fn, std::move(args), outs.size() == 1 ? outs[0]->name() : std::string()));
      if (outs.size() == 1) {
        rebuilt[outs[0]] = call;
      } else {
        for (size_t i = 0; i < outs.size(); ++i) {
          TS_ASSIGN_OR_RETURN(rebuilt[outs[i]], makeTupleGetItem(call, int(i), outs[i]->name()));
        }
      }
    }
    return rebuilt.at(body.get());
  }

  PartitionState *state_ = nullptr;
};

} // namespace

std::unique_ptr<passes::Pass> createAnnotateTargetPass() {
  return std::make_unique<AnnotateTargetPass>();
}

} // namespace tessera::partition
