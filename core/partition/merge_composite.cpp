// Placeholder (issue 5): replaced by the partition work.
#include "partition/partition.h"

namespace tessera::partition {
namespace {
class MergeCompositePass : public passes::Pass {
public:
  std::string_view name() const override { return "merge-composite"; }
  std::string_view description() const override { return "Outline each target's pattern matches as composite functions"; }
  Status run(ir::Module &, passes::PassContext &) override {
    return Error("merge-composite: not implemented yet");
  }
};
} // namespace
std::unique_ptr<passes::Pass> createMergeCompositePass() { return std::make_unique<MergeCompositePass>(); }
} // namespace tessera::partition
