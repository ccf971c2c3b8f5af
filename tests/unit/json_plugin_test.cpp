//===- tests/unit/json_plugin_test.cpp - The json reference plugin --------===//
//
// The json plugin (plugins/json) through its C ABI only: the built .so is
// dlopen'ed and queried as the core does, its checker, codegen, runtime
// modules and module factory are called with C structs, and every result is
// compared with the core's reference interpreter run on the same
// computation (rtol 1e-4, atol 1e-5). Each computation is written once with
// GraphBuilder, which produces both the tessera.graph JSON and the core IR.
// Also: the JsonRuntime SDK base on its own (init once, argument checks,
// saved-bytes parsing). The loader, GraphBuilder and the helpers are
// plugin_test_harness.h's (shared with the other plugins' tests).
//
//===----------------------------------------------------------------------===//
#include "plugin_test_harness.h"

#include "bridge/pattern.h"
#include "tessera/sdk/json_runtime.hpp"

#include <atomic>
#include <cstring>
#include <numeric>
#include <random>
#include <set>

#ifndef TESSERA_JSON_PLUGIN
#error "TESSERA_JSON_PLUGIN (the path of libtessera_json.so) is set by tests/CMakeLists.txt"
#endif

namespace {

using namespace tessera;
using namespace tessera::test;

/// The plugin, loaded as the core loads it.
const CPlugin &plugin() {
  static const CPlugin p(TESSERA_JSON_PLUGIN, "json");
  return p;
}

} // namespace

// Two hosts in one process that load the same file share the library
// (dlopen), so the entry point runs twice; the SDK must hand out the same
// descriptor, and the first one must stay valid (plugin.h: valid until the
// library is unloaded). Under ASan the first query's tables were freed.
TEST_CASE("json plugin: a second query returns the same descriptor", "[json_plugin]") {
  const tessera_plugin_t &first = plugin().desc();
  test::CPlugin again(TESSERA_JSON_PLUGIN, "json");
  CHECK(&again.desc() == &first);
  CHECK(std::string(first.name) == "json");
  size_t n = 0;
  for (const char *const *op = first.checker->ops; *op; ++op)
    n += std::string(*op).size() > 0;
  CHECK(n > 20);
}

TEST_CASE("json plugin: the descriptor", "[json_plugin]") {
  const tessera_plugin_t &p = plugin().desc();
  CHECK(p.abi_major == TESSERA_PLUGIN_ABI_MAJOR);
  CHECK(std::string(p.name) == "json");
  CHECK(std::string(p.version) == "1.0.0");
  CHECK(std::string(p.description).find("f32") != std::string::npos);
  REQUIRE(p.num_module_factories == 1);
  CHECK(std::string(p.module_factories[0]->type_key) == "json");
  CHECK(p.codegen->flags == 0);

  std::set<std::string> ops;
  for (const char *const *op = p.checker->ops; *op; ++op)
    ops.insert(*op);
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
                         "bias_add",
                         "dense",
                         "matmul",
                         "conv2d",
                         "max_pool2d",
                         "avg_pool2d",
                         "global_avg_pool2d",
                         "global_max_pool2d",
                         "softmax",
                         "log_softmax",
                         "reshape",
                         "flatten",
                         "transpose",
                         "concat",
                         "batch_norm"}) {
    INFO(op);
    CHECK(ops.count(op) == 1);
  }
  REQUIRE(p.checker->num_patterns == 3);
  for (size_t i = 0; i < p.checker->num_patterns; ++i) {
    auto parsed =
        bridge::parsePattern(p.checker->patterns[i]->name, p.checker->patterns[i]->pattern);
    INFO((parsed.ok() ? "" : parsed.error().str()));
    CHECK(parsed.ok());
  }
  CHECK(std::string(p.checker->patterns[0]->name) == "conv2d_bias_act");
  CHECK(std::string(p.checker->patterns[0]->pattern) ==
        "relu|leaky_relu|clip|sigmoid|tanh|hard_swish|silu|gelu?(bias_add|add(conv2d(*, const), "
        "const))");
  CHECK(std::string(p.checker->patterns[1]->name) == "conv2d_act");
  CHECK(std::string(p.checker->patterns[2]->name) == "dense_bias_act");
}

