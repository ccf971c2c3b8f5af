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
// This file holds the reshaping, joining, splitting, slicing and padding
// converters, the helpers the family shares and registerTensorConverters();
// the constants and shape queries are in tensor_constant.cpp, the indexing
// ops in tensor_index.cpp (shared declarations: tensor_internal.h).
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/converters/tensor_internal.h"

#include "ir/symbol.h"

#include <algorithm>
#include <limits>

namespace tessera::frontend::onnx {

namespace tensor_detail {

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

/// Normalises `axis` into [0, rank).
Expected<int64_t> normAxis(NodeContext &ctx, int64_t axis, int64_t rank, std::string_view what) {
  if (axis < -rank || axis >= rank)
    return ctx.error("{} {} is out of range for rank {}", what, axis, rank);
  return axis < 0 ? axis + rank : axis;
}

namespace {

//===----------------------------------------------------------------------===//
// Reshaping.
//===----------------------------------------------------------------------===//

/// Reshape (opsets 1-17): shape attribute (< 5) or input; 0 copies the
/// input dim (allowzero=1, opset 14: a literal 0), one -1 is inferred. A
/// shape of data values: tensor_runtime.cpp.
Expected<Outputs> convertReshape(NodeContext &ctx) {
  const Expr &x = ctx.input(0);
  Ints shape;
  TS_ASSIGN_OR_RETURN(int64_t allowZero, ctx.attrInt("allowzero", int64_t{0}));
  if (ctx.opset() < 5) {
    TS_ASSIGN_OR_RETURN(shape, ctx.attrInts("shape"));
  } else if (!ctx.constantInput(1)) {
    return reshapeOfData(ctx, allowZero);
  } else {
    TS_ASSIGN_OR_RETURN(shape, constantInts(ctx, 1, "shape"));
  }
  const ir::Shape &in = shapeOf(x);
  if (!ir::isStatic(in) || !ir::isStatic(shape)) {
    // Symbolic dims (in the input, or in a shape computed by Shape ->
    // Gather -> Concat): the reshape relation checks the element counts at
    // the symbols' probe values and infers the -1 (ir/symbol.h).
    if (allowZero)
      for (int64_t d : shape)
        if (d == 0)
          return ctx.error("shape {} with allowzero over symbolic dims is not supported yet",
                           ir::shapeStr(shape));
    TS_ASSIGN_OR_RETURN(Expr y, ctx.call("reshape", {x}, {{"newshape", shape}}));
    return Outputs{y};
  }
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
  const auto lead = std::span(s).subspan(0, size_t(axis)), rest = std::span(s).subspan(size_t(axis));
  Ints out{product(lead), product(rest)};
  if (!ir::isStatic(s)) {
    // Symbolic dims (ir/symbol.h): reshape's 0 copies a dim and -1 infers
    // one, so one symbolic side is written through them.
    if (ir::isStatic(lead))
      out = {product(lead), -1};
    else if (axis == 1)
      out = {0, -1};
    else if (ir::isStatic(rest))
      out = {-1, product(rest)};
    else
      return ctx.error("cannot flatten {} at axis {}: symbolic dims on both sides",
                       ir::shapeStr(s), axis);
    TS_ASSIGN_OR_RETURN(Expr y, ctx.call("reshape", {x}, {{"newshape", out}}));
    return Outputs{y};
  }
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
/// Whether `a` and `b` compute the same value: one expression, equal
/// constants, or one op with equal attributes over arguments that do.
bool sameValue(const Expr &a, const Expr &b, int depth = 0) {
  if (a == b)
    return true;
  if (!a || !b || depth > 8)
    return false;
  if (const auto *ka = a->as<ir::ConstantNode>(), *kb = b->as<ir::ConstantNode>(); ka && kb)
    return ka->data().type() == kb->data().type() &&
           std::equal(ka->data().bytes(), ka->data().bytes() + ka->data().nbytes(),
                      kb->data().bytes());
  const auto *ca = a->as<ir::CallNode>(), *cb = b->as<ir::CallNode>();
  if (!ca || !cb || ca->op() != cb->op() || !(ca->attrs() == cb->attrs()) ||
      ca->args().size() != cb->args().size())
    return false;
  for (size_t i = 0; i < ca->args().size(); ++i)
    if (!sameValue(ca->args()[i], cb->args()[i], depth + 1))
      return false;
  return true;
}

/// `ends` as `starts` plus integer constants (n values, a single one
/// broadcast): `add(s, c)`, or one shape op (unsqueeze, reshape, squeeze,
/// cast) applied to both sides of such a sum. Nullopt otherwise.
std::optional<Ints> constantOffset(const Expr &starts, const Expr &ends, size_t n, int depth = 0) {
  const auto *ce = ends ? ends->as<ir::CallNode>() : nullptr;
  if (!ce || depth > 8)
    return std::nullopt;
  const std::string &op = ce->op()->name;
  if (op == "add" && ce->args().size() == 2)
    for (size_t side : {0, 1}) {
      const auto *k = ce->args()[side]->as<ir::ConstantNode>();
      if (!k || !ir::isInteger(k->data().dtype()) || !sameValue(ce->args()[1 - side], starts))
        continue;
      Ints v = k->data().toInts();
      if (v.size() == 1)
        v.assign(n, v[0]);
      if (v.size() == n)
        return v;
    }
  const auto *cs = starts->as<ir::CallNode>();
  if (cs && cs->op() == ce->op() && cs->attrs() == ce->attrs() && cs->args().size() == 1 &&
      ce->args().size() == 1 &&
      (op == "unsqueeze" || op == "reshape" || op == "squeeze" || op == "cast"))
    return constantOffset(cs->args()[0], ce->args()[0], n, depth + 1);
  return std::nullopt;
}

/// Slice whose starts are known only at run time and whose ends are the
/// starts plus constants, steps 1 (`x[i:i+1]` in a loop body): a window of
/// static size, `dynamic_slice`. Nullopt when the node is not of that form.
std::optional<Expected<Outputs>> windowSlice(NodeContext &ctx) {
  if (ctx.opset() < 10 || !ctx.hasInput(1) || !ctx.hasInput(2) || ctx.constantInput(1))
    return std::nullopt;
  const Expr starts = ctx.input(1);
  const ir::Type &st = starts->type();
  if (!st.isTensor() || st.rank() != 1 || ir::isSymbol(st.shape()[0]) ||
      (st.dtype() != DType::I64 && st.dtype() != DType::I32))
    return std::nullopt;
  const size_t n = size_t(st.shape()[0]);
  std::optional<Ints> sizes = constantOffset(starts, ctx.input(2), n);
  if (!sizes || std::any_of(sizes->begin(), sizes->end(), [](int64_t v) { return v < 0; }))
    return std::nullopt;
  Ints axes;
  if (ctx.hasInput(3)) {
    const ir::Tensor *a = ctx.constantInput(3);
    if (!a)
      return std::nullopt;
    axes = a->toInts();
  } else {
    for (size_t i = 0; i < n; ++i)
      axes.push_back(int64_t(i));
  }
  if (ctx.hasInput(4)) {
    const ir::Tensor *steps = ctx.constantInput(4);
    if (!steps)
      return std::nullopt;
    for (int64_t v : steps->toInts())
      if (v != 1)
        return std::nullopt;
  }
  Expected<Expr> y = ctx.call("dynamic_slice", {ctx.input(0), starts},
                              {{"axes", axes}, {"sizes", *sizes}});
  if (!y.ok())
    return Expected<Outputs>(std::move(y).error());
  return Expected<Outputs>(Outputs{*y});
}

Expected<Outputs> convertSlice(NodeContext &ctx) {
  if (std::optional<Expected<Outputs>> window = windowSlice(ctx))
    return std::move(*window);
  // Starts or ends known only at run time: a run-time length.
  if (ctx.opset() >= 10 && (!ctx.constantInput(1) || !ctx.constantInput(2)) &&
      (!ctx.hasInput(3) || ctx.constantInput(3)) && (!ctx.hasInput(4) || ctx.constantInput(4)))
    return sliceOfData(ctx);
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

/// Expand (opsets 8-17): shape input, bidirectional broadcast (a shape of
/// data values: tensor_runtime.cpp).
Expected<Outputs> convertExpand(NodeContext &ctx) {
  if (!ctx.constantInput(1))
    return expandOfData(ctx);
  TS_ASSIGN_OR_RETURN(Ints shape, constantInts(ctx, 1, "shape"));
  TS_ASSIGN_OR_RETURN(Expr y, ctx.call("expand", {ctx.input(0)}, {{"shape", shape}}));
  return Outputs{y};
}

/// Tile (opsets 6-17): constant repeats; x [d...] is reshaped to
/// [1, d0, 1, d1, ...], expanded to [r0, d0, r1, d1, ...] and flattened
/// pairwise (repeats of data values: tensor_runtime.cpp).
Expected<Outputs> convertTile(NodeContext &ctx) {
  const Expr &x = ctx.input(0);
  if (!ctx.constantInput(1))
    return tileOfData(ctx);
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

} // namespace
} // namespace tensor_detail

Status registerTensorConverters(ConverterRegistry &r) {
  using namespace tensor_detail;
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
      add("ConstantOfShape", 1, 9, convertConstantOfShape, "constant shape input; a constant, or core expand over a shape holding symbols; a shape "
          "known only at run time: one range_count per dim (unbounded run-time dims, memory "
          "grown as needed), numeric values"));
  TS_RETURN_IF_ERROR(add("Range", 3, 11, convertRange, "constant inputs: a constant; over shape values holding symbolic dims: core range; "
                         "over scalars known only at run time: range_count (an unbounded "
                         "run-time count, memory grown as needed), then start + iota * delta"));
  TS_RETURN_IF_ERROR(add("EyeLike", 1, 9, convertEyeLike, "k, dtype; a constant"));
  TS_RETURN_IF_ERROR(add("Reshape", 1, 1, convertReshape,
                         "shape attribute (< 5) or input; 0, -1, allowzero; a shape of data "
                         "values: one unbounded run-time dim each, the element count checked "
                         "at run time"));
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
                         "out-of-range values, negative steps; run-time starts whose ends are "
                         "the starts plus constants (steps 1): a window of static size "
                         "(dynamic_slice), refused at run time where it does not fit; other "
                         "run-time starts or ends (constant axes and steps): a run-time "
                         "length per sliced axis"));
  TS_RETURN_IF_ERROR(add("Pad", 1, 2, convertPad,
                         "constant/reflect/edge; pads attribute (< 11) or constant input; "
                         "constant_value; negative pads crop; no axes input"));
  TS_RETURN_IF_ERROR(add("Expand", 2, 8, convertExpand,
                         "shape input; of data values: a run-time dim where the input's is "
                         "1, the others checked at run time"));
  TS_RETURN_IF_ERROR(add("Tile", 2, 6, convertTile,
                         "repeats (constant: reshape, expand, reshape; data values: a "
                         "run-time dim per axis, negatives refused at run time)"));
  TS_RETURN_IF_ERROR(add("Gather", 2, 1, convertGather, "any axis, negative indices"));
  TS_RETURN_IF_ERROR(
      add("GatherElements", 2, 11, convertGatherElements, "any axis, negative indices"));
  TS_RETURN_IF_ERROR(add("Trilu", 1, 14, convertTrilu, "upper/lower, constant k"));
  TS_RETURN_IF_ERROR(
      add("OneHot", 3, 9, convertOneHot, "constant depth, any axis, negative indices"));
  TS_RETURN_IF_ERROR(add("CumSum", 2, 11, convertCumSum, "constant axis; exclusive, reverse"));
  TS_RETURN_IF_ERROR(add("TopK", 1, 1, convertTopK,
                         "constant k; axis, largest; always sorted (ties: lower index first); a K "
                         "of data values: a full sort, the first K gathered (K checked at run "
                         "time)"));
  return okStatus();
}

} // namespace tessera::frontend::onnx
