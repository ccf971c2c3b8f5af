//===- compile/placement_decision.cpp - A placement's rules, file and report ===//
//
// What a placement decided (placement.h): the verdicts as the partitioner's
// region rule, the decision as JSON (the placement file and the artifact's
// metadata) and as a report for people. docs/design/0015.
//
//===----------------------------------------------------------------------===//
#include "compile/placement_internal.h"

#include "ir/structural.h"
#include "ir/visit.h"
#include "plugin/registry.h"
#include "runtime/sha256.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <dlfcn.h>

#include <fstream>
#include <sstream>
#include <vector>

namespace tessera::compile {

using Json = nlohmann::json;
using partition::RegionVerdict;

namespace detail {

/// The CPU's model name (/proc/cpuinfo), part of every key: times from
/// another CPU say nothing about this one.
const std::string &cpuName() {
  static const std::string name = [] {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("model name", 0) == 0)
        if (auto colon = line.find(':'); colon != std::string::npos)
          return line.substr(line.find_first_not_of(' ', colon + 1));
    return std::string("unknown cpu");
  }();
  return name;
}

const std::string &compilerBuild() {
  static const std::string build = [] {
    Dl_info info{};
    if (!dladdr(reinterpret_cast<const void *>(&compilerBuild), &info) || !info.dli_fname)
      return std::string("unknown build");
    std::ifstream in(info.dli_fname, std::ios::binary);
    if (!in)
      return std::string("unknown build");
    runtime::Sha256 sha;
    std::vector<char> chunk(1 << 20);
    while (in.read(chunk.data(), std::streamsize(chunk.size())) || in.gcount() > 0)
      sha.update(std::string_view(chunk.data(), size_t(in.gcount())));
    return runtime::hexDigest(sha.finish()).substr(0, 12);
  }();
  return build;
}

std::string hex(size_t h) { return fmt::format("{:016x}", h); }

/// Whether a plugin's estimate is far enough from 1 to be taken without
/// measuring (TESSERA_ESTIMATE_CLEAR).
bool clearEstimate(double speedup) {
  return speedup > 0 && (speedup >= TESSERA_ESTIMATE_CLEAR || speedup <= 1 / TESSERA_ESTIMATE_CLEAR);
}

/// Whether a region's verdict is known: measured, or a clear estimate.
bool decided(const RegionTiming &t) { return t.pluginMs >= 0 || clearEstimate(t.estimate); }

/// Whether a region is kept: faster on its plugin, as measured (which wins)
/// or as its plugin clearly estimates.
bool keeps(const RegionTiming &t) {
  return t.pluginMs >= 0 ? t.pluginMs < t.hostMs : clearEstimate(t.estimate) && t.estimate > 1;
}

/// "12.3 ms on 'dnnl', 20.1 ms on the host" or the estimate that decided.
static std::string timesOf(const RegionTiming &t) {
  if (t.pluginMs >= 0)
    return fmt::format("{:.3f} ms on '{}', {:.3f} ms on the host", t.pluginMs, t.target,
                       t.hostMs);
  return fmt::format("estimated {:.3g}x the host's speed on '{}', not measured", t.estimate,
                     t.target);
}

std::vector<const ir::CallNode *> opCalls(const ir::Function &fn) {
  std::vector<const ir::CallNode *> calls;
  for (const ir::ExprNode *e : ir::postOrder(fn->body()))
    if (const auto *c = e->as<ir::CallNode>(); c && c->op())
      calls.push_back(c);
  return calls;
}

std::optional<RegionVerdict> verdictOf(const RegionTiming &t, const ir::Function &fn,
                                       bool withholdKept) {
  if (!decided(t))
    return std::nullopt;
  RegionVerdict v{t.keep, fmt::format("placement: {} ({})", timesOf(t), t.how)};
  if (t.losing.empty() || (t.keep && !withholdKept))
    return v;
  // Sent back in part: its losing nodes withheld (named as in `fn`, which
  // has the structure of the region measured), the rest offered again.
  const std::vector<const ir::CallNode *> calls = opCalls(fn);
  for (const NodeTiming &n : t.losing)
    if (n.at >= 0 && size_t(n.at) < calls.size() && !calls[size_t(n.at)]->name().empty())
      v.withhold[calls[size_t(n.at)]->name()] = fmt::format(
          "placement: {:.3f} ms on '{}', {:.3f} ms on the host, profiled in a region "
          "{} ({} on '{}', {:.3f} ms on the host)",
          n.pluginMs, t.target, n.hostMs, t.keep ? "kept" : "sent back",
          t.pluginMs >= 0 ? fmt::format("{:.3f} ms", t.pluginMs) : std::string("?"), t.target,
          t.hostMs);
  v.keep = false;
  return v;
}

std::string describeRule(CandidateRule rule) {
  switch (rule) {
  case CandidateRule::Priority: return " (priority order)";
  case CandidateRule::Withheld: return " (losing nodes withheld)";
  default: return "";
  }
}

const char *ruleName(CandidateRule rule) {
  switch (rule) {
  case CandidateRule::Priority: return "priority";
  case CandidateRule::Withheld: return "withheld";
  default: return "measured";
  }
}

std::optional<CandidateRule> ruleNamed(std::string_view name) {
  for (CandidateRule r : {CandidateRule::Measured, CandidateRule::Priority,
                          CandidateRule::Withheld})
    if (name == ruleName(r))
      return r;
  return std::nullopt;
}

/// "dnnl,ccompiler", or "host only".
std::string describe(const std::vector<std::string> &targets) {
  return targets.empty() ? std::string("host only") : fmt::format("{}", fmt::join(targets, ","));
}

/// A region's line in the progress and the report.
std::string describeRegion(const RegionTiming &t) {
  if (!decided(t))
    return fmt::format("region {} ({}): {}", t.target, t.ops, t.how);
  std::string verdict = t.keep ? "kept" : t.losing.empty() ? "sent back" : "sent back in part";
  if (!t.losing.empty()) {
    std::vector<std::string> nodes;
    for (const NodeTiming &n : t.losing)
      nodes.push_back(fmt::format("'{}' {:.3f} ms, host {:.3f} ms", n.node, n.pluginMs, n.hostMs));
    verdict += fmt::format(" (losing: {})", fmt::join(nodes, "; "));
  }
  if (t.pluginMs < 0)
    return fmt::format("region {} ({}): estimated {:.3g}x the host's speed ({}): {}", t.target,
                       t.ops, t.estimate, t.how, verdict);
  return fmt::format("region {} ({}): {:.3f} ms, host {:.3f} ms ({}): {}", t.target, t.ops,
                     t.pluginMs, t.hostMs, t.how, verdict);
}

nlohmann::json losingJson(const std::vector<NodeTiming> &nodes) {
  Json a = Json::array();
  for (const NodeTiming &n : nodes)
    a.push_back({{"at", n.at}, {"node", n.node}, {"plugin_ms", n.pluginMs},
                 {"host_ms", n.hostMs}});
  return a;
}

Expected<std::vector<NodeTiming>> losingFromJson(const nlohmann::json &a,
                                                 const std::string &source) {
  std::vector<NodeTiming> out;
  if (!a.is_array())
    return Error::format("{}: 'losing' must be an array", source);
  for (const Json &n : a) {
    if (!n.is_object() || !n.contains("at") || !n["at"].is_number_integer())
      return Error::format("{}: a 'losing' entry needs its position 'at'", source);
    out.push_back(NodeTiming{n["at"].get<int32_t>(), n.value("node", std::string()),
                             n.value("plugin_ms", 0.0), n.value("host_ms", 0.0)});
  }
  return out;
}

std::string regionCount(const CandidateTiming &c) {
  return c.regions == 1 ? std::string("1 region") : fmt::format("{} regions", c.regions);
}

} // namespace detail

