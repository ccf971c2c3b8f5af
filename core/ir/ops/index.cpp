//===- ir/ops/index.cpp - Index-driven ops --------------------------------===//
//
// Ops whose element positions come from an index tensor, with ONNX
// semantics:
//   gather_nd         ONNX GatherND (opset 11-13, 'batch_dims')
//   scatter_nd        ONNX ScatterND (opset 11-18, 'reduction')
//   scatter_elements  ONNX ScatterElements / Scatter (opset 9-18, 'reduction')
//
// Indices are i32 or i64; negative values count from the end of their axis;
// a value outside -dim..dim-1 is a kernel error naming it. Data may have any
// dtype; the scatter reductions "add", "mul", "max" and "min" need a numeric
// dtype. Updates are applied in row-major order of the indices, so with
// duplicate indices and reduction "none" the last update wins (as the ONNX
// reference implementation does).
//
//===----------------------------------------------------------------------===//
#include "ir/ops/common.h"
#include "ir/ops/ops.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace tessera::ir::ops {

namespace {

using Ints = std::vector<int64_t>;

Status requireIndices(std::span<const Type> in, size_t index) {
  DType it = in[index].dtype();
  if (it != DType::I32 && it != DType::I64)
    return Error::format("argument {} ('indices') must be i32 or i64, got {}", index,
                         in[index].str());
  return okStatus();
}

/// Index value `v` for an axis of size `dim`, made non-negative; error when
/// out of range: "<op>: index 5 is out of range for axis 1 of size 3
/// (expected -3..2)".
Expected<int64_t> checkedIndex(const char *op, int64_t v, int64_t axis, int64_t dim) {
  if (v < -dim || v >= dim)
    return Error::format("{}: index {} is out of range for axis {} of size {} (expected {}..{})",
                         op, v, axis, dim, -dim, dim - 1);
  return v < 0 ? v + dim : v;
}

// --- Scatter reductions ---------------------------------------------------------

enum class Reduction { None, Add, Mul, Max, Min };

Expected<Reduction> parseReduction(const std::string &s) {
  if (s == "none")
    return Reduction::None;
  if (s == "add")
    return Reduction::Add;
  if (s == "mul")
    return Reduction::Mul;
  if (s == "max")
    return Reduction::Max;
  if (s == "min")
    return Reduction::Min;
  return Error::format(
      "attribute 'reduction' = \"{}\" is not one of \"none\", \"add\", \"mul\", \"max\", \"min\"",
      s);
}

/// Checks 'reduction' against the data dtype (reductions need numbers).
Status checkReduction(const Attrs &attrs, const Type &data) {
  std::string s = attrs.getString("reduction");
  TS_ASSIGN_OR_RETURN(Reduction red, parseReduction(s));
  if (red != Reduction::None && isBool(data.dtype()))
    return Error::format("reduction \"{}\" needs a numeric tensor, got {}", s, data.str());
  return okStatus();
}

/// out[dst] = out[dst] (red) upd[src]. Floats combine in double and round
/// once; integers wrap (add, mul) or compare exactly (max, min; u64 as
/// unsigned).
void combine(Tensor &out, int64_t dst, const Tensor &upd, int64_t src, Reduction red,
             size_t esize) {
  if (red == Reduction::None) {
    std::memcpy(out.bytes() + dst * int64_t(esize), upd.bytes() + src * int64_t(esize), esize);
    return;
  }
  DType t = out.dtype();
  if (isFloat(t)) {
    double a = out.getDouble(dst), b = upd.getDouble(src);
    switch (red) {
    case Reduction::Add: a += b; break;
    case Reduction::Mul: a *= b; break;
    // NaN propagates, as numpy maximum/minimum.
    case Reduction::Max: a = (std::isnan(a) || std::isnan(b)) ? NAN : std::max(a, b); break;
    case Reduction::Min: a = (std::isnan(a) || std::isnan(b)) ? NAN : std::min(a, b); break;
    case Reduction::None: break;
    }
    out.setDouble(dst, a);
    return;
  }
  if (t == DType::U64 && (red == Reduction::Max || red == Reduction::Min)) {
    uint64_t a = out.getUInt(dst), b = upd.getUInt(src);
    out.setUInt(dst, red == Reduction::Max ? std::max(a, b) : std::min(a, b));
    return;
  }
  int64_t a = out.getInt(dst), b = upd.getInt(src);
  switch (red) {
  case Reduction::Add: a = int64_t(uint64_t(a) + uint64_t(b)); break; // wraps
  case Reduction::Mul: a = int64_t(uint64_t(a) * uint64_t(b)); break; // wraps
  case Reduction::Max: a = std::max(a, b); break;
  case Reduction::Min: a = std::min(a, b); break;
  case Reduction::None: break;
  }
  out.setInt(dst, a); // wraps to the dtype
}

/// A fresh copy of `t` (kernels must not write into their inputs).
Tensor copyTensor(const Tensor &t) {
  Tensor out(t.dtype(), t.shape());
  if (t.nbytes() > 0)
    std::memcpy(out.bytes(), t.bytes(), t.nbytes());
  return out;
}

// --- gather_nd ------------------------------------------------------------------

/// ONNX GatherND: with k = indices.shape[-1] and b = batch_dims,
/// out.shape = data.shape[:b] + indices.shape[b:-1] + data.shape[b+k:].
Expected<Type> gatherNDRelation(std::span<const Type> in, const Attrs &attrs) {
  const Shape &ds = in[0].shape(), &is = in[1].shape();
  TS_RETURN_IF_ERROR(requireIndices(in, 1));
  TS_RETURN_IF_ERROR(requireMinRank(in, 0, 1, "data"));
  TS_RETURN_IF_ERROR(requireMinRank(in, 1, 1, "indices"));
  int64_t r = int64_t(ds.size()), q = int64_t(is.size());
  int64_t b = attrs.getInt("batch_dims");
  if (b < 0 || b >= std::min(r, q))
    return Error::format("attribute 'batch_dims' = {} must be in 0..{} (less than the ranks of "
                         "data and indices)",
                         b, std::min(r, q) - 1);
  for (int64_t d = 0; d < b; ++d)
    if (ds[size_t(d)] != is[size_t(d)])
      return Error::format("batch dim {} has size {} in indices but {} in data", d, is[size_t(d)],
                           ds[size_t(d)]);
  int64_t k = is.back();
  if (k < 1 || k > r - b)
    return Error::format("the last dim of indices ({}) must be in 1..{} (data rank - batch_dims)",
                         k, r - b);
  Shape out(ds.begin(), ds.begin() + b);
  out.insert(out.end(), is.begin() + b, is.end() - 1);
  out.insert(out.end(), ds.begin() + b + k, ds.end());
  return Type::tensor(in[0].dtype(), std::move(out));
}

Expected<std::vector<Tensor>> gatherNDKernel(std::span<const Tensor> in, const Attrs &attrs,
                                             const Type &outType) {
  const Tensor &x = in[0], &indices = in[1];
  const Shape &ds = x.shape(), &is = indices.shape();
  int64_t b = attrs.getInt("batch_dims");
  int64_t k = is.back();
  int64_t batches = numElements(std::span(ds).first(size_t(b)));
  // Index tuples per batch and elements per gathered slice.
  int64_t tuples = numElements(std::span(is).subspan(size_t(b), is.size() - 1 - size_t(b)));
  int64_t slice = numElements(std::span(ds).subspan(size_t(b + k)));
  Ints strides = rowMajorStrides(ds);
  size_t esize = dtypeSize(x.dtype());
  Tensor out(x.dtype(), outType.shape());
  for (int64_t bi = 0; bi < batches; ++bi) {
    // Flat offset of this batch's sub-tensor of data.
    int64_t base = b == 0 ? 0 : bi * strides[size_t(b - 1)];
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t row = (bi * tuples + t) * k, src = base;
      for (int64_t j = 0; j < k; ++j) {
        int64_t axis = b + j;
        TS_ASSIGN_OR_RETURN(
            int64_t v, checkedIndex("gather_nd", indices.getInt(row + j), axis, ds[size_t(axis)]));
        src += v * strides[size_t(axis)];
      }
      int64_t dst = (bi * tuples + t) * slice;
      if (slice > 0)
        std::memcpy(out.bytes() + dst * int64_t(esize), x.bytes() + src * int64_t(esize),
                    size_t(slice) * esize);
    }
  }
  return std::vector<Tensor>{std::move(out)};
}

