//===- plugin/isolation.cpp - Plugin calls that cannot take the core down -===//
//
// The guarded calls of LoadedPlugin (registry.h): each runs the in-process call
// (registry_calls.cpp) in a forked child (probe.h) under callIsolation(), marking
// each step so that a child that dies is reported with the plugin, the
// call and the op or region. Answers come back as bytes: check results as
// (u8 supported, u32 length, reason) records, a saved module as its bytes
// followed by its type key, CPU and their two u32 lengths.
//
//===----------------------------------------------------------------------===//
#include "plugin/probe.h"
#include "plugin/registry.h"

#include <fmt/ranges.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>

namespace tessera::plugin {

namespace {

std::mutex gIsolationMutex;
std::optional<CallIsolation> gIsolation;

CallIsolation fromEnvironment() {
  CallIsolation isolation;
  const char *env = std::getenv("TESSERA_PLUGIN_ISOLATION");
  isolation.enabled = !(env && std::string_view(env) == "0");
  return isolation;
}

//===- Answers as bytes -------------------------------------------------------===//

void putU32(std::string &out, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out.push_back(char((v >> (8 * i)) & 0xff));
}

uint32_t getU32(std::string_view in, size_t at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= uint32_t(uint8_t(in[at + size_t(i)])) << (8 * i);
  return v;
}

void putResult(std::string &out, const CheckResult &r) {
  out.push_back(r.supported ? '1' : '0');
  putU32(out, uint32_t(r.reason.size()));
  out += r.reason;
}

Expected<std::vector<CheckResult>> getResults(std::string_view in, size_t count) {
  std::vector<CheckResult> out;
  size_t at = 0;
  while (out.size() < count && in.size() - at >= 5) {
    CheckResult r;
    r.supported = in[at] == '1';
    uint32_t size = getU32(in, at + 1);
    at += 5;
    if (in.size() - at < size)
      break;
    r.reason.assign(in.substr(at, size));
    at += size;
    out.push_back(std::move(r));
  }
  if (out.size() != count || at != in.size())
    return Error::format("internal error: a child's answer holds {} of {} check results", out.size(),
                         count);
  return out;
}

std::string str(const char *s) {
  return s ? std::string(s, ::strnlen(s, 256)) : std::string();
}

/// "conv2d '/features/0/Conv'", or "conv2d" for an unnamed node.
std::string describeOp(const tessera_op_desc_t &op) {
  std::string name = str(op.name);
  return name.empty() ? str(op.op) : fmt::format("{} '{}'", str(op.op), name);
}

/// Runs `work` under the isolation setting: in this process when isolation
/// is off or this process is already a child (a whole compile in one,
/// tools/tool_support.h), marking each step there; else in a child of its
/// own. `call` names the call when the child dies before its first mark.
Expected<std::string> guarded(const std::string &plugin, std::string_view call,
                              std::chrono::milliseconds timeout,
                              const std::function<Expected<std::string>(ChildChannel &)> &work) {
  if (ChildChannel *channel = currentChild()) {
    Expected<std::string> answer = work(*channel);
    channel->idle();
    return answer;
  }
  if (!callIsolation().enabled) {
    ChildChannel inProcess;
    return work(inProcess);
  }
  ChildEnd end = runChild(work, timeout);
  if (end.kind == ChildEnd::Answered)
    return std::move(end.payload);
  if (end.kind == ChildEnd::Failed)
    return Error(std::move(end.payload));
  if (end.lastPlugin.empty())
    end.lastPlugin = plugin, end.lastMark = call;
  return Error(end.describe());
}

} // namespace

CallIsolation callIsolation() {
  std::lock_guard lock(gIsolationMutex);
  if (!gIsolation)
    gIsolation = fromEnvironment();
  return *gIsolation;
}

void setCallIsolation(const CallIsolation &isolation) {
  std::lock_guard lock(gIsolationMutex);
  gIsolation = isolation;
}

Expected<std::vector<CheckResult>>
LoadedPlugin::guardedCheckOps(std::span<const tessera_op_desc_t *const> ops) const {
  if (ops.empty())
    return std::vector<CheckResult>{};
  const auto limit = callIsolation().checkerTimeout;
  TS_ASSIGN_OR_RETURN(std::string answer,
                      guarded(name_, "check_op", limit,
                              [&](ChildChannel &channel) -> Expected<std::string> {
                                std::string out;
                                for (const tessera_op_desc_t *op : ops) {
                                  channel.mark(name_, "check_op for " + describeOp(*op), limit);
                                  putResult(out, checkOp(*op));
                                }
                                return out;
                              }));
  return getResults(answer, ops.size());
}

Expected<std::vector<CheckResult>>
LoadedPlugin::guardedCheckPatterns(const std::string &pattern,
                             std::span<const std::vector<const tessera_op_desc_t *>> matches) const {
  if (matches.empty())
    return std::vector<CheckResult>{};
  const auto limit = callIsolation().checkerTimeout;
  TS_ASSIGN_OR_RETURN(
      std::string answer,
      guarded(name_, "check_pattern", limit,
              [&](ChildChannel &channel) -> Expected<std::string> {
                std::string out;
                for (const std::vector<const tessera_op_desc_t *> &ops : matches) {
                  std::vector<std::string> described;
                  for (const tessera_op_desc_t *op : ops)
                    described.push_back(describeOp(*op));
                  channel.mark(name_,
                               fmt::format("check_pattern '{}' for {}", pattern,
                                           fmt::join(described, ", ")),
                               limit);
                  putResult(out, checkPattern(pattern, ops));
                }
                return out;
              }));
  return getResults(answer, matches.size());
}

Expected<CheckResult> LoadedPlugin::guardedKeepRegion(const tessera_graph_t &region) const {
  if (!hasRegionRule())
    return keepRegion(region); // the default answer: no plugin code runs
  std::string call = fmt::format("keep_region for region @{}", str(region.symbol));
  const auto limit = callIsolation().checkerTimeout;
  TS_ASSIGN_OR_RETURN(std::string answer,
                      guarded(name_, call, limit,
                              [&](ChildChannel &channel) -> Expected<std::string> {
                                channel.mark(name_, call, limit);
                                std::string out;
                                putResult(out, keepRegion(region));
                                return out;
                              }));
  TS_ASSIGN_OR_RETURN(std::vector<CheckResult> results, getResults(answer, 1));
  return std::move(results[0]);
}

Expected<RegionEstimate> LoadedPlugin::guardedEstimateRegion(const tessera_graph_t &region) const {
  if (!hasRegionEstimate())
    return RegionEstimate{};
  std::string call = fmt::format("estimate_region for region @{}", str(region.symbol));
  const auto limit = callIsolation().checkerTimeout;
  // The answer: the estimate's 8 bytes, then the reason.
  Expected<std::string> got =
      guarded(name_, call, limit, [&](ChildChannel &channel) -> Expected<std::string> {
        channel.mark(name_, call, limit);
        RegionEstimate e = estimateRegion(region);
        std::string out(sizeof(double), '\0');
        std::memcpy(out.data(), &e.speedup, sizeof(double));
        return out + e.reason;
      });
  if (!got.ok())
    return std::move(got).error();
  const std::string &answer = *got; // (read in place: GCC 12 saw a moved string as uninitialised)
  if (answer.size() < sizeof(double))
    return Error::format("internal error: {}'s answer holds {} bytes", call, answer.size());
  RegionEstimate e;
  std::memcpy(&e.speedup, answer.data(), sizeof(double));
  e.reason = answer.substr(sizeof(double));
  return e;
}

Expected<std::vector<int64_t>> LoadedPlugin::guardedPartition(const tessera_graph_t &graph,
                                                        size_t numNodes) const {
  const std::string call = "the partition hook (checker.partition)";
  const auto limit = callIsolation().checkerTimeout;
  TS_ASSIGN_OR_RETURN(std::string answer,
                      guarded(name_, call, limit,
                              [&](ChildChannel &channel) -> Expected<std::string> {
                                channel.mark(name_, call, limit);
                                TS_ASSIGN_OR_RETURN(std::vector<int64_t> regions,
                                                    partition(graph, numNodes));
                                return std::string(reinterpret_cast<const char *>(regions.data()),
                                                   regions.size() * sizeof(int64_t));
                              }));
  if (answer.size() != numNodes * sizeof(int64_t))
    return Error::format("internal error: the partition hook's answer holds {} bytes for {} nodes",
                         answer.size(), numNodes);
  std::vector<int64_t> regions(numNodes);
  std::memcpy(regions.data(), answer.data(), answer.size());
  return regions;
}

Expected<SavedModule>
LoadedPlugin::guardedCompile(const tessera_graph_t &graph,
                       const std::function<std::string(std::string_view typeKey)> &prefix) const {
  const std::string symbol = str(graph.symbol);
  const std::string call = fmt::format("codegen.compile for region @{}", symbol);
  const auto limit = callIsolation().codegenTimeout;
  TS_ASSIGN_OR_RETURN(
      std::string answer,
      guarded(name_, call, limit,
              [&](ChildChannel &channel) -> Expected<std::string> {
                channel.mark(name_, call, limit);
                TS_ASSIGN_OR_RETURN(std::unique_ptr<PluginModule> module, compile(graph));
                // The function the region's call will look up at run time:
                // a module without it is the plugin's bug, reported now
                // rather than at the artifact's first run.
                channel.mark(name_, fmt::format("the module's get_function for '{}'", symbol), limit);
                if (auto fn = module->function(symbol); !fn)
                  return Error::format("the plugin's codegen returned a module without the "
                                       "region's function: {}",
                                       fn.error().str());
                channel.mark(name_, fmt::format("the module's save (region @{})", symbol), limit);
                TS_ASSIGN_OR_RETURN(std::string out, module->save(prefix(module->typeKey())));
                std::string cpu = module->targetCpu();
                out += module->typeKey();
                out += cpu;
                putU32(out, uint32_t(module->typeKey().size()));
                putU32(out, uint32_t(cpu.size()));
                channel.mark(name_, fmt::format("the module's destroy (region @{})", symbol), limit);
                module.reset();
                return out;
              }));
  SavedModule saved;
  if (answer.size() < 8)
    return Error("internal error: codegen's answer is too short");
  const uint32_t keySize = getU32(answer, answer.size() - 8);
  const uint32_t cpuSize = getU32(answer, answer.size() - 4);
  if (answer.size() - 8 < size_t(keySize) + cpuSize)
    return Error("internal error: codegen's answer is too short");
  const size_t end = answer.size() - 8 - cpuSize - keySize;
  saved.typeKey = answer.substr(end, keySize);
  saved.targetCpu = answer.substr(end + keySize, cpuSize);
  answer.resize(end); // the bytes stay where they are
  saved.bytes = std::move(answer);
  return saved;
}

} // namespace tessera::plugin
