//===- unit/partition_report_test.cpp - partition-graph, report, DOT, HTML -===//
//
// partition-graph on hand-written region IR (no plugins needed), then the
// report text and DOT checked exactly on that small module, and the HTML
// checked for being self-contained and holding the regions.
//
//===----------------------------------------------------------------------===//
#include "ir/parser.h"
#include "ir/visit.h"
#include "partition/driver.h"
#include "partition/report.h"
#include "passes/pass_manager.h"

#include <catch2/catch.hpp>

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
