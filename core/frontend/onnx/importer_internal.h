//===- frontend/onnx/importer_internal.h - The ONNX importer class ----*- C++ -*-===//
//
// Importer, which imports one ONNX model, shared by the files that define its
// members along the steps of an import (see importer.cpp for the steps):
//   importer.cpp         run(), the opset and support checks (steps 1-2) and
//                        @main's outputs (step 5)
//   importer_inputs.cpp  initializers and graph inputs (step 3), and the
//                        checks of values against declared ONNX types
//   importer_nodes.cpp   topological order, node conversion and sub-graphs
//                        (step 4)
// Private to frontend/onnx/ (not installed, not used elsewhere).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/onnx/converter.h"
#include "frontend/onnx/importer.h"

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace tessera::frontend::onnx::importer_detail {

using ::onnx::AttributeProto;
using ::onnx::ModelProto;
using ::onnx::NodeProto;
using ::onnx::TensorProto;
using ::onnx::ValueInfoProto;

/// "[N, 3, ?, 224]": a declared shape with its symbolic dims
/// (importer_inputs.cpp).
std::string declaredShapeStr(const ::onnx::TensorShapeProto &s);

/// The name parseInputShape gives an unnamed range bound ("x=1..8,..."):
/// "<input>_<dim>", made a valid symbol name; the importer renames such a
/// symbol after the model's dim_param at that dim.
std::string rangeSymbolName(std::string_view input, size_t dim);

/// Rewrites each Loop's appended sequences (started empty, one tensor
/// appended per iteration) into scan outputs that their consumers take
/// stacked (appended_sequences.cpp); in sub-graphs too.
void stackAppendedSequences(::onnx::GraphProto &graph);

class Importer {
public:
  Importer(const ModelProto &model, const std::string &baseDir, const std::string &displayName,
           const ImportOptions &options, ImportReport &report)
      : model_(model), graph_(model.graph()), baseDir_(baseDir), displayName_(displayName),
        options_(options), report_(report),
        registry_(options.registry ? *options.registry : ConverterRegistry::standard()) {}

  Expected<ir::Module> run();

private:
  // The checks before conversion (importer.cpp).
  void findOpset();
  std::string opsetError() const;
  Status checkOpset();
  void collectNames();
  static std::string nodeName(const NodeProto &n, int index);
  Status checkSupported();
  static std::string foreignTypeVariant(const NodeProto &n,
                                        const std::map<std::string, int32_t> &foreignTypes);
  Status checkOptionNames();

  // Initializers, graph inputs and declared ONNX types (importer_inputs.cpp).
  Status bindInitializers();
  Status collectBoundSymbols();
  Expected<ir::Type> inputType(const ValueInfoProto &vi);
  Status bindInputs();
  static std::string onnxTypeStr(const ::onnx::TypeProto &t);
  static bool typeFits(const ::onnx::TypeProto &d, const ir::Type &t, bool shapes = true);
  Status bindStructuredInput(const ValueInfoProto &vi);
  Expected<ir::Type> sequenceInputType(const ::onnx::ValueInfoProto &vi);
  Expected<ir::Expr> paramsFor(const std::string &input, const ir::Type &t,
                               const std::string &paramName, std::vector<int64_t> path);
  Status checkBoundConstant(const ValueInfoProto &vi, const ir::Tensor &t);

  // Graphs, nodes and sub-graphs (importer_nodes.cpp).
  Expected<std::vector<int>> topologicalOrder(const ::onnx::GraphProto &graph_);
  Status convertNode(const NodeProto &node, int index);
  const ir::Expr *findValue(const std::string &name) const;
  const std::string *findMissing(const std::string &name) const;
  bool isDefined(const std::string &name) const;
  /// `bindings` (name -> value) shadow the enclosing scopes' values.
  Expected<std::vector<ir::Expr>>
  convertSubgraph(const ::onnx::GraphProto &g, std::vector<ir::Expr> inputs,
                  const std::unordered_map<std::string, ir::Expr> *bindings = nullptr);
  Expected<OutlinedSubgraphs> outlineSubgraphs(const std::vector<const ::onnx::GraphProto *> &gs,
                                               const std::vector<std::vector<ir::Type>> &leading);
  Expected<std::vector<ir::Expr>> convertSubgraphInScope(const ::onnx::GraphProto &g,
                                                         std::vector<ir::Expr> inputs);
  static bool isValueType(const ir::Type &t);
  void reportWishes(const std::vector<ir::Expr> &asked);

  // @main's outputs (importer.cpp).
  Status checkOutput(const ValueInfoProto &vi, const ir::Type &t);
  Expected<ir::Module> finish();

  const ModelProto &model_;
  const ::onnx::GraphProto &graph_;
  const std::string &baseDir_;
  const std::string &displayName_;
  const ImportOptions &options_;
  ImportReport &report_;
  const ConverterRegistry &registry_;
  int64_t opset_ = 0;
  std::unordered_set<std::string> initializerNames_;
  std::unordered_map<std::string, ir::Expr> values_;
  /// Outputs a converter did not produce -> "output 1 of node 'd' (Dropout)".
  std::unordered_map<std::string, std::string> missing_;
  std::vector<ir::Var> params_;
  /// dim_param -> index into report_.symbols.
  std::unordered_map<std::string, size_t> symbolIndex_;
  /// options_.inputShapes, with unnamed range bounds named after the
  /// model's dim_params (collectBoundSymbols).
  std::map<std::string, ir::Shape> boundShapes_;
  bool hasOpset_ = false;
  /// The scopes enclosing the sub-graph being converted (values_ and
  /// missing_ are the innermost one), outermost first.
  struct Scope {
    std::unordered_map<std::string, ir::Expr> values;
    std::unordered_map<std::string, std::string> missing;
  };
  std::vector<Scope> outer_;
  static constexpr size_t kMaxSubgraphDepth = 64;
  /// Nodes converted so far, unrolled iterations included (capped).
  static constexpr int64_t kMaxConvertedNodes = 1000000;
  int64_t convertedNodes_ = 0;
};

} // namespace tessera::frontend::onnx::importer_detail
