//===- examples/app/main.cpp - Run a compiled Tessera model ----------------===//
//
//   tessera_app MODEL.tsr [--input NAME=FILE.npy]... [--dim NAME=VALUE]...
//                         [--repeat N] [--threads N]
//
// Loads an artifact made by `tessera compile` with the runtime's C++ wrapper
// (tessera/runtime.hpp), binds each input to a .npy file (--input) or to a
// deterministic pattern, runs it, and prints each output's name, shape and
// first values, then the latency (one warm-up run, then N timed runs: mean
// and min in ms). A model compiled with symbolic dims (N, H, W) takes them
// from the .npy files' shapes, or from --dim for generated inputs (default:
// each dim's lower bound). Everything an application needs: libtessera_runtime
// and the plugins the model was compiled for (TESSERA_PLUGIN_PATH or
// <prefix>/lib/tessera/plugins). README.md says how to build and run it.
//
//===----------------------------------------------------------------------===//
#include "tessera/runtime.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace rt = tessera::rt;

namespace {

/// Input element i: a small repeating pattern, the same on every run.
void fill(rt::Tensor &t) {
  const DLTensor &dl = t.dl();
  int64_t n = 1;
  for (int32_t d = 0; d < dl.ndim; ++d)
    n *= dl.shape[d];
  for (int64_t i = 0; i < n; ++i) {
    const double v = double((i * 7) % 19) / 8.0 - 1.0; // in [-1, 1.25]
    if (dl.dtype.code == kDLFloat && dl.dtype.bits == 32)
      t.data<float>()[i] = float(v);
    else if (dl.dtype.code == kDLFloat && dl.dtype.bits == 64)
      t.data<double>()[i] = v;
    else if ((dl.dtype.code == kDLInt || dl.dtype.code == kDLUInt) && dl.dtype.bits == 64)
      t.data<int64_t>()[i] = i % 7;
    else if ((dl.dtype.code == kDLInt || dl.dtype.code == kDLUInt) && dl.dtype.bits == 32)
      t.data<int32_t>()[i] = int32_t(i % 7);
    else if (dl.dtype.code == TESSERA_DL_BOOL)
      t.data<unsigned char>()[i] = static_cast<unsigned char>(i % 2);
  } // other dtypes: left at zero
}

/// The NumPy descr of a dtype ("<f4"), as .npy headers write it.
std::string descrOf(DLDataType t) {
  if (t.code == TESSERA_DL_BOOL)
    return "|b1";
  const char kind = t.code == kDLFloat ? 'f' : t.code == kDLInt ? 'i' : 'u';
  return std::string(t.bits == 8 ? "|" : "<") + kind + std::to_string(t.bits / 8);
}

/// A C-order little-endian .npy file (format 1, 2 or 3) of `info`'s dtype
/// and rank; its shape gives the input's symbolic dims.
rt::Tensor readNpy(const std::string &path, const rt::TensorInfo &info) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error(path + ": cannot open the file");
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string bytes = buffer.str();
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0)
    throw std::runtime_error(path + ": not a .npy file");
  const bool v1 = bytes[6] == 1;
  const size_t lenBytes = v1 ? 2 : 4, start = 8 + lenBytes;
  size_t headerLen = 0;
  for (size_t i = 0; i < lenBytes; ++i)
    headerLen |= size_t(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
  if (bytes.size() < start + headerLen)
    throw std::runtime_error(path + ": truncated header");
  const std::string header = bytes.substr(start, headerLen);
  auto field = [&](const std::string &key) {
    const size_t at = header.find("'" + key + "':");
    if (at == std::string::npos)
      throw std::runtime_error(path + ": no '" + key + "' in the header");
    return header.substr(at + key.size() + 3);
  };
  const std::string descr = field("descr");
  const std::string want = descrOf(info.dtype);
  if (descr.find("'" + want + "'") != descr.find_first_not_of(' '))
    throw std::runtime_error(path + ": input '" + info.name + "' takes " + want + " data, not " +
                             descr.substr(0, descr.find(',')));
  const std::string order = field("fortran_order");
  if (order.substr(order.find_first_not_of(' '), 5) != "False")
    throw std::runtime_error(path + ": Fortran order: save numpy.ascontiguousarray(a)");
  std::vector<int64_t> shape;
  const std::string dims = field("shape");
  for (size_t at = dims.find('(') + 1; at < dims.size() && dims[at] != ')';) {
    const size_t end = dims.find_first_of(",)", at);
    const std::string d = dims.substr(at, end - at);
    if (d.find_first_not_of(' ') != std::string::npos)
      shape.push_back(std::stoll(d));
    at = dims[end] == ',' ? end + 1 : end;
  }
  rt::Tensor t(info.dtype, shape);
  if (bytes.size() - start - headerLen != t.bytes())
    throw std::runtime_error(path + ": " + std::to_string(bytes.size() - start - headerLen) +
                             " data bytes for " + std::to_string(t.bytes()));
  std::memcpy(t.data<char>(), bytes.data() + start + headerLen, t.bytes());
  return t;
}

