//===- frontend/onnx/converters/tensor.cpp - ONNX tensor converters ------===//
//
// Converters for the ONNX shape and data-movement ops: Constant, Shape,
// Size, Reshape, Flatten, Transpose, Concat, Split, Slice, Squeeze,
// Unsqueeze, Pad, Expand, Gather, GatherElements, Tile, ConstantOfShape,
// Range, EyeLike, Trilu, OneHot, CumSum and TopK.
//
// Inputs that decide the output shape (Reshape's shape, Slice's starts, ...)
// must be constants in the static-shape IR: the converters read them with
// NodeContext::constantInput(), which also records a graph input wanted as a
// constant (the importer can then bind it and import again).
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/converters/common.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

namespace tessera::frontend::onnx {

namespace {

using ir::DType;
using ir::Expr;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// Constant integer input i as int64 values.
Expected<Ints> constantInts(NodeContext &ctx, size_t i, std::string_view name) {
  TS_ASSIGN_OR_RETURN(const ir::Tensor *t, requireConstant(ctx, i, name));
  if (!ir::isInteger(t->dtype()))
    return ctx.error("input {} ('{}') must be an integer tensor, got {}", i, name, t->type().str());
  return t->toInts();
}

/// A constant single-element input as int64 (any numeric dtype).
Expected<int64_t> constantScalarInt(NodeContext &ctx, size_t i, std::string_view name) {
  TS_ASSIGN_OR_RETURN(const ir::Tensor *t, requireConstant(ctx, i, name));
  if (t->numel() != 1)
    return ctx.error("input {} ('{}') must have one element, got {}", i, name, t->type().str());
  if (ir::isFloat(t->dtype()))
    return int64_t(t->getDouble(0));
  return t->getInt(0);
}

/// Constants that converters build are limited to this many elements (a
/// malformed model must not make the importer allocate without bound).
constexpr int64_t kMaxConstantElements = int64_t(1) << 28;

/// The element count of `shape` if it is at most kMaxConstantElements.
Expected<int64_t> checkedElements(NodeContext &ctx, std::span<const int64_t> shape) {
  __int128 n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return ctx.error("shape {} has a negative dim", ir::shapeStr(shape));
    n *= d;
    if (n > kMaxConstantElements)
      return ctx.error("shape {} is too large for a constant", ir::shapeStr(shape));
  }
  return int64_t(n);
}

/// The fields of a tuple-valued expression (a folded call gives a Tuple).
Expected<Outputs> unpackTuple(NodeContext &ctx, const Expr &t) {
  Outputs out;
  if (const auto *tuple = t->as<ir::TupleNode>()) {
    out.assign(tuple->fields().begin(), tuple->fields().end());
    return out;
  }
  for (size_t i = 0; i < t->type().fields().size(); ++i) {
    TS_ASSIGN_OR_RETURN(Expr item, ir::makeTupleGetItem(t, int(i), ctx.nodeName()));
    out.push_back(item);
  }
  return out;
}

/// Normalises `axis` into [0, rank).
Expected<int64_t> normAxis(NodeContext &ctx, int64_t axis, int64_t rank, std::string_view what) {
  if (axis < -rank || axis >= rank)
    return ctx.error("{} {} is out of range for rank {}", what, axis, rank);
  return axis < 0 ? axis + rank : axis;
}

//===----------------------------------------------------------------------===//
// Constants and shape queries.
//===----------------------------------------------------------------------===//

/// Constant (opsets 1-17): value, value_float(s), value_int(s). Sparse and
/// string values are errors.
Expected<Outputs> convertConstant(NodeContext &ctx) {
  for (const char *name : {"sparse_value", "value_string", "value_strings"})
    if (ctx.hasAttr(name))
      return ctx.error("attribute '{}' is not supported", name);
  if (ctx.hasAttr("value")) {
    TS_ASSIGN_OR_RETURN(ir::Tensor t, ctx.attrTensor("value"));
    return Outputs{ctx.constant(std::move(t))};
  }
  if (ctx.hasAttr("value_float")) {
    TS_ASSIGN_OR_RETURN(float v, ctx.attrFloat("value_float"));
    return Outputs{ctx.constant(ir::Tensor::fromDoubles(DType::F32, {}, std::vector<double>{v}))};
  }
  if (ctx.hasAttr("value_floats")) {
    TS_ASSIGN_OR_RETURN(std::vector<float> v, ctx.attrFloats("value_floats"));
    std::vector<double> d(v.begin(), v.end());
    return Outputs{ctx.constant(ir::Tensor::fromDoubles(DType::F32, {int64_t(d.size())}, d))};
  }
  if (ctx.hasAttr("value_int")) {
    TS_ASSIGN_OR_RETURN(int64_t v, ctx.attrInt("value_int"));
    return Outputs{ctx.constant(ir::Tensor::fromInts(DType::I64, {}, Ints{v}))};
  }
  if (ctx.hasAttr("value_ints")) {
    TS_ASSIGN_OR_RETURN(Ints v, ctx.attrInts("value_ints"));
    return Outputs{ctx.constant(ir::Tensor::fromInts(DType::I64, {int64_t(v.size())}, v))};
  }
  return ctx.error("no value attribute");
}

/// Shape (opsets 1-17; start/end from 15, clamped): a constant i64 vector.
Expected<Outputs> convertShape(NodeContext &ctx) {
  const ir::Shape &s = shapeOf(ctx.input(0));
  int64_t r = int64_t(s.size());
  TS_ASSIGN_OR_RETURN(int64_t start, ctx.attrInt("start", int64_t{0}));
  TS_ASSIGN_OR_RETURN(int64_t end, ctx.attrInt("end", r));
  if (start < 0)
    start += r;
  if (end < 0)
    end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  Ints dims(s.begin() + start, s.begin() + std::max(start, end));
  return Outputs{ctx.constant(ir::Tensor::fromInts(DType::I64, {int64_t(dims.size())}, dims))};
}

/// Size (opsets 1-17): a constant i64 scalar.
Expected<Outputs> convertSize(NodeContext &ctx) {
  int64_t n = ctx.input(0)->type().numElements();
  return Outputs{ctx.constant(ir::Tensor::fromInts(DType::I64, {}, Ints{n}))};
}

/// ConstantOfShape (opsets 9-17): constant shape input; value (one-element
/// tensor, default f32 0).
Expected<Outputs> convertConstantOfShape(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Ints shape, constantInts(ctx, 0, "input"));
  TS_RETURN_IF_ERROR(checkedElements(ctx, shape));
  ir::Tensor value = ir::Tensor::fromDoubles(DType::F32, {1}, std::vector<double>{0.0});
  if (ctx.hasAttr("value")) {
    TS_ASSIGN_OR_RETURN(value, ctx.attrTensor("value"));
    if (value.numel() != 1)
      return ctx.error("attribute 'value' must have one element, got {}", value.type().str());
  }
  ir::Tensor out(value.dtype(), shape);
  size_t esize = ir::dtypeSize(value.dtype());
  for (int64_t i = 0; i < out.numel(); ++i)
    std::memcpy(out.bytes() + size_t(i) * esize, value.bytes(), esize);
  return Outputs{ctx.constant(std::move(out))};
}

