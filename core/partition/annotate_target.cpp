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
template <typename Preds>
std::vector<int> findCycle(const Preds &preds, const std::vector<int> &indegree) {
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
    for (int p : preds(v))
      if (indegree[size_t(p)] > 0) {
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
/// one vertex per region; vertex r < numRegions is region r. Nodes are
/// named by their position in `index`; `regionOf` gives each position's
/// region or -1. Adjacency is kept in CSR arrays.
class ContractedGraph {
public:
  ContractedGraph(const NodeIndex &index, const std::vector<int> &regionOf, int numRegions)
      : numRegions_(numRegions) {
    const size_t n = index.size();
    int next = numRegions;
    vertexOf_.resize(n);
    for (size_t i = 0; i < n; ++i)
      vertexOf_[i] = regionOf[i] >= 0 ? regionOf[i] : next++;
    // Edges in node order, then both directions as CSR (the order of each
    // vertex's list is the order its edges were met).
    std::vector<std::pair<int, int>> edges; // (from, to)
    edges.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      if (index.kind(i) == ExprKind::Function)
        continue; // a leaf: its body is another scope
      int v = vertexOf_[i];
      for (int x : index.operands(i)) {
        int u = vertexOf_[size_t(x)];
        if (u != v)
          edges.emplace_back(u, v);
      }
    }
    const size_t vertices = size_t(next);
    predStart_.assign(vertices + 1, 0);
    succStart_.assign(vertices + 1, 0);
    for (const auto &[u, v] : edges) {
      ++predStart_[size_t(v) + 1];
      ++succStart_[size_t(u) + 1];
    }
    for (size_t v = 0; v < vertices; ++v) {
      predStart_[v + 1] += predStart_[v];
      succStart_[v + 1] += succStart_[v];
    }
    preds_.resize(edges.size());
    succs_.resize(edges.size());
    std::vector<int> pf(predStart_.begin(), predStart_.end() - 1);
    std::vector<int> sf(succStart_.begin(), succStart_.end() - 1);
    for (const auto &[u, v] : edges) {
      preds_[size_t(pf[size_t(v)]++)] = u;
      succs_[size_t(sf[size_t(u)]++)] = v;
    }
  }

  int vertex(size_t position) const { return vertexOf_[position]; }
  size_t numVertices() const { return predStart_.size() - 1; }

  std::span<const int> preds(int v) const {
    return std::span<const int>(preds_).subspan(
        size_t(predStart_[size_t(v)]), size_t(predStart_[size_t(v) + 1] - predStart_[size_t(v)]));
  }
  std::span<const int> succs(int v) const {
    return std::span<const int>(succs_).subspan(
        size_t(succStart_[size_t(v)]), size_t(succStart_[size_t(v) + 1] - succStart_[size_t(v)]));
  }

  /// A topological order of the vertices (Kahn's algorithm, FIFO), or the
  /// regions on a cycle.
  bool order(std::vector<int> &out, std::vector<int> &cycleRegions) const {
    const size_t vertices = numVertices();
    std::vector<int> indegree(vertices);
    for (size_t v = 0; v < vertices; ++v)
      indegree[v] = predStart_[v + 1] - predStart_[v];
    out.reserve(vertices);
    size_t head = out.size(); // `out` doubles as the FIFO queue
    for (size_t v = 0; v < vertices; ++v)
      if (indegree[v] == 0)
        out.push_back(int(v));
    while (head < out.size()) {
      int v = out[head++];
      for (int s : succs(v))
        if (--indegree[size_t(s)] == 0)
          out.push_back(s);
    }
    if (out.size() == vertices)
      return true;
    for (int v : findCycle([&](int x) { return preds(x); }, indegree))
      if (v < numRegions_)
        cycleRegions.push_back(v);
    std::sort(cycleRegions.begin(), cycleRegions.end());
    return false;
  }

private:
  int numRegions_;
  std::vector<int> vertexOf_;
  std::vector<int> predStart_, succStart_, preds_, succs_;
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
    NodeIndex index(fn->body(), /*intoFunctions=*/false);
    const size_t n = index.size();
    std::vector<Region> regions;
    std::vector<int> regionOf(n, -1);
    std::unordered_map<size_t, std::vector<std::pair<std::string, std::string>>> declines;

    for (const Target &t : state_->targets) {
      if (t.plugin->hasPartitionHook()) {
        TS_RETURN_IF_ERROR(askHook(t, fn, index, regions, regionOf, ctx));
        continue;
      }
      // Whether the target lists an op, asked once per op.
      std::unordered_map<const void *, bool> listed;
      const auto &ops = t.plugin->ops();
      const std::string prefix = t.name + ".";
      for (size_t i = 0; i < n; ++i) {
        const auto *call = index.node(i)->as<CallNode>();
        if (!call || regionOf[i] >= 0)
          continue;
        bool claim = false;
        if (call->calleeKind() == CallNode::CalleeKind::Op) {
          auto [it, fresh] = listed.emplace(call->op(), false);
          if (fresh)
            it->second = std::find(ops.begin(), ops.end(), call->op()->name) != ops.end();
          if (!it->second)
            continue;
          TS_ASSIGN_OR_RETURN(auto desc, OpDescHolder::fromCall(*call));
          plugin::CheckResult verdict = t.plugin->checkOp(desc->desc());
          if (!verdict.supported)
            declines[i].emplace_back(t.name, verdict.reason);
          claim = verdict.supported;
        } else {
          std::string composite = compositeOf(*call);
          claim = !composite.empty() && composite.starts_with(prefix);
        }
        if (claim) {
          regionOf[i] = int(regions.size());
          regions.push_back(Region{&t, {int(i)}});
          ++ctx.stat(call->calleeKind() == CallNode::CalleeKind::Op ? "ops-claimed"
                                                                    : "composites-claimed");
        }
      }
    }

    logHostDecisions(global, index, regionOf, declines, ctx);
    if (regions.empty())
      return fn;
    absorbTupleGetItems(index, regions, regionOf);
    TS_ASSIGN_OR_RETURN(Expr body, outlineRegions(index, regions, regionOf));
    return makeFunction(fn->params(), body, fn->attrs(), fn->name(), fn->span());
  }

private:
  /// Runs a target's whole-graph hook on `fn` and adds its valid regions.
  Status askHook(const Target &t, const Function &fn, const NodeIndex &index,
                 std::vector<Region> &regions, std::vector<int> &regionOf,
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
        return p >= 0 && regionOf[size_t(p)] >= 0;
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

  /// Records why each unclaimed op call stays on the host.
  void logHostDecisions(
      const std::string &global, const NodeIndex &index, const std::vector<int> &regionOf,
      const std::unordered_map<size_t, std::vector<std::pair<std::string, std::string>>> &declines,
      passes::PassContext &ctx) {
    for (size_t i = 0; i < index.size(); ++i) {
      const auto *call = index.node(i)->as<CallNode>();
      if (!call || regionOf[i] >= 0)
        continue;
      std::string composite = compositeOf(*call);
      if (call->calleeKind() != CallNode::CalleeKind::Op && composite.empty())
        continue; // calls of @globals and plain local functions
      HostDecision d;
      d.function = global;
      d.node = nodeLabel(*call);
      d.op = composite.empty() ? call->op()->name : composite;
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

  static std::string reasonText(const std::string &reason) {
    return reason.empty() ? "declined (no reason given)" : reason;
  }

  /// A TupleGetItem of a region's call used inside that region joins it.
  static void absorbTupleGetItems(const NodeIndex &index, std::vector<Region> &regions,
                                  std::vector<int> &regionOf) {
    bool joined = false;
    for (size_t i = 0; i < index.size(); ++i) {
      const int r = regionOf[i];
      if (r < 0 || index.kind(i) == ExprKind::Function)
        continue;
      for (int x : index.operands(i)) {
        const size_t px = size_t(x);
        if (index.kind(px) != ExprKind::TupleGetItem || regionOf[px] >= 0)
          continue;
        const int pt = index.operands(px)[0]; // the tuple
        if (regionOf[size_t(pt)] == r) {
          regionOf[px] = r;
          joined = true;
        }
      }
    }
    if (!joined)
      return;
    // Keep members in post-order.
    for (Region &region : regions)
      region.members.clear();
    for (size_t i = 0; i < index.size(); ++i)
      if (regionOf[i] >= 0)
        regions[size_t(regionOf[i])].members.push_back(int(i));
  }

  /// Rebuilds the body with each region replaced by a call of a local
  /// Compiler function, in a topological order of the contracted graph.
  static Expected<Expr> outlineRegions(const NodeIndex &index, const std::vector<Region> &regions,
                                       const std::vector<int> &regionOf) {
    const size_t n = index.size();
    ContractedGraph contracted(index, regionOf, int(regions.size()));
    std::vector<int> order, cycle;
    if (!contracted.order(order, cycle))
      return Error("annotate-target: the claimed regions form a cycle (internal error)");

    // Results of each region: members used outside it (or the body's
    // result), in post-order so that tuple fields follow the graph.
    std::vector<char> isOutput(n, 0);
    for (size_t i = 0; i < n; ++i) {
      if (index.kind(i) == ExprKind::Function)
        continue;
      for (int x : index.operands(i)) {
        const size_t px = size_t(x);
        if (regionOf[px] >= 0 && regionOf[i] != regionOf[px])
          isOutput[px] = 1;
      }
    }
    if (regionOf[n - 1] >= 0)
      isOutput[n - 1] = 1;
    std::vector<std::vector<int>> outputs(regions.size());
    for (size_t i = 0; i < n; ++i)
      if (isOutput[i])
        outputs[size_t(regionOf[i])].push_back(int(i));

    // vertexNode: the position of each non-region vertex.
    std::vector<int> vertexNode(contracted.numVertices(), -1);
    for (size_t i = 0; i < n; ++i)
      if (regionOf[i] < 0)
        vertexNode[size_t(contracted.vertex(i))] = int(i);

    std::vector<Expr> rebuilt(n);        // new value of each node used outside its region
    std::vector<Expr> inner(n);          // inside the region being built: members and parameters
    std::vector<int> innerRegion(n, -1); // which region `inner` was set for
    for (int v : order) {
      if (size_t(v) >= regions.size()) {
        const size_t i = size_t(vertexNode[size_t(v)]);
        const Expr &node = index.expr(i);
        auto pos = index.operands(i);
        if (pos.empty() || index.kind(i) == ExprKind::Function) {
          rebuilt[i] = node;
          continue;
        }
        std::vector<Expr> operands;
        operands.reserve(pos.size());
        for (int x : pos)
          operands.push_back(rebuilt[size_t(x)]);
        TS_ASSIGN_OR_RETURN(rebuilt[i], withOperands(node, std::move(operands)));
        continue;
      }
      const Region &region = regions[size_t(v)];
      std::vector<Var> params;
      std::vector<Expr> args;
      for (int member : region.members) {
        const Expr &m = index.expr(size_t(member));
        auto pos = index.operands(size_t(member));
        std::vector<Expr> operands;
        operands.reserve(pos.size());
        for (int x : pos) {
          const size_t px = size_t(x);
          const ExprKind kind = index.kind(px);
          if (innerRegion[px] == v) {
            operands.push_back(inner[px]);
          } else if (kind == ExprKind::Constant || kind == ExprKind::Function) {
            operands.push_back(index.expr(px)); // constants and composite bodies go inside
          } else {
            Var p = makeVar(fmt::format("p{}", params.size()), index.node(px)->type());
            params.push_back(p);
            args.push_back(rebuilt[px]);
            inner[px] = p;
            innerRegion[px] = v;
            operands.push_back(p);
          }
        }
        TS_ASSIGN_OR_RETURN(inner[size_t(member)], withOperands(m, std::move(operands)));
        innerRegion[size_t(member)] = v;
      }
      const auto &outs = outputs[size_t(v)];
      Expr result;
      if (outs.size() == 1) {
        result = inner[size_t(outs[0])];
      } else {
        std::vector<Expr> fields;
        for (int o : outs)
          fields.push_back(inner[size_t(o)]);
        result = makeTuple(std::move(fields));
      }
      Function fn =
          makeFunction(params, result, Attrs{{kCompilerAttr, std::string(region.target->name)}});
      TS_ASSIGN_OR_RETURN(
          Expr call,
          makeLocalCall(fn, std::move(args),
                        outs.size() == 1 ? index.node(size_t(outs[0]))->name() : std::string()));
      if (outs.size() == 1) {
        rebuilt[size_t(outs[0])] = call;
      } else {
        for (size_t k = 0; k < outs.size(); ++k) {
          TS_ASSIGN_OR_RETURN(rebuilt[size_t(outs[k])],
                              makeTupleGetItem(call, int(k), index.node(size_t(outs[k]))->name()));
        }
      }
    }
    return rebuilt[n - 1];
  }

  PartitionState *state_ = nullptr;
};

} // namespace

std::unique_ptr<passes::Pass> createAnnotateTargetPass() {
  return std::make_unique<AnnotateTargetPass>();
}

} // namespace tessera::partition
