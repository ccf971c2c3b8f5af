//===- runtime/deflate.h - zlib compression of artifact sections -*- C++ -*-===//
//
// The host code an artifact holds for more than one CPU level (runtime/
// host_levels.h) is compressed past its first level: machine code deflates
// about 3x, so each added level costs a third of its size. zlib is on every
// Linux system; the runtime links it privately.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "support/error.h"
#include "support/export.h"

#include <string>
#include <string_view>

namespace tessera::runtime {

/// `bytes` compressed by zlib (level 6).
TESSERA_RT_EXPORT Expected<std::string> deflateBytes(std::string_view bytes);

/// The inverse; `size` is the size the bytes had, and anything else (a
/// stream cut short, damaged or longer) is an error.
TESSERA_RT_EXPORT Expected<std::string> inflateBytes(std::string_view compressed, size_t size);

} // namespace tessera::runtime
