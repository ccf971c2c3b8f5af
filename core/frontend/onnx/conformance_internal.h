//===- frontend/onnx/conformance_internal.h - Comparing outputs -*- C++ -*-===//
//
// Private to the conformance runner (conformance.cpp): how a result is
// compared with the test data's expected value (conformance_compare.cpp).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/onnx/tensor_proto.h"
#include "interp/interpreter.h"

#include <iosfwd>
#include <string>

namespace tessera::frontend::onnx::conformance_detail {

/// Empty when `got` matches `want`, else the first mismatch (all of them,
/// up to 10, to `verbose`). `k` names the output ("output 0", "output 1[2]"
/// for element 2 of a sequence output).
std::string compareOutput(const std::string &k, const ir::Tensor &got, const ir::Tensor &want,
                          std::ostream *verbose);

/// compareOutput over sequences (tuples or sequences of run-time length),
/// element by element.
std::string compareValue(const std::string &k, const interp::Value &got, const OnnxValue &want,
                         std::ostream *verbose);

} // namespace tessera::frontend::onnx::conformance_detail
