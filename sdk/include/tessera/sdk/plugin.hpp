//===- tessera/sdk/plugin.hpp - C++ helpers for writing a plugin -*- C++ -*-===//
//
// Header-only C++ over the C ABI of tessera/c/plugin.h, so that a vendor
// writes ordinary C++:
//
//   class MyChecker : public tessera::sdk::Checker { ... };
//   class MyModule : public tessera::sdk::Module { ... };
//   class MyCodegen : public tessera::sdk::Codegen { ... };
//   class MyFactory : public tessera::sdk::ModuleFactory { ... };
//
//   class MyPlugin : public tessera::sdk::Plugin {
//   public:
//     MyPlugin() : Plugin("my_vendor", "1.0.0", "what it does") {}
//     ...checker(), codegen(), factories()...
//   };
//   TESSERA_PLUGIN(MyPlugin)   // defines the entry symbol, nothing else
//
// Every call from the core goes through a trampoline here that catches C++
// exceptions and turns them into status objects: no exception ever crosses
// the boundary. Throw tessera::sdk::Error (or any std::exception) to report
// a failure. The values a vendor reads and writes (TensorType, Attrs,
// OpDesc, GraphView, Writer) are values.hpp's, Error is status.hpp's; this
// header includes both.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tessera/c/plugin.h"
#include "tessera/sdk/profile.hpp"
#include "tessera/sdk/status.hpp"
#include "tessera/sdk/values.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace tessera::sdk {

//===----------------------------------------------------------------------===//
// The base classes a vendor derives from
//===----------------------------------------------------------------------===//

/// A callable function of a module (inputs then outputs, see the ABI).
class Function {
public:
  virtual ~Function() = default;
  virtual void run(std::span<const DLTensor *const> args) = 0;
  /// ABI 1.4: a function of a graph with symbols, called with their values
  /// (in the graph's "symbols" order). The default refuses values (a static
  /// function) and runs run(args).
  virtual void run(std::span<const DLTensor *const> args, std::span<const int64_t> symbols) {
    if (!symbols.empty())
      throw Error("this function was compiled without symbolic dims, but was called with " +
                      std::to_string(symbols.size()) + " symbol values",
                  TESSERA_STATUS_INVALID_ARGUMENT);
    run(args);
  }
};

/// A runtime module. Owns its functions.
class Module {
public:
  explicit Module(std::string typeKey) : typeKey_(std::move(typeKey)) {}
  virtual ~Module() = default;
  /// The function for `symbol`, or null when the module has none. The
  /// pointer stays valid as long as the module.
  virtual Function *function(std::string_view symbol) = 0;
  /// Writes what the module factory's load() reads back.
  virtual void save(const Writer &out) const = 0;
  /// Human-readable source; empty when the module has none.
  virtual std::string source(std::string_view /*format*/) const { return {}; }
  /// The CPU the module's native code was compiled for (GraphView::
  /// targetCpu's terms); empty when it has none tied to a CPU.
  virtual std::string targetCpu() const { return {}; }
  const std::string &typeKey() const { return typeKey_; }

private:
  std::string typeKey_;
};

