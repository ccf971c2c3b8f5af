//===- plugin/registry.cpp - Plugin validation, discovery and calls -------===//
//
// Reads a plugin's descriptor defensively (struct sizes honoured, strings
// bounded, every required entry checked) into a Plugin, scans the search
// path, and wraps the calls into a plugin (statuses released, answers
// checked) for the rest of the core.
//
// Rejection reasons. loadPluginFile's error and `tessera plugins --verbose`
// read "PATH: REASON"; RejectedCandidate::reason is REASON alone.
//
//   The file (plugin/library.cpp, before dlopen):
//     cannot open the file (<strerror>)
//     not a regular file
//     not a shared object (no ELF header)
//     not a shared object (truncated: the ELF header needs 64 bytes, the file has N)
//     not a shared object (truncated or corrupt: the ELF headers describe N bytes, the file
//       has M)
//     not a shared object (no ELF program headers)
//     not a shared object (an ELF executable)                  (ET_EXEC, or a PIE)
//     not a shared object (an ELF relocatable object file, not linked)
//     ELF for another machine (32-bit ELF, this core is 64-bit)
//     ELF for another machine (big-endian ELF, this core is little-endian)
//     ELF for another machine (AArch64, this core runs on x86-64)
//   dlopen (RTLD_NOW | RTLD_LOCAL), from dlerror's text:
//     needs libfoo.so.1, which was not found (install it or add its folder to LD_LIBRARY_PATH)
//     undefined symbol 'foo' (a library it was built against is missing or older; link
//       plugins with -Wl,--no-undefined to catch this at build time)
//     undefined symbol 'foo' in its dependency /path/libdep.so   (versioned: 'foo@V_1.2')
//     needs version GLIBC_2.38 of /lib/.../libc.so.6, which this system does not have (the
//       plugin was built on a newer system)
//     dlopen failed: <dlerror text>                            (anything else)
//   The probe (plugin/probe.cpp):
//     crashed while loading (SIGSEGV)                          (any signal, e.g. SIGABRT)
//     timed out while loading (no answer within 10 s)
//     exited while loading (exit status 3)
//   The entry point and the descriptor (here):
//     no entry symbol 'tessera_plugin_query' (not a Tessera plugin, or built without
//       TESSERA_PLUGIN(...))
//     plugin init failed: <the status's message>
//     the query returned no descriptor (a null tessera_plugin_t)
//     descriptor struct_size 16 is smaller than the ABI 1.0 descriptor (80 bytes)
//     built against plugin ABI 3.0, this core speaks ABI 1.x
//     invalid plugin name (null)
//     invalid plugin name 'Zoo-Bad' (must match [a-z][a-z0-9_]*)
//     required entry 'E' is null        E: version, checker, checker.ops,
//       checker.check_op, checker.patterns, checker.patterns[i],
//       checker.patterns[i].name, checker.patterns[i].pattern, codegen,
//       codegen.compile, module_factories, module_factories[i],
//       module_factories[i].type_key, module_factories[i].load
//     table 'T' has struct_size 8, smaller than its ABI 1.0 layout (56 bytes)
//       T: checker, checker.patterns[i], codegen, module_factories[i]
//     'E' is not a NUL-terminated string (no NUL within 4096 bytes)
//     'checker.ops' has no NULL terminator within 100000 entries
//     no module factory (at least one is required)
//     two module factories with type key 'json'
//     invalid compatible_versions '>=x': 'x' after '>=' is not a version (MAJOR[.MINOR[.PATCH]])
//     empty module factory type key (module_factories[i].type_key)
//   Discovery (here):
//     no such file or folder                                   (a search path entry)
//     cannot read the folder (<reason>)
//     duplicate plugin name 'json': already loaded from /a/libtessera_json.so (earlier in
//       the search path: TESSERA_PLUGIN_PATH entry 1)
//     duplicate plugin name 'json': already loaded from /a/libtessera_json.so (same folder,
//       earlier in name order: TESSERA_PLUGIN_PATH entry 1)
//
//===----------------------------------------------------------------------===//
#include "plugin/registry.h"

