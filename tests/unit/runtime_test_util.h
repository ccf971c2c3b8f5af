//===- tests/unit/runtime_test_util.h - Artifacts built by hand -*- C++ -*-===//
//
// The runtime tests do not use the compiler: they write artifacts with
// ArtifactWriter from
//   - a host shared object compiled here from C (cc -shared -fPIC) that
//     exports tessera_host_abi_version and t_add / t_mul / t_fail / t_nop
//     over N floats (N compiled in), and sets TESSERA_TEST_HOST_LOADED=1
//     from a constructor (so a test can tell whether it was ever loaded);
//   - a json plugin module: text IR -> GraphHolder -> the real plugin's
//     codegen -> save();
//   - a plan and metadata written here.
//
// The standard model (standardArtifact): inputs x, y f32[4, 8], constant w
//   a0 = x + y (host), a1 = relu(a0) (json), a2 = a1 * w (host),
//   out = a2 + x (host), out_x = x (copy).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/parser.h"
#include "bridge/plugin_bridge.h"
#include "plugin/registry.h"
#include "runtime/artifact.h"
#include "runtime/plan.h"
#include "tessera/runtime.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#ifndef TESSERA_SOURCE_DIR
#error "TESSERA_SOURCE_DIR is set by tests/CMakeLists.txt"
#endif

namespace tessera::test::rt {

using namespace tessera::runtime;

inline const DLDataType kF32{kDLFloat, 32, 1};
inline constexpr int64_t kRows = 4, kCols = 8, kN = kRows * kCols;

inline std::string readBytes(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

/// A temporary folder for this test process, removed at exit.
inline const std::string &tempDir() {
  static const std::string dir = [] {
    std::string templ = (std::filesystem::temp_directory_path() / "tessera_rt_XXXXXX").string();
    REQUIRE(mkdtemp(templ.data()));
    return templ;
  }();
  static const bool cleanup = [] {
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    });
    return true;
  }();
  (void)cleanup;
  return dir;
}

/// The host shared object's bytes for ABI `version` (cached per version).
inline const std::string &hostLibrary(uint32_t version = 1) {
  static std::map<uint32_t, std::string> cache;
  auto it = cache.find(version);
  if (it != cache.end())
    return it->second;
  const std::string base = fmt::format("{}/host_v{}", tempDir(), version);
  std::ofstream(base + ".c") << fmt::format(R"(
#include "runtime/host_abi.h"
#include <stdlib.h>
#define N {}
const uint32_t tessera_host_abi_version = {}u;
__attribute__((constructor)) static void loaded(void) {{ setenv("TESSERA_TEST_HOST_LOADED", "1", 1); }}
struct args {{ const float *a, *b; float *o; }};
static void add_body(void *c, int64_t begin, int64_t end) {{
  struct args *k = (struct args *)c;
  for (int64_t i = begin; i < end; ++i) k->o[i] = k->a[i] + k->b[i];
}}
static void mul_body(void *c, int64_t begin, int64_t end) {{
  struct args *k = (struct args *)c;
  for (int64_t i = begin; i < end; ++i) k->o[i] = k->a[i] * k->b[i];
}}
int32_t t_add(void *const *buf, const tessera_host_ctx_t *ctx) {{
  struct args k = {{(const float *)buf[0], (const float *)buf[1], (float *)buf[2]}};
  ctx->parallel_for(ctx, N, add_body, &k);
  return 0;
}}
int32_t t_mul(void *const *buf, const tessera_host_ctx_t *ctx) {{
  struct args k = {{(const float *)buf[0], (const float *)buf[1], (float *)buf[2]}};
  ctx->parallel_for(ctx, N, mul_body, &k);
  return 0;
}}
int32_t t_fail(void *const *buf, const tessera_host_ctx_t *ctx) {{ return TESSERA_HOST_ERR_INVALID; }}
int32_t t_nop(void *const *buf, const tessera_host_ctx_t *ctx) {{ return 0; }}
)",
                                            kN, version);
  const std::string cmd =
      fmt::format("cc -shared -fPIC -O1 -I{}/core -o {}.so {}.c", TESSERA_SOURCE_DIR, base, base);
  INFO(cmd);
  REQUIRE(std::system(cmd.c_str()) == 0);
  return cache[version] = readBytes(base + ".so");
}

/// A json plugin module for `fnText` (one function `@symbol`), saved.
inline std::string jsonModule(const std::string &symbol, const std::string &fnText) {
  auto m = ir::parseModule(fnText);
  INFO((m.ok() ? "" : m.error().str()));
  REQUIRE(m.ok());
  auto fn = m->find(symbol);
  REQUIRE(fn);
  auto graph = bridge::GraphHolder::fromFunction(fn, symbol);
  INFO((graph.ok() ? "" : graph.error().str()));
  REQUIRE(graph.ok());
  auto plugin = plugin::PluginRegistry::global().find("json");
  INFO("the json plugin is built into <build>/lib/tessera/plugins");
  REQUIRE(plugin);
  auto module = plugin->compile((*graph)->graph());
  INFO((module.ok() ? "" : module.error().str()));
  REQUIRE(module.ok());
  auto bytes = (*module)->save();
  REQUIRE(bytes.ok());
  return *bytes;
}

/// relu over f32[4, 8] as a json module "json_relu".
inline const std::string &reluModule() {
  static const std::string bytes = jsonModule("json_relu", R"(
def @json_relu(%p: f32[4, 8]) -> f32[4, 8] {
  %r = relu(%p) : f32[4, 8]
  return %r
}
)");
  return bytes;
}

