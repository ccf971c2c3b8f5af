//===- plugins/json/kernels.h - Portable f32 kernels ------------*- C++ -*-===//
//
// The json plugin's compute: plain C++ loops over compact row-major f32
// buffers, no library. Every kernel writes every element of its output (the
// output may be the caller's tensor) and never reads it first.
//
// Numerics follow the core's reference kernels (core/ir/ops/*.cpp), which
// compute in double and round once to f32: elementwise math is evaluated in
// double, products and sums accumulate in double in the reference's order.
// The results then agree with the reference interpreter to the last bit in
// most cases and to a few ulps otherwise.
//
// Shapes are checked by the caller (ops.cpp) before a kernel runs.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tessera/sdk/op_helpers.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace tessera::json_plugin {

using Shape = std::vector<int64_t>;
using sdk::numel;

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

enum class UnaryKind {
  Identity,
  Relu,
  LeakyRelu, // a = alpha
  Sigmoid,
  Tanh,
  Clip,        // a = min, b = max
  HardSigmoid, // a = alpha, b = beta
  HardSwish,
  Silu,
  Mish,
  Gelu,
  GeluTanh,
  Exp,
  Log,
  Sqrt,
  Abs,
  Neg,
  Erf,
  Reciprocal,
  Floor,
  Ceil,
};

/// A unary function with its parameters; also the activation that a fused
/// conv2d/dense applies in its output loop.
struct Unary {
  UnaryKind kind = UnaryKind::Identity;
  double a = 0, b = 0;
};

/// One element, computed in double and rounded to f32.
float applyUnary(const Unary &f, float x);

void unary(const Unary &f, const float *x, float *y, int64_t n);

enum class BinaryKind { Add, Subtract, Multiply, Divide, Power, Maximum, Minimum };

/// y = a op b with numpy broadcasting; `ys` is the broadcast of `as` and `bs`.
void binary(BinaryKind op, const float *a, const Shape &as, const float *b, const Shape &bs,
            float *y, const Shape &ys);

/// y = x + bias[i], i the index along `axis` (bias_add).
void biasAdd(const float *x, const Shape &xs, int64_t axis, const float *bias, float *y);

/// Inference batch normalisation along `axis` (batch_norm).
void batchNorm(const float *x, const Shape &xs, int64_t axis, const float *gamma, const float *beta,
               const float *mean, const float *var, double epsilon, float *y);

/// softmax or log_softmax along `axis`.
void softmax(const float *x, const Shape &xs, int64_t axis, bool log, float *y);

//===----------------------------------------------------------------------===//
// Products
//===----------------------------------------------------------------------===//

/// What a fused product does to each output element after the sum: adds a
/// bias (per output row or per output column) and applies an activation,
/// rounding to f32 after each step as the unfused ops would.
struct Epilogue {
  const float *rowBias = nullptr; // indexed by the output row
  const float *colBias = nullptr; // indexed by the output column
  Unary act;
};

/// C[M, N] = A[M, K] x B[K, N] (row strides lda, ldb, ldc), then the
/// epilogue. Loop order i-k-j: the inner loop runs over contiguous B and C
/// rows; accumulation in double, k in order.
void gemm(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb,
          float *C, int64_t ldc, const Epilogue &epi = {});

/// out[c, r] = in[r, c] for an [R, C] matrix.
void transpose2d(const float *in, int64_t R, int64_t C, float *out);

/// dense with the weight already transposed: x [rows, K] x wT [K, U] -> y [rows, U].
void denseTransposed(const float *x, int64_t rows, int64_t K, const float *wT, int64_t U, float *y,
                     const Epilogue &epi = {});

/// numpy/ONNX MatMul: 1-D operands promoted, batch dims broadcast.
void matmul(const float *a, const Shape &as, const float *b, const Shape &bs, float *y);

/// batch_matmul: [B|1, M, K] x [B|1, K, N] (each optionally transposed in its
/// last two dims).
void batchMatmul(const float *a, const Shape &as, bool ta, const float *b, const Shape &bs, bool tb,
                 float *y, const Shape &ys);

//===----------------------------------------------------------------------===//
// Sliding windows (NCHW)
//===----------------------------------------------------------------------===//

/// A 2-D window: size, strides, dilation, pads (top/left and bottom/right).
using Window = sdk::Window2d;

/// conv2d: x [N, C, H, W], w [O, C/groups, KH, KW] -> y [N, O, OH, OW]; the
/// epilogue's rowBias is per output channel. im2col + gemm per image and
/// group (1x1 stride-1 unpadded convolutions read the input directly).
void conv2d(const float *x, const Shape &xs, const float *w, const Shape &ws, const Window &win,
            int64_t groups, float *y, const Shape &ys, const float *bias, const Unary &act);

void maxPool2d(const float *x, const Shape &xs, const Window &win, float *y, const Shape &ys);
void avgPool2d(const float *x, const Shape &xs, const Window &win, bool countIncludePad, float *y,
               const Shape &ys);
/// [N, C, H, W] -> [N, C, 1, 1].
void globalPool2d(const float *x, const Shape &xs, bool max, float *y);

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

/// y.shape[i] = x.shape[perm[i]].
void transpose(const float *x, const Shape &xs, const std::vector<int64_t> &perm, float *y);

/// Concatenation along `axis` of inputs of the given shapes.
void concat(std::span<const float *const> xs, const std::vector<Shape> &shapes, int64_t axis,
            float *y);

} // namespace tessera::json_plugin
