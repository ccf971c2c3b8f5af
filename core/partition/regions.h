//===- partition/regions.h - Region utilities shared by the passes -*- C++ -*-===//
//
// What merge-compiler-regions and prune-regions share: recognising a region
// call (a call of a local function with attribute Compiler="<target>") and
// the cycle-free merge itself (implemented in merge_compiler_regions.cpp), so
// that prune-regions can re-merge after sending regions back to the host.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/module.h"
#include "support/error.h"

#include <cstdint>
#include <string>

namespace tessera::partition {

/// The region function of `node` when it is a call of a local function with
/// a string attribute Compiler (its value in `target`), else null.
const ir::FunctionNode *regionFunctionOf(const ir::ExprNode &node, std::string *target = nullptr);

/// Counts of one merge.
struct MergeCounts {
  int64_t regionsBefore = 0; // region calls found
  int64_t regionsAfter = 0;  // region calls left
};

/// Merges the same-target region calls of every global function of `m`
/// (functions that carry a Compiler attribute themselves are skipped) into
/// as few as possible without creating a cycle between regions.
Expected<MergeCounts> mergeRegions(ir::Module &m);

} // namespace tessera::partition
