//===- tools/cmd_partition.cpp - `tessera partition` -----------------------===//
//
//   tessera partition MODEL --target LIST [--report] [--dot FILE]
//                     [--html FILE] [--input-shape NAME=D0,D1,...]...
//                     [--pipeline P] [-o OUT.tir]
//
// MODEL is an ONNX file (.onnx, imported as `tessera import` does) or text
// IR (anything else). Runs the optimisation pipeline and the partition
// passes (partition/driver.h) with the plugins of LIST (priority order) and
// prints a one-paragraph summary; --report prints every region, every
// host op with its reason, and what became of each pattern's matches
// (composites, vetoes with the plugin's reason); --dot and --html draw the
// partitioned @main (the HTML with search, zoom and collapsible regions);
// -o writes the partitioned module as text IR. Errors are one line.
//
//===----------------------------------------------------------------------===//
#include "commands.h"
#include "placement_options.h"
#include "tool_support.h"

#include "ir/parser.h"
#include "ir/printer.h"
#include "partition/driver.h"
#include "partition/report.h"
#include "plugin/registry.h"
#include "support/file.h"

#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

namespace tessera::tools {

namespace {

struct PartitionArgs {
  std::string model;
  std::vector<std::string> targets;
  bool report = false;
  std::string dot, html, out, function = "main";
  std::string pipeline = std::string(passes::kDefaultPipeline);
  std::vector<std::string> inputShapes, onHost;
  std::shared_ptr<PlacementArgs> placement = std::make_shared<PlacementArgs>();
};

Status run(const PartitionArgs &a) {
  for (const std::string *out : {&a.dot, &a.html, &a.out})
    if (!out->empty())
      TS_RETURN_IF_ERROR(checkWritableFile(*out));
  TS_ASSIGN_OR_RETURN(ir::Module module, tools::loadModel(a.model, a.inputShapes));
  // Placement by measurement (or a placement file) decides the target list
  // and the regions' verdicts, as `tessera compile` does.
  compile::CompileOptions placed;
  placed.targets = a.targets;
  placed.hostNodes = a.onHost;
  TS_ASSIGN_OR_RETURN(std::optional<compile::Placement> placement,
                      compile::applyPlacement(module, placementRequest(*a.placement), placed,
                                              &plugin::PluginRegistry::global()));
  if (placement)
    std::cout << placement->report();
  partition::PartitionOptions options;
  // The host alone chosen: the list as given, its regions sent back by the
  // measured verdicts, so that the report says why.
  options.targets = placed.targets.empty() ? a.targets : placed.targets;
  options.regionRule = placed.regionRule;
  options.hostNodes = a.onHost;
  options.pipeline = a.pipeline;
  TS_ASSIGN_OR_RETURN(auto result, partition::partitionModule(std::move(module), options,
                                                              plugin::PluginRegistry::global()));
  std::cout << (a.report ? partition::reportText(result) : partition::summaryText(result));
  if (!a.dot.empty() || !a.html.empty()) {
    TS_ASSIGN_OR_RETURN(auto graph,
                        partition::buildPartitionGraph(result.module, a.function, result.targets));
    if (!a.dot.empty())
      TS_RETURN_IF_ERROR(writeText(a.dot, partition::dotGraph(graph)));
    if (!a.html.empty())
      TS_RETURN_IF_ERROR(writeText(a.html, partition::htmlReport(
                                               result, graph, a.model,
                                               placement ? placement->report() : "")));
  }
  if (a.out == "-")
    ir::printModule(result.module, std::cout);
  else if (!a.out.empty())
    TS_RETURN_IF_ERROR(writeText(a.out, ir::printModule(result.module)));
  return okStatus();
}

} // namespace

Subcommand addPartitionCommand(CLI::App &app) {
  auto args = std::make_shared<PartitionArgs>();
  auto *cmd = app.add_subcommand("partition", "Partition a model among plugins and report");
  cmd->add_option("model", args->model, "Model: .onnx, or text IR")->required();
  cmd->add_option("--target", args->targets,
                  "Plugins to offload to, in priority order (comma-separated)")
      ->required()
      ->delimiter(',');
  cmd->add_flag("--report", args->report,
                "Print every region, every op left on the host with the reason, and the "
                "pattern matches (composites, vetoes)");
  addOnHostOption(*cmd, args->onHost);
  addPluginTimeoutOption(*cmd);
  addPlacementOptions(*cmd, args->placement);
  cmd->add_option("--dot", args->dot, "Write the partitioned graph as Graphviz DOT");
  cmd->add_option("--html", args->html,
                  "Write a self-contained HTML report with the graph (search, zoom, collapse)");
  cmd->add_option("--input-shape", args->inputShapes,
                  "ONNX input shape, NAME=D0,D1,... (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--pipeline", args->pipeline,
                  "Optimisation passes run before partitioning (empty: none)")
      ->capture_default_str();
  cmd->add_option("--function", args->function, "The function --dot and --html draw")
      ->capture_default_str();
  cmd->add_option("-o,--output", args->out, "Write the partitioned module as text IR");
  return {cmd, [args] {
            return runGuarded("tessera partition", args->model, [&] {
              Status s = run(*args);
              if (!s.ok())
                return reportError("tessera partition", s.error());
              return 0;
            });
          }};
}

} // namespace tessera::tools
