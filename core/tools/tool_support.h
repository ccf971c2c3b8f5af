//===- tools/tool_support.h - Shared bits of the command-line tools -*- C++ -*-===//
#pragma once

#include "frontend/onnx/importer.h"
#include "ir/module.h"
#include "partition/partition.h"
#include "passes/pass_manager.h"
#include "support/error.h"

#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

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

/// Adds `--target a,b` (plugins to partition for, in priority order).
void addTargetOption(CLI::App &app, std::vector<std::string> &targets);

/// Adds --on-host NODE[,NODE...] (repeatable): node names no target is
/// offered, kept on the host (partition::PartitionOptions::hostNodes).
void addOnHostOption(CLI::App &app, std::vector<std::string> &nodes);

/// Adds --plugin-timeout SECONDS: how long one plugin call (a checker call,
/// one codegen) may run in its child process before it is killed and
/// reported (plugin::CallIsolation). Applied as it is parsed.
void addPluginTimeoutOption(CLI::App &app);

/// The partition state over `targets` from the process's plugin registry
/// (null when `targets` is empty); an unknown name is an error listing the
/// loaded plugins.
Expected<std::unique_ptr<partition::PartitionState>>
makePartitionState(const std::vector<std::string> &targets);

/// Runs a command's body (which returns the exit status) in one child
/// process when plugin calls are isolated (plugin::CallIsolation), where
/// the plugin calls only mark what they do: a plugin that crashes, aborts,
/// exits or hangs ends the child, and the tool prints "<tool>: error:
/// <where>: plugin 'acme' crashed (SIGSEGV) in check_op for conv2d 'c1'" and
/// returns 1. One fork for the whole command (docs/design/0011).
int runGuarded(std::string_view tool, const std::string &where, const std::function<int()> &body);

/// Prints "<tool>: error: <message>" to stderr and returns 1.
int reportError(std::string_view tool, const Error &e);

/// Writes `text` to `path` (replacing it); "cannot write 'PATH'" on failure.
Status writeText(const std::string &path, const std::string &text);

/// Every registered pass (partition::allPasses()) with its summary and the
/// statistics it counts: `tessera passes`, `tessera-opt --list-passes`.
void printPasses(std::ostream &out);

/// A model file: ONNX (by its .onnx suffix; `inputShapes` are NAME=D0,D1,...
/// specs for its symbolic dims) or text IR (then `inputShapes` must be
/// empty); frontend::loadModelFile after parsing the specs.
Expected<ir::Module> loadModel(const std::string &path, const std::vector<std::string> &inputShapes);

/// Reads a whole file; the error names the file and the reason.
Expected<std::string> readFile(const std::string &path);

} // namespace tessera::tools
