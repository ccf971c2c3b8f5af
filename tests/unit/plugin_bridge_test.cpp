//===- tests/unit/plugin_bridge_test.cpp - IR to plugin ABI, kit machinery ===//
//
// The bridge: op descriptions (every attribute kind, dtypes, shapes, tuple
// outputs), graphs (IR -> tessera.graph JSON -> sdk::readGraph, constants as
// DLTensor views or as extra inputs, composites with bodies, errors), and
// outlining a pattern match. Then the conformance kit's machinery that needs
// no plugin: the sample catalogue, pattern instantiation, random data and
// the comparison. (The kit on real plugins runs as ctest plugin_check_*.)
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include "interp/interpreter.h"
#include "bridge/plugin_bridge.h"
#include "kit/kit.h"
#include "tessera/sdk/json_graph.hpp"
#include "tessera/c/dtype.h"

#include <cstring>
#include <set>

using namespace tessera;
using namespace tessera::ir;
using namespace tessera::bridge;

namespace {

Var input(Shape shape, std::string name = "x", DType dtype = DType::F32) {
  return makeVar(std::move(name), Type::tensor(dtype, std::move(shape)));
}
Expr constant(Shape shape, std::string name = {}, double start = 0.5) {
  Tensor t(DType::F32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i)
    t.setDouble(i, start + 0.25 * double(i));
  return makeConstant(std::move(t), std::move(name));
}
Expr call(std::string_view op, std::vector<Expr> args, Attrs attrs = {}, std::string name = {}) {
  return expectOk(makeCall(op, std::move(args), std::move(attrs), std::move(name)));
}

std::unique_ptr<OpDescHolder> descOf(const Expr &e) {
  auto h = OpDescHolder::fromCall(*e->as<CallNode>());
  if (!h.ok())
    FAIL(h.error().str());
  return std::move(h).value();
}

const tessera_attr_t &attrNamed(const tessera_op_desc_t &d, std::string_view name) {
  for (size_t i = 0; i < d.num_attrs; ++i)
    if (d.attrs[i]->name == name)
      return *d.attrs[i];
  FAIL("no attribute " << name);
  return *d.attrs[0];
}

std::vector<int64_t> shapeOf(const tessera_tensor_type_t &t) {
  return std::vector<int64_t>(t.shape, t.shape + t.ndim);
}

std::unique_ptr<GraphHolder> graphOf(const Function &fn, std::string symbol = "sym",
                                     uint64_t flags = 0) {
  auto g = GraphHolder::fromFunction(fn, std::move(symbol), flags);
  if (!g.ok())
    FAIL(g.error().str());
  return std::move(g).value();
}

std::string graphError(const Function &fn) {
  auto g = GraphHolder::fromFunction(fn, "sym");
  return g.ok() ? std::string() : g.error().str();
}

sdk::Graph readBack(const GraphHolder &g) {
  return sdk::readGraph(std::string_view(g.graph().json, g.graph().json_size));
}

bool sameType(const sdk::TensorType &t, DType dtype, Shape shape) {
  return sdk::dtypeName(t.dtype) == dtypeName(dtype) && t.shape == shape;
}

} // namespace

//===----------------------------------------------------------------------===//
// Op descriptions
//===----------------------------------------------------------------------===//

