//===- tests/unit/ccompiler_plugin_test.cpp - The ccompiler plugin --------===//
//
// The ccompiler plugin (plugins/ccompiler) as the core uses it: the built
// .so is loaded through the plugin registry (loadPluginFile), graphs are
// compiled by its codegen (which runs the system C compiler), run, saved,
// loaded through the "ccompiler" module factory and run again; every result
// is compared with the reference interpreter on the same computation
// (|got - want| <= 1e-5 + 1e-4 |want|, the kit's tolerance). Each
// computation is written once with GraphBuilder, which produces both the
// tessera.graph JSON and the core IR. Also: the checker's reasons, compiler
// errors (a failing compile, a missing compiler), damaged saved bytes,
// wrong call arguments and concurrent calls. GraphBuilder and the C structs
// are plugin_test_harness.h's (shared with the other plugins' tests).
//
//===----------------------------------------------------------------------===//
#include "scoped_env.h"
#include "plugin_test_harness.h"

#include "plugin/registry.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <random>
#include <thread>

#ifndef TESSERA_CCOMPILER_PLUGIN
#error "TESSERA_CCOMPILER_PLUGIN (the path of the plugin) is set by tests/CMakeLists.txt"
#endif

namespace {

using namespace tessera;
using namespace tessera::test;

const plugin::LoadedPlugin &thePlugin() {
  static std::shared_ptr<plugin::LoadedPlugin> p = [] {
    auto loaded = plugin::loadPluginFile(TESSERA_CCOMPILER_PLUGIN);
    INFO((loaded.ok() ? "" : loaded.error().str()));
    REQUIRE(loaded.ok());
    return *loaded;
  }();
  return *p;
}

using test::ScopedEnv;

/// Codegen of the builder's graph through the plugin; the error message or
/// "".
std::string compile(const GraphBuilder &b, std::unique_ptr<plugin::PluginModule> &out) {
  GraphArg g(b);
  auto m = thePlugin().compile(g.get());
  g.scribble();
  if (!m.ok())
    return m.error().str();
  out = std::move(*m);
  return "";
}

//===----------------------------------------------------------------------===//
// Running and comparing
//===----------------------------------------------------------------------===//

/// Runs `symbol` on `inputs`; outputs pre-filled with NaN so that an element
/// the code does not write shows. The call's error message, or "".
std::string call(const plugin::PluginModule &m, const std::string &symbol,
                 const std::vector<ir::Tensor> &inputs, const std::vector<ir::Shape> &outShapes,
                 std::vector<ir::Tensor> &outs) {
  auto fn = m.function(symbol); // no REQUIRE here: called from several threads
  if (!fn.ok())
    return fn.error().str();
  outs = nanOutputs(outShapes);
  CallArgs args(inputs, outs);
  Status s = fn->call(args.get());
  return s.ok() ? "" : s.error().str();
}

/// Compiles, runs, compares; saves, loads through the factory, runs and
/// compares again. Returns the module's C source.
std::string checkAgainstReference(const GraphBuilder &b) {
  std::vector<ir::Tensor> want = b.reference(), got;
  std::unique_ptr<plugin::PluginModule> m;
  REQUIRE(compile(b, m) == "");
  REQUIRE(m->typeKey() == "ccompiler");
  const std::string &symbol = b.graph().symbol;
  {
    INFO("compiled module");
    REQUIRE(call(*m, symbol, b.inputs(), b.outputShapes(), got) == "");
    requireAllClose(got, want);
  }
  auto bytes = m->save();
  REQUIRE(bytes.ok());
  auto source = m->source("c");
  REQUIRE(source.ok());
  m.reset();
  auto loaded = thePlugin().load("ccompiler", *bytes);
  INFO((loaded.ok() ? "" : loaded.error().str()));
  REQUIRE(loaded.ok());
  {
    INFO("loaded module");
    REQUIRE(call(**loaded, symbol, b.inputs(), b.outputShapes(), got) == "");
    requireAllClose(got, want);
  }
  REQUIRE((*loaded)->save().value() == *bytes);
  REQUIRE((*loaded)->source("").value() == *source);
  return *source;
}

bool contains(const std::string &s, const std::string &part) {
  return s.find(part) != std::string::npos;
}

/// A small CNN: conv+bias+relu (fused), pooling, depthwise conv, dense with
/// a weight above the embedding limit (handed over), softmax.
GraphBuilder smallCnn() {
  GraphBuilder b("tessera_cnn");
  int64_t x = b.input("x", {2, 3, 12, 12});
  int64_t c = b.op("conv2d", {x, b.constant("w1", {8, 3, 3, 3})},
                   {{"strides", ints({1, 1})}, {"pads", ints({1, 1, 1, 1})}});
  c = b.op("relu", {b.op("bias_add", {c, b.constant("b1", {8})})});
  c = b.op("max_pool2d", {c}, {{"pool_size", ints({2, 2})}, {"strides", ints({2, 2})}});
  c = b.op("conv2d", {c, b.constant("dw", {8, 1, 3, 3})},
           {{"pads", ints({1, 1, 1, 1})}, {"groups", int64_t(8)}});
  c = b.op("clip", {b.op("add", {c, b.constant("b2", {8, 1, 1})})}, {{"min", 0.0}, {"max", 6.0}});
  c = b.op("flatten", {c}, {{"axis", int64_t(1)}}); // [2, 288]
  c = b.op("dense", {c, b.constant("fc", {20, 288})}); // 23 KB: handed over
  c = b.op("bias_add", {c, b.constant("fcb", {20})}, {{"axis", int64_t(-1)}});
  b.output(b.op("softmax", {c}, {{"axis", int64_t(-1)}}));
  return b;
}

} // namespace

