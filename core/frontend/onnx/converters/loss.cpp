//===- frontend/onnx/converters/loss.cpp - ONNX loss and index converters ---===//
//
// Converters for the ONNX losses and index-driven ops:
//   NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss  composed from
//       log_softmax, gather_elements, gather, equal, where, reduce_sum, ...
//   Einsum                      composed from transpose, slice (diagonals),
//                               reduce_sum and batch_matmul
//   GatherND, ScatterND, ScatterElements, Scatter  the core index ops
//   MeanVarianceNormalization   composed from reduce_mean, sqrt, ...
//   Compress                    gather with the indices of a constant condition
//   ReverseSequence             gather_elements with computed indices
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/converters/common.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

namespace tessera::frontend::onnx {

namespace {

using ir::DType;
using ir::Expr;
using ir::Tensor;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

Expr scalarInt(NodeContext &ctx, DType dt, int64_t v) {
  return ctx.constant(Tensor::fromInts(dt, {}, std::vector<int64_t>{v}));
}

/// Sum over `axes` (dropped); nothing to do for no axes.
Expected<Expr> sumOver(NodeContext &ctx, const Expr &x, const Ints &axes) {
  if (axes.empty())
    return x;
  return ctx.call("reduce_sum", {x}, {{"axes", axes}, {"keepdims", false}});
}

/// Sum (or mean) of every element, as a scalar.
Expected<Expr> reduceAll(NodeContext &ctx, std::string_view op, const Expr &x) {
  return ctx.call(op, {x}, {{"axes", Ints{}}, {"keepdims", false}});
}

Expected<Expr> integerInput(NodeContext &ctx, size_t i, std::string_view name) {
  TS_ASSIGN_OR_RETURN(Expr e, tensorInput(ctx, i, name));
  if (!ir::isInteger(dtypeOf(e)))
    return ctx.error("input {} ('{}') must be an integer tensor, got {}", i, name, e->type().str());
  return e;
}

//===----------------------------------------------------------------------===//
// NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss
//===----------------------------------------------------------------------===//

/// The loss of log-probabilities `logp` [N, C, d1, ...] for targets
/// [N, d1, ...] (ONNX NegativeLogLikelihoodLoss, opsets 12-17):
///   loss[n, d] = -logp[n, target[n, d], d] * weight[target[n, d]]
/// where targets equal to 'ignore_index' contribute 0 (any value, even one
/// outside 0..C-1, may be ignored). Reduction "none" keeps the target shape;
/// "sum" sums; "mean" divides the sum by the sum of the weights of the
/// targets not ignored (by their count without a weight).
Expected<Expr> nllLoss(NodeContext &ctx, const Expr &logp, const Expr &target,
                       std::optional<Expr> weight) {
  TS_ASSIGN_OR_RETURN(std::string reduction, ctx.attrString("reduction", std::string("mean")));
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    return ctx.error("attribute 'reduction' = \"{}\" is not one of \"none\", \"sum\", \"mean\"",
                     reduction);
  std::optional<int64_t> ignoreIndex;
  if (ctx.hasAttr("ignore_index")) {
    TS_ASSIGN_OR_RETURN(ignoreIndex, ctx.attrInt("ignore_index"));
  }
  const ir::Shape &xs = shapeOf(logp), &ts = shapeOf(target);
  if (!ir::isFloat(dtypeOf(logp)))
    return ctx.error("input 0 must be a float tensor, got {}", logp->type().str());
  if (xs.size() < 2)
    return ctx.error("input 0 must have shape [N, C, d1, ...], got {}", logp->type().str());
  ir::Shape want = xs;
  want.erase(want.begin() + 1);
  if (ts != want)
    return ctx.error("the target must have shape {} (input {} without C), got {}",
                     ir::shapeStr(want), logp->type().str(), target->type().str());
  int64_t C = xs[1];
  if (weight) {
    if (dtypeOf(*weight) != dtypeOf(logp) || shapeOf(*weight) != Ints{C})
      return ctx.error("the weight must be {}[{}], got {}", ir::dtypeName(dtypeOf(logp)), C,
                       (*weight)->type().str());
  }

  // Ignored targets read class 0 (any valid class) and are masked below.
  Expr safeTarget = target;
  std::optional<Expr> ignored;
  DType tt = dtypeOf(target);
  if (ignoreIndex) {
    TS_ASSIGN_OR_RETURN(Expr eq, ctx.call("equal", {target, scalarInt(ctx, tt, *ignoreIndex)}));
    ignored = eq;
    TS_ASSIGN_OR_RETURN(safeTarget, ctx.call("where", {eq, scalarInt(ctx, tt, 0), target}));
  }
  TS_ASSIGN_OR_RETURN(Expr idx, ctx.call("unsqueeze", {safeTarget}, {{"axes", Ints{1}}}));
  TS_ASSIGN_OR_RETURN(Expr picked, ctx.call("gather_elements", {logp, idx}, {{"axis", 1}}));
  TS_ASSIGN_OR_RETURN(picked, reshapeTo(ctx, picked, ts));
  TS_ASSIGN_OR_RETURN(Expr loss, ctx.call("neg", {picked}));

  // The per-element weights, when there are any (a weight input or ignored
  // targets); ignored elements get weight 0 and loss 0.
  DType dt = dtypeOf(logp);
  std::optional<Expr> w;
  if (weight) {
    TS_ASSIGN_OR_RETURN(Expr g, ctx.call("gather", {*weight, safeTarget}, {{"axis", 0}}));
    TS_ASSIGN_OR_RETURN(loss, ctx.call("multiply", {loss, g}));
    w = g;
  }
  if (ignored) {
    Expr zero = scalar(ctx, dt, 0);
    TS_ASSIGN_OR_RETURN(loss, ctx.call("where", {*ignored, zero, loss}));
    TS_ASSIGN_OR_RETURN(w, ctx.call("where", {*ignored, zero, w ? *w : scalar(ctx, dt, 1)}));
  }

  if (reduction == "none")
    return loss;
  TS_ASSIGN_OR_RETURN(Expr sum, reduceAll(ctx, "reduce_sum", loss));
  if (reduction == "sum")
    return sum;
  if (!w)
    return reduceAll(ctx, "reduce_mean", loss);
  TS_ASSIGN_OR_RETURN(Expr total, reduceAll(ctx, "reduce_sum", *w));
  return ctx.call("divide", {sum, total});
}

/// NegativeLogLikelihoodLoss (opsets 12-17): input [N, C, d1, ...], target
/// [N, d1, ...], optional weight [C]; reduction, ignore_index.
Expected<Outputs> convertNLL(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr x, tensorInput(ctx, 0, "input"));
  TS_ASSIGN_OR_RETURN(Expr target, integerInput(ctx, 1, "target"));
  std::optional<Expr> weight;
  if (ctx.hasInput(2)) {
    TS_ASSIGN_OR_RETURN(weight, tensorInput(ctx, 2, "weight"));
  }
  TS_ASSIGN_OR_RETURN(Expr loss, nllLoss(ctx, x, target, weight));
  return Outputs{loss};
}

/// SoftmaxCrossEntropyLoss (opsets 12-17): the NLL loss of
/// log_softmax(scores, axis 1); the optional second output is that
/// log_softmax.
Expected<Outputs> convertSCE(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr x, tensorInput(ctx, 0, "scores"));
  TS_ASSIGN_OR_RETURN(Expr target, integerInput(ctx, 1, "labels"));
  std::optional<Expr> weight;
  if (ctx.hasInput(2)) {
    TS_ASSIGN_OR_RETURN(weight, tensorInput(ctx, 2, "weights"));
  }
  if (rankOf(x) < 2)
    return ctx.error("input 0 must have shape [N, C, d1, ...], got {}", x->type().str());
  TS_ASSIGN_OR_RETURN(Expr logp, ctx.call("log_softmax", {x}, {{"axis", 1}}));
  TS_ASSIGN_OR_RETURN(Expr loss, nllLoss(ctx, logp, target, weight));
  if (ctx.numOutputs() >= 2)
    return Outputs{loss, logp};
  return Outputs{loss};
}

