//===- tests/unit/plugin_loader_test.cpp - The plugin loader on the zoo --===//
//
// Real dlopen of real files: the zoo (tests/plugins/zoo, built into
// TESSERA_ZOO_DIR) has one broken plugin per failure mode, and each test
// pins the loader's message. zoo_good runs end to end (checker, codegen,
// function calls, save, factory load), compared with the reference
// interpreter. Plugins that crash while loading are only ever loaded
// through the probe (in a child process), never in this process.
//
//===----------------------------------------------------------------------===//
#include "plugin/registry.h"
#include "test_util.h"

#include "tessera/sdk/json_graph.hpp"
#include "tessera/sdk/plugin.hpp"

#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <optional>

using namespace tessera;
using namespace tessera::plugin;
using Catch::Matchers::EndsWith;
using Catch::Matchers::StartsWith;

namespace {

std::string zoo(const std::string &file) {
  return std::string(TESSERA_ZOO_DIR) + "/" + file;
}

/// loadPluginFile's message for a zoo file; "" when it loaded.
std::string loadError(const std::string &file) {
  auto plugin = loadPluginFile(zoo(file));
  return plugin.ok() ? std::string() : plugin.error().str();
}

/// The "PATH: REASON" the loader should give for a zoo file.
std::string rejected(const std::string &file, const std::string &reason) {
  return zoo(file) + ": " + reason;
}

std::shared_ptr<LoadedPlugin> loadZoo(const std::string &file) {
  auto plugin = loadPluginFile(zoo(file));
  if (!plugin.ok())
    FAIL(plugin.error().str());
  return *plugin;
}

DiscoveryOptions searchFiles(const std::vector<std::string> &files, bool probe = true) {
  DiscoveryOptions options;
  options.probe = probe;
  std::vector<SearchEntry> path;
  for (size_t i = 0; i < files.size(); ++i)
    path.push_back({zoo(files[i]), "TESSERA_PLUGIN_PATH entry " + std::to_string(i + 1)});
  options.searchPath = path;
  return options;
}

std::vector<std::string> names(const PluginRegistry &registry) {
  std::vector<std::string> out;
  for (const auto &p : registry.plugins())
    out.push_back(p->name());
  return out;
}

std::vector<std::string> rejections(const PluginRegistry &registry) {
  std::vector<std::string> out;
  for (const auto &r : registry.rejected())
    out.push_back(r.path + ": " + r.reason);
  return out;
}

/// One op call as a checker sees it: single input and output of one type.
struct OpDesc {
  tessera_tensor_type_t type{};
  const tessera_tensor_type_t *types[1] = {&type};
  std::vector<int64_t> shape;
  tessera_op_desc_t desc{};

  OpDesc(const char *op, DLDataType dtype, std::vector<int64_t> dims) : shape(std::move(dims)) {
    type = {sizeof type, dtype, int32_t(shape.size()), shape.data()};
    desc.struct_size = sizeof desc;
    desc.op = op;
    desc.name = "node_1";
    desc.inputs = types;
    desc.num_inputs = 1;
    desc.outputs = types;
    desc.num_outputs = 1;
  }
};

constexpr DLDataType kF32{kDLFloat, 32, 1};
constexpr DLDataType kI32{kDLInt, 32, 1};

/// A tessera.graph of `op` applied to one f32 input, and the C view of it.
struct OneOpGraph {
  std::string symbol, json;
  tessera_graph_t graph{};

  OneOpGraph(std::string sym, const std::string &op, std::vector<int64_t> shape)
      : symbol(std::move(sym)) {
    sdk::Graph g;
    g.symbol = symbol;
    sdk::Node input;
    input.kind = sdk::Node::Kind::Input;
    input.name = "x";
    input.outputs = {sdk::TensorType{kF32, shape}};
    sdk::Node call;
    call.kind = sdk::Node::Kind::Op;
    call.op = op;
    call.name = "y";
    call.inputs = {sdk::NodeRef{0, 0}};
    call.outputs = {sdk::TensorType{kF32, shape}};
    g.nodes = {input, call};
    g.inputs = {0};
    g.outputs = {sdk::NodeRef{1, 0}};
    json = sdk::writeGraph(g);
    graph.struct_size = sizeof graph;
    graph.symbol = symbol.c_str();
    graph.json = json.c_str();
    graph.json_size = json.size();
  }
};

/// Calls `fn` on x and returns its output (same type as x).
ir::Tensor callUnary(const PluginFunction &fn, const ir::Tensor &x) {
  ir::Tensor y(x.dtype(), x.shape());
  DLTensor in = x.dl(), out = y.dl();
  const DLTensor *args[] = {&in, &out};
  Status s = fn.call(args);
  if (!s.ok())
    FAIL(s.error().str());
  return y;
}

} // namespace