#include "plugin/library.h"
#include "plugin/probe.h"
#include "plugin/versions.h"
#include "tessera/c/runtime.h"

#include <spdlog/spdlog.h>

#include <dlfcn.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <map>
#include <set>

namespace fs = std::filesystem;

namespace tessera::plugin {

namespace {

constexpr size_t kMaxString = 4096;    // longest string read from a plugin
constexpr size_t kMaxEntries = 100000; // longest list read from a plugin
constexpr size_t kReasonSize = 512;    // the checker's reason buffer

// The ABI 1.0 size of each struct: the end of its last 1.0 field. A plugin
// built against 1.x has at least this much; later minors only append.
#define TS_END_OF(type, field) (offsetof(type, field) + sizeof(type::field))
constexpr size_t kPluginHead = TS_END_OF(tessera_plugin_t, abi_minor);
constexpr size_t kPluginV1 = TS_END_OF(tessera_plugin_t, num_module_factories);
constexpr size_t kPluginCompat = TS_END_OF(tessera_plugin_t, compatible_versions); // ABI 1.3
constexpr size_t kCheckerV1 = TS_END_OF(tessera_checker_t, partition);
constexpr size_t kCheckerKeepRegion = TS_END_OF(tessera_checker_t, keep_region);
constexpr size_t kPatternV1 = TS_END_OF(tessera_pattern_t, pattern);
constexpr size_t kCodegenV1 = TS_END_OF(tessera_codegen_t, compile);
constexpr size_t kFactoryV1 = TS_END_OF(tessera_module_factory_t, load);
constexpr size_t kModuleV1 = TS_END_OF(tessera_module_t, destroy);
constexpr size_t kModuleTargetCpu = TS_END_OF(tessera_module_t, get_target_cpu); // ABI 1.2
constexpr size_t kStatusMessageEnd = TS_END_OF(tessera_plugin_status_t, message);
constexpr size_t kStatusV1 = TS_END_OF(tessera_plugin_status_t, release);
#undef TS_END_OF

/// A copy of a plugin-owned struct: the bytes its struct_size covers, the
/// rest zero (absent fields read as NULL).
template <typename T> T readStruct(const T *p) {
  T out{};
  std::memcpy(&out, p, std::min(p->struct_size, sizeof(T)));
  return out;
}

/// A plugin's string for a message: bounded, never null.
std::string bounded(const char *s) {
  return s ? std::string(s, strnlen(s, kMaxString)) : "";
}

/// A name as shown in a message: bytes outside printable ASCII escaped.
std::string printable(std::string_view s) {
  std::string out;
  for (unsigned char c : s)
    out += c >= 0x20 && c < 0x7f ? std::string(1, char(c)) : fmt::format("\\x{:02x}", c);
  return out;
}

Error required(std::string_view entry) {
  return Error::format("required entry '{}' is null", entry);
}

Error tableTooSmall(std::string_view table, size_t size, size_t v1) {
  return Error::format("table '{}' has struct_size {}, smaller than its ABI 1.0 layout ({} "
                       "bytes)",
                       table, size, v1);
}

/// A required string of the descriptor.
Expected<std::string> readString(const char *s, std::string_view entry) {
  if (!s)
    return required(entry);
  size_t n = strnlen(s, kMaxString);
  if (n == kMaxString)
    return Error::format("'{}' is not a NUL-terminated string (no NUL within {} bytes)", entry,
                         kMaxString);
  return std::string(s, n);
}

/// The message of a status returned by the plugin, which is then released.
std::string takeStatus(tessera_plugin_status_t *status) {
  std::string message;
  if (status->struct_size >= kStatusMessageEnd)
    message = bounded(status->message);
  if (message.empty())
    message = "(no message)";
  if (status->struct_size >= kStatusV1 && status->release)
    status->release(status);
  return message;
}

bool validName(std::string_view name) {
  if (name.empty() || name[0] < 'a' || name[0] > 'z')
    return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

/// tessera_host_t::log: one line to spdlog, prefixed with the plugin.
void hostLog(void *state, tessera_log_level_t level, const char *message) {
  if (inProbeChild() || !state)
    return; // the real load logs the same lines again
  const auto *context = static_cast<const HostContext *>(state);
  spdlog::level::level_enum lvl = spdlog::level::info;
  switch (level) {
  case TESSERA_LOG_DEBUG: lvl = spdlog::level::debug; break;
  case TESSERA_LOG_INFO: lvl = spdlog::level::info; break;
  case TESSERA_LOG_WARN: lvl = spdlog::level::warn; break;
  case TESSERA_LOG_ERROR: lvl = spdlog::level::err; break;
  }
  spdlog::log(lvl, "{}: {}", context->label, bounded(message));
}

/// A byte sink (tessera_write_fn) appending to a std::string.
bool appendToString(void *sink, const void *data, size_t size) {
  if (size == 0)
    return true;
  if (!sink || !data)
    return false;
  try {
    static_cast<std::string *>(sink)->append(static_cast<const char *>(data), size);
    return true;
  } catch (...) {
    return false; // out of memory: the contract says so through `false`
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Loading and validating one file
//===----------------------------------------------------------------------===//

/// Builds a Plugin from a file. Errors are reasons without the path.
class PluginLoader {
public:
  static Expected<std::shared_ptr<Plugin>> load(const std::string &path) {
    TS_ASSIGN_OR_RETURN(std::shared_ptr<LoadedLibrary> library, openLibrary(path));
    void *entry = library->symbol(TESSERA_PLUGIN_ENTRY_SYMBOL);
    if (!entry)
      return Error("no entry symbol '" TESSERA_PLUGIN_ENTRY_SYMBOL
                   "' (not a Tessera plugin, or built without TESSERA_PLUGIN(...))");
    auto query = reinterpret_cast<tessera_plugin_query_fn>(entry);

    HostContext &context = library->hostContext();
    context.label = "plugin file " + fs::path(path).filename().string();
    context.host.struct_size = sizeof(tessera_host_t);
    context.host.abi_major = TESSERA_PLUGIN_ABI_MAJOR;
    context.host.abi_minor = TESSERA_PLUGIN_ABI_MINOR;
    context.host.core_version = tessera_runtime_version();
    context.host.log = &hostLog;
    context.host.log_state = &context;

    const tessera_plugin_t *desc = nullptr;
    if (tessera_plugin_status_t *status = query(&context.host, &desc))
      return Error("plugin init failed: " + takeStatus(status));

    std::shared_ptr<Plugin> plugin(new Plugin());
    plugin->library_ = library;
    plugin->path_ = path;
    TS_RETURN_IF_ERROR(readDescriptor(*plugin, desc));
    context.label = "plugin '" + plugin->name_ + "'";
    return plugin;
  }

private:
  static Status readDescriptor(Plugin &p, const tessera_plugin_t *desc) {
    if (!desc)
      return Error("the query returned no descriptor (a null tessera_plugin_t)");
    auto tooSmall = [&] {
      return Error::format("descriptor struct_size {} is smaller than the ABI 1.0 descriptor ({} "
                           "bytes)",
                           desc->struct_size, kPluginV1);
    };
    // Only the first three fields are read before the major is known.
    if (desc->struct_size < kPluginHead)
      return tooSmall();
    if (desc->abi_major != TESSERA_PLUGIN_ABI_MAJOR)
      return Error::format("built against plugin ABI {}.{}, this core speaks ABI {}.x",
                           desc->abi_major, desc->abi_minor, TESSERA_PLUGIN_ABI_MAJOR);
    if (desc->struct_size < kPluginV1)
      return tooSmall();
    tessera_plugin_t d = readStruct(desc);
    p.desc_ = desc;
    p.abiMajor_ = d.abi_major;
    p.abiMinor_ = d.abi_minor;

    if (!d.name)
      return Error("invalid plugin name (null)");
    TS_ASSIGN_OR_RETURN(p.name_, readString(d.name, "name"));
    if (!validName(p.name_))
      return Error::format("invalid plugin name '{}' (must match [a-z][a-z0-9_]*)",
                           printable(p.name_));
    TS_ASSIGN_OR_RETURN(p.version_, readString(d.version, "version"));
    if (d.description) {
      TS_ASSIGN_OR_RETURN(p.description_, readString(d.description, "description"));
    }
    if (desc->struct_size >= kPluginCompat && d.compatible_versions) {
      TS_ASSIGN_OR_RETURN(p.compatibleVersions_,
                          readString(d.compatible_versions, "compatible_versions"));
      if (auto rule = VersionRule::parse(p.compatibleVersions_); !rule.ok())
        return Error::format("invalid compatible_versions '{}': {}",
                             printable(p.compatibleVersions_), rule.error().message());
    }

    TS_RETURN_IF_ERROR(readChecker(p, d.checker));
    if (!d.codegen)
      return required("codegen");
    if (d.codegen->struct_size < kCodegenV1)
      return tableTooSmall("codegen", d.codegen->struct_size, kCodegenV1);
    if (!d.codegen->compile)
      return required("codegen.compile");
    return readFactories(p, d.module_factories, d.num_module_factories);
  }

  static Status readChecker(Plugin &p, const tessera_checker_t *checker) {
    if (!checker)
      return required("checker");
    if (checker->struct_size < kCheckerV1)
      return tableTooSmall("checker", checker->struct_size, kCheckerV1);
    tessera_checker_t c = readStruct(checker);
    if (!c.ops)
      return required("checker.ops");
    for (size_t i = 0; c.ops[i]; ++i) {
      if (i == kMaxEntries)
        return Error::format("'checker.ops' has no NULL terminator within {} entries", kMaxEntries);
      TS_ASSIGN_OR_RETURN(std::string op, readString(c.ops[i], fmt::format("checker.ops[{}]", i)));
      p.ops_.push_back(std::move(op));
    }
    if (!c.check_op)
      return required("checker.check_op");
    if (c.num_patterns > 0 && !c.patterns)
      return required("checker.patterns");
    if (c.num_patterns > kMaxEntries)
      return Error::format("'checker.num_patterns' is {} (more than {})", c.num_patterns,
                           kMaxEntries);
    for (size_t i = 0; i < c.num_patterns; ++i) {
      std::string entry = fmt::format("checker.patterns[{}]", i);
      const tessera_pattern_t *pattern = c.patterns[i];
      if (!pattern)
        return required(entry);
      if (pattern->struct_size < kPatternV1)
        return tableTooSmall(entry, pattern->struct_size, kPatternV1);
      TS_ASSIGN_OR_RETURN(std::string name, readString(pattern->name, entry + ".name"));
      TS_ASSIGN_OR_RETURN(std::string text, readString(pattern->pattern, entry + ".pattern"));
      p.patterns_.emplace_back(std::move(name), std::move(text));
    }
    return okStatus();
  }

  static Status readFactories(Plugin &p, const tessera_module_factory_t *const *factories,
                              size_t count) {
    if (count > 0 && !factories)
      return required("module_factories");
    if (count == 0)
      return Error("no module factory (at least one is required)");
    if (count > kMaxEntries)
      return Error::format("'num_module_factories' is {} (more than {})", count, kMaxEntries);
    for (size_t i = 0; i < count; ++i) {
      std::string entry = fmt::format("module_factories[{}]", i);
      const tessera_module_factory_t *factory = factories[i];
      if (!factory)
        return required(entry);
      if (factory->struct_size < kFactoryV1)
        return tableTooSmall(entry, factory->struct_size, kFactoryV1);
      TS_ASSIGN_OR_RETURN(std::string key, readString(factory->type_key, entry + ".type_key"));
      if (key.empty())
        return Error::format("empty module factory type key ({}.type_key)", entry);
      if (!factory->load)
        return required(entry + ".load");
      if (std::find(p.typeKeys_.begin(), p.typeKeys_.end(), key) != p.typeKeys_.end())
        return Error::format("two module factories with type key '{}'", printable(key));
      p.typeKeys_.push_back(std::move(key));
    }
    return okStatus();
  }
};

Expected<std::shared_ptr<Plugin>> loadPluginFile(const std::string &path) {
  auto plugin = PluginLoader::load(path);
  if (!plugin.ok())
    return Error(path + ": " + plugin.error().message());
  return plugin;
}

namespace {

/// The whole load in a child process; the reason without the path.
Status probeFile(const std::string &path, std::chrono::milliseconds timeout) {
  return runInChild(
      [&]() -> Status {
        auto plugin = PluginLoader::load(path);
        if (!plugin.ok())
          return std::move(plugin).error();
        // Kept loaded: the child leaves with _exit, and unloading would run
        // the plugin's destructors, which are not what is being probed.
        static std::shared_ptr<Plugin> keep;
        keep = std::move(plugin).value();
        return okStatus();
      },
      timeout);
}

} // namespace

Status probePluginFile(const std::string &path, std::chrono::milliseconds timeout) {
  Status status = probeFile(path, timeout);
  if (!status.ok())
    return Error(path + ": " + status.error().message());
  return status;
}

//===----------------------------------------------------------------------===//
// Calls into a plugin
//===----------------------------------------------------------------------===//

Plugin::~Plugin() = default;

uint64_t Plugin::codegenFlags() const {
  return desc_->codegen->flags;
}

bool Plugin::hasPartitionHook() const {
  return desc_->checker->partition != nullptr;
}

namespace {

/// Calls a checker entry `ask(reason, size)` with a reason buffer; the
/// reason (NUL-terminated whatever the plugin wrote) when it declines.
template <typename F> CheckResult askChecker(F &&ask) {
  char reason[kReasonSize] = {};
  CheckResult result;
  result.supported = ask(reason, sizeof reason);
  reason[kReasonSize - 1] = '\0';
  if (!result.supported)
    result.reason = reason;
  return result;
}

} // namespace

bool Plugin::hasRegionRule() const {
  // keep_region came after the partition hook: read it only when the
  // plugin's table is long enough to hold it.
  return desc_->checker->struct_size >= kCheckerKeepRegion && desc_->checker->keep_region;
}

CheckResult Plugin::keepRegion(const tessera_graph_t &region) const {
  CheckResult result;
  if (!hasRegionRule()) {
    result.supported = true;
    return result;
  }
  return askChecker([&](char *reason, size_t size) {
    return desc_->checker->keep_region(desc_->state, &region, reason, size);
  });
}

CheckResult Plugin::checkOp(const tessera_op_desc_t &op) const {
  CheckResult result;
  std::string opName = bounded(op.op);
  // Only the ops the plugin declared are offered to it.
  if (std::find(ops_.begin(), ops_.end(), opName) == ops_.end()) {
    result.reason = fmt::format("plugin '{}' does not take op '{}'", name_, opName);
    return result;
  }
  return askChecker([&](char *reason, size_t size) {
    return desc_->checker->check_op(desc_->state, &op, reason, size);
  });
}

CheckResult Plugin::checkPattern(const std::string &pattern,
                                 std::span<const tessera_op_desc_t *const> ops) const {
  CheckResult result;
  if (!desc_->checker->check_pattern) {
    result.supported = true; // no hook: every match is taken
    return result;
  }
  return askChecker([&](char *reason, size_t size) {
    return desc_->checker->check_pattern(desc_->state, pattern.c_str(), ops.data(), ops.size(),
                                         reason, size);
  });
}

Expected<std::vector<int64_t>> Plugin::partition(const tessera_graph_t &graph,
                                                 size_t numNodes) const {
  if (!hasPartitionHook())
    return Error::format("plugin '{}' has no partition hook", name_);
  std::vector<int64_t> regions(numNodes, -1);
  if (tessera_plugin_status_t *status =
          desc_->checker->partition(desc_->state, &graph, regions.data(), numNodes))
    return Error::format("plugin '{}': partition failed: {}", name_, takeStatus(status));
  for (size_t i = 0; i < numNodes; ++i)
    if (regions[i] < -1)
      return Error::format("plugin '{}': partition gave node {} the region {} (a region is >= 0, "
                           "or -1 for a node not taken)",
                           name_, i, regions[i]);
  return regions;
}

namespace {

/// Checks a module the plugin handed over (`from`: which entry made it) and
/// takes ownership of it.
Expected<std::unique_ptr<Module>> adoptModule(tessera_module_t *module,
                                              std::shared_ptr<const Plugin> plugin,
                                              const std::string &from) {
  const std::string &name = plugin->name();
  if (!module)
    return Error::format("plugin '{}': {} returned OK but no module", name, from);
  if (module->struct_size < kModuleV1)
    // Not destroyed: with a struct this small, `destroy` cannot be trusted.
    return Error::format("plugin '{}': {} returned a module with struct_size {}, smaller than "
                         "its ABI 1.0 layout ({} bytes)",
                         name, from, module->struct_size, kModuleV1);
  const char *missing = !module->type_key       ? "type_key"
                        : !module->get_function ? "get_function"
                        : !module->save         ? "save"
                        : !module->destroy      ? "destroy"
                                                : nullptr;
  if (missing) {
    if (module->destroy)
      module->destroy(module->self);
    return Error::format("plugin '{}': {} returned a module whose required entry '{}' is null",
                         name, from, missing);
  }
  return std::make_unique<Module>(module, std::move(plugin));
}

} // namespace

Expected<std::unique_ptr<Module>> Plugin::compile(const tessera_graph_t &graph) const {
  tessera_module_t *module = nullptr;
  if (tessera_plugin_status_t *status = desc_->codegen->compile(desc_->state, &graph, &module))
    return Error::format("plugin '{}': compiling '{}' failed: {}", name_, bounded(graph.symbol),
                         takeStatus(status));
  return adoptModule(module, shared_from_this(), "codegen.compile");
}

Expected<std::unique_ptr<Module>> Plugin::load(std::string_view typeKey,
                                               std::string_view bytes) const {
  auto it = std::find(typeKeys_.begin(), typeKeys_.end(), typeKey);
  if (it == typeKeys_.end())
    return Error::format("plugin '{}' has no module factory '{}' (it has: {})", name_, typeKey,
                         fmt::join(typeKeys_, ", "));
  const tessera_module_factory_t *factory = desc_->module_factories[it - typeKeys_.begin()];
  tessera_module_t *module = nullptr;
  if (tessera_plugin_status_t *status =
          factory->load(desc_->state, bytes.data(), bytes.size(), &module))
    return Error::format("plugin '{}': module factory '{}' failed: {}", name_, typeKey,
                         takeStatus(status));
  return adoptModule(module, shared_from_this(), fmt::format("module factory '{}'", typeKey));
}

Module::Module(tessera_module_t *module, std::shared_ptr<const Plugin> plugin)
    : module_(module), plugin_(std::move(plugin)) {
  if (module_)
    typeKey_ = bounded(module_->type_key);
}

Module::~Module() {
  if (module_ && module_->destroy)
    module_->destroy(module_->self);
}

Expected<Function> Module::function(const std::string &symbol) const {
  tessera_function_t fn{};
  fn.struct_size = sizeof fn;
  if (tessera_plugin_status_t *status = module_->get_function(module_->self, symbol.c_str(), &fn))
    return Error::format("module '{}' of plugin '{}': function '{}': {}", typeKey_, plugin_->name(),
                         symbol, takeStatus(status));
  if (!fn.call)
    return Error::format("module '{}' of plugin '{}': function '{}': get_function gave no call "
                         "entry",
                         typeKey_, plugin_->name(), symbol);
  return Function(fn, symbol);
}

Expected<std::string> Module::save(std::string prefix) const {
  std::string bytes = std::move(prefix);
  if (tessera_plugin_status_t *status = module_->save(module_->self, &appendToString, &bytes))
    return Error::format("module '{}' of plugin '{}': save failed: {}", typeKey_, plugin_->name(),
                         takeStatus(status));
  return bytes;
}

std::string Module::targetCpu() const {
  if (module_->struct_size < kModuleTargetCpu ||
      !module_->get_target_cpu)
    return {};
  return bounded(module_->get_target_cpu(module_->self));
}

Expected<std::string> Module::source(std::string_view format) const {
  if (!module_->get_source)
    return Error::format("module '{}' of plugin '{}' has no source", typeKey_, plugin_->name());
  std::string text, formatName(format);
  if (tessera_plugin_status_t *status =
          module_->get_source(module_->self, formatName.c_str(), &appendToString, &text))
    return Error::format("module '{}' of plugin '{}': source: {}", typeKey_, plugin_->name(),
                         takeStatus(status));
  return text;
}

Status Function::call(std::span<const DLTensor *const> args) const {
  if (!fn_.call)
    return Error::format("function '{}': not bound to a module", name_);
  if (tessera_plugin_status_t *status = fn_.call(fn_.self, args.data(), args.size()))
    return Error::format("function '{}': {}", name_, takeStatus(status));
  return okStatus();
}

//===----------------------------------------------------------------------===//
// Discovery
//===----------------------------------------------------------------------===//

std::vector<std::string> splitPluginPath(std::string_view path) {
  std::vector<std::string> entries;
  while (!path.empty()) {
    size_t colon = path.find(':');
    if (colon != 0)
      entries.emplace_back(path.substr(0, colon));
    path = colon == std::string_view::npos ? std::string_view() : path.substr(colon + 1);
  }
  return entries;
}

std::vector<SearchEntry> defaultSearchPath() {
  std::vector<SearchEntry> path;
  if (const char *env = std::getenv("TESSERA_PLUGIN_PATH"))
    for (std::string &entry : splitPluginPath(env))
      path.push_back(
          {std::move(entry), fmt::format("TESSERA_PLUGIN_PATH entry {}", path.size() + 1)});
  // <libdir>/tessera/plugins next to this library; in the build tree the
  // same layout holds (<build>/lib), and <build> has a CMakeCache.txt.
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void *>(&tessera_runtime_version), &info) && info.dli_fname) {
    std::error_code ec;
    fs::path library = fs::weakly_canonical(fs::absolute(info.dli_fname, ec), ec);
    fs::path libdir = library.parent_path();
    bool buildTree = fs::exists(libdir.parent_path() / "CMakeCache.txt", ec);
    path.push_back({(libdir / TESSERA_PLUGIN_INSTALL_SUBDIR).string(),
                    buildTree ? "build tree" : "installed plugin folder", /*shipped=*/true});
  }
  return path;
}

namespace {

/// The candidate files of one search path entry, in order; a rejection
/// when the entry itself is unusable.
std::vector<std::string> candidates(const SearchEntry &entry,
                                    std::vector<RejectedCandidate> &rejected) {
  std::error_code ec;
  fs::file_status status = fs::status(entry.path, ec);
  if (!fs::exists(status)) {
    rejected.push_back({entry.path, "no such file or folder"});
    return {};
  }
  if (!fs::is_directory(status))
    return {entry.path}; // a file is taken as it is
  std::vector<std::string> files;
  for (fs::directory_iterator it(entry.path, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code fileEc;
    if (it->path().extension() == ".so" && it->is_regular_file(fileEc))
      files.push_back(it->path().string());
  }
  if (ec) {
    rejected.push_back({entry.path, fmt::format("cannot read the folder ({})", ec.message())});
    return {};
  }
  std::sort(files.begin(), files.end());
  return files;
}

} // namespace

DiscoveryOptions defaultDiscoveryOptions() {
  DiscoveryOptions options;
  const char *env = std::getenv("TESSERA_PLUGIN_PROBE");
  options.probe = !(env && std::string_view(env) == "0");
  return options;
}

PluginRegistry PluginRegistry::discover(const DiscoveryOptions &options) {
  PluginRegistry registry;
  registry.searchPath_ = options.searchPath ? *options.searchPath : defaultSearchPath();

  struct Winner {
    std::string path;
    size_t entry;
    size_t plugin; // in plugins_
  };
  std::map<std::string, Winner> byName;
  std::set<std::string> seenFiles;
  for (size_t e = 0; e < registry.searchPath_.size(); ++e) {
    const SearchEntry &entry = registry.searchPath_[e];
    for (const std::string &file : candidates(entry, registry.rejected_)) {
      std::error_code ec;
      fs::path canonical = fs::canonical(file, ec);
      if (!seenFiles.insert(ec ? file : canonical.string()).second)
        continue; // the same file through another entry: loaded once
      auto reject = [&](std::string reason) {
        spdlog::debug("plugin candidate {} rejected: {}", file, reason);
        registry.rejected_.push_back({file, std::move(reason)});
      };
      if (options.probe) {
        Status probed = probeFile(file, options.probeTimeout);
        if (!probed.ok()) {
          reject(probed.error().message());
          continue;
        }
      }
      auto plugin = PluginLoader::load(file);
      if (!plugin.ok()) {
        reject(plugin.error().message());
        continue;
      }
      const std::string &name = (*plugin)->name();
      if (auto it = byName.find(name); it != byName.end()) {
        const Winner &winner = it->second;
        const std::string &origin = registry.searchPath_[winner.entry].origin;
        if (entry.shipped && !registry.searchPath_[winner.entry].shipped)
          registry.plugins_[winner.plugin]->shadows_ = file;
        reject(fmt::format(
            "duplicate plugin name '{}': already loaded from {} ({}: {})", name, winner.path,
            winner.entry == e ? "same folder, earlier in name order" : "earlier in the search path",
            origin));
        continue; // the library is unloaded with *plugin
      }
      spdlog::debug("plugin '{}' {} loaded from {}", name, (*plugin)->version(), file);
      byName.emplace(name, Winner{file, e, registry.plugins_.size()});
      registry.plugins_.push_back(std::move(plugin).value());
    }
  }
  return registry;
}

namespace {

std::mutex gGlobalMutex;
std::optional<std::vector<std::string>> gGlobalEntries; // setGlobalSearchPath's
bool gGlobalDiscovered = false;

} // namespace

PluginRegistry &PluginRegistry::global() {
  static PluginRegistry registry = [] { // thread-safe, once
    DiscoveryOptions options = defaultDiscoveryOptions();
    std::lock_guard lock(gGlobalMutex);
    gGlobalDiscovered = true;
    if (gGlobalEntries) {
      std::vector<SearchEntry> path;
      for (const std::string &e : *gGlobalEntries)
        path.push_back({e, fmt::format("search path entry {} set by the application",
                                       path.size() + 1)});
      for (SearchEntry &e : defaultSearchPath())
        if (e.shipped)
          path.push_back(std::move(e));
      options.searchPath = std::move(path);
    }
    return discover(options);
  }();
  return registry;
}

Status PluginRegistry::setGlobalSearchPath(const std::vector<std::string> &entries) {
  std::lock_guard lock(gGlobalMutex);
  if (gGlobalDiscovered)
    return Error("the plugin search path cannot change: plugins were already discovered (at the "
                 "first model load or compile); set it before that");
  gGlobalEntries = entries;
  return okStatus();
}

void Plugin::warnIfShadowing() const {
  if (shadows_.empty() || warnedShadowing_.exchange(true))
    return;
  spdlog::warn("plugin '{}' {} is {}, which shadows the shipped plugin {}", name_, version_, path_,
               shadows_);
}

std::shared_ptr<const Plugin> PluginRegistry::find(std::string_view name) const {
  for (const auto &plugin : plugins_)
    if (plugin->name() == name)
      return plugin;
  return nullptr;
}

std::shared_ptr<const Plugin> PluginRegistry::findFactory(std::string_view typeKey) const {
  for (const auto &plugin : plugins_) {
    const auto &keys = plugin->typeKeys();
    if (std::find(keys.begin(), keys.end(), typeKey) != keys.end())
      return plugin;
  }
  return nullptr;
}

} // namespace tessera::plugin
