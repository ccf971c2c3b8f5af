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
#include <thread>

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

namespace {

using Sections = std::vector<std::pair<uint32_t, std::string>>;

/// Where each section starts; the file's size.
struct Layout {
  std::vector<size_t> offsets;
  size_t total = 0;
};

Layout layOut(const Sections &sections) {
  Layout l;
  size_t offset = alignUp(kHeaderSize + kEntrySize * sections.size());
  for (const auto &[kind, bytes] : sections) {
    l.offsets.push_back(offset);
    offset = alignUp(offset + bytes.size());
  }
  l.total = offset + kTrailerSize;
  return l;
}

std::vector<Sha256Digest> digestsOf(const Sections &sections) {
  std::vector<Sha256Digest> out;
  for (const auto &[kind, bytes] : sections)
    out.push_back(Sha256::of(bytes));
  return out;
}

/// The header and section table.
std::string index(const Sections &sections, const Layout &l,
                  const std::vector<Sha256Digest> &digests) {
  std::string out(kHeaderSize + kEntrySize * sections.size(), '\0');
  std::memcpy(out.data(), kMagic, 4);
  putU32(out, 4, kArtifactFormatVersion);
  putU64(out, 8, l.total);
  putU32(out, 16, uint32_t(sections.size()));
  for (size_t i = 0; i < sections.size(); ++i) {
    const size_t entry = kHeaderSize + kEntrySize * i;
    putU32(out, entry, sections[i].first);
    putU64(out, entry + 8, l.offsets[i]);
    putU64(out, entry + 16, sections[i].second.size());
    std::memcpy(out.data() + entry + 24, digests[i].data(), digests[i].size());
  }
  return out;
}

} // namespace

size_t ArtifactWriter::size() const { return layOut(sections_).total; }

std::string ArtifactWriter::finish() const {
  // Appended into a buffer reserved once: each section's bytes are copied
  // once and never zeroed first.
  const Layout l = layOut(sections_);
  const std::string head = index(sections_, l, digestsOf(sections_));
  std::string out;
  out.reserve(l.total);
  out += head;
  for (size_t i = 0; i < sections_.size(); ++i) {
    out.resize(l.offsets[i], '\0'); // padding: less than kAlign
    out += sections_[i].second;
  }
  out.resize(l.total - kTrailerSize, '\0');
  // The index (header + section table, which holds every section's digest)
  // has its own digest: each byte of the file is hashed once.
  const Sha256Digest digest = Sha256::of(head);
  out.append(reinterpret_cast<const char *>(digest.data()), digest.size());
  return out;
}

Status ArtifactWriter::writeFile(const std::string &path) const {
  // Each section is written at its offset straight from where it lies
  // (ViT-B/16's 346 MB of weights are not copied into one buffer first)
  // while a second thread hashes the sections; the index, which holds
  // their digests, goes in last. The gaps between sections are padding:
  // they are written as zeros too, so that the file is finish()'s bytes.
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return Error::format("{}: cannot create the file ({})", tmp, std::strerror(errno));
  const Layout l = layOut(sections_);
  std::vector<Sha256Digest> digests;
  std::thread hasher([&] { digests = digestsOf(sections_); });
  int err = 0;
  auto put = [&](std::string_view piece, size_t at) {
    while (!piece.empty() && err == 0) {
      ssize_t n = ::pwrite(fd, piece.data(), piece.size(), off_t(at));
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        err = n < 0 ? errno : EIO;
      else {
        piece.remove_prefix(size_t(n));
        at += size_t(n);
      }
    }
  };
  static const char zeros[kAlign] = {};
  size_t at = kHeaderSize + kEntrySize * sections_.size(); // the end of the index
  auto padTo = [&](size_t offset) {
    put(std::string_view(zeros, offset - at), at); // less than kAlign: sections are aligned
    at = offset;
  };
  for (size_t i = 0; i < sections_.size(); ++i) {
    padTo(l.offsets[i]);
    put(sections_[i].second, at);
    at += sections_[i].second.size();
  }
  padTo(l.total - kTrailerSize);
  hasher.join();
  const std::string head = index(sections_, l, digests);
  put(head, 0);
  const Sha256Digest digest = Sha256::of(head);
  put(std::string_view(reinterpret_cast<const char *>(digest.data()), digest.size()),
      l.total - kTrailerSize);
  if (::close(fd) != 0 && err == 0)
    err = errno;
  if (err != 0) {
    std::remove(tmp.c_str());
    return Error::format("{}: write failed ({})", tmp, std::strerror(err));
  }
  // An existing artifact is moved aside before the new one is renamed into
  // place, then removed (lld does the same with its outputs). Renamed over
  // it, ext4 (auto_da_alloc) starts writing the new file's blocks out inside
  // rename(): ViT-B/16's 346 MB cost 0.2 s there, and the writeback slowed
  // the next compile's writes to 0.8 s from 0.1. A crash in between leaves
  // at most `path` missing or unreadable, which loading reports.
  const std::string aside = fmt::format("{}.old-{}", path, ::getpid());
  const bool movedAside = std::rename(path.c_str(), aside.c_str()) == 0;
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    err = errno;
    std::remove(tmp.c_str());
    if (movedAside)
      std::rename(aside.c_str(), path.c_str());
    return Error::format("{}: cannot rename '{}' into place ({})", path, tmp, std::strerror(err));
  }
  if (movedAside)
    std::remove(aside.c_str());
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
    return Error::format("{}: cannot open the file", path).setCode(ErrorCode::NotFound);
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
