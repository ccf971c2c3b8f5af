//===- ir/ops/image.cpp - Image ops ---===//
// Placeholder until its helper writes it.
#include "ir/ops/common.h"
#include "ir/ops/ops.h"

namespace tessera::ir::ops {

Status registerImageOps(OpRegistry &r) { return okStatus(); }

} // namespace tessera::ir::ops
