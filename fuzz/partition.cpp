//===- fuzz/partition.cpp - Partitioning keeps what a module computes ----===//
//
// A differential target over the whole of `tessera partition`. Any text IR
// that parses, verifies and is small, partitioned among the shipped plugins
// (the optimisation pipeline, then the `partition` pass, with the verifier
// after every pass): partitionModule either fails with an error, or gives a
// module that verifies, has no cycle among its regions (the verifier's
// recursion check), and on which the reference interpreter computes what it
// computes on the original (outputs compared as differential.h says).
//
// The targets, in priority order, are one of: json; dnnl, json; ccompiler;
// dnnl, ccompiler, json (chosen by a hash of the input), so the checkers,
// patterns and region rules of all three plugins see fuzzed graphs. The
// plugins are the ones built next to libtessera_runtime (lib/tessera/plugins
// of the build tree); dnnl is left out when it was not built.
//
//===----------------------------------------------------------------------===//
#include "differential.h"
#include "fuzz_check.h"

#include "ir/printer.h"
#include "partition/driver.h"

#include <cstddef>
#include <cstdint>

using namespace tessera;

namespace {

/// The plugin lists a run picks from.
const std::vector<std::vector<std::string>> kTargetChoices = {
    {"json"}, {"dnnl", "json"}, {"ccompiler"}, {"dnnl", "ccompiler", "json"}};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  std::optional<fuzz::Case> c = fuzz::prepare(text);
  if (!c)
    return 0;
  std::vector<std::string> targets = fuzz::targetsFor(text, kTargetChoices);
  // json and ccompiler are always built: without them the target tests nothing.
  FUZZ_REQUIRE(!targets.empty(), "no shipped plugin was found next to libtessera_runtime");

  partition::PartitionOptions options;
  options.targets = targets;
  options.pm.verifyEach = true;
  auto result = partition::partitionModule(c->module, options, plugin::PluginRegistry::global());
  // What a failure prints (FUZZ_REQUIRE builds its message only on failure).
  auto where = [&] {
    std::string s = fmt::format("targets {}\n---- original\n{}", fmt::join(targets, ","),
                                ir::printModule(c->module));
    return result.ok() ? s + "---- partitioned\n" + ir::printModule(result->module) : s;
  };
  FUZZ_REQUIRE(result.ok(), result.error().str() + "\n" + where());
  Status verified = passes::verifyModule(result->module);
  FUZZ_REQUIRE(verified.ok(), verified.error().str() + "\n" + where());
  auto after = interp::run(result->module, c->inputs);
  FUZZ_REQUIRE(after.ok(), after.error().str() + "\n" + where());
  std::string why = fuzz::compareOutputs(c->before, *after);
  FUZZ_REQUIRE(why.empty(), why + "\n" + where());
  return 0;
}
