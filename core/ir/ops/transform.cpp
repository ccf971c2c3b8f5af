//===- ir/ops/transform.cpp - Transform ops: shapes and layout -----------===//
//
// The data-movement ops that reshape or rearrange whole tensors: reshape,
// flatten, transpose, concat and split. Semantics follow ONNX (opset
// 13-17). Every data-movement op accepts every dtype: the reference kernels
// move elements as raw bytes (no conversion). The rest of the transform
// family: slice, squeeze, unsqueeze, pad and expand in transform_slice.cpp;
// gather and gather_elements in transform_gather.cpp; the index-ordering
// ops cumsum and topk in transform_cumsum_topk.cpp. Shared helpers are in
// transform_common.h.
//
//===----------------------------------------------------------------------===//
#include "ir/ops/common.h"
#include "ir/ops/ops.h"
#include "ir/ops/transform_common.h"

#include <limits>

namespace tessera::ir::ops {

namespace {

// --- reshape ------------------------------------------------------------------

/// ONNX Reshape (allowzero = 0): 0 copies the input dim at that position,
/// one -1 is inferred from the element count.
Expected<Type> reshapeRelation(std::span<const Type> in, const Attrs &attrs) {
  const Shape &inShape = in[0].shape();
  Ints ns = attrs.getInts("newshape");
  Shape out(ns.size());
  int64_t inferAt = -1;
  __int128 known = 1;
  for (size_t i = 0; i < ns.size(); ++i) {
    int64_t v = ns[i];
    if (v == -1) {
      if (inferAt >= 0)
        return Error::format("attribute 'newshape' = {} has more than one -1", intsStr(ns));
      inferAt = int64_t(i);
      continue;
    }
    if (v < -1)
      return Error::format("attribute 'newshape' = {} has invalid value {}", intsStr(ns), v);
    if (v == 0) {
      if (i >= inShape.size())
        return Error::format("attribute 'newshape' = {} has 0 at position {}, but the input "
                             "has rank {}",
                             intsStr(ns), i, inShape.size());
      v = inShape[i];
    }
    out[i] = v;
    known *= v;
    if (known > std::numeric_limits<int64_t>::max())
      return Error::format("attribute 'newshape' = {} has too many elements", intsStr(ns));
  }
  int64_t total = in[0].numElements();
  auto mismatch = [&] {
    return Error::format("cannot reshape {} ({} elements) to newshape {}", shapeStr(inShape),
                         total, intsStr(ns));
  };
  if (inferAt >= 0) {
    if (known == 0 || total % int64_t(known) != 0)
      return mismatch();
    out[inferAt] = total / int64_t(known);
  } else if (known != total) {
    return Error::format("cannot reshape {} ({} elements) to newshape {} ({} elements)",
                         shapeStr(inShape), total, intsStr(ns), int64_t(known));
  }
  return Type::tensor(in[0].dtype(), std::move(out));
}

// --- flatten ------------------------------------------------------------------

/// ONNX Flatten: [prod(dims[:axis]), prod(dims[axis:])], axis in -rank..rank.
Expected<Type> flattenRelation(std::span<const Type> in, const Attrs &attrs) {
  const Shape &s = in[0].shape();
  int64_t rank = int64_t(s.size());
  int64_t axis = attrs.getInt("axis");
  if (axis < -rank || axis > rank)
    return Error::format("attribute 'axis' = {} is out of range for rank {} (expected {}..{})",
                         axis, rank, -rank, rank);
  if (axis < 0)
    axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i)
    (i < axis ? outer : inner) *= s[i];
  return Type::tensor(in[0].dtype(), {outer, inner});
}

// --- transpose ----------------------------------------------------------------

/// The permutation of a transpose: 'perm', or the reversed dims when empty.
Expected<Ints> transposePerm(int64_t rank, const Attrs &attrs) {
  Ints perm = attrs.getInts("perm");
  if (perm.empty()) {
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
    return perm;
  }
  std::vector<bool> seen(size_t(rank), false);
  bool ok = int64_t(perm.size()) == rank;
  for (size_t i = 0; ok && i < perm.size(); ++i) {
    if (perm[i] < 0 || perm[i] >= rank || seen[size_t(perm[i])])
      ok = false;
    else
      seen[size_t(perm[i])] = true;
  }
  if (!ok) {
    if (rank == 0)
      return Error::format("attribute 'perm' = {} must be empty for a rank-0 input", intsStr(perm));
    return Error::format("attribute 'perm' = {} is not a permutation of 0..{}", intsStr(perm),
                         rank - 1);
  }
  return perm;
}

/// ONNX Transpose: out.shape[i] = in.shape[perm[i]].
Expected<Type> transposeRelation(std::span<const Type> in, const Attrs &attrs) {
  const Shape &s = in[0].shape();
  TS_ASSIGN_OR_RETURN(Ints perm, transposePerm(int64_t(s.size()), attrs));
  Shape out(s.size());
  for (size_t i = 0; i < s.size(); ++i)
    out[i] = s[size_t(perm[i])];
  return Type::tensor(in[0].dtype(), std::move(out));
}

Expected<std::vector<Tensor>> transposeKernel(std::span<const Tensor> in, const Attrs &attrs,
                                              const Type &outType) {
  const Tensor &x = in[0];
  TS_ASSIGN_OR_RETURN(Ints perm, transposePerm(int64_t(x.rank()), attrs));
  Ints inStrides = rowMajorStrides(x.shape());
  return std::vector<Tensor>{mapElements(x, outType.shape(), [&](std::span<const int64_t> o) {
    // Output axis i walks input axis perm[i].
    int64_t flat = 0;
    for (size_t i = 0; i < o.size(); ++i)
      flat += o[i] * inStrides[size_t(perm[i])];
    return flat;
  })};
}

// --- concat -------------------------------------------------------------------

/// ONNX Concat: same dtype and rank, equal dims except along 'axis'.
Expected<Type> concatRelation(std::span<const Type> in, const Attrs &attrs) {
  TS_RETURN_IF_ERROR(requireSameDType(in));
  const Shape &first = in[0].shape();
  TS_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(attrs.getInt("axis"), int64_t(first.size())));
  Shape out = first;
  for (size_t k = 1; k < in.size(); ++k) {
    const Shape &s = in[k].shape();
    if (s.size() != first.size())
      return Error::format("argument {} has rank {}, expected {} (as argument 0)", k, s.size(),
                           first.size());
    for (size_t d = 0; d < s.size(); ++d) {
      if (int64_t(d) == axis)
        out[d] += s[d];
      else if (s[d] != first[d])
        return Error::format("argument {} has size {} at dim {}, expected {} (as argument 0)", k,
                             s[d], d, first[d]);
    }
  }
  return Type::tensor(in[0].dtype(), std::move(out));
}

