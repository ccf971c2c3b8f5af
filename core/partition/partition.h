//===- partition/partition.h - Partitioning the graph among plugins -*- C++ -*-===//
//
// Which plugin runs which part of the graph. Five passes, each a pass of the
// pass manager, run in this order (kPartitionSteps):
//
//   merge-composite         each target's patterns, in target priority order,
//                           outlined as local functions Composite="<plugin>.<pattern>"
//                           (the checker may veto a match)
//   annotate-target         each op (and composite call) offered to the
//                           targets' checkers in priority order; a claimed
//                           call is wrapped in a one-call local function
//                           Compiler="<plugin>"; a target with a whole-graph
//                           hook partitions the function itself instead
//   merge-compiler-regions  same-target Compiler functions merged into as few
//                           as possible, never creating a cycle
//   prune-regions           regions not worth offloading (the plugin's
//                           keep_region rule, or the default: no
//                           compute-heavy op) inlined back, then re-merged
//   partition-graph         each Compiler function lifted to a global
//                           @tessera_<module>_<target>_<n> with attributes
//                           Compiler and global_symbol
//
// partitionModule runs kPartitionPipeline instead, where one pass,
// `partition`, makes the decisions of all five on a compact index and
// rebuilds the IR once; the module is the same (partition/regions.h).
//
// The IR between the passes (docs/design/0004-partitioning-in-the-ir.md):
//
//   %r = fn (%p0: f32[1, 8], %p1: f32[1, 8]) attrs{Compiler="json"} {
//          add(%p0, %p1)
//        }(%x, %y)
//
// A region function's parameters are the values it reads from outside
// (deduplicated); constants the region reads are inside its body. A region
// with several results used outside returns a tuple, read with
// TupleGetItem. A composite function is called inside region functions
// (or, before annotate-target, from the main body):
//
//   %c = fn (%q0: f32[1, 8]) attrs{Composite="json.dense_bias_act"} {
//          relu(bias_add(dense(%q0, meta_const_0), meta_const_1))
//        }(%x)
//
// After partition-graph:
//
//   def @tessera_main_json_0(%p0: ..., %p1: ...) attrs{Compiler="json",
//       global_symbol="tessera_main_json_0"} { ... }
//   def @main(...) { ... @tessera_main_json_0(%x, %y) ... }
//
// Passes read their targets from PartitionState (through
// PassContext::partition()); without one, they fail with an error saying
// that targets are needed. Every decision that leaves an op on the host is
// recorded in PartitionState::log for the report, and so is what became of
// every pattern match the plugins were asked about (PatternRecord).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/module.h"
#include "passes/pass.h"
#include "support/error.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace tessera::plugin {
class LoadedPlugin;
class PluginRegistry;
} // namespace tessera::plugin

