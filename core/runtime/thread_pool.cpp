//===- runtime/thread_pool.cpp - parallel_for on OpenMP -------------------===//
#include "runtime/thread_pool.h"

#include <omp.h>

#include <algorithm>
#include <thread>

namespace tessera::runtime {

namespace {

void parallelFor(const tessera_host_ctx_t *ctx, int64_t n, tessera_host_body_t body,
                 void *closure) {
  if (n <= 0)
    return;
  const int64_t threads = ctx->num_threads;
  if (threads <= 1 || n == 1 || omp_in_parallel()) {
    body(closure, 0, n);
    return;
  }
  const int64_t chunks = std::min(n, threads);
#pragma omp parallel for num_threads(int(chunks)) schedule(static, 1)
  for (int64_t c = 0; c < chunks; ++c)
    body(closure, n * c / chunks, n * (c + 1) / chunks);
}

} // namespace

int32_t resolveNumThreads(int32_t requested) {
  if (requested > 0)
    return requested;
  return std::max(1, omp_get_max_threads());
}

Status checkNumThreads(int32_t requested) {
  const int32_t cores = int32_t(std::max(1u, std::thread::hardware_concurrency()));
  const int32_t most = std::max(256, 4 * cores);
  if (requested < 0 || requested > most)
    return Error::format("the number of threads must be 0 (every core) to {} (4x this machine's "
                         "{} cores, at least 256), not {}",
                         most, cores, requested);
  return okStatus();
}

ThreadPool::ThreadPool(int32_t numThreads) {
  ctx_.parallel_for = &parallelFor;
  ctx_.runtime = this;
  ctx_.num_threads = std::max(1, numThreads);
}

OmpThreadsScope::OmpThreadsScope(int32_t numThreads) {
  const int32_t current = omp_get_max_threads();
  if (numThreads > 0 && current != numThreads) {
    previous_ = current;
    omp_set_num_threads(numThreads);
  }
}

OmpThreadsScope::~OmpThreadsScope() {
  if (previous_ > 0)
    omp_set_num_threads(previous_);
}

} // namespace tessera::runtime
