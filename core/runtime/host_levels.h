//===- runtime/host_levels.h - Host code for several CPU levels -*- C++ -*-===//
//
// An artifact's host code may be built for several CPUs (by default the
// x86-64 levels v3, AVX2, and v4, AVX-512), one shared object each, so that
// one file runs everywhere its lowest level does and at the speed of the
// machine where more is there. The metadata lists them, best first:
//
//   "host_code": [{"cpu": "x86-64-v4", "features": ["avx2", "avx512f", ...],
//                  "section": 1, "encoding": "zlib", "size": 140288},
//                 {"cpu": "x86-64-v3", "features": [...], "section": 0,
//                  "encoding": "raw", "size": 131072}]
//
// "section" indexes the HostCode sections in file order; "encoding" is
// "raw" or "zlib" (runtime/deflate.h; the levels after the first are
// compressed), "size" the shared object's size. An artifact without the
// list has one HostCode section, described by "target" (artifacts written
// before levels existed, still read).
//
// The runtime loads the first level whose features the CPU has, unless the
// environment variable TESSERA_HOST_CPU names one (as ONEDNN_MAX_CPU_ISA
// caps oneDNN): for tests, and for users who want the same code on every
// machine. A CPU that runs no level gets the lowest level's missing
// features by name (docs/design/0010, 0017).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "support/error.h"
#include "support/export.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::runtime {

struct HostLevel {
  std::string cpu;                   // "x86-64-v4", "znver4"
  std::vector<std::string> features; // by LLVM's names (runtime/cpu_features.h)
  uint32_t section = 0;              // among the HostCode sections
  bool zlib = false;
  uint64_t size = 0;                 // the shared object's bytes (0: unknown, raw)
};

/// The host code levels `metadataJson` lists, best first; one (section 0,
/// raw) from "target" in an artifact without "host_code"; none when the
/// metadata names no host code. Checks every field and that no two levels
/// share a section or a CPU; `sections` is how many HostCode sections the
/// artifact has, and each must be listed.
TESSERA_RT_EXPORT Expected<std::vector<HostLevel>> hostLevels(std::string_view metadataJson,
                                                            size_t sections);

/// The level this process loads: the one TESSERA_HOST_CPU names, else the
/// first whose features the CPU has. An error says which CPU was asked for
/// or what the lowest level needs that this CPU lacks.
TESSERA_RT_EXPORT Expected<size_t> chooseHostLevel(const std::vector<HostLevel> &levels);

/// TESSERA_HOST_CPU, or "" when unset.
TESSERA_RT_EXPORT std::string forcedHostCpu();

} // namespace tessera::runtime