TEST_CASE("bridge: op description with every attribute kind", "[plugin_bridge]") {
  Expr x = input({1, 3, 4, 4});
  Expr r = call("resize2d", {x},
                {{"size", std::vector<int64_t>{8, 6}},
                 {"scales", std::vector<double>{2.0, 1.5}},
                 {"mode", std::string("linear")},
                 {"exclude_outside", true}},
                "up1");
  auto h = descOf(r);
  const tessera_op_desc_t &d = h->desc();
  CHECK(d.struct_size == sizeof(tessera_op_desc_t));
  CHECK(std::string(d.op) == "resize2d");
  CHECK(std::string(d.name) == "up1");
  // Every attribute of the schema, defaults included, sorted by name.
  REQUIRE(d.num_attrs == 9);
  for (size_t i = 1; i < d.num_attrs; ++i)
    CHECK(std::string(d.attrs[i - 1]->name) < std::string(d.attrs[i]->name));
  const auto &size = attrNamed(d, "size");
  CHECK(size.kind == TESSERA_ATTR_INTS);
  CHECK(std::vector<int64_t>(size.ints, size.ints + size.count) == std::vector<int64_t>{8, 6});
  const auto &scales = attrNamed(d, "scales");
  CHECK(scales.kind == TESSERA_ATTR_FLOATS);
  CHECK(std::vector<double>(scales.floats, scales.floats + scales.count) ==
        std::vector<double>{2.0, 1.5});
  const auto &roi = attrNamed(d, "roi");
  CHECK(roi.kind == TESSERA_ATTR_FLOATS);
  CHECK(roi.count == 0);
  CHECK(attrNamed(d, "mode").kind == TESSERA_ATTR_STRING);
  CHECK(std::string(attrNamed(d, "mode").s) == "linear");
  CHECK(std::string(attrNamed(d, "nearest_mode").s) == "round_prefer_floor");
  CHECK(attrNamed(d, "exclude_outside").kind == TESSERA_ATTR_BOOL);
  CHECK(attrNamed(d, "exclude_outside").b);
  CHECK(attrNamed(d, "cubic_coeff_a").kind == TESSERA_ATTR_FLOAT);
  CHECK(attrNamed(d, "cubic_coeff_a").f == -0.75);
  for (size_t i = 0; i < d.num_attrs; ++i)
    CHECK(d.attrs[i]->struct_size == sizeof(tessera_attr_t));

  REQUIRE(d.num_inputs == 1);
  CHECK(d.inputs[0]->struct_size == sizeof(tessera_tensor_type_t));
  CHECK(shapeOf(*d.inputs[0]) == std::vector<int64_t>{1, 3, 4, 4});
  REQUIRE(d.num_outputs == 1);
  CHECK(shapeOf(*d.outputs[0]) == std::vector<int64_t>{1, 3, 8, 6});
  CHECK(d.outputs[0]->dtype.code == kDLFloat);
  CHECK(d.outputs[0]->dtype.bits == 32);
  CHECK(d.outputs[0]->dtype.lanes == 1);

  // Ints through conv2d (int and int lists, after defaults).
  Expr conv =
      call("conv2d", {x, constant({2, 3, 3, 3})}, {{"strides", std::vector<int64_t>{2, 2}}});
  auto hc = descOf(conv);
  CHECK(attrNamed(hc->desc(), "groups").kind == TESSERA_ATTR_INT);
  CHECK(attrNamed(hc->desc(), "groups").i == 1);
  const auto &pads = attrNamed(hc->desc(), "pads");
  CHECK(std::vector<int64_t>(pads.ints, pads.ints + pads.count) ==
        std::vector<int64_t>{0, 0, 0, 0});
  CHECK(std::string(hc->desc().name).empty());
  CHECK(hc->desc().num_inputs == 2);
  CHECK(shapeOf(*hc->desc().inputs[1]) == std::vector<int64_t>{2, 3, 3, 3});
}

TEST_CASE("bridge: dtypes as DLPack sees them", "[plugin_bridge]") {
  struct Case {
    DType dtype;
    uint8_t code, bits;
  };
  const Case cases[] = {
      {DType::F32, kDLFloat, 32},   {DType::F16, kDLFloat, 16}, {DType::F64, kDLFloat, 64},
      {DType::BF16, kDLBfloat, 16}, {DType::I8, kDLInt, 8},     {DType::I16, kDLInt, 16},
      {DType::I32, kDLInt, 32},     {DType::I64, kDLInt, 64},   {DType::U8, kDLUInt, 8},
      {DType::U16, kDLUInt, 16},    {DType::U32, kDLUInt, 32},  {DType::U64, kDLUInt, 64},
      {DType::Bool, TESSERA_DL_BOOL, 8},
  };
  for (const Case &c : cases) {
    INFO(dtypeName(c.dtype));
    auto h = descOf(call("cast", {input({2}, "x")}, {{"dtype", c.dtype}}));
    const tessera_op_desc_t &d = h->desc();
    const auto &a = attrNamed(d, "dtype");
    CHECK(a.kind == TESSERA_ATTR_DTYPE);
    CHECK(a.dtype.code == c.code);
    CHECK(a.dtype.bits == c.bits);
    CHECK(a.dtype.lanes == 1);
    CHECK(d.outputs[0]->dtype.code == c.code);
    CHECK(d.outputs[0]->dtype.bits == c.bits);
    CHECK(sdk::dtypeName(d.outputs[0]->dtype) == std::string(dtypeName(c.dtype)));
  }
  // A scalar has no shape pointer.
  auto s = descOf(call("relu", {input({}, "s")}));
  CHECK(s->desc().inputs[0]->ndim == 0);
  CHECK(s->desc().inputs[0]->shape == nullptr);
}

