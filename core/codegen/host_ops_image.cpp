//===- codegen/host_ops_image.cpp - Lowerings of the image ops ------------===//
//
// Host lowerings (codegen/host_ops.h) of the tensor family's image ops
// (resize2d, grid_sample, ...): the taps and weights that depend only on
// shapes and attributes precomputed here for codegen/kernels/image.cpp.
//
//===----------------------------------------------------------------------===//
#include "codegen/host_ops.h"
#include "codegen/host_ops_tensor_internal.h"

#include "codegen/kernels/tensor_ops.h"
#include "ir/ops/common.h"
#include "ir/ops/resize.h"
#include "ir/tensor.h"

#include <algorithm>
#include <cmath>

namespace tessera::codegen::tensor_lowering {

void addImage(LoweringTable &table) {
  // resize2d: ia = [elem_size, nearest, H, W, OH, OW, fill_bits, (outside, n,
  // idx[4]) per output row then per output column], fa = [w[4] per output
  // row then per output column]. Over symbolic shapes (anySize), the taps
  // are computed per run: resize2d_dyn, ia = [elem_size, mode, coord,
  // nearest_mode, exclude_outside, fill_bits, has_scales], fa = [cubic_a,
  // scale_h, scale_w, roi0_h, roi0_w, roi1_h, roi1_w], scratch = the taps.
  table.add("resize2d", [](const ir::Attrs &attrs, const HostOpTypes &t) -> Expected<KernelCall> {
    const Ints &xs = t.inputs[0].shape(), &ys = t.outputs[0].shape();
    const ir::ops::ResizeSampling p = ir::ops::resizeSampling(attrs);
    auto scales = attrs.getFloats("scales");
    auto roi = attrs.getFloats("roi");
    const int64_t fill = fillBits(t.outputs[0].dtype(), attrs.getFloat("extrapolation_value"));
    if (t.anySize) {
      const bool hasRoi = roi.size() == 4;
      return KernelCall{"resize2d_dyn",
                        {elemSize(t.inputs[0]), p.mode, p.coord, p.nearest, p.excludeOutside,
                         fill, !scales.empty()},
                        {p.cubicA, scales.empty() ? 0 : scales[0], scales.empty() ? 0 : scales[1],
                         hasRoi ? roi[0] : 0, hasRoi ? roi[1] : 0, hasRoi ? roi[2] : 1,
                         hasRoi ? roi[3] : 1},
                        uint64_t(ys[2] + ys[3]) * TK_RESIZE_TAP_BYTES};
    }
    KernelCall call{"resize2d",
                    {elemSize(t.inputs[0]), p.mode == ir::ops::kResizeNearest ? 1 : 0, xs[2], xs[3],
                     ys[2], ys[3], fill},
                    {},
                    0};
    for (size_t a = 0; a < 2; ++a) {
      int64_t inSize = xs[2 + a], outSize = ys[2 + a];
      double scale = scales.empty() ? double(outSize) / double(inSize) : scales[a];
      double roi0 = roi.size() == 4 ? roi[a] : 0, roi1 = roi.size() == 4 ? roi[2 + a] : 1;
      for (int64_t o = 0; o < outSize; ++o) {
        ir::ops::Taps tp = ir::ops::resizeHostTaps(p, o, scale, inSize, outSize, roi0, roi1);
        call.ia.insert(call.ia.end(),
                       {tp.outside ? 1 : 0, tp.n, tp.idx[0], tp.idx[1], tp.idx[2], tp.idx[3]});
        call.fa.insert(call.fa.end(), {tp.w[0], tp.w[1], tp.w[2], tp.w[3]});
      }
    }
    return call;
  });
  // grid_sample: ia = [mode, padding_mode, align_corners] (tensor_ops.h).
  table.add("grid_sample", [](const ir::Attrs &attrs, const HostOpTypes &) -> Expected<KernelCall> {
    std::string mode = attrs.getString("mode"), pm = attrs.getString("padding_mode");
    return KernelCall{"grid_sample",
                      {mode == "nearest"   ? TK_GS_NEAREST
                       : mode == "bicubic" ? TK_GS_BICUBIC
                                           : TK_GS_BILINEAR,
                       pm == "border"       ? TK_GS_BORDER
                       : pm == "reflection" ? TK_GS_REFLECTION
                                            : TK_GS_ZEROS,
                       attrs.getBool("align_corners") ? 1 : 0},
                      {},
                      0};
  });
  // roi_align: ia = [output_height, output_width, sampling_ratio,
  // half_pixel, max_mode], fa = [spatial_scale].
  table.add("roi_align", [](const ir::Attrs &attrs, const HostOpTypes &) -> Expected<KernelCall> {
    return KernelCall{"roi_align",
                      {attrs.getInt("output_height"), attrs.getInt("output_width"),
                       attrs.getInt("sampling_ratio"),
                       attrs.getString("coordinate_transformation_mode") == "half_pixel" ? 1 : 0,
                       attrs.getString("mode") == "max" ? 1 : 0},
                      {attrs.getFloat("spatial_scale")},
                      0};
  });
}

} // namespace tessera::codegen::tensor_lowering