TEST_CASE("json plugin: the checker takes f32 calls it can run and says why not", "[json_plugin]") {
  CHECK(plugin().checkOp("add", {{2, 3}, {3}}, {2, 3}).ok);
  CHECK(plugin()
            .checkOp("conv2d", {{1, 4, 8, 8}, {4, 1, 3, 3}}, {1, 4, 6, 6},
                     {intsAttr("strides", {1, 1}), intsAttr("pads", {0, 0, 0, 0}),
                      intsAttr("dilation", {1, 1}),
                      [] {
                        tessera_attr_t a{};
                        a.struct_size = sizeof a;
                        a.name = "groups";
                        a.kind = TESSERA_ATTR_INT;
                        a.i = 4;
                        return a;
                      }()})
            .ok);

  auto f16 = plugin().checkOp("add", {{2, 3}, {2, 3}}, {2, 3}, {}, DLDataType{kDLFloat, 16, 1});
  CHECK_FALSE(f16.ok);
  CHECK(f16.reason == "json plugin: only f32, got f16");

  auto gelu = plugin().checkOp("gelu", {{4}}, {4}, {stringAttr("approximate", "erf")});
  CHECK_FALSE(gelu.ok);
  CHECK(gelu.reason == "json plugin: attribute 'approximate' = \"erf\" is not supported "
                       "(\"none\" or \"tanh\")");

  auto pads = plugin().checkOp("conv2d", {{1, 1, 8, 8}, {1, 1, 3, 3}}, {1, 1, 6, 6},
                               {intsAttr("pads", {0, 0})});
  CHECK_FALSE(pads.ok);
  CHECK(pads.reason == "json plugin: attribute 'pads' must have 4 values, got 2");

  auto shape = plugin().checkOp("dense", {{2, 8}, {4, 8}}, {2, 5});
  CHECK_FALSE(shape.ok);
  CHECK(shape.reason ==
        "json plugin: the declared output f32[2, 5] is not the computed shape [2, 4]");

  auto unknown = plugin().checkOp("topk", {{4}}, {2});
  CHECK_FALSE(unknown.ok);
  CHECK(unknown.reason == "json plugin: op 'topk' is not supported");

  // The reason is truncated to the caller's buffer.
  ir::Shape out{2, 3};
  tessera_tensor_type_t t{sizeof(tessera_tensor_type_t), {kDLInt, 64, 1}, 2, out.data()};
  const tessera_tensor_type_t *ts[] = {&t, &t};
  tessera_op_desc_t d{sizeof d, "add", "", nullptr, 0, ts, 2, ts, 1};
  char small[8];
  CHECK_FALSE(plugin()->checker->check_op(plugin()->state, &d, small, sizeof small));
  CHECK(std::string(small) == "json pl");
}

TEST_CASE("json plugin: elementwise ops with broadcasting", "[json_plugin]") {
  GraphBuilder b("tessera_elementwise");
  addElementwiseOps(b);
  plugin().checkAgainstReference(b);
}

TEST_CASE("json plugin: conv2d and pooling", "[json_plugin]") {
  SECTION("strided, padded, dilated, grouped conv2d") {
    GraphBuilder b("tessera_conv");
    int64_t x = b.input("x", {2, 4, 9, 10});
    int64_t w = b.constant("w", {6, 2, 3, 2});
    b.output(b.op("conv2d", {x, w},
                  {{"strides", ints({2, 1})},
                   {"pads", ints({1, 0, 2, 1})},
                   {"dilation", ints({2, 1})},
                   {"groups", int64_t(2)}}));
    plugin().checkAgainstReference(b);
  }
  SECTION("depthwise and 1x1 conv2d, weights as inputs") {
    GraphBuilder b("tessera_conv_dw");
    int64_t x = b.input("x", {1, 3, 7, 7});
    int64_t dw = b.input("dw", {3, 1, 3, 3});
    int64_t pw = b.input("pw", {5, 3, 1, 1});
    int64_t d = b.op("conv2d", {x, dw}, {{"pads", ints({1, 1, 1, 1})}, {"groups", int64_t(3)}});
    b.output(b.op("conv2d", {d, pw}));
    b.output(b.op("conv2d", {x, pw}, {{"strides", ints({2, 2})}}));
    plugin().checkAgainstReference(b);
  }
  SECTION("max and average pooling") {
    GraphBuilder b("tessera_pool");
    int64_t x = b.input("x", {2, 3, 7, 8});
    b.output(b.op("max_pool2d", {x}, {{"pool_size", ints({3, 3})}, {"strides", ints({2, 2})}}));
    addPoolingOps(b, x);
    plugin().checkAgainstReference(b);
  }
}

TEST_CASE("json plugin: products and softmax", "[json_plugin]") {
  GraphBuilder b("tessera_products");
  int64_t x = b.input("x", {3, 8});
  int64_t w = b.constant("w", {5, 8}); // pre-packed at init
  int64_t w2 = b.input("w2", {4, 5});  // transposed per call
  int64_t h = b.op("dense", {x, w});
  b.output(b.op("dense", {h, w2}));
  b.output(b.op("dense", {b.input("x3", {2, 2, 8}), w}));
  // matmul: 2-D, broadcast batch dims, 1-D promotion on either side.
  b.output(b.op("matmul", {x, b.input("m", {8, 6})}));
  b.output(b.op("matmul", {b.input("a4", {2, 1, 3, 4}), b.input("b3", {3, 4, 5})}));
  b.output(b.op("matmul", {b.input("v", {4}), b.input("bm", {2, 4, 3})}));
  b.output(b.op("matmul", {b.input("am", {2, 3, 4}), b.input("u", {4})}));
  b.output(b.op("batch_matmul", {b.input("ba", {1, 4, 3}), b.input("bb", {2, 5, 4})},
                {{"transpose_a", true}, {"transpose_b", true}}));
  b.output(b.op("softmax", {h}, {{"axis", int64_t(1)}}));
  b.output(b.op("log_softmax", {b.input("z", {2, 3, 4})}, {{"axis", int64_t(-2)}}));
  plugin().checkAgainstReference(b);
}

