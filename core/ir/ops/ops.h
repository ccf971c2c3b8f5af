//===- ir/ops/ops.h - Registration of the core op set ----------*- C++ -*-===//
//
// One registration function per family; registerCoreOps() (register.cpp)
// calls them all. Each family lives in one file with its type relations and
// reference kernels. docs/ops.md describes every op.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/op.h"

namespace tessera::ir::ops {

/// conv2d, conv2d_transpose, dense, matmul, batch_matmul, bias_add,
/// batch_norm, layer_norm, max_pool2d, avg_pool2d, global_avg_pool2d,
/// global_max_pool2d, max_pool2d_indices, softmax, log_softmax, resize2d.
Status registerNNOps(OpRegistry &r);
/// Binary arithmetic (incl. mod), comparisons, logical ops, unary math
/// (incl. trigonometric, sign, isnan, isinf), activations, where, cast.
Status registerElementwiseOps(OpRegistry &r);
/// reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_prod, argmax,
/// argmin.
Status registerReduceOps(OpRegistry &r);
/// reshape, flatten, transpose, concat, split, slice, squeeze, unsqueeze,
/// pad, expand, gather, gather_elements, cumsum, topk.
Status registerTransformOps(OpRegistry &r);
/// gather_nd, scatter_nd and other index-driven ops.
Status registerIndexOps(OpRegistry &r);
/// grid_sample, roi_align: image sampling ops.
Status registerImageOps(OpRegistry &r);
/// det and other linear algebra.
Status registerLinalgOps(OpRegistry &r);

} // namespace tessera::ir::ops
