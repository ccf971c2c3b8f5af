//===- bench/bench_partition.cpp - How partitioning scales ----------------===//
//
// Synthetic chains of 10^3, 10^4 and 10^5 op calls whose segments alternate
// between ops the shipped json plugin claims (dense, add, relu, sigmoid) and
// one it does not list (sin), so json regions interleave with host ops:
//
//   x -> dense -> add -> relu -> sigmoid -> sin -> dense -> ...
//
// 1. Partitioning as partitionModule runs it (kPartitionPipeline: the
//    `partition` pass), target json: median of 5 runs, total ms and ns per
//    node.
// 2. The same with the five passes one after the other (kPartitionSteps),
//    which rebuild the IR after each step: the comparison that shows what
//    deciding on the compact index saves.
// 3. partition-graph alone on the same chains already split into Compiler
//    regions (what merge-compiler-regions leaves), which needs no plugin.
// 4. The floor: what any pass pays per node on the same graph, whatever it
//    decides. "walk" indexes it (NodeIndex: the read every pass starts
//    with); "copy" rebuilds every node once (the least a pass that changes
//    the graph writes). Their growth from 10^3 to 10^5 is the IR's memory
//    layout meeting the caches, not partitioning.
// A pass that fails is reported and skipped. --only pipeline|steps|lift|floor
// runs one part; --sizes N,N,... replaces 10^3,10^4,10^5 (e.g. for
// cachegrind).
//
//===----------------------------------------------------------------------===//
#include "ir/expr.h"
#include "ir/module.h"
#include "ir/visit.h"
#include "partition/partition.h"
#include "passes/pass_manager.h"
#include "plugin/registry.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

using namespace tessera;
using namespace tessera::ir;

