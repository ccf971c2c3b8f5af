//===- frontend/onnx/importer.h - ONNX models into the core IR -*- C++ -*-===//
//
// Imports ONNX models (opsets 7 to 17; older ones where every converter the
// model needs covers them) into a Module whose @main takes the
// graph inputs (initializers excluded) in order and returns the graph outputs
// (a tuple when there are several). Weights come from initializers, from
// Constant nodes and from external-data files next to the model. Dynamic and
// symbolic dims are bound by ImportOptions::inputShapes; an unbound dynamic
// first dim defaults to 1 (a batch), any other unbound one is an error
// naming the input and the dim. ONNX node names annotate the calls they
// become, so later errors and reports can name the ONNX node.
//
// @main's parameters are named after the graph inputs; its attribute
// "output_names" holds the graph output names joined by ';'.
//
// Graph inputs that decide shapes (Reshape's shape, ...) must be constants in
// our static-shape IR. A converter that needs one asks for it through
// NodeContext::constantInput(); the importer reports those inputs in
// ImportReport::wantedConstants, and a caller may then bind them with
// ImportOptions::constantInputs and import again (shape specialization, as
// TVM's freeze_params). See docs/onnx-importer.md.
//
// Sequences are tuples of static length; a present optional is its value,
// an absent one has no expression (OptionalHasElement folds to false).
// Sequence and optional graph inputs get their structure from
// ImportOptions::valueTypes; a sequence input becomes one @main parameter
// per element ("x.0", "x.1", ...), rebuilt into a tuple inside @main, and
// ImportReport::params says which input (element) each parameter is.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/module.h"
#include "ir/type.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::frontend::onnx {

class ConverterRegistry;

struct ImportOptions {
  /// Input name -> full static shape (from --input-shape x=1,3,224,224).
  /// Naming an input the graph does not have is an error.
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// Graph inputs to bind as constants (name -> value): they become
  /// constants instead of @main parameters. The value's dtype must match the
  /// input's, and its shape every static dim.
  std::map<std::string, ir::Tensor> constantInputs;
  /// Sequence and optional graph inputs, whose length and element shapes
  /// the model cannot declare statically: input name -> the type of the
  /// value (a tuple type for a sequence, one field per element, nested for
  /// sequences of sequences; for a present optional the type of its value),
  /// or nullopt for an absent optional. It must agree with the declared
  /// element types and static dims. An unbound optional input whose value
  /// type is a fully static tensor is taken as present; an unbound sequence
  /// input is an error naming it. Naming a tensor input is an error.
  std::map<std::string, std::optional<ir::Type>> valueTypes;
  /// The converters to use; null means ConverterRegistry::standard().
  const ConverterRegistry *registry = nullptr;
  /// Run infer-types/verify on the result (on by default).
  bool verify = true;
};

/// An op type that no converter handles, with the nodes that use it.
struct UnsupportedOpType {
  std::string opType;             // "LSTM", or "domain::Op" outside the ONNX domain
  int64_t count = 0;              // number of nodes
  std::vector<std::string> nodes; // the first three node names
};

/// Where a @main parameter comes from: graph input `input`, and for an
/// element of a sequence input the element's index path (empty for the
/// input itself).
struct ParamSource {
  std::string input;
  std::vector<int64_t> path;
};

/// What an import found out besides the module (filled in as far as the
/// import got, also when it fails).
struct ImportReport {
  /// Non-empty exactly when the import failed because of op types without a
  /// converter, or whose converter does not cover the model's opset
  /// ("Relu (opset 6)"; every op type for opsets above 17); sorted.
  std::vector<UnsupportedOpType> unsupported;
  /// Graph inputs that a converter needed as constants (see above), sorted.
  std::vector<std::string> wantedConstants;
  /// The graph inputs that are not initializers, in order (the N-th one is
  /// the backend test data's input_N.pb), bound ones included.
  std::vector<std::string> graphInputs;
  /// One per @main parameter, in order (filled when the inputs are bound).
  std::vector<ParamSource> params;
  /// The graph outputs, in order.
  std::vector<std::string> outputNames;
  /// The model's opset of the default domain (0 when unknown).
  int64_t opset = 0;
  /// A symbolic dim of the graph inputs (an ONNX dim_param, or an unnamed
  /// dynamic dim) and the dim it was compiled for (a constant, or an ir
  /// symbol). Inputs that declare the same dim_param share one symbol:
  /// binding it on one input binds it on all. `unbound`: no --input-shape
  /// gave it; it stays a symbol with bounds 1.. (named after the dim_param,
  /// or "<input>_<dim>"), which the tools say.
  struct Symbol {
    std::string name;                                   // "" for an unnamed dim
    int64_t value = 0;
    bool unbound = false;
    std::vector<std::pair<std::string, int64_t>> dims; // (input, dim index)
  };
  /// In the order first met (graph input order, then dim order).
  std::vector<Symbol> symbols;
};

/// "symbolic dim 'batch' (input 'x' dim 0, input 'y' dim 0) is not bound: it
/// stays symbolic (batch: 1..), ..." for each unbound symbol.
std::vector<std::string> unboundSymbolNotes(const ImportReport &report);

/// Imports the model at `path` (external data is looked up next to it).
Expected<ir::Module> importModelFile(const std::string &path, const ImportOptions &options = {},
                                     ImportReport *report = nullptr);

/// Imports a serialized ModelProto; `baseDir` locates external data and
/// `displayName` is used in messages.
Expected<ir::Module> importModelBytes(std::string_view bytes, const std::string &baseDir,
                                      const std::string &displayName,
                                      const ImportOptions &options = {},
                                      ImportReport *report = nullptr);

/// "model.onnx: 2 unsupported op types: LSTM (3 nodes: a, b, c), NonZero (1
/// node: nz)" — the message of the import error for unsupported op types.
std::string describeUnsupported(const std::string &displayName,
                                const std::vector<UnsupportedOpType> &unsupported);

/// Reads a serialized TensorProto (the ONNX test data's input_N.pb /
/// output_N.pb) into a tensor.
Expected<ir::Tensor> readTensorProtoFile(const std::string &path);

/// Parses "x=1,3,224,224" into (name, shape); the error says what was wrong.
Expected<std::pair<std::string, std::vector<int64_t>>> parseInputShape(std::string_view spec);

} // namespace tessera::frontend::onnx
