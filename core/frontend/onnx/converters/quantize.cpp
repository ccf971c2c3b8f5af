//===- frontend/onnx/converters/quantize.cpp - ONNX quantization converters ---===//
//
// QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger,
// ConvInteger, QLinearMatMul and QLinearConv, composed from core ops (the
// integer convolutions through the Conv converter).
// registerQuantizeConverters() at the end registers them.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/converters/common.h"

#include <array>

namespace tessera::frontend::onnx {

namespace quantize_detail {

using ir::DType;
using ir::Expr;
using ir::Tensor;

//===----------------------------------------------------------------------===//
// Quantization: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
// MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv. Composed in f32
// (scales) and f64 (integer products, exact below 2^53), with round half to
// even and saturation to the 8-bit range.
//===----------------------------------------------------------------------===//

namespace {

/// A scale or zero point shaped to broadcast against a rank-`rank` tensor:
/// one element becomes a scalar; a 1-D tensor of n > 1 elements lies along
/// `axis` (per-axis quantization).
Expected<Expr> alongAxis(NodeContext &ctx, const Expr &v, int64_t rank, int64_t axis,
                         std::string_view name) {
  int64_t n = v->type().numElements();
  if (n == 1)
    return reshapeTo(ctx, v, Ints{});
  if (rankOf(v) != 1)
    return ctx.error("{} must be a scalar or 1-D, got {}", name, v->type().str());
  if (axis < -rank || axis >= rank)
    return ctx.error("attribute 'axis' = {} is out of range for rank {}", axis, rank);
  if (axis < 0)
    axis += rank;
  Ints shape(static_cast<size_t>(rank), 1);
  shape[size_t(axis)] = n;
  return reshapeTo(ctx, v, shape);
}

/// saturate(round(xf / scale) + zero_point) in the zero point's dtype (u8
/// or i8); `scale` and `zp` already broadcastable.
Expected<Expr> quantize(NodeContext &ctx, const Expr &xf, const Expr &scale, const Expr &zp) {
  DType qt = dtypeOf(zp);
  if (qt != DType::U8 && qt != DType::I8)
    return ctx.error("the zero point must be u8 or i8, got {}", zp->type().str());
  TS_ASSIGN_OR_RETURN(Expr q, ctx.call("divide", {xf, scale}));
  TS_ASSIGN_OR_RETURN(q, ctx.call("round", {q}));
  TS_ASSIGN_OR_RETURN(Expr zf, castTo(ctx, zp, dtypeOf(xf)));
  TS_ASSIGN_OR_RETURN(q, ctx.call("add", {q, zf}));
  double lo = qt == DType::U8 ? 0 : -128, hi = qt == DType::U8 ? 255 : 127;
  TS_ASSIGN_OR_RETURN(q, ctx.call("clip", {q}, {{"min", lo}, {"max", hi}}));
  return castTo(ctx, q, qt);
}

/// The zero point input i, or a scalar 0 of `dt` when omitted.
Expected<Expr> zeroPoint(NodeContext &ctx, size_t i, DType dt) {
  if (ctx.hasInput(i))
    return tensorInput(ctx, i, "zero_point");
  return ctx.constant(Tensor(dt, {}));
}

/// (x - zero_point) as f64 (exact), zero point along `axis`.
Expected<Expr> centered(NodeContext &ctx, const Expr &x, const Expr &zp, int64_t axis) {
  TS_ASSIGN_OR_RETURN(Expr xf, castTo(ctx, x, DType::F64));
  TS_ASSIGN_OR_RETURN(Expr z, alongAxis(ctx, zp, rankOf(x), axis, "the zero point"));
  TS_ASSIGN_OR_RETURN(z, castTo(ctx, z, DType::F64));
  return ctx.call("subtract", {xf, z});
}

} // namespace

/// QuantizeLinear (opsets 10-17): per-tensor or per-axis ('axis', 13+)
/// scale and zero point (default u8 0).
Expected<Outputs> convertQuantizeLinear(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr x, tensorInput(ctx, 0, "x"));
  TS_ASSIGN_OR_RETURN(Expr scale, tensorInput(ctx, 1, "y_scale"));
  TS_ASSIGN_OR_RETURN(Expr zp, zeroPoint(ctx, 2, DType::U8));
  TS_ASSIGN_OR_RETURN(int64_t axis, ctx.attrInt("axis", int64_t{1}));
  TS_ASSIGN_OR_RETURN(scale, alongAxis(ctx, scale, rankOf(x), axis, "y_scale"));
  TS_ASSIGN_OR_RETURN(zp, alongAxis(ctx, zp, rankOf(x), axis, "y_zero_point"));
  TS_ASSIGN_OR_RETURN(Expr xf, castTo(ctx, x, dtypeOf(scale)));
  TS_ASSIGN_OR_RETURN(Expr y, quantize(ctx, xf, scale, zp));
  return Outputs{y};
}

/// DequantizeLinear (opsets 10-17): (x - zero_point) * scale, per tensor or
/// per axis ('axis', 13+), in the scale's dtype.
Expected<Outputs> convertDequantizeLinear(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr x, integerInput(ctx, 0, "x"));
  TS_ASSIGN_OR_RETURN(Expr scale, tensorInput(ctx, 1, "x_scale"));
  TS_ASSIGN_OR_RETURN(Expr zp, zeroPoint(ctx, 2, dtypeOf(x)));
  TS_ASSIGN_OR_RETURN(int64_t axis, ctx.attrInt("axis", int64_t{1}));
  DType ft = dtypeOf(scale);
  TS_ASSIGN_OR_RETURN(scale, alongAxis(ctx, scale, rankOf(x), axis, "x_scale"));
  TS_ASSIGN_OR_RETURN(zp, alongAxis(ctx, zp, rankOf(x), axis, "x_zero_point"));
  TS_ASSIGN_OR_RETURN(Expr xf, castTo(ctx, x, ft));
  TS_ASSIGN_OR_RETURN(Expr zf, castTo(ctx, zp, ft));
  TS_ASSIGN_OR_RETURN(Expr d, ctx.call("subtract", {xf, zf}));
  TS_ASSIGN_OR_RETURN(Expr y, ctx.call("multiply", {d, scale}));
  return Outputs{y};
}

