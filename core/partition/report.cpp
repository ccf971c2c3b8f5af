//===- partition/report.cpp - Summary, report, graph and DOT --------------===//
//
// Renders a PartitionResult for people (report.h). The graph of a function
// is built once (buildPartitionGraph: region calls expanded into clusters of
// their op calls, composites expanded in place) and drawn twice: as DOT
// here, and as inline SVG in the HTML report (report_html.cpp). The text
// report lists regions, host ops by reason, and what became of each
// pattern's matches.
//
//===----------------------------------------------------------------------===//
#include "partition/report.h"
#include "partition/report_internal.h"

#include "ir/visit.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

namespace tessera::partition {

using namespace ir;
using namespace detail;

//===- Small helpers -------------------------------------------------------===//

std::string formatFlops(double flops) {
  static const char *units[] = {"kFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP"};
  if (flops < 1000)
    return fmt::format("{:.0f} FLOP", flops);
  int u = -1;
  while (flops >= 1000 && u < 4) {
    flops /= 1000;
    ++u;
  }
  return fmt::format("{:.{}f} {}", flops, flops < 10 ? 2 : flops < 100 ? 1 : 0, units[u]);
}

namespace detail {

namespace {
constexpr Colors kPalette[] = {
    {"#93c5fd", "#dbeafe", "#1d4ed8"}, // blue
    {"#fdba74", "#ffedd5", "#c2410c"}, // orange
    {"#86efac", "#dcfce7", "#15803d"}, // green
    {"#d8b4fe", "#f3e8ff", "#7e22ce"}, // purple
    {"#fca5a5", "#fee2e2", "#b91c1c"}, // red
    {"#5eead4", "#ccfbf1", "#0f766e"}, // teal
};
constexpr size_t kPaletteSize = sizeof(kPalette) / sizeof(kPalette[0]);
} // namespace

const Colors &palette(size_t i) { return kPalette[i % kPaletteSize]; }

std::string plural(size_t n, std::string_view word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

namespace {

/// Why a host op stays there, as one line; calls of the same reason group.
std::string reasonText(const HostOp &h) {
  for (auto it = h.decisions.rbegin(); it != h.decisions.rend(); ++it)
    if (it->kind == HostDecision::Kind::Pruned)
      return fmt::format("pruned from a {} region: {}", it->target, it->reason);
  std::string declined;
  for (const HostDecision &d : h.decisions)
    if (d.kind == HostDecision::Kind::Declined)
      declined += fmt::format("{}declined by {}: {}", declined.empty() ? "" : "; ", d.target,
                              d.reason);
  if (!declined.empty())
    return declined;
  for (const HostDecision &d : h.decisions)
    if (d.kind == HostDecision::Kind::NoTarget)
      return d.reason.empty() ? "no requested target supports the op" : d.reason;
  return "no requested target claimed it";
}

HostDecision::Kind reasonKind(const HostOp &h) {
  bool declined = false;
  for (const HostDecision &d : h.decisions) {
    if (d.kind == HostDecision::Kind::Pruned)
      return d.kind;
    declined |= d.kind == HostDecision::Kind::Declined;
  }
  return declined ? HostDecision::Kind::Declined : HostDecision::Kind::NoTarget;
}

} // namespace

std::string nodeName(const HostOp &h) { return h.node.empty() ? "(unnamed)" : h.node; }

std::vector<std::pair<std::string, std::vector<const HostOp *>>>
groupByReason(const std::vector<HostOp> &host) {
  std::vector<std::pair<std::string, std::vector<const HostOp *>>> groups;
  std::unordered_map<std::string, size_t> index;
  for (const HostOp &h : host) {
    std::string reason = reasonText(h);
    auto [it, fresh] = index.emplace(reason, groups.size());
    if (fresh)
      groups.push_back({reason, {}});
    groups[it->second].second.push_back(&h);
  }
  return groups;
}

std::string join(const std::vector<std::string> &v, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i)
    out += (i ? std::string(sep) : std::string()) + v[i];
  return out;
}

std::string nodeLabel(const PartitionGraph::Node &n) {
  if (n.kind != PartitionGraph::Kind::Op || n.name.empty())
    return n.label;
  return n.label + "\n" + n.name;
}

std::vector<PatternSummary> summarizePatterns(const std::vector<PatternRecord> &records) {
  std::vector<PatternSummary> out;
  std::map<std::pair<std::string, std::string>, size_t> index;
  for (const PatternRecord &r : records) {
    auto [it, fresh] = index.emplace(std::pair{r.target, r.pattern}, out.size());
    if (fresh)
      out.push_back({r.target, r.pattern, 0, 0, 0, nullptr, {}});
    PatternSummary &s = out[it->second];
    switch (r.kind) {
    case PatternRecord::Kind::Accepted:
      s.accepted += r.count;
      s.composites = &r;
      break;
    case PatternRecord::Kind::Vetoed: s.vetoed += r.count; break;
    case PatternRecord::Kind::Skipped: s.skipped += r.count; break;
    }
  }
  for (const PatternRecord &r : records)
    if (r.kind == PatternRecord::Kind::Vetoed && r.count > 0)
      out[index[{r.target, r.pattern}]].refusals.push_back(&r);
  for (const PatternRecord &r : records)
    if (r.kind == PatternRecord::Kind::Skipped && r.count > 0)
      out[index[{r.target, r.pattern}]].refusals.push_back(&r);
  return out;
}

std::string refusalText(const PatternRecord &r) {
  return fmt::format("{}: {}", r.kind == PatternRecord::Kind::Vetoed ? "vetoed" : "skipped",
                     r.reason);
}

std::string patternNodes(const PatternRecord &r) {
  std::string out = join(r.nodes, ", ");
  if (r.count > int64_t(r.nodes.size()))
    out += fmt::format(", ... and {} more", r.count - int64_t(r.nodes.size()));
  return out;
}

} // namespace detail

namespace {

/// Regions per target, in target order: "json: 2, dnnl: 1".
std::string regionsPerTarget(const PartitionResult &r) {
  std::vector<std::string> order = r.targets;
  std::map<std::string, size_t> count;
  for (const RegionInfo &g : r.log.regions) {
    if (!count[g.target]++ && std::find(order.begin(), order.end(), g.target) == order.end())
      order.push_back(g.target);
  }
  std::string out;
  for (const std::string &t : order)
    out += fmt::format("{}{}: {}", out.empty() ? "" : ", ", t, count[t]);
  return out;
}

} // namespace

std::string targetColor(size_t index) { return palette(index).node; }

//===- The graph ------------------------------------------------------------===//

namespace {

/// What a value of the drawn function comes from: the graph nodes producing
/// it, and per tuple field the same (so that x.1 picks the right producer).
struct Val {
  std::vector<int> ids;
  std::vector<Val> fields;
};

class GraphBuilder {
public:
  GraphBuilder(const Module &m, const std::vector<std::string> &targets)
      : m_(m), targets_(targets) {}

