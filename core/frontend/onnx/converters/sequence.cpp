//===- frontend/onnx/converters/sequence.cpp - ONNX sequence converters ---===//
//
// Converters for the ONNX sequence and optional op types. Our IR has static
// shapes, so a sequence is an IR tuple of known length (one field per
// element; elements may differ in shape) and every sequence op is resolved
// at import time: it rebuilds the tuple from the fields of its input (a
// tuple expression's fields, or TupleGetItem of it). Positions (SequenceAt,
// SequenceInsert, SequenceErase) and SplitToSequence's 'split' must be
// constants. An optional is its value when present and has no expression
// (a null input) when absent, so OptionalHasElement folds to a constant.
//
// A sequence whose length is known only at run time (a sequence input, one
// that a Loop run at run time carries and inserts into) has the IR's
// sequence type, and these converters make the sequence ops on it
// (ir/ops/sequence.cpp); an element taken out of it has run-time dims.
//
// SequenceMap runs a sub-graph body: it lives with Loop and If in
// frontend/onnx/control_flow.cpp. A sequence that a Loop run at run time
// appends to is a scan output of the loop (frontend/onnx/appended_sequences.cpp),
// held stacked [N, ...]: ConcatFromSequence, SequenceAt and SequenceLength
// take it so.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/converters/common.h"

#include <cstring>
#include <numeric>

