//===- frontend/onnx/converters/sampling.cpp - ONNX image sampling converters -===//
//
// GridSample and RoiAlign, which map onto the core ops grid_sample and
// roi_align (ir/ops/image.cpp).
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/converters/common.h"

namespace tessera::frontend::onnx {

namespace {

using ir::DType;
using ir::Expr;

/// GridSample (opset 16-17): mode, padding_mode, align_corners; 4-D only.
Expected<Outputs> convertGridSample(NodeContext &ctx) {
  if (!ctx.hasInput(0) || !ctx.hasInput(1))
    return ctx.error("inputs X and grid are required");
  TS_ASSIGN_OR_RETURN(std::string mode, ctx.attrString("mode", std::string("bilinear")));
  TS_ASSIGN_OR_RETURN(std::string padding, ctx.attrString("padding_mode", std::string("zeros")));
  TS_ASSIGN_OR_RETURN(int64_t align, ctx.attrInt("align_corners", int64_t(0)));
  TS_ASSIGN_OR_RETURN(
      Expr y, ctx.call("grid_sample", {ctx.input(0), ctx.input(1)},
                       {{"mode", mode}, {"padding_mode", padding}, {"align_corners", align != 0}}));
  return Outputs{y};
}

/// RoiAlign (opsets 10-17): output_height/width, sampling_ratio,
/// spatial_scale, mode avg/max, coordinate_transformation_mode (opset 16;
/// before it the behaviour is "output_half_pixel").
Expected<Outputs> convertRoiAlign(NodeContext &ctx) {
  for (size_t i = 0; i < 3; ++i)
    if (!ctx.hasInput(i))
      return ctx.error("input {} is missing (X, rois and batch_indices are required)", i);
  TS_ASSIGN_OR_RETURN(std::string mode, ctx.attrString("mode", std::string("avg")));
  TS_ASSIGN_OR_RETURN(int64_t oh, ctx.attrInt("output_height", int64_t(1)));
  TS_ASSIGN_OR_RETURN(int64_t ow, ctx.attrInt("output_width", int64_t(1)));
  TS_ASSIGN_OR_RETURN(int64_t ratio, ctx.attrInt("sampling_ratio", int64_t(0)));
  TS_ASSIGN_OR_RETURN(float scale, ctx.attrFloat("spatial_scale", 1.0f));
  std::string defaultCtm = ctx.opset() >= 16 ? "half_pixel" : "output_half_pixel";
  TS_ASSIGN_OR_RETURN(std::string ctm,
                      ctx.attrString("coordinate_transformation_mode", defaultCtm));
  TS_ASSIGN_OR_RETURN(Expr idx, castTo(ctx, ctx.input(2), DType::I64));
  TS_ASSIGN_OR_RETURN(Expr y, ctx.call("roi_align", {ctx.input(0), ctx.input(1), idx},
                                       {{"mode", mode},
                                        {"output_height", oh},
                                        {"output_width", ow},
                                        {"sampling_ratio", ratio},
                                        {"spatial_scale", double(scale)},
                                        {"coordinate_transformation_mode", ctm}}));
  return Outputs{y};
}

} // namespace

Status registerSamplingConverters(ConverterRegistry &r) {
  TS_RETURN_IF_ERROR(r.add(ConverterSpec{"GridSample", 16, 17, convertGridSample,
                                         "4-D; modes bilinear, nearest, bicubic; padding_mode "
                                         "zeros, border, reflection; align_corners"}));
  TS_RETURN_IF_ERROR(r.add(ConverterSpec{"RoiAlign", 10, 17, convertRoiAlign,
                                         "modes avg and max; output size, sampling_ratio, "
                                         "spatial_scale, coordinate_transformation_mode"}));
  return okStatus();
}

} // namespace tessera::frontend::onnx
