//===- tests/unit/dnnl_plugin_test.cpp - The dnnl (oneDNN) plugin ---------===//
//
// The dnnl plugin (plugins/dnnl) through its C ABI only: the built .so is
// dlopen'ed and queried as the core does; graphs written with GraphBuilder
// (tessera.graph JSON and core IR at once) are compiled, run, saved, loaded
// through the "dnnl" module factory and run again, and every result is
// compared with the core's reference interpreter (rtol 1e-4, atol 1e-5;
// deeper blocks, whose sums run in f32 in oneDNN and in double in the
// reference, rtol 1e-4, atol 1e-4). Also: exact decline reasons, concurrent
// calls, corrupted saved bytes.
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include "interp/interpreter.h"
#include "ir/module.h"
#include "tessera/c/plugin.h"
#include "tessera/sdk/json_graph.hpp"

#include <dlfcn.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <set>
#include <thread>

#ifndef TESSERA_DNNL_PLUGIN
#error "TESSERA_DNNL_PLUGIN (the path of libtessera_dnnl.so) is set by plugins/dnnl/CMakeLists.txt"
#endif

namespace {

using namespace tessera;
using test::requireClose;

constexpr double kRtol = 1e-4, kAtol = 1e-5;
const DLDataType kF32{kDLFloat, 32, 1};

//===----------------------------------------------------------------------===//
// The plugin, loaded as the core loads it
//===----------------------------------------------------------------------===//

const tessera_plugin_t &plugin() {
  static const tessera_plugin_t *desc = [] {
    void *handle = dlopen(TESSERA_DNNL_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    INFO("dlopen: " << (handle ? "" : dlerror()));
    REQUIRE(handle);
    auto query =
        reinterpret_cast<tessera_plugin_query_fn>(dlsym(handle, TESSERA_PLUGIN_ENTRY_SYMBOL));
    REQUIRE(query);
    static const tessera_host_t host{sizeof(tessera_host_t),
                                     TESSERA_PLUGIN_ABI_MAJOR,
                                     TESSERA_PLUGIN_ABI_MINOR,
                                     "0.1.0",
                                     nullptr,
                                     nullptr};
    const tessera_plugin_t *d = nullptr;
    REQUIRE(query(&host, &d) == nullptr);
    REQUIRE(d);
    return d;
  }();
  return *desc;
}

/// The message of a status ("" for success); releases it.
std::string take(tessera_plugin_status_t *s, tessera_status_code_t *code = nullptr) {
  if (!s)
    return "";
  std::string m = s->message;
  if (code)
    *code = s->code;
  s->release(s);
  return m;
}

/// A module owned by the test.
using ModulePtr = std::unique_ptr<tessera_module_t, void (*)(tessera_module_t *)>;
void destroyModule(tessera_module_t *m) {
  if (m)
    m->destroy(m->self);
}

bool appendToString(void *sink, const void *data, size_t size) {
  static_cast<std::string *>(sink)->append(static_cast<const char *>(data), size);
  return true;
}

std::string saveModule(tessera_module_t *m) {
  std::string bytes;
  REQUIRE(take(m->save(m->self, &appendToString, &bytes)) == "");
  return bytes;
}

/// Loads saved bytes through the "dnnl" factory; the error message or "".
std::string loadModule(std::string_view bytes, ModulePtr &out) {
  const tessera_module_factory_t &f = *plugin().module_factories[0];
  tessera_module_t *m = nullptr;
  std::string err = take(f.load(plugin().state, bytes.data(), bytes.size(), &m));
  out = ModulePtr(m, destroyModule);
  return err;
}

//===----------------------------------------------------------------------===//
// GraphBuilder: one computation as tessera.graph JSON and as core IR
//===----------------------------------------------------------------------===//

sdk::TensorType sdkType(const ir::Type &t) {
  sdk::TensorType out;
  out.dtype = *sdk::dtypeFromName(std::string(ir::dtypeName(t.dtype())));
  out.shape = t.shape();
  return out;
}

sdk::Attrs sdkAttrs(const ir::Attrs &attrs) {
  sdk::Attrs out;
  for (const auto &[name, v] : attrs)
    std::visit(
        [&, &name = name](const auto &x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, ir::DType>)
            out.set(name, *sdk::dtypeFromName(std::string(ir::dtypeName(x))));
          else
            out.set(name, x);
        },
        v);
  return out;
}

class GraphBuilder {
public:
  explicit GraphBuilder(std::string symbol, uint32_t seed = 1) : rng_(seed) {
    g_.symbol = std::move(symbol);
    root_ = this;
  }

