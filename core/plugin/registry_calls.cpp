//===- plugin/registry_calls.cpp - Calls into a plugin --------------------===//
//
// Wraps the calls into a loaded plugin, its modules and their functions for
// the rest of the core: statuses released, answers checked, and a module
// taken over only when its required entries are there. Loading and
// validating a plugin is in registry_loader.cpp.
//
//===----------------------------------------------------------------------===//
#include "plugin/registry.h"

#include "plugin/registry_internal.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace tessera::plugin {

using detail::bounded;
using detail::kCheckerKeepRegion;
using detail::kModuleTargetCpu;
using detail::kModuleV1;
using detail::kReasonSize;
using detail::takeStatus;

namespace detail {

/// A plugin's string for a message: bounded, never null.
std::string bounded(const char *s) {
  return s ? std::string(s, strnlen(s, kMaxString)) : "";
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

} // namespace detail

namespace {

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
// Calls into a plugin
//===----------------------------------------------------------------------===//

LoadedPlugin::~LoadedPlugin() = default;

uint64_t LoadedPlugin::codegenFlags() const {
  return desc_->codegen->flags;
}

bool LoadedPlugin::hasPartitionHook() const {
  return desc_->checker->partition != nullptr;
}

namespace {

/// Calls a checker entry `ask(reason, size)` with a reason buffer; the
/// reason (NUL-terminated whatever the plugin wrote) when it declines, its
/// note when it accepts (ABI 1.6; `notes`: check_op and check_pattern).
template <typename F> CheckResult askChecker(F &&ask, bool notes = false) {
  char reason[kReasonSize] = {};
  CheckResult result;
  result.supported = ask(reason, sizeof reason);
  reason[kReasonSize - 1] = '\0';
  if (!result.supported || notes)
    result.reason = reason;
  return result;
}

} // namespace

bool LoadedPlugin::takesSymbolicDims() const {
  return desc_->checker->struct_size >= detail::kCheckerFlags &&
         (desc_->checker->flags & TESSERA_CHECKER_SYMBOLIC_DIMS) != 0;
}

bool LoadedPlugin::hasRegionRule() const {
  // keep_region came after the partition hook: read it only when the
  // plugin's table is long enough to hold it.
  return desc_->checker->struct_size >= kCheckerKeepRegion && desc_->checker->keep_region;
}

CheckResult LoadedPlugin::keepRegion(const tessera_graph_t &region) const {
  CheckResult result;
  if (!hasRegionRule()) {
    result.supported = true;
    return result;
  }
  return askChecker([&](char *reason, size_t size) {
    return desc_->checker->keep_region(desc_->state, &region, reason, size);
  });
}

bool LoadedPlugin::hasRegionEstimate() const {
  return desc_->checker->struct_size >= detail::kCheckerEstimate &&
         desc_->checker->estimate_region;
}

RegionEstimate LoadedPlugin::estimateRegion(const tessera_graph_t &region) const {
  RegionEstimate e;
  if (!hasRegionEstimate())
    return e;
  char reason[512] = {};
  const double v = desc_->checker->estimate_region(desc_->state, &region, reason, sizeof reason);
  reason[sizeof reason - 1] = '\0';
  e.speedup = std::isfinite(v) && v > 0 ? v : 0; // NaN, inf, negative: no estimate
  e.reason = reason;
  return e;
}

CheckResult LoadedPlugin::checkOp(const tessera_op_desc_t &op) const {
  CheckResult result;
  std::string opName = bounded(op.op);
  // Only the ops the plugin declared are offered to it.
  if (std::find(ops_.begin(), ops_.end(), opName) == ops_.end()) {
    result.reason = fmt::format("plugin '{}' does not take op '{}'", name_, opName);
    return result;
  }
  return askChecker(
      [&](char *reason, size_t size) {
        return desc_->checker->check_op(desc_->state, &op, reason, size);
      },
      true);
}

CheckResult LoadedPlugin::checkPattern(const std::string &pattern,
                                 std::span<const tessera_op_desc_t *const> ops) const {
  CheckResult result;
  if (!desc_->checker->check_pattern) {
    result.supported = true; // no hook: every match is taken
    return result;
  }
  return askChecker(
      [&](char *reason, size_t size) {
        return desc_->checker->check_pattern(desc_->state, pattern.c_str(), ops.data(),
                                             ops.size(), reason, size);
      },
      true);
}

Expected<std::vector<int64_t>> LoadedPlugin::partition(const tessera_graph_t &graph,
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
Expected<std::unique_ptr<PluginModule>> adoptModule(tessera_module_t *module,
                                              std::shared_ptr<const LoadedPlugin> plugin,
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
  return std::make_unique<PluginModule>(module, std::move(plugin));
}

} // namespace

Expected<std::unique_ptr<PluginModule>> LoadedPlugin::compile(const tessera_graph_t &graph) const {
  tessera_module_t *module = nullptr;
  if (tessera_plugin_status_t *status = desc_->codegen->compile(desc_->state, &graph, &module))
    return Error::format("plugin '{}': compiling '{}' failed: {}", name_, bounded(graph.symbol),
                         takeStatus(status));
  return adoptModule(module, shared_from_this(), "codegen.compile");
}

Expected<std::unique_ptr<PluginModule>> LoadedPlugin::load(std::string_view typeKey,
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

PluginModule::PluginModule(tessera_module_t *module, std::shared_ptr<const LoadedPlugin> plugin)
    : module_(module), plugin_(std::move(plugin)) {
  if (module_)
    typeKey_ = bounded(module_->type_key);
}

PluginModule::~PluginModule() {
  if (module_ && module_->destroy)
    module_->destroy(module_->self);
}

Expected<PluginFunction> PluginModule::function(const std::string &symbol) const {
  tessera_function_t fn{};
  fn.struct_size = sizeof fn;
  if (tessera_plugin_status_t *status = module_->get_function(module_->self, symbol.c_str(), &fn))
    return Error::format("module '{}' of plugin '{}': function '{}': {}", typeKey_, plugin_->name(),
                         symbol, takeStatus(status));
  if (!fn.call)
    return Error::format("module '{}' of plugin '{}': function '{}': get_function gave no call "
                         "entry",
                         typeKey_, plugin_->name(), symbol);
  return PluginFunction(fn, symbol);
}

Expected<std::string> PluginModule::save(std::string prefix) const {
  std::string bytes = std::move(prefix);
  if (tessera_plugin_status_t *status = module_->save(module_->self, &appendToString, &bytes))
    return Error::format("module '{}' of plugin '{}': save failed: {}", typeKey_, plugin_->name(),
                         takeStatus(status));
  return bytes;
}

std::string PluginModule::targetCpu() const {
  if (module_->struct_size < kModuleTargetCpu ||
      !module_->get_target_cpu)
    return {};
  return bounded(module_->get_target_cpu(module_->self));
}

Expected<std::string> PluginModule::source(std::string_view format) const {
  if (!module_->get_source)
    return Error::format("module '{}' of plugin '{}' has no source", typeKey_, plugin_->name());
  std::string text, formatName(format);
  if (tessera_plugin_status_t *status =
          module_->get_source(module_->self, formatName.c_str(), &appendToString, &text))
    return Error::format("module '{}' of plugin '{}': source: {}", typeKey_, plugin_->name(),
                         takeStatus(status));
  return text;
}

Status PluginFunction::call(std::span<const DLTensor *const> args,
                            std::span<const int64_t> symbols,
                            const tessera_call_context_t *context) const {
  if (!fn_.call)
    return Error::format("function '{}': not bound to a module", name_);
  tessera_plugin_status_t *status = nullptr;
  if (context && fn_.struct_size >= detail::kFunctionContext && fn_.call_with_context) {
    status = fn_.call_with_context(fn_.self, args.data(), args.size(),
                                   symbols.empty() ? nullptr : symbols.data(), symbols.size(),
                                   context);
  } else if (symbols.empty()) {
    status = fn_.call(fn_.self, args.data(), args.size());
  } else {
    if (fn_.struct_size < detail::kFunctionSymbolic || !fn_.call_symbolic)
      return Error::format("function '{}' has symbolic dims, but its module gave no "
                           "call_symbolic entry (plugin ABI 1.4)",
                           name_);
    status = fn_.call_symbolic(fn_.self, args.data(), args.size(), symbols.data(), symbols.size());
  }
  if (status)
    return Error::format("function '{}': {}", name_, takeStatus(status));
  return okStatus();
}

} // namespace tessera::plugin
