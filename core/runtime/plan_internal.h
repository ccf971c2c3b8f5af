//===- runtime/plan_internal.h - What plan*.cpp share (internal) -*- C++ -*-===//
//
// Private to core/runtime/plan*.cpp.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/plan.h"

#include <string>

namespace tessera::runtime::plan_detail {

/// "step 3 (conv2d 'c1')" or "step 3" without a label.
std::string stepName(const Plan &plan, size_t s);

} // namespace tessera::runtime::plan_detail