TEST_CASE("bridge: tuple outputs and errors", "[plugin_bridge]") {
  Expr split = call("split", {input({6, 2})}, {{"sizes", std::vector<int64_t>{1, 2, 3}}});
  auto h = descOf(split);
  REQUIRE(h->desc().num_outputs == 3);
  CHECK(shapeOf(*h->desc().outputs[0]) == std::vector<int64_t>{1, 2});
  CHECK(shapeOf(*h->desc().outputs[2]) == std::vector<int64_t>{3, 2});

  Type fnType = Type::func({Type::tensor(DType::F32, {2})}, Type::tensor(DType::F32, {2}));
  Expr g = expectOk(makeGlobalCall("helper", fnType, {input({2})}, "h1"));
  auto err = OpDescHolder::fromCall(*g->as<CallNode>());
  REQUIRE_FALSE(err.ok());
  CHECK(err.error().str() == "'%h1' is a call of @helper, not of a core op");

  auto list = OpDescList::fromCalls({split, input({2})});
  REQUIRE_FALSE(list.ok());
  CHECK(list.error().str() == "'%x' is not a call");
}

//===----------------------------------------------------------------------===//
// Graphs
//===----------------------------------------------------------------------===//

TEST_CASE("bridge: function -> tessera.graph JSON -> sdk::readGraph", "[plugin_bridge]") {
  Var x = input({1, 3, 6, 6}, "x");
  Var y = input({1, 4, 4, 2}, "y");
  Expr w = constant({4, 3, 3, 3}, "w");
  Expr conv = call("conv2d", {x, w}, {}, "conv1");
  Expr relu = call("relu", {conv});
  Expr split = call("split", {relu}, {{"axis", int64_t(3)}, {"sizes", std::vector<int64_t>{2, 2}}});
  Expr second = expectOk(makeTupleGetItem(split, 1));
  Expr sum = call("add", {second, y});
  Expr cast = call("cast", {sum}, {{"dtype", DType::F16}});
  Function fn = makeFunction({x, y}, makeTuple({cast, second}));

  auto h = graphOf(fn, "tessera_main_json_0");
  const tessera_graph_t &g = h->graph();
  CHECK(g.struct_size == sizeof(tessera_graph_t));
  CHECK(std::string(g.symbol) == "tessera_main_json_0");
  CHECK(std::strlen(g.json) == g.json_size);

  sdk::Graph rg = readBack(*h);
  CHECK(rg.symbol == "tessera_main_json_0");
  // x, y, w, conv2d, relu, split, add, cast (the tuple get item is a ref).
  REQUIRE(rg.nodes.size() == 8);
  REQUIRE(h->numNodes() == 8);
  CHECK(rg.inputs == std::vector<int64_t>{0, 1});
  CHECK(rg.nodes[0].kind == sdk::Node::Kind::Input);
  CHECK(rg.nodes[0].name == "x");
  CHECK(sameType(rg.nodes[0].outputs[0], DType::F32, {1, 3, 6, 6}));
  CHECK(rg.nodes[1].name == "y");
  CHECK(rg.nodes[2].kind == sdk::Node::Kind::Const);
  CHECK(rg.nodes[2].name == "w");
  CHECK(rg.nodes[2].constant == 0);
  const sdk::Node &c = rg.nodes[3];
  CHECK(c.kind == sdk::Node::Kind::Op);
  CHECK(c.op == "conv2d");
  CHECK(c.name == "conv1");
  CHECK(c.inputs == std::vector<sdk::NodeRef>{{0, 0}, {2, 0}});
  CHECK(c.attrs.getInts("pads") == std::vector<int64_t>{0, 0, 0, 0});
  CHECK(c.attrs.getInt("groups") == 1);
  CHECK(sameType(c.outputs[0], DType::F32, {1, 4, 4, 4}));
  CHECK(rg.nodes[4].op == "relu");
  const sdk::Node &sp = rg.nodes[5];
  CHECK(sp.op == "split");
  REQUIRE(sp.outputs.size() == 2);
  CHECK(rg.nodes[6].op == "add");
  CHECK(rg.nodes[6].inputs == std::vector<sdk::NodeRef>{{5, 1}, {1, 0}});
  CHECK(rg.nodes[7].op == "cast");
  CHECK(sdk::dtypeName(rg.nodes[7].attrs.getDType("dtype")) == "f16");
  CHECK(sameType(rg.nodes[7].outputs[0], DType::F16, {1, 4, 4, 2}));
  // A tuple body: several outputs, one of them an output of the split.
  CHECK(rg.outputs == std::vector<sdk::NodeRef>{{7, 0}, {5, 1}});

  // Node index -> IR expression.
  CHECK(h->nodeExprs()[0] == Expr(x));
  CHECK(h->nodeExprs()[2] == w);
  CHECK(h->nodeExprs()[3] == conv);
  CHECK(h->nodeExprs()[5] == split);

  // The constant: a view of the IR tensor, not a copy.
  REQUIRE(g.num_constants == 1);
  CHECK(std::string(g.constant_names[0]) == "w");
  const DLTensor &dl = *g.constants[0];
  CHECK(dl.data == w->as<ConstantNode>()->data().bytes());
  CHECK(dl.ndim == 4);
  CHECK(std::vector<int64_t>(dl.shape, dl.shape + 4) == std::vector<int64_t>{4, 3, 3, 3});
  CHECK(dl.device.device_type == kDLCPU);
  CHECK(dl.strides == nullptr);
  CHECK(h->extraInputs().empty());
  CHECK_FALSE(h->constantsAsInputs());
}