  /// A function input with uniform random values in [lo, hi).
  int64_t input(const std::string &name, ir::Shape shape, double lo = -1, double hi = 1) {
    ir::Tensor t = random(shape, lo, hi);
    ir::Var v = ir::makeVar(name, ir::Type::tensor(ir::DType::F32, shape));
    params_.push_back(v);
    inputValues_.push_back(t);
    g_.inputs.push_back(int64_t(g_.nodes.size()));
    return addNode(sdk::Node::Kind::Input, name, "", {}, v->type(), v);
  }

  /// A constant with uniform random values in [lo, hi).
  int64_t constant(const std::string &name, ir::Shape shape, double lo = -1, double hi = 1) {
    ir::Tensor t = root_->random(shape, lo, hi);
    int64_t index = int64_t(root_->constants_.size());
    root_->constants_.push_back(t);
    root_->constantNames_.push_back(name);
    int64_t n = addNode(sdk::Node::Kind::Const, name, "", {}, t.type(), ir::makeConstant(t));
    g_.nodes.back().constant = index;
    return n;
  }

  /// A core op on earlier nodes; its type and defaulted attributes come from
  /// the core (as the core's partitioner would write them).
  int64_t op(const std::string &opName, std::vector<int64_t> args, ir::Attrs attrs = {}) {
    std::vector<ir::Expr> exprs;
    for (int64_t a : args)
      exprs.push_back(exprs_[size_t(a)]);
    auto call = ir::makeCall(opName, exprs, std::move(attrs));
    INFO(opName << ": " << (call.ok() ? "" : call.error().str()));
    REQUIRE(call.ok());
    int64_t n = addNode(sdk::Node::Kind::Op, opName + "_" + std::to_string(g_.nodes.size()), opName,
                        args, (*call)->type(), *call);
    g_.nodes.back().attrs = sdkAttrs((*call)->as<ir::CallNode>()->attrs());
    return n;
  }

  /// A composite node "dnnl.<pattern>" whose body `makeBody` builds from the
  /// body's inputs (bound to `args`); returns the body's result.
  int64_t composite(const std::string &opName, std::vector<int64_t> args,
                    const std::function<int64_t(GraphBuilder &, std::vector<int64_t>)> &makeBody) {
    GraphBuilder body(root_);
    std::vector<int64_t> params;
    for (size_t i = 0; i < args.size(); ++i) {
      body.g_.inputs.push_back(int64_t(body.g_.nodes.size()));
      params.push_back(body.addNode(sdk::Node::Kind::Input, "p" + std::to_string(i), "", {},
                                    types_[size_t(args[i])], exprs_[size_t(args[i])]));
    }
    int64_t result = makeBody(body, params);
    body.output(result);
    int64_t n = addNode(sdk::Node::Kind::Composite, "fused_" + std::to_string(g_.nodes.size()),
                        opName, args, body.types_[size_t(result)], body.exprs_[size_t(result)]);
    g_.nodes.back().body = std::make_shared<sdk::Graph>(body.g_);
    return n;
  }

  void output(int64_t node) {
    g_.outputs.push_back({node, 0});
    outputs_.push_back(exprs_[size_t(node)]);
  }

  const sdk::Graph &graph() const { return g_; }
  std::string json() const { return sdk::writeGraph(g_); }
  const std::vector<ir::Tensor> &inputs() const { return inputValues_; }
  const std::vector<ir::Tensor> &constants() const { return constants_; }
  const std::vector<std::string> &constantNames() const { return constantNames_; }
  std::vector<ir::Shape> outputShapes() const {
    std::vector<ir::Shape> s;
    for (const auto &e : outputs_)
      s.push_back(e->type().shape());
    return s;
  }

