//===- ir/ops/data_dependent.cpp - Ops whose result size the data decides -===//
//
// nonzero, non_max_suppression and unique: the size of their result is a run-time
// symbol (ir/symbol.h runtimeSymbol) given as attribute 'count'; the op
// returns that size too, as an i64 [1] tensor, so that the interpreter and
// the executor learn the symbol's value when it runs (Op::dataDependent;
// docs/design/0013-dynamic-shapes.md, "Run-time values"). symbol_values
// goes the other way: symbols' values as a tensor (ONNX Shape of a tensor
// whose size is known only at run time, compared or computed with), and
// range over symbolic ends (ONNX Range over a Shape value).
//
//===----------------------------------------------------------------------===//
#include "ir/ops/common.h"

#include <algorithm>
#include "ir/ops/nms_select.h"
#include "ir/ops/ops.h"
#include "ir/ops/unique.h"
#include "ir/ops/unique_select.h"

#include <cmath>

namespace tessera::ir::ops {

namespace {

/// The dim a data-dependent op's result has: its 'count' attribute (a
/// run-time symbol, or a constant in a model whose data is known).
Expected<int64_t> countAttr(const Attrs &attrs) {
  const int64_t count = attrs.getInt("count");
  if (count < 0)
    return Error::format("attribute 'count' = {} must be a size (a run-time symbol)", count);
  return count;
}

// --- nonzero --------------------------------------------------------------------

/// ONNX NonZero: the i64 [rank, count] indices of the non-zero elements in
/// row-major order (a scalar counts as 1-d), and [count].
Expected<Type> nonzeroRelation(std::span<const Type> in, const Attrs &attrs) {
  TS_ASSIGN_OR_RETURN(int64_t count, countAttr(attrs));
  const int64_t rank = std::max<int64_t>(int64_t(in[0].rank()), 1);
  return Type::tuple({Type::tensor(DType::I64, {rank, count}), Type::tensor(DType::I64, {1})});
}

Expected<std::vector<Tensor>> nonzeroKernel(std::span<const Tensor> in, const Attrs &,
                                            const Type &) {
  const Tensor &x = in[0];
  Shape shape = x.shape();
  if (shape.empty())
    shape = {1};
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < x.numel(); ++i)
    if (isFloat(x.dtype()) ? x.getDouble(i) != 0 : x.getInt(i) != 0)
      hits.push_back(i);
  const auto rank = int64_t(shape.size()), n = int64_t(hits.size());
  Tensor indices(DType::I64, {rank, n});
  std::vector<int64_t> index(shape.size());
  for (int64_t k = 0; k < n; ++k) {
    unravelIndex(hits[size_t(k)], shape, index);
    for (int64_t d = 0; d < rank; ++d)
      indices.data<int64_t>()[d * n + k] = index[size_t(d)];
  }
  return std::vector<Tensor>{indices, Tensor::fromInts(DType::I64, {1}, std::vector<int64_t>{n})};
}

// --- non_max_suppression ----------------------------------------------------------

/// ONNX NonMaxSuppression: boxes f32 [B, N, 4], scores f32 [B, C, N] ->
/// i64 [count, 3] rows (batch, class, box) in batch, class and selection
/// order (ir/ops/nms_select.h), and [count].
Expected<Type> nmsRelation(std::span<const Type> in, const Attrs &attrs) {
  TS_ASSIGN_OR_RETURN(int64_t count, countAttr(attrs));
  TS_RETURN_IF_ERROR(requireRank(in, 0, 3, "boxes"));
  TS_RETURN_IF_ERROR(requireRank(in, 1, 3, "scores"));
  const Shape &b = in[0].shape(), &s = in[1].shape();
  if (in[0].dtype() != DType::F32 || in[1].dtype() != DType::F32)
    return Error::format("boxes and scores must be f32, got {} and {}", in[0].str(), in[1].str());
  if (b[2] != 4 || s[0] != b[0] || s[2] != b[1])
    return Error::format("boxes {} and scores {} must be [B, N, 4] and [B, C, N]", in[0].str(),
                         in[1].str());
  if (in.size() != 2 && in.size() != 5)
    return Error::format("takes boxes and scores, and optionally max_output, iou_threshold and "
                         "score_threshold (5 arguments), not {} arguments",
                         in.size());
  for (size_t i = 2; i < in.size(); ++i) { // one element each: i64, f32, f32
    const DType want = i == 2 ? DType::I64 : DType::F32;
    if (!in[i].isStatic() || in[i].numElements() != 1 || in[i].dtype() != want)
      return Error::format("argument {} ('{}') must be one {}, got {}", i,
                           i == 2 ? "max_output" : i == 3 ? "iou_threshold" : "score_threshold",
                           dtypeName(want), in[i].str());
  }
  return Type::tuple({Type::tensor(DType::I64, {count, 3}), Type::tensor(DType::I64, {1})});
}

Expected<std::vector<Tensor>> nmsKernel(std::span<const Tensor> in, const Attrs &attrs,
                                        const Type &) {
  const Shape &s = in[1].shape();
  const int64_t batches = s[0], classes = s[1], n = s[2];
  std::vector<int64_t> selected(static_cast<size_t>(n)), rows;
  std::vector<int64_t> scratch(static_cast<size_t>(nms::scratchBytes(n) / 8 + 1));
  // The thresholds: the attributes, or the data of arguments 2-4 (max_output
  // within the attribute's, which memory was planned for).
  int64_t maxOut = attrs.getInt("max_output");
  float iou = float(attrs.getFloat("iou_threshold")),
        scoreThr = float(attrs.getFloat("score_threshold"));
  if (in.size() == 5) {
    maxOut = std::clamp<int64_t>(in[2].getInt(0), 0, maxOut);
    iou = float(in[3].getDouble(0));
    scoreThr = float(in[4].getDouble(0));
  }
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t c = 0; c < classes; ++c) {
      const int64_t k = nms::select(
          in[0].data<float>() + b * n * 4, in[1].data<float>() + (b * classes + c) * n, 1, n,
          maxOut, iou, attrs.getBool("use_score_threshold"), scoreThr,
          attrs.getBool("center_point_box"), selected.data(), scratch.data());
      for (int64_t i = 0; i < k; ++i)
        rows.insert(rows.end(), {b, c, selected[size_t(i)]});
    }
  const auto count = int64_t(rows.size() / 3);
  return std::vector<Tensor>{Tensor::fromInts(DType::I64, {count, 3}, rows),
                             Tensor::fromInts(DType::I64, {1}, std::vector<int64_t>{count})};
}

