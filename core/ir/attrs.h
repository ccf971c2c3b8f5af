//===- ir/attrs.h - Typed attributes ---------------------------*- C++ -*-===//
//
// Attributes attached to calls and functions: int, float, string, bool,
// dtype, int list and float list. Attrs keeps them sorted by name, so printing
// and hashing are deterministic.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/dtype.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace tessera::ir {

enum class AttrKind : uint8_t { Int, Float, String, Bool, DType, Ints, Floats };

using AttrValue = std::variant<int64_t, double, std::string, bool, DType,
                               std::vector<int64_t>, std::vector<double>>;

std::string_view attrKindName(AttrKind k); // "int", "float", "string", ...

// Text helpers shared by attribute printing, Type::str and the IR printer,
// so that one spelling of every literal exists.

/// Appends `s` in double quotes with \" \\ \n \t \r and \xNN escapes.
void appendQuoted(std::string &out, std::string_view s);
/// Appends the shortest text that reads back as `v` (as float or double),
/// with ".0" added when it would otherwise read as an integer.
void appendFloat(std::string &out, float v);
void appendFloat(std::string &out, double v);
/// Appends an attribute value as the text IR spells it.
void appendAttrValue(std::string &out, const AttrValue &v);
AttrKind attrKindOf(const AttrValue &v);
/// Text form as in the IR: 3, 0.5, "same", true, f16, [1, 2], [0.5, 1.0]
std::string attrValueStr(const AttrValue &v);

class Attrs {
public:
  using Entry = std::pair<std::string, AttrValue>;

  Attrs() = default;
  Attrs(std::initializer_list<Entry> entries);

  bool has(std::string_view name) const { return find(name) != nullptr; }
  /// The value, or null when absent.
  const AttrValue *find(std::string_view name) const;
  /// Sets or replaces a value.
  void set(std::string name, AttrValue value);
  bool erase(std::string_view name);

  // Typed getters. An op's attributes are normalised against its schema when
  // a call is built (defaults filled, kinds checked), so inside type
  // relations and kernels these never miss; on a miss or a kind mismatch they
  // return the fallback.
  int64_t getInt(std::string_view name, int64_t fallback = 0) const;
  double getFloat(std::string_view name, double fallback = 0) const;
  bool getBool(std::string_view name, bool fallback = false) const;
  std::string getString(std::string_view name, std::string fallback = {}) const;
  DType getDType(std::string_view name, DType fallback = DType::F32) const;
  std::vector<int64_t> getInts(std::string_view name) const;
  std::vector<double> getFloats(std::string_view name) const;

  const std::vector<Entry> &entries() const { return entries_; }
  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }
  auto begin() const { return entries_.begin(); }
  auto end() const { return entries_.end(); }

  /// Whether an int or int-list attribute holds a symbolic dim (ir/symbol.h:
  /// a topk's k, a reshape's [N, -1]), which only run time knows.
  bool holdsSymbols() const;
  /// Those symbolic dims, each once, in order of appearance.
  std::vector<int64_t> symbols() const;
  /// The attributes with every symbolic dim d of an int or int-list
  /// attribute replaced by value(d) (the rest as they are).
  Attrs withSymbols(const std::function<int64_t(int64_t)> &value) const;
  /// "{axis=1, keepdims=true}" or "" when empty.
  std::string str() const;
  size_t hash() const;
  friend bool operator==(const Attrs &a, const Attrs &b) { return a.entries_ == b.entries_; }

private:
  std::vector<Entry> entries_; // sorted by name
};

} // namespace tessera::ir
