//===- fuzz/npy.cpp - The .npy reader of `tessera run` ------------------===//
//
// Any bytes as a .npy file: parseNpy either fails with a message that
// starts with the file name, or gives an array that writes and reads back
// to the same bytes.
//
//===----------------------------------------------------------------------===//
#include "fuzz_check.h"

#include "tools/npy.h"

#include <cstddef>
#include <cstdint>

using namespace tessera;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char *>(data), size);
  auto parsed = tools::npy::parseNpy(bytes, "fuzz.npy");
  if (!parsed.ok()) {
    std::string message = parsed.error().str();
    FUZZ_REQUIRE(message.starts_with("fuzz.npy"), message);
    return 0;
  }
  auto written = tools::npy::writeNpy(*parsed);
  FUZZ_REQUIRE(written.ok(), written.error().str());
  auto again = tools::npy::parseNpy(*written, "written.npy");
  FUZZ_REQUIRE(again.ok(), again.error().str());
  auto rewritten = tools::npy::writeNpy(*again);
  FUZZ_REQUIRE(rewritten.ok() && *rewritten == *written, "write(read(write(a))) != write(a)");
  return 0;
}
