//===- bench/bench_runtime.cpp - The executor: latency, dispatch, loading -===//
//
// Three measurements of compiled artifacts run by the runtime
// (runtime/session.h), one thread of output per figure:
//   1. Host code vs the reference interpreter on a small ResNet-like CNN at
//      1x3x64x64 (conv3x3(16)+bn+relu, max_pool, residual blocks at 16 and
//      32 channels, global_avg_pool, dense(10), softmax; random weights from
//      a fixed seed), compiled with compileModule (no targets): Session::run
//      median of 20 at one thread and at every thread, interp::run median of
//      5, the speed-up, and the outputs compared (|a-b| <= 1e-4 + 1e-4 |b|;
//      exit 1 when they differ).
//   2. Dispatch overhead: artifacts written by hand with 1000 steps that do
//      nothing on a 1-element f32 chain, External steps calling "noop" of the
//      bench_noop plugin (bench/plugins) and Host steps calling an empty C
//      function (a shared object built here with cc): Session::run median of
//      200, per step, with profiling off and on. Target: an external call
//      under 1 microsecond.
//   3. Load time: the CNN of part 1 and a wide variant (~11 MB of weights)
//      compiled to files in /tmp; LoadedModel::load(path) median of 20, and
//      Artifact::readFile alone (reading and the SHA-256 checks).
//
//===----------------------------------------------------------------------===//
#include "compile/compile.h"
#include "interp/interpreter.h"
#include "ir/expr.h"
#include "ir/module.h"
#include "runtime/artifact.h"
#include "runtime/plan.h"
#include "runtime/session.h"
#include "tessera/c/runtime.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#ifndef BENCH_PLUGIN_DIR
#error "BENCH_PLUGIN_DIR (the bench_noop plugin's folder) is set by bench/CMakeLists.txt"
#endif
#ifndef TESSERA_SOURCE_DIR
#error "TESSERA_SOURCE_DIR is set by bench/CMakeLists.txt"
#endif

using namespace tessera;
using namespace tessera::ir;
using runtime::LoadedModel;
using runtime::Session;

