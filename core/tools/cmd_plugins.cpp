//===- tools/cmd_plugins.cpp - `tessera plugins` ---------------------------===//
// Placeholder until the plugin loader lands (issue 4).
#include "commands.h"

#include <iostream>

namespace tessera::tools {

Subcommand addPluginsCommand(CLI::App &app) {
  auto *cmd = app.add_subcommand("plugins", "List the loaded plugins");
  return {cmd, [] {
            std::cerr << "tessera plugins: not implemented yet\n";
            return 1;
          }};
}

} // namespace tessera::tools
