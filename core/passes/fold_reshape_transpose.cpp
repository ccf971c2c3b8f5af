//===- passes/fold_reshape_transpose.cpp - Collapse layout chains --------===//
//
// Shapes are static, so a chain of pure shape changes (reshape, flatten,
// squeeze, unsqueeze) is one reshape to the final shape, and a reshape to
// the shape its input already has is nothing. A chain of transposes is one
// transpose with the composed permutation, and an identity transpose is
// nothing. Constant inputs are left to fold-constants.
//
//===----------------------------------------------------------------------===//
#include "passes/pass.h"

#include "ir/visit.h"

namespace tessera::passes {

using namespace ir;

namespace {

bool isShapeChange(const Expr &e) {
  const auto *c = e->as<CallNode>();
  if (!c || !c->op())
    return false;
  const std::string &n = c->op()->name;
  return n == "reshape" || n == "flatten" || n == "squeeze" || n == "unsqueeze";
}

const CallNode *transposeOf(const Expr &e) {
  const auto *c = e->as<CallNode>();
  return c && c->op() && c->op()->name == "transpose" ? c : nullptr;
}

std::vector<int64_t> permOf(const CallNode &t) {
  auto perm = t.attrs().getInts("perm");
  if (perm.empty()) {
    size_t rank = t.type().rank();
    for (size_t i = 0; i < rank; ++i)
      perm.push_back(int64_t(rank - 1 - i));
  }
  return perm;
}

const PassInfo kFoldReshapeTransposeInfo{
    "fold-reshape-transpose",
    "Collapse chains of reshapes and of transposes; drop identity ones",
    "Collapses chains of reshapes (reshape, flatten, squeeze, unsqueeze) into one reshape "
    "and chains of transposes into one transpose; removes identity ones.",
    {
        {"reshapes-collapsed", "chains of reshapes made one"},
        {"reshapes-removed", "identity reshapes removed"},
        {"transposes-collapsed", "chains of transposes made one"},
        {"transposes-removed", "identity transposes removed"},
    }};

class FoldReshapeTranspose final : public FunctionPass {
public:
  const PassInfo &info() const override { return kFoldReshapeTransposeInfo; }

  Expected<Function> runOnFunction(const Module &, const std::string &, const Function &f,
                                   PassContext &ctx) override {
    return rewriteFunction(f, [&](const Expr &, const Expr &node) -> Expected<Expr> {
      if (isShapeChange(node)) {
        const auto *c = node->as<CallNode>();
        Expr input = c->args()[0];
        bool chained = false;
        while (isShapeChange(input)) {
          input = input->as<CallNode>()->args()[0];
          chained = true;
        }
        const Shape &target = node->type().shape();
        if (input->type().shape() == target) {
          ++ctx.stat("reshapes-removed");
          return input;
        }
        bool hasZero = std::find(target.begin(), target.end(), 0) != target.end();
        if (!chained || hasZero) // a 0 in newshape would mean "copy the input dim"
          return node;
        ++ctx.stat("reshapes-collapsed");
        return makeCall("reshape", {input},
                        {{"newshape", std::vector<int64_t>(target.begin(), target.end())}},
                        c->name(), c->span());
      }
      if (const auto *t = transposeOf(node)) {
        Expr input = t->args()[0];
        std::vector<int64_t> perm = permOf(*t);
        bool chained = false;
        // out[i] = in[perm[i]]; through an inner transpose in[j] = x[inner[j]].
        while (const auto *inner = transposeOf(input)) {
          auto ip = permOf(*inner);
          for (auto &p : perm)
            p = ip[size_t(p)];
          input = inner->args()[0];
          chained = true;
        }
        bool identity = true;
        for (size_t i = 0; i < perm.size(); ++i)
          identity = identity && perm[i] == int64_t(i);
        if (identity) {
          ++ctx.stat("transposes-removed");
          return input;
        }
        if (!chained)
          return node;
        ++ctx.stat("transposes-collapsed");
        return makeCall("transpose", {input}, {{"perm", perm}}, t->name(), t->span());
      }
      return node;
    });
  }
};

} // namespace

std::unique_ptr<Pass> createFoldReshapeTransposePass() {
  return std::make_unique<FoldReshapeTranspose>();
}

} // namespace tessera::passes
