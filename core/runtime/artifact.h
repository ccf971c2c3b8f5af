//===- runtime/artifact.h - The compiled artifact's container ---*- C++ -*-===//
//
// One file holds a compiled model: metadata, the executor plan, weights, the
// host's native code and each plugin module as (type_key, bytes). This is
// the container: typed sections with SHA-256 digests, checked in full
// before anything in the file is used (docs/design/0006).
//
//   offset 0   header (64 bytes): "TSRA", u32 format version, u64 file size,
//              u32 section count, zero padding
//   offset 64  section table: 64 bytes per section: u32 kind, u32 zero,
//              u64 offset, u64 size, u8[32] SHA-256 of the section, 8 zero
//              bytes
//   then       the sections, each at a 64-byte aligned offset, zero padding
//              between them
//   last 32    SHA-256 of the header and the section table
// Each byte is covered once: the index by the last digest, each section by
// its own, padding by being zero (format 2; format 1 hashed the whole file
// again, twice the work at load).
//
// Integers are little-endian. A reader refuses, with a message naming the
// file and the problem: another magic ("not a Tessera artifact"), another
// format version, a size that disagrees with the header (truncated, or with
// bytes appended), a section outside the file, overlapping or unaligned,
// non-zero padding, and any digest mismatch (the index, or the section
// named).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "support/error.h"
#include "support/export.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::runtime {

inline constexpr uint32_t kArtifactFormatVersion = 2;

enum class SectionKind : uint32_t {
  Metadata = 1,       // JSON: inputs, outputs, plugins used, versions
  Plan = 2,           // the executor plan
  Weights = 3,        // constants, raw and aligned
  HostCode = 4,       // the host's native code (a shared object)
  ExternalModule = 5, // u64 type-key length, type key, the module's bytes
};

/// "metadata", "plan", ...; "section kind N" for unknown values.
TESSERA_RT_EXPORT std::string sectionKindName(uint32_t kind);

/// Builds an artifact in memory.
class TESSERA_RT_EXPORT ArtifactWriter {
public:
  void add(SectionKind kind, std::string bytes);
  /// The file's bytes.
  std::string finish() const;
  /// Writes finish()'s bytes to `path` without building them in memory
  /// (through a temporary file, then renamed); the sections are hashed on
  /// a second thread while they are written.
  Status writeFile(const std::string &path) const;
  /// The bytes finish() would make.
  size_t size() const;

private:
  std::vector<std::pair<uint32_t, std::string>> sections_;
};

struct Section {
  uint32_t kind = 0;
  std::string_view bytes; // into the Artifact's storage
};

/// A read, fully verified artifact.
class TESSERA_RT_EXPORT Artifact {
public:
  /// Verifies `bytes` (display names the source in messages).
  static Expected<Artifact> fromBytes(std::string bytes, const std::string &display);
  static Expected<Artifact> readFile(const std::string &path);

  const std::vector<Section> &sections() const { return sections_; }
  /// The sections of one kind, in file order.
  std::vector<Section> sectionsOf(SectionKind kind) const;
  size_t size() const { return bytes_->size(); }

private:
  Artifact() = default;
  std::shared_ptr<const std::string> bytes_; // the views point into it
  std::vector<Section> sections_;
};

/// An ExternalModule section's payload: (type_key, bytes) <-> bytes.
TESSERA_RT_EXPORT std::string packExternalModule(std::string_view typeKey, std::string_view bytes);
/// What an ExternalModule payload starts with; the module's bytes follow
/// (packExternalModule(k, b) == externalModuleHeader(k) + b, for a module
/// saved straight after it, without a copy of its bytes).
TESSERA_RT_EXPORT std::string externalModuleHeader(std::string_view typeKey);
struct ExternalModule {
  std::string_view typeKey;
  std::string_view bytes;
};
TESSERA_RT_EXPORT Expected<ExternalModule> unpackExternalModule(std::string_view payload);

} // namespace tessera::runtime
