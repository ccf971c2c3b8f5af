//===- frontend/onnx/converters/loss.cpp - ONNX loss converters ------------===//
//
// Converters for the ONNX losses and MeanVarianceNormalization:
//   NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss  composed from
//       log_softmax, gather_elements, gather, equal, where, reduce_sum, ...
//   MeanVarianceNormalization   composed from reduce_mean, sqrt, ...
// and registerLossConverters(). Einsum is in einsum.cpp, the index ops in
// index.cpp, the quantization ops in quantize.cpp, each family with its own
// register function (converter.h).
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/converters/common.h"

#include <optional>

namespace tessera::frontend::onnx {

namespace {

using ir::DType;
using ir::Expr;
using ir::Tensor;

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

Status registerLossConverters(ConverterRegistry &r) {
  TS_RETURN_IF_ERROR(addConverter(r, "NegativeLogLikelihoodLoss", 12, 17, convertNLL,
                                  "reduction none/sum/mean, weight, ignore_index, [N, C, d1, ...]; "
                                  "composed (gather_elements, gather, where, reduce_sum)"));
  TS_RETURN_IF_ERROR(
      addConverter(r, "SoftmaxCrossEntropyLoss", 12, 17, convertSCE,
                   "reduction none/sum/mean, weights, ignore_index, [N, C, d1, ...], "
                   "log_prob output; composed (log_softmax + the NLL loss)"));
  TS_RETURN_IF_ERROR(addConverter(r, "MeanVarianceNormalization", 9, 17, convertMVN,
                                  "axes; composed (reduce_mean, sqrt, divide)"));
  return okStatus();
}

} // namespace tessera::frontend::onnx
