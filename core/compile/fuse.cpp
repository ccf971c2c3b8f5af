//===- compile/fuse.cpp - Fuse elementwise chains on the host -------------===//
#include "compile/fuse.h"

#include "codegen/elementwise.h"
#include "ir/visit.h"

#include <fmt/format.h>

namespace tessera::compile {

namespace {

bool isScalarF32Constant(const ir::ExprNode &n) {
  const auto *c = n.as<ir::ConstantNode>();
  return c && c->data().dtype() == ir::DType::F32 && c->data().numel() == 1;
}

/// A fusible op whose every operand is either of its own shape or a scalar
/// f32 constant (what the fused loop can read).
bool fusible(const ir::NodeIndex &index, size_t i) {
  const ir::ExprNode &n = *index.node(i);
  if (!codegen::isFusibleElementwise(n))
    return false;
  for (int j : index.operands(i)) {
    const ir::ExprNode &arg = *index.node(size_t(j));
    if (isScalarF32Constant(arg))
      continue;
    if (!arg.type().isTensor() || arg.type() != n.type())
      return false;
  }
  return true;
}

} // namespace

bool isHostFusedCall(const ir::CallNode &call) {
  const ir::FunctionNode *fn = call.localFn();
  return fn && fn->attrs().getBool(kHostFusedAttr, false);
}

Expected<ir::Function> fuseElementwise(const ir::Function &fn, FuseStats *stats) {
  ir::NodeIndex index(fn->body(), /*intoFunctions=*/false);
  const size_t n = index.size();
  std::vector<int> uses = ir::useCountsByPosition(index);
  // owner[j]: the consumer that absorbed j (-1: j is a tree root or not fusible).
  std::vector<int64_t> owner(n, -1);
  std::vector<char> isFusible(n, 0);
  std::vector<size_t> treeSize(n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (!fusible(index, i))
      continue;
    isFusible[i] = 1;
    treeSize[i] = 1;
    for (int j : index.operands(i)) {
      auto sj = size_t(j);
      if (isFusible[sj] && owner[sj] < 0 && uses[sj] == 1 && sj != i) {
        owner[sj] = int64_t(i);
        treeSize[i] += treeSize[sj];
      }
    }
  }

  FuseStats local;
  auto rewritten = ir::rewrite(index, [&](size_t i, const ir::Expr &, const ir::Expr &rebuilt,
                                          std::span<const ir::Expr> replaced) -> Expected<ir::Expr> {
    if (!isFusible[i] || owner[i] >= 0 || treeSize[i] < 2)
      return rebuilt;
    // The tree's members in post-order (operands before users).
    std::vector<size_t> members, stack{i};
    while (!stack.empty()) {
      size_t m = stack.back();
      stack.pop_back();
      members.push_back(m);
      for (int j : index.operands(m))
        if (owner[size_t(j)] == int64_t(m))
          stack.push_back(size_t(j));
    }
    std::sort(members.begin(), members.end());
    std::unordered_map<size_t, ir::Expr> clones;
    std::unordered_map<size_t, ir::Var> params;
    std::vector<ir::Var> paramList;
    std::vector<ir::Expr> callArgs;
    for (size_t m : members) {
      const auto *call = index.node(m)->as<ir::CallNode>();
      std::vector<ir::Expr> args;
      for (int j : index.operands(m)) {
        auto sj = size_t(j);
        if (owner[sj] == int64_t(m)) {
          args.push_back(clones.at(sj));
        } else if (isScalarF32Constant(*index.node(sj))) {
          args.push_back(index.expr(sj));
        } else {
          auto [it, added] = params.try_emplace(sj);
          if (added) {
            it->second = ir::makeVar(fmt::format("p{}", paramList.size()), index.node(sj)->type());
            paramList.push_back(it->second);
            callArgs.push_back(replaced[sj]);
          }
          args.push_back(it->second);
        }
      }
      TS_ASSIGN_OR_RETURN(ir::Expr clone,
                          ir::makeCall(call->op(), std::move(args), call->attrs(), call->name()));
      clones[m] = std::move(clone);
    }
    ir::Attrs attrs;
    attrs.set(kHostFusedAttr, true);
    ir::Function body = ir::makeFunction(std::move(paramList), clones.at(i), std::move(attrs));
    ++local.groups;
    local.fusedOps += members.size();
    return ir::makeLocalCall(body, std::move(callArgs), index.node(i)->name(),
                             index.node(i)->span());
  });
  if (!rewritten)
    return std::move(rewritten).error();
  if (stats)
    *stats = local;
  return ir::makeFunction(fn->params(), *rewritten, fn->attrs(), fn->name(), fn->span());
}

} // namespace tessera::compile
