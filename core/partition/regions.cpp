//===- partition/regions.cpp - Labels, flattening and outlining -----------===//
//
// The compact form the partition passes decide on (regions.h): labels per
// node, reading them back from the IR (flattenRegions) and writing the
// regions into the IR (outlineRegions).
//
//===----------------------------------------------------------------------===//
#include "partition/regions.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace tessera::partition {

using namespace ir;

const FunctionNode *regionFunctionOf(const ExprNode &node, std::string *target) {
  const auto *call = node.as<CallNode>();
  if (!call || call->calleeKind() != CallNode::CalleeKind::Local)
    return nullptr;
  const FunctionNode *fn = call->localFn();
  if (!fn)
    return nullptr;
  const AttrValue *v = fn->attrs().find(kCompilerAttr);
  if (!v || !std::holds_alternative<std::string>(*v))
    return nullptr;
  if (target)
    *target = std::get<std::string>(*v);
  return fn;
}

namespace {

/// Nodes that are never in a region.
bool isLeaf(ExprKind k) {
  return k == ExprKind::Var || k == ExprKind::Constant || k == ExprKind::Function;
}

bool isCompositeCall(const ExprNode &node) {
  const auto *call = node.as<CallNode>();
  return call && call->localFn() && call->localFn()->attrs().has(kCompositeAttr);
}

/// The body of `fn` with its parameters replaced by `args`, composite calls
/// inside inlined as well (nesting depth is bounded by the parser's cap).
Expected<Expr> inlineComposite(const FunctionNode &fn, std::span<const Expr> args) {
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
          return inlineComposite(*call->localFn(), call->args());
        }
        return rebuilt;
      },
      /*intoFunctions=*/false);
}

} // namespace

Expected<Function> withoutComposites(const Function &fn) {
  std::vector<Expr> params(fn->params().begin(), fn->params().end());
  TS_ASSIGN_OR_RETURN(Expr body, inlineComposite(*fn, params));
  return makeFunction(fn->params(), std::move(body), {}, fn->name(), fn->span());
}

//===- Labels --------------------------------------------------------------===//

void Labels::compact() {
  std::vector<int> renumber(targets.size(), -1);
  std::vector<std::string> kept;
  for (int &r : regionOf) {
    if (r < 0)
      continue;
    int &to = renumber[size_t(r)];
    if (to < 0) {
      to = int(kept.size());
      kept.push_back(targets[size_t(r)]);
    }
    r = to;
  }
  targets = std::move(kept);
}

std::vector<std::vector<int>> Labels::members() const {
  std::vector<std::vector<int>> out(targets.size());
  for (size_t i = 0; i < regionOf.size(); ++i)
    if (regionOf[i] >= 0)
      out[size_t(regionOf[i])].push_back(int(i));
  return out;
}

void absorbProjections(const NodeIndex &index, Labels &labels) {
  for (size_t i = 0; i < index.size(); ++i)
    if (index.kind(i) == ExprKind::TupleGetItem && labels.regionOf[i] < 0)
      if (int r = labels.regionOf[size_t(index.operands(i)[0])]; r >= 0)
        labels.regionOf[i] = r;
}

//===- Flattening ------------------------------------------------------------===//

