//===- ir/ops/nn_pool.cpp - Pooling ops ----------------------------------===//
//
// The pooling ops of the NN family: max_pool2d, max_pool2d_indices,
// avg_pool2d, global_avg_pool2d and global_max_pool2d, with their type
// relations and reference kernels. Layout is NCHW; semantics follow ONNX
// MaxPool / AveragePool / Global*Pool. The window helpers shared with the
// convolutions (nn_conv.cpp) are in nn_window.h.
//
// Window attributes use ONNX conventions: pads = [top, left, bottom, right],
// strides and dilation = [h, w].
//
//===----------------------------------------------------------------------===//
#include "ir/ops/common.h"
#include "ir/ops/nn_window.h"
#include "ir/ops/ops.h"

#include <algorithm>
#include <vector>

namespace tessera::ir::ops {

namespace {

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
              ? sdk::tapsInside(hs, win.k[0], win.d[0], -win.p0[0], xs[2] + win.p1[0]).count() *
                    sdk::tapsInside(ws, win.k[1], win.d[1], -win.p0[1], xs[3] + win.p1[1]).count()
              : sdk::tapsInside(hs, win.k[0], win.d[0], 0, xs[2]).count() *
                    sdk::tapsInside(ws, win.k[1], win.d[1], 0, xs[3]).count();
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

Status registerPoolOps(OpRegistry &r) {
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