TEST_CASE("json plugin: normalisation and data movement", "[json_plugin]") {
  GraphBuilder b("tessera_movement");
  int64_t x = b.input("x", {2, 3, 4, 5});
  int64_t bn = b.op("batch_norm",
                    {x, b.constant("gamma", {3}), b.constant("beta", {3}), b.constant("mean", {3}),
                     b.constant("var", {3}, 0.5, 2)},
                    {{"epsilon", 1e-3}});
  b.output(bn);
  b.output(b.op("bias_add", {x, b.constant("bias", {4})}, {{"axis", int64_t(2)}}));
  b.output(b.op("reshape", {bn}, {{"newshape", ints({0, -1, 5})}}));
  b.output(b.op("flatten", {x}, {{"axis", int64_t(2)}}));
  b.output(b.op("transpose", {x}, {{"perm", ints({2, 0, 3, 1})}}));
  b.output(b.op("transpose", {x}));
  b.output(b.op("concat", {x, b.input("y", {2, 1, 4, 5}), bn}, {{"axis", int64_t(1)}}));
  b.output(b.op("concat", {x, x}, {{"axis", int64_t(-1)}}));
  b.output(x); // an input passed through
  plugin().checkAgainstReference(b);
}

TEST_CASE("json plugin: composite nodes, fused and inlined", "[json_plugin]") {
  GraphBuilder b("tessera_composites");
  int64_t x = b.input("x", {1, 3, 8, 8});
  int64_t w = b.constant("w", {4, 3, 3, 3});
  int64_t bias = b.constant("bias", {4});
  // relu(bias_add(conv2d)) with the constants inside the body, as the core
  // outlines a 'const' leaf: fused into one kernel.
  int64_t c1 = b.composite("json.conv2d_bias_act", {x}, [](GraphBuilder &g, auto p) {
    int64_t conv =
        g.op("conv2d", {p[0], g.constant("cw", {4, 3, 3, 3})}, {{"pads", ints({1, 1, 1, 1})}});
    return g.op("relu", {g.op("bias_add", {conv, g.constant("cb", {4})})});
  });
  // The same with the constants as composite inputs (bodies of a codegen
  // with TESSERA_CODEGEN_CONSTANTS_AS_INPUTS look like this).
  b.output(b.composite("json.conv2d_bias_act", {x, w, bias}, [](GraphBuilder &g, auto p) {
    return g.op("relu", {g.op("bias_add", {g.op("conv2d", {p[0], p[1]}), p[2]})});
  }));
  b.output(c1);
  // clip(add(conv2d, [4, 1, 1])) without an activation-free bias_add.
  int64_t cb = b.constant("cbias", {4, 1, 1});
  b.output(b.composite("json.conv2d_bias_act", {c1, b.constant("w2", {4, 4, 1, 1}), cb},
                       [](GraphBuilder &g, auto p) {
                         return g.op("clip", {g.op("add", {g.op("conv2d", {p[0], p[1]}), p[2]})},
                                     {{"min", 0.0}, {"max", 0.2}});
                       }));
  // sigmoid(conv2d): no bias.
  b.output(b.composite("json.conv2d_act", {x, w}, [](GraphBuilder &g, auto p) {
    return g.op("sigmoid", {g.op("conv2d", {p[0], p[1]}, {{"strides", ints({2, 2})}})});
  }));
  // dense + bias_add + gelu, and dense + add(bias) without activation.
  int64_t v = b.input("v", {2, 6});
  int64_t dw = b.constant("dw", {3, 6});
  int64_t db = b.constant("db", {3});
  b.output(b.composite("json.dense_bias_act", {v, dw, db}, [](GraphBuilder &g, auto p) {
    return g.op("gelu",
                {g.op("bias_add", {g.op("dense", {p[0], p[1]}), p[2]}, {{"axis", int64_t(-1)}})});
  }));
  b.output(b.composite("json.dense_bias_act", {v, dw, db}, [](GraphBuilder &g, auto p) {
    return g.op("add", {g.op("dense", {p[0], p[1]}), p[2]});
  }));
  // A body the runtime does not fuse (the add is not a per-channel bias):
  // evaluated node by node.
  int64_t full = b.constant("full", {1, 4, 8, 8});
  b.output(b.composite("json.conv2d_bias_act", {x, w, full}, [](GraphBuilder &g, auto p) {
    return g.op("tanh", {g.op("add", {g.op("conv2d", {p[0], p[1]}, {{"pads", ints({1, 1, 1, 1})}}),
                                      p[2]})});
  }));
  // A body with its own const node (an index into the function's constants).
  b.output(b.composite("json.dense_bias_act", {v, dw}, [](GraphBuilder &g, auto p) {
    return g.op("relu", {g.op("add", {g.op("dense", {p[0], p[1]}), g.constant("inner", {3})})});
  }));
  plugin().checkAgainstReference(b);
}

