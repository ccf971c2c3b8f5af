//===- tools/tool_support.cpp - Shared bits of the command-line tools ----===//
#include "tool_support.h"

#include "frontend/load.h"
#include "ir/parser.h"
#include "plugin/probe.h"
#include "plugin/registry.h"
#include "support/file.h"
#include "support/log.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

namespace tessera::tools {

void addLogLevelOption(CLI::App &app, std::string &level) {
  app.add_option("--log-level", level,
                 "Logging level: trace, debug, info, warn, error, off (default: "
                 "$TESSERA_LOG_LEVEL or warn)");
}

Status applyLogLevel(const std::string &level) {
  if (!level.empty() && !setLogLevel(level))
    return Error::format("unknown --log-level '{}' (expected trace, debug, info, warn, error "
                         "or off)",
                         level);
  return okStatus();
}

void PipelineFlags::addTo(CLI::App &app, std::string defaultPipeline) {
  passes = std::move(defaultPipeline);
  app.add_option("--passes", passes, "Comma-separated pass pipeline")->capture_default_str();
  app.add_option("--print-after", printAfter, "Print the IR after the named pass (repeatable)");
  app.add_flag("--print-after-all", printAfterAll, "Print the IR after every pass");
  app.add_flag("--time-passes", timePasses, "Report the wall time of each pass");
  app.add_flag("--stats", stats, "Report the statistics counted by each pass");
  app.add_flag("--verify-each", verifyEach, "Run the verifier after every pass");
}

passes::PassManagerOptions PipelineFlags::options() const {
  passes::PassManagerOptions o;
  o.printAfterAll = printAfterAll;
  o.printAfter.insert(printAfter.begin(), printAfter.end());
  o.timePasses = timePasses;
  o.stats = stats;
  o.verifyEach = o.verifyEach || verifyEach;
  return o;
}

void addTargetOption(CLI::App &app, std::vector<std::string> &targets) {
  app.add_option("--target", targets,
                 "Plugins to partition for, comma-separated, in priority order (needed by the "
                 "partition passes)")
      ->delimiter(',');
}

void addOnHostOption(CLI::App &app, std::vector<std::string> &nodes) {
  app.add_option("--on-host", nodes,
                 "Keep these nodes on the host whatever the targets take (ONNX node names, "
                 "comma-separated, repeatable; `tessera partition --report` lists them): to "
                 "compare by hand, or to keep an op away from a plugin that is slow or wrong "
                 "on it")
      ->delimiter(',');
}

void addPluginTimeoutOption(CLI::App &app) {
  app.add_option_function<double>(
         "--plugin-timeout",
         [](double seconds) {
           plugin::CallIsolation isolation = plugin::callIsolation();
           auto ms = std::chrono::milliseconds(int64_t(seconds * 1000.0));
           isolation.checkerTimeout = isolation.codegenTimeout = ms;
           plugin::setCallIsolation(isolation);
         },
         "Seconds one plugin call (a checker call, a region's codegen) may take before it is "
         "stopped and reported (default: 60 for checkers, 600 for codegen)")
      ->check(CLI::Range(0.001, 1e6));
}

Expected<std::unique_ptr<partition::PartitionState>>
makePartitionState(const std::vector<std::string> &targets) {
  if (targets.empty())
    return std::unique_ptr<partition::PartitionState>();
  return partition::PartitionState::fromNames(targets, plugin::PluginRegistry::global());
}

int runGuarded(std::string_view tool, const std::string &where, const std::function<int()> &body) {
  if (!plugin::callIsolation().enabled || plugin::currentChild())
    return body();
  std::cout.flush();
  plugin::ChildEnd end = plugin::runChild(
      [&](plugin::ChildChannel &) -> Expected<std::string> {
        int status = body();
        std::cout.flush();
        std::cerr.flush();
        return std::to_string(status);
      },
      std::chrono::milliseconds(-1));
  switch (end.kind) {
  case plugin::ChildEnd::Answered: return std::atoi(end.payload.c_str());
  case plugin::ChildEnd::Failed: return reportError(tool, Error(end.payload));
  default: break;
  }
  std::string what = end.describe();
  if (end.lastPlugin.empty())
    what += " (a bug in Tessera: please report it with the model)";
  return reportError(tool, Error(where.empty() ? what : where + ": " + what));
}

int reportError(std::string_view tool, const Error &e) {
  std::cerr << tool << ": error: " << e.str() << "\n";
  return 1;
}

Expected<std::string> readFile(const std::string &path) {
  TS_RETURN_IF_ERROR(checkReadableFile(path));
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Error::format("cannot open '{}': {}", path, std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad())
    return Error::format("cannot read '{}'", path);
  return ss.str();
}

Expected<ir::Module> loadModel(const std::string &path, const std::vector<std::string> &inputShapes) {
  TS_ASSIGN_OR_RETURN(frontend::InputShapes shapes, frontend::parseInputShapes(inputShapes));
  return frontend::loadModelFile(path, shapes);
}

void printPasses(std::ostream &out) {
  const passes::PassRegistry registry = partition::allPasses();
  for (const auto &[name, entry] : registry.entries()) {
    out << fmt::format("  {:<24} {}\n", name, entry.description);
    for (const passes::Statistic &st : entry.info->statistics)
      out << fmt::format("  {:<24}   stat {}: {}\n", "", st.name, st.description);
  }
}

Status writeText(const std::string &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary);
  if (out)
    out << text;
  out.close();
  if (!out)
    return Error::format("cannot write '{}'", path);
  return okStatus();
}

} // namespace tessera::tools
