//===- runtime/cpu_features.h - What the running CPU can execute -*- C++ -*-===//
//
// An artifact records the x86 ISA extensions its native code may use, by
// LLVM's feature names ("avx2", "avx512f"); the runtime checks them here,
// with CPUID and XGETBV, before it maps any of that code, so that an
// artifact moved to an older CPU is refused with the missing features named
// instead of dying of SIGILL in the middle of a run.
//
// Only the features below are known. They are the instruction-set
// extensions a compiler may emit in numeric code; the rest of what LLVM
// lists for a CPU (tuning flags, system instructions such as "sgx" or
// "invpcid") is not recorded and not checked.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "support/error.h"
#include "support/export.h"

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::runtime {

/// Every feature name cpuHas() knows, by LLVM's spelling, in a fixed order.
TESSERA_RT_EXPORT std::span<const std::string_view> knownCpuFeatures();

/// Whether the running CPU, and the OS's saved register state, support
/// `feature`; std::nullopt for a name outside knownCpuFeatures().
TESSERA_RT_EXPORT std::optional<bool> cpuHas(std::string_view feature);

/// The known features of `needed` that the running CPU lacks, in the
/// order given (unknown names are not reported).
TESSERA_RT_EXPORT std::vector<std::string> missingCpuFeatures(const std::vector<std::string> &needed);

/// The highest x86-64 micro-architecture level the running CPU has:
/// "x86-64-v4", "-v3", "-v2" or "x86-64" (as --mcpu takes them).
TESSERA_RT_EXPORT std::string x86Level();

/// The running CPU as CPUID names it ("AMD EPYC 9B14"), for messages.
TESSERA_RT_EXPORT std::string cpuBrand();

/// Refuses code that needs features of `needed` this CPU lacks: "`what`
/// needs avx512f, avx512bw; this CPU (brand) lacks them; recompile with
/// --mcpu=x86-64-v3 or for this machine (--mcpu=native)".
TESSERA_RT_EXPORT Status requireCpuFeatures(const std::vector<std::string> &needed,
                                            std::string_view what);

} // namespace tessera::runtime