TEST_CASE("bridge: constants shared, unnamed and as inputs", "[plugin_bridge]") {
  Var x = input({2, 3});
  Expr c1 = constant({2, 3});
  Expr c2 = constant({3}, "", 2.0);
  Expr a = call("add", {x, c1});
  Expr b = call("multiply", {a, c1});
  Expr d = call("bias_add", {b, c2});
  Function fn = makeFunction({x}, d);

  auto h = graphOf(fn);
  sdk::Graph rg = readBack(*h);
  REQUIRE(h->graph().num_constants == 2);
  CHECK(std::string(h->graph().constant_names[0]) == "const_0");
  CHECK(std::string(h->graph().constant_names[1]) == "const_1");
  CHECK(rg.nodes.size() == 6); // x, c1, add, multiply, c2, bias_add
  CHECK(rg.nodes[3].inputs == std::vector<sdk::NodeRef>{{2, 0}, {1, 0}});

  // Constants as trailing inputs, in order of first use.
  auto hi = graphOf(fn, "sym", TESSERA_CODEGEN_CONSTANTS_AS_INPUTS);
  CHECK(hi->constantsAsInputs());
  CHECK(hi->graph().num_constants == 0);
  sdk::Graph ri = readBack(*hi);
  CHECK(ri.inputs == std::vector<int64_t>{0, 1, 4});
  CHECK(ri.nodes[1].kind == sdk::Node::Kind::Input);
  CHECK(ri.nodes[1].name == "const_0");
  CHECK(ri.nodes[4].name == "const_1");
  REQUIRE(hi->extraInputs().size() == 2);
  CHECK(hi->extraInputs()[0].bitwiseEqual(c1->as<ConstantNode>()->data()));
  CHECK(hi->extraInputs()[1].bitwiseEqual(c2->as<ConstantNode>()->data()));
  CHECK(hi->nodeExprs()[4] == c2);
}

