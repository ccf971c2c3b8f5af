// Placeholder (issue 5): replaced by the partition work.
#include "partition/partition.h"

namespace tessera::partition {
namespace {
class PartitionGraphPass : public passes::Pass {
public:
  std::string_view name() const override { return "partition-graph"; }
  std::string_view description() const override { return "Lift each region into a global function"; }
  Status run(ir::Module &, passes::PassContext &) override {
    return Error("partition-graph: not implemented yet");
  }
};
} // namespace
std::unique_ptr<passes::Pass> createPartitionGraphPass() { return std::make_unique<PartitionGraphPass>(); }
} // namespace tessera::partition
