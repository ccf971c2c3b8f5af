//===- unit/compile_lower_test.cpp - @main to an executor plan ------------===//
//
// compile/lower.h on small text-IR modules: the buffers (inputs, constants
// in the weights, activations, outputs), one Host step per op call with its
// kernel call and types, Copy steps for outputs that are inputs, constants
// or repeated, tuple results and outputs, constant deduplication, output
// names, and region calls compiled by the real json plugin (External steps,
// module references). No code is generated here (see compile_e2e tests).
//
//===----------------------------------------------------------------------===//
#include <catch2/catch.hpp>

#include "shipped_plugins.h"
#include "compile/fuse.h"
#include "compile/lower.h"
#include "ir/parser.h"
#include "partition/driver.h"
#include "plugin/registry.h"
#include "runtime/artifact.h"
#include "runtime/plan.h"

#include <filesystem>

using namespace tessera;
using runtime::BufferKind;
using runtime::StepKind;

namespace {

ir::Module parse(const std::string &text) {
  auto m = ir::parseModule(text);
  if (!m.ok())
    FAIL("parse error: " << m.error().str());
  return std::move(m).value();
}

compile::LoweredModel lower(const std::string &text,
                            const std::vector<compile::CompiledRegion> &regions = {}) {
  auto lowered = compile::lowerMain(parse(text), regions);
  if (!lowered.ok())
    FAIL("lowering error: " << lowered.error().str());
  return std::move(lowered).value();
}

std::string lowerError(const std::string &text) {
  auto lowered = compile::lowerMain(parse(text), {});
  return lowered.ok() ? std::string() : lowered.error().str();
}

/// "Input x f32[1, 4]" per buffer, for compact checks.
std::vector<std::string> bufferLines(const runtime::Plan &plan) {
  std::vector<std::string> out;
  for (const runtime::Buffer &b : plan.buffers) {
    const char *kind = b.kind == BufferKind::Input      ? "Input"
                       : b.kind == BufferKind::Output   ? "Output"
                       : b.kind == BufferKind::Constant ? "Constant"
                                                        : "Activation";
    out.push_back(
        fmt::format("{} {}{}", kind, b.info.name.empty() ? "" : b.info.name + " ", b.info.str()));
  }
  return out;
}

/// "Host tessera_host_0 [0, 1] -> [2] 'add 'a''" per step.
std::vector<std::string> stepLines(const runtime::Plan &plan) {
  std::vector<std::string> out;
  for (const runtime::Step &s : plan.steps) {
    const char *kind = s.kind == StepKind::Host       ? "Host"
                       : s.kind == StepKind::External ? "External"
                                                      : "Copy";
    std::vector<uint32_t> in(s.args.begin(), s.args.begin() + s.numInputs);
    std::vector<uint32_t> res(s.args.begin() + s.numInputs, s.args.end());
    out.push_back(fmt::format("{} {}[{}] -> [{}] {}", kind, s.symbol.empty() ? "" : s.symbol + " ",
                              fmt::join(in, ", "), fmt::join(res, ", "), s.label));
  }
  return out;
}

} // namespace

TEST_CASE("lowering: a chain of op calls", "[compile]") {
  auto l = lower(R"(
def @main(%x: f32[2, 8]) -> f32[2, 8] {
  %c = constant f32[8] [1, 2, 3, 4, 5, 6, 7, 8]
  %a = add(%x, %c)
  %r = relu(%a)
  return %r
}
)");
  const runtime::Plan &p = l.plan;
  CHECK(bufferLines(p) == std::vector<std::string>{"Input x f32[2, 8]", "Constant c f32[8]",
                                                   "Activation f32[2, 8]", "Output r f32[2, 8]"});
  CHECK(stepLines(p) == std::vector<std::string>{"Host tessera_host_0 [0, 1] -> [2] add 'a'",
                                                 "Host tessera_host_1 [2] -> [3] relu 'r'"});
  CHECK(p.inputs == std::vector<uint32_t>{0});
  CHECK(p.outputs == std::vector<uint32_t>{3});
  CHECK(p.buffers[0].index == 0);
  CHECK(p.buffers[3].index == 0);
  REQUIRE(l.hostSteps.size() == 2);
  CHECK(l.hostSteps[0].symbol == "tessera_host_0");
  CHECK(l.hostSteps[1].symbol == "tessera_host_1");
  REQUIRE(l.hostSteps[0].types.inputs.size() == 2);
  CHECK(l.hostSteps[0].types.inputs[1].str() == "f32[8]");
  CHECK(l.hostSteps[0].types.outputs[0].str() == "f32[2, 8]");
  CHECK(!l.hostSteps[0].call.kernel.empty());
  // The weights: the constant's bytes at offset 0.
  REQUIRE(l.weights.size() == 32);
  CHECK(p.weightsBytes == 32);
  float second;
  std::memcpy(&second, l.weights.data() + 4, 4);
  CHECK(second == 2.0f);
  // One activation: the arena holds it.
  CHECK(p.arenaBytes >= 64);
  CHECK(runtime::validatePlan(p).ok());
}

