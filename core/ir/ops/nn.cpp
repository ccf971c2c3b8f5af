//===- ir/ops/nn.cpp - NN ops: normalisation, softmax, resize ------------===//
//
// The NN op family, except convolution (nn_conv.cpp), pooling (nn_pool.cpp)
// and the matrix products dense, matmul, batch_matmul (nn_matmul.cpp):
//   bias_add, batch_norm, layer_norm
//   softmax, log_softmax
//   resize2d                      ONNX Resize on the two spatial dims of NCHW
// Each op has a type relation and a reference kernel; semantics follow ONNX
// (opset 13-17).
//
//===----------------------------------------------------------------------===//
#include "ir/ops/common.h"
#include "ir/ops/resize.h"
#include "ir/ops/ops.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

namespace tessera::ir::ops {

namespace {

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

int64_t product(std::span<const int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims)
    p *= d;
  return p;
}

//===----------------------------------------------------------------------===//
// bias_add(data, bias [C]): y = data + bias broadcast along `axis`
// (data.shape[axis] == C).
//===----------------------------------------------------------------------===//

Expected<Type> biasAddRelation(std::span<const Type> in, const Attrs &attrs) {
  TS_RETURN_IF_ERROR(requireRank(in, 1, 1, "bias"));
  TS_RETURN_IF_ERROR(requireNumeric(in, 0));
  TS_RETURN_IF_ERROR(requireSameDType(in));
  TS_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(attrs.getInt("axis"), in[0].rank()));
  int64_t c = in[0].shape()[size_t(axis)];
  if (in[1].shape()[0] != c)
    return Error::format("bias length {} does not match data dimension {} at axis {}",
                         in[1].shape()[0], c, axis);
  return in[0];
}

/// For a flat index into `shape`, the index along `axis`.
struct AxisIndexer {
  int64_t inner, dim;
  AxisIndexer(const Shape &shape, int64_t axis)
      : inner(product(std::span(shape).subspan(size_t(axis) + 1))), dim(shape[size_t(axis)]) {}
  int64_t operator()(int64_t flat) const { return (flat / inner) % dim; }
};

Expected<std::vector<Tensor>> biasAddKernel(std::span<const Tensor> in, const Attrs &attrs,
                                            const Type &outType) {
  const Tensor &x = in[0], &bias = in[1];
  TS_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(attrs.getInt("axis"), x.rank()));
  AxisIndexer at(x.shape(), axis);
  Tensor y(outType.dtype(), outType.shape());
  bool fp = isFloat(x.dtype());
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (fp)
      y.setDouble(i, x.getDouble(i) + bias.getDouble(at(i)));
    else
      y.setInt(i, int64_t(uint64_t(x.getInt(i)) + uint64_t(bias.getInt(at(i)))));
  }
  return std::vector<Tensor>{y};
}

//===----------------------------------------------------------------------===//
// batch_norm(data, gamma, beta, mean, var), inference form (ONNX
// BatchNormalization, training_mode=0):
//   y = (x - mean[c]) / sqrt(var[c] + epsilon) * gamma[c] + beta[c]
// where c is the index along `axis`; every parameter has shape [C].
//===----------------------------------------------------------------------===//

Expected<Type> batchNormRelation(std::span<const Type> in, const Attrs &attrs) {
  TS_RETURN_IF_ERROR(requireFloat(in, 0));
  TS_RETURN_IF_ERROR(requireSameDType(in));
  TS_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(attrs.getInt("axis"), in[0].rank()));
  Shape c{in[0].shape()[size_t(axis)]};
  static const char *const names[] = {"data", "gamma", "beta", "mean", "var"};
  for (size_t i = 1; i < 5; ++i)
    if (in[i].shape() != c)
      return Error::format("argument {} ('{}') must have shape {}, got {}", i, names[i],
                           shapeStr(c), in[i].str());
  return in[0];
}

Expected<std::vector<Tensor>> batchNormKernel(std::span<const Tensor> in, const Attrs &attrs,
                                              const Type &outType) {
  const Tensor &x = in[0];
  TS_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(attrs.getInt("axis"), x.rank()));
  double eps = attrs.getFloat("epsilon");
  AxisIndexer at(x.shape(), axis);
  Tensor y(outType.dtype(), outType.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t c = at(i);
    double norm = (x.getDouble(i) - in[3].getDouble(c)) / std::sqrt(in[4].getDouble(c) + eps);
    y.setDouble(i, norm * in[1].getDouble(c) + in[2].getDouble(c));
  }
  return std::vector<Tensor>{y};
}

