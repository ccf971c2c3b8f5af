//===- frontend/onnx/converters/sequence.cpp - ONNX sequence converters ---===//
// Placeholder until its converter helper writes it.
#include "frontend/onnx/converter.h"

namespace tessera::frontend::onnx {

Status registerSequenceConverters(ConverterRegistry &r) { return okStatus(); }

} // namespace tessera::frontend::onnx