/// Range (opsets 11-17): constant start, limit, delta -> a constant.
Expected<Outputs> convertRange(NodeContext &ctx) {
  const ir::Tensor *in[3];
  const char *names[3] = {"start", "limit", "delta"};
  wishConstants(ctx, {0, 1, 2});
  for (size_t i = 0; i < 3; ++i) {
    TS_ASSIGN_OR_RETURN(in[i], requireConstant(ctx, i, names[i]));
    if (in[i]->numel() != 1)
      return ctx.error("input {} ('{}') must be a scalar, got {}", i, names[i],
                       in[i]->type().str());
  }
  DType dt = in[0]->dtype();
  if (ir::isFloat(dt)) {
    double start = in[0]->getDouble(0), limit = in[1]->getDouble(0), delta = in[2]->getDouble(0);
    if (delta == 0)
      return ctx.error("delta must not be 0");
    double count = std::ceil((limit - start) / delta);
    if (!(count < double(kMaxConstantElements)))
      return ctx.error("the range has too many elements");
    int64_t n = std::max<int64_t>(int64_t(count), 0);
    std::vector<double> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      v[size_t(i)] = start + double(i) * delta;
    return Outputs{ctx.constant(ir::Tensor::fromDoubles(dt, {n}, v))};
  }
  int64_t start = in[0]->getInt(0), limit = in[1]->getInt(0), delta = in[2]->getInt(0);
  if (delta == 0)
    return ctx.error("delta must not be 0");
  __int128 span = __int128(limit) - start;
  __int128 count = delta > 0 ? (span + delta - 1) / delta : (span + delta + 1) / delta;
  if (count > kMaxConstantElements)
    return ctx.error("the range has too many elements");
  int64_t n = std::max<int64_t>(int64_t(count), 0);
  Ints v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[size_t(i)] = start + i * delta;
  return Outputs{ctx.constant(ir::Tensor::fromInts(dt, {n}, v))};
}