//===----------------------------------------------------------------------===//
// layer_norm(data, gamma[, beta]) (ONNX LayerNormalization): each slice over
// dims [axis, rank) is normalised with its own mean and (biased) variance,
//   y = (x - mean) / sqrt(var + epsilon) * gamma + beta,
// gamma and beta broadcasting (numpy, unidirectionally) to data.shape[axis:].
// beta is optional, as in ONNX (opset 17).
//===----------------------------------------------------------------------===//

/// `s` broadcasts unidirectionally to `target` (right-aligned, dims 1 or equal).
bool broadcastsTo(const Shape &s, std::span<const int64_t> target) {
  if (s.size() > target.size())
    return false;
  size_t off = target.size() - s.size();
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] != 1 && s[i] != target[off + i])
      return false;
  return true;
}

Expected<Type> layerNormRelation(std::span<const Type> in, const Attrs &attrs) {
  TS_RETURN_IF_ERROR(requireFloat(in, 0));
  TS_RETURN_IF_ERROR(requireSameDType(in));
  TS_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(attrs.getInt("axis"), in[0].rank()));
  auto normShape = std::span(in[0].shape()).subspan(size_t(axis));
  static const char *const names[] = {"data", "gamma", "beta"};
  for (size_t i = 1; i < in.size(); ++i)
    if (!broadcastsTo(in[i].shape(), normShape))
      return Error::format("argument {} ('{}') shape {} does not broadcast to normalized shape {}",
                           i, names[i], shapeStr(in[i].shape()), shapeStr(normShape));
  return in[0];
}

Expected<std::vector<Tensor>> layerNormKernel(std::span<const Tensor> in, const Attrs &attrs,
                                              const Type &outType) {
  const Tensor &x = in[0];
  TS_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(attrs.getInt("axis"), x.rank()));
  double eps = attrs.getFloat("epsilon");
  std::span<const int64_t> normShape = std::span(x.shape()).subspan(size_t(axis));
  int64_t inner = product(normShape), outer = inner == 0 ? 0 : x.numel() / inner;
  // gamma and beta expanded to the normalized shape.
  std::vector<double> gamma(static_cast<size_t>(inner)), beta(static_cast<size_t>(inner), 0.0);
  std::vector<int64_t> idx(normShape.size());
  for (int64_t j = 0; j < inner; ++j) {
    unravelIndex(j, normShape, idx);
    gamma[size_t(j)] = in[1].getDouble(broadcastSourceIndex(idx, in[1].shape()));
    if (in.size() > 2)
      beta[size_t(j)] = in[2].getDouble(broadcastSourceIndex(idx, in[2].shape()));
  }
  Tensor y(outType.dtype(), outType.shape());
  for (int64_t o = 0; o < outer; ++o) {
    int64_t base = o * inner;
    double mean = 0, var = 0;
    for (int64_t j = 0; j < inner; ++j)
      mean += x.getDouble(base + j);
    mean /= double(inner);
    for (int64_t j = 0; j < inner; ++j) {
      double d = x.getDouble(base + j) - mean;
      var += d * d;
    }
    var /= double(inner);
    double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t j = 0; j < inner; ++j)
      y.setDouble(base + j,
                  (x.getDouble(base + j) - mean) * inv * gamma[size_t(j)] + beta[size_t(j)]);
  }
  return std::vector<Tensor>{y};
}

//===----------------------------------------------------------------------===//
// softmax / log_softmax along one axis (ONNX opset 13):
//   softmax(x)_i = exp(x_i - max) / sum_j exp(x_j - max)
//   log_softmax(x)_i = x_i - max - log(sum_j exp(x_j - max))
//===----------------------------------------------------------------------===//

Expected<Type> softmaxRelation(std::span<const Type> in, const Attrs &attrs) {
  TS_RETURN_IF_ERROR(requireFloat(in, 0));
  TS_RETURN_IF_ERROR(normalizeAxis(attrs.getInt("axis"), in[0].rank()));
  return in[0];
}