namespace tessera::frontend::onnx {

namespace {

using ir::DType;
using ir::Expr;

/// Whether input 0 is a sequence held stacked: a tensor whose axis 0
/// counts the elements (a Loop's appended sequence, appended_sequences.cpp).
bool stacked(const NodeContext &ctx) {
  return ctx.hasInput(0) && ctx.input(0)->type().isTensor() && ctx.input(0)->type().rank() >= 1;
}

/// The elements of sequence input i (an error unless it is a tuple).
Expected<std::vector<Expr>> elements(const NodeContext &ctx, size_t i) {
  if (!ctx.hasInput(i))
    return ctx.error("missing required input {} (a sequence)", i);
  const Expr &s = ctx.input(i);
  if (!s->type().isTuple())
    return ctx.error("input {} must be a sequence, got {}", i, s->type().str());
  if (const auto *t = s->as<ir::TupleNode>())
    return std::vector<Expr>(t->fields().begin(), t->fields().end());
  std::vector<Expr> out;
  for (size_t k = 0; k < s->type().fields().size(); ++k) {
    TS_ASSIGN_OR_RETURN(Expr item, ir::makeTupleGetItem(s, int(k), ctx.nodeName()));
    out.push_back(std::move(item));
  }
  return out;
}

/// Whether input i is a sequence of run-time length (the IR's sequence type).
bool runtimeSequence(const NodeContext &ctx, size_t i = 0) {
  return ctx.hasInput(i) && ctx.input(i)->type().isSequence();
}

/// A run-time symbol for each dim of a result of `rank` taken out of a
/// sequence of run-time length (the data decides them).
Expected<Ints> elementDims(NodeContext &ctx, int64_t rank) {
  if (rank < 0)
    return ctx.error("the sequence holds elements of different (or unknown) ranks, so the "
                     "result's rank is not known when the model is compiled");
  Ints dims;
  for (int64_t d = 0; d < rank; ++d) {
    TS_ASSIGN_OR_RETURN(int64_t sym, countSymbol(ctx, ir::kUnbounded, fmt::format("dim{}", d)));
    dims.push_back(sym);
  }
  return dims;
}

/// The op `op` on a sequence of run-time length: input 0 and the inputs
/// after it that are given.
Expected<Outputs> onRuntimeSequence(NodeContext &ctx, const std::string &op, size_t maxInputs,
                                    ir::Attrs attrs = {}) {
  std::vector<Expr> args;
  for (size_t i = 0; i < std::min(ctx.numInputs(), maxInputs); ++i) {
    if (!ctx.hasInput(i))
      break;
    args.push_back(ctx.input(i));
  }
  TS_ASSIGN_OR_RETURN(Expr y, ctx.call(op, std::move(args), std::move(attrs)));
  return Outputs{y};
}

Expr sequence(const NodeContext &ctx, std::vector<Expr> fields) {
  return ir::makeTuple(std::move(fields), ctx.nodeName());
}

/// The constant position input i for a sequence of n elements, in
/// [-n, n - 1] (or [-n, n] when `end` allows the position after the last
/// element), made non-negative.
Expected<int64_t> position(NodeContext &ctx, size_t i, int64_t n, bool end) {
  const ir::Tensor *t = ctx.constantInput(i);
  if (!t)
    return ctx.error("input {} ('position') must be a constant", i);
  if (!ir::isInteger(t->dtype()) || t->numel() != 1)
    return ctx.error("input {} ('position') must be an integer scalar, got {}", i,
                     t->type().str());
  int64_t p = t->getInt(0);
  int64_t hi = end ? n : n - 1;
  if (p < -n || p > hi)
    return ctx.error("position {} is out of range [{}, {}] for a sequence of {} elements", p, -n,
                     hi, n);
  return p < 0 ? p + n : p;
}

/// All elements have x's dtype (a sequence holds one element type).
Status checkDType(const NodeContext &ctx, const std::vector<Expr> &elems, const Expr &x) {
  for (const auto &e : elems)
    if (!e->type().isTensor() || e->type().dtype() != x->type().dtype())
      return ctx.error("a sequence of {} cannot hold {}", e->type().str(), x->type().str());
  return okStatus();
}

// SequenceConstruct (11+): the inputs (tensors of one dtype) as a tuple.
Expected<Outputs> convertSequenceConstruct(NodeContext &ctx) {
  std::vector<Expr> fields;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    TS_ASSIGN_OR_RETURN(Expr x, tensorInput(ctx, i));
    TS_RETURN_IF_ERROR(checkDType(ctx, fields, x));
    fields.push_back(x);
  }
  if (fields.empty())
    return ctx.error("expected at least one input");
  return Outputs{sequence(ctx, std::move(fields))};
}

// SequenceEmpty (11+): the empty tuple ('dtype' is not kept: an empty tuple
// has no element type).
Expected<Outputs> convertSequenceEmpty(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(int64_t dtype, ctx.attrInt("dtype", int64_t{1}));
  (void)dtype;
  return Outputs{sequence(ctx, {})};
}

// SequenceInsert (11+): tensor at the constant 'position' (default: at the
// end; negative counts from the end).
Expected<Outputs> convertSequenceInsert(NodeContext &ctx) {
  if (runtimeSequence(ctx))
    return onRuntimeSequence(ctx, "seq_insert", 3);
  TS_ASSIGN_OR_RETURN(std::vector<Expr> elems, elements(ctx, 0));
  TS_ASSIGN_OR_RETURN(Expr x, tensorInput(ctx, 1));
  TS_RETURN_IF_ERROR(checkDType(ctx, elems, x));
  int64_t n = int64_t(elems.size());
  int64_t p = n;
  if (ctx.hasInput(2)) {
    TS_ASSIGN_OR_RETURN(p, position(ctx, 2, n, /*end=*/true));
  }
  elems.insert(elems.begin() + p, x);
  return Outputs{sequence(ctx, std::move(elems))};
}

// SequenceErase (11+): removes the element at the constant 'position'
// (default: the last).
Expected<Outputs> convertSequenceErase(NodeContext &ctx) {
  if (runtimeSequence(ctx))
    return onRuntimeSequence(ctx, "seq_erase", 2);
  TS_ASSIGN_OR_RETURN(std::vector<Expr> elems, elements(ctx, 0));
  int64_t n = int64_t(elems.size());
  if (n == 0)
    return ctx.error("cannot erase from an empty sequence");
  int64_t p = n - 1;
  if (ctx.hasInput(1)) {
    TS_ASSIGN_OR_RETURN(p, position(ctx, 1, n, /*end=*/false));
  }
  elems.erase(elems.begin() + p);
  return Outputs{sequence(ctx, std::move(elems))};
}

// SequenceAt (11+): the element at the constant 'position'; of a stacked
// sequence, the row at any position.
Expected<Outputs> convertSequenceAt(NodeContext &ctx) {
  if (runtimeSequence(ctx)) {
    if (!ctx.hasInput(1))
      return ctx.error("missing required input 1 ('position')");
    TS_ASSIGN_OR_RETURN(Ints dims, elementDims(ctx, ctx.input(0)->type().elementRank()));
    return onRuntimeSequence(ctx, "seq_at", 2, {{"shape", dims}});
  }
  if (stacked(ctx)) { // row `position` (negative from the end), checked at run time
    if (!ctx.hasInput(1))
      return ctx.error("missing required input 1 ('position')");
    TS_ASSIGN_OR_RETURN(Expr y, ctx.call("gather", {ctx.input(0), ctx.input(1)},
                                         {{"axis", int64_t(0)}}));
    return Outputs{y};
  }
  TS_ASSIGN_OR_RETURN(std::vector<Expr> elems, elements(ctx, 0));
  if (!ctx.hasInput(1))
    return ctx.error("missing required input 1 ('position')");
  TS_ASSIGN_OR_RETURN(int64_t p, position(ctx, 1, int64_t(elems.size()), /*end=*/false));
  return Outputs{elems[size_t(p)]};
}

// SequenceLength (11+): the (static) length as an i64 scalar constant (of
// a stacked sequence, its rows, a shape value).
Expected<Outputs> convertSequenceLength(NodeContext &ctx) {
  if (runtimeSequence(ctx))
    return onRuntimeSequence(ctx, "seq_length", 1);
  if (stacked(ctx)) { // its rows: a shape value
    const int64_t n = ctx.input(0)->type().shape()[0];
    return Outputs{ctx.constant(ir::Tensor::fromInts(DType::I64, {}, {&n, 1}))};
  }
  TS_ASSIGN_OR_RETURN(std::vector<Expr> elems, elements(ctx, 0));
  int64_t n = int64_t(elems.size());
  return Outputs{ctx.constant(ir::Tensor::fromInts(DType::I64, {}, {&n, 1}))};
}

// SplitToSequence (11+): 'axis' (default 0); the constant 'split' input is
// a scalar (chunks of that size, the last one smaller) or 1-D (the sizes);
// without it, chunks of 1, squeezed unless 'keepdims' (default 1).
Expected<Outputs> convertSplitToSequence(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr x, tensorInput(ctx, 0));
  TS_ASSIGN_OR_RETURN(int64_t axis, ctx.attrInt("axis", int64_t{0}));
  TS_ASSIGN_OR_RETURN(int64_t keepdims, ctx.attrInt("keepdims", int64_t{1}));
  const int64_t rank = int64_t(x->type().rank());
  if (axis < -rank || axis >= rank)
    return ctx.error("'axis' {} is out of range for rank {}", axis, rank);
  if (axis < 0)
    axis += rank;
  const int64_t dim = x->type().shape()[size_t(axis)];
  Ints sizes;
  bool squeeze = false;
  if (ctx.hasInput(1)) {
    const ir::Tensor *t = ctx.constantInput(1);
    if (!t)
      return ctx.error("input 1 ('split') must be a constant (it decides the output shapes)");
    if (!ir::isInteger(t->dtype()) || t->rank() > 1)
      return ctx.error("input 1 ('split') must be an integer scalar or 1-D tensor, got {}",
                       t->type().str());
    if (t->rank() == 0) {
      int64_t chunk = t->getInt(0);
      if (chunk <= 0)
        return ctx.error("'split' must be positive, got {}", chunk);
      for (int64_t done = 0; done < dim; done += chunk)
        sizes.push_back(std::min(chunk, dim - done));
    } else {
      sizes = t->toInts();
      for (int64_t s : sizes)
        if (s < 0)
          return ctx.error("'split' has a negative size {}", s);
      if (std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) != dim)
        return ctx.error("'split' sizes {} do not add up to dim {} ({}) of the input",
                         ir::shapeStr(sizes), axis, dim);
    }
  } else {
    sizes.assign(size_t(dim), 1);
    squeeze = keepdims == 0;
  }
  if (sizes.empty())
    return Outputs{sequence(ctx, {})};
  TS_ASSIGN_OR_RETURN(Expr parts, ctx.call("split", {x}, {{"axis", axis}, {"sizes", sizes}}));
  std::vector<Expr> elems;
  if (const auto *t = parts->as<ir::TupleNode>()) {
    elems.assign(t->fields().begin(), t->fields().end());
  } else {
    for (size_t k = 0; k < sizes.size(); ++k) {
      TS_ASSIGN_OR_RETURN(Expr item, ir::makeTupleGetItem(parts, int(k), ctx.nodeName()));
      elems.push_back(std::move(item));
    }
  }
  if (squeeze)
    for (auto &e : elems) {
      TS_ASSIGN_OR_RETURN(e, ctx.call("squeeze", {e}, {{"axes", Ints{axis}}}));
    }
  return Outputs{sequence(ctx, std::move(elems))};
}

