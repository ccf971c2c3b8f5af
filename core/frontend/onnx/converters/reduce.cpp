//===- frontend/onnx/converters/reduce.cpp - ONNX reduce converters ----===//
//
// Converters for ONNX reductions: ReduceSum/Mean/Max/Min/Prod map onto the
// core reduce ops; ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp and
// ReduceSumSquare are composed from them; ArgMax/ArgMin map onto the core
// argmax/argmin.
//
// Axes: the 'axes' attribute (every op up to opset 17, ReduceSum up to 12)
// or, for ReduceSum 13+, the optional input 1, which must be a constant.
// Absent or empty axes reduce every axis, unless 'noop_with_empty_axes' = 1
// (ReduceSum 13+), which makes the op the identity. 'keepdims' defaults to 1.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/converters/common.h"

namespace tessera::frontend::onnx {

namespace {

using ir::DType;
using ir::Expr;
using ir::Tensor;

constexpr int64_t kMaxOpset = 17;

Expected<Outputs> single(Expected<Expr> e) {
  if (!e.ok())
    return std::move(e).error();
  return Outputs{std::move(e).value()};
}

Expected<Expr> call1(NodeContext &ctx, std::string_view op, Expr a, ir::Attrs attrs = {}) {
  return ctx.call(op, {std::move(a)}, std::move(attrs));
}
Expected<Expr> call2(NodeContext &ctx, std::string_view op, Expr a, Expr b) {
  return ctx.call(op, {std::move(a), std::move(b)});
}

/// A reduction as the node describes it.
struct Reduction {
  Expr x;
  std::vector<int64_t> axes; // empty: every axis
  bool keepdims = true;
  bool noop = false; // empty axes with noop_with_empty_axes: the identity
};

Expected<Reduction> reduction(NodeContext &ctx) {
  Reduction red;
  if (!ctx.hasInput(0))
    return ctx.error("missing required input 0");
  red.x = ctx.input(0);
  if (!red.x->type().isTensor())
    return ctx.error("input 0 must be a tensor, got {}", red.x->type().str());
  TS_ASSIGN_OR_RETURN(int64_t keepdims, ctx.attrInt("keepdims", 1));
  red.keepdims = keepdims != 0;
  bool axesInput = ctx.opType() == "ReduceSum" && ctx.opset() >= 13;
  if (!axesInput) {
    TS_ASSIGN_OR_RETURN(red.axes, ctx.attrInts("axes", std::vector<int64_t>{}));
    return red;
  }
  TS_ASSIGN_OR_RETURN(int64_t noop, ctx.attrInt("noop_with_empty_axes", 0));
  if (ctx.hasInput(1)) {
    const Tensor *axes = ctx.constantInput(1);
    if (!axes)
      return ctx.error("input 1 ('axes') must be a constant (our IR has static shapes)");
    if (ir::isFloat(axes->dtype()) || axes->rank() > 1)
      return ctx.error("input 1 ('axes') must be a 1-D integer tensor, got {}", axes->type().str());
    red.axes = axes->toInts();
  }
  red.noop = red.axes.empty() && noop != 0;
  return red;
}

ir::Attrs reduceAttrs(const Reduction &red, bool keepdims) {
  return ir::Attrs{{"axes", red.axes}, {"keepdims", keepdims}};
}

/// The core reduction `coreOp` of `x` as `red` describes it.
Expected<Expr> reduce(NodeContext &ctx, std::string_view coreOp, Expr x, const Reduction &red,
                      bool keepdims) {
  return call1(ctx, coreOp, std::move(x), reduceAttrs(red, keepdims));
}

/// ReduceSum/Mean/Max/Min/Prod: the core op directly.
Converter direct(std::string coreOp) {
  return [coreOp](NodeContext &ctx) -> Expected<Outputs> {
    TS_ASSIGN_OR_RETURN(Reduction red, reduction(ctx));
    if (red.noop)
      return Outputs{red.x};
    return single(reduce(ctx, coreOp, red.x, red, red.keepdims));
  };
}

/// Runs `body` on the input in a float dtype: integer inputs are cast to
/// f64 and the result back to the input dtype (numpy computes these in
/// float and the ONNX result keeps the input type).
template <typename Body> Converter inFloat(Body body) {
  return [body](NodeContext &ctx) -> Expected<Outputs> {
    TS_ASSIGN_OR_RETURN(Reduction red, reduction(ctx));
    if (red.noop)
      return Outputs{red.x};
    DType orig = red.x->type().dtype();
    if (ir::isBool(orig))
      return ctx.error("bool input is not supported ({})", red.x->type().str());
    if (ir::isFloat(orig))
      return single(body(ctx, red.x, red));
    TS_ASSIGN_OR_RETURN(Expr xf, call1(ctx, "cast", red.x, {{"dtype", DType::F64}}));
    TS_ASSIGN_OR_RETURN(Expr y, body(ctx, xf, red));
    return single(call1(ctx, "cast", y, {{"dtype", orig}}));
  };
}

// ReduceL1: reduce_sum(|x|).
Expected<Outputs> convertL1(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Reduction red, reduction(ctx));
  if (red.noop)
    return Outputs{red.x};
  TS_ASSIGN_OR_RETURN(Expr a, call1(ctx, "abs", red.x));
  return single(reduce(ctx, "reduce_sum", a, red, red.keepdims));
}

// ReduceSumSquare: reduce_sum(x * x).
Expected<Outputs> convertSumSquare(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Reduction red, reduction(ctx));
  if (red.noop)
    return Outputs{red.x};
  TS_ASSIGN_OR_RETURN(Expr sq, call2(ctx, "multiply", red.x, red.x));
  return single(reduce(ctx, "reduce_sum", sq, red, red.keepdims));
}

