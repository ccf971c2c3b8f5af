//===- plugin/registry.cpp - Plugin discovery -----------------------------===//
//
// Scans the search path (in the order plugin/registry.h gives), probing and
// loading each candidate (registry_loader.cpp, which also lists every
// rejection reason, discovery's own included), and keeps the process-wide
// registry.
//
//===----------------------------------------------------------------------===//
#include "plugin/registry.h"

#include "plugin/registry_internal.h"
#include "tessera/c/runtime.h"

#include <spdlog/spdlog.h>

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>

namespace fs = std::filesystem;

namespace tessera::plugin {

using detail::probeFile;

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

void LoadedPlugin::warnIfShadowing() const {
  if (shadows_.empty() || warnedShadowing_.exchange(true))
    return;
  spdlog::warn("plugin '{}' {} is {}, which shadows the shipped plugin {}", name_, version_, path_,
               shadows_);
}

std::shared_ptr<const LoadedPlugin> PluginRegistry::find(std::string_view name) const {
  for (const auto &plugin : plugins_)
    if (plugin->name() == name)
      return plugin;
  return nullptr;
}

std::shared_ptr<const LoadedPlugin> PluginRegistry::findFactory(std::string_view typeKey) const {
  for (const auto &plugin : plugins_) {
    const auto &keys = plugin->typeKeys();
    if (std::find(keys.begin(), keys.end(), typeKey) != keys.end())
      return plugin;
  }
  return nullptr;
}

} // namespace tessera::plugin
