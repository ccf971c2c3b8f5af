//===- frontend/onnx/importer.h - ONNX models into the core IR -*- C++ -*-===//
//
// Imports ONNX models (opsets 7 to 17) into a Module whose @main takes the
// graph inputs (initializers excluded) in order and returns the graph outputs
// (a tuple when there are several). Weights come from initializers, from
// Constant nodes and from external-data files next to the model. Dynamic and
// symbolic dims are bound by ImportOptions::inputShapes; an unbound dynamic
// first dim defaults to 1 (a batch), any other unbound one is an error
// naming the input and the dim. ONNX node names annotate the calls they
// become, so later errors and reports can name the ONNX node.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/module.h"

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::frontend::onnx {

struct ImportOptions {
  /// Input name -> full static shape (from --input-shape x=1,3,224,224).
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// Run infer-types/verify on the result (on by default).
  bool verify = true;
};

/// Imports the model at `path` (external data is looked up next to it).
Expected<ir::Module> importModelFile(const std::string &path, const ImportOptions &options = {});

/// Imports a serialized ModelProto; `baseDir` locates external data and
/// `displayName` is used in messages.
Expected<ir::Module> importModelBytes(std::string_view bytes, const std::string &baseDir,
                                      const std::string &displayName,
                                      const ImportOptions &options = {});

/// Reads a serialized TensorProto (the ONNX test data's input_N.pb /
/// output_N.pb) into a tensor.
Expected<ir::Tensor> readTensorProtoFile(const std::string &path);

/// Parses "x=1,3,224,224" into (name, shape); the error says what was wrong.
Expected<std::pair<std::string, std::vector<int64_t>>> parseInputShape(std::string_view spec);

} // namespace tessera::frontend::onnx
