//===- tests/unit/dnnl_plugin_test.cpp - The dnnl (oneDNN) plugin ---------===//
//
// The dnnl plugin (plugins/dnnl) through its C ABI only: the built .so is
// dlopen'ed and queried as the core does; graphs written with GraphBuilder
// (tessera.graph JSON and core IR at once) are compiled, run, saved, loaded
// through the "dnnl" module factory and run again, and every result is
// compared with the core's reference interpreter (rtol 1e-4, atol 1e-5;
// deeper blocks, whose sums run in f32 in oneDNN and in double in the
// reference, rtol 1e-4, atol 1e-4). Also: exact decline reasons, concurrent
// calls, corrupted saved bytes. The loader, GraphBuilder and the helpers
// are plugin_test_harness.h's (shared with the other plugins' tests).
//
//===----------------------------------------------------------------------===//
#include "plugin_test_harness.h"

#include <omp.h>

#include <set>

#ifndef TESSERA_DNNL_PLUGIN
#error "TESSERA_DNNL_PLUGIN (the path of libtessera_dnnl.so) is set by tests/CMakeLists.txt"
#endif

namespace {

using namespace tessera;
using namespace tessera::test;

/// The plugin, loaded as the core loads it.
const CPlugin &plugin() {
  static const CPlugin p(TESSERA_DNNL_PLUGIN, "dnnl");
  return p;
}

/// The plan `tessera inspect --source dnnl --format plan` would print for
/// `b` compiled by the plugin: its steps, each with oneDNN's implementation.
std::string compiledPlan(const GraphBuilder &b) {
  ModulePtr m(nullptr, destroyModule);
  REQUIRE(plugin().compile(b, m) == "");
  std::string plan;
  REQUIRE(take(m->get_source(m->self, "plan", &appendToString, &plan)) == "");
  return plan;
}

} // namespace

TEST_CASE("dnnl plugin: the descriptor", "[dnnl_plugin]") {
  const tessera_plugin_t &p = plugin().desc();
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
  CHECK(plugin().checkOp("conv2d", {{1, 3, 8, 8}, {8, 3, 3, 3}}, {1, 8, 6, 6}, {}, f16).reason ==
        "dnnl: conv2d: only f32, got f16");
  CHECK(plugin().checkOp("add", {{3, 1}, {1, 4}}, {3, 4}).reason ==
        "dnnl: add: oneDNN broadcasts only the second operand, and [3, 1] with [1, 4] "
        "broadcasts both");
  CHECK(plugin().checkOp("divide", {{4}, {2, 4}}, {2, 4}).reason ==
        "dnnl: divide: oneDNN broadcasts only the second operand, and [4] with [2, 4] "
        "broadcasts the first");
  CHECK(plugin().checkOp("subtract", {{4}, {2, 4}}, {2, 4}).ok); // swapped and negated
  CHECK(plugin().checkOp("gelu", {{2, 3}}, {2, 3}, {stringAttr("approximate", "fast")}).reason ==
        "dnnl: gelu: attribute 'approximate' = \"fast\" unsupported (\"none\" or \"tanh\")");
  tessera_attr_t ceil{};
  ceil.struct_size = sizeof ceil;
  ceil.name = "ceil_mode";
  ceil.kind = TESSERA_ATTR_BOOL;
  ceil.b = true;
  tessera_attr_t include = ceil;
  include.name = "count_include_pad";
  std::vector<int64_t> pool{3, 3}, strides{2, 2}, pads{1, 1, 1, 1};
  CHECK(plugin()
            .checkOp("avg_pool2d", {{1, 2, 6, 6}}, {1, 2, 4, 4},
                     {ceil, include, intsAttr("pool_size", pool), intsAttr("strides", strides),
                      intsAttr("pads", pads)})
            .reason == "dnnl: avg_pool2d: ceil_mode with count_include_pad unsupported when the "
                       "last window passes the padding");
  CHECK(plugin()
            .checkOp("batch_norm", {{2, 3, 4}, {4}, {4}, {4}, {4}}, {2, 3, 4}, {[] {
                       tessera_attr_t a{};
                       a.struct_size = sizeof a;
                       a.name = "axis";
                       a.kind = TESSERA_ATTR_INT;
                       a.i = 2;
                       return a;
                     }()})
            .reason == "dnnl: batch_norm: attribute 'axis' = 2 unsupported (oneDNN normalizes "
                       "along axis 1)");
  // (By a whole factor any rounding gives the same: taken, see below.)
  CHECK(plugin()
            .checkOp("resize2d", {{1, 2, 4, 4}}, {1, 2, 6, 6}, {intsAttr("size", {6, 6})})
            .reason ==
        "dnnl: resize2d: nearest_mode \"round_prefer_floor\" unsupported (oneDNN rounds "
        "half_pixel ties up: round_prefer_ceil)");
  CHECK(plugin().checkOp("conv2d", {{1, 3, 8, 8}, {8, 3, 3, 3}}, {1, 8, 6, 6}).ok);
  // oneDNN 2.6 has only its reference kernel for a softmax across the
  // channels of an NCHW tensor: better left to another target.
  tessera_attr_t axis1{};
  axis1.struct_size = sizeof axis1;
  axis1.name = "axis";
  axis1.kind = TESSERA_ATTR_INT;
  axis1.i = 1;
  CHECK(plugin().checkOp("softmax", {{1, 8, 5, 5}}, {1, 8, 5, 5}, {axis1}).reason ==
        "dnnl: softmax: would run oneDNN's reference kernel (ref:any)");
  CHECK(plugin().checkOp("softmax", {{1, 8, 5, 5}}, {1, 8, 5, 5}).ok); // the last axis
  // lstm: oneDNN has lstm_forward, but the host's lstm kernel is faster.
  CHECK_THAT(plugin()
                 .checkOp("lstm", {{5, 1, 4}, {1, 32, 4}, {1, 32, 8}, {1, 64}, {1, 1, 8}, {1, 1, 8}},
                          {5, 1, 1, 8})
                 .reason,
             Catch::StartsWith("dnnl: lstm: runs on the host: oneDNN 2.6's lstm_forward measured"));
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
    plugin().checkAgainstReference(b);
  }
  SECTION("the residual is an intermediate (summed in place)") {
    GraphBuilder b("tessera_residual_mid");
    int64_t x = b.input("x", {1, 16, 8, 8});
    int64_t id = b.op("relu", {b.op("conv2d", {x, b.constant("w0", {16, 16, 1, 1}, -0.3, 0.3)})});
    int64_t t = b.op("relu", {b.op("conv2d", {id, b.constant("w1", {16, 16, 1, 1}, -0.3, 0.3)})});
    b.output(b.composite("dnnl.conv2d_bias_add_relu",
                         {t, b.constant("w", {16, 16, 3, 3}, -0.2, 0.2), b.constant("b", {16}), id},
                         convBlock));
    plugin().checkAgainstReference(b);
  }
  SECTION("the residual is also the convolution's input (copied, not in place)") {
    GraphBuilder b("tessera_residual_self");
    int64_t x = b.input("x", {1, 16, 8, 8});
    int64_t id = b.op("relu", {b.op("conv2d", {x, b.constant("w0", {16, 16, 1, 1}, -0.3, 0.3)})});
    b.output(b.composite(
        "dnnl.conv2d_bias_add_relu",
        {id, b.constant("w", {16, 16, 3, 3}, -0.2, 0.2), b.constant("b", {16}), id}, convBlock));
    plugin().checkAgainstReference(b);
  }
}

