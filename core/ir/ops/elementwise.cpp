//===- ir/ops/elementwise.cpp - Elementwise ops ---------------------------===//
//
// The elementwise families of the core op set, with ONNX (opset 13-20)
// semantics:
//   binary arithmetic  add subtract multiply divide power maximum minimum
//   comparisons        equal less greater (result bool)
//   unary math         sqrt exp log erf floor ceil round reciprocal neg abs
//   activations        relu leaky_relu sigmoid tanh hard_sigmoid hard_swish
//                      silu mish gelu clip
//   selection, cast    where cast
// The ops added for the ONNX frontend (mod, bit_shift, less_equal,
// greater_equal, sign, trigonometric and hyperbolic functions, isnan, isinf,
// logical ops) are in elementwise_ext.cpp; the helpers and scalar functions
// both files use are in elementwise_common.h.
// Binary ops and where use numpy broadcasting. Reference kernels compute in
// double for float dtypes and in int64 for integer dtypes; integer results
// wrap to the dtype (as numpy does), and integer arithmetic wraps in two's
// complement rather than overflowing. u64 elements pass through int64 as
// their bit pattern, which is exact for wrapping arithmetic and equality;
// ops that order, divide or take powers compute u64 in uint64 instead.
//
//===----------------------------------------------------------------------===//
#include "ir/ops/common.h"
#include "ir/ops/elementwise_common.h"
#include "ir/ops/ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>