//===----------------------------------------------------------------------===//
// Einsum
//===----------------------------------------------------------------------===//

// Labels: a letter is its character code; the dims an ellipsis stands for
// are kEllipsisLabel + 0..E-1, right-aligned across the operands (numpy
// broadcasting).
constexpr int kEllipsisLabel = 1000;

struct EinsumTerm {
  std::vector<int> letters; // in order, -1 where the ellipsis is
  bool ellipsis = false;
};

/// One term of the equation: letters and at most one "...".
Expected<EinsumTerm> parseTerm(NodeContext &ctx, std::string_view s) {
  EinsumTerm t;
  for (size_t i = 0; i < s.size();) {
    char c = s[i];
    if (c == '.') {
      if (s.substr(i, 3) != "..." || t.ellipsis)
        return ctx.error("equation term '{}' has a malformed or second ellipsis", s);
      t.ellipsis = true;
      t.letters.push_back(-1);
      i += 3;
    } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      t.letters.push_back(c);
      ++i;
    } else {
      return ctx.error("equation term '{}' has the invalid character '{}'", s, c);
    }
  }
  return t;
}

/// An operand during the contraction: its expression and one label per dim.
struct Labeled {
  Expr x;
  std::vector<int> labels;
};

int findLabel(const std::vector<int> &labels, int l) {
  auto it = std::find(labels.begin(), labels.end(), l);
  return it == labels.end() ? -1 : int(it - labels.begin());
}

/// Replaces the first repeated label by its diagonal, until no label repeats:
/// the two dims go last, merge into n*n and a slice with step n+1 keeps the
/// diagonal (exact).
Expected<Labeled> takeDiagonals(NodeContext &ctx, Labeled op) {
  for (bool again = true; again;) {
    again = false;
    for (size_t p = 0; p < op.labels.size() && !again; ++p)
      for (size_t q = p + 1; q < op.labels.size() && !again; ++q) {
        if (op.labels[p] != op.labels[q])
          continue;
        const ir::Shape &s = shapeOf(op.x);
        int64_t n = s[p];
        if (s[q] != n)
          return ctx.error("label '{}' is repeated in one operand with dims {} and {}",
                           char(op.labels[p]), n, s[q]);
        Ints perm, shape;
        std::vector<int> labels;
        for (size_t i = 0; i < s.size(); ++i)
          if (i != p && i != q) {
            perm.push_back(int64_t(i));
            shape.push_back(s[i]);
            labels.push_back(op.labels[i]);
          }
        perm.push_back(int64_t(p));
        perm.push_back(int64_t(q));
        shape.push_back(n * n);
        labels.push_back(op.labels[p]);
        TS_ASSIGN_OR_RETURN(Expr t, transpose(ctx, op.x, perm));
        TS_ASSIGN_OR_RETURN(t, reshapeTo(ctx, t, shape));
        int64_t last = int64_t(shape.size()) - 1;
        if (n > 0) {
          TS_ASSIGN_OR_RETURN(t, ctx.call("slice", {t},
                                          {{"starts", Ints{0}},
                                           {"ends", Ints{n * n}},
                                           {"axes", Ints{last}},
                                           {"steps", Ints{n + 1}}}));
        }
        op = Labeled{t, labels};
        again = true;
      }
  }
  return op;
}

/// Sums out the dims whose labels are not in `keep`.
Expected<Labeled> sumOutExcept(NodeContext &ctx, Labeled op, const std::set<int> &keep) {
  Ints axes;
  std::vector<int> labels;
  for (size_t i = 0; i < op.labels.size(); ++i) {
    if (keep.count(op.labels[i]))
      labels.push_back(op.labels[i]);
    else
      axes.push_back(int64_t(i));
  }
  TS_ASSIGN_OR_RETURN(Expr x, sumOver(ctx, op.x, axes));
  return Labeled{x, labels};
}

/// Broadcasts the dims of `op` to `dims` (per label) where they are 1.
Expected<Expr> broadcastTo(NodeContext &ctx, const Labeled &op,
                           const std::map<int, int64_t> &dims) {
  Ints shape;
  for (int l : op.labels)
    shape.push_back(dims.at(l));
  if (shape == shapeOf(op.x))
    return op.x;
  return ctx.call("expand", {op.x}, {{"shape", shape}});
}

/// Contracts two operands with one batch_matmul: labels in both that are
/// kept are batch dims, labels in both that are not are summed, the others
/// stay. The result's labels: batch, then a's own, then b's own.
Expected<Labeled> contractPair(NodeContext &ctx, const Labeled &a, const Labeled &b,
                               const std::set<int> &keep, const std::map<int, int64_t> &dims) {
  std::vector<int> batch, summed, aOnly, bOnly;
  for (int l : a.labels) {
    if (findLabel(b.labels, l) < 0)
      aOnly.push_back(l);
    else if (keep.count(l))
      batch.push_back(l);
    else
      summed.push_back(l);
  }
  for (int l : b.labels)
    if (findLabel(a.labels, l) < 0)
      bOnly.push_back(l);
  auto size = [&](const std::vector<int> &ls) {
    int64_t n = 1;
    for (int l : ls)
      n *= dims.at(l);
    return n;
  };
  auto arrange = [&](const Labeled &op, std::vector<std::vector<int>> groups,
                     Ints shape3) -> Expected<Expr> {
    TS_ASSIGN_OR_RETURN(Expr x, broadcastTo(ctx, op, dims));
    Ints perm;
    for (const auto &g : groups)
      for (int l : g)
        perm.push_back(findLabel(op.labels, l));
    TS_ASSIGN_OR_RETURN(x, transpose(ctx, x, perm));
    return reshapeTo(ctx, x, shape3);
  };
  int64_t B = size(batch), M = size(aOnly), K = size(summed), N = size(bOnly);
  TS_ASSIGN_OR_RETURN(Expr a3, arrange(a, {batch, aOnly, summed}, {B, M, K}));
  TS_ASSIGN_OR_RETURN(Expr b3, arrange(b, {batch, summed, bOnly}, {B, K, N}));
  Expr c;
  if (B * M * N == 0 || K == 0) {
    // Nothing to multiply: an empty result, or sums over nothing (zeros).
    c = ctx.constant(Tensor(dtypeOf(a.x), {B, M, N}));
  } else {
    TS_ASSIGN_OR_RETURN(c, ctx.call("batch_matmul", {a3, b3}));
  }
  std::vector<int> labels = batch;
  labels.insert(labels.end(), aOnly.begin(), aOnly.end());
  labels.insert(labels.end(), bOnly.begin(), bOnly.end());
  Ints shape;
  for (int l : labels)
    shape.push_back(dims.at(l));
  TS_ASSIGN_OR_RETURN(c, reshapeTo(ctx, c, shape));
  return Labeled{c, labels};
}