Expected<Flattened> flattenRegions(const Expr &body) {
  std::unordered_map<const ExprNode *, int> regionOfNode;
  std::unordered_set<const ExprNode *> inlinedTuples; // tuple results of inlined regions
  Flattened out;
  auto flat = rewrite(
      body,
      [&](const Expr &, const Expr &rebuilt) -> Expected<Expr> {
        if (const auto *g = rebuilt->as<TupleGetItemNode>())
          if (inlinedTuples.count(g->tuple().get()))
            return g->tuple()->as<TupleNode>()->fields()[size_t(g->index())];
        std::string target;
        const FunctionNode *fn = regionFunctionOf(*rebuilt, &target);
        if (!fn)
          return rebuilt;
        const auto *call = rebuilt->as<CallNode>();
        if (call->args().size() != fn->params().size())
          return Error::format("region call '{}' passes {} arguments to a function of {} "
                               "parameters",
                               call->name(), call->args().size(), fn->params().size());
        const int r = int(out.labels.targets.size());
        out.labels.targets.push_back(target);
        ++out.regionCalls;
        std::unordered_map<const ExprNode *, Expr> subst;
        for (size_t k = 0; k < fn->params().size(); ++k)
          subst[fn->params()[k].get()] = call->args()[k];
        TS_ASSIGN_OR_RETURN(Expr inner,
                            rewrite(
                                fn->body(),
                                [&](const Expr &orig, const Expr &innerRebuilt) -> Expected<Expr> {
                                  if (auto it = subst.find(orig.get()); it != subst.end())
                                    return it->second;
                                  if (!isLeaf(innerRebuilt->kind()))
                                    regionOfNode.emplace(innerRebuilt.get(), r);
                                  return innerRebuilt;
                                },
                                /*intoFunctions=*/false));
        if (inner->kind() == ExprKind::Tuple && regionOfNode.count(inner.get()))
          inlinedTuples.insert(inner.get());
        return inner;
      },
      /*intoFunctions=*/false);
  if (!flat.ok())
    return flat.error();
  out.index = std::make_unique<NodeIndex>(std::move(flat).value(), /*intoFunctions=*/false);
  const NodeIndex &index = *out.index;
  out.labels.regionOf.assign(index.size(), Labels::kHost);
  for (size_t i = 0; i < index.size(); ++i)
    if (auto it = regionOfNode.find(index.node(i)); it != regionOfNode.end())
      out.labels.regionOf[i] = it->second;
  absorbProjections(index, out.labels);
  out.labels.compact();
  return out;
}

Status relabelFunctions(Module &m, std::string_view pass, const RelabelFn &relabel) {
  auto functions = m.functions();
  for (const auto &[global, fn] : functions) {
    if (fn->attrs().has(kCompilerAttr))
      continue; // an already lifted region
    auto next = [&]() -> Expected<Function> {
      TS_ASSIGN_OR_RETURN(Flattened flat, flattenRegions(fn->body()));
      TS_ASSIGN_OR_RETURN(bool changed, relabel(global, *flat.index, flat.labels, flat.regionCalls));
      if (!changed)
        return fn;
      TS_ASSIGN_OR_RETURN(Expr body, outlineRegions(*flat.index, flat.labels));
      return makeFunction(fn->params(), std::move(body), fn->attrs(), fn->name(), fn->span());
    }();
    if (!next.ok())
      return std::move(next).withContext(fmt::format("{}: in function '@{}'", pass, global)).error();
    if (*next != fn)
      m.set(global, std::move(next).value());
  }
  return okStatus();
}

//===- The contracted graph --------------------------------------------------===//

ContractedGraph::ContractedGraph(const NodeIndex &index, const std::vector<int> &regionOf,
                                 int numRegions)
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

