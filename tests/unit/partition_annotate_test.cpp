//===- unit/partition_annotate_test.cpp - merge-composite, annotate-target ===//
//
// The first two partition passes over the test targets of
// tests/plugins/targets (real plugins, discovered from TESSERA_TARGETS_DIR):
// the partition log's host decisions (NoTarget, Declined and their
// reasons), the hook's validation messages, the composites formed, and that
// annotating a long chain stays fast (no recursion on depth, near-linear).
//
//===----------------------------------------------------------------------===//
#include <catch2/catch.hpp>

#include "ir/expr.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "partition/partition.h"
#include "passes/pass_manager.h"
#include "plugin/registry.h"
#include "test_targets.h"

#include <chrono>

using namespace tessera;
using partition::HostDecision;

namespace {

const plugin::PluginRegistry &targets() { return test::testTargets(); }

std::unique_ptr<partition::PartitionState> state(const std::vector<std::string> &names) {
  auto s = partition::PartitionState::fromNames(names, targets());
  REQUIRE(s.ok());
  return std::move(s).value();
}

/// Runs `pipeline` on `text` with `st`; returns the status, leaves the module
/// in `out`.
Status runPasses(const std::string &text, const std::string &pipeline,
                 partition::PartitionState *st, ir::Module &out) {
  auto m = ir::parseModule(text);
  REQUIRE(m.ok());
  out = std::move(m).value();
  passes::PassManagerOptions options;
  auto pm = passes::PassManager::fromPipeline(pipeline, partition::allPasses(st), options);
  REQUIRE(pm.ok());
  return pm->run(out);
}

std::string kindName(HostDecision::Kind k) {
  switch (k) {
  case HostDecision::Kind::NoTarget: return "NoTarget";
  case HostDecision::Kind::Declined: return "Declined";
  case HostDecision::Kind::Pruned: return "Pruned";
  }
  return "?";
}

/// "Kind node op target: reason" per host decision.
std::vector<std::string> hostLines(const partition::PartitionState &st) {
  std::vector<std::string> lines;
  for (const HostDecision &d : st.log.host)
    lines.push_back(kindName(d.kind) + " @" + d.function + " " + d.node + " " + d.op + " " +
                    d.target + ": " + d.reason);
  return lines;
}

const char *kDeclines = R"(
def @main(%x: f32[1, 2, 2, 2], %y: f32[2], %z: f32[3, 2]) -> (f32[1, 2, 2, 2], f32[3, 2]) {
  %m = multiply(%x, %y)
  %r4 = relu(%m)
  %r2 = relu(%z)
  %e = exp(%r2)
  %out = tuple(%r4, %e)
  return %out
}
)";

} // namespace

TEST_CASE("annotate-target: the test targets load", "[partition][annotate]") {
  for (const char *name : {"tgt_a", "tgt_b", "tgt_picky", "tgt_hook", "tgt_hook_bad", "tgt_prune"})
    CHECK(targets().find(name) != nullptr);
  CHECK(targets().rejected().empty());
  CHECK(targets().find("tgt_hook")->hasPartitionHook());
  CHECK(targets().find("tgt_prune")->hasRegionRule());
}

TEST_CASE("annotate-target: log of ops left on the host", "[partition][annotate]") {
  SECTION("one target: NoTarget and Declined with the checker's reason") {
    auto st = state({"tgt_a"});
    ir::Module m;
    REQUIRE(runPasses(kDeclines, "annotate-target", st.get(), m).ok());
    CHECK(hostLines(*st) == std::vector<std::string>{
                                "Declined @main m multiply tgt_a: tgt_a: no broadcasting multiply",
                                "NoTarget @main e exp : no requested target takes op 'exp'",
                            });
  }
  SECTION("a later target takes what an earlier one declined") {
    auto st = state({"tgt_picky", "tgt_a"});
    ir::Module m;
    REQUIRE(runPasses(kDeclines, "annotate-target", st.get(), m).ok());
    // r2 (rank 2): tgt_picky declines, tgt_a takes it. multiply: only tgt_a
    // lists it and declines.
    CHECK(hostLines(*st) == std::vector<std::string>{
                                "Declined @main m multiply tgt_a: tgt_a: no broadcasting multiply",
                                "NoTarget @main e exp : no requested target takes op 'exp'",
                            });
    auto st2 = state({"tgt_picky"});
    REQUIRE(runPasses(kDeclines, "annotate-target", st2.get(), m).ok());
    CHECK(hostLines(*st2) ==
          std::vector<std::string>{
              "NoTarget @main m multiply : no requested target takes op 'multiply'",
              "Declined @main r2 relu tgt_picky: tgt_picky: rank-4 tensors only",
              "NoTarget @main e exp : no requested target takes op 'exp'",
          });
  }
}

