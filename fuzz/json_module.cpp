//===- fuzz/json_module.cpp - The SDK's JSON runtime module format -------===//
//
// Any bytes as a saved JsonRuntime module (what a plugin's module factory
// reads from an artifact): JsonRuntime::load either refuses them with an
// sdk::Error, or gives a module whose save() loads again and saves the
// same bytes. The module here runs nothing (init accepts every graph), so
// what is fuzzed is the SDK's reading: the container, each function's
// tessera.graph JSON and its constants.
//
//===----------------------------------------------------------------------===//
#include "fuzz_check.h"

#include <tessera/sdk/json_runtime.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace sdk = tessera::sdk;

namespace {

class Inert : public sdk::JsonRuntime {
public:
  explicit Inert(std::vector<sdk::JsonFunction> functions)
      : JsonRuntime("fuzz", std::move(functions)) {}

protected:
  void run(const sdk::JsonFunction &, std::span<const DLTensor *const>,
           std::span<const DLTensor *const>) const override {}
};

std::string saved(const Inert &m) {
  std::string out;
  m.save(sdk::Writer(
      [](void *sink, const void *data, size_t size) {
        static_cast<std::string *>(sink)->append(static_cast<const char *>(data), size);
        return true;
      },
      &out));
  return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char *>(data), size);
  std::unique_ptr<Inert> m;
  try {
    m = sdk::JsonRuntime::load<Inert>(bytes, "fuzz");
  } catch (const sdk::Error &e) {
    FUZZ_REQUIRE(std::string_view(e.what()).starts_with("fuzz runtime module: "), e.what());
    return 0;
  }
  std::string first = saved(*m);
  std::unique_ptr<Inert> again;
  try {
    again = sdk::JsonRuntime::load<Inert>(first, "fuzz");
  } catch (const sdk::Error &e) {
    FUZZ_REQUIRE(false, std::string("a saved module does not load: ") + e.what());
  }
  FUZZ_REQUIRE(saved(*again) == first, "save(load(save(m))) != save(m)");
  return 0;
}
