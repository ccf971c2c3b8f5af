//===- ir/ops/control.cpp - Run-time control flow: if, loop, check --------===//
//
// `check` stops a run whose data breaks a rule the importer could not check
// at compile time (a Reshape to a shape of data values whose element count
// differs). if and loop are the two ops whose arguments include functions. Both functions of an `if`
// and the body of a `loop` are closed Function expressions (every value
// they use from outside is passed as an argument), so that each can be
// lowered, planned and run on its own. No kernel runs them: the reference
// interpreter (interp/) evaluates the functions, the executor runs their
// steps between Jump and LoopTest steps (runtime/plan.h). The ONNX importer
// creates them only when a condition or a trip count is not a constant
// (constant ones still fold: frontend/onnx/control_flow.cpp).
//
//===----------------------------------------------------------------------===//
#include "ir/ops/common.h"
#include "ir/ops/ops.h"
#include "ir/symbol.h"

namespace tessera::ir::ops {

namespace {

/// A tensor of one element (any shape whose dims are all 1, or []).
bool isOneElement(const Type &t) {
  return t.isTensor() && t.isStatic() && t.numElements() == 1;
}

bool isCondition(const Type &t) {
  return isOneElement(t) && (t.dtype() == DType::Bool || isInteger(t.dtype()));
}

/// Whether a value of type `given` may be passed where `declared` is
/// expected: the same type (symbols by name), or a sequence whose elements
/// have a known rank where one of any rank is (a loop whose body inserts
/// elements of another rank carries a sequence of any rank).
bool accepts(const Type &declared, const Type &given) {
  if (typesMatch(declared, given))
    return true;
  return declared.isSequence() && given.isSequence() && declared.dtype() == given.dtype() &&
         declared.elementRank() < 0;
}

/// Checks that `fn` is a function taking `params` (types match, symbols by
/// name); `what` names it in messages.
Status checkParams(const Type &fn, std::span<const Type> params, std::string_view what) {
  if (!fn.isFunc())
    return Error::format("{} must be a function, got {}", what, fn.str());
  const auto &declared = fn.fields();
  if (declared.size() != params.size())
    return Error::format("{} takes {} parameters, {} are passed", what, declared.size(),
                         params.size());
  for (size_t i = 0; i < params.size(); ++i)
    if (!accepts(declared[i], params[i]))
      return Error::format("parameter {} of {} is {}, the value passed is {}", i, what,
                           declared[i].str(), params[i].str());
  return okStatus();
}

/// The if's result with 'joins' (see ifRelation): the branches' result
/// tuples agree but in dims, where the joins take their place in order;
/// their last joins.size() fields are i64 [1] (the values the joins take).
Expected<Type> joinedResult(const Type &thenType, const Type &elseType,
                            const std::vector<int64_t> &joins) {
  auto mismatch = [&] {
    return Error::format("the then branch returns {}, the else branch {} (joined by {} "
                         "run-time dims)",
                         thenType.str(), elseType.str(), joins.size());
  };
  if (!thenType.isTuple() || !elseType.isTuple() ||
      thenType.fields().size() != elseType.fields().size() ||
      thenType.fields().size() < joins.size())
    return mismatch();
  const size_t n = thenType.fields().size() - joins.size();
  const Type count = Type::tensor(DType::I64, {1});
  std::vector<Type> fields;
  size_t next = 0;
  for (size_t i = 0; i < thenType.fields().size(); ++i) {
    const Type &a = thenType.fields()[i], &b = elseType.fields()[i];
    if (i >= n) {
      if (a != count || b != count)
        return mismatch();
      fields.push_back(count);
      continue;
    }
    if (!a.isTensor() || !b.isTensor() || a.dtype() != b.dtype() || a.rank() != b.rank())
      return mismatch();
    Shape shape = a.shape();
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] != b.shape()[d]) {
        if (next == joins.size())
          return mismatch();
        shape[d] = joins[next++];
      }
    fields.push_back(Type::tensor(a.dtype(), std::move(shape)));
  }
  if (next != joins.size())
    return mismatch();
  return Type::tuple(std::move(fields));
}

