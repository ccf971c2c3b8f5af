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
//===----------------------------------------------------------------------===//
#include "ir/parser.h"

#include "ir/op.h"
#include "support/file.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <unordered_map>

namespace tessera::ir {
namespace {

constexpr int kMaxNesting = 64;

//===----------------------------------------------------------------------===//
// Lexer
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

bool isIdentStart(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}
bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isNameChar(char c) {
  return isIdentStart(c) || isDigit(c) || c == '.' || c == '$' || c == '-';
}
int hexValue(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/// Printable rendering of raw text for messages, truncated.
std::string display(std::string_view s, size_t limit = 40) {
  std::string out;
  size_t n = std::min(s.size(), limit);
  for (size_t i = 0; i < n; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c >= 0x7f)
      out += fmt::format("\\x{:02x}", c);
    else
      out += char(c);
  }
  if (s.size() > limit)
    out += "...";
  return out;
}

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

  Token make(Tok k, size_t start, size_t end, uint32_t col) {
    Token t;
    t.kind = k;
    t.text = src_.substr(start, end - start);
    t.line = line_;
    t.col = col;
    pos_ = end;
    return t;
  }
  Token fail(size_t start, uint32_t col, std::string msg) {
    error_ = std::move(msg);
    Token t;
    t.kind = Tok::Error;
    t.text = src_.substr(start, std::min<size_t>(1, src_.size() - start));
    t.line = line_;
    t.col = col;
    pos_ = src_.size(); // stop: every later peek sees the same error
    stuck_ = t;
    return t;
  }
  std::optional<Token> stuck_;

  /// Scans a quoted string starting at `start` (the opening quote); returns
  /// the end (past the closing quote) or an error message.
  std::optional<size_t> scanString(size_t start, std::string &msg) {
    size_t i = start + 1;
    while (true) {
      if (atEnd(i) || src_[i] == '\n') {
        msg = "unterminated string";
        return std::nullopt;
      }
      char c = src_[i];
      if (c == '"')
        return i + 1;
      if (c == '\\') {
        char e = at(i + 1);
        if (e == '"' || e == '\\' || e == 'n' || e == 't' || e == 'r') {
          i += 2;
          continue;
        }
        if (e == 'x' && hexValue(at(i + 2)) >= 0 && hexValue(at(i + 3)) >= 0) {
          i += 4;
          continue;
        }
        msg = fmt::format("invalid escape '\\{}' in string", display(src_.substr(i + 1, 1)));
        return std::nullopt;
      }
      ++i;
    }
  }

