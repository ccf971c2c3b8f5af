//===- ir/ops/image.cpp - Image sampling ops ------------------------------===//
//
// Ops that sample NCHW images at computed (fractional) positions, with the
// semantics of the ONNX reference implementation (which follows
// onnxruntime):
//   grid_sample  ONNX GridSample (opset 16), 4-D: modes bilinear, nearest,
//                bicubic; padding_mode zeros, border, reflection;
//                align_corners
//   roi_align    ONNX RoiAlign (opsets 10-16): modes avg and max;
//                coordinate_transformation_mode half_pixel and
//                output_half_pixel
// Kernels compute in double and round once to the output dtype.
//
//===----------------------------------------------------------------------===//
#include "ir/ops/common.h"
#include "ir/ops/ops.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string_view>

namespace tessera::ir::ops {

namespace {

Status requireOneOf(const Attrs &attrs, std::string_view name,
                    std::initializer_list<std::string_view> allowed) {
  std::string v = attrs.getString(name);
  std::string list;
  for (std::string_view a : allowed) {
    if (a == v)
      return okStatus();
    list += fmt::format("{}\"{}\"", list.empty() ? "" : ", ", a);
  }
  return Error::format("attribute '{}' = \"{}\" is not one of {}", name, v, list);
}

//===----------------------------------------------------------------------===//
// grid_sample(X [N, C, H, W], grid [N, OH, OW, 2]) -> [N, C, OH, OW]
//
// grid[n, oy, ox] = (x, y) in [-1, 1] (x along W). Denormalised:
//   align_corners: x' = (x + 1) / 2 * (W - 1)
//   else:          x' = ((x + 1) * W - 1) / 2
// padding_mode border clamps x' to [0, W - 1]; reflection reflects it
// into [xmin, xmax] ([-0.5, W - 0.5], or [0, W - 1] with align_corners).
// nearest rounds half to even; bilinear weights the 4 neighbours
// floor(x'), floor(x') + 1; bicubic the 4x4 neighbours floor(x') - 1 ..
// floor(x') + 2 with the cubic convolution kernel (a = -0.75). A neighbour
// outside the image reads 0 (zeros), the clamped pixel (border) or the
// reflected pixel (reflection).
//===----------------------------------------------------------------------===//

Expected<Type> gridSampleRelation(std::span<const Type> in, const Attrs &attrs) {
  TS_RETURN_IF_ERROR(requireRank(in, 0, 4, "X"));
  TS_RETURN_IF_ERROR(requireRank(in, 1, 4, "grid"));
  TS_RETURN_IF_ERROR(requireFloat(in, 0));
  TS_RETURN_IF_ERROR(requireSameDType(in));
  TS_RETURN_IF_ERROR(requireOneOf(attrs, "mode", {"bilinear", "nearest", "bicubic"}));
  TS_RETURN_IF_ERROR(requireOneOf(attrs, "padding_mode", {"zeros", "border", "reflection"}));
  const Shape &xs = in[0].shape(), &gs = in[1].shape();
  if (gs[3] != 2)
    return Error::format("the last dim of grid must be 2 (x, y), got {}", gs[3]);
  if (gs[0] != xs[0])
    return Error::format("grid has batch size {} but X has {}", gs[0], xs[0]);
  return Type::tensor(in[0].dtype(), {xs[0], xs[1], gs[1], gs[2]});
}

/// ONNX reference _gs_reflect: reflects x into [lo, hi].
double reflect(double x, double lo, double hi) {
  double range = hi - lo;
  if (range <= 0)
    return lo;
  if (x < lo) {
    double dx = lo - x;
    int64_t n = int64_t(dx / range);
    double r = dx - double(n) * range;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    double dx = x - hi;
    int64_t n = int64_t(dx / range);
    double r = dx - double(n) * range;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

/// Cubic convolution weights of the 4 taps at offsets -1, 0, 1, 2 for a
/// fractional position t in [0, 1).
std::array<double, 4> cubicCoeffs(double t) {
  constexpr double a = -0.75;
  double x = std::abs(t);
  return {((a * (x + 1) - 5 * a) * (x + 1) + 8 * a) * (x + 1) - 4 * a,
          ((a + 2) * x - (a + 3)) * x * x + 1,
          ((a + 2) * (1 - x) - (a + 3)) * (1 - x) * (1 - x) + 1,
          ((a * (2 - x) - 5 * a) * (2 - x) + 8 * a) * (2 - x) - 4 * a};
}

enum class Padding { Zeros, Border, Reflection };

Expected<std::vector<Tensor>> gridSampleKernel(std::span<const Tensor> in, const Attrs &attrs,
                                               const Type &outType) {
  const Tensor &x = in[0], &grid = in[1];
  const Shape &xs = x.shape(), &os = outType.shape();
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], OH = os[2], OW = os[3];
  std::string mode = attrs.getString("mode");
  std::string pm = attrs.getString("padding_mode");
  Padding padding = pm == "zeros"    ? Padding::Zeros
                    : pm == "border" ? Padding::Border
                                     : Padding::Reflection;
  bool align = attrs.getBool("align_corners");
  double xmin = align ? 0.0 : -0.5, xmax = align ? double(W - 1) : double(W) - 0.5;
  double ymin = align ? 0.0 : -0.5, ymax = align ? double(H - 1) : double(H) - 0.5;
  auto denorm = [&](double v, int64_t len) {
    return align ? (v + 1) / 2.0 * double(len - 1) : ((v + 1) * double(len) - 1) / 2.0;
  };
  Tensor out(x.dtype(), os);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      const int64_t base = (n * C + c) * H * W;
      // The pixel at integer (r, col) under the padding mode.
      auto pixel = [&](int64_t r, int64_t col) -> double {
        switch (padding) {
        case Padding::Zeros:
          if (r < 0 || r >= H || col < 0 || col >= W)
            return 0.0;
          break;
        case Padding::Border:
          r = std::clamp<int64_t>(r, 0, H - 1);
          col = std::clamp<int64_t>(col, 0, W - 1);
          break;
        case Padding::Reflection:
          col = int64_t(reflect(double(col), xmin, xmax));
          r = int64_t(reflect(double(r), ymin, ymax));
          col = std::clamp<int64_t>(col, 0, W - 1);
          r = std::clamp<int64_t>(r, 0, H - 1);
          break;
        }
        return x.getDouble(base + r * W + col);
      };
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          int64_t g = ((n * OH + oy) * OW + ox) * 2;
          double fx = denorm(grid.getDouble(g), W), fy = denorm(grid.getDouble(g + 1), H);
          if (mode == "nearest") {
            fx = std::nearbyint(fx);
            fy = std::nearbyint(fy);
          }
          if (padding == Padding::Border) {
            fx = std::clamp(fx, 0.0, double(W - 1));
            fy = std::clamp(fy, 0.0, double(H - 1));
          } else if (padding == Padding::Reflection) {
            fx = reflect(fx, xmin, xmax);
            fy = reflect(fy, ymin, ymax);
          }
          double v;
          if (mode == "nearest") {
            v = pixel(int64_t(std::nearbyint(fy)), int64_t(std::nearbyint(fx)));
          } else if (mode == "bilinear") {
            double x1 = std::floor(fx), y1 = std::floor(fy);
            int64_t ix = int64_t(x1), iy = int64_t(y1);
            double dx1 = fx - x1, dx2 = x1 + 1 - fx, dy1 = fy - y1, dy2 = y1 + 1 - fy;
            v = dy2 * (dx2 * pixel(iy, ix) + dx1 * pixel(iy, ix + 1)) +
                dy1 * (dx2 * pixel(iy + 1, ix) + dx1 * pixel(iy + 1, ix + 1));
          } else {
            double x0 = std::floor(fx) - 1, y0 = std::floor(fy) - 1;
            int64_t ix = int64_t(x0), iy = int64_t(y0);
            auto cx = cubicCoeffs(fx - x0 - 1), cy = cubicCoeffs(fy - y0 - 1);
            v = 0;
            for (int64_t h = 0; h < 4; ++h) {
              double row = 0;
              for (int64_t w = 0; w < 4; ++w)
                row += cx[size_t(w)] * pixel(iy + h, ix + w);
              v += cy[size_t(h)] * row;
            }
          }
          out.setDouble(((n * C + c) * OH + oy) * OW + ox, v);
        }
    }
  return std::vector<Tensor>{std::move(out)};
}

//===----------------------------------------------------------------------===//
// roi_align(X [N, C, H, W], rois [R, 4], batch_indices [R] i64)
//   -> [R, C, output_height, output_width]
//
// Each roi (x1, y1, x2, y2) is scaled by spatial_scale and shifted by -0.5
// (half_pixel) or not (output_half_pixel, which also makes the roi at least
// 1x1). Each output bin averages (avg) or takes the maximum (max) of
// sampling_ratio^2 bilinear samples (ceil(roi size / output size) per axis
// when sampling_ratio is 0). As in the reference, a sample more than one
// pixel outside the image is 0, coordinates are clamped to the image, and
// max mode takes the maximum of the 4 weighted neighbours of each sample.
//===----------------------------------------------------------------------===//

Expected<Type> roiAlignRelation(std::span<const Type> in, const Attrs &attrs) {
  TS_RETURN_IF_ERROR(requireRank(in, 0, 4, "X"));
  TS_RETURN_IF_ERROR(requireRank(in, 1, 2, "rois"));
  TS_RETURN_IF_ERROR(requireRank(in, 2, 1, "batch_indices"));
  TS_RETURN_IF_ERROR(requireFloat(in, 0));
  if (in[1].dtype() != in[0].dtype())
    return Error::format("argument 1 ('rois') has dtype {}, expected {} (as X)",
                         dtypeName(in[1].dtype()), dtypeName(in[0].dtype()));
  if (in[2].dtype() != DType::I64)
    return Error::format("argument 2 ('batch_indices') must be i64, got {}", in[2].str());
  TS_RETURN_IF_ERROR(requireOneOf(attrs, "mode", {"avg", "max"}));
  TS_RETURN_IF_ERROR(
      requireOneOf(attrs, "coordinate_transformation_mode", {"half_pixel", "output_half_pixel"}));
  const Shape &rs = in[1].shape();
  if (rs[1] != 4)
    return Error::format("rois must have shape [R, 4], got {}", in[1].str());
  if (in[2].shape()[0] != rs[0])
    return Error::format("batch_indices has {} entries but there are {} rois", in[2].shape()[0],
                         rs[0]);
  int64_t oh = attrs.getInt("output_height"), ow = attrs.getInt("output_width");
  if (oh <= 0 || ow <= 0)
    return Error::format("attributes 'output_height' = {} and 'output_width' = {} must be positive",
                         oh, ow);
  if (attrs.getInt("sampling_ratio") < 0)
    return Error::format("attribute 'sampling_ratio' = {} must be >= 0",
                         attrs.getInt("sampling_ratio"));
  return Type::tensor(in[0].dtype(), {rs[0], in[0].shape()[1], oh, ow});
}

Expected<std::vector<Tensor>> roiAlignKernel(std::span<const Tensor> in, const Attrs &attrs,
                                             const Type &outType) {
  const Tensor &x = in[0], &rois = in[1], &batchIndices = in[2];
  const Shape &xs = x.shape();
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  const int64_t R = rois.shape()[0];
  const int64_t PH = attrs.getInt("output_height"), PW = attrs.getInt("output_width");
  const int64_t ratio = attrs.getInt("sampling_ratio");
  const double scale = attrs.getFloat("spatial_scale");
  const bool halfPixel = attrs.getString("coordinate_transformation_mode") == "half_pixel";
  const bool maxMode = attrs.getString("mode") == "max";
  Tensor out(x.dtype(), outType.shape());

  struct Sample {
    std::array<int64_t, 4> pos{};
    std::array<double, 4> w{};
  };
  for (int64_t roi = 0; roi < R; ++roi) {
    int64_t b = batchIndices.getInt(roi);
    if (b < 0 || b >= N)
      return Error::format("roi_align: batch index {} of roi {} is out of range for batch size {}",
                           b, roi, N);
    double offset = halfPixel ? 0.5 : 0.0;
    double x1 = rois.getDouble(roi * 4) * scale - offset;
    double y1 = rois.getDouble(roi * 4 + 1) * scale - offset;
    double x2 = rois.getDouble(roi * 4 + 2) * scale - offset;
    double y2 = rois.getDouble(roi * 4 + 3) * scale - offset;
    double rw = x2 - x1, rh = y2 - y1;
    if (!halfPixel) {
      rw = std::max(rw, 1.0);
      rh = std::max(rh, 1.0);
    }
    double binH = rh / double(PH), binW = rw / double(PW);
    int64_t gridH = ratio > 0 ? ratio : int64_t(std::ceil(rh / double(PH)));
    int64_t gridW = ratio > 0 ? ratio : int64_t(std::ceil(rw / double(PW)));
    double count = double(std::max<int64_t>(gridH * gridW, 1));

    for (int64_t ph = 0; ph < PH; ++ph)
      for (int64_t pw = 0; pw < PW; ++pw) {
        // The bilinear samples of this bin (shared by all channels).
        std::vector<Sample> samples;
        for (int64_t iy = 0; iy < gridH; ++iy)
          for (int64_t ix = 0; ix < gridW; ++ix) {
            double y = y1 + double(ph) * binH + (double(iy) + 0.5) * binH / double(gridH);
            double xx = x1 + double(pw) * binW + (double(ix) + 0.5) * binW / double(gridW);
            Sample s;
            if (y < -1.0 || y > double(H) || xx < -1.0 || xx > double(W)) {
              samples.push_back(s); // all weights 0
              continue;
            }
            y = std::max(y, 0.0);
            xx = std::max(xx, 0.0);
            int64_t yl = int64_t(y), xl = int64_t(xx), yh, xh;
            if (yl >= H - 1) {
              yh = yl = H - 1;
              y = double(yl);
            } else {
              yh = yl + 1;
            }
            if (xl >= W - 1) {
              xh = xl = W - 1;
              xx = double(xl);
            } else {
              xh = xl + 1;
            }
            double ly = y - double(yl), lx = xx - double(xl), hy = 1 - ly, hx = 1 - lx;
            s.w = {hy * hx, hy * lx, ly * hx, ly * lx};
            s.pos = {yl * W + xl, yl * W + xh, yh * W + xl, yh * W + xh};
            samples.push_back(s);
          }
        for (int64_t c = 0; c < C; ++c) {
          const int64_t base = (b * C + c) * H * W;
          double acc = 0;
          bool first = true;
          for (const Sample &s : samples) {
            if (maxMode) {
              double m = s.w[0] * x.getDouble(base + s.pos[0]);
              for (size_t k = 1; k < 4; ++k)
                m = std::max(m, s.w[k] * x.getDouble(base + s.pos[k]));
              acc = first ? m : std::max(acc, m);
              first = false;
            } else {
              for (size_t k = 0; k < 4; ++k)
                acc += s.w[k] * x.getDouble(base + s.pos[k]);
            }
          }
          if (!maxMode)
            acc /= count;
          out.setDouble(((roi * C + c) * PH + ph) * PW + pw, acc);
        }
      }
  }
  return std::vector<Tensor>{std::move(out)};
}

} // namespace

