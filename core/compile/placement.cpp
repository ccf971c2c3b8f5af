//===- compile/placement.cpp - Placement by measurement --------------------===//
//
// See placement.h and docs/design/0015-placement-by-measurement.md. A
// region is measured inside the partitioner's prune step (the region rule
// this file gives it): compiled on its own through its plugin and host-only,
// each artifact loaded and run as an app runs it. Candidates are whole
// compiles timed the same way.
//
//===----------------------------------------------------------------------===//
#include "compile/placement.h"
#include "compile/placement_internal.h"
#include "compile/placement_timing.h"

#include "bridge/plugin_bridge.h"
#include "ir/structural.h"
#include "ir/visit.h"
#include "plugin/registry.h"
#include "runtime/session.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

namespace tessera::compile {

using namespace detail;

namespace {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::json;
using partition::RegionVerdict;

/// "conv2d+relu" for a region's op calls (the first few).
std::string opsOf(const ir::Function &fn) {
  std::vector<std::string> ops;
  size_t n = 0;
  for (const ir::ExprNode *e : ir::postOrder(fn->body()))
    if (const auto *c = e->as<ir::CallNode>(); c && c->op() && n++ < 6)
      ops.push_back(c->op()->name);
  std::string s = fmt::format("{}", fmt::join(ops, "+"));
  return n > 6 ? fmt::format("{}+... ({} ops)", s, n) : s;
}

/// Whole-model candidates are timed in this many interleaved rounds (each
/// candidate's time: the lowest of its rounds' medians), so that a burst of
/// load on the machine during one candidate's turn does not decide.
constexpr int kCandidateRounds = 3;

/// Measures regions as the partitioner forms them and times candidates.
class Measurer {
public:
  Measurer(const plugin::PluginRegistry &registry, const PlacementOptions &options,
           Placement &out)
      : registry_(registry), options_(options), out_(out), cache_(options.cacheDir),
        deadline_(Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(options.budgetSeconds))) {}
  ~Measurer() { cache_.save(); }

  partition::RegionRule rule(bool withholdKept) {
    return [this, withholdKept](
               const ir::Function &fn,
               const std::string &target) -> Expected<std::optional<RegionVerdict>> {
      TS_ASSIGN_OR_RETURN(std::string key, regionKey(fn, target, registry_));
      visited_.push_back(key);
      if (auto it = out_.regions.find(key); it != out_.regions.end())
        return verdictOf(it->second, fn, withholdKept);
      RegionTiming t;
      t.target = target;
      t.ops = opsOf(fn);
      // A measurement in the cache, else the plugin's clear estimate, else
      // a measurement now.
      const Json *cached = cache_.find("regions", key + tag_);
      plugin::RegionEstimate hint;
      if (!cached) {
        TS_ASSIGN_OR_RETURN(hint, estimate(fn, target));
      }
      if (cached) {
        t = timingOf(*cached, "cache");
      } else if (clearEstimate(hint.speedup)) {
        t.estimate = hint.speedup;
        t.how = "plugin estimate" + (hint.reason.empty() ? "" : ": " + hint.reason);
        // Cached too: a cached candidate's final compile needs the verdict.
        cache_.put("regions", key + tag_,
                   {{"target", t.target}, {"ops", t.ops}, {"estimate", t.estimate}});
      } else if (Clock::now() > deadline_) {
        t.how = "not measured: over the budget (--tune-budget)";
      } else {
        auto plugin = timeRegion(fn, target);
        auto host = plugin.ok() ? timeRegion(fn, "") : Expected<RegionRun>(plugin.error());
        if (plugin.ok() && host.ok()) {
          t.pluginMs = plugin->ms;
          t.hostMs = host->ms;
          t.losing = losingNodes(fn, *plugin, *host);
          t.how = "measured";
          Json entry = {{"target", t.target}, {"ops", t.ops}, {"plugin_ms", t.pluginMs},
                        {"host_ms", t.hostMs}};
          if (!t.losing.empty())
            entry["losing"] = losingJson(t.losing);
          cache_.put("regions", key + tag_, std::move(entry));
        } else {
          t.how = "not measured: " + (plugin.ok() ? host : plugin).error().message();
        }
      }
      t.keep = keeps(t);
      if (options_.progress)
        options_.progress(describeRegion(t));
      return verdictOf(out_.regions[key] = std::move(t), fn, withholdKept);
    };
  }

