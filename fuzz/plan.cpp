//===- fuzz/plan.cpp - An artifact's plan section -------------------------===//
//
// Any bytes as the plan JSON of an artifact: parsePlan either fails with a
// message, or gives a plan that validatePlan accepts or rejects with a
// message; a valid plan serializes and parses back to the same text.
//
//===----------------------------------------------------------------------===//
#include "fuzz_check.h"

#include "runtime/plan.h"

#include <cstddef>
#include <cstdint>

using namespace tessera;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  auto plan = runtime::parsePlan(text);
  if (!plan.ok()) {
    FUZZ_REQUIRE(!plan.error().str().empty(), "an empty message");
    return 0;
  }
  Status valid = runtime::validatePlan(*plan);
  if (!valid.ok())
    return 0;
  std::string serialized = runtime::serializePlan(*plan);
  auto again = runtime::parsePlan(serialized);
  FUZZ_REQUIRE(again.ok(), again.error().str() + "\n" + serialized);
  FUZZ_REQUIRE(runtime::validatePlan(*again).ok(), serialized);
  FUZZ_REQUIRE(runtime::serializePlan(*again) == serialized, serialized);
  return 0;
}