namespace {

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

/// A failure of the benchmark itself (not a slow figure): printed, exit 1.
[[noreturn]] void fail(const std::string &what) {
  std::fprintf(stderr, "bench_runtime: %s\n", what.c_str());
  std::exit(1);
}

template <typename T> T orFail(Expected<T> e, const char *what) {
  if (!e.ok())
    fail(fmt::format("{}: {}", what, e.error().str()));
  return std::move(e).value();
}

void orFail(const Status &s, const char *what) {
  if (!s.ok())
    fail(fmt::format("{}: {}", what, s.error().str()));
}

/// Median wall time of `runs` calls of f, in seconds, after one warm-up call.
template <typename F> double medianSeconds(int runs, F &&f) {
  f();
  std::vector<double> t;
  for (int r = 0; r < runs; ++r) {
    auto start = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

std::string tempPath(const std::string &stem) {
  return fmt::format("/tmp/bench_runtime_{}_{}", ::getpid(), stem);
}

//===----------------------------------------------------------------------===//
// 1. Host code vs the interpreter on a CNN
//===----------------------------------------------------------------------===//

/// Builds the CNN in IR with random weights (fixed seed). c1/c2: the two
/// blocks' widths (the stem has c1 channels).
class CnnBuilder {
public:
  Module build(int64_t c1, int64_t c2) {
    Var x = makeVar("x", Type::tensor(DType::F32, {1, 3, 64, 64}));
    Expr h = convBnRelu(x, 3, c1, 3, 1, "stem");
    h = call("max_pool2d", {h}, {{"pool_size", Ints{2, 2}}, {"strides", Ints{2, 2}}}, "pool");
    h = residual(h, c1, c1, 1, "block1");
    h = residual(h, c1, c2, 2, "block2");
    h = call("global_avg_pool2d", {h}, {}, "gap");
    h = call("flatten", {h}, {}, "flat");
    h = call("dense", {h, weight({10, c2}, double(c2))}, {}, "fc");
    h = call("add", {h, uniform({10}, 0.1)}, {}, "fc_bias");
    h = call("softmax", {h}, {}, "prob");
    Module m("cnn");
    m.set("main", makeFunction({x}, h));
    return m;
  }

private:
  using Ints = std::vector<int64_t>;

  Expr call(const char *op, std::vector<Expr> args, Attrs attrs, std::string name) {
    return expectOk(makeCall(op, std::move(args), std::move(attrs), std::move(name)));
  }
  Expr tensor(Shape shape, double lo, double hi) {
    Tensor t(DType::F32, std::move(shape));
    std::uniform_real_distribution<double> u(lo, hi);
    for (int64_t i = 0; i < t.numel(); ++i)
      t.setDouble(i, u(rng_));
    return makeConstant(std::move(t));
  }
  Expr uniform(Shape shape, double scale) { return tensor(std::move(shape), -scale, scale); }
  /// He-like scaling keeps activations O(1) through the network.
  Expr weight(Shape shape, double fanIn) { return uniform(std::move(shape), std::sqrt(6 / fanIn)); }

  Expr conv(const Expr &x, int64_t cin, int64_t cout, int64_t k, int64_t stride,
            const std::string &name) {
    int64_t p = k / 2;
    return call("conv2d", {x, weight({cout, cin, k, k}, double(cin * k * k))},
                {{"strides", Ints{stride, stride}}, {"pads", Ints{p, p, p, p}}}, name);
  }
  Expr bn(const Expr &x, int64_t c, const std::string &name) {
    return call(
        "batch_norm",
        {x, tensor({c}, 0.5, 1.5), uniform({c}, 0.1), uniform({c}, 0.1), tensor({c}, 0.5, 1.5)}, {},
        name);
  }
  Expr convBnRelu(const Expr &x, int64_t cin, int64_t cout, int64_t k, int64_t stride,
                  const std::string &name) {
    Expr c = bn(conv(x, cin, cout, k, stride, name + "_conv"), cout, name + "_bn");
    return call("relu", {c}, {}, name + "_relu");
  }
  /// conv+bn+relu+conv+bn, plus the input (or its strided 1x1 projection
  /// when the width changes), then relu.
  Expr residual(const Expr &x, int64_t cin, int64_t cout, int64_t stride, const std::string &name) {
    Expr h = convBnRelu(x, cin, cout, 3, stride, name + "_a");
    h = bn(conv(h, cout, cout, 3, 1, name + "_b_conv"), cout, name + "_b_bn");
    Expr skip = cin == cout && stride == 1 ? x : conv(x, cin, cout, 1, stride, name + "_proj");
    return call("relu", {call("add", {h, skip}, {}, name + "_add")}, {}, name + "_out");
  }

  std::mt19937 rng_{20240917};
};

Tensor randomInput(const Module &m) {
  const Type &t = m.find("main")->params()[0]->type();
  Tensor x(t.dtype(), t.shape());
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int64_t i = 0; i < x.numel(); ++i)
    x.setDouble(i, u(rng));
  return x;
}

std::shared_ptr<const LoadedModel> compileAndLoad(const Module &m) {
  auto result = orFail(compile::compileModule(m, {}, nullptr), "compiling the CNN");
  return orFail(LoadedModel::load(std::move(result.artifact), "cnn.tsr"), "loading the CNN");
}

/// Median run time (s) of a session with `threads` (set to the number it
/// uses); its output in `out`.
double timeSession(std::shared_ptr<const LoadedModel> model, int32_t &threads, const Tensor &x,
                   Tensor &out) {
  auto session = orFail(Session::create(std::move(model), {threads}), "creating a session");
  threads = session->numThreads();
  DLTensor in = x.dl();
  orFail(session->setInput(0, in), "setting the input");
  double t = medianSeconds(20, [&] { orFail(session->run(), "running the CNN"); });
  out = Tensor::copyOf(*orFail(session->output(0), "reading the output"));
  return t;
}

/// Elements where |got - want| > 1e-4 + 1e-4 |want|; the largest |got - want|.
int64_t compare(const Tensor &got, const Tensor &want, double &maxAbs) {
  if (got.shape() != want.shape())
    fail(fmt::format("output shapes differ: [{}] vs [{}]", fmt::join(got.shape(), ", "),
                     fmt::join(want.shape(), ", ")));
  int64_t bad = 0;
  maxAbs = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    double g = got.getDouble(i), w = want.getDouble(i), d = std::abs(g - w);
    maxAbs = std::max(maxAbs, std::isnan(d) ? INFINITY : d);
    bad += !(d <= 1e-4 + 1e-4 * std::abs(w));
  }
  return bad;
}

void benchCnn() {
  Module m = CnnBuilder().build(16, 32);
  Tensor x = randomInput(m);
  auto model = compileAndLoad(m);
  int32_t one = 1, cores = 0; // 0: every core
  Tensor out1, outN;
  double t1 = timeSession(model, one, x, out1);
  double tN = timeSession(model, cores, x, outN);
  interp::Value want;
  double ti = medianSeconds(5, [&] { want = orFail(interp::run(m, {x}), "interpreting the CNN"); });
  Tensor ref = want.flatten().at(0);

  std::printf("1. CNN 1x3x64x64 (conv16 + pool + res16 + res32 + gap + dense10 + softmax), "
              "%zu plan steps\n",
              model->plan().steps.size());
  std::printf("  interpreter           %9.3f ms  (median of 5)\n", ti * 1e3);
  std::printf("  host code, 1 thread   %9.3f ms  (median of 20)  %6.1fx the interpreter\n",
              t1 * 1e3, ti / t1);
  std::printf("  host code, %d threads  %9.3f ms  (median of 20)  %6.1fx the interpreter, "
              "%.2fx one thread\n",
              cores, tN * 1e3, ti / tN, t1 / tN);
  double d1, dN;
  int64_t bad1 = compare(out1, ref, d1), badN = compare(outN, ref, dN);
  std::printf("  outputs vs interpreter: max |diff| %.3g (1 thread), %.3g (%d threads); "
              "tolerance 1e-4 + 1e-4 |want|\n",
              d1, dN, cores);
  if (bad1 || badN)
    fail(fmt::format("the host code's output differs from the interpreter's in {} / {} "
                     "elements (1 thread / all threads)",
                     bad1, badN));
}

//===----------------------------------------------------------------------===//
// 2. Dispatch overhead of empty steps
//===----------------------------------------------------------------------===//

constexpr int kSteps = 1000;

/// The metadata JSON as compile/compile.cpp writes it.
std::string metadataFor(const runtime::Plan &plan, bool external) {
  auto tensor = [&](uint32_t id) {
    const runtime::TensorInfo &t = plan.buffers[id].info;
    return fmt::format(R"([{{"name": "{}", "dtype": "f32", "shape": [{}]}}])", t.name,
                       fmt::join(t.shape, ", "));
  };
  return fmt::format(
      R"({{"format": 1, "tessera_version": "{}", "inputs": {}, "outputs": {},
  "target": {{"triple": "x86_64-unknown-linux-gnu", "cpu": "generic"}},
  "plugins": [{}], "regions": [{}],
  "host_steps": {}, "arena_bytes": {}, "weights_bytes": 0}})",
      tessera_runtime_version(), tensor(plan.inputs[0]), tensor(plan.outputs[0]),
      external ? R"({"name": "bench_noop", "version": "1.0", "type_keys": ["bench_noop"]})" : "",
      external ? R"({"symbol": "noop", "plugin": "bench_noop", "ops": 0})" : "",
      external ? 0 : kSteps, plan.arenaBytes);
}

