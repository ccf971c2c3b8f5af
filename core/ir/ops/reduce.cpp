//===- ir/ops/reduce.cpp - Reduction ops ----------------------------------===//
//
// reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_prod with ONNX
// ReduceSum/ReduceMean/ReduceMax/ReduceMin/ReduceProd semantics (axes given
// as an attribute):
//   axes      ints, default [] = reduce every axis; negative axes count from
//             the end; duplicate or out-of-range axes are errors
//   keepdims  bool, default true: reduced axes stay as size 1
// The output dtype is the input dtype. Reference kernels accumulate in
// double for float dtypes and in int64 for integer dtypes.
//
// argmax, argmin (ONNX ArgMax/ArgMin) reduce one axis to the i64 index of
// its largest / smallest element.
//
//===----------------------------------------------------------------------===//
#include "ir/ops/common.h"
#include "ir/ops/ops.h"

#include <cmath>
#include <limits>

namespace tessera::ir::ops {

namespace {

enum class ReduceKind { Sum, Mean, Max, Min, Prod };

/// Which axes of a rank-`rank` tensor are reduced. Errors name 'axes':
/// "attribute 'axes' = 4 is out of range for rank 2 (expected -2..1)",
/// "attribute 'axes' = [1, -1] names axis 1 more than once".
Expected<std::vector<bool>> reducedAxes(int64_t rank, const std::vector<int64_t> &axes) {
  std::vector<bool> reduced(static_cast<size_t>(rank), axes.empty());
  for (int64_t a : axes) {
    TS_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(a, rank, "axes"));
    if (reduced[size_t(axis)])
      return Error::format("attribute 'axes' = {} names axis {} more than once",
                           attrValueStr(AttrValue{axes}), axis);
    reduced[size_t(axis)] = true;
  }
  return reduced;
}

/// The input shape with reduced axes set to 1 (the keepdims shape).
Shape keptShape(const Shape &shape, const std::vector<bool> &reduced) {
  Shape out = shape;
  for (size_t i = 0; i < out.size(); ++i)
    if (reduced[i])
      out[i] = 1;
  return out;
}

/// Reduced axes removed, or kept as 1 when `keepdims`.
Shape outputShape(const Shape &shape, const std::vector<bool> &reduced, bool keepdims) {
  Shape out;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (!reduced[i])
      out.push_back(shape[i]);
    else if (keepdims)
      out.push_back(1);
  }
  return out;
}

TypeRelation reduceRelation(bool numericOnly) {
  return [numericOnly](std::span<const Type> in, const Attrs &attrs) -> Expected<Type> {
    if (numericOnly && isBool(in[0].dtype()))
      return Error::format("argument 0 must be a numeric tensor, got {}", in[0].str());
    TS_ASSIGN_OR_RETURN(auto reduced, reducedAxes(int64_t(in[0].rank()), attrs.getInts("axes")));
    return Type::tensor(in[0].dtype(),
                        outputShape(in[0].shape(), reduced, attrs.getBool("keepdims")));
  };
}

