//===- plugins/dnnl/checker.cpp - Which ops the dnnl plugin takes ---------===//
#include "checker.h"

#include "ops.h"
#include "plan.h"

#include "tessera/sdk/json_graph.hpp"

#include <algorithm>

namespace tessera::dnnl_plugin {

std::vector<std::string> DnnlChecker::ops() const {
  return supportedOps();
}

// Patterns (docs/abi.md). The runtime fuses by looking at the ops (a
// product absorbs the bias, eltwise chain and residual add that follow it,
// plan.cpp), so a pattern only keeps a fusible group together in one
// region and names it in reports. Earlier patterns win: longest first.
std::vector<std::pair<std::string, std::string>> DnnlChecker::patterns() const {
  const std::string act = "relu|leaky_relu|clip|sigmoid|tanh|hard_swish|hard_sigmoid|silu|mish|gelu";
  const std::string conv = act + "?(bias_add|add?(conv2d(*, const), const))";
  return {
      // ResNet's block end: relu(add(conv + bias, identity)). (The kit
      // instantiates only this operand order; the runtime fuses both.)
      {"conv2d_bias_add_relu", "relu?(add(" + conv + ", *))"},
      // conv2d + batch_norm (unfolded) + activation: bn folded at init.
      {"conv2d_bn_act", act + "?(batch_norm(conv2d(*, const), const, const, const, const))"},
      // conv2d + bias + activation: the body of every CNN.
      {"conv2d_bias_act", conv},
      // dense + bias + activation: fully connected layers.
      {"dense_bias_act", act + "?(bias_add|add?(dense(*, const), const))"},
      // matmul (either operand may be computed) + bias + activation.
      {"matmul_bias_act", act + "?(add?(matmul(*, *), const))"},
  };
}

namespace {

/// What the probe of one op found: the first step that runs one of
/// oneDNN's reference kernels ("ref:any", "bnorm_ref:any"), or ""; and
/// what its steps other than layout changes run ("convolution jit:avx2").
struct Probe {
  std::string reference;
  std::string runs;
};

/// Builds the op's primitives on a one-node graph (inputs plain, as the
/// region boundary has them), so that everything oneDNN refuses is known
/// now. Constant operands become inputs: the layout logic is the same.
Probe probe(const sdk::OpDesc &op) {
  sdk::Graph g;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    sdk::Node n;
    n.kind = sdk::Node::Kind::Input;
    n.name = "x" + std::to_string(i);
    n.outputs = {op.inputs[i]};
    g.nodes.push_back(std::move(n));
    g.inputs.push_back(int64_t(i));
  }
  sdk::Node n;
  n.kind = sdk::Node::Kind::Op;
  n.op = op.op;
  n.name = op.name;
  n.attrs = op.attrs;
  for (size_t i = 0; i < op.inputs.size(); ++i)
    n.inputs.push_back(sdk::NodeRef{int64_t(i), 0});
  n.outputs = op.outputs;
  g.nodes.push_back(std::move(n));
  g.outputs.push_back(sdk::NodeRef{int64_t(op.inputs.size()), 0});
  sdk::JsonFunction fn;
  fn.symbol = "probe";
  fn.graph = std::move(g);
  std::unique_ptr<PrimitivePlan> plan = buildPlan(fn, "", ConstantCopies::CheckOnly);
  Probe out;
  std::vector<std::string> runs;
  for (const Step &step : plan->steps) {
    if (out.reference.empty() && isReference(step.impl))
      out.reference = step.impl;
    std::string what = step.kind + " " + step.impl;
    if (step.kind != "reorder" && std::find(runs.begin(), runs.end(), what) == runs.end())
      runs.push_back(std::move(what));
  }
  if (runs.empty() && !plan->steps.empty()) // a view or a layout change: reorders only
    runs.push_back("reorder " + plan->steps.front().impl);
  for (const std::string &r : runs)
    out.runs += (out.runs.empty() ? "" : ", ") + r;
  return out;
}

} // namespace

bool DnnlChecker::check(const sdk::OpDesc &symbolic, std::string &reason) const {
  // Over symbolic dims: judged at one consistent shape. What oneDNN can do
  // does not depend on the sizes of the dims the exporters leave free
  // (batch, height, width), only on ranks, channels, kernels and attributes.
  const sdk::OpDesc op = symbolic.symbols.empty() ? symbolic : sdk::exampleOp(symbolic);
  // A nearest resize other than half_pixel is taken only by a whole factor
  // (ops.cpp), which an example shape cannot promise for every size.
  if (!symbolic.symbols.empty() && op.op == "resize2d") {
    const sdk::AttrValue *coord = op.attrs.find("coordinate_transformation_mode");
    const auto *s = coord ? std::get_if<std::string>(coord) : nullptr;
    if (s && *s != "half_pixel") {
      reason = declineReason(op.op, "coordinate_transformation_mode \"" + *s +
                                        "\" over symbolic sizes (oneDNN resamples half_pixel)");
      return false;
    }
  }
  try {
    analyzeOp(op);
  } catch (const sdk::Error &e) {
    reason = declineReason(op.op, e.what());
    return false;
  }
  Probe found;
  try {
    found = probe(op);
  } catch (const std::exception &e) {
    // "function 'probe': node 2 ('conv', conv2d): oneDNN: ..." -> the part
    // after the node.
    std::string what = e.what();
    size_t at = what.find("oneDNN: ");
    reason = declineReason(op.op, at == std::string::npos ? what
                                                          : "oneDNN has no implementation (" +
                                                                what.substr(at + 8) + ")");
    return false;
  }
  // A reference kernel runs 10-100x slower than oneDNN's jit kernels and
  // than the host's code: such an op is better left to another target.
  if (!found.reference.empty()) {
    reason = declineReason(op.op, "would run oneDNN's reference kernel (" + found.reference + ")");
    return false;
  }
  reason = found.runs; // the report's note: what oneDNN will run
  return true;
}

bool DnnlChecker::checkPattern(std::string_view, const std::vector<sdk::OpDesc> &ops,
                               std::string &reason) const {
  // Each op on its own; the note: what they run, each once.
  std::vector<std::string> notes;
  for (const sdk::OpDesc &op : ops) {
    std::string note;
    if (!check(op, note)) {
      reason = std::move(note);
      return false;
    }
    if (!note.empty() && std::find(notes.begin(), notes.end(), note) == notes.end())
      notes.push_back(std::move(note));
  }
  reason.clear();
  for (const std::string &n : notes)
    reason += (reason.empty() ? "" : ", ") + n;
  return true;
}

} // namespace tessera::dnnl_plugin