Expected<std::vector<Tensor>> softmaxKernel(const Tensor &x, const Attrs &attrs,
                                            const Type &outType, bool log) {
  TS_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(attrs.getInt("axis"), x.rank()));
  const Shape &s = x.shape();
  int64_t n = s[size_t(axis)];
  int64_t inner = product(std::span(s).subspan(size_t(axis) + 1));
  int64_t outer = product(std::span(s).subspan(0, size_t(axis)));
  Tensor y(outType.dtype(), outType.shape());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t k) { return (o * n + k) * inner + i; };
      double mx = -INFINITY;
      for (int64_t k = 0; k < n; ++k)
        mx = std::max(mx, x.getDouble(at(k)));
      double sum = 0;
      for (int64_t k = 0; k < n; ++k)
        sum += std::exp(x.getDouble(at(k)) - mx);
      for (int64_t k = 0; k < n; ++k) {
        double shifted = x.getDouble(at(k)) - mx;
        y.setDouble(at(k), log ? shifted - std::log(sum) : std::exp(shifted) / sum);
      }
    }
  return std::vector<Tensor>{y};
}

//===----------------------------------------------------------------------===//
// resize2d(data [N, C, H, W]) -> [N, C, size[0], size[1]] (ONNX Resize on the
// spatial dims, following onnx/reference/ops/op_resize.py). Per output
// coordinate x and scale s (scales attr, else size/in), the source coordinate
// x_ori follows coordinate_transformation_mode; neighbours are taken from the
// edge-padded input, preferring lower indices on ties; the weights are
//   nearest: one-hot per nearest_mode (x_ori integral -> itself)
//   linear:  [1 - r, r] on floor/ceil
//   cubic:   Keys kernel with coefficient cubic_coeff_a on 4 neighbours
// with r = x_ori - floor(x_ori) (1 when x_ori is integral). exclude_outside
// zeroes the weights of neighbours outside the input and renormalises.
// tf_crop_and_resize maps the output onto the region 'roi' ([h0, w0, h1, w1],
// normalised coordinates) and gives 'extrapolation_value' where x_ori falls
// outside the input along either axis (the reference's weights sum to 1).
// The 2-D result is the tensor product of the per-axis weights (the
// reference interpolates axis by axis, which is the same sum).
//===----------------------------------------------------------------------===//