/// EyeLike (opsets 9-17): 2-D; k, dtype -> a constant.
Expected<Outputs> convertEyeLike(NodeContext &ctx) {
  const Expr &x = ctx.input(0);
  if (rankOf(x) != 2)
    return ctx.error("input must have rank 2, got {}", x->type().str());
  TS_ASSIGN_OR_RETURN(int64_t k, ctx.attrInt("k", int64_t{0}));
  DType dt = dtypeOf(x);
  if (ctx.hasAttr("dtype")) {
    TS_ASSIGN_OR_RETURN(int64_t code, ctx.attrInt("dtype"));
    TS_ASSIGN_OR_RETURN(dt, dtypeFromOnnx(ctx, code));
  }
  const ir::Shape &s = shapeOf(x);
  ir::Tensor out(dt, s);
  for (int64_t i = 0; i < s[0]; ++i) {
    int64_t j = i + k;
    if (j >= 0 && j < s[1])
      out.setDouble(i * s[1] + j, 1.0);
  }
  return Outputs{ctx.constant(std::move(out))};
}

//===----------------------------------------------------------------------===//
// Reshaping.
//===----------------------------------------------------------------------===//

/// Reshape (opsets 1-17): shape attribute (< 5) or constant input; 0 copies
/// the input dim (allowzero=1, opset 14: a literal 0), one -1 is inferred.
Expected<Outputs> convertReshape(NodeContext &ctx) {
  const Expr &x = ctx.input(0);
  Ints shape;
  if (ctx.opset() < 5) {
    TS_ASSIGN_OR_RETURN(shape, ctx.attrInts("shape"));
  } else {
    TS_ASSIGN_OR_RETURN(shape, constantInts(ctx, 1, "shape"));
  }
  TS_ASSIGN_OR_RETURN(int64_t allowZero, ctx.attrInt("allowzero", int64_t{0}));
  const ir::Shape &in = shapeOf(x);
  int64_t inferAt = -1;
  __int128 known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allowZero) {
      if (i >= in.size())
        return ctx.error("shape {} copies dim {}, but the input has rank {}", ir::shapeStr(shape),
                         i, in.size());
      shape[i] = in[i];
    }
    if (shape[i] == -1) {
      if (inferAt >= 0)
        return ctx.error("shape {} has more than one -1", ir::shapeStr(shape));
      inferAt = int64_t(i);
    } else if (shape[i] < 0) {
      return ctx.error("shape {} has an invalid dim", ir::shapeStr(shape));
    } else {
      known *= shape[i];
      if (known > std::numeric_limits<int64_t>::max())
        return ctx.error("shape {} has too many elements", ir::shapeStr(shape));
    }
  }
  int64_t total = x->type().numElements();
  if (inferAt >= 0) {
    if (known == 0 || total % int64_t(known) != 0)
      return ctx.error("cannot reshape {} to {}", x->type().str(), ir::shapeStr(shape));
    shape[size_t(inferAt)] = total / int64_t(known);
  } else if (known != total) {
    return ctx.error("cannot reshape {} to {}", x->type().str(), ir::shapeStr(shape));
  }
  TS_ASSIGN_OR_RETURN(Expr y, reshapeTo(ctx, x, shape));
  return Outputs{y};
}

