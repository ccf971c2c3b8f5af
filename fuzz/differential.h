//===- fuzz/differential.h - Running a module before and after -*- C++ -*-===//
//
// What the differential targets (passes, partition) share: which fuzzed
// modules are small enough to interpret, their inputs (drawn from a hash of
// the fuzz input), and the comparison of two runs' outputs.
//
// Floats are compared with a tolerance, since rewrites change arithmetic
// (batch_norm into a multiply and an add): |a - b| at most 1e-4 (1e-2 for
// f16 and bf16) times (1 + the output's largest finite magnitude), and
// infinities exactly. Where the interpreter's output is NaN, any value is
// accepted: what an op makes of a NaN input is not the same everywhere
// (the interpreter propagates it; oneDNN's relu and max give the other
// operand, as the x86 max instructions do). A NaN where the interpreter has
// a number is a mismatch. Integers and bools are compared exactly.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "interp/interpreter.h"
#include "ir/module.h"
#include "ir/parser.h"
#include "ir/visit.h"
#include "passes/pass.h"
#include "plugin/registry.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace tessera::fuzz {

constexpr int64_t kMaxInterpretedElements = 4096; // per tensor type
constexpr size_t kMaxNodes = 400;                 // per module

constexpr double kMaxConstantMagnitude = 1e4;

/// Whether every tensor the module computes is small enough to interpret
/// quickly (and the module is small), and every float constant is finite and
/// at most kMaxConstantMagnitude in magnitude: with larger weights the
/// intermediate values of a conv or dense come near the float range, and
/// where they overflow depends on the order a backend sums in (the
/// interpreter sums in double), which is no bug.
inline bool small(const ir::Module &m) {
  size_t nodes = 0;
  std::function<bool(const ir::Type &)> fits = [&](const ir::Type &t) {
    if (t.isTensor()) // the interpreter runs fixed shapes only
      return t.isStatic() && t.numElements() <= kMaxInterpretedElements;
    for (const ir::Type &f : t.fields())
      if (!fits(f))
        return false;
    return !t.isFunc() || fits(t.result());
  };
  for (const auto &[name, fn] : m.functions())
    for (const ir::ExprNode *n : ir::postOrder(fn->body(), /*intoFunctions=*/true)) {
      if (++nodes > kMaxNodes || !fits(n->type()))
        return false;
      if (const auto *c = n->as<ir::ConstantNode>(); c && ir::isFloat(c->data().dtype()))
        for (double x : c->data().toDoubles())
          if (!(std::abs(x) <= kMaxConstantMagnitude))
            return false;
    }
  return true;
}

/// An input of type `t`: floats in [-2, 2] in steps of 1/8, small integers.
inline ir::Tensor input(const ir::Type &t, std::mt19937_64 &rng) {
  std::vector<double> v(size_t(t.numElements()));
  for (double &x : v) {
    if (ir::isFloat(t.dtype()))
      x = double(int64_t(rng() % 33) - 16) / 8; // -2 .. 2 in steps of 1/8
    else if (ir::isBool(t.dtype()))
      x = double(rng() % 2);
    else if (ir::isUnsignedInteger(t.dtype()))
      x = double(rng() % 4);
    else
      x = double(int64_t(rng() % 7) - 3);
  }
  return ir::Tensor::fromDoubles(t.dtype(), t.shape(), v);
}

