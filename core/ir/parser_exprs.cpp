//===- ir/parser_exprs.cpp - Text IR parser: values and functions --------===//
//
// The parts of the text IR parser (parser.cpp) that build expressions:
// value scopes (lookup, define), call arguments, function signatures and
// bodies, and the statements of a body (`%name = rhs [: type]`: constants,
// tuples, nested `fn`s, op calls, calls of globals and of local functions,
// tuple items). Nested `fn` blocks recurse, capped at kMaxNesting.
//
//===----------------------------------------------------------------------===//
#include "ir/parser_internal.h"

#include <fmt/format.h>

#include <limits>

namespace tessera::ir::parser_internal {

// --- values -------------------------------------------------------------

Expected<Expr> Parser::lookup(const Token &t) {
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

Status Parser::define(const Token &t, std::string name, Expr e) {
  auto [it, inserted] = scopes_.back().emplace(std::move(name), std::move(e));
  if (!inserted)
    return errorAt(t, fmt::format("redefinition of value '{}'", display(t.text)));
  return okStatus();
}

Expected<std::vector<Expr>> Parser::parseArgs(std::string_view what) {
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

/// `(%a: T, ...) -> R [attributes {...}]`
Expected<Parser::Signature> Parser::parseSignature() {
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
Expected<Function> Parser::parseBody(Signature sig, std::string name, Span span, int depth) {
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
      if (!typesMatch(sig.result, result->type()))
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
Status Parser::parseStatement(int depth) {
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
    if (!typesMatch(declared, value->type()))
      return errorAt(typeTok, fmt::format("declared type {} does not match inferred type {}",
                                          declared.str(), value->type().str()));
  }
  TS_RETURN_IF_ERROR(expectEndOfLine(isFn ? "'}'" : "value definition"));
  return define(lhs, std::move(name), std::move(value));
}

} // namespace tessera::ir::parser_internal
