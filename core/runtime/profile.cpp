//===- runtime/profile.cpp - What a profiled run records ------------------===//
//
// The store behind runtime/profile.h: records with interned strings, and the
// profiler a plugin function is called with, whose records wait (under a
// lock: plugins may report from their worker threads) until the executor
// files them under the step they ran in.
//
//===----------------------------------------------------------------------===//
#include "runtime/profile.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <ctime>

namespace tessera::runtime {

int64_t monotonicNs() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec;
}

uint64_t currentThreadId() {
  thread_local const uint64_t id = uint64_t(::syscall(SYS_gettid));
  return id;
}

void Profile::start() {
  enabled_ = true;
  epoch_ = monotonicNs();
  runs_ = 0;
  events_.clear();
  std::lock_guard<std::mutex> lock(mutex_);
  pending_.clear();
}

const char *Profile::intern(std::string_view s) {
  std::lock_guard<std::mutex> lock(mutex_);
  return internLocked(s);
}

const char *Profile::internLocked(std::string_view s) {
  if (s.empty())
    return "";
  auto it = strings_.find(s);
  if (it == strings_.end())
    it = strings_.emplace(s).first;
  return it->c_str();
}

int32_t Profile::add(const tessera_profile_record_t &event) {
  events_.push_back(event);
  return int32_t(events_.size() - 1);
}

std::vector<tessera_profile_record_t> Profile::takeCalls() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<tessera_profile_record_t> out;
  out.swap(pending_);
  return out;
}

void Profile::record(void *state, const tessera_profile_event_t *event) {
  // Fields a plugin of a later minor appends are ignored; a struct too short
  // for the times is not an event.
  if (!state || !event || event->struct_size < sizeof(tessera_profile_event_t) || !event->name)
    return;
  auto *self = static_cast<Profile *>(state);
  tessera_profile_record_t r{};
  r.struct_size = sizeof r;
  r.category = "kernel";
  r.start_ns = event->start_ns - self->epoch_;
  r.duration_ns = event->end_ns > event->start_ns ? event->end_ns - event->start_ns : 0;
  r.thread = currentThreadId();
  r.step = -1;
  r.parent = -1;
  std::lock_guard<std::mutex> lock(self->mutex_);
  r.name = self->internLocked(event->name);
  r.nodes = self->internLocked(event->nodes ? event->nodes : "");
  r.impl = self->internLocked(event->impl ? event->impl : "");
  self->pending_.push_back(r);
}

} // namespace tessera::runtime
