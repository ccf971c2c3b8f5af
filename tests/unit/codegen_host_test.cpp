//===- tests/unit/codegen_host_test.cpp - Host steps through LLVM ---------===//
//
// The host code generator end to end on single ops: every op with a host
// lowering, every sample of the conformance kit's catalogue for it, built by
// LLVM (kernel library bitcode + step functions, specialised, optimised for
// the host CPU) into a shared object, dlopen'ed, called through the host ABI
// and compared with the reference interpreter with the kit's tolerances
// (kit/kit.h). tests/unit/host_kernels_*_test.cpp check the
// same kernels compiled natively; this checks what LLVM makes of them.
//
//===----------------------------------------------------------------------===//
#include "codegen/host.h"
#include "host_kernel_harness.h"
#include "ir/parser.h"
#include "runtime/cpu_features.h"
#include "test_util.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

using namespace tessera;

namespace {

/// A host shared object written to a file and dlopen'ed; removed at the end.
class LoadedHost {
public:
  explicit LoadedHost(const std::string &bytes) {
    static int counter = 0;
    path_ = fmt::format("codegen_host_test_{}_{}.so", ::getpid(), counter++);
    std::ofstream(path_, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
    handle_ = ::dlopen(("./" + path_).c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_)
      error_ = ::dlerror();
  }
  ~LoadedHost() {
    if (handle_)
      ::dlclose(handle_);
    std::remove(path_.c_str());
  }
  const std::string &error() const { return error_; }
  void *symbol(const std::string &name) const { return ::dlsym(handle_, name.c_str()); }

private:
  std::string path_, error_;
  void *handle_ = nullptr;
};

/// A single-op kit case prepared for both paths.
struct Prepared {
  kit::KitCase kase;
  codegen::HostStepSpec spec;
  std::vector<ir::Tensor> args;   // the call's arguments
  std::vector<ir::Tensor> params; // @main's inputs
};

Expected<Prepared> prepare(const kit::OpSample &sample, size_t index, uint64_t seed) {
  auto kc = kit::buildOpCase(sample, seed);
  if (!kc)
    return std::move(kc).error();
  Prepared p{std::move(*kc), {}, {}, {}};
  const ir::Function main = p.kase.module.find("main");
  const auto *call = p.kase.ops.at(0)->as<ir::CallNode>();
  std::mt19937_64 rng(seed + 1);
  std::unordered_map<const ir::ExprNode *, ir::Tensor> values;
  for (size_t i = 0; i < main->params().size(); ++i) {
    p.params.push_back(kit::randomTensor(main->params()[i]->type(),
                                                    p.kase.inputDomains[i], rng));
    values[main->params()[i].get()] = p.params.back();
  }
  for (const ir::Expr &arg : call->args())
    p.args.push_back(arg->as<ir::ConstantNode>() ? arg->as<ir::ConstantNode>()->data()
                                                 : values.at(arg.get()));
  TS_ASSIGN_OR_RETURN(p.spec.call, codegen::lowerHostOp(*call));
  TS_ASSIGN_OR_RETURN(p.spec.types, codegen::hostOpTypes(*call));
  // Constants the lowering laid out are passed so, as compile/lower.cpp does.
  for (const codegen::PackedInput &packed : p.spec.call.packed)
    p.args.at(packed.input) = packed.data;
  p.spec.symbol = fmt::format("step_{}", index);
  return p;
}

/// Runs step `p` from `host`; "" when it matches the interpreter.
std::string runAndCompare(const LoadedHost &host, const Prepared &p) {
  auto fn = reinterpret_cast<tessera_host_fn_t>(host.symbol(p.spec.symbol));
  if (!fn)
    return "symbol " + p.spec.symbol + " missing";
  std::vector<ir::Tensor> outputs;
  for (const ir::Type &t : p.spec.types.outputs)
    outputs.emplace_back(t.dtype(), t.shape());
  std::vector<void *> buffers;
  for (const ir::Tensor &t : p.args)
    buffers.push_back(const_cast<uint8_t *>(t.bytes()));
  for (ir::Tensor &t : outputs)
    buffers.push_back(t.bytes());
  std::unique_ptr<void, test::hostkernel::AlignedFree> scratch;
  if (p.spec.call.scratchBytes) {
    scratch.reset(std::aligned_alloc(64, (p.spec.call.scratchBytes + 63) / 64 * 64));
    buffers.push_back(scratch.get());
  }
  int32_t rc = fn(buffers.data(), test::hostkernel::testContext());
  if (rc != TESSERA_HOST_OK)
    return fmt::format("'{}': the step returned {}", p.kase.label, rc);
  auto want = interp::run(p.kase.module, p.params);
  if (!want)
    return "interpreter: " + want.error().str();
  std::vector<ir::Tensor> wantT = want->flatten();
  for (size_t i = 0; i < wantT.size(); ++i) {
    std::string diff = kit::compareTensors(outputs.at(i), wantT[i]);
    if (!diff.empty())
      return fmt::format("'{}': output {}: {}", p.kase.label, i, diff);
  }
  return "";
}

} // namespace

TEST_CASE("host codegen: every lowered op's catalogue samples through LLVM match the interpreter",
          "[codegen][host-codegen]") {
  const auto ops = codegen::hostLowerings().ops();
  for (const std::string &op : ops) {
    auto samples = kit::samplesFor(op);
    if (samples.empty())
      continue; // the native kernel tests cover ops the catalogue lacks
    DYNAMIC_SECTION("op " << op) {
      std::vector<Prepared> cases;
      std::vector<codegen::HostStepSpec> specs;
      for (size_t i = 0; i < samples.size(); ++i) {
        auto p = prepare(samples[i], i, 11 + i);
        if (!p)
          FAIL(samples[i].label() << ": " << p.error().str());
        specs.push_back(p->spec);
        cases.push_back(std::move(*p));
      }
      auto so = codegen::buildHostLibrary(specs, {});
      if (!so)
        FAIL(so.error().str());
      LoadedHost host(*so);
      REQUIRE(host.error() == "");
      REQUIRE(host.symbol("tessera_host_abi_version") != nullptr);
      CHECK(*static_cast<const uint32_t *>(host.symbol("tessera_host_abi_version")) ==
            TESSERA_HOST_ABI_VERSION);
      for (const Prepared &p : cases) {
        std::string diff = runAndCompare(host, p);
        CHECK(diff == "");
      }
    }
  }
}

namespace {

/// `text`'s @main as one fused host step, run through `ctx` on random
/// inputs from `seed`: "" when it matches the interpreter, else the
/// difference.
std::string runFusedStep(const char *text, const tessera_host_ctx_t *ctx, uint64_t seed) {
  auto m = ir::parseModule(text);
  REQUIRE(m.ok());
  const ir::Function main = m->find("main");
  codegen::HostStepSpec spec;
  spec.symbol = "fused_0";
  spec.fused = main;
  auto so = codegen::buildHostLibrary({spec}, {});
  REQUIRE(so.ok());
  LoadedHost host(*so);
  REQUIRE(host.error() == "");
  auto fn = reinterpret_cast<tessera_host_fn_t>(host.symbol("fused_0"));
  REQUIRE(fn);
  std::mt19937_64 rng(seed);
  std::vector<ir::Tensor> inputs;
  std::vector<void *> buffers;
  for (const ir::Var &p : main->params()) {
    inputs.push_back(kit::randomTensor(p->type(), kit::Domain::Any, rng));
    buffers.push_back(inputs.back().bytes());
  }
  ir::Tensor out(ir::DType::F32, main->resultType().shape());
  buffers.push_back(out.bytes());
  REQUIRE(fn(buffers.data(), ctx) == TESSERA_HOST_OK);
  auto want = interp::run(*m, inputs);
  REQUIRE(want.ok());
  return kit::compareTensors(out, want->tensor);
}

} // namespace

TEST_CASE("host codegen: a fused elementwise step", "[codegen][host-codegen]") {
  CHECK(runFusedStep(R"(
def @main(%x: f32[4, 33], %y: f32[4, 33]) -> f32[4, 33] {
  %m = multiply(%x, %y)
  %a = add(%m, %x)
  %r = relu(%a)
  return %r
}
)",
                     test::hostkernel::testContext(), 3) == "");
}

