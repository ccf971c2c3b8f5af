//===- unit/symbolic_test_util.h - Helpers for symbolic-shape tests -*- C++ -*-===//
//
// Compiling text IR with symbolic dims, random inputs, comparing with the
// reference interpreter, and the message of a refused run
// (compile_symbolic_test.cpp, compile_derived_test.cpp).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <catch2/catch.hpp>

#include "compile/compile.h"
#include "interp/interpreter.h"
#include "ir/parser.h"
#include "runtime/session.h"

#include <cmath>
#include <random>
#include <string>

namespace tessera::test {

/// "[v0, v1, ...]": `n` values from a fixed seed, for constants.
inline std::string values(size_t n, unsigned seed) {
  std::mt19937 rng{seed};
  std::uniform_real_distribution<double> u(-1, 1);
  std::string out = "[";
  for (size_t i = 0; i < n; ++i)
    out += (i ? ", " : "") + std::to_string(u(rng));
  return out + "]";
}

/// |got - want| <= 1e-5 + 1e-5 |want| elementwise (same f32 arithmetic,
/// other summation orders and the host's vectorised exp).
inline void requireClose(const ir::Tensor &got, const ir::Tensor &want) {
  REQUIRE(got.shape() == want.shape());
  for (int64_t k = 0; k < got.numel(); ++k) {
    const double g = got.getDouble(k), w = want.getDouble(k);
    INFO("element " << k);
    REQUIRE(std::abs(g - w) <= 1e-5 + 1e-5 * std::abs(w));
  }
}

/// `text` parsed; a parse error fails the test.
inline ir::Module parse(const std::string &text) {
  auto m = ir::parseModule(text);
  if (!m.ok())
    FAIL(m.error().str());
  return std::move(m).value();
}

inline ir::Tensor randomTensor(const ir::Type &t, std::mt19937 &rng) {
  std::uniform_real_distribution<double> u(-1, 1);
  ir::Tensor out(t.dtype(), t.shape());
  for (int64_t i = 0; i < out.numel(); ++i)
    out.setDouble(i, u(rng));
  return out;
}

/// `m` compiled (host-only by default) and loaded; an error fails the test.
inline std::shared_ptr<const runtime::LoadedModel>
compileModule(const ir::Module &m, const compile::CompileOptions &options = {},
              const plugin::PluginRegistry *registry = nullptr) {
  auto r = compile::compileModule(m, options, registry);
  if (!r.ok())
    FAIL(r.error().str());
  auto model = runtime::LoadedModel::load(r->artifact, "cnn.tsr");
  if (!model.ok())
    FAIL(model.error().str());
  return *model;
}

inline std::shared_ptr<const runtime::LoadedModel> compileText(const std::string &text) {
  return compileModule(parse(text));
}

/// Runs `session` on `inputs` and compares every output (its shape is this
/// run's) with the interpreter's on `m` (the symbolic model itself, or the
/// model with its symbols written as this run's values).
inline void checkRun(runtime::Session &session, const ir::Module &m,
                     const std::vector<ir::Tensor> &inputs) {
  for (size_t i = 0; i < inputs.size(); ++i)
    REQUIRE(session.setInput(i, inputs[i].dl()).ok());
  auto ran = session.run();
  if (!ran.ok())
    FAIL(ran.error().str());
  auto want = interp::run(m, inputs);
  if (!want.ok())
    FAIL(want.error().str());
  auto expected = want->flatten();
  for (size_t o = 0; o < expected.size(); ++o) {
    auto out = session.output(o);
    REQUIRE(out.ok());
    INFO("output " << o);
    requireClose(ir::Tensor::copyOf(**out), expected[o]);
  }
}

/// checkRun on random inputs shaped as `fixed`'s parameters.
inline void checkAgainst(runtime::Session &session, const ir::Module &fixed, unsigned seed) {
  std::mt19937 rng{seed};
  std::vector<ir::Tensor> inputs;
  for (const auto &p : fixed.find("main")->params())
    inputs.push_back(randomTensor(p->type(), rng));
  checkRun(session, fixed, inputs);
}

inline std::string runError(runtime::Session &session, const std::vector<ir::Tensor> &inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto s = session.setInput(i, inputs[i].dl());
    if (!s.ok())
      return s.error().str();
  }
  auto ran = session.run();
  return ran.ok() ? "" : ran.error().str();
}

} // namespace tessera::test
