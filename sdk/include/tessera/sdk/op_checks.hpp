//===- tessera/sdk/op_checks.hpp - Whole checks of common core ops -*- C++ -*-===//
//
// checkUnary, checkConv2d, checkPool2d and the other complete checks of the
// common core ops (docs/ops.md), built on op_helpers.hpp (which includes
// this header at its end): each re-derives the output shape from the inputs
// and the attributes, compares it with the declared one and returns what a
// kernel needs.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tessera/sdk/op_helpers.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tessera::sdk {

//===----------------------------------------------------------------------===//
// Whole checks of common core ops (docs/ops.md)
//===----------------------------------------------------------------------===//
//
// Each checks the inputs, the attributes (with their defaults) and the
// declared output shape, and returns what a kernel needs. The dtype and the
// result count are the caller's (requireDType, requireResults).

/// An elementwise unary op: one input, the output shaped like it.
inline void checkUnary(const OpDesc &op) {
  requireInputs(op, 1);
  requireOutput(op, inputShape(op, 0));
}

/// An elementwise binary op with numpy broadcasting; the output shape.
inline Shape checkBroadcastBinary(const OpDesc &op) {
  requireInputs(op, 2);
  const Shape &a = inputShape(op, 0), &b = inputShape(op, 1);
  std::optional<Shape> ys = broadcastShapes(a, b);
  if (!ys)
    throw Error("cannot broadcast " + shapeStr(a) + " with " + shapeStr(b));
  requireOutput(op, *ys);
  return *ys;
}

/// bias_add(data, bias [C]); the normalised 'axis' (default 1) of C.
inline int64_t checkBiasAdd(const OpDesc &op) {
  requireInputs(op, 2);
  requireRank(op, 1, 1, "bias");
  const Shape &xs = inputShape(op, 0);
  int64_t axis = normalizeAxis(intAttr(op, "axis", 1), xs.size());
  if (inputShape(op, 1)[0] != xs[size_t(axis)])
    throw Error("bias length " + std::to_string(inputShape(op, 1)[0]) +
                " does not match data dimension " + std::to_string(xs[size_t(axis)]) + " at axis " +
                std::to_string(axis));
  requireOutput(op, xs);
  return axis;
}

struct BatchNormParams {
  int64_t axis = 1;      // normalised
  double epsilon = 1e-5; // added to the variance
};

/// batch_norm(data, gamma, beta, mean, var), each of the last four [C] with
/// C the data's dim along 'axis' (default 1); 'epsilon' defaults to 1e-5.
inline BatchNormParams checkBatchNorm(const OpDesc &op) {
  requireInputs(op, 5);
  const Shape &xs = inputShape(op, 0);
  BatchNormParams p;
  p.axis = normalizeAxis(intAttr(op, "axis", 1), xs.size());
  p.epsilon = floatAttr(op, "epsilon", 1e-5);
  static const char *const names[] = {"data", "gamma", "beta", "mean", "var"};
  Shape c{xs[size_t(p.axis)]};
  for (size_t i = 1; i < 5; ++i)
    if (inputShape(op, i) != c)
      throw Error("input " + std::to_string(i) + " ('" + names[i] + "') must have shape " +
                  shapeStr(c) + ", got " + op.inputs[i].str());
  requireOutput(op, xs);
  return p;
}

/// softmax / log_softmax; the normalised 'axis' (default -1).
inline int64_t checkSoftmax(const OpDesc &op) {
  requireInputs(op, 1);
  int64_t axis = normalizeAxis(intAttr(op, "axis", -1), inputShape(op, 0).size());
  requireOutput(op, inputShape(op, 0));
  return axis;
}

struct DenseDims {
  int64_t rows = 0;  // the data's elements over K
  int64_t K = 0;     // the inner dimension
  int64_t units = 0; // U, the output's last dim
};

/// dense(data [..., K], weight [U, K]) -> [..., U], with a fused bias [U] as
/// input 2 when `fusedBias`. `weightTransposed`: the weight is [K, U].
inline DenseDims checkDense(const OpDesc &op, bool fusedBias = false,
                            bool weightTransposed = false) {
  requireInputs(op, fusedBias ? 3 : 2);
  requireMinRank(op, 0, 1, "data");
  requireRank(op, 1, 2, "weight");
  const Shape &xs = inputShape(op, 0), &ws = inputShape(op, 1);
  DenseDims d;
  d.units = weightTransposed ? ws[1] : ws[0];
  d.K = weightTransposed ? ws[0] : ws[1];
  requireFusedBias(op, fusedBias, d.units);
  if (xs.back() != d.K)
    throw Error("inner dimensions do not match: data has " + std::to_string(xs.back()) +
                ", weight has " + std::to_string(d.K));
  Shape ys = xs;
  ys.back() = d.units;
  requireOutput(op, ys);
  d.rows = numel(std::span(xs).first(xs.size() - 1));
  return d;
}

