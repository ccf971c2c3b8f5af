//===- passes/pass.cpp - Function passes ---------------------------------===//
#include "passes/pass.h"

namespace tessera::passes {

Status FunctionPass::run(ir::Module &m, PassContext &ctx) {
  // Copy the list: a function pass replaces functions, never adds or removes.
  auto functions = m.functions();
  for (const auto &[global, fn] : functions) {
    auto result = runOnFunction(m, global, fn, ctx);
    if (!result.ok())
      return std::move(result).withContext(fmt::format("in function '@{}'", global)).error();
    if (*result != fn)
      m.set(global, std::move(result).value());
  }
  return okStatus();
}

} // namespace tessera::passes
