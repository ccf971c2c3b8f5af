//===- bridge/pattern_parser.cpp - Lexing and parsing patterns ------------===//
//
// A small hand-written lexer and recursive-descent parser (patterns are a
// line long; nesting is capped so that hostile text cannot exhaust the stack).
// Printing and matching are in pattern.cpp.
//
//===----------------------------------------------------------------------===//
#include "bridge/pattern.h"

#include "ir/op.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <limits>

namespace tessera::bridge {

namespace {

constexpr int kMaxDepth = 64;

//===----------------------------------------------------------------------===//
// Lexer
//===----------------------------------------------------------------------===//

enum class Tok : uint8_t {
  End,
  Ident,  // [A-Za-z_][A-Za-z0-9_]*
  Int,    // -?[0-9]+
  Float,  // -?[0-9]+(.[0-9]+)?([eE][+-]?[0-9]+)? with '.' or exponent, -?inf, nan
  String, // "..."
  Punct,  // ( ) [ ] , | ? * = !=
};

struct Token {
  Tok kind = Tok::End;
  std::string text; // identifier, punctuation or the string's contents
  int64_t i = 0;
  double f = 0;
  uint32_t col = 0;
};

/// How a token reads in a message: 'relu', end of pattern.
std::string describe(const Token &t) {
  if (t.kind == Tok::End)
    return "end of pattern";
  if (t.kind == Tok::String)
    return "\"" + t.text + "\"";
  return "'" + t.text + "'";
}

class Parser {
public:
  Parser(std::string_view name, std::string_view text) : name_(name), text_(text) {}

  Expected<Pattern> run() {
    Pattern p;
    p.name = std::string(name_);
    if (!advance())
      return takeError();
    auto root = parseAlt(0);
    if (!root)
      return takeError();
    if (tok_.kind != Tok::End)
      return fail(tok_.col, "unexpected " + describe(tok_) + " after the pattern");
    if (root->kind == PatternNode::Kind::Any || root->kind == PatternNode::Kind::Const)
      return fail(root->col, "the pattern must have an op at its root");
    p.root = std::move(*root);
    return p;
  }

private:
  // The first error wins; parse functions return nullopt after fail().
  Error fail(uint32_t col, const std::string &message) {
    if (!error_)
      error_ = Error::format("pattern '{}': col {}: {}", name_, col, message);
    return *error_;
  }
  Error takeError() { return *error_; }

  bool isPunct(std::string_view p) const { return tok_.kind == Tok::Punct && tok_.text == p; }