// if(cond, then, else, args...) {joins}: then(args...) when cond is
// non-zero, else else(args...). Both functions return the same type, but
// for dims that differ between them (an empty result against a count the
// data decides): each is a run-time symbol of 'joins', and each branch
// returns its value last, as an i64 [1].
Expected<Type> ifRelation(std::span<const Type> in, const Attrs &attrs) {
  if (!isCondition(in[0]))
    return Error::format("the condition must be one bool or integer, got {}", in[0].str());
  std::span<const Type> args = in.subspan(3);
  TS_RETURN_IF_ERROR(checkParams(in[1], args, "the then branch"));
  TS_RETURN_IF_ERROR(checkParams(in[2], args, "the else branch"));
  const Type &thenType = in[1].result(), &elseType = in[2].result();
  if (const std::vector<int64_t> joins = attrs.getInts("joins"); !joins.empty())
    return joinedResult(thenType, elseType, joins);
  if (!typesMatch(thenType, elseType))
    return Error::format("the then branch returns {}, the else branch {}", thenType.str(),
                         elseType.str());
  return thenType;
}

// loop(trip_count, cond, body, carried..., captured...) {carried = n,
// scans = k, count}: the body maps (iteration: i64[], cond, carried...,
// captured...) to (cond, carried..., scan slices...) and runs while
// iteration < trip_count and cond; the result is the tuple of the carried
// values after the last iteration, then, with scan outputs, each one's
// slices stacked on a new axis 0 ([count, slice...]) and the count of
// iterations as an i64 [1]: 'count' is that dim (a run-time symbol).
Expected<Type> loopRelation(std::span<const Type> in, const Attrs &attrs) {
  const int64_t n = attrs.getInt("carried"), k = attrs.getInt("scans"),
                count = attrs.getInt("count");
  if (!isOneElement(in[0]) || in[0].dtype() != DType::I64)
    return Error::format("the trip count must be one i64, got {}", in[0].str());
  if (!isCondition(in[1]))
    return Error::format("the condition must be one bool or integer, got {}", in[1].str());
  std::span<const Type> rest = in.subspan(3);
  if (n < 0 || size_t(n) > rest.size())
    return Error::format("attribute 'carried' is {}, but {} values follow the body", n,
                         rest.size());
  if (k < 0)
    return Error::format("attribute 'scans' = {} must not be negative", k);
  if (k > 0 && count < 0 && !isSymbol(count))
    return Error::format("attribute 'count' = {} must be a size (a run-time symbol): the loop "
                         "has {} scan outputs",
                         count, k);
  const Type &body = in[2];
  if (!body.isFunc())
    return Error::format("the body must be a function, got {}", body.str());
  const auto &params = body.fields();
  if (params.size() != 2 + rest.size())
    return Error::format("the body takes {} parameters, the loop passes {} (the iteration, the "
                         "condition and {} values)",
                         params.size(), 2 + rest.size(), rest.size());
  if (params[0] != Type::tensor(DType::I64, {}))
    return Error::format("the body's first parameter (the iteration) must be i64[], got {}",
                         params[0].str());
  if (!isCondition(params[1]))
    return Error::format("the body's second parameter (the condition) must be one bool or "
                         "integer, got {}",
                         params[1].str());
  for (size_t i = 0; i < rest.size(); ++i)
    if (!accepts(params[2 + i], rest[i]))
      return Error::format("parameter {} of the body is {}, the value passed is {}", 2 + i,
                           params[2 + i].str(), rest[i].str());
  const Type &result = body.result();
  if (!result.isTuple() || result.fields().size() != size_t(1 + n + k))
    return Error::format("the body must return a tuple of the condition, {} carried values and "
                         "{} scan slices, got {}",
                         n, k, result.str());
  if (!isCondition(result.fields()[0]) ||
      result.fields()[0].numElements() != params[1].numElements())
    return Error::format("the body's condition result must be one bool or integer, got {}",
                         result.fields()[0].str());
  std::vector<Type> fields;
  for (int64_t i = 0; i < n; ++i) {
    const Type &out = result.fields()[size_t(1 + i)], &param = params[size_t(2 + i)];
    if (!typesMatch(out, param))
      return Error::format("carried value {} enters the loop as {} but the body returns {} (a "
                           "carried value keeps its type)",
                           i, param.str(), out.str());
    fields.push_back(param);
  }
  for (int64_t j = 0; j < k; ++j) {
    const Type &slice = result.fields()[size_t(1 + n + j)];
    if (!slice.isTensor() || !slice.isStatic())
      return Error::format("scan slice {} must be a tensor of static shape, the body returns {}",
                           j, slice.str());
    Shape shape{count};
    shape.insert(shape.end(), slice.shape().begin(), slice.shape().end());
    fields.push_back(Type::tensor(slice.dtype(), std::move(shape)));
  }
  if (k > 0)
    fields.push_back(Type::tensor(DType::I64, {1}));
  return Type::tuple(std::move(fields));
}

