//===- plugins/json/runtime.cpp - The json plugin's runtime module --------===//
//
// A Program is a straight-line sequence of Steps over numbered value
// slots: every input, constant and node result gets a slot, and each Step runs one kernel from
// input slots to an output slot. Composite nodes are either fused into one
// Step (conv2d/dense + bias + activation, the patterns of checker.cpp) or
// inlined: their body's nodes become Steps over the same slots. Programs are
// built once in init() and only read afterwards, so run() may be called
// from several threads at once.
//
//===----------------------------------------------------------------------===//
#include "runtime.h"

#include "ops.h"

#include <algorithm>
#include <cstring>

namespace tessera::json_plugin {


using sdk::Graph;
using sdk::Node;
using sdk::NodeRef;
using sdk::TensorType;

namespace {

struct Step {
  std::vector<int> inputs; // slots, in the kernel's argument order
  int output = -1;         // slot
  Kernel kernel;
  std::string name, nodes; // what profiles call it: the op ("conv2d+bias+relu"), its nodes
};

const DLDataType kF32{kDLFloat, 32, 1};

std::string describe(size_t index, const Node &n) {
  return "node " + std::to_string(index) + " ('" + n.name + "', " + n.op + ")";
}

} // namespace

struct InterpreterModule::Program {
  std::vector<int64_t> slotSize;        // f32 elements per slot
  std::vector<const float *> constData; // per slot: a constant of the module, or null
  std::vector<bool> computed;           // per slot: written by a step
  std::vector<int> lastUse;             // per slot: the last step that reads it, or -1
  std::vector<int> inputSlots, outputSlots;
  std::vector<Step> steps;
};

namespace {

/// Builds the Program of one function.
class ProgramBuilder {
public:
  using Program = InterpreterModule::Program;

  /// `graph`: fn's graph, or a symbolic function's at one shape.
  ProgramBuilder(const sdk::JsonFunction &fn, const Graph &graph, std::string prefix)
      : fn_(fn), graph_(graph), where_(std::move(prefix) + "function '" + fn.symbol + "'") {}

  std::unique_ptr<Program> build() {
    const Graph &g = graph_;
    constSlots_.assign(fn_.constants.size(), -1);
    for (int64_t node : g.inputs)
      program_->inputSlots.push_back(newSlot(checkF32(g.nodes[size_t(node)], size_t(node), where_)));
    program_->outputSlots = addGraph(g, program_->inputSlots, where_);
    program_->lastUse.assign(types_.size(), -1);
    for (size_t s = 0; s < program_->steps.size(); ++s)
      for (int slot : program_->steps[s].inputs)
        program_->lastUse[size_t(slot)] = int(s);
    return std::move(program_);
  }

private:
  [[noreturn]] void fail(const std::string &where, const std::string &what) const {
    throw sdk::Error(where + ": " + what);
  }

  /// A node's single f32 result type.
  const TensorType &checkF32(const Node &n, size_t index, const std::string &where) const {
    if (n.outputs.size() != 1)
      fail(where, "node " + std::to_string(index) + " ('" + n.name + "') has " +
                      std::to_string(n.outputs.size()) + " results; this plugin runs ops with one");
    if (!(n.outputs[0].dtype == kF32))
      fail(where, "node " + std::to_string(index) + " ('" + n.name + "'): only f32, got " +
                      sdk::dtypeName(n.outputs[0].dtype));
    return n.outputs[0];
  }

  /// Element counts are int64 everywhere: refuse a (tampered) type whose
  /// count does not fit, or whose bytes no machine has.
  void checkSize(const TensorType &t) const {
    int64_t n = 1;
    for (int64_t d : t.shape)
      if (d < 0 || __builtin_mul_overflow(n, d, &n) || n > (int64_t(1) << 48))
        fail(where_, "the tensor type " + t.str() + " is too large");
  }

  int newSlot(const TensorType &t, const float *constData = nullptr) {
    checkSize(t);
    types_.push_back(t);
    program_->slotSize.push_back(t.numel());
    program_->constData.push_back(constData);
    program_->computed.push_back(false);
    return int(types_.size() - 1);
  }

  int constSlot(int64_t index) {
    int &slot = constSlots_[size_t(index)];
    if (slot < 0) {
      const sdk::JsonConstant &c = fn_.constants[size_t(index)];
      slot = newSlot(c.type(), c.as<float>());
    }
    return slot;
  }

  /// The op call of node `n` of `g` as the checker would see it.
  sdk::OpDesc descOf(const Graph &g, const Node &n) const {
    for (const TensorType &t : n.outputs)
      checkSize(t); // before any kernel preparation computes with them
    sdk::OpDesc d;
    d.op = n.op;
    d.name = n.name;
    d.attrs = n.attrs;
    for (const NodeRef &r : n.inputs)
      d.inputs.push_back(g.typeOf(r));
    d.outputs = n.outputs;
    return d;
  }