  Token lex() {
    if (stuck_)
      return *stuck_;
    // Skip blanks and comments; collapse newlines.
    bool sawNewline = false;
    Token nl;
    while (!atEnd(pos_)) {
      char c = src_[pos_];
      if (c == ' ' || c == '\t' || c == '\r') {
        ++pos_;
      } else if (c == '#') {
        while (!atEnd(pos_) && src_[pos_] != '\n')
          ++pos_;
      } else if (c == '\n') {
        if (!sawNewline) {
          sawNewline = true;
          nl.kind = Tok::Newline;
          nl.text = src_.substr(pos_, 1);
          nl.line = line_;
          nl.col = uint32_t(pos_ - lineStart_ + 1);
        }
        ++pos_;
        ++line_;
        lineStart_ = pos_;
      } else {
        break;
      }
    }
    if (sawNewline)
      return nl;
    size_t start = pos_;
    uint32_t col = uint32_t(start - lineStart_ + 1);
    if (atEnd(start)) {
      Token t;
      t.kind = Tok::Eof;
      t.line = line_;
      t.col = col;
      return t;
    }
    char c = src_[start];
    switch (c) {
    case '(': return make(Tok::LParen, start, start + 1, col);
    case ')': return make(Tok::RParen, start, start + 1, col);
    case '[': return make(Tok::LBracket, start, start + 1, col);
    case ']': return make(Tok::RBracket, start, start + 1, col);
    case '{': return make(Tok::LBrace, start, start + 1, col);
    case '}': return make(Tok::RBrace, start, start + 1, col);
    case ',': return make(Tok::Comma, start, start + 1, col);
    case ':': return make(Tok::Colon, start, start + 1, col);
    case '=': return make(Tok::Equal, start, start + 1, col);
    case '.': return make(Tok::Dot, start, start + 1, col);
    default: break;
    }
    if (c == '%' || c == '@') {
      Tok kind = c == '%' ? Tok::Value : Tok::Global;
      if (at(start + 1) == '"') {
        std::string msg;
        auto end = scanString(start + 1, msg);
        if (!end)
          return fail(start, col, msg);
        if (*end == start + 3)
          return fail(start, col, fmt::format("empty name after '{}'", c));
        Token t = make(kind, start, *end, col);
        t.quoted = true;
        return t;
      }
      size_t i = start + 1;
      while (!atEnd(i) && isNameChar(src_[i]))
        ++i;
      if (i == start + 1)
        return fail(start, col, fmt::format("expected name after '{}'", c));
      return make(kind, start, i, col);
    }
    if (c == '"') {
      std::string msg;
      auto end = scanString(start, msg);
      if (!end)
        return fail(start, col, msg);
      return make(Tok::String, start, *end, col);
    }
    if (c == '-' && at(start + 1) == '>')
      return make(Tok::Arrow, start, start + 2, col);
    if (isDigit(c) || (c == '-' && (isDigit(at(start + 1)) || isIdentStart(at(start + 1)))))
      return lexNumber(start, col);
    if (isIdentStart(c)) {
      size_t i = start + 1;
      while (!atEnd(i) && isNameChar(src_[i]))
        ++i;
      return make(Tok::Ident, start, i, col);
    }
    return fail(start, col, fmt::format("unexpected character '{}'", display(src_.substr(start, 1))));
  }

  Token lexNumber(size_t start, uint32_t col) {
    size_t i = start;
    if (src_[i] == '-')
      ++i;
    auto badRun = [&](size_t from) {
      size_t j = from;
      while (!atEnd(j) && (isNameChar(src_[j]) || src_[j] == '+'))
        ++j;
      return fail(start, col,
                  fmt::format("invalid number '{}'", display(src_.substr(start, j - start))));
    };
    if (isIdentStart(at(i))) { // -inf, -nan
      size_t j = i;
      while (!atEnd(j) && isNameChar(src_[j]))
        ++j;
      std::string_view w = src_.substr(i, j - i);
      if (w == "inf" || w == "nan")
        return make(Tok::Float, start, j, col);
      return badRun(i);
    }
    if (src_[i] == '0' && (at(i + 1) == 'x' || at(i + 1) == 'X') && i == start) {
      size_t j = i + 2;
      while (!atEnd(j) && (isIdentStart(src_[j]) || isDigit(src_[j])))
        ++j;
      return make(Tok::Hex, start, j, col);
    }
    bool isFloat = false;
    while (isDigit(at(i)))
      ++i;
    if (at(i) == '.' && isDigit(at(i + 1))) {
      isFloat = true;
      ++i;
      while (isDigit(at(i)))
        ++i;
    }
    if (at(i) == 'e' || at(i) == 'E') {
      size_t j = i + 1;
      if (at(j) == '+' || at(j) == '-')
        ++j;
      if (!isDigit(at(j)))
        return badRun(start);
      while (isDigit(at(j)))
        ++j;
      i = j;
      isFloat = true;
    }
    if (!atEnd(i) && isNameChar(src_[i]))
      return badRun(start);
    return make(isFloat ? Tok::Float : Tok::Int, start, i, col);
  }
};

std::string unescape(std::string_view quoted) {
  // `quoted` includes the quotes and was validated by the lexer.
  std::string out;
  out.reserve(quoted.size());
  for (size_t i = 1; i + 1 < quoted.size(); ++i) {
    char c = quoted[i];
    if (c != '\\') {
      out += c;
      continue;
    }
    char e = quoted[++i];
    switch (e) {
    case 'n': out += '\n'; break;
    case 't': out += '\t'; break;
    case 'r': out += '\r'; break;
    case 'x':
      out += char(hexValue(quoted[i + 1]) * 16 + hexValue(quoted[i + 2]));
      i += 2;
      break;
    default: out += e; break;
    }
  }
  return out;
}

/// The name of a Value/Global token, without sigil and quotes.
std::string tokenName(const Token &t) {
  if (t.quoted)
    return unescape(t.text.substr(1));
  return std::string(t.text.substr(1));
}

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
    return Error(fmt::format("{}:{}:{}: {}", file_, line, col, msg));
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

