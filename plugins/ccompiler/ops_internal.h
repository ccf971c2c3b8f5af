//===- plugins/ccompiler/ops_internal.h - Shared by the op emitters -*- C++ -*-===//
//
// Attribute readers (with the defaults of docs/ops.md), shape checks and a
// small text builder for the C bodies; used by ops.cpp (elementwise,
// softmax, data movement) and ops_nn.cpp (products, windows).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ops.h"

#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace tessera::ccompiler::detail {

using sdk::Error;
using sdk::OpDesc;

inline int64_t numel(const Shape &s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

/// Concatenates anything streamable.
template <typename... A> std::string cat(A &&...args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

/// The C body under construction: lines indented by the current depth.
class Body {
public:
  Body() = default;
  template <typename... A> Body &line(A &&...args) {
    text_ += std::string(size_t(2 * depth_), ' ') + cat(std::forward<A>(args)...) + "\n";
    return *this;
  }
  /// A line that opens a block ("for (...) {").
  template <typename... A> Body &open(A &&...args) {
    line(std::forward<A>(args)...);
    ++depth_;
    return *this;
  }
  /// Ends a block: "}" (or another text; "" for a block without braces).
  Body &close(const char *text = "}") {
    --depth_;
    return *text ? line(text) : *this;
  }
  const std::string &text() const { return text_; }

private:
  std::string text_;
  int depth_ = 1;
};

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

inline int64_t intAttr(const OpDesc &op, const char *name, int64_t dflt) {
  return op.attrs.has(name) ? op.attrs.getInt(name) : dflt;
}
inline double floatAttr(const OpDesc &op, const char *name, double dflt) {
  return op.attrs.has(name) ? op.attrs.getFloat(name) : dflt;
}
inline bool boolAttr(const OpDesc &op, const char *name, bool dflt) {
  return op.attrs.has(name) ? op.attrs.getBool(name) : dflt;
}
inline std::string stringAttr(const OpDesc &op, const char *name, const char *dflt) {
  return op.attrs.has(name) ? op.attrs.getString(name) : dflt;
}
/// An int list of `n` values, each at least `min`.
inline std::vector<int64_t> intsAttr(const OpDesc &op, const char *name,
                                     std::vector<int64_t> dflt, size_t n, int64_t min) {
  std::vector<int64_t> v = op.attrs.has(name) ? op.attrs.getInts(name) : std::move(dflt);
  if (v.size() != n)
    throw Error("attribute '" + std::string(name) + "' must have " + std::to_string(n) +
                " values, got " + std::to_string(v.size()));
  for (int64_t x : v)
    if (x < min)
      throw Error("attribute '" + std::string(name) + "' must be " +
                  (min > 0 ? "positive" : "non-negative") + ", got " + shapeStr(v));
  return v;
}

/// The index of `axis` (negative counts from the end) in a tensor of rank
/// `rank`.
inline int64_t normalizeAxis(int64_t axis, size_t rank, const char *attr = "axis") {
  int64_t r = int64_t(rank);
  if (axis < -r || axis >= r)
    throw Error("attribute '" + std::string(attr) + "' = " + std::to_string(axis) +
                " is out of range for rank " + std::to_string(r));
  return axis < 0 ? axis + r : axis;
}

//===----------------------------------------------------------------------===//
// Shapes
//===----------------------------------------------------------------------===//

inline const Shape &in(const OpDesc &op, size_t i) { return op.inputs[i].shape; }
inline const Shape &out(const OpDesc &op) { return op.outputs[0].shape; }

inline void requireInputs(const OpDesc &op, size_t n) {
  if (op.inputs.size() != n)
    throw Error("expects " + std::to_string(n) + " inputs, got " +
                std::to_string(op.inputs.size()));
}

inline void requireRank(const OpDesc &op, size_t i, size_t rank, const char *name) {
  if (in(op, i).size() != rank)
    throw Error("input " + std::to_string(i) + " ('" + name + "') must have rank " +
                std::to_string(rank) + ", got " + op.inputs[i].str());
}

inline void requireMinRank(const OpDesc &op, size_t i, size_t rank, const char *name) {
  if (in(op, i).size() < rank)
    throw Error("input " + std::to_string(i) + " ('" + name + "') must have rank >= " +
                std::to_string(rank) + ", got " + op.inputs[i].str());
}

/// The declared output shape must be the one the op computes.
inline void requireOutput(const OpDesc &op, const Shape &computed) {
  if (out(op) != computed)
    throw Error("the declared output " + op.outputs[0].str() + " is not the computed shape " +
                shapeStr(computed));
}

/// numpy broadcasting; false when the shapes do not broadcast.
inline bool broadcast(const Shape &a, const Shape &b, Shape &result) {
  size_t r = std::max(a.size(), b.size());
  result.assign(r, 1);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      return false;
    result[i] = da == 1 ? db : da;
  }
  return true;
}

/// Strides of an operand of shape `s` right-aligned with an output of rank
/// `rank` (0 along size-1 and missing dims).
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

inline void noEpilogue(const OpDesc &op, const Epilogue &e) {
  if (e.bias || e.act)
    throw Error("op '" + op.op + "' cannot take a fused bias or activation");
}

/// The products and windows (ops_nn.cpp).
OpCode emitConv2d(const OpDesc &op, const Epilogue &epi);
OpCode emitDense(const OpDesc &op, const Epilogue &epi);
OpCode emitMatmul(const OpDesc &op, const Epilogue &epi);
OpCode emitMaxPool2d(const OpDesc &op, const Epilogue &epi);
OpCode emitAvgPool2d(const OpDesc &op, const Epilogue &epi);
OpCode emitGlobalPool2d(const OpDesc &op, const Epilogue &epi);

} // namespace tessera::ccompiler::detail
