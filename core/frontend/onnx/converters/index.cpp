//===- frontend/onnx/converters/index.cpp - ONNX index converters ----===//
//
// The index-driven ONNX ops: GatherND, ScatterND, ScatterElements and Scatter
// on the core index ops, Compress (gather with the indices of a constant
// condition) and ReverseSequence (gather_elements with computed indices); and
// the ops with data-dependent output shapes, NonZero, Unique and
// NonMaxSuppression: core ops whose result size the data decides, folded on
// constant inputs.
// registerIndexConverters() at the end registers them.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/converters/common.h"

#include "ir/ops/unique.h"
#include "ir/symbol.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <cmath>
#include <numeric>

namespace tessera::frontend::onnx {

namespace index_detail {

using ir::DType;
using ir::Expr;
using ir::Tensor;

//===----------------------------------------------------------------------===//
// Index ops
//===----------------------------------------------------------------------===//

/// GatherND (opsets 11-17): batch_dims (12+), negative indices.
Expected<Outputs> convertGatherND(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr data, tensorInput(ctx, 0, "data"));
  TS_ASSIGN_OR_RETURN(Expr indices, tensorInput(ctx, 1, "indices"));
  TS_ASSIGN_OR_RETURN(int64_t batchDims, ctx.attrInt("batch_dims", int64_t{0}));
  TS_ASSIGN_OR_RETURN(Expr y, ctx.call("gather_nd", {data, indices}, {{"batch_dims", batchDims}}));
  return Outputs{y};
}

namespace {

/// The 'reduction' attribute of the scatter ops: "none", and from opset 16
/// "add" and "mul" (opset 18's "max"/"min" are beyond our opsets).
Expected<std::string> scatterReduction(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(std::string red, ctx.attrString("reduction", std::string("none")));
  if (red != "none" && red != "add" && red != "mul")
    return ctx.error("attribute 'reduction' = \"{}\" is not one of \"none\", \"add\", \"mul\"",
                     red);
  return red;
}

} // namespace

/// ScatterND (opsets 11-17): reduction none/add/mul (16+).
Expected<Outputs> convertScatterND(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr data, tensorInput(ctx, 0, "data"));
  TS_ASSIGN_OR_RETURN(Expr indices, tensorInput(ctx, 1, "indices"));
  TS_ASSIGN_OR_RETURN(Expr updates, tensorInput(ctx, 2, "updates"));
  TS_ASSIGN_OR_RETURN(std::string red, scatterReduction(ctx));
  TS_ASSIGN_OR_RETURN(Expr y,
                      ctx.call("scatter_nd", {data, indices, updates}, {{"reduction", red}}));
  return Outputs{y};
}

/// ScatterElements (opsets 11-17) and Scatter (9-10, the same op without
/// reduction): axis, negative indices, reduction none/add/mul (16+).
Expected<Outputs> convertScatterElements(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr data, tensorInput(ctx, 0, "data"));
  TS_ASSIGN_OR_RETURN(Expr indices, tensorInput(ctx, 1, "indices"));
  TS_ASSIGN_OR_RETURN(Expr updates, tensorInput(ctx, 2, "updates"));
  TS_ASSIGN_OR_RETURN(int64_t axis, ctx.attrInt("axis", int64_t{0}));
  TS_ASSIGN_OR_RETURN(std::string red, scatterReduction(ctx));
  TS_ASSIGN_OR_RETURN(Expr y, ctx.call("scatter_elements", {data, indices, updates},
                                       {{"axis", axis}, {"reduction", red}}));
  return Outputs{y};
}

namespace {

/// The node's optional 'axis' (normalised), or, without one, axis 0 of
/// `x` flattened to 1-D (Compress and Unique treat a missing axis so).
Expected<int64_t> axisOrFlatten(NodeContext &ctx, Expr &x) {
  if (!ctx.hasAttr("axis")) {
    TS_ASSIGN_OR_RETURN(x, reshapeTo(ctx, x, Ints{x->type().numElements()}));
    return 0;
  }
  TS_ASSIGN_OR_RETURN(int64_t axis, ctx.attrInt("axis"));
  int64_t r = rankOf(x);
  if (axis < -r || axis >= r)
    return ctx.error("attribute 'axis' = {} is out of range for rank {}", axis, r);
  return axis < 0 ? axis + r : axis;
}

} // namespace

