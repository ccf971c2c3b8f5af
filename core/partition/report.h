//===- partition/report.h - What partitioning decided, for people -*- C++ -*-===//
//
// The outputs of `tessera partition`:
//   summaryText   one paragraph: regions per target, ops offloaded vs host
//                 (and how many pattern matches became composites)
//   reportText    every region (symbol, target, ops, types, FLOPs), every
//                 host op with its own reason, grouped by reason, then each
//                 pattern's matches: composites, vetoes by check_pattern
//                 (the plugin's reason), skips (report.cpp)
//   dotGraph      Graphviz DOT of a partitioned function: one node per op
//                 call, a cluster per region coloured by target
//   htmlReport    one self-contained HTML file (inline CSS, SVG and script,
//                 no network) drawing the same graph, long graphs wrapped
//                 into bands, with search, zoom and collapsible regions, and
//                 the report as tables (report_html.cpp)
// All are deterministic: the same result gives the same bytes.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "partition/driver.h"

#include <string>
#include <vector>

namespace tessera::partition {

/// "950 FLOP", "12.3 kFLOP", "1.20 MFLOP", "3.41 GFLOP", "2.00 TFLOP".
std::string formatFlops(double flops);

/// The fill colour of the i-th target (a fixed palette, cycling).
std::string targetColor(size_t index);

/// The graph drawn by dotGraph and htmlReport: a function's op calls, with
/// the ops of each region call grouped in a cluster.
struct PartitionGraph {
  enum class Kind { Input, Output, Op };
  struct Node {
    Kind kind = Kind::Op;
    std::string label; // op name, or the input/output name
    std::string name;  // the call's name (may be empty)
    int cluster = -1;  // index into clusters, -1: host
  };
  struct Cluster {
    std::string symbol; // global of the region
    std::string target;
    int targetIndex = 0; // into PartitionResult::targets (palette colour)
  };
  std::vector<Node> nodes;
  std::vector<Cluster> clusters;
  std::vector<std::pair<int, int>> edges; // data flow, deduplicated
};

/// The graph of global `function` of a partitioned module; `targets` gives
/// each target its colour index (unknown targets get the next ones).
Expected<PartitionGraph> buildPartitionGraph(const ir::Module &m, const std::string &function,
                                             const std::vector<std::string> &targets);

std::string summaryText(const PartitionResult &r);
std::string reportText(const PartitionResult &r);
std::string dotGraph(const PartitionGraph &g);
/// `title` names the model (e.g. the file); `placement`, when given, is
/// shown as its own section (placement by measurement's report: every
/// candidate's and region's times, and the choice).
std::string htmlReport(const PartitionResult &r, const PartitionGraph &g,
                       const std::string &title, const std::string &placement = "");

} // namespace tessera::partition
