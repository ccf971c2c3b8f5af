//===- runtime/session.cpp - Running a loaded model -----------------------===//
//
// A Session prebuilds, per step, the argument array a call takes (void*
// data pointers for host steps and copies, DLTensors plus a pointer array
// for plugin functions). Binding an input or output patches the slots that
// refer to its buffer, so run() is a loop of calls.
//
// Loading and checking an artifact (LoadedModel) is in session_load.cpp.
//
//===----------------------------------------------------------------------===//
#include "runtime/session.h"

#include "plugin/registry.h"
#include "runtime/host_abi.h"
#include "runtime/profile.h"
#include "runtime/session_internal.h"
#include "runtime/thread_pool.h"
#include "tessera/c/dtype.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>

namespace tessera::runtime {

using detail::AlignedBytes;
using detail::stepName;

namespace detail {

std::string stepName(const Plan &plan, size_t s) {
  const std::string &label = plan.steps[s].label;
  return label.empty() ? fmt::format("step {}", s) : fmt::format("step {} ({})", s, label);
}

} // namespace detail

namespace {

/// "input 'x'" (or "input 0" for a nameless one).
std::string tensorName(const char *what, const TensorInfo &info, size_t index) {
  return info.name.empty() ? fmt::format("{} {}", what, index)
                           : fmt::format("{} '{}'", what, info.name);
}

const char *hostErrorName(int32_t rc) {
  switch (rc) {
  case TESSERA_HOST_ERR_INVALID: return "TESSERA_HOST_ERR_INVALID: an index or value out of range";
  case TESSERA_HOST_ERR_INTERNAL: return "TESSERA_HOST_ERR_INTERNAL";
  default: return "unknown error code";
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Session
//===----------------------------------------------------------------------===//

namespace {

/// Whether the one element at `p` (bool or integer `t`) is non-zero.
bool truthy(const void *p, DLDataType t) {
  switch (t.bits) {
  case 8: return *static_cast<const uint8_t *>(p) != 0;
  case 16: return *static_cast<const uint16_t *>(p) != 0;
  case 32: return *static_cast<const uint32_t *>(p) != 0;
  default: return *static_cast<const uint64_t *>(p) != 0;
  }
}

} // namespace

SessionImpl::SessionImpl(std::shared_ptr<const LoadedModel> m, int32_t threads)
    : model(std::move(m)), pool(threads) {}

Status SessionImpl::build() {
  const LoadedModelImpl &m = *model->impl_;
  const Plan &plan = m.plan;
  dynamic = !plan.symbols.empty();
  bufferPtr.assign(plan.buffers.size(), nullptr);
  std::vector<uint64_t> outOffset;
  if (!dynamic) { // a symbolic plan gets its memory when the first run knows the sizes
    arena = AlignedBytes::make(plan.arenaBytes);
    uint64_t outBytes = 0;
    for (uint32_t id : plan.outputs) {
      outOffset.push_back(outBytes);
      outBytes += (plan.buffers[id].info.bytes() + kBufferAlignment - 1) / kBufferAlignment *
                  kBufferAlignment;
    }
    outputStorage = AlignedBytes::make(outBytes);
    if (!arena.ptr || !outputStorage.ptr)
      return Error::format(
          "out of memory for the session ({} bytes of activations, {} of outputs)",
          plan.arenaBytes, outBytes);
    for (size_t b = 0; b < plan.buffers.size(); ++b) {
      const Buffer &buf = plan.buffers[b];
      switch (buf.kind) {
      case BufferKind::Input: break; // bound by setInput
      case BufferKind::Output: bufferPtr[b] = outputStorage.data() + outOffset[buf.index]; break;
      case BufferKind::Constant: bufferPtr[b] = m.weights.data() + buf.offset; break;
      case BufferKind::Activation: bufferPtr[b] = arena.data() + buf.offset; break;
      }
    }
  } else {
    for (size_t b = 0; b < plan.buffers.size(); ++b)
      if (plan.buffers[b].kind == BufferKind::Constant)
        bufferPtr[b] = m.weights.data() + plan.buffers[b].offset;
    symbolValues.assign(plan.symbols.size(), 0);
    runMax.assign(plan.symbols.size(), 0);
    shapes.resize(plan.buffers.size());
    for (size_t b = 0; b < plan.buffers.size(); ++b)
      shapes[b] = plan.buffers[b].info.shape;
    givenShapes.resize(plan.inputs.size());
    inputPtr.assign(plan.inputs.size(), nullptr);
    outputPtr.assign(plan.outputs.size(), nullptr);
    outputShapes.resize(plan.outputs.size());
    indexRuntimeSymbols();
  }

  inputSlots.resize(plan.inputs.size());
  outputSlots.resize(plan.outputs.size());
  inputSet.assign(plan.inputs.size(), false);
  auto record = [&](uint32_t b, bool host, size_t slot) {
    const Buffer &buf = plan.buffers[b];
    detail::Slots *slots = buf.kind == BufferKind::Input    ? &inputSlots[buf.index]
                           : buf.kind == BufferKind::Output ? &outputSlots[buf.index]
                                                            : nullptr;
    if (slots)
      (host ? slots->host : slots->dl).push_back(slot);
    if (dynamic)
      host ? hostSlotBuffer.push_back(b) : dlSlotBuffer.push_back(b);
  };

  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const Step &step = plan.steps[s];
    detail::StepExec e{step.kind, m.hostFns[s], nullptr, 0, uint32_t(step.args.size()), 0};
    if (step.kind == StepKind::External) {
      e.fn = &m.functions[s];
      e.symFirst = uint32_t(externalSymbols.size());
      e.symCount = uint32_t(step.symbols.size());
      externalSymbols.insert(externalSymbols.end(), step.symbols.begin(), step.symbols.end());
      externalValues.resize(externalSymbols.size());
      e.first = uint32_t(dlArgs.size());
      for (uint32_t b : step.args) {
        const TensorInfo &info = plan.buffers[b].info;
        DLTensor t{};
        t.data = bufferPtr[b];
        t.device = {kDLCPU, 0};
        t.ndim = int32_t(info.shape.size());
        t.dtype = info.dtype;
        // The model's, immutable; a symbolic plan's: this run's (resize()).
        t.shape = const_cast<int64_t *>(dynamic ? shapes[b].data() : info.shape.data());
        record(b, false, dlArgs.size());
        dlArgs.push_back(t);
      }
    } else {
      e.first = uint32_t(hostArgs.size());
      for (uint32_t b : step.args) {
        record(b, true, hostArgs.size());
        hostArgs.push_back(bufferPtr[b]);
      }
      // A host step of a plan with symbols may read their values after its
      // buffers (runtime/host_abi.h): one whose shapes hold them, or whose
      // parameters do (symbol_values, a topk's k).
      if (step.kind == StepKind::Host && dynamic) {
        hostArgs.push_back(symbolValues.data());
        hostSlotBuffer.push_back(-1);
      }
      if (step.kind == StepKind::Copy) {
        e.sequenceCopy = plan.buffers[step.args[0]].info.sequence;
        e.copyBytes = plan.buffers[step.args[0]].info.bytes();
        if (step.args.size() == 3) {
          const TensorInfo &to = plan.buffers[step.args[2]].info;
          e.rowsBytes = to.bytes();
          if (!to.shape.empty() && isSymbolDim(to.shape[0])) {
            const size_t k = symbolIndexOf(to.shape[0]);
            if (plan.symbols[k].runtime && plan.symbols[k].hi < 0)
              e.growSymbol = int32_t(k);
          }
        }
      }
      e.target = step.target;
      if (step.kind == StepKind::Jump && !step.args.empty())
        e.condType = plan.buffers[step.args[0]].info.dtype;
      if (step.kind == StepKind::LoopTest)
        e.condType = plan.buffers[step.args[2]].info.dtype;
    }
    steps.push_back(e);
  }
  for (const DLTensor &t : dlArgs)
    dlPtrs.push_back(&t); // dlArgs no longer grows

  sequences.resize(plan.buffers.size());
  sequenceViews.resize(plan.outputs.size());
  for (size_t o = 0; o < plan.outputs.size(); ++o)
    if (plan.buffers[plan.outputs[o]].info.sequence)
      sequenceOutputs.push_back(uint32_t(o));
  outputOwn.resize(plan.outputs.size());
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    const uint32_t b = plan.outputs[i];
    const TensorInfo &info = plan.buffers[b].info;
    outputOwn[i] = bufferPtr[b];
    DLTensor t{};
    t.data = outputOwn[i];
    t.device = {kDLCPU, 0};
    t.ndim = int32_t(info.shape.size());
    t.dtype = info.dtype;
    t.shape = const_cast<int64_t *>(dynamic ? shapes[b].data() : info.shape.data());
    outputViews.push_back(t);
  }
  return okStatus();
}

Status SessionImpl::bind(const char *what, const TensorInfo &info, size_t index, const DLTensor &t,
                         void *&out, std::vector<int64_t> *shape) const {
  const Plan &plan = model->plan();
  const std::string who = tensorName(what, info, index);
  if (t.device.device_type != kDLCPU)
    return Error::format("{}: expected a CPU tensor (device type {}), got device type {}", who,
                         int(kDLCPU), int(t.device.device_type));
  if (t.ndim < 0 || (t.ndim > 0 && !t.shape))
    return Error::format("{}: invalid DLTensor (ndim {}, shape {})", who, t.ndim,
                         t.shape ? "set" : "null");
  TensorInfo given;
  given.dtype = t.dtype;
  given.shape.assign(t.shape, t.shape + t.ndim);
  bool fits = t.dtype.code == info.dtype.code && t.dtype.bits == info.dtype.bits &&
              t.dtype.lanes == info.dtype.lanes && given.shape.size() == info.shape.size();
  for (size_t d = 0; fits && d < info.shape.size(); ++d)
    fits = isSymbolDim(info.shape[d]) ? given.shape[d] >= 0 : given.shape[d] == info.shape[d];
  if (!fits)
    return Error::format("{}: expected {}, got {}", who, plan.str(info), given.str());
  for (size_t d = 0; d < info.shape.size(); ++d) {
    if (!isSymbolDim(info.shape[d]))
      continue;
    const PlanSymbol &sym = plan.symbols[symbolIndexOf(info.shape[d])];
    if (given.shape[d] < sym.lo || (sym.hi >= 0 && given.shape[d] > sym.hi))
      return Error::format("{}: dim {} ({}) is {}, outside its bounds {}..{}", who, d, sym.name,
                           given.shape[d], sym.lo,
                           sym.hi >= 0 ? std::to_string(sym.hi) : std::string());
  }
  if (t.strides) {
    std::vector<int64_t> compact(given.shape.size(), 1);
    for (size_t d = given.shape.size(); d-- > 1;)
      compact[d - 1] = compact[d] * given.shape[d];
    for (size_t d = 0; d < given.shape.size(); ++d)
      if (given.shape[d] > 1 && t.strides[d] != compact[d])
        return Error::format("{}: expected dense row-major strides [{}], got [{}]", who,
                             fmt::join(compact, ", "),
                             fmt::join(t.strides, t.strides + t.ndim, ", "));
  }
  auto *data = static_cast<uint8_t *>(t.data);
  if (!data && given.bytes() > 0)
    return Error::format("{}: data is null", who);
  const uint64_t elem = info.dtype.code == TESSERA_DL_BOOL ? 1 : info.dtype.bits / 8;
  if (data && elem > 1 && (reinterpret_cast<uintptr_t>(data) + t.byte_offset) % elem != 0)
    return Error::format("{}: data + byte_offset ({} + {}) is not aligned to the element size "
                         "({} bytes)",
                         who, static_cast<const void *>(data), t.byte_offset, elem);
  out = data ? data + t.byte_offset : nullptr;
  if (shape)
    *shape = std::move(given.shape);
  return okStatus();
}

void SessionImpl::patch(const detail::Slots &slots, void *ptr) {
  for (size_t i : slots.host)
    hostArgs[i] = ptr;
  for (size_t i : slots.dl)
    dlArgs[i].data = ptr;
}

Session::Session() = default;
Session::~Session() = default;

Expected<std::unique_ptr<Session>> Session::create(std::shared_ptr<const LoadedModel> model,
                                                   const SessionOptions &options) {
  if (!model)
    return Error("no model");
  TS_RETURN_IF_ERROR(checkNumThreads(options.numThreads));
  std::unique_ptr<Session> s(new Session());
  s->pool_ = detail::makeSessionPool(model, SessionOptions{resolveNumThreads(options.numThreads)});
  s->impl_ = std::make_unique<SessionImpl>(std::move(model), resolveNumThreads(options.numThreads));
  TS_RETURN_IF_ERROR(s->impl_->build());
  return s;
}



Status Session::setInput(size_t index, const DLTensor &tensor) {
  const auto &inputs = impl_->model->inputs();
  if (index >= inputs.size())
    return Error::format("input index {} out of range (the model has {} input{})", index,
                         inputs.size(), inputs.size() == 1 ? "" : "s");
  SessionImpl &s = *impl_;
  if (inputs[index].sequence)
    return Error::format("{} is a sequence ({}): bind it with setInputSequence",
                         tensorName("input", inputs[index], index), inputs[index].str());
  void *ptr = nullptr;
  std::vector<int64_t> shape;
  TS_RETURN_IF_ERROR(s.bind("input", inputs[index], index, tensor, ptr, &shape));
  s.patch(s.inputSlots[index], ptr);
  s.inputSet[index] = true;
  if (s.dynamic) {
    s.inputPtr[index] = ptr;
    s.givenShapes[index] = std::move(shape);
  }
  return okStatus();
}

Status Session::setInput(std::string_view name, const DLTensor &tensor) {
  const auto &inputs = impl_->model->inputs();
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].name == name)
      return setInput(i, tensor);
  std::vector<std::string> names;
  for (const auto &t : inputs)
    names.push_back("'" + t.name + "'");
  return Error::format("no input named '{}' (the model's inputs: {})", name,
                       names.empty() ? std::string("none")
                                     : fmt::format("{}", fmt::join(names, ", ")));
}

