//===- partition/driver.cpp - Partition a module in one call --------------===//
//
// Optimise, partition, then list what stayed on the host (driver.h).
//
//===----------------------------------------------------------------------===//
#include "partition/driver.h"

#include "ir/visit.h"
#include "plugin/registry.h"

#include <map>

namespace tessera::partition {

using namespace ir;

std::vector<HostOp> collectHostOps(const Module &m, const PartitionLog &log) {
  // Decisions by (function, node); unnamed calls are matched by op name.
  std::map<std::pair<std::string, std::string>, std::vector<const HostDecision *>> byNode;
  for (const HostDecision &d : log.host)
    byNode[{d.function, d.node}].push_back(&d);

  std::vector<HostOp> out;
  for (const auto &[global, fn] : m.functions()) {
    if (fn->attrs().has(kCompilerAttr))
      continue;
    for (const ExprNode *n : postOrder(fn->body())) {
      const auto *call = n->as<CallNode>();
      if (!call || !call->op())
        continue;
      HostOp h{global, call->name(), call->op()->name, {}};
      auto it = byNode.find({global, h.node.empty() ? h.op : h.node});
      if (it != byNode.end())
        for (const HostDecision *d : it->second)
          h.decisions.push_back(*d);
      out.push_back(std::move(h));
    }
  }
  return out;
}

int64_t countOffloadedOps(const Module &m) {
  int64_t n = 0;
  for (const auto &[global, fn] : m.functions())
    if (fn->attrs().has(kCompilerAttr))
      for (const ExprNode *e : postOrder(fn->body()))
        if (const auto *c = e->as<CallNode>(); c && c->op())
          ++n;
  return n;
}

Expected<PartitionResult> partitionModule(Module module, const PartitionOptions &options,
                                          const plugin::PluginRegistry &registry) {
  TS_ASSIGN_OR_RETURN(auto state, PartitionState::fromNames(options.targets, registry));

  passes::PassManagerOptions pm = options.pm;
  if (!options.pipeline.empty()) {
    TS_ASSIGN_OR_RETURN(auto opt, passes::PassManager::fromPipeline(
                                      options.pipeline, partition::allPasses(), pm));
    TS_RETURN_IF_ERROR(opt.run(module));
  }
  TS_ASSIGN_OR_RETURN(auto part, passes::PassManager::fromPipeline(
                                     kPartitionPipeline, allPasses(state.get()), pm));
  TS_RETURN_IF_ERROR(part.run(module));

  PartitionResult r{std::move(module), options.targets, std::move(state->log), {}, 0};
  r.host = collectHostOps(r.module, r.log);
  r.offloadedOps = countOffloadedOps(r.module);
  return r;
}

} // namespace tessera::partition