/// A tensor's type and its first elements, for messages.
inline std::string describe(const ir::Tensor &a) {
  std::string s = a.type().str() + " [";
  auto v = a.toDoubles();
  for (size_t i = 0; i < v.size() && i < 16; ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + (v.size() > 16 ? ", ...]" : "]");
}

/// Why the tensor `got` is not `want`, or "".
inline std::string mismatch(const ir::Tensor &want, const ir::Tensor &got) {
  if (want.type() != got.type())
    return "type " + got.type().str() + ", expected " + want.type().str();
  auto a = want.toDoubles(), b = got.toDoubles();
  double scale = 1;
  for (double x : a)
    if (std::isfinite(x))
      scale = std::max(scale, 1 + std::abs(x));
  const bool exact = !ir::isFloat(want.dtype());
  const double tol = want.dtype() == ir::DType::F16 || want.dtype() == ir::DType::BF16 ? 1e-2
                                                                                      : 1e-4;
  for (size_t i = 0; i < a.size(); ++i) {
    bool same = exact ? a[i] == b[i]
                      : (std::isnan(a[i]) ? true
                         : std::isinf(a[i]) ? a[i] == b[i]
                                            : std::abs(a[i] - b[i]) <= tol * scale);
    if (!same)
      return "element " + std::to_string(i) + ": " + std::to_string(b[i]) + ", expected " +
             std::to_string(a[i]) + "\n  expected " + describe(want) + "\n  got      " +
             describe(got);
  }
  return {};
}


/// Inputs for @main's parameters, or nothing when one is not a tensor.
inline std::optional<std::vector<ir::Tensor>> inputsFor(const ir::Function &main,
                                                         std::string_view seed) {
  std::mt19937_64 rng(std::hash<std::string_view>()(seed));
  std::vector<ir::Tensor> inputs;
  for (const auto &p : main->params()) {
    if (!p->type().isTensor())
      return std::nullopt;
    inputs.push_back(input(p->type(), rng));
  }
  return inputs;
}

/// Keeps every plugin of `registry` loaded until the process ends. The
/// registry unloads its plugins when it is destroyed at exit, before
/// LeakSanitizer looks: what their static initializers allocated would then
/// be reported as leaked, from code that is no longer mapped.
inline void keepPluginsLoaded(const plugin::PluginRegistry &registry) {
  static const auto *kept = new std::vector<std::shared_ptr<plugin::LoadedPlugin>>(
      registry.plugins().begin(), registry.plugins().end());
  (void)kept;
}

/// The plugins to use, in priority order, without those that were not
/// built: those a first line "# targets: a,b" names (so that a kept
/// reproducer says what it needs), else one of `choices` picked by a hash of
/// `text`. Keeps the plugins loaded.
inline std::vector<std::string> targetsFor(std::string_view text,
                                           const std::vector<std::vector<std::string>> &choices) {
  const auto &registry = plugin::PluginRegistry::global();
  keepPluginsLoaded(registry);
  std::vector<std::string> named;
  constexpr std::string_view kHeader = "# targets: ";
  if (text.starts_with(kHeader)) {
    std::string_view list = text.substr(kHeader.size());
    list = list.substr(0, list.find('\n'));
    while (!list.empty()) {
      size_t comma = std::min(list.find(','), list.size());
      named.emplace_back(list.substr(0, comma));
      list.remove_prefix(std::min(comma + 1, list.size()));
    }
  }
  const auto &chosen =
      text.starts_with(kHeader) ? named : choices[std::hash<std::string_view>()(text) % choices.size()];
  std::vector<std::string> targets;
  for (const std::string &t : chosen)
    if (registry.find(t))
      targets.push_back(t);
  return targets;
}

/// A fuzz input worth running both ways, and its first run.
struct Case {
  ir::Module module;
  std::vector<ir::Tensor> inputs;
  interp::Value before; // the interpreter's outputs on the module as parsed
};

/// The Case of `text` when it parses, verifies, is small, has a @main over
/// tensors and runs on the inputs drawn for it; otherwise nothing.
inline std::optional<Case> prepare(std::string_view text) {
  auto parsed = ir::parseModule(text, "fuzz.tir");
  if (!parsed.ok() || !passes::verifyModule(*parsed).ok() || !small(*parsed))
    return std::nullopt;
  ir::Function main = parsed->find("main");
  if (!main)
    return std::nullopt;
  auto inputs = inputsFor(main, text);
  if (!inputs)
    return std::nullopt;
  auto before = interp::run(*parsed, *inputs);
  if (!before.ok())
    return std::nullopt;
  return Case{std::move(parsed).value(), std::move(*inputs), std::move(before).value()};
}

/// Why the outputs `got` are not `want`, or "".
inline std::string compareOutputs(const interp::Value &want, const interp::Value &got) {
  auto w = want.flatten(), g = got.flatten();
  if (w.size() != g.size())
    return std::to_string(g.size()) + " outputs, expected " + std::to_string(w.size());
  for (size_t i = 0; i < w.size(); ++i)
    if (std::string why = mismatch(w[i], g[i]); !why.empty())
      return "output " + std::to_string(i) + ": " + why;
  return {};
}

} // namespace tessera::fuzz
