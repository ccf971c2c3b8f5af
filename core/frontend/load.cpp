//===- frontend/load.cpp - A model from a file or bytes, in one call -----===//
#include "frontend/load.h"

#include "ir/parser.h"
#include "support/log.h"

namespace tessera::frontend {

namespace {

Expected<ir::Module> noteUnbound(Expected<ir::Module> module, const onnx::ImportReport &report,
                                 const std::string &displayName) {
  if (module.ok())
    for (const std::string &note : onnx::unboundSymbolNotes(report))
      TS_LOG_INFO("{}: {}", displayName, note);
  return module;
}

} // namespace

Expected<InputShapes> parseInputShapes(const std::vector<std::string> &specs) {
  InputShapes shapes;
  for (const auto &spec : specs) {
    TS_ASSIGN_OR_RETURN(auto parsed, onnx::parseInputShape(spec));
    if (shapes.count(parsed.first))
      return Error::format("--input-shape given twice for '{}'", parsed.first);
    shapes.insert(std::move(parsed));
  }
  return shapes;
}

Expected<ir::Module> loadModelFile(const std::string &path, const InputShapes &shapes) {
  const bool isOnnx = path.size() >= 5 && path.compare(path.size() - 5, 5, ".onnx") == 0;
  if (!isOnnx) {
    if (!shapes.empty())
      return Error::format("--input-shape applies to ONNX models only, not '{}'", path);
    return ir::parseModuleFile(path);
  }
  onnx::ImportOptions options;
  options.inputShapes = shapes;
  return importOnnxFile(path, options);
}

Expected<ir::Module> importOnnxFile(const std::string &path, const onnx::ImportOptions &options) {
  onnx::ImportReport report;
  return noteUnbound(onnx::importModelFile(path, options, &report), report, path);
}

Expected<ir::Module> importOnnxBytes(std::string_view bytes, const std::string &displayName,
                                     const std::string &baseDir,
                                     const onnx::ImportOptions &options) {
  onnx::ImportReport report;
  return noteUnbound(onnx::importModelBytes(bytes, baseDir, displayName, options, &report), report,
                    displayName);
}

} // namespace tessera::frontend