/// Einsum (opsets 12-17): explicit ("ij,jk->ik") and implicit ("ij,jk")
/// outputs, ellipsis with broadcasting, repeated labels (diagonals), any
/// number of operands (contracted left to right).
Expected<Outputs> convertEinsum(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(std::string eq, ctx.attrString("equation"));
  std::string s;
  for (char c : eq)
    if (c != ' ' && c != '\t' && c != '\n')
      s.push_back(c);
  size_t arrow = s.find("->");
  std::string lhs = s.substr(0, arrow);
  std::vector<EinsumTerm> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    TS_ASSIGN_OR_RETURN(EinsumTerm t,
                        parseTerm(ctx, std::string_view(lhs).substr(start, comma - start)));
    terms.push_back(std::move(t));
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  if (terms.size() != ctx.numInputs())
    return ctx.error("equation '{}' has {} operands, the node has {} inputs", eq, terms.size(),
                     ctx.numInputs());

  // Labels of every operand, with the ellipsis expanded.
  std::vector<Labeled> ops;
  int64_t E = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    TS_ASSIGN_OR_RETURN(Expr x, tensorInput(ctx, i, "Inputs"));
    int64_t letters = int64_t(terms[i].letters.size()) - (terms[i].ellipsis ? 1 : 0);
    int64_t r = rankOf(x);
    if (terms[i].ellipsis ? r < letters : r != letters)
      return ctx.error("equation term {} names {} dims, input {} is {}", i, letters, i,
                       x->type().str());
    E = std::max(E, r - letters);
    ops.push_back(Labeled{x, {}});
  }
  for (size_t i = 0; i < terms.size(); ++i) {
    int64_t e = rankOf(ops[i].x) - int64_t(terms[i].letters.size()) + 1;
    for (int l : terms[i].letters) {
      if (l >= 0) {
        ops[i].labels.push_back(l);
        continue;
      }
      for (int64_t j = 0; j < e; ++j)
        ops[i].labels.push_back(kEllipsisLabel + int(E - e + j));
    }
  }

  // The output labels: explicit, or (implicit) the ellipsis then every
  // letter used once, in alphabetical order.
  std::vector<int> out;
  if (arrow != std::string::npos) {
    TS_ASSIGN_OR_RETURN(EinsumTerm t, parseTerm(ctx, std::string_view(s).substr(arrow + 2)));
    for (int l : t.letters) {
      if (l < 0) {
        for (int64_t j = 0; j < E; ++j)
          out.push_back(kEllipsisLabel + int(j));
        continue;
      }
      if (findLabel(out, l) >= 0)
        return ctx.error("output label '{}' appears more than once", char(l));
      bool used = false;
      for (const auto &t2 : terms)
        used = used || findLabel(t2.letters, l) >= 0;
      if (!used)
        return ctx.error("output label '{}' is not in any input term", char(l));
      out.push_back(l);
    }
  } else {
    for (int64_t j = 0; j < E; ++j)
      out.push_back(kEllipsisLabel + int(j));
    std::map<int, int> count;
    for (const auto &t : terms)
      for (int l : t.letters)
        if (l >= 0)
          ++count[l];
    for (auto [l, n] : count)
      if (n == 1)
        out.push_back(l);
  }

  // The size of every label (size-1 dims broadcast).
  std::map<int, int64_t> dims;
  for (const auto &op : ops)
    for (size_t i = 0; i < op.labels.size(); ++i) {
      int64_t d = shapeOf(op.x)[i];
      auto [it, fresh] = dims.emplace(op.labels[i], d);
      if (fresh || it->second == d || d == 1)
        continue;
      if (it->second != 1)
        return ctx.error("label '{}' has dims {} and {}",
                         op.labels[i] >= kEllipsisLabel ? '.' : char(op.labels[i]), it->second, d);
      it->second = d;
    }

  // Diagonals, then labels used by one operand only are summed right away.
  std::set<int> outSet(out.begin(), out.end());
  for (size_t i = 0; i < ops.size(); ++i) {
    TS_ASSIGN_OR_RETURN(ops[i], takeDiagonals(ctx, ops[i]));
    std::set<int> keep = outSet;
    for (size_t j = 0; j < ops.size(); ++j)
      if (j != i)
        keep.insert(ops[j].labels.begin(), ops[j].labels.end());
    TS_ASSIGN_OR_RETURN(ops[i], sumOutExcept(ctx, ops[i], keep));
  }
  Labeled acc = ops[0];
  for (size_t i = 1; i < ops.size(); ++i) {
    std::set<int> keep = outSet;
    for (size_t j = i + 1; j < ops.size(); ++j)
      keep.insert(ops[j].labels.begin(), ops[j].labels.end());
    TS_ASSIGN_OR_RETURN(acc, contractPair(ctx, acc, ops[i], keep, dims));
  }
  // A single operand may still have size-1 dims of broadcast labels.
  TS_ASSIGN_OR_RETURN(Expr y, broadcastTo(ctx, acc, dims));
  Ints perm;
  for (int l : out)
    perm.push_back(findLabel(acc.labels, l));
  TS_ASSIGN_OR_RETURN(y, transpose(ctx, y, perm));
  return Outputs{y};
}

//===----------------------------------------------------------------------===//
// Index ops
//===----------------------------------------------------------------------===//

/// GatherND (opsets 11-17): batch_dims (12+), negative indices.
Expected<Outputs> convertGatherND(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr data, tensorInput(ctx, 0, "data"));
  TS_ASSIGN_OR_RETURN(Expr indices, tensorInput(ctx, 1, "indices"));
  TS_ASSIGN_OR_RETURN(int64_t batchDims, ctx.attrInt("batch_dims", int64_t{0}));
  TS_ASSIGN_OR_RETURN(Expr y, ctx.call("gather_nd", {data, indices}, {{"batch_dims", batchDims}}));
  return Outputs{y};
}

/// The 'reduction' attribute of the scatter ops: "none", and from opset 16
/// "add" and "mul" (opset 18's "max"/"min" are beyond our opsets).
Expected<std::string> scatterReduction(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(std::string red, ctx.attrString("reduction", std::string("none")));
  if (red != "none" && red != "add" && red != "mul")
    return ctx.error("attribute 'reduction' = \"{}\" is not one of \"none\", \"add\", \"mul\"",
                     red);
  return red;
}

/// ScatterND (opsets 11-17): reduction none/add/mul (16+).
Expected<Outputs> convertScatterND(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr data, tensorInput(ctx, 0, "data"));
  TS_ASSIGN_OR_RETURN(Expr indices, tensorInput(ctx, 1, "indices"));
  TS_ASSIGN_OR_RETURN(Expr updates, tensorInput(ctx, 2, "updates"));
  TS_ASSIGN_OR_RETURN(std::string red, scatterReduction(ctx));
  TS_ASSIGN_OR_RETURN(Expr y,
                      ctx.call("scatter_nd", {data, indices, updates}, {{"reduction", red}}));
  return Outputs{y};
}

/// ScatterElements (opsets 11-17) and Scatter (9-10, the same op without
/// reduction): axis, negative indices, reduction none/add/mul (16+).
Expected<Outputs> convertScatterElements(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr data, tensorInput(ctx, 0, "data"));
  TS_ASSIGN_OR_RETURN(Expr indices, tensorInput(ctx, 1, "indices"));
  TS_ASSIGN_OR_RETURN(Expr updates, tensorInput(ctx, 2, "updates"));
  TS_ASSIGN_OR_RETURN(int64_t axis, ctx.attrInt("axis", int64_t{0}));
  TS_ASSIGN_OR_RETURN(std::string red, scatterReduction(ctx));
  TS_ASSIGN_OR_RETURN(Expr y, ctx.call("scatter_elements", {data, indices, updates},
                                       {{"axis", axis}, {"reduction", red}}));
  return Outputs{y};
}