//===----------------------------------------------------------------------===//
// One test per failure mode of the zoo
//===----------------------------------------------------------------------===//

TEST_CASE("plugin loader: files that are not plugins for this machine", "[plugin]") {
  CHECK(loadError("libzoo_text.so") ==
        rejected("libzoo_text.so", "not a shared object (no ELF header)"));
  CHECK(loadError("libzoo_exe.so") ==
        rejected("libzoo_exe.so", "not a shared object (an ELF executable)"));
  CHECK(loadError("libzoo_exe_nopie.so") ==
        rejected("libzoo_exe_nopie.so", "not a shared object (an ELF executable)"));
  CHECK(
      loadError("libzoo_aarch64.so") ==
      rejected("libzoo_aarch64.so", "ELF for another machine (AArch64, this core runs on x86-64)"));
  CHECK(loadError("libzoo_elf32.so") ==
        rejected("libzoo_elf32.so", "ELF for another machine (32-bit ELF, this core is 64-bit)"));
  CHECK(loadError("no_such_plugin.so") ==
        rejected("no_such_plugin.so", "cannot open the file (No such file or directory)"));
  CHECK(loadError("slow") == rejected("slow", "not a regular file"));

  // Half of zoo_good: the headers promise bytes the file does not have.
  auto size = std::filesystem::file_size(zoo("libzoo_truncated.so"));
  std::string truncated = loadError("libzoo_truncated.so");
  CHECK_THAT(truncated, StartsWith(rejected("libzoo_truncated.so",
                                            "not a shared object (truncated or corrupt: the ELF "
                                            "headers describe ")));
  CHECK_THAT(truncated, EndsWith(" bytes, the file has " + std::to_string(size) + ")"));
}

TEST_CASE("plugin loader: what dlopen could not resolve is named", "[plugin]") {
  CHECK(loadError("libzoo_missing_dep.so") ==
        rejected("libzoo_missing_dep.so", "needs libzoo_dep.so.1, which was not found (install "
                                          "it or add its folder to LD_LIBRARY_PATH)"));
  CHECK(loadError("libzoo_undefined.so") ==
        rejected("libzoo_undefined.so",
                 "undefined symbol 'zoo_nowhere_defined' (a library it was built against is "
                 "missing or older; link plugins with -Wl,--no-undefined to catch this at build "
                 "time)"));
}

TEST_CASE("plugin loader: entry point and descriptor", "[plugin]") {
  CHECK(loadError("libzoo_no_entry.so") ==
        rejected("libzoo_no_entry.so", "no entry symbol 'tessera_plugin_query' (not a Tessera "
                                       "plugin, or built without TESSERA_PLUGIN(...))"));
  CHECK(loadError("libzoo_init_error.so") ==
        rejected("libzoo_init_error.so",
                 "plugin init failed: zoo_init_error: no device found (checked /dev/zoo0)"));
  CHECK(loadError("libzoo_null_desc.so") ==
        rejected("libzoo_null_desc.so",
                 "the query returned no descriptor (a null tessera_plugin_t)"));
  CHECK(loadError("libzoo_abi3.so") ==
        rejected("libzoo_abi3.so", "built against plugin ABI 3.0, this core speaks ABI 1.x"));
  CHECK(loadError("libzoo_small_struct.so") ==
        rejected("libzoo_small_struct.so",
                 "descriptor struct_size 16 is smaller than the ABI 1.0 descriptor (" +
                     std::to_string(offsetof(tessera_plugin_t, num_module_factories) + sizeof(size_t)) +
                     " bytes)"));
  CHECK(
      loadError("libzoo_bad_name.so") ==
      rejected("libzoo_bad_name.so", "invalid plugin name 'Zoo-Bad' (must match [a-z][a-z0-9_]*)"));
  CHECK(loadError("libzoo_null_version.so") ==
        rejected("libzoo_null_version.so", "required entry 'version' is null"));
}

