//===- tests/unit/ops_index_test.cpp - Index op tests ---------------------===//
//
// Type inference, type errors and hand-computed reference kernel results for
// gather_nd, scatter_nd and scatter_elements.
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include <numeric>

using namespace tessera::test;
using namespace tessera::ir;
using namespace std::string_literals;

namespace {

using Ints = std::vector<int64_t>;

Type tf32(Shape s) {
  return Type::tensor(DType::F32, std::move(s));
}
Type ti64(Shape s) {
  return Type::tensor(DType::I64, std::move(s));
}
Type ti32(Shape s) {
  return Type::tensor(DType::I32, std::move(s));
}

/// 0, 1, 2, ... in row-major order.
Tensor iota(Shape s, DType dt = DType::F32) {
  std::vector<double> v(size_t(numElements(s)));
  std::iota(v.begin(), v.end(), 0.0);
  return Tensor::fromDoubles(dt, std::move(s), v);
}

} // namespace

// --- gather_nd -----------------------------------------------------------------

TEST_CASE("gather_nd infers data[:b] + indices[b:-1] + data[b+k:]", "[ops][gather_nd]") {
  CHECK(inferred("gather_nd", {tf32({2, 2}), ti64({2, 2})}) == tf32({2}));
  CHECK(inferred("gather_nd", {tf32({2, 2}), ti64({2, 1})}) == tf32({2, 2}));
  CHECK(inferred("gather_nd", {tf32({2, 2, 2}), ti64({2, 1, 2})}) == tf32({2, 1, 2}));
  CHECK(inferred("gather_nd", {ti32({2, 2, 2}), ti64({2, 1})}, {{"batch_dims", int64_t(1)}}) ==
        ti32({2, 2}));
  CHECK(inferred("gather_nd", {tf32({3, 4, 5}), ti32({3})}) == tf32({}));
  CHECK(inferred("gather_nd", {tf32({3, 4, 5}), ti64({0, 2})}) == tf32({0, 5}));
}

TEST_CASE("gather_nd type errors", "[ops][gather_nd]") {
  CHECK(inferError("gather_nd", {tf32({2, 2}), tf32({2, 2})}) ==
        "gather_nd: argument 1 ('indices') must be i32 or i64, got f32[2, 2] "
        "(inputs: f32[2, 2], f32[2, 2])");
  CHECK(inferError("gather_nd", {tf32({}), ti64({1})}) ==
        "gather_nd: argument 0 ('data') must have rank >= 1, got f32[] "
        "(inputs: f32[], i64[1])");
  CHECK(inferError("gather_nd", {tf32({2, 2}), ti64({1, 3})}) ==
        "gather_nd: the last dim of indices (3) must be in 1..2 (data rank - batch_dims) "
        "(inputs: f32[2, 2], i64[1, 3])");
  CHECK(inferError("gather_nd", {tf32({2, 2}), ti64({2, 0})}) ==
        "gather_nd: the last dim of indices (0) must be in 1..2 (data rank - batch_dims) "
        "(inputs: f32[2, 2], i64[2, 0])");
  CHECK(inferError("gather_nd", {tf32({2, 2, 2}), ti64({3, 1})}, {{"batch_dims", int64_t(1)}}) ==
        "gather_nd: batch dim 0 has size 3 in indices but 2 in data "
        "(inputs: f32[2, 2, 2], i64[3, 1])");
  CHECK(inferError("gather_nd", {tf32({2, 2}), ti64({2, 1})}, {{"batch_dims", int64_t(2)}}) ==
        "gather_nd: attribute 'batch_dims' = 2 must be in 0..1 (less than the ranks of data "
        "and indices) (inputs: f32[2, 2], i64[2, 1])");
}

