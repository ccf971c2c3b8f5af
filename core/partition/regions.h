//===- partition/regions.h - Regions as labels on the compact graph -*- C++ -*-===//
//
// The partition steps decide on a compact form of a global function's body:
// its top-level nodes in post order (ir::NodeIndex, function literals not
// entered) and, for each, the region it belongs to (Labels). The IR is
// rebuilt only when the regions are final (outlineRegions).
//
// Each step pass reads the labels back from the IR (flattenRegions inlines
// every region call and labels each inlined node with its region), decides,
// and outlines again. The `partition` pass (partition_pass.cpp, what
// partitionModule runs) makes the same decisions on one index and builds
// the IR once. The two give the same module because:
//   - flattenRegions(outlineRegions(G, L)) is G again (same nodes, same
//     operand order, hence the same post order) with the same regions;
//   - every decision depends only on the graph and the regions' members and
//     targets, never on how regions are numbered;
//   - outlineRegions depends only on the graph and the regions.
// (docs/design/0008-partitioning-at-scale.md; a property test checks it.)
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/module.h"
#include "ir/visit.h"
#include "partition/partition.h"
#include "bridge/pattern.h"
#include "support/error.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace tessera::partition {

class RegionLifter;

/// The region function of `node` when it is a call of a local function with
/// a string attribute Compiler (its value in `target`), else null.
const ir::FunctionNode *regionFunctionOf(const ir::ExprNode &node, std::string *target = nullptr);

/// The region of each top-level node of a function body, by NodeIndex
/// position. Leaves (variables, constants, function literals) are never in
/// a region: outlining puts constants and function literals inside the
/// regions that read them and turns variables into parameters.
struct Labels {
  static constexpr int kHost = -1;
  /// On the host because its region was pruned: a composite call labelled
  /// so is inlined when outlined (the host runs plain ops).
  static constexpr int kPruned = -2;

  std::vector<int> regionOf;        // by position: a region id, kHost or kPruned
  std::vector<std::string> targets; // by region id

  size_t numRegions() const { return targets.size(); }
  /// Renumbers the regions in the order of their first member, dropping ids
  /// without members.
  void compact();
  /// The members of each region, in post order.
  std::vector<std::vector<int>> members() const;
};

/// A function body with its region calls inlined, and the labels that say
/// which region each inlined node came from.
struct Flattened {
  std::unique_ptr<ir::NodeIndex> index;
  Labels labels;
  int64_t regionCalls = 0; // region calls inlined
};

/// Inlines every region call at the top level of `body` (composite calls
/// inside stay calls). A TupleGetItem of a region's tuple result reads the
/// field directly.
Expected<Flattened> flattenRegions(const ir::Expr &body);

/// What a step pass does to one function's labels; returns whether it
/// changed them (the function is outlined again only then).
using RelabelFn = std::function<Expected<bool>(const std::string &global, const ir::NodeIndex &,
                                               Labels &, int64_t regionCalls)>;
/// A step pass over the IR: for every global function to partition (not
/// itself a region), its regions read back as labels (flattenRegions),
/// `relabel` applied, and the function outlined again when it changed.
/// Errors name `pass` and the function.
Status relabelFunctions(ir::Module &m, std::string_view pass, const RelabelFn &relabel);

/// A TupleGetItem whose tuple is in a region joins that region (so a region
/// returns the fields it produces, not the tuple of a tuple-valued op).
void absorbProjections(const ir::NodeIndex &index, Labels &labels);

/// Counts of one merge.
struct MergeCounts {
  int64_t regionsBefore = 0; // regions found
  int64_t regionsAfter = 0;  // regions left
};

/// Merges same-target regions into as few as possible without creating a
/// cycle between regions (merge_compiler_regions.cpp has the algorithm).
MergeCounts mergeLabels(const ir::NodeIndex &index, Labels &labels);

/// What prune-regions needs besides the labels.
struct PruneScope {
  PartitionState *state = nullptr; // optional: plugin rules and the log
  std::string module;              // the module's name, for region symbols
  std::string function;            // the global function, for the log
  /// Optional: the target of each region the state's region rule sent back.
  std::vector<std::string> *ruledBack = nullptr;
  /// Optional: set when the region rule sent a region back in part and
  /// withheld a call that was not withheld before (RegionVerdict::withhold).
  bool *withheldPart = nullptr;
};

/// Labels kPruned every region not worth offloading (prune_regions.cpp) and
/// logs why; returns how many regions were pruned.
Expected<int64_t> pruneLabels(const ir::NodeIndex &index, Labels &labels, const PruneScope &scope,
                              passes::PassContext &ctx);

/// The function's nodes as a graph whose region members are contracted into
/// one vertex per region; vertex r < numRegions is region r, every node
/// outside a region is a vertex of its own. Adjacency is kept in CSR arrays.
class ContractedGraph {
public:
  ContractedGraph(const ir::NodeIndex &index, const std::vector<int> &regionOf, int numRegions);

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

  /// A topological order of the vertices (Kahn's algorithm, FIFO) in `out`;
  /// false, with the regions on a cycle in `cycleRegions`, when there is none.
  bool order(std::vector<int> &out, std::vector<int> &cycleRegions) const;

private:
  int numRegions_;
  std::vector<int> vertexOf_;
  std::vector<int> predStart_, succStart_, preds_, succs_;
};

/// Builds the function of a region as outlineRegions does: parameters are
/// the values it reads from outside (deduplicated, in the order its members
/// read them), constants and composite functions it reads go inside; the
/// result is the one member used outside (or the body's result), or a tuple
/// of them in post order. One builder serves every region of a labelling.
class RegionBuilder {
public:
  RegionBuilder(const ir::NodeIndex &index, const Labels &labels);

