//===- frontend/onnx/converters/tensor.cpp - ONNX tensor converters ----===//
// Placeholder until its converter helper writes it.
#include "frontend/onnx/converter.h"

namespace tessera::frontend::onnx {

Status registerTensorConverters(ConverterRegistry &r) { return okStatus(); }

} // namespace tessera::frontend::onnx
