//===- ir/ops/transform.cpp - Transform ops ------------------------------===//
//
// The data-movement ops: reshape, flatten, transpose, concat, split, slice,
// squeeze, unsqueeze, pad, expand, gather and gather_elements, plus the
// index-ordering ops cumsum and topk. Semantics follow ONNX (opset 13-17).
// Every data-movement op accepts every dtype: the reference kernels move
// elements as raw bytes (no conversion), except pad's constant fill, which
// converts the float attribute 'value' to the dtype as Tensor::setDouble
// does. cumsum and topk take numeric tensors.
//
//===----------------------------------------------------------------------===//
#include "ir/ops/common.h"
#include "ir/ops/ops.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>

namespace tessera::ir::ops {

namespace {

using Ints = std::vector<int64_t>;

// --- Shared helpers ---------------------------------------------------------

/// "[1, 2, 3]"
std::string intsStr(std::span<const int64_t> v) { return shapeStr(v); }

/// Copies element `src` of `in` to element `dst` of `out` (same dtype).
inline void copyElem(const Tensor &in, int64_t src, Tensor &out, int64_t dst, size_t esize) {
  std::memcpy(out.bytes() + dst * int64_t(esize), in.bytes() + src * int64_t(esize), esize);
}

/// Flat row-major index of a multi-index given the strides.
inline int64_t ravel(std::span<const int64_t> idx, std::span<const int64_t> strides) {
  int64_t flat = 0;
  for (size_t i = 0; i < idx.size(); ++i)
    flat += idx[i] * strides[i];
  return flat;
}

/// Builds a tensor of `outShape` whose element at multi-index `o` is element
/// `srcIndex(o)` of `in`, or `fill` (converted to the dtype) when srcIndex
/// returns -1.
template <typename F>
Tensor mapElements(const Tensor &in, const Shape &outShape, F srcIndex, double fill = 0) {
  Tensor out(in.dtype(), outShape);
  size_t esize = dtypeSize(in.dtype());
  Ints idx(outShape.size());
  for (int64_t o = 0; o < out.numel(); ++o) {
    unravelIndex(o, outShape, idx);
    int64_t src = srcIndex(std::span<const int64_t>(idx));
    if (src < 0)
      out.setDouble(o, fill);
    else
      copyElem(in, src, out, o, esize);
  }
  return out;
}

/// A copy of `in` under a new shape with the same element count.
Tensor copyReshaped(const Tensor &in, const Shape &shape) {
  Tensor out(in.dtype(), shape);
  if (in.nbytes() > 0)
    std::memcpy(out.bytes(), in.bytes(), in.nbytes());
  return out;
}

/// Kernel for ops that only change the shape: copies the data into the
/// shape of the inferred type.
Expected<std::vector<Tensor>> reshapeKernel(std::span<const Tensor> in, const Attrs &,
                                            const Type &outType) {
  return std::vector<Tensor>{copyReshaped(in[0], outType.shape())};
}

/// Normalises a list of axes (negative count from `rank`); errors on
/// out-of-range values and on repeats.
Expected<Ints> normalizeAxes(const Ints &axes, int64_t rank, std::string_view attrName) {
  Ints out;
  for (int64_t a : axes) {
    TS_ASSIGN_OR_RETURN(int64_t n, normalizeAxis(a, rank, attrName));
    if (std::find(out.begin(), out.end(), n) != out.end())
      return Error::format("attribute '{}' = {} repeats axis {}", attrName, intsStr(axes), n);
    out.push_back(n);
  }
  return out;
}

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

// --- slice --------------------------------------------------------------------

} // namespace

/// Per input dim, the first index, step and element count of an ONNX Slice
/// (dims not named in 'axes' are taken whole).
Expected<std::vector<SliceDim>> sliceDims(const Shape &s, const Attrs &attrs) {
  int64_t rank = int64_t(s.size());
  Ints starts = attrs.getInts("starts"), ends = attrs.getInts("ends");
  Ints axes = attrs.getInts("axes"), steps = attrs.getInts("steps");
  if (starts.size() != ends.size())
    return Error::format("attributes 'starts' and 'ends' must have the same length, got {} and {}",
                         starts.size(), ends.size());
  if (axes.empty()) {
    if (int64_t(starts.size()) > rank)
      return Error::format("attribute 'starts' has {} values, but the input has rank {}",
                           starts.size(), rank);
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(int64_t(i));
  } else if (axes.size() != starts.size()) {
    return Error::format("attribute 'axes' must have {} values (as 'starts'), got {}",
                         starts.size(), axes.size());
  }
  if (steps.empty())
    steps.assign(starts.size(), 1);
  else if (steps.size() != starts.size())
    return Error::format("attribute 'steps' must have {} values (as 'starts'), got {}",
                         starts.size(), steps.size());
  TS_ASSIGN_OR_RETURN(Ints normAxes, normalizeAxes(axes, rank, "axes"));

  std::vector<SliceDim> dims(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d)
    dims[size_t(d)] = {0, 1, s[size_t(d)]};
  for (size_t i = 0; i < normAxes.size(); ++i) {
    int64_t dim = s[size_t(normAxes[i])];
    int64_t step = steps[i];
    if (step == 0)
      return Error::format("attribute 'steps' = {} must not contain 0", intsStr(steps));
    int64_t start = starts[i], end = ends[i];
    // Negative values count from the end (INT64_MIN + dim cannot overflow).
    if (start < 0)
      start += dim;
    if (end < 0)
      end += dim;
    int64_t count = 0;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      if (end > start)
        count = 1 + (end - start - 1) / step;
    } else if (dim > 0) {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      if (start > end) {
        // |step| without overflowing on INT64_MIN.
        uint64_t mag = uint64_t(-(step + 1)) + 1;
        count = 1 + int64_t(uint64_t(start - end - 1) / mag);
      }
    }
    dims[size_t(normAxes[i])] = {count > 0 ? start : 0, step, count};
  }
  return dims;
}

