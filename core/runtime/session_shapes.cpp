//===- runtime/session_shapes.cpp - Sessions over symbolic shapes ---------===//
//
// A plan with symbols (runtime/plan.h; docs/design/0013-dynamic-shapes.md)
// learns their values from the bound inputs at each run (the derived ones
// computed from those by their formulas). When they differ
// from the last run's, the session computes every buffer's shape at them,
// plans memory again with the same planner the compiler uses (planMemory at
// the concrete sizes), grows the arena and the output storage when they no
// longer fit (never shrinks them: the next larger run reuses them), and
// points every step argument at its new place. DLTensors of plugin steps and
// of the outputs point into the session's shape arrays, so they describe this
// run's sizes; host steps over symbolic shapes read the values themselves.
//
//===----------------------------------------------------------------------===//
#include "runtime/session.h"
#include "runtime/session_internal.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>

namespace tessera::runtime {

namespace {

std::string who(const char *what, const TensorInfo &info, size_t index) {
  return info.name.empty() ? fmt::format("{} {}", what, index)
                           : fmt::format("{} '{}'", what, info.name);
}

} // namespace

Status SessionImpl::prepareShapes() {
  const Plan &plan = model->plan();
  std::vector<int64_t> values(plan.symbols.size(), -1);
  std::vector<std::pair<size_t, size_t>> from(plan.symbols.size()); // (input, dim)
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    const TensorInfo &info = plan.buffers[plan.inputs[i]].info;
    for (size_t d = 0; d < info.shape.size(); ++d) {
      if (!isSymbolDim(info.shape[d]))
        continue;
      const size_t k = symbolIndexOf(info.shape[d]);
      const int64_t v = givenShapes[i][d];
      if (values[k] < 0) {
        values[k] = v;
        from[k] = {i, d};
      } else if (values[k] != v) {
        const auto [j, e] = from[k];
        return Error::format("{} dim {} ({}) is {}, but {} dim {} gives {} = {}",
                             who("input", info, i), d, plan.symbols[k].name, v,
                             who("input", plan.buffers[plan.inputs[j]].info, j), e,
                             plan.symbols[k].name, values[k]);
      }
    }
  }
  // A run-time symbol is planned at its bound (SetSymbol gives its value);
  // one without (a loop's scan rows) at what the last run grew it to, at
  // first kFirstRows, and back down to what the last run used once that is
  // a quarter of it or less (one large run does not hold its memory for
  // every later one; a smaller drop keeps the plan, and no run re-plans).
  constexpr int64_t kFirstRows = 16;
  for (size_t k = 0; k < plan.symbols.size(); ++k) {
    if (!plan.symbols[k].runtime)
      continue;
    if (plan.symbols[k].hi >= 0) {
      values[k] = plan.symbols[k].hi;
    } else if (plannedValues.empty()) {
      values[k] = kFirstRows;
    } else {
      const int64_t used = std::max({kFirstRows, runMax[k], symbolValues[k]});
      values[k] = used * 4 <= plannedValues[k] ? used : std::max(kFirstRows, plannedValues[k]);
    }
  }
  std::fill(runMax.begin(), runMax.end(), 0);
  TS_RETURN_IF_ERROR(deriveSymbolValues(plan.symbols, values));
  std::copy(values.begin(), values.end(), symbolValues.begin()); // host steps hold its address
  if (symbolValues != plannedValues)
    TS_RETURN_IF_ERROR(resize(symbolValues));
  else if (!midRunBuffers.empty()) // the last run's SetSymbol steps changed them
    refreshShapes(midRunBuffers);
  for (size_t o = 0; o < plan.outputs.size(); ++o) {
    if (!outputPtr[o])
      continue;
    const std::vector<int64_t> &want = shapes[plan.outputs[o]];
    if (outputShapes[o] != want) {
      TensorInfo expected = plan.buffers[plan.outputs[o]].info, got = expected;
      expected.shape = want;
      got.shape = outputShapes[o];
      return Error::format("{}: this run's inputs make it {}, the bound tensor is {}",
                           who("output", expected, o), expected.str(), got.str());
    }
  }
  return okStatus();
}