/// The shared reduction loop: every input element is folded into the output
/// element it reduces to. Over an empty set, sum gives 0, prod gives 1, max
/// gives -inf (or the dtype minimum), min gives +inf (or the dtype maximum)
/// and the mean of floats is NaN; the mean of an empty set of integers is an
/// error.
Expected<std::vector<Tensor>> reduceKernel(ReduceKind kind, const char *name,
                                           std::span<const Tensor> inputs, const Attrs &attrs,
                                           const Type &outType) {
  const Tensor &x = inputs[0];
  TS_ASSIGN_OR_RETURN(auto reduced, reducedAxes(int64_t(x.rank()), attrs.getInts("axes")));
  Shape kept = keptShape(x.shape(), reduced);
  int64_t outN = numElements(kept);
  int64_t count = 1; // elements folded into each output element
  for (size_t i = 0; i < reduced.size(); ++i)
    if (reduced[i])
      count *= x.shape()[i];

  // Output element of each input element.
  std::vector<int64_t> target(static_cast<size_t>(x.numel()));
  std::vector<int64_t> index(x.rank());
  for (int64_t i = 0; i < x.numel(); ++i) {
    unravelIndex(i, x.shape(), index);
    target[size_t(i)] = broadcastSourceIndex(index, kept);
  }

  Tensor out(x.dtype(), outType.shape());
  if (isFloat(x.dtype())) {
    constexpr double inf = std::numeric_limits<double>::infinity();
    double init = kind == ReduceKind::Max    ? -inf
                  : kind == ReduceKind::Min  ? inf
                  : kind == ReduceKind::Prod ? 1.0
                                             : 0.0;
    std::vector<double> acc(static_cast<size_t>(outN), init);
    for (int64_t i = 0; i < x.numel(); ++i) {
      double v = x.getDouble(i);
      double &a = acc[size_t(target[size_t(i)])];
      switch (kind) {
      case ReduceKind::Sum:
      case ReduceKind::Mean: a += v; break;
      case ReduceKind::Prod: a *= v; break;
      // NaN propagates, as numpy max/min.
      case ReduceKind::Max: a = (std::isnan(a) || std::isnan(v)) ? NAN : std::max(a, v); break;
      case ReduceKind::Min: a = (std::isnan(a) || std::isnan(v)) ? NAN : std::min(a, v); break;
      }
    }
    for (int64_t j = 0; j < outN; ++j)
      out.setDouble(j, kind == ReduceKind::Mean ? acc[size_t(j)] / double(count)
                                                : acc[size_t(j)]);
    return std::vector<Tensor>{std::move(out)};
  }

  if (kind == ReduceKind::Mean) {
    // numpy mean then cast: the exact mean truncated toward zero.
    if (count == 0 && outN > 0)
      return Error::format("{}: mean of an empty set of integers (input {})", name,
                           x.type().str());
    std::vector<__int128> acc(static_cast<size_t>(outN), 0);
    const bool u64 = x.dtype() == DType::U64;
    for (int64_t i = 0; i < x.numel(); ++i)
      acc[size_t(target[size_t(i)])] +=
          u64 ? __int128(x.getUInt(i)) : __int128(x.getInt(i)); // exact
    for (int64_t j = 0; j < outN; ++j)
      out.setInt(j, int64_t(acc[size_t(j)] / count)); // u64: its bit pattern
    return std::vector<Tensor>{std::move(out)};
  }

  // Max and Min compare order keys (the value itself except for u64, whose
  // bit patterns are reordered, see orderKey); Sum and Prod wrap, which is
  // exact on u64 bit patterns too.
  const DType t = x.dtype();
  const bool ordered = kind == ReduceKind::Max || kind == ReduceKind::Min;
  auto [lo, hi] = intRange(t);
  if (t == DType::U64)
    lo = orderKey(t, 0), hi = orderKey(t, -1); // keys of 0 and 2^64 - 1
  int64_t init = kind == ReduceKind::Max    ? lo
                 : kind == ReduceKind::Min  ? hi
                 : kind == ReduceKind::Prod ? 1
                                            : 0;
  std::vector<int64_t> acc(static_cast<size_t>(outN), init);
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t v = ordered ? orderKey(t, x.getInt(i)) : x.getInt(i);
    int64_t &a = acc[size_t(target[size_t(i)])];
    switch (kind) {
    case ReduceKind::Sum: a = int64_t(uint64_t(a) + uint64_t(v)); break; // wraps
    case ReduceKind::Prod: a = int64_t(uint64_t(a) * uint64_t(v)); break; // wraps
    case ReduceKind::Max: a = std::max(a, v); break;
    case ReduceKind::Min: a = std::min(a, v); break;
    case ReduceKind::Mean: break;
    }
  }
  for (int64_t j = 0; j < outN; ++j)
    out.setInt(j, ordered ? fromOrderKey(t, acc[size_t(j)])
                          : acc[size_t(j)]); // wraps to the dtype
  return std::vector<Tensor>{std::move(out)};
}

Op reduceOp(const char *name, std::string description, ReduceKind kind, bool numericOnly) {
  return Op{
      .name = name,
      .description = std::move(description),
      .argNames = {"data"},
      .minArgs = 1,
      .maxArgs = 1,
      .attrs = {AttrSpec{"axes", AttrKind::Ints, AttrValue{std::vector<int64_t>{}},
                         "axes to reduce; empty reduces every axis"},
                AttrSpec{"keepdims", AttrKind::Bool, AttrValue{true},
                         "keep reduced axes as size 1"}},
      .pattern = OpPattern::Reduction,
      .relation = reduceRelation(numericOnly),
      .kernel = [kind, name](std::span<const Tensor> in, const Attrs &attrs,
                             const Type &outType) {
        return reduceKernel(kind, name, in, attrs, outType);
      }};
}

//===----------------------------------------------------------------------===//
// argmax, argmin
//===----------------------------------------------------------------------===//

/// Numeric input; the axis (attribute 'axis') removed, or kept as 1 when
/// 'keepdims'; i64 result. The axis must not be empty.
Expected<Type> argRelation(std::span<const Type> in, const Attrs &attrs) {
  if (isBool(in[0].dtype()))
    return Error::format("argument 0 must be a numeric tensor, got {}", in[0].str());
  TS_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(attrs.getInt("axis"), int64_t(in[0].rank())));
  if (in[0].shape()[size_t(axis)] == 0)
    return Error::format("axis {} is empty: no index to select", axis);
  std::vector<bool> reduced(in[0].rank(), false);
  reduced[size_t(axis)] = true;
  return Type::tensor(DType::I64, outputShape(in[0].shape(), reduced, attrs.getBool("keepdims")));
}