/// ConcatFromSequence of a stacked sequence [N, d...]: with new_axis, axis
/// 0 moved to `axis`; without, axis 0 merged into element axis `axis`.
Expected<Outputs> concatStacked(NodeContext &ctx, int64_t axis, bool newAxis) {
  const Expr &s = ctx.input(0);
  const int64_t rank = int64_t(s->type().rank()) - (newAxis ? 0 : 1); // the result's
  if (axis < -rank || axis >= rank)
    return ctx.error("'axis' {} is out of range for rank {}", axis, rank);
  if (axis < 0)
    axis += rank;
  Ints perm;
  for (int64_t d = 1; d <= axis; ++d)
    perm.push_back(d);
  perm.push_back(0);
  for (int64_t d = axis + 1; d < int64_t(s->type().rank()); ++d)
    perm.push_back(d);
  Expr y = s;
  if (axis > 0) {
    TS_ASSIGN_OR_RETURN(y, ctx.call("transpose", {s}, {{"perm", perm}}));
  }
  if (newAxis)
    return Outputs{y};
  Ints shape = shapeOf(y); // [d0.., N, d_axis, ...] -> [d0.., N * d_axis, ...]
  shape[size_t(axis)] = -1;
  shape.erase(shape.begin() + axis + 1);
  TS_ASSIGN_OR_RETURN(y, ctx.call("reshape", {y}, {{"newshape", shape}}));
  return Outputs{y};
}

