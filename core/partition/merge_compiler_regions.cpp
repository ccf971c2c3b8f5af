//===- partition/merge_compiler_regions.cpp - Merge same-target regions ---===//
//
// The merge-compiler-regions pass: regions (calls of local functions with
// attribute Compiler="<t>", as annotate-target makes them) of the same
// target are merged into as few regions as possible, never creating a cycle
// between regions. Works on the IR alone (no targets needed). The pass reads
// the regions back as labels (flattenRegions), merges them (mergeLabels) and
// outlines the result; the `partition` pass calls mergeLabels directly.
//
// Preconditions: region calls sit in the top-level body of global functions.
// Composite calls inside regions stay calls of their composite functions.
//
// Algorithm (linear), on the graph where each region is contracted to one
// vertex. Contracting runs of consecutive vertices of ONE topological order
// can never create a cycle: every edge between two runs still points forward
// in that order. So the merge schedules the vertices in a topological order
// chosen to keep same-target regions together, and each maximal run of
// same-target regions becomes one region:
//   - a ready region of the current run's target continues the run;
//   - otherwise every ready host node is placed (this ends the run, and may
//     make more regions ready), and then a new run starts with the target
//     that has the most ready regions (ties: the first target by name).
// Leaves (variables, constants, function literals) are not vertices: they
// constrain nothing. Which regions end up in one run does not depend on how
// vertices are numbered, only on the graph: a run takes every region of its
// target that becomes ready while it lasts, and the host phase places every
// ready host node.
// (A first version merged a region into any neighbouring group it had no
// outside path from; a property test on random DAGs found that two groups
// that are each convex can still reach each other, so that design was
// replaced by this one, which is correct by construction.)
// A region the schedule could not extend (its neighbour was not ready yet)
// may merge in a later round, so mergeLabels repeats the schedule on the
// merged regions until nothing changes (at most kMaxRounds times).
//
//===----------------------------------------------------------------------===//
#include "partition/partition.h"
#include "partition/regions.h"

#include "ir/visit.h"

#include <algorithm>

namespace tessera::partition {

using namespace ir;

namespace {

/// Merge rounds per function at most (see mergeLabels).
constexpr int kMaxRounds = 4;

/// One round of the schedule (see the banner): the run each region lands
/// in, as a new labelling. Returns the number of runs.
int scheduleRuns(const NodeIndex &index, const Labels &labels, std::vector<int> &runOf) {
  const size_t n = index.size();
  const int numRegions = int(labels.numRegions());
  // Targets numbered by name: ties between targets break the same way
  // however the regions are numbered.
  std::vector<std::string> names; // distinct targets (a handful)
  for (const std::string &t : labels.targets)
    if (names.empty() || (t != names.back() && std::find(names.begin(), names.end(), t) ==
                                                   names.end()))
      names.push_back(t);
  std::sort(names.begin(), names.end());
  std::vector<int> targetOf(static_cast<size_t>(numRegions));
  for (int r = 0; r < numRegions; ++r)
    targetOf[size_t(r)] =
        int(std::find(names.begin(), names.end(), labels.targets[size_t(r)]) - names.begin());

  // Vertices: the regions, then each node outside regions that is not a leaf.
  std::vector<int> vertexOf(n, -1);
  int vertices = numRegions;
  for (size_t i = 0; i < n; ++i) {
    const ExprKind k = index.kind(i);
    if (labels.regionOf[i] >= 0)
      vertexOf[i] = labels.regionOf[i];
    else if (k != ExprKind::Var && k != ExprKind::Constant && k != ExprKind::Function)
      vertexOf[i] = vertices++;
  }
  // Edges as CSR of users; indegree counts edges.
  std::vector<int> indeg(size_t(vertices), 0), userStart(size_t(vertices) + 1, 0), users;
  std::vector<std::pair<int, int>> edges;
  edges.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const int v = vertexOf[i];
    if (v < 0)
      continue;
    for (int x : index.operands(i)) {
      const int u = vertexOf[size_t(x)];
      if (u >= 0 && u != v)
        edges.emplace_back(u, v);
    }
  }
  for (const auto &[u, v] : edges) {
    ++indeg[size_t(v)];
    ++userStart[size_t(u) + 1];
  }
  for (int v = 0; v < vertices; ++v)
    userStart[size_t(v) + 1] += userStart[size_t(v)];
  users.resize(edges.size());
  std::vector<int> fill(userStart.begin(), userStart.end() - 1);
  for (const auto &[u, v] : edges)
    users[size_t(fill[size_t(u)]++)] = v;