TEST_CASE("gather_nd kernel", "[ops][gather_nd]") {
  // data [[0, 1], [2, 3]]
  Tensor x = iota({2, 2});
  SECTION("full index tuples pick elements") {
    auto out = run1("gather_nd", {x, i64({2, 2}, {0, 0, 1, 1})});
    requireClose(out, f32({2}, {0, 3}));
  }
  SECTION("short tuples pick rows; negative indices count from the end") {
    auto out = run1("gather_nd", {x, i64({2, 1}, {1, -2})});
    requireClose(out, f32({2, 2}, {2, 3, 0, 1}));
  }
  SECTION("batch_dims 1: each batch indexes its own sub-tensor") {
    // data [[[0, 1], [2, 3]], [[4, 5], [6, 7]]], indices [[1], [0]]
    auto out = run1("gather_nd", {iota({2, 2, 2}, DType::I32), i64({2, 1}, {1, 0})},
                    {{"batch_dims", int64_t(1)}});
    CHECK(out.dtype() == DType::I32);
    CHECK(out.shape() == Shape{2, 2});
    CHECK(out.toInts() == Ints{2, 3, 4, 5});
  }
  SECTION("batch_dims 1 with full tuples") {
    // batch 0: data[0][1][0] = 2; batch 1: data[1][0][1] = 5
    auto out = run1("gather_nd", {iota({2, 2, 2}), i64({2, 2}, {1, 0, 0, 1})},
                    {{"batch_dims", int64_t(1)}});
    requireClose(out, f32({2}, {2, 5}));
  }
  SECTION("out-of-range index") {
    CHECK(kernelError("gather_nd", {x, i64({1, 2}, {0, 2})}) ==
          "gather_nd: index 2 is out of range for axis 1 of size 2 (expected -2..1)");
  }
}

// --- scatter_nd ----------------------------------------------------------------

TEST_CASE("scatter_nd infers the data type", "[ops][scatter_nd]") {
  CHECK(inferred("scatter_nd", {tf32({4, 4, 4}), ti64({2, 1}), tf32({2, 4, 4})}) ==
        tf32({4, 4, 4}));
  CHECK(inferred("scatter_nd", {ti64({8}), ti64({4, 1}), ti64({4})}, {{"reduction", "add"s}}) ==
        ti64({8}));
  CHECK(inferred("scatter_nd", {tf32({2, 3}), ti32({2}), tf32({})}) == tf32({2, 3}));
}

TEST_CASE("scatter_nd type errors", "[ops][scatter_nd]") {
  CHECK(inferError("scatter_nd", {tf32({4, 4}), ti64({2, 1}), tf32({2, 3})}) ==
        "scatter_nd: argument 2 ('updates') must have shape [2, 4] (indices.shape[:-1] + "
        "data.shape[1:]), got f32[2, 3] (inputs: f32[4, 4], i64[2, 1], f32[2, 3])");
  CHECK(inferError("scatter_nd", {tf32({4}), ti64({2, 1}), ti64({2})}) ==
        "scatter_nd: argument 2 ('updates') has dtype i64, expected f32 (as data) "
        "(inputs: f32[4], i64[2, 1], i64[2])");
  CHECK(inferError("scatter_nd", {tf32({4}), ti64({2, 2}), tf32({2})}) ==
        "scatter_nd: the last dim of indices (2) must be in 1..1 (the rank of data) "
        "(inputs: f32[4], i64[2, 2], f32[2])");
  CHECK(inferError("scatter_nd", {tf32({4}), ti64({2, 1}), tf32({2})}, {{"reduction", "sub"s}}) ==
        "scatter_nd: attribute 'reduction' = \"sub\" is not one of \"none\", \"add\", \"mul\", "
        "\"max\", \"min\" (inputs: f32[4], i64[2, 1], f32[2])");
  Type b4 = Type::tensor(DType::Bool, {4}), b2 = Type::tensor(DType::Bool, {2});
  CHECK(inferError("scatter_nd", {b4, ti64({2, 1}), b2}, {{"reduction", "add"s}}) ==
        "scatter_nd: reduction \"add\" needs a numeric tensor, got bool[4] "
        "(inputs: bool[4], i64[2, 1], bool[2])");
}

