//===- ir/symbol.h - Symbolic dims ------------------------------*- C++ -*-===//
//
// A dim of a shape is a constant (>= 0) or a symbol: dim kFirstSymbol - k is
// the k-th entry of a process-wide table (docs/design/0013-dynamic-shapes.md).
// Symbols sit far below the small negative numbers that int lists use (a
// reshape's -1, a bad pad), so printing an int list never names a symbol.
//
//   named    an input's symbolic dim ("N", an ONNX dim_param), with bounds
//   derived  a dim an op computes from symbols (a convolution's output
//            height over a symbolic H), known only at run time
//   run-time a dim that data decides (the count of NonZero's results), set
//            while the model runs by the op that makes it (runtimeSymbol)
//
// Every symbol carries kProbes probe values. Relations are not rewritten for
// symbols: Op::inferType runs an op's relation once per probe, with every
// symbol replaced by its probe value, and reads each output dim back: the
// same value in every probe (and at the bounds) is a constant; the probe
// values of an input symbol are that symbol; anything else is the derived
// symbol with those probe values. Derived symbols are interned by their probe
// values, so two ops that compute the same dim from the same symbols (two
// branches of equal convolutions) give the same symbol, and a later add of
// the two type-checks. They are also keyed by the run-time symbols they
// depend on (`roots`): min(R1, 300) and min(R2, 300) agree at every probe
// where R1, R2 > 300, but are different dims. A named symbol's probes are B + {0, 1, 2, 3, 7, 15,
// 31, 63} with B a multiple of 64 distinct per name (256 .. 2496: a 4-d
// tensor of symbols stays within kMaxElements): every probe pair straddles a
// multiple of 2..64 somewhere, so the floor divisions of strides and
// kernels (floor((H - 1) / 2) + 1 against floor(H / 2)) tell apart.
// Probing is evidence, not proof: two dims it calls equal are equal at the
// probes. Each derived symbol keeps the definitions that made it
// (SymbolDefinition), and the compiler checks the formula it fits against
// every one of them over the symbols' ranges (compile/symbol_formulas.h).
//
// Bounds are inclusive; hi == kUnbounded when there is none. A derived
// symbol's bounds are its relation evaluated at its inputs' bounds (relations
// are monotone in their input dims), when that evaluation succeeds.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "support/error.h"

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::ir {

inline constexpr size_t kProbes = 8;
inline constexpr int64_t kUnbounded = -1;

struct SymbolInfo {
  std::string name; // named symbols; "" for derived ones
  int64_t lo = 0;
  int64_t hi = kUnbounded;
  std::array<int64_t, kProbes> probes{};
  bool runtime = false;       // set while the model runs (runtimeSymbol)
  std::vector<int64_t> roots; // the run-time symbols a derived one depends on (sorted)
  /// The named symbols it comes from (sorted; a named symbol: itself). Part
  /// of a derived symbol's identity: H(1..) and H(3..) share probe values
  /// (those follow the name), and a dim derived from one is not one derived
  /// from the other (a process compiling two models kept the first's).
  std::vector<int64_t> named;
  bool derived() const { return name.empty(); }
  bool bounded() const { return hi != kUnbounded; }
};

/// How a derived symbol is computed: the relation (or shape-value kernel)
/// that produced it, as a function of the symbols it was computed from.
/// The compiler fits a formula to it (compile/symbol_formulas.h) that the
/// artifact carries, so that no relation runs at run time.
struct SymbolDefinition {
  std::vector<int64_t> sources; // symbols, named or derived
  /// The dim at concrete values of `sources` (same order); nullopt where
  /// the relation fails there (an input too small for a convolution).
  std::function<std::optional<int64_t>(std::span<const int64_t>)> eval;
  std::string what; // "conv2d result dim 2"
  /// Tells definitions apart (the op, its attributes and input types):
  /// inference runs again in every pass, and repeats are not kept.
  std::string key;
};

inline constexpr int64_t kFirstSymbol = -(int64_t(1) << 40);
inline bool isSymbol(int64_t dim) { return dim <= kFirstSymbol; }
/// Whether every dim is a constant.
bool isStatic(std::span<const int64_t> shape);

/// Whether `name` can name a symbol: a letter or '_', then letters, digits
/// or '_'.
bool isSymbolName(std::string_view name);
/// The dim of the named symbol `name` with bounds lo..hi (the same name and
/// bounds give the same symbol). Errors: an empty or ill-formed name, lo > hi,
/// negative bounds, or the table of named symbols is full.
Expected<int64_t> namedSymbol(std::string_view name, int64_t lo = 1, int64_t hi = kUnbounded);
/// A fresh run-time symbol (never interned: every call is a new dim) named
/// `name` (made unique with a suffix), with bounds 0..hi: the count of a
/// data-dependent op's results (docs/design/0013-dynamic-shapes.md, "Run-time
/// values"). Errors as namedSymbol.
Expected<int64_t> runtimeSymbol(std::string_view name, int64_t hi);
/// The dim of the derived symbol with these probe values, bounds and
/// run-time roots (interned by them).
int64_t derivedSymbol(const std::array<int64_t, kProbes> &probes, int64_t lo, int64_t hi,
                      std::vector<int64_t> roots = {}, std::vector<int64_t> named = {});
/// A dim read back from evaluations at the probes (ir/op.cpp for types, the
/// ONNX importer for shape values): `values[j]` at probe j, `atLo`/`atHi` at
/// the symbols' lower/upper bounds (nullopt where that evaluation failed or a
/// symbol is unbounded). The same value everywhere is that constant; the
/// probes and lower bound of one of `inputs` is that symbol (max(H, 3)
/// follows H at the probes, not at H = 1); else the derived symbol with
/// those values and bounds (keyed by the run-time roots of `inputs`).
/// `atNext` (with every named symbol at its lower bound + 1, valueNearLo) is
/// more evidence for the constant test: a clamped symbol (min(R, 8)) is 8 at
/// every probe, and a relation may fail at its lower bound 0.
int64_t readBackDim(const std::array<int64_t, kProbes> &values, std::optional<int64_t> atLo,
                    std::optional<int64_t> atHi, std::span<const int64_t> inputs,
                    std::optional<int64_t> atNext = std::nullopt);
/// A derived dim read back from text ("?3fa0"): its formula is not in the
/// text, so it is a symbol of that name with no relation to others; a
/// declared type matches an inferred one whose derived dim prints the same
/// (typesMatch, type.h).
int64_t derivedPlaceholder(std::string_view printed);
/// The value of `dim` when every named symbol it comes from is at its
/// lower bound + 1 (within its bounds): a derived one through its first
/// definition, so that N and 2N are 2 and 4, not 2 and 3. Nullopt where a
/// definition is missing or fails.
std::optional<int64_t> valueNearLo(int64_t dim);
/// valueNearLo of each of `symbols`, in order; nullopt when one has none.
std::optional<std::vector<int64_t>> valuesNearLo(std::span<const int64_t> symbols);
/// Records a definition of derived symbol `dim` (the first few are kept:
/// probing makes two formulas that agree at the probes one symbol, and the
/// compiler checks every kept one against the formula it fits).
void defineSymbol(int64_t dim, SymbolDefinition definition);
/// The definitions recorded for `dim` (empty for named symbols).
std::vector<SymbolDefinition> symbolDefinitions(int64_t dim);
/// The table entry of symbol dim `dim` (isSymbol(dim) and made by the two
/// functions above; anything else is an internal error, checked).
const SymbolInfo &symbolInfo(int64_t dim);
/// Whether `dim` is a symbol the table holds.
bool isKnownSymbol(int64_t dim);

/// "N" for a named symbol with the default bounds (1, none), "N(1, 8)" or
/// "N(0)" with others (the text IR reads both), "?" + four hex digits of its
/// probe values and bounds for a derived one (stable across runs), the number
/// for a constant.
std::string dimStr(int64_t dim);

} // namespace tessera::ir
