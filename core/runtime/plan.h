//===- runtime/plan.h - The executor plan ----------------------*- C++ -*-===//
//
// What the compiler decides and the runtime follows: a list of steps over
// buffers. Every buffer has a static shape and dtype and lives in one of
//   Input       the caller's tensor bound to model input `index`
//   Output      the session's storage for model output `index` (or a
//               caller's tensor bound to it)
//   Constant    `offset` bytes into the artifact's weights section
//   Activation  `offset` bytes into the session's arena; two activations
//               whose lifetimes do not overlap may share bytes (planMemory)
// Steps run in order:
//   Host        calls `symbol` of the host shared object (runtime/host_abi.h)
//               with the data pointers of `args` (inputs then outputs)
//   External    calls function `symbol` of plugin module `module` with the
//               DLTensors of `args` (inputs then outputs)
//   Copy        copies args[0] into args[1] (same size): a model output that
//               is an input, a constant or another output, a branch's or a
//               loop body's result into the buffer the If or Loop returns;
//               with 3 args (2 inputs), args[0] into row args[1] (one i64)
//               of args[2] ([rows, args[0]'s shape...]): a loop's scan
//               output; past the rows memory was planned for, the session
//               grows memory when the rows are a run-time symbol without an
//               upper bound, and refuses otherwise
// and the control-flow steps of run-time If and Loop (their bodies are
// steps of the same list; docs/design/0013-dynamic-shapes.md):
//   Jump        goes to step `target`: always (no args), or when the one
//               element of args[0] (bool or integer) is zero
//   LoopTest    args = {iteration, trip count, condition} (i64, i64, bool or
//               integer, one element each): goes to step `target` unless
//               iteration < trip count and the condition is non-zero
//   Increment   adds one to args[0] (i64, one element, an activation)
// and the steps over sequences (lists of tensors of run-time length; a
// sequence buffer has TensorInfo::sequence and no bytes: the session holds
// its elements):
//   Sequence    runs sequence op `symbol` (ir/ops/sequence.cpp: seq_empty,
//               seq_construct, seq_insert, seq_erase, seq_at, seq_length,
//               concat_from_seq; stack_from_seq is concat_from_seq with
//               new_axis) on its inputs into its one output, `target` the
//               axis of the last two; the symbol dims of the output of
//               seq_at, concat_ and stack_from_seq are run-time symbols the
//               step sets from what it takes
// A Copy between two sequence buffers copies the list.
// And, for ops whose result size the data decides (NonZero):
//   SetSymbol   sets run-time symbol `target` (Plan::symbols) to the one
//               i64 element of args[0], which the op's step wrote; the
//               derived symbols computed from it follow, and with them the
//               shapes of the buffers that have them
// A static model's plan has none of them; `target` may be steps.size()
// (the end). A buffer used inside a loop (a backward jump's range) and
// outside it stays live across the whole loop (planMemory).
// `label` names what the step computes ("conv2d 'conv1'", the region's
// symbol) for errors and profiles.
//
// The plan is stored in the artifact as JSON (readable by `tessera inspect`).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "support/error.h"
#include "support/export.h"

#include <dlpack/dlpack.h>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::runtime {

/// A dim >= 0 is a constant; a dim < 0 is a symbol of the plan, known when
/// the inputs are bound: dim -1 - k is Plan::symbols[k].
inline bool isSymbolDim(int64_t d) { return d < 0; }
inline size_t symbolIndexOf(int64_t d) { return size_t(-1 - d); }
inline int64_t symbolDim(size_t k) { return -1 - int64_t(k); }

struct TensorInfo {
  std::string name; // model inputs/outputs: their names; others may be empty
  DLDataType dtype{kDLFloat, 32, 1};
  std::vector<int64_t> shape;
  /// A sequence: a list of tensors of `dtype` (shape empty), each of rank
  /// elementRank (-1: any).
  bool sequence = false;
  int64_t elementRank = -1;