/// Flatten (opsets 1-17): axis (negative from opset 11).
Expected<Outputs> convertFlatten(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(int64_t axis, ctx.attrInt("axis", int64_t{1}));
  const Expr &x = ctx.input(0);
  int64_t r = rankOf(x);
  if (axis < -r || axis > r)
    return ctx.error("attribute 'axis' = {} is out of range for rank {}", axis, r);
  if (axis < 0)
    axis += r;
  const ir::Shape &s = shapeOf(x);
  Ints out{product(std::span(s).subspan(0, size_t(axis))),
           product(std::span(s).subspan(size_t(axis)))};
  TS_ASSIGN_OR_RETURN(Expr y, reshapeTo(ctx, x, out));
  return Outputs{y};
}

/// Transpose (opsets 1-17): perm (default: reversed dims).
Expected<Outputs> convertTranspose(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Ints perm, ctx.attrInts("perm", Ints{}));
  TS_ASSIGN_OR_RETURN(Expr y, ctx.call("transpose", {ctx.input(0)}, {{"perm", perm}}));
  return Outputs{y};
}

/// Squeeze (opsets 1-17): axes attribute (< 13) or constant input; none =
/// every size-1 dim.
Expected<Outputs> convertSqueeze(NodeContext &ctx) {
  Ints axes;
  if (ctx.opset() < 13) {
    TS_ASSIGN_OR_RETURN(axes, ctx.attrInts("axes", Ints{}));
  } else if (ctx.hasInput(1)) {
    TS_ASSIGN_OR_RETURN(axes, constantInts(ctx, 1, "axes"));
  }
  TS_ASSIGN_OR_RETURN(Expr y, ctx.call("squeeze", {ctx.input(0)}, {{"axes", axes}}));
  return Outputs{y};
}

/// Unsqueeze (opsets 1-17): axes attribute (< 13) or constant input.
Expected<Outputs> convertUnsqueeze(NodeContext &ctx) {
  Ints axes;
  if (ctx.opset() < 13) {
    TS_ASSIGN_OR_RETURN(axes, ctx.attrInts("axes"));
  } else {
    TS_ASSIGN_OR_RETURN(axes, constantInts(ctx, 1, "axes"));
  }
  TS_ASSIGN_OR_RETURN(Expr y, ctx.call("unsqueeze", {ctx.input(0)}, {{"axes", axes}}));
  return Outputs{y};
}

//===----------------------------------------------------------------------===//
// Joining, splitting, slicing, padding.
//===----------------------------------------------------------------------===//

/// Concat (opsets 1-17): axis (default 1 before opset 4).
Expected<Outputs> convertConcat(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(int64_t axis, ctx.attrInt("axis", ctx.opset() < 4 ? std::optional<int64_t>(1)
                                                                        : std::nullopt));
  std::vector<Expr> args;
  for (size_t i = 0; i < ctx.numInputs(); ++i)
    if (ctx.hasInput(i))
      args.push_back(ctx.input(i));
  if (args.empty())
    return ctx.error("no inputs");
  TS_ASSIGN_OR_RETURN(Expr y, ctx.call("concat", args, {{"axis", axis}}));
  return Outputs{y};
}

