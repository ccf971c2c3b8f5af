//===- tests/unit/ops_elementwise_test.cpp - Elementwise op family --------===//
//
// Type relations and reference kernels of the elementwise ops (binary
// arithmetic, comparisons, unary math, activations, where, cast, mod,
// trigonometric functions, predicates, logic). Expected values are computed
// by hand from the op definitions.
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include <cmath>
#include <limits>

using namespace tessera::test;

namespace {

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

Type T(DType dtype, Shape shape) { return Type::tensor(dtype, std::move(shape)); }

Tensor make(DType dtype, Shape shape, std::vector<double> values) {
  return Tensor::fromDoubles(dtype, std::move(shape), values);
}
Tensor makeInts(DType dtype, Shape shape, std::vector<int64_t> values) {
  return Tensor::fromInts(dtype, std::move(shape), values);
}
Tensor boolT(Shape shape, std::vector<int64_t> values) {
  return Tensor::fromInts(DType::Bool, std::move(shape), values);
}

void requireInts(const Tensor &t, DType dtype, Shape shape, std::vector<int64_t> expected) {
  REQUIRE(t.dtype() == dtype);
  REQUIRE(t.shape() == shape);
  REQUIRE(t.toInts() == expected);
}

} // namespace

//===----------------------------------------------------------------------===//
// Binary arithmetic
//===----------------------------------------------------------------------===//

TEST_CASE("binary arithmetic: type inference", "[ops][add][subtract][multiply][divide][power]"
                                                "[maximum][minimum]") {
  for (std::string op : {"add", "subtract", "multiply", "divide", "power", "maximum", "minimum"}) {
    INFO(op);
    CHECK(*inferOp(op, {T(DType::F32, {2, 3}), T(DType::F32, {3})}) == T(DType::F32, {2, 3}));
    CHECK(*inferOp(op, {T(DType::I32, {2, 1}), T(DType::I32, {1, 3})}) == T(DType::I32, {2, 3}));
    CHECK(*inferOp(op, {T(DType::F16, {}), T(DType::F16, {2, 2})}) == T(DType::F16, {2, 2}));
    CHECK(*inferOp(op, {T(DType::U8, {4}), T(DType::U8, {4})}) == T(DType::U8, {4}));
    CHECK(inferError(op, {T(DType::F32, {2}), T(DType::I64, {2})}) ==
          op + ": argument 1 has dtype i64, expected f32 (as argument 0) (inputs: f32[2], i64[2])");
    CHECK(inferError(op, {T(DType::Bool, {2}), T(DType::Bool, {2})}) ==
          op + ": argument 0 must be a numeric tensor, got bool[2] (inputs: bool[2], bool[2])");
    CHECK(inferError(op, {T(DType::F32, {2, 3}), T(DType::F32, {4})}) ==
          op + ": cannot broadcast [2, 3] with [4] (inputs: f32[2, 3], f32[4])");
  }
}

TEST_CASE("add: broadcasting and integer wrap", "[ops][add]") {
  // [2, 3] + [3]
  requireClose(run1("add", {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({3}, {10, 20, 30})}),
               f32({2, 3}, {11, 22, 33, 14, 25, 36}));
  // scalar + [2, 2]
  requireClose(run1("add", {f32({}, {5}), f32({2, 2}, {1, 2, 3, 4})}), f32({2, 2}, {6, 7, 8, 9}));
  requireInts(run1("add", {i64({2}, {-7, 40}), i64({2}, {2, 2})}), DType::I64, {2}, {-5, 42});
  // i8: 100 + 100 = 200 wraps to -56.
  requireInts(run1("add", {makeInts(DType::I8, {1}, {100}), makeInts(DType::I8, {1}, {100})}),
              DType::I8, {1}, {-56});
}

TEST_CASE("subtract: broadcasting and unsigned wrap", "[ops][subtract]") {
  // [2, 1] - [1, 3]
  requireClose(run1("subtract", {f32({2, 1}, {10, 20}), f32({1, 3}, {1, 2, 3})}),
               f32({2, 3}, {9, 8, 7, 19, 18, 17}));
  // u8: 3 - 5 = -2 wraps to 254.
  requireInts(run1("subtract", {makeInts(DType::U8, {2}, {3, 9}), makeInts(DType::U8, {2}, {5, 4})}),
              DType::U8, {2}, {254, 5});
}

TEST_CASE("multiply: broadcasting", "[ops][multiply]") {
  // [2, 1] * [1, 3]
  requireClose(run1("multiply", {f32({2, 1}, {2, 3}), f32({1, 3}, {1, 2, 3})}),
               f32({2, 3}, {2, 4, 6, 3, 6, 9}));
  requireInts(run1("multiply", {makeInts(DType::I32, {2, 2}, {1, -2, 3, -4}),
                                makeInts(DType::I32, {}, {-3})}),
              DType::I32, {2, 2}, {-3, 6, -9, 12});
}

TEST_CASE("divide: float, integer truncation, division by zero", "[ops][divide]") {
  Tensor q = run1("divide", {f32({4}, {1, -7, 3, -3}), f32({4}, {2, 2, 0, 0})});
  REQUIRE(q.type() == T(DType::F32, {4}));
  CHECK(q.getDouble(0) == 0.5);
  CHECK(q.getDouble(1) == -3.5);
  CHECK(q.getDouble(2) == kInf);
  CHECK(q.getDouble(3) == -kInf);
  // Integer division truncates toward zero: -7 / 2 = -3, 7 / -2 = -3.
  requireInts(run1("divide", {i64({4}, {-7, 7, -7, 7}), i64({4}, {2, 2, -2, -2})}), DType::I64,
              {4}, {-3, 3, 3, -3});
  // Broadcasting a scalar divisor.
  requireInts(run1("divide", {makeInts(DType::I32, {2, 2}, {9, -9, 10, 1}),
                              makeInts(DType::I32, {}, {4})}),
              DType::I32, {2, 2}, {2, -2, 2, 0});
  CHECK(kernelError("divide", {makeInts(DType::I32, {2}, {1, 7}), makeInts(DType::I32, {2}, {1, 0})}) ==
        "divide: integer division of 7 by zero (output element 1)");
}

TEST_CASE("power: float and integer", "[ops][power]") {
  requireClose(run1("power", {f32({3}, {2, 4, 9}), f32({3}, {3, 0.5, -1})}),
               f32({3}, {8, 2, 1.0 / 9}));
  // [2, 2] ** scalar
  requireClose(run1("power", {f32({2, 2}, {1, 2, 3, -2}), f32({}, {2})}), f32({2, 2}, {1, 4, 9, 4}));
  // Integer power; negative exponents truncate the real result toward zero.
  requireInts(run1("power", {i64({6}, {2, -3, 5, 2, -1, 1}), i64({6}, {10, 3, 0, -1, -3, -5})}),
              DType::I64, {6}, {1024, -27, 1, 0, -1, 1});
  CHECK(kernelError("power", {i64({1}, {0}), i64({1}, {-1})}) ==
        "power: zero raised to the negative power -1 (output element 0)");
}

