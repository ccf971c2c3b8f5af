//===- ir/ops/transform_slice.cpp - Transform ops: slice, squeeze, pad ---===//
//
// The data-movement ops that take part of a tensor or change its extent:
// slice (and sliceDims, common.h, which reads slice's attributes),
// dynamic_slice (a window of static size at run-time starts), squeeze,
// unsqueeze, pad and expand. Semantics follow ONNX (opset 13-17). Every
// data-movement op accepts every dtype: the reference kernels move elements
// as raw bytes (no conversion), except pad's constant fill, which converts
// the float attribute 'value' to the dtype as Tensor::setDouble does.
//
//===----------------------------------------------------------------------===//
#include "ir/ops/common.h"
#include "ir/ops/ops.h"
#include "ir/ops/transform_common.h"
#include "ir/symbol.h"

#include <algorithm>

namespace tessera::ir::ops {

// --- slice --------------------------------------------------------------------

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

// --- dynamic_slice -------------------------------------------------------------

/// dynamic_slice(x, starts) {axes, sizes}: the window of sizes[i] elements
/// from starts[i] along axes[i] (ONNX Slice whose ends are its starts plus
/// a constant, steps 1: the output size is static although the starts are
/// known only at run time).
Expected<Type> dynamicSliceRelation(std::span<const Type> in, const Attrs &attrs) {
  const Shape &s = in[0].shape();
  const Ints axes = attrs.getInts("axes"), sizes = attrs.getInts("sizes");
  if (axes.size() != sizes.size() || axes.empty())
    return Error::format("attributes 'axes' and 'sizes' must have one value per sliced axis, got "
                         "{} and {}",
                         intsStr(axes), intsStr(sizes));
  if (in[1].rank() != 1 || in[1].shape()[0] != int64_t(axes.size()) ||
      (in[1].dtype() != DType::I64 && in[1].dtype() != DType::I32))
    return Error::format("argument 1 (starts) must be i64[{}] or i32[{}], got {}", axes.size(),
                         axes.size(), in[1].str());
  TS_ASSIGN_OR_RETURN(Ints norm, normalizeAxes(axes, int64_t(s.size()), "axes"));
  Shape out = s;
  for (size_t i = 0; i < norm.size(); ++i) {
    const int64_t dim = s[size_t(norm[i])];
    if (isSymbol(dim))
      return Error::format("axis {} has the symbolic size {}: a window needs a static one",
                           norm[i], dimStr(dim));
    if (sizes[i] < 0 || sizes[i] > dim)
      return Error::format("attribute 'sizes' = {}: {} elements do not fit axis {} of size {}",
                           intsStr(sizes), sizes[i], norm[i], dim);
    out[size_t(norm[i])] = sizes[i];
  }
  return Type::tensor(in[0].dtype(), std::move(out));
}

Expected<std::vector<Tensor>> dynamicSliceKernel(std::span<const Tensor> in, const Attrs &attrs,
                                                 const Type &outType) {
  const Tensor &x = in[0];
  const Ints sizes = attrs.getInts("sizes");
  TS_ASSIGN_OR_RETURN(Ints axes,
                      normalizeAxes(attrs.getInts("axes"), int64_t(x.rank()), "axes"));
  Ints first(x.rank(), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t dim = x.shape()[size_t(axes[i])];
    int64_t start = in[1].getInt(int64_t(i));
    if (start < 0)
      start += dim;
    // ONNX would clamp and return fewer elements; the size is static.
    if (start < 0 || start > dim - sizes[i])
      return Error::format("start {} on axis {} leaves fewer than {} of its {} elements",
                           in[1].getInt(int64_t(i)), axes[i], sizes[i], dim);
    first[size_t(axes[i])] = start;
  }
  Ints inStrides = rowMajorStrides(x.shape());
  return std::vector<Tensor>{mapElements(x, outType.shape(), [&](std::span<const int64_t> o) {
    int64_t flat = 0;
    for (size_t i = 0; i < o.size(); ++i)
      flat += (first[i] + o[i]) * inStrides[i];
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

} // namespace

Status registerSliceOps(OpRegistry &r) {
  using K = AttrKind;

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
      "dynamic_slice",
      "Takes a window of static size at starts known only at run time (ONNX Slice whose ends "
      "are its starts plus constants, steps 1); a window that would not fit is an error at run "
      "time.",
      {"data", "starts"},
      2,
      2,
      {{"axes", K::Ints, std::nullopt, "the sliced axes"},
       {"sizes", K::Ints, std::nullopt, "the window's size per sliced axis"}},
      OpPattern::Opaque, // its offset is data: kept out of fused element loops
      dynamicSliceRelation,
      dynamicSliceKernel,
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

  return okStatus();
}

} // namespace tessera::ir::ops
