//===- frontend/onnx/converters/reduce.cpp - ONNX reduce converters ----===//
// Placeholder until its converter helper writes it.
#include "frontend/onnx/converter.h"

namespace tessera::frontend::onnx {

Status registerReduceConverters(ConverterRegistry &r) { return okStatus(); }

} // namespace tessera::frontend::onnx
