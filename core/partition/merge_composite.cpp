//===- partition/merge_composite.cpp - Outline pattern matches -----------===//
//
// The merge-composite pass: for each global function (functions already
// partitioned, with a Compiler attribute, are left alone), each target in
// priority order and each of its patterns in declared order, every match of
// the pattern is outlined as a call of a local function
// Composite="<plugin>.<pattern>" (bridge/plugin_bridge.h,
// outlineComposite).
//
// Matches are tried at every op call in reverse post-order, so a root is
// tried before its operands and the larger (outer) match wins. A match of a
// single op (every optional op of the pattern absent) is not outlined: a
// composite exists to keep several ops together, and a lone op is offered
// to the checkers in target priority order like any other (otherwise a
// lower-priority target's pattern would take an op a higher-priority target
// claims on its own). A match is
// skipped when one of its interior nodes is used outside it (outlining
// would duplicate it) or when it overlaps a match already taken; the
// plugin's check_pattern may veto it. What became of every match the
// plugin was asked about (accepted, vetoed with the plugin's reason,
// skipped and why) is recorded per pattern in PartitionLog::patterns for
// the report (PatternRecord: counts and the first root names). A later pattern
// never takes an op of an earlier match; all matches are outlined in one
// rebuild of the function.
//
// Preconditions: a PartitionState (--target). Patterns are parsed here; a
// pattern that does not parse is an error naming the plugin and the pattern.
//
//===----------------------------------------------------------------------===//
#include "partition/partition.h"

#include "ir/visit.h"
#include "bridge/pattern.h"
#include "bridge/plugin_bridge.h"
#include "partition/regions.h"
#include "plugin/registry.h"

#include <unordered_map>

namespace tessera::partition {

using namespace ir;

namespace {

/// An accepted match and the composite it becomes.
struct Accepted {
  bridge::PatternMatch match;
  std::string composite; // "<plugin>.<pattern>"
};

/// Per-node data of one function, indexed by post-order position.
struct Matching {
  const NodeIndex &index;
  std::vector<int> uses;       // uses of each node (see usesOf)
  std::vector<char> taken;     // ops of accepted matches
  std::vector<int> acceptedAt; // root position -> index into `accepted`, or -1
  std::vector<Accepted> accepted;
  /// Op calls withheld from targets (PartitionState::withheld), or null.
  const PartitionState *state = nullptr;
  std::string global;

