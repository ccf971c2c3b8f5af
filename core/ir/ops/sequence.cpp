//===- ir/ops/sequence.cpp - Sequences of run-time length --------------===//
//
// A sequence type (ir/type.h) is a list of tensors of one dtype whose length
// and element shapes are known only at run time: what a Loop run at run
// time carries when its body inserts into a list (a scripted loop building a
// Python list of tensors of different sizes), and a model's sequence inputs
// and outputs. Sequences of a length known at import time stay tuples and
// fold there (frontend/onnx/converters/sequence.cpp).
//
// These ops take or make sequences. Like `if` and `loop` they have no
// kernel: the reference interpreter runs them on its values (interp/), and
// the executor as Sequence steps over the session's lists (runtime/plan.h).
// Positions are one integer each, negative counting from the end; an element
// taken out of a sequence (seq_at, concat_from_seq) has the dims of the
// call's 'shape' attribute, each a constant the element must have or a
// run-time symbol it decides (docs/design/0013-dynamic-shapes.md,
// "Sequences").
//
//===----------------------------------------------------------------------===//
#include "ir/ops/common.h"
#include "ir/ops/ops.h"
#include "ir/symbol.h"

namespace tessera::ir::ops {

namespace {

using K = AttrKind;

Status requireSequence(std::span<const Type> in, size_t i) {
  if (!in[i].isSequence())
    return Error::format("argument {} must be a sequence, got {}", i, in[i].str());
  return okStatus();
}

Status requireElement(const Type &seq, const Type &x, size_t i) {
  if (!x.isTensor())
    return Error::format("argument {} must be a tensor, got {}", i, x.str());
  if (x.dtype() != seq.dtype())
    return Error::format("a sequence of {} cannot hold {} (argument {})", dtypeName(seq.dtype()),
                         x.str(), i);
  return okStatus();
}

Status requirePosition(std::span<const Type> in, size_t i) {
  const Type &t = in[i];
  if (!t.isTensor() || !isInteger(t.dtype()) || !t.isStatic() || t.numElements() != 1)
    return Error::format("argument {} ('position') must be one integer, got {}", i, t.str());
  return okStatus();
}

/// The rank of a sequence holding elements of ranks a and b (-1: differ).
int64_t joinRank(int64_t a, int64_t b) { return a == b ? a : -1; }

/// Attribute 'shape' of an op taking an element out: constants and
/// symbols, of the sequence's element rank (when known) plus `extra`.
Expected<Shape> elementShape(const Type &seq, const Attrs &attrs, int64_t extra) {
  Shape shape = attrs.getInts("shape");
  for (int64_t d : shape)
    if (d < 0 && !isSymbol(d))
      return Error::format("attribute 'shape' = {} holds a negative dim", shapeStr(shape));
  if (seq.elementRank() >= 0 && int64_t(shape.size()) != seq.elementRank() + extra)
    return Error::format("attribute 'shape' = {} has rank {}, the result must have rank {}",
                         shapeStr(shape), shape.size(), seq.elementRank() + extra);
  return shape;
}

// seq_empty {dtype, rank}: a sequence with no element.
Expected<Type> emptyRelation(std::span<const Type>, const Attrs &attrs) {
  const int64_t rank = attrs.getInt("rank");
  if (rank < -1)
    return Error::format("attribute 'rank' = {} must be -1 (any) or a rank", rank);
  return Type::sequence(attrs.getDType("dtype"), rank);
}

// seq_construct(x...): a sequence of the arguments, in order.
Expected<Type> constructRelation(std::span<const Type> in, const Attrs &) {
  if (!in[0].isTensor())
    return Error::format("argument 0 must be a tensor, got {}", in[0].str());
  int64_t rank = int64_t(in[0].rank());
  const Type seq = Type::sequence(in[0].dtype());
  for (size_t i = 0; i < in.size(); ++i) {
    TS_RETURN_IF_ERROR(requireElement(seq, in[i], i));
    rank = joinRank(rank, int64_t(in[i].rank()));
  }
  return Type::sequence(in[0].dtype(), rank);
}

// seq_insert(s, x, position?): s with x inserted before `position` (default:
// appended).
Expected<Type> insertRelation(std::span<const Type> in, const Attrs &) {
  TS_RETURN_IF_ERROR(requireSequence(in, 0));
  TS_RETURN_IF_ERROR(requireElement(in[0], in[1], 1));
  if (in.size() > 2)
    TS_RETURN_IF_ERROR(requirePosition(in, 2));
  return Type::sequence(in[0].dtype(), joinRank(in[0].elementRank(), int64_t(in[1].rank())));
}

// seq_erase(s, position?): s without the element at `position` (default:
// the last).
Expected<Type> eraseRelation(std::span<const Type> in, const Attrs &) {
  TS_RETURN_IF_ERROR(requireSequence(in, 0));
  if (in.size() > 1)
    TS_RETURN_IF_ERROR(requirePosition(in, 1));
  return in[0];
}

// seq_at(s, position) {shape}: the element at `position`.
Expected<Type> atRelation(std::span<const Type> in, const Attrs &attrs) {
  TS_RETURN_IF_ERROR(requireSequence(in, 0));
  TS_RETURN_IF_ERROR(requirePosition(in, 1));
  TS_ASSIGN_OR_RETURN(Shape shape, elementShape(in[0], attrs, 0));
  return Type::tensor(in[0].dtype(), std::move(shape));
}

// seq_length(s): the number of elements, an i64 scalar.
Expected<Type> lengthRelation(std::span<const Type> in, const Attrs &) {
  TS_RETURN_IF_ERROR(requireSequence(in, 0));
  return Type::tensor(DType::I64, {});
}

// concat_from_seq(s) {axis, new_axis, shape}: the elements concatenated
// along 'axis' (stacked on a new axis 'axis' with new_axis).
Expected<Type> concatRelation(std::span<const Type> in, const Attrs &attrs) {
  TS_RETURN_IF_ERROR(requireSequence(in, 0));
  const bool newAxis = attrs.getBool("new_axis");
  TS_ASSIGN_OR_RETURN(Shape shape, elementShape(in[0], attrs, newAxis ? 1 : 0));
  if (auto axis = normalizeAxis(attrs.getInt("axis"), int64_t(shape.size())); !axis.ok())
    return std::move(axis).error();
  return Type::tensor(in[0].dtype(), std::move(shape));
}

Expected<std::vector<Tensor>> sequenceKernel(std::span<const Tensor>, const Attrs &,
                                             const Type &) {
  return Error("sequence ops have no kernel: the interpreter and the executor run them on "
               "their lists");
}

Op sequenceOp(std::string name, std::string description, std::vector<std::string> args,
              int minArgs, int maxArgs, std::vector<AttrSpec> attrs, TypeRelation relation) {
  Op op{std::move(name),  std::move(description), std::move(args),
        minArgs,          maxArgs,                std::move(attrs),
        OpPattern::Opaque, std::move(relation),   sequenceKernel};
  op.sequence = true;
  return op;
}

AttrSpec shapeAttr(std::string_view what) {
  return {"shape", K::Ints, std::nullopt,
          fmt::format("the dims of {}: constants it must have, or run-time symbols it decides",
                      what)};
}

} // namespace

Status registerSequenceOps(OpRegistry &r) {
  TS_RETURN_IF_ERROR(r.add(sequenceOp(
      "seq_empty", "A sequence with no element (ONNX SequenceEmpty of a sequence of run-time "
                   "length).",
      {}, 0, 0,
      {{"dtype", K::DType, std::nullopt, "the elements' dtype"},
       {"rank", K::Int, AttrValue(int64_t(-1)), "the elements' rank (-1: any)"}},
      emptyRelation)));
  TS_RETURN_IF_ERROR(r.add(sequenceOp(
      "seq_construct", "A sequence of its arguments, in order (tensors of one dtype).",
      {"elements"}, 1, -1, {}, constructRelation)));
  TS_RETURN_IF_ERROR(r.add(sequenceOp(
      "seq_insert",
      "The sequence with 'x' inserted before 'position' (one integer, negative from the end; "
      "default: appended).",
      {"s", "x", "position"}, 2, 3, {}, insertRelation)));
  TS_RETURN_IF_ERROR(r.add(sequenceOp(
      "seq_erase",
      "The sequence without the element at 'position' (one integer, negative from the end; "
      "default: the last).",
      {"s", "position"}, 1, 2, {}, eraseRelation)));
  TS_RETURN_IF_ERROR(r.add(sequenceOp(
      "seq_at", "The element at 'position' (one integer, negative from the end).",
      {"s", "position"}, 2, 2, {shapeAttr("the element")}, atRelation)));
  TS_RETURN_IF_ERROR(r.add(sequenceOp("seq_length",
                                      "The number of elements of the sequence, an i64 scalar.",
                                      {"s"}, 1, 1, {}, lengthRelation)));
  TS_RETURN_IF_ERROR(r.add(sequenceOp(
      "concat_from_seq",
      "The elements concatenated along 'axis' (with 'new_axis', stacked on a new axis 'axis'); "
      "an empty sequence is an error.",
      {"s"}, 1, 1,
      {{"axis", K::Int, std::nullopt, "the axis of the result"},
       {"new_axis", K::Bool, AttrValue(false), "stack on a new axis instead of concatenating"},
       shapeAttr("the result")},
      concatRelation)));
  return okStatus();
}

} // namespace tessera::ir::ops