TEST_CASE("plugin loader: required tables and entries", "[plugin]") {
  CHECK(loadError("libzoo_null_checker.so") ==
        rejected("libzoo_null_checker.so", "required entry 'checker' is null"));
  CHECK(loadError("libzoo_null_check_op.so") ==
        rejected("libzoo_null_check_op.so", "required entry 'checker.check_op' is null"));
  CHECK(loadError("libzoo_small_checker.so") ==
        rejected("libzoo_small_checker.so",
                 "table 'checker' has struct_size 8, smaller than its ABI 1.0 layout (" +
                     std::to_string(offsetof(tessera_checker_t, partition) +
                                    sizeof(tessera_checker_t::partition)) +
                     " bytes)"));
  CHECK(loadError("libzoo_null_compile.so") ==
        rejected("libzoo_null_compile.so", "required entry 'codegen.compile' is null"));
  CHECK(loadError("libzoo_null_load.so") ==
        rejected("libzoo_null_load.so", "required entry 'module_factories[0].load' is null"));
  CHECK(loadError("libzoo_no_factory.so") ==
        rejected("libzoo_no_factory.so", "no module factory (at least one is required)"));
}

//===----------------------------------------------------------------------===//
// The probe
//===----------------------------------------------------------------------===//

TEST_CASE("plugin loader: the probe survives plugins that crash while loading", "[plugin]") {
  auto probeError = [](const std::string &file) {
    Status s = probePluginFile(zoo(file));
    return s.ok() ? std::string() : s.error().str();
  };
  CHECK(probeError("libzoo_segv.so") ==
        rejected("libzoo_segv.so", "crashed while loading (SIGSEGV)"));
  CHECK(probeError("libzoo_ctor_abort.so") ==
        rejected("libzoo_ctor_abort.so", "crashed while loading (SIGABRT)"));
  // Files that do not crash: the probe gives the loader's own answer.
  CHECK(probeError("libtessera_zoo_good.so").empty());
  CHECK(probeError("libzoo_abi3.so") == loadError("libzoo_abi3.so"));
  CHECK(probeError("libzoo_missing_dep.so") == loadError("libzoo_missing_dep.so"));
}

TEST_CASE("plugin loader: the probe gives up on a plugin that hangs", "[plugin]") {
  Status s = probePluginFile(zoo("slow/libzoo_hang.so"), std::chrono::milliseconds(300));
  REQUIRE(!s.ok());
  CHECK(s.error().str() ==
        rejected("slow/libzoo_hang.so", "timed out while loading (no answer within 0.3 s)"));
}

TEST_CASE("plugin loader: discovery probes candidates", "[plugin]") {
  auto registry = PluginRegistry::discover(
      searchFiles({"libzoo_segv.so", "libzoo_ctor_abort.so", "libtessera_zoo_good.so"}));
  CHECK(names(registry) == std::vector<std::string>{"zoo_good"});
  CHECK(rejections(registry) ==
        std::vector<std::string>{
            rejected("libzoo_segv.so", "crashed while loading (SIGSEGV)"),
            rejected("libzoo_ctor_abort.so", "crashed while loading (SIGABRT)")});
}

TEST_CASE("plugin loader: discovery without the probe gives the same answers", "[plugin]") {
  // Only files that do not crash: without the probe they load in this process.
  std::vector<std::string> files = {"libzoo_text.so", "libzoo_abi3.so", "libzoo_init_error.so",
                                    "libtessera_zoo_good.so"};
  auto probed = PluginRegistry::discover(searchFiles(files, true));
  auto direct = PluginRegistry::discover(searchFiles(files, false));
  CHECK(names(direct) == std::vector<std::string>{"zoo_good"});
  CHECK(names(direct) == names(probed));
  CHECK(rejections(direct) == rejections(probed));
  CHECK(rejections(direct).size() == 3);
}

//===----------------------------------------------------------------------===//
// Discovery
//===----------------------------------------------------------------------===//

