//===- unit/partition_report_test.cpp - partition-graph, report, DOT, HTML -===//
//
// partition-graph on hand-written region IR (no plugins needed), then the
// report text and DOT checked exactly on that small module, and the HTML
// checked for being self-contained and holding the regions. Then, with the
// test targets (tests/plugins/targets): pattern matches accepted, vetoed by
// check_pattern and skipped in the report; host ops that share a name each
// under their own reason; the HTML's search, zoom and collapse script,
// names cut on the right, the layout of a long chain wrapped into bands.
//
//===----------------------------------------------------------------------===//
#include "ir/parser.h"
#include "ir/visit.h"
#include "partition/driver.h"
#include "partition/report.h"
#include "passes/pass_manager.h"
#include "test_targets.h"

#include <catch2/catch.hpp>

#include <regex>

using namespace tessera;
using namespace tessera::partition;

namespace {

const char *kNet = R"(module @net
def @main(%x: f32[1, 8], %w: f32[4, 8]) -> f32[1, 4] {
  %f = fn(%p: f32[1, 8], %q: f32[4, 8]) -> f32[1, 4] attributes {Compiler="json"} {
    %d = dense(%p, %q) : f32[1, 4]
    %r = relu(%d) : f32[1, 4]
    return %r
  }
  %fc = %f(%x, %w) : f32[1, 4]
  %sm = sin(%fc) : f32[1, 4]
  return %sm
}
)";

/// kNet through partition-graph with an (empty) state, as the driver would.
PartitionResult partitioned() {
  auto m = ir::parseModule(kNet);
  REQUIRE(m.ok());
  PartitionState state;
  passes::PassManagerOptions o;
  auto pm = passes::PassManager::fromPipeline("partition-graph", partition::allPasses(&state), o);
  REQUIRE(pm.ok());
  auto s = pm->run(*m);
  REQUIRE(s.ok());
  state.log.host.push_back(
      {HostDecision::Kind::NoTarget, "main", "sm", "sin", "", "no requested target lists 'sin'"});
  PartitionResult r{std::move(*m), {"json"}, std::move(state.log), {}, 0};
  r.host = collectHostOps(r.module, r.log);
  r.offloadedOps = countOffloadedOps(r.module);
  return r;
}

} // namespace

TEST_CASE("partition-graph records each region in the log", "[partition][report]") {
  PartitionResult r = partitioned();
  REQUIRE(r.log.regions.size() == 1);
  const RegionInfo &g = r.log.regions[0];
  CHECK(g.symbol == "tessera_net_json_0");
  CHECK(g.target == "json");
  CHECK(g.ops == 2);
  CHECK(g.inputs == std::vector<std::string>{"f32[1, 8]", "f32[4, 8]"});
  CHECK(g.outputs == std::vector<std::string>{"f32[1, 4]"});
  // The sum of estimateFlops over the region's calls.
  double flops = 0;
  for (const ir::ExprNode *n : ir::postOrder(r.module.find("tessera_net_json_0")->body()))
    if (const auto *c = n->as<ir::CallNode>())
      flops += estimateFlops(*c);
  CHECK(g.flops == flops);
  CHECK(g.flops > 0);
  REQUIRE(r.host.size() == 1);
  CHECK(r.host[0].node == "sm");
  REQUIRE(r.host[0].decisions.size() == 1);
  CHECK(r.offloadedOps == 2);
}

TEST_CASE("partition-graph without a state lifts regions too", "[partition][report]") {
  auto m = ir::parseModule(kNet);
  REQUIRE(m.ok());
  auto pm = passes::PassManager::fromPipeline("partition-graph", partition::allPasses());
  REQUIRE(pm.ok());
  REQUIRE(pm->run(*m).ok());
  auto g = m->find("tessera_net_json_0");
  REQUIRE(g);
  CHECK(g->attrs().getString("Compiler") == "json");
  CHECK(g->attrs().getString("global_symbol") == "tessera_net_json_0");
}

TEST_CASE("formatFlops picks human units", "[partition][report]") {
  CHECK(formatFlops(0) == "0 FLOP");
  CHECK(formatFlops(950) == "950 FLOP");
  CHECK(formatFlops(12345) == "12.3 kFLOP");
  CHECK(formatFlops(1.2e6) == "1.20 MFLOP");
  CHECK(formatFlops(3.414e9) == "3.41 GFLOP");
  CHECK(formatFlops(456e9) == "456 GFLOP");
}