/// x -> a0 -> ... -> a998 -> out, each arrow a step that does nothing.
std::string chainArtifact(bool external, const std::string &hostCode) {
  runtime::Plan p;
  auto info = [](std::string name) { return runtime::TensorInfo{name, {kDLFloat, 32, 1}, {1}}; };
  p.buffers.push_back({runtime::BufferKind::Input, 0, 0, info("x")});
  for (int i = 0; i < kSteps - 1; ++i)
    p.buffers.push_back({runtime::BufferKind::Activation, 0, 0, info("")});
  p.buffers.push_back({runtime::BufferKind::Output, 0, 0, info("out")});
  p.inputs = {0};
  p.outputs = {uint32_t(kSteps)};
  if (external)
    p.modules = {{"bench_noop", "bench_noop", "1.0", 0}};
  for (uint32_t i = 0; i < uint32_t(kSteps); ++i) {
    runtime::Step s;
    s.kind = external ? runtime::StepKind::External : runtime::StepKind::Host;
    s.symbol = external ? "noop" : "t_nop";
    s.module = external ? 0 : -1;
    s.args = {i, i + 1};
    s.numInputs = 1;
    s.label = fmt::format("nop {}", i);
    p.steps.push_back(std::move(s));
  }
  orFail(runtime::planMemory(p), "planning the chain's memory");
  runtime::ArtifactWriter w;
  w.add(runtime::SectionKind::Metadata, metadataFor(p, external));
  w.add(runtime::SectionKind::Plan, runtime::serializePlan(p));
  if (external)
    w.add(runtime::SectionKind::ExternalModule, runtime::packExternalModule("bench_noop", ""));
  else
    w.add(runtime::SectionKind::HostCode, hostCode);
  return w.finish();
}

