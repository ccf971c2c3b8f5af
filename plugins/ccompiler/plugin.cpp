//===- plugins/ccompiler/plugin.cpp - The ccompiler plugin's descriptor ---===//
//
// A plugin whose codegen writes C: each partitioned region becomes one C99
// translation unit (translate.cpp, ops*.cpp), compiled at codegen time by
// the system C compiler (cc.cpp) into a shared object that the module
// carries (module.cpp). No runtime library of a vendor and no compiler are
// needed to run a saved artifact.
//
//   checker   which ops and patterns it takes: emitOp() decides, so what is
//             accepted is what the code generator can write
//   codegen   graph -> C -> .so -> CModule
//   factory   "ccompiler": saved bytes -> CModule (memfd + dlopen)
//
//===----------------------------------------------------------------------===//
#include "cc.h"
#include "module.h"
#include "ops.h"
#include "translate.h"

#include "tessera/sdk/plugin.hpp"

namespace tessera::ccompiler {

namespace {

class CChecker final : public sdk::Checker {
public:
  std::vector<std::string> ops() const override { return supportedOps(); }

  // A product with its bias and activation, outlined as "ccompiler.<name>",
  // becomes one C function with the epilogue inside the product's output
  // loop (translate.cpp fuses the chain). The longest form comes first.
  std::vector<std::pair<std::string, std::string>> patterns() const override {
    const std::string act = "relu|leaky_relu|clip|sigmoid|tanh|hard_swish|hard_sigmoid|silu|gelu";
    return {
        {"conv2d_bias_act", act + "?(bias_add|add(conv2d(*, const), const))"},
        {"conv2d_act", act + "(conv2d(*, const))"},
        {"dense_bias_act", act + "?(bias_add|add(dense(*, const), const))"},
    };
  }

  bool check(const sdk::OpDesc &op, std::string &reason) const override {
    try {
      emitOp(op); // validates and writes the C; the text is dropped
      return true;
    } catch (const sdk::Error &e) {
      reason = std::string("ccompiler: ") + e.what();
      return false;
    }
  }

  // Every op of a match must be one the plugin takes on its own (the match
  // is inlined and fused by translate.cpp, each op still validated).
  bool checkPattern(std::string_view, const std::vector<sdk::OpDesc> &ops,
                    std::string &reason) const override {
    for (const sdk::OpDesc &op : ops)
      if (!check(op, reason))
        return false;
    return true;
  }
};

class CCodegen final : public sdk::Codegen {
public:
  std::unique_ptr<sdk::Module> compile(const sdk::GraphView &graph) override {
    Translation t = translate(graph);
    CompiledC c = compileC(t.source, t.symbol, graph.targetCpu);
    return CModule::create(t, std::move(c.so), std::move(c.cpu));
  }
};

class CFactory final : public sdk::ModuleFactory {
public:
  CFactory() : ModuleFactory(CModule::kTypeKey) {}
  std::unique_ptr<sdk::Module> load(std::string_view bytes) override {
    return CModule::load(bytes);
  }
};

class CPlugin final : public sdk::Plugin {
public:
  CPlugin()
      : Plugin("ccompiler", "1.0.0",
               "C source codegen: f32 regions as C99, compiled by the system C compiler") {}
  sdk::Checker &checker() override { return checker_; }
  sdk::Codegen &codegen() override { return codegen_; }
  std::vector<sdk::ModuleFactory *> factories() override { return {&factory_}; }

private:
  CChecker checker_;
  CCodegen codegen_;
  CFactory factory_;
};

} // namespace

} // namespace tessera::ccompiler

TESSERA_PLUGIN(tessera::ccompiler::CPlugin)
