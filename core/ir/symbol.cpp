//===- ir/symbol.cpp - The process-wide table of symbols ------------------===//
#include "ir/symbol.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <tuple>

namespace tessera::ir {

namespace {

constexpr std::array<int64_t, kProbes> kOffsets{0, 1, 2, 3, 7, 15, 31, 63};
constexpr int64_t kBases = 36; // 256 + 64 * 35 + 63 = 2559

/// Entries never move (a deque) and are never freed: SymbolInfo references
/// stay valid for the process, as types do.
class SymbolTable {
public:
  static SymbolTable &get() {
    static SymbolTable *table = new SymbolTable;
    return *table;
  }

  int64_t named(const std::string &name, int64_t lo, int64_t hi) {
    std::lock_guard<std::mutex> lock(mu_);
    auto key = std::make_tuple(name, lo, hi);
    if (auto it = named_.find(key); it != named_.end())
      return it->second;
    auto [base, fresh] = bases_.emplace(name, 0);
    if (fresh)
      base->second = 256 + 64 * (int64_t(bases_.size() - 1) % kBases);
    SymbolInfo info{name, lo, hi, {}, false, {}, {}};
    for (size_t j = 0; j < kProbes; ++j)
      info.probes[j] = base->second + kOffsets[j];
    const int64_t dim = named_[key] = add(std::move(info));
    entries_.back().named = {dim};
    return dim;
  }

  int64_t derived(const std::array<int64_t, kProbes> &probes, int64_t lo, int64_t hi,
                  std::vector<int64_t> roots, std::vector<int64_t> named) {
    std::lock_guard<std::mutex> lock(mu_);
    auto key = std::make_tuple(probes, lo, hi, roots, named);
    if (auto it = derived_.find(key); it != derived_.end())
      return it->second;
    return derived_[key] =
               add(SymbolInfo{"", lo, hi, probes, false, std::move(roots), std::move(named)});
  }

  /// Run-time symbols take bases above the named ones' (each its own, so
  /// that sums of several differ at the probes).
  int64_t runtime(std::string name, int64_t hi) {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string stem = name;
    for (int n = 2; taken_.count(name) || bases_.count(name); ++n)
      name = fmt::format("{}_{}", stem, n);
    taken_.insert(name);
    const int64_t base = 256 + 64 * (kBases + int64_t(taken_.size() - 1) % kRuntimeBases);
    SymbolInfo info{name, 0, hi, {}, true, {}, {}};
    for (size_t j = 0; j < kProbes; ++j)
      info.probes[j] = base + kOffsets[j];
    const int64_t dim = add(std::move(info));
    entries_.back().roots = {dim};
    return dim;
  }

  void define(int64_t dim, SymbolDefinition definition) {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<SymbolDefinition> &list = definitions_[dim];
    for (const SymbolDefinition &d : list)
      if (d.key == definition.key)
        return;
    if (list.size() < kMaxDefinitions)
      list.push_back(std::move(definition));
  }

  std::vector<SymbolDefinition> definitions(int64_t dim) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = definitions_.find(dim);
    return it == definitions_.end() ? std::vector<SymbolDefinition>{} : it->second;
  }

  const SymbolInfo *find(int64_t dim) {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t k = kFirstSymbol - dim;
    return isSymbol(dim) && k < int64_t(entries_.size()) ? &entries_[size_t(k)] : nullptr;
  }

private:
  int64_t add(SymbolInfo info) {
    entries_.push_back(std::move(info));
    return kFirstSymbol - int64_t(entries_.size() - 1);
  }

  std::mutex mu_;
  std::deque<SymbolInfo> entries_;
  std::map<std::tuple<std::string, int64_t, int64_t>, int64_t> named_;
  std::map<std::tuple<std::array<int64_t, kProbes>, int64_t, int64_t, std::vector<int64_t>,
                      std::vector<int64_t>>,
           int64_t>
      derived_;
  std::map<std::string, int64_t> bases_;
  std::set<std::string> taken_; // run-time symbols' names
  static constexpr int64_t kRuntimeBases = 1024;
  static constexpr size_t kMaxDefinitions = 8;
  std::map<int64_t, std::vector<SymbolDefinition>> definitions_;
};

} // namespace

bool isSymbolName(std::string_view name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_'))
    return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_'))
      return false;
  return true;
}

bool isStatic(std::span<const int64_t> shape) {
  for (int64_t d : shape)
    if (isSymbol(d))
      return false;
  return true;
}

Expected<int64_t> namedSymbol(std::string_view name, int64_t lo, int64_t hi) {
  if (!isSymbolName(name))
    return Error::format("'{}' is not a symbol name (a letter or '_', then letters, digits "
                         "or '_')",
                         name);
  if (lo < 0 || (hi != kUnbounded && (hi < 0 || lo > hi)))
    return Error::format("symbol '{}': bounds {}..{} are not a range of sizes", name, lo,
                         hi == kUnbounded ? std::string() : std::to_string(hi));
  return SymbolTable::get().named(std::string(name), lo, hi);
}

