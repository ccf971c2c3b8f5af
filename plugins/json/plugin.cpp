//===- plugins/json/plugin.cpp - The json plugin's descriptor -------------===//
//
// The entry point of the json reference plugin. A Tessera plugin is a shared
// object exporting one symbol, tessera_plugin_query; TESSERA_PLUGIN defines
// it over a tessera::sdk::Plugin subclass, which names the plugin and hands
// out its three parts:
//
//   checker   which ops and patterns it takes          checker.cpp
//   codegen   partitioned graph -> runtime module       codegen.cpp
//   factory   saved bytes -> runtime module ("json")    codegen.cpp
//
// The runtime module (runtime.cpp) interprets the graph node by node with
// portable f32 kernels (kernels.cpp); ops.cpp says which ops exist and
// checks their attributes. To start a vendor plugin, copy this folder,
// rename the plugin and the type key, and replace the kernels.
//
//===----------------------------------------------------------------------===//
#include "checker.h"
#include "codegen.h"

#include "tessera/sdk/plugin.hpp"

namespace tessera::json_plugin {

class JsonPlugin final : public sdk::Plugin {
public:
  JsonPlugin()
      : Plugin("json", "1.0.0", "reference plugin: runs f32 subgraphs with portable C++ kernels") {}

  sdk::Checker &checker() override { return checker_; }
  sdk::Codegen &codegen() override { return codegen_; }
  std::vector<sdk::ModuleFactory *> factories() override { return {&factory_}; }

private:
  JsonChecker checker_;
  JsonCodegen codegen_;
  JsonModuleFactory factory_;
};

} // namespace tessera::json_plugin

TESSERA_PLUGIN(tessera::json_plugin::JsonPlugin)