TEST_CASE("lowering: constants are 64-byte aligned and each node is stored once", "[compile]") {
  auto l = lower(R"(
def @main(%x: f32[3]) -> f32[3] {
  %c = constant f32[3] [1, 2, 3]
  %d = constant f32[3] [4, 5, 6]
  %a = add(%x, %c)
  %b = add(%a, %c)
  %e = add(%b, %d)
  return %e
}
)");
  const runtime::Plan &p = l.plan;
  std::vector<const runtime::Buffer *> constants;
  for (const auto &b : p.buffers)
    if (b.kind == BufferKind::Constant)
      constants.push_back(&b);
  REQUIRE(constants.size() == 2);
  CHECK(constants[0]->offset == 0);
  CHECK(constants[1]->offset == 64);
  CHECK(p.weightsBytes == 64 + 12);
  CHECK(l.weights.size() == 64 + 12);
  float five;
  std::memcpy(&five, l.weights.data() + 64 + 4, 4);
  CHECK(five == 5.0f);
  // Both uses of %c read the same buffer.
  REQUIRE(p.steps.size() == 3);
  CHECK(p.steps[0].args[1] == p.steps[1].args[1]);
}

TEST_CASE("lowering: outputs that are inputs, constants or repeated are copied", "[compile]") {
  auto l = lower(R"(
def @main(%x: f32[4]) -> (f32[4], f32[4], f32[4], f32[4]) {
  %c = constant f32[4] [1, 2, 3, 4]
  %r = relu(%x)
  %t = tuple(%x, %c, %r, %r)
  return %t
}
)");
  const runtime::Plan &p = l.plan;
  CHECK(bufferLines(p) == std::vector<std::string>{"Input x f32[4]", "Constant c f32[4]",
                                                   "Output output_2 f32[4]",
                                                   "Output output_0 f32[4]", "Output c f32[4]",
                                                   "Output output_3 f32[4]"});
  CHECK(stepLines(p) == std::vector<std::string>{"Host tessera_host_0 [0] -> [2] relu 'r'",
                                                 "Copy [0] -> [3] copy to output 'output_0'",
                                                 "Copy [1] -> [4] copy to output 'c'",
                                                 "Copy [2] -> [5] copy to output 'output_3'"});
  CHECK(p.outputs == std::vector<uint32_t>{3, 4, 2, 5});
  for (size_t i = 0; i < p.outputs.size(); ++i)
    CHECK(p.buffers[p.outputs[i]].index == i);
  CHECK(p.arenaBytes == 0);
}

TEST_CASE("lowering: tuple results give one buffer per field", "[compile]") {
  auto l = lower(R"(
def @main(%x: f32[6, 2]) -> (f32[2, 2], f32[4, 2]) {
  %s = split(%x) {sizes=[2, 4]}
  %a = %s.0
  %b = %s.1
  %r = relu(%b)
  %t = tuple(%a, %r)
  return %t
}
)");
  const runtime::Plan &p = l.plan;
  CHECK(bufferLines(p) == std::vector<std::string>{"Input x f32[6, 2]", "Output a f32[2, 2]",
                                                   "Activation f32[4, 2]", "Output r f32[4, 2]"});
  CHECK(stepLines(p) == std::vector<std::string>{"Host tessera_host_0 [0] -> [1, 2] split 's'",
                                                 "Host tessera_host_1 [2] -> [3] relu 'r'"});
  REQUIRE(l.hostSteps.size() == 2);
  CHECK(l.hostSteps[0].types.outputs.size() == 2);
}

