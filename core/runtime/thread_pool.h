//===- runtime/thread_pool.h - Threads for host kernels --------*- C++ -*-===//
//
// The parallel_for behind tessera_host_ctx_t (runtime/host_abi.h). It runs
// on OpenMP (libgomp), the runtime that oneDNN (the dnnl plugin) uses too,
// so that host kernels and plugin kernels share one pool of worker threads
// instead of each bringing its own and oversubscribing the cores.
//
// A range [0, n) is cut into at most num_threads contiguous chunks, one per
// thread. A parallel_for called from inside a body runs serially (OpenMP
// nesting is off), which is what a kernel nested in a parallel loop wants.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "support/error.h"

#include "runtime/host_abi.h"

#include <cstdint>

namespace tessera::runtime {

/// The number of threads a session with `requested` threads uses: 0 means
/// every core (omp_get_max_threads()); negative values count as 0.
int32_t resolveNumThreads(int32_t requested);
/// Whether `requested` is a thread count a session takes: 0 (every core) up
/// to 4x this machine's cores (at least 256); the error says why not.
Status checkNumThreads(int32_t requested);

/// A host context with `numThreads` threads (>= 1; see resolveNumThreads).
class ThreadPool {
public:
  explicit ThreadPool(int32_t numThreads);
  const tessera_host_ctx_t *ctx() const { return &ctx_; }
  int32_t numThreads() const { return ctx_.num_threads; }

private:
  tessera_host_ctx_t ctx_{};
};

/// While alive, OpenMP parallel regions that plugin libraries start on this
/// thread (oneDNN's primitives) use `numThreads` threads, as the host
/// kernels do; the thread's previous setting comes back afterwards, so an
/// application's own OpenMP code is not affected by a session's count.
class OmpThreadsScope {
public:
  explicit OmpThreadsScope(int32_t numThreads);
  ~OmpThreadsScope();
  OmpThreadsScope(const OmpThreadsScope &) = delete;
  OmpThreadsScope &operator=(const OmpThreadsScope &) = delete;

private:
  int32_t previous_ = 0; // 0: nothing to restore
};

} // namespace tessera::runtime