TEST_CASE("the report lists regions and host ops with reasons", "[partition][report]") {
  PartitionResult r = partitioned();
  CHECK(summaryText(r) ==
        "Partitioned module 'net' among json: 1 region (json: 1) with 2 of 3 ops (66.7%); 1 op "
        "stays on the host (1 unsupported by every target, 0 declined by a checker, 0 pruned).\n");
  CHECK(reportText(r) == summaryText(r) + R"(
Regions (1):
  @tessera_net_json_0  target json, 2 ops, 68 FLOP
    inputs:  f32[1, 8], f32[4, 8]
    outputs: f32[1, 4]

Host ops (1):
  no requested target lists 'sin' (1):
    @main  sm  sin
)");
}

TEST_CASE("host ops group by reason; pruned wins over declined", "[partition][report]") {
  PartitionResult r = partitioned();
  r.host.push_back({"main", "a", "relu", {{HostDecision::Kind::Declined, "main", "a", "relu",
                                           "dnnl", "f16 is not supported"}}});
  r.host.push_back({"main", "b", "relu",
                    {{HostDecision::Kind::Declined, "main", "b", "relu", "dnnl", "x"},
                     {HostDecision::Kind::Pruned, "main", "b", "relu", "json", "no compute-heavy op"}}});
  r.host.push_back({"main", "", "exp", {}});
  std::string text = reportText(r);
  CHECK(text.find("Host ops (4):\n"
                  "  no requested target lists 'sin' (1):\n"
                  "    @main  sm  sin\n"
                  "  declined by dnnl: f16 is not supported (1):\n"
                  "    @main  a  relu\n"
                  "  pruned from a json region: no compute-heavy op (1):\n"
                  "    @main  b  relu\n"
                  "  no requested target claimed it (1):\n"
                  "    @main  (unnamed)  exp\n") != std::string::npos);
  CHECK(summaryText(r).find("4 ops stay on the host (2 unsupported by every target, 1 declined "
                            "by a checker, 1 pruned)") != std::string::npos);
}

TEST_CASE("DOT of a partitioned function", "[partition][report]") {
  PartitionResult r = partitioned();
  auto g = buildPartitionGraph(r.module, "main", r.targets);
  REQUIRE(g.ok());
  CHECK(dotGraph(*g) == R"DOT(digraph partition {
  rankdir=TB;
  node [shape=box, style="rounded", fontname="Helvetica"];
  n0 [label="x", shape=invhouse];
  n1 [label="w", shape=invhouse];
  n4 [label="sin\nsm"];
  n5 [label="output", shape=house];
  subgraph cluster_0 {
    label="tessera_net_json_0 (json)";
    style="filled,rounded"; fillcolor="#dbeafe"; color="#1d4ed8";
    n2 [label="dense\nd", style="rounded,filled", fillcolor="#93c5fd"];
    n3 [label="relu\nr", style="rounded,filled", fillcolor="#93c5fd"];
  }
  n0 -> n2;
  n1 -> n2;
  n2 -> n3;
  n3 -> n4;
  n4 -> n5;
}
)DOT");
  auto missing = buildPartitionGraph(r.module, "nosuch", r.targets);
  REQUIRE(!missing.ok());
  CHECK(missing.error().message() == "the partitioned module has no function '@nosuch' to draw");
}