/// Split (opsets 2-17): split attribute (< 13) or constant input; without
/// it, equal parts (one per output).
Expected<Outputs> convertSplit(NodeContext &ctx) {
  const Expr &x = ctx.input(0);
  TS_ASSIGN_OR_RETURN(int64_t axis, ctx.attrInt("axis", int64_t{0}));
  TS_ASSIGN_OR_RETURN(axis, normAxis(ctx, axis, rankOf(x), "axis"));
  Ints sizes;
  if (ctx.opset() < 13) {
    TS_ASSIGN_OR_RETURN(sizes, ctx.attrInts("split", Ints{}));
  } else if (ctx.hasInput(1)) {
    TS_ASSIGN_OR_RETURN(sizes, constantInts(ctx, 1, "split"));
  }
  int64_t dim = shapeOf(x)[size_t(axis)];
  if (sizes.empty()) {
    int64_t n = int64_t(ctx.numOutputs());
    if (n == 0 || dim % n != 0)
      return ctx.error("axis {} of size {} does not split into {} equal parts", axis, dim, n);
    sizes.assign(size_t(n), dim / n);
  }
  if (sizes.size() != ctx.numOutputs())
    return ctx.error("'split' has {} values for {} outputs", sizes.size(), ctx.numOutputs());
  TS_ASSIGN_OR_RETURN(Expr t, ctx.call("split", {x}, {{"axis", axis}, {"sizes", sizes}}));
  return unpackTuple(ctx, t);
}

/// Slice (opsets 1-17): starts/ends/axes attributes (< 10) or constant
/// inputs starts, ends, axes, steps.
Expected<Outputs> convertSlice(NodeContext &ctx) {
  Ints starts, ends, axes, steps;
  if (ctx.opset() < 10) {
    TS_ASSIGN_OR_RETURN(starts, ctx.attrInts("starts"));
    TS_ASSIGN_OR_RETURN(ends, ctx.attrInts("ends"));
    TS_ASSIGN_OR_RETURN(axes, ctx.attrInts("axes", Ints{}));
  } else {
    wishConstants(ctx, {1, 2, 3, 4});
    TS_ASSIGN_OR_RETURN(starts, constantInts(ctx, 1, "starts"));
    TS_ASSIGN_OR_RETURN(ends, constantInts(ctx, 2, "ends"));
    if (ctx.hasInput(3)) {
      TS_ASSIGN_OR_RETURN(axes, constantInts(ctx, 3, "axes"));
    }
    if (ctx.hasInput(4)) {
      TS_ASSIGN_OR_RETURN(steps, constantInts(ctx, 4, "steps"));
    }
  }
  TS_ASSIGN_OR_RETURN(
      Expr y, ctx.call("slice", {ctx.input(0)},
                       {{"starts", starts}, {"ends", ends}, {"axes", axes}, {"steps", steps}}));
  return Outputs{y};
}

/// Pad (opsets 2-17): pads/value attributes (< 11) or constant inputs pads
/// and constant_value; modes constant, reflect, edge; negative pads crop.
Expected<Outputs> convertPad(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(std::string mode, ctx.attrString("mode", std::string("constant")));
  Ints pads;
  double value = 0;
  if (ctx.opset() < 11) {
    TS_ASSIGN_OR_RETURN(pads, ctx.attrInts("pads"));
    TS_ASSIGN_OR_RETURN(float v, ctx.attrFloat("value", 0.0f));
    value = v;
  } else {
    wishConstants(ctx, {1, 2});
    TS_ASSIGN_OR_RETURN(pads, constantInts(ctx, 1, "pads"));
    if (ctx.hasInput(2)) {
      TS_ASSIGN_OR_RETURN(const ir::Tensor *v, requireConstant(ctx, 2, "constant_value"));
      if (v->numel() != 1)
        return ctx.error("input 2 ('constant_value') must have one element, got {}",
                         v->type().str());
      value = v->getDouble(0);
    }
    if (ctx.numInputs() > 3 && ctx.hasInput(3))
      return ctx.error("input 3 ('axes') is not supported");
  }
  // Padding by nothing (torch.onnx writes one before every AvgPool2d of
  // DenseNet's transitions) is the input itself.
  if (std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; }) &&
      pads.size() == 2 * shapeOf(ctx.input(0)).size())
    return Outputs{ctx.input(0)};
  TS_ASSIGN_OR_RETURN(
      Expr y, ctx.call("pad", {ctx.input(0)}, {{"pads", pads}, {"mode", mode}, {"value", value}}));
  return Outputs{y};
}

/// Expand (opsets 8-17): constant shape input, bidirectional broadcast.
Expected<Outputs> convertExpand(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Ints shape, constantInts(ctx, 1, "shape"));
  TS_ASSIGN_OR_RETURN(Expr y, ctx.call("expand", {ctx.input(0)}, {{"shape", shape}}));
  return Outputs{y};
}