/// The node's optional 'axis' (normalised), or, without one, axis 0 of
/// `x` flattened to 1-D (Compress and Unique treat a missing axis so).
Expected<int64_t> axisOrFlatten(NodeContext &ctx, Expr &x) {
  if (!ctx.hasAttr("axis")) {
    TS_ASSIGN_OR_RETURN(x, reshapeTo(ctx, x, Ints{x->type().numElements()}));
    return 0;
  }
  TS_ASSIGN_OR_RETURN(int64_t axis, ctx.attrInt("axis"));
  int64_t r = rankOf(x);
  if (axis < -r || axis >= r)
    return ctx.error("attribute 'axis' = {} is out of range for rank {}", axis, r);
  return axis < 0 ? axis + r : axis;
}

/// Compress (opsets 9-17): the condition must be a constant (it decides the
/// output shape); the entries along 'axis' (or of the flattened input
/// without it) whose condition is true, by gather. A condition shorter than
/// the axis selects nothing past its end; a true entry past the end is an
/// error.
Expected<Outputs> convertCompress(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr x, tensorInput(ctx, 0, "input"));
  TS_ASSIGN_OR_RETURN(const Tensor *cond, requireConstant(ctx, 1, "condition"));
  if (cond->rank() != 1)
    return ctx.error("input 1 ('condition') must be 1-D, got {}", cond->type().str());
  TS_ASSIGN_OR_RETURN(int64_t axis, axisOrFlatten(ctx, x));
  int64_t dim = shapeOf(x)[size_t(axis)];
  Ints picked;
  for (int64_t i = 0; i < cond->numel(); ++i)
    if (cond->getDouble(i) != 0) {
      if (i >= dim)
        return ctx.error("condition entry {} is true, but axis {} has size {}", i, axis, dim);
      picked.push_back(i);
    }
  if (picked.empty()) {
    ir::Shape s = shapeOf(x);
    s[size_t(axis)] = 0;
    return Outputs{ctx.constant(Tensor(dtypeOf(x), s))};
  }
  Expr indices = ctx.constant(Tensor::fromInts(DType::I64, {int64_t(picked.size())}, picked));
  TS_ASSIGN_OR_RETURN(Expr y, ctx.call("gather", {x, indices}, {{"axis", axis}}));
  return Outputs{y};
}

/// ReverseSequence (opsets 10-17): reverses the first sequence_lens[b]
/// entries along time_axis of every batch entry b (batch_axis, time_axis in
/// {0, 1}); gather_elements with the index where(t < len, len - 1 - t, t).
Expected<Outputs> convertReverseSequence(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr x, tensorInput(ctx, 0, "input"));
  TS_ASSIGN_OR_RETURN(Expr lens, integerInput(ctx, 1, "sequence_lens"));
  TS_ASSIGN_OR_RETURN(int64_t batchAxis, ctx.attrInt("batch_axis", int64_t{1}));
  TS_ASSIGN_OR_RETURN(int64_t timeAxis, ctx.attrInt("time_axis", int64_t{0}));
  int64_t r = rankOf(x);
  if (r < 2)
    return ctx.error("input 0 must have rank >= 2, got {}", x->type().str());
  if ((batchAxis != 0 && batchAxis != 1) || (timeAxis != 0 && timeAxis != 1) ||
      batchAxis == timeAxis)
    return ctx.error("batch_axis ({}) and time_axis ({}) must be 0 and 1 in some order", batchAxis,
                     timeAxis);
  const ir::Shape &s = shapeOf(x);
  int64_t B = s[size_t(batchAxis)], T = s[size_t(timeAxis)];
  if (shapeOf(lens) != Ints{B})
    return ctx.error("input 1 ('sequence_lens') must have shape [{}], got {}", B,
                     lens->type().str());
  DType lt = dtypeOf(lens);
  // Time positions and lengths shaped to broadcast against each other.
  Ints tShape(size_t(r), 1), bShape(size_t(r), 1);
  tShape[size_t(timeAxis)] = T;
  bShape[size_t(batchAxis)] = B;
  Ints positions(static_cast<size_t>(T));
  std::iota(positions.begin(), positions.end(), int64_t{0});
  Expr t = ctx.constant(Tensor::fromInts(lt, tShape, positions));
  TS_ASSIGN_OR_RETURN(Expr len, reshapeTo(ctx, lens, bShape));
  TS_ASSIGN_OR_RETURN(Expr lastPos, ctx.call("subtract", {len, scalarInt(ctx, lt, 1)}));
  TS_ASSIGN_OR_RETURN(Expr reversed, ctx.call("subtract", {lastPos, t}));
  TS_ASSIGN_OR_RETURN(Expr inside, ctx.call("less", {t, len}));
  TS_ASSIGN_OR_RETURN(Expr idx, ctx.call("where", {inside, reversed, t}));
  if (shapeOf(idx) != s) {
    TS_ASSIGN_OR_RETURN(idx, ctx.call("expand", {idx}, {{"shape", Ints(s)}}));
  }
  TS_ASSIGN_OR_RETURN(Expr y, ctx.call("gather_elements", {x, idx}, {{"axis", timeAxis}}));
  return Outputs{y};
}

//===----------------------------------------------------------------------===//
// Ops with data-dependent output shapes: NonZero, Unique, NonMaxSuppression.
// The static-shape IR needs their inputs as constants; the result is then a
// constant computed here.
//===----------------------------------------------------------------------===//

/// Limit on the elements of a constant built here (a malformed model must
/// not make the importer allocate without bound).
constexpr int64_t kMaxConstantElements = int64_t(1) << 28;