TEST_CASE("the HTML report is self-contained and holds the regions", "[partition][report]") {
  PartitionResult r = partitioned();
  auto g = buildPartitionGraph(r.module, "main", r.targets);
  REQUIRE(g.ok());
  std::string html = htmlReport(r, *g, "net <test>.onnx");
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(html.find("</html>") != std::string::npos);
  CHECK(html.find("http://") == std::string::npos);
  CHECK(html.find("https://") == std::string::npos);
  CHECK(html.find("<script src") == std::string::npos);
  CHECK(html.find("<link") == std::string::npos);
  CHECK(html.find("net &lt;test&gt;.onnx") != std::string::npos);
  CHECK(html.find("<td>@tessera_net_json_0</td><td>json</td><td>2</td>") != std::string::npos);
  CHECK(html.find("no requested target lists &#39;sin&#39;") == std::string::npos);
  CHECK(html.find("no requested target lists 'sin'") != std::string::npos);
  CHECK(html.find("<svg") != std::string::npos);
  CHECK(html.find("#93c5fd") != std::string::npos); // the json colour
  // Balanced tags for the elements the report writes.
  for (std::string tag : {"svg", "table", "tr", "g", "div", "body"}) {
    size_t open = 0, close = 0;
    for (size_t p = 0; (p = html.find("<" + tag, p)) != std::string::npos; ++p)
      if (p + tag.size() + 1 < html.size() &&
          (html[p + tag.size() + 1] == ' ' || html[p + tag.size() + 1] == '>'))
        ++open;
    for (size_t p = 0; (p = html.find("</" + tag + ">", p)) != std::string::npos; ++p)
      ++close;
    CHECK(open == close);
  }
}

namespace {

/// `text` partitioned by partitionModule among the test targets `names`,
/// without the optimisation pipeline.
PartitionResult partitionText(const std::string &text, const std::vector<std::string> &names) {
  auto m = ir::parseModule(text);
  REQUIRE(m.ok());
  PartitionOptions options;
  options.targets = names;
  options.pipeline = "";
  auto r = partitionModule(std::move(*m), options, test::testTargets());
  REQUIRE(r.ok());
  return std::move(r).value();
}

PartitionGraph graphOf(const PartitionResult &r) {
  auto g = buildPartitionGraph(r.module, "main", r.targets);
  REQUIRE(g.ok());
  return std::move(g).value();
}

/// tgt_a's dense_bias matches twice (once with the dense also read by an
/// exp: skipped), tgt_picky's relu_add once (vetoed by its check_pattern).
const char *kPatterns = R"(module @pat
def @main(%x: f32[1, 2, 2, 2], %y: f32[1, 2, 2, 2], %v: f32[2, 4]) -> (f32[1, 2, 2, 2], f32[2, 4], f32[2, 4]) {
  %w = constant f32[4, 4] [1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0]
  %b = constant f32[2, 4] [0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]
  %a = add(%x, %y)
  %r = relu(%a)
  %d = dense(%v, %w)
  %fc = add(%d, %b)
  %d2 = dense(%v, %w)
  %fc2 = add(%d2, %b)
  %e = exp(%d2)
  %s = add(%fc2, %e)
  %t = tuple(%r, %fc, %s)
  return %t
}
)";

} // namespace

TEST_CASE("the report lists pattern matches, vetoes with the plugin's reason, and skips",
          "[partition][report]") {
  PartitionResult r = partitionText(kPatterns, {"tgt_a", "tgt_picky"});
  INFO(reportText(r));
  // Every pattern tried, in target priority then declared order.
  REQUIRE(r.log.patterns.size() == 5);
  const PatternRecord &veto = r.log.patterns[4];
  CHECK(veto.kind == PatternRecord::Kind::Vetoed);
  CHECK(veto.target == "tgt_picky");
  CHECK(veto.pattern == "relu_add");
  CHECK(veto.reason == "tgt_picky: no fusion today");
  CHECK(veto.count == 1);
  CHECK(veto.nodes == std::vector<std::string>{"r"});

  std::string text = reportText(r);
  CHECK(text.find("\nPatterns (3):\n"
                  "  tgt_a.conv_relu: no match\n"
                  "  tgt_a.dense_bias: 2 matched -> 1 composite, 0 vetoed, 1 skipped\n"
                  "    composites (1): fc\n"
                  "    skipped: an inner value is used outside the match (1): fc2\n"
                  "  tgt_picky.relu_add: 1 matched -> 0 composites, 1 vetoed\n"
                  "    vetoed: tgt_picky: no fusion today (1): r\n") != std::string::npos);
  CHECK(summaryText(r).find(" 1 of 3 pattern matches became composites (1 vetoed by a checker, "
                            "1 skipped).\n") != std::string::npos);
  // The section comes last: the lines before it are unchanged.
  CHECK(text.rfind("\nPatterns (") > text.find("\nHost ops ("));

  std::string html = htmlReport(r, graphOf(r), "pat");
  CHECK(html.find("<h2>Patterns (3)</h2>") != std::string::npos);
  CHECK(html.find("<td>tgt_picky.relu_add</td><td>vetoed: tgt_picky: no fusion today</td>"
                  "<td>1</td><td>r</td>") != std::string::npos);
}

