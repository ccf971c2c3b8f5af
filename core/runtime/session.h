//===- runtime/session.h - Loading and running an artifact -----*- C++ -*-===//
//
// The executor's C++ API, inside libtessera_runtime (the C API in
// tessera/c/runtime.h wraps it).
//
// LoadedModel: an artifact checked and loaded once, immutable afterwards and
// shared by any number of sessions. Loading checks everything before any
// code of the artifact is loaded or run: the container's digests, the
// metadata, the plan (validatePlan, the weights' size, a section for each
// plugin module, inputs/outputs agreeing with the metadata) and that every
// plugin module's type key has a loaded plugin. Then it copies the weights
// into an aligned buffer, loads the host shared object from memory (memfd,
// dlopen RTLD_LOCAL), checks its ABI version and resolves every host step's
// symbol, and loads each plugin module through its plugin's factory.
//
// Session: its stateful calls (setInput, run, output) are for one thread at
// a time. It owns its activations (the arena) and its output storage; per
// step, the argument arrays are built at creation so that run() only calls
// functions. Inputs are zero-copy: the steps read the caller's memory
// directly, which must stay valid and unchanged until run() returns. Outputs
// live in the session (valid until the next run() or the session's end)
// unless setOutput binds caller memory.
//
// runShared() is the call for many threads: it takes the inputs and returns
// the outputs, each call in state of its own (activations, outputs) leased
// from the session's pool, made when every state is busy and kept for the
// next call; the RunResult holds the state until it goes.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/plan.h"
#include "support/error.h"
#include "support/export.h"

#include <dlpack/dlpack.h>

#include "tessera/c/runtime.h"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::runtime {

class LoadedModelImpl;

class TESSERA_RT_EXPORT LoadedModel {
public:
  /// Reads, checks and loads an artifact file; messages start with `path`.
  static Expected<std::shared_ptr<const LoadedModel>> load(const std::string &path);
  /// The same from bytes; `display` names them in messages.
  static Expected<std::shared_ptr<const LoadedModel>> load(std::string bytes,
                                                           const std::string &display);

  ~LoadedModel();
  LoadedModel(const LoadedModel &) = delete;
  LoadedModel &operator=(const LoadedModel &) = delete;

  /// Model inputs / outputs, in order (names, dtypes, shapes).
  const std::vector<TensorInfo> &inputs() const;
  const std::vector<TensorInfo> &outputs() const;
  /// The metadata section as written by the compiler.
  const std::string &metadataJson() const;
  const Plan &plan() const;
  /// Where the model came from (the path, or the display name).
  const std::string &display() const;
  /// The CPU the host code loaded was built for (one of the artifact's
  /// levels, runtime/host_levels.h); "" without host code.
  const std::string &hostCpu() const;

private:
  friend class SessionImpl;
  LoadedModel();
  std::unique_ptr<LoadedModelImpl> impl_;
};

struct SessionOptions {
  /// Threads for host kernels; 0: every core.
  int32_t numThreads = 0;
};

class SessionImpl;
class Session;

namespace detail {
struct SessionPool;
}

/// The outputs of one Session::runShared: views into the state the call ran
/// in, which it holds (leased from the session's pool) until it goes. It may
/// outlive the session.
class TESSERA_RT_EXPORT RunResult {
public:
  ~RunResult();
  RunResult(const RunResult &) = delete;
  RunResult &operator=(const RunResult &) = delete;

  /// A view of output `index` (errors as Session::output's).
  Expected<const DLTensor *> output(size_t index) const;
  /// The elements of sequence output `index`.
  Expected<std::span<const DLTensor>> outputSequence(size_t index) const;
  const LoadedModel &model() const;

private:
  friend class Session;
  RunResult(std::shared_ptr<detail::SessionPool> pool, std::unique_ptr<Session> state);
  std::shared_ptr<detail::SessionPool> pool_;
  std::unique_ptr<Session> state_;
};

class TESSERA_RT_EXPORT Session {
public:
  static Expected<std::unique_ptr<Session>> create(std::shared_ptr<const LoadedModel> model,
                                                   const SessionOptions &options = {});
  ~Session();
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;

  /// Binds model input `index` (or the input named `name`) to the caller's
  /// tensor: CPU, the input's dtype and shape, dense row-major (strides null
  /// or compact), data + byte_offset aligned to the element size. Only the
  /// data pointer is kept; the tensor struct itself may go away.
  Status setInput(size_t index, const DLTensor &tensor);
  Status setInput(std::string_view name, const DLTensor &tensor);
  /// Binds sequence input `index` (TensorInfo::sequence) to a list of
  /// tensors, each as setInput checks one (CPU, the input's dtype and
  /// element rank, dense row-major): copied, so they may go away.
  Status setInputSequence(size_t index, std::span<const DLTensor> elements);
  /// Binds model output `index` to caller memory (same checks as inputs);
  /// run() then writes it there. `tensor` null: back to session storage.
  Status setOutput(size_t index, const DLTensor *tensor);

  /// Runs every step. Every input must be set.
  Status run();

  /// Runs the model on `inputs` (one tensor per model input, in order, each
  /// as setInput checks it; read in place until the call returns) and
  /// returns the outputs. Safe to call from many threads at once: each call
  /// runs in state of its own from the session's pool (none of the stateful
  /// calls' bindings, outputs or profiling). Sequence inputs: the stateful
  /// calls.
  Expected<std::unique_ptr<RunResult>> runShared(std::span<const DLTensor> inputs) const;

  /// A view of output `index`, valid until the next run() or the session's
  /// end (or of the caller's tensor bound by setOutput).
  Expected<const DLTensor *> output(size_t index) const;

  /// The elements of sequence output `index` after run(): views valid
  /// until the next run() or the session's end.
  Expected<std::span<const DLTensor>> outputSequence(size_t index) const;

  /// Profiling (runtime/profile.h): on, each run records where its time
  /// goes (the records so far are dropped); off, runs record nothing and
  /// cost nothing more. profile(): the records since it was switched on,
  /// valid until the next run or setProfiling.
  void setProfiling(bool enabled);
  std::span<const tessera_profile_record_t> profile() const;

  const LoadedModel &model() const;
  int32_t numThreads() const;
  /// Bytes of activations and output storage the session holds now: the
  /// plan's, or, with symbolic sizes, what recent runs needed (it grows for
  /// a larger run and is given back once a run needs a quarter of it).
  uint64_t memoryBytes() const;

private:
  Session();
  std::unique_ptr<SessionImpl> impl_;
  std::shared_ptr<detail::SessionPool> pool_; // runShared's states
};

} // namespace tessera::runtime