/// -1, 0 or 1 as element i of a compares with element j of b (same dtype):
/// floats by value (NaN after everything, NaNs equal), integers exactly
/// (u64 as unsigned).
int compareElements(const Tensor &a, int64_t i, const Tensor &b, int64_t j) {
  DType t = a.dtype();
  if (ir::isFloat(t)) {
    double x = a.getDouble(i), y = b.getDouble(j);
    bool nx = std::isnan(x), ny = std::isnan(y);
    if (nx || ny)
      return nx == ny ? 0 : (nx ? 1 : -1);
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (t == DType::U64) {
    uint64_t x = a.getUInt(i), y = b.getUInt(j);
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  int64_t x = a.getInt(i), y = b.getInt(j);
  return x < y ? -1 : (x > y ? 1 : 0);
}

/// NonZero (opsets 9-17): constant input; the i64 [rank, count] indices of
/// its non-zero elements in row-major order (a scalar counts as 1-D).
Expected<Outputs> convertNonZero(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(const Tensor *x, requireConstant(ctx, 0, "X"));
  ir::Shape shape = x->shape();
  if (shape.empty())
    shape = {1};
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < x->numel(); ++i)
    if (ir::isFloat(x->dtype()) ? x->getDouble(i) != 0 : x->getInt(i) != 0)
      hits.push_back(i);
  int64_t r = int64_t(shape.size()), n = int64_t(hits.size());
  Tensor out(DType::I64, {r, n});
  Ints idx(shape.size());
  for (int64_t k = 0; k < n; ++k) {
    int64_t flat = hits[size_t(k)];
    for (int64_t d = r - 1; d >= 0; --d) {
      idx[size_t(d)] = flat % shape[size_t(d)];
      flat /= shape[size_t(d)];
    }
    for (int64_t d = 0; d < r; ++d)
      out.data<int64_t>()[d * n + k] = idx[size_t(d)];
  }
  return Outputs{ctx.constant(std::move(out))};
}

/// Unique (opsets 11-17): constant input; the unique elements (or, with
/// 'axis', the unique slices along it), sorted ('sorted' = 1, slices
/// lexicographically) or in order of first occurrence; outputs Y, indices
/// (first occurrences), inverse_indices and counts (i64).
Expected<Outputs> convertUnique(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(const Tensor *xt, requireConstant(ctx, 0, "X"));
  TS_ASSIGN_OR_RETURN(int64_t sorted, ctx.attrInt("sorted", int64_t{1}));
  Expr x = ctx.input(0);
  TS_ASSIGN_OR_RETURN(int64_t axis, axisOrFlatten(ctx, x));
  const ir::Shape &s = shapeOf(x);
  int64_t n = s[size_t(axis)];
  int64_t inner = product(std::span(s).subspan(size_t(axis) + 1));
  int64_t outer = n == 0 ? 0 : x->type().numElements() / (n * inner);
  // Slice i along the axis: element (o, i, j) is flat (o * n + i) * inner + j.
  auto compareSlices = [&](int64_t a, int64_t b) {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < inner; ++j)
        if (int c = compareElements(*xt, (o * n + a) * inner + j, *xt, (o * n + b) * inner + j))
          return c;
    return 0;
  };
  Ints order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return compareSlices(a, b) < 0; });
  // Groups of equal slices in sorted order: first occurrence and members.
  struct Group {
    int64_t first;
    Ints members;
  };
  std::vector<Group> groups;
  for (size_t k = 0; k < order.size(); ++k) {
    if (k == 0 || compareSlices(order[k - 1], order[k]) != 0)
      groups.push_back(Group{order[k], {}});
    groups.back().members.push_back(order[k]);
  }
  if (!sorted)
    std::stable_sort(groups.begin(), groups.end(),
                     [](const Group &a, const Group &b) { return a.first < b.first; });
  int64_t u = int64_t(groups.size());
  Tensor indices(DType::I64, {u}), inverse(DType::I64, {n}), counts(DType::I64, {u});
  for (int64_t g = 0; g < u; ++g) {
    const Group &grp = groups[size_t(g)];
    indices.data<int64_t>()[g] = grp.first;
    counts.data<int64_t>()[g] = int64_t(grp.members.size());
    for (int64_t m : grp.members)
      inverse.data<int64_t>()[m] = g;
  }
  Expr y;
  if (u == 0) {
    y = ctx.constant(Tensor(dtypeOf(x), s));
  } else {
    TS_ASSIGN_OR_RETURN(y, ctx.call("gather", {x, ctx.constant(indices)}, {{"axis", axis}}));
  }
  return Outputs{y, ctx.constant(indices), ctx.constant(inverse), ctx.constant(counts)};
}

/// Whether boxes a and b (4 floats each) overlap with IoU above `threshold`
/// (ONNX NonMaxSuppression, computed in float as onnxruntime does).
bool suppressByIoU(const float *a, const float *b, bool centerBox, float threshold) {
  float ax0, ax1, ay0, ay1, bx0, bx1, by0, by1;
  if (centerBox) { // [x_center, y_center, width, height]
    ax0 = a[0] - a[2] / 2, ax1 = a[0] + a[2] / 2, ay0 = a[1] - a[3] / 2, ay1 = a[1] + a[3] / 2;
    bx0 = b[0] - b[2] / 2, bx1 = b[0] + b[2] / 2, by0 = b[1] - b[3] / 2, by1 = b[1] + b[3] / 2;
  } else { // [y1, x1, y2, x2], any pair of diagonal corners
    ax0 = std::min(a[1], a[3]), ax1 = std::max(a[1], a[3]);
    ay0 = std::min(a[0], a[2]), ay1 = std::max(a[0], a[2]);
    bx0 = std::min(b[1], b[3]), bx1 = std::max(b[1], b[3]);
    by0 = std::min(b[0], b[2]), by1 = std::max(b[0], b[2]);
  }
  float ix0 = std::max(ax0, bx0), ix1 = std::min(ax1, bx1);
  float iy0 = std::max(ay0, by0), iy1 = std::min(ay1, by1);
  if (ix1 <= ix0 || iy1 <= iy0)
    return false;
  float inter = (ix1 - ix0) * (iy1 - iy0);
  float areaA = (ax1 - ax0) * (ay1 - ay0), areaB = (bx1 - bx0) * (by1 - by0);
  float uni = areaA + areaB - inter;
  if (inter <= 0 || areaA <= 0 || areaB <= 0 || uni <= 0)
    return false;
  return inter / uni > threshold;
}

/// NonMaxSuppression (opsets 10-17): constant boxes [B, N, 4], scores
/// [B, C, N] and optional max_output_boxes_per_class (default 0: none),
/// iou_threshold (default 0), score_threshold (default: none);
/// center_point_box. Per batch and class, greedy selection by descending
/// score (ties: lower box index first) of boxes with score above the
/// threshold and IoU with every selected box at most iou_threshold. The
/// result: i64 [count, 3] rows (batch, class, box).
Expected<Outputs> convertNMS(NodeContext &ctx) {
  wishConstants(ctx, {0, 1, 2, 3, 4});
  TS_ASSIGN_OR_RETURN(const Tensor *boxes, requireConstant(ctx, 0, "boxes"));
  TS_ASSIGN_OR_RETURN(const Tensor *scores, requireConstant(ctx, 1, "scores"));
  auto optionalScalar = [&](size_t i, std::string_view name) -> Expected<std::optional<double>> {
    if (!ctx.hasInput(i))
      return std::optional<double>();
    TS_ASSIGN_OR_RETURN(const Tensor *t, requireConstant(ctx, i, name));
    if (t->numel() != 1)
      return ctx.error("input {} ('{}') must have one element, got {}", i, name, t->type().str());
    return std::optional<double>(ir::isFloat(t->dtype()) ? t->getDouble(0) : double(t->getInt(0)));
  };
  TS_ASSIGN_OR_RETURN(auto maxOut, optionalScalar(2, "max_output_boxes_per_class"));
  TS_ASSIGN_OR_RETURN(auto iou, optionalScalar(3, "iou_threshold"));
  TS_ASSIGN_OR_RETURN(auto scoreMin, optionalScalar(4, "score_threshold"));
  TS_ASSIGN_OR_RETURN(int64_t centerBox, ctx.attrInt("center_point_box", int64_t{0}));
  if (centerBox != 0 && centerBox != 1)
    return ctx.error("attribute 'center_point_box' = {} must be 0 or 1", centerBox);
  const ir::Shape &bs = boxes->shape(), &ss = scores->shape();
  if (bs.size() != 3 || bs[2] != 4 || ss.size() != 3 || ss[0] != bs[0] || ss[2] != bs[1])
    return ctx.error("boxes must be [B, N, 4] and scores [B, C, N], got {} and {}",
                     boxes->type().str(), scores->type().str());
  int64_t B = bs[0], N = bs[1], C = ss[1];
  // At most N boxes per class can be selected anyway.
  double wanted = maxOut && *maxOut > 0 ? *maxOut : 0; // NaN too gives 0
  int64_t limit = int64_t(std::min(wanted, double(N)));
  float iouThreshold = float(iou.value_or(0.0));
  std::vector<float> box(static_cast<size_t>(boxes->numel()));
  for (int64_t i = 0; i < boxes->numel(); ++i)
    box[size_t(i)] = float(boxes->getDouble(i));

  Ints rows;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C; ++c) {
      std::vector<std::pair<float, int64_t>> cand;
      for (int64_t k = 0; k < N; ++k) {
        float sc = float(scores->getDouble((b * C + c) * N + k));
        if (!scoreMin || sc > float(*scoreMin))
          cand.emplace_back(sc, k);
      }
      std::stable_sort(cand.begin(), cand.end(),
                       [](const auto &x, const auto &y) { return x.first > y.first; });
      Ints selected;
      for (const auto &[sc, k] : cand) {
        if (int64_t(selected.size()) >= limit)
          break;
        const float *bk = &box[size_t((b * N + k) * 4)];
        bool suppressed = false;
        for (int64_t j : selected)
          suppressed = suppressed || suppressByIoU(&box[size_t((b * N + j) * 4)], bk,
                                                   centerBox == 1, iouThreshold);
        if (suppressed)
          continue;
        selected.push_back(k);
        rows.insert(rows.end(), {b, c, k});
        if (int64_t(rows.size()) > kMaxConstantElements)
          return ctx.error("too many selected boxes for a constant");
      }
    }
  int64_t count = int64_t(rows.size()) / 3;
  return Outputs{ctx.constant(Tensor::fromInts(DType::I64, {count, 3}, rows))};
}

