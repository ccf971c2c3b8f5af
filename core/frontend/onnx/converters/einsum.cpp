//===- frontend/onnx/converters/einsum.cpp - ONNX Einsum converter ---===//
//
// Einsum composed from transpose, slice (diagonals), reduce_sum and
// batch_matmul: explicit and implicit outputs, ellipsis with broadcasting,
// repeated labels and any number of operands. registerEinsumConverters()
// at the end registers it.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/converters/common.h"

#include <algorithm>
#include <map>
#include <set>

namespace tessera::frontend::onnx {

namespace einsum_detail {

using ir::DType;
using ir::Expr;
using ir::Tensor;

//===----------------------------------------------------------------------===//
// Einsum
//===----------------------------------------------------------------------===//

namespace {

/// Sum over `axes` (dropped); nothing to do for no axes.
Expected<Expr> sumOver(NodeContext &ctx, const Expr &x, const Ints &axes) {
  if (axes.empty())
    return x;
  return ctx.call("reduce_sum", {x}, {{"axes", axes}, {"keepdims", false}});
}

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

} // namespace

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

} // namespace einsum_detail

Status registerEinsumConverters(ConverterRegistry &r) {
  using namespace einsum_detail;
  TS_RETURN_IF_ERROR(
      addConverter(r, "Einsum", 12, 17, convertEinsum,
                   "explicit and implicit output, ellipsis, diagonals, any number of "
                   "operands; composed (transpose, slice, reduce_sum, batch_matmul)"));
  return okStatus();
}

} // namespace tessera::frontend::onnx
