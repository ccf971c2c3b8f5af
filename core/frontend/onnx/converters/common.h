//===- frontend/onnx/converters/common.h - Helpers shared by converters -*- C++ -*-===//
//
// Small helpers every converter family uses: shape queries, scalars, the
// common reshapes and casts, and access to inputs that must be constants.
// Private to converters/ (not installed, not used elsewhere).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/onnx/converter.h"
#include "frontend/onnx/tensor_proto.h"
#include "ir/symbol.h"

#include <cctype>
#include <optional>

#include <functional>
#include <numeric>
#include <span>
#include <string_view>
#include <vector>

namespace tessera::frontend::onnx {

using Ints = std::vector<int64_t>;
using Outputs = std::vector<ir::Expr>;

inline const ir::Shape &shapeOf(const ir::Expr &e) { return e->type().shape(); }
inline ir::DType dtypeOf(const ir::Expr &e) { return e->type().dtype(); }
inline int64_t rankOf(const ir::Expr &e) { return int64_t(e->type().rank()); }

/// The core dtype of an ONNX TensorProto.DataType attribute value ('to',
/// 'dtype', ...); the error names the ONNX type.
inline Expected<ir::DType> dtypeFromOnnx(const NodeContext &ctx, int64_t code) {
  const bool inRange = code >= INT32_MIN && code <= INT32_MAX;
  if (inRange)
    if (std::optional<ir::DType> t = dtypeFromOnnx(int32_t(code)))
      return *t;
  return ctx.error("ONNX element type {} has no Tessera dtype",
                   inRange ? onnxDTypeName(int32_t(code)) : std::to_string(code));
}

inline int64_t product(std::span<const int64_t> dims) {
  return std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<>());
}

/// op(a, b).
inline Expected<ir::Expr> binary(NodeContext &ctx, std::string_view op, const ir::Expr &a,
                                 const ir::Expr &b) {
  return ctx.call(op, {a, b});
}

/// A scalar constant of dtype `dt`.
inline ir::Expr scalar(const NodeContext &ctx, ir::DType dt, double v) {
  double values[] = {v};
  return ctx.constant(ir::Tensor::fromDoubles(dt, {}, values));
}

/// x with a new shape (same element count). An empty result is a constant:
/// it has no data, and reshape's 0 would mean "copy the input dim".
inline Expected<ir::Expr> reshapeTo(NodeContext &ctx, const ir::Expr &x, const Ints &shape) {
  if (shapeOf(x) == shape)
    return x;
  if (product(shape) == 0)
    return ctx.constant(ir::Tensor(dtypeOf(x), shape));
  return ctx.call("reshape", {x}, {{"newshape", shape}});
}

inline Expected<ir::Expr> transpose(NodeContext &ctx, const ir::Expr &x, const Ints &perm) {
  return ctx.call("transpose", {x}, {{"perm", perm}});
}

/// The fields of a tuple-valued expression (a folded call gives a Tuple).
inline Expected<Outputs> unpackTuple(NodeContext &ctx, const ir::Expr &t) {
  Outputs out;
  if (const auto *tuple = t->as<ir::TupleNode>()) {
    out.assign(tuple->fields().begin(), tuple->fields().end());
    return out;
  }
  for (size_t i = 0; i < t->type().fields().size(); ++i) {
    TS_ASSIGN_OR_RETURN(ir::Expr item, ir::makeTupleGetItem(t, int(i), ctx.nodeName()));
    out.push_back(item);
  }
  return out;
}

inline Expected<ir::Expr> castTo(NodeContext &ctx, const ir::Expr &x, ir::DType dt) {
  if (dtypeOf(x) == dt)
    return x;
  return ctx.call("cast", {x}, {{"dtype", dt}});
}

/// Input i, which must be given and be a tensor.
inline Expected<ir::Expr> tensorInput(const NodeContext &ctx, size_t i) {
  if (!ctx.hasInput(i))
    return ctx.error("missing required input {}", i);
  const ir::Expr &e = ctx.input(i);
  if (!e->type().isTensor())
    return ctx.error("input {} must be a tensor, got {}", i, e->type().str());
  return e;
}

/// The same, naming the input in errors.
inline Expected<ir::Expr> tensorInput(const NodeContext &ctx, size_t i, std::string_view name) {
  if (!ctx.hasInput(i))
    return ctx.error("input {} ('{}') is missing", i, name);
  const ir::Expr &e = ctx.input(i);
  if (!e->type().isTensor())
    return ctx.error("input {} ('{}') must be a tensor, got {}", i, name, e->type().str());
  return e;
}

