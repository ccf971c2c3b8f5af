//===- ir/ops/resize.cpp - resize2d's attributes as sampling parameters ---===//
#include "ir/ops/resize.h"

#include <string>

namespace tessera::ir::ops {

ResizeSampling resizeSampling(const Attrs &attrs) {
  ResizeSampling p;
  const std::string mode = attrs.getString("mode"),
                    coord = attrs.getString("coordinate_transformation_mode"),
                    nearest = attrs.getString("nearest_mode");
  p.mode = mode == "linear" ? kResizeLinear : mode == "cubic" ? kResizeCubic : kResizeNearest;
  p.coord = coord == "half_pixel_symmetric"   ? kCoordHalfPixelSymmetric
            : coord == "pytorch_half_pixel"   ? kCoordPytorchHalfPixel
            : coord == "align_corners"        ? kCoordAlignCorners
            : coord == "asymmetric"           ? kCoordAsymmetric
            : coord == "tf_half_pixel_for_nn" ? kCoordTfHalfPixelForNn
            : coord == "tf_crop_and_resize"   ? kCoordTfCropAndResize
                                              : kCoordHalfPixel;
  p.nearest = nearest == "round_prefer_ceil" ? kNearestRoundPreferCeil
              : nearest == "floor"           ? kNearestFloor
              : nearest == "ceil"            ? kNearestCeil
                                             : kNearestRoundPreferFloor;
  p.cubicA = attrs.getFloat("cubic_coeff_a");
  p.excludeOutside = p.mode != kResizeNearest && attrs.getBool("exclude_outside");
  return p;
}

} // namespace tessera::ir::ops
