//===- partition/driver.cpp - Partition a module in one call --------------===//
//
// Optimise, partition, then list what stayed on the host (driver.h).
//
//===----------------------------------------------------------------------===//
#include "partition/driver.h"

#include "ir/visit.h"
#include "plugin/registry.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

namespace tessera::partition {

using namespace ir;

namespace {

/// Which decisions of the log are about a host call: (function, node, op),
/// node being the call's name or, for an unnamed call, its op (as the
/// passes log it). A composite call is keyed by its composite name as op.
using Key = std::tuple<std::string, std::string, std::string>;

} // namespace

std::vector<HostOp> collectHostOps(const Module &m, const PartitionLog &log) {
  // Several calls can share a name (the ops one ONNX node became: conv2d and
  // bias_add, or a decomposed layer norm), so a decision is matched on the
  // op too; calls with the same key take the key's decisions one each, in
  // order (one left over goes to the last). The ops inside a composite left
  // on the host share the composite call's decisions.
  std::map<Key, std::vector<const HostDecision *>> byKey;
  for (const HostDecision &d : log.host)
    byKey[{d.function, d.node, d.op}].push_back(&d);

  std::vector<HostOp> out;
  // Key -> the host ops, or the composite calls, of that key in order.
  std::map<Key, std::vector<size_t>> opUsers, compositeUsers;
  std::vector<std::vector<size_t>> compositeOps; // composite -> its host ops
  for (const auto &[global, fn] : m.functions()) {
    if (fn->attrs().has(kCompilerAttr))
      continue;
    // The composites called from the function and the calls inside them.
    std::unordered_map<const ExprNode *, size_t> inComposite;
    for (const ExprNode *n : postOrder(fn->body(), /*intoFunctions=*/false)) {
      const auto *call = n->as<CallNode>();
      std::string composite = call ? compositeOf(*call) : std::string();
      if (composite.empty())
        continue;
      compositeUsers[{global, call->name().empty() ? composite : call->name(), composite}]
          .push_back(compositeOps.size());
      for (const ExprNode *inner : postOrder(call->localFn()->body()))
        inComposite.emplace(inner, compositeOps.size());
      compositeOps.emplace_back();
    }
    for (const ExprNode *n : postOrder(fn->body())) {
      const auto *call = n->as<CallNode>();
      if (!call || !call->op())
        continue;
      if (auto it = inComposite.find(n); it != inComposite.end())
        compositeOps[it->second].push_back(out.size());
      else
        opUsers[{global, call->name().empty() ? call->op()->name : call->name(),
                 call->op()->name}]
            .push_back(out.size());
      out.push_back(HostOp{global, call->name(), call->op()->name, {}});
    }
  }
  auto assign = [&](const std::map<Key, std::vector<size_t>> &users, bool composites) {
    for (const auto &[key, ids] : users) {
      auto it = byKey.find(key);
      if (it == byKey.end())
        continue;
      const std::vector<const HostDecision *> &ds = it->second;
      for (size_t k = 0; k < ds.size(); ++k) {
        size_t id = ids[std::min(k, ids.size() - 1)];
        if (!composites)
          out[id].decisions.push_back(*ds[k]);
        else
          for (size_t op : compositeOps[id])
            out[op].decisions.push_back(*ds[k]);
      }
    }
  };
  assign(compositeUsers, true);
  assign(opUsers, false);
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
  state->regionRule = options.regionRule;
  if (!options.hostNodes.empty()) {
    std::set<std::string, std::less<>> names;
    for (const auto &[global, fn] : module.functions())
      for (const ExprNode *e : postOrder(fn->body()))
        if (const auto *c = e->as<CallNode>(); c && c->op() && !c->name().empty())
          names.insert(c->name());
    for (const std::string &n : options.hostNodes) {
      if (!names.count(n))
        return Error::format("--on-host: no node named '{}' in the model (node names as "
                             "`tessera partition --report` lists them)",
                             n);
      state->hostNodes.insert(n);
    }
  }

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