Status SessionImpl::resize(const std::vector<int64_t> &planAt) {
  const LoadedModelImpl &m = *model->impl_;
  const Plan &plan = m.plan;
  Plan sized = plan; // the offsets at the planned sizes
  TS_RETURN_IF_ERROR(planMemory(sized, planAt));
  for (size_t b = 0; b < plan.buffers.size(); ++b) {
    const TensorInfo &info = plan.buffers[b].info;
    for (size_t d = 0; d < info.shape.size(); ++d) // same length: DLTensors keep the address
      shapes[b][d] = isSymbolDim(info.shape[d]) ? symbolValues[symbolIndexOf(info.shape[d])]
                                                : info.shape[d];
  }
  auto bytesOf = [&](uint32_t b) {
    TensorInfo t = plan.buffers[b].info;
    t.shape = shapes[b];
    return t.bytes();
  };
  auto plannedBytesOf = [&](uint32_t b) {
    TensorInfo t = plan.buffers[b].info;
    for (int64_t &d : t.shape)
      if (isSymbolDim(d))
        d = planAt[symbolIndexOf(d)];
    return t.bytes();
  };
  std::vector<uint64_t> outOffset;
  uint64_t outBytes = 0;
  for (uint32_t id : plan.outputs) {
    outOffset.push_back(outBytes);
    outBytes += (plannedBytesOf(id) + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
  }
  // Memory grows to what a run needs, and is given back when a run needs a
  // quarter of it or less (the inputs' sizes dropped).
  auto refit = [](uint64_t need, uint64_t capacity, bool have) {
    return !have || need > capacity || need * 4 <= capacity;
  };
  if (refit(sized.arenaBytes, arenaCapacity, arena.ptr != nullptr)) {
    arena = detail::AlignedBytes::make(sized.arenaBytes);
    arenaCapacity = sized.arenaBytes;
  }
  if (refit(outBytes, outputCapacity, outputStorage.ptr != nullptr)) {
    outputStorage = detail::AlignedBytes::make(outBytes);
    outputCapacity = outBytes;
  }
  if (!arena.ptr || !outputStorage.ptr)
    return Error::format("out of memory for this run's sizes ({} bytes of activations, {} of "
                         "outputs)",
                         sized.arenaBytes, outBytes);
  for (size_t b = 0; b < plan.buffers.size(); ++b) {
    const Buffer &buf = plan.buffers[b];
    if (buf.kind == BufferKind::Activation)
      bufferPtr[b] = arena.data() + sized.buffers[b].offset;
    else if (buf.kind == BufferKind::Output)
      bufferPtr[b] = outputStorage.data() + outOffset[buf.index];
  }
  auto pointerOf = [&](int64_t b) -> void * {
    if (b < 0)
      return symbolValues.data();
    const Buffer &buf = plan.buffers[size_t(b)];
    if (buf.kind == BufferKind::Input)
      return inputPtr[buf.index];
    if (buf.kind == BufferKind::Output && outputPtr[buf.index])
      return outputPtr[buf.index];
    return bufferPtr[size_t(b)];
  };
  for (size_t i = 0; i < hostArgs.size(); ++i)
    hostArgs[i] = pointerOf(hostSlotBuffer[i]);
  for (size_t i = 0; i < dlArgs.size(); ++i)
    dlArgs[i].data = pointerOf(dlSlotBuffer[i]);
  for (size_t o = 0; o < plan.outputs.size(); ++o) {
    outputOwn[o] = bufferPtr[plan.outputs[o]];
    outputViews[o].data = outputPtr[o] ? outputPtr[o] : outputOwn[o];
  }
  for (size_t s = 0; s < plan.steps.size(); ++s)
    if (plan.steps[s].kind == StepKind::Copy) {
      steps[s].copyBytes = bytesOf(plan.steps[s].args[0]);
      if (plan.steps[s].args.size() == 3)
        steps[s].rowsBytes = bytesOf(plan.steps[s].args[2]);
    }
  plannedValues = planAt;
  return okStatus();
}

void SessionImpl::indexRuntimeSymbols() {
  const Plan &plan = model->plan();
  const size_t n = plan.symbols.size();
  midRun.assign(n, false);
  followers.assign(n, {});
  reshaped.assign(n, {});
  for (size_t r = 0; r < n; ++r) {
    if (!plan.symbols[r].runtime)
      continue;
    midRun[r] = true;
    const std::vector<bool> follows = symbolsFollowing(plan, r);
    for (size_t k = r + 1; k < n; ++k)
      if (follows[k]) {
        followers[r].push_back(uint32_t(k));
        midRun[k] = true;
      }
  }
  for (size_t b = 0; b < plan.buffers.size(); ++b) {
    bool any = false;
    for (size_t r = 0; r < n; ++r) {
      if (!plan.symbols[r].runtime)
        continue;
      bool has = false;
      for (int64_t d : plan.buffers[b].info.shape)
        if (isSymbolDim(d)) {
          const uint32_t k = uint32_t(symbolIndexOf(d));
          has = has || k == r ||
                std::find(followers[r].begin(), followers[r].end(), k) != followers[r].end();
        }
      if (has)
        reshaped[r].push_back(uint32_t(b));
      any = any || has;
    }
    if (any)
      midRunBuffers.push_back(uint32_t(b));
  }
  for (size_t s = 0; s < plan.steps.size(); ++s)
    if (plan.steps[s].kind == StepKind::Copy)
      copySteps.push_back(uint32_t(s));
  if (auto ranges = liveRanges(plan); ranges.ok()) // a loaded plan was validated
    live = std::move(ranges).value();
}

void SessionImpl::refreshShapes(const std::vector<uint32_t> &list) {
  const Plan &plan = model->plan();
  for (uint32_t b : list) {
    const TensorInfo &info = plan.buffers[b].info;
    for (size_t d = 0; d < info.shape.size(); ++d)
      if (isSymbolDim(info.shape[d]))
        shapes[b][d] = symbolValues[symbolIndexOf(info.shape[d])];
  }
  for (uint32_t s : copySteps) // each SetSymbol: not a scan of every step
    if (std::find(list.begin(), list.end(), plan.steps[s].args[0]) != list.end()) {
      TensorInfo t = plan.buffers[plan.steps[s].args[0]].info;
      t.shape = shapes[plan.steps[s].args[0]];
      steps[s].copyBytes = t.bytes();
    }
}

Status SessionImpl::setSymbol(size_t step, int64_t value) {
  return setSymbolAt(step, model->plan().steps[step].target, value);
}

Status SessionImpl::setSymbolAt(size_t step, uint32_t k, int64_t value) {
  const Plan &plan = model->plan();
  const PlanSymbol &sym = plan.symbols[k];
  if (value < sym.lo || (sym.hi >= 0 && value > sym.hi))
    return Error::format("{}: {} = {} is outside {}..{}", detail::stepName(plan, step), sym.name, value,
                         sym.lo, sym.hi);
  if (sym.hi < 0 && value > plannedValues[k])
    TS_RETURN_IF_ERROR(grow(step, k, value));
  symbolValues[k] = value;
  runMax[k] = std::max(runMax[k], value);
  TS_RETURN_IF_ERROR(deriveFollowers(step, k, /*withinPlan=*/true));
  refreshShapes(reshaped[k]);
  return okStatus();
}

Status SessionImpl::deriveFollowers(size_t step, uint32_t k, bool withinPlan) {
  const Plan &plan = model->plan();
  for (uint32_t f : followers[k]) {
    auto v = deriveSymbolValue(plan.symbols, symbolValues, f);
    if (!v.ok())
      return Error::format("{}: {}", detail::stepName(plan, step), v.error().str())
          .setCode(v.error().code());
    // Formulas are monotone, so memory planned at the bounds holds every
    // value; a formula that is not is refused here, not overrun.
    if (withinPlan && *v > plannedValues[f])
      return Error::format("{}: {} = {} exceeds {}, which memory was planned for",
                           detail::stepName(plan, step), plan.symbols[f].name, *v, plannedValues[f]);
    symbolValues[f] = *v;
  }
  return okStatus();
}

Status SessionImpl::grow(size_t step, uint32_t k, int64_t needed) {
  const Plan &plan = model->plan();
  auto bytesAt = [&](size_t b) {
    TensorInfo t = plan.buffers[b].info;
    t.shape = shapes[b];
    return t.bytes();
  };
  // The old memory stays until the live buffers have moved.
  detail::AlignedBytes oldArena = std::move(arena), oldOutputs = std::move(outputStorage);
  arenaCapacity = outputCapacity = 0;
  const std::vector<void *> oldPtr = bufferPtr;
  std::vector<uint64_t> oldBytes(plan.buffers.size());
  for (size_t b = 0; b < plan.buffers.size(); ++b)
    oldBytes[b] = bytesAt(b);
  // Geometric growth over what was planned: a symbol set many times (a
  // loop's) grows O(log) times, each one moving every live buffer.
  const int64_t planned = k < plannedValues.size() ? plannedValues[k] : 0;
  symbolValues[k] = std::max(needed, 2 * std::max<int64_t>({symbolValues[k], planned, 1}));
  TS_RETURN_IF_ERROR(deriveFollowers(step, k, /*withinPlan=*/false)); // planned next
  // Memory is planned at the most each symbol has been planned for this
  // run, not at the values of the moment: a loop's iterations set several
  // unbounded symbols in turn, and planning at one iteration's values would
  // grow (and copy every live buffer) again at the next.
  std::vector<int64_t> planAt = symbolValues;
  for (size_t s = 0; s < planAt.size(); ++s)
    if (plan.symbols[s].runtime && plan.symbols[s].hi < 0 && s < plannedValues.size())
      planAt[s] = std::max(planAt[s], plannedValues[s]);
    else if (plan.symbols[s].runtime && plan.symbols[s].hi >= 0)
      planAt[s] = plan.symbols[s].hi;
  TS_RETURN_IF_ERROR(deriveSymbolValues(plan.symbols, planAt));
  TS_RETURN_IF_ERROR(resize(planAt));
  for (size_t b = 0; b < plan.buffers.size(); ++b) {
    const Buffer &buf = plan.buffers[b];
    const bool moves =
        (buf.kind == BufferKind::Activation && b < live.size() && live[b].first <= int64_t(step) &&
         int64_t(step) <= live[b].last) ||
        (buf.kind == BufferKind::Output && !outputPtr[buf.index]);
    if (moves && oldPtr[b] != bufferPtr[b])
      std::memcpy(bufferPtr[b], oldPtr[b], std::min(oldBytes[b], bytesAt(b)));
  }
  return okStatus();
}

} // namespace tessera::runtime