TEST_CASE("plugin loader: search order, duplicate names, missing entries", "[plugin]") {
  auto registry = PluginRegistry::discover(
      searchFiles({"libzoo_dup_b.so", "libzoo_dup_a.so", "nowhere", "libzoo_dup_b.so"}));
  // The first file with a name wins; the same file twice is loaded once.
  REQUIRE(names(registry) == std::vector<std::string>{"zoo_dup"});
  CHECK(registry.plugins()[0]->path() == zoo("libzoo_dup_b.so"));
  CHECK(registry.plugins()[0]->description() == "duplicate b");
  CHECK(rejections(registry) ==
        std::vector<std::string>{
            rejected("libzoo_dup_a.so", "duplicate plugin name 'zoo_dup': already loaded from " +
                                            zoo("libzoo_dup_b.so") +
                                            " (earlier in the search path: TESSERA_PLUGIN_PATH "
                                            "entry 1)"),
            rejected("nowhere", "no such file or folder")});
  CHECK(registry.searchPath().size() == 4);
}

TEST_CASE("plugin loader: a folder is scanned in name order", "[plugin]") {
  DiscoveryOptions options;
  options.searchPath = std::vector<SearchEntry>{{TESSERA_ZOO_DIR, "the zoo"}};
  auto registry = PluginRegistry::discover(options);
  CHECK(names(registry) == std::vector<std::string>{"zoo_clash_a", "zoo_clash_b", "zoo_good",
                                                    "zoo_bad_module", "zoo_dup", "zoo_hook"});
  // Every *.so of the folder (and nothing under slow/) was a candidate.
  size_t files = 0;
  for (const auto &entry : std::filesystem::directory_iterator(TESSERA_ZOO_DIR))
    files += entry.path().extension() == ".so" ? 1 : 0;
  CHECK(registry.plugins().size() + registry.rejected().size() == files);
  auto all = rejections(registry);
  CHECK(std::count(all.begin(), all.end(),
                   rejected("libzoo_dup_b.so",
                            "duplicate plugin name 'zoo_dup': already loaded from " +
                                zoo("libzoo_dup_a.so") +
                                " (same folder, earlier in name order: the zoo)")) == 1);
  CHECK(std::is_sorted(registry.rejected().begin(), registry.rejected().end(),
                       [](const auto &a, const auto &b) { return a.path < b.path; }));

  REQUIRE(registry.find("zoo_good"));
  CHECK(registry.find("zoo_good")->path() == zoo("libtessera_zoo_good.so"));
  CHECK(!registry.find("zoo_abi3"));
  CHECK(registry.findFactory("zoo_good") == registry.find("zoo_good"));
  CHECK(registry.findFactory("zoo") == registry.find("zoo_clash_a")); // first in order
  CHECK(!registry.findFactory("json_nope"));
}

TEST_CASE("plugin loader: TESSERA_PLUGIN_PROBE=0 turns the probe off", "[plugin]") {
  std::optional<std::string> saved;
  if (const char *env = std::getenv("TESSERA_PLUGIN_PROBE"))
    saved = env;
  ::setenv("TESSERA_PLUGIN_PROBE", "0", 1);
  bool off = defaultDiscoveryOptions().probe;
  ::setenv("TESSERA_PLUGIN_PROBE", "1", 1);
  bool on = defaultDiscoveryOptions().probe;
  ::unsetenv("TESSERA_PLUGIN_PROBE");
  bool unset = defaultDiscoveryOptions().probe;
  if (saved)
    ::setenv("TESSERA_PLUGIN_PROBE", saved->c_str(), 1);
  CHECK(!off);
  CHECK(on);
  CHECK(unset);
  CHECK(!defaultDiscoveryOptions().searchPath); // the default search path
}

TEST_CASE("plugin loader: the default search path", "[plugin]") {
  std::optional<std::string> saved;
  if (const char *env = std::getenv("TESSERA_PLUGIN_PATH"))
    saved = env;
  ::setenv("TESSERA_PLUGIN_PATH", "/opt/a::/opt/b/libx.so", 1);
  auto path = defaultSearchPath();
  if (saved)
    ::setenv("TESSERA_PLUGIN_PATH", saved->c_str(), 1);
  else
    ::unsetenv("TESSERA_PLUGIN_PATH");

  REQUIRE(path.size() == 3);
  CHECK(path[0].path == "/opt/a");
  CHECK(path[0].origin == "TESSERA_PLUGIN_PATH entry 1");
  CHECK(path[1].path == "/opt/b/libx.so");
  CHECK(path[1].origin == "TESSERA_PLUGIN_PATH entry 2");
  // The tests run from the build tree: <build>/lib/tessera/plugins.
  CHECK_THAT(path[2].path, EndsWith("/lib/tessera/plugins"));
  CHECK(path[2].origin == "build tree");
  CHECK(std::filesystem::exists(std::filesystem::path(path[2].path) / "../../../CMakeCache.txt"));
}

