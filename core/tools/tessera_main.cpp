//===- tools/tessera_main.cpp - The tessera command-line tool ------------===//
//
//   tessera interpret MODEL.tir [--passes=...] [--seed N] [--print-all]
//   tessera ops [NAME]        the op set, or one op's signature and attributes
//   tessera passes            the registered passes
//   tessera version
//
// Later issues add import, compile, run, inspect, partition and plugins.
//
//===----------------------------------------------------------------------===//
#include "tool_support.h"

#include "interp/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "tessera/c/runtime.h"

#include <chrono>
#include <cmath>
#include <iostream>
#include <random>

using namespace tessera;

namespace {

/// Deterministic inputs: floats uniform in [-1, 1), integers in [0, 10),
/// bools alternating, from a fixed seed.
ir::Tensor makeInput(const ir::Type &type, std::mt19937_64 &rng) {
  ir::Tensor t(type.dtype(), type.shape());
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::uniform_int_distribution<int64_t> integer(0, 9);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (ir::isFloat(t.dtype()))
      t.setDouble(i, real(rng));
    else if (ir::isBool(t.dtype()))
      t.setInt(i, i % 2);
    else
      t.setInt(i, integer(rng));
  }
  return t;
}

void printTensor(std::ostream &os, const std::string &label, const ir::Tensor &t, bool all) {
  os << label << ": " << t.type().str() << "\n";
  int64_t shown = all ? t.numel() : std::min<int64_t>(t.numel(), 16);
  os << "  [";
  for (int64_t i = 0; i < shown; ++i) {
    if (i)
      os << ", ";
    if (ir::isFloat(t.dtype()))
      os << fmt::format("{:.6g}", t.getDouble(i));
    else
      os << t.getInt(i);
  }
  os << (shown < t.numel() ? ", ...]" : "]") << "\n";
  if (t.numel() > 0 && ir::isFloat(t.dtype())) {
    double lo = INFINITY, hi = -INFINITY, sum = 0;
    for (int64_t i = 0; i < t.numel(); ++i) {
      double v = t.getDouble(i);
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      sum += v;
    }
    os << fmt::format("  min {:.6g}  max {:.6g}  mean {:.6g}  sum {:.6g}\n", lo, hi,
                      sum / double(t.numel()), sum);
  }
}

int interpret(const std::string &path, const tools::PipelineFlags &flags, uint64_t seed,
              bool printAll) {
  auto module = ir::parseModuleFile(path);
  if (!module.ok())
    return tools::reportError("tessera", module.error());
  auto pm = passes::PassManager::fromPipeline(flags.passes, passes::PassRegistry::standard(),
                                              flags.options());
  if (!pm.ok())
    return tools::reportError("tessera", pm.error());
  if (Status s = pm->run(*module, &std::cout); !s.ok())
    return tools::reportError("tessera", s.error());
  pm->printReport(std::cerr);

  ir::Function main = module->find("main");
  if (!main)
    return tools::reportError("tessera",
                              Error::format("{}: the module has no function '@main'", path));
  std::mt19937_64 rng(seed);
  std::vector<ir::Tensor> inputs;
  std::cout << fmt::format("model {} (module @{}), pipeline: {}\n", path, module->name(),
                           flags.passes.empty() ? "(none)" : flags.passes);
  for (const auto &p : main->params()) {
    if (!p->type().isTensor())
      return tools::reportError("tessera", Error::format("input '%{}' is not a tensor", p->name()));
    inputs.push_back(makeInput(p->type(), rng));
    printTensor(std::cout, "input %" + p->name(), inputs.back(), printAll);
  }
  auto start = std::chrono::steady_clock::now();
  auto result = interp::run(*module, inputs);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                  .count();
  if (!result.ok())
    return tools::reportError("tessera", result.error());
  auto outputs = result->flatten();
  for (size_t i = 0; i < outputs.size(); ++i)
    printTensor(std::cout, fmt::format("output {}", i), outputs[i], printAll);
  std::cout << fmt::format("reference interpreter: {:.2f} ms\n", ms);
  return 0;
}

int listOps(const std::string &name) {
  const auto &registry = ir::OpRegistry::global();
  if (name.empty()) {
    for (const ir::Op *op : registry.all())
      std::cout << fmt::format("  {:<20} {:<14} {}\n", op->name, ir::opPatternName(op->pattern),
                               op->description);
    return 0;
  }
  const ir::Op *op = registry.find(name);
  if (!op)
    return tools::reportError("tessera", Error::format("unknown op '{}'", name));
  std::cout << op->name << ": " << op->description << "\n  arguments:";
  for (const auto &a : op->argNames)
    std::cout << " " << a;
  if (op->maxArgs < 0)
    std::cout << "...";
  std::cout << "\n  attributes:\n";
  for (const auto &a : op->attrs)
    std::cout << fmt::format("    {:<32} {:<10} {:<16} {}\n", a.name, ir::attrKindName(a.kind),
                             a.defaultValue ? "= " + ir::attrValueStr(*a.defaultValue)
                                            : std::string("(required)"),
                             a.doc);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"tessera: a bring-your-own-codegen compiler for neural networks"};
  app.require_subcommand(1);
  std::string logLevel;
  tools::addLogLevelOption(app, logLevel);

  auto *interp = app.add_subcommand(
      "interpret", "Parse a text-IR model, run a pass pipeline and the reference interpreter "
                   "on deterministic random inputs, and print the outputs");
  std::string model;
  uint64_t seed = 0;
  bool printAll = false;
  tools::PipelineFlags flags;
  interp->add_option("model", model, "Model in text IR (.tir)")->required();
  interp->add_option("--seed", seed, "Seed of the random inputs")->capture_default_str();
  interp->add_flag("--print-all", printAll, "Print every element of inputs and outputs");
  flags.addTo(*interp, std::string(passes::kDefaultPipeline));

  auto *ops = app.add_subcommand("ops", "List the core op set, or describe one op");
  std::string opName;
  ops->add_option("name", opName, "An op to describe");

  auto *passesCmd = app.add_subcommand("passes", "List the registered passes");
  auto *version = app.add_subcommand("version", "Print the version");

  CLI11_PARSE(app, argc, argv);
  if (Status s = tools::applyLogLevel(logLevel); !s.ok())
    return tools::reportError("tessera", s.error());

  if (*interp)
    return interpret(model, flags, seed, printAll);
  if (*ops)
    return listOps(opName);
  if (*passesCmd) {
    for (const auto &[name, entry] : passes::PassRegistry::standard().entries())
      std::cout << fmt::format("  {:<24} {}\n", name, entry.description);
    return 0;
  }
  if (*version) {
    std::cout << "tessera " << tessera_runtime_version() << "\n";
    return 0;
  }
  return 0;
}
