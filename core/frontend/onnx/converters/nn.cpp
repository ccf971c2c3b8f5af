//===- frontend/onnx/converters/nn.cpp - ONNX nn converters ----===//
// Placeholder until its converter helper writes it.
#include "frontend/onnx/converter.h"

namespace tessera::frontend::onnx {

Status registerNNConverters(ConverterRegistry &r) { return okStatus(); }

} // namespace tessera::frontend::onnx
