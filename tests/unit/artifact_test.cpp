//===- tests/unit/artifact_test.cpp - The artifact container --------------===//
//
// SHA-256 against the FIPS 180-4 / NIST example vectors; the container's
// round trip; one test per rejection with its exact message; and every
// truncation and single-byte change of a small artifact is refused, never
// crashes.
//
//===----------------------------------------------------------------------===//
#include "runtime/artifact.h"
#include "runtime/sha256.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>

using namespace tessera::runtime;

namespace {

std::string sample() {
  ArtifactWriter w;
  w.add(SectionKind::Metadata, R"({"inputs": ["x"]})");
  w.add(SectionKind::Weights, std::string(300, '\x5a'));
  w.add(SectionKind::ExternalModule, packExternalModule("json", "module bytes"));
  return w.finish();
}

std::string errorOf(std::string bytes) {
  auto a = Artifact::fromBytes(std::move(bytes), "m.tsr");
  return a.ok() ? std::string() : a.error().str();
}

/// Re-seals the whole-file digest after an edit (what a careless tamperer
/// would do), so that the checks behind it are reached.
/// Recomputes the index digest (header + section table) after an edit.
std::string reseal(std::string bytes) {
  uint32_t count = 0;
  std::memcpy(&count, bytes.data() + 16, 4);
  Sha256Digest d = Sha256::of(std::string_view(bytes).substr(0, 64 + 64 * size_t(count)));
  std::memcpy(bytes.data() + bytes.size() - 32, d.data(), 32);
  return bytes;
}

} // namespace

