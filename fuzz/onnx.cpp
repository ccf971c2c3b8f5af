//===- fuzz/onnx.cpp - The ONNX importer ---------------------------------===//
//
// Any bytes as a model file: importModelBytes either fails with a message
// that starts with the file name, or gives a module that prints and whose
// printed text parses again. External data is looked up in an empty
// directory, so a model can name files but never read one.
//
//===----------------------------------------------------------------------===//
#include "fuzz_check.h"

#include "frontend/onnx/importer.h"
#include "ir/parser.h"
#include "ir/printer.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>

using namespace tessera;

namespace {
const std::string &emptyDir() {
  static const std::string dir = [] {
    std::string tmpl = (std::filesystem::temp_directory_path() / "tessera-fuzz-XXXXXX").string();
    if (!mkdtemp(tmpl.data()))
      std::abort();
    return tmpl;
  }();
  return dir;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char *>(data), size);
  auto imported = frontend::onnx::importModelBytes(bytes, emptyDir(), "fuzz.onnx");
  if (!imported.ok()) {
    std::string message = imported.error().str();
    FUZZ_REQUIRE(message.starts_with("fuzz.onnx"), message);
    return 0;
  }
  std::string printed = ir::printModule(*imported);
  auto again = ir::parseModule(printed, "printed.tir");
  FUZZ_REQUIRE(again.ok(), again.error().str() + "\n" + printed);
  return 0;
}
