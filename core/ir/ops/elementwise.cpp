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
// and, added for the ONNX frontend:
//   remainder          mod
//   bits               bit_shift (unsigned integers)
//   comparisons        less_equal greater_equal
//   unary math         sign sin cos tan asin acos atan sinh cosh asinh acosh
//                      atanh
//   predicates         isnan isinf (result bool)
//   logic on bool      logical_not logical_and logical_or logical_xor
// Binary ops and where use numpy broadcasting. Reference kernels compute in
// double for float dtypes and in int64 for integer dtypes; integer results
// wrap to the dtype (as numpy does), and integer arithmetic wraps in two's
// complement rather than overflowing. u64 elements pass through int64 as
// their bit pattern, which is exact for wrapping arithmetic and equality;
// ops that order, divide or take powers compute u64 in uint64 instead.
//
//===----------------------------------------------------------------------===//
#include "ir/ops/common.h"
#include "ir/ops/ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <numeric>
#include <type_traits>

namespace tessera::ir::ops {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

/// The element types an op accepts.
enum class Accepts {
  Float,         // f16, bf16, f32, f64
  FloatOrSigned, // floats and i8, i16, i32, i64
  Numeric,       // floats and every integer type (not bool)
  Any,           // everything, bool included
};

bool accepts(Accepts a, DType t) {
  switch (a) {
  case Accepts::Float: return isFloat(t);
  case Accepts::FloatOrSigned: return isFloat(t) || isSignedInteger(t);
  case Accepts::Numeric: return isFloat(t) || isInteger(t);
  case Accepts::Any: return true;
  }
  return false;
}

/// "argument 0 must be a numeric tensor, got bool[2]".
Status requireAccepted(std::span<const Type> inputs, size_t index, Accepts a) {
  if (accepts(a, inputs[index].dtype()))
    return okStatus();
  switch (a) {
  case Accepts::Float: return requireFloat(inputs, index);
  case Accepts::FloatOrSigned:
    return Error::format("argument {} must be a float or signed integer tensor, got {}", index,
                         inputs[index].str());
  case Accepts::Numeric:
    return Error::format("argument {} must be a numeric tensor, got {}", index,
                         inputs[index].str());
  case Accepts::Any: break;
  }
  return okStatus();
}

// Two's-complement arithmetic on int64 without signed-overflow UB.
int64_t wrapAdd(int64_t a, int64_t b) { return int64_t(uint64_t(a) + uint64_t(b)); }
int64_t wrapSub(int64_t a, int64_t b) { return int64_t(uint64_t(a) - uint64_t(b)); }
int64_t wrapMul(int64_t a, int64_t b) { return int64_t(uint64_t(a) * uint64_t(b)); }
int64_t wrapNeg(int64_t a) { return int64_t(uint64_t(0) - uint64_t(a)); }

/// For each flat index of `outShape`, the flat index of the element of an
/// input of shape `inShape` that numpy broadcasting reads.
std::vector<int64_t> broadcastIndices(const Shape &outShape, const Shape &inShape) {
  int64_t n = numElements(outShape);
  std::vector<int64_t> src(static_cast<size_t>(n));
  if (inShape == outShape) {
    std::iota(src.begin(), src.end(), int64_t(0));
    return src;
  }
  std::vector<int64_t> index(outShape.size());
  for (int64_t i = 0; i < n; ++i) {
    unravelIndex(i, outShape, index);
    src[size_t(i)] = broadcastSourceIndex(index, inShape);
  }
  return src;
}

/// Applies `f` (double -> double) to every element of a float tensor, or
/// `g` (int64 -> int64) to every element of an integer tensor; a u64 tensor
/// goes through `u` (uint64 -> uint64) when given, else through `g` on the
/// bit patterns. Ops whose relation accepts only floats pass no `g`.
template <typename F, typename G = std::nullptr_t, typename U = std::nullptr_t>
Tensor mapUnary(const Tensor &in, F f, G g = nullptr, U u = nullptr) {
  Tensor out(in.dtype(), in.shape());
  if constexpr (!std::is_null_pointer_v<U>) {
    if (in.dtype() == DType::U64) {
      for (int64_t i = 0; i < in.numel(); ++i)
        out.setUInt(i, u(in.getUInt(i)));
      return out;
    }
  }
  if constexpr (!std::is_null_pointer_v<G>) {
    if (!isFloat(in.dtype())) {
      for (int64_t i = 0; i < in.numel(); ++i)
        out.setInt(i, g(in.getInt(i)));
      return out;
    }
  }
  for (int64_t i = 0; i < in.numel(); ++i)
    out.setDouble(i, f(in.getDouble(i)));
  return out;
}

/// A kernel that maps every element with `f` (floats), `g` (integers) or
/// `u` (u64, when given).
template <typename F, typename G = std::nullptr_t, typename U = std::nullptr_t>
Kernel unaryKernel(F f, G g = nullptr, U u = nullptr) {
  return [f, g, u](std::span<const Tensor> in, const Attrs &,
                   const Type &) -> Expected<std::vector<Tensor>> {
    return std::vector<Tensor>{mapUnary(in[0], f, g, u)};
  };
}

/// Same type as the input, whose dtype must be accepted.
TypeRelation unaryRelation(Accepts a) {
  return [a](std::span<const Type> in, const Attrs &) -> Expected<Type> {
    TS_RETURN_IF_ERROR(requireAccepted(in, 0, a));
    return in[0];
  };
}

Op unaryOp(std::string name, std::string description, Accepts a, Kernel kernel,
           std::vector<AttrSpec> attrs = {}) {
  return Op{.name = std::move(name),
            .description = std::move(description),
            .argNames = {"x"},
            .minArgs = 1,
            .maxArgs = 1,
            .attrs = std::move(attrs),
            .pattern = OpPattern::Elementwise,
            .relation = unaryRelation(a),
            .kernel = std::move(kernel)};
}

/// Two inputs of one accepted dtype, broadcast; the result has the input
/// dtype, or bool for comparisons.
TypeRelation binaryRelation(Accepts a, bool boolResult) {
  return [a, boolResult](std::span<const Type> in, const Attrs &) -> Expected<Type> {
    TS_RETURN_IF_ERROR(requireSameDType(in));
    TS_RETURN_IF_ERROR(requireAccepted(in, 0, a));
    TS_ASSIGN_OR_RETURN(Shape shape, broadcastShapes(in[0].shape(), in[1].shape()));
    return Type::tensor(boolResult ? DType::Bool : in[0].dtype(), std::move(shape));
  };
}

using FloatBinary = double (*)(double, double);
/// Integer version of a binary op; an error message describes a bad operand
/// pair (e.g. division by zero).
using IntBinary = Expected<int64_t> (*)(int64_t, int64_t);
/// The u64 version, for ops whose result on the bit patterns would be wrong
/// (ordering, division, powers).
using UIntBinary = Expected<uint64_t> (*)(uint64_t, uint64_t);

/// The broadcast binary loop shared by arithmetic and comparisons: floats
/// go through `f`, u64 through `u` when given, other integers and bool
/// through `g`; results are stored in the output dtype (bool for
/// comparisons).
Kernel binaryKernel(std::string name, FloatBinary f, IntBinary g, UIntBinary u = nullptr) {
  return [name, f, g, u](std::span<const Tensor> in, const Attrs &,
                         const Type &outType) -> Expected<std::vector<Tensor>> {
    const Tensor &a = in[0], &b = in[1];
    Tensor out(outType.dtype(), outType.shape());
    auto ia = broadcastIndices(out.shape(), a.shape());
    auto ib = broadcastIndices(out.shape(), b.shape());
    if (isFloat(a.dtype())) {
      for (int64_t i = 0; i < out.numel(); ++i)
        out.setDouble(i, f(a.getDouble(ia[size_t(i)]), b.getDouble(ib[size_t(i)])));
    } else if (u && a.dtype() == DType::U64) {
      for (int64_t i = 0; i < out.numel(); ++i) {
        Expected<uint64_t> r = u(a.getUInt(ia[size_t(i)]), b.getUInt(ib[size_t(i)]));
        if (!r.ok())
          return Error::format("{}: {} (output element {})", name, r.error().message(), i);
        out.setUInt(i, *r);
      }
    } else {
      for (int64_t i = 0; i < out.numel(); ++i) {
        Expected<int64_t> r = g(a.getInt(ia[size_t(i)]), b.getInt(ib[size_t(i)]));
        if (!r.ok())
          return Error::format("{}: {} (output element {})", name, r.error().message(), i);
        out.setInt(i, *r);
      }
    }
    return std::vector<Tensor>{std::move(out)};
  };
}

Op binaryOp(std::string name, std::string description, Accepts a, bool boolResult,
            FloatBinary f, IntBinary g, UIntBinary u = nullptr) {
  Kernel kernel = binaryKernel(name, f, g, u);
  return Op{.name = std::move(name),
            .description = std::move(description),
            .argNames = {"a", "b"},
            .minArgs = 2,
            .maxArgs = 2,
            .attrs = {},
            .pattern = OpPattern::Broadcast,
            .relation = binaryRelation(a, boolResult),
            .kernel = std::move(kernel)};
}

//===----------------------------------------------------------------------===//
// Scalar functions
//===----------------------------------------------------------------------===//

/// Integer division truncating toward zero (C semantics, as ONNX Div).
Expected<int64_t> intDivide(int64_t a, int64_t b) {
  if (b == 0)
    return Error::format("integer division of {} by zero", a);
  if (b == -1)
    return wrapNeg(a); // INT64_MIN / -1 would overflow
  return a / b;
}

Expected<uint64_t> uintDivide(uint64_t a, uint64_t b) {
  if (b == 0)
    return Error::format("integer division of {} by zero", a);
  return a / b;
}

/// Integer power by repeated squaring (wrapping). A negative exponent gives
/// the real result truncated toward zero (1, -1 or 0, as C's
/// int(pow(a, b)) does); zero to a negative power is an error.
Expected<int64_t> intPower(int64_t a, int64_t b) {
  if (b < 0) {
    if (a == 0)
      return Error::format("zero raised to the negative power {}", b);
    if (a == 1)
      return int64_t(1);
    if (a == -1)
      return (b % 2 == 0) ? int64_t(1) : int64_t(-1);
    return int64_t(0);
  }
  int64_t result = 1, base = a;
  for (uint64_t e = uint64_t(b); e; e >>= 1) {
    if (e & 1)
      result = wrapMul(result, base);
    base = wrapMul(base, base);
  }
  return result;
}

/// u64 power by repeated squaring (wrapping modulo 2^64).
Expected<uint64_t> uintPower(uint64_t a, uint64_t b) {
  uint64_t result = 1, base = a;
  for (uint64_t e = b; e; e >>= 1) {
    if (e & 1)
      result *= base;
    base *= base;
  }
  return result;
}

/// numpy maximum/minimum: NaN in either operand gives NaN.
double floatMax(double a, double b) { return std::isnan(a) || std::isnan(b) ? kNaN : std::max(a, b); }
double floatMin(double a, double b) { return std::isnan(a) || std::isnan(b) ? kNaN : std::min(a, b); }

/// ONNX Round: to nearest, ties to even (keeps the sign of zero).
double roundHalfEven(double x) {
  if (std::abs(x - std::trunc(x)) == 0.5)
    return 2.0 * std::round(x / 2.0);
  return std::round(x);
}

/// Logistic function, stable for large |x|.
double sigmoid(double x) {
  if (x >= 0)
    return 1.0 / (1.0 + std::exp(-x));
  double e = std::exp(x);
  return e / (1.0 + e);
}

/// Clamps to [0, 1]; NaN passes through.
double clamp01(double v) { return std::isnan(v) ? v : std::clamp(v, 0.0, 1.0); }

/// The u64 versions of the ordering ops.
Expected<uint64_t> uintMax(uint64_t a, uint64_t b) { return std::max(a, b); }
Expected<uint64_t> uintMin(uint64_t a, uint64_t b) { return std::min(a, b); }
Expected<uint64_t> uintLess(uint64_t a, uint64_t b) { return uint64_t(a < b); }
Expected<uint64_t> uintGreater(uint64_t a, uint64_t b) { return uint64_t(a > b); }
Expected<uint64_t> uintLessEqual(uint64_t a, uint64_t b) { return uint64_t(a <= b); }
Expected<uint64_t> uintGreaterEqual(uint64_t a, uint64_t b) { return uint64_t(a >= b); }

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


//===----------------------------------------------------------------------===//
// Added for the ONNX frontend: mod, less_equal/greater_equal, sign,
// trigonometric and hyperbolic functions, isnan/isinf, logical ops
//===----------------------------------------------------------------------===//

/// Remainder with the sign of the divisor (Python / numpy mod). A zero
/// remainder takes the divisor's sign, as numpy does.
double floatModPython(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0)))
    r += b;
  else if (r == 0)
    r = std::copysign(0.0, b);
  return r;
}

