//===- codegen/host_ops.h - Host ops as kernel-library calls ----*- C++ -*-===//
//
// How one call of a core op left on the host becomes one call of a kernel
// of the kernel library (codegen/kernels/tk.h): which kernel, and the
// attributes flattened into integer and float arrays in the order that
// kernel reads them. The code generator turns a KernelCall into a host
// step function (codegen/host.h); the unit tests call the natively compiled
// kernels with it directly.
//
// No LLVM here. The lowerings are grouped by op family
// (host_ops_<family>.cpp); each file documents, next to each lowering, the
// layout of `ia` / `fa` that its kernel reads.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/expr.h"
#include "support/error.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::codegen {

/// A constant argument that a kernel takes in a layout of its own, laid out
/// once at compile time: the step passes `data` in place of argument
/// `input` (compile/lower.cpp), and the kernel's attributes say so.
struct PackedInput {
  size_t input;
  ir::Tensor data;
};

struct KernelCall {
  std::string kernel;       // "conv2d" -> the symbol tk_conv2d
  std::vector<int64_t> ia;  // integer attributes, kernel-specific layout
  std::vector<double> fa;   // float attributes, kernel-specific layout
  uint64_t scratchBytes = 0; // temporary memory the kernel needs (tk_args::scratch)
  std::vector<PackedInput> packed; // constant arguments in the kernel's layout
};

/// Regions of one kernel's scratch memory (KernelCall::scratchBytes), each
/// 64-byte aligned: take(n) returns its offset.
struct Scratch {
  uint64_t bytes = 0;
  int64_t take(uint64_t n) {
    auto off = int64_t(bytes);
    bytes += (n + 63) / 64 * 64;
    return off;
  }
};

/// A call's argument and result types, as the lowering sees them: one
/// TensorType per argument and one per output (tuple results give one per
/// field, in order).
struct HostOpTypes {
  std::vector<ir::Type> inputs;  // tensor types
  std::vector<ir::Type> outputs; // tensor types
  /// Lowering for a step whose sizes vary at run time (compile/
  /// symbolic_steps.h): the types are one sample of them, so a choice
  /// between kernel modes must not depend on a size (a small-M shortcut).
  bool anySize = false;
  /// Per argument, its data when it is a constant (else an invalid Tensor;
  /// empty when unknown): what a lowering may lay out (KernelCall::packed).
  std::vector<ir::Tensor> constants;
};

/// Input `i` of the call if it is a constant, else null.
inline const ir::Tensor *constantInput(const HostOpTypes &t, size_t i) {
  return i < t.constants.size() && t.constants[i].valid() ? &t.constants[i] : nullptr;
}

/// Lowers one call (its op, normalised attributes and types).
using Lowering =
    std::function<Expected<KernelCall>(const ir::Attrs &attrs, const HostOpTypes &types)>;

class LoweringTable {
public:
  void add(std::string op, Lowering lowering);
  const Lowering *find(std::string_view op) const;
  /// Ops with a lowering, sorted.
  std::vector<std::string> ops() const;

private:
  std::map<std::string, Lowering, std::less<>> table_;
};

/// The table of every host op (filled once).
const LoweringTable &hostLowerings();

/// Lowers `call` (a call of a core op whose type is checked). Errors name
/// the op and the call's name: "no host kernel for op 'topk' (node 'k1')",
/// or the lowering's own message ("conv2d 'c1': ...").
Expected<KernelCall> lowerHostOp(const ir::CallNode &call);
/// The types of `call` as HostOpTypes.
Expected<HostOpTypes> hostOpTypes(const ir::CallNode &call);

// Per-family registration (host_ops_<family>.cpp).
void addNnLowerings(LoweringTable &table);        // conv, pool, dense, matmul, norms, softmax, reductions, ...
void addTensorLowerings(LoweringTable &table);    // elementwise, broadcast, cast, injective, index, image, ...
void addRecurrentLowerings(LoweringTable &table); // lstm, gru, rnn

} // namespace tessera::codegen
