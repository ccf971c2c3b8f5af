//===- tests/unit/onnx_nn_converters_test.cpp - NN/tensor converters -----===//
//
// The ONNX nn and tensor converters run on constant inputs (NodeContext
// folds every call on constants, so the result is a constant) and are
// compared with direct loop implementations of the ONNX definitions: the
// 3-D convolution, transposed convolution and pooling decompositions, 1-D
// windows, ConvTranspose's output_shape, Hardmax ties; plus the error for a
// shape input that is not a constant.
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include "onnx_test_util.h"
#include "ir/symbol.h"

#include <array>
#include <random>

using namespace tessera;
using namespace tessera::frontend::onnx;
using tessera::test::countCalls;
using tessera::test::f32;
using tessera::test::i64;
using tessera::test::requireClose;

namespace {

using Ints = std::vector<int64_t>;
using AttrMap = test::OnnxAttrMap;

ir::Tensor randomTensor(ir::Shape shape, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<double> v(size_t(ir::numElements(shape)));
  for (double &x : v)
    x = dist(gen);
  return f32(std::move(shape), v);
}

/// Row-major flat index of a 5-D position.
int64_t at5(const ir::Shape &s, int64_t a, int64_t b, int64_t c, int64_t d, int64_t e) {
  return (((a * s[1] + b) * s[2] + c) * s[3] + d) * s[4] + e;
}

struct Win3 {
  std::array<int64_t, 3> k, s, d, p0, p1;
};

/// ONNX Conv, 3-D, by definition.
ir::Tensor naiveConv3d(const ir::Tensor &x, const ir::Tensor &w, const Win3 &win, int64_t group) {
  const ir::Shape &xs = x.shape(), &ws = w.shape();
  ir::Shape ys{xs[0], ws[0], 0, 0, 0};
  for (int i = 0; i < 3; ++i)
    ys[2 + size_t(i)] = (xs[2 + size_t(i)] + win.p0[size_t(i)] + win.p1[size_t(i)] -
                         (win.d[size_t(i)] * (ws[2 + size_t(i)] - 1) + 1)) /
                            win.s[size_t(i)] +
                        1;
  std::vector<double> y(size_t(ir::numElements(ys)), 0.0);
  int64_t cg = ws[1], og = ws[0] / group;
  for (int64_t n = 0; n < ys[0]; ++n)
    for (int64_t o = 0; o < ys[1]; ++o)
      for (int64_t z = 0; z < ys[2]; ++z)
        for (int64_t r = 0; r < ys[3]; ++r)
          for (int64_t q = 0; q < ys[4]; ++q) {
            double acc = 0;
            for (int64_t c = 0; c < cg; ++c)
              for (int64_t kz = 0; kz < ws[2]; ++kz)
                for (int64_t kr = 0; kr < ws[3]; ++kr)
                  for (int64_t kq = 0; kq < ws[4]; ++kq) {
                    int64_t iz = z * win.s[0] - win.p0[0] + kz * win.d[0];
                    int64_t ir_ = r * win.s[1] - win.p0[1] + kr * win.d[1];
                    int64_t iq = q * win.s[2] - win.p0[2] + kq * win.d[2];
                    if (iz < 0 || iz >= xs[2] || ir_ < 0 || ir_ >= xs[3] || iq < 0 || iq >= xs[4])
                      continue;
                    acc += x.getDouble(at5(xs, n, (o / og) * cg + c, iz, ir_, iq)) *
                           w.getDouble(at5(ws, o, c, kz, kr, kq));
                  }
            y[size_t(at5(ys, n, o, z, r, q))] = acc;
          }
  return ir::Tensor::fromDoubles(ir::DType::F32, ys, y);
}

/// ONNX ConvTranspose, 3-D, by definition (scatter into the full output,
/// then crop the pads; output_padding extends the end).
ir::Tensor naiveConvTranspose3d(const ir::Tensor &x, const ir::Tensor &w, const Win3 &win,
                                std::array<int64_t, 3> outPad, int64_t group) {
  const ir::Shape &xs = x.shape(), &ws = w.shape();
  ir::Shape full{xs[0], ws[1] * group, 0, 0, 0}, ys = full;
  for (size_t i = 0; i < 3; ++i) {
    full[2 + i] = win.s[i] * (xs[2 + i] - 1) + win.d[i] * (ws[2 + i] - 1) + 1 + outPad[i];
    ys[2 + i] = full[2 + i] - win.p0[i] - win.p1[i];
  }
  std::vector<double> y(size_t(ir::numElements(full)), 0.0);
  int64_t cg = xs[1] / group, og = ws[1];
  for (int64_t n = 0; n < xs[0]; ++n)
    for (int64_t c = 0; c < xs[1]; ++c)
      for (int64_t z = 0; z < xs[2]; ++z)
        for (int64_t r = 0; r < xs[3]; ++r)
          for (int64_t q = 0; q < xs[4]; ++q)
            for (int64_t oo = 0; oo < og; ++oo)
              for (int64_t kz = 0; kz < ws[2]; ++kz)
                for (int64_t kr = 0; kr < ws[3]; ++kr)
                  for (int64_t kq = 0; kq < ws[4]; ++kq)
                    y[size_t(at5(full, n, (c / cg) * og + oo, z * win.s[0] + kz * win.d[0],
                                 r * win.s[1] + kr * win.d[1], q * win.s[2] + kq * win.d[2]))] +=
                        x.getDouble(at5(xs, n, c, z, r, q)) *
                        w.getDouble(at5(ws, c, oo, kz, kr, kq));
  std::vector<double> cropped;
  for (int64_t n = 0; n < ys[0]; ++n)
    for (int64_t o = 0; o < ys[1]; ++o)
      for (int64_t z = 0; z < ys[2]; ++z)
        for (int64_t r = 0; r < ys[3]; ++r)
          for (int64_t q = 0; q < ys[4]; ++q)
            cropped.push_back(
                y[size_t(at5(full, n, o, z + win.p0[0], r + win.p0[1], q + win.p0[2]))]);
  return ir::Tensor::fromDoubles(ir::DType::F32, ys, cropped);
}

/// ONNX MaxPool / AveragePool, 3-D, by definition.
ir::Tensor naivePool3d(const ir::Tensor &x, const Win3 &win, bool isMax, bool ceilMode,
                       bool includePad) {
  const ir::Shape &xs = x.shape();
  ir::Shape ys{xs[0], xs[1], 0, 0, 0};
  for (size_t i = 0; i < 3; ++i) {
    int64_t span = xs[2 + i] + win.p0[i] + win.p1[i] - (win.d[i] * (win.k[i] - 1) + 1);
    int64_t out = (ceilMode ? (span + win.s[i] - 1) / win.s[i] : span / win.s[i]) + 1;
    if (ceilMode && (out - 1) * win.s[i] >= xs[2 + i] + win.p0[i])
      --out;
    ys[2 + i] = out;
  }
  std::vector<double> y;
  for (int64_t n = 0; n < ys[0]; ++n)
    for (int64_t c = 0; c < ys[1]; ++c)
      for (int64_t z = 0; z < ys[2]; ++z)
        for (int64_t r = 0; r < ys[3]; ++r)
          for (int64_t q = 0; q < ys[4]; ++q) {
            double best = -INFINITY, sum = 0;
            int64_t count = 0;
            std::array<int64_t, 3> o{z, r, q};
            for (int64_t kz = 0; kz < win.k[0]; ++kz)
              for (int64_t kr = 0; kr < win.k[1]; ++kr)
                for (int64_t kq = 0; kq < win.k[2]; ++kq) {
                  std::array<int64_t, 3> kk{kz, kr, kq}, pos;
                  bool inside = true, inPadded = true;
                  for (size_t i = 0; i < 3; ++i) {
                    pos[i] = o[i] * win.s[i] - win.p0[i] + kk[i] * win.d[i];
                    inside = inside && pos[i] >= 0 && pos[i] < xs[2 + i];
                    inPadded = inPadded && pos[i] >= -win.p0[i] && pos[i] < xs[2 + i] + win.p1[i];
                  }
                  if (includePad ? inPadded : inside)
                    ++count;
                  if (!inside)
                    continue;
                  double v = x.getDouble(at5(xs, n, c, pos[0], pos[1], pos[2]));
                  best = std::max(best, v);
                  sum += v;
                }
            y.push_back(isMax ? best : sum / double(count));
          }
  return ir::Tensor::fromDoubles(ir::DType::F32, ys, y);
}

AttrMap windowAttrs(const Win3 &w) {
  return {{"kernel_shape", Ints(w.k.begin(), w.k.end())},
          {"strides", Ints(w.s.begin(), w.s.end())},
          {"dilations", Ints(w.d.begin(), w.d.end())},
          {"pads", Ints{w.p0[0], w.p0[1], w.p0[2], w.p1[0], w.p1[1], w.p1[2]}}};
}

} // namespace