  Expected<PartitionGraph> build(const std::string &function) {
    Function fn = m_.find(function);
    if (!fn)
      return Error::format("the partitioned module has no function '@{}' to draw", function);
    std::unordered_map<const ExprNode *, Val> params;
    for (const Var &p : fn->params())
      params[p.get()] = Val{{add(PartitionGraph::Kind::Input, p->name(), p->name(), -1)}, {}};
    TS_ASSIGN_OR_RETURN(Val result, expand(fn->body(), params, -1));
    auto output = [&](const Val &v, const std::string &label) {
      int id = add(PartitionGraph::Kind::Output, label, "", -1);
      for (int from : v.ids)
        edge(from, id);
    };
    if (fn->resultType().isTuple() && result.fields.size() == fn->resultType().fields().size()) {
      for (size_t i = 0; i < result.fields.size(); ++i)
        output(result.fields[i], fmt::format("output {}", i));
    } else {
      output(result, "output");
    }
    return std::move(g_);
  }

private:
  int add(PartitionGraph::Kind kind, std::string label, std::string name, int cluster) {
    g_.nodes.push_back({kind, std::move(label), std::move(name), cluster});
    return int(g_.nodes.size() - 1);
  }
  void edge(int from, int to) {
    if (edges_.insert({from, to}).second)
      g_.edges.push_back({from, to});
  }
  int targetIndex(const std::string &t) {
    auto it = std::find(targets_.begin(), targets_.end(), t);
    if (it != targets_.end())
      return int(it - targets_.begin());
    targets_.push_back(t);
    return int(targets_.size() - 1);
  }
  /// A value whose every field comes from node `id` (calls with tuple results).
  static Val whole(int id, const Type &t) {
    Val v{{id}, {}};
    if (t.isTuple())
      for (const Type &f : t.fields())
        v.fields.push_back(whole(id, f));
    return v;
  }

