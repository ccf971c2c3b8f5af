//===- unit/compile_module_test.cpp - Model to artifact, in process -------===//
//
// compile/compile.h end to end inside one process: compileModule on small
// text-IR models (host only, and with the json plugin), the artifact's
// sections and metadata JSON, the progress lines, then the artifact loaded
// by the runtime (runtime/session.h) and run; outputs compared with the
// reference interpreter (|a-b| <= 1e-5 + 1e-5 |b|: same f32 arithmetic,
// different summation order).
//
//===----------------------------------------------------------------------===//
#include <catch2/catch.hpp>

#include "shipped_plugins.h"
#include "compile/compile.h"
#include "interp/interpreter.h"
#include "ir/parser.h"
#include "plugin/registry.h"
#include "runtime/artifact.h"
#include "runtime/cpu_features.h"
#include "runtime/session.h"
#include "tessera/c/runtime.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <random>

using namespace tessera;

namespace {

const char *kModel = R"(
def @main(%x: f32[2, 8], %y: f32[8]) -> (f32[2, 4], f32[8]) {
  %w = constant f32[4, 8] [0.5, -0.25, 0.125, 1, -1, 0.75, 0.5, 0.25, -0.5, 0.25, 1, 0.5, 0.25, -0.75, 0, 1, 0.5, 0.5, -0.5, -0.5, 0.25, 0.25, 1, -1, 0, 0.125, 0.25, 0.5, 1, 2, -2, 1]
  %d = dense(%x, %w)
  %a = add(%d, %d)
  %e = exp(%a)
  %r = relu(%e)
  %t = tuple(%r, %y)
  return %t
}
)";

std::vector<ir::Tensor> randomInputs(const ir::Module &m) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<ir::Tensor> out;
  for (const auto &p : m.find("main")->params()) {
    ir::Tensor t(p->type().dtype(), p->type().shape());
    for (int64_t i = 0; i < t.numel(); ++i)
      t.setDouble(i, u(rng));
    out.push_back(t);
  }
  return out;
}

/// Runs a loaded `model` of `m` on random inputs and compares every output
/// with the interpreter.
void runAndCompare(const std::shared_ptr<const runtime::LoadedModel> &model, const ir::Module &m) {
  auto session = runtime::Session::create(model, {1});
  REQUIRE(session.ok());
  std::vector<ir::Tensor> inputs = randomInputs(m);
  std::vector<DLTensor> dl;
  for (const auto &t : inputs)
    dl.push_back(t.dl());
  for (size_t i = 0; i < dl.size(); ++i)
    REQUIRE((*session)->setInput(i, dl[i]).ok());
  auto ran = (*session)->run();
  if (!ran.ok())
    FAIL(ran.error().str());
  auto want = interp::run(m, inputs);
  REQUIRE(want.ok());
  auto expected = want->flatten();
  REQUIRE(expected.size() == model->outputs().size());
  for (size_t i = 0; i < expected.size(); ++i) {
    auto out = (*session)->output(i);
    REQUIRE(out.ok());
    ir::Tensor got = ir::Tensor::copyOf(**out);
    REQUIRE(got.shape() == expected[i].shape());
    for (int64_t k = 0; k < got.numel(); ++k) {
      double g = got.getDouble(k), w = expected[i].getDouble(k);
      INFO("output " << i << " element " << k);
      CHECK(std::abs(g - w) <= 1e-5 + 1e-5 * std::abs(w));
    }
  }
}

/// Compiles `text`, loads the artifact with the runtime, runs it on random
/// inputs and compares every output with the interpreter.
compile::CompileResult compileAndRun(const std::string &text, compile::CompileOptions options,
                                     const plugin::PluginRegistry *registry) {
  auto m = ir::parseModule(text);
  REQUIRE(m.ok());
  auto result = compile::compileModule(*m, options, registry);
  if (!result.ok())
    FAIL(result.error().str());
  auto model = runtime::LoadedModel::load(result->artifact, "test.tsr");
  if (!model.ok())
    FAIL(model.error().str());
  runAndCompare(*model, *m);
  return std::move(result).value();
}

nlohmann::json metadataOf(const std::string &artifact) {
  auto a = runtime::Artifact::fromBytes(artifact, "test.tsr");
  REQUIRE(a.ok());
  auto sections = a->sectionsOf(runtime::SectionKind::Metadata);
  REQUIRE(sections.size() == 1);
  return nlohmann::json::parse(sections[0].bytes);
}

} // namespace