std::string shapeStr(const DLTensor &t) {
  std::string s;
  for (int32_t d = 0; d < t.ndim; ++d)
    s += (d ? ", " : "") + std::to_string(t.shape[d]);
  return "[" + s + "]";
}

std::string firstValues(const DLTensor &t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t.ndim; ++d)
    n *= t.shape[d];
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

/// "NAME=VALUE" split at '='.
std::pair<std::string, std::string> keyValue(const std::string &arg, const char *flag) {
  const size_t eq = arg.find('=');
  if (eq == std::string::npos || eq == 0)
    throw std::runtime_error(std::string(flag) + " '" + arg + "': expected NAME=VALUE");
  return {arg.substr(0, eq), arg.substr(eq + 1)};
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: %s MODEL.tsr [--input NAME=FILE.npy]... [--dim NAME=VALUE]... "
                 "[--repeat N] [--threads N]\n",
                 argv[0]);
    return 2;
  }
  try {
    int repeat = 10, threads = 0;
    std::map<std::string, std::string> files; // input name -> .npy
    std::map<std::string, int64_t> dims;      // symbolic dim -> value
    for (int i = 2; i < argc; i += 2) {
      if (i + 1 >= argc)
        throw std::runtime_error(std::string(argv[i]) + " needs a value");
      const std::string flag = argv[i], value = argv[i + 1];
      if (flag == "--repeat")
        repeat = std::max(1, std::atoi(value.c_str()));
      else if (flag == "--threads")
        threads = std::atoi(value.c_str());
      else if (flag == "--input")
        files.insert(keyValue(value, "--input"));
      else if (flag == "--dim")
        dims[keyValue(value, "--dim").first] = std::stoll(keyValue(value, "--dim").second);
      else
        throw std::runtime_error("unknown option " + flag);
    }

    std::printf("tessera runtime %s\n", rt::version().c_str());
    rt::Model model = rt::Model::load(argv[1]);
    rt::Session session(model, rt::SessionOptions{threads});
    // Generated inputs take each symbolic dim not given by --dim at its
    // lower bound (at least 1).
    for (size_t k = 0; k < model.numSymbols(); ++k) {
      const rt::Model::Symbol sym = model.symbol(k);
      dims.emplace(sym.name, std::max<int64_t>(sym.lo, 1));
    }
    // Inputs stay bound (zero-copy): the tensors live until the end.
    std::vector<rt::Tensor> inputs;
    for (size_t i = 0; i < model.numInputs(); ++i) {
      const rt::TensorInfo info = model.input(i);
      auto file = files.find(info.name);
      const bool fromFile = file != files.end();
      if (fromFile) {
        inputs.push_back(readNpy(file->second, info));
        files.erase(file);
      } else {
        inputs.emplace_back(info.dtype, model.shape(info, dims));
        fill(inputs.back());
      }
      session.setInput(info.name, inputs.back());
      std::printf("input '%s': %s, bound to %s %s\n", info.name.c_str(), model.str(info).c_str(),
                  fromFile ? "the .npy file's" : "a generated",
                  shapeStr(inputs.back().dl()).c_str());
    }
    if (!files.empty())
      throw std::runtime_error("--input " + files.begin()->first + ": the model has no such input");

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
      const rt::TensorInfo info = model.output(i);
      const DLTensor &t = session.output(i); // this run's shape (symbolic outputs)
      std::printf("output '%s': %s%s [%s]\n", info.name.c_str(),
                  rt::dtypeName(info.dtype).c_str(), shapeStr(t).c_str(),
                  firstValues(t).c_str());
    }
    std::printf("latency: mean %.3f ms, min %.3f ms over %d runs\n", total / repeat, best, repeat);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