  std::vector<int> host;                            // ready host vertices (a stack)
  std::vector<std::vector<int>> ready(names.size()); // ready regions per target
  auto makeReady = [&](int v) {
    if (v < numRegions)
      ready[size_t(targetOf[size_t(v)])].push_back(v);
    else
      host.push_back(v);
  };
  for (int v = 0; v < vertices; ++v)
    if (indeg[size_t(v)] == 0)
      makeReady(v);

  runOf.assign(size_t(numRegions), -1);
  int runs = 0, runTarget = -1;
  auto place = [&](int v) {
    if (v < numRegions) {
      if (targetOf[size_t(v)] != runTarget) {
        runTarget = targetOf[size_t(v)];
        ++runs;
      }
      runOf[size_t(v)] = runs - 1;
    } else {
      runTarget = -1; // a host node ends the run
    }
    for (int u = userStart[size_t(v)]; u < userStart[size_t(v) + 1]; ++u)
      if (--indeg[size_t(users[size_t(u)])] == 0)
        makeReady(users[size_t(u)]);
  };
  auto pop = [](std::vector<int> &q) {
    int v = q.back();
    q.pop_back();
    return v;
  };
  for (;;) {
    if (runTarget >= 0 && !ready[size_t(runTarget)].empty()) {
      place(pop(ready[size_t(runTarget)]));
    } else if (!host.empty()) {
      place(pop(host));
    } else {
      int best = -1;
      for (size_t t = 0; t < ready.size(); ++t)
        if (!ready[t].empty() && (best < 0 || ready[t].size() > ready[size_t(best)].size()))
          best = int(t);
      if (best < 0)
        break; // everything is placed
      runTarget = -1;
      place(pop(ready[size_t(best)]));
    }
  }
  return runs;
}

} // namespace

MergeCounts mergeLabels(const NodeIndex &index, Labels &labels) {
  MergeCounts counts;
  counts.regionsBefore = int64_t(labels.numRegions());
  std::vector<int> runOf;
  for (int round = 0; round < kMaxRounds; ++round) {
    const int runs = scheduleRuns(index, labels, runOf);
    if (runs == int(labels.numRegions()))
      break; // nothing merged
    std::vector<std::string> targets(static_cast<size_t>(runs));
    for (size_t r = 0; r < runOf.size(); ++r)
      targets[size_t(runOf[r])] = labels.targets[r];
    for (int &r : labels.regionOf)
      if (r >= 0)
        r = runOf[size_t(r)];
    labels.targets = std::move(targets);
    labels.compact();
  }
  counts.regionsAfter = int64_t(labels.numRegions());
  return counts;
}

namespace {

const passes::PassInfo kMergeCompilerRegionsInfo{
    "merge-compiler-regions",
    "Merge same-target regions without creating cycles",
    "Same-target regions are merged into as few as possible without creating a cycle "
    "(docs/partitioning.md: contracting runs of one topological order).",
    {
        {"regions-before", "regions before merging"},
        {"regions-after", "regions after merging"},
    }};

class MergeCompilerRegionsPass : public passes::Pass {
public:
  const passes::PassInfo &info() const override { return kMergeCompilerRegionsInfo; }
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
  TS_RETURN_IF_ERROR(relabelFunctions(
      m, "merge-compiler-regions",
      [&](const std::string &, const NodeIndex &index, Labels &labels,
          int64_t regionCalls) -> Expected<bool> {
        MergeCounts c = mergeLabels(index, labels);
        counts.regionsBefore += regionCalls;
        counts.regionsAfter += c.regionsAfter;
        return c.regionsAfter != regionCalls;
      }));
  return counts;
}

std::unique_ptr<passes::Pass> createMergeCompilerRegionsPass() {
  return std::make_unique<MergeCompilerRegionsPass>();
}

} // namespace tessera::partition