Status Session::setOutput(size_t index, const DLTensor *tensor) {
  SessionImpl &s = *impl_;
  const auto &outputs = s.model->outputs();
  if (index >= outputs.size())
    return Error::format("output index {} out of range (the model has {} output{})", index,
                         outputs.size(), outputs.size() == 1 ? "" : "s");
  if (outputs[index].sequence && tensor)
    return Error::format("{} is a sequence ({}): its elements are the session's (read them "
                         "with outputSequence after run())",
                         tensorName("output", outputs[index], index), outputs[index].str());
  void *ptr = s.outputOwn[index];
  std::vector<int64_t> shape;
  if (tensor)
    TS_RETURN_IF_ERROR(s.bind("output", outputs[index], index, *tensor, ptr, &shape));
  if (s.dynamic && tensor)
    for (size_t d = 0; d < outputs[index].shape.size(); ++d)
      if (const int64_t v = outputs[index].shape[d];
          isSymbolDim(v) && s.midRun[symbolIndexOf(v)])
        return Error::format("{}: dim {} ({}) is known only when the model has run (the data "
                             "decides it): read the output after run() instead of binding it",
                             tensorName("output", outputs[index], index), d,
                             s.model->plan().symbols[symbolIndexOf(v)].name);
  if (s.dynamic) {
    // Its symbolic dims are checked against the inputs' when run() knows them.
    s.outputPtr[index] = tensor ? ptr : nullptr;
    s.outputShapes[index] = std::move(shape);
  }
  s.patch(s.outputSlots[index], ptr);
  s.outputViews[index].data = ptr;
  return okStatus();
}

