//===- tests/unit/host_kernels_nn_test.cpp - The nn family's host kernels -===//
//
// Every op of the nn family (conv, pooling, products, norms, softmax,
// reductions, arg-reductions, cumsum, topk, det) run natively through its
// lowering (codegen/host_ops_nn.cpp) and kernel (codegen/kernels/nn_*.cpp,
// reduce.cpp) and compared with the reference interpreter: the conformance
// catalogue's samples, then cases for every attribute combination, the
// dtypes each op accepts, odd and empty shapes, randomised shapes from a
// fixed seed, and hand-made data (wrapping integers, NaN, ties). Last, a
// model of these ops compiled into an artifact (the kernels' bitcode
// specialised by the host code generator) and run by the runtime on two
// threads.
//
//===----------------------------------------------------------------------===//
#include "host_kernel_harness.h"
#include "test_util.h"

#include "compile/compile.h"
#include "ir/parser.h"
#include "runtime/session.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <random>

// The kernels' GEMM tile width (codegen/kernels/nn_gemm.h), defined by the
// native kernel library.
extern "C" int tk_target_wide_gemm;

namespace tessera::test {
namespace {

using Ints = std::vector<int64_t>;

const std::vector<std::string> kNnOps = {"conv2d",
                                         "conv2d_transpose",
                                         "max_pool2d",
                                         "max_pool2d_indices",
                                         "avg_pool2d",
                                         "global_avg_pool2d",
                                         "global_max_pool2d",
                                         "dense",
                                         "matmul",
                                         "batch_matmul",
                                         "det",
                                         "bias_add",
                                         "batch_norm",
                                         "layer_norm",
                                         "softmax",
                                         "log_softmax",
                                         "reduce_sum",
                                         "reduce_mean",
                                         "reduce_max",
                                         "reduce_min",
                                         "reduce_prod",
                                         "argmax",
                                         "argmin",
                                         "cumsum",
                                         "topk"};

Type T(DType d, Shape s) {
  return Type::tensor(d, std::move(s));
}
kit::ArgSpec in(Type t) {
  return kit::ArgSpec{std::move(t), false, kit::Domain::Any};
}
kit::ArgSpec cst(Type t) {
  return kit::ArgSpec{std::move(t), true, kit::Domain::Any};
}

/// One single-op case on random data: "" when the kernel matches the
/// interpreter.
std::string runCase(const std::string &op, const Attrs &attrs, std::vector<kit::ArgSpec> args,
                    uint64_t seed = 11) {
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].domain == kit::Domain::Any)
      args[i].domain = kit::argDomain(op, i);
  kit::OpSample sample{op, attrs, std::move(args)};
  auto kc = kit::buildOpCase(sample, seed);
  if (!kc)
    return sample.label() + ": " + kc.error().str();
  return hostkernel::checkCase(*kc, seed + 1);
}

/// The kernel on the given data against the op's reference kernel.
std::string runData(const std::string &op, const Attrs &attrs, std::vector<Tensor> inputs) {
  std::vector<Expr> args;
  for (size_t i = 0; i < inputs.size(); ++i)
    args.push_back(makeVar("x" + std::to_string(i), inputs[i].type()));
  auto call = makeCall(op, std::move(args), attrs, op);
  if (!call)
    return call.error().str();
  const auto *node = (*call)->as<CallNode>();
  auto want = node->op()->kernel(inputs, node->attrs(), node->type());
  auto got = hostkernel::runNative(*node, inputs);
  if (!want)
    return "reference: " + want.error().str();
  if (!got)
    return "native: " + got.error().str();
  for (size_t i = 0; i < want->size(); ++i) {
    std::string diff = kit::compareTensors((*got)[i], (*want)[i]);
    if (!diff.empty())
      return op + " output " + std::to_string(i) + ": " + diff;
  }
  return "";
}

#define CHECK_CASE(...)                                                                            \
  do {                                                                                             \
    std::string failure_ = runCase(__VA_ARGS__);                                                   \
    INFO(failure_);                                                                                \
    CHECK(failure_.empty());                                                                       \
  } while (0)

#define CHECK_DATA(...)                                                                            \
  do {                                                                                             \
    std::string failure_ = runData(__VA_ARGS__);                                                   \
    INFO(failure_);                                                                                \
    CHECK(failure_.empty());                                                                       \
  } while (0)

const DType kFloats[] = {DType::F32, DType::F16, DType::BF16, DType::F64};
const DType kInts[] = {DType::I8,  DType::U8,  DType::I16, DType::U16,
                       DType::I32, DType::U32, DType::I64, DType::U64};

std::vector<DType> numericDTypes() {
  std::vector<DType> out;
  for (DType d : kFloats)
    out.push_back(d);
  for (DType d : kInts)
    out.push_back(d);
  return out;
}

} // namespace

TEST_CASE("every nn op has a host lowering", "[host-kernels][host-kernels-nn]") {
  for (const std::string &op : kNnOps) {
    INFO(op);
    CHECK(ir::OpRegistry::global().find(op) != nullptr);
    CHECK(codegen::hostLowerings().find(op) != nullptr);
  }
}

TEST_CASE("nn host kernels pass the catalogue samples", "[host-kernels][host-kernels-nn]") {
  for (const std::string &op : kNnOps) {
    if (kit::samplesFor(op).empty())
      continue; // max_pool2d_indices, det, cumsum, topk: cases below (conv2d_transpose has both)
    auto failures = hostkernel::checkOpSamples(op);
    INFO(op);
    CAPTURE(failures);
    CHECK(failures.empty());
  }
}

