//===- plugins/dnnl/codegen.cpp - Codegen and module factory --------------===//
//
// The saved form is JsonRuntime's (graph + constants, plain f32): oneDNN
// primitives and blocked weights depend on the CPU, so they are rebuilt at
// load rather than saved. Codegen's module only checks at init that every
// primitive can be built (runtime.h): the compiler saves it, it never runs.
//
//===----------------------------------------------------------------------===//
#include "codegen.h"

#include "runtime.h"

#include <utility>
#include <vector>

namespace tessera::dnnl_plugin {

std::unique_ptr<sdk::Module> DnnlCodegen::compile(const sdk::GraphView &graph) {
  std::vector<sdk::JsonFunction> functions;
  functions.push_back(sdk::JsonRuntime::functionFromGraph(graph, DnnlModule::kTypeKey));
  return sdk::JsonRuntime::create<DnnlModule>(std::move(functions), DnnlModule::Origin::Codegen);
}

DnnlModuleFactory::DnnlModuleFactory() : ModuleFactory(DnnlModule::kTypeKey) {}

std::unique_ptr<sdk::Module> DnnlModuleFactory::load(std::string_view bytes) {
  return sdk::JsonRuntime::load<DnnlModule>(bytes, DnnlModule::kTypeKey, DnnlModule::Origin::Load);
}

} // namespace tessera::dnnl_plugin
