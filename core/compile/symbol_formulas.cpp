//===- compile/symbol_formulas.cpp - Derived dims as formulas -------------===//
//
// fitDerivedSymbol (symbol_formulas.h): find the sources a definition reads,
// fit floor((a*x + b) / c) over one or a multilinear polynomial over
// several, then check the fit everywhere the header says.
//
//===----------------------------------------------------------------------===//
#include "compile/symbol_formulas.h"

#include "compile/symbolic_steps.h"
#include "ir/symbol.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>

namespace tessera::compile {

using namespace ir;

namespace {

constexpr int64_t kExhaustive = 4096; // values checked one by one above the lower bound
constexpr int64_t kMaxDivisor = 64;
constexpr int64_t kFarBeyond = int64_t(1) << 24; // doubling checks stop here
constexpr int kRandomPoints = 256;

int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0)))
    --q;
  return q;
}

struct Range {
  int64_t lo, hi; // inclusive; hi = kFarBeyond when unbounded
};

/// "H" for a named symbol (without its bounds), "?3fa0" for a derived one.
std::string nameOf(int64_t symbol) {
  const SymbolInfo &s = symbolInfo(symbol);
  return s.derived() ? dimStr(symbol) : s.name;
}

Range rangeOf(int64_t symbol) {
  const SymbolInfo &s = symbolInfo(symbol);
  return {s.lo, s.bounded() ? s.hi : kFarBeyond};
}

/// Deterministic points, so that a compile is reproducible.
struct Points {
  uint64_t state = 0x9e3779b97f4a7c15ULL;
  int64_t in(int64_t lo, int64_t hi) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return lo + int64_t((state >> 17) % uint64_t(hi - lo + 1));
  }
};

class Fitter {
public:
  Fitter(int64_t dim, std::vector<SymbolDefinition> defs)
      : dim_(dim), defs_(std::move(defs)), def_(defs_[0]) {}

  Expected<DerivedFormula> run() {
    out_.what = def_.what;
    for (int64_t s : def_.sources) { // the first probe, within the bounds
      const Range r = rangeOf(s);
      base_.push_back(std::clamp(symbolInfo(s).probes[0], r.lo, r.hi));
    }
    const std::optional<int64_t> atBase = def_.eval(base_);
    if (!atBase)
      return fail("its relation fails at the probe values");
    findSources(*atBase);
    if (kept_.empty())
      return fail("it changes with none of its symbols, though it differed at the probes");
    for (size_t j : kept_)
      out_.sources.push_back(def_.sources[j]);
    if (kept_.size() == 1) {
      TS_RETURN_IF_ERROR(fitOne());
    } else {
      TS_RETURN_IF_ERROR(fitSeveral());
    }
    TS_RETURN_IF_ERROR(check());
    TS_RETURN_IF_ERROR(checkCorners());
    // The greatest value: the formula is monotone in each source, so at a
    // corner of their ranges (none without an upper bound).
    out_.hi = -1;
    bool bounded = true;
    for (int64_t s : out_.sources)
      bounded = bounded && symbolInfo(s).bounded();
    const bool linear = out_.sources.size() > 3; // fitLinear
    if (bounded && linear)
      out_.hi = linearExtreme(true);
    for (size_t mask = 0; bounded && !linear && mask < (size_t(1) << out_.sources.size());
         ++mask) {
      std::vector<int64_t> corner;
      for (size_t i = 0; i < out_.sources.size(); ++i) {
        const Range r = rangeOf(out_.sources[i]);
        corner.push_back(mask & (size_t(1) << i) ? r.hi : std::max(r.lo, firstValid_));
      }
      out_.hi = std::max(out_.hi, formula(corner));
    }
    if (out_.hi >= 0)
      out_.hi = std::max(out_.hi, out_.lo);
    return out_;
  }

private:
  Error fail(std::string_view why) const {
    return Error::format("{} ({}): {}", def_.what, dimStr(dim_), why);
  }
  std::string at(const std::vector<int64_t> &values) const {
    std::string s;
    for (size_t j = 0; j < values.size(); ++j)
      s += fmt::format("{}{} = {}", j ? ", " : "", nameOf(def_.sources[j]), values[j]);
    return s;
  }