/// A host shared object exporting the ABI version and an empty t_nop.
std::string emptyHostLibrary() {
  const std::string base = tempPath("nop");
  std::ofstream(base + ".c") << R"(#include "runtime/host_abi.h"
const uint32_t tessera_host_abi_version = TESSERA_HOST_ABI_VERSION;
int32_t t_nop(void *const *buf, const tessera_host_ctx_t *ctx) { return 0; }
)";
  const std::string cmd =
      fmt::format("cc -shared -fPIC -O2 -I{}/core -o {}.so {}.c", TESSERA_SOURCE_DIR, base, base);
  int rc = std::system(cmd.c_str());
  std::ifstream f(base + ".so", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::remove((base + ".c").c_str());
  std::remove((base + ".so").c_str());
  if (rc != 0 || bytes.empty())
    fail("could not build the empty host library: " + cmd);
  return bytes;
}

/// Nanoseconds per step of a chain artifact's Session::run (one thread),
/// `profiled` or not.
double nsPerStep(const std::string &artifact, const char *display, bool profiled = false) {
  auto model = orFail(LoadedModel::load(artifact, display), display);
  auto session = orFail(Session::create(model, {1}), "creating a session");
  session->setProfiling(profiled);
  float x = 1.0f;
  int64_t shape[] = {1};
  DLTensor in{&x, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, nullptr, 0};
  orFail(session->setInput(0, in), "setting the input");
  double t = medianSeconds(200, [&] { orFail(session->run(), display); });
  return t * 1e9 / kSteps;
}

void benchDispatch() {
  const std::string external = chainArtifact(true, ""),
                    hostChain = chainArtifact(false, emptyHostLibrary());
  double ext = nsPerStep(external, "noop_external.tsr");
  double host = nsPerStep(hostChain, "noop_host.tsr");
  // Profiling on: two clock reads and a record per step, the plugin called
  // through call_with_context. Off (above) runs the executor's other copy of
  // its loop, which has no profiling code at all.
  double extProfiled = nsPerStep(external, "noop_external.tsr", true);
  double hostProfiled = nsPerStep(hostChain, "noop_host.tsr", true);
  std::printf("2. dispatch of an empty step, %d steps on f32[1], one thread, "
              "median of 200 runs\n",
              kSteps);
  std::printf("  external (plugin bench_noop)  %8.1f ns per step, profiled %8.1f ns\n", ext,
              extProfiled);
  std::printf("  host (empty C function)       %8.1f ns per step, profiled %8.1f ns\n", host,
              hostProfiled);
  std::printf("  external call target < 1000 ns: %s\n", ext < 1000 ? "met" : "missed");
}

//===----------------------------------------------------------------------===//
// 3. Artifact load time
//===----------------------------------------------------------------------===//

void benchLoad() {
  std::printf("3. LoadedModel::load(path), median of 20\n");
  struct Variant {
    const char *name;
    int64_t c1, c2;
  };
  for (Variant v : {Variant{"CNN 16/32", 16, 32}, Variant{"wide CNN 192/384", 192, 384}}) {
    Module m = CnnBuilder().build(v.c1, v.c2);
    auto result = orFail(compile::compileModule(m, {}, nullptr), "compiling the CNN");
    const std::string path = tempPath(fmt::format("{}x{}.tsr", v.c1, v.c2));
    std::ofstream(path, std::ios::binary)
        .write(result.artifact.data(), std::streamsize(result.artifact.size()));
    double t = medianSeconds(20, [&] { orFail(LoadedModel::load(path), "loading"); });
    // The container alone: reading the file and checking every digest.
    double tr = medianSeconds(20, [&] { orFail(runtime::Artifact::readFile(path), "reading"); });
    std::remove(path.c_str());
    std::printf("  %-18s file %7.2f MB (weights %7.2f MB)  load %8.3f ms  (%.2f GB/s), "
                "of which read + SHA-256 checks %8.3f ms\n",
                v.name, double(result.artifact.size()) / 1e6, double(result.weightsBytes) / 1e6,
                t * 1e3, double(result.artifact.size()) / t / 1e9, tr * 1e3);
  }
}

} // namespace

int main() {
  // The bench_noop plugin's folder comes first on the search path; set
  // before anything uses the global plugin registry.
  std::string path = BENCH_PLUGIN_DIR;
  if (const char *old = std::getenv("TESSERA_PLUGIN_PATH"); old && *old)
    path += std::string(":") + old;
  ::setenv("TESSERA_PLUGIN_PATH", path.c_str(), 1);

  std::printf("bench_runtime: compiled artifacts run by the executor\n");
  benchCnn();
  benchDispatch();
  benchLoad();
  return 0;
}
