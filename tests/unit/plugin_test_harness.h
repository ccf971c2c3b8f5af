//===- tests/unit/plugin_test_harness.h - Testing a plugin .so --*- C++ -*-===//
//
// What the shipped plugins' tests (json, dnnl, ccompiler) share:
//  - GraphBuilder: one computation written once, as tessera.graph JSON (what
//    a codegen receives) and as core IR (what the reference interpreter
//    runs), with seeded random inputs and constants;
//  - the C structs a plugin is called with: the graph (over copies of the
//    constants, overwritten after the call), an op description for the
//    checker, attributes, call arguments (outputs pre-filled with NaN);
//  - CPlugin: a plugin file loaded as the core loads it (dlopen +
//    tessera_plugin_query) and used through its raw C ABI only, with
//    compile / load / check helpers and checkAgainstReference (compile, run,
//    compare with the interpreter; save, load, run, compare again);
//  - comparing outputs with the reference (rtol 1e-4, atol 1e-5 unless a
//    test states otherwise).
// Each test file names its own plugin file (TESSERA_<NAME>_PLUGIN).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "test_util.h"

#include "ir/attrs.h"
#include "tessera/c/plugin.h"
#include "tessera/sdk/json_graph.hpp"

#include <functional>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::test {

/// The tolerance of the plugin tests: |got - want| <= kAtol + kRtol |want|.
constexpr double kRtol = 1e-4, kAtol = 1e-5;
inline const DLDataType kF32{kDLFloat, 32, 1};

inline ir::AttrValue ints(std::vector<int64_t> v) {
  return ir::AttrValue(std::move(v));
}

//===----------------------------------------------------------------------===//
// GraphBuilder: one computation as tessera.graph JSON and as core IR
//===----------------------------------------------------------------------===//

sdk::TensorType sdkType(const ir::Type &t);
sdk::Attrs sdkAttrs(const ir::Attrs &attrs);

class GraphBuilder {
public:
  explicit GraphBuilder(std::string symbol, uint32_t seed = 1);

  /// A function input with uniform random values in [lo, hi).
  int64_t input(const std::string &name, ir::Shape shape, double lo = -1, double hi = 1);
  /// A constant with uniform random values in [lo, hi).
  int64_t constant(const std::string &name, ir::Shape shape, double lo = -1, double hi = 1);
  /// A core op on earlier nodes; its type and defaulted attributes come from
  /// the core (as the core's partitioner would write them).
  int64_t op(const std::string &opName, std::vector<int64_t> args, ir::Attrs attrs = {});
  /// A composite node "<plugin>.<pattern>" whose body `makeBody` builds from
  /// the body's inputs (bound to `args`); returns the body's result.
  int64_t composite(const std::string &opName, std::vector<int64_t> args,
                    const std::function<int64_t(GraphBuilder &, std::vector<int64_t>)> &makeBody);
  void output(int64_t node);

  const sdk::Graph &graph() const { return g_; }
  std::string json() const { return sdk::writeGraph(g_); }
  const std::vector<ir::Tensor> &inputs() const { return inputValues_; }
  const std::vector<ir::Tensor> &constants() const { return constants_; }
  const std::vector<std::string> &constantNames() const { return constantNames_; }
  std::vector<ir::Shape> outputShapes() const;

  /// The reference interpreter's results on the builder's inputs (or on
  /// `inputs`).
  std::vector<ir::Tensor> reference(const std::vector<ir::Tensor> *inputs = nullptr) const;

private:
  explicit GraphBuilder(GraphBuilder *root) : root_(root) {}

  ir::Tensor random(const ir::Shape &shape, double lo, double hi);
  int64_t addNode(sdk::Node::Kind kind, const std::string &name, const std::string &op,
                  const std::vector<int64_t> &args, const ir::Type &type, ir::Expr expr);

  GraphBuilder *root_;
  std::mt19937 rng_;
  sdk::Graph g_;
  std::vector<ir::Type> types_;
  std::vector<ir::Expr> exprs_;
  std::vector<ir::Var> params_;
  std::vector<ir::Tensor> inputValues_;
  std::vector<ir::Tensor> constants_;
  std::vector<std::string> constantNames_;
  std::vector<ir::Expr> outputs_;
};

/// The elementwise ops with broadcasting, as outputs of `b`: the binary ops
/// on x f32[2, 3, 4] and y f32[3, 1] (and a scalar constant), the unary ops
/// on x (log and sqrt on positive values), a chain through intermediates,
/// and the scalar itself. Returns x.
int64_t addElementwiseOps(GraphBuilder &b);

/// Pooling of x (NCHW), as outputs of `b`: max_pool2d with every attribute,
/// avg_pool2d with and without ceil_mode and count_include_pad, the global
/// pools.
void addPoolingOps(GraphBuilder &b, int64_t x);

//===----------------------------------------------------------------------===//
// The C structs a plugin is called with
//===----------------------------------------------------------------------===//

/// The builder's graph (or `json` in its place) as a tessera_graph_t. Codegen
/// borrows the constants: they are copies, and scribble() overwrites them
/// with NaN after the call, so that a module that kept the views computes
/// garbage.
class GraphArg {
public:
  explicit GraphArg(const GraphBuilder &b, std::string json = {});
  GraphArg(const GraphArg &) = delete;
  GraphArg &operator=(const GraphArg &) = delete;

