//===- tests/unit/ops_nn_test.cpp - NN op family: types and kernels ------===//
//
// For every NN op: type inference (positive and exact error messages) and
// reference kernels against small hand-computed results. Expected numbers
// come from the op definitions (worked out by hand in the comments), never
// from running the kernels. Two randomized cross-checks compare conv2d with an
// im2col + matmul formulation and conv2d_transpose with the adjoint of conv2d.
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

using namespace tessera::test;

namespace {

Type tf32(Shape s) {
  return Type::tensor(DType::F32, std::move(s));
}
Type tt(DType d, Shape s) {
  return Type::tensor(d, std::move(s));
}
AttrValue ints(std::vector<int64_t> v) {
  return AttrValue(std::move(v));
}
AttrValue floats(std::vector<double> v) {
  return AttrValue(std::move(v));
}
AttrValue str(const char *s) {
  return AttrValue(std::string(s));
}
AttrValue i64v(int64_t v) {
  return AttrValue(v);
}

/// The inferred type as text, or "error: <message>".
std::string typeOf(const std::string &op, std::vector<Type> args, Attrs attrs = {}) {
  auto t = inferOp(op, std::move(args), std::move(attrs));
  return t.ok() ? t->str() : "error: " + t.error().str();
}

Tensor iota(Shape shape, double start = 1) {
  std::vector<double> v(size_t(numElements(shape)));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = start + double(i);
  return f32(std::move(shape), v);
}

} // namespace

//===----------------------------------------------------------------------===//
// conv2d
//===----------------------------------------------------------------------===//

