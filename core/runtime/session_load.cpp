//===- runtime/session_load.cpp - Loading an artifact ---------------------===//
//
// LoadedModel::load checks in this order and stops at the first problem:
// container digests (Artifact), section counts, metadata, plan (parsePlan
// validates it), weights size, plugin module sections, inputs/outputs
// against the metadata, a loaded plugin for every module type key. Only
// then is code touched: the host shared object (memfd + dlopen), its ABI
// version and symbols, and the plugin modules.
//
// Running a loaded model is in session.cpp.
//
//===----------------------------------------------------------------------===//
#include "runtime/session.h"

#include "plugin/registry.h"
#include "runtime/artifact.h"
#include "runtime/cpu_features.h"
#include "runtime/deflate.h"
#include "runtime/host_levels.h"
#include "runtime/host_abi.h"
#include "runtime/session_internal.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <functional>

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace tessera::runtime {

using detail::AlignedBytes;
using detail::HostLibrary;
using detail::stepName;

namespace {

//===----------------------------------------------------------------------===//
// Metadata
//===----------------------------------------------------------------------===//

using nlohmann::json;

Expected<std::vector<TensorInfo>> parseMetadataTensors(const json &meta, const char *key) {
  auto it = meta.find(key);
  if (it == meta.end() || !it->is_array())
    return Error::format("metadata: '{}' must be an array", key);
  std::vector<TensorInfo> out;
  for (size_t i = 0; i < it->size(); ++i) {
    const json &t = (*it)[i];
    const std::string path = fmt::format("metadata.{}[{}]", key, i);
    if (!t.is_object() || !t.contains("name") || !t["name"].is_string() || !t.contains("dtype") ||
        !t["dtype"].is_string() || !t.contains("shape") || !t["shape"].is_array())
      return Error::format("{}: expected {{\"name\", \"dtype\", \"shape\"}}", path);
    TensorInfo info;
    info.name = t["name"].get<std::string>();
    auto dtype = parseDtypeString(t["dtype"].get<std::string>());
    if (!dtype.ok())
      return Error::format("{}.dtype: {}", path, dtype.error().str());
    info.dtype = *dtype;
    for (const json &d : t["shape"]) {
      // A negative dim is a symbol of the plan (runtime/plan.h), which the
      // plan must agree with.
      if (!d.is_number_integer())
        return Error::format("{}.shape: expected integers, got {}", path, t["shape"].dump());
      info.shape.push_back(d.get<int64_t>());
    }
    if (t.contains("sequence_rank")) {
      if (!t["sequence_rank"].is_number_integer())
        return Error::format("{}.sequence_rank: expected an integer", path);
      info.sequence = true;
      info.elementRank = t["sequence_rank"].get<int64_t>();
    }
    out.push_back(std::move(info));
  }
  return out;
}

/// The metadata's inputs/outputs must be the plan's Input/Output buffers.
Status checkAgainstPlan(const std::vector<TensorInfo> &meta, const Plan &plan,
                        const std::vector<uint32_t> &ids, const char *what) {
  if (meta.size() != ids.size())
    return Error::format("the metadata lists {} {}s, the plan {}", meta.size(), what, ids.size());
  for (size_t i = 0; i < meta.size(); ++i) {
    const TensorInfo &p = plan.buffers[ids[i]].info;
    if (meta[i].name != p.name || meta[i].str() != p.str())
      return Error::format("{} {}: the metadata says '{}' {}, the plan '{}' {}", what, i,
                           meta[i].name, meta[i].str(), p.name, p.str());
  }
  return okStatus();
}

//===----------------------------------------------------------------------===//
// Host code
//===----------------------------------------------------------------------===//

/// Whether a loaded object has the path `path` (someone else may have
/// loaded a /proc/self/fd/N and closed N since).
bool isLoadedPath(const std::string &path) {
  struct Probe {
    const std::string *path;
    bool found = false;
  } probe{&path};
  dl_iterate_phdr(
      [](dl_phdr_info *info, size_t, void *data) {
        auto *p = static_cast<Probe *>(data);
        if (info->dlpi_name && *p->path == info->dlpi_name)
          p->found = true;
        return p->found ? 1 : 0;
      },
      &probe);
  return probe.found;
}

/// Refuses code whose metadata object `entry` ({"cpu", "features"}) lists
/// features this CPU lacks; `what(cpu)` names the code, `where` the entry.
Status requireCpuFeatures(const json &entry, std::string_view where,
                          const std::function<std::string(std::string_view cpu)> &what) {
  if (!entry.contains("features"))
    return okStatus();
  const json &list = entry["features"];
  std::vector<std::string> needed;
  if (!list.is_array() ||
      !std::all_of(list.begin(), list.end(), [](const json &f) { return f.is_string(); }))
    return Error::format("metadata: '{}.features' is not a list of strings", where);
  for (const json &f : list)
    needed.push_back(f.get<std::string>());
  const std::string cpu =
      entry.contains("cpu") && entry["cpu"].is_string() ? entry["cpu"].get<std::string>() : "";
  return runtime::requireCpuFeatures(needed, what(cpu));
}

#if defined(__x86_64__)
constexpr std::string_view kArch = "x86_64";
#elif defined(__aarch64__)
constexpr std::string_view kArch = "aarch64";
#endif

/// Refuses host code built for another architecture (metadata "target":
/// triple) before any of it is mapped; the CPU features of its levels are
/// chosen among by chooseHostLevel (runtime/host_levels.h).
Status checkHostTriple(const json &meta) {
#if defined(__x86_64__) || defined(__aarch64__)
  if (!meta.contains("target") || !meta["target"].is_object())
    return okStatus(); // written before the target was recorded
  const json &target = meta["target"];
  if (target.contains("triple") && target["triple"].is_string()) {
    const std::string triple = target["triple"].get<std::string>();
    if (std::string_view(triple).substr(0, triple.find('-')) != kArch)
      return Error::format("host code is for {}; this machine is {}: recompile the model here",
                           triple, kArch)
          .setCode(ErrorCode::FailedPrecondition);
  }
#else
  (void)meta;
#endif
  return okStatus();
}

/// The bytes of the host code level this process runs (`chosen` names its
/// CPU), inflated when compressed; empty when the artifact has none.
Expected<std::string_view> chooseHostCode(const json &meta, std::string_view metaBytes,
                                          const std::vector<Section> &sections,
                                          std::string &inflated, std::string &chosen) {
  TS_ASSIGN_OR_RETURN(std::vector<HostLevel> levels, hostLevels(metaBytes, sections.size()));
  if (levels.empty())
    return std::string_view();
  TS_RETURN_IF_ERROR(checkHostTriple(meta));
  TS_ASSIGN_OR_RETURN(size_t i, chooseHostLevel(levels));
  const HostLevel &level = levels[i];
  chosen = level.cpu;
  std::string_view bytes = sections[level.section].bytes;
  if (!level.zlib) {
    if (level.size && level.size != bytes.size())
      return Error::format("the host code for {} has {} bytes, the metadata says {}", level.cpu,
                           bytes.size(), level.size);
    return bytes;
  }
  auto out = inflateBytes(bytes, level.size);
  if (!out)
    return std::move(out).error().addContext(
        fmt::format("the host code for {} (host code section {})", level.cpu, level.section));
  inflated = std::move(*out);
  return std::string_view(inflated);
}

/// The plugin modules' needs (metadata "regions": {"symbol", "plugin",
/// "cpu", "features"}), checked before any plugin is asked to load one.
Status checkModuleTargets(const json &meta) {
  if (!meta.contains("regions") || !meta["regions"].is_array())
    return okStatus();
  for (const json &r : meta["regions"]) {
    if (!r.is_object() || !r.contains("features"))
      continue;
    auto text = [&r](const char *key) {
      return r.contains(key) && r[key].is_string() ? r[key].get<std::string>() : "?";
    };
    TS_RETURN_IF_ERROR(requireCpuFeatures(r, "regions", [&](std::string_view cpu) {
      return fmt::format("the module of region '{}' (plugin '{}'{})", text("symbol"),
                         text("plugin"), cpu.empty() ? "" : fmt::format(", compiled for {}", cpu));
    }));
  }
  return okStatus();
}

Status loadHostCode(std::string_view bytes, HostLibrary &lib) {
  lib.fd = memfd_create("tessera-host-code", MFD_CLOEXEC);
  if (lib.fd < 0)
    return Error::format("cannot load the host code: memfd_create failed ({})",
                         std::strerror(errno));
  size_t written = 0;
  while (written < bytes.size()) {
    ssize_t n = ::write(lib.fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return Error::format("cannot load the host code: writing the memfd failed ({})",
                           std::strerror(errno));
    written += size_t(n);
  }
  std::string path = fmt::format("/proc/self/fd/{}", lib.fd);
  while (isLoadedPath(path)) {
    // Move to a higher number that names no loaded object.
    int moved = fcntl(lib.fd, F_DUPFD_CLOEXEC, lib.fd + 1);
    if (moved < 0)
      return Error::format("cannot load the host code: fcntl(F_DUPFD) failed ({})",
                           std::strerror(errno));
    ::close(lib.fd);
    lib.fd = moved;
    path = fmt::format("/proc/self/fd/{}", lib.fd);
  }
  dlerror();
  lib.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib.handle) {
    const char *err = dlerror();
    return Error::format("cannot load the host code: {}", err ? err : "dlopen failed");
  }
  const auto *version =
      static_cast<const uint32_t *>(dlsym(lib.handle, "tessera_host_abi_version"));
  if (!version)
    return Error("the host code has no 'tessera_host_abi_version' symbol (not built by "
                 "Tessera's host code generator)");
  if (*version != TESSERA_HOST_ABI_VERSION)
    return Error::format("the host code speaks host ABI version {}, this runtime version {} "
                         "(recompile the model with this Tessera)",
                         *version, TESSERA_HOST_ABI_VERSION);
  return okStatus();
}

/// "/a (TESSERA_PLUGIN_PATH entry 1), /b (installed plugin folder)" plus
/// the rejected candidates whose file name mentions `plugin`.
std::string describeSearch(const plugin::PluginRegistry &registry, const std::string &plugin) {
  std::vector<std::string> entries;
  for (const auto &e : registry.searchPath())
    entries.push_back(fmt::format("{} ({})", e.path, e.origin));
  std::string out = entries.empty() ? "(empty)" : fmt::format("{}", fmt::join(entries, ", "));
  out += " (TESSERA_PLUGIN_PATH adds folders)";
  for (const auto &r : registry.rejected())
    if (!plugin.empty() &&
        std::filesystem::path(r.path).filename().string().find(plugin) != std::string::npos)
      out += fmt::format("; rejected candidate {}: {}", r.path, r.reason);
  return out;
}

} // namespace

//===----------------------------------------------------------------------===//
// LoadedModel
//===----------------------------------------------------------------------===//

LoadedModel::LoadedModel() : impl_(std::make_unique<LoadedModelImpl>()) {}
LoadedModel::~LoadedModel() = default;

const std::vector<TensorInfo> &LoadedModel::inputs() const {
  return impl_->inputs;
}
const std::vector<TensorInfo> &LoadedModel::outputs() const {
  return impl_->outputs;
}
const std::string &LoadedModel::metadataJson() const {
  return impl_->metadataJson;
}
const Plan &LoadedModel::plan() const {
  return impl_->plan;
}
const std::string &LoadedModel::display() const {
  return impl_->display;
}
const std::string &LoadedModel::hostCpu() const {
  return impl_->hostCpu;
}

namespace {

Expected<std::shared_ptr<const LoadedModel>>
loadVerified(const Artifact &artifact, std::shared_ptr<LoadedModel> model, LoadedModelImpl &m) {
  auto one = [&](SectionKind kind, bool required) -> Expected<std::string_view> {
    auto s = artifact.sectionsOf(kind);
    if (s.size() > 1)
      return Error::format("{} {} sections (at most one)", s.size(),
                           sectionKindName(uint32_t(kind)));
    if (s.empty()) {
      if (required)
        return Error::format("no {} section", sectionKindName(uint32_t(kind)));
      return std::string_view();
    }
    return s[0].bytes;
  };

  // 1. Metadata.
  TS_ASSIGN_OR_RETURN(std::string_view metaBytes, one(SectionKind::Metadata, true));
  m.metadataJson = std::string(metaBytes);
  json meta = json::parse(metaBytes, nullptr, /*allow_exceptions=*/false);
  if (meta.is_discarded() || !meta.is_object())
    return Error("metadata: not a JSON object");
  if (!meta.contains("format") || !meta["format"].is_number_integer())
    return Error("metadata: missing 'format'");
  if (meta["format"].get<int64_t>() != 1)
    return Error::format("metadata format {}, this runtime reads format 1",
                         meta["format"].get<int64_t>());
  TS_ASSIGN_OR_RETURN(m.inputs, parseMetadataTensors(meta, "inputs"));
  TS_ASSIGN_OR_RETURN(m.outputs, parseMetadataTensors(meta, "outputs"));

  // 2. The plan and what it refers to.
  TS_ASSIGN_OR_RETURN(std::string_view planBytes, one(SectionKind::Plan, true));
  TS_ASSIGN_OR_RETURN(m.plan, parsePlan(planBytes));
  const Plan &plan = m.plan;
  TS_ASSIGN_OR_RETURN(std::string_view weights, one(SectionKind::Weights, false));
  if (weights.size() != plan.weightsBytes)
    return Error::format("the weights section has {} bytes, the plan needs {}", weights.size(),
                         plan.weightsBytes);
  TS_RETURN_IF_ERROR(checkAgainstPlan(m.inputs, plan, plan.inputs, "input"));
  TS_RETURN_IF_ERROR(checkAgainstPlan(m.outputs, plan, plan.outputs, "output"));

  std::vector<ExternalModule> sections;
  for (const Section &s : artifact.sectionsOf(SectionKind::ExternalModule)) {
    auto unpacked = unpackExternalModule(s.bytes);
    if (!unpacked.ok())
      return Error::format("external module section {}: {}", sections.size(),
                           unpacked.error().str());
    sections.push_back(*unpacked);
  }
  for (size_t i = 0; i < plan.modules.size(); ++i) {
    const ModuleRef &ref = plan.modules[i];
    if (ref.section >= sections.size())
      return Error::format("module {} (type_key '{}' of plugin '{}') is in external module "
                           "section {}, the artifact has {}",
                           i, ref.typeKey, ref.plugin, ref.section, sections.size());
    if (sections[ref.section].typeKey != ref.typeKey)
      return Error::format("module {}: external module section {} holds type_key '{}', the plan "
                           "says '{}'",
                           i, ref.section, sections[ref.section].typeKey, ref.typeKey);
  }
  std::string inflated;
  TS_ASSIGN_OR_RETURN(std::string_view hostCode,
                      chooseHostCode(meta, metaBytes, artifact.sectionsOf(SectionKind::HostCode),
                                     inflated, m.hostCpu));
  const bool hasHostSteps = std::any_of(plan.steps.begin(), plan.steps.end(),
                                        [](const Step &s) { return s.kind == StepKind::Host; });
  if (hasHostSteps && hostCode.empty())
    return Error("the plan has host steps but the artifact has no host code section");
  TS_RETURN_IF_ERROR(checkModuleTargets(meta));

  // 3. A plugin for every module (discovering plugins only when needed).
  std::vector<std::shared_ptr<const plugin::LoadedPlugin>> factories;
  if (!plan.modules.empty()) {
    const plugin::PluginRegistry &registry = plugin::PluginRegistry::global();
    for (const ModuleRef &ref : plan.modules) {
      auto p = registry.findFactory(ref.typeKey);
      if (!p) {
        const std::string name = ref.plugin.empty() ? ref.typeKey : ref.plugin;
        if (auto loaded = registry.find(name))
          return Error::format("needs plugin '{}' (module type_key '{}'); the loaded plugin '{}' "
                               "{} ({}) has no module factory '{}' (it has: {})",
                               name, ref.typeKey, name, loaded->version(), loaded->path(),
                               ref.typeKey, fmt::join(loaded->typeKeys(), ", "))
              .setCode(ErrorCode::FailedPrecondition);
        return Error::format("needs plugin '{}' (module type_key '{}') which is not loaded; "
                             "search path: {}",
                             name, ref.typeKey, describeSearch(registry, name))
            .setCode(ErrorCode::FailedPrecondition);
      }
      p->warnIfShadowing();
      if (Status v = p->checkModuleVersion(ref.pluginVersion); !v.ok())
        return std::move(v).error();
      factories.push_back(std::move(p));
    }
  }

  // 4. Code: weights, host code, plugin modules.
  m.weights = AlignedBytes::make(weights.size());
  if (!m.weights.ptr)
    return Error::format("out of memory for the weights ({} bytes)", weights.size());
  if (!weights.empty())
    std::memcpy(m.weights.data(), weights.data(), weights.size());

  m.hostFns.assign(plan.steps.size(), nullptr);
  if (!hostCode.empty()) {
    TS_RETURN_IF_ERROR(loadHostCode(hostCode, m.host));
    for (size_t s = 0; s < plan.steps.size(); ++s) {
      const Step &step = plan.steps[s];
      if (step.kind != StepKind::Host)
        continue;
      void *sym = dlsym(m.host.handle, step.symbol.c_str());
      if (!sym)
        return Error::format("{}: the host code has no symbol '{}'", stepName(plan, s),
                             step.symbol);
      m.hostFns[s] = reinterpret_cast<tessera_host_fn_t>(sym);
    }
  }

  for (size_t i = 0; i < plan.modules.size(); ++i) {
    const ModuleRef &ref = plan.modules[i];
    auto module = factories[i]->load(ref.typeKey, sections[ref.section].bytes);
    if (!module.ok())
      return Error::format("module {} (type_key '{}'): {}", i, ref.typeKey, module.error().str());
    m.modules.push_back(std::move(*module));
  }
  m.functions.resize(plan.steps.size());
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const Step &step = plan.steps[s];
    if (step.kind != StepKind::External)
      continue;
    auto fn = m.modules[size_t(step.module)]->function(step.symbol);
    if (!fn.ok())
      return Error::format("{}: {}", stepName(plan, s), fn.error().str())
          .setCode(fn.error().code());
    m.functions[s] = std::move(*fn);
  }
  return std::shared_ptr<const LoadedModel>(std::move(model));
}

} // namespace

Expected<std::shared_ptr<const LoadedModel>> LoadedModel::load(const std::string &path) {
  auto artifact = Artifact::readFile(path);
  if (!artifact.ok())
    return std::move(artifact).error(); // names the file
  std::shared_ptr<LoadedModel> model(new LoadedModel());
  model->impl_->display = path;
  auto loaded = loadVerified(*artifact, model, *model->impl_);
  if (!loaded.ok())
    return Error::format("{}: {}", path, loaded.error().str()).setCode(loaded.error().code());
  return loaded;
}

Expected<std::shared_ptr<const LoadedModel>> LoadedModel::load(std::string bytes,
                                                               const std::string &display) {
  auto artifact = Artifact::fromBytes(std::move(bytes), display);
  if (!artifact.ok())
    return std::move(artifact).error();
  std::shared_ptr<LoadedModel> model(new LoadedModel());
  model->impl_->display = display;
  auto loaded = loadVerified(*artifact, model, *model->impl_);
  if (!loaded.ok())
    return Error::format("{}: {}", display, loaded.error().str())
        .setCode(loaded.error().code());
  return loaded;
}

} // namespace tessera::runtime
