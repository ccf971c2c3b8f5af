//===- ir/ops/transform_cumsum_topk.cpp - Transform ops: cumsum, topk ----===//
//
// The index-ordering ops of the transform family: cumsum and topk.
// Semantics follow ONNX (opset 13-17). Both take numeric tensors.
//
//===----------------------------------------------------------------------===//
#include "ir/ops/common.h"
#include "ir/ops/ops.h"
#include "ir/ops/transform_common.h"

#include <algorithm>
#include <numeric>

namespace tessera::ir::ops {

namespace {

// --- cumsum ---------------------------------------------------------------------

/// ONNX CumSum along 'axis': y[..., j, ...] = sum of x[..., i, ...] for
/// i <= j (i < j when exclusive; i >= j / i > j when reverse).
Expected<Type> cumsumRelation(std::span<const Type> in, const Attrs &attrs) {
  TS_RETURN_IF_ERROR(requireNumeric(in, 0));
  TS_RETURN_IF_ERROR(normalizeAxis(attrs.getInt("axis"), int64_t(in[0].rank())));
  return in[0];
}

Expected<std::vector<Tensor>> cumsumKernel(std::span<const Tensor> in, const Attrs &attrs,
                                           const Type &outType) {
  const Tensor &x = in[0];
  TS_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(attrs.getInt("axis"), int64_t(x.rank())));
  bool exclusive = attrs.getBool("exclusive"), reverse = attrs.getBool("reverse");
  const Shape &s = x.shape();
  int64_t n = s[size_t(axis)];
  int64_t inner = numElements(std::span(s).subspan(size_t(axis) + 1));
  int64_t outer = numElements(std::span(s).subspan(0, size_t(axis)));
  bool fp = isFloat(x.dtype());
  Tensor y(outType.dtype(), outType.shape());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double accF = 0;
      int64_t accI = 0;
      for (int64_t step = 0; step < n; ++step) {
        int64_t k = reverse ? n - 1 - step : step;
        int64_t at = (o * n + k) * inner + i;
        if (exclusive) {
          fp ? y.setDouble(at, accF) : y.setInt(at, accI);
        }
        if (fp)
          accF += x.getDouble(at);
        else
          accI = int64_t(uint64_t(accI) + uint64_t(x.getInt(at))); // wraps
        if (!exclusive) {
          fp ? y.setDouble(at, accF) : y.setInt(at, accI);
        }
      }
    }
  return std::vector<Tensor>{y};
}

// --- topk -----------------------------------------------------------------------

/// ONNX TopK: the k largest (or smallest) entries along 'axis' and their
/// indices, as a tuple (values, i64 indices); ties keep the lower index first.
Expected<Type> topkRelation(std::span<const Type> in, const Attrs &attrs) {
  TS_RETURN_IF_ERROR(requireNumeric(in, 0));
  const Shape &s = in[0].shape();
  TS_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(attrs.getInt("axis"), int64_t(s.size())));
  int64_t k = attrs.getInt("k");
  if (k < 0 || k > s[size_t(axis)])
    return Error::format("attribute 'k' = {} is out of range for axis {} of size {} "
                         "(expected 0..{})",
                         k, axis, s[size_t(axis)], s[size_t(axis)]);
  Shape out = s;
  out[size_t(axis)] = k;
  return Type::tuple({Type::tensor(in[0].dtype(), out), Type::tensor(DType::I64, out)});
}

Expected<std::vector<Tensor>> topkKernel(std::span<const Tensor> in, const Attrs &attrs,
                                         const Type &outType) {
  const Tensor &x = in[0];
  TS_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(attrs.getInt("axis"), int64_t(x.rank())));
  int64_t k = attrs.getInt("k");
  bool largest = attrs.getBool("largest");
  const Shape &s = x.shape();
  int64_t n = s[size_t(axis)];
  int64_t inner = numElements(std::span(s).subspan(size_t(axis) + 1));
  int64_t outer = numElements(std::span(s).subspan(0, size_t(axis)));
  Tensor values(x.dtype(), outType.fields()[0].shape());
  Tensor indices(DType::I64, outType.fields()[1].shape());
  size_t esize = dtypeSize(x.dtype());
  bool fp = isFloat(x.dtype());
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t j) { return (o * n + j) * inner + i; };
      std::iota(order.begin(), order.end(), int64_t(0));
      // Strict weak order on (value, index): the wanted end first, then the
      // lower index. Integers compare exactly (no conversion to double).
      auto before = [&](int64_t a, int64_t b) {
        // Order keys: the values, except u64 (see orderKey).
        auto key = [&](int64_t j) { return orderKey(x.dtype(), x.getInt(at(j))); };
        bool lt = fp ? x.getDouble(at(a)) < x.getDouble(at(b)) : key(a) < key(b);
        bool gt = fp ? x.getDouble(at(a)) > x.getDouble(at(b)) : key(a) > key(b);
        return largest ? gt : lt;
      };
      std::stable_sort(order.begin(), order.end(), before);
      for (int64_t j = 0; j < k; ++j) {
        int64_t dst = (o * k + j) * inner + i;
        copyElem(x, at(order[size_t(j)]), values, dst, esize);
        indices.setInt(dst, order[size_t(j)]);
      }
    }
  return std::vector<Tensor>{values, indices};
}

} // namespace

Status registerCumsumTopkOps(OpRegistry &r) {
  using K = AttrKind;

  TS_RETURN_IF_ERROR(r.add(Op{
      "cumsum",
      "Cumulative sum along an axis (ONNX CumSum).",
      {"data"},
      1,
      1,
      {{"axis", K::Int, AttrValue(int64_t(0)), "axis to accumulate along (negative allowed)"},
       {"exclusive", K::Bool, AttrValue(false), "leave the current element out of its sum"},
       {"reverse", K::Bool, AttrValue(false), "accumulate from the end of the axis"}},
      OpPattern::Opaque,
      cumsumRelation,
      cumsumKernel,
  }));

  TS_RETURN_IF_ERROR(r.add(Op{
      "topk",
      "The k largest or smallest entries along an axis and their i64 indices; returns a "
      "tuple (ONNX TopK).",
      {"data"},
      1,
      1,
      {{"k", K::Int, std::nullopt, "number of entries to keep (0..dim)"},
       {"axis", K::Int, AttrValue(int64_t(-1)), "axis to select along (negative allowed)"},
       {"largest", K::Bool, AttrValue(true), "keep the largest entries (else the smallest)"},
       {"sorted", K::Bool, AttrValue(true),
        "accepted for ONNX; the result is always sorted, ties by lower index"}},
      OpPattern::Opaque,
      topkRelation,
      topkKernel,
  }));

  return okStatus();
}

} // namespace tessera::ir::ops