namespace {

/// ONNX Slice (opset 13): per named axis, elements start, start+step, ...
/// before end, after clamping; output dim max(0, ceil((end-start)/step)).
Expected<Type> sliceRelation(std::span<const Type> in, const Attrs &attrs) {
  TS_ASSIGN_OR_RETURN(auto dims, sliceDims(in[0].shape(), attrs));
  Shape out;
  for (const SliceDim &d : dims)
    out.push_back(d.count);
  return Type::tensor(in[0].dtype(), std::move(out));
}

Expected<std::vector<Tensor>> sliceKernel(std::span<const Tensor> in, const Attrs &attrs,
                                          const Type &outType) {
  const Tensor &x = in[0];
  TS_ASSIGN_OR_RETURN(auto dims, sliceDims(x.shape(), attrs));
  Ints inStrides = rowMajorStrides(x.shape());
  return std::vector<Tensor>{mapElements(x, outType.shape(), [&](std::span<const int64_t> o) {
    int64_t flat = 0;
    for (size_t i = 0; i < o.size(); ++i)
      flat += (dims[i].start + o[i] * dims[i].step) * inStrides[i];
    return flat;
  })};
}

// --- squeeze / unsqueeze ----------------------------------------------------------

/// ONNX Squeeze: removes the named size-1 axes, or every size-1 axis.
Expected<Type> squeezeRelation(std::span<const Type> in, const Attrs &attrs) {
  const Shape &s = in[0].shape();
  Ints axes = attrs.getInts("axes");
  std::vector<bool> drop(s.size(), false);
  if (axes.empty()) {
    for (size_t d = 0; d < s.size(); ++d)
      drop[d] = s[d] == 1;
  } else {
    TS_ASSIGN_OR_RETURN(Ints norm, normalizeAxes(axes, int64_t(s.size()), "axes"));
    for (int64_t a : norm) {
      if (s[size_t(a)] != 1)
        return Error::format("cannot squeeze axis {} of size {} (attribute 'axes' = {})", a,
                             s[size_t(a)], intsStr(axes));
      drop[size_t(a)] = true;
    }
  }
  Shape out;
  for (size_t d = 0; d < s.size(); ++d)
    if (!drop[d])
      out.push_back(s[d]);
  return Type::tensor(in[0].dtype(), std::move(out));
}

/// ONNX Unsqueeze (opset 13): inserts size-1 dims at the given positions of
/// the output (negative counts from the output rank).
Expected<Type> unsqueezeRelation(std::span<const Type> in, const Attrs &attrs) {
  const Shape &s = in[0].shape();
  Ints axes = attrs.getInts("axes");
  int64_t outRank = int64_t(s.size() + axes.size());
  TS_ASSIGN_OR_RETURN(Ints norm, normalizeAxes(axes, outRank, "axes"));
  Shape out(size_t(outRank), 1);
  std::vector<bool> inserted(size_t(outRank), false);
  for (int64_t a : norm)
    inserted[size_t(a)] = true;
  size_t next = 0;
  for (size_t d = 0; d < out.size(); ++d)
    if (!inserted[d])
      out[d] = s[next++];
  return Type::tensor(in[0].dtype(), std::move(out));
}

// --- pad ------------------------------------------------------------------------

enum class PadMode { Constant, Reflect, Edge };

Expected<PadMode> padMode(const Attrs &attrs) {
  std::string mode = attrs.getString("mode");
  if (mode == "constant")
    return PadMode::Constant;
  if (mode == "reflect")
    return PadMode::Reflect;
  if (mode == "edge")
    return PadMode::Edge;
  return Error::format("attribute 'mode' = \"{}\" must be \"constant\", \"reflect\" or \"edge\"",
                       mode);
}

/// ONNX Pad: pads = [begin_0, ..., begin_{r-1}, end_0, ..., end_{r-1}].
/// Negative pads crop first; the remaining data is then padded (constant
/// 'value', reflection without repeating the border, or the border value),
/// as ONNX Runtime does. Reflect needs every pad < the (cropped) dim.
Expected<Type> padRelation(std::span<const Type> in, const Attrs &attrs) {
  const Shape &s = in[0].shape();
  size_t rank = s.size();
  Ints pads = attrs.getInts("pads");
  if (pads.size() != 2 * rank)
    return Error::format("attribute 'pads' must have {} values (2 x rank {}), got {}", 2 * rank,
                         rank, pads.size());
  TS_ASSIGN_OR_RETURN(PadMode mode, padMode(attrs));
  Shape out(rank);
  for (size_t d = 0; d < rank; ++d) {
    int64_t begin = pads[d], end = pads[d + rank];
    int64_t kept = s[d] + std::min<int64_t>(begin, 0) + std::min<int64_t>(end, 0);
    if (kept < 0)
      return Error::format("attribute 'pads' = {} crops axis {} of size {} below zero",
                           intsStr(pads), d, s[d]);
    if (mode == PadMode::Reflect && ((begin > 0 && begin >= kept) || (end > 0 && end >= kept)))
      return Error::format("mode 'reflect' needs pads smaller than the size of axis {} ({}), "
                           "got {} and {}",
                           d, kept, begin, end);
    if (mode == PadMode::Edge && kept == 0 && (begin > 0 || end > 0))
      return Error::format("mode 'edge' cannot pad axis {} of size 0", d);
    out[d] = s[d] + begin + end;
  }
  return Type::tensor(in[0].dtype(), std::move(out));
}

Expected<std::vector<Tensor>> padKernel(std::span<const Tensor> in, const Attrs &attrs,
                                        const Type &outType) {
  const Tensor &x = in[0];
  const Shape &s = x.shape();
  size_t rank = s.size();
  Ints pads = attrs.getInts("pads");
  TS_ASSIGN_OR_RETURN(PadMode mode, padMode(attrs));
  Ints inStrides = rowMajorStrides(s);
  auto src = [&](std::span<const int64_t> o) -> int64_t {
    int64_t flat = 0;
    for (size_t d = 0; d < rank; ++d) {
      int64_t begin = pads[d], end = pads[d + rank];
      // The kept (cropped) range of the input along d: [lo, lo + n).
      int64_t lo = std::max<int64_t>(-begin, 0);
      int64_t n = s[d] + std::min<int64_t>(begin, 0) + std::min<int64_t>(end, 0);
      int64_t pos = o[d] - std::max<int64_t>(begin, 0); // position within the kept range
      if (pos < 0 || pos >= n) {
        if (mode == PadMode::Constant)
          return -1;
        if (mode == PadMode::Edge)
          pos = pos < 0 ? 0 : n - 1;
        else // Reflect: pads < n, so one reflection suffices.
          pos = pos < 0 ? -pos : 2 * (n - 1) - pos;
      }
      flat += (lo + pos) * inStrides[d];
    }
    return flat;
  };
  return std::vector<Tensor>{mapElements(x, outType.shape(), src, attrs.getFloat("value"))};
}

// --- expand ---------------------------------------------------------------------

/// ONNX Expand: output shape = broadcast(data.shape, shape), bidirectional.
Expected<Type> expandRelation(std::span<const Type> in, const Attrs &attrs) {
  Ints shape = attrs.getInts("shape");
  for (int64_t v : shape)
    if (v < 0)
      return Error::format("attribute 'shape' = {} has negative value {}", intsStr(shape), v);
  TS_ASSIGN_OR_RETURN(Shape out, broadcastShapes(in[0].shape(), shape));
  return Type::tensor(in[0].dtype(), std::move(out));
}

Expected<std::vector<Tensor>> expandKernel(std::span<const Tensor> in, const Attrs &,
                                           const Type &outType) {
  const Tensor &x = in[0];
  return std::vector<Tensor>{mapElements(x, outType.shape(), [&](std::span<const int64_t> o) {
    return broadcastSourceIndex(o, x.shape());
  })};
}

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

AttrValue intsValue(Ints v = {}) { return AttrValue(std::move(v)); }

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

