//===- partition/report.cpp - Summary, report, DOT and HTML ---------------===//
//
// Renders a PartitionResult for people (report.h). The graph of a function
// is built once (buildPartitionGraph: region calls expanded into clusters of
// their op calls, composites expanded in place) and drawn twice: as DOT, and
// as inline SVG in the HTML report with a simple layered layout computed
// here (layer = longest path from the inputs; nodes in a layer in graph
// order), so the HTML needs no script and no network.
//
//===----------------------------------------------------------------------===//
#include "partition/report.h"

#include "ir/visit.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

namespace tessera::partition {

using namespace ir;

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

namespace {

struct Colors {
  const char *node;    // op fill
  const char *cluster; // region box fill
  const char *stroke;  // region box border, legend
};
constexpr Colors kPalette[] = {
    {"#93c5fd", "#dbeafe", "#1d4ed8"}, // blue
    {"#fdba74", "#ffedd5", "#c2410c"}, // orange
    {"#86efac", "#dcfce7", "#15803d"}, // green
    {"#d8b4fe", "#f3e8ff", "#7e22ce"}, // purple
    {"#fca5a5", "#fee2e2", "#b91c1c"}, // red
    {"#5eead4", "#ccfbf1", "#0f766e"}, // teal
};
constexpr size_t kPaletteSize = sizeof(kPalette) / sizeof(kPalette[0]);

const Colors &palette(size_t i) { return kPalette[i % kPaletteSize]; }

std::string plural(size_t n, std::string_view word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

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

std::string nodeName(const HostOp &h) { return h.node.empty() ? "(unnamed)" : h.node; }

/// Host ops grouped by reason, groups in order of first appearance.
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

std::string join(const std::vector<std::string> &v, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i)
    out += (i ? std::string(sep) : std::string()) + v[i];
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
  size_t counts[3] = {0, 0, 0};
  for (const HostOp &h : r.host)
    ++counts[size_t(reasonKind(h))];
  double pct = total ? 100.0 * double(r.offloadedOps) / double(total) : 0.0;
  return fmt::format(
      "Partitioned module '{}' among {}: {} ({}) with {} of {} ({:.1f}%); {} on the host "
      "({} unsupported by every target, {} declined by a checker, {} pruned).\n",
      r.module.name(), join(r.targets, ", "), plural(r.log.regions.size(), "region"),
      regionsPerTarget(r), r.offloadedOps, plural(size_t(total), "op"), pct,
      host == 1 ? "1 op stays" : fmt::format("{} ops stay", host), counts[0], counts[1],
      counts[2]);
}

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
  }
  out += fmt::format("\nHost ops ({}):\n", r.host.size());
  if (r.host.empty())
    out += "  (none)\n";
  for (const auto &[reason, ops] : groupByReason(r.host)) {
    out += fmt::format("  {} ({}):\n", reason, ops.size());
    for (const HostOp *h : ops)
      out += fmt::format("    @{}  {}  {}\n", h->function, nodeName(*h), h->op);
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

std::string nodeLabel(const PartitionGraph::Node &n) {
  if (n.kind != PartitionGraph::Kind::Op || n.name.empty())
    return n.label;
  return n.label + "\n" + n.name;
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

//===- HTML ------------------------------------------------------------------===//

namespace {

std::string htmlEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&quot;"; break;
    default: out += c;
    }
  }
  return out;
}

constexpr size_t kMaxDrawnNodes = 5000;
constexpr int kNodeW = 150, kNodeH = 40, kColW = 170, kRowH = 72, kMargin = 20;

/// Inline SVG of the graph with a layered layout.
std::string svgOf(const PartitionGraph &g) {
  const size_t n = g.nodes.size();
  std::vector<int> layer(n, 0);
  std::vector<std::vector<int>> preds(n);
  for (const auto &[from, to] : g.edges)
    preds[size_t(to)].push_back(from);
  // Edges always go from an earlier node to a later one (post order).
  for (size_t i = 0; i < n; ++i)
    for (int p : preds[i])
      layer[i] = std::max(layer[i], layer[size_t(p)] + 1);
  std::vector<int> col(n, 0);
  std::map<int, int> width; // nodes per layer so far
  int layers = 0, cols = 1;
  for (size_t i = 0; i < n; ++i) {
    col[i] = width[layer[i]]++;
    layers = std::max(layers, layer[i] + 1);
    cols = std::max(cols, col[i] + 1);
  }
  auto x = [&](size_t i) { return kMargin + col[i] * kColW; };
  auto y = [&](size_t i) { return kMargin + layer[i] * kRowH; };
  const int w = 2 * kMargin + cols * kColW, h = 2 * kMargin + layers * kRowH;

  std::string out = fmt::format(
      "<svg width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\">\n"
      "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"7\" "
      "markerHeight=\"7\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#555\"/></marker>"
      "</defs>\n",
      w, h, w, h);
  // Region boxes: the bounding box of their ops.
  for (size_t c = 0; c < g.clusters.size(); ++c) {
    int x0 = w, y0 = h, x1 = 0, y1 = 0;
    for (size_t i = 0; i < n; ++i)
      if (g.nodes[i].cluster == int(c)) {
        x0 = std::min(x0, x(i));
        y0 = std::min(y0, y(i));
        x1 = std::max(x1, x(i) + kNodeW);
        y1 = std::max(y1, y(i) + kNodeH);
      }
    if (x1 == 0)
      continue;
    const Colors &colr = palette(size_t(g.clusters[c].targetIndex));
    out += fmt::format("<g class=\"region\"><title>{}</title><rect x=\"{}\" y=\"{}\" width=\"{}\" "
                       "height=\"{}\" rx=\"8\" fill=\"{}\" fill-opacity=\"0.6\" stroke=\"{}\" "
                       "stroke-dasharray=\"5,3\"/><text x=\"{}\" y=\"{}\" class=\"rl\">{}</text></g>\n",
                       htmlEscape(g.clusters[c].symbol + " (" + g.clusters[c].target + ")"),
                       x0 - 8, y0 - 14, x1 - x0 + 16, y1 - y0 + 22, colr.cluster, colr.stroke,
                       x0 - 4, y0 - 4, htmlEscape(g.clusters[c].symbol));
  }
  for (const auto &[from, to] : g.edges)
    out += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#555\" "
                       "marker-end=\"url(#arrow)\"/>\n",
                       x(size_t(from)) + kNodeW / 2, y(size_t(from)) + kNodeH,
                       x(size_t(to)) + kNodeW / 2, y(size_t(to)));
  for (size_t i = 0; i < n; ++i) {
    const auto &nd = g.nodes[i];
    std::string fill = nd.cluster >= 0
                           ? palette(size_t(g.clusters[size_t(nd.cluster)].targetIndex)).node
                           : (nd.kind == PartitionGraph::Kind::Op ? "#ffffff" : "#e5e7eb");
    int rx = nd.kind == PartitionGraph::Kind::Op ? 6 : 20;
    out += fmt::format("<g class=\"node\"><title>{}</title><rect x=\"{}\" y=\"{}\" width=\"{}\" "
                       "height=\"{}\" rx=\"{}\" fill=\"{}\" stroke=\"#333\"/>",
                       htmlEscape(nodeLabel(nd)), x(i), y(i), kNodeW, kNodeH, rx, fill);
    std::string name = nd.name.size() > 22 ? "…" + nd.name.substr(nd.name.size() - 21) : nd.name;
    if (nd.kind == PartitionGraph::Kind::Op && !name.empty())
      out += fmt::format("<text x=\"{}\" y=\"{}\" class=\"op\">{}</text><text x=\"{}\" y=\"{}\" "
                         "class=\"nm\">{}</text>",
                         x(i) + kNodeW / 2, y(i) + 17, htmlEscape(nd.label), x(i) + kNodeW / 2,
                         y(i) + 32, htmlEscape(name));
    else
      out += fmt::format("<text x=\"{}\" y=\"{}\" class=\"op\">{}</text>", x(i) + kNodeW / 2,
                         y(i) + 25, htmlEscape(nd.label));
    out += "</g>\n";
  }
  return out + "</svg>\n";
}

} // namespace

