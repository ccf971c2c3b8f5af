//===- tessera/sdk/op_helpers.hpp - Checking an op call in a plugin -*- C++ -*-===//
//
// Header-only helpers over sdk::OpDesc for a plugin's checker and codegen:
// attributes with defaults, operand counts, ranks and shapes, axis
// normalisation, numpy broadcasting, 2-D window arithmetic (conv/pool output
// sizes, padding), and complete checks of the common core ops (docs/ops.md)
// the way the core's type relations do them: each re-derives the output
// shape from the inputs and the attributes and compares it with the
// declared one, so a tampered graph is refused instead of overrunning a
// buffer.
//
// Every failure throws sdk::Error with a one-line reason naming what was
// wrong ("attribute 'pads' must have 4 values, got 2", "input 1 ('weight')
// must have rank 4, got f32[8, 3, 3]"); the SDK trampolines turn it into a
// decline reason or a status. The reasons carry no plugin or op prefix: the
// caller adds it.
//
//   using namespace tessera::sdk;
//   bool check(const OpDesc &op, std::string &reason) const override {
//     requireResults(op, 1);
//     requireDType(op, DLDataType{kDLFloat, 32, 1});
//     if (op.op == "conv2d")
//       checkConv2d(op);
//     ...
//   }
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tessera/sdk/plugin.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::sdk {

/// A static tensor shape.
using Shape = std::vector<int64_t>;

//===----------------------------------------------------------------------===//
// Shapes as values
//===----------------------------------------------------------------------===//

/// "[1, 2, 3]".
inline std::string shapeStr(std::span<const int64_t> s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i)
    out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

/// The number of elements of a shape (1 for rank 0).
inline int64_t numel(std::span<const int64_t> s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

/// numpy broadcasting of two shapes; nullopt when they do not broadcast.
inline std::optional<Shape> broadcastShapes(const Shape &a, const Shape &b) {
  size_t r = std::max(a.size(), b.size());
  Shape result(r, 1);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      return std::nullopt;
    result[i] = da == 1 ? db : da;
  }
  return result;
}

/// The element strides of a compact operand of shape `s` right-aligned with
/// a broadcast result of rank `rank`: 0 along size-1 and missing dims.
inline Shape broadcastStrides(const Shape &s, size_t rank) {
  Shape st(rank, 0);
  int64_t stride = 1;
  for (size_t i = 0; i < s.size(); ++i) {
    size_t d = s.size() - 1 - i, o = rank - 1 - i;
    st[o] = s[d] == 1 ? 0 : stride;
    stride *= s[d];
  }
  return st;
}

/// Integer division rounding towards -infinity / +infinity (b > 0).
inline int64_t floorDiv(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
inline int64_t ceilDiv(int64_t a, int64_t b) {
  return -floorDiv(-a, b);
}

/// The names of a table keyed by op name (a std::map), in its order: the
/// usual Checker::ops() of a plugin with one entry per supported op.
template <typename Map> std::vector<std::string> keysOf(const Map &table) {
  std::vector<std::string> keys;
  for (const auto &entry : table)
    keys.push_back(entry.first);
  return keys;
}

//===----------------------------------------------------------------------===//
// Attributes, with defaults
//===----------------------------------------------------------------------===//

// The attribute `name`, or `dflt` when the op does not have it (docs/ops.md
// gives every optional attribute's default). An attribute of another kind
// throws "attribute 'x' is not of kind int"; an int passes as a float.

inline int64_t intAttr(const OpDesc &op, std::string_view name, int64_t dflt) {
  return op.attrs.has(name) ? op.attrs.getInt(name) : dflt;
}
inline double floatAttr(const OpDesc &op, std::string_view name, double dflt) {
  return op.attrs.has(name) ? op.attrs.getFloat(name) : dflt;
}
inline bool boolAttr(const OpDesc &op, std::string_view name, bool dflt) {
  return op.attrs.has(name) ? op.attrs.getBool(name) : dflt;
}
inline std::string stringAttr(const OpDesc &op, std::string_view name, std::string_view dflt) {
  return op.attrs.has(name) ? op.attrs.getString(name) : std::string(dflt);
}
inline Shape intsAttr(const OpDesc &op, std::string_view name, Shape dflt = {}) {
  return op.attrs.has(name) ? op.attrs.getInts(name) : std::move(dflt);
}

/// An int list of exactly `n` values, each at least `min` (strides: n 2,
/// min 1; pads: n 4, min 0).
inline Shape intsAttr(const OpDesc &op, std::string_view name, Shape dflt, size_t n, int64_t min) {
  Shape v = intsAttr(op, name, std::move(dflt));
  std::string attr = "attribute '" + std::string(name) + "' must ";
  if (v.size() != n)
    throw Error(attr + "have " + std::to_string(n) + " values, got " + std::to_string(v.size()));
  for (int64_t x : v)
    if (x < min)
      throw Error(attr + "be " + (min > 0 ? "positive" : "non-negative") + ", got " + shapeStr(v));
  return v;
}

/// The index of `axis` (negative counts from the end) in a tensor of rank
/// `rank`; `attr` names the attribute it came from.
inline int64_t normalizeAxis(int64_t axis, size_t rank, std::string_view attr = "axis") {
  int64_t r = int64_t(rank);
  if (axis < -r || axis >= r)
    throw Error("attribute '" + std::string(attr) + "' = " + std::to_string(axis) +
                " is out of range for rank " + std::to_string(r) + " (expected " +
                std::to_string(-r) + ".." + std::to_string(r - 1) + ")");
  return axis < 0 ? axis + r : axis;
}

//===----------------------------------------------------------------------===//
// Operands and results
//===----------------------------------------------------------------------===//

inline const Shape &inputShape(const OpDesc &op, size_t i) {
  return op.inputs[i].shape;
}
inline const Shape &outputShape(const OpDesc &op, size_t i = 0) {
  return op.outputs[i].shape;
}

/// Between `lo` and `hi` inputs ("expects 2 inputs, got 3", "expects 2..3
/// inputs, got 1").
inline void requireInputs(const OpDesc &op, size_t lo, size_t hi) {
  if (op.inputs.size() < lo || op.inputs.size() > hi)
    throw Error("expects " + std::to_string(lo) + (hi > lo ? ".." + std::to_string(hi) : "") +
                " inputs, got " + std::to_string(op.inputs.size()));
}
inline void requireInputs(const OpDesc &op, size_t n) {
  requireInputs(op, n, n);
}

/// Exactly `n` results ("expects 1 result, got 2").
inline void requireResults(const OpDesc &op, size_t n) {
  if (op.outputs.size() != n)
    throw Error("expects " + std::to_string(n) + (n == 1 ? " result" : " results") + ", got " +
                std::to_string(op.outputs.size()));
}

/// Every input and result has dtype `t` ("only f32, got f16").
inline void requireDType(const OpDesc &op, DLDataType t) {
  for (const auto *types : {&op.inputs, &op.outputs})
    for (const TensorType &type : *types)
      if (!(type.dtype == t))
        throw Error("only " + dtypeName(t) + ", got " + dtypeName(type.dtype));
}

/// Input `i`, called `name` in docs/ops.md, has rank `rank` ("input 1
/// ('weight') must have rank 2, got f32[3]").
inline void requireRank(const OpDesc &op, size_t i, size_t rank, std::string_view name) {
  if (inputShape(op, i).size() != rank)
    throw Error("input " + std::to_string(i) + " ('" + std::string(name) + "') must have rank " +
                std::to_string(rank) + ", got " + op.inputs[i].str());
}

/// Input `i` has rank `rank` or more.
inline void requireMinRank(const OpDesc &op, size_t i, size_t rank, std::string_view name) {
  if (inputShape(op, i).size() < rank)
    throw Error("input " + std::to_string(i) + " ('" + std::string(name) +
                "') must have rank >= " + std::to_string(rank) + ", got " + op.inputs[i].str());
}

/// The declared output shape is the one the op computes.
inline void requireOutput(const OpDesc &op, const Shape &computed) {
  if (outputShape(op) != computed)
    throw Error("the declared output " + op.outputs[0].str() + " is not the computed shape " +
                shapeStr(computed));
}

/// The declared output has as many elements as input 0 (a reshape).
inline void requireSameNumel(const OpDesc &op) {
  int64_t n = numel(inputShape(op, 0));
  if (numel(outputShape(op)) != n)
    throw Error("the declared output " + op.outputs[0].str() + " does not have the " +
                std::to_string(n) + " elements of " + op.inputs[0].str());
}

/// A fused bias, when there is one, is input 2 and holds `n` values (one per
/// output channel or unit).
inline void requireFusedBias(const OpDesc &op, bool fusedBias, int64_t n) {
  if (fusedBias && numel(inputShape(op, 2)) != n)
    throw Error("the fused bias " + op.inputs[2].str() + " does not hold " + std::to_string(n) +
                " values");
}

//===----------------------------------------------------------------------===//
// 2-D windows (conv2d, pooling; NCHW)
//===----------------------------------------------------------------------===//

/// Size, strides, dilation (1 = dense) and pads (top/left p0, bottom/right
/// p1) of a 2-D window, in the core's conventions; index 0 is H, 1 is W.
struct Window2d {
  int64_t k[2] = {1, 1};
  int64_t s[2] = {1, 1};
  int64_t d[2] = {1, 1};
  int64_t p0[2] = {0, 0};
  int64_t p1[2] = {0, 0};

  /// The input span one window covers along dim i.
  int64_t extent(int i) const { return d[i] * (k[i] - 1) + 1; }
  /// "strides=[1, 1], pads=[0, 0, 0, 0], dilation=[1, 1]".
  std::string str() const {
    return "strides=" + shapeStr(Shape{s[0], s[1]}) +
           ", pads=" + shapeStr(Shape{p0[0], p0[1], p1[0], p1[1]}) +
           ", dilation=" + shapeStr(Shape{d[0], d[1]});
  }
};

/// The attributes 'strides' (default [1, 1]), 'pads' ([0, 0, 0, 0]: top,
/// left, bottom, right) and 'dilation' ([1, 1]) of a kh x kw window.
inline Window2d readWindow2d(const OpDesc &op, int64_t kh, int64_t kw) {
  Shape strides = intsAttr(op, "strides", {1, 1}, 2, 1);
  Shape pads = intsAttr(op, "pads", {0, 0, 0, 0}, 4, 0);
  Shape dilation = intsAttr(op, "dilation", {1, 1}, 2, 1);
  Window2d w;
  for (int i = 0; i < 2; ++i) {
    w.s[i] = strides[size_t(i)];
    w.d[i] = dilation[size_t(i)];
    w.p0[i] = pads[size_t(i)];
    w.p1[i] = pads[size_t(i) + 2];
  }
  w.k[0] = kh, w.k[1] = kw;
  return w;
}

/// The window of a convolution: the kernel size from the weight (input 1,
/// [.., .., KH, KW], rank already checked), the rest from the attributes.
inline Window2d convWindow(const OpDesc &op) {
  const Shape &ws = inputShape(op, 1);
  if (ws[2] <= 0 || ws[3] <= 0)
    throw Error("kernel size [" + std::to_string(ws[2]) + ", " + std::to_string(ws[3]) +
                "] must be positive");
  return readWindow2d(op, ws[2], ws[3]);
}

/// The attribute 'groups' (default 1), positive.
inline int64_t groupsAttr(const OpDesc &op) {
  int64_t g = intAttr(op, "groups", 1);
  if (g <= 0)
    throw Error("attribute 'groups' must be positive, got " + std::to_string(g));
  return g;
}

/// Output size along dim i of a convolution over `in` elements (ONNX Conv):
/// floor((in + pads - extent) / stride) + 1.
inline int64_t convOutputSize(int64_t in, const Window2d &w, int i) {
  return floorDiv(in + w.p0[i] + w.p1[i] - w.extent(i), w.s[i]) + 1;
}

/// Output size along dim i of a pooling (ONNX MaxPool / AveragePool):
/// floor_or_ceil((in + pads - extent) / stride) + 1, and with ceil_mode a
/// last window that would start in the right padding is dropped.
inline int64_t poolOutputSize(int64_t in, const Window2d &w, int i, bool ceilMode) {
  int64_t span = in + w.p0[i] + w.p1[i] - w.extent(i);
  int64_t o = (ceilMode ? ceilDiv(span, w.s[i]) : floorDiv(span, w.s[i])) + 1;
  if (ceilMode && o > 0 && (o - 1) * w.s[i] >= in + w.p0[i])
    --o;
  return o;
}

/// "computed output size [0, 2] is not positive".
inline void requirePositiveOutput(int64_t oh, int64_t ow) {
  if (oh <= 0 || ow <= 0)
    throw Error("computed output size [" + std::to_string(oh) + ", " + std::to_string(ow) +
                "] is not positive");
}

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
