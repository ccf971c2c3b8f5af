//===- ir/parser_internal.h - Text IR parser internals ---------*- C++ -*-===//
//
// Private to the text IR parser (ir/parser*.cpp): the tokens, the Lexer and
// the Parser class its files share. The parser is split by section:
//   parser_lexer.cpp   the lexer, unescape, tokenName, display
//   parser_types.cpp   literals, types, attributes, constant data
//   parser_exprs.cpp   values, function signatures and bodies, statements
//   parser.cpp         module level (both passes) and the entry points of
//                      parser.h
// Not for use outside the parser.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/module.h"
#include "ir/op.h"
#include "ir/symbol.h"

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tessera::ir::parser_internal {

constexpr int kMaxNesting = 64;

//===----------------------------------------------------------------------===//
// Lexer (parser_lexer.cpp)
//===----------------------------------------------------------------------===//

enum class Tok : uint8_t {
  Eof,
  Newline,
  Value,  // %name or %"name"
  Global, // @name or @"name"
  Ident,  // bare word: keywords, op names, dtypes, true/false/inf/nan
  Int,    // -?[0-9]+
  Float,  // -?[0-9]+(.[0-9]*)?(e[+-]?[0-9]+)?, -?inf, -?nan
  Hex,    // 0x...
  String, // "..."
  LParen,
  RParen,
  LBracket,
  RBracket,
  LBrace,
  RBrace,
  Comma,
  Colon,
  Equal,
  Arrow,
  Dot,
  Error, // lexical error; the message is in Lexer::error_
};

struct Token {
  Tok kind = Tok::Eof;
  bool quoted = false;   // Value/Global written with quotes
  std::string_view text; // raw source text
  uint32_t line = 0, col = 0;
};

inline bool isIdentStart(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}
inline bool isDigit(char c) { return c >= '0' && c <= '9'; }
inline bool isNameChar(char c) {
  return isIdentStart(c) || isDigit(c) || c == '.' || c == '$' || c == '-';
}
inline int hexValue(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/// Printable rendering of raw text for messages, truncated.
std::string display(std::string_view s, size_t limit = 40);

class Lexer {
public:
  Lexer(std::string_view text) : src_(text) {}

  const Token &peek() {
    if (!hasPeek_) {
      peek_ = lex();
      hasPeek_ = true;
    }
    return peek_;
  }
  Token next() {
    peek();
    hasPeek_ = false;
    return peek_;
  }
  const std::string &error() const { return error_; }

private:
  std::string_view src_;
  size_t pos_ = 0;
  uint32_t line_ = 1;
  size_t lineStart_ = 0;
  Token peek_;
  bool hasPeek_ = false;
  std::string error_;

  char at(size_t i) const { return i < src_.size() ? src_[i] : '\0'; }
  bool atEnd(size_t i) const { return i >= src_.size(); }

  Token make(Tok k, size_t start, size_t end, uint32_t col);
  Token fail(size_t start, uint32_t col, std::string msg);
  std::optional<Token> stuck_;

  std::optional<size_t> scanString(size_t start, std::string &msg);
  Token lex();
  Token lexNumber(size_t start, uint32_t col);
};

/// The contents of a quoted string (`quoted` includes the quotes, as the
/// lexer validated it) with its escapes resolved.
std::string unescape(std::string_view quoted);
/// The name of a Value/Global token, without sigil and quotes.
std::string tokenName(const Token &t);

//===----------------------------------------------------------------------===//
// Parser
//===----------------------------------------------------------------------===//

struct GlobalSig {
  Type fnType;
};

class Parser {
public:
  Parser(std::string_view text, std::string_view filename)
      : text_(text), file_(filename), lex_(text) {}

  void setSignatures(std::unordered_map<std::string, GlobalSig> sigs, std::optional<Error> err) {
    sigs_ = std::move(sigs);
    scanError_ = std::move(err);
  }
  std::unordered_map<std::string, GlobalSig> takeSignatures() { return std::move(sigs_); }

private:
  std::string_view text_;
  std::string file_;
  Lexer lex_;
  const OpRegistry &ops_ = OpRegistry::global();
  std::unordered_map<std::string, GlobalSig> sigs_;
  std::optional<Error> scanError_;
  // Value scopes: one per function being parsed (innermost last).
  std::vector<std::unordered_map<std::string, Expr>> scopes_;

  // --- diagnostics --------------------------------------------------------

  Error errorAt(uint32_t line, uint32_t col, std::string_view msg) const {
    Error e{std::string(msg)};
    e.setPosition(fmt::format("{}:{}:{}", file_, line, col));
    return e;
  }
  Error errorAt(const Token &t, std::string_view msg) const {
    return errorAt(t.line, t.col, msg);
  }
  /// "<expected>, found '<tok>'" (or the lexer's message for a bad token).
  Error expected(const Token &t, std::string_view what) const {
    if (t.kind == Tok::Error)
      return errorAt(t, lex_.error());
    std::string found;
    if (t.kind == Tok::Eof)
      found = "end of file";
    else if (t.kind == Tok::Newline)
      found = "end of line";
    else
      found = fmt::format("'{}'", display(t.text));
    return errorAt(t, fmt::format("{}, found {}", what, found));
  }

  Expected<Token> expect(Tok kind, std::string_view what) {
    if (lex_.peek().kind != kind)
      return expected(lex_.peek(), what);
    return lex_.next();
  }
  bool isIdent(const Token &t, std::string_view word) const {
    return t.kind == Tok::Ident && t.text == word;
  }
  void skipNewlines() {
    while (lex_.peek().kind == Tok::Newline)
      lex_.next();
  }
  Status expectEndOfLine(std::string_view after) {
    const Token &t = lex_.peek();
    if (t.kind == Tok::Newline) {
      lex_.next();
      return okStatus();
    }
    if (t.kind == Tok::Eof)
      return okStatus();
    return expected(t, fmt::format("expected end of line after {}", after));
  }

  // --- literals, types, attributes, constants (parser_types.cpp) ----------

  Expected<int64_t> parseIntToken(const Token &t);
  template <typename F> Expected<F> parseFloatToken(const Token &t);
  static bool isFloatWord(const Token &t);
  Expected<int64_t> parseSymbolDim(const Token &d);
  Expected<Type> parseType(int depth = 0);
  Expected<AttrValue> parseAttrValue();
  Expected<Attrs> parseAttrDict(const Op *op);
  Expected<Tensor> parseConstantData(const Type &type);

  // --- values and functions (parser_exprs.cpp) ----------------------------

  Expected<Expr> lookup(const Token &t);
  Status define(const Token &t, std::string name, Expr e);
  Expected<std::vector<Expr>> parseArgs(std::string_view what);

  struct Signature {
    std::vector<Var> params;
    std::vector<Token> paramToks;
    Type result;
    Token resultTok;
    Attrs attrs;
  };

  Expected<Signature> parseSignature();
  Expected<Function> parseBody(Signature sig, std::string name, Span span, int depth);
  Status parseStatement(int depth);

  // --- module level (parser.cpp) ------------------------------------------

  Status skipBody();
  Expected<std::string> parseModuleLine();
  Expected<Token> parseDefStart();

public:
  /// Pass 1: the signature of every global. Fails on a malformed header.
  Status scan();
  /// Pass 2: the module.
  Expected<Module> parseAll();
};

} // namespace tessera::ir::parser_internal