TEST_CASE("maximum and minimum", "[ops][maximum][minimum]") {
  Tensor a = f32({4}, {1, 5, -2, kNaN}), b = f32({4}, {3, 2, -2, 1});
  requireClose(run1("maximum", {a, b}), f32({4}, {3, 5, -2, kNaN}));
  requireClose(run1("minimum", {a, b}), f32({4}, {1, 2, -2, kNaN}));
  // [2, 2] with a scalar
  requireClose(run1("maximum", {f32({2, 2}, {1, 5, -3, 0}), f32({}, {0})}),
               f32({2, 2}, {1, 5, 0, 0}));
  requireInts(run1("minimum", {makeInts(DType::I32, {2, 1}, {1, 5}),
                               makeInts(DType::I32, {1, 3}, {0, 3, 7})}),
              DType::I32, {2, 3}, {0, 1, 1, 0, 3, 5});
  requireInts(run1("maximum", {makeInts(DType::I8, {2}, {-128, 3}), makeInts(DType::I8, {2}, {-1, -4})}),
              DType::I8, {2}, {-1, 3});
}

//===----------------------------------------------------------------------===//
// Comparisons
//===----------------------------------------------------------------------===//

TEST_CASE("comparisons: type inference", "[ops][equal][less][greater]") {
  for (std::string op : {"equal", "less", "greater"}) {
    INFO(op);
    CHECK(*inferOp(op, {T(DType::F32, {2, 3}), T(DType::F32, {3})}) == T(DType::Bool, {2, 3}));
    CHECK(*inferOp(op, {T(DType::I64, {}), T(DType::I64, {2, 2})}) == T(DType::Bool, {2, 2}));
    CHECK(inferError(op, {T(DType::F32, {2}), T(DType::F16, {2})}) ==
          op + ": argument 1 has dtype f16, expected f32 (as argument 0) (inputs: f32[2], f16[2])");
    CHECK(inferError(op, {T(DType::F32, {2}), T(DType::F32, {3})}) ==
          op + ": cannot broadcast [2] with [3] (inputs: f32[2], f32[3])");
  }
  CHECK(*inferOp("equal", {T(DType::Bool, {2}), T(DType::Bool, {2})}) == T(DType::Bool, {2}));
  CHECK(inferError("less", {T(DType::Bool, {2}), T(DType::Bool, {2})}) ==
        "less: argument 0 must be a numeric tensor, got bool[2] (inputs: bool[2], bool[2])");
  CHECK(inferError("greater", {T(DType::Bool, {1}), T(DType::Bool, {1})}) ==
        "greater: argument 0 must be a numeric tensor, got bool[1] (inputs: bool[1], bool[1])");
}

TEST_CASE("equal", "[ops][equal]") {
  requireInts(run1("equal", {f32({4}, {1, 2, 3, kNaN}), f32({4}, {1, 0, 3, kNaN})}), DType::Bool,
              {4}, {1, 0, 1, 0});
  requireInts(run1("equal", {boolT({4}, {1, 0, 1, 0}), boolT({4}, {1, 1, 0, 0})}), DType::Bool,
              {4}, {1, 0, 0, 1});
  // [2, 2] == scalar
  requireInts(run1("equal", {i64({2, 2}, {1, 2, 2, 3}), i64({}, {2})}), DType::Bool, {2, 2},
              {0, 1, 1, 0});
}

TEST_CASE("less and greater", "[ops][less][greater]") {
  // [2, 3] against [3]
  Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6}), b = f32({3}, {2, 5, 3});
  requireInts(run1("less", {a, b}), DType::Bool, {2, 3}, {1, 1, 0, 0, 0, 0});
  requireInts(run1("greater", {a, b}), DType::Bool, {2, 3}, {0, 0, 0, 1, 0, 1});
  // NaN compares false.
  requireInts(run1("less", {f32({1}, {kNaN}), f32({1}, {1})}), DType::Bool, {1}, {0});
  // i64 values that double cannot tell apart (2^53 + 1 vs 2^53).
  int64_t big = int64_t(1) << 53;
  requireInts(run1("greater", {i64({1}, {big + 1}), i64({1}, {big})}), DType::Bool, {1}, {1});
  requireInts(run1("less", {makeInts(DType::U8, {2, 1}, {0, 200}), makeInts(DType::U8, {1, 2}, {100, 250})}),
              DType::Bool, {2, 2}, {1, 1, 0, 1});
}

//===----------------------------------------------------------------------===//
// Unary math
//===----------------------------------------------------------------------===//

TEST_CASE("unary float math: type inference",
          "[ops][sqrt][exp][log][erf][floor][ceil][round][reciprocal]") {
  for (std::string op : {"sqrt", "exp", "log", "erf", "floor", "ceil", "round", "reciprocal"}) {
    INFO(op);
    CHECK(*inferOp(op, {T(DType::F32, {2, 3})}) == T(DType::F32, {2, 3}));
    CHECK(*inferOp(op, {T(DType::BF16, {})}) == T(DType::BF16, {}));
    CHECK(inferError(op, {T(DType::I32, {2})}) ==
          op + ": argument 0 must be a float tensor, got i32[2] (inputs: i32[2])");
  }
}

TEST_CASE("sqrt", "[ops][sqrt]") {
  requireClose(run1("sqrt", {f32({4}, {4, 2.25, 0, -1})}), f32({4}, {2, 1.5, 0, kNaN}));
  requireClose(run1("sqrt", {make(DType::F64, {1}, {2})}), make(DType::F64, {1}, {1.4142135623730951}),
               1e-15);
}

TEST_CASE("exp", "[ops][exp]") {
  requireClose(run1("exp", {f32({3}, {0, 1, -1})}), f32({3}, {1, 2.718281828459045, 0.36787944117144233}));
}

TEST_CASE("log", "[ops][log]") {
  Tensor y = run1("log", {f32({4}, {1, 2.718281828459045, 0, -1})});
  CHECK(y.getDouble(0) == 0);
  CHECK(y.getDouble(1) == Approx(1));
  CHECK(y.getDouble(2) == -kInf);
  CHECK(std::isnan(y.getDouble(3)));
}

TEST_CASE("erf", "[ops][erf]") {
  requireClose(run1("erf", {f32({4}, {0, 1, -1, 0.5})}),
               f32({4}, {0, 0.8427007929497149, -0.8427007929497149, 0.5204998778130465}));
}

