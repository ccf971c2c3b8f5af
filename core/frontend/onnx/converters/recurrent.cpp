//===- frontend/onnx/converters/recurrent.cpp - ONNX recurrent converters ---===//
// Placeholder until its converter helper writes it.
#include "frontend/onnx/converters/common.h"

namespace tessera::frontend::onnx {

Status registerRecurrentConverters(ConverterRegistry &r) { return okStatus(); }

} // namespace tessera::frontend::onnx
