//===- compile/lower_internal.h - The walk that lowers @main ----*- C++ -*-===//
//
// The Lowerer builds the executor plan in one post-order walk of @main
// (lower.h): ops, fused trees and region calls in lower.cpp, the run-time
// control flow of if and loop in lower_control.cpp. Private to those two.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compile/lower.h"

#include "codegen/host_ops.h"
#include "compile/symbol_formulas.h"
#include "compile/symbolic_steps.h"
#include "partition/partition.h"

#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace tessera::compile::detail {

using namespace ir;

/// What an expression evaluates to: one buffer, or a tuple of values.
struct Value {
  int64_t buffer = -1; // >= 0: a tensor in that buffer
  std::vector<Value> fields;
};

void flattenInto(const Value &v, std::vector<uint32_t> &out);
/// "conv2d 'c1'", "'x'", "a value".
std::string describeNode(const ExprNode &n);

class Lowerer {
public:
  Lowerer(const Module &m, const std::vector<CompiledRegion> &regions);

  Expected<LoweredModel> run();

private:
  uint32_t planSymbol(int64_t dim) { return symbols_.index(dim); }
  /// Whether a host step over `call` has symbolic shapes (lowered by a fit).
  static bool isSymbolic(const CallNode &call) { return !partition::callIsStatic(call); }
  Status addDerivedDims(const Type &type, const ExprNode &n);

  /// Lowers @main's op calls ahead (kept for lowerOpCall) to find the
  /// constants that only kernels with a layout of their own read
  /// (KernelCall::packed): those are stored in that layout alone.
  void findPackedOnly(const std::vector<const ExprNode *> &order, const FunctionNode &main);

  uint32_t addBuffer(runtime::BufferKind kind, const Type &type, std::string name = {});

  /// A Constant buffer for `t`, each tensor buffer once (copies of a Tensor
  /// share their bytes, so equal data pointers and types are one constant).
  uint32_t addConstant(const Tensor &t, const std::string &name);

  /// New Activation buffers shaped like `type` (a tensor or a tuple).
  Expected<Value> newValue(const Type &type, const ExprNode &n);

  Status visit(const ExprNode &n);

  /// The value of an operand visited before; function values have none.
  Expected<const Value *> valueOf(const ExprNode &n) const;

  /// The buffers of `call`'s arguments; the `packed` ones (tensors) are
  /// their laid-out constants instead.
  Expected<std::vector<uint32_t>> argBuffers(const CallNode &call,
                                             std::vector<codegen::PackedInput> packed = {});

  Status lowerOpCall(const CallNode &call);

  /// A SetSymbol step: run-time symbol `dim` takes the value in `from`.
  void setSymbol(int64_t dim, const Value &from, std::string label);

  /// A sequence op (ir/ops/sequence.cpp): one Sequence step, which sets
  /// the run-time dims of an element it takes out (lower_control.cpp).
  Status lowerSequenceCall(const CallNode &call);

  /// A HostFused call (compile/fuse.h): one step whose loop computes the
  /// whole elementwise tree.
  Status lowerFusedCall(const CallNode &call);

  /// The Host step of `call` (its arguments, then its results, then the
  /// kernel's scratch buffer if it has one) and its host code spec.
  Status addHostStep(const CallNode &call, codegen::HostStepSpec spec, std::string label,
                     std::optional<codegen::SymbolicInt> scratch = {});

  //===- Run-time control flow (ir/ops/control.cpp) ----------------------===//
  // The functions' steps go inline between Jump and LoopTest steps
  // (runtime/plan.h); their results are copied into the buffers the op
  // returns, which both branches (every iteration) write.

  size_t addControlStep(runtime::StepKind kind, std::vector<uint32_t> args, std::string label);

  void addCopy(uint32_t from, uint32_t to, std::string label);
  /// Copies `from` into row `index` (an i64 buffer) of `to` (a loop's scan
  /// output: [rows, from's shape...]).
  void addCopyAt(uint32_t from, uint32_t index, uint32_t to, std::string label);

  /// The steps of `fn`'s body with its parameters bound to `args`.
  Expected<Value> lowerBody(const FunctionNode &fn, const std::vector<Value> &args);

  /// Copies every tensor of `from` into the same place of `to`. A source
  /// that is also a destination (a loop body returning its carried values
  /// swapped) is first copied aside, so no copy reads a value already
  /// overwritten.
  void copyInto(const std::vector<uint32_t> &from, const std::vector<uint32_t> &to,
                const std::string &label);

  Expected<std::vector<Value>> argValues(const CallNode &call, size_t first) const;

  static std::vector<uint32_t> flat(const Value &v);

  /// if(cond, then, else, args...):
  ///   Jump unless cond -> else; then's steps; copy; Jump -> end;
  ///   else: else's steps; copy; end:
  Status lowerIf(const CallNode &call);

  /// loop(trip, cond, body, carried..., captured...):
  ///   copy the initial values; iteration = 0;
  ///   head: LoopTest -> end; body's steps; copy (cond, carried) back;
  ///   Increment iteration; Jump -> head; end:
  Status lowerLoop(const CallNode &call);

  Status lowerRegionCall(const CallNode &call);

  Status bindOutputs(const FunctionNode &main);

  const Module &module_;
  const std::vector<CompiledRegion> &regions_;
  std::unordered_map<std::string, size_t> regionIndex_;
  std::unordered_map<const ExprNode *, Value> values_;
  std::map<std::pair<const void *, std::string>, uint32_t> constants_;
  Tensor zero_; // a loop's first iteration number (kept alive: constants_ keys on its bytes)
  std::vector<Tensor> keptAlive_; // laid-out constants (likewise)
  std::unordered_map<const CallNode *, codegen::KernelCall> lowered_; // by findPackedOnly
  std::unordered_map<const CallNode *, SymbolicKernel> fitted_;       // likewise
  std::unordered_set<const ExprNode *> packedOnly_; // constants stored laid out only
  LoweredModel out_;
  PlanSymbolTable symbols_{out_.plan.symbols};
};

} // namespace tessera::compile::detail