TEST_CASE("host codegen: a large fused step runs its loop nest in ranges on the threads",
          "[codegen][host-codegen]") {
  // 35,000 and 40,000 elements (over codegen/host.cpp's threshold): the step
  // hands ranges of the outermost loop (5 rows; one merged loop of 40,000) to
  // parallel_for once, which runs them in 3 chunks, last one first.
  static int calls = 0;
  static const tessera_host_ctx_t ctx{
      [](const tessera_host_ctx_t *, int64_t n, tessera_host_body_t body, void *closure) {
        ++calls;
        for (int64_t c = 2; c >= 0; --c)
          body(closure, n * c / 3, n * (c + 1) / 3);
      },
      nullptr, 3};
  for (const char *text : {R"(
def @main(%x: f32[5, 7000], %b: f32[5, 1]) -> f32[5, 7000] {
  %a = add(%x, %b)
  %s = sigmoid(%a)
  %m = multiply(%s, %x)
  return %m
}
)",
                           R"(
def @main(%x: f32[40000], %b: f32[40000]) -> f32[40000] {
  %a = subtract(%x, %b)
  %r = tanh(%a)
  return %r
}
)"}) {
    calls = 0;
    CHECK(runFusedStep(text, &ctx, 5) == "");
    CHECK(calls == 1);
  }
}

TEST_CASE("host codegen: errors name the step, the kernel and the CPU", "[codegen][host-codegen]") {
  codegen::HostStepSpec spec;
  spec.symbol = "s0";
  spec.call.kernel = "no_such_kernel";
  auto so = codegen::buildHostLibrary({spec}, {});
  REQUIRE_FALSE(so.ok());
  CHECK(so.error().str() == "step 's0': the kernel library has no kernel 'tk_no_such_kernel'");

  codegen::CodegenOptions options;
  options.cpu = "pentium9000";
  so = codegen::buildHostLibrary({}, options);
  REQUIRE_FALSE(so.ok());
  CHECK(so.error().str().rfind("unknown CPU 'pentium9000'", 0) == 0);
}

