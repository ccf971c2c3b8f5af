//===- examples/app/main.cpp - Run a compiled Tessera model ----------------===//
//
//   tessera_app MODEL.tsr [--repeat N] [--threads N]
//
// Loads an artifact made by `tessera compile` with the runtime's C++ wrapper
// (tessera/runtime.hpp), fills every input with a deterministic pattern,
// runs it, and prints each output's name, shape and first values, then the
// latency (one warm-up run, then N timed runs: mean and min in ms).
// Everything an application needs: libtessera_runtime and the plugins the
// model was compiled for (TESSERA_PLUGIN_PATH or <prefix>/lib/tessera/plugins).
//
//===----------------------------------------------------------------------===//
#include "tessera/runtime.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace rt = tessera::rt;

namespace {

/// Input element i: a small repeating pattern, the same on every run.
void fill(std::vector<unsigned char> &bytes, const rt::TensorInfo &info) {
  const int64_t n = info.numElements();
  for (int64_t i = 0; i < n; ++i) {
    const double v = double((i * 7) % 19) / 8.0 - 1.0; // in [-1, 1.25]
    const DLDataType t = info.dtype;
    const size_t elem = t.code == TESSERA_DL_BOOL ? 1 : size_t(t.bits / 8);
    void *at = bytes.data() + size_t(i) * elem;
    if (t.code == kDLFloat && t.bits == 32) {
      float f = float(v);
      std::memcpy(at, &f, 4);
    } else if (t.code == kDLFloat && t.bits == 64) {
      std::memcpy(at, &v, 8);
    } else if (t.code == kDLInt || t.code == kDLUInt) {
      int64_t k = i % 7;
      std::memcpy(at, &k, t.bits / 8); // little-endian: the low bytes
    } else if (t.code == TESSERA_DL_BOOL) {
      *static_cast<unsigned char *>(at) = static_cast<unsigned char>(i % 2);
    } // f16/bf16: left at zero
  }
}

std::string firstValues(const DLTensor &t, int64_t n) {
  std::string out;
  const auto *base = static_cast<const unsigned char *>(t.data) + t.byte_offset;
  for (int64_t i = 0; i < std::min<int64_t>(n, 6); ++i) {
    char buf[32] = "?";
    if (t.dtype.code == kDLFloat && t.dtype.bits == 32)
      std::snprintf(buf, sizeof buf, "%.6g", double(reinterpret_cast<const float *>(base)[i]));
    else if (t.dtype.code == kDLFloat && t.dtype.bits == 64)
      std::snprintf(buf, sizeof buf, "%.6g", reinterpret_cast<const double *>(base)[i]);
    else if (t.dtype.code == kDLInt && t.dtype.bits == 64)
      std::snprintf(buf, sizeof buf, "%lld",
                    static_cast<long long>(reinterpret_cast<const int64_t *>(base)[i]));
    else if (t.dtype.code == kDLInt && t.dtype.bits == 32)
      std::snprintf(buf, sizeof buf, "%d", reinterpret_cast<const int32_t *>(base)[i]);
    else if (t.dtype.code == TESSERA_DL_BOOL)
      std::snprintf(buf, sizeof buf, "%s", base[i] ? "true" : "false");
    out += (i ? ", " : "") + std::string(buf);
  }
  return out + (n > 6 ? ", ..." : "");
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL.tsr [--repeat N] [--threads N]\n", argv[0]);
    return 2;
  }
  int repeat = 10, threads = 0;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--repeat") == 0)
      repeat = std::max(1, std::atoi(argv[i + 1]));
    else if (std::strcmp(argv[i], "--threads") == 0)
      threads = std::atoi(argv[i + 1]);
  }

  try {
    std::printf("tessera runtime %s\n", rt::version().c_str());
    rt::Model model = rt::Model::load(argv[1]);
    rt::Session session(model, rt::SessionOptions{threads});

    // Inputs stay bound (zero-copy): the buffers live until the end.
    std::vector<std::vector<unsigned char>> buffers(model.numInputs());
    std::vector<rt::TensorInfo> infos;
    for (size_t i = 0; i < model.numInputs(); ++i)
      infos.push_back(model.input(i));
    for (size_t i = 0; i < infos.size(); ++i) {
      buffers[i].assign(infos[i].bytes(), 0);
      fill(buffers[i], infos[i]);
      session.setInput(infos[i].name,
                       rt::makeTensor(buffers[i].data(), infos[i].dtype, infos[i].shape));
      std::printf("input '%s': %s\n", infos[i].name.c_str(), infos[i].str().c_str());
    }

    session.run(); // warm-up
    using Clock = std::chrono::steady_clock;
    double total = 0, best = 1e300;
    for (int r = 0; r < repeat; ++r) {
      auto start = Clock::now();
      session.run();
      double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      total += ms;
      best = std::min(best, ms);
    }

    for (size_t i = 0; i < model.numOutputs(); ++i) {
      rt::TensorInfo info = model.output(i);
      const DLTensor &t = session.output(i);
      std::printf("output '%s': %s [%s]\n", info.name.c_str(), info.str().c_str(),
                  firstValues(t, info.numElements()).c_str());
    }
    std::printf("latency: mean %.3f ms, min %.3f ms over %d runs\n", total / repeat, best, repeat);
  } catch (const rt::Error &e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