  /// The reference interpreter's results.
  std::vector<ir::Tensor> reference() const {
    ir::Expr body = outputs_.size() == 1 ? outputs_[0] : ir::makeTuple(outputs_);
    ir::Module m;
    m.set("main", ir::makeFunction(params_, body));
    auto v = interp::run(m, inputValues_);
    INFO((v.ok() ? "" : v.error().str()));
    REQUIRE(v.ok());
    return v->flatten();
  }

private:
  explicit GraphBuilder(GraphBuilder *root) : root_(root) {}

  ir::Tensor random(const ir::Shape &shape, double lo, double hi) {
    std::uniform_real_distribution<double> dist(lo, hi);
    std::vector<double> v(size_t(ir::Type::tensor(ir::DType::F32, shape).numElements()));
    for (double &x : v)
      x = dist(rng_);
    return ir::Tensor::fromDoubles(ir::DType::F32, shape, v);
  }

  int64_t addNode(sdk::Node::Kind kind, const std::string &name, const std::string &op,
                  const std::vector<int64_t> &args, const ir::Type &type, ir::Expr expr) {
    sdk::Node n;
    n.kind = kind;
    n.name = name;
    n.op = op;
    for (int64_t a : args)
      n.inputs.push_back({a, 0});
    n.outputs.push_back(sdkType(type));
    g_.nodes.push_back(std::move(n));
    types_.push_back(type);
    exprs_.push_back(std::move(expr));
    return int64_t(g_.nodes.size() - 1);
  }

  GraphBuilder *root_;
  std::mt19937 rng_;
  sdk::Graph g_;
  std::vector<ir::Type> types_;
  std::vector<ir::Expr> exprs_;
  std::vector<ir::Var> params_;
  std::vector<ir::Tensor> inputValues_;
  std::vector<ir::Tensor> constants_;
  std::vector<std::string> constantNames_;
  std::vector<ir::Expr> outputs_;
};

//===----------------------------------------------------------------------===//
// Compiling and calling through the C ABI
//===----------------------------------------------------------------------===//

/// Codegen of the builder's graph; the error message or "".
std::string compileGraph(const GraphBuilder &b, ModulePtr &out, std::string json = {}) {
  if (json.empty())
    json = b.json();
  // Codegen borrows the constants: hand it copies and scribble over them
  // afterwards, so that a module that kept the views computes garbage.
  std::vector<ir::Tensor> copies;
  for (const ir::Tensor &t : b.constants())
    copies.push_back(ir::Tensor::copyOf(t.dl()));
  std::vector<DLTensor> dls;
  for (const ir::Tensor &t : copies)
    dls.push_back(t.dl());
  std::vector<const DLTensor *> ptrs;
  std::vector<const char *> names;
  for (size_t i = 0; i < dls.size(); ++i) {
    ptrs.push_back(&dls[i]);
    names.push_back(b.constantNames()[i].c_str());
  }
  tessera_graph_t g{sizeof(tessera_graph_t),
                    b.graph().symbol.c_str(),
                    json.c_str(),
                    json.size(),
                    names.data(),
                    ptrs.data(),
                    ptrs.size()};
  tessera_module_t *m = nullptr;
  std::string err = take(plugin().codegen->compile(plugin().state, &g, &m));
  out = ModulePtr(m, destroyModule);
  for (ir::Tensor &t : copies)
    for (int64_t i = 0; i < t.numel(); ++i)
      t.setDouble(i, std::numeric_limits<double>::quiet_NaN());
  return err;
}

tessera_function_t getFunction(tessera_module_t *m, const std::string &symbol) {
  tessera_function_t fn{};
  fn.struct_size = sizeof fn;
  REQUIRE(take(m->get_function(m->self, symbol.c_str(), &fn)) == "");
  return fn;
}

/// Calls `symbol` with DLTensors of `inputs` and outputs of `outShapes`
/// (pre-filled with NaN, so that an element the plugin does not write
/// shows); returns the outputs.
std::vector<ir::Tensor> callFunction(tessera_module_t *m, const std::string &symbol,
                                     const std::vector<ir::Tensor> &inputs,
                                     const std::vector<ir::Shape> &outShapes) {
  tessera_function_t fn = getFunction(m, symbol);
  std::vector<ir::Tensor> outs;
  for (const ir::Shape &s : outShapes) {
    outs.emplace_back(ir::DType::F32, s);
    for (int64_t i = 0; i < outs.back().numel(); ++i)
      outs.back().setDouble(i, std::numeric_limits<double>::quiet_NaN());
  }
  std::vector<DLTensor> dls;
  for (const ir::Tensor &t : inputs)
    dls.push_back(t.dl());
  for (const ir::Tensor &t : outs)
    dls.push_back(t.dl());
  std::vector<const DLTensor *> args;
  for (const DLTensor &t : dls)
    args.push_back(&t);
  REQUIRE(take(fn.call(fn.self, args.data(), args.size())) == "");
  return outs;
}

void requireAllClose(const std::vector<ir::Tensor> &got, const std::vector<ir::Tensor> &want,
                     double atol = kAtol) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("output " << i);
    requireClose(got[i], want[i], kRtol, atol);
  }
}

