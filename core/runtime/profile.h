//===- runtime/profile.h - What a profiled run records ----------*- C++ -*-===//
//
// A session that profiles (Session::setProfiling) records one event per step
// it runs (host steps named by their ops and nodes, plugin steps by their
// region, copies, shape steps), one per run, and the events plugins report
// from inside their functions (plugin ABI 1.6: a oneDNN primitive, a json
// kernel), each linked to the step it ran in. Every reader takes the same
// events: `tessera run --profile` (the table), `--profile-json` (a Chrome
// trace), Python's Session.profile(), placement by measurement.
//
// Off, a run costs nothing more: the executor is instantiated once with and
// once without profiling (SessionImpl::execute<bool>), and run() picks one.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tessera/c/plugin.h"
#include "tessera/c/runtime.h"

#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::runtime {

/// CLOCK_MONOTONIC in nanoseconds (the clock plugins report in).
int64_t monotonicNs();
/// The calling thread's OS id (what a trace's tracks are).
uint64_t currentThreadId();

class Profile {
public:
  /// Starts a profile: the events so far are dropped, times count from now.
  void start();
  void stop() { enabled_ = false; }
  bool enabled() const { return enabled_; }

  /// A copy of `s` that lives as long as the profile (the events' strings).
  const char *intern(std::string_view s);
  /// Adds an event (its strings interned already); returns its index.
  int32_t add(const tessera_profile_record_t &event);
  void setDuration(int32_t event, int64_t ns) { events_[size_t(event)].duration_ns = ns; }
  /// The run now beginning; `run` of the events it holds.
  uint32_t beginRun() { return runs_++; }
  int64_t sinceStart(int64_t monotonic) const { return monotonic - epoch_; }

  /// The context a plugin function is called with during a profiled step.
  /// Its events wait until takeCalls() gives them to the step, which is
  /// recorded after its call returns.
  const tessera_call_context_t *callContext() const { return &context_; }
  /// The events plugins reported since the last call, emptied.
  std::vector<tessera_profile_record_t> takeCalls();

  const std::vector<tessera_profile_record_t> &events() const { return events_; }

private:
  static void record(void *state, const tessera_profile_event_t *event);
  const char *internLocked(std::string_view s);

  bool enabled_ = false;
  int64_t epoch_ = 0;
  uint32_t runs_ = 0;
  std::vector<tessera_profile_record_t> events_;
  std::set<std::string, std::less<>> strings_;
  std::mutex mutex_; // strings_ and pending_: plugins may report from their worker threads
  std::vector<tessera_profile_record_t> pending_;
  tessera_profiler_t profiler_{sizeof(tessera_profiler_t), this, &Profile::record};
  tessera_call_context_t context_{sizeof(tessera_call_context_t), &profiler_};
};

} // namespace tessera::runtime
