//===- runtime/c_api_internal.h - What the C API's files share --*- C++ -*-===//
//
// The handles' structs and the helpers every entry point of
// tessera/c/runtime.h uses (c_api.cpp, c_api_run.cpp): the live-handle
// registry, statuses, exception guards and the one-thread-at-a-time check
// of a session's stateful calls.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tessera/c/runtime.h"

#include "runtime/session.h"

#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <span>
#include <unordered_set>
#include <vector>

struct tessera_model {
  std::shared_ptr<const tessera::runtime::LoadedModel> model;
};

struct tessera_session {
  std::unique_ptr<tessera::runtime::Session> session;
  /// The thread inside one of its stateful calls (none: no thread).
  std::atomic<std::thread::id> user{};
};

struct tessera_run_result {
  std::unique_ptr<tessera::runtime::RunResult> result;
};

namespace tessera::capi {


using tessera::Error;
using tessera::Status;

/// The handles tessera_model_load / tessera_session_create gave out and
/// that are not released yet. Every entry point checks its handle here, so
/// that a released (or made-up) handle is an INVALID_ARGUMENT error, a
/// second release does nothing, instead of a use of freed memory. (A
/// released handle whose address a new one reuses is that new handle: that
/// case stays undefined, as the header says.)
class LiveHandles {
public:
  void add(const void *h) {
    std::lock_guard<std::mutex> lock(mutex_);
    live_.insert(h);
  }
  /// Whether `h` was live; it is not any more.
  bool remove(const void *h) {
    std::lock_guard<std::mutex> lock(mutex_);
    return live_.erase(h) > 0;
  }
  bool contains(const void *h) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return live_.count(h) > 0;
  }

private:
  mutable std::mutex mutex_;
  std::unordered_set<const void *> live_;
};

inline LiveHandles &liveHandles() {
  static LiveHandles *handles = new LiveHandles; // outlives every static destructor
  return *handles;
}

inline tessera_status_t *statusOf(tessera_status_code_t code, const std::string &message) {
  return tessera_status_create(code, message.c_str());
}

/// Holds a session's stateful calls for the calling thread while it is in
/// one (a call that calls another, as the by-name ones do, holds it once);
/// false when another thread is in one.
class InUse {
public:
  explicit InUse(tessera_session &s) : s_(s) {
    std::thread::id none;
    const std::thread::id me = std::this_thread::get_id();
    owner_ = s.user.compare_exchange_strong(none, me);
    ok_ = owner_ || none == me;
  }
  ~InUse() {
    if (owner_)
      s_.user.store(std::thread::id());
  }
  InUse(const InUse &) = delete;
  InUse &operator=(const InUse &) = delete;
  explicit operator bool() const { return ok_; }

private:
  tessera_session &s_;
  bool owner_ = false, ok_ = false;
};

/// The start of a stateful session entry point: a bad handle is an error,
/// and the session is held for this thread until the entry returns (another
/// thread inside one: FAILED_PRECONDITION).
#define TESSERA_STATEFUL_ENTRY(session)                                                            \
  if (tessera_status_t *bad = ::tessera::capi::badSession(session))                                \
    return bad;                                                                                    \
  const ::tessera::capi::InUse inUse(*(session));                                                  \
  if (!inUse)                                                                                      \
  return ::tessera::capi::inUseElsewhere()

inline tessera_status_t *inUseElsewhere() {
  return statusOf(TESSERA_STATUS_FAILED_PRECONDITION,
                  "the session is in use by another thread: its stateful calls (set_input, run, "
                  "get_output, ...) are for one thread at a time; tessera_session_run_with runs "
                  "one session from many threads at once");
}

/// The C status code of an error: its own code (Error::code), else
/// `fallback`.
inline tessera_status_code_t statusCodeOf(const Error &e, tessera_status_code_t fallback) {
  switch (e.code()) {
  case ErrorCode::InvalidArgument: return TESSERA_STATUS_INVALID_ARGUMENT;
  case ErrorCode::NotFound: return TESSERA_STATUS_NOT_FOUND;
  case ErrorCode::FailedPrecondition: return TESSERA_STATUS_FAILED_PRECONDITION;
  case ErrorCode::Unknown: break;
  }
  return fallback;
}

/// `s` as a C status: null when ok, else its error's code or `code`.
inline tessera_status_t *fromStatus(const Status &s, tessera_status_code_t code) {
  return s.ok() ? nullptr : statusOf(statusCodeOf(s.error(), code), s.error().str());
}

/// Runs `body` (returning a status), turning exceptions into statuses.
template <typename F> tessera_status_t *guard(F &&body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return tessera_status_create(TESSERA_STATUS_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception &e) {
    return statusOf(TESSERA_STATUS_INTERNAL, std::string("internal error: ") + e.what());
  } catch (...) {
    return tessera_status_create(TESSERA_STATUS_INTERNAL, "internal error: unknown exception");
  }
}

inline tessera_status_t *nullArgument(const char *what) {
  return statusOf(TESSERA_STATUS_INVALID_ARGUMENT, std::string(what) + " is NULL");
}

/// NULL, or the error for a handle that is NULL or not live.
inline tessera_status_t *badHandle(const void *h, const char *what, const char *from) {
  if (!h)
    return nullArgument(what);
  if (!liveHandles().contains(h))
    return statusOf(TESSERA_STATUS_INVALID_ARGUMENT,
                    std::string(what) + " is not a live handle (released already, or not from " +
                        from + ")");
  return nullptr;
}
inline tessera_status_t *badModel(const tessera_model_t *m) {
  return badHandle(m, "model", "tessera_model_load");
}
inline tessera_status_t *badSession(const tessera_session_t *s) {
  return badHandle(s, "session", "tessera_session_create");
}
inline bool liveModel(const tessera_model_t *m) {
  return m && liveHandles().contains(m);
}


/// The output of `outputs` named `name`: `call(index)`, else NOT_FOUND
/// listing the outputs.
template <typename F>
tessera_status_t *atOutputNamedIn(const std::vector<runtime::TensorInfo> &outputs,
                                  const char *name, F &&call) {
  std::string names;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].name == name)
      return call(i);
    names += (i ? ", '" : "'") + outputs[i].name + "'";
  }
  return statusOf(TESSERA_STATUS_NOT_FOUND,
                  "no output named '" + std::string(name) + "' (the outputs: " + names + ")");
}

/// *out = an output's view, else its error as INVALID_ARGUMENT.
inline tessera_status_t *viewInto(Expected<const DLTensor *> view, const DLTensor **out) {
  if (!view.ok())
    return statusOf(TESSERA_STATUS_INVALID_ARGUMENT, view.error().str());
  *out = *view;
  return nullptr;
}

/// The same for a sequence output's elements.
inline tessera_status_t *elementsInto(Expected<std::span<const DLTensor>> elements,
                                      const DLTensor **out, size_t *count) {
  if (!elements.ok())
    return statusOf(TESSERA_STATUS_INVALID_ARGUMENT, elements.error().str());
  *out = elements->data();
  *count = elements->size();
  return nullptr;
}

} // namespace tessera::capi