TEST_CASE("pattern records stay bounded: the first names, then a count", "[partition][report]") {
  std::vector<PatternRecord> records;
  for (int i = 0; i < 30; ++i)
    recordPattern(records, "t", "p", PatternRecord::Kind::Accepted, "", fmt::format("n{}", i));
  for (int i = 0; i < 40; ++i)
    recordPattern(records, "t", "p", PatternRecord::Kind::Vetoed, fmt::format("shape {}", i),
                  "v");
  REQUIRE(records.size() == 1 + kMaxPatternReasons + 1);
  CHECK(records[0].count == 30);
  CHECK(records[0].nodes.size() == kMaxPatternNodes);
  CHECK(records.back().reason == kOtherReasons);
  CHECK(records.back().count == int64_t(40 - kMaxPatternReasons));
  PartitionResult r = partitioned();
  r.log.patterns = records;
  CHECK(reportText(r).find("    composites (30): n0, n1, n2, n3, n4, n5, n6, n7, n8, n9, ... and "
                           "20 more\n") != std::string::npos);
}

TEST_CASE("host ops sharing a name are listed under their own reasons", "[partition][report]") {
  // An ONNX Gemm becomes a dense and a bias_add with the Gemm's name: tgt_b
  // declines the dense (more than 64 units) and does not list bias_add.
  ir::Var x = ir::makeVar("x", ir::Type::tensor(ir::DType::F32, {1, 2}));
  ir::Var w = ir::makeVar("w", ir::Type::tensor(ir::DType::F32, {65, 2}));
  ir::Var b = ir::makeVar("b", ir::Type::tensor(ir::DType::F32, {65}));
  ir::Expr d = ir::expectOk(ir::makeCall("dense", {x, w}, {}, "fc"));
  ir::Expr ba = ir::expectOk(ir::makeCall("bias_add", {d, b}, {}, "fc"));
  ir::Expr e = ir::expectOk(ir::makeCall("exp", {ba}, {}, "fc"));
  ir::Module m("gemm");
  m.set("main", ir::makeFunction({x, w, b}, e));
  PartitionOptions options;
  options.targets = {"tgt_b"};
  options.pipeline = "";
  auto r = partitionModule(std::move(m), options, test::testTargets());
  REQUIRE(r.ok());
  REQUIRE(r->host.size() == 3);
  for (const HostOp &h : r->host) {
    INFO(h.op);
    REQUIRE(h.decisions.size() == 1);
    CHECK(h.decisions[0].op == h.op);
  }
  std::string text = reportText(*r);
  CHECK(text.find("Host ops (3):\n"
                  "  declined by tgt_b: tgt_b: dense units > 64 (1):\n"
                  "    @main  fc  dense\n"
                  "  no requested target takes op 'bias_add' (1):\n"
                  "    @main  fc  bias_add\n"
                  "  no requested target takes op 'exp' (1):\n"
                  "    @main  fc  exp\n") != std::string::npos);
  CHECK(summaryText(*r).find("(2 unsupported by every target, 1 declined by a checker, 0 "
                             "pruned)") != std::string::npos);
}

TEST_CASE("host ops: calls of one name and op take one decision each, in order",
          "[partition][report]") {
  ir::Module m("two");
  ir::Var x = ir::makeVar("x", ir::Type::tensor(ir::DType::F32, {4}));
  m.set("main", ir::makeFunction({x}, x));
  // Two unnamed exps, logged under their op, with different reasons.
  PartitionLog log;
  log.host.push_back({HostDecision::Kind::Declined, "main", "exp", "exp", "t", "first"});
  log.host.push_back({HostDecision::Kind::Declined, "main", "exp", "exp", "t", "second"});
  ir::Expr e1 = ir::expectOk(ir::makeCall("exp", {x}));
  ir::Expr e2 = ir::expectOk(ir::makeCall("exp", {e1}));
  m.set("main", ir::makeFunction({x}, e2));
  std::vector<HostOp> host = collectHostOps(m, log);
  REQUIRE(host.size() == 2);
  REQUIRE(host[0].decisions.size() == 1);
  REQUIRE(host[1].decisions.size() == 1);
  CHECK(host[0].decisions[0].reason == "first");
  CHECK(host[1].decisions[0].reason == "second");
}

