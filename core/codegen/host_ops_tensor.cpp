// Placeholder: the tensor family's lowerings are being written (issue 6).
#include "codegen/host_ops.h"
namespace tessera::codegen {
void addTensorLowerings(LoweringTable &) {}
} // namespace tessera::codegen
