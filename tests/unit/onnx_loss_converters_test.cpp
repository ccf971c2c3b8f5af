//===- tests/unit/onnx_loss_converters_test.cpp - Loss/index converters ---===//
//
// The ONNX loss and index converters (converters/loss*.cpp) on constant
// inputs (NodeContext folds every call on constants, so the result is a
// constant), against hand-computed results: the NLL/SCE reductions with
// weights and an out-of-range ignore_index, Einsum forms the backend tests
// do not cover (implicit output, trace, ellipsis broadcasting, three
// operands), Compress, ReverseSequence, Unique and NonMaxSuppression; plus
// the errors for malformed equations and non-constant inputs.
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include "onnx_test_util.h"
#include "interp/interpreter.h"

#include <cmath>

using namespace tessera;
using namespace tessera::frontend::onnx;
using tessera::test::f32;
using tessera::test::i64;
using tessera::test::requireClose;

namespace {

using Ints = std::vector<int64_t>;
using AttrMap = test::OnnxAttrMap;

} // namespace

TEST_CASE("NegativeLogLikelihoodLoss reductions, weights and ignore_index",
          "[onnx][converters][loss]") {
  // log-probabilities [2, 3]; the second target (9) is ignored.
  ir::Tensor logp = f32({2, 3}, {-1, -2, -3, -4, -5, -6});
  ir::Tensor target = i64({2}, {2, 9});
  ir::Tensor weight = f32({3}, {1, 2, 3});
  auto nll = [&](std::string reduction, bool withWeight) {
    std::vector<ir::Tensor> in{logp, target};
    if (withWeight)
      in.push_back(weight);
    return test::foldOne("NegativeLogLikelihoodLoss", in,
                 {{"reduction", reduction}, {"ignore_index", int64_t{9}}});
  };
  requireClose(nll("none", true), f32({2}, {9, 0}));
  requireClose(nll("sum", true), f32({}, {9}));
  requireClose(nll("mean", true), f32({}, {3}));  // 9 / weight 3
  requireClose(nll("mean", false), f32({}, {3})); // 3 / one target
  // Without ignore_index: the plain mean.
  requireClose(test::foldOne("NegativeLogLikelihoodLoss", {logp, i64({2}, {0, 1})}, {}),
               f32({}, {3})); // (1 + 5) / 2
  // [N, C, d1] input.
  requireClose(test::foldOne("NegativeLogLikelihoodLoss",
                     {f32({1, 2, 2}, {-1, -2, -3, -4}), i64({1, 2}, {1, 0})},
                     {{"reduction", std::string("none")}}),
               f32({1, 2}, {3, 2}));
}

TEST_CASE("SoftmaxCrossEntropyLoss with its log_prob output", "[onnx][converters][loss]") {
  auto out = test::foldNode("SoftmaxCrossEntropyLoss", {f32({1, 2}, {0, 0}), i64({1}, {1})}, {}, 2);
  REQUIRE(out.size() == 2);
  requireClose(out[0], f32({}, {std::log(2.0)}));
  requireClose(out[1], f32({1, 2}, {-std::log(2.0), -std::log(2.0)}));
}

TEST_CASE("loss converter errors", "[onnx][converters][loss]") {
  auto x = ir::makeConstant(f32({2, 3}, {1, 2, 3, 4, 5, 6}));
  CHECK(test::convertError("NegativeLogLikelihoodLoss", {x, ir::makeConstant(i64({3}, {0, 1, 2}))}, {}) ==
        "node 'n0' (NegativeLogLikelihoodLoss): the target must have shape "
        "[2] (input f32[2, 3] without C), got i64[3]");
  CHECK(test::convertError("NegativeLogLikelihoodLoss", {x, ir::makeConstant(i64({2}, {0, 1}))},
                     {{"reduction", std::string("max")}}) ==
        "node 'n0' (NegativeLogLikelihoodLoss): attribute 'reduction' = \"max\" is not one of "
        "\"none\", \"sum\", \"mean\"");
}

