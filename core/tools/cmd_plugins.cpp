//===- tools/cmd_plugins.cpp - `tessera plugins` ---------------------------===//
//
//   tessera plugins [--verbose]
//
// Lists the plugins that discovery loaded: name, version, ABI, file, the
// ops each claims, its patterns and its module types. --verbose adds the
// search path (with where each entry came from) and every rejected
// candidate with its reason. Always exits 0: a broken plugin is reported,
// not an error of this command.
//
//===----------------------------------------------------------------------===//
#include "commands.h"

#include "plugin/registry.h"

#include <fmt/format.h>

#include <iostream>

namespace tessera::tools {

namespace {

/// `items` joined with ", ", wrapped to `width` columns; continuation lines
/// start with `indent` spaces.
std::string wrapList(const std::vector<std::string> &items, size_t indent, size_t width = 80) {
  if (items.empty())
    return "(none)";
  std::string out, line;
  for (size_t i = 0; i < items.size(); ++i) {
    std::string item = items[i] + (i + 1 < items.size() ? "," : "");
    if (!line.empty() && indent + line.size() + 1 + item.size() > width) {
      out += line + "\n" + std::string(indent, ' ');
      line.clear();
    }
    line += (line.empty() ? "" : " ") + item;
  }
  return out + line;
}

void printPlugin(std::ostream &os, const plugin::LoadedPlugin &p) {
  os << fmt::format("{} {} (plugin ABI {}.{})\n", p.name(), p.version(), p.abiMajor(),
                    p.abiMinor());
  os << "  path: " << p.path() << "\n";
  if (!p.shadows().empty())
    os << "  shadows the shipped plugin: " << p.shadows() << "\n";
  if (!p.description().empty())
    os << "  description: " << p.description() << "\n";
  os << "  ops: " << wrapList(p.ops(), 7) << "\n";
  if (p.patterns().empty()) {
    os << "  patterns: (none)\n";
  } else {
    os << "  patterns:\n";
    for (const auto &[name, text] : p.patterns())
      os << "    " << name << ": " << text << "\n";
  }
  os << "  module types: " << wrapList(p.typeKeys(), 16) << "\n";
  if (p.hasPartitionHook())
    os << "  partition hook: yes\n";
  os << "  symbolic dims: "
     << (p.takesSymbolicDims() ? "taken (a region compiles once for every size)"
                               : "not taken (static ops only)")
     << "\n";
}

void printSearchPath(std::ostream &os, const plugin::PluginRegistry &registry) {
  if (registry.searchPath().empty()) {
    os << "  (empty)\n";
    return;
  }
  size_t index = 0;
  for (const auto &entry : registry.searchPath())
    os << fmt::format("  {}. {}  ({})\n", ++index, entry.path, entry.origin);
}

int listPlugins(bool verbose) {
  const plugin::PluginRegistry &registry = plugin::PluginRegistry::global();
  std::ostream &os = std::cout;
  for (const auto &p : registry.plugins())
    printPlugin(os, *p);

  if (registry.plugins().empty()) {
    os << "no plugins found; searched:\n";
    printSearchPath(os, registry);
  } else if (verbose) {
    os << "search path:\n";
    printSearchPath(os, registry);
  }
  if (verbose && !registry.rejected().empty()) {
    os << "rejected candidates:\n";
    for (const auto &r : registry.rejected())
      os << "  " << r.path << ": " << r.reason << "\n";
  }
  size_t loaded = registry.plugins().size(), rejected = registry.rejected().size();
  os << fmt::format("{} plugin{} loaded", loaded, loaded == 1 ? "" : "s");
  if (rejected > 0)
    os << fmt::format(", {} candidate{} rejected{}", rejected, rejected == 1 ? "" : "s",
                      verbose ? "" : " (tessera plugins --verbose says why)");
  os << "\n";
  return 0;
}

} // namespace

Subcommand addPluginsCommand(CLI::App &app) {
  auto *cmd = app.add_subcommand(
      "plugins", "List the loaded plugins (TESSERA_PLUGIN_PATH, then the installed folder)");
  auto verbose = std::make_shared<bool>(false);
  cmd->add_flag("--verbose,-v", *verbose,
                "Also print the search path and every rejected candidate with its reason");
  return {cmd, [verbose] { return listPlugins(*verbose); }};
}

} // namespace tessera::tools
