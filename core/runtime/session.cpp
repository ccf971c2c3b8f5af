//===- runtime/session.cpp - Loading and running an artifact --------------===//
//
// LoadedModel::load checks in this order and stops at the first problem:
// container digests (Artifact), section counts, metadata, plan (parsePlan
// validates it), weights size, plugin module sections, inputs/outputs
// against the metadata, a loaded plugin for every module type key. Only
// then is code touched: the host shared object (memfd + dlopen), its ABI
// version and symbols, and the plugin modules.
//
// A Session prebuilds, per step, the argument array a call takes (void*
// data pointers for host steps and copies, DLTensors plus a pointer array
// for plugin functions). Binding an input or output patches the slots that
// refer to its buffer, so run() is a loop of calls.
//
//===----------------------------------------------------------------------===//
#include "runtime/session.h"

#include "plugin/registry.h"
#include "runtime/artifact.h"
#include "runtime/host_abi.h"
#include "runtime/cpu_features.h"
#include "runtime/thread_pool.h"
#include "tessera/c/dtype.h"

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
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace tessera::runtime {

namespace {

/// 64-byte aligned, zero-filled bytes.
struct AlignedBytes {
  struct Free {
    void operator()(void *p) const { std::free(p); }
  };
  std::unique_ptr<void, Free> ptr;

  static AlignedBytes make(uint64_t size) {
    uint64_t n =
        std::max<uint64_t>((size + kBufferAlignment - 1) / kBufferAlignment, 1) * kBufferAlignment;
    AlignedBytes b;
    b.ptr.reset(std::aligned_alloc(kBufferAlignment, n));
    if (b.ptr)
      std::memset(b.ptr.get(), 0, n);
    return b;
  }
  uint8_t *data() const { return static_cast<uint8_t *>(ptr.get()); }
};

std::string stepName(const Plan &plan, size_t s) {
  const std::string &label = plan.steps[s].label;
  return label.empty() ? fmt::format("step {}", s) : fmt::format("step {} ({})", s, label);
}

/// "input 'x'" (or "input 0" for a nameless one).
std::string tensorName(const char *what, const TensorInfo &info, size_t index) {
  return info.name.empty() ? fmt::format("{} {}", what, index)
                           : fmt::format("{} '{}'", what, info.name);
}

const char *hostErrorName(int32_t rc) {
  switch (rc) {
  case TESSERA_HOST_ERR_INVALID: return "TESSERA_HOST_ERR_INVALID: an index or value out of range";
  case TESSERA_HOST_ERR_INTERNAL: return "TESSERA_HOST_ERR_INTERNAL";
  default: return "unknown error code";
  }
}

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
      if (!d.is_number_integer() || d.get<int64_t>() < 0)
        return Error::format("{}.shape: expected non-negative integers, got {}", path,
                             t["shape"].dump());
      info.shape.push_back(d.get<int64_t>());
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

/// dlopen'ed host code and the memfd it was loaded from, closed at the end.
///
/// The fd stays open while the library is loaded: dlopen finds an already
/// loaded object by its path string before it looks at the file, so had the
/// fd been closed, the next model's memfd could get the same number, and
/// dlopen("/proc/self/fd/N") would hand back this model's code.
struct HostLibrary {
  void *handle = nullptr;
  int fd = -1;
  HostLibrary() = default;
  HostLibrary(const HostLibrary &) = delete;
  HostLibrary &operator=(const HostLibrary &) = delete;
  ~HostLibrary() {
    if (handle)
      dlclose(handle);
    if (fd >= 0)
      ::close(fd);
  }
};

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
  std::vector<std::string> missing = missingCpuFeatures(needed);
  if (missing.empty())
    return okStatus();
  const std::string cpu =
      entry.contains("cpu") && entry["cpu"].is_string() ? entry["cpu"].get<std::string>() : "";
  return Error::format("{} needs {}; this CPU ({}) lacks {}; recompile with --mcpu={} or for "
                       "this machine (--mcpu=native)",
                       what(cpu), fmt::join(missing, ", "), cpuBrand(),
                       missing.size() == 1 ? "it" : "them", x86Level());
}

#if defined(__x86_64__)
constexpr std::string_view kArch = "x86_64";
#elif defined(__aarch64__)
constexpr std::string_view kArch = "aarch64";
#endif

/// Refuses host code built for another architecture, or for CPU features
/// this CPU lacks (metadata "target": triple and features), before any of
/// it is mapped: it would die of SIGILL in the middle of a run.
Status checkHostTarget(const json &meta) {
  if (!meta.contains("target") || !meta["target"].is_object())
    return okStatus(); // written before the target was recorded
  const json &target = meta["target"];
#if defined(__x86_64__) || defined(__aarch64__)
  if (target.contains("triple") && target["triple"].is_string()) {
    const std::string triple = target["triple"].get<std::string>();
    if (std::string_view(triple).substr(0, triple.find('-')) != kArch)
      return Error::format("host code is for {}; this machine is {}: recompile the model here",
                           triple, kArch);
  }
#endif
  return requireCpuFeatures(target, "target", [](std::string_view cpu) {
    return cpu.empty() ? std::string("host code") : fmt::format("host code (compiled for {})", cpu);
  });
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

class LoadedModelImpl {
public:
  ~LoadedModelImpl() {
    // Functions before their modules, modules before the host code.
    functions.clear();
    modules.clear();
  }

  std::string display, metadataJson;
  std::vector<TensorInfo> inputs, outputs;
  Plan plan;
  AlignedBytes weights;
  HostLibrary host;
  std::vector<tessera_host_fn_t> hostFns;               // per step (null unless Host)
  std::vector<std::unique_ptr<plugin::Module>> modules; // per plan module
  std::vector<plugin::Function> functions;              // per step (unbound unless External)
};

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
  TS_ASSIGN_OR_RETURN(std::string_view hostCode, one(SectionKind::HostCode, false));
  const bool hasHostSteps = std::any_of(plan.steps.begin(), plan.steps.end(),
                                        [](const Step &s) { return s.kind == StepKind::Host; });
  if (hasHostSteps && hostCode.empty())
    return Error("the plan has host steps but the artifact has no host code section");
  if (!hostCode.empty())
    TS_RETURN_IF_ERROR(checkHostTarget(meta));
  TS_RETURN_IF_ERROR(checkModuleTargets(meta));

  // 3. A plugin for every module (discovering plugins only when needed).
  std::vector<std::shared_ptr<const plugin::Plugin>> factories;
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
                               ref.typeKey, fmt::join(loaded->typeKeys(), ", "));
        return Error::format("needs plugin '{}' (module type_key '{}') which is not loaded; "
                             "search path: {}",
                             name, ref.typeKey, describeSearch(registry, name));
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
      return Error::format("{}: {}", stepName(plan, s), fn.error().str());
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
    return Error::format("{}: {}", path, loaded.error().str());
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
    return Error::format("{}: {}", display, loaded.error().str());
  return loaded;
}

