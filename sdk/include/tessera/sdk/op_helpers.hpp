//===- tessera/sdk/op_helpers.hpp - Checking an op call in a plugin -*- C++ -*-===//
//
// Header-only helpers over sdk::OpDesc for a plugin's checker and codegen:
// attributes with defaults, operand counts, ranks and shapes, axis
// normalisation, numpy broadcasting, 2-D window arithmetic (conv/pool output
// sizes, padding), and (op_checks.hpp, included at the end) complete
// checks of the common core ops (docs/ops.md) the way the core's type
// relations do them: each re-derives the output
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

} // namespace tessera::sdk

// The whole checks of common core ops (checkConv2d, checkPool2d, ...).
#include "tessera/sdk/op_checks.hpp"
