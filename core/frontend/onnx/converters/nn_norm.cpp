//===- frontend/onnx/converters/nn_norm.cpp - ONNX normalization converters ---===//
//
// BatchNormalization (inference and training mode), InstanceNormalization,
// LayerNormalization and LRN, on the core batch_norm and layer_norm or
// composed from reductions and elementwise ops.
//
// Every converter states the opsets and attributes it handles; anything else
// is an error naming the node. registerNNConverters() (nn.cpp) registers
// them.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/converters/nn_internal.h"

#include <algorithm>

namespace tessera::frontend::onnx::nn_detail {

//===----------------------------------------------------------------------===//
// Normalizations.
//===----------------------------------------------------------------------===//

namespace {

/// Reduce-mean over `axes`, keeping dims.
Expected<Expr> meanOver(NodeContext &ctx, const Expr &x, const Ints &axes) {
  return ctx.call("reduce_mean", {x}, {{"axes", axes}, {"keepdims", true}});
}

} // namespace

/// BatchNormalization (opsets 1-17): inference form, or with training_mode=1
/// (opset 14+) the batch statistics and the updated running mean/var outputs.
/// Opsets < 9: spatial=1 only; is_test and consumed_inputs are ignored.
Expected<Outputs> convertBatchNorm(NodeContext &ctx) {
  Expr x = ctx.input(0);
  if (rankOf(x) < 2)
    return ctx.error("input X must have rank >= 2, got {}", x->type().str());
  TS_ASSIGN_OR_RETURN(float eps, ctx.attrFloat("epsilon", 1e-5f));
  TS_ASSIGN_OR_RETURN(float momentum, ctx.attrFloat("momentum", 0.9f));
  TS_ASSIGN_OR_RETURN(int64_t spatialMode, ctx.attrInt("spatial", int64_t{1}));
  if (ctx.opset() < 9 && spatialMode == 0)
    return ctx.error("attribute 'spatial' = 0 (per-activation statistics) is not supported");
  TS_ASSIGN_OR_RETURN(int64_t training, ctx.attrInt("training_mode", int64_t{0}));
  DType dt = dtypeOf(x);
  std::vector<Expr> params;
  for (size_t i = 1; i < 5; ++i) {
    if (!ctx.hasInput(i))
      return ctx.error("input {} is missing", i);
    TS_ASSIGN_OR_RETURN(Expr p, castTo(ctx, ctx.input(i), dt));
    params.push_back(p);
  }
  ir::Attrs attrs{{"epsilon", double(eps)}, {"axis", int64_t{1}}};
  if (!training) {
    TS_ASSIGN_OR_RETURN(
        Expr y, ctx.call("batch_norm", {x, params[0], params[1], params[2], params[3]}, attrs));
    return Outputs{y};
  }
  // Training mode: normalise with the batch mean and (biased) variance.
  Ints axes;
  for (int64_t a = 0; a < rankOf(x); ++a)
    if (a != 1)
      axes.push_back(a);
  TS_ASSIGN_OR_RETURN(Expr mean, meanOver(ctx, x, axes));
  TS_ASSIGN_OR_RETURN(Expr d, ctx.call("subtract", {x, mean}));
  TS_ASSIGN_OR_RETURN(Expr sq, ctx.call("multiply", {d, d}));
  TS_ASSIGN_OR_RETURN(Expr var, meanOver(ctx, sq, axes));
  int64_t C = shapeOf(x)[1];
  TS_ASSIGN_OR_RETURN(Expr mean1, reshapeTo(ctx, mean, {C}));
  TS_ASSIGN_OR_RETURN(Expr var1, reshapeTo(ctx, var, {C}));
  TS_ASSIGN_OR_RETURN(Expr y,
                      ctx.call("batch_norm", {x, params[0], params[1], mean1, var1}, attrs));
  // running = running * momentum + batch * (1 - momentum)
  auto blend = [&](const Expr &running, const Expr &batch) -> Expected<Expr> {
    TS_ASSIGN_OR_RETURN(Expr r, ctx.call("multiply", {running, scalar(ctx, dt, momentum)}));
    TS_ASSIGN_OR_RETURN(Expr b,
                        ctx.call("multiply", {batch, scalar(ctx, dt, 1.0 - double(momentum))}));
    return ctx.call("add", {r, b});
  };
  TS_ASSIGN_OR_RETURN(Expr runMean, blend(params[2], mean1));
  TS_ASSIGN_OR_RETURN(Expr runVar, blend(params[3], var1));
  Outputs out{y, runMean, runVar};
  out.resize(std::min<size_t>(out.size(), ctx.numOutputs()));
  return out;
}

/// InstanceNormalization (opsets 1-17): layer_norm over the spatial dims
/// of each (n, c), then scale and bias per channel.
Expected<Outputs> convertInstanceNorm(NodeContext &ctx) {
  const Expr &x = ctx.input(0);
  if (rankOf(x) < 3)
    return ctx.error("input must have rank >= 3, got {}", x->type().str());
  TS_ASSIGN_OR_RETURN(float eps, ctx.attrFloat("epsilon", 1e-5f));
  DType dt = dtypeOf(x);
  Expr one = ctx.constant(ir::Tensor::fromDoubles(dt, {1}, std::vector<double>{1.0}));
  TS_ASSIGN_OR_RETURN(Expr norm, ctx.call("layer_norm", {x, one},
                                          {{"axis", int64_t{2}}, {"epsilon", double(eps)}}));
  Ints paramShape(size_t(rankOf(x) - 1), 1);
  paramShape[0] = shapeOf(x)[1];
  TS_ASSIGN_OR_RETURN(Expr scale, castTo(ctx, ctx.input(1), dt));
  TS_ASSIGN_OR_RETURN(Expr bias, castTo(ctx, ctx.input(2), dt));
  TS_ASSIGN_OR_RETURN(scale, reshapeTo(ctx, scale, paramShape));
  TS_ASSIGN_OR_RETURN(bias, reshapeTo(ctx, bias, paramShape));
  TS_ASSIGN_OR_RETURN(Expr scaled, ctx.call("multiply", {norm, scale}));
  TS_ASSIGN_OR_RETURN(Expr y, ctx.call("add", {scaled, bias}));
  return Outputs{y};
}

/// LayerNormalization (opset 17): axis, epsilon, optional B; the Mean and
/// InvStdDev outputs (stash_type 1, float32) are computed when declared.
Expected<Outputs> convertLayerNorm(NodeContext &ctx) {
  const Expr &x = ctx.input(0);
  TS_ASSIGN_OR_RETURN(int64_t axis, ctx.attrInt("axis", int64_t{-1}));
  TS_ASSIGN_OR_RETURN(float eps, ctx.attrFloat("epsilon", 1e-5f));
  TS_ASSIGN_OR_RETURN(int64_t stash, ctx.attrInt("stash_type", int64_t{1}));
  if (stash != 1)
    return ctx.error("attribute 'stash_type' = {} is not supported (only 1, float32)", stash);
  int64_t r = rankOf(x);
  if (axis < -r || axis >= r)
    return ctx.error("attribute 'axis' = {} is out of range for rank {}", axis, r);
  if (axis < 0)
    axis += r;
  std::vector<Expr> args{x, ctx.input(1)};
  if (ctx.hasInput(2))
    args.push_back(ctx.input(2));
  TS_ASSIGN_OR_RETURN(Expr y,
                      ctx.call("layer_norm", args, {{"axis", axis}, {"epsilon", double(eps)}}));
  if (ctx.numOutputs() < 2)
    return Outputs{y};
  Ints axes;
  for (int64_t a = axis; a < r; ++a)
    axes.push_back(a);
  TS_ASSIGN_OR_RETURN(Expr xf, castTo(ctx, x, DType::F32));
  TS_ASSIGN_OR_RETURN(Expr mean, meanOver(ctx, xf, axes));
  TS_ASSIGN_OR_RETURN(Expr d, ctx.call("subtract", {xf, mean}));
  TS_ASSIGN_OR_RETURN(Expr sq, ctx.call("multiply", {d, d}));
  TS_ASSIGN_OR_RETURN(Expr var, meanOver(ctx, sq, axes));
  TS_ASSIGN_OR_RETURN(Expr ve, ctx.call("add", {var, scalar(ctx, DType::F32, eps)}));
  TS_ASSIGN_OR_RETURN(Expr sd, ctx.call("sqrt", {ve}));
  TS_ASSIGN_OR_RETURN(Expr inv, ctx.call("reciprocal", {sd}));
  Outputs out{y, mean, inv};
  out.resize(std::min<size_t>(out.size(), ctx.numOutputs()));
  return out;
}

/// LRN (opsets 1-17): y = x / (bias + alpha/size * sum of x^2 over the
/// channel window)^beta; the window sum is an average pool with
/// count_include_pad over [N, 1, C, prod(spatial)].
Expected<Outputs> convertLRN(NodeContext &ctx) {
  const Expr &x = ctx.input(0);
  if (rankOf(x) < 3)
    return ctx.error("input X must have rank >= 3, got {}", x->type().str());
  TS_ASSIGN_OR_RETURN(int64_t size, ctx.attrInt("size"));
  TS_ASSIGN_OR_RETURN(float alpha, ctx.attrFloat("alpha", 1e-4f));
  TS_ASSIGN_OR_RETURN(float beta, ctx.attrFloat("beta", 0.75f));
  TS_ASSIGN_OR_RETURN(float bias, ctx.attrFloat("bias", 1.0f));
  if (size <= 0)
    return ctx.error("attribute 'size' must be positive, got {}", size);
  const ir::Shape xs = shapeOf(x);
  DType dt = dtypeOf(x);
  int64_t spatial = product(std::span(xs).subspan(2));
  TS_ASSIGN_OR_RETURN(Expr sq, ctx.call("multiply", {x, x}));
  TS_ASSIGN_OR_RETURN(Expr sq4, reshapeTo(ctx, sq, {xs[0], 1, xs[1], spatial}));
  int64_t before = (size - 1) / 2, after = size - 1 - before;
  TS_ASSIGN_OR_RETURN(Expr avg, ctx.call("avg_pool2d", {sq4},
                                         {{"pool_size", Ints{size, 1}},
                                          {"pads", Ints{before, 0, after, 0}},
                                          {"count_include_pad", true}}));
  TS_ASSIGN_OR_RETURN(Expr avgx, reshapeTo(ctx, avg, xs));
  TS_ASSIGN_OR_RETURN(Expr scaled, ctx.call("multiply", {avgx, scalar(ctx, dt, alpha)}));
  TS_ASSIGN_OR_RETURN(Expr base, ctx.call("add", {scaled, scalar(ctx, dt, bias)}));
  TS_ASSIGN_OR_RETURN(Expr denom, ctx.call("power", {base, scalar(ctx, dt, beta)}));
  TS_ASSIGN_OR_RETURN(Expr y, ctx.call("divide", {x, denom}));
  return Outputs{y};
}

} // namespace tessera::frontend::onnx::nn_detail
