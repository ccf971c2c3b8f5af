//===- ir/ops/transform_gather.cpp - Transform ops: gather ---------------===//
//
// The data-movement ops that take entries at given indices: gather and
// gather_elements. Semantics follow ONNX (opset 13-17). The data may have
// any dtype: the reference kernels move elements as raw bytes (no
// conversion).
//
//===----------------------------------------------------------------------===//
#include "ir/ops/common.h"
#include "ir/ops/ops.h"
#include "ir/ops/transform_common.h"

namespace tessera::ir::ops {

namespace {

// --- gather ---------------------------------------------------------------------

/// ONNX Gather: out.shape = data.shape[:axis] + indices.shape +
/// data.shape[axis+1:]; negative indices count from the end.
Expected<Type> gatherRelation(std::span<const Type> in, const Attrs &attrs) {
  const Shape &s = in[0].shape();
  DType it = in[1].dtype();
  if (it != DType::I32 && it != DType::I64)
    return Error::format("argument 1 ('indices') must be i32 or i64, got {}", in[1].str());
  TS_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(attrs.getInt("axis"), int64_t(s.size())));
  Shape out(s.begin(), s.begin() + axis);
  out.insert(out.end(), in[1].shape().begin(), in[1].shape().end());
  out.insert(out.end(), s.begin() + axis + 1, s.end());
  return Type::tensor(in[0].dtype(), std::move(out));
}

Expected<std::vector<Tensor>> gatherKernel(std::span<const Tensor> in, const Attrs &attrs,
                                           const Type &outType) {
  const Tensor &x = in[0], &indices = in[1];
  int64_t rank = int64_t(x.rank());
  int64_t axis = attrs.getInt("axis");
  if (axis < 0)
    axis += rank;
  int64_t dim = x.shape()[size_t(axis)];
  // Check every index first, so the kernel error names the offending value.
  for (int64_t i = 0; i < indices.numel(); ++i) {
    int64_t v = indices.getInt(i);
    if (v < -dim || v >= dim)
      return Error::format("gather: index {} is out of range for axis {} of size {} (expected "
                           "{}..{})",
                           v, axis, dim, -dim, dim - 1);
  }
  Ints inStrides = rowMajorStrides(x.shape());
  Ints idxStrides = rowMajorStrides(indices.shape());
  size_t q = indices.rank();
  return std::vector<Tensor>{mapElements(x, outType.shape(), [&](std::span<const int64_t> o) {
    // o = [data dims before axis] + [indices dims] + [data dims after axis]
    int64_t k = ravel(o.subspan(size_t(axis), q), idxStrides);
    int64_t v = indices.getInt(k);
    if (v < 0)
      v += dim;
    int64_t flat = v * inStrides[size_t(axis)];
    for (int64_t d = 0; d < axis; ++d)
      flat += o[size_t(d)] * inStrides[size_t(d)];
    for (int64_t d = axis + 1; d < rank; ++d)
      flat += o[size_t(d) - 1 + q] * inStrides[size_t(d)];
    return flat;
  })};
}

// --- gather_elements ------------------------------------------------------------

/// ONNX GatherElements: indices has the rank of data; out.shape =
/// indices.shape and out[i] = data[i with i[axis] replaced by indices[i]].
Expected<Type> gatherElementsRelation(std::span<const Type> in, const Attrs &attrs) {
  const Shape &s = in[0].shape(), &is = in[1].shape();
  DType it = in[1].dtype();
  if (it != DType::I32 && it != DType::I64)
    return Error::format("argument 1 ('indices') must be i32 or i64, got {}", in[1].str());
  TS_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(attrs.getInt("axis"), int64_t(s.size())));
  if (is.size() != s.size())
    return Error::format("argument 1 ('indices') must have the rank of data ({}), got {}", s.size(),
                         in[1].str());
  for (size_t d = 0; d < s.size(); ++d)
    if (int64_t(d) != axis && is[d] > s[d])
      return Error::format("indices dim {} has size {}, more than data's {}", d, is[d], s[d]);
  return Type::tensor(in[0].dtype(), is);
}

Expected<std::vector<Tensor>> gatherElementsKernel(std::span<const Tensor> in, const Attrs &attrs,
                                                   const Type &outType) {
  const Tensor &x = in[0], &indices = in[1];
  int64_t axis = attrs.getInt("axis");
  if (axis < 0)
    axis += int64_t(x.rank());
  int64_t dim = x.shape()[size_t(axis)];
  for (int64_t i = 0; i < indices.numel(); ++i) {
    int64_t v = indices.getInt(i);
    if (v < -dim || v >= dim)
      return Error::format("gather_elements: index {} is out of range for axis {} of size {} "
                           "(expected {}..{})",
                           v, axis, dim, -dim, dim - 1);
  }
  Ints inStrides = rowMajorStrides(x.shape());
  Ints idxStrides = rowMajorStrides(indices.shape());
  return std::vector<Tensor>{mapElements(x, outType.shape(), [&](std::span<const int64_t> o) {
    int64_t v = indices.getInt(ravel(o, idxStrides));
    if (v < 0)
      v += dim;
    return ravel(o, inStrides) + (v - o[size_t(axis)]) * inStrides[size_t(axis)];
  })};
}

} // namespace

Status registerGatherOps(OpRegistry &r) {
  using K = AttrKind;

  TS_RETURN_IF_ERROR(r.add(Op{
      "gather",
      "Takes the entries of 'data' along an axis at the given indices (ONNX Gather).",
      {"data", "indices"},
      2,
      2,
      {{"axis", K::Int, AttrValue(int64_t(0)), "axis of data to index (negative allowed)"}},
      OpPattern::Injective,
      gatherRelation,
      gatherKernel,
  }));

  TS_RETURN_IF_ERROR(r.add(Op{
      "gather_elements",
      "Takes data's entries at per-element indices along an axis (ONNX GatherElements).",
      {"data", "indices"},
      2,
      2,
      {{"axis", K::Int, AttrValue(int64_t(0)), "axis the indices select along (negative allowed)"}},
      OpPattern::Injective,
      gatherElementsRelation,
      gatherElementsKernel,
  }));

  return okStatus();
}

} // namespace tessera::ir::ops
