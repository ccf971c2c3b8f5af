//===- timed.cpp - Test targets whose speed the test decides ----------------===//
//
// Placement by measurement (docs/design/0015) is tested with plugins whose
// speed is controlled, so that a test checks the choice, not a timing:
// "timed_slow" sleeps TIMED_SLEEP_MS (30) milliseconds in every call of a
// region, "timed_fast" does not; "timed_hinted" sleeps too and gives a cost
// hint (ABI 1.5's estimate_region) of TIMED_ESTIMATE (0.01) times the host's
// speed, which placement takes without measuring; "timed_picky" sleeps
// TIMED_OP_SLEEP_MS (30) in each of its tanh nodes only, so that a profile
// shows which node of a region loses. All take relu, tanh, sigmoid and
// same-shape add and multiply on f32, keep every region they form (their
// keep_region says yes, so priority order gives them everything they take),
// and run a region node by node with plain loops (tessera::sdk::JsonRuntime),
// with exact results, reporting each node to the profiler (ABI 1.6).
//
//===----------------------------------------------------------------------===//
#include <tessera/sdk/json_runtime.hpp>
#include <tessera/sdk/plugin.hpp>
#include <tessera/sdk/profile.hpp>

#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <thread>

#ifndef TIMED_NAME
#error "define TIMED_NAME, TIMED_SLEEP_MS, TIMED_OP_SLEEP_MS and TIMED_ESTIMATE"
#endif

namespace {

using namespace tessera::sdk;

bool isF32(const TensorType &t) { return t.dtype == *dtypeFromName("f32"); }

class TimedChecker : public Checker {
public:
  std::vector<std::string> ops() const override {
    return {"relu", "tanh", "sigmoid", "add", "multiply"};
  }
  bool check(const OpDesc &op, std::string &reason) const override {
    for (const TensorType &t : op.inputs)
      if (!isF32(t) || (op.inputs.size() == 2 && op.inputs[1].shape != op.inputs[0].shape)) {
        reason = std::string(TIMED_NAME) + ": f32 of one shape only";
        return false;
      }
    return true;
  }
  bool keepsRegions() const override { return true; }
  bool keepRegion(const GraphView &, std::string &) const override { return true; }
  bool estimatesRegions() const override { return TIMED_ESTIMATE > 0; }
  double estimateRegion(const GraphView &, std::string &reason) const override {
    reason = "sleeps " + std::to_string(TIMED_SLEEP_MS) + " ms in every region call";
    return TIMED_ESTIMATE;
  }
};

class TimedRuntime : public JsonRuntime {
public:
  explicit TimedRuntime(std::vector<JsonFunction> fns) : JsonRuntime(TIMED_NAME, std::move(fns)) {}

protected:
  void init(std::span<const JsonFunction> fns) override {
    for (const JsonFunction &fn : fns)
      for (const Node &n : fn.graph.nodes)
        if (n.kind == Node::Kind::Composite)
          throw Error(std::string(TIMED_NAME) + ": no composites");
    if (fns.empty() || fns[0].graph.outputs.empty())
      throw Error(std::string(TIMED_NAME) + ": an empty module");
  }

  void run(const JsonFunction &fn, std::span<const DLTensor *const> inputs,
           std::span<const DLTensor *const> outputs) const override {
    if (TIMED_SLEEP_MS > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(TIMED_SLEEP_MS));
    const Graph &g = fn.graph;
    std::map<int64_t, std::vector<float>> values;
    for (size_t i = 0, param = 0; i < g.nodes.size(); ++i) {
      const Node &n = g.nodes[i];
      ProfileScope scope(n.kind == Node::Kind::Op ? n.op.c_str() : nullptr, n.name.c_str(),
                         TIMED_NAME); // a null name reports nothing
      if (TIMED_OP_SLEEP_MS > 0 && n.op == "tanh")
        std::this_thread::sleep_for(std::chrono::milliseconds(TIMED_OP_SLEEP_MS));
      const size_t count = size_t(n.outputs[0].numel());
      std::vector<float> out(count);
      auto in = [&](size_t k) -> const std::vector<float> & {
        return values.at(n.inputs[k].node);
      };
      if (n.kind == Node::Kind::Input) {
        std::memcpy(out.data(), inputs[param++]->data, count * sizeof(float));
      } else if (n.kind == Node::Kind::Const) {
        std::memcpy(out.data(), fn.constants[size_t(n.constant)].data(), count * sizeof(float));
      } else {
        for (size_t k = 0; k < count; ++k) {
          const float a = in(0)[k];
          out[k] = n.op == "relu"      ? (a > 0 ? a : 0.0f)
                   : n.op == "tanh"    ? std::tanh(a)
                   : n.op == "sigmoid" ? 1.0f / (1.0f + std::exp(-a))
                   : n.op == "add"     ? a + in(1)[k]
                                       : a * in(1)[k];
        }
      }
      values[int64_t(i)] = std::move(out);
    }
    for (size_t o = 0; o < g.outputs.size(); ++o) {
      const std::vector<float> &v = values.at(g.outputs[o].node);
      std::memcpy(outputs[o]->data, v.data(), v.size() * sizeof(float));
    }
  }
};

class TimedCodegen : public Codegen {
public:
  std::unique_ptr<Module> compile(const GraphView &graph) override {
    std::vector<JsonFunction> fns;
    fns.push_back(JsonRuntime::functionFromGraph(graph, TIMED_NAME));
    return JsonRuntime::create<TimedRuntime>(std::move(fns));
  }
};

class TimedFactory : public ModuleFactory {
public:
  TimedFactory() : ModuleFactory(TIMED_NAME) {}
  std::unique_ptr<Module> load(std::string_view bytes) override {
    return JsonRuntime::load<TimedRuntime>(bytes, TIMED_NAME);
  }
};

class TimedPlugin : public Plugin {
public:
  TimedPlugin() : Plugin(TIMED_NAME, "1.0.0", "test target of a controlled speed") {}
  Checker &checker() override { return checker_; }
  Codegen &codegen() override { return codegen_; }
  std::vector<ModuleFactory *> factories() override { return {&factory_}; }

private:
  TimedChecker checker_;
  TimedCodegen codegen_;
  TimedFactory factory_;
};

} // namespace

TESSERA_PLUGIN(TimedPlugin)
