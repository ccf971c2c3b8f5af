//===- partition/report_html.cpp - The HTML report -------------------------===//
//
// htmlReport (report.h): one self-contained file, inline CSS, SVG and a
// small script, nothing from the network. The graph is drawn with a layered
// layout computed here (layer = longest path from the inputs; nodes in a
// layer in graph order). A long graph (a transformer is a chain of
// thousands of layers) is wrapped into bands of consecutive layers placed
// side by side, like newspaper columns, so that the drawing is about as
// wide as tall instead of one column tens of thousands of pixels high.
// Edges longer than one layer are routed through the empty channels
// between rows, columns and bands (dashed between bands), never across a
// node. The script adds what a large graph needs: a search box (op or node
// name: highlights the matches, Enter / Shift+Enter steps through them,
// scrolling each into view), zoom (buttons, ctrl+wheel, fit to width; the
// SVG is redrawn at the new size, not scaled as a bitmap) and collapsible
// regions (click a region's box or its row in the regions table: its ops
// and inner edges are hidden and the box, filled, names the region and its
// op count; or collapse them all). Names too long for their box are cut on
// the right with an ellipsis; the node's tooltip (<title>) has the full
// name. The tables list the pattern matches, the regions, and the host ops
// by reason (large groups folded; click a node name to find it).
// The output is deterministic: the same result gives the same bytes.
//
//===----------------------------------------------------------------------===//
#include "partition/report.h"
#include "partition/report_internal.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace tessera::partition {

using namespace detail;

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

constexpr const char *kEllipsis = "\xe2\x80\xa6"; // U+2026

/// `s` when it has at most `maxChars` characters (UTF-8 code points);
/// otherwise its first maxChars - 1 and an ellipsis: a name is cut on the
/// right, where the distinguishing suffix of an ONNX path usually is not.
std::string cutRight(const std::string &s, size_t maxChars) {
  size_t chars = 0, cut = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) == 0x80)
      continue; // a continuation byte
    if (chars + 1 == maxChars)
      cut = i;
    ++chars;
  }
  if (chars <= maxChars)
    return s;
  return s.substr(0, cut) + kEllipsis;
}

constexpr size_t kMaxDrawnNodes = 20000;
constexpr int kNodeW = 150, kNodeH = 40, kColW = 170, kRowH = 72, kMargin = 20;
constexpr int kTop = 36; // above the first row: region labels, and a lane for edges
constexpr int kBandGap = 60;      // between two bands of layers
constexpr int kWrapMinLayers = 40; // fewer layers: one band
constexpr double kAspect = 1.6;    // the width / height the bands aim at
constexpr size_t kOpChars = 17, kNameChars = 24; // what fits in a node box

/// Where each node is drawn.
struct Layout {
  std::vector<int> x, y, band, layer;
  std::vector<int> bandX; // left of each band
  int width = 0, height = 0;
};

Layout layoutOf(const PartitionGraph &g) {
  const size_t n = g.nodes.size();
  std::vector<int> layer(n, 0);
  std::vector<std::vector<int>> preds(n);
  for (const auto &[from, to] : g.edges)
    preds[size_t(to)].push_back(from);
  // Edges always go from an earlier node to a later one (post order).
  int layers = 0;
  for (size_t i = 0; i < n; ++i) {
    for (int p : preds[i])
      layer[i] = std::max(layer[i], layer[size_t(p)] + 1);
    layers = std::max(layers, layer[i] + 1);
  }
  std::vector<int> col(n, 0), perLayer(size_t(layers), 0);
  int cols = 1;
  for (size_t i = 0; i < n; ++i) {
    col[i] = perLayer[size_t(layer[i])]++;
    cols = std::max(cols, col[i] + 1);
  }
  // Bands of `per` layers each, as many as make the drawing about kAspect
  // times as wide as it is tall.
  int bands = 1;
  if (layers > kWrapMinLayers) {
    double tall = double(layers) * kRowH, wide = double(cols) * kColW;
    bands = std::clamp(int(std::lround(std::sqrt(kAspect * tall / wide))), 1, layers);
  }
  const int per = std::max(1, (layers + bands - 1) / bands);
  bands = std::max(1, (layers + per - 1) / per);
  std::vector<int> bandCols(size_t(bands), 1);
  for (int l = 0; l < layers; ++l)
    bandCols[size_t(l / per)] = std::max(bandCols[size_t(l / per)], perLayer[size_t(l)]);

  Layout out;
  out.bandX.resize(size_t(bands));
  int left = kMargin;
  for (int b = 0; b < bands; ++b) {
    out.bandX[size_t(b)] = left;
    left += bandCols[size_t(b)] * kColW + kBandGap;
  }
  out.width = left - kBandGap + kMargin;
  out.height = kTop + per * kRowH + kMargin;
  out.x.resize(n);
  out.y.resize(n);
  out.band.resize(n);
  out.layer = layer;
  for (size_t i = 0; i < n; ++i) {
    int b = layer[i] / per;
    out.band[i] = b;
    out.x[i] = out.bandX[size_t(b)] + col[i] * kColW;
    out.y[i] = kTop + (layer[i] - b * per) * kRowH;
  }
  return out;
}

