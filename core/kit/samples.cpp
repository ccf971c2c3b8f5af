//===- kit/samples.cpp - The kit's sample catalogue -----------------------===//
//
// The sample catalogue of the vendor conformance kit: single-op cases per
// core op (hand-written for the ops whose attributes and shapes matter,
// generic rules for the other elementwise and broadcasting ops), the kit's
// small shared helpers (plugin_kit_internal.h), and building a sample's
// case. See plugin_kit.h.
//
//===----------------------------------------------------------------------===//
#include "kit/kit.h"

#include "ir/op.h"
#include "kit/internal.h"

#include <algorithm>
#include <functional>
#include <map>

namespace tessera::kit {

using ir::Attrs;
using ir::DType;
using ir::Shape;
using ir::Type;
using Ints = std::vector<int64_t>;

//===----------------------------------------------------------------------===//
// Small helpers
//===----------------------------------------------------------------------===//

namespace detail {

Type f32(Shape s) {
  return Type::tensor(DType::F32, std::move(s));
}
Type withDType(const Type &t, DType d) {
  return Type::tensor(d, t.shape());
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

} // namespace detail

using detail::compactType;
using detail::f32;
using detail::hashString;
using detail::I;
using detail::withDType;

namespace {

ArgSpec in(Type t) {
  return ArgSpec{std::move(t), false, Domain::Any};
}
ArgSpec cst(Type t) {
  return ArgSpec{std::move(t), true, Domain::Any};
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

/// X [S, B, I], W [D, 4H, I], R [D, 4H, H], B [D, 8H] (constants, as an
/// export's), initial_h and initial_c [D, B, H].
void lstmSamples(Samples &s) {
  auto lstm = [&](const char *direction, int64_t S, int64_t B, int64_t I, int64_t H) {
    const int64_t D = std::string_view(direction) == "bidirectional" ? 2 : 1;
    s.add({{"direction", std::string(direction)}},
          {in(f32({S, B, I})), cst(f32({D, 4 * H, I})), cst(f32({D, 4 * H, H})),
           cst(f32({D, 8 * H})), in(f32({D, B, H})), in(f32({D, B, H}))});
  };
  lstm("forward", 5, 1, 6, 8);
  lstm("forward", 3, 4, 5, 20); // hidden units not a multiple of 16
  lstm("reverse", 4, 2, 3, 16);
  lstm("bidirectional", 3, 2, 4, 8);
}

/// gru (both linear_before_reset modes) and rnn (each activation): X
/// [S, B, I], W [D, GH, I], R [D, GH, H], B [D, 2GH] (constants),
/// initial_h [D, B, H].
void gruRnnSamples(Samples &s, int64_t G, const std::vector<ir::Attrs> &modes) {
  auto add = [&](ir::Attrs attrs, const char *direction, int64_t S, int64_t B, int64_t I,
                 int64_t H) {
    const int64_t D = std::string_view(direction) == "bidirectional" ? 2 : 1;
    attrs.set("direction", std::string(direction));
    s.add(attrs, {in(f32({S, B, I})), cst(f32({D, G * H, I})), cst(f32({D, G * H, H})),
                  cst(f32({D, 2 * G * H})), in(f32({D, B, H}))});
  };
  for (const ir::Attrs &m : modes) {
    add(m, "forward", 5, 1, 6, 8);
    add(m, "forward", 3, 3, 5, 20); // hidden units not a multiple of 16, an odd batch
  }
  add(modes[0], "reverse", 4, 2, 3, 16);
  add(modes[0], "bidirectional", 3, 2, 4, 8);
}

void gruSamples(Samples &s) {
  gruRnnSamples(s, 3, {{{"linear_before_reset", int64_t(1)}}, {{"linear_before_reset", int64_t(0)}}});
}

void rnnSamples(Samples &s) {
  gruRnnSamples(s, 1,
                {{{"activation", std::string("tanh")}},
                 {{"activation", std::string("relu")}},
                 {{"activation", std::string("sigmoid")}}});
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
    t["lstm"] = lstmSamples;
    t["gru"] = gruSamples;
    t["rnn"] = rnnSamples;
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

} // namespace tessera::kit
