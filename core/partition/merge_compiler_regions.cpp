//===- partition/merge_compiler_regions.cpp - Merge same-target regions ---===//
//
// The merge-compiler-regions pass: region calls (calls of local functions
// with attribute Compiler="<t>", as annotate-target makes them) of the same
// target are merged into as few region functions as possible, never creating
// a cycle between regions. Works on the IR alone (no targets needed).
//
// Preconditions: region calls sit in the top-level body of global functions.
// Composite calls inside regions stay calls of their composite functions.
//
// Algorithm (linear). Contracting runs of consecutive nodes of ONE
// topological order can never create a cycle: every edge between two runs
// still points forward in that order. So the pass schedules the nodes in a
// topological order chosen to keep same-target region calls together, and
// each maximal run of same-target region calls becomes one region:
//   - ready leaves (variables, constants, function literals) and projections
//     of a region call's tuple (which stay with their call) are placed at
//     once and break no run;
//   - otherwise a ready region call of the current run's target continues
//     the run;
//   - otherwise every ready host node is placed (this ends the run, and may
//     make more region calls ready), and then a new run starts with the
//     target that has the most ready calls.
// (A first version merged a call into any neighbouring group it had no
// outside path from; a property test on random DAGs found that two groups
// that are each convex can still reach each other, so that design was
// replaced by this one, which is correct by construction.)
// A region the schedule could not extend (its neighbour was not ready yet)
// may merge in a later round, so mergeRegions repeats the pass until nothing
// changes (at most kMaxRounds times). Then the groups with several region
// calls are rebuilt: Kahn's algorithm on the graph with each such group
// contracted to one node (acyclic, since groups are runs of one topological
// order) orders the construction; a group becomes one function whose
// parameters are the values it reads from outside (deduplicated; constants
// stay inside) and whose result is the one value used outside, or a tuple of
// them read with TupleGetItem.
//
//===----------------------------------------------------------------------===//
#include "partition/partition.h"
#include "partition/regions.h"

#include "ir/visit.h"

#include <algorithm>
#include <deque>
#include <numeric>
#include <unordered_map>

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

/// Merge rounds per function at most (see mergeRegions).
constexpr int kMaxRounds = 4;

/// Merges the regions of one global function.
class RegionMerger {
public:
  explicit RegionMerger(const Function &fn)
      : fn_(fn), index_(fn->body(), /*intoFunctions=*/false) {}

  /// The rewritten function (fn itself when nothing merged).
  Expected<Function> run(MergeCounts &counts) {
    const int n = int(index_.size());
    buildPreds();
    group_.assign(size_t(n), -1);
    schedule();
    int64_t calls = 0, groups = 0;
    for (int i = 0; i < n; ++i)
      calls += isCall_[size_t(i)];
    groups = int64_t(gTarget_.size());
    counts.regionsBefore += calls;
    counts.regionsAfter += groups;
    if (groups == calls)
      return fn_;
    return rebuild();
  }

private:
  //===- Graph ------------------------------------------------------------===//

  /// Operand indices of each node (CSR); a region call's callee is skipped.
  void buildPreds() {
    const size_t n = index_.size();
    predStart_.assign(n + 1, 0);
    isCall_.assign(n, 0);
    target_.assign(n, -1);
    preds_.reserve(n + n / 2);
    std::string t;
    for (size_t i = 0; i < n; ++i) {
      if (index_.kind(i) == ExprKind::Call && regionFunctionOf(*index_.node(i), &t)) {
        isCall_[i] = 1;
        auto [it, fresh] = targetIds_.emplace(t, int(targetIds_.size()));
        target_[i] = it->second;
      }
      // A Function is a leaf here (its body is its own scope; the index
      // does not enter it); a region call's first operand is its callee.
      auto ops = index_.operands(i);
      if (isCall_[i])
        ops = ops.subspan(1);
      for (int p : ops)
        if (index_.kind(size_t(p)) != ExprKind::Function) // a leaf callee, never rewritten
          preds_.push_back(p);
      predStart_[i + 1] = preds_.size();
    }
  }

  std::span<const int> preds(int i) const {
    return std::span<const int>(preds_).subspan(predStart_[size_t(i)],
                                                predStart_[size_t(i) + 1] - predStart_[size_t(i)]);
  }

