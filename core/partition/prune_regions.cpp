// Placeholder (issue 5): replaced by the partition work.
#include "partition/partition.h"

namespace tessera::partition {
namespace {
class PruneRegionsPass : public passes::Pass {
public:
  std::string_view name() const override { return "prune-regions"; }
  std::string_view description() const override { return "Send regions not worth offloading back to the host"; }
  Status run(ir::Module &, passes::PassContext &) override {
    return Error("prune-regions: not implemented yet");
  }
};
} // namespace
std::unique_ptr<passes::Pass> createPruneRegionsPass() { return std::make_unique<PruneRegionsPass>(); }
} // namespace tessera::partition