// --- unique ---------------------------------------------------------------------------

/// ONNX Unique over the slices along 'axis' (the importer flattens the input
/// when the model gives no axis): the first occurrence of each unique slice,
/// each slice's group and each group's size, all i64, and count.
Expected<Type> uniqueRelation(std::span<const Type> in, const Attrs &attrs) {
  TS_ASSIGN_OR_RETURN(int64_t count, countAttr(attrs));
  const int64_t axis = attrs.getInt("axis"), rank = int64_t(in[0].rank());
  if (axis < 0 || axis >= rank)
    return Error::format("attribute 'axis' = {} is not a dim of {}", axis, in[0].str());
  const int64_t n = in[0].shape()[size_t(axis)];
  return Type::tuple({Type::tensor(DType::I64, {count}), Type::tensor(DType::I64, {n}),
                      Type::tensor(DType::I64, {count}), Type::tensor(DType::I64, {1})});
}

Expected<std::vector<Tensor>> uniqueKernel(std::span<const Tensor> in, const Attrs &attrs,
                                           const Type &) {
  UniqueGroups g = uniqueGroups(in[0], attrs.getInt("axis"), attrs.getBool("sorted"));
  const auto u = int64_t(g.first.size());
  return std::vector<Tensor>{Tensor::fromInts(DType::I64, {u}, g.first),
                             Tensor::fromInts(DType::I64, {int64_t(g.inverse.size())}, g.inverse),
                             Tensor::fromInts(DType::I64, {u}, g.counts),
                             Tensor::fromInts(DType::I64, {1}, std::vector<int64_t>{u})};
}

// --- symbol_values -------------------------------------------------------------------

Expected<Type> symbolValuesRelation(std::span<const Type>, const Attrs &attrs) {
  const std::vector<int64_t> values = attrs.getInts("values"), shape = attrs.getInts("shape");
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return Error::format("attribute 'shape' = {} must hold sizes", attrValueStr(shape));
    n *= d;
  }
  if (n != int64_t(values.size()))
    return Error::format("attribute 'values' has {} elements, 'shape' {} holds {}",
                         values.size(), attrValueStr(shape), n);
  return Type::tensor(DType::I64, shape);
}