// --- scatter_nd -----------------------------------------------------------------

/// ONNX ScatterND: with k = indices.shape[-1], updates.shape must be
/// indices.shape[:-1] + data.shape[k:]; the result has data's type.
Expected<Type> scatterNDRelation(std::span<const Type> in, const Attrs &attrs) {
  const Shape &ds = in[0].shape(), &is = in[1].shape(), &us = in[2].shape();
  TS_RETURN_IF_ERROR(requireIndices(in, 1));
  TS_RETURN_IF_ERROR(requireMinRank(in, 0, 1, "data"));
  TS_RETURN_IF_ERROR(requireMinRank(in, 1, 1, "indices"));
  if (in[2].dtype() != in[0].dtype())
    return Error::format("argument 2 ('updates') has dtype {}, expected {} (as data)",
                         dtypeName(in[2].dtype()), dtypeName(in[0].dtype()));
  int64_t r = int64_t(ds.size()), k = is.back();
  if (k < 1 || k > r)
    return Error::format("the last dim of indices ({}) must be in 1..{} (the rank of data)", k, r);
  Shape want(is.begin(), is.end() - 1);
  want.insert(want.end(), ds.begin() + k, ds.end());
  if (us != want)
    return Error::format("argument 2 ('updates') must have shape {} (indices.shape[:-1] + "
                         "data.shape[{}:]), got {}",
                         shapeStr(want), k, in[2].str());
  TS_RETURN_IF_ERROR(checkReduction(attrs, in[0]));
  return in[0];
}

