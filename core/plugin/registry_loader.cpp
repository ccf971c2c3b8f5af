//===- plugin/registry_loader.cpp - Loading and validating a plugin -------===//
//
// Reads a plugin's descriptor defensively (struct sizes honoured, strings
// bounded, every required entry checked) into a LoadedPlugin, and does the same
// in a child process for the probe. Discovery is in registry.cpp, the calls
// into a loaded plugin in registry_calls.cpp.
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
//   Discovery (registry.cpp):
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
#include "plugin/registry_internal.h"
#include "plugin/versions.h"
#include "tessera/c/runtime.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

namespace fs = std::filesystem;

namespace tessera::plugin {

using detail::bounded;
using detail::kCheckerV1;
using detail::kCodegenV1;
using detail::kFactoryV1;
using detail::kMaxEntries;
using detail::kMaxString;
using detail::kPatternV1;
using detail::kPluginCompat;
using detail::kPluginHead;
using detail::kPluginV1;
using detail::probeFile;
using detail::takeStatus;

namespace {

/// A copy of a plugin-owned struct: the bytes its struct_size covers, the
/// rest zero (absent fields read as NULL).
template <typename T> T readStruct(const T *p) {
  T out{};
  std::memcpy(&out, p, std::min(p->struct_size, sizeof(T)));
  return out;
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

} // namespace

//===----------------------------------------------------------------------===//
// Loading and validating one file
//===----------------------------------------------------------------------===//

Expected<std::shared_ptr<LoadedPlugin>> PluginLoader::load(const std::string &path) {
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

  std::shared_ptr<LoadedPlugin> plugin(new LoadedPlugin());
  plugin->library_ = library;
  plugin->path_ = path;
  TS_RETURN_IF_ERROR(readDescriptor(*plugin, desc));
  context.label = "plugin '" + plugin->name_ + "'";
  return plugin;
}

Status PluginLoader::readDescriptor(LoadedPlugin &p, const tessera_plugin_t *desc) {
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
      return Error::format("invalid compatible_versions '{}': {}", printable(p.compatibleVersions_),
                           rule.error().message());
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

Status PluginLoader::readChecker(LoadedPlugin &p, const tessera_checker_t *checker) {
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

Status PluginLoader::readFactories(LoadedPlugin &p, const tessera_module_factory_t *const *factories,
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

Expected<std::shared_ptr<LoadedPlugin>> loadPluginFile(const std::string &path) {
  auto plugin = PluginLoader::load(path);
  if (!plugin.ok())
    return Error(path + ": " + plugin.error().message());
  return plugin;
}

namespace detail {

/// The whole load in a child process; the reason without the path.
Status probeFile(const std::string &path, std::chrono::milliseconds timeout) {
  return runInChild(
      [&]() -> Status {
        auto plugin = PluginLoader::load(path);
        if (!plugin.ok())
          return std::move(plugin).error();
        // Kept loaded: the child leaves with _exit, and unloading would run
        // the plugin's destructors, which are not what is being probed.
        static std::shared_ptr<LoadedPlugin> keep;
        keep = std::move(plugin).value();
        return okStatus();
      },
      timeout);
}

} // namespace detail

Status probePluginFile(const std::string &path, std::chrono::milliseconds timeout) {
  Status status = probeFile(path, timeout);
  if (!status.ok())
    return Error(path + ": " + status.error().message());
  return status;
}

} // namespace tessera::plugin
