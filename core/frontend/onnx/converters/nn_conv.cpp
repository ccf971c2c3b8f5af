//===- frontend/onnx/converters/nn_conv.cpp - ONNX convolution converters ---===//
//
// Conv and ConvTranspose, 1-D, 2-D and 3-D, and the window helpers that the
// pooling converters share (nn_internal.h). The core IR has 2-D (NCHW)
// convolutions; 1-D windows become 2-D ones over [N, C, 1, L], and 3-D
// convolutions are decomposed exactly into one 2-D convolution per kernel
// depth tap (summed).
//
// Every converter states the opsets and attributes it handles; anything else
// is an error naming the node. registerNNConverters() (nn.cpp) registers
// them.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/converters/nn_internal.h"

#include <algorithm>

namespace tessera::frontend::onnx::nn_detail {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

namespace {

/// Elements [start, end) of axis `axis`, every `step`-th.
Expected<Expr> sliceAxis(NodeContext &ctx, const Expr &x, int64_t axis, int64_t start, int64_t end,
                         int64_t step = 1) {
  return ctx.call(
      "slice", {x},
      {{"starts", Ints{start}}, {"ends", Ints{end}}, {"axes", Ints{axis}}, {"steps", Ints{step}}});
}

/// Pads (positive) or crops (negative) axis `axis` with zeros.
Expected<Expr> padAxis(NodeContext &ctx, const Expr &x, int64_t axis, int64_t begin, int64_t end) {
  if (begin == 0 && end == 0)
    return x;
  size_t r = size_t(rankOf(x));
  Ints pads(2 * r, 0);
  pads[size_t(axis)] = begin;
  pads[r + size_t(axis)] = end;
  return ctx.call("pad", {x}, {{"pads", pads}});
}

/// ONNX's INTS attribute `name` with `n` values, or `fallback` repeated.
Expected<Ints> spatialAttr(NodeContext &ctx, std::string_view name, size_t n, int64_t fallback) {
  TS_ASSIGN_OR_RETURN(Ints v, ctx.attrInts(name, Ints(n, fallback)));
  if (v.size() != n)
    return ctx.error("attribute '{}' must have {} values, got {}", name, n, v.size());
  return v;
}

/// Resolves auto_pad (NOTSET, VALID, SAME_UPPER, SAME_LOWER) for a forward
/// window over `in` (the spatial input dims).
Expected<Ints> resolvePads(NodeContext &ctx, const Window &w, std::span<const int64_t> in) {
  size_t n = in.size();
  TS_ASSIGN_OR_RETURN(std::string autoPad, ctx.attrString("auto_pad", std::string("NOTSET")));
  if (autoPad == "NOTSET")
    return spatialAttr(ctx, "pads", 2 * n, 0);
  if (autoPad == "VALID")
    return Ints(2 * n, 0);
  if (autoPad != "SAME_UPPER" && autoPad != "SAME_LOWER")
    return ctx.error("attribute 'auto_pad' = \"{}\" is not NOTSET, VALID, SAME_UPPER or "
                     "SAME_LOWER",
                     autoPad);
  Ints pads(2 * n, 0);
  for (size_t i = 0; i < n; ++i) {
    int64_t out = (in[i] + w.strides[i] - 1) / w.strides[i];
    int64_t extent = (w.kernel[i] - 1) * w.dilations[i] + 1;
    int64_t total = std::max<int64_t>(0, (out - 1) * w.strides[i] + extent - in[i]);
    int64_t small = total / 2;
    pads[i] = autoPad == "SAME_UPPER" ? small : total - small;
    pads[n + i] = total - pads[i];
  }
  return pads;
}

} // namespace

/// Reads kernel_shape (or `kernelFallback`), strides, dilations and pads.
Expected<Window> readWindow(NodeContext &ctx, std::span<const int64_t> in,
                            std::optional<Ints> kernelFallback, bool resolveAutoPad) {
  size_t n = in.size();
  Window w;
  TS_ASSIGN_OR_RETURN(w.kernel, ctx.attrInts("kernel_shape", kernelFallback));
  if (w.kernel.size() != n)
    return ctx.error("attribute 'kernel_shape' must have {} values, got {}", n, w.kernel.size());
  TS_ASSIGN_OR_RETURN(w.strides, spatialAttr(ctx, "strides", n, 1));
  TS_ASSIGN_OR_RETURN(w.dilations, spatialAttr(ctx, "dilations", n, 1));
  for (size_t i = 0; i < n; ++i)
    if (w.kernel[i] <= 0 || w.strides[i] <= 0 || w.dilations[i] <= 0)
      return ctx.error("kernel_shape, strides and dilations must be positive");
  if (resolveAutoPad) {
    TS_ASSIGN_OR_RETURN(w.pads, resolvePads(ctx, w, in));
  }
  return w;
}

Status requireRankIn(NodeContext &ctx, const Expr &x, int64_t lo, int64_t hi,
                     std::string_view what) {
  int64_t r = rankOf(x);
  if (r < lo || r > hi)
    return ctx.error("{} must have rank {}..{}, got {}", what, lo, hi, x->type().str());
  return okStatus();
}

//===----------------------------------------------------------------------===//
// Conv (opsets 1-17): 1-D, 2-D and 3-D; group, dilations, strides, pads,
// auto_pad, optional bias.
//===----------------------------------------------------------------------===//

namespace {

ir::Attrs conv2dAttrs(const Window &w, int64_t group) {
  // ONNX pads [h0, w0, h1, w1] are conv2d's [top, left, bottom, right].
  return {{"strides", w.strides}, {"pads", w.pads}, {"dilation", w.dilations}, {"groups", group}};
}

} // namespace

/// A window over [N, C, L] as a window over [N, C, 1, L].
Window window1dAs2d(const Window &w) {
  return {{1, w.kernel[0]}, {1, w.strides[0]}, {1, w.dilations[0]}, {0, w.pads[0], 0, w.pads[1]}};
}

/// The (H, W) part of a 3-D window.
Window windowHW(const Window &w) {
  return {{w.kernel[1], w.kernel[2]},
          {w.strides[1], w.strides[2]},
          {w.dilations[1], w.dilations[2]},
          {w.pads[1], w.pads[2], w.pads[4], w.pads[5]}};
}

namespace {

/// 3-D convolution as a sum over the kernel's depth taps kd of 2-D
/// convolutions of the depth slices x[:, :, od*sd + kd*dd] (batched over the
/// output depth) with w[:, :, kd].
Expected<Expr> conv3dByDepthTaps(NodeContext &ctx, Expr x, const Expr &w, const Window &win,
                                 int64_t group) {
  TS_ASSIGN_OR_RETURN(x, padAxis(ctx, x, 2, win.pads[0], win.pads[3]));
  const ir::Shape xs = shapeOf(x), ws = shapeOf(w);
  int64_t N = xs[0], C = xs[1], D = xs[2], H = xs[3], W = xs[4];
  int64_t O = ws[0], KD = ws[2];
  int64_t extent = (KD - 1) * win.dilations[0] + 1;
  if (D < extent)
    return ctx.error("the kernel's depth extent {} exceeds the padded input depth {}", extent, D);
  int64_t OD = (D - extent) / win.strides[0] + 1;
  Window hw = windowHW(win);
  Expr sum;
  for (int64_t kd = 0; kd < KD; ++kd) {
    int64_t start = kd * win.dilations[0];
    TS_ASSIGN_OR_RETURN(Expr xs3, sliceAxis(ctx, x, 2, start, start + (OD - 1) * win.strides[0] + 1,
                                            win.strides[0]));
    TS_ASSIGN_OR_RETURN(Expr xt, transpose(ctx, xs3, {0, 2, 1, 3, 4}));
    TS_ASSIGN_OR_RETURN(Expr x2, reshapeTo(ctx, xt, {N * OD, C, H, W}));
    TS_ASSIGN_OR_RETURN(Expr wk, sliceAxis(ctx, w, 2, kd, kd + 1));
    TS_ASSIGN_OR_RETURN(Expr w2, reshapeTo(ctx, wk, {O, ws[1], ws[3], ws[4]}));
    TS_ASSIGN_OR_RETURN(Expr y, ctx.call("conv2d", {x2, w2}, conv2dAttrs(hw, group)));
    if (sum) {
      TS_ASSIGN_OR_RETURN(sum, ctx.call("add", {sum, y}));
    } else {
      sum = y;
    }
  }
  const ir::Shape ys = shapeOf(sum);
  TS_ASSIGN_OR_RETURN(Expr y5, reshapeTo(ctx, sum, {N, OD, O, ys[2], ys[3]}));
  return transpose(ctx, y5, {0, 2, 1, 3, 4});
}

} // namespace

Expected<Outputs> convertConv(NodeContext &ctx) {
  const Expr &x = ctx.input(0);
  const Expr &w = ctx.input(1);
  TS_RETURN_IF_ERROR(requireRankIn(ctx, x, 3, 5, "input X"));
  if (rankOf(w) != rankOf(x))
    return ctx.error("weight W {} must have the rank of X {}", w->type().str(), x->type().str());
  auto spatial = std::span(shapeOf(x)).subspan(2);
  Ints wk(shapeOf(w).begin() + 2, shapeOf(w).end());
  TS_ASSIGN_OR_RETURN(Window win, readWindow(ctx, spatial, wk));
  if (win.kernel != wk)
    return ctx.error("attribute 'kernel_shape' = {} does not match the weight's {}",
                     ir::shapeStr(win.kernel), ir::shapeStr(wk));
  TS_ASSIGN_OR_RETURN(int64_t group, ctx.attrInt("group", int64_t{1}));
  Expr y;
  if (spatial.size() == 2) {
    TS_ASSIGN_OR_RETURN(y, ctx.call("conv2d", {x, w}, conv2dAttrs(win, group)));
  } else if (spatial.size() == 1) {
    TS_ASSIGN_OR_RETURN(Expr x4, ctx.call("unsqueeze", {x}, {{"axes", Ints{2}}}));
    TS_ASSIGN_OR_RETURN(Expr w4, ctx.call("unsqueeze", {w}, {{"axes", Ints{2}}}));
    TS_ASSIGN_OR_RETURN(Expr y4,
                        ctx.call("conv2d", {x4, w4}, conv2dAttrs(window1dAs2d(win), group)));
    TS_ASSIGN_OR_RETURN(y, ctx.call("squeeze", {y4}, {{"axes", Ints{2}}}));
  } else {
    TS_ASSIGN_OR_RETURN(y, conv3dByDepthTaps(ctx, x, w, win, group));
  }
  if (ctx.hasInput(2)) {
    TS_ASSIGN_OR_RETURN(y, ctx.call("bias_add", {y, ctx.input(2)}, {{"axis", int64_t{1}}}));
  }
  return Outputs{y};
}

//===----------------------------------------------------------------------===//
// ConvTranspose (opsets 1-17): 1-D, 2-D and 3-D; group, dilations, strides,
// pads, output_padding, output_shape, auto_pad, optional bias.
//
// The full output along a spatial dim has F = s*(in-1) + (k-1)*d + 1 +
// output_padding positions; the result is F[begin, F - end) where (begin,
// end) are the pads, or come from output_shape/auto_pad: total = F - out,
// the larger half goes to the end except with SAME_LOWER. Negative pads
// extend the output with zeros.
//===----------------------------------------------------------------------===//

namespace {

/// Per spatial dim: the pads (begin, end) of a ConvTranspose, maybe negative.
Expected<Ints> convTransposePads(NodeContext &ctx, const Window &w, std::span<const int64_t> in,
                                 const Ints &outputPadding) {
  size_t n = in.size();
  TS_ASSIGN_OR_RETURN(std::string autoPad, ctx.attrString("auto_pad", std::string("NOTSET")));
  if (autoPad != "NOTSET" && autoPad != "VALID" && autoPad != "SAME_UPPER" &&
      autoPad != "SAME_LOWER")
    return ctx.error("attribute 'auto_pad' = \"{}\" is not NOTSET, VALID, SAME_UPPER or "
                     "SAME_LOWER",
                     autoPad);
  std::optional<Ints> outShape;
  if (ctx.hasAttr("output_shape")) {
    TS_ASSIGN_OR_RETURN(Ints os, ctx.attrInts("output_shape"));
    if (os.size() == n + 2)
      os.erase(os.begin(), os.begin() + 2);
    if (os.size() != n)
      return ctx.error("attribute 'output_shape' must have {} values, got {}", n, os.size());
    outShape = os;
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    Ints os(n);
    for (size_t i = 0; i < n; ++i)
      os[i] = in[i] * w.strides[i];
    outShape = os;
  }
  if (!outShape) {
    if (autoPad == "VALID")
      return Ints(2 * n, 0);
    return spatialAttr(ctx, "pads", 2 * n, 0);
  }
  Ints pads(2 * n);
  for (size_t i = 0; i < n; ++i) {
    int64_t full =
        w.strides[i] * (in[i] - 1) + outputPadding[i] + (w.kernel[i] - 1) * w.dilations[i] + 1;
    int64_t total = full - (*outShape)[i];
    int64_t half = total / 2; // truncates toward zero
    pads[i] = autoPad == "SAME_LOWER" ? total - half : half;
    pads[n + i] = total - pads[i];
  }
  return pads;
}

/// 2-D transposed convolution with possibly negative pads (zero extension).
Expected<Expr> convTranspose2d(NodeContext &ctx, const Expr &x, const Expr &w, const Window &win,
                               const Ints &outputPadding, int64_t group) {
  Ints pads(4), extend(4);
  for (size_t i = 0; i < 4; ++i) {
    pads[i] = std::max<int64_t>(win.pads[i], 0);
    extend[i] = std::max<int64_t>(-win.pads[i], 0);
  }
  TS_ASSIGN_OR_RETURN(Expr y, ctx.call("conv2d_transpose", {x, w},
                                       {{"strides", win.strides},
                                        {"pads", pads},
                                        {"dilation", win.dilations},
                                        {"groups", group},
                                        {"output_padding", outputPadding}}));
  if (std::all_of(extend.begin(), extend.end(), [](int64_t v) { return v == 0; }))
    return y;
  return ctx.call("pad", {y},
                  {{"pads", Ints{0, 0, extend[0], extend[1], 0, 0, extend[2], extend[3]}}});
}

/// 3-D transposed convolution: for each kernel depth tap kd, a 2-D
/// transposed convolution of every input depth slice with w[:, :, kd],
/// placed at output depth id*sd + kd*dd (zero-interleaved by the stride),
/// summed; then the depth pads are cropped (or zero-extended).
Expected<Expr> convTranspose3d(NodeContext &ctx, const Expr &x, const Expr &w, const Window &win,
                               const Ints &outputPadding, int64_t group) {
  const ir::Shape xs = shapeOf(x), ws = shapeOf(w);
  int64_t N = xs[0], C = xs[1], D = xs[2], H = xs[3], W = xs[4];
  int64_t KD = ws[2], sd = win.strides[0], dd = win.dilations[0];
  int64_t full = sd * (D - 1) + outputPadding[0] + (KD - 1) * dd + 1;
  Window hw = windowHW(win);
  TS_ASSIGN_OR_RETURN(Expr xt, transpose(ctx, x, {0, 2, 1, 3, 4}));
  TS_ASSIGN_OR_RETURN(Expr x2, reshapeTo(ctx, xt, {N * D, C, H, W}));
  Expr sum;
  int64_t O = 0, OH = 0, OW = 0; // the 2-D results' dims (the same for every kd)
  for (int64_t kd = 0; kd < KD; ++kd) {
    TS_ASSIGN_OR_RETURN(Expr wk, sliceAxis(ctx, w, 2, kd, kd + 1));
    TS_ASSIGN_OR_RETURN(Expr w2, reshapeTo(ctx, wk, {ws[0], ws[1], ws[3], ws[4]}));
    TS_ASSIGN_OR_RETURN(
        Expr z, convTranspose2d(ctx, x2, w2, hw, {outputPadding[1], outputPadding[2]}, group));
    const ir::Shape zs = shapeOf(z);
    O = zs[1], OH = zs[2], OW = zs[3];
    // [N, D, O*OH*OW], every input depth slice moved to a multiple of sd.
    TS_ASSIGN_OR_RETURN(Expr z4, reshapeTo(ctx, z, {N, D, 1, O * OH * OW}));
    TS_ASSIGN_OR_RETURN(Expr spread, padAxis(ctx, z4, 2, 0, sd - 1));
    TS_ASSIGN_OR_RETURN(Expr placed, reshapeTo(ctx, spread, {N, D * sd, O * OH * OW}));
    int64_t begin = kd * dd;
    TS_ASSIGN_OR_RETURN(Expr shifted, padAxis(ctx, placed, 1, begin, full - begin - D * sd));
    if (sum) {
      TS_ASSIGN_OR_RETURN(sum, ctx.call("add", {sum, shifted}));
    } else {
      sum = shifted;
    }
  }
  TS_ASSIGN_OR_RETURN(Expr cropped, padAxis(ctx, sum, 1, -win.pads[0], -win.pads[3]));
  int64_t OD = shapeOf(cropped)[1];
  TS_ASSIGN_OR_RETURN(Expr y5, reshapeTo(ctx, cropped, {N, OD, O, OH, OW}));
  return transpose(ctx, y5, {0, 2, 1, 3, 4});
}

} // namespace

Expected<Outputs> convertConvTranspose(NodeContext &ctx) {
  const Expr &x = ctx.input(0);
  const Expr &w = ctx.input(1);
  TS_RETURN_IF_ERROR(requireRankIn(ctx, x, 3, 5, "input X"));
  if (rankOf(w) != rankOf(x))
    return ctx.error("weight W {} must have the rank of X {}", w->type().str(), x->type().str());
  auto spatial = std::span(shapeOf(x)).subspan(2);
  size_t n = spatial.size();
  Ints wk(shapeOf(w).begin() + 2, shapeOf(w).end());
  TS_ASSIGN_OR_RETURN(Window win, readWindow(ctx, spatial, wk, /*resolveAutoPad=*/false));
  if (win.kernel != wk)
    return ctx.error("attribute 'kernel_shape' = {} does not match the weight's {}",
                     ir::shapeStr(win.kernel), ir::shapeStr(wk));
  TS_ASSIGN_OR_RETURN(int64_t group, ctx.attrInt("group", int64_t{1}));
  TS_ASSIGN_OR_RETURN(Ints outputPadding, spatialAttr(ctx, "output_padding", n, 0));
  TS_ASSIGN_OR_RETURN(win.pads, convTransposePads(ctx, win, spatial, outputPadding));
  Expr y;
  if (n == 2) {
    TS_ASSIGN_OR_RETURN(y, convTranspose2d(ctx, x, w, win, outputPadding, group));
  } else if (n == 1) {
    TS_ASSIGN_OR_RETURN(Expr x4, ctx.call("unsqueeze", {x}, {{"axes", Ints{2}}}));
    TS_ASSIGN_OR_RETURN(Expr w4, ctx.call("unsqueeze", {w}, {{"axes", Ints{2}}}));
    TS_ASSIGN_OR_RETURN(
        Expr y4, convTranspose2d(ctx, x4, w4, window1dAs2d(win), {0, outputPadding[0]}, group));
    TS_ASSIGN_OR_RETURN(y, ctx.call("squeeze", {y4}, {{"axes", Ints{2}}}));
  } else {
    TS_ASSIGN_OR_RETURN(y, convTranspose3d(ctx, x, w, win, outputPadding, group));
  }
  if (ctx.hasInput(2)) {
    TS_ASSIGN_OR_RETURN(y, ctx.call("bias_add", {y, ctx.input(2)}, {{"axis", int64_t{1}}}));
  }
  return Outputs{y};
}

} // namespace tessera::frontend::onnx::nn_detail