Expected<std::vector<Tensor>> scatterNDKernel(std::span<const Tensor> in, const Attrs &attrs,
                                              const Type &) {
  const Tensor &x = in[0], &indices = in[1], &updates = in[2];
  const Shape &ds = x.shape(), &is = indices.shape();
  TS_ASSIGN_OR_RETURN(Reduction red, parseReduction(attrs.getString("reduction")));
  int64_t k = is.back();
  int64_t tuples = numElements(std::span(is).first(is.size() - 1));
  int64_t slice = numElements(std::span(ds).subspan(size_t(k)));
  Ints strides = rowMajorStrides(ds);
  size_t esize = dtypeSize(x.dtype());
  Tensor out = copyTensor(x);
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t dst = 0;
    for (int64_t j = 0; j < k; ++j) {
      TS_ASSIGN_OR_RETURN(int64_t v,
                          checkedIndex("scatter_nd", indices.getInt(t * k + j), j, ds[size_t(j)]));
      dst += v * strides[size_t(j)];
    }
    for (int64_t e = 0; e < slice; ++e)
      combine(out, dst + e, updates, t * slice + e, red, esize);
  }
  return std::vector<Tensor>{std::move(out)};
}

// --- scatter_elements -----------------------------------------------------------

/// ONNX ScatterElements: indices and updates have one shape, of data's rank
/// and no larger than data off the axis; the result has data's type.
Expected<Type> scatterElementsRelation(std::span<const Type> in, const Attrs &attrs) {
  const Shape &ds = in[0].shape(), &is = in[1].shape();
  TS_RETURN_IF_ERROR(requireIndices(in, 1));
  if (in[2].dtype() != in[0].dtype())
    return Error::format("argument 2 ('updates') has dtype {}, expected {} (as data)",
                         dtypeName(in[2].dtype()), dtypeName(in[0].dtype()));
  TS_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(attrs.getInt("axis"), int64_t(ds.size())));
  if (is.size() != ds.size())
    return Error::format("argument 1 ('indices') must have the rank of data ({}), got {}",
                         ds.size(), in[1].str());
  if (in[2].shape() != is)
    return Error::format("argument 2 ('updates') must have the shape of indices {}, got {}",
                         shapeStr(is), in[2].str());
  for (size_t d = 0; d < ds.size(); ++d)
    if (int64_t(d) != axis && is[d] > ds[d])
      return Error::format("indices dim {} has size {}, more than data's {}", d, is[d], ds[d]);
  TS_RETURN_IF_ERROR(checkReduction(attrs, in[0]));
  return in[0];
}