  /// Element count times element size (bool: one byte); 0 when a dim is a
  /// symbol (see resolved()) and for a sequence.
  TESSERA_RT_EXPORT uint64_t bytes() const;
  /// "f32[1, 3, 224, 224]" (symbols as "$k"; Plan::str names them);
  /// "seq(f32[_, _])", "seq(f32)" for sequences
  TESSERA_RT_EXPORT std::string str() const;
  /// Whether a dim is a symbol.
  TESSERA_RT_EXPORT bool symbolic() const;
  /// The same with every symbol replaced by its value (`values[k]`).
  TESSERA_RT_EXPORT TensorInfo resolved(const std::vector<int64_t> &values) const;
};

/// A symbolic dim of a plan (docs/design/0013-dynamic-shapes.md): a model
/// input's dim, whose value the bound tensor gives at run time, or a dim
/// derived from earlier symbols (a convolution's output height), computed
/// when the inputs are bound as
///   floor((constant + sum of coefficient * product of symbols) / divisor)
/// (the compiler's fit of the op's relation, compile/symbol_formulas.h).
/// clamped into atLeast..atMost (min(R, 300)), or a run-time symbol: a
/// count the data decides, set by a SetSymbol step while the model runs.
/// Values lie within lo..hi (inclusive; hi < 0: no upper bound); a derived
/// value outside them means the inputs are too small (or large) for the
/// model, and the run is refused naming `definedBy`. Memory is planned
/// with every run-time symbol at its upper bound (it must have one), and
/// the formulas are monotone, so a run-time value never outgrows it.
struct PlanSymbol {
  struct Term {
    int64_t coefficient = 0;
    std::vector<uint32_t> symbols; // indices of earlier symbols
  };
  std::string name;
  int64_t lo = 1;
  int64_t hi = -1;
  int64_t divisor = 0; // 0: an input's dim or a run-time symbol; >= 1: derived
  int64_t constant = 0;
  std::vector<Term> terms;
  int64_t atLeast = std::numeric_limits<int64_t>::min();
  int64_t atMost = std::numeric_limits<int64_t>::max();
  std::string definedBy; // derived: "conv2d '/conv1/Conv' result dim 2"
  bool runtime = false;  // set by a SetSymbol step

  bool derived() const { return divisor > 0; }
  bool clamped() const {
    return atLeast != std::numeric_limits<int64_t>::min() ||
           atMost != std::numeric_limits<int64_t>::max();
  }
};

/// Derived symbol k's formula over the others' names: "floor((H - 1) / 2) +
/// 1" is written "floor((H + 1) / 2)", "H*W + 3", ...
TESSERA_RT_EXPORT std::string symbolFormula(const std::vector<PlanSymbol> &symbols, size_t k);

/// Derived symbol k's value from the values before it. Errors as below.
TESSERA_RT_EXPORT Expected<int64_t> deriveSymbolValue(const std::vector<PlanSymbol> &symbols,
                                                      const std::vector<int64_t> &values,
                                                      size_t k);

/// Fills in the derived symbols of `values` (the inputs' given, the derived
/// ones in any state), in order. Errors name the derived dim, its
/// definition and the values it was computed from.
TESSERA_RT_EXPORT Status deriveSymbolValues(const std::vector<PlanSymbol> &symbols,
                                            std::vector<int64_t> &values);

enum class BufferKind : uint8_t { Input, Output, Constant, Activation };

struct Buffer {
  BufferKind kind = BufferKind::Activation;
  uint32_t index = 0;  // Input / Output: the model input's / output's index
  uint64_t offset = 0; // Constant: into the weights; Activation: into the arena
  TensorInfo info;
};

enum class StepKind : uint8_t {
  Host,
  External,
  Copy,
  Jump,
  LoopTest,
  Increment,
  SetSymbol,
  Sequence
};

/// The sequence ops a Sequence step runs (Step::symbol).
TESSERA_RT_EXPORT bool isSequenceStepOp(std::string_view op);