TEST_CASE("scatter_nd kernel", "[ops][scatter_nd]") {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  SECTION("element tuples replace elements") {
    auto out = run1("scatter_nd", {x, i64({2, 2}, {0, 1, 1, -1}), f32({2}, {10, 20})});
    requireClose(out, f32({2, 3}, {1, 10, 3, 4, 5, 20}));
    requireClose(x, f32({2, 3}, {1, 2, 3, 4, 5, 6})); // the input is untouched
  }
  SECTION("row tuples replace rows") {
    auto out = run1("scatter_nd", {x, i64({1, 1}, {1}), f32({1, 3}, {7, 8, 9})});
    requireClose(out, f32({2, 3}, {1, 2, 3, 7, 8, 9}));
  }
  SECTION("reductions combine, duplicates included") {
    Tensor idx = i64({3, 2}, {0, 0, 0, 0, 1, 2});
    Tensor upd = f32({3}, {10, 100, -2});
    requireClose(run1("scatter_nd", {x, idx, upd}), f32({2, 3}, {100, 2, 3, 4, 5, -2}));
    requireClose(run1("scatter_nd", {x, idx, upd}, {{"reduction", "add"s}}),
                 f32({2, 3}, {111, 2, 3, 4, 5, 4}));
    requireClose(run1("scatter_nd", {x, idx, upd}, {{"reduction", "mul"s}}),
                 f32({2, 3}, {1000, 2, 3, 4, 5, -12}));
    requireClose(run1("scatter_nd", {x, idx, upd}, {{"reduction", "max"s}}),
                 f32({2, 3}, {100, 2, 3, 4, 5, 6}));
    requireClose(run1("scatter_nd", {x, idx, upd}, {{"reduction", "min"s}}),
                 f32({2, 3}, {1, 2, 3, 4, 5, -2}));
  }
  SECTION("integer add wraps") {
    Tensor d = Tensor::fromInts(DType::I8, {2}, Ints{120, 0});
    Tensor u = Tensor::fromInts(DType::I8, {1}, Ints{10});
    auto out = run1("scatter_nd", {d, i64({1, 1}, {0}), u}, {{"reduction", "add"s}});
    CHECK(out.toInts() == Ints{-126, 0});
  }
  SECTION("out-of-range index") {
    CHECK(kernelError("scatter_nd", {x, i64({1, 1}, {2}), f32({1, 3}, {0, 0, 0})}) ==
          "scatter_nd: index 2 is out of range for axis 0 of size 2 (expected -2..1)");
  }
}

// --- scatter_elements ----------------------------------------------------------

TEST_CASE("scatter_elements infers the data type", "[ops][scatter_elements]") {
  CHECK(inferred("scatter_elements", {tf32({3, 3}), ti64({2, 3}), tf32({2, 3})}) == tf32({3, 3}));
  CHECK(inferred("scatter_elements", {tf32({1, 5}), ti32({1, 2}), tf32({1, 2})},
                 {{"axis", int64_t(-1)}, {"reduction", "mul"s}}) == tf32({1, 5}));
}