Expected<std::vector<Tensor>> concatKernel(std::span<const Tensor> in, const Attrs &attrs,
                                           const Type &outType) {
  const Shape &outShape = outType.shape();
  int64_t rank = int64_t(outShape.size());
  int64_t axis = attrs.getInt("axis");
  if (axis < 0)
    axis += rank;
  Tensor out(in[0].dtype(), outShape);
  size_t esize = dtypeSize(out.dtype());
  Ints outStrides = rowMajorStrides(outShape);
  Ints idx(static_cast<size_t>(rank));
  int64_t offset = 0; // start of the current input along the axis
  for (const Tensor &t : in) {
    for (int64_t i = 0; i < t.numel(); ++i) {
      unravelIndex(i, t.shape(), idx);
      idx[size_t(axis)] += offset;
      copyElem(t, i, out, ravel(idx, outStrides), esize);
    }
    offset += t.shape()[size_t(axis)];
  }
  return std::vector<Tensor>{out};
}

// --- split --------------------------------------------------------------------

/// Split along 'axis' into pieces of 'sizes' (sum = the dim): a tuple type.
Expected<Type> splitRelation(std::span<const Type> in, const Attrs &attrs) {
  const Shape &s = in[0].shape();
  TS_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(attrs.getInt("axis"), int64_t(s.size())));
  Ints sizes = attrs.getInts("sizes");
  if (sizes.empty())
    return Error("attribute 'sizes' must not be empty");
  int64_t sum = 0;
  std::vector<Type> fields;
  for (int64_t n : sizes) {
    if (n < 0)
      return Error::format("attribute 'sizes' = {} has negative value {}", intsStr(sizes), n);
    sum += n;
    Shape piece = s;
    piece[size_t(axis)] = n;
    fields.push_back(Type::tensor(in[0].dtype(), std::move(piece)));
  }
  if (sum != s[size_t(axis)])
    return Error::format("attribute 'sizes' = {} sums to {}, but axis {} has size {}",
                         intsStr(sizes), sum, axis, s[size_t(axis)]);
  return Type::tuple(std::move(fields));
}

