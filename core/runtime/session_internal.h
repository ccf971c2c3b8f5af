//===- runtime/session_internal.h - LoadedModel internals ------*- C++ -*-===//
//
// Private to runtime/session*.cpp: what a loaded model holds
// (LoadedModelImpl, filled by session_load.cpp) and what a session reads of
// it (session.cpp), with the buffer and host code holders it is made of.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "plugin/registry.h"
#include "runtime/host_abi.h"
#include "runtime/plan.h"
#include "runtime/profile.h"
#include "runtime/thread_pool.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace tessera::runtime {

namespace detail {

/// 64-byte aligned, zero-filled bytes.
struct AlignedBytes {
  struct Free {
    void operator()(void *p) const { std::free(p); }
  };
  std::unique_ptr<void, Free> ptr;

  static AlignedBytes make(uint64_t size) {
    uint64_t n =
        std::max<uint64_t>((size + kBufferAlignment - 1) / kBufferAlignment, 1) * kBufferAlignment;
    AlignedBytes b;
    b.ptr.reset(std::aligned_alloc(kBufferAlignment, n));
    if (b.ptr)
      std::memset(b.ptr.get(), 0, n);
    return b;
  }
  uint8_t *data() const { return static_cast<uint8_t *>(ptr.get()); }
};

/// dlopen'ed host code and the memfd it was loaded from, closed at the end.
///
/// The fd stays open while the library is loaded: dlopen finds an already
/// loaded object by its path string before it looks at the file, so had the
/// fd been closed, the next model's memfd could get the same number, and
/// dlopen("/proc/self/fd/N") would hand back this model's code.
struct HostLibrary {
  void *handle = nullptr;
  int fd = -1;
  HostLibrary() = default;
  HostLibrary(const HostLibrary &) = delete;
  HostLibrary &operator=(const HostLibrary &) = delete;
  ~HostLibrary() {
    if (handle)
      dlclose(handle);
    if (fd >= 0)
      ::close(fd);
  }
};

/// One element of a sequence held by a session: its own copy of a tensor
/// (sequences are values: an element is never written after it is made,
/// so lists share elements).
struct SequenceElement {
  DLDataType dtype{};
  std::vector<int64_t> shape;
  uint64_t bytes = 0;
  AlignedBytes data;

  /// A copy of `bytes` bytes at `src` as a tensor of `dtype` and `shape`.
  static std::shared_ptr<const SequenceElement> make(DLDataType dtype,
                                                     std::vector<int64_t> shape,
                                                     const void *src, uint64_t bytes);
  DLTensor view() const;
};
using SequenceList = std::vector<std::shared_ptr<const SequenceElement>>;

/// "step 3" or "step 3 (label)", for messages.
std::string stepName(const Plan &plan, size_t s);

} // namespace detail

namespace detail {

struct StepExec {
  StepKind kind;
  tessera_host_fn_t host;
  const plugin::PluginFunction *fn;
  uint32_t first, count; // into hostArgs (Host, Copy, control) or dlPtrs (External)
  uint64_t copyBytes;
  uint64_t rowsBytes = 0; // Copy into a row (3 args): the destination's planned bytes
  int32_t growSymbol = -1; // ... whose rows are an unbounded run-time symbol: grown on demand
  uint32_t target = 0;   // Jump, LoopTest
  DLDataType condType{}; // Jump with a condition, LoopTest: the condition's dtype
  // External over symbolic dims: its symbols' values, gathered into
  // externalValues[symFirst, symFirst + symCount) from the plan symbols
  // externalSymbols[same range] before each call.
  uint32_t symFirst = 0, symCount = 0;
  bool sequenceCopy = false; // Copy between sequence buffers: the list
};

/// Where a bound buffer's pointer goes.
struct Slots {
  std::vector<size_t> host; // into hostArgs
  std::vector<size_t> dl;   // into dlArgs
};

} // namespace detail

class LoadedModel;

/// A session's state (runtime/session.h). Steps' argument arrays are built
/// once; run() only calls functions. A plan with symbols (session_shapes.cpp)
/// also keeps each buffer's shape for this run's symbol values and re-plans
/// memory when they change.
namespace detail {
struct SessionPool;
/// runShared's pool of states for `model` (session_shared.cpp).
std::shared_ptr<SessionPool> makeSessionPool(std::shared_ptr<const LoadedModel> model,
                                             SessionOptions options);
} // namespace detail

class SessionImpl {
public:
  SessionImpl(std::shared_ptr<const LoadedModel> m, int32_t threads);

  Status build();
  /// Checks `t` against `info` (a symbolic dim: any value within its bounds)
  /// and returns its data pointer in `out` and its shape in `shape`.
  Status bind(const char *what, const TensorInfo &info, size_t index, const DLTensor &t,
              void *&out, std::vector<int64_t> *shape = nullptr) const;
  void patch(const detail::Slots &slots, void *ptr);

