//===- ir/op.cpp - Operator definitions and their registry ---------------===//
#include "ir/op.h"

#include "ir/ops/ops.h"
#include "ir/symbol.h"
#include "support/log.h"

#include <algorithm>
#include <cstdlib>
#include <optional>

namespace tessera::ir {

std::string_view opPatternName(OpPattern p) {
  switch (p) {
  case OpPattern::Elementwise: return "elementwise";
  case OpPattern::Broadcast: return "broadcast";
  case OpPattern::Injective: return "injective";
  case OpPattern::Reduction: return "reduction";
  case OpPattern::ComputeHeavy: return "compute-heavy";
  case OpPattern::Opaque: return "opaque";
  }
  return "?";
}

const AttrSpec *Op::findAttr(std::string_view attrName) const {
  for (const auto &a : attrs)
    if (a.name == attrName)
      return &a;
  return nullptr;
}

Expected<Attrs> Op::normalizeAttrs(const Attrs &given) const {
  Attrs out;
  for (const auto &[attrName, value] : given) {
    const AttrSpec *spec = findAttr(attrName);
    if (!spec) {
      std::string known;
      for (const auto &a : attrs)
        known += (known.empty() ? "" : ", ") + a.name;
      return Error::format("{}: unknown attribute '{}' (expected one of: {})", name, attrName,
                           known.empty() ? "none" : known);
    }
    AttrKind kind = attrKindOf(value);
    if (kind == spec->kind) {
      out.set(attrName, value);
    } else if (spec->kind == AttrKind::Float && kind == AttrKind::Int) {
      out.set(attrName, double(std::get<int64_t>(value)));
    } else if (spec->kind == AttrKind::Floats && kind == AttrKind::Ints) {
      const auto &xs = std::get<std::vector<int64_t>>(value);
      out.set(attrName, std::vector<double>(xs.begin(), xs.end()));
    } else if (spec->kind == AttrKind::Ints && kind == AttrKind::Floats &&
               std::get<std::vector<double>>(value).empty()) {
      out.set(attrName, std::vector<int64_t>{});
    } else {
      return Error::format("{}: attribute '{}' must be {}, got {} {}", name, attrName,
                           attrKindName(spec->kind), attrKindName(kind), attrValueStr(value));
    }
  }
  for (const auto &spec : attrs) {
    if (out.has(spec.name))
      continue;
    if (!spec.defaultValue)
      return Error::format("{}: missing required attribute '{}' ({})", name, spec.name,
                           attrKindName(spec.kind));
    out.set(spec.name, *spec.defaultValue);
  }
  return out;
}

Expected<Type> Op::inferType(std::span<const Type> inputs, const Attrs &normalized) const {
  auto inputList = [&] {
    std::string s;
    for (size_t i = 0; i < inputs.size(); ++i)
      s += (i ? ", " : "") + inputs[i].str();
    return s;
  };
  int n = int(inputs.size());
  if (n < minArgs || (maxArgs >= 0 && n > maxArgs)) {
    std::string expected = maxArgs < 0         ? fmt::format("at least {}", minArgs)
                           : minArgs == maxArgs ? fmt::format("{}", minArgs)
                                                : fmt::format("{} to {}", minArgs, maxArgs);
    return Error::format("{}: expected {} argument{}, got {}", name, expected,
                         (maxArgs == 1 && minArgs == 1) ? "" : "s", n);
  }
  if (controlFlow || sequence) { // functions or sequences among the arguments
    auto result = relation(inputs, normalized);
    if (!result.ok())
      return Error::format("{}: {}", name, result.error().str());
    return result;
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].isTensor())
      return Error::format("{}: argument {} must be a tensor, got {}", name, i, inputs[i].str());
  bool symbolic = false;
  for (const Type &t : inputs)
    symbolic = symbolic || !t.isStatic();
  symbolic = symbolic || normalized.holdsSymbols(); // a reshape to [N, -1], a topk's k
  if (symbolic)
    return inferSymbolic(inputs, normalized);
  auto result = relation(inputs, normalized);
  if (!result.ok())
    return Error::format("{}: {} (inputs: {})", name, result.error().str(), inputList());
  return result;
}

