//===- bench/bench_ir.cpp - IR scalability benchmark ---------------------===//
//
// Builds a chain of N elementwise ops (default 100,000) and reports the
// median wall time of: printing it, parsing the printed text, the verifier,
// dce, cse, the default pipeline, and the reference interpreter on it.
//
//   bench_ir [N] [REPEATS]
//
//===----------------------------------------------------------------------===//
#include "interp/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "passes/pass_manager.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <vector>

using namespace tessera;

namespace {

double medianSeconds(int repeats, const std::function<void()> &body) {
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    auto start = std::chrono::steady_clock::now();
    body();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

ir::Module chainModule(int n) {
  ir::Type t = ir::Type::tensor(ir::DType::F32, {4});
  ir::Var x = ir::makeVar("x", t);
  ir::Expr e = x;
  for (int i = 0; i < n; ++i)
    e = ir::expectOk(ir::makeCall(i % 2 ? "relu" : "neg", {e}));
  ir::Module m("chain");
  m.set("main", ir::makeFunction({x}, e));
  return m;
}

void fail(const Error &e) {
  fmt::print(stderr, "bench_ir: {}\n", e.str());
  std::exit(1);
}

/// A positive count from argv, or exit with the usage line.
int countArg(const char *text) {
  char *end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || v <= 0 || v > 100000000) {
    fmt::print(stderr, "usage: bench_ir [N] [REPEATS]   (positive counts; got '{}')\n", text);
    std::exit(2);
  }
  return int(v);
}

} // namespace

int main(int argc, char **argv) {
  int n = argc > 1 ? countArg(argv[1]) : 100000;
  int repeats = argc > 2 ? countArg(argv[2]) : 5;
  ir::Module m = chainModule(n);
  std::string text = ir::printModule(m);
  fmt::print("IR benchmark: chain of {} ops, {} bytes of text IR, median of {} runs\n", n,
             text.size(), repeats);
  auto report = [&](const char *what, double s) {
    fmt::print("  {:<28} {:>9.2f} ms  {:>7.1f} ns/node\n", what, s * 1e3, s * 1e9 / n);
  };

  report("print", medianSeconds(repeats, [&] { text = ir::printModule(m); }));
  report("parse", medianSeconds(repeats, [&] {
           auto parsed = ir::parseModule(text, "chain.tir");
           if (!parsed.ok())
             fail(parsed.error());
         }));
  auto runPipeline = [&](std::string_view pipeline) {
    return medianSeconds(repeats, [&] {
      ir::Module copy = m;
      passes::PassManagerOptions o;
      o.verifyEach = false;
      auto pm = passes::PassManager::fromPipeline(pipeline, passes::PassRegistry::standard(), o);
      if (!pm.ok())
        fail(pm.error());
      if (Status s = pm->run(copy); !s.ok())
        fail(s.error());
    });
  };
  report("verify", runPipeline("verify"));
  report("dce", runPipeline("dce"));
  report("cse", runPipeline("cse"));
  report("default pipeline", runPipeline(passes::kDefaultPipeline));
  report("reference interpreter", medianSeconds(repeats, [&] {
           auto r = interp::run(m, {ir::Tensor(ir::DType::F32, {4})});
           if (!r.ok())
             fail(r.error());
         }));
  return 0;
}
