//===- frontend/load.cpp - A model from a file or bytes, in one call -----===//
#include "frontend/load.h"

#include "ir/parser.h"
#include "support/log.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

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

namespace {

/// Whether the file at `path` is text IR rather than ONNX: by its name
/// (.tir, .onnx), else by its content: text whose first word, after blank
/// and '#' comment lines, is `module` or `def`. ONNX is binary protobuf (a
/// model not named .onnx is still one).
bool isTextIr(const std::string &path) {
  auto endsWith = [&](std::string_view ext) {
    return path.size() >= ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0;
  };
  if (endsWith(".onnx"))
    return false;
  std::error_code ec;
  if (endsWith(".tir") || !std::filesystem::is_regular_file(path, ec))
    return true; // the parser says what is wrong with a folder, a FIFO, a missing file
  std::ifstream in(path, std::ios::binary);
  std::string head(4096, '\0');
  in.read(head.data(), std::streamsize(head.size()));
  head.resize(size_t(std::max<std::streamsize>(in.gcount(), 0)));
  if (head.empty())
    return true; // the parser says what is wrong with an empty or unreadable file
  if (head.find('\0') != std::string::npos)
    return false;
  for (size_t at = 0; at < head.size();) {
    const size_t end = std::min(head.find('\n', at), head.size());
    std::string_view line(head.data() + at, end - at);
    const size_t first = line.find_first_not_of(" \t\r");
    if (first != std::string_view::npos && line[first] != '#') {
      line.remove_prefix(first);
      return line.starts_with("module") || line.starts_with("def");
    }
    at = end + 1;
  }
  return true; // only comments: text
}

} // namespace

Expected<ir::Module> loadModelFile(const std::string &path, const InputShapes &shapes) {
  if (isTextIr(path)) {
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
