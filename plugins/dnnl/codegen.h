//===- plugins/dnnl/codegen.h - Codegen and module factory ------*- C++ -*-===//
//
// Codegen turns one partitioned function (the tessera.graph JSON and its
// constants) into a DnnlModule; the module factory ("dnnl") turns saved
// bytes back into one. Both end in DnnlModule::init(), which builds every
// primitive, so a graph the plugin cannot run fails at compile or load time
// with a message naming the node.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tessera/sdk/plugin.hpp"

#include <memory>
#include <string_view>

namespace tessera::dnnl_plugin {

class DnnlCodegen final : public sdk::Codegen {
public:
  std::unique_ptr<sdk::Module> compile(const sdk::GraphView &graph) override;
};

class DnnlModuleFactory final : public sdk::ModuleFactory {
public:
  DnnlModuleFactory();
  std::unique_ptr<sdk::Module> load(std::string_view bytes) override;
};

} // namespace tessera::dnnl_plugin