namespace {

constexpr int64_t kWidth = 16;
constexpr int kSegment = 5; // ops per segment: 4 json ops, then sin

Expr constant(Shape shape, double value) {
  std::vector<double> v(size_t(numElements(shape)), value);
  return makeConstant(Tensor::fromDoubles(DType::F32, std::move(shape), v));
}

/// The json part of one segment, applied to `x`.
Expr jsonOps(const Expr &x, const Expr &w, const Expr &b, int i) {
  Expr d = expectOk(makeCall("dense", {x, w}, {}, fmt::format("dense_{}", i)));
  Expr a = expectOk(makeCall("add", {d, b}, {}, fmt::format("add_{}", i)));
  Expr r = expectOk(makeCall("relu", {a}, {}, fmt::format("relu_{}", i)));
  return expectOk(makeCall("sigmoid", {r}, {}, fmt::format("sigmoid_{}", i)));
}

/// A chain of about `nodes` op calls; with `regions`, each json part is
/// already a Compiler="json" local function.
Module chain(int64_t nodes, bool regions) {
  Type t = Type::tensor(DType::F32, {1, kWidth});
  Var x = makeVar("x", t);
  Expr w = constant({kWidth, kWidth}, 0.01), b = constant({1, kWidth}, 0.1);
  Expr cur = x;
  for (int i = 0; i * kSegment < nodes; ++i) {
    if (regions) {
      Var p = makeVar("p", t);
      Function f = makeFunction({p}, jsonOps(p, w, b, i), Attrs{{"Compiler", std::string("json")}});
      cur = expectOk(makeLocalCall(f, {cur}, fmt::format("region_{}", i)));
    } else {
      cur = jsonOps(cur, w, b, i);
    }
    cur = expectOk(makeCall("sin", {cur}, {}, fmt::format("sin_{}", i)));
  }
  Module m("bench");
  m.set("main", makeFunction({x}, cur));
  return m;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double nowMs() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

/// Runs `pipeline`'s passes one by one on copies of `m`, 5 times; prints
/// the median total and per pass. Returns false when a pass fails.
bool timePipeline(const char *label, const Module &m, int64_t nodes, std::string_view pipeline,
                  partition::PartitionState *state) {
  std::vector<std::string> names;
  for (size_t s = 0; s <= pipeline.size();) {
    size_t e = std::min(pipeline.find(',', s), pipeline.size());
    names.emplace_back(pipeline.substr(s, e - s));
    s = e + 1;
  }
  std::vector<std::vector<double>> perPass(names.size());
  std::vector<double> totals;
  for (int run = 0; run < 5; ++run) {
    Module copy = m;
    if (state)
      state->log = {};
    passes::PassContext ctx;
    const passes::PassRegistry passes = partition::allPasses(state);
    double total = 0;
    for (size_t i = 0; i < names.size(); ++i) {
      auto pass = passes.find(names[i])->create();
      double t0 = nowMs();
      Status s = pass->run(copy, ctx);
      double dt = nowMs() - t0;
      if (!s.ok()) {
        std::printf("  %-12s n=%-7lld %s failed: %s\n", label, (long long)nodes,
                    names[i].c_str(), s.error().str().c_str());
        return false;
      }
      perPass[i].push_back(dt);
      total += dt;
    }
    totals.push_back(total);
  }
  double ms = median(totals);
  std::printf("  %-12s n=%-7lld total %9.2f ms  %8.1f ns/node   (", label, (long long)nodes, ms,
              ms * 1e6 / double(nodes));
  for (size_t i = 0; i < names.size(); ++i)
    std::printf("%s%s %.2f ms", i ? ", " : "", names[i].c_str(), median(perPass[i]));
  std::printf(")\n");
  return true;
}

/// Times `work` on `m`'s main function 5 times; prints the median.
template <typename Work>
void timeFloor(const char *label, const Module &m, int64_t nodes, Work work) {
  const Function fn = m.find("main");
  std::vector<double> times;
  for (int run = 0; run < 5; ++run) {
    double t0 = nowMs();
    work(fn);
    times.push_back(nowMs() - t0);
  }
  double ms = median(times);
  std::printf("  %-12s n=%-7lld total %9.2f ms  %8.1f ns/node\n", label, (long long)nodes, ms,
              ms * 1e6 / double(nodes));
}

} // namespace

int main(int argc, char **argv) {
  std::string only; // "", "pipeline", "steps", "lift" or "floor"
  std::vector<int64_t> sizes = {1000, 10000, 100000};
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--only" && i + 1 < argc &&
        (std::string_view(argv[i + 1]) == "pipeline" || std::string_view(argv[i + 1]) == "steps" ||
         std::string_view(argv[i + 1]) == "lift" || std::string_view(argv[i + 1]) == "floor")) {
      only = argv[++i];
    } else if (a == "--sizes" && i + 1 < argc) {
      sizes.clear();
      for (std::string_view list = argv[++i]; !list.empty();) {
        size_t e = std::min(list.find(','), list.size());
        sizes.push_back(std::atoll(std::string(list.substr(0, e)).c_str()));
        list.remove_prefix(std::min(e + 1, list.size()));
      }
    } else {
      std::fprintf(stderr,
                   "usage: bench_partition [--only pipeline|steps|lift|floor] [--sizes N,N,...]\n");
      return 2;
    }
  }
  auto want = [&](const char *part) { return only.empty() || only == part; };
  auto &registry = plugin::PluginRegistry::global();
  auto state = partition::PartitionState::fromNames({"json"}, registry);
  std::printf("bench_partition: chains of dense/add/relu/sigmoid (json) and sin (host)\n");
  if ((want("pipeline") || want("steps")) && !state.ok())
    std::printf("  pipelines skipped: %s\n", state.error().str().c_str());
  if (want("pipeline") && state.ok()) {
    std::printf("partition pipeline (%s), target json (median of 5):\n",
                std::string(partition::kPartitionPipeline).c_str());
    for (int64_t n : sizes)
      if (!timePipeline("pipeline", chain(n, false), n, partition::kPartitionPipeline,
                        state->get()))
        break;
  }
  if (want("steps") && state.ok()) {
    std::printf("the five passes one after the other (median of 5):\n");
    for (int64_t n : sizes)
      if (!timePipeline("steps", chain(n, false), n, partition::kPartitionSteps, state->get()))
        break;
  }
  if (want("lift")) {
    std::printf("partition-graph alone on pre-formed regions (median of 5):\n");
    partition::PartitionState empty;
    for (int64_t n : sizes)
      timePipeline("lift", chain(n, true), n, "partition-graph", &empty);
  }
  if (want("floor")) {
    std::printf("the floor: index the graph, rebuild every node (median of 5):\n");
    for (int64_t n : sizes) {
      Module m = chain(n, false);
      timeFloor("walk", m, n, [](const Function &fn) {
        NodeIndex index(fn->body(), /*intoFunctions=*/false);
        if (index.size() == 0)
          std::abort();
      });
      // Every node depends on the parameter: replacing it rebuilds them all.
      timeFloor("copy", m, n, [](const Function &fn) {
        Var x = makeVar("x", fn->params()[0]->type());
        const ExprNode *old = fn->params()[0].get();
        Expr body = expectOk(rewrite(
            fn->body(),
            [&](const Expr &orig, const Expr &rebuilt) -> Expected<Expr> {
              return orig.get() == old ? Expr(x) : rebuilt;
            },
            /*intoFunctions=*/false));
        if (body == fn->body())
          std::abort();
      });
    }
  }
  return 0;
}