class Checker {
public:
  virtual ~Checker() = default;
  /// The core ops the plugin may take (offered to check()).
  virtual std::vector<std::string> ops() const = 0;
  /// (name, pattern text) in priority order.
  virtual std::vector<std::pair<std::string, std::string>> patterns() const { return {}; }
  /// Takes the op? Throw, or return false and set `reason`, to decline.
  /// Accepting, `reason` may say what will run it ("jit:avx2"; ABI 1.6):
  /// the partition report shows it with the op.
  virtual bool check(const OpDesc &op, std::string &reason) const = 0;
  /// Takes this match of a pattern (ops in post-order, root last)?
  virtual bool checkPattern(std::string_view /*pattern*/, const std::vector<OpDesc> & /*ops*/,
                            std::string & /*reason*/) const {
    return true;
  }
  /// Keep this formed region (the tessera.graph JSON and its constants)?
  /// Return false and set `reason` to send it back to the host. Only called
  /// when keepsRegions() is true; otherwise the core's default rule applies.
  virtual bool keepsRegions() const { return false; }
  virtual bool keepRegion(const GraphView & /*region*/, std::string & /*reason*/) const {
    return true;
  }
  /// A cost hint for placement by measurement (ABI 1.5,
  /// tessera_checker_t::estimate_region): how many times faster than the
  /// host's code the plugin expects to run `region` (0.25: four times
  /// slower), with a reason; 0 for no estimate. Only called when
  /// estimatesRegions() is true. An estimate at least
  /// TESSERA_ESTIMATE_CLEAR away from 1 decides without measuring; a
  /// measurement always wins. Throwing counts as no estimate.
  virtual bool estimatesRegions() const { return false; }
  virtual double estimateRegion(const GraphView & /*region*/, std::string & /*reason*/) const {
    return 0;
  }
  /// The whole-graph hook (tessera_checker_t::partition): instead of being
  /// offered ops one by one, the plugin partitions the function itself.
  /// Only called when partitionsGraph() is true. Return one entry per node
  /// of `graph`'s JSON (readGraph(graph.json).nodes, in order): a region
  /// number >= 0 for each op node taken, -1 elsewhere. The core checks the
  /// result (only op and composite nodes, no cycle between regions) and
  /// refuses an invalid one, naming the plugin; throwing is an error too.
  virtual bool partitionsGraph() const { return false; }
  virtual std::vector<int64_t> partition(const GraphView & /*graph*/) const { return {}; }
  /// ABI 1.4 (TESSERA_CHECKER_SYMBOLIC_DIMS): offer ops and regions whose
  /// types hold symbolic dims. The module must then run such functions at
  /// every value of their symbols (JsonRuntime does the bookkeeping).
  virtual bool takesSymbolicDims() const { return false; }
};

class Codegen {
public:
  virtual ~Codegen() = default;
  /// TESSERA_CODEGEN_* flags.
  virtual uint64_t flags() const { return 0; }
  virtual std::unique_ptr<Module> compile(const GraphView &graph) = 0;
};

class ModuleFactory {
public:
  explicit ModuleFactory(std::string typeKey) : typeKey_(std::move(typeKey)) {}
  virtual ~ModuleFactory() = default;
  virtual std::unique_ptr<Module> load(std::string_view bytes) = 0;
  const std::string &typeKey() const { return typeKey_; }

private:
  std::string typeKey_;
};

/// The plugin: owns its checker, codegen and factories. Constructed once,
/// on the first query (a constructor that throws is an init error).
class Plugin {
public:
  Plugin(std::string name, std::string version, std::string description)
      : name_(std::move(name)), version_(std::move(version)),
        description_(std::move(description)) {}
  virtual ~Plugin() = default;
  Plugin(const Plugin &) = delete;
  Plugin &operator=(const Plugin &) = delete;

  virtual Checker &checker() = 0;
  virtual Codegen &codegen() = 0;
  virtual std::vector<ModuleFactory *> factories() = 0;
  /// The versions of this plugin whose saved modules its factories load
  /// (tessera_plugin_t::compatible_versions: ">=1.2 <3", "^1.4", "*").
  /// Empty: modules of this plugin's own major version.
  virtual std::string compatibleVersions() const { return {}; }

  /// The host (core) that loaded the plugin; valid after the query.
  const tessera_host_t *host() const { return host_; }
  /// Writes to the core's log.
  void log(tessera_log_level_t level, const std::string &msg) const {
    if (host_ && host_->log)
      host_->log(host_->log_state, level, msg.c_str());
  }

  /// Fills the C descriptor (called by the entry point; not for vendors).
  const tessera_plugin_t *describe(const tessera_host_t *host);
  /// The C tables behind the descriptor (the SDK's own business).
  struct Tables;

private:
  std::string name_, version_, description_;
  const tessera_host_t *host_ = nullptr;
  std::unique_ptr<Tables> tables_;
};

//===----------------------------------------------------------------------===//
// Trampolines: the C tables over the C++ objects
//===----------------------------------------------------------------------===//