TEST_CASE("json plugin: codegen refuses what it cannot run, naming the node", "[json_plugin]") {
  ModulePtr m(nullptr, destroyModule);
  // An op the plugin lacks.
  GraphBuilder c("tessera_bad");
  c.output(c.op("cumsum", {c.input("x", {2, 4})}));
  CHECK(plugin().compile(c, m) ==
        "json runtime module: function 'tessera_bad': node 1 ('cumsum_1', cumsum): op 'cumsum' is "
        "not supported");
  // Bad JSON.
  CHECK(plugin().compile(c, m, "{\"format\": \"tessera.graph\"") ==
        "json runtime module: function 'tessera_bad': tessera.graph JSON: not valid JSON");
  // An f16 node.
  sdk::Graph g = c.graph();
  g.nodes.resize(1);
  g.outputs.clear();
  sdk::Node relu;
  relu.kind = sdk::Node::Kind::Op;
  relu.op = "relu";
  relu.name = "r";
  relu.inputs = {{0, 0}};
  relu.outputs = {sdk::TensorType{DLDataType{kDLFloat, 16, 1}, {2, 4}}};
  g.nodes.push_back(relu);
  g.outputs = {{1, 0}};
  CHECK(plugin().compile(c, m, sdk::writeGraph(g)) ==
        "json runtime module: function 'tessera_bad': node 1 ('r', relu): only f32, got f16");
  // Types that do not follow from the inputs (a tampered graph) are refused
  // before any kernel could overrun a buffer.
  g.nodes[1].outputs[0] = sdk::TensorType{kF32, {2, 5}};
  CHECK(plugin().compile(c, m, sdk::writeGraph(g)) ==
        "json runtime module: function 'tessera_bad': node 1 ('r', relu): the declared output "
        "f32[2, 5] is not the computed shape [2, 4]");
  g.nodes[1].outputs[0] = sdk::TensorType{kF32, {int64_t(1) << 40, int64_t(1) << 40}};
  CHECK(plugin().compile(c, m, sdk::writeGraph(g)) ==
        "json runtime module: function 'tessera_bad': tessera.graph JSON: graph node 1: shape "
        "f32[1099511627776, 1099511627776] has more than 2^48 elements");
  // JSON values of the wrong type.
  CHECK(plugin()
            .compile(c, m, "{\"format\": 5}")
            .rfind("json runtime module: function 'tessera_bad': tessera.graph JSON: ", 0) == 0);
  CHECK(m == nullptr);
}

TEST_CASE("json plugin: saved modules are checked when loaded", "[json_plugin]") {
  GraphBuilder b("tessera_small");
  int64_t x = b.input("x", {2, 3});
  b.output(b.op("relu", {b.op("dense", {x, b.constant("w", {2, 3})})}));
  ModulePtr m(nullptr, destroyModule);
  REQUIRE(plugin().compile(b, m) == "");
  const std::string bytes = saveModule(m.get());
  REQUIRE(bytes.substr(0, 4) == "TSJR");
  ModulePtr loaded(nullptr, destroyModule);

  // Every truncation is an error, never a crash.
  for (size_t n = 0; n < bytes.size(); ++n) {
    INFO("first " << n << " bytes");
    std::string err = plugin().load(std::string_view(bytes).substr(0, n), loaded);
    CHECK(err.rfind("json runtime module: ", 0) == 0);
    CHECK(loaded == nullptr);
  }
  CHECK(plugin().load(bytes.substr(0, 0), loaded) ==
        "json runtime module: truncated at byte 0 while reading the magic (needs 4 bytes, 0 "
        "left)");
  CHECK(plugin().load(bytes.substr(0, 10), loaded) ==
        "json runtime module: truncated at byte 8 while reading the type key length (needs 8 "
        "bytes, 2 left)");

  // Every single corrupted byte is an error or a valid module, never a crash
  // (constant data bytes just change the values).
  for (size_t i = 0; i < bytes.size(); ++i)
    for (unsigned char v : {0x00, 0x7f, 0xff}) {
      std::string bad = bytes;
      bad[i] = char(v);
      std::string err = plugin().load(bad, loaded);
      INFO("byte " << i << " = " << int(v) << ": " << err);
      CHECK((err.empty() ? loaded != nullptr : loaded == nullptr));
    }

  std::string other = bytes;
  other[0] = 'X';
  CHECK(plugin().load(other, loaded) ==
        "json runtime module: not a saved JsonRuntime module (no \"TSJR\" magic)");
  CHECK(plugin().load(bytes + "!", loaded) == "json runtime module: corrupted at byte " +
                                                  std::to_string(bytes.size()) +
                                                  ": 1 bytes follow the last function");
  // A huge length is caught before anything is allocated.
  std::string huge = bytes;
  for (size_t i = 8; i < 16; ++i)
    huge[i] = char(0xff);
  CHECK(plugin().load(huge, loaded) ==
        "json runtime module: truncated at byte 16 while reading the type key (needs "
        "18446744073709551615 bytes, " +
            std::to_string(bytes.size() - 16) + " left)");
}