/// u64 remainder (both conventions agree on unsigned operands).
Expected<uint64_t> uintMod(uint64_t a, uint64_t b) {
  if (b == 0)
    return Error::format("integer modulo of {} by zero", a);
  return a % b;
}

/// Integer remainder: C semantics (sign of the dividend) when `cStyle`, else
/// Python semantics (sign of the divisor). A zero divisor is an error.
Expected<int64_t> intMod(int64_t a, int64_t b, bool cStyle) {
  if (b == 0)
    return Error::format("integer modulo of {} by zero", a);
  if (b == -1)
    return int64_t(0); // INT64_MIN % -1 would overflow
  int64_t r = a % b;
  if (!cStyle && r != 0 && ((r < 0) != (b < 0)))
    r += b;
  return r;
}

// mod: ONNX Mod. fmod = 0: the remainder takes the divisor's sign (Python
// %, numpy mod); fmod = 1: the dividend's sign (C fmod). Integer modulo by
// zero is a kernel error; float modulo by zero is NaN.
Status registerMod(OpRegistry &r) {
  return r.add(Op{
      .name = "mod",
      .description = "Elementwise remainder with broadcasting (ONNX Mod; 'fmod' picks the sign).",
      .argNames = {"a", "b"},
      .minArgs = 2,
      .maxArgs = 2,
      .attrs = {AttrSpec{"fmod", AttrKind::Int, AttrValue{int64_t(0)},
                         "0: sign of the divisor (Python %); 1: sign of the dividend (C fmod)"}},
      .pattern = OpPattern::Broadcast,
      .relation = [](std::span<const Type> in, const Attrs &attrs) -> Expected<Type> {
        int64_t fmod = attrs.getInt("fmod");
        if (fmod != 0 && fmod != 1)
          return Error::format("attribute 'fmod' must be 0 or 1, got {}", fmod);
        return binaryRelation(Accepts::Numeric, false)(in, attrs);
      },
      .kernel = [](std::span<const Tensor> in, const Attrs &attrs,
                   const Type &outType) -> Expected<std::vector<Tensor>> {
        bool cStyle = attrs.getInt("fmod") == 1;
        const Tensor &a = in[0], &b = in[1];
        Tensor out(outType.dtype(), outType.shape());
        auto ia = broadcastIndices(out.shape(), a.shape());
        auto ib = broadcastIndices(out.shape(), b.shape());
        for (int64_t i = 0; i < out.numel(); ++i) {
          size_t k = size_t(i);
          if (isFloat(a.dtype())) {
            double x = a.getDouble(ia[k]), y = b.getDouble(ib[k]);
            out.setDouble(i, cStyle ? std::fmod(x, y) : floatModPython(x, y));
            continue;
          }
          if (a.dtype() == DType::U64) {
            Expected<uint64_t> v = uintMod(a.getUInt(ia[k]), b.getUInt(ib[k]));
            if (!v.ok())
              return Error::format("mod: {} (output element {})", v.error().message(), i);
            out.setUInt(i, *v);
            continue;
          }
          Expected<int64_t> v = intMod(a.getInt(ia[k]), b.getInt(ib[k]), cStyle);
          if (!v.ok())
            return Error::format("mod: {} (output element {})", v.error().message(), i);
          out.setInt(i, *v);
        }
        return std::vector<Tensor>{std::move(out)};
      }});
}

