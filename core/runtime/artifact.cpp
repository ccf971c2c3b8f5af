//===- runtime/artifact.cpp - Writing and verifying artifacts -------------===//
//
// See artifact.h for the layout. The reader trusts nothing: every offset and
// size is checked against the file before it is used, and every digest is
// checked before a section is handed out.
//
//===----------------------------------------------------------------------===//
#include "runtime/artifact.h"

#include "support/file.h"

#include "runtime/sha256.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

namespace tessera::runtime {

namespace {

constexpr char kMagic[4] = {'T', 'S', 'R', 'A'};
constexpr size_t kHeaderSize = 64;
constexpr size_t kEntrySize = 64;
constexpr size_t kAlign = 64;
constexpr size_t kTrailerSize = 32;
/// More sections than this is a corrupt table, not a model.
constexpr uint64_t kMaxSections = 1u << 20;

void putU32(std::string &out, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out[at + size_t(i)] = char(uint8_t(v >> (8 * i)));
}
void putU64(std::string &out, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out[at + size_t(i)] = char(uint8_t(v >> (8 * i)));
}
uint32_t getU32(std::string_view in, size_t at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= uint32_t(uint8_t(in[at + size_t(i)])) << (8 * i);
  return v;
}
uint64_t getU64(std::string_view in, size_t at) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= uint64_t(uint8_t(in[at + size_t(i)])) << (8 * i);
  return v;
}
size_t alignUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

bool sameDigest(std::string_view stored, const Sha256Digest &d) {
  return std::memcmp(stored.data(), d.data(), d.size()) == 0;
}

} // namespace

std::string sectionKindName(uint32_t kind) {
  switch (SectionKind(kind)) {
  case SectionKind::Metadata: return "metadata";
  case SectionKind::Plan: return "plan";
  case SectionKind::Weights: return "weights";
  case SectionKind::HostCode: return "host code";
  case SectionKind::ExternalModule: return "external module";
  }
  return fmt::format("section kind {}", kind);
}

void ArtifactWriter::add(SectionKind kind, std::string bytes) {
  sections_.emplace_back(uint32_t(kind), std::move(bytes));
}

size_t ArtifactWriter::size() const {
  size_t offset = alignUp(kHeaderSize + kEntrySize * sections_.size());
  for (const auto &[kind, bytes] : sections_)
    offset = alignUp(offset + bytes.size());
  return offset + kTrailerSize;
}

std::string ArtifactWriter::index(std::vector<size_t> &offsets, size_t &total) const {
  size_t offset = alignUp(kHeaderSize + kEntrySize * sections_.size());
  offsets.clear();
  for (const auto &[kind, bytes] : sections_) {
    offsets.push_back(offset);
    offset = alignUp(offset + bytes.size());
  }
  total = offset + kTrailerSize;
  std::string out(kHeaderSize + kEntrySize * sections_.size(), '\0');
  std::memcpy(out.data(), kMagic, 4);
  putU32(out, 4, kArtifactFormatVersion);
  putU64(out, 8, total);
  putU32(out, 16, uint32_t(sections_.size()));
  for (size_t i = 0; i < sections_.size(); ++i) {
    const auto &[kind, bytes] = sections_[i];
    const size_t entry = kHeaderSize + kEntrySize * i;
    putU32(out, entry, kind);
    putU64(out, entry + 8, offsets[i]);
    putU64(out, entry + 16, bytes.size());
    Sha256Digest d = Sha256::of(bytes);
    std::memcpy(out.data() + entry + 24, d.data(), d.size());
  }
  return out;
}

template <typename Sink> void ArtifactWriter::emit(Sink &&sink) const {
  std::vector<size_t> offsets;
  size_t total = 0;
  const std::string head = index(offsets, total);
  sink(std::string_view(head));
  static const char zeros[kAlign] = {};
  size_t at = head.size();
  auto padTo = [&](size_t offset) {
    if (offset > at)
      sink(std::string_view(zeros, offset - at)); // less than kAlign: sections are aligned
    at = offset;
  };
  for (size_t i = 0; i < sections_.size(); ++i) {
    padTo(offsets[i]);
    sink(std::string_view(sections_[i].second));
    at += sections_[i].second.size();
  }
  padTo(total - kTrailerSize);
  // The index (header + section table, which holds every section's digest)
  // has its own digest: each byte of the file is hashed once.
  Sha256Digest digest = Sha256::of(head);
  sink(std::string_view(reinterpret_cast<const char *>(digest.data()), digest.size()));
}

std::string ArtifactWriter::finish() const {
  // Built by appending into a buffer reserved once: each section's bytes are
  // copied once and never zeroed first.
  size_t total = kHeaderSize + kEntrySize * sections_.size() + kTrailerSize + kAlign;
  for (const auto &[kind, bytes] : sections_)
    total += bytes.size() + kAlign;
  std::string out;
  out.reserve(total);
  emit([&](std::string_view piece) { out.append(piece); });
  return out;
}

Status ArtifactWriter::writeFile(const std::string &path) const {
  // Written piece by piece (the sections are not copied into one buffer
  // first: ViT's 346 MB of weights), through a temporary file, then renamed.
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return Error::format("{}: cannot create the file ({})", tmp, std::strerror(errno));
  int err = 0;
  emit([&](std::string_view piece) {
    while (!piece.empty() && err == 0) {
      ssize_t n = ::write(fd, piece.data(), piece.size());
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        err = n < 0 ? errno : EIO;
      else
        piece.remove_prefix(size_t(n));
    }
  });
  if (::close(fd) != 0 && err == 0)
    err = errno;
  if (err != 0) {
    std::remove(tmp.c_str());
    return Error::format("{}: write failed ({})", tmp, std::strerror(err));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    err = errno;
    std::remove(tmp.c_str());
    return Error::format("{}: cannot rename '{}' into place ({})", path, tmp, std::strerror(err));
  }
  return okStatus();
}

