//===- runtime/plan.cpp - Executor plan: memory, validation, JSON ---------===//
//
// planMemory assigns arena offsets by liveness (best fit over a free list of
// 64-byte aligned ranges); validatePlan checks every id, index and range a
// session will trust; the JSON form is what the artifact's plan section
// holds. nlohmann/json stays private to this file.
//
//===----------------------------------------------------------------------===//
#include "runtime/plan.h"
#include "tessera/c/dtype.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>
#include <map>

namespace tessera::runtime {

namespace {

uint64_t alignUp(uint64_t v) {
  return (v + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
}


struct DtypeName {
  const char *name;
  DLDataType type;
};

constexpr DtypeName kDtypes[] = {
    {"f32", {kDLFloat, 32, 1}},  {"f16", {kDLFloat, 16, 1}}, {"bf16", {kDLBfloat, 16, 1}},
    {"f64", {kDLFloat, 64, 1}},  {"i8", {kDLInt, 8, 1}},     {"i16", {kDLInt, 16, 1}},
    {"i32", {kDLInt, 32, 1}},    {"i64", {kDLInt, 64, 1}},   {"u8", {kDLUInt, 8, 1}},
    {"u16", {kDLUInt, 16, 1}},   {"u32", {kDLUInt, 32, 1}},  {"u64", {kDLUInt, 64, 1}},
    {"bool", {TESSERA_DL_BOOL, 8, 1}},
};

bool sameType(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

const char *kindName(BufferKind k) {
  switch (k) {
  case BufferKind::Input: return "input";
  case BufferKind::Output: return "output";
  case BufferKind::Constant: return "constant";
  case BufferKind::Activation: return "activation";
  }
  return "?";
}

/// "step 3 (conv2d 'c1')" or "step 3" without a label.
std::string stepName(const Plan &plan, size_t s) {
  const std::string &label = plan.steps[s].label;
  return label.empty() ? fmt::format("step {}", s) : fmt::format("step {} ({})", s, label);
}

} // namespace

//===----------------------------------------------------------------------===//
// Tensor info and dtypes
//===----------------------------------------------------------------------===//

uint64_t TensorInfo::bytes() const {
  if (sequence)
    return 0;
  uint64_t n = 1;
  for (int64_t d : shape)
    n *= uint64_t(d < 0 ? 0 : d);
  const uint64_t elem =
      dtype.code == TESSERA_DL_BOOL ? 1 : (uint64_t(dtype.bits) * dtype.lanes + 7) / 8;
  return n * elem;
}

/// "seq(f32[_, _])", "seq(f32)".
std::string sequenceStr(const TensorInfo &info) {
  if (info.elementRank < 0)
    return fmt::format("seq({})", dtypeString(info.dtype));
  std::vector<std::string> dims(size_t(info.elementRank), "_");
  return fmt::format("seq({}[{}])", dtypeString(info.dtype), fmt::join(dims, ", "));
}

bool isSequenceStepOp(std::string_view op) {
  for (const char *o : {"seq_empty", "seq_construct", "seq_insert", "seq_erase", "seq_at",
                        "seq_length", "concat_from_seq", "stack_from_seq"})
    if (op == o)
      return true;
  return false;
}

std::string TensorInfo::str() const {
  if (sequence)
    return sequenceStr(*this);
  std::vector<std::string> dims;
  for (int64_t d : shape)
    dims.push_back(isSymbolDim(d) ? fmt::format("${}", symbolIndexOf(d)) : std::to_string(d));
  return fmt::format("{}[{}]", dtypeString(dtype), fmt::join(dims, ", "));
}

bool TensorInfo::symbolic() const {
  return std::any_of(shape.begin(), shape.end(), isSymbolDim);
}

TensorInfo TensorInfo::resolved(const std::vector<int64_t> &values) const {
  TensorInfo out = *this;
  for (int64_t &d : out.shape)
    if (isSymbolDim(d))
      d = symbolIndexOf(d) < values.size() ? values[symbolIndexOf(d)] : 0;
  return out;
}

std::string Plan::str(const TensorInfo &info) const {
  if (info.sequence)
    return sequenceStr(info);
  std::vector<std::string> dims;
  for (int64_t d : info.shape)
    dims.push_back(!isSymbolDim(d)                      ? std::to_string(d)
                   : symbolIndexOf(d) < symbols.size() ? symbols[symbolIndexOf(d)].name
                                                       : fmt::format("${}", symbolIndexOf(d)));
  return fmt::format("{}[{}]", dtypeString(info.dtype), fmt::join(dims, ", "));
}

std::vector<int64_t> Plan::nominalSymbolValues() const {
  std::vector<int64_t> v;
  for (const PlanSymbol &s : symbols)
    v.push_back(s.hi >= 0 ? s.hi : s.lo);
  std::vector<int64_t> derived = v;
  if (deriveSymbolValues(symbols, derived).ok()) // else validatePlan says why
    v = std::move(derived);
  return v;
}

std::string dtypeString(DLDataType t) {
  for (const auto &d : kDtypes)
    if (sameType(d.type, t))
      return d.name;
  return fmt::format("dtype(code {}, bits {}, lanes {})", int(t.code), int(t.bits), int(t.lanes));
}

Expected<DLDataType> parseDtypeString(std::string_view s) {
  for (const auto &d : kDtypes)
    if (s == d.name)
      return d.type;
  return Error::format("unknown dtype '{}' (expected one of f32, f16, bf16, f64, i8, i16, i32, "
                       "i64, u8, u16, u32, u64, bool)",
                       s);
}

//===----------------------------------------------------------------------===//
// Memory planning
//===----------------------------------------------------------------------===//

namespace {

/// The arena's free ranges, offset -> size, coalesced; the arena grows at
/// its end when no free range fits.
class ArenaAllocator {
public:
  uint64_t allocate(uint64_t size) {
    // Best fit: the smallest free range that holds `size` (lowest offset on ties).
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it)
      if (it->second >= size && (best == free_.end() || it->second < best->second))
        best = it;
    if (best != free_.end()) {
      uint64_t offset = best->first, left = best->second - size;
      free_.erase(best);
      if (left > 0)
        free_[offset + size] = left;
      return offset;
    }
    // Grow: a free range that ends at the arena's end is extended.
    if (!free_.empty()) {
      auto last = std::prev(free_.end());
      if (last->first + last->second == end_) {
        uint64_t offset = last->first;
        free_.erase(last);
        end_ = offset + size;
        return offset;
      }
    }
    uint64_t offset = end_;
    end_ += size;
    return offset;
  }

  void release(uint64_t offset, uint64_t size) {
    auto [it, inserted] = free_.emplace(offset, size);
    // Merge with the next and the previous range.
    auto next = std::next(it);
    if (next != free_.end() && it->first + it->second == next->first) {
      it->second += next->second;
      free_.erase(next);
    }
    if (it != free_.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == it->first) {
        prev->second += it->second;
        free_.erase(it);
      }
    }
  }

  uint64_t size() const { return end_; }

private:
  std::map<uint64_t, uint64_t> free_;
  uint64_t end_ = 0;
};

} // namespace

std::vector<bool> symbolsFollowing(const Plan &plan, size_t k) {
  std::vector<bool> follows(plan.symbols.size(), false);
  follows[k] = true;
  for (size_t j = k + 1; j < plan.symbols.size(); ++j)
    for (const PlanSymbol::Term &t : plan.symbols[j].terms)
      for (uint32_t i : t.symbols)
        follows[j] = follows[j] || (i < j && follows[i]);
  return follows;
}

Expected<std::vector<LiveRange>> liveRanges(const Plan &plan) {
  constexpr int64_t kNever = -1;
  const size_t nb = plan.buffers.size();
  std::vector<int64_t> firstWrite(nb, kNever), lastRead(nb, kNever);
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const Step &step = plan.steps[s];
    for (size_t a = 0; a < step.args.size(); ++a) {
      uint32_t b = step.args[a];
      if (b >= nb)
        return Error::format("{}: buffer {} out of range ({} buffers)", stepName(plan, s), b, nb);
      if (plan.buffers[b].kind != BufferKind::Activation)
        continue;
      if (a < step.numInputs) {
        if (firstWrite[b] == kNever)
          return Error::format("{}: reads activation buffer {} before any step writes it",
                               stepName(plan, s), b);
        lastRead[b] = int64_t(s);
      } else if (firstWrite[b] == kNever) {
        firstWrite[b] = int64_t(s);
      }
    }
  }