/// Compiles, runs and compares with the reference; then saves, loads the
/// bytes through the module factory, runs and compares again.
void checkAgainstReference(const GraphBuilder &b, double atol = kAtol) {
  std::vector<ir::Tensor> want = b.reference();
  ModulePtr m(nullptr, destroyModule);
  REQUIRE(compileGraph(b, m) == "");
  REQUIRE(std::string(m->type_key) == "dnnl");
  const std::string &symbol = b.graph().symbol;
  {
    INFO("compiled module");
    requireAllClose(callFunction(m.get(), symbol, b.inputs(), b.outputShapes()), want, atol);
  }
  std::string bytes = saveModule(m.get());
  m.reset();
  ModulePtr loaded(nullptr, destroyModule);
  REQUIRE(loadModule(bytes, loaded) == "");
  {
    INFO("loaded module");
    requireAllClose(callFunction(loaded.get(), symbol, b.inputs(), b.outputShapes()), want, atol);
  }
  REQUIRE(saveModule(loaded.get()) == bytes); // saving is deterministic
}

ir::AttrValue ints(std::vector<int64_t> v) {
  return ir::AttrValue(std::move(v));
}

//===----------------------------------------------------------------------===//
// The checker, through the C ABI
//===----------------------------------------------------------------------===//

struct CheckAnswer {
  bool ok;
  std::string reason;
};

/// check_op on op `op` with f32 (or `dtype`) inputs and output.
CheckAnswer checkOp(const std::string &op, const std::vector<ir::Shape> &inShapes,
                    const ir::Shape &outShape, const std::vector<tessera_attr_t> &attrs = {},
                    DLDataType dtype = kF32) {
  std::vector<tessera_tensor_type_t> types;
  for (const ir::Shape &s : inShapes)
    types.push_back({sizeof(tessera_tensor_type_t), dtype, int32_t(s.size()), s.data()});
  types.push_back(
      {sizeof(tessera_tensor_type_t), dtype, int32_t(outShape.size()), outShape.data()});
  std::vector<const tessera_tensor_type_t *> ins;
  for (size_t i = 0; i < inShapes.size(); ++i)
    ins.push_back(&types[i]);
  const tessera_tensor_type_t *outs[] = {&types.back()};
  std::vector<const tessera_attr_t *> attrPtrs;
  for (const tessera_attr_t &a : attrs)
    attrPtrs.push_back(&a);
  tessera_op_desc_t d{sizeof(tessera_op_desc_t),
                      op.c_str(),
                      "n1",
                      attrPtrs.data(),
                      attrPtrs.size(),
                      ins.data(),
                      ins.size(),
                      outs,
                      1};
  char reason[256] = "unset";
  bool ok = plugin().checker->check_op(plugin().state, &d, reason, sizeof reason);
  return {ok, ok ? "" : reason};
}

tessera_attr_t stringAttr(const char *name, const char *value) {
  tessera_attr_t a{};
  a.struct_size = sizeof a;
  a.name = name;
  a.kind = TESSERA_ATTR_STRING;
  a.s = value;
  return a;
}

tessera_attr_t intsAttr(const char *name, const std::vector<int64_t> &v) {
  tessera_attr_t a{};
  a.struct_size = sizeof a;
  a.name = name;
  a.kind = TESSERA_ATTR_INTS;
  a.ints = v.data();
  a.count = v.size();
  return a;
}

} // namespace