TEST_CASE("floor and ceil", "[ops][floor][ceil]") {
  requireClose(run1("floor", {f32({4}, {1.5, -1.5, 2, -0.2})}), f32({4}, {1, -2, 2, -1}));
  requireClose(run1("ceil", {f32({4}, {1.5, -1.5, 2, -0.2})}), f32({4}, {2, -1, 2, 0}));
}

TEST_CASE("round: half to even", "[ops][round]") {
  Tensor y = run1("round", {f32({9}, {0.5, 1.5, 2.5, -0.5, -1.5, 2.4, 2.6, -2.6, -2.5})});
  requireClose(y, f32({9}, {0, 2, 2, 0, -2, 2, 3, -3, -2}));
  CHECK(!std::signbit(y.getDouble(0)));
  CHECK(std::signbit(y.getDouble(3))); // -0.5 -> -0
  requireClose(run1("round", {make(DType::F16, {2}, {3.5, -4.5})}), make(DType::F16, {2}, {4, -4}));
}

TEST_CASE("reciprocal", "[ops][reciprocal]") {
  requireClose(run1("reciprocal", {f32({3}, {2, -4, 0.5})}), f32({3}, {0.5, -0.25, 2}));
  CHECK(run1("reciprocal", {f32({1}, {0})}).getDouble(0) == kInf);
}

TEST_CASE("neg", "[ops][neg]") {
  CHECK(*inferOp("neg", {T(DType::I8, {2})}) == T(DType::I8, {2}));
  CHECK(*inferOp("neg", {T(DType::F64, {2})}) == T(DType::F64, {2}));
  CHECK(inferError("neg", {T(DType::U8, {2})}) ==
        "neg: argument 0 must be a float or signed integer tensor, got u8[2] (inputs: u8[2])");
  CHECK(inferError("neg", {T(DType::Bool, {2})}) ==
        "neg: argument 0 must be a float or signed integer tensor, got bool[2] (inputs: bool[2])");
  requireClose(run1("neg", {f32({3}, {1, -2.5, 0})}), f32({3}, {-1, 2.5, 0}));
  // i8: -(-128) wraps to -128, as numpy.
  requireInts(run1("neg", {makeInts(DType::I8, {3}, {-128, 5, 0})}), DType::I8, {3}, {-128, -5, 0});
  requireInts(run1("neg", {i64({2}, {3, -4})}), DType::I64, {2}, {-3, 4});
}

TEST_CASE("abs", "[ops][abs]") {
  CHECK(*inferOp("abs", {T(DType::U8, {2})}) == T(DType::U8, {2}));
  CHECK(inferError("abs", {T(DType::Bool, {2})}) ==
        "abs: argument 0 must be a numeric tensor, got bool[2] (inputs: bool[2])");
  requireClose(run1("abs", {f32({3}, {-1.5, 2, -0.0})}), f32({3}, {1.5, 2, 0}));
  requireInts(run1("abs", {makeInts(DType::I32, {3}, {-3, 4, 0})}), DType::I32, {3}, {3, 4, 0});
  // u8: identity.
  requireInts(run1("abs", {makeInts(DType::U8, {2}, {200, 0})}), DType::U8, {2}, {200, 0});
}

//===----------------------------------------------------------------------===//
// Activations
//===----------------------------------------------------------------------===//

TEST_CASE("float activations: type inference",
          "[ops][leaky_relu][sigmoid][tanh][hard_sigmoid][hard_swish][silu][mish][gelu]") {
  for (std::string op :
       {"leaky_relu", "sigmoid", "tanh", "hard_sigmoid", "hard_swish", "silu", "mish", "gelu"}) {
    INFO(op);
    CHECK(*inferOp(op, {T(DType::F16, {1, 4})}) == T(DType::F16, {1, 4}));
    CHECK(inferError(op, {T(DType::I64, {3})}) ==
          op + ": argument 0 must be a float tensor, got i64[3] (inputs: i64[3])");
  }
}

TEST_CASE("relu", "[ops][relu]") {
  CHECK(*inferOp("relu", {T(DType::I32, {2, 2})}) == T(DType::I32, {2, 2}));
  CHECK(inferError("relu", {T(DType::Bool, {2})}) ==
        "relu: argument 0 must be a numeric tensor, got bool[2] (inputs: bool[2])");
  requireClose(run1("relu", {f32({4}, {-1, 0, 2.5, kNaN})}), f32({4}, {0, 0, 2.5, kNaN}));
  requireInts(run1("relu", {makeInts(DType::I32, {2}, {-3, 4})}), DType::I32, {2}, {0, 4});
}

TEST_CASE("leaky_relu", "[ops][leaky_relu]") {
  // Default alpha 0.01.
  requireClose(run1("leaky_relu", {f32({3}, {-2, 3, 0})}), f32({3}, {-0.02, 3, 0}));
  requireClose(run1("leaky_relu", {f32({3}, {-2, 3, 0})}, {{"alpha", 0.5}}), f32({3}, {-1, 3, 0}));
}

TEST_CASE("sigmoid", "[ops][sigmoid]") {
  requireClose(run1("sigmoid", {f32({5}, {0, 2, -2, 1000, -1000})}),
               f32({5}, {0.5, 0.8807970779778823, 0.11920292202211755, 1, 0}));
}

TEST_CASE("tanh", "[ops][tanh]") {
  requireClose(run1("tanh", {f32({3}, {0, 1, -1})}),
               f32({3}, {0, 0.7615941559557649, -0.7615941559557649}));
}

TEST_CASE("hard_sigmoid", "[ops][hard_sigmoid]") {
  // Defaults alpha 0.2, beta 0.5: 0.2 x + 0.5 = -0.1, 0.5, 0.7, 1.1 -> clamped.
  requireClose(run1("hard_sigmoid", {f32({4}, {-3, 0, 1, 3})}), f32({4}, {0, 0.5, 0.7, 1}));
  // alpha 0.5, beta 0.25: -0.25, 0.25, 0.75, 1.25 -> clamped.
  requireClose(run1("hard_sigmoid", {f32({4}, {-1, 0, 1, 2})}, {{"alpha", 0.5}, {"beta", 0.25}}),
               f32({4}, {0, 0.25, 0.75, 1}));
}

TEST_CASE("hard_swish", "[ops][hard_swish]") {
  // x / 6 + 0.5 = -1/6, 0, 0.5, 0.75, 1, 7/6 -> clamped, times x.
  requireClose(run1("hard_swish", {f32({6}, {-4, -3, 0, 1.5, 3, 4})}),
               f32({6}, {0, 0, 0, 1.125, 3, 4}));
}

