//===- compile/lower_control.cpp - Run-time if and loop in the plan -------===//
//
// The functions of if and loop (ir/ops/control.cpp) lower inline, between
// Jump and LoopTest steps (runtime/plan.h); their results are copied into
// the buffers the op returns, which both branches (every iteration) write.
// SetSymbol steps give run-time symbols their values: a data-dependent op's
// count, a dim the branches of an if disagree on.
//
//===----------------------------------------------------------------------===//
#include "compile/lower_internal.h"

#include "ir/symbol.h"
#include "ir/visit.h"

#include <fmt/format.h>

namespace tessera::compile::detail {

void Lowerer::setSymbol(int64_t dim, const Value &from, std::string label) {
  const uint32_t k = planSymbol(dim);
  out_.plan.symbols[k].runtime = true;
  addControlStep(runtime::StepKind::SetSymbol, {uint32_t(from.buffer)}, std::move(label));
  out_.plan.steps.back().target = k;
}

size_t Lowerer::addControlStep(runtime::StepKind kind, std::vector<uint32_t> args,
                               std::string label) {
  runtime::Step step;
  step.kind = kind;
  step.numInputs = uint32_t(args.size());
  step.args = std::move(args);
  step.label = std::move(label);
  out_.plan.steps.push_back(std::move(step));
  return out_.plan.steps.size() - 1;
}

void Lowerer::addCopy(uint32_t from, uint32_t to, std::string label) {
  runtime::Step step;
  step.kind = runtime::StepKind::Copy;
  step.args = {from, to};
  step.numInputs = 1;
  step.label = std::move(label);
  out_.plan.steps.push_back(std::move(step));
}

void Lowerer::addCopyAt(uint32_t from, uint32_t index, uint32_t to, std::string label) {
  runtime::Step step;
  step.kind = runtime::StepKind::Copy;
  step.args = {from, index, to};
  step.numInputs = 2;
  step.label = std::move(label);
  out_.plan.steps.push_back(std::move(step));
}

Expected<Value> Lowerer::lowerBody(const FunctionNode &fn, const std::vector<Value> &args) {
  for (size_t i = 0; i < fn.params().size(); ++i)
    values_[fn.params()[i].get()] = args.at(i);
  for (const ExprNode *n : postOrder(fn.body(), /*intoFunctions=*/false))
    TS_RETURN_IF_ERROR(visit(*n));
  TS_ASSIGN_OR_RETURN(const Value *v, valueOf(*fn.body()));
  return *v;
}

void Lowerer::copyInto(const std::vector<uint32_t> &from, const std::vector<uint32_t> &to,
                       const std::string &label) {
  std::vector<uint32_t> src = from;
  for (size_t i = 0; i < src.size(); ++i) {
    const uint32_t b = src[i];
    if (b == to[i] || std::find(to.begin(), to.end(), b) == to.end())
      continue;
    runtime::Buffer aside = out_.plan.buffers[b];
    aside.kind = runtime::BufferKind::Activation;
    aside.info.name.clear();
    out_.plan.buffers.push_back(std::move(aside));
    const uint32_t tmp = uint32_t(out_.plan.buffers.size() - 1);
    addCopy(b, tmp, label);
    src[i] = tmp;
  }
  for (size_t i = 0; i < src.size(); ++i)
    if (src[i] != to[i])
      addCopy(src[i], to[i], label);
}

Expected<std::vector<Value>> Lowerer::argValues(const CallNode &call, size_t first) const {
  std::vector<Value> vals;
  for (size_t i = first; i < call.args().size(); ++i) {
    TS_ASSIGN_OR_RETURN(const Value *v, valueOf(*call.args()[i]));
    vals.push_back(*v);
  }
  return vals;
}

std::vector<uint32_t> Lowerer::flat(const Value &v) {
  std::vector<uint32_t> out;
  flattenInto(v, out);
  return out;
}

Status Lowerer::lowerIf(const CallNode &call) {
  const std::string what = describeNode(call);
  TS_ASSIGN_OR_RETURN(const Value *cond, valueOf(*call.args()[0]));
  TS_ASSIGN_OR_RETURN(std::vector<Value> args, argValues(call, 3));
  TS_ASSIGN_OR_RETURN(Value result, newValue(call.type(), call));
  const std::vector<uint32_t> into = flat(result);
  const size_t toElse = addControlStep(runtime::StepKind::Jump, {uint32_t(cond->buffer)},
                                       what + ": unless the condition holds, go to else");
  TS_ASSIGN_OR_RETURN(Value thenOut, lowerBody(*call.args()[1]->as<FunctionNode>(), args));
  copyInto(flat(thenOut), into, what + ": then result");
  const size_t toEnd = addControlStep(runtime::StepKind::Jump, {}, what + ": skip else");
  out_.plan.steps[toElse].target = uint32_t(out_.plan.steps.size());
  TS_ASSIGN_OR_RETURN(Value elseOut, lowerBody(*call.args()[2]->as<FunctionNode>(), args));
  copyInto(flat(elseOut), into, what + ": else result");
  out_.plan.steps[toEnd].target = uint32_t(out_.plan.steps.size());
  values_[&call] = std::move(result);
  return okStatus();
}

Status Lowerer::lowerLoop(const CallNode &call) {
  const std::string what = describeNode(call);
  const auto &body = *call.args()[2]->as<FunctionNode>();
  const size_t n = size_t(call.attrs().getInt("carried")),
               k = size_t(call.attrs().getInt("scans"));
  TS_ASSIGN_OR_RETURN(const Value *trip, valueOf(*call.args()[0]));
  TS_ASSIGN_OR_RETURN(const Value *condInit, valueOf(*call.args()[1]));
  TS_ASSIGN_OR_RETURN(std::vector<Value> vals, argValues(call, 3));
  // The carried values, then the scan outputs and their count.
  TS_ASSIGN_OR_RETURN(Value result, newValue(call.type(), call));
  const std::vector<Value> carried(result.fields.begin(), result.fields.begin() + ptrdiff_t(n));
  for (size_t i = 0; i < n; ++i)
    copyInto(flat(vals[i]), flat(carried[i]), what + ": initial value");
  if (!zero_.valid())
    zero_ = Tensor::fromInts(DType::I64, {}, std::vector<int64_t>{0});
  const uint32_t iter = addBuffer(runtime::BufferKind::Activation, Type::tensor(DType::I64, {}));
  addCopy(addConstant(zero_, "zero"), iter, what + ": iteration 0");
  const uint32_t cond = addBuffer(runtime::BufferKind::Activation, body.params()[1]->type());
  addCopy(uint32_t(condInit->buffer), cond, what + ": initial condition");

  const size_t head = addControlStep(runtime::StepKind::LoopTest,
                                     {iter, uint32_t(trip->buffer), cond}, what + ": test");
  std::vector<Value> bodyArgs{Value{iter, {}}, Value{cond, {}}};
  bodyArgs.insert(bodyArgs.end(), carried.begin(), carried.end());
  bodyArgs.insert(bodyArgs.end(), vals.begin() + ptrdiff_t(n), vals.end());
  TS_ASSIGN_OR_RETURN(Value out, lowerBody(body, bodyArgs));
  // This iteration's slices into their rows first: a slice may be a
  // carried value, which the copies below overwrite.
  for (size_t j = 0; j < k; ++j)
    addCopyAt(uint32_t(out.fields[1 + n + j].buffer), iter, uint32_t(result.fields[n + j].buffer),
              fmt::format("{}: scan output {}", what, j));
  std::vector<uint32_t> from{uint32_t(out.fields[0].buffer)}, back{cond};
  for (size_t i = 0; i < n; ++i) {
    flattenInto(out.fields[1 + i], from);
    flattenInto(carried[i], back);
  }
  copyInto(from, back, what + ": next iteration");
  addControlStep(runtime::StepKind::Increment, {iter}, what + ": iteration + 1");
  const size_t jump = addControlStep(runtime::StepKind::Jump, {}, what + ": repeat");
  out_.plan.steps[jump].target = uint32_t(head);
  out_.plan.steps[head].target = uint32_t(out_.plan.steps.size());
  if (k > 0) { // the iterations run: the scan outputs' rows
    const Value &count = result.fields.back();
    addCopy(iter, uint32_t(count.buffer), what + ": iterations");
    // The count is learnt here, unless the inputs give it (a Scan's
    // sequence length, or a dim computed from theirs): then it is known
    // before the loop, which runs that often.
    if (const int64_t dim = call.attrs().getInt("count"); ir::isSymbol(dim)) {
      const uint32_t sym = planSymbol(dim);
      bool given = out_.plan.symbols[sym].derived();
      for (uint32_t b : out_.plan.inputs)
        for (int64_t d : out_.plan.buffers[b].info.shape)
          given = given || (runtime::isSymbolDim(d) && runtime::symbolIndexOf(d) == sym);
      if (!given)
        setSymbol(dim, count, what + ": iterations");
    }
  }
  values_[&call] = std::move(result);
  return okStatus();
}

Status Lowerer::lowerSequenceCall(const CallNode &call) {
  TS_RETURN_IF_ERROR(addDerivedDims(call.type(), call));
  runtime::Step step;
  step.kind = runtime::StepKind::Sequence;
  step.symbol = call.op()->name;
  if (step.symbol == "concat_from_seq") {
    const int64_t rank = int64_t(call.type().rank());
    int64_t axis = call.attrs().getInt("axis");
    if (axis < 0)
      axis += rank;
    step.target = uint32_t(axis);
    if (call.attrs().getBool("new_axis"))
      step.symbol = "stack_from_seq";
  }
  TS_ASSIGN_OR_RETURN(step.args, argBuffers(call));
  step.numInputs = uint32_t(step.args.size());
  TS_ASSIGN_OR_RETURN(Value result, newValue(call.type(), call));
  flattenInto(result, step.args);
  if (call.type().isTensor()) // an element's dims: set by this step
    for (int64_t d : call.type().shape())
      if (ir::isSymbol(d) && ir::symbolInfo(d).runtime)
        out_.plan.symbols[planSymbol(d)].runtime = true;
  step.label = describeNode(call);
  out_.plan.steps.push_back(std::move(step));
  values_[&call] = std::move(result);
  return okStatus();
}

} // namespace tessera::compile::detail