/// Tile (opsets 6-17): constant repeats; x [d...] is reshaped to
/// [1, d0, 1, d1, ...], expanded to [r0, d0, r1, d1, ...] and flattened
/// pairwise.
Expected<Outputs> convertTile(NodeContext &ctx) {
  const Expr &x = ctx.input(0);
  TS_ASSIGN_OR_RETURN(Ints reps, constantInts(ctx, 1, "repeats"));
  const ir::Shape &s = shapeOf(x);
  if (reps.size() != s.size())
    return ctx.error("'repeats' has {} values for rank {}", reps.size(), s.size());
  Ints split, expanded, out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (reps[i] < 0)
      return ctx.error("'repeats' {} has a negative value", ir::shapeStr(reps));
    if (s[i] != 0 && reps[i] > ir::kMaxElements / s[i])
      return ctx.error("'repeats' {} makes a tensor of more than 2^48 elements",
                       ir::shapeStr(reps));
    split.insert(split.end(), {1, s[i]});
    expanded.insert(expanded.end(), {reps[i], s[i]});
    out.push_back(reps[i] * s[i]);
  }
  if (Status st = ir::checkShape(out); !st.ok())
    return ctx.error("'repeats' {}: {}", ir::shapeStr(reps), st.error().message());
  if (product(out) == 0)
    return Outputs{ctx.constant(ir::Tensor(dtypeOf(x), out))};
  TS_ASSIGN_OR_RETURN(Expr xs, reshapeTo(ctx, x, split));
  TS_ASSIGN_OR_RETURN(Expr xe, ctx.call("expand", {xs}, {{"shape", expanded}}));
  TS_ASSIGN_OR_RETURN(Expr y, reshapeTo(ctx, xe, out));
  return Outputs{y};
}

//===----------------------------------------------------------------------===//
// Indexing.
//===----------------------------------------------------------------------===//

/// Gather (opsets 1-17): axis, negative indices.
Expected<Outputs> convertGather(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(int64_t axis, ctx.attrInt("axis", int64_t{0}));
  TS_ASSIGN_OR_RETURN(Expr y, ctx.call("gather", {ctx.input(0), ctx.input(1)}, {{"axis", axis}}));
  return Outputs{y};
}

/// GatherElements (opsets 11-17): axis, negative indices.
Expected<Outputs> convertGatherElements(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(int64_t axis, ctx.attrInt("axis", int64_t{0}));
  TS_ASSIGN_OR_RETURN(Expr y,
                      ctx.call("gather_elements", {ctx.input(0), ctx.input(1)}, {{"axis", axis}}));
  return Outputs{y};
}

/// Trilu (opset 14-17): upper, optional constant k; where() with a constant
/// mask over the last two dims.
Expected<Outputs> convertTrilu(NodeContext &ctx) {
  const Expr &x = ctx.input(0);
  if (rankOf(x) < 2)
    return ctx.error("input must have rank >= 2, got {}", x->type().str());
  TS_ASSIGN_OR_RETURN(int64_t upper, ctx.attrInt("upper", int64_t{1}));
  int64_t k = 0;
  if (ctx.hasInput(1)) {
    TS_ASSIGN_OR_RETURN(k, constantScalarInt(ctx, 1, "k"));
  }
  const ir::Shape &s = shapeOf(x);
  int64_t rows = s[s.size() - 2], cols = s[s.size() - 1];
  ir::Tensor mask(DType::Bool, {rows, cols});
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      mask.setInt(i * cols + j, upper ? j - i >= k : j - i <= k);
  Expr zero = ctx.constant(ir::Tensor(dtypeOf(x), {}));
  TS_ASSIGN_OR_RETURN(Expr y, ctx.call("where", {ctx.constant(mask), x, zero}));
  return Outputs{y};
}