  /// The definition with the kept sources at `values`, the others at base.
  std::optional<int64_t> evalKept(const std::vector<int64_t> &values) const {
    std::vector<int64_t> v = base_;
    for (size_t i = 0; i < kept_.size(); ++i)
      v[kept_[i]] = values[i];
    return def_.eval(v);
  }

  int64_t formula(const std::vector<int64_t> &values) const {
    return evaluateFormula(out_, values);
  }

  /// The sources whose value changes the dim (a conv's height reads H, not
  /// N or W): each one moved alone by steps that cross the multiples of
  /// every stride up to 64.
  void findSources(int64_t atBase) {
    for (size_t j = 0; j < base_.size(); ++j) {
      const Range r = rangeOf(def_.sources[j]);
      std::vector<int64_t> tries; // near the probes, then near the lower bound (a clamp)
      for (int64_t delta : {1, 2, 3, 5, 8, 13, 21, 64, 65, 129})
        tries.push_back(base_[j] + delta <= r.hi ? base_[j] + delta : base_[j] - delta);
      for (int64_t x = r.lo; x < r.lo + 4; ++x)
        tries.push_back(x);
      for (int64_t x : tries) {
        std::vector<int64_t> v = base_;
        v[j] = x;
        if (v[j] < r.lo || v[j] > r.hi)
          continue;
        // A failure says where the relation holds, not what the dim is (a
        // conv's width below its kernel fails; its height does not read W).
        const std::optional<int64_t> got = def_.eval(v);
        if (got && *got != atBase) {
          kept_.push_back(j);
          break;
        }
      }
    }
  }

  /// floor((a*x + b) / c) through every (x, dim) of `seen` (x ascending,
  /// the first c + 1 consecutive), the least c that fits; into out_.
  bool fitFloor(const std::vector<std::pair<int64_t, int64_t>> &seen) {
    for (int64_t c = 1; c <= kMaxDivisor && size_t(c) < seen.size(); ++c) {
      if (seen[size_t(c)].first != seen[0].first + c)
        break;
      const int64_t a = seen[size_t(c)].second - seen[0].second;
      int64_t lowB = std::numeric_limits<int64_t>::min(), highB = std::numeric_limits<int64_t>::max();
      for (const auto &[x, v] : seen) {
        lowB = std::max(lowB, c * v - a * x);
        highB = std::min(highB, c * v - a * x + c - 1);
        if (lowB > highB)
          break;
      }
      if (lowB > highB)
        continue;
      out_.divisor = c;
      out_.numerator = codegen::SymbolicInt{lowB, {}};
      if (a != 0)
        out_.numerator.terms.push_back({a, {0}});
      return true;
    }
    return false;
  }