//===----------------------------------------------------------------------===//
// Session
//===----------------------------------------------------------------------===//

namespace {

struct StepExec {
  StepKind kind;
  tessera_host_fn_t host;
  const plugin::Function *fn;
  uint32_t first, count; // into hostArgs (Host, Copy) or dlPtrs (External)
  uint64_t copyBytes;
};

/// Where a bound buffer's pointer goes.
struct Slots {
  std::vector<size_t> host; // into hostArgs
  std::vector<size_t> dl;   // into dlArgs
};

} // namespace

class SessionImpl {
public:
  SessionImpl(std::shared_ptr<const LoadedModel> m, int32_t threads)
      : model(std::move(m)), pool(threads) {}

  Status build();
  Status bind(const char *what, const TensorInfo &info, size_t index, const DLTensor &t,
              void *&out) const;
  void patch(const Slots &slots, void *ptr);

  std::shared_ptr<const LoadedModel> model;
  ThreadPool pool;
  AlignedBytes arena, outputStorage;
  std::vector<void *> bufferPtr; // per buffer: its data at creation
  std::vector<StepExec> steps;
  std::vector<void *> hostArgs;
  std::vector<DLTensor> dlArgs;
  std::vector<const DLTensor *> dlPtrs;
  std::vector<Slots> inputSlots, outputSlots;
  std::vector<bool> inputSet;
  std::vector<void *> outputOwn; // session storage of each output
  std::vector<DLTensor> outputViews;
};