  /// A candidate: its timing so far and, when compiled now, its artifact
  /// loaded for timing.
  struct Candidate {
    CandidateTiming timing;
    std::string key;                    // in the cache
    std::vector<std::string> regionKeys; // the regions it formed
    std::unique_ptr<Timed> timed;        // null: cached, or not compiled
    size_t digest = 0;                   // of its artifact (0: unknown)
  };

  /// The whole model compiled for `targets` with the measured rule and
  /// loaded (or its time taken from the cache); timed by timeCandidates.
  Candidate candidate(const ir::Module &m, const std::vector<std::string> &targets,
                      const std::string &modelHash, CandidateRule rule = CandidateRule::Measured) {
    Candidate out;
    CandidateTiming &c = out.timing;
    c.targets = targets;
    c.rule = rule;
    // "r3": candidates partitioned with re-offering (a sent-back region's
    // ops go to the next target) and regions sent back in part; times
    // cached before it mean another thing.
    out.key = modelHash + "/" + cpuName() + tag_ + "/r3";
    for (const std::string &t : targets) {
      auto p = registry_.find(t);
      out.key += fmt::format("/{}@{}", t, p ? p->version() : "?");
    }
    if (rule != CandidateRule::Measured)
      out.key += std::string("/") + ruleName(rule);
    if (const Json *cached = cache_.find("candidates", out.key); cached && cached->is_object()) {
      c.ms = cached->value("ms", -1.0);
      c.regions = cached->value("regions", int64_t(-1));
      c.note = cached->value("note", std::string("cache"));
      out.digest = cached->value("digest", size_t(0));
      for (const auto &k : cached->value("region_keys", Json::array()))
        if (const Json *r =
                k.is_string() ? cache_.find("regions", k.get<std::string>() + tag_) : nullptr) {
          remember(k.get<std::string>(), *r);
          out.regionKeys.push_back(k.get<std::string>());
        }
    } else if (Clock::now() > deadline_) {
      c.note = "not timed: over the budget (--tune-budget)";
    } else {
      CompileOptions o;
      o.targets = targets;
      o.codegen = options_.codegen;
      o.hostNodes = options_.hostNodes;
      if (rule != CandidateRule::Priority)
        o.regionRule = this->rule(rule == CandidateRule::Withheld);
      visited_.clear();
      auto compiled = compileModule(m, o, &registry_);
      if (compiled.ok())
        out.digest = std::hash<std::string>()(compiled->artifact);
      auto timed = compiled.ok() ? Timed::load(std::move(compiled->artifact), options_.threads,
                                               "placement candidate")
                                 : Expected<std::unique_ptr<Timed>>(compiled.error());
      if (timed.ok()) {
        out.timed = std::move(timed).value();
        out.regionKeys = visited_;
        c.regions = int64_t(compiled->externalSteps);
      } else {
        c.note = "not timed: " + timed.error().message();
      }
    }
    if (!out.timed)
      report(c);
    return out;
  }

  /// A candidate whose artifact is the same as `same`'s (a rule that
  /// changed nothing) is not timed: it is said so, and cached as such.
  void sameAs(Candidate &c, const Candidate &same) {
    c.timed.reset();
    c.timing.ms = -1;
    c.timing.note = fmt::format("not timed: the same artifact as {}{}",
                                describe(same.timing.targets), describeRule(same.timing.rule));
    cache_.put("candidates", c.key, {{"ms", -1}, {"note", c.timing.note}, {"digest", c.digest}});
    report(c.timing);
  }

