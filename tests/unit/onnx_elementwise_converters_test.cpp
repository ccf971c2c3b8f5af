//===- tests/unit/onnx_elementwise_converters_test.cpp - ONNX elementwise/reduce converters ===//
//
// The ONNX backend tests (tessera conformance) are the main test of the
// elementwise and reduce converters. These tests cover what that data does
// not: the pre-opset-7 variants (legacy 'broadcast'/'axis', per-channel
// PRelu slopes, Clip bounds as attributes), non-constant inputs (Clip bounds
// as maximum/minimum, axes that must be constants) and error messages.
// Converters run on a NodeContext built by hand; constant inputs fold, so
// the results are constants checked against hand-computed values.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/converter.h"
#include "test_util.h"

#include <cmath>

using namespace tessera::test;
using tessera::frontend::onnx::ConverterRegistry;
using tessera::frontend::onnx::NodeContext;
using tessera::frontend::onnx::OnnxAttr;

namespace {

using AttrMap = std::map<std::string, OnnxAttr, std::less<>>;

/// Runs the standard converter of `opType` on a node with these inputs.
tessera::Expected<std::vector<Expr>> convert(const std::string &opType, int64_t opset,
                                             std::vector<Expr> inputs, AttrMap attrs = {},
                                             size_t numOutputs = 1) {
  const auto *spec = ConverterRegistry::standard().find(opType);
  REQUIRE(spec != nullptr);
  NodeContext ctx(opType, "n0", opset, std::move(inputs), numOutputs, std::move(attrs));
  return spec->convert(ctx);
}

/// The single output, which must have folded to a constant.
Tensor folded(const tessera::Expected<std::vector<Expr>> &out) {
  if (!out.ok())
    FAIL("conversion failed: " << out.error().str());
  REQUIRE(out->size() >= 1);
  const auto *c = (*out)[0]->as<ConstantNode>();
  REQUIRE(c != nullptr);
  return c->data();
}

std::string errorOf(const tessera::Expected<std::vector<Expr>> &out) {
  return out.ok() ? std::string() : out.error().str();
}

Expr k(Tensor t) {
  return makeConstant(std::move(t));
}

void requireInts(const Tensor &t, DType dtype, Shape shape, std::vector<int64_t> expected) {
  REQUIRE(t.dtype() == dtype);
  REQUIRE(t.shape() == shape);
  REQUIRE(t.toInts() == expected);
}

/// The op names of the calls reachable from `e`, outermost first (operands
/// in order, depth first).
void collectOps(const Expr &e, std::vector<std::string> &ops) {
  if (const auto *c = e->as<CallNode>()) {
    ops.push_back(c->calleeName());
    for (const auto &a : c->args())
      collectOps(a, ops);
  }
}

} // namespace

TEST_CASE("onnx Add/Mul before opset 7: legacy broadcast", "[onnx][onnx_elementwise]") {
  Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  // broadcast = 1, axis 0: B [2] runs along A's dim 0.
  requireClose(folded(convert("Add", 6, {k(a), k(f32({2}, {10, 20}))},
                              {{"broadcast", int64_t(1)}, {"axis", int64_t(0)}})),
               f32({2, 3}, {11, 12, 13, 24, 25, 26}));
  // broadcast = 1 without axis: B matches A's trailing dims.
  requireClose(
      folded(convert("Mul", 6, {k(a), k(f32({3}, {1, 10, 100}))}, {{"broadcast", int64_t(1)}})),
      f32({2, 3}, {1, 20, 300, 4, 50, 600}));
  // A size-1 dim of B broadcasts too: [2, 1] at axis 0.
  requireClose(folded(convert("Sub", 6, {k(a), k(f32({2, 1}, {1, 2}))},
                              {{"broadcast", int64_t(1)}, {"axis", int64_t(0)}})),
               f32({2, 3}, {0, 1, 2, 2, 3, 4}));
  // Equal shapes need no attribute.
  requireClose(folded(convert("Add", 1, {k(a), k(a)})), f32({2, 3}, {2, 4, 6, 8, 10, 12}));
  CHECK(errorOf(convert("Add", 6, {k(a), k(f32({3}, {1, 2, 3}))})) ==
        "node 'n0' (Add): input shapes [2, 3] and [3] differ and attribute 'broadcast' is 0 "
        "(opset 6)");
  CHECK(errorOf(convert("Add", 6, {k(a), k(f32({3}, {1, 2, 3}))},
                        {{"broadcast", int64_t(1)}, {"axis", int64_t(0)}})) ==
        "node 'n0' (Add): legacy broadcast of [3] onto [2, 3] at attribute 'axis' = 0 does not "
        "fit");
  // From opset 7 the attributes are gone and numpy broadcasting applies.
  requireClose(folded(convert("Add", 7, {k(a), k(f32({3}, {1, 1, 1}))})),
               f32({2, 3}, {2, 3, 4, 5, 6, 7}));
}