TEST_CASE("SDK readers refuse shapes whose sizes would overflow", "[json_plugin][sdk]") {
  // Found by fuzz_json_module: a constant of shape [huge, huge, 0] took 0
  // bytes, and its element count overflowed int64 when computed in order.
  auto savedWithConstant = [](std::vector<int64_t> shape) {
    std::string b = "TSJR";
    auto u = [&b](uint64_t v, int bytes) {
      for (int i = 0; i < bytes; ++i)
        b.push_back(char((v >> (8 * i)) & 0xff));
    };
    auto str = [&](std::string_view s) { u(s.size(), 8), b.append(s); };
    u(sdk::JsonRuntime::kFormatVersion, 4);
    str("json");
    u(1, 8);        // functions
    str("tessera_f");
    str("{}");
    u(1, 8);        // constants
    str("w");
    u(kDLFloat, 1), u(32, 1), u(1, 2);
    u(shape.size(), 4);
    for (int64_t d : shape)
      u(uint64_t(d), 8);
    u(0, 8);        // data bytes
    return b;
  };
  auto parseError = [](const std::string &bytes) {
    try {
      sdk::JsonRuntime::parse(bytes, "json");
    } catch (const sdk::Error &e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const int64_t big = int64_t(1) << 40;
  CHECK(parseError(savedWithConstant({big, big, 0})) ==
        "json runtime module: corrupted at byte 104: constant 0 of function 0 ('tessera_f') has "
        "an impossible shape f32[1099511627776, 1099511627776, 0]");
  CHECK(parseError(savedWithConstant({sdk::kMaxElements + 1, 0})).find("impossible shape") !=
        std::string::npos);
  // Within the limit, an empty constant reads (and then the graph is checked).
  CHECK(parseError(savedWithConstant({big, 0})).find("impossible shape") == std::string::npos);

  const std::string graph =
      R"({"format": "tessera.graph", "version": 1, "symbol": "f", )"
      R"("nodes": [{"kind": "input", "name": "x", "outputs": )"
      R"([{"dtype": "f32", "shape": [1099511627776, 1099511627776]}]}], )"
      R"("inputs": [0], "outputs": [[0, 0]]})";
  try {
    sdk::readGraph(graph);
    FAIL("a graph with a shape of 2^80 elements was read");
  } catch (const sdk::Error &e) {
    CHECK(std::string(e.what()) == "tessera.graph JSON: graph node 0: shape f32[1099511627776, "
                                   "1099511627776] has more than 2^48 elements");
  }
  CHECK(sdk::shapeFits(std::vector<int64_t>{big, 256}));
  CHECK(!sdk::shapeFits(std::vector<int64_t>{big, 257}));
  CHECK(!sdk::shapeFits(std::vector<int64_t>{-1}));
}

// The taps of a window inside a range, which the core's reference pooling,
// the json plugin's and the dnnl plugin's max pooling all take from the SDK:
// against counting them one by one, windows before, across and after it.
TEST_CASE("sdk::tapsInside gives the taps a count finds", "[json_plugin]") {
  for (int64_t K : {1, 2, 3, 7})
    for (int64_t step : {1, 2, 3})
      for (int64_t start = -12; start <= 12; ++start)
        for (auto [lo, hi] : {std::pair<int64_t, int64_t>{0, 5}, {-2, 7}, {3, 4}, {0, 0}}) {
          int64_t first = -1, end = -1;
          for (int64_t k = 0; k < K; ++k)
            if (start + k * step >= lo && start + k * step < hi) {
              first = first < 0 ? k : first;
              end = k + 1;
            }
          const sdk::TapRange t = sdk::tapsInside(start, K, step, lo, hi);
          INFO("K " << K << " step " << step << " start " << start << " in [" << lo << ", " << hi
                    << ")");
          CHECK(t.count() == (first < 0 ? 0 : end - first));
          if (first >= 0)
            CHECK((t.first == first && t.end == end));
          CHECK((0 <= t.first && t.first <= t.end && t.end <= K));
        }
}

TEST_CASE("json plugin: calls with wrong arguments name the argument", "[json_plugin]") {
  GraphBuilder b("tessera_args");
  int64_t x = b.input("x", {2, 3});
  b.output(b.op("dense", {x, b.constant("w", {4, 3})}));
  ModulePtr m(nullptr, destroyModule);
  REQUIRE(plugin().compile(b, m) == "");
  tessera_function_t fn = getFunction(m.get(), "tessera_args");

  auto callWith = [&](std::vector<DLTensor> args) {
    std::vector<const DLTensor *> ptrs;
    for (const DLTensor &t : args)
      ptrs.push_back(&t);
    tessera_status_code_t code = TESSERA_STATUS_OK;
    std::string err = take(fn.call(fn.self, ptrs.data(), ptrs.size()), &code);
    if (!err.empty())
      CHECK(code == TESSERA_STATUS_INVALID_ARGUMENT);
    return err;
  };
  ir::Tensor in(ir::DType::F32, {2, 3}), out(ir::DType::F32, {2, 4});
  ir::Tensor wide(ir::DType::F32, {2, 5}), f16(ir::DType::F16, {2, 4});
  CHECK(callWith({in.dl(), out.dl()}) == "");
  CHECK(callWith({in.dl()}) == "json runtime module: function 'tessera_args' takes 1 inputs and "
                               "1 outputs (2 arguments), got 1");
  CHECK(callWith({wide.dl(), out.dl()}) == "json runtime module: function 'tessera_args' "
                                           "argument 0 (input 'x'): expected f32[2, 3], got "
                                           "f32[2, 5]");
  CHECK(callWith({in.dl(), f16.dl()}) == "json runtime module: function 'tessera_args' argument "
                                         "1 (output 0 ('dense_2')): expected f32[2, 4], got "
                                         "f16[2, 4]");
  DLTensor strided = in.dl();
  int64_t strides[] = {1, 2};
  strided.strides = strides;
  CHECK(callWith({strided, out.dl()}) == "json runtime module: function 'tessera_args' argument 0 "
                                         "(input 'x'): expected a compact row-major tensor, got "
                                         "strides [1, 2]");
  DLTensor gpu = in.dl();
  gpu.device = {kDLCUDA, 0};
  CHECK(callWith({gpu, out.dl()}) == "json runtime module: function 'tessera_args' argument 0 "
                                     "(input 'x'): expected a CPU tensor, got device type 2");

  tessera_function_t none{};
  none.struct_size = sizeof none;
  tessera_status_code_t code = TESSERA_STATUS_OK;
  CHECK(take(m->get_function(m->self, "other", &none), &code) == "module has no function 'other'");
  CHECK(code == TESSERA_STATUS_NOT_FOUND);
}

TEST_CASE("json plugin: the source is the JSON graph", "[json_plugin]") {
  GraphBuilder b("tessera_source");
  b.output(b.op("relu", {b.input("x", {2})}));
  ModulePtr m(nullptr, destroyModule);
  REQUIRE(plugin().compile(b, m) == "");
  std::string text;
  REQUIRE(take(m->get_source(m->self, "json", &appendToString, &text)) == "");
  CHECK(nlohmann::json::parse(text) == nlohmann::json::parse(b.json()));
  CHECK(text.find("\n  \"nodes\"") != std::string::npos); // pretty-printed
  std::string none;
  CHECK(take(m->get_source(m->self, "c", &appendToString, &none)) ==
        "json runtime module: no 'c' source (formats: json)");
}

TEST_CASE("json plugin: one module runs on several threads at once", "[json_plugin]") {
  GraphBuilder b("tessera_threads");
  int64_t x = b.input("x", {1, 4, 10, 10});
  int64_t c = b.composite(
      "json.conv2d_bias_act", {x, b.constant("w", {8, 4, 3, 3}), b.constant("bias", {8})},
      [](GraphBuilder &g, auto p) {
        return g.op("relu", {g.op("bias_add", {g.op("conv2d", {p[0], p[1]}), p[2]})});
      });
  b.output(b.op("global_avg_pool2d", {b.op("max_pool2d", {c}, {{"pool_size", ints({2, 2})}})}));
  ModulePtr m(nullptr, destroyModule);
  REQUIRE(plugin().compile(b, m) == "");
  // Each thread computes with its own input (x scaled by its number) and
  // checks against the single-threaded result for that input.
  checkConcurrentCalls(m.get(), b, /*threads=*/4, /*rounds=*/20);
}

TEST_CASE("json plugin: random shapes and attributes against the reference", "[json_plugin]") {
  std::mt19937 rng(20240601);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  auto f32 = [](const ir::Shape &s) { return ir::Type::tensor(ir::DType::F32, s); };
  auto valid = [&](const std::string &op, std::vector<ir::Type> types, const ir::Attrs &attrs) {
    return test::inferOp(op, std::move(types), attrs).ok();
  };

  SECTION("conv2d, plain and fused with a bias and an activation") {
    for (int done = 0, iter = 0; done < 40 && iter < 2000; ++iter) {
      int64_t groups = pick(1, 3), cg = pick(1, 3), og = pick(1, 3);
      ir::Shape xs{pick(1, 2), cg * groups, pick(1, 9), pick(1, 9)};
      ir::Shape ws{og * groups, cg, pick(1, 4), pick(1, 4)};
      ir::Attrs attrs{{"strides", ints({pick(1, 3), pick(1, 3)})},
                      {"pads", ints({pick(0, 2), pick(0, 2), pick(0, 2), pick(0, 2)})},
                      {"dilation", ints({pick(1, 2), pick(1, 2)})},
                      {"groups", groups}};
      if (!valid("conv2d", {f32(xs), f32(ws)}, attrs))
        continue;
      INFO("conv2d " << ir::Type::tensor(ir::DType::F32, xs).str() << " "
                     << ir::Type::tensor(ir::DType::F32, ws).str() << " " << attrs.str());
      GraphBuilder b("sweep_conv", uint32_t(iter));
      int64_t x = b.input("x", xs), w = b.constant("w", ws);
      if (done % 2 == 0) {
        b.output(b.op("conv2d", {x, w}, attrs));
      } else {
        int64_t bias = b.constant("b", {ws[0]});
        b.output(b.composite("json.conv2d_bias_act", {x, w, bias}, [&](GraphBuilder &g, auto p) {
          return g.op("relu", {g.op("bias_add", {g.op("conv2d", {p[0], p[1]}, attrs), p[2]})});
        }));
      }
      plugin().checkAgainstReference(b);
      ++done;
    }
  }
  SECTION("max and average pooling") {
    for (int done = 0, iter = 0; done < 40 && iter < 2000; ++iter) {
      ir::Shape xs{pick(1, 2), pick(1, 3), pick(1, 8), pick(1, 8)};
      ir::Attrs attrs{{"pool_size", ints({pick(1, 3), pick(1, 3)})},
                      {"strides", ints({pick(1, 3), pick(1, 3)})},
                      {"pads", ints({pick(0, 2), pick(0, 2), pick(0, 2), pick(0, 2)})},
                      {"dilation", ints({pick(1, 2), pick(1, 2)})},
                      {"ceil_mode", pick(0, 1) == 1}};
      if (!valid("max_pool2d", {f32(xs)}, attrs))
        continue;
      ir::Attrs avgAttrs = attrs;
      avgAttrs.set("count_include_pad", pick(0, 1) == 1);
      INFO(ir::Type::tensor(ir::DType::F32, xs).str() << " " << avgAttrs.str());
      GraphBuilder b("sweep_pool", uint32_t(iter));
      int64_t x = b.input("x", xs);
      b.output(b.op("max_pool2d", {x}, attrs));
      b.output(b.op("avg_pool2d", {x}, avgAttrs));
      plugin().checkAgainstReference(b);
      ++done;
    }
  }
  SECTION("broadcasting, matmul, transpose, concat, softmax") {
    auto randomShape = [&](size_t rank) {
      ir::Shape s(rank);
      for (auto &d : s)
        d = pick(1, 4);
      return s;
    };
    // b's shape: a suffix of a's with some dims set to 1.
    auto broadcastOf = [&](const ir::Shape &a) {
      ir::Shape s(a.begin() + pick(0, int64_t(a.size())), a.end());
      for (auto &d : s)
        if (pick(0, 2) == 0)
          d = 1;
      return s;
    };
    for (int iter = 0; iter < 30; ++iter) {
      GraphBuilder b("sweep_misc", uint32_t(iter));
      ir::Shape as = randomShape(size_t(pick(0, 4))), bs = broadcastOf(as);
      if (pick(0, 1))
        std::swap(as, bs);
      int64_t x = b.input("a", as), y = b.input("b", bs);
      static const char *const binaries[] = {"add", "subtract", "multiply", "maximum", "minimum"};
      b.output(b.op(binaries[pick(0, 4)], {x, y}));
      // matmul with random ranks and broadcast batch dims.
      int64_t M = pick(1, 4), K = pick(1, 5), N = pick(1, 4);
      ir::Shape ma = randomShape(size_t(pick(0, 2))), mb = broadcastOf(ma);
      if (pick(0, 1))
        std::swap(ma, mb);
      ma.push_back(M), ma.push_back(K), mb.push_back(K), mb.push_back(N);
      if (pick(0, 3) == 0)
        ma = {K};
      else if (pick(0, 3) == 0)
        mb = {K};
      INFO("matmul " << ir::Type::tensor(ir::DType::F32, ma).str() << " x "
                     << ir::Type::tensor(ir::DType::F32, mb).str());
      b.output(b.op("matmul", {b.input("ma", ma), b.input("mb", mb)}));
      // transpose with a random permutation, concat and softmax on a random axis.
      ir::Shape ts = randomShape(size_t(pick(1, 5)));
      std::vector<int64_t> perm(ts.size());
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), rng);
      int64_t t = b.input("t", ts);
      b.output(b.op("transpose", {t}, {{"perm", ints(perm)}}));
      int64_t axis = pick(-int64_t(ts.size()), int64_t(ts.size()) - 1);
      ir::Shape other = ts;
      other[size_t(axis < 0 ? axis + int64_t(ts.size()) : axis)] = pick(1, 3);
      b.output(b.op("concat", {t, b.input("u", other), t}, {{"axis", axis}}));
      b.output(b.op(pick(0, 1) ? "softmax" : "log_softmax", {t}, {{"axis", axis}}));
      plugin().checkAgainstReference(b);
    }
  }
}

