//===- tessera/profile.hpp - A session's profile as data, a table, a trace -*- C++ -*-===//
//
// Header-only (C++17), over the records of tessera/c/runtime.h's PROFILING
// section; tessera/runtime.hpp's Session::profile() returns one:
//
//   session.setProfiling(true);
//   for (int i = 0; i < 20; ++i) session.run();
//   tessera::rt::Profile p = session.profile();
//   std::cout << p.format();                 // the table `tessera run --profile` prints
//   std::ofstream("trace.json") << p.chromeTrace(); // Perfetto, chrome://tracing
//
// table() is the same table as data: one row per step that ran (its time
// over all runs), sorted by time, each plugin step followed by the
// primitives or kernels its plugin reported inside it (grouped by name,
// nodes and implementation), sorted by time. Python's Session.profile()
// gives these rows.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tessera/c/runtime.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace tessera::rt {

/// One record (tessera_profile_record_t, with its own strings).
struct ProfileRecord {
  std::string name, category, nodes, impl;
  int64_t startNs = 0, durationNs = 0;
  uint64_t thread = 0;
  int32_t step = -1, parent = -1;
  uint32_t run = 0;
};

/// One line of the table: a step, or a kernel inside a plugin step.
struct ProfileRow {
  std::string name, category, nodes, impl;
  int32_t step = -1;    // the plan step (the kernel's step)
  int32_t parent = -1;  // a kernel's: the row of its step; a step's: -1
  uint64_t calls = 0;   // over all runs
  double totalMs = 0;   // over all runs
  double msPerRun = 0;  // totalMs / runs
  double share = 0;     // of the runs' time, 0..1
};

class Profile {
public:
  Profile() = default;
  explicit Profile(std::vector<ProfileRecord> records) : records_(std::move(records)) {}

  const std::vector<ProfileRecord> &records() const { return records_; }

  /// How many runs were profiled.
  uint32_t runs() const {
    uint32_t n = 0;
    for (const ProfileRecord &r : records_)
      n += r.category == "run";
    return n;
  }
  /// The runs' mean time, and the mean time per run of their steps.
  double msPerRun() const { return perRun(categorySum("run")); }
  double stepsMsPerRun() const {
    int64_t ns = 0;
    for (const ProfileRecord &r : records_)
      if (isStep(r))
        ns += r.durationNs;
    return perRun(ns);
  }

  std::vector<ProfileRow> table() const {
    const double nRuns = std::max<uint32_t>(runs(), 1), total = double(categorySum("run"));
    // Steps by plan step; kernels by (step, name, nodes, impl).
    std::map<int32_t, ProfileRow> steps;
    std::map<std::tuple<int32_t, std::string, std::string, std::string>, ProfileRow> kernels;
    auto add = [&](ProfileRow &row, const ProfileRecord &r) {
      if (row.calls++ == 0) {
        row.name = r.name;
        row.category = r.category;
        row.nodes = r.nodes;
        row.impl = r.impl;
        row.step = r.step;
      }
      row.totalMs += double(r.durationNs) / 1e6;
    };
    for (const ProfileRecord &r : records_) {
      if (isStep(r))
        add(steps[r.step], r);
      else if (r.category == "kernel")
        add(kernels[{r.step, r.name, r.nodes, r.impl}], r);
    }
    auto finish = [&](ProfileRow &row) {
      row.msPerRun = row.totalMs / nRuns;
      row.share = total > 0 ? row.totalMs * 1e6 / total : 0;
    };
    auto byTime = [](const ProfileRow *a, const ProfileRow *b) {
      return a->totalMs != b->totalMs ? a->totalMs > b->totalMs : a->step < b->step;
    };
    std::vector<ProfileRow *> order;
    for (auto &[step, row] : steps)
      order.push_back(&row);
    std::sort(order.begin(), order.end(), byTime);
    std::vector<ProfileRow> out;
    for (ProfileRow *s : order) {
      finish(*s);
      const int32_t parent = int32_t(out.size());
      out.push_back(*s);
      std::vector<ProfileRow *> inside;
      for (auto &[key, row] : kernels)
        if (std::get<0>(key) == s->step)
          inside.push_back(&row);
      std::sort(inside.begin(), inside.end(), byTime);
      for (ProfileRow *k : inside) {
        finish(*k);
        k->parent = parent;
        out.push_back(*k);
      }
    }
    return out;
  }