TEST_CASE("silu", "[ops][silu]") {
  // x * sigmoid(x): sigmoid(1) = 0.7310585786, sigmoid(-1) = 0.2689414214,
  // sigmoid(4) = 0.9820137900; large negative x gives -0, not NaN.
  requireClose(run1("silu", {f32({5}, {0, 1, -1, 4, -1000})}),
               f32({5}, {0, 0.7310585786, -0.2689414214, 3.9280551601, 0}));
}

TEST_CASE("mish", "[ops][mish]") {
  // x * tanh(log(1 + e^x)): tanh(log(1 + e)) = 0.8650983883, tanh(log(1 + 1/e))
  // = 0.3034014613, mish(20) = 20 (tanh saturates), large x stays x (e^x overflows
  // to inf, tanh(inf) = 1), large negative x gives -0.
  requireClose(run1("mish", {f32({6}, {0, 1, -1, 20, 1000, -1000})}),
               f32({6}, {0, 0.8650983883, -0.3034014613, 20, 1000, 0}));
}

TEST_CASE("gelu", "[ops][gelu]") {
  // approximate = "none": x * Phi(x), Phi the standard normal CDF
  // (Phi(1) = 0.8413447461, Phi(-1) = 0.1586552539, Phi(2) = 0.9772498681).
  Tensor x = f32({4}, {0, 1, -1, 2});
  Tensor exact = f32({4}, {0, 0.8413447461, -0.1586552539, 1.9544997361});
  requireClose(run1("gelu", {x}), exact);
  requireClose(run1("gelu", {x}, {{"approximate", std::string("none")}}), exact);
  // approximate = "tanh": at 1, sqrt(2/pi) * 1.044715 = 0.8335619683 and
  // tanh of it = 0.6823839812, so 0.5 * (1 + 0.6823839812) = 0.8411919906;
  // gelu(-x) = gelu(x) - x gives -0.1588080094.
  requireClose(run1("gelu", {f32({3}, {0, 1, -1})}, {{"approximate", std::string("tanh")}}),
               f32({3}, {0, 0.8411919906, -0.1588080094}));
  CHECK(inferError("gelu", {T(DType::F32, {2})}, {{"approximate", std::string("fast")}}) ==
        "gelu: attribute 'approximate' must be \"none\" or \"tanh\", got \"fast\" (inputs: "
        "f32[2])");
}

TEST_CASE("clip", "[ops][clip]") {
  CHECK(*inferOp("clip", {T(DType::I32, {2})}, {{"min", 0.0}}) == T(DType::I32, {2}));
  CHECK(*inferOp("clip", {T(DType::F32, {2, 2})}) == T(DType::F32, {2, 2}));
  CHECK(inferError("clip", {T(DType::Bool, {1})}) ==
        "clip: argument 0 must be a numeric tensor, got bool[1] (inputs: bool[1])");
  Tensor x = f32({5}, {-5, 0, 1.5, 5, kNaN});
  // Defaults: no bounds.
  requireClose(run1("clip", {x}), x);
  requireClose(run1("clip", {x}, {{"min", -1.0}, {"max", 2.0}}), f32({5}, {-1, 0, 1.5, 2, kNaN}));
  requireClose(run1("clip", {x}, {{"min", 0.0}}), f32({5}, {0, 0, 1.5, 5, kNaN}));
  requireClose(run1("clip", {x}, {{"max", 1.0}}), f32({5}, {-5, 0, 1, 1, kNaN}));
  // min > max: everything becomes max.
  requireClose(run1("clip", {f32({3}, {-5, 2, 9})}, {{"min", 3.0}, {"max", 1.0}}),
               f32({3}, {1, 1, 1}));
  // Integer dtypes: bounds converted (min rounds up, max down).
  requireInts(run1("clip", {makeInts(DType::I32, {5}, {-5, -2, 0, 3, 10})},
                   {{"min", -2.5}, {"max", 3.7}}),
              DType::I32, {5}, {-2, -2, 0, 3, 3});
  requireInts(run1("clip", {makeInts(DType::U8, {3}, {0, 7, 255})}, {{"min", -10.0}, {"max", 300.0}}),
              DType::U8, {3}, {0, 7, 255});
  requireInts(run1("clip", {i64({3}, {-9, 4, 9})}, {{"min", int64_t(-1)}, {"max", int64_t(5)}}),
              DType::I64, {3}, {-1, 4, 5});
}

//===----------------------------------------------------------------------===//
// where, cast
//===----------------------------------------------------------------------===//

TEST_CASE("where: type inference", "[ops][where]") {
  CHECK(*inferOp("where", {T(DType::Bool, {2, 1}), T(DType::F32, {1, 3}), T(DType::F32, {})}) ==
        T(DType::F32, {2, 3}));
  CHECK(*inferOp("where", {T(DType::Bool, {}), T(DType::I64, {4}), T(DType::I64, {2, 1})}) ==
        T(DType::I64, {2, 4}));
  CHECK(inferError("where", {T(DType::F32, {2}), T(DType::F32, {2}), T(DType::F32, {2})}) ==
        "where: argument 0 ('condition') must be a bool tensor, got f32[2] (inputs: f32[2], "
        "f32[2], f32[2])");
  CHECK(inferError("where", {T(DType::Bool, {2}), T(DType::F32, {2}), T(DType::I64, {2})}) ==
        "where: argument 2 has dtype i64, expected f32 (as argument 1) (inputs: bool[2], f32[2], "
        "i64[2])");
  CHECK(inferError("where", {T(DType::Bool, {2}), T(DType::F32, {3}), T(DType::F32, {1})}) ==
        "where: cannot broadcast [2] with [3] (inputs: bool[2], f32[3], f32[1])");
  CHECK(inferError("where", {T(DType::Bool, {2}), T(DType::F32, {1}), T(DType::F32, {3})}) ==
        "where: cannot broadcast [2] with [3] (inputs: bool[2], f32[1], f32[3])");
}

TEST_CASE("where: broadcasting", "[ops][where]") {
  // condition [2, 1], x [1, 3], y scalar.
  requireClose(run1("where", {boolT({2, 1}, {1, 0}), f32({1, 3}, {1, 2, 3}), f32({}, {0})}),
               f32({2, 3}, {1, 2, 3, 0, 0, 0}));
  // condition [3], x [2, 3], y [2, 1].
  requireInts(run1("where", {boolT({3}, {1, 0, 1}), i64({2, 3}, {1, 2, 3, 4, 5, 6}),
                             i64({2, 1}, {-1, -2})}),
              DType::I64, {2, 3}, {1, -1, 3, 4, -2, 6});
  requireInts(run1("where", {boolT({2}, {0, 1}), boolT({2}, {1, 1}), boolT({2}, {0, 0})}),
              DType::Bool, {2}, {0, 1});
}

