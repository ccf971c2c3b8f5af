//===- compile/symbolic_steps.cpp - Host steps over symbolic shapes -------===//
//
// fitSymbolicKernel (symbolic_steps.h): the lowering at the corners of a
// box of symbol values, a multilinear fit per parameter, one check.
//
//===----------------------------------------------------------------------===//
#include "compile/symbolic_steps.h"

#include "ir/symbol.h"
#include "ir/visit.h"

#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <cstring>

namespace tessera::compile {

using namespace ir;

namespace {

constexpr size_t kMaxSymbols = 6; // 64 lowerings: a conv over N, H, W, OH, OW; above: linear

std::string describe(const CallNode &call) {
  return call.name().empty() ? call.calleeName()
                             : fmt::format("{} '{}'", call.calleeName(), call.name());
}

/// `types` with every symbol replaced by values[its position in `symbols`].
std::vector<Type> substitute(const std::vector<Type> &types, const std::vector<int64_t> &symbols,
                             const std::vector<int64_t> &values) {
  std::vector<Type> out;
  for (const Type &t : types) {
    Shape shape = t.shape();
    for (int64_t &d : shape)
      if (isSymbol(d))
        d = values[size_t(std::find(symbols.begin(), symbols.end(), d) - symbols.begin())];
    out.push_back(Type::tensor(t.dtype(), std::move(shape)));
  }
  return out;
}

/// Three distinct values of a symbol to fit at (two) and check at (one),
/// at least 2: at 0 and 1 lowerings drop dims (a broadcast walk collapses a
/// dim of 1), a form that the general one also covers. They need not lie
/// within the symbol's bounds (a batch of 1..2 has too few values): the
/// lowering runs at any sizes, and the fit holds at all of them.
/// The step's symbols take values 16 apart by position, so that two of them
/// never meet at a fit point: a slice whose output dim equals its input's
/// there would be lowered as a plain copy.
std::array<int64_t, 3> fitPoints(int64_t dim, size_t position) {
  const int64_t lo = std::max<int64_t>(symbolInfo(dim).lo, 2) + 16 * int64_t(position);
  return {lo + 3, lo + 7, lo + 12};
}

} // namespace

std::optional<std::vector<int64_t>> fitMultilinear(std::vector<int64_t> f,
                                                   const std::vector<int64_t> &a,
                                                   const std::vector<int64_t> &b) {
  const size_t k = a.size();
  for (size_t j = 0; j < k; ++j)
    for (size_t mask = 0; mask < f.size(); ++mask) {
      if (mask & (size_t(1) << j))
        continue;
      const size_t hi = mask | (size_t(1) << j);
      const int64_t rise = f[hi] - f[mask], run = b[j] - a[j];
      if (rise % run != 0)
        return std::nullopt;
      const int64_t slope = rise / run;
      f[mask] -= slope * a[j];
      f[hi] = slope;
    }
  return f;
}

int64_t evaluate(const std::vector<int64_t> &coefficients, const std::vector<int64_t> &values) {
  int64_t sum = 0;
  for (size_t mask = 0; mask < coefficients.size(); ++mask) {
    int64_t term = coefficients[mask];
    for (size_t j = 0; j < values.size(); ++j)
      if (mask & (size_t(1) << j))
        term *= values[j];
    sum += term;
  }
  return sum;
}

codegen::SymbolicInt toSymbolicInt(const std::vector<int64_t> &coefficients) {
  codegen::SymbolicInt out;
  out.constant = coefficients[0];
  for (size_t mask = 1; mask < coefficients.size(); ++mask) {
    if (coefficients[mask] == 0)
      continue;
    codegen::SymbolicInt::Term t;
    t.coefficient = coefficients[mask];
    for (uint32_t j = 0; j < 32; ++j)
      if (mask & (size_t(1) << j))
        t.symbols.push_back(j);
    out.terms.push_back(std::move(t));
  }
  return out;
}

Expected<Function> oneRow(const FunctionNode &fn, int64_t symbol) {
  std::unordered_map<const ExprNode *, Var> vars;
  std::vector<Var> params;
  for (const Var &p : fn.params()) {
    Shape shape = p->type().shape();
    if (!shape.empty() && shape[0] == symbol)
      shape[0] = 1;
    Var v = makeVar(p->name(), Type::tensor(p->type().dtype(), std::move(shape)));
    vars[p.get()] = v;
    params.push_back(std::move(v));
  }
  // Calls are rebuilt over the new parameters, their types inferred again.
  TS_ASSIGN_OR_RETURN(Expr body,
                      rewrite(fn.body(), [&](const Expr &original, const Expr &rebuilt)
                                             -> Expected<Expr> {
                        auto it = vars.find(original.get());
                        return it == vars.end() ? rebuilt : Expr(it->second);
                      }));
  if (!body->type().isStatic())
    return Error::format("a fused loop over rows of {} still has symbolic dims: {}",
                         dimStr(symbol), body->type().str());
  return makeFunction(std::move(params), std::move(body), fn.attrs(), fn.name(), fn.span());
}

std::vector<int64_t> rowElements(const std::vector<Type> &types, int64_t symbol) {
  std::vector<int64_t> out;
  for (const Type &t : types) {
    int64_t n = t.rank() > 0 && t.shape()[0] == symbol ? 1 : 0;
    for (size_t d = 1; n && d < t.rank(); ++d)
      n *= t.shape()[d];
    out.push_back(n);
  }
  return out;
}

bool hasDerivedDim(const Type &type, int64_t *dim) {
  if (type.isTuple()) {
    for (const Type &f : type.fields())
      if (hasDerivedDim(f, dim))
        return true;
    return false;
  }
  if (!type.isTensor())
    return false;
  for (int64_t d : type.shape())
    if (isSymbol(d) && symbolInfo(d).derived()) {
      if (dim)
        *dim = d;
      return true;
    }
  return false;
}

Expected<SymbolicKernel> fitSymbolicKernel(const CallNode &call) {
  const std::string what = describe(call);
  TS_ASSIGN_OR_RETURN(codegen::HostOpTypes types, codegen::hostOpTypes(call));
  const codegen::Lowering *lowering = codegen::hostLowerings().find(call.op()->name);
  if (!lowering)
    return Error::format("{}: no host kernel for op '{}'", what, call.op()->name);

  SymbolicKernel out;
  for (const auto *list : {&types.inputs, &types.outputs})
    for (const Type &t : *list)
      for (int64_t d : t.shape())
        if (isSymbol(d) && std::find(out.symbols.begin(), out.symbols.end(), d) ==
                               out.symbols.end()) {
          out.symbols.push_back(d);
        }
  for (int64_t d : call.attrs().symbols()) // a topk's k, an expand's shape
    if (std::find(out.symbols.begin(), out.symbols.end(), d) == out.symbols.end())
      out.symbols.push_back(d);
  const size_t k = out.symbols.size();
  std::vector<int64_t> a(k), b(k), check(k);
  for (size_t j = 0; j < k; ++j) {
    const std::array<int64_t, 3> points = fitPoints(out.symbols[j], j);
    a[j] = points[0];
    b[j] = points[1];
    check[j] = points[2];
  }

  auto lowerAt = [&](const std::vector<int64_t> &values) -> Expected<codegen::KernelCall> {
    codegen::HostOpTypes at;
    at.inputs = substitute(types.inputs, out.symbols, values);
    at.outputs = substitute(types.outputs, out.symbols, values);
    at.anySize = true;
    at.constants = types.constants; // weights a kernel lays out (KernelCall::packed)
    auto call2 = (*lowering)(call.attrs().withSymbols([&](int64_t d) {
      return values[size_t(std::find(out.symbols.begin(), out.symbols.end(), d) -
                           out.symbols.begin())];
    }),
                             at);
    if (!call2.ok())
      return std::move(call2).error().addContext(
          fmt::format("{} at {} = {}", what,
                      fmt::join([&] {
                        std::vector<std::string> n;
                        for (int64_t s : out.symbols)
                          n.push_back(dimStr(s));
                        return n;
                      }(),
                                ", "),
                      fmt::join(values, ", ")));
    return call2;
  };
  // Up to kMaxSymbols, every corner of the box (a multilinear fit); above,
  // one step of each symbol from the first corner (a linear fit: a concat
  // of many run-time counts), checked like the other.
  const bool linear = k > kMaxSymbols;
  std::vector<codegen::KernelCall> corners;
  for (size_t c = 0; c < (linear ? k + 1 : size_t(1) << k); ++c) {
    std::vector<int64_t> values(k);
    for (size_t j = 0; j < k; ++j)
      values[j] = (linear ? c == j + 1 : (c & (size_t(1) << j)) != 0) ? b[j] : a[j];
    TS_ASSIGN_OR_RETURN(codegen::KernelCall call, lowerAt(values));
    corners.push_back(std::move(call));
  }
  TS_ASSIGN_OR_RETURN(codegen::KernelCall atCheck, lowerAt(check));
  corners.push_back(std::move(atCheck));
  const codegen::KernelCall &first = corners[0];
  // Float parameters compared bit for bit (unused taps may hold NaN).
  auto sameFloats = [](const std::vector<double> &a, const std::vector<double> &b) {
    return a.size() == b.size() &&
           (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
  };
  for (const codegen::KernelCall &c : corners)
    if (c.kernel != first.kernel || c.ia.size() != first.ia.size() || !sameFloats(c.fa, first.fa))
      return Error::format("{}: its host kernel or its float parameters change with the "
                           "symbols' values, which a step compiled once cannot follow",
                           what);

  // Each integer parameter as a polynomial.
  auto notPolynomial = [&](const std::string &which) {
    std::vector<std::string> names;
    for (int64_t s : out.symbols)
      names.push_back(dimStr(s));
    return Error::format("{}: {} of its host kernel is not a polynomial in {} (with integer "
                         "coefficients), so a step compiled once cannot compute it",
                         what, which, fmt::join(names, ", "));
  };
  for (size_t i = 0; i < first.ia.size(); ++i) {
    std::vector<int64_t> f;
    for (size_t c = 0; c + 1 < corners.size(); ++c)
      f.push_back(corners[c].ia[i]);
    if (linear) {
      codegen::SymbolicInt v{f[0], {}};
      int64_t atCheck = f[0];
      for (size_t j = 0; j < k; ++j) {
        const int64_t rise = f[j + 1] - f[0], run = b[j] - a[j];
        if (rise % run != 0)
          return notPolynomial(fmt::format("parameter {}", i));
        v.constant -= rise / run * a[j];
        atCheck += rise / run * (check[j] - a[j]);
        if (rise != 0)
          v.terms.push_back({rise / run, {uint32_t(j)}});
      }
      if (atCheck != corners.back().ia[i])
        return notPolynomial(fmt::format("parameter {}", i));
      out.ia.push_back(std::move(v));
      continue;
    }
    auto coefficients = fitMultilinear(f, a, b);
    if (!coefficients || evaluate(*coefficients, check) != corners.back().ia[i])
      return notPolynomial(fmt::format("parameter {}", i));
    out.ia.push_back(toSymbolicInt(*coefficients));
  }
  // Scratch: the most any admitted value needs. Sizes grow with dims, so
  // with bounds that is the most at the corners of their box (lowered
  // there: sizes rounded to alignment are not polynomials); without, either
  // it is the same wherever it was lowered (a reduction's accumulators, one
  // per output: that size), or it is a size each run computes.
  bool bounded = true;
  for (int64_t d : out.symbols)
    bounded = bounded && symbolInfo(d).bounded();
  if (bounded) {
    for (size_t mask = 0; mask < (linear ? 2 : size_t(1) << k); ++mask) { // linear: lo, hi
      std::vector<int64_t> values(k);
      for (size_t j = 0; j < k; ++j) {
        const SymbolInfo &s = symbolInfo(out.symbols[j]);
        values[j] = (linear ? mask == 1 : (mask & (size_t(1) << j)) != 0)
                        ? s.hi
                        : std::max<int64_t>(s.lo, 1);
      }
      TS_ASSIGN_OR_RETURN(codegen::KernelCall c, lowerAt(values));
      out.scratchBytes = std::max(out.scratchBytes, c.scratchBytes);
    }
  } else {
    // Also at the symbols' lower bounds, where a size that grows is least
    // (where the lowering refuses them, the points above decide).
    std::vector<int64_t> lows(k);
    for (size_t j = 0; j < k; ++j)
      lows[j] = std::max<int64_t>(symbolInfo(out.symbols[j]).lo, 1);
    Expected<codegen::KernelCall> atLows = lowerAt(lows);
    const bool constant =
        (!atLows.ok() || atLows->scratchBytes == first.scratchBytes) &&
        std::all_of(corners.begin(), corners.end(), [&](const codegen::KernelCall &c) {
          return c.scratchBytes == first.scratchBytes;
        });
    // A step whose scratch is the same everywhere once got none here and
    // wrote its accumulators through a null pointer (a mean() head over
    // unbounded H and W, issue 41).
    if (constant) {
      out.scratchBytes = first.scratchBytes;
    } else {
      if (linear)
        return Error::format("{}: its scratch memory grows with {} symbols without upper "
                             "bounds: bound them (--input-shape x=N:1..64,...)",
                             what, k);
      TS_ASSIGN_OR_RETURN(out.scratch, scratchBound(what, out.symbols, lowerAt));
    }
  }
  out.call = first;
  out.call.scratchBytes = std::max<uint64_t>(out.scratchBytes, out.scratch ? 1 : 0); // has one
  return out;
}

Expected<codegen::SymbolicInt>
scratchBound(const std::string &what, const std::vector<int64_t> &symbols,
             const std::function<Expected<codegen::KernelCall>(const std::vector<int64_t> &)>
                 &lowerAt) {
  // Scratch is regions of (sums of) products of dims, each rounded up to
  // 64 bytes. At multiples of 64 the rounding leaves every term that holds
  // a symbol, so the lowering there is a polynomial (up to the constants'
  // rounding); 64 bytes per region, for up to kScratchRegions regions,
  // cover the rounding elsewhere. Checked at points that are not multiples.
  constexpr int64_t kScratchRegions = 16;
  const size_t k = symbols.size();
  std::vector<int64_t> a(k), b(k), c(k);
  for (size_t j = 0; j < k; ++j) {
    const int64_t lo = std::max<int64_t>(symbolInfo(symbols[j]).lo, 1);
    a[j] = (lo + 63) / 64 * 64 + 64;
    b[j] = a[j] + 64;
    c[j] = a[j] + 192;
  }
  std::vector<int64_t> f;
  for (size_t mask = 0; mask < (size_t(1) << k); ++mask) {
    std::vector<int64_t> values(k);
    for (size_t j = 0; j < k; ++j)
      values[j] = mask & (size_t(1) << j) ? b[j] : a[j];
    TS_ASSIGN_OR_RETURN(codegen::KernelCall call, lowerAt(values));
    f.push_back(int64_t(call.scratchBytes));
  }
  TS_ASSIGN_OR_RETURN(codegen::KernelCall atC, lowerAt(c));
  const auto coefficients = fitMultilinear(f, a, b);
  if (!coefficients || evaluate(*coefficients, c) != int64_t(atC.scratchBytes))
    return Error::format("{}: its scratch memory grows with symbols that have no upper bound, "
                         "and not as a polynomial of them: bound them (--input-shape "
                         "x=N:1..64,...)",
                         what);
  codegen::SymbolicInt bound = toSymbolicInt(*coefficients);
  bound.constant += 64 * kScratchRegions;
  uint64_t state = 0x2545f4914f6cdd1dULL;
  for (int p = 0; p < 32; ++p) {
    std::vector<int64_t> values(k);
    for (size_t j = 0; j < k; ++j) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      values[j] = std::max<int64_t>(symbolInfo(symbols[j]).lo, 1) + int64_t((state >> 20) % 4096);
    }
    TS_ASSIGN_OR_RETURN(codegen::KernelCall call, lowerAt(values));
    if (evaluate(*coefficients, values) + 64 * kScratchRegions < int64_t(call.scratchBytes))
      return Error::format("{}: its scratch memory outgrows the bound fitted for symbols "
                           "without an upper bound: bound them (--input-shape x=N:1..64,...)",
                           what);
  }
  return bound;
}

} // namespace tessera::compile