namespace detail {

struct ModuleBox {
  tessera_module_t c{};
  std::unique_ptr<Module> module;
  std::string targetCpu; // get_target_cpu's answer, kept alive
};

inline tessera_plugin_status_t *callFunction(void *self, const DLTensor *const *args,
                                             size_t num) {
  return guard([&] { static_cast<Function *>(self)->run(std::span(args, num)); });
}

inline tessera_plugin_status_t *callFunctionSymbolic(void *self, const DLTensor *const *args,
                                                     size_t num, const int64_t *symbols,
                                                     size_t numSymbols) {
  return guard([&] {
    static_cast<Function *>(self)->run(std::span(args, num),
                                       std::span(symbols, symbols ? numSymbols : 0));
  });
}

/// ABI 1.6: the call with its context (a profiled run's profiler is current
/// on this thread while the function runs: tessera/sdk/profile.hpp).
inline tessera_plugin_status_t *callFunctionWithContext(void *self, const DLTensor *const *args,
                                                        size_t num, const int64_t *symbols,
                                                        size_t numSymbols,
                                                        const tessera_call_context_t *context) {
  ProfilerBinding bind(profilerOf(context));
  return callFunctionSymbolic(self, args, num, symbols, numSymbols);
}

inline tessera_plugin_status_t *getFunction(void *self, const char *name,
                                            tessera_function_t *out) {
  return guard([&] {
    if (!name || !out)
      throw Error("get_function: null argument");
    Function *f = static_cast<ModuleBox *>(self)->module->function(name);
    if (!f)
      throw Error("module has no function '" + std::string(name) + "'",
                  TESSERA_STATUS_NOT_FOUND);
    tessera_function_t fn{};
    fn.struct_size = sizeof(tessera_function_t);
    fn.self = f;
    fn.call = &callFunction;
    fn.call_symbolic = &callFunctionSymbolic;
    fn.call_with_context = &callFunctionWithContext;
    std::memcpy(out, &fn, std::min(out->struct_size, sizeof fn));
    out->struct_size = std::min(out->struct_size, sizeof fn);
  });
}

inline tessera_plugin_status_t *saveModule(void *self, tessera_write_fn write, void *sink) {
  return guard([&] { static_cast<ModuleBox *>(self)->module->save(Writer(write, sink)); });
}

inline tessera_plugin_status_t *moduleSource(void *self, const char *format,
                                             tessera_write_fn write, void *sink) {
  return guard([&] {
    Writer(write, sink)(static_cast<ModuleBox *>(self)->module->source(format ? format : ""));
  });
}

inline const char *moduleTargetCpu(void *self) {
  auto *box = static_cast<ModuleBox *>(self);
  try {
    box->targetCpu = box->module->targetCpu();
  } catch (...) {
    box->targetCpu.clear();
  }
  return box->targetCpu.c_str();
}

inline void destroyModule(void *self) { delete static_cast<ModuleBox *>(self); }

/// Hands a module to the core as a C module (owned by the core).
inline tessera_module_t *boxModule(std::unique_ptr<Module> m) {
  if (!m)
    throw Error("the plugin produced no module", TESSERA_STATUS_INTERNAL);
  auto box = std::make_unique<ModuleBox>();
  box->module = std::move(m);
  box->c.struct_size = sizeof(tessera_module_t);
  box->c.self = box.get();
  box->c.type_key = box->module->typeKey().c_str();
  box->c.get_function = &getFunction;
  box->c.save = &saveModule;
  box->c.get_source = &moduleSource;
  box->c.destroy = &destroyModule;
  box->c.get_target_cpu = &moduleTargetCpu;
  return &box.release()->c;
}

} // namespace detail

struct Plugin::Tables {
  Plugin *plugin = nullptr;
  tessera_plugin_t descriptor{};
  tessera_checker_t checker{};
  tessera_codegen_t codegen{};
  std::vector<std::string> opNames;
  std::vector<const char *> opPtrs;
  std::vector<std::pair<std::string, std::string>> patternText;
  std::vector<tessera_pattern_t> patterns;
  std::vector<const tessera_pattern_t *> patternPtrs;
  std::vector<tessera_module_factory_t> factories;
  std::vector<const tessera_module_factory_t *> factoryPtrs;
  std::vector<ModuleFactory *> factoryObjects;
  std::string compatibleVersions;
};

