//===- ir/ops/ops.h - Registration of the core op set ----------*- C++ -*-===//
//
// One registration function per op group; registerCoreOps() (register.cpp)
// calls them all, in the order below. Each group lives in one file with its
// type relations and reference kernels; a family too large for one file is
// split into groups (nn, elementwise, transform). docs/ops.md describes
// every op.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/op.h"

namespace tessera::ir::ops {

/// conv2d, conv2d_transpose (nn_conv.cpp).
Status registerConvOps(OpRegistry &r);
/// max_pool2d, max_pool2d_indices, avg_pool2d, global_avg_pool2d,
/// global_max_pool2d (nn_pool.cpp).
Status registerPoolOps(OpRegistry &r);
/// dense, matmul, batch_matmul (nn_matmul.cpp).
Status registerMatmulOps(OpRegistry &r);
/// bias_add, batch_norm, layer_norm, softmax, log_softmax, resize2d: the rest
/// of the NN family (nn.cpp).
Status registerNNOps(OpRegistry &r);
/// Binary arithmetic, comparisons (equal, less, greater), unary math,
/// activations, where, cast (elementwise.cpp).
Status registerElementwiseOps(OpRegistry &r);
/// The elementwise ops added for the ONNX frontend: mod, bit_shift,
/// less_equal, greater_equal, sign, trigonometric and hyperbolic functions,
/// isnan, isinf, logical ops (elementwise_ext.cpp).
Status registerElementwiseExtOps(OpRegistry &r);
/// reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_prod, argmax,
/// argmin.
Status registerReduceOps(OpRegistry &r);
/// reshape, flatten, transpose, concat, split (transform.cpp).
Status registerTransformOps(OpRegistry &r);
/// slice, squeeze, unsqueeze, pad, expand (transform_slice.cpp).
Status registerSliceOps(OpRegistry &r);
/// gather, gather_elements (transform_gather.cpp).
Status registerGatherOps(OpRegistry &r);
/// cumsum, topk (transform_cumsum_topk.cpp).
Status registerCumsumTopkOps(OpRegistry &r);
/// gather_nd, scatter_nd and other index-driven ops.
Status registerIndexOps(OpRegistry &r);
/// grid_sample, roi_align: image sampling ops.
Status registerImageOps(OpRegistry &r);
/// det and other linear algebra.
Status registerLinalgOps(OpRegistry &r);
/// if, loop: run-time control flow over closed functions (control.cpp).
Status registerControlOps(OpRegistry &r);
/// lstm: a whole recurrent sequence as one op.
Status registerRecurrentOps(OpRegistry &r);
/// nonzero: ops whose result size the data decides (data_dependent.cpp).
Status registerDataDependentOps(OpRegistry &r);
/// seq_empty, seq_construct, seq_insert, seq_erase, seq_at, seq_length,
/// concat_from_seq (sequence.cpp)
Status registerSequenceOps(OpRegistry &r);

} // namespace tessera::ir::ops