Status SessionImpl::build() {
  const LoadedModelImpl &m = *model->impl_;
  const Plan &plan = m.plan;
  arena = AlignedBytes::make(plan.arenaBytes);
  uint64_t outBytes = 0;
  std::vector<uint64_t> outOffset;
  for (uint32_t id : plan.outputs) {
    outOffset.push_back(outBytes);
    outBytes += (plan.buffers[id].info.bytes() + kBufferAlignment - 1) / kBufferAlignment *
                kBufferAlignment;
  }
  outputStorage = AlignedBytes::make(outBytes);
  if (!arena.ptr || !outputStorage.ptr)
    return Error::format("out of memory for the session ({} bytes of activations, {} of outputs)",
                         plan.arenaBytes, outBytes);

  bufferPtr.assign(plan.buffers.size(), nullptr);
  for (size_t b = 0; b < plan.buffers.size(); ++b) {
    const Buffer &buf = plan.buffers[b];
    switch (buf.kind) {
    case BufferKind::Input: break; // bound by setInput
    case BufferKind::Output: bufferPtr[b] = outputStorage.data() + outOffset[buf.index]; break;
    case BufferKind::Constant: bufferPtr[b] = m.weights.data() + buf.offset; break;
    case BufferKind::Activation: bufferPtr[b] = arena.data() + buf.offset; break;
    }
  }

  inputSlots.resize(plan.inputs.size());
  outputSlots.resize(plan.outputs.size());
  inputSet.assign(plan.inputs.size(), false);
  auto record = [&](uint32_t b, bool host, size_t slot) {
    const Buffer &buf = plan.buffers[b];
    Slots *slots = buf.kind == BufferKind::Input    ? &inputSlots[buf.index]
                   : buf.kind == BufferKind::Output ? &outputSlots[buf.index]
                                                    : nullptr;
    if (slots)
      (host ? slots->host : slots->dl).push_back(slot);
  };

  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const Step &step = plan.steps[s];
    StepExec e{step.kind, m.hostFns[s], nullptr, 0, uint32_t(step.args.size()), 0};
    if (step.kind == StepKind::External) {
      e.fn = &m.functions[s];
      e.first = uint32_t(dlArgs.size());
      for (uint32_t b : step.args) {
        const TensorInfo &info = plan.buffers[b].info;
        DLTensor t{};
        t.data = bufferPtr[b];
        t.device = {kDLCPU, 0};
        t.ndim = int32_t(info.shape.size());
        t.dtype = info.dtype;
        t.shape = const_cast<int64_t *>(info.shape.data()); // the model's, immutable
        record(b, false, dlArgs.size());
        dlArgs.push_back(t);
      }
    } else {
      e.first = uint32_t(hostArgs.size());
      for (uint32_t b : step.args) {
        record(b, true, hostArgs.size());
        hostArgs.push_back(bufferPtr[b]);
      }
      if (step.kind == StepKind::Copy)
        e.copyBytes = plan.buffers[step.args[0]].info.bytes();
    }
    steps.push_back(e);
  }
  for (const DLTensor &t : dlArgs)
    dlPtrs.push_back(&t); // dlArgs no longer grows

  outputOwn.resize(plan.outputs.size());
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    const TensorInfo &info = plan.buffers[plan.outputs[i]].info;
    outputOwn[i] = bufferPtr[plan.outputs[i]];
    DLTensor t{};
    t.data = outputOwn[i];
    t.device = {kDLCPU, 0};
    t.ndim = int32_t(info.shape.size());
    t.dtype = info.dtype;
    t.shape = const_cast<int64_t *>(info.shape.data());
    outputViews.push_back(t);
  }
  return okStatus();
}

Status SessionImpl::bind(const char *what, const TensorInfo &info, size_t index, const DLTensor &t,
                         void *&out) const {
  const std::string who = tensorName(what, info, index);
  if (t.device.device_type != kDLCPU)
    return Error::format("{}: expected a CPU tensor (device type {}), got device type {}", who,
                         int(kDLCPU), int(t.device.device_type));
  if (t.ndim < 0 || (t.ndim > 0 && !t.shape))
    return Error::format("{}: invalid DLTensor (ndim {}, shape {})", who, t.ndim,
                         t.shape ? "set" : "null");
  TensorInfo given;
  given.dtype = t.dtype;
  given.shape.assign(t.shape, t.shape + t.ndim);
  if (t.dtype.code != info.dtype.code || t.dtype.bits != info.dtype.bits ||
      t.dtype.lanes != info.dtype.lanes || given.shape != info.shape)
    return Error::format("{}: expected {}, got {}", who, info.str(), given.str());
  if (t.strides) {
    std::vector<int64_t> compact(info.shape.size(), 1);
    for (size_t d = info.shape.size(); d-- > 1;)
      compact[d - 1] = compact[d] * info.shape[d];
    for (size_t d = 0; d < info.shape.size(); ++d)
      if (info.shape[d] > 1 && t.strides[d] != compact[d])
        return Error::format("{}: expected dense row-major strides [{}], got [{}]", who,
                             fmt::join(compact, ", "),
                             fmt::join(t.strides, t.strides + t.ndim, ", "));
  }
  auto *data = static_cast<uint8_t *>(t.data);
  if (!data && info.bytes() > 0)
    return Error::format("{}: data is null", who);
  const uint64_t elem = info.dtype.code == TESSERA_DL_BOOL ? 1 : info.dtype.bits / 8;
  if (data && elem > 1 && (reinterpret_cast<uintptr_t>(data) + t.byte_offset) % elem != 0)
    return Error::format("{}: data + byte_offset ({} + {}) is not aligned to the element size "
                         "({} bytes)",
                         who, static_cast<const void *>(data), t.byte_offset, elem);
  out = data ? data + t.byte_offset : nullptr;
  return okStatus();
}