//===----------------------------------------------------------------------===//
// Calls into plugins
//===----------------------------------------------------------------------===//

TEST_CASE("plugin loader: zoo_good end to end", "[plugin]") {
  auto plugin = loadZoo("libtessera_zoo_good.so");
  CHECK(plugin->name() == "zoo_good");
  CHECK(plugin->version() == "1.0.0");
  CHECK(plugin->description() == "the zoo's working C plugin: relu on f32");
  CHECK(plugin->abiMajor() == TESSERA_PLUGIN_ABI_MAJOR);
  CHECK(plugin->abiMinor() == TESSERA_PLUGIN_ABI_MINOR);
  CHECK(plugin->ops() == std::vector<std::string>{"relu"});
  CHECK(plugin->patterns() ==
        std::vector<std::pair<std::string, std::string>>{{"double_relu", "relu(relu(*))"}});
  CHECK(plugin->typeKeys() == std::vector<std::string>{"zoo_good"});
  CHECK(plugin->codegenFlags() == 0);
  CHECK(!plugin->hasPartitionHook());

  SECTION("checker") {
    OpDesc reluF32("relu", kF32, {2, 3}), reluI32("relu", kI32, {2, 3}), add("add", kF32, {2});
    CheckResult yes = plugin->checkOp(reluF32.desc);
    CHECK(yes.supported);
    CHECK(yes.reason.empty());
    CheckResult no = plugin->checkOp(reluI32.desc);
    CHECK(!no.supported);
    CHECK(no.reason == "zoo_good: only f32, got i32");
    CheckResult unclaimed = plugin->checkOp(add.desc);
    CHECK(!unclaimed.supported);
    CHECK(unclaimed.reason == "plugin 'zoo_good' does not take op 'add'");

    const tessera_op_desc_t *matched[] = {&reluF32.desc, &reluF32.desc};
    CHECK(plugin->checkPattern("double_relu", matched).supported);
    const tessera_op_desc_t *declined[] = {&reluF32.desc, &reluI32.desc};
    CheckResult pattern = plugin->checkPattern("double_relu", declined);
    CHECK(!pattern.supported);
    CHECK(pattern.reason == "zoo_good: only f32, got i32");
  }

  SECTION("compile, call, save, load, call") {
    OneOpGraph g("tessera_main_zoo_good_0", "relu", {2, 3});
    auto module = plugin->compile(g.graph);
    REQUIRE(module.ok());
    CHECK((*module)->typeKey() == "zoo_good");
    CHECK(&(*module)->plugin() == plugin.get());

    ir::Tensor x = test::f32({2, 3}, {-1.5, 0.0, 2.0, -0.25, 3.5, -7.0});
    ir::Tensor expected = test::run1("relu", {x}); // the reference interpreter's kernel
    auto fn = (*module)->function(g.symbol);
    REQUIRE(fn.ok());
    CHECK(fn->name() == g.symbol);
    test::requireClose(callUnary(*fn, x), expected, 0.0, 0.0);

    auto source = (*module)->source();
    REQUIRE(source.ok());
    CHECK(*source == "tessera_main_zoo_good_0(x) = relu(x)\n");
    auto noSource = (*module)->source("c");
    REQUIRE(!noSource.ok());
    CHECK(noSource.error().str() == "module 'zoo_good' of plugin 'zoo_good': source: zoo_good: "
                                    "no source format 'c' (it has: text)");

    auto bytes = (*module)->save();
    REQUIRE(bytes.ok());
    auto loaded = plugin->load("zoo_good", *bytes);
    REQUIRE(loaded.ok());
    module->reset(); // the loaded module stands on its own
    auto fn2 = (*loaded)->function(g.symbol);
    REQUIRE(fn2.ok());
    test::requireClose(callUnary(*fn2, x), expected, 0.0, 0.0);

    // A module keeps its plugin (and the library) loaded.
    std::weak_ptr<LoadedPlugin> weak = plugin;
    plugin.reset();
    CHECK(!weak.expired());
    test::requireClose(callUnary(*fn2, x), expected, 0.0, 0.0);
    loaded->reset();
    CHECK(weak.expired());
  }

  SECTION("errors from the plugin name the plugin, module and function") {
    OneOpGraph g("sym", "relu", {4});
    auto module = plugin->compile(g.graph);
    REQUIRE(module.ok());
    auto missing = (*module)->function("other");
    REQUIRE(!missing.ok());
    CHECK(missing.error().str() == "module 'zoo_good' of plugin 'zoo_good': function 'other': "
                                   "zoo_good: no function 'other' (the module has 'sym')");

    auto fn = (*module)->function("sym");
    REQUIRE(fn.ok());
    ir::Tensor x = test::f32({4}, {1, 2, 3, 4}), y(ir::DType::F32, {3});
    DLTensor in = x.dl(), out = y.dl();
    const DLTensor *args[] = {&in, &out};
    Status s = fn->call(args);
    REQUIRE(!s.ok());
    CHECK(s.error().str() == "function 'sym': zoo_good: input and output shapes differ");

    OneOpGraph add("sym_add", "add", {4});
    auto notCompiled = plugin->compile(add.graph);
    REQUIRE(!notCompiled.ok());
    CHECK(notCompiled.error().str() ==
          "plugin 'zoo_good': compiling 'sym_add' failed: zoo_good: cannot compile op 'add' "
          "(only relu)");

    auto wrongKey = plugin->load("json", "bytes");
    REQUIRE(!wrongKey.ok());
    CHECK(wrongKey.error().str() ==
          "plugin 'zoo_good' has no module factory 'json' (it has: zoo_good)");
    auto garbage = plugin->load("zoo_good", "garbage");
    REQUIRE(!garbage.ok());
    CHECK(garbage.error().str() == "plugin 'zoo_good': module factory 'zoo_good' failed: "
                                   "zoo_good: not a saved zoo_good module");

    auto noHook = plugin->partition(g.graph, 2);
    REQUIRE(!noHook.ok());
    CHECK(noHook.error().str() == "plugin 'zoo_good' has no partition hook");

    PluginFunction unbound;
    Status u = unbound.call({});
    REQUIRE(!u.ok());
    CHECK(u.error().str() == "function '': not bound to a module");
  }
}

