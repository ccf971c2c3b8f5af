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

/// For each carried value of the body `o` that enters as a sequence (a
/// tuple, or a sequence of run-time length) and leaves as another type: its
/// parameter (in `leading`) becomes a sequence of run-time length of the
/// elements both hold, and a tuple argument (in `args`) the sequence of its
/// fields. Whether anything changed (the body must be outlined again).
/// (control_flow_carry.cpp, as the two below.)
Expected<bool> carrySequences(NodeContext &ctx, const OutlinedSubgraphs &o,
                              std::vector<ir::Type> &leading, std::vector<ir::Expr> &args);

/// A carried tensor that the loop body grows by concatenation.
struct GrownCarry {
  size_t carried; // its index among the carried values
  int64_t axis;   // the concat's axis
};
/// Rewrites the body `o` (with `carried` carried values) so that each
/// carried tensor it returns as concat(itself, x...) along one axis, and
/// reads nowhere else, is returned unchanged and concat(x...) becomes a new
/// scan output (after the body's own; dims other than the axis that differ
/// from the carried value's are checked equal when the model runs). The
/// values rewritten, in order.
Expected<std::vector<GrownCarry>> scanGrownCarries(NodeContext &ctx, OutlinedSubgraphs &o,
                                                   size_t carried);
/// `initial` with the scan output `stacked` ([T, slice...]) concatenated
/// along `axis`: what the grown carried value is after T iterations.
Expected<ir::Expr> appendScanned(NodeContext &ctx, const ir::Expr &initial,
                                 const ir::Expr &stacked, int64_t axis);

/// Scan (opsets 8-17).
Expected<Outputs> convertScan(NodeContext &ctx);

} // namespace tessera::frontend::onnx::control_detail
