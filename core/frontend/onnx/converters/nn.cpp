//===- frontend/onnx/converters/nn.cpp - ONNX nn converters --------------===//
//
// Converters for the ONNX neural-network ops: convolutions, Gemm/MatMul,
// pooling, normalizations, the softmax family, LRN, Resize/Upsample and
// DepthToSpace/SpaceToDepth. The core IR has 2-D (NCHW) window ops; 1-D
// windows become 2-D ones over [N, C, 1, L], and 3-D ones are decomposed
// exactly: convolutions into one 2-D convolution per kernel depth tap
// (summed), pooling into a pool over D followed by a pool over H and W
// (max and average pooling are separable; average pooling's divisor is the
// product of the per-dim tap counts).
//
// Every converter states the opsets and attributes it handles; anything else
// is an error naming the node.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/converters/common.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tessera::frontend::onnx {

namespace {

using ir::DType;
using ir::Expr;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

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

/// The window of a Conv/ConvTranspose/pool node: kernel, strides, dilations
/// and explicit pads [begin..., end...] (auto_pad resolved, except for
/// ConvTranspose, which resolves its own).
struct Window {
  Ints kernel, strides, dilations, pads;
};

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

/// Reads kernel_shape (or `kernelFallback`), strides, dilations and pads.
Expected<Window> readWindow(NodeContext &ctx, std::span<const int64_t> in,
                            std::optional<Ints> kernelFallback, bool resolveAutoPad = true) {
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

ir::Attrs conv2dAttrs(const Window &w, int64_t group) {
  // ONNX pads [h0, w0, h1, w1] are conv2d's [top, left, bottom, right].
  return {{"strides", w.strides}, {"pads", w.pads}, {"dilation", w.dilations}, {"groups", group}};
}

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

//===----------------------------------------------------------------------===//
// Gemm (opsets 1-17): transA, transB, alpha, beta, optional C broadcast
// unidirectionally (opset < 7 'broadcast' accepted).
// MatMul (opsets 1-17): numpy semantics.
//===----------------------------------------------------------------------===//

Expected<Outputs> convertGemm(NodeContext &ctx) {
  Expr a = ctx.input(0), b = ctx.input(1);
  if (rankOf(a) != 2 || rankOf(b) != 2)
    return ctx.error("inputs A and B must be matrices, got {} and {}", a->type().str(),
                     b->type().str());
  TS_ASSIGN_OR_RETURN(int64_t transA, ctx.attrInt("transA", int64_t{0}));
  TS_ASSIGN_OR_RETURN(int64_t transB, ctx.attrInt("transB", int64_t{0}));
  TS_ASSIGN_OR_RETURN(float alpha, ctx.attrFloat("alpha", 1.0f));
  TS_ASSIGN_OR_RETURN(float beta, ctx.attrFloat("beta", 1.0f));
  if (transA) {
    TS_ASSIGN_OR_RETURN(a, transpose(ctx, a, {1, 0}));
  }
  Expr y;
  if (transB) {
    // dense computes a x b^T with b as [N, K].
    TS_ASSIGN_OR_RETURN(y, ctx.call("dense", {a, b}));
  } else {
    TS_ASSIGN_OR_RETURN(y, ctx.call("matmul", {a, b}));
  }
  DType dt = dtypeOf(y);
  if (alpha != 1.0f) {
    TS_ASSIGN_OR_RETURN(y, ctx.call("multiply", {y, scalar(ctx, dt, alpha)}));
  }
  if (ctx.hasInput(2)) {
    Expr c = ctx.input(2);
    if (beta != 1.0f) {
      TS_ASSIGN_OR_RETURN(c, ctx.call("multiply", {c, scalar(ctx, dtypeOf(c), beta)}));
    }
    TS_ASSIGN_OR_RETURN(Expr sum, ctx.call("add", {y, c}));
    if (shapeOf(sum) != shapeOf(y))
      return ctx.error("input C {} does not broadcast to the product's shape {}",
                       ctx.input(2)->type().str(), y->type().str());
    y = sum;
  }
  return Outputs{y};
}

Expected<Outputs> convertMatMul(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr y, ctx.call("matmul", {ctx.input(0), ctx.input(1)}));
  return Outputs{y};
}

//===----------------------------------------------------------------------===//
// Pooling.
// MaxPool (opsets 1-17): 1-D, 2-D, 3-D; kernel_shape, strides, pads, auto_pad,
// dilations, ceil_mode; the Indices output (storage_order 0/1) for 1-D/2-D.
// AveragePool (opsets 1-17): 1-D, 2-D, 3-D; kernel_shape, strides, pads,
// auto_pad, ceil_mode, count_include_pad.
//===----------------------------------------------------------------------===//

ir::Attrs poolAttrs(const Window &w, bool ceilMode) {
  return {{"pool_size", w.kernel},
          {"strides", w.strides},
          {"pads", w.pads},
          {"dilation", w.dilations},
          {"ceil_mode", ceilMode}};
}

/// torch.onnx writes AvgPool2d(padding=p, count_include_pad=True) as a Pad
/// of zeros and an AveragePool: the pad folds into the pool's own pads, with
/// the padded positions counted (as the explicit zeros were). `x` is the
/// pool's input and `win` its 2-D window; returns the pad's input (and
/// widens win.pads) when the fold is exact, else `x`.
Expr foldZeroPad(const Expr &x, Window &win, bool &includePad, bool ceilMode) {
  const auto *pad = x->as<ir::CallNode>();
  if (ceilMode || !pad || !pad->op() || pad->op()->name != "pad" ||
      pad->attrs().getString("mode") != "constant" || pad->attrs().getFloat("value") != 0.0)
    return x;
  bool ownPads = std::any_of(win.pads.begin(), win.pads.end(), [](int64_t p) { return p != 0; });
  if (ownPads && !includePad)
    return x;
  const Ints p = pad->attrs().getInts("pads"); // [N, C, H, W begins, then ends]
  if (p.size() != 8 || p[0] || p[1] || p[4] || p[5])
    return x;
  Ints pads = win.pads;
  for (size_t i = 0; i < 2; ++i) {
    pads[i] += p[2 + i];     // begin
    pads[2 + i] += p[6 + i]; // end
  }
  for (size_t i = 0; i < 4; ++i)
    if (pads[i] < 0 || pads[i] >= win.kernel[i % 2])
      return x; // a window wholly in the padding: keep the explicit pad
  win.pads = pads;
  includePad = true;
  return pad->args()[0];
}

Expected<Outputs> convertPool(NodeContext &ctx, bool isMax) {
  Expr x = ctx.input(0);
  TS_RETURN_IF_ERROR(requireRankIn(ctx, x, 3, 5, "input X"));
  const ir::Shape xs = shapeOf(x);
  auto spatial = std::span(xs).subspan(2);
  size_t n = spatial.size();
  TS_ASSIGN_OR_RETURN(Window win, readWindow(ctx, spatial, std::nullopt));
  TS_ASSIGN_OR_RETURN(int64_t ceilMode, ctx.attrInt("ceil_mode", int64_t{0}));
  ir::Attrs extra;
  std::string op = isMax ? "max_pool2d" : "avg_pool2d";
  if (!isMax) {
    TS_ASSIGN_OR_RETURN(int64_t includePadAttr, ctx.attrInt("count_include_pad", int64_t{0}));
    bool includePad = includePadAttr != 0;
    if (n == 2)
      x = foldZeroPad(x, win, includePad, ceilMode != 0);
    extra.set("count_include_pad", includePad);
  }
  auto pool = [&](const Expr &in, const Window &w) -> Expected<Expr> {
    ir::Attrs attrs = poolAttrs(w, ceilMode != 0);
    for (const auto &[k, v] : extra)
      attrs.set(k, v);
    return ctx.call(op, {in}, attrs);
  };
  bool wantIndices = isMax && ctx.numOutputs() > 1;
  TS_ASSIGN_OR_RETURN(int64_t storageOrder, ctx.attrInt("storage_order", int64_t{0}));
  auto indices = [&](const Expr &in, const Window &w) -> Expected<Expr> {
    ir::Attrs attrs = poolAttrs(w, ceilMode != 0);
    attrs.set("storage_order", storageOrder);
    return ctx.call("max_pool2d_indices", {in}, attrs);
  };
  if (n == 2) {
    TS_ASSIGN_OR_RETURN(Expr y, pool(x, win));
    if (!wantIndices)
      return Outputs{y};
    TS_ASSIGN_OR_RETURN(Expr i, indices(x, win));
    return Outputs{y, i};
  }
  if (n == 1) {
    // [N, C, L] as [N, C, 1, L]; flat indices are the same in both layouts.
    Window w2 = window1dAs2d(win);
    TS_ASSIGN_OR_RETURN(Expr x4, ctx.call("unsqueeze", {x}, {{"axes", Ints{2}}}));
    TS_ASSIGN_OR_RETURN(Expr y4, pool(x4, w2));
    TS_ASSIGN_OR_RETURN(Expr y, ctx.call("squeeze", {y4}, {{"axes", Ints{2}}}));
    if (!wantIndices)
      return Outputs{y};
    TS_ASSIGN_OR_RETURN(Expr i4, indices(x4, w2));
    TS_ASSIGN_OR_RETURN(Expr i, ctx.call("squeeze", {i4}, {{"axes", Ints{2}}}));
    return Outputs{y, i};
  }
  // 3-D: pool over D on [N*C, 1, D, H*W], then over (H, W) on [N, C*OD, H, W].
  // Indices are not produced (the importer rejects their use).
  int64_t N = xs[0], C = xs[1], D = xs[2], H = xs[3], W = xs[4];
  Window wd{{win.kernel[0], 1},
            {win.strides[0], 1},
            {win.dilations[0], 1},
            {win.pads[0], 0, win.pads[3], 0}};
  TS_ASSIGN_OR_RETURN(Expr xd, reshapeTo(ctx, x, {N * C, 1, D, H * W}));
  TS_ASSIGN_OR_RETURN(Expr yd, pool(xd, wd));
  int64_t OD = shapeOf(yd)[2];
  TS_ASSIGN_OR_RETURN(Expr xhw, reshapeTo(ctx, yd, {N, C * OD, H, W}));
  TS_ASSIGN_OR_RETURN(Expr yhw, pool(xhw, windowHW(win)));
  const ir::Shape hs = shapeOf(yhw);
  TS_ASSIGN_OR_RETURN(Expr y, reshapeTo(ctx, yhw, {N, C, OD, hs[2], hs[3]}));
  return Outputs{y};
}

/// GlobalAveragePool / GlobalMaxPool (opsets 1-17): any rank >= 3 (the
/// spatial dims are flattened into H of an [N, C, H, 1] tensor).
Expected<Outputs> convertGlobalPool(NodeContext &ctx, const char *op) {
  const Expr &x = ctx.input(0);
  if (rankOf(x) < 3)
    return ctx.error("input X must have rank >= 3, got {}", x->type().str());
  const ir::Shape xs = shapeOf(x);
  if (xs.size() == 4) {
    TS_ASSIGN_OR_RETURN(Expr y, ctx.call(op, {x}));
    return Outputs{y};
  }
  int64_t spatial = product(std::span(xs).subspan(2));
  TS_ASSIGN_OR_RETURN(Expr x4, reshapeTo(ctx, x, {xs[0], xs[1], spatial, 1}));
  TS_ASSIGN_OR_RETURN(Expr y4, ctx.call(op, {x4}));
  Ints ys(xs.size(), 1);
  ys[0] = xs[0], ys[1] = xs[1];
  TS_ASSIGN_OR_RETURN(Expr y, reshapeTo(ctx, y4, ys));
  return Outputs{y};
}

//===----------------------------------------------------------------------===//
// Normalizations.
//===----------------------------------------------------------------------===//

/// Reduce-mean over `axes`, keeping dims.
Expected<Expr> meanOver(NodeContext &ctx, const Expr &x, const Ints &axes) {
  return ctx.call("reduce_mean", {x}, {{"axes", axes}, {"keepdims", true}});
}

/// BatchNormalization (opsets 1-17): inference form, or with training_mode=1
/// (opset 14+) the batch statistics and the updated running mean/var outputs.
/// Opsets < 9: spatial=1 only; is_test and consumed_inputs are ignored.
Expected<Outputs> convertBatchNorm(NodeContext &ctx) {
  Expr x = ctx.input(0);
  if (rankOf(x) < 2)
    return ctx.error("input X must have rank >= 2, got {}", x->type().str());
  TS_ASSIGN_OR_RETURN(float eps, ctx.attrFloat("epsilon", 1e-5f));
  TS_ASSIGN_OR_RETURN(float momentum, ctx.attrFloat("momentum", 0.9f));
  TS_ASSIGN_OR_RETURN(int64_t spatialMode, ctx.attrInt("spatial", int64_t{1}));
  if (ctx.opset() < 9 && spatialMode == 0)
    return ctx.error("attribute 'spatial' = 0 (per-activation statistics) is not supported");
  TS_ASSIGN_OR_RETURN(int64_t training, ctx.attrInt("training_mode", int64_t{0}));
  DType dt = dtypeOf(x);
  std::vector<Expr> params;
  for (size_t i = 1; i < 5; ++i) {
    if (!ctx.hasInput(i))
      return ctx.error("input {} is missing", i);
    TS_ASSIGN_OR_RETURN(Expr p, castTo(ctx, ctx.input(i), dt));
    params.push_back(p);
  }
  ir::Attrs attrs{{"epsilon", double(eps)}, {"axis", int64_t{1}}};
  if (!training) {
    TS_ASSIGN_OR_RETURN(
        Expr y, ctx.call("batch_norm", {x, params[0], params[1], params[2], params[3]}, attrs));
    return Outputs{y};
  }
  // Training mode: normalise with the batch mean and (biased) variance.
  Ints axes;
  for (int64_t a = 0; a < rankOf(x); ++a)
    if (a != 1)
      axes.push_back(a);
  TS_ASSIGN_OR_RETURN(Expr mean, meanOver(ctx, x, axes));
  TS_ASSIGN_OR_RETURN(Expr d, ctx.call("subtract", {x, mean}));
  TS_ASSIGN_OR_RETURN(Expr sq, ctx.call("multiply", {d, d}));
  TS_ASSIGN_OR_RETURN(Expr var, meanOver(ctx, sq, axes));
  int64_t C = shapeOf(x)[1];
  TS_ASSIGN_OR_RETURN(Expr mean1, reshapeTo(ctx, mean, {C}));
  TS_ASSIGN_OR_RETURN(Expr var1, reshapeTo(ctx, var, {C}));
  TS_ASSIGN_OR_RETURN(Expr y,
                      ctx.call("batch_norm", {x, params[0], params[1], mean1, var1}, attrs));
  // running = running * momentum + batch * (1 - momentum)
  auto blend = [&](const Expr &running, const Expr &batch) -> Expected<Expr> {
    TS_ASSIGN_OR_RETURN(Expr r, ctx.call("multiply", {running, scalar(ctx, dt, momentum)}));
    TS_ASSIGN_OR_RETURN(Expr b,
                        ctx.call("multiply", {batch, scalar(ctx, dt, 1.0 - double(momentum))}));
    return ctx.call("add", {r, b});
  };
  TS_ASSIGN_OR_RETURN(Expr runMean, blend(params[2], mean1));
  TS_ASSIGN_OR_RETURN(Expr runVar, blend(params[3], var1));
  Outputs out{y, runMean, runVar};
  out.resize(std::min<size_t>(out.size(), ctx.numOutputs()));
  return out;
}

/// InstanceNormalization (opsets 1-17): layer_norm over the spatial dims
/// of each (n, c), then scale and bias per channel.
Expected<Outputs> convertInstanceNorm(NodeContext &ctx) {
  const Expr &x = ctx.input(0);
  if (rankOf(x) < 3)
    return ctx.error("input must have rank >= 3, got {}", x->type().str());
  TS_ASSIGN_OR_RETURN(float eps, ctx.attrFloat("epsilon", 1e-5f));
  DType dt = dtypeOf(x);
  Expr one = ctx.constant(ir::Tensor::fromDoubles(dt, {1}, std::vector<double>{1.0}));
  TS_ASSIGN_OR_RETURN(Expr norm, ctx.call("layer_norm", {x, one},
                                          {{"axis", int64_t{2}}, {"epsilon", double(eps)}}));
  Ints paramShape(size_t(rankOf(x) - 1), 1);
  paramShape[0] = shapeOf(x)[1];
  TS_ASSIGN_OR_RETURN(Expr scale, castTo(ctx, ctx.input(1), dt));
  TS_ASSIGN_OR_RETURN(Expr bias, castTo(ctx, ctx.input(2), dt));
  TS_ASSIGN_OR_RETURN(scale, reshapeTo(ctx, scale, paramShape));
  TS_ASSIGN_OR_RETURN(bias, reshapeTo(ctx, bias, paramShape));
  TS_ASSIGN_OR_RETURN(Expr scaled, ctx.call("multiply", {norm, scale}));
  TS_ASSIGN_OR_RETURN(Expr y, ctx.call("add", {scaled, bias}));
  return Outputs{y};
}

/// LayerNormalization (opset 17): axis, epsilon, optional B; the Mean and
/// InvStdDev outputs (stash_type 1, float32) are computed when declared.
Expected<Outputs> convertLayerNorm(NodeContext &ctx) {
  const Expr &x = ctx.input(0);
  TS_ASSIGN_OR_RETURN(int64_t axis, ctx.attrInt("axis", int64_t{-1}));
  TS_ASSIGN_OR_RETURN(float eps, ctx.attrFloat("epsilon", 1e-5f));
  TS_ASSIGN_OR_RETURN(int64_t stash, ctx.attrInt("stash_type", int64_t{1}));
  if (stash != 1)
    return ctx.error("attribute 'stash_type' = {} is not supported (only 1, float32)", stash);
  int64_t r = rankOf(x);
  if (axis < -r || axis >= r)
    return ctx.error("attribute 'axis' = {} is out of range for rank {}", axis, r);
  if (axis < 0)
    axis += r;
  std::vector<Expr> args{x, ctx.input(1)};
  if (ctx.hasInput(2))
    args.push_back(ctx.input(2));
  TS_ASSIGN_OR_RETURN(Expr y,
                      ctx.call("layer_norm", args, {{"axis", axis}, {"epsilon", double(eps)}}));
  if (ctx.numOutputs() < 2)
    return Outputs{y};
  Ints axes;
  for (int64_t a = axis; a < r; ++a)
    axes.push_back(a);
  TS_ASSIGN_OR_RETURN(Expr xf, castTo(ctx, x, DType::F32));
  TS_ASSIGN_OR_RETURN(Expr mean, meanOver(ctx, xf, axes));
  TS_ASSIGN_OR_RETURN(Expr d, ctx.call("subtract", {xf, mean}));
  TS_ASSIGN_OR_RETURN(Expr sq, ctx.call("multiply", {d, d}));
  TS_ASSIGN_OR_RETURN(Expr var, meanOver(ctx, sq, axes));
  TS_ASSIGN_OR_RETURN(Expr ve, ctx.call("add", {var, scalar(ctx, DType::F32, eps)}));
  TS_ASSIGN_OR_RETURN(Expr sd, ctx.call("sqrt", {ve}));
  TS_ASSIGN_OR_RETURN(Expr inv, ctx.call("reciprocal", {sd}));
  Outputs out{y, mean, inv};
  out.resize(std::min<size_t>(out.size(), ctx.numOutputs()));
  return out;
}

/// LRN (opsets 1-17): y = x / (bias + alpha/size * sum of x^2 over the
/// channel window)^beta; the window sum is an average pool with
/// count_include_pad over [N, 1, C, prod(spatial)].
Expected<Outputs> convertLRN(NodeContext &ctx) {
  const Expr &x = ctx.input(0);
  if (rankOf(x) < 3)
    return ctx.error("input X must have rank >= 3, got {}", x->type().str());
  TS_ASSIGN_OR_RETURN(int64_t size, ctx.attrInt("size"));
  TS_ASSIGN_OR_RETURN(float alpha, ctx.attrFloat("alpha", 1e-4f));
  TS_ASSIGN_OR_RETURN(float beta, ctx.attrFloat("beta", 0.75f));
  TS_ASSIGN_OR_RETURN(float bias, ctx.attrFloat("bias", 1.0f));
  if (size <= 0)
    return ctx.error("attribute 'size' must be positive, got {}", size);
  const ir::Shape xs = shapeOf(x);
  DType dt = dtypeOf(x);
  int64_t spatial = product(std::span(xs).subspan(2));
  TS_ASSIGN_OR_RETURN(Expr sq, ctx.call("multiply", {x, x}));
  TS_ASSIGN_OR_RETURN(Expr sq4, reshapeTo(ctx, sq, {xs[0], 1, xs[1], spatial}));
  int64_t before = (size - 1) / 2, after = size - 1 - before;
  TS_ASSIGN_OR_RETURN(Expr avg, ctx.call("avg_pool2d", {sq4},
                                         {{"pool_size", Ints{size, 1}},
                                          {"pads", Ints{before, 0, after, 0}},
                                          {"count_include_pad", true}}));
  TS_ASSIGN_OR_RETURN(Expr avgx, reshapeTo(ctx, avg, xs));
  TS_ASSIGN_OR_RETURN(Expr scaled, ctx.call("multiply", {avgx, scalar(ctx, dt, alpha)}));
  TS_ASSIGN_OR_RETURN(Expr base, ctx.call("add", {scaled, scalar(ctx, dt, bias)}));
  TS_ASSIGN_OR_RETURN(Expr denom, ctx.call("power", {base, scalar(ctx, dt, beta)}));
  TS_ASSIGN_OR_RETURN(Expr y, ctx.call("divide", {x, denom}));
  return Outputs{y};
}

//===----------------------------------------------------------------------===//
// Softmax, LogSoftmax, Hardmax. Opsets < 13 coerce the input to 2-D at
// `axis` (default 1) and normalise each row; opset 13+ uses one axis
// (default -1).
//===----------------------------------------------------------------------===//

/// Hardmax along one axis: 1 at the first maximum, else 0 (the first one is
/// where the running count of maxima, a cumsum, is 1).
Expected<Expr> hardmaxAxis(NodeContext &ctx, const Expr &x, int64_t axis) {
  DType dt = dtypeOf(x);
  TS_ASSIGN_OR_RETURN(Expr mx,
                      ctx.call("reduce_max", {x}, {{"axes", Ints{axis}}, {"keepdims", true}}));
  TS_ASSIGN_OR_RETURN(Expr isMax, ctx.call("equal", {x, mx}));
  TS_ASSIGN_OR_RETURN(Expr f, castTo(ctx, isMax, dt));
  TS_ASSIGN_OR_RETURN(Expr count, ctx.call("cumsum", {f}, {{"axis", axis}}));
  TS_ASSIGN_OR_RETURN(Expr first, ctx.call("equal", {count, scalar(ctx, dt, 1.0)}));
  TS_ASSIGN_OR_RETURN(Expr firstF, castTo(ctx, first, dt));
  return ctx.call("multiply", {f, firstF});
}

Expected<Outputs> convertSoftmaxLike(NodeContext &ctx, std::string_view kind) {
  const Expr &x = ctx.input(0);
  int64_t r = rankOf(x);
  if (r == 0)
    return ctx.error("input must have rank >= 1");
  bool legacy = ctx.opset() < 13;
  TS_ASSIGN_OR_RETURN(int64_t axis, ctx.attrInt("axis", legacy ? int64_t{1} : int64_t{-1}));
  if (axis < -r || axis >= r)
    return ctx.error("attribute 'axis' = {} is out of range for rank {}", axis, r);
  if (axis < 0)
    axis += r;
  auto apply = [&](const Expr &in, int64_t a) -> Expected<Expr> {
    if (kind == "hardmax")
      return hardmaxAxis(ctx, in, a);
    return ctx.call(kind, {in}, {{"axis", a}});
  };
  if (!legacy || axis == r - 1) {
    TS_ASSIGN_OR_RETURN(Expr y, apply(x, axis));
    return Outputs{y};
  }
  const ir::Shape xs = shapeOf(x);
  int64_t outer = product(std::span(xs).subspan(0, size_t(axis)));
  int64_t inner = product(std::span(xs).subspan(size_t(axis)));
  TS_ASSIGN_OR_RETURN(Expr x2, reshapeTo(ctx, x, {outer, inner}));
  TS_ASSIGN_OR_RETURN(Expr y2, apply(x2, 1));
  TS_ASSIGN_OR_RETURN(Expr y, reshapeTo(ctx, y2, xs));
  return Outputs{y};
}

//===----------------------------------------------------------------------===//
// Resize (opsets 10-17) and Upsample (opsets 7-17), resizing the last two
// dims of data of any rank >= 2.
//===----------------------------------------------------------------------===//

/// A float constant input as doubles; an absent or empty input gives an
/// empty list.
Expected<std::vector<double>> optionalFloats(NodeContext &ctx, size_t i, std::string_view name) {
  if (!ctx.hasInput(i))
    return std::vector<double>{};
  const ir::Tensor *t = ctx.constantInput(i);
  if (!t)
    return ctx.error("input {} ('{}') must be a constant (it decides the output shape)", i, name);
  return t->toDoubles();
}

/// Builds resize2d from per-dim scales or sizes (one of them) for x of any
/// rank >= 2 that is resized in its last two dims only: x is viewed as
/// [prod(leading dims), 1, H, W] (an unscaled dim maps every coordinate to
/// itself in every mode).
Expected<Expr> resizeLastTwo(NodeContext &ctx, const Expr &x, const std::vector<double> &scales,
                             const std::vector<double> &sizes, ir::Attrs attrs) {
  int64_t r = rankOf(x);
  if (r < 2)
    return ctx.error("input X must have rank >= 2, got {}", x->type().str());
  const ir::Shape xs = shapeOf(x);
  const std::vector<double> &given = sizes.empty() ? scales : sizes;
  const char *what = sizes.empty() ? "scales" : "sizes";
  if (int64_t(given.size()) != r)
    return ctx.error("'{}' must have {} values, got {}", what, r, given.size());
  for (int64_t i = 0; i < r - 2; ++i)
    if (sizes.empty() ? scales[size_t(i)] != 1 : sizes[size_t(i)] != double(xs[size_t(i)]))
      return ctx.error("only the last two dims can be resized ('{}' {} for dim {} of {})", what,
                       given[size_t(i)], i, x->type().str());
  Ints size(2);
  for (size_t i = 0; i < 2; ++i) {
    int64_t in = xs[size_t(r) - 2 + i];
    double v = given[size_t(r) - 2 + i];
    double out = sizes.empty() ? std::floor(v * double(in)) : v;
    if (!(out >= 1 && out < double(int64_t(1) << 40)))
      return ctx.error("'{}' value {} gives an invalid output size", what, v);
    size[i] = int64_t(out);
  }
  if (sizes.empty())
    attrs.set("scales", std::vector<double>{scales[size_t(r) - 2], scales[size_t(r) - 1]});
  attrs.set("size", size);
  int64_t lead = product(std::span(xs).subspan(0, size_t(r) - 2));
  int64_t H = xs[size_t(r) - 2], W = xs[size_t(r) - 1];
  TS_ASSIGN_OR_RETURN(Expr x4, reshapeTo(ctx, x, {lead, 1, H, W}));
  TS_ASSIGN_OR_RETURN(Expr y4, ctx.call("resize2d", {x4}, attrs));
  Ints ys = xs;
  ys[size_t(r) - 2] = size[0], ys[size_t(r) - 1] = size[1];
  return reshapeTo(ctx, y4, ys);
}

Expected<Outputs> convertResize(NodeContext &ctx) {
  const Expr &x = ctx.input(0);
  bool v10 = ctx.opset() < 11;
  TS_ASSIGN_OR_RETURN(std::string mode, ctx.attrString("mode", std::string("nearest")));
  TS_ASSIGN_OR_RETURN(std::string coord,
                      ctx.attrString("coordinate_transformation_mode",
                                     std::string(v10 ? "asymmetric" : "half_pixel")));
  TS_ASSIGN_OR_RETURN(
      std::string nearest,
      ctx.attrString("nearest_mode", std::string(v10 ? "floor" : "round_prefer_floor")));
  TS_ASSIGN_OR_RETURN(float cubicA, ctx.attrFloat("cubic_coeff_a", -0.75f));
  TS_ASSIGN_OR_RETURN(int64_t exclude, ctx.attrInt("exclude_outside", int64_t{0}));
  TS_ASSIGN_OR_RETURN(float extrapolation, ctx.attrFloat("extrapolation_value", 0.0f));
  ir::Attrs attrs{{"mode", mode},
                  {"coordinate_transformation_mode", coord},
                  {"nearest_mode", nearest},
                  {"cubic_coeff_a", double(cubicA)},
                  {"exclude_outside", exclude != 0}};
  std::vector<double> scales, sizes;
  if (v10)
    wishConstants(ctx, {1});
  else
    wishConstants(ctx, coord == "tf_crop_and_resize" ? std::initializer_list<size_t>{1, 2, 3}
                                                     : std::initializer_list<size_t>{2, 3});
  if (v10) {
    TS_ASSIGN_OR_RETURN(scales, optionalFloats(ctx, 1, "scales"));
  } else {
    TS_ASSIGN_OR_RETURN(scales, optionalFloats(ctx, 2, "scales"));
    TS_ASSIGN_OR_RETURN(sizes, optionalFloats(ctx, 3, "sizes"));
    if (coord == "tf_crop_and_resize") {
      TS_ASSIGN_OR_RETURN(std::vector<double> roi, optionalFloats(ctx, 1, "roi"));
      size_t r = size_t(rankOf(x));
      if (r < 2 || roi.size() != 2 * r)
        return ctx.error("tf_crop_and_resize needs 'roi' with {} values, got {}", 2 * r,
                         roi.size());
      for (size_t i = 0; i + 2 < r; ++i)
        if (roi[i] != 0 || roi[r + i] != 1)
          return ctx.error("tf_crop_and_resize: only the last two dims can be cropped");
      attrs.set("roi", std::vector<double>{roi[r - 2], roi[r - 1], roi[2 * r - 2], roi[2 * r - 1]});
      attrs.set("extrapolation_value", double(extrapolation));
    }
  }
  if (scales.empty() == sizes.empty())
    return ctx.error("exactly one of 'scales' and 'sizes' must be given");
  TS_ASSIGN_OR_RETURN(Expr y, resizeLastTwo(ctx, x, scales, sizes, attrs));
  return Outputs{y};
}

/// Upsample (opsets 7-17, deprecated from 10): scales attribute (7-8) or input; nearest (floor
/// of x / scale) or linear (asymmetric coordinates).
Expected<Outputs> convertUpsample(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(std::string mode, ctx.attrString("mode", std::string("nearest")));
  if (mode != "nearest" && mode != "linear")
    return ctx.error("attribute 'mode' = \"{}\" is not nearest or linear", mode);
  std::vector<double> scales;
  if (ctx.opset() < 9) {
    TS_ASSIGN_OR_RETURN(std::vector<float> s, ctx.attrFloats("scales"));
    scales.assign(s.begin(), s.end());
  } else {
    TS_ASSIGN_OR_RETURN(scales, optionalFloats(ctx, 1, "scales"));
  }
  ir::Attrs attrs{{"mode", mode},
                  {"coordinate_transformation_mode", std::string("asymmetric")},
                  {"nearest_mode", std::string("floor")}};
  TS_ASSIGN_OR_RETURN(Expr y, resizeLastTwo(ctx, ctx.input(0), scales, {}, attrs));
  return Outputs{y};
}

//===----------------------------------------------------------------------===//
// DepthToSpace (opsets 1-17, DCR/CRD) and SpaceToDepth (opsets 1-17):
// reshape, transpose, reshape.
//===----------------------------------------------------------------------===//

Expected<Outputs> convertDepthToSpace(NodeContext &ctx) {
  const Expr &x = ctx.input(0);
  if (rankOf(x) != 4)
    return ctx.error("input must have rank 4, got {}", x->type().str());
  TS_ASSIGN_OR_RETURN(int64_t b, ctx.attrInt("blocksize"));
  TS_ASSIGN_OR_RETURN(std::string mode, ctx.attrString("mode", std::string("DCR")));
  const ir::Shape xs = shapeOf(x);
  int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  if (b <= 0 || C % (b * b) != 0)
    return ctx.error("channels {} are not divisible by blocksize^2 ({})", C, b * b);
  int64_t c = C / (b * b);
  Expr t;
  if (mode == "DCR") {
    TS_ASSIGN_OR_RETURN(Expr r, reshapeTo(ctx, x, {N, b, b, c, H, W}));
    TS_ASSIGN_OR_RETURN(t, transpose(ctx, r, {0, 3, 4, 1, 5, 2}));
  } else if (mode == "CRD") {
    TS_ASSIGN_OR_RETURN(Expr r, reshapeTo(ctx, x, {N, c, b, b, H, W}));
    TS_ASSIGN_OR_RETURN(t, transpose(ctx, r, {0, 1, 4, 2, 5, 3}));
  } else {
    return ctx.error("attribute 'mode' = \"{}\" is not DCR or CRD", mode);
  }
  TS_ASSIGN_OR_RETURN(Expr y, reshapeTo(ctx, t, {N, c, H * b, W * b}));
  return Outputs{y};
}

Expected<Outputs> convertSpaceToDepth(NodeContext &ctx) {
  const Expr &x = ctx.input(0);
  if (rankOf(x) != 4)
    return ctx.error("input must have rank 4, got {}", x->type().str());
  TS_ASSIGN_OR_RETURN(int64_t b, ctx.attrInt("blocksize"));
  const ir::Shape xs = shapeOf(x);
  int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  if (b <= 0 || H % b != 0 || W % b != 0)
    return ctx.error("spatial size [{}, {}] is not divisible by blocksize {}", H, W, b);
  TS_ASSIGN_OR_RETURN(Expr r, reshapeTo(ctx, x, {N, C, H / b, b, W / b, b}));
  TS_ASSIGN_OR_RETURN(Expr t, transpose(ctx, r, {0, 3, 5, 1, 2, 4}));
  TS_ASSIGN_OR_RETURN(Expr y, reshapeTo(ctx, t, {N, C * b * b, H / b, W / b}));
  return Outputs{y};
}

} // namespace