TEST_CASE("plugin loader: the whole-graph partition hook", "[plugin]") {
  auto plugin = loadZoo("libzoo_hook.so");
  CHECK(plugin->ops().empty());
  CHECK(plugin->hasPartitionHook());
  CHECK(plugin->codegenFlags() == TESSERA_CODEGEN_CONSTANTS_AS_INPUTS);

  OneOpGraph good("g", "relu", {2}), bad("bad_regions", "relu", {2}), fail("fail", "relu", {2});
  auto regions = plugin->partition(good.graph, 4);
  REQUIRE(regions.ok());
  CHECK(*regions == std::vector<int64_t>{0, -1, 0, -1});
  auto badRegions = plugin->partition(bad.graph, 4);
  REQUIRE(!badRegions.ok());
  CHECK(badRegions.error().str() == "plugin 'zoo_hook': partition gave node 3 the region -5 (a "
                                    "region is >= 0, or -1 for a node not taken)");
  auto failed = plugin->partition(fail.graph, 4);
  REQUIRE(!failed.ok());
  CHECK(failed.error().str() ==
        "plugin 'zoo_hook': partition failed: zoo_hook: cannot partition 'fail'");
  auto compiled = plugin->compile(good.graph);
  REQUIRE(!compiled.ok());
  CHECK(compiled.error().str() ==
        "plugin 'zoo_hook': compiling 'g' failed: zoo: this plugin compiles nothing");
}

TEST_CASE("plugin loader: broken modules from a plugin are errors", "[plugin]") {
  auto plugin = loadZoo("libzoo_bad_module.so");
  OneOpGraph g("g", "relu", {2});
  auto compiled = plugin->compile(g.graph);
  REQUIRE(!compiled.ok());
  CHECK(compiled.error().str() ==
        "plugin 'zoo_bad_module': codegen.compile returned OK but no module");
  auto loaded = plugin->load("zoo", "bytes");
  REQUIRE(!loaded.ok());
  CHECK(loaded.error().str() == "plugin 'zoo_bad_module': module factory 'zoo' returned a module "
                                "whose required entry 'get_function' is null");
}