  /// Adds the nodes of `body` (parameters bound by `params`) in `cluster`.
  /// Recurses only into region and composite functions, never on the depth
  /// of a graph.
  Expected<Val> expand(const Expr &body, const std::unordered_map<const ExprNode *, Val> &params,
                       int cluster) {
    std::unordered_map<const ExprNode *, Val> vals;
    auto valOf = [&](const Expr &e) -> const Val & {
      static const Val kNone;
      auto it = vals.find(e.get());
      return it == vals.end() ? kNone : it->second;
    };
    for (const Expr &e : postOrderExprs(body, /*intoFunctions=*/false)) {
      const ExprNode *n = e.get();
      Val v;
      if (n->as<VarNode>()) {
        if (auto it = params.find(n); it != params.end())
          v = it->second;
      } else if (const auto *t = n->as<TupleNode>()) {
        for (const Expr &f : t->fields()) {
          const Val &fv = valOf(f);
          v.ids.insert(v.ids.end(), fv.ids.begin(), fv.ids.end());
          v.fields.push_back(fv);
        }
      } else if (const auto *g = n->as<TupleGetItemNode>()) {
        const Val &tv = valOf(g->tuple());
        v = size_t(g->index()) < tv.fields.size() ? tv.fields[size_t(g->index())] : tv;
      } else if (const auto *c = n->as<CallNode>()) {
        TS_ASSIGN_OR_RETURN(v, call(*c, valOf, cluster));
      }
      vals[n] = std::move(v);
    }
    return valOf(body);
  }

  template <typename ValOf> Expected<Val> call(const CallNode &c, ValOf &valOf, int cluster) {
    auto bind = [&](const std::vector<Var> &ps) {
      std::unordered_map<const ExprNode *, Val> bound;
      for (size_t i = 0; i < ps.size() && i < c.args().size(); ++i)
        bound[ps[i].get()] = valOf(c.args()[i]);
      return bound;
    };
    if (const FunctionNode *local = c.localFn())
      return expand(local->body(), bind(local->params()), cluster);
    if (!c.global().empty()) {
      Function g = m_.find(c.global());
      if (g && g->attrs().has(kCompilerAttr) && cluster < 0) {
        std::string target = g->attrs().getString(kCompilerAttr);
        g_.clusters.push_back({c.global(), target, targetIndex(target)});
        return expand(g->body(), bind(g->params()), int(g_.clusters.size() - 1));
      }
    }
    int id = add(PartitionGraph::Kind::Op, c.op() ? c.op()->name : "@" + c.global(), c.name(),
                 cluster);
    for (const Expr &a : c.args())
      for (int from : valOf(a).ids)
        edge(from, id);
    return whole(id, c.type());
  }