/// DynamicQuantizeLinear (opsets 11-17): u8 quantization over the range
/// [min(0, min x), max(0, max x)], as ONNX's function body; outputs y,
/// y_scale, y_zero_point.
Expected<Outputs> convertDynamicQuantizeLinear(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr x, tensorInput(ctx, 0, "x"));
  if (dtypeOf(x) != DType::F32)
    return ctx.error("input 0 must be f32, got {}", x->type().str());
  Expr zero = scalar(ctx, DType::F32, 0);
  TS_ASSIGN_OR_RETURN(Expr lo, reduceAll(ctx, "reduce_min", x));
  TS_ASSIGN_OR_RETURN(lo, ctx.call("minimum", {lo, zero}));
  TS_ASSIGN_OR_RETURN(Expr hi, reduceAll(ctx, "reduce_max", x));
  TS_ASSIGN_OR_RETURN(hi, ctx.call("maximum", {hi, zero}));
  TS_ASSIGN_OR_RETURN(Expr range, ctx.call("subtract", {hi, lo}));
  TS_ASSIGN_OR_RETURN(Expr scale, ctx.call("divide", {range, scalar(ctx, DType::F32, 255)}));
  TS_ASSIGN_OR_RETURN(Expr zpf, ctx.call("divide", {lo, scale}));
  TS_ASSIGN_OR_RETURN(zpf, ctx.call("subtract", {zero, zpf}));
  TS_ASSIGN_OR_RETURN(zpf, ctx.call("clip", {zpf}, {{"min", 0.0}, {"max", 255.0}}));
  TS_ASSIGN_OR_RETURN(zpf, ctx.call("round", {zpf}));
  TS_ASSIGN_OR_RETURN(Expr zp, castTo(ctx, zpf, DType::U8));
  TS_ASSIGN_OR_RETURN(Expr y, quantize(ctx, x, scale, zp));
  return Outputs{y, scale, zp};
}

