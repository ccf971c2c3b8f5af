//===- tests/unit/ops_transform_test.cpp - Transform op tests -------------===//
//
// Type inference, type errors and hand-computed reference kernel results for
// reshape, flatten, transpose, concat, split, slice, squeeze, unsqueeze, pad,
// expand, gather, gather_elements, cumsum and topk.
//
//===----------------------------------------------------------------------===//
#include "ir/ops/sort_indices.h"
#include "test_util.h"

#include <limits>
#include <numeric>

using namespace tessera::test;
using namespace tessera::ir;
using namespace std::string_literals;

namespace {

using Ints = std::vector<int64_t>;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

Type tf32(Shape s) { return Type::tensor(DType::F32, std::move(s)); }
Type ti64(Shape s) { return Type::tensor(DType::I64, std::move(s)); }

/// 0, 1, 2, ... in row-major order.
Tensor iota(Shape s, DType dt = DType::F32) {
  std::vector<double> v(size_t(numElements(s)));
  std::iota(v.begin(), v.end(), 0.0);
  return Tensor::fromDoubles(dt, std::move(s), v);
}

} // namespace

// --- reshape -------------------------------------------------------------------

TEST_CASE("reshape infers 0 and -1", "[ops][reshape]") {
  CHECK(inferred("reshape", {tf32({2, 3, 4})}, {{"newshape", Ints{0, -1}}}) == tf32({2, 12}));
  CHECK(inferred("reshape", {tf32({2, 3, 4})}, {{"newshape", Ints{-1, 0}}}) == tf32({8, 3}));
  CHECK(inferred("reshape", {tf32({2, 3})}, {{"newshape", Ints{6}}}) == tf32({6}));
  CHECK(inferred("reshape", {tf32({1})}, {{"newshape", Ints{}}}) == tf32({}));
  CHECK(inferred("reshape", {ti64({2, 0})}, {{"newshape", Ints{0, -1}}}) == ti64({2, 0}));
  CHECK(inferred("reshape", {ti64({0, 3})}, {{"newshape", Ints{-1, 0}}}) == ti64({0, 3}));
}

TEST_CASE("reshape type errors", "[ops][reshape]") {
  CHECK(inferError("reshape", {tf32({2, 3})}, {{"newshape", Ints{4, 2}}}) ==
        "reshape: cannot reshape [2, 3] (6 elements) to newshape [4, 2] (8 elements) "
        "(inputs: f32[2, 3])");
  CHECK(inferError("reshape", {tf32({2, 3})}, {{"newshape", Ints{4, -1}}}) ==
        "reshape: cannot reshape [2, 3] (6 elements) to newshape [4, -1] (inputs: f32[2, 3])");
  CHECK(inferError("reshape", {tf32({2, 3})}, {{"newshape", Ints{-1, -1}}}) ==
        "reshape: attribute 'newshape' = [-1, -1] has more than one -1 (inputs: f32[2, 3])");
  CHECK(inferError("reshape", {tf32({2, 3})}, {{"newshape", Ints{-2, 3}}}) ==
        "reshape: attribute 'newshape' = [-2, 3] has invalid value -2 (inputs: f32[2, 3])");
  CHECK(inferError("reshape", {tf32({6})}, {{"newshape", Ints{1, 0}}}) ==
        "reshape: attribute 'newshape' = [1, 0] has 0 at position 1, but the input has rank 1 "
        "(inputs: f32[6])");
  CHECK_THAT(inferError("reshape", {tf32({2, 3})}),
             Catch::Contains("missing required attribute 'newshape'"));
}