namespace {

/// Finds a cycle among the vertices Kahn's algorithm could not order (each
/// has a predecessor among them) by walking predecessors back; returns the
/// vertices on it.
std::vector<int> findCycle(const ContractedGraph &g, const std::vector<int> &indegree) {
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
    for (int p : g.preds(v))
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

} // namespace

bool ContractedGraph::order(std::vector<int> &out, std::vector<int> &cycleRegions) const {
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
  for (int v : findCycle(*this, indegree))
    if (v < numRegions_)
      cycleRegions.push_back(v);
  std::sort(cycleRegions.begin(), cycleRegions.end());
  return false;
}

//===- Outlining -------------------------------------------------------------===//

RegionBuilder::RegionBuilder(const NodeIndex &index, const Labels &labels)
    : index_(index), labels_(labels), members_(labels.members()),
      outputs_(labels.numRegions()), inputs_(labels.numRegions()), inner_(index.size()),
      innerRegion_(index.size(), -1) {
  for (int r = 0; r < int(labels.numRegions()); ++r)
    inputs_[size_t(r)] = readsFromOutside(r);
  // Results of each region: members used outside it (or the body's result),
  // in post order so that tuple fields follow the graph.
  const size_t n = index.size();
  const std::vector<int> &regionOf = labels.regionOf;
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
  if (n > 0 && regionOf[n - 1] >= 0)
    isOutput[n - 1] = 1;
  for (size_t i = 0; i < n; ++i)
    if (isOutput[i])
      outputs_[size_t(regionOf[i])].push_back(int(i));
}

std::vector<int> RegionBuilder::readsFromOutside(int r) const {
  std::vector<int> out;
  for (int member : members_[size_t(r)])
    for (int x : index_.operands(size_t(member))) {
      const ExprKind kind = index_.kind(size_t(x));
      if (labels_.regionOf[size_t(x)] == r || kind == ExprKind::Constant ||
          kind == ExprKind::Function)
        continue; // inside; constants and composite bodies go inside
      if (std::find(out.begin(), out.end(), x) == out.end())
        out.push_back(x);
    }
  return out;
}

Expected<Function> RegionBuilder::build(int r, const std::function<Expr(size_t)> &outside,
                                        std::vector<Expr> &args) {
  std::vector<Var> params;
  args.clear();
  for (int x : inputs(r)) {
    Var p = makeVar(fmt::format("p{}", params.size()), index_.node(size_t(x))->type());
    params.push_back(p);
    args.push_back(outside(size_t(x)));
    inner_[size_t(x)] = p;
    innerRegion_[size_t(x)] = r;
  }
  for (int member : members_[size_t(r)]) {
    auto pos = index_.operands(size_t(member));
    std::vector<Expr> operands;
    operands.reserve(pos.size());
    for (int x : pos)
      operands.push_back(innerRegion_[size_t(x)] == r ? inner_[size_t(x)] : index_.expr(size_t(x)));
    TS_ASSIGN_OR_RETURN(inner_[size_t(member)],
                        withOperands(index_.expr(size_t(member)), std::move(operands)));
    innerRegion_[size_t(member)] = r;
  }
  const auto &outs = outputs_[size_t(r)];
  Expr result;
  if (outs.size() == 1) {
    result = inner_[size_t(outs[0])];
  } else {
    std::vector<Expr> fields;
    for (int o : outs)
      fields.push_back(inner_[size_t(o)]);
    result = makeTuple(std::move(fields));
  }
  return makeFunction(std::move(params), std::move(result),
                      Attrs{{kCompilerAttr, labels_.targets[size_t(r)]}});
}

namespace {

/// The arguments of a composite call in the order the inlined body reads
/// them first (its post order), which is the order a walk of the inlined
/// graph reaches them.
Expected<std::vector<size_t>> inlinedReadOrder(const CallNode &call) {
  const FunctionNode &fn = *call.localFn();
  std::vector<Expr> self(fn.params().begin(), fn.params().end());
  TS_ASSIGN_OR_RETURN(Expr body, inlineComposite(fn, self));
  std::vector<size_t> order;
  for (const ExprNode *n : postOrder(body, /*intoFunctions=*/false))
    for (size_t k = 0; k < fn.params().size(); ++k)
      if (n == fn.params()[k].get())
        order.push_back(k);
  return order;
}

} // namespace

Expected<std::vector<std::pair<int, std::string>>>
RegionBuilder::liftOrder(RegionLifter &lifter) const {
  // Items: a position (>= 0) or a region r (-r - 1), standing for its call.
  const std::vector<int> &regionOf = labels_.regionOf;
  auto item = [&](int x) { return regionOf[size_t(x)] >= 0 ? -regionOf[size_t(x)] - 1 : x; };
  const size_t n = index_.size();
  std::vector<char> seenPos(n, 0), seenRegion(labels_.numRegions(), 0);
  std::vector<std::pair<int, std::string>> order;
  if (n == 0)
    return order;
  // Depth first: an item's children are pushed when it is first popped, and
  // it is emitted when its second entry (expanded) comes back to the top.
  std::vector<std::pair<int, bool>> stack{{item(int(n - 1)), false}};
  std::vector<int> children;
  while (!stack.empty()) {
    const auto [it, expanded] = stack.back();
    stack.pop_back();
    if (expanded) {
      if (it < 0) {
        const int r = -it - 1;
        order.emplace_back(r, lifter.freshSymbol(labels_.targets[size_t(r)]));
      }
      continue;
    }
    char &seen = it >= 0 ? seenPos[size_t(it)] : seenRegion[size_t(-it - 1)];
    if (seen)
      continue;
    seen = 1;
    stack.emplace_back(it, true);
    children.clear();
    if (it < 0) {
      for (int x : inputs(-it - 1))
        children.push_back(item(x));
    } else if (regionOf[size_t(it)] == Labels::kPruned && isCompositeCall(*index_.node(size_t(it)))) {
      // Inlined when outlined: its arguments are reached in its body's order.
      auto ops = index_.operands(size_t(it));
      TS_ASSIGN_OR_RETURN(std::vector<size_t> reads,
                          inlinedReadOrder(*index_.node(size_t(it))->as<CallNode>()));
      for (size_t k : reads)
        children.push_back(item(ops[k + 1])); // after the callee
    } else if (index_.kind(size_t(it)) != ExprKind::Function) {
      for (int x : index_.operands(size_t(it)))
        children.push_back(item(x));
    }
    for (size_t k = children.size(); k-- > 0;)
      stack.emplace_back(children[k], false);
  }
  return order;
}

Expected<Expr> outlineRegions(const NodeIndex &index, const Labels &labels, RegionLifter *lifter,
                              const std::string &global) {
  const size_t n = index.size();
  const int numRegions = int(labels.numRegions());
  ContractedGraph contracted(index, labels.regionOf, numRegions);
  std::vector<int> order, cycle;
  if (!contracted.order(order, cycle))
    return Error("partition: the regions form a cycle (internal error)");

  // vertexNode: the position of each non-region vertex.
  std::vector<int> vertexNode(contracted.numVertices(), -1);
  for (size_t i = 0; i < n; ++i)
    if (labels.regionOf[i] < 0)
      vertexNode[size_t(contracted.vertex(i))] = int(i);

  RegionBuilder builder(index, labels);
  // With a lifter: each region's symbol, in the order partition-graph would
  // name them (liftOrder); lifted[k] is the k-th region in that order.
  std::vector<std::pair<int, std::string>> lifts;
  std::vector<int> liftOfRegion(size_t(numRegions), -1);
  std::vector<RegionLifter::Lifted> lifted;
  if (lifter) {
    TS_ASSIGN_OR_RETURN(lifts, builder.liftOrder(*lifter));
    for (size_t k = 0; k < lifts.size(); ++k)
      liftOfRegion[size_t(lifts[k].first)] = int(k);
    lifted.resize(lifts.size());
  }
  std::vector<Expr> rebuilt(n); // new value of each node used outside its region
  std::vector<Expr> args;
  for (int v : order) {
    if (v >= numRegions) {
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
      if (labels.regionOf[i] == Labels::kPruned && isCompositeCall(*rebuilt[i])) {
        const auto *call = rebuilt[i]->as<CallNode>();
        TS_ASSIGN_OR_RETURN(rebuilt[i], inlineComposite(*call->localFn(), call->args()));
      }
      continue;
    }
    TS_ASSIGN_OR_RETURN(
        Function fn, builder.build(v, [&](size_t p) { return rebuilt[p]; }, args));
    const auto &outs = builder.outputs(v);
    TS_ASSIGN_OR_RETURN(
        Expr call,
        makeLocalCall(fn, std::move(args),
                      outs.size() == 1 ? index.node(size_t(outs[0]))->name() : std::string()));
    if (lifter) {
      const size_t k = size_t(liftOfRegion[size_t(v)]);
      const auto *c = call->as<CallNode>();
      TS_ASSIGN_OR_RETURN(call, lifter->lift(*c, *fn, global, lifts[k].second, lifted[k]));
      lifter->notePlacement(global, builder.members(v), lifted[k]);
    }
    if (outs.size() == 1) {
      rebuilt[size_t(outs[0])] = call;
    } else {
      for (size_t k = 0; k < outs.size(); ++k) {
        TS_ASSIGN_OR_RETURN(rebuilt[size_t(outs[k])],
                            makeTupleGetItem(call, int(k), index.node(size_t(outs[k]))->name()));
      }
    }
  }
  for (RegionLifter::Lifted &l : lifted) // in the order partition-graph adds them
    lifter->add(std::move(l));
  return rebuilt[n - 1];
}

} // namespace tessera::partition
