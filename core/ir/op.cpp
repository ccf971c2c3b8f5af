//===- ir/op.cpp - Operator definitions and their registry ---------------===//
#include "ir/op.h"

#include "ir/ops/ops.h"
#include "support/log.h"

#include <cstdlib>

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
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].isTensor())
      return Error::format("{}: argument {} must be a tensor, got {}", name, i, inputs[i].str());
  auto result = relation(inputs, normalized);
  if (!result.ok())
    return Error::format("{}: {} (inputs: {})", name, result.error().str(), inputList());
  return result;
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
