//===- fuzz/text_ir.cpp - The text IR parser ---------------------------===//
//
// Any bytes: parseModule either fails with a message that starts with the
// file name (and a line:col), or gives a module that prints, and whose
// printed text parses again to the same text.
//
//===----------------------------------------------------------------------===//
#include "fuzz_check.h"

#include "ir/parser.h"
#include "ir/printer.h"

#include <cstddef>
#include <cstdint>

using namespace tessera;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  auto parsed = ir::parseModule(text, "fuzz.tir");
  if (!parsed.ok()) {
    std::string message = parsed.error().str();
    FUZZ_REQUIRE(message.starts_with("fuzz.tir:"), message);
    return 0;
  }
  std::string printed = ir::printModule(*parsed);
  auto again = ir::parseModule(printed, "printed.tir");
  FUZZ_REQUIRE(again.ok(), again.error().str() + "\n" + printed);
  std::string reprinted = ir::printModule(*again);
  FUZZ_REQUIRE(reprinted == printed, printed + "\n---- printed again ----\n" + reprinted);
  return 0;
}