TEST_CASE("cast: type inference", "[ops][cast]") {
  CHECK(*inferOp("cast", {T(DType::F32, {2, 3})}, {{"dtype", DType::I64}}) == T(DType::I64, {2, 3}));
  CHECK(*inferOp("cast", {T(DType::Bool, {})}, {{"dtype", DType::F16}}) == T(DType::F16, {}));
  CHECK(inferError("cast", {T(DType::F32, {2})}) ==
        "cast: missing required attribute 'dtype' (dtype)");
  CHECK(inferError("cast", {T(DType::F32, {2})}, {{"dtype", int64_t(3)}}) ==
        "cast: attribute 'dtype' must be dtype, got int 3");
}

TEST_CASE("cast: float to integer and bool", "[ops][cast]") {
  // Truncation toward zero.
  requireInts(run1("cast", {f32({4}, {-1.7, 1.7, 2.5, -0.5})}, {{"dtype", DType::I32}}),
              DType::I32, {4}, {-1, 1, 2, 0});
  requireInts(run1("cast", {f32({4}, {0, -0.0, 2.5, kNaN})}, {{"dtype", DType::Bool}}), DType::Bool,
              {4}, {0, 0, 1, 1});
  requireInts(run1("cast", {i64({3}, {0, -3, 7})}, {{"dtype", DType::Bool}}), DType::Bool, {3},
              {0, 1, 1});
  // bool -> number is 0 / 1.
  requireClose(run1("cast", {boolT({2}, {1, 0})}, {{"dtype", DType::F32}}), f32({2}, {1, 0}));
  requireInts(run1("cast", {boolT({2}, {1, 0})}, {{"dtype", DType::I8}}), DType::I8, {2}, {1, 0});
  // Integer -> integer wraps, as numpy astype: 256 -> 0, -1 -> 255, 300 -> 44.
  requireInts(run1("cast", {i64({3}, {256, -1, 300})}, {{"dtype", DType::U8}}), DType::U8, {3},
              {0, 255, 44});
  requireClose(run1("cast", {makeInts(DType::I32, {2}, {-3, 7})}, {{"dtype", DType::F64}}),
               make(DType::F64, {2}, {-3, 7}));
}

TEST_CASE("cast: f16 and bf16 rounding", "[ops][cast]") {
  // f32 -> f16 -> f32. 0.1 -> 1638 / 2^14 = 0.0999755859375; 1/3 -> 1365 / 2^12;
  // 1 + 2^-11 is a tie between 1 and 1 + 2^-10 and goes to the even 1;
  // 1 + 3 * 2^-11 is a tie between 1 + 2^-10 and 1 + 2^-9 and goes to 1 + 2^-9.
  Tensor x = f32({5}, {1, 0.1, 1.0 / 3, 1 + std::ldexp(1.0, -11), 1 + 3 * std::ldexp(1.0, -11)});
  Tensor h = run1("cast", {x}, {{"dtype", DType::F16}});
  REQUIRE(h.dtype() == DType::F16);
  Tensor back = run1("cast", {h}, {{"dtype", DType::F32}});
  requireClose(back, f32({5}, {1, 0.0999755859375, 0.333251953125, 1, 1.001953125}), 0, 0);
  // f32 -> bf16: 1 + 2^-8 is a tie between 1 and 1 + 2^-7 and goes to 1;
  // 3.0 is exact.
  Tensor b = run1("cast", {f32({2}, {1 + std::ldexp(1.0, -8), 3})}, {{"dtype", DType::BF16}});
  requireClose(run1("cast", {b}, {{"dtype", DType::F32}}), f32({2}, {1, 3}), 0, 0);
  // f16 -> i32 truncates.
  requireInts(run1("cast", {make(DType::F16, {2}, {-2.5, 3.75})}, {{"dtype", DType::I32}}),
              DType::I32, {2}, {-2, 3});
}

//===----------------------------------------------------------------------===//
// mod, less_equal, greater_equal, sign, trigonometric and hyperbolic
// functions, isnan, isinf, logical ops (added for the ONNX frontend)
//===----------------------------------------------------------------------===//

TEST_CASE("mod: type inference", "[ops][mod]") {
  CHECK(*inferOp("mod", {T(DType::I32, {2, 1}), T(DType::I32, {3})}) == T(DType::I32, {2, 3}));
  CHECK(*inferOp("mod", {T(DType::F16, {2}), T(DType::F16, {})}, {{"fmod", int64_t(1)}}) ==
        T(DType::F16, {2}));
  CHECK(inferError("mod", {T(DType::I32, {2}), T(DType::I32, {2})}, {{"fmod", int64_t(2)}}) ==
        "mod: attribute 'fmod' must be 0 or 1, got 2 (inputs: i32[2], i32[2])");
  CHECK(inferError("mod", {T(DType::I32, {2}), T(DType::I64, {2})}) ==
        "mod: argument 1 has dtype i64, expected i32 (as argument 0) (inputs: i32[2], i64[2])");
  CHECK(inferError("mod", {T(DType::Bool, {2}), T(DType::Bool, {2})}) ==
        "mod: argument 0 must be a numeric tensor, got bool[2] (inputs: bool[2], bool[2])");
  CHECK(inferError("mod", {T(DType::I8, {2}), T(DType::I8, {3})}) ==
        "mod: cannot broadcast [2] with [3] (inputs: i8[2], i8[3])");
}

TEST_CASE("mod: integer and float remainders", "[ops][mod]") {
  Tensor a = i64({5}, {-4, 7, 5, -5, 0}), b = i64({5}, {3, -3, 3, -3, 2});
  // fmod = 0 (Python %): the sign of the divisor.
  requireInts(run1("mod", {a, b}), DType::I64, {5}, {2, -2, 2, -2, 0});
  // fmod = 1 (C fmod): the sign of the dividend.
  requireInts(run1("mod", {a, b}, {{"fmod", int64_t(1)}}), DType::I64, {5}, {-1, 1, 2, -2, 0});
  // [2, 2] with a scalar: 5, -5, 6, -6 mod 4.
  requireInts(run1("mod", {makeInts(DType::I32, {2, 2}, {5, -5, 6, -6}), makeInts(DType::I32, {}, {4})}),
              DType::I32, {2, 2}, {1, 3, 2, 2});
  // u8: 200 = 28 * 7 + 4.
  requireInts(run1("mod", {makeInts(DType::U8, {1}, {200}), makeInts(DType::U8, {1}, {7})}),
              DType::U8, {1}, {4});
  Tensor fa = f32({3}, {-4.5, 7.5, 5}), fb = f32({3}, {2, -2, 0});
  requireClose(run1("mod", {fa, fb}, {{"fmod", int64_t(1)}}), f32({3}, {-0.5, 1.5, kNaN}));
  requireClose(run1("mod", {fa, fb}), f32({3}, {1.5, -0.5, kNaN}));
  CHECK(kernelError("mod", {i64({2}, {1, 7}), i64({2}, {1, 0})}) ==
        "mod: integer modulo of 7 by zero (output element 1)");
}

