//===- partition/plugin_kit.cpp - The vendor conformance kit --------------===//
//
// Three parts: the sample catalogue (single-op cases per core op), pattern
// instantiation (graphs a pattern matches, outlined as composites), and the
// runner that pushes each case through a loaded plugin and compares with the
// reference interpreter. See plugin_kit.h.
//
//===----------------------------------------------------------------------===//
#include "partition/plugin_kit.h"

#include "interp/interpreter.h"
#include "ir/op.h"
#include "partition/plugin_bridge.h"
#include "plugin/probe.h"
#include "plugin/registry.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <ostream>
#include <set>

namespace tessera::partition::kit {

using ir::Attrs;
using ir::DType;
using ir::Shape;
using ir::Type;
using Ints = std::vector<int64_t>;

namespace {

//===----------------------------------------------------------------------===//
// Small helpers
//===----------------------------------------------------------------------===//

Type f32(Shape s) {
  return Type::tensor(DType::F32, std::move(s));
}
Type withDType(const Type &t, DType d) {
  return Type::tensor(d, t.shape());
}
ArgSpec in(Type t) {
  return ArgSpec{std::move(t), false, Domain::Any};
}
ArgSpec cst(Type t) {
  return ArgSpec{std::move(t), true, Domain::Any};
}
ir::AttrValue I(int64_t v) {
  return v;
}

/// "f32[1,3,8,8]"
std::string compactType(const Type &t) {
  std::string s = t.str();
  s.erase(std::remove(s.begin(), s.end(), ' '), s.end());
  return s;
}

/// FNV-1a, for per-case seeds that do not depend on which cases run.
uint64_t hashString(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (char c : s) {
    h ^= uint8_t(c);
    h *= 1099511628211ull;
  }
  return h;
}

/// Does op(args) with these attributes type-check?
bool typeChecks(const std::string &op, const Attrs &attrs, const std::vector<ArgSpec> &args) {
  std::vector<ir::Expr> exprs;
  for (size_t i = 0; i < args.size(); ++i)
    exprs.push_back(ir::makeVar("a" + std::to_string(i), args[i].type));
  return ir::makeCall(op, std::move(exprs), attrs).ok();
}

//===----------------------------------------------------------------------===//
// The sample catalogue
//===----------------------------------------------------------------------===//

/// Collects the samples of one op; fills each argument's domain.
class Samples {
public:
  explicit Samples(std::string op) : op_(std::move(op)) {}