Status Session::run() {
  SessionImpl &s = *impl_;
  for (size_t i = 0; i < s.inputSet.size(); ++i)
    if (!s.inputSet[i])
      return Error::format("{} was not set", tensorName("input", s.model->inputs()[i], i))
          .setCode(ErrorCode::FailedPrecondition);
  return s.profile.enabled() ? s.execute<true>() : s.execute<false>();
}

void SessionImpl::nameSteps() {
  if (!stepNames.empty())
    return;
  const Plan &plan = model->plan();
  for (const Step &step : plan.steps) {
    StepNames n{"", "", ""};
    switch (step.kind) {
    case StepKind::Host:
      n = {profile.intern(step.label.empty() ? step.symbol : step.label), "host",
           profile.intern(step.symbol), profile.intern(step.nodes)};
      break;
    case StepKind::External: {
      const std::string plugin =
          step.module >= 0 && size_t(step.module) < plan.modules.size()
              ? plan.modules[size_t(step.module)].plugin
              : std::string("plugin");
      n = {profile.intern(fmt::format("{} region '{}'", plugin, step.symbol)), "plugin",
           profile.intern(plugin)};
      break;
    }
    case StepKind::Copy:
      n = {profile.intern(step.label.empty() ? "copy" : step.label), "copy", ""};
      break;
    case StepKind::SetSymbol:
      n = {profile.intern(step.label.empty() ? "set symbol" : step.label), "shape", ""};
      break;
    case StepKind::Sequence:
      n = {profile.intern(step.label.empty() ? "sequence" : step.label), "sequence", ""};
      break;
    default: break; // control steps (Jump, LoopTest, Increment) are not recorded
    }
    stepNames.push_back(n);
  }
}