// bit_shift: ONNX BitShift on unsigned integers of one dtype, broadcast;
// 'direction' is "left" or "right". Bits shifted out of the dtype are lost,
// and a shift by the dtype's width or more gives 0 (numpy's result; C leaves
// it undefined).
Status registerBitShift(OpRegistry &r) {
  return r.add(Op{
      .name = "bit_shift",
      .description = "Elementwise a << b or a >> b on unsigned integers, with broadcasting "
                     "(ONNX BitShift).",
      .argNames = {"a", "b"},
      .minArgs = 2,
      .maxArgs = 2,
      .attrs = {AttrSpec{"direction", AttrKind::String, std::nullopt,
                         "\"left\" (a << b) or \"right\" (a >> b)"}},
      .pattern = OpPattern::Broadcast,
      .relation = [](std::span<const Type> in, const Attrs &attrs) -> Expected<Type> {
        std::string direction = attrs.getString("direction");
        if (direction != "left" && direction != "right")
          return Error::format("attribute 'direction' must be \"left\" or \"right\", got \"{}\"",
                               direction);
        TS_RETURN_IF_ERROR(requireSameDType(in));
        if (!isUnsignedInteger(in[0].dtype()))
          return Error::format("argument 0 must be an unsigned integer tensor, got {}",
                               in[0].str());
        TS_ASSIGN_OR_RETURN(Shape shape, broadcastShapes(in[0].shape(), in[1].shape()));
        return Type::tensor(in[0].dtype(), std::move(shape));
      },
      .kernel = [](std::span<const Tensor> in, const Attrs &attrs,
                   const Type &outType) -> Expected<std::vector<Tensor>> {
        bool left = attrs.getString("direction") == "left";
        const Tensor &a = in[0], &b = in[1];
        const uint64_t bits = 8 * dtypeSize(a.dtype());
        Tensor out(outType.dtype(), outType.shape());
        auto ia = broadcastIndices(out.shape(), a.shape());
        auto ib = broadcastIndices(out.shape(), b.shape());
        for (int64_t i = 0; i < out.numel(); ++i) {
          uint64_t x = a.getUInt(ia[size_t(i)]), n = b.getUInt(ib[size_t(i)]);
          uint64_t v = n >= bits ? 0 : left ? x << n : x >> n;
          out.setUInt(i, v); // wraps to the dtype: drops the bits shifted out
        }
        return std::vector<Tensor>{std::move(out)};
      }});
}

