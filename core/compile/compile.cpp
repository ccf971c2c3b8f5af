//===- compile/compile.cpp - Model to artifact ----------------------------===//
//
// compileModule (compile.h): optimise or partition, compile the regions
// through their plugins, lower @main (lower.h), build the host code, write
// the metadata and pack everything into one artifact.
//
//===----------------------------------------------------------------------===//
#include "compile/compile.h"

#include "codegen/host.h"
#include "compile/fuse.h"
#include "compile/lower.h"
#include "ir/visit.h"
#include "partition/driver.h"
#include "partition/partition.h"
#include "partition/report.h"
#include "plugin/registry.h"
#include "runtime/artifact.h"
#include "runtime/deflate.h"
#include "runtime/host_levels.h"
#include "tessera/c/runtime.h"

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <map>

namespace tessera::compile {

namespace {

std::string plural(size_t n, std::string_view word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

nlohmann::json tensorJson(const runtime::TensorInfo &t) {
  nlohmann::json j = {{"name", t.name}, {"dtype", runtime::dtypeString(t.dtype)}, {"shape", t.shape}};
  if (t.sequence) // a sequence of tensors, of this rank (-1: any)
    j["sequence_rank"] = t.elementRank;
  return j;
}

nlohmann::json symbolsJson(const runtime::Plan &plan) {
  nlohmann::json out = nlohmann::json::array();
  for (size_t k = 0; k < plan.symbols.size(); ++k) {
    const runtime::PlanSymbol &s = plan.symbols[k];
    nlohmann::json j = {{"name", s.name}, {"lo", s.lo}, {"hi", s.hi}};
    if (s.derived()) {
      j["formula"] = runtime::symbolFormula(plan.symbols, k);
      j["defined_by"] = s.definedBy;
    }
    for (const runtime::Step &step : plan.steps) { // a run-time symbol: the step that sets it
      bool sets = step.kind == runtime::StepKind::SetSymbol && step.target == k;
      if (step.kind == runtime::StepKind::Sequence && step.args.size() > step.numInputs)
        for (int64_t d : plan.buffers[step.args.back()].info.shape) // an element's dim
          sets = sets || (runtime::isSymbolDim(d) && runtime::symbolIndexOf(d) == k);
      if (s.runtime && sets)
        j["set_by"] = step.label;
    }
    out.push_back(std::move(j));
  }
  return out;
}

/// The host code built for one CPU.
struct HostCodeLevel {
  codegen::HostBuildInfo info;
  std::string bytes;  // as written: raw for the first level, else compressed
  uint64_t size = 0;  // the shared object's size
  uint32_t section = 0;
  bool zlib = false;
};

/// The host code for each CPU of `cpus`, best first (most ISA extensions;
/// the most portable last). The most portable is the artifact's first host
/// code section, raw; the others follow, compressed (runtime/host_levels.h).
Expected<std::vector<HostCodeLevel>>
buildHostLevels(const std::vector<codegen::HostStepSpec> &steps, const CompileOptions &options,
                const std::function<void(std::string_view)> &progress) {
  std::vector<std::string> cpus = options.hostCpus;
  if (cpus.empty())
    cpus.push_back(options.codegen.cpu);
  std::vector<codegen::HostBuildInfo> infos;
  TS_ASSIGN_OR_RETURN(std::vector<std::string> libraries,
                      codegen::buildHostLibraries(steps, options.codegen, cpus, &infos, progress));
  std::vector<HostCodeLevel> levels(cpus.size());
  for (size_t i = 0; i < cpus.size(); ++i) {
    levels[i].info = std::move(infos[i]);
    levels[i].size = libraries[i].size();
    levels[i].bytes = std::move(libraries[i]);
  }
  std::stable_sort(levels.begin(), levels.end(), [](const HostCodeLevel &a, const HostCodeLevel &b) {
    return a.info.features.size() > b.info.features.size();
  });
  for (size_t i = 0; i + 1 < levels.size(); ++i) {
    levels[i].section = uint32_t(levels.size() - 1 - i); // after the portable one
    levels[i].zlib = true;
    TS_ASSIGN_OR_RETURN(levels[i].bytes, runtime::deflateBytes(levels[i].bytes));
  }
  if (levels.size() > 1 && progress) {
    std::vector<std::string> sizes;
    for (const HostCodeLevel &l : levels)
      sizes.push_back(l.zlib ? fmt::format("{} {} KiB ({} KiB compressed)", l.info.cpu,
                                           l.size / 1024, l.bytes.size() / 1024)
                             : fmt::format("{} {} KiB", l.info.cpu, l.size / 1024));
    progress(fmt::format("host code for {} CPUs, the best one this CPU has runs: {}",
                         levels.size(), fmt::join(sizes, ", ")));
  }
  return levels;
}

/// The metadata section: {"format", "tessera_version", "inputs", "outputs",
/// "target", "host_code", "plugins", "regions", "host_steps", "arena_bytes",
/// "weights_bytes"}, read by the runtime (runtime/session.h) and inspect.
/// "target" is the most portable host code's.
std::string metadataJson(const LoweredModel &lowered, const std::vector<CompiledRegion> &regions,
                         const std::vector<HostCodeLevel> &levels,
                         const codegen::HostBuildInfo &portable, const std::string &placement) {
  const runtime::Plan &plan = lowered.plan;
  nlohmann::json inputs = nlohmann::json::array(), outputs = nlohmann::json::array();
  for (uint32_t id : plan.inputs)
    inputs.push_back(tensorJson(plan.buffers[id].info));
  for (uint32_t id : plan.outputs)
    outputs.push_back(tensorJson(plan.buffers[id].info));

  // Plugins in order of first use, with the type keys their modules need.
  nlohmann::json plugins = nlohmann::json::array(), regionList = nlohmann::json::array();
  std::vector<std::string> seen;
  for (const CompiledRegion &r : regions) {
    regionList.push_back({{"symbol", r.symbol}, {"plugin", r.plugin}, {"ops", r.ops}});
    if (!r.targetCpu.empty()) {
      regionList.back()["cpu"] = r.targetCpu;
      regionList.back()["features"] = r.cpuFeatures;
    }
    auto it = std::find(seen.begin(), seen.end(), r.plugin);
    if (it == seen.end()) {
      seen.push_back(r.plugin);
      plugins.push_back({{"name", r.plugin},
                         {"version", r.pluginVersion},
                         {"type_keys", nlohmann::json::array({r.typeKey})}});
      continue;
    }
    auto &keys = plugins[size_t(it - seen.begin())]["type_keys"];
    if (std::find(keys.begin(), keys.end(), r.typeKey) == keys.end())
      keys.push_back(r.typeKey);
  }
  nlohmann::json j = {{"format", 1},
                      {"tessera_version", tessera_runtime_version()},
                      {"inputs", inputs},
                      {"outputs", outputs},
                      {"target",
                       {{"triple", portable.triple},
                        {"cpu", portable.cpu},
                        {"features", portable.features}}},
                      {"plugins", plugins},
                      {"regions", regionList},
                      {"host_steps", lowered.hostSteps.size()},
                      {"arena_bytes", plan.arenaBytes},
                      {"weights_bytes", plan.weightsBytes}};
  if (!levels.empty()) {
    nlohmann::json list = nlohmann::json::array();
    for (const HostCodeLevel &l : levels)
      list.push_back({{"cpu", l.info.cpu},
                      {"features", l.info.features},
                      {"section", l.section},
                      {"encoding", l.zlib ? "zlib" : "raw"},
                      {"size", l.size}});
    j["host_code"] = std::move(list);
  }
  if (!plan.symbols.empty()) // absent from static artifacts
    j["symbols"] = symbolsJson(plan);
  if (!placement.empty()) // how the placement was chosen (compile/placement.h)
    j["placement"] = nlohmann::json::parse(placement);
  return j.dump(2);
}

/// Without targets: the optimisation pipeline only, as partitionModule
/// runs it.
Status optimise(ir::Module &m) {
  passes::PassManagerOptions pm;
  TS_ASSIGN_OR_RETURN(auto opt,
                      passes::PassManager::fromPipeline(passes::kDefaultPipeline,
                                                        partition::allPasses(), pm));
  return opt.run(m);
}

size_t countMainOps(const ir::Module &m) {
  size_t n = 0;
  if (ir::Function main = m.find("main"))
    for (const ir::ExprNode *e : ir::postOrder(main->body()))
      if (const auto *c = e->as<ir::CallNode>(); c && c->op())
        ++n;
  return n;
}

} // namespace

Status setCpus(CompileOptions &options, std::string_view list) {
  std::vector<std::pair<std::string, size_t>> cpus; // with their feature counts
  for (size_t start = 0; start <= list.size();) {
    size_t comma = std::min(list.find(',', start), list.size());
    std::string cpu(list.substr(start, comma - start));
    start = comma + 1;
    if (cpu.empty())
      return Error::format("--mcpu '{}': an empty CPU name in the list", list);
    if (std::any_of(cpus.begin(), cpus.end(), [&](const auto &c) { return c.first == cpu; }))
      return Error::format("--mcpu '{}': '{}' is listed twice", list, cpu);
    codegen::CodegenOptions one = options.codegen;
    one.cpu = cpu;
    TS_ASSIGN_OR_RETURN(std::vector<std::string> features, codegen::cpuFeatures(one));
    cpus.emplace_back(std::move(cpu), features.size());
  }
  // Best first, as buildHostLevels orders the levels: the last is the most
  // portable.
  std::stable_sort(cpus.begin(), cpus.end(),
                   [](const auto &a, const auto &b) { return a.second > b.second; });
  options.codegen.cpu = cpus.back().first;
  options.hostCpus.clear();
  if (cpus.size() > 1)
    for (auto &c : cpus)
      options.hostCpus.push_back(std::move(c.first));
  return okStatus();
}

std::string cpuRunHere(const CompileOptions &options) {
  std::vector<runtime::HostLevel> levels;
  for (const std::string &cpu : options.hostCpus) {
    codegen::CodegenOptions one = options.codegen;
    one.cpu = cpu;
    auto features = codegen::cpuFeatures(one);
    if (!features)
      continue;
    levels.push_back({cpu, std::move(*features)});
  }
  std::stable_sort(levels.begin(), levels.end(), [](const auto &a, const auto &b) {
    return a.features.size() > b.features.size();
  });
  auto chosen = runtime::chooseHostLevel(levels);
  return chosen ? levels[*chosen].cpu : options.codegen.cpu;
}

Expected<CompileResult> compileModule(const ir::Module &input, const CompileOptions &options,
                                      const plugin::PluginRegistry *registry) {
  auto progress = [&](std::string_view line) {
    if (options.progress)
      options.progress(line);
  };
  if (!input.find("main"))
    return Error("the module has no function '@main'");

  CompileResult result;
  ir::Module m = input;
  m.set("main", withOutputNames(m.find("main")));
  if (options.targets.empty()) {
    progress("optimising");
    TS_RETURN_IF_ERROR(optimise(m));
    size_t regions = 0;
    for (const auto &[name, fn] : m.functions())
      regions += fn->attrs().has(partition::kCompilerAttr);
    result.partitionSummary =
        regions ? fmt::format("No targets: module '{}' keeps its {} and runs {} on the host.\n",
                              m.name(), plural(regions, "region"), plural(countMainOps(m), "op"))
                : fmt::format("No targets: module '{}' runs on the host ({}).\n", m.name(),
                              plural(countMainOps(m), "op"));
  } else {
    if (!registry)
      return Error("targets were given but no plugin registry");
    progress(fmt::format("optimising and partitioning for {}", fmt::join(options.targets, ", ")));
    partition::PartitionOptions po;
    po.targets = options.targets;
    po.regionRule = options.regionRule;
    po.hostNodes = options.hostNodes;
    TS_ASSIGN_OR_RETURN(auto parted, partition::partitionModule(std::move(m), po, *registry));
    result.partitionSummary = partition::summaryText(parted);
    m = std::move(parted.module);
  }

  // Elementwise trees left on the host become one loop each (compile/fuse.h).
  compile::FuseStats fused;
  TS_ASSIGN_OR_RETURN(ir::Function fusedMain, fuseElementwise(m.find("main"), &fused));
  m.set("main", std::move(fusedMain));
  if (fused.groups)
    progress(fmt::format("fused {} elementwise ops into {} host step{}", fused.fusedOps,
                         fused.groups, fused.groups == 1 ? "" : "s"));

  TS_ASSIGN_OR_RETURN(std::vector<CompiledRegion> regions,
                      compileRegions(m, registry, options.progress, options.codegen.cpu));
  std::map<std::string, std::vector<std::string>> featuresOf; // by CPU: a target machine each
  for (CompiledRegion &r : regions) {
    if (r.targetCpu.empty())
      continue;
    auto known = featuresOf.find(r.targetCpu);
    if (known == featuresOf.end()) {
      codegen::CodegenOptions cpu = options.codegen;
      cpu.cpu = r.targetCpu;
      auto features = codegen::cpuFeatures(cpu);
      if (!features)
        return std::move(features).error().addContext(
            fmt::format("region @{}: plugin '{}' compiled its module for CPU '{}'", r.global,
                        r.plugin, r.targetCpu));
      known = featuresOf.emplace(r.targetCpu, std::move(*features)).first;
    }
    r.cpuFeatures = known->second;
  }
  progress("lowering @main to an executor plan");
  TS_ASSIGN_OR_RETURN(LoweredModel lowered, lowerMain(m, regions));

  runtime::ArtifactWriter writer;
  std::vector<HostCodeLevel> levels;
  codegen::HostBuildInfo portable;
  portable.cpu = options.codegen.cpu;
  if (!lowered.hostSteps.empty()) {
    TS_ASSIGN_OR_RETURN(levels, buildHostLevels(lowered.hostSteps, options, progress));
    portable = levels.back().info;
  }
  const runtime::Plan &plan = lowered.plan;
  progress(fmt::format("memory: arena {} bytes ({} without reuse), weights {} bytes{}",
                       plan.arenaBytes, plan.activationBytesNoReuse, plan.weightsBytes,
                       plan.symbols.empty() ? "" : " at the symbols' nominal sizes"));
  if (!plan.symbols.empty()) {
    std::vector<std::string> syms, learnt;
    for (const runtime::PlanSymbol &s : plan.symbols)
      (s.runtime ? learnt : syms)
          .push_back(s.hi >= 0 ? fmt::format("{} ({}..{})", s.name, s.lo, s.hi)
                               : fmt::format("{} ({}.., no upper bound)", s.name, s.lo));
    if (!syms.empty())
      progress(fmt::format("symbolic dims: {}: each run takes their values from its inputs and "
                           "plans memory for them",
                           fmt::join(syms, ", ")));
    if (!learnt.empty())
      progress(fmt::format("run-time dims: {}: the data decides them while the model runs "
                           "(memory planned at the bound, or grown as needed without one)",
                           fmt::join(learnt, ", ")));
  }

  writer.add(runtime::SectionKind::Metadata,
             metadataJson(lowered, regions, levels, portable, options.placementJson));
  writer.add(runtime::SectionKind::Plan, runtime::serializePlan(plan));
  writer.add(runtime::SectionKind::Weights, std::move(lowered.weights));
  for (size_t section = 0; section < levels.size(); ++section)
    for (HostCodeLevel &l : levels)
      if (l.section == section)
        writer.add(runtime::SectionKind::HostCode, std::move(l.bytes));
  for (CompiledRegion &r : regions)
    writer.add(runtime::SectionKind::ExternalModule, std::move(r.moduleSection));

  result.artifactSize = writer.size();
  if (options.outputPath.empty()) {
    result.artifact = writer.finish();
  } else {
    progress(fmt::format("write {}", options.outputPath));
    TS_RETURN_IF_ERROR(writer.writeFile(options.outputPath));
  }
  for (const runtime::Step &s : plan.steps) {
    if (s.kind == runtime::StepKind::Host)
      ++result.hostSteps;
    else if (s.kind == runtime::StepKind::External)
      ++result.externalSteps;
  }
  result.arenaBytes = plan.arenaBytes;
  result.weightsBytes = plan.weightsBytes;
  return result;
}

} // namespace tessera::compile