  // Symbolic plans (session_shapes.cpp).
  /// The symbol values the bound inputs give (conflicts between inputs are
  /// errors naming both); then, when they changed, every buffer's shape,
  /// the memory plan at those sizes, pointers and copy sizes.
  Status prepareShapes();
  /// Every buffer's shape at symbolValues, memory planned (and grown) at
  /// `planAt` (each symbol at least its value), pointers and copy sizes.
  Status resize(const std::vector<int64_t> &planAt);
  /// Run-time symbols (runtime/plan.h SetSymbol): which derived symbols,
  /// buffers and copies follow each; built once.
  void indexRuntimeSymbols();
  /// A SetSymbol step: the value, the derived symbols computed from it, the
  /// shapes of the buffers that have them. Errors name the step.
  Status setSymbol(size_t step, int64_t value);
  /// shapes[b] (and Copy sizes) at symbolValues for the buffers `list`.
  void refreshShapes(const std::vector<uint32_t> &list);
  /// Mid-run, at `step`: run-time symbol k, which has no upper bound, needs
  /// `needed` (a loop's scan rows). Plans memory again with k at least
  /// doubled and moves the buffers live at `step` (and the outputs) to their
  /// new places; the old memory is freed after the move.
  Status grow(size_t step, uint32_t k, int64_t needed);
  /// setSymbol for run-time symbol k (a SetSymbol's, or a dim of an element
  /// a Sequence step takes out).
  Status setSymbolAt(size_t step, uint32_t k, int64_t value);
  /// A Sequence step (session_sequences.cpp).
  Status runSequenceStep(size_t step);
  /// The data pointer and this run's shape of tensor argument `a` of `step`.
  std::pair<void *, std::vector<int64_t>> tensorArg(size_t step, size_t a) const;
  /// The derived symbols that follow run-time symbol k, at symbolValues;
  /// `withinPlan`: each must fit the memory planned (errors name `step`).
  Status deriveFollowers(size_t step, uint32_t k, bool withinPlan);

  std::shared_ptr<const LoadedModel> model;
  ThreadPool pool;
  detail::AlignedBytes arena, outputStorage;
  std::vector<void *> bufferPtr; // per buffer: its data at creation
  std::vector<detail::StepExec> steps;
  std::vector<void *> hostArgs;
  std::vector<DLTensor> dlArgs;
  std::vector<const DLTensor *> dlPtrs;
  std::vector<detail::Slots> inputSlots, outputSlots;
  std::vector<bool> inputSet;
  std::vector<void *> outputOwn; // session storage of each output
  std::vector<DLTensor> outputViews;
  // Sequences: per buffer (sequence buffers only), its elements; per output,
  // views of a sequence output's elements after a run.
  std::vector<detail::SequenceList> sequences;
  std::vector<std::vector<DLTensor>> sequenceViews;
  std::vector<uint32_t> sequenceOutputs; // the outputs that are sequences

  // Symbolic plans only.
  bool dynamic = false;
  std::vector<int64_t> symbolValues;  // this run's (hosts steps read them)
  std::vector<uint32_t> externalSymbols; // StepExec::symFirst indexes these two
  std::vector<int64_t> externalValues;
  std::vector<int64_t> plannedValues; // what memory is planned for (empty: nothing yet)
  /// Per unbounded run-time symbol, the most it was set to since the last
  /// run began (a loop's iterations set it many times; the last value says
  /// little about what the next run needs).
  std::vector<int64_t> runMax;
  std::vector<std::vector<int64_t>> shapes;      // per buffer, at plannedValues
  std::vector<std::vector<int64_t>> givenShapes; // per input, as bound
  std::vector<void *> inputPtr, outputPtr;       // as bound (outputPtr null: session storage)
  std::vector<std::vector<int64_t>> outputShapes; // per output bound by the caller: its shape
  uint64_t arenaCapacity = 0, outputCapacity = 0;
  std::vector<int64_t> hostSlotBuffer;           // per hostArgs slot: its buffer, -1: symbols
  std::vector<uint32_t> dlSlotBuffer;            // per dlArgs slot: its buffer
  // Run-time symbols: per symbol, whether its value is known only mid-run
  // (a run-time one or one derived from it); per run-time symbol, the
  // derived symbols that follow it (in order) and the buffers they shape.
  std::vector<bool> midRun;
  std::vector<std::vector<uint32_t>> followers, reshaped;
  std::vector<uint32_t> midRunBuffers; // every buffer with a mid-run dim
  std::vector<uint32_t> copySteps;     // the plan's Copy steps (their sizes may follow)
  std::vector<LiveRange> live;         // per buffer (grow() moves the live ones)

  // Profiling (runtime/profile.h).
  /// Runs the steps; the profiled instance records each (run() picks one).
  template <bool Profiled> Status execute();
  /// Per step: what its records say (made when profiling is first on).
  struct StepNames {
    const char *name, *category, *impl, *nodes = "";
  };
  void nameSteps();
  Profile profile;
  std::vector<StepNames> stepNames;
};

class LoadedModelImpl {
public:
  ~LoadedModelImpl() {
    // Functions before their modules, modules before the host code.
    functions.clear();
    modules.clear();
  }

  std::string display, metadataJson;
  std::vector<TensorInfo> inputs, outputs;
  Plan plan;
  detail::AlignedBytes weights;
  detail::HostLibrary host;
  std::string hostCpu; // the level of host code loaded (runtime/host_levels.h)
  std::vector<tessera_host_fn_t> hostFns;               // per step (null unless Host)
  std::vector<std::unique_ptr<plugin::PluginModule>> modules; // per plan module
  std::vector<plugin::PluginFunction> functions;              // per step (unbound unless External)
};

} // namespace tessera::runtime