TEST_CASE("less_equal and greater_equal", "[ops][less_equal][greater_equal]") {
  for (std::string op : {"less_equal", "greater_equal"}) {
    INFO(op);
    CHECK(*inferOp(op, {T(DType::F32, {2, 3}), T(DType::F32, {3})}) == T(DType::Bool, {2, 3}));
    CHECK(inferError(op, {T(DType::Bool, {2}), T(DType::Bool, {2})}) ==
          op + ": argument 0 must be a numeric tensor, got bool[2] (inputs: bool[2], bool[2])");
    CHECK(inferError(op, {T(DType::F32, {2}), T(DType::I32, {2})}) ==
          op + ": argument 1 has dtype i32, expected f32 (as argument 0) (inputs: f32[2], i32[2])");
  }
  // NaN compares false.
  Tensor a = f32({4}, {1, 2, 3, kNaN}), b = f32({4}, {2, 2, 2, 1});
  requireInts(run1("less_equal", {a, b}), DType::Bool, {4}, {1, 1, 0, 0});
  requireInts(run1("greater_equal", {a, b}), DType::Bool, {4}, {0, 1, 1, 0});
  // [2, 1] against [2]
  requireInts(run1("less_equal", {makeInts(DType::I32, {2, 1}, {1, 5}), makeInts(DType::I32, {2}, {1, 4})}),
              DType::Bool, {2, 2}, {1, 1, 0, 0});
  requireInts(run1("greater_equal", {makeInts(DType::U8, {2}, {0, 255}), makeInts(DType::U8, {}, {255})}),
              DType::Bool, {2}, {0, 1});
}

TEST_CASE("sign", "[ops][sign]") {
  CHECK(*inferOp("sign", {T(DType::I8, {2})}) == T(DType::I8, {2}));
  CHECK(inferError("sign", {T(DType::Bool, {2})}) ==
        "sign: argument 0 must be a numeric tensor, got bool[2] (inputs: bool[2])");
  Tensor y = run1("sign", {f32({5}, {-2.5, 0, 3, -0.0, kNaN})});
  requireClose(y, f32({5}, {-1, 0, 1, 0, kNaN}));
  CHECK(!std::signbit(y.getDouble(3)));
  requireInts(run1("sign", {makeInts(DType::I32, {3}, {-7, 0, 9})}), DType::I32, {3}, {-1, 0, 1});
  requireInts(run1("sign", {makeInts(DType::U8, {2}, {0, 200})}), DType::U8, {2}, {0, 1});
}

TEST_CASE("trigonometric and hyperbolic: type inference",
          "[ops][sin][cos][tan][asin][acos][atan][sinh][cosh][asinh][acosh][atanh]") {
  for (std::string op :
       {"sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh"}) {
    INFO(op);
    CHECK(*inferOp(op, {T(DType::F16, {2, 3})}) == T(DType::F16, {2, 3}));
    CHECK(*inferOp(op, {T(DType::F64, {})}) == T(DType::F64, {}));
    CHECK(inferError(op, {T(DType::I64, {2})}) ==
          op + ": argument 0 must be a float tensor, got i64[2] (inputs: i64[2])");
  }
}

TEST_CASE("sin, cos, tan", "[ops][sin][cos][tan]") {
  const double pi = 3.14159265358979323846;
  requireClose(run1("sin", {make(DType::F64, {3}, {0, pi / 2, -pi / 6})}),
               make(DType::F64, {3}, {0, 1, -0.5}), 1e-12, 1e-12);
  requireClose(run1("cos", {make(DType::F64, {3}, {0, pi, pi / 3})}),
               make(DType::F64, {3}, {1, -1, 0.5}), 1e-12, 1e-12);
  requireClose(run1("tan", {make(DType::F64, {3}, {0, pi / 4, -pi / 4})}),
               make(DType::F64, {3}, {0, 1, -1}), 1e-12, 1e-12);
  requireClose(run1("sin", {f32({1}, {pi / 2})}), f32({1}, {1}));
}

TEST_CASE("asin, acos, atan", "[ops][asin][acos][atan]") {
  const double pi = 3.14159265358979323846;
  // Outside [-1, 1] asin and acos are NaN.
  requireClose(run1("asin", {f32({3}, {1, -0.5, 2})}), f32({3}, {pi / 2, -pi / 6, kNaN}));
  requireClose(run1("acos", {f32({4}, {1, -1, 0.5, -2})}), f32({4}, {0, pi, pi / 3, kNaN}));
  requireClose(run1("atan", {f32({3}, {0, 1, -1})}), f32({3}, {0, pi / 4, -pi / 4}));
}

TEST_CASE("sinh, cosh", "[ops][sinh][cosh]") {
  // sinh(1) = (e - 1/e) / 2, cosh(1) = (e + 1/e) / 2.
  requireClose(run1("sinh", {f32({3}, {0, 1, -1})}),
               f32({3}, {0, 1.1752011936438014, -1.1752011936438014}));
  requireClose(run1("cosh", {f32({3}, {0, 1, -1})}),
               f32({3}, {1, 1.5430806348152437, 1.5430806348152437}));
}

TEST_CASE("asinh, acosh, atanh", "[ops][asinh][acosh][atanh]") {
  // asinh(1) = ln(1 + sqrt 2), acosh(2) = ln(2 + sqrt 3), atanh(0.5) = ln(3) / 2.
  requireClose(run1("asinh", {f32({3}, {0, 1, -1})}),
               f32({3}, {0, 0.881373587019543, -0.881373587019543}));
  requireClose(run1("acosh", {f32({3}, {1, 2, 0.5})}), f32({3}, {0, 1.3169578969248166, kNaN}));
  requireClose(run1("atanh", {f32({3}, {0, 0.5, -0.5})}),
               f32({3}, {0, 0.5493061443340549, -0.5493061443340549}));
  CHECK(run1("atanh", {f32({1}, {1})}).getDouble(0) == kInf);
}

TEST_CASE("isnan", "[ops][isnan]") {
  CHECK(*inferOp("isnan", {T(DType::F16, {2, 3})}) == T(DType::Bool, {2, 3}));
  CHECK(inferError("isnan", {T(DType::I32, {2})}) ==
        "isnan: argument 0 must be a float tensor, got i32[2] (inputs: i32[2])");
  requireInts(run1("isnan", {f32({4}, {1, kNaN, kInf, -kInf})}), DType::Bool, {4}, {0, 1, 0, 0});
}