namespace tessera::ir::ops {

namespace {

//===----------------------------------------------------------------------===//
// Families
//===----------------------------------------------------------------------===//

Status registerBinary(OpRegistry &r) {
  // add, subtract, multiply: ONNX Add/Sub/Mul, numpy broadcasting.
  TS_RETURN_IF_ERROR(r.add(binaryOp(
      "add", "Elementwise a + b with broadcasting (ONNX Add).", Accepts::Numeric, false,
      [](double a, double b) { return a + b; },
      [](int64_t a, int64_t b) -> Expected<int64_t> { return wrapAdd(a, b); })));
  TS_RETURN_IF_ERROR(r.add(binaryOp(
      "subtract", "Elementwise a - b with broadcasting (ONNX Sub).", Accepts::Numeric, false,
      [](double a, double b) { return a - b; },
      [](int64_t a, int64_t b) -> Expected<int64_t> { return wrapSub(a, b); })));
  TS_RETURN_IF_ERROR(r.add(binaryOp(
      "multiply", "Elementwise a * b with broadcasting (ONNX Mul).", Accepts::Numeric, false,
      [](double a, double b) { return a * b; },
      [](int64_t a, int64_t b) -> Expected<int64_t> { return wrapMul(a, b); })));
  // divide: ONNX Div; integer division truncates toward zero, and an integer
  // division by zero is a kernel error. Float division follows IEEE.
  TS_RETURN_IF_ERROR(r.add(binaryOp(
      "divide", "Elementwise a / b with broadcasting (ONNX Div; integers truncate).",
      Accepts::Numeric, false, [](double a, double b) { return a / b; }, intDivide,
      uintDivide)));
  // power: ONNX Pow with both operands of one dtype; integer power for
  // integer dtypes.
  TS_RETURN_IF_ERROR(r.add(binaryOp(
      "power", "Elementwise a ** b with broadcasting (ONNX Pow).", Accepts::Numeric, false,
      [](double a, double b) { return std::pow(a, b); }, intPower, uintPower)));
  // maximum, minimum: ONNX Max/Min of two inputs; NaN propagates.
  TS_RETURN_IF_ERROR(r.add(binaryOp(
      "maximum", "Elementwise max(a, b) with broadcasting (ONNX Max).", Accepts::Numeric, false,
      floatMax, [](int64_t a, int64_t b) -> Expected<int64_t> { return std::max(a, b); },
      uintMax)));
  TS_RETURN_IF_ERROR(r.add(binaryOp(
      "minimum", "Elementwise min(a, b) with broadcasting (ONNX Min).", Accepts::Numeric, false,
      floatMin, [](int64_t a, int64_t b) -> Expected<int64_t> { return std::min(a, b); },
      uintMin)));
  return okStatus();
}

Status registerComparisons(OpRegistry &r) {
  // equal: ONNX Equal, any dtype incl. bool; NaN == NaN is false.
  TS_RETURN_IF_ERROR(r.add(binaryOp(
      "equal", "Elementwise a == b with broadcasting, bool result (ONNX Equal).", Accepts::Any,
      true, [](double a, double b) { return a == b ? 1.0 : 0.0; },
      [](int64_t a, int64_t b) -> Expected<int64_t> { return a == b; })));
  // less, greater: ONNX Less/Greater on numeric dtypes.
  TS_RETURN_IF_ERROR(r.add(binaryOp(
      "less", "Elementwise a < b with broadcasting, bool result (ONNX Less).", Accepts::Numeric,
      true, [](double a, double b) { return a < b ? 1.0 : 0.0; },
      [](int64_t a, int64_t b) -> Expected<int64_t> { return a < b; }, uintLess)));
  TS_RETURN_IF_ERROR(r.add(binaryOp(
      "greater", "Elementwise a > b with broadcasting, bool result (ONNX Greater).",
      Accepts::Numeric, true, [](double a, double b) { return a > b ? 1.0 : 0.0; },
      [](int64_t a, int64_t b) -> Expected<int64_t> { return a > b; }, uintGreater)));
  return okStatus();
}

Status registerUnaryMath(OpRegistry &r) {
  // Float-only math, ONNX Sqrt/Exp/Log/Erf/Floor/Ceil/Reciprocal (IEEE
  // results: sqrt(-1) = NaN, log(0) = -inf, 1/0 = inf).
  TS_RETURN_IF_ERROR(r.add(unaryOp("sqrt", "Elementwise square root (ONNX Sqrt).",
                                   Accepts::Float,
                                   unaryKernel([](double x) { return std::sqrt(x); }))));
  TS_RETURN_IF_ERROR(r.add(unaryOp("exp", "Elementwise e**x (ONNX Exp).", Accepts::Float,
                                   unaryKernel([](double x) { return std::exp(x); }))));
  TS_RETURN_IF_ERROR(r.add(unaryOp("log", "Elementwise natural logarithm (ONNX Log).",
                                   Accepts::Float,
                                   unaryKernel([](double x) { return std::log(x); }))));
  TS_RETURN_IF_ERROR(r.add(unaryOp("erf", "Elementwise error function (ONNX Erf).",
                                   Accepts::Float,
                                   unaryKernel([](double x) { return std::erf(x); }))));
  TS_RETURN_IF_ERROR(r.add(unaryOp("floor", "Elementwise floor (ONNX Floor).", Accepts::Float,
                                   unaryKernel([](double x) { return std::floor(x); }))));
  TS_RETURN_IF_ERROR(r.add(unaryOp("ceil", "Elementwise ceiling (ONNX Ceil).", Accepts::Float,
                                   unaryKernel([](double x) { return std::ceil(x); }))));
  // round: ONNX Round, halves to even (0.5 -> 0, 1.5 -> 2, -0.5 -> -0).
  TS_RETURN_IF_ERROR(r.add(unaryOp("round", "Elementwise round half to even (ONNX Round).",
                                   Accepts::Float, unaryKernel(roundHalfEven))));
  TS_RETURN_IF_ERROR(r.add(unaryOp("reciprocal", "Elementwise 1 / x (ONNX Reciprocal).",
                                   Accepts::Float,
                                   unaryKernel([](double x) { return 1.0 / x; }))));
  // neg: ONNX Neg, floats and signed integers (wrapping: -(-128) = -128 in i8).
  TS_RETURN_IF_ERROR(r.add(unaryOp("neg", "Elementwise -x (ONNX Neg).", Accepts::FloatOrSigned,
                                   unaryKernel([](double x) { return -x; }, wrapNeg))));
  // abs: ONNX Abs, every numeric dtype (identity on unsigned dtypes; wraps
  // on the minimum signed value as numpy does).
  TS_RETURN_IF_ERROR(r.add(unaryOp(
      "abs", "Elementwise |x| (ONNX Abs).", Accepts::Numeric,
      unaryKernel([](double x) { return std::abs(x); },
                  [](int64_t x) { return x < 0 ? wrapNeg(x) : x; },
                  [](uint64_t x) { return x; }))));
  return okStatus();
}

Status registerActivations(OpRegistry &r) {
  // relu: ONNX Relu, max(x, 0); floats and integers; NaN passes through.
  TS_RETURN_IF_ERROR(r.add(unaryOp(
      "relu", "Rectified linear unit max(x, 0) (ONNX Relu).", Accepts::Numeric,
      unaryKernel([](double x) { return x < 0 ? 0.0 : x; },
                  [](int64_t x) { return std::max<int64_t>(x, 0); },
                  [](uint64_t x) { return x; }))));
  // leaky_relu: ONNX LeakyRelu, x < 0 ? alpha * x : x.
  TS_RETURN_IF_ERROR(r.add(unaryOp(
      "leaky_relu", "Leaky ReLU: x < 0 ? alpha * x : x (ONNX LeakyRelu).", Accepts::Float,
      [](std::span<const Tensor> in, const Attrs &attrs,
         const Type &) -> Expected<std::vector<Tensor>> {
        double alpha = attrs.getFloat("alpha");
        return std::vector<Tensor>{
            mapUnary(in[0], [alpha](double x) { return x < 0 ? alpha * x : x; })};
      },
      {AttrSpec{"alpha", AttrKind::Float, AttrValue{0.01}, "slope for x < 0"}})));
  // sigmoid, tanh: ONNX Sigmoid/Tanh.
  TS_RETURN_IF_ERROR(r.add(unaryOp("sigmoid", "Logistic 1 / (1 + exp(-x)) (ONNX Sigmoid).",
                                   Accepts::Float, unaryKernel(sigmoid))));
  TS_RETURN_IF_ERROR(r.add(unaryOp("tanh", "Hyperbolic tangent (ONNX Tanh).", Accepts::Float,
                                   unaryKernel([](double x) { return std::tanh(x); }))));
  // hard_sigmoid: ONNX HardSigmoid, max(0, min(1, alpha * x + beta)).
  TS_RETURN_IF_ERROR(r.add(unaryOp(
      "hard_sigmoid", "max(0, min(1, alpha * x + beta)) (ONNX HardSigmoid).", Accepts::Float,
      [](std::span<const Tensor> in, const Attrs &attrs,
         const Type &) -> Expected<std::vector<Tensor>> {
        double alpha = attrs.getFloat("alpha"), beta = attrs.getFloat("beta");
        return std::vector<Tensor>{
            mapUnary(in[0], [=](double x) { return clamp01(alpha * x + beta); })};
      },
      {AttrSpec{"alpha", AttrKind::Float, AttrValue{0.2}, "slope"},
       AttrSpec{"beta", AttrKind::Float, AttrValue{0.5}, "offset"}})));
  // hard_swish: ONNX HardSwish, x * max(0, min(1, x / 6 + 0.5)).
  TS_RETURN_IF_ERROR(r.add(unaryOp(
      "hard_swish", "x * max(0, min(1, x / 6 + 0.5)) (ONNX HardSwish).", Accepts::Float,
      unaryKernel([](double x) { return x * clamp01(x / 6.0 + 0.5); }))));
  // silu: x * sigmoid(x) (SiLU, swish with beta 1; no ONNX op up to opset
  // 17: exporters write Mul(x, Sigmoid(x)), which fuse-activations turns
  // into this).
  TS_RETURN_IF_ERROR(r.add(unaryOp("silu", "x * sigmoid(x) (SiLU, swish).", Accepts::Float,
                                   unaryKernel([](double x) { return x * sigmoid(x); }))));
  // mish: x * tanh(softplus(x)) (ONNX Mish, opset 18; torch.onnx writes
  // Mul(x, Tanh(Softplus(x))) at opset 17, which fuse-activations turns
  // into this).
  TS_RETURN_IF_ERROR(r.add(unaryOp("mish", "x * tanh(log(1 + exp(x))) (Mish).", Accepts::Float,
                                   unaryKernel([](double x) {
                                     return x * std::tanh(std::log1p(std::exp(x)));
                                   }))));
  // gelu: ONNX Gelu (opset 20). approximate = "none":
  //   0.5 x (1 + erf(x / sqrt(2)));
  // approximate = "tanh":
  //   0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
  Op gelu = unaryOp(
      "gelu", "Gaussian error linear unit (ONNX Gelu).", Accepts::Float,
      [](std::span<const Tensor> in, const Attrs &attrs,
         const Type &) -> Expected<std::vector<Tensor>> {
        if (attrs.getString("approximate") == "tanh") {
          const double k = std::sqrt(2.0 / std::numbers::pi);
          return std::vector<Tensor>{mapUnary(in[0], [k](double x) {
            return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
          })};
        }
        return std::vector<Tensor>{mapUnary(
            in[0], [](double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); })};
      },
      {AttrSpec{"approximate", AttrKind::String, AttrValue{std::string("none")},
                "\"none\" (exact, with erf) or \"tanh\""}});
  gelu.relation = [](std::span<const Type> in, const Attrs &attrs) -> Expected<Type> {
    TS_RETURN_IF_ERROR(requireFloat(in, 0));
    std::string approximate = attrs.getString("approximate");
    if (approximate != "none" && approximate != "tanh")
      return Error::format("attribute 'approximate' must be \"none\" or \"tanh\", got \"{}\"",
                           approximate);
    return in[0];
  };
  TS_RETURN_IF_ERROR(r.add(std::move(gelu)));
  // clip: ONNX Clip with constant bounds: min(max(x, min), max), so when
  // min > max every element becomes max. NaN elements pass through. For
  // integer dtypes min rounds up and max rounds down to integers.
  TS_RETURN_IF_ERROR(r.add(unaryOp(
      "clip", "Clamps x to [min, max] (ONNX Clip).", Accepts::Numeric,
      [](std::span<const Tensor> in, const Attrs &attrs,
         const Type &) -> Expected<std::vector<Tensor>> {
        double lo = attrs.getFloat("min"), hi = attrs.getFloat("max");
        DType t = in[0].dtype();
        int64_t ilo = intBound(lo, true, t), ihi = intBound(hi, false, t);
        uint64_t ulo = uintBound(lo, true), uhi = uintBound(hi, false);
        return std::vector<Tensor>{mapUnary(
            in[0],
            [lo, hi](double x) { return std::isnan(x) ? x : std::min(std::max(x, lo), hi); },
            [ilo, ihi](int64_t x) { return std::min(std::max(x, ilo), ihi); },
            [ulo, uhi](uint64_t x) { return std::min(std::max(x, ulo), uhi); })};
      },
      {AttrSpec{"min", AttrKind::Float, AttrValue{-kInf}, "lower bound"},
       AttrSpec{"max", AttrKind::Float, AttrValue{kInf}, "upper bound"}})));
  return okStatus();
}

// where: ONNX Where, condition ? x : y with 3-way numpy broadcasting.
Status registerWhere(OpRegistry &r) {
  return r.add(Op{
      .name = "where",
      .description = "condition ? x : y with broadcasting (ONNX Where).",
      .argNames = {"condition", "x", "y"},
      .minArgs = 3,
      .maxArgs = 3,
      .attrs = {},
      .pattern = OpPattern::Broadcast,
      .relation = [](std::span<const Type> in, const Attrs &) -> Expected<Type> {
        if (in[0].dtype() != DType::Bool)
          return Error::format("argument 0 ('condition') must be a bool tensor, got {}",
                               in[0].str());
        if (in[2].dtype() != in[1].dtype())
          return Error::format("argument 2 has dtype {}, expected {} (as argument 1)",
                               dtypeName(in[2].dtype()), dtypeName(in[1].dtype()));
        TS_ASSIGN_OR_RETURN(Shape s, broadcastShapes(in[0].shape(), in[1].shape()));
        TS_ASSIGN_OR_RETURN(Shape shape, broadcastShapes(s, in[2].shape()));
        return Type::tensor(in[1].dtype(), std::move(shape));
      },
      .kernel = [](std::span<const Tensor> in, const Attrs &,
                   const Type &outType) -> Expected<std::vector<Tensor>> {
        Tensor out(outType.dtype(), outType.shape());
        auto ic = broadcastIndices(out.shape(), in[0].shape());
        auto ix = broadcastIndices(out.shape(), in[1].shape());
        auto iy = broadcastIndices(out.shape(), in[2].shape());
        size_t elem = dtypeSize(out.dtype());
        for (int64_t i = 0; i < out.numel(); ++i) {
          size_t k = size_t(i);
          bool c = in[0].getInt(ic[k]) != 0;
          const Tensor &src = c ? in[1] : in[2];
          int64_t j = c ? ix[k] : iy[k];
          std::memcpy(out.bytes() + k * elem, src.bytes() + size_t(j) * elem, elem);
        }
        return std::vector<Tensor>{std::move(out)};
      }});
}

// cast: ONNX Cast to attribute 'dtype'. Float -> integer truncates toward
// zero (out-of-range values saturate and NaN gives 0, which ONNX leaves
// undefined); -> bool is x != 0; bool -> number is 0 or 1; -> f16/bf16
// rounds to nearest even.
Status registerCast(OpRegistry &r) {
  return r.add(Op{
      .name = "cast",
      .description = "Converts the elements to attribute 'dtype' (ONNX Cast).",
      .argNames = {"x"},
      .minArgs = 1,
      .maxArgs = 1,
      .attrs = {AttrSpec{"dtype", AttrKind::DType, std::nullopt, "target element type"}},
      .pattern = OpPattern::Elementwise,
      .relation = [](std::span<const Type> in, const Attrs &attrs) -> Expected<Type> {
        return Type::tensor(attrs.getDType("dtype"), in[0].shape());
      },
      .kernel = [](std::span<const Tensor> in, const Attrs &,
                   const Type &outType) -> Expected<std::vector<Tensor>> {
        const Tensor &x = in[0];
        DType from = x.dtype(), to = outType.dtype();
        Tensor out(to, outType.shape());
        for (int64_t i = 0; i < x.numel(); ++i) {
          if (isFloat(from)) {
            double v = x.getDouble(i);
            if (to == DType::Bool)
              out.setInt(i, v != 0.0); // NaN -> true, as numpy
            else if (isFloat(to))
              out.setDouble(i, v);
            else
              out.setDouble(i, std::trunc(v)); // saturates, NaN -> 0
          } else if (from == DType::U64) {
            out.setUInt(i, x.getUInt(i)); // exact; floats round once, ints wrap
          } else {
            int64_t v = x.getInt(i);
            if (to == DType::F32)
              out.data<float>()[i] = float(v); // one rounding, also for large i64
            else if (isFloat(to))
              out.setDouble(i, double(v));
            else
              out.setInt(i, v); // wraps to the dtype; bool is v != 0
          }
        }
        return std::vector<Tensor>{std::move(out)};
      }});
}

} // namespace

Status registerElementwiseOps(OpRegistry &r) {
  TS_RETURN_IF_ERROR(registerBinary(r));
  TS_RETURN_IF_ERROR(registerComparisons(r));
  TS_RETURN_IF_ERROR(registerUnaryMath(r));
  TS_RETURN_IF_ERROR(registerActivations(r));
  TS_RETURN_IF_ERROR(registerWhere(r));
  TS_RETURN_IF_ERROR(registerCast(r));
  return okStatus();
}

} // namespace tessera::ir::ops
