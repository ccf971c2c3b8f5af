//===- fuzz/compile.cpp - Compiled code computes what the interpreter does -===//
//
// A differential target over `tessera compile` and the runtime. Any text IR
// that parses, verifies and is small is compiled into an artifact (host
// only, or with one of json; dnnl; ccompiler; dnnl, json, chosen by a hash
// of the input), loaded by the runtime and run on one thread. compileModule
// may refuse the module with an error (an op no code generator has); when
// it compiles, the artifact must load and run, and give the interpreter's
// outputs (compared as differential.h says).
//
// A compile takes tens of milliseconds (LLVM, and the system C compiler for
// ccompiler), so this target runs a few executions a second: run it long,
// and on a corpus another target has grown (`passes`, `partition`).
//
//===----------------------------------------------------------------------===//
#include "differential.h"
#include "fuzz_check.h"

#include "compile/compile.h"
#include "ir/printer.h"
#include "runtime/session.h"

#include <cstddef>
#include <cstdint>

using namespace tessera;

namespace {

/// The plugin lists a run picks from.
const std::vector<std::vector<std::string>> kTargetChoices = {
    {}, {"json"}, {"dnnl"}, {"ccompiler"}, {"dnnl", "json"}};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  std::optional<fuzz::Case> c = fuzz::prepare(text);
  if (!c)
    return 0;
  compile::CompileOptions options;
  options.targets = fuzz::targetsFor(text, kTargetChoices);
  auto compiled = compile::compileModule(c->module, options, &plugin::PluginRegistry::global());
  if (!compiled.ok())
    return 0;
  // What a failure prints (FUZZ_REQUIRE builds its message only on failure).
  auto where = [&] {
    return fmt::format("targets [{}]\n---- module\n{}", fmt::join(options.targets, ","),
                       ir::printModule(c->module));
  };
  auto model = runtime::LoadedModel::load(compiled->artifact, "fuzz.tsr");
  FUZZ_REQUIRE(model.ok(), model.error().str() + "\n" + where());
  runtime::SessionOptions one;
  one.numThreads = 1;
  auto session = runtime::Session::create(*model, one);
  FUZZ_REQUIRE(session.ok(), session.error().str() + "\n" + where());
  for (size_t i = 0; i < c->inputs.size(); ++i) {
    Status s = (*session)->setInput(i, c->inputs[i].dl());
    FUZZ_REQUIRE(s.ok(), s.error().str() + "\n" + where());
  }
  Status ran = (*session)->run();
  FUZZ_REQUIRE(ran.ok(), ran.error().str() + "\n" + where());
  std::vector<interp::Value> outputs;
  for (size_t i = 0; i < (*model)->outputs().size(); ++i) {
    auto out = (*session)->output(i);
    FUZZ_REQUIRE(out.ok(), out.error().str() + "\n" + where());
    outputs.push_back(interp::Value::ofTensor(ir::Tensor::copyOf(**out)));
  }
  std::string why = fuzz::compareOutputs(c->before, interp::Value::ofTuple(std::move(outputs)));
  FUZZ_REQUIRE(why.empty(), why + "\n" + where());
  return 0;
}
