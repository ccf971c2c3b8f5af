//===- unit/host_levels_test.cpp - Host code levels and their choice -----===//
//
// runtime/host_levels.h: the metadata's "host_code" list read and checked,
// the level this process loads (TESSERA_HOST_CPU or the first the CPU runs),
// and runtime/deflate.h's compression of the levels past the first.
//
//===----------------------------------------------------------------------===//
#include <catch2/catch.hpp>

#include "scoped_env.h"

#include "runtime/cpu_features.h"
#include "runtime/deflate.h"
#include "runtime/host_levels.h"

#include <cstdlib>
#include <random>

using namespace tessera;
using namespace tessera::runtime;
using tessera::test::ScopedEnv;

namespace {

/// A known feature this CPU lacks (no CPU has them all: AMD's xop and fma4
/// against Intel's AMX), so that a level needing it never runs here.
std::string lackedFeature() {
  for (std::string_view f : knownCpuFeatures())
    if (cpuHas(f) == false)
      return std::string(f);
  return {};
}

} // namespace

TEST_CASE("host levels: the metadata list is read and checked", "[host_levels]") {
  const char *two = R"({"host_code": [
      {"cpu": "big", "features": ["avx2"], "section": 1, "encoding": "zlib", "size": 10},
      {"cpu": "small", "features": [], "section": 0, "encoding": "raw", "size": 8}]})";
  auto levels = hostLevels(two, 2);
  REQUIRE(levels.ok());
  REQUIRE(levels->size() == 2);
  CHECK((*levels)[0].cpu == "big");
  CHECK((*levels)[0].zlib);
  CHECK((*levels)[0].features == std::vector<std::string>{"avx2"});
  CHECK((*levels)[1].section == 0);
  CHECK(!(*levels)[1].zlib);

  // Without a list: one level from "target", or none.
  auto legacy = hostLevels(R"({"target": {"cpu": "x86-64-v3", "features": ["avx2"]}})", 1);
  REQUIRE(legacy.ok());
  REQUIRE(legacy->size() == 1);
  CHECK((*legacy)[0].cpu == "x86-64-v3");
  CHECK(hostLevels(R"({"target": {}})", 0)->empty());

  auto error = [](std::string_view meta, size_t sections) {
    auto r = hostLevels(meta, sections);
    REQUIRE(!r.ok());
    return r.error().str();
  };
  CHECK(error(R"({"target": {}})", 2) ==
        "2 host code sections and no 'host_code' list in the metadata");
  CHECK(error(two, 1) == "metadata: host_code[0] (big) is in host code section 1, the artifact "
                         "has 1");
  CHECK(error(two, 3) == "metadata: 'host_code' lists 2 levels, the artifact has 3 host code "
                         "sections");
  CHECK(error(R"({"host_code": [{"cpu": "a", "section": 0, "encoding": "raw", "size": 1},
                               {"cpu": "b", "section": 0, "encoding": "raw", "size": 1}]})",
              2) == "metadata: host_code[1] (b, section 0) repeats a CPU or a section of an "
                    "earlier entry");
  CHECK(error(R"({"host_code": [{"cpu": "a", "section": 0, "encoding": "lz4", "size": 1}]})", 1) ==
        "metadata: 'host_code[0].encoding' is 'lz4' (expected raw or zlib)");
  CHECK(error(R"({"host_code": [{"cpu": "a", "section": 0, "size": 1}]})", 1) ==
        "metadata: 'host_code[0]' must be {\"cpu\", \"features\", \"section\", \"encoding\", "
        "\"size\"}");
  CHECK(error(R"({"host_code": [{"cpu": "a", "features": "avx2", "section": 0,
                                 "encoding": "raw", "size": 1}]})",
              1) == "metadata: 'host_code[0].features' is not a list of strings");
  CHECK(error(R"({"host_code": {}})", 0) == "metadata: 'host_code' must be an array");
}

TEST_CASE("host levels: the first level the CPU runs, or the one asked for", "[host_levels]") {
  const std::string lacked = lackedFeature();
  REQUIRE(!lacked.empty());
  ScopedEnv unset("TESSERA_HOST_CPU", "");
  std::vector<HostLevel> levels = {{"future", {"avx", lacked}, 1, true, 0},
                                   {"base", {"sse3"}, 0, false, 0}};
  REQUIRE(cpuHas("sse3") == true);
  CHECK(chooseHostLevel(levels).value() == 1);
  levels[0].features = {"sse3"};
  CHECK(chooseHostLevel(levels).value() == 0);
  {
    ScopedEnv forced("TESSERA_HOST_CPU", "base");
    CHECK(chooseHostLevel(levels).value() == 1);
  }
  {
    ScopedEnv forced("TESSERA_HOST_CPU", "other");
    auto r = chooseHostLevel(levels);
    REQUIRE(!r.ok());
    CHECK(r.error().str() == "TESSERA_HOST_CPU=other: the host code is built for future, base only");
  }
  levels[1].features = {lacked};
  {
    ScopedEnv forced("TESSERA_HOST_CPU", "base");
    auto r = chooseHostLevel(levels);
    REQUIRE(!r.ok());
    CHECK(r.error().str().rfind("TESSERA_HOST_CPU=base: host code (compiled for base) needs " +
                                    lacked + "; this CPU (",
                                0) == 0);
  }
  levels[0].features = {lacked};
  auto none = chooseHostLevel(levels);
  REQUIRE(!none.ok());
  CHECK(none.error().str().rfind(
            "host code (compiled for base, also for future) needs " + lacked + "; this CPU (", 0) ==
        0);
  CHECK(!chooseHostLevel({}).ok());
}

TEST_CASE("deflate: round trip, and damaged streams refused", "[host_levels]") {
  std::mt19937 rng(5);
  std::string bytes(100000, '\0');
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = char(i % 251 < 200 ? i % 7 : rng() % 256); // some repetition, some noise
  auto packed = deflateBytes(bytes);
  REQUIRE(packed.ok());
  CHECK(packed->size() < bytes.size());
  auto back = inflateBytes(*packed, bytes.size());
  REQUIRE(back.ok());
  CHECK(*back == bytes);
  CHECK(inflateBytes(*deflateBytes(""), 0).value().empty());

  auto error = [&](std::string_view compressed, size_t size) {
    auto r = inflateBytes(compressed, size);
    REQUIRE(!r.ok());
    return r.error().str();
  };
  CHECK(error(std::string_view(*packed).substr(0, packed->size() / 2), bytes.size()) ==
        "the compressed bytes do not inflate (damaged or cut short)");
  CHECK(error(*packed, bytes.size() - 1) ==
        fmt::format("the compressed bytes hold more than the {} bytes recorded", bytes.size() - 1));
  CHECK(error(*packed, bytes.size() + 1) ==
        fmt::format("the compressed bytes inflate to {} bytes, {} were recorded", bytes.size(),
                    bytes.size() + 1));
  CHECK(error(*packed + "xyz", bytes.size()) == "3 bytes follow the compressed stream");
  std::string damaged = *packed;
  damaged[damaged.size() / 3] ^= 0x55;
  CHECK(!inflateBytes(damaged, bytes.size()).ok());
  CHECK(error("not zlib at all", 10) ==
        "the compressed bytes do not inflate (damaged or cut short)");
}
