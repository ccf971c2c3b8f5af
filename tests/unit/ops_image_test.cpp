//===- tests/unit/ops_image_test.cpp - Image sampling op tests ------------===//
//
// Type inference, type errors and hand-computed reference kernel results for
// grid_sample and roi_align.
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include <numeric>

using namespace tessera::test;
using namespace tessera::ir;
using namespace std::string_literals;

namespace {

Type tf32(Shape s) {
  return Type::tensor(DType::F32, std::move(s));
}
Type ti64(Shape s) {
  return Type::tensor(DType::I64, std::move(s));
}

/// 0, 1, 2, ... in row-major order.
Tensor iota(Shape s) {
  std::vector<double> v(size_t(numElements(s)));
  std::iota(v.begin(), v.end(), 0.0);
  return Tensor::fromDoubles(DType::F32, std::move(s), v);
}

/// grid_sample of `x` at one grid point (gx, gy).
double sampleAt(const Tensor &x, double gx, double gy, Attrs attrs) {
  Tensor out = run1("grid_sample", {x, f32({1, 1, 1, 2}, {gx, gy})}, std::move(attrs));
  REQUIRE(out.shape() == Shape{1, 1, 1, 1});
  return out.getDouble(0);
}

} // namespace

// --- grid_sample ---------------------------------------------------------------

TEST_CASE("grid_sample infers [N, C, OH, OW]", "[ops][grid_sample]") {
  CHECK(inferred("grid_sample", {tf32({2, 3, 4, 5}), tf32({2, 6, 7, 2})}) == tf32({2, 3, 6, 7}));
  CHECK(inferred("grid_sample", {tf32({1, 1, 3, 2}), tf32({1, 2, 4, 2})},
                 {{"mode", "bicubic"s}, {"padding_mode", "reflection"s}}) == tf32({1, 1, 2, 4}));
}

TEST_CASE("grid_sample type errors", "[ops][grid_sample]") {
  CHECK(inferError("grid_sample", {tf32({1, 1, 2, 2}), tf32({1, 2, 2, 3})}) ==
        "grid_sample: the last dim of grid must be 2 (x, y), got 3 "
        "(inputs: f32[1, 1, 2, 2], f32[1, 2, 2, 3])");
  CHECK(inferError("grid_sample", {tf32({2, 1, 2, 2}), tf32({1, 2, 2, 2})}) ==
        "grid_sample: grid has batch size 1 but X has 2 "
        "(inputs: f32[2, 1, 2, 2], f32[1, 2, 2, 2])");
  CHECK(inferError("grid_sample", {tf32({1, 2, 2}), tf32({1, 2, 2, 2})}) ==
        "grid_sample: argument 0 ('X') must have rank 4, got f32[1, 2, 2] "
        "(inputs: f32[1, 2, 2], f32[1, 2, 2, 2])");
  CHECK(
      inferError("grid_sample", {tf32({1, 1, 2, 2}), tf32({1, 2, 2, 2})}, {{"mode", "linear"s}}) ==
      "grid_sample: attribute 'mode' = \"linear\" is not one of \"bilinear\", \"nearest\", "
      "\"bicubic\" (inputs: f32[1, 1, 2, 2], f32[1, 2, 2, 2])");
}

TEST_CASE("grid_sample kernel", "[ops][grid_sample]") {
  // x = [[0, 1], [2, 3]]
  Tensor x = iota({1, 1, 2, 2});
  SECTION("bilinear, align_corners: -1 and 1 are the corner pixel centres") {
    Attrs a{{"align_corners", true}};
    CHECK(sampleAt(x, -1, -1, a) == 0.0);
    CHECK(sampleAt(x, 1, -1, a) == 1.0);
    CHECK(sampleAt(x, 0, 0, a) == 1.5); // centre: mean of the four
    auto out = run1("grid_sample", {x, f32({1, 1, 2, 2}, {1, 1, -1, 0})}, a);
    requireClose(out, f32({1, 1, 1, 2}, {3, 1}));
  }
  SECTION("bilinear, no align_corners: 1 is the outer edge; padding modes") {
    // (1, 1) -> pixel coordinates (1.5, 1.5): between pixel 3 and the outside.
    CHECK(sampleAt(x, 1, 1, {}) == 0.75);                               // zeros
    CHECK(sampleAt(x, 1, 1, {{"padding_mode", "border"s}}) == 3.0);     // clamped to (1, 1)
    CHECK(sampleAt(x, 1, 1, {{"padding_mode", "reflection"s}}) == 3.0); // reflected
    CHECK(sampleAt(x, -1, -1, {}) == 0.0);                              // 1/4 of pixel 0
    CHECK(sampleAt(x, -1, -1, {{"padding_mode", "border"s}}) == 0.0);
  }
  SECTION("nearest rounds half to even") {
    Attrs a{{"mode", "nearest"s}};
    CHECK(sampleAt(x, 0.1, -0.6, a) == 1.0); // (0.6, -0.1) -> (1, 0)
    CHECK(sampleAt(x, 0, 0, a) == 0.0);      // (0.5, 0.5) -> (0, 0)
    CHECK(sampleAt(x, 0.5, 0.5, a) == 3.0);  // (1, 1)
  }
  SECTION("bicubic: exact at pixels, Keys kernel (a = -0.75) between them") {
    Attrs a{{"mode", "bicubic"s}, {"align_corners", true}};
    CHECK(sampleAt(x, 1, 1, a) == 3.0);
    // One row [0, 1, 8, 27]; x = 0 -> pixel coordinate 1.5, weights
    // [-0.09375, 0.59375, 0.59375, -0.09375]: 0.59375 * 9 - 0.09375 * 27.
    Tensor row = f32({1, 1, 1, 4}, {0, 1, 8, 27});
    CHECK(std::abs(sampleAt(row, 0, 0, a) - 2.8125) < 1e-6);
  }
}

