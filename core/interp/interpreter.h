//===- interp/interpreter.h - Reference interpreter ------------*- C++ -*-===//
//
// Runs a module with the ops' reference kernels. This is the ground truth
// that tests compare every code generator and plugin against, so it favours
// obvious correctness over speed. Evaluation is iterative (deep graphs are
// fine) and frees each intermediate after its last use.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/module.h"

#include <dlpack/dlpack.h>

#include <vector>

namespace tessera::interp {

/// A runtime value: a tensor, a tuple of values, or a sequence (its
/// elements, tensors, in `fields`).
struct Value {
  ir::Tensor tensor;
  std::vector<Value> fields; // non-empty or `isTuple` for tuples
  bool isTuple = false;
  bool isSequence = false;

  static Value ofTensor(ir::Tensor t) { return Value{std::move(t), {}, false, false}; }
  static Value ofTuple(std::vector<Value> f) { return Value{{}, std::move(f), true, false}; }
  static Value ofSequence(std::vector<ir::Tensor> elements);
  /// Flattens tuples, depth first (a sequence gives its elements).
  std::vector<ir::Tensor> flatten() const;
};

/// Runs global `entry` with `inputs` (one per parameter, checked against the
/// parameter types: errors name the parameter, the expected and the given
/// type). Returns the result (a tuple value for tuple-typed results).
Expected<Value> run(const ir::Module &m, const std::vector<ir::Tensor> &inputs,
                    const std::string &entry = "main");

/// Same with values: a sequence parameter takes a sequence value.
Expected<Value> runValues(const ir::Module &m, std::vector<Value> inputs,
                          const std::string &entry = "main");

/// Same over DLPack tensors (copied in; any strides).
Expected<Value> runDL(const ir::Module &m, const std::vector<DLTensor> &inputs,
                      const std::string &entry = "main");

/// Evaluates one function on values (for nested and global calls).
Expected<Value> evalFunction(const ir::Module &m, const ir::FunctionNode &f,
                             std::vector<Value> args);

} // namespace tessera::interp
