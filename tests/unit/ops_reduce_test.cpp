//===- tests/unit/ops_reduce_test.cpp - Reduction op family ---------------===//
//
// Type relations and reference kernels of reduce_sum, reduce_mean,
// reduce_max, reduce_min, reduce_prod, argmax and argmin. Expected values
// are computed by hand.
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

Attrs axes(std::vector<int64_t> a, bool keepdims = true) {
  return Attrs{{"axes", std::move(a)}, {"keepdims", keepdims}};
}

Tensor run1(const std::string &op, Tensor x, Attrs attrs = {}) {
  auto outs = runOp(op, {std::move(x)}, std::move(attrs));
  REQUIRE(outs.size() == 1);
  return outs[0];
}

void requireInts(const Tensor &t, DType dtype, Shape shape, std::vector<int64_t> expected) {
  REQUIRE(t.dtype() == dtype);
  REQUIRE(t.shape() == shape);
  REQUIRE(t.toInts() == expected);
}

// [[1, 2, 3], [4, 5, 6]]
Tensor x23() { return f32({2, 3}, {1, 2, 3, 4, 5, 6}); }

} // namespace

TEST_CASE("reductions: type inference", "[ops][reduce_sum][reduce_mean][reduce_max][reduce_min]") {
  for (std::string op : {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min"}) {
    INFO(op);
    Type t = T(DType::F32, {2, 3, 4});
    CHECK(*inferOp(op, {t}) == T(DType::F32, {1, 1, 1}));
    CHECK(*inferOp(op, {t}, axes({}, false)) == T(DType::F32, {}));
    CHECK(*inferOp(op, {t}, axes({1})) == T(DType::F32, {2, 1, 4}));
    CHECK(*inferOp(op, {t}, axes({1}, false)) == T(DType::F32, {2, 4}));
    CHECK(*inferOp(op, {t}, axes({-1, 0}, false)) == T(DType::F32, {3}));
    CHECK(*inferOp(op, {t}, axes({-1, 0}, true)) == T(DType::F32, {1, 3, 1}));
    CHECK(*inferOp(op, {T(DType::I8, {})}) == T(DType::I8, {}));
    CHECK(inferError(op, {t}, axes({3})) ==
          op + ": attribute 'axes' = 3 is out of range for rank 3 (expected -3..2) (inputs: "
               "f32[2, 3, 4])");
    CHECK(inferError(op, {t}, axes({0, -4})) ==
          op + ": attribute 'axes' = -4 is out of range for rank 3 (expected -3..2) (inputs: "
               "f32[2, 3, 4])");
    CHECK(inferError(op, {t}, axes({1, -2})) ==
          op + ": attribute 'axes' = [1, -2] names axis 1 more than once (inputs: f32[2, 3, 4])");
    CHECK(inferError(op, {t}, axes({2, 2})) ==
          op + ": attribute 'axes' = [2, 2] names axis 2 more than once (inputs: f32[2, 3, 4])");
  }
  for (std::string op : {"reduce_sum", "reduce_mean"}) {
    INFO(op);
    CHECK(inferError(op, {T(DType::Bool, {2})}) ==
          op + ": argument 0 must be a numeric tensor, got bool[2] (inputs: bool[2])");
  }
  CHECK(*inferOp("reduce_max", {T(DType::Bool, {2})}, axes({0}, false)) == T(DType::Bool, {}));
  CHECK(*inferOp("reduce_min", {T(DType::Bool, {2, 2})}, axes({1})) == T(DType::Bool, {2, 1}));
}

TEST_CASE("reduce_sum", "[ops][reduce_sum]") {
  requireClose(run1("reduce_sum", x23()), f32({1, 1}, {21}));
  requireClose(run1("reduce_sum", x23(), axes({}, false)), f32({}, {21}));
  requireClose(run1("reduce_sum", x23(), axes({1})), f32({2, 1}, {6, 15}));
  requireClose(run1("reduce_sum", x23(), axes({1}, false)), f32({2}, {6, 15}));
  requireClose(run1("reduce_sum", x23(), axes({-2})), f32({1, 3}, {5, 7, 9}));
  requireClose(run1("reduce_sum", x23(), axes({-2}, false)), f32({3}, {5, 7, 9}));
  requireClose(run1("reduce_sum", x23(), axes({0, -1}, false)), f32({}, {21}));
  // [2, 2, 2] = 1..8 over axes 0 and 2: 1+2+5+6 = 14, 3+4+7+8 = 22.
  requireClose(run1("reduce_sum", f32({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}), axes({0, 2})),
               f32({1, 2, 1}, {14, 22}));
  requireInts(run1("reduce_sum", i64({2, 2}, {1, -2, 3, 4}), axes({0}, false)), DType::I64, {2},
              {4, 2});
  // i8 sums wrap: 100 + 100 = -56.
  requireInts(run1("reduce_sum", Tensor::fromInts(DType::I8, {2}, std::vector<int64_t>{100, 100}),
                   axes({}, false)),
              DType::I8, {}, {-56});
  // Empty set: 0.
  requireClose(run1("reduce_sum", f32({0, 2}, {}), axes({0}, false)), f32({2}, {0, 0}));
}

TEST_CASE("reduce_mean", "[ops][reduce_mean]") {
  requireClose(run1("reduce_mean", x23(), axes({1}, false)), f32({2}, {2, 5}));
  requireClose(run1("reduce_mean", x23(), axes({1})), f32({2, 1}, {2, 5}));
  requireClose(run1("reduce_mean", x23(), axes({}, false)), f32({}, {3.5}));
  requireClose(run1("reduce_mean", x23()), f32({1, 1}, {3.5}));
  requireClose(run1("reduce_mean", x23(), axes({-2})), f32({1, 3}, {2.5, 3.5, 4.5}));
  // Integers: the mean truncated toward zero: -7/2 -> -3, 7/2 -> 3, 5/3 -> 1.
  requireInts(run1("reduce_mean", i64({2, 2}, {-7, 0, 2, 5}), axes({-1}, false)), DType::I64, {2},
              {-3, 3});
  requireInts(run1("reduce_mean", Tensor::fromInts(DType::I32, {3}, std::vector<int64_t>{1, 2, 2})),
              DType::I32, {1}, {1});
  // Empty float set: NaN.
  requireClose(run1("reduce_mean", f32({0, 2}, {}), axes({0}, false)), f32({2}, {kNaN, kNaN}));
}

TEST_CASE("reduce_mean: empty integer set is a kernel error", "[ops][reduce_mean]") {
  Tensor x = i64({0, 2}, {});
  auto call = makeCall("reduce_mean", {makeConstant(x)}, axes({0}, false));
  REQUIRE(call.ok());
  const auto *node = (*call)->as<CallNode>();
  std::vector<Tensor> inputs{x};
  auto out = node->op()->kernel(inputs, node->attrs(), node->type());
  REQUIRE(!out.ok());
  CHECK(out.error().str() == "reduce_mean: mean of an empty set of integers (input i64[0, 2])");
}

TEST_CASE("reduce_max", "[ops][reduce_max]") {
  requireClose(run1("reduce_max", x23(), axes({1}, false)), f32({2}, {3, 6}));
  requireClose(run1("reduce_max", x23(), axes({1})), f32({2, 1}, {3, 6}));
  requireClose(run1("reduce_max", x23(), axes({}, false)), f32({}, {6}));
  requireClose(run1("reduce_max", x23(), axes({-2})), f32({1, 3}, {4, 5, 6}));
  requireClose(run1("reduce_max", f32({3}, {1, kNaN, 3})), f32({1}, {kNaN}));
  requireInts(run1("reduce_max", Tensor::fromInts(DType::I32, {2, 2}, std::vector<int64_t>{-5, -1, -9, -3}),
                   axes({0}, false)),
              DType::I32, {2}, {-5, -1});
  requireInts(run1("reduce_max", Tensor::fromInts(DType::U8, {2}, std::vector<int64_t>{200, 7})),
              DType::U8, {1}, {200});
  requireInts(run1("reduce_max", Tensor::fromInts(DType::Bool, {2, 2}, std::vector<int64_t>{0, 1, 0, 0}),
                   axes({1}, false)),
              DType::Bool, {2}, {1, 0});
  // Empty set: -inf, or the dtype minimum.
  CHECK(run1("reduce_max", f32({0}, {}), axes({}, false)).getDouble(0) == -kInf);
  requireInts(run1("reduce_max", Tensor(DType::I8, {0}), axes({}, false)), DType::I8, {}, {-128});
}

TEST_CASE("reduce_min", "[ops][reduce_min]") {
  requireClose(run1("reduce_min", x23(), axes({1}, false)), f32({2}, {1, 4}));
  requireClose(run1("reduce_min", x23(), axes({0}, false)), f32({3}, {1, 2, 3}));
  requireClose(run1("reduce_min", x23(), axes({-1})), f32({2, 1}, {1, 4}));
  requireClose(run1("reduce_min", x23()), f32({1, 1}, {1}));
  requireClose(run1("reduce_min", x23(), axes({}, false)), f32({}, {1}));
  requireClose(run1("reduce_min", f32({2, 2}, {kNaN, 1, 2, 0}), axes({1}, false)),
               f32({2}, {kNaN, 0}));
  requireInts(run1("reduce_min", i64({2, 3}, {5, -1, 2, 0, 8, -9}), axes({-1}, false)), DType::I64,
              {2}, {-1, -9});
  requireInts(run1("reduce_min", Tensor::fromInts(DType::Bool, {2, 2}, std::vector<int64_t>{1, 1, 0, 1}),
                   axes({1}, false)),
              DType::Bool, {2}, {1, 0});
  // Empty set: +inf, or the dtype maximum.
  CHECK(run1("reduce_min", f32({0}, {}), axes({}, false)).getDouble(0) == kInf);
  requireInts(run1("reduce_min", Tensor(DType::U8, {0}), axes({}, false)), DType::U8, {}, {255});
}

//===----------------------------------------------------------------------===//
// reduce_prod, argmax, argmin (added for the ONNX frontend)
//===----------------------------------------------------------------------===//

TEST_CASE("reduce_prod", "[ops][reduce_prod]") {
  Type t = T(DType::F32, {2, 3});
  CHECK(*inferOp("reduce_prod", {t}, axes({1}, false)) == T(DType::F32, {2}));
  CHECK(inferError("reduce_prod", {T(DType::Bool, {2})}) ==
        "reduce_prod: argument 0 must be a numeric tensor, got bool[2] (inputs: bool[2])");
  CHECK(inferError("reduce_prod", {t}, axes({2})) ==
        "reduce_prod: attribute 'axes' = 2 is out of range for rank 2 (expected -2..1) (inputs: "
        "f32[2, 3])");
  // [[1, 2, 3], [4, 5, 6]]: rows 6 and 120, columns 4, 10, 18, all 720.
  requireClose(run1("reduce_prod", x23(), axes({1}, false)), f32({2}, {6, 120}));
  requireClose(run1("reduce_prod", x23(), axes({0})), f32({1, 3}, {4, 10, 18}));
  requireClose(run1("reduce_prod", x23()), f32({1, 1}, {720}));
  requireClose(run1("reduce_prod", x23(), axes({-1, 0}, false)), f32({}, {720}));
  requireInts(run1("reduce_prod", i64({2, 2}, {-3, 4, 5, -2}), axes({0}, false)), DType::I64, {2},
              {-15, -8});
  // i8 products wrap: 16 * 16 = 256 -> 0; 16 * 9 = 144 -> -112.
  requireInts(run1("reduce_prod", Tensor::fromInts(DType::I8, {2, 2}, std::vector<int64_t>{16, 16, 16, 9}),
                   axes({1}, false)),
              DType::I8, {2}, {0, -112});
  // Empty set: 1.
  requireClose(run1("reduce_prod", f32({0, 2}, {}), axes({0}, false)), f32({2}, {1, 1}));
}

namespace {
Attrs argAttrs(int64_t axis, bool keepdims = true, bool last = false) {
  return Attrs{{"axis", axis}, {"keepdims", keepdims}, {"select_last_index", last}};
}
} // namespace

TEST_CASE("argmax and argmin: type inference", "[ops][argmax][argmin]") {
  for (std::string op : {"argmax", "argmin"}) {
    INFO(op);
    Type t = T(DType::F32, {2, 3, 4});
    CHECK(*inferOp(op, {t}) == T(DType::I64, {1, 3, 4}));
    CHECK(*inferOp(op, {t}, argAttrs(1, false)) == T(DType::I64, {2, 4}));
    CHECK(*inferOp(op, {t}, argAttrs(-1)) == T(DType::I64, {2, 3, 1}));
    CHECK(*inferOp(op, {T(DType::U8, {5})}, argAttrs(0, false)) == T(DType::I64, {}));
    CHECK(inferError(op, {t}, argAttrs(3)) ==
          op + ": attribute 'axis' = 3 is out of range for rank 3 (expected -3..2) (inputs: "
               "f32[2, 3, 4])");
    CHECK(inferError(op, {T(DType::F32, {})}) ==
          op + ": attribute 'axis' = 0 is out of range for rank 0 (expected 0..-1) (inputs: "
               "f32[])");
    CHECK(inferError(op, {T(DType::Bool, {2})}) ==
          op + ": argument 0 must be a numeric tensor, got bool[2] (inputs: bool[2])");
    CHECK(inferError(op, {T(DType::F32, {2, 0})}, argAttrs(1)) ==
          op + ": axis 1 is empty: no index to select (inputs: f32[2, 0])");
  }
}

TEST_CASE("argmax", "[ops][argmax]") {
  // [[2, 1], [3, 10]]
  Tensor x = f32({2, 2}, {2, 1, 3, 10});
  requireInts(run1("argmax", x), DType::I64, {1, 2}, {1, 1});
  requireInts(run1("argmax", x, argAttrs(1, false)), DType::I64, {2}, {0, 1});
  requireInts(run1("argmax", x, argAttrs(-1)), DType::I64, {2, 1}, {0, 1});
  // Ties: first index, or the last with select_last_index.
  Tensor ties = f32({2, 3}, {5, 5, 1, 2, 7, 7});
  requireInts(run1("argmax", ties, argAttrs(1, false)), DType::I64, {2}, {0, 1});
  requireInts(run1("argmax", ties, argAttrs(1, false, true)), DType::I64, {2}, {1, 2});
  // NaN wins (numpy): first NaN, or the last one.
  Tensor nan = f32({4}, {1, kNaN, 9, kNaN});
  requireInts(run1("argmax", nan, argAttrs(0, false)), DType::I64, {}, {1});
  requireInts(run1("argmax", nan, argAttrs(0, false, true)), DType::I64, {}, {3});
  // [2, 3, 2] over the middle axis; i64 values double cannot tell apart.
  int64_t big = int64_t(1) << 53;
  requireInts(run1("argmax", i64({1, 3, 2}, {big, 0, big + 1, 4, big, 4}), argAttrs(1, false)),
              DType::I64, {1, 2}, {1, 1});
}

TEST_CASE("argmin", "[ops][argmin]") {
  Tensor x = f32({2, 2}, {2, 1, 3, 10});
  requireInts(run1("argmin", x), DType::I64, {1, 2}, {0, 0});
  requireInts(run1("argmin", x, argAttrs(1, false)), DType::I64, {2}, {1, 0});
  Tensor ties = f32({2, 3}, {1, 5, 1, 7, 2, 2});
  requireInts(run1("argmin", ties, argAttrs(-1, true)), DType::I64, {2, 1}, {0, 1});
  requireInts(run1("argmin", ties, argAttrs(-1, true, true)), DType::I64, {2, 1}, {2, 2});
  requireInts(run1("argmin", f32({3}, {1, kNaN, -5}), argAttrs(0, false)), DType::I64, {}, {1});
  requireInts(run1("argmin", Tensor::fromInts(DType::U8, {3}, std::vector<int64_t>{200, 3, 250}),
                   argAttrs(0, false)),
              DType::I64, {}, {1});
}

TEST_CASE("reductions on u64 order values >= 2^63 as unsigned",
          "[ops][reduce_max][reduce_min][reduce_mean][reduce_sum][argmax][argmin]") {
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max(), kTwo63 = uint64_t(1) << 63;
  Tensor x(DType::U64, {4});
  const uint64_t values[] = {5, kMax, kTwo63, 1};
  for (int64_t i = 0; i < 4; ++i)
    x.setUInt(i, values[i]);
  CHECK(run1("reduce_max", x, axes({})).getUInt(0) == kMax);
  CHECK(run1("reduce_min", x, axes({})).getUInt(0) == 1);
  // (5 + 2^64 - 1 + 2^63 + 1) / 4 = (2^64 + 2^63 + 5) / 4 = 3 * 2^61 + 1 (truncated).
  CHECK(run1("reduce_mean", x, axes({})).getUInt(0) == 3 * (uint64_t(1) << 61) + 1);
  // The sum wraps modulo 2^64: 2^63 + 5.
  CHECK(run1("reduce_sum", x, axes({})).getUInt(0) == kTwo63 + 5);
  CHECK(run1("argmax", x, {{"axis", int64_t(0)}}).getInt(0) == 1);
  CHECK(run1("argmin", x, {{"axis", int64_t(0)}}).getInt(0) == 3);
  // i16 and u16 keep their ranges: the max of an all-negative i16 row.
  requireInts(run1("reduce_max", Tensor::fromInts(DType::I16, {2}, std::vector<int64_t>{-300, -7}),
                   axes({})),
              DType::I16, {1}, {-7});
  requireInts(run1("reduce_min", Tensor::fromInts(DType::U16, {2}, std::vector<int64_t>{65535, 9}),
                   axes({})),
              DType::U16, {1}, {9});
}
