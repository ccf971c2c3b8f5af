//===- compile/placement_internal.h - What placement's files share -*- C++ -*-===//
//
// placement.cpp measures; placement_decision.cpp holds the decision's rules,
// its JSON and its report. Both use these.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compile/placement.h"

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
/// The verdict on a region (nullopt when it is not decided: the priority
/// rules decide).
std::optional<partition::RegionVerdict> verdictOf(const RegionTiming &t);
/// "dnnl,ccompiler", or "host only".
std::string describe(const std::vector<std::string> &targets);
/// A region's line in the progress and the report.
std::string describeRegion(const RegionTiming &t);
/// "1 region", "3 regions".
std::string regionCount(const CandidateTiming &c);

} // namespace tessera::compile::detail
