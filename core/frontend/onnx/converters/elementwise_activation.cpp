//===- frontend/onnx/converters/elementwise_activation.cpp - ONNX activation converters ---===//
//
// The ONNX activations with attributes or composed from core ops: LeakyRelu,
// HardSigmoid, Elu, Selu, Celu, Softplus, Softsign, ThresholdedRelu, Shrink,
// PRelu and Clip. The activations without attributes (Relu, Sigmoid, ...)
// map onto one core op each and are registered with the unary math in
// registerElementwiseConverters() (elementwise.cpp), which registers these
// too.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/converters/elementwise_internal.h"

#include <limits>
#include <optional>

namespace tessera::frontend::onnx::elementwise_detail {

namespace {

/// Defaults of Clip's 'min'/'max' attributes before opset 11 (float's range).
constexpr double kFloatMax = std::numeric_limits<float>::max();

} // namespace

//===----------------------------------------------------------------------===//
// Activations
//===----------------------------------------------------------------------===//

// LeakyRelu: core leaky_relu with 'alpha' (default 0.01).
Expected<Outputs> convertLeakyRelu(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr x, tensorInput(ctx, 0));
  TS_ASSIGN_OR_RETURN(double alpha, floatAttr(ctx, "alpha", 0.01f));
  return single(call1(ctx, "leaky_relu", x, {{"alpha", alpha}}));
}

// HardSigmoid: core hard_sigmoid with 'alpha' (0.2) and 'beta' (0.5).
Expected<Outputs> convertHardSigmoid(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr x, tensorInput(ctx, 0));
  TS_ASSIGN_OR_RETURN(double alpha, floatAttr(ctx, "alpha", 0.2f));
  TS_ASSIGN_OR_RETURN(double beta, floatAttr(ctx, "beta", 0.5f));
  return single(call1(ctx, "hard_sigmoid", x, {{"alpha", alpha}, {"beta", beta}}));
}

namespace {

/// alpha * (exp(x) - 1), the negative branch of Elu.
Expected<Expr> expm1Scaled(NodeContext &ctx, const Expr &x, double alpha) {
  DType t = dtypeOf(x);
  TS_ASSIGN_OR_RETURN(Expr e, call1(ctx, "exp", x));
  TS_ASSIGN_OR_RETURN(Expr em1, call2(ctx, "subtract", e, scalar(ctx, t, 1.0)));
  return call2(ctx, "multiply", em1, scalar(ctx, t, alpha));
}

} // namespace

// Elu (alpha 1.0): where(x < 0, alpha * (exp(x) - 1), x).
Expected<Outputs> convertElu(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr x, tensorInput(ctx, 0));
  TS_ASSIGN_OR_RETURN(double alpha, floatAttr(ctx, "alpha", 1.0f));
  TS_ASSIGN_OR_RETURN(Expr neg, call2(ctx, "less", x, scalar(ctx, dtypeOf(x), 0.0)));
  TS_ASSIGN_OR_RETURN(Expr branch, expm1Scaled(ctx, x, alpha));
  return single(call3(ctx, "where", neg, branch, x));
}

// Selu: gamma * (x > 0 ? x : alpha * (exp(x) - 1)), ONNX default alpha and
// gamma.
Expected<Outputs> convertSelu(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr x, tensorInput(ctx, 0));
  TS_ASSIGN_OR_RETURN(double alpha, floatAttr(ctx, "alpha", 1.67326319217681884765625f));
  TS_ASSIGN_OR_RETURN(double gamma, floatAttr(ctx, "gamma", 1.05070102214813232421875f));
  DType t = dtypeOf(x);
  TS_ASSIGN_OR_RETURN(Expr pos, call2(ctx, "greater", x, scalar(ctx, t, 0.0)));
  TS_ASSIGN_OR_RETURN(Expr branch, expm1Scaled(ctx, x, alpha));
  TS_ASSIGN_OR_RETURN(Expr sel, call3(ctx, "where", pos, x, branch));
  return single(call2(ctx, "multiply", sel, scalar(ctx, t, gamma)));
}

