//===- tests/threads/threads_check.cpp - One session shared by many threads ===//
//
// Issue 41: a session shared between threads corrupted the heap. Usage:
//
//   tessera_threads_check ARTIFACT [THREADS] [RUNS] [SESSION_THREADS]
//
// With only libtessera_runtime (so that the tsan preset builds nothing else):
//   1. THREADS (8) threads call Session::runWith (tessera_session_run_with)
//      RUNS (500) times each on one shared session, on inputs of their own,
//      and every output must be bit-identical to a single-threaded run on
//      the same inputs;
//   2. two threads use the stateful calls (set_input, run, get_output) of one
//      session at once: every call succeeds or returns FAILED_PRECONDITION
//      (the session in use by the other thread), nothing else, and at least
//      one is refused; the session then runs correctly on one thread.
// Inputs are f32 of static shapes (pseudo-random); prints what it checked
// and exits non-zero on any difference.
//
//===----------------------------------------------------------------------===//
#include "tessera/runtime.hpp"

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace rt = tessera::rt;

namespace {

/// One set of model inputs, pseudo-random from `seed`.
std::vector<rt::Tensor> inputsFor(const rt::Model &model, uint32_t seed) {
  std::vector<rt::Tensor> out;
  uint32_t state = seed * 2654435761u + 1;
  for (size_t i = 0; i < model.numInputs(); ++i) {
    rt::TensorInfo info = model.input(i);
    if (info.dtype.code != kDLFloat || info.dtype.bits != 32)
      throw std::runtime_error("input " + info.name + ": only f32 inputs are generated");
    rt::Tensor t = rt::Tensor::zeros(info);
    float *p = t.data<float>();
    for (size_t k = 0; k < t.bytes() / sizeof(float); ++k) {
      state = state * 1664525u + 1013904223u;
      p[k] = float(int32_t(state >> 8) % 2001 - 1000) / 1000.0f;
    }
    out.push_back(std::move(t));
  }
  return out;
}

/// A compact tensor's bytes.
std::string bytesOf(const DLTensor &t) {
  size_t n = (t.dtype.bits * t.dtype.lanes + 7) / 8;
  for (int32_t d = 0; d < t.ndim; ++d)
    n *= size_t(t.shape[d]);
  return std::string(static_cast<const char *>(t.data) + t.byte_offset, n);
}

/// Every output's bytes, concatenated (`output(o)` gives output o).
template <typename Outputs> std::string concatOutputs(Outputs &&output, size_t outputs) {
  std::string s;
  for (size_t o = 0; o < outputs; ++o)
    s += bytesOf(output(o));
  return s;
}

std::string bytesOf(const rt::RunResult &r, size_t outputs) {
  return concatOutputs([&](size_t o) -> const DLTensor & { return r.output(o); }, outputs);
}

std::vector<DLTensor> dlOf(const std::vector<rt::Tensor> &ts) {
  std::vector<DLTensor> out;
  for (const rt::Tensor &t : ts)
    out.push_back(t.dl());
  return out;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s ARTIFACT [THREADS] [RUNS] [SESSION_THREADS]\n", argv[0]);
    return 2;
  }
  const int threads = argc > 2 ? std::stoi(argv[2]) : 8;
  const int runs = argc > 3 ? std::stoi(argv[3]) : 500;
  const int sessionThreads = argc > 4 ? std::stoi(argv[4]) : 1;
  try {
    rt::Model model = rt::Model::load(argv[1]);
    const size_t outputs = model.numOutputs();
    rt::Session shared(model, {sessionThreads});

    // 1. runWith from many threads, each on its own inputs.
    std::vector<std::vector<rt::Tensor>> inputs;
    std::vector<std::string> expected;
    for (int t = 0; t < threads; ++t) {
      inputs.push_back(inputsFor(model, uint32_t(t)));
      expected.push_back(bytesOf(shared.runWith(dlOf(inputs.back())), outputs));
    }
    std::atomic<int> differ{0}, failed{0};
    std::string firstError;
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        const std::vector<DLTensor> dl = dlOf(inputs[size_t(t)]);
        for (int r = 0; r < runs; ++r) {
          try {
            if (bytesOf(shared.runWith(dl), outputs) != expected[size_t(t)])
              ++differ;
          } catch (const std::exception &e) {
            if (failed++ == 0)
              firstError = e.what();
          }
        }
      });
    for (std::thread &th : pool)
      th.join();
    std::printf("runWith: %d threads x %d runs on one session: %d differed from a single "
                "thread's outputs, %d failed%s%s\n",
                threads, runs, differ.load(), failed.load(), failed ? ": " : "",
                firstError.c_str());
    bool ok = differ == 0 && failed == 0;

    // 2. The stateful calls from two threads at once: refused, never corrupted.
    rt::Session stateful(model, {sessionThreads});
    std::atomic<int> refused{0}, wrongErrors{0}, calls{0};
    std::string wrong;
    auto hammer = [&](uint32_t seed) {
      std::vector<rt::Tensor> in = inputsFor(model, seed);
      for (int r = 0; r < runs * 4 && refused < 100; ++r) {
        for (size_t i = 0; i <= in.size(); ++i) {
          tessera_status_t *st =
              i < in.size() ? tessera_session_set_input(stateful.get(), i, &in[i].dl())
                            : tessera_session_run(stateful.get());
          ++calls;
          if (!st)
            continue;
          if (tessera_status_code(st) == TESSERA_STATUS_FAILED_PRECONDITION &&
              std::strstr(tessera_status_message(st), "in use by another thread"))
            ++refused;
          else if (wrongErrors++ == 0)
            wrong = tessera_status_message(st);
          tessera_status_free(st);
        }
      }
    };
    std::thread a(hammer, 100u), b(hammer, 200u);
    a.join();
    b.join();
    std::printf("stateful calls from two threads at once: %d calls, %d refused "
                "(FAILED_PRECONDITION), %d other errors%s%s\n",
                calls.load(), refused.load(), wrongErrors.load(), wrongErrors ? ": " : "",
                wrong.c_str());
    ok = ok && refused > 0 && wrongErrors == 0;
    // Still sound on one thread.
    std::vector<rt::Tensor> in = inputsFor(model, 0);
    for (size_t i = 0; i < in.size(); ++i)
      stateful.setInput(i, in[i]);
    stateful.run();
    const std::string after =
        concatOutputs([&](size_t o) -> const DLTensor & { return stateful.output(o); }, outputs);
    const bool sound = after == expected[0];
    std::printf("the stateful session afterwards on one thread: %s\n",
                sound ? "the same outputs" : "DIFFERENT outputs");
    ok = ok && sound;
    std::printf("%s\n", ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
