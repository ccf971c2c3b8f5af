//===- plugins/dnnl/ops.h - The ops the dnnl plugin takes -------*- C++ -*-===//
//
// One analysis per core op (docs/ops.md): read the attributes with their
// defaults, check the call the way the core's type relation does (the
// declared output shape must be the computed one, so a tampered graph is
// refused instead of overrunning a buffer), and say how oneDNN 2.6 runs it:
// which primitive, which algorithm, which oneDNN-convention parameters
// (dilation - 1, right padding widened for ceil_mode, ...). What oneDNN
// cannot express exactly is declined with a one-line reason.
//
// The checker and the plan builder (plan.cpp) both go through analyzeOp(),
// so what the checker accepts is what the runtime builds.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tessera/sdk/plugin.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::dnnl_plugin {

using Dims = std::vector<int64_t>;

/// The primitive family an op maps to.
enum class OpKind {
  Conv,      // convolution_forward
  Deconv,    // deconvolution_forward
  Dense,     // inner_product_forward over [rows, K]
  Matmul,    // matmul (matmul and batch_matmul)
  BatchNorm, // batch_normalization_forward, global stats
  LayerNorm, // layer_normalization_forward over [outer, inner]
  Pool,      // pooling_v2_forward (also the global pools)
  Eltwise,   // one or two eltwise_forward
  Binary,    // binary (also bias_add)
  Softmax,   // softmax_v2_forward
  Concat,    // concat
  Resample,  // resampling_forward (resize2d, half_pixel only)
  View,      // reshape, flatten, squeeze, unsqueeze: a new shape, same bytes
  Transpose, // a reorder into a view of the output with permuted strides
  Slice,     // a reorder from a strided, offset view of the input
};

/// One oneDNN eltwise operation (as a primitive or a post-op).
struct Eltwise {
  dnnl::algorithm alg = dnnl::algorithm::eltwise_relu;
  float alpha = 0, beta = 0;
};

/// What analyzeOp() found: everything the plan builder needs.
struct OpInfo {
  OpKind kind = OpKind::View;
  // Conv, Deconv, Pool (oneDNN conventions: dilation 0 = dense).
  Dims strides, dilation, padL, padR, kernel;
  int64_t groups = 1;
  dnnl::algorithm alg = dnnl::algorithm::undef; // Pool, Binary, Softmax
  // Eltwise: applied in order (hard_sigmoid is linear then clip).
  std::vector<Eltwise> eltwise;
  // Binary: the operands to pass as src0/src1 (swapped when the first one
  // is the broadcast one and the op commutes, or is a subtract), src1's
  // dims padded to rank.
  bool swapOperands = false;
  bool negate = false; // a swapped subtract: the result is negated
  Dims src1Dims;
  // BatchNorm, LayerNorm, Softmax, Concat, BiasAdd.
  int64_t axis = 1;
  float epsilon = 1e-5f;
  bool hasShift = false; // LayerNorm: beta given
  // Matmul: the operands as oneDNN sees them (1-D promoted, ranks padded).
  Dims aDims, bDims, yDims;
  bool transA = false, transB = false;
  // Matmul: a's batch dims folded into its rows ([B..., M, K] x [K, N] as
  // [B*M, K] x [K, N]: the same bytes, one GEMM instead of B small ones).
  bool foldedBatch = false;
  // Dense: [rows, K] x [U, K].
  int64_t rows = 0, K = 0, units = 0;
  // Transpose: the permutation. Slice: per input dim, the first index taken
  // and the step (the output's dims are the count).
  Dims perm, starts, steps;
};

/// The core ops the checker is asked about (it declines those the host runs
/// faster, with the reason).
const std::vector<std::string> &supportedOps();

/// Validates one op call; throws sdk::Error with the reason (without the
/// "dnnl: <op>: " prefix, see declineReason) when oneDNN cannot run it.
OpInfo analyzeOp(const sdk::OpDesc &op);

/// "dnnl: <op>: <what>".
std::string declineReason(const std::string &op, const std::string &what);

/// The unary ops as oneDNN eltwise operations, when `op` is one; used by
/// the fusion of activations into conv2d/dense post-ops.
bool eltwiseOf(const sdk::OpDesc &op, std::vector<Eltwise> &out);

/// oneDNN's dims of a tensor shape: rank 0 becomes [1].
dnnl::memory::dims dnnlDims(const Dims &shape);

} // namespace tessera::dnnl_plugin