TEST_CASE("Conv 3-D decomposes into 2-D convolutions per depth tap", "[onnx][onnx_nn]") {
  ir::Tensor x = randomTensor({2, 4, 5, 6, 5}, 1);
  ir::Tensor w = randomTensor({6, 2, 3, 2, 3}, 2); // group 2
  ir::Tensor b = randomTensor({6}, 3);
  Win3 win{{3, 2, 3}, {2, 1, 2}, {1, 2, 1}, {1, 0, 2}, {2, 1, 0}};
  AttrMap attrs = windowAttrs(win);
  attrs["group"] = int64_t{2};
  auto y = test::foldNode("Conv", {x, w, b}, attrs);
  ir::Tensor expected = naiveConv3d(x, w, win, 2);
  std::vector<double> withBias = expected.toDoubles();
  int64_t plane = expected.numel() / (expected.shape()[0] * 6);
  for (size_t i = 0; i < withBias.size(); ++i)
    withBias[i] += b.getDouble((int64_t(i) / plane) % 6);
  requireClose(y[0], f32(expected.shape(), withBias), 1e-5, 1e-5);
}

TEST_CASE("Conv 1-D and SAME_LOWER padding", "[onnx][onnx_nn]") {
  // x = [1, 2, 3, 4, 5], w = [1, 0, -1], stride 2, SAME_LOWER: out 3, total pad
  // (3-1)*2 + 3 - 5 = 2 -> [1, 1]: y[i] = x[2i-1] - x[2i+1] = [0-2, 2-4, 4-0].
  auto y = test::foldNode("Conv", {f32({1, 1, 5}, {1, 2, 3, 4, 5}), f32({1, 1, 3}, {1, 0, -1})},
                {{"strides", Ints{2}}, {"auto_pad", std::string("SAME_LOWER")}});
  requireClose(y[0], f32({1, 1, 3}, {-2, -2, 4}));
}

