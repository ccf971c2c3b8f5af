//===- runtime/plan_symbols.cpp - Values of derived symbols ---------------===//
//
// deriveSymbolValues (plan.h): each derived symbol's formula over the
// values before it, and the check that the result lies within its bounds,
// which is where an input too small for the model is refused.
//
//===----------------------------------------------------------------------===//
#include "runtime/plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <limits>

namespace tessera::runtime {

namespace {

int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0)))
    --q;
  return q;
}

} // namespace

std::string symbolFormula(const std::vector<PlanSymbol> &symbols, size_t k) {
  const PlanSymbol &s = symbols[k];
  std::string sum;
  for (const PlanSymbol::Term &t : s.terms) {
    std::string product = t.coefficient == 1 ? "" : t.coefficient == -1 ? "-" : fmt::format("{}*", t.coefficient);
    for (size_t i = 0; i < t.symbols.size(); ++i)
      product += (i ? "*" : "") +
                 (t.symbols[i] < symbols.size() ? symbols[t.symbols[i]].name : std::string("?"));
    sum += sum.empty() ? product
                       : (product.starts_with('-') ? " - " + product.substr(1) : " + " + product);
  }
  if (s.constant != 0 || sum.empty())
    sum += sum.empty() ? std::to_string(s.constant)
                       : fmt::format(" {} {}", s.constant < 0 ? '-' : '+', std::abs(s.constant));
  std::string f = s.divisor > 1 ? fmt::format("floor(({}) / {})", sum, s.divisor) : sum;
  if (s.atLeast != std::numeric_limits<int64_t>::min())
    f = fmt::format("max({}, {})", f, s.atLeast);
  if (s.atMost != std::numeric_limits<int64_t>::max())
    f = fmt::format("min({}, {})", f, s.atMost);
  return f;
}

Expected<int64_t> deriveSymbolValue(const std::vector<PlanSymbol> &symbols,
                                    const std::vector<int64_t> &values, size_t k) {
  const PlanSymbol &s = symbols[k];
  // Sizes are far below 2^62, and the formulas' products of a few of
  // them with small coefficients; overflow is refused, not wrapped.
  int64_t sum = s.constant;
  bool overflow = false;
  for (const PlanSymbol::Term &t : s.terms) {
    int64_t term = t.coefficient;
    for (uint32_t j : t.symbols) {
      if (j >= k)
        return Error::format("symbol {} ('{}') reads symbol {}, not an earlier one", k, s.name, j);
      overflow = overflow || __builtin_mul_overflow(term, values[j], &term);
    }
    overflow = overflow || __builtin_add_overflow(sum, term, &sum);
  }
  const int64_t v = overflow ? std::numeric_limits<int64_t>::max()
                             : std::clamp(floorDiv(sum, s.divisor), s.atLeast, s.atMost);
  if (v < s.lo || (s.hi >= 0 && v > s.hi)) {
    std::string from; // the values it read (each run computes; only errors name them)
    for (const PlanSymbol::Term &t : s.terms)
      for (uint32_t j : t.symbols)
        if (from.find(symbols[j].name + " =") == std::string::npos)
          from += fmt::format("{}{} = {}", from.empty() ? "" : ", ", symbols[j].name, values[j]);
    return Error::format("{} ({}): with {} it would be {}, outside {}..{}: the inputs are too "
                         "{} for this model",
                         s.definedBy.empty() ? "a derived dim" : s.definedBy, s.name, from,
                         overflow ? std::string("too large to compute") : std::to_string(v), s.lo,
                         s.hi >= 0 ? std::to_string(s.hi) : std::string(),
                         v < s.lo ? "small" : "large");
  }
  return v;
}

Status deriveSymbolValues(const std::vector<PlanSymbol> &symbols, std::vector<int64_t> &values) {
  values.resize(symbols.size(), 0);
  for (size_t k = 0; k < symbols.size(); ++k) {
    if (!symbols[k].derived())
      continue;
    TS_ASSIGN_OR_RETURN(values[k], deriveSymbolValue(symbols, values, k));
  }
  return okStatus();
}

} // namespace tessera::runtime
