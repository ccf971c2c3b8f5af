//===- tests/unit/codegen_elementwise_test.cpp - LLVM elementwise kernels -===//
//
// Fused elementwise kernels: text IR -> LLVM -> object code -> shared object
// (system linker) -> dlopen -> run, compared with the reference interpreter
// (f32 kernels vs the interpreter's double math: rtol 1e-5, atol 1e-6).
//
//===----------------------------------------------------------------------===//
#include "codegen/elementwise.h"
#include "interp/interpreter.h"
#include "ir/parser.h"
#include "test_util.h"

#include <dlfcn.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <unistd.h>

using namespace tessera;
using namespace tessera::test;

namespace {

using KernelFn = void (*)(const float *const *, float *, int64_t);

/// A loaded shared object, removed and closed at the end.
struct Loaded {
  void *handle = nullptr;
  std::string path;
  ~Loaded() {
    if (handle)
      ::dlclose(handle);
    if (!path.empty())
      std::remove(path.c_str());
  }
};

void load(const std::string &so, Loaded &out) {
  out.path = "codegen_test_" + std::to_string(::getpid()) + ".so";
  std::ofstream(out.path, std::ios::binary).write(so.data(), std::streamsize(so.size()));
  out.handle = ::dlopen(("./" + out.path).c_str(), RTLD_NOW | RTLD_LOCAL);
  INFO(::dlerror());
  REQUIRE(out.handle != nullptr);
}

/// `fn` compiled as kernel `symbol`, linked, loaded into `lib`, looked up.
KernelFn compileKernel(const std::string &symbol, const ir::Function &fn, Loaded &lib,
                       const codegen::CodegenOptions &options = {}) {
  auto obj = codegen::emitObject({{symbol, fn}}, options);
  INFO((obj.ok() ? std::string() : obj.error().str()));
  REQUIRE(obj.ok());
  auto so = codegen::linkSharedObject({*obj});
  REQUIRE(so.ok());
  load(*so, lib);
  auto kernel = reinterpret_cast<KernelFn>(::dlsym(lib.handle, symbol.c_str()));
  REQUIRE(kernel != nullptr);
  return kernel;
}

ir::Function mainOf(const std::string &text) {
  auto m = ir::parseModule(text);
  if (!m.ok())
    FAIL(m.error().str());
  return m->find("main");
}

Tensor randomF32(ir::Shape shape, std::mt19937 &rng, double lo, double hi) {
  Tensor t(ir::DType::F32, shape);
  std::uniform_real_distribution<double> u(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.setDouble(i, u(rng));
  return t;
}

} // namespace

TEST_CASE("codegen: a fused elementwise chain matches the interpreter", "[codegen]") {
  const std::string text = R"(
def @main(%x: f32[3, 333], %y: f32[3, 333]) -> f32[3, 333] {
  %one5 = constant f32[] [1.5]
  %a = multiply(%x, %y) : f32[3, 333]
  %ex = exp(%x) : f32[3, 333]
  %b = add(%a, %ex) : f32[3, 333]
  %c = relu(%b) : f32[3, 333]
  %sy = sigmoid(%y) : f32[3, 333]
  %d = subtract(%c, %sy) : f32[3, 333]
  %t = tanh(%d) : f32[3, 333]
  %e = leaky_relu(%t) {alpha=0.2} : f32[3, 333]
  %hs = hard_swish(%e) : f32[3, 333]
  %f = clip(%hs) {min=-0.5, max=0.75} : f32[3, 333]
  %hx = hard_sigmoid(%x) : f32[3, 333]
  %g = maximum(%f, %hx) : f32[3, 333]
  %ay = abs(%y) : f32[3, 333]
  %den = add(%ay, %one5) : f32[3, 333]
  %h = divide(%g, %den) : f32[3, 333]
  %ax = abs(%x) : f32[3, 333]
  %sq = sqrt(%ax) : f32[3, 333]
  %r = minimum(%h, %sq) : f32[3, 333]
  return %r
}
)";
  ir::Function fn = mainOf(text);
  auto obj = codegen::emitObject({{"k_chain", fn}});
  REQUIRE(obj.ok());
  CHECK(obj->substr(0, 4) == "\x7f" "ELF");
  auto so = codegen::linkSharedObject({*obj});
  INFO((so.ok() ? std::string() : so.error().str()));
  REQUIRE(so.ok());
  Loaded lib;
  load(*so, lib);
  auto kernel = reinterpret_cast<KernelFn>(::dlsym(lib.handle, "k_chain"));
  REQUIRE(kernel != nullptr);

  std::mt19937 rng(11);
  Tensor x = randomF32({3, 333}, rng, -3, 3), y = randomF32({3, 333}, rng, -3, 3);
  Tensor out(ir::DType::F32, {3, 333});
  const float *inputs[] = {x.data<float>(), y.data<float>()};
  kernel(inputs, out.data<float>(), out.numel());

  auto m = ir::parseModule(text);
  REQUIRE(m.ok());
  auto want = interp::run(*m, {x, y});
  REQUIRE(want.ok());
  requireClose(out, want->tensor, 1e-5, 1e-6);
}