TEST_CASE("conv2d type inference", "[ops][conv2d]") {
  CHECK(typeOf("conv2d", {tf32({1, 3, 8, 8}), tf32({8, 3, 3, 3})}) == "f32[1, 8, 6, 6]");
  // (8 + 1 + 1 - 3) / 2 + 1 = 4
  CHECK(typeOf("conv2d", {tf32({2, 3, 8, 8}), tf32({8, 3, 3, 3})},
               {{"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}}) == "f32[2, 8, 4, 4]");
  // Asymmetric pads and dilation: H: (8 + 0 + 2 - 5) / 1 + 1 = 6; W: (8 + 1 + 0 - 3) / 2 + 1 = 4.
  CHECK(typeOf("conv2d", {tf32({1, 3, 8, 8}), tf32({4, 3, 3, 2})},
               {{"strides", ints({1, 2})},
                {"pads", ints({0, 1, 2, 0})},
                {"dilation", ints({2, 2})}}) == "f32[1, 4, 6, 4]");
  CHECK(typeOf("conv2d", {tf32({1, 4, 8, 8}), tf32({8, 2, 3, 3})}, {{"groups", i64v(2)}}) ==
        "f32[1, 8, 6, 6]");
  // Depthwise with channel multiplier 2.
  CHECK(typeOf("conv2d", {tt(DType::F16, {1, 4, 5, 5}), tt(DType::F16, {8, 1, 3, 3})},
               {{"groups", i64v(4)}}) == "f16[1, 8, 3, 3]");
}

TEST_CASE("conv2d type errors", "[ops][conv2d]") {
  Type x = tf32({1, 3, 8, 8}), w = tf32({8, 3, 3, 3});
  CHECK(inferError("conv2d", {x, w}, {{"strides", ints({1, 1, 1})}}) ==
        "conv2d: attribute 'strides' must have 2 values, got 3 "
        "(inputs: f32[1, 3, 8, 8], f32[8, 3, 3, 3])");
  CHECK(inferError("conv2d", {x, w}, {{"pads", ints({1, 1})}}) ==
        "conv2d: attribute 'pads' must have 4 values, got 2 "
        "(inputs: f32[1, 3, 8, 8], f32[8, 3, 3, 3])");
  CHECK(inferError("conv2d", {x, w}, {{"dilation", ints({1})}}) ==
        "conv2d: attribute 'dilation' must have 2 values, got 1 "
        "(inputs: f32[1, 3, 8, 8], f32[8, 3, 3, 3])");
  CHECK(inferError("conv2d", {x, w}, {{"strides", ints({0, 1})}}) ==
        "conv2d: attribute 'strides' must be positive, got [0, 1] "
        "(inputs: f32[1, 3, 8, 8], f32[8, 3, 3, 3])");
  CHECK(inferError("conv2d", {x, w}, {{"dilation", ints({1, -2})}}) ==
        "conv2d: attribute 'dilation' must be positive, got [1, -2] "
        "(inputs: f32[1, 3, 8, 8], f32[8, 3, 3, 3])");
  CHECK(inferError("conv2d", {x, w}, {{"pads", ints({0, -1, 0, 0})}}) ==
        "conv2d: attribute 'pads' must be non-negative, got [0, -1, 0, 0] "
        "(inputs: f32[1, 3, 8, 8], f32[8, 3, 3, 3])");
  CHECK(inferError("conv2d", {x, w}, {{"groups", i64v(0)}}) ==
        "conv2d: attribute 'groups' must be positive, got 0 "
        "(inputs: f32[1, 3, 8, 8], f32[8, 3, 3, 3])");
  CHECK(inferError("conv2d", {x, tf32({8, 4, 3, 3})}) ==
        "conv2d: input channels 3 do not match weight channels 4 x groups 1 "
        "(inputs: f32[1, 3, 8, 8], f32[8, 4, 3, 3])");
  CHECK(inferError("conv2d", {tf32({1, 4, 8, 8}), tf32({8, 1, 3, 3})}, {{"groups", i64v(2)}}) ==
        "conv2d: input channels 4 do not match weight channels 1 x groups 2 "
        "(inputs: f32[1, 4, 8, 8], f32[8, 1, 3, 3])");
  CHECK(inferError("conv2d", {x, tf32({4, 1, 3, 3})}, {{"groups", i64v(2)}}) ==
        "conv2d: input channels 3 are not divisible by groups 2 "
        "(inputs: f32[1, 3, 8, 8], f32[4, 1, 3, 3])");
  CHECK(inferError("conv2d", {tf32({1, 4, 8, 8}), tf32({6, 1, 3, 3})}, {{"groups", i64v(4)}}) ==
        "conv2d: output channels 6 are not divisible by groups 4 "
        "(inputs: f32[1, 4, 8, 8], f32[6, 1, 3, 3])");
  // H: 2 - 3 + 1 = 0; W: (2 + 2 - 3) + 1 = 2.
  CHECK(inferError("conv2d", {tf32({1, 1, 2, 2}), tf32({1, 1, 3, 3})},
                   {{"pads", ints({0, 1, 0, 1})}}) ==
        "conv2d: computed output size [0, 2] is not positive "
        "(inputs: f32[1, 1, 2, 2], f32[1, 1, 3, 3])");
  CHECK(inferError("conv2d", {x, tt(DType::F16, {8, 3, 3, 3})}) ==
        "conv2d: argument 1 has dtype f16, expected f32 (as argument 0) "
        "(inputs: f32[1, 3, 8, 8], f16[8, 3, 3, 3])");
  CHECK(inferError("conv2d", {tf32({1, 3, 8}), w}) ==
        "conv2d: argument 0 ('data') must have rank 4, got f32[1, 3, 8] "
        "(inputs: f32[1, 3, 8], f32[8, 3, 3, 3])");
  CHECK(inferError("conv2d", {x, tf32({8, 3, 3})}) ==
        "conv2d: argument 1 ('weight') must have rank 4, got f32[8, 3, 3] "
        "(inputs: f32[1, 3, 8, 8], f32[8, 3, 3])");
  CHECK(inferError("conv2d", {tt(DType::I32, {1, 3, 8, 8}), tt(DType::I32, {8, 3, 3, 3})}) ==
        "conv2d: argument 0 must be a float tensor, got i32[1, 3, 8, 8] "
        "(inputs: i32[1, 3, 8, 8], i32[8, 3, 3, 3])");
}

TEST_CASE("conv2d kernel: plain 2x2 on 3x3", "[ops][conv2d]") {
  // x = [[1,2,3],[4,5,6],[7,8,9]], w = [[1,2],[3,4]]
  // y00 = 1+4+12+20 = 37, y01 = 2+6+15+24 = 47, y10 = 4+10+21+32 = 67, y11 = 5+12+24+36 = 77
  Tensor y = run1("conv2d", {iota({1, 1, 3, 3}), f32({1, 1, 2, 2}, {1, 2, 3, 4})});
  requireClose(y, f32({1, 1, 2, 2}, {37, 47, 67, 77}));
}

TEST_CASE("conv2d kernel: stride 2 with asymmetric pads", "[ops][conv2d]") {
  // pads top=1, left=0, bottom=0, right=1; padded input (rows -1..2, cols 0..3):
  //   0 0 0 0 / 1 2 3 0 / 4 5 6 0 / 7 8 9 0; H = W = (4 - 2) / 2 + 1 = 2.
  // y00 = [0 0; 1 2].w = 3 + 8 = 11; y01 = [0 0; 3 0].w = 9
  // y10 = [4 5; 7 8].w = 67;          y11 = [6 0; 9 0].w = 6 + 27 = 33
  Tensor y = run1("conv2d", {iota({1, 1, 3, 3}), f32({1, 1, 2, 2}, {1, 2, 3, 4})},
                  {{"strides", ints({2, 2})}, {"pads", ints({1, 0, 0, 1})}});
  requireClose(y, f32({1, 1, 2, 2}, {11, 9, 67, 33}));
}

TEST_CASE("conv2d kernel: dilation 2", "[ops][conv2d]") {
  // x[r][c] = 4r + c + 1 (4x4); y[i][j] = x[i][j] + 2 x[i][j+2] + 3 x[i+2][j] + 4 x[i+2][j+2]
  // y00 = 1 + 6 + 27 + 44 = 78; y01 = 2 + 8 + 30 + 48 = 88
  // y10 = 5 + 14 + 39 + 60 = 118; y11 = 6 + 16 + 42 + 64 = 128
  Tensor y = run1("conv2d", {iota({1, 1, 4, 4}), f32({1, 1, 2, 2}, {1, 2, 3, 4})},
                  {{"dilation", ints({2, 2})}});
  requireClose(y, f32({1, 1, 2, 2}, {78, 88, 118, 128}));
}

TEST_CASE("conv2d kernel: groups = 2", "[ops][conv2d]") {
  // 4 input channels [1, 2, 3, 4] (1x1 spatial), 2 groups of 2 channels, 1x1 kernels:
  // o0 = 1*1 + 2*1 = 3 (channels 0, 1); o1 = 3*1 + 4*(-1) = -1 (channels 2, 3).
  // Second batch [2, 0, 1, 1]: o0 = 2, o1 = 0.
  Tensor y = run1("conv2d",
                  {f32({2, 4, 1, 1}, {1, 2, 3, 4, 2, 0, 1, 1}), f32({2, 2, 1, 1}, {1, 1, 1, -1})},
                  {{"groups", i64v(2)}});
  requireClose(y, f32({2, 2, 1, 1}, {3, -1, 2, 0}));
}

TEST_CASE("conv2d kernel: depthwise", "[ops][conv2d]") {
  // ch0 = [[1,2,3],[4,5,6],[7,8,9]] with w0 = [[1,0],[0,1]]: x[i][j] + x[i+1][j+1] = 6, 8, 12, 14
  // ch1 = [[9,8,7],[6,5,4],[3,2,1]] with w1 = ones: 2x2 sums = 28, 24, 16, 12
  Tensor x = f32({1, 2, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 8, 7, 6, 5, 4, 3, 2, 1});
  Tensor w = f32({2, 1, 2, 2}, {1, 0, 0, 1, 1, 1, 1, 1});
  Tensor y = run1("conv2d", {x, w}, {{"groups", i64v(2)}});
  requireClose(y, f32({1, 2, 2, 2}, {6, 8, 12, 14, 28, 24, 16, 12}));
}

TEST_CASE("conv2d kernel: depthwise with channel multiplier and pads", "[ops][conv2d]") {
  // ch0 = [[1,2],[3,4]], ch1 = [[5,6],[7,8]]; weights [O=4, 1, 1, 1] = [1, 2, 3, -1], groups 2:
  // o0 = ch0, o1 = 2 ch0, o2 = 3 ch1, o3 = -ch1. pads [0, 1, 0, 0] adds a zero column on the left.
  Tensor x = iota({1, 2, 2, 2});
  Tensor w = f32({4, 1, 1, 1}, {1, 2, 3, -1});
  Tensor y = run1("conv2d", {x, w}, {{"groups", i64v(2)}, {"pads", ints({0, 1, 0, 0})}});
  // clang-format off
  requireClose(y, f32({1, 4, 2, 3}, {0,  1,  2,   0,  3,  4,    // o0
                                     0,  2,  4,   0,  6,  8,    // o1
                                     0, 15, 18,   0, 21, 24,    // o2
                                     0, -5, -6,   0, -7, -8})); // o3
  // clang-format on
}

TEST_CASE("conv2d kernel: f16 data", "[ops][conv2d]") {
  Tensor x =
      Tensor::fromDoubles(DType::F16, {1, 1, 3, 3}, std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor w = Tensor::fromDoubles(DType::F16, {1, 1, 2, 2}, std::vector<double>{1, 2, 3, 4});
  Tensor y = run1("conv2d", {x, w});
  requireClose(y,
               Tensor::fromDoubles(DType::F16, {1, 1, 2, 2}, std::vector<double>{37, 47, 67, 77}));
}

namespace {

/// A small deterministic random tensor with values in [-1, 1].
Tensor randomTensor(Shape shape, std::mt19937 &rng) {
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<double> v(size_t(numElements(shape)));
  for (double &x : v)
    x = dist(rng);
  return Tensor::fromDoubles(DType::F64, std::move(shape), v);
}

struct ConvCase {
  int64_t n, c, h, w, o, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr, groups;
};

} // namespace

TEST_CASE("conv2d kernel matches im2col + matmul on random shapes", "[ops][conv2d]") {
  std::mt19937 rng(1234);
  const ConvCase cases[] = {
      {2, 3, 5, 6, 4, 3, 2, 1, 2, 1, 1, 1, 0, 2, 1, 1},
      {1, 4, 7, 5, 6, 3, 3, 2, 1, 2, 1, 0, 1, 1, 0, 2},
      {1, 6, 6, 6, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 6},
      {3, 2, 4, 4, 4, 1, 2, 1, 1, 1, 3, 0, 2, 0, 2, 2},
  };
  for (const ConvCase &k : cases) {
    Tensor x = randomTensor({k.n, k.c, k.h, k.w}, rng);
    Tensor w = randomTensor({k.o, k.c / k.groups, k.kh, k.kw}, rng);
    Tensor y = run1("conv2d", {x, w},
                    {{"strides", ints({k.sh, k.sw})},
                     {"pads", ints({k.pt, k.pl, k.pb, k.pr})},
                     {"dilation", ints({k.dh, k.dw})},
                     {"groups", i64v(k.groups)}});
    int64_t oh = (k.h + k.pt + k.pb - k.dh * (k.kh - 1) - 1) / k.sh + 1;
    int64_t ow = (k.w + k.pl + k.pr - k.dw * (k.kw - 1) - 1) / k.sw + 1;
    REQUIRE(y.shape() == Shape{k.n, k.o, oh, ow});
    // im2col per group: cols[(c, kh, kw)][(oh, ow)], then W_g [O/g, C/g*KH*KW] x cols.
    int64_t cg = k.c / k.groups, og = k.o / k.groups, rows = cg * k.kh * k.kw;
    std::vector<double> expected(size_t(y.numel()));
    for (int64_t n = 0; n < k.n; ++n)
      for (int64_t g = 0; g < k.groups; ++g) {
        std::vector<double> cols(size_t(rows * oh * ow), 0.0);
        for (int64_t c = 0; c < cg; ++c)
          for (int64_t i = 0; i < k.kh; ++i)
            for (int64_t j = 0; j < k.kw; ++j)
              for (int64_t p = 0; p < oh; ++p)
                for (int64_t q = 0; q < ow; ++q) {
                  int64_t r = p * k.sh - k.pt + i * k.dh, s = q * k.sw - k.pl + j * k.dw;
                  if (r < 0 || r >= k.h || s < 0 || s >= k.w)
                    continue;
                  int64_t row = (c * k.kh + i) * k.kw + j;
                  cols[size_t(row * oh * ow + p * ow + q)] =
                      x.getDouble(((n * k.c + g * cg + c) * k.h + r) * k.w + s);
                }
        for (int64_t o = 0; o < og; ++o)
          for (int64_t col = 0; col < oh * ow; ++col) {
            double acc = 0;
            for (int64_t row = 0; row < rows; ++row)
              acc += w.getDouble((g * og + o) * rows + row) * cols[size_t(row * oh * ow + col)];
            expected[size_t((n * k.o + g * og + o) * oh * ow + col)] = acc;
          }
      }
    requireClose(y, Tensor::fromDoubles(DType::F64, y.shape(), expected), 1e-12, 1e-12);
  }
}

//===----------------------------------------------------------------------===//
// conv2d_transpose
//===----------------------------------------------------------------------===//

TEST_CASE("conv2d_transpose type inference", "[ops][conv2d_transpose]") {
  // (8 - 1) + (3 - 1) + 1 = 10
  CHECK(typeOf("conv2d_transpose", {tf32({1, 3, 8, 8}), tf32({3, 6, 3, 3})}) ==
        "f32[1, 6, 10, 10]");
  // (8 - 1) * 2 - 1 - 1 + (3 - 1) + 1 + 1 = 16
  CHECK(typeOf("conv2d_transpose", {tf32({1, 3, 8, 8}), tf32({3, 6, 3, 3})},
               {{"strides", ints({2, 2})},
                {"pads", ints({1, 1, 1, 1})},
                {"output_padding", ints({1, 1})}}) == "f32[1, 6, 16, 16]");
  // groups: O = 2 * 3; dilation 2 in W: (8 - 1) + 2 * 2 + 1 = 12
  CHECK(typeOf("conv2d_transpose", {tf32({2, 3, 8, 8}), tf32({3, 2, 3, 3})},
               {{"groups", i64v(3)}, {"dilation", ints({1, 2})}}) == "f32[2, 6, 10, 12]");
}

TEST_CASE("conv2d_transpose type errors", "[ops][conv2d_transpose]") {
  CHECK(inferError("conv2d_transpose", {tf32({1, 3, 8, 8}), tf32({4, 2, 3, 3})}) ==
        "conv2d_transpose: input channels 3 do not match weight input channels 4 "
        "(inputs: f32[1, 3, 8, 8], f32[4, 2, 3, 3])");
  CHECK(inferError("conv2d_transpose", {tf32({1, 3, 8, 8}), tf32({3, 1, 3, 3})},
                   {{"groups", i64v(2)}}) ==
        "conv2d_transpose: input channels 3 are not divisible by groups 2 "
        "(inputs: f32[1, 3, 8, 8], f32[3, 1, 3, 3])");
  CHECK(inferError("conv2d_transpose", {tf32({1, 3, 8, 8}), tf32({3, 1, 3, 3})},
                   {{"output_padding", ints({1, 1, 1})}}) ==
        "conv2d_transpose: attribute 'output_padding' must have 2 values, got 3 "
        "(inputs: f32[1, 3, 8, 8], f32[3, 1, 3, 3])");
  CHECK(inferError("conv2d_transpose", {tf32({1, 3, 8, 8}), tf32({3, 1, 3, 3})},
                   {{"output_padding", ints({0, -1})}}) ==
        "conv2d_transpose: attribute 'output_padding' must be non-negative, got [0, -1] "
        "(inputs: f32[1, 3, 8, 8], f32[3, 1, 3, 3])");
  CHECK(inferError("conv2d_transpose", {tf32({1, 3, 8, 8}), tf32({3, 1, 3, 3})},
                   {{"strides", ints({2})}}) ==
        "conv2d_transpose: attribute 'strides' must have 2 values, got 1 "
        "(inputs: f32[1, 3, 8, 8], f32[3, 1, 3, 3])");
  // H: 0 - 1 - 1 + 0 + 1 = -1; W: 1
  CHECK(inferError("conv2d_transpose", {tf32({1, 1, 1, 1}), tf32({1, 1, 1, 1})},
                   {{"pads", ints({1, 0, 1, 0})}}) ==
        "conv2d_transpose: computed output size [-1, 1] is not positive "
        "(inputs: f32[1, 1, 1, 1], f32[1, 1, 1, 1])");
  CHECK(inferError("conv2d_transpose",
                   {tt(DType::I64, {1, 1, 2, 2}), tt(DType::I64, {1, 1, 1, 1})}) ==
        "conv2d_transpose: argument 0 must be a float tensor, got i64[1, 1, 2, 2] "
        "(inputs: i64[1, 1, 2, 2], i64[1, 1, 1, 1])");
}

TEST_CASE("conv2d_transpose kernel: stride 2 and output_padding", "[ops][conv2d_transpose]") {
  // x = [[1,2],[3,4]], w = [[1,2],[3,4]], stride 2: each x scatters a disjoint 2x2 block x*w.
  //   rows: [1 2 2 4] [3 4 6 8] [3 6 4 8] [9 12 12 16]
  Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4}), w = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor y = run1("conv2d_transpose", {x, w}, {{"strides", ints({2, 2})}});
  requireClose(y, f32({1, 1, 4, 4}, {1, 2, 2, 4, 3, 4, 6, 8, 3, 6, 4, 8, 9, 12, 12, 16}));
  // output_padding [1, 1] adds a zero row and column at the bottom/right: 5x5.
  Tensor yp = run1("conv2d_transpose", {x, w},
                   {{"strides", ints({2, 2})}, {"output_padding", ints({1, 1})}});
  // clang-format off
  requireClose(yp, f32({1, 1, 5, 5}, {1,  2,  2,  4, 0,
                                      3,  4,  6,  8, 0,
                                      3,  6,  4,  8, 0,
                                      9, 12, 12, 16, 0,
                                      0,  0,  0,  0, 0}));
  // clang-format on
  // With pads [1,1,1,1] as well, the output is the full 5x5 result cropped to rows/cols 1..3:
  // (2-1)*2 - 2 + 1 + 1 + 1 = 3.
  Tensor yc = run1(
      "conv2d_transpose", {x, w},
      {{"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}, {"output_padding", ints({1, 1})}});
  requireClose(yc, f32({1, 1, 3, 3}, {4, 6, 8, 6, 4, 8, 12, 12, 16}));
}

TEST_CASE("conv2d_transpose kernel: overlapping windows and pads", "[ops][conv2d_transpose]") {
  // stride 1, w = ones(2x2): y[i][j] = sum of x[a][b] with i-a, j-b in {0, 1}
  //   = [[1, 3, 2], [4, 10, 6], [3, 7, 4]]
  Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4}), w = f32({1, 1, 2, 2}, {1, 1, 1, 1});
  requireClose(run1("conv2d_transpose", {x, w}), f32({1, 1, 3, 3}, {1, 3, 2, 4, 10, 6, 3, 7, 4}));
  // pads top=1, left=1 crop the first row and column.
  requireClose(run1("conv2d_transpose", {x, w}, {{"pads", ints({1, 1, 0, 0})}}),
               f32({1, 1, 2, 2}, {10, 6, 7, 4}));
}

TEST_CASE("conv2d_transpose kernel: channels, groups and dilation", "[ops][conv2d_transpose]") {
  // groups 1, weight [C=2, O=2, 1, 1] = [[1, 2], [3, 4]]: y_o = sum_c x_c w[c][o]
  //   x = [1, 2]: y0 = 1 + 6 = 7, y1 = 2 + 8 = 10
  requireClose(
      run1("conv2d_transpose", {f32({1, 2, 1, 1}, {1, 2}), f32({2, 2, 1, 1}, {1, 2, 3, 4})}),
      f32({1, 2, 1, 1}, {7, 10}));
  // groups 2, weight [2, 1, 1, 1] = [3, 5]: y0 = 1*3, y1 = 2*5
  requireClose(run1("conv2d_transpose", {f32({1, 2, 1, 1}, {1, 2}), f32({2, 1, 1, 1}, {3, 5})},
                    {{"groups", i64v(2)}}),
               f32({1, 2, 1, 1}, {3, 10}));
  // dilation 2 along W: x = [1, 2], w = [1, 10] -> taps at ow = iw and iw + 2:
  //   y = [1, 2, 10, 20]
  requireClose(run1("conv2d_transpose", {f32({1, 1, 1, 2}, {1, 2}), f32({1, 1, 1, 2}, {1, 10})},
                    {{"dilation", ints({1, 2})}}),
               f32({1, 1, 1, 4}, {1, 2, 10, 20}));
}

TEST_CASE("conv2d_transpose is the adjoint of conv2d", "[ops][conv2d_transpose]") {
  // <conv2d(x, w), y> == <x, conv2d_transpose(y, w)> when the transpose's
  // output_padding makes its output the shape of x.
  std::mt19937 rng(99);
  const ConvCase cases[] = {
      {1, 4, 7, 6, 6, 3, 2, 2, 3, 1, 1, 1, 0, 2, 1, 2},
      {2, 3, 5, 5, 2, 2, 3, 2, 1, 2, 1, 0, 1, 1, 1, 1},
      {1, 2, 6, 7, 4, 3, 3, 3, 2, 1, 2, 2, 1, 0, 2, 2},
  };
  for (const ConvCase &k : cases) {
    Tensor x = randomTensor({k.n, k.c, k.h, k.w}, rng);
    Tensor w = randomTensor({k.o, k.c / k.groups, k.kh, k.kw}, rng);
    Attrs attrs{{"strides", ints({k.sh, k.sw})},
                {"pads", ints({k.pt, k.pl, k.pb, k.pr})},
                {"dilation", ints({k.dh, k.dw})},
                {"groups", i64v(k.groups)}};
    Tensor cx = run1("conv2d", {x, w}, attrs);
    Tensor y = randomTensor(cx.shape(), rng);
    int64_t oh = cx.shape()[2], ow = cx.shape()[3];
    int64_t fullH = (oh - 1) * k.sh - k.pt - k.pb + k.dh * (k.kh - 1) + 1;
    int64_t fullW = (ow - 1) * k.sw - k.pl - k.pr + k.dw * (k.kw - 1) + 1;
    Attrs tattrs = attrs;
    tattrs.set("output_padding", ints({k.h - fullH, k.w - fullW}));
    Tensor ty = run1("conv2d_transpose", {y, w}, tattrs);
    REQUIRE(ty.shape() == x.shape());
    double lhs = 0, rhs = 0;
    for (int64_t i = 0; i < cx.numel(); ++i)
      lhs += cx.getDouble(i) * y.getDouble(i);
    for (int64_t i = 0; i < x.numel(); ++i)
      rhs += x.getDouble(i) * ty.getDouble(i);
    CHECK(std::abs(lhs - rhs) <= 1e-10 * (1 + std::abs(lhs)));
  }
}

//===----------------------------------------------------------------------===//
// dense
//===----------------------------------------------------------------------===//

TEST_CASE("dense type inference", "[ops][dense]") {
  CHECK(typeOf("dense", {tf32({4, 16}), tf32({8, 16})}) == "f32[4, 8]");
  CHECK(typeOf("dense", {tf32({2, 5, 16}), tf32({8, 16})}) == "f32[2, 5, 8]");
  CHECK(typeOf("dense", {tf32({16}), tf32({8, 16})}) == "f32[8]");
  CHECK(typeOf("dense", {tt(DType::I32, {3, 2}), tt(DType::I32, {5, 2})}) == "i32[3, 5]");
}

TEST_CASE("dense type errors", "[ops][dense]") {
  CHECK(inferError("dense", {tf32({2, 3}), tf32({4, 2})}) ==
        "dense: inner dimensions do not match: data has 3, weight has 2 "
        "(inputs: f32[2, 3], f32[4, 2])");
  CHECK(inferError("dense", {tf32({2, 3}), tf32({3})}) ==
        "dense: argument 1 ('weight') must have rank 2, got f32[3] (inputs: f32[2, 3], f32[3])");
  CHECK(inferError("dense", {tf32({}), tf32({3, 1})}) ==
        "dense: argument 0 ('data') must have rank >= 1, got f32[] (inputs: f32[], f32[3, 1])");
  CHECK(inferError("dense", {tf32({2, 3}), tt(DType::F64, {4, 3})}) ==
        "dense: argument 1 has dtype f64, expected f32 (as argument 0) "
        "(inputs: f32[2, 3], f64[4, 3])");
  CHECK(inferError("dense", {tt(DType::Bool, {2, 3}), tt(DType::Bool, {4, 3})}) ==
        "dense: argument 0 must be a numeric tensor, got bool[2, 3] "
        "(inputs: bool[2, 3], bool[4, 3])");
}

TEST_CASE("dense kernel", "[ops][dense]") {
  // x = [[1,2,3],[4,5,6]], w = [[1,0,-1],[2,1,0]]:
  //   y = [[1-3, 2+2], [4-6, 8+5]] = [[-2, 4], [-2, 13]]
  requireClose(run1("dense", {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({2, 3}, {1, 0, -1, 2, 1, 0})}),
               f32({2, 2}, {-2, 4, -2, 13}));
  // Leading batch dims.
  requireClose(
      run1("dense", {f32({2, 1, 3}, {1, 2, 3, 4, 5, 6}), f32({2, 3}, {1, 0, -1, 2, 1, 0})}),
      f32({2, 1, 2}, {-2, 4, -2, 13}));
  // Integers accumulate exactly.
  Tensor y = run1("dense", {i64({2, 3}, {1, 2, 3, 4, 5, 6}), i64({2, 3}, {1, 0, -1, 2, 1, 0})});
  CHECK(y.dtype() == DType::I64);
  CHECK(y.toInts() == std::vector<int64_t>{-2, 4, -2, 13});
}

//===----------------------------------------------------------------------===//
// matmul
//===----------------------------------------------------------------------===//

TEST_CASE("matmul type inference", "[ops][matmul]") {
  CHECK(typeOf("matmul", {tf32({2, 3}), tf32({3, 4})}) == "f32[2, 4]");
  CHECK(typeOf("matmul", {tf32({5, 2, 3}), tf32({3, 4})}) == "f32[5, 2, 4]");
  CHECK(typeOf("matmul", {tf32({3}), tf32({3})}) == "f32[]");
  CHECK(typeOf("matmul", {tf32({3}), tf32({2, 3, 4})}) == "f32[2, 4]");
  CHECK(typeOf("matmul", {tf32({2, 3, 4}), tf32({4})}) == "f32[2, 3]");
  CHECK(typeOf("matmul", {tf32({2, 1, 3, 4}), tf32({5, 4, 2})}) == "f32[2, 5, 3, 2]");
  CHECK(typeOf("matmul", {tt(DType::I64, {2, 2}), tt(DType::I64, {2, 2})}) == "i64[2, 2]");
}

TEST_CASE("matmul type errors", "[ops][matmul]") {
  CHECK(inferError("matmul", {tf32({2, 3}), tf32({4, 5})}) ==
        "matmul: inner dimensions do not match: a has 3, b has 4 "
        "(inputs: f32[2, 3], f32[4, 5])");
  CHECK(inferError("matmul", {tf32({3}), tf32({4})}) ==
        "matmul: inner dimensions do not match: a has 3, b has 4 (inputs: f32[3], f32[4])");
  CHECK(inferError("matmul", {tf32({2, 3, 4}), tf32({3, 4, 5})}) ==
        "matmul: batch dimensions: cannot broadcast [2] with [3] "
        "(inputs: f32[2, 3, 4], f32[3, 4, 5])");
  CHECK(inferError("matmul", {tf32({}), tf32({3})}) ==
        "matmul: argument 0 ('a') must have rank >= 1, got f32[] (inputs: f32[], f32[3])");
  CHECK(inferError("matmul", {tf32({3, 2}), tt(DType::I32, {2, 3})}) ==
        "matmul: argument 1 has dtype i32, expected f32 (as argument 0) "
        "(inputs: f32[3, 2], i32[2, 3])");
}

TEST_CASE("matmul kernel: 2-D and 1-D promotion", "[ops][matmul]") {
  Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = f32({3, 2}, {1, 0, 0, 1, 1, 1});
  // [[1+3, 2+3], [4+6, 5+6]]
  requireClose(run1("matmul", {a, b}), f32({2, 2}, {4, 5, 10, 11}));
  // 1-D x 1-D: dot product 4 + 10 + 18 = 32, a scalar.
  requireClose(run1("matmul", {f32({3}, {1, 2, 3}), f32({3}, {4, 5, 6})}), f32({}, {32}));
  // 1-D x 2-D: [1, 2, 3] . b = [1 + 3, 2 + 3]
  requireClose(run1("matmul", {f32({3}, {1, 2, 3}), b}), f32({2}, {4, 5}));
  // 2-D x 1-D: row sums [6, 15]
  requireClose(run1("matmul", {a, f32({3}, {1, 1, 1})}), f32({2}, {6, 15}));
  // 1-D x batched: [1,2,3] . b0 = [4, 5]; [1,2,3] . ones(3x2) = [6, 6]
  requireClose(
      run1("matmul", {f32({3}, {1, 2, 3}), f32({2, 3, 2}, {1, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1})}),
      f32({2, 2}, {4, 5, 6, 6}));
}

TEST_CASE("matmul kernel: batch broadcasting", "[ops][matmul]") {
  // a0 = [[1,2],[3,4]], a1 = [[0,1],[1,0]], b = [[1,1],[0,2]]:
  //   a0 b = [[1, 5], [3, 11]], a1 b = [[0, 2], [1, 1]]
  requireClose(
      run1("matmul", {f32({2, 2, 2}, {1, 2, 3, 4, 0, 1, 1, 0}), f32({2, 2}, {1, 1, 0, 2})}),
      f32({2, 2, 2}, {1, 5, 3, 11, 0, 2, 1, 1}));
  // a [2,1,1,2]: a_i = [1,2], [3,4]; b [1,3,2,1]: b_j = [1,0]^T, [0,1]^T, [1,1]^T
  //   out[i][j] = a_i . b_j: [1, 2, 3], [3, 4, 7]
  requireClose(
      run1("matmul", {f32({2, 1, 1, 2}, {1, 2, 3, 4}), f32({1, 3, 2, 1}, {1, 0, 0, 1, 1, 1})}),
      f32({2, 3, 1, 1}, {1, 2, 3, 3, 4, 7}));
}

TEST_CASE("matmul kernel: integers", "[ops][matmul]") {
  // [[1,2],[3,4]] x [[5,6],[7,8]] = [[19, 22], [43, 50]]
  Tensor a = Tensor::fromInts(DType::I32, {2, 2}, std::vector<int64_t>{1, 2, 3, 4});
  Tensor b = Tensor::fromInts(DType::I32, {2, 2}, std::vector<int64_t>{5, 6, 7, 8});
  Tensor y = run1("matmul", {a, b});
  CHECK(y.dtype() == DType::I32);
  CHECK(y.toInts() == std::vector<int64_t>{19, 22, 43, 50});
}

//===----------------------------------------------------------------------===//
// batch_matmul
//===----------------------------------------------------------------------===//

TEST_CASE("batch_matmul type inference", "[ops][batch_matmul]") {
  CHECK(typeOf("batch_matmul", {tf32({4, 2, 3}), tf32({4, 3, 5})}) == "f32[4, 2, 5]");
  CHECK(typeOf("batch_matmul", {tf32({1, 2, 3}), tf32({4, 3, 5})}) == "f32[4, 2, 5]");
  CHECK(typeOf("batch_matmul", {tf32({4, 3, 2}), tf32({1, 5, 3})},
               {{"transpose_a", true}, {"transpose_b", true}}) == "f32[4, 2, 5]");
  CHECK(typeOf("batch_matmul", {tf32({1, 2, 3}), tf32({1, 5, 3})}, {{"transpose_b", true}}) ==
        "f32[1, 2, 5]");
}

TEST_CASE("batch_matmul type errors", "[ops][batch_matmul]") {
  CHECK(inferError("batch_matmul", {tf32({2, 3}), tf32({1, 3, 4})}) ==
        "batch_matmul: argument 0 ('a') must have rank 3, got f32[2, 3] "
        "(inputs: f32[2, 3], f32[1, 3, 4])");
  CHECK(inferError("batch_matmul", {tf32({2, 2, 3}), tf32({3, 3, 4})}) ==
        "batch_matmul: batch sizes 2 and 3 do not match (must be equal or 1) "
        "(inputs: f32[2, 2, 3], f32[3, 3, 4])");
  CHECK(inferError("batch_matmul", {tf32({1, 2, 3}), tf32({1, 4, 5})}) ==
        "batch_matmul: inner dimensions do not match: a has 3, b has 4 "
        "(inputs: f32[1, 2, 3], f32[1, 4, 5])");
  // transpose_a makes a [1, 3, 2] with K = 2.
  CHECK(inferError("batch_matmul", {tf32({1, 2, 3}), tf32({1, 3, 5})}, {{"transpose_a", true}}) ==
        "batch_matmul: inner dimensions do not match: a has 2, b has 3 "
        "(inputs: f32[1, 2, 3], f32[1, 3, 5])");
}

TEST_CASE("batch_matmul kernel", "[ops][batch_matmul]") {
  // a0 = [[1,2,3],[4,5,6]], a1 = [[1,0,0],[0,1,0]]; b0 = [1,1,1]^T, b1 = [1,2,3]^T
  //   a0 b0 = [6, 15]; a1 b1 = [1, 2]
  Tensor a = f32({2, 2, 3}, {1, 2, 3, 4, 5, 6, 1, 0, 0, 0, 1, 0});
  Tensor b = f32({2, 3, 1}, {1, 1, 1, 1, 2, 3});
  requireClose(run1("batch_matmul", {a, b}), f32({2, 2, 1}, {6, 15, 1, 2}));
  // Broadcast batch of a: a0 b0 = [6, 15]; a0 b1 = [1+4+9, 4+10+18] = [14, 32]
  requireClose(run1("batch_matmul", {f32({1, 2, 3}, {1, 2, 3, 4, 5, 6}), b}),
               f32({2, 2, 1}, {6, 15, 14, 32}));
}

TEST_CASE("batch_matmul kernel: transposes", "[ops][batch_matmul]") {
  Tensor a = f32({1, 2, 3}, {1, 2, 3, 4, 5, 6});  // a0
  Tensor aT = f32({1, 3, 2}, {1, 4, 2, 5, 3, 6}); // a0 transposed
  // transpose_a: aT^T b = a0 [1,1,1]^T = [6, 15]
  requireClose(run1("batch_matmul", {aT, f32({1, 3, 1}, {1, 1, 1})}, {{"transpose_a", true}}),
               f32({1, 2, 1}, {6, 15}));
  // transpose_b: bT = [[1,1,1],[1,0,-1]] -> a0 bT^T = [[6, 1-3], [15, 4-6]]
  Tensor bT = f32({1, 2, 3}, {1, 1, 1, 1, 0, -1});
  requireClose(run1("batch_matmul", {a, bT}, {{"transpose_b", true}}),
               f32({1, 2, 2}, {6, -2, 15, -2}));
  // Both.
  requireClose(run1("batch_matmul", {aT, bT}, {{"transpose_a", true}, {"transpose_b", true}}),
               f32({1, 2, 2}, {6, -2, 15, -2}));
  // Integers: [[1,2]] x [[3],[4]] = 11 with b broadcast over 2 batches of a.
  Tensor ia = i64({2, 1, 2}, {1, 2, -1, 5});
  Tensor ib = i64({1, 2, 1}, {3, 4});
  CHECK(run1("batch_matmul", {ia, ib}).toInts() == std::vector<int64_t>{11, 17});
}

//===----------------------------------------------------------------------===//
// bias_add
//===----------------------------------------------------------------------===//

TEST_CASE("bias_add type inference and errors", "[ops][bias_add]") {
  CHECK(typeOf("bias_add", {tf32({1, 3, 4, 4}), tf32({3})}) == "f32[1, 3, 4, 4]");
  CHECK(typeOf("bias_add", {tf32({2, 5}), tf32({5})}, {{"axis", i64v(-1)}}) == "f32[2, 5]");
  CHECK(inferError("bias_add", {tf32({1, 3, 4, 4}), tf32({4})}) ==
        "bias_add: bias length 4 does not match data dimension 3 at axis 1 "
        "(inputs: f32[1, 3, 4, 4], f32[4])");
  CHECK(inferError("bias_add", {tf32({1, 3, 4, 4}), tf32({3})}, {{"axis", i64v(4)}}) ==
        "bias_add: attribute 'axis' = 4 is out of range for rank 4 (expected -4..3) "
        "(inputs: f32[1, 3, 4, 4], f32[3])");
  CHECK(inferError("bias_add", {tf32({1, 3}), tf32({3, 1})}) ==
        "bias_add: argument 1 ('bias') must have rank 1, got f32[3, 1] "
        "(inputs: f32[1, 3], f32[3, 1])");
  CHECK(inferError("bias_add", {tf32({1, 3}), tt(DType::I32, {3})}) ==
        "bias_add: argument 1 has dtype i32, expected f32 (as argument 0) "
        "(inputs: f32[1, 3], i32[3])");
}

TEST_CASE("bias_add kernel", "[ops][bias_add]") {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  requireClose(run1("bias_add", {x, f32({3}, {10, 20, 30})}),
               f32({2, 3}, {11, 22, 33, 14, 25, 36}));
  requireClose(run1("bias_add", {x, f32({2}, {100, 200})}, {{"axis", i64v(0)}}),
               f32({2, 3}, {101, 102, 103, 204, 205, 206}));
  // NCHW, channel axis 1: [1, 2 | 3, 4] + [10 | 20]
  requireClose(run1("bias_add", {f32({1, 2, 1, 2}, {1, 2, 3, 4}), f32({2}, {10, 20})}),
               f32({1, 2, 1, 2}, {11, 12, 23, 24}));
  CHECK(run1("bias_add", {i64({2, 2}, {1, 2, 3, 4}), i64({2}, {-1, 1})}, {{"axis", i64v(-1)}})
            .toInts() == std::vector<int64_t>{0, 3, 2, 5});
}

//===----------------------------------------------------------------------===//
// batch_norm
//===----------------------------------------------------------------------===//

TEST_CASE("batch_norm type inference and errors", "[ops][batch_norm]") {
  Type c3 = tf32({3});
  CHECK(typeOf("batch_norm", {tf32({2, 3, 4, 4}), c3, c3, c3, c3}) == "f32[2, 3, 4, 4]");
  CHECK(typeOf("batch_norm", {tf32({2, 4, 3}), c3, c3, c3, c3}, {{"axis", i64v(-1)}}) ==
        "f32[2, 4, 3]");
  CHECK(inferError("batch_norm", {tf32({1, 2}), tf32({2}), tf32({2}), tf32({3}), tf32({2})}) ==
        "batch_norm: argument 3 ('mean') must have shape [2], got f32[3] "
        "(inputs: f32[1, 2], f32[2], f32[2], f32[3], f32[2])");
  CHECK(inferError("batch_norm", {tf32({1, 2}), tf32({2, 1}), tf32({2}), tf32({2}), tf32({2})}) ==
        "batch_norm: argument 1 ('gamma') must have shape [2], got f32[2, 1] "
        "(inputs: f32[1, 2], f32[2, 1], f32[2], f32[2], f32[2])");
  Type i2 = tt(DType::I64, {2});
  CHECK(inferError("batch_norm", {tt(DType::I64, {1, 2}), i2, i2, i2, i2}) ==
        "batch_norm: argument 0 must be a float tensor, got i64[1, 2] "
        "(inputs: i64[1, 2], i64[2], i64[2], i64[2], i64[2])");
  CHECK(inferError("batch_norm", {tf32({1, 2}), c3, c3, c3, c3}, {{"axis", i64v(2)}}) ==
        "batch_norm: attribute 'axis' = 2 is out of range for rank 2 (expected -2..1) "
        "(inputs: f32[1, 2], f32[3], f32[3], f32[3], f32[3])");
}

TEST_CASE("batch_norm kernel", "[ops][batch_norm]") {
  // mean [1, 2], var [4, 0.25] (std 2, 0.5), gamma [2, 1], beta [0, 10], epsilon 0:
  //   ch0 x = [1, 2]: (1-1)/2*2 = 0, (2-1)/2*2 = 1
  //   ch1 x = [3, 4]: (3-2)/0.5 + 10 = 12, (4-2)/0.5 + 10 = 14
  Tensor gamma = f32({2}, {2, 1}), beta = f32({2}, {0, 10});
  Tensor mean = f32({2}, {1, 2}), var = f32({2}, {4, 0.25});
  requireClose(run1("batch_norm", {f32({1, 2, 1, 2}, {1, 2, 3, 4}), gamma, beta, mean, var},
                    {{"epsilon", 0.0}}),
               f32({1, 2, 1, 2}, {0, 1, 12, 14}));
  // axis -1 on [[1, 2], [3, 4]]: column c uses channel c.
  //   [1 -> 0, 2 -> (2-2)/0.5 + 10 = 10; 3 -> (3-1)/2*2 = 2, 4 -> 14]
  requireClose(run1("batch_norm", {f32({2, 2}, {1, 2, 3, 4}), gamma, beta, mean, var},
                    {{"epsilon", 0.0}, {"axis", i64v(-1)}}),
               f32({2, 2}, {0, 10, 2, 14}));
  // Default epsilon 1e-5: (3 - 1) / sqrt(1 + 1e-5)
  Tensor one = f32({1}, {1}), zero = f32({1}, {0});
  requireClose(run1("batch_norm", {f32({1, 1, 1, 1}, {3}), one, zero, one, one}),
               f32({1, 1, 1, 1}, {2 / std::sqrt(1.00001)}));
}

//===----------------------------------------------------------------------===//
// layer_norm
//===----------------------------------------------------------------------===//

TEST_CASE("layer_norm type inference and errors", "[ops][layer_norm]") {
  CHECK(typeOf("layer_norm", {tf32({2, 5, 8}), tf32({8}), tf32({8})}) == "f32[2, 5, 8]");
  CHECK(typeOf("layer_norm", {tf32({2, 5, 8}), tf32({5, 8}), tf32({1})}, {{"axis", i64v(1)}}) ==
        "f32[2, 5, 8]");
  CHECK(typeOf("layer_norm", {tf32({2, 5, 8}), tf32({8})}) == "f32[2, 5, 8]");
  CHECK(inferError("layer_norm", {tf32({4, 2}), tf32({3}), tf32({2})}) ==
        "layer_norm: argument 1 ('gamma') shape [3] does not broadcast to normalized shape [2] "
        "(inputs: f32[4, 2], f32[3], f32[2])");
  CHECK(inferError("layer_norm", {tf32({4, 2}), tf32({2}), tf32({4, 2})}) ==
        "layer_norm: argument 2 ('beta') shape [4, 2] does not broadcast to normalized shape "
        "[2] (inputs: f32[4, 2], f32[2], f32[4, 2])");
  CHECK(inferError("layer_norm", {tf32({4, 2}), tf32({2}), tf32({2})}, {{"axis", i64v(-3)}}) ==
        "layer_norm: attribute 'axis' = -3 is out of range for rank 2 (expected -2..1) "
        "(inputs: f32[4, 2], f32[2], f32[2])");
  Type i2 = tt(DType::I32, {2});
  CHECK(inferError("layer_norm", {tt(DType::I32, {4, 2}), i2, i2}) ==
        "layer_norm: argument 0 must be a float tensor, got i32[4, 2] "
        "(inputs: i32[4, 2], i32[2], i32[2])");
}

TEST_CASE("layer_norm kernel", "[ops][layer_norm]") {
  // Rows [1, 3] (mean 2, var 1) and [0, 8] (mean 4, var 16) both normalise to [-1, 1];
  // gamma [1, 2], beta [0.5, 1] -> [-0.5, 3].
  requireClose(run1("layer_norm", {f32({2, 2}, {1, 3, 0, 8}), f32({2}, {1, 2}), f32({2}, {0.5, 1})},
                    {{"epsilon", 0.0}}),
               f32({2, 2}, {-0.5, 3, -0.5, 3}));
  // axis 1 on [1, 2, 2] = [2, 6, 4, 4]: mean 4, deviations [-2, 2, 0, 0], var 2:
  //   normalised [-sqrt2, sqrt2, 0, 0]; gamma [1, 10] broadcasts over the last dim,
  //   beta [0.5] over everything.
  double r2 = std::sqrt(2.0);
  requireClose(run1("layer_norm",
                    {f32({1, 2, 2}, {2, 6, 4, 4}), f32({2}, {1, 10}), f32({1}, {0.5})},
                    {{"epsilon", 0.0}, {"axis", i64v(1)}}),
               f32({1, 2, 2}, {0.5 - r2, 0.5 + 10 * r2, 0.5, 0.5}));
  // No beta, default epsilon: [1, 3] -> [-1, 1] / sqrt(1 + 1e-5)
  double s = 1 / std::sqrt(1.00001);
  requireClose(run1("layer_norm", {f32({1, 2}, {1, 3}), f32({2}, {1, 1})}), f32({1, 2}, {-s, s}));
}

//===----------------------------------------------------------------------===//
// max_pool2d
//===----------------------------------------------------------------------===//

TEST_CASE("max_pool2d type inference", "[ops][max_pool2d]") {
  // (32 + 2 - 3) / 2 + 1 = 16
  CHECK(typeOf("max_pool2d", {tf32({1, 3, 32, 32})},
               {{"pool_size", ints({3, 3})},
                {"strides", ints({2, 2})},
                {"pads", ints({1, 1, 1, 1})}}) == "f32[1, 3, 16, 16]");
  // 5x5, pool 2, stride 2: floor 2, ceil 3
  CHECK(typeOf("max_pool2d", {tf32({1, 1, 5, 5})},
               {{"pool_size", ints({2, 2})}, {"strides", ints({2, 2})}}) == "f32[1, 1, 2, 2]");
  CHECK(typeOf("max_pool2d", {tf32({1, 1, 5, 5})},
               {{"pool_size", ints({2, 2})}, {"strides", ints({2, 2})}, {"ceil_mode", true}}) ==
        "f32[1, 1, 3, 3]");
  // W = 6, pool 2, stride 3, ceil: ceil(4 / 3) + 1 = 3, but the third window would start
  // at 6 (past the input), so it is dropped -> 2.
  CHECK(typeOf("max_pool2d", {tf32({1, 1, 1, 6})},
               {{"pool_size", ints({1, 2})}, {"strides", ints({1, 3})}, {"ceil_mode", true}}) ==
        "f32[1, 1, 1, 2]");
  // dilation 2: extent 5 -> 8 - 5 + 1 = 4
  CHECK(typeOf("max_pool2d", {tt(DType::U8, {1, 1, 8, 8})},
               {{"pool_size", ints({3, 3})}, {"dilation", ints({2, 2})}}) == "u8[1, 1, 4, 4]");
}

TEST_CASE("max_pool2d type errors", "[ops][max_pool2d]") {
  Type x = tf32({1, 1, 4, 4});
  CHECK(inferError("max_pool2d", {x}, {{"pool_size", ints({2, 2, 2})}}) ==
        "max_pool2d: attribute 'pool_size' must have 2 values, got 3 (inputs: f32[1, 1, 4, 4])");
  CHECK(inferError("max_pool2d", {x}, {{"pool_size", ints({0, 2})}}) ==
        "max_pool2d: attribute 'pool_size' must be positive, got [0, 2] "
        "(inputs: f32[1, 1, 4, 4])");
  CHECK(inferError("max_pool2d", {x}, {{"pool_size", ints({2, 2})}, {"strides", ints({2})}}) ==
        "max_pool2d: attribute 'strides' must have 2 values, got 1 (inputs: f32[1, 1, 4, 4])");
  CHECK(inferError("max_pool2d", {x}, {{"pool_size", ints({5, 2})}}) ==
        "max_pool2d: computed output size [0, 3] is not positive (inputs: f32[1, 1, 4, 4])");
  CHECK(inferError("max_pool2d", {tf32({1, 4, 4})}, {{"pool_size", ints({2, 2})}}) ==
        "max_pool2d: argument 0 ('data') must have rank 4, got f32[1, 4, 4] "
        "(inputs: f32[1, 4, 4])");
  CHECK(inferError("max_pool2d", {tt(DType::Bool, {1, 1, 4, 4})}, {{"pool_size", ints({2, 2})}}) ==
        "max_pool2d: argument 0 must be a numeric tensor, got bool[1, 1, 4, 4] "
        "(inputs: bool[1, 1, 4, 4])");
}

TEST_CASE("max_pool2d kernel", "[ops][max_pool2d]") {
  // 4x4 = 1..16, pool 2 stride 2: window maxima 6, 8, 14, 16
  requireClose(run1("max_pool2d", {iota({1, 1, 4, 4})},
                    {{"pool_size", ints({2, 2})}, {"strides", ints({2, 2})}}),
               f32({1, 1, 2, 2}, {6, 8, 14, 16}));
  // Padded positions never win: all-negative input, pool 3, pads 1 -> every window sees all
  // four elements, max -1.
  requireClose(run1("max_pool2d", {f32({1, 1, 2, 2}, {-1, -2, -3, -4})},
                    {{"pool_size", ints({3, 3})}, {"pads", ints({1, 1, 1, 1})}}),
               f32({1, 1, 2, 2}, {-1, -1, -1, -1}));
  // dilation 2 on 3x3: only the corners 1, 2, 3, 4 are taps (the 9s are not).
  requireClose(run1("max_pool2d", {f32({1, 1, 3, 3}, {1, 9, 2, 9, 9, 9, 3, 9, 4})},
                    {{"pool_size", ints({2, 2})}, {"dilation", ints({2, 2})}}),
               f32({1, 1, 1, 1}, {4}));
  // Integers: int8 with negatives.
  Tensor xi = Tensor::fromInts(DType::I8, {1, 1, 2, 2}, std::vector<int64_t>{-5, 3, 7, -2});
  Tensor yi = run1("max_pool2d", {xi}, {{"pool_size", ints({2, 1})}});
  CHECK(yi.dtype() == DType::I8);
  CHECK(yi.toInts() == std::vector<int64_t>{7, 3});
}

TEST_CASE("max_pool2d kernel: ceil_mode", "[ops][max_pool2d]") {
  // 3x3 = 1..9, pool 2 stride 2: floor -> [5]; ceil keeps the partial windows
  // (rows/cols {0,1} and {2}) -> [[5, 6], [8, 9]].
  Attrs attrs{{"pool_size", ints({2, 2})}, {"strides", ints({2, 2})}};
  requireClose(run1("max_pool2d", {iota({1, 1, 3, 3})}, attrs), f32({1, 1, 1, 1}, {5}));
  attrs.set("ceil_mode", true);
  requireClose(run1("max_pool2d", {iota({1, 1, 3, 3})}, attrs), f32({1, 1, 2, 2}, {5, 6, 8, 9}));
  // W = 6, pool 2, stride 3: windows {0,1} and {3,4}; the window at 6 is dropped.
  requireClose(run1("max_pool2d", {f32({1, 1, 1, 6}, {1, 5, 2, 7, 3, 9})},
                    {{"pool_size", ints({1, 2})}, {"strides", ints({1, 3})}, {"ceil_mode", true}}),
               f32({1, 1, 1, 2}, {5, 7}));
}

//===----------------------------------------------------------------------===//
// avg_pool2d
//===----------------------------------------------------------------------===//

TEST_CASE("avg_pool2d type inference and errors", "[ops][avg_pool2d]") {
  CHECK(typeOf("avg_pool2d", {tf32({2, 3, 7, 7})},
               {{"pool_size", ints({3, 3})}, {"strides", ints({2, 2})}}) == "f32[2, 3, 3, 3]");
  CHECK(typeOf("avg_pool2d", {tf32({2, 3, 4, 4})},
               {{"pool_size", ints({2, 2})},
                {"strides", ints({2, 2})},
                {"pads", ints({1, 1, 0, 0})},
                {"ceil_mode", true}}) == "f32[2, 3, 3, 3]");
  CHECK(inferError("avg_pool2d", {tt(DType::I32, {1, 1, 4, 4})}, {{"pool_size", ints({2, 2})}}) ==
        "avg_pool2d: argument 0 must be a float tensor, got i32[1, 1, 4, 4] "
        "(inputs: i32[1, 1, 4, 4])");
  CHECK(inferError("avg_pool2d", {tf32({1, 1, 4, 4})},
                   {{"pool_size", ints({2, 2})}, {"pads", ints({1, 1, 1, -1})}}) ==
        "avg_pool2d: attribute 'pads' must be non-negative, got [1, 1, 1, -1] "
        "(inputs: f32[1, 1, 4, 4])");
  CHECK(inferError("avg_pool2d", {tf32({1, 1, 4, 4})},
                   {{"pool_size", ints({2, 2})}, {"dilation", ints({0, 1})}}) ==
        "avg_pool2d: attribute 'dilation' must be positive, got [0, 1] "
        "(inputs: f32[1, 1, 4, 4])");
}

TEST_CASE("avg_pool2d kernel", "[ops][avg_pool2d]") {
  // 3x3 = 1..9, pool 2, stride 1: means of {1,2,4,5}, {2,3,5,6}, {4,5,7,8}, {5,6,8,9}
  requireClose(run1("avg_pool2d", {iota({1, 1, 3, 3})}, {{"pool_size", ints({2, 2})}}),
               f32({1, 1, 2, 2}, {3, 4, 6, 7}));
  // dilation 2: the corners (1 + 3 + 7 + 9) / 4 = 5
  requireClose(run1("avg_pool2d", {iota({1, 1, 3, 3})},
                    {{"pool_size", ints({2, 2})}, {"dilation", ints({2, 2})}}),
               f32({1, 1, 1, 1}, {5}));
}

TEST_CASE("avg_pool2d kernel: pads and count_include_pad", "[ops][avg_pool2d]") {
  // 3x3 = 1..9, pool 2, stride 2, pads 1: windows rows {-1,0}, {1,2} x cols {-1,0}, {1,2}.
  //   real elements: {1}, {2,3}, {4,7}, {5,6,8,9}
  //   exclude pad: 1, 2.5, 5.5, 7;  include pad (divisor 4): 0.25, 1.25, 2.75, 7
  Attrs attrs{{"pool_size", ints({2, 2})}, {"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}};
  requireClose(run1("avg_pool2d", {iota({1, 1, 3, 3})}, attrs),
               f32({1, 1, 2, 2}, {1, 2.5, 5.5, 7}));
  attrs.set("count_include_pad", true);
  requireClose(run1("avg_pool2d", {iota({1, 1, 3, 3})}, attrs),
               f32({1, 1, 2, 2}, {0.25, 1.25, 2.75, 7}));
}

TEST_CASE("avg_pool2d kernel: ceil_mode with count_include_pad both ways", "[ops][avg_pool2d]") {
  // 4x4 with x[r][c] = 4r + c + 1, pool 2, stride 2, pads top=1 left=1 (bottom/right 0),
  // ceil_mode: ceil((4 + 1 - 2) / 2) + 1 = 3 windows per dim, starting at -1, 1, 3.
  // The padded input spans [-1, 4), so the last window {3, 4} is clipped to {3}.
  //   per dim: real taps {0}, {1,2}, {3} (counts 1, 2, 1);
  //            taps inside padded input {-1,0}, {1,2}, {3} (counts 2, 2, 1)
  //   window sums: [1, 2+3, 4 / 5+9, 6+7+10+11, 8+12 / 13, 14+15, 16]
  //              = [1, 5, 4 / 14, 34, 20 / 13, 29, 16]
  Attrs attrs{{"pool_size", ints({2, 2})},
              {"strides", ints({2, 2})},
              {"pads", ints({1, 1, 0, 0})},
              {"ceil_mode", true}};
  requireClose(run1("avg_pool2d", {iota({1, 1, 4, 4})}, attrs),
               f32({1, 1, 3, 3}, {1, 2.5, 4, 7, 8.5, 10, 13, 14.5, 16}));
  attrs.set("count_include_pad", true);
  requireClose(run1("avg_pool2d", {iota({1, 1, 4, 4})}, attrs),
               f32({1, 1, 3, 3}, {0.25, 1.25, 2, 3.5, 8.5, 10, 6.5, 14.5, 16}));
  // Without pads, ceil_mode on 3x3 (pool 2, stride 2): windows {0,1}, {2} per dim:
  //   [mean(1,2,4,5), mean(3,6) / mean(7,8), 9] = [3, 4.5, 7.5, 9] either way.
  Attrs plain{{"pool_size", ints({2, 2})}, {"strides", ints({2, 2})}, {"ceil_mode", true}};
  requireClose(run1("avg_pool2d", {iota({1, 1, 3, 3})}, plain),
               f32({1, 1, 2, 2}, {3, 4.5, 7.5, 9}));
  plain.set("count_include_pad", true);
  requireClose(run1("avg_pool2d", {iota({1, 1, 3, 3})}, plain),
               f32({1, 1, 2, 2}, {3, 4.5, 7.5, 9}));
}

//===----------------------------------------------------------------------===//
// global_avg_pool2d, global_max_pool2d
//===----------------------------------------------------------------------===//

TEST_CASE("global_avg_pool2d", "[ops][global_avg_pool2d]") {
  CHECK(typeOf("global_avg_pool2d", {tf32({2, 3, 7, 7})}) == "f32[2, 3, 1, 1]");
  CHECK(inferError("global_avg_pool2d", {tf32({2, 3, 7})}) ==
        "global_avg_pool2d: argument 0 ('data') must have rank 4, got f32[2, 3, 7] "
        "(inputs: f32[2, 3, 7])");
  CHECK(inferError("global_avg_pool2d", {tt(DType::I32, {2, 3, 7, 7})}) ==
        "global_avg_pool2d: argument 0 must be a float tensor, got i32[2, 3, 7, 7] "
        "(inputs: i32[2, 3, 7, 7])");
  // ch0 [1,2,3,4] -> 2.5, ch1 [-1,-5,0,2] -> -1
  requireClose(run1("global_avg_pool2d", {f32({1, 2, 2, 2}, {1, 2, 3, 4, -1, -5, 0, 2})}),
               f32({1, 2, 1, 1}, {2.5, -1}));
}

TEST_CASE("global_max_pool2d", "[ops][global_max_pool2d]") {
  CHECK(typeOf("global_max_pool2d", {tf32({2, 3, 7, 7})}) == "f32[2, 3, 1, 1]");
  CHECK(inferError("global_max_pool2d", {tf32({3, 7})}) ==
        "global_max_pool2d: argument 0 ('data') must have rank 4, got f32[3, 7] "
        "(inputs: f32[3, 7])");
  CHECK(inferError("global_max_pool2d", {tt(DType::Bool, {1, 1, 2, 2})}) ==
        "global_max_pool2d: argument 0 must be a numeric tensor, got bool[1, 1, 2, 2] "
        "(inputs: bool[1, 1, 2, 2])");
  requireClose(run1("global_max_pool2d", {f32({1, 2, 2, 2}, {1, 2, 3, 4, -1, -5, 0, 2})}),
               f32({1, 2, 1, 1}, {4, 2}));
  Tensor xi = Tensor::fromInts(DType::I32, {2, 1, 1, 3}, std::vector<int64_t>{-7, -3, -9, 4, 0, 1});
  CHECK(run1("global_max_pool2d", {xi}).toInts() == std::vector<int64_t>{-3, 4});
}

//===----------------------------------------------------------------------===//
// softmax, log_softmax
//===----------------------------------------------------------------------===//

TEST_CASE("softmax type inference and errors", "[ops][softmax]") {
  CHECK(typeOf("softmax", {tf32({2, 3})}) == "f32[2, 3]");
  CHECK(typeOf("softmax", {tt(DType::F16, {2, 3})}, {{"axis", i64v(0)}}) == "f16[2, 3]");
  CHECK(inferError("softmax", {tf32({2, 3})}, {{"axis", i64v(2)}}) ==
        "softmax: attribute 'axis' = 2 is out of range for rank 2 (expected -2..1) "
        "(inputs: f32[2, 3])");
  CHECK(inferError("softmax", {tt(DType::I32, {2, 3})}) ==
        "softmax: argument 0 must be a float tensor, got i32[2, 3] (inputs: i32[2, 3])");
}

TEST_CASE("softmax kernel", "[ops][softmax]") {
  double l2 = std::log(2.0), l3 = std::log(3.0), l5 = std::log(5.0), l7 = std::log(7.0);
  // Rows: exp = [1, 2, 5] -> [1/8, 2/8, 5/8]; [0, 0, 0] -> 1/3 each.
  requireClose(run1("softmax", {f32({2, 3}, {0, l2, l5, 0, 0, 0})}),
               f32({2, 3}, {0.125, 0.25, 0.625, 1.0 / 3, 1.0 / 3, 1.0 / 3}));
  // axis 0 on [[0, 0], [ln3, ln7]]: columns [1, 3] / 4 and [1, 7] / 8.
  requireClose(run1("softmax", {f32({2, 2}, {0, 0, l3, l7})}, {{"axis", i64v(0)}}),
               f32({2, 2}, {0.25, 0.125, 0.75, 0.875}));
  // Large values do not overflow.
  requireClose(run1("softmax", {f32({1, 2}, {1000, 1000})}), f32({1, 2}, {0.5, 0.5}));
}

TEST_CASE("log_softmax type inference and errors", "[ops][log_softmax]") {
  CHECK(typeOf("log_softmax", {tf32({4})}) == "f32[4]");
  CHECK(inferError("log_softmax", {tf32({4})}, {{"axis", i64v(-2)}}) ==
        "log_softmax: attribute 'axis' = -2 is out of range for rank 1 (expected -1..0) "
        "(inputs: f32[4])");
  CHECK(inferError("log_softmax", {tt(DType::I64, {4})}) ==
        "log_softmax: argument 0 must be a float tensor, got i64[4] (inputs: i64[4])");
}

TEST_CASE("log_softmax kernel", "[ops][log_softmax]") {
  double l3 = std::log(3.0), l4 = std::log(4.0), l2 = std::log(2.0);
  // [0, ln3]: softmax [1/4, 3/4] -> [-ln4, ln3 - ln4]; [1000, 1000] -> [-ln2, -ln2]
  requireClose(run1("log_softmax", {f32({2, 2}, {0, l3, 1000, 1000})}),
               f32({2, 2}, {-l4, l3 - l4, -l2, -l2}));
  // axis 0: columns [0, ln3] and [ln3, 0]
  requireClose(run1("log_softmax", {f32({2, 2}, {0, l3, l3, 0})}, {{"axis", i64v(0)}}),
               f32({2, 2}, {-l4, l3 - l4, l3 - l4, -l4}));
}

//===----------------------------------------------------------------------===//
// resize2d
//===----------------------------------------------------------------------===//

TEST_CASE("resize2d type inference", "[ops][resize2d]") {
  CHECK(typeOf("resize2d", {tf32({1, 3, 2, 2})}, {{"size", ints({4, 6})}}) == "f32[1, 3, 4, 6]");
  CHECK(typeOf("resize2d", {tt(DType::U8, {1, 3, 8, 8})},
               {{"size", ints({4, 4})}, {"nearest_mode", str("floor")}}) == "u8[1, 3, 4, 4]");
  CHECK(typeOf("resize2d", {tf32({1, 1, 2, 2})},
               {{"size", ints({3, 3})},
                {"scales", floats({2, 2})},
                {"mode", str("cubic")},
                {"coordinate_transformation_mode", str("align_corners")}}) == "f32[1, 1, 3, 3]");
}

TEST_CASE("resize2d type errors", "[ops][resize2d]") {
  Type x = tf32({1, 1, 2, 2});
  CHECK(inferError("resize2d", {x}, {{"size", ints({4, 4})}, {"mode", str("bilinear")}}) ==
        "resize2d: attribute 'mode' = \"bilinear\" is not one of: nearest, linear, cubic "
        "(inputs: f32[1, 1, 2, 2])");
  CHECK(inferError(
            "resize2d", {x},
            {{"size", ints({4, 4})}, {"coordinate_transformation_mode", str("crop_and_resize")}}) ==
        "resize2d: attribute 'coordinate_transformation_mode' = \"crop_and_resize\" is not "
        "one of: half_pixel, half_pixel_symmetric, pytorch_half_pixel, align_corners, "
        "asymmetric, tf_half_pixel_for_nn, tf_crop_and_resize (inputs: f32[1, 1, 2, 2])");
  CHECK(inferError("resize2d", {x},
                   {{"size", ints({4, 4})},
                    {"coordinate_transformation_mode", str("tf_crop_and_resize")}}) ==
        "resize2d: attribute 'roi' must have 4 values [h0, w0, h1, w1] for tf_crop_and_resize, "
        "got 0 (inputs: f32[1, 1, 2, 2])");
  CHECK(inferError("resize2d", {x}, {{"size", ints({4, 4})}, {"nearest_mode", str("round")}}) ==
        "resize2d: attribute 'nearest_mode' = \"round\" is not one of: round_prefer_floor, "
        "round_prefer_ceil, floor, ceil (inputs: f32[1, 1, 2, 2])");
  CHECK(inferError("resize2d", {x}, {{"size", ints({1, 4, 4})}}) ==
        "resize2d: attribute 'size' must have 2 values, got 3 (inputs: f32[1, 1, 2, 2])");
  CHECK(inferError("resize2d", {x}, {{"size", ints({0, 4})}}) ==
        "resize2d: attribute 'size' must be positive, got [0, 4] (inputs: f32[1, 1, 2, 2])");
  CHECK(inferError("resize2d", {x}, {{"size", ints({4, 4})}, {"scales", floats({2})}}) ==
        "resize2d: attribute 'scales' must have 0 or 2 values, got 1 "
        "(inputs: f32[1, 1, 2, 2])");
  CHECK_THAT(inferError("resize2d", {x}, {{"size", ints({4, 4})}, {"scales", floats({2, -1})}}),
             Catch::StartsWith("resize2d: attribute 'scales' must be positive, got [2"));
  CHECK(inferError("resize2d", {tt(DType::I32, {1, 1, 2, 2})},
                   {{"size", ints({4, 4})}, {"mode", str("linear")}}) ==
        "resize2d: argument 0 must be a float tensor, got i32[1, 1, 2, 2] "
        "(inputs: i32[1, 1, 2, 2])");
  CHECK(inferError("resize2d", {tf32({2, 2})}, {{"size", ints({4, 4})}}) ==
        "resize2d: argument 0 ('data') must have rank 4, got f32[2, 2] (inputs: f32[2, 2])");
}

namespace {
const Tensor kX22 = Tensor::fromDoubles(DType::F32, {1, 1, 2, 2}, std::vector<double>{1, 2, 3, 4});

Tensor resize(const Tensor &x, Shape size, Attrs attrs) {
  attrs.set("size", ints(std::move(size)));
  return run1("resize2d", {x}, attrs);
}
} // namespace

TEST_CASE("resize2d kernel: nearest", "[ops][resize2d]") {
  // asymmetric + floor: x_ori = x / 2 = 0, 0.5, 1, 1.5 -> 0, 0, 1, 1
  Tensor blocks = f32({1, 1, 4, 4}, {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
  requireClose(resize(kX22, {4, 4},
                      {{"coordinate_transformation_mode", str("asymmetric")},
                       {"nearest_mode", str("floor")}}),
               blocks);
  // Defaults (half_pixel, round_prefer_floor): x_ori = -0.25, 0.25, 0.75, 1.25 -> 0, 0, 1, 1
  requireClose(resize(kX22, {4, 4}, {}), blocks);
  // asymmetric + round_prefer_ceil: 0, 0.5 -> 1, 1, 1.5 -> 2 (edge-clamped to 1)
  requireClose(resize(kX22, {4, 4},
                      {{"coordinate_transformation_mode", str("asymmetric")},
                       {"nearest_mode", str("round_prefer_ceil")}}),
               f32({1, 1, 4, 4}, {1, 2, 2, 2, 3, 4, 4, 4, 3, 4, 4, 4, 3, 4, 4, 4}));
  // tf_half_pixel_for_nn + round_prefer_floor: x_ori = 0.25, 0.75, 1.25, 1.75 -> 0, 1, 1, 1
  requireClose(
      resize(kX22, {4, 4}, {{"coordinate_transformation_mode", str("tf_half_pixel_for_nn")}}),
      f32({1, 1, 4, 4}, {1, 2, 2, 2, 3, 4, 4, 4, 3, 4, 4, 4, 3, 4, 4, 4}));
  // Downsampling 4 -> 2 with asymmetric + ceil: x_ori = 0, 2 -> 0, 2 (integral stays).
  requireClose(resize(iota({1, 1, 4, 4}), {2, 2},
                      {{"coordinate_transformation_mode", str("asymmetric")},
                       {"nearest_mode", str("ceil")}}),
               f32({1, 1, 2, 2}, {1, 3, 9, 11}));
  // Integers are copied exactly.
  Tensor xi =
      Tensor::fromInts(DType::I64, {1, 1, 1, 2}, std::vector<int64_t>{(int64_t(1) << 60) + 1, -3});
  Tensor yi = resize(xi, {1, 4}, {});
  CHECK(yi.toInts() ==
        std::vector<int64_t>{(int64_t(1) << 60) + 1, (int64_t(1) << 60) + 1, -3, -3});
}

TEST_CASE("resize2d kernel: linear", "[ops][resize2d]") {
  Attrs linear{{"mode", str("linear")}};
  // half_pixel: x_ori = -0.25, 0.25, 0.75, 1.25 -> weights give [1, 1.25, 1.75, 2] along
  // each row of [1, 2]; rows mix row0 / row1 (= row0 + 2) the same way: +0, +0.5, +1.5, +2.
  requireClose(resize(kX22, {4, 4}, linear),
               // clang-format off
               f32({1, 1, 4, 4}, {1,   1.25, 1.75, 2,
                                  1.5, 1.75, 2.25, 2.5,
                                  2.5, 2.75, 3.25, 3.5,
                                  3,   3.25, 3.75, 4}));
  // clang-format on
  // align_corners: x_ori = x / 3 -> [1, 4/3, 5/3, 2], rows + 0, 2/3, 4/3, 2
  Attrs ac = linear;
  ac.set("coordinate_transformation_mode", str("align_corners"));
  requireClose(resize(kX22, {4, 4}, ac),
               // clang-format off
               f32({1, 1, 4, 4}, {1,      4. / 3,  5. / 3,  2,
                                  5. / 3, 2,       7. / 3,  8. / 3,
                                  7. / 3, 8. / 3,  3,       10. / 3,
                                  3,      10. / 3, 11. / 3, 4}));
  // clang-format on
  // asymmetric: x_ori = 0, 0.5, 1, 1.5 -> [1, 1.5, 2, 2], rows + 0, 1, 2, 2
  Attrs as = linear;
  as.set("coordinate_transformation_mode", str("asymmetric"));
  requireClose(resize(kX22, {4, 4}, as),
               f32({1, 1, 4, 4}, {1, 1.5, 2, 2, 2, 2.5, 3, 3, 3, 3.5, 4, 4, 3, 3.5, 4, 4}));
}

TEST_CASE("resize2d kernel: linear to 1x1 and explicit scales", "[ops][resize2d]") {
  Attrs linear{{"mode", str("linear")}};
  // half_pixel to 1x1: x_ori = 0.5 / 0.5 - 0.5 = 0.5 in both dims -> mean 2.5
  requireClose(resize(kX22, {1, 1}, linear), f32({1, 1, 1, 1}, {2.5}));
  // pytorch_half_pixel to 1x1 maps to x_ori = -0.5 -> the first element
  Attrs pt = linear;
  pt.set("coordinate_transformation_mode", str("pytorch_half_pixel"));
  requireClose(resize(kX22, {1, 1}, pt), f32({1, 1, 1, 1}, {1}));
  // size 3x3 with scales [2, 2]: asymmetric x_ori = x / 2 = 0, 0.5, 1 (not x / 1.5).
  Attrs sc = linear;
  sc.set("scales", floats({2, 2}));
  sc.set("coordinate_transformation_mode", str("asymmetric"));
  Tensor expected = f32({1, 1, 3, 3}, {1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4});
  requireClose(resize(kX22, {3, 3}, sc), expected);
  // half_pixel_symmetric with size 3 and scale 2: output_width 4, adjustment 3/4,
  // offset 1 * (1 - 3/4) = 0.25: x_ori = 0.25 + (x + 0.5) / 2 - 0.5 = x / 2 -> same result.
  sc.set("coordinate_transformation_mode", str("half_pixel_symmetric"));
  requireClose(resize(kX22, {3, 3}, sc), expected);
  // half_pixel with the same scales: x_ori = -0.25, 0.25, 0.75 -> [1, 1.25, 1.75],
  // rows + 0, 0.5, 1.5.
  sc.set("coordinate_transformation_mode", str("half_pixel"));
  requireClose(resize(kX22, {3, 3}, sc),
               f32({1, 1, 3, 3}, {1, 1.25, 1.75, 1.5, 1.75, 2.25, 2.5, 2.75, 3.25}));
}

TEST_CASE("resize2d kernel: cubic", "[ops][resize2d]") {
  // 1-D along W (H stays 1 -> 1, an identity). Keys weights for ratio r, a = -0.75:
  //   r = 0.5:  [-0.09375, 0.59375, 0.59375, -0.09375]
  //   r = 0.25: [-0.10546875, 0.87890625, 0.26171875, -0.03515625] (reversed for 0.75)
  // on neighbours floor(x)-1 .. floor(x)+2, edge-clamped.
  Attrs cubic{{"mode", str("cubic")}, {"coordinate_transformation_mode", str("asymmetric")}};
  // [1, 2, 4, 8] -> 8, x_ori = x / 2:
  //   x=1 (0.5) on [1,1,2,4]: -0.09375 + 0.59375 + 1.1875 - 0.375 = 1.3125
  //   x=3 (1.5) on [1,2,4,8]: -0.09375 + 1.1875 + 2.375 - 0.75 = 2.71875
  //   x=5 (2.5) on [2,4,8,8]: -0.1875 + 2.375 + 4.75 - 0.75 = 6.1875
  //   x=7 (3.5) on [4,8,8,8]: -0.375 + 4.75 + 4.75 - 0.75 = 8.375
  Tensor x = f32({1, 1, 1, 4}, {1, 2, 4, 8});
  requireClose(resize(x, {1, 8}, cubic),
               f32({1, 1, 1, 8}, {1, 1.3125, 2, 2.71875, 4, 6.1875, 8, 8.375}));
  // [1, 2] -> 8, x_ori = x / 4 (ratios 0.25, 0.5, 0.75):
  //   x=1 on [1,1,2,2]: 0.7734375 + 0.5234375 - 0.0703125 = 1.2265625
  //   x=2 on [1,1,2,2]: 0.5 + 1.1875 - 0.1875 = 1.5
  //   x=3 on [1,1,2,2]: 0.2265625 + 1.7578125 - 0.2109375 = 1.7734375
  //   x=5 on [1,2,2,2]: -0.10546875 + 2 * 1.10546875 = 2.10546875
  //   x=6 on [1,2,2,2]: -0.09375 + 2 * 1.09375 = 2.09375
  //   x=7 on [1,2,2,2]: -0.03515625 + 2 * 1.03515625 = 2.03515625
  requireClose(
      resize(f32({1, 1, 1, 2}, {1, 2}), {1, 8}, cubic),
      f32({1, 1, 1, 8}, {1, 1.2265625, 1.5, 1.7734375, 2, 2.10546875, 2.09375, 2.03515625}));
  // cubic_coeff_a = -0.5: r = 0.5 weights [-0.0625, 0.5625, 0.5625, -0.0625]
  //   x=1: -0.0625 + 0.5625 + 1.125 - 0.25 = 1.375;  x=3: -0.0625 + 1.125 + 2.25 - 0.5 = 2.8125
  //   x=5: -0.125 + 2.25 + 4.5 - 0.5 = 6.125;        x=7: -0.25 + 4.5 + 4.5 - 0.5 = 8.25
  Attrs a5 = cubic;
  a5.set("cubic_coeff_a", -0.5);
  requireClose(resize(x, {1, 8}, a5), f32({1, 1, 1, 8}, {1, 1.375, 2, 2.8125, 4, 6.125, 8, 8.25}));
  // exclude_outside: outside neighbours get weight 0, the rest is renormalised.
  //   x=1: [0, .59375, .59375, -.09375] / 1.09375 on [-,1,2,4] = 1.40625 / 1.09375 = 9/7
  //   x=5: [-.09375, .59375, .59375, 0] / 1.09375 on [2,4,8,-] = 6.9375 / 1.09375 = 222/35
  //   x=7: [-.09375, .59375, 0, 0] / 0.5 on [4,8,-,-] = 4.375 / 0.5 = 8.75
  Attrs ex = cubic;
  ex.set("exclude_outside", true);
  requireClose(resize(x, {1, 8}, ex),
               f32({1, 1, 1, 8}, {1, 9. / 7, 2, 2.71875, 4, 222. / 35, 8, 8.75}));
}

TEST_CASE("resize2d kernel: bilinear weights are separable in 2-D", "[ops][resize2d]") {
  // 2x2 -> 3x3, align_corners: x_ori = 0, 0.5, 1 per dim; the centre is the mean 2.5,
  // edge midpoints are pair means.
  requireClose(
      resize(kX22, {3, 3},
             {{"mode", str("linear")}, {"coordinate_transformation_mode", str("align_corners")}}),
      f32({1, 1, 3, 3}, {1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4}));
  // Batch and channels are resized independently.
  Tensor x = f32({2, 1, 1, 2}, {0, 2, 10, 20});
  requireClose(
      resize(x, {1, 3},
             {{"mode", str("linear")}, {"coordinate_transformation_mode", str("align_corners")}}),
      f32({2, 1, 1, 3}, {0, 1, 2, 10, 15, 20}));
}

//===----------------------------------------------------------------------===//
// max_pool2d_indices
//===----------------------------------------------------------------------===//

TEST_CASE("max_pool2d_indices type inference and errors", "[ops][max_pool2d_indices]") {
  CHECK(typeOf("max_pool2d_indices", {tf32({2, 3, 5, 5})},
               {{"pool_size", ints({2, 2})}, {"strides", ints({2, 2})}}) == "i64[2, 3, 2, 2]");
  CHECK(typeOf("max_pool2d_indices", {tt(DType::U8, {1, 1, 4, 4})},
               {{"pool_size", ints({3, 3})}, {"pads", ints({1, 1, 1, 1})}}) == "i64[1, 1, 4, 4]");
  CHECK(inferError("max_pool2d_indices", {tf32({1, 1, 4, 4})},
                   {{"pool_size", ints({2, 2})}, {"storage_order", i64v(2)}}) ==
        "max_pool2d_indices: attribute 'storage_order' must be 0 or 1, got 2 "
        "(inputs: f32[1, 1, 4, 4])");
  CHECK(inferError("max_pool2d_indices", {tf32({1, 4, 4})}, {{"pool_size", ints({2, 2})}}) ==
        "max_pool2d_indices: argument 0 ('data') must have rank 4, got f32[1, 4, 4] "
        "(inputs: f32[1, 4, 4])");
}

TEST_CASE("max_pool2d_indices kernel", "[ops][max_pool2d_indices]") {
  // 3x3 plane [[1, 9, 2], [8, 3, 7], [4, 6, 5]], pool 2, stride 1:
  // windows' maxima 9 (0,1), 9 (0,1), 8 (1,0), 7 (1,2).
  Tensor x = f32({1, 1, 3, 3}, {1, 9, 2, 8, 3, 7, 4, 6, 5});
  Attrs attrs{{"pool_size", ints({2, 2})}};
  SECTION("row-major: h*W + w") {
    CHECK(run1("max_pool2d_indices", {x}, attrs).toInts() == std::vector<int64_t>{1, 1, 3, 5});
  }
  SECTION("column-major: w*H + h") {
    attrs.set("storage_order", int64_t{1});
    CHECK(run1("max_pool2d_indices", {x}, attrs).toInts() == std::vector<int64_t>{3, 3, 1, 7});
  }
  SECTION("ties keep the first in window order; padding never wins; batch/channel offset") {
    // Two channels of 2x2: [[5, 5], [5, 5]] and [[-1, -2], [-3, -4]]; pool 3 with pads 1.
    Tensor y = f32({1, 2, 2, 2}, {5, 5, 5, 5, -1, -2, -3, -4});
    auto idx = run1("max_pool2d_indices", {y},
                    {{"pool_size", ints({3, 3})}, {"pads", ints({1, 1, 1, 1})}});
    // Channel 0: every window's first tap inside the input is (0, 0) -> 0.
    // Channel 1: -1 at (0, 0) wins everywhere -> offset 4 + 0.
    CHECK(idx.toInts() == std::vector<int64_t>{0, 0, 0, 0, 4, 4, 4, 4});
  }
}

TEST_CASE("resize2d kernel: tf_crop_and_resize", "[ops][resize2d]") {
  // 4x4 = 1..16, linear, size 3x3, roi h [0.4, 1.2], w [0.6, 1.7], extrapolation 10.
  // x_ori(h) = 0.4*3 + o*(0.8*3)/2 = 1.2, 2.4, 3.6 (outside);
  // x_ori(w) = 0.6*3 + o*(1.1*3)/2 = 1.8, 3.45 (outside), 5.1 (outside).
  // (1.2, 1.8): rows 1, 2 at w 1.8 -> 6.8, 10.8; 0.8*6.8 + 0.2*10.8 = 7.6.
  // (2.4, 1.8): rows 2, 3 -> 10.8, 14.8; 0.6*10.8 + 0.4*14.8 = 12.4.
  Tensor x = iota({1, 1, 4, 4});
  Tensor y = run1("resize2d", {x},
                  {{"size", ints({3, 3})},
                   {"mode", str("linear")},
                   {"coordinate_transformation_mode", str("tf_crop_and_resize")},
                   {"roi", floats({0.4, 0.6, 1.2, 1.7})},
                   {"extrapolation_value", 10.0}});
  requireClose(y, f32({1, 1, 3, 3}, {7.6, 10, 10, 12.4, 10, 10, 10, 10, 10}), 1e-5, 1e-5);
}

TEST_CASE("max pooling orders u64 values >= 2^63 as unsigned",
          "[ops][max_pool2d][global_max_pool2d][max_pool2d_indices]") {
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  Tensor x(DType::U64, {1, 1, 1, 3});
  x.setUInt(0, 3);
  x.setUInt(1, kMax);
  x.setUInt(2, uint64_t(1) << 63);
  CHECK(run1("max_pool2d", {x}, {{"pool_size", ints({1, 2})}}).getUInt(0) == kMax);
  CHECK(run1("max_pool2d", {x}, {{"pool_size", ints({1, 2})}}).getUInt(1) == kMax);
  CHECK(run1("global_max_pool2d", {x}).getUInt(0) == kMax);
  CHECK(run1("max_pool2d_indices", {x}, {{"pool_size", ints({1, 3})}}).toInts() ==
        std::vector<int64_t>{1});
}