/// Compress whose condition is known only at run time: nonzero of the
/// condition (its count a run-time symbol bounded by its length), then a
/// gather of those slices. A condition longer than the axis is refused
/// (ONNX Runtime refuses one whose entries past the axis are true).
Expected<Outputs> runtimeCompress(NodeContext &ctx, Expr x) {
  const Expr &cond = ctx.input(1);
  if (cond->type().rank() != 1)
    return ctx.error("input 1 ('condition') must be 1-D, got {}", cond->type().str());
  TS_ASSIGN_OR_RETURN(int64_t axis, axisOrFlatten(ctx, x));
  const int64_t length = cond->type().shape()[0], dim = shapeOf(x)[size_t(axis)];
  if (!ir::isSymbol(length) && !ir::isSymbol(dim) && length > dim)
    return ctx.error("input 1 ('condition') has {} entries, more than axis {} of {} holds", length,
                     axis, x->type().str());
  TS_ASSIGN_OR_RETURN(int64_t count, boundedCountSymbol(ctx, cond->type(), "its selected slices"));
  TS_ASSIGN_OR_RETURN(Expr t, ctx.call("nonzero", {cond}, {{"count", count}}));
  TS_ASSIGN_OR_RETURN(Expr rows, ir::makeTupleGetItem(t, 0, ctx.nodeName()));
  TS_ASSIGN_OR_RETURN(Expr indices, ctx.call("reshape", {rows}, {{"newshape", Ints{count}}}));
  TS_ASSIGN_OR_RETURN(Expr y, ctx.call("gather", {x, indices}, {{"axis", axis}}));
  return Outputs{y};
}

/// Compress (opsets 9-17): the entries along 'axis' (or of the flattened
/// input without it) whose condition is true, by gather. A constant
/// condition shorter than the axis selects nothing past its end, and a true
/// entry past the end is an error; a run-time one is runtimeCompress.
Expected<Outputs> convertCompress(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr x, tensorInput(ctx, 0, "input"));
  if (ctx.hasInput(1) && !ctx.constantInput(1))
    return runtimeCompress(ctx, x);
  TS_ASSIGN_OR_RETURN(const Tensor *cond, requireConstant(ctx, 1, "condition"));
  if (cond->rank() != 1)
    return ctx.error("input 1 ('condition') must be 1-D, got {}", cond->type().str());
  TS_ASSIGN_OR_RETURN(int64_t axis, axisOrFlatten(ctx, x));
  int64_t dim = shapeOf(x)[size_t(axis)];
  Ints picked;
  for (int64_t i = 0; i < cond->numel(); ++i)
    if (cond->getDouble(i) != 0) {
      if (i >= dim)
        return ctx.error("condition entry {} is true, but axis {} has size {}", i, axis, dim);
      picked.push_back(i);
    }
  if (picked.empty()) {
    ir::Shape s = shapeOf(x);
    s[size_t(axis)] = 0;
    return Outputs{ctx.constant(Tensor(dtypeOf(x), s))};
  }
  Expr indices = ctx.constant(Tensor::fromInts(DType::I64, {int64_t(picked.size())}, picked));
  TS_ASSIGN_OR_RETURN(Expr y, ctx.call("gather", {x, indices}, {{"axis", axis}}));
  return Outputs{y};
}

