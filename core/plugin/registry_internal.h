//===- plugin/registry_internal.h - Registry internals ---------*- C++ -*-===//
//
// Private to plugin/registry*.cpp: the limits and ABI 1.0 struct sizes used
// when reading what a plugin hands over, the helpers that read its strings
// and statuses, and the loader that validates one plugin file (a friend of
// LoadedPlugin; registry_loader.cpp), which discovery (registry.cpp) uses too.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "plugin/registry.h"

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

namespace tessera::plugin {

namespace detail {

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
constexpr size_t kCheckerFlags = TS_END_OF(tessera_checker_t, flags);             // ABI 1.4
constexpr size_t kCheckerEstimate = TS_END_OF(tessera_checker_t, estimate_region); // ABI 1.5
constexpr size_t kFunctionSymbolic = TS_END_OF(tessera_function_t, call_symbolic); // ABI 1.4
constexpr size_t kFunctionContext = TS_END_OF(tessera_function_t, call_with_context); // ABI 1.6
constexpr size_t kPatternV1 = TS_END_OF(tessera_pattern_t, pattern);
constexpr size_t kCodegenV1 = TS_END_OF(tessera_codegen_t, compile);
constexpr size_t kFactoryV1 = TS_END_OF(tessera_module_factory_t, load);
constexpr size_t kModuleV1 = TS_END_OF(tessera_module_t, destroy);
constexpr size_t kModuleTargetCpu = TS_END_OF(tessera_module_t, get_target_cpu); // ABI 1.2
constexpr size_t kStatusMessageEnd = TS_END_OF(tessera_plugin_status_t, message);
constexpr size_t kStatusV1 = TS_END_OF(tessera_plugin_status_t, release);
#undef TS_END_OF

/// A plugin's string for a message: bounded, never null.
std::string bounded(const char *s);

/// The message of a status returned by the plugin, which is then released.
std::string takeStatus(tessera_plugin_status_t *status);

/// The whole load in a child process; the reason without the path.
Status probeFile(const std::string &path, std::chrono::milliseconds timeout);

} // namespace detail

/// Builds a LoadedPlugin from a file. Errors are reasons without the path.
class PluginLoader {
public:
  static Expected<std::shared_ptr<LoadedPlugin>> load(const std::string &path);

private:
  static Status readDescriptor(LoadedPlugin &p, const tessera_plugin_t *desc);
  static Status readChecker(LoadedPlugin &p, const tessera_checker_t *checker);
  static Status readFactories(LoadedPlugin &p, const tessera_module_factory_t *const *factories,
                              size_t count);
};

} // namespace tessera::plugin
