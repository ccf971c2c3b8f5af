//===- ir/ops/elementwise_ext.cpp - Elementwise ops added for ONNX -------===//
//
// The elementwise ops added for the ONNX frontend, with ONNX (opset 13-20)
// semantics:
//   remainder          mod
//   bits               bit_shift (unsigned integers)
//   comparisons        less_equal greater_equal
//   unary math         sign sin cos tan asin acos atan sinh cosh asinh acosh
//                      atanh
//   predicates         isnan isinf (result bool)
//   logic on bool      logical_not logical_and logical_or logical_xor
// The other elementwise ops are in elementwise.cpp, which describes the
// numeric conventions both files follow; the shared helpers are in
// elementwise_common.h.
//
//===----------------------------------------------------------------------===//
#include "ir/ops/common.h"
#include "ir/ops/elementwise_common.h"
#include "ir/ops/ops.h"

#include <cmath>
#include <string>

namespace tessera::ir::ops {

namespace {

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

Status registerElementwiseExtOps(OpRegistry &r) {
  TS_RETURN_IF_ERROR(registerMod(r));
  TS_RETURN_IF_ERROR(registerBitShift(r));
  TS_RETURN_IF_ERROR(registerOrderedComparisons(r));
  TS_RETURN_IF_ERROR(registerTrigonometric(r));
  TS_RETURN_IF_ERROR(registerPredicates(r));
  TS_RETURN_IF_ERROR(registerLogical(r));
  return okStatus();
}

} // namespace tessera::ir::ops
