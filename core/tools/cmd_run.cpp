//===- tools/cmd_run.cpp - `tessera run` -----------------------------------===//
//
//   tessera run MODEL.tsr [--inputs x=x.npy,y=y.npy | --inputs in.npz]
//               [--outputs out.npz] [--repeat N] [--print-time]
//               [--threads N] [--seed N] [--print-all]
//               [--profile] [--profile-json FILE]
//
// Runs an artifact through the runtime's public API only (tessera/runtime.hpp,
// as an app does): no compiler, no IR. Inputs come from .npy files bound by
// name or from the members of one .npz; without --inputs every input is
// filled with deterministic random values from --seed, drawn in the same
// order and ranges as `tessera interpret` (floats uniform in [-1, 1),
// integers in [0, 10), bools alternating). Prints each output's name, shape
// and first values; --outputs writes them all to a .npz (bf16 as '<u2');
// --print-time runs once to warm up, then --repeat times, and prints the
// mean, median, min and max latency. A sequence input (a list of tensors)
// takes the .npz members NAME.0, NAME.1, ... in order (none: an empty
// list); random, it is two elements whose dims are 1 and 2. A sequence
// output prints and writes its elements the same way. --profile and
// --profile-json run once to warm up, then profile the --repeat runs: the
// table of where the time went (tessera/profile.hpp), a Chrome trace.

//
//===----------------------------------------------------------------------===//
#include "commands.h"
#include "tool_support.h"

#include "tessera/runtime.hpp"
#include "support/file.h"
#include "tools/npy.h"
#include "tessera/c/dtype.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <charconv>
#include <optional>
#include <random>

namespace tessera::tools {

namespace {

struct RunArgs {
  std::string model;
  std::vector<std::string> inputs;
  std::string outputs;
  int repeat = 1;
  bool printTime = false, printAll = false, profile = false;
  std::string profileJson;
  int threads = 0;
  uint64_t seed = 0;
  std::vector<std::string> dims; // NAME=VALUE for random inputs of symbolic shapes
};

/// The symbols of random inputs: the model's inputs' symbolic dims (the
/// user's: the others, derived or internal, follow from them when it runs),
/// each at its --dim value, else chosen (`chosen`): from its lower bound (at
/// least 1) up, doubled while the model says the inputs are too small.
struct Dims {
  std::vector<int64_t> values;  // per model symbol
  std::vector<size_t> inputs;   // the symbols of input dims, in first-use order
  std::vector<size_t> chosen;   // those not given by --dim
};

Expected<Dims> symbolValues(const RunArgs &a, const rt::Model &model) {
  Dims dims;
  for (size_t k = 0; k < model.numSymbols(); ++k)
    dims.values.push_back(std::max<int64_t>(model.symbol(k).lo, 1));
  std::vector<std::string> names;
  for (size_t i = 0; i < model.numInputs(); ++i)
    for (int64_t d : model.input(i).shape)
      if (d < 0 && std::find(dims.inputs.begin(), dims.inputs.end(), size_t(-1 - d)) ==
                       dims.inputs.end()) {
        dims.inputs.push_back(size_t(-1 - d));
        names.push_back(model.symbol(size_t(-1 - d)).name);
      }
  dims.chosen = dims.inputs;
  for (const std::string &spec : a.dims) {
    const size_t eq = spec.find('=');
    const std::string name = spec.substr(0, eq);
    auto it = std::find(names.begin(), names.end(), name);
    if (eq == std::string::npos || it == names.end())
      return Error::format("--dim '{}': expected NAME=VALUE with NAME a symbolic dim of the "
                           "model's inputs ({})",
                           spec, names.empty() ? std::string("it has none")
                                               : fmt::format("{}", fmt::join(names, ", ")));
    const std::string v = spec.substr(eq + 1);
    int64_t value = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), value);
    if (ec != std::errc() || end != v.data() + v.size() || value < 0)
      return Error::format("--dim '{}': '{}' is not a non-negative integer", spec, v);
    const size_t k = dims.inputs[size_t(it - names.begin())];
    dims.values[k] = value;
    std::erase(dims.chosen, k);
  }
  return dims;
}

