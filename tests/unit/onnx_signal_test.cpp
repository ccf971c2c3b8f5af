//===- tests/unit/onnx_signal_test.cpp - Signal converters ----------------===//
//
// The ONNX signal converters (converters/signal.cpp) on constant inputs,
// against hand-computed results: the three windows (periodic, symmetric,
// output_datatype), DFT (real and complex, inverse, onesided, dft_length cut
// and zero-pad, negative axis), STFT with and without a window,
// MelWeightMatrix and Det; plus their errors.
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include "onnx_test_util.h"

#include <cmath>

using namespace tessera;
using namespace tessera::frontend::onnx;
using tessera::test::f32;
using tessera::test::i64;
using tessera::test::requireClose;

namespace {

using AttrMap = test::OnnxAttrMap;

ir::Tensor i32(ir::Shape shape, std::vector<int64_t> values) {
  return ir::Tensor::fromInts(ir::DType::I32, std::move(shape), values);
}

ir::Expr c(ir::Tensor t) {
  return ir::makeConstant(std::move(t));
}

const double kS3 = std::sqrt(3.0) / 2; // sin(pi / 3)

} // namespace

TEST_CASE("Hann, Hamming and Blackman windows", "[onnx][converters][signal]") {
  // Periodic (denominator N): 0.5 - 0.5 cos(pi n / 2).
  requireClose(test::foldOne("HannWindow", {i32({}, {4})}), f32({4}, {0, 0.5, 1, 0.5}));
  // Symmetric (denominator N - 1): 0.5 - 0.5 cos(pi n).
  requireClose(test::foldOne("HannWindow", {i64({}, {3})}, {{"periodic", int64_t{0}}}),
               f32({3}, {0, 1, 0}));
  // 25/46 - 21/46 cos(pi n), as f64.
  requireClose(test::foldOne("HammingWindow", {i64({}, {2})},
                     {{"output_datatype", int64_t{11}}, {"periodic", int64_t{1}}}),
               ir::Tensor::fromDoubles(ir::DType::F64, {2}, std::vector<double>{4.0 / 46, 1}));
  // 0.42 - 0.5 cos(pi n / 2) + 0.08 cos(pi n).
  requireClose(test::foldOne("BlackmanWindow", {i64({1}, {4})}), f32({4}, {0, 0.34, 1, 0.34}));
  requireClose(test::foldOne("HannWindow", {i64({}, {0})}), f32({0}, {}));

  CHECK(test::convertError("HannWindow", {ir::makeVar("n", ir::Type::tensor(ir::DType::I64, {}))}) ==
        "node 'n0' (HannWindow): input 0 ('size') must be a constant (it decides the output "
        "shape)");
  CHECK(test::convertError("HannWindow", {c(i64({}, {-1}))}) ==
        "node 'n0' (HannWindow): input 0 ('size') must not be negative, got -1");
  CHECK(test::convertError("HannWindow", {c(f32({}, {4}))}) ==
        "node 'n0' (HannWindow): input 0 ('size') must be an integer, got f32[]");
  CHECK(test::convertError("HannWindow", {c(i64({}, {4}))}, {{"output_datatype", int64_t{8}}}) ==
        "node 'n0' (HannWindow): attribute 'output_datatype' = 8 (STRING) is not supported");
}

