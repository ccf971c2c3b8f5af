//===- tools/cmd_partition.cpp - `tessera partition` -----------------------===//
// Placeholder until partitioning lands (issue 5).
#include "commands.h"

#include <iostream>

namespace tessera::tools {

Subcommand addPartitionCommand(CLI::App &app) {
  auto *cmd = app.add_subcommand("partition", "Partition a model among plugins and report");
  return {cmd, [] {
            std::cerr << "tessera partition: not implemented yet\n";
            return 1;
          }};
}

} // namespace tessera::tools