  /// Reads the next token into tok_; false (with the error set) on bad input.
  bool advance() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_])))
      ++pos_;
    Token t;
    t.col = uint32_t(pos_ + 1);
    if (pos_ >= text_.size()) {
      tok_ = t;
      return true;
    }
    char c = text_[pos_];
    auto isIdentStart = [](char ch) {
      return std::isalpha(static_cast<unsigned char>(ch)) || ch == '_';
    };
    auto isIdentChar = [](char ch) {
      return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
    };
    if (isIdentStart(c)) {
      size_t start = pos_;
      while (pos_ < text_.size() && isIdentChar(text_[pos_]))
        ++pos_;
      t.text = std::string(text_.substr(start, pos_ - start));
      if (t.text == "inf" || t.text == "nan") {
        t.kind = Tok::Float;
        t.f = t.text == "inf" ? std::numeric_limits<double>::infinity()
                              : std::numeric_limits<double>::quiet_NaN();
      } else {
        t.kind = Tok::Ident;
      }
    } else if (std::isdigit(static_cast<unsigned char>(c)) ||
               (c == '-' && pos_ + 1 < text_.size() &&
                (std::isdigit(static_cast<unsigned char>(text_[pos_ + 1])) ||
                 text_.substr(pos_ + 1, 3) == "inf"))) {
      if (!lexNumber(t))
        return false;
    } else if (c == '"') {
      ++pos_;
      bool closed = false;
      while (pos_ < text_.size()) {
        char ch = text_[pos_++];
        if (ch == '"') {
          closed = true;
          break;
        }
        if (ch == '\\' && pos_ < text_.size())
          ch = text_[pos_++];
        t.text += ch;
      }
      if (!closed) {
        fail(t.col, "unterminated string");
        return false;
      }
      t.kind = Tok::String;
    } else if (c == '!' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '=') {
      t.kind = Tok::Punct;
      t.text = "!=";
      pos_ += 2;
    } else if (std::string_view("()[],|?*=").find(c) != std::string_view::npos) {
      t.kind = Tok::Punct;
      t.text = std::string(1, c);
      ++pos_;
    } else {
      auto u = static_cast<unsigned char>(c);
      fail(t.col, std::isprint(u) ? fmt::format("unexpected character '{}'", c)
                                  : fmt::format("unexpected character '\\x{:02x}'", u));
      return false;
    }
    tok_ = std::move(t);
    return true;
  }

  bool lexNumber(Token &t) {
    size_t start = pos_;
    if (text_[pos_] == '-')
      ++pos_;
    if (text_.substr(pos_, 3) == "inf") {
      pos_ += 3;
      t.kind = Tok::Float;
      t.f = -std::numeric_limits<double>::infinity();
      t.text = "-inf";
      return true;
    }
    bool isFloat = false;
    auto digits = [&] {
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_])))
        ++pos_;
    };
    digits();
    if (pos_ + 1 < text_.size() && text_[pos_] == '.' &&
        std::isdigit(static_cast<unsigned char>(text_[pos_ + 1]))) {
      isFloat = true;
      ++pos_;
      digits();
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      size_t save = pos_++;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-'))
        ++pos_;
      if (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        isFloat = true;
        digits();
      } else {
        pos_ = save;
      }
    }
    t.text = std::string(text_.substr(start, pos_ - start));
    if (isFloat) {
      t.kind = Tok::Float;
      t.f = std::strtod(t.text.c_str(), nullptr);
      return true;
    }
    errno = 0;
    t.i = std::strtoll(t.text.c_str(), nullptr, 10);
    if (errno == ERANGE) {
      fail(t.col, "integer " + t.text + " is out of range");
      return false;
    }
    t.kind = Tok::Int;
    return true;
  }

  //===--------------------------------------------------------------------===//
  // Grammar
  //===--------------------------------------------------------------------===//

  std::optional<PatternNode> parseAlt(int depth) {
    if (depth >= kMaxDepth) {
      fail(tok_.col, fmt::format("the pattern is nested deeper than {} levels", kMaxDepth));
      return std::nullopt;
    }
    auto first = parseTerm(depth);
    if (!first)
      return std::nullopt;
    if (!isPunct("|"))
      return first;
    PatternNode alt;
    alt.kind = PatternNode::Kind::Alt;
    alt.col = first->col;
    if (first->kind != PatternNode::Kind::Op) {
      fail(tok_.col, "'|' is only allowed between op terms");
      return std::nullopt;
    }
    alt.args.push_back(std::move(*first));
    while (isPunct("|")) {
      uint32_t barCol = tok_.col;
      if (!advance())
        return std::nullopt;
      auto next = parseTerm(depth);
      if (!next)
        return std::nullopt;
      if (next->kind != PatternNode::Kind::Op) {
        fail(barCol, "'|' is only allowed between op terms");
        return std::nullopt;
      }
      alt.args.push_back(std::move(*next));
    }
    return alt;
  }

  std::optional<PatternNode> parseTerm(int depth) {
    PatternNode node;
    node.col = tok_.col;
    if (isPunct("*")) {
      node.kind = PatternNode::Kind::Any;
      return advance() ? std::optional(std::move(node)) : std::nullopt;
    }
    if (tok_.kind == Tok::Ident && tok_.text == "const") {
      node.kind = PatternNode::Kind::Const;
      return advance() ? std::optional(std::move(node)) : std::nullopt;
    }
    if (tok_.kind != Tok::Ident) {
      fail(tok_.col, "expected '*', 'const' or an op name, found " + describe(tok_));
      return std::nullopt;
    }
    node.kind = PatternNode::Kind::Op;
    // op ('|' op)*: inside a term a '|' continues the op list; a '|' after
    // the argument list separates whole terms (parseAlt).
    std::vector<uint32_t> cols; // of each op name, for arity errors
    while (true) {
      const ir::Op *op = ir::OpRegistry::global().find(tok_.text);
      if (!op) {
        fail(tok_.col, "unknown op '" + tok_.text + "'");
        return std::nullopt;
      }
      if (std::find(node.ops.begin(), node.ops.end(), op) != node.ops.end()) {
        fail(tok_.col, "op '" + tok_.text + "' is listed twice");
        return std::nullopt;
      }
      node.ops.push_back(op);
      cols.push_back(tok_.col);
      if (!advance())
        return std::nullopt;
      if (!isPunct("|"))
        break;
      if (!advance())
        return std::nullopt;
      if (tok_.kind != Tok::Ident || tok_.text == "const") {
        fail(tok_.col, "expected an op name after '|', found " + describe(tok_));
        return std::nullopt;
      }
    }
    if (isPunct("?")) {
      node.optional = true;
      if (!advance())
        return std::nullopt;
    }
    if (isPunct("[")) {
      if (!parsePredicates(node))
        return std::nullopt;
    }
    if (!isPunct("(")) {
      fail(tok_.col, "expected '(' and the arguments of '" + node.ops.back()->name + "', found " +
                         describe(tok_));
      return std::nullopt;
    }
    if (!advance())
      return std::nullopt;
    while (true) {
      auto arg = parseAlt(depth + 1);
      if (!arg)
        return std::nullopt;
      node.args.push_back(std::move(*arg));
      if (!isPunct(","))
        break;
      if (!advance())
        return std::nullopt;
    }
    if (!isPunct(")")) {
      fail(tok_.col, "expected ')' after arguments, found " + describe(tok_));
      return std::nullopt;
    }
    for (size_t i = 0; i < node.ops.size(); ++i)
      if (!checkArity(*node.ops[i], node.args.size(), cols[i]))
        return std::nullopt;
    if (!advance())
      return std::nullopt;
    return node;
  }

  bool checkArity(const ir::Op &op, size_t n, uint32_t col) {
    auto plural = [](int k) { return k == 1 ? "argument" : "arguments"; };
    bool ok = int(n) >= op.minArgs && (op.maxArgs < 0 || int(n) <= op.maxArgs);
    if (ok)
      return true;
    std::string takes;
    if (op.maxArgs < 0)
      takes = fmt::format("at least {} {}", op.minArgs, plural(op.minArgs));
    else if (op.minArgs == op.maxArgs)
      takes = fmt::format("{} {}", op.minArgs, plural(op.minArgs));
    else
      takes = fmt::format("{} to {} arguments", op.minArgs, op.maxArgs);
    fail(col, fmt::format("op '{}' takes {}, the pattern gives {}", op.name, takes, n));
    return false;
  }

  bool parsePredicates(PatternNode &node) {
    if (!advance()) // '['
      return false;
    while (true) {
      AttrPredicate pred;
      pred.col = tok_.col;
      if (tok_.kind != Tok::Ident) {
        fail(tok_.col, "expected an attribute name, found " + describe(tok_));
        return false;
      }
      pred.attr = tok_.text;
      if (!advance())
        return false;
      if (isPunct("!="))
        pred.negated = true;
      else if (!isPunct("=")) {
        fail(tok_.col,
             "expected '=' or '!=' after attribute '" + pred.attr + "', found " + describe(tok_));
        return false;
      }
      if (!advance())
        return false;
      uint32_t valueCol = tok_.col;
      if (!parseValue(pred.value))
        return false;
      for (const ir::Op *op : node.ops)
        if (!checkPredicate(*op, pred, valueCol))
          return false;
      node.predicates.push_back(std::move(pred));
      if (!isPunct(","))
        break;
      if (!advance())
        return false;
    }
    if (!isPunct("]")) {
      fail(tok_.col, "expected ']' after attribute predicates, found " + describe(tok_));
      return false;
    }
    return advance();
  }

  bool parseValue(ir::AttrValue &out) {
    switch (tok_.kind) {
    case Tok::Int: out = tok_.i; return advance();
    case Tok::Float: out = tok_.f; return advance();
    case Tok::String: out = tok_.text; return advance();
    case Tok::Ident:
      if (tok_.text == "true" || tok_.text == "false")
        out = tok_.text == "true";
      else
        out = tok_.text;
      return advance();
    default: break;
    }
    if (!isPunct("[")) {
      fail(tok_.col, "expected a value, found " + describe(tok_));
      return false;
    }
    if (!advance())
      return false;
    std::vector<int64_t> ints;
    std::vector<double> floats;
    bool anyFloat = false;
    while (!isPunct("]")) {
      if (tok_.kind == Tok::Int) {
        ints.push_back(tok_.i);
        floats.push_back(double(tok_.i));
      } else if (tok_.kind == Tok::Float) {
        anyFloat = true;
        floats.push_back(tok_.f);
      } else {
        fail(tok_.col, "expected a number in the list, found " + describe(tok_));
        return false;
      }
      if (!advance())
        return false;
      if (isPunct(",")) {
        if (!advance())
          return false;
      } else if (!isPunct("]")) {
        fail(tok_.col, "expected ',' or ']' in the list, found " + describe(tok_));
        return false;
      }
    }
    if (anyFloat)
      out = std::move(floats);
    else
      out = std::move(ints);
    return advance();
  }

  bool checkPredicate(const ir::Op &op, const AttrPredicate &pred, uint32_t valueCol) {
    const ir::AttrSpec *spec = op.findAttr(pred.attr);
    if (!spec) {
      fail(pred.col, "op '" + op.name + "' has no attribute '" + pred.attr + "'");
      return false;
    }
    ir::AttrKind given = ir::attrKindOf(pred.value);
    bool ok = false;
    switch (spec->kind) {
    case ir::AttrKind::Int: ok = given == ir::AttrKind::Int; break;
    case ir::AttrKind::Float:
      ok = given == ir::AttrKind::Int || given == ir::AttrKind::Float;
      break;
    case ir::AttrKind::String: ok = given == ir::AttrKind::String; break;
    case ir::AttrKind::Bool: ok = given == ir::AttrKind::Bool; break;
    case ir::AttrKind::DType:
      if (given == ir::AttrKind::String && ir::parseDType(std::get<std::string>(pred.value)))
        return true;
      if (given == ir::AttrKind::String) {
        fail(valueCol, "'" + std::get<std::string>(pred.value) + "' is not a dtype (attribute '" +
                           pred.attr + "' of op '" + op.name + "')");
        return false;
      }
      break;
    case ir::AttrKind::Ints: ok = given == ir::AttrKind::Ints; break;
    case ir::AttrKind::Floats:
      ok = given == ir::AttrKind::Ints || given == ir::AttrKind::Floats;
      break;
    }
    if (!ok)
      fail(valueCol, fmt::format("attribute '{}' of op '{}' is {}, the value is {}", pred.attr,
                                 op.name, ir::attrKindName(spec->kind), ir::attrKindName(given)));
    return ok;
  }

  std::string_view name_;
  std::string_view text_;
  size_t pos_ = 0;
  Token tok_;
  std::optional<Error> error_;
};

} // namespace

//===----------------------------------------------------------------------===//
// Public API
//===----------------------------------------------------------------------===//

Expected<Pattern> parsePattern(std::string_view name, std::string_view text) {
  return Parser(name, text).run();
}

} // namespace tessera::bridge
