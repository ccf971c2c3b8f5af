//===- plugins/ccompiler/translate.cpp - A region as one C99 file ---------===//
//
// Four passes over the graph:
//   1. flatten: composite bodies are inlined (their inputs bound to the
//      node's), giving values (inputs, constants, op results) and steps;
//   2. fuse: a conv2d/dense whose only user is a per-channel bias, and/or
//      then an activation, absorbs them (the composites the checker's
//      patterns outline always have that form; a plain chain fuses too);
//   3. plan: each step's C body (ops.cpp validates it), constant dense
//      weights transposed once, constants embedded or handed over, and the
//      scratch arena (intermediates with reuse, first fit, 64-byte aligned);
//   4. print the C file.
//
//===----------------------------------------------------------------------===//
#include "translate.h"

#include "ops.h"

#include "tessera/sdk/json_graph.hpp"
#include "tessera/sdk/json_runtime.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>

namespace tessera::ccompiler {

namespace {

using sdk::Error;

struct Value {
  enum class Kind { Input, Const, Temp } kind = Kind::Temp;
  sdk::TensorType type;
  int64_t index = 0;   // Input: parameter index; Const: constant index
  int64_t weight = -1; // Const: index into Translation::weights, or -1 (embedded)
  int64_t offset = -1; // Temp: byte offset in scratch, or -1 (written to an output)
  int64_t output = -1; // written directly into output `output`
  std::vector<float> data; // Const made by codegen (a transposed weight)
  bool transposed = false;
};

struct Step {
  sdk::OpDesc desc;
  std::vector<int> ins;
  int out = -1;
  std::vector<std::string> fused; // "bias_add 'b1'", "relu 'r1'"
  Epilogue epi;
  OpCode code;
  int64_t scratchOffset = 0;
};

/// A name usable in a C identifier (at most 40 characters).
std::string cName(const std::string &s) {
  std::string out;
  for (char c : s)
    out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out.substr(0, 40);
}

/// Text safe inside a C comment.
std::string commentSafe(std::string s) {
  for (size_t p; (p = s.find("*/")) != std::string::npos;)
    s.replace(p, 2, "* /");
  return s;
}

class Translator {
public:
  Translator(const sdk::GraphView &g, size_t embedLimit) : view_(g), embedLimit_(embedLimit) {}

  Translation run() {
    Translation t;
    t.symbol = std::string(view_.symbol);
    checkSymbol(t.symbol);
    sdk::Graph g = sdk::readGraph(view_.json);
    std::vector<int> params;
    for (int64_t n : g.inputs) {
      Value v;
      v.kind = Value::Kind::Input;
      v.type = g.nodes.at(size_t(n)).outputs.at(0);
      v.index = int64_t(params.size());
      params.push_back(addValue(v));
      t.inputs.push_back(v.type);
    }
    outputs_ = flatten(g, params, "");
    for (int o : outputs_)
      t.outputs.push_back(values_[size_t(o)].type);
    fuse();
    plan(t);
    t.source = print(t);
    return t;
  }

private:
  int addValue(Value v) {
    values_.push_back(std::move(v));
    uses_.push_back(0);
    return int(values_.size() - 1);
  }