  /// Times the candidates compiled now, in interleaved rounds (the first
  /// round always, the others within the budget), and caches their times;
  /// those in `only` (when given), else all. Their sessions stay loaded
  /// until release().
  void timeCandidates(std::vector<Candidate> &candidates, const std::set<size_t> *only = nullptr) {
    for (int round = 0; round < kCandidateRounds; ++round) {
      if (round > 0 && Clock::now() > deadline_)
        break;
      for (size_t i = 0; i < candidates.size(); ++i) {
        Candidate &c = candidates[i];
        if (!c.timed || (only && !only->count(i)))
          continue;
        auto ms = c.timed->median(5, 50);
        if (!ms.ok()) {
          c.timing.ms = -1;
          c.timing.note = "not timed: " + ms.error().message();
          c.timed.reset();
          report(c.timing);
          continue;
        }
        if (c.timing.ms < 0 || *ms < c.timing.ms)
          c.timing.ms = *ms;
      }
    }
    for (size_t i = 0; i < candidates.size(); ++i) {
      Candidate &c = candidates[i];
      if (!c.timed || (only && !only->count(i)))
        continue;
      c.timing.note = "measured";
      cache_.put("candidates", c.key,
                 {{"ms", c.timing.ms}, {"regions", c.timing.regions},
                  {"region_keys", c.regionKeys}, {"digest", c.digest}});
      report(c.timing);
    }
  }

  /// Whether the regions candidate `c` formed hold nodes that lost in a
  /// region kept: worth trying with them withheld.
  bool keptLosing(const Candidate &c) const {
    for (const std::string &k : c.regionKeys)
      if (auto it = out_.regions.find(k);
          it != out_.regions.end() && it->second.keep && !it->second.losing.empty())
        return true;
    return false;
  }

private:
  void report(const CandidateTiming &c) const {
    if (!options_.progress)
      return;
    const std::string what = describe(c.targets) + describeRule(c.rule);
    options_.progress(c.ms < 0 ? fmt::format("candidate {}: {}", what, c.note)
                               : fmt::format("candidate {}: {:.3f} ms, {} ({})", what, c.ms,
                                             regionCount(c), c.note));
  }

  static RegionTiming timingOf(const Json &c, std::string how) {
    RegionTiming t;
    t.target = c.value("target", std::string());
    t.ops = c.value("ops", std::string());
    t.pluginMs = c.value("plugin_ms", -1.0);
    t.hostMs = c.value("host_ms", -1.0);
    t.estimate = c.value("estimate", 0.0);
    if (auto losing = losingFromJson(c.value("losing", Json::array()), "the cache"); losing.ok())
      t.losing = std::move(losing).value(); // a damaged entry: the region as a whole
    t.keep = keeps(t);
    t.how = std::move(how);
    return t;
  }

  /// A cached region that a cached candidate saw, into the decision.
  void remember(const std::string &key, const Json &c) {
    if (!out_.regions.count(key))
      out_.regions[key] = timingOf(c, "cache");
  }

  /// The plugin's cost hint for a region (none when it gives none).
  Expected<plugin::RegionEstimate> estimate(const ir::Function &fn, const std::string &target) {
    auto p = registry_.find(target);
    if (!p || !p->hasRegionEstimate())
      return plugin::RegionEstimate{};
    TS_ASSIGN_OR_RETURN(auto graph, bridge::GraphHolder::fromFunction(
                                        fn, "tessera_placement_region", p->codegenFlags()));
    return p->guardedEstimateRegion(graph->graph());
  }