Expected<std::vector<Tensor>> splitKernel(std::span<const Tensor> in, const Attrs &attrs,
                                          const Type &outType) {
  const Tensor &x = in[0];
  int64_t axis = attrs.getInt("axis");
  if (axis < 0)
    axis += int64_t(x.rank());
  Ints inStrides = rowMajorStrides(x.shape());
  std::vector<Tensor> outs;
  int64_t offset = 0;
  for (const Type &field : outType.fields()) {
    outs.push_back(mapElements(x, field.shape(), [&](std::span<const int64_t> o) {
      return ravel(o, inStrides) + offset * inStrides[size_t(axis)];
    }));
    offset += field.shape()[size_t(axis)];
  }
  return outs;
}

} // namespace

Status registerTransformOps(OpRegistry &r) {
  using K = AttrKind;

  TS_RETURN_IF_ERROR(r.add(Op{
      "reshape",
      "Gives the data a new shape with the same element count (ONNX Reshape).",
      {"data"},
      1,
      1,
      {{"newshape", K::Ints, std::nullopt,
        "target shape; 0 copies the input dim at that position, one -1 is inferred"}},
      OpPattern::Injective,
      reshapeRelation,
      reshapeKernel,
  }));

  TS_RETURN_IF_ERROR(r.add(Op{
      "flatten",
      "Flattens to 2-D [prod(dims[:axis]), prod(dims[axis:])] (ONNX Flatten).",
      {"data"},
      1,
      1,
      {{"axis", K::Int, AttrValue(int64_t(1)), "first dim of the second output dim (-rank..rank)"}},
      OpPattern::Injective,
      flattenRelation,
      reshapeKernel,
  }));

  TS_RETURN_IF_ERROR(r.add(Op{
      "transpose",
      "Permutes the dims: out.shape[i] = in.shape[perm[i]] (ONNX Transpose).",
      {"data"},
      1,
      1,
      {{"perm", K::Ints, intsValue(), "permutation of the dims; empty reverses them"}},
      OpPattern::Injective,
      transposeRelation,
      transposeKernel,
  }));

  TS_RETURN_IF_ERROR(r.add(Op{
      "concat",
      "Concatenates tensors along an axis (ONNX Concat).",
      {"data"},
      1,
      -1,
      {{"axis", K::Int, AttrValue(int64_t(0)), "axis to concatenate along (negative allowed)"}},
      OpPattern::Injective,
      concatRelation,
      concatKernel,
  }));

  TS_RETURN_IF_ERROR(r.add(Op{
      "split",
      "Splits along an axis into pieces of the given sizes; returns a tuple (ONNX Split).",
      {"data"},
      1,
      1,
      {{"axis", K::Int, AttrValue(int64_t(0)), "axis to split (negative allowed)"},
       {"sizes", K::Ints, std::nullopt, "size of each piece; must sum to the dim"}},
      OpPattern::Injective,
      splitRelation,
      splitKernel,
  }));

  return okStatus();
}

} // namespace tessera::ir::ops