TEST_CASE("onnx PRelu: per-channel slope before opset 7", "[onnx][onnx_elementwise]") {
  // x [1, 2, 2], slope [2] per channel (axis 1): 0.5 and 0.25.
  Tensor x = f32({1, 2, 2}, {-2, 3, -4, 5});
  requireClose(folded(convert("PRelu", 6, {k(x), k(f32({2}, {0.5, 0.25}))})),
               f32({1, 2, 2}, {-1, 3, -1, 5}));
  // Opset 7+: numpy broadcasting, so a [2] slope runs along the last dim.
  requireClose(folded(convert("PRelu", 9, {k(x), k(f32({2}, {0.5, 0.25}))})),
               f32({1, 2, 2}, {-1, 3, -2, 5}));
  CHECK(errorOf(convert("PRelu", 9, {k(f32({2}, {1, 2})), k(f32({2, 2}, {1, 1, 1, 1}))})) ==
        "node 'n0' (PRelu): slope f32[2, 2] does not broadcast to the input f32[2]");
}

TEST_CASE("onnx Clip: attribute and input bounds", "[onnx][onnx_elementwise]") {
  Tensor x = f32({4}, {-5, 0, 0.5, 5});
  requireClose(folded(convert("Clip", 6, {k(x)}, {{"min", -1.0f}, {"max", 1.0f}})),
               f32({4}, {-1, 0, 0.5, 1}));
  // Opset 6 defaults are float's range.
  requireClose(folded(convert("Clip", 6, {k(x)}, {{"max", 0.25f}})), f32({4}, {-5, 0, 0.25, 0.25}));
  // Opset 11+: optional inputs; an omitted min.
  requireClose(folded(convert("Clip", 13, {k(x), nullptr, k(f32({}, {0.25}))})),
               f32({4}, {-5, 0, 0.25, 0.25}));
  // Integer dtypes.
  requireInts(
      folded(convert("Clip", 13,
                     {k(Tensor::fromInts(DType::I8, {3}, std::vector<int64_t>{-100, 7, 100})),
                      k(Tensor::fromInts(DType::I8, {}, std::vector<int64_t>{-10})),
                      k(Tensor::fromInts(DType::I8, {}, std::vector<int64_t>{10}))})),
      DType::I8, {3}, {-10, 7, 10});
  // A bound that is not a constant becomes maximum / minimum.
  Expr xv = makeVar("x", Type::tensor(DType::F32, {4}));
  Expr lo = makeVar("lo", Type::tensor(DType::F32, {}));
  auto out = convert("Clip", 13, {xv, lo, k(f32({}, {2}))});
  REQUIRE(out.ok());
  std::vector<std::string> ops;
  collectOps((*out)[0], ops);
  CHECK(ops == std::vector<std::string>{"clip", "maximum"});
  CHECK(errorOf(convert("Clip", 13, {xv, k(f32({2}, {0, 1}))})) ==
        "node 'n0' (Clip): input 1 ('min') must be a scalar, got f32[2]");
  CHECK(errorOf(convert("Clip", 13, {xv, k(i64({}, {0}))})) ==
        "node 'n0' (Clip): input 1 ('min') has dtype i64, expected f32 (as input 0)");
}