namespace tessera::partition {

/// The five steps one after the other: each pass's IR is the next one's
/// input (tessera-opt, lit tests, --print-after).
inline constexpr std::string_view kPartitionSteps =
    "merge-composite,annotate-target,merge-compiler-regions,prune-regions,partition-graph";
/// What partitionModule runs: the same result, with the five steps decided
/// on one compact index and the IR rebuilt once (the `partition` pass).
inline constexpr std::string_view kPartitionPipeline = "partition";

/// Attribute names on region and composite functions.
inline constexpr const char *kCompilerAttr = "Compiler";
inline constexpr const char *kCompositeAttr = "Composite";
inline constexpr const char *kGlobalSymbolAttr = "global_symbol";

/// What became of the matches of one pattern for one reason, counted over
/// the run (merge-composite): one record per (target, pattern, kind,
/// reason), in the order first seen. Every pattern merge-composite tries
/// has an Accepted record, with count 0 when nothing matched. Memory stays
/// bounded on large models: a record keeps the first kMaxPatternNodes match
/// roots, and a pattern at most kMaxPatternReasons veto reasons (the rest
/// count under kOtherReasons).
struct PatternRecord {
  enum class Kind {
    Accepted, // outlined as a composite
    Vetoed,   // the plugin's check_pattern refused it (reason = its words)
    Skipped,  // the partitioner could not outline it (reason = why)
  };
  Kind kind = Kind::Accepted;
  std::string target;
  std::string pattern; // its name in the plugin ("dense_bias")
  std::string reason;  // Vetoed, Skipped; "" for Accepted
  int64_t count = 0;
  /// The root calls of the first matches: the call's name (the ONNX node
  /// name), or its op when it has none.
  std::vector<std::string> nodes;
};
inline constexpr size_t kMaxPatternNodes = 10;
inline constexpr size_t kMaxPatternReasons = 20;
inline constexpr const char *kOtherReasons = "(other reasons)";

/// Counts one match of `pattern` of `target` in `records` under (kind,
/// reason), keeping `node` (its root's name) among the first
/// kMaxPatternNodes. An empty `node` counts nothing: it only makes sure the
/// record exists (merge-composite notes so that each pattern was tried).
void recordPattern(std::vector<PatternRecord> &records, const std::string &target,
                   const std::string &pattern, PatternRecord::Kind kind, const std::string &reason,
                   const std::string &node);

/// A plugin partitioning may offload to.
struct Target {
  std::string name;
  std::shared_ptr<const plugin::LoadedPlugin> plugin;
};

/// Why an op call stays on the host, or a region went back there.
struct HostDecision {
  enum class Kind {
    NoTarget, // no requested target lists the op
    Declined, // a checker declined it (reason = the checker's words)
    Pruned,   // its region was sent back (reason = the rule's words)
  };
  Kind kind = Kind::NoTarget;
  std::string function; // the global function ("main")
  std::string node;     // the call's name (the ONNX node name), or "%N" / op name
  std::string op;       // the core op
  std::string target;   // Declined/Pruned: the target
  std::string reason;
};

/// A region as partition-graph formed it.
struct RegionInfo {
  std::string symbol; // global_symbol
  std::string target;
  int64_t ops = 0;    // core op calls inside (composites counted by their ops)
  std::vector<std::string> inputs;  // parameter types, "f32[1, 8]"
  std::vector<std::string> outputs; // result types
  double flops = 0;   // estimated, see estimateFlops
  /// Why the region rule kept it ("placement: 1.2 ms on 'dnnl', 3.4 ms on
  /// the host (measured)"; the parts' reasons when kept parts merged), or "".
  std::string placement;
};

/// What a plugin said will run an op or a pattern match it took (its
/// checker's note, ABI 1.6: oneDNN's implementation for dnnl).
struct OpNote {
  std::string target;
  std::string op;   // the core op, or the composite ("dnnl.conv2d_bias_act")
  std::string node; // the call's label (the root's, for a composite)
  std::string note;
};

/// What the partition passes decided, for `tessera partition --report`.
struct PartitionLog {
  std::vector<HostDecision> host;
  std::vector<RegionInfo> regions;
  std::vector<OpNote> notes;
  /// What became of the targets' pattern matches (merge-composite), target
  /// by target in priority order, then each target's patterns in order.
  std::vector<PatternRecord> patterns = {};
};

/// A verdict on a region that overrides the prune rules (placement by
/// measurement, compile/placement.h): keep it, or send it back with a
/// reason for the log.
struct RegionVerdict {
  bool keep = true;
  std::string reason;
  /// Sent back in part (keep false): only the op calls of these names are
  /// withheld from the target, each with its reason; the region's other ops
  /// are offered to it again (the `partition` pass partitions once more).
  std::map<std::string, std::string> withhold = {};
};
/// Asked by prune-regions before the plugin's keep_region rule, with the
/// region as a function and its target; nullopt defers to the usual rules.
using RegionRule = std::function<Expected<std::optional<RegionVerdict>>(
    const ir::Function &region, const std::string &target)>;

/// Why a call named by `--on-host` runs on the host (the partition log's reason).
inline constexpr const char *kOnHostReason = "kept on the host by --on-host";

/// The state the partition passes share in one pipeline run.
struct PartitionState {
  /// In priority order (`--target dnnl,ccompiler`: dnnl first).
  std::vector<Target> targets;
  PartitionLog log;
  /// Optional: measured verdicts on regions (see RegionRule).
  RegionRule regionRule;
  /// Op calls a region rule sent back from a target: the `partition` pass
  /// offers them again to the targets after it, never to that one (nor in a
  /// pattern match of its). By (global function, node name, op, target), as
  /// the log names calls (so the ops of a composite are found again when
  /// the composite is not formed): the reason. Unnamed calls of an op share
  /// a key, and are withheld together.
  std::map<std::tuple<std::string, std::string, std::string, std::string>, std::string> withheld;
  /// Why `call` (of global function `global`) is withheld from `target`,
  /// or null.
  const std::string *withheldFrom(const std::string &global, const ir::CallNode &call,
                                  const std::string &target) const;
  /// Withholds the op calls of `call` (its own op, or those inside a
  /// composite call) from `target`; true when one was not withheld yet.
  bool withhold(const std::string &global, const ir::CallNode &call, const std::string &target,
                const std::string &reason);
  /// The same for the op calls of `call` named in `reasons` only, each with
  /// its reason.
  bool withholdNamed(const std::string &global, const ir::CallNode &call,
                     const std::string &target, const std::map<std::string, std::string> &reasons);
  /// Node names the user keeps on the host (`--on-host`): no target is
  /// offered their calls (withheldFrom gives kOnHostReason).
  std::set<std::string, std::less<>> hostNodes;
  /// Calls of regions the region rule kept, by (global function, position):
  /// its reason, for the log's RegionInfo::placement.
  std::map<std::pair<std::string, int>, std::string> kept;