struct MatmulDims {
  Shape a, b;  // the operands with 1-D ones promoted ([K] -> [1, K] / [K, 1])
  Shape batch; // the broadcast batch dims
  int64_t M = 0, K = 0, N = 0;
};

/// matmul: numpy / ONNX MatMul (1-D operands promoted, batch dims
/// broadcast; the output drops the promoted dims).
inline MatmulDims checkMatmul(const OpDesc &op) {
  requireInputs(op, 2);
  requireMinRank(op, 0, 1, "a");
  requireMinRank(op, 1, 1, "b");
  MatmulDims m;
  m.a = inputShape(op, 0), m.b = inputShape(op, 1);
  if (m.a.size() == 1)
    m.a.insert(m.a.begin(), 1);
  if (m.b.size() == 1)
    m.b.push_back(1);
  if (m.a.back() != m.b[m.b.size() - 2])
    throw Error("inner dimensions do not match: a has " + std::to_string(m.a.back()) + ", b has " +
                std::to_string(m.b[m.b.size() - 2]));
  std::optional<Shape> batch =
      broadcastShapes(Shape(m.a.begin(), m.a.end() - 2), Shape(m.b.begin(), m.b.end() - 2));
  if (!batch)
    throw Error("batch dimensions " + shapeStr(m.a) + " and " + shapeStr(m.b) +
                " do not broadcast");
  m.batch = *batch;
  m.M = m.a[m.a.size() - 2], m.K = m.a.back(), m.N = m.b.back();
  Shape ys = m.batch;
  if (inputShape(op, 0).size() >= 2)
    ys.push_back(m.M);
  if (inputShape(op, 1).size() >= 2)
    ys.push_back(m.N);
  requireOutput(op, ys);
  return m;
}

struct BatchMatmulDims {
  bool transA = false, transB = false; // 'transpose_a', 'transpose_b'
  int64_t M = 0, K = 0, N = 0;         // after the transposes
};

/// batch_matmul(a [B|1, M, K], b [B|1, K, N]) -> [B, M, N], each operand
/// optionally transposed in its last two dims.
inline BatchMatmulDims checkBatchMatmul(const OpDesc &op) {
  requireInputs(op, 2);
  requireRank(op, 0, 3, "a");
  requireRank(op, 1, 3, "b");
  const Shape &a = inputShape(op, 0), &b = inputShape(op, 1);
  BatchMatmulDims d;
  d.transA = boolAttr(op, "transpose_a", false);
  d.transB = boolAttr(op, "transpose_b", false);
  d.M = d.transA ? a[2] : a[1], d.K = d.transA ? a[1] : a[2];
  int64_t K2 = d.transB ? b[2] : b[1];
  d.N = d.transB ? b[1] : b[2];
  if (a[0] != b[0] && a[0] != 1 && b[0] != 1)
    throw Error("batch sizes " + std::to_string(a[0]) + " and " + std::to_string(b[0]) +
                " do not match (must be equal or 1)");
  if (d.K != K2)
    throw Error("inner dimensions do not match: a has " + std::to_string(d.K) + ", b has " +
                std::to_string(K2));
  requireOutput(op, {a[0] == 1 ? b[0] : a[0], d.M, d.N});
  return d;
}

struct Conv2dParams {
  Window2d window;
  int64_t groups = 1;
  Shape output; // [N, O, OH, OW]
};

/// conv2d(data [N, C, H, W], weight [O, C/groups, KH, KW]) -> [N, O, OH,
/// OW], grouped and dilated, zero padding (ONNX Conv); a fused bias [O] is
/// input 2 when `fusedBias`.
inline Conv2dParams checkConv2d(const OpDesc &op, bool fusedBias = false) {
  requireInputs(op, fusedBias ? 3 : 2);
  requireRank(op, 0, 4, "data");
  requireRank(op, 1, 4, "weight");
  const Shape &xs = inputShape(op, 0), &ws = inputShape(op, 1);
  requireFusedBias(op, fusedBias, ws[0]);
  Conv2dParams p;
  p.window = convWindow(op);
  p.groups = groupsAttr(op);
  int64_t g = p.groups;
  if (xs[1] % g != 0 || ws[0] % g != 0 || xs[1] != ws[1] * g)
    throw Error("channels do not match groups " + std::to_string(g) + ": data " +
                op.inputs[0].str() + ", weight " + op.inputs[1].str());
  int64_t oh = convOutputSize(xs[2], p.window, 0), ow = convOutputSize(xs[3], p.window, 1);
  requirePositiveOutput(oh, ow);
  p.output = {xs[0], ws[0], oh, ow};
  requireOutput(op, p.output);
  return p;
}