  // A buffer written but never read lives for its writing step; one never
  // used lives at step 0 (it still gets distinct bytes, so that every
  // activation range is valid).
  std::vector<LiveRange> live(nb);
  for (uint32_t b = 0; b < nb; ++b) {
    live[b].first = firstWrite[b] == kNever ? 0 : firstWrite[b];
    live[b].last = std::max(live[b].first, lastRead[b]);
  }
  // A loop is the range [target, s] of a backward jump at step s. A buffer
  // used in it and outside it must keep its bytes through every iteration:
  // its range widens to the whole loop (repeated for nested loops).
  std::vector<std::pair<int64_t, int64_t>> loops;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const Step &step = plan.steps[s];
    if ((step.kind == StepKind::Jump || step.kind == StepKind::LoopTest) && step.target <= s)
      loops.emplace_back(int64_t(step.target), int64_t(s));
  }
  for (bool changed = !loops.empty(); changed;) {
    changed = false;
    for (const auto &[head, back] : loops)
      for (LiveRange &r : live) {
        const bool used = r.first <= back && r.last >= head;
        const bool crosses = r.first < head || r.last > back;
        const bool whole = r.first <= head && r.last >= back;
        if (used && crosses && !whole) {
          r.first = std::min(r.first, head);
          r.last = std::max(r.last, back);
          changed = true;
        }
      }
  }
  return live;
}