template <bool Profiled> Status SessionImpl::execute() {
  // Profiled: the run's record, whose duration is set however the run ends.
  struct RunRecord {
    Profile *profile = nullptr;
    int32_t index = -1;
    uint32_t run = 0;
    int64_t start = 0;
    ~RunRecord() {
      if (profile)
        profile->setDuration(index, monotonicNs() - start);
    }
  } runRecord;
  auto record = [&](const char *name, const char *category, const char *impl, int32_t step,
                    int64_t start, int64_t end, const char *nodes = "") {
    return profile.add(tessera_profile_record_t{sizeof(tessera_profile_record_t), name, category,
                                                nodes, impl, profile.sinceStart(start), end - start,
                                                currentThreadId(), step, runRecord.index,
                                                runRecord.run});
  };
  if constexpr (Profiled) {
    nameSteps();
    const int64_t start = monotonicNs();
    runRecord.run = profile.beginRun();
    runRecord.index = profile.add(tessera_profile_record_t{
        sizeof(tessera_profile_record_t), "run", "run", "", "", profile.sinceStart(start), 0,
        currentThreadId(), -1, -1, runRecord.run});
    runRecord.profile = &profile;
    runRecord.start = start;
  }
  if (dynamic) {
    [[maybe_unused]] const int64_t start = Profiled ? monotonicNs() : 0;
    TS_RETURN_IF_ERROR(prepareShapes());
    if constexpr (Profiled)
      record("shapes and memory for this run's inputs", "shape", "", -1, start, monotonicNs());
  }
  const tessera_host_ctx_t *ctx = pool.ctx();
  const OmpThreadsScope threads(pool.numThreads()); // for plugins' OpenMP code
  void **args = hostArgs.data();
  const DLTensor *const *dl = dlPtrs.data();
  const Plan &plan = model->plan();
  // The control steps of run-time If and Loop choose the next step; the
  // plan was validated, so their targets are in range.
  for (size_t i = 0; i < steps.size(); ++i) {
    const detail::StepExec &e = steps[i];
    [[maybe_unused]] const size_t at = i;
    [[maybe_unused]] const int64_t start = Profiled ? monotonicNs() : 0;
    switch (e.kind) {
    case StepKind::Host:
      if (int32_t rc = e.host(args + e.first, ctx))
        return Error::format("{}: host function '{}' failed with code {} ({})", stepName(plan, i),
                             plan.steps[i].symbol, rc, hostErrorName(rc));
      break;
    case StepKind::External: {
      for (uint32_t k = e.symFirst; k < e.symFirst + e.symCount; ++k)
        externalValues[k] = symbolValues[externalSymbols[k]];
      Status st = e.fn->call(
          std::span<const DLTensor *const>(dl + e.first, e.count),
          std::span<const int64_t>(externalValues.data() + e.symFirst, e.symCount),
          Profiled ? profile.callContext() : nullptr);
      if (!st.ok())
        return Error::format("{}: {}", stepName(plan, i), st.error().str())
            .setCode(st.error().code());
      break;
    }
    case StepKind::Copy:
      if (e.sequenceCopy) { // a list: its elements are shared, never written
        const Step &step = plan.steps[i];
        sequences[step.args[1]] = sequences[step.args[0]];
      } else if (e.count == 3) { // into row args[1] of args[2]: a loop's scan output
        const int64_t row = *static_cast<const int64_t *>(args[e.first + 1]);
        if (row >= 0 && uint64_t(row + 1) * e.copyBytes > e.rowsBytes && e.growSymbol >= 0)
          TS_RETURN_IF_ERROR(grow(i, uint32_t(e.growSymbol), row + 1));
        if (row < 0 || uint64_t(row + 1) * e.copyBytes > e.rowsBytes)
          return Error::format("{}: row {} is past the {} rows memory was planned for",
                               stepName(plan, i), row, e.copyBytes ? e.rowsBytes / e.copyBytes : 0);
        std::memcpy(static_cast<char *>(args[e.first + 2]) + uint64_t(row) * e.copyBytes,
                    args[e.first], e.copyBytes);
      } else if (e.copyBytes > 0 && args[e.first] != args[e.first + 1]) {
        std::memmove(args[e.first + 1], args[e.first], e.copyBytes);
      }
      break;
    case StepKind::Jump:
      if (e.count == 0 || !truthy(args[e.first], e.condType))
        i = size_t(e.target) - 1; // the loop's ++i makes it target
      break;
    case StepKind::LoopTest: {
      const int64_t iter = *static_cast<const int64_t *>(args[e.first]);
      const int64_t trip = *static_cast<const int64_t *>(args[e.first + 1]);
      if (!(iter < trip && truthy(args[e.first + 2], e.condType)))
        i = size_t(e.target) - 1;
      break;
    }
    case StepKind::Increment: ++*static_cast<int64_t *>(args[e.first]); break;
    case StepKind::SetSymbol:
      TS_RETURN_IF_ERROR(setSymbol(i, *static_cast<const int64_t *>(args[e.first])));
      break;
    case StepKind::Sequence: TS_RETURN_IF_ERROR(runSequenceStep(i)); break;
    }
    if constexpr (Profiled) {
      const StepNames &n = stepNames[at];
      if (*n.category) {
        const int32_t parent =
            record(n.name, n.category, n.impl, int32_t(at), start, monotonicNs(), n.nodes);
        if (e.kind == StepKind::External)
          for (tessera_profile_record_t k : profile.takeCalls()) {
            k.step = int32_t(at);
            k.parent = parent;
            k.run = runRecord.run;
            profile.add(k);
          }
      }
    }
  }
  for (uint32_t o : sequenceOutputs) { // views of the sequence outputs' elements
    sequenceViews[o].clear();
    for (const auto &element : sequences[plan.outputs[o]])
      sequenceViews[o].push_back(element->view());
  }
  return okStatus();
}