  /// The table as text, as `tessera run --profile` prints it.
  std::string format() const {
    const uint32_t n = runs();
    if (n == 0)
      return "profile: no run was profiled\n";
    const double run = msPerRun(), steps = stepsMsPerRun();
    std::string s = "profile of " + std::to_string(n) + (n == 1 ? " run" : " runs") + ": " +
                    fixed(run, 3) + " ms per run; its steps take " + fixed(steps, 3) + " ms (" +
                    fixed(run > 0 ? 100 * steps / run : 0, 1) +
                    "%), the rest is the executor's own work\n";
    s += "   share     ms/run  calls/run  step, and inside a plugin step what it ran\n";
    for (const ProfileRow &r : table()) {
      const bool kernel = r.parent >= 0;
      std::string what = kernel ? "    " + r.name : r.name;
      if (kernel && !r.impl.empty())
        what += " [" + r.impl + "]";
      if (kernel && !r.nodes.empty())
        what += " " + r.nodes;
      if (!kernel)
        what += r.step >= 0 ? " (step " + std::to_string(r.step) + ", " + r.category + ")"
                            : " (before the steps)";
      s += pad(fixed(100 * r.share, 1) + "%", 8) + pad(fixed(r.msPerRun, 3), 11) +
           pad(fixed(double(r.calls) / n, 1), 11) + "  " + what + "\n";
    }
    return s;
  }

  /// A Chrome trace (JSON Trace Event Format): every record as a complete
  /// event ("ph": "X", microseconds) on its thread's track, with the
  /// tracks named; loads in Perfetto and chrome://tracing.
  std::string chromeTrace() const {
    const long pid = long(::getpid());
    std::string s = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[";
    s += "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + std::to_string(pid) +
         ",\"tid\":0,\"args\":{\"name\":\"tessera\"}}";
    std::set<uint64_t> threads;
    for (const ProfileRecord &r : records_)
      threads.insert(r.thread);
    size_t t = 0;
    for (uint64_t tid : threads)
      s += ",{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" + std::to_string(pid) +
           ",\"tid\":" + std::to_string(tid) + ",\"args\":{\"name\":\"" +
           (t++ == 0 ? std::string("session") : "thread " + std::to_string(tid)) + "\"}}";
    for (const ProfileRecord &r : records_) {
      s += ",{\"name\":\"" + escape(r.name) + "\",\"cat\":\"" + escape(r.category) +
           "\",\"ph\":\"X\",\"ts\":" + fixed(double(r.startNs) / 1e3, 3) +
           ",\"dur\":" + fixed(double(r.durationNs) / 1e3, 3) + ",\"pid\":" + std::to_string(pid) +
           ",\"tid\":" + std::to_string(r.thread) + ",\"args\":{\"run\":" + std::to_string(r.run);
      if (r.step >= 0)
        s += ",\"step\":" + std::to_string(r.step);
      if (!r.nodes.empty())
        s += ",\"nodes\":\"" + escape(r.nodes) + "\"";
      if (!r.impl.empty())
        s += ",\"impl\":\"" + escape(r.impl) + "\"";
      s += "}}";
    }
    return s + "]}\n";
  }

private:
  /// A step, or the shapes and memory of a run's inputs (step -1, before
  /// the steps).
  static bool isStep(const ProfileRecord &r) {
    return r.category != "kernel" && r.category != "run";
  }
  int64_t categorySum(const char *category) const {
    int64_t ns = 0;
    for (const ProfileRecord &r : records_)
      if (r.category == category)
        ns += r.durationNs;
    return ns;
  }
  double perRun(int64_t ns) const {
    const uint32_t n = runs();
    return n ? double(ns) / 1e6 / n : 0;
  }
  static std::string fixed(double v, int digits) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
  }
  static std::string pad(const std::string &s, size_t width) {
    return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
  }
  static std::string escape(const std::string &in) {
    std::string out;
    for (char c : in) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += c;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(c));
        out += buf;
      } else {
        out += c;
      }
    }
    return out;
  }

  std::vector<ProfileRecord> records_;
};

/// The records tessera_session_get_profile gave, copied.
inline Profile makeProfile(const tessera_profile_record_t *records, size_t count) {
  std::vector<ProfileRecord> out;
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    const tessera_profile_record_t &r = records[i];
    out.push_back(ProfileRecord{r.name, r.category, r.nodes, r.impl, r.start_ns, r.duration_ns,
                                r.thread, r.step, r.parent, r.run});
  }
  return Profile(std::move(out));
}

} // namespace tessera::rt