  //===- Groups ------------------------------------------------------------===//

  int newGroup(int target) {
    int g = int(gTarget_.size());
    gTarget_.push_back(target);
    gCalls_.push_back(0);
    return g;
  }

  /// The group of node i, or -1 (host nodes, leaves).
  int ownRoot(int i) const { return group_[size_t(i)]; }

  //===- The schedule ------------------------------------------------------===//

  /// How a node takes part in the schedule.
  enum Kind : int { kLeaf = -1, kHost = -2, kProjection = -3 };

  int kindOf(int i) const {
    const ExprNode &node = *index_.node(size_t(i));
    if (isCall_[size_t(i)])
      return target_[size_t(i)];
    switch (node.kind()) {
    case ExprKind::Var:
    case ExprKind::Constant:
    case ExprKind::Function: return kLeaf;
    case ExprKind::TupleGetItem: {
      int t = index_.operands(size_t(i))[0];
      return isCall_[size_t(t)] ? kProjection : kHost;
    }
    default: return kHost;
    }
  }

  /// Places every node (see the banner) and forms the groups.
  void schedule() {
    const int n = int(index_.size());
    // Users of each node (CSR) and the number of unplaced operands.
    std::vector<int> indeg(static_cast<size_t>(n), 0), userStart(static_cast<size_t>(n) + 1, 0),
        users;
    for (int i = 0; i < n; ++i)
      for (int p : preds(i)) {
        ++indeg[size_t(i)];
        ++userStart[size_t(p) + 1];
      }
    for (int i = 0; i < n; ++i)
      userStart[size_t(i) + 1] += userStart[size_t(i)];
    users.resize(size_t(userStart[size_t(n)]));
    std::vector<int> fill(userStart.begin(), userStart.end() - 1);
    for (int i = 0; i < n; ++i)
      for (int p : preds(i))
        users[size_t(fill[size_t(p)]++)] = i;

    std::vector<int> kind(static_cast<size_t>(n));
    std::deque<int> immediate, host;
    std::vector<std::deque<int>> calls(targetIds_.size());
    auto makeReady = [&](int i) {
      const int k = kind[size_t(i)];
      if (k == kLeaf || k == kProjection)
        immediate.push_back(i);
      else if (k == kHost)
        host.push_back(i);
      else
        calls[size_t(k)].push_back(i);
    };
    for (int i = 0; i < n; ++i) {
      kind[size_t(i)] = kindOf(i);
      if (indeg[size_t(i)] == 0)
        makeReady(i);
    }

    int runTarget = -1, runGroup = -1;
    auto place = [&](int i) {
      const int k = kind[size_t(i)];
      if (k >= 0) {
        if (k != runTarget) {
          runTarget = k;
          runGroup = newGroup(k);
        }
        group_[size_t(i)] = runGroup;
        gCalls_[size_t(runGroup)] += 1;
      } else if (k == kProjection) {
        int t = index_.operands(size_t(i))[0]; // the tuple
        group_[size_t(i)] = group_[size_t(t)];
      } else if (k == kHost) {
        runTarget = -1; // a host node ends the run
      }
      for (int u = userStart[size_t(i)]; u < userStart[size_t(i) + 1]; ++u)
        if (--indeg[size_t(users[size_t(u)])] == 0)
          makeReady(users[size_t(u)]);
    };
    auto pop = [](std::deque<int> &q) {
      int i = q.front();
      q.pop_front();
      return i;
    };
    for (;;) {
      if (!immediate.empty()) {
        place(pop(immediate));
      } else if (runTarget >= 0 && !calls[size_t(runTarget)].empty()) {
        place(pop(calls[size_t(runTarget)]));
      } else if (!host.empty()) {
        place(pop(host));
      } else {
        int best = -1;
        for (size_t t = 0; t < calls.size(); ++t)
          if (!calls[t].empty() && (best < 0 || calls[t].size() > calls[size_t(best)].size()))
            best = int(t);
        if (best < 0)
          break; // everything is placed
        runTarget = -1;
        place(pop(calls[size_t(best)]));
      }
    }
  }

  //===- Rebuilding ---------------------------------------------------------===//