namespace {

/// (a - a_zero_point) x (b - b_zero_point) in f64 by matmul; the zero points
/// are per tensor, per row of a or per column of b.
Expected<Expr> integerMatMul(NodeContext &ctx, const Expr &a, const Expr &azp, const Expr &b,
                             const Expr &bzp) {
  if (rankOf(a) < 2 || rankOf(b) < 2)
    return ctx.error("inputs must have rank >= 2, got {} and {}", a->type().str(), b->type().str());
  TS_ASSIGN_OR_RETURN(Expr ac, centered(ctx, a, azp, rankOf(a) - 2));
  TS_ASSIGN_OR_RETURN(Expr bc, centered(ctx, b, bzp, rankOf(b) - 1));
  return ctx.call("matmul", {ac, bc});
}

/// The Conv converter applied to (x - x_zero_point) and (w - w_zero_point)
/// in f64 (its attributes: pads, strides, dilations, group, auto_pad).
Expected<Expr> integerConv(NodeContext &ctx, const Expr &x, const Expr &xzp, const Expr &w,
                           const Expr &wzp) {
  TS_ASSIGN_OR_RETURN(Expr xc, centered(ctx, x, xzp, 1));
  TS_ASSIGN_OR_RETURN(Expr wc, centered(ctx, w, wzp, 0));
  const ConverterSpec *conv = ConverterRegistry::standard().find("Conv");
  if (!conv)
    return ctx.error("no Conv converter to build on");
  NodeContext convCtx("Conv", ctx.nodeName(), ctx.opset(), {xc, wc}, 1, ctx.attrs());
  TS_ASSIGN_OR_RETURN(Outputs y, conv->convert(convCtx));
  if (y.empty())
    return ctx.error("the Conv converter gave no output");
  return y[0];
}

} // namespace

/// MatMulInteger (opsets 10-17): u8/i8 inputs, optional zero points; i32.
Expected<Outputs> convertMatMulInteger(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr a, integerInput(ctx, 0, "A"));
  TS_ASSIGN_OR_RETURN(Expr b, integerInput(ctx, 1, "B"));
  TS_ASSIGN_OR_RETURN(Expr azp, zeroPoint(ctx, 2, dtypeOf(a)));
  TS_ASSIGN_OR_RETURN(Expr bzp, zeroPoint(ctx, 3, dtypeOf(b)));
  TS_ASSIGN_OR_RETURN(Expr y, integerMatMul(ctx, a, azp, b, bzp));
  TS_ASSIGN_OR_RETURN(y, castTo(ctx, y, DType::I32));
  return Outputs{y};
}

/// ConvInteger (opsets 10-17): u8/i8 inputs, optional zero points (w's per
/// output channel); the Conv attributes; i32.
Expected<Outputs> convertConvInteger(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr x, integerInput(ctx, 0, "x"));
  TS_ASSIGN_OR_RETURN(Expr w, integerInput(ctx, 1, "w"));
  TS_ASSIGN_OR_RETURN(Expr xzp, zeroPoint(ctx, 2, dtypeOf(x)));
  TS_ASSIGN_OR_RETURN(Expr wzp, zeroPoint(ctx, 3, dtypeOf(w)));
  TS_ASSIGN_OR_RETURN(Expr y, integerConv(ctx, x, xzp, w, wzp));
  TS_ASSIGN_OR_RETURN(y, castTo(ctx, y, DType::I32));
  return Outputs{y};
}

namespace {

/// The integer accumulator `acc` (f64) requantized: saturate(round(acc *
/// (scale_a * scale_b / y_scale)) + y_zero_point), the multiplier in f32.
/// 1-D scales lie along axes[0] (a), axes[1] (b) and axes[2] (y and its
/// zero point) of the accumulator.
Expected<Expr> requantize(NodeContext &ctx, Expr acc, const Expr &scaleA, const Expr &scaleB,
                          const Expr &yScale, const Expr &yzp, std::array<int64_t, 3> axes) {
  int64_t r = rankOf(acc);
  TS_ASSIGN_OR_RETURN(Expr sa, alongAxis(ctx, scaleA, r, axes[0], "the a/x scale"));
  TS_ASSIGN_OR_RETURN(Expr sb, alongAxis(ctx, scaleB, r, axes[1], "the b/w scale"));
  TS_ASSIGN_OR_RETURN(Expr sy, alongAxis(ctx, yScale, r, axes[2], "y_scale"));
  TS_ASSIGN_OR_RETURN(Expr z, alongAxis(ctx, yzp, r, axes[2], "y_zero_point"));
  TS_ASSIGN_OR_RETURN(Expr mult, ctx.call("multiply", {sa, sb}));
  TS_ASSIGN_OR_RETURN(mult, ctx.call("divide", {mult, sy}));
  TS_ASSIGN_OR_RETURN(acc, castTo(ctx, acc, dtypeOf(mult)));
  TS_ASSIGN_OR_RETURN(Expr real, ctx.call("multiply", {acc, mult}));
  return quantize(ctx, real, scalar(ctx, dtypeOf(real), 1), z);
}

} // namespace