/// ReverseSequence (opsets 10-17): reverses the first sequence_lens[b]
/// entries along time_axis of every batch entry b (batch_axis, time_axis in
/// {0, 1}); gather_elements with the index where(t < len, len - 1 - t, t).
Expected<Outputs> convertReverseSequence(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr x, tensorInput(ctx, 0, "input"));
  TS_ASSIGN_OR_RETURN(Expr lens, integerInput(ctx, 1, "sequence_lens"));
  TS_ASSIGN_OR_RETURN(int64_t batchAxis, ctx.attrInt("batch_axis", int64_t{1}));
  TS_ASSIGN_OR_RETURN(int64_t timeAxis, ctx.attrInt("time_axis", int64_t{0}));
  int64_t r = rankOf(x);
  if (r < 2)
    return ctx.error("input 0 must have rank >= 2, got {}", x->type().str());
  if ((batchAxis != 0 && batchAxis != 1) || (timeAxis != 0 && timeAxis != 1) ||
      batchAxis == timeAxis)
    return ctx.error("batch_axis ({}) and time_axis ({}) must be 0 and 1 in some order", batchAxis,
                     timeAxis);
  const ir::Shape &s = shapeOf(x);
  int64_t B = s[size_t(batchAxis)], T = s[size_t(timeAxis)];
  if (shapeOf(lens) != Ints{B})
    return ctx.error("input 1 ('sequence_lens') must have shape [{}], got {}", B,
                     lens->type().str());
  DType lt = dtypeOf(lens);
  // Time positions and lengths shaped to broadcast against each other.
  Ints tShape(size_t(r), 1), bShape(size_t(r), 1);
  tShape[size_t(timeAxis)] = T;
  bShape[size_t(batchAxis)] = B;
  Ints positions(static_cast<size_t>(T));
  std::iota(positions.begin(), positions.end(), int64_t{0});
  Expr t = ctx.constant(Tensor::fromInts(lt, tShape, positions));
  TS_ASSIGN_OR_RETURN(Expr len, reshapeTo(ctx, lens, bShape));
  TS_ASSIGN_OR_RETURN(Expr lastPos, ctx.call("subtract", {len, scalarInt(ctx, lt, 1)}));
  TS_ASSIGN_OR_RETURN(Expr reversed, ctx.call("subtract", {lastPos, t}));
  TS_ASSIGN_OR_RETURN(Expr inside, ctx.call("less", {t, len}));
  TS_ASSIGN_OR_RETURN(Expr idx, ctx.call("where", {inside, reversed, t}));
  if (shapeOf(idx) != s) {
    TS_ASSIGN_OR_RETURN(idx, ctx.call("expand", {idx}, {{"shape", Ints(s)}}));
  }
  TS_ASSIGN_OR_RETURN(Expr y, ctx.call("gather_elements", {x, idx}, {{"axis", timeAxis}}));
  return Outputs{y};
}

//===----------------------------------------------------------------------===//
// Ops with data-dependent output shapes: NonZero, Unique, NonMaxSuppression.
// Core ops whose result size is a run-time symbol (ir/ops/data_dependent.cpp);
// on constant inputs, constants computed here.
//===----------------------------------------------------------------------===//

/// NonZero (opsets 9-17): the i64 [rank, count] indices of its non-zero
/// elements in row-major order (a scalar counts as 1-D). On a constant, a
/// constant; else core nonzero, whose count is a run-time symbol bounded
/// by the input's elements.
Expected<Outputs> convertNonZero(NodeContext &ctx) {
  if (!ctx.input(0)->as<ir::ConstantNode>()) {
    TS_ASSIGN_OR_RETURN(int64_t count,
                        boundedCountSymbol(ctx, ctx.input(0)->type(), "its non-zero indices"));
    TS_ASSIGN_OR_RETURN(Expr t, ctx.call("nonzero", {ctx.input(0)}, {{"count", count}}));
    TS_ASSIGN_OR_RETURN(Expr indices, ir::makeTupleGetItem(t, 0, ctx.nodeName()));
    return Outputs{indices};
  }
  TS_ASSIGN_OR_RETURN(const Tensor *x, requireConstant(ctx, 0, "X"));
  ir::Shape shape = x->shape();
  if (shape.empty())
    shape = {1};
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < x->numel(); ++i)
    if (ir::isFloat(x->dtype()) ? x->getDouble(i) != 0 : x->getInt(i) != 0)
      hits.push_back(i);
  int64_t r = int64_t(shape.size()), n = int64_t(hits.size());
  Tensor out(DType::I64, {r, n});
  Ints idx(shape.size());
  for (int64_t k = 0; k < n; ++k) {
    int64_t flat = hits[size_t(k)];
    for (int64_t d = r - 1; d >= 0; --d) {
      idx[size_t(d)] = flat % shape[size_t(d)];
      flat /= shape[size_t(d)];
    }
    for (int64_t d = 0; d < r; ++d)
      out.data<int64_t>()[d * n + k] = idx[size_t(d)];
  }
  return Outputs{ctx.constant(std::move(out))};
}