  void add(Attrs attrs, std::vector<ArgSpec> args) {
    for (size_t i = 0; i < args.size(); ++i)
      args[i].domain = argDomain(op_, i);
    out_.push_back(OpSample{op_, std::move(attrs), std::move(args)});
  }
  /// The same sample again with every argument in `dtype`.
  void addAs(DType dtype, Attrs attrs, std::vector<ArgSpec> args) {
    for (ArgSpec &a : args)
      a.type = withDType(a.type, dtype);
    add(std::move(attrs), std::move(args));
  }
  /// Adds only when it type-checks (for the generic rules).
  void addIfValid(Attrs attrs, std::vector<ArgSpec> args) {
    if (typeChecks(op_, attrs, args))
      add(std::move(attrs), std::move(args));
  }
  const std::string &op() const { return op_; }
  std::vector<OpSample> take() { return std::move(out_); }

private:
  std::string op_;
  std::vector<OpSample> out_;
};

void convSamples(Samples &s) {
  auto conv = [&](Shape x, Shape w, Attrs a) { s.add(std::move(a), {in(f32(x)), cst(f32(w))}); };
  conv({1, 3, 8, 8}, {8, 3, 3, 3}, {});
  conv({1, 3, 8, 8}, {8, 3, 3, 3}, {{"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}});
  conv({2, 3, 9, 9}, {4, 3, 3, 3}, {{"pads", Ints{0, 1, 1, 2}}});
  conv({1, 2, 10, 10}, {4, 2, 3, 3}, {{"dilation", Ints{2, 2}}, {"pads", Ints{2, 2, 2, 2}}});
  conv({1, 4, 8, 8}, {4, 1, 3, 3}, {{"groups", I(4)}, {"pads", Ints{1, 1, 1, 1}}});
  conv({1, 3, 7, 7}, {6, 1, 3, 3},
       {{"groups", I(3)}, {"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}});
  conv({2, 4, 7, 7}, {6, 2, 3, 3}, {{"groups", I(2)}});
  conv({1, 4, 9, 9}, {4, 2, 3, 3},
       {{"dilation", Ints{2, 2}}, {"groups", I(2)}, {"pads", Ints{1, 1, 1, 1}}});
  conv({2, 8, 5, 5}, {4, 8, 1, 1}, {});
  conv({1, 2, 9, 6}, {3, 2, 3, 2}, {{"pads", Ints{1, 0, 1, 0}}, {"strides", Ints{2, 1}}});
  // Weights as an input rather than a constant.
  s.add({}, {in(f32({1, 3, 5, 5})), in(f32({2, 3, 3, 3}))});
  s.addAs(DType::F16, {}, {in(f32({1, 3, 8, 8})), cst(f32({8, 3, 3, 3}))});
}

// conv2d_transpose: weight [C, O/groups, KH, KW] (ONNX ConvTranspose).
void convTransposeSamples(Samples &s) {
  auto deconv = [&](Shape x, Shape w, Attrs a) { s.add(std::move(a), {in(f32(x)), cst(f32(w))}); };
  deconv({1, 4, 5, 5}, {4, 3, 3, 3}, {});
  deconv({1, 2, 4, 4}, {2, 3, 3, 3},
         {{"output_padding", Ints{1, 1}}, {"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}});
  deconv({2, 4, 4, 4}, {4, 2, 3, 3}, {{"groups", I(2)}, {"pads", Ints{1, 1, 1, 1}}});
  deconv({1, 2, 5, 5}, {2, 2, 3, 3}, {{"dilation", Ints{2, 2}}});
  deconv({1, 3, 4, 5}, {3, 2, 2, 3}, {{"pads", Ints{0, 1, 1, 0}}, {"strides", Ints{2, 1}}});
  s.addAs(DType::F16, {}, {in(f32({1, 4, 5, 5})), cst(f32({4, 3, 3, 3}))});
}

// resize2d: each mode and coordinate transform, up and down.
void resizeSamples(Samples &s) {
  using S = std::string;
  auto resize = [&](Shape x, Attrs a) { s.add(std::move(a), {in(f32(x))}); };
  resize({1, 2, 4, 4}, {{"mode", S("linear")}, {"size", Ints{8, 8}}});
  resize({1, 2, 6, 5}, {{"mode", S("linear")}, {"size", Ints{3, 7}}});
  resize({1, 3, 4, 4}, {{"size", Ints{8, 8}}});
  resize({1, 2, 4, 6}, {{"nearest_mode", S("round_prefer_ceil")}, {"size", Ints{8, 3}}});
  resize({2, 2, 6, 6}, {{"nearest_mode", S("round_prefer_ceil")}, {"size", Ints{3, 4}}});
  resize({1, 2, 4, 4}, {{"coordinate_transformation_mode", S("align_corners")},
                        {"mode", S("linear")},
                        {"size", Ints{7, 7}}});
  resize({1, 1, 4, 4}, {{"mode", S("cubic")}, {"size", Ints{8, 8}}});
  s.addAs(DType::F16, {{"mode", S("linear")}, {"size", Ints{8, 8}}}, {in(f32({1, 2, 4, 4}))});
}

void poolSamples(Samples &s, bool avg) {
  auto pool = [&](Shape x, Attrs a) { s.add(std::move(a), {in(f32(x))}); };
  pool({1, 3, 8, 8}, {{"pool_size", Ints{2, 2}}, {"strides", Ints{2, 2}}});
  pool({2, 4, 7, 7}, {{"pads", Ints{1, 1, 1, 1}}, {"pool_size", Ints{3, 3}}});
  pool({1, 3, 8, 8}, {{"ceil_mode", true}, {"pool_size", Ints{3, 3}}, {"strides", Ints{2, 2}}});
  pool({1, 2, 7, 7}, {{"dilation", Ints{2, 2}}, {"pool_size", Ints{2, 2}}});
  pool({1, 3, 7, 6},
       {{"pads", Ints{1, 0, 0, 1}}, {"pool_size", Ints{3, 2}}, {"strides", Ints{2, 1}}});
  if (avg) {
    pool({1, 2, 6, 6}, {{"count_include_pad", true},
                        {"pads", Ints{1, 1, 1, 1}},
                        {"pool_size", Ints{3, 3}},
                        {"strides", Ints{2, 2}}});
    pool({1, 2, 7, 7}, {{"ceil_mode", true},
                        {"count_include_pad", true},
                        {"pads", Ints{1, 1, 1, 1}},
                        {"pool_size", Ints{3, 3}},
                        {"strides", Ints{2, 2}}});
    pool({1, 2, 7, 7}, {{"ceil_mode", true},
                        {"pads", Ints{1, 1, 1, 1}},
                        {"pool_size", Ints{3, 3}},
                        {"strides", Ints{2, 2}}});
  }
  s.addAs(DType::F16, {{"pool_size", Ints{2, 2}}, {"strides", Ints{2, 2}}},
          {in(f32({1, 3, 8, 8}))});
}

void matmulSamples(Samples &s) {
  s.add({}, {in(f32({3, 4})), in(f32({4, 5}))});
  s.add({}, {in(f32({2, 3, 4})), cst(f32({4, 5}))});
  s.add({}, {in(f32({2, 1, 3, 4})), in(f32({3, 4, 2}))});
  s.add({}, {in(f32({4})), in(f32({4, 3}))});
  s.add({}, {in(f32({3, 4})), in(f32({4}))});
  s.addAs(DType::F16, {}, {in(f32({3, 4})), in(f32({4, 5}))});
}

void batchMatmulSamples(Samples &s) {
  s.add({}, {in(f32({2, 3, 4})), in(f32({2, 4, 5}))});
  s.add({{"transpose_a", true}}, {in(f32({2, 4, 3})), in(f32({2, 4, 5}))});
  s.add({{"transpose_b", true}}, {in(f32({2, 3, 4})), in(f32({2, 5, 4}))});
  s.add({{"transpose_a", true}, {"transpose_b", true}}, {in(f32({3, 4, 2})), cst(f32({3, 5, 4}))});
  s.addAs(DType::F16, {}, {in(f32({2, 3, 4})), in(f32({2, 4, 5}))});
}

void denseSamples(Samples &s) {
  s.add({}, {in(f32({2, 8})), cst(f32({6, 8}))});
  s.add({}, {in(f32({1, 16})), cst(f32({4, 16}))});
  s.add({}, {in(f32({2, 3, 8})), cst(f32({5, 8}))});
  s.add({}, {in(f32({3, 4})), in(f32({2, 4}))});
  s.addAs(DType::F16, {}, {in(f32({2, 8})), cst(f32({6, 8}))});
}

void biasAddSamples(Samples &s) {
  s.add({}, {in(f32({2, 3, 4, 4})), cst(f32({3}))});
  s.add({}, {in(f32({4, 5})), cst(f32({5}))});
  s.add({{"axis", I(-1)}}, {in(f32({2, 3, 6})), cst(f32({6}))});
  s.add({{"axis", I(0)}}, {in(f32({3, 4})), in(f32({3}))});
  s.addAs(DType::F16, {}, {in(f32({2, 3, 4, 4})), cst(f32({3}))});
}

void batchNormSamples(Samples &s) {
  auto bn = [&](Shape x, int64_t c, Attrs a) {
    s.add(std::move(a), {in(f32(x)), cst(f32({c})), cst(f32({c})), cst(f32({c})), cst(f32({c}))});
  };
  bn({2, 3, 4, 4}, 3, {});
  bn({1, 4, 3, 5}, 4, {{"epsilon", 1e-3}});
  bn({4, 5}, 5, {});
  s.addAs(DType::F16, {},
          {in(f32({2, 3, 4, 4})), cst(f32({3})), cst(f32({3})), cst(f32({3})), cst(f32({3}))});
}

void softmaxSamples(Samples &s) {
  s.add({}, {in(f32({2, 10}))});
  s.add({{"axis", I(1)}}, {in(f32({2, 3, 4, 5}))});
  s.add({{"axis", I(0)}}, {in(f32({4, 3}))});
  s.add({{"axis", I(-2)}}, {in(f32({2, 3, 4}))});
  s.addAs(DType::F16, {}, {in(f32({2, 10}))});
}

void layoutSamples(Samples &s) {
  const std::string &op = s.op();
  auto one = [&](Shape x, Attrs a) { s.add(std::move(a), {in(f32(x))}); };
  if (op == "reshape") {
    one({2, 3, 4}, {{"newshape", Ints{6, 4}}});
    one({2, 3, 4}, {{"newshape", Ints{0, -1}}});
    one({1, 3, 8, 8}, {{"newshape", Ints{1, -1}}});
    one({24}, {{"newshape", Ints{2, 3, 4}}});
    s.addAs(DType::I32, {{"newshape", Ints{6, 4}}}, {in(f32({2, 3, 4}))});
  } else if (op == "flatten") {
    one({2, 3, 4, 5}, {});
    one({2, 3, 4, 5}, {{"axis", I(0)}});
    one({2, 3, 4, 5}, {{"axis", I(3)}});
    one({2, 3, 4}, {{"axis", I(-1)}});
    s.addAs(DType::I32, {}, {in(f32({2, 3, 4, 5}))});
  } else if (op == "transpose") {
    one({1, 3, 4, 5}, {{"perm", Ints{0, 2, 3, 1}}});
    one({3, 4}, {});
    one({2, 3, 4}, {{"perm", Ints{2, 0, 1}}});
    s.addAs(DType::I32, {{"perm", Ints{1, 0}}}, {in(f32({3, 4}))});
  } else if (op == "squeeze") {
    one({1, 3, 1, 4}, {});
    one({1, 3, 1, 4}, {{"axes", Ints{0}}});
    one({2, 1, 4}, {{"axes", Ints{-2}}});
    s.addAs(DType::I32, {}, {in(f32({1, 3, 1, 4}))});
  } else if (op == "unsqueeze") {
    one({3, 4}, {{"axes", Ints{0}}});
    one({3, 4}, {{"axes", Ints{1, 3}}});
    one({3, 4}, {{"axes", Ints{-1}}});
    s.addAs(DType::I32, {{"axes", Ints{0}}}, {in(f32({3, 4}))});
  } else if (op == "concat") {
    s.add({{"axis", I(1)}}, {in(f32({1, 2, 4, 4})), in(f32({1, 3, 4, 4}))});
    s.add({}, {in(f32({2, 3})), in(f32({2, 3})), in(f32({2, 3}))});
    s.add({{"axis", I(-1)}}, {in(f32({2, 3})), in(f32({2, 5}))});
    s.add({}, {in(f32({2, 3})), cst(f32({1, 3}))});
    s.add({}, {in(f32({4}))});
    s.addAs(DType::I32, {{"axis", I(1)}}, {in(f32({2, 3})), in(f32({2, 2}))});
  } else if (op == "split") {
    one({4, 6}, {{"axis", I(1)}, {"sizes", Ints{2, 4}}});
    one({6, 2}, {{"sizes", Ints{3, 1, 2}}});
  } else if (op == "slice") {
    one({4, 6}, {{"ends", Ints{3, 6}}, {"starts", Ints{1, 0}}});
    one({4, 6}, {{"axes", Ints{1}}, {"ends", Ints{-1}}, {"starts", Ints{1}}, {"steps", Ints{2}}});
  } else if (op == "pad") {
    one({2, 3}, {{"pads", Ints{1, 0, 1, 2}}});
    one({3, 4}, {{"mode", std::string("reflect")}, {"pads", Ints{1, 2, 1, 2}}});
    one({3, 4}, {{"mode", std::string("edge")}, {"pads", Ints{0, 1, 2, 0}}});
  } else if (op == "cast") {
    one({2, 3}, {{"dtype", DType::F16}});
    one({2, 3}, {{"dtype", DType::I32}});
  }
}

void reduceSamples(Samples &s) {
  auto one = [&](Shape x, Attrs a) { s.add(std::move(a), {in(f32(x))}); };
  if (s.op() == "argmax" || s.op() == "argmin") {
    one({3, 4}, {{"axis", I(1)}});
    one({3, 4}, {{"axis", I(0)}, {"keepdims", false}});
    one({2, 3, 4}, {{"axis", I(-1)}, {"select_last_index", true}});
    return;
  }
  one({2, 3, 4}, {{"axes", Ints{1}}});
  one({2, 3, 4}, {{"keepdims", false}});
  one({2, 3, 4}, {{"axes", Ints{0, 2}}, {"keepdims", false}});
  s.addAs(DType::F16, {{"axes", Ints{-1}}}, {in(f32({2, 3, 4}))});
}

void layerNormSamples(Samples &s) {
  s.add({}, {in(f32({2, 3, 4})), cst(f32({4})), cst(f32({4}))});
  s.add({{"axis", I(1)}, {"epsilon", 1e-3}},
        {in(f32({2, 3, 4})), cst(f32({3, 4})), cst(f32({3, 4}))});
  s.add({}, {in(f32({3, 5})), cst(f32({5}))});
}

/// Any other elementwise op of one argument, with extra attribute variants
/// for the ops that have attributes.
void unarySamples(Samples &s) {
  for (Shape shape : {Shape{1, 4, 6, 6}, Shape{7}, Shape{2, 3, 5}})
    s.addIfValid({}, {in(f32(shape))});
  static const std::map<std::string, std::vector<Attrs>, std::less<>> extra = {
      {"leaky_relu", {{{"alpha", 0.2}}}},
      {"clip", {{{"max", 0.5}, {"min", -0.5}}, {{"min", 0.0}}, {{"max", 0.25}}}},
      {"hard_sigmoid", {{{"alpha", 0.3}, {"beta", 0.4}}}},
      {"gelu", {{{"approximate", std::string("tanh")}}}},
  };
  if (auto it = extra.find(s.op()); it != extra.end())
    for (const Attrs &a : it->second)
      s.addIfValid(a, {in(f32({2, 3, 5}))});
  s.addIfValid({}, {in(Type::tensor(DType::F16, {2, 3, 5}))});
  if (s.op() == "abs" || s.op() == "neg" || s.op() == "relu" || s.op() == "sign")
    s.addIfValid({}, {in(Type::tensor(DType::I32, {2, 3, 5}))});
}

/// Any other broadcasting op of two arguments: same shapes, the usual
/// broadcasts, a per-channel constant, and other dtypes.
void binarySamples(Samples &s) {
  const std::vector<std::pair<Type, ArgSpec>> pairs = {
      {f32({2, 3, 4}), in(f32({2, 3, 4}))},
      {f32({2, 3, 4}), in(f32({4}))},
      {f32({1, 4, 6, 6}), cst(f32({4, 1, 1}))},
      {f32({3, 1}), in(f32({1, 4}))},
      {f32({}), in(f32({2, 3}))},
      {f32({2, 3}), cst(f32({}))},
  };
  for (const auto &[a, b] : pairs)
    s.addIfValid({}, {in(a), b});
  if (s.op() == "mod")
    s.addIfValid({{"fmod", I(1)}}, {in(f32({2, 3})), in(f32({2, 3}))});
  s.addIfValid({}, {in(Type::tensor(DType::F16, {2, 3})), in(Type::tensor(DType::F16, {2, 3}))});
  s.addIfValid({}, {in(Type::tensor(DType::I32, {2, 3})), in(Type::tensor(DType::I32, {2, 3}))});
}

using SampleFn = std::function<void(Samples &)>;

const std::map<std::string, SampleFn, std::less<>> &handWritten() {
  static const std::map<std::string, SampleFn, std::less<>> table = [] {
    std::map<std::string, SampleFn, std::less<>> t;
    t["conv2d"] = convSamples;
    t["conv2d_transpose"] = convTransposeSamples;
    t["resize2d"] = resizeSamples;
    t["max_pool2d"] = [](Samples &s) { poolSamples(s, false); };
    t["avg_pool2d"] = [](Samples &s) { poolSamples(s, true); };
    for (const char *op : {"global_avg_pool2d", "global_max_pool2d"})
      t[op] = [](Samples &s) {
        s.add({}, {in(f32({1, 3, 8, 8}))});
        s.add({}, {in(f32({2, 5, 3, 4}))});
        s.addAs(DType::F16, {}, {in(f32({1, 3, 8, 8}))});
      };
    t["matmul"] = matmulSamples;
    t["batch_matmul"] = batchMatmulSamples;
    t["dense"] = denseSamples;
    t["bias_add"] = biasAddSamples;
    t["batch_norm"] = batchNormSamples;
    t["layer_norm"] = layerNormSamples;
    t["softmax"] = softmaxSamples;
    t["log_softmax"] = softmaxSamples;
    for (const char *op : {"reshape", "flatten", "transpose", "squeeze", "unsqueeze", "concat",
                           "split", "slice", "pad", "cast"})
      t[op] = layoutSamples;
    for (const char *op : {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod",
                           "argmax", "argmin"})
      t[op] = reduceSamples;
    return t;
  }();
  return table;
}

} // namespace

Domain argDomain(std::string_view op, size_t index) {
  if (index == 0 && (op == "log" || op == "sqrt" || op == "power"))
    return Domain::Positive;
  if (index == 0 && op == "reciprocal")
    return Domain::NonZero;
  if (index == 0 && (op == "asin" || op == "acos" || op == "atanh"))
    return Domain::Unit;
  if (index == 0 && op == "acosh")
    return Domain::AboveOne;
  if (index == 1 && (op == "divide" || op == "mod"))
    return Domain::NonZero;
  if (index == 4 && op == "batch_norm") // the variance
    return Domain::Positive;
  return Domain::Any;
}

std::string OpSample::label() const {
  std::string s = op;
  for (const auto &[name, value] : attrs) {
    std::string v = ir::attrValueStr(value);
    if (std::holds_alternative<Ints>(value) || std::holds_alternative<std::vector<double>>(value))
      v.erase(std::remove(v.begin(), v.end(), ' '), v.end());
    s += " " + name + "=" + v;
  }
  for (const ArgSpec &a : args)
    s += (a.constant ? " const " : " ") + compactType(a.type);
  return s;
}

std::vector<OpSample> samplesFor(std::string_view op) {
  const ir::Op *def = ir::OpRegistry::global().find(op);
  if (!def)
    return {};
  Samples s{std::string(op)};
  if (auto it = handWritten().find(op); it != handWritten().end())
    it->second(s);
  else if (def->minArgs == 1 && def->maxArgs == 1 && def->pattern == ir::OpPattern::Elementwise)
    unarySamples(s);
  else if (def->minArgs == 2 && def->maxArgs == 2 && def->pattern == ir::OpPattern::Broadcast)
    binarySamples(s);
  return s.take();
}

std::vector<std::string> catalogueOps() {
  std::vector<std::string> out;
  for (const ir::Op *op : ir::OpRegistry::global().all())
    if (!samplesFor(op->name).empty())
      out.push_back(op->name);
  return out;
}

//===----------------------------------------------------------------------===//
// Random data and comparison
//===----------------------------------------------------------------------===//

ir::Tensor randomTensor(const Type &type, Domain domain, std::mt19937_64 &rng) {
  ir::Tensor t(type.dtype(), type.shape());
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::uniform_int_distribution<int64_t> small(1, 5);
  for (int64_t i = 0; i < t.numel(); ++i) {
    bool negative = unit(rng) < 0.5;
    if (ir::isBool(t.dtype())) {
      t.setInt(i, negative ? 1 : 0);
    } else if (ir::isFloat(t.dtype())) {
      double u = unit(rng), v = 0;
      switch (domain) {
      case Domain::Any: v = 2 * u - 1; break;
      case Domain::Positive: v = 0.5 + 1.5 * u; break;
      case Domain::NonZero: v = (negative ? -1 : 1) * (0.5 + 1.5 * u); break;
      case Domain::Unit: v = 1.8 * u - 0.9; break;
      case Domain::AboveOne: v = 1.1 + 1.9 * u; break;
      }
      t.setDouble(i, v);
    } else {
      int64_t v = small(rng);
      bool isSigned = ir::isSignedInteger(t.dtype());
      switch (domain) {
      case Domain::Any: v = isSigned ? v - 3 : v - 1; break; // [-2, 2] or [0, 4]
      case Domain::NonZero: v = isSigned && negative ? -v : v; break;
      default: break;
      }
      t.setInt(i, v);
    }
  }
  return t;
}

namespace {

std::pair<double, double> tolerance(DType d) { // (rtol, atol)
  if (d == DType::F32 || d == DType::F64)
    return {1e-4, 1e-5};
  if (d == DType::F16 || d == DType::BF16)
    return {1e-2, 1e-3};
  return {0, 0};
}

std::string indexStr(int64_t flat, const Shape &shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  return ir::shapeStr(idx);
}

/// A tensor the plugin must overwrite: NaN for floats, 0x5a bytes otherwise.
ir::Tensor outputBuffer(const Type &type) {
  ir::Tensor t(type.dtype(), type.shape());
  if (ir::isFloat(t.dtype()))
    for (int64_t i = 0; i < t.numel(); ++i)
      t.setDouble(i, std::numeric_limits<double>::quiet_NaN());
  else if (t.nbytes())
    std::memset(t.bytes(), 0x5a, t.nbytes());
  return t;
}

} // namespace

std::string compareTensors(const ir::Tensor &got, const ir::Tensor &want) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape())
    return fmt::format("got {}, want {}", got.type().str(), want.type().str());
  auto [rtol, atol] = tolerance(want.dtype());
  bool isFloat = ir::isFloat(want.dtype());
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < want.numel(); ++i) {
    bool ok;
    if (isFloat) {
      double g = got.getDouble(i), w = want.getDouble(i);
      if (std::isnan(w) || std::isnan(g))
        ok = std::isnan(w) && std::isnan(g);
      else if (std::isinf(w) || std::isinf(g))
        ok = g == w;
      else
        ok = std::abs(g - w) <= atol + rtol * std::abs(w);
    } else {
      ok = got.getInt(i) == want.getInt(i);
    }
    if (!ok && bad++ == 0)
      first = i;
  }
  if (bad == 0)
    return {};
  std::string g =
      isFloat ? fmt::format("{:.7g}", got.getDouble(first)) : std::to_string(got.getInt(first));
  std::string w =
      isFloat ? fmt::format("{:.7g}", want.getDouble(first)) : std::to_string(want.getInt(first));
  return fmt::format("{} of {} elements differ, first at {}: got {}, want {}", bad, want.numel(),
                     indexStr(first, want.shape()), g, w);
}

//===----------------------------------------------------------------------===//
// Cases
//===----------------------------------------------------------------------===//

Expected<KitCase> buildOpCase(const OpSample &sample, uint64_t seed) {
  KitCase kc;
  kc.label = sample.label();
  std::mt19937_64 rng(seed ^ hashString(kc.label));
  std::vector<ir::Var> params;
  std::vector<ir::Expr> args;
  for (size_t i = 0; i < sample.args.size(); ++i) {
    const ArgSpec &a = sample.args[i];
    if (a.constant) {
      args.push_back(ir::makeConstant(randomTensor(a.type, a.domain, rng), fmt::format("w{}", i)));
    } else {
      ir::Var v = ir::makeVar(fmt::format("x{}", i), a.type);
      params.push_back(v);
      kc.inputDomains.push_back(a.domain);
      args.push_back(v);
    }
  }
  auto call = ir::makeCall(sample.op, std::move(args), sample.attrs, sample.op);
  if (!call.ok())
    return std::move(call).error().addContext("sample '" + kc.label + "'");
  kc.ops = {*call};
  kc.module.set("main", ir::makeFunction(std::move(params), *call));
  return kc;
}

namespace {

//===----------------------------------------------------------------------===//
// Pattern instantiation
//===----------------------------------------------------------------------===//

/// A pattern with every choice made: one op per op term, optional ops
/// present or dropped, one alternative per alternation.
struct Concrete {
  PatternNode::Kind kind = PatternNode::Kind::Any; // Any, Const or Op
  const ir::Op *op = nullptr;
  const PatternNode *src = nullptr;
  std::vector<Concrete> args;

  std::string str() const {
    if (kind == PatternNode::Kind::Any)
      return "*";
    if (kind == PatternNode::Kind::Const)
      return "const";
    std::string s = op->name + "(";
    for (size_t i = 0; i < args.size(); ++i)
      s += (i ? ", " : "") + args[i].str();
    return s + ")";
  }
};

/// The op terms of a concrete pattern.
int opCount(const Concrete &c) {
  int n = c.kind == PatternNode::Kind::Op;
  for (const Concrete &a : c.args)
    n += opCount(a);
  return n;
}

std::vector<Concrete> variants(const PatternNode &p) {
  std::vector<Concrete> out;
  switch (p.kind) {
  case PatternNode::Kind::Any:
  case PatternNode::Kind::Const: out.push_back(Concrete{p.kind, nullptr, &p, {}}); return out;
  case PatternNode::Kind::Alt:
    for (const PatternNode &alt : p.args)
      for (Concrete &c : variants(alt))
        if (out.size() < kMaxPatternVariants)
          out.push_back(std::move(c));
    return out;
  case PatternNode::Kind::Op: break;
  }
  std::vector<std::vector<Concrete>> argVariants;
  for (const PatternNode &a : p.args)
    argVariants.push_back(variants(a));
  for (const ir::Op *op : p.ops) {
    // The cartesian product of the arguments' variants, as an odometer.
    std::vector<size_t> pick(p.args.size(), 0);
    while (out.size() < kMaxPatternVariants) {
      Concrete c{PatternNode::Kind::Op, op, &p, {}};
      for (size_t i = 0; i < pick.size(); ++i)
        c.args.push_back(argVariants[i][pick[i]]);
      out.push_back(std::move(c));
      size_t i = 0;
      for (; i < pick.size(); ++i) {
        if (++pick[i] < argVariants[i].size())
          break;
        pick[i] = 0;
      }
      if (i == pick.size())
        break;
    }
  }
  if (p.optional)
    for (Concrete &c : argVariants[0])
      if (out.size() < kMaxPatternVariants)
        out.push_back(std::move(c));
  return out;
}

ir::AttrValue convertTo(const ir::AttrValue &v, ir::AttrKind kind) {
  switch (kind) {
  case ir::AttrKind::Float:
    if (const auto *i = std::get_if<int64_t>(&v))
      return double(*i);
    break;
  case ir::AttrKind::DType:
    if (const auto *s = std::get_if<std::string>(&v))
      if (auto d = ir::parseDType(*s))
        return *d;
    break;
  case ir::AttrKind::Floats:
    if (const auto *i = std::get_if<Ints>(&v))
      return std::vector<double>(i->begin(), i->end());
    break;
  default: break;
  }
  return v;
}

/// A value other than `v` (for '!=' predicates that the default violates).
ir::AttrValue perturb(const ir::AttrValue &v, const std::string &attr, const ir::Op &op,
                      const Type &t0) {
  if (attr == "groups" && op.name == "conv2d" && t0.rank() == 4 && t0.shape()[1] > 1)
    return t0.shape()[1]; // depthwise
  return std::visit(
      [](const auto &x) -> ir::AttrValue {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, int64_t>)
          return x + 1;
        else if constexpr (std::is_same_v<T, double>)
          return x + 0.5;
        else if constexpr (std::is_same_v<T, bool>)
          return !x;
        else if constexpr (std::is_same_v<T, DType>)
          return x == DType::F16 ? DType::F32 : DType::F16;
        else if constexpr (std::is_same_v<T, Ints> || std::is_same_v<T, std::vector<double>>) {
          T y = x;
          if (y.empty())
            y.push_back(1);
          else
            y[0] += 1;
          return y;
        } else
          return x + "_other";
      },
      v);
}

/// Ops whose output has the shape of their first argument (given operands
/// shaped as the kit shapes them), so a shape wanted of the output can be
/// asked of the first argument.
bool keepsFirstShape(const ir::Op &op) {
  static const std::set<std::string, std::less<>> extra = {"softmax", "log_softmax", "batch_norm",
                                                           "layer_norm"};
  return op.pattern == ir::OpPattern::Elementwise || op.pattern == ir::OpPattern::Broadcast ||
         extra.count(op.name) != 0;
}

/// Attributes for an op inside a pattern: the first sample's, made to fit
/// the first argument where they depend on its shape.
Attrs patternAttrs(const ir::Op &op, const OpSample &tmpl, const Type &t0) {
  if (op.name == "reshape")
    return {{"newshape", Ints{0, -1}}};
  if (op.name == "unsqueeze")
    return {{"axes", Ints{0}}};
  if (op.name == "squeeze")
    return {};
  if (op.name == "split" && t0.rank() > 0) {
    int64_t d = t0.shape()[0];
    return {{"axis", I(0)}, {"sizes", d > 1 ? Ints{d - d / 2, d / 2} : Ints{d}}};
  }
  return tmpl.attrs;
}

/// The type of argument `i > 0` of `op`, given the first argument's type.
Type otherArgType(const ir::Op &op, size_t i, const Type &t0, const Attrs &attrs,
                  PatternNode::Kind leaf, const OpSample &tmpl) {
  const Shape &s = t0.shape();
  auto t = [&](Shape shape) { return Type::tensor(t0.dtype(), std::move(shape)); };
  auto axisDim = [&](int64_t axis) {
    int64_t r = int64_t(s.size());
    axis = axis < 0 ? axis + r : axis;
    return axis >= 0 && axis < r ? s[size_t(axis)] : 1;
  };
  const std::string &n = op.name;
  if (n == "bias_add" || n == "batch_norm")
    return t({axisDim(attrs.getInt("axis", 1))});
  if (n == "layer_norm") {
    int64_t r = int64_t(s.size()), axis = attrs.getInt("axis", -1);
    axis = axis < 0 ? axis + r : axis;
    return t(Shape(s.begin() + std::clamp<int64_t>(axis, 0, r), s.end()));
  }
  if (n == "dense" && !s.empty()) {
    int64_t units =
        tmpl.args.size() > 1 && tmpl.args[1].type.rank() == 2 ? tmpl.args[1].type.shape()[0] : 4;
    return t({units, s.back()});
  }
  if (n == "matmul" && !s.empty())
    return t({s.back(), 5});
  if (n == "batch_matmul" && s.size() == 3) {
    int64_t k = attrs.getBool("transpose_a") ? s[1] : s[2];
    return attrs.getBool("transpose_b") ? t({s[0], 5, k}) : t({s[0], k, 5});
  }
  if (n == "conv2d" && s.size() == 4 && tmpl.args.size() > 1) {
    int64_t g = std::max<int64_t>(1, attrs.getInt("groups", 1));
    const Shape &w = tmpl.args[1].type.shape();
    int64_t oc = w[0] % g == 0 ? w[0] : 2 * g;
    return t({oc, s[1] / g, w[2], w[3]});
  }
  if (n == "concat")
    return t0;
  if (op.pattern == ir::OpPattern::Broadcast && op.maxArgs == 2) {
    if (leaf != PatternNode::Kind::Const || s.empty())
      return t0;
    return s.size() == 4 ? t({s[1], 1, 1}) : t({s.back()}); // per channel
  }
  if (i < tmpl.args.size())
    return withDType(tmpl.args[i].type, t0.dtype());
  return t0;
}

class PatternBuilder {
public:
  explicit PatternBuilder(uint64_t seed) : rng_(seed) {}

  Expected<ir::Expr> build(const Concrete &c, std::optional<Type> hint, Domain domain) {
    if (c.kind == PatternNode::Kind::Any) {
      ir::Var v = ir::makeVar(fmt::format("x{}", params_.size()), hint.value_or(f32({1, 4, 6, 6})));
      params_.push_back(v);
      domains_.push_back(domain);
      return ir::Expr(v);
    }
    if (c.kind == PatternNode::Kind::Const)
      return ir::makeConstant(randomTensor(hint.value_or(f32({4})), domain, rng_),
                              fmt::format("w{}", constants_++));
    const ir::Op &op = *c.op;
    std::vector<OpSample> samples = samplesFor(op.name);
    if (samples.empty())
      return Error::format("no samples for op '{}' (needed to instantiate the pattern)", op.name);
    const OpSample &tmpl = samples[0];

    // The first argument decides the shapes of the others.
    std::optional<Type> h0 = hint && keepsFirstShape(op) ? hint : tmpl.args[0].type;
    std::vector<ir::Expr> args;
    TS_ASSIGN_OR_RETURN(ir::Expr e0, build(c.args[0], h0, argDomain(op.name, 0)));
    Type t0 = e0->type();
    args.push_back(e0);

    Attrs attrs = patternAttrs(op, tmpl, t0);
    for (const AttrPredicate &pred : c.src->predicates) {
      const ir::AttrSpec *spec = op.findAttr(pred.attr);
      if (!spec)
        continue; // parsePattern rejects these
      if (!pred.negated) {
        attrs.set(pred.attr, convertTo(pred.value, spec->kind));
        continue;
      }
      const ir::AttrValue *cur = attrs.find(pred.attr);
      if (!cur && spec->defaultValue)
        cur = &*spec->defaultValue;
      if (cur && pred.holds(*cur))
        continue;
      ir::AttrValue base = cur ? *cur : convertTo(pred.value, spec->kind);
      attrs.set(pred.attr, perturb(base, pred.attr, op, t0));
    }
    for (size_t i = 1; i < c.args.size(); ++i) {
      Type ti = otherArgType(op, i, t0, attrs, c.args[i].kind, tmpl);
      TS_ASSIGN_OR_RETURN(ir::Expr e, build(c.args[i], ti, argDomain(op.name, i)));
      args.push_back(e);
    }
    return ir::makeCall(op.name, std::move(args), std::move(attrs), op.name);
  }

  const std::vector<ir::Var> &params() const { return params_; }
  const std::vector<Domain> &domains() const { return domains_; }

private:
  std::mt19937_64 rng_;
  std::vector<ir::Var> params_;
  std::vector<Domain> domains_;
  int constants_ = 0;
};

} // namespace

std::vector<PatternVariant> instantiatePattern(const Pattern &pattern,
                                               const std::string &pluginName, uint64_t seed) {
  std::vector<PatternVariant> out;
  for (const Concrete &c : variants(pattern.root)) {
    if (c.kind != PatternNode::Kind::Op)
      continue; // everything optional dropped: nothing to match
    if (opCount(c) < 2)
      continue; // one op: merge-composite leaves it to the checkers (the op's own samples)
    PatternVariant v;
    v.label = "pattern " + pattern.name + ": " + c.str();
    PatternBuilder b(seed ^ hashString(v.label));
    auto root = b.build(c, std::nullopt, Domain::Any);
    if (root.ok()) {
      for (const ir::Var &p : b.params())
        v.label += " " + compactType(p->type());
    }
    auto fail = [&](const std::string &why) {
      v.error = why;
      out.push_back(std::move(v));
    };
    if (!root.ok()) {
      fail("cannot instantiate: " + root.error().str());
      continue;
    }
    auto match = matchPattern(pattern, *root);
    if (!match) {
      fail("internal: the instantiated graph does not match the pattern");
      continue;
    }
    auto call = outlineComposite(*match, pluginName + "." + pattern.name);
    if (!call.ok()) {
      fail("cannot outline: " + call.error().str());
      continue;
    }
    KitCase kc;
    kc.label = v.label;
    kc.pattern = pattern.name;
    kc.ops = match->ops;
    kc.inputDomains = b.domains();
    kc.module.set("main", ir::makeFunction(b.params(), *call));
    v.kase = std::move(kc);
    out.push_back(std::move(v));
  }
  return out;
}

//===----------------------------------------------------------------------===//
// The runner
//===----------------------------------------------------------------------===//

namespace {

struct Outcome {
  enum Kind { Pass, Fail, Declined } kind = Pass;
  std::string detail;
};

Outcome failed(std::string why) {
  return {Outcome::Fail, std::move(why)};
}

/// Runs `fn` of `module` on the inputs and compares with `want`.
Outcome runModule(const plugin::Module &module, const std::string &symbol,
                  const std::vector<ir::Tensor> &inputs, const std::vector<ir::Tensor> &extra,
                  const std::vector<ir::Tensor> &want) {
  auto fn = module.function(symbol);
  if (!fn.ok())
    return failed("function: " + fn.error().str());
  std::vector<ir::Tensor> outputs;
  for (const ir::Tensor &w : want)
    outputs.push_back(outputBuffer(w.type()));
  std::vector<DLTensor> dl;
  const std::vector<ir::Tensor> *lists[] = {&inputs, &extra, &outputs};
  for (const std::vector<ir::Tensor> *list : lists)
    for (const ir::Tensor &t : *list)
      dl.push_back(t.dl());
  std::vector<const DLTensor *> args;
  for (const DLTensor &t : dl)
    args.push_back(&t);
  if (Status s = fn->call(args); !s.ok())
    return failed("call: " + s.error().str());
  for (size_t i = 0; i < want.size(); ++i) {
    ir::Tensor poison = outputBuffer(want[i].type());
    if (want[i].nbytes() > 0 &&
        std::memcmp(outputs[i].bytes(), poison.bytes(), outputs[i].nbytes()) == 0)
      return failed(fmt::format("output {} was not written (it still holds the kit's fill: {})", i,
                                ir::isFloat(want[i].dtype()) ? "NaN" : "0x5a bytes"));
    if (std::string diff = compareTensors(outputs[i], want[i]); !diff.empty())
      return failed(fmt::format("output {}: {}", i, diff));
  }
  return {};
}

/// The module factory on damaged copies of a saved module (a bounded,
/// seeded set): every truncation must be refused, and no damage may crash
/// or hang it (the child's marks name the copy). A flipped byte may be
/// accepted: a module's bytes hold weights that no factory can tell from
/// others, and an artifact's SHA-256 digests keep damage from reaching the
/// factory (docs/design/0011).
Outcome fuzzFactory(const plugin::Plugin &plugin, const std::string &typeKey,
                    const std::string &bytes, std::mt19937_64 &rng, plugin::ChildChannel &channel) {
  const size_t n = bytes.size();
  std::set<size_t> lengths = {0, 1, n / 2, n > 0 ? n - 1 : 0};
  for (int i = 0; i < 4 && n > 1; ++i)
    lengths.insert(size_t(rng() % n));
  for (size_t len : lengths) {
    if (len >= n)
      continue;
    channel.mark(plugin.name(), fmt::format("the module factory '{}' on the saved module truncated to {} of {} "
                             "bytes",
                             typeKey, len, n),
                 plugin::callIsolation().checkerTimeout);
    if (auto loaded = plugin.load(typeKey, std::string_view(bytes).substr(0, len)); loaded.ok())
      return failed(fmt::format("the module factory '{}' accepted the saved module truncated to "
                                "{} of {} bytes",
                                typeKey, len, n));
  }
  for (int i = 0; i < 8 && n > 0; ++i) {
    // Half the flips land in the first 64 bytes, where formats keep their
    // headers and lengths.
    size_t at = size_t(rng() % (i % 2 == 0 ? std::min<size_t>(n, 64) : n));
    std::string damaged = bytes;
    damaged[at] = char(uint8_t(damaged[at]) ^ uint8_t(1 + rng() % 255));
    channel.mark(plugin.name(), fmt::format("the module factory '{}' on the saved module with byte {} of {} "
                             "changed",
                             typeKey, at, n),
                 plugin::callIsolation().checkerTimeout);
    (void)plugin.load(typeKey, damaged); // refused or accepted: either is fine
  }
  return {};
}

Outcome runCase(const plugin::Plugin &plugin, const KitCase &kc, const std::string &symbol,
                uint64_t seed, std::string *source, plugin::ChildChannel &channel) {
  const plugin::CallIsolation limits = plugin::callIsolation();
  // 1. The checker.
  plugin::CheckResult check;
  if (kc.pattern.empty()) {
    auto desc = OpDescHolder::fromCall(*kc.ops.at(0)->as<ir::CallNode>());
    if (!desc.ok())
      return failed("internal: " + desc.error().str());
    channel.mark(plugin.name(), "check_op", limits.checkerTimeout);
    check = plugin.checkOp((*desc)->desc());
  } else {
    auto list = OpDescList::fromCalls(kc.ops);
    if (!list.ok())
      return failed("internal: " + list.error().str());
    channel.mark(plugin.name(), "check_pattern", limits.checkerTimeout);
    check = plugin.checkPattern(kc.pattern, std::span(list->data(), list->size()));
  }
  // An SDK checker that throws declines with "checker error: ..." (the C
  // ABI has no error channel there): a broken checker, not a decision.
  if (!check.supported && check.reason.starts_with(plugin::kCheckerErrorPrefix))
    return failed("the checker failed instead of deciding: " + check.reason);
  if (!check.supported)
    return {Outcome::Declined, check.reason.empty() ? "(no reason given)" : check.reason};

  // 2. Codegen, save, load through the module factory.
  ir::Function main = kc.module.find("main");
  auto graph = GraphHolder::fromFunction(main, symbol, plugin.codegenFlags());
  if (!graph.ok())
    return failed("internal: " + graph.error().str());
  if (source)
    *source = (*graph)->json();
  channel.mark(plugin.name(), "codegen.compile", limits.codegenTimeout);
  auto compiled = plugin.compile((*graph)->graph());
  if (!compiled.ok())
    return failed("compile: " + compiled.error().str());
  channel.mark(plugin.name(), "the module's save", limits.codegenTimeout);
  auto bytes = (*compiled)->save();
  if (!bytes.ok())
    return failed("save: " + bytes.error().str());
  channel.mark(plugin.name(), fmt::format("the module factory '{}' on the saved module", (*compiled)->typeKey()),
               limits.codegenTimeout);
  auto loaded = plugin.load((*compiled)->typeKey(), *bytes);
  if (!loaded.ok())
    return failed("load: " + loaded.error().str());

  // 3. Random inputs, the reference, both modules.
  std::mt19937_64 rng(seed ^ hashString(kc.label) ^ 0x5eed);
  std::vector<ir::Tensor> inputs;
  for (size_t i = 0; i < main->params().size(); ++i)
    inputs.push_back(randomTensor(main->params()[i]->type(), kc.inputDomains.at(i), rng));
  channel.mark("", "the reference interpreter", std::chrono::milliseconds(-1));
  auto want = interp::run(kc.module, inputs);
  if (!want.ok())
    return failed("internal: reference interpreter: " + want.error().str());
  std::vector<ir::Tensor> expected = want->flatten();
  const auto &extra = (*graph)->extraInputs();
  channel.mark(plugin.name(), fmt::format("a call of the compiled module's '{}'", symbol), limits.codegenTimeout);
  Outcome o = runModule(**compiled, symbol, inputs, extra, expected);
  if (o.kind != Outcome::Pass) {
    o.detail = "compiled module: " + o.detail;
    return o;
  }
  channel.mark(plugin.name(), fmt::format("a call of the reloaded module's '{}'", symbol), limits.codegenTimeout);
  o = runModule(**loaded, symbol, inputs, extra, expected);
  if (o.kind != Outcome::Pass) {
    o.detail = "module reloaded through factory '" + (*compiled)->typeKey() + "': " + o.detail;
    return o;
  }
  // 4. Damaged bytes.
  return fuzzFactory(plugin, (*compiled)->typeKey(), *bytes, rng, channel);
}

/// runCase in a child process when plugin calls are isolated: a crash,
/// abort, exit or hang is this case's FAIL, naming the step, and the kit
/// goes on with the next case.
Outcome runCaseIsolated(const plugin::Plugin &plugin, const KitCase &kc,
                        const std::string &symbol, uint64_t seed, std::string *source) {
  const plugin::CallIsolation limits = plugin::callIsolation();
  if (!limits.enabled) {
    plugin::ChildChannel inProcess;
    return runCase(plugin, kc, symbol, seed, source, inProcess);
  }
  plugin::ChildEnd end = plugin::runChild(
      [&](plugin::ChildChannel &channel) -> Expected<std::string> {
        std::string text;
        Outcome o = runCase(plugin, kc, symbol, seed, &text, channel);
        // kind, the detail's length, the detail, the source.
        std::string out(1, char('0' + int(o.kind)));
        out += fmt::format("{:08x}", o.detail.size());
        return out + o.detail + text;
      },
      limits.checkerTimeout);
  if (end.kind == plugin::ChildEnd::Failed)
    return failed("internal: " + end.payload);
  if (end.kind != plugin::ChildEnd::Answered)
    return failed(fmt::format("{} {} in {}", end.lastPlugin.empty() ? "Tessera" : "the plugin",
                              end.how(), end.lastMark.empty() ? "the case" : end.lastMark));
  const std::string &a = end.payload;
  size_t size = a.size() >= 9 ? std::stoul(a.substr(1, 8), nullptr, 16) : 0;
  if (a.size() < 9 + size || a[0] < '0' || a[0] > '2')
    return failed("internal: a malformed answer from the case's child process");
  if (source)
    *source = a.substr(9 + size);
  return {Outcome::Kind(a[0] - '0'), a.substr(9, size)};
}

class Reporter {
public:
  Reporter(std::ostream &out, bool verbose) : out_(out), verbose_(verbose) {}

  void report(const std::string &label, const Outcome &o, const std::string &source) {
    switch (o.kind) {
    case Outcome::Pass:
      ++summary.passed;
      out_ << "PASS " << label << "\n";
      break;
    case Outcome::Fail:
      ++summary.failed;
      out_ << "FAIL " << label << ": " << o.detail << "\n";
      if (verbose_ && !source.empty())
        out_ << "  graph: " << source << "\n";
      break;
    case Outcome::Declined:
      ++summary.declined;
      out_ << "DECLINED " << label << ": " << o.detail << "\n";
      break;
    }
    if (verbose_ && o.kind == Outcome::Pass && !source.empty())
      out_ << "  graph: " << source << "\n";
    out_.flush();
  }

  KitSummary summary;

private:
  std::ostream &out_;
  bool verbose_;
};

} // namespace

KitSummary runKit(const plugin::Plugin &plugin, const KitOptions &options, std::ostream &out) {
  Reporter rep(out, options.verbose);
  out << fmt::format("plugin-check: plugin '{}' {} (ABI {}.{}) from {}\n", plugin.name(),
                     plugin.version(), plugin.abiMajor(), plugin.abiMinor(), plugin.path());
  out << "comparing with the reference interpreter: f32/f64 rtol 1e-4 atol 1e-5, f16/bf16 rtol "
         "1e-2 atol 1e-3, integers and bool exact\n";
  int symbolCount = 0;
  bool any = false;
  auto run = [&](const KitCase &kc) {
    std::string source;
    std::string symbol = fmt::format("tessera_kit_{}", symbolCount++);
    Outcome o = runCaseIsolated(plugin, kc, symbol, options.seed, &source);
    rep.report(kc.label, o, source);
  };

  std::set<std::string> seen;
  for (const std::string &op : plugin.ops()) {
    if (!seen.insert(op).second || (!options.filter.empty() && op != options.filter))
      continue;
    any = true;
    std::vector<OpSample> samples = samplesFor(op);
    if (samples.empty()) {
      rep.report(op, failed("no samples for op " + op), {});
      continue;
    }
    for (const OpSample &s : samples) {
      auto kc = buildOpCase(s, options.seed);
      if (!kc.ok())
        rep.report(s.label(), failed("internal: " + kc.error().str()), {});
      else
        run(*kc);
    }
  }
  for (const auto &[name, text] : plugin.patterns()) {
    if (!options.filter.empty() && name != options.filter)
      continue;
    any = true;
    auto pattern = parsePattern(name, text);
    if (!pattern.ok()) {
      rep.report("pattern " + name, failed(pattern.error().str()), {});
      continue;
    }
    for (const PatternVariant &v : instantiatePattern(*pattern, plugin.name(), options.seed)) {
      if (v.kase)
        run(*v.kase);
      else
        rep.report(v.label, failed(v.error), {});
    }
  }
  if (!any)
    rep.report(options.filter.empty() ? "plugin" : options.filter,
               failed(!options.filter.empty()
                          ? "the plugin claims no op or pattern named '" + options.filter + "'"
                      : plugin.hasPartitionHook()
                          ? "the plugin claims no op and no pattern (the kit does not test the "
                            "whole-graph partition hook)"
                          : "the plugin claims no op and no pattern"),
               {});
  out << fmt::format("{} passed, {} failed, {} declined\n", rep.summary.passed, rep.summary.failed,
                     rep.summary.declined);
  return rep.summary;
}

} // namespace tessera::partition::kit
