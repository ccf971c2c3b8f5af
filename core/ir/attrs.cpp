//===- ir/attrs.cpp - Typed attributes -----------------------------------===//
#include "ir/attrs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>

namespace tessera::ir {

std::string_view attrKindName(AttrKind k) {
  switch (k) {
  case AttrKind::Int: return "int";
  case AttrKind::Float: return "float";
  case AttrKind::String: return "string";
  case AttrKind::Bool: return "bool";
  case AttrKind::DType: return "dtype";
  case AttrKind::Ints: return "int list";
  case AttrKind::Floats: return "float list";
  }
  return "?";
}

AttrKind attrKindOf(const AttrValue &v) { return AttrKind(v.index()); }

namespace {
std::string floatStr(double v) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v > 0 ? "inf" : "-inf";
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".e") == std::string::npos)
    s += ".0";
  return s;
}

std::string quote(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\t': out += "\\t"; break;
    default: out += c;
    }
  }
  return out + "\"";
}
} // namespace

std::string attrValueStr(const AttrValue &v) {
  switch (attrKindOf(v)) {
  case AttrKind::Int: return std::to_string(std::get<int64_t>(v));
  case AttrKind::Float: return floatStr(std::get<double>(v));
  case AttrKind::String: return quote(std::get<std::string>(v));
  case AttrKind::Bool: return std::get<bool>(v) ? "true" : "false";
  case AttrKind::DType: return std::string(dtypeName(std::get<DType>(v)));
  case AttrKind::Ints: return fmt::format("[{}]", fmt::join(std::get<std::vector<int64_t>>(v), ", "));
  case AttrKind::Floats: {
    std::string s = "[";
    const auto &xs = std::get<std::vector<double>>(v);
    for (size_t i = 0; i < xs.size(); ++i)
      s += (i ? ", " : "") + floatStr(xs[i]);
    return s + "]";
  }
  }
  return "?";
}

Attrs::Attrs(std::initializer_list<Entry> entries) {
  for (const auto &e : entries)
    set(e.first, e.second);
}

const AttrValue *Attrs::find(std::string_view name) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), name,
                             [](const Entry &e, std::string_view n) { return e.first < n; });
  return it != entries_.end() && it->first == name ? &it->second : nullptr;
}

void Attrs::set(std::string name, AttrValue value) {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), name,
                             [](const Entry &e, const std::string &n) { return e.first < n; });
  if (it != entries_.end() && it->first == name)
    it->second = std::move(value);
  else
    entries_.insert(it, Entry(std::move(name), std::move(value)));
}

bool Attrs::erase(std::string_view name) {
  auto it = std::find_if(entries_.begin(), entries_.end(),
                         [&](const Entry &e) { return e.first == name; });
  if (it == entries_.end())
    return false;
  entries_.erase(it);
  return true;
}

int64_t Attrs::getInt(std::string_view name, int64_t fallback) const {
  const AttrValue *v = find(name);
  if (v && std::holds_alternative<int64_t>(*v))
    return std::get<int64_t>(*v);
  if (v && std::holds_alternative<bool>(*v))
    return std::get<bool>(*v);
  return fallback;
}

double Attrs::getFloat(std::string_view name, double fallback) const {
  const AttrValue *v = find(name);
  if (v && std::holds_alternative<double>(*v))
    return std::get<double>(*v);
  if (v && std::holds_alternative<int64_t>(*v))
    return double(std::get<int64_t>(*v));
  return fallback;
}

bool Attrs::getBool(std::string_view name, bool fallback) const {
  const AttrValue *v = find(name);
  if (v && std::holds_alternative<bool>(*v))
    return std::get<bool>(*v);
  if (v && std::holds_alternative<int64_t>(*v))
    return std::get<int64_t>(*v) != 0;
  return fallback;
}

std::string Attrs::getString(std::string_view name, std::string fallback) const {
  const AttrValue *v = find(name);
  return v && std::holds_alternative<std::string>(*v) ? std::get<std::string>(*v) : fallback;
}

DType Attrs::getDType(std::string_view name, DType fallback) const {
  const AttrValue *v = find(name);
  return v && std::holds_alternative<DType>(*v) ? std::get<DType>(*v) : fallback;
}

std::vector<int64_t> Attrs::getInts(std::string_view name) const {
  const AttrValue *v = find(name);
  return v && std::holds_alternative<std::vector<int64_t>>(*v) ? std::get<std::vector<int64_t>>(*v)
                                                              : std::vector<int64_t>{};
}

std::vector<double> Attrs::getFloats(std::string_view name) const {
  const AttrValue *v = find(name);
  if (v && std::holds_alternative<std::vector<double>>(*v))
    return std::get<std::vector<double>>(*v);
  if (v && std::holds_alternative<std::vector<int64_t>>(*v)) {
    const auto &xs = std::get<std::vector<int64_t>>(*v);
    return std::vector<double>(xs.begin(), xs.end());
  }
  return {};
}

std::string Attrs::str() const {
  if (entries_.empty())
    return "";
  std::string s = "{";
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (i)
      s += ", ";
    s += entries_[i].first + "=" + attrValueStr(entries_[i].second);
  }
  return s + "}";
}

size_t Attrs::hash() const {
  size_t h = 0xcbf29ce484222325ULL;
  auto mix = [&](size_t v) { h = (h ^ v) * 0x100000001b3ULL; };
  for (const auto &[name, value] : entries_) {
    mix(std::hash<std::string>()(name));
    mix(value.index());
    std::visit(
        [&](const auto &x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
            for (auto e : x)
              mix(std::hash<int64_t>()(e));
          } else if constexpr (std::is_same_v<T, std::vector<double>>) {
            for (auto e : x)
              mix(std::hash<double>()(e));
          } else if constexpr (std::is_same_v<T, DType>) {
            mix(size_t(x));
          } else {
            mix(std::hash<T>()(x));
          }
        },
        value);
  }
  return h;
}

} // namespace tessera::ir