  // --- literals -----------------------------------------------------------

  Expected<int64_t> parseIntToken(const Token &t) {
    int64_t v = 0;
    auto r = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
    if (r.ec != std::errc() || r.ptr != t.text.data() + t.text.size())
      return errorAt(t, fmt::format("integer '{}' is out of range", display(t.text)));
    return v;
  }
  template <typename F> Expected<F> parseFloatToken(const Token &t) {
    std::string_view s = t.text;
    bool neg = false;
    if (!s.empty() && s[0] == '-') {
      neg = true;
      s.remove_prefix(1);
    }
    if (s == "inf")
      return neg ? -std::numeric_limits<F>::infinity() : std::numeric_limits<F>::infinity();
    if (s == "nan")
      return neg ? -std::numeric_limits<F>::quiet_NaN() : std::numeric_limits<F>::quiet_NaN();
    F v = 0;
    auto r = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
    if (r.ec != std::errc() || r.ptr != t.text.data() + t.text.size())
      return errorAt(t, fmt::format("number '{}' is out of range", display(t.text)));
    return v;
  }
  static bool isFloatWord(const Token &t) {
    return t.kind == Tok::Ident && (t.text == "inf" || t.text == "nan");
  }

  // --- types --------------------------------------------------------------

  Expected<Type> parseType(int depth = 0) {
    Token t = lex_.peek();
    if (depth > kMaxNesting)
      return errorAt(t, fmt::format("types nested deeper than {} levels", kMaxNesting));
    if (t.kind == Tok::LParen) {
      lex_.next();
      std::vector<Type> fields;
      while (lex_.peek().kind != Tok::RParen) {
        TS_ASSIGN_OR_RETURN(Type f, parseType(depth + 1));
        fields.push_back(std::move(f));
        if (lex_.peek().kind == Tok::Comma) {
          lex_.next();
          continue;
        }
        if (lex_.peek().kind != Tok::RParen)
          return expected(lex_.peek(), "expected ',' or ')' in tuple type");
      }
      lex_.next();
      return Type::tuple(std::move(fields));
    }
    if (isIdent(t, "fn")) {
      lex_.next();
      TS_RETURN_IF_ERROR(expect(Tok::LParen, "expected '(' after 'fn' in function type"));
      std::vector<Type> params;
      while (lex_.peek().kind != Tok::RParen) {
        TS_ASSIGN_OR_RETURN(Type p, parseType(depth + 1));
        params.push_back(std::move(p));
        if (lex_.peek().kind == Tok::Comma) {
          lex_.next();
          continue;
        }
        if (lex_.peek().kind != Tok::RParen)
          return expected(lex_.peek(), "expected ',' or ')' in function type");
      }
      lex_.next();
      TS_RETURN_IF_ERROR(expect(Tok::Arrow, "expected '->' in function type"));
      TS_ASSIGN_OR_RETURN(Type r, parseType(depth + 1));
      return Type::func(std::move(params), std::move(r));
    }
    if (t.kind != Tok::Ident)
      return expected(t, "expected type");
    auto dt = parseDType(t.text);
    if (!dt)
      return errorAt(t, fmt::format("unknown dtype '{}'", display(t.text)));
    lex_.next();
    TS_RETURN_IF_ERROR(expect(Tok::LBracket, "expected '[' after dtype"));
    Shape shape;
    int64_t elements = 1;
    while (lex_.peek().kind != Tok::RBracket) {
      Token d = lex_.peek();
      if (d.kind != Tok::Int)
        return expected(d, "expected dimension");
      lex_.next();
      TS_ASSIGN_OR_RETURN(int64_t v, parseIntToken(d));
      if (v < 0)
        return errorAt(d, fmt::format("dimension must be non-negative, got {}", v));
      if (v > kMaxElements)
        return errorAt(d, fmt::format("dimension {} is too large", v));
      // The product of the non-zero dims is bounded too, so that no size
      // computation on this type can overflow whatever the order of dims.
      if (v != 0) {
        if (elements > kMaxElements / v)
          return errorAt(d, "tensor type has too many elements");
        elements *= v;
      }
      shape.push_back(v);
      if (lex_.peek().kind == Tok::Comma) {
        lex_.next();
        continue;
      }
      if (lex_.peek().kind != Tok::RBracket)
        return expected(lex_.peek(), "expected ',' or ']' in shape");
    }
    lex_.next();
    return Type::tensor(*dt, std::move(shape));
  }

