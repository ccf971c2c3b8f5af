//===- runtime/sha256.h - SHA-256 (FIPS 180-4) -------------------*- C++ -*-===//
//
// The artifact's integrity digests. A small, dependency-free implementation
// of the standard; tests check it against the FIPS 180-4 example vectors.
// On x86-64 CPUs with the SHA extensions (checked with cpuid at run time)
// the block function uses them: about 5x faster, which is most of an
// artifact's load time.
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
  /// `allowHardware` false: the portable code even where the SHA
  /// extensions exist (for tests that compare the two).
  explicit Sha256(bool allowHardware = true);
  void update(const void *data, size_t size);
  void update(std::string_view s) { update(s.data(), s.size()); }
  Sha256Digest finish();

  static Sha256Digest of(std::string_view s) {
    Sha256 h;
    h.update(s);
    return h.finish();
  }

private:
  void blocks(const uint8_t *p, size_t count);
  uint32_t state_[8];
  uint8_t buffer_[64];
  size_t buffered_ = 0;
  uint64_t length_ = 0; // bytes
  bool hardware_;
};

/// Whether this CPU has the SHA extensions Sha256 uses.
TESSERA_RT_EXPORT bool sha256HasHardware();

/// Lower-case hex of a digest.
TESSERA_RT_EXPORT std::string hexDigest(const Sha256Digest &d);

} // namespace tessera::runtime