TEST_CASE("isinf", "[ops][isinf]") {
  CHECK(*inferOp("isinf", {T(DType::F64, {})}) == T(DType::Bool, {}));
  CHECK(inferError("isinf", {T(DType::U8, {2})}) ==
        "isinf: argument 0 must be a float tensor, got u8[2] (inputs: u8[2])");
  Tensor x = f32({4}, {1, kNaN, kInf, -kInf});
  requireInts(run1("isinf", {x}), DType::Bool, {4}, {0, 0, 1, 1});
  requireInts(run1("isinf", {x}, {{"detect_positive", false}}), DType::Bool, {4}, {0, 0, 0, 1});
  requireInts(run1("isinf", {x}, {{"detect_negative", false}}), DType::Bool, {4}, {0, 0, 1, 0});
}

TEST_CASE("logical ops: type inference",
          "[ops][logical_not][logical_and][logical_or][logical_xor]") {
  CHECK(*inferOp("logical_not", {T(DType::Bool, {2, 3})}) == T(DType::Bool, {2, 3}));
  CHECK(inferError("logical_not", {T(DType::I32, {2})}) ==
        "logical_not: argument 0 must be a bool tensor, got i32[2] (inputs: i32[2])");
  for (std::string op : {"logical_and", "logical_or", "logical_xor"}) {
    INFO(op);
    CHECK(*inferOp(op, {T(DType::Bool, {2, 1}), T(DType::Bool, {3})}) == T(DType::Bool, {2, 3}));
    CHECK(inferError(op, {T(DType::Bool, {2}), T(DType::F32, {2})}) ==
          op + ": argument 1 must be a bool tensor, got f32[2] (inputs: bool[2], f32[2])");
    CHECK(inferError(op, {T(DType::U8, {2}), T(DType::Bool, {2})}) ==
          op + ": argument 0 must be a bool tensor, got u8[2] (inputs: u8[2], bool[2])");
    CHECK(inferError(op, {T(DType::Bool, {2}), T(DType::Bool, {3})}) ==
          op + ": cannot broadcast [2] with [3] (inputs: bool[2], bool[3])");
  }
}

TEST_CASE("logical_not", "[ops][logical_not]") {
  requireInts(run1("logical_not", {boolT({3}, {1, 0, 1})}), DType::Bool, {3}, {0, 1, 0});
}

TEST_CASE("logical_and, logical_or, logical_xor", "[ops][logical_and][logical_or][logical_xor]") {
  // [[1, 0], [1, 1]] with [1, 0] broadcast over the rows.
  Tensor a = boolT({2, 2}, {1, 0, 1, 1}), b = boolT({2}, {1, 0});
  requireInts(run1("logical_and", {a, b}), DType::Bool, {2, 2}, {1, 0, 1, 0});
  requireInts(run1("logical_or", {a, b}), DType::Bool, {2, 2}, {1, 0, 1, 1});
  requireInts(run1("logical_xor", {a, b}), DType::Bool, {2, 2}, {0, 0, 0, 1});
}

//===----------------------------------------------------------------------===//
// i16, u16, u32, u64
//===----------------------------------------------------------------------===//

namespace {

constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();
constexpr uint64_t kTwo63 = uint64_t(1) << 63;

Tensor makeU64(Shape shape, std::vector<uint64_t> values) {
  Tensor t(DType::U64, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i)
    t.setUInt(int64_t(i), values[i]);
  return t;
}

std::vector<uint64_t> uints(const Tensor &t) {
  std::vector<uint64_t> out;
  for (int64_t i = 0; i < t.numel(); ++i)
    out.push_back(t.getUInt(i));
  return out;
}

} // namespace

TEST_CASE("new integer dtypes: type inference", "[ops][add][neg][abs][mod]") {
  for (DType t : {DType::I16, DType::U16, DType::U32, DType::U64}) {
    INFO(dtypeName(t));
    CHECK(*inferOp("add", {T(t, {2, 1}), T(t, {3})}) == T(t, {2, 3}));
    CHECK(*inferOp("mod", {T(t, {2}), T(t, {2})}) == T(t, {2}));
    CHECK(*inferOp("less", {T(t, {2}), T(t, {2})}) == T(DType::Bool, {2}));
    CHECK(*inferOp("abs", {T(t, {2})}) == T(t, {2}));
  }
  CHECK(*inferOp("neg", {T(DType::I16, {2})}) == T(DType::I16, {2}));
  CHECK(inferError("neg", {T(DType::U16, {2})}) ==
        "neg: argument 0 must be a float or signed integer tensor, got u16[2] (inputs: u16[2])");
}

TEST_CASE("i16, u16, u32 arithmetic wraps to the dtype", "[ops][add][subtract][neg][mod]") {
  // i16: 30000 + 30000 = 60000 wraps to 60000 - 65536 = -5536.
  requireInts(run1("add", {makeInts(DType::I16, {1}, {30000}), makeInts(DType::I16, {1}, {30000})}),
              DType::I16, {1}, {-5536});
  // i16: -(-32768) wraps to -32768.
  requireInts(run1("neg", {makeInts(DType::I16, {2}, {-32768, 5})}), DType::I16, {2},
              {-32768, -5});
  // u16: 1 - 2 wraps to 65535; u32: 1 - 2 wraps to 2^32 - 1.
  requireInts(run1("subtract", {makeInts(DType::U16, {1}, {1}), makeInts(DType::U16, {1}, {2})}),
              DType::U16, {1}, {65535});
  requireInts(run1("subtract", {makeInts(DType::U32, {1}, {1}), makeInts(DType::U32, {1}, {2})}),
              DType::U32, {1}, {4294967295});
  // i16 Python mod: -4 % 3 = 2, 7 % -3 = -2 (ONNX test_mod_mixed_sign_int16).
  requireInts(run1("mod", {makeInts(DType::I16, {2}, {-4, 7}), makeInts(DType::I16, {2}, {3, -3})}),
              DType::I16, {2}, {2, -2});
  // u32 maximum beyond int32: max(3e9, 5) = 3e9.
  requireInts(
      run1("maximum", {makeInts(DType::U32, {2}, {3000000000, 1}), makeInts(DType::U32, {2}, {5, 4})}),
      DType::U32, {2}, {3000000000, 4});
}