Expected<std::vector<Tensor>> symbolValuesKernel(std::span<const Tensor>, const Attrs &attrs,
                                                 const Type &) {
  return std::vector<Tensor>{
      Tensor::fromInts(DType::I64, attrs.getInts("shape"), attrs.getInts("values"))};
}

// --- range -------------------------------------------------------------------------

/// start, start + delta, ... up to (not including) limit: max(ceil((limit -
/// start) / delta), 0) elements (ONNX Range); the ends may be symbols (a
/// position index over a sequence of symbolic length).
Expected<Type> rangeRelation(std::span<const Type>, const Attrs &attrs) {
  const int64_t start = attrs.getInt("start"), limit = attrs.getInt("limit"),
                delta = attrs.getInt("delta");
  if (delta == 0)
    return Error("attribute 'delta' must not be 0");
  const int64_t span = limit - start;
  const int64_t n = delta > 0 ? (span + delta - 1) / delta : (span + delta + 1) / delta;
  return Type::tensor(attrs.getDType("dtype", DType::I64), {std::max<int64_t>(n, 0)});
}

Expected<std::vector<Tensor>> rangeKernel(std::span<const Tensor>, const Attrs &attrs,
                                          const Type &outType) {
  Tensor out(outType.dtype(), outType.shape());
  for (int64_t i = 0; i < out.numel(); ++i)
    out.setInt(i, attrs.getInt("start") + i * attrs.getInt("delta"));
  return std::vector<Tensor>{out};
}

// --- range_count -------------------------------------------------------------------

/// The number of elements of ONNX Range(start, limit, delta) over scalars
/// known only at run time: max(ceil((limit - start) / delta), 0), as the
/// one field of a tuple (the count a data-dependent op returns last).
Expected<Type> rangeCountRelation(std::span<const Type> in, const Attrs &attrs) {
  TS_ASSIGN_OR_RETURN(int64_t count, countAttr(attrs));
  (void)count;
  for (size_t i = 0; i < 3; ++i)
    if (!in[i].isTensor() || in[i].numElements() != 1 || in[i].dtype() != in[0].dtype() ||
        !(isFloat(in[i].dtype()) || isInteger(in[i].dtype())))
      return Error::format("start, limit and delta must be numbers of one dtype, one element "
                           "each; argument {} is {}",
                           i, in[i].str());
  return Type::tuple({Type::tensor(DType::I64, {1})});
}

/// max(ceil((limit - start) / delta), 0); an error for delta 0.
Expected<int64_t> rangeCount(const Tensor &start, const Tensor &limit, const Tensor &delta) {
  if (isFloat(start.dtype())) {
    const double d = delta.getDouble(0);
    if (d == 0 || std::isnan(d))
      return Error::format("delta is {}: a range needs a non-zero step", d);
    const double n = std::ceil((limit.getDouble(0) - start.getDouble(0)) / d);
    if (!(n < 9.2e18))
      return Error::format("the range from {} to {} by {} has too many elements",
                           start.getDouble(0), limit.getDouble(0), d);
    return std::max<int64_t>(int64_t(n), 0);
  }
  const int64_t d = delta.getInt(0);
  if (d == 0)
    return Error("delta is 0: a range needs a non-zero step");
  const __int128 span = __int128(limit.getInt(0)) - start.getInt(0);
  const __int128 n = d > 0 ? (span + d - 1) / d : (span + d + 1) / d;
  return int64_t(std::max<__int128>(n, 0));
}

Expected<std::vector<Tensor>> rangeCountKernel(std::span<const Tensor> in, const Attrs &,
                                               const Type &) {
  TS_ASSIGN_OR_RETURN(int64_t n, rangeCount(in[0], in[1], in[2]));
  return std::vector<Tensor>{Tensor::fromInts(DType::I64, {1}, std::vector<int64_t>{n})};
}