TEST_CASE("Einsum forms", "[onnx][converters][einsum]") {
  ir::Tensor m = f32({2, 2}, {1, 2, 3, 4});
  auto einsum = [](std::string eq, std::vector<ir::Tensor> in) {
    return test::foldOne("Einsum", std::move(in), {{"equation", eq}});
  };
  requireClose(einsum("ii", {m}), f32({}, {5}));
  requireClose(einsum("ii->i", {m}), f32({2}, {1, 4}));
  requireClose(einsum("ij->ji", {m}), f32({2, 2}, {1, 3, 2, 4}));
  requireClose(einsum("i,j", {f32({2}, {1, 2}), f32({3}, {3, 4, 5})}),
               f32({2, 3}, {3, 4, 5, 6, 8, 10}));
  // Implicit output: every letter appears twice, so the result is a scalar.
  requireClose(einsum("ba,ab", {m, m}), f32({}, {1 + 2 * 3 + 3 * 2 + 4 * 4}));
  // Ellipsis with broadcasting: [2, 3] . [3] along i.
  requireClose(einsum("...i,...i->...", {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({3}, {1, 0, -1})}),
               f32({2}, {-2, -2}));
  requireClose(einsum("i,i,i->", {f32({2}, {1, 2}), f32({2}, {3, 4}), f32({2}, {5, 6})}),
               f32({}, {63}));
  // Matrix product through batch_matmul, with a label summed in one operand.
  requireClose(einsum("ij,jk->ik", {m, m}), f32({2, 2}, {7, 10, 15, 22}));
  requireClose(einsum("ij,kl->ik", {m, m}), f32({2, 2}, {9, 21, 21, 49}));
}

TEST_CASE("Einsum errors", "[onnx][converters][einsum]") {
  auto x = ir::makeConstant(f32({2, 2}, {1, 2, 3, 4}));
  CHECK(test::convertError("Einsum", {x}, {{"equation", std::string("ij,jk")}}) ==
        "node 'n0' (Einsum): equation 'ij,jk' has 2 operands, the node has 1 inputs");
  CHECK(test::convertError("Einsum", {x}, {{"equation", std::string("ij->ik")}}) ==
        "node 'n0' (Einsum): output label 'k' is not in any input term");
  CHECK(test::convertError("Einsum", {x}, {{"equation", std::string("ijk")}}) ==
        "node 'n0' (Einsum): equation term 0 names 3 dims, input 0 is f32[2, 2]");
  CHECK(test::convertError("Einsum", {x}, {{"equation", std::string("i1")}}) ==
        "node 'n0' (Einsum): equation term 'i1' has the invalid character '1'");
  CHECK(test::convertError("Einsum", {x, ir::makeConstant(f32({3}, {1, 2, 3}))},
                     {{"equation", std::string("ij,j")}}) ==
        "node 'n0' (Einsum): label 'j' has dims 2 and 3");
}

TEST_CASE("Compress with a constant condition, or one known only at run time",
          "[onnx][converters][compress]") {
  ir::Tensor x = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  auto cond = [](std::vector<int64_t> v) {
    return ir::Tensor::fromInts(ir::DType::Bool, {int64_t(v.size())}, v);
  };
  requireClose(test::foldOne("Compress", {x, cond({0, 1, 1})}, {{"axis", int64_t{0}}}),
               f32({2, 2}, {3, 4, 5, 6}));
  requireClose(test::foldOne("Compress", {x, cond({1, 0, 0, 1})}, {}), f32({2}, {1, 4}));
  CHECK(test::foldOne("Compress", {x, cond({0, 0})}, {{"axis", int64_t{-1}}}).shape() == ir::Shape{3, 0});
  // A run-time condition: nonzero (a run-time count) and gather, run by the
  // interpreter at conditions that keep none, some and all rows.
  auto c = ir::makeVar("c", ir::Type::tensor(ir::DType::Bool, {3}));
  auto y = test::convertNode("Compress", {ir::makeConstant(x), c}, {{"axis", int64_t{0}}});
  REQUIRE(y.ok());
  ir::Module m("compress");
  m.set("main", ir::makeFunction({c}, (*y)[0]));
  for (const auto &[keep, want] : std::vector<std::pair<std::vector<int64_t>, std::vector<double>>>{
           {{0, 0, 0}, {}}, {{0, 1, 1}, {3, 4, 5, 6}}, {{1, 1, 1}, {1, 2, 3, 4, 5, 6}}}) {
    auto out = interp::run(m, {cond(keep)});
    REQUIRE(out.ok());
    CHECK(out->tensor.shape() == ir::Shape{int64_t(want.size() / 2), 2});
    CHECK(out->tensor.toDoubles() == want);
  }
  CHECK(test::convertError("Compress", {ir::makeConstant(f32({2, 2}, {1, 2, 3, 4})), c},
                           {{"axis", int64_t{0}}}) ==
        "node 'n0' (Compress): input 1 ('condition') has 3 entries, more than axis 0 of "
        "f32[2, 2] holds");
  CHECK(test::convertError("Compress",
                     {ir::makeConstant(x), ir::makeConstant(cond({0, 0, 0, 0, 0, 0, 1}))}, {}) ==
        "node 'n0' (Compress): condition entry 6 is true, but axis 0 has "
        "size 6");
}

