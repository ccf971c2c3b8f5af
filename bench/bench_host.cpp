//===- bench/bench_host.cpp - Host code generator throughput --------------===//
//
// Fused elementwise throughput against memory bandwidth, in one run:
//   copy    a plain loop out[i] = in[i] over N floats (compiled by the C++
//           compiler at -O2, vectorised): bytes moved = 2 * 4 * N
//   fused   the host step LLVM makes for relu(x * 2 + y) (one fused loop,
//           codegen/host.h): bytes moved = 3 * 4 * N
// N = 2^24 (64 MiB per array, far beyond the caches), median of 15 runs,
// one thread for both. Prints GB/s for each and fused/copy.
//
//===----------------------------------------------------------------------===//
#include "codegen/host.h"
#include "ir/parser.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <vector>

using namespace tessera;

namespace {

constexpr int64_t kN = int64_t(1) << 24;
constexpr int kRuns = 15;

struct Free {
  void operator()(float *p) const { std::free(p); }
};
using Buffer = std::unique_ptr<float[], Free>;

Buffer alloc(float fill) {
  auto *p = static_cast<float *>(std::aligned_alloc(64, size_t(kN) * sizeof(float)));
  std::fill(p, p + kN, fill);
  return Buffer(p);
}

template <typename F> double medianSeconds(F &&f) {
  std::vector<double> t;
  f(); // warm-up: page faults, caches
  for (int r = 0; r < kRuns; ++r) {
    auto start = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

__attribute__((noinline)) void copyLoop(const float *__restrict in, float *__restrict out,
                                        int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = in[i];
}

int fail(const std::string &what) {
  std::fprintf(stderr, "bench_host: %s\n", what.c_str());
  return 1;
}

} // namespace

int main() {
  auto m = ir::parseModule(fmt::format(R"(
def @main(%x: f32[{0}], %y: f32[{0}]) -> f32[{0}] {{
  %two = constant f32[] [2.0]
  %a = multiply(%x, %two)
  %b = add(%a, %y)
  %r = relu(%b)
  return %r
}}
)",
                                       kN));
  if (!m.ok())
    return fail(m.error().str());
  codegen::HostStepSpec spec;
  spec.symbol = "fused";
  spec.fused = m->find("main");
  codegen::HostBuildInfo info;
  auto so = codegen::buildHostLibrary({spec}, {}, &info);
  if (!so.ok())
    return fail(so.error().str());
  std::string path = fmt::format("/tmp/bench_host_{}.so", ::getpid());
  std::ofstream(path, std::ios::binary).write(so->data(), std::streamsize(so->size()));
  void *handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::remove(path.c_str());
  if (!handle)
    return fail(::dlerror());
  auto fn = reinterpret_cast<tessera_host_fn_t>(::dlsym(handle, "fused"));
  if (!fn)
    return fail("no symbol 'fused'");

  Buffer x = alloc(0.5f), y = alloc(-0.25f), out = alloc(0.0f);
  double copy = medianSeconds([&] { copyLoop(x.get(), out.get(), kN); });
  void *buffers[] = {x.get(), y.get(), out.get()};
  tessera_host_ctx_t ctx{nullptr, nullptr, 1};
  double fused = medianSeconds([&] { fn(buffers, &ctx); });
  if (out[kN - 1] != 0.75f)
    return fail(fmt::format("wrong result {}", out[kN - 1]));

  double copyGBs = 2.0 * 4 * double(kN) / copy / 1e9;
  double fusedGBs = 3.0 * 4 * double(kN) / fused / 1e9;
  std::printf("host code for %s (%s), N = %lld floats, one thread, median of %d\n",
              info.cpu.c_str(), info.triple.c_str(), static_cast<long long>(kN), kRuns);
  std::printf("  copy loop              %8.2f ms  %6.2f GB/s\n", copy * 1e3, copyGBs);
  std::printf("  fused relu(x*2+y)      %8.2f ms  %6.2f GB/s  (%.0f%% of the copy loop)\n",
              fused * 1e3, fusedGBs, 100.0 * fusedGBs / copyGBs);
  ::dlclose(handle);
  return 0;
}