namespace {

/// `t` (a tensor type) with every symbol replaced by value(symbol).
template <typename F> Type substitute(const Type &t, F value) {
  Shape shape = t.shape();
  for (int64_t &d : shape)
    if (isSymbol(d))
      d = value(d);
  return Type::tensor(t.dtype(), std::move(shape));
}

/// The tensor types of `t` (itself, or a tuple's fields), depth first.
void tensorsOf(const Type &t, std::vector<Type> &out) {
  if (t.isTensor())
    out.push_back(t);
  else
    for (const Type &f : t.fields())
      tensorsOf(f, out);
}

/// `op`'s relation with every symbol replaced by value(symbol), in the input
/// types and in int attributes (a newshape taken from a Shape op's output).
Expected<Type> relationAt(const Op &op, std::span<const Type> inputs, const Attrs &normalized,
                          const std::function<int64_t(int64_t)> &value) {
  std::vector<Type> concrete;
  for (const Type &t : inputs)
    concrete.push_back(substitute(t, value));
  const Attrs attrs = normalized.withSymbols(value);
  return op.relation(concrete, attrs);
}

/// Records how derived symbol `dim`, dim `i` of result tensor `k` of `op`
/// over `inputs`, is computed from `symbols` (ir/symbol.h SymbolDefinition).
void define(int64_t dim, const Op &op, std::span<const Type> inputs, const Attrs &normalized,
            const std::vector<int64_t> &symbols, size_t k, size_t i, size_t numResults) {
  SymbolDefinition def;
  def.sources = symbols;
  def.what = numResults > 1 ? fmt::format("{} result {} dim {}", op.name, k, i)
                            : fmt::format("{} result dim {}", op.name, i);
  std::string types;
  for (const Type &t : inputs)
    types += t.str() + ";";
  def.key = fmt::format("{} {} {} {} {}", op.name, normalized.str(), types, k, i);
  def.eval = [&op, ins = std::vector<Type>(inputs.begin(), inputs.end()), attrs = normalized,
              symbols, k, i](std::span<const int64_t> values) -> std::optional<int64_t> {
    auto r = relationAt(op, ins, attrs, [&](int64_t d) {
      return values[size_t(std::find(symbols.begin(), symbols.end(), d) - symbols.begin())];
    });
    if (!r.ok())
      return std::nullopt;
    std::vector<Type> out;
    tensorsOf(*r, out);
    if (k >= out.size() || i >= out[k].rank())
      return std::nullopt;
    return out[k].shape()[i];
  };
  defineSymbol(dim, std::move(def));
}

/// `tensors` rebuilt into the structure of `like` (same tensor count).
Type rebuild(const Type &like, const std::vector<Type> &tensors, size_t &next) {
  if (like.isTensor())
    return tensors[next++];
  std::vector<Type> fields;
  for (const Type &f : like.fields())
    fields.push_back(rebuild(f, tensors, next));
  return Type::tuple(std::move(fields));
}

} // namespace

