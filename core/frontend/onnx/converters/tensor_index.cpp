//===- frontend/onnx/converters/tensor_index.cpp - ONNX indexing converters ---===//
//
// Gather, GatherElements, Trilu, OneHot, CumSum and TopK on the core ops;
// their shape-deciding inputs (OneHot's depth, TopK's K, ...) must be
// constants. registerTensorConverters() (tensor.cpp) registers them.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/converters/tensor_internal.h"

#include <numeric>

namespace tessera::frontend::onnx::tensor_detail {

//===----------------------------------------------------------------------===//
// Indexing.
//===----------------------------------------------------------------------===//

namespace {

/// A constant single-element input as int64 (any numeric dtype).
Expected<int64_t> constantScalarInt(NodeContext &ctx, size_t i, std::string_view name) {
  TS_ASSIGN_OR_RETURN(const ir::Tensor *t, requireConstant(ctx, i, name));
  if (t->numel() != 1)
    return ctx.error("input {} ('{}') must have one element, got {}", i, name, t->type().str());
  if (ir::isFloat(t->dtype()))
    return int64_t(t->getDouble(0));
  return t->getInt(0);
}

} // namespace

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
  TS_ASSIGN_OR_RETURN(int64_t axis, ctx.attrInt("axis", int64_t{-1}));
  TS_ASSIGN_OR_RETURN(int64_t largest, ctx.attrInt("largest", int64_t{1}));
  TS_ASSIGN_OR_RETURN(int64_t sorted, ctx.attrInt("sorted", int64_t{1}));
  int64_t k;
  if (ctx.opset() < 10) {
    TS_ASSIGN_OR_RETURN(k, ctx.attrInt("k"));
  } else if (ctx.hasInput(1) && !ctx.constantInput(1)) {
    return topkOfData(ctx, axis, largest != 0); // K known only at run time
  } else {
    TS_ASSIGN_OR_RETURN(k, constantScalarInt(ctx, 1, "K"));
  }
  TS_ASSIGN_OR_RETURN(
      Expr t,
      ctx.call("topk", {ctx.input(0)},
               {{"k", k}, {"axis", axis}, {"largest", largest != 0}, {"sorted", sorted != 0}}));
  return unpackTuple(ctx, t);
}

} // namespace tessera::frontend::onnx::tensor_detail