// The activations fuse-activations makes out of exporters' chains: each is
// one fused loop on the host, and matches the interpreter.
TEST_CASE("codegen: silu, mish and both gelu forms in a fused loop match the interpreter",
          "[codegen]") {
  const std::string text = R"(
def @main(%x: f32[3, 333]) -> f32[3, 333] {
  %s = silu(%x) : f32[3, 333]
  %g = gelu(%s) {approximate="none"} : f32[3, 333]
  %t = gelu(%x) {approximate="tanh"} : f32[3, 333]
  %m = mish(%x) : f32[3, 333]
  %a = add(%g, %t) : f32[3, 333]
  %r = add(%a, %m) : f32[3, 333]
  return %r
}
)";
  ir::Function fn = mainOf(text);
  Loaded lib;
  KernelFn kernel = compileKernel("k_act", fn, lib);
  std::mt19937 rng(5);
  Tensor x = randomF32({3, 333}, rng, -6, 6);
  Tensor out(ir::DType::F32, {3, 333});
  const float *inputs[] = {x.data<float>()};
  kernel(inputs, out.data<float>(), out.numel());
  auto m = ir::parseModule(text);
  REQUIRE(m.ok());
  auto want = interp::run(*m, {x});
  REQUIRE(want.ok());
  requireClose(out, want->tensor, 1e-5, 1e-6);
}

TEST_CASE("codegen: a portable CPU and every optimisation level give the same results",
          "[codegen]") {
  const std::string text = R"(
def @main(%x: f32[1000]) -> f32[1000] {
  %sq = multiply(%x, %x) : f32[1000]
  %er = erf(%x) : f32[1000]
  %r = add(%sq, %er) : f32[1000]
  return %r
}
)";
  ir::Function fn = mainOf(text);
  std::mt19937 rng(3);
  Tensor x = randomF32({1000}, rng, -2, 2);
  auto m = ir::parseModule(text);
  auto want = interp::run(*m, {x});
  REQUIRE(want.ok());
  for (int level : {0, 3}) {
    codegen::CodegenOptions options;
    options.cpu = "x86-64";
    options.optLevel = level;
    Loaded lib;
    KernelFn kernel = compileKernel("k", fn, lib, options);
    Tensor out(ir::DType::F32, {1000});
    const float *inputs[] = {x.data<float>()};
    kernel(inputs, out.data<float>(), out.numel());
    requireClose(out, want->tensor, 1e-5, 1e-6);
  }
}

TEST_CASE("codegen: parameters that broadcast (bias, scalars, rows) are read in place",
          "[codegen]") {
  // Each shape pattern: a channel bias [C, 1, 1] over NCHW, a row vector, a
  // column, size-1 dims in the middle, and a single element.
  const std::vector<std::pair<std::string, ir::Shape>> cases = {
      {"f32[5, 1, 1]", {5, 1, 1}}, {"f32[7]", {7}}, {"f32[3, 1, 1, 1]", {3, 1, 1, 1}},
      {"f32[3, 5, 1, 7]", {3, 5, 1, 7}}, {"f32[1]", {1}}};
  for (const auto &[type, shape] : cases) {
    DYNAMIC_SECTION("b: " << type) {
      const std::string text = R"(
def @main(%x: f32[3, 5, 4, 7], %b: )" + type + R"() -> f32[3, 5, 4, 7] {
  %a = add(%x, %b) : f32[3, 5, 4, 7]
  %m = multiply(%a, %b) : f32[3, 5, 4, 7]
  %r = relu(%m) : f32[3, 5, 4, 7]
  return %r
}
)";
      ir::Function fn = mainOf(text);
      Loaded lib;
      KernelFn kernel = compileKernel("k_bias", fn, lib);
      std::mt19937 rng(5);
      Tensor x = randomF32({3, 5, 4, 7}, rng, -2, 2), b = randomF32(shape, rng, -2, 2);
      Tensor out(ir::DType::F32, {3, 5, 4, 7});
      const float *inputs[] = {x.data<float>(), b.data<float>()};
      kernel(inputs, out.data<float>(), out.numel());
      auto m = ir::parseModule(text);
      REQUIRE(m.ok());
      auto want = interp::run(*m, {x, b});
      REQUIRE(want.ok());
      requireClose(out, want->tensor, 1e-6, 1e-6);
    }
  }
}

TEST_CASE("codegen: what does not fuse is an error naming it", "[codegen]") {
  auto err = [](const std::string &text) {
    auto r = codegen::emitObject({{"k", mainOf(text)}});
    return r.ok() ? std::string() : r.error().str();
  };
  CHECK(err(R"(
def @main(%x: f32[2, 3]) -> f32[2, 3] {
  %r = softmax(%x) : f32[2, 3]
  return %r
}
)") == "kernel 'k': op 'softmax' is not an elementwise op this codegen fuses");
  CHECK(err(R"(
def @main(%x: f32[2, 3], %y: f32[2]) -> f32[2, 3] {
  %r = relu(%x) : f32[2, 3]
  return %r
}
)") == "kernel 'k': parameter %y is f32[2], which does not broadcast to f32[2, 3]");
  CHECK(err(R"(
def @main(%x: f32[3], %y: f32[2, 3]) -> f32[2, 3] {
  %e = exp(%x) : f32[3]
  %r = add(%e, %y) : f32[2, 3]
  return %r
}
)") == "kernel 'k': exp produces f32[3], expected f32[2, 3]");
  CHECK(err(R"(
def @main(%x: i32[4]) -> i32[4] {
  %r = relu(%x) : i32[4]
  return %r
}
)") == "kernel 'k': the result must be an f32 tensor, got i32[4]");
  ir::Function fn = mainOf("def @main(%x: f32[4]) -> f32[4] {\n  %r = relu(%x) : f32[4]\n  return %r\n}\n");
  auto twice = codegen::emitObject({{"k", fn}, {"k", fn}});
  REQUIRE_FALSE(twice.ok());
  CHECK(twice.error().str() == "kernel symbol 'k' is used twice");
}