  Expected<Function> rebuild() {
    const int n = int(index_.size());
    // Contracted units: groups with several region calls.
    std::vector<int> unitOfGroup(gTarget_.size(), -1);
    std::vector<std::vector<int>> members; // per contracted group, index order
    std::vector<int> unit(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      unit[size_t(i)] = i;
      int r = ownRoot(i);
      if (r < 0 || gCalls_[size_t(r)] < 2)
        continue;
      if (unitOfGroup[size_t(r)] < 0) {
        unitOfGroup[size_t(r)] = int(members.size());
        members.emplace_back();
      }
      unit[size_t(i)] = n + unitOfGroup[size_t(r)];
      members[size_t(unitOfGroup[size_t(r)])].push_back(i);
    }
    const int units = n + int(members.size());

    // Edges between units, and the members used outside their group.
    std::vector<char> isOutput(static_cast<size_t>(n), 0);
    std::vector<int> indeg(static_cast<size_t>(units), 0);
    std::vector<std::vector<int>> users(static_cast<size_t>(units));
    for (int i = 0; i < n; ++i)
      for (int p : preds(i)) {
        int up = unit[size_t(p)], ui = unit[size_t(i)];
        if (up == ui)
          continue;
        if (up >= n)
          isOutput[size_t(p)] = 1;
        users[size_t(up)].push_back(ui);
        ++indeg[size_t(ui)];
      }
    if (unit[size_t(n - 1)] >= n)
      isOutput[size_t(n - 1)] = 1;

    newOf_.assign(size_t(n), nullptr);
    inner_.assign(size_t(n), nullptr);
    std::deque<int> ready;
    for (int u = 0; u < units; ++u)
      if (indeg[size_t(u)] == 0 && (u >= n || unit[size_t(u)] == u))
        ready.push_back(u);
    while (!ready.empty()) {
      int u = ready.front();
      ready.pop_front();
      Status st = u < n ? rebuildNode(u) : buildGroup(members[size_t(u - n)], isOutput);
      if (!st.ok())
        return std::move(st).error();
      for (int v : users[size_t(u)])
        if (--indeg[size_t(v)] == 0)
          ready.push_back(v);
    }
    Expr body = newOf_[size_t(n - 1)];
    if (!body)
      return Error("merge-compiler-regions: internal error: regions form a cycle");
    return makeFunction(fn_->params(), body, fn_->attrs(), fn_->name(), fn_->span());
  }

  /// The new value of the operand at position p (callees and leaves are
  /// kept).
  Expr newOperand(int p) {
    if (index_.kind(size_t(p)) == ExprKind::Function)
      return index_.expr(size_t(p));
    return newOf_[size_t(p)];
  }

  Status rebuildNode(int i) {
    const Expr &node = index_.expr(size_t(i));
    auto pos = index_.operands(size_t(i));
    if (pos.empty() || index_.kind(size_t(i)) == ExprKind::Function) {
      newOf_[size_t(i)] = node;
      return okStatus();
    }
    std::vector<Expr> ops;
    ops.reserve(pos.size());
    for (int p : pos)
      ops.push_back(newOperand(p));
    TS_ASSIGN_OR_RETURN(newOf_[size_t(i)], withOperands(node, std::move(ops)));
    return okStatus();
  }