TEST_CASE("SHA-256 matches the FIPS 180-4 examples", "[artifact]") {
  CHECK(hexDigest(Sha256::of("")) ==
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(hexDigest(Sha256::of("abc")) ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(hexDigest(Sha256::of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")) ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // One million 'a', fed in uneven pieces.
  Sha256 h;
  std::string chunk(997, 'a');
  size_t left = 1000000;
  while (left > 0) {
    size_t n = std::min(left, chunk.size());
    h.update(chunk.data(), n);
    left -= n;
  }
  CHECK(hexDigest(h.finish()) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("artifact: sections round-trip", "[artifact]") {
  auto a = Artifact::fromBytes(sample(), "m.tsr");
  REQUIRE(a.ok());
  REQUIRE(a->sections().size() == 3);
  CHECK(a->sections()[0].kind == uint32_t(SectionKind::Metadata));
  CHECK(a->sections()[0].bytes == R"({"inputs": ["x"]})");
  CHECK(a->sections()[1].bytes == std::string(300, '\x5a'));
  auto ext = a->sectionsOf(SectionKind::ExternalModule);
  REQUIRE(ext.size() == 1);
  auto m = unpackExternalModule(ext[0].bytes);
  REQUIRE(m.ok());
  CHECK(m->typeKey == "json");
  CHECK(m->bytes == "module bytes");
  // Sections start 64-byte aligned.
  for (const Section &s : a->sections())
    CHECK((s.bytes.data() - a->sections()[0].bytes.data()) % 64 == 0);
}

TEST_CASE("artifact: writeFile writes what finish builds", "[artifact]") {
  ArtifactWriter w;
  w.add(SectionKind::Metadata, R"({"inputs": ["x"]})");
  w.add(SectionKind::Weights, std::string(1000, '\x07')); // not a multiple of 64
  w.add(SectionKind::Plan, "");
  w.add(SectionKind::ExternalModule, packExternalModule("json", "module bytes"));
  const std::string bytes = w.finish();
  CHECK(w.size() == bytes.size());
  const std::string path = "artifact_write_test.tsr";
  REQUIRE(w.writeFile(path).ok());
  auto read = Artifact::readFile(path);
  REQUIRE(read.ok());
  CHECK(read->size() == bytes.size());
  std::FILE *f = std::fopen(path.c_str(), "rb");
  REQUIRE(f);
  std::string onDisk(bytes.size() + 1, '\0');
  onDisk.resize(std::fread(onDisk.data(), 1, onDisk.size(), f));
  std::fclose(f);
  CHECK(onDisk == bytes);
  // Written again over an existing artifact: the new bytes, and nothing
  // left beside it (the old file is moved aside, then removed).
  ArtifactWriter w2;
  w2.add(SectionKind::Metadata, R"({"inputs": ["y"]})");
  REQUIRE(w2.writeFile(path).ok());
  auto again = Artifact::readFile(path);
  REQUIRE(again.ok());
  CHECK(again->size() == w2.finish().size());
  for (const auto &entry : std::filesystem::directory_iterator("."))
    CHECK_FALSE(entry.path().filename().string().starts_with(path + "."));
  std::remove(path.c_str());
  // A folder that does not exist: an error naming the file, nothing left.
  CHECK(w.writeFile("no/such/folder/a.tsr").error().message().starts_with(
      "no/such/folder/a.tsr.tmp: cannot create the file ("));
}

TEST_CASE("SHA-256 with the CPU's SHA extensions equals the portable code", "[artifact]") {
  INFO("SHA extensions on this CPU: " << sha256HasHardware());
  std::mt19937 rng(9);
  std::string data(3 * 1024 * 1024 + 17, '\0');
  for (char &c : data)
    c = char(rng());
  // Every length around the block and padding boundaries, then large inputs,
  // also fed in uneven pieces.
  for (size_t n : {0, 1, 55, 56, 63, 64, 65, 119, 120, 127, 128, 129, 1000, 4096, 1 << 20,
                   3 << 20}) {
    std::string_view s(data.data(), n);
    Sha256 hw(true), sw(false);
    hw.update(s);
    sw.update(s);
    CHECK(hexDigest(hw.finish()) == hexDigest(sw.finish()));
    Sha256 pieces(true);
    for (size_t at = 0; at < n; at += 37)
      pieces.update(s.substr(at, 37));
    Sha256 whole(false);
    whole.update(s);
    CHECK(hexDigest(pieces.finish()) == hexDigest(whole.finish()));
  }
}

TEST_CASE("artifact: each problem has its message", "[artifact]") {
  const std::string good = sample();
  CHECK(errorOf("MZ\x90\x00 not an artifact") == "m.tsr: not a Tessera artifact (no \"TSRA\" magic)");
  CHECK(errorOf("TSRA") ==
        "m.tsr: truncated: 4 bytes, shorter than an empty artifact (96 bytes)");
  std::string v1 = good;
  v1[4] = 1;
  CHECK(errorOf(v1) == "m.tsr: artifact format version 1, this runtime reads version 2 "
                       "(recompile the model with this Tessera)");
  CHECK(errorOf(good.substr(0, good.size() - 1)) ==
        "m.tsr: truncated: the header says " + std::to_string(good.size()) +
            " bytes, the file has " + std::to_string(good.size() - 1));
  CHECK(errorOf(good + "x") == "m.tsr: 1 unexpected bytes after the end the header gives (" +
                                   std::to_string(good.size()) + " bytes)");
  std::string flipped = good;
  flipped[64 + 24] ^= 1; // in section 0's digest, in the table
  CHECK(errorOf(flipped) == "m.tsr: corrupted: the header or section table does not match its "
                            "SHA-256 (modified after compilation?)");
  // Padding must stay zero (the last byte before the trailer is padding here).
  std::string padded = good;
  padded[good.size() - 33] = 'p';
  CHECK(errorOf(padded) ==
        "m.tsr: corrupted: padding byte " + std::to_string(good.size() - 33) + " is not zero");
  // A changed weight with the file digest recomputed: the section's own
  // digest still catches it.
  std::string tampered = good;
  const size_t at = good.find(std::string(300, '\x5a'));
  REQUIRE(at != std::string::npos);
  tampered[at + 7] = 'X';
  CHECK(errorOf(reseal(tampered)) ==
        "m.tsr: corrupted: section 1 (weights) does not match its SHA-256");
  // A section pointing past the end.
  std::string outside = good;
  outside[64 + 64 + 8 + 6] = 0x7f; // high byte of section 1's offset
  CHECK(errorOf(reseal(outside)) == "m.tsr: corrupted: section 1 (weights) lies outside the file");
  CHECK(Artifact::readFile("/nonexistent/m.tsr").error().str() ==
        "/nonexistent/m.tsr: cannot open the file (no such file)");
}

TEST_CASE("artifact: no truncation or byte change gets through or crashes", "[artifact]") {
  const std::string good = sample();
  auto original = Artifact::fromBytes(good, "m.tsr");
  REQUIRE(original.ok());
  for (size_t n = 0; n < good.size(); ++n)
    CHECK_FALSE(Artifact::fromBytes(good.substr(0, n), "m.tsr").ok());
  for (size_t i = 0; i < good.size(); ++i) {
    std::string b = good;
    b[i] ^= 0x41;
    CHECK_FALSE(Artifact::fromBytes(b, "m.tsr").ok());
    // With the file digest resealed, the remaining checks refuse the file,
    // or the change was harmless (padding, a section's kind) and every
    // section reads back with its original content.
    auto r = Artifact::fromBytes(reseal(b), "m.tsr");
    if (r.ok()) {
      REQUIRE(r->sections().size() == original->sections().size());
      for (size_t k = 0; k < r->sections().size(); ++k)
        CHECK(r->sections()[k].bytes == original->sections()[k].bytes);
    }
  }
}

TEST_CASE("artifact: written through a temporary file", "[artifact]") {
  ArtifactWriter w;
  w.add(SectionKind::Plan, "plan");
  const std::string path = "artifact_test.tsr";
  REQUIRE(w.writeFile(path).ok());
  auto a = Artifact::readFile(path);
  REQUIRE(a.ok());
  CHECK(a->sectionsOf(SectionKind::Plan).at(0).bytes == "plan");
  std::remove(path.c_str());
}
