//===- tools/cmd_plugin_check.cpp - `tessera plugin-check` -----------------===//
// Placeholder until the vendor conformance kit lands (issue 4).
#include "commands.h"

#include <iostream>

namespace tessera::tools {

Subcommand addPluginCheckCommand(CLI::App &app) {
  auto *cmd = app.add_subcommand("plugin-check", "Run the vendor conformance kit on a plugin");
  return {cmd, [] {
            std::cerr << "tessera plugin-check: not implemented yet\n";
            return 1;
          }};
}

} // namespace tessera::tools
