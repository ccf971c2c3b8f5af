//===- fuzz/fuzz_check.h - What a fuzz target requires ---------*- C++ -*-===//
//
// A fuzz target returns normally for every input a parser rejects with an
// error; anything else it finds wrong (a crash, a sanitizer report, or a
// broken promise checked with FUZZ_REQUIRE) stops the run with the input
// that caused it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string_view>

/// Stops the run when `cond` is false: prints what was promised and `detail`,
/// which is evaluated only then (it may read the error of a failed result,
/// and print whole modules, at no cost to runs that pass).
#define FUZZ_REQUIRE(cond, detail)                                                                 \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      ::tessera::fuzz::fail(#cond, (detail), __FILE__, __LINE__);                                  \
  } while (0)

namespace tessera::fuzz {

[[noreturn]] inline void fail(const char *what, std::string_view detail, const char *file,
                              int line) {
  std::fprintf(stderr, "%s:%d: fuzz requirement failed: %s\n  %.*s\n", file, line, what,
               int(detail.size()), detail.data());
  std::abort();
}

} // namespace tessera::fuzz
