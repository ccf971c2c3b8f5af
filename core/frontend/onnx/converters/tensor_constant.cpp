//===- frontend/onnx/converters/tensor_constant.cpp - ONNX constant and shape converters ---===//
//
// Constant, Shape, Size, ConstantOfShape, Range and EyeLike: each gives a
// constant, computed here from attributes, constant inputs or the input's
// static shape. registerTensorConverters() (tensor.cpp) registers them.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/converters/tensor_internal.h"
#include "ir/symbol.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace tessera::frontend::onnx::tensor_detail {

//===----------------------------------------------------------------------===//
// Constants and shape queries.
//===----------------------------------------------------------------------===//

namespace {

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

} // namespace

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
  // The dims of an element taken out of a sequence are set when it is
  // taken: the values read them after that call (which nothing else may use).
  if (const auto *c = ctx.input(0)->as<ir::CallNode>();
      c && c->op() && c->op()->sequence && !ir::isStatic(dims)) {
    TS_ASSIGN_OR_RETURN(Expr v, ctx.call("symbol_values", {ctx.input(0)},
                                         {{"values", dims}, {"shape", Ints{int64_t(dims.size())}}}));
    return Outputs{v};
  }
  return Outputs{ctx.constant(ir::Tensor::fromInts(DType::I64, {int64_t(dims.size())}, dims))};
}

/// Size (opsets 1-17): a constant i64 scalar.
Expected<Outputs> convertSize(NodeContext &ctx) {
  if (!ctx.input(0)->type().isStatic())
    return ctx.error("the size of {} is known only at run time (symbolic dims are not "
                     "supported here yet)",
                     ctx.input(0)->type().str());
  int64_t n = ctx.input(0)->type().numElements();
  return Outputs{ctx.constant(ir::Tensor::fromInts(DType::I64, {}, Ints{n}))};
}

/// 0, 1, ..., N - 1 as i64 [N] for N = range_count(start, limit, delta): a
/// run-time symbol without an upper bound, <node>_<what>, set before
/// anything it sizes is written (iota takes the count, so it runs after).
Expected<Expr> runtimeIota(NodeContext &ctx, const Expr &start, const Expr &limit,
                           const Expr &delta, std::string_view what, int64_t &n) {
  TS_ASSIGN_OR_RETURN(n, countSymbol(ctx, ir::kUnbounded, what));
  TS_ASSIGN_OR_RETURN(Expr counted, ctx.call("range_count", {start, limit, delta},
                                             {{"count", n}}));
  TS_ASSIGN_OR_RETURN(Outputs count, unpackTuple(ctx, counted));
  return ctx.call("iota", {count[0]}, {{"count", n}});
}

/// ConstantOfShape over a shape known only at run time (an i64 vector of
/// data, not of shape values): dim k is range_count(0, shape[k], 1), an
/// unbounded run-time symbol <node>_dim<k>; the value is broadcast over the
/// sum of 0 * iota(dim k) along axis k, which orders the fill after the
/// counts (and grows memory to them).
Expected<Outputs> runtimeConstantOfShape(NodeContext &ctx, const ir::Tensor &value) {
  const ir::Type &st = ctx.input(0)->type();
  if (!st.isTensor() || st.rank() != 1 || !st.isStatic() || st.dtype() != DType::I64)
    return ctx.error("input 0 ('input') must be an i64 vector of static length, got {}",
                     st.str());
  const DType dt = value.dtype();
  if (!ir::isFloat(dt) && !ir::isInteger(dt))
    return ctx.error("a {} value over a shape known only at run time is not supported",
                     ir::dtypeName(dt));
  const int64_t r = st.shape()[0];
  const Expr fill = ctx.constant(value.reshaped({}));
  if (r == 0)
    return Outputs{fill};
  const Expr zero = ctx.constant(ir::Tensor::fromDoubles(dt, {}, std::vector<double>{0.0}));
  Expr zeros;
  // Negative dims stop the run (range_count would count them as 0).
  const Expr shape = ctx.input(0);
  TS_ASSIGN_OR_RETURN(Expr sizes, ctx.call("greater_equal", {shape, scalar(ctx, DType::I64, 0)}));
  TS_ASSIGN_OR_RETURN(
      Expr checked,
      ctx.call("check", {shape, sizes},
               {{"message", fmt::format("node '{}' (ConstantOfShape): the shape must not hold a "
                                        "negative dim",
                                        ctx.nodeName())}}));
  for (int64_t k = 0; k < r; ++k) {
    TS_ASSIGN_OR_RETURN(Expr d, ctx.call("slice", {checked},
                                         {{"starts", Ints{k}}, {"ends", Ints{k + 1}}}));
    TS_ASSIGN_OR_RETURN(d, reshapeTo(ctx, d, {}));
    int64_t n = 0;
    TS_ASSIGN_OR_RETURN(Expr index,
                        runtimeIota(ctx, scalar(ctx, DType::I64, 0), d, scalar(ctx, DType::I64, 1), fmt::format("dim{}", k), n));
    Ints at(size_t(r), 1);
    at[size_t(k)] = n;
    TS_ASSIGN_OR_RETURN(index, reshapeTo(ctx, index, at));
    if (dt != DType::I64) {
      TS_ASSIGN_OR_RETURN(index, castTo(ctx, index, dt));
    }
    TS_ASSIGN_OR_RETURN(Expr term, ctx.call("multiply", {index, zero}));
    if (zeros) {
      TS_ASSIGN_OR_RETURN(zeros, ctx.call("add", {zeros, term}));
    } else {
      zeros = term;
    }
  }
  TS_ASSIGN_OR_RETURN(Expr y, ctx.call("add", {zeros, fill}));
  return Outputs{y};
}

