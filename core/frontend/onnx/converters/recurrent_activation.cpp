//===- frontend/onnx/converters/recurrent_activation.cpp - RNN activations -===//
//
// The activation functions of the ONNX recurrent ops (recurrent_internal.h).
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/converters/recurrent_internal.h"

#include <algorithm>
#include <cctype>

namespace tessera::frontend::onnx::recurrent_detail {

using ir::DType;
using ir::Expr;

std::optional<Activation> makeActivation(std::string name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  struct Known {
    const char *name;
    int params; // how many of alpha, beta it takes
    double alpha, beta;
  };
  static const Known known[] = {
      {"relu", 0, 0, 0},           {"tanh", 0, 0, 0},
      {"sigmoid", 0, 0, 0},        {"affine", 2, 1.0, 0.0},
      {"leakyrelu", 1, 0.01, 0},   {"thresholdedrelu", 1, 1.0, 0},
      {"scaledtanh", 2, 1.0, 1.0}, {"hardsigmoid", 2, 0.2, 0.5},
      {"elu", 1, 1.0, 0},          {"softsign", 0, 0, 0},
      {"softplus", 0, 0, 0},
  };
  for (const Known &k : known)
    if (lower == k.name)
      return Activation{lower, k.alpha, k.beta};
  return std::nullopt;
}

int activationParams(const std::string &name) {
  if (name == "affine" || name == "scaledtanh" || name == "hardsigmoid")
    return 2;
  if (name == "leakyrelu" || name == "thresholdedrelu" || name == "elu")
    return 1;
  return 0;
}

Expected<Expr> applyActivation(NodeContext &ctx, const Activation &a, const Expr &x) {
  DType dt = dtypeOf(x);
  auto s = [&](double v) { return scalar(ctx, dt, v); };
  const std::string &n = a.name;
  if (n == "relu" || n == "tanh" || n == "sigmoid")
    return ctx.call(n, {x});
  if (n == "affine") {
    TS_ASSIGN_OR_RETURN(Expr m, binary(ctx, "multiply", x, s(a.alpha)));
    return binary(ctx, "add", m, s(a.beta));
  }
  if (n == "leakyrelu")
    return ctx.call("leaky_relu", {x}, {{"alpha", a.alpha}});
  if (n == "thresholdedrelu") {
    TS_ASSIGN_OR_RETURN(Expr c, binary(ctx, "greater", x, s(a.alpha)));
    return ctx.call("where", {c, x, s(0)});
  }
  if (n == "scaledtanh") {
    TS_ASSIGN_OR_RETURN(Expr m, binary(ctx, "multiply", x, s(a.beta)));
    TS_ASSIGN_OR_RETURN(Expr t, ctx.call("tanh", {m}));
    return binary(ctx, "multiply", t, s(a.alpha));
  }
  if (n == "hardsigmoid")
    return ctx.call("hard_sigmoid", {x}, {{"alpha", a.alpha}, {"beta", a.beta}});
  if (n == "elu") {
    // x < 0 ? alpha * (exp(x) - 1) : x
    TS_ASSIGN_OR_RETURN(Expr e, ctx.call("exp", {x}));
    TS_ASSIGN_OR_RETURN(Expr em1, binary(ctx, "subtract", e, s(1)));
    TS_ASSIGN_OR_RETURN(Expr neg, binary(ctx, "multiply", em1, s(a.alpha)));
    TS_ASSIGN_OR_RETURN(Expr c, binary(ctx, "less", x, s(0)));
    return ctx.call("where", {c, neg, x});
  }
  if (n == "softsign") {
    TS_ASSIGN_OR_RETURN(Expr ab, ctx.call("abs", {x}));
    TS_ASSIGN_OR_RETURN(Expr d, binary(ctx, "add", ab, s(1)));
    return binary(ctx, "divide", x, d);
  }
  // softplus: log(1 + exp(x))
  TS_ASSIGN_OR_RETURN(Expr e, ctx.call("exp", {x}));
  TS_ASSIGN_OR_RETURN(Expr d, binary(ctx, "add", e, s(1)));
  return ctx.call("log", {d});
}

} // namespace tessera::frontend::onnx::recurrent_detail
