//===- ir/attrs.cpp - Typed attributes -----------------------------------===//
#include "ir/attrs.h"

#include "ir/symbol.h"

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
template <typename F> void appendFloatImpl(std::string &out, F v) {
  size_t start = out.size();
  fmt::format_to(std::back_inserter(out), "{}", v);
  std::string_view s(out.data() + start, out.size() - start);
  if (s.find_first_of(".e") == std::string_view::npos && s.find("inf") == std::string_view::npos &&
      s.find("nan") == std::string_view::npos)
    out += ".0";
}
} // namespace

void appendFloat(std::string &out, float v) { appendFloatImpl(out, v); }
void appendFloat(std::string &out, double v) { appendFloatImpl(out, v); }

void appendQuoted(std::string &out, std::string_view s) {
  out += '"';
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\t': out += "\\t"; break;
    case '\r': out += "\\r"; break;
    default:
      if (c < 0x20 || c == 0x7f) {
        static const char *hex = "0123456789abcdef";
        out += "\\x";
        out += hex[c >> 4];
        out += hex[c & 15];
      } else {
        out += ch;
      }
    }
  }
  out += '"';
}

void appendAttrValue(std::string &out, const AttrValue &v) {
  std::visit(
      [&](const auto &x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          if (isKnownSymbol(x)) // a topk's k, a nonzero's count
            out += dimStr(x);
          else
            fmt::format_to(std::back_inserter(out), "{}", x);
        } else if constexpr (std::is_same_v<T, double>) {
          appendFloat(out, x);
        } else if constexpr (std::is_same_v<T, std::string>) {
          appendQuoted(out, x);
        } else if constexpr (std::is_same_v<T, bool>) {
          out += x ? "true" : "false";
        } else if constexpr (std::is_same_v<T, DType>) {
          out += dtypeName(x);
        } else {
          out += '[';
          for (size_t i = 0; i < x.size(); ++i) {
            if (i)
              out += ", ";
            if constexpr (std::is_same_v<T, std::vector<int64_t>>)
              out += isKnownSymbol(x[i]) ? dimStr(x[i]) : std::to_string(x[i]); // newshape=[N, -1]
            else
              appendFloat(out, x[i]);
          }
          out += ']';
        }
      },
      v);
}

bool Attrs::holdsSymbols() const { return !symbols().empty(); }

std::vector<int64_t> Attrs::symbols() const {
  std::vector<int64_t> out;
  auto note = [&](int64_t x) {
    if (isKnownSymbol(x) && std::find(out.begin(), out.end(), x) == out.end())
      out.push_back(x);
  };
  for (const auto &[name, v] : entries_) {
    if (const auto *one = std::get_if<int64_t>(&v))
      note(*one);
    else if (const auto *ints = std::get_if<std::vector<int64_t>>(&v))
      for (int64_t x : *ints)
        note(x);
  }
  return out;
}

Attrs Attrs::withSymbols(const std::function<int64_t(int64_t)> &value) const {
  Attrs out = *this;
  for (auto &[name, v] : out.entries_) {
    if (auto *one = std::get_if<int64_t>(&v); one && isKnownSymbol(*one))
      *one = value(*one);
    else if (auto *ints = std::get_if<std::vector<int64_t>>(&v))
      for (int64_t &x : *ints)
        if (isKnownSymbol(x))
          x = value(x);
  }
  return out;
}

std::string attrValueStr(const AttrValue &v) {
  std::string out;
  appendAttrValue(out, v);
  return out;
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