/// QLinearMatMul (opsets 10-17): a, a_scale, a_zero_point, b, b_scale,
/// b_zero_point, y_scale, y_zero_point.
Expected<Outputs> convertQLinearMatMul(NodeContext &ctx) {
  Expr in[8];
  for (size_t i = 0; i < 8; ++i) {
    TS_ASSIGN_OR_RETURN(in[i], tensorInput(ctx, i, "QLinearMatMul input"));
  }
  TS_ASSIGN_OR_RETURN(Expr acc, integerMatMul(ctx, in[0], in[2], in[3], in[5]));
  int64_t r = rankOf(acc);
  // Per-row a and y scales, per-column b scales.
  TS_ASSIGN_OR_RETURN(Expr y,
                      requantize(ctx, acc, in[1], in[4], in[6], in[7], {r - 2, r - 1, r - 2}));
  return Outputs{y};
}

/// QLinearConv (opsets 10-17): x, x_scale, x_zero_point, w, w_scale,
/// w_zero_point (per output channel allowed), y_scale, y_zero_point, and an
/// optional i32 bias added to the accumulator; the Conv attributes.
Expected<Outputs> convertQLinearConv(NodeContext &ctx) {
  Expr in[8];
  for (size_t i = 0; i < 8; ++i) {
    TS_ASSIGN_OR_RETURN(in[i], tensorInput(ctx, i, "QLinearConv input"));
  }
  TS_ASSIGN_OR_RETURN(Expr acc, integerConv(ctx, in[0], in[2], in[3], in[5]));
  if (ctx.hasInput(8)) {
    TS_ASSIGN_OR_RETURN(Expr bias, integerInput(ctx, 8, "B"));
    TS_ASSIGN_OR_RETURN(bias, castTo(ctx, bias, DType::F64));
    TS_ASSIGN_OR_RETURN(bias, alongAxis(ctx, bias, rankOf(acc), 1, "B"));
    TS_ASSIGN_OR_RETURN(acc, ctx.call("add", {acc, bias}));
  }
  TS_ASSIGN_OR_RETURN(Expr y, requantize(ctx, acc, in[1], in[4], in[6], in[7], {1, 1, 1}));
  return Outputs{y};
}

} // namespace quantize_detail

Status registerQuantizeConverters(ConverterRegistry &r) {
  using namespace quantize_detail;
  TS_RETURN_IF_ERROR(
      addConverter(r, "QuantizeLinear", 10, 17, convertQuantizeLinear,
                   "u8/i8, per tensor or per axis; composed (divide, round, clip, cast)"));
  TS_RETURN_IF_ERROR(addConverter(r, "DequantizeLinear", 10, 17, convertDequantizeLinear,
                                  "u8/i8/i32, per tensor or per axis; composed"));
  TS_RETURN_IF_ERROR(addConverter(r, "DynamicQuantizeLinear", 11, 17, convertDynamicQuantizeLinear,
                                  "composed as ONNX's function body"));
  TS_RETURN_IF_ERROR(
      addConverter(r, "MatMulInteger", 10, 17, convertMatMulInteger,
                   "zero points per tensor/row/column; matmul in f64 (exact below 2^53)"));
  TS_RETURN_IF_ERROR(addConverter(r, "ConvInteger", 10, 17, convertConvInteger,
                                  "zero points (w's per channel); the Conv converter in f64"));
  TS_RETURN_IF_ERROR(addConverter(r, "QLinearMatMul", 10, 17, convertQLinearMatMul,
                                  "integer matmul, requantized in f32 with round half to even"));
  TS_RETURN_IF_ERROR(
      addConverter(r, "QLinearConv", 10, 17, convertQLinearConv,
                   "integer Conv + i32 bias, per-channel w scale, requantized in f32"));
  return okStatus();
}

} // namespace tessera::frontend::onnx
