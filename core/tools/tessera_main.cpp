//===- tools/tessera_main.cpp - The tessera command-line tool ------------===//
//
//   tessera interpret MODEL.tir [--passes=...] [--seed N] [--print-all]
//   tessera ops [NAME]        the op set, or one op's signature and attributes
//   tessera passes            the registered passes
//   tessera import MODEL.onnx [--input-shape x=1,3,224,224]... [-o OUT.tir]
//   tessera conformance DIR... [--filter SUBSTR] [--verbose] [--summary]
//                      [--compile [--target LIST] [--opt-level N]]
//   tessera onnx-support [--markdown]
//   tessera version
//   tessera plugins, plugin-check, partition   (cmd_*.cpp)
//   tessera compile MODEL -o OUT.tsr [--target LIST] ...   (cmd_compile.cpp)
//   tessera run OUT.tsr [--inputs ...] ...                 (cmd_run.cpp)
//   tessera inspect OUT.tsr [--json]                       (cmd_inspect.cpp)
//
//===----------------------------------------------------------------------===//
#include "commands.h"
#include "compiled_runner.h"
#include "tool_support.h"

#include "frontend/onnx/conformance.h"
#include "frontend/onnx/converter.h"
#include "frontend/load.h"
#include "frontend/onnx/importer.h"
#include "interp/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "support/file.h"
#include "tessera/c/runtime.h"

