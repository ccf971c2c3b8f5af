//===- compile/placement_internal.h - What placement's files share -*- C++ -*-===//
//
// placement.cpp measures; placement_decision.cpp holds the decision's rules,
// its JSON and its report. Both use these.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compile/placement.h"

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>
#include <vector>

namespace tessera::compile::detail {

/// The CPU's model name (/proc/cpuinfo), part of every key: times from
/// another CPU say nothing about this one.
const std::string &cpuName();
/// The build of the code generator measuring (the SHA-256 of the binary that
/// holds it, first 12 digits), part of every cache key: another Tessera
/// generates other host code, whose times say nothing of this one's.
const std::string &compilerBuild();
std::string hex(size_t h);

/// Whether a plugin's estimate is far enough from 1 to be taken without
/// measuring (TESSERA_ESTIMATE_CLEAR).
bool clearEstimate(double speedup);
/// Whether a region's verdict is known: measured, or a clear estimate.
bool decided(const RegionTiming &t);
/// Whether a region is kept: faster on its plugin, as measured (which wins)
/// or as its plugin clearly estimates.
bool keeps(const RegionTiming &t);
/// The verdict on region `fn` measured as `t` (nullopt when it is not
/// decided: the priority rules decide); `withholdKept`: a kept region's
/// losing nodes are withheld too (CandidateRule::Withheld).
std::optional<partition::RegionVerdict> verdictOf(const RegionTiming &t, const ir::Function &fn,
                                                  bool withholdKept);
/// The op calls of a region in post order (composites' bodies included):
/// what NodeTiming::at counts.
std::vector<const ir::CallNode *> opCalls(const ir::Function &fn);
/// " (priority order)", " (losing nodes withheld)" or "".
std::string describeRule(CandidateRule rule);
const char *ruleName(CandidateRule rule);
std::optional<CandidateRule> ruleNamed(std::string_view name);
/// "dnnl,ccompiler", or "host only".
std::string describe(const std::vector<std::string> &targets);
/// A region's line in the progress and the report.
std::string describeRegion(const RegionTiming &t);
/// A region's losing nodes as JSON (the cache, the placement file), and back.
nlohmann::json losingJson(const std::vector<NodeTiming> &nodes);
Expected<std::vector<NodeTiming>> losingFromJson(const nlohmann::json &array,
                                                 const std::string &source);
/// "1 region", "3 regions".
std::string regionCount(const CandidateTiming &c);

} // namespace tessera::compile::detail