/// OneHot (opsets 9-17): constant depth; indices in [-depth, depth) (others
/// give all off values); values [off, on]; axis.
Expected<Outputs> convertOneHot(NodeContext &ctx) {
  const Expr &indices = ctx.input(0);
  const Expr &values = ctx.input(2);
  TS_ASSIGN_OR_RETURN(int64_t depth, constantScalarInt(ctx, 1, "depth"));
  if (depth <= 0 || depth > kMaxConstantElements)
    return ctx.error("depth {} is out of range", depth);
  if (values->type().numElements() != 2 || rankOf(values) != 1)
    return ctx.error("input 2 ('values') must have shape [2], got {}", values->type().str());
  TS_ASSIGN_OR_RETURN(int64_t axis, ctx.attrInt("axis", int64_t{-1}));
  int64_t outRank = rankOf(indices) + 1;
  TS_ASSIGN_OR_RETURN(axis, normAxis(ctx, axis, outRank, "attribute 'axis' ="));
  DType it = dtypeOf(indices);
  if (it == DType::Bool)
    return ctx.error("indices must be numeric, got {}", indices->type().str());
  // Negative indices count from the end.
  auto scalarOf = [&](double v) {
    return ctx.constant(ir::Tensor::fromDoubles(it, {}, std::vector<double>{v}));
  };
  TS_ASSIGN_OR_RETURN(Expr neg, ctx.call("less", {indices, scalarOf(0)}));
  TS_ASSIGN_OR_RETURN(Expr wrapped, ctx.call("add", {indices, scalarOf(double(depth))}));
  TS_ASSIGN_OR_RETURN(Expr idx, ctx.call("where", {neg, wrapped, indices}));
  TS_ASSIGN_OR_RETURN(Expr idxU, ctx.call("unsqueeze", {idx}, {{"axes", Ints{axis}}}));
  Ints rangeShape(size_t(outRank), 1);
  rangeShape[size_t(axis)] = depth;
  std::vector<double> range(static_cast<size_t>(depth));
  std::iota(range.begin(), range.end(), 0.0);
  Expr targets = ctx.constant(ir::Tensor::fromDoubles(it, rangeShape, range));
  TS_ASSIGN_OR_RETURN(Expr hot, ctx.call("equal", {idxU, targets}));
  TS_ASSIGN_OR_RETURN(Expr off,
                      ctx.call("slice", {values}, {{"starts", Ints{0}}, {"ends", Ints{1}}}));
  TS_ASSIGN_OR_RETURN(Expr on,
                      ctx.call("slice", {values}, {{"starts", Ints{1}}, {"ends", Ints{2}}}));
  TS_ASSIGN_OR_RETURN(Expr y, ctx.call("where", {hot, on, off}));
  return Outputs{y};
}

/// CumSum (opsets 11-17): constant axis input; exclusive, reverse.
Expected<Outputs> convertCumSum(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(int64_t axis, constantScalarInt(ctx, 1, "axis"));
  TS_ASSIGN_OR_RETURN(int64_t exclusive, ctx.attrInt("exclusive", int64_t{0}));
  TS_ASSIGN_OR_RETURN(int64_t reverse, ctx.attrInt("reverse", int64_t{0}));
  TS_ASSIGN_OR_RETURN(
      Expr y, ctx.call("cumsum", {ctx.input(0)},
                       {{"axis", axis}, {"exclusive", exclusive != 0}, {"reverse", reverse != 0}}));
  return Outputs{y};
}

/// TopK (opsets 1-17): k attribute (< 10) or constant input; axis, largest,
/// sorted (results are always sorted; ties keep the lower index first).
Expected<Outputs> convertTopK(NodeContext &ctx) {
  int64_t k;
  if (ctx.opset() < 10) {
    TS_ASSIGN_OR_RETURN(k, ctx.attrInt("k"));
  } else {
    TS_ASSIGN_OR_RETURN(k, constantScalarInt(ctx, 1, "K"));
  }
  TS_ASSIGN_OR_RETURN(int64_t axis, ctx.attrInt("axis", int64_t{-1}));
  TS_ASSIGN_OR_RETURN(int64_t largest, ctx.attrInt("largest", int64_t{1}));
  TS_ASSIGN_OR_RETURN(int64_t sorted, ctx.attrInt("sorted", int64_t{1}));
  TS_ASSIGN_OR_RETURN(
      Expr t,
      ctx.call("topk", {ctx.input(0)},
               {{"k", k}, {"axis", axis}, {"largest", largest != 0}, {"sorted", sorted != 0}}));
  return unpackTuple(ctx, t);
}

} // namespace