  static void checkSymbol(const std::string &s) {
    bool ok = !s.empty() && (std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_');
    for (char c : s)
      ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
    if (!ok)
      throw Error("ccompiler: the symbol '" + s + "' is not a C identifier");
  }

  //===-- 1. flatten ------------------------------------------------------===//

  std::vector<int> flatten(const sdk::Graph &g, const std::vector<int> &bound,
                           const std::string &where) {
    std::vector<std::vector<int>> slots(g.nodes.size());
    auto slotOf = [&](const sdk::NodeRef &r) {
      if (r.node < 0 || size_t(r.node) >= g.nodes.size() || size_t(r.index) >= slots[size_t(r.node)].size())
        throw Error("ccompiler: " + where + "a reference to node " + std::to_string(r.node) +
                    " output " + std::to_string(r.index) + " that does not exist");
      return slots[size_t(r.node)][size_t(r.index)];
    };
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const sdk::Node &n = g.nodes[i];
      std::string at = where + "node " + std::to_string(i) + " ('" + n.name + "')";
      switch (n.kind) {
      case sdk::Node::Kind::Input: {
        auto pos = std::find(g.inputs.begin(), g.inputs.end(), int64_t(i));
        if (pos == g.inputs.end() || size_t(pos - g.inputs.begin()) >= bound.size())
          throw Error("ccompiler: " + at + " is not a bound input");
        slots[i] = {bound[size_t(pos - g.inputs.begin())]};
        break;
      }
      case sdk::Node::Kind::Const: {
        if (n.constant < 0 || size_t(n.constant) >= view_.constants.size())
          throw Error("ccompiler: " + at + " refers to constant " + std::to_string(n.constant) +
                      ", but there are " + std::to_string(view_.constants.size()));
        auto [it, fresh] = constSlots_.try_emplace(n.constant, -1);
        if (fresh) {
          Value v;
          v.kind = Value::Kind::Const;
          v.type = sdk::tensorTypeOf(*view_.constants[size_t(n.constant)]);
          v.index = n.constant;
          it->second = addValue(v);
        }
        slots[i] = {it->second};
        break;
      }
      case sdk::Node::Kind::Op: {
        Step s;
        s.desc.op = n.op;
        s.desc.name = n.name;
        s.desc.attrs = n.attrs;
        for (const sdk::NodeRef &r : n.inputs) {
          s.ins.push_back(slotOf(r));
          s.desc.inputs.push_back(values_[size_t(s.ins.back())].type);
        }
        s.desc.outputs = n.outputs;
        if (n.outputs.size() != 1)
          throw Error("ccompiler: " + at + " (" + n.op + "): expects 1 result, got " +
                      std::to_string(n.outputs.size()));
        Value v;
        v.type = n.outputs[0];
        s.out = addValue(v);
        for (int in : s.ins)
          ++uses_[size_t(in)];
        slots[i] = {s.out};
        steps_.push_back(std::move(s));
        break;
      }
      case sdk::Node::Kind::Composite: {
        if (!n.body)
          throw Error("ccompiler: " + at + " (" + n.op + ") has no body");
        std::vector<int> ins;
        for (const sdk::NodeRef &r : n.inputs)
          ins.push_back(slotOf(r));
        slots[i] = flatten(*n.body, ins, at + " body: ");
        break;
      }
      }
    }
    std::vector<int> outs;
    for (const sdk::NodeRef &r : g.outputs)
      outs.push_back(slotOf(r));
    return outs;
  }

  //===-- 2. fuse ---------------------------------------------------------===//

  bool isOutput(int v) const { return std::count(outputs_.begin(), outputs_.end(), v) > 0; }

  /// The step that uses `v` as its first input, when it is v's only user.
  std::optional<size_t> soleUser(int v, size_t from) const {
    if (uses_[size_t(v)] != 1 || isOutput(v))
      return std::nullopt;
    for (size_t j = from; j < steps_.size(); ++j) {
      auto &ins = steps_[j].ins;
      if (std::find(ins.begin(), ins.end(), v) != ins.end())
        return ins[0] == v && !dead_[j] ? std::optional<size_t>(j) : std::nullopt;
    }
    return std::nullopt;
  }

  void fuse() {
    dead_.assign(steps_.size(), false);
    for (size_t i = 0; i < steps_.size(); ++i) {
      Step &s = steps_[i];
      if (s.desc.op != "conv2d" && s.desc.op != "dense")
        continue;
      const sdk::TensorType product = s.desc.outputs[0];
      size_t channel = s.desc.op == "conv2d" ? 1 : product.shape.size() - 1;
      if (auto j = soleUser(s.out, i + 1);
          j && isChannelBias(steps_[*j].desc, product, channel)) {
        Step &b = steps_[*j];
        s.ins.push_back(b.ins[1]);
        s.desc.inputs.push_back(values_[size_t(b.ins[1])].type);
        s.epi.bias = true;
        s.fused.push_back(b.desc.op + " '" + commentSafe(b.desc.name) + "'");
        s.out = b.out;
        dead_[*j] = true;
      }
      if (auto j = soleUser(s.out, i + 1); j) {
        Step &a = steps_[*j];
        bool isAct = false;
        try {
          isAct = a.ins.size() == 1 && a.desc.outputs.size() == 1 &&
                  a.desc.outputs[0] == product && unaryExpr(a.desc).has_value();
        } catch (const Error &) {
          isAct = false; // invalid attributes: the step reports them unfused
        }
        if (isAct) {
          s.epi.act = a.desc;
          s.fused.push_back(a.desc.op + " '" + commentSafe(a.desc.name) + "'");
          s.out = a.out;
          dead_[*j] = true;
        }
      }
    }
    std::vector<Step> live;
    for (size_t i = 0; i < steps_.size(); ++i)
      if (!dead_[i])
        live.push_back(std::move(steps_[i]));
    steps_ = std::move(live);
  }

