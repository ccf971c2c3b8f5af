//===- partition/merge_composite.cpp - Outline pattern matches -----------===//
//
// The merge-composite pass: for each global function (functions already
// partitioned, with a Compiler attribute, are left alone), each target in
// priority order and each of its patterns in declared order, every match of
// the pattern is outlined as a call of a local function
// Composite="<plugin>.<pattern>" (partition/plugin_bridge.h,
// outlineComposite).
//
// Matches are tried at every op call in reverse post-order, so a root is
// tried before its operands and the larger (outer) match wins. A match is
// skipped when one of its interior nodes is used outside it (outlining
// would duplicate it) or when it overlaps a match already taken; the
// plugin's check_pattern may veto it (counted, not logged: the report lists
// ops left on the host, which annotate-target records). A later pattern
// never takes an op of an earlier match; all matches are outlined in one
// rebuild of the function.
//
// Preconditions: a PartitionState (--target). Patterns are parsed here; a
// pattern that does not parse is an error naming the plugin and the pattern.
//
//===----------------------------------------------------------------------===//
#include "partition/partition.h"

#include "ir/visit.h"
#include "partition/pattern.h"
#include "partition/plugin_bridge.h"
#include "plugin/registry.h"

#include <unordered_map>
#include <unordered_set>

namespace tessera::partition {

using namespace ir;

namespace {

/// One target's parsed pattern.
struct TargetPattern {
  const Target *target;
  Pattern pattern;
};

class MergeCompositePass : public passes::Pass {
public:
  std::string_view name() const override { return "merge-composite"; }
  std::string_view description() const override {
    return "Outline each target's pattern matches as composite functions";
  }

  Status run(Module &m, passes::PassContext &ctx) override {
    TS_ASSIGN_OR_RETURN(PartitionState * state, requireState(ctx, name()));
    // Parse every pattern first: a bad pattern fails the pass whatever the IR.
    std::vector<TargetPattern> patterns;
    for (const Target &t : state->targets) {
      for (const auto &[patName, text] : t.plugin->patterns()) {
        auto parsed = parsePattern(patName, text);
        if (!parsed.ok())
          return Error::format("plugin '{}': {}", t.name, parsed.error().message());
        patterns.push_back({&t, std::move(parsed).value()});
      }
    }
    if (patterns.empty())
      return okStatus();

    auto functions = m.functions();
    for (const auto &[global, fn] : functions) {
      if (fn->attrs().has(kCompilerAttr))
        continue; // already partitioned
      auto next = outline(fn, patterns, ctx);
      if (!next.ok())
        return std::move(next).withContext(fmt::format("in function '@{}'", global)).error();
      if (*next != fn)
        m.set(global, std::move(next).value());
    }
    return okStatus();
  }

private:
  /// An accepted match and the composite it becomes.
  struct Accepted {
    PatternMatch match;
    std::string composite; // "<plugin>.<pattern>"
  };

  /// Finds the matches of every pattern, in order, then outlines them all in
  /// one rebuild. Equivalent to applying the patterns one after the other:
  /// a later pattern never takes an op of an earlier match, and outlining
  /// does not change how often the remaining nodes are used.
  Expected<Function> outline(const Function &fn, const std::vector<TargetPattern> &patterns,
                             passes::PassContext &ctx) {
    std::vector<Expr> nodes = postOrderExprs(fn->body(), /*intoFunctions=*/false);
    std::unordered_map<const ExprNode *, int> uses = useCounts(fn->body());
    std::unordered_set<const ExprNode *> taken;              // ops of accepted matches
    std::unordered_map<const ExprNode *, Accepted> accepted; // by root
    for (const TargetPattern &tp : patterns)
      TS_RETURN_IF_ERROR(findMatches(nodes, uses, tp, taken, accepted, ctx));
    if (accepted.empty())
      return fn;

    // Rebuild bottom-up; each accepted root becomes the composite's call on
    // the rewritten inputs (interior nodes become dead).
    std::unordered_map<const ExprNode *, Expr> rewritten;
    auto body = rewrite(
        fn->body(),
        [&](const Expr &original, const Expr &rebuilt) -> Expected<Expr> {
          Expr result = rebuilt;
          auto found = accepted.find(original.get());
          if (found != accepted.end()) {
            const PatternMatch &match = found->second.match;
            TS_ASSIGN_OR_RETURN(Expr call, outlineComposite(match, found->second.composite));
            std::vector<Expr> operands{call->as<CallNode>()->localFnExpr()};
            for (const Expr &in : match.inputs) {
              auto r = rewritten.find(in.get());
              operands.push_back(r != rewritten.end() ? r->second : in);
            }
            TS_ASSIGN_OR_RETURN(result, withOperands(call, std::move(operands)));
            ++ctx.stat("composites-formed");
          }
          if (result != original)
            rewritten[original.get()] = result;
          return result;
        },
        /*intoFunctions=*/false);
    if (!body.ok())
      return body.error();
    return makeFunction(fn->params(), std::move(body).value(), fn->attrs(), fn->name(), fn->span());
  }

  /// The accepted matches of one pattern, tried at every op call not yet
  /// taken, roots before their operands.
  static Status findMatches(const std::vector<Expr> &nodes,
                            const std::unordered_map<const ExprNode *, int> &uses,
                            const TargetPattern &tp,
                            std::unordered_set<const ExprNode *> &taken,
                            std::unordered_map<const ExprNode *, Accepted> &accepted,
                            passes::PassContext &ctx) {
    const std::string composite = tp.target->name + "." + tp.pattern.name;
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      const Expr &node = *it;
      const auto *call = node->as<CallNode>();
      if (!call || call->calleeKind() != CallNode::CalleeKind::Op || taken.count(node.get()))
        continue;
      std::optional<PatternMatch> match = matchPattern(tp.pattern, node);
      if (!match)
        continue;
      if (!usableMatch(*match, uses, taken)) {
        ++ctx.stat("matches-skipped");
        continue;
      }
      TS_ASSIGN_OR_RETURN(OpDescList descs, OpDescList::fromCalls(match->ops));
      plugin::CheckResult verdict = tp.target->plugin->checkPattern(
          tp.pattern.name, std::span<const tessera_op_desc_t *const>(descs.data(), descs.size()));
      if (!verdict.supported) {
        ++ctx.stat("matches-vetoed");
        continue;
      }
      for (const Expr &op : match->ops)
        taken.insert(op.get());
      accepted.emplace(node.get(), Accepted{std::move(*match), composite});
    }
    return okStatus();
  }

  /// No overlap with accepted matches, and no interior node used outside.
  static bool usableMatch(const PatternMatch &match,
                          const std::unordered_map<const ExprNode *, int> &uses,
                          const std::unordered_set<const ExprNode *> &taken) {
    for (const Expr &op : match.ops)
      if (taken.count(op.get()))
        return false;
    // Uses of each interior node from inside the match.
    std::unordered_map<const ExprNode *, int> inside;
    for (const Expr &in : match.interior)
      inside[in.get()] = 0;
    for (const Expr &op : match.ops)
      for (const Expr &x : op->operands()) {
        auto it = inside.find(x.get());
        if (it != inside.end())
          ++it->second;
      }
    for (const auto &[node, count] : inside) {
      auto u = uses.find(node);
      if (u != uses.end() && u->second > count)
        return false;
    }
    return true;
  }
};

} // namespace

std::unique_ptr<passes::Pass> createMergeCompositePass() {
  return std::make_unique<MergeCompositePass>();
}

} // namespace tessera::partition
