//===- ir/ops/elementwise_common.h - Elementwise op helpers ----*- C++ -*-===//
//
// Private to the elementwise ops (ir/ops/elementwise*.cpp): which dtypes an
// op accepts, the unary and broadcast binary kernel and relation builders,
// and the scalar functions behind the arithmetic and ordering ops. Semantics
// are described in elementwise.cpp. Everything lives in an anonymous
// namespace: each elementwise file gets its own copy, so nothing here can
// clash with another family's helpers.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/ops/common.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numeric>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

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

inline bool accepts(Accepts a, DType t) {
  switch (a) {
  case Accepts::Float: return isFloat(t);
  case Accepts::FloatOrSigned: return isFloat(t) || isSignedInteger(t);
  case Accepts::Numeric: return isFloat(t) || isInteger(t);
  case Accepts::Any: return true;
  }
  return false;
}

/// "argument 0 must be a numeric tensor, got bool[2]".
inline Status requireAccepted(std::span<const Type> inputs, size_t index, Accepts a) {
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
inline int64_t wrapAdd(int64_t a, int64_t b) { return int64_t(uint64_t(a) + uint64_t(b)); }
inline int64_t wrapSub(int64_t a, int64_t b) { return int64_t(uint64_t(a) - uint64_t(b)); }
inline int64_t wrapMul(int64_t a, int64_t b) { return int64_t(uint64_t(a) * uint64_t(b)); }
inline int64_t wrapNeg(int64_t a) { return int64_t(uint64_t(0) - uint64_t(a)); }

/// For each flat index of `outShape`, the flat index of the element of an
/// input of shape `inShape` that numpy broadcasting reads.
inline std::vector<int64_t> broadcastIndices(const Shape &outShape, const Shape &inShape) {
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
inline TypeRelation unaryRelation(Accepts a) {
  return [a](std::span<const Type> in, const Attrs &) -> Expected<Type> {
    TS_RETURN_IF_ERROR(requireAccepted(in, 0, a));
    return in[0];
  };
}

inline Op unaryOp(std::string name, std::string description, Accepts a, Kernel kernel,
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
inline TypeRelation binaryRelation(Accepts a, bool boolResult) {
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
inline Kernel binaryKernel(std::string name, FloatBinary f, IntBinary g, UIntBinary u = nullptr) {
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

inline Op binaryOp(std::string name, std::string description, Accepts a, bool boolResult,
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
inline Expected<int64_t> intDivide(int64_t a, int64_t b) {
  if (b == 0)
    return Error::format("integer division of {} by zero", a);
  if (b == -1)
    return wrapNeg(a); // INT64_MIN / -1 would overflow
  return a / b;
}

inline Expected<uint64_t> uintDivide(uint64_t a, uint64_t b) {
  if (b == 0)
    return Error::format("integer division of {} by zero", a);
  return a / b;
}

/// Integer power by repeated squaring (wrapping). A negative exponent gives
/// the real result truncated toward zero (1, -1 or 0, as C's
/// int(pow(a, b)) does); zero to a negative power is an error.
inline Expected<int64_t> intPower(int64_t a, int64_t b) {
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
inline Expected<uint64_t> uintPower(uint64_t a, uint64_t b) {
  uint64_t result = 1, base = a;
  for (uint64_t e = b; e; e >>= 1) {
    if (e & 1)
      result *= base;
    base *= base;
  }
  return result;
}

/// numpy maximum/minimum: NaN in either operand gives NaN.
inline double floatMax(double a, double b) { return std::isnan(a) || std::isnan(b) ? kNaN : std::max(a, b); }
inline double floatMin(double a, double b) { return std::isnan(a) || std::isnan(b) ? kNaN : std::min(a, b); }

/// ONNX Round: to nearest, ties to even (keeps the sign of zero).
inline double roundHalfEven(double x) {
  if (std::abs(x - std::trunc(x)) == 0.5)
    return 2.0 * std::round(x / 2.0);
  return std::round(x);
}

/// Logistic function, stable for large |x|.
inline double sigmoid(double x) {
  if (x >= 0)
    return 1.0 / (1.0 + std::exp(-x));
  double e = std::exp(x);
  return e / (1.0 + e);
}

/// Clamps to [0, 1]; NaN passes through.
inline double clamp01(double v) { return std::isnan(v) ? v : std::clamp(v, 0.0, 1.0); }

/// The u64 versions of the ordering ops.
inline Expected<uint64_t> uintMax(uint64_t a, uint64_t b) { return std::max(a, b); }
inline Expected<uint64_t> uintMin(uint64_t a, uint64_t b) { return std::min(a, b); }
inline Expected<uint64_t> uintLess(uint64_t a, uint64_t b) { return uint64_t(a < b); }
inline Expected<uint64_t> uintGreater(uint64_t a, uint64_t b) { return uint64_t(a > b); }
inline Expected<uint64_t> uintLessEqual(uint64_t a, uint64_t b) { return uint64_t(a <= b); }
inline Expected<uint64_t> uintGreaterEqual(uint64_t a, uint64_t b) { return uint64_t(a >= b); }

} // namespace
} // namespace tessera::ir::ops