inline std::string metadataFor(const Plan &plan) {
  auto list = [&](const std::vector<uint32_t> &ids) {
    std::vector<std::string> items;
    for (uint32_t id : ids) {
      const TensorInfo &t = plan.buffers[id].info;
      items.push_back(fmt::format(R"({{"name": "{}", "dtype": "{}", "shape": [{}]}})", t.name,
                                  dtypeString(t.dtype), fmt::join(t.shape, ", ")));
    }
    return fmt::format("[{}]", fmt::join(items, ", "));
  };
  return fmt::format(R"({{"format": 1, "tessera_version": "0.1.0", "inputs": {}, "outputs": {},
  "target": {{"triple": "x86_64-unknown-linux-gnu", "cpu": "generic"}},
  "plugins": [{{"name": "json", "version": "test", "type_keys": ["json"]}}],
  "regions": [{{"symbol": "json_relu", "plugin": "json", "ops": 1}}],
  "host_steps": 3, "arena_bytes": {}, "weights_bytes": {}}})",
                     list(plan.inputs), list(plan.outputs), plan.arenaBytes, plan.weightsBytes);
}

/// The pieces of an artifact, editable before writing.
struct ArtifactParts {
  Plan plan;
  std::string metadata; // empty: metadataFor(plan)
  std::string weights;
  std::string hostCode;
  std::vector<std::pair<std::string, std::string>> modules; // (type key, bytes)

  std::string bytes() const {
    ArtifactWriter w;
    w.add(SectionKind::Metadata, metadata.empty() ? metadataFor(plan) : metadata);
    w.add(SectionKind::Plan, serializePlan(plan));
    if (!weights.empty())
      w.add(SectionKind::Weights, weights);
    if (!hostCode.empty())
      w.add(SectionKind::HostCode, hostCode);
    for (const auto &[key, b] : modules)
      w.add(SectionKind::ExternalModule, packExternalModule(key, b));
    return w.finish();
  }
};

/// The constant w: w[i] = 0.5 + i / 16.
inline std::vector<float> weightValues() {
  std::vector<float> w(kN);
  for (int64_t i = 0; i < kN; ++i)
    w[size_t(i)] = 0.5f + float(i) / 16.0f;
  return w;
}

inline ArtifactParts standardParts() {
  ArtifactParts a;
  Plan &p = a.plan;
  auto info = [](std::string name) { return TensorInfo{std::move(name), kF32, {kRows, kCols}}; };
  p.buffers = {
      {BufferKind::Input, 0, 0, info("x")},     // 0
      {BufferKind::Input, 1, 0, info("y")},     // 1
      {BufferKind::Constant, 0, 0, info("")},   // 2 w
      {BufferKind::Activation, 0, 0, info("")}, // 3 a0
      {BufferKind::Activation, 0, 0, info("")}, // 4 a1
      {BufferKind::Activation, 0, 0, info("")}, // 5 a2
      {BufferKind::Output, 0, 0, info("out")},  // 6
      {BufferKind::Output, 1, 0, info("out_x")} // 7
  };
  p.inputs = {0, 1};
  p.outputs = {6, 7};
  p.modules = {{"json", "json", "test", 0}};
  auto step = [&](StepKind k, std::string sym, std::vector<uint32_t> args, uint32_t nin,
                  std::string label, int32_t module = -1) {
    Step s;
    s.kind = k;
    s.symbol = std::move(sym);
    s.args = std::move(args);
    s.numInputs = nin;
    s.label = std::move(label);
    s.module = module;
    p.steps.push_back(std::move(s));
  };
  step(StepKind::Host, "t_add", {0, 1, 3}, 2, "add 'a0'");
  step(StepKind::External, "json_relu", {3, 4}, 1, "json_relu", 0);
  step(StepKind::Host, "t_mul", {4, 2, 5}, 2, "multiply 'a2'");
  step(StepKind::Host, "t_add", {5, 0, 6}, 2, "add 'out'");
  step(StepKind::Copy, "", {0, 7}, 1, "copy 'x' to output 'out_x'");
  std::vector<float> w = weightValues();
  a.weights.assign(reinterpret_cast<const char *>(w.data()), w.size() * sizeof(float));
  a.weights.resize(128, '\0');
  p.weightsBytes = 128;
  REQUIRE(planMemory(p).ok());
  a.hostCode = hostLibrary();
  a.modules = {{"json", reluModule()}};
  return a;
}

/// out = relu(x + y) * w + x, computed here.
inline std::vector<float> expectedOut(const std::vector<float> &x, const std::vector<float> &y) {
  std::vector<float> w = weightValues(), out(kN);
  for (size_t i = 0; i < size_t(kN); ++i)
    out[i] = std::max(x[i] + y[i], 0.0f) * w[i] + x[i];
  return out;
}

/// Deterministic inputs; `seed` varies them.
inline std::vector<float> pattern(int seed) {
  std::vector<float> v(kN);
  for (int64_t i = 0; i < kN; ++i)
    v[size_t(i)] = float((i * 7 + seed * 13) % 19) / 4.0f - 2.0f;
  return v;
}

inline DLTensor tensorOf(void *data, const std::vector<int64_t> &shape, DLDataType dtype = kF32) {
  return tessera::rt::makeTensor(data, dtype, shape);
}

} // namespace tessera::test::rt