namespace detail {

inline Plugin::Tables &tablesOf(void *state) { return *static_cast<Plugin::Tables *>(state); }

/// Runs a checker decision `f(why)`; an exception declines with
/// "checker error: ..." as the reason. Writes the reason when declined,
/// and (`note`: check_op, check_pattern; ABI 1.6) what `f` wrote when it
/// accepts.
template <typename F> bool decide(F &&f, char *reason, size_t size, bool note = false) {
  std::string why;
  bool ok = false;
  if (tessera_plugin_status_t *s = guard([&] { ok = f(why); })) {
    why = std::string("checker error: ") + s->message;
    releaseStatus(s);
    ok = false;
  }
  if (!ok || (note && !why.empty()))
    writeReason(reason, size, why);
  return ok;
}

inline bool checkOp(void *state, const tessera_op_desc_t *op, char *reason, size_t size) {
  return decide(
      [&](std::string &why) {
        return tablesOf(state).plugin->checker().check(toOpDesc(*op), why);
      },
      reason, size, true);
}

inline bool checkPattern(void *state, const char *pattern, const tessera_op_desc_t *const *ops,
                         size_t num, char *reason, size_t size) {
  return decide(
      [&](std::string &why) {
        std::vector<OpDesc> descs;
        for (size_t i = 0; i < num; ++i)
          descs.push_back(toOpDesc(*ops[i]));
        return tablesOf(state).plugin->checker().checkPattern(pattern ? pattern : "", descs, why);
      },
      reason, size, true);
}

inline bool keepRegion(void *state, const tessera_graph_t *region, char *reason, size_t size) {
  return decide(
      [&](std::string &why) {
        return tablesOf(state).plugin->checker().keepRegion(toGraphView(*region), why);
      },
      reason, size);
}

inline double estimateRegion(void *state, const tessera_graph_t *region, char *reason,
                             size_t size) {
  double estimate = 0;
  std::string why;
  if (tessera_plugin_status_t *s = guard([&] {
        estimate = tablesOf(state).plugin->checker().estimateRegion(toGraphView(*region), why);
      })) {
    releaseStatus(s);
    return 0;
  }
  writeReason(reason, size, why);
  return estimate;
}

inline tessera_plugin_status_t *partition(void *state, const tessera_graph_t *graph,
                                          int64_t *out_region, size_t num_nodes) {
  return guard([&] {
    if (!graph || (!out_region && num_nodes))
      throw Error("partition: null argument");
    std::vector<int64_t> regions =
        tablesOf(state).plugin->checker().partition(toGraphView(*graph));
    if (regions.size() != num_nodes)
      throw Error("partition returned " + std::to_string(regions.size()) +
                  " region numbers for a graph of " + std::to_string(num_nodes) + " nodes");
    std::copy(regions.begin(), regions.end(), out_region);
  });
}

inline tessera_plugin_status_t *compile(void *state, const tessera_graph_t *graph,
                                        tessera_module_t **out) {
  return guard([&] {
    if (!graph || !out)
      throw Error("compile: null argument");
    *out = boxModule(tablesOf(state).plugin->codegen().compile(toGraphView(*graph)));
  });
}

template <size_t I>
tessera_plugin_status_t *loadModule(void *state, const void *data, size_t size,
                                    tessera_module_t **out) {
  return guard([&] {
    auto &t = tablesOf(state);
    if (I >= t.factoryObjects.size() || !out)
      throw Error("load: bad factory or null argument", TESSERA_STATUS_INTERNAL);
    std::string_view bytes(static_cast<const char *>(data), data ? size : 0);
    *out = boxModule(t.factoryObjects[I]->load(bytes));
  });
}

using LoadFn = tessera_plugin_status_t *(*)(void *, const void *, size_t, tessera_module_t **);
template <size_t... I> constexpr auto loadTable(std::index_sequence<I...>) {
  return std::array<LoadFn, sizeof...(I)>{&loadModule<I>...};
}
/// A plugin may have up to this many module factories.
inline constexpr size_t kMaxFactories = 8;

} // namespace detail

