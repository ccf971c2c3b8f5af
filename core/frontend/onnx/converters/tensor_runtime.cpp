//===- frontend/onnx/converters/tensor_runtime.cpp - Shape arguments of data ---===//
//
// Reshape, Expand, Tile, Slice and TopK whose shape, repeats, starts, ends
// or K are data values known only when the model runs (not constants, not shape
// values holding symbols: those take the ordinary ops). Every output dim
// that the data decides is an unbounded run-time symbol counted by
// range_count, and the result is gathered along each such axis with an
// index built from iota(count), so that it is written after the counts are
// set (docs/design/0013-dynamic-shapes.md, section 7). A rule that ONNX
// states on the values (a Reshape keeps the element count, Expand
// broadcasts) is checked when the model runs, by `check`.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/converters/tensor_internal.h"

#include "ir/symbol.h"

#include <fmt/format.h>

namespace tessera::frontend::onnx::tensor_detail {

namespace {

Expr i64Vector(NodeContext &ctx, const Ints &v) {
  return ctx.constant(ir::Tensor::fromInts(DType::I64, {int64_t(v.size())}, v));
}

/// The value of dim `d` as an i64 scalar: a constant, or computed when the
/// model runs from the symbol's value.
Expected<Expr> dimValue(NodeContext &ctx, int64_t d) {
  if (!ir::isSymbol(d))
    return scalar(ctx, DType::I64, double(d));
  return ctx.call("symbol_values", {}, {{"values", Ints{d}}, {"shape", ir::Shape{}}});
}

/// Dims as an i64 vector (symbols read when the model runs).
Expected<Expr> dimsValue(NodeContext &ctx, const Ints &dims) {
  if (ir::isStatic(dims))
    return i64Vector(ctx, dims);
  return ctx.call("symbol_values", {},
                  {{"values", dims}, {"shape", ir::Shape{int64_t(dims.size())}}});
}

/// Element k of vector v, as a scalar.
Expected<Expr> element(NodeContext &ctx, const Expr &v, int64_t k) {
  TS_ASSIGN_OR_RETURN(Expr e, ctx.call("slice", {v}, {{"starts", Ints{k}}, {"ends", Ints{k + 1}}}));
  return reshapeTo(ctx, e, {});
}

/// Input i as an i64 vector of static length (i32 is widened).
Expected<Expr> indexVector(NodeContext &ctx, size_t i, std::string_view name) {
  TS_ASSIGN_OR_RETURN(Expr v, tensorInput(ctx, i, name));
  const ir::Type &t = v->type();
  if (t.rank() != 1 || !t.isStatic() || (t.dtype() != DType::I64 && t.dtype() != DType::I32))
    return ctx.error("input {} ('{}') must be an i64 or i32 vector of static length, got {}", i,
                     name, t.str());
  return castTo(ctx, v, DType::I64);
}

/// x gathered along `axis` at `index` (an i64 vector whose length is a
/// run-time symbol): the axis takes that length.
Expected<Expr> gatherAxis(NodeContext &ctx, const Expr &x, const Expr &index, int64_t axis) {
  return ctx.call("gather", {x, index}, {{"axis", axis}});
}

} // namespace

/// Reshape (opset 5+) to a shape of data values: ONNX's rules (a 0 copies
/// the input's dim unless allowzero, one -1 is inferred) computed on the
/// values, the element count checked; then the input, flattened, gathered
/// at the row-major offsets of the new shape's indices.
Expected<Outputs> reshapeOfData(NodeContext &ctx, int64_t allowZero) {
  const Expr x = ctx.input(0);
  TS_ASSIGN_OR_RETURN(Expr s, indexVector(ctx, 1, "shape"));
  const ir::Shape &in = shapeOf(x);
  const int64_t r = shapeOf(s)[0];
  // The input's dims per position of the shape (-2: none, so a 0 there is
  // invalid), and its element count.
  Ints dims(size_t(r), -2);
  for (int64_t k = 0; k < r && k < int64_t(in.size()); ++k)
    dims[size_t(k)] = in[size_t(k)];
  TS_ASSIGN_OR_RETURN(Expr inDims, dimsValue(ctx, dims));
  TS_ASSIGN_OR_RETURN(Expr all, dimsValue(ctx, in));
  TS_ASSIGN_OR_RETURN(Expr total, ctx.call("reduce_prod", {all}, {{"axes", Ints{}}}));
  const Expr zero = scalar(ctx, DType::I64, 0), one = scalar(ctx, DType::I64, 1);
  Expr d = s;
  if (!allowZero) {
    TS_ASSIGN_OR_RETURN(Expr isZero, binary(ctx, "equal", s, zero));
    TS_ASSIGN_OR_RETURN(d, ctx.call("where", {isZero, inDims, s}));
  }
  TS_ASSIGN_OR_RETURN(Expr inferred, binary(ctx, "equal", d, scalar(ctx, DType::I64, -1)));
  TS_ASSIGN_OR_RETURN(Expr knownDims, ctx.call("where", {inferred, one, d}));
  TS_ASSIGN_OR_RETURN(Expr known, ctx.call("reduce_prod", {knownDims}, {{"axes", Ints{}}}));
  TS_ASSIGN_OR_RETURN(Expr divisor, binary(ctx, "maximum", known, one));
  TS_ASSIGN_OR_RETURN(Expr rest, binary(ctx, "divide", total, divisor));
  TS_ASSIGN_OR_RETURN(d, ctx.call("where", {inferred, rest, d}));
  // Valid: no negative dim left (a second -1 is one), and the counts agree.
  TS_ASSIGN_OR_RETURN(Expr sizes, binary(ctx, "greater_equal", d, zero));
  TS_ASSIGN_OR_RETURN(Expr count, ctx.call("reduce_prod", {d}, {{"axes", Ints{}}}));
  TS_ASSIGN_OR_RETURN(Expr same, binary(ctx, "equal", count, total));
  TS_ASSIGN_OR_RETURN(Expr ok, binary(ctx, "logical_and", sizes, same));
  TS_ASSIGN_OR_RETURN(
      d, ctx.call("check", {d, ok},
                  {{"message", fmt::format("node '{}' (Reshape): the shape must keep the "
                                           "input's {} elements ({}: 0 copies an input dim{}, "
                                           "one -1 is inferred, no other negative)",
                                           ctx.nodeName(), x->type().str(),
                                           allowZero ? "allowzero" : "no allowzero",
                                           allowZero ? " only without allowzero" : "")}}));
  if (r == 0)
    return Outputs{*reshapeTo(ctx, x, {})}; // [] holds one element; checked above
  TS_ASSIGN_OR_RETURN(Expr flat, ctx.call("reshape", {x}, {{"newshape", Ints{-1}}}));
  // offset = sum over k of iota(d_k) * stride_k, each along its own axis.
  Expr offset, stride = one;
  for (int64_t k = r - 1; k >= 0; --k) {
    TS_ASSIGN_OR_RETURN(Expr dk, element(ctx, d, k));
    int64_t n = 0;
    TS_ASSIGN_OR_RETURN(Expr index,
                        runtimeIota(ctx, zero, dk, one, fmt::format("dim{}", k), n));
    TS_ASSIGN_OR_RETURN(Expr scaled, binary(ctx, "multiply", index, stride));
    Ints at(size_t(r), 1);
    at[size_t(k)] = n;
    TS_ASSIGN_OR_RETURN(scaled, reshapeTo(ctx, scaled, at));
    if (offset) {
      TS_ASSIGN_OR_RETURN(offset, binary(ctx, "add", offset, scaled));
    } else {
      offset = scaled;
    }
    TS_ASSIGN_OR_RETURN(stride, binary(ctx, "multiply", stride, dk));
  }
  TS_ASSIGN_OR_RETURN(Expr y, gatherAxis(ctx, flat, offset, 0));
  return Outputs{y};
}

/// Expand to a shape of data values: each dim of the input that is 1 takes
/// the value's length (gathered at index 0 that many times); every other
/// dim stays, the value there checked to be 1 or that dim (a symbolic dim
/// of the input is kept, so one that is 1 when the model runs cannot grow:
/// the check stops the run).
Expected<Outputs> expandOfData(NodeContext &ctx) {
  const Expr x = ctx.input(0);
  TS_ASSIGN_OR_RETURN(Expr s, indexVector(ctx, 1, "shape"));
  const int64_t r = shapeOf(s)[0], rankIn = int64_t(shapeOf(x).size());
  const int64_t rank = std::max(r, rankIn);
  Ints dims(size_t(rank - rankIn), 1);
  dims.insert(dims.end(), shapeOf(x).begin(), shapeOf(x).end());
  TS_ASSIGN_OR_RETURN(Expr xs, reshapeTo(ctx, x, dims));
  if (r < rank) {
    TS_ASSIGN_OR_RETURN(s, ctx.call("concat", {i64Vector(ctx, Ints(size_t(rank - r), 1)), s},
                                    {{"axis", int64_t(0)}}));
  }
  std::vector<uint8_t> unit(static_cast<size_t>(rank));
  for (int64_t k = 0; k < rank; ++k)
    unit[size_t(k)] = dims[size_t(k)] == 1;
  TS_ASSIGN_OR_RETURN(Expr inDims, dimsValue(ctx, dims));
  const Expr zero = scalar(ctx, DType::I64, 0), one = scalar(ctx, DType::I64, 1);
  TS_ASSIGN_OR_RETURN(Expr isOne, binary(ctx, "equal", s, one));
  TS_ASSIGN_OR_RETURN(Expr isDim, binary(ctx, "equal", s, inDims));
  TS_ASSIGN_OR_RETURN(Expr kept, binary(ctx, "logical_or", isOne, isDim));
  TS_ASSIGN_OR_RETURN(Expr size, binary(ctx, "greater_equal", s, zero));
  ir::Tensor unitMask(DType::Bool, {rank});
  for (int64_t k = 0; k < rank; ++k)
    unitMask.setInt(k, unit[size_t(k)]);
  TS_ASSIGN_OR_RETURN(Expr ok, ctx.call("where", {ctx.constant(unitMask), size, kept}));
  const std::string message = fmt::format(
      "node '{}' (Expand): the shape must broadcast with the input's {} (each value 1 or the "
      "input's dim, any size where the input's dim is 1)",
      ctx.nodeName(), x->type().str());
  if (std::none_of(unit.begin(), unit.end(), [](uint8_t u) { return u; })) {
    TS_ASSIGN_OR_RETURN(Expr y, ctx.call("check", {xs, ok}, {{"message", message}}));
    return Outputs{y};
  }
  TS_ASSIGN_OR_RETURN(s, ctx.call("check", {s, ok}, {{"message", message}}));
  Expr y = xs;
  for (int64_t k = 0; k < rank; ++k) {
    if (!unit[size_t(k)])
      continue;
    TS_ASSIGN_OR_RETURN(Expr sk, element(ctx, s, k));
    int64_t n = 0;
    TS_ASSIGN_OR_RETURN(Expr index, runtimeIota(ctx, zero, sk, one, fmt::format("dim{}", k), n));
    TS_ASSIGN_OR_RETURN(Expr zeros, binary(ctx, "multiply", index, zero));
    TS_ASSIGN_OR_RETURN(y, gatherAxis(ctx, y, zeros, k));
  }
  return Outputs{y};
}

/// Tile by repeats of data values: along each axis of dim D, the input
/// gathered at iota(D * repeats) mod D.
Expected<Outputs> tileOfData(NodeContext &ctx) {
  const Expr x = ctx.input(0);
  TS_ASSIGN_OR_RETURN(Expr reps, indexVector(ctx, 1, "repeats"));
  const ir::Shape &in = shapeOf(x);
  if (shapeOf(reps)[0] != int64_t(in.size()))
    return ctx.error("'repeats' has {} values for rank {}", shapeOf(reps)[0], in.size());
  if (in.empty())
    return Outputs{x};
  const Expr zero = scalar(ctx, DType::I64, 0), one = scalar(ctx, DType::I64, 1);
  TS_ASSIGN_OR_RETURN(Expr ok, binary(ctx, "greater_equal", reps, zero));
  TS_ASSIGN_OR_RETURN(
      reps, ctx.call("check", {reps, ok},
                     {{"message", fmt::format("node '{}' (Tile): 'repeats' must not be negative",
                                              ctx.nodeName())}}));
  Expr y = x;
  for (int64_t k = 0; k < int64_t(in.size()); ++k) {
    TS_ASSIGN_OR_RETURN(Expr rk, element(ctx, reps, k));
    TS_ASSIGN_OR_RETURN(Expr dk, dimValue(ctx, in[size_t(k)]));
    TS_ASSIGN_OR_RETURN(Expr total, binary(ctx, "multiply", rk, dk));
    int64_t n = 0;
    TS_ASSIGN_OR_RETURN(Expr index, runtimeIota(ctx, zero, total, one, fmt::format("dim{}", k), n));
    // D = 0 leaves nothing to index: mod by 1 keeps the (empty) index valid.
    TS_ASSIGN_OR_RETURN(Expr period, binary(ctx, "maximum", dk, one));
    TS_ASSIGN_OR_RETURN(index, binary(ctx, "mod", index, period));
    TS_ASSIGN_OR_RETURN(y, gatherAxis(ctx, y, index, k));
  }
  return Outputs{y};
}

namespace {

/// ONNX Slice's clamping of a start or end `v` on an axis of dim D (data
/// scalars): negative counts from the end, then into [0, D] for a positive
/// step; into [0, D - 1] (a start) or [-1, D - 1] (an end) for a negative one.
Expected<Expr> clampIndex(NodeContext &ctx, const Expr &v, const Expr &dim, bool forward,
                          bool isEnd) {
  TS_ASSIGN_OR_RETURN(Expr lo, ctx.call("neg", {dim}));
  if (!forward && isEnd) {
    TS_ASSIGN_OR_RETURN(lo, binary(ctx, "subtract", lo, scalar(ctx, DType::I64, 1)));
  }
  TS_ASSIGN_OR_RETURN(Expr c, binary(ctx, "maximum", v, lo));
  TS_ASSIGN_OR_RETURN(c, binary(ctx, "minimum", c, dim));
  TS_ASSIGN_OR_RETURN(Expr negative, binary(ctx, "less", c, scalar(ctx, DType::I64, 0)));
  TS_ASSIGN_OR_RETURN(Expr wrapped, binary(ctx, "add", c, dim));
  TS_ASSIGN_OR_RETURN(c, ctx.call("where", {negative, wrapped, c}));
  if (forward)
    return c;
  TS_ASSIGN_OR_RETURN(Expr last, binary(ctx, "subtract", dim, scalar(ctx, DType::I64, 1)));
  return binary(ctx, "minimum", c, last);
}

} // namespace

/// Slice (opset 10+) whose starts or ends are data values (axes and steps
/// constant): per sliced axis, the clamped start and end, the count
/// range_count(start, end, step), and a gather at start + iota(count) * step.
Expected<Outputs> sliceOfData(NodeContext &ctx) {
  const Expr x = ctx.input(0);
  const ir::Shape &in = shapeOf(x);
  TS_ASSIGN_OR_RETURN(Expr starts, indexVector(ctx, 1, "starts"));
  TS_ASSIGN_OR_RETURN(Expr ends, indexVector(ctx, 2, "ends"));
  const int64_t m = shapeOf(starts)[0];
  if (shapeOf(ends)[0] != m)
    return ctx.error("'starts' has {} values and 'ends' {}", m, shapeOf(ends)[0]);
  Ints axes, steps(size_t(m), 1);
  for (int64_t j = 0; j < m; ++j)
    axes.push_back(j);
  if (ctx.hasInput(3)) {
    TS_ASSIGN_OR_RETURN(axes, constantInts(ctx, 3, "axes"));
  }
  if (ctx.hasInput(4)) {
    TS_ASSIGN_OR_RETURN(steps, constantInts(ctx, 4, "steps"));
  }
  if (int64_t(axes.size()) != m || int64_t(steps.size()) != m)
    return ctx.error("'axes' and 'steps' must have one value per start ({}), got {} and {}", m,
                     axes.size(), steps.size());
  Expr y = x;
  for (int64_t j = 0; j < m; ++j) {
    TS_ASSIGN_OR_RETURN(int64_t axis, normAxis(ctx, axes[size_t(j)], int64_t(in.size()), "axis"));
    const int64_t step = steps[size_t(j)];
    if (step == 0)
      return ctx.error("'steps' {} holds a 0", ir::shapeStr(steps));
    TS_ASSIGN_OR_RETURN(Expr dim, dimValue(ctx, in[size_t(axis)]));
    TS_ASSIGN_OR_RETURN(Expr sj, element(ctx, starts, j));
    TS_ASSIGN_OR_RETURN(Expr ej, element(ctx, ends, j));
    TS_ASSIGN_OR_RETURN(Expr first, clampIndex(ctx, sj, dim, step > 0, false));
    TS_ASSIGN_OR_RETURN(Expr end, clampIndex(ctx, ej, dim, step > 0, true));
    const Expr delta = scalar(ctx, DType::I64, double(step));
    int64_t n = 0;
    TS_ASSIGN_OR_RETURN(Expr index,
                        runtimeIota(ctx, first, end, delta, fmt::format("axis{}", axis), n));
    if (step != 1) {
      TS_ASSIGN_OR_RETURN(index, binary(ctx, "multiply", index, delta));
    }
    TS_ASSIGN_OR_RETURN(index, binary(ctx, "add", index, first));
    TS_ASSIGN_OR_RETURN(y, gatherAxis(ctx, y, index, axis));
  }
  return Outputs{y};
}

/// TopK (opset 10+) whose K is a data value: every element along the axis
/// sorted (topk with k the axis' dim), then the first K gathered; K is
/// checked to lie in 0..dim.
Expected<Outputs> topkOfData(NodeContext &ctx, int64_t axis, bool largest) {
  const Expr x = ctx.input(0);
  const ir::Shape &in = shapeOf(x);
  TS_ASSIGN_OR_RETURN(Expr k, indexVector(ctx, 1, "K"));
  if (shapeOf(k)[0] != 1)
    return ctx.error("input 1 ('K') must have one element, got {}", ctx.input(1)->type().str());
  TS_ASSIGN_OR_RETURN(axis, normAxis(ctx, axis, int64_t(in.size()), "axis"));
  const int64_t n = in[size_t(axis)];
  TS_ASSIGN_OR_RETURN(Expr dim, dimValue(ctx, n));
  TS_ASSIGN_OR_RETURN(k, reshapeTo(ctx, k, {}));
  const Expr zero = scalar(ctx, DType::I64, 0), one = scalar(ctx, DType::I64, 1);
  TS_ASSIGN_OR_RETURN(Expr above, binary(ctx, "greater_equal", k, zero));
  TS_ASSIGN_OR_RETURN(Expr within, binary(ctx, "less_equal", k, dim));
  TS_ASSIGN_OR_RETURN(Expr ok, binary(ctx, "logical_and", above, within));
  TS_ASSIGN_OR_RETURN(
      k, ctx.call("check", {k, ok},
                  {{"message", fmt::format("node '{}' (TopK): K must be within 0..{}, the size of "
                                           "axis {} of {}",
                                           ctx.nodeName(), ir::dimStr(n), axis,
                                           x->type().str())}}));
  TS_ASSIGN_OR_RETURN(Expr sorted, ctx.call("topk", {x}, {{"k", n}, {"axis", axis},
                                                          {"largest", largest},
                                                          {"sorted", true}}));
  TS_ASSIGN_OR_RETURN(Outputs all, unpackTuple(ctx, sorted));
  int64_t count = 0;
  TS_ASSIGN_OR_RETURN(Expr first, runtimeIota(ctx, zero, k, one, "k", count));
  Outputs out;
  for (const Expr &e : all) {
    TS_ASSIGN_OR_RETURN(Expr taken, gatherAxis(ctx, e, first, axis));
    out.push_back(taken);
  }
  return out;
}

} // namespace tessera::frontend::onnx::tensor_detail
