//===- tessera/sdk/profile.hpp - Reporting to the core's profiler -*- C++ -*-===//
//
// Plugin ABI 1.6. While the core profiles a run (`tessera run --profile`,
// Python's Session.profile()) it calls functions through call_with_context.
// The SDK's trampoline (plugin.hpp) makes that call's profiler current on
// the calling thread for the duration of the call; a plugin then reports
// what it runs, one event per primitive or kernel:
//
//   for (const Step &s : steps) {
//     tessera::sdk::ProfileScope scope("convolution", s.nodes.c_str(), s.impl.c_str());
//     s.run();
//   }
//
// When the run is not profiled a ProfileScope costs one branch and reads no
// clock. Report from the thread that called the function: the profiler is
// current only there (worker threads of the plugin's own pool see none).
// JsonRuntime reports, for free, each plan it prepares for a new shape of a
// symbolic function ("prepare shape"), which a profile otherwise shows as
// a slow first call.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tessera/c/plugin.h"

#include <cstddef>
#include <cstdint>
#include <ctime>

namespace tessera::sdk {

namespace detail {
/// The profiler of the call this thread is in (null: not profiled).
inline thread_local const tessera_profiler_t *currentProfiler = nullptr;
} // namespace detail

/// Whether the call this thread is in is being profiled.
inline bool profiling() { return detail::currentProfiler != nullptr; }

/// The clock events are reported in: CLOCK_MONOTONIC, nanoseconds.
inline int64_t profileClockNs() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec;
}

/// Reports one event of the current call: `name` ran from `startNs` to
/// `endNs` (profileClockNs), computing `nodes` (comma-separated graph node
/// names, or null) with implementation `impl` (or null). Nothing when the
/// call is not profiled. The strings are copied.
inline void profileEvent(const char *name, const char *nodes, const char *impl, int64_t startNs,
                         int64_t endNs) {
  const tessera_profiler_t *p = detail::currentProfiler;
  if (!p || !p->record || !name)
    return;
  tessera_profile_event_t e{sizeof(tessera_profile_event_t), name, nodes, impl, startNs, endNs};
  p->record(p->state, &e);
}

/// Times its own lifetime and reports it as one event (when profiled). The
/// strings must outlive the scope.
class ProfileScope {
public:
  explicit ProfileScope(const char *name, const char *nodes = nullptr, const char *impl = nullptr)
      : name_(name), nodes_(nodes), impl_(impl), start_(profiling() ? profileClockNs() : 0) {}
  ~ProfileScope() {
    if (start_)
      profileEvent(name_, nodes_, impl_, start_, profileClockNs());
  }
  ProfileScope(const ProfileScope &) = delete;
  ProfileScope &operator=(const ProfileScope &) = delete;

private:
  const char *name_, *nodes_, *impl_;
  int64_t start_;
};

/// Makes `profiler` current on this thread while alive (the trampoline of
/// call_with_context; a vendor never needs it).
class ProfilerBinding {
public:
  explicit ProfilerBinding(const tessera_profiler_t *profiler)
      : previous_(detail::currentProfiler) {
    detail::currentProfiler = profiler;
  }
  ~ProfilerBinding() { detail::currentProfiler = previous_; }
  ProfilerBinding(const ProfilerBinding &) = delete;
  ProfilerBinding &operator=(const ProfilerBinding &) = delete;

private:
  const tessera_profiler_t *previous_;
};

/// The profiler a call context carries (null: none, or a context from a
/// core too old to have one).
inline const tessera_profiler_t *profilerOf(const tessera_call_context_t *context) {
  if (!context || context->struct_size < offsetof(tessera_call_context_t, profiler) +
                                             sizeof(context->profiler))
    return nullptr;
  const tessera_profiler_t *p = context->profiler;
  return p && p->struct_size >= sizeof(tessera_profiler_t) ? p : nullptr;
}

} // namespace tessera::sdk
