// Placeholder (issue 5): replaced by the partition work.
#include "partition/partition.h"

namespace tessera::partition {
namespace {
class MergeCompilerRegionsPass : public passes::Pass {
public:
  std::string_view name() const override { return "merge-compiler-regions"; }
  std::string_view description() const override { return "Merge same-target regions without creating cycles"; }
  Status run(ir::Module &, passes::PassContext &) override {
    return Error("merge-compiler-regions: not implemented yet");
  }
};
} // namespace
std::unique_ptr<passes::Pass> createMergeCompilerRegionsPass() { return std::make_unique<MergeCompilerRegionsPass>(); }
} // namespace tessera::partition
