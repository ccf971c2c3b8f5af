//===- tessera/sdk/values.hpp - Types, attributes, op descriptions -*- C++ -*-===//
//
// The plugin SDK's C++ values over the C ABI's views: dtypes, tensor types,
// symbols, attributes, op descriptions, graph views and the writer of
// results. Included by plugin.hpp.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tessera/sdk/shape_math.hpp"
#include "tessera/sdk/status.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <span>
#include <variant>
#include <vector>

namespace tessera::sdk {

//===----------------------------------------------------------------------===//
// Types, attributes and op descriptions as C++ values
//===----------------------------------------------------------------------===//

/// Tessera's dtype names ("f32", "bf16", "bool", ...) <-> DLDataType.
inline std::optional<DLDataType> dtypeFromName(std::string_view name) {
  struct Entry {
    const char *name;
    uint8_t code, bits;
  };
  static constexpr Entry table[] = {
      {"f16", kDLFloat, 16}, {"f32", kDLFloat, 32}, {"f64", kDLFloat, 64}, {"bf16", kDLBfloat, 16},
      {"i8", kDLInt, 8},     {"i16", kDLInt, 16},   {"i32", kDLInt, 32},   {"i64", kDLInt, 64},
      {"u8", kDLUInt, 8},    {"u16", kDLUInt, 16},  {"u32", kDLUInt, 32},  {"u64", kDLUInt, 64},
      {"bool", TESSERA_DL_BOOL, 8},
  };
  for (const Entry &e : table)
    if (name == e.name)
      return DLDataType{e.code, e.bits, 1};
  return std::nullopt;
}

inline std::string dtypeName(DLDataType t) {
  if (t.lanes == 1) {
    switch (t.code) {
    case kDLFloat:
      if (t.bits == 16 || t.bits == 32 || t.bits == 64)
        return "f" + std::to_string(t.bits);
      break;
    case kDLBfloat:
      if (t.bits == 16)
        return "bf16";
      break;
    case kDLInt:
    case kDLUInt:
      if (t.bits == 8 || t.bits == 16 || t.bits == 32 || t.bits == 64)
        return (t.code == kDLInt ? "i" : "u") + std::to_string(t.bits);
      break;
    case 6:
      if (t.bits == 8)
        return "bool";
      break;
    default: break;
    }
  }
  return "dtype(" + std::to_string(t.code) + "," + std::to_string(t.bits) + "," +
         std::to_string(t.lanes) + ")";
}

inline size_t dtypeBytes(DLDataType t) { return (size_t(t.bits) * t.lanes + 7) / 8; }

// kMaxElements and shapeFits: tessera/sdk/shape_math.hpp.

/// A tensor type: dtype and static shape.
struct TensorType {
  DLDataType dtype{kDLFloat, 32, 1};
  std::vector<int64_t> shape;
  /// ABI 1.4: empty when every dim is a constant; else one entry per dim,
  /// -1 for a constant one and the symbol's index (into OpDesc::symbols or
  /// Graph::symbols) for a symbolic one, whose shape entry is -1.
  std::vector<int32_t> symbols;

  /// Whether every dim is a constant.
  bool isStatic() const {
    for (int32_t k : symbols)
      if (k >= 0)
        return false;
    return true;
  }
  /// Dim i's symbol, or -1 when it is a constant.
  int32_t symbolOf(size_t i) const { return i < symbols.size() ? symbols[i] : -1; }
  /// Of a static type only.
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
  size_t bytes() const { return size_t(numel()) * dtypeBytes(dtype); }
  /// "f32[1, 3, 224, 224]"; a symbolic dim is "s" + its index ("f32[s0, 3]").
  std::string str() const {
    std::string s = dtypeName(dtype) + "[";
    for (size_t i = 0; i < shape.size(); ++i)
      s += (i ? ", " : "") +
           (symbolOf(i) >= 0 ? "s" + std::to_string(symbolOf(i)) : std::to_string(shape[i]));
    return s + "]";
  }
  friend bool operator==(const TensorType &a, const TensorType &b) {
    return a.dtype == b.dtype && a.shape == b.shape && a.isStatic() == b.isStatic() &&
           (a.isStatic() || a.symbols == b.symbols);
  }
};

/// ABI 1.4: a symbolic dim (tessera_symbol_t).
struct Symbol {
  std::string name;
  int64_t lo = 0;
  int64_t hi = -1; // -1: no upper bound
  bool runtime = false;
  int64_t example = 1; // consistent with the other symbols' examples
  friend bool operator==(const Symbol &, const Symbol &) = default;
};

/// An attribute value, one alternative per tessera_attr_kind_t in order.
using AttrValue = std::variant<int64_t, double, std::string, bool, DLDataType,
                               std::vector<int64_t>, std::vector<double>>;

/// An op's attributes by name (sorted, as the core keeps them).
class Attrs {
public:
  void set(std::string name, AttrValue v) {
    auto it = std::lower_bound(entries_.begin(), entries_.end(), name,
                               [](const auto &e, const std::string &n) { return e.first < n; });
    if (it != entries_.end() && it->first == name)
      it->second = std::move(v);
    else
      entries_.emplace(it, std::move(name), std::move(v));
  }
  const AttrValue *find(std::string_view name) const {
    for (const auto &[k, v] : entries_)
      if (k == name)
        return &v;
    return nullptr;
  }
  bool has(std::string_view name) const { return find(name) != nullptr; }