TEST_CASE("conv2d host kernel", "[host-kernels][host-kernels-nn]") {
  using A = Attrs;
  SECTION("dtypes and modes") {
    for (DType d : kFloats) {
      INFO(ir::dtypeName(d));
      CHECK_CASE("conv2d", A{}, {in(T(d, {1, 3, 8, 8})), cst(T(d, {5, 3, 3, 3}))});
      // 1x1 stride 1 (GEMM on the input), with groups
      CHECK_CASE("conv2d", A{}, {in(T(d, {2, 6, 5, 7})), in(T(d, {4, 6, 1, 1}))});
      CHECK_CASE("conv2d", A{{"groups", int64_t(2)}},
                 {in(T(d, {1, 6, 5, 7})), in(T(d, {4, 3, 1, 1}))});
      // depthwise with a channel multiplier (direct)
      CHECK_CASE("conv2d", A{{"groups", int64_t(3)}, {"pads", Ints{1, 0, 2, 1}}},
                 {in(T(d, {2, 3, 6, 7})), cst(T(d, {6, 1, 3, 3}))});
    }
  }
  SECTION("windows") {
    CHECK_CASE("conv2d",
               A{{"strides", Ints{2, 3}}, {"dilation", Ints{2, 1}}, {"pads", Ints{0, 2, 3, 1}}},
               {in(T(DType::F32, {2, 4, 11, 9})), cst(T(DType::F32, {6, 4, 3, 2}))});
    CHECK_CASE("conv2d", A{{"strides", Ints{3, 3}}, {"pads", Ints{4, 4, 4, 4}}},
               {in(T(DType::F32, {1, 2, 3, 3})), cst(T(DType::F32, {3, 2, 2, 2}))});
    // 1x1 with stride and pads (im2col)
    CHECK_CASE("conv2d", A{{"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 0, 0}}},
               {in(T(DType::F32, {1, 4, 6, 6})), cst(T(DType::F32, {3, 4, 1, 1}))});
    // single input channel (direct), dilated, strided
    CHECK_CASE("conv2d", A{{"strides", Ints{2, 1}}, {"dilation", Ints{1, 3}}},
               {in(T(DType::F32, {2, 1, 9, 10})), cst(T(DType::F32, {4, 1, 3, 2}))});
  }
  SECTION("GEMM tiles: edges and K blocks") {
    // M = 70 (> 64 rows), K = 34*9 = 306 (> 256), N = 17*17 = 289 (> 256)
    CHECK_CASE("conv2d", A{{"pads", Ints{1, 1, 1, 1}}},
               {in(T(DType::F32, {1, 34, 17, 17})), cst(T(DType::F32, {70, 34, 3, 3}))});
    CHECK_CASE("conv2d", A{{"groups", int64_t(2)}, {"strides", Ints{2, 2}}},
               {in(T(DType::F64, {2, 40, 13, 12})), cst(T(DType::F64, {10, 20, 3, 3}))});
  }
  SECTION("depthwise: vectors of outputs, strides and phases, the wide-row fallback") {
    auto dw = [](int64_t groups, Ints pads, Ints strides = {1, 1}, Ints dilation = {1, 1}) {
      return A{{"groups", groups}, {"pads", pads}, {"strides", strides}, {"dilation", dilation}};
    };
    // 37 outputs a row: two full vectors and 5 lanes
    CHECK_CASE("conv2d", dw(4, {1, 1, 1, 1}),
               {in(T(DType::F32, {1, 4, 13, 37})), cst(T(DType::F32, {4, 1, 3, 3}))});
    // stride 2: the input rows split into two column phases
    CHECK_CASE("conv2d", dw(3, {1, 1, 1, 1}, {2, 2}),
               {in(T(DType::F32, {1, 3, 20, 41})), cst(T(DType::F32, {3, 1, 3, 3}))});
    // stride 2 in double, 5x5 (EfficientNet's), rows wide enough that each
    // phase is copied a vector at a time (two of 8 lanes into one) before
    // its last values one by one
    CHECK_CASE("conv2d", dw(2, {2, 2, 2, 2}, {2, 2}),
               {in(T(DType::F64, {1, 2, 9, 45})), cst(T(DType::F64, {2, 1, 5, 5}))});
    // 7x7 (ConvNeXt) in double: 8 lanes
    CHECK_CASE("conv2d", dw(2, {3, 3, 3, 3}),
               {in(T(DType::F64, {1, 2, 9, 19})), cst(T(DType::F64, {2, 1, 7, 7}))});
    // stride 3, dilation 2, uneven pads, a channel multiplier of 2
    CHECK_CASE("conv2d", dw(2, {2, 1, 0, 3}, {3, 3}, {2, 2}),
               {in(T(DType::F32, {2, 2, 15, 30})), in(T(DType::F32, {4, 1, 3, 3}))});
    // stride 1 down the rows, dilated: kernel row kh reads kh*dh rows down one copy
    CHECK_CASE("conv2d", dw(2, {2, 2, 2, 2}, {1, 1}, {2, 2}),
               {in(T(DType::F32, {1, 2, 9, 20})), cst(T(DType::F32, {2, 1, 3, 3}))});
    // column strides 4 (four phases) and 5 (the plane loop)
    CHECK_CASE("conv2d", dw(2, {1, 1, 1, 1}, {1, 4}),
               {in(T(DType::F32, {1, 2, 6, 23})), cst(T(DType::F32, {2, 1, 3, 3}))});
    CHECK_CASE("conv2d", dw(2, {1, 1, 1, 1}, {2, 5}),
               {in(T(DType::F32, {1, 2, 6, 23})), cst(T(DType::F32, {2, 1, 3, 3}))});
    // stride 2 without a left pad: phase 1 starts at input column 1
    CHECK_CASE("conv2d", dw(3, {0, 0, 1, 1}, {2, 2}),
               {in(T(DType::F32, {1, 3, 12, 12})), cst(T(DType::F32, {3, 1, 3, 3}))});
    // a 1x1 window strided down the rows: one row group (KH = 1) that still
    // steps sh rows per output row (fuzz/symbolic.cpp found it reading rows
    // 0, 1, 2 for 0, 2, 4), one channel and depthwise
    CHECK_CASE("conv2d", dw(1, {0, 0, 0, 0}, {2, 2}),
               {in(T(DType::F32, {2, 1, 6, 12})), cst(T(DType::F32, {1, 1, 1, 1}))});
    CHECK_CASE("conv2d", dw(3, {0, 1, 0, 1}, {3, 1}),
               {in(T(DType::F32, {1, 3, 10, 9})), cst(T(DType::F32, {3, 1, 1, 2}))});
    // rows too wide for the stack buffer: the plane-by-plane loop
    CHECK_CASE("conv2d", dw(2, {1, 1, 1, 1}),
               {in(T(DType::F32, {1, 2, 3, 3000})), cst(T(DType::F32, {2, 1, 3, 3}))});
  }
  SECTION("GEMM row tiles of equal height") {
    // M = 64: one tile of 64 rows (10 slivers in place, an edge of 4 packed);
    // M = 150: three tiles of 54, 54 and 42 rows
    CHECK_CASE("conv2d", A{},
               {in(T(DType::F32, {1, 8, 6, 7})), cst(T(DType::F32, {64, 8, 1, 1}))});
    CHECK_CASE("conv2d", A{{"pads", Ints{1, 1, 1, 1}}},
               {in(T(DType::F32, {1, 5, 6, 7})), cst(T(DType::F32, {150, 5, 3, 3}))});
  }
  SECTION("taps gathered into the GEMM's panels, or by im2col") {
    // The lowering gathers the taps in the GEMM (static sizes, up to 72
    // output channels a group, column stride 1, output rows of whole
    // 64-byte panels) or writes im2col: each geometry with 24 output
    // channels a group and with 80 (always im2col). Padded edges, dilation,
    // row strides, groups, f64 (8-lane panels), a 7x7 window.
    for (int64_t o : {24, 80}) {
      INFO("output channels " << o);
      CHECK_CASE("conv2d", A{{"pads", Ints{1, 1, 1, 1}}},
                 {in(T(DType::F32, {1, 3, 5, 64})), cst(T(DType::F32, {o, 3, 3, 3}))});
      CHECK_CASE("conv2d", A{{"pads", Ints{0, 2, 1, 0}}, {"dilation", Ints{1, 2}}},
                 {in(T(DType::F32, {2, 4, 6, 34})), cst(T(DType::F32, {o, 4, 2, 3}))});
      CHECK_CASE("conv2d", A{{"strides", Ints{2, 1}}, {"pads", Ints{1, 1, 1, 1}}},
                 {in(T(DType::F32, {1, 5, 9, 48})), cst(T(DType::F32, {o, 5, 3, 3}))});
      CHECK_CASE("conv2d", A{{"groups", int64_t(2)}, {"pads", Ints{0, 1, 0, 0}}},
                 {in(T(DType::F64, {1, 6, 7, 16})), cst(T(DType::F64, {2 * o, 3, 3, 2}))});
      CHECK_CASE("conv2d", A{{"pads", Ints{3, 3, 3, 3}}},
                 {in(T(DType::F32, {1, 3, 11, 32})), cst(T(DType::F32, {o, 3, 7, 7}))});
      CHECK_CASE("conv2d",
                 A{{"strides", Ints{3, 1}}, {"dilation", Ints{2, 1}}, {"pads", Ints{2, 1, 0, 1}}},
                 {in(T(DType::F32, {1, 2, 20, 32})), cst(T(DType::F32, {o, 2, 3, 3}))});
      // Not gathered whatever the channels: rows of 37, column stride 3.
      CHECK_CASE("conv2d", A{{"pads", Ints{0, 2, 1, 0}}, {"dilation", Ints{1, 2}}},
                 {in(T(DType::F32, {2, 4, 6, 39})), cst(T(DType::F32, {o, 4, 2, 3}))});
      CHECK_CASE("conv2d", A{{"strides", Ints{2, 3}}, {"pads", Ints{1, 1, 1, 1}}},
                 {in(T(DType::F32, {1, 5, 9, 50})), cst(T(DType::F32, {o, 5, 3, 3}))});
    }
  }
  SECTION("random geometries") {
    std::mt19937_64 rng(1234);
    auto pick = [&](int64_t lo, int64_t hi) {
      return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
    };
    for (int i = 0; i < 30; ++i) {
      int64_t groups = pick(1, 3), cg = pick(1, 3), og = pick(1, 3);
      int64_t kh = pick(1, 4), kw = pick(1, 4), dh = pick(1, 2), dw = pick(1, 2);
      int64_t h = pick(1, 9) + dh * (kh - 1), w = pick(1, 9) + dw * (kw - 1);
      Ints pads{pick(0, 2), pick(0, 2), pick(0, 2), pick(0, 2)};
      Attrs attrs{{"groups", groups},
                  {"pads", pads},
                  {"strides", Ints{pick(1, 3), pick(1, 3)}},
                  {"dilation", Ints{dh, dw}}};
      CHECK_CASE("conv2d", attrs,
                 {in(T(DType::F32, {pick(1, 2), groups * cg, h, w})),
                  in(T(DType::F32, {groups * og, cg, kh, kw}))},
                 uint64_t(i));
    }
  }
}

TEST_CASE("conv2d_transpose host kernel", "[host-kernels][host-kernels-nn]") {
  using A = Attrs;
  for (DType d : kFloats) {
    INFO(ir::dtypeName(d));
    CHECK_CASE("conv2d_transpose", A{}, {in(T(d, {1, 3, 5, 5})), cst(T(d, {3, 4, 3, 3}))});
  }
  CHECK_CASE("conv2d_transpose", A{{"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}},
             {in(T(DType::F32, {2, 4, 4, 5})), cst(T(DType::F32, {4, 3, 3, 3}))});
  CHECK_CASE("conv2d_transpose",
             A{{"strides", Ints{2, 3}},
               {"pads", Ints{0, 1, 2, 0}},
               {"output_padding", Ints{1, 2}},
               {"dilation", Ints{2, 1}}},
             {in(T(DType::F32, {1, 2, 3, 4})), cst(T(DType::F32, {2, 5, 2, 3}))});
  CHECK_CASE("conv2d_transpose", A{{"groups", int64_t(2)}, {"strides", Ints{2, 2}}},
             {in(T(DType::F32, {1, 4, 3, 3})), in(T(DType::F32, {4, 3, 2, 2}))});
  CHECK_CASE("conv2d_transpose", A{{"groups", int64_t(3)}, {"pads", Ints{2, 2, 2, 2}}},
             {in(T(DType::F64, {2, 3, 6, 6})), cst(T(DType::F64, {3, 1, 4, 4}))});
  // Larger: GEMM tiles with M = 8*3*3 = 72 rows, K = 20 channels.
  CHECK_CASE("conv2d_transpose", A{{"strides", Ints{2, 2}}},
             {in(T(DType::F32, {1, 20, 9, 9})), cst(T(DType::F32, {20, 8, 3, 3}))});
}

TEST_CASE("dense, matmul and batch_matmul host kernels", "[host-kernels][host-kernels-nn]") {
  using A = Attrs;
  SECTION("dense") {
    for (DType d : numericDTypes()) {
      INFO(ir::dtypeName(d));
      CHECK_CASE("dense", A{}, {in(T(d, {2, 7})), cst(T(d, {5, 7}))}); // dot products
      CHECK_CASE("dense", A{}, {in(T(d, {6, 7})), in(T(d, {5, 7}))});  // packed GEMM
    }
    CHECK_CASE("dense", A{}, {in(T(DType::F32, {9})), cst(T(DType::F32, {3, 9}))});
    CHECK_CASE("dense", A{}, {in(T(DType::F32, {2, 3, 4, 33})), cst(T(DType::F32, {19, 33}))});
    CHECK_CASE("dense", A{}, {in(T(DType::F32, {70, 300})), cst(T(DType::F32, {260, 300}))});
    CHECK_CASE("dense", A{}, {in(T(DType::F32, {1, 300})), cst(T(DType::F32, {270, 300}))});
    CHECK_CASE("dense", A{}, {in(T(DType::F32, {5, 1})), cst(T(DType::F32, {3, 1}))});
    CHECK_CASE("dense", A{}, {in(T(DType::F32, {0, 4})), cst(T(DType::F32, {3, 4}))});
    CHECK_CASE("dense", A{}, {in(T(DType::F32, {2, 0})), cst(T(DType::F32, {3, 0}))});
    CHECK_CASE("dense", A{}, {in(T(DType::F32, {5, 0})), cst(T(DType::F32, {3, 0}))});
  }
  SECTION("matmul") {
    for (DType d : numericDTypes()) {
      INFO(ir::dtypeName(d));
      CHECK_CASE("matmul", A{}, {in(T(d, {2, 1, 3, 4})), in(T(d, {3, 4, 5}))});
    }
    CHECK_CASE("matmul", A{}, {in(T(DType::F32, {4})), in(T(DType::F32, {4}))});
    CHECK_CASE("matmul", A{}, {in(T(DType::F32, {5})), in(T(DType::F32, {2, 5, 3}))});
    CHECK_CASE("matmul", A{}, {in(T(DType::F32, {2, 3, 6, 5})), in(T(DType::F32, {5}))});
    CHECK_CASE("matmul", A{}, {in(T(DType::F32, {3, 1, 4, 2})), in(T(DType::F32, {1, 5, 2, 3}))});
    CHECK_CASE("matmul", A{}, {in(T(DType::F32, {1, 1})), in(T(DType::F32, {1, 1}))});
    CHECK_CASE("matmul", A{}, {in(T(DType::F32, {67, 258})), in(T(DType::F32, {258, 259}))});
    CHECK_CASE("matmul", A{}, {in(T(DType::F32, {0, 3})), in(T(DType::F32, {3, 2}))});
    CHECK_CASE("matmul", A{}, {in(T(DType::F32, {2, 0})), in(T(DType::F32, {0, 3}))});
    CHECK_CASE("matmul", A{}, {in(T(DType::F32, {0, 2, 3})), in(T(DType::F32, {3, 2}))});
    // one weight for every batch: one GEMM of all the batches' rows
    CHECK_CASE("matmul", A{}, {in(T(DType::F32, {13, 1, 20})), cst(T(DType::F32, {20, 35}))});
    CHECK_CASE("matmul", A{}, {in(T(DType::F64, {3, 4, 7, 5})), in(T(DType::F64, {5, 9}))});
    CHECK_CASE("matmul", A{}, {in(T(DType::I32, {2, 3, 5})), in(T(DType::I32, {1, 5, 4}))});
  }
  SECTION("batch_matmul") {
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (DType d : {DType::F32, DType::F64, DType::F16, DType::I32, DType::U8}) {
          INFO(ir::dtypeName(d) << " ta=" << ta << " tb=" << tb);
          A attrs{{"transpose_a", ta}, {"transpose_b", tb}};
          auto a = [&](int64_t b, int64_t m, int64_t k) {
            return T(d, ta ? Shape{b, k, m} : Shape{b, m, k});
          };
          auto b = [&](int64_t bt, int64_t k, int64_t n) {
            return T(d, tb ? Shape{bt, n, k} : Shape{bt, k, n});
          };
          CHECK_CASE("batch_matmul", attrs, {in(a(3, 2, 5)), in(b(3, 5, 4))});
          CHECK_CASE("batch_matmul", attrs, {in(a(1, 6, 5)), in(b(3, 5, 4))});
          CHECK_CASE("batch_matmul", attrs, {in(a(2, 7, 9)), cst(b(1, 9, 3))});
        }
    CHECK_CASE("batch_matmul", A{{"transpose_b", true}},
               {in(T(DType::F32, {4, 65, 40})), in(T(DType::F32, {4, 70, 40}))});
    // b's one batch shared: one GEMM of 5 * 9 rows, b transposed or not
    for (bool tb : {false, true})
      CHECK_CASE("batch_matmul", A{{"transpose_b", tb}},
                 {in(T(DType::F32, {5, 9, 11})),
                  cst(T(DType::F32, tb ? Shape{1, 7, 11} : Shape{1, 11, 7}))});
  }
  SECTION("integer products wrap") {
    Tensor a = Tensor::fromInts(DType::I8, {2, 2}, std::vector<int64_t>{100, 120, -128, 127});
    Tensor b = Tensor::fromInts(DType::I8, {2, 2}, std::vector<int64_t>{100, -7, 3, 127});
    CHECK_DATA("matmul", A{}, {a, b});
    CHECK_DATA("dense", A{}, {a, b});
    Tensor u = Tensor::fromInts(DType::U64, {1, 2}, std::vector<int64_t>{-1, int64_t(1) << 62});
    Tensor v = Tensor::fromInts(DType::U64, {2, 1}, std::vector<int64_t>{3, 5});
    CHECK_DATA("matmul", A{}, {u, v});
    Tensor i =
        Tensor::fromInts(DType::I32, {1, 1, 2}, std::vector<int64_t>{2147483647, -2147483647 - 1});
    Tensor j = Tensor::fromInts(DType::I32, {1, 2, 1}, std::vector<int64_t>{2, 3});
    CHECK_DATA("batch_matmul", A{}, {i, j});
  }
}

// The kernels compiled natively run narrow GEMM tiles (one 64-byte panel
// of B at a time) unless tk_target_wide_gemm is set, as the host code
// generator sets it for AVX-512 levels (two panels: microKernelWide). Both
// give the reference interpreter's results, whichever CPU runs the test.
TEST_CASE("GEMM tiles two panels wide give the interpreter's results",
          "[host-kernels][host-kernels-nn]") {
  using A = Attrs;
  struct Wide {
    int previous = tk_target_wide_gemm;
    Wide() { tk_target_wide_gemm = 1; }
    ~Wide() { tk_target_wide_gemm = previous; }
  } wide;
  for (const char *op :
       {"conv2d", "conv2d_transpose", "dense", "matmul", "batch_matmul", "lstm", "gru", "rnn"}) {
    auto failures = hostkernel::checkOpSamples(op);
    INFO(op);
    CAPTURE(failures);
    CHECK(failures.empty());
  }
  // N across one and two panels of f32 (16 and 32 columns) and f64 (8, 16);
  // M past a tile's 72 rows (one tile of every row when the column blocks
  // keep the threads busy).
  for (DType d : {DType::F32, DType::F64})
    for (int64_t n : {15, 16, 17, 31, 32, 33, 47, 64, 65, 300}) {
      INFO(ir::dtypeName(d) << " N " << n);
      CHECK_CASE("matmul", A{}, {in(T(d, {7, 9})), in(T(d, {9, n}))});
      CHECK_CASE("matmul", A{}, {in(T(d, {150, 40})), in(T(d, {40, n}))});
    }
  CHECK_CASE("matmul", A{}, {in(T(DType::F32, {150, 40})), in(T(DType::F32, {40, 1100}))});
  CHECK_CASE("conv2d", A{{"pads", Ints{1, 1, 1, 1}}},
             {in(T(DType::F32, {1, 8, 9, 11})), cst(T(DType::F32, {80, 8, 3, 3}))});
  CHECK_CASE("conv2d", A{{"pads", Ints{1, 1, 1, 1}}},
             {in(T(DType::F32, {1, 4, 17, 64})), cst(T(DType::F32, {24, 4, 3, 3}))});
}

// A recurrent step at batch 1 spreads the rows of R over several sets of
// accumulators (4 or 8 by the tile width): hidden sizes that leave a
// remainder after the last full set, for each cell, narrow and wide.
TEST_CASE("recurrent host kernels: hidden sizes past the accumulator sets",
          "[host-kernels][host-kernels-nn]") {
  struct Width {
    int previous = tk_target_wide_gemm;
    explicit Width(int wide) { tk_target_wide_gemm = wide; }
    ~Width() { tk_target_wide_gemm = previous; }
  };
  for (int wide : {0, 1})
    for (int64_t H : {5, 19, 37}) {
      Width width(wide);
      INFO("wide " << wide << ", H " << H);
      const int64_t S = 3, I = 7;
      auto X = [&] { return in(T(DType::F32, {S, 1, I})); };
      auto h0 = [&] { return in(T(DType::F32, {1, 1, H})); };
      CHECK_CASE("rnn", Attrs{},
                 {X(), cst(T(DType::F32, {1, H, I})), cst(T(DType::F32, {1, H, H})),
                  cst(T(DType::F32, {1, 2 * H})), h0()});
      for (int64_t lbr : {0, 1})
        CHECK_CASE("gru", Attrs{{"linear_before_reset", lbr}},
                   {X(), cst(T(DType::F32, {1, 3 * H, I})), cst(T(DType::F32, {1, 3 * H, H})),
                    cst(T(DType::F32, {1, 6 * H})), h0()});
      CHECK_CASE("lstm", Attrs{},
                 {X(), cst(T(DType::F32, {1, 4 * H, I})), cst(T(DType::F32, {1, 4 * H, H})),
                  cst(T(DType::F32, {1, 8 * H})), h0(), h0()});
    }
}

TEST_CASE("pooling host kernels", "[host-kernels][host-kernels-nn]") {
  using A = Attrs;
  const std::vector<A> windows = {
      A{{"pool_size", Ints{2, 2}}},
      A{{"pool_size", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"ceil_mode", true}},
      A{{"pool_size", Ints{3, 2}}, {"pads", Ints{1, 0, 2, 1}}, {"strides", Ints{2, 1}}},
      A{{"pool_size", Ints{2, 3}},
        {"dilation", Ints{2, 2}},
        {"pads", Ints{1, 1, 1, 1}},
        {"ceil_mode", true},
        {"strides", Ints{3, 2}}},
      A{{"pool_size", Ints{1, 1}}, {"strides", Ints{2, 2}}},
      // a corner window holding only padding
      A{{"pool_size", Ints{2, 2}}, {"pads", Ints{2, 2, 0, 0}}, {"strides", Ints{2, 2}}},
  };
  for (const A &w : windows) {
    for (DType d : numericDTypes()) {
      INFO(ir::dtypeName(d));
      CHECK_CASE("max_pool2d", w, {in(T(d, {2, 3, 7, 6}))});
      for (int64_t order : {0, 1}) {
        A wi = w;
        wi.set("storage_order", order);
        CHECK_CASE("max_pool2d_indices", wi, {in(T(d, {2, 3, 7, 6}))});
      }
    }
    for (DType d : kFloats)
      for (bool includePad : {false, true}) {
        A wa = w;
        wa.set("count_include_pad", includePad);
        CHECK_CASE("avg_pool2d", wa, {in(T(d, {2, 3, 7, 6}))});
      }
  }
  for (DType d : numericDTypes()) {
    INFO(ir::dtypeName(d));
    CHECK_CASE("global_max_pool2d", A{}, {in(T(d, {2, 3, 5, 4}))});
    CHECK_CASE("global_max_pool2d", A{}, {in(T(d, {1, 2, 1, 1}))});
    if (ir::isFloat(d))
      CHECK_CASE("global_avg_pool2d", A{}, {in(T(d, {2, 3, 5, 4}))});
  }
  CHECK_CASE("max_pool2d", A{{"pool_size", Ints{2, 2}}}, {in(T(DType::F32, {0, 3, 4, 4}))});
  // Windows wider than 16 columns: the window loop instead of tap ranges.
  CHECK_CASE("max_pool2d", A{{"pool_size", Ints{2, 17}}, {"pads", Ints{0, 3, 1, 2}}},
             {in(T(DType::F32, {1, 2, 4, 21}))});
  // Interior rows as vectors of outputs, in chunks of 256 (Inception v3's
  // 3x3 stride-1 average pools), the border by the window loop.
  for (DType d : {DType::F32, DType::F64}) {
    A w{{"pool_size", Ints{3, 3}}, {"pads", Ints{1, 1, 1, 1}}};
    CHECK_CASE("max_pool2d", w, {in(T(d, {1, 2, 5, 300}))});
    for (bool includePad : {false, true}) {
      A wa = w;
      wa.set("count_include_pad", includePad);
      CHECK_CASE("avg_pool2d", wa, {in(T(d, {1, 2, 5, 300}))});
    }
  }
  SECTION("NaN: a leading NaN sticks, a later one never wins") {
    Tensor x =
        Tensor::fromDoubles(DType::F32, {1, 1, 2, 2}, std::vector<double>{NAN, 1.0, 2.0, NAN});
    A w{{"pool_size", Ints{2, 2}}, {"strides", Ints{1, 1}}, {"pads", Ints{0, 0, 1, 1}}};
    CHECK_DATA("max_pool2d", w, {x});
    CHECK_DATA("max_pool2d_indices", w, {x});
    CHECK_DATA("global_max_pool2d", A{}, {x});
    // Interior rows run tap by tap over vectors of outputs: the same rule.
    std::vector<double> v(6 * 20);
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = i % 7 == 3 ? NAN : double((i * 37) % 11);
    for (DType d : {DType::F32, DType::F64}) {
      Tensor big = Tensor::fromDoubles(d, {1, 1, 6, 20}, v);
      CHECK_DATA("max_pool2d", A{{"pool_size", Ints{2, 2}}, {"strides", Ints{1, 1}}}, {big});
      CHECK_DATA("max_pool2d",
                 A{{"pool_size", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}},
                 {big});
    }
  }
}

TEST_CASE("bias_add, batch_norm and layer_norm host kernels", "[host-kernels][host-kernels-nn]") {
  using A = Attrs;
  for (DType d : numericDTypes()) {
    INFO(ir::dtypeName(d));
    CHECK_CASE("bias_add", A{}, {in(T(d, {2, 3, 4})), cst(T(d, {3}))});
    CHECK_CASE("bias_add", A{{"axis", int64_t(-1)}}, {in(T(d, {2, 3, 4})), in(T(d, {4}))});
  }
  CHECK_CASE("bias_add", A{{"axis", int64_t(0)}}, {in(T(DType::F32, {5})), in(T(DType::F32, {5}))});
  CHECK_DATA("bias_add", A{{"axis", int64_t(0)}},
             {Tensor::fromInts(DType::I8, {2}, std::vector<int64_t>{120, -120}),
              Tensor::fromInts(DType::I8, {2}, std::vector<int64_t>{100, -100})});
  for (DType d : kFloats) {
    INFO(ir::dtypeName(d));
    auto bn = [&](Shape x, int64_t c, A attrs) {
      CHECK_CASE("batch_norm", attrs,
                 {in(T(d, x)), cst(T(d, {c})), cst(T(d, {c})), in(T(d, {c})), cst(T(d, {c}))});
    };
    bn({2, 3, 4, 5}, 3, A{});
    bn({2, 3, 4, 5}, 5, A{{"axis", int64_t(-1)}, {"epsilon", 0.1}});
    bn({4}, 4, A{{"axis", int64_t(0)}});
    CHECK_CASE("layer_norm", A{}, {in(T(d, {3, 7})), cst(T(d, {7})), cst(T(d, {7}))});
    CHECK_CASE("layer_norm", A{{"axis", int64_t(1)}},
               {in(T(d, {2, 3, 4})), cst(T(d, {1, 4})), cst(T(d, {3, 1}))});
    CHECK_CASE("layer_norm", A{{"axis", int64_t(0)}, {"epsilon", 1e-2}},
               {in(T(d, {2, 3, 4})), cst(T(d, {2, 3, 4}))});
    CHECK_CASE("layer_norm", A{{"axis", int64_t(-2)}}, {in(T(d, {2, 3, 4})), cst(T(d, {}))});
  }
  CHECK_CASE("layer_norm", A{}, {in(T(DType::F32, {4, 1})), cst(T(DType::F32, {1}))});
  CHECK_CASE("layer_norm", A{{"axis", int64_t(1)}},
             {in(T(DType::F32, {0, 3})), cst(T(DType::F32, {3})), cst(T(DType::F32, {3}))});
}

TEST_CASE("softmax and log_softmax host kernels", "[host-kernels][host-kernels-nn]") {
  using A = Attrs;
  for (const char *op : {"softmax", "log_softmax"}) {
    INFO(op);
    for (DType d : kFloats) {
      INFO(ir::dtypeName(d));
      CHECK_CASE(op, A{}, {in(T(d, {3, 9}))});
      CHECK_CASE(op, A{{"axis", int64_t(0)}}, {in(T(d, {5, 2, 3}))});
      CHECK_CASE(op, A{{"axis", int64_t(1)}}, {in(T(d, {2, 4, 3, 2}))});
    }
    CHECK_CASE(op, A{}, {in(T(DType::F32, {7}))});
    CHECK_CASE(op, A{}, {in(T(DType::F32, {3, 1}))});
    CHECK_CASE(op, A{{"axis", int64_t(0)}}, {in(T(DType::F32, {0, 4}))});
    CHECK_DATA(op, A{},
               {Tensor::fromDoubles(DType::F32, {3, 3},
                                    std::vector<double>{1.0, NAN, 2.0, -INFINITY, -INFINITY,
                                                        -INFINITY, INFINITY, 0.0, 1.0})});
  }
}

TEST_CASE("reduction host kernels", "[host-kernels][host-kernels-nn]") {
  using A = Attrs;
  const std::vector<A> axes = {
      A{},
      A{{"axes", Ints{1}}},
      A{{"axes", Ints{0, 2}}, {"keepdims", false}},
      A{{"axes", Ints{-1}}},
      A{{"axes", Ints{1, 3}}, {"keepdims", false}},
      A{{"axes", Ints{0, 1, 2, 3, 4}}},
      A{{"axes", Ints{4, 0}}},
  };
  SECTION("dtypes, axes and shapes") {
    for (const char *op :
         {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"}) {
      INFO(op);
      std::vector<DType> dtypes = numericDTypes();
      if (std::string(op) == "reduce_max" || std::string(op) == "reduce_min")
        dtypes.push_back(DType::Bool);
      for (DType d : dtypes) {
        INFO(ir::dtypeName(d));
        for (const A &a : axes) {
          CHECK_CASE(op, a, {in(T(d, {2, 3, 1, 4, 5}))});
        }
        CHECK_CASE(op, A{}, {in(T(d, {}))});
        CHECK_CASE(op, A{{"keepdims", false}}, {in(T(d, {1, 1}))});
        CHECK_CASE(op, A{{"axes", Ints{0}}}, {in(T(d, {7}))});
      }
      // Empty inputs: a reduced empty axis gives the identity (float mean: NaN).
      CHECK_CASE(op, A{{"axes", Ints{1}}}, {in(T(DType::F32, {3, 0, 2}))});
      CHECK_CASE(op, A{{"axes", Ints{0}}}, {in(T(DType::F32, {3, 0, 2}))});
      if (std::string(op) != "reduce_mean") // an error: see below
        CHECK_CASE(op, A{{"axes", Ints{1}}}, {in(T(DType::I32, {3, 0}))});
      // Large enough for the thread split to matter.
      CHECK_CASE(op, A{{"axes", Ints{1}}}, {in(T(DType::F32, {70, 33, 40}))});
    }
  }
  SECTION("integer edge data") {
    Tensor i8 =
        Tensor::fromInts(DType::I8, {2, 3}, std::vector<int64_t>{127, 100, 3, -128, -7, -2});
    Tensor u64 =
        Tensor::fromInts(DType::U64, {2, 2}, std::vector<int64_t>{-1, -2, int64_t(1) << 63, 5});
    Tensor i64 = Tensor::fromInts(DType::I64, {3},
                                  std::vector<int64_t>{INT64_MAX, INT64_MAX, INT64_MIN + 1});
    for (const char *op :
         {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"}) {
      INFO(op);
      for (const Tensor &x : {i8, u64})
        for (const A &a : {A{}, A{{"axes", Ints{0}}}, A{{"axes", Ints{1}}}})
          CHECK_DATA(op, a, {x});
      CHECK_DATA(op, A{}, {i64});
    }
    Tensor neg = Tensor::fromInts(DType::I32, {2}, std::vector<int64_t>{-4, -3});
    CHECK_DATA("reduce_mean", A{}, {neg});
  }
  SECTION("the integer mean of an empty set is an error") {
    auto call =
        makeCall("reduce_mean", {makeVar("x", T(DType::I32, {2, 0}))}, A{{"axes", Ints{1}}}, "m");
    REQUIRE(call);
    auto got = hostkernel::runNative(*(*call)->as<CallNode>(), {Tensor(DType::I32, {2, 0})});
    REQUIRE_FALSE(got);
    CHECK(got.error().str() == fmt::format("tk_reduce returned {}", int(TESSERA_HOST_ERR_INVALID)));
  }
  SECTION("NaN propagates through max and min") {
    Tensor x = Tensor::fromDoubles(DType::F32, {2, 3},
                                   std::vector<double>{1.0, NAN, 3.0, -INFINITY, 2.0, NAN});
    for (const char *op : {"reduce_max", "reduce_min", "reduce_sum"})
      for (const A &a : {A{}, A{{"axes", Ints{0}}}, A{{"axes", Ints{1}}}})
        CHECK_DATA(op, a, {x});
  }
}

TEST_CASE("argmax and argmin host kernels", "[host-kernels][host-kernels-nn]") {
  using A = Attrs;
  for (const char *op : {"argmax", "argmin"}) {
    INFO(op);
    for (DType d : numericDTypes()) {
      INFO(ir::dtypeName(d));
      for (int64_t axis : {0, 1, -1})
        for (bool last : {false, true})
          for (bool keep : {false, true})
            CHECK_CASE(op, A{{"axis", axis}, {"select_last_index", last}, {"keepdims", keep}},
                       {in(T(d, {4, 5, 6}))});
    }
    CHECK_CASE(op, A{}, {in(T(DType::F32, {9}))});
    CHECK_CASE(op, A{{"axis", int64_t(1)}}, {in(T(DType::F32, {0, 3}))});
    CHECK_CASE(op, A{{"axis", int64_t(0)}}, {in(T(DType::I8, {3, 300}))});
    Tensor x = Tensor::fromDoubles(DType::F32, {2, 4},
                                   std::vector<double>{1.0, NAN, 3.0, NAN, 2.0, 2.0, 1.0, 2.0});
    for (bool last : {false, true})
      CHECK_DATA(op, A{{"axis", int64_t(1)}, {"select_last_index", last}}, {x});
    Tensor u = Tensor::fromInts(DType::U64, {3}, std::vector<int64_t>{5, -1, 7});
    CHECK_DATA(op, A{}, {u});
  }
}

TEST_CASE("cumsum host kernel", "[host-kernels][host-kernels-nn]") {
  using A = Attrs;
  for (DType d : numericDTypes()) {
    INFO(ir::dtypeName(d));
    for (int64_t axis : {0, 1, -1})
      for (bool exclusive : {false, true})
        for (bool reverse : {false, true})
          CHECK_CASE("cumsum", A{{"axis", axis}, {"exclusive", exclusive}, {"reverse", reverse}},
                     {in(T(d, {3, 4, 70}))});
  }
  CHECK_CASE("cumsum", A{}, {in(T(DType::F32, {5}))});
  CHECK_CASE("cumsum", A{{"axis", int64_t(1)}}, {in(T(DType::F32, {2, 0}))});
  CHECK_DATA("cumsum", A{},
             {Tensor::fromInts(DType::I8, {3}, std::vector<int64_t>{100, 100, 100})});
}

TEST_CASE("topk host kernel", "[host-kernels][host-kernels-nn]") {
  using A = Attrs;
  for (DType d : numericDTypes()) {
    INFO(ir::dtypeName(d));
    for (int64_t k : {0, 1, 3, 7})
      for (bool largest : {true, false}) {
        CHECK_CASE("topk", A{{"k", k}, {"largest", largest}}, {in(T(d, {3, 7}))});
        CHECK_CASE("topk", A{{"k", k}, {"largest", largest}, {"axis", int64_t(0)}},
                   {in(T(d, {7, 2, 3}))});
      }
  }
  CHECK_CASE("topk", A{{"k", int64_t(5)}}, {in(T(DType::F32, {33}))});
  CHECK_CASE("topk", A{{"k", int64_t(0)}}, {in(T(DType::F32, {2, 0}))});
  // A few of many (k at most a quarter of n) are selected, then sorted:
  // every dtype (int8's many ties), both directions, along a middle axis.
  for (DType d : numericDTypes())
    for (int64_t k : {1, 10, 250})
      for (bool largest : {true, false}) {
        INFO(ir::dtypeName(d) << " k=" << k << " largest=" << largest);
        CHECK_CASE("topk", A{{"k", k}, {"largest", largest}, {"axis", int64_t(1)}},
                   {in(T(d, {2, 1000, 3}))});
      }
  std::vector<double> ties(400, 0.25), withNaN(400);
  for (size_t i = 0; i < withNaN.size(); ++i)
    withNaN[i] = i % 37 == 0 ? NAN : double(i % 11);
  for (bool largest : {true, false}) {
    CHECK_DATA("topk", A{{"k", int64_t(20)}, {"largest", largest}},
               {Tensor::fromDoubles(DType::F32, {400}, ties)});
    CHECK_DATA("topk", A{{"k", int64_t(20)}, {"largest", largest}}, // NaN: the full sort
               {Tensor::fromDoubles(DType::F32, {400}, withNaN)});
  }
  CHECK_DATA("topk", A{{"k", int64_t(3)}},
             {Tensor::fromInts(DType::U64, {4}, std::vector<int64_t>{1, -1, 1, -2})});
}

TEST_CASE("det host kernel", "[host-kernels][host-kernels-nn]") {
  using A = Attrs;
  for (DType d : kFloats)
    for (int64_t n : {1, 2, 3, 5}) {
      INFO(ir::dtypeName(d) << " n=" << n);
      CHECK_CASE("det", A{}, {in(T(d, {n, n}))});
      CHECK_CASE("det", A{}, {in(T(d, {2, 3, n, n}))});
    }
  CHECK_CASE("det", A{}, {in(T(DType::F32, {2, 0, 0}))});
  CHECK_CASE("det", A{}, {in(T(DType::F32, {0, 3, 3}))});
  CHECK_DATA(
      "det", A{},
      {Tensor::fromDoubles(DType::F64, {2, 2, 2}, std::vector<double>{1, 2, 2, 4, 0, 1, 1, NAN})});
}

TEST_CASE("nn ops compiled into an artifact match the interpreter",
          "[host-kernels][host-kernels-nn]") {
  const char *text = R"(
def @main(%x: f32[2, 3, 12, 12], %w: f32[8, 3, 3, 3], %bias: f32[8], %wd: f32[6, 1, 3, 3], %q: f32[2, 5, 8], %k: f32[2, 7, 8], %gamma: f32[8], %beta: f32[8], %wq: f32[4, 8], %m: f32[3, 4, 5], %v: f32[5]) -> (f32[2, 8, 3, 3], f32[2, 8, 6, 6], f32[2, 8, 1, 1], f32[2, 6, 12, 12], f32[2, 5, 7], f32[2, 5, 4], f32[2, 8, 1, 1], i64[2, 5, 1], f32[3, 4, 5], f32[3, 4]) {
  %c = conv2d(%x, %w) {pads=[1, 1, 1, 1], strides=[2, 2]}
  %b = bias_add(%c, %bias)
  %p = max_pool2d(%b) {pool_size=[2, 2], strides=[2, 2]}
  %a = avg_pool2d(%c) {pool_size=[3, 3], pads=[1, 1, 1, 1], count_include_pad=true}
  %g = global_avg_pool2d(%p)
  %dw = conv2d(%x, %wd) {groups=3, pads=[1, 1, 1, 1]}
  %s = batch_matmul(%q, %k) {transpose_b=true}
  %sm = softmax(%s)
  %ln = layer_norm(%q, %gamma, %beta)
  %d = dense(%ln, %wq)
  %r = reduce_mean(%c) {axes=[2, 3]}
  %am = argmax(%sm) {axis=-1}
  %cs = cumsum(%m) {axis=1}
  %mm = matmul(%m, %v)
  %t = tuple(%p, %a, %g, %dw, %sm, %d, %r, %am, %cs, %mm)
  return %t
}
)";
  auto m = ir::parseModule(text);
  INFO((m ? "" : m.error().str()));
  REQUIRE(m);
  auto compiled = compile::compileModule(*m, compile::CompileOptions{}, nullptr);
  INFO((compiled ? "" : compiled.error().str()));
  REQUIRE(compiled);
  auto model = runtime::LoadedModel::load(compiled->artifact, "nn.tsr");
  INFO((model ? "" : model.error().str()));
  REQUIRE(model);
  auto session = runtime::Session::create(*model, {2});
  REQUIRE(session);
  std::mt19937_64 rng(5);
  std::vector<Tensor> inputs;
  for (const auto &p : m->find("main")->params()) {
    inputs.push_back(kit::randomTensor(p->type(), kit::Domain::Any, rng));
    REQUIRE((*session)->setInput(inputs.size() - 1, inputs.back().dl()).ok());
  }
  auto ran = (*session)->run();
  INFO((ran.ok() ? "" : ran.error().str()));
  REQUIRE(ran.ok());
  auto want = interp::run(*m, inputs);
  REQUIRE(want);
  std::vector<Tensor> expected = want->flatten();
  REQUIRE(expected.size() == (*model)->outputs().size());
  for (size_t i = 0; i < expected.size(); ++i) {
    auto out = (*session)->output(i);
    REQUIRE(out.ok());
    INFO("output " << i);
    CHECK(kit::compareTensors(Tensor::copyOf(**out), expected[i]) == "");
  }
}

} // namespace tessera::test
