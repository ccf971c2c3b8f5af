//===- fuzz/pattern.cpp - The partition pattern language ---------------===//
//
// Any bytes as a plugin's pattern: parsePattern either fails with an error
// that names the pattern, or gives a pattern whose canonical text parses to
// the same canonical text.
//
//===----------------------------------------------------------------------===//
#include "fuzz_check.h"

#include "bridge/pattern.h"

#include <cstddef>
#include <cstdint>

using namespace tessera;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  auto parsed = bridge::parsePattern("fuzzed", text);
  if (!parsed.ok()) {
    std::string message = parsed.error().str();
    FUZZ_REQUIRE(message.find("fuzzed") != std::string::npos, message);
    return 0;
  }
  std::string canonical = parsed->str();
  auto again = bridge::parsePattern("fuzzed", canonical);
  FUZZ_REQUIRE(again.ok(), again.error().str() + "\n" + canonical);
  FUZZ_REQUIRE(again->str() == canonical, canonical + "\n---- again ----\n" + again->str());
  return 0;
}
