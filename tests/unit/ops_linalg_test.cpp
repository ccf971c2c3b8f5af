//===- tests/unit/ops_linalg_test.cpp - Linear algebra op tests -----------===//
//
// Type inference, type errors and hand-computed reference kernel results for
// det.
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

using namespace tessera::test;
using namespace tessera::ir;

namespace {

Type tf32(Shape s) {
  return Type::tensor(DType::F32, std::move(s));
}

} // namespace

TEST_CASE("det infers the batch dims", "[ops][det]") {
  CHECK(*inferOp("det", {tf32({2, 2})}) == tf32({}));
  CHECK(*inferOp("det", {tf32({3, 4, 4})}) == tf32({3}));
  CHECK(*inferOp("det", {Type::tensor(DType::F64, {2, 5, 1, 1})}) ==
        Type::tensor(DType::F64, {2, 5}));
  CHECK(*inferOp("det", {tf32({0, 3, 3})}) == tf32({0}));
}

TEST_CASE("det type errors", "[ops][det]") {
  CHECK(inferError("det", {Type::tensor(DType::I32, {2, 2})}) ==
        "det: argument 0 must be a float tensor, got i32[2, 2] (inputs: i32[2, 2])");
  CHECK(inferError("det", {tf32({3})}) ==
        "det: argument 0 ('x') must have rank >= 2, got f32[3] (inputs: f32[3])");
  CHECK(inferError("det", {tf32({4, 2, 3})}) ==
        "det: the last two dims must be equal (square matrices), got 2 x 3 "
        "(inputs: f32[4, 2, 3])");
}

TEST_CASE("det kernel", "[ops][det]") {
  // 0*3 - 1*2 = -2.
  requireClose(run1("det", {f32({2, 2}, {0, 1, 2, 3})}), f32({}, {-2}));
  // A zero first pivot needs a row swap:
  // 0*(0*8 - 3*(-3)) - 1*(1*8 - 3*4) + 2*(1*(-3) - 0*4) = 0 + 4 - 6 = -2.
  requireClose(run1("det", {f32({3, 3}, {0, 1, 2, 1, 0, 3, 4, -3, 8})}), f32({}, {-2}));
  // Batched: diag(2, 3) = 6, a singular matrix = 0, [[1, 2], [2, 1]] = -3.
  requireClose(run1("det", {f32({3, 2, 2}, {2, 0, 0, 3, 1, 2, 2, 4, 1, 2, 2, 1})}),
               f32({3}, {6, 0, -3}));
  // 1 x 1: the element; 0 x 0: 1 (the empty product).
  requireClose(run1("det", {f32({2, 1, 1}, {-7, 0.5})}), f32({2}, {-7, 0.5}));
  requireClose(run1("det", {f32({0, 0}, {})}), f32({}, {1}));
  // Computed in double: a permutation matrix times 1e-3 (det -1e-9 after
  // one swap) keeps its tiny value exactly enough.
  Tensor p = Tensor::fromDoubles(DType::F64, {3, 3},
                                 std::vector<double>{0, 1e-3, 0, 1e-3, 0, 0, 0, 0, 1e-3});
  requireClose(run1("det", {p}), Tensor::fromDoubles(DType::F64, {}, std::vector<double>{-1e-9}),
               1e-12, 0);
}