  // --- attributes ---------------------------------------------------------

  /// One attribute value; lists of numbers are ints unless one is a float.
  Expected<AttrValue> parseAttrValue() {
    Token t = lex_.next();
    switch (t.kind) {
    case Tok::Int: {
      TS_ASSIGN_OR_RETURN(int64_t v, parseIntToken(t));
      return AttrValue(v);
    }
    case Tok::Float: {
      TS_ASSIGN_OR_RETURN(double v, parseFloatToken<double>(t));
      return AttrValue(v);
    }
    case Tok::String: return AttrValue(unescape(t.text));
    case Tok::Ident: {
      if (t.text == "true")
        return AttrValue(true);
      if (t.text == "false")
        return AttrValue(false);
      if (isFloatWord(t)) {
        TS_ASSIGN_OR_RETURN(double v, parseFloatToken<double>(t));
        return AttrValue(v);
      }
      if (auto dt = parseDType(t.text))
        return AttrValue(*dt);
      return expected(t, "expected attribute value");
    }
    case Tok::LBracket: {
      std::vector<Token> items;
      bool anyFloat = false;
      while (lex_.peek().kind != Tok::RBracket) {
        Token e = lex_.next();
        if (e.kind == Tok::Float || isFloatWord(e))
          anyFloat = true;
        else if (e.kind != Tok::Int)
          return expected(e, "expected number in list");
        items.push_back(e);
        if (lex_.peek().kind == Tok::Comma) {
          lex_.next();
          continue;
        }
        if (lex_.peek().kind != Tok::RBracket)
          return expected(lex_.peek(), "expected ',' or ']' in list");
      }
      lex_.next();
      if (anyFloat) {
        std::vector<double> v;
        v.reserve(items.size());
        for (const Token &e : items) {
          TS_ASSIGN_OR_RETURN(double d, parseFloatToken<double>(e));
          v.push_back(d);
        }
        return AttrValue(std::move(v));
      }
      std::vector<int64_t> v;
      v.reserve(items.size());
      for (const Token &e : items) {
        TS_ASSIGN_OR_RETURN(int64_t i, parseIntToken(e));
        v.push_back(i);
      }
      return AttrValue(std::move(v));
    }
    default: return expected(t, "expected attribute value");
    }
  }

  /// `{name=value, ...}`; with `op`, values are coerced to the declared kind
  /// where the text is ambiguous (an int for a float, [] or ints for floats).
  Expected<Attrs> parseAttrDict(const Op *op) {
    TS_RETURN_IF_ERROR(expect(Tok::LBrace, "expected '{'"));
    Attrs attrs;
    while (lex_.peek().kind != Tok::RBrace) {
      Token n = lex_.next();
      std::string name;
      if (n.kind == Tok::Ident)
        name = std::string(n.text);
      else if (n.kind == Tok::String)
        name = unescape(n.text);
      else
        return expected(n, "expected attribute name");
      if (attrs.has(name))
        return errorAt(n, fmt::format("duplicate attribute '{}'", display(name)));
      TS_RETURN_IF_ERROR(expect(Tok::Equal, "expected '=' after attribute name"));
      TS_ASSIGN_OR_RETURN(AttrValue v, parseAttrValue());
      if (op) {
        if (const AttrSpec *spec = op->findAttr(name)) {
          if (spec->kind == AttrKind::Float && std::holds_alternative<int64_t>(v))
            v = double(std::get<int64_t>(v));
          else if (spec->kind == AttrKind::Floats && std::holds_alternative<std::vector<int64_t>>(v)) {
            const auto &iv = std::get<std::vector<int64_t>>(v);
            v = std::vector<double>(iv.begin(), iv.end());
          }
        }
      }
      attrs.set(std::move(name), std::move(v));
      if (lex_.peek().kind == Tok::Comma) {
        lex_.next();
        continue;
      }
      if (lex_.peek().kind != Tok::RBrace)
        return expected(lex_.peek(), "expected ',' or '}' in attributes");
    }
    lex_.next();
    return attrs;
  }