Status registerOrderedComparisons(OpRegistry &r) {
  // less_equal, greater_equal: ONNX LessOrEqual/GreaterOrEqual; NaN compares
  // false.
  TS_RETURN_IF_ERROR(r.add(binaryOp(
      "less_equal", "Elementwise a <= b with broadcasting, bool result (ONNX LessOrEqual).",
      Accepts::Numeric, true, [](double a, double b) { return a <= b ? 1.0 : 0.0; },
      [](int64_t a, int64_t b) -> Expected<int64_t> { return a <= b; }, uintLessEqual)));
  TS_RETURN_IF_ERROR(r.add(binaryOp(
      "greater_equal", "Elementwise a >= b with broadcasting, bool result (ONNX GreaterOrEqual).",
      Accepts::Numeric, true, [](double a, double b) { return a >= b ? 1.0 : 0.0; },
      [](int64_t a, int64_t b) -> Expected<int64_t> { return a >= b; }, uintGreaterEqual)));
  return okStatus();
}

/// -1, 0 or 1; NaN stays NaN and -0 gives 0.
double floatSign(double x) {
  if (std::isnan(x))
    return x;
  return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0;
}

Status registerTrigonometric(OpRegistry &r) {
  // sign: ONNX Sign, every numeric dtype.
  TS_RETURN_IF_ERROR(r.add(unaryOp(
      "sign", "Elementwise sign: -1, 0 or 1 (ONNX Sign).", Accepts::Numeric,
      unaryKernel(
          floatSign, [](int64_t x) { return int64_t(x > 0) - int64_t(x < 0); },
          [](uint64_t x) { return uint64_t(x != 0); }))));
  // Float-only functions with IEEE results outside the domain (asin(2) =
  // NaN, atanh(1) = inf).
  struct Fn {
    const char *name;
    const char *description;
    double (*f)(double);
  };
  static const Fn fns[] = {
      {"sin", "Elementwise sine (ONNX Sin).", [](double x) { return std::sin(x); }},
      {"cos", "Elementwise cosine (ONNX Cos).", [](double x) { return std::cos(x); }},
      {"tan", "Elementwise tangent (ONNX Tan).", [](double x) { return std::tan(x); }},
      {"asin", "Elementwise arcsine (ONNX Asin).", [](double x) { return std::asin(x); }},
      {"acos", "Elementwise arccosine (ONNX Acos).", [](double x) { return std::acos(x); }},
      {"atan", "Elementwise arctangent (ONNX Atan).", [](double x) { return std::atan(x); }},
      {"sinh", "Elementwise hyperbolic sine (ONNX Sinh).", [](double x) { return std::sinh(x); }},
      {"cosh", "Elementwise hyperbolic cosine (ONNX Cosh).",
       [](double x) { return std::cosh(x); }},
      {"asinh", "Elementwise inverse hyperbolic sine (ONNX Asinh).",
       [](double x) { return std::asinh(x); }},
      {"acosh", "Elementwise inverse hyperbolic cosine (ONNX Acosh).",
       [](double x) { return std::acosh(x); }},
      {"atanh", "Elementwise inverse hyperbolic tangent (ONNX Atanh).",
       [](double x) { return std::atanh(x); }},
  };
  for (const Fn &fn : fns)
    TS_RETURN_IF_ERROR(r.add(unaryOp(fn.name, fn.description, Accepts::Float, unaryKernel(fn.f))));
  return okStatus();
}