/// Inline SVG of the graph. Regions are <g class="region" id="rC">, the
/// nodes of region C have class mC and the edges inside it class iC (what
/// the script hides when the region is collapsed).
std::string svgOf(const PartitionGraph &g) {
  const size_t n = g.nodes.size();
  const Layout L = layoutOf(g);
  std::string out = fmt::format(
      "<svg id=\"pg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\">\n"
      "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"7\" "
      "markerHeight=\"7\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#555\"/></marker>"
      "</defs>\n",
      L.width, L.height, L.width, L.height);

  // Region boxes: in each band, the bounding box of their ops there.
  struct Box {
    int x0 = 1 << 30, y0 = 1 << 30, x1 = 0, y1 = 0;
  };
  std::vector<std::map<int, Box>> boxes(g.clusters.size());
  std::vector<size_t> opsIn(g.clusters.size(), 0);
  for (size_t i = 0; i < n; ++i) {
    int c = g.nodes[i].cluster;
    if (c < 0)
      continue;
    ++opsIn[size_t(c)];
    Box &b = boxes[size_t(c)][L.band[i]];
    b.x0 = std::min(b.x0, L.x[i]);
    b.y0 = std::min(b.y0, L.y[i]);
    b.x1 = std::max(b.x1, L.x[i] + kNodeW);
    b.y1 = std::max(b.y1, L.y[i] + kNodeH);
  }
  for (size_t c = 0; c < g.clusters.size(); ++c) {
    if (boxes[c].empty())
      continue;
    const auto &cl = g.clusters[c];
    const Colors &colr = palette(size_t(cl.targetIndex));
    out += fmt::format("<g class=\"region\" id=\"r{}\" data-r=\"{}\" data-sym=\"{}\"><title>{} "
                       "({}, {})</title>",
                       c, c, htmlEscape(cl.symbol), htmlEscape(cl.symbol), htmlEscape(cl.target),
                       plural(opsIn[c], "op"));
    for (const auto &[band, b] : boxes[c]) {
      const int w = b.x1 - b.x0 + 16, h = b.y1 - b.y0 + 22;
      const size_t chars = size_t(std::max(8, w / 6));
      out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"8\" fill=\"{}\" "
                         "fill-opacity=\"0.6\" stroke=\"{}\" stroke-dasharray=\"5,3\"/>"
                         "<text x=\"{}\" y=\"{}\" class=\"rl\">{}</text>"
                         "<text x=\"{}\" y=\"{}\" class=\"rs\">{}<tspan x=\"{}\" dy=\"15\">{}, "
                         "{}</tspan></text>",
                         b.x0 - 8, b.y0 - 14, w, h, colr.cluster, colr.stroke, b.x0 - 4, b.y0 - 4,
                         htmlEscape(cutRight(cl.symbol, chars)), b.x0 - 8 + w / 2,
                         b.y0 - 14 + h / 2 - 2, htmlEscape(cutRight("@" + cl.symbol, chars)),
                         b.x0 - 8 + w / 2, htmlEscape(cl.target), plural(opsIn[c], "op"));
    }
    out += "</g>\n";
  }
  // Edges to the next layer are straight lines. Longer ones are routed
  // through the empty channels, never across a node: down into the channel
  // below the source's row, along it to the gap right of the source's
  // column (same band) or of its band, along that gap (and, to a band
  // further on, the top margin and the gap left of the target's band) to the
  // channel above the target, along it and down into the target. A small
  // offset per edge keeps parallel runs apart.
  const int channel = (kRowH - kNodeH) / 2;
  for (size_t e = 0; e < g.edges.size(); ++e) {
    const size_t f = size_t(g.edges[e].first), t = size_t(g.edges[e].second);
    const int x1 = L.x[f] + kNodeW / 2, y1 = L.y[f] + kNodeH, x2 = L.x[t] + kNodeW / 2,
              y2 = L.y[t];
    const int cf = g.nodes[f].cluster;
    std::string cls = cf >= 0 && cf == g.nodes[t].cluster ? fmt::format(" class=\"i{}\"", cf) : "";
    const int off = int(e % 5) * 3 - 6; // -6..6
    if (L.band[f] == L.band[t] && L.layer[t] == L.layer[f] + 1) {
      out += fmt::format("<line{} x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#555\" "
                         "marker-end=\"url(#arrow)\"/>\n",
                         cls, x1, y1, x2, y2);
      continue;
    }
    const int cy1 = y1 + channel + off / 2, cy2 = y2 - channel + off / 2;
    std::string d;
    if (L.band[f] == L.band[t]) {
      d = fmt::format("M{},{} V{} H{} V{} H{} V{}", x1, y1, cy1,
                      L.x[f] + kNodeW + (kColW - kNodeW) / 2 + off / 2, cy2, x2, y2);
    } else {
      const int gapOut = L.bandX[size_t(L.band[f]) + 1] - kBandGap / 2 + off;
      const int gapIn = L.bandX[size_t(L.band[t])] - kBandGap / 2 + off;
      d = gapOut == gapIn ? fmt::format("M{},{} V{} H{} V{} H{} V{}", x1, y1, cy1, gapOut, cy2,
                                        x2, y2)
                          : fmt::format("M{},{} V{} H{} V{} H{} V{} H{} V{}", x1, y1, cy1,
                                        gapOut, kTop / 4 + off / 3, gapIn, cy2, x2, y2);
    }
    const bool across = L.band[f] != L.band[t];
    out += fmt::format("<path{} d=\"{}\" fill=\"none\" stroke=\"{}\"{} "
                       "marker-end=\"url(#arrow)\"/>\n",
                       cls.empty() && across ? " class=\"x\"" : cls, d,
                       across ? "#888" : "#666", across ? " stroke-dasharray=\"5,3\"" : "");
  }
  for (size_t i = 0; i < n; ++i) {
    const auto &nd = g.nodes[i];
    std::string fill = nd.cluster >= 0
                           ? palette(size_t(g.clusters[size_t(nd.cluster)].targetIndex)).node
                           : (nd.kind == PartitionGraph::Kind::Op ? "#ffffff" : "#e5e7eb");
    int rx = nd.kind == PartitionGraph::Kind::Op ? 6 : 20;
    std::string cls = nd.cluster >= 0 ? fmt::format("node m{}", nd.cluster) : "node";
    const int x = L.x[i], y = L.y[i];
    out += fmt::format("<g class=\"{}\"><title>{}</title><rect x=\"{}\" y=\"{}\" width=\"{}\" "
                       "height=\"{}\" rx=\"{}\" fill=\"{}\" stroke=\"#333\"/>",
                       cls, htmlEscape(nodeLabel(nd)), x, y, kNodeW, kNodeH, rx, fill);
    std::string label = htmlEscape(cutRight(nd.label, kOpChars));
    if (nd.kind == PartitionGraph::Kind::Op && !nd.name.empty())
      out += fmt::format("<text x=\"{}\" y=\"{}\" class=\"op\">{}</text><text x=\"{}\" y=\"{}\" "
                         "class=\"nm\">{}</text>",
                         x + kNodeW / 2, y + 17, label, x + kNodeW / 2, y + 32,
                         htmlEscape(cutRight(nd.name, kNameChars)));
    else
      out += fmt::format("<text x=\"{}\" y=\"{}\" class=\"op\">{}</text>", x + kNodeW / 2, y + 25,
                         label);
    out += "</g>\n";
  }
  return out + "</svg>\n";
}

