//===- frontend/onnx/converters/loss_internal.h - loss family internals ----*- C++ -*-===//
//
// What the files of the loss converter family share: the helpers of loss.cpp
// and the converters that registerLossConverters() (loss.cpp) registers from
// the other files: loss_einsum.cpp (Einsum), loss_index.cpp (the index ops
// and the ops with data-dependent output shapes) and loss_quantize.cpp (the
// quantization ops). Private to converters/ (not installed, not used
// elsewhere).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/onnx/converters/common.h"

#include <string_view>

namespace tessera::frontend::onnx::loss_detail {

using ir::DType;
using ir::Expr;
using ir::Tensor;

// Helpers (loss.cpp).
Expr scalarInt(NodeContext &ctx, DType dt, int64_t v);
Expected<Expr> reduceAll(NodeContext &ctx, std::string_view op, const Expr &x);
Expected<Expr> integerInput(NodeContext &ctx, size_t i, std::string_view name);

// Converters that registerLossConverters() (loss.cpp) registers.

// loss_einsum.cpp
Expected<Outputs> convertEinsum(NodeContext &ctx);
// loss_index.cpp
Expected<Outputs> convertGatherND(NodeContext &ctx);
Expected<Outputs> convertScatterND(NodeContext &ctx);
Expected<Outputs> convertScatterElements(NodeContext &ctx);
Expected<Outputs> convertCompress(NodeContext &ctx);
Expected<Outputs> convertReverseSequence(NodeContext &ctx);
Expected<Outputs> convertNonZero(NodeContext &ctx);
Expected<Outputs> convertUnique(NodeContext &ctx);
Expected<Outputs> convertNMS(NodeContext &ctx);
// loss_quantize.cpp
Expected<Outputs> convertQuantizeLinear(NodeContext &ctx);
Expected<Outputs> convertDequantizeLinear(NodeContext &ctx);
Expected<Outputs> convertDynamicQuantizeLinear(NodeContext &ctx);
Expected<Outputs> convertMatMulInteger(NodeContext &ctx);
Expected<Outputs> convertConvInteger(NodeContext &ctx);
Expected<Outputs> convertQLinearMatMul(NodeContext &ctx);
Expected<Outputs> convertQLinearConv(NodeContext &ctx);

} // namespace tessera::frontend::onnx::loss_detail