TEST_CASE("onnx variadic Sum/Mean and composed activations", "[onnx][onnx_elementwise]") {
  Tensor a = f32({2}, {1, 2}), b = f32({2, 1}, {10, 20}), c = f32({}, {3});
  requireClose(folded(convert("Sum", 13, {k(a), k(b), k(c)})), f32({2, 2}, {14, 15, 24, 25}));
  requireClose(folded(convert("Mean", 13, {k(a), k(b), k(c)})),
               f32({2, 2}, {14.0 / 3, 5, 8, 25.0 / 3}));
  requireClose(folded(convert("Sum", 13, {k(a)})), a);
  CHECK(errorOf(convert("Sum", 13, {})) == "node 'n0' (Sum): needs at least one input");
  // Elu alpha 2: 2 * (e^-1 - 1) = -1.2642411176571153.
  requireClose(folded(convert("Elu", 6, {k(f32({2}, {-1, 3}))}, {{"alpha", 2.0f}})),
               f32({2}, {-1.2642411176571153, 3}));
  // Softsign: x / (1 + |x|).
  requireClose(folded(convert("Softsign", 1, {k(f32({3}, {-3, 0, 1}))})),
               f32({3}, {-0.75, 0, 0.5}));
  // Shrink on integers (computed in f64): lambd 1.5, bias 1.
  requireInts(
      folded(convert("Shrink", 9,
                     {k(Tensor::fromInts(DType::I32, {4}, std::vector<int64_t>{-3, -1, 1, 4}))},
                     {{"lambd", 1.5f}, {"bias", 1.0f}})),
      DType::I32, {4}, {-2, 0, 0, 3});
}

TEST_CASE("onnx Not, IsInf and the comparisons", "[onnx][onnx_elementwise]") {
  Tensor bools = Tensor::fromInts(DType::Bool, {3}, std::vector<int64_t>{1, 0, 1});
  requireInts(folded(convert("Not", 1, {k(bools)})), DType::Bool, {3}, {0, 1, 0});
  Tensor x = f32({3}, {1, INFINITY, -INFINITY});
  requireInts(folded(convert("IsInf", 10, {k(x)}, {{"detect_negative", int64_t(0)}})), DType::Bool,
              {3}, {0, 1, 0});
  requireInts(folded(convert("LessOrEqual", 16, {k(f32({3}, {1, 2, 3})), k(f32({}, {2}))})),
              DType::Bool, {3}, {1, 1, 0});
  CHECK(errorOf(convert("And", 7, {k(bools), k(f32({3}, {1, 2, 3}))})) ==
        "node 'n0' (And): logical_and: argument 1 must be a bool tensor, got f32[3] (inputs: "
        "bool[3], f32[3])");
}

TEST_CASE("onnx reductions: axes, keepdims, noop", "[onnx][onnx_reduce]") {
  // [[1, 2, 3], [4, 5, 6]]
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  // Opset 11: axes attribute.
  requireClose(folded(convert("ReduceSum", 11, {k(x)},
                              {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t(0)}})),
               f32({2}, {6, 15}));
  // Opset 13: axes input; empty axes reduce everything unless noop.
  requireClose(folded(convert("ReduceSum", 13, {k(x), k(i64({1}, {-2}))})), f32({1, 3}, {5, 7, 9}));
  requireClose(folded(convert("ReduceSum", 13, {k(x), k(i64({0}, {}))})), f32({1, 1}, {21}));
  requireClose(folded(convert("ReduceSum", 13, {k(x), k(i64({0}, {}))},
                              {{"noop_with_empty_axes", int64_t(1)}})),
               x);
  Expr axes = makeVar("axes", Type::tensor(DType::I64, {1}));
  CHECK(errorOf(convert("ReduceSum", 13, {k(x), axes})) ==
        "node 'n0' (ReduceSum): input 1 ('axes') must be a constant (our IR has static shapes)");
  // ReduceLogSumExp is shifted by the max: no overflow at 1000.
  requireClose(folded(convert("ReduceLogSumExp", 13, {k(f32({2}, {1000, 1000}))},
                              {{"keepdims", int64_t(0)}})),
               f32({}, {1000 + std::log(2.0)}));
  requireClose(folded(convert("ReduceLogSumExp", 13, {k(x)}, {{"axes", std::vector<int64_t>{0}}})),
               f32({1, 3}, {4.048587351573742, 5.048587351573742, 6.048587351573742}));
  // keepdims = 0 with a negative axis: log(e + e^2 + e^3) = 3 + log(1 + e^-1 + e^-2).
  requireClose(folded(convert("ReduceLogSumExp", 13, {k(x)},
                              {{"axes", std::vector<int64_t>{-1}}, {"keepdims", int64_t(0)}})),
               f32({2}, {3.40760596444438, 6.40760596444438}));
  // Integer ReduceL2 goes through f64 and truncates back: sqrt(9 + 16) = 5,
  // sqrt(1 + 1) -> 1.
  requireInts(folded(convert("ReduceL2", 13, {k(i64({2, 2}, {3, 4, 1, 1}))},
                             {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t(0)}})),
              DType::I64, {2}, {5, 1});
  requireInts(
      folded(convert("ArgMax", 13, {k(x)}, {{"axis", int64_t(-1)}, {"keepdims", int64_t(0)}})),
      DType::I64, {2}, {2, 2});
}

