//===- runtime/cpu_features.cpp - What the running CPU can execute --------===//
//
// CPUID leaves 1, 7 (subleaves 0 and 1) and 0x80000001, bit by bit, as the
// Intel SDM (vol. 2A, CPUID) and AMD's APM (vol. 3) give them. A vector
// extension also needs the OS to save its registers on a context switch:
// XCR0 bits 1-2 (SSE, AVX) for AVX and its kin, bits 5-7 (opmask, ZMM) for
// AVX-512, bits 17-18 (tile config, tile data) for AMX.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu_features.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define TESSERA_X86 1
#endif

namespace tessera::runtime {

namespace {

enum Reg : uint8_t { EAX, EBX, ECX, EDX };
enum State : uint8_t { None, Avx, Avx512, Amx };

struct Feature {
  std::string_view name; // LLVM's
  uint32_t leaf, subleaf;
  Reg reg;
  uint8_t bit;
  State state;
};

constexpr std::array kFeatures = {
    Feature{"sse3", 1, 0, ECX, 0, None},
    Feature{"pclmul", 1, 0, ECX, 1, None},
    Feature{"ssse3", 1, 0, ECX, 9, None},
    Feature{"fma", 1, 0, ECX, 12, Avx},
    Feature{"cx16", 1, 0, ECX, 13, None},
    Feature{"sse4.1", 1, 0, ECX, 19, None},
    Feature{"sse4.2", 1, 0, ECX, 20, None},
    Feature{"movbe", 1, 0, ECX, 22, None},
    Feature{"popcnt", 1, 0, ECX, 23, None},
    Feature{"aes", 1, 0, ECX, 25, None},
    Feature{"xsave", 1, 0, ECX, 26, None},
    Feature{"avx", 1, 0, ECX, 28, Avx},
    Feature{"f16c", 1, 0, ECX, 29, Avx},
    Feature{"rdrnd", 1, 0, ECX, 30, None},
    Feature{"bmi", 7, 0, EBX, 3, None},
    Feature{"avx2", 7, 0, EBX, 5, Avx},
    Feature{"bmi2", 7, 0, EBX, 8, None},
    Feature{"avx512f", 7, 0, EBX, 16, Avx512},
    Feature{"avx512dq", 7, 0, EBX, 17, Avx512},
    Feature{"rdseed", 7, 0, EBX, 18, None},
    Feature{"adx", 7, 0, EBX, 19, None},
    Feature{"avx512ifma", 7, 0, EBX, 21, Avx512},
    Feature{"avx512cd", 7, 0, EBX, 28, Avx512},
    Feature{"sha", 7, 0, EBX, 29, None},
    Feature{"avx512bw", 7, 0, EBX, 30, Avx512},
    Feature{"avx512vl", 7, 0, EBX, 31, Avx512},
    Feature{"avx512vbmi", 7, 0, ECX, 1, Avx512},
    Feature{"avx512vbmi2", 7, 0, ECX, 6, Avx512},
    Feature{"gfni", 7, 0, ECX, 8, None},
    Feature{"vaes", 7, 0, ECX, 9, Avx},
    Feature{"vpclmulqdq", 7, 0, ECX, 10, Avx},
    Feature{"avx512vnni", 7, 0, ECX, 11, Avx512},
    Feature{"avx512bitalg", 7, 0, ECX, 12, Avx512},
    Feature{"avx512vpopcntdq", 7, 0, ECX, 14, Avx512},
    Feature{"avx512vp2intersect", 7, 0, EDX, 8, Avx512},
    Feature{"amx-bf16", 7, 0, EDX, 22, Amx},
    Feature{"avx512fp16", 7, 0, EDX, 23, Avx512},
    Feature{"amx-tile", 7, 0, EDX, 24, Amx},
    Feature{"amx-int8", 7, 0, EDX, 25, Amx},
    Feature{"avxvnni", 7, 1, EAX, 4, Avx},
    Feature{"avx512bf16", 7, 1, EAX, 5, Avx512},
    Feature{"avxifma", 7, 1, EAX, 23, Avx},
    Feature{"sahf", 0x80000001, 0, ECX, 0, None},
    Feature{"lzcnt", 0x80000001, 0, ECX, 5, None},
    Feature{"sse4a", 0x80000001, 0, ECX, 6, None},
    Feature{"prfchw", 0x80000001, 0, ECX, 8, None},
    Feature{"xop", 0x80000001, 0, ECX, 11, Avx},
    Feature{"fma4", 0x80000001, 0, ECX, 16, Avx},
};

constexpr auto kNames = [] {
  std::array<std::string_view, kFeatures.size()> names{};
  for (size_t i = 0; i < kFeatures.size(); ++i)
    names[i] = kFeatures[i].name;
  return names;
}();

#if TESSERA_X86
/// CPUID (leaf, subleaf) as {eax, ebx, ecx, edx}; zeros past the maximum leaf.
std::array<uint32_t, 4> cpuid(uint32_t leaf, uint32_t subleaf) {
  std::array<uint32_t, 4> r{};
  if (!__get_cpuid_count(leaf, subleaf, &r[0], &r[1], &r[2], &r[3]))
    r = {};
  return r;
}

/// Whether the OS saves the register state `s` needs (XCR0).
bool osSaves(State s) {
  if (s == None)
    return true;
  if (!(cpuid(1, 0)[ECX] & (1u << 27))) // OSXSAVE: XGETBV is usable
    return false;
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  const uint64_t xcr0 = (uint64_t(hi) << 32) | lo;
  const uint64_t avx = 0x6, avx512 = 0xe0 | avx, amx = (uint64_t(3) << 17);
  const uint64_t want = s == Avx ? avx : s == Avx512 ? avx512 : amx;
  return (xcr0 & want) == want;
}
#endif

} // namespace

std::span<const std::string_view> knownCpuFeatures() {
  return kNames;
}

std::optional<bool> cpuHas(std::string_view feature) {
  auto it = std::find_if(kFeatures.begin(), kFeatures.end(),
                         [&](const Feature &f) { return f.name == feature; });
  if (it == kFeatures.end())
    return std::nullopt;
#if TESSERA_X86
  const uint32_t top = cpuid(it->leaf & 0x80000000u, 0)[EAX]; // the highest leaf of its range
  if (it->leaf > top)
    return false;
  if (!((cpuid(it->leaf, it->subleaf)[it->reg] >> it->bit) & 1u))
    return false;
  return osSaves(it->state);
#else
  return false;
#endif
}

std::vector<std::string> missingCpuFeatures(const std::vector<std::string> &needed) {
  std::vector<std::string> missing;
  for (const std::string &f : needed)
    if (cpuHas(f) == false)
      missing.push_back(f);
  return missing;
}

std::string x86Level() {
  auto all = [](std::initializer_list<std::string_view> features) {
    return std::all_of(features.begin(), features.end(),
                       [](std::string_view f) { return cpuHas(f) == true; });
  };
  if (!all({"cx16", "sahf", "popcnt", "sse3", "sse4.1", "sse4.2", "ssse3"}))
    return "x86-64";
  if (!all({"avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave"}))
    return "x86-64-v2";
  if (!all({"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}))
    return "x86-64-v3";
  return "x86-64-v4";
}

std::string cpuBrand() {
#if TESSERA_X86
  if (cpuid(0x80000000u, 0)[EAX] >= 0x80000004u) {
    char brand[49] = {};
    for (uint32_t i = 0; i < 3; ++i) {
      std::array<uint32_t, 4> r = cpuid(0x80000002u + i, 0);
      std::memcpy(brand + 16 * i, r.data(), 16);
    }
    std::string s(brand);
    s.erase(0, s.find_first_not_of(' '));
    s.erase(s.find_last_not_of(' ') + 1);
    if (!s.empty())
      return s;
  }
#endif
  return "this CPU";
}

Status requireCpuFeatures(const std::vector<std::string> &needed, std::string_view what) {
  std::vector<std::string> missing = missingCpuFeatures(needed);
  if (missing.empty())
    return okStatus();
  return Error::format("{} needs {}; this CPU ({}) lacks {}; recompile with --mcpu={} or for "
                       "this machine (--mcpu=native)",
                       what, fmt::join(missing, ", "), cpuBrand(),
                       missing.size() == 1 ? "it" : "them", x86Level())
      .setCode(ErrorCode::FailedPrecondition);
}

} // namespace tessera::runtime
