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
// checks their attributes.
//
// This is the reference to read, not the template to copy: a vendor starts
// from examples/vendor_plugin (a complete out-of-tree project with its own
// tests). Read this plugin for what a bigger plugin needs: fused kernels
// for composite patterns (checker.cpp's patterns, runtime.cpp's tryFuse),
// weight handling (constants copied at codegen and saved with the module,
// codegen.cpp; bound once in init() and pre-packed, runtime.cpp and dense
// in ops.cpp), and one op table the checker and the runtime share (ops.cpp).
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