/// A float tensor in, a bool tensor of the same shape out.
TypeRelation floatPredicateRelation() {
  return [](std::span<const Type> in, const Attrs &) -> Expected<Type> {
    TS_RETURN_IF_ERROR(requireFloat(in, 0));
    return Type::tensor(DType::Bool, in[0].shape());
  };
}

Status registerPredicates(OpRegistry &r) {
  // isnan: ONNX IsNaN.
  Op isnan = unaryOp(
      "isnan", "Elementwise x is NaN, bool result (ONNX IsNaN).", Accepts::Float,
      [](std::span<const Tensor> in, const Attrs &,
         const Type &outType) -> Expected<std::vector<Tensor>> {
        Tensor out(DType::Bool, outType.shape());
        for (int64_t i = 0; i < in[0].numel(); ++i)
          out.setInt(i, std::isnan(in[0].getDouble(i)));
        return std::vector<Tensor>{std::move(out)};
      });
  isnan.relation = floatPredicateRelation();
  TS_RETURN_IF_ERROR(r.add(std::move(isnan)));
  // isinf: ONNX IsInf; detect_positive / detect_negative select which
  // infinities count.
  Op isinf = unaryOp(
      "isinf", "Elementwise x is infinite, bool result (ONNX IsInf).", Accepts::Float,
      [](std::span<const Tensor> in, const Attrs &attrs,
         const Type &outType) -> Expected<std::vector<Tensor>> {
        bool pos = attrs.getBool("detect_positive"), neg = attrs.getBool("detect_negative");
        Tensor out(DType::Bool, outType.shape());
        for (int64_t i = 0; i < in[0].numel(); ++i) {
          double v = in[0].getDouble(i);
          out.setInt(i, (pos && v == kInf) || (neg && v == -kInf));
        }
        return std::vector<Tensor>{std::move(out)};
      },
      {AttrSpec{"detect_positive", AttrKind::Bool, AttrValue{true}, "+inf counts"},
       AttrSpec{"detect_negative", AttrKind::Bool, AttrValue{true}, "-inf counts"}});
  isinf.relation = floatPredicateRelation();
  return r.add(std::move(isinf));
}