TEST_CASE("lowering: a fused elementwise tree is one host step", "[compile]") {
  ir::Module m = parse(R"(
def @main(%x: f32[2, 8], %y: f32[2, 8]) -> f32[2, 8] {
  %a = add(%x, %y)
  %e = exp(%a)
  %r = relu(%e)
  return %r
}
)");
  auto fused = compile::fuseElementwise(m.find("main"));
  REQUIRE(fused.ok());
  m.set("main", *fused);
  auto l = compile::lowerMain(m, {});
  if (!l.ok())
    FAIL(l.error().str());
  CHECK(bufferLines(l->plan) ==
        std::vector<std::string>{"Input x f32[2, 8]", "Input y f32[2, 8]", "Output r f32[2, 8]"});
  CHECK(stepLines(l->plan) ==
        std::vector<std::string>{"Host tessera_host_0 [0, 1] -> [2] fused add+exp+relu 'r'"});
  REQUIRE(l->hostSteps.size() == 1);
  REQUIRE(l->hostSteps[0].fused);
  CHECK((*l->hostSteps[0].fused)->params().size() == 2);
  CHECK(l->hostSteps[0].types.inputs.size() == 2);
  CHECK(l->hostSteps[0].types.outputs[0].str() == "f32[2, 8]");
}

TEST_CASE("lowering: output names", "[compile]") {
  SECTION("from the ONNX importer's output_names") {
    auto l = lower(R"(
def @main(%x: f32[4]) -> (f32[4], f32[4]) attributes {output_names="y;z"} {
  %r = relu(%x)
  %n = neg(%x)
  %t = tuple(%r, %n)
  return %t
}
)");
    CHECK(l.plan.buffers[l.plan.outputs[0]].info.name == "y");
    CHECK(l.plan.buffers[l.plan.outputs[1]].info.name == "z");
  }
  SECTION("the text format's numbers of unnamed values are not names") {
    auto l = lower(R"(
def @main(%x: f32[4]) -> f32[4] {
  %0 = relu(%x)
  return %0
}
)");
    CHECK(l.plan.buffers[l.plan.outputs[0]].info.name == "output_0");
  }
  SECTION("output_names of another count is ignored") {
    auto l = lower(R"(
def @main(%x: f32[4]) -> f32[4] attributes {output_names="y;z"} {
  %r = relu(%x)
  return %r
}
)");
    CHECK(l.plan.buffers[l.plan.outputs[0]].info.name == "r");
  }
}

TEST_CASE("lowering: a model that returns its input", "[compile]") {
  auto l = lower(R"(
def @main(%x: i64[2, 3]) -> i64[2, 3] {
  return %x
}
)");
  CHECK(bufferLines(l.plan) ==
        std::vector<std::string>{"Input x i64[2, 3]", "Output output_0 i64[2, 3]"});
  CHECK(stepLines(l.plan) == std::vector<std::string>{"Copy [0] -> [1] copy to output 'output_0'"});
  CHECK(l.hostSteps.empty());
}

TEST_CASE("lowering: errors name the node", "[compile]") {
  CHECK(lowerError(R"(
def @f(%a: f32[2]) -> f32[2] {
  %r = relu(%a)
  return %r
}
def @main(%x: f32[2]) -> f32[2] {
  %y = @f(%x)
  return %y
}
)") == "@f 'y': @main calls @f, which is not a region; only op calls and region calls can "
       "be compiled");
  CHECK(lowerError(R"(
def @g(%a: f32[2]) -> f32[2] {
  return %a
}
)") == "the module has no function '@main'");
}

//===- Regions through the json plugin -------------------------------------===//

namespace {

ir::Module partitionForJson(const std::string &text, bool keepNames = false) {
  partition::PartitionOptions options;
  options.targets = {"json"};
  ir::Module m = parse(text);
  if (keepNames)
    m.set("main", compile::withOutputNames(m.find("main")));
  auto r = partition::partitionModule(std::move(m), options, test::shippedPlugins());
  if (!r.ok())
    FAIL("partition error: " << r.error().str());
  return std::move(r->module);
}

} // namespace

const char *const kDenseTwoOutputs = R"(
def @main(%x: f32[2, 8]) -> (f32[2, 4], f32[2, 4]) {
  %w = constant f32[4, 8] [-0.75, -0.5, -0.25, 0.0, 0.25, 0.5, 0.75, -0.75, -0.5, -0.25, 0.0, 0.25, 0.5, 0.75, -0.75, -0.5, -0.25, 0.0, 0.25, 0.5, 0.75, -0.75, -0.5, -0.25, 0.0, 0.25, 0.5, 0.75, -0.75, -0.5, -0.25, 0.0]
  %d = dense(%x, %w)
  %r = relu(%d)
  %s = sigmoid(%d)
  %t = tuple(%r, %s)
  return %t
}
)";