TEST_CASE("scatter_elements type errors", "[ops][scatter_elements]") {
  CHECK(inferError("scatter_elements", {tf32({3, 3}), ti64({2, 3}), tf32({3, 2})}) ==
        "scatter_elements: argument 2 ('updates') must have the shape of indices [2, 3], got "
        "f32[3, 2] (inputs: f32[3, 3], i64[2, 3], f32[3, 2])");
  CHECK(inferError("scatter_elements", {tf32({3, 3}), ti64({3}), tf32({3})}) ==
        "scatter_elements: argument 1 ('indices') must have the rank of data (2), got i64[3] "
        "(inputs: f32[3, 3], i64[3], f32[3])");
  CHECK(inferError("scatter_elements", {tf32({3, 3}), ti64({2, 4}), tf32({2, 4})}) ==
        "scatter_elements: indices dim 1 has size 4, more than data's 3 "
        "(inputs: f32[3, 3], i64[2, 4], f32[2, 4])");
  CHECK(inferError("scatter_elements", {tf32({3, 3}), ti64({1, 1}), tf32({1, 1})},
                   {{"axis", int64_t(2)}}) ==
        "scatter_elements: attribute 'axis' = 2 is out of range for rank 2 (expected -2..1) "
        "(inputs: f32[3, 3], i64[1, 1], f32[1, 1])");
  CHECK(inferError("scatter_elements", {tf32({3}), tf32({1}), tf32({1})}) ==
        "scatter_elements: argument 1 ('indices') must be i32 or i64, got f32[1] "
        "(inputs: f32[3], f32[1], f32[1])");
}

TEST_CASE("scatter_elements kernel", "[ops][scatter_elements]") {
  SECTION("axis 0: out[idx[i][j]][j] = upd[i][j]") {
    // ONNX example: data zeros [3, 3], indices [[1, 0, 2], [0, 2, 1]]
    Tensor x(DType::F32, {3, 3});
    auto out = run1("scatter_elements", {x, i64({2, 3}, {1, 0, 2, 0, 2, 1}),
                                         f32({2, 3}, {1.0, 1.1, 1.2, 2.0, 2.1, 2.2})});
    requireClose(out, f32({3, 3}, {2.0, 1.1, 0, 1.0, 0, 2.2, 0, 2.1, 1.2}));
  }
  SECTION("axis 1 with negative indices") {
    auto out = run1("scatter_elements",
                    {f32({1, 5}, {1, 2, 3, 4, 5}), i64({1, 2}, {1, -2}), f32({1, 2}, {1.1, 2.1})},
                    {{"axis", int64_t(1)}});
    requireClose(out, f32({1, 5}, {1, 1.1, 3, 2.1, 5}));
  }
  SECTION("duplicates: add sums, none keeps the last") {
    Tensor x = f32({1, 5}, {1, 2, 3, 4, 5});
    Tensor idx = i64({1, 2}, {1, 1}), upd = f32({1, 2}, {1.1, 2.1});
    requireClose(
        run1("scatter_elements", {x, idx, upd}, {{"axis", int64_t(1)}, {"reduction", "add"s}}),
        f32({1, 5}, {1, 5.2, 3, 4, 5}));
    requireClose(run1("scatter_elements", {x, idx, upd}, {{"axis", int64_t(1)}}),
                 f32({1, 5}, {1, 2.1, 3, 4, 5}));
    requireClose(
        run1("scatter_elements", {x, idx, upd}, {{"axis", int64_t(1)}, {"reduction", "max"s}}),
        f32({1, 5}, {1, 2.1, 3, 4, 5}));
  }
  SECTION("u64 max compares unsigned") {
    uint64_t big = (uint64_t(1) << 63) + 5;
    Tensor d(DType::U64, {2});
    d.setUInt(0, 1);
    d.setUInt(1, big);
    Tensor u(DType::U64, {2});
    u.setUInt(0, big);
    u.setUInt(1, 7);
    auto out = run1("scatter_elements", {d, i64({2}, {0, 1}), u}, {{"reduction", "max"s}});
    CHECK(out.getUInt(0) == big);
    CHECK(out.getUInt(1) == big);
  }
  SECTION("out-of-range index") {
    CHECK(kernelError("scatter_elements",
                      {f32({1, 3}, {1, 2, 3}), i64({1, 1}, {-4}), f32({1, 1}, {0})},
                      {{"axis", int64_t(1)}}) ==
          "scatter_elements: index -4 is out of range for axis 1 of size 3 (expected -3..2)");
  }
}