// The relation runs once per probe with each symbol replaced by its probe
// value, and at the symbols' lower and upper bounds; each output dim is read
// back as a constant, an input symbol or a derived symbol (ir/symbol.h).
Expected<Type> Op::inferSymbolic(std::span<const Type> inputs, const Attrs &normalized) const {
  auto at = [&](auto value) { return relationAt(*this, inputs, normalized, value); };
  std::vector<int64_t> symbols;
  auto note = [&](int64_t d) {
    if (isKnownSymbol(d) && std::find(symbols.begin(), symbols.end(), d) == symbols.end())
      symbols.push_back(d);
  };
  for (const Type &t : inputs)
    for (int64_t d : t.shape())
      note(d);
  for (int64_t d : normalized.symbols())
    note(d);

  std::array<std::vector<Type>, kProbes> probed;
  Type structure; // the first probe's result: its tuple nesting
  for (size_t j = 0; j < kProbes; ++j) {
    auto r = at([&](int64_t d) { return symbolInfo(d).probes[j]; });
    if (!r.ok()) {
      std::string values;
      for (int64_t d : symbols)
        values += fmt::format("{}{} = {}", values.empty() ? "" : ", ", dimStr(d),
                              symbolInfo(d).probes[j]);
      std::string list;
      for (size_t i = 0; i < inputs.size(); ++i)
        list += (i ? ", " : "") + inputs[i].str();
      return Error::format("{}: {} (inputs: {}; with {})", name, r.error().str(), list, values);
    }
    tensorsOf(*r, probed[j]);
    if (j == 0) {
      structure = *r;
      continue;
    }
    bool same = probed[j].size() == probed[0].size();
    for (size_t k = 0; same && k < probed[0].size(); ++k)
      same = probed[j][k].dtype() == probed[0][k].dtype() &&
             probed[j][k].rank() == probed[0][k].rank();
    if (!same)
      return Error::format("{}: the result's structure depends on the values of symbols "
                           "(inputs have symbolic dims)",
                           name);
  }
  // Bounds: the relation at every symbol's lower bound, and at every upper
  // bound when all have one; a failure leaves the bound unknown. A result of
  // another structure there is the op meaning something else at those
  // values (a squeeze without axes of a dim that may be 1): refused, since
  // one compiled result cannot stand for both.
  std::optional<Error> divergent;
  auto tensorsAt = [&](auto value, const char *where) -> std::optional<std::vector<Type>> {
    auto r = at(value);
    if (!r.ok())
      return std::nullopt;
    std::vector<Type> out;
    tensorsOf(*r, out);
    bool same = out.size() == probed[0].size();
    for (size_t k = 0; same && k < out.size(); ++k)
      same = out[k].rank() == probed[0][k].rank();
    if (!same && !divergent) {
      std::string list;
      for (int64_t d : symbols)
        list += fmt::format("{}{} = {}", list.empty() ? "" : ", ", dimStr(d), value(d));
      std::string ranks;
      for (const Type &t : probed[0])
        ranks += fmt::format("{}{}", ranks.empty() ? "" : ", ", t.rank());
      divergent = Error::format("{}: the result's rank depends on the values of symbols: with {} "
                                "({}) it is {}, at other values of rank {} (give the dims, or "
                                "the op's axes, explicitly)",
                                name, list, where, r->str(), ranks);
    }
    return same ? std::optional<std::vector<Type>>(std::move(out)) : std::nullopt;
  };
  bool bounded = true;
  for (int64_t d : symbols)
    bounded = bounded && symbolInfo(d).bounded();
  auto lo = tensorsAt([](int64_t d) { return symbolInfo(d).lo; }, "their lower bounds");
  // Named symbols at lo + 1, derived ones computed from those (ir/symbol.h).
  const auto nearLo = valuesNearLo(symbols);
  auto loPlus1 = nearLo ? tensorsAt(
                              [&](int64_t d) {
                                return (*nearLo)[size_t(
                                    std::find(symbols.begin(), symbols.end(), d) -
                                    symbols.begin())];
                              },
                              "their lower bounds + 1")
                        : std::optional<std::vector<Type>>();
  auto hi = bounded ? tensorsAt([](int64_t d) { return symbolInfo(d).hi; }, "their upper bounds")
                    : std::optional<std::vector<Type>>();
  if (divergent)
    return std::move(*divergent);

  std::vector<Type> tensors;
  for (size_t k = 0; k < probed[0].size(); ++k) {
    Shape shape;
    for (size_t i = 0; i < probed[0][k].rank(); ++i) {
      std::array<int64_t, kProbes> values;
      for (size_t j = 0; j < kProbes; ++j)
        values[j] = probed[j][k].shape()[i];
      const int64_t d = readBackDim(
          values, lo ? std::optional<int64_t>((*lo)[k].shape()[i]) : std::nullopt,
          hi ? std::optional<int64_t>((*hi)[k].shape()[i]) : std::nullopt, symbols,
          loPlus1 ? std::optional<int64_t>((*loPlus1)[k].shape()[i]) : std::nullopt);
      if (isSymbol(d) && symbolInfo(d).derived())
        define(d, *this, inputs, normalized, symbols, k, i, probed[0].size());
      shape.push_back(d);
    }
    tensors.push_back(Type::tensor(probed[0][k].dtype(), std::move(shape)));
  }
  size_t next = 0;
  return rebuild(structure, tensors, next);
}

const OpRegistry &OpRegistry::global() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    Status s = registerCoreOps(r);
    if (!s.ok()) {
      // A malformed built-in op is a bug in Tessera itself, not user input.
      TS_LOG_ERROR("internal error: {}", s.error().str());
      std::abort();
    }
    return r;
  }();
  return registry;
}

Status OpRegistry::add(Op op) {
  if (op.name.empty())
    return Error("op without a name");
  if (ops_.count(op.name))
    return Error::format("op '{}' is registered twice", op.name);
  if (!op.relation || !op.kernel)
    return Error::format("op '{}' lacks a type relation or a reference kernel", op.name);
  std::string name = op.name;
  ops_.emplace(std::move(name), std::make_unique<Op>(std::move(op)));
  return okStatus();
}

const Op *OpRegistry::find(std::string_view name) const {
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : it->second.get();
}

std::vector<const Op *> OpRegistry::all() const {
  std::vector<const Op *> out;
  for (const auto &[name, op] : ops_)
    out.push_back(op.get());
  return out;
}

} // namespace tessera::ir