#include <fmt/ranges.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>
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
  auto pm = passes::PassManager::fromPipeline(flags.passes, partition::allPasses(),
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
  std::vector<interp::Value> inputs;
  std::cout << fmt::format("model {} (module @{}), pipeline: {}\n", path, module->name(),
                           flags.passes.empty() ? "(none)" : flags.passes);
  for (const auto &p : main->params()) {
    const ir::Type &type = p->type();
    if (type.isSequence()) { // two elements, of dims 1 and 2 (rank 1 when any)
      std::vector<ir::Tensor> elements;
      for (int64_t k = 0; k < 2; ++k) {
        elements.push_back(makeInput(
            ir::Type::tensor(type.dtype(), ir::Shape(size_t(std::max<int64_t>(type.elementRank(), 1)), k + 1)),
            rng));
        printTensor(std::cout, fmt::format("input %{} element {}", p->name(), k), elements.back(),
                    printAll);
      }
      inputs.push_back(interp::Value::ofSequence(std::move(elements)));
      continue;
    }
    if (!type.isTensor())
      return tools::reportError("tessera", Error::format("input '%{}' is not a tensor", p->name()));
    inputs.push_back(interp::Value::ofTensor(makeInput(type, rng)));
    printTensor(std::cout, "input %" + p->name(), inputs.back().tensor, printAll);
  }
  auto start = std::chrono::steady_clock::now();
  auto result = interp::runValues(*module, inputs);
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

/// `tessera passes`: every pass with its summary and statistics; with
/// --markdown, docs/passes.md (generated from each pass's PassInfo, and
/// checked by a test so that it cannot drift).
int listPasses(bool markdown) {
  if (!markdown) {
    tools::printPasses(std::cout);
    return 0;
  }
  const passes::PassRegistry registry = partition::allPasses();
  std::cout
      << "# Passes and the pass manager\n\n"
         "Generated by `tessera passes --markdown` from each pass's `PassInfo`; a test fails\n"
         "when this file is stale.\n\n"
         "A pass declares what it is once, in a `PassInfo` next to its code: its command-line\n"
         "name, a one-line summary (`tessera passes`, `tessera-opt --list-passes`), what it\n"
         "does (below) and every statistic it counts; the pass manager refuses a statistic a\n"
         "pass does not declare. Passes are registered explicitly (no static registrars:\n"
         "linkers drop them from archives): `registerStandardPasses()` holds the passes of\n"
         "`core/passes/`, one per file, and `partition::allPasses()` adds the partition passes\n"
         "of `core/partition/` (what the tools read pipelines with), as MLIR registers every\n"
         "dialect's passes at the top. State a higher layer's passes need is given to them when\n"
         "they are created (`partition::allPasses(&state)`); `PassContext` holds only what every\n"
         "pass uses (its statistics). docs/design/0012-layers.md gives the layers.\n\n"
         "| pass | what it does | statistics (`--stats`) |\n|---|---|---|\n";
  for (const auto &[name, entry] : registry.entries()) {
    std::string stats;
    for (const passes::Statistic &st : entry.info->statistics)
      stats += fmt::format("{}`{}`: {}", stats.empty() ? "" : "<br>", st.name, st.description);
    std::cout << fmt::format("| `{}` | {} | {} |\n", name, entry.info->details, stats);
  }
  std::cout << "\nThe default pipeline (`tessera interpret`) is\n`"
            << passes::kDefaultPipeline
            << "`.\n\n"
               "## Instrumentation\n\n"
               "Both `tessera-opt` and `tessera interpret` take:\n\n"
               "- `--passes=a,b,c`: the pipeline; an unknown name is an error listing the known "
               "ones.\n"
               "- `--print-after=NAME` (repeatable), `--print-after-all`: the module after a "
               "pass, on stdout.\n"
               "- `--time-passes`: wall time per pass, on stderr.\n"
               "- `--stats`: what each pass counted (the statistics above), on stderr.\n"
               "- `--verify-each`: the verifier after every pass. On by default in the `dev` and\n"
               "  `asan-ubsan` presets (`TESSERA_ENABLE_ASSERTS_CHECKS`).\n\n"
               "Passes never recurse on the depth of the graph: they are written over "
               "`ir::postOrder` and\n"
               "`ir::rewrite` (`core/ir/visit.h`), and a test runs every pass over a chain of "
               "100,000 nodes.\n";
  return 0;
}

/// docs/ops.md: generated, and checked by a test so that it cannot drift.
int opsMarkdown() {
  std::cout << "# The core op set\n\n"
               "Generated by `tessera ops --markdown`; a test fails when this file is stale.\n"
               "Semantics follow ONNX (opsets 13-17) with NCHW layout. Pattern tells fusion and\n"
               "partitioning how outputs depend on inputs.\n\n"
               "| op | arguments | pattern | description |\n|---|---|---|---|\n";
  for (const ir::Op *op : ir::OpRegistry::global().all()) {
    std::string args;
    for (size_t i = 0; i < op->argNames.size(); ++i)
      args += (i ? ", " : "") + op->argNames[i];
    if (op->maxArgs < 0)
      args += "...";
    std::string description = op->description;
    for (size_t at = 0; (at = description.find('|', at)) != std::string::npos; at += 2)
      description.replace(at, 1, "\\|");
    std::cout << fmt::format("| [{0}](#{0}) | {1} | {2} | {3} |\n", op->name, args,
                             ir::opPatternName(op->pattern), description);
  }
  for (const ir::Op *op : ir::OpRegistry::global().all()) {
    std::cout << fmt::format("\n## {}\n\n{}\n", op->name, op->description);
    if (op->attrs.empty())
      continue;
    std::cout << "\n| attribute | kind | default | meaning |\n|---|---|---|---|\n";
    for (const auto &a : op->attrs) {
      std::string doc = a.doc;
      for (auto &c : doc)
        if (c == '|' || c == '\n')
          c = ' ';
      std::cout << fmt::format("| {} | {} | {} | {} |\n", a.name, ir::attrKindName(a.kind),
                               a.defaultValue ? "`" + ir::attrValueStr(*a.defaultValue) + "`"
                                              : std::string("required"),
                               doc);
    }
  }
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

int importOnnx(const std::string &path, const std::vector<std::string> &shapeSpecs,
               const std::string &outPath) {
  auto shapes = frontend::parseInputShapes(shapeSpecs);
  if (!shapes.ok())
    return tools::reportError("tessera", shapes.error());
  frontend::onnx::ImportOptions options;
  options.inputShapes = std::move(*shapes);
  if (!outPath.empty() && outPath != "-")
    if (Status s = checkWritableFile(outPath); !s.ok())
      return tools::reportError("tessera", s.error());
  auto module = frontend::importOnnxFile(path, options);
  if (!module.ok())
    return tools::reportError("tessera", module.error());
  if (outPath.empty() || outPath == "-") {
    ir::printModule(*module, std::cout);
    return 0;
  }
  std::ofstream out(outPath, std::ios::binary);
  if (!out)
    return tools::reportError("tessera", Error::format("cannot write '{}'", outPath));
  ir::printModule(*module, out);
  out.close();
  if (!out)
    return tools::reportError("tessera", Error::format("cannot write '{}'", outPath));
  return 0;
}

/// The converter table; docs/onnx-support.md is its --markdown form.
int onnxSupport(bool markdown) {
  const auto &registry = frontend::onnx::ConverterRegistry::standard();
  struct Row {
    std::string op, opsets, notes;
  };
  std::vector<Row> rows;
  for (const auto *spec : registry.all())
    rows.push_back({spec->opType, fmt::format("{}-{}", spec->minOpset, spec->maxOpset),
                    spec->notes});
  if (!registry.find("Constant"))
    rows.push_back({"Constant", "1-17",
                    "built into the importer: value, value_float(s), value_int(s); no strings "
                    "or sparse values"});
  std::sort(rows.begin(), rows.end(), [](const Row &a, const Row &b) { return a.op < b.op; });
  if (!markdown) {
    for (const auto &r : rows)
      std::cout << fmt::format("  {:<28} {:<7} {}\n", r.op, r.opsets, r.notes);
    std::cout << fmt::format("{} ONNX op type{}\n", rows.size(), rows.size() == 1 ? "" : "s");
    return 0;
  }
  std::cout << "# ONNX support\n\n"
               "Generated by `tessera onnx-support --markdown`; a test fails when this file is\n"
               "stale. The importer accepts models of opsets 7 to 17 of the default domain,\n"
               "and older ones when every converter they need covers their opset (column\n"
               "\"opsets\"). An op type is listed only when every ONNX backend test that uses\n"
               "it passes with the reference interpreter; models using any other op type are\n"
               "rejected with one error naming each unsupported op type. See\n"
               "docs/onnx-importer.md.\n\n";
  std::cout << fmt::format("{} op type{}.\n\n| op type | opsets | notes |\n|---|---|---|\n",
                           rows.size(), rows.size() == 1 ? "" : "s");
  for (auto r : rows) {
    for (auto &c : r.notes)
      if (c == '\n')
        c = ' ';
    for (size_t at = 0; (at = r.notes.find('|', at)) != std::string::npos; at += 2)
      r.notes.replace(at, 1, "\\|");
    std::cout << fmt::format("| {} | {} | {} |\n", r.op, r.opsets, r.notes);
  }
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
  bool markdown = false;
  ops->add_flag("--markdown", markdown, "Print the op set as Markdown (docs/ops.md)");

  auto *passesCmd = app.add_subcommand(
      "passes", "List the registered passes with their statistics (--markdown: docs/passes.md)");
  bool passesMarkdown = false;
  passesCmd->add_flag("--markdown", passesMarkdown, "Print the passes as Markdown (docs/passes.md)");

  auto *importCmd = app.add_subcommand("import", "Import an ONNX model (opsets 7-17) and print "
                                                 "it as text IR");
  std::string onnxModel, outPath;
  std::vector<std::string> inputShapes;
  importCmd->add_option("model", onnxModel, "ONNX model (.onnx)")->required();
  importCmd->add_option("--input-shape", inputShapes,
                        "Bind an input's shape, e.g. x=1,3,224,224 (repeatable)")
      ->allow_extra_args(false);
  importCmd->add_option("-o,--output", outPath, "Output .tir file ('-' or absent: stdout)");

  auto *confCmd = app.add_subcommand(
      "conformance", "Run ONNX backend tests (model.onnx + test_data_set_*) with the reference "
                     "interpreter, or compiled (--compile); exit status 1 on any failure");
  std::vector<std::string> confDirs;
  frontend::onnx::ConformanceOptions confOptions;
  confCmd->add_option("dirs", confDirs, "Test folders, or folders of test folders")->required();
  confCmd->add_option("--filter", confOptions.filter, "Only tests whose name contains this");
  confCmd->add_flag("--verbose", confOptions.verbose, "Print details of every test");
  confCmd->add_flag("--summary", confOptions.summary,
                    "List the unsupported op types by the number of tests they block");
  bool confCompile = false;
  tools::CompiledRunnerOptions confRunner;
  auto *confCompileFlag = confCmd->add_flag(
      "--compile", confCompile,
      "Compile each model (tessera compile) and run the artifact with the runtime instead of "
      "the reference interpreter");
  confCmd
      ->add_option("--target", confRunner.targets,
                   "With --compile: plugins to offload to, comma-separated, in priority order "
                   "(none: host only)")
      ->delimiter(',')
      ->needs(confCompileFlag);
  confCmd
      ->add_option("--opt-level", confRunner.optLevel,
                   "With --compile: host code optimisation level, 0-3")
      ->capture_default_str()
      ->check(CLI::Range(0, 3))
      ->needs(confCompileFlag);

  auto *supportCmd = app.add_subcommand("onnx-support", "List the ONNX op types the importer "
                                                        "converts");
  bool supportMarkdown = false;
  supportCmd->add_flag("--markdown", supportMarkdown,
                       "Print the table as Markdown (docs/onnx-support.md)");
  auto *version = app.add_subcommand("version", "Print the version");
  app.set_version_flag("--version", std::string("tessera ") + tessera_runtime_version(),
                       "Print the version and exit");
  const tools::Subcommand more[] = {tools::addPluginsCommand(app),
                                    tools::addPluginCheckCommand(app),
                                    tools::addPartitionCommand(app),
                                    tools::addCompileCommand(app),
                                    tools::addRunCommand(app),
                                    tools::addInspectCommand(app)};

  CLI11_PARSE(app, argc, argv);
  if (Status s = tools::applyLogLevel(logLevel); !s.ok())
    return tools::reportError("tessera", s.error());

  if (*interp)
    return interpret(model, flags, seed, printAll);
  if (*ops)
    return markdown ? opsMarkdown() : listOps(opName);
  if (*passesCmd)
    return listPasses(passesMarkdown);
  if (*importCmd)
    return importOnnx(onnxModel, inputShapes, outPath);
  if (*confCmd) {
    auto stats = std::make_shared<tools::CompiledRunStats>();
    if (confCompile)
      confOptions.run = tools::makeCompiledRunner(confRunner, stats);
    auto summary = frontend::onnx::runConformance(confDirs, confOptions, std::cout);
    if (!summary.ok())
      return tools::reportError("tessera", summary.error());
    // stdout's last line stays the counts (scripts read it): this goes to stderr.
    if (confCompile && (confOptions.summary || confOptions.verbose)) {
      std::cerr << fmt::format("compiled {} models: {} host steps, {} plugin steps; {} ran no "
                               "kernel (all folded at compile time, or copies only){}{}\n",
                               stats->models, stats->hostSteps, stats->externalSteps,
                               stats->noSteps.size(), stats->noSteps.empty() ? "" : ": ",
                               fmt::join(stats->noSteps, ", "));
    }
    return summary->failed > 0 ? 1 : 0;
  }
  if (*supportCmd)
    return onnxSupport(supportMarkdown);
  for (const auto &c : more)
    if (*c.app)
      return c.run();
  if (*version) {
    std::cout << "tessera " << tessera_runtime_version() << "\n";
    return 0;
  }
  return 0;
}
