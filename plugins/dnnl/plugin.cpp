//===- plugins/dnnl/plugin.cpp - The dnnl plugin's descriptor -------------===//
//
// The dnnl plugin runs f32 subgraphs with oneDNN (Debian's libdnnl 2.6),
// built exactly as an outside vendor builds a plugin: tessera_add_plugin()
// on the SDK's JsonRuntime. It takes convolutions (grouped, dilated,
// transposed), dense/matmul, normalisations, pooling, eltwise, broadcasting
// binaries, softmax, concat, views and half_pixel resize2d; products are
// fused with their bias, activations and residual add, activations stay in
// oneDNN's blocked layouts inside a region.
//
//   ops.cpp       which core ops, with which attributes, map to which
//                 oneDNN primitives (shared by checker and runtime)
//   checker.cpp   ops, patterns, decline reasons
//   plan.cpp      a function as primitives over buffers (values, layouts,
//   lower*.cpp    reorders, fusion, outputs, arena), built once at init
//   max_pool.cpp  the one kernel of the plugin's own (oneDNN's is slow)
//   runtime.cpp   the module: per-call contexts, zero-copy binding, execute
//   codegen.cpp   codegen and the "dnnl" module factory
//
//===----------------------------------------------------------------------===//
#include "checker.h"
#include "codegen.h"

#include "tessera/sdk/plugin.hpp"

namespace tessera::dnnl_plugin {

class DnnlPlugin final : public sdk::Plugin {
public:
  DnnlPlugin()
      : Plugin("dnnl", "1.0.0",
               "oneDNN: f32 CNN and MLP subgraphs as fused primitives in blocked layouts") {}

  sdk::Checker &checker() override { return checker_; }
  sdk::Codegen &codegen() override { return codegen_; }
  std::vector<sdk::ModuleFactory *> factories() override { return {&factory_}; }

private:
  DnnlChecker checker_;
  DnnlCodegen codegen_;
  DnnlModuleFactory factory_;
};

} // namespace tessera::dnnl_plugin

TESSERA_PLUGIN(tessera::dnnl_plugin::DnnlPlugin)