TEST_CASE("reshape kernel keeps row-major order", "[ops][reshape]") {
  auto out = run1("reshape", {iota({2, 3, 2})}, {{"newshape", Ints{0, -1}}});
  requireClose(out, f32({2, 6}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  auto out2 = run1("reshape", {i64({2, 3}, {7, -8, 9, 10, -11, 12})}, {{"newshape", Ints{3, -1}}});
  CHECK(out2.shape() == Shape{3, 2});
  CHECK(out2.toInts() == Ints{7, -8, 9, 10, -11, 12});
}

// --- flatten -------------------------------------------------------------------

TEST_CASE("flatten infers the 2-D shape", "[ops][flatten]") {
  CHECK(inferred("flatten", {tf32({2, 3, 4})}) == tf32({2, 12}));
  CHECK(inferred("flatten", {tf32({2, 3, 4})}, {{"axis", int64_t(0)}}) == tf32({1, 24}));
  CHECK(inferred("flatten", {tf32({2, 3, 4})}, {{"axis", int64_t(2)}}) == tf32({6, 4}));
  CHECK(inferred("flatten", {tf32({2, 3, 4})}, {{"axis", int64_t(3)}}) == tf32({24, 1}));
  CHECK(inferred("flatten", {tf32({2, 3, 4})}, {{"axis", int64_t(-1)}}) == tf32({6, 4}));
  CHECK(inferred("flatten", {tf32({2, 3, 4})}, {{"axis", int64_t(-3)}}) == tf32({1, 24}));
  CHECK(inferred("flatten", {tf32({})}, {{"axis", int64_t(0)}}) == tf32({1, 1}));
}

TEST_CASE("flatten type errors", "[ops][flatten]") {
  CHECK(inferError("flatten", {tf32({2, 3, 4})}, {{"axis", int64_t(4)}}) ==
        "flatten: attribute 'axis' = 4 is out of range for rank 3 (expected -3..3) "
        "(inputs: f32[2, 3, 4])");
  CHECK(inferError("flatten", {tf32({2, 3, 4})}, {{"axis", int64_t(-4)}}) ==
        "flatten: attribute 'axis' = -4 is out of range for rank 3 (expected -3..3) "
        "(inputs: f32[2, 3, 4])");
}

TEST_CASE("flatten kernel at axis 0 and 2", "[ops][flatten]") {
  std::vector<double> v{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  requireClose(run1("flatten", {iota({2, 3, 2})}, {{"axis", int64_t(0)}}), f32({1, 12}, v));
  requireClose(run1("flatten", {iota({2, 3, 2})}, {{"axis", int64_t(2)}}), f32({6, 2}, v));
}

// --- transpose -----------------------------------------------------------------

TEST_CASE("transpose infers permuted shapes", "[ops][transpose]") {
  CHECK(inferred("transpose", {tf32({2, 3, 4})}) == tf32({4, 3, 2}));
  CHECK(inferred("transpose", {tf32({2, 3, 4})}, {{"perm", Ints{1, 0, 2}}}) == tf32({3, 2, 4}));
  CHECK(inferred("transpose", {tf32({2, 3, 4})}, {{"perm", Ints{2, 0, 1}}}) == tf32({4, 2, 3}));
  CHECK(inferred("transpose", {tf32({})}) == tf32({}));
}

TEST_CASE("transpose type errors", "[ops][transpose]") {
  CHECK(inferError("transpose", {tf32({2, 3, 4})}, {{"perm", Ints{0, 0, 1}}}) ==
        "transpose: attribute 'perm' = [0, 0, 1] is not a permutation of 0..2 "
        "(inputs: f32[2, 3, 4])");
  CHECK(inferError("transpose", {tf32({2, 3, 4})}, {{"perm", Ints{1, 0}}}) ==
        "transpose: attribute 'perm' = [1, 0] is not a permutation of 0..2 "
        "(inputs: f32[2, 3, 4])");
  CHECK(inferError("transpose", {tf32({2, 3})}, {{"perm", Ints{0, 2}}}) ==
        "transpose: attribute 'perm' = [0, 2] is not a permutation of 0..1 (inputs: f32[2, 3])");
}

TEST_CASE("transpose kernel on a 2x3x4 iota", "[ops][transpose]") {
  // x[i][j][k] = 12i + 4j + k.
  SECTION("default reverses the dims: out[k][j][i]") {
    requireClose(run1("transpose", {iota({2, 3, 4})}),
                 f32({4, 3, 2}, {0, 12, 4, 16, 8, 20, 1, 13, 5, 17, 9, 21,
                                 2, 14, 6, 18, 10, 22, 3, 15, 7, 19, 11, 23}));
  }
  SECTION("perm [1, 0, 2]: out[j][i][k]") {
    requireClose(run1("transpose", {iota({2, 3, 4})}, {{"perm", Ints{1, 0, 2}}}),
                 f32({3, 2, 4}, {0, 1, 2, 3, 12, 13, 14, 15, 4, 5, 6, 7,
                                 16, 17, 18, 19, 8, 9, 10, 11, 20, 21, 22, 23}));
  }
  SECTION("perm [2, 0, 1]: out[k][i][j]") {
    requireClose(run1("transpose", {iota({2, 3, 4})}, {{"perm", Ints{2, 0, 1}}}),
                 f32({4, 2, 3}, {0, 4, 8, 12, 16, 20, 1, 5, 9, 13, 17, 21,
                                 2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19, 23}));
  }
  SECTION("i64 2-D") {
    auto out = run1("transpose", {i64({2, 3}, {1, 2, 3, 4, 5, 6})});
    CHECK(out.shape() == Shape{3, 2});
    CHECK(out.toInts() == Ints{1, 4, 2, 5, 3, 6});
  }
}

// --- concat --------------------------------------------------------------------

TEST_CASE("concat infers the joined shape", "[ops][concat]") {
  CHECK(inferred("concat", {tf32({2, 1}), tf32({2, 2}), tf32({2, 1})}, {{"axis", int64_t(1)}}) ==
        tf32({2, 4}));
  CHECK(inferred("concat", {tf32({2, 1}), tf32({2, 2}), tf32({2, 1})}, {{"axis", int64_t(-1)}}) ==
        tf32({2, 4}));
  CHECK(inferred("concat", {tf32({1, 3}), tf32({4, 3})}) == tf32({5, 3}));
  CHECK(inferred("concat", {ti64({3})}) == ti64({3}));
}

TEST_CASE("concat type errors", "[ops][concat]") {
  CHECK(inferError("concat", {tf32({2, 3}), tf32({3, 3})}, {{"axis", int64_t(1)}}) ==
        "concat: argument 1 has size 3 at dim 0, expected 2 (as argument 0) "
        "(inputs: f32[2, 3], f32[3, 3])");
  CHECK(inferError("concat", {tf32({2, 3}), tf32({2, 3}), tf32({2, 4})}) ==
        "concat: argument 2 has size 4 at dim 1, expected 3 (as argument 0) "
        "(inputs: f32[2, 3], f32[2, 3], f32[2, 4])");
  CHECK(inferError("concat", {tf32({2}), ti64({2})}) ==
        "concat: argument 1 has dtype i64, expected f32 (as argument 0) (inputs: f32[2], i64[2])");
  CHECK(inferError("concat", {tf32({2}), tf32({2, 1})}) ==
        "concat: argument 1 has rank 2, expected 1 (as argument 0) (inputs: f32[2], f32[2, 1])");
  CHECK(inferError("concat", {tf32({2}), tf32({2})}, {{"axis", int64_t(1)}}) ==
        "concat: attribute 'axis' = 1 is out of range for rank 1 (expected -1..0) "
        "(inputs: f32[2], f32[2])");
}

TEST_CASE("concat kernel of three inputs", "[ops][concat]") {
  Tensor a = f32({2, 1}, {1, 2}), b = f32({2, 2}, {3, 4, 5, 6}), c = f32({2, 1}, {7, 8});
  Tensor expected = f32({2, 4}, {1, 3, 4, 7, 2, 5, 6, 8});
  requireClose(run1("concat", {a, b, c}, {{"axis", int64_t(1)}}), expected);
  requireClose(run1("concat", {a, b, c}, {{"axis", int64_t(-1)}}), expected);
  requireClose(
      run1("concat", {f32({1, 2}, {1, 2}), f32({2, 2}, {3, 4, 5, 6}), f32({1, 2}, {7, 8})}),
      f32({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8}));
  // Any dtype: bool and f16 move bit-exactly.
  auto bl = run1("concat", {Tensor::fromInts(DType::Bool, {2}, Ints{1, 0}),
                            Tensor::fromInts(DType::Bool, {1}, Ints{1})});
  CHECK(bl.dtype() == DType::Bool);
  CHECK(bl.toInts() == Ints{1, 0, 1});
  auto h = run1("concat", {Tensor::fromDoubles(DType::F16, {1}, std::vector<double>{0.5}),
                           Tensor::fromDoubles(DType::F16, {2}, std::vector<double>{-2, 1.5})});
  CHECK(h.toDoubles() == std::vector<double>{0.5, -2, 1.5});
}

// --- split ---------------------------------------------------------------------

TEST_CASE("split infers a tuple", "[ops][split]") {
  CHECK(inferred("split", {tf32({3, 2})}, {{"sizes", Ints{1, 2}}}) ==
        Type::tuple({tf32({1, 2}), tf32({2, 2})}));
  CHECK(inferred("split", {tf32({2, 3})}, {{"axis", int64_t(-1)}, {"sizes", Ints{1, 2}}}) ==
        Type::tuple({tf32({2, 1}), tf32({2, 2})}));
  CHECK(inferred("split", {tf32({4})}, {{"sizes", Ints{4, 0}}}) ==
        Type::tuple({tf32({4}), tf32({0})}));
}

TEST_CASE("split type errors", "[ops][split]") {
  CHECK(inferError("split", {tf32({3, 2})}, {{"sizes", Ints{1, 1}}}) ==
        "split: attribute 'sizes' = [1, 1] sums to 2, but axis 0 has size 3 (inputs: f32[3, 2])");
  CHECK(inferError("split", {tf32({3, 2})}, {{"sizes", Ints{4, -1}}}) ==
        "split: attribute 'sizes' = [4, -1] has negative value -1 (inputs: f32[3, 2])");
  CHECK(inferError("split", {tf32({3, 2})}, {{"axis", int64_t(2)}, {"sizes", Ints{1, 1}}}) ==
        "split: attribute 'axis' = 2 is out of range for rank 2 (expected -2..1) "
        "(inputs: f32[3, 2])");
  CHECK_THAT(inferError("split", {tf32({3, 2})}),
             Catch::Contains("missing required attribute 'sizes'"));
}

TEST_CASE("split kernel into [1, 2]", "[ops][split]") {
  SECTION("axis 0") {
    auto outs = runOp("split", {iota({3, 2})}, {{"sizes", Ints{1, 2}}});
    REQUIRE(outs.size() == 2);
    requireClose(outs[0], f32({1, 2}, {0, 1}));
    requireClose(outs[1], f32({2, 2}, {2, 3, 4, 5}));
  }
  SECTION("axis -1") {
    // Rows [0, 1, 2] and [3, 4, 5].
    auto outs = runOp("split", {iota({2, 3})}, {{"axis", int64_t(-1)}, {"sizes", Ints{1, 2}}});
    REQUIRE(outs.size() == 2);
    requireClose(outs[0], f32({2, 1}, {0, 3}));
    requireClose(outs[1], f32({2, 2}, {1, 2, 4, 5}));
  }
}

// --- slice ---------------------------------------------------------------------

TEST_CASE("slice infers clamped extents", "[ops][slice]") {
  auto sl = [](Ints starts, Ints ends, Ints axes = {}, Ints steps = {}) {
    return Attrs{{"starts", starts}, {"ends", ends}, {"axes", axes}, {"steps", steps}};
  };
  CHECK(inferred("slice", {tf32({10})}, sl({2}, {7})) == tf32({5}));
  CHECK(inferred("slice", {tf32({10})}, sl({-3}, {10})) == tf32({3}));
  CHECK(inferred("slice", {tf32({10})}, sl({2}, {100})) == tf32({8}));
  CHECK(inferred("slice", {tf32({10})}, sl({5}, {kMax})) == tf32({5}));
  CHECK(inferred("slice", {tf32({10})}, sl({-1}, {kMin}, {}, {-1})) == tf32({10}));
  CHECK(inferred("slice", {tf32({10})}, sl({8}, {1}, {}, {-3})) == tf32({3}));
  CHECK(inferred("slice", {tf32({10})}, sl({0}, {10}, {}, {3})) == tf32({4}));
  CHECK(inferred("slice", {tf32({10})}, sl({5}, {2})) == tf32({0}));
  CHECK(inferred("slice", {tf32({10})}, sl({kMax}, {kMin}, {}, {kMin})) == tf32({1}));
  CHECK(inferred("slice", {tf32({3, 4})}, sl({1}, {3}, {1})) == tf32({3, 2}));
  CHECK(inferred("slice", {tf32({3, 4})}, sl({1}, {3}, {-2})) == tf32({2, 4}));
  CHECK(inferred("slice", {tf32({0})}, sl({0}, {kMax}, {}, {-1})) == tf32({0}));
}

TEST_CASE("slice type errors", "[ops][slice]") {
  CHECK(inferError("slice", {tf32({10})},
                   {{"starts", Ints{0}}, {"ends", Ints{5}}, {"steps", Ints{0}}}) ==
        "slice: attribute 'steps' = [0] must not contain 0 (inputs: f32[10])");
  CHECK(inferError("slice", {tf32({10})}, {{"starts", Ints{0}}, {"ends", Ints{5, 6}}}) ==
        "slice: attributes 'starts' and 'ends' must have the same length, got 1 and 2 "
        "(inputs: f32[10])");
  CHECK(inferError("slice", {tf32({3, 4})},
                   {{"starts", Ints{0, 0}}, {"ends", Ints{1, 1}}, {"axes", Ints{1, -1}}}) ==
        "slice: attribute 'axes' = [1, -1] repeats axis 1 (inputs: f32[3, 4])");
  CHECK(inferError("slice", {tf32({3, 4})},
                   {{"starts", Ints{0}}, {"ends", Ints{1}}, {"axes", Ints{2}}}) ==
        "slice: attribute 'axes' = 2 is out of range for rank 2 (expected -2..1) "
        "(inputs: f32[3, 4])");
  CHECK(inferError("slice", {tf32({3, 4})},
                   {{"starts", Ints{0, 0}}, {"ends", Ints{1, 1}}, {"axes", Ints{1}}}) ==
        "slice: attribute 'axes' must have 2 values (as 'starts'), got 1 (inputs: f32[3, 4])");
  CHECK(inferError("slice", {tf32({3, 4})},
                   {{"starts", Ints{0}}, {"ends", Ints{1}}, {"steps", Ints{1, 1}}}) ==
        "slice: attribute 'steps' must have 1 values (as 'starts'), got 2 (inputs: f32[3, 4])");
  CHECK(inferError("slice", {tf32({4})}, {{"starts", Ints{0, 0}}, {"ends", Ints{1, 1}}}) ==
        "slice: attribute 'starts' has 2 values, but the input has rank 1 (inputs: f32[4])");
}

TEST_CASE("slice kernel", "[ops][slice]") {
  auto sl = [](Ints starts, Ints ends, Ints axes = {}, Ints steps = {}) {
    return Attrs{{"starts", starts}, {"ends", ends}, {"axes", axes}, {"steps", steps}};
  };
  Tensor x = iota({10}); // 0..9
  SECTION("negative starts") {
    requireClose(run1("slice", {x}, sl({-3}, {10})), f32({3}, {7, 8, 9}));
    requireClose(run1("slice", {x}, sl({-4}, {-1})), f32({3}, {6, 7, 8}));
  }
  SECTION("clamped starts and ends") {
    requireClose(run1("slice", {x}, sl({2}, {100})), f32({8}, {2, 3, 4, 5, 6, 7, 8, 9}));
    requireClose(run1("slice", {x}, sl({-100}, {3})), f32({3}, {0, 1, 2}));
    // Negative step: end clamps to -1, i.e. through index 0.
    requireClose(run1("slice", {x}, sl({3}, {-100}, {}, {-1})), f32({4}, {3, 2, 1, 0}));
    // Negative step: start clamps to dim - 1.
    requireClose(run1("slice", {x}, sl({50}, {6}, {}, {-1})), f32({3}, {9, 8, 7}));
  }
  SECTION("INT64 max / min as 'to the end'") {
    requireClose(run1("slice", {x}, sl({5}, {kMax})), f32({5}, {5, 6, 7, 8, 9}));
    requireClose(run1("slice", {x}, sl({-1}, {kMin}, {}, {-1})),
                 f32({10}, {9, 8, 7, 6, 5, 4, 3, 2, 1, 0}));
  }
  SECTION("steps") {
    requireClose(run1("slice", {x}, sl({8}, {1}, {}, {-3})), f32({3}, {8, 5, 2}));
    requireClose(run1("slice", {x}, sl({1}, {10}, {}, {4})), f32({3}, {1, 5, 9}));
    CHECK(run1("slice", {x}, sl({5}, {2})).shape() == Shape{0});
  }
  SECTION("axes subset on a 3x4 iota") {
    // x[i][j] = 4i + j.
    Tensor m = iota({3, 4});
    requireClose(run1("slice", {m}, sl({1}, {3}, {1})), f32({3, 2}, {1, 2, 5, 6, 9, 10}));
    requireClose(run1("slice", {m}, sl({0}, {4}, {-1}, {2})), f32({3, 2}, {0, 2, 4, 6, 8, 10}));
    requireClose(run1("slice", {m}, sl({-1}, {kMax}, {0})), f32({1, 4}, {8, 9, 10, 11}));
    // Both axes reversed: rows 2, 1; columns 3, 1.
    requireClose(run1("slice", {m}, sl({2, 3}, {0, 0}, {0, 1}, {-1, -2})),
                 f32({2, 2}, {11, 9, 7, 5}));
    // Axes given out of order.
    requireClose(run1("slice", {m}, sl({2, 1}, {4, 3}, {1, 0})), f32({2, 2}, {6, 7, 10, 11}));
  }
}

// --- squeeze -------------------------------------------------------------------

TEST_CASE("squeeze infers shapes", "[ops][squeeze]") {
  CHECK(inferred("squeeze", {tf32({1, 3, 1, 2})}) == tf32({3, 2}));
  CHECK(inferred("squeeze", {tf32({1, 3, 1, 2})}, {{"axes", Ints{0}}}) == tf32({3, 1, 2}));
  CHECK(inferred("squeeze", {tf32({1, 3, 1, 2})}, {{"axes", Ints{-2}}}) == tf32({1, 3, 2}));
  CHECK(inferred("squeeze", {tf32({1, 1})}) == tf32({}));
  CHECK(inferred("squeeze", {tf32({2, 3})}) == tf32({2, 3}));
}

TEST_CASE("squeeze type errors", "[ops][squeeze]") {
  CHECK(inferError("squeeze", {tf32({1, 3, 1, 2})}, {{"axes", Ints{1}}}) ==
        "squeeze: cannot squeeze axis 1 of size 3 (attribute 'axes' = [1]) "
        "(inputs: f32[1, 3, 1, 2])");
  CHECK(inferError("squeeze", {tf32({1, 3})}, {{"axes", Ints{2}}}) ==
        "squeeze: attribute 'axes' = 2 is out of range for rank 2 (expected -2..1) "
        "(inputs: f32[1, 3])");
  CHECK(inferError("squeeze", {tf32({1, 3})}, {{"axes", Ints{0, -2}}}) ==
        "squeeze: attribute 'axes' = [0, -2] repeats axis 0 (inputs: f32[1, 3])");
}

TEST_CASE("squeeze kernel", "[ops][squeeze]") {
  Tensor x = f32({1, 3, 1, 2}, {1, 2, 3, 4, 5, 6});
  requireClose(run1("squeeze", {x}), f32({3, 2}, {1, 2, 3, 4, 5, 6}));
  requireClose(run1("squeeze", {x}, {{"axes", Ints{2}}}), f32({1, 3, 2}, {1, 2, 3, 4, 5, 6}));
}

// --- unsqueeze -----------------------------------------------------------------

TEST_CASE("unsqueeze infers output positions", "[ops][unsqueeze]") {
  CHECK(inferred("unsqueeze", {tf32({3, 4})}, {{"axes", Ints{0}}}) == tf32({1, 3, 4}));
  CHECK(inferred("unsqueeze", {tf32({3, 4})}, {{"axes", Ints{-1}}}) == tf32({3, 4, 1}));
  CHECK(inferred("unsqueeze", {tf32({3, 4})}, {{"axes", Ints{0, 3}}}) == tf32({1, 3, 4, 1}));
  CHECK(inferred("unsqueeze", {tf32({3, 4})}, {{"axes", Ints{1, -1}}}) == tf32({3, 1, 4, 1}));
  CHECK(inferred("unsqueeze", {tf32({3, 4})}, {{"axes", Ints{3, 1}}}) == tf32({3, 1, 4, 1}));
  CHECK(inferred("unsqueeze", {tf32({})}, {{"axes", Ints{0, 1}}}) == tf32({1, 1}));
}

TEST_CASE("unsqueeze type errors", "[ops][unsqueeze]") {
  CHECK(inferError("unsqueeze", {tf32({3})}, {{"axes", Ints{0, -3}}}) ==
        "unsqueeze: attribute 'axes' = [0, -3] repeats axis 0 (inputs: f32[3])");
  CHECK(inferError("unsqueeze", {tf32({3})}, {{"axes", Ints{2}}}) ==
        "unsqueeze: attribute 'axes' = 2 is out of range for rank 2 (expected -2..1) "
        "(inputs: f32[3])");
  CHECK_THAT(inferError("unsqueeze", {tf32({3})}),
             Catch::Contains("missing required attribute 'axes'"));
}

TEST_CASE("unsqueeze kernel", "[ops][unsqueeze]") {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  requireClose(run1("unsqueeze", {x}, {{"axes", Ints{0}}}), f32({1, 2, 3}, {1, 2, 3, 4, 5, 6}));
  requireClose(run1("unsqueeze", {x}, {{"axes", Ints{1, -1}}}),
               f32({2, 1, 3, 1}, {1, 2, 3, 4, 5, 6}));
}

// --- pad -----------------------------------------------------------------------

TEST_CASE("pad infers padded shapes", "[ops][pad]") {
  CHECK(inferred("pad", {tf32({2, 3})}, {{"pads", Ints{1, 0, 0, 2}}}) == tf32({3, 5}));
  CHECK(inferred("pad", {tf32({2, 3})}, {{"pads", Ints{0, -1, 1, 1}}}) == tf32({3, 3}));
  CHECK(inferred("pad", {tf32({2, 3})}, {{"pads", Ints{0, 2, 0, 2}}, {"mode", "reflect"s}}) ==
        tf32({2, 7}));
  CHECK(inferred("pad", {tf32({1, 3})}, {{"pads", Ints{2, 0, 2, 0}}, {"mode", "edge"s}}) ==
        tf32({5, 3}));
}

TEST_CASE("pad type errors", "[ops][pad]") {
  CHECK(inferError("pad", {tf32({2, 3})}, {{"pads", Ints{1, 1}}}) ==
        "pad: attribute 'pads' must have 4 values (2 x rank 2), got 2 (inputs: f32[2, 3])");
  CHECK(inferError("pad", {tf32({2, 3})}, {{"pads", Ints{0, 3, 0, 0}}, {"mode", "reflect"s}}) ==
        "pad: mode 'reflect' needs pads smaller than the size of axis 1 (3), got 3 and 0 "
        "(inputs: f32[2, 3])");
  CHECK(inferError("pad", {tf32({2, 3})}, {{"pads", Ints{0, 0, 0, 0}}, {"mode", "wrap"s}}) ==
        "pad: attribute 'mode' = \"wrap\" must be \"constant\", \"reflect\" or \"edge\" "
        "(inputs: f32[2, 3])");
  CHECK(inferError("pad", {tf32({2, 3})}, {{"pads", Ints{-2, 0, -1, 0}}}) ==
        "pad: attribute 'pads' = [-2, 0, -1, 0] crops axis 0 of size 2 below zero "
        "(inputs: f32[2, 3])");
  CHECK(inferError("pad", {tf32({0, 3})}, {{"pads", Ints{1, 0, 0, 0}}, {"mode", "edge"s}}) ==
        "pad: mode 'edge' cannot pad axis 0 of size 0 (inputs: f32[0, 3])");
}

TEST_CASE("pad kernel", "[ops][pad]") {
  // [[1, 2, 3],
  //  [4, 5, 6]]
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  SECTION("constant") {
    requireClose(run1("pad", {x}, {{"pads", Ints{1, 0, 0, 2}}, {"value", 9.5}}),
                 f32({3, 5}, {9.5, 9.5, 9.5, 9.5, 9.5, //
                              1, 2, 3, 9.5, 9.5,       //
                              4, 5, 6, 9.5, 9.5}));
    requireClose(run1("pad", {x}, {{"pads", Ints{0, 1, 0, 0}}}),
                 f32({2, 4}, {0, 1, 2, 3, 0, 4, 5, 6}));
  }
  SECTION("reflect") {
    requireClose(run1("pad", {x}, {{"pads", Ints{0, 2, 0, 1}}, {"mode", "reflect"s}}),
                 f32({2, 6}, {3, 2, 1, 2, 3, 2, //
                              6, 5, 4, 5, 6, 5}));
    requireClose(run1("pad", {x}, {{"pads", Ints{1, 0, 1, 0}}, {"mode", "reflect"s}}),
                 f32({4, 3}, {4, 5, 6, 1, 2, 3, 4, 5, 6, 1, 2, 3}));
  }
  SECTION("edge") {
    requireClose(run1("pad", {x}, {{"pads", Ints{1, 1, 0, 2}}, {"mode", "edge"s}}),
                 f32({3, 6}, {1, 1, 2, 3, 3, 3, //
                              1, 1, 2, 3, 3, 3, //
                              4, 4, 5, 6, 6, 6}));
  }
  SECTION("negative pads crop") {
    requireClose(run1("pad", {x}, {{"pads", Ints{0, -1, 1, 1}}}),
                 f32({3, 3}, {2, 3, 0, 5, 6, 0, 0, 0, 0}));
    requireClose(run1("pad", {x}, {{"pads", Ints{-1, 0, 0, -1}}}), f32({1, 2}, {4, 5}));
    // Crop the last two columns, then repeat the remaining edge.
    requireClose(run1("pad", {x}, {{"pads", Ints{0, 1, 0, -2}}, {"mode", "edge"s}}),
                 f32({2, 2}, {1, 1, 4, 4}));
    // Crop the first column, then reflect [2, 3] / [5, 6] at the end.
    requireClose(run1("pad", {x}, {{"pads", Ints{0, -1, 0, 1}}, {"mode", "reflect"s}}),
                 f32({2, 3}, {2, 3, 2, 5, 6, 5}));
  }
  SECTION("integer dtype with a constant") {
    auto out = run1("pad", {i64({2}, {1, 2})}, {{"pads", Ints{1, 2}}, {"value", 7.0}});
    CHECK(out.dtype() == DType::I64);
    CHECK(out.toInts() == Ints{7, 1, 2, 7, 7});
  }
}

// --- expand --------------------------------------------------------------------

TEST_CASE("expand infers the broadcast shape", "[ops][expand]") {
  CHECK(inferred("expand", {tf32({3, 1})}, {{"shape", Ints{2, 1, 4}}}) == tf32({2, 3, 4}));
  CHECK(inferred("expand", {tf32({2, 3})}, {{"shape", Ints{3}}}) == tf32({2, 3}));
  CHECK(inferred("expand", {tf32({2, 1})}, {{"shape", Ints{1, 1}}}) == tf32({2, 1}));
  CHECK(inferred("expand", {tf32({})}, {{"shape", Ints{2}}}) == tf32({2}));
}

TEST_CASE("transform op patterns", "[ops][transform]") {
  for (const char *name : {"reshape", "flatten", "transpose", "concat", "split", "slice",
                           "squeeze", "unsqueeze", "pad", "gather"}) {
    INFO(name);
    const Op *op = OpRegistry::global().find(name);
    REQUIRE(op != nullptr);
    CHECK(op->pattern == OpPattern::Injective);
  }
  CHECK(OpRegistry::global().find("expand")->pattern == OpPattern::Broadcast);
}

TEST_CASE("expand type errors", "[ops][expand]") {
  CHECK(inferError("expand", {tf32({3})}, {{"shape", Ints{4}}}) ==
        "expand: cannot broadcast [3] with [4] (inputs: f32[3])");
  CHECK(inferError("expand", {tf32({3})}, {{"shape", Ints{2, -1}}}) ==
        "expand: attribute 'shape' = [2, -1] has negative value -1 (inputs: f32[3])");
}

TEST_CASE("expand kernel broadcasts both ways", "[ops][expand]") {
  // out[a][b][c] = x[b][0].
  requireClose(run1("expand", {f32({3, 1}, {1, 2, 3})}, {{"shape", Ints{2, 1, 4}}}),
               f32({2, 3, 4}, {1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, //
                               1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}));
  requireClose(run1("expand", {f32({1, 2}, {5, 6})}, {{"shape", Ints{3, 1}}}),
               f32({3, 2}, {5, 6, 5, 6, 5, 6}));
  auto out = run1("expand", {i64({}, {-4})}, {{"shape", Ints{3}}});
  CHECK(out.toInts() == Ints{-4, -4, -4});
}

// --- gather --------------------------------------------------------------------

TEST_CASE("gather infers the output shape", "[ops][gather]") {
  CHECK(inferred("gather", {tf32({3, 2}), ti64({2})}) == tf32({2, 2}));
  CHECK(inferred("gather", {tf32({3, 2}), ti64({2, 2})}) == tf32({2, 2, 2}));
  CHECK(inferred("gather", {tf32({3, 2}), ti64({2, 1})}, {{"axis", int64_t(1)}}) ==
        tf32({3, 2, 1}));
  CHECK(inferred("gather", {tf32({3, 4, 5}), Type::tensor(DType::I32, {2})},
                 {{"axis", int64_t(-2)}}) == tf32({3, 2, 5}));
  CHECK(inferred("gather", {tf32({3, 2}), ti64({})}) == tf32({2}));
}

TEST_CASE("gather type errors", "[ops][gather]") {
  CHECK(inferError("gather", {tf32({3, 2}), tf32({2})}) ==
        "gather: argument 1 ('indices') must be i32 or i64, got f32[2] "
        "(inputs: f32[3, 2], f32[2])");
  CHECK(inferError("gather", {tf32({3, 2}), ti64({2})}, {{"axis", int64_t(2)}}) ==
        "gather: attribute 'axis' = 2 is out of range for rank 2 (expected -2..1) "
        "(inputs: f32[3, 2], i64[2])");
}

TEST_CASE("gather kernel", "[ops][gather]") {
  // [[1, 2],
  //  [3, 4],
  //  [5, 6]]
  Tensor x = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  SECTION("axis 0 with a negative index") {
    requireClose(run1("gather", {x, i64({2}, {0, -1})}), f32({2, 2}, {1, 2, 5, 6}));
  }
  SECTION("axis 0 with 2-D indices") {
    requireClose(run1("gather", {x, i64({2, 2}, {0, 1, 1, 2})}),
                 f32({2, 2, 2}, {1, 2, 3, 4, 3, 4, 5, 6}));
  }
  SECTION("axis 1 with a negative index") {
    requireClose(run1("gather", {x, i64({2}, {-1, 0})}, {{"axis", int64_t(1)}}),
                 f32({3, 2}, {2, 1, 4, 3, 6, 5}));
  }
  SECTION("axis 1 with 2-D i32 indices") {
    Tensor idx = Tensor::fromInts(DType::I32, {2, 1}, std::vector<int64_t>{1, -2});
    requireClose(run1("gather", {x, idx}, {{"axis", int64_t(-1)}}),
                 f32({3, 2, 1}, {2, 1, 4, 3, 6, 5}));
  }
  SECTION("scalar index") {
    requireClose(run1("gather", {x, i64({}, {1})}), f32({2}, {3, 4}));
  }
  SECTION("out-of-range index is a kernel error") {
    CHECK(kernelError("gather", {x, i64({2}, {0, 3})}) ==
          "gather: index 3 is out of range for axis 0 of size 3 (expected -3..2)");
    CHECK(kernelError("gather", {x, i64({1}, {-3})}, {{"axis", int64_t(1)}}) ==
          "gather: index -3 is out of range for axis 1 of size 2 (expected -2..1)");
  }
}

// --- gather_elements -------------------------------------------------------------

TEST_CASE("gather_elements infers the indices' shape", "[ops][gather_elements]") {
  CHECK(inferred("gather_elements", {tf32({3, 3}), ti64({2, 3})}) == tf32({2, 3}));
  CHECK(inferred("gather_elements", {tf32({2, 2}), ti64({2, 5})}, {{"axis", int64_t(-1)}}) ==
        tf32({2, 5}));
  CHECK(inferred("gather_elements", {ti64({4}), Type::tensor(DType::I32, {2})}) == ti64({2}));
}

TEST_CASE("gather_elements type errors", "[ops][gather_elements]") {
  CHECK(inferError("gather_elements", {tf32({3, 3}), tf32({3, 3})}) ==
        "gather_elements: argument 1 ('indices') must be i32 or i64, got f32[3, 3] "
        "(inputs: f32[3, 3], f32[3, 3])");
  CHECK(inferError("gather_elements", {tf32({3, 3}), ti64({3})}) ==
        "gather_elements: argument 1 ('indices') must have the rank of data (2), got i64[3] "
        "(inputs: f32[3, 3], i64[3])");
  CHECK(inferError("gather_elements", {tf32({3, 3}), ti64({2, 4})}) ==
        "gather_elements: indices dim 1 has size 4, more than data's 3 "
        "(inputs: f32[3, 3], i64[2, 4])");
  CHECK(inferError("gather_elements", {tf32({3, 3}), ti64({2, 2})}, {{"axis", int64_t(2)}}) ==
        "gather_elements: attribute 'axis' = 2 is out of range for rank 2 (expected -2..1) "
        "(inputs: f32[3, 3], i64[2, 2])");
}

TEST_CASE("gather_elements kernel", "[ops][gather_elements]") {
  // data [[1, 2], [3, 4]]
  Tensor x = f32({2, 2}, {1, 2, 3, 4});
  SECTION("axis 1: out[i][j] = x[i][idx[i][j]]") {
    requireClose(run1("gather_elements", {x, i64({2, 2}, {0, 0, 1, 0})}, {{"axis", int64_t(1)}}),
                 f32({2, 2}, {1, 1, 4, 3}));
  }
  SECTION("axis 0 with negative indices: out[i][j] = x[idx[i][j]][j]") {
    // idx [[-1, 0, 1]] over a 2x3 data [[1, 2, 3], [4, 5, 6]] -> [[4, 2, 6]]
    requireClose(
        run1("gather_elements", {f32({2, 3}, {1, 2, 3, 4, 5, 6}), i64({1, 3}, {-1, 0, 1})}),
        f32({1, 3}, {4, 2, 6}));
  }
  SECTION("integers move exactly") {
    Tensor big = i64({3}, {int64_t(1) << 60, -7, 9});
    CHECK(run1("gather_elements", {big, i64({2}, {0, 2})}).toInts() == Ints{int64_t(1) << 60, 9});
  }
  SECTION("out-of-range index is a kernel error") {
    CHECK(kernelError("gather_elements", {x, i64({1, 2}, {0, 2})}) ==
          "gather_elements: index 2 is out of range for axis 0 of size 2 (expected -2..1)");
  }
}

// --- cumsum ----------------------------------------------------------------------

TEST_CASE("cumsum infers the input type", "[ops][cumsum]") {
  CHECK(inferred("cumsum", {tf32({2, 3})}, {{"axis", int64_t(-1)}}) == tf32({2, 3}));
  CHECK(inferred("cumsum", {ti64({5})}, {{"reverse", true}}) == ti64({5}));
}

TEST_CASE("cumsum type errors", "[ops][cumsum]") {
  CHECK(inferError("cumsum", {tf32({2, 3})}, {{"axis", int64_t(2)}}) ==
        "cumsum: attribute 'axis' = 2 is out of range for rank 2 (expected -2..1) "
        "(inputs: f32[2, 3])");
  CHECK(inferError("cumsum", {Type::tensor(DType::Bool, {2})}) ==
        "cumsum: argument 0 must be a numeric tensor, got bool[2] (inputs: bool[2])");
}

TEST_CASE("cumsum kernel", "[ops][cumsum]") {
  Tensor x = f32({5}, {1, 2, 3, 4, 5});
  SECTION("inclusive, exclusive, reverse") {
    requireClose(run1("cumsum", {x}), f32({5}, {1, 3, 6, 10, 15}));
    requireClose(run1("cumsum", {x}, {{"exclusive", true}}), f32({5}, {0, 1, 3, 6, 10}));
    requireClose(run1("cumsum", {x}, {{"reverse", true}}), f32({5}, {15, 14, 12, 9, 5}));
    requireClose(run1("cumsum", {x}, {{"reverse", true}, {"exclusive", true}}),
                 f32({5}, {14, 12, 9, 5, 0}));
  }
  SECTION("2-D along each axis") {
    // [[1, 2, 3], [4, 5, 6]]
    Tensor m = f32({2, 3}, {1, 2, 3, 4, 5, 6});
    requireClose(run1("cumsum", {m}), f32({2, 3}, {1, 2, 3, 5, 7, 9}));
    requireClose(run1("cumsum", {m}, {{"axis", int64_t(-1)}}), f32({2, 3}, {1, 3, 6, 4, 9, 15}));
  }
  SECTION("integers") {
    CHECK(run1("cumsum", {Tensor::fromInts(DType::I32, {3}, Ints{7, -2, 5})}).toInts() ==
          Ints{7, 5, 10});
  }
}

// --- topk ------------------------------------------------------------------------

TEST_CASE("topk infers a (values, indices) tuple", "[ops][topk]") {
  CHECK(inferred("topk", {tf32({3, 4})}, {{"k", int64_t(2)}}) ==
        Type::tuple({tf32({3, 2}), ti64({3, 2})}));
  CHECK(inferred("topk", {Type::tensor(DType::I32, {3, 4})},
                 {{"k", int64_t(3)}, {"axis", int64_t(0)}}) ==
        Type::tuple({Type::tensor(DType::I32, {3, 4}), ti64({3, 4})}));
}

TEST_CASE("topk type errors", "[ops][topk]") {
  CHECK(inferError("topk", {tf32({3, 4})}, {{"k", int64_t(5)}}) ==
        "topk: attribute 'k' = 5 is out of range for axis 1 of size 4 (expected 0..4) "
        "(inputs: f32[3, 4])");
  CHECK(inferError("topk", {tf32({3, 4})}, {{"k", int64_t(1)}, {"axis", int64_t(2)}}) ==
        "topk: attribute 'axis' = 2 is out of range for rank 2 (expected -2..1) "
        "(inputs: f32[3, 4])");
  CHECK_THAT(inferError("topk", {tf32({3, 4})}), Catch::Contains("missing required attribute 'k'"));
}

TEST_CASE("topk kernel", "[ops][topk]") {
  // rows [3, 1, 3, 2] and [0, 5, -1, 5]: ties keep the lower index first.
  Tensor x = f32({2, 4}, {3, 1, 3, 2, 0, 5, -1, 5});
  SECTION("largest") {
    auto outs = runOp("topk", {x}, {{"k", int64_t(3)}});
    REQUIRE(outs.size() == 2);
    requireClose(outs[0], f32({2, 3}, {3, 3, 2, 5, 5, 0}));
    CHECK(outs[1].toInts() == Ints{0, 2, 3, 1, 3, 0});
  }
  SECTION("smallest along axis 0") {
    auto outs = runOp("topk", {x}, {{"k", int64_t(1)}, {"axis", int64_t(0)}, {"largest", false}});
    requireClose(outs[0], f32({1, 4}, {0, 1, -1, 2}));
    CHECK(outs[1].toInts() == Ints{1, 0, 1, 0});
  }
  SECTION("integers compare exactly") {
    Tensor big = i64({3}, {(int64_t(1) << 60) + 1, int64_t(1) << 60, 5});
    auto outs = runOp("topk", {big}, {{"k", int64_t(2)}});
    CHECK(outs[0].toInts() == Ints{(int64_t(1) << 60) + 1, int64_t(1) << 60});
    CHECK(outs[1].toInts() == Ints{0, 1});
  }
}

TEST_CASE("topk's selection of the first k is the stable sort's first k", "[ops][topk]") {
  // sorting::firstIndices (the host kernel's path when k <= n / 4) against
  // sorting::sortIndices, on keys with many ties, every k from 0 to n.
  std::mt19937 rng{11};
  for (int64_t n : {1, 2, 5, 17, 64, 301}) {
    for (int range : {2, 7, 1000}) {
      std::uniform_int_distribution<int> dist(0, range - 1);
      const auto size = static_cast<size_t>(n);
      std::vector<double> key(size), scratch(size);
      for (double &v : key)
        v = dist(rng);
      std::vector<int64_t> order(size), tmp(size), fullA(size), fullB(size);
      for (bool largest : {true, false}) {
        auto better = [largest](double p, double q) { return largest ? p > q : p < q; };
        const int64_t *full = tessera::sorting::sortIndices(
            n, fullA.data(), fullB.data(), [&](int64_t p, int64_t q) {
              return better(key[size_t(p)], key[size_t(q)]);
            });
        for (int64_t k = 0; k <= n; ++k) {
          INFO("n=" << n << " range=" << range << " largest=" << largest << " k=" << k);
          const int64_t *first = tessera::sorting::firstIndices(n, k, key.data(), scratch.data(),
                                                       order.data(), tmp.data(), better);
          CHECK(std::vector<int64_t>(first, first + k) == std::vector<int64_t>(full, full + k));
        }
      }
    }
  }
}

TEST_CASE("topk orders u64 values >= 2^63 as unsigned", "[ops][topk]") {
  Tensor x(DType::U64, {3});
  x.setUInt(0, 7);
  x.setUInt(1, std::numeric_limits<uint64_t>::max());
  x.setUInt(2, uint64_t(1) << 63);
  auto outs = runOp("topk", {x}, {{"k", int64_t(2)}});
  CHECK(outs[0].getUInt(0) == std::numeric_limits<uint64_t>::max());
  CHECK(outs[0].getUInt(1) == uint64_t(1) << 63);
  CHECK(outs[1].toInts() == Ints{1, 2});
}