  const Module &m_;
  std::vector<std::string> targets_;
  PartitionGraph g_;
  std::set<std::pair<int, int>> edges_;
};

} // namespace

Expected<PartitionGraph> buildPartitionGraph(const Module &m, const std::string &function,
                                             const std::vector<std::string> &targets) {
  return GraphBuilder(m, targets).build(function);
}

//===- Text ------------------------------------------------------------------===//

std::string summaryText(const PartitionResult &r) {
  const size_t host = r.host.size();
  const int64_t total = r.offloadedOps + int64_t(host);
  size_t counts[3] = {0, 0, 0}, symbolic = 0;
  // A reason that says only "not offered" (several targets' reasons are
  // joined: "a: why; b: why").
  auto notOffered = [](std::string_view reason) {
    for (size_t at = 0; at <= reason.size();) {
      const size_t end = std::min(reason.find("; ", at), reason.size());
      const std::string_view part = reason.substr(at, end - at);
      if (!part.ends_with(kSymbolicDecline))
        return false;
      at = end + 2;
    }
    return true;
  };
  for (const HostOp &h : r.host) {
    // Ops over symbolic dims were not offered: not a checker's decline.
    if (std::any_of(h.decisions.begin(), h.decisions.end(),
                    [&](const HostDecision &d) { return notOffered(d.reason); })) {
      ++symbolic;
      continue;
    }
    ++counts[size_t(reasonKind(h))];
  }
  double pct = total ? 100.0 * double(r.offloadedOps) / double(total) : 0.0;
  std::string out = fmt::format(
      "Partitioned module '{}' among {}: {} ({}) with {} of {} ({:.1f}%); {} on the host "
      "({} unsupported by every target, {} declined by a checker, {} pruned{}).",
      r.module.name(), join(r.targets, ", "), plural(r.log.regions.size(), "region"),
      regionsPerTarget(r), r.offloadedOps, plural(size_t(total), "op"), pct,
      host == 1 ? "1 op stays" : fmt::format("{} ops stay", host), counts[0], counts[1],
      counts[2],
      symbolic ? fmt::format(", {} not offered: symbolic dims the targets do not take", symbolic)
               : std::string());
  // Pattern matches, only when a plugin was asked about one.
  int64_t accepted = 0, vetoed = 0, skipped = 0;
  for (const PatternSummary &p : summarizePatterns(r.log.patterns)) {
    accepted += p.accepted;
    vetoed += p.vetoed;
    skipped += p.skipped;
  }
  if (int64_t matches = accepted + vetoed + skipped)
    out += fmt::format(" {} of {} pattern {} became composites ({} vetoed by a checker{}).",
                       accepted, matches, matches == 1 ? "match" : "matches", vetoed,
                       skipped ? fmt::format(", {} skipped", skipped) : std::string());
  return out + "\n";
}

namespace {

/// The checkers' notes on the ops and matches they took (ABI 1.6: what will
/// run them), grouped by target, op and note, each call once.
std::string implementationsText(const std::vector<OpNote> &notes) {
  if (notes.empty())
    return "";
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<std::string>> groups;
  std::set<std::tuple<std::string, std::string, std::string>> seen;
  for (const OpNote &n : notes)
    if (seen.insert({n.target, n.op, n.node}).second)
      groups[{n.target, n.op, n.note}].push_back(n.node);
  std::string out = "\nImplementations (what each plugin said will run the ops it took):\n";
  constexpr size_t kShown = 6;
  for (const auto &[key, nodes] : groups) {
    const auto &[target, op, note] = key;
    std::vector<std::string> shown(nodes.begin(),
                                   nodes.begin() + std::ptrdiff_t(std::min(nodes.size(), kShown)));
    out += fmt::format("  {}: {}: {} ({}): {}{}\n", target, op, note, nodes.size(),
                       join(shown, ", "),
                       nodes.size() > kShown ? fmt::format(", ... and {} more", nodes.size() - kShown)
                                             : std::string());
  }
  return out;
}

} // namespace

std::string reportText(const PartitionResult &r) {
  std::string out = summaryText(r);
  out += fmt::format("\nRegions ({}):\n", r.log.regions.size());
  if (r.log.regions.empty())
    out += "  (none)\n";
  for (const RegionInfo &g : r.log.regions) {
    out += fmt::format("  @{}  target {}, {}, {}\n", g.symbol, g.target,
                       plural(size_t(g.ops), "op"), formatFlops(g.flops));
    out += fmt::format("    inputs:  {}\n", g.inputs.empty() ? "(none)" : join(g.inputs, ", "));
    out += fmt::format("    outputs: {}\n", join(g.outputs, ", "));
    if (!g.placement.empty())
      out += fmt::format("    kept by {}\n", g.placement);
  }
  out += implementationsText(r.log.notes);
  out += fmt::format("\nHost ops ({}):\n", r.host.size());
  if (r.host.empty())
    out += "  (none)\n";
  for (const auto &[reason, ops] : groupByReason(r.host)) {
    out += fmt::format("  {} ({}):\n", reason, ops.size());
    for (const HostOp *h : ops)
      out += fmt::format("    @{}  {}  {}\n", h->function, nodeName(*h), h->op);
  }
  // What became of each pattern's matches (only when a target has patterns).
  std::vector<PatternSummary> patterns = summarizePatterns(r.log.patterns);
  if (!patterns.empty())
    out += fmt::format("\nPatterns ({}):\n", patterns.size());
  for (const PatternSummary &p : patterns) {
    int64_t matched = p.accepted + p.vetoed + p.skipped;
    out += fmt::format("  {}.{}: ", p.target, p.pattern);
    if (!matched) {
      out += "no match\n";
      continue;
    }
    out += fmt::format("{} matched -> {}, {} vetoed{}\n", matched,
                       plural(size_t(p.accepted), "composite"), p.vetoed,
                       p.skipped ? fmt::format(", {} skipped", p.skipped) : std::string());
    if (p.accepted)
      out += fmt::format("    composites ({}): {}\n", p.accepted, patternNodes(*p.composites));
    for (const PatternRecord *x : p.refusals)
      out += fmt::format("    {} ({}): {}\n", refusalText(*x), x->count, patternNodes(*x));
  }
  return out;
}

//===- DOT -------------------------------------------------------------------===//

namespace {

std::string dotQuote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

} // namespace

std::string dotGraph(const PartitionGraph &g) {
  std::string out = "digraph partition {\n  rankdir=TB;\n"
                    "  node [shape=box, style=\"rounded\", fontname=\"Helvetica\"];\n";
  auto nodeLine = [&](size_t i, std::string_view indent) {
    const PartitionGraph::Node &n = g.nodes[i];
    std::string attrs = "label=" + dotQuote(nodeLabel(n));
    if (n.kind == PartitionGraph::Kind::Input)
      attrs += ", shape=invhouse";
    else if (n.kind == PartitionGraph::Kind::Output)
      attrs += ", shape=house";
    else if (n.cluster >= 0)
      attrs += fmt::format(", style=\"rounded,filled\", fillcolor=\"{}\"",
                           palette(size_t(g.clusters[size_t(n.cluster)].targetIndex)).node);
    out += fmt::format("{}n{} [{}];\n", indent, i, attrs);
  };
  std::vector<std::vector<size_t>> members(g.clusters.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (g.nodes[i].cluster >= 0)
      members[size_t(g.nodes[i].cluster)].push_back(i);
    else
      nodeLine(i, "  ");
  }
  for (size_t c = 0; c < g.clusters.size(); ++c) {
    const auto &cl = g.clusters[c];
    const Colors &col = palette(size_t(cl.targetIndex));
    out += fmt::format("  subgraph cluster_{} {{\n    label={};\n    style=\"filled,rounded\"; "
                       "fillcolor=\"{}\"; color=\"{}\";\n",
                       c, dotQuote(cl.symbol + " (" + cl.target + ")"), col.cluster, col.stroke);
    for (size_t i : members[c])
      nodeLine(i, "    ");
    out += "  }\n";
  }
  for (const auto &[from, to] : g.edges)
    out += fmt::format("  n{} -> n{};\n", from, to);
  return out + "}\n";
}


} // namespace tessera::partition
