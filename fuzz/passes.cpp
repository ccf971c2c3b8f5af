//===- fuzz/passes.cpp - The default pipeline keeps what a module computes -===//
//
// A differential target. Any text IR that parses and verifies, whose tensors
// are small: the default pass pipeline (with the verifier after every pass)
// either fails with an error, or gives a module on which the reference
// interpreter computes what it computes on the original, on the same inputs
// (drawn from a hash of the fuzz input).
//
// Outputs are compared as differential.h says. A module the interpreter
// refuses on these inputs (an index out of range) is skipped.
//
//===----------------------------------------------------------------------===//
#include "differential.h"
#include "fuzz_check.h"

#include "ir/printer.h"
#include "passes/pass_manager.h"

#include <cstddef>
#include <cstdint>

using namespace tessera;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  std::optional<fuzz::Case> c = fuzz::prepare(text);
  if (!c)
    return 0;
  ir::Module optimized = c->module;
  passes::PassManagerOptions options;
  options.verifyEach = true;
  auto pm = passes::PassManager::fromPipeline(passes::kDefaultPipeline,
                                              passes::PassRegistry::standard(), options);
  FUZZ_REQUIRE(pm.ok(), pm.error().str());
  Status s = pm->run(optimized);
  FUZZ_REQUIRE(s.ok(), s.error().str() + "\n" + ir::printModule(c->module));
  auto after = interp::run(optimized, c->inputs);
  FUZZ_REQUIRE(after.ok(), after.error().str() + "\n" + ir::printModule(optimized));
  std::string why = fuzz::compareOutputs(c->before, *after);
  FUZZ_REQUIRE(why.empty(), why + "\n---- original\n" + ir::printModule(c->module) +
                                "---- optimized\n" + ir::printModule(optimized));
  return 0;
}