  //===-- 3. plan ---------------------------------------------------------===//

  void plan(Translation &t) {
    // Each step's body (validates it), dense weights transposed.
    for (Step &s : steps_) {
      if (s.desc.op == "dense" && s.ins.size() >= 2 &&
          values_[size_t(s.ins[1])].kind == Value::Kind::Const && s.desc.inputs[1].shape.size() == 2) {
        s.ins[1] = transposedConstant(s.ins[1]);
        s.desc.inputs[1] = values_[size_t(s.ins[1])].type;
        s.epi.weightTransposed = true;
      }
      try {
        s.code = emitOp(s.desc, s.epi);
      } catch (const Error &e) {
        throw Error("ccompiler: node '" + s.desc.name + "' (" + s.desc.op + "): " + e.what());
      }
    }
    // Constants: embedded or handed over (those still used: a transposed
    // weight replaces its original).
    std::vector<bool> used(values_.size(), false);
    for (const Step &s : steps_)
      for (int in : s.ins)
        used[size_t(in)] = true;
    for (int o : outputs_)
      used[size_t(o)] = true;
    for (size_t id = 0; id < values_.size(); ++id)
      if (Value &v = values_[id]; v.kind == Value::Kind::Const && used[id]) {
        if (v.type.dtype != DLDataType{kDLFloat, 32, 1})
          throw Error("ccompiler: constant " + std::to_string(v.index) + " is " + v.type.str() +
                      ": only f32");
        if (v.type.bytes() > embedLimit_) {
          v.weight = int64_t(t.weights.size());
          t.weights.push_back({constName(v), v.type, constData(v)});
        } else {
          ++t.embeddedConstants;
        }
      }
    // Results that are function outputs are written in place (the first
    // output naming them); the others live in scratch.
    for (size_t k = 0; k < outputs_.size(); ++k) {
      Value &v = values_[size_t(outputs_[k])];
      if (v.kind == Value::Kind::Temp && v.output < 0)
        v.output = int64_t(k);
    }
    std::vector<size_t> lastUse(values_.size(), 0);
    for (size_t i = 0; i < steps_.size(); ++i)
      for (int in : steps_[i].ins)
        lastUse[size_t(in)] = i;
    std::vector<std::pair<int64_t, int64_t>> live; // (offset, bytes), sorted
    auto alloc = [&](int64_t bytes) {
      bytes = (bytes + 63) / 64 * 64;
      int64_t at = 0;
      for (auto &[off, size] : live) {
        if (off - at >= bytes)
          break;
        at = std::max(at, off + size);
      }
      live.emplace_back(at, bytes);
      std::sort(live.begin(), live.end());
      t.scratchBytes = std::max<uint64_t>(t.scratchBytes, uint64_t(at + bytes));
      return at;
    };
    auto release = [&](int64_t offset) {
      for (size_t k = 0; k < live.size(); ++k)
        if (live[k].first == offset) {
          live.erase(live.begin() + int64_t(k));
          return;
        }
    };
    for (size_t i = 0; i < steps_.size(); ++i) {
      Step &s = steps_[i];
      Value &o = values_[size_t(s.out)];
      if (o.output < 0)
        o.offset = alloc(int64_t(o.type.bytes()));
      if (s.code.scratchFloats > 0) {
        s.scratchOffset = alloc(int64_t(s.code.scratchFloats * sizeof(float)));
        release(s.scratchOffset);
      }
      for (int in : s.ins)
        if (values_[size_t(in)].offset >= 0 && lastUse[size_t(in)] == i)
          release(values_[size_t(in)].offset);
      if (o.offset >= 0 && uses_[size_t(s.out)] == 0) // unused result
        release(o.offset);
    }
  }

  std::string constName(const Value &v) const {
    return std::string(view_.constantNames[size_t(v.index)]);
  }

  std::vector<float> constData(const Value &v) const {
    if (!v.data.empty())
      return v.data;
    const DLTensor &t = *view_.constants[size_t(v.index)];
    if (!sdk::isCompactRowMajor(t) || (t.device.device_type != kDLCPU))
      throw Error("ccompiler: constant " + std::to_string(v.index) +
                  " is not a compact CPU tensor");
    std::vector<float> d(size_t(v.type.numel()));
    if (!d.empty())
      std::memcpy(d.data(), sdk::tensorData(t), d.size() * sizeof(float));
    return d;
  }

