//===- frontend/onnx/converters/loss.cpp - ONNX loss and index converters ---===//
//
// Converters for the ONNX losses and index-driven ops:
//   NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss  composed from
//       log_softmax, gather_elements, gather, equal, where, reduce_sum, ...
//   Einsum                      composed from transpose, slice (diagonals),
//                               reduce_sum and batch_matmul
//   GatherND, ScatterND, ScatterElements, Scatter  the core index ops
//   MeanVarianceNormalization   composed from reduce_mean, sqrt, ...
//   Compress                    gather with the indices of a constant condition
//   ReverseSequence             gather_elements with computed indices
//
// This file holds the losses, MeanVarianceNormalization, the helpers the
// family shares and registerLossConverters(); Einsum is in loss_einsum.cpp,
// the index ops and the ops with data-dependent output shapes in
// loss_index.cpp, the quantization ops in loss_quantize.cpp (shared
// declarations: loss_internal.h).
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/converters/loss_internal.h"

#include <optional>

namespace tessera::frontend::onnx {

namespace loss_detail {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

Expr scalarInt(NodeContext &ctx, DType dt, int64_t v) {
  return ctx.constant(Tensor::fromInts(dt, {}, std::vector<int64_t>{v}));
}

/// Sum (or mean) of every element, as a scalar.
Expected<Expr> reduceAll(NodeContext &ctx, std::string_view op, const Expr &x) {
  return ctx.call(op, {x}, {{"axes", Ints{}}, {"keepdims", false}});
}

Expected<Expr> integerInput(NodeContext &ctx, size_t i, std::string_view name) {
  TS_ASSIGN_OR_RETURN(Expr e, tensorInput(ctx, i, name));
  if (!ir::isInteger(dtypeOf(e)))
    return ctx.error("input {} ('{}') must be an integer tensor, got {}", i, name, e->type().str());
  return e;
}

namespace {

//===----------------------------------------------------------------------===//
// NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss
//===----------------------------------------------------------------------===//

/// The loss of log-probabilities `logp` [N, C, d1, ...] for targets
/// [N, d1, ...] (ONNX NegativeLogLikelihoodLoss, opsets 12-17):
///   loss[n, d] = -logp[n, target[n, d], d] * weight[target[n, d]]
/// where targets equal to 'ignore_index' contribute 0 (any value, even one
/// outside 0..C-1, may be ignored). Reduction "none" keeps the target shape;
/// "sum" sums; "mean" divides the sum by the sum of the weights of the
/// targets not ignored (by their count without a weight).
Expected<Expr> nllLoss(NodeContext &ctx, const Expr &logp, const Expr &target,
                       std::optional<Expr> weight) {
  TS_ASSIGN_OR_RETURN(std::string reduction, ctx.attrString("reduction", std::string("mean")));
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    return ctx.error("attribute 'reduction' = \"{}\" is not one of \"none\", \"sum\", \"mean\"",
                     reduction);
  std::optional<int64_t> ignoreIndex;
  if (ctx.hasAttr("ignore_index")) {
    TS_ASSIGN_OR_RETURN(ignoreIndex, ctx.attrInt("ignore_index"));
  }
  const ir::Shape &xs = shapeOf(logp), &ts = shapeOf(target);
  if (!ir::isFloat(dtypeOf(logp)))
    return ctx.error("input 0 must be a float tensor, got {}", logp->type().str());
  if (xs.size() < 2)
    return ctx.error("input 0 must have shape [N, C, d1, ...], got {}", logp->type().str());
  ir::Shape want = xs;
  want.erase(want.begin() + 1);
  if (ts != want)
    return ctx.error("the target must have shape {} (input {} without C), got {}",
                     ir::shapeStr(want), logp->type().str(), target->type().str());
  int64_t C = xs[1];
  if (weight) {
    if (dtypeOf(*weight) != dtypeOf(logp) || shapeOf(*weight) != Ints{C})
      return ctx.error("the weight must be {}[{}], got {}", ir::dtypeName(dtypeOf(logp)), C,
                       (*weight)->type().str());
  }

  // Ignored targets read class 0 (any valid class) and are masked below.
  Expr safeTarget = target;
  std::optional<Expr> ignored;
  DType tt = dtypeOf(target);
  if (ignoreIndex) {
    TS_ASSIGN_OR_RETURN(Expr eq, ctx.call("equal", {target, scalarInt(ctx, tt, *ignoreIndex)}));
    ignored = eq;
    TS_ASSIGN_OR_RETURN(safeTarget, ctx.call("where", {eq, scalarInt(ctx, tt, 0), target}));
  }
  TS_ASSIGN_OR_RETURN(Expr idx, ctx.call("unsqueeze", {safeTarget}, {{"axes", Ints{1}}}));
  TS_ASSIGN_OR_RETURN(Expr picked, ctx.call("gather_elements", {logp, idx}, {{"axis", 1}}));
  TS_ASSIGN_OR_RETURN(picked, reshapeTo(ctx, picked, ts));
  TS_ASSIGN_OR_RETURN(Expr loss, ctx.call("neg", {picked}));

  // The per-element weights, when there are any (a weight input or ignored
  // targets); ignored elements get weight 0 and loss 0.
  DType dt = dtypeOf(logp);
  std::optional<Expr> w;
  if (weight) {
    TS_ASSIGN_OR_RETURN(Expr g, ctx.call("gather", {*weight, safeTarget}, {{"axis", 0}}));
    TS_ASSIGN_OR_RETURN(loss, ctx.call("multiply", {loss, g}));
    w = g;
  }
  if (ignored) {
    Expr zero = scalar(ctx, dt, 0);
    TS_ASSIGN_OR_RETURN(loss, ctx.call("where", {*ignored, zero, loss}));
    TS_ASSIGN_OR_RETURN(w, ctx.call("where", {*ignored, zero, w ? *w : scalar(ctx, dt, 1)}));
  }

  if (reduction == "none")
    return loss;
  TS_ASSIGN_OR_RETURN(Expr sum, reduceAll(ctx, "reduce_sum", loss));
  if (reduction == "sum")
    return sum;
  if (!w)
    return reduceAll(ctx, "reduce_mean", loss);
  TS_ASSIGN_OR_RETURN(Expr total, reduceAll(ctx, "reduce_sum", *w));
  return ctx.call("divide", {sum, total});
}

/// NegativeLogLikelihoodLoss (opsets 12-17): input [N, C, d1, ...], target
/// [N, d1, ...], optional weight [C]; reduction, ignore_index.
Expected<Outputs> convertNLL(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr x, tensorInput(ctx, 0, "input"));
  TS_ASSIGN_OR_RETURN(Expr target, integerInput(ctx, 1, "target"));
  std::optional<Expr> weight;
  if (ctx.hasInput(2)) {
    TS_ASSIGN_OR_RETURN(weight, tensorInput(ctx, 2, "weight"));
  }
  TS_ASSIGN_OR_RETURN(Expr loss, nllLoss(ctx, x, target, weight));
  return Outputs{loss};
}

/// SoftmaxCrossEntropyLoss (opsets 12-17): the NLL loss of
/// log_softmax(scores, axis 1); the optional second output is that
/// log_softmax.
Expected<Outputs> convertSCE(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr x, tensorInput(ctx, 0, "scores"));
  TS_ASSIGN_OR_RETURN(Expr target, integerInput(ctx, 1, "labels"));
  std::optional<Expr> weight;
  if (ctx.hasInput(2)) {
    TS_ASSIGN_OR_RETURN(weight, tensorInput(ctx, 2, "weights"));
  }
  if (rankOf(x) < 2)
    return ctx.error("input 0 must have shape [N, C, d1, ...], got {}", x->type().str());
  TS_ASSIGN_OR_RETURN(Expr logp, ctx.call("log_softmax", {x}, {{"axis", 1}}));
  TS_ASSIGN_OR_RETURN(Expr loss, nllLoss(ctx, logp, target, weight));
  if (ctx.numOutputs() >= 2)
    return Outputs{loss, logp};
  return Outputs{loss};
}

//===----------------------------------------------------------------------===//
// MeanVarianceNormalization
//===----------------------------------------------------------------------===//

/// MeanVarianceNormalization (opsets 9-17): axes (default [0, 2, 3]);
/// (x - mean) / (sqrt(mean(x^2) - mean^2) + 1e-9), as ONNX's function body.
Expected<Outputs> convertMVN(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr x, tensorInput(ctx, 0, "X"));
  if (!ir::isFloat(dtypeOf(x)))
    return ctx.error("input 0 must be a float tensor, got {}", x->type().str());
  TS_ASSIGN_OR_RETURN(Ints axes, ctx.attrInts("axes", Ints{0, 2, 3}));
  ir::Attrs mean{{"axes", axes}, {"keepdims", true}};
  TS_ASSIGN_OR_RETURN(Expr mu, ctx.call("reduce_mean", {x}, mean));
  TS_ASSIGN_OR_RETURN(Expr mu2, ctx.call("multiply", {mu, mu}));
  TS_ASSIGN_OR_RETURN(Expr x2, ctx.call("multiply", {x, x}));
  TS_ASSIGN_OR_RETURN(Expr ex2, ctx.call("reduce_mean", {x2}, mean));
  TS_ASSIGN_OR_RETURN(Expr var, ctx.call("subtract", {ex2, mu2}));
  TS_ASSIGN_OR_RETURN(Expr sd, ctx.call("sqrt", {var}));
  TS_ASSIGN_OR_RETURN(sd, ctx.call("add", {sd, scalar(ctx, dtypeOf(x), 1e-9)}));
  TS_ASSIGN_OR_RETURN(Expr centered, ctx.call("subtract", {x, mu}));
  TS_ASSIGN_OR_RETURN(Expr y, ctx.call("divide", {centered, sd}));
  return Outputs{y};
}

} // namespace
} // namespace loss_detail