  bool isTaken(const ExprNode *n) const {
    int64_t p = index.position(n);
    return p >= 0 && taken[size_t(p)];
  }
};

/// How often each top-level node is used, counting uses from inside nested
/// function bodies too (as ir::useCounts does): one walk when the body has
/// no function literal, the full count otherwise.
std::vector<int> usesOf(const Function &fn, const NodeIndex &index) {
  bool nested = false;
  for (size_t i = 0; i < index.size() && !nested; ++i)
    nested = index.kind(i) == ExprKind::Function;
  if (!nested)
    return useCountsByPosition(index);
  std::unordered_map<const ExprNode *, int> all = useCounts(fn->body());
  std::vector<int> uses(index.size(), 0);
  for (size_t i = 0; i < index.size(); ++i)
    uses[i] = all.at(index.node(i));
  return uses;
}

/// Why a match cannot be outlined (report wording).
constexpr const char *kOverlaps = "overlaps a match already taken";
constexpr const char *kUsedOutside = "an inner value is used outside the match";

/// Null when the match can be outlined: no overlap with accepted matches,
/// and no interior node used outside; otherwise why not.
const char *unusableMatch(const bridge::PatternMatch &match, const Matching &m) {
  for (const Expr &op : match.ops)
    if (m.isTaken(op.get()))
      return kOverlaps;
  // Uses of each interior node from inside the match (matches are small).
  for (const Expr &in : match.interior) {
    int inside = 0;
    for (const Expr &op : match.ops)
      for (const Expr &x : op->operands())
        inside += x.get() == in.get();
    int64_t p = m.index.position(in.get());
    if (p >= 0 && m.uses[size_t(p)] > inside)
      return kUsedOutside;
  }
  return nullptr;
}

/// How a match root is named in the report: its name, or its op.
std::string rootLabel(const Expr &root) {
  if (!root->name().empty())
    return root->name();
  const auto *call = root->as<CallNode>();
  return call ? call->calleeName() : std::string();
}

/// The accepted matches of one pattern, tried at every op call not yet
/// taken, roots before their operands. The plugin's check_pattern sees
/// every match in one batch (one child process when plugin calls are
/// isolated), also matches that an earlier one in the order then overlaps:
/// a checker answers for the ops it is shown, whatever else is taken.
Status findMatches(Matching &m, const TargetPattern &tp, PartitionLog &log,
                   passes::PassContext &ctx) {
  std::vector<PatternRecord> &records = log.patterns;
  const std::string composite = tp.target->name + "." + tp.pattern.name;
  // The pattern was tried (a record even when nothing matches).
  recordPattern(records, tp.target->name, tp.pattern.name,
                PatternRecord::Kind::Accepted, {}, {});
  const std::vector<const Op *> roots = bridge::rootOps(tp.pattern);
  std::vector<std::pair<size_t, bridge::PatternMatch>> found;
  for (size_t i = m.index.size(); i-- > 0;) {
    // Only calls of the ops a match can be rooted at are read.
    const Op *op = m.index.op(i);
    if (!op || m.taken[i] || std::find(roots.begin(), roots.end(), op) == roots.end())
      continue;
    std::optional<bridge::PatternMatch> match = bridge::matchPattern(tp.pattern, m.index.expr(i));
    if (!match)
      continue;
    // Matches over symbolic dims go only to plugins that take them; the ops
    // of the others go to annotate-target, which says why.
    const bool symbolicOk = tp.target->plugin->takesSymbolicDims();
    if (std::any_of(match->ops.begin(), match->ops.end(), [&](const Expr &e) {
          return notOffered(static_cast<const CallNode &>(*e), symbolicOk) != nullptr;
        }))
      continue;
    if (match->ops.size() < 2) {
      ++ctx.stat("matches-of-one-op");
      continue;
    }
    // A match holding an op sent back from this target is not formed: its
    // ops go on to the targets after it.
    if (m.state && std::any_of(match->ops.begin(), match->ops.end(), [&](const Expr &e) {
          return m.state->withheldFrom(m.global, static_cast<const CallNode &>(*e),
                                       tp.target->name) != nullptr;
        }))
      continue;
    found.emplace_back(i, std::move(*match));
  }
  if (found.empty())
    return okStatus();

  std::vector<bridge::OpDescList> descs;
  std::vector<std::vector<const tessera_op_desc_t *>> lists;
  for (const auto &[i, match] : found) {
    TS_ASSIGN_OR_RETURN(bridge::OpDescList d, bridge::OpDescList::fromCalls(match.ops));
    lists.emplace_back(d.data(), d.data() + d.size());
    descs.push_back(std::move(d));
  }
  TS_ASSIGN_OR_RETURN(std::vector<plugin::CheckResult> verdicts,
                      tp.target->plugin->guardedCheckPatterns(tp.pattern.name, lists));

  // What became of each match, recorded afterwards in graph order.
  struct Outcome {
    PatternRecord::Kind kind = PatternRecord::Kind::Accepted;
    std::string reason, root;
  };
  std::vector<Outcome> outcome(found.size());
  for (size_t k = 0; k < found.size(); ++k) {
    auto &[i, match] = found[k];
    if (const char *why = unusableMatch(match, m)) {
      ++ctx.stat("matches-skipped");
      outcome[k] = {PatternRecord::Kind::Skipped, why, rootLabel(match.root)};
      continue;
    }
    if (!verdicts[k].supported) {
      ++ctx.stat("matches-vetoed");
      outcome[k] = {PatternRecord::Kind::Vetoed,
                    verdicts[k].reason.empty() ? "vetoed (no reason given)" : verdicts[k].reason,
                    rootLabel(match.root)};
      continue;
    }
    outcome[k] = {PatternRecord::Kind::Accepted, {}, rootLabel(match.root)};
    if (!verdicts[k].reason.empty()) // the plugin's note: what will run the match
      log.notes.push_back({tp.target->name, composite, outcome[k].root, verdicts[k].reason});
    for (const Expr &op : match.ops)
      if (int64_t p = m.index.position(op.get()); p >= 0)
        m.taken[size_t(p)] = 1;
    m.acceptedAt[i] = int(m.accepted.size());
    m.accepted.push_back(Accepted{std::move(match), composite});
  }
  for (size_t k = found.size(); k-- > 0;)
    recordPattern(records, tp.target->name, tp.pattern.name, outcome[k].kind,
                  outcome[k].reason, outcome[k].root);
  return okStatus();
}

const passes::PassInfo kMergeCompositeInfo{
    "merge-composite",
    "Outline each target's pattern matches as composite functions",
    "Each target's composite patterns, in target priority order, are matched and outlined "
    "as local functions `Composite=\"<plugin>.<pattern>\"`; a match of a single op (the "
    "pattern's optional ops all absent) is not outlined, so a lone op goes to the first "
    "target whose checker takes it; a match whose inner values are used outside it is "
    "skipped, and the plugin's `check_pattern` may veto a match.",
    {
        {"composites-formed", "pattern matches outlined as composite functions"},
        {"matches-of-one-op", "matches of a single op, left to the checkers"},
        {"matches-skipped", "matches whose inner values are used outside them"},
        {"matches-vetoed", "matches the plugin's check_pattern refused"},
    }};

class MergeCompositePass : public passes::Pass {
public:
  explicit MergeCompositePass(PartitionState *state) : state_(state) {}
  const passes::PassInfo &info() const override { return kMergeCompositeInfo; }

