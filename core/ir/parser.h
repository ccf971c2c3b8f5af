//===- ir/parser.h - Text IR parser ----------------------------*- C++ -*-===//
//
// Parses the text format printed by printer.h. Errors carry
// "FILE:LINE:COL: " and say what was expected and what was found; type errors
// from op relations carry the position of the offending line. A type written
// after a value must equal the inferred one.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/module.h"

#include <string>
#include <string_view>

namespace tessera::ir {

/// `filename` is used only in messages.
Expected<Module> parseModule(std::string_view text, std::string_view filename = "<input>");
Expected<Module> parseModuleFile(const std::string &path);

} // namespace tessera::ir