  /// floor((a*x + b) / c) over the one source x, checked at every value
  /// from its lower bound up to kExhaustive above it, then at doublings.
  Status fitOne() {
    const int64_t source = out_.sources[0];
    const Range r = rangeOf(source);
    const int64_t last = std::min(r.hi, r.lo + kExhaustive);
    std::vector<std::pair<int64_t, int64_t>> seen; // (x, dim) where the relation holds
    for (int64_t x = r.lo; x <= last; ++x) {
      const std::optional<int64_t> v = evalKept({x});
      if (v)
        seen.emplace_back(x, *v);
      else if (!seen.empty())
        return fail(fmt::format("it holds at {} = {} but fails at {} = {}, which no formula "
                                "of its form can tell",
                                nameOf(source), seen.front().first, nameOf(source), x));
    }
    if (seen.empty())
      return fail(fmt::format("its relation fails at every {} from {} to {}", nameOf(source),
                              r.lo, last));
    const int64_t first = seen.front().first;
    firstValid_ = first;
    for (int64_t x = std::max<int64_t>(last, 1) * 2; x <= r.hi && x <= kFarBeyond; x *= 2) {
      const std::optional<int64_t> v = evalKept({x});
      if (!v)
        break; // past the element limit of a tensor type
      seen.emplace_back(x, *v);
    }
    // Unclamped, else clamped to its least and greatest values and fitted
    // between them (min(R, 300) is R there).
    bool fitted = fitFloor(seen);
    if (!fitted) {
      int64_t least = seen[0].second, most = seen[0].second;
      for (const auto &[x, v] : seen) {
        least = std::min(least, v);
        most = std::max(most, v);
      }
      std::vector<std::pair<int64_t, int64_t>> inside;
      for (const auto &p : seen)
        if (p.second > least && p.second < most)
          inside.push_back(p);
      fitted = inside.size() >= 2 && fitFloor(inside);
      if (fitted) {
        out_.atLeast = least;
        out_.atMost = most;
        for (const auto &[x, v] : seen)
          fitted = fitted && formula({x}) == v;
        // A clamp the formula never reaches is left out (min(H, 10), not
        // min(max(H, 1), 10), for H >= 1).
        for (int64_t *limit : {&out_.atLeast, &out_.atMost}) {
          const int64_t kept = *limit;
          *limit = limit == &out_.atLeast ? std::numeric_limits<int64_t>::min()
                                          : std::numeric_limits<int64_t>::max();
          for (const auto &[x, v] : seen)
            if (formula({x}) != v) {
              *limit = kept;
              break;
            }
        }
      }
    }
    if (fitted) {
      const int64_t a = out_.numerator.terms.empty() ? 0 : out_.numerator.terms[0].coefficient;
      const int64_t lowB = out_.numerator.constant, c = out_.divisor;
      out_.lo = std::numeric_limits<int64_t>::max();
      for (const auto &[x, v] : seen)
        out_.lo = std::min(out_.lo, v);
      // Below the first value where the relation holds, the formula must
      // fall under the least value, so the run-time bounds check refuses it.
      for (int64_t x = r.lo; x < first; ++x)
        if (formula({x}) >= out_.lo)
          return fail(fmt::format("its relation fails at {} = {}, where floor(({}*{} + {}) / "
                                  "{}) gives {}, not below its least value {}",
                                  nameOf(source), x, a, nameOf(source), lowB, c, formula({x}),
                                  out_.lo));
      return okStatus();
    }
    out_.atLeast = std::numeric_limits<int64_t>::min();
    out_.atMost = std::numeric_limits<int64_t>::max();
    return fail(fmt::format("it is not floor((a*{} + b) / c), clamped or not, for any c up to {} "
                            "(at {} = {} it is {}), so an artifact cannot compute it",
                            nameOf(source), kMaxDivisor, nameOf(source), seen.back().first,
                            seen.back().second));
  }

  /// A multilinear polynomial over several sources (a concat's sum, a
  /// reshape's product), fitted at the corners of a box around the probes.
  Status fitSeveral() {
    const size_t k = kept_.size();
    if (k > 3)
      return fitLinear();
    std::vector<int64_t> a(k), b(k);
    for (size_t i = 0; i < k; ++i) {
      const Range r = rangeOf(out_.sources[i]);
      a[i] = base_[kept_[i]];
      b[i] = a[i] + 5 <= r.hi ? a[i] + 5 : a[i] - 5;
    }
    std::vector<int64_t> corners;
    for (size_t mask = 0; mask < (size_t(1) << k); ++mask) {
      std::vector<int64_t> v(k);
      for (size_t i = 0; i < k; ++i)
        v[i] = mask & (size_t(1) << i) ? b[i] : a[i];
      const std::optional<int64_t> got = evalKept(v);
      if (!got)
        return fail(fmt::format("its relation fails near the probe values"));
      corners.push_back(*got);
    }
    const auto coefficients = fitMultilinear(corners, a, b);
    if (!coefficients)
      return fail("it is not a polynomial with integer coefficients in its symbols");
    out_.numerator = toSymbolicInt(*coefficients);
    out_.divisor = 1;
    out_.lo = *std::min_element(corners.begin(), corners.end());
    return okStatus();
  }

  /// A sum c0 + c1*s1 + ... over more sources than a multilinear fit takes
  /// (2^k corners): a concat of many run-time counts. Each coefficient from
  /// one step of its source; check() tests the whole.
  Status fitLinear() {
    std::vector<int64_t> v(kept_.size());
    for (size_t i = 0; i < kept_.size(); ++i)
      v[i] = base_[kept_[i]];
    const std::optional<int64_t> at0 = evalKept(v);
    if (!at0)
      return fail("its relation fails at the probe values");
    out_.numerator = codegen::SymbolicInt{*at0, {}};
    out_.divisor = 1;
    for (size_t i = 0; i < kept_.size(); ++i) {
      const Range r = rangeOf(out_.sources[i]);
      const int64_t step = v[i] + 1 <= r.hi ? 1 : -1;
      v[i] += step;
      const std::optional<int64_t> got = evalKept(v);
      v[i] -= step;
      if (!got)
        return fail(fmt::format("its relation fails near the probe values"));
      const int64_t c = (*got - *at0) * step;
      out_.numerator.constant -= c * v[i];
      if (c != 0)
        out_.numerator.terms.push_back({c, {uint32_t(i)}});
    }
    out_.lo = linearExtreme(false); // refined by check()
    return okStatus();
  }

