//===- kit/internal.h - Kit helpers -----------------------------*- C++ -*-===//
//
// Private to the vendor conformance kit (kit/*.cpp): the
// small helpers its parts share. Defined in plugin_kit_samples.cpp with the
// sample catalogue, their main user. Not for use outside the kit.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "kit/kit.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace tessera::kit::detail {

/// Shorthands: an f32 tensor type, `t` in dtype `d`, an int attribute value.
ir::Type f32(ir::Shape s);
ir::Type withDType(const ir::Type &t, ir::DType d);
ir::AttrValue I(int64_t v);

/// "f32[1,3,8,8]"
std::string compactType(const ir::Type &t);

/// FNV-1a, for per-case seeds that do not depend on which cases run.
uint64_t hashString(std::string_view s);

} // namespace tessera::kit::detail