TEST_CASE("dnnl plugin: the descriptor", "[dnnl_plugin]") {
  const tessera_plugin_t &p = plugin();
  CHECK(std::string(p.name) == "dnnl");
  REQUIRE(p.num_module_factories == 1);
  CHECK(std::string(p.module_factories[0]->type_key) == "dnnl");
  std::set<std::string> ops;
  for (const char *const *op = p.checker->ops; *op; ++op)
    ops.insert(*op);
  for (const char *op :
       {"conv2d", "conv2d_transpose", "dense", "matmul", "batch_matmul", "batch_norm", "max_pool2d",
        "avg_pool2d", "global_avg_pool2d", "relu", "hard_swish", "hard_sigmoid", "add", "multiply",
        "softmax", "layer_norm", "concat"})
    CHECK(ops.count(op) == 1);
  CHECK(ops.count("erf") == 0); // oneDNN 2.6 has no erf eltwise
}

TEST_CASE("dnnl plugin: decline reasons name the plugin, the op and the cause", "[dnnl_plugin]") {
  const DLDataType f16{kDLFloat, 16, 1};
  CHECK(checkOp("conv2d", {{1, 3, 8, 8}, {8, 3, 3, 3}}, {1, 8, 6, 6}, {}, f16).reason ==
        "dnnl: conv2d: only f32, got f16");
  CHECK(checkOp("add", {{3, 1}, {1, 4}}, {3, 4}).reason ==
        "dnnl: add: oneDNN broadcasts only the second operand, and [3, 1] with [1, 4] "
        "broadcasts both");
  CHECK(checkOp("divide", {{4}, {2, 4}}, {2, 4}).reason ==
        "dnnl: divide: oneDNN broadcasts only the second operand, and [4] with [2, 4] "
        "broadcasts the first");
  CHECK(checkOp("subtract", {{4}, {2, 4}}, {2, 4}).ok); // swapped and negated
  CHECK(checkOp("gelu", {{2, 3}}, {2, 3}, {stringAttr("approximate", "fast")}).reason ==
        "dnnl: gelu: attribute 'approximate' = \"fast\" unsupported (\"none\" or \"tanh\")");
  tessera_attr_t ceil{};
  ceil.struct_size = sizeof ceil;
  ceil.name = "ceil_mode";
  ceil.kind = TESSERA_ATTR_BOOL;
  ceil.b = true;
  tessera_attr_t include = ceil;
  include.name = "count_include_pad";
  std::vector<int64_t> pool{3, 3}, strides{2, 2}, pads{1, 1, 1, 1};
  CHECK(checkOp("avg_pool2d", {{1, 2, 6, 6}}, {1, 2, 4, 4},
                {ceil, include, intsAttr("pool_size", pool), intsAttr("strides", strides),
                 intsAttr("pads", pads)})
            .reason == "dnnl: avg_pool2d: ceil_mode with count_include_pad unsupported when the "
                       "last window passes the padding");
  CHECK(checkOp("batch_norm", {{2, 3, 4}, {4}, {4}, {4}, {4}}, {2, 3, 4}, {[] {
                  tessera_attr_t a{};
                  a.struct_size = sizeof a;
                  a.name = "axis";
                  a.kind = TESSERA_ATTR_INT;
                  a.i = 2;
                  return a;
                }()})
            .reason == "dnnl: batch_norm: attribute 'axis' = 2 unsupported (oneDNN normalizes "
                       "along axis 1)");
  CHECK(checkOp("resize2d", {{1, 2, 4, 4}}, {1, 2, 8, 8}, {intsAttr("size", {8, 8})}).reason ==
        "dnnl: resize2d: nearest_mode \"round_prefer_floor\" unsupported (oneDNN rounds "
        "half_pixel ties up: round_prefer_ceil)");
  CHECK(checkOp("conv2d", {{1, 3, 8, 8}, {8, 3, 3, 3}}, {1, 8, 6, 6}).ok);
}