TEST_CASE("host codegen: identical steps share one function; parts built on threads run right",
          "[codegen][host-codegen]") {
  // Every sample of a few ops, each twice under two symbols (as a ResNet's
  // repeated blocks give identical steps).
  std::vector<Prepared> cases;
  std::vector<codegen::HostStepSpec> specs;
  for (const char *op : {"conv2d", "max_pool2d", "softmax", "relu", "dense"})
    for (const kit::OpSample &sample : kit::samplesFor(op)) {
      auto p = prepare(sample, cases.size(), 7 + cases.size());
      REQUIRE(p.ok());
      Prepared twin = *p;
      twin.spec.symbol += "_twin";
      specs.push_back(p->spec);
      specs.push_back(twin.spec);
      cases.push_back(std::move(*p));
      cases.push_back(std::move(twin));
    }
  REQUIRE(cases.size() > 8);
  for (unsigned threads : {1u, 2u, 3u}) {
    INFO("threads " << threads);
    codegen::CodegenOptions options;
    options.threads = threads;
    std::vector<std::string> said;
    auto so = codegen::buildHostLibrary(specs, options, nullptr,
                                        [&](std::string_view line) { said.emplace_back(line); });
    REQUIRE(so.ok());
    REQUIRE(said.size() == 2);
    CHECK(said[0].find(fmt::format("{} steps ({} distinct)", specs.size(), specs.size() / 2)) !=
          std::string::npos);
    CHECK(said[1].find(fmt::format("from {} part", threads)) != std::string::npos);
    LoadedHost host(*so);
    REQUIRE(host.error() == "");
    for (size_t i = 0; i < cases.size(); i += 2) {
      INFO(cases[i].spec.symbol);
      CHECK(host.symbol(cases[i].spec.symbol) == host.symbol(cases[i + 1].spec.symbol));
      if (i > 0)
        CHECK(host.symbol(cases[i].spec.symbol) != host.symbol(cases[i - 2].spec.symbol));
      CHECK(runAndCompare(host, cases[i]) == "");
      CHECK(runAndCompare(host, cases[i + 1]) == "");
    }
  }
}

TEST_CASE("host codegen: several CPUs from one front end, each its own shared object",
          "[codegen][host-codegen]") {
  std::vector<Prepared> cases;
  std::vector<codegen::HostStepSpec> specs;
  for (const char *op : {"conv2d", "dense", "softmax", "relu"})
    for (const kit::OpSample &sample : kit::samplesFor(op)) {
      auto p = prepare(sample, cases.size(), 11 + cases.size());
      REQUIRE(p.ok());
      specs.push_back(p->spec);
      cases.push_back(std::move(*p));
    }
  // Not in order of ISA level: the results follow `cpus`, the front end is
  // built for the most portable one.
  const std::vector<std::string> cpus = {"x86-64-v3", "x86-64-v4", "x86-64-v2"};
  for (unsigned threads : {1u, 2u}) {
    INFO("threads " << threads);
    codegen::CodegenOptions options;
    options.threads = threads;
    std::vector<std::string> said;
    std::vector<codegen::HostBuildInfo> infos;
    auto libraries = codegen::buildHostLibraries(
        specs, options, cpus, &infos, [&](std::string_view line) { said.emplace_back(line); });
    REQUIRE(libraries.ok());
    REQUIRE(libraries->size() == 3);
    REQUIRE(infos.size() == 3);
    REQUIRE(said.size() == 4);
    CHECK(said[0].find("optimising for x86-64-v2, x86-64-v3, x86-64-v4 at O2") !=
          std::string::npos);
    auto has = [](const codegen::HostBuildInfo &info, const char *feature) {
      return std::count(info.features.begin(), info.features.end(), feature) == 1;
    };
    for (size_t i = 0; i < cpus.size(); ++i) {
      INFO(cpus[i]);
      CHECK(infos[i].cpu == cpus[i]);
      CHECK(said[1 + i].find("host code for x86-64-v" + std::to_string(2 + i)) !=
            std::string::npos);
    }
    CHECK((has(infos[0], "avx2") && !has(infos[0], "avx512f")));
    CHECK(has(infos[1], "avx512f"));
    CHECK((has(infos[2], "sse4.2") && !has(infos[2], "avx")));
    // Each level's code is its own: the same IR compiled for another CPU.
    CHECK((*libraries)[0] != (*libraries)[1]);
    CHECK((*libraries)[0] != (*libraries)[2]);
    for (size_t i = 0; i < cpus.size(); ++i) {
      if (!runtime::requireCpuFeatures(infos[i].features, cpus[i]).ok())
        continue; // this CPU cannot run it (v4 without AVX-512)
      INFO("running the code for " << cpus[i]);
      LoadedHost host((*libraries)[i]);
      REQUIRE(host.error() == "");
      for (const Prepared &p : cases) {
        INFO(p.spec.symbol);
        CHECK(runAndCompare(host, p) == "");
      }
    }
  }
}