  Status run(Module &m, passes::PassContext &ctx) override {
    TS_ASSIGN_OR_RETURN(PartitionState * state, requireState(state_));
    // Parse every pattern first: a bad pattern fails the pass whatever the IR.
    TS_ASSIGN_OR_RETURN(std::vector<TargetPattern> patterns, parsePatterns(*state));
    if (patterns.empty())
      return okStatus();

    auto functions = m.functions();
    for (const auto &[global, fn] : functions) {
      if (fn->attrs().has(kCompilerAttr))
        continue; // already partitioned
      auto next = outline(fn, patterns, state->log, ctx);
      if (!next.ok())
        return std::move(next).withContext(fmt::format("in function '@{}'", global)).error();
      if (*next != fn)
        m.set(global, std::move(next).value());
    }
    return okStatus();
  }

private:
  /// All matches outlined in one rebuild of the function.
  static Expected<Function> outline(const Function &fn, const std::vector<TargetPattern> &patterns,
                                    PartitionLog &log, passes::PassContext &ctx) {
    NodeIndex index(fn->body(), /*intoFunctions=*/false);
    TS_ASSIGN_OR_RETURN(Composites found, findComposites(fn, index, patterns, log, ctx));
    if (found.empty())
      return fn;
    return withComposites(fn, index, found);
  }