TEST_CASE("dnnl plugin: conv2d + bias + relu + residual add, fused", "[dnnl_plugin]") {
  auto convBlock = [](GraphBuilder &g, std::vector<int64_t> p) {
    int64_t c = g.op("conv2d", {p[0], p[1]}, {{"pads", ints({1, 1, 1, 1})}});
    return g.op("relu", {g.op("add", {g.op("bias_add", {c, p[2]}), p[3]})});
  };
  SECTION("the residual is a function input (copied into the destination)") {
    GraphBuilder b("tessera_residual_in");
    int64_t x = b.input("x", {1, 16, 8, 8}), r = b.input("r", {1, 16, 8, 8});
    b.output(b.composite("dnnl.conv2d_bias_add_relu",
                         {x, b.constant("w", {16, 16, 3, 3}, -0.2, 0.2), b.constant("b", {16}), r},
                         convBlock));
    checkAgainstReference(b);
  }
  SECTION("the residual is an intermediate (summed in place)") {
    GraphBuilder b("tessera_residual_mid");
    int64_t x = b.input("x", {1, 16, 8, 8});
    int64_t id = b.op("relu", {b.op("conv2d", {x, b.constant("w0", {16, 16, 1, 1}, -0.3, 0.3)})});
    int64_t t = b.op("relu", {b.op("conv2d", {id, b.constant("w1", {16, 16, 1, 1}, -0.3, 0.3)})});
    b.output(b.composite("dnnl.conv2d_bias_add_relu",
                         {t, b.constant("w", {16, 16, 3, 3}, -0.2, 0.2), b.constant("b", {16}), id},
                         convBlock));
  }
  SECTION("the residual is also the convolution's input (copied, not in place)") {
    GraphBuilder b("tessera_residual_self");
    int64_t x = b.input("x", {1, 16, 8, 8});
    int64_t id = b.op("relu", {b.op("conv2d", {x, b.constant("w0", {16, 16, 1, 1}, -0.3, 0.3)})});
    b.output(b.composite(
        "dnnl.conv2d_bias_add_relu",
        {id, b.constant("w", {16, 16, 3, 3}, -0.2, 0.2), b.constant("b", {16}), id}, convBlock));
    checkAgainstReference(b);
  }
}

TEST_CASE("dnnl plugin: depthwise, strided and dilated convolutions", "[dnnl_plugin]") {
  GraphBuilder b("tessera_depthwise");
  int64_t x = b.input("x", {1, 32, 15, 15});
  int64_t dw =
      b.op("conv2d", {x, b.constant("dw", {32, 1, 3, 3})},
           {{"groups", int64_t(32)}, {"pads", ints({1, 1, 1, 1})}, {"strides", ints({2, 2})}});
  int64_t h = b.op("hard_swish", {b.op("bias_add", {dw, b.constant("b", {32})})});
  int64_t g =
      b.op("conv2d", {h, b.constant("w", {16, 8, 3, 3}, -0.3, 0.3)},
           {{"groups", int64_t(4)}, {"dilation", ints({2, 2})}, {"pads", ints({0, 1, 2, 1})}});
  b.output(b.op("clip", {g}, {{"min", 0.0}, {"max", 0.5}}));
  checkAgainstReference(b);
}

TEST_CASE("dnnl plugin: MobileNetV3's squeeze-excite block", "[dnnl_plugin]") {
  GraphBuilder b("tessera_se");
  int64_t x = b.input("x", {1, 32, 7, 7});
  int64_t p = b.op("global_avg_pool2d", {x});
  int64_t s = b.op("relu", {b.op("bias_add", {b.op("conv2d", {p, b.constant("w1", {8, 32, 1, 1})}),
                                              b.constant("b1", {8})})});
  int64_t e = b.op("bias_add",
                   {b.op("conv2d", {s, b.constant("w2", {32, 8, 1, 1})}), b.constant("b2", {32})});
  int64_t gate = b.op("hard_sigmoid", {e}, {{"alpha", 1.0 / 6}, {"beta", 0.5}});
  b.output(b.op("multiply", {x, gate}));
  checkAgainstReference(b);
}