  /// prepareOp with the location in messages.
  Kernel prepare(const sdk::OpDesc &d, const std::vector<int> &inputs, const Fusion &fusion,
                 const std::string &where) {
    std::vector<const float *> consts;
    for (int s : inputs)
      consts.push_back(program_->constData[size_t(s)]);
    try {
      return prepareOp(d, consts, fusion);
    } catch (const sdk::Error &e) {
      fail(where, e.what());
    }
  }

  void addStep(std::vector<int> inputs, int output, Kernel kernel, std::string name,
               std::string nodes) {
    program_->computed[size_t(output)] = true;
    program_->steps.push_back(
        Step{std::move(inputs), output, std::move(kernel), std::move(name), std::move(nodes)});
  }

  /// Adds the nodes of `g` (whose inputs are the slots `bound`) and returns
  /// the slots of its outputs.
  std::vector<int> addGraph(const Graph &g, const std::vector<int> &bound,
                            const std::string &where) {
    if (g.inputs.size() != bound.size())
      fail(where, "the graph has " + std::to_string(g.inputs.size()) + " inputs, " +
                      std::to_string(bound.size()) + " are bound");
    std::vector<std::vector<int>> slots(g.nodes.size());
    auto slotOf = [&](const NodeRef &r) { return slots[size_t(r.node)][size_t(r.index)]; };
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node &n = g.nodes[i];
      switch (n.kind) {
      case Node::Kind::Input: {
        auto pos = std::find(g.inputs.begin(), g.inputs.end(), int64_t(i));
        if (pos == g.inputs.end())
          fail(where, "input node " + std::to_string(i) + " ('" + n.name +
                          "') is not listed in \"inputs\"");
        int slot = bound[size_t(pos - g.inputs.begin())];
        if (!(checkF32(n, i, where) == types_[size_t(slot)]))
          fail(where, "input node " + std::to_string(i) + " ('" + n.name + "') has type " +
                          n.outputs[0].str() + ", but is bound to " + types_[size_t(slot)].str());
        slots[i] = {slot};
        break;
      }
      case Node::Kind::Const:
        checkF32(n, i, where);
        slots[i] = {constSlot(n.constant)};
        break;
      case Node::Kind::Op: {
        std::vector<int> ins;
        for (const NodeRef &r : n.inputs)
          ins.push_back(slotOf(r));
        Kernel k = prepare(descOf(g, n), ins, {}, where + ": " + describe(i, n));
        int out = newSlot(n.outputs[0]);
        addStep(std::move(ins), out, std::move(k), n.op, n.name);
        slots[i] = {out};
        break;
      }
      case Node::Kind::Composite: {
        std::string at = where + ": " + describe(i, n);
        if (!n.body)
          fail(at, "a composite node needs a body");
        std::vector<int> ins;
        for (const NodeRef &r : n.inputs)
          ins.push_back(slotOf(r));
        std::vector<int> outs;
        if (!tryFuse(*n.body, ins, outs, at))
          outs = addGraph(*n.body, ins, at + " body");
        if (outs.size() != n.outputs.size())
          fail(at, "the body has " + std::to_string(outs.size()) + " results, the node " +
                       std::to_string(n.outputs.size()));
        for (size_t k = 0; k < outs.size(); ++k)
          if (!(types_[size_t(outs[k])] == n.outputs[k]))
            fail(at, "result " + std::to_string(k) + " of the body is " +
                         types_[size_t(outs[k])].str() + ", the node declares " +
                         n.outputs[k].str());
        slots[i] = std::move(outs);
        break;
      }
      }
    }
    std::vector<int> outs;
    for (const NodeRef &r : g.outputs)
      outs.push_back(slotOf(r));
    return outs;
  }

