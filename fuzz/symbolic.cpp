//===- fuzz/symbolic.cpp - Symbolic models compiled once, run at many sizes -===//
//
// Issue 41: a CNN with a mean() head over unbounded H and W crashed at every
// size, and nothing generated symbolic models to find it. This differential
// target draws a model from a hash of its input: an f32[N, C, H, W] input
// whose N, H and W are symbols (bounded or not), then a chain of
// convolutions (strided, padded, with a bias), poolings (max and average,
// strided, padded), elementwise ops, channel concats, reductions over H and
// W (mean, sum, max) and a global-pool + dense head, so that the dims of
// every step derive from N, H and W through windows, strides and
// reductions. It compiles the model once (host only, or with dnnl, json or
// ccompiler, drawn too), then runs the artifact at three drawn sizes:
//   - where the model, built again for that size alone, types (every window
//     fits), the run must succeed and give the reference interpreter's
//     outputs on the same inputs (compared as differential.h says);
//   - where it does not (the inputs are too small), the run must fail with
//     an error, not crash.
// fuzz/corpus/symbolic holds the seeds ctest replays (a bounded run in the
// suite); `./dev.sh fuzz symbolic SECONDS` runs it open-ended.
//
//===----------------------------------------------------------------------===//
#include "differential.h"
#include "fuzz_check.h"

#include "compile/compile.h"
#include "ir/expr.h"
#include "ir/printer.h"
#include "ir/symbol.h"
#include "runtime/session.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

using namespace tessera;

