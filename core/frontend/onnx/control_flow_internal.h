//===- frontend/onnx/control_flow_internal.h - Control flow internals -*- C++ -*-===//
//
// What the control-flow converters share: control_flow.cpp (If, Loop,
// SequenceMap, and the registration) and control_flow_scan.cpp (Scan).
// Private to frontend/onnx.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/onnx/converters/common.h"

namespace tessera::frontend::onnx::control_detail {

using Outputs = std::vector<ir::Expr>;

/// Most iterations a converter unrolls.
constexpr int64_t kMaxIterations = 10000;

/// Stacks tensors of one shape along a new axis `axis` (in the result).
Expected<ir::Expr> stack(NodeContext &ctx, const Outputs &parts, int64_t axis);
/// Element `index` of axis `axis` of x, with that axis removed.
Expected<ir::Expr> takeAxis(NodeContext &ctx, const ir::Expr &x, int64_t axis, int64_t index);
/// The first `count` fields of a tuple-typed value.
Expected<Outputs> itemsOf(NodeContext &ctx, const ir::Expr &tuple, size_t count);

/// Scan (opsets 8-17).
Expected<Outputs> convertScan(NodeContext &ctx);

} // namespace tessera::frontend::onnx::control_detail