/// Index of the largest (`max`) or smallest element along 'axis'; ties go to
/// the first index, or the last with 'select_last_index'. NaN counts as
/// larger and smaller than everything (numpy argmax/argmin return the first
/// NaN).
Expected<std::vector<Tensor>> argKernel(bool max, std::span<const Tensor> inputs,
                                        const Attrs &attrs, const Type &outType) {
  const Tensor &x = inputs[0];
  TS_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(attrs.getInt("axis"), int64_t(x.rank())));
  bool last = attrs.getBool("select_last_index");
  int64_t n = x.shape()[size_t(axis)], inner = 1;
  for (size_t i = size_t(axis) + 1; i < x.rank(); ++i)
    inner *= x.shape()[i];
  int64_t outer = n == 0 ? 0 : x.numel() / (n * inner);
  Tensor out(DType::I64, outType.shape());
  bool floats = isFloat(x.dtype());
  // Whether element j should replace the best element b so far.
  auto better = [&](int64_t j, int64_t b) {
    if (floats) {
      double v = x.getDouble(j), w = x.getDouble(b);
      if (std::isnan(w))
        return last && std::isnan(v);
      if (std::isnan(v))
        return true;
      return last ? (max ? v >= w : v <= w) : (max ? v > w : v < w);
    }
    int64_t v = orderKey(x.dtype(), x.getInt(j)), w = orderKey(x.dtype(), x.getInt(b));
    return last ? (max ? v >= w : v <= w) : (max ? v > w : v < w);
  };
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t base = o * n * inner + i, best = 0;
      for (int64_t k = 1; k < n; ++k)
        if (better(base + k * inner, base + best * inner))
          best = k;
      out.data<int64_t>()[o * inner + i] = best;
    }
  return std::vector<Tensor>{std::move(out)};
}

Op argOp(const char *name, std::string description, bool max) {
  return Op{.name = name,
            .description = std::move(description),
            .argNames = {"data"},
            .minArgs = 1,
            .maxArgs = 1,
            .attrs = {AttrSpec{"axis", AttrKind::Int, AttrValue{int64_t(0)},
                               "axis to reduce; negative counts from the end"},
                      AttrSpec{"keepdims", AttrKind::Bool, AttrValue{true},
                               "keep the reduced axis as size 1"},
                      AttrSpec{"select_last_index", AttrKind::Bool, AttrValue{false},
                               "on ties, the last index instead of the first"}},
            .pattern = OpPattern::Reduction,
            .relation = argRelation,
            .kernel = [max](std::span<const Tensor> in, const Attrs &attrs,
                            const Type &outType) { return argKernel(max, in, attrs, outType); }};
}

} // namespace

Status registerReduceOps(OpRegistry &r) {
  // reduce_sum: ONNX ReduceSum; numeric dtypes; integer sums wrap.
  TS_RETURN_IF_ERROR(r.add(
      reduceOp("reduce_sum", "Sum over 'axes' (ONNX ReduceSum).", ReduceKind::Sum, true)));
  // reduce_mean: ONNX ReduceMean; numeric dtypes; integer means truncate
  // toward zero (-7 / 2 = -3).
  TS_RETURN_IF_ERROR(r.add(
      reduceOp("reduce_mean", "Mean over 'axes' (ONNX ReduceMean).", ReduceKind::Mean, true)));
  // reduce_max, reduce_min: ONNX ReduceMax/ReduceMin; every dtype including
  // bool (opset 20: any / all); NaN propagates.
  TS_RETURN_IF_ERROR(r.add(
      reduceOp("reduce_max", "Maximum over 'axes' (ONNX ReduceMax).", ReduceKind::Max, false)));
  TS_RETURN_IF_ERROR(r.add(
      reduceOp("reduce_min", "Minimum over 'axes' (ONNX ReduceMin).", ReduceKind::Min, false)));
  // reduce_prod: ONNX ReduceProd; numeric dtypes; integer products wrap.
  TS_RETURN_IF_ERROR(r.add(
      reduceOp("reduce_prod", "Product over 'axes' (ONNX ReduceProd).", ReduceKind::Prod, true)));
  // argmax, argmin: ONNX ArgMax/ArgMin (opset 12+ select_last_index).
  TS_RETURN_IF_ERROR(r.add(argOp(
      "argmax", "Index (i64) of the largest element along 'axis' (ONNX ArgMax).", true)));
  TS_RETURN_IF_ERROR(r.add(argOp(
      "argmin", "Index (i64) of the smallest element along 'axis' (ONNX ArgMin).", false)));
  return okStatus();
}

} // namespace tessera::ir::ops
