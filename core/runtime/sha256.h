//===- runtime/sha256.h - SHA-256 (FIPS 180-4) -------------------*- C++ -*-===//
//
// The artifact's integrity digests. A small, dependency-free implementation
// of the standard; tests check it against the FIPS 180-4 example vectors.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "support/export.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tessera::runtime {

using Sha256Digest = std::array<uint8_t, 32>;

class TESSERA_RT_EXPORT Sha256 {
public:
  Sha256();
  void update(const void *data, size_t size);
  void update(std::string_view s) { update(s.data(), s.size()); }
  Sha256Digest finish();

  static Sha256Digest of(std::string_view s) {
    Sha256 h;
    h.update(s);
    return h.finish();
  }

private:
  void block(const uint8_t *p);
  uint32_t state_[8];
  uint8_t buffer_[64];
  size_t buffered_ = 0;
  uint64_t length_ = 0; // bytes
};

/// Lower-case hex of a digest.
TESSERA_RT_EXPORT std::string hexDigest(const Sha256Digest &d);

} // namespace tessera::runtime
