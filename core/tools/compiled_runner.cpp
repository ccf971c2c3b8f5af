//===- tools/compiled_runner.cpp - Conformance through compiled code ------===//
//
// makeCompiledRunner (compiled_runner.h): compileModule -> artifact bytes ->
// LoadedModel::load -> Session: setInput (zero-copy views of the test data)
// -> run -> copies of the outputs.
//
//===----------------------------------------------------------------------===//
#include "tools/compiled_runner.h"

#include "compile/compile.h"
#include "plugin/registry.h"
#include "runtime/session.h"

namespace tessera::tools {

namespace {

Expected<std::vector<interp::Value>> compileAndRun(const CompiledRunnerOptions &options,
                                                   CompiledRunStats *stats,
                                                   const ir::Module &module,
                                                   const std::vector<interp::Value> &inputs) {
  compile::CompileOptions co;
  co.targets = options.targets;
  co.codegen.optLevel = options.optLevel;
  // Plugins are discovered only when asked for (a probe per file).
  const plugin::PluginRegistry *registry =
      options.targets.empty() ? nullptr : &plugin::PluginRegistry::global();
  auto compiled = compile::compileModule(module, co, registry);
  if (!compiled.ok())
    return Error::format("compile failed: {}", compiled.error().str());
  if (stats) {
    ++stats->models;
    stats->hostSteps += compiled->hostSteps;
    stats->externalSteps += compiled->externalSteps;
    if (compiled->hostSteps + compiled->externalSteps == 0)
      stats->noSteps.push_back(module.name());
  }

  auto model = runtime::LoadedModel::load(std::move(compiled->artifact), module.name() + ".tsr");
  if (!model.ok())
    return Error::format("load failed: {}", model.error().str());
  runtime::SessionOptions so;
  so.numThreads = options.threads;
  auto session = runtime::Session::create(*model, so);
  if (!session.ok())
    return Error::format("load failed: {}", session.error().str());

  runtime::Session &s = **session;
  if (inputs.size() != (*model)->inputs().size())
    return Error::format("run failed: the artifact has {} inputs, the test gives {}",
                         (*model)->inputs().size(), inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    Status st = okStatus();
    if (inputs[i].isSequence) {
      std::vector<DLTensor> elements;
      for (const interp::Value &e : inputs[i].fields)
        elements.push_back(e.tensor.dl());
      st = s.setInputSequence(i, elements);
    } else {
      st = s.setInput(i, inputs[i].tensor.dl());
    }
    if (!st.ok())
      return Error::format("run failed: input {}: {}", i, st.error().str());
  }
  if (Status st = s.run(); !st.ok())
    return Error::format("run failed: {}", st.error().str());

  std::vector<interp::Value> outputs;
  for (size_t i = 0; i < (*model)->outputs().size(); ++i) {
    if ((*model)->outputs()[i].sequence) {
      auto elements = s.outputSequence(i);
      if (!elements.ok())
        return Error::format("run failed: output {}: {}", i, elements.error().str());
      std::vector<ir::Tensor> copies;
      for (const DLTensor &e : *elements)
        copies.push_back(ir::Tensor::copyOf(e));
      outputs.push_back(interp::Value::ofSequence(std::move(copies)));
      continue;
    }
    auto t = s.output(i);
    if (!t.ok())
      return Error::format("run failed: output {}: {}", i, t.error().str());
    outputs.push_back(interp::Value::ofTensor(ir::Tensor::copyOf(**t)));
  }
  return outputs;
}

} // namespace

frontend::onnx::ConformanceRunner makeCompiledRunner(const CompiledRunnerOptions &options,
                                                     std::shared_ptr<CompiledRunStats> stats) {
  return [options, stats](const ir::Module &module,
                          const std::vector<interp::Value> &inputs) {
    return compileAndRun(options, stats.get(), module, inputs);
  };
}

} // namespace tessera::tools