  /// A new constant value: the [U, K] constant `w` transposed to [K, U].
  int transposedConstant(int w) {
    Value v = values_[size_t(w)];
    int64_t U = v.type.shape[0], K = v.type.shape[1];
    std::vector<float> src = constData(v), dst(src.size());
    for (int64_t u = 0; u < U; ++u)
      for (int64_t k = 0; k < K; ++k)
        dst[size_t(k * U + u)] = src[size_t(u * K + k)];
    v.type.shape = {K, U};
    v.data = std::move(dst);
    v.transposed = true;
    int id = addValue(std::move(v));
    return id;
  }

  //===-- 4. print --------------------------------------------------------===//

  std::string print(const Translation &t);
  std::string valueExpr(int v) const;

  const sdk::GraphView &view_;
  size_t embedLimit_;
  std::vector<Value> values_;
  std::vector<int> uses_;
  std::vector<Step> steps_;
  std::vector<bool> dead_;
  std::vector<int> outputs_;
  std::map<int64_t, int> constSlots_;

};

//===----------------------------------------------------------------------===//
// Printing
//===----------------------------------------------------------------------===//

// The DLPack struct is declared in the file rather than included: the C file
// then compiles with nothing but a C compiler and its standard library (the
// machine that compiles need not have dlpack.h), and the layout is DLPack's
// ABI, unchanged since v0.1 (the caller checks everything else).
constexpr const char *kDLTensorDecl =
    R"(/* DLPack's DLTensor (dlpack.h; same layout), declared here so that this file
 * needs nothing but the C standard library. */
typedef struct { int32_t device_type; int32_t device_id; } tsc_device;
typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } tsc_dtype;
typedef struct {
  void *data;
  tsc_device device;
  int32_t ndim;
  tsc_dtype dtype;
  int64_t *shape;
  int64_t *strides;
  uint64_t byte_offset;
} tsc_dltensor;
)";

std::string Translator::valueExpr(int id) const {
  const Value &v = values_[size_t(id)];
  switch (v.kind) {
  case Value::Kind::Input: return "in" + std::to_string(v.index);
  case Value::Kind::Const:
    return v.weight >= 0 ? "weights[" + std::to_string(v.weight) + "]" : "k" + std::to_string(id);
  case Value::Kind::Temp:
    if (v.output >= 0)
      return "out" + std::to_string(v.output);
    return "(scratch + " + std::to_string(v.offset / 4) + ")";
  }
  return "";
}