  TS_RETURN_IF_ERROR(r.add(Op{
      "slice",
      "Takes a strided sub-tensor (ONNX Slice).",
      {"data"},
      1,
      1,
      {{"starts", K::Ints, std::nullopt, "first index per axis (negative counts from the end)"},
       {"ends", K::Ints, std::nullopt,
        "exclusive end per axis (negative counts from the end; clamped)"},
       {"axes", K::Ints, intsValue(), "axes that starts/ends refer to; empty = 0..n-1"},
       {"steps", K::Ints, intsValue(), "step per axis (non-zero); empty = all 1"}},
      OpPattern::Injective,
      sliceRelation,
      sliceKernel,
  }));

  TS_RETURN_IF_ERROR(r.add(Op{
      "squeeze",
      "Removes size-1 dims (ONNX Squeeze).",
      {"data"},
      1,
      1,
      {{"axes", K::Ints, intsValue(), "axes to remove (each of size 1); empty = all size-1 dims"}},
      OpPattern::Injective,
      squeezeRelation,
      reshapeKernel,
  }));

  TS_RETURN_IF_ERROR(r.add(Op{
      "unsqueeze",
      "Inserts size-1 dims at the given output positions (ONNX Unsqueeze).",
      {"data"},
      1,
      1,
      {{"axes", K::Ints, std::nullopt,
        "positions of the new dims in the output (negative counts from the output rank)"}},
      OpPattern::Injective,
      unsqueezeRelation,
      reshapeKernel,
  }));

  TS_RETURN_IF_ERROR(r.add(Op{
      "pad",
      "Pads (or, with negative pads, crops) each dim (ONNX Pad).",
      {"data"},
      1,
      1,
      {{"pads", K::Ints, std::nullopt,
        "2*rank values: all begins, then all ends; negative values crop"},
       {"mode", K::String, AttrValue(std::string("constant")),
        "\"constant\", \"reflect\" or \"edge\""},
       {"value", K::Float, AttrValue(0.0), "fill value for mode \"constant\""}},
      OpPattern::Injective,
      padRelation,
      padKernel,
  }));

  TS_RETURN_IF_ERROR(r.add(Op{
      "expand",
      "Broadcasts the data with a shape, bidirectionally (ONNX Expand).",
      {"data"},
      1,
      1,
      {{"shape", K::Ints, std::nullopt, "shape to broadcast with"}},
      OpPattern::Broadcast,
      expandRelation,
      expandKernel,
  }));

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
