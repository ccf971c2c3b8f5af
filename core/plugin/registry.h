//===- plugin/registry.h - Plugin discovery, loading and calls -*- C++ -*-===//
//
// The core's side of the plugin ABI (sdk/include/tessera/c/plugin.h). Part
// of libtessera_runtime (an artifact's modules are loaded through their
// plugins' module factories), so it knows nothing of the IR: checkers are
// called with the C op descriptions, codegen with C graphs; the compiler
// builds those from the IR (bridge/plugin_bridge.h).
//
// Discovery order: every entry of TESSERA_PLUGIN_PATH (colon-separated;
// folders are scanned for *.so, files are taken as they are), then the
// installed plugin folder (<libdir>/tessera/plugins next to
// libtessera_runtime; the build tree mirrors that layout, and the entry's
// origin then reads "build tree"). Within a folder, files are taken in name
// order; a file reached twice is loaded once.
// A plugin name seen twice keeps the first file; the second is rejected
// naming the first.
//
// Each candidate is first loaded in a child process (fork, dlopen, query,
// validate) so that a plugin that crashes while loading is rejected instead
// of taking the core down; TESSERA_PLUGIN_PROBE=0 skips that step. Then it is
// loaded for real with local symbols (RTLD_LOCAL | RTLD_NOW) and validated
// again. Every rejected candidate is kept with one message naming the file
// and the reason.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "support/error.h"
#include "support/export.h"
#include "tessera/c/plugin.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>


namespace tessera::plugin {

class LoadedLibrary; // the dlopen'ed file (Boost.DLL), private to plugin/

/// A function of a runtime module. Valid while its PluginModule lives.
class TESSERA_RT_EXPORT PluginFunction {
public:
  PluginFunction() = default;
  PluginFunction(tessera_function_t fn, std::string name) : fn_(fn), name_(std::move(name)) {}
  /// Calls it with inputs then outputs; a plugin error comes back with the
  /// function's name as context. A function of a graph with symbols is
  /// called with their values (through call_symbolic, ABI 1.4). With a
  /// `context` (a profiled run), through call_with_context when the
  /// function has it (ABI 1.6), else as without.
  Status call(std::span<const DLTensor *const> args, std::span<const int64_t> symbols = {},
              const tessera_call_context_t *context = nullptr) const;
  const std::string &name() const { return name_; }

private:
  tessera_function_t fn_{};
  std::string name_;
};

class LoadedPlugin;

/// A runtime module created by a plugin; destroyed through the plugin's
/// vtable. Keeps its plugin (and so the library) loaded.
class TESSERA_RT_EXPORT PluginModule {
public:
  PluginModule(tessera_module_t *module, std::shared_ptr<const LoadedPlugin> plugin);
  ~PluginModule();
  PluginModule(const PluginModule &) = delete;
  PluginModule &operator=(const PluginModule &) = delete;

  /// The module factory that loads save()'s bytes.
  const std::string &typeKey() const { return typeKey_; }
  const LoadedPlugin &plugin() const { return *plugin_; }
  Expected<PluginFunction> function(const std::string &symbol) const;
  /// The module's bytes, appended to `prefix` (a section header).
  Expected<std::string> save(std::string prefix = {}) const;
  /// The CPU the module's native code was compiled for ("" when none, or
  /// when the plugin predates ABI 1.2).
  std::string targetCpu() const;
  /// The module's source; an error when the module has none.
  Expected<std::string> source(std::string_view format = {}) const;

private:
  tessera_module_t *module_;
  std::shared_ptr<const LoadedPlugin> plugin_;
  std::string typeKey_;
};

/// A checker's answer.
struct CheckResult {
  bool supported = false;
  std::string reason; // why not; supported: the plugin's note (what runs it), ABI 1.6
};

/// A plugin's cost hint for a region (checker.estimate_region).
struct RegionEstimate {
  double speedup = 0; // times faster than the host's code; <= 0: no estimate
  std::string reason;
};

/// The reason an SDK checker declines with when it threw (the C ABI's
/// checker entries have no error channel): a broken checker, not a decision.
inline constexpr std::string_view kCheckerErrorPrefix = "checker error: ";

/// How the compiler calls plugins (docs/design/0011). Isolated, the
/// guarded* calls run in a forked child: a crash, abort, exit or hang there
/// is an error naming the plugin, the call and the op or region, not the end
/// of the process. Each child's timeout is for one step (one checker call,
/// one codegen), not the batch. TESSERA_PLUGIN_ISOLATION=0 in the
/// environment turns isolation off (the calls then run in-process, for a
/// debugger); --plugin-timeout sets both timeouts.
struct CallIsolation {
  bool enabled = true;
  std::chrono::milliseconds checkerTimeout{std::chrono::seconds(60)};
  std::chrono::milliseconds codegenTimeout{std::chrono::seconds(600)};
};

/// The process-wide setting: the defaults and the environment until set.
TESSERA_RT_EXPORT CallIsolation callIsolation();
TESSERA_RT_EXPORT void setCallIsolation(const CallIsolation &isolation);

/// A module made by codegen, saved: what an artifact keeps of it.
struct SavedModule {
  std::string typeKey;
  std::string targetCpu; // PluginModule::targetCpu()
  std::string bytes;     // the prefix, then the module's bytes
};

/// One loaded, validated plugin.
class TESSERA_RT_EXPORT LoadedPlugin : public std::enable_shared_from_this<LoadedPlugin> {
public:
  ~LoadedPlugin();