  /// Typed getters; a missing attribute or another kind throws Error.
  int64_t getInt(std::string_view name) const { return get<int64_t>(name, "int"); }
  double getFloat(std::string_view name) const {
    if (const auto *v = find(name); v && std::holds_alternative<int64_t>(*v))
      return double(std::get<int64_t>(*v));
    return get<double>(name, "float");
  }
  const std::string &getString(std::string_view name) const {
    return get<std::string>(name, "string");
  }
  bool getBool(std::string_view name) const { return get<bool>(name, "bool"); }
  DLDataType getDType(std::string_view name) const { return get<DLDataType>(name, "dtype"); }
  const std::vector<int64_t> &getInts(std::string_view name) const {
    return get<std::vector<int64_t>>(name, "ints");
  }
  const std::vector<double> &getFloats(std::string_view name) const {
    return get<std::vector<double>>(name, "floats");
  }

  const std::vector<std::pair<std::string, AttrValue>> &entries() const { return entries_; }
  auto begin() const { return entries_.begin(); }
  auto end() const { return entries_.end(); }
  size_t size() const { return entries_.size(); }

  /// ABI 1.4: the symbols of an int or ints attribute holding symbolic dims
  /// (tessera_attr_t::symbols: per value, -1 or a symbol index; such a
  /// value is -1 until resolved). Empty for every other attribute.
  void setSymbols(const std::string &name, std::vector<int32_t> symbols) {
    for (auto &[k, v] : symbols_)
      if (k == name) {
        v = std::move(symbols);
        return;
      }
    symbols_.emplace_back(name, std::move(symbols));
  }
  const std::vector<std::pair<std::string, std::vector<int32_t>>> &symbols() const {
    return symbols_;
  }
  /// Each symbolic value replaced by its symbol's value in `values`.
  template <typename Values> void resolveSymbols(const Values &values) {
    for (const auto &[name, syms] : symbols_)
      for (auto &[k, v] : entries_) {
        if (k != name)
          continue;
        if (auto *i = std::get_if<int64_t>(&v); i && !syms.empty() && syms[0] >= 0)
          *i = values[size_t(syms[0])];
        if (auto *is = std::get_if<std::vector<int64_t>>(&v))
          for (size_t j = 0; j < is->size() && j < syms.size(); ++j)
            if (syms[j] >= 0)
              (*is)[j] = values[size_t(syms[j])];
      }
    symbols_.clear();
  }

private:
  template <typename T> const T &get(std::string_view name, const char *kind) const {
    const AttrValue *v = find(name);
    if (!v)
      throw Error("missing attribute '" + std::string(name) + "'");
    if (!std::holds_alternative<T>(*v))
      throw Error("attribute '" + std::string(name) + "' is not of kind " + kind);
    return std::get<T>(*v);
  }
  std::vector<std::pair<std::string, AttrValue>> entries_;
  std::vector<std::pair<std::string, std::vector<int32_t>>> symbols_;
};

/// tessera_op_desc_t as C++ values (what Checker::check receives).
struct OpDesc {
  std::string op;
  std::string name;
  Attrs attrs;
  std::vector<TensorType> inputs;
  std::vector<TensorType> outputs;
  /// ABI 1.4: the symbols the types refer to (empty when all are static).
  std::vector<Symbol> symbols;
};

/// A TensorType from a dtype and a C shape array (ndim entries, may be null
/// when ndim is 0).
inline TensorType makeTensorType(DLDataType dtype, int32_t ndim, const int64_t *shape) {
  TensorType out;
  out.dtype = dtype;
  if (ndim > 0 && shape)
    out.shape.assign(shape, shape + ndim);
  return out;
}

inline TensorType toTensorType(const tessera_tensor_type_t &t) {
  TensorType out = makeTensorType(t.dtype, t.ndim, t.shape);
  if (t.struct_size >= offsetof(tessera_tensor_type_t, symbols) + sizeof(t.symbols) &&
      t.symbols && t.ndim > 0)
    out.symbols.assign(t.symbols, t.symbols + t.ndim);
  return out;
}

inline Symbol toSymbol(const tessera_symbol_t &s) {
  return Symbol{s.name ? s.name : "", s.lo, s.hi, s.runtime, s.example};
}

inline OpDesc toOpDesc(const tessera_op_desc_t &d) {
  OpDesc out;
  out.op = d.op ? d.op : "";
  out.name = d.name ? d.name : "";
  for (size_t i = 0; i < d.num_attrs; ++i) {
    const tessera_attr_t &a = *d.attrs[i];
    AttrValue v;
    switch (a.kind) {
    case TESSERA_ATTR_INT: v = a.i; break;
    case TESSERA_ATTR_FLOAT: v = a.f; break;
    case TESSERA_ATTR_STRING: v = std::string(a.s ? a.s : ""); break;
    case TESSERA_ATTR_BOOL: v = a.b; break;
    case TESSERA_ATTR_DTYPE: v = a.dtype; break;
    case TESSERA_ATTR_INTS: v = std::vector<int64_t>(a.ints, a.ints + a.count); break;
    case TESSERA_ATTR_FLOATS: v = std::vector<double>(a.floats, a.floats + a.count); break;
    default: continue; // a kind from a newer minor version: not ours to read
    }
    out.attrs.set(a.name, std::move(v));
    if (a.struct_size >= offsetof(tessera_attr_t, symbols) + sizeof(a.symbols) && a.symbols &&
        (a.kind == TESSERA_ATTR_INT || a.kind == TESSERA_ATTR_INTS))
      out.attrs.setSymbols(a.name, std::vector<int32_t>(a.symbols, a.symbols + (a.kind == TESSERA_ATTR_INT ? 1 : a.count)));
  }
  for (size_t i = 0; i < d.num_inputs; ++i)
    out.inputs.push_back(toTensorType(*d.inputs[i]));
  for (size_t i = 0; i < d.num_outputs; ++i)
    out.outputs.push_back(toTensorType(*d.outputs[i]));
  if (d.struct_size >= offsetof(tessera_op_desc_t, num_symbols) + sizeof(d.num_symbols))
    for (size_t i = 0; i < d.num_symbols; ++i)
      out.symbols.push_back(toSymbol(*d.symbols[i]));
  return out;
}

/// `op` with every symbolic dim at its symbol's example (Symbol::example):
/// a consistent set of concrete types, for a checker that must try one.
inline OpDesc exampleOp(const OpDesc &op) {
  OpDesc out = op;
  auto resolve = [&](TensorType &t) {
    for (size_t i = 0; i < t.shape.size(); ++i)
      if (int32_t k = t.symbolOf(i); k >= 0 && size_t(k) < op.symbols.size())
        t.shape[i] = op.symbols[size_t(k)].example;
    t.symbols.clear();
  };
  for (TensorType &t : out.inputs)
    resolve(t);
  for (TensorType &t : out.outputs)
    resolve(t);
  std::vector<int64_t> examples;
  for (const Symbol &s : op.symbols)
    examples.push_back(s.example);
  out.attrs.resolveSymbols(examples);
  out.symbols.clear();
  return out;
}

/// The graph handed to codegen: the JSON text and the constants (borrowed
/// views, valid only during the call).
struct GraphView {
  std::string_view symbol;
  std::string_view json;
  std::vector<std::string_view> constantNames;
  std::vector<const DLTensor *> constants;
  /// The CPU native code is for ("x86-64-v3", "znver4", "native"); empty
  /// when the core gave none (outside an artifact, or a core before 1.2).
  std::string_view targetCpu;
};

inline GraphView toGraphView(const tessera_graph_t &g) {
  GraphView v;
  v.symbol = g.symbol ? g.symbol : "";
  v.json = std::string_view(g.json ? g.json : "", g.json ? g.json_size : 0);
  for (size_t i = 0; i < g.num_constants; ++i) {
    v.constantNames.emplace_back(g.constant_names && g.constant_names[i] ? g.constant_names[i]
                                                                         : "");
    v.constants.push_back(g.constants[i]);
  }
  if (g.struct_size >= offsetof(tessera_graph_t, target_cpu) + sizeof(g.target_cpu) &&
      g.target_cpu)
    v.targetCpu = g.target_cpu;
  return v;
}

/// A byte sink as a C++ callable.
class Writer {
public:
  Writer(tessera_write_fn write, void *sink) : write_(write), sink_(sink) {}
  void operator()(const void *data, size_t size) const {
    if (size && !write_(sink_, data, size))
      throw Error("the core's byte sink failed", TESSERA_STATUS_DATA_LOSS);
  }
  void operator()(std::string_view s) const { (*this)(s.data(), s.size()); }

private:
  tessera_write_fn write_;
  void *sink_;
};

} // namespace tessera::sdk