  /// A region compiled on its own and timed: through `target`'s plugin (a
  /// @main that calls it), or host-only (target "": its ops as @main); then
  /// profiled for its nodes' times.
  Expected<RegionRun> timeRegion(const ir::Function &fn, const std::string &target) {
    ir::Module m("placement");
    if (target.empty()) {
      TS_ASSIGN_OR_RETURN(ir::Function plain, partition::withoutComposites(fn));
      m.set("main", plain);
    } else {
      const std::string symbol = "tessera_placement_region";
      ir::Attrs attrs;
      attrs.set(partition::kCompilerAttr, target);
      attrs.set(partition::kGlobalSymbolAttr, symbol);
      ir::Function region = ir::makeFunction(fn->params(), fn->body(), attrs, symbol);
      std::vector<ir::Var> params;
      std::vector<ir::Expr> args;
      for (const ir::Var &p : fn->params()) {
        params.push_back(ir::makeVar(p->name(), p->type()));
        args.push_back(params.back());
      }
      TS_ASSIGN_OR_RETURN(ir::Expr call, ir::makeGlobalCall(symbol, region->type(), args));
      m.set(symbol, region);
      m.set("main", ir::makeFunction(params, call));
    }
    CompileOptions o;
    o.codegen = options_.codegen;
    TS_ASSIGN_OR_RETURN(CompileResult r, compileModule(m, o, &registry_));
    TS_ASSIGN_OR_RETURN(auto timed,
                        Timed::load(std::move(r.artifact), options_.threads,
                                    target.empty() ? "region on the host" : "region on " + target));
    RegionRun run;
    TS_ASSIGN_OR_RETURN(run.ms, timed->median(7, 100));
    TS_ASSIGN_OR_RETURN(run.nodeMs, timed->nodeTimes(target.empty() ? "host" : "kernel", workOf(fn)));
    return run;
  }

  const plugin::PluginRegistry &registry_;
  const PlacementOptions &options_;
  Placement &out_;
  Cache cache_;
  Clock::time_point deadline_;
  std::vector<std::string> visited_; // the regions the current candidate formed
  // Host code built for another CPU level or optimisation, or by another
  // build of Tessera, or timed on another number of threads, runs at
  // another speed: part of every cache key (not of the placement file's).
  std::string tag_ =
      fmt::format("/{}-O{}{}/b{}", options_.codegen.cpu, options_.codegen.optLevel,
                  options_.threads > 0 ? fmt::format("-T{}", options_.threads) : std::string(),
                  compilerBuild());
};

} // namespace