TEST_CASE("bridge: outlined composites become composite nodes", "[plugin_bridge]") {
  Var x = input({1, 3, 6, 6});
  Expr w = constant({4, 3, 3, 3}, "w");
  Expr b = constant({4, 1, 1}, "b");
  Expr conv = call("conv2d", {x, w}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  Expr add = call("add", {conv, b});
  Expr relu = call("relu", {add}, {}, "act");
  Expr after = call("sigmoid", {relu});

  auto pattern = parsePattern("conv_bias_relu", "relu?(add(conv2d(*, const), const))");
  REQUIRE(pattern.ok());
  auto m = matchPattern(*pattern, relu);
  REQUIRE(m);
  auto outlined = outlineComposite(*m, "acme.conv_bias_relu");
  REQUIRE(outlined.ok());
  const auto *oc = (*outlined)->as<CallNode>();
  REQUIRE(oc->calleeKind() == CallNode::CalleeKind::Local);
  CHECK(oc->name() == "act");
  CHECK(oc->type() == relu->type());
  CHECK(oc->args().size() == 1);
  CHECK(oc->args()[0] == Expr(x));
  const FunctionNode *body = oc->localFn();
  CHECK(body->attrs().getString("Composite") == "acme.conv_bias_relu");
  REQUIRE(body->params().size() == 1);
  // The outlined body is itself a match of the pattern.
  auto inner = matchPattern(*pattern, body->body());
  REQUIRE(inner);
  CHECK(inner->ops.size() == 3);
  CHECK(inner->constants.size() == 2);

  Expr rebuilt = call("sigmoid", {*outlined});
  Module original, outlinedModule;
  original.set("main", makeFunction({x}, after));
  outlinedModule.set("main", makeFunction({x}, rebuilt));
  Tensor in(DType::F32, {1, 3, 6, 6});
  for (int64_t i = 0; i < in.numel(); ++i)
    in.setDouble(i, std::sin(double(i)));
  auto r1 = interp::run(original, {in});
  auto r2 = interp::run(outlinedModule, {in});
  REQUIRE(r1.ok());
  REQUIRE(r2.ok());
  CHECK(r1->tensor.bitwiseEqual(r2->tensor));

  // In a graph: a composite node with the function as its body; the body's
  // constants index the graph's one constant list.
  auto h = graphOf(outlinedModule.find("main"));
  sdk::Graph rg = readBack(*h);
  REQUIRE(rg.nodes.size() == 3); // x, composite, sigmoid
  const sdk::Node &comp = rg.nodes[1];
  CHECK(comp.kind == sdk::Node::Kind::Composite);
  CHECK(comp.op == "acme.conv_bias_relu");
  CHECK(comp.name == "act");
  CHECK(comp.inputs == std::vector<sdk::NodeRef>{{0, 0}});
  CHECK(sameType(comp.outputs[0], DType::F32, {1, 4, 6, 6}));
  REQUIRE(comp.body);
  const sdk::Graph &bg = *comp.body;
  CHECK(bg.inputs == std::vector<int64_t>{0});
  REQUIRE(bg.nodes.size() == 6); // input, w, conv2d, b, add, relu
  CHECK(bg.nodes[1].kind == sdk::Node::Kind::Const);
  CHECK(bg.nodes[1].constant == 0);
  CHECK(bg.nodes[3].constant == 1);
  CHECK(bg.nodes[5].op == "relu");
  CHECK(bg.outputs == std::vector<sdk::NodeRef>{{5, 0}});
  CHECK(h->graph().num_constants == 2);
  CHECK(std::string(h->graph().constant_names[1]) == "b");
  CHECK(h->nodeExprs()[1] == *outlined);

  // Constants as inputs: the body gets them as extra inputs, fed from
  // trailing inputs of the graph.
  auto hi = graphOf(outlinedModule.find("main"), "sym", TESSERA_CODEGEN_CONSTANTS_AS_INPUTS);
  sdk::Graph ri = readBack(*hi);
  REQUIRE(ri.nodes.size() == 5); // x, w, b, composite, sigmoid
  CHECK(ri.inputs == std::vector<int64_t>{0, 1, 2});
  CHECK(ri.nodes[3].inputs == std::vector<sdk::NodeRef>{{0, 0}, {1, 0}, {2, 0}});
  const sdk::Graph &bi = *ri.nodes[3].body;
  CHECK(bi.inputs == std::vector<int64_t>{0, 1, 3});
  CHECK(bi.nodes[1].kind == sdk::Node::Kind::Input);
  CHECK(bi.nodes[1].name == "w");
  REQUIRE(hi->extraInputs().size() == 2);
  CHECK(hi->extraInputs()[0].bitwiseEqual(w->as<ConstantNode>()->data()));
}

TEST_CASE("bridge: what cannot go to a plugin", "[plugin_bridge]") {
  Var x = input({2});
  Var t = makeVar("t", Type::tuple({Type::tensor(DType::F32, {2}), Type::tensor(DType::F32, {2})}));
  CHECK(graphError(makeFunction({x, t}, call("relu", {x}))) ==
        "plugin graph 'sym': parameter '%t' has type (f32[2], f32[2]); plugin graphs take tensor "
        "inputs only");

  Type fnType = Type::func({Type::tensor(DType::F32, {2})}, Type::tensor(DType::F32, {2}));
  Expr g = expectOk(makeGlobalCall("helper", fnType, {x}, "h"));
  CHECK(graphError(makeFunction({x}, g)) ==
        "plugin graph 'sym': '%h' calls global function '@helper' (a plugin graph holds core "
        "ops, constants and composites only)");

  Var p = input({2}, "p");
  Function local = makeFunction({p}, call("relu", {p}));
  Expr lc = expectOk(makeLocalCall(local, {x}));
  CHECK(graphError(makeFunction({x}, lc)) ==
        "plugin graph 'sym': fn call calls a local function without a Composite attribute (only "
        "composites go to a plugin)");

  // Errors inside a composite body name the composite.
  Function comp = makeFunction({p}, expectOk(makeGlobalCall("helper", fnType, {p}, "inner")),
                               Attrs{{"Composite", std::string("acme.x")}});
  CHECK(graphError(makeFunction({x}, expectOk(makeLocalCall(comp, {x})))) ==
        "plugin graph 'sym': composite 'acme.x': '%inner' calls global function '@helper' (a "
        "plugin graph holds core ops, constants and composites only)");

  Function badName = makeFunction({p}, call("relu", {p}), Attrs{{"Composite", std::string("x")}});
  CHECK(graphError(makeFunction({x}, expectOk(makeLocalCall(badName, {x}, "c")))) ==
        "plugin graph 'sym': '%c' calls a composite named 'x', which is not "
        "'<plugin>.<pattern>'");

  // A function value that is not called.
  Expr fnValue = makeTuple({local, x});
  CHECK(graphError(makeFunction({x}, fnValue)) ==
        "plugin graph 'sym': a function value that is not called as a composite");
  // Nested tuples.
  CHECK(graphError(makeFunction({x}, makeTuple({makeTuple({x, x}), x}))) ==
        "plugin graph 'sym': unnamed node is a tuple where a tensor is needed (nested tuples "
        "are not supported)");
}

//===----------------------------------------------------------------------===//
// The conformance kit's machinery
//===----------------------------------------------------------------------===//

TEST_CASE("kit: every catalogue sample type-checks and runs", "[plugin_bridge][plugin_kit]") {
  std::vector<std::string> ops = kit::catalogueOps();
  // Everything the json plugin takes, and more.
  for (const char *op : {"add",
                         "subtract",
                         "multiply",
                         "divide",
                         "maximum",
                         "minimum",
                         "power",
                         "relu",
                         "leaky_relu",
                         "sigmoid",
                         "tanh",
                         "clip",
                         "hard_sigmoid",
                         "hard_swish",
                         "silu",
                         "mish",
                         "gelu",
                         "exp",
                         "log",
                         "sqrt",
                         "abs",
                         "neg",
                         "erf",
                         "reciprocal",
                         "floor",
                         "ceil",
                         "bias_add",
                         "dense",
                         "matmul",
                         "batch_matmul",
                         "conv2d",
                         "max_pool2d",
                         "avg_pool2d",
                         "global_avg_pool2d",
                         "global_max_pool2d",
                         "softmax",
                         "log_softmax",
                         "reshape",
                         "flatten",
                         "squeeze",
                         "unsqueeze",
                         "transpose",
                         "concat",
                         "batch_norm",
                         "layer_norm",
                         "split",
                         "reduce_mean"}) {
    INFO(op);
    CHECK(std::find(ops.begin(), ops.end(), op) != ops.end());
  }
  CHECK(kit::samplesFor("no_such_op").empty());
  CHECK(kit::samplesFor("logical_not").empty()); // bool only: no generic f32 samples

  for (const std::string &op : ops) {
    std::vector<kit::OpSample> samples = kit::samplesFor(op);
    std::set<std::string> labels;
    bool f32 = false, other = false;
    for (const kit::OpSample &s : samples) {
      INFO(s.label());
      CHECK(labels.insert(s.label()).second); // labels tell the cases apart
      auto kc = kit::buildOpCase(s, 1);
      REQUIRE(kc.ok());
      CHECK(kc->ops.size() == 1);
      CHECK(kc->label == s.label());
      Function main = kc->module.find("main");
      REQUIRE(kc->inputDomains.size() == main->params().size());
      DType d = s.args[0].type.dtype();
      (d == DType::F32 ? f32 : other) = true;
      std::mt19937_64 rng(7);
      std::vector<Tensor> inputs;
      for (size_t i = 0; i < main->params().size(); ++i)
        inputs.push_back(kit::randomTensor(main->params()[i]->type(), kc->inputDomains[i], rng));
      auto r = interp::run(kc->module, inputs);
      REQUIRE(r.ok());
      // The domains keep the reference finite (log, sqrt, divide, batch_norm).
      for (const Tensor &t : r->flatten())
        for (int64_t i = 0; i < t.numel(); ++i)
          REQUIRE(std::isfinite(t.getDouble(i)));
    }
    INFO(op);
    CHECK(f32);
    if (op != "split" && op != "slice" && op != "pad" && op != "cast" && op != "argmax" &&
        op != "argmin" && op != "layer_norm" && !op.starts_with("reduce_") && op != "mod" &&
        op != "lstm" && op != "gru" && op != "rnn") // f32 only
      CHECK(other); // a dtype other than f32, so that declines are exercised
  }

  auto conv = kit::samplesFor("conv2d");
  CHECK(conv.size() >= 10);
  CHECK(conv[1].label() == "conv2d pads=[1,1,1,1] strides=[2,2] f32[1,3,8,8] const f32[8,3,3,3]");
}

TEST_CASE("kit: pattern instantiation produces graphs the pattern matches",
          "[plugin_bridge][plugin_kit]") {
  struct Case {
    const char *text;
    size_t variants;
  };
  const std::string act = "relu|leaky_relu|clip|sigmoid|tanh|hard_swish|gelu";
  const std::vector<std::pair<std::string, size_t>> cases = {
      {act + "?(bias_add|add(conv2d(*, const), const))", 16},
      {act + "(conv2d(*, const))", 7},
      {act + "?(bias_add|add(dense(*, const), const))", 16},
      {"relu?(add(conv2d[groups=1](*, const), const))", 2},
      {"relu(add?(conv2d[groups!=1](*, const), const))", 2},
      {"relu|clip?(bias_add(dense(*, const), const))", 3},
      {"sigmoid(bias_add(*, *))|tanh(add(*, const))", 2},
      {"multiply(relu(*), *)", 1},
      {"max_pool2d(relu(batch_norm(conv2d(*, const), const, const, const, const)))", 1},
      {"softmax[axis=1](matmul(*, *))", 1},
      {"concat(relu(*), sigmoid(*), const)", 1},
      {"gelu[approximate=tanh](batch_matmul[transpose_b=true](*, const))", 1},
      {"avg_pool2d[ceil_mode!=false](leaky_relu[alpha=0.2](*))", 1},
  };
  for (const auto &[text, count] : cases) {
    INFO(text);
    auto p = parsePattern("p", text);
    REQUIRE(p.ok());
    std::vector<kit::PatternVariant> vs = kit::instantiatePattern(*p, "acme", 3);
    CHECK(vs.size() == count);
    std::set<std::string> labels;
    for (const kit::PatternVariant &v : vs) {
      INFO(v.label << ": " << v.error);
      REQUIRE(v.kase);
      CHECK(labels.insert(v.label).second);
      const kit::KitCase &kc = *v.kase;
      CHECK(kc.pattern == "p");
      Function main = kc.module.find("main");
      const auto *c = main->body()->as<CallNode>();
      REQUIRE(c->calleeKind() == CallNode::CalleeKind::Local);
      CHECK(c->localFn()->attrs().getString("Composite") == "acme.p");
      // The composite's body is a match of the pattern with the same ops.
      auto m = matchPattern(*p, c->localFn()->body());
      REQUIRE(m);
      CHECK(m->ops.size() == kc.ops.size());
      CHECK(m->inputs.size() == main->params().size());
      // It runs, and goes through the bridge.
      std::mt19937_64 rng(5);
      std::vector<Tensor> inputs;
      for (size_t i = 0; i < main->params().size(); ++i)
        inputs.push_back(kit::randomTensor(main->params()[i]->type(), kc.inputDomains[i], rng));
      REQUIRE(interp::run(kc.module, inputs).ok());
      REQUIRE(GraphHolder::fromFunction(main, "sym").ok());
      REQUIRE(OpDescList::fromCalls(kc.ops).ok());
    }
  }
  // The variants of the json plugin's conv pattern, in order.
  auto p = parsePattern("conv2d_bias_act", act + "?(bias_add|add(conv2d(*, const), const))");
  auto vs = kit::instantiatePattern(*p, "json", 3);
  CHECK(vs[0].label == "pattern conv2d_bias_act: relu(bias_add(conv2d(*, const), const)) "
                       "f32[1,3,8,8]");
  CHECK(vs[15].label == "pattern conv2d_bias_act: add(conv2d(*, const), const) f32[1,3,8,8]");
  // The constant operand of an add after a conv is per channel.
  const auto &kc = *vs[1].kase;
  CHECK(kc.ops.size() == 3);
  CHECK(kc.ops[1]->as<CallNode>()->args()[1]->type().shape() == Shape{8, 1, 1});
  // A depthwise conv satisfies groups != 1.
  auto dw = parsePattern("dw", "relu(conv2d[groups!=1](*, const))");
  auto dv = kit::instantiatePattern(*dw, "acme", 3);
  REQUIRE(dv.size() == 1);
  CHECK(dv[0].kase->ops[0]->as<CallNode>()->attrs().getInt("groups") == 3);
  // A variant of one op is no composite (merge-composite leaves lone ops to
  // the checkers): an all-optional pattern yields only its longer forms.
  auto lone = parsePattern("lone", "relu?(conv2d(*, const))");
  auto lv = kit::instantiatePattern(*lone, "acme", 3);
  REQUIRE(lv.size() == 1);
  CHECK(lv[0].label == "pattern lone: relu(conv2d(*, const)) f32[1,3,8,8]");
  CHECK(kit::instantiatePattern(*parsePattern("one", "conv2d(*, const)"), "acme", 3).empty());

  // An op without samples is reported per variant, not fatal.
  auto none = parsePattern("n", "relu(logical_not(*))");
  REQUIRE(none.ok());
  auto nv = kit::instantiatePattern(*none, "acme", 3);
  REQUIRE(nv.size() == 1);
  CHECK_FALSE(nv[0].kase);
  CHECK(nv[0].error ==
        "cannot instantiate: no samples for op 'logical_not' (needed to instantiate the pattern)");
}

TEST_CASE("kit: random data and comparison", "[plugin_bridge][plugin_kit]") {
  std::mt19937_64 rng(1);
  Type t = Type::tensor(DType::F32, {1000});
  Tensor pos = kit::randomTensor(t, kit::Domain::Positive, rng);
  Tensor nz = kit::randomTensor(t, kit::Domain::NonZero, rng);
  Tensor any = kit::randomTensor(t, kit::Domain::Any, rng);
  for (int64_t i = 0; i < 1000; ++i) {
    REQUIRE(pos.getDouble(i) >= 0.5);
    REQUIRE(std::abs(nz.getDouble(i)) >= 0.5);
    REQUIRE(std::abs(any.getDouble(i)) <= 1.0);
  }
  Tensor ints = kit::randomTensor(Type::tensor(DType::I32, {100}), kit::Domain::NonZero, rng);
  for (int64_t i = 0; i < 100; ++i)
    REQUIRE(ints.getInt(i) != 0);
  // Deterministic from the seed.
  std::mt19937_64 a(9), b(9);
  CHECK(kit::randomTensor(t, kit::Domain::Any, a)
            .bitwiseEqual(kit::randomTensor(t, kit::Domain::Any, b)));

  using test::f32;
  CHECK(kit::compareTensors(f32({3}, {1.0, 2.0, 3.0}), f32({3}, {1.0, 2.0, 3.0})).empty());
  // f32: |got - want| <= 1e-5 + 1e-4 |want|.
  CHECK(kit::compareTensors(f32({2}, {1000.09, 0.0}), f32({2}, {1000.0, 0.000009})).empty());
  CHECK(kit::compareTensors(f32({2}, {1000.2, 0.0}), f32({2}, {1000.0, 0.0})) ==
        "1 of 2 elements differ, first at [0]: got 1000.2, want 1000");
  CHECK(kit::compareTensors(f32({2, 2}, {0, 0, 0, 1}), f32({2, 2}, {0, 0, 0, 0})) ==
        "1 of 4 elements differ, first at [1, 1]: got 1, want 0");
  double nan = std::numeric_limits<double>::quiet_NaN();
  double inf = std::numeric_limits<double>::infinity();
  CHECK(kit::compareTensors(f32({2}, {nan, inf}), f32({2}, {nan, inf})).empty());
  CHECK(kit::compareTensors(f32({1}, {nan}), f32({1}, {0.5})) ==
        "1 of 1 elements differ, first at [0]: got nan, want 0.5");
  CHECK(kit::compareTensors(f32({1}, {inf}), f32({1}, {-inf})) ==
        "1 of 1 elements differ, first at [0]: got inf, want -inf");
  CHECK(kit::compareTensors(f32({2}, {1, 2}), f32({1, 2}, {1, 2})) == "got f32[2], want f32[1, 2]");
  // Integers are exact; f16 has its own tolerance.
  Tensor i1 = Tensor::fromInts(DType::I32, {2}, std::vector<int64_t>{1, 2});
  Tensor i2 = Tensor::fromInts(DType::I32, {2}, std::vector<int64_t>{1, 3});
  CHECK(kit::compareTensors(i1, i2) == "1 of 2 elements differ, first at [1]: got 2, want 3");
  Tensor h1 = Tensor::fromDoubles(DType::F16, {1}, std::vector<double>{1.0});
  Tensor h2 = Tensor::fromDoubles(DType::F16, {1}, std::vector<double>{1.005});
  CHECK(kit::compareTensors(h1, h2).empty());
}