/// ConstantOfShape (opsets 9-17): shape input; value (one-element tensor,
/// default f32 0).
Expected<Outputs> convertConstantOfShape(NodeContext &ctx) {
  ir::Tensor value = ir::Tensor::fromDoubles(DType::F32, {1}, std::vector<double>{0.0});
  if (ctx.hasAttr("value")) {
    TS_ASSIGN_OR_RETURN(value, ctx.attrTensor("value"));
    if (value.numel() != 1)
      return ctx.error("attribute 'value' must have one element, got {}", value.type().str());
  }
  if (ctx.hasInput(0) && !ctx.constantInput(0))
    return runtimeConstantOfShape(ctx, value);
  TS_ASSIGN_OR_RETURN(Ints shape, constantInts(ctx, 0, "input"));
  // A shape holding symbols (Shape of a tensor of run-time size): the
  // value broadcast to it, sized when the model runs.
  if (std::any_of(shape.begin(), shape.end(), [](int64_t d) { return ir::isKnownSymbol(d); })) {
    TS_ASSIGN_OR_RETURN(Expr y, ctx.call("expand", {ctx.constant(value.reshaped({}))},
                                         {{"shape", shape}}));
    return Outputs{y};
  }
  TS_RETURN_IF_ERROR(checkedElements(ctx, shape));
  ir::Tensor out(value.dtype(), shape);
  size_t esize = ir::dtypeSize(value.dtype());
  for (int64_t i = 0; i < out.numel(); ++i)
    std::memcpy(out.bytes() + size_t(i) * esize, value.bytes(), esize);
  return Outputs{ctx.constant(std::move(out))};
}

/// Range over scalars known only at run time: range_count gives the count
/// N (an unbounded run-time symbol, set before the elements are written),
/// then start + iota(N) * delta in the inputs' dtype.
Expected<Outputs> runtimeRange(NodeContext &ctx) {
  const Expr start = ctx.input(0), limit = ctx.input(1), delta = ctx.input(2);
  for (size_t i = 0; i < 3; ++i)
    if (const ir::Type &t = ctx.input(i)->type();
        !t.isTensor() || !t.isStatic() || t.numElements() != 1)
      return ctx.error("input {} must be a scalar, got {}", i, ctx.input(i)->type().str());
  const DType dt = dtypeOf(start);
  int64_t n = 0;
  TS_ASSIGN_OR_RETURN(Expr index, runtimeIota(ctx, start, limit, delta, "count", n));
  Expr steps = index;
  if (dt != DType::I64) {
    TS_ASSIGN_OR_RETURN(steps, castTo(ctx, index, dt));
  }
  auto scalarOf = [&](const Expr &e) { return reshapeTo(ctx, e, {}); };
  TS_ASSIGN_OR_RETURN(Expr d, scalarOf(delta));
  TS_ASSIGN_OR_RETURN(Expr s, scalarOf(start));
  TS_ASSIGN_OR_RETURN(Expr scaled, ctx.call("multiply", {steps, d}));
  TS_ASSIGN_OR_RETURN(Expr y, ctx.call("add", {scaled, s}));
  return Outputs{y};
}

/// Range (opsets 11-17): constant start, limit, delta -> a constant; over
/// shape values holding symbols, core range; otherwise runtimeRange.
Expected<Outputs> convertRange(NodeContext &ctx) {
  const ir::Tensor *in[3];
  const char *names[3] = {"start", "limit", "delta"};
  if (!ctx.constantInput(0) || !ctx.constantInput(1) || !ctx.constantInput(2))
    return runtimeRange(ctx);
  wishConstants(ctx, {0, 1, 2});
  bool symbolic = false;
  for (size_t i = 0; i < 3; ++i) {
    TS_ASSIGN_OR_RETURN(in[i], requireConstant(ctx, i, names[i]));
    if (in[i]->numel() != 1)
      return ctx.error("input {} ('{}') must be a scalar, got {}", i, names[i],
                       in[i]->type().str());
    symbolic = symbolic || (in[i]->dtype() == DType::I64 && ir::isKnownSymbol(in[i]->getInt(0)));
  }
  DType dt = in[0]->dtype();
  if (symbolic) { // over a shape value (torch.arange(x.size(1))): core range
    if (ir::isKnownSymbol(in[2]->getInt(0)))
      return ctx.error("input 2 ('delta') is the symbolic dim {}: a step known only at run "
                       "time is not supported",
                       ir::dimStr(in[2]->getInt(0)));
    TS_ASSIGN_OR_RETURN(Expr y, ctx.call("range", {},
                                         {{"start", in[0]->getInt(0)},
                                          {"limit", in[1]->getInt(0)},
                                          {"delta", in[2]->getInt(0)},
                                          {"dtype", dt}}));
    return Outputs{y};
  }
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

} // namespace tessera::frontend::onnx::tensor_detail