  const std::string &name() const { return name_; }
  const std::string &version() const { return version_; }
  const std::string &description() const { return description_; }
  const std::string &path() const { return path_; }
  uint32_t abiMajor() const { return abiMajor_; }
  uint32_t abiMinor() const { return abiMinor_; }
  /// The core ops it may take and its patterns (name, text), as declared.
  const std::vector<std::string> &ops() const { return ops_; }
  const std::vector<std::pair<std::string, std::string>> &patterns() const { return patterns_; }
  /// The module factories' type keys.
  const std::vector<std::string> &typeKeys() const { return typeKeys_; }
  uint64_t codegenFlags() const;
  bool hasPartitionHook() const;
  /// The versions whose modules this plugin loads, as it declares them ("":
  /// none declared, its own major version; plugin/versions.h).
  const std::string &compatibleVersions() const { return compatibleVersions_; }
  /// Whether this plugin loads a module that version `recorded` of it
  /// compiled: OK (with a warning naming both versions when they differ),
  /// or an error naming both and the rule.
  Status checkModuleVersion(std::string_view recorded) const;
  /// The file of a shipped plugin of the same name that this one, found
  /// earlier in the search path, shadows ("" when none).
  const std::string &shadows() const { return shadows_; }
  /// Warns once per process that this plugin shadows a shipped one (when it
  /// does): for the places that use it (partition targets, artifact loads).
  void warnIfShadowing() const;

  CheckResult checkOp(const tessera_op_desc_t &op) const;
  CheckResult checkPattern(const std::string &pattern,
                           std::span<const tessera_op_desc_t *const> ops) const;
  /// Does the plugin judge its own regions (checker.keep_region)?
  bool hasRegionRule() const;
  /// Is it offered ops and regions with symbolic dims (ABI 1.4's
  /// TESSERA_CHECKER_SYMBOLIC_DIMS)?
  bool takesSymbolicDims() const;
  /// Keep this formed region? (supported = keep; true without a rule.)
  CheckResult keepRegion(const tessera_graph_t &region) const;
  /// Does the plugin give cost hints (ABI 1.5's checker.estimate_region)?
  bool hasRegionEstimate() const;
  /// Its hint for a region: speedup over the host (<= 0: none).
  RegionEstimate estimateRegion(const tessera_graph_t &region) const;
  /// The whole-graph hook: a region number per JSON node (-1: not taken).
  Expected<std::vector<int64_t>> partition(const tessera_graph_t &graph, size_t numNodes) const;
  Expected<std::unique_ptr<PluginModule>> compile(const tessera_graph_t &graph) const;
  /// Loads a module through the factory for `typeKey`.
  Expected<std::unique_ptr<PluginModule>> load(std::string_view typeKey, std::string_view bytes) const;

  // The calls above run in this process. The guarded ones below run them
  // under callIsolation() (in a child when enabled; isolation.cpp); their
  // error says how the child ended: "plugin 'acme' crashed (SIGSEGV) in
  // check_op for conv2d '/features/0/Conv'".

  /// checkOp on each op (one child for all).
  Expected<std::vector<CheckResult>>
  guardedCheckOps(std::span<const tessera_op_desc_t *const> ops) const;
  /// checkPattern on each match of `pattern` (one child for all).
  Expected<std::vector<CheckResult>>
  guardedCheckPatterns(const std::string &pattern,
                       std::span<const std::vector<const tessera_op_desc_t *>> matches) const;
  Expected<CheckResult> guardedKeepRegion(const tessera_graph_t &region) const;
  Expected<RegionEstimate> guardedEstimateRegion(const tessera_graph_t &region) const;
  Expected<std::vector<int64_t>> guardedPartition(const tessera_graph_t &graph,
                                                  size_t numNodes) const;
  /// Codegen, then the module is asked for the function `graph.symbol`
  /// (a module without it is an error naming it) and saved after
  /// `prefix(typeKey)`.
  Expected<SavedModule>
  guardedCompile(const tessera_graph_t &graph,
                 const std::function<std::string(std::string_view typeKey)> &prefix) const;

private:
  friend class PluginRegistry;
  friend Expected<std::shared_ptr<LoadedPlugin>> loadPluginFile(const std::string &path);
  friend class PluginLoader; // registry_loader.cpp: reads and validates the descriptor
  LoadedPlugin() = default;