TEST_CASE("ConvTranspose 3-D matches the definition", "[onnx][onnx_nn]") {
  ir::Tensor x = randomTensor({1, 4, 3, 4, 3}, 4);
  ir::Tensor w = randomTensor({4, 3, 3, 2, 2}, 5); // group 2 -> 6 output channels
  Win3 win{{3, 2, 2}, {2, 3, 1}, {2, 1, 2}, {1, 0, 1}, {2, 1, 0}};
  AttrMap attrs = windowAttrs(win);
  attrs["group"] = int64_t{2};
  attrs["output_padding"] = Ints{1, 2, 0};
  auto y = test::foldNode("ConvTranspose", {x, w}, attrs);
  requireClose(y[0], naiveConvTranspose3d(x, w, win, {1, 2, 0}, 2), 1e-5, 1e-5);
}

TEST_CASE("ConvTranspose output_shape beyond the full output extends with zeros",
          "[onnx][onnx_nn]") {
  // x = [1, 2], w = [1, 1], stride 2: full output [1, 1, 2, 2] (4). output_shape 6:
  // total padding 4 - 6 = -2 -> begin -1, end -1: one zero on each side.
  auto y = test::foldNode("ConvTranspose", {f32({1, 1, 2}, {1, 2}), f32({1, 1, 2}, {1, 1})},
                {{"strides", Ints{2}}, {"output_shape", Ints{6}}});
  requireClose(y[0], f32({1, 1, 6}, {0, 1, 1, 2, 2, 0}));
}