std::string Translator::print(const Translation &t) {
  std::string c;
  auto typeList = [](const std::vector<sdk::TensorType> &ts, const char *prefix) {
    std::string s;
    for (size_t i = 0; i < ts.size(); ++i)
      s += std::string(i ? ", " : "") + prefix + std::to_string(i) + " " + ts[i].str();
    return s.empty() ? std::string("none") : s;
  };
  std::map<std::string, int> opCounts;
  for (const Step &s : steps_) {
    ++opCounts[s.desc.op];
    for (const std::string &f : s.fused)
      ++opCounts[f.substr(0, f.find(' '))];
  }
  std::string ops;
  for (const auto &[op, n] : opCounts)
    ops += (ops.empty() ? "" : ", ") + op + (n > 1 ? " x" + std::to_string(n) : "");
  c += "/*===- " + t.symbol + ".c - generated by the Tessera ccompiler plugin -----------===\n";
  c += " *\n * Region '" + t.symbol + "': " + std::to_string(steps_.size()) + " functions (" +
       commentSafe(ops) + ")\n";
  c += " * Inputs:  " + typeList(t.inputs, "in") + "\n";
  c += " * Outputs: " + typeList(t.outputs, "out") + "\n";
  c += " * Constants: " + std::to_string(t.embeddedConstants) + " embedded, " +
       std::to_string(t.weights.size()) + " handed over at run time (larger than " +
       std::to_string(embedLimit_) + " bytes)\n";
  c += " * Scratch: " + std::to_string(t.scratchBytes) + " bytes per call\n";
  c += " * C99 and the C standard library only; shapes are compile-time constants.\n";
  c += " *===----------------------------------------------------------------------===*/\n";
  c += "#include <math.h>\n#include <stddef.h>\n#include <stdint.h>\n#include <string.h>\n\n";
  c += kDLTensorDecl;
  c += "\n";
  c += cPrelude();

  // Embedded constants.
  for (size_t id = 0; id < values_.size(); ++id) {
    const Value &v = values_[id];
    if (v.kind != Value::Kind::Const || v.weight >= 0)
      continue;
    bool used = false;
    for (const Step &s : steps_)
      used = used || std::count(s.ins.begin(), s.ins.end(), int(id)) > 0;
    used = used || std::count(outputs_.begin(), outputs_.end(), int(id)) > 0;
    if (!used)
      continue;
    std::vector<float> d = constData(v);
    c += "\n/* constant " + std::to_string(v.index) + " '" + commentSafe(constName(v)) + "' " +
         v.type.str() + (v.transposed ? " (transposed for the product)" : "") + " */\n";
    c += "static const float k" + std::to_string(id) + "[" + std::to_string(std::max<size_t>(d.size(), 1)) +
         "] = {";
    for (size_t i = 0; i < d.size(); ++i)
      c += std::string(i % 6 == 0 ? "\n  " : " ") + floatLiteral(d[i]) + (i + 1 < d.size() ? "," : "");
    c += d.empty() ? "0.0f};\n" : "\n};\n";
  }

  // One function per step.
  std::string calls;
  for (size_t i = 0; i < steps_.size(); ++i) {
    const Step &s = steps_[i];
    std::string fn = "op" + std::to_string(i) + "_" + cName(s.desc.name.empty() ? s.desc.op : s.desc.name);
    c += "\n/* node '" + commentSafe(s.desc.name) + "' (" + s.desc.op + ")" +
         (s.code.attrs.empty() ? "" : ": " + s.code.attrs) + "\n *  ";
    for (size_t k = 0; k < s.desc.inputs.size(); ++k)
      c += (k ? ", " : "") + std::string("in") + std::to_string(k) + " " + s.desc.inputs[k].str();
    c += " -> out " + s.desc.outputs[0].str();
    if (!s.fused.empty()) {
      c += "\n *   fused into the output loop: ";
      for (size_t k = 0; k < s.fused.size(); ++k)
        c += (k ? ", " : "") + s.fused[k];
    }
    c += " */\nstatic void " + fn + "(";
    std::string args;
    for (size_t k = 0; k < s.ins.size(); ++k) {
      c += "const float *restrict in" + std::to_string(k) + ", ";
      args += valueExpr(s.ins[k]) + ", ";
    }
    bool scratch = s.code.scratchFloats > 0;
    c += std::string("float *restrict out") + (scratch ? ", float *restrict scratch" : "") +
         ") {\n" + s.code.body + "}\n";
    args += valueExpr(s.out);
    if (scratch)
      args += ", scratch + " + std::to_string(s.scratchOffset / 4);
    calls += "  " + fn + "(" + args + ");\n";
  }

  // The entry points.
  size_t ni = t.inputs.size();
  c += "\n/* The entry point: args = inputs then outputs (checked by the caller: CPU,\n"
       " * f32, compact, these shapes), weights = the handed-over constants, scratch =\n"
       " * " + t.symbol + "_scratch_bytes() bytes, 64-byte aligned, private to the call. */\n";
  c += "int32_t " + t.symbol +
       "(const tsc_dltensor *const *args, const float *const *weights, float *scratch) {\n";
  for (size_t k = 0; k < ni; ++k)
    c += "  const float *const in" + std::to_string(k) + " = (const float *)((const char *)args[" +
         std::to_string(k) + "]->data + args[" + std::to_string(k) + "]->byte_offset); /* " +
         t.inputs[k].str() + " */\n";
  for (size_t k = 0; k < t.outputs.size(); ++k)
    c += "  float *const out" + std::to_string(k) + " = (float *)((char *)args[" +
         std::to_string(ni + k) + "]->data + args[" + std::to_string(ni + k) +
         "]->byte_offset); /* " + t.outputs[k].str() + " */\n";
  c += "  (void)weights;\n  (void)scratch;\n" + calls;
  for (size_t k = 0; k < outputs_.size(); ++k) {
    const Value &v = values_[size_t(outputs_[k])];
    if (v.kind == Value::Kind::Temp && v.output == int64_t(k))
      continue;
    c += "  memcpy(out" + std::to_string(k) + ", " + valueExpr(outputs_[k]) + ", " +
         std::to_string(v.type.bytes()) + "); /* output " + std::to_string(k) +
         " repeats a value */\n";
  }
  c += "  return 0;\n}\n\n";
  c += "uint64_t " + t.symbol + "_scratch_bytes(void) { return " + std::to_string(t.scratchBytes) +
       "u; }\n";
  c += "uint64_t " + t.symbol + "_num_weights(void) { return " + std::to_string(t.weights.size()) +
       "u; }\n";
  return c;
}

} // namespace

Translation translate(const sdk::GraphView &graph, size_t embedLimitBytes) {
  return Translator(graph, embedLimitBytes).run();
}

} // namespace tessera::ccompiler
