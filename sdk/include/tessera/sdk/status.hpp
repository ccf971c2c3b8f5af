//===- tessera/sdk/status.hpp - Errors and statuses of the plugin SDK -*- C++ -*-===//
//
// tessera::sdk::Error (an exception with a status code, what the
// trampolines of plugin.hpp report) and the status objects of the C ABI
// (tessera/c/plugin.h) made from it. Included by plugin.hpp.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tessera/c/plugin.h"

#include <cstddef>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

/// DLDataType equality. In the global namespace, where DLDataType is, so that
/// argument-dependent lookup finds it from any namespace.
inline bool operator==(const DLDataType &a, const DLDataType &b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

namespace tessera::sdk {

//===----------------------------------------------------------------------===//
// Errors and statuses
//===----------------------------------------------------------------------===//

/// An exception with a status code; what the trampolines report.
class Error : public std::runtime_error {
public:
  explicit Error(const std::string &message,
                 tessera_status_code_t code = TESSERA_STATUS_INVALID_ARGUMENT)
      : std::runtime_error(message), code_(code) {}
  tessera_status_code_t code() const { return code_; }

private:
  tessera_status_code_t code_;
};

namespace detail {

struct OwnedStatus {
  tessera_plugin_status_t status;
  std::string message;
};

inline void releaseStatus(tessera_plugin_status_t *s) {
  delete reinterpret_cast<OwnedStatus *>(s);
}

} // namespace detail

/// A new plugin status (released by the core through status->release).
inline tessera_plugin_status_t *makeStatus(tessera_status_code_t code, std::string message) {
  auto *o = new (std::nothrow) detail::OwnedStatus;
  if (!o)
    return nullptr; // out of memory: nothing better to report
  o->message = std::move(message);
  o->status.struct_size = sizeof(tessera_plugin_status_t);
  o->status.code = code == TESSERA_STATUS_OK ? TESSERA_STATUS_INTERNAL : code;
  o->status.message = o->message.c_str();
  o->status.release = &detail::releaseStatus;
  static_assert(offsetof(detail::OwnedStatus, status) == 0);
  return &o->status;
}

/// Releases a status received from the other side (NULL is fine).
inline void releaseStatus(tessera_plugin_status_t *s) {
  if (s && s->release)
    s->release(s);
}

/// Runs `f`, turning exceptions into a status. `f` returns void.
template <typename F> tessera_plugin_status_t *guard(F &&f) noexcept {
  try {
    f();
    return nullptr;
  } catch (const Error &e) {
    return makeStatus(e.code(), e.what());
  } catch (const std::bad_alloc &) {
    return makeStatus(TESSERA_STATUS_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception &e) {
    return makeStatus(TESSERA_STATUS_INTERNAL, e.what());
  } catch (...) {
    return makeStatus(TESSERA_STATUS_INTERNAL, "unknown C++ exception");
  }
}

/// Copies `text` into a caller's reason buffer (truncated, NUL-terminated).
inline void writeReason(char *buf, size_t size, std::string_view text) {
  if (!buf || size == 0)
    return;
  size_t n = std::min(size - 1, text.size());
  std::memcpy(buf, text.data(), n);
  buf[n] = '\0';
}

} // namespace tessera::sdk