//===----------------------------------------------------------------------===//
// Tests
//===----------------------------------------------------------------------===//

TEST_CASE("ccompiler plugin: the descriptor", "[ccompiler_plugin]") {
  const plugin::LoadedPlugin &p = thePlugin();
  CHECK(p.name() == "ccompiler");
  CHECK(p.typeKeys() == std::vector<std::string>{"ccompiler"});
  for (const char *op : {"add", "conv2d", "dense", "matmul", "max_pool2d", "avg_pool2d",
                         "global_avg_pool2d", "softmax", "log_softmax", "relu", "hard_swish",
                         "gelu", "bias_add", "reshape", "flatten", "transpose", "concat",
                         "batch_matmul"})
    CHECK(std::count(p.ops().begin(), p.ops().end(), op) == 1);
  REQUIRE(p.patterns().size() == 3);
  CHECK(p.patterns()[0].first == "conv2d_bias_act");
}

TEST_CASE("ccompiler plugin: the checker declines with a reason", "[ccompiler_plugin]") {
  auto check = [](const std::string &op, std::vector<std::vector<int64_t>> ins,
                  std::vector<int64_t> outShape, DLDataType dtype,
                  std::vector<tessera_attr_t> attrs = {}) {
    OpDescArg d(op, ins, outShape, attrs, dtype);
    return thePlugin().checkOp(d.get());
  };
  const DLDataType f32{kDLFloat, 32, 1}, f16{kDLFloat, 16, 1};
  CHECK(check("add", {{2, 3}, {3}}, {2, 3}, f32).supported);
  auto r = check("add", {{2, 3}, {2, 3}}, {2, 3}, f16);
  CHECK_FALSE(r.supported);
  CHECK(r.reason == "ccompiler: only f32, got f16");
  std::vector<int64_t> pads{1, 1};
  r = check("conv2d", {{1, 3, 8, 8}, {4, 3, 3, 3}}, {1, 4, 8, 8}, f32, {intsAttr("pads", pads)});
  CHECK_FALSE(r.supported);
  CHECK(r.reason == "ccompiler: attribute 'pads' must have 4 values, got 2");
  std::vector<int64_t> perm{0, 0};
  r = check("transpose", {{2, 3}}, {2, 2}, f32, {intsAttr("perm", perm)});
  CHECK(r.reason == "ccompiler: attribute 'perm' = [0, 0] is not a permutation of the 2 dims");
  r = check("concat", {{2, 3}, {3, 2}}, {2, 5}, f32, {intAttr("axis", 1)});
  CHECK(r.reason == "ccompiler: input 1 f32[3, 2] does not match input 0 f32[2, 3] outside axis 1");
  r = check("batch_matmul", {{2, 3, 4}, {3, 4, 5}}, {3, 3, 5}, f32);
  CHECK(r.reason == "ccompiler: batch sizes 2 and 3 do not match (must be equal or 1)");
}