constexpr std::array<std::string_view, 3> kResizeModes = {"nearest", "linear", "cubic"};
constexpr std::array<std::string_view, 7> kCoordModes = {
    "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
    "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
constexpr std::array<std::string_view, 4> kNearestModes = {"round_prefer_floor",
                                                           "round_prefer_ceil", "floor", "ceil"};

template <size_t N>
Status requireOneOf(const Attrs &attrs, std::string_view name,
                    const std::array<std::string_view, N> &allowed) {
  std::string v = attrs.getString(name);
  if (std::find(allowed.begin(), allowed.end(), v) != allowed.end())
    return okStatus();
  return Error::format("attribute '{}' = \"{}\" is not one of: {}", name, v,
                       fmt::join(allowed, ", "));
}

Expected<Type> resize2dRelation(std::span<const Type> in, const Attrs &attrs) {
  TS_RETURN_IF_ERROR(requireRank(in, 0, 4, "data"));
  TS_RETURN_IF_ERROR(requireOneOf(attrs, "mode", kResizeModes));
  TS_RETURN_IF_ERROR(requireOneOf(attrs, "coordinate_transformation_mode", kCoordModes));
  TS_RETURN_IF_ERROR(requireOneOf(attrs, "nearest_mode", kNearestModes));
  if (attrs.getString("mode") != "nearest")
    TS_RETURN_IF_ERROR(requireFloat(in, 0));
  auto size = attrs.getInts("size");
  if (size.size() != 2)
    return Error::format("attribute 'size' must have 2 values, got {}", size.size());
  auto scales = attrs.getFloats("scales");
  if (!scales.empty() && scales.size() != 2)
    return Error::format("attribute 'scales' must have 0 or 2 values, got {}", scales.size());
  for (double s : scales)
    if (!(s > 0))
      return Error::format("attribute 'scales' must be positive, got {}",
                           attrValueStr(AttrValue(scales)));
  // -1: floor(scale * input size) (ONNX Resize by scales; over a symbolic
  // dim, a dim derived from it).
  for (size_t i = 0; i < 2; ++i)
    if (size[i] == -1) {
      if (scales.empty())
        return Error::format("attribute 'size' value -1 needs 'scales'");
      const double out = std::floor(scales[i] * double(in[0].shape()[2 + i]));
      if (!(out >= 1 && out < double(kMaxElements)))
        return Error::format("scale {} of input size {} gives an invalid output size", scales[i],
                             in[0].shape()[2 + i]);
      size[i] = int64_t(out);
    }
  if (size[0] <= 0 || size[1] <= 0)
    return Error::format("attribute 'size' must be positive, got {}", shapeStr(size));
  auto roi = attrs.getFloats("roi");
  if (attrs.getString("coordinate_transformation_mode") == "tf_crop_and_resize" && roi.size() != 4)
    return Error::format("attribute 'roi' must have 4 values [h0, w0, h1, w1] for "
                         "tf_crop_and_resize, got {}",
                         roi.size());
  const Shape &x = in[0].shape();
  if (x[2] == 0 || x[3] == 0)
    return Error::format("spatial size [{}, {}] must not be empty", x[2], x[3]);
  return Type::tensor(in[0].dtype(), {x[0], x[1], size[0], size[1]});
}

Expected<std::vector<Tensor>> resize2dKernel(std::span<const Tensor> in, const Attrs &attrs,
                                             const Type &outType) {
  const Tensor &x = in[0];
  const ResizeSampling p = resizeSampling(attrs);
  const Shape &xs = x.shape(), &ys = outType.shape();
  auto scales = attrs.getFloats("scales");
  auto roi = attrs.getFloats("roi");
  double extrapolation = attrs.getFloat("extrapolation_value");
  std::vector<Taps> taps[2];
  for (int a = 0; a < 2; ++a) {
    int64_t inSize = xs[2 + size_t(a)], outSize = ys[2 + size_t(a)];
    double scale = scales.empty() ? double(outSize) / double(inSize) : scales[size_t(a)];
    double roi0 = roi.size() == 4 ? roi[size_t(a)] : 0,
           roi1 = roi.size() == 4 ? roi[2 + size_t(a)] : 1;
    for (int64_t o = 0; o < outSize; ++o)
      taps[a].push_back(resizeTapsOf(p, o, scale, inSize, outSize, roi0, roi1));
  }
  Tensor y(outType.dtype(), ys);
  bool nearest = p.mode == kResizeNearest;
  int64_t H = xs[2], W = xs[3], OH = ys[2], OW = ys[3];
  for (int64_t nc = 0; nc < xs[0] * xs[1]; ++nc)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        const Taps &th = taps[0][size_t(oh)], &tw = taps[1][size_t(ow)];
        int64_t out = (nc * OH + oh) * OW + ow;
        if (th.outside || tw.outside) {
          y.setDouble(out, extrapolation);
          continue;
        }
        if (nearest) {
          // Copy the chosen element exactly (any dtype).
          int64_t ih = th.w[0] != 0 ? th.idx[0] : th.idx[1];
          int64_t iw = tw.w[0] != 0 ? tw.idx[0] : tw.idx[1];
          int64_t src = (nc * H + ih) * W + iw;
          if (isFloat(x.dtype()))
            y.setDouble(out, x.getDouble(src));
          else
            y.setInt(out, x.getInt(src));
          continue;
        }
        double acc = 0;
        for (int i = 0; i < th.n; ++i) {
          if (th.w[i] == 0)
            continue;
          double row = 0;
          for (int j = 0; j < tw.n; ++j)
            row += tw.w[j] * x.getDouble((nc * H + th.idx[i]) * W + tw.idx[j]);
          acc += th.w[i] * row;
        }
        y.setDouble(out, acc);
      }
  return std::vector<Tensor>{y};
}

} // namespace