// Celu (alpha 1.0): max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).
Expected<Outputs> convertCelu(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr x, tensorInput(ctx, 0));
  TS_ASSIGN_OR_RETURN(double alpha, floatAttr(ctx, "alpha", 1.0f));
  if (alpha == 0)
    return ctx.error("attribute 'alpha' must not be 0");
  DType t = dtypeOf(x);
  Expr zero = scalar(ctx, t, 0.0);
  TS_ASSIGN_OR_RETURN(Expr scaled, call2(ctx, "divide", x, scalar(ctx, t, alpha)));
  TS_ASSIGN_OR_RETURN(Expr branch, expm1Scaled(ctx, scaled, alpha));
  TS_ASSIGN_OR_RETURN(Expr lo, call2(ctx, "minimum", branch, zero));
  TS_ASSIGN_OR_RETURN(Expr hi, call2(ctx, "maximum", x, zero));
  return single(call2(ctx, "add", hi, lo));
}

// Softplus: log(exp(x) + 1), as ONNX defines it (overflows to inf like the
// reference for large x).
Expected<Outputs> convertSoftplus(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr x, tensorInput(ctx, 0));
  TS_ASSIGN_OR_RETURN(Expr e, call1(ctx, "exp", x));
  TS_ASSIGN_OR_RETURN(Expr e1, call2(ctx, "add", e, scalar(ctx, dtypeOf(x), 1.0)));
  return single(call1(ctx, "log", e1));
}

// Softsign: x / (1 + |x|).
Expected<Outputs> convertSoftsign(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr x, tensorInput(ctx, 0));
  TS_ASSIGN_OR_RETURN(Expr a, call1(ctx, "abs", x));
  TS_ASSIGN_OR_RETURN(Expr d, call2(ctx, "add", a, scalar(ctx, dtypeOf(x), 1.0)));
  return single(call2(ctx, "divide", x, d));
}

// ThresholdedRelu (alpha 1.0): where(x > alpha, x, 0).
Expected<Outputs> convertThresholdedRelu(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr x, tensorInput(ctx, 0));
  TS_ASSIGN_OR_RETURN(double alpha, floatAttr(ctx, "alpha", 1.0f));
  DType t = dtypeOf(x);
  TS_ASSIGN_OR_RETURN(Expr gt, call2(ctx, "greater", x, scalar(ctx, t, alpha)));
  return single(call3(ctx, "where", gt, x, scalar(ctx, t, 0.0)));
}

// Shrink (bias 0, lambd 0.5): x < -lambd ? x + bias : x > lambd ? x - bias
// : 0. Integer inputs are computed in f64 and cast back (numpy's promotion).
Expected<Outputs> convertShrink(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr in, tensorInput(ctx, 0));
  TS_ASSIGN_OR_RETURN(double bias, floatAttr(ctx, "bias", 0.0f));
  TS_ASSIGN_OR_RETURN(double lambd, floatAttr(ctx, "lambd", 0.5f));
  DType orig = dtypeOf(in);
  TS_ASSIGN_OR_RETURN(Expr x, castTo(ctx, in, ir::isFloat(orig) ? orig : DType::F64));
  DType t = dtypeOf(x);
  TS_ASSIGN_OR_RETURN(Expr lo, call2(ctx, "less", x, scalar(ctx, t, -lambd)));
  TS_ASSIGN_OR_RETURN(Expr hi, call2(ctx, "greater", x, scalar(ctx, t, lambd)));
  TS_ASSIGN_OR_RETURN(Expr plus, call2(ctx, "add", x, scalar(ctx, t, bias)));
  TS_ASSIGN_OR_RETURN(Expr minus, call2(ctx, "subtract", x, scalar(ctx, t, bias)));
  TS_ASSIGN_OR_RETURN(Expr inner, call3(ctx, "where", hi, minus, scalar(ctx, t, 0.0)));
  TS_ASSIGN_OR_RETURN(Expr y, call3(ctx, "where", lo, plus, inner));
  return single(castTo(ctx, y, orig));
}

