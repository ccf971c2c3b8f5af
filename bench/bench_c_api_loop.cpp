//===- bench/bench_c_api_loop.cpp - The C API's per-run cost ----------------===//
//
//   bench_c_api_loop MODEL.tsr [ITERATIONS] [REPEATS]
//
// What one inference costs through tessera/c/runtime.h alone, the baseline of
// bench/python_overhead.py: per iteration, bind every input (checked, zero-
// copy), run, get every output and copy it out (as Session.run does). Inputs
// are ones of each input's dtype and shape (static shapes only). Prints the
// best of REPEATS means, in nanoseconds per iteration: "c_api_ns_per_run N".
//
//===----------------------------------------------------------------------===//
#include "tessera/runtime.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_c_api_loop MODEL.tsr [ITERATIONS] [REPEATS]\n");
    return 2;
  }
  const long iterations = argc > 2 ? std::atol(argv[2]) : 20000;
  const int repeats = argc > 3 ? std::atoi(argv[3]) : 5;
  try {
    auto model = tessera::rt::Model::load(argv[1]);
    tessera::rt::Session session(model, tessera::rt::SessionOptions{1});
    std::vector<tessera::rt::Tensor> inputs;
    for (size_t i = 0; i < model.numInputs(); ++i)
      inputs.push_back(tessera::rt::Tensor::zeros(model.input(i)));
    std::vector<std::vector<char>> outputs(model.numOutputs());
    for (size_t i = 0; i < model.numOutputs(); ++i)
      outputs[i].resize(model.output(i).bytes());
    auto once = [&] {
      for (size_t i = 0; i < inputs.size(); ++i)
        tessera::rt::check(tessera_session_set_input_checked(session.get(), i, &inputs[i].dl(),
                                                             inputs[i].bytes()));
      tessera::rt::check(tessera_session_run(session.get()));
      for (size_t i = 0; i < outputs.size(); ++i) {
        const DLTensor *t = nullptr;
        tessera::rt::check(tessera_session_get_output(session.get(), i, &t));
        std::memcpy(outputs[i].data(), static_cast<const char *>(t->data) + t->byte_offset,
                    outputs[i].size());
      }
    };
    for (int i = 0; i < 1000; ++i)
      once();
    double best = 1e30;
    for (int r = 0; r < repeats; ++r) {
      auto start = std::chrono::steady_clock::now();
      for (long i = 0; i < iterations; ++i)
        once();
      double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start)
                      .count();
      best = std::min(best, ns / double(iterations));
    }
    std::printf("c_api_ns_per_run %.1f\n", best);
  } catch (const tessera::rt::Error &e) {
    std::fprintf(stderr, "bench_c_api_loop: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
