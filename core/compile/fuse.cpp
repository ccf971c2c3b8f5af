//===- compile/fuse.cpp - Fuse elementwise chains on the host -------------===//
#include "compile/fuse.h"

#include "ir/symbol.h"

#include "codegen/elementwise.h"
#include "ir/visit.h"

#include <fmt/format.h>

namespace tessera::compile {

namespace {

bool isScalarF32Constant(const ir::ExprNode &n) {
  const auto *c = n.as<ir::ConstantNode>();
  return c && c->data().dtype() == ir::DType::F32 && c->data().numel() == 1;
}

bool isF32Tensor(const ir::Type &t) { return t.isTensor() && t.dtype() == ir::DType::F32; }

bool isBiasAdd(const ir::ExprNode &n) {
  const auto *call = n.as<ir::CallNode>();
  return call && call->op() && call->op()->name == "bias_add" && isF32Tensor(call->type());
}

/// The shape bias_add's 1-D bias takes to broadcast along its axis in numpy
/// style: [C, 1, ..., 1] with one 1 per dim after the axis.
ir::Shape biasShape(const ir::CallNode &biasAdd) {
  const int64_t rank = int64_t(biasAdd.type().rank());
  int64_t axis = biasAdd.attrs().getInt("axis", 1);
  if (axis < 0)
    axis += rank;
  ir::Shape shape{biasAdd.type().shape()[size_t(axis)]};
  shape.resize(size_t(rank - axis), 1);
  return shape;
}

} // namespace

bool isRows(const ir::Type &t) {
  if (!t.isTensor() || t.rank() == 0 || !ir::isSymbol(t.shape()[0]))
    return false;
  for (size_t d = 1; d < t.rank(); ++d)
    if (ir::isSymbol(t.shape()[d]))
      return false;
  return true;
}

bool rowsFit(const ir::Type &out, const std::vector<ir::Type> &operands) {
  if (!isRows(out))
    return false;
  for (const ir::Type &t : operands)
    if (t != out && !(t.isTensor() && t.isStatic() && (t.rank() < out.rank() || t.shape()[0] == 1)))
      return false;
  return true;
}

namespace {

/// Can the fused loop compute node i? A fusible elementwise op, or a
/// bias_add; its operands the node's own type, scalar f32 constants, or
/// (binary ops, bias) f32 tensors the loop reads with broadcasting.
bool fusible(const ir::NodeIndex &index, size_t i) {
  const ir::ExprNode &n = *index.node(i);
  if (isBiasAdd(n))
    return index.node(size_t(index.operands(i)[0]))->type() == n.type();
  if (!codegen::isFusibleElementwise(n))
    return false;
  const bool binary = index.operands(i).size() == 2;
  for (int j : index.operands(i)) {
    const ir::ExprNode &arg = *index.node(size_t(j));
    if (isScalarF32Constant(arg) || arg.type() == n.type())
      continue;
    if (!binary || !isF32Tensor(arg.type()))
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
      // Only a producer of the consumer's own shape joins the tree (a
      // broadcast operand is read in place, not recomputed per element).
      if (isFusible[sj] && owner[sj] < 0 && uses[sj] == 1 && sj != i &&
          index.node(sj)->type() == index.node(i)->type()) {
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
    // Parameters by operand position; a bias (reshaped to broadcast) apart.
    std::unordered_map<size_t, ir::Var> params, biasParams;
    std::vector<ir::Var> paramList;
    std::vector<ir::Expr> callArgs;
    auto param = [&](size_t sj, bool bias, const ir::CallNode *biasAdd) -> Expected<ir::Var> {
      auto [it, added] = (bias ? biasParams : params).try_emplace(sj);
      if (added) {
        ir::Expr arg = replaced[sj];
        if (bias) { // the bias as [C, 1, ..., 1], outside the fused function
          ir::Shape shape = biasShape(*biasAdd);
          if (const auto *c = arg->as<ir::ConstantNode>()) {
            arg = ir::makeConstant(c->data().reshaped(shape), c->name());
          } else {
            TS_ASSIGN_OR_RETURN(arg, ir::makeCall("reshape", {arg}, {{"newshape", shape}},
                                                  arg->name().empty() ? "" : arg->name() + ".bias"));
          }
        }
        it->second = ir::makeVar(fmt::format("p{}", paramList.size()), arg->type());
        paramList.push_back(it->second);
        callArgs.push_back(std::move(arg));
      }
      return it->second;
    };
    for (size_t m : members) {
      const auto *call = index.node(m)->as<ir::CallNode>();
      const bool biasAdd = isBiasAdd(*call);
      std::vector<ir::Expr> args;
      auto operands = index.operands(m);
      for (size_t k = 0; k < operands.size(); ++k) {
        auto sj = size_t(operands[k]);
        if (owner[sj] == int64_t(m)) {
          args.push_back(clones.at(sj));
        } else if (isScalarF32Constant(*index.node(sj)) && !(biasAdd && k == 1)) {
          args.push_back(index.expr(sj));
        } else {
          TS_ASSIGN_OR_RETURN(ir::Var p, param(sj, biasAdd && k == 1, call));
          args.push_back(p);
        }
      }
      // bias_add(x, b) is add(x, b as [C, 1, ..., 1]) inside the loop.
      TS_ASSIGN_OR_RETURN(ir::Expr clone,
                          biasAdd ? ir::makeCall("add", std::move(args), {}, call->name())
                                  : ir::makeCall(call->op(), std::move(args), call->attrs(),
                                                 call->name()));
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