  /// Fuses a composite body of the form act?(bias?(conv2d|dense(x, w), b))
  /// into one Step: the bias and the activation run in the product's output
  /// loop. Returns false (nothing added) for any other body, which is then
  /// inlined node by node.
  bool tryFuse(const Graph &body, const std::vector<int> &bound, std::vector<int> &outs,
               const std::string &where) {
    if (body.inputs.size() != bound.size() || body.outputs.size() != 1)
      return false;
    std::vector<size_t> ops; // the op nodes, in order
    for (size_t i = 0; i < body.nodes.size(); ++i) {
      if (body.nodes[i].kind == Node::Kind::Composite)
        return false;
      if (body.nodes[i].kind == Node::Kind::Op)
        ops.push_back(i);
    }
    if (ops.empty() || ops.size() > 3 || !(body.outputs[0] == NodeRef{int64_t(ops.back()), 0}))
      return false;
    const Node &product = body.nodes[ops[0]];
    if (product.op != "conv2d" && product.op != "dense")
      return false;
    // A chain: each op takes the previous one's result first and is its only
    // user; the other operands are body inputs or constants.
    for (size_t k = 0; k < ops.size(); ++k) {
      const Node &n = body.nodes[ops[k]];
      if (n.outputs.size() != 1 || n.inputs.empty())
        return false;
      for (size_t a = 0; a < n.inputs.size(); ++a) {
        bool fromPrev = k > 0 && a == 0;
        const NodeRef &r = n.inputs[a];
        if (fromPrev ? !(r == NodeRef{int64_t(ops[k - 1]), 0})
                     : body.nodes[size_t(r.node)].kind == Node::Kind::Op)
          return false;
      }
      if (k > 0) {
        size_t users = 0;
        for (const Node &m : body.nodes)
          for (const NodeRef &r : m.inputs)
            users += r.node == int64_t(ops[k - 1]);
        if (users != 1)
          return false;
      }
    }
    const TensorType &out = product.outputs[0];
    size_t channel = product.op == "conv2d" ? 1 : out.shape.size() - 1;
    int64_t channels = out.shape.empty() ? 0 : out.shape[channel];
    size_t next = 1;
    const Node *biasNode = nullptr, *actNode = nullptr;
    if (next < ops.size() && isChannelBias(body, body.nodes[ops[next]], out, channel, channels))
      biasNode = &body.nodes[ops[next++]];
    std::optional<Unary> act;
    if (next < ops.size()) {
      try {
        act = activationOf(descOf(body, body.nodes[ops[next]]));
      } catch (const sdk::Error &) {
        return false; // not a valid activation: the inlined node reports it
      }
      if (!act || body.nodes[ops[next]].inputs.size() != 1)
        return false;
      actNode = &body.nodes[ops[next++]];
    }
    if (next != ops.size())
      return false;

    // The slots of the body's inputs and constants.
    auto leaf = [&](const NodeRef &r) {
      const Node &n = body.nodes[size_t(r.node)];
      if (n.kind == Node::Kind::Const) {
        checkF32(n, size_t(r.node), where);
        return constSlot(n.constant);
      }
      auto pos = std::find(body.inputs.begin(), body.inputs.end(), r.node);
      if (pos == body.inputs.end())
        fail(where, "input node " + std::to_string(r.node) + " ('" + n.name +
                        "') is not listed in \"inputs\"");
      int slot = bound[size_t(pos - body.inputs.begin())];
      if (!(checkF32(n, size_t(r.node), where) == types_[size_t(slot)]))
        fail(where, "input node " + std::to_string(r.node) + " ('" + n.name + "') has type " +
                        n.outputs[0].str() + ", but is bound to " + types_[size_t(slot)].str());
      return slot;
    };
    // Every node is validated on its own first (types, attributes), so that
    // a fused body accepts exactly what the inlined one would.
    std::string at = where + " body";
    std::vector<int> ins;
    for (const NodeRef &r : product.inputs)
      ins.push_back(leaf(r));
    prepare(descOf(body, product), ins, {}, at + ": " + describe(ops[0], product));
    Fusion fusion;
    sdk::OpDesc fused = descOf(body, product);
    if (biasNode) {
      int biasSlot = leaf(biasNode->inputs[1]);
      prepare(descOf(body, *biasNode), {ins[0], biasSlot}, {},
              at + ": " + describe(ops[1], *biasNode));
      ins.push_back(biasSlot);
      fused.inputs.push_back(types_[size_t(biasSlot)]);
      fusion.bias = true;
    }
    if (actNode) {
      prepare(descOf(body, *actNode), {ins[0]}, {}, at + ": " + describe(ops.back(), *actNode));
      fusion.act = *act;
    }
    Kernel k = prepare(fused, ins, fusion, at + " (fused)");
    int slot = newSlot(body.nodes[ops.back()].outputs[0]);
    std::string name = product.op, nodes = product.name;
    for (const Node *f : {biasNode, actNode})
      if (f) {
        name += "+" + f->op;
        nodes += ", " + f->name;
      }
    addStep(std::move(ins), slot, std::move(k), std::move(name), std::move(nodes));
    outs = {slot};
    return true;
  }

  /// A bias_add along the channel axis, or an add of a tensor holding one
  /// value per channel laid out along the channel axis ([O, 1, 1] after a
  /// conv2d, [U] after a dense), that keeps the product's shape.
  static bool isChannelBias(const Graph &body, const Node &n, const TensorType &out, size_t channel,
                            int64_t channels) {
    if (n.inputs.size() != 2 || n.outputs.size() != 1 || !(n.outputs[0] == out))
      return false;
    const TensorType &b = body.typeOf(n.inputs[1]);
    if (n.op == "bias_add") {
      int64_t axis = n.attrs.has("axis") && std::holds_alternative<int64_t>(*n.attrs.find("axis"))
                         ? n.attrs.getInt("axis")
                         : 1;
      int64_t rank = int64_t(out.shape.size());
      if (axis < 0)
        axis += rank;
      return axis == int64_t(channel) && b.shape == std::vector<int64_t>{channels};
    }
    if (n.op != "add" || b.shape.size() > out.shape.size() || b.numel() != channels)
      return false;
    // Right-aligned, b's dim at the channel axis must be the channel count.
    size_t lead = out.shape.size() - b.shape.size();
    return channel >= lead && b.shape[channel - lead] == channels;
  }