/// The chosen symbols doubled (within their upper bounds, up to 4096):
/// false when none can grow.
bool growChosen(Dims &dims, const rt::Model &model) {
  bool grew = false;
  for (size_t k : dims.chosen) {
    const rt::Model::Symbol sym = model.symbol(k);
    const int64_t most = sym.hi >= 0 ? std::min<int64_t>(sym.hi, 4096) : 4096;
    const int64_t next = std::min(dims.values[k] * 2, most);
    grew |= next > dims.values[k];
    dims.values[k] = std::max(next, dims.values[k]);
  }
  return grew;
}

/// `info` at the symbol values `values` (a negative dim d is symbol -1 - d).
rt::TensorInfo resolved(rt::TensorInfo info, const std::vector<int64_t> &values) {
  for (int64_t &d : info.shape)
    if (d < 0)
      d = values[size_t(-1 - d)];
  return info;
}


bool isBool(DLDataType t) {
  return t.code == TESSERA_DL_BOOL;
}

float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  } else if (man == 0) {
    bits = sign;
  } else { // subnormal: normalise
    int e = -1;
    do {
      ++e;
      man <<= 1;
    } while (!(man & 0x400));
    bits = sign | (uint32_t(112 - e) << 23) | ((man & 0x3ff) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// Round to nearest even, as ir::floatToHalf / floatToBfloat16 do.
uint16_t floatToBfloat16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return uint16_t((bits >> 16) | 0x40);
  bits += 0x7fff + ((bits >> 16) & 1);
  return uint16_t(bits >> 16);
}

uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t absx = x & 0x7fffffffu;
  if (absx > 0x7f800000u)
    return uint16_t(sign | 0x7e00);
  if (absx >= 0x477ff000u) // rounds to infinity
    return uint16_t(sign | 0x7c00);
  if (absx < 0x38800000u) { // subnormal or zero in half
    float a;
    std::memcpy(&a, &absx, 4);
    // Scale so that the half subnormal step (2^-24) is one unit; nearbyint
    // rounds to nearest even.
    return uint16_t(sign | uint32_t(std::nearbyint(double(a) * 16777216.0)));
  }
  uint32_t mant = absx & 0x7fffff, exp = (absx >> 23) - 112;
  uint32_t h = (exp << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
    ++h;
  return uint16_t(sign | h);
}

/// Element i as double (floats) for printing; integers are printed exactly.
std::string elementStr(const void *data, DLDataType t, int64_t i) {
  const auto *p = static_cast<const uint8_t *>(data);
  auto load = [&](auto tag) {
    decltype(tag) v;
    std::memcpy(&v, p + size_t(i) * sizeof(v), sizeof(v));
    return v;
  };
  if (t.code == kDLFloat && t.bits == 32)
    return fmt::format("{:.6g}", load(float{}));
  if (t.code == kDLFloat && t.bits == 64)
    return fmt::format("{:.6g}", load(double{}));
  if (t.code == kDLFloat && t.bits == 16)
    return fmt::format("{:.6g}", halfToFloat(load(uint16_t{})));
  if (t.code == kDLBfloat && t.bits == 16) {
    uint32_t bits = uint32_t(load(uint16_t{})) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return fmt::format("{:.6g}", f);
  }
  if (isBool(t))
    return load(uint8_t{}) ? "true" : "false";
  if (t.code == kDLInt) {
    switch (t.bits) {
    case 8: return std::to_string(load(int8_t{}));
    case 16: return std::to_string(load(int16_t{}));
    case 32: return std::to_string(load(int32_t{}));
    default: return std::to_string(load(int64_t{}));
    }
  }
  switch (t.bits) {
  case 8: return std::to_string(load(uint8_t{}));
  case 16: return std::to_string(load(uint16_t{}));
  case 32: return std::to_string(load(uint32_t{}));
  default: return std::to_string(load(uint64_t{}));
  }
}

/// Deterministic inputs, drawn as `tessera interpret` draws them.
npy::Array randomInput(const rt::TensorInfo &info, std::mt19937_64 &rng) {
  npy::Array a;
  a.name = info.name;
  a.dtype = info.dtype;
  a.shape = info.shape;
  a.data.assign(info.bytes(), '\0');
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::uniform_int_distribution<int64_t> integer(0, 9);
  const DLDataType t = info.dtype;
  char *p = a.data.data();
  for (int64_t i = 0; i < info.numElements(); ++i) {
    if (t.code == kDLFloat || t.code == kDLBfloat) {
      double v = real(rng);
      if (t.bits == 64) {
        std::memcpy(p + i * 8, &v, 8);
      } else if (t.bits == 32) {
        float f = float(v);
        std::memcpy(p + i * 4, &f, 4);
      } else {
        uint16_t h = t.code == kDLBfloat ? floatToBfloat16(float(v)) : floatToHalf(float(v));
        std::memcpy(p + i * 2, &h, 2);
      }
    } else if (isBool(t)) {
      p[i] = char(i % 2);
    } else {
      int64_t v = integer(rng);
      std::memcpy(p + size_t(i) * size_t(t.bits / 8), &v, size_t(t.bits / 8)); // little-endian
    }
  }
  return a;
}

/// "NAME.3" -> 3 when `member` is element 3 of sequence input NAME.
std::optional<size_t> elementIndex(const std::string &member, const std::string &name) {
  if (member.size() <= name.size() + 1 || member.compare(0, name.size(), name) != 0 ||
      member[name.size()] != '.')
    return std::nullopt;
  size_t k = 0;
  const char *first = member.data() + name.size() + 1, *last = member.data() + member.size();
  auto [end, ec] = std::from_chars(first, last, k);
  if (ec != std::errc() || end != last)
    return std::nullopt;
  return k;
}

/// The arrays to bind, per model input (a sequence input's elements), from
/// --inputs.
Expected<std::vector<std::vector<npy::Array>>> loadInputs(const RunArgs &a, const Dims &dims,
                                                          const rt::Model &model) {
  std::vector<rt::TensorInfo> infos;
  for (size_t i = 0; i < model.numInputs(); ++i)
    infos.push_back(model.input(i));
  auto names = [&] {
    std::string s;
    for (const auto &info : infos)
      s += (s.empty() ? "'" : ", '") + info.name + "'";
    return s.empty() ? std::string("none") : s;
  };
  std::vector<std::vector<npy::Array>> out;
  if (a.inputs.empty()) {
    const std::vector<int64_t> &values = dims.values;
    std::mt19937_64 rng(a.seed);
    for (const auto &info : infos) {
      std::vector<npy::Array> arrays;
      if (!info.sequence) {
        arrays.push_back(randomInput(resolved(info, values), rng));
      } else {
        for (int64_t k = 0; k < 2; ++k) { // dims 1, then 2
          rt::TensorInfo e = info;
          e.name = fmt::format("{}.{}", info.name, k);
          e.shape.assign(size_t(std::max(info.elementRank, 1)), k + 1);
          arrays.push_back(randomInput(e, rng));
        }
      }
      out.push_back(std::move(arrays));
    }
    return out;
  }
  if (!a.dims.empty())
    return Error("--dim sets symbols of random inputs; with --inputs the arrays' shapes do");
  // Gather (array, file) per name.
  std::map<std::string, std::pair<npy::Array, std::string>> given;
  for (const std::string &spec : a.inputs) {
    size_t eq = spec.find('=');
    std::string path = eq == std::string::npos ? spec : spec.substr(eq + 1);
    std::vector<npy::Array> arrays;
    if (eq == std::string::npos) {
      if (path.size() < 4 || path.substr(path.size() - 4) != ".npz")
        return Error::format("--inputs '{}': expected NAME=FILE.npy or FILE.npz", spec);
      TS_ASSIGN_OR_RETURN(arrays, npy::readNpzFile(path));
    } else {
      TS_ASSIGN_OR_RETURN(npy::Array arr, npy::readNpyFile(path));
      arr.name = spec.substr(0, eq);
      arrays.push_back(std::move(arr));
    }
    for (npy::Array &arr : arrays) {
      if (given.count(arr.name))
        return Error::format("{}: input '{}' is given twice (also in {})", path, arr.name,
                             given[arr.name].second);
      std::string name = arr.name;
      given.emplace(name, std::make_pair(std::move(arr), path));
    }
  }
  for (const auto &[name, entry] : given)
    if (std::none_of(infos.begin(), infos.end(), [&](const auto &i) {
          return i.name == name || (i.sequence && elementIndex(name, i.name));
        }))
      return Error::format("{}: the model has no input '{}' (inputs: {})", entry.second, name,
                           names());
  for (const auto &info : infos) {
    if (info.sequence) { // members NAME.0, NAME.1, ...
      std::map<size_t, npy::Array *> elements;
      for (auto &[name, entry] : given)
        if (auto k = elementIndex(name, info.name))
          elements[*k] = &entry.first;
      std::vector<npy::Array> arrays;
      for (auto &[k, arr] : elements) {
        if (k != arrays.size())
          return Error::format("sequence input '{}': element {}.{} is missing (elements are "
                               "{}.0, {}.1, ... in order)",
                               info.name, info.name, arrays.size(), info.name, info.name);
        if (!npy::compatible(info.dtype, arr->dtype) ||
            (info.elementRank >= 0 && int64_t(arr->shape.size()) != info.elementRank))
          return Error::format("input '{}.{}': expected an element of {}, got {}", info.name, k,
                               model.str(info), rt::TensorInfo{arr->name, arr->dtype, arr->shape}.str());
        arr->dtype = info.dtype;
        arrays.push_back(std::move(*arr));
      }
      out.push_back(std::move(arrays));
      continue;
    }
    auto it = given.find(info.name);
    if (it == given.end())
      return Error::format("input '{}' ({}) is not given in --inputs", info.name, info.str());
    npy::Array &arr = it->second.first;
    bool fits = arr.shape.size() == info.shape.size();
    for (size_t d = 0; fits && d < info.shape.size(); ++d) // symbols: the session checks
      fits = info.shape[d] < 0 || arr.shape[d] == info.shape[d];
    if (!npy::compatible(info.dtype, arr.dtype) || !fits) {
      rt::TensorInfo got{info.name, arr.dtype, arr.shape};
      return Error::format("{}: input '{}': expected {}, got {}", it->second.second, info.name,
                           model.str(info), got.str());
    }
    arr.dtype = info.dtype; // '<u2' for bf16
    out.push_back({});
    out.back().push_back(std::move(arr));
  }
  return out;
}

void printOutput(const rt::TensorInfo &info, const DLTensor &t, bool all) {
  std::cout << fmt::format("output '{}': {}\n  [", info.name, info.str());
  int64_t n = info.numElements();
  int64_t shown = all ? n : std::min<int64_t>(n, 16);
  for (int64_t i = 0; i < shown; ++i)
    std::cout << (i ? ", " : "") << elementStr(t.data, info.dtype, i);
  std::cout << (shown < n ? ", ...]" : "]") << "\n";
}

Status runModel(const RunArgs &a) {
  if (a.repeat < 1)
    return Error::format("--repeat must be at least 1, not {}", a.repeat);
  if (a.threads < 0)
    return Error::format("--threads must be 0 (every core) or more, not {}", a.threads);
  if (!a.outputs.empty())
    TS_RETURN_IF_ERROR(checkWritableFile(a.outputs));
  if (!a.profileJson.empty())
    TS_RETURN_IF_ERROR(checkWritableFile(a.profileJson));
  const bool profiling = a.profile || !a.profileJson.empty();
  try {
    rt::Model model = rt::Model::load(a.model);
    TS_ASSIGN_OR_RETURN(Dims dims, symbolValues(a, model));
    std::vector<std::vector<npy::Array>> inputs;
    std::optional<rt::Session> held;
    // Inputs and a session for `dims`; with `probe`, run once and say
    // whether the model took the sizes (false: "the inputs are too small").
    auto prepare = [&](const Dims &d, bool probe) -> Expected<bool> {
      TS_ASSIGN_OR_RETURN(inputs, loadInputs(a, d, model));
      held.emplace(model, rt::SessionOptions{a.threads});
      for (size_t i = 0; i < inputs.size(); ++i) {
        std::vector<DLTensor> tensors;
        for (npy::Array &arr : inputs[i])
          tensors.push_back(rt::makeTensor(arr.data.data(), arr.dtype, arr.shape));
        if (model.input(i).sequence)
          held->setInputSequence(i, tensors);
        else
          held->setInput(i, tensors.at(0));
      }
      if (!probe)
        return true;
      try {
        held->run();
        return true;
      } catch (const rt::Error &e) {
        if (std::string_view(e.what()).find("the inputs are too small for this model") ==
            std::string_view::npos)
          throw;
        return false;
      }
    };
    // Random inputs of symbolic dims not given by --dim: from their lower
    // bounds up, all doubled while the model says they are too small (a CNN
    // over unbounded H and W does not run at 1x1), then each back to its
    // lower bound where the model still runs (a batch N stays 1).
    if (a.inputs.empty() && !dims.chosen.empty()) {
      for (;;) {
        TS_ASSIGN_OR_RETURN(bool ran, prepare(dims, true));
        if (ran)
          break;
        if (!growChosen(dims, model))
          return Error::format("the model runs at none of the sizes tried for its symbolic "
                               "dims (up to 4096 or their bounds): give them with --dim");
      }
      for (size_t k : dims.chosen) {
        const int64_t grown = dims.values[k];
        dims.values[k] = std::max<int64_t>(model.symbol(k).lo, 1);
        if (dims.values[k] == grown)
          continue;
        TS_ASSIGN_OR_RETURN(bool ran, prepare(dims, true));
        if (!ran)
          dims.values[k] = grown;
      }
    }
    if (auto ready = prepare(dims, false); !ready.ok())
      return std::move(ready).error();
    for (size_t k : dims.inputs) {
      const bool chosen = std::find(dims.chosen.begin(), dims.chosen.end(), k) != dims.chosen.end();
      std::cout << fmt::format("symbol {} = {}{}\n", model.symbol(k).name, dims.values[k],
                               chosen && a.inputs.empty()
                                   ? " (chosen: doubled from its lower bound until the model "
                                     "runs; --dim sets it)"
                                   : "");
    }
    rt::Session &session = *held;

    std::vector<double> ms;
    if (a.printTime || profiling)
      session.run(); // warm-up
    if (profiling)
      session.setProfiling(true);
    for (int r = 0; r < a.repeat; ++r) {
      auto start = std::chrono::steady_clock::now();
      session.run();
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
    }

    std::vector<npy::Array> outs;
    auto emit = [&](rt::TensorInfo info, const DLTensor &t) {
      info.shape.assign(t.shape, t.shape + t.ndim); // this run's (symbolic outputs)
      printOutput(info, t, a.printAll);
      if (!a.outputs.empty()) {
        npy::Array arr;
        arr.name = info.name;
        arr.dtype = info.dtype;
        arr.shape = info.shape;
        arr.data.assign(static_cast<const char *>(t.data) + t.byte_offset, info.bytes());
        outs.push_back(std::move(arr));
      }
    };
    for (size_t i = 0; i < model.numOutputs(); ++i) {
      rt::TensorInfo info = model.output(i);
      if (!info.sequence) {
        emit(info, session.output(i));
        continue;
      }
      const std::vector<DLTensor> elements = session.outputSequence(i);
      std::cout << fmt::format("output '{}': a sequence of {} element{}\n", info.name,
                               elements.size(), elements.size() == 1 ? "" : "s");
      for (size_t k = 0; k < elements.size(); ++k) {
        rt::TensorInfo e = info;
        e.sequence = false;
        e.name = fmt::format("{}.{}", info.name, k);
        emit(e, elements[k]);
      }
    }
    if (!a.outputs.empty())
      TS_RETURN_IF_ERROR(npy::writeNpzFile(a.outputs, outs));
    if (profiling) {
      const rt::Profile profile = session.profile();
      if (a.profile)
        std::cout << profile.format();
      if (!a.profileJson.empty()) {
        TS_RETURN_IF_ERROR(writeText(a.profileJson, profile.chromeTrace()));
        std::cout << fmt::format("wrote the trace of {} run{} to {} (Perfetto, "
                                 "chrome://tracing)\n",
                                 profile.runs(), profile.runs() == 1 ? "" : "s", a.profileJson);
      }
    }
    if (a.printTime) {
      std::vector<double> sorted = ms;
      std::sort(sorted.begin(), sorted.end());
      double sum = 0;
      for (double v : ms)
        sum += v;
      size_t n = sorted.size();
      double median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
      std::cout << fmt::format(
          "latency over {} run{} (after 1 warm-up, {} thread{}): mean {:.3f} "
          "ms, median {:.3f} ms, min {:.3f} ms, max {:.3f} ms\n",
          n, n == 1 ? "" : "s", a.threads == 0 ? "all" : std::to_string(a.threads),
          a.threads == 1 ? "" : "s", sum / double(n), median, sorted.front(), sorted.back());
    }
  } catch (const rt::Error &e) {
    return Error(e.what());
  }
  return okStatus();
}

} // namespace