Status planMemory(Plan &plan, const std::vector<int64_t> &symbolValues) {
  const size_t nb = plan.buffers.size();
  const std::vector<int64_t> values =
      symbolValues.empty() ? plan.nominalSymbolValues() : symbolValues;
  auto sizeOf = [&](uint32_t b) {
    const TensorInfo &info = plan.buffers[b].info;
    return plan.symbols.empty() || !info.symbolic() ? info.bytes() : info.resolved(values).bytes();
  };
  TS_ASSIGN_OR_RETURN(std::vector<LiveRange> live, liveRanges(plan));

  // Buffers that start (end) at each step.
  const size_t ns = std::max<size_t>(plan.steps.size(), 1);
  std::vector<std::vector<uint32_t>> starts(ns), ends(ns);
  plan.activationBytesNoReuse = 0;
  for (uint32_t b = 0; b < nb; ++b) {
    if (plan.buffers[b].kind != BufferKind::Activation)
      continue;
    starts[size_t(live[b].first)].push_back(b);
    ends[size_t(live[b].last)].push_back(b);
    plan.activationBytesNoReuse += alignUp(sizeOf(b));
  }

  ArenaAllocator arena;
  for (size_t s = 0; s < ns; ++s) {
    // Larger buffers first: fewer holes.
    std::stable_sort(starts[s].begin(), starts[s].end(), [&](uint32_t a, uint32_t b) {
      return sizeOf(a) > sizeOf(b);
    });
    for (uint32_t b : starts[s])
      plan.buffers[b].offset =
          arena.allocate(std::max<uint64_t>(alignUp(sizeOf(b)), kBufferAlignment));
    // Freed after the step: a step's inputs never share bytes with its outputs.
    for (uint32_t b : ends[s])
      arena.release(plan.buffers[b].offset,
                    std::max<uint64_t>(alignUp(sizeOf(b)), kBufferAlignment));
  }
  plan.arenaBytes = arena.size();
  return okStatus();
}

//===----------------------------------------------------------------------===//
// Validation
//===----------------------------------------------------------------------===//

namespace {

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

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

namespace {

using nlohmann::json;

const char *kBufferKinds[] = {"input", "output", "constant", "activation"};
const char *kStepKinds[] = {"host",      "external",  "copy",       "jump",
                            "loop_test", "increment", "set_symbol", "sequence"};

json infoJson(const TensorInfo &info) {
  json j = json::object();
  if (!info.name.empty())
    j["name"] = info.name;
  j["dtype"] = dtypeString(info.dtype);
  j["shape"] = info.shape;
  if (info.sequence)
    j["sequence_rank"] = info.elementRank; // a sequence, its elements' rank (-1: any)
  return j;
}

/// Checked reads; errors name the field by its JSON path.
class Reader {
public:
  static Expected<const json *> field(const json &obj, const std::string &path, const char *key,
                                      bool required = true) {
    auto it = obj.find(key);
    if (it == obj.end()) {
      if (required)
        return Error::format("{}: missing field '{}'", path, key);
      return static_cast<const json *>(nullptr);
    }
    return &*it;
  }