namespace {

/// One step of the chain, as drawn.
struct Step {
  enum Kind { Conv, Relu, Sigmoid, MaxPool, AvgPool, AddSelf, MulSelf, Concat, ReduceMean,
              ReduceSum, ReduceMax } kind = Relu;
  int64_t k = 1, stride = 1, pad = 0, out = 0; // windows; conv: out channels
  std::vector<double> weights, bias;           // conv (bias may be empty)
};

/// A model drawn from a seed: the same choices build it for symbolic and
/// for concrete input shapes.
struct Recipe {
  int64_t channels = 1;
  bool nBounded = false, hBounded = false, wBounded = false;
  int64_t hLo = 1, wLo = 1;
  std::vector<Step> steps;
  bool denseHead = false;
  std::vector<double> dense; // [classes, channels]
  int64_t classes = 0;
  std::vector<std::string> targets;
};

double value(std::mt19937_64 &rng) { return double(int64_t(rng() % 17) - 8) / 8; } // -1..1

std::vector<double> values(std::mt19937_64 &rng, int64_t n) {
  std::vector<double> v{};
  v.resize(size_t(n));
  for (double &x : v)
    x = value(rng);
  return v;
}

Recipe draw(std::mt19937_64 &rng) {
  Recipe r;
  auto pick = [&](uint64_t n) { return int64_t(rng() % n); };
  r.channels = 1 + pick(3);
  r.nBounded = pick(2), r.hBounded = pick(2), r.wBounded = pick(2);
  r.hLo = 1 + pick(6), r.wLo = 1 + pick(6);
  int64_t c = r.channels;
  bool spatial = true; // H and W not reduced away yet
  const int64_t n = 1 + pick(5);
  for (int64_t i = 0; i < n; ++i) {
    Step s;
    s.kind = Step::Kind(pick(spatial ? 11 : 8));
    if (!spatial && (s.kind == Step::MaxPool || s.kind == Step::AvgPool))
      s.kind = Step::Relu;
    switch (s.kind) {
    case Step::Conv:
      s.k = spatial ? 1 + pick(3) : 1;
      s.stride = spatial ? 1 + pick(2) : 1;
      s.pad = spatial ? pick(std::min<int64_t>(s.k, 2)) : 0;
      s.out = 1 + pick(4);
      s.weights = values(rng, s.out * c * s.k * s.k);
      if (pick(2))
        s.bias = values(rng, s.out);
      c = s.out;
      break;
    case Step::MaxPool:
    case Step::AvgPool:
      s.k = 2 + pick(2);
      s.stride = 1 + pick(2);
      s.pad = pick(2);
      break;
    case Step::Concat:
      if (c > 4)
        s.kind = Step::AddSelf;
      else
        c *= 2;
      break;
    case Step::ReduceMean:
    case Step::ReduceSum:
    case Step::ReduceMax:
      spatial = false;
      break;
    default: break;
    }
    r.steps.push_back(std::move(s));
  }
  r.denseHead = pick(2);
  r.classes = 1 + pick(4);
  r.dense = values(rng, r.classes * c);
  static const std::vector<std::vector<std::string>> kTargets = {
      {}, {"dnnl"}, {"json"}, {"ccompiler"}, {"dnnl", "json"}};
  r.targets = kTargets[size_t(pick(kTargets.size()))];
  return r;
}

ir::Expr constant(std::vector<double> v, ir::Shape shape) {
  return ir::makeConstant(ir::Tensor::fromDoubles(ir::DType::F32, std::move(shape), v));
}

/// The model of `r` over an input of `shape`; an error where a step does not
/// type there (a window larger than its padded input).
Expected<ir::Module> build(const Recipe &r, const ir::Shape &shape) {
  ir::Var x = ir::makeVar("x", ir::Type::tensor(ir::DType::F32, shape));
  ir::Expr e = x;
  int64_t c = r.channels;
  auto ints = [](std::vector<int64_t> v) { return ir::AttrValue(std::move(v)); };
  for (const Step &s : r.steps) {
    ir::Attrs a;
    const char *op = nullptr;
    std::vector<ir::Expr> args;
    args.reserve(2);
    args.push_back(e);
    switch (s.kind) {
    case Step::Conv:
      a.set("strides", ints({s.stride, s.stride}));
      a.set("pads", ints({s.pad, s.pad, s.pad, s.pad}));
      op = "conv2d";
      args.push_back(constant(s.weights, {s.out, c, s.k, s.k}));
      break;
    case Step::Relu: op = "relu"; break;
    case Step::Sigmoid: op = "sigmoid"; break;
    case Step::MaxPool:
    case Step::AvgPool:
      a.set("pool_size", ints({s.k, s.k}));
      a.set("strides", ints({s.stride, s.stride}));
      a.set("pads", ints({s.pad, s.pad, s.pad, s.pad}));
      op = s.kind == Step::MaxPool ? "max_pool2d" : "avg_pool2d";
      break;
    case Step::AddSelf: op = "add", args.push_back(e); break;
    case Step::MulSelf: op = "multiply", args.push_back(e); break;
    case Step::Concat:
      a.set("axis", ir::AttrValue(int64_t(1)));
      op = "concat", args.push_back(e);
      break;
    case Step::ReduceMean:
    case Step::ReduceSum:
    case Step::ReduceMax:
      a.set("axes", ints({2, 3}));
      a.set("keepdims", ir::AttrValue(true));
      op = s.kind == Step::ReduceMean  ? "reduce_mean"
           : s.kind == Step::ReduceSum ? "reduce_sum"
                                       : "reduce_max";
      break;
    }
    TS_ASSIGN_OR_RETURN(e, ir::makeCall(op, std::move(args), std::move(a)));
    if (s.kind == Step::Concat)
      c *= 2;
    if (s.kind == Step::Conv) {
      c = s.out;
      if (!s.bias.empty()) {
        TS_ASSIGN_OR_RETURN(e, ir::makeCall("bias_add", {e, constant(s.bias, {s.out})}));
      }
    }
  }
  if (r.denseHead) {
    TS_ASSIGN_OR_RETURN(e, ir::makeCall("global_avg_pool2d", {e}));
    TS_ASSIGN_OR_RETURN(e, ir::makeCall("flatten", {e}));
    TS_ASSIGN_OR_RETURN(e, ir::makeCall("dense", {e, constant(r.dense, {r.classes, c})}));
  }
  ir::Module m("symbolic");
  m.set("main", ir::makeFunction({x}, e));
  return m;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char *>(data), size);
  std::mt19937_64 rng(std::hash<std::string_view>()(bytes));
  const Recipe r = draw(rng);
  auto symbol = [](const char *name, int64_t lo, bool bounded, int64_t hi) {
    return ir::namedSymbol(name, lo, bounded ? hi : ir::kUnbounded).value();
  };
  const ir::Shape symbolic = {symbol("N", 1, r.nBounded, 4), r.channels,
                              symbol("H", r.hLo, r.hBounded, 24),
                              symbol("W", r.wLo, r.wBounded, 24)};
  auto model = build(r, symbolic);
  if (!model.ok()) // no size fits every step
    return 0;
  compile::CompileOptions options;
  plugin::PluginRegistry &registry = plugin::PluginRegistry::global();
  fuzz::keepPluginsLoaded(registry);
  for (const std::string &t : r.targets)
    if (registry.find(t))
      options.targets.push_back(t);
  auto where = [&] {
    return fmt::format("targets [{}]\n---- module\n{}", fmt::join(options.targets, ","),
                       ir::printModule(*model));
  };
  auto compiled = compile::compileModule(*model, options, &registry);
  FUZZ_REQUIRE(compiled.ok(), compiled.error().str() + "\n" + where());
  auto loaded = runtime::LoadedModel::load(compiled->artifact, "symbolic.tsr");
  FUZZ_REQUIRE(loaded.ok(), loaded.error().str() + "\n" + where());
  runtime::SessionOptions one;
  one.numThreads = 1;
  auto session = runtime::Session::create(*loaded, one);
  FUZZ_REQUIRE(session.ok(), session.error().str() + "\n" + where());
  for (int trial = 0; trial < 3; ++trial) {
    auto within = [&](int64_t lo, bool bounded, int64_t hi, int64_t most) {
      const int64_t top = bounded ? std::min(hi, most) : most;
      return lo + int64_t(rng() % uint64_t(top - lo + 1));
    };
    const ir::Shape shape = {within(1, r.nBounded, 4, 3), r.channels,
                             within(r.hLo, r.hBounded, 24, 20), within(r.wLo, r.wBounded, 24, 20)};
    ir::Tensor x(ir::DType::F32, shape);
    for (int64_t i = 0; i < x.numel(); ++i)
      x.setDouble(i, value(rng));
    auto at = [&] { return fmt::format("at x: f32[{}]\n{}", fmt::join(shape, ", "), where()); };
    Status bound = (*session)->setInput(0, x.dl());
    FUZZ_REQUIRE(bound.ok(), bound.error().str() + "\n" + at());
    Status ran = (*session)->run();
    auto reference = build(r, shape);
    if (!reference.ok()) { // too small for some step: refused, said so
      FUZZ_REQUIRE(!ran.ok(), "the model does not type at this size (" +
                                  reference.error().str() + ") but the run succeeded\n" + at());
      continue;
    }
    FUZZ_REQUIRE(ran.ok(), ran.error().str() + "\n" + at());
    auto want = interp::run(*reference, {x});
    FUZZ_REQUIRE(want.ok(), want.error().str() + "\n" + at());
    std::vector<interp::Value> outputs;
    for (size_t i = 0; i < (*loaded)->outputs().size(); ++i) {
      auto out = (*session)->output(i);
      FUZZ_REQUIRE(out.ok(), out.error().str() + "\n" + at());
      outputs.push_back(interp::Value::ofTensor(ir::Tensor::copyOf(**out)));
    }
    const interp::Value got = outputs.size() == 1 ? std::move(outputs[0])
                                                  : interp::Value::ofTuple(std::move(outputs));
    std::string why = fuzz::compareOutputs(*want, got);
    FUZZ_REQUIRE(why.empty(), why + "\n" + at());
  }
  return 0;
}