  std::shared_ptr<LoadedLibrary> library_;
  const tessera_plugin_t *desc_ = nullptr;
  std::string name_, version_, description_, path_;
  uint32_t abiMajor_ = 0, abiMinor_ = 0;
  std::vector<std::string> ops_;
  std::vector<std::pair<std::string, std::string>> patterns_;
  std::vector<std::string> typeKeys_;
  std::string shadows_;
  std::string compatibleVersions_;
  mutable std::atomic<bool> warnedShadowing_{false};
};

/// A candidate file that was not loaded, and why.
struct RejectedCandidate {
  std::string path;
  std::string reason; // "not a shared object (no ELF header)", ...
};

/// Where discovery looks, in order; `origin` says where the entry came from
/// ("TESSERA_PLUGIN_PATH entry 2", "installed plugin folder", "build tree").
struct SearchEntry {
  std::string path;
  std::string origin;
  bool shipped = false; // the plugin folder of this Tessera (installed or build tree)
};

struct DiscoveryOptions {
  /// Null: the default search path (see above).
  std::optional<std::vector<SearchEntry>> searchPath;
  /// Load every candidate in a child process first (see above).
  bool probe = true;
  /// How long a probe may take before the child is killed and the candidate
  /// rejected ("timed out while loading").
  std::chrono::milliseconds probeTimeout{10000};
};

/// The options global() discovers with: the defaults, except that the
/// environment's TESSERA_PLUGIN_PROBE=0 turns the probe off.
TESSERA_RT_EXPORT DiscoveryOptions defaultDiscoveryOptions();

/// The entries of a colon-separated plugin path (empty entries skipped), as
/// TESSERA_PLUGIN_PATH and tessera_set_plugin_path take it.
TESSERA_RT_EXPORT std::vector<std::string> splitPluginPath(std::string_view path);

/// The default search path (from the environment and the runtime's location).
TESSERA_RT_EXPORT std::vector<SearchEntry> defaultSearchPath();

/// Loads and validates one plugin file (no search, no duplicate check).
/// The error is the rejection reason, prefixed by the path.
TESSERA_RT_EXPORT Expected<std::shared_ptr<LoadedPlugin>> loadPluginFile(const std::string &path);

/// Loads `path` in a child process (as discovery's probe does) and reports
/// how that went: OK, the rejection reason, or how the child died
/// ("PATH: crashed while loading (SIGSEGV)"). Nothing is loaded in this
/// process. For tools that load a file the user named (plugin-check).
TESSERA_RT_EXPORT Status probePluginFile(
    const std::string &path, std::chrono::milliseconds timeout = std::chrono::seconds(10));

class TESSERA_RT_EXPORT PluginRegistry {
public:
  /// Scans the search path and loads every plugin found.
  static PluginRegistry discover(const DiscoveryOptions &options = {});
  /// The process-wide registry, discovered on first use with
  /// defaultDiscoveryOptions().
  static PluginRegistry &global();
  /// Sets the entries global() searches before the shipped plugin folder,
  /// in place of TESSERA_PLUGIN_PATH's (an app that bundles its plugins).
  /// FAILED_PRECONDITION-like error once global() has discovered: plugins
  /// are found once per process.
  static Status setGlobalSearchPath(const std::vector<std::string> &entries);

  const std::vector<std::shared_ptr<LoadedPlugin>> &plugins() const { return plugins_; }
  const std::vector<RejectedCandidate> &rejected() const { return rejected_; }
  const std::vector<SearchEntry> &searchPath() const { return searchPath_; }
  /// By plugin name, or null.
  std::shared_ptr<const LoadedPlugin> find(std::string_view name) const;
  /// The plugin with a module factory for `typeKey`, or null.
  std::shared_ptr<const LoadedPlugin> findFactory(std::string_view typeKey) const;

private:
  std::vector<std::shared_ptr<LoadedPlugin>> plugins_;
  std::vector<RejectedCandidate> rejected_;
  std::vector<SearchEntry> searchPath_;
};

} // namespace tessera::plugin