  static Expected<uint64_t> u64(const json &j, const std::string &path) {
    if (!j.is_number_unsigned() && !(j.is_number_integer() && j.get<int64_t>() >= 0))
      return Error::format("{}: expected an unsigned integer, got {}", path, j.dump());
    return j.get<uint64_t>();
  }

  static Expected<uint64_t> u64Field(const json &obj, const std::string &path, const char *key,
                                     std::optional<uint64_t> fallback = std::nullopt) {
    TS_ASSIGN_OR_RETURN(const json *f, field(obj, path, key, !fallback.has_value()));
    if (!f)
      return *fallback;
    return u64(*f, path + "." + key);
  }

  static Expected<std::string> str(const json &obj, const std::string &path, const char *key,
                                   bool required = true) {
    TS_ASSIGN_OR_RETURN(const json *f, field(obj, path, key, required));
    if (!f)
      return std::string();
    if (!f->is_string())
      return Error::format("{}.{}: expected a string, got {}", path, key, f->dump());
    return f->get<std::string>();
  }

  static Expected<std::vector<uint32_t>> ids(const json &obj, const std::string &path,
                                             const char *key) {
    TS_ASSIGN_OR_RETURN(const json *f, field(obj, path, key));
    const std::string p = path.empty() ? std::string(key) : path + "." + key;
    if (!f->is_array())
      return Error::format("{}: expected an array, got {}", p, f->dump());
    std::vector<uint32_t> out;
    for (size_t i = 0; i < f->size(); ++i) {
      TS_ASSIGN_OR_RETURN(uint64_t v, u64((*f)[i], fmt::format("{}[{}]", p, i)));
      if (v > std::numeric_limits<uint32_t>::max())
        return Error::format("{}[{}]: {} is too large", p, i, v);
      out.push_back(uint32_t(v));
    }
    return out;
  }

  static Expected<const json *> array(const json &obj, const char *key) {
    TS_ASSIGN_OR_RETURN(const json *f, field(obj, "plan", key));
    if (!f->is_array())
      return Error::format("plan.{}: expected an array", key);
    return f;
  }