TEST_CASE("plugin loader: bundled static libraries stay private to each plugin", "[plugin]") {
  // Both bundle a clash_version(): 1 in zoo_clash_a, 2 in zoo_clash_b.
  auto a = loadZoo("libtessera_zoo_clash_a.so");
  auto b = loadZoo("libtessera_zoo_clash_b.so");
  CHECK(a->description() == "bundles clash library version 1");
  CHECK(b->description() == "bundles clash library version 2");
}

namespace {

int sdkPluginsBuilt = 0;

/// A plugin written with the C++ SDK, never loaded as a library: the test
/// calls the SDK's entry point body directly, as the core would.
class CountedPlugin : public sdk::Plugin {
  struct NoChecker : sdk::Checker {
    std::vector<std::string> ops() const override { return {}; }
    bool check(const sdk::OpDesc &, std::string &) const override { return false; }
  };
  struct NoCodegen : sdk::Codegen {
    std::unique_ptr<sdk::Module> compile(const sdk::GraphView &) override { return nullptr; }
  };
  struct NoFactory : sdk::ModuleFactory {
    NoFactory() : ModuleFactory("counted") {}
    std::unique_ptr<sdk::Module> load(std::string_view) override { return nullptr; }
  };
  NoChecker checker_;
  NoCodegen codegen_;
  NoFactory factory_;

public:
  CountedPlugin() : Plugin("counted", "1.0.0", "test") { ++sdkPluginsBuilt; }
  sdk::Checker &checker() override { return checker_; }
  sdk::Codegen &codegen() override { return codegen_; }
  std::vector<sdk::ModuleFactory *> factories() override { return {&factory_}; }
};

} // namespace

TEST_CASE("an SDK plugin answers a core of another ABI major with its descriptor's head only",
          "[plugin][sdk]") {
  // The core of another major reads struct_size, abi_major and abi_minor
  // (their place never changes) and refuses the plugin with its own message,
  // "built against plugin ABI 1.x, this core speaks ABI 2.x" (pinned for a C
  // plugin by the zoo's libzoo_abi3.so above): the SDK must not refuse with a
  // message of its own, nor build the plugin for a core it cannot serve.
  tessera_host_t host{};
  host.struct_size = sizeof(host);
  host.abi_major = TESSERA_PLUGIN_ABI_MAJOR + 1;
  const tessera_plugin_t *desc = nullptr;
  tessera_plugin_status_t *status = sdk::queryPlugin<CountedPlugin>(&host, &desc);
  CHECK(status == nullptr);
  REQUIRE(desc != nullptr);
  CHECK(desc->struct_size == sizeof(tessera_plugin_t));
  CHECK(desc->abi_major == TESSERA_PLUGIN_ABI_MAJOR);
  CHECK(desc->abi_minor == TESSERA_PLUGIN_ABI_MINOR);
  CHECK(desc->name == nullptr);
  CHECK(sdkPluginsBuilt == 0);

  host.abi_major = TESSERA_PLUGIN_ABI_MAJOR; // this core: the whole descriptor
  REQUIRE(sdk::queryPlugin<CountedPlugin>(&host, &desc) == nullptr);
  CHECK(std::string(desc->name) == "counted");
  CHECK(sdkPluginsBuilt == 1);
}

TEST_CASE("plugin loader: a cost hint is read only from a checker sized to hold it",
          "[plugin][placement]") {
  OneOpGraph g("tessera_main_zoo_0", "relu", {2, 3});
  auto hinted = loadZoo("estimate/libtessera_zoo_estimate.so");
  REQUIRE(hinted->hasRegionEstimate());
  RegionEstimate e = hinted->estimateRegion(g.graph);
  CHECK(e.speedup == 8.0);
  CHECK(e.reason == "zoo_good: relu is its specialty");
  auto guarded = hinted->guardedEstimateRegion(g.graph); // through the child
  REQUIRE(guarded.ok());
  CHECK(guarded->speedup == 8.0);
  CHECK(guarded->reason == e.reason);
  // Built against 1.4: the same function after the end of its checker is
  // not read.
  auto old = loadZoo("estimate_v14/libtessera_zoo_estimate_v14.so");
  CHECK(!old->hasRegionEstimate());
  CHECK(old->estimateRegion(g.graph).speedup == 0);
  auto none = old->guardedEstimateRegion(g.graph);
  REQUIRE(none.ok());
  CHECK(none->speedup == 0);
  CHECK(!loadZoo("libtessera_zoo_good.so")->hasRegionEstimate());
}