using namespace detail;

Expected<std::string> regionKey(const ir::Function &region, const std::string &target,
                                const plugin::PluginRegistry &registry) {
  auto p = registry.find(target);
  if (!p)
    return Error::format("no plugin named '{}' is loaded", target);
  return fmt::format("{}@{}/{}/{}", target, p->version(), cpuName(),
                     hex(ir::structuralHash(std::static_pointer_cast<const ir::ExprNode>(region))));
}

partition::RegionRule Placement::rule(const plugin::PluginRegistry &registry) const {
  // A copy of the verdicts: the rule may outlive this placement.
  std::map<std::string, RegionTiming> verdicts = regions;
  if (chosenRule == CandidateRule::Priority)
    return nullptr;
  return [verdicts = std::move(verdicts), &registry,
          withholdKept = chosenRule == CandidateRule::Withheld](
             const ir::Function &fn,
             const std::string &target) -> Expected<std::optional<RegionVerdict>> {
    TS_ASSIGN_OR_RETURN(std::string key, regionKey(fn, target, registry));
    auto it = verdicts.find(key);
    return it == verdicts.end() ? std::nullopt : verdictOf(it->second, fn, withholdKept);
  };
}

std::string Placement::json() const {
  Json j; // the decision only (not where it was read from): a replay writes the same
  j["mode"] = mode;
  j["cpu"] = cpuName();
  j["targets"] = targets;
  j["rule"] = ruleName(chosenRule);
  Json rs = Json::object();
  for (const auto &[key, t] : regions) {
    rs[key] = {{"target", t.target}, {"ops", t.ops},   {"plugin_ms", t.pluginMs},
               {"host_ms", t.hostMs}, {"keep", t.keep}, {"estimate", t.estimate}};
    if (!t.losing.empty())
      rs[key]["losing"] = losingJson(t.losing);
  }
  j["regions"] = rs;
  Json cs = Json::array();
  for (const CandidateTiming &c : candidates)
    cs.push_back({{"targets", c.targets},
                  {"ms", c.ms},
                  {"regions", c.regions},
                  {"rule", ruleName(c.rule)}});
  j["candidates"] = cs;
  return j.dump(1);
}

