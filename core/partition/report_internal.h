//===- partition/report_internal.h - Shared by report.cpp and report_html.cpp -===//
//
// The pieces of the report that the text (report.cpp) and the HTML
// (report_html.cpp) both use: the palette, host ops grouped by reason, and
// the pattern records summed per pattern. Not part of the report's API.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "partition/report.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera::partition::detail {

struct Colors {
  const char *node;    // op fill
  const char *cluster; // region box fill
  const char *stroke;  // region box border, legend
};
const Colors &palette(size_t i);

/// "1 region", "3 regions".
std::string plural(size_t n, std::string_view word);
std::string join(const std::vector<std::string> &v, std::string_view sep);

/// "(unnamed)" for a call without a name.
std::string nodeName(const HostOp &h);
/// The op, then the call's name on a second line (DOT label, SVG tooltip).
std::string nodeLabel(const PartitionGraph::Node &n);

/// Host ops grouped by their reason (as one line), groups in order of first
/// appearance.
std::vector<std::pair<std::string, std::vector<const HostOp *>>>
groupByReason(const std::vector<HostOp> &host);

/// What became of one pattern's matches (PatternRecords summed).
struct PatternSummary {
  std::string target, pattern;
  int64_t accepted = 0, vetoed = 0, skipped = 0;
  const PatternRecord *composites = nullptr;  // the Accepted record
  std::vector<const PatternRecord *> refusals; // Vetoed, then Skipped, each in order
};
/// One summary per pattern, in the order of the records (target priority,
/// then declared order).
std::vector<PatternSummary> summarizePatterns(const std::vector<PatternRecord> &records);

/// "vetoed: <reason>" / "skipped: <reason>".
std::string refusalText(const PatternRecord &r);
/// The record's first root names, then "... and N more" when it kept fewer.
std::string patternNodes(const PatternRecord &r);

} // namespace tessera::partition::detail
