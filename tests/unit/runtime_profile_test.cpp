//===- tests/unit/runtime_profile_test.cpp - Profiled runs ----------------===//
//
// The standard artifact (runtime_test_util.h: host add, a json plugin step
// running relu, host mul and add, a copy) run with profiling on: one record
// per run and per step, the json plugin's kernel inside its step (plugin ABI
// 1.6 through the real plugin), times that nest, the table and the Chrome
// trace of tessera/profile.hpp, and nothing recorded with profiling off.
//
//===----------------------------------------------------------------------===//
#include "runtime_test_util.h"

#include "runtime/session.h"

#include <nlohmann/json.hpp>

#include <set>

using namespace tessera;
using namespace tessera::runtime;
using namespace tessera::test::rt;

namespace {

std::unique_ptr<Session> standardSession() {
  auto m = LoadedModel::load(standardParts().bytes(), "model.tsr");
  INFO((m.ok() ? "" : m.error().str()));
  REQUIRE(m.ok());
  auto s = Session::create(*m, SessionOptions{1});
  REQUIRE(s.ok());
  return std::move(*s);
}

void runOnce(Session &s, std::vector<float> &x, std::vector<float> &y) {
  const std::vector<int64_t> shape{kRows, kCols};
  DLTensor tx = tensorOf(x.data(), shape), ty = tensorOf(y.data(), shape);
  REQUIRE(s.setInput(0, tx).ok());
  REQUIRE(s.setInput(1, ty).ok());
  Status st = s.run();
  INFO((st.ok() ? "" : st.error().str()));
  REQUIRE(st.ok());
}

std::vector<tessera_profile_record_t> recordsOf(const Session &s) {
  auto span = s.profile();
  return {span.begin(), span.end()};
}

} // namespace

TEST_CASE("a profiled run records each run, step and plugin kernel", "[runtime][profile]") {
  auto s = standardSession();
  std::vector<float> x = pattern(1), y = pattern(2);
  runOnce(*s, x, y);
  CHECK(s->profile().empty()); // off by default

  s->setProfiling(true);
  for (int r = 0; r < 3; ++r)
    runOnce(*s, x, y);
  const auto records = recordsOf(*s);
  // Per run: the run, 5 steps, relu inside the json step.
  REQUIRE(records.size() == 3 * 7);
  std::set<std::string> names;
  for (size_t i = 0; i < records.size(); ++i) {
    const tessera_profile_record_t &r = records[i];
    INFO(i << ": " << r.name << " (" << r.category << ")");
    CHECK(r.struct_size == sizeof(tessera_profile_record_t));
    CHECK(r.duration_ns >= 0);
    CHECK(r.start_ns >= 0);
    names.insert(r.name);
    if (std::string(r.category) == "run") {
      CHECK(r.parent == -1);
      CHECK(r.step == -1);
      CHECK(r.run == i / 7);
      continue;
    }
    REQUIRE(r.parent >= 0);
    REQUIRE(size_t(r.parent) < i);
    const tessera_profile_record_t &p = records[size_t(r.parent)];
    // A record lies within the one it ran inside, on the same thread.
    CHECK(r.start_ns >= p.start_ns);
    CHECK(r.start_ns + r.duration_ns <= p.start_ns + p.duration_ns);
    CHECK(r.run == p.run);
    if (std::string(r.category) == "kernel") {
      CHECK(std::string(p.category) == "plugin");
      CHECK(r.step == p.step);
      CHECK(std::string(r.name) == "relu");
      CHECK(std::string(r.impl) == "json:portable");
    } else {
      CHECK(std::string(p.category) == "run");
    }
  }
  CHECK(names == std::set<std::string>{"run", "add 'a0'", "json region 'json_relu'",
                                       "multiply 'a2'", "add 'out'", "copy 'x' to output 'out_x'",
                                       "relu"});
  // Steps in plan order within each run.
  CHECK(std::string(records[1].category) == "host");
  CHECK(records[1].step == 0);
  CHECK(std::string(records[2].category) == "plugin");
  CHECK(std::string(records[2].impl) == "json");
  CHECK(std::string(records[6].category) == "copy");

  // Off: the records stay, and runs add none.
  s->setProfiling(false);
  runOnce(*s, x, y);
  CHECK(s->profile().size() == records.size());
  // On again: a new profile.
  s->setProfiling(true);
  runOnce(*s, x, y);
  CHECK(s->profile().size() == 7);
  CHECK(s->profile()[0].run == 0);
}

TEST_CASE("a profile's table and Chrome trace", "[runtime][profile]") {
  auto s = standardSession();
  std::vector<float> x = pattern(3), y = pattern(4);
  s->setProfiling(true);
  for (int r = 0; r < 4; ++r)
    runOnce(*s, x, y);
  const auto span = s->profile();
  const tessera::rt::Profile profile = tessera::rt::makeProfile(span.data(), span.size());
  CHECK(profile.runs() == 4);
  CHECK(profile.stepsMsPerRun() <= profile.msPerRun());

  const auto table = profile.table();
  REQUIRE(table.size() == 6); // 5 steps, relu under the json step
  double share = 0;
  int kernels = 0;
  for (size_t i = 0; i < table.size(); ++i) {
    const tessera::rt::ProfileRow &row = table[i];
    CHECK(row.calls == 4);
    CHECK(row.msPerRun == Approx(row.totalMs / 4));
    if (row.parent >= 0) {
      ++kernels;
      CHECK(row.name == "relu");
      CHECK(table[size_t(row.parent)].category == "plugin");
      CHECK(size_t(row.parent) < i);
      CHECK(row.totalMs <= table[size_t(row.parent)].totalMs);
    } else {
      share += row.share;
      if (i > 0) // steps by time
        for (size_t j = 0; j < i; ++j)
          if (table[j].parent < 0)
            CHECK(table[j].totalMs >= row.totalMs);
    }
  }
  CHECK(kernels == 1);
  CHECK(share <= 1.0 + 1e-9);
  const std::string text = profile.format();
  CHECK(text.find("profile of 4 runs") != std::string::npos);
  CHECK(text.find("relu [json:portable]") != std::string::npos);
  CHECK(text.find("json region 'json_relu' (step 1, plugin)") != std::string::npos);

  // The trace: Chrome's JSON Trace Event Format.
  const auto trace = nlohmann::json::parse(profile.chromeTrace());
  REQUIRE(trace["traceEvents"].is_array());
  std::set<uint64_t> named, used;
  size_t complete = 0;
  for (const auto &e : trace["traceEvents"]) {
    REQUIRE(e["name"].is_string());
    REQUIRE(e["ph"].is_string());
    REQUIRE(e["pid"].is_number_integer());
    REQUIRE(e["tid"].is_number_integer());
    if (e["ph"] == "M") {
      if (e["name"] == "thread_name") {
        CHECK(named.insert(e["tid"].get<uint64_t>()).second); // one name per track
        CHECK(e["args"]["name"].is_string());
      }
      continue;
    }
    CHECK(e["ph"] == "X");
    CHECK(e["ts"].is_number());
    CHECK(e["dur"].is_number());
    CHECK(e["dur"].get<double>() >= 0);
    CHECK(e["cat"].is_string());
    used.insert(e["tid"].get<uint64_t>());
    ++complete;
  }
  CHECK(complete == span.size());
  CHECK(named == used); // one track per thread, each named
  CHECK(used.size() == 1);
}
