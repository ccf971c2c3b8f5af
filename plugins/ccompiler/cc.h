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

namespace tessera::ccompiler {

/// The default flags. -O3 -march=native: the code runs where it was compiled
/// (the artifact is then tied to this CPU family). -ffp-contract=fast lets
/// the products use fused multiply-adds (one rounding instead of two: the f32
/// sums stay well within the kit's 1e-5 + 1e-4 |want|, and every elementwise
/// formula is evaluated in double, where a contraction moves the f32 result by
/// at most one ulp). -fno-math-errno: sqrt and friends without errno, which
/// the generated code never reads.
inline constexpr const char *kDefaultCFlags =
    "-O3 -march=native -fPIC -shared -std=c99 -ffp-contract=fast -fno-math-errno";

/// The compiler command's first words ($TESSERA_CC / $CC / "cc").
std::string compilerCommand();
/// The flags ($TESSERA_CCOMPILER_CFLAGS or kDefaultCFlags).
std::string compilerFlags();

/// Compiles `source` as <symbol>.c into a shared object; its bytes.
std::string compileC(const std::string &source, const std::string &symbol);

} // namespace tessera::ccompiler