Status registerImageOps(OpRegistry &r) {
  using K = AttrKind;

  TS_RETURN_IF_ERROR(r.add(Op{
      "grid_sample",
      "Samples NCHW data at the normalised positions of 'grid' [N, OH, OW, 2] (ONNX GridSample).",
      {"data", "grid"},
      2,
      2,
      {{"mode", K::String, AttrValue(std::string("bilinear")), "bilinear, nearest or bicubic"},
       {"padding_mode", K::String, AttrValue(std::string("zeros")),
        "value outside the image: zeros, border or reflection"},
       {"align_corners", K::Bool, AttrValue(false),
        "-1 and 1 are the centres of the corner pixels (else their outer edges)"}},
      OpPattern::Opaque,
      gridSampleRelation,
      gridSampleKernel,
  }));

  TS_RETURN_IF_ERROR(r.add(Op{
      "roi_align",
      "Pools each region of interest of NCHW data to a fixed size with bilinear sampling "
      "(ONNX RoiAlign).",
      {"data", "rois", "batch_indices"},
      3,
      3,
      {{"output_height", K::Int, AttrValue(int64_t(1)), "output rows per roi"},
       {"output_width", K::Int, AttrValue(int64_t(1)), "output columns per roi"},
       {"sampling_ratio", K::Int, AttrValue(int64_t(0)),
        "samples per bin along each axis (0: ceil(roi size / output size))"},
       {"spatial_scale", K::Float, AttrValue(1.0), "factor from roi coordinates to data pixels"},
       {"mode", K::String, AttrValue(std::string("avg")), "avg or max pooling of the samples"},
       {"coordinate_transformation_mode", K::String, AttrValue(std::string("half_pixel")),
        "half_pixel (shift rois by -0.5) or output_half_pixel (no shift)"}},
      OpPattern::Opaque,
      roiAlignRelation,
      roiAlignKernel,
  }));

  return okStatus();
}

} // namespace tessera::ir::ops
