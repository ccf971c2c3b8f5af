//===- plugins/json/codegen.h - Codegen and module factory ------*- C++ -*-===//
//
// Codegen turns one partitioned function (the tessera.graph JSON and its
// constants) into a runtime module; the module factory turns the bytes a
// module saved back into a module (when an artifact is loaded). For the
// json plugin both end in an InterpreterModule (runtime.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tessera/sdk/plugin.hpp"

#include <memory>
#include <string_view>

namespace tessera::json_plugin {

class JsonCodegen final : public sdk::Codegen {
public:
  std::unique_ptr<sdk::Module> compile(const sdk::GraphView &graph) override;
};

class JsonModuleFactory final : public sdk::ModuleFactory {
public:
  JsonModuleFactory();
  std::unique_ptr<sdk::Module> load(std::string_view bytes) override;
};

} // namespace tessera::json_plugin