  PartitionState *state_;
};

} // namespace

void recordPattern(std::vector<PatternRecord> &records, const std::string &target,
                   const std::string &pattern, PatternRecord::Kind kind, const std::string &reason,
                   const std::string &node) {
  // A few records per pattern: a linear search is cheaper than a map.
  PatternRecord *rec = nullptr;
  size_t reasons = 0; // distinct Vetoed/Skipped reasons of this pattern
  for (PatternRecord &r : records) {
    if (r.target != target || r.pattern != pattern)
      continue;
    if (r.kind == kind && r.reason == reason) {
      rec = &r;
      break;
    }
    reasons += r.kind != PatternRecord::Kind::Accepted;
  }
  if (!rec && kind != PatternRecord::Kind::Accepted && reasons >= kMaxPatternReasons) {
    // Too many distinct reasons (a checker quoting shapes): count the rest together.
    for (PatternRecord &r : records)
      if (r.target == target && r.pattern == pattern && r.kind == kind && r.reason == kOtherReasons)
        rec = &r;
    if (!rec) {
      records.push_back(PatternRecord{kind, target, pattern, kOtherReasons, 0, {}});
      rec = &records.back();
    }
  }
  if (!rec) {
    records.push_back(PatternRecord{kind, target, pattern, reason, 0, {}});
    rec = &records.back();
  }
  if (node.empty())
    return; // only noting that the pattern was tried
  ++rec->count;
  if (rec->nodes.size() < kMaxPatternNodes)
    rec->nodes.push_back(node);
}

Expected<std::vector<TargetPattern>> parsePatterns(const PartitionState &state) {
  std::vector<TargetPattern> patterns;
  for (const Target &t : state.targets) {
    for (const auto &[patName, text] : t.plugin->patterns()) {
      auto parsed = bridge::parsePattern(patName, text);
      if (!parsed.ok())
        return Error::format("plugin '{}': {}", t.name, parsed.error().message());
      patterns.push_back({&t, std::move(parsed).value()});
    }
  }
  return patterns;
}

Expected<Composites> findComposites(const Function &fn, const NodeIndex &index,
                                    const std::vector<TargetPattern> &patterns, PartitionLog &log,
                                    passes::PassContext &ctx, const PartitionState *state,
                                    const std::string &global) {
  // Equivalent to applying the patterns one after the other: a later
  // pattern never takes an op of an earlier match, and outlining does not
  // change how often the remaining nodes are used.
  Matching m{index,
             usesOf(fn, index),
             std::vector<char>(index.size(), 0),
             std::vector<int>(index.size(), -1),
             {},
             state,
             global};
  for (const TargetPattern &tp : patterns)
    TS_RETURN_IF_ERROR(findMatches(m, tp, log, ctx));
  Composites out;
  for (size_t i = 0; i < index.size(); ++i) {
    if (m.acceptedAt[i] < 0)
      continue;
    const Accepted &a = m.accepted[size_t(m.acceptedAt[i])];
    TS_ASSIGN_OR_RETURN(Expr call, bridge::outlineComposite(a.match, a.composite));
    out.emplace(index.node(i), std::move(call));
    ++ctx.stat("composites-formed");
  }
  return out;
}

Expected<Function> withComposites(const Function &fn, const NodeIndex &index,
                                  const Composites &composites) {
  // Rebuild bottom-up; each accepted root becomes its composite's call on
  // the rewritten inputs (interior nodes become dead).
  auto body = rewrite(index,
                      [&](size_t i, const Expr &, const Expr &rebuilt,
                          std::span<const Expr> replaced) -> Expected<Expr> {
                        auto it = composites.find(index.node(i));
                        if (it == composites.end())
                          return rebuilt;
                        const auto *call = it->second->as<CallNode>();
                        std::vector<Expr> args;
                        args.reserve(call->args().size());
                        for (const Expr &in : call->args()) {
                          int64_t p = index.position(in.get());
                          args.push_back(p >= 0 ? replaced[size_t(p)] : in);
                        }
                        return makeLocalCall(call->localFnExpr(), std::move(args), call->name(),
                                             call->span());
                      });
  if (!body.ok())
    return body.error();
  return makeFunction(fn->params(), std::move(body).value(), fn->attrs(), fn->name(), fn->span());
}

std::unique_ptr<passes::Pass> createMergeCompositePass(PartitionState *state) {
  return std::make_unique<MergeCompositePass>(state);
}

} // namespace tessera::partition
