//===- ir/ops/nn_window.h - Conv and pool window helpers -------*- C++ -*-===//
//
// Private to the sliding-window ops (ir/ops/nn_conv.cpp, nn_pool.cpp): the
// 2-D window (kernel size, strides, dilation, pads) read from and checked
// against the attributes, NCHW indexing and the attribute specs both files
// declare. Window attributes use ONNX conventions: pads = [top, left,
// bottom, right], strides and dilation = [h, w]. Everything lives in an
// anonymous namespace: each file gets its own copy, so nothing here can
// clash with another family's helpers.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/ops/common.h"

#include <string_view>
#include <vector>

namespace tessera::ir::ops {
namespace {

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

inline AttrValue intsValue(std::vector<int64_t> v) {
  return AttrValue(std::move(v));
}

inline Status requireLength(const std::vector<int64_t> &v, std::string_view name, size_t n) {
  if (v.size() != n)
    return Error::format("attribute '{}' must have {} values, got {}", name, n, v.size());
  return okStatus();
}

inline Status requirePositive(const std::vector<int64_t> &v, std::string_view name) {
  for (int64_t x : v)
    if (x <= 0)
      return Error::format("attribute '{}' must be positive, got {}", name, shapeStr(v));
  return okStatus();
}

inline Status requireNonNegative(const std::vector<int64_t> &v, std::string_view name) {
  for (int64_t x : v)
    if (x < 0)
      return Error::format("attribute '{}' must be non-negative, got {}", name, shapeStr(v));
  return okStatus();
}

inline int64_t floorDiv(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
inline int64_t ceilDiv(int64_t a, int64_t b) {
  return -floorDiv(-a, b);
}

/// Kernel (or pool) size, strides, dilation and pads of a 2-D window.
struct Window {
  int64_t k[2];  // kernel size h, w
  int64_t s[2];  // strides
  int64_t d[2];  // dilation
  int64_t p0[2]; // leading pads (top, left)
  int64_t p1[2]; // trailing pads (bottom, right)
  int64_t extent(int i) const { return d[i] * (k[i] - 1) + 1; }
};

/// Reads and checks strides, pads and dilation (lengths, signs).
inline Expected<Window> readWindow(const Attrs &attrs, int64_t kh, int64_t kw) {
  auto strides = attrs.getInts("strides");
  auto pads = attrs.getInts("pads");
  auto dilation = attrs.getInts("dilation");
  TS_RETURN_IF_ERROR(requireLength(strides, "strides", 2));
  TS_RETURN_IF_ERROR(requireLength(pads, "pads", 4));
  TS_RETURN_IF_ERROR(requireLength(dilation, "dilation", 2));
  TS_RETURN_IF_ERROR(requirePositive(strides, "strides"));
  TS_RETURN_IF_ERROR(requirePositive(dilation, "dilation"));
  TS_RETURN_IF_ERROR(requireNonNegative(pads, "pads"));
  Window w;
  w.k[0] = kh, w.k[1] = kw;
  for (int i = 0; i < 2; ++i) {
    w.s[i] = strides[i];
    w.d[i] = dilation[i];
    w.p0[i] = pads[i];
    w.p1[i] = pads[i + 2];
  }
  return w;
}

inline Status requireOutputPositive(int64_t oh, int64_t ow) {
  if (oh <= 0 || ow <= 0)
    return Error::format("computed output size [{}, {}] is not positive", oh, ow);
  return okStatus();
}

inline int64_t idx4(const Shape &s, int64_t a, int64_t b, int64_t c, int64_t d) {
  return ((a * s[1] + b) * s[2] + c) * s[3] + d;
}

const AttrSpec kStridesSpec{"strides", AttrKind::Ints, intsValue({1, 1}), "window strides [h, w]"};
const AttrSpec kPadsSpec{"pads", AttrKind::Ints, intsValue({0, 0, 0, 0}),
                         "padding [top, left, bottom, right]"};
const AttrSpec kDilationSpec{"dilation", AttrKind::Ints, intsValue({1, 1}),
                             "window dilation [h, w]"};

} // namespace
} // namespace tessera::ir::ops
