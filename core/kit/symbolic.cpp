//===- kit/symbolic.cpp - The kit's symbolic-shape cases ------------------===//
//
// For plugins that take symbolic dims (ABI 1.4): each op's first sample again
// with dim 0 of every input a symbol N(1, 4), when the op's relation admits
// it (two inputs whose dim 0 must differ do not). The case is compiled once
// and run at N = 1 and N = 3, each call with its symbols' values, against the
// reference interpreter on the same computation at that size.
//
//===----------------------------------------------------------------------===//
#include "kit/kit.h"

#include "ir/symbol.h"
#include "ir/visit.h"

#include <fmt/format.h>

namespace tessera::kit {

namespace {

/// `call` again on `args` (same attributes, same constants).
Expected<ir::Expr> recall(const ir::CallNode &call, std::vector<ir::Expr> args) {
  return ir::makeCall(call.op()->name, std::move(args), call.attrs(), call.name());
}

/// The types of an expression, tuple fields flattened.
void flatTypes(const ir::Type &t, std::vector<ir::Type> &out) {
  if (t.isTuple()) {
    for (const ir::Type &f : t.fields())
      flatTypes(f, out);
    return;
  }
  if (t.isTensor())
    out.push_back(t);
}

} // namespace

std::optional<KitCase> buildSymbolicCase(const KitCase &kc) {
  const ir::Function main = kc.module.find("main");
  const auto *call = kc.ops.size() == 1 ? kc.ops[0]->as<ir::CallNode>() : nullptr;
  if (!call || !call->op() || main->params().empty())
    return std::nullopt;
  auto n = ir::namedSymbol("N", 1, 4);
  if (!n.ok())
    return std::nullopt;
  // The call over `shapeOf(param)`-typed parameters, the constants kept.
  auto build = [&](auto &&dim0) -> std::optional<ir::Module> {
    std::vector<ir::Var> params;
    std::vector<ir::Expr> args;
    for (const ir::Expr &a : call->args()) {
      const auto *v = a->as<ir::VarNode>();
      if (!v) {
        args.push_back(a);
        continue;
      }
      if (!v->type().isTensor() || v->type().rank() == 0)
        return std::nullopt;
      ir::Shape shape = v->type().shape();
      shape[0] = dim0;
      ir::Var p = ir::makeVar(v->name(), ir::Type::tensor(v->type().dtype(), shape));
      params.push_back(p);
      args.push_back(p);
    }
    auto c = recall(*call, std::move(args));
    if (!c.ok())
      return std::nullopt; // the relation does not admit it
    ir::Module m;
    m.set("main", ir::makeFunction(std::move(params), *c));
    return m;
  };
  std::optional<ir::Module> symbolic = build(*n);
  if (!symbolic)
    return std::nullopt;
  KitCase out;
  out.label = kc.label + " [dim 0 of the inputs N(1, 4), run at N = 1 and 3]";
  out.module = std::move(*symbolic);
  out.inputDomains = kc.inputDomains;
  out.ops = {out.module.find("main")->body()};
  for (int64_t value : {1, 3}) {
    std::optional<ir::Module> at = build(value);
    if (!at)
      return std::nullopt;
    out.sizes.push_back(std::move(*at));
  }
  return out;
}

Expected<std::vector<int64_t>> symbolValuesAt(const ir::Function &symbolic,
                                              const ir::Function &concrete,
                                              const std::vector<int64_t> &dims) {
  std::vector<std::optional<int64_t>> found(dims.size());
  auto match = [&](const ir::Type &s, const ir::Type &c) {
    std::vector<ir::Type> st, ct;
    flatTypes(s, st);
    flatTypes(c, ct);
    for (size_t t = 0; t < st.size() && t < ct.size(); ++t)
      for (size_t d = 0; d < st[t].rank() && d < ct[t].rank(); ++d)
        for (size_t k = 0; k < dims.size(); ++k)
          if (st[t].shape()[d] == dims[k])
            found[k] = ct[t].shape()[d];
  };
  for (size_t i = 0; i < symbolic->params().size() && i < concrete->params().size(); ++i)
    match(symbolic->params()[i]->type(), concrete->params()[i]->type());
  const auto a = ir::postOrderExprs(symbolic->body(), false);
  const auto b = ir::postOrderExprs(concrete->body(), false);
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    match(a[i]->type(), b[i]->type());
  std::vector<int64_t> values;
  for (size_t k = 0; k < dims.size(); ++k) {
    if (!found[k])
      return Error::format("symbol {} ({}) has no counterpart at the concrete size", k,
                           ir::dimStr(dims[k]));
    values.push_back(*found[k]);
  }
  return values;
}

} // namespace tessera::kit