// PRelu: where(x < 0, x * slope, x); the slope broadcasts to x (the result
// keeps x's shape). Before opset 7 a 1-D slope of size C > 1 is per channel
// (axis 1), as exporters of that time meant it.
Expected<Outputs> convertPRelu(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr x, tensorInput(ctx, 0));
  TS_ASSIGN_OR_RETURN(Expr slope, tensorInput(ctx, 1));
  const ir::Shape &sx = shapeOf(x), &ss = shapeOf(slope);
  if (ctx.opset() < 7 && ss.size() == 1 && ss[0] > 1 && sx.size() >= 2 && ss[0] == sx[1]) {
    std::vector<int64_t> axes;
    for (size_t i = 2; i < sx.size(); ++i)
      axes.push_back(int64_t(i - 1));
    if (!axes.empty()) {
      TS_ASSIGN_OR_RETURN(slope, call1(ctx, "unsqueeze", slope, {{"axes", axes}}));
    }
  }
  TS_ASSIGN_OR_RETURN(Expr neg, call2(ctx, "less", x, scalar(ctx, dtypeOf(x), 0.0)));
  TS_ASSIGN_OR_RETURN(Expr scaled, call2(ctx, "multiply", x, slope));
  if (shapeOf(scaled) != sx)
    return ctx.error("slope {} does not broadcast to the input {}", slope->type().str(),
                     x->type().str());
  return single(call3(ctx, "where", neg, scaled, x));
}

namespace {

/// A Clip bound as a double when it is a constant scalar whose value a
/// double holds exactly (so the core clip attribute is exact).
std::optional<double> exactScalar(const Tensor *t) {
  if (!t || t->numel() != 1)
    return std::nullopt;
  if (ir::isFloat(t->dtype()))
    return t->getDouble(0);
  constexpr int64_t kExact = int64_t(1) << 53;
  if (t->dtype() == DType::U64) { // getInt would give the bit pattern
    uint64_t u = t->getUInt(0);
    return u > uint64_t(kExact) ? std::nullopt : std::optional<double>(double(u));
  }
  int64_t v = t->getInt(0);
  if (v > kExact || v < -kExact)
    return std::nullopt;
  return double(v);
}

} // namespace

// Clip: before opset 11 'min'/'max' attributes (defaults: float's range);
// from 11 optional scalar inputs. Constant bounds become the core clip's
// attributes; other bounds give minimum(maximum(x, min), max), which has the
// same semantics (min > max gives max).
Expected<Outputs> convertClip(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr x, tensorInput(ctx, 0));
  if (ctx.opset() < 11) {
    TS_ASSIGN_OR_RETURN(double lo, floatAttr(ctx, "min", float(-kFloatMax)));
    TS_ASSIGN_OR_RETURN(double hi, floatAttr(ctx, "max", float(kFloatMax)));
    return single(call1(ctx, "clip", x, {{"min", lo}, {"max", hi}}));
  }
  // Bounds in ONNX's order: y = min(max(x, min), max).
  const char *names[] = {"min", "max"};
  std::optional<double> constant[2];
  Expr dynamic[2];
  for (size_t i = 1; i <= 2; ++i) {
    if (!ctx.hasInput(i))
      continue;
    TS_ASSIGN_OR_RETURN(Expr bound, tensorInput(ctx, i));
    if (dtypeOf(bound) != dtypeOf(x))
      return ctx.error("input {} ('{}') has dtype {}, expected {} (as input 0)", i, names[i - 1],
                       ir::dtypeName(dtypeOf(bound)), ir::dtypeName(dtypeOf(x)));
    if (bound->type().numElements() != 1 || bound->type().rank() > x->type().rank())
      return ctx.error("input {} ('{}') must be a scalar, got {}", i, names[i - 1],
                       bound->type().str());
    constant[i - 1] = exactScalar(ctx.constantInput(i));
    if (!constant[i - 1])
      dynamic[i - 1] = bound;
  }
  if (!dynamic[0] && !dynamic[1]) {
    ir::Attrs attrs;
    for (size_t k = 0; k < 2; ++k)
      if (constant[k])
        attrs.set(names[k], *constant[k]);
    return single(call1(ctx, "clip", x, std::move(attrs)));
  }
  Expr result = x;
  for (size_t k = 0; k < 2; ++k) {
    if (constant[k]) {
      TS_ASSIGN_OR_RETURN(result, call1(ctx, "clip", result, {{names[k], *constant[k]}}));
    } else if (dynamic[k]) {
      TS_ASSIGN_OR_RETURN(result, call2(ctx, k == 0 ? "maximum" : "minimum", result, dynamic[k]));
    }
  }
  return Outputs{result};
}

} // namespace tessera::frontend::onnx::elementwise_detail
