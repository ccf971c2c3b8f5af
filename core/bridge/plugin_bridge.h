//===- bridge/plugin_bridge.h - IR to plugin ABI structures -----*- C++ -*-===//
//
// What a plugin sees of the IR, built from it:
//   OpDescHolder   one core op call      -> tessera_op_desc_t  (checkers)
//   GraphHolder    one function          -> tessera_graph_t    (codegen and
//                                           the whole-graph partition hook)
//   outlineComposite  a pattern match    -> a call of a local function with
//                                           Composite="<plugin>.<pattern>"
// Each holder owns every byte the C structures point to (strings, shapes,
// attribute arrays, the JSON text and the constants' tensors), so the C
// structure stays valid exactly as long as the holder. Holders are neither
// copyable nor movable (the C structures point into them): they come in
// std::unique_ptr.
//
// The graph is written as sdk::Graph and serialised by sdk::writeGraph
// (tessera/sdk/json_graph.hpp), the one implementation of the
// "tessera.graph" format. Mapping:
//   function parameters   "input" nodes, in order (tensor-typed only)
//   ConstantNode          "const" nodes (each constant node once), or with
//                         TESSERA_CODEGEN_CONSTANTS_AS_INPUTS extra "input"
//                         nodes after the parameters (extraInputs() lists
//                         the tensors the caller passes for them)
//   op call               "op" node (tuple-typed calls have several outputs)
//   TupleGetItem          a NodeRef [node, index], no node of its own
//   Tuple body            several graph outputs
//   call of a local fn    "composite" node whose body is the function, when
//   with attr Composite   its Composite attribute names "<plugin>.<pattern>";
//                         constants used inside it stay in the body ("const"
//                         nodes indexing the graph's one constant list), or
//                         with CONSTANTS_AS_INPUTS become extra body inputs
//                         fed from the enclosing graph
// Anything else (calls of @globals, local functions without Composite,
// function values, tuple parameters) is an error naming it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/expr.h"
#include "tessera/sdk/plugin.hpp"
#include "bridge/pattern.h"
#include "support/error.h"
#include "tessera/c/plugin.h"

#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace tessera::bridge {

/// The symbols an op description or a graph refers to (ABI 1.4), in order
/// of first use: the index of a symbolic dim is its place here.
class SymbolList {
public:
  SymbolList() = default;
  SymbolList(const SymbolList &) = delete;
  SymbolList &operator=(const SymbolList &) = delete;

  /// The index of ir symbol `dim`, added on first use.
  int32_t indexOf(int64_t dim);
  /// The ir symbols, by index.
  const std::vector<int64_t> &dims() const { return dims_; }
  const tessera_symbol_t *const *data() const { return ptrs_.data(); }
  size_t size() const { return dims_.size(); }
  /// The same as the SDK's values (a graph's "symbols").
  std::vector<sdk::Symbol> sdkSymbols() const;

private:
  std::vector<int64_t> dims_;
  std::deque<std::string> names_;
  std::deque<tessera_symbol_t> symbols_;
  std::vector<const tessera_symbol_t *> ptrs_;
};

/// Storage for tessera_tensor_type_t values (stable addresses).
class TensorTypeStore {
public:
  /// Adds one type per tensor of `type` (tuple fields in order; nested tuples
  /// flatten depth first). A symbolic dim is -1 with its index in `symbols`
  /// (which a type with symbolic dims needs).
  void add(const ir::Type &type, SymbolList *symbols = nullptr);
  const tessera_tensor_type_t *const *data() const { return ptrs_.data(); }
  size_t size() const { return ptrs_.size(); }

private:
  // Plain vectors (a std::deque allocates a block even when empty, and one
  // store is built per checker call); ptrs_ is refreshed when types_ moves.
  // Static shapes point into the uniqued types, which are never freed;
  // symbolic ones into owned_ (-1 per symbolic dim) and symbolIndex_.
  std::vector<tessera_tensor_type_t> types_;
  std::vector<const tessera_tensor_type_t *> ptrs_;
  std::deque<std::vector<int64_t>> owned_;
  std::deque<std::vector<int32_t>> symbolIndex_;
};

/// One call of a core op as a checker sees it.
class OpDescHolder {
public:
  /// `call` must be a call of a core op (else an error naming the callee).
  static Expected<std::unique_ptr<OpDescHolder>> fromCall(const ir::CallNode &call);

  OpDescHolder(const OpDescHolder &) = delete;
  OpDescHolder &operator=(const OpDescHolder &) = delete;

  const tessera_op_desc_t &desc() const { return desc_; }

private:
  OpDescHolder() = default;

