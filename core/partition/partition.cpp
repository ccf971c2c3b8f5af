// Placeholder (issue 5): replaced by the partition work.
#include "partition/partition.h"

namespace tessera::partition {
void registerPartitionPasses(passes::PassRegistry &r) {
  r.add(createMergeCompositePass);
  r.add(createAnnotateTargetPass);
  r.add(createMergeCompilerRegionsPass);
  r.add(createPruneRegionsPass);
  r.add(createPartitionGraphPass);
}
} // namespace tessera::partition