/// "argument 1 must be a bool tensor, got f32[2]".
Status requireBool(std::span<const Type> inputs, size_t index) {
  if (isBool(inputs[index].dtype()))
    return okStatus();
  return Error::format("argument {} must be a bool tensor, got {}", index, inputs[index].str());
}

Op logicalBinaryOp(std::string name, std::string description, FloatBinary f, IntBinary g) {
  Op op = binaryOp(std::move(name), std::move(description), Accepts::Any, true, f, g);
  op.relation = [](std::span<const Type> in, const Attrs &) -> Expected<Type> {
    TS_RETURN_IF_ERROR(requireBool(in, 0));
    TS_RETURN_IF_ERROR(requireBool(in, 1));
    TS_ASSIGN_OR_RETURN(Shape shape, broadcastShapes(in[0].shape(), in[1].shape()));
    return Type::tensor(DType::Bool, std::move(shape));
  };
  return op;
}

// logical_not, logical_and, logical_or, logical_xor: ONNX Not/And/Or/Xor on
// bool tensors (the binary ones broadcast).
Status registerLogical(OpRegistry &r) {
  Op lnot = unaryOp("logical_not", "Elementwise not x on bool (ONNX Not).", Accepts::Any,
                    unaryKernel([](double x) { return x == 0 ? 1.0 : 0.0; },
                                [](int64_t x) { return int64_t(x == 0); }));
  lnot.relation = [](std::span<const Type> in, const Attrs &) -> Expected<Type> {
    TS_RETURN_IF_ERROR(requireBool(in, 0));
    return in[0];
  };
  TS_RETURN_IF_ERROR(r.add(std::move(lnot)));
  // The float lambdas are never reached (bool inputs take the integer path).
  TS_RETURN_IF_ERROR(r.add(logicalBinaryOp(
      "logical_and", "Elementwise a and b on bool with broadcasting (ONNX And).",
      [](double a, double b) { return (a != 0 && b != 0) ? 1.0 : 0.0; },
      [](int64_t a, int64_t b) -> Expected<int64_t> { return a != 0 && b != 0; })));
  TS_RETURN_IF_ERROR(r.add(logicalBinaryOp(
      "logical_or", "Elementwise a or b on bool with broadcasting (ONNX Or).",
      [](double a, double b) { return (a != 0 || b != 0) ? 1.0 : 0.0; },
      [](int64_t a, int64_t b) -> Expected<int64_t> { return a != 0 || b != 0; })));
  TS_RETURN_IF_ERROR(r.add(logicalBinaryOp(
      "logical_xor", "Elementwise a xor b on bool with broadcasting (ONNX Xor).",
      [](double a, double b) { return ((a != 0) != (b != 0)) ? 1.0 : 0.0; },
      [](int64_t a, int64_t b) -> Expected<int64_t> { return (a != 0) != (b != 0); })));
  return okStatus();
}

} // namespace

Status registerElementwiseOps(OpRegistry &r) {
  TS_RETURN_IF_ERROR(registerBinary(r));
  TS_RETURN_IF_ERROR(registerComparisons(r));
  TS_RETURN_IF_ERROR(registerUnaryMath(r));
  TS_RETURN_IF_ERROR(registerActivations(r));
  TS_RETURN_IF_ERROR(registerWhere(r));
  TS_RETURN_IF_ERROR(registerCast(r));
  TS_RETURN_IF_ERROR(registerMod(r));
  TS_RETURN_IF_ERROR(registerBitShift(r));
  TS_RETURN_IF_ERROR(registerOrderedComparisons(r));
  TS_RETURN_IF_ERROR(registerTrigonometric(r));
  TS_RETURN_IF_ERROR(registerPredicates(r));
  TS_RETURN_IF_ERROR(registerLogical(r));
  return okStatus();
}

} // namespace tessera::ir::ops
