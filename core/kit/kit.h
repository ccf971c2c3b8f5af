//===- kit/kit.h - The vendor conformance kit -------------------*- C++ -*-===//
//
// `tessera plugin-check PLUGIN.so` runs this on a plugin file: for every op
// the plugin claims, small single-op functions over a spread of shapes,
// attributes and dtypes (the sample catalogue); for every pattern, graphs the
// pattern matches (each alternative, each optional op present and absent),
// outlined as composites exactly as the partitioner outlines them. Each case
// goes through the plugin's checker, codegen, save, load through its module
// factory, and is run (both the compiled and the reloaded module) on random
// inputs from a fixed seed; the outputs are compared with the reference
// interpreter:
//   f32, f64        |got - want| <= 1e-5 + 1e-4 * |want|
//   f16, bf16       |got - want| <= 1e-3 + 1e-2 * |want|
//   ints and bool   exact;  NaN must meet NaN
// A case the checker declines is reported with its reason and is not a
// failure; a claimed op without samples is one ("no samples for op X"), so
// the catalogue grows with what plugins claim.
//
// The catalogue and pattern instantiation need no plugin and are unit-tested
// on their own (tests/unit/plugin_bridge_test.cpp).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/module.h"
#include "bridge/pattern.h"
#include "support/error.h"

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::plugin {
class LoadedPlugin;
}

namespace tessera::kit {

/// Where random values of an argument are drawn from (so that log, sqrt,
/// divide and batch_norm's variance see valid inputs).
enum class Domain : uint8_t {
  Any,      // floats in [-1, 1]; ints in [-5, 5]
  Positive, // [0.5, 2]; ints [1, 5]
  NonZero,  // +-[0.5, 2]; ints +-[1, 5]
  Unit,     // [-0.9, 0.9] (asin, acos, atanh)
  AboveOne, // [1.1, 3] (acosh)
};

/// The domain of argument `index` of `op`.
Domain argDomain(std::string_view op, size_t index);

/// One argument of a sample: a function input, or a constant (weights).
struct ArgSpec {
  ir::Type type;
  bool constant = false;
  Domain domain = Domain::Any;
};

/// One single-op case of the catalogue.
struct OpSample {
  std::string op;
  ir::Attrs attrs; // as given; the op's schema fills the defaults
  std::vector<ArgSpec> args;

  /// "conv2d pads=[1,1,1,1] strides=[2,2] f32[1,3,8,8] const f32[8,3,3,3]"
  std::string label() const;
};

/// The catalogue's samples for `op` (empty when it has none).
std::vector<OpSample> samplesFor(std::string_view op);
/// Every core op with at least one sample, sorted.
std::vector<std::string> catalogueOps();

/// A ready-to-run case: a module whose @main computes it.
struct KitCase {
  std::string label;
  ir::Module module;                // @main; its parameters get random inputs
  std::vector<Domain> inputDomains; // one per parameter of @main
  /// Empty for an op case; the pattern's declared name for a pattern case.
  std::string pattern;
  /// What the checker sees: the op call (op case) or the matched op calls in
  /// post-order (pattern case).
  std::vector<ir::Expr> ops;
  /// A symbolic case (plugins that take symbolic dims, ABI 1.4): the same
  /// computation at concrete sizes, at each of which the module compiled
  /// from `module` is run. Empty for an ordinary case.
  std::vector<ir::Module> sizes;
};

/// The symbolic twin of an op case: dim 0 of every input the symbol
/// N(1, 4), with its instances at N = 1 and 3 (same constants); nullopt when
/// the op's relation does not admit it.
std::optional<KitCase> buildSymbolicCase(const KitCase &kc);

/// The values of `dims` (symbols of `symbolic`) in `concrete`, the same
/// computation at one size: read off the types, node by node.
Expected<std::vector<int64_t>> symbolValuesAt(const ir::Function &symbolic,
                                              const ir::Function &concrete,
                                              const std::vector<int64_t> &dims);

/// Builds a sample's case; constants are random from `seed`.
Expected<KitCase> buildOpCase(const OpSample &sample, uint64_t seed);

/// One variant of a pattern: the case, or why it could not be built.
struct PatternVariant {
  std::string label;
  std::optional<KitCase> kase;
  std::string error;
};

/// At most this many variants per pattern.
inline constexpr size_t kMaxPatternVariants = 64;

/// The variants of `pattern` (declared by plugin `pluginName`): every
/// alternative and every optional op present and absent, combined, up to
/// kMaxPatternVariants. Leaves '*' become inputs and 'const' constants;
/// shapes come from the ops' first catalogue sample, a binary op's leaf is
/// shaped like its other operand ('const' leaves per channel: [C, 1, 1] for
/// NCHW, else the last dim), and attribute predicates are satisfied. Each
/// graph is matched with the pattern and the match outlined as a composite
/// "<plugin>.<pattern>" called from @main.
std::vector<PatternVariant> instantiatePattern(const bridge::Pattern &pattern,
                                               const std::string &pluginName, uint64_t seed);

/// A random tensor of a tensor type.
ir::Tensor randomTensor(const ir::Type &type, Domain domain, std::mt19937_64 &rng);

/// Empty when `got` matches `want` within the dtype's tolerance (see above);
/// else what differs ("element 5 [0, 1, 1]: got 0.5, want 0.25").
std::string compareTensors(const ir::Tensor &got, const ir::Tensor &want);

struct KitOptions {
  /// Only this op or pattern name (empty: everything).
  std::string filter;
  bool verbose = false;
  uint64_t seed = 20240917;
};

struct KitSummary {
  int passed = 0, failed = 0, declined = 0;
};

/// Runs the kit on a loaded plugin, writing one line per case and the
/// closing "N passed, M failed, K declined".
KitSummary runKit(const plugin::LoadedPlugin &plugin, const KitOptions &options, std::ostream &out);

} // namespace tessera::kit