/// iota(n) {count, dtype}: 0, 1, ..., n - 1, n the one element of its i64
/// argument, which a data-dependent op computed: the argument orders it
/// after that op, whose run-time symbol 'count' is the result's length.
Expected<Type> iotaRelation(std::span<const Type> in, const Attrs &attrs) {
  TS_ASSIGN_OR_RETURN(int64_t count, countAttr(attrs));
  if (in[0] != Type::tensor(DType::I64, {1}))
    return Error::format("argument 0 (the length) must be i64[1], got {}", in[0].str());
  const DType dt = attrs.getDType("dtype", DType::I64);
  if (dt != DType::I64 && dt != DType::I32)
    return Error::format("attribute 'dtype' = {} must be i64 or i32", dtypeName(dt));
  return Type::tensor(dt, {count});
}

Expected<std::vector<Tensor>> iotaKernel(std::span<const Tensor> in, const Attrs &,
                                         const Type &outType) {
  Tensor out(outType.dtype(), outType.shape());
  if (in[0].getInt(0) != out.numel())
    return Error::format("the length {} is not the result's {}", in[0].getInt(0), out.numel());
  for (int64_t i = 0; i < out.numel(); ++i)
    out.setInt(i, i);
  return std::vector<Tensor>{out};
}

} // namespace

UniqueGroups uniqueGroups(const Tensor &x, int64_t axis, bool sorted) {
  const Shape &s = x.shape();
  const int64_t n = s[size_t(axis)];
  int64_t inner = 1;
  for (size_t d = size_t(axis) + 1; d < s.size(); ++d)
    inner *= s[d];
  const int64_t outer = n * inner == 0 ? 0 : x.numel() / (n * inner);
  auto element = [&](int64_t i, int64_t j) {
    if (isFloat(x.dtype())) {
      const double a = x.getDouble(i), b = x.getDouble(j);
      if (std::isnan(a) || std::isnan(b))
        return std::isnan(a) == std::isnan(b) ? 0 : (std::isnan(a) ? 1 : -1);
      return a < b ? -1 : (a > b ? 1 : 0);
    }
    if (x.dtype() == DType::U64) {
      const uint64_t a = x.getUInt(i), b = x.getUInt(j);
      return a < b ? -1 : (a > b ? 1 : 0);
    }
    const int64_t a = x.getInt(i), b = x.getInt(j);
    return a < b ? -1 : (a > b ? 1 : 0);
  };
  // Slice i: elements (o, i, j), flat (o * n + i) * inner + j.
  auto slices = [&](int64_t a, int64_t b) {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < inner; ++j)
        if (int c = element((o * n + a) * inner + j, (o * n + b) * inner + j))
          return c;
    return 0;
  };
  UniqueGroups g;
  std::vector<int64_t> scratch(size_t(4 * n));
  g.first.resize(size_t(n));
  g.counts.resize(size_t(n));
  g.inverse.resize(size_t(n));
  const int64_t u = unique::groupSlices(n, sorted, scratch.data(), g.first.data(),
                                        g.inverse.data(), g.counts.data(), slices);
  g.first.resize(size_t(u));
  g.counts.resize(size_t(u));
  return g;
}

