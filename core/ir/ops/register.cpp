//===- ir/ops/register.cpp - The core op set -----------------------------===//
#include "ir/ops/ops.h"

namespace tessera::ir {

Status registerCoreOps(OpRegistry &r) {
  TS_RETURN_IF_ERROR(ops::registerConvOps(r).withContext("while registering nn ops"));
  TS_RETURN_IF_ERROR(ops::registerPoolOps(r).withContext("while registering nn ops"));
  TS_RETURN_IF_ERROR(ops::registerMatmulOps(r).withContext("while registering nn ops"));
  TS_RETURN_IF_ERROR(ops::registerNNOps(r).withContext("while registering nn ops"));
  TS_RETURN_IF_ERROR(ops::registerElementwiseOps(r).withContext("while registering elementwise ops"));
  TS_RETURN_IF_ERROR(ops::registerElementwiseExtOps(r).withContext("while registering elementwise ops"));
  TS_RETURN_IF_ERROR(ops::registerReduceOps(r).withContext("while registering reduce ops"));
  TS_RETURN_IF_ERROR(ops::registerTransformOps(r).withContext("while registering transform ops"));
  TS_RETURN_IF_ERROR(ops::registerSliceOps(r).withContext("while registering transform ops"));
  TS_RETURN_IF_ERROR(ops::registerGatherOps(r).withContext("while registering transform ops"));
  TS_RETURN_IF_ERROR(ops::registerCumsumTopkOps(r).withContext("while registering transform ops"));
  TS_RETURN_IF_ERROR(ops::registerIndexOps(r).withContext("while registering index ops"));
  TS_RETURN_IF_ERROR(ops::registerImageOps(r).withContext("while registering image ops"));
  TS_RETURN_IF_ERROR(ops::registerLinalgOps(r).withContext("while registering linalg ops"));
  TS_RETURN_IF_ERROR(ops::registerControlOps(r).withContext("while registering control ops"));
  TS_RETURN_IF_ERROR(
      ops::registerRecurrentOps(r).withContext("while registering recurrent ops"));
  TS_RETURN_IF_ERROR(
      ops::registerDataDependentOps(r).withContext("while registering data-dependent ops"));
  TS_RETURN_IF_ERROR(ops::registerSequenceOps(r).withContext("while registering sequence ops"));
  return okStatus();
}

} // namespace tessera::ir
