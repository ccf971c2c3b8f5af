//===- frontend/onnx/converter_symbols.cpp - Shape values holding symbols -===//
//
// NodeContext's arithmetic on shape values that hold symbolic dims (ONNX
// Shape of a symbolic tensor, and what computes with it): evaluated at the
// symbols' probe values and read back as symbols, the way types are
// (ir/symbol.h); comparisons decided by the symbols' ranges where they can
// be (`R == -1` for a count R); anything else computed at run time from the
// symbols' values (symbol_values). And the one place where an op's rule
// meets dims that the data decides and nothing at compile time shows equal
// (two NonZero counts over the same mask): the call is made with those dims
// checked equal when the model runs (docs/design/0013-dynamic-shapes.md,
// section 7).
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/converter.h"

#include "ir/symbol.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <memory>
#include <unordered_map>
#include <limits>
#include <optional>
#include <utility>

namespace tessera::frontend::onnx {

namespace {

/// The values a dim can take: a constant itself; a named or run-time symbol
/// its bounds; a derived one any size (its bounds are evidence from the
/// relation at its inputs' bounds, not a proof).
std::pair<int64_t, int64_t> dimRange(int64_t d) {
  constexpr int64_t kAny = std::numeric_limits<int64_t>::max();
  if (!ir::isKnownSymbol(d))
    return {d, d};
  const ir::SymbolInfo &s = ir::symbolInfo(d);
  if (s.derived())
    return {0, kAny};
  return {s.lo, s.bounded() ? s.hi : kAny};
}

/// Per open SymbolScope (the first: the model's main graph), the result
/// that sets each run-time symbol.
using Setters = std::unordered_map<int64_t, std::weak_ptr<const ir::ExprNode>>;
thread_local std::vector<Setters> scopes(1);

} // namespace

SymbolScope::SymbolScope() { scopes.emplace_back(); }
SymbolScope::~SymbolScope() { scopes.pop_back(); }

void NodeContext::noteSetter(const ir::Expr &e) {
  const auto *c = e->as<ir::CallNode>();
  if (!c || !(c->op()->dataDependent || c->op()->controlFlow)) // not iota, which reads one
    return;
  std::vector<int64_t> set;
  if (c->attrs().has("count")) {
    const int64_t d = c->attrs().getInt("count");
    if (ir::isKnownSymbol(d) && ir::symbolInfo(d).runtime)
      set.push_back(d);
  }
  if (c->attrs().has("joins"))
    for (int64_t d : c->attrs().getInts("joins"))
      if (ir::isKnownSymbol(d) && ir::symbolInfo(d).runtime)
        set.push_back(d);
  for (int64_t d : set)
    scopes.back()[d] = e;
}

std::vector<ir::Expr> NodeContext::settersOf(const std::vector<int64_t> &values) {
  std::vector<ir::Expr> out;
  std::vector<const ir::ExprNode *> seen; // one argument per setter
  for (int64_t v : values) {
    if (!ir::isKnownSymbol(v))
      continue;
    const ir::SymbolInfo &s = ir::symbolInfo(v);
    std::vector<int64_t> roots = s.runtime ? std::vector<int64_t>{v} : s.roots;
    for (int64_t r : roots) {
      auto it = scopes.back().find(r);
      if (it == scopes.back().end())
        continue;
      ir::Expr setter = it->second.lock();
      if (!setter || std::find(seen.begin(), seen.end(), setter.get()) != seen.end())
        continue;
      seen.push_back(setter.get());
      // A tuple's last field is the count (or the joins' values) it returns.
      if (setter->type().isTuple() && !setter->type().fields().empty()) {
        auto last = ir::makeTupleGetItem(setter, int(setter->type().fields().size()) - 1,
                                         setter->name());
        if (!last.ok())
          continue;
        setter = *last;
      }
      out.push_back(std::move(setter));
    }
  }
  return out;
}

std::optional<ir::Tensor> NodeContext::compareByRanges(std::string_view op,
                                                       const std::vector<ir::Tensor> &values,
                                                       const ir::Type &result) {
  if ((op != "equal" && op != "less" && op != "greater" && op != "less_equal" &&
       op != "greater_equal") ||
      values.size() != 2 || values[0].dtype() != ir::DType::I64 ||
      values[1].dtype() != ir::DType::I64 || !result.isTensor())
    return std::nullopt;
  const ir::Shape &shape = result.shape();
  const std::vector<int64_t> xs = values[0].toInts(), ys = values[1].toInts();
  const int64_t n = ir::numElements(shape);
  if ((int64_t(xs.size()) != n && xs.size() != 1) || (int64_t(ys.size()) != n && ys.size() != 1))
    return std::nullopt;
  ir::Tensor out(ir::DType::Bool, shape);
  for (int64_t e = 0; e < n; ++e) {
    const int64_t x = xs[xs.size() == 1 ? 0 : size_t(e)], y = ys[ys.size() == 1 ? 0 : size_t(e)];
    const auto [xlo, xhi] = dimRange(x);
    const auto [ylo, yhi] = dimRange(y);
    std::optional<bool> r;
    if (x == y)
      r = op == "equal" || op == "less_equal" || op == "greater_equal";
    else if (op == "equal" && (xhi < ylo || yhi < xlo))
      r = false;
    else if (op == "equal" && xlo == xhi && ylo == yhi)
      r = xlo == ylo;
    else if (op == "less" || op == "greater_equal")
      r = xhi < ylo ? std::optional(true) : xlo >= yhi ? std::optional(false) : std::nullopt;
    else if (op == "greater" || op == "less_equal")
      r = xlo > yhi ? std::optional(true) : xhi <= ylo ? std::optional(false) : std::nullopt;
    if (!r)
      return std::nullopt;
    const bool flip = op == "greater_equal" || op == "less_equal";
    out.setInt(e, (flip && x != y) ? !*r : *r);
  }
  return out;
}

/// The kernel of `call` on constants that hold symbols: run once per probe
/// (and at the bounds) with every symbol replaced, each output element read
/// back as a constant, an input symbol or a derived symbol.
Expected<std::vector<ir::Tensor>>
NodeContext::foldOverSymbols(const ir::CallNode &call, const std::vector<ir::Tensor> &values,
                             const std::vector<int64_t> &symbols) {
  // By value: a derived result keeps it as its definition (ir/symbol.h).
  auto at = [op = call.op(), attrs = call.attrs(), type = call.type(),
             values](const std::function<int64_t(int64_t)> &value)
      -> Expected<std::vector<ir::Tensor>> {
    std::vector<ir::Tensor> concrete;
    for (const ir::Tensor &v : values) {
      if (v.dtype() != ir::DType::I64) {
        concrete.push_back(v);
        continue;
      }
      std::vector<int64_t> xs = v.toInts();
      for (int64_t &x : xs)
        if (ir::isKnownSymbol(x))
          x = value(x);
      concrete.push_back(ir::Tensor::fromInts(ir::DType::I64, v.shape(), xs));
    }
    return op->kernel(concrete, attrs, type);
  };
  auto refuse = [&](std::string_view why) {
    return error("{} on a shape value holding the symbolic dim {}: {}", call.op()->name,
                 ir::dimStr(symbols[0]), why);
  };
  std::array<std::vector<ir::Tensor>, ir::kProbes> probed;
  for (size_t j = 0; j < ir::kProbes; ++j) {
    auto r = at([&](int64_t d) { return ir::symbolInfo(d).probes[j]; });
    if (!r.ok())
      return refuse(r.error().str());
    probed[j] = std::move(r).value();
  }
  bool bounded = true;
  for (int64_t d : symbols)
    bounded = bounded && ir::symbolInfo(d).bounded();
  auto lo = at([](int64_t d) { return ir::symbolInfo(d).lo; });
  // Named symbols at lo + 1, derived ones computed from those (ir/symbol.h).
  const auto nearLo = ir::valuesNearLo(symbols);
  auto next = nearLo ? at([&](int64_t d) {
    return (*nearLo)[size_t(std::find(symbols.begin(), symbols.end(), d) - symbols.begin())];
  })
                     : Expected<std::vector<ir::Tensor>>(Error("no value near the lower bounds"));
  auto hi = bounded ? at([](int64_t d) { return ir::symbolInfo(d).hi; })
                    : Expected<std::vector<ir::Tensor>>(Error("unbounded"));
  std::vector<ir::Tensor> out;
  for (size_t k = 0; k < probed[0].size(); ++k) {
    // A comparison or a cast away from i64 cannot hold a symbol, and the
    // probes (which lie outside small bounds) cannot stand for every value.
    if (probed[0][k].dtype() != ir::DType::I64)
      return refuse(fmt::format("its {} result depends on the symbol's value, known only at "
                                "run time (not supported yet, docs/design/0013)",
                                ir::dtypeName(probed[0][k].dtype())));
    std::array<std::vector<int64_t>, ir::kProbes> ints;
    for (size_t j = 0; j < ir::kProbes; ++j)
      ints[j] = probed[j][k].toInts();
    const std::vector<int64_t> loInts = lo.ok() ? (*lo)[k].toInts() : std::vector<int64_t>{};
    const std::vector<int64_t> hiInts = hi.ok() ? (*hi)[k].toInts() : std::vector<int64_t>{};
    const std::vector<int64_t> nextInts =
        next.ok() && k < next->size() ? (*next)[k].toInts() : std::vector<int64_t>{};
    std::vector<int64_t> result(ints[0].size());
    for (size_t e = 0; e < result.size(); ++e) {
      std::array<int64_t, ir::kProbes> vals;
      for (size_t j = 0; j < ir::kProbes; ++j)
        vals[j] = ints[j][e];
      const bool varies =
          std::any_of(vals.begin(), vals.end(), [&](int64_t v) { return v != vals[0]; });
      if (varies && std::any_of(vals.begin(), vals.end(), [](int64_t v) { return v < 0; }))
        return refuse("a negative result at the probe values");
      result[e] = ir::readBackDim(
          vals, loInts.size() == result.size() ? std::optional<int64_t>(loInts[e]) : std::nullopt,
          hiInts.size() == result.size() ? std::optional<int64_t>(hiInts[e]) : std::nullopt,
          symbols,
          nextInts.size() == result.size() ? std::optional<int64_t>(nextInts[e]) : std::nullopt);
      if (ir::isSymbol(result[e]) && ir::symbolInfo(result[e]).derived()) {
        ir::SymbolDefinition def;
        def.sources = symbols;
        def.what = fmt::format("node '{}' ({}), element {} of its shape value", nodeName_,
                               opType_, e);
        def.key = def.what;
        def.eval = [at, symbols, k, e](std::span<const int64_t> v) -> std::optional<int64_t> {
          auto r = at([&](int64_t d) {
            return v[size_t(std::find(symbols.begin(), symbols.end(), d) - symbols.begin())];
          });
          if (!r.ok() || k >= r->size() || int64_t(e) >= (*r)[k].numel())
            return std::nullopt;
          return (*r)[k].toInts()[e];
        };
        ir::defineSymbol(result[e], std::move(def));
      }
    }
    out.push_back(ir::Tensor::fromInts(ir::DType::I64, probed[0][k].shape(), result));
  }
  return out;
}

Expected<ir::Expr> NodeContext::callOnSymbolValues(std::string_view opName,
                                                   std::vector<ir::Expr> args, ir::Attrs attrs) {
  for (ir::Expr &a : args)
    if (const auto *k = a->as<ir::ConstantNode>(); k && holdsSymbols(k->data())) {
      const ir::Tensor &t = k->data();
      TS_ASSIGN_OR_RETURN(a, call("symbol_values", {},
                                  {{"values", t.toInts()}, {"shape", ir::Shape(t.shape())}}));
    }
  auto built = ir::makeCall(opName, std::move(args), std::move(attrs), nodeName_, span_);
  if (!built.ok())
    return std::move(built).withLocation(fmt::format("node '{}' ({})", nodeName_, opType_));
  return built;
}

namespace {

/// The axes where `a` and `b` (tensors of one rank) hold different dims that
/// compile time cannot show equal or different but the model's run can
/// make equal: a symbol against another symbol or a size other than 1 (a 1
/// may broadcast), their ranges overlapping (a count the data decides
/// against another, 2 floor(H / 2) against H, N against 3 where N may be 3).
std::vector<int64_t> axesEqualOnlyAtRunTime(const ir::Type &a, const ir::Type &b) {
  if (!a.isTensor() || !b.isTensor() || a.rank() != b.rank())
    return {};
  std::vector<int64_t> axes;
  for (int64_t k = 0; k < int64_t(a.rank()); ++k) {
    const int64_t x = a.shape()[size_t(k)], y = b.shape()[size_t(k)];
    if (x == y || !(ir::isSymbol(x) || ir::isSymbol(y)) || x == 1 || y == 1)
      continue;
    const auto [xlo, xhi] = dimRange(x);
    const auto [ylo, yhi] = dimRange(y);
    if (xlo <= yhi && ylo <= xhi)
      axes.push_back(k);
  }
  return axes;
}

/// `t` with its dims at `axes` those of `like`.
ir::Type withDims(const ir::Type &t, const ir::Type &like, const std::vector<int64_t> &axes) {
  ir::Shape shape = t.shape();
  for (int64_t k : axes)
    shape[size_t(k)] = like.shape()[size_t(k)];
  return ir::Type::tensor(t.dtype(), std::move(shape));
}

} // namespace

Expected<ir::Expr> NodeContext::withDimsOf(const ir::Expr &x, const ir::Type &like,
                                           const std::vector<int64_t> &axes, size_t which,
                                           size_t likeWhich) {
  return withDimsOf(x, like, axes, [&](int64_t k, int64_t have, int64_t want) {
    return fmt::format("dim {} of argument {} ({}) must equal dim {} of argument {} ({})", k,
                       which, ir::dimStr(have), k, likeWhich, ir::dimStr(want));
  });
}

Expected<ir::Expr> NodeContext::withDimsOf(
    const ir::Expr &x, const ir::Type &like, const std::vector<int64_t> &axes,
    const std::function<std::string(int64_t, int64_t, int64_t)> &rule) {
  ir::Expr y = x;
  for (int64_t k : axes) {
    const int64_t have = y->type().shape()[size_t(k)], want = like.shape()[size_t(k)];
    auto valueOf = [&](int64_t d) -> Expected<ir::Expr> {
      if (!ir::isSymbol(d))
        return constant(ir::Tensor::fromInts(ir::DType::I64, ir::Shape{1}, std::vector<int64_t>{d}));
      return call("symbol_values", {}, {{"values", std::vector<int64_t>{d}},
                                        {"shape", ir::Shape{1}}});
    };
    TS_ASSIGN_OR_RETURN(ir::Expr haveValue, valueOf(have));
    TS_ASSIGN_OR_RETURN(ir::Expr wantValue, valueOf(want));
    TS_ASSIGN_OR_RETURN(ir::Expr same, call("equal", {haveValue, wantValue}));
    TS_ASSIGN_OR_RETURN(ir::Expr index, call("iota", {wantValue}, {{"count", want}}));
    const std::string message =
        fmt::format("node '{}' ({}): {}; the data decides them, and they differ in this run",
                    nodeName_, opType_, rule(k, have, want));
    TS_ASSIGN_OR_RETURN(index, call("check", {index, same}, {{"message", message}}));
    TS_ASSIGN_OR_RETURN(y, call("gather", {y, index}, {{"axis", k}}));
  }
  return y;
}

std::optional<ir::Expr> NodeContext::callCheckingDimsAtRunTime(std::string_view opName,
                                                               const std::vector<ir::Expr> &args,
                                                               const ir::Attrs &attrs) {
  // A rewrite is tried on placeholders of the rewritten types first: the
  // fewest dims that make the rule hold (a concat's own axis differs and
  // stays), one argument at a time taking an earlier one's dims, the
  // nearest first (scatter_elements' updates take its indices' dims, not
  // its data's); then every argument taking the first's (a concat of three).
  using Rewrite = std::vector<std::pair<size_t, std::vector<int64_t>>>; // (arg, axes)
  auto holds = [&](size_t from, const Rewrite &rewrite) {
    std::vector<ir::Expr> placeholders = args;
    for (const auto &[j, axes] : rewrite)
      placeholders[j] = ir::makeVar("rewritten", withDims(args[j]->type(), args[from]->type(), axes));
    return ir::makeCall(opName, std::move(placeholders), attrs, nodeName_, span_).ok();
  };
  auto make = [&](size_t from, const Rewrite &rewrite) -> std::optional<ir::Expr> {
    std::vector<ir::Expr> rewritten = args;
    for (const auto &[j, axes] : rewrite) {
      auto y = withDimsOf(args[j], args[from]->type(), axes, j, from);
      if (!y.ok())
        return std::nullopt;
      rewritten[j] = *y;
    }
    auto made = call(opName, std::move(rewritten), attrs);
    return made.ok() ? std::optional<ir::Expr>(*made) : std::nullopt;
  };
  // Subsets of `axes`, fewest first.
  auto subsets = [](const std::vector<int64_t> &axes) {
    const size_t n = std::min<size_t>(axes.size(), 8);
    std::vector<uint32_t> masks;
    for (uint32_t m = 1; m < (1u << n); ++m)
      masks.push_back(m);
    std::stable_sort(masks.begin(), masks.end(), [](uint32_t a, uint32_t b) {
      return __builtin_popcount(a) < __builtin_popcount(b);
    });
    std::vector<std::vector<int64_t>> out;
    for (uint32_t m : masks) {
      std::vector<int64_t> chosen;
      for (size_t b = 0; b < n; ++b)
        if (m & (1u << b))
          chosen.push_back(axes[b]);
      out.push_back(std::move(chosen));
    }
    return out;
  };
  for (size_t j = args.size(); j-- > 1;)
    for (size_t i = j; i-- > 0;)
      for (const std::vector<int64_t> &chosen :
           subsets(axesEqualOnlyAtRunTime(args[i]->type(), args[j]->type())))
        if (holds(i, {{j, chosen}}))
          return make(i, {{j, chosen}});
  // Every argument taking the first's dims on the same axes (where they
  // differ): a concat of three whose other axis the data decides.
  std::vector<int64_t> any;
  for (size_t j = 1; j < args.size(); ++j)
    for (int64_t k : axesEqualOnlyAtRunTime(args[0]->type(), args[j]->type()))
      if (std::find(any.begin(), any.end(), k) == any.end())
        any.push_back(k);
  std::sort(any.begin(), any.end());
  for (const std::vector<int64_t> &chosen : subsets(any)) {
    Rewrite all;
    for (size_t j = 1; j < args.size(); ++j) {
      std::vector<int64_t> axes;
      for (int64_t k : axesEqualOnlyAtRunTime(args[0]->type(), args[j]->type()))
        if (std::find(chosen.begin(), chosen.end(), k) != chosen.end())
          axes.push_back(k);
      if (!axes.empty())
        all.emplace_back(j, std::move(axes));
    }
    if (all.size() > 1 && holds(0, all))
      return make(0, all);
  }
  return std::nullopt;
}

} // namespace tessera::frontend::onnx