TEST_CASE("DFT of real and complex signals", "[onnx][converters][signal]") {
  // [1, 2, 3, 4] -> [10, -2 + 2i, -2, -2 - 2i].
  ir::Tensor x = f32({1, 4, 1}, {1, 2, 3, 4});
  ir::Tensor X = f32({1, 4, 2}, {10, 0, -2, 2, -2, 0, -2, -2});
  requireClose(test::foldOne("DFT", {x}), X);
  requireClose(test::foldOne("DFT", {x}, {{"onesided", int64_t{1}}}),
               f32({1, 3, 2}, {10, 0, -2, 2, -2, 0}));
  // The inverse gives the signal back (imaginary parts 0).
  requireClose(test::foldOne("DFT", {X}, {{"inverse", int64_t{1}}}),
               f32({1, 4, 2}, {1, 0, 2, 0, 3, 0, 4, 0}), 1e-5, 1e-6);
  // dft_length cuts ([1, 2] -> [3, -1]) or zero-pads ([1] -> [1, 1, 1, 1]).
  requireClose(test::foldOne("DFT", {x, i64({}, {2})}), f32({1, 2, 2}, {3, 0, -1, 0}));
  requireClose(test::foldOne("DFT", {f32({1, 1, 1}, {1}), i32({}, {4})}),
               f32({1, 4, 2}, {1, 0, 1, 0, 1, 0, 1, 0}), 1e-5, 1e-6);
  // Complex input i * [1, 1, 1] -> [3i, 0, 0].
  requireClose(test::foldOne("DFT", {f32({1, 3, 2}, {0, 1, 0, 1, 0, 1})}),
               f32({1, 3, 2}, {0, 3, 0, 0, 0, 0}), 1e-5, 1e-6);
  // Along axis -2 (the last signal dim) of [[1, 2], [3, 4]]: rows [3, -1], [7, -1].
  requireClose(test::foldOne("DFT", {f32({1, 2, 2, 1}, {1, 2, 3, 4})}, {{"axis", int64_t{-2}}}),
               f32({1, 2, 2, 2}, {3, 0, -1, 0, 7, 0, -1, 0}));
  // Along axis 1 of the same: columns [4, -2], [6, -2].
  requireClose(test::foldOne("DFT", {f32({1, 2, 2, 1}, {1, 2, 3, 4})}),
               f32({1, 2, 2, 2}, {4, 0, 6, 0, -2, 0, -2, 0}));

  // A non-constant signal gives a graph with the output type.
  auto v = ir::makeVar("x", ir::Type::tensor(ir::DType::F32, {2, 5, 3, 1}));
  auto out = test::convertNode("DFT", {v}, {{"onesided", int64_t{1}}});
  REQUIRE(out.ok());
  CHECK((*out)[0]->type() == ir::Type::tensor(ir::DType::F32, {2, 3, 3, 2}));

  CHECK(test::convertError("DFT", {c(x)}, {{"axis", int64_t{2}}}) ==
        "node 'n0' (DFT): attribute 'axis' = 2 is out of range for rank 3 (expected -3..-2 or "
        "0..1)");
  CHECK(test::convertError("DFT", {c(X)}, {{"onesided", int64_t{1}}}) ==
        "node 'n0' (DFT): attribute 'onesided' = 1 needs a real input and a forward transform");
  CHECK(test::convertError("DFT", {c(f32({1, 2, 3}, {1, 2, 3, 4, 5, 6}))}) ==
        "node 'n0' (DFT): input 0 must have rank >= 2 and a last dim of 1 (real) or 2 "
        "(complex), got f32[1, 2, 3]");
  CHECK(test::convertError("DFT", {c(x), c(i64({}, {0}))}) ==
        "node 'n0' (DFT): input 1 ('dft_length') must be positive, got 0");
}