namespace {

/// The SVG's width and height.
std::pair<int, int> svgSize(const std::string &html) {
  std::smatch m;
  REQUIRE(std::regex_search(html, m,
                            std::regex("<svg id=\"pg\" width=\"(\\d+)\" height=\"(\\d+)\"")));
  return {std::stoi(m[1]), std::stoi(m[2])};
}

} // namespace

TEST_CASE("the HTML has search, zoom and collapse, cuts names on the right, and is deterministic",
          "[partition][report]") {
  const std::string name = "/encoder/layer.11/attention/self/MatMul_output_0";
  const std::string text = R"(module @long
def @main(%x: f32[1, 8], %w: f32[8, 8]) -> f32[1, 8] {
  %"/encoder/layer.11/attention/self/MatMul_output_0" = dense(%x, %w)
  %r = relu(%"/encoder/layer.11/attention/self/MatMul_output_0")
  %e = exp(%r)
  return %e
}
)";
  PartitionResult r = partitionText(text, {"tgt_a"});
  std::string html = htmlReport(r, graphOf(r), "long.tir");
  CHECK(html.find("<input id=\"q\" type=\"search\"") != std::string::npos);
  CHECK(html.find("<script>") != std::string::npos);
  CHECK(html.find("</script>") != std::string::npos);
  CHECK(html.find("id=\"zin\"") != std::string::npos);
  CHECK(html.find("id=\"zfit\"") != std::string::npos);
  CHECK(html.find("id=\"call\"") != std::string::npos);
  CHECK(html.find("ctrlKey") != std::string::npos);
  // Cut on the right: the first 23 characters and an ellipsis; the tooltip
  // has it whole.
  CHECK(html.find(">" + name.substr(0, 23) + "\xe2\x80\xa6</text>") != std::string::npos);
  CHECK(html.find("<title>dense\n" + name + "</title>") != std::string::npos);
  CHECK(html.find("MatMul_output_0</text>") == std::string::npos);
  // Regions can be collapsed from the drawing and from the table.
  CHECK(html.find("<g class=\"region\" id=\"r0\" data-r=\"0\" "
                  "data-sym=\"tessera_long_tgt_a_0\">") != std::string::npos);
  CHECK(html.find("<tr data-sym=\"tessera_long_tgt_a_0\">") != std::string::npos);
  CHECK(html.find("class=\"node m0\"") != std::string::npos);
  // Still self-contained, and the same bytes for the same input.
  CHECK(html.find("http://") == std::string::npos);
  CHECK(html.find("https://") == std::string::npos);
  CHECK(html.find("<script src") == std::string::npos);
  PartitionResult again = partitionText(text, {"tgt_a"});
  CHECK(htmlReport(again, graphOf(again), "long.tir") == html);
}

TEST_CASE("the HTML wraps a long chain into bands side by side", "[partition][report]") {
  // 1,000 ops in a chain: one 72,000-pixel column unwrapped.
  PartitionGraph g;
  g.nodes.push_back({PartitionGraph::Kind::Input, "x", "x", -1});
  g.clusters.push_back({"tessera_chain_json_0", "json", 0});
  for (int i = 1; i <= 1000; ++i) {
    g.nodes.push_back({PartitionGraph::Kind::Op, i % 2 ? "add" : "relu", fmt::format("n{}", i),
                       i > 400 && i < 700 ? 0 : -1});
    g.edges.push_back({i - 1, i});
  }
  PartitionResult r = partitioned();
  std::string html = htmlReport(r, g, "chain");
  auto [w, h] = svgSize(html);
  CHECK(h < 10000);
  CHECK(w > h / 2);
  CHECK(w < 4 * h);
  // Edges between bands are curves; the region spans bands: one box each.
  CHECK(html.find("<path class=\"x\"") != std::string::npos);
  CHECK(html.find("<path class=\"i0\"") != std::string::npos);
  // A short graph is not wrapped.
  auto [w1, h1] = svgSize(htmlReport(r, graphOf(r), "net"));
  CHECK(h1 > w1);
}
