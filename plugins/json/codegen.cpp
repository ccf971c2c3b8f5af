//===- plugins/json/codegen.cpp - Codegen and module factory --------------===//
//
// "Compiling" for the json plugin is parsing and validating: the graph is
// kept as JSON (so that save() can write it back verbatim), the constants
// are copied (codegen only borrows them), and InterpreterModule::init()
// plans every node, so an unsupported node fails here, at compile time,
// with a message naming it. A vendor whose library compiles ahead of time
// would do that work here instead and save its own binary.
//
//===----------------------------------------------------------------------===//
#include "codegen.h"

#include "runtime.h"

#include <utility>
#include <vector>

namespace tessera::json_plugin {

std::unique_ptr<sdk::Module> JsonCodegen::compile(const sdk::GraphView &graph) {
  std::vector<sdk::JsonFunction> functions;
  functions.push_back(sdk::JsonRuntime::functionFromGraph(graph, InterpreterModule::kTypeKey));
  return sdk::JsonRuntime::create<InterpreterModule>(std::move(functions));
}

JsonModuleFactory::JsonModuleFactory() : ModuleFactory(InterpreterModule::kTypeKey) {}

std::unique_ptr<sdk::Module> JsonModuleFactory::load(std::string_view bytes) {
  // Bounds-checked parse of save()'s format, then the same init() as codegen.
  return sdk::JsonRuntime::load<InterpreterModule>(bytes, InterpreterModule::kTypeKey);
}

} // namespace tessera::json_plugin