TEST_CASE("lowering: region calls compiled by the json plugin", "[compile]") {
  ir::Module m = partitionForJson(kDenseTwoOutputs);
  std::vector<std::string> lines;
  auto regions = compile::compileRegions(m, &test::shippedPlugins(),
                                         [&](std::string_view l) { lines.emplace_back(l); });
  REQUIRE(regions.ok());
  REQUIRE(regions->size() == 1);
  const compile::CompiledRegion &r = (*regions)[0];
  CHECK(r.global == "tessera_module_json_0");
  CHECK(r.symbol == "tessera_module_json_0");
  CHECK(r.plugin == "json");
  CHECK(r.typeKey == "json");
  CHECK(!r.pluginVersion.empty());
  CHECK(runtime::unpackExternalModule(r.moduleSection)->typeKey == r.typeKey);
  CHECK(runtime::unpackExternalModule(r.moduleSection)->bytes.size() > 0);
  CHECK(r.extraInputs.empty());
  CHECK(r.ops == 3);
  CHECK(lines == std::vector<std::string>{"codegen json (1 region)"});

  auto lowered = compile::lowerMain(m, *regions);
  REQUIRE(lowered.ok());
  const runtime::Plan &p = lowered->plan;
  // The region's results keep the names of the ops that make them.
  CHECK(bufferLines(p) ==
        std::vector<std::string>{"Input x f32[2, 8]", "Output r f32[2, 4]", "Output s f32[2, 4]"});
  CHECK(stepLines(p) ==
        std::vector<std::string>{
            "External tessera_module_json_0 [0] -> [1, 2] tessera_module_json_0 (json)"});
  CHECK(p.steps[0].module == 0);
  REQUIRE(p.modules.size() == 1);
  CHECK(p.modules[0].typeKey == "json");
  CHECK(p.modules[0].plugin == "json");
  CHECK(p.modules[0].section == 0);
  CHECK(lowered->hostSteps.empty());
  // The weights live in the plugin's module, not in the artifact's weights.
  CHECK(p.weightsBytes == 0);

  // Names recorded before partitioning survive it.
  ir::Module named = partitionForJson(kDenseTwoOutputs, /*keepNames=*/true);
  auto namedRegions = compile::compileRegions(named, &test::shippedPlugins());
  REQUIRE(namedRegions.ok());
  auto namedLowered = compile::lowerMain(named, *namedRegions);
  REQUIRE(namedLowered.ok());
  CHECK(bufferLines(namedLowered->plan) ==
        std::vector<std::string>{"Input x f32[2, 8]", "Output r f32[2, 4]", "Output s f32[2, 4]"});
}

TEST_CASE("lowering: region errors", "[compile]") {
  ir::Module m = partitionForJson(R"(
def @main(%x: f32[2, 8]) -> f32[2, 4] {
  %w = constant f32[4, 8] [-0.75, -0.5, -0.25, 0.0, 0.25, 0.5, 0.75, -0.75, -0.5, -0.25, 0.0, 0.25, 0.5, 0.75, -0.75, -0.5, -0.25, 0.0, 0.25, 0.5, 0.75, -0.75, -0.5, -0.25, 0.0, 0.25, 0.5, 0.75, -0.75, -0.5, -0.25, 0.0]
  %d = dense(%x, %w)
  return %d
}
)");
  auto none = compile::compileRegions(m, nullptr);
  REQUIRE(!none.ok());
  CHECK(none.error().str() ==
        "region @tessera_module_json_0 needs plugin 'json', but no plugin registry was given");
  plugin::DiscoveryOptions empty;
  empty.searchPath = std::vector<plugin::SearchEntry>{};
  empty.probe = false;
  auto nothing = plugin::PluginRegistry::discover(empty);
  auto missing = compile::compileRegions(m, &nothing);
  REQUIRE(!missing.ok());
  CHECK(missing.error().str() == "region @tessera_module_json_0: plugin 'json' is not loaded");
  // A region call whose region was not compiled.
  auto lowered = compile::lowerMain(m, {});
  REQUIRE(!lowered.ok());
  CHECK(lowered.error().str() ==
        "@tessera_module_json_0 'd': region @tessera_module_json_0 was not compiled");
}