  const tessera_graph_t &get() const { return g_; }
  void scribble();

private:
  std::string json_;
  std::vector<ir::Tensor> copies_;
  std::vector<DLTensor> dls_;
  std::vector<const DLTensor *> ptrs_;
  std::vector<const char *> names_;
  tessera_graph_t g_;
};

/// An op description for a checker: `op` on inputs of `inShapes`, one output
/// of `outShape`, all of `dtype`; node name "n1".
class OpDescArg {
public:
  OpDescArg(const std::string &op, const std::vector<ir::Shape> &inShapes,
            const ir::Shape &outShape, const std::vector<tessera_attr_t> &attrs, DLDataType dtype);
  OpDescArg(const OpDescArg &) = delete;
  OpDescArg &operator=(const OpDescArg &) = delete;

  const tessera_op_desc_t &get() const { return d_; }

private:
  std::string op_;
  std::vector<ir::Shape> shapes_; // inputs, then the output
  std::vector<tessera_tensor_type_t> types_;
  std::vector<const tessera_tensor_type_t *> ins_;
  const tessera_tensor_type_t *outs_[1];
  std::vector<tessera_attr_t> attrs_;
  std::vector<const tessera_attr_t *> attrPtrs_;
  tessera_op_desc_t d_;
};

tessera_attr_t stringAttr(const char *name, const char *value);
tessera_attr_t intsAttr(const char *name, const std::vector<int64_t> &v);
tessera_attr_t intAttr(const char *name, int64_t v);

/// Output tensors of `shapes`, filled with NaN so that an element the plugin
/// does not write shows.
std::vector<ir::Tensor> nanOutputs(const std::vector<ir::Shape> &shapes);

/// A call's arguments: DLTensors of `inputs` then `outputs`.
class CallArgs {
public:
  CallArgs(const std::vector<ir::Tensor> &inputs, const std::vector<ir::Tensor> &outputs);
  CallArgs(const CallArgs &) = delete;
  CallArgs &operator=(const CallArgs &) = delete;

  std::span<const DLTensor *const> get() const { return ptrs_; }

private:
  std::vector<DLTensor> dls_;
  std::vector<const DLTensor *> ptrs_;
};

/// Compares output by output with the tolerance above (or `atol`).
void requireAllClose(const std::vector<ir::Tensor> &got, const std::vector<ir::Tensor> &want,
                     double atol = kAtol);

//===----------------------------------------------------------------------===//
// Modules and statuses through the C ABI
//===----------------------------------------------------------------------===//

/// The message of a status ("" for success); releases it.
std::string take(tessera_plugin_status_t *s, tessera_status_code_t *code = nullptr);

/// A module owned by the test.
using ModulePtr = std::unique_ptr<tessera_module_t, void (*)(tessera_module_t *)>;
void destroyModule(tessera_module_t *m);

/// A tessera_write_fn appending to a std::string.
bool appendToString(void *sink, const void *data, size_t size);
std::string saveModule(tessera_module_t *m);

tessera_function_t getFunction(tessera_module_t *m, const std::string &symbol);

/// Calls `symbol` with DLTensors of `inputs` and outputs of `outShapes`
/// (pre-filled with NaN); returns the outputs.
std::vector<ir::Tensor> callFunction(tessera_module_t *m, const std::string &symbol,
                                     const std::vector<ir::Tensor> &inputs,
                                     const std::vector<ir::Shape> &outShapes);

/// One module called from `threads` threads at once, `rounds` times each:
/// every thread has its own input (the builder's first input times the
/// thread's number + 1) and must get, bit for bit, what a single-threaded
/// call on that input gives (the first of which is checked against the
/// reference). For a function of one input and one output.
void checkConcurrentCalls(tessera_module_t *m, const GraphBuilder &b, int threads, int rounds);

struct CheckAnswer {
  bool ok;
  std::string reason;
};

/// A plugin file loaded as the core loads it (dlopen, then
/// tessera_plugin_query with a host of the current ABI), used through its C
/// ABI only. `typeKey`: what its compiled modules must say they are.
class CPlugin {
public:
  CPlugin(const char *path, std::string typeKey);

  const tessera_plugin_t &desc() const { return *desc_; }
  const tessera_plugin_t *operator->() const { return desc_; }

  /// Codegen of the builder's graph (or `json` in its place); the error
  /// message or "".
  std::string compile(const GraphBuilder &b, ModulePtr &out, std::string json = {}) const;
  /// Loads saved bytes through the first module factory; the error message
  /// or "".
  std::string load(std::string_view bytes, ModulePtr &out) const;
  /// check_op on op `op` with f32 (or `dtype`) inputs and output.
  CheckAnswer checkOp(const std::string &op, const std::vector<ir::Shape> &inShapes,
                      const ir::Shape &outShape, const std::vector<tessera_attr_t> &attrs = {},
                      DLDataType dtype = kF32) const;
  /// Compiles, runs and compares with the reference; then saves, loads the
  /// bytes through the module factory, runs and compares again; saving the
  /// loaded module gives the same bytes.
  void checkAgainstReference(const GraphBuilder &b, double atol = kAtol) const;

private:
  const tessera_plugin_t *desc_ = nullptr;
  std::string typeKey_;
};

} // namespace tessera::test
