//===- ir/ops/nn_conv.cpp - Convolution and pooling ops ------------------===//
//
// The sliding-window half of the NN family: conv2d, conv2d_transpose,
// max_pool2d, max_pool2d_indices, avg_pool2d, global_avg_pool2d and
// global_max_pool2d, with
// their type relations and reference kernels. Layout is NCHW; semantics
// follow ONNX Conv / ConvTranspose / MaxPool / AveragePool / Global*Pool.
// registerNNOps() (nn.cpp) calls registerConvPoolOps().
//
// Window attributes use ONNX conventions: pads = [top, left, bottom, right],
// strides and dilation = [h, w].
//
//===----------------------------------------------------------------------===//
#include "ir/ops/common.h"
#include "ir/ops/ops.h"

#include <fmt/format.h>

#include <cmath>
#include <string>
#include <vector>

namespace tessera::ir::ops {

Status registerConvPoolOps(OpRegistry &r);

namespace {

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

AttrValue intsValue(std::vector<int64_t> v) {
  return AttrValue(std::move(v));
}

Status requireLength(const std::vector<int64_t> &v, std::string_view name, size_t n) {
  if (v.size() != n)
    return Error::format("attribute '{}' must have {} values, got {}", name, n, v.size());
  return okStatus();
}

Status requirePositive(const std::vector<int64_t> &v, std::string_view name) {
  for (int64_t x : v)
    if (x <= 0)
      return Error::format("attribute '{}' must be positive, got {}", name, shapeStr(v));
  return okStatus();
}

Status requireNonNegative(const std::vector<int64_t> &v, std::string_view name) {
  for (int64_t x : v)
    if (x < 0)
      return Error::format("attribute '{}' must be non-negative, got {}", name, shapeStr(v));
  return okStatus();
}

int64_t floorDiv(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
int64_t ceilDiv(int64_t a, int64_t b) {
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
Expected<Window> readWindow(const Attrs &attrs, int64_t kh, int64_t kw) {
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

Status requireOutputPositive(int64_t oh, int64_t ow) {
  if (oh <= 0 || ow <= 0)
    return Error::format("computed output size [{}, {}] is not positive", oh, ow);
  return okStatus();
}

int64_t idx4(const Shape &s, int64_t a, int64_t b, int64_t c, int64_t d) {
  return ((a * s[1] + b) * s[2] + c) * s[3] + d;
}

const AttrSpec kStridesSpec{"strides", AttrKind::Ints, intsValue({1, 1}), "window strides [h, w]"};
const AttrSpec kPadsSpec{"pads", AttrKind::Ints, intsValue({0, 0, 0, 0}),
                         "padding [top, left, bottom, right]"};
const AttrSpec kDilationSpec{"dilation", AttrKind::Ints, intsValue({1, 1}),
                             "window dilation [h, w]"};

//===----------------------------------------------------------------------===//
// conv2d: y[n, o, oh, ow] = sum_{c, kh, kw} x[n, g*C/G + c, oh*sh - top + kh*dh,
//   ow*sw - left + kw*dw] * w[o, c, kh, kw], g = o / (O/G); zero padding
//   (ONNX Conv). data [N, C, H, W], weight [O, C/groups, KH, KW].
//===----------------------------------------------------------------------===//

struct ConvGeom {
  Window win;
  int64_t groups;
  int64_t oh, ow;
};

Expected<ConvGeom> conv2dGeom(std::span<const Type> in, const Attrs &attrs) {
  TS_RETURN_IF_ERROR(requireRank(in, 0, 4, "data"));
  TS_RETURN_IF_ERROR(requireRank(in, 1, 4, "weight"));
  TS_RETURN_IF_ERROR(requireFloat(in, 0));
  TS_RETURN_IF_ERROR(requireSameDType(in));
  const Shape &x = in[0].shape(), &w = in[1].shape();
  TS_ASSIGN_OR_RETURN(Window win, readWindow(attrs, w[2], w[3]));
  int64_t groups = attrs.getInt("groups");
  if (groups <= 0)
    return Error::format("attribute 'groups' must be positive, got {}", groups);
  if (w[2] <= 0 || w[3] <= 0)
    return Error::format("kernel size [{}, {}] must be positive", w[2], w[3]);
  if (x[1] % groups != 0)
    return Error::format("input channels {} are not divisible by groups {}", x[1], groups);
  if (w[0] % groups != 0)
    return Error::format("output channels {} are not divisible by groups {}", w[0], groups);
  if (x[1] != w[1] * groups)
    return Error::format("input channels {} do not match weight channels {} x groups {}", x[1],
                         w[1], groups);
  ConvGeom g{win, groups, 0, 0};
  int64_t out[2];
  for (int i = 0; i < 2; ++i)
    out[i] = floorDiv(x[2 + i] + win.p0[i] + win.p1[i] - win.extent(i), win.s[i]) + 1;
  TS_RETURN_IF_ERROR(requireOutputPositive(out[0], out[1]));
  g.oh = out[0], g.ow = out[1];
  return g;
}

Expected<Type> conv2dRelation(std::span<const Type> in, const Attrs &attrs) {
  TS_ASSIGN_OR_RETURN(ConvGeom g, conv2dGeom(in, attrs));
  return Type::tensor(in[0].dtype(), {in[0].shape()[0], in[1].shape()[0], g.oh, g.ow});
}

Expected<std::vector<Tensor>> conv2dKernel(std::span<const Tensor> in, const Attrs &attrs,
                                           const Type &outType) {
  const Tensor &x = in[0], &w = in[1];
  Type types[2] = {x.type(), w.type()};
  TS_ASSIGN_OR_RETURN(ConvGeom g, conv2dGeom(types, attrs));
  const Shape &xs = x.shape(), &ws = w.shape();
  Tensor y(outType.dtype(), outType.shape());
  const Shape &ys = y.shape();
  const Window &win = g.win;
  int64_t cPerGroup = ws[1], oPerGroup = ws[0] / g.groups;
  for (int64_t n = 0; n < ys[0]; ++n)
    for (int64_t o = 0; o < ys[1]; ++o) {
      int64_t group = o / oPerGroup;
      for (int64_t oh = 0; oh < ys[2]; ++oh)
        for (int64_t ow = 0; ow < ys[3]; ++ow) {
          double acc = 0;
          for (int64_t c = 0; c < cPerGroup; ++c) {
            int64_t ic = group * cPerGroup + c;
            for (int64_t kh = 0; kh < ws[2]; ++kh) {
              int64_t ih = oh * win.s[0] - win.p0[0] + kh * win.d[0];
              if (ih < 0 || ih >= xs[2])
                continue;
              for (int64_t kw = 0; kw < ws[3]; ++kw) {
                int64_t iw = ow * win.s[1] - win.p0[1] + kw * win.d[1];
                if (iw < 0 || iw >= xs[3])
                  continue;
                acc += x.getDouble(idx4(xs, n, ic, ih, iw)) * w.getDouble(idx4(ws, o, c, kh, kw));
              }
            }
          }
          y.setDouble(idx4(ys, n, o, oh, ow), acc);
        }
    }
  return std::vector<Tensor>{y};
}

//===----------------------------------------------------------------------===//
// conv2d_transpose (ONNX ConvTranspose): the gradient of conv2d w.r.t. its
// input. Every x[n, c, ih, iw] scatters x * w[c, oo, kh, kw] into
// y[n, g*O/G + oo, ih*sh - top + kh*dh, iw*sw - left + kw*dw], g = c / (C/G).
// data [N, C, H, W], weight [C, O/groups, KH, KW]; output_padding extends the
// bottom/right of the output.
//===----------------------------------------------------------------------===//

Expected<ConvGeom> conv2dTransposeGeom(std::span<const Type> in, const Attrs &attrs) {
  TS_RETURN_IF_ERROR(requireRank(in, 0, 4, "data"));
  TS_RETURN_IF_ERROR(requireRank(in, 1, 4, "weight"));
  TS_RETURN_IF_ERROR(requireFloat(in, 0));
  TS_RETURN_IF_ERROR(requireSameDType(in));
  const Shape &x = in[0].shape(), &w = in[1].shape();
  TS_ASSIGN_OR_RETURN(Window win, readWindow(attrs, w[2], w[3]));
  auto outPad = attrs.getInts("output_padding");
  TS_RETURN_IF_ERROR(requireLength(outPad, "output_padding", 2));
  TS_RETURN_IF_ERROR(requireNonNegative(outPad, "output_padding"));
  int64_t groups = attrs.getInt("groups");
  if (groups <= 0)
    return Error::format("attribute 'groups' must be positive, got {}", groups);
  if (w[2] <= 0 || w[3] <= 0)
    return Error::format("kernel size [{}, {}] must be positive", w[2], w[3]);
  if (x[1] != w[0])
    return Error::format("input channels {} do not match weight input channels {}", x[1], w[0]);
  if (x[1] % groups != 0)
    return Error::format("input channels {} are not divisible by groups {}", x[1], groups);
  ConvGeom g{win, groups, 0, 0};
  int64_t out[2];
  for (int i = 0; i < 2; ++i)
    out[i] = (x[2 + i] - 1) * win.s[i] - win.p0[i] - win.p1[i] + win.extent(i) + outPad[i];
  TS_RETURN_IF_ERROR(requireOutputPositive(out[0], out[1]));
  g.oh = out[0], g.ow = out[1];
  return g;
}

Expected<Type> conv2dTransposeRelation(std::span<const Type> in, const Attrs &attrs) {
  TS_ASSIGN_OR_RETURN(ConvGeom g, conv2dTransposeGeom(in, attrs));
  return Type::tensor(in[0].dtype(), {in[0].shape()[0], in[1].shape()[1] * g.groups, g.oh, g.ow});
}

Expected<std::vector<Tensor>> conv2dTransposeKernel(std::span<const Tensor> in, const Attrs &attrs,
                                                    const Type &outType) {
  const Tensor &x = in[0], &w = in[1];
  Type types[2] = {x.type(), w.type()};
  TS_ASSIGN_OR_RETURN(ConvGeom g, conv2dTransposeGeom(types, attrs));
  const Shape &xs = x.shape(), &ws = w.shape();
  const Shape &ys = outType.shape();
  const Window &win = g.win;
  std::vector<double> acc(size_t(numElements(ys)), 0.0);
  int64_t cPerGroup = xs[1] / g.groups, oPerGroup = ws[1];
  for (int64_t n = 0; n < xs[0]; ++n)
    for (int64_t c = 0; c < xs[1]; ++c) {
      int64_t group = c / cPerGroup;
      for (int64_t ih = 0; ih < xs[2]; ++ih)
        for (int64_t iw = 0; iw < xs[3]; ++iw) {
          double xv = x.getDouble(idx4(xs, n, c, ih, iw));
          for (int64_t oo = 0; oo < oPerGroup; ++oo) {
            int64_t o = group * oPerGroup + oo;
            for (int64_t kh = 0; kh < ws[2]; ++kh) {
              int64_t oh = ih * win.s[0] - win.p0[0] + kh * win.d[0];
              if (oh < 0 || oh >= ys[2])
                continue;
              for (int64_t kw = 0; kw < ws[3]; ++kw) {
                int64_t ow = iw * win.s[1] - win.p0[1] + kw * win.d[1];
                if (ow < 0 || ow >= ys[3])
                  continue;
                acc[size_t(idx4(ys, n, o, oh, ow))] += xv * w.getDouble(idx4(ws, c, oo, kh, kw));
              }
            }
          }
        }
    }
  return std::vector<Tensor>{Tensor::fromDoubles(outType.dtype(), ys, acc)};
}

//===----------------------------------------------------------------------===//
// Pooling. Output size per spatial dim (ONNX MaxPool/AveragePool):
//   out = floor_or_ceil((in + pad0 + pad1 - (dilation*(k-1) + 1)) / stride) + 1
// and with ceil_mode a last window that would start in the right padding
// ((out-1)*stride >= in + pad0) is dropped.
//===----------------------------------------------------------------------===//

struct PoolGeom {
  Window win;
  int64_t oh, ow;
};

Expected<PoolGeom> pool2dGeom(std::span<const Type> in, const Attrs &attrs) {
  TS_RETURN_IF_ERROR(requireRank(in, 0, 4, "data"));
  auto poolSize = attrs.getInts("pool_size");
  TS_RETURN_IF_ERROR(requireLength(poolSize, "pool_size", 2));
  TS_RETURN_IF_ERROR(requirePositive(poolSize, "pool_size"));
  TS_ASSIGN_OR_RETURN(Window win, readWindow(attrs, poolSize[0], poolSize[1]));
  bool ceilMode = attrs.getBool("ceil_mode");
  const Shape &x = in[0].shape();
  int64_t out[2];
  for (int i = 0; i < 2; ++i) {
    int64_t span = x[2 + i] + win.p0[i] + win.p1[i] - win.extent(i);
    out[i] = (ceilMode ? ceilDiv(span, win.s[i]) : floorDiv(span, win.s[i])) + 1;
    if (ceilMode && out[i] > 0 && (out[i] - 1) * win.s[i] >= x[2 + i] + win.p0[i])
      --out[i];
  }
  TS_RETURN_IF_ERROR(requireOutputPositive(out[0], out[1]));
  return PoolGeom{win, out[0], out[1]};
}

Expected<Type> maxPool2dRelation(std::span<const Type> in, const Attrs &attrs) {
  TS_RETURN_IF_ERROR(requireNumeric(in, 0));
  TS_ASSIGN_OR_RETURN(PoolGeom g, pool2dGeom(in, attrs));
  const Shape &x = in[0].shape();
  return Type::tensor(in[0].dtype(), {x[0], x[1], g.oh, g.ow});
}

Expected<Type> avgPool2dRelation(std::span<const Type> in, const Attrs &attrs) {
  TS_RETURN_IF_ERROR(requireFloat(in, 0));
  TS_ASSIGN_OR_RETURN(PoolGeom g, pool2dGeom(in, attrs));
  const Shape &x = in[0].shape();
  return Type::tensor(in[0].dtype(), {x[0], x[1], g.oh, g.ow});
}

// max_pool2d: the maximum over the window's positions inside the input;
// padded positions never win. A window holding no input element (possible
// only with pads >= window) gives 0, as ONNX's reference implementation does.
// Integers compare as int64 (u64 as uint64), floats as double (a leading NaN
// sticks).
template <typename V>
void maxPoolLoop(const Tensor &x, Tensor &y, const Window &win, V (Tensor::*get)(int64_t) const,
                 void (Tensor::*set)(int64_t, V)) {
  const Shape &xs = x.shape(), &ys = y.shape();
  for (int64_t n = 0; n < ys[0]; ++n)
    for (int64_t c = 0; c < ys[1]; ++c)
      for (int64_t oh = 0; oh < ys[2]; ++oh)
        for (int64_t ow = 0; ow < ys[3]; ++ow) {
          bool found = false;
          V best{};
          for (int64_t kh = 0; kh < win.k[0]; ++kh) {
            int64_t ih = oh * win.s[0] - win.p0[0] + kh * win.d[0];
            if (ih < 0 || ih >= xs[2])
              continue;
            for (int64_t kw = 0; kw < win.k[1]; ++kw) {
              int64_t iw = ow * win.s[1] - win.p0[1] + kw * win.d[1];
              if (iw < 0 || iw >= xs[3])
                continue;
              V v = (x.*get)(idx4(xs, n, c, ih, iw));
              if (!found || v > best)
                best = v, found = true;
            }
          }
          (y.*set)(idx4(ys, n, c, oh, ow), found ? best : V{});
        }
}

Expected<std::vector<Tensor>> maxPool2dKernel(std::span<const Tensor> in, const Attrs &attrs,
                                              const Type &outType) {
  Type types[1] = {in[0].type()};
  TS_ASSIGN_OR_RETURN(PoolGeom g, pool2dGeom(types, attrs));
  Tensor y(outType.dtype(), outType.shape());
  if (isFloat(in[0].dtype()))
    maxPoolLoop<double>(in[0], y, g.win, &Tensor::getDouble, &Tensor::setDouble);
  else if (in[0].dtype() == DType::U64)
    maxPoolLoop<uint64_t>(in[0], y, g.win, &Tensor::getUInt, &Tensor::setUInt);
  else
    maxPoolLoop<int64_t>(in[0], y, g.win, &Tensor::getInt, &Tensor::setInt);
  return std::vector<Tensor>{y};
}

// max_pool2d_indices: where max_pool2d's maximum comes from, as a flat index
// into the input (ONNX MaxPool's Indices output): (n*C + c)*H*W + h*W + w,
// or (n*C + c)*H*W + w*H + h with storage_order 1 (column-major). The first
// maximum in window order wins; padded positions never win. A window holding
// no input element gives -1.
Expected<Type> maxPool2dIndicesRelation(std::span<const Type> in, const Attrs &attrs) {
  TS_RETURN_IF_ERROR(requireNumeric(in, 0));
  int64_t order = attrs.getInt("storage_order");
  if (order != 0 && order != 1)
    return Error::format("attribute 'storage_order' must be 0 or 1, got {}", order);
  TS_ASSIGN_OR_RETURN(PoolGeom g, pool2dGeom(in, attrs));
  const Shape &x = in[0].shape();
  return Type::tensor(DType::I64, {x[0], x[1], g.oh, g.ow});
}

Expected<std::vector<Tensor>> maxPool2dIndicesKernel(std::span<const Tensor> in, const Attrs &attrs,
                                                     const Type &outType) {
  const Tensor &x = in[0];
  Type types[1] = {x.type()};
  TS_ASSIGN_OR_RETURN(PoolGeom g, pool2dGeom(types, attrs));
  bool columnMajor = attrs.getInt("storage_order") == 1;
  bool fp = isFloat(x.dtype());
  const Window &win = g.win;
  const Shape &xs = x.shape(), &ys = outType.shape();
  Tensor y(DType::I64, ys);
  for (int64_t n = 0; n < ys[0]; ++n)
    for (int64_t c = 0; c < ys[1]; ++c)
      for (int64_t oh = 0; oh < ys[2]; ++oh)
        for (int64_t ow = 0; ow < ys[3]; ++ow) {
          int64_t best = -1, bh = 0, bw = 0;
          for (int64_t kh = 0; kh < win.k[0]; ++kh) {
            int64_t ih = oh * win.s[0] - win.p0[0] + kh * win.d[0];
            if (ih < 0 || ih >= xs[2])
              continue;
            for (int64_t kw = 0; kw < win.k[1]; ++kw) {
              int64_t iw = ow * win.s[1] - win.p0[1] + kw * win.d[1];
              if (iw < 0 || iw >= xs[3])
                continue;
              int64_t at = idx4(xs, n, c, ih, iw);
              bool better = best < 0 || (fp ? x.getDouble(at) > x.getDouble(best)
                                            : orderKey(x.dtype(), x.getInt(at)) >
                                                  orderKey(x.dtype(), x.getInt(best)));
              if (better)
                best = at, bh = ih, bw = iw;
            }
          }
          int64_t plane = (n * xs[1] + c) * xs[2] * xs[3];
          int64_t index = best < 0 ? -1 : plane + (columnMajor ? bw * xs[2] + bh : bh * xs[3] + bw);
          y.setInt(idx4(ys, n, c, oh, ow), index);
        }
  return std::vector<Tensor>{y};
}

/// Number of taps start + k*dilation (k < size) that fall in [lo, hi).
int64_t tapsInside(int64_t start, int64_t size, int64_t dilation, int64_t lo, int64_t hi) {
  int64_t count = 0;
  for (int64_t k = 0; k < size; ++k) {
    int64_t p = start + k * dilation;
    count += p >= lo && p < hi;
  }
  return count;
}

// avg_pool2d: the sum of the window's input elements (padding is zero)
// divided by the number of taps inside the input (count_include_pad false)
// or inside the padded input (true). Taps past the padded input, which
// ceil_mode can create, never count.
Expected<std::vector<Tensor>> avgPool2dKernel(std::span<const Tensor> in, const Attrs &attrs,
                                              const Type &outType) {
  const Tensor &x = in[0];
  Type types[1] = {x.type()};
  TS_ASSIGN_OR_RETURN(PoolGeom g, pool2dGeom(types, attrs));
  bool includePad = attrs.getBool("count_include_pad");
  const Window &win = g.win;
  Tensor y(outType.dtype(), outType.shape());
  const Shape &xs = x.shape(), &ys = y.shape();
  for (int64_t oh = 0; oh < ys[2]; ++oh)
    for (int64_t ow = 0; ow < ys[3]; ++ow) {
      int64_t hs = oh * win.s[0] - win.p0[0], ws = ow * win.s[1] - win.p0[1];
      int64_t count = includePad
                          ? tapsInside(hs, win.k[0], win.d[0], -win.p0[0], xs[2] + win.p1[0]) *
                                tapsInside(ws, win.k[1], win.d[1], -win.p0[1], xs[3] + win.p1[1])
                          : tapsInside(hs, win.k[0], win.d[0], 0, xs[2]) *
                                tapsInside(ws, win.k[1], win.d[1], 0, xs[3]);
      for (int64_t n = 0; n < ys[0]; ++n)
        for (int64_t c = 0; c < ys[1]; ++c) {
          double sum = 0;
          for (int64_t kh = 0; kh < win.k[0]; ++kh) {
            int64_t ih = hs + kh * win.d[0];
            if (ih < 0 || ih >= xs[2])
              continue;
            for (int64_t kw = 0; kw < win.k[1]; ++kw) {
              int64_t iw = ws + kw * win.d[1];
              if (iw >= 0 && iw < xs[3])
                sum += x.getDouble(idx4(xs, n, c, ih, iw));
            }
          }
          // count == 0 (a window of padding only) gives NaN, as ONNX's
          // reference (mean of nothing) does.
          y.setDouble(idx4(ys, n, c, oh, ow), sum / double(count));
        }
    }
  return std::vector<Tensor>{y};
}

//===----------------------------------------------------------------------===//
// global_avg_pool2d / global_max_pool2d: mean / max over H and W -> [N, C, 1, 1].
//===----------------------------------------------------------------------===//

Expected<Type> globalPoolType(std::span<const Type> in) {
  TS_RETURN_IF_ERROR(requireRank(in, 0, 4, "data"));
  const Shape &x = in[0].shape();
  if (x[2] * x[3] == 0)
    return Error::format("spatial size [{}, {}] must not be empty", x[2], x[3]);
  return Type::tensor(in[0].dtype(), {x[0], x[1], 1, 1});
}

Expected<std::vector<Tensor>> globalPoolKernel(const Tensor &x, const Type &outType, bool max) {
  Tensor y(outType.dtype(), outType.shape());
  int64_t planes = x.shape()[0] * x.shape()[1];
  int64_t plane = x.shape()[2] * x.shape()[3];
  bool isF = isFloat(x.dtype());
  for (int64_t p = 0; p < planes; ++p) {
    int64_t base = p * plane;
    if (!max) {
      double sum = 0;
      for (int64_t i = 0; i < plane; ++i)
        sum += x.getDouble(base + i);
      y.setDouble(p, sum / double(plane));
    } else if (isF) {
      double best = x.getDouble(base);
      for (int64_t i = 1; i < plane; ++i)
        if (double v = x.getDouble(base + i); v > best)
          best = v;
      y.setDouble(p, best);
    } else {
      // Order keys: the values, except u64 (see orderKey).
      int64_t best = orderKey(x.dtype(), x.getInt(base));
      for (int64_t i = 1; i < plane; ++i)
        best = std::max(best, orderKey(x.dtype(), x.getInt(base + i)));
      y.setInt(p, fromOrderKey(x.dtype(), best));
    }
  }
  return std::vector<Tensor>{y};
}

} // namespace

Status registerConvPoolOps(OpRegistry &r) {
  TS_RETURN_IF_ERROR(r.add(Op{
      .name = "conv2d",
      .description = "2-D convolution, NCHW, grouped and dilated (ONNX Conv)",
      .argNames = {"data", "weight"},
      .minArgs = 2,
      .maxArgs = 2,
      .attrs = {kStridesSpec, kPadsSpec, kDilationSpec,
                AttrSpec{"groups", AttrKind::Int, AttrValue(int64_t{1}),
                         "number of channel groups"}},
      .pattern = OpPattern::ComputeHeavy,
      .relation = conv2dRelation,
      .kernel = conv2dKernel,
  }));

  TS_RETURN_IF_ERROR(r.add(Op{
      .name = "conv2d_transpose",
      .description = "2-D transposed convolution, NCHW (ONNX ConvTranspose)",
      .argNames = {"data", "weight"},
      .minArgs = 2,
      .maxArgs = 2,
      .attrs = {kStridesSpec, kPadsSpec, kDilationSpec,
                AttrSpec{"groups", AttrKind::Int, AttrValue(int64_t{1}),
                         "number of channel groups"},
                AttrSpec{"output_padding", AttrKind::Ints, intsValue({0, 0}),
                         "extra output rows/columns at the bottom/right [h, w]"}},
      .pattern = OpPattern::ComputeHeavy,
      .relation = conv2dTransposeRelation,
      .kernel = conv2dTransposeKernel,
  }));

  const AttrSpec poolSizeSpec{"pool_size", AttrKind::Ints, std::nullopt, "pooling window [h, w]"};
  const AttrSpec ceilModeSpec{"ceil_mode", AttrKind::Bool, AttrValue(false),
                              "round the output size up instead of down"};

  TS_RETURN_IF_ERROR(r.add(Op{
      .name = "max_pool2d",
      .description = "2-D max pooling, NCHW (ONNX MaxPool)",
      .argNames = {"data"},
      .minArgs = 1,
      .maxArgs = 1,
      .attrs = {poolSizeSpec, kStridesSpec, kPadsSpec, kDilationSpec, ceilModeSpec},
      .pattern = OpPattern::Opaque,
      .relation = maxPool2dRelation,
      .kernel = maxPool2dKernel,
  }));

  TS_RETURN_IF_ERROR(r.add(Op{
      .name = "max_pool2d_indices",
      .description = "flat input indices of the 2-D max pooling maxima, NCHW, i64 (ONNX "
                     "MaxPool's Indices)",
      .argNames = {"data"},
      .minArgs = 1,
      .maxArgs = 1,
      .attrs = {poolSizeSpec, kStridesSpec, kPadsSpec, kDilationSpec, ceilModeSpec,
                AttrSpec{"storage_order", AttrKind::Int, AttrValue(int64_t{0}),
                         "0: row-major indices (h*W + w), 1: column-major (w*H + h)"}},
      .pattern = OpPattern::Opaque,
      .relation = maxPool2dIndicesRelation,
      .kernel = maxPool2dIndicesKernel,
  }));

  TS_RETURN_IF_ERROR(r.add(Op{
      .name = "avg_pool2d",
      .description = "2-D average pooling, NCHW (ONNX AveragePool)",
      .argNames = {"data"},
      .minArgs = 1,
      .maxArgs = 1,
      .attrs = {poolSizeSpec, kStridesSpec, kPadsSpec, kDilationSpec, ceilModeSpec,
                AttrSpec{"count_include_pad", AttrKind::Bool, AttrValue(false),
                         "count padded positions in the divisor"}},
      .pattern = OpPattern::Opaque,
      .relation = avgPool2dRelation,
      .kernel = avgPool2dKernel,
  }));

  TS_RETURN_IF_ERROR(r.add(Op{
      .name = "global_avg_pool2d",
      .description = "mean over H and W, NCHW -> [N, C, 1, 1] (ONNX GlobalAveragePool)",
      .argNames = {"data"},
      .minArgs = 1,
      .maxArgs = 1,
      .attrs = {},
      .pattern = OpPattern::Reduction,
      .relation = [](std::span<const Type> in, const Attrs &) -> Expected<Type> {
        TS_RETURN_IF_ERROR(requireFloat(in, 0));
        return globalPoolType(in);
      },
      .kernel = [](std::span<const Tensor> in, const Attrs &,
                   const Type &outType) { return globalPoolKernel(in[0], outType, /*max=*/false); },
  }));

  TS_RETURN_IF_ERROR(r.add(Op{
      .name = "global_max_pool2d",
      .description = "max over H and W, NCHW -> [N, C, 1, 1] (ONNX GlobalMaxPool)",
      .argNames = {"data"},
      .minArgs = 1,
      .maxArgs = 1,
      .attrs = {},
      .pattern = OpPattern::Reduction,
      .relation = [](std::span<const Type> in, const Attrs &) -> Expected<Type> {
        TS_RETURN_IF_ERROR(requireNumeric(in, 0));
        return globalPoolType(in);
      },
      .kernel = [](std::span<const Tensor> in, const Attrs &,
                   const Type &outType) { return globalPoolKernel(in[0], outType, /*max=*/true); },
  }));
  return okStatus();
}

} // namespace tessera::ir::ops