//===----------------------------------------------------------------------===//
// Quantization: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
// MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv. Composed in f32
// (scales) and f64 (integer products, exact below 2^53), with round half to
// even and saturation to the 8-bit range.
//===----------------------------------------------------------------------===//

/// A scale or zero point shaped to broadcast against a rank-`rank` tensor:
/// one element becomes a scalar; a 1-D tensor of n > 1 elements lies along
/// `axis` (per-axis quantization).
Expected<Expr> alongAxis(NodeContext &ctx, const Expr &v, int64_t rank, int64_t axis,
                         std::string_view name) {
  int64_t n = v->type().numElements();
  if (n == 1)
    return reshapeTo(ctx, v, Ints{});
  if (rankOf(v) != 1)
    return ctx.error("{} must be a scalar or 1-D, got {}", name, v->type().str());
  if (axis < -rank || axis >= rank)
    return ctx.error("attribute 'axis' = {} is out of range for rank {}", axis, rank);
  if (axis < 0)
    axis += rank;
  Ints shape(static_cast<size_t>(rank), 1);
  shape[size_t(axis)] = n;
  return reshapeTo(ctx, v, shape);
}

/// saturate(round(xf / scale) + zero_point) in the zero point's dtype (u8
/// or i8); `scale` and `zp` already broadcastable.
Expected<Expr> quantize(NodeContext &ctx, const Expr &xf, const Expr &scale, const Expr &zp) {
  DType qt = dtypeOf(zp);
  if (qt != DType::U8 && qt != DType::I8)
    return ctx.error("the zero point must be u8 or i8, got {}", zp->type().str());
  TS_ASSIGN_OR_RETURN(Expr q, ctx.call("divide", {xf, scale}));
  TS_ASSIGN_OR_RETURN(q, ctx.call("round", {q}));
  TS_ASSIGN_OR_RETURN(Expr zf, castTo(ctx, zp, dtypeOf(xf)));
  TS_ASSIGN_OR_RETURN(q, ctx.call("add", {q, zf}));
  double lo = qt == DType::U8 ? 0 : -128, hi = qt == DType::U8 ? 255 : 127;
  TS_ASSIGN_OR_RETURN(q, ctx.call("clip", {q}, {{"min", lo}, {"max", hi}}));
  return castTo(ctx, q, qt);
}

/// The zero point input i, or a scalar 0 of `dt` when omitted.
Expected<Expr> zeroPoint(NodeContext &ctx, size_t i, DType dt) {
  if (ctx.hasInput(i))
    return tensorInput(ctx, i, "zero_point");
  return ctx.constant(Tensor(dt, {}));
}

/// (x - zero_point) as f64 (exact), zero point along `axis`.
Expected<Expr> centered(NodeContext &ctx, const Expr &x, const Expr &zp, int64_t axis) {
  TS_ASSIGN_OR_RETURN(Expr xf, castTo(ctx, x, DType::F64));
  TS_ASSIGN_OR_RETURN(Expr z, alongAxis(ctx, zp, rankOf(x), axis, "the zero point"));
  TS_ASSIGN_OR_RETURN(z, castTo(ctx, z, DType::F64));
  return ctx.call("subtract", {xf, z});
}

/// QuantizeLinear (opsets 10-17): per-tensor or per-axis ('axis', 13+)
/// scale and zero point (default u8 0).
Expected<Outputs> convertQuantizeLinear(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr x, tensorInput(ctx, 0, "x"));
  TS_ASSIGN_OR_RETURN(Expr scale, tensorInput(ctx, 1, "y_scale"));
  TS_ASSIGN_OR_RETURN(Expr zp, zeroPoint(ctx, 2, DType::U8));
  TS_ASSIGN_OR_RETURN(int64_t axis, ctx.attrInt("axis", int64_t{1}));
  TS_ASSIGN_OR_RETURN(scale, alongAxis(ctx, scale, rankOf(x), axis, "y_scale"));
  TS_ASSIGN_OR_RETURN(zp, alongAxis(ctx, zp, rankOf(x), axis, "y_zero_point"));
  TS_ASSIGN_OR_RETURN(Expr xf, castTo(ctx, x, dtypeOf(scale)));
  TS_ASSIGN_OR_RETURN(Expr y, quantize(ctx, xf, scale, zp));
  return Outputs{y};
}

/// DequantizeLinear (opsets 10-17): (x - zero_point) * scale, per tensor or
/// per axis ('axis', 13+), in the scale's dtype.
Expected<Outputs> convertDequantizeLinear(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr x, integerInput(ctx, 0, "x"));
  TS_ASSIGN_OR_RETURN(Expr scale, tensorInput(ctx, 1, "x_scale"));
  TS_ASSIGN_OR_RETURN(Expr zp, zeroPoint(ctx, 2, dtypeOf(x)));
  TS_ASSIGN_OR_RETURN(int64_t axis, ctx.attrInt("axis", int64_t{1}));
  DType ft = dtypeOf(scale);
  TS_ASSIGN_OR_RETURN(scale, alongAxis(ctx, scale, rankOf(x), axis, "x_scale"));
  TS_ASSIGN_OR_RETURN(zp, alongAxis(ctx, zp, rankOf(x), axis, "x_zero_point"));
  TS_ASSIGN_OR_RETURN(Expr xf, castTo(ctx, x, ft));
  TS_ASSIGN_OR_RETURN(Expr zf, castTo(ctx, zp, ft));
  TS_ASSIGN_OR_RETURN(Expr d, ctx.call("subtract", {xf, zf}));
  TS_ASSIGN_OR_RETURN(Expr y, ctx.call("multiply", {d, scale}));
  return Outputs{y};
}