Status registerDataDependentOps(OpRegistry &r) {
  using K = AttrKind;
  Op nonzero{
      "nonzero",
      "The i64 [rank, count] indices of the non-zero elements, in row-major order (ONNX "
      "NonZero), and count as an i64 [1] tensor; count is a run-time symbol the data decides.",
      {"data"},
      1,
      1,
      {{"count", K::Int, std::nullopt,
        "the number of non-zero elements: a run-time symbol (bounded by the elements)"}},
      OpPattern::Opaque,
      nonzeroRelation,
      nonzeroKernel,
  };
  nonzero.dataDependent = true;
  TS_RETURN_IF_ERROR(r.add(std::move(nonzero)));

  Op nms{
      "non_max_suppression",
      "Boxes selected by greedy non-max suppression per batch and class (ONNX "
      "NonMaxSuppression): i64 [count, 3] rows (batch, class, box), and count as an i64 [1] "
      "tensor; count is a run-time symbol the data decides. The thresholds are attributes, or "
      "arguments read when the model runs.",
      {"boxes", "scores", "thresholds"},
      2,
      5,
      {{"count", K::Int, std::nullopt,
        "the number of selected boxes: a run-time symbol (bounded by batches * classes * "
        "min(boxes, max_output))"},
       {"max_output", K::Int, AttrValue(int64_t(0)),
        "most boxes selected per batch and class (with arguments 2-4, the bound of theirs: "
        "max_output (i64), iou_threshold and score_threshold (f32), one element each, read "
        "when the model runs)"},
       {"iou_threshold", K::Float, AttrValue(0.0), "a box overlapping a selected one by more "
                                                   "(intersection over union) is dropped"},
       {"use_score_threshold", K::Bool, AttrValue(false), "drop boxes scoring at most "
                                                          "score_threshold"},
       {"score_threshold", K::Float, AttrValue(0.0), "see use_score_threshold"},
       {"center_point_box", K::Bool, AttrValue(false),
        "boxes are [x_center, y_center, width, height] (else [y1, x1, y2, x2])"}},
      OpPattern::Opaque,
      nmsRelation,
      nmsKernel,
  };
  nms.dataDependent = true;
  TS_RETURN_IF_ERROR(r.add(std::move(nms)));

  Op unique{
      "unique",
      "The unique slices of the data along 'axis' (ONNX Unique; the importer flattens the "
      "data when the model gives no axis): i64 [count] first occurrences, i64 [n] each "
      "slice's group, i64 [count] group sizes, and count as an i64 [1] tensor; count is a "
      "run-time symbol the data decides.",
      {"data"},
      1,
      1,
      {{"count", K::Int, std::nullopt,
        "the number of unique slices: a run-time symbol (bounded by the slices)"},
       {"axis", K::Int, AttrValue(int64_t(0)), "the dim whose slices are compared"},
       {"sorted", K::Bool, AttrValue(true),
        "groups in ascending order (slices compared element by element), else in order of "
        "first occurrence"}},
      OpPattern::Opaque,
      uniqueRelation,
      uniqueKernel,
  };
  unique.dataDependent = true;
  TS_RETURN_IF_ERROR(r.add(std::move(unique)));

  TS_RETURN_IF_ERROR(r.add(Op{
      "symbol_values",
      "An i64 tensor of the given shape holding 'values', whose symbolic dims take this run's "
      "values (ONNX Shape of a tensor whose size is known only at run time). Its arguments, "
      "if any, are not read: they run first (an element taken out of a sequence, whose dims "
      "'values' reads).",
      {"after"},
      0,
      -1,
      {{"values", K::Ints, std::nullopt, "the elements: sizes and symbolic dims"},
       {"shape", K::Ints, std::nullopt, "the result's shape"}},
      OpPattern::Opaque,
      symbolValuesRelation,
      symbolValuesKernel,
  }));

  Op rangeCountOp{
      "range_count",
      "The number of elements of ONNX Range over start, limit and delta known only at run time "
      "(max(ceil((limit - start) / delta), 0)), as a tuple of one i64 [1]; count is a run-time "
      "symbol, set before the range's elements are written.",
      {"start", "limit", "delta"},
      3,
      3,
      {{"count", K::Int, std::nullopt, "the run-time symbol it gives a value (no upper bound)"}},
      OpPattern::Opaque,
      rangeCountRelation,
      rangeCountKernel,
  };
  rangeCountOp.dataDependent = true;
  TS_RETURN_IF_ERROR(r.add(std::move(rangeCountOp)));

  TS_RETURN_IF_ERROR(r.add(Op{
      "iota",
      "0, 1, ..., n - 1 for the one element n of its argument, a length a data-dependent op "
      "computed (range_count); the result's length is that op's run-time symbol.",
      {"n"},
      1,
      1,
      {{"count", K::Int, std::nullopt, "the run-time symbol that holds n"},
       {"dtype", K::DType, AttrValue(DType::I64), "i64 or i32"}},
      OpPattern::Opaque,
      iotaRelation,
      iotaKernel,
  }));

  TS_RETURN_IF_ERROR(r.add(Op{
      "range",
      "start, start + delta, ... below limit (above it when delta < 0), as ONNX Range on "
      "integers; the ends may be symbolic dims (positions over a sequence of symbolic "
      "length).",
      {},
      0,
      0,
      {{"start", K::Int, std::nullopt, "the first element (a size or a symbolic dim)"},
       {"limit", K::Int, std::nullopt, "the end, not included (a size or a symbolic dim)"},
       {"delta", K::Int, AttrValue(int64_t(1)), "the step, not 0"},
       {"dtype", K::DType, AttrValue(DType::I64), "the result's integer dtype"}},
      OpPattern::Opaque,
      rangeRelation,
      rangeKernel,
  }));
  return okStatus();
}

} // namespace tessera::ir::ops
