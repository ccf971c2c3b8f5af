//===- tools/commands.h - Subcommands of `tessera` kept in their own files -===//
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace tessera::tools {

/// A subcommand added to the app; `run` executes it (call it when the
/// subcommand was given) and returns the exit status.
struct Subcommand {
  CLI::App *app = nullptr;
  std::function<int()> run;
};

/// `tessera plugins [--verbose]` (cmd_plugins.cpp).
Subcommand addPluginsCommand(CLI::App &app);
/// `tessera plugin-check PLUGIN.so ...` (cmd_plugin_check.cpp).
Subcommand addPluginCheckCommand(CLI::App &app);
/// `tessera partition MODEL --target LIST ...` (cmd_partition.cpp).
Subcommand addPartitionCommand(CLI::App &app);
/// `tessera compile MODEL -o OUT.tsr [--target LIST] ...` (cmd_compile.cpp).
Subcommand addCompileCommand(CLI::App &app);
/// `tessera run MODEL.tsr [--inputs ...] ...` (cmd_run.cpp).
Subcommand addRunCommand(CLI::App &app);
/// `tessera inspect MODEL.tsr [--json]` (cmd_inspect.cpp).
Subcommand addInspectCommand(CLI::App &app);

} // namespace tessera::tools