  /// Region r's function; `outside(p)` is the argument for the node at
  /// position p outside the region, collected in `args` (parameter order).
  Expected<ir::Function> build(int r, const std::function<ir::Expr(size_t)> &outside,
                               std::vector<ir::Expr> &args);
  /// The positions outside region r its members read (constants and
  /// function literals excepted): its parameters, in order.
  const std::vector<int> &inputs(int r) const { return inputs_[size_t(r)]; }
  /// The regions in the post order of the outlined body, each with the
  /// symbol partition-graph would give it (from `lifter`). The body must not
  /// call regions already (the `partition` pass sends such modules through
  /// the steps).
  Expected<std::vector<std::pair<int, std::string>>> liftOrder(RegionLifter &lifter) const;
  /// The members of region r its function returns, in post order.
  const std::vector<int> &outputs(int r) const { return outputs_[size_t(r)]; }
  const std::vector<int> &members(int r) const { return members_[size_t(r)]; }

private:
  const ir::NodeIndex &index_;
  const Labels &labels_;
  std::vector<int> readsFromOutside(int r) const;

  std::vector<std::vector<int>> members_, outputs_, inputs_;
  std::vector<ir::Expr> inner_; // a node's value inside the region being built
  std::vector<int> innerRegion_; // which region inner_ was set for
};

/// The body with each region replaced by a call of its function
/// (RegionBuilder) with attribute Compiler="<target>"; a region with several
/// results is read back with TupleGetItem. Nodes outside regions are rebuilt
/// over the new values; a composite call labelled kPruned is inlined. With
/// a lifter, every region is lifted to a global function as partition-graph
/// would lift it (same symbols, same module and log order; see liftOrder).
Expected<ir::Expr> outlineRegions(const ir::NodeIndex &index, const Labels &labels,
                                  RegionLifter *lifter = nullptr, const std::string &global = {});

/// A target's pattern, parsed.
struct TargetPattern {
  const Target *target;
  bridge::Pattern pattern;
};

/// Every pattern of the targets, in priority order then declared order; a
/// pattern that does not parse is an error naming the plugin and pattern.
Expected<std::vector<TargetPattern>> parsePatterns(const PartitionState &state);

/// merge-composite's decisions on one function: for each match root, the
/// composite call that replaces it, over the match's own inputs. What became
/// of every match goes to `log.patterns`. With a state, a match holding an
/// op call withheld from its target (PartitionState::withheld) is not
/// formed (`global` names the function).
using Composites = std::unordered_map<const ir::ExprNode *, ir::Expr>;
Expected<Composites> findComposites(const ir::Function &fn, const ir::NodeIndex &index,
                                    const std::vector<TargetPattern> &patterns, PartitionLog &log,
                                    passes::PassContext &ctx,
                                    const PartitionState *state = nullptr,
                                    const std::string &global = {});
/// The function with the composites in place (merge-composite's result).
Expected<ir::Function> withComposites(const ir::Function &fn, const ir::NodeIndex &index,
                                      const Composites &composites);

/// annotate-target's decisions on `index`, the body of global function
/// `global` (annotate_target.cpp): each claimed call in a region of its own
/// (a whole-graph hook's regions as the plugin formed them), projections
/// absorbed, every call left on the host logged.
Expected<Labels> annotateLabels(const ir::Function &fn, const std::string &global,
                                const ir::NodeIndex &index, PartitionState &state,
                                passes::PassContext &ctx);

/// Lifts region calls to global functions, as partition-graph does
/// (partition_graph.cpp): @tessera_<module>_<target>_<n> with attributes
/// Compiler and global_symbol, <n> counting per target across the module.
class RegionLifter {
public:
  RegionLifter(ir::Module &m, passes::PassContext &ctx, PartitionState *state);

  /// The next unused symbol of `target`.
  std::string freshSymbol(const std::string &target);
  /// The Compiler attribute of a region function; an error naming the call
  /// when it is empty.
  Expected<std::string> targetOf(const ir::CallNode &call, const ir::FunctionNode &fn) const;
  /// A region lifted, not yet in the module.
  struct Lifted {
    ir::Function function;
    RegionInfo info;
  };
  /// The global function @symbol made of `fn` (in `out`) and the call of it
  /// that replaces `call`.
  Expected<ir::Expr> lift(const ir::CallNode &call, const ir::FunctionNode &fn,
                          const std::string &global, const std::string &symbol, Lifted &out);
  /// Adds a lifted region to the module and the partition log.
  void add(Lifted lifted);
  /// The region rule's reasons for keeping the calls at `members` (of
  /// global function `global`), into `out.info.placement`.
  void notePlacement(const std::string &global, const std::vector<int> &members,
                     Lifted &out) const;
  /// Every region call in the body of `fn`, lifted in post order (fn itself
  /// when there is none); each region recorded in the log.
  Expected<ir::Function> liftAll(const ir::Function &fn, const std::string &global);

private:
  bool constantsAsInputs(const std::string &target) const;
  static std::string where(const ir::CallNode &call);
  template <typename ParamFor>
  static Expected<ir::Expr> composite(const ir::CallNode &call, ParamFor &paramFor);
  static RegionInfo describe(const std::string &symbol, const std::string &target,
                             const ir::FunctionNode &fn);

  ir::Module &m_;
  passes::PassContext &ctx_;
  PartitionState *state_;
  std::string moduleName_;
  // Per target: "tessera_<module>_<target>_" and the next <n> to try.
  std::map<std::string, std::pair<std::string, int>> next_;
};

/// Merges the same-target region calls of every global function of `m`
/// (functions that carry a Compiler attribute themselves are skipped).
Expected<MergeCounts> mergeRegions(ir::Module &m);

} // namespace tessera::partition
