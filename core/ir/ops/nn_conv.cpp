//===- ir/ops/nn_conv.cpp - Convolution ops ------------------------------===//
//
// The convolutions of the NN family: conv2d and conv2d_transpose, with
// their type relations and reference kernels. Layout is NCHW; semantics
// follow ONNX Conv / ConvTranspose. Pooling, the other sliding-window ops,
// is in nn_pool.cpp; the window helpers both use are in nn_window.h.
//
// Window attributes use ONNX conventions: pads = [top, left, bottom, right],
// strides and dilation = [h, w].
//
//===----------------------------------------------------------------------===//
#include "ir/ops/common.h"
#include "ir/ops/nn_window.h"
#include "ir/ops/ops.h"

#include <vector>

namespace tessera::ir::ops {

namespace {

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

} // namespace

Status registerConvOps(OpRegistry &r) {
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
  return okStatus();
}

} // namespace tessera::ir::ops