TEST_CASE("3-D pooling is separable", "[onnx][onnx_nn]") {
  ir::Tensor x = randomTensor({2, 3, 5, 6, 7}, 6);
  Win3 win{{2, 3, 2}, {2, 2, 3}, {1, 1, 1}, {1, 1, 0}, {0, 1, 1}};
  for (bool ceilMode : {false, true}) {
    AttrMap attrs = windowAttrs(win);
    attrs.erase("dilations");
    attrs["ceil_mode"] = int64_t{ceilMode};
    INFO("ceil_mode " << ceilMode);
    requireClose(test::foldNode("MaxPool", {x}, attrs)[0], naivePool3d(x, win, true, ceilMode, false));
    for (bool includePad : {false, true}) {
      INFO("count_include_pad " << includePad);
      attrs["count_include_pad"] = int64_t{includePad};
      requireClose(test::foldNode("AveragePool", {x}, attrs)[0],
                   naivePool3d(x, win, false, ceilMode, includePad), 1e-5, 1e-6);
    }
  }
}

TEST_CASE("MaxPool 1-D with Indices", "[onnx][onnx_nn]") {
  // Two channels of [3, 1, 4, 1, 5], kernel 2, stride 2: maxima 3 (0), 4 (2); the
  // second channel's indices are offset by 5.
  ir::Tensor x = f32({1, 2, 5}, {3, 1, 4, 1, 5, 3, 1, 4, 1, 5});
  auto out = test::foldNode("MaxPool", {x}, {{"kernel_shape", Ints{2}}, {"strides", Ints{2}}}, 2);
  REQUIRE(out.size() == 2);
  requireClose(out[0], f32({1, 2, 2}, {3, 4, 3, 4}));
  CHECK(out[1].toInts() == Ints{0, 2, 5, 7});
}

TEST_CASE("Hardmax marks the first maximum only", "[onnx][onnx_nn]") {
  auto y = test::foldNode("Hardmax", {f32({2, 4}, {1, 3, 3, 0, 2, 2, 2, 2})}, {});
  requireClose(y[0], f32({2, 4}, {0, 1, 0, 0, 1, 0, 0, 0}));
  // Opset < 13: coerced to 2-D at axis 1, so the maximum is over the last two dims.
  auto y11 = test::foldNode("Hardmax", {f32({1, 2, 2}, {1, 5, 5, 2})}, {}, 1, 11);
  requireClose(y11[0], f32({1, 2, 2}, {0, 1, 0, 0}));
}

TEST_CASE("an input that decides the output shape must be a constant", "[onnx][onnx_nn]") {
  std::vector<ir::Expr> wishes;
  auto x = ir::makeVar("x", ir::Type::tensor(ir::DType::F32, {2, 3}));
  auto pads = ir::makeVar("pads", ir::Type::tensor(ir::DType::I64, {4}));
  NodeContext ctx("Pad", "p0", 17, {x, pads}, 1, {});
  ctx.setConstantWishes(&wishes);
  auto out = ConverterRegistry::standard().find("Pad")->convert(ctx);
  REQUIRE(!out.ok());
  CHECK(out.error().str() ==
        "node 'p0' (Pad): input 1 ('pads') must be a constant (it decides the output shape)");
  REQUIRE(!wishes.empty()); // asked for, so the conformance runner can bind it
  for (const ir::Expr &w : wishes)
    CHECK(w == pads);
  // Bound as a constant, it converts.
  NodeContext bound("Pad", "p0", 17, {x, ir::makeConstant(i64({4}, {0, 1, 0, 1}))}, 1, {});
  auto ok = ConverterRegistry::standard().find("Pad")->convert(bound);
  REQUIRE(ok.ok());
  CHECK((*ok)[0]->type() == ir::Type::tensor(ir::DType::F32, {2, 5}));
}

