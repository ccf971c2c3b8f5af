//===- tests/unit/plugin_symbolic_test.cpp - Plugins over symbolic dims ---===//
//
// Plugin ABI 1.4 (docs/design/0013-dynamic-shapes.md, "Plugins"): what a
// checker and codegen see of symbolic dims (-1 plus the symbol's index, the
// symbol list with bounds and examples), the tessera.graph "symbols" and
// resolveGraph, the JsonRuntime base's per-shape cache, and models compiled
// once with their convolutions on the json and dnnl plugins and run at
// several sizes through the session against the reference interpreter on
// the same symbolic model.
//
//===----------------------------------------------------------------------===//
#include "shipped_plugins.h"
#include "symbolic_test_util.h"

#include "bridge/plugin_bridge.h"
#include "ir/symbol.h"
#include "tessera/sdk/json_runtime.hpp"

#include <atomic>
#include <cstring>

namespace {

using namespace tessera;
using namespace tessera::test;

using Ints = std::vector<int64_t>;

ir::Attrs attrs(std::initializer_list<std::pair<const char *, ir::AttrValue>> list) {
  ir::Attrs a;
  for (const auto &[k, v] : list)
    a.set(k, v);
  return a;
}

/// A conv block over x [N(1, 3), 3, H(6, 40), W(6, 40)]: the conv's output
/// dims are derived symbols, the pool's derived from those.
ir::Module convModel() {
  std::mt19937 rng{5};
  auto dim = [](const char *name, int64_t lo, int64_t hi) {
    auto s = ir::namedSymbol(name, lo, hi);
    REQUIRE(s.ok());
    return *s;
  };
  ir::Var x = ir::makeVar(
      "x", ir::Type::tensor(ir::DType::F32, {dim("N", 1, 3), 3, dim("H", 6, 40), dim("W", 6, 40)}));
  auto weight = [&](ir::Shape s) {
    return ir::makeConstant(randomTensor(ir::Type::tensor(ir::DType::F32, std::move(s)), rng));
  };
  auto call = [](const char *op, std::vector<ir::Expr> args, ir::Attrs a, const char *name) {
    return ir::expectOk(ir::makeCall(op, std::move(args), std::move(a), name));
  };
  ir::Expr c = call("conv2d", {x, weight({4, 3, 3, 3})},
                    attrs({{"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}}), "c");
  ir::Expr b = call("bias_add", {c, weight({4})}, attrs({{"axis", int64_t(1)}}), "b");
  ir::Expr r = call("relu", {b}, {}, "r");
  ir::Expr p = call("max_pool2d", {r}, attrs({{"pool_size", Ints{2, 2}}, {"strides", Ints{2, 2}}}),
                    "p");
  ir::Module m("sym");
  m.set("main", ir::makeFunction({x}, call("sigmoid", {p}, {}, "s")));
  return m;
}

/// A symbolic model compiled for `target` and loaded.
std::shared_ptr<const runtime::LoadedModel> compileFor(const ir::Module &m,
                                                       const std::string &target) {
  compile::CompileOptions options;
  options.targets = {target};
  return test::compileModule(m, options, &shippedPlugins());
}

} // namespace

TEST_CASE("plugin bridge: an op over symbolic dims as a checker sees it",
          "[plugin_bridge][symbolic]") {
  auto n = ir::namedSymbol("N", 1, 8);
  REQUIRE(n.ok());
  ir::Var x = ir::makeVar("x", ir::Type::tensor(ir::DType::F32, {*n, 4}));
  ir::Expr sum = ir::expectOk(ir::makeCall("add", {x, x}, {}, "a"));
  const auto *call = sum->as<ir::CallNode>();
  auto h = bridge::OpDescHolder::fromCall(*call);
  REQUIRE(h.ok());
  const tessera_op_desc_t &d = (*h)->desc();
  REQUIRE(d.num_symbols == 1);
  CHECK(std::string(d.symbols[0]->name) == "N");
  CHECK(d.symbols[0]->lo == 1);
  CHECK(d.symbols[0]->hi == 8);
  CHECK_FALSE(d.symbols[0]->runtime);
  for (const tessera_tensor_type_t *t : {d.inputs[0], d.inputs[1], d.outputs[0]}) {
    REQUIRE(t->ndim == 2);
    CHECK(t->shape[0] == -1);
    CHECK(t->shape[1] == 4);
    REQUIRE(t->symbols);
    CHECK(t->symbols[0] == 0);
    CHECK(t->symbols[1] == -1);
  }
  // The SDK's view, and one consistent concrete shape from the examples.
  sdk::OpDesc op = sdk::toOpDesc(d);
  CHECK(op.inputs[0].str() == "f32[s0, 4]");
  CHECK_FALSE(op.inputs[0].isStatic());
  sdk::OpDesc ex = sdk::exampleOp(op);
  CHECK(ex.inputs[0].isStatic());
  CHECK(ex.inputs[0].shape == std::vector<int64_t>{op.symbols[0].example, 4});
  CHECK(ex.outputs[0].shape == ex.inputs[0].shape);
}

TEST_CASE("plugin bridge: a symbolic region's graph lists its symbols",
          "[plugin_bridge][symbolic]") {
  ir::Module m = convModel();
  auto g = bridge::GraphHolder::fromFunction(m.find("main"), "sym_fn");
  REQUIRE(g.ok());
  sdk::Graph graph = sdk::readGraph((*g)->json());
  // N, H, W, the conv's two output dims, the pool's two.
  REQUIRE(graph.symbols.size() == 7);
  CHECK(graph.symbols[0].name == "N");
  CHECK(graph.symbols[1].name == "H");
  CHECK(graph.symbols[1].lo == 6);
  CHECK(graph.symbols[1].hi == 40);
  CHECK((*g)->symbolDims().size() == 7);
  CHECK((*g)->symbolWhere()[3] == "dim 2 of conv2d 'c'");
  CHECK((*g)->symbolWhere()[5] == "dim 2 of max_pool2d 'p'");
  const sdk::TensorType &in = graph.typeOf({graph.inputs[0], 0});
  CHECK(in.str() == "f32[s0, 3, s1, s2]");

  // At H = W = 17: the conv gives 9, the pool 4.
  std::vector<int64_t> values{2, 17, 17, 9, 9, 4, 4};
  sdk::Graph at = sdk::resolveGraph(graph, values);
  CHECK(at.symbols.empty());
  CHECK(at.typeOf(at.outputs[0]).str() == "f32[2, 4, 4, 4]");
  // The examples are consistent too (a conv of the example height has the
  // example output height).
  sdk::Graph ex = sdk::resolveGraph(graph, sdk::exampleValues(graph.symbols), false);
  const auto &exIn = ex.typeOf({ex.inputs[0], 0});
  CHECK(ex.nodes[2].outputs[0].shape[2] == (exIn.shape[2] + 2 - 3) / 2 + 1);

  // Values outside the bounds, or too few, are refused by name.
  values[1] = 41;
  CHECK_THROWS_WITH(sdk::resolveGraph(graph, values),
                    Catch::Contains("symbol 1 ('H')") && Catch::Contains("41") &&
                        Catch::Contains("outside its bounds 6..40"));
  CHECK_THROWS_WITH(sdk::resolveGraph(graph, std::vector<int64_t>{1}),
                    Catch::Contains("has 7 symbols, but 1 values were given"));
  // Written back, the graph reads the same.
  CHECK(sdk::readGraph(sdk::writeGraph(graph)).symbols == graph.symbols);
  CHECK(sdk::writeGraph(sdk::readGraph(sdk::writeGraph(graph))) == sdk::writeGraph(graph));
}

TEST_CASE("SDK: a tessera.graph with bad symbols is refused", "[sdk][symbolic]") {
  const std::string head = R"({"format": "tessera.graph", "version": 1, "symbol": "f", )";
  auto graphWith = [&](const std::string &symbols, const std::string &type) {
    return head + symbols +
           R"("nodes": [{"kind": "input", "name": "x", "outputs": [)" + type +
           R"(]}], "inputs": [0], "outputs": [[0, 0]]})";
  };
  const std::string n = R"("symbols": [{"name": "N", "lo": 1, "hi": 4}], )";
  CHECK_NOTHROW(sdk::readGraph(
      graphWith(n, R"({"dtype": "f32", "shape": [-1, 2], "symbols": [0, -1]})")));
  CHECK_THROWS_WITH(
      sdk::readGraph(graphWith(n, R"({"dtype": "f32", "shape": [-1, 2], "symbols": [1, -1]})")),
      Catch::Contains("not -1 or an index into the 1 symbols"));
  CHECK_THROWS_WITH(
      sdk::readGraph(graphWith(n, R"({"dtype": "f32", "shape": [-1, 2], "symbols": [-1, -1]})")),
      Catch::Contains("-1 for a symbolic dim"));
  CHECK_THROWS_WITH(
      sdk::readGraph(graphWith(n, R"({"dtype": "f32", "shape": [3, 2], "symbols": [0]})")),
      Catch::Contains("one entry per dim"));
  CHECK_THROWS_WITH(
      sdk::readGraph(graphWith(R"("symbols": [{"name": "N", "lo": 5, "hi": 4}], )",
                               R"({"dtype": "f32", "shape": [2]})")),
      Catch::Contains("bounds 5..4"));
}

namespace {

/// Doubles its input; counts the shapes it prepares.
class DoublingRuntime final : public sdk::JsonRuntime {
public:
  explicit DoublingRuntime(std::vector<sdk::JsonFunction> fns)
      : JsonRuntime("double", std::move(fns)) {}
  mutable std::atomic<int> prepared{0};

protected:
  void run(const sdk::JsonFunction &, std::span<const DLTensor *const>,
           std::span<const DLTensor *const>) const override {
    FAIL("a symbolic function went to run()");
  }
  std::shared_ptr<const void> prepareShape(const sdk::JsonFunction &,
                                           const sdk::Graph &g) const override {
    ++prepared;
    return std::make_shared<const int64_t>(g.typeOf(g.outputs[0]).numel());
  }
  void runShape(const sdk::JsonFunction &, const Shape &shape,
                std::span<const DLTensor *const> in,
                std::span<const DLTensor *const> out) const override {
    const int64_t n = *static_cast<const int64_t *>(shape.prepared.get());
    const float *x = static_cast<const float *>(in[0]->data);
    float *y = static_cast<float *>(out[0]->data);
    for (int64_t i = 0; i < n; ++i)
      y[i] = 2 * x[i];
  }
};

} // namespace

TEST_CASE("JsonRuntime: a symbolic function is prepared once per shape, the recent ones kept",
          "[sdk][symbolic]") {
  const std::string json =
      R"({"format": "tessera.graph", "version": 1, "symbol": "dbl",
          "symbols": [{"name": "N", "lo": 1, "hi": 64}],
          "nodes": [{"kind": "input", "name": "x",
                     "outputs": [{"dtype": "f32", "shape": [-1, 3], "symbols": [0, -1]}]},
                    {"kind": "op", "op": "add", "name": "y", "inputs": [[0, 0], [0, 0]],
                     "outputs": [{"dtype": "f32", "shape": [-1, 3], "symbols": [0, -1]}]}],
          "inputs": [0], "outputs": [[1, 0]]})";
  std::vector<sdk::JsonFunction> fns;
  fns.push_back(sdk::JsonRuntime::makeFunction("dbl", json, {}, "double"));
  auto rt = sdk::JsonRuntime::create<DoublingRuntime>(std::move(fns));
  sdk::Function *f = rt->function("dbl");
  REQUIRE(f);
  auto call = [&](int64_t n, int64_t symbol) {
    ir::Tensor x(ir::DType::F32, {n, 3}), y(ir::DType::F32, {n, 3});
    for (int64_t i = 0; i < x.numel(); ++i)
      x.setDouble(i, double(i));
    DLTensor a[] = {x.dl(), y.dl()};
    const DLTensor *args[] = {&a[0], &a[1]};
    const int64_t values[] = {symbol};
    f->run(args, values);
    for (int64_t i = 0; i < y.numel(); ++i)
      REQUIRE(y.getDouble(i) == 2.0 * double(i));
  };
  call(5, 5);
  call(5, 5);
  CHECK(rt->prepared == 1);
  call(7, 7);
  CHECK(rt->prepared == 2);
  // The cache keeps the kShapeCacheSize most recently used shapes: after
  // that many others, N = 5 is prepared again; N = 7, used since, is not.
  for (int64_t n = 10; n < 10 + int64_t(sdk::JsonRuntime::kShapeCacheSize) - 1; ++n)
    call(n, n);
  call(7, 7);
  const int before = rt->prepared;
  call(20, 20);
  call(7, 7);
  CHECK(rt->prepared == before + 1);
  call(5, 5);
  CHECK(rt->prepared == before + 2);
  CHECK(rt->shapesPrepared() == size_t(rt->prepared));

  // A call whose tensors are not the shape its values give, values out of
  // bounds, or none, is refused naming what is wrong.
  CHECK_THROWS_WITH(call(5, 6), Catch::Contains("argument 0 (input 'x')"));
  CHECK_THROWS_WITH(call(65, 65), Catch::Contains("outside its bounds 1..64"));
  ir::Tensor x(ir::DType::F32, {2, 3}), y(ir::DType::F32, {2, 3});
  DLTensor a[] = {x.dl(), y.dl()};
  const DLTensor *args[] = {&a[0], &a[1]};
  CHECK_THROWS_WITH(f->run(args), Catch::Contains("has 1 symbols, but the call gave 0 values"));
}

TEST_CASE("json and dnnl take symbolic regions: one artifact runs every size",
          "[json_plugin][dnnl_plugin][symbolic]") {
  ir::Module m = convModel();
  for (const std::string target : {"json", "dnnl"}) {
    INFO("target " << target);
    auto model = compileFor(m, target);
    // The conv, bias, relu, pool (and sigmoid) run in one plugin step that
    // takes the region's symbols.
    const runtime::Plan &plan = model->plan();
    size_t external = 0;
    for (const runtime::Step &s : plan.steps)
      if (s.kind == runtime::StepKind::External) {
        ++external;
        CHECK(s.symbols.size() == 7);
      }
    REQUIRE(external == 1);
    auto session = runtime::Session::create(model, {1});
    REQUIRE(session.ok());
    std::mt19937 rng{7};
    // Odd and even sizes, the bounds, and a size seen before (cached).
    for (auto [n, h, w] : {std::tuple{1, 6, 6}, {2, 17, 23}, {3, 40, 40}, {1, 31, 8},
                           {2, 17, 23}}) {
      INFO(n << "x3x" << h << "x" << w);
      std::vector<ir::Tensor> inputs{
          randomTensor(ir::Type::tensor(ir::DType::F32, {n, 3, h, w}), rng)};
      checkRun(**session, m, inputs);
    }
  }
}

TEST_CASE("a plugin that does not take symbolic dims keeps static regions only",
          "[symbolic]") {
  // ccompiler declares no TESSERA_CHECKER_SYMBOLIC_DIMS: the symbolic model
  // runs on the host, with the reason in the partition report.
  ir::Module m = convModel();
  auto model = compileFor(m, "ccompiler");
  for (const runtime::Step &s : model->plan().steps)
    CHECK(s.kind != runtime::StepKind::External);
  auto session = runtime::Session::create(model, {1});
  REQUIRE(session.ok());
  std::mt19937 rng{3};
  checkRun(**session, m, {randomTensor(ir::Type::tensor(ir::DType::F32, {2, 3, 9, 12}), rng)});
}

TEST_CASE("plugin bridge: symbolic dims in int attributes reach a plugin as -1 and a symbol",
          "[plugin_bridge][symbolic]") {
  // conv (stride 2) then a resize back to the input's size: resize2d's
  // 'size' holds H and W.
  auto dim = [](const char *name, int64_t lo, int64_t hi) {
    auto s = ir::namedSymbol(name, lo, hi);
    REQUIRE(s.ok());
    return *s;
  };
  const int64_t h = dim("H", 8, 64), w = dim("W", 8, 64);
  ir::Var x = ir::makeVar("x", ir::Type::tensor(ir::DType::F32, {1, 2, h, w}));
  std::mt19937 rng{2};
  ir::Expr c = ir::expectOk(ir::makeCall(
      "conv2d",
      {x, ir::makeConstant(randomTensor(ir::Type::tensor(ir::DType::F32, {2, 2, 3, 3}), rng))},
      attrs({{"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}}), "c"));
  ir::Expr up = ir::expectOk(ir::makeCall(
      "resize2d", {c}, attrs({{"size", Ints{h, w}}, {"mode", std::string("linear")}}), "up"));
  const auto &call = *up->as<ir::CallNode>();

  auto desc = bridge::OpDescHolder::fromCall(call);
  REQUIRE(desc.ok());
  sdk::OpDesc op = sdk::toOpDesc((*desc)->desc());
  CHECK(op.attrs.getInts("size") == Ints{-1, -1});
  REQUIRE(op.attrs.symbols().size() == 1);
  const std::vector<int32_t> sizeSymbols = op.attrs.symbols()[0].second;
  REQUIRE(sizeSymbols.size() == 2);
  CHECK(op.symbols[size_t(sizeSymbols[0])].name == "H");
  CHECK(op.symbols[size_t(sizeSymbols[1])].name == "W");
  // At the examples the attribute is the output's size.
  sdk::OpDesc ex = sdk::exampleOp(op);
  CHECK(ex.attrs.getInts("size") ==
        Ints{ex.outputs[0].shape[2], ex.outputs[0].shape[3]});
  CHECK(ex.attrs.symbols().empty());

  // In a region's graph: "attr_symbols", resolved per shape.
  ir::Module m("m");
  m.set("main", ir::makeFunction({x}, up));
  auto g = bridge::GraphHolder::fromFunction(m.find("main"), "resize_fn");
  REQUIRE(g.ok());
  CHECK((*g)->json().find("\"attr_symbols\":{\"size\":[") != std::string::npos);
  sdk::Graph graph = sdk::readGraph((*g)->json());
  // H = 30, W = 17, and the conv's output dims there (15 and 9).
  std::vector<int64_t> values;
  for (int64_t d : (*g)->symbolDims())
    values.push_back(d == h ? 30 : d == w ? 17 : 0);
  const sdk::Node &conv = graph.nodes[2];
  REQUIRE(conv.op == "conv2d");
  values[size_t(conv.outputs[0].symbolOf(2))] = 15;
  values[size_t(conv.outputs[0].symbolOf(3))] = 9;
  sdk::Graph at = sdk::resolveGraph(graph, values);
  const sdk::Node &resize = at.nodes.back();
  CHECK(resize.attrs.getInts("size") == Ints{30, 17});
  CHECK(resize.outputs[0].shape == Ints{1, 2, 30, 17});
  CHECK(sdk::writeGraph(sdk::readGraph((*g)->json())) == sdk::writeGraph(graph));
}