/// DynamicQuantizeLinear (opsets 11-17): u8 quantization over the range
/// [min(0, min x), max(0, max x)], as ONNX's function body; outputs y,
/// y_scale, y_zero_point.
Expected<Outputs> convertDynamicQuantizeLinear(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr x, tensorInput(ctx, 0, "x"));
  if (dtypeOf(x) != DType::F32)
    return ctx.error("input 0 must be f32, got {}", x->type().str());
  Expr zero = scalar(ctx, DType::F32, 0);
  TS_ASSIGN_OR_RETURN(Expr lo, reduceAll(ctx, "reduce_min", x));
  TS_ASSIGN_OR_RETURN(lo, ctx.call("minimum", {lo, zero}));
  TS_ASSIGN_OR_RETURN(Expr hi, reduceAll(ctx, "reduce_max", x));
  TS_ASSIGN_OR_RETURN(hi, ctx.call("maximum", {hi, zero}));
  TS_ASSIGN_OR_RETURN(Expr range, ctx.call("subtract", {hi, lo}));
  TS_ASSIGN_OR_RETURN(Expr scale, ctx.call("divide", {range, scalar(ctx, DType::F32, 255)}));
  TS_ASSIGN_OR_RETURN(Expr zpf, ctx.call("divide", {lo, scale}));
  TS_ASSIGN_OR_RETURN(zpf, ctx.call("subtract", {zero, zpf}));
  TS_ASSIGN_OR_RETURN(zpf, ctx.call("clip", {zpf}, {{"min", 0.0}, {"max", 255.0}}));
  TS_ASSIGN_OR_RETURN(zpf, ctx.call("round", {zpf}));
  TS_ASSIGN_OR_RETURN(Expr zp, castTo(ctx, zpf, DType::U8));
  TS_ASSIGN_OR_RETURN(Expr y, quantize(ctx, x, scale, zp));
  return Outputs{y, scale, zp};
}

/// (a - a_zero_point) x (b - b_zero_point) in f64 by matmul; the zero points
/// are per tensor, per row of a or per column of b.
Expected<Expr> integerMatMul(NodeContext &ctx, const Expr &a, const Expr &azp, const Expr &b,
                             const Expr &bzp) {
  if (rankOf(a) < 2 || rankOf(b) < 2)
    return ctx.error("inputs must have rank >= 2, got {} and {}", a->type().str(), b->type().str());
  TS_ASSIGN_OR_RETURN(Expr ac, centered(ctx, a, azp, rankOf(a) - 2));
  TS_ASSIGN_OR_RETURN(Expr bc, centered(ctx, b, bzp, rankOf(b) - 1));
  return ctx.call("matmul", {ac, bc});
}

/// The Conv converter applied to (x - x_zero_point) and (w - w_zero_point)
/// in f64 (its attributes: pads, strides, dilations, group, auto_pad).
Expected<Expr> integerConv(NodeContext &ctx, const Expr &x, const Expr &xzp, const Expr &w,
                           const Expr &wzp) {
  TS_ASSIGN_OR_RETURN(Expr xc, centered(ctx, x, xzp, 1));
  TS_ASSIGN_OR_RETURN(Expr wc, centered(ctx, w, wzp, 0));
  const ConverterSpec *conv = ConverterRegistry::standard().find("Conv");
  if (!conv)
    return ctx.error("no Conv converter to build on");
  NodeContext convCtx("Conv", ctx.nodeName(), ctx.opset(), {xc, wc}, 1, ctx.attrs());
  TS_ASSIGN_OR_RETURN(Outputs y, conv->convert(convCtx));
  if (y.empty())
    return ctx.error("the Conv converter gave no output");
  return y[0];
}

/// MatMulInteger (opsets 10-17): u8/i8 inputs, optional zero points; i32.
Expected<Outputs> convertMatMulInteger(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr a, integerInput(ctx, 0, "A"));
  TS_ASSIGN_OR_RETURN(Expr b, integerInput(ctx, 1, "B"));
  TS_ASSIGN_OR_RETURN(Expr azp, zeroPoint(ctx, 2, dtypeOf(a)));
  TS_ASSIGN_OR_RETURN(Expr bzp, zeroPoint(ctx, 3, dtypeOf(b)));
  TS_ASSIGN_OR_RETURN(Expr y, integerMatMul(ctx, a, azp, b, bzp));
  TS_ASSIGN_OR_RETURN(y, castTo(ctx, y, DType::I32));
  return Outputs{y};
}

/// ConvInteger (opsets 10-17): u8/i8 inputs, optional zero points (w's per
/// output channel); the Conv attributes; i32.
Expected<Outputs> convertConvInteger(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr x, integerInput(ctx, 0, "x"));
  TS_ASSIGN_OR_RETURN(Expr w, integerInput(ctx, 1, "w"));
  TS_ASSIGN_OR_RETURN(Expr xzp, zeroPoint(ctx, 2, dtypeOf(x)));
  TS_ASSIGN_OR_RETURN(Expr wzp, zeroPoint(ctx, 3, dtypeOf(w)));
  TS_ASSIGN_OR_RETURN(Expr y, integerConv(ctx, x, xzp, w, wzp));
  TS_ASSIGN_OR_RETURN(y, castTo(ctx, y, DType::I32));
  return Outputs{y};
}

/// The integer accumulator `acc` (f64) requantized: saturate(round(acc *
/// (scale_a * scale_b / y_scale)) + y_zero_point), the multiplier in f32.
/// 1-D scales lie along axes[0] (a), axes[1] (b) and axes[2] (y and its
/// zero point) of the accumulator.
Expected<Expr> requantize(NodeContext &ctx, Expr acc, const Expr &scaleA, const Expr &scaleB,
                          const Expr &yScale, const Expr &yzp, std::array<int64_t, 3> axes) {
  int64_t r = rankOf(acc);
  TS_ASSIGN_OR_RETURN(Expr sa, alongAxis(ctx, scaleA, r, axes[0], "the a/x scale"));
  TS_ASSIGN_OR_RETURN(Expr sb, alongAxis(ctx, scaleB, r, axes[1], "the b/w scale"));
  TS_ASSIGN_OR_RETURN(Expr sy, alongAxis(ctx, yScale, r, axes[2], "y_scale"));
  TS_ASSIGN_OR_RETURN(Expr z, alongAxis(ctx, yzp, r, axes[2], "y_zero_point"));
  TS_ASSIGN_OR_RETURN(Expr mult, ctx.call("multiply", {sa, sb}));
  TS_ASSIGN_OR_RETURN(mult, ctx.call("divide", {mult, sy}));
  TS_ASSIGN_OR_RETURN(acc, castTo(ctx, acc, dtypeOf(mult)));
  TS_ASSIGN_OR_RETURN(Expr real, ctx.call("multiply", {acc, mult}));
  return quantize(ctx, real, scalar(ctx, dtypeOf(real), 1), z);
}

/// QLinearMatMul (opsets 10-17): a, a_scale, a_zero_point, b, b_scale,
/// b_zero_point, y_scale, y_zero_point.
Expected<Outputs> convertQLinearMatMul(NodeContext &ctx) {
  Expr in[8];
  for (size_t i = 0; i < 8; ++i) {
    TS_ASSIGN_OR_RETURN(in[i], tensorInput(ctx, i, "QLinearMatMul input"));
  }
  TS_ASSIGN_OR_RETURN(Expr acc, integerMatMul(ctx, in[0], in[2], in[3], in[5]));
  int64_t r = rankOf(acc);
  // Per-row a and y scales, per-column b scales.
  TS_ASSIGN_OR_RETURN(Expr y,
                      requantize(ctx, acc, in[1], in[4], in[6], in[7], {r - 2, r - 1, r - 2}));
  return Outputs{y};
}