//===----------------------------------------------------------------------===//
// The JsonRuntime SDK base on its own
//===----------------------------------------------------------------------===//

namespace {

/// A JsonRuntime that copies its first input to its first output.
class CopyRuntime : public sdk::JsonRuntime {
public:
  explicit CopyRuntime(std::vector<sdk::JsonFunction> fns, std::atomic<int> *inits)
      : JsonRuntime("copy", std::move(fns)), inits_(inits) {}

protected:
  void init(std::span<const sdk::JsonFunction> fns) override {
    ++*inits_;
    for (const sdk::JsonFunction &f : fns)
      for (const sdk::JsonConstant &c : f.constants)
        CHECK(reinterpret_cast<uintptr_t>(c.data()) % sdk::JsonConstant::kAlignment == 0);
  }
  void run(const sdk::JsonFunction &, std::span<const DLTensor *const> in,
           std::span<const DLTensor *const> out) const override {
    std::memcpy(sdk::tensorData(*out[0]), sdk::tensorData(*in[0]),
                sdk::tensorTypeOf(*in[0]).bytes());
  }

private:
  std::atomic<int> *inits_;
};

} // namespace

namespace {

/// A JsonRuntime that keeps its constants negated, in buffers of its own,
/// and gives the SDK the plain bytes back; errors of releaseConstant are
/// recorded for the test.
class NegatingRuntime : public sdk::JsonRuntime {
public:
  explicit NegatingRuntime(std::vector<sdk::JsonFunction> fns)
      : JsonRuntime("neg", std::move(fns)) {}
  std::vector<std::string> errors;

protected:
  void init(std::span<const sdk::JsonFunction> fns) override {
    for (const sdk::JsonFunction &f : fns)
      for (size_t c = 0; c < f.constants.size(); ++c) {
        const float *v = f.constants[c].as<float>();
        std::vector<float> mine(v, v + f.constants[c].type().numel());
        for (float &x : mine)
          x = -x;
        // (The restore function owns the module's copy here.)
        releaseConstant(f.index, c, [mine](std::byte *out) {
          auto *o = reinterpret_cast<float *>(out);
          for (size_t i = 0; i < mine.size(); ++i)
            o[i] = -mine[i];
        });
      }
    for (auto bad : {std::pair<size_t, size_t>{1, 0}, {0, 7}})
      try {
        releaseConstant(bad.first, bad.second, [](std::byte *) {});
      } catch (const sdk::Error &e) {
        errors.push_back(e.what());
      }
    try {
      releaseConstant(0, 0, nullptr);
    } catch (const sdk::Error &e) {
      errors.push_back(e.what());
    }
  }
  void run(const sdk::JsonFunction &, std::span<const DLTensor *const>,
           std::span<const DLTensor *const>) const override {}
};

} // namespace