TEST_CASE("compileModule: host only", "[compile]") {
  std::vector<std::string> lines;
  compile::CompileOptions options;
  options.progress = [&](std::string_view l) { lines.emplace_back(l); };
  compile::CompileResult r = compileAndRun(kModel, options, nullptr);
  // dense, then add+exp+relu fused into one step; %y is copied to its output.
  CHECK(r.hostSteps == 2);
  CHECK(r.externalSteps == 0);
  CHECK(r.weightsBytes == 128);
  CHECK(r.partitionSummary == "No targets: module 'module' runs on the host (4 ops).\n");
  REQUIRE(lines.size() >= 4);
  CHECK(lines[0] == "optimising");
  CHECK(lines[1] == "fused 3 elementwise ops into 1 host step");
  CHECK(lines[2] == "lowering @main to an executor plan");
  CHECK(lines.back().rfind("memory: arena ", 0) == 0);

  auto a = runtime::Artifact::fromBytes(r.artifact, "test.tsr");
  REQUIRE(a.ok());
  std::vector<uint32_t> kinds;
  for (const auto &s : a->sections())
    kinds.push_back(s.kind);
  CHECK(kinds == std::vector<uint32_t>{1, 2, 3, 4});

  nlohmann::json meta = metadataOf(r.artifact);
  CHECK(meta["format"] == 1);
  CHECK(meta["tessera_version"] == "0.1.0");
  CHECK(meta["inputs"] == nlohmann::json::parse(R"([{"name":"x","dtype":"f32","shape":[2,8]},
                                                    {"name":"y","dtype":"f32","shape":[8]}])"));
  CHECK(meta["outputs"] == nlohmann::json::parse(R"([{"name":"r","dtype":"f32","shape":[2,4]},
                                                     {"name":"output_1","dtype":"f32","shape":[8]}])"));
  CHECK(meta["plugins"] == nlohmann::json::array());
  CHECK(meta["regions"] == nlohmann::json::array());
  CHECK(meta["host_steps"] == 2);
  CHECK(meta["weights_bytes"] == 128);
  CHECK(meta["arena_bytes"] == r.arenaBytes);
  CHECK(meta["target"]["triple"].get<std::string>().rfind("x86_64", 0) == 0);
  CHECK(!meta["target"]["cpu"].get<std::string>().empty());
}

TEST_CASE("compileModule: portable CPU and every opt level", "[compile]") {
  for (int level : {0, 3}) {
    compile::CompileOptions options;
    options.codegen.cpu = "x86-64";
    options.codegen.optLevel = level;
    compile::CompileResult r = compileAndRun(kModel, options, nullptr);
    CHECK(metadataOf(r.artifact)["target"]["cpu"] == "x86-64");
  }
}

TEST_CASE("compileModule: host code for several CPUs, the runtime loads one", "[compile]") {
  compile::CompileOptions options;
  // Given in any order; the lowest is x86-64-v2, whatever the machine.
  REQUIRE(compile::setCpus(options, "x86-64-v2,x86-64-v3").ok());
  CHECK(options.codegen.cpu == "x86-64-v2");
  CHECK(options.hostCpus == std::vector<std::string>{"x86-64-v3", "x86-64-v2"});
  compile::CompileResult r = compileAndRun(kModel, options, nullptr);
  nlohmann::json meta = metadataOf(r.artifact);
  REQUIRE(meta["host_code"].size() == 2);
  CHECK(meta["host_code"][0]["cpu"] == "x86-64-v3");
  CHECK(meta["host_code"][0]["encoding"] == "zlib");
  CHECK(meta["host_code"][1]["cpu"] == "x86-64-v2");
  CHECK(meta["host_code"][1]["section"] == 0);
  CHECK(meta["target"]["cpu"] == "x86-64-v2");
  auto artifact = runtime::Artifact::fromBytes(r.artifact, "levels");
  REQUIRE(artifact.ok());
  auto sections = artifact->sectionsOf(runtime::SectionKind::HostCode);
  REQUIRE(sections.size() == 2);
  CHECK(sections[0].bytes.size() == meta["host_code"][1]["size"].get<size_t>());
  CHECK(sections[1].bytes.size() < meta["host_code"][0]["size"].get<size_t>() / 2);
  // The runtime's choice: v3 where the CPU has it (compileAndRun ran it).
  auto model = runtime::LoadedModel::load(r.artifact, "levels");
  REQUIRE(model.ok());
  const std::string here =
      runtime::missingCpuFeatures(meta["host_code"][0]["features"]).empty() ? "x86-64-v3"
                                                                            : "x86-64-v2";
  CHECK((*model)->hostCpu() == here);
  tessera_model_t *handle = nullptr; // what an app sees
  tessera_status_t *status = tessera_model_load_bytes(r.artifact.data(), r.artifact.size(), &handle);
  REQUIRE(status == nullptr);
  CHECK(std::string(tessera_model_host_cpu(handle)) == here);
  tessera_model_release(handle);
  // One CPU: no list.
  REQUIRE(compile::setCpus(options, "native").ok());
  CHECK(options.codegen.cpu == "native");
  CHECK(options.hostCpus.empty());
  for (const char *bad : {"", "x86-64-v3,", "x86-64-v3,x86-64-v3", "x86-64-v3,pentium9000"}) {
    INFO(bad);
    CHECK(!compile::setCpus(options, bad).ok());
  }
}

