//===- frontend/onnx/converters/elementwise_internal.h - elementwise internals ----*- C++ -*-===//
//
// What the files of the elementwise converter family share: the small
// builders of elementwise.cpp and the activation converters
// (elementwise_activation.cpp) that registerElementwiseConverters()
// (elementwise.cpp) registers. Private to converters/ (not installed, not
// used elsewhere).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/onnx/converters/common.h"

#include <string_view>

namespace tessera::frontend::onnx::elementwise_detail {

using ir::DType;
using ir::Expr;
using ir::Tensor;

// Small builders (elementwise.cpp).
Expected<Expr> call1(NodeContext &ctx, std::string_view op, Expr a, ir::Attrs attrs = {});
Expected<Expr> call2(NodeContext &ctx, std::string_view op, Expr a, Expr b);
Expected<Expr> call3(NodeContext &ctx, std::string_view op, Expr a, Expr b, Expr c);
Expected<Outputs> single(Expected<Expr> e);
Expected<double> floatAttr(const NodeContext &ctx, std::string_view name, float fallback);

// The activations (elementwise_activation.cpp).
Expected<Outputs> convertLeakyRelu(NodeContext &ctx);
Expected<Outputs> convertHardSigmoid(NodeContext &ctx);
Expected<Outputs> convertElu(NodeContext &ctx);
Expected<Outputs> convertSelu(NodeContext &ctx);
Expected<Outputs> convertCelu(NodeContext &ctx);
Expected<Outputs> convertSoftplus(NodeContext &ctx);
Expected<Outputs> convertSoftsign(NodeContext &ctx);
Expected<Outputs> convertThresholdedRelu(NodeContext &ctx);
Expected<Outputs> convertShrink(NodeContext &ctx);
Expected<Outputs> convertPRelu(NodeContext &ctx);
Expected<Outputs> convertClip(NodeContext &ctx);

} // namespace tessera::frontend::onnx::elementwise_detail