TEST_CASE("STFT with and without a window", "[onnx][converters][signal]") {
  // Frames [1, 2, 3] and [3, 4, 5]; a 3-point DFT's bin 1 of [a, b, c] is
  // a - (b + c) / 2 + i sin(pi / 3) (c - b); onesided keeps bins 0 and 1.
  ir::Tensor s = f32({1, 5, 1}, {1, 2, 3, 4, 5});
  ir::Tensor step = i64({}, {2});
  auto framed = test::convertNode("STFT", {c(s), c(step), nullptr, c(i64({}, {3}))}, {});
  REQUIRE(framed.ok());
  const auto *folded = (*framed)[0]->as<ir::ConstantNode>();
  REQUIRE(folded != nullptr);
  requireClose(folded->data(), f32({1, 2, 2, 2}, {6, 0, -1.5, kS3, 12, 0, -1.5, kS3}));
  // Window [0, 1, 0]: frames [0, 2, 0] and [0, 4, 0].
  requireClose(test::foldOne("STFT", {s, step, f32({3}, {0, 1, 0})}),
               f32({1, 2, 2, 2}, {2, 0, -1, -2 * kS3, 4, 0, -2, -4 * kS3}));
  // Two-sided.
  requireClose(test::foldOne("STFT", {s, i64({}, {3}), f32({2}, {1, 1})}, {{"onesided", int64_t{0}}}),
               f32({1, 2, 2, 2}, {3, 0, -1, 0, 9, 0, -1, 0}));

  CHECK(test::convertError("STFT", {c(s), c(step), c(f32({3}, {1, 1, 1})), c(i64({}, {4}))}) ==
        "node 'n0' (STFT): input 3 ('frame_length') = 4 differs from the window length 3");
  CHECK(test::convertError("STFT", {c(s), c(step)}) ==
        "node 'n0' (STFT): needs input 2 ('window') or input 3 ('frame_length')");
  CHECK(test::convertError("STFT", {c(s), c(step), nullptr, c(i64({}, {6}))}) ==
        "node 'n0' (STFT): frame length 6 must be in 1..5 (the signal length)");
}

TEST_CASE("MelWeightMatrix and Det", "[onnx][converters][signal]") {
  // The ONNX backend test's case: 8 mel bins, 16-point DFT at 8192 Hz.
  std::vector<double> w(9 * 8, 0.0);
  for (auto [row, col] : {std::pair{0, 0}, {0, 1}, {1, 2}, {1, 3}, {2, 4}, {3, 5}, {4, 6}, {5, 7}})
    w[size_t(row * 8 + col)] = 1;
  requireClose(test::foldOne("MelWeightMatrix",
                     {i32({}, {8}), i32({}, {16}), i32({}, {8192}), f32({}, {0}), f32({}, {4096})}),
               f32({9, 8}, w));
  // Two mel bins over 0..4 kHz of a 8-point DFT at 8 kHz: the edges in mel
  // are 0, 1/4, 2/4, 3/4 of mel(4000), i.e. 0, 426.8, 1113.8, 2219.8 Hz,
  // at bins floor(9 * hz / 8000) = 0, 0, 1, 2.
  requireClose(test::foldOne("MelWeightMatrix",
                     {i64({}, {2}), i64({}, {8}), i64({}, {8000}), f32({}, {0}), f32({}, {4000})}),
               f32({5, 2}, {1, 0, 0, 1, 0, 0, 0, 0, 0, 0}));

  requireClose(test::foldOne("Det", {f32({2, 2, 2}, {1, 2, 3, 4, 2, 0, 0, 2})}), f32({2}, {-2, 4}));
}

TEST_CASE("Signal converters reject sizes too large to build", "[onnx][converters][signal]") {
  CHECK(test::convertError("HannWindow", {c(i64({}, {int64_t(1) << 40}))}) ==
        "node 'n0' (HannWindow): the window (1099511627776 x 1 elements) exceeds the limit of "
        "67108864 elements");
  CHECK(test::convertError("DFT", {c(f32({1, 1, 1}, {1})), c(i64({}, {int64_t(1) << 62}))}) ==
        "node 'n0' (DFT): the DFT length 4611686018427387904 exceeds the limit of 67108864");
  CHECK(test::convertError("DFT", {c(f32({1, 1, 1}, {1})), c(i64({}, {int64_t(1) << 20}))}) ==
        "node 'n0' (DFT): the DFT matrix (1048576 x 2097152 elements) exceeds the limit of "
        "67108864 elements");
  CHECK(
      test::convertError("MelWeightMatrix", {c(i64({}, {INT64_MAX})), c(i64({}, {16})),
                                       c(i64({}, {8000})), c(f32({}, {0})), c(f32({}, {4000}))}) ==
      "node 'n0' (MelWeightMatrix): the weight matrix (9 x 9223372036854775807 elements) "
      "exceeds the limit of 67108864 elements");
}
