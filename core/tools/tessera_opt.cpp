//===- tools/tessera_opt.cpp - Text IR in, passes, text IR out -----------===//
//
//   tessera-opt FILE [--passes=a,b,c] [--print-after=NAME] [--print-after-all]
//               [--time-passes] [--stats] [--verify-each] [--split-input-file]
//               [--target a,b] [-o OUT]
//
// Parses FILE (or stdin for "-"), runs the pipeline (none by default) and
// prints the module. With --split-input-file, FILE is cut at lines
// "# -----" and each part is processed on its own (a failing part reports
// its error and the others still run); line numbers stay those of FILE.
// --target names the plugins the partition passes offload to, in priority
// order (loaded from the plugin registry: TESSERA_PLUGIN_PATH, ...); each
// part gets a fresh partition state.
//
//===----------------------------------------------------------------------===//
#include "tool_support.h"

#include "ir/parser.h"
#include "ir/printer.h"

#include <fstream>
#include <iostream>
#include <sstream>

using namespace tessera;

namespace {

/// Splits at "# -----" lines; other parts' lines become blank so that line
/// numbers in diagnostics match the original file.
std::vector<std::string> splitInput(const std::string &text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  std::vector<std::pair<size_t, size_t>> ranges;
  size_t start = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view l = lines[i];
    while (!l.empty() && (l.front() == ' ' || l.front() == '\t'))
      l.remove_prefix(1);
    if (l.starts_with("# -----")) {
      ranges.push_back({start, i});
      start = i + 1;
    }
  }
  ranges.push_back({start, lines.size()});
  std::vector<std::string> parts;
  for (auto [b, e] : ranges) {
    std::string part;
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i >= b && i < e)
        part += lines[i];
      part += '\n';
    }
    parts.push_back(std::move(part));
  }
  return parts;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"tessera-opt: parse text IR, run a pass pipeline, print text IR"};
  std::string input, output = "-", logLevel;
  bool split = false, listPasses = false;
  tools::PipelineFlags flags;
  std::vector<std::string> targets;
  app.add_option("input", input, "Text IR file ('-' for stdin)");
  app.add_option("-o,--output", output, "Output file ('-' for stdout)")->capture_default_str();
  app.add_flag("--split-input-file", split, "Process each '# -----' separated part on its own");
  app.add_flag("--list-passes", listPasses, "List the registered passes and exit");
  flags.addTo(app, "");
  tools::addTargetOption(app, targets);
  tools::addLogLevelOption(app, logLevel);
  CLI11_PARSE(app, argc, argv);
  if (Status s = tools::applyLogLevel(logLevel); !s.ok())
    return tools::reportError("tessera-opt", s.error());

  if (listPasses) {
    tools::printPasses(std::cout);
    return 0;
  }
  if (input.empty())
    return tools::reportError("tessera-opt", Error("no input file (see --help)"));

  std::string text;
  if (input == "-") {
    std::ostringstream ss;
    ss << std::cin.rdbuf();
    text = ss.str();
  } else {
    auto file = tools::readFile(input);
    if (!file.ok())
      return tools::reportError("tessera-opt", file.error());
    text = std::move(file).value();
  }

  std::ofstream fileOut;
  std::ostream *out = &std::cout;
  if (output != "-") {
    fileOut.open(output);
    if (!fileOut)
      return tools::reportError("tessera-opt", Error::format("cannot write '{}'", output));
    out = &fileOut;
  }

  std::vector<std::string> parts = split ? splitInput(text) : std::vector<std::string>{text};
  int status = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0)
      *out << "# -----\n";
    auto module = ir::parseModule(parts[i], input == "-" ? "<stdin>" : input);
    if (!module.ok()) {
      status = tools::reportError("tessera-opt", module.error());
      continue;
    }
    auto state = tools::makePartitionState(targets);
    if (!state.ok())
      return tools::reportError("tessera-opt", state.error());
    passes::PassManagerOptions options = flags.options();
    auto pm = passes::PassManager::fromPipeline(flags.passes, partition::allPasses(state->get()),
                                                options);
    if (!pm.ok())
      return tools::reportError("tessera-opt", pm.error());
    Status s = pm->run(*module, out);
    pm->printReport(std::cerr);
    if (!s.ok()) {
      status = tools::reportError("tessera-opt", s.error());
      continue;
    }
    ir::printModule(*module, *out);
  }
  return status;
}