TEST_CASE("onnx Cast and CastLike", "[onnx][onnx_elementwise]") {
  // Floats to integers truncate toward zero; to f16 rounds to nearest even
  // (1 + 2^-11 lies halfway between 1 and 1 + 2^-10).
  Tensor x = f32({2}, {1.75f, -1.75f});
  requireInts(folded(convert("Cast", 13, {k(x)}, {{"to", OnnxAttr(int64_t(6))}})), DType::I32, {2},
              {1, -1});
  Tensor h = folded(convert("Cast", 13, {k(f32({2}, {1.0f + 0x1p-11f, 1.0f + 0x1p-10f}))},
                            {{"to", OnnxAttr(int64_t(10))}}));
  REQUIRE(h.dtype() == DType::F16);
  CHECK(h.getDouble(0) == 1.0);
  CHECK(h.getDouble(1) == 1.0 + 0x1p-10);
  CHECK(errorOf(convert("Cast", 13, {k(x)}, {{"to", OnnxAttr(int64_t(8))}})) ==
        "node 'n0' (Cast): ONNX element type STRING has no Tessera dtype");
  // CastLike takes the dtype of input 1 and nothing else from it.
  requireInts(folded(convert("CastLike", 15, {k(x), k(i64({1}, {0}))})), DType::I64, {2}, {1, -1});
}

TEST_CASE("onnx Dropout: inference, and training mode with a seed", "[onnx][onnx_elementwise]") {
  Tensor x = f32({6}, {1, 2, 3, 4, 5, 6});
  Tensor yes(DType::Bool, {});
  yes.setInt(0, 1);
  Tensor half = f32({}, {0.5f});
  SECTION("inference is the identity with an all-true mask") {
    Expr in = k(x);
    auto out = convert("Dropout", 13, {in, k(half)}, {}, 2);
    REQUIRE(out.ok());
    CHECK((*out)[0] == in); // the input itself, no op
    requireInts((*out)[1]->as<ConstantNode>()->data(), DType::Bool, {6}, {1, 1, 1, 1, 1, 1});
  }
  SECTION("training mode needs a seed") {
    CHECK(errorOf(convert("Dropout", 13, {k(x), k(half), k(yes)}, {}, 2)) ==
          "node 'n0' (Dropout): training mode with ratio 0.5 and no 'seed' attribute is not "
          "supported (the output would be random)");
  }
  SECTION("with a seed the mask is numpy's: RandomState(0).uniform(0, 1, 6) >= 0.5") {
    // numpy.random.seed(0); numpy.random.uniform(0, 1, 6) gives
    // [0.5488135 0.71518937 0.60276338 0.54488318 0.4236548 0.64589411].
    auto out = convert("Dropout", 13, {k(x), k(half), k(yes)}, {{"seed", OnnxAttr(int64_t(0))}}, 2);
    REQUIRE(out.ok());
    const auto *y = (*out)[0]->as<ConstantNode>();
    const auto *mask = (*out)[1]->as<ConstantNode>();
    REQUIRE(y != nullptr);
    REQUIRE(mask != nullptr);
    requireInts(mask->data(), DType::Bool, {6}, {1, 1, 1, 1, 0, 1});
    // Kept values are scaled by 1 / (1 - ratio).
    requireClose(y->data(), f32({6}, {2, 4, 6, 8, 0, 12}));
  }
}