Expected<std::vector<Tensor>> scatterElementsKernel(std::span<const Tensor> in, const Attrs &attrs,
                                                    const Type &) {
  const Tensor &x = in[0], &indices = in[1], &updates = in[2];
  TS_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(attrs.getInt("axis"), int64_t(x.rank())));
  TS_ASSIGN_OR_RETURN(Reduction red, parseReduction(attrs.getString("reduction")));
  Ints strides = rowMajorStrides(x.shape());
  int64_t dim = x.shape()[size_t(axis)];
  size_t esize = dtypeSize(x.dtype());
  Tensor out = copyTensor(x);
  Ints idx(x.rank());
  for (int64_t i = 0; i < indices.numel(); ++i) {
    unravelIndex(i, indices.shape(), idx);
    TS_ASSIGN_OR_RETURN(int64_t v, checkedIndex("scatter_elements", indices.getInt(i), axis, dim));
    idx[size_t(axis)] = v;
    int64_t dst = 0;
    for (size_t d = 0; d < idx.size(); ++d)
      dst += idx[d] * strides[d];
    combine(out, dst, updates, i, red, esize);
  }
  return std::vector<Tensor>{std::move(out)};
}

const char *kReductionDoc = "\"none\" (replace), \"add\", \"mul\", \"max\" or \"min\"";

} // namespace

Status registerIndexOps(OpRegistry &r) {
  using K = AttrKind;

  TS_RETURN_IF_ERROR(r.add(Op{
      "gather_nd",
      "Takes slices of 'data' at index tuples along the last dim of 'indices' (ONNX GatherND).",
      {"data", "indices"},
      2,
      2,
      {{"batch_dims", K::Int, AttrValue(int64_t(0)),
        "number of leading dims shared by data and indices"}},
      OpPattern::Injective,
      gatherNDRelation,
      gatherNDKernel,
  }));

  TS_RETURN_IF_ERROR(r.add(Op{
      "scatter_nd",
      "Copy of 'data' with the slices at index tuples replaced or combined with 'updates' "
      "(ONNX ScatterND).",
      {"data", "indices", "updates"},
      3,
      3,
      {{"reduction", K::String, AttrValue(std::string("none")), kReductionDoc}},
      OpPattern::Opaque,
      scatterNDRelation,
      scatterNDKernel,
  }));

  TS_RETURN_IF_ERROR(r.add(Op{
      "scatter_elements",
      "Copy of 'data' with per-element positions along an axis replaced or combined with "
      "'updates' (ONNX ScatterElements).",
      {"data", "indices", "updates"},
      3,
      3,
      {{"axis", K::Int, AttrValue(int64_t(0)), "axis the indices select along (negative allowed)"},
       {"reduction", K::String, AttrValue(std::string("none")), kReductionDoc}},
      OpPattern::Opaque,
      scatterElementsRelation,
      scatterElementsKernel,
  }));

  return okStatus();
}

} // namespace tessera::ir::ops
