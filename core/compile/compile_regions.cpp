//===- compile/compile_regions.cpp - Regions through their plugins --------===//
//
// compileRegions (lower.h): every region global compiled by its plugin's
// codegen and saved through the plugin into one ExternalModule section.
//
//===----------------------------------------------------------------------===//
#include "compile/lower.h"

#include "bridge/plugin_bridge.h"
#include "ir/visit.h"
#include "partition/partition.h"
#include "plugin/registry.h"
#include "runtime/artifact.h"

#include <fmt/format.h>

namespace tessera::compile {

using namespace ir;

namespace {

int64_t countOps(const Function &fn) {
  int64_t n = 0;
  for (const ExprNode *e : postOrder(fn->body()))
    if (const auto *c = e->as<CallNode>(); c && c->op())
      ++n;
  return n;
}

} // namespace

Expected<std::vector<CompiledRegion>>
compileRegions(const Module &m, const plugin::PluginRegistry *registry,
               const std::function<void(std::string_view)> &progress,
               const std::string &targetCpu) {
  std::vector<CompiledRegion> out;
  // Regions per plugin, in order of first appearance, for the progress lines.
  std::vector<std::pair<std::string, size_t>> perPlugin;
  for (const auto &[global, fn] : m.functions()) {
    if (!fn->attrs().has(partition::kCompilerAttr))
      continue;
    CompiledRegion r;
    r.global = global;
    r.plugin = fn->attrs().getString(partition::kCompilerAttr);
    r.symbol = fn->attrs().getString(partition::kGlobalSymbolAttr, global);
    r.ops = countOps(fn);
    auto it = std::find_if(perPlugin.begin(), perPlugin.end(),
                           [&](const auto &p) { return p.first == r.plugin; });
    if (it == perPlugin.end())
      perPlugin.emplace_back(r.plugin, 1);
    else
      ++it->second;
    out.push_back(std::move(r));
  }
  if (out.empty())
    return out;
  if (!registry)
    return Error::format("region @{} needs plugin '{}', but no plugin registry was given",
                         out[0].global, out[0].plugin);
  if (progress)
    for (const auto &[name, count] : perPlugin)
      progress(fmt::format("codegen {} ({} region{})", name, count, count == 1 ? "" : "s"));

  for (CompiledRegion &r : out) {
    auto where = [&r] { return fmt::format("region @{} (plugin '{}')", r.global, r.plugin); };
    std::shared_ptr<const plugin::LoadedPlugin> p = registry->find(r.plugin);
    if (!p)
      return Error::format("region @{}: plugin '{}' is not loaded", r.global, r.plugin);
    r.pluginVersion = p->version();
    Function fn = m.find(r.global);
    auto graph = bridge::GraphHolder::fromFunction(fn, r.symbol, p->codegenFlags());
    if (!graph)
      return std::move(graph).error().addContext(where());
    (*graph)->setTargetCpu(targetCpu);
    auto saved = p->guardedCompile((*graph)->graph(), runtime::externalModuleHeader);
    if (!saved)
      return std::move(saved).error().addContext(where());
    r.typeKey = std::move(saved->typeKey);
    r.targetCpu = std::move(saved->targetCpu);
    r.moduleSection = std::move(saved->bytes);
    if ((*graph)->constantsAsInputs())
      r.extraInputs = (*graph)->extraInputs();
    r.symbolDims = (*graph)->symbolDims();
    r.symbolWhere = (*graph)->symbolWhere();
  }
  return out;
}

} // namespace tessera::compile
