//===- passes/fold_constants.cpp - Evaluate calls on constants -----------===//
//
// A call of an op whose arguments are all constants is replaced by its value,
// computed with the op's reference kernel (the same code the interpreter
// runs, so folding never changes a result). Tuples of constants feeding a
// tuple-get-item are forwarded. Results larger than kMaxFoldedBytes stay as
// calls, so that e.g. an expand of a scalar does not bloat the module.
//
//===----------------------------------------------------------------------===//
#include "passes/pass.h"

#include "ir/visit.h"

namespace tessera::passes {

using namespace ir;

namespace {

constexpr int64_t kMaxFoldedBytes = int64_t(64) << 20;

int64_t resultBytes(const Type &t) {
  if (t.isTensor())
    return t.numElements() * int64_t(dtypeSize(t.dtype()));
  int64_t total = 0;
  for (const auto &f : t.fields())
    total += resultBytes(f);
  return total;
}

const PassInfo kFoldConstantsInfo{
    "fold-constants",
    "Evaluate op calls whose arguments are all constants (reference kernels)",
    "Evaluates op calls whose arguments are all constants with the reference kernels "
    "(results over 64 MiB stay as calls); forwards fields of constant tuples.",
    {
        {"calls-folded", "op calls replaced by their constant result"},
        {"calls-too-large-to-fold", "calls left alone because their result exceeds 64 MiB"},
        {"tuple-items-forwarded", "fields of constant tuples used directly"},
    }};

class FoldConstants final : public FunctionPass {
public:
  const PassInfo &info() const override { return kFoldConstantsInfo; }

  Expected<Function> runOnFunction(const Module &m, const std::string &, const Function &f,
                                   PassContext &ctx) override {
    return rewriteFunction(f, [&](const Expr &, const Expr &node) -> Expected<Expr> {
      if (const auto *g = node->as<TupleGetItemNode>())
        if (const auto *t = g->tuple()->as<TupleNode>()) {
          ++ctx.stat("tuple-items-forwarded");
          return t->fields()[size_t(g->index())];
        }
      const auto *c = node->as<CallNode>();
      if (!c || c->calleeKind() != CallNode::CalleeKind::Op)
        return node;
      std::vector<Tensor> inputs;
      for (const auto &a : c->args()) {
        const auto *k = a->as<ConstantNode>();
        if (!k)
          return node;
        inputs.push_back(k->data());
      }
      // A reshape of constants to [N, -1], symbol_values: run time decides.
      if (!c->type().isStatic() || c->attrs().holdsSymbols())
        return node;
      if (resultBytes(c->type()) > kMaxFoldedBytes) {
        ++ctx.stat("calls-too-large-to-fold");
        return node;
      }
      auto out = c->op()->kernel(inputs, c->attrs(), c->type());
      if (!out.ok()) {
        // The program would fail at run time with this error; report it now.
        return std::move(out).withContext(fmt::format("while folding {}{}", c->op()->name,
                                                      c->name().empty() ? ""
                                                                        : " '%" + c->name() + "'"))
            .withPosition(m.position(*c))
            .error();
      }
      ++ctx.stat("calls-folded");
      if (!c->type().isTuple())
        return makeConstant(std::move(out->at(0)), c->name(), c->span());
      std::vector<Expr> fields;
      for (auto &t : *out)
        fields.push_back(makeConstant(std::move(t)));
      return makeTuple(std::move(fields), c->name(), c->span());
    });
  }
};

} // namespace

std::unique_ptr<Pass> createFoldConstantsPass() { return std::make_unique<FoldConstants>(); }

} // namespace tessera::passes