void SessionImpl::patch(const Slots &slots, void *ptr) {
  for (size_t i : slots.host)
    hostArgs[i] = ptr;
  for (size_t i : slots.dl)
    dlArgs[i].data = ptr;
}

Session::Session() = default;
Session::~Session() = default;

Expected<std::unique_ptr<Session>> Session::create(std::shared_ptr<const LoadedModel> model,
                                                   const SessionOptions &options) {
  if (!model)
    return Error("no model");
  std::unique_ptr<Session> s(new Session());
  s->impl_ = std::make_unique<SessionImpl>(std::move(model), resolveNumThreads(options.numThreads));
  TS_RETURN_IF_ERROR(s->impl_->build());
  return s;
}

Status Session::setInput(size_t index, const DLTensor &tensor) {
  const auto &inputs = impl_->model->inputs();
  if (index >= inputs.size())
    return Error::format("input index {} out of range (the model has {} input{})", index,
                         inputs.size(), inputs.size() == 1 ? "" : "s");
  void *ptr = nullptr;
  TS_RETURN_IF_ERROR(impl_->bind("input", inputs[index], index, tensor, ptr));
  impl_->patch(impl_->inputSlots[index], ptr);
  impl_->inputSet[index] = true;
  return okStatus();
}

Status Session::setInput(std::string_view name, const DLTensor &tensor) {
  const auto &inputs = impl_->model->inputs();
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].name == name)
      return setInput(i, tensor);
  std::vector<std::string> names;
  for (const auto &t : inputs)
    names.push_back("'" + t.name + "'");
  return Error::format("no input named '{}' (the model's inputs: {})", name,
                       names.empty() ? std::string("none")
                                     : fmt::format("{}", fmt::join(names, ", ")));
}

Status Session::setOutput(size_t index, const DLTensor *tensor) {
  SessionImpl &s = *impl_;
  const auto &outputs = s.model->outputs();
  if (index >= outputs.size())
    return Error::format("output index {} out of range (the model has {} output{})", index,
                         outputs.size(), outputs.size() == 1 ? "" : "s");
  void *ptr = s.outputOwn[index];
  if (tensor)
    TS_RETURN_IF_ERROR(s.bind("output", outputs[index], index, *tensor, ptr));
  s.patch(s.outputSlots[index], ptr);
  s.outputViews[index].data = ptr;
  return okStatus();
}

Status Session::run() {
  SessionImpl &s = *impl_;
  for (size_t i = 0; i < s.inputSet.size(); ++i)
    if (!s.inputSet[i])
      return Error::format("{} was not set", tensorName("input", s.model->inputs()[i], i));
  const tessera_host_ctx_t *ctx = s.pool.ctx();
  const OmpThreadsScope threads(s.pool.numThreads()); // for plugins' OpenMP code
  void **hostArgs = s.hostArgs.data();
  const DLTensor *const *dlPtrs = s.dlPtrs.data();
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const StepExec &e = s.steps[i];
    switch (e.kind) {
    case StepKind::Host:
      if (int32_t rc = e.host(hostArgs + e.first, ctx)) {
        const Plan &plan = s.model->plan();
        return Error::format("{}: host function '{}' failed with code {} ({})", stepName(plan, i),
                             plan.steps[i].symbol, rc, hostErrorName(rc));
      }
      break;
    case StepKind::External: {
      Status st = e.fn->call(std::span<const DLTensor *const>(dlPtrs + e.first, e.count));
      if (!st.ok())
        return Error::format("{}: {}", stepName(s.model->plan(), i), st.error().str());
      break;
    }
    case StepKind::Copy:
      if (e.copyBytes > 0 && hostArgs[e.first] != hostArgs[e.first + 1])
        std::memmove(hostArgs[e.first + 1], hostArgs[e.first], e.copyBytes);
      break;
    }
  }
  return okStatus();
}

Expected<const DLTensor *> Session::output(size_t index) const {
  if (index >= impl_->outputViews.size())
    return Error::format("output index {} out of range (the model has {} output{})", index,
                         impl_->outputViews.size(), impl_->outputViews.size() == 1 ? "" : "s");
  return &impl_->outputViews[index];
}

const LoadedModel &Session::model() const {
  return *impl_->model;
}
int32_t Session::numThreads() const {
  return impl_->pool.numThreads();
}

} // namespace tessera::runtime