Expected<Placement> measurePlacement(const ir::Module &m, const std::vector<std::string> &targets,
                                     const plugin::PluginRegistry &registry,
                                     const PlacementOptions &options) {
  if (targets.empty())
    return Error("placement by measurement needs targets (--target dnnl,ccompiler,...)");
  ir::Function main = m.find("main");
  if (!main)
    return Error("the module has no function '@main'");
  Placement p;
  p.mode = "measured";
  std::string modelHash =
      hex(ir::structuralHash(std::static_pointer_cast<const ir::ExprNode>(main)));
  if (!options.hostNodes.empty()) // other candidates
    modelHash += fmt::format("/on-host:{}", fmt::join(options.hostNodes, ","));
  if (options.progress)
    options.progress(options.threads > 0
                         ? fmt::format("timing on {} thread{}", options.threads,
                                       options.threads == 1 ? "" : "s")
                         : std::string("timing on every core (--tune-threads sets how many)"));
  {
    Measurer measurer(registry, options, p);
    // The list as given, each target alone, then the host alone.
    std::vector<std::vector<std::string>> lists;
    if (targets.size() > 1)
      lists.push_back(targets);
    for (const std::string &t : targets)
      lists.push_back({t});
    lists.push_back({});
    std::vector<Measurer::Candidate> candidates;
    for (const auto &list : lists)
      candidates.push_back(measurer.candidate(m, list, modelHash));
    // Each target alone in priority order too (what `--target t` gives), unless
    // measuring changed nothing there.
    for (const std::string &t : targets) {
      Measurer::Candidate c = measurer.candidate(m, {t}, modelHash, CandidateRule::Priority);
      auto same = std::find_if(candidates.begin(), candidates.end(), [&](const auto &o) {
        return c.digest && o.digest == c.digest;
      });
      if (same != candidates.end())
        measurer.sameAs(c, *same);
      candidates.push_back(std::move(c));
    }
    measurer.timeCandidates(candidates);
    // The best measured candidate with the losing nodes of its kept regions
    // withheld, timed against it again (interleaved).
    auto bestOf = [&] {
      const Measurer::Candidate *best = nullptr;
      for (const Measurer::Candidate &c : candidates)
        if (c.timing.ms >= 0 && (!best || c.timing.ms < best->timing.ms))
          best = &c;
      return best;
    };
    if (const Measurer::Candidate *best = bestOf();
        best && best->timing.rule == CandidateRule::Measured && best->timing.regions != 0 &&
        measurer.keptLosing(*best)) {
      const size_t b = size_t(best - candidates.data());
      Measurer::Candidate w =
          measurer.candidate(m, best->timing.targets, modelHash, CandidateRule::Withheld);
      if (w.digest && w.digest == best->digest) {
        measurer.sameAs(w, *best);
        candidates.push_back(std::move(w));
      } else {
        candidates.push_back(std::move(w));
        const std::set<size_t> pair = {b, candidates.size() - 1};
        measurer.timeCandidates(candidates, &pair);
      }
    }
    for (Measurer::Candidate &c : candidates)
      p.candidates.push_back(std::move(c.timing));
  }
  const CandidateTiming *best = nullptr;
  for (const CandidateTiming &c : p.candidates)
    if (c.ms >= 0 && (!best || c.ms < best->ms))
      best = &c;
  if (!best) { // nothing timed: the priority order
    p.targets = targets;
    p.chosenRule = CandidateRule::Priority;
  } else if (best->regions == 0) { // every region went back: the host alone
    p.targets = {};
  } else {
    p.targets = best->targets;
    p.chosenRule = best->rule;
  }
  // The chosen partition's regions are among those its candidate formed
  // (measured, or remembered from the cache with it), so the final compile
  // and the placement file find every verdict they need in p.regions.
  return p;
}

Expected<std::optional<Placement>> applyPlacement(const ir::Module &m,
                                                  const PlacementRequest &request,
                                                  CompileOptions &options,
                                                  const plugin::PluginRegistry *registry) {
  if (request.mode != "priority" && request.mode != "measure")
    return Error::format("placement must be 'priority' or 'measure', not '{}'", request.mode);
  if (request.mode == "priority" && request.file.empty())
    return std::optional<Placement>();
  if (options.targets.empty() || !registry)
    return Error::format("{} needs targets to place (e.g. dnnl,ccompiler,json)",
                         request.mode == "measure" ? "placement by measurement"
                                                   : "a placement file");
  Placement p;
  if (request.mode == "priority") {
    TS_ASSIGN_OR_RETURN(p, readPlacementFile(request.file));
  } else {
    if (!(request.budgetSeconds > 0))
      return Error::format("the tuning budget must be a positive number of seconds, not {}",
                           request.budgetSeconds);
    PlacementOptions po;
    if (request.threads < 0)
      return Error::format("the tuning threads must be 0 (every core) or more, not {}",
                           request.threads);
    po.budgetSeconds = request.budgetSeconds;
    po.threads = request.threads;
    po.codegen = options.codegen;
    po.codegen.cpu = cpuRunHere(options); // the host code this machine runs
    po.hostNodes = options.hostNodes;
    po.progress = request.progress;
    TS_ASSIGN_OR_RETURN(p, measurePlacement(m, options.targets, *registry, po));
    if (!request.file.empty())
      TS_RETURN_IF_ERROR(writePlacementFile(p, request.file));
  }
  options.targets = p.targets;
  options.regionRule = p.rule(*registry);
  options.placementJson = p.json();
  return std::optional<Placement>(std::move(p));
}

} // namespace tessera::compile
