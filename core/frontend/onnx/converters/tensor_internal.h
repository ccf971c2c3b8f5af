//===- frontend/onnx/converters/tensor_internal.h - tensor family internals ----*- C++ -*-===//
//
// What the files of the tensor converter family share: the helpers of
// tensor.cpp, the limit on the constants that converters build, and the
// converters that registerTensorConverters() (tensor.cpp) registers from the
// other files: tensor_constant.cpp (constants and shape queries),
// tensor_index.cpp (indexing) and tensor_runtime.cpp (shape arguments of data). Private to converters/ (not installed, not
// used elsewhere).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/onnx/converters/common.h"

#include <string_view>

namespace tessera::frontend::onnx::tensor_detail {

using ir::DType;
using ir::Expr;

/// Constants that converters build are limited to this many elements (a
/// malformed model must not make the importer allocate without bound).
constexpr int64_t kMaxConstantElements = int64_t(1) << 28;

// Helpers (tensor.cpp).
Expected<Ints> constantInts(NodeContext &ctx, size_t i, std::string_view name);
Expected<int64_t> normAxis(NodeContext &ctx, int64_t axis, int64_t rank, std::string_view what);

/// 0, 1, ..., N - 1 as i64 [N] for N = range_count(start, limit, delta): a
/// run-time symbol without an upper bound, <node>_<what>, returned in `n`
/// (tensor_constant.cpp).
Expected<Expr> runtimeIota(NodeContext &ctx, const Expr &start, const Expr &limit,
                           const Expr &delta, std::string_view what, int64_t &n);

// Shape arguments that are data values known only at run time
// (tensor_runtime.cpp), for the converters of tensor.cpp.
Expected<Outputs> reshapeOfData(NodeContext &ctx, int64_t allowZero);
Expected<Outputs> expandOfData(NodeContext &ctx);
Expected<Outputs> tileOfData(NodeContext &ctx);
Expected<Outputs> sliceOfData(NodeContext &ctx);
Expected<Outputs> topkOfData(NodeContext &ctx, int64_t axis, bool largest);

// Converters that registerTensorConverters() (tensor.cpp) registers.

// tensor_constant.cpp
Expected<Outputs> convertConstant(NodeContext &ctx);
Expected<Outputs> convertShape(NodeContext &ctx);
Expected<Outputs> convertSize(NodeContext &ctx);
Expected<Outputs> convertConstantOfShape(NodeContext &ctx);
Expected<Outputs> convertRange(NodeContext &ctx);
Expected<Outputs> convertEyeLike(NodeContext &ctx);
// tensor_index.cpp
Expected<Outputs> convertGather(NodeContext &ctx);
Expected<Outputs> convertGatherElements(NodeContext &ctx);
Expected<Outputs> convertTrilu(NodeContext &ctx);
Expected<Outputs> convertOneHot(NodeContext &ctx);
Expected<Outputs> convertCumSum(NodeContext &ctx);
Expected<Outputs> convertTopK(NodeContext &ctx);

} // namespace tessera::frontend::onnx::tensor_detail