/// Unique (opsets 11-17): the unique elements (or, with 'axis', the unique
/// slices along it), sorted ('sorted' = 1, slices lexicographically) or in
/// order of first occurrence; outputs Y, indices (first occurrences),
/// inverse_indices and counts (i64). Core unique gives the last three, its
/// count a run-time symbol bounded by the slices; Y gathers the first
/// occurrences. On a constant, constants (the same groups,
/// ir/ops/unique.h).
Expected<Outputs> convertUnique(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(int64_t sorted, ctx.attrInt("sorted", int64_t{1}));
  Expr x = ctx.input(0);
  if (!x->as<ir::ConstantNode>()) {
    int64_t axis = 0;
    if (ctx.hasAttr("axis")) {
      TS_ASSIGN_OR_RETURN(axis, axisOrFlatten(ctx, x));
    } else {
      TS_ASSIGN_OR_RETURN(x, ctx.call("reshape", {x}, {{"newshape", Ints{-1}}}));
    }
    const ir::Type slices = ir::Type::tensor(DType::F32, ir::Shape{shapeOf(x)[size_t(axis)]});
    TS_ASSIGN_OR_RETURN(int64_t count, boundedCountSymbol(ctx, slices, "its unique slices"));
    TS_ASSIGN_OR_RETURN(Expr t, ctx.call("unique", {x},
                                         {{"count", count}, {"axis", axis}, {"sorted", sorted != 0}}));
    Outputs out;
    for (int64_t k = 0; k < 3; ++k) {
      TS_ASSIGN_OR_RETURN(Expr e, ir::makeTupleGetItem(t, k, ctx.nodeName()));
      out.push_back(e);
    }
    TS_ASSIGN_OR_RETURN(Expr y, ctx.call("gather", {x, out[0]}, {{"axis", axis}}));
    out.insert(out.begin(), y);
    out.resize(std::min(out.size(), ctx.numOutputs())); // the optional ones the node names
    return out;
  }
  TS_ASSIGN_OR_RETURN(int64_t axis, axisOrFlatten(ctx, x));
  // The flattened (or given) constant: its groups.
  Tensor folded = ctx.input(0)->as<ir::ConstantNode>()->data();
  if (!ctx.hasAttr("axis"))
    folded = folded.reshaped(shapeOf(x));
  ir::ops::UniqueGroups g = ir::ops::uniqueGroups(folded, axis, sorted != 0);
  const auto u = int64_t(g.first.size()), n = int64_t(g.inverse.size());
  Tensor indices = Tensor::fromInts(DType::I64, {u}, g.first);
  Expr y;
  if (u == 0) {
    y = ctx.constant(Tensor(dtypeOf(x), shapeOf(x)));
  } else {
    TS_ASSIGN_OR_RETURN(y, ctx.call("gather", {x, ctx.constant(indices)}, {{"axis", axis}}));
  }
  Outputs out{y, ctx.constant(indices), ctx.constant(Tensor::fromInts(DType::I64, {n}, g.inverse)),
              ctx.constant(Tensor::fromInts(DType::I64, {u}, g.counts))};
  out.resize(std::min(out.size(), ctx.numOutputs())); // the optional ones the node names
  return out;
}

/// The selected boxes' buffer bound: batches * classes * N (each class keeps
/// at most N), or an error when a dim has no upper bound.
Expected<std::pair<int64_t, int64_t>> nmsBounds(NodeContext &ctx) {
  const ir::Type &bt = ctx.input(0)->type(), &st = ctx.input(1)->type();
  if (bt.rank() != 3 || st.rank() != 3)
    return ctx.error("boxes must be [B, N, 4] and scores [B, C, N], got {} and {}", bt.str(),
                     st.str());
  const std::optional<int64_t> boxBound = elementBound(ir::Type::tensor(DType::F32, {bt.shape()[1]}));
  const std::optional<int64_t> groups =
      elementBound(ir::Type::tensor(DType::F32, {st.shape()[0], st.shape()[1]}));
  if (!boxBound || !groups)
    return ctx.error("boxes {} and scores {} have dims without an upper bound, so the buffer of "
                     "the selected boxes cannot be planned: bound their symbols "
                     "(--input-shape x=1..64,...)",
                     bt.str(), st.str());
  return std::make_pair(*boxBound, *groups);
}