TEST_CASE("JsonRuntime: a released constant is held no more and saved as it was",
          "[json_plugin]") {
  GraphBuilder b("neg_fn");
  int64_t x = b.input("x", {3});
  b.constant("c", {5});
  b.constant("d", {2, 3});
  b.output(x);
  std::string json = b.json();
  DLTensor c = b.constants()[0].dl(), d = b.constants()[1].dl();
  sdk::GraphView view{"neg_fn", json, {"c", "d"}, {&c, &d}, {}};
  std::vector<sdk::JsonFunction> fns;
  fns.push_back(sdk::JsonRuntime::functionFromGraph(view, "neg"));
  auto rt = sdk::JsonRuntime::create<NegatingRuntime>(std::move(fns));
  CHECK(rt->constantReleased(0, 0));
  CHECK(rt->constantReleased(0, 1));
  CHECK_FALSE(rt->constantReleased(0, 2));
  CHECK_FALSE(rt->constantReleased(1, 0));
  CHECK(rt->functions()[0].constants[0].data() == nullptr);
  CHECK(rt->plainConstantBytes() == 0);
  CHECK(rt->errors == std::vector<std::string>{
                          "neg runtime module: releaseConstant: no constant 0 in function 1",
                          "neg runtime module: releaseConstant: no constant 7 in function 0",
                          "neg runtime module: releaseConstant: constant 0 of function 'neg_fn' "
                          "needs a restore function"});
  // Saved, the constants are the bytes codegen gave, restored; loaded, the
  // module holds them until its init releases them again.
  std::string bytes;
  rt->save(sdk::Writer(&appendToString, &bytes));
  auto fnsBack = sdk::JsonRuntime::parse(bytes, "neg");
  REQUIRE(fnsBack[0].constants.size() == 2);
  for (size_t k = 0; k < 2; ++k) {
    INFO("constant " << k);
    CHECK(std::memcmp(fnsBack[0].constants[k].data(), b.constants()[k].bytes(),
                      b.constants()[k].nbytes()) == 0);
  }
  auto back = sdk::JsonRuntime::load<NegatingRuntime>(bytes, "neg");
  CHECK(back->plainConstantBytes() == 0);
  std::string again;
  back->save(sdk::Writer(&appendToString, &again));
  CHECK(again == bytes);
}

