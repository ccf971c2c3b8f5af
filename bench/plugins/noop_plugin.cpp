//===- bench/plugins/noop_plugin.cpp - A plugin whose function does nothing -===//
//
// For bench_runtime's dispatch benchmark: the module factory (type key
// "bench_noop") loads any bytes into a module with one function "noop" that
// returns at once, so timing a plan of "noop" steps measures the runtime's
// cost of calling an external function (session -> C ABI -> SDK trampoline)
// and nothing else. The checker claims no op; codegen makes the same module.
// Built into a bench-only folder (not the shipped plugin folder), which the
// benchmark puts on TESSERA_PLUGIN_PATH.
//
//===----------------------------------------------------------------------===//
#include <tessera/sdk/plugin.hpp>

namespace {

using namespace tessera::sdk;

constexpr const char *kTypeKey = "bench_noop";

class NoopFunction : public Function {
public:
  void run(std::span<const DLTensor *const> /*args*/) override {}
};

class NoopModule : public Module {
public:
  NoopModule() : Module(kTypeKey) {}
  Function *function(std::string_view symbol) override {
    return symbol == "noop" ? &noop_ : nullptr;
  }
  void save(const Writer & /*out*/) const override {} // nothing to keep

private:
  NoopFunction noop_;
};

class NoopChecker : public Checker {
public:
  std::vector<std::string> ops() const override { return {}; }
  bool check(const OpDesc & /*op*/, std::string &reason) const override {
    reason = "bench_noop takes no op";
    return false;
  }
};

class NoopCodegen : public Codegen {
public:
  std::unique_ptr<Module> compile(const GraphView & /*graph*/) override {
    return std::make_unique<NoopModule>();
  }
};

class NoopFactory : public ModuleFactory {
public:
  NoopFactory() : ModuleFactory(kTypeKey) {}
  std::unique_ptr<Module> load(std::string_view /*bytes*/) override {
    return std::make_unique<NoopModule>();
  }
};

class NoopPlugin : public Plugin {
public:
  NoopPlugin() : Plugin("bench_noop", "1.0", "benchmark plugin: one empty function 'noop'") {}
  Checker &checker() override { return checker_; }
  Codegen &codegen() override { return codegen_; }
  std::vector<ModuleFactory *> factories() override { return {&factory_}; }

private:
  NoopChecker checker_;
  NoopCodegen codegen_;
  NoopFactory factory_;
};

} // namespace

TESSERA_PLUGIN(NoopPlugin)