/// NonMaxSuppression whose max_output_boxes_per_class, iou_threshold or
/// score_threshold is known only at run time: the op takes all three as
/// arguments (i64, f32, f32; an absent one its default), its buffer planned
/// for N boxes per class.
Expected<Outputs> runtimeNMS(NodeContext &ctx, bool centerBox) {
  TS_ASSIGN_OR_RETURN(auto bounds, nmsBounds(ctx));
  std::vector<Expr> args{ctx.input(0), ctx.input(1)};
  const char *names[] = {"max_output_boxes_per_class", "iou_threshold", "score_threshold"};
  for (size_t i = 2; i < 5; ++i) {
    const DType want = i == 2 ? DType::I64 : DType::F32;
    if (!ctx.hasInput(i)) { // the defaults: no box, no overlap limit, no score limit
      args.push_back(ctx.constant(i == 2 ? ir::Tensor::fromInts(DType::I64, {}, Ints{0})
                                         : ir::Tensor(DType::F32, {})));
      continue;
    }
    Expr v = ctx.input(i);
    if (!v->type().isTensor() || !v->type().isStatic() || v->type().numElements() != 1)
      return ctx.error("input {} ('{}') must have one element, got {}", i, names[i - 2],
                       v->type().str());
    if (v->type().dtype() != want) {
      TS_ASSIGN_OR_RETURN(v, ctx.call("cast", {v}, {{"dtype", want}}));
    }
    args.push_back(v);
  }
  TS_ASSIGN_OR_RETURN(int64_t count, countSymbol(ctx, bounds.second * bounds.first));
  ir::Attrs attrs{{"max_output", bounds.first},
                  {"use_score_threshold", ctx.hasInput(4)},
                  {"center_point_box", centerBox},
                  {"count", count}};
  TS_ASSIGN_OR_RETURN(Expr t, ctx.call("non_max_suppression", std::move(args), std::move(attrs)));
  TS_ASSIGN_OR_RETURN(Expr selected, ir::makeTupleGetItem(t, 0, ctx.nodeName()));
  return Outputs{selected};
}

