//===- tgt_cxx_hook.cpp - A whole-graph hook written with the C++ SDK -----===//
//
// Partition test target "tgt_cxx_hook": the C++ SDK's Checker::partition()
// (tgt.c's tgt_hook does the same through the C ABI). It declares relu,
// sigmoid and exp and takes every op node of relu and sigmoid: a node joins
// the region of its first input when that input is taken, else opens a new
// region. exp is never taken, so a chain relu -> exp -> sigmoid forms two
// regions. Nothing is compiled (codegen throws).
//
//===----------------------------------------------------------------------===//
#include <tessera/sdk/json_graph.hpp>
#include <tessera/sdk/plugin.hpp>

namespace {

using namespace tessera::sdk;

class HookChecker : public Checker {
public:
  std::vector<std::string> ops() const override { return {"relu", "sigmoid", "exp"}; }
  bool check(const OpDesc &, std::string &reason) const override {
    reason = "tgt_cxx_hook: asked op by op (the hook should have been called)";
    return false;
  }
  bool partitionsGraph() const override { return true; }
  std::vector<int64_t> partition(const GraphView &graph) const override {
    const Graph g = readGraph(graph.json);
    std::vector<int64_t> region(g.nodes.size(), -1);
    int64_t next = 0;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node &n = g.nodes[i];
      if (n.kind != Node::Kind::Op || (n.op != "relu" && n.op != "sigmoid"))
        continue;
      const int64_t first = n.inputs.empty() ? -1 : n.inputs[0].node;
      region[i] = first >= 0 && region[size_t(first)] >= 0 ? region[size_t(first)] : next++;
    }
    return region;
  }
};

class NoCodegen : public Codegen {
public:
  std::unique_ptr<Module> compile(const GraphView &) override {
    throw Error("test target: no codegen");
  }
};

class NoFactory : public ModuleFactory {
public:
  NoFactory() : ModuleFactory("tgt_cxx_hook") {}
  std::unique_ptr<Module> load(std::string_view) override {
    throw Error("test target: no modules");
  }
};

class HookPlugin : public Plugin {
public:
  HookPlugin() : Plugin("tgt_cxx_hook", "1.0.0", "test target: whole-graph hook in C++") {}
  Checker &checker() override { return checker_; }
  Codegen &codegen() override { return codegen_; }
  std::vector<ModuleFactory *> factories() override { return {&factory_}; }

private:
  HookChecker checker_;
  NoCodegen codegen_;
  NoFactory factory_;
};

} // namespace

TESSERA_PLUGIN(HookPlugin)