Status registerTensorConverters(ConverterRegistry &r) {
  // Op type, required inputs, first opset, converter, notes.
  auto add = [&](std::string opType, size_t inputs, int64_t minOpset, Converter convert,
                 std::string notes) {
    return r.add(ConverterSpec{std::move(opType), minOpset, 17,
                               withInputs(inputs, std::move(convert)), std::move(notes)});
  };
  TS_RETURN_IF_ERROR(add("Constant", 0, 1, convertConstant,
                         "value, value_float(s), value_int(s); sparse and string values "
                         "unsupported"));
  TS_RETURN_IF_ERROR(add("Shape", 1, 1, convertShape, "a constant; start/end (opset 15)"));
  TS_RETURN_IF_ERROR(add("Size", 1, 1, convertSize, "a constant"));
  TS_RETURN_IF_ERROR(
      add("ConstantOfShape", 1, 9, convertConstantOfShape, "constant shape input; a constant"));
  TS_RETURN_IF_ERROR(add("Range", 3, 11, convertRange, "constant inputs only; a constant"));
  TS_RETURN_IF_ERROR(add("EyeLike", 1, 9, convertEyeLike, "k, dtype; a constant"));
  TS_RETURN_IF_ERROR(add("Reshape", 1, 1, convertReshape,
                         "constant shape (attribute before opset 5); 0, -1, allowzero"));
  TS_RETURN_IF_ERROR(add("Flatten", 1, 1, convertFlatten, "axis, negative axis"));
  TS_RETURN_IF_ERROR(add("Transpose", 1, 1, convertTranspose, "perm (default reversed)"));
  TS_RETURN_IF_ERROR(add("Squeeze", 1, 1, convertSqueeze,
                         "axes attribute (< 13) or constant input; none = all size-1 dims"));
  TS_RETURN_IF_ERROR(
      add("Unsqueeze", 1, 1, convertUnsqueeze, "axes attribute (< 13) or constant input"));
  TS_RETURN_IF_ERROR(add("Concat", 1, 1, convertConcat, "any axis"));
  TS_RETURN_IF_ERROR(add("Split", 1, 2, convertSplit,
                         "split attribute (< 13) or constant input; equal parts without it"));
  TS_RETURN_IF_ERROR(add("Slice", 1, 1, convertSlice,
                         "attributes (< 10) or constant starts/ends/axes/steps; negative and "
                         "out-of-range values, negative steps"));
  TS_RETURN_IF_ERROR(add("Pad", 1, 2, convertPad,
                         "constant/reflect/edge; pads attribute (< 11) or constant input; "
                         "constant_value; negative pads crop; no axes input"));
  TS_RETURN_IF_ERROR(add("Expand", 2, 8, convertExpand, "constant shape input"));
  TS_RETURN_IF_ERROR(add("Tile", 2, 6, convertTile, "constant repeats (reshape, expand, reshape)"));
  TS_RETURN_IF_ERROR(add("Gather", 2, 1, convertGather, "any axis, negative indices"));
  TS_RETURN_IF_ERROR(
      add("GatherElements", 2, 11, convertGatherElements, "any axis, negative indices"));
  TS_RETURN_IF_ERROR(add("Trilu", 1, 14, convertTrilu, "upper/lower, constant k"));
  TS_RETURN_IF_ERROR(
      add("OneHot", 3, 9, convertOneHot, "constant depth, any axis, negative indices"));
  TS_RETURN_IF_ERROR(add("CumSum", 2, 11, convertCumSum, "constant axis; exclusive, reverse"));
  TS_RETURN_IF_ERROR(add("TopK", 1, 1, convertTopK,
                         "constant k; axis, largest; always sorted (ties: lower index first)"));
  return okStatus();
}

} // namespace tessera::frontend::onnx