  /// Targets by name from a registry; an unknown name is an error listing
  /// the loaded plugins.
  static Expected<std::unique_ptr<PartitionState>>
  fromNames(const std::vector<std::string> &names, const plugin::PluginRegistry &registry);
  /// The target of that name, or null.
  const Target *find(std::string_view name) const;
};

/// The state a partition pass was created with, or the error "needs targets
/// (give --target ...)" (the pass manager adds the pass name).
Expected<PartitionState *> requireState(PartitionState *state);

/// Floating-point operations of one op call (conv2d, dense, matmul: 2 * MACs;
/// pooling: window size per output; other ops: one per output element).
double estimateFlops(const ir::CallNode &call);

/// Does the default prune rule count this op as compute-heavy?
bool isComputeHeavy(std::string_view op);

/// `fn` with the composite calls in it inlined (what the host runs of a
/// region: plain ops).
Expected<ir::Function> withoutComposites(const ir::Function &fn);

/// The composite a call is a call of ("<plugin>.<pattern>", the Composite
/// attribute of its local function), or "".
std::string compositeOf(const ir::CallNode &call);

/// Whether a call and its arguments have static shapes and its attributes
/// hold no symbol (ir/symbol.h).
bool callIsStatic(const ir::CallNode &call);
/// Why a call is not offered to a plugin (nullptr: it is): calls over
/// symbolic dims, in their types or in their attributes (a resize to [H, W],
/// a reshape to [N, -1]), go only to plugins that take them (ABI 1.4).
const char *notOffered(const ir::CallNode &call, bool takesSymbolicDims);
/// The report's wording for that case.
inline constexpr const char *kSymbolicDecline =
    "symbolic dims, which the plugin does not take (plugin ABI 1.4, "
    "TESSERA_CHECKER_SYMBOLIC_DIMS)";

//===- The passes (one file each) -----------------------------------------===//
std::unique_ptr<passes::Pass> createMergeCompositePass(PartitionState *state);
std::unique_ptr<passes::Pass> createAnnotateTargetPass(PartitionState *state);
std::unique_ptr<passes::Pass> createMergeCompilerRegionsPass();
std::unique_ptr<passes::Pass> createPruneRegionsPass(PartitionState *state);
std::unique_ptr<passes::Pass> createPartitionGraphPass(PartitionState *state);
/// The five steps in one pass.
std::unique_ptr<passes::Pass> createPartitionPass(PartitionState *state);

/// Registers the partition passes, created over `state` (the targets and
/// the decision log; null: without targets, and the passes that need them
/// say so when run).
void registerPartitionPasses(passes::PassRegistry &r, PartitionState *state);

/// Every pass of the compiler: the standard ones (passes/) and the
/// partition passes over `state`. What pipelines given by name are read
/// with; the one registration unit above both layers (as MLIR's
/// InitAllPasses).
passes::PassRegistry allPasses(PartitionState *state = nullptr);

} // namespace tessera::partition
