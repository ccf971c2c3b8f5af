//===- plugins/json/ops.h - The ops the json plugin runs ---------*- C++ -*-===//
//
// One table says which core ops (docs/ops.md) the plugin takes, with which
// attributes, and how to run them. The checker and the runtime both go
// through prepareOp(), so the plugin never accepts at partition time a call
// that it cannot run, and a graph that was tampered with (a saved module
// edited by hand, a core bug) is refused at load instead of overrunning a
// buffer: prepareOp re-derives the output shape from the inputs and the
// attributes and compares it with the declared one.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "kernels.h"

#include "tessera/sdk/plugin.hpp"

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace tessera::json_plugin {

/// A prepared op: reads its inputs (in the op's argument order) and writes
/// its single output. Everything static (shapes, attributes, pre-packed
/// weights) is captured; scratch memory is allocated per call, so one Kernel
/// may run on several threads at once.
using Kernel = std::function<void(std::span<const float *const> inputs, float *output)>;

/// The core ops the plugin takes.
const std::vector<std::string> &supportedOps();

/// What may follow a conv2d or dense inside the same kernel (a composite
/// node): a bias (one more input: [O] per output channel, or [U] per unit)
/// and an activation.
struct Fusion {
  bool bias = false;
  Unary act;
};

/// Validates one op call and prepares its kernel. `constants` has one entry
/// per input: the constant's data, or null when the input is computed at run
/// time (used to pre-pack weights; may be empty). Throws sdk::Error with a
/// one-line reason when the plugin does not take the call ("only f32, got
/// f16", "attribute 'pads' must have 4 values, got 2").
Kernel prepareOp(const sdk::OpDesc &op, std::span<const float *const> constants = {},
                 const Fusion &fusion = {});

/// The op as an activation a conv2d/dense kernel can apply, when it is a
/// unary elementwise op of the plugin (relu, clip, gelu, ...).
std::optional<Unary> activationOf(const sdk::OpDesc &op);

} // namespace tessera::json_plugin