  std::string op_, name_;
  // Reserved up front in fromCall, so the addresses handed out stay put.
  std::vector<std::string> strings_; // attribute names and string values
  std::vector<std::vector<int64_t>> ints_;
  std::vector<std::vector<int32_t>> attrSymbols_; // ABI 1.4 tessera_attr_t::symbols
  std::vector<std::vector<double>> floats_;
  std::vector<tessera_attr_t> attrs_;
  std::vector<const tessera_attr_t *> attrPtrs_;
  SymbolList symbols_;
  TensorTypeStore inputs_, outputs_;
  tessera_op_desc_t desc_{};
};

/// The C op descriptions of several calls, e.g. a pattern match's ops for
/// check_pattern.
class OpDescList {
public:
  static Expected<OpDescList> fromCalls(const std::vector<ir::Expr> &calls);
  const tessera_op_desc_t *const *data() const { return ptrs_.data(); }
  size_t size() const { return ptrs_.size(); }

private:
  std::vector<std::unique_ptr<OpDescHolder>> holders_;
  std::vector<const tessera_op_desc_t *> ptrs_;
};

/// One function as a plugin graph.
class GraphHolder {
public:
  /// `codegenFlags` are the plugin's TESSERA_CODEGEN_* flags (only
  /// CONSTANTS_AS_INPUTS changes the graph).
  static Expected<std::unique_ptr<GraphHolder>>
  fromFunction(const ir::Function &fn, std::string symbol, uint64_t codegenFlags = 0);

  GraphHolder(const GraphHolder &) = delete;
  GraphHolder &operator=(const GraphHolder &) = delete;

  const tessera_graph_t &graph() const { return graph_; }
  /// Sets tessera_graph_t::target_cpu (the CPU the artifact is for).
  void setTargetCpu(std::string cpu) {
    targetCpu_ = std::move(cpu);
    graph_.target_cpu = targetCpu_.c_str();
  }
  const std::string &json() const { return json_; }
  const std::string &symbol() const { return symbol_; }
  /// The graph's symbols (ABI 1.4): the ir dims, in the order the function
  /// takes their values; empty for a static graph.
  const std::vector<int64_t> &symbolDims() const { return symbols_.dims(); }
  /// Where each symbol first appears ("dim 2 of conv2d 'down'"), by index.
  const std::vector<std::string> &symbolWhere() const { return symbolWhere_; }

  /// The top-level JSON nodes and, for each, the IR expression it stands for
  /// (the parameter's Var, the ConstantNode, the call).
  size_t numNodes() const { return nodeExprs_.size(); }
  const std::vector<ir::Expr> &nodeExprs() const { return nodeExprs_; }

  /// The graph's constants (tessera_graph_t::constants), in index order.
  const std::vector<ir::Tensor> &constants() const { return constants_; }
  /// With CONSTANTS_AS_INPUTS: the tensors the caller passes after the
  /// function's parameters, in order (the graph has no constants then).
  const std::vector<ir::Tensor> &extraInputs() const { return extraInputs_; }
  bool constantsAsInputs() const { return constantsAsInputs_; }

private:
  GraphHolder() = default;
  friend class GraphBuilder;
  /// The index of a constant in constants(), adding it on first use.
  int64_t constantIndex(const ir::Expr &constant);

  std::string symbol_, json_, targetCpu_;
  bool constantsAsInputs_ = false;
  SymbolList symbols_;
  std::vector<std::string> symbolWhere_;
  std::vector<ir::Expr> nodeExprs_;
  std::vector<ir::Tensor> constants_, extraInputs_;
  std::unordered_map<const ir::ExprNode *, int64_t> constantIndex_;
  std::vector<std::string> constantNames_;
  std::vector<const char *> constantNamePtrs_;
  std::vector<DLTensor> dlConstants_;
  std::vector<const DLTensor *> dlConstantPtrs_;
  tessera_graph_t graph_{};
};

/// Outlines a match as `fn(inputs...) { ops }` with attribute
/// Composite=`compositeName` and returns the call of it on match.inputs
/// (the composite's parameters are the '*' leaves in pattern order; 'const'
/// leaves stay inside the body). The call has the root's type and name.
Expected<ir::Expr> outlineComposite(const PatternMatch &match, const std::string &compositeName);
/// The same, called on `args` (one per match.inputs, same types) instead of
/// match.inputs: a pass that has already rewritten the inputs builds the
/// call once.
Expected<ir::Expr> outlineComposite(const PatternMatch &match, const std::string &compositeName,
                                    std::vector<ir::Expr> args);

} // namespace tessera::bridge
