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

/// "step 3" or "step 3 (label)", for messages.
std::string stepName(const Plan &plan, size_t s);

} // namespace detail

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
  std::vector<tessera_host_fn_t> hostFns;               // per step (null unless Host)
  std::vector<std::unique_ptr<plugin::PluginModule>> modules; // per plan module
  std::vector<plugin::PluginFunction> functions;              // per step (unbound unless External)
};

} // namespace tessera::runtime
