//===- compile/placement_timing.h - Timing and profiling what placement compiles -*- C++ -*-===//
//
// What placement by measurement (placement.cpp) times with: a compiled
// artifact loaded into a session and run on random inputs (Timed), each
// node's share of a profiled run, which nodes of a region lose on its
// plugin, and the measurement cache. docs/design/0015.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compile/placement.h"
#include "runtime/session.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::compile::detail {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::json;

/// Random inputs for every model input (floats uniform in [-1, 1]; other
/// dtypes zero, which are valid indices and counts), bound to the session.
Status bindInputs(runtime::Session &s, std::vector<std::vector<uint64_t>> &storage);

/// A compiled artifact loaded into a session, its inputs bound and run
/// once (warm-up), ready to be timed.
class Timed {
public:
  static Expected<std::unique_ptr<Timed>> load(std::string bytes, int32_t threads,
                                               const std::string &what) {
    auto t = std::make_unique<Timed>();
    TS_ASSIGN_OR_RETURN(t->model_, runtime::LoadedModel::load(std::move(bytes), what));
    runtime::SessionOptions so;
    so.numThreads = threads;
    TS_ASSIGN_OR_RETURN(t->session_, runtime::Session::create(t->model_, so));
    TS_RETURN_IF_ERROR(bindInputs(*t->session_, t->storage_));
    TS_RETURN_IF_ERROR(t->session_->run());
    return t;
  }

  /// The median time of runs until `runs` of them and `ms` milliseconds
  /// have passed (at most 200 runs), in milliseconds.
  Expected<double> median(size_t runs, double ms) {
    std::vector<double> times;
    double total = 0;
    while (times.size() < 200 && (times.size() < runs || total < ms)) {
      const auto t0 = Clock::now();
      TS_RETURN_IF_ERROR(session_->run());
      times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      total += times.back();
    }
    std::nth_element(times.begin(), times.begin() + long(times.size() / 2), times.end());
    return times[times.size() / 2];
  }

  /// Each graph node's time per run in `runs` profiled runs: every record
  /// of `category` ("kernel": what a plugin reported; "host": host steps)
  /// split among the nodes it names in proportion to their `work`.
  Expected<std::map<std::string, double>>
  nodeTimes(std::string_view category, const std::map<std::string, double> &work, int runs = 3) {
    session_->setProfiling(true);
    struct Off {
      runtime::Session &s;
      ~Off() { s.setProfiling(false); }
    } off{*session_};
    for (int i = 0; i < runs; ++i)
      TS_RETURN_IF_ERROR(session_->run());
    std::map<std::string, double> out;
    for (const tessera_profile_record_t &r : session_->profile()) {
      if (category != r.category)
        continue;
      std::vector<std::string> nodes;
      for (std::string_view rest = r.nodes; !rest.empty();) {
        const size_t comma = rest.find(", ");
        if (comma)
          nodes.emplace_back(rest.substr(0, comma));
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 2);
      }
      auto weight = [&](const std::string &n) {
        auto it = work.find(n);
        return it == work.end() ? 1.0 : it->second;
      };
      double total = 0;
      for (const std::string &n : nodes)
        total += weight(n);
      for (const std::string &n : nodes)
        out[n] += double(r.duration_ns) / 1e6 * weight(n) / total / runs;
    }
    return out;
  }

private:
  std::shared_ptr<const runtime::LoadedModel> model_;
  std::unique_ptr<runtime::Session> session_;
  std::vector<std::vector<uint64_t>> storage_;
};

/// A region compiled on its own and timed: its median time and each of its
/// nodes' time from a profiled run (empty when nothing named them).
struct RegionRun {
  double ms = 0;
  std::map<std::string, double> nodeMs;
};

/// A node loses on a plugin when it takes this much longer there than on the
/// host, and the difference is at least kLosingShare of the region's time
/// on the plugin (a node's time is a split of a kernel's or a step's, so
/// small differences are noise).
constexpr double kLosingRatio = 1.25;
constexpr double kLosingShare = 0.01;

/// The nodes of region `fn` that lose on its plugin (`plugin`) against the
/// host (`host`); none when the plugin reported no kernels, or when every
/// named node loses (then the region loses as a whole).
std::vector<NodeTiming> losingNodes(const ir::Function &fn, const RegionRun &plugin,
                                    const RegionRun &host);

/// The work of each named node of a region (partition::estimateFlops of its
/// calls, at least 1 each): how a kernel's or step's time is split among
/// its nodes.
std::map<std::string, double> workOf(const ir::Function &fn);

/// The measurement cache: one JSON file, read at the start, written at the
/// end (written whole through a temporary file, so a crash loses nothing
/// that was there).
class Cache {
public:
  explicit Cache(const std::string &dir) {
    if (dir == "-")
      return;
    std::string base = dir;
    if (base.empty()) {
      if (const char *env = std::getenv("TESSERA_CACHE_DIR"); env && *env)
        base = env;
      else if (const char *home = std::getenv("HOME"); home && *home)
        base = std::string(home) + "/.cache/tessera";
      else
        return;
    }
    path_ = base + "/placement.json";
    std::ifstream in(path_);
    if (in) {
      Json j = Json::parse(in, nullptr, /*allow_exceptions=*/false);
      if (j.is_object())
        data_ = std::move(j); // a damaged cache is measured again, not an error
    }
  }
  const Json *find(const std::string &kind, const std::string &key) const {
    auto k = data_.find(kind);
    if (k == data_.end() || !k->is_object())
      return nullptr;
    auto it = k->find(key);
    return it == k->end() ? nullptr : &*it;
  }
  void put(const std::string &kind, const std::string &key, Json value) {
    data_[kind][key] = std::move(value);
    dirty_ = true;
  }
  void save() const {
    if (path_.empty() || !dirty_)
      return;
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path_).parent_path(), ec);
    const std::string tmp = path_ + ".tmp";
    {
      std::ofstream out(tmp);
      out << data_.dump(1);
      if (!out)
        return; // an unwritable cache only costs the next compile time
    }
    std::filesystem::rename(tmp, path_, ec);
  }

private:
  std::string path_;
  Json data_ = Json::object();
  bool dirty_ = false;
};

} // namespace tessera::compile::detail
