//===- frontend/onnx/converters/recurrent_internal.h - RNN internals -*- C++ -*-===//
//
// What recurrent.cpp and recurrent_activation.cpp share: the activation
// functions of the ONNX recurrent ops (RNN, GRU, LSTM's `activations`, with
// `activation_alpha` and `activation_beta`), parsed and applied as core ops
// for the recurrences that recurrent.cpp unrolls. Private to
// converters/.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/onnx/converters/common.h"

#include <optional>
#include <string>

namespace tessera::frontend::onnx::recurrent_detail {

/// One activation function of a recurrent op with its alpha and beta; the
/// name in lower case.
struct Activation {
  std::string name;
  double alpha = 0, beta = 0;
};

/// Parses a name, case-insensitively as ONNX runtimes do, with the
/// function's default alpha and beta; nullopt for an unknown name.
std::optional<Activation> makeActivation(std::string name);

/// How many of alpha and beta the function takes (0, 1 or 2).
int activationParams(const std::string &name);

/// The activation applied to `x` as core ops.
Expected<ir::Expr> applyActivation(NodeContext &ctx, const Activation &a, const ir::Expr &x);

} // namespace tessera::frontend::onnx::recurrent_detail