  template <size_t N>
  static Expected<size_t> enumField(const json &obj, const std::string &path, const char *key,
                                    const char *const (&names)[N]) {
    TS_ASSIGN_OR_RETURN(std::string s, str(obj, path, key));
    for (size_t i = 0; i < N; ++i)
      if (s == names[i])
        return i;
    return Error::format("{}.{}: unknown value '{}' (expected {})", path, key, s,
                         fmt::join(names, ", "));
  }
};

Expected<TensorInfo> parseInfo(const json &j, const std::string &path) {
  TensorInfo info;
  TS_ASSIGN_OR_RETURN(info.name, Reader::str(j, path, "name", false));
  TS_ASSIGN_OR_RETURN(std::string dtype, Reader::str(j, path, "dtype"));
  auto t = parseDtypeString(dtype);
  if (!t.ok())
    return Error::format("{}.dtype: {}", path, t.error().str());
  info.dtype = *t;
  TS_ASSIGN_OR_RETURN(const json *shape, Reader::field(j, path, "shape"));
  if (!shape->is_array())
    return Error::format("{}.shape: expected an array, got {}", path, shape->dump());
  for (size_t i = 0; i < shape->size(); ++i) {
    const json &d = (*shape)[i];
    if (d.is_number_integer() && d.get<int64_t>() < 0) { // a symbol (validatePlan checks which)
      info.shape.push_back(d.get<int64_t>());
      continue;
    }
    TS_ASSIGN_OR_RETURN(uint64_t v, Reader::u64(d, fmt::format("{}.shape[{}]", path, i)));
    if (v > uint64_t(std::numeric_limits<int64_t>::max()))
      return Error::format("{}.shape[{}]: {} is too large", path, i, v);
    info.shape.push_back(int64_t(v));
  }
  if (const auto it = j.find("sequence_rank"); it != j.end()) {
    if (!it->is_number_integer() || it->get<int64_t>() < -1 || !info.shape.empty())
      return Error::format("{}.sequence_rank: expected -1 or a rank (with an empty shape), got {}",
                           path, it->dump());
    info.sequence = true;
    info.elementRank = it->get<int64_t>();
  }
  return info;
}

/// A derived symbol's formula (PlanSymbol): integers checked for type only;
/// validatePlan checks what they refer to.
Status parseDerivedSymbol(const json &js, const std::string &path, PlanSymbol &sym) {
  auto integer = [&](const json &v, const std::string &where) -> Expected<int64_t> {
    if (!v.is_number_integer())
      return Error::format("{}: expected an integer, got {}", where, v.dump());
    return v.get<int64_t>();
  };
  TS_ASSIGN_OR_RETURN(sym.divisor, integer(js["divisor"], path + ".divisor"));
  if (sym.divisor < 1)
    return Error::format("{}.divisor: {} is not a positive divisor", path, sym.divisor);
  TS_ASSIGN_OR_RETURN(const json *c, Reader::field(js, path, "constant"));
  TS_ASSIGN_OR_RETURN(sym.constant, integer(*c, path + ".constant"));
  TS_ASSIGN_OR_RETURN(sym.definedBy, Reader::str(js, path, "definedBy", false));
  if (js.contains("at_least")) {
    TS_ASSIGN_OR_RETURN(sym.atLeast, integer(js["at_least"], path + ".at_least"));
  }
  if (js.contains("at_most")) {
    TS_ASSIGN_OR_RETURN(sym.atMost, integer(js["at_most"], path + ".at_most"));
  }
  TS_ASSIGN_OR_RETURN(const json *terms, Reader::field(js, path, "terms"));
  if (!terms->is_array())
    return Error::format("{}.terms: expected an array, got {}", path, terms->dump());
  for (size_t t = 0; t < terms->size(); ++t) {
    const std::string tp = fmt::format("{}.terms[{}]", path, t);
    const json &jt = (*terms)[t];
    if (!jt.is_object())
      return Error::format("{}: expected {{\"coefficient\", \"symbols\"}}", tp);
    PlanSymbol::Term term;
    TS_ASSIGN_OR_RETURN(const json *k, Reader::field(jt, tp, "coefficient"));
    TS_ASSIGN_OR_RETURN(term.coefficient, integer(*k, tp + ".coefficient"));
    TS_ASSIGN_OR_RETURN(term.symbols, Reader::ids(jt, tp, "symbols"));
    sym.terms.push_back(std::move(term));
  }
  return okStatus();
}

} // namespace

std::string serializePlan(const Plan &plan) {
  json j = json::object();
  j["format"] = 1;
  if (!plan.symbols.empty()) { // absent from static plans: their bytes are as before
    json symbols = json::array();
    for (const PlanSymbol &sym : plan.symbols) {
      json js = {{"name", sym.name}, {"lo", sym.lo}, {"hi", sym.hi}};
      if (sym.derived()) {
        json terms = json::array();
        for (const PlanSymbol::Term &t : sym.terms)
          terms.push_back({{"coefficient", t.coefficient}, {"symbols", t.symbols}});
        js["constant"] = sym.constant;
        js["terms"] = std::move(terms);
        js["divisor"] = sym.divisor;
        js["definedBy"] = sym.definedBy;
        if (sym.atLeast != std::numeric_limits<int64_t>::min())
          js["at_least"] = sym.atLeast;
        if (sym.atMost != std::numeric_limits<int64_t>::max())
          js["at_most"] = sym.atMost;
      }
      if (sym.runtime)
        js["runtime"] = true;
      symbols.push_back(std::move(js));
    }
    j["symbols"] = std::move(symbols);
  }
  json buffers = json::array();
  for (const Buffer &b : plan.buffers) {
    json jb = infoJson(b.info);
    jb["kind"] = kBufferKinds[size_t(b.kind)];
    if (b.kind == BufferKind::Input || b.kind == BufferKind::Output)
      jb["index"] = b.index;
    else
      jb["offset"] = b.offset;
    buffers.push_back(std::move(jb));
  }
  j["buffers"] = std::move(buffers);
  json steps = json::array();
  for (const Step &s : plan.steps) {
    json js = json::object();
    js["kind"] = kStepKinds[size_t(s.kind)];
    if (!s.symbol.empty())
      js["symbol"] = s.symbol;
    if (s.kind == StepKind::External)
      js["module"] = s.module;
    if (!s.symbols.empty())
      js["symbols"] = s.symbols;
    if (s.kind == StepKind::Jump || s.kind == StepKind::LoopTest ||
        s.kind == StepKind::SetSymbol || s.kind == StepKind::Sequence)
      js["target"] = s.target;
    js["args"] = s.args;
    js["num_inputs"] = s.numInputs;
    js["label"] = s.label;
    if (!s.nodes.empty())
      js["nodes"] = s.nodes;
    steps.push_back(std::move(js));
  }
  j["steps"] = std::move(steps);
  j["inputs"] = plan.inputs;
  j["outputs"] = plan.outputs;
  json modules = json::array();
  for (const ModuleRef &m : plan.modules)
    modules.push_back({{"type_key", m.typeKey},
                       {"plugin", m.plugin},
                       {"plugin_version", m.pluginVersion},
                       {"section", m.section}});
  j["modules"] = std::move(modules);
  j["arena_bytes"] = plan.arenaBytes;
  j["weights_bytes"] = plan.weightsBytes;
  j["activation_bytes_no_reuse"] = plan.activationBytesNoReuse;
  return j.dump(1);
}

Expected<Plan> parsePlan(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    return Error("plan: not valid JSON");
  if (!j.is_object())
    return Error("plan: expected a JSON object");
  TS_ASSIGN_OR_RETURN(uint64_t format, Reader::u64Field(j, "plan", "format"));
  if (format != 1)
    return Error::format("plan.format: version {}, this runtime reads version 1", format);

  Plan plan;
  if (j.contains("symbols")) {
    TS_ASSIGN_OR_RETURN(const json *symbols, Reader::array(j, "symbols"));
    for (size_t i = 0; i < symbols->size(); ++i) {
      const json &js = (*symbols)[i];
      const std::string path = fmt::format("plan.symbols[{}]", i);
      if (!js.is_object() || !js.contains("lo") || !js["lo"].is_number_integer() ||
          !js.contains("hi") || !js["hi"].is_number_integer())
        return Error::format("{}: expected {{\"name\", \"lo\", \"hi\"}} with integer bounds",
                             path);
      PlanSymbol sym;
      TS_ASSIGN_OR_RETURN(sym.name, Reader::str(js, path, "name"));
      sym.lo = js["lo"].get<int64_t>();
      sym.hi = js["hi"].get<int64_t>();
      if (js.contains("divisor"))
        TS_RETURN_IF_ERROR(parseDerivedSymbol(js, path, sym));
      if (js.contains("runtime")) {
        if (!js["runtime"].is_boolean())
          return Error::format("{}.runtime: expected true or false", path);
        sym.runtime = js["runtime"].get<bool>();
      }
      plan.symbols.push_back(std::move(sym));
    }
  }
  TS_ASSIGN_OR_RETURN(const json *buffers, Reader::array(j, "buffers"));
  for (size_t i = 0; i < buffers->size(); ++i) {
    const json &jb = (*buffers)[i];
    const std::string path = fmt::format("plan.buffers[{}]", i);
    if (!jb.is_object())
      return Error::format("{}: expected an object", path);
    Buffer b;
    TS_ASSIGN_OR_RETURN(size_t kind, Reader::enumField(jb, path, "kind", kBufferKinds));
    b.kind = BufferKind(kind);
    TS_ASSIGN_OR_RETURN(b.info, parseInfo(jb, path));
    if (b.kind == BufferKind::Input || b.kind == BufferKind::Output) {
      TS_ASSIGN_OR_RETURN(uint64_t index, Reader::u64Field(jb, path, "index"));
      if (index > std::numeric_limits<uint32_t>::max())
        return Error::format("{}.index: {} is too large", path, index);
      b.index = uint32_t(index);
    } else {
      TS_ASSIGN_OR_RETURN(b.offset, Reader::u64Field(jb, path, "offset"));
    }
    plan.buffers.push_back(std::move(b));
  }

  TS_ASSIGN_OR_RETURN(const json *steps, Reader::array(j, "steps"));
  for (size_t i = 0; i < steps->size(); ++i) {
    const json &js = (*steps)[i];
    const std::string path = fmt::format("plan.steps[{}]", i);
    if (!js.is_object())
      return Error::format("{}: expected an object", path);
    Step s;
    TS_ASSIGN_OR_RETURN(size_t kind, Reader::enumField(js, path, "kind", kStepKinds));
    s.kind = StepKind(kind);
    const bool named = s.kind == StepKind::Host || s.kind == StepKind::External ||
                       s.kind == StepKind::Sequence;
    TS_ASSIGN_OR_RETURN(s.symbol, Reader::str(js, path, "symbol", named));
    if (s.kind == StepKind::Jump || s.kind == StepKind::LoopTest ||
        s.kind == StepKind::SetSymbol || s.kind == StepKind::Sequence) {
      TS_ASSIGN_OR_RETURN(uint64_t target, Reader::u64Field(js, path, "target"));
      if (target > uint64_t(std::numeric_limits<uint32_t>::max()))
        return Error::format("{}.target: {} is too large", path, target);
      s.target = uint32_t(target);
    }
    if (s.kind == StepKind::External) {
      TS_ASSIGN_OR_RETURN(uint64_t m, Reader::u64Field(js, path, "module"));
      if (m > uint64_t(std::numeric_limits<int32_t>::max()))
        return Error::format("{}.module: {} is too large", path, m);
      s.module = int32_t(m);
      if (js.contains("symbols")) {
        TS_ASSIGN_OR_RETURN(s.symbols, Reader::ids(js, path, "symbols"));
      }
    }
    TS_ASSIGN_OR_RETURN(s.args, Reader::ids(js, path, "args"));
    TS_ASSIGN_OR_RETURN(uint64_t numInputs, Reader::u64Field(js, path, "num_inputs"));
    if (numInputs > s.args.size())
      return Error::format("{}.num_inputs: {} but only {} args", path, numInputs, s.args.size());
    s.numInputs = uint32_t(numInputs);
    TS_ASSIGN_OR_RETURN(s.label, Reader::str(js, path, "label", false));
    TS_ASSIGN_OR_RETURN(s.nodes, Reader::str(js, path, "nodes", false));
    plan.steps.push_back(std::move(s));
  }

  TS_ASSIGN_OR_RETURN(plan.inputs, Reader::ids(j, "plan", "inputs"));
  TS_ASSIGN_OR_RETURN(plan.outputs, Reader::ids(j, "plan", "outputs"));

  TS_ASSIGN_OR_RETURN(const json *modules, Reader::array(j, "modules"));
  for (size_t i = 0; i < modules->size(); ++i) {
    const json &jm = (*modules)[i];
    const std::string path = fmt::format("plan.modules[{}]", i);
    if (!jm.is_object())
      return Error::format("{}: expected an object", path);
    ModuleRef m;
    TS_ASSIGN_OR_RETURN(m.typeKey, Reader::str(jm, path, "type_key"));
    TS_ASSIGN_OR_RETURN(m.plugin, Reader::str(jm, path, "plugin"));
    TS_ASSIGN_OR_RETURN(m.pluginVersion, Reader::str(jm, path, "plugin_version", false));
    TS_ASSIGN_OR_RETURN(uint64_t section, Reader::u64Field(jm, path, "section"));
    if (section > std::numeric_limits<uint32_t>::max())
      return Error::format("{}.section: {} is too large", path, section);
    m.section = uint32_t(section);
    plan.modules.push_back(std::move(m));
  }
  TS_ASSIGN_OR_RETURN(plan.arenaBytes, Reader::u64Field(j, "plan", "arena_bytes"));
  TS_ASSIGN_OR_RETURN(plan.weightsBytes, Reader::u64Field(j, "plan", "weights_bytes"));
  TS_ASSIGN_OR_RETURN(plan.activationBytesNoReuse,
                      Reader::u64Field(j, "plan", "activation_bytes_no_reuse", 0));
  auto valid = validatePlan(plan);
  if (!valid.ok())
    return Error::format("plan: {}", valid.error().str());
  return plan;
}

} // namespace tessera::runtime