Expected<std::vector<Tensor>> controlKernel(std::span<const Tensor>, const Attrs &,
                                            const Type &) {
  return Error("control flow has no kernel: the interpreter and the executor run its functions");
}

/// check(x, ok) {message}: x, once every element of the bool `ok` holds.
Expected<Type> checkRelation(std::span<const Type> in, const Attrs &attrs) {
  if (!in[1].isTensor() || in[1].dtype() != DType::Bool)
    return Error::format("argument 1 ('ok') must be a bool tensor, got {}", in[1].str());
  if (attrs.getString("message").empty())
    return Error("attribute 'message' must say what the data broke");
  return in[0];
}

Expected<std::vector<Tensor>> checkKernel(std::span<const Tensor> in, const Attrs &attrs,
                                          const Type &) {
  for (int64_t i = 0; i < in[1].numel(); ++i)
    if (in[1].getInt(i) == 0)
      return Error(attrs.getString("message"));
  return std::vector<Tensor>{in[0]};
}

} // namespace

Status registerControlOps(OpRegistry &r) {
  using K = AttrKind;
  TS_RETURN_IF_ERROR(r.add(Op{
      "check",
      "Its first argument, once every element of the bool 'ok' holds; otherwise the run stops "
      "with 'message' (a rule on data values the importer could not check when it compiled: a "
      "shape of data values whose element count differs from the input's).",
      {"x", "ok"},
      2,
      2,
      {{"message", K::String, std::nullopt, "what the data broke, for the run's error"}},
      OpPattern::Opaque,
      checkRelation,
      checkKernel,
  }));
  Op ifOp{
      "if",
      "Runs 'then' on the arguments when 'cond' (one bool or integer) is non-zero, else 'else' "
      "(ONNX If with a run-time condition). Both are closed functions of the arguments with one "
      "result type.",
      {"cond", "then", "else", "args"},
      3,
      -1,
      {{"joins", K::Ints, AttrValue(std::vector<int64_t>{}),
        "run-time symbols for the result dims the branches disagree on; each branch returns "
        "their values last, as i64 [1] tensors"}},
      OpPattern::Opaque,
      ifRelation,
      controlKernel,
  };
  ifOp.controlFlow = true;
  TS_RETURN_IF_ERROR(r.add(std::move(ifOp)));

  Op loopOp{
      "loop",
      "Runs 'body' while the iteration count is below 'trip_count' and the condition holds "
      "(ONNX Loop with a run-time trip count or condition); returns the carried values, then "
      "the scan outputs (each iteration's slices stacked on axis 0) and the iteration count "
      "(i64 [1]). The body maps (iteration, cond, carried..., captured...) to (cond, "
      "carried..., slices...).",
      {"trip_count", "cond", "body", "values"},
      3,
      -1,
      {{"carried", K::Int, std::nullopt,
        "how many of the values after 'body' are loop-carried (the rest are passed unchanged "
        "to every iteration)"},
       {"scans", K::Int, AttrValue(int64_t(0)),
        "how many scan outputs the body returns after the carried values"},
       {"count", K::Int, AttrValue(int64_t(-1)),
        "with scan outputs: the run-time symbol for the number of iterations (axis 0 of each "
        "scan output)"}},
      OpPattern::Opaque,
      loopRelation,
      controlKernel,
  };
  loopOp.controlFlow = true;
  TS_RETURN_IF_ERROR(r.add(std::move(loopOp)));
  return okStatus();
}

} // namespace tessera::ir::ops