  /// The least (or greatest) value of a linear formula over its sources'
  /// ranges: each term at the end of its source's range that makes it so.
  int64_t linearExtreme(bool greatest) const {
    int64_t v = out_.numerator.constant;
    for (const codegen::SymbolicInt::Term &t : out_.numerator.terms) {
      const Range r = rangeOf(out_.sources[t.symbols[0]]);
      v += greatest ? std::max(t.coefficient * r.lo, t.coefficient * r.hi)
                    : std::min(t.coefficient * r.lo, t.coefficient * r.hi);
    }
    return v;
  }

  /// The definition at the corners of the sources' ranges (every corner up
  /// to 12 sources, else all at their lower and all at their upper bounds;
  /// unbounded ones at their lower): the formula must agree where it holds,
  /// and the least value is the least there too (a sum of run-time counts
  /// that may all be 0).
  Status checkCorners() {
    const size_t k = kept_.size();
    const bool every = k <= 12;
    for (size_t mask = 0; mask < (every ? size_t(1) << k : 2); ++mask) {
      std::vector<int64_t> v(k);
      for (size_t i = 0; i < k; ++i) {
        const Range r = rangeOf(out_.sources[i]);
        const bool high = every ? (mask & (size_t(1) << i)) != 0 : mask == 1;
        v[i] = high && r.hi != kFarBeyond ? r.hi : r.lo;
      }
      const std::optional<int64_t> got = evalKept(v);
      if (!got)
        continue;
      std::vector<int64_t> full = base_;
      for (size_t i = 0; i < k; ++i)
        full[kept_[i]] = v[i];
      if (formula(v) != *got)
        return fail(fmt::format("at {} it is {}, the fitted formula gives {}", at(full), *got,
                                formula(v)));
      out_.lo = std::min(out_.lo, *got);
    }
    return okStatus();
  }

  /// Every kept definition against the formula at pseudo-random points
  /// over all sources (a source the fit dropped must not matter either).
  Status check() {
    Points points;
    for (int p = 0; p < kRandomPoints; ++p) {
      std::vector<int64_t> v(base_.size());
      for (size_t j = 0; j < v.size(); ++j) {
        const Range r = rangeOf(def_.sources[j]);
        v[j] = points.in(r.lo, std::min(r.hi, r.lo + 2 * kExhaustive));
      }
      std::vector<int64_t> kv;
      for (size_t j : kept_)
        kv.push_back(v[j]);
      const int64_t want = formula(kv);
      for (const SymbolDefinition &d : defs_) {
        // Another definition over the same symbols, possibly in another order.
        if (d.sources.size() != def_.sources.size() ||
            !std::is_permutation(d.sources.begin(), d.sources.end(), def_.sources.begin()))
          continue;
        std::vector<int64_t> dv;
        for (int64_t s : d.sources)
          dv.push_back(v[size_t(std::find(def_.sources.begin(), def_.sources.end(), s) -
                                def_.sources.begin())]);
        const std::optional<int64_t> got = d.eval(dv);
        if (!got && want < out_.lo)
          continue; // refused at run time by the bounds check
        if (!got && evalKept(kv) == want)
          continue; // a dropped source made another dim fail (a conv's width
                    // below its kernel): that dim's own check refuses it
        if (!got || *got != want)
          return fail(fmt::format("{}at {} it is {}, the fitted formula gives {}",
                                  &d == &defs_[0] ? "" : fmt::format("{}: ", d.what), at(v),
                                  got ? std::to_string(*got) : "an error", want));
        if (*got < out_.lo)
          out_.lo = *got;
      }
    }
    return okStatus();
  }