TEST_CASE("ReverseSequence", "[onnx][converters][reverse_sequence]") {
  ir::Tensor x = f32({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
  requireClose(test::foldOne("ReverseSequence", {x, i64({2}, {3, 1})},
                     {{"batch_axis", int64_t{0}}, {"time_axis", int64_t{1}}}),
               f32({2, 4}, {2, 1, 0, 3, 4, 5, 6, 7}));
  // time_axis 0: columns are the sequences.
  requireClose(test::foldOne("ReverseSequence", {x, i64({4}, {2, 0, 1, 2})}, {}),
               f32({2, 4}, {4, 1, 2, 7, 0, 5, 6, 3}));
}

TEST_CASE("Unique and NonMaxSuppression on constants", "[onnx][converters][unique]") {
  auto u = test::foldNode("Unique", {f32({6}, {2, 1, 1, 3, 4, 3})}, {{"sorted", int64_t{0}}}, 4);
  REQUIRE(u.size() == 4);
  requireClose(u[0], f32({4}, {2, 1, 3, 4}));
  CHECK(u[1].toInts() == Ints{0, 1, 3, 4});
  CHECK(u[2].toInts() == Ints{0, 1, 1, 2, 3, 2});
  CHECK(u[3].toInts() == Ints{1, 2, 2, 1});
  // Two overlapping boxes (IoU 0.6) and a distant one; scores pick box 1 first.
  ir::Tensor boxes = f32({1, 3, 4}, {0, 0, 1, 1, 0, 0.25, 1, 1.25, 5, 5, 6, 6});
  ir::Tensor scores = f32({1, 1, 3}, {0.8, 0.9, 0.1});
  auto nms = test::foldOne("NonMaxSuppression",
                   {boxes, scores, i64({1}, {3}), f32({1}, {0.5}), f32({1}, {0.05})}, {});
  CHECK(nms.shape() == ir::Shape{2, 3});
  CHECK(nms.toInts() == Ints{0, 0, 1, 0, 0, 2});
}

TEST_CASE("QuantizeLinear and DequantizeLinear", "[onnx][converters][quantize]") {
  // i8: round half to even, then saturate.
  auto q = test::foldOne("QuantizeLinear",
                 {f32({5}, {-300, -1.5, 2.5, 300, 0.5}), f32({}, {1}),
                  ir::Tensor::fromInts(ir::DType::I8, {}, Ints{0})},
                 {});
  CHECK(q.dtype() == ir::DType::I8);
  CHECK(q.toInts() == Ints{-128, -2, 2, 127, 0});
  // u8 per axis 1: scales [1, 2], zero points [10, 20].
  ir::Tensor zp = ir::Tensor::fromInts(ir::DType::U8, {2}, Ints{10, 20});
  auto q2 = test::foldOne("QuantizeLinear", {f32({2, 2}, {1, 1, -20, 600}), f32({2}, {1, 2}), zp}, {});
  CHECK(q2.toInts() == Ints{11, 20, 0, 255}); // 1/2 = 0.5 rounds to 0
  auto d = test::foldOne(
      "DequantizeLinear",
      {ir::Tensor::fromInts(ir::DType::U8, {2, 2}, Ints{11, 20, 0, 255}), f32({2}, {1, 2}), zp},
      {});
  requireClose(d, f32({2, 2}, {1, 0, -10, 470}));
}
