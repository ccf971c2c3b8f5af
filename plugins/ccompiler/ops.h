//===- plugins/ccompiler/ops.h - Core ops as C99 loop nests -----*- C++ -*-===//
//
// One entry per core op the ccompiler plugin takes: it validates the call
// (f32 only, attributes with the defaults of docs/ops.md, the declared output
// shape re-derived from the inputs) and writes the body of a C99 function
// that computes the op with every shape and attribute folded in as a
// constant. The checker and the codegen both go through emitOp(), so the
// plugin never accepts at partition time what it cannot generate.
//
// The generated function (translate.cpp writes the signature) is
//
//   static void opN_<name>(const float *restrict in0, ..., float *restrict out,
//                          float *restrict scratch)
//
// in0.. are the op's inputs in argument order (a fused bias comes last),
// `out` its result, `scratch` (only when OpCode::scratchFloats > 0) per-call
// memory of that many floats (im2col columns, transposed operands). Buffers
// never overlap.
//
// Numerics follow the reference kernels (core/ir/ops/*.cpp): elementwise math
// in double rounded once to f32 (add, subtract, multiply, divide and relu in
// f32, which rounds identically); sums of pooling and softmax in double.
// Products (conv2d, dense, matmul) accumulate in f32 in k order, like the
// host's LLVM code, so that the C compiler can vectorise them.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tessera/sdk/plugin.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tessera::ccompiler {

using Shape = std::vector<int64_t>;

/// What a product (conv2d, dense) applies in its own output loop: a bias
/// (one more input, [O] per output channel / [U] per unit) and an
/// activation (a unary op of the plugin).
struct Epilogue {
  bool bias = false;
  std::optional<sdk::OpDesc> act; // the activation op, when fused
  /// dense only: in1 is the weight already transposed to [K, U] (a constant
  /// transposed at codegen), so that the product's inner loop is contiguous.
  bool weightTransposed = false;
};

/// One op as C.
struct OpCode {
  std::string body;         // the function's statements, indented by two
  size_t scratchFloats = 0; // per-call scratch the body uses
  std::string attrs;        // "strides=[2, 2], groups=1" for the comment
};

/// The core ops the plugin takes.
const std::vector<std::string> &supportedOps();

/// Validates one op call and writes its C body. Throws sdk::Error with a
/// one-line reason when the plugin does not take the call ("only f32, got
/// f16", "attribute 'pads' must have 4 values, got 2").
OpCode emitOp(const sdk::OpDesc &op, const Epilogue &epi = {});

/// When `op` is a unary op of the plugin: a C expression of the double `v`
/// computing it in double ("tsc_relu(v)"); validates its attributes.
std::optional<std::string> unaryExpr(const sdk::OpDesc &op);

/// Can `op` follow a product of output type `product` as its bias (a
/// bias_add along the channel axis, or an add of a constant shaped like
/// one)? `channel` is the product's channel axis.
bool isChannelBias(const sdk::OpDesc &op, const sdk::TensorType &product, size_t channel);

/// An exact C literal of a float ("0x1.8p+1f", "INFINITY", "NAN").
std::string floatLiteral(float v);
/// An exact C literal of a double ("0x1.999999999999ap-4", "-INFINITY").
std::string doubleLiteral(double v);

/// The helpers every translation unit starts with (tsc_sigmoid, ...).
const char *cPrelude();

} // namespace tessera::ccompiler