void Session::setProfiling(bool enabled) {
  if (enabled)
    impl_->profile.start();
  else
    impl_->profile.stop();
}

std::span<const tessera_profile_record_t> Session::profile() const {
  return impl_->profile.events();
}

Expected<const DLTensor *> Session::output(size_t index) const {
  if (index >= impl_->outputViews.size())
    return Error::format("output index {} out of range (the model has {} output{})", index,
                         impl_->outputViews.size(), impl_->outputViews.size() == 1 ? "" : "s");
  if (const TensorInfo &info = impl_->model->outputs()[index]; info.sequence)
    return Error::format("{} is a sequence ({}): read it with outputSequence",
                         tensorName("output", info, index), info.str());
  return &impl_->outputViews[index];
}

const LoadedModel &Session::model() const {
  return *impl_->model;
}
int32_t Session::numThreads() const {
  return impl_->pool.numThreads();
}
uint64_t Session::memoryBytes() const {
  const SessionImpl &s = *impl_;
  if (s.dynamic)
    return s.arenaCapacity + s.outputCapacity;
  uint64_t outputs = 0;
  for (uint32_t id : s.model->plan().outputs)
    outputs += s.model->plan().buffers[id].info.bytes();
  return s.model->plan().arenaBytes + outputs;
}

} // namespace tessera::runtime
