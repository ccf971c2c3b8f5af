//===- fuzz/passes.cpp - The default pipeline keeps what a module computes -===//
//
// A differential target. Any text IR that parses and verifies, whose tensors
// are small: the default pass pipeline (with the verifier after every pass)
// either fails with an error, or gives a module on which the reference
// interpreter computes what it computes on the original, on the same inputs
// (drawn from a hash of the fuzz input).
//
// Floats are compared with a tolerance, since simplify-inference rewrites
// arithmetic (batch_norm into a multiply and an add): |a - b| at most
// 1e-4 * (1 + the output's largest magnitude), NaN only where NaN. Integers
// and bools are compared exactly. A module the interpreter refuses on these
// inputs (an index out of range) is skipped.
//
//===----------------------------------------------------------------------===//
#include "fuzz_check.h"

#include "interp/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/visit.h"
#include "passes/pass_manager.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <random>

using namespace tessera;

namespace {

constexpr int64_t kMaxElements = 4096; // per tensor type
constexpr size_t kMaxNodes = 400;      // per module

/// Whether every tensor the module computes is small enough to interpret
/// quickly (and the module is small).
bool small(const ir::Module &m) {
  size_t nodes = 0;
  std::function<bool(const ir::Type &)> fits = [&](const ir::Type &t) {
    if (t.isTensor())
      return t.numElements() <= kMaxElements;
    for (const ir::Type &f : t.fields())
      if (!fits(f))
        return false;
    return !t.isFunc() || fits(t.result());
  };
  for (const auto &[name, fn] : m.functions())
    for (const ir::ExprNode *n : ir::postOrder(fn->body(), /*intoFunctions=*/true)) {
      if (++nodes > kMaxNodes || !fits(n->type()))
        return false;
    }
  return true;
}

ir::Tensor input(const ir::Type &t, std::mt19937_64 &rng) {
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

std::string describe(const ir::Tensor &a) {
  std::string s = a.type().str() + " [";
  auto v = a.toDoubles();
  for (size_t i = 0; i < v.size() && i < 16; ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + (v.size() > 16 ? ", ...]" : "]");
}

/// Why `got` is not `want`, or "".
std::string mismatch(const ir::Tensor &want, const ir::Tensor &got) {
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
                      : (std::isnan(a[i]) ? std::isnan(b[i])
                         : std::isinf(a[i]) ? a[i] == b[i]
                                            : std::abs(a[i] - b[i]) <= tol * scale);
    if (!same)
      return "element " + std::to_string(i) + ": " + std::to_string(b[i]) + ", expected " +
             std::to_string(a[i]) + "\n  expected " + describe(want) + "\n  got      " +
             describe(got);
  }
  return {};
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  auto parsed = ir::parseModule(text, "fuzz.tir");
  if (!parsed.ok() || !passes::verifyModule(*parsed).ok() || !small(*parsed))
    return 0;
  ir::Function main = parsed->find("main");
  if (!main)
    return 0;
  std::mt19937_64 rng(std::hash<std::string_view>()(text));
  std::vector<ir::Tensor> inputs;
  for (const auto &p : main->params()) {
    if (!p->type().isTensor())
      return 0;
    inputs.push_back(input(p->type(), rng));
  }
  auto before = interp::run(*parsed, inputs);
  if (!before.ok())
    return 0;

  ir::Module optimized = *parsed;
  passes::PassManagerOptions options;
  options.verifyEach = true;
  auto pm = passes::PassManager::fromPipeline(passes::kDefaultPipeline,
                                              passes::PassRegistry::standard(), options);
  FUZZ_REQUIRE(pm.ok(), pm.ok() ? "" : pm.error().str());
  Status s = pm->run(optimized);
  FUZZ_REQUIRE(s.ok(), s.ok() ? "" : s.error().str() + "\n" + ir::printModule(*parsed));
  auto after = interp::run(optimized, inputs);
  FUZZ_REQUIRE(after.ok(), after.ok() ? "" : after.error().str() + "\n" + ir::printModule(optimized));
  auto want = before->flatten(), got = after->flatten();
  FUZZ_REQUIRE(want.size() == got.size(), "a different number of outputs");
  for (size_t i = 0; i < want.size(); ++i) {
    std::string why = mismatch(want[i], got[i]);
    FUZZ_REQUIRE(why.empty(), "output " + std::to_string(i) + ": " + why + "\n---- original\n" +
                                  ir::printModule(*parsed) + "---- optimized\n" +
                                  ir::printModule(optimized));
  }
  return 0;
}