constexpr const char *kStyle = R"CSS(
body { font-family: sans-serif; margin: 1.5em; color: #111; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; font-size: 13px;
         vertical-align: top; }
th { background: #f3f4f6; }
tr[data-sym] { cursor: pointer; }
tr.col td { background: #f3f4f6; color: #555; }
td.jump { cursor: pointer; text-decoration: underline dotted; }
details > summary { cursor: pointer; margin: 0.3em 0; font-size: 14px; }
.legend span { display: inline-block; margin-right: 1.2em; }
.swatch { display: inline-block; width: 14px; height: 14px; border: 1px solid #333;
          vertical-align: middle; margin-right: 4px; }
.bar { position: sticky; top: 0; background: #fff; padding: 6px 0; z-index: 1; font-size: 13px; }
.bar input { width: 18em; }
.bar .hint { color: #666; margin-left: 1em; }
.graph { overflow: auto; border: 1px solid #ddd; height: 75vh; }
svg text { font-family: sans-serif; text-anchor: middle; pointer-events: none; }
svg text.op { font-size: 13px; font-weight: bold; }
svg text.nm { font-size: 10px; fill: #333; }
svg text.rl { font-size: 10px; text-anchor: start; fill: #333; }
svg text.rs { font-size: 12px; font-weight: bold; display: none; }
svg .region { cursor: pointer; }
svg .region.col rect { fill-opacity: 1; stroke-dasharray: none; stroke-width: 2; }
svg .region.col text.rl { display: none; }
svg .region.col text.rs { display: inline; }
svg .hid { display: none; }
svg.searching .node:not(.hit) { opacity: 0.25; }
svg .node.hit rect { stroke: #f59e0b; stroke-width: 4; }
svg .node.cur rect { stroke: #dc2626; stroke-width: 5; }
)CSS";

/// Search, zoom and collapse (see the banner). Plain ES2017, no library.
constexpr const char *kScript = R"JS(
(function () {
  const svg = document.getElementById('pg'), box = document.getElementById('gbox');
  if (!svg || !box) return;
  const $ = (id) => document.getElementById(id);
  const vb = svg.getAttribute('viewBox').split(' ').map(Number), W = vb[2], H = vb[3];
  const num = (e, a) => Number(e.getAttribute(a));
  // The centre of a region's first box or of a node's box, in drawing units.
  const centre = (r) => [num(r, 'x') + num(r, 'width') / 2, num(r, 'y') + num(r, 'height') / 2];
  let scale = 1;
  function zoom(s, cx, cy) {
    s = Math.min(4, Math.max(0.02, s));
    if (cx === undefined) { cx = box.clientWidth / 2; cy = box.clientHeight / 2; }
    const px = (box.scrollLeft + cx) / scale, py = (box.scrollTop + cy) / scale;
    scale = s;
    svg.setAttribute('width', W * s);
    svg.setAttribute('height', H * s);
    box.scrollLeft = px * s - cx;
    box.scrollTop = py * s - cy;
    $('zl').textContent = Math.round(s * 100) + '%';
  }
  const fit = () => {
    zoom(Math.min(1, (box.clientWidth - 4) / W));
    box.scrollLeft = 0;
    box.scrollTop = 0;
  };
  $('zin').onclick = () => zoom(scale * 1.25);
  $('zout').onclick = () => zoom(scale / 1.25);
  $('zfit').onclick = fit;
  $('z100').onclick = () => zoom(1);
  box.addEventListener('wheel', (e) => {
    if (!e.ctrlKey) return;
    e.preventDefault();
    const r = box.getBoundingClientRect();
    zoom(scale * Math.exp(-e.deltaY * 0.0015), e.clientX - r.left, e.clientY - r.top);
  }, { passive: false });

  // Each region's nodes (class mN) and inner edges (class iN), found once.
  const bySym = {}, rows = {}, members = {};
  svg.querySelectorAll('.region').forEach((g) => { bySym[g.dataset.sym] = g; });
  svg.querySelectorAll('.node, line, path').forEach((e) => {
    for (const c of e.classList)
      if (/^[mi]\d+$/.test(c)) (members[c.slice(1)] = members[c.slice(1)] || []).push(e);
  });
  document.querySelectorAll('tr[data-sym]').forEach((tr) => { rows[tr.dataset.sym] = tr; });
  function collapse(g, on) {
    g.classList.toggle('col', on);
    (members[g.dataset.r] || []).forEach((e) => e.classList.toggle('hid', on));
    if (rows[g.dataset.sym]) rows[g.dataset.sym].classList.toggle('col', on);
  }
  function reveal(x, y) {
    box.scrollLeft = x * scale - box.clientWidth / 2;
    box.scrollTop = y * scale - box.clientHeight / 2;
  }
  svg.addEventListener('click', (e) => {
    const g = e.target.closest('.region');
    if (g) collapse(g, !g.classList.contains('col'));
  });
  Object.keys(rows).forEach((sym) => rows[sym].addEventListener('click', () => {
    const g = bySym[sym];
    if (!g) return;
    collapse(g, !g.classList.contains('col'));
    box.scrollIntoView({ block: 'nearest' });
    reveal(...centre(g.querySelector('rect')));
  }));
  $('call').onclick = () => Object.values(bySym).forEach((g) => collapse(g, true));
  $('eall').onclick = () => Object.values(bySym).forEach((g) => collapse(g, false));

  const q = $('q'), found = $('qn'), nodes = Array.from(svg.querySelectorAll('.node'));
  const texts = nodes.map((n) => n.firstElementChild.textContent.toLowerCase()); // <title>
  let hits = [], cur = -1, curNode = null;
  function show(k) {
    if (curNode) curNode.classList.remove('cur');
    curNode = null;
    if (!hits.length) return;
    cur = (k + hits.length) % hits.length;
    const n = hits[cur], m = Array.from(n.classList).find((c) => /^m\d+$/.test(c));
    if (m && $('r' + m.slice(1)).classList.contains('col')) collapse($('r' + m.slice(1)), false);
    n.classList.add('cur');
    curNode = n;
    reveal(...centre(n.querySelector('rect')));
    found.textContent = (cur + 1) + ' of ' + hits.length;
  }
  function search() {
    const t = q.value.trim().toLowerCase();
    hits = [];
    nodes.forEach((n, k) => {
      const on = t !== '' && texts[k].includes(t);
      if (on !== n.classList.contains('hit')) n.classList.toggle('hit', on);
      if (on) hits.push(n);
    });
    svg.classList.toggle('searching', t !== '');
    found.textContent = t === '' ? '' : hits.length ? '' : 'no match';
    show(0);
  }
  q.addEventListener('input', search);
  q.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') { e.preventDefault(); show(cur + (e.shiftKey ? -1 : 1)); }
  });
  document.querySelectorAll('td.jump').forEach((td) => td.addEventListener('click', () => {
    q.value = td.textContent;
    box.scrollIntoView({ block: 'nearest' });
    search();
  }));
  if (box.clientWidth > 0 && W > box.clientWidth) fit();
})();
)JS";

/// Large groups of host ops start folded.
constexpr size_t kOpenGroup = 50;

std::string patternTables(const PartitionResult &r) {
  std::vector<PatternSummary> patterns = summarizePatterns(r.log.patterns);
  if (patterns.empty())
    return {};
  std::string out = fmt::format(
      "<h2>Patterns ({})</h2>\n<table>\n<tr><th>pattern</th><th>matches</th><th>composites</th>"
      "<th>vetoed</th><th>skipped</th><th>composites at</th></tr>\n",
      patterns.size());
  bool refused = false;
  for (const PatternSummary &p : patterns) {
    out += fmt::format("<tr><td>{}.{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
                       "</tr>\n",
                       htmlEscape(p.target), htmlEscape(p.pattern),
                       p.accepted + p.vetoed + p.skipped, p.accepted, p.vetoed, p.skipped,
                       p.accepted ? htmlEscape(patternNodes(*p.composites)) : "");
    refused |= !p.refusals.empty();
  }
  out += "</table>\n";
  if (!refused)
    return out;
  out += "<h3>Matches not outlined</h3>\n<table>\n<tr><th>pattern</th><th>why</th>"
         "<th>matches</th><th>at</th></tr>\n";
  for (const PatternSummary &p : patterns)
    for (const PatternRecord *x : p.refusals)
      out += fmt::format("<tr><td>{}.{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                         htmlEscape(p.target), htmlEscape(p.pattern), htmlEscape(refusalText(*x)),
                         x->count, htmlEscape(patternNodes(*x)));
  return out + "</table>\n";
}

} // namespace

std::string htmlReport(const PartitionResult &r, const PartitionGraph &g,
                       const std::string &title, const std::string &placement) {
  std::string out = fmt::format("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta "
                                "charset=\"utf-8\">\n<title>Tessera partition: {}</title>\n<style>",
                                htmlEscape(title));
  out += kStyle;
  out += fmt::format("</style>\n</head>\n<body>\n<h1>Partition of {}</h1>\n<p>{}</p>\n",
                     htmlEscape(title), htmlEscape(summaryText(r)));

  // Legend: one swatch per target, then the host.
  out += "<div class=\"legend\">";
  for (size_t i = 0; i < r.targets.size(); ++i)
    out += fmt::format("<span><i class=\"swatch\" style=\"background:{}\"></i>{}</span>",
                       palette(i).node, htmlEscape(r.targets[i]));
  out += "<span><i class=\"swatch\" style=\"background:#ffffff\"></i>host</span></div>\n";

  out += "<h2>Graph</h2>\n";
  if (g.nodes.size() <= kMaxDrawnNodes) {
    out += "<div class=\"bar\"><input id=\"q\" type=\"search\" placeholder=\"Search ops and node "
           "names\" aria-label=\"search\"> <span id=\"qn\"></span> "
           "<button id=\"zout\" title=\"zoom out\">&minus;</button> <span id=\"zl\">100%</span> "
           "<button id=\"zin\" title=\"zoom in\">+</button> <button id=\"zfit\">fit width</button> "
           "<button id=\"z100\">100%</button> <button id=\"call\">collapse regions</button> "
           "<button id=\"eall\">expand regions</button><span class=\"hint\">Enter: next match; "
           "ctrl+wheel: zoom; click a region to collapse it</span></div>\n";
    out += "<div class=\"graph\" id=\"gbox\">\n" + svgOf(g) + "</div>\n";
  } else {
    out += fmt::format("<p>The graph has {} nodes; only graphs of up to {} are drawn.</p>\n",
                       g.nodes.size(), kMaxDrawnNodes);
  }

  if (!placement.empty())
    out += fmt::format("<h2>Placement</h2>\n<pre>{}</pre>\n", htmlEscape(placement));
  out += patternTables(r);

  // A placement column when placement by measurement kept some region.
  const bool placed = std::any_of(r.log.regions.begin(), r.log.regions.end(),
                                  [](const RegionInfo &reg) { return !reg.placement.empty(); });
  out += fmt::format("<h2>Regions ({})</h2>\n<details open><summary>click a row to collapse its "
                     "region in the graph</summary>\n<table>\n<tr><th>symbol</th><th>target</th>"
                     "<th>ops</th><th>inputs</th><th>outputs</th><th>estimated FLOPs</th>{}</tr>\n",
                     r.log.regions.size(), placed ? "<th>kept by</th>" : "");
  for (const RegionInfo &reg : r.log.regions)
    out += fmt::format("<tr data-sym=\"{}\"><td>@{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}"
                       "</td><td>{}</td>{}</tr>\n",
                       htmlEscape(reg.symbol), htmlEscape(reg.symbol), htmlEscape(reg.target),
                       reg.ops, htmlEscape(join(reg.inputs, ", ")),
                       htmlEscape(join(reg.outputs, ", ")), formatFlops(reg.flops),
                       placed ? "<td>" + htmlEscape(reg.placement) + "</td>" : "");
  out += "</table>\n</details>\n";

  // Host ops, one foldable table per reason (click a node to find it).
  out += fmt::format("<h2>Host ops ({})</h2>\n", r.host.size());
  for (const auto &[reason, ops] : groupByReason(r.host)) {
    out += fmt::format("<details{}><summary>{} ({})</summary>\n<table>\n<tr><th>function</th>"
                       "<th>node</th><th>op</th></tr>\n",
                       ops.size() <= kOpenGroup ? " open" : "", htmlEscape(reason), ops.size());
    for (const HostOp *h : ops)
      out += fmt::format("<tr><td>@{}</td><td{}>{}</td><td>{}</td></tr>\n",
                         htmlEscape(h->function), h->node.empty() ? "" : " class=\"jump\"",
                         htmlEscape(nodeName(*h)), htmlEscape(h->op));
    out += "</table>\n</details>\n";
  }
  out += "<script>";
  out += kScript;
  out += "</script>\n</body>\n</html>\n";
  return out;
}

} // namespace tessera::partition
