//===- frontend/onnx/converters/nn_internal.h - nn family internals ----*- C++ -*-===//
//
// What the files of the nn converter family share: the window of a
// convolution or pooling node and its helpers (nn_conv.cpp), and the
// converters that registerNNConverters() (nn.cpp) registers from the other
// files: nn_conv.cpp (Conv, ConvTranspose), nn_pool.cpp (MaxPool,
// AveragePool, GlobalAveragePool, GlobalMaxPool) and nn_norm.cpp
// (BatchNormalization, InstanceNormalization, LayerNormalization, LRN).
// Private to converters/ (not installed, not used elsewhere).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/onnx/converters/common.h"

#include <optional>
#include <span>
#include <string_view>

namespace tessera::frontend::onnx::nn_detail {

using ir::DType;
using ir::Expr;

/// The window of a Conv/ConvTranspose/pool node: kernel, strides, dilations
/// and explicit pads [begin..., end...] (auto_pad resolved, except for
/// ConvTranspose, which resolves its own).
struct Window {
  Ints kernel, strides, dilations, pads;
};

// Windows (nn_conv.cpp).
Expected<Window> readWindow(NodeContext &ctx, std::span<const int64_t> in,
                            std::optional<Ints> kernelFallback, bool resolveAutoPad = true);
Status requireRankIn(NodeContext &ctx, const Expr &x, int64_t lo, int64_t hi,
                     std::string_view what);
Window window1dAs2d(const Window &w);
Window windowHW(const Window &w);

// Converters that registerNNConverters() (nn.cpp) registers.

// nn_conv.cpp
Expected<Outputs> convertConv(NodeContext &ctx);
Expected<Outputs> convertConvTranspose(NodeContext &ctx);
// nn_pool.cpp
Expected<Outputs> convertPool(NodeContext &ctx, bool isMax);
Expected<Outputs> convertGlobalPool(NodeContext &ctx, const char *op);
// nn_norm.cpp
Expected<Outputs> convertBatchNorm(NodeContext &ctx);
Expected<Outputs> convertInstanceNorm(NodeContext &ctx);
Expected<Outputs> convertLayerNorm(NodeContext &ctx);
Expected<Outputs> convertLRN(NodeContext &ctx);

} // namespace tessera::frontend::onnx::nn_detail
