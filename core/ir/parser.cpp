//===- ir/parser.cpp - Text IR parser -------------------------------------===//
//
// Parses the text format of printer.cpp (grammar in docs/text-format.md).
//
// The format is line oriented: a statement ends at the end of its line, and
// newlines are tokens. Parsing runs twice over the text: pass 1 reads only
// the `def` headers (skipping bodies by brace counting) so that calls may name
// globals defined further down; pass 2 builds the functions. Statements are
// parsed one after another, so nothing recurses on graph depth; only nested
// `fn` blocks and types recurse, both capped at kMaxNesting.
//
// Every error is "FILE:LINE:COL: message"; syntax errors say what was
// expected and what was found.
//
// This file holds the module level (both passes) and the entry points;
// the lexer is in parser_lexer.cpp, literals, types, attributes and
// constants in parser_types.cpp, values, functions and statements in
// parser_exprs.cpp, and parser_internal.h declares the Lexer and Parser
// classes they share.
//
//===----------------------------------------------------------------------===//
#include "ir/parser.h"

#include "ir/parser_internal.h"
#include "support/file.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

namespace tessera::ir {
namespace parser_internal {

//===----------------------------------------------------------------------===//
// Module level
//===----------------------------------------------------------------------===//

/// Skips a function body by counting braces (pass 1).
Status Parser::skipBody() {
  TS_RETURN_IF_ERROR(expect(Tok::LBrace, "expected '{' before function body"));
  int depth = 1;
  while (depth > 0) {
    Token t = lex_.next();
    if (t.kind == Tok::LBrace)
      ++depth;
    else if (t.kind == Tok::RBrace)
      --depth;
    else if (t.kind == Tok::Eof)
      return expected(t, "expected '}' at end of function body");
    else if (t.kind == Tok::Error)
      return expected(t, "");
  }
  return okStatus();
}

/// Optional `module @name` line. Returns the name (default "module").
Expected<std::string> Parser::parseModuleLine() {
  skipNewlines();
  std::string name = "module";
  if (isIdent(lex_.peek(), "module")) {
    lex_.next();
    Token n = lex_.peek();
    if (n.kind != Tok::Global)
      return expected(n, "expected '@name' after 'module'");
    lex_.next();
    name = tokenName(n);
    TS_RETURN_IF_ERROR(expectEndOfLine("module name"));
  }
  return name;
}

/// `def @name` (before the signature); returns the name token.
Expected<Token> Parser::parseDefStart() {
  Token d = lex_.peek();
  if (!isIdent(d, "def"))
    return expected(d, "expected 'def'");
  lex_.next();
  Token n = lex_.peek();
  if (n.kind != Tok::Global)
    return expected(n, "expected '@name' after 'def'");
  return lex_.next();
}

/// Pass 1: the signature of every global. Fails on a malformed header.
Status Parser::scan() {
  TS_RETURN_IF_ERROR(parseModuleLine());
  while (true) {
    skipNewlines();
    if (lex_.peek().kind == Tok::Eof)
      return okStatus();
    TS_ASSIGN_OR_RETURN(Token n, parseDefStart());
    TS_ASSIGN_OR_RETURN(Signature sig, parseSignature());
    std::string g = tokenName(n);
    if (sigs_.count(g))
      return errorAt(n, fmt::format("redefinition of global '{}'", display(n.text)));
    std::vector<Type> ptypes;
    for (const Var &p : sig.params)
      ptypes.push_back(p->type());
    sigs_.emplace(std::move(g), GlobalSig{Type::func(std::move(ptypes), sig.result)});
    TS_RETURN_IF_ERROR(skipBody());
    TS_RETURN_IF_ERROR(expectEndOfLine("'}'"));
  }
}

/// Pass 2: the module.
Expected<Module> Parser::parseAll() {
  TS_ASSIGN_OR_RETURN(std::string modName, parseModuleLine());
  Module m(modName);
  m.setSourceFile(file_);
  while (true) {
    skipNewlines();
    if (lex_.peek().kind == Tok::Eof)
      break;
    TS_ASSIGN_OR_RETURN(Token n, parseDefStart());
    std::string g = tokenName(n);
    if (m.has(g))
      return errorAt(n, fmt::format("redefinition of global '{}'", display(n.text)));
    TS_ASSIGN_OR_RETURN(Signature sig, parseSignature());
    TS_ASSIGN_OR_RETURN(Function fn, parseBody(std::move(sig), g, Span{n.line, n.col}, 0));
    TS_RETURN_IF_ERROR(expectEndOfLine("'}'"));
    m.set(g, std::move(fn));
  }
  if (scanError_)
    return *scanError_;
  return m;
}

} // namespace parser_internal

using parser_internal::Parser;

Expected<Module> parseModule(std::string_view text, std::string_view filename) {
  // Pass 1: signatures of every global, so calls may precede definitions.
  Parser scanner(text, filename);
  Status scanned = scanner.scan();
  std::optional<Error> scanError;
  if (!scanned.ok())
    scanError = std::move(scanned).error();
  // Pass 2: the module.
  Parser parser(text, filename);
  parser.setSignatures(scanner.takeSignatures(), std::move(scanError));
  return parser.parseAll();
}

Expected<Module> parseModuleFile(const std::string &path) {
  TS_RETURN_IF_ERROR(checkReadableFile(path));
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Error(fmt::format("cannot open file '{}'", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad())
    return Error(fmt::format("cannot read file '{}'", path));
  return parseModule(ss.str(), path);
}

} // namespace tessera::ir