TEST_CASE("ccompiler plugin: a small CNN, embedded and handed-over weights",
          "[ccompiler_plugin]") {
  std::string c = checkAgainstReference(smallCnn());
  CHECK(contains(c, "Constants: 5 embedded, 1 handed over at run time"));
  CHECK(contains(c, "weights[0]"));                    // the dense weight
  CHECK(contains(c, "static const float k"));          // the small ones
  CHECK(contains(c, "/* node 'conv2d_2' (conv2d): strides=[1, 1], pads=[1, 1, 1, 1]"));
  CHECK(contains(c, "fused into the output loop: bias_add 'bias_add_4', relu 'relu_5'"));
  CHECK(contains(c, "fused into the output loop: add 'add_10', clip 'clip_11'"));
  CHECK(contains(c, "int32_t tessera_cnn(const tsc_dltensor *const *args"));
}

TEST_CASE("ccompiler plugin: elementwise ops with broadcasting", "[ccompiler_plugin]") {
  GraphBuilder b("tessera_elementwise");
  int64_t x = addElementwiseOps(b);
  b.output(x); // an input as an output
  checkAgainstReference(b);
}

TEST_CASE("ccompiler plugin: conv2d, pooling, products, softmax", "[ccompiler_plugin]") {
  GraphBuilder b("tessera_nn");
  int64_t x = b.input("x", {2, 4, 9, 10});
  b.output(b.op("conv2d", {x, b.constant("w", {6, 2, 3, 2})},
                {{"strides", ints({2, 1})},
                 {"pads", ints({1, 0, 2, 1})},
                 {"dilation", ints({2, 1})},
                 {"groups", int64_t(2)}}));
  b.output(b.op("conv2d", {x, b.input("pw", {5, 4, 1, 1})})); // 1x1, weight as input
  addPoolingOps(b, x);
  int64_t v = b.input("v", {3, 8});
  int64_t h = b.op("dense", {v, b.constant("dw", {5, 8})});
  b.output(b.op("dense", {h, b.input("w2", {4, 5})})); // transposed per call
  b.output(b.op("dense", {b.input("x3", {2, 2, 8}), b.constant("dw3", {7, 8})}));
  b.output(b.op("matmul", {b.input("a4", {2, 1, 3, 4}), b.input("b3", {3, 4, 5})}));
  b.output(b.op("matmul", {b.input("vv", {4}), b.input("bm", {2, 4, 3})}));
  b.output(b.op("matmul", {b.input("am", {2, 3, 4}), b.input("u", {4})}));
  b.output(b.op("softmax", {h}, {{"axis", int64_t(1)}}));
  b.output(b.op("log_softmax", {b.input("z", {2, 3, 4})}, {{"axis", int64_t(-2)}}));
  int64_t bn = b.op("batch_norm",
                    {x, b.constant("gamma", {4}), b.constant("beta", {4}), b.constant("mean", {4}),
                     b.constant("var", {4}, 0.5, 2)},
                    {{"epsilon", 1e-3}});
  b.output(b.op("reshape", {bn}, {{"newshape", ints({0, -1, 5})}}));
  checkAgainstReference(b);
}

