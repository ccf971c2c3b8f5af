//===- tests/unit/plugin_test_harness.cpp - Testing a plugin .so ----------===//
//
// The shared pieces of the plugin tests (see plugin_test_harness.h): the
// graph builder, the C argument structs, the raw C ABI helpers.
//
//===----------------------------------------------------------------------===//
#include "plugin_test_harness.h"
#include "shipped_plugins.h"

#include "interp/interpreter.h"
#include "ir/module.h"
#include "plugin/registry.h"

#include <dlfcn.h>

#include <atomic>
#include <filesystem>
#include <cstring>
#include <limits>
#include <thread>

namespace tessera::test {

const plugin::PluginRegistry &shippedPlugins() {
  static const plugin::PluginRegistry registry = [] {
    plugin::DiscoveryOptions options;
    options.searchPath = std::vector<plugin::SearchEntry>{
        {std::filesystem::path(TESSERA_JSON_PLUGIN).parent_path().string(), "test"}};
    options.probe = false;
    return plugin::PluginRegistry::discover(options);
  }();
  return registry;
}

//===----------------------------------------------------------------------===//
// GraphBuilder
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

GraphBuilder::GraphBuilder(std::string symbol, uint32_t seed) : rng_(seed) {
  g_.symbol = std::move(symbol);
  root_ = this;
}

int64_t GraphBuilder::input(const std::string &name, ir::Shape shape, double lo, double hi) {
  ir::Tensor t = random(shape, lo, hi);
  ir::Var v = ir::makeVar(name, ir::Type::tensor(ir::DType::F32, shape));
  params_.push_back(v);
  inputValues_.push_back(t);
  g_.inputs.push_back(int64_t(g_.nodes.size()));
  return addNode(sdk::Node::Kind::Input, name, "", {}, v->type(), v);
}

int64_t GraphBuilder::constant(const std::string &name, ir::Shape shape, double lo, double hi) {
  // Constants live in the root builder: a body's const node indexes the
  // function's constants.
  ir::Tensor t = root_->random(shape, lo, hi);
  int64_t index = int64_t(root_->constants_.size());
  root_->constants_.push_back(t);
  root_->constantNames_.push_back(name);
  int64_t n = addNode(sdk::Node::Kind::Const, name, "", {}, t.type(), ir::makeConstant(t));
  g_.nodes.back().constant = index;
  return n;
}

int64_t GraphBuilder::op(const std::string &opName, std::vector<int64_t> args, ir::Attrs attrs) {
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

int64_t GraphBuilder::composite(
    const std::string &opName, std::vector<int64_t> args,
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

void GraphBuilder::output(int64_t node) {
  g_.outputs.push_back({node, 0});
  outputs_.push_back(exprs_[size_t(node)]);
}

std::vector<ir::Shape> GraphBuilder::outputShapes() const {
  std::vector<ir::Shape> s;
  for (const auto &e : outputs_)
    s.push_back(e->type().shape());
  return s;
}

std::vector<ir::Tensor> GraphBuilder::reference(const std::vector<ir::Tensor> *inputs) const {
  ir::Expr body = outputs_.size() == 1 ? outputs_[0] : ir::makeTuple(outputs_);
  ir::Module m;
  m.set("main", ir::makeFunction(params_, body));
  auto v = interp::run(m, inputs ? *inputs : inputValues_);
  INFO((v.ok() ? "" : v.error().str()));
  REQUIRE(v.ok());
  return v->flatten();
}

ir::Tensor GraphBuilder::random(const ir::Shape &shape, double lo, double hi) {
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(size_t(ir::Type::tensor(ir::DType::F32, shape).numElements()));
  for (double &x : v)
    x = dist(rng_);
  return ir::Tensor::fromDoubles(ir::DType::F32, shape, v);
}

int64_t GraphBuilder::addNode(sdk::Node::Kind kind, const std::string &name, const std::string &op,
                              const std::vector<int64_t> &args, const ir::Type &type,
                              ir::Expr expr) {
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

int64_t addElementwiseOps(GraphBuilder &b) {
  int64_t x = b.input("x", {2, 3, 4});
  int64_t y = b.input("y", {3, 1});
  int64_t pos = b.input("pos", {2, 3, 4}, 0.5, 2.0); // for log, sqrt, power, divide
  int64_t s = b.constant("s", {});
  b.output(b.op("add", {x, y}));
  b.output(b.op("subtract", {y, x}));
  b.output(b.op("multiply", {x, s}));
  b.output(b.op("divide", {x, pos}));
  b.output(b.op("power", {pos, y}));
  b.output(b.op("maximum", {x, y}));
  b.output(b.op("minimum", {y, x}));
  for (const char *op : {"relu", "sigmoid", "tanh", "hard_swish", "silu", "mish", "exp", "abs", "neg", "erf",
                         "floor", "ceil", "reciprocal"})
    b.output(b.op(op, {x}));
  b.output(b.op("log", {pos}));
  b.output(b.op("sqrt", {pos}));
  b.output(b.op("leaky_relu", {x}, {{"alpha", 0.3}}));
  b.output(b.op("clip", {x}, {{"min", -0.25}, {"max", 0.5}}));
  b.output(b.op("hard_sigmoid", {x}, {{"alpha", 0.4}, {"beta", 0.6}}));
  b.output(b.op("gelu", {x}));
  b.output(b.op("gelu", {x}, {{"approximate", std::string("tanh")}}));
  // A chain through intermediates, and a scalar.
  b.output(b.op("relu", {b.op("add", {b.op("multiply", {x, x}), y})}));
  b.output(s);
  return x;
}

void addPoolingOps(GraphBuilder &b, int64_t x) {
  b.output(b.op("max_pool2d", {x},
                {{"pool_size", ints({3, 2})},
                 {"strides", ints({2, 3})},
                 {"pads", ints({1, 0, 1, 1})},
                 {"dilation", ints({1, 2})},
                 {"ceil_mode", true}}));
  for (bool includePad : {false, true})
    for (bool ceil : {false, true})
      b.output(b.op("avg_pool2d", {x},
                    {{"pool_size", ints({3, 3})},
                     {"strides", ints({2, 2})},
                     {"pads", ints({1, 1, 1, 0})},
                     {"ceil_mode", ceil},
                     {"count_include_pad", includePad}}));
  b.output(b.op("global_avg_pool2d", {x}));
  b.output(b.op("global_max_pool2d", {x}));
}

//===----------------------------------------------------------------------===//
// The C structs a plugin is called with
//===----------------------------------------------------------------------===//

GraphArg::GraphArg(const GraphBuilder &b, std::string json)
    : json_(json.empty() ? b.json() : std::move(json)) {
  for (const ir::Tensor &t : b.constants())
    copies_.push_back(ir::Tensor::copyOf(t.dl()));
  for (const ir::Tensor &t : copies_)
    dls_.push_back(t.dl());
  for (size_t i = 0; i < dls_.size(); ++i) {
    ptrs_.push_back(&dls_[i]);
    names_.push_back(b.constantNames()[i].c_str());
  }
  g_ = {sizeof(tessera_graph_t),
        b.graph().symbol.c_str(),
        json_.c_str(),
        json_.size(),
        names_.data(),
        ptrs_.data(),
        ptrs_.size(),
        nullptr}; // target_cpu: none outside an artifact, as in the kit
}

void GraphArg::scribble() {
  for (ir::Tensor &t : copies_)
    for (int64_t i = 0; i < t.numel(); ++i)
      t.setDouble(i, std::numeric_limits<double>::quiet_NaN());
}

OpDescArg::OpDescArg(const std::string &op, const std::vector<ir::Shape> &inShapes,
                     const ir::Shape &outShape, const std::vector<tessera_attr_t> &attrs,
                     DLDataType dtype)
    : op_(op), shapes_(inShapes), attrs_(attrs) {
  shapes_.push_back(outShape);
  for (const ir::Shape &s : shapes_)
    types_.push_back({sizeof(tessera_tensor_type_t), dtype, int32_t(s.size()), s.data()});
  for (size_t i = 0; i < inShapes.size(); ++i)
    ins_.push_back(&types_[i]);
  outs_[0] = &types_.back();
  for (const tessera_attr_t &a : attrs_)
    attrPtrs_.push_back(&a);
  d_ = {sizeof(tessera_op_desc_t),
        op_.c_str(),
        "n1",
        attrPtrs_.data(),
        attrPtrs_.size(),
        ins_.data(),
        ins_.size(),
        outs_,
        1};
}

namespace {
tessera_attr_t attrOf(const char *name, tessera_attr_kind_t kind) {
  tessera_attr_t a{};
  a.struct_size = sizeof a;
  a.name = name;
  a.kind = kind;
  return a;
}
} // namespace

tessera_attr_t stringAttr(const char *name, const char *value) {
  tessera_attr_t a = attrOf(name, TESSERA_ATTR_STRING);
  a.s = value;
  return a;
}

tessera_attr_t intsAttr(const char *name, const std::vector<int64_t> &v) {
  tessera_attr_t a = attrOf(name, TESSERA_ATTR_INTS);
  a.ints = v.data();
  a.count = v.size();
  return a;
}

tessera_attr_t intAttr(const char *name, int64_t v) {
  tessera_attr_t a = attrOf(name, TESSERA_ATTR_INT);
  a.i = v;
  return a;
}

std::vector<ir::Tensor> nanOutputs(const std::vector<ir::Shape> &shapes) {
  std::vector<ir::Tensor> outs;
  for (const ir::Shape &s : shapes) {
    outs.emplace_back(ir::DType::F32, s);
    for (int64_t i = 0; i < outs.back().numel(); ++i)
      outs.back().setDouble(i, std::numeric_limits<double>::quiet_NaN());
  }
  return outs;
}

CallArgs::CallArgs(const std::vector<ir::Tensor> &inputs, const std::vector<ir::Tensor> &outputs) {
  for (const ir::Tensor &t : inputs)
    dls_.push_back(t.dl());
  for (const ir::Tensor &t : outputs)
    dls_.push_back(t.dl());
  for (const DLTensor &t : dls_)
    ptrs_.push_back(&t);
}

void requireAllClose(const std::vector<ir::Tensor> &got, const std::vector<ir::Tensor> &want,
                     double atol) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("output " << i);
    requireClose(got[i], want[i], kRtol, atol);
  }
}

//===----------------------------------------------------------------------===//
// Modules and statuses through the C ABI
//===----------------------------------------------------------------------===//

std::string take(tessera_plugin_status_t *s, tessera_status_code_t *code) {
  if (!s)
    return "";
  std::string m = s->message;
  if (code)
    *code = s->code;
  s->release(s);
  return m;
}

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

tessera_function_t getFunction(tessera_module_t *m, const std::string &symbol) {
  tessera_function_t fn{};
  fn.struct_size = sizeof fn;
  REQUIRE(take(m->get_function(m->self, symbol.c_str(), &fn)) == "");
  return fn;
}

std::vector<ir::Tensor> callFunction(tessera_module_t *m, const std::string &symbol,
                                     const std::vector<ir::Tensor> &inputs,
                                     const std::vector<ir::Shape> &outShapes) {
  tessera_function_t fn = getFunction(m, symbol);
  std::vector<ir::Tensor> outs = nanOutputs(outShapes);
  CallArgs args(inputs, outs);
  REQUIRE(take(fn.call(fn.self, args.get().data(), args.get().size())) == "");
  return outs;
}

void checkConcurrentCalls(tessera_module_t *m, const GraphBuilder &b, int threads, int rounds) {
  const std::string &symbol = b.graph().symbol;
  std::vector<ir::Tensor> want = b.reference();
  std::vector<ir::Tensor> inputs, expected;
  for (int t = 0; t < threads; ++t) {
    ir::Tensor in = ir::Tensor::copyOf(b.inputs()[0].dl());
    for (int64_t i = 0; i < in.numel(); ++i)
      in.setDouble(i, in.getDouble(i) * (t + 1));
    expected.push_back(callFunction(m, symbol, {in}, b.outputShapes())[0]);
    inputs.push_back(std::move(in));
  }
  requireClose(expected[0], want[0], kRtol, kAtol);
  tessera_function_t fn = getFunction(m, symbol);
  std::atomic<int> mismatches{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int r = 0; r < rounds; ++r) {
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
  for (auto &t : pool)
    t.join();
  CHECK(mismatches == 0);
}

CPlugin::CPlugin(const char *path, std::string typeKey) : typeKey_(std::move(typeKey)) {
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
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
  REQUIRE(query(&host, &desc_) == nullptr);
  REQUIRE(desc_);
}

std::string CPlugin::compile(const GraphBuilder &b, ModulePtr &out, std::string json) const {
  GraphArg g(b, std::move(json));
  tessera_module_t *m = nullptr;
  std::string err = take(desc_->codegen->compile(desc_->state, &g.get(), &m));
  out = ModulePtr(m, destroyModule);
  g.scribble();
  return err;
}

std::string CPlugin::load(std::string_view bytes, ModulePtr &out) const {
  const tessera_module_factory_t &f = *desc_->module_factories[0];
  tessera_module_t *m = nullptr;
  std::string err = take(f.load(desc_->state, bytes.data(), bytes.size(), &m));
  out = ModulePtr(m, destroyModule);
  return err;
}

CheckAnswer CPlugin::checkOp(const std::string &op, const std::vector<ir::Shape> &inShapes,
                             const ir::Shape &outShape, const std::vector<tessera_attr_t> &attrs,
                             DLDataType dtype) const {
  OpDescArg d(op, inShapes, outShape, attrs, dtype);
  char reason[256] = "unset";
  bool ok = desc_->checker->check_op(desc_->state, &d.get(), reason, sizeof reason);
  return {ok, ok ? "" : reason};
}

void CPlugin::checkAgainstReference(const GraphBuilder &b, double atol) const {
  std::vector<ir::Tensor> want = b.reference();
  ModulePtr m(nullptr, destroyModule);
  REQUIRE(compile(b, m) == "");
  REQUIRE(std::string(m->type_key) == typeKey_);
  const std::string &symbol = b.graph().symbol;
  {
    INFO("compiled module");
    requireAllClose(callFunction(m.get(), symbol, b.inputs(), b.outputShapes()), want, atol);
  }
  std::string bytes = saveModule(m.get());
  m.reset();
  ModulePtr loaded(nullptr, destroyModule);
  REQUIRE(load(bytes, loaded) == "");
  {
    INFO("loaded module");
    requireAllClose(callFunction(loaded.get(), symbol, b.inputs(), b.outputShapes()), want, atol);
  }
  REQUIRE(saveModule(loaded.get()) == bytes); // saving is deterministic
}

} // namespace tessera::test