Expected<Placement> Placement::fromJson(std::string_view text, const std::string &source) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("targets") || !j["targets"].is_array() ||
      !j.contains("regions") || !j["regions"].is_object())
    return Error::format("{}: not a placement file (a JSON object with 'targets' and "
                         "'regions', as `tessera compile --placement measure "
                         "--placement-file` writes)",
                         source);
  Placement p;
  p.source = source;
  try {
    p.mode = j.value("mode", std::string("measured"));
    p.targets = j["targets"].get<std::vector<std::string>>();
    const std::string rule = j.value("rule", std::string("measured"));
    auto chosen = ruleNamed(rule);
    if (!chosen)
      return Error::format("{}: 'rule' must be measured, priority or withheld, not '{}'", source,
                           rule);
    p.chosenRule = *chosen;
    for (const auto &[key, r] : j["regions"].items()) {
      RegionTiming t;
      t.target = r.at("target").get<std::string>();
      t.ops = r.value("ops", std::string());
      t.pluginMs = r.at("plugin_ms").get<double>();
      t.hostMs = r.at("host_ms").get<double>();
      t.keep = r.at("keep").get<bool>();
      t.estimate = r.value("estimate", 0.0);
      TS_ASSIGN_OR_RETURN(t.losing, losingFromJson(r.value("losing", Json::array()), source));
      t.how = "placement file";
      p.regions[key] = std::move(t);
    }
    for (const auto &c : j.value("candidates", Json::array())) {
      CandidateTiming t;
      t.targets = c.at("targets").get<std::vector<std::string>>();
      t.ms = c.at("ms").get<double>();
      t.regions = c.value("regions", int64_t(-1));
      t.rule = ruleNamed(c.value("rule", std::string("measured"))).value_or(CandidateRule::Measured);
      t.note = "placement file";
      p.candidates.push_back(std::move(t));
    }
  } catch (const Json::exception &e) {
    return Error::format("{}: a malformed placement entry: {}", source, e.what());
  }
  return p;
}

std::string Placement::report() const {
  std::string s = fmt::format("Placement ({}{}):\n", mode,
                              source.empty() ? "" : fmt::format(", replayed from {}", source));
  for (const CandidateTiming &c : candidates) {
    const std::string what = describe(c.targets) + describeRule(c.rule);
    s += c.ms < 0 ? fmt::format("  {:<28} {}\n", what, c.note)
                  : fmt::format("  {:<28} {:9.3f} ms, {} ({})\n", what, c.ms, regionCount(c),
                                c.note);
  }
  size_t kept = 0, dropped = 0, undecided = 0, estimated = 0;
  for (const auto &[key, t] : regions) {
    (!decided(t) ? undecided : t.keep ? kept : dropped) += 1;
    estimated += decided(t) && t.pluginMs < 0;
    s += "  " + describeRegion(t) + "\n";
  }
  s += fmt::format("  chosen: {}{}; regions: {} kept, {} sent back (slower there than on the "
                   "host; their ops offered to the next target listed, else the host){}{}\n",
                   describe(targets), describeRule(chosenRule), kept, dropped,
                   estimated ? fmt::format(", {} of them by the plugin's estimate", estimated)
                             : std::string(),
                   undecided ? fmt::format(", {} not measured (priority rules)", undecided)
                             : std::string());
  return s;
}

Expected<Placement> readPlacementFile(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    return Error::format("cannot read placement file '{}'", path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return Placement::fromJson(buffer.str(), path);
}

Status writePlacementFile(const Placement &p, const std::string &path) {
  std::ofstream out(path);
  out << p.json() << "\n";
  if (!out)
    return Error::format("cannot write placement file '{}'", path);
  return okStatus();
}

} // namespace tessera::compile
