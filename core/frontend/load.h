//===- frontend/load.h - A model from a file or bytes, in one call -*- C++ -*-===//
//
// What `tessera compile`, `tessera partition`, `tessera import` and the
// Python API (`tessera.compile(model, input_shapes=...)`) do to get a module:
// an ONNX model (a .onnx file, or a serialized ModelProto) is imported with
// the given input shapes (a dim they leave unbound stays symbolic, which is
// logged at info level; `tessera compile` lists the symbols); any other file
// is text IR, which takes no input shapes.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/onnx/importer.h"
#include "ir/module.h"
#include "support/error.h"

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::frontend {

using InputShapes = std::map<std::string, std::vector<int64_t>>;

/// Parses NAME=D0,D1,... specs (--input-shape); a name given twice is an
/// error.
Expected<InputShapes> parseInputShapes(const std::vector<std::string> &specs);

/// A model file: ONNX or text IR (then `shapes` must be empty), by its
/// suffix (.onnx, .tir), else by its content (text IR is text whose first
/// word, after comments, is `module` or `def`; anything else is ONNX).
Expected<ir::Module> loadModelFile(const std::string &path, const InputShapes &shapes);

/// Imports an ONNX file and notes every dim left unbound
/// (onnx::unboundSymbolNotes).
Expected<ir::Module> importOnnxFile(const std::string &path, const onnx::ImportOptions &options);
/// The same for a serialized ModelProto; `displayName` names it in messages
/// and external data is looked up in `baseDir`.
Expected<ir::Module> importOnnxBytes(std::string_view bytes, const std::string &displayName,
                                     const std::string &baseDir,
                                     const onnx::ImportOptions &options);

} // namespace tessera::frontend