TEST_CASE("dnnl plugin: a small ResNet with an unfolded batch_norm and a blocked output",
          "[dnnl_plugin]") {
  GraphBuilder b("tessera_resnet");
  int64_t x = b.input("x", {1, 3, 16, 16});
  int64_t c0 = b.op("conv2d", {x, b.constant("w0", {16, 3, 3, 3})}, {{"pads", ints({1, 1, 1, 1})}});
  int64_t bn = b.op("batch_norm", {c0, b.constant("g", {16}, 0.5, 1.5), b.constant("be", {16}),
                                   b.constant("m", {16}), b.constant("v", {16}, 0.5, 2)});
  int64_t stem =
      b.op("max_pool2d", {b.op("relu", {bn})},
           {{"pool_size", ints({3, 3})}, {"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}});
  int64_t c1 = b.op(
      "relu", {b.op("bias_add", {b.op("conv2d", {stem, b.constant("w1", {16, 16, 3, 3}, -0.2, 0.2)},
                                      {{"pads", ints({1, 1, 1, 1})}}),
                                 b.constant("b1", {16})})});
  int64_t c2 = b.op("bias_add", {b.op("conv2d", {c1, b.constant("w2", {16, 16, 3, 3}, -0.2, 0.2)},
                                      {{"pads", ints({1, 1, 1, 1})}}),
                                 b.constant("b2", {16})});
  int64_t block = b.op("relu", {b.op("add", {stem, c2})});
  int64_t flat = b.op("flatten", {b.op("global_avg_pool2d", {block})});
  int64_t fc = b.op("bias_add",
                    {b.op("dense", {flat, b.constant("fc", {10, 16})}), b.constant("fcb", {10})});
  b.output(b.op("softmax", {fc}));
  b.output(c1); // blocked inside the region: reordered into the caller's tensor
  checkAgainstReference(b, 1e-4);
}

TEST_CASE("dnnl plugin: products, normalisation, softmax, concat, broadcasting", "[dnnl_plugin]") {
  SECTION("matmul and batch_matmul") {
    GraphBuilder b("tessera_matmul");
    int64_t a = b.input("a", {2, 1, 3, 4}), c = b.input("c", {3, 4, 5});
    b.output(b.op("matmul", {a, c}));
    int64_t p = b.input("p", {2, 4, 3}), q = b.input("q", {1, 5, 4});
    b.output(b.op("batch_matmul", {p, q}, {{"transpose_a", true}, {"transpose_b", true}}));
    b.output(b.op("matmul", {b.input("v", {4}), b.constant("m", {4, 3})}));
    checkAgainstReference(b);
  }
  SECTION("dense with an activation and a rank-3 input") {
    GraphBuilder b("tessera_dense");
    int64_t x = b.input("x", {2, 3, 8});
    b.output(b.op("gelu", {b.op("bias_add",
                                {b.op("dense", {x, b.constant("w", {5, 8})}), b.constant("b", {5})},
                                {{"axis", int64_t(-1)}})}));
    checkAgainstReference(b);
  }
  SECTION("layer_norm, softmax, log_softmax, concat") {
    GraphBuilder b("tessera_norm");
    int64_t x = b.input("x", {2, 3, 4});
    b.output(b.op("layer_norm", {x, b.constant("g", {3, 4}), b.constant("b", {3, 4})},
                  {{"axis", int64_t(1)}}));
    b.output(b.op("log_softmax", {x}, {{"axis", int64_t(1)}}));
    b.output(b.op("concat", {b.op("softmax", {x}), x}, {{"axis", int64_t(-1)}}));
    checkAgainstReference(b);
  }
  SECTION("binary ops with broadcasting, both operand orders") {
    GraphBuilder b("tessera_binary");
    int64_t x = b.input("x", {2, 3, 4}), v = b.input("v", {4});
    int64_t d = b.input("d", {3, 1}, 0.5, 2);
    b.output(b.op("add", {v, x}));
    b.output(b.op("divide", {x, d}));
    b.output(b.op("maximum", {x, b.constant("k", {})}));
    b.output(b.op("subtract", {b.op("multiply", {x, x}), b.op("exp", {x})}));
    b.output(b.op("subtract", {v, b.op("sigmoid", {x})})); // swapped and negated
    checkAgainstReference(b);
  }
  SECTION("resize2d (half_pixel) on a blocked convolution output") {
    GraphBuilder b("tessera_resize");
    int64_t c = b.op("conv2d", {b.input("x", {1, 3, 6, 5}), b.constant("w", {16, 3, 3, 3})},
                     {{"pads", ints({1, 1, 1, 1})}});
    b.output(b.op("resize2d", {c}, {{"mode", std::string("linear")}, {"size", ints({12, 7})}}));
    b.output(b.op("resize2d", {c},
                  {{"nearest_mode", std::string("round_prefer_ceil")}, {"size", ints({3, 10})}}));
    checkAgainstReference(b);
  }
  SECTION("conv2d_transpose, weights as inputs, pooling") {
    GraphBuilder b("tessera_deconv");
    int64_t x = b.input("x", {1, 4, 5, 5});
    int64_t y = b.op("conv2d_transpose", {x, b.input("w", {4, 3, 3, 3})},
                     {{"strides", ints({2, 2})},
                      {"pads", ints({1, 1, 1, 1})},
                      {"output_padding", ints({1, 1})}});
    b.output(b.op("avg_pool2d", {y},
                  {{"pool_size", ints({3, 3})},
                   {"strides", ints({2, 2})},
                   {"ceil_mode", true},
                   {"pads", ints({1, 1, 1, 1})}}));
    checkAgainstReference(b);
  }
}

TEST_CASE("dnnl plugin: one module runs on several threads at once", "[dnnl_plugin]") {
  GraphBuilder b("tessera_threads");
  int64_t x = b.input("x", {1, 8, 12, 12});
  int64_t c = b.op("relu", {b.op("bias_add", {b.op("conv2d", {x, b.constant("w", {16, 8, 3, 3})},
                                                   {{"pads", ints({1, 1, 1, 1})}}),
                                              b.constant("b", {16})})});
  b.output(b.op("global_avg_pool2d", {b.op("max_pool2d", {c}, {{"pool_size", ints({2, 2})}})}));
  ModulePtr m(nullptr, destroyModule);
  REQUIRE(compileGraph(b, m) == "");
  std::vector<ir::Tensor> want = b.reference();
  constexpr int kThreads = 4, kRounds = 25;
  std::vector<ir::Tensor> inputs, expected;
  for (int t = 0; t < kThreads; ++t) {
    ir::Tensor in = ir::Tensor::copyOf(b.inputs()[0].dl());
    for (int64_t i = 0; i < in.numel(); ++i)
      in.setDouble(i, in.getDouble(i) * (t + 1));
    expected.push_back(callFunction(m.get(), "tessera_threads", {in}, b.outputShapes())[0]);
    inputs.push_back(std::move(in));
  }
  requireClose(expected[0], want[0], kRtol, kAtol);
  tessera_function_t fn = getFunction(m.get(), "tessera_threads");
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        ir::Tensor out(ir::DType::F32, b.outputShapes()[0]);
        DLTensor args[] = {inputs[size_t(t)].dl(), out.dl()};
        const DLTensor *ptrs[] = {&args[0], &args[1]};
        if (tessera_plugin_status_t *s = fn.call(fn.self, ptrs, 2)) {
          s->release(s);
          ++mismatches;
        } else if (std::memcmp(out.bytes(), expected[size_t(t)].bytes(), out.nbytes()) != 0) {
          ++mismatches;
        }
      }
    });
  for (auto &t : threads)
    t.join();
  CHECK(mismatches == 0);
}

