//===- tessera/sdk/shape_math.hpp - Shape arithmetic the core shares --*- C++ -*-===//
//
// Small shape rules that the core and plugins must compute alike, written
// once here (the core includes this header too): the element limit of a
// tensor type and the taps of a window that fall inside an input. The host
// kernel library (core/codegen/kernels), freestanding bitcode that includes
// no C++ library header, keeps its own copy of tapsInside.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tessera/c/plugin.h" // TESSERA_MAX_ELEMENTS

#include <algorithm>
#include <cstdint>
#include <span>

namespace tessera::sdk {

/// The most elements a tensor type may have (TESSERA_MAX_ELEMENTS, as in the
/// core's IR): every dim at most this, and the product of the non-zero dims
/// at most this too. The core never hands a plugin a larger type and the
/// SDK's readers refuse one, so no size computed from a type (element
/// counts, byte sizes, strides, in any order of dims) comes near int64
/// overflow.
inline constexpr int64_t kMaxElements = TESSERA_MAX_ELEMENTS;

/// Whether `shape` can be a tensor type's: no negative dim, and the limits
/// of kMaxElements.
inline bool shapeFits(std::span<const int64_t> shape) {
  int64_t elements = 1;
  for (int64_t d : shape) {
    if (d < 0 || d > kMaxElements || (d != 0 && elements > kMaxElements / d))
      return false;
    if (d != 0)
      elements *= d;
  }
  return true;
}

/// The taps k in [first, end) of [0, K) whose positions start + k * step
/// (step >= 1) fall inside [lo, hi); empty (first == end) when none does.
struct TapRange {
  int64_t first = 0, end = 0;
  int64_t count() const { return end - first; }
};
inline TapRange tapsInside(int64_t start, int64_t K, int64_t step, int64_t lo, int64_t hi) {
  TapRange t;
  t.first = start < lo ? (lo - start + step - 1) / step : 0;
  const int64_t last = hi - 1 - start; // the largest offset still inside
  t.end = last < 0 ? 0 : std::min(K, last / step + 1);
  t.first = std::min(t.first, K);
  t.end = std::max(t.end, t.first);
  return t;
}

} // namespace tessera::sdk
