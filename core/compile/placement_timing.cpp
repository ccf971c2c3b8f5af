//===- compile/placement_timing.cpp - Timing and profiling what placement compiles ===//
//
// See placement_timing.h.
//
//===----------------------------------------------------------------------===//
#include "compile/placement_timing.h"
#include "compile/placement_internal.h"

#include "partition/partition.h"

#include <random>
#include <set>

namespace tessera::compile::detail {

/// Random inputs for every model input (floats uniform in [-1, 1]; other
/// dtypes zero, which are valid indices and counts), bound to the session.
Status bindInputs(runtime::Session &s, std::vector<std::vector<uint64_t>> &storage) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  const auto &inputs = s.model().inputs();
  const auto &symbols = s.model().plan().symbols;
  storage.assign(inputs.size(), {});
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].sequence) { // an empty list
      TS_RETURN_IF_ERROR(s.setInputSequence(i, {}));
      continue;
    }
    // A symbolic dim at its lower bound (at least 1): the size an app is
    // least likely to go below (docs/design/0015, symbolic models).
    runtime::TensorInfo t = inputs[i];
    for (int64_t &d : t.shape)
      if (runtime::isSymbolDim(d))
        d = std::max<int64_t>(symbols[runtime::symbolIndexOf(d)].lo, 1);
    storage[i].assign(size_t((t.bytes() + 7) / 8), 0);
    if (t.dtype.code == kDLFloat && t.dtype.bits == 32) {
      auto *f = reinterpret_cast<float *>(storage[i].data());
      for (uint64_t k = 0; k < t.bytes() / 4; ++k)
        f[k] = uniform(rng);
    }
    DLTensor d{};
    d.data = storage[i].data();
    d.device = {kDLCPU, 0};
    d.ndim = int32_t(t.shape.size());
    d.dtype = t.dtype;
    d.shape = t.shape.data();
    TS_RETURN_IF_ERROR(s.setInput(i, d)); // the session keeps the data, not the shape
  }
  return okStatus();
}

/// The nodes of region `fn` that lose on its plugin (`plugin`) against the
/// host (`host`); none when the plugin reported no kernels, or when every
/// named node loses (then the region loses as a whole).
std::vector<NodeTiming> losingNodes(const ir::Function &fn, const RegionRun &plugin,
                                    const RegionRun &host) {
  std::vector<NodeTiming> out;
  if (plugin.nodeMs.empty())
    return out;
  const std::vector<const ir::CallNode *> calls = opCalls(fn);
  std::set<std::string> named; // an ONNX node may become several calls: the first stands
  for (size_t i = 0; i < calls.size(); ++i) {
    const std::string &name = calls[i]->name();
    if (name.empty() || !named.insert(name).second)
      continue;
    auto at = [&](const RegionRun &r) {
      auto it = r.nodeMs.find(name);
      return it == r.nodeMs.end() ? 0.0 : it->second;
    };
    const double p = at(plugin), h = at(host);
    if (p > kLosingRatio * h && p - h >= kLosingShare * plugin.ms)
      out.push_back(NodeTiming{int32_t(i), name, p, h});
  }
  if (out.size() == named.size())
    out.clear();
  return out;
}

/// The work of each named node of a region (partition::estimateFlops of its
/// calls, at least 1 each): how a kernel's or step's time is split among
/// its nodes.
std::map<std::string, double> workOf(const ir::Function &fn) {
  std::map<std::string, double> work;
  for (const ir::CallNode *c : opCalls(fn)) // an ONNX node may become several calls
    if (!c->name().empty())
      work[c->name()] += std::max(1.0, partition::estimateFlops(*c));
  return work;
}

} // namespace tessera::compile::detail
