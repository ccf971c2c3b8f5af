//===- frontend/onnx/converters/nn_pool.cpp - ONNX pooling converters -----===//
//
// MaxPool (with its Indices output), AveragePool, GlobalAveragePool and
// GlobalMaxPool over 1-D, 2-D and 3-D windows. The core IR has 2-D (NCHW)
// pools; 1-D windows become 2-D ones over [N, C, 1, L], and 3-D pooling is
// decomposed exactly into a pool over D followed by a pool over H and W (max
// and average pooling are separable; average pooling's divisor is the
// product of the per-dim tap counts). The windows are read by the helpers of
// nn_conv.cpp.
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
// Pooling.
// MaxPool (opsets 1-17): 1-D, 2-D, 3-D; kernel_shape, strides, pads, auto_pad,
// dilations, ceil_mode; the Indices output (storage_order 0/1) for 1-D/2-D.
// AveragePool (opsets 1-17): 1-D, 2-D, 3-D; kernel_shape, strides, pads,
// auto_pad, ceil_mode, count_include_pad.
//===----------------------------------------------------------------------===//

namespace {

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

} // namespace

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

} // namespace tessera::frontend::onnx::nn_detail