TEST_CASE("Reshape, Expand, Tile, Slice and TopK over data values: run-time dims, gathered",
          "[onnx][onnx_nn][check]") {
  // A shape argument of data values (not a constant, not a shape value):
  // each output dim it decides is an unbounded run-time symbol named after
  // the node, the result a gather per such axis; ONNX's rules on the values
  // are a check (not for Slice, which clamps). Constants keep the plain op.
  auto x = ir::makeVar("x", ir::Type::tensor(ir::DType::F32, {2, 3}));
  auto v = ir::makeVar("v", ir::Type::tensor(ir::DType::I64, {2}));
  auto convert = [&](const char *op, std::vector<ir::Expr> in) {
    NodeContext ctx(op, "n0", 13, std::move(in), 1, {});
    auto out = ConverterRegistry::standard().find(op)->convert(ctx);
    INFO(op << ": " << (out.ok() ? "" : out.error().str()));
    REQUIRE(out.ok());
    ir::Module m("m");
    m.set("main", ir::makeFunction({x, v}, (*out)[0]));
    return m;
  };
  auto runtimeDims = [](const ir::Module &m) {
    int n = 0;
    for (int64_t d : m.find("main")->body()->type().shape())
      n += ir::isSymbol(d) && ir::symbolInfo(d).runtime && !ir::symbolInfo(d).bounded();
    return n;
  };
  for (const char *op : {"Reshape", "Tile"}) {
    INFO(op);
    ir::Module m = convert(op, {x, v});
    CHECK(runtimeDims(m) == 2);
    CHECK(countCalls(m, "gather") == (std::string(op) == "Reshape" ? 1 : 2));
    CHECK(countCalls(m, "check") == 1);
    CHECK(countCalls(m, "range_count") == 2);
  }
  // Expand of [2, 3] to a shape of data values: no dim of x is 1, so the
  // result keeps x's dims and only the check runs.
  ir::Module expand = convert("Expand", {x, v});
  CHECK(expand.find("main")->body()->type() == x->type());
  CHECK(countCalls(expand, "check") == 1);
  CHECK(countCalls(expand, "gather") == 0);
  // Slice at run-time starts and ends.
  auto ends = ir::makeVar("ends", ir::Type::tensor(ir::DType::I64, {2}));
  NodeContext slice("Slice", "n0", 13, {x, v, ends}, 1, {});
  auto sliced = ConverterRegistry::standard().find("Slice")->convert(slice);
  REQUIRE(sliced.ok());
  for (int64_t d : (*sliced)[0]->type().shape())
    CHECK((ir::isSymbol(d) && ir::symbolInfo(d).runtime));
  // TopK at a K of data: a full sort along the axis, the first K gathered.
  auto k = ir::makeVar("k", ir::Type::tensor(ir::DType::I64, {1}));
  NodeContext topk("TopK", "n0", 13, {x, k}, 2, {});
  auto best = ConverterRegistry::standard().find("TopK")->convert(topk);
  REQUIRE(best.ok());
  REQUIRE(best->size() == 2);
  for (const ir::Expr &out : *best) {
    CHECK(out->type().shape()[0] == 2);
    CHECK((ir::isSymbol(out->type().shape()[1]) &&
           ir::symbolInfo(out->type().shape()[1]).runtime));
  }
  // Constant arguments: the plain ops.
  ir::Module constant = convert("Tile", {x, ir::makeConstant(i64({2}, {2, 1}))});
  CHECK(constant.find("main")->body()->type() == ir::Type::tensor(ir::DType::F32, {4, 3}));
  CHECK(countCalls(constant, "gather") == 0);
}