Status registerLossConverters(ConverterRegistry &r) {
  using namespace loss_detail;
  auto add = [&](std::string opType, int64_t minOpset, int64_t maxOpset, Converter convert,
                 std::string notes) {
    return r.add(
        ConverterSpec{std::move(opType), minOpset, maxOpset, std::move(convert), std::move(notes)});
  };
  TS_RETURN_IF_ERROR(add("NegativeLogLikelihoodLoss", 12, 17, convertNLL,
                         "reduction none/sum/mean, weight, ignore_index, [N, C, d1, ...]; "
                         "composed (gather_elements, gather, where, reduce_sum)"));
  TS_RETURN_IF_ERROR(add("SoftmaxCrossEntropyLoss", 12, 17, convertSCE,
                         "reduction none/sum/mean, weights, ignore_index, [N, C, d1, ...], "
                         "log_prob output; composed (log_softmax + the NLL loss)"));
  TS_RETURN_IF_ERROR(add("Einsum", 12, 17, convertEinsum,
                         "explicit and implicit output, ellipsis, diagonals, any number of "
                         "operands; composed (transpose, slice, reduce_sum, batch_matmul)"));
  TS_RETURN_IF_ERROR(add("GatherND", 11, 17, convertGatherND, "core gather_nd; batch_dims"));
  TS_RETURN_IF_ERROR(
      add("ScatterND", 11, 17, convertScatterND, "core scatter_nd; reduction none/add/mul"));
  TS_RETURN_IF_ERROR(add("ScatterElements", 11, 17, convertScatterElements,
                         "core scatter_elements; axis, negative indices, reduction none/add/mul"));
  TS_RETURN_IF_ERROR(add("Scatter", 9, 10, convertScatterElements,
                         "core scatter_elements (deprecated ONNX op); axis"));
  TS_RETURN_IF_ERROR(add("MeanVarianceNormalization", 9, 17, convertMVN,
                         "axes; composed (reduce_mean, sqrt, divide)"));
  TS_RETURN_IF_ERROR(add("Compress", 9, 17, convertCompress,
                         "axis or flattened; gather of the true slices (a condition known only at run time: "
                         "core nonzero, its count a run-time symbol)"));
  TS_RETURN_IF_ERROR(add("ReverseSequence", 10, 17, convertReverseSequence,
                         "batch_axis, time_axis; composed (gather_elements with computed "
                         "indices)"));
  TS_RETURN_IF_ERROR(add("NonZero", 9, 17, convertNonZero, "a constant on a constant input; else core nonzero (its count a run-time symbol)"));
  TS_RETURN_IF_ERROR(add("Unique", 11, 17, convertUnique,
                         "sorted, axis; core unique (its count a run-time symbol) and gather; "
                         "constants on a constant input"));
  TS_RETURN_IF_ERROR(add("NonMaxSuppression", 10, 17, convertNMS,
                         "core non_max_suppression (its count a run-time symbol): constant thresholds as attributes "
                         "(a constant on constant boxes and scores), thresholds known only at run time as "
                         "arguments read when it runs"));
  TS_RETURN_IF_ERROR(add("QuantizeLinear", 10, 17, convertQuantizeLinear,
                         "u8/i8, per tensor or per axis; composed (divide, round, clip, cast)"));
  TS_RETURN_IF_ERROR(add("DequantizeLinear", 10, 17, convertDequantizeLinear,
                         "u8/i8/i32, per tensor or per axis; composed"));
  TS_RETURN_IF_ERROR(add("DynamicQuantizeLinear", 11, 17, convertDynamicQuantizeLinear,
                         "composed as ONNX's function body"));
  TS_RETURN_IF_ERROR(add("MatMulInteger", 10, 17, convertMatMulInteger,
                         "zero points per tensor/row/column; matmul in f64 (exact below 2^53)"));
  TS_RETURN_IF_ERROR(add("ConvInteger", 10, 17, convertConvInteger,
                         "zero points (w's per channel); the Conv converter in f64"));
  TS_RETURN_IF_ERROR(add("QLinearMatMul", 10, 17, convertQLinearMatMul,
                         "integer matmul, requantized in f32 with round half to even"));
  TS_RETURN_IF_ERROR(add("QLinearConv", 10, 17, convertQLinearConv,
                         "integer Conv + i32 bias, per-channel w scale, requantized in f32"));
  return okStatus();
}

} // namespace tessera::frontend::onnx
