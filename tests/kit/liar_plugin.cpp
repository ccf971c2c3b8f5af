//===- tests/kit/liar_plugin.cpp - A plugin that is wrong on purpose ------===//
//
// The conformance kit must catch a plugin whose checker promises more than
// its code delivers. This one claims relu, neg, exp and sigmoid on f32 and
// fails each way the kit looks for:
//   relu  right when compiled, but the module reloaded through the factory
//         copies its input (save/load loses the op)
//   neg   never writes its output
//   exp   codegen throws although the checker accepted
//   sigmoid  the checker throws (std::out_of_range) instead of deciding: the
//         SDK turns it into a decline "checker error: ...", which the kit
//         counts as a failure
//   pattern "twice" (relu(relu(*))): the checker declines every match
// check_kit_catches.cmake runs `tessera plugin-check` on it and pins the
// FAIL/DECLINED lines and the summary.
//
//===----------------------------------------------------------------------===//
#include "tessera/sdk/json_graph.hpp"

#include <cmath>

namespace {

using namespace tessera;

class LiarFunction : public sdk::Function {
public:
  LiarFunction(std::string op, bool reloaded) : op_(std::move(op)), reloaded_(reloaded) {}

  void run(std::span<const DLTensor *const> args) override {
    if (args.size() != 2)
      throw sdk::Error("liar: expected 2 arguments");
    int64_t n = 1;
    for (int32_t d = 0; d < args[0]->ndim; ++d)
      n *= args[0]->shape[d];
    const auto *in = static_cast<const float *>(args[0]->data);
    auto *out = static_cast<float *>(args[1]->data);
    if (op_ == "neg")
      return; // the output stays as the caller left it
    for (int64_t i = 0; i < n; ++i)
      out[i] = reloaded_ ? in[i] : std::max(in[i], 0.0f);
  }

private:
  std::string op_;
  bool reloaded_;
};

class LiarModule : public sdk::Module {
public:
  LiarModule(std::string symbol, std::string op, bool reloaded)
      : Module("liar"), symbol_(std::move(symbol)), op_(std::move(op)), fn_(op_, reloaded) {}
  sdk::Function *function(std::string_view symbol) override {
    return symbol == symbol_ ? &fn_ : nullptr;
  }
  void save(const sdk::Writer &out) const override { out(symbol_ + "\n" + op_); }

private:
  std::string symbol_, op_;
  LiarFunction fn_;
};

class LiarChecker : public sdk::Checker {
public:
  std::vector<std::string> ops() const override { return {"relu", "neg", "exp", "sigmoid"}; }
  std::vector<std::pair<std::string, std::string>> patterns() const override {
    return {{"twice", "relu(relu(*))"}};
  }
  bool check(const sdk::OpDesc &op, std::string &reason) const override {
    if (op.op == "sigmoid") // a bug: the checker throws instead of deciding
      return op.inputs.at(3).shape.empty();
    if (sdk::dtypeName(op.inputs.at(0).dtype) != "f32") {
      reason = "liar: only f32, got " + sdk::dtypeName(op.inputs.at(0).dtype);
      return false;
    }
    return true;
  }
  bool checkPattern(std::string_view pattern, const std::vector<sdk::OpDesc> &ops,
                    std::string &reason) const override {
    reason = "liar: no composites (" + std::string(pattern) + " over " +
             std::to_string(ops.size()) + " ops)";
    return false;
  }
};

class LiarCodegen : public sdk::Codegen {
public:
  std::unique_ptr<sdk::Module> compile(const sdk::GraphView &view) override {
    sdk::Graph g = sdk::readGraph(view.json);
    const std::string &op = g.nodes.at(1).op;
    if (op == "exp")
      throw sdk::Error("liar: exp is not implemented after all", TESSERA_STATUS_UNIMPLEMENTED);
    return std::make_unique<LiarModule>(std::string(view.symbol), op, false);
  }
};

class LiarFactory : public sdk::ModuleFactory {
public:
  LiarFactory() : ModuleFactory("liar") {}
  std::unique_ptr<sdk::Module> load(std::string_view bytes) override {
    size_t nl = bytes.find('\n');
    if (nl == std::string_view::npos)
      throw sdk::Error("liar: not a saved liar module", TESSERA_STATUS_DATA_LOSS);
    return std::make_unique<LiarModule>(std::string(bytes.substr(0, nl)),
                                        std::string(bytes.substr(nl + 1)), true);
  }
};

class LiarPlugin : public sdk::Plugin {
public:
  LiarPlugin() : Plugin("liar", "0.0.1", "wrong on purpose: the kit must catch it") {}
  sdk::Checker &checker() override { return checker_; }
  sdk::Codegen &codegen() override { return codegen_; }
  std::vector<sdk::ModuleFactory *> factories() override { return {&factory_}; }

private:
  LiarChecker checker_;
  LiarCodegen codegen_;
  LiarFactory factory_;
};

} // namespace

TESSERA_PLUGIN(LiarPlugin)