TEST_CASE("annotate-target: a dense too wide for tgt_b goes to tgt_a", "[partition][annotate]") {
  const char *text = R"(
def @main(%x: f32[3, 2], %w: f32[100, 2]) -> f32[3, 100] {
  %d = dense(%x, %w)
  return %d
}
)";
  auto st = state({"tgt_b"});
  ir::Module m;
  REQUIRE(runPasses(text, "annotate-target", st.get(), m).ok());
  CHECK(hostLines(*st) ==
        std::vector<std::string>{"Declined @main d dense tgt_b: tgt_b: dense units > 64"});
  auto both = state({"tgt_b", "tgt_a"});
  REQUIRE(runPasses(text, "annotate-target", both.get(), m).ok());
  CHECK(both->log.host.empty());
  CHECK(ir::printModule(m).find("Compiler=\"tgt_a\"") != std::string::npos);
}

TEST_CASE("annotate-target: declines from several targets are joined", "[partition][annotate]") {
  // A broadcasting add of a rank-1 value: tgt_picky (rank) and tgt_b
  // (broadcast) both decline; the first decliner is the target.
  const char *text = R"(
def @main(%x: f32[1, 2, 2, 2], %y: f32[2]) -> f32[1, 2, 2, 2] {
  %a = add(%x, %y)
  return %a
}
)";
  auto st = state({"tgt_picky", "tgt_b"});
  ir::Module m;
  REQUIRE(runPasses(text, "annotate-target", st.get(), m).ok());
  REQUIRE(st->log.host.size() == 1);
  const HostDecision &d = st->log.host[0];
  CHECK(d.kind == HostDecision::Kind::Declined);
  CHECK(d.function == "main");
  CHECK(d.node == "a");
  CHECK(d.op == "add");
  CHECK(d.target == "tgt_picky");
  CHECK(d.reason == "tgt_picky: rank-4 tensors only; tgt_b: no broadcasting add");
}

TEST_CASE("annotate-target: needs targets", "[partition][annotate]") {
  ir::Module m;
  Status s = runPasses(kDeclines, "annotate-target", nullptr, m);
  REQUIRE(!s.ok());
  CHECK(s.error().str() == "while running pass 'annotate-target': needs targets (give --target, "
                           "e.g. --target json)");
  Status s2 = runPasses(kDeclines, "merge-composite", nullptr, m);
  REQUIRE(!s2.ok());
  CHECK(s2.error().str() == "while running pass 'merge-composite': needs targets (give --target, "
                            "e.g. --target json)");
}

TEST_CASE("annotate-target: whole-graph hook validation", "[partition][annotate]") {
  const char *cycle = R"(
def @main(%x: f32[4]) -> f32[4] {
  %r = relu(%x)
  %s = sigmoid(%r)
  %a = add(%r, %x)
  %m = multiply(%s, %a)
  return %m
}
)";
  ir::Module m;
  auto hook = state({"tgt_hook"});
  Status s = runPasses(cycle, "annotate-target", hook.get(), m);
  REQUIRE(!s.ok());
  CHECK(s.error().str() ==
        "while running pass 'annotate-target': in function '@main': plugin 'tgt_hook': invalid "
        "partition: region 0 reaches itself through nodes outside it");

  auto bad = state({"tgt_hook_bad"});
  Status s2 = runPasses(cycle, "annotate-target", bad.get(), m);
  REQUIRE(!s2.ok());
  CHECK(s2.error().str() ==
        "while running pass 'annotate-target': in function '@main': plugin 'tgt_hook_bad': "
        "invalid partition: node 0 ('x') is an input; only op and composite nodes can be claimed");

  // Without the cycle the hook's region is one function of three ops.
  const char *ok = R"(