// ConcatFromSequence (11+): core concat of the elements along 'axis'; with
// 'new_axis' = 1 they are stacked (unsqueezed at 'axis', which may then be
// -rank-1..rank).
Expected<Outputs> convertConcatFromSequence(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(int64_t axis, ctx.attrInt("axis"));
  TS_ASSIGN_OR_RETURN(int64_t newAxis, ctx.attrInt("new_axis", int64_t{0}));
  if (stacked(ctx))
    return concatStacked(ctx, axis, newAxis != 0);
  if (runtimeSequence(ctx)) {
    TS_ASSIGN_OR_RETURN(
        Ints dims, elementDims(ctx, ctx.input(0)->type().elementRank() + (newAxis != 0 ? 1 : 0)));
    return onRuntimeSequence(ctx, "concat_from_seq", 1,
                             {{"axis", axis}, {"new_axis", newAxis != 0}, {"shape", dims}});
  }
  TS_ASSIGN_OR_RETURN(std::vector<Expr> elems, elements(ctx, 0));
  if (elems.empty())
    return ctx.error("cannot concatenate an empty sequence");
  for (const auto &e : elems)
    if (!e->type().isTensor())
      return ctx.error("the sequence holds {}, not tensors", e->type().str());
  if (newAxis != 0) {
    const int64_t rank = int64_t(elems[0]->type().rank()) + 1;
    if (axis < -rank || axis >= rank)
      return ctx.error("'axis' {} is out of range for rank {} (with 'new_axis')", axis, rank);
    if (axis < 0)
      axis += rank;
    for (auto &e : elems) {
      TS_ASSIGN_OR_RETURN(e, ctx.call("unsqueeze", {e}, {{"axes", Ints{axis}}}));
    }
  }
  TS_ASSIGN_OR_RETURN(Expr y, ctx.call("concat", elems, {{"axis", axis}}));
  return Outputs{y};
}

