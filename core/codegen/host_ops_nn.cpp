// Placeholder: the nn family's lowerings are being written (issue 6).
#include "codegen/host_ops.h"
namespace tessera::codegen {
void addNnLowerings(LoweringTable &) {}
} // namespace tessera::codegen
