//===- tools/placement_options.h - --placement for compile and partition -*- C++ -*-===//
//
// The placement options `tessera compile` and `tessera partition` share
// (compile/placement.h): their flags and the request they make.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compile/placement.h"

#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>
#include <string>

namespace tessera::tools {

struct PlacementArgs {
  std::string mode = "priority", file;
  double tuneBudget = 120;
  int tuneThreads = 0;
};

/// --placement, --placement-file, --tune-budget, --tune-threads.
inline void addPlacementOptions(CLI::App &cmd, const std::shared_ptr<PlacementArgs> &args) {
  cmd.add_option("--placement", args->mode,
                 "How the targets share the model: 'priority' (each op to the first target "
                 "that takes it) or 'measure' (each region and each candidate partition "
                 "compiled and timed on this machine; the fastest wins; see "
                 "docs/design/0015-placement-by-measurement.md)")
      ->capture_default_str();
  cmd.add_option("--placement-file", args->file,
                 "With --placement measure: write the decision to FILE; alone: replay FILE "
                 "without measuring (the same artifact)");
  cmd.add_option("--tune-budget", args->tuneBudget,
                 "Seconds --placement measure may spend; regions and candidates past it "
                 "follow the priority order")
      ->capture_default_str();
  cmd.add_option("--tune-threads", args->tuneThreads,
                 "Threads --placement measure times with: those the artifact will run with "
                 "(0: every core, the runtime's default); a region's verdict may differ between "
                 "1 thread and many")
      ->capture_default_str();
}

/// The request the flags make; its progress lines go to stdout.
inline compile::PlacementRequest placementRequest(const PlacementArgs &a) {
  compile::PlacementRequest request;
  request.mode = a.mode;
  request.file = a.file;
  request.budgetSeconds = a.tuneBudget;
  request.threads = a.tuneThreads;
  request.progress = [](std::string_view line) {
    std::cout << "  placement: " << line << std::endl;
  };
  return request;
}

} // namespace tessera::tools
