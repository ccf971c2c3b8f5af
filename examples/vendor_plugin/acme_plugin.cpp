//===- acme_plugin.cpp - A minimal out-of-tree Tessera plugin -------------===//
//
// "acme" takes relu, leaky_relu and same-shape add on f32 tensors, and a
// fused pattern add + relu; it keeps a region when it does at least two
// ops' work (keepRegion). Its compiled form is the JSON subgraph itself
// (tessera::sdk::JsonRuntime keeps the graph and the constants, checks every
// call and saves/loads the module); run() walks the graph node by node.
//
// A real vendor replaces run() with calls into its library or generated
// code, and grows the checker; the shape of the plugin stays the same.
//
//===----------------------------------------------------------------------===//
#include <tessera/sdk/json_runtime.hpp>
#include <tessera/sdk/op_helpers.hpp>

#include <cmath>
#include <cstring>
#include <map>

namespace {

using namespace tessera::sdk;

constexpr const char *kTypeKey = "acme";

bool isF32(const TensorType &t) { return t.dtype == *dtypeFromName("f32"); }

class AcmeChecker : public Checker {
public:
  std::vector<std::string> ops() const override { return {"relu", "leaky_relu", "add"}; }

  std::vector<std::pair<std::string, std::string>> patterns() const override {
    return {{"add_relu", "relu(add(*, *))"}};
  }

  bool check(const OpDesc &op, std::string &reason) const override {
    for (const TensorType &t : op.inputs)
      if (!isF32(t)) {
        reason = "acme: only f32, got " + dtypeName(t.dtype);
        return false;
      }
    if (op.op == "add" && op.inputs[0].shape != op.inputs[1].shape) {
      reason = "acme: add needs equal shapes (no broadcasting), got " + op.inputs[0].str() +
               " and " + op.inputs[1].str();
      return false;
    }
    // op_helpers.hpp reads attributes with the defaults docs/ops.md gives.
    if (op.op == "leaky_relu" && !std::isfinite(floatAttr(op, "alpha", 0.01))) {
      reason = "acme: leaky_relu needs a finite alpha";
      return false;
    }
    return true;
  }

  // Without a region rule the core keeps only regions holding a
  // compute-heavy op (conv2d, dense, matmul...), which acme does not take:
  // every acme region would go back to the host. acme's rule: a region is
  // worth a call when it does at least two ops' work (a fused add_relu
  // counts as its two ops).
  bool keepsRegions() const override { return true; }

  bool keepRegion(const GraphView &region, std::string &reason) const override {
    const size_t ops = countOps(readGraph(region.json));
    if (ops >= 2)
      return true;
    reason = "acme: a region of " + std::to_string(ops) +
             " op is not worth a call; acme keeps regions of 2 ops or more";
    return false;
  }

private:
  static size_t countOps(const Graph &g) {
    size_t n = 0;
    for (const Node &node : g.nodes) {
      if (node.kind == Node::Kind::Op)
        ++n;
      else if (node.kind == Node::Kind::Composite)
        n += countOps(*node.body);
    }
    return n;
  }
};

/// Executes a graph node by node; intermediates live in a per-call map.
class AcmeRuntime : public JsonRuntime {
public:
  explicit AcmeRuntime(std::vector<JsonFunction> fns) : JsonRuntime(kTypeKey, std::move(fns)) {}

protected:
  void init(std::span<const JsonFunction> fns) override {
    for (const JsonFunction &fn : fns)
      check(fn.graph);
  }

  void run(const JsonFunction &fn, std::span<const DLTensor *const> inputs,
           std::span<const DLTensor *const> outputs) const override {
    std::vector<const float *> in;
    for (const DLTensor *t : inputs)
      in.push_back(static_cast<const float *>(t->data));
    std::vector<float> result = evaluate(fn, fn.graph, in);
    std::memcpy(outputs[0]->data, result.data(), result.size() * sizeof(float));
  }

private:
  static void check(const Graph &g) {
    if (g.outputs.size() != 1)
      throw Error("acme: one output per function");
    for (const Node &n : g.nodes) {
      if (n.kind == Node::Kind::Composite)
        check(*n.body);
      else if (n.kind == Node::Kind::Op && n.op != "relu" && n.op != "leaky_relu" &&
               n.op != "add")
        throw Error("acme: cannot run op '" + n.op + "'");
    }
  }

  /// The value of g's output, given pointers to its inputs' data.
  static std::vector<float> evaluate(const JsonFunction &fn, const Graph &g,
                                     const std::vector<const float *> &inputs) {
    std::map<int64_t, std::vector<float>> values;
    auto valueOf = [&](const NodeRef &r) -> const std::vector<float> & { return values.at(r.node); };
    for (size_t i = 0, param = 0; i < g.nodes.size(); ++i) {
      const Node &n = g.nodes[i];
      const size_t count = size_t(n.outputs[0].numel());
      std::vector<float> out(count);
      if (n.kind == Node::Kind::Input) {
        std::memcpy(out.data(), inputs[param++], count * sizeof(float));
      } else if (n.kind == Node::Kind::Const) {
        std::memcpy(out.data(), fn.constants[size_t(n.constant)].data(), count * sizeof(float));
      } else if (n.kind == Node::Kind::Composite) {
        std::vector<const float *> args;
        for (const NodeRef &r : n.inputs)
          args.push_back(valueOf(r).data());
        out = evaluate(fn, *n.body, args);
      } else if (n.op == "add") {
        const auto &a = valueOf(n.inputs[0]), &b = valueOf(n.inputs[1]);
        for (size_t k = 0; k < count; ++k)
          out[k] = a[k] + b[k];
      } else { // relu, leaky_relu
        const float alpha = n.op == "relu" ? 0.0f : float(n.attrs.getFloat("alpha"));
        const auto &x = valueOf(n.inputs[0]);
        for (size_t k = 0; k < count; ++k)
          out[k] = x[k] >= 0 ? x[k] : alpha * x[k];
      }
      values[int64_t(i)] = std::move(out);
    }
    return values.at(g.outputs[0].node);
  }
};

class AcmeCodegen : public Codegen {
public:
  std::unique_ptr<Module> compile(const GraphView &graph) override {
    std::vector<JsonFunction> fns;
    fns.push_back(JsonRuntime::functionFromGraph(graph, kTypeKey));
    return JsonRuntime::create<AcmeRuntime>(std::move(fns));
  }
};

class AcmeFactory : public ModuleFactory {
public:
  AcmeFactory() : ModuleFactory(kTypeKey) {}
  std::unique_ptr<Module> load(std::string_view bytes) override {
    return JsonRuntime::load<AcmeRuntime>(bytes, kTypeKey);
  }
};

class AcmePlugin : public Plugin {
public:
  AcmePlugin() : Plugin("acme", "0.1.0", "example out-of-tree plugin: relu, leaky_relu, add") {}
  Checker &checker() override { return checker_; }
  Codegen &codegen() override { return codegen_; }
  std::vector<ModuleFactory *> factories() override { return {&factory_}; }

private:
  AcmeChecker checker_;
  AcmeCodegen codegen_;
  AcmeFactory factory_;
};

} // namespace

TESSERA_PLUGIN(AcmePlugin)