Status registerNNOps(OpRegistry &r) {
  TS_RETURN_IF_ERROR(r.add(Op{
      .name = "bias_add",
      .description = "adds a 1-D bias along one axis of data",
      .argNames = {"data", "bias"},
      .minArgs = 2,
      .maxArgs = 2,
      .attrs = {AttrSpec{"axis", AttrKind::Int, AttrValue(int64_t{1}),
                         "axis of data the bias runs along"}},
      .pattern = OpPattern::Broadcast,
      .relation = biasAddRelation,
      .kernel = biasAddKernel,
  }));

  TS_RETURN_IF_ERROR(r.add(Op{
      .name = "batch_norm",
      .description = "inference batch normalization (ONNX BatchNormalization)",
      .argNames = {"data", "gamma", "beta", "mean", "var"},
      .minArgs = 5,
      .maxArgs = 5,
      .attrs = {AttrSpec{"epsilon", AttrKind::Float, AttrValue(1e-5), "added to the variance"},
                AttrSpec{"axis", AttrKind::Int, AttrValue(int64_t{1}), "channel axis"}},
      .pattern = OpPattern::Opaque,
      .relation = batchNormRelation,
      .kernel = batchNormKernel,
  }));

  TS_RETURN_IF_ERROR(r.add(Op{
      .name = "layer_norm",
      .description = "layer normalization over dims [axis, rank) (ONNX LayerNormalization)",
      .argNames = {"data", "gamma", "beta"},
      .minArgs = 2,
      .maxArgs = 3,
      .attrs = {AttrSpec{"axis", AttrKind::Int, AttrValue(int64_t{-1}), "first normalized axis"},
                AttrSpec{"epsilon", AttrKind::Float, AttrValue(1e-5), "added to the variance"}},
      .pattern = OpPattern::Opaque,
      .relation = layerNormRelation,
      .kernel = layerNormKernel,
  }));

  TS_RETURN_IF_ERROR(r.add(Op{
      .name = "softmax",
      .description = "softmax along one axis (ONNX Softmax, opset 13)",
      .argNames = {"data"},
      .minArgs = 1,
      .maxArgs = 1,
      .attrs = {AttrSpec{"axis", AttrKind::Int, AttrValue(int64_t{-1}), "softmax axis"}},
      .pattern = OpPattern::Opaque,
      .relation = softmaxRelation,
      .kernel =
          [](std::span<const Tensor> in, const Attrs &attrs, const Type &outType) {
            return softmaxKernel(in[0], attrs, outType, /*log=*/false);
          },
  }));

  TS_RETURN_IF_ERROR(r.add(Op{
      .name = "log_softmax",
      .description = "log of softmax along one axis (ONNX LogSoftmax, opset 13)",
      .argNames = {"data"},
      .minArgs = 1,
      .maxArgs = 1,
      .attrs = {AttrSpec{"axis", AttrKind::Int, AttrValue(int64_t{-1}), "softmax axis"}},
      .pattern = OpPattern::Opaque,
      .relation = softmaxRelation,
      .kernel =
          [](std::span<const Tensor> in, const Attrs &attrs, const Type &outType) {
            return softmaxKernel(in[0], attrs, outType, /*log=*/true);
          },
  }));

  TS_RETURN_IF_ERROR(r.add(Op{
      .name = "resize2d",
      .description = "resizes the spatial dims of NCHW data (ONNX Resize)",
      .argNames = {"data"},
      .minArgs = 1,
      .maxArgs = 1,
      .attrs = {AttrSpec{"size", AttrKind::Ints, std::nullopt,
                         "output spatial size [OH, OW]; -1: floor(scale * input size)"},
                AttrSpec{"scales", AttrKind::Floats, AttrValue(std::vector<double>{}),
                         "[sh, sw] for the coordinate transform (default: size / input size)"},
                AttrSpec{"mode", AttrKind::String, AttrValue(std::string("nearest")),
                         "nearest, linear or cubic"},
                AttrSpec{"coordinate_transformation_mode", AttrKind::String,
                         AttrValue(std::string("half_pixel")),
                         "half_pixel, half_pixel_symmetric, pytorch_half_pixel, align_corners, "
                         "asymmetric, tf_half_pixel_for_nn or tf_crop_and_resize"},
                AttrSpec{"nearest_mode", AttrKind::String,
                         AttrValue(std::string("round_prefer_floor")),
                         "round_prefer_floor, round_prefer_ceil, floor or ceil"},
                AttrSpec{"cubic_coeff_a", AttrKind::Float, AttrValue(-0.75),
                         "the cubic kernel's coefficient a"},
                AttrSpec{"exclude_outside", AttrKind::Bool, AttrValue(false),
                         "give neighbours outside the input zero weight (renormalised)"},
                AttrSpec{"roi", AttrKind::Floats, AttrValue(std::vector<double>{}),
                         "tf_crop_and_resize: crop region [h0, w0, h1, w1], normalised"},
                AttrSpec{"extrapolation_value", AttrKind::Float, AttrValue(0.0),
                         "tf_crop_and_resize: value where the source is outside the input"}},
      .pattern = OpPattern::Opaque,
      .relation = resize2dRelation,
      .kernel = resize2dKernel,
  }));
  return okStatus();
}

} // namespace tessera::ir::ops