  /// One function for the members of a contracted group, and its call.
  Status buildGroup(const std::vector<int> &group, const std::vector<char> &isOutput) {
    const int root = ownRoot(group.front());
    std::vector<Var> params;
    std::vector<Expr> args;
    std::unordered_map<int, Var> paramOf;
    std::vector<Expr> outputs;
    std::vector<int> outputNodes;
    for (int m : group) {
      const Expr &node = index_.expr(size_t(m));
      if (const auto *g = node->as<TupleGetItemNode>()) {
        const Expr &base = inner_[size_t(index_.operands(size_t(m))[0])];
        if (const auto *t = base->as<TupleNode>()) {
          inner_[size_t(m)] = t->fields()[size_t(g->index())];
        } else {
          TS_ASSIGN_OR_RETURN(inner_[size_t(m)],
                              makeTupleGetItem(base, g->index(), node->name(), node->span()));
        }
      } else {
        const auto *call = node->as<CallNode>();
        const FunctionNode *fn = call->localFn();
        std::unordered_map<const ExprNode *, Expr> subst;
        auto argPos = index_.operands(size_t(m)).subspan(1); // after the callee
        for (size_t k = 0; k < call->args().size(); ++k) {
          const Expr &a = call->args()[k];
          int ai = argPos[k];
          Expr value;
          if (ownRoot(ai) == root) {
            value = inner_[size_t(ai)];
          } else if (a->kind() == ExprKind::Constant) {
            value = a; // constants stay inside
          } else {
            auto [it, fresh] = paramOf.emplace(ai, nullptr);
            if (fresh) {
              it->second = makeVar(fmt::format("p{}", params.size()), a->type());
              params.push_back(it->second);
              args.push_back(newOf_[size_t(ai)]);
            }
            value = it->second;
          }
          subst[fn->params()[k].get()] = std::move(value);
        }
        auto substitute = [&](const Expr &orig, const Expr &rebuilt) -> Expected<Expr> {
          if (orig->kind() != ExprKind::Var)
            return rebuilt; // only parameters are substituted
          auto it = subst.find(orig.get());
          return it == subst.end() ? rebuilt : it->second;
        };
        TS_ASSIGN_OR_RETURN(inner_[size_t(m)],
                            rewrite(fn->body(), substitute, /*intoFunctions=*/false));
      }
      if (isOutput[size_t(m)]) {
        outputs.push_back(inner_[size_t(m)]);
        outputNodes.push_back(m);
      }
    }
    const auto *first = index_.node(size_t(group.front()))->as<CallNode>();
    Expr body = outputs.size() == 1 ? outputs[0] : makeTuple(outputs);
    Function merged = makeFunction(std::move(params), std::move(body), first->localFn()->attrs());
    TS_ASSIGN_OR_RETURN(Expr call, makeLocalCall(merged, std::move(args)));
    if (outputNodes.size() == 1) {
      newOf_[size_t(outputNodes[0])] = call;
      return okStatus();
    }
    for (size_t k = 0; k < outputNodes.size(); ++k) {
      TS_ASSIGN_OR_RETURN(newOf_[size_t(outputNodes[k])], makeTupleGetItem(call, int(k)));
    }
    return okStatus();
  }

  Function fn_;
  NodeIndex index_; // the body's top-level nodes, post-order
  std::vector<size_t> predStart_;
  std::vector<int> preds_;
  std::vector<char> isCall_;
  std::vector<int> target_, group_;
  std::unordered_map<std::string, int> targetIds_;
  // Per group.
  std::vector<int> gTarget_, gCalls_;
  // Rebuilding.
  std::vector<Expr> newOf_, inner_;
};

class MergeCompilerRegionsPass : public passes::Pass {
public:
  std::string_view name() const override { return "merge-compiler-regions"; }
  std::string_view description() const override {
    return "Merge same-target regions without creating cycles";
  }
  Status run(Module &m, passes::PassContext &ctx) override {
    TS_ASSIGN_OR_RETURN(MergeCounts counts, mergeRegions(m));
    ctx.stat("regions-before") += counts.regionsBefore;
    ctx.stat("regions-after") += counts.regionsAfter;
    return okStatus();
  }
};

} // namespace

Expected<MergeCounts> mergeRegions(Module &m) {
  MergeCounts counts;
  auto functions = m.functions();
  for (const auto &[global, fn] : functions) {
    if (fn->attrs().has(kCompilerAttr))
      continue; // an already lifted region
    // A call joins at most one group per round, so a region that could
    // absorb two neighbours does so over two rounds; a few rounds reach the
    // fixpoint in practice (each round is linear).
    Function current = fn;
    for (int round = 0; round < kMaxRounds; ++round) {
      MergeCounts roundCounts;
      auto merged = RegionMerger(current).run(roundCounts);
      if (!merged.ok())
        return std::move(merged)
            .withContext(fmt::format("merge-compiler-regions: in function '@{}'", global))
            .error();
      if (round == 0)
        counts.regionsBefore += roundCounts.regionsBefore;
      const bool changed = *merged != current;
      current = std::move(merged).value();
      if (!changed || round + 1 == kMaxRounds) {
        counts.regionsAfter += roundCounts.regionsAfter;
        break;
      }
    }
    if (current != fn)
      m.set(global, std::move(current));
  }
  return counts;
}

std::unique_ptr<passes::Pass> createMergeCompilerRegionsPass() {
  return std::make_unique<MergeCompilerRegionsPass>();
}

} // namespace tessera::partition