TEST_CASE("JsonRuntime: init once, constants owned, save and load", "[json_plugin]") {
  GraphBuilder b("copy_fn");
  int64_t x = b.input("x", {3});
  b.constant("c", {5});
  b.output(x);
  std::string json = b.json();
  ir::Tensor c = ir::Tensor::copyOf(b.constants()[0].dl());
  DLTensor cdl = c.dl();
  sdk::GraphView view{"copy_fn", json, {"c"}, {&cdl}, {}};

  std::atomic<int> inits{0};
  std::vector<sdk::JsonFunction> fns;
  fns.push_back(sdk::JsonRuntime::functionFromGraph(view, "copy"));
  auto rt = sdk::JsonRuntime::create<CopyRuntime>(std::move(fns), &inits);
  CHECK(inits == 1);
  c.setDouble(0, 42); // the module holds a copy
  CHECK(rt->functions()[0].constants[0].as<float>()[0] == float(b.constants()[0].getDouble(0)));
  REQUIRE(rt->function("copy_fn"));
  CHECK(rt->function("copy_fn") == rt->function("copy_fn"));
  CHECK(rt->function("nope") == nullptr);
  CHECK(inits == 1);

  std::string bytes;
  rt->save(sdk::Writer(&appendToString, &bytes));
  auto back = sdk::JsonRuntime::load<CopyRuntime>(bytes, "copy", &inits);
  CHECK(inits == 2);
  CHECK(back->functions()[0].json == json);
  CHECK(back->functions()[0].constants[0].type().str() == "f32[5]");
  CHECK(std::memcmp(back->functions()[0].constants[0].data(), b.constants()[0].bytes(), 20) == 0);
  ir::Tensor in = ir::Tensor::copyOf(b.inputs()[0].dl()), out(ir::DType::F32, {3});
  DLTensor args[] = {in.dl(), out.dl()};
  const DLTensor *ptrs[] = {&args[0], &args[1]};
  back->function("copy_fn")->run(ptrs);
  requireClose(out, in);

  // Loading under another type key is refused.
  try {
    sdk::JsonRuntime::load<CopyRuntime>(bytes, "json", &inits);
    FAIL("loaded");
  } catch (const sdk::Error &e) {
    CHECK(std::string(e.what()) == "json runtime module: the bytes were saved by a 'copy' module");
  }
  // A const node naming a missing constant is refused.
  sdk::GraphView noConstants{"copy_fn", json, {}, {}, {}};
  try {
    sdk::JsonRuntime::functionFromGraph(noConstants, "copy");
    FAIL("accepted");
  } catch (const sdk::Error &e) {
    CHECK(std::string(e.what()) == "copy runtime module: function 'copy_fn': const node 1 ('c') "
                                   "refers to constant 0, but there are 0");
  }
}