TEST_CASE("ccompiler plugin: transpose, concat, batch_matmul", "[ccompiler_plugin]") {
  GraphBuilder b("tessera_moves");
  int64_t x = b.input("x", {2, 3, 4, 5});
  b.output(b.op("transpose", {x}, {{"perm", ints({0, 2, 3, 1})}}));
  b.output(b.op("transpose", {x})); // reversed
  b.output(b.op("transpose", {b.input("t1", {1, 6, 1, 2})}, {{"perm", ints({3, 1, 0, 2})}}));
  b.output(b.op("concat", {x, b.input("y", {2, 2, 4, 5}), b.constant("z", {2, 1, 4, 5})},
                {{"axis", int64_t(1)}}));
  b.output(b.op("concat", {x, x}, {{"axis", int64_t(-1)}}));
  b.output(b.op("concat", {b.input("r0", {1, 3}), b.input("r1", {2, 3})}));
  int64_t a = b.input("a", {3, 4, 6}), bb = b.input("b", {3, 6, 5});
  b.output(b.op("batch_matmul", {a, bb}));
  b.output(b.op("batch_matmul", {b.input("at", {3, 6, 4}), b.input("bt", {1, 5, 6})},
                {{"transpose_a", true}, {"transpose_b", true}}));
  b.output(b.op("batch_matmul", {b.input("a1", {1, 4, 6}), bb}));
  b.output(b.op("batch_matmul", {a, b.input("bt2", {3, 5, 6})}, {{"transpose_b", true}}));
  std::string c = checkAgainstReference(b);
  CHECK(contains(c, "(transpose): perm=[0, 2, 3, 1]"));
  CHECK(contains(c, "(concat): axis=1"));
  CHECK(contains(c, "(batch_matmul): transpose_a=true, transpose_b=true"));
}

TEST_CASE("ccompiler plugin: composite nodes are one loop nest", "[ccompiler_plugin]") {
  GraphBuilder b("tessera_composites");
  int64_t x = b.input("x", {1, 3, 8, 8});
  int64_t w = b.constant("w", {4, 3, 3, 3});
  int64_t bias = b.constant("bias", {4});
  int64_t c1 = b.composite("ccompiler.conv2d_bias_act", {x}, [](GraphBuilder &g, auto p) {
    int64_t conv =
        g.op("conv2d", {p[0], g.constant("cw", {4, 3, 3, 3})}, {{"pads", ints({1, 1, 1, 1})}});
    return g.op("hard_swish", {g.op("bias_add", {conv, g.constant("cb", {4})})});
  });
  b.output(c1);
  b.output(b.composite("ccompiler.conv2d_bias_act", {x, w, bias}, [](GraphBuilder &g, auto p) {
    return g.op("relu", {g.op("bias_add", {g.op("conv2d", {p[0], p[1]}), p[2]})});
  }));
  int64_t v = b.input("v", {2, 6});
  b.output(b.composite("ccompiler.dense_bias_act", {v, b.constant("dw", {3, 6}), b.constant("db", {3})},
                       [](GraphBuilder &g, auto p) {
                         return g.op("gelu", {g.op("bias_add", {g.op("dense", {p[0], p[1]}), p[2]},
                                                   {{"axis", int64_t(-1)}})});
                       }));
  // Not a per-channel bias: not fused, still right.
  b.output(b.composite("ccompiler.conv2d_bias_act", {x, w, b.constant("full", {1, 4, 8, 8})},
                       [](GraphBuilder &g, auto p) {
                         return g.op("tanh", {g.op("add", {g.op("conv2d", {p[0], p[1]},
                                                                 {{"pads", ints({1, 1, 1, 1})}}),
                                                           p[2]})});
                       }));
  std::string c = checkAgainstReference(b);
  CHECK(contains(c, "bias_add 'bias_add_4', hard_swish 'hard_swish_5'"));
  CHECK(contains(c, "bias_add 'bias_add_4', gelu 'gelu_5'"));
}