  int64_t dim_;
  std::vector<SymbolDefinition> defs_;
  const SymbolDefinition &def_;
  std::vector<int64_t> base_;
  std::vector<size_t> kept_;
  int64_t firstValid_ = 0; // one source: the least value where the relation holds
  DerivedFormula out_;
};

} // namespace

int64_t evaluateFormula(const DerivedFormula &f, const std::vector<int64_t> &values) {
  int64_t sum = f.numerator.constant;
  for (const codegen::SymbolicInt::Term &t : f.numerator.terms) {
    int64_t term = t.coefficient;
    for (uint32_t j : t.symbols)
      term *= values[j];
    sum += term;
  }
  return std::clamp(floorDiv(sum, f.divisor), f.atLeast, f.atMost);
}

Expected<DerivedFormula> fitDerivedSymbol(int64_t dim) {
  std::vector<SymbolDefinition> defs = symbolDefinitions(dim);
  if (defs.empty())
    return Error::format("{} is a dim computed from symbols whose formula is not known here (a "
                         "derived dim read from text is only a placeholder): compile the model "
                         "it came from, or bind the symbols",
                         dimStr(dim));
  return Fitter(dim, std::move(defs)).run();
}

uint32_t PlanSymbolTable::index(int64_t dim) {
  auto [it, fresh] = index_.emplace(dim, uint32_t(symbols_.size()));
  if (fresh) {
    const SymbolInfo &info = symbolInfo(dim);
    runtime::PlanSymbol s;
    s.name = info.name;
    s.lo = info.lo;
    s.hi = info.hi;
    symbols_.push_back(std::move(s));
  }
  return it->second;
}

Status PlanSymbolTable::addDerived(int64_t dim, const std::string &definedBy) {
  if (index_.count(dim))
    return okStatus();
  auto fitted = fitDerivedSymbol(dim);
  if (!fitted.ok())
    return std::move(fitted).error().addContext(definedBy);
  for (int64_t s : fitted->sources)
    if (symbolInfo(s).derived())
      TS_RETURN_IF_ERROR(addDerived(s, fmt::format("a shape value ({})", fitted->what)));
  runtime::PlanSymbol s;
  s.name = dimStr(dim);
  s.lo = fitted->lo;
  s.hi = fitted->hi;
  s.divisor = fitted->divisor;
  s.atLeast = fitted->atLeast;
  s.atMost = fitted->atMost;
  s.constant = fitted->numerator.constant;
  for (const codegen::SymbolicInt::Term &t : fitted->numerator.terms) {
    runtime::PlanSymbol::Term term{t.coefficient, {}};
    for (uint32_t j : t.symbols)
      term.symbols.push_back(index(fitted->sources[j]));
    s.terms.push_back(std::move(term));
  }
  s.definedBy = definedBy;
  index_.emplace(dim, uint32_t(symbols_.size()));
  symbols_.push_back(std::move(s));
  return okStatus();
}

uint32_t PlanSymbolTable::addFormula(std::string name, const codegen::SymbolicInt &formula,
                                     std::string definedBy) {
  runtime::PlanSymbol s;
  s.name = std::move(name);
  s.lo = 0;
  s.divisor = 1;
  s.constant = formula.constant;
  for (const codegen::SymbolicInt::Term &t : formula.terms)
    s.terms.push_back({t.coefficient, t.symbols});
  s.definedBy = std::move(definedBy);
  symbols_.push_back(std::move(s));
  return uint32_t(symbols_.size() - 1);
}

Status PlanSymbolTable::addDerivedAttrs(const ir::Attrs &attrs, const std::string &what) {
  for (int64_t d : attrs.symbols())
    if (symbolInfo(d).derived())
      TS_RETURN_IF_ERROR(addDerived(d, "an attribute of " + what));
  return okStatus();
}

Status PlanSymbolTable::addDerivedDims(const Type &type, const std::string &what) {
  for (const Type &f : type.isTuple() ? type.fields() : std::vector<Type>{})
    TS_RETURN_IF_ERROR(addDerivedDims(f, what));
  if (!type.isTensor())
    return okStatus();
  for (size_t i = 0; i < type.rank(); ++i)
    if (const int64_t d = type.shape()[i]; isSymbol(d) && symbolInfo(d).derived())
      TS_RETURN_IF_ERROR(addDerived(d, fmt::format("dim {} of {}", i, what)));
  return okStatus();
}

} // namespace tessera::compile