Expected<Artifact> Artifact::fromBytes(std::string bytesIn, const std::string &display) {
  auto fail = [&](std::string what) { return Error::format("{}: {}", display, what); };
  const std::string_view in(bytesIn);
  if (in.size() < 4 || std::memcmp(in.data(), kMagic, 4) != 0)
    return fail("not a Tessera artifact (no \"TSRA\" magic)");
  if (in.size() < kHeaderSize + kTrailerSize)
    return fail(fmt::format("truncated: {} bytes, shorter than an empty artifact ({} bytes)",
                            in.size(), kHeaderSize + kTrailerSize));
  const uint32_t version = getU32(in, 4);
  if (version != kArtifactFormatVersion)
    return fail(fmt::format("artifact format version {}, this runtime reads version {} "
                            "(recompile the model with this Tessera)",
                            version, kArtifactFormatVersion));
  const uint64_t declared = getU64(in, 8);
  if (declared > in.size())
    return fail(fmt::format("truncated: the header says {} bytes, the file has {}", declared,
                            in.size()));
  if (declared < in.size())
    return fail(fmt::format("{} unexpected bytes after the end the header gives ({} bytes)",
                            in.size() - declared, declared));
  const uint64_t count = getU32(in, 16);
  const size_t body = in.size() - kTrailerSize;
  if (count > kMaxSections || kHeaderSize + kEntrySize * count > body)
    return fail(fmt::format("corrupted: a section table of {} entries does not fit", count));
  const size_t index = kHeaderSize + kEntrySize * size_t(count);
  if (!sameDigest(in.substr(body), Sha256::of(in.substr(0, index))))
    return fail("corrupted: the header or section table does not match its SHA-256 (modified "
                "after compilation?)");

  Artifact a;
  std::vector<std::pair<uint64_t, uint64_t>> extents;
  for (uint64_t i = 0; i < count; ++i) {
    const size_t entry = kHeaderSize + kEntrySize * size_t(i);
    const uint32_t kind = getU32(in, entry);
    const uint64_t offset = getU64(in, entry + 8), size = getU64(in, entry + 16);
    const std::string name = sectionKindName(kind);
    if (offset % kAlign != 0 || offset < kHeaderSize + kEntrySize * count || offset > body ||
        size > body - offset)
      return fail(fmt::format("corrupted: section {} ({}) lies outside the file", i, name));
    extents.emplace_back(offset, offset + size);
    if (!sameDigest(in.substr(entry + 24, 32), Sha256::of(in.substr(offset, size))))
      return fail(fmt::format("corrupted: section {} ({}) does not match its SHA-256", i, name));
    a.sections_.push_back(Section{kind, {}});
  }
  std::vector<std::pair<uint64_t, uint64_t>> sorted = extents;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 1; i < sorted.size(); ++i)
    if (sorted[i].first < sorted[i - 1].second)
      return fail("corrupted: two sections overlap");
  // Every byte outside the index and the sections is padding: zero.
  uint64_t from = index;
  sorted.emplace_back(body, body);
  for (const auto &[begin, end] : sorted) {
    for (uint64_t b = from; b < begin; ++b)
      if (in[size_t(b)] != '\0')
        return fail(fmt::format("corrupted: padding byte {} is not zero", b));
    from = std::max(from, end);
  }

  a.bytes_ = std::make_shared<const std::string>(std::move(bytesIn));
  const std::string_view stored(*a.bytes_);
  for (size_t i = 0; i < a.sections_.size(); ++i)
    a.sections_[i].bytes = stored.substr(extents[i].first, extents[i].second - extents[i].first);
  return a;
}

Expected<Artifact> Artifact::readFile(const std::string &path) {
  TS_RETURN_IF_ERROR(checkReadableFile(path));
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f)
    return Error::format("{}: cannot open the file", path);
  const std::streamoff size = f.tellg();
  if (size < 0)
    return Error::format("{}: cannot tell the file's size", path);
  std::string bytes(size_t(size), '\0');
  f.seekg(0);
  if (!f.read(bytes.data(), size))
    return Error::format("{}: read failed", path);
  return fromBytes(std::move(bytes), path);
}

std::vector<Section> Artifact::sectionsOf(SectionKind kind) const {
  std::vector<Section> out;
  for (const Section &s : sections_)
    if (s.kind == uint32_t(kind))
      out.push_back(s);
  return out;
}

std::string externalModuleHeader(std::string_view typeKey) {
  std::string out(8, '\0');
  putU64(out, 0, typeKey.size());
  out.append(typeKey);
  return out;
}

std::string packExternalModule(std::string_view typeKey, std::string_view bytes) {
  std::string out;
  out.reserve(8 + typeKey.size() + bytes.size());
  out = externalModuleHeader(typeKey);
  out.append(bytes);
  return out;
}

Expected<ExternalModule> unpackExternalModule(std::string_view payload) {
  if (payload.size() < 8)
    return Error("external module section: truncated type key length");
  const uint64_t n = getU64(payload, 0);
  if (n == 0 || n > payload.size() - 8 || n > 256)
    return Error::format("external module section: bad type key length {}", n);
  return ExternalModule{payload.substr(8, size_t(n)), payload.substr(8 + size_t(n))};
}

} // namespace tessera::runtime
