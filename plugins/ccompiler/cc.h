//===- plugins/ccompiler/cc.h - Running the system C compiler ---*- C++ -*-===//
//
// compileC() writes a C file into a fresh temporary folder (mkdtemp), runs
// the system C compiler on it and returns the bytes of the shared object it
// built; the folder is removed in every case.
//
//   compiler  $TESSERA_CC, else $CC, else "cc" (split at spaces, so
//             "ccache gcc" works; found through PATH)
//   flags     $TESSERA_CCOMPILER_CFLAGS, else kDefaultCFlags (split at spaces)
//   command   <compiler> <flags> -o <dir>/<symbol>.so <dir>/<symbol>.c -lm
//
// A compiler that cannot be started, or that fails, gives an sdk::Error with
// the command, the compiler's output and the generated lines it names
// (<symbol>.c:LINE:COL: ...), quoted from the C file.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <string_view>

namespace tessera::ccompiler {

/// The default flags, without -march: compileC adds -march=<the artifact's
/// --mcpu> (x86-64-v3 by default; "native" for this machine), or
/// -march=native outside an artifact (the conformance kit), unless the
/// flags name one. -ffp-contract=fast lets
/// the products use fused multiply-adds (one rounding instead of two: the f32
/// sums stay well within the kit's 1e-5 + 1e-4 |want|, and every elementwise
/// formula is evaluated in double, where a contraction moves the f32 result by
/// at most one ulp). -fno-math-errno: sqrt and friends without errno, which
/// the generated code never reads.
inline constexpr const char *kDefaultCFlags =
    "-O3 -fPIC -shared -std=c99 -ffp-contract=fast -fno-math-errno";

/// The compiler command's first words ($TESSERA_CC / $CC / "cc").
std::string compilerCommand();
/// The flags ($TESSERA_CCOMPILER_CFLAGS or kDefaultCFlags).
std::string compilerFlags();

struct CompiledC {
  std::string so;  // the shared object's bytes
  std::string cpu; // the -march it was compiled with
};

/// Compiles `source` as <symbol>.c into a shared object for `targetCpu`
/// (the artifact's --mcpu, passed as GCC's -march, which takes the x86-64
/// levels, "native" and LLVM's CPU names; empty: "native"). A -march in the
/// flags ($TESSERA_CCOMPILER_CFLAGS) wins, and is what the result records.
CompiledC compileC(const std::string &source, const std::string &symbol,
                   std::string_view targetCpu);

} // namespace tessera::ccompiler