TEST_CASE("dnnl plugin: corrupted saved modules give errors", "[dnnl_plugin]") {
  GraphBuilder b("tessera_saved");
  int64_t x = b.input("x", {1, 4, 6, 6});
  b.output(b.op("relu", {b.op("conv2d", {x, b.constant("w", {4, 4, 3, 3})})}));
  ModulePtr m(nullptr, destroyModule);
  REQUIRE(compileGraph(b, m) == "");
  std::string bytes = saveModule(m.get());
  ModulePtr loaded(nullptr, destroyModule);
  CHECK(loadModule(bytes.substr(0, bytes.size() - 7), loaded)
            .find("dnnl runtime module: truncated at byte") == 0);
  std::string bad = bytes;
  bad[0] = 'X';
  CHECK(loadModule(bad, loaded) == "dnnl runtime module: not a saved JsonRuntime module (no "
                                   "\"TSJR\" magic)");
  // A graph edited to declare a wrong output shape is refused at load.
  std::string edited = bytes;
  size_t at = edited.find("[1,4,4,4]");
  REQUIRE(at != std::string::npos);
  edited.replace(at, 9, "[1,4,4,5]");
  std::string err = loadModule(edited, loaded);
  CHECK(err.find("is not the computed shape [1, 4, 4, 4]") != std::string::npos);
  REQUIRE(loadModule(bytes, loaded) == "");
}