Expected<int64_t> runtimeSymbol(std::string_view name, int64_t hi) {
  if (!isSymbolName(name))
    return Error::format("'{}' is not a symbol name (a letter or '_', then letters, digits "
                         "or '_')",
                         name);
  if (hi != kUnbounded && hi < 0)
    return Error::format("run-time symbol '{}': bound {} is not a size", name, hi);
  return SymbolTable::get().runtime(std::string(name), hi);
}

int64_t derivedSymbol(const std::array<int64_t, kProbes> &probes, int64_t lo, int64_t hi,
                      std::vector<int64_t> roots, std::vector<int64_t> named) {
  return SymbolTable::get().derived(probes, lo, hi, std::move(roots), std::move(named));
}

int64_t readBackDim(const std::array<int64_t, kProbes> &values, std::optional<int64_t> atLo,
                    std::optional<int64_t> atHi, std::span<const int64_t> inputs,
                    std::optional<int64_t> atNext) {
  bool constant = atLo.value_or(values[0]) == values[0] && atNext.value_or(values[0]) == values[0];
  for (int64_t v : values)
    constant = constant && v == values[0];
  if (constant)
    return values[0];
  for (int64_t d : inputs)
    if (symbolInfo(d).probes == values && (!atLo || *atLo == symbolInfo(d).lo))
      return d;
  std::vector<int64_t> roots, named;
  for (int64_t d : inputs) {
    const SymbolInfo &s = symbolInfo(d);
    roots.insert(roots.end(), s.roots.begin(), s.roots.end());
    named.insert(named.end(), s.named.begin(), s.named.end());
  }
  for (std::vector<int64_t> *list : {&roots, &named}) {
    std::sort(list->begin(), list->end());
    list->erase(std::unique(list->begin(), list->end()), list->end());
  }
  return derivedSymbol(values, std::max<int64_t>(atLo.value_or(0), 0), atHi.value_or(kUnbounded),
                       std::move(roots), std::move(named));
}

std::optional<int64_t> valueNearLo(int64_t dim) {
  const SymbolInfo &s = symbolInfo(dim);
  if (!s.derived())
    return s.bounded() ? std::min(s.lo + 1, s.hi) : s.lo + 1;
  // Definitions form a DAG over a few symbols each; chains are short.
  const std::vector<SymbolDefinition> defs = symbolDefinitions(dim);
  if (defs.empty())
    return std::nullopt;
  std::vector<int64_t> values;
  for (int64_t source : defs[0].sources) {
    const std::optional<int64_t> v = valueNearLo(source);
    if (!v)
      return std::nullopt;
    values.push_back(*v);
  }
  return defs[0].eval(values);
}

std::optional<std::vector<int64_t>> valuesNearLo(std::span<const int64_t> symbols) {
  std::vector<int64_t> out;
  for (int64_t d : symbols) {
    const std::optional<int64_t> v = valueNearLo(d);
    if (!v)
      return std::nullopt;
    out.push_back(*v);
  }
  return out;
}

void defineSymbol(int64_t dim, SymbolDefinition definition) {
  SymbolTable::get().define(dim, std::move(definition));
}

std::vector<SymbolDefinition> symbolDefinitions(int64_t dim) {
  return SymbolTable::get().definitions(dim);
}

int64_t derivedPlaceholder(std::string_view printed) {
  return SymbolTable::get().named(std::string(printed), 0, kUnbounded);
}

bool isKnownSymbol(int64_t dim) { return SymbolTable::get().find(dim) != nullptr; }

const SymbolInfo &symbolInfo(int64_t dim) {
  const SymbolInfo *info = SymbolTable::get().find(dim);
  if (!info) {
    // Only dims made by namedSymbol/derivedSymbol reach here (checkShape
    // refuses others); anything else is a bug in Tessera.
    static const SymbolInfo unknown{"<unknown symbol>", 0, kUnbounded, {}, false, {}, {}};
    return unknown;
  }
  return *info;
}

std::string dimStr(int64_t dim) {
  // Int lists that are not shapes (pads, a reshape's -1) print as numbers.
  if (!isKnownSymbol(dim))
    return std::to_string(dim);
  const SymbolInfo &s = symbolInfo(dim);
  if (!s.derived()) {
    // Bounds other than the default 1.. are part of the symbol: N(1, 8).
    if (s.name.starts_with('?') || (s.lo == 1 && !s.bounded()))
      return s.name;
    return s.bounded() ? fmt::format("{}({}, {})", s.name, s.lo, s.hi)
                       : fmt::format("{}({})", s.name, s.lo);
  }
  uint64_t h = 1469598103934665603ULL; // FNV-1a over the probes and bounds
  auto mixIn = [&](int64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= uint64_t(v >> (8 * i)) & 0xff;
      h *= 1099511628211ULL;
    }
  };
  for (int64_t p : s.probes)
    mixIn(p);
  mixIn(s.lo);
  mixIn(s.hi);
  for (int64_t r : s.roots) // min(R1, 300) and min(R2, 300) print apart
    for (char c : symbolInfo(r).name)
      mixIn(c);
  return fmt::format("?{:04x}", unsigned(h & 0xffff));
}

} // namespace tessera::ir
