//===- tools/tool_support.h - Shared bits of the command-line tools -*- C++ -*-===//
#pragma once

#include "passes/pass_manager.h"
#include "support/error.h"

#include <CLI/CLI.hpp>

#include <string>

namespace tessera::tools {

/// Adds --log-level to `app`; apply with applyLogLevel() after parsing.
void addLogLevelOption(CLI::App &app, std::string &level);
Status applyLogLevel(const std::string &level);

/// Pass-manager flags shared by tessera-opt and tessera.
struct PipelineFlags {
  std::string passes;
  std::vector<std::string> printAfter;
  bool printAfterAll = false;
  bool timePasses = false;
  bool stats = false;
  bool verifyEach = false;
  void addTo(CLI::App &app, std::string defaultPipeline);
  passes::PassManagerOptions options() const;
};

/// Prints "<tool>: error: <message>" to stderr and returns 1.
int reportError(std::string_view tool, const Error &e);

/// Reads a whole file; the error names the file and the reason.
Expected<std::string> readFile(const std::string &path);

} // namespace tessera::tools