struct Step {
  StepKind kind = StepKind::Host;
  std::string symbol;
  int32_t module = -1; // External: index into Plan::modules
  std::vector<uint32_t> args; // buffer ids, inputs first
  uint32_t numInputs = 0;
  uint32_t target = 0; // Jump, LoopTest: the step to go to; SetSymbol: the symbol;
                       // Sequence: the axis of concat_/stack_from_seq
  std::string label;
  /// Host: the graph nodes it computes ("conv1, relu1": a fused step's every
  /// named op call, root last), for the profile and placement's per-op
  /// times; empty when unnamed (or in artifacts written before it).
  std::string nodes;
  /// External: the plan symbols whose values a symbolic region's function
  /// takes, in its order (empty: a static function).
  std::vector<uint32_t> symbols;
};

/// One plugin module of the artifact (its ExternalModule section is the
/// `section`-th of that kind, in file order).
struct ModuleRef {
  std::string typeKey;
  std::string plugin;        // the plugin that compiled it
  std::string pluginVersion;
  uint32_t section = 0;
};

struct Plan {
  /// The symbols buffer dims refer to (empty: a static plan).
  std::vector<PlanSymbol> symbols;
  std::vector<Buffer> buffers;
  std::vector<Step> steps;
  std::vector<uint32_t> inputs;  // buffer id of each model input, in order
  std::vector<uint32_t> outputs; // buffer id of each model output, in order
  std::vector<ModuleRef> modules;
  uint64_t arenaBytes = 0;   // set by planMemory
  uint64_t weightsBytes = 0; // size the weights section must have
  /// Sum of all activation sizes without reuse (for the report).
  uint64_t activationBytesNoReuse = 0;

  /// "f32[N, 3, 224, 224]", symbols by name.
  TESSERA_RT_EXPORT std::string str(const TensorInfo &info) const;
  /// Values the compiler plans memory at: each input symbol's upper bound,
  /// or its lower bound when it has none, and the derived symbols computed
  /// from those (a session plans again at the real ones).
  TESSERA_RT_EXPORT std::vector<int64_t> nominalSymbolValues() const;
};

inline constexpr uint64_t kBufferAlignment = 64;

/// With symbols, the sizes are those at `symbolValues` (one per symbol).
/// Assigns Activation offsets by liveness (a buffer is live from the step
/// that first writes it to the last step that reads it, widened to a whole
/// loop when it is used both inside and outside it; best-fit reuse of
/// freed ranges, 64-byte aligned) and sets arenaBytes and
/// activationBytesNoReuse. Errors on a plan that reads an activation before
/// any step writes it.
TESSERA_RT_EXPORT Status planMemory(Plan &plan, const std::vector<int64_t> &symbolValues = {});

/// Per buffer, the steps [first, last] during which its bytes must be kept
/// (from its first write to its last read, widened to a whole loop when it
/// is used inside and outside the loop): what planMemory plans by, and the
/// buffers a session moves when memory grows mid-run.
struct LiveRange {
  int64_t first = 0, last = 0;
};
TESSERA_RT_EXPORT Expected<std::vector<LiveRange>> liveRanges(const Plan &plan);

/// Per plan symbol, whether it is k or computed from k (through other
/// symbols too): what changes when k's value does.
TESSERA_RT_EXPORT std::vector<bool> symbolsFollowing(const Plan &plan, size_t k);

/// Checks a plan's internal consistency: buffer ids, module indices, input/
/// output lists, constant ranges against `weightsBytes`, activation ranges
/// against arenaBytes (at the nominal symbol values), Copy steps' sizes, the
/// symbols (bounds; each one is a dim of some input, so binding the inputs
/// gives its value; constants have none). Every message names the step.
TESSERA_RT_EXPORT Status validatePlan(const Plan &plan);

TESSERA_RT_EXPORT std::string serializePlan(const Plan &plan);
/// Parses and validates; messages name the JSON field that is wrong.
TESSERA_RT_EXPORT Expected<Plan> parsePlan(std::string_view json);

/// "f32", "i64", "bool", "bf16", ... for DLDataType (lanes must be 1).
TESSERA_RT_EXPORT std::string dtypeString(DLDataType t);
TESSERA_RT_EXPORT Expected<DLDataType> parseDtypeString(std::string_view s);

} // namespace tessera::runtime
