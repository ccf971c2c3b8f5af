//===- frontend/onnx/converters/loss.cpp - ONNX loss and misc converters ---===//
// Placeholder until its converter helper writes it.
#include "frontend/onnx/converter.h"

namespace tessera::frontend::onnx {

Status registerLossConverters(ConverterRegistry &r) { return okStatus(); }

} // namespace tessera::frontend::onnx