/// Registers one converter: op type, the opsets it covers, the converter
/// and the notes docs/onnx-support.md shows (each family's register
/// function, converter.h).
inline Status addConverter(ConverterRegistry &r, std::string opType, int64_t minOpset,
                           int64_t maxOpset, Converter convert, std::string notes) {
  return r.add(
      ConverterSpec{std::move(opType), minOpset, maxOpset, std::move(convert), std::move(notes)});
}

/// A scalar integer constant of dtype `dt`.
inline ir::Expr scalarInt(NodeContext &ctx, ir::DType dt, int64_t v) {
  return ctx.constant(ir::Tensor::fromInts(dt, {}, std::vector<int64_t>{v}));
}

/// `op` (reduce_sum, reduce_mean, reduce_min, ...) over every element, as a
/// scalar.
inline Expected<ir::Expr> reduceAll(NodeContext &ctx, std::string_view op, const ir::Expr &x) {
  return ctx.call(op, {x}, {{"axes", Ints{}}, {"keepdims", false}});
}

/// Input `i` (named `name` in errors), which must be an integer tensor.
inline Expected<ir::Expr> integerInput(NodeContext &ctx, size_t i, std::string_view name) {
  TS_ASSIGN_OR_RETURN(ir::Expr e, tensorInput(ctx, i, name));
  if (!ir::isInteger(dtypeOf(e)))
    return ctx.error("input {} ('{}') must be an integer tensor, got {}", i, name, e->type().str());
  return e;
}

/// A run-time symbol for the result count of data-dependent node `ctx`
/// ("NonZero_3_count" for node '/NonZero_3'), bounded by `hi` (kUnbounded:
/// none); `what` replaces "count" for a node with several.
inline Expected<int64_t> countSymbol(NodeContext &ctx, int64_t hi,
                                     std::string_view what = "count") {
  std::string name;
  for (char c : ctx.nodeName())
    name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  while (!name.empty() && name.front() == '_')
    name.erase(name.begin());
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front())))
    name = ctx.opType() + name;
  auto s = ir::runtimeSymbol(name + "_" + std::string(what), hi);
  if (!s.ok())
    return ctx.error("{}", s.error().str());
  return *s;
}

/// The most elements `t` can have (its symbols at their upper bounds);
/// nullopt when a symbol has none.
inline std::optional<int64_t> elementBound(const ir::Type &t) {
  int64_t n = 1;
  for (int64_t d : t.shape()) {
    if (ir::isSymbol(d) && !ir::symbolInfo(d).bounded())
      return std::nullopt;
    n *= ir::isSymbol(d) ? ir::symbolInfo(d).hi : d;
  }
  return n;
}

/// countSymbol bounded by the elements of `sized` (a type over the node's
/// input 0); an input whose size has no upper bound is an error saying that
/// the buffers of `what` cannot be planned.
inline Expected<int64_t> boundedCountSymbol(NodeContext &ctx, const ir::Type &sized,
                                            std::string_view what) {
  const std::optional<int64_t> bound = elementBound(sized);
  if (!bound)
    return ctx.error("input 0 is {}, whose size has no upper bound, so the buffers of {} "
                     "cannot be planned: bound its symbols (--input-shape x=1..64,...)",
                     ctx.input(0)->type().str(), what);
  return countSymbol(ctx, *bound);
}

/// The data of constant input i, or an error saying it must be a constant.
inline Expected<const ir::Tensor *> requireConstant(NodeContext &ctx, size_t i,
                                                   std::string_view name) {
  if (!ctx.hasInput(i))
    return ctx.error("input {} ('{}') is missing", i, name);
  const ir::Tensor *t = ctx.constantInput(i);
  if (!t)
    return ctx.error("input {} ('{}') must be a constant (it decides the output shape)", i, name);
  return t;
}

/// Asks for every given input as a constant up front, so that the importer
/// learns all the graph inputs to bind before the first error.
inline void wishConstants(NodeContext &ctx, std::initializer_list<size_t> inputs) {
  for (size_t i : inputs)
    if (ctx.hasInput(i))
      (void)ctx.constantInput(i);
}

/// Wraps a converter so that it first checks that inputs 0..n-1 are given
/// (a malformed model may omit required inputs).
inline Converter withInputs(size_t n, Converter convert) {
  return [n, convert = std::move(convert)](NodeContext &ctx) -> Expected<Outputs> {
    for (size_t i = 0; i < n; ++i)
      if (!ctx.hasInput(i))
        return ctx.error("input {} is missing (the op needs {})", i, n);
    return convert(ctx);
  };
}

} // namespace tessera::frontend::onnx