  // --- constants ----------------------------------------------------------

  Expected<Tensor> parseConstantData(const Type &type) {
    DType dt = type.dtype();
    int64_t n = type.numElements();
    Token t = lex_.peek();
    std::string typeText = type.str();
    if (t.kind == Tok::Hex) {
      lex_.next();
      std::string_view digits = t.text.substr(2);
      size_t nbytes = size_t(n) * dtypeSize(dt);
      if (digits.size() != 2 * nbytes)
        return errorAt(t, fmt::format("constant {} needs {} bytes ({} hex digits), got {} hex digits",
                                      typeText, nbytes, 2 * nbytes, digits.size()));
      for (size_t i = 0; i < digits.size(); ++i)
        if (hexValue(digits[i]) < 0)
          return errorAt(t.line, t.col + uint32_t(2 + i),
                         fmt::format("invalid hex digit '{}'", display(digits.substr(i, 1))));
      Tensor out(dt, type.shape());
      uint8_t *p = out.bytes();
      for (size_t i = 0; i < nbytes; ++i)
        p[i] = uint8_t(hexValue(digits[2 * i]) * 16 + hexValue(digits[2 * i + 1]));
      return out;
    }
    if (t.kind != Tok::LBracket)
      return expected(t, "expected '[' or hex data after constant type");
    lex_.next();
    std::vector<Token> items;
    while (lex_.peek().kind != Tok::RBracket) {
      Token e = lex_.next();
      if (e.kind != Tok::Int && e.kind != Tok::Float && e.kind != Tok::Ident)
        return expected(e, "expected constant value");
      items.push_back(e);
      if (lex_.peek().kind == Tok::Comma) {
        lex_.next();
        continue;
      }
      if (lex_.peek().kind != Tok::RBracket)
        return expected(lex_.peek(), "expected ',' or ']' in constant values");
    }
    lex_.next();
    if (int64_t(items.size()) != n)
      return errorAt(t, fmt::format("constant {} needs {} values, got {}", typeText, n, items.size()));
    Tensor out(dt, type.shape());
    for (int64_t i = 0; i < n; ++i) {
      const Token &e = items[size_t(i)];
      if (dt == DType::Bool) {
        if (!isIdent(e, "true") && !isIdent(e, "false"))
          return expected(e, "expected 'true' or 'false' in bool constant");
        out.data<uint8_t>()[i] = e.text == "true" ? 1 : 0;
        continue;
      }
      if (isFloat(dt)) {
        if (e.kind == Tok::Ident && !isFloatWord(e))
          return expected(e, fmt::format("expected number in {} constant", dtypeName(dt)));
        if (dt == DType::F64) {
          TS_ASSIGN_OR_RETURN(double v, parseFloatToken<double>(e));
          out.data<double>()[i] = v;
        } else {
          TS_ASSIGN_OR_RETURN(float v, parseFloatToken<float>(e));
          if (dt == DType::F32)
            out.data<float>()[i] = v;
          else if (dt == DType::F16)
            out.data<uint16_t>()[i] = floatToHalf(v);
          else
            out.data<uint16_t>()[i] = floatToBfloat16(v);
        }
        continue;
      }
      if (e.kind != Tok::Int)
        return expected(e, fmt::format("expected integer in {} constant", dtypeName(dt)));
      if (dt == DType::U64) { // 0 .. 2^64 - 1, beyond int64
        uint64_t u = 0;
        auto r = std::from_chars(e.text.data(), e.text.data() + e.text.size(), u);
        if (r.ec != std::errc() || r.ptr != e.text.data() + e.text.size())
          return errorAt(e, fmt::format("value {} is out of range for u64", display(e.text)));
        out.setUInt(i, u);
        continue;
      }
      TS_ASSIGN_OR_RETURN(int64_t v, parseIntToken(e));
      int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
      switch (dt) {
      case DType::I8: lo = -128, hi = 127; break;
      case DType::U8: lo = 0, hi = 255; break;
      case DType::I16: lo = -32768, hi = 32767; break;
      case DType::U16: lo = 0, hi = 65535; break;
      case DType::I32:
        lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
        break;
      case DType::U32: lo = 0, hi = std::numeric_limits<uint32_t>::max(); break;
      default: break;
      }
      if (v < lo || v > hi)
        return errorAt(e, fmt::format("value {} is out of range for {}", v, dtypeName(dt)));
      out.setInt(i, v);
    }
    return out;
  }