Subcommand addRunCommand(CLI::App &app) {
  auto args = std::make_shared<RunArgs>();
  auto *cmd = app.add_subcommand(
      "run", "Run a compiled artifact (.tsr) with the runtime on inputs from .npy/.npz files or "
             "on deterministic random inputs");
  cmd->add_option("model", args->model, "The artifact (from `tessera compile`)")->required();
  cmd->add_option("--inputs", args->inputs,
                  "Inputs: NAME=FILE.npy,... (one per model input) or one FILE.npz whose "
                  "members are named after the inputs; absent: random inputs from --seed")
      ->delimiter(',');
  cmd->add_option("--outputs", args->outputs,
                  "Write every output to this .npz, named after the outputs (bf16 as '<u2')");
  cmd->add_option("--repeat", args->repeat, "Number of timed runs")->capture_default_str();
  cmd->add_flag("--print-time", args->printTime,
                "Run once to warm up, then --repeat times; print mean, median, min and max "
                "latency in ms");
  cmd->add_option("--threads", args->threads, "Threads for host kernels (0: every core)")
      ->capture_default_str();
  cmd->add_option("--seed", args->seed, "Seed of the random inputs (without --inputs)")
      ->capture_default_str();
  cmd->add_flag("--print-all", args->printAll, "Print every element of each output");
  cmd->add_flag("--profile", args->profile,
                "Run once to warm up, then profile the --repeat runs: print the time of each "
                "step (host steps by op and node, plugin steps by region) and, inside plugin "
                "steps, of each primitive or kernel the plugin reports, with its share");
  cmd->add_option("--profile-json", args->profileJson,
                  "Profile as --profile does and write a Chrome trace (JSON) to this file, one "
                  "track per thread: open it in Perfetto (ui.perfetto.dev) or chrome://tracing");
  cmd->add_option("--dim", args->dims,
                  "NAME=VALUE: a symbolic dim's value for random inputs (default: its lower "
                  "bound); repeatable");
  return {cmd, [args] {
            Status s = runModel(*args);
            if (!s.ok())
              return reportError("tessera run", s.error());
            return 0;
          }};
}

} // namespace tessera::tools
