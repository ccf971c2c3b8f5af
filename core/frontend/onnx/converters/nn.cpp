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
// This file holds Gemm/MatMul, the softmax family, Resize/Upsample,
// DepthToSpace/SpaceToDepth and registerNNConverters(); the convolutions and
// the window helpers are in nn_conv.cpp, pooling in nn_pool.cpp and the
// normalizations and LRN in nn_norm.cpp (shared declarations:
// nn_internal.h).
//
// Every converter states the opsets and attributes it handles; anything else
// is an error naming the node.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/converters/nn_internal.h"
#include "ir/symbol.h"

#include <cmath>

namespace tessera::frontend::onnx {

namespace nn_detail {
namespace {

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
    if (!sizes.empty() && ir::isKnownSymbol(int64_t(v))) { // Shape of a symbolic tensor
      size[i] = int64_t(v);
      continue;
    }
    if (sizes.empty() && ir::isSymbol(in)) { // floor(scale * H): resize2d derives it
      size[i] = -1;
      continue;
    }
    double out = sizes.empty() ? std::floor(v * double(in)) : v;
    if (!(out >= 1 && out < double(int64_t(1) << 40)))
      return ctx.error("'{}' value {} gives an invalid output size", what, v);
    size[i] = int64_t(out);
  }
  if (sizes.empty())
    attrs.set("scales", std::vector<double>{scales[size_t(r) - 2], scales[size_t(r) - 1]});
  attrs.set("size", size);
  if (r == 4) // NCHW already
    return ctx.call("resize2d", {x}, attrs);
  if (!ir::isStatic(xs))
    return ctx.error("resizing data of rank {} with symbolic dims ({}) is not supported yet",
                     r, x->type().str());
  int64_t lead = product(std::span(xs).subspan(0, size_t(r) - 2));
  int64_t H = xs[size_t(r) - 2], W = xs[size_t(r) - 1];
  TS_ASSIGN_OR_RETURN(Expr x4, reshapeTo(ctx, x, {lead, 1, H, W}));
  TS_ASSIGN_OR_RETURN(Expr y4, ctx.call("resize2d", {x4}, attrs));
  Ints ys = xs;
  ys[size_t(r) - 2] = size[0], ys[size_t(r) - 1] = size[1];
  return reshapeTo(ctx, y4, ys);
}

/// Resize to `sizes` of data values (torchvision's paste of a mask into its
/// box interpolates to the box's size): each of the two output dims is a
/// run-time symbol <node>_dim<k> counted by range_count from the value, set
/// before the resize runs (a check on the counts orders it after them); the
/// leading values are checked to be the input's dims.
Expected<Expr> resizeToSizesOfData(NodeContext &ctx, const Expr &x, ir::Attrs attrs) {
  TS_ASSIGN_OR_RETURN(Expr s, tensorInput(ctx, 3, "sizes"));
  const ir::Type &st = s->type();
  const int64_t r = rankOf(x);
  if (st.rank() != 1 || !st.isStatic() || st.shape()[0] != r || st.dtype() != ir::DType::I64)
    return ctx.error("input 3 ('sizes') must be an i64 vector of {} values, got {}", r, st.str());
  if (r < 2)
    return ctx.error("input X must have rank >= 2, got {}", x->type().str());
  const Expr zero = scalar(ctx, ir::DType::I64, 0), one = scalar(ctx, ir::DType::I64, 1);
  std::vector<double> sizes(static_cast<size_t>(r), 0.0);
  Expr ok;
  for (int64_t k = 0; k < r; ++k) {
    TS_ASSIGN_OR_RETURN(Expr sk, ctx.call("slice", {s}, {{"starts", Ints{k}}, {"ends", Ints{k + 1}}}));
    Expr holds;
    if (k < r - 2) {
      const int64_t d = shapeOf(x)[size_t(k)];
      Expr dim = scalar(ctx, ir::DType::I64, double(d));
      if (ir::isSymbol(d)) {
        TS_ASSIGN_OR_RETURN(dim, ctx.call("symbol_values", {},
                                          {{"values", Ints{d}}, {"shape", ir::Shape{1}}}));
      }
      TS_ASSIGN_OR_RETURN(holds, ctx.call("equal", {sk, dim}));
      sizes[size_t(k)] = double(d);
    } else {
      TS_ASSIGN_OR_RETURN(int64_t n, countSymbol(ctx, ir::kUnbounded, fmt::format("dim{}", k)));
      TS_ASSIGN_OR_RETURN(Expr scalarSize, reshapeTo(ctx, sk, {}));
      TS_ASSIGN_OR_RETURN(Expr counted,
                          ctx.call("range_count", {zero, scalarSize, one}, {{"count", n}}));
      TS_ASSIGN_OR_RETURN(Outputs count, unpackTuple(ctx, counted));
      TS_ASSIGN_OR_RETURN(holds, ctx.call("greater_equal", {count[0], one}));
      sizes[size_t(k)] = double(n);
    }
    if (ok) {
      TS_ASSIGN_OR_RETURN(ok, ctx.call("logical_and", {ok, holds}));
    } else {
      ok = holds;
    }
  }
  const std::string message = fmt::format(
      "node '{}' (Resize): 'sizes' must keep the input's leading dims ({}) and give the last "
      "two at least 1",
      ctx.nodeName(), x->type().str());
  TS_ASSIGN_OR_RETURN(Expr checked, ctx.call("check", {x, ok}, {{"message", message}}));
  return resizeLastTwo(ctx, checked, {}, sizes, std::move(attrs));
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
    if (scales.empty() && ctx.hasInput(3) && !ctx.constantInput(3) &&
        coord != "tf_crop_and_resize") {
      TS_ASSIGN_OR_RETURN(Expr y, resizeToSizesOfData(ctx, x, attrs));
      return Outputs{y};
    }
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
} // namespace nn_detail

Status registerNNConverters(ConverterRegistry &r) {
  using namespace nn_detail;
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
          "the last two dims of any rank >= 2; scales or sizes (constants, Shape values, or data "
          "decided at run time: each of the two dims then a run-time value); nearest/linear/cubic, "
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
