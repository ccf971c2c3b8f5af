//===- passes/dce.cpp - Dead code elimination ----------------------------===//
//
// A function body is a DAG rooted at its result, so a value nobody uses is
// already gone; what can still be dead is:
//  - the other fields of a tuple when only one is taken: item(tuple(a, b), 0)
//    becomes a;
//  - global functions no entry point reaches. Entry points are @main and
//    every function with a `global_symbol` attribute; a module with neither
//    keeps all its functions;
//  - parameters of nested (local) functions that their body never uses,
//    removed together with the matching arguments of the single call that
//    uses the function.
//
//===----------------------------------------------------------------------===//
#include "passes/pass.h"

#include "ir/visit.h"

#include <unordered_set>

namespace tessera::passes {

using namespace ir;

namespace {

const PassInfo kDceInfo{
    "dce",
    "Remove unused tuple fields, unused local-function parameters and unreachable global functions",
    "Forwards `item(tuple(...), i)`, drops unused parameters of local functions, removes "
    "global functions that no entry point (`@main` or a function with `global_symbol`) "
    "reaches.",
    {
        {"tuple-items-forwarded", "tuple fields used directly"},
        {"local-params-removed", "unused parameters of local functions dropped"},
        {"functions-removed", "unreachable global functions removed"},
    }};

class DCE final : public FunctionPass {
public:
  const PassInfo &info() const override { return kDceInfo; }

  Status run(Module &m, PassContext &ctx) override {
    TS_RETURN_IF_ERROR(FunctionPass::run(m, ctx));
    removeUnreachable(m, ctx);
    return okStatus();
  }

  Expected<Function> runOnFunction(const Module &, const std::string &, const Function &fn,
                                   PassContext &ctx) override {
    auto uses = useCounts(fn->body());
    return rewriteFunction(fn, [&](const Expr &, const Expr &node) -> Expected<Expr> {
      if (const auto *g = node->as<TupleGetItemNode>())
        if (const auto *t = g->tuple()->as<TupleNode>()) {
          ++ctx.stat("tuple-items-forwarded");
          return t->fields()[size_t(g->index())];
        }
      if (const auto *c = node->as<CallNode>())
        if (const FunctionNode *local = c->localFn(); local && uses[c->localFnExpr().get()] <= 1)
          return dropUnusedParams(node, *c, *local, ctx);
      return node;
    });
  }

private:
  static Expected<Expr> dropUnusedParams(const Expr &node, const CallNode &call,
                                         const FunctionNode &fn, PassContext &ctx) {
    std::unordered_set<const ExprNode *> used;
    for (const ExprNode *n : postOrder(fn.body()))
      used.insert(n);
    std::vector<Var> params;
    std::vector<Expr> args;
    for (size_t i = 0; i < fn.params().size(); ++i) {
      if (!used.count(fn.params()[i].get()))
        continue;
      params.push_back(fn.params()[i]);
      args.push_back(call.args()[i]);
    }
    if (params.size() == fn.params().size())
      return node;
    ctx.stat("local-params-removed") += int64_t(fn.params().size() - params.size());
    Function slim = makeFunction(std::move(params), fn.body(), fn.attrs(), fn.name(), fn.span());
    return makeLocalCall(slim, std::move(args), call.name(), call.span());
  }

  static void removeUnreachable(Module &m, PassContext &ctx) {
    std::vector<std::string> work;
    for (const auto &[name, fn] : m.functions())
      if (name == "main" || fn->attrs().has("global_symbol"))
        work.push_back(name);
    if (work.empty())
      return;
    std::unordered_set<std::string> live(work.begin(), work.end());
    while (!work.empty()) {
      Function fn = m.find(work.back());
      work.pop_back();
      if (!fn)
        continue;
      for (const ExprNode *n : postOrder(fn->body()))
        if (const auto *c = n->as<CallNode>(); c && !c->global().empty())
          if (live.insert(c->global()).second)
            work.push_back(c->global());
    }
    std::vector<std::string> dead;
    for (const auto &[name, fn] : m.functions())
      if (!live.count(name))
        dead.push_back(name);
    for (const auto &name : dead)
      m.erase(name);
    ctx.stat("functions-removed") += int64_t(dead.size());
  }
};

} // namespace

std::unique_ptr<Pass> createDCEPass() { return std::make_unique<DCE>(); }

} // namespace tessera::passes