// OptionalHasElement (15+): whether the optional input is present, a bool
// scalar constant (an absent optional is a null input).
Expected<Outputs> convertOptionalHasElement(NodeContext &ctx) {
  uint8_t has = ctx.hasInput(0) ? 1 : 0;
  ir::Tensor t(DType::Bool, {});
  std::memcpy(t.bytes(), &has, 1);
  return Outputs{ctx.constant(std::move(t))};
}

// OptionalGetElement (15+): the value of a present optional (a tensor or a
// sequence); an absent one is an error.
Expected<Outputs> convertOptionalGetElement(NodeContext &ctx) {
  if (!ctx.hasInput(0))
    return ctx.error("the optional input is absent (empty)");
  return Outputs{ctx.input(0)};
}

Status add(ConverterRegistry &r, std::string op, int64_t minOpset, Converter f,
           std::string notes) {
  return r.add(ConverterSpec{std::move(op), minOpset, 17, std::move(f), std::move(notes)});
}

} // namespace

Status registerSequenceConverters(ConverterRegistry &r) {
  TS_RETURN_IF_ERROR(add(r, "SequenceConstruct", 11, convertSequenceConstruct,
                         "a tuple of the inputs (sequences have a static length)"));
  TS_RETURN_IF_ERROR(
      add(r, "SequenceEmpty", 11, convertSequenceEmpty, "the empty tuple ('dtype' not kept)"));
  TS_RETURN_IF_ERROR(add(r, "SequenceInsert", 11, convertSequenceInsert,
                         "constant 'position' (default: append); any position on a sequence of "
                         "run-time length (core seq_insert)"));
  TS_RETURN_IF_ERROR(add(r, "SequenceErase", 11, convertSequenceErase,
                         "constant 'position' (default: the last); any position on a sequence "
                         "of run-time length (core seq_erase)"));
  const std::string stackedNote = "; a Loop's appended sequence (SequenceEmpty, then one "
                                  "SequenceInsert per iteration) is held stacked, its length "
                                  "the iterations run";
  TS_RETURN_IF_ERROR(add(r, "SequenceAt", 11, convertSequenceAt,
                         "constant 'position' (any position of an appended sequence, or of a "
                         "sequence of run-time length: core seq_at, its dims run-time)" +
                             stackedNote));
  TS_RETURN_IF_ERROR(add(r, "SequenceLength", 11, convertSequenceLength,
                         "the static length, a constant (core seq_length on a sequence of "
                         "run-time length)" + stackedNote));
  TS_RETURN_IF_ERROR(add(r, "SplitToSequence", 11, convertSplitToSequence,
                         "'axis', 'keepdims'; constant 'split' (scalar or sizes); core split"));
  TS_RETURN_IF_ERROR(add(r, "ConcatFromSequence", 11, convertConcatFromSequence,
                         "'axis', 'new_axis'; core concat (after unsqueeze for new_axis); core "
                         "concat_from_seq on a sequence of run-time length" +
                             stackedNote));
  TS_RETURN_IF_ERROR(add(r, "OptionalHasElement", 15, convertOptionalHasElement,
                         "presence is static: a constant"));
  TS_RETURN_IF_ERROR(add(r, "OptionalGetElement", 15, convertOptionalGetElement,
                         "the value of a present optional (tensor or sequence)"));
  return okStatus();
}

} // namespace tessera::frontend::onnx
