//===- compile/placement.h - Placement by measurement -----------*- C++ -*-===//
//
// Which target runs which part of a model, decided from times measured on
// this machine (docs/design/0015-placement-by-measurement.md):
//   - each region the partitioner forms is compiled on its own through its
//     plugin and host-only, timed with random inputs of its real shapes, and
//     kept only when its plugin is faster (PartitionState::regionRule); the
//     ops of a region sent back are offered to the next target listed
//     (PartitionState::withheld), else they run on the host;
//   - a region that loses is sent back in part when a profile of both runs
//     shows which of its nodes lose: only they are withheld, and the rest is
//     offered to the target again (bounded rounds);
//   - the candidates host-only, each target alone and the list as given are
//     compiled with those verdicts and timed whole, with each target alone
//     in priority order, and the best with the losing nodes of its kept
//     regions withheld too; the fastest wins.
// Measurements are cached on disk (by the region's structure, the plugin's
// name and version and the CPU), so a second compile measures nothing; a
// decision written to a placement file is replayed without measuring.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compile/compile.h"
#include "ir/module.h"
#include "partition/partition.h"
#include "support/error.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::plugin {
class PluginRegistry;
}

namespace tessera::compile {

struct PlacementOptions {
  /// Seconds measuring may take; past it, regions not measured yet follow
  /// the priority rules and candidates not timed are skipped.
  double budgetSeconds = 120;
  /// How the measured candidates' host code is built (the final compile's).
  codegen::CodegenOptions codegen;
  /// The measurement cache's folder: "" for $TESSERA_CACHE_DIR, else
  /// ~/.cache/tessera; "-" for none.
  std::string cacheDir;
  /// Threads of the timed sessions (0: every core, as an app's default).
  int32_t threads = 0;
  /// Node names every candidate keeps on the host (`--on-host`).
  std::vector<std::string> hostNodes;
  /// Lines of progress ("measuring region dnnl 3 ops: 0.21 ms, host 0.35 ms").
  std::function<void(std::string_view)> progress;
};

/// A node of a region that ran slower on the region's plugin than on the
/// host, from a profiled run of each (the plugin's reported kernels and the
/// host's steps, each split among the nodes it computes by their work).
struct NodeTiming {
  int32_t at = -1;  // its position among the region's op calls (post order)
  std::string node; // its name in the region measured
  double pluginMs = 0, hostMs = 0;
};

/// One region's measurement and verdict.
struct RegionTiming {
  std::string target;
  std::string ops;        // "conv2d+relu" (its op calls, up to a few)
  double pluginMs = -1;   // -1: not measured
  double hostMs = -1;
  /// The plugin's cost hint (checker.estimate_region) that decided the
  /// region without measuring: its speedup over the host; 0: none.
  double estimate = 0;
  bool keep = true;
  std::string how;        // "measured", "cache", "placement file", the hint, or why not measured
  /// Its nodes that lose clearly on the plugin (none when the plugin reports
  /// no kernels, or when every node loses). A region that loses with some is
  /// sent back in part: only they are withheld from its target, which is
  /// offered the rest again; a kept region's are withheld in the candidate
  /// that tries it ("withheld").
  std::vector<NodeTiming> losing;
};

/// How a candidate's regions are decided: by their measured verdicts,
/// by the priority rules alone (what `--target` gives without measuring),
/// or measured with the losing nodes of kept regions withheld too.
enum class CandidateRule { Measured, Priority, Withheld };

/// One candidate partition's whole-model time.
struct CandidateTiming {
  std::vector<std::string> targets; // empty: host only
  double ms = -1;                   // -1: not timed (budget, or it failed: see note)
  int64_t regions = -1;             // plugin regions it kept (-1: unknown)
  std::string note;
  CandidateRule rule = CandidateRule::Measured;
};

/// A decision: the target list to compile with and the verdict on every
/// region measured, by region key.
struct Placement {
  std::string mode = "measured";    // how the decision was made
  std::string source;               // the placement file it was read from, if any
  std::vector<std::string> targets; // the chosen list (empty: host only)
  CandidateRule chosenRule = CandidateRule::Measured; // the chosen candidate's
  std::map<std::string, RegionTiming> regions;
  std::vector<CandidateTiming> candidates;

  /// The partitioner's rule for these verdicts and the chosen rule (regions
  /// not in the map follow the priority rules; none for the priority rule);
  /// keys are computed over `registry`.
  partition::RegionRule rule(const plugin::PluginRegistry &registry) const;
  /// The decision as JSON (the placement file, and the artifact's
  /// metadata `placement`).
  std::string json() const;
  static Expected<Placement> fromJson(std::string_view text, const std::string &source);
  /// What was measured and why the winner won, for people.
  std::string report() const;
};

/// The key of a region for the cache and the placement file: its target,
/// the plugin's name and version, the CPU and a structural hash.
Expected<std::string> regionKey(const ir::Function &region, const std::string &target,
                                const plugin::PluginRegistry &registry);

/// Measures the regions and candidates of `m` for `targets` (in priority
/// order) and chooses.
Expected<Placement> measurePlacement(const ir::Module &m, const std::vector<std::string> &targets,
                                     const plugin::PluginRegistry &registry,
                                     const PlacementOptions &options);

/// Reads a placement file.
Expected<Placement> readPlacementFile(const std::string &path);
/// Writes one.
Status writePlacementFile(const Placement &p, const std::string &path);

/// What `tessera compile` and the Python API ask for.
struct PlacementRequest {
  std::string mode = "priority"; // or "measure"
  std::string file;              // with "measure": written; alone: replayed
  double budgetSeconds = 120;
  /// Threads the timed sessions run with: those the artifact will run with
  /// (0: every core, an app's default).
  int32_t threads = 0;
  std::function<void(std::string_view)> progress;
};

/// Resolves `request` for compiling `m` with `options`: measures (and
/// writes the file when given), replays the file, or does nothing (priority
/// order: nullopt); a placement sets options.targets, regionRule and
/// placementJson. Errors: an unknown mode, no targets, a bad budget or file.
Expected<std::optional<Placement>> applyPlacement(const ir::Module &m,
                                                  const PlacementRequest &request,
                                                  CompileOptions &options,
                                                  const plugin::PluginRegistry *registry);

} // namespace tessera::compile