TEST_CASE("compileModule: regions through the json plugin", "[compile]") {
  std::vector<std::string> lines;
  compile::CompileOptions options;
  options.targets = {"json"};
  options.progress = [&](std::string_view l) { lines.emplace_back(l); };
  compile::CompileResult r = compileAndRun(kModel, options, &test::shippedPlugins());
  CHECK(r.externalSteps == 1);
  CHECK(r.hostSteps == 0);
  CHECK(r.partitionSummary.rfind("Partitioned module 'module' among json: 1 region", 0) == 0);
  CHECK(std::find(lines.begin(), lines.end(), "codegen json (1 region)") != lines.end());
  nlohmann::json meta = metadataOf(r.artifact);
  CHECK(meta["plugins"] ==
        nlohmann::json::parse(R"([{"name":"json","version":"1.0.0","type_keys":["json"]}])"));
  CHECK(meta["regions"] ==
        nlohmann::json::parse(R"([{"symbol":"tessera_module_json_0","plugin":"json","ops":4}])"));
  // Names recorded before partitioning survive it.
  CHECK(meta["outputs"][0]["name"] == "r");
  auto a = runtime::Artifact::fromBytes(r.artifact, "test.tsr");
  REQUIRE(a.ok());
  CHECK(a->sectionsOf(runtime::SectionKind::HostCode).empty());
  auto modules = a->sectionsOf(runtime::SectionKind::ExternalModule);
  REQUIRE(modules.size() == 1);
  CHECK(runtime::unpackExternalModule(modules[0].bytes)->typeKey == "json");
}

// Each model's host code is its own shared object, loaded from a memfd. Two
// models alive at once (and a third loaded after the first is gone) must
// each run their own code: dlopen matches /proc/self/fd/N paths by name.
TEST_CASE("compileModule: several models loaded at once run their own code", "[compile]") {
  std::string expText = kModel, tanhText = kModel, sigmoidText = kModel;
  tanhText.replace(tanhText.find("exp(%a)"), 7, "tanh(%a)");
  sigmoidText.replace(sigmoidText.find("exp(%a)"), 7, "sigmoid(%a)");
  std::vector<ir::Module> modules;
  std::vector<std::string> artifacts;
  for (const std::string *text : {&expText, &tanhText, &sigmoidText}) {
    auto m = ir::parseModule(*text);
    REQUIRE(m.ok());
    auto r = compile::compileModule(*m, {}, nullptr);
    REQUIRE(r.ok());
    modules.push_back(std::move(*m));
    artifacts.push_back(std::move(r->artifact));
  }
  auto a = runtime::LoadedModel::load(artifacts[0], "a.tsr");
  auto b = runtime::LoadedModel::load(artifacts[1], "b.tsr");
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  runAndCompare(*b, modules[1]);
  runAndCompare(*a, modules[0]);
  a->reset(); // frees its fd number for the next memfd
  auto c = runtime::LoadedModel::load(artifacts[2], "c.tsr");
  REQUIRE(c.ok());
  runAndCompare(*c, modules[2]);
  runAndCompare(*b, modules[1]);
}

TEST_CASE("compileModule: errors", "[compile]") {
  auto m = ir::parseModule(kModel);
  REQUIRE(m.ok());
  compile::CompileOptions options;
  options.targets = {"json"};
  auto noRegistry = compile::compileModule(*m, options, nullptr);
  REQUIRE(!noRegistry.ok());
  CHECK(noRegistry.error().str() == "targets were given but no plugin registry");
  auto g = ir::parseModule("def @g(%a: f32[2]) -> f32[2] {\n  return %a\n}\n");
  REQUIRE(g.ok());
  auto noMain = compile::compileModule(*g, {}, nullptr);
  REQUIRE(!noMain.ok());
  CHECK(noMain.error().str() == "the module has no function '@main'");
}