Status registerNNConverters(ConverterRegistry &r) {
  // Op type, required inputs, opsets, converter, notes.
  auto add = [&](std::string opType, size_t inputs, int64_t minOpset, int64_t maxOpset,
                 Converter convert, std::string notes) {
    return r.add(ConverterSpec{std::move(opType), minOpset, maxOpset,
                               withInputs(inputs, std::move(convert)), std::move(notes)});
  };
  TS_RETURN_IF_ERROR(add("Conv", 2, 1, 17, convertConv,
                         "1-D, 2-D and 3-D (as 2-D convolutions per depth tap); group, "
                         "dilations, strides, pads, auto_pad, optional bias"));
  TS_RETURN_IF_ERROR(add("ConvTranspose", 2, 1, 17, convertConvTranspose,
                         "1-D, 2-D and 3-D; group, dilations, strides, pads, output_padding, "
                         "output_shape, auto_pad, optional bias"));
  TS_RETURN_IF_ERROR(add("Gemm", 2, 1, 17, convertGemm,
                         "transA, transB, alpha, beta, optional C (unidirectional broadcast)"));
  TS_RETURN_IF_ERROR(add("MatMul", 2, 1, 17, convertMatMul, "numpy semantics, batch broadcasting"));
  TS_RETURN_IF_ERROR(add(
      "MaxPool", 1, 1, 17, [](NodeContext &ctx) { return convertPool(ctx, true); },
      "1-D, 2-D, 3-D (separable); kernel_shape, strides, pads, auto_pad, dilations, ceil_mode; "
      "Indices output (storage_order 0/1) for 1-D/2-D"));
  TS_RETURN_IF_ERROR(add(
      "AveragePool", 1, 1, 17, [](NodeContext &ctx) { return convertPool(ctx, false); },
      "1-D, 2-D, 3-D (separable); kernel_shape, strides, pads, auto_pad, ceil_mode, "
      "count_include_pad"));
  TS_RETURN_IF_ERROR(add(
      "GlobalAveragePool", 1, 1, 17,
      [](NodeContext &ctx) { return convertGlobalPool(ctx, "global_avg_pool2d"); },
      "any rank >= 3"));
  TS_RETURN_IF_ERROR(add(
      "GlobalMaxPool", 1, 1, 17,
      [](NodeContext &ctx) { return convertGlobalPool(ctx, "global_max_pool2d"); },
      "any rank >= 3"));
  TS_RETURN_IF_ERROR(add("BatchNormalization", 5, 1, 17, convertBatchNorm,
                         "inference; training_mode=1 with batch statistics and running "
                         "mean/var outputs; spatial=0 unsupported"));
  TS_RETURN_IF_ERROR(add("InstanceNormalization", 3, 1, 17, convertInstanceNorm,
                         "any rank >= 3 (layer_norm over the spatial dims, scale, bias)"));
  TS_RETURN_IF_ERROR(add("LayerNormalization", 2, 17, 17, convertLayerNorm,
                         "axis, epsilon, optional B; Mean/InvStdDev outputs (stash_type 1)"));
  TS_RETURN_IF_ERROR(add("LRN", 1, 1, 17, convertLRN, "size, alpha, beta, bias; any rank >= 3"));
  TS_RETURN_IF_ERROR(add(
      "Softmax", 1, 1, 17, [](NodeContext &ctx) { return convertSoftmaxLike(ctx, "softmax"); },
      "opset < 13: 2-D coercion at axis; 13+: one axis"));
  TS_RETURN_IF_ERROR(add(
      "LogSoftmax", 1, 1, 17,
      [](NodeContext &ctx) { return convertSoftmaxLike(ctx, "log_softmax"); },
      "opset < 13: 2-D coercion at axis; 13+: one axis"));
  TS_RETURN_IF_ERROR(add(
      "Hardmax", 1, 1, 17, [](NodeContext &ctx) { return convertSoftmaxLike(ctx, "hardmax"); },
      "first maximum (reduce_max, equal, cumsum); opset < 13: 2-D coercion at axis"));
  TS_RETURN_IF_ERROR(
      add("Resize", 1, 10, 17, convertResize,
          "the last two dims of any rank >= 2; scales or sizes; nearest/linear/cubic, "
          "every coordinate_transformation_mode incl. tf_crop_and_resize, "
          "nearest_mode, cubic_coeff_a, exclude_outside, extrapolation_value"));
  TS_RETURN_IF_ERROR(add("Upsample", 1, 7, 17, convertUpsample,
                         "the last two dims; scales attribute (< 9) or input; nearest "
                         "(floor) or linear (asymmetric)"));
  TS_RETURN_IF_ERROR(add("DepthToSpace", 1, 1, 17, convertDepthToSpace, "4-D; DCR and CRD modes"));
  TS_RETURN_IF_ERROR(add("SpaceToDepth", 1, 1, 17, convertSpaceToDepth, "4-D"));
  return okStatus();
}

} // namespace tessera::frontend::onnx
