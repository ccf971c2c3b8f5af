//===- bench/dnnl_native/main.cpp - Hand-written oneDNN benchmark ---------===//
//
// bench_dnnl_native --model resnet18|mobilenetv3 --weights W.npz --input X.npy
//                   [--output Y.npy] [--repeat N] [--warmup N] [--width W]
//                   [--verbose]
//
// The baseline of issue 7: the benchmark networks of make_models.py written
// by hand with the oneDNN C++ API (models.cpp, net.h), on exactly the ONNX
// file's weights (make_models.py --weights-npz). Builds every primitive
// once, runs --warmup times, then times --repeat runs (each ends with a
// stream wait) and prints one machine-readable line:
//   latency_ms median=12.345 min=12.001 mean=12.400 runs=30 threads=2
// (threads: OMP_NUM_THREADS, which the OpenMP build of oneDNN follows).
// --output writes the logits (1 x 1000 float32) as .npy; --verbose lists the
// implementation oneDNN picked for each primitive. Errors go to stderr with
// exit code 1.
//
//===----------------------------------------------------------------------===//
#include "models.h"

#include "tools/npy.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace npy = tessera::tools::npy;

namespace {

struct Args {
  std::string model, weights, input, output;
  int repeat = 30, warmup = 5;
  double width = 1.0;
  bool verbose = false;
};

const char *kUsage =
    "usage: bench_dnnl_native --model resnet18|mobilenetv3 --weights W.npz --input X.npy\n"
    "                         [--output Y.npy] [--repeat N] [--warmup N] [--width W] "
    "[--verbose]\n";

Args parseArgs(int argc, char **argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        throw std::runtime_error(arg + " needs a value");
      return argv[++i];
    };
    auto number = [&](const std::string &v) {
      try {
        size_t used = 0;
        int n = std::stoi(v, &used);
        if (used == v.size())
          return n;
      } catch (const std::exception &) {
      }
      throw std::runtime_error(arg + ": '" + v + "' is not an integer");
    };
    if (arg == "--model")
      a.model = value();
    else if (arg == "--weights")
      a.weights = value();
    else if (arg == "--input")
      a.input = value();
    else if (arg == "--output")
      a.output = value();
    else if (arg == "--repeat")
      a.repeat = number(value());
    else if (arg == "--warmup")
      a.warmup = number(value());
    else if (arg == "--width")
      a.width = std::stod(value());
    else if (arg == "--verbose")
      a.verbose = true;
    else if (arg == "-h" || arg == "--help") {
      std::cout << kUsage;
      std::exit(0);
    } else
      throw std::runtime_error("unknown argument '" + arg + "'");
  }
  if (a.model != "resnet18" && a.model != "mobilenetv3")
    throw std::runtime_error("--model must be resnet18 or mobilenetv3, not '" + a.model + "'");
  if (a.weights.empty() || a.input.empty())
    throw std::runtime_error("--weights and --input are required");
  if (a.repeat < 1 || a.warmup < 0)
    throw std::runtime_error("--repeat must be at least 1 and --warmup at least 0");
  return a;
}

template <typename T> T orThrow(tessera::Expected<T> v) {
  if (!v)
    throw std::runtime_error(v.error().message());
  return std::move(*v);
}

int run(const Args &a) {
  npy::Array x = orThrow(npy::readNpyFile(a.input));
  if (x.dtype.code != kDLFloat || x.dtype.bits != 32 || x.shape.size() != 4 ||
      x.shape[0] != 1 || x.shape[1] != 3)
    throw std::runtime_error(a.input + ": expected a 1x3xHxW float32 array");
  bench::Weights weights(orThrow(npy::readNpzFile(a.weights)));

  bench::Net net;
  auto *data = reinterpret_cast<float *>(x.data.data());
  bench::Tensor in = net.input({x.shape[0], x.shape[1], x.shape[2], x.shape[3]}, data);
  bench::Tensor logits = a.model == "resnet18"
                             ? bench::buildResnet18(net, weights, in, a.width)
                             : bench::buildMobilenetV3(net, weights, in, a.width);
  weights.checkAllTaken();
  net.finalize();
  if (a.verbose)
    std::cout << net.describe();

  for (int i = 0; i < a.warmup; ++i)
    net.run();
  std::vector<double> ms;
  for (int i = 0; i < a.repeat; ++i) {
    auto start = std::chrono::steady_clock::now();
    net.run();
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }

  if (!a.output.empty()) {
    npy::Array out;
    out.shape = {1, 1000};
    out.data.assign(static_cast<const char *>(logits.mem.get_data_handle()),
                    1000 * sizeof(float));
    tessera::Status s = npy::writeNpyFile(a.output, out);
    if (!s)
      throw std::runtime_error(s.error().message());
  }

  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  size_t n = sorted.size();
  double median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  double sum = 0;
  for (double v : ms)
    sum += v;
  const char *threads = std::getenv("OMP_NUM_THREADS");
  std::printf("latency_ms median=%.3f min=%.3f mean=%.3f runs=%zu threads=%s\n", median,
              sorted.front(), sum / double(n), n, threads && *threads ? threads : "all");
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  try {
    return run(parseArgs(argc, argv));
  } catch (const dnnl::error &e) {
    std::fprintf(stderr, "bench_dnnl_native: oneDNN error: %s (status %d)\n", e.what(),
                 int(e.status));
  } catch (const std::exception &e) {
    std::fprintf(stderr, "bench_dnnl_native: %s\n", e.what());
  }
  return 1;
}
