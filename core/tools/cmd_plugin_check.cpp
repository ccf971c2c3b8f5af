//===- tools/cmd_plugin_check.cpp - `tessera plugin-check` -----------------===//
//
//   tessera plugin-check PLUGIN.so [--op NAME] [--verbose] [--seed N]
//
// Loads one plugin file (no search path: exactly this file) and runs the
// vendor conformance kit on it (kit/kit.h): one line per case,
// then "N passed, M failed, K declined". Exits 1 when the plugin does not
// load, when any case fails, or when no case passed. Each case runs in a
// child process (plugin::CallIsolation): a case that crashes, aborts or
// hangs (--plugin-timeout) is a FAIL naming the step, and the kit goes on.
//
//===----------------------------------------------------------------------===//
#include "commands.h"
#include "tool_support.h"

#include "kit/kit.h"
#include "plugin/registry.h"

#include <iostream>
#include <memory>

namespace tessera::tools {

Subcommand addPluginCheckCommand(CLI::App &app) {
  struct Options {
    std::string path;
    kit::KitOptions kit;
  };
  auto opts = std::make_shared<Options>();
  auto *cmd = app.add_subcommand(
      "plugin-check", "Run the vendor conformance kit on a plugin: every op and pattern it "
                      "claims, through checker, codegen, save/load and run, against the "
                      "reference interpreter");
  cmd->add_option("plugin", opts->path, "the plugin file (libtessera_NAME.so)")->required();
  cmd->add_option("--op", opts->kit.filter, "only the cases of this op or pattern name");
  cmd->add_flag("--verbose", opts->kit.verbose,
                "also print each case's graph (tessera.graph JSON)");
  addPluginTimeoutOption(*cmd);
  cmd->add_option("--seed", opts->kit.seed, "seed of the random inputs and constants")
      ->capture_default_str();
  return {cmd, [opts] {
            // The file is loaded in a child first: a plugin that crashes or
            // hangs while loading is a clear FAIL, not the end of the tool.
            if (plugin::callIsolation().enabled)
              if (Status probed = plugin::probePluginFile(opts->path); !probed.ok())
                return reportError("tessera plugin-check", probed.error());
            auto plugin = plugin::loadPluginFile(opts->path);
            if (!plugin.ok())
              return reportError("tessera plugin-check", plugin.error());
            kit::KitSummary s = kit::runKit(**plugin, opts->kit, std::cout);
            return s.failed > 0 || s.passed == 0 ? 1 : 0;
          }};
}

} // namespace tessera::tools
