// Placeholder (issue 5): replaced by the partition work.
#include "partition/partition.h"

namespace tessera::partition {
namespace {
class AnnotateTargetPass : public passes::Pass {
public:
  std::string_view name() const override { return "annotate-target"; }
  std::string_view description() const override { return "Offer each op to the targets' checkers; wrap claimed calls in Compiler functions"; }
  Status run(ir::Module &, passes::PassContext &) override {
    return Error("annotate-target: not implemented yet");
  }
};
} // namespace
std::unique_ptr<passes::Pass> createAnnotateTargetPass() { return std::make_unique<AnnotateTargetPass>(); }
} // namespace tessera::partition