// --- roi_align -----------------------------------------------------------------

TEST_CASE("roi_align infers [R, C, output_height, output_width]", "[ops][roi_align]") {
  CHECK(inferred("roi_align", {tf32({2, 3, 8, 8}), tf32({5, 4}), ti64({5})},
                 {{"output_height", int64_t(2)}, {"output_width", int64_t(3)}}) ==
        tf32({5, 3, 2, 3}));
  CHECK(inferred("roi_align", {tf32({1, 1, 4, 4}), tf32({1, 4}), ti64({1})}) == tf32({1, 1, 1, 1}));
}

TEST_CASE("roi_align type errors", "[ops][roi_align]") {
  CHECK(inferError("roi_align", {tf32({1, 1, 4, 4}), tf32({2, 4}), tf32({2})}) ==
        "roi_align: argument 2 ('batch_indices') must be i64, got f32[2] "
        "(inputs: f32[1, 1, 4, 4], f32[2, 4], f32[2])");
  CHECK(inferError("roi_align", {tf32({1, 1, 4, 4}), tf32({2, 5}), ti64({2})}) ==
        "roi_align: rois must have shape [R, 4], got f32[2, 5] "
        "(inputs: f32[1, 1, 4, 4], f32[2, 5], i64[2])");
  CHECK(inferError("roi_align", {tf32({1, 1, 4, 4}), tf32({2, 4}), ti64({3})}) ==
        "roi_align: batch_indices has 3 entries but there are 2 rois "
        "(inputs: f32[1, 1, 4, 4], f32[2, 4], i64[3])");
  CHECK(
      inferError("roi_align", {tf32({1, 1, 4, 4}), tf32({2, 4}), ti64({2})}, {{"mode", "sum"s}}) ==
      "roi_align: attribute 'mode' = \"sum\" is not one of \"avg\", \"max\" "
      "(inputs: f32[1, 1, 4, 4], f32[2, 4], i64[2])");
  CHECK(inferError("roi_align", {tf32({1, 1, 4, 4}), tf32({2, 4}), ti64({2})},
                   {{"output_height", int64_t(0)}}) ==
        "roi_align: attributes 'output_height' = 0 and 'output_width' = 1 must be positive "
        "(inputs: f32[1, 1, 4, 4], f32[2, 4], i64[2])");
}

TEST_CASE("roi_align kernel", "[ops][roi_align]") {
  // x[y][x] = 4 y + x: bilinear samples of a linear function are exact.
  Tensor x = iota({1, 1, 4, 4});
  Attrs base{{"sampling_ratio", int64_t(2)},
             {"coordinate_transformation_mode", "output_half_pixel"s}};
  SECTION("avg: the mean of the 2x2 samples at (0.5 | 1.5, 0.5 | 1.5)") {
    auto out = run1("roi_align", {x, f32({1, 4}, {0, 0, 2, 2}), i64({1}, {0})}, base);
    requireClose(out, f32({1, 1, 1, 1}, {5}));
  }
  SECTION("half_pixel shifts the roi by -0.5: samples at (0 | 1, 0 | 1)") {
    Attrs a = base;
    a.set("coordinate_transformation_mode", "half_pixel"s);
    auto out = run1("roi_align", {x, f32({1, 4}, {0, 0, 2, 2}), i64({1}, {0})}, a);
    requireClose(out, f32({1, 1, 1, 1}, {2.5}));
  }
  SECTION("spatial_scale, 2x2 bins, samples clamped at the last row/column") {
    Attrs a = base;
    a.set("spatial_scale", 0.5);
    a.set("output_height", int64_t(2));
    a.set("output_width", int64_t(2));
    a.set("sampling_ratio", int64_t(1));
    // roi (0, 0)-(4, 4) in pixels; bins of 2: samples at 1 and 3.
    auto out = run1("roi_align", {x, f32({1, 4}, {0, 0, 8, 8}), i64({1}, {0})}, a);
    requireClose(out, f32({1, 1, 2, 2}, {5, 7, 13, 15}));
  }
  SECTION("max: the largest weighted neighbour over the samples") {
    Attrs a = base;
    a.set("mode", "max"s);
    // The sample (1.5, 1.5) has neighbours 5, 6, 9, 10 with weight 1/4 each.
    auto out = run1("roi_align", {x, f32({1, 4}, {0, 0, 2, 2}), i64({1}, {0})}, a);
    requireClose(out, f32({1, 1, 1, 1}, {2.5}));
  }
  SECTION("batch_indices pick the image") {
    Tensor two = f32({2, 1, 2, 2}, {1, 1, 1, 1, 7, 7, 7, 7});
    auto out =
        run1("roi_align", {two, f32({2, 4}, {0, 0, 1, 1, 0, 0, 1, 1}), i64({2}, {1, 0})}, base);
    requireClose(out, f32({2, 1, 1, 1}, {7, 1}));
  }
  SECTION("out-of-range batch index") {
    CHECK(kernelError("roi_align", {x, f32({1, 4}, {0, 0, 2, 2}), i64({1}, {1})}, base) ==
          "roi_align: batch index 1 of roi 0 is out of range for batch size 1");
  }
}
