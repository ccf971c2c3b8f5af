//===- frontend/onnx/converters/elementwise.cpp - ONNX elementwise converters ----===//
// Placeholder until its converter helper writes it.
#include "frontend/onnx/converter.h"

namespace tessera::frontend::onnx {

Status registerElementwiseConverters(ConverterRegistry &r) { return okStatus(); }

} // namespace tessera::frontend::onnx