  // --- values -------------------------------------------------------------

  Expected<Expr> lookup(const Token &t) {
    std::string name = tokenName(t);
    auto &scope = scopes_.back();
    auto it = scope.find(name);
    if (it != scope.end())
      return it->second;
    for (size_t i = scopes_.size() - 1; i-- > 0;)
      if (scopes_[i].count(name))
        return errorAt(t, fmt::format("value '{}' is defined outside the function", display(t.text)));
    return errorAt(t, fmt::format("use of undefined value '{}'", display(t.text)));
  }

  Status define(const Token &t, std::string name, Expr e) {
    auto [it, inserted] = scopes_.back().emplace(std::move(name), std::move(e));
    if (!inserted)
      return errorAt(t, fmt::format("redefinition of value '{}'", display(t.text)));
    return okStatus();
  }

  Expected<std::vector<Expr>> parseArgs(std::string_view what) {
    TS_RETURN_IF_ERROR(expect(Tok::LParen, fmt::format("expected '(' after {}", what)));
    std::vector<Expr> args;
    if (lex_.peek().kind == Tok::RParen) {
      lex_.next();
      return args;
    }
    while (true) {
      Token v = lex_.peek();
      if (v.kind != Tok::Value)
        return expected(v, "expected value in call arguments");
      lex_.next();
      TS_ASSIGN_OR_RETURN(Expr e, lookup(v));
      args.push_back(std::move(e));
      Token sep = lex_.peek();
      if (sep.kind == Tok::Comma) {
        lex_.next();
        continue;
      }
      if (sep.kind == Tok::RParen) {
        lex_.next();
        return args;
      }
      return expected(sep, "expected ')' after call arguments");
    }
  }

  // --- functions ----------------------------------------------------------

  struct Signature {
    std::vector<Var> params;
    std::vector<Token> paramToks;
    Type result;
    Token resultTok;
    Attrs attrs;
  };

  /// `(%a: T, ...) -> R [attributes {...}]`
  Expected<Signature> parseSignature() {
    Signature sig;
    TS_RETURN_IF_ERROR(expect(Tok::LParen, "expected '(' before parameters"));
    while (lex_.peek().kind != Tok::RParen) {
      Token p = lex_.peek();
      if (p.kind != Tok::Value)
        return expected(p, "expected parameter name");
      lex_.next();
      TS_RETURN_IF_ERROR(expect(Tok::Colon, "expected ':' after parameter name"));
      TS_ASSIGN_OR_RETURN(Type ty, parseType());
      std::string name = tokenName(p);
      for (size_t i = 0; i < sig.params.size(); ++i)
        if (sig.params[i]->name() == name)
          return errorAt(p, fmt::format("redefinition of value '{}'", display(p.text)));
      sig.params.push_back(makeVar(std::move(name), std::move(ty), Span{p.line, p.col}));
      sig.paramToks.push_back(p);
      if (lex_.peek().kind == Tok::Comma) {
        lex_.next();
        continue;
      }
      if (lex_.peek().kind != Tok::RParen)
        return expected(lex_.peek(), "expected ',' or ')' after parameter");
    }
    lex_.next();
    TS_RETURN_IF_ERROR(expect(Tok::Arrow, "expected '->' and result type after parameters"));
    sig.resultTok = lex_.peek();
    TS_ASSIGN_OR_RETURN(sig.result, parseType());
    if (isIdent(lex_.peek(), "attributes")) {
      lex_.next();
      TS_ASSIGN_OR_RETURN(sig.attrs, parseAttrDict(nullptr));
    }
    return sig;
  }