TEST_CASE("ccompiler plugin: compiler errors name the command, the message and the line",
          "[ccompiler_plugin]") {
  GraphBuilder b("tessera_err");
  b.output(b.op("relu", {b.input("x", {4})}));
  std::unique_ptr<plugin::PluginModule> m;
  {
    // `restrict` defined away into a syntax error: the compiler fails on
    // the first generated function that uses it.
    ScopedEnv flags("TESSERA_CCOMPILER_CFLAGS", "-fPIC -shared -std=c99 -Drestrict=@");
    std::string err = compile(b, m);
    INFO(err);
    CHECK(contains(err, "ccompiler: the C compiler failed (exit status 1): "));
    CHECK(contains(err, "-Drestrict=@ -o "));
    CHECK(contains(err, "tessera_err.c:"));
    CHECK(contains(err, "error"));
    CHECK(contains(err, "generated C:\n  tessera_err.c:"));
    CHECK(contains(err, " | static void op0_relu_1(const float *restrict in0"));
  }
  {
    ScopedEnv cc("TESSERA_CC", "/nonexistent/cc");
    std::string err = compile(b, m);
    CHECK(contains(err, "ccompiler: cannot run the C compiler '/nonexistent/cc': No such file or "
                        "directory (set TESSERA_CC or CC to a C compiler; command: "
                        "/nonexistent/cc -march=native -O3"));
  }
  REQUIRE(compile(b, m) == ""); // the defaults again
}

TEST_CASE("ccompiler plugin: damaged saved bytes are refused", "[ccompiler_plugin]") {
  GraphBuilder b = smallCnn();
  std::unique_ptr<plugin::PluginModule> m;
  REQUIRE(compile(b, m) == "");
  std::string bytes = m->save().value();
  // Every truncation (in steps, and the last bytes one by one) is an error.
  for (size_t n = 0; n < bytes.size(); n += (n + 64 < bytes.size() ? 97 : 1)) {
    auto loaded = thePlugin().load("ccompiler", std::string_view(bytes).substr(0, n));
    INFO("truncated to " << n << " of " << bytes.size());
    REQUIRE_FALSE(loaded.ok());
  }
  auto extra = thePlugin().load("ccompiler", bytes + "x");
  REQUIRE_FALSE(extra.ok());
  CHECK(contains(extra.error().str(), "1 bytes follow the last function"));
  std::string bad = bytes;
  bad[0] = 'X';
  auto magic = thePlugin().load("ccompiler", bad);
  REQUIRE_FALSE(magic.ok());
  CHECK(contains(magic.error().str(), "not a saved ccompiler module (no \"TSCC\" magic)"));
}

TEST_CASE("ccompiler plugin: calls with wrong arguments are refused", "[ccompiler_plugin]") {
  GraphBuilder b("tessera_args");
  b.output(b.op("relu", {b.input("x", {2, 3})}));
  std::unique_ptr<plugin::PluginModule> m;
  REQUIRE(compile(b, m) == "");
  std::vector<ir::Tensor> outs;
  ir::Tensor wrong(ir::DType::F32, {3, 2});
  std::string err = call(*m, "tessera_args", {wrong}, {{2, 3}}, outs);
  CHECK(contains(err, "ccompiler runtime module: function 'tessera_args' argument 0 (input 0): "
                      "expected f32[2, 3], got f32[3, 2]"));
  CHECK_FALSE(m->function("nope").ok());
}

TEST_CASE("ccompiler plugin: one module runs on several threads at once", "[ccompiler_plugin]") {
  GraphBuilder b = smallCnn();
  std::unique_ptr<plugin::PluginModule> m;
  REQUIRE(compile(b, m) == "");
  // Each thread has its own inputs (and so its own expected outputs).
  std::vector<std::vector<ir::Tensor>> inputs, want;
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> dist(-1, 1);
  for (int t = 0; t < 4; ++t) {
    std::vector<double> v(2 * 3 * 12 * 12);
    for (double &d : v)
      d = dist(rng);
    inputs.push_back({ir::Tensor::fromDoubles(ir::DType::F32, {2, 3, 12, 12}, v)});
    want.push_back(b.reference(&inputs.back()));
  }
  std::vector<std::vector<ir::Tensor>> got(4);
  std::vector<std::string> errors(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int k = 0; k < 50 && errors[size_t(t)].empty(); ++k)
        errors[size_t(t)] = call(*m, "tessera_cnn", inputs[size_t(t)], b.outputShapes(),
                                 got[size_t(t)]);
    });
  for (auto &th : threads)
    th.join();
  for (int t = 0; t < 4; ++t) {
    INFO("thread " << t);
    REQUIRE(errors[size_t(t)] == "");
    requireAllClose(got[size_t(t)], want[size_t(t)]);
  }
}