// ReduceL2: sqrt(reduce_sum(x * x)).
Expected<Expr> l2(NodeContext &ctx, const Expr &x, const Reduction &red) {
  TS_ASSIGN_OR_RETURN(Expr sq, call2(ctx, "multiply", x, x));
  TS_ASSIGN_OR_RETURN(Expr s, reduce(ctx, "reduce_sum", sq, red, red.keepdims));
  return call1(ctx, "sqrt", s);
}

// ReduceLogSum: log(reduce_sum(x)).
Expected<Expr> logSum(NodeContext &ctx, const Expr &x, const Reduction &red) {
  TS_ASSIGN_OR_RETURN(Expr s, reduce(ctx, "reduce_sum", x, red, red.keepdims));
  return call1(ctx, "log", s);
}

// ReduceLogSumExp, stable: m = reduce_max(x) (keepdims), m0 = m where it is
// finite else 0, result = log(reduce_sum(exp(x - m0))) + m0; the reduced
// axes are then squeezed when keepdims = 0.
Expected<Expr> logSumExp(NodeContext &ctx, const Expr &x, const Reduction &red) {
  DType t = x->type().dtype();
  size_t rank = x->type().rank();
  TS_ASSIGN_OR_RETURN(Expr m, reduce(ctx, "reduce_max", x, red, true));
  TS_ASSIGN_OR_RETURN(Expr inf, call1(ctx, "isinf", m));
  TS_ASSIGN_OR_RETURN(Expr m0, ctx.call("where", {inf, scalar(ctx, t, 0.0), m}));
  TS_ASSIGN_OR_RETURN(Expr shifted, call2(ctx, "subtract", x, m0));
  TS_ASSIGN_OR_RETURN(Expr e, call1(ctx, "exp", shifted));
  TS_ASSIGN_OR_RETURN(Expr s, reduce(ctx, "reduce_sum", e, red, true));
  TS_ASSIGN_OR_RETURN(Expr l, call1(ctx, "log", s));
  TS_ASSIGN_OR_RETURN(Expr y, call2(ctx, "add", l, m0));
  if (red.keepdims || rank == 0)
    return y;
  // The reduced axes (validated by reduce_max above), or all of them.
  std::vector<int64_t> axes = red.axes;
  if (axes.empty())
    for (size_t i = 0; i < rank; ++i)
      axes.push_back(int64_t(i));
  return call1(ctx, "squeeze", y, {{"axes", axes}});
}

// ArgMax/ArgMin: core argmax/argmin with 'axis' (0), 'keepdims' (1) and,
// from opset 12, 'select_last_index' (0).
Converter arg(std::string coreOp) {
  return [coreOp](NodeContext &ctx) -> Expected<Outputs> {
    if (!ctx.hasInput(0))
      return ctx.error("missing required input 0");
    TS_ASSIGN_OR_RETURN(int64_t axis, ctx.attrInt("axis", 0));
    TS_ASSIGN_OR_RETURN(int64_t keepdims, ctx.attrInt("keepdims", 1));
    TS_ASSIGN_OR_RETURN(int64_t last, ctx.attrInt("select_last_index", 0));
    return single(
        call1(ctx, coreOp, ctx.input(0),
              {{"axis", axis}, {"keepdims", keepdims != 0}, {"select_last_index", last != 0}}));
  };
}

Status add(ConverterRegistry &r, std::string opType, Converter convert, std::string notes) {
  return r.add(
      ConverterSpec{std::move(opType), 1, kMaxOpset, std::move(convert), std::move(notes)});
}

} // namespace

Status registerReduceConverters(ConverterRegistry &r) {
  const std::string axes = "'axes', 'keepdims'";
  TS_RETURN_IF_ERROR(add(r, "ReduceSum", direct("reduce_sum"),
                         "core reduce_sum; 'axes' attribute (< 13) or constant input (13+), "
                         "'keepdims', 'noop_with_empty_axes'"));
  TS_RETURN_IF_ERROR(add(r, "ReduceMean", direct("reduce_mean"), "core reduce_mean; " + axes));
  TS_RETURN_IF_ERROR(add(r, "ReduceMax", direct("reduce_max"), "core reduce_max; " + axes));
  TS_RETURN_IF_ERROR(add(r, "ReduceMin", direct("reduce_min"), "core reduce_min; " + axes));
  TS_RETURN_IF_ERROR(add(r, "ReduceProd", direct("reduce_prod"), "core reduce_prod; " + axes));
  TS_RETURN_IF_ERROR(add(r, "ReduceL1", convertL1, "reduce_sum(abs(x)); " + axes));
  TS_RETURN_IF_ERROR(add(r, "ReduceSumSquare", convertSumSquare, "reduce_sum(x * x); " + axes));
  TS_RETURN_IF_ERROR(
      add(r, "ReduceL2", inFloat(l2), "sqrt(reduce_sum(x * x)), integers via f64; " + axes));
  TS_RETURN_IF_ERROR(
      add(r, "ReduceLogSum", inFloat(logSum), "log(reduce_sum(x)), integers via f64; " + axes));
  TS_RETURN_IF_ERROR(
      add(r, "ReduceLogSumExp", inFloat(logSumExp),
          "max-shifted (stable) log(reduce_sum(exp(x))), integers via f64; " + axes));
  TS_RETURN_IF_ERROR(
      add(r, "ArgMax", arg("argmax"), "core argmax; 'axis', 'keepdims', 'select_last_index'"));
  TS_RETURN_IF_ERROR(
      add(r, "ArgMin", arg("argmin"), "core argmin; 'axis', 'keepdims', 'select_last_index'"));
  return okStatus();
}

} // namespace tessera::frontend::onnx