/// NonMaxSuppression (opsets 10-17): boxes [B, N, 4], scores [B, C, N];
/// max_output_boxes_per_class (default 0: none), iou_threshold (default 0),
/// score_threshold (default: none); center_point_box. Core
/// non_max_suppression (ir/ops/nms_select.h says what it selects), whose
/// count is a run-time symbol bounded by B * C * min(N, max_output); with
/// constant thresholds they are its attributes and, on constant boxes and
/// scores, its result is a constant; else runtimeNMS.
Expected<Outputs> convertNMS(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(int64_t centerBox, ctx.attrInt("center_point_box", int64_t{0}));
  if (centerBox != 0 && centerBox != 1)
    return ctx.error("attribute 'center_point_box' = {} must be 0 or 1", centerBox);
  // Thresholds known only at run time: arguments of the op, read when it runs.
  bool runtimeThresholds = false;
  for (size_t i = 2; i < 5; ++i)
    runtimeThresholds = runtimeThresholds || (ctx.hasInput(i) && !ctx.constantInput(i));
  if (runtimeThresholds)
    return runtimeNMS(ctx, centerBox == 1);
  auto optionalScalar = [&](size_t i, std::string_view name) -> Expected<std::optional<double>> {
    if (!ctx.hasInput(i))
      return std::optional<double>();
    TS_ASSIGN_OR_RETURN(const Tensor *t, requireConstant(ctx, i, name));
    if (t->numel() != 1)
      return ctx.error("input {} ('{}') must have one element, got {}", i, name, t->type().str());
    return std::optional<double>(ir::isFloat(t->dtype()) ? t->getDouble(0) : double(t->getInt(0)));
  };
  TS_ASSIGN_OR_RETURN(auto maxOut, optionalScalar(2, "max_output_boxes_per_class"));
  TS_ASSIGN_OR_RETURN(auto iou, optionalScalar(3, "iou_threshold"));
  TS_ASSIGN_OR_RETURN(auto scoreMin, optionalScalar(4, "score_threshold"));
  const ir::Type &bt = ctx.input(0)->type(), &st = ctx.input(1)->type();
  TS_ASSIGN_OR_RETURN(auto bounds, nmsBounds(ctx));
  const auto [boxBound, groups] = bounds;
  // At most N boxes per class can be selected anyway.
  const double wanted = maxOut && *maxOut > 0 ? *maxOut : 0; // NaN too gives 0
  const int64_t limit = int64_t(std::min(wanted, double(boxBound)));
  ir::Attrs attrs{{"max_output", limit},
                  {"iou_threshold", iou.value_or(0.0)},
                  {"use_score_threshold", scoreMin.has_value()},
                  {"score_threshold", scoreMin.value_or(0.0)},
                  {"center_point_box", centerBox == 1}};
  const auto *boxes = ctx.input(0)->as<ir::ConstantNode>();
  const auto *scores = ctx.input(1)->as<ir::ConstantNode>();
  if (boxes && scores) { // selected here: the op's kernel, its result a constant
    const ir::Op *op = ir::OpRegistry::global().find("non_max_suppression");
    attrs.set("count", int64_t(0));
    TS_ASSIGN_OR_RETURN(ir::Attrs normalized, op->normalizeAttrs(attrs));
    TS_ASSIGN_OR_RETURN(ir::Type type, op->inferType(std::vector<ir::Type>{bt, st}, normalized));
    std::vector<Tensor> in{boxes->data(), scores->data()};
    auto out = op->kernel(in, normalized, type);
    if (!out.ok())
      return ctx.error("{}", out.error().str());
    return Outputs{ctx.constant(std::move((*out)[0]))};
  }
  TS_ASSIGN_OR_RETURN(int64_t count, countSymbol(ctx, groups * limit));
  attrs.set("count", count);
  TS_ASSIGN_OR_RETURN(Expr t, ctx.call("non_max_suppression", {ctx.input(0), ctx.input(1)},
                                       std::move(attrs)));
  TS_ASSIGN_OR_RETURN(Expr selected, ir::makeTupleGetItem(t, 0, ctx.nodeName()));
  return Outputs{selected};
}

} // namespace index_detail

Status registerIndexConverters(ConverterRegistry &r) {
  using namespace index_detail;
  TS_RETURN_IF_ERROR(
      addConverter(r, "GatherND", 11, 17, convertGatherND, "core gather_nd; batch_dims"));
  TS_RETURN_IF_ERROR(addConverter(r, "ScatterND", 11, 17, convertScatterND,
                                  "core scatter_nd; reduction none/add/mul"));
  TS_RETURN_IF_ERROR(
      addConverter(r, "ScatterElements", 11, 17, convertScatterElements,
                   "core scatter_elements; axis, negative indices, reduction none/add/mul"));
  TS_RETURN_IF_ERROR(addConverter(r, "Scatter", 9, 10, convertScatterElements,
                                  "core scatter_elements (deprecated ONNX op); axis"));
  TS_RETURN_IF_ERROR(addConverter(
      r, "Compress", 9, 17, convertCompress,
      "axis or flattened; gather of the true slices (a condition known only at run time: "
      "core nonzero, its count a run-time symbol)"));
  TS_RETURN_IF_ERROR(addConverter(r, "ReverseSequence", 10, 17, convertReverseSequence,
                                  "batch_axis, time_axis; composed (gather_elements with computed "
                                  "indices)"));
  TS_RETURN_IF_ERROR(addConverter(
      r, "NonZero", 9, 17, convertNonZero,
      "a constant on a constant input; else core nonzero (its count a run-time symbol)"));
  TS_RETURN_IF_ERROR(
      addConverter(r, "Unique", 11, 17, convertUnique,
                   "sorted, axis; core unique (its count a run-time symbol) and gather; "
                   "constants on a constant input"));
  TS_RETURN_IF_ERROR(addConverter(
      r, "NonMaxSuppression", 10, 17, convertNMS,
      "core non_max_suppression (its count a run-time symbol): constant thresholds as attributes "
      "(a constant on constant boxes and scores), thresholds known only at run time as "
      "arguments read when it runs"));
  return okStatus();
}

} // namespace tessera::frontend::onnx
