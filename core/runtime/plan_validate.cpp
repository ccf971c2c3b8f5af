//===- runtime/plan_validate.cpp - Executor plan: validation ------------===//
//
// validatePlan checks every id, index and range a session will trust
// before it runs a plan read from an artifact.
//
//===----------------------------------------------------------------------===//
#include "runtime/plan.h"
#include "runtime/plan_internal.h"
#include "tessera/c/dtype.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <map>

namespace tessera::runtime {

using plan_detail::stepName;

namespace {

const char *kindName(BufferKind k) {
  switch (k) {
  case BufferKind::Input: return "input";
  case BufferKind::Output: return "output";
  case BufferKind::Constant: return "constant";
  case BufferKind::Activation: return "activation";
  }
  return "?";
}


/// A one-element buffer of a bool or integer dtype (i64 only when `i64`).
bool isScalarOf(const TensorInfo &t, bool i64) {
  uint64_t n = 1;
  for (int64_t d : t.shape)
    n *= uint64_t(d < 0 ? 0 : d);
  if (n != 1 || t.dtype.lanes != 1)
    return false;
  if (i64)
    return t.dtype.code == kDLInt && t.dtype.bits == 64;
  return t.dtype.code == TESSERA_DL_BOOL || t.dtype.code == kDLInt || t.dtype.code == kDLUInt;
}

/// Whether `step` sets run-time symbol k: a SetSymbol step, or a Sequence
/// step whose output (an element taken out of a sequence) has k as a dim.
bool setsSymbol(const Plan &plan, const Step &step, size_t k) {
  if (step.kind == StepKind::SetSymbol)
    return step.target == k;
  if (step.kind != StepKind::Sequence || step.args.size() <= step.numInputs ||
      step.args.back() >= plan.buffers.size())
    return false;
  for (int64_t d : plan.buffers[step.args.back()].info.shape)
    if (isSymbolDim(d) && symbolIndexOf(d) == k)
      return true;
  return false;
}

/// Whether a step before the SetSymbol of run-time symbol k writes a buffer
/// whose shape holds k or a symbol computed from it, other than rows of a
/// loop's scan output: memory for such a symbol without an upper bound can
/// only grow (SessionImpl::grow) before it is written.
bool writtenBeforeSet(const Plan &plan, size_t k) {
  const std::vector<bool> follows = symbolsFollowing(plan, k);
  auto sized = [&](uint32_t b) {
    if (b >= plan.buffers.size())
      return false;
    for (int64_t d : plan.buffers[b].info.shape)
      if (isSymbolDim(d) && symbolIndexOf(d) < follows.size() && follows[symbolIndexOf(d)])
        return true;
    return false;
  };
  for (const Step &step : plan.steps) {
    if (setsSymbol(plan, step, k))
      return false;
    const bool rows = step.kind == StepKind::Copy && step.args.size() == 3;
    for (size_t a = step.numInputs; a < step.args.size(); ++a)
      if (!rows && sized(step.args[a]))
        return true;
  }
  return false;
}

/// A copy into a row: args {from, row, to}, `row` one i64, `to` of shape
/// [rows, from's shape...] (a loop's scan output) and from's dtype.
Status validateRowCopy(const Plan &plan, size_t s) {
  const Step &step = plan.steps[s];
  const TensorInfo &from = plan.buffers[step.args[0]].info, &to = plan.buffers[step.args[2]].info;
  if (!isScalarOf(plan.buffers[step.args[1]].info, true))
    return Error::format("{}: the row {} must be one i64", stepName(plan, s),
                         plan.buffers[step.args[1]].info.str());
  if (to.shape.size() != from.shape.size() + 1 || to.dtype.code != from.dtype.code ||
      to.dtype.bits != from.dtype.bits || to.dtype.lanes != from.dtype.lanes ||
      !std::equal(from.shape.begin(), from.shape.end(), to.shape.begin() + 1))
    return Error::format("{}: copies {} into a row of {}, which is not {}[rows, {}]",
                         stepName(plan, s), from.str(), to.str(), dtypeString(from.dtype),
                         fmt::join(from.shape, ", "));
  return okStatus();
}

/// A Sequence step: a known op, one output, sequences where the op takes
/// and makes them (ir/ops/sequence.cpp), positions one integer each.
Status validateSequenceStep(const Plan &plan, size_t s) {
  const Step &step = plan.steps[s];
  auto fail = [&](std::string what) { return Error::format("{}: {}", stepName(plan, s), what); };
  if (!isSequenceStepOp(step.symbol))
    return fail(fmt::format("unknown sequence op '{}'", step.symbol));
  if (step.args.size() != step.numInputs + 1)
    return fail("a sequence step has one output");
  const std::string &op = step.symbol;
  const size_t n = step.numInputs;
  auto info = [&](size_t a) -> const TensorInfo & { return plan.buffers[step.args[a]].info; };
  const bool joins = op == "concat_from_seq" || op == "stack_from_seq";
  const bool makesSequence = op != "seq_at" && op != "seq_length" && !joins;
  if (info(n).sequence != makesSequence)
    return fail(fmt::format("the output {} must {}be a sequence", info(n).str(),
                            makesSequence ? "" : "not "));
  const bool takesSequence = op != "seq_empty" && op != "seq_construct";
  const size_t minIn = op == "seq_empty" ? 0 : op == "seq_insert" || op == "seq_at" ? 2 : 1;
  const size_t maxIn = op == "seq_empty" ? 0
                       : op == "seq_construct" ? SIZE_MAX
                       : op == "seq_insert" ? 3
                       : op == "seq_erase" || op == "seq_at" ? 2
                                                              : 1;
  if (n < minIn || n > maxIn)
    return fail(fmt::format("{} takes {}..{} inputs, not {}", op, minIn, maxIn, n));
  if (joins && step.target >= std::max<size_t>(info(n).shape.size(), 1))
    return fail(fmt::format("axis {} is out of range for the result {}", step.target,
                            plan.str(info(n))));
  for (size_t a = 0; a < n; ++a) {
    const bool wantSequence = takesSequence && a == 0;
    if (info(a).sequence != wantSequence)
      return fail(fmt::format("input {} ({}) must {}be a sequence", a, info(a).str(),
                              wantSequence ? "" : "not "));
    const bool position = (op == "seq_insert" && a == 2) || ((op == "seq_erase" || op == "seq_at") && a == 1);
    if (position && !isScalarOf(info(a), false))
      return fail(fmt::format("the position {} is not one integer", info(a).str()));
  }
  return okStatus();
}

Status validateControlStep(const Plan &plan, size_t s) {
  const Step &step = plan.steps[s];
  auto fail = [&](std::string what) { return Error::format("{}: {}", stepName(plan, s), what); };
  auto arg = [&](size_t a) -> const TensorInfo & { return plan.buffers[step.args[a]].info; };
  if ((step.kind == StepKind::Jump || step.kind == StepKind::LoopTest) &&
      step.target > plan.steps.size())
    return fail(fmt::format("target {} out of range ({} steps)", step.target, plan.steps.size()));
  if (step.numInputs != step.args.size())
    return fail("a control step has no outputs");
  switch (step.kind) {
  case StepKind::Jump:
    if (step.args.size() > 1)
      return fail(fmt::format("a jump takes at most 1 condition, not {}", step.args.size()));
    if (step.args.size() == 1 && !isScalarOf(arg(0), false))
      return fail(fmt::format("the condition {} is not one bool or integer", arg(0).str()));
    break;
  case StepKind::LoopTest:
    if (step.args.size() != 3)
      return fail(fmt::format("a loop test takes 3 arguments, not {}", step.args.size()));
    if (!isScalarOf(arg(0), true) || !isScalarOf(arg(1), true))
      return fail(fmt::format("the iteration {} and trip count {} must be one i64 each",
                              arg(0).str(), arg(1).str()));
    if (!isScalarOf(arg(2), false))
      return fail(fmt::format("the condition {} is not one bool or integer", arg(2).str()));
    break;
  case StepKind::Increment:
    if (step.args.size() != 1 || !isScalarOf(arg(0), true) ||
        plan.buffers[step.args[0]].kind != BufferKind::Activation)
      return fail("an increment takes one i64 activation of one element");
    break;
  case StepKind::SetSymbol:
    if (step.args.size() != 1 || !isScalarOf(arg(0), true))
      return fail("setting a symbol takes one i64 of one element");
    if (step.target >= plan.symbols.size() || !plan.symbols[step.target].runtime)
      return fail(fmt::format("symbol {} is not a run-time symbol of the plan", step.target));
    break;
  default: break;
  }
  return okStatus();
}

} // namespace

Status validatePlan(const Plan &plan) {
  const size_t nb = plan.buffers.size();
  const std::vector<int64_t> nominal = plan.nominalSymbolValues();
  for (size_t k = 0; k < plan.symbols.size(); ++k) {
    const PlanSymbol &sym = plan.symbols[k];
    if (sym.name.empty() || sym.lo < 0 || (sym.hi >= 0 && sym.hi < sym.lo))
      return Error::format("symbol {} ('{}'): bounds {}..{} are not valid", k, sym.name, sym.lo,
                           sym.hi);
    if (sym.derived()) {
      for (const PlanSymbol::Term &t : sym.terms)
        for (uint32_t j : t.symbols)
          if (j >= k)
            return Error::format("symbol {} ('{}') is computed from symbol {}, which is not an "
                                 "earlier one",
                                 k, sym.name, j);
      continue;
    }
    if (sym.divisor < 0 || !sym.terms.empty() || sym.constant != 0 || sym.clamped())
      return Error::format("symbol {} ('{}'): divisor {} is not valid", k, sym.name, sym.divisor);
    if (sym.runtime) {
      bool set = false;
      for (const Step &step : plan.steps)
        set = set || setsSymbol(plan, step, k);
      if (!set)
        return Error::format("run-time symbol {} ('{}') is set by no step, so no run can give "
                             "its value",
                             k, sym.name);
      if (sym.hi < 0 && writtenBeforeSet(plan, k))
        return Error::format("run-time symbol {} ('{}') has no upper bound to plan memory for, "
                             "and a step writes a buffer it sizes before its value is set",
                             k, sym.name);
      continue;
    }
    bool bound = false;
    for (uint32_t id : plan.inputs)
      if (id < nb)
        for (int64_t d : plan.buffers[id].info.shape)
          bound = bound || d == symbolDim(k);
    if (!bound)
      return Error::format("symbol {} ('{}') is no input's dim, so no run can give its value", k,
                           sym.name);
  }
  for (size_t b = 0; b < nb; ++b) {
    const Buffer &buf = plan.buffers[b];
    auto fail = [&](std::string what) {
      return Error::format("buffer {} ({} {}): {}", b, kindName(buf.kind), plan.str(buf.info),
                           what);
    };
    if (buf.info.dtype.lanes != 1 || dtypeString(buf.info.dtype).starts_with("dtype("))
      return fail(fmt::format("unsupported dtype {}", dtypeString(buf.info.dtype)));
    for (int64_t d : buf.info.shape)
      if (isSymbolDim(d) && symbolIndexOf(d) >= plan.symbols.size())
        return fail(fmt::format("dimension {} is no symbol ({} symbols)", d, plan.symbols.size()));
    if (buf.kind == BufferKind::Constant && buf.info.symbolic())
      return fail("a constant cannot have symbolic dims");
    const uint64_t bytes = buf.info.resolved(nominal).bytes();
    switch (buf.kind) {
    case BufferKind::Input:
      if (buf.index >= plan.inputs.size() || plan.inputs[buf.index] != b)
        return fail(fmt::format("model input {} does not name this buffer", buf.index));
      break;
    case BufferKind::Output:
      if (buf.index >= plan.outputs.size() || plan.outputs[buf.index] != b)
        return fail(fmt::format("model output {} does not name this buffer", buf.index));
      break;
    case BufferKind::Constant:
      if (buf.offset % kBufferAlignment != 0)
        return fail(fmt::format("offset {} is not {}-byte aligned", buf.offset, kBufferAlignment));
      if (buf.offset > plan.weightsBytes || bytes > plan.weightsBytes - buf.offset)
        return fail(fmt::format("bytes [{}, {}) outside the weights ({} bytes)", buf.offset,
                                buf.offset + bytes, plan.weightsBytes));
      break;
    case BufferKind::Activation:
      if (buf.offset % kBufferAlignment != 0)
        return fail(fmt::format("offset {} is not {}-byte aligned", buf.offset, kBufferAlignment));
      if (buf.offset > plan.arenaBytes || bytes > plan.arenaBytes - buf.offset)
        return fail(fmt::format("bytes [{}, {}) outside the arena ({} bytes)", buf.offset,
                                buf.offset + bytes, plan.arenaBytes));
      break;
    }
  }

  auto checkList = [&](const std::vector<uint32_t> &list, BufferKind kind,
                       const char *what) -> Status {
    for (size_t i = 0; i < list.size(); ++i) {
      if (list[i] >= nb)
        return Error::format("model {} {}: buffer {} out of range ({} buffers)", what, i, list[i],
                             nb);
      const Buffer &buf = plan.buffers[list[i]];
      if (buf.kind != kind || buf.index != i)
        return Error::format("model {} {}: buffer {} is {} {} {}, not {} {}", what, i, list[i],
                             kindName(buf.kind), buf.index, buf.info.str(), what, i);
    }
    return okStatus();
  };
  TS_RETURN_IF_ERROR(checkList(plan.inputs, BufferKind::Input, "input"));
  TS_RETURN_IF_ERROR(checkList(plan.outputs, BufferKind::Output, "output"));

  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const Step &step = plan.steps[s];
    auto fail = [&](std::string what) { return Error::format("{}: {}", stepName(plan, s), what); };
    if (step.numInputs > step.args.size())
      return fail(fmt::format("{} inputs but only {} arguments", step.numInputs, step.args.size()));
    for (size_t a = 0; a < step.args.size(); ++a) {
      uint32_t b = step.args[a];
      if (b >= nb)
        return fail(fmt::format("buffer {} out of range ({} buffers)", b, nb));
      BufferKind k = plan.buffers[b].kind;
      if (a >= step.numInputs && (k == BufferKind::Input || k == BufferKind::Constant))
        return fail(fmt::format("writes {} buffer {}", kindName(k), b));
    }
    switch (step.kind) {
    case StepKind::Host:
      if (step.symbol.empty())
        return fail("host step without a symbol");
      break;
    case StepKind::External:
      if (step.symbol.empty())
        return fail("external step without a symbol");
      if (step.module < 0 || size_t(step.module) >= plan.modules.size())
        return fail(
            fmt::format("module {} out of range ({} modules)", step.module, plan.modules.size()));
      for (uint32_t k : step.symbols)
        if (k >= plan.symbols.size())
          return fail(fmt::format("symbol {} out of range ({} symbols)", k, plan.symbols.size()));
      break;
    case StepKind::Copy: {
      if (step.args.size() == 3 && step.numInputs == 2) {
        TS_RETURN_IF_ERROR(validateRowCopy(plan, s));
        break;
      }
      if (step.args.size() != 2 || step.numInputs != 1)
        return fail(fmt::format("a copy takes 1 input and 1 output (or an input and a row index "
                                "and 1 output), not {} and {}",
                                step.numInputs, step.args.size() - step.numInputs));
      const TensorInfo from = plan.buffers[step.args[0]].info.resolved(nominal),
                       to = plan.buffers[step.args[1]].info.resolved(nominal);
      if (from.sequence != to.sequence || (from.sequence && from.dtype.code != to.dtype.code))
        return fail(fmt::format("copies {} into {}", from.str(), to.str()));
      // A branch's result into an if's whose dim is a join (a run-time
      // symbol): planned for the larger, copied at this run's size.
      const bool joined = plan.buffers[step.args[1]].info.symbolic();
      if (joined ? from.bytes() > to.bytes() : from.bytes() != to.bytes())
        return fail(fmt::format("copies {} ({} bytes) into {} ({} bytes)", from.str(), from.bytes(),
                                to.str(), to.bytes()));
      break;
    }
    case StepKind::Jump:
    case StepKind::LoopTest:
    case StepKind::Increment:
    case StepKind::SetSymbol: TS_RETURN_IF_ERROR(validateControlStep(plan, s)); break;
    case StepKind::Sequence: TS_RETURN_IF_ERROR(validateSequenceStep(plan, s)); break;
    }
  }
  for (size_t m = 0; m < plan.modules.size(); ++m)
    if (plan.modules[m].typeKey.empty())
      return Error::format("module {}: empty type key", m);
  return okStatus();
}

} // namespace tessera::runtime