TEST_CASE("u64: values >= 2^63 order, divide and convert exactly",
          "[ops][maximum][minimum][less][greater][divide][mod][power][cast]") {
  Tensor a = makeU64({3}, {kU64Max, kTwo63, 7}), b = makeU64({3}, {1, kTwo63 - 1, 9});
  CHECK(uints(run1("maximum", {a, b})) == std::vector<uint64_t>{kU64Max, kTwo63, 9});
  CHECK(uints(run1("minimum", {a, b})) == std::vector<uint64_t>{1, kTwo63 - 1, 7});
  requireInts(run1("less", {a, b}), DType::Bool, {3}, {0, 0, 1});
  requireInts(run1("greater", {a, b}), DType::Bool, {3}, {1, 1, 0});
  requireInts(run1("greater_equal", {a, b}), DType::Bool, {3}, {1, 1, 0});
  // (2^64 - 1) / 2^32 = 2^32 - 1 remainder 2^32 - 1.
  Tensor d = makeU64({1}, {uint64_t(1) << 32});
  CHECK(uints(run1("divide", {makeU64({1}, {kU64Max}), d})) ==
        std::vector<uint64_t>{(uint64_t(1) << 32) - 1});
  CHECK(uints(run1("mod", {makeU64({1}, {kU64Max}), d})) ==
        std::vector<uint64_t>{(uint64_t(1) << 32) - 1});
  CHECK(kernelError("mod", {makeU64({1}, {5}), makeU64({1}, {0})}) ==
        "mod: integer modulo of 5 by zero (output element 0)");
  // 2^32 squared wraps to 0; 3^40 = 12157665459056928801 (> 2^63).
  CHECK(uints(run1("power", {makeU64({2}, {uint64_t(1) << 32, 3}), makeU64({2}, {2, 40})})) ==
        std::vector<uint64_t>{0, 12157665459056928801ull});
  // Wrapping arithmetic on the bit patterns: (2^64 - 1) + 2 = 1.
  CHECK(uints(run1("add", {makeU64({1}, {kU64Max}), makeU64({1}, {2})})) ==
        std::vector<uint64_t>{1});
  // abs, relu are the identity, sign is 1 for every non-zero value.
  Tensor x = makeU64({3}, {kU64Max, 0, kTwo63});
  CHECK(uints(run1("abs", {x})) == uints(x));
  CHECK(uints(run1("relu", {x})) == uints(x));
  CHECK(uints(run1("sign", {x})) == std::vector<uint64_t>{1, 0, 1});
  // clip to [2^63 (as f64, exact), inf].
  CHECK(uints(run1("clip", {x}, {{"min", 9223372036854775808.0}})) ==
        std::vector<uint64_t>{kU64Max, kTwo63, kTwo63});
  // cast u64 -> f32 / f64 / i64 / bool, and f64 -> u64.
  Tensor f = run1("cast", {x}, {{"dtype", DType::F64}});
  CHECK(f.toDoubles() == std::vector<double>{18446744073709551616.0, 0, 9223372036854775808.0});
  CHECK(run1("cast", {x}, {{"dtype", DType::F32}}).getDouble(2) == 9223372036854775808.0);
  requireInts(run1("cast", {x}, {{"dtype", DType::I64}}), DType::I64, {3},
              {-1, 0, std::numeric_limits<int64_t>::min()});
  requireInts(run1("cast", {x}, {{"dtype", DType::Bool}}), DType::Bool, {3}, {1, 0, 1});
  CHECK(uints(run1("cast", {make(DType::F64, {3}, {1e19, -5, 3.9})}, {{"dtype", DType::U64}})) ==
        std::vector<uint64_t>{10000000000000000000ull, 0, 3});
}

TEST_CASE("bit_shift: type inference", "[ops][bit_shift]") {
  Attrs left{{"direction", std::string("left")}};
  for (DType t : {DType::U8, DType::U16, DType::U32, DType::U64}) {
    INFO(dtypeName(t));
    CHECK(*inferOp("bit_shift", {T(t, {2, 1}), T(t, {3})}, left) == T(t, {2, 3}));
  }
  CHECK(inferError("bit_shift", {T(DType::I32, {2}), T(DType::I32, {2})}, left) ==
        "bit_shift: argument 0 must be an unsigned integer tensor, got i32[2] "
        "(inputs: i32[2], i32[2])");
  CHECK(inferError("bit_shift", {T(DType::U8, {2}), T(DType::U16, {2})}, left) ==
        "bit_shift: argument 1 has dtype u16, expected u8 (as argument 0) "
        "(inputs: u8[2], u16[2])");
  CHECK(inferError("bit_shift", {T(DType::U8, {2}), T(DType::U8, {2})},
                   {{"direction", std::string("up")}}) ==
        "bit_shift: attribute 'direction' must be \"left\" or \"right\", got \"up\" "
        "(inputs: u8[2], u8[2])");
}

TEST_CASE("bit_shift: left and right, bits shifted out are lost", "[ops][bit_shift]") {
  Attrs left{{"direction", std::string("left")}}, right{{"direction", std::string("right")}};
  // u8: 16 << 1 = 32, 4 << 2 = 16, 1 << 3 = 8, 200 << 1 = 400 - 256 = 144, 1 << 8 = 0.
  Tensor a = makeInts(DType::U8, {5}, {16, 4, 1, 200, 1}), n = makeInts(DType::U8, {5}, {1, 2, 3, 1, 8});
  requireInts(run1("bit_shift", {a, n}, left), DType::U8, {5}, {32, 16, 8, 144, 0});
  // 16 >> 1 = 8, 4 >> 2 = 1, 1 >> 3 = 0, 200 >> 1 = 100, 1 >> 8 = 0.
  requireInts(run1("bit_shift", {a, n}, right), DType::U8, {5}, {8, 1, 0, 100, 0});
  // u16, [2, 1] << [2] broadcasts to [2, 2]; 40000 << 1 = 80000 wraps.
  requireInts(run1("bit_shift", {makeInts(DType::U16, {2, 1}, {3, 40000}),
                                 makeInts(DType::U16, {2}, {1, 2})},
                   left),
              DType::U16, {2, 2}, {6, 12, 80000 - 65536, 160000 - 2 * 65536});
  // u32: 1 << 31 = 2^31; u64: 1 << 63 = 2^63, (2^64 - 1) >> 60 = 15, a shift by 64 gives 0.
  requireInts(run1("bit_shift", {makeInts(DType::U32, {1}, {1}), makeInts(DType::U32, {1}, {31})},
                   left),
              DType::U32, {1}, {2147483648});
  CHECK(uints(run1("bit_shift", {makeU64({3}, {1, kU64Max, 5}), makeU64({3}, {63, 60, 64})},
                   left)) == std::vector<uint64_t>{kTwo63, kU64Max << 60, 0});
  CHECK(uints(run1("bit_shift", {makeU64({3}, {1, kU64Max, 5}), makeU64({3}, {63, 60, 64})},
                   right)) == std::vector<uint64_t>{0, 15, 0});
}