def @main(%x: f32[4]) -> f32[4] {
  %r = relu(%x)
  %s = sigmoid(%r)
  %m = multiply(%s, %x)
  %e = exp(%m)
  return %e
}
)";
  auto hook2 = state({"tgt_hook"});
  REQUIRE(runPasses(ok, "annotate-target", hook2.get(), m).ok());
  std::string text = ir::printModule(m);
  CHECK(text.find("attributes {Compiler=\"tgt_hook\"}") != std::string::npos);
  CHECK(text.find("%r = relu(%p0)") != std::string::npos);
  // %x is read twice by the region: one parameter.
  CHECK(text.find("%m = multiply(%s, %p0)") != std::string::npos);
  // exp is not listed by tgt_hook: NoTarget.
  CHECK(hostLines(*hook2) ==
        std::vector<std::string>{"NoTarget @main e exp : no requested target takes op 'exp'"});
}

TEST_CASE("annotate-target: a whole-graph hook written with the C++ SDK", "[partition][annotate]") {
  // tgt_cxx_hook (Checker::partition) takes relu and sigmoid, never exp, and
  // joins a node to its first input's region.
  REQUIRE(targets().find("tgt_cxx_hook") != nullptr);
  CHECK(targets().find("tgt_cxx_hook")->hasPartitionHook());
  const char *text = R"(
def @main(%x: f32[4]) -> f32[4] {
  %r = relu(%x)
  %s = sigmoid(%r)
  %e = exp(%s)
  %t = relu(%e)
  return %t
}
)";
  ir::Module m;
  auto st = state({"tgt_cxx_hook"});
  REQUIRE(runPasses(text, "annotate-target", st.get(), m).ok());
  const std::string printed = ir::printModule(m);
  size_t regions = 0;
  for (size_t at = 0; (at = printed.find("attributes {Compiler=\"tgt_cxx_hook\"}", at)) !=
                      std::string::npos;
       ++at)
    ++regions;
  CHECK(regions == 2); // relu+sigmoid, and the last relu: exp splits them
  CHECK(printed.find("%s = sigmoid(%r)") != std::string::npos);
  CHECK(printed.find("%e = exp(") != std::string::npos);
  std::vector<std::string> host = hostLines(*st);
  REQUIRE(host.size() == 1);
  CHECK(host[0].find("@main e exp tgt_cxx_hook") != std::string::npos);
}

TEST_CASE("merge-composite: composites and vetoes", "[partition][annotate]") {
  const char *text = R"(
def @main(%x: f32[1, 2, 2, 2], %y: f32[1, 2, 2, 2]) -> f32[1, 2, 2, 2] {
  %a = add(%x, %y)
  %r = relu(%a)
  return %r
}
)";
  ir::Module m;
  auto picky = state({"tgt_picky"});
  REQUIRE(runPasses(text, "merge-composite,annotate-target", picky.get(), m).ok());
  std::string printed = ir::printModule(m);
  CHECK(printed.find("Composite") == std::string::npos);
  // Both ops are rank 4: tgt_picky takes each on its own.
  CHECK(picky->log.host.empty());
}

// Speed is measured by bench/bench_partition; this checks that a 10^5-op
// chain goes through (no recursion on depth) with the expected log.
TEST_CASE("annotate-target: a 100,000-op chain", "[partition][annotate]") {
  // 100,000 alternating add/exp ops: half claimed, half on the host.
  constexpr int kOps = 100000;
  ir::Var x = ir::makeVar("x", ir::Type::tensor(ir::DType::F32, {4}));
  ir::Expr cur = x;
  for (int i = 0; i < kOps; ++i)
    cur = ir::expectOk(i % 2 ? ir::makeCall("exp", {cur}) : ir::makeCall("add", {cur, x}));
  ir::Module m;
  m.set("main", ir::makeFunction({x}, cur));
  auto st = state({"tgt_a"});
  passes::PassManagerOptions options;
  auto pm = passes::PassManager::fromPipeline("merge-composite,annotate-target",
                                              partition::allPasses(st.get()), options);
  REQUIRE(pm.ok());
  REQUIRE(pm->run(m).ok());
  CHECK(st->log.host.size() == size_t(kOps / 2));
}
