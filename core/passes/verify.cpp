//===- passes/verify.cpp - IR invariants ---------------------------------===//
//
// Checks what every pass may assume:
//  - every variable used in a function is one of its parameters, and a
//    nested function uses no value of the function around it;
//  - parameters of one function are distinct;
//  - every op call's attributes are normalised and its stored type is the one
//    its relation infers;
//  - every call of a global names a function of the module with matching
//    argument and result types;
//  - tuple-get-item indices are in range;
//  - no global function calls itself, directly or through others.
// Errors name the function and the value.
//
//===----------------------------------------------------------------------===//
#include "passes/pass.h"

#include "ir/visit.h"

#include <unordered_map>
#include <unordered_set>

namespace tessera::passes {

using namespace ir;

namespace {

std::string where(const ExprNode &n) {
  std::string s;
  if (const auto *c = n.as<CallNode>())
    s = c->calleeName();
  else if (n.as<VarNode>())
    s = "variable";
  else if (n.as<ConstantNode>())
    s = "constant";
  else if (n.as<TupleNode>())
    s = "tuple";
  else if (n.as<TupleGetItemNode>())
    s = "tuple item";
  else
    s = "function";
  if (!n.name().empty())
    s += fmt::format(" '%{}'", n.name());
  return s;
}

/// The invariants of one node of function `f` (see verifyFunction).
Status verifyNode(const Module &m, const ExprNode *n, const FunctionNode *f,
                  const std::unordered_map<const ExprNode *, const FunctionNode *> &paramOwner) {
  if (n->as<VarNode>()) {
    auto it = paramOwner.find(n);
    if (it == paramOwner.end())
      return Error::format("{} is not a parameter of any enclosing function", where(*n));
    if (it->second != f)
      return Error::format("{} is a parameter of an enclosing function: a nested function "
                           "may only use its own parameters",
                           where(*n));
  } else if (const auto *c = n->as<CallNode>()) {
    std::vector<Type> types;
    for (const auto &a : c->args())
      types.push_back(a->type());
    if (c->calleeKind() == CallNode::CalleeKind::Op) {
      auto attrs = c->op()->normalizeAttrs(c->attrs());
      if (!attrs.ok())
        return std::move(attrs).withContext("in " + where(*n)).error();
      if (!(*attrs == c->attrs()))
        return Error::format("{} has attributes {} that are not normalised", where(*n),
                             c->attrs().str());
      auto t = c->op()->inferType(types, c->attrs());
      if (!t.ok())
        return std::move(t).withContext("in " + where(*n)).error();
      if (*t != c->type())
        return Error::format("{} has type {} but its relation infers {}", where(*n),
                             c->type().str(), t->str());
    } else if (c->calleeKind() == CallNode::CalleeKind::Global) {
      auto fnType = m.globalType(c->global());
      if (!fnType.ok())
        return std::move(fnType).withContext("in " + where(*n)).error();
      Type expected = Type::func(types, c->type());
      if (*fnType != expected)
        return Error::format("{} calls @{} of type {} as {}", where(*n), c->global(),
                             fnType->str(), expected.str());
    } else if (!c->localFnExpr()->as<FunctionNode>()) {
      return Error::format("{} calls a value that is not a function", where(*n));
    }
  } else if (const auto *g = n->as<TupleGetItemNode>()) {
    const Type &t = g->tuple()->type();
    if (!t.isTuple() || g->index() < 0 || size_t(g->index()) >= t.fields().size())
      return Error::format("{} takes field {} of {}", where(*n), g->index(), t.str());
  }
  return okStatus();
}

Status verifyFunction(const Module &m, const FunctionNode &fn) {
  // Which function scope each node belongs to: a node inside a nested
  // function's body may only reach params of that function (or constants).
  std::unordered_map<const ExprNode *, const FunctionNode *> paramOwner;
  std::vector<const FunctionNode *> functions{&fn};
  for (const ExprNode *n : postOrder(fn.body()))
    if (const auto *f = n->as<FunctionNode>())
      functions.push_back(f);
  for (const FunctionNode *f : functions) {
    std::unordered_set<const ExprNode *> seen;
    for (const auto &p : f->params()) {
      if (!seen.insert(p.get()).second)
        return Error::format("parameter '%{}' appears twice in a parameter list", p->name())
            .setPosition(m.position(*p));
      if (!paramOwner.emplace(p.get(), f).second)
        return Error::format("parameter '%{}' belongs to two functions", p->name())
            .setPosition(m.position(*p));
    }
  }
  for (const FunctionNode *f : functions) {
    // Walk this function's own body without entering nested functions.
    for (const ExprNode *n : postOrder(f->body(), /*intoFunctions=*/false))
      TS_RETURN_IF_ERROR(verifyNode(m, n, f, paramOwner).withPosition(m.position(*n)));
  }
  return okStatus();
}

const PassInfo kVerifyInfo{
    "verify",
    "Check the IR invariants every pass relies on",
    "Checks the invariants: variables are parameters of their function, nested functions "
    "capture nothing, op attributes are normalised and stored types match the relations, "
    "global calls match their callee, tuple indices are in range, no global function calls "
    "itself (directly or through others: with no control flow such a call never returns).",
    {}};

class Verify final : public Pass {
public:
  const PassInfo &info() const override { return kVerifyInfo; }
  Status run(Module &m, PassContext &) override { return verifyModule(m); }
};

} // namespace

Status verifyModule(const Module &m) {
  for (const auto &[global, fn] : m.functions())
    TS_RETURN_IF_ERROR(
        verifyFunction(m, *fn).withContext(fmt::format("in function '@{}'", global)));
  return m.checkNoRecursion();
}

std::unique_ptr<Pass> createVerifyPass() { return std::make_unique<Verify>(); }

} // namespace tessera::passes