// A matmul absorbs a bias, activations and a residual add as a dense does
// (one primitive with post-ops); with a 1-D operand it runs alone.
TEST_CASE("dnnl plugin: matmul + bias + activation + residual add, fused", "[dnnl_plugin]") {
  auto block = [](GraphBuilder &g, std::vector<int64_t> p) {
    return g.op("hard_swish", {g.op("add", {g.op("matmul", {p[0], p[1]}), p[2]})});
  };
  SECTION("constant weights, a [N] bias, then a residual add and relu") {
    GraphBuilder b("tessera_matmul_fused");
    int64_t x = b.input("x", {2, 3, 8}), r = b.input("r", {2, 3, 6});
    int64_t m = b.composite("dnnl.matmul_bias_act",
                            {x, b.constant("w", {8, 6}), b.constant("bias", {6})}, block);
    b.output(b.op("relu", {b.op("add", {m, r})}));
    plugin().checkAgainstReference(b);
  }
  SECTION("a computed right operand, transposed batch_matmul, a [1, 1, N] bias") {
    GraphBuilder b("tessera_bmm_fused");
    int64_t p = b.input("p", {2, 4, 3}), q = b.input("q", {2, 5, 4});
    int64_t bm =
        b.op("batch_matmul", {p, b.op("tanh", {q})}, {{"transpose_a", true}, {"transpose_b", true}});
    b.output(b.op("sigmoid", {b.op("add", {bm, b.constant("bias", {1, 1, 5})})}));
    plugin().checkAgainstReference(b);
  }
  SECTION("a 1-D operand: promoted, not fused") {
    GraphBuilder b("tessera_matvec");
    int64_t v = b.input("v", {4});
    b.output(b.op("relu", {b.op("add", {b.op("matmul", {v, b.constant("m", {4, 3})}),
                                        b.constant("bias", {3})})}));
    plugin().checkAgainstReference(b);
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
  plugin().checkAgainstReference(b);
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
  plugin().checkAgainstReference(b);
}

// What exporters write instead of fused ops, on the blocked layouts the
// convolutions pick: every step runs in one of oneDNN's jit kernels (before,
// a sigmoid, a per-channel multiply or a divide on a blocked tensor ran its
// reference kernel at ~150 ns per element), and the results are the
// interpreter's.
TEST_CASE("dnnl plugin: exporters' decomposed forms never run a reference kernel",
          "[dnnl_plugin]") {
  GraphBuilder b("tessera_no_ref");
  int64_t x = b.input("x", {1, 16, 12, 12});
  auto conv = [&](int64_t in, int64_t channels, int64_t out, const char *w) {
    return b.op("conv2d", {in, b.constant(w, {out, channels, 3, 3}, -0.2, 0.2)},
                {{"pads", ints({1, 1, 1, 1})}});
  };
  auto scalar = [&](const char *name, double v) { return b.constant(name, {}, v, v); };
  // Linear post-ops: (conv * 0.5 + 0.25) / 2 - 0.1, then silu.
  int64_t c0 = conv(x, 16, 32, "w0");
  int64_t lin = b.op("subtract",
                     {b.op("divide", {b.op("add", {b.op("multiply", {c0, scalar("half", 0.5)}),
                                                   scalar("quarter", 0.25)}),
                                      scalar("two", 2.0)}),
                      scalar("tenth", 0.1)});
  int64_t c1 = b.op("silu", {lin});
  // A SiLU as two ops on a tensor with two users (the conv's result).
  int64_t c2 = conv(c1, 32, 32, "w2");
  int64_t swish = b.op("multiply", {c2, b.op("sigmoid", {c2})});
  // Squeeze-excite: a computed per-channel gate times a blocked tensor.
  int64_t pooled = b.op("global_avg_pool2d", {swish});
  int64_t gate = b.op(
      "sigmoid", {b.op("conv2d", {pooled, b.constant("wse", {32, 32, 1, 1}, -0.3, 0.3)})});
  int64_t se = b.op("multiply", {swish, gate});
  // A batch_norm after a concat, decomposed as simplify-inference leaves it,
  // then relu; a divide by a scalar on the blocked result.
  int64_t cat = b.op("concat", {se, c0}, {{"axis", int64_t(1)}});
  int64_t affine = b.op(
      "relu", {b.op("add", {b.op("multiply", {cat, b.constant("scale", {64, 1, 1}, 0.5, 1.5)}),
                            b.constant("shift", {64, 1, 1})})});
  int64_t c3 = conv(affine, 64, 16, "w3");
  b.output(b.op("divide", {c3, scalar("three", 3.0)}));
  b.output(b.op("add", {c3, b.constant("bias", {16, 1, 1})}));
  const std::string plan = compiledPlan(b);
  INFO(plan);
  CHECK(plan.find("[ref") == std::string::npos);
  CHECK(plan.find("bnorm") != std::string::npos); // the affine + relu: one batch_normalization
  plugin().checkAgainstReference(b, 1e-4);
}

// Attention as exporters write it: heads split by reshape and transpose,
// a slice of the class token (ViT), a channel shuffle (ShuffleNet).
// torch's nn.MultiheadAttention projects [L, N, E] with a 2-D weight: the
// batch dims fold into the rows (one GEMM, not L of one row each), and the
// bias, gelu and residual still fuse.
TEST_CASE("dnnl plugin: a matmul by a weight without batch dims is one GEMM", "[dnnl_plugin]") {
  GraphBuilder b("tessera_folded_batch");
  int64_t x = b.input("x", {7, 1, 32});
  int64_t y = b.op("add", {b.op("matmul", {x, b.constant("w", {32, 48}, -0.3, 0.3)}),
                           b.constant("bias", {48})});
  int64_t h = b.op("gelu", {y});
  b.output(b.op("add", {b.op("matmul", {h, b.constant("w2", {48, 32}, -0.2, 0.2)}), x}));
  const std::string plan = compiledPlan(b);
  INFO(plan);
  // Two matmuls with everything fused (and the residual, a function input,
  // copied into the second one's destination first).
  CHECK(plan.find(" 3 steps,") != std::string::npos);
  CHECK(plan.find("copy of the residual") != std::string::npos);
  CHECK(plan.find(", gelu)") == std::string::npos);
  CHECK(plan.find(", add)") == std::string::npos);
  plugin().checkAgainstReference(b, 1e-4);
}

// oneDNN 2.6's matmul takes plain weights and packs them at every call;
// by constant weights without batch dims the product runs as an inner
// product, its weights packed once (weightsAsDense in lower.cpp): half the
// time of BERT's 768 -> 3072 products. Odd sizes, one output column, a
// one-row input, a transposed constant, with a bias, gelu and a residual.
TEST_CASE("dnnl plugin: a matmul by constant weights runs as an inner product", "[dnnl_plugin]") {
  // "step 3: node 11 ('matmul_11', matmul) inner_product [brgemm:avx512_core]"
  auto steps = [](const std::string &plan, const std::string &kind) {
    size_t n = 0;
    for (size_t at = plan.find(") " + kind + " ["); at != std::string::npos;
         at = plan.find(") " + kind + " [", at + 1))
      ++n;
    return n;
  };
  SECTION("constant weights: inner products, fused as before") {
    GraphBuilder b("tessera_dense_matmul");
    int64_t x = b.input("x", {1, 17, 33}), r = b.input("r", {1, 17, 3});
    int64_t m = b.op("matmul", {x, b.constant("w", {33, 47}, -0.3, 0.3)});
    int64_t h = b.op("gelu", {b.op("add", {m, b.constant("bias", {47})})});
    b.output(b.op("add", {b.op("matmul", {h, b.constant("w2", {47, 3}, -0.2, 0.2)}), r}));
    // One output column (a [K] weight, promoted), one row, a transposed one.
    b.output(b.op("matmul", {x, b.constant("v", {33}, -0.5, 0.5)}));
    b.output(b.op("matmul", {b.input("row", {1, 33}), b.constant("w3", {33, 1}, -0.5, 0.5)}));
    b.output(b.op("batch_matmul", {b.input("p", {1, 5, 33}), b.constant("wt", {1, 17, 33})},
                  {{"transpose_b", true}}));
    const std::string plan = compiledPlan(b);
    INFO(plan);
    CHECK(steps(plan, "inner_product") == 5);
    CHECK(steps(plan, "matmul") == 0);
    CHECK(plan.find(", gelu)") == std::string::npos); // fused
    plugin().checkAgainstReference(b, 1e-4);
  }
  SECTION("computed weights, a transposed input or batched weights stay matmuls") {
    GraphBuilder b("tessera_matmul_kept");
    int64_t x = b.input("x", {2, 7, 9});
    b.output(b.op("matmul", {x, b.op("tanh", {b.input("w", {9, 5})})}));
    b.output(b.op("batch_matmul", {x, b.constant("wb", {2, 7, 3})}, {{"transpose_a", true}}));
    b.output(b.op("matmul", {x, b.constant("w2", {2, 9, 4})}));
    const std::string plan = compiledPlan(b);
    INFO(plan);
    CHECK(steps(plan, "inner_product") == 0);
    CHECK(steps(plan, "matmul") == 3);
    plugin().checkAgainstReference(b, 1e-4);
  }
}

TEST_CASE("dnnl plugin: transpose and slice as strided reorders", "[dnnl_plugin]") {
  GraphBuilder b("tessera_strided");
  int64_t x = b.input("x", {1, 6, 32});
  int64_t q = b.op("reshape", {b.op("dense", {x, b.constant("wq", {32, 32}, -0.3, 0.3)})},
                   {{"newshape", ints({1, 6, 4, 8})}});
  int64_t heads = b.op("transpose", {q}, {{"perm", ints({0, 2, 1, 3})}});      // [1, 4, 6, 8]
  int64_t keysT = b.op("transpose", {q}, {{"perm", ints({0, 2, 3, 1})}});      // [1, 4, 8, 6]
  int64_t scores = b.op("softmax", {b.op("matmul", {heads, keysT})});          // [1, 4, 6, 6]
  int64_t ctx = b.op("transpose", {b.op("matmul", {scores, heads})}, {{"perm", ints({0, 2, 1, 3})}});
  b.output(b.op("reshape", {ctx}, {{"newshape", ints({1, 6, 32})}}));
  // The class token and every other token from the second on.
  b.output(b.op("slice", {x}, {{"starts", ints({0})}, {"ends", ints({1})}, {"axes", ints({1})}}));
  b.output(b.op("slice", {x},
                {{"starts", ints({1, -30})}, {"ends", ints({100, 32})}, {"axes", ints({-2, 2})},
                 {"steps", ints({2, 3})}}));
  // ShuffleNet's channel shuffle after a convolution (a blocked result).
  int64_t img = b.input("img", {1, 8, 5, 5});
  int64_t c = b.op("conv2d", {img, b.constant("w", {16, 8, 3, 3}, -0.2, 0.2)},
                   {{"pads", ints({1, 1, 1, 1})}});
  int64_t g = b.op("reshape", {c}, {{"newshape", ints({1, 2, 8, 5, 5})}});
  int64_t shuffled = b.op("transpose", {g}, {{"perm", ints({0, 2, 1, 3, 4})}});
  b.output(b.op("relu", {b.op("reshape", {shuffled}, {{"newshape", ints({1, 16, 5, 5})}})}));
  const std::string plan = compiledPlan(b);
  INFO(plan);
  CHECK(plan.find("[ref") == std::string::npos);
  plugin().checkAgainstReference(b, 1e-4);
  // Negative steps have no oneDNN form.
  CHECK(plugin()
            .checkOp("slice", {{4, 4}}, {4, 4},
                     {intsAttr("starts", {-1}), intsAttr("ends", {-100}), intsAttr("steps", {-1})})
            .reason == "dnnl: slice: steps other than positive unsupported (oneDNN has no "
                       "negative strides), got -1");
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
  plugin().checkAgainstReference(b, 1e-4);
}

TEST_CASE("dnnl plugin: products, normalisation, softmax, concat, broadcasting", "[dnnl_plugin]") {
  SECTION("matmul and batch_matmul") {
    GraphBuilder b("tessera_matmul");
    int64_t a = b.input("a", {2, 1, 3, 4}), c = b.input("c", {3, 4, 5});
    b.output(b.op("matmul", {a, c}));
    int64_t p = b.input("p", {2, 4, 3}), q = b.input("q", {1, 5, 4});
    b.output(b.op("batch_matmul", {p, q}, {{"transpose_a", true}, {"transpose_b", true}}));
    b.output(b.op("matmul", {b.input("v", {4}), b.constant("m", {4, 3})}));
    plugin().checkAgainstReference(b);
  }
  SECTION("dense with an activation and a rank-3 input") {
    GraphBuilder b("tessera_dense");
    int64_t x = b.input("x", {2, 3, 8});
    b.output(b.op("gelu", {b.op("bias_add",
                                {b.op("dense", {x, b.constant("w", {5, 8})}), b.constant("b", {5})},
                                {{"axis", int64_t(-1)}})}));
    plugin().checkAgainstReference(b);
  }
  SECTION("layer_norm, softmax, log_softmax, concat") {
    GraphBuilder b("tessera_norm");
    int64_t x = b.input("x", {2, 3, 4});
    b.output(b.op("layer_norm", {x, b.constant("g", {3, 4}), b.constant("b", {3, 4})},
                  {{"axis", int64_t(1)}}));
    b.output(b.op("log_softmax", {x}, {{"axis", int64_t(1)}}));
    b.output(b.op("concat", {b.op("softmax", {x}), x}, {{"axis", int64_t(-1)}}));
    plugin().checkAgainstReference(b);
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
    plugin().checkAgainstReference(b);
  }
  SECTION("resize2d (half_pixel) on a blocked convolution output") {
    GraphBuilder b("tessera_resize");
    int64_t c = b.op("conv2d", {b.input("x", {1, 3, 6, 5}), b.constant("w", {16, 3, 3, 3})},
                     {{"pads", ints({1, 1, 1, 1})}});
    b.output(b.op("resize2d", {c}, {{"mode", std::string("linear")}, {"size", ints({12, 7})}}));
    b.output(b.op("resize2d", {c},
                  {{"nearest_mode", std::string("round_prefer_ceil")}, {"size", ints({3, 10})}}));
    plugin().checkAgainstReference(b);
  }
  SECTION("nearest upsampling by whole factors, as torch exports it (asymmetric, floor)") {
    // The same as oneDNN's half_pixel by a whole factor (ops.cpp).
    GraphBuilder b("tessera_upsample");
    int64_t c = b.op("conv2d", {b.input("x", {1, 3, 5, 7}), b.constant("w", {8, 3, 1, 1})});
    auto nearest = [&](int64_t h, int64_t w, const char *coord, const char *mode) {
      return b.op("resize2d", {c},
                  {{"nearest_mode", std::string(mode)},
                   {"coordinate_transformation_mode", std::string(coord)},
                   {"size", ints({h, w})}});
    };
    b.output(nearest(10, 14, "asymmetric", "floor"));
    b.output(nearest(15, 21, "asymmetric", "floor"));
    b.output(nearest(10, 21, "half_pixel", "round_prefer_floor"));
    plugin().checkAgainstReference(b);
    tessera_attr_t coord{}, size{}, mode{};
    coord.struct_size = size.struct_size = mode.struct_size = sizeof coord;
    coord.name = "coordinate_transformation_mode";
    coord.kind = mode.kind = TESSERA_ATTR_STRING;
    coord.s = "asymmetric";
    mode.name = "nearest_mode";
    mode.s = "floor";
    const int64_t notWhole[] = {7, 10};
    size.name = "size";
    size.kind = TESSERA_ATTR_INTS;
    size.ints = notWhole;
    size.count = 2;
    CHECK(plugin().checkOp("resize2d", {{1, 2, 5, 5}}, {1, 2, 7, 10}, {coord, size, mode}).reason ==
          "dnnl: resize2d: coordinate_transformation_mode \"asymmetric\" unsupported (oneDNN "
          "resamples half_pixel; asymmetric only for nearest with floor by a whole factor)");
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
    plugin().checkAgainstReference(b);
  }
}

TEST_CASE("dnnl plugin: deconvolutions to few channels (a mask head) and odd sizes",
          "[dnnl_plugin]") {
  // A blocked layout would pad 1 or 3 output channels to 8 or 16: those
  // sides stay plain (lower.cpp); 17 channels keep the blocked one. Kernel
  // == stride (a U-Net's upsampling) and an overlapping 3x3 stride 2.
  for (int64_t channels : {1, 3, 17}) {
    for (bool overlapping : {false, true}) {
      INFO(channels << " output channels, " << (overlapping ? "3x3 stride 2" : "2x2 stride 2"));
      GraphBuilder b("tessera_mask_head");
      const int64_t k = overlapping ? 3 : 2;
      int64_t x = b.input("x", {1, 16, 9, 7});
      int64_t y = b.op("conv2d_transpose", {x, b.constant("w", {16, channels, k, k}, -0.3, 0.3)},
                       {{"strides", ints({2, 2})},
                        {"pads", overlapping ? ints({1, 1, 1, 1}) : ints({0, 0, 0, 0})}});
      y = b.op("bias_add", {y, b.constant("b", {channels})});
      b.output(b.op("sigmoid", {y}));
      plugin().checkAgainstReference(b);
      const std::string plan = compiledPlan(b);
      CHECK(plan.find("ref:") == std::string::npos);
      // Kernel == stride: a matrix product and a depth-to-space reorder.
      CHECK((plan.find("depth-to-space") != std::string::npos) == !overlapping);
    }
  }
  // From one channel up (a decoder's first step) and back to one, batch 2.
  GraphBuilder b("tessera_one_channel");
  int64_t x = b.input("x", {2, 1, 5, 11});
  int64_t up = b.op("conv2d_transpose", {x, b.constant("w1", {1, 17, 2, 2})},
                    {{"strides", ints({2, 2})}});
  b.output(b.op("conv2d_transpose", {b.op("relu", {up}), b.constant("w2", {17, 1, 2, 2})},
                {{"strides", ints({2, 2})}}));
  plugin().checkAgainstReference(b);
}

TEST_CASE("dnnl plugin: concat inputs written in place into the result", "[dnnl_plugin]") {
  auto conv = [](GraphBuilder &b, int64_t in, int64_t from, int64_t to, const char *w) {
    return b.op("relu", {b.op("conv2d", {in, b.constant(w, {to, from, 3, 3}, -0.2, 0.2)},
                              {{"pads", ints({1, 1, 1, 1})}})});
  };
  // "k of n" of each "node 7 ('cat', concat): k of n inputs written in place".
  auto inPlace = [](const std::string &plan) {
    std::vector<std::string> found;
    const std::string tail = " inputs written in place";
    for (size_t at = plan.find(tail); at != std::string::npos; at = plan.find(tail, at + 1)) {
      const size_t from = plan.rfind("): ", at) + 3;
      found.push_back(plan.substr(from, at - from));
    }
    return found;
  };
  using Found = std::vector<std::string>;
  SECTION("a U-Net decoder step: the upsampled half and the skip") {
    GraphBuilder b("tessera_unet_step");
    int64_t x = b.input("x", {1, 8, 12, 10});
    int64_t skip = conv(b, x, 8, 16, "w0");
    int64_t down = conv(
        b, b.op("max_pool2d", {skip}, {{"pool_size", ints({2, 2})}, {"strides", ints({2, 2})}}), 16,
        32, "w1");
    int64_t up = b.op("conv2d_transpose", {down, b.constant("wt", {32, 16, 2, 2}, -0.3, 0.3)},
                      {{"strides", ints({2, 2})}});
    int64_t cat = b.op("concat", {up, skip}, {{"axis", int64_t(1)}});
    b.output(conv(b, cat, 32, 16, "w2"));
    b.output(skip); // a view's logical as a function output: copied out
    const std::string plan = compiledPlan(b);
    INFO(plan);
    CHECK(inPlace(plan) == Found{"2 of 2"});
    CHECK(plan.find("concat) concat [") == std::string::npos);
    plugin().checkAgainstReference(b, 1e-4);
  }
  SECTION("a residual add after the concat writes beside, not over, the concat's bytes") {
    // conv(cat) + c1 would write in place into c1's buffer, which is part
    // of cat, the conv's own source.
    GraphBuilder b("tessera_concat_residual");
    int64_t x = b.input("x", {1, 16, 7, 9});
    int64_t c1 = conv(b, x, 16, 16, "w0");
    int64_t c2 = conv(b, c1, 16, 16, "w1");
    int64_t cat = b.op("concat", {c1, c2}, {{"axis", int64_t(1)}});
    int64_t y = b.op("conv2d", {cat, b.constant("w2", {16, 32, 3, 3}, -0.2, 0.2)},
                     {{"pads", ints({1, 1, 1, 1})}});
    b.output(b.op("add", {y, c1}));
    const std::string plan = compiledPlan(b);
    INFO(plan);
    CHECK(inPlace(plan) == Found{"2 of 2"});
    plugin().checkAgainstReference(b, 1e-4);
  }
  SECTION("inputs that cannot be views are copied into theirs") {
    // A function input, the same tensor twice, one already part of
    // another concat (DenseNet's growing concat), a nested concat.
    GraphBuilder b("tessera_concat_copies");
    int64_t x = b.input("x", {1, 16, 6, 6});
    int64_t y1 = conv(b, x, 16, 16, "w1");
    int64_t cat1 = b.op("concat", {x, y1}, {{"axis", int64_t(1)}});
    int64_t y2 = conv(b, cat1, 32, 16, "w2");
    int64_t cat2 = b.op("concat", {x, y1, y2, y2}, {{"axis", int64_t(1)}});
    int64_t cat3 = b.op("concat", {cat2, conv(b, cat2, 64, 16, "w3")}, {{"axis", int64_t(1)}});
    b.output(conv(b, cat3, 80, 8, "w4"));
    const std::string plan = compiledPlan(b);
    INFO(plan);
    // cat1: y1, and x's blocked copy (its reorder writes there); cat2: no
    // input can be a view (x and y1 are cat1's, y2 comes twice): the
    // concat primitive; cat3: cat2's result and the conv.
    CHECK(inPlace(plan) == Found{"2 of 2", "2 of 2"});
    CHECK(plan.find("concat) concat [") != std::string::npos);
    plugin().checkAgainstReference(b, 1e-4);
  }
  SECTION("where the pieces are not contiguous the concat primitive copies") {
    // Batch 2; blocked along H or W.
    for (auto [batch, c0, c1, axis] :
         {std::tuple{2, 16, 16, 1}, std::tuple{1, 16, 16, 2}, std::tuple{1, 16, 16, 3}}) {
      INFO("batch " << batch << ", channels " << c0 << " and " << c1 << ", axis " << axis);
      GraphBuilder b("tessera_concat_copied");
      int64_t x = b.input("x", {batch, 8, 6, 6});
      int64_t cat = b.op("concat", {conv(b, x, 8, c0, "w0"), conv(b, x, 8, c1, "w1")},
                         {{"axis", int64_t(axis)}});
      const int64_t channels = axis == 1 ? c0 + c1 : c0;
      b.output(conv(b, cat, channels, 8, "w2"));
      const std::string plan = compiledPlan(b);
      INFO(plan);
      CHECK(inPlace(plan).empty());
      CHECK(plan.find("concat) concat [") != std::string::npos);
      plugin().checkAgainstReference(b, 1e-4);
    }
  }
  SECTION("channels that do not fill a block: 3, 17 and 1") {
    GraphBuilder b("tessera_concat_odd");
    int64_t x = b.input("x", {1, 8, 5, 7});
    int64_t cat =
        b.op("concat", {conv(b, x, 8, 3, "w0"), conv(b, x, 8, 17, "w1"), conv(b, x, 8, 1, "w2")},
             {{"axis", int64_t(1)}});
    b.output(conv(b, cat, 21, 8, "w3"));
    plugin().checkAgainstReference(b, 1e-4);
  }
  SECTION("plain inputs; a function input is copied to its piece") {
    GraphBuilder b("tessera_concat_plain");
    int64_t x = b.input("x", {1, 4, 30});
    int64_t cat = b.op("concat", {b.op("softmax", {x}), x, b.op("log_softmax", {x})},
                       {{"axis", int64_t(-2)}});
    b.output(b.op("relu", {cat}));
    const std::string plan = compiledPlan(b);
    INFO(plan);
    CHECK(inPlace(plan) == Found{"2 of 3"});
    CHECK(plan.find("copy of input 1 of node") != std::string::npos);
    plugin().checkAgainstReference(b, 1e-4);
  }
}

TEST_CASE("dnnl plugin: max pooling by the plugin's own kernel in every layout",
          "[dnnl_plugin]") {
  // After a convolution (channel-blocked, or plain for 1 and 3 channels),
  // on the region's plain input, and global: windows clipped by padding,
  // ceil_mode, strides, dilation, batch 2, odd sizes. (The kit's samples
  // cover plain inputs too.)
  const std::vector<std::pair<const char *, Attrs>> windows = {
      {"3x3 stride 1 pad 1", {{"pool_size", ints({3, 3})}, {"pads", ints({1, 1, 1, 1})}}},
      {"3x3 stride 2 ceil",
       {{"pool_size", ints({3, 3})}, {"strides", ints({2, 2})}, {"ceil_mode", true}}},
      {"2x3 stride 2x1 pads 1,0,0,2",
       {{"pool_size", ints({2, 3})}, {"strides", ints({2, 1})}, {"pads", ints({1, 0, 0, 2})}}},
      {"2x2 dilation 2", {{"pool_size", ints({2, 2})}, {"dilation", ints({2, 2})}}},
      {"3x3 dilation 2 pads 3,1,1,2",
       {{"pool_size", ints({3, 3})}, {"dilation", ints({2, 2})}, {"pads", ints({3, 1, 1, 2})}}},
      {"5x5 stride 1 pad 2 (YOLO's SPPF)",
       {{"pool_size", ints({5, 5})}, {"pads", ints({2, 2, 2, 2})}}}};
  for (int64_t channels : {1, 3, 16, 17, 40}) {
    for (const auto &[name, attrs] : windows) {
      INFO(channels << " channels, " << name);
      GraphBuilder b("tessera_max_pool");
      int64_t x = b.input("x", {2, 5, 11, 9});
      int64_t c = b.op("conv2d", {x, b.constant("w", {channels, 5, 3, 3}, -0.3, 0.3)},
                       {{"pads", ints({1, 1, 1, 1})}});
      b.output(b.op("max_pool2d", {c}, attrs));
      b.output(b.op("max_pool2d", {x}, attrs));
      b.output(b.op("global_max_pool2d", {c}));
      const std::string plan = compiledPlan(b);
      INFO(plan);
      CHECK(plan.find("[tessera:max_pool]") != std::string::npos);
      CHECK(plan.find("pooling_v2") == std::string::npos);
      plugin().checkAgainstReference(b);
    }
  }
}

// A batch_norm left unfolded (x * s + t per channel, then relu: DenseNet's
// norm1 + relu1 over a concat) runs by the plugin's own kernel where its
// input is channels last, as brgconv writes on AVX-512 (oneDNN's
// batch_normalization there took twice the time, channel_affine.h), else
// as oneDNN's batch_normalization. Channel counts of 1, 3 and 17 (vector
// tails), batch 2, with and without the relu, a scale or a shift alone.
TEST_CASE("dnnl plugin: per-channel scale and shift after a convolution in every layout",
          "[dnnl_plugin]") {
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  for (int64_t channels : {1, 3, 17, 40, 64})
    for (int form = 0; form < 4; ++form) { // s and t, relu; s and t; s, relu; t, relu
      INFO(channels << " channels, form " << form);
      GraphBuilder b("tessera_affine");
      int64_t x = b.input("x", {2, 32, 9, 11});
      int64_t y = b.op("conv2d", {x, b.constant("w", {channels, 32, 1, 1}, -0.2, 0.2)});
      if (form != 3)
        y = b.op("multiply", {y, b.constant("s", {channels, 1, 1}, 0.5, 1.5)});
      if (form != 2)
        y = b.op("add", {y, b.constant("t", {channels, 1, 1}, -0.5, 0.5)});
      if (form != 1)
        y = b.op("relu", {y});
      b.output(y);
      const std::string plan = compiledPlan(b);
      INFO(plan);
      // Over 40 or 64 channels oneDNN's AVX-512 1x1 convolution writes
      // NHWC. (A shift alone is the convolution's bias, a relu its post-op.)
      if (avx512 && channels >= 40 && form != 3)
        CHECK(plan.find("affine [tessera:channel_affine]") != std::string::npos);
      CHECK(plan.find("[ref") == std::string::npos);
      plugin().checkAgainstReference(b);
    }
}

TEST_CASE("dnnl plugin: strided convolutions over many channels run channel-blocked",
          "[dnnl_plugin]") {
  // A wav2vec2 front end's convolutions (1-D, imported as [N, C, 1, L]):
  // where oneDNN would pick brgconv (AVX-512), they ask for nChw16c, which
  // its direct jit kernel runs faster (blockedPaysOverBrgconv). Two in a
  // chain stay blocked between them. 260 channels are not a multiple of 16:
  // oneDNN's own choice stands. Odd lengths, stride 2, and a 2-D 3x3 too.
  struct Case {
    int64_t c, h, w, kh, kw;
  };
  for (const Case &k : {Case{256, 1, 101, 1, 3}, Case{272, 1, 57, 1, 2}, Case{260, 1, 33, 1, 3},
                        Case{256, 9, 11, 3, 3}}) {
    INFO(k.c << " channels, " << k.h << "x" << k.w << ", kernel " << k.kh << "x" << k.kw);
    GraphBuilder b("tessera_strided_conv");
    int64_t x = b.input("x", {1, k.c, k.h, k.w});
    Attrs attrs{{"strides", ints({k.kh > 1 ? 2 : 1, 2})}};
    int64_t c1 =
        b.op("relu",
             {b.op("conv2d", {x, b.constant("w1", {k.c, k.c, k.kh, k.kw}, -0.05, 0.05)}, attrs)});
    b.output(b.op("conv2d", {c1, b.constant("w2", {k.c, k.c, k.kh, k.kw}, -0.05, 0.05)}, attrs));
    const std::string plan = compiledPlan(b);
    INFO(plan);
    if (k.c % 16 == 0) {
      CHECK(plan.find("[brgconv:") == std::string::npos);
      // The region's input and output are plain: one reorder each, none
      // between the convolutions.
      size_t reorders = 0;
      for (size_t at = plan.find(": reorder "); at != std::string::npos;
           at = plan.find(": reorder ", at + 1))
        ++reorders;
      CHECK(reorders <= 2);
    }
    plugin().checkAgainstReference(b);
  }
}

TEST_CASE("dnnl plugin: a fused chain oneDNN runs only by reference is not fused",
          "[dnnl_plugin]") {
  // A YOLOv5 bottleneck: conv + bias, SiLU (x * sigmoid(x), which the core
  // makes silu), a second conv + SiLU and the shortcut add. Fused whole,
  // oneDNN 2.6 picks its reference convolution for the 3x3 (1.1-1.7 s a
  // layer of yolov5s at 640x640, against 12 ms unfused).
  GraphBuilder b("tessera_bottleneck");
  int64_t x = b.input("x", {1, 32, 20, 20});
  auto convSilu = [&](int64_t in, const std::string &name, int64_t k) {
    int64_t c = b.op("conv2d", {in, b.constant(name + "_w", {32, 32, k, k}, -0.2, 0.2)},
                     {{"pads", ints({k / 2, k / 2, k / 2, k / 2})}});
    return b.op("silu", {b.op("add", {c, b.constant(name + "_b", {32, 1, 1})})});
  };
  int64_t y = convSilu(convSilu(x, "cv1", 1), "cv2", 3);
  b.output(b.op("add", {x, y}));
  plugin().checkAgainstReference(b);
  const std::string plan = compiledPlan(b);
  CHECK(plan.find("ref:") == std::string::npos);
}

TEST_CASE("dnnl plugin: layer_norm with a scale and shift that broadcast", "[dnnl_plugin]") {
  // InstanceNormalization (a wav2vec2 GroupNorm(512, 512)) imports as a
  // layer_norm over the time axis with scale [1]: once left to the host,
  // between two dnnl regions. Also [1, W] over [H, W] and a computed scale.
  {
    GraphBuilder b("tessera_instance_norm");
    int64_t x = b.input("x", {1, 17, 33});
    b.output(b.op("layer_norm", {x, b.constant("one", {1}, 1.0, 1.0), b.constant("zero", {1})},
                  {{"axis", int64_t(2)}, {"epsilon", 1e-5}}));
    plugin().checkAgainstReference(b);
  }
  {
    GraphBuilder b("tessera_norm_rows");
    int64_t x = b.input("x", {2, 3, 5, 7});
    int64_t g = b.op("relu", {b.input("g", {1, 7})});
    b.output(b.op("layer_norm", {x, g, b.constant("beta", {5, 1})},
                  {{"axis", int64_t(2)}, {"epsilon", 1e-3}}));
    plugin().checkAgainstReference(b);
  }
  tessera_attr_t axis1{};
  axis1.struct_size = sizeof axis1;
  axis1.name = "axis";
  axis1.kind = TESSERA_ATTR_INT;
  axis1.i = 1;
  CHECK(plugin().checkOp("layer_norm", {{2, 3, 4}, {3}}, {2, 3, 4}, {axis1}).reason ==
        "dnnl: layer_norm: input 1 must have shape [3, 4] or broadcast to it, got f32[3]");
}

TEST_CASE("dnnl plugin: one module runs on several threads at once", "[dnnl_plugin]") {
  GraphBuilder b("tessera_threads");
  int64_t x = b.input("x", {1, 8, 12, 12});
  int64_t c = b.op("relu", {b.op("bias_add", {b.op("conv2d", {x, b.constant("w", {16, 8, 3, 3})},
                                                   {{"pads", ints({1, 1, 1, 1})}}),
                                              b.constant("b", {16})})});
  b.output(b.op("global_avg_pool2d", {b.op("max_pool2d", {c}, {{"pool_size", ints({2, 2})}})}));
  ModulePtr m(nullptr, destroyModule);
  REQUIRE(plugin().compile(b, m) == "");
  checkConcurrentCalls(m.get(), b, /*threads=*/4, /*rounds=*/25);
}

// A weight that every step reads in a layout of oneDNN's choosing is kept
// only in that layout: a loaded module (what an artifact runs) gives its
// plain bytes back to the SDK, which has them restored (an exact reorder)
// when the module is saved. A module from codegen, saved by the compiler
// and never run there, copies no weight at init: it saves the bytes it was
// given, and builds its plan (holding both forms) only if it is run.
TEST_CASE("dnnl plugin: reordered weights are held once and saved as they came",
          "[dnnl_plugin]") {
  GraphBuilder b("tessera_weights_once");
  int64_t x = b.input("x", {1, 8, 10, 10});
  // The convolution's weights go into the layout its primitive picked; so
  // does the constant it adds (fused as a sum into its blocked result). Its
  // bias is read as it is. (8 input channels: direct, not Winograd.)
  int64_t c = b.op("conv2d", {x, b.constant("w", {32, 8, 3, 3}, -0.2, 0.2)},
                   {{"pads", ints({1, 1, 1, 1})}});
  int64_t y = b.op("bias_add", {c, b.constant("b", {32})});
  b.output(b.op("relu", {b.op("add", {y, b.constant("r", {1, 32, 10, 10})})}));
  ModulePtr m(nullptr, destroyModule);
  REQUIRE(plugin().compile(b, m) == "");
  auto planOf = [](tessera_module_t *mod) {
    std::string text;
    REQUIRE(take(mod->get_source(mod->self, "plan", &appendToString, &text)) == "");
    return text;
  };
  // The saved module carries every constant's original bytes, bit for bit.
  const std::string bytes = saveModule(m.get());
  for (size_t k = 0; k < b.constants().size(); ++k) {
    const ir::Tensor &t = b.constants()[k];
    INFO("constant " << k);
    CHECK(bytes.find(std::string_view(reinterpret_cast<const char *>(t.bytes()), t.nbytes())) !=
          std::string::npos);
  }
  // A loaded module releases them, runs right, and saves the same bytes.
  ModulePtr loaded(nullptr, destroyModule);
  REQUIRE(plugin().load(bytes, loaded) == "");
  const std::string plan = planOf(loaded.get());
  INFO(plan);
  CHECK(plan.find("function 'tessera_weights_once': ") == 0);
  CHECK(plan.find("constant 0 ('w', f32[32, 8, 3, 3]): reordered at init; plain bytes "
                  "released (restored to save)") != std::string::npos);
  CHECK(plan.find("constant 1 ('b', f32[32]): plain bytes held") != std::string::npos);
  CHECK(plan.find("  constants: 128 bytes held as given, ") != std::string::npos); // the bias
  CHECK(plan.find("constant 2 ('r', f32[1, 32, 10, 10]): reordered at init; plain bytes "
                  "released (restored to save)") != std::string::npos);
  CHECK(plan.find("dnnl runtime module: function") == std::string::npos); // said once, above
  requireAllClose(callFunction(loaded.get(), "tessera_weights_once", b.inputs(), b.outputShapes()),
                  b.reference());
  CHECK(saveModule(loaded.get()) == bytes);
  // The codegen module, run, builds the same steps and keeps its plain bytes.
  requireAllClose(callFunction(m.get(), "tessera_weights_once", b.inputs(), b.outputShapes()),
                  b.reference());
  const std::string compiledPlan = planOf(m.get());
  CHECK(compiledPlan.substr(0, compiledPlan.find("  constants:")) ==
        plan.substr(0, plan.find("  constants:")));
  CHECK(compiledPlan.find("constant 0 ('w', f32[32, 8, 3, 3]): reordered at init; plain bytes "
                          "kept") != std::string::npos);
  CHECK(saveModule(m.get()) == bytes);
  plugin().checkAgainstReference(b);
  std::string none;
  CHECK(take(m->get_source(m->self, "c", &appendToString, &none)) ==
        "dnnl runtime module: no 'c' source (formats: json, plan)");
}

// oneDNN's GEMM-based primitives fix their thread count when they are
// created. A module loaded under two OpenMP threads and called under one
// (the runtime sets the caller's count to the session's: `--threads 1`)
// runs its convolution and dense layer on primitives made again for one
// thread, with the reference's results under either count.
TEST_CASE("dnnl plugin: a call runs on the caller's OpenMP thread count", "[dnnl_plugin]") {
  GraphBuilder b("tessera_threads_count");
  int64_t x = b.input("x", {1, 8, 12, 12});
  int64_t c = b.op("relu", {b.op("conv2d", {x, b.constant("w", {16, 8, 3, 3}, -0.2, 0.2)},
                                 {{"pads", ints({1, 1, 1, 1})}})});
  b.output(b.op("dense", {b.op("flatten", {b.op("global_avg_pool2d", {c})}),
                          b.constant("d", {10, 16}, -0.2, 0.2)}));
  // What runtime::OmpThreadsScope does around a session's run.
  struct OmpThreads {
    int previous = omp_get_max_threads();
    explicit OmpThreads(int n) { omp_set_num_threads(n); }
    ~OmpThreads() { omp_set_num_threads(previous); }
  };
  ModulePtr compiled(nullptr, destroyModule), m(nullptr, destroyModule);
  REQUIRE(plugin().compile(b, compiled) == "");
  {
    const OmpThreads two(2);
    REQUIRE(plugin().load(saveModule(compiled.get()), m) == "");
    requireAllClose(callFunction(m.get(), "tessera_threads_count", b.inputs(), b.outputShapes()),
                    b.reference());
  }
  {
    const OmpThreads one(1);
    requireAllClose(callFunction(m.get(), "tessera_threads_count", b.inputs(), b.outputShapes()),
                    b.reference());
  }
  std::string plan;
  REQUIRE(take(m->get_source(m->self, "plan", &appendToString, &plan)) == "");
  INFO(plan);
  // Every step made again for one thread: the GEMM-based ones, and the
  // pooling and reorders too (oneDNN's jit pooling and reorders run on the
  // threads they were made for: issue 41's one-thread sessions spun a
  // second thread).
  // 4 steps where the convolution reads and writes the plain layout (AVX-512
  // brgconv), 5 where it wants a blocked one and the output is reordered.
  const size_t steps = std::stoul(plan.substr(plan.find("': ") + 3));
  CHECK((steps == 4 || steps == 5));
  CHECK(plan.find(fmt::format("  primitives: made for 2 OpenMP threads; for 1 thread, at the "
                              "first call on them: {} of {} steps made again",
                              steps, steps)) != std::string::npos);
  // Only elementwise and binary steps on fewer than 8K floats run alone
  // (they split their work at each execution); the pooling here is made
  // for the caller's count instead, as are the convolution and the dense layer.
  auto stepLine = [&](std::string_view op) {
    size_t at = plan.find(std::string(op) + ") ");
    REQUIRE(at != std::string::npos);
    return plan.substr(at, plan.find('\n', at) - at);
  };
  CHECK(!stepLine("global_avg_pool2d").ends_with("] on one thread"));
  CHECK(!stepLine("conv2d").ends_with("] on one thread"));
  CHECK(!stepLine("dense").ends_with("] on one thread"));
}

// A dense 3x3 stride-1 convolution with 16 channels or more runs as
// oneDNN's Winograd where oneDNN has it (AVX-512), and gives the reference
// interpreter's results within the kit's tolerance; one with few input
// channels, a stride or a dilation stays direct. Winograd weights have no
// reverse transform: their plain bytes stay with the module, to save.
TEST_CASE("dnnl plugin: 3x3 convolutions run as Winograd where it pays", "[dnnl_plugin]") {
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  GraphBuilder b("tessera_winograd");
  int64_t x = b.input("x", {1, 32, 14, 14});
  int64_t w = b.constant("w", {48, 32, 3, 3}, -0.2, 0.2);
  int64_t c = b.op("conv2d", {x, w}, {{"pads", ints({1, 1, 1, 1})}});
  int64_t y = b.op("relu", {b.op("bias_add", {c, b.constant("b", {48})})});
  // The same weight, strided: direct; 3 input channels: direct.
  int64_t s = b.op("conv2d", {x, w}, {{"pads", ints({1, 1, 1, 1})}, {"strides", ints({2, 2})}});
  int64_t t = b.op("conv2d", {b.input("rgb", {1, 3, 14, 14}),
                              b.constant("w3", {48, 3, 3, 3}, -0.2, 0.2)},
                   {{"pads", ints({1, 1, 1, 1})}});
  b.output(y);
  b.output(s);
  b.output(t);
  plugin().checkAgainstReference(b);
  const std::string plan = compiledPlan(b);
  INFO(plan);
  auto countOf = [&](std::string_view what) {
    size_t n = 0;
    for (size_t at = plan.find(what); at != std::string::npos; at = plan.find(what, at + 1))
      ++n;
    return n;
  };
  CHECK(countOf("wino_") == (avx512 ? 1u : 0u));
  CHECK(countOf("constant 0 ('w', f32[48, 32, 3, 3]): transformed for Winograd at init; plain "
                "bytes held (no reverse transform)") == (avx512 ? 1u : 0u));
}

// Two convolutions of one weight read one reordered copy of it.
TEST_CASE("dnnl plugin: a weight two products share is reordered once", "[dnnl_plugin]") {
  auto reorderedBytes = [](int convs) {
    GraphBuilder b("tessera_shared_weight");
    int64_t x = b.input("x", {1, 16, 8, 8});
    int64_t w = b.constant("w", {16, 16, 3, 3}, -0.2, 0.2);
    int64_t y = x;
    for (int i = 0; i < convs; ++i)
      y = b.op("relu", {b.op("conv2d", {y, w}, {{"pads", ints({1, 1, 1, 1})}})});
    b.output(y);
    plugin().checkAgainstReference(b);
    ModulePtr m(nullptr, destroyModule);
    REQUIRE(plugin().compile(b, m) == "");
    std::string text;
    REQUIRE(take(m->get_source(m->self, "plan", &appendToString, &text)) == "");
    INFO(text);
    size_t at = text.find(" bytes held as given, ");
    REQUIRE(at != std::string::npos);
    return std::stoull(text.substr(at + 22));
  };
  const uint64_t one = reorderedBytes(1);
  CHECK(one >= 16 * 16 * 9 * 4);
  CHECK(reorderedBytes(2) == one);
  CHECK(reorderedBytes(3) == one);
}

TEST_CASE("dnnl plugin: corrupted saved modules give errors", "[dnnl_plugin]") {
  GraphBuilder b("tessera_saved");
  int64_t x = b.input("x", {1, 4, 6, 6});
  b.output(b.op("relu", {b.op("conv2d", {x, b.constant("w", {4, 4, 3, 3})})}));
  ModulePtr m(nullptr, destroyModule);
  REQUIRE(plugin().compile(b, m) == "");
  std::string bytes = saveModule(m.get());
  ModulePtr loaded(nullptr, destroyModule);
  CHECK(plugin()
            .load(bytes.substr(0, bytes.size() - 7), loaded)
            .find("dnnl runtime module: truncated at byte") == 0);
  std::string bad = bytes;
  bad[0] = 'X';
  CHECK(plugin().load(bad, loaded) == "dnnl runtime module: not a saved JsonRuntime module (no "
                                      "\"TSJR\" magic)");
  // A graph edited to declare a wrong output shape is refused at load.
  std::string edited = bytes;
  size_t at = edited.find("[1,4,4,4]");
  REQUIRE(at != std::string::npos);
  edited.replace(at, 9, "[1,4,4,5]");
  std::string err = plugin().load(edited, loaded);
  CHECK(err.find("is not the computed shape [1, 4, 4, 4]") != std::string::npos);
  REQUIRE(plugin().load(bytes, loaded) == "");
}