inline const tessera_plugin_t *Plugin::describe(const tessera_host_t *host) {
  // Built once: the descriptor stays valid until the library is unloaded
  // (plugin.h), and two hosts in one process that load the same file share
  // it (dlopen returns the loaded library), so a second query must not
  // replace what the first one handed out.
  if (tables_)
    return &tables_->descriptor;
  host_ = host;
  auto t = std::make_unique<Tables>();
  t->plugin = this;
  for (auto &op : checker().ops())
    t->opNames.push_back(std::move(op));
  for (const auto &op : t->opNames)
    t->opPtrs.push_back(op.c_str());
  t->opPtrs.push_back(nullptr);
  t->patternText = checker().patterns();
  for (const auto &[name, text] : t->patternText)
    t->patterns.push_back({sizeof(tessera_pattern_t), name.c_str(), text.c_str()});
  for (const auto &p : t->patterns)
    t->patternPtrs.push_back(&p);

  t->checker.struct_size = sizeof(tessera_checker_t);
  t->checker.ops = t->opPtrs.data();
  t->checker.patterns = t->patternPtrs.data();
  t->checker.num_patterns = t->patternPtrs.size();
  t->checker.check_op = &detail::checkOp;
  t->checker.flags = checker().takesSymbolicDims() ? TESSERA_CHECKER_SYMBOLIC_DIMS : 0;
  t->checker.check_pattern = &detail::checkPattern;
  t->checker.keep_region = checker().keepsRegions() ? &detail::keepRegion : nullptr;
  t->checker.estimate_region = checker().estimatesRegions() ? &detail::estimateRegion : nullptr;
  t->checker.partition = checker().partitionsGraph() ? &detail::partition : nullptr;

  t->codegen.struct_size = sizeof(tessera_codegen_t);
  t->codegen.flags = codegen().flags();
  t->codegen.compile = &detail::compile;

  t->factoryObjects = factories();
  if (t->factoryObjects.size() > detail::kMaxFactories)
    throw Error("a plugin built with the C++ SDK has at most 8 module factories");
  static constexpr auto loads = detail::loadTable(std::make_index_sequence<detail::kMaxFactories>());
  t->factories.resize(t->factoryObjects.size());
  for (size_t i = 0; i < t->factoryObjects.size(); ++i) {
    t->factories[i].struct_size = sizeof(tessera_module_factory_t);
    t->factories[i].type_key = t->factoryObjects[i]->typeKey().c_str();
    t->factories[i].load = loads[i];
  }
  for (const auto &f : t->factories)
    t->factoryPtrs.push_back(&f);

  tessera_plugin_t &d = t->descriptor;
  d.struct_size = sizeof(tessera_plugin_t);
  d.abi_major = TESSERA_PLUGIN_ABI_MAJOR;
  d.abi_minor = TESSERA_PLUGIN_ABI_MINOR;
  d.name = name_.c_str();
  d.version = version_.c_str();
  d.description = description_.c_str();
  d.state = t.get();
  d.checker = &t->checker;
  d.codegen = &t->codegen;
  d.module_factories = t->factoryPtrs.data();
  d.num_module_factories = t->factoryPtrs.size();
  t->compatibleVersions = compatibleVersions();
  d.compatible_versions = t->compatibleVersions.empty() ? nullptr : t->compatibleVersions.c_str();
  tables_ = std::move(t);
  return &tables_->descriptor;
}

/// The body of the entry point: one plugin object per load.
template <typename P>
tessera_plugin_status_t *queryPlugin(const tessera_host_t *host, const tessera_plugin_t **out) {
  return guard([&] {
    if (!host || !out)
      throw Error("tessera_plugin_query: null argument");
    if (host->abi_major != TESSERA_PLUGIN_ABI_MAJOR) {
      // A core of another major reads only the descriptor's first three
      // fields (their place never changes) and refuses the plugin with its
      // own message ("built against plugin ABI 1.3, this core speaks ABI
      // 2.x"); the plugin object is not built for a core it cannot serve.
      static const tessera_plugin_t head = [] {
        tessera_plugin_t d{};
        d.struct_size = sizeof(tessera_plugin_t);
        d.abi_major = TESSERA_PLUGIN_ABI_MAJOR;
        d.abi_minor = TESSERA_PLUGIN_ABI_MINOR;
        return d;
      }();
      *out = &head;
      return;
    }
    static std::unique_ptr<P> plugin; // lives until the library is unloaded
    if (!plugin)
      plugin = std::make_unique<P>();
    *out = plugin->describe(host);
  });
}

} // namespace tessera::sdk

/// Defines the plugin's entry symbol for plugin class P (default
/// constructible, derived from tessera::sdk::Plugin). Use once per plugin.
#define TESSERA_PLUGIN(P)                                                                         \
  extern "C" __attribute__((visibility("default"))) tessera_plugin_status_t *                    \
  tessera_plugin_query(const tessera_host_t *host, const tessera_plugin_t **out_plugin) {        \
    return ::tessera::sdk::queryPlugin<P>(host, out_plugin);                                      \
  }