  /// After the signature: `{` NL statements `return %v` NL `}`. Returns the
  /// function; the scope for its params is pushed and popped here.
  Expected<Function> parseBody(Signature sig, std::string name, Span span, int depth) {
    if (depth > kMaxNesting)
      return errorAt(lex_.peek(), fmt::format("functions nested deeper than {} levels", kMaxNesting));
    TS_RETURN_IF_ERROR(expect(Tok::LBrace, "expected '{' before function body"));
    if (lex_.peek().kind != Tok::Newline)
      return expected(lex_.peek(), "expected end of line after '{'");
    scopes_.emplace_back();
    struct Pop {
      std::vector<std::unordered_map<std::string, Expr>> &s;
      ~Pop() { s.pop_back(); }
    } pop{scopes_};
    for (size_t i = 0; i < sig.params.size(); ++i)
      TS_RETURN_IF_ERROR(define(sig.paramToks[i], sig.params[i]->name(), sig.params[i]));
    Expr result;
    while (true) {
      skipNewlines();
      Token t = lex_.peek();
      if (isIdent(t, "return")) {
        lex_.next();
        Token v = lex_.peek();
        if (v.kind != Tok::Value)
          return expected(v, "expected value after 'return'");
        lex_.next();
        TS_ASSIGN_OR_RETURN(result, lookup(v));
        if (result->type() != sig.result)
          return errorAt(v, fmt::format("returned value has type {}, but the function declares {}",
                                        result->type().str(), sig.result.str()));
        if (lex_.peek().kind != Tok::Newline)
          return expected(lex_.peek(), "expected end of line after return value");
        skipNewlines();
        TS_RETURN_IF_ERROR(expect(Tok::RBrace, "expected '}' after return"));
        break;
      }
      if (t.kind != Tok::Value)
        return expected(t, "expected value definition or 'return'");
      TS_RETURN_IF_ERROR(parseStatement(depth));
    }
    return makeFunction(std::move(sig.params), std::move(result), std::move(sig.attrs),
                        std::move(name), span);
  }

