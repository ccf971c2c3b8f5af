//===- frontend/onnx/converters/signal.cpp - ONNX signal converters ---===//
// Placeholder until its converter helper writes it.
#include "frontend/onnx/converters/common.h"

namespace tessera::frontend::onnx {

Status registerSignalConverters(ConverterRegistry &r) { return okStatus(); }

} // namespace tessera::frontend::onnx