std::string htmlReport(const PartitionResult &r, const PartitionGraph &g,
                       const std::string &title) {
  std::string out = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<title>Tessera partition: {}</title>\n<style>\n"
      "body {{ font-family: sans-serif; margin: 1.5em; color: #111; }}\n"
      "table {{ border-collapse: collapse; margin: 0.5em 0 1.5em; }}\n"
      "th, td {{ border: 1px solid #ccc; padding: 3px 8px; text-align: left; "
      "font-size: 13px; vertical-align: top; }}\n"
      "th {{ background: #f3f4f6; }}\n"
      ".legend span {{ display: inline-block; margin-right: 1.2em; }}\n"
      ".swatch {{ display: inline-block; width: 14px; height: 14px; border: 1px solid #333; "
      "vertical-align: middle; margin-right: 4px; }}\n"
      ".graph {{ overflow: auto; border: 1px solid #ddd; max-height: 80vh; }}\n"
      "svg text {{ font-family: sans-serif; text-anchor: middle; }}\n"
      "svg text.op {{ font-size: 13px; font-weight: bold; }}\n"
      "svg text.nm {{ font-size: 10px; fill: #333; }}\n"
      "svg text.rl {{ font-size: 10px; text-anchor: start; fill: #333; }}\n"
      "</style>\n</head>\n<body>\n<h1>Partition of {}</h1>\n<p>{}</p>\n",
      htmlEscape(title), htmlEscape(title), htmlEscape(summaryText(r)));

  // Legend: one swatch per target, then the host.
  out += "<div class=\"legend\">";
  for (size_t i = 0; i < r.targets.size(); ++i)
    out += fmt::format("<span><i class=\"swatch\" style=\"background:{}\"></i>{}</span>",
                       palette(i).node, htmlEscape(r.targets[i]));
  out += "<span><i class=\"swatch\" style=\"background:#ffffff\"></i>host</span></div>\n";

  out += "<h2>Graph</h2>\n<div class=\"graph\">\n";
  if (g.nodes.size() <= kMaxDrawnNodes)
    out += svgOf(g);
  else
    out += fmt::format("<p>The graph has {} nodes; only graphs of up to {} are drawn.</p>\n",
                       g.nodes.size(), kMaxDrawnNodes);
  out += "</div>\n";

  out += fmt::format("<h2>Regions ({})</h2>\n<table>\n<tr><th>symbol</th><th>target</th>"
                     "<th>ops</th><th>inputs</th><th>outputs</th><th>estimated FLOPs</th></tr>\n",
                     r.log.regions.size());
  for (const RegionInfo &reg : r.log.regions)
    out += fmt::format("<tr><td>@{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
                       "</tr>\n",
                       htmlEscape(reg.symbol), htmlEscape(reg.target), reg.ops,
                       htmlEscape(join(reg.inputs, ", ")), htmlEscape(join(reg.outputs, ", ")),
                       formatFlops(reg.flops));
  out += "</table>\n";

  out += fmt::format("<h2>Host ops ({})</h2>\n<table>\n<tr><th>reason</th><th>function</th>"
                     "<th>node</th><th>op</th></tr>\n",
                     r.host.size());
  for (const auto &[reason, ops] : groupByReason(r.host))
    for (size_t i = 0; i < ops.size(); ++i) {
      out += "<tr>";
      if (i == 0)
        out += fmt::format("<td rowspan=\"{}\">{}</td>", ops.size(), htmlEscape(reason));
      out += fmt::format("<td>@{}</td><td>{}</td><td>{}</td></tr>\n",
                         htmlEscape(ops[i]->function), htmlEscape(nodeName(*ops[i])),
                         htmlEscape(ops[i]->op));
    }
  out += "</table>\n</body>\n</html>\n";
  return out;
}

} // namespace tessera::partition
