//===- plugins/json/checker.cpp - Which ops the json plugin takes ---------===//
#include "checker.h"

#include "ops.h"

#include "tessera/sdk/json_graph.hpp"

namespace tessera::json_plugin {

std::vector<std::string> JsonChecker::ops() const {
  return supportedOps();
}

// Patterns in the core's pattern language (docs/abi.md). A match is outlined
// as a composite node "json.<name>" whose body holds the matched ops; the
// runtime fuses these bodies into one kernel (runtime.cpp, tryFuse): the
// bias and the activation are applied in the product's output loop instead
// of in separate passes over memory. Earlier patterns win, so the longest
// form comes first.
std::vector<std::pair<std::string, std::string>> JsonChecker::patterns() const {
  // The activations the fused kernels apply (any unary op of the plugin
  // would do; these are the ones that follow a conv2d or dense in practice).
  const std::string act = "relu|leaky_relu|clip|sigmoid|tanh|hard_swish|silu|gelu";
  return {
      // conv2d + per-channel bias (+ activation): the body of every CNN.
      {"conv2d_bias_act", act + "?(bias_add|add(conv2d(*, const), const))"},
      // conv2d + activation without a bias (the bias was folded away).
      {"conv2d_act", act + "(conv2d(*, const))"},
      // dense + bias (+ activation): fully connected layers.
      {"dense_bias_act", act + "?(bias_add|add(dense(*, const), const))"},
  };
}

bool JsonChecker::check(const sdk::OpDesc &op, std::string &reason) const {
  try {
    // validates attributes and shapes (a symbolic op's at its examples); the
    // kernel is dropped
    prepareOp(op.symbols.empty() ? op : sdk::exampleOp(op));
    return true;
  } catch (const sdk::Error &e) {
    reason = std::string("json plugin: ") + e.what();
    return false;
  }
}

double JsonChecker::estimateRegion(const sdk::GraphView &region, std::string &reason) const {
  // Measured on the benchmark zoo (CNNs, transformers): the json plugin's
  // whole-model times were 4.6x-8x the host's; its products are plain
  // loops, where the host's are tiled and vectorised.
  for (const sdk::Node &n : sdk::readGraph(region.json).nodes)
    if (n.kind == sdk::Node::Kind::Op &&
        (n.op == "conv2d" || n.op == "conv2d_transpose" || n.op == "dense" || n.op == "matmul" ||
         n.op == "batch_matmul")) {
      reason = "json: " + n.op + " runs as plain loops, node by node; the host's code is "
               "tiled and vectorised";
      return 0.2;
    }
  return 0;
}

} // namespace tessera::json_plugin