TEST_CASE("Tile, Trilu and OneHot compose exactly", "[onnx][onnx_nn]") {
  // Tile [[1, 2]] by [2, 2] -> [[1, 2, 1, 2], [1, 2, 1, 2]].
  auto t = test::foldNode("Tile", {f32({1, 2}, {1, 2}), i64({2}, {2, 2})}, {});
  requireClose(t[0], f32({2, 4}, {1, 2, 1, 2, 1, 2, 1, 2}));
  // Lower triangle with k = -1 of a 3x3 of ones.
  auto l = test::foldNode("Trilu", {f32({3, 3}, {1, 1, 1, 1, 1, 1, 1, 1, 1}), i64({}, {-1})},
                {{"upper", int64_t{0}}});
  requireClose(l[0], f32({3, 3}, {0, 0, 0, 1, 0, 0, 1, 1, 0}));
  // OneHot of [1, -1, 5] with depth 3 on axis 0; 5 is out of range (all off).
  auto h = test::foldNode("OneHot", {i64({3}, {1, -1, 5}), i64({}, {3}), f32({2}, {0, 7})},
                {{"axis", int64_t{0}}});
  requireClose(h[0], f32({3, 3}, {0, 0, 0, 7, 0, 0, 0, 7, 0}));
}

TEST_CASE("Tile repeats that would overflow a shape are errors", "[onnx][onnx_nn]") {
  // Found by fuzz_onnx: repeats whose product with the dims overflowed int64.
  auto x = ir::makeConstant(f32({3, 2}, {1, 2, 3, 4, 5, 6}));
  auto reps = [](int64_t a, int64_t b) { return ir::makeConstant(i64({2}, {a, b})); };
  CHECK(test::convertError("Tile", {x, reps(int64_t(1) << 62, 1)}) ==
        "node 'n0' (Tile): 'repeats' [4611686018427387904, 1] makes a tensor of more than 2^48 "
        "elements");
  CHECK(test::convertError("Tile", {x, reps(int64_t(1) << 24, int64_t(1) << 24)}) ==
        "node 'n0' (Tile): 'repeats' [16777216, 16777216]: shape [50331648, 33554432] has more "
        "than 2^48 elements");
  CHECK(test::convertError("Tile", {x, reps(2, 3)}).empty());
}

TEST_CASE("Resize works on the last two dims of any rank", "[onnx][onnx_nn]") {
  // [1, 2, 2] scaled by [1, 1, 2] (nearest, asymmetric, floor): each column doubles.
  auto y = test::foldNode("Resize", {f32({1, 2, 2}, {1, 2, 3, 4}), f32({0}, {}), f32({3}, {1, 1, 2})},
                {{"mode", std::string("nearest")},
                 {"coordinate_transformation_mode", std::string("asymmetric")},
                 {"nearest_mode", std::string("floor")}});
  requireClose(y[0], f32({1, 2, 4}, {1, 1, 2, 2, 3, 3, 4, 4}));
  // Linear on a 5-D input, [1, 1, 2, 1, 2] -> sizes [1, 1, 2, 2, 2] (align_corners: the
  // single row is copied).
  auto z = test::foldNode(
      "Resize",
      {f32({1, 1, 2, 1, 2}, {1, 2, 3, 4}), f32({0}, {}), f32({0}, {}), i64({5}, {1, 1, 2, 2, 2})},
      {{"mode", std::string("linear")},
       {"coordinate_transformation_mode", std::string("align_corners")}});
  requireClose(z[0], f32({1, 1, 2, 2, 2}, {1, 2, 1, 2, 3, 4, 3, 4}));
  // Scaling a leading dim is an error.
  std::vector<ir::Expr> args{ir::makeConstant(f32({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8})),
                             ir::makeConstant(f32({0}, {})), ir::makeConstant(f32({3}, {2, 1, 1}))};
  auto bad = test::convertNode("Resize", args, {});
  REQUIRE(!bad.ok());
  CHECK(bad.error().str() == "node 'n0' (Resize): only the last two dims can be resized "
                             "('scales' 2 for dim 0 of f32[2, 2, 2])");
}