  /// `%name = rhs [: type]` and the end of the line.
  Status parseStatement(int depth) {
    Token lhs = lex_.next();
    std::string name = tokenName(lhs);
    Span span{lhs.line, lhs.col};
    TS_RETURN_IF_ERROR(expect(Tok::Equal, "expected '=' after value name"));
    Token t = lex_.peek();
    auto wrap = [&](Expected<Expr> e) -> Expected<Expr> {
      if (!e.ok())
        return errorAt(lhs, e.error().str());
      return e;
    };
    Expr value;
    bool isFn = false;
    if (isIdent(t, "constant")) {
      lex_.next();
      Token typeTok = lex_.peek();
      TS_ASSIGN_OR_RETURN(Type type, parseType());
      if (!type.isTensor())
        return errorAt(typeTok, fmt::format("constant type must be a tensor type, got {}", type.str()));
      TS_ASSIGN_OR_RETURN(Tensor data, parseConstantData(type));
      value = makeConstant(std::move(data), name, span);
    } else if (isIdent(t, "tuple")) {
      lex_.next();
      TS_ASSIGN_OR_RETURN(auto args, parseArgs("'tuple'"));
      value = makeTuple(std::move(args), name, span);
    } else if (isIdent(t, "fn")) {
      lex_.next();
      TS_ASSIGN_OR_RETURN(Signature sig, parseSignature());
      TS_ASSIGN_OR_RETURN(Function fn, parseBody(std::move(sig), name, span, depth + 1));
      value = fn;
      isFn = true;
    } else if (t.kind == Tok::Ident) {
      lex_.next();
      const Op *op = ops_.find(t.text);
      if (!op)
        return errorAt(t, fmt::format("unknown op '{}'", display(t.text)));
      TS_ASSIGN_OR_RETURN(auto args, parseArgs(fmt::format("op name '{}'", op->name)));
      Attrs attrs;
      if (lex_.peek().kind == Tok::LBrace) {
        TS_ASSIGN_OR_RETURN(attrs, parseAttrDict(op));
      }
      TS_ASSIGN_OR_RETURN(value, wrap(makeCall(op, std::move(args), std::move(attrs), name, span)));
    } else if (t.kind == Tok::Global) {
      lex_.next();
      std::string g = tokenName(t);
      auto it = sigs_.find(g);
      if (it == sigs_.end()) {
        if (scanError_)
          return *scanError_;
        return errorAt(t, fmt::format("call of undefined global '{}'", display(t.text)));
      }
      TS_ASSIGN_OR_RETURN(auto args, parseArgs(fmt::format("'{}'", display(t.text))));
      TS_ASSIGN_OR_RETURN(value, wrap(makeGlobalCall(std::move(g), it->second.fnType,
                                                     std::move(args), name, span)));
    } else if (t.kind == Tok::Value) {
      lex_.next();
      if (lex_.peek().kind == Tok::LParen) {
        TS_ASSIGN_OR_RETURN(Expr fn, lookup(t));
        TS_ASSIGN_OR_RETURN(auto args, parseArgs("callee"));
        TS_ASSIGN_OR_RETURN(value, wrap(makeLocalCall(std::move(fn), std::move(args), name, span)));
      } else {
        // Tuple get item: %t.N (the lexer keeps ".N" in an unquoted name) or
        // %"t".N.
        Token tupleTok = t;
        Token indexTok;
        if (t.quoted) {
          TS_RETURN_IF_ERROR(expect(Tok::Dot, "expected '(' or '.' after value"));
          Token i = lex_.peek();
          if (i.kind != Tok::Int)
            return expected(i, "expected tuple index after '.'");
          indexTok = lex_.next();
        } else {
          size_t dot = t.text.rfind('.');
          bool ok = dot != std::string_view::npos && dot > 1 && dot + 1 < t.text.size();
          for (size_t i = dot + 1; ok && i < t.text.size(); ++i)
            ok = isDigit(t.text[i]);
          if (!ok)
            return expected(lex_.peek(), fmt::format("expected '(' or '.index' after '{}'", display(t.text)));
          tupleTok.text = t.text.substr(0, dot);
          indexTok = t;
          indexTok.kind = Tok::Int;
          indexTok.text = t.text.substr(dot + 1);
          indexTok.col = t.col + uint32_t(dot + 1);
        }
        TS_ASSIGN_OR_RETURN(Expr tuple, lookup(tupleTok));
        TS_ASSIGN_OR_RETURN(int64_t index, parseIntToken(indexTok));
        if (index > std::numeric_limits<int>::max())
          return errorAt(indexTok, fmt::format("tuple index {} is out of range", index));
        TS_ASSIGN_OR_RETURN(value, wrap(makeTupleGetItem(std::move(tuple), int(index), name, span)));
      }
    } else {
      return expected(t, "expected op name, '@global', '%value', 'constant', 'tuple' or 'fn' after '='");
    }
    if (lex_.peek().kind == Tok::Colon) {
      lex_.next();
      Token typeTok = lex_.peek();
      TS_ASSIGN_OR_RETURN(Type declared, parseType());
      if (declared != value->type())
        return errorAt(typeTok, fmt::format("declared type {} does not match inferred type {}",
                                            declared.str(), value->type().str()));
    }
    TS_RETURN_IF_ERROR(expectEndOfLine(isFn ? "'}'" : "value definition"));
    return define(lhs, std::move(name), std::move(value));
  }

  /// Skips a function body by counting braces (pass 1).
  Status skipBody() {
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
  Expected<std::string> parseModuleLine() {
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
  Expected<Token> parseDefStart() {
    Token d = lex_.peek();
    if (!isIdent(d, "def"))
      return expected(d, "expected 'def'");
    lex_.next();
    Token n = lex_.peek();
    if (n.kind != Tok::Global)
      return expected(n, "expected '@name' after 'def'");
    return lex_.next();
  }

public:
  /// Pass 1: the signature of every global. Fails on a malformed header.
  Status scan() {
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
  Expected<Module> parseAll() {
    TS_ASSIGN_OR_RETURN(std::string modName, parseModuleLine());
    Module m(modName);
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
};

} // namespace

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