struct Pool2dParams {
  Window2d window;
  Shape size;                   // 'pool_size' [KH, KW]
  bool ceilMode = false;        // 'ceil_mode'
  bool countIncludePad = false; // 'count_include_pad' (avg_pool2d only)
  Shape output;                 // [N, C, OH, OW]
};

/// max_pool2d / avg_pool2d(data [N, C, H, W]) -> [N, C, OH, OW]; the
/// attribute 'pool_size' is required.
inline Pool2dParams checkPool2d(const OpDesc &op) {
  requireInputs(op, 1);
  requireRank(op, 0, 4, "data");
  if (!op.attrs.has("pool_size"))
    throw Error("missing attribute 'pool_size'");
  Pool2dParams p;
  p.size = intsAttr(op, "pool_size", {}, 2, 1);
  p.window = readWindow2d(op, p.size[0], p.size[1]);
  p.ceilMode = boolAttr(op, "ceil_mode", false);
  p.countIncludePad = op.op != "max_pool2d" && boolAttr(op, "count_include_pad", false);
  const Shape &xs = inputShape(op, 0);
  int64_t oh = poolOutputSize(xs[2], p.window, 0, p.ceilMode);
  int64_t ow = poolOutputSize(xs[3], p.window, 1, p.ceilMode);
  requirePositiveOutput(oh, ow);
  p.output = {xs[0], xs[1], oh, ow};
  requireOutput(op, p.output);
  return p;
}

/// global_avg_pool2d / global_max_pool2d(data [N, C, H, W]) -> [N, C, 1, 1],
/// H x W not empty.
inline void checkGlobalPool2d(const OpDesc &op) {
  requireInputs(op, 1);
  requireRank(op, 0, 4, "data");
  const Shape &xs = inputShape(op, 0);
  if (xs[2] * xs[3] == 0)
    throw Error("spatial size [" + std::to_string(xs[2]) + ", " + std::to_string(xs[3]) +
                "] must not be empty");
  requireOutput(op, {xs[0], xs[1], 1, 1});
}

/// concat of one or more inputs along the normalised 'axis' (default 0),
/// which it returns; the inputs agree outside it.
inline int64_t checkConcat(const OpDesc &op) {
  if (op.inputs.empty())
    throw Error("expects at least 1 input, got 0");
  const Shape &s0 = inputShape(op, 0);
  int64_t axis = normalizeAxis(intAttr(op, "axis", 0), s0.size());
  Shape ys = s0;
  ys[size_t(axis)] = 0;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const Shape &s = inputShape(op, i);
    bool ok = s.size() == s0.size();
    for (size_t d = 0; ok && d < s.size(); ++d)
      ok = d == size_t(axis) || s[d] == s0[d];
    if (!ok)
      throw Error("input " + std::to_string(i) + " " + op.inputs[i].str() +
                  " does not match input 0 " + op.inputs[0].str() + " outside axis " +
                  std::to_string(axis));
    ys[size_t(axis)] += s[size_t(axis)];
  }
  requireOutput(op, ys);
  return axis;
}

/// transpose: out.shape[i] = in.shape[perm[i]]; returns 'perm' (empty in
/// the attribute: the dims reversed).
inline Shape checkTranspose(const OpDesc &op) {
  requireInputs(op, 1);
  const Shape &xs = inputShape(op, 0);
  Shape perm = intsAttr(op, "perm", {});
  if (perm.empty())
    for (size_t i = xs.size(); i-- > 0;)
      perm.push_back(int64_t(i));
  std::vector<bool> seen(xs.size(), false);
  bool ok = perm.size() == xs.size();
  for (size_t i = 0; ok && i < perm.size(); ++i) {
    ok = perm[i] >= 0 && size_t(perm[i]) < xs.size() && !seen[size_t(perm[i])];
    if (ok)
      seen[size_t(perm[i])] = true;
  }
  if (!ok)
    throw Error("attribute 'perm' = " + shapeStr(perm) + " is not a permutation of the " +
                std::to_string(xs.size()) + " dims");
  Shape ys(xs.size());
  for (size_t i = 0; i < xs.size(); ++i)
    ys[i] = xs[size_t(perm[i])];
  requireOutput(op, ys);
  return perm;
}

/// reshape, flatten, squeeze, unsqueeze: one input, and the declared output
/// (the core inferred it from the attributes) has its elements in the same
/// row-major order.
inline void checkView(const OpDesc &op) {
  requireInputs(op, 1);
  requireSameNumel(op);
}

} // namespace tessera::sdk
