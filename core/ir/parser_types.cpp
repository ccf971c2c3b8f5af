//===- ir/parser_types.cpp - Text IR parser: types and attributes --------===//
//
// The parts of the text IR parser (parser.cpp) that read literals: integer
// and float tokens, types (tensor, tuple and function types, nested at most
// kMaxNesting deep), attribute values and dictionaries, and the data of
// constants (a list of values or hex bytes), each checked against its type.
//
//===----------------------------------------------------------------------===//
#include "ir/parser_internal.h"

#include <fmt/format.h>

#include <charconv>
#include <limits>
#include <variant>

namespace tessera::ir::parser_internal {

// --- literals -----------------------------------------------------------

Expected<int64_t> Parser::parseIntToken(const Token &t) {
  int64_t v = 0;
  auto r = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
  if (r.ec != std::errc() || r.ptr != t.text.data() + t.text.size())
    return errorAt(t, fmt::format("integer '{}' is out of range", display(t.text)));
  return v;
}
template <typename F> Expected<F> Parser::parseFloatToken(const Token &t) {
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
bool Parser::isFloatWord(const Token &t) {
  return t.kind == Tok::Ident && (t.text == "inf" || t.text == "nan");
}

// --- types --------------------------------------------------------------

/// The rest of a symbolic dim after its name token `d` (consumed): optional
/// bounds "(lo)" or "(lo, hi)"; a derived dim as printed ("?3fa0") has none.
Expected<int64_t> Parser::parseSymbolDim(const Token &d) {
  int64_t lo = 1, hi = kUnbounded;
  if (d.text[0] == '?')
    return derivedPlaceholder(d.text);
  if (lex_.peek().kind == Tok::LParen) {
    lex_.next();
    Token loTok = lex_.peek();
    if (loTok.kind != Tok::Int)
      return expected(loTok, "expected the symbol's lower bound");
    lex_.next();
    TS_ASSIGN_OR_RETURN(lo, parseIntToken(loTok));
    if (lex_.peek().kind == Tok::Comma) {
      lex_.next();
      Token hiTok = lex_.peek();
      if (hiTok.kind != Tok::Int)
        return expected(hiTok, "expected the symbol's upper bound");
      lex_.next();
      TS_ASSIGN_OR_RETURN(hi, parseIntToken(hiTok));
    }
    TS_RETURN_IF_ERROR(expect(Tok::RParen, "expected ')' after the symbol's bounds"));
  }
  auto sym = namedSymbol(d.text, lo, hi);
  if (!sym.ok())
    return errorAt(d, sym.error().message());
  return *sym;
}

Expected<Type> Parser::parseType(int depth) {
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
  if (isIdent(t, "seq")) {
    // seq(f32) or seq(f32[_, _]): a sequence of any rank, or of rank 2.
    lex_.next();
    TS_RETURN_IF_ERROR(expect(Tok::LParen, "expected '(' after 'seq' in sequence type"));
    Token e = lex_.peek();
    auto edt = e.kind == Tok::Ident ? parseDType(e.text) : std::nullopt;
    if (!edt)
      return expected(e, "expected the elements' dtype in sequence type");
    lex_.next();
    int64_t rank = -1;
    if (lex_.peek().kind == Tok::LBracket) {
      lex_.next();
      rank = 0;
      while (lex_.peek().kind != Tok::RBracket) {
        if (!isIdent(lex_.peek(), "_"))
          return expected(lex_.peek(), "expected '_' (an element's dim) in sequence type");
        lex_.next();
        ++rank;
        if (lex_.peek().kind == Tok::Comma)
          lex_.next();
        else if (lex_.peek().kind != Tok::RBracket)
          return expected(lex_.peek(), "expected ',' or ']' in sequence type");
      }
      lex_.next();
    }
    TS_RETURN_IF_ERROR(expect(Tok::RParen, "expected ')' after sequence type"));
    return Type::sequence(*edt, rank);
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
    if (d.kind == Tok::Ident) {
      // A symbolic dim: a name ("N", "N(1, 8)"), or a derived dim as printed ("?3fa0").
      lex_.next();
      TS_ASSIGN_OR_RETURN(int64_t symDim, parseSymbolDim(d));
      shape.push_back(symDim);
      if (lex_.peek().kind == Tok::Comma)
        lex_.next();
      else if (lex_.peek().kind != Tok::RBracket)
        return expected(lex_.peek(), "expected ',' or ']' in shape");
      continue;
    }
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
Expected<AttrValue> Parser::parseAttrValue() {
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
    if (t.text[0] == '?')
      return errorAt(t, fmt::format("a derived symbolic dim ('{}') in an attribute cannot be "
                                    "read back: the text does not hold its formula (import "
                                    "the model again, or bind its dims)",
                                    t.text));
    if (isSymbolName(t.text)) { // a symbolic dim (a nonzero's count)
      TS_ASSIGN_OR_RETURN(int64_t dim, parseSymbolDim(t));
      return AttrValue(dim);
    }
    return expected(t, "expected attribute value");
  }
  case Tok::LBracket: {
    std::vector<Token> items;
    // Symbolic dims in an int list (a reshape's newshape=[N, -1]), by item.
    std::vector<std::optional<int64_t>> symbols;
    bool anyFloat = false;
    while (lex_.peek().kind != Tok::RBracket) {
      Token e = lex_.next();
      std::optional<int64_t> symbol;
      if (e.kind == Tok::Float || isFloatWord(e)) {
        anyFloat = true;
      } else if (e.kind == Tok::Ident) {
        if (e.text[0] == '?')
          return errorAt(e, fmt::format("a derived symbolic dim ('{}') in an attribute cannot be "
                                        "read back: the text does not hold its formula (import "
                                        "the model again, or bind its dims)",
                                        e.text));
        TS_ASSIGN_OR_RETURN(int64_t dim, parseSymbolDim(e));
        symbol = dim;
      } else if (e.kind != Tok::Int) {
        return expected(e, "expected number in list");
      }
      items.push_back(e);
      symbols.push_back(symbol);
      if (lex_.peek().kind == Tok::Comma) {
        lex_.next();
        continue;
      }
      if (lex_.peek().kind != Tok::RBracket)
        return expected(lex_.peek(), "expected ',' or ']' in list");
    }
    lex_.next();
    if (anyFloat) {
      for (size_t k = 0; k < items.size(); ++k)
        if (symbols[k])
          return errorAt(items[k], "a symbolic dim in a list of floats");
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
    for (size_t k = 0; k < items.size(); ++k) {
      if (symbols[k]) {
        v.push_back(*symbols[k]);
        continue;
      }
      TS_ASSIGN_OR_RETURN(int64_t i, parseIntToken(items[k]));
      v.push_back(i);
    }
    return AttrValue(std::move(v));
  }
  default: return expected(t, "expected attribute value");
  }
}

/// `{name=value, ...}`; with `op`, values are coerced to the declared kind
/// where the text is ambiguous (an int for a float, [] or ints for floats).
Expected<Attrs> Parser::parseAttrDict(const Op *op) {
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

Expected<Tensor> Parser::parseConstantData(const Type &type) {
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

} // namespace tessera::ir::parser_internal
