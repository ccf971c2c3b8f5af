//===- partition/pattern.cpp - Parsing, printing and matching patterns ----===//
//
// A small hand-written lexer and recursive-descent parser (patterns are a
// line long; nesting is capped so that hostile text cannot exhaust the stack)
// and a backtracking structural matcher.
//
//===----------------------------------------------------------------------===//
#include "partition/pattern.h"

#include "ir/op.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace tessera::partition {

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

//===----------------------------------------------------------------------===//
// Matching
//===----------------------------------------------------------------------===//

struct MatchState {
  std::vector<ir::Expr> ops;
  std::vector<std::pair<ir::Expr, bool>> leaves; // (expr, matched by 'const')
};

bool matchNode(const PatternNode &p, const ir::Expr &e, MatchState &st);

bool matchOpPresent(const PatternNode &p, const ir::Expr &e, MatchState &st) {
  const auto *call = e->as<ir::CallNode>();
  if (!call || !p.acceptsCall(*call))
    return false;
  auto args = call->args();
  for (size_t i = 0; i < p.args.size(); ++i)
    if (!matchNode(p.args[i], args[i], st))
      return false;
  st.ops.push_back(e);
  return true;
}

/// Tries `p` on `e`; on failure leaves `st` as it was.
bool matchNode(const PatternNode &p, const ir::Expr &e, MatchState &st) {
  size_t nOps = st.ops.size(), nLeaves = st.leaves.size();
  auto rollback = [&] {
    st.ops.resize(nOps);
    st.leaves.resize(nLeaves);
  };
  switch (p.kind) {
  case PatternNode::Kind::Any: st.leaves.emplace_back(e, false); return true;
  case PatternNode::Kind::Const:
    if (!e->as<ir::ConstantNode>())
      return false;
    st.leaves.emplace_back(e, true);
    return true;
  case PatternNode::Kind::Alt:
    for (const PatternNode &alt : p.args) {
      if (matchNode(alt, e, st))
        return true;
      rollback();
    }
    return false;
  case PatternNode::Kind::Op:
    if (matchOpPresent(p, e, st))
      return true;
    rollback();
    if (p.optional && matchNode(p.args[0], e, st))
      return true;
    rollback();
    return false;
  }
  return false;
}

bool sameValue(const ir::AttrValue &actual, const ir::AttrValue &want) {
  return std::visit(
      [&](const auto &a) -> bool {
        using T = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          return std::holds_alternative<int64_t>(want) && std::get<int64_t>(want) == a;
        } else if constexpr (std::is_same_v<T, double>) {
          if (const auto *i = std::get_if<int64_t>(&want))
            return double(*i) == a;
          const auto *d = std::get_if<double>(&want);
          return d && (*d == a || (std::isnan(*d) && std::isnan(a)));
        } else if constexpr (std::is_same_v<T, ir::DType>) {
          const auto *s = std::get_if<std::string>(&want);
          return s && ir::parseDType(*s) == a;
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          std::vector<double> w;
          if (const auto *i = std::get_if<std::vector<int64_t>>(&want))
            w.assign(i->begin(), i->end());
          else if (const auto *d = std::get_if<std::vector<double>>(&want))
            w = *d;
          else
            return false;
          return w == a;
        } else {
          return std::holds_alternative<T>(want) && std::get<T>(want) == a;
        }
      },
      actual);
}

} // namespace

//===----------------------------------------------------------------------===//
// Public API
//===----------------------------------------------------------------------===//

bool AttrPredicate::holds(const ir::AttrValue &actual) const {
  return sameValue(actual, value) != negated;
}

bool PatternNode::acceptsCall(const ir::CallNode &call) const {
  if (kind != Kind::Op || call.calleeKind() != ir::CallNode::CalleeKind::Op)
    return false;
  if (std::find(ops.begin(), ops.end(), call.op()) == ops.end())
    return false;
  if (call.args().size() != args.size())
    return false;
  for (const AttrPredicate &pred : predicates) {
    const ir::AttrValue *v = call.attrs().find(pred.attr);
    if (!v || !pred.holds(*v))
      return false;
  }
  return true;
}

std::string PatternNode::str() const {
  std::string out;
  switch (kind) {
  case Kind::Any: return "*";
  case Kind::Const: return "const";
  case Kind::Alt:
    for (size_t i = 0; i < args.size(); ++i)
      out += (i ? "|" : "") + args[i].str();
    return out;
  case Kind::Op: break;
  }
  for (size_t i = 0; i < ops.size(); ++i)
    out += (i ? "|" : "") + ops[i]->name;
  if (optional)
    out += '?';
  if (!predicates.empty()) {
    out += '[';
    for (size_t i = 0; i < predicates.size(); ++i) {
      if (i)
        out += ", ";
      out += predicates[i].attr;
      out += predicates[i].negated ? "!=" : "=";
      ir::appendAttrValue(out, predicates[i].value);
    }
    out += ']';
  }
  out += '(';
  for (size_t i = 0; i < args.size(); ++i)
    out += (i ? ", " : "") + args[i].str();
  return out + ")";
}

std::string Pattern::str() const {
  return root.str();
}

Expected<Pattern> parsePattern(std::string_view name, std::string_view text) {
  return Parser(name, text).run();
}

std::optional<PatternMatch> matchPattern(const Pattern &pattern, const ir::Expr &root) {
  MatchState st;
  if (!root || !matchNode(pattern.root, root, st) || st.ops.empty())
    return std::nullopt;
  // Matches are a few nodes: scans beat hash sets here.
  auto contains = [](const std::vector<ir::Expr> &v, const ir::Expr &e) {
    return std::find(v.begin(), v.end(), e) != v.end();
  };
  PatternMatch m;
  m.root = root;
  for (const ir::Expr &op : st.ops)
    if (!contains(m.ops, op))
      m.ops.push_back(op);
  m.interior.assign(m.ops.begin(), m.ops.end() - 1);
  // A leaf matched by '*' anywhere is an input, even if 'const' matched it too.
  auto starred = [&](const ir::Expr &e) {
    return std::any_of(st.leaves.begin(), st.leaves.end(),
                       [&](const auto &leaf) { return !leaf.second && leaf.first == e; });
  };
  for (const auto &[e, isConst] : st.leaves) {
    if (contains(m.leaves, e))
      continue;
    m.leaves.push_back(e);
    (starred(e) ? m.inputs : m.constants).push_back(e);
  }
  return m;
}

namespace {
void collectRootOps(const PatternNode &p, std::vector<const ir::Op *> &out) {
  if (p.kind == PatternNode::Kind::Alt) {
    for (const PatternNode &alt : p.args)
      collectRootOps(alt, out);
  } else if (p.kind == PatternNode::Kind::Op) {
    for (const ir::Op *op : p.ops)
      if (std::find(out.begin(), out.end(), op) == out.end())
        out.push_back(op);
    if (p.optional && !p.args.empty())
      collectRootOps(p.args[0], out); // absent: its first argument is at the root
  }
}
} // namespace

std::vector<const ir::Op *> rootOps(const Pattern &pattern) {
  std::vector<const ir::Op *> out;
  collectRootOps(pattern.root, out);
  return out;
}

} // namespace tessera::partition
