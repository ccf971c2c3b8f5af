//===- fuzz/artifact.cpp - The artifact container --------------------------===//
//
// Any bytes as a .tsr file: Artifact::fromBytes either fails with a
// message that starts with the file name, or gives sections that lie
// inside the file; each ExternalModule section unpacks or fails with a
// message.
//
// Mutated bytes almost never keep their SHA-256 digests, and a reader that
// stops at the first digest would be all the fuzzer ever saw. So the input
// is first made self-consistent where it can be: each section-table entry
// that lies inside the file gets its section's digest, and the last 32
// bytes get the index's. Layout, size, padding and unpacking are what is
// fuzzed; the digest checks themselves are unit-tested.
//
//===----------------------------------------------------------------------===//
#include "fuzz_check.h"

#include "runtime/artifact.h"
#include "runtime/sha256.h"

#include <cstddef>
#include <cstdint>
#include <cstring>

using namespace tessera;

namespace {

uint64_t readU64(const std::string &b, size_t at) {
  uint64_t v = 0;
  for (size_t i = 0; i < 8; ++i)
    v |= uint64_t(uint8_t(b[at + i])) << (8 * i);
  return v;
}

/// Rewrites the digests of `b` (layout: runtime/artifact.h).
void redigest(std::string &b) {
  constexpr size_t kHeader = 64, kEntry = 64, kDigest = 32;
  if (b.size() < kHeader + kDigest)
    return;
  uint32_t count = 0;
  std::memcpy(&count, b.data() + 16, 4);
  const size_t indexEnd = kHeader + size_t(count) * kEntry;
  if (count > b.size() / kEntry || indexEnd + kDigest > b.size())
    return;
  for (size_t i = 0; i < count; ++i) {
    const size_t entry = kHeader + i * kEntry;
    const uint64_t offset = readU64(b, entry + 8), size = readU64(b, entry + 16);
    if (offset > b.size() || size > b.size() - offset)
      continue;
    auto d = runtime::Sha256::of(std::string_view(b).substr(size_t(offset), size_t(size)));
    std::memcpy(b.data() + entry + 24, d.data(), d.size());
  }
  auto d = runtime::Sha256::of(std::string_view(b).substr(0, indexEnd));
  std::memcpy(b.data() + b.size() - kDigest, d.data(), d.size());
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string bytes(reinterpret_cast<const char *>(data), size);
  redigest(bytes);
  auto artifact = runtime::Artifact::fromBytes(bytes, "fuzz.tsr");
  if (!artifact.ok()) {
    std::string message = artifact.error().str();
    FUZZ_REQUIRE(message.starts_with("fuzz.tsr"), message);
    return 0;
  }
  size_t total = 0;
  for (const runtime::Section &s : artifact->sections()) {
    total += s.bytes.size();
    FUZZ_REQUIRE(total <= artifact->size(), "sections larger than the file");
    if (s.kind == uint32_t(runtime::SectionKind::ExternalModule)) {
      auto m = runtime::unpackExternalModule(s.bytes);
      if (m.ok())
        FUZZ_REQUIRE(m->typeKey.size() + m->bytes.size() <= s.bytes.size(),
                     "a module larger than its section");
      else
        FUZZ_REQUIRE(!m.error().str().empty(), "an empty message");
    }
  }
  return 0;
}