/// QLinearConv (opsets 10-17): x, x_scale, x_zero_point, w, w_scale,
/// w_zero_point (per output channel allowed), y_scale, y_zero_point, and an
/// optional i32 bias added to the accumulator; the Conv attributes.
Expected<Outputs> convertQLinearConv(NodeContext &ctx) {
  Expr in[8];
  for (size_t i = 0; i < 8; ++i) {
    TS_ASSIGN_OR_RETURN(in[i], tensorInput(ctx, i, "QLinearConv input"));
  }
  TS_ASSIGN_OR_RETURN(Expr acc, integerConv(ctx, in[0], in[2], in[3], in[5]));
  if (ctx.hasInput(8)) {
    TS_ASSIGN_OR_RETURN(Expr bias, integerInput(ctx, 8, "B"));
    TS_ASSIGN_OR_RETURN(bias, castTo(ctx, bias, DType::F64));
    TS_ASSIGN_OR_RETURN(bias, alongAxis(ctx, bias, rankOf(acc), 1, "B"));
    TS_ASSIGN_OR_RETURN(acc, ctx.call("add", {acc, bias}));
  }
  TS_ASSIGN_OR_RETURN(Expr y, requantize(ctx, acc, in[1], in[4], in[6], in[7], {1, 1, 1}));
  return Outputs{y};
}

//===----------------------------------------------------------------------===//
// MeanVarianceNormalization
//===----------------------------------------------------------------------===//

/// MeanVarianceNormalization (opsets 9-17): axes (default [0, 2, 3]);
/// (x - mean) / (sqrt(mean(x^2) - mean^2) + 1e-9), as ONNX's function body.
Expected<Outputs> convertMVN(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr x, tensorInput(ctx, 0, "X"));
  if (!ir::isFloat(dtypeOf(x)))
    return ctx.error("input 0 must be a float tensor, got {}", x->type().str());
  TS_ASSIGN_OR_RETURN(Ints axes, ctx.attrInts("axes", Ints{0, 2, 3}));
  ir::Attrs mean{{"axes", axes}, {"keepdims", true}};
  TS_ASSIGN_OR_RETURN(Expr mu, ctx.call("reduce_mean", {x}, mean));
  TS_ASSIGN_OR_RETURN(Expr mu2, ctx.call("multiply", {mu, mu}));
  TS_ASSIGN_OR_RETURN(Expr x2, ctx.call("multiply", {x, x}));
  TS_ASSIGN_OR_RETURN(Expr ex2, ctx.call("reduce_mean", {x2}, mean));
  TS_ASSIGN_OR_RETURN(Expr var, ctx.call("subtract", {ex2, mu2}));
  TS_ASSIGN_OR_RETURN(Expr sd, ctx.call("sqrt", {var}));
  TS_ASSIGN_OR_RETURN(sd, ctx.call("add", {sd, scalar(ctx, dtypeOf(x), 1e-9)}));
  TS_ASSIGN_OR_RETURN(Expr centered, ctx.call("subtract", {x, mu}));
  TS_ASSIGN_OR_RETURN(Expr y, ctx.call("divide", {centered, sd}));
  return Outputs{y};
}

} // namespace

Status registerLossConverters(ConverterRegistry &r) {
  auto add = [&](std::string opType, int64_t minOpset, int64_t maxOpset, Converter convert,
                 std::string notes) {
    return r.add(
        ConverterSpec{std::move(opType), minOpset, maxOpset, std::move(convert), std::move(notes)});
  };
  TS_RETURN_IF_ERROR(add("NegativeLogLikelihoodLoss", 12, 17, convertNLL,
                         "reduction none/sum/mean, weight, ignore_index, [N, C, d1, ...]; "
                         "composed (gather_elements, gather, where, reduce_sum)"));
  TS_RETURN_IF_ERROR(add("SoftmaxCrossEntropyLoss", 12, 17, convertSCE,
                         "reduction none/sum/mean, weights, ignore_index, [N, C, d1, ...], "
                         "log_prob output; composed (log_softmax + the NLL loss)"));
  TS_RETURN_IF_ERROR(add("Einsum", 12, 17, convertEinsum,
                         "explicit and implicit output, ellipsis, diagonals, any number of "
                         "operands; composed (transpose, slice, reduce_sum, batch_matmul)"));
  TS_RETURN_IF_ERROR(add("GatherND", 11, 17, convertGatherND, "core gather_nd; batch_dims"));
  TS_RETURN_IF_ERROR(
      add("ScatterND", 11, 17, convertScatterND, "core scatter_nd; reduction none/add/mul"));
  TS_RETURN_IF_ERROR(add("ScatterElements", 11, 17, convertScatterElements,
                         "core scatter_elements; axis, negative indices, reduction none/add/mul"));
  TS_RETURN_IF_ERROR(add("Scatter", 9, 10, convertScatterElements,
                         "core scatter_elements (deprecated ONNX op); axis"));
  TS_RETURN_IF_ERROR(add("MeanVarianceNormalization", 9, 17, convertMVN,
                         "axes; composed (reduce_mean, sqrt, divide)"));
  TS_RETURN_IF_ERROR(add("Compress", 9, 17, convertCompress,
                         "constant condition; axis or flattened; composed (gather)"));
  TS_RETURN_IF_ERROR(add("ReverseSequence", 10, 17, convertReverseSequence,
                         "batch_axis, time_axis; composed (gather_elements with computed "
                         "indices)"));
  TS_RETURN_IF_ERROR(add("NonZero", 9, 17, convertNonZero, "constant input only; a constant"));
  TS_RETURN_IF_ERROR(add("Unique", 11, 17, convertUnique,
                         "constant input only; sorted, axis; four constant outputs"));
  TS_RETURN_IF_ERROR(add("NonMaxSuppression", 10, 17, convertNMS,
                         "constant inputs only; center_point_box; a constant"));
  TS_RETURN_IF_ERROR(add("QuantizeLinear", 10, 17, convertQuantizeLinear,
                         "u8/i8, per tensor or per axis; composed (divide, round, clip, cast)"));
  TS_RETURN_IF_ERROR(add("DequantizeLinear", 10, 17, convertDequantizeLinear,
                         "u8/i8/i32, per tensor or per axis; composed"));
  TS_RETURN_IF_ERROR(add("DynamicQuantizeLinear", 11, 17, convertDynamicQuantizeLinear,
                         "composed as ONNX's function body"));
  TS_RETURN_IF_ERROR(add("MatMulInteger", 10, 17, convertMatMulInteger,
                         "zero points per tensor/row/column; matmul in f64 (exact below 2^53)"));
  TS_RETURN_IF_ERROR(add("ConvInteger", 10, 17, convertConvInteger,
                         "zero points (w's per channel); the Conv converter in f64"));
  TS_RETURN_IF_ERROR(add("QLinearMatMul", 10, 17, convertQLinearMatMul,
                         "integer matmul, requantized in f32 with round half to even"));
  TS_RETURN_IF_ERROR(add("QLinearConv", 10, 17, convertQLinearConv,
                         "integer Conv + i32 bias, per-channel w scale, requantized in f32"));
  return okStatus();
}

} // namespace tessera::frontend::onnx
