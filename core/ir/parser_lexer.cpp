//===- ir/parser_lexer.cpp - Text IR parser: lexer -----------------------===//
//
// The lexer of the text IR parser (parser.cpp): tokens of the line-oriented
// text format, with newlines as tokens and '#' comments skipped; names,
// strings, numbers and punctuation. A lexical error stops the lexer: every
// later token is the same error token, and Lexer::error() gives its
// message. Also the helpers that read a token's text (unescape, tokenName)
// and render raw text for messages (display).
//
//===----------------------------------------------------------------------===//
#include "ir/parser_internal.h"

#include <fmt/format.h>

#include <algorithm>

namespace tessera::ir::parser_internal {

//===----------------------------------------------------------------------===//
// Lexer
//===----------------------------------------------------------------------===//

/// Printable rendering of raw text for messages, truncated.
std::string display(std::string_view s, size_t limit) {
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

Token Lexer::make(Tok k, size_t start, size_t end, uint32_t col) {
  Token t;
  t.kind = k;
  t.text = src_.substr(start, end - start);
  t.line = line_;
  t.col = col;
  pos_ = end;
  return t;
}

Token Lexer::fail(size_t start, uint32_t col, std::string msg) {
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

/// Scans a quoted string starting at `start` (the opening quote); returns
/// the end (past the closing quote) or an error message.
std::optional<size_t> Lexer::scanString(size_t start, std::string &msg) {
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

Token Lexer::lex() {
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
  if (isIdentStart(c) || (c == '?' && !atEnd(start + 1) && isNameChar(src_[start + 1]))) {
    // '?' starts a derived dim's name in a shape ("?3fa0", ir/symbol.h).
    size_t i = start + 1;
    while (!atEnd(i) && isNameChar(src_[i]))
      ++i;
    return make(Tok::Ident, start, i, col);
  }
  return fail(start, col, fmt::format("unexpected character '{}'", display(src_.substr(start, 1))));
}

Token Lexer::lexNumber(size_t start, uint32_t col) {
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

} // namespace tessera::ir::parser_internal