  const sdk::JsonFunction &fn_;
  const Graph &graph_;
  std::string where_;
  std::unique_ptr<Program> program_ = std::make_unique<Program>();
  std::vector<TensorType> types_; // per slot
  std::vector<int> constSlots_;   // per constant index: its slot, or -1
};

} // namespace

InterpreterModule::InterpreterModule(std::vector<sdk::JsonFunction> functions)
    : JsonRuntime(kTypeKey, std::move(functions)) {}

InterpreterModule::~InterpreterModule() = default;

void InterpreterModule::init(std::span<const sdk::JsonFunction> functions) {
  for (const sdk::JsonFunction &fn : functions) {
    if (!sdk::isSymbolic(fn.graph)) {
      programs_.push_back(ProgramBuilder(fn, fn.graph, prefix()).build());
      continue;
    }
    // Symbolic: checked now at the symbols' examples (one consistent
    // shape); the programs are built per shape at run time.
    const Graph example = sdk::resolveGraph(fn.graph, sdk::exampleValues(fn.graph.symbols), false);
    ProgramBuilder(fn, example, prefix()).build();
    programs_.push_back(nullptr);
  }
}

std::shared_ptr<const void> InterpreterModule::prepareShape(const sdk::JsonFunction &fn,
                                                            const Graph &resolved) const {
  return std::shared_ptr<const Program>(ProgramBuilder(fn, resolved, prefix()).build());
}

void InterpreterModule::runShape(const sdk::JsonFunction & /*fn*/, const Shape &shape,
                                 std::span<const DLTensor *const> inputs,
                                 std::span<const DLTensor *const> outputs) const {
  execute(*static_cast<const Program *>(shape.prepared.get()), inputs, outputs);
}

void InterpreterModule::run(const sdk::JsonFunction &fn, std::span<const DLTensor *const> inputs,
                            std::span<const DLTensor *const> outputs) const {
  execute(*programs_[fn.index], inputs, outputs);
}

void InterpreterModule::execute(const Program &p, std::span<const DLTensor *const> inputs,
                                std::span<const DLTensor *const> outputs) {
  size_t numSlots = p.slotSize.size();
  // Everything below is local to this call: the module is shared.
  std::vector<const float *> value(p.constData);
  std::vector<std::unique_ptr<float[]>> owned(numSlots);
  std::vector<float *> direct(numSlots, nullptr);
  for (size_t i = 0; i < inputs.size(); ++i)
    value[size_t(p.inputSlots[i])] = static_cast<const float *>(sdk::tensorData(*inputs[i]));
  // A computed result that is an output of the function is written straight
  // into the caller's tensor (the first one, when listed twice).
  for (size_t k = 0; k < outputs.size(); ++k) {
    size_t s = size_t(p.outputSlots[k]);
    if (p.computed[s] && !direct[s])
      direct[s] = static_cast<float *>(sdk::tensorData(*outputs[k]));
  }
  std::vector<const float *> args;
  for (size_t si = 0; si < p.steps.size(); ++si) {
    const Step &step = p.steps[si];
    size_t out = size_t(step.output);
    float *dst = direct[out];
    if (!dst) {
      owned[out] =
          std::make_unique_for_overwrite<float[]>(size_t(std::max<int64_t>(1, p.slotSize[out])));
      dst = owned[out].get();
    }
    args.clear();
    for (int s : step.inputs)
      args.push_back(value[size_t(s)]);
    {
      sdk::ProfileScope scope(step.name.c_str(), step.nodes.c_str(), "json:portable");
      step.kernel(args, dst);
    }
    value[out] = dst;
    // Free the intermediates nobody reads any more.
    for (int s : step.inputs)
      if (p.lastUse[size_t(s)] == int(si))
        owned[size_t(s)].reset();
    if (p.lastUse[out] < 0)
      owned[out].reset();
  }
  for (size_t k = 0; k < outputs.size(); ++k) {
    void *dst = sdk::tensorData(*outputs[k]);
    const float *src = value[size_t(p.outputSlots[k])];
    size_t bytes = size_t(p.slotSize[size_t(p.outputSlots[k])]) * sizeof(float);
    if (bytes > 0 && dst != src)
      std::memcpy(dst, src, bytes);
  }
}

} // namespace tessera::json_plugin