TEST_CASE("Pad by nothing is its input; other pads stay", "[onnx][onnx_nn]") {
  // torch.onnx writes a Pad of zeros before DenseNet's AvgPool2d: it must not
  // be an op that splits a region.
  auto x = ir::makeVar("x", ir::Type::tensor(ir::DType::F32, {1, 2, 4, 4}));
  auto pads = [](int64_t p) {
    return ir::makeConstant(i64({8}, {0, 0, p, p, 0, 0, p, p}));
  };
  auto none = test::convertNode("Pad", {x, pads(0)}, {});
  REQUIRE(none.ok());
  CHECK((*none)[0] == x);
  auto some = test::convertNode("Pad", {x, pads(1)}, {});
  REQUIRE(some.ok());
  CHECK((*some)[0]->type() == ir::Type::tensor(ir::DType::F32, {1, 2, 6, 6}));
}

TEST_CASE("a Pad of zeros before an AveragePool folds into the pool's pads", "[onnx][onnx_nn]") {
  // torch.onnx's AvgPool2d(3, stride 1, padding 1, count_include_pad=True)
  // (Inception v3): Pad, then AveragePool without pads.
  auto x = ir::makeVar("x", ir::Type::tensor(ir::DType::F32, {1, 2, 5, 5}));
  auto pads = [](std::vector<int64_t> p) { return ir::makeConstant(i64({8}, std::move(p))); };
  auto poolOf = [&](const ir::Expr &in, AttrMap attrs) {
    auto y = test::convertNode("AveragePool", {in}, std::move(attrs));
    REQUIRE(y.ok());
    return (*y)[0];
  };
  AttrMap window = {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{1, 1}}};
  auto padded = test::convertNode("Pad", {x, pads({0, 0, 1, 1, 0, 0, 1, 1})}, {});
  REQUIRE(padded.ok());
  ir::Expr y = poolOf((*padded)[0], window);
  const auto *call = y->as<ir::CallNode>();
  REQUIRE(call);
  CHECK(call->op()->name == "avg_pool2d");
  CHECK(call->args()[0] == x);
  CHECK(call->attrs().getInts("pads") == Ints{1, 1, 1, 1});
  CHECK(call->attrs().getBool("count_include_pad"));
  // Numerically the pad and the pool: the zeros counted in every average.
  ir::Tensor in = randomTensor({1, 2, 5, 5}, 9);
  ir::Tensor want = test::run1(
      "avg_pool2d",
      {test::run1("pad", {in}, {{"pads", Ints{0, 0, 1, 1, 0, 0, 1, 1}}})},
      {{"pool_size", Ints{3, 3}}});
  requireClose(test::run1("avg_pool2d", {in}, call->attrs()), want);

  // Not folded: pads on the channels, a pad as wide as the window, padding
  // that would not be counted (the pool's own pads, count_include_pad 0).
  for (auto p : {std::vector<int64_t>{0, 1, 0, 0, 0, 0, 0, 0},
                 std::vector<int64_t>{0, 0, 3, 0, 0, 0, 0, 0}}) {
    auto q = test::convertNode("Pad", {x, pads(p)}, {});
    REQUIRE(q.ok());
    CHECK(poolOf((*q)[0], window)->as<ir::CallNode>()->args()[0] == (*q)[0]);
  }
  AttrMap own = window;
  own["pads"] = Ints{1, 1, 1, 1};
  CHECK(poolOf((*padded)[0], own)->as<ir::CallNode>()->args()[0] == (*padded)[0]);
}
