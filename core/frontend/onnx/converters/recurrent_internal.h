//===- frontend/onnx/converters/recurrent_internal.h - RNN internals -*- C++ -*-===//
//
// What recurrent.cpp, recurrent_parse.cpp and recurrent_activation.cpp
// share: a recurrent node's attributes and inputs, checked and normalised
// (recurrent_parse.cpp), and the activation functions of the ONNX recurrent
// ops (RNN, GRU, LSTM's `activations`, with `activation_alpha` and
// `activation_beta`), parsed and applied as core ops for the recurrences
// that recurrent.cpp unrolls. Private to converters/.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/onnx/converters/common.h"

#include <optional>
#include <string>
#include <vector>

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

enum class Cell { RNN, GRU, LSTM };

/// The attributes and inputs of one RNN/GRU/LSTM node, normalised to
/// layout 0: X [S, B, I], initial states [D, B, H].
struct Recurrence {
  Cell cell;
  int64_t gates; // 1, 3, 4
  int64_t hidden, seq, batch, inputSize, dirs;
  bool forwardOnlyReverse = false; // direction == "reverse"
  int64_t layout = 0;
  std::vector<Activation> acts; // per direction, actsPerDir entries each
  size_t actsPerDir;
  std::optional<double> clip;
  int64_t linearBeforeReset = 0, inputForget = 0;
  ir::Expr x, w, r, b, h0, c0, p;
};

/// Reads and checks one RNN/GRU/LSTM node's attributes and inputs
/// (recurrent_parse.cpp); errors name the node and the attribute or input.
Expected<Recurrence> parseRecurrence(NodeContext &ctx, Cell cell);

} // namespace tessera::frontend::onnx::recurrent_detail
