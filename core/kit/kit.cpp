//===- kit/kit.cpp - The conformance kit's runner -------------------------===//
//
// The kit's runner: pushes each case (the sample catalogue's,
// plugin_kit_samples.cpp; each pattern's instantiations,
// plugin_kit_patterns.cpp) through a loaded plugin (checker, codegen, save,
// load through its module factory, damaged bytes) and compares with the
// reference interpreter (plugin_kit_compare.cpp). See plugin_kit.h.
//
//===----------------------------------------------------------------------===//
#include "kit/kit.h"

#include "interp/interpreter.h"
#include "bridge/plugin_bridge.h"
#include "kit/internal.h"
#include "plugin/probe.h"
#include "plugin/registry.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <ostream>
#include <set>

namespace tessera::kit {

using ir::Type;

using detail::hashString;

//===----------------------------------------------------------------------===//
// The runner
//===----------------------------------------------------------------------===//

namespace {

/// A tensor the plugin must overwrite: NaN for floats, 0x5a bytes otherwise.
ir::Tensor outputBuffer(const Type &type) {
  ir::Tensor t(type.dtype(), type.shape());
  if (ir::isFloat(t.dtype()))
    for (int64_t i = 0; i < t.numel(); ++i)
      t.setDouble(i, std::numeric_limits<double>::quiet_NaN());
  else if (t.nbytes())
    std::memset(t.bytes(), 0x5a, t.nbytes());
  return t;
}

struct Outcome {
  enum Kind { Pass, Fail, Declined } kind = Pass;
  std::string detail;
};

Outcome failed(std::string why) {
  return {Outcome::Fail, std::move(why)};
}

/// Runs `fn` of `module` on the inputs (and the values of its symbols) and
/// compares with `want`.
Outcome runModule(const plugin::PluginModule &module, const std::string &symbol,
                  const std::vector<ir::Tensor> &inputs, const std::vector<ir::Tensor> &extra,
                  const std::vector<ir::Tensor> &want, const std::vector<int64_t> &values = {}) {
  auto fn = module.function(symbol);
  if (!fn.ok())
    return failed("function: " + fn.error().str());
  std::vector<ir::Tensor> outputs;
  for (const ir::Tensor &w : want)
    outputs.push_back(outputBuffer(w.type()));
  std::vector<DLTensor> dl;
  const std::vector<ir::Tensor> *lists[] = {&inputs, &extra, &outputs};
  for (const std::vector<ir::Tensor> *list : lists)
    for (const ir::Tensor &t : *list)
      dl.push_back(t.dl());
  std::vector<const DLTensor *> args;
  for (const DLTensor &t : dl)
    args.push_back(&t);
  if (Status s = fn->call(args, values); !s.ok())
    return failed("call: " + s.error().str());
  for (size_t i = 0; i < want.size(); ++i) {
    ir::Tensor poison = outputBuffer(want[i].type());
    if (want[i].nbytes() > 0 &&
        std::memcmp(outputs[i].bytes(), poison.bytes(), outputs[i].nbytes()) == 0)
      return failed(fmt::format("output {} was not written (it still holds the kit's fill: {})", i,
                                ir::isFloat(want[i].dtype()) ? "NaN" : "0x5a bytes"));
    if (std::string diff = compareTensors(outputs[i], want[i]); !diff.empty())
      return failed(fmt::format("output {}: {}", i, diff));
  }
  return {};
}

/// The module factory on damaged copies of a saved module (a bounded,
/// seeded set): every truncation must be refused, and no damage may crash
/// or hang it (the child's marks name the copy). A flipped byte may be
/// accepted: a module's bytes hold weights that no factory can tell from
/// others, and an artifact's SHA-256 digests keep damage from reaching the
/// factory (docs/design/0011).
Outcome fuzzFactory(const plugin::LoadedPlugin &plugin, const std::string &typeKey,
                    const std::string &bytes, std::mt19937_64 &rng, plugin::ChildChannel &channel) {
  const size_t n = bytes.size();
  std::set<size_t> lengths = {0, 1, n / 2, n > 0 ? n - 1 : 0};
  for (int i = 0; i < 4 && n > 1; ++i)
    lengths.insert(size_t(rng() % n));
  for (size_t len : lengths) {
    if (len >= n)
      continue;
    channel.mark(plugin.name(), fmt::format("the module factory '{}' on the saved module truncated to {} of {} "
                             "bytes",
                             typeKey, len, n),
                 plugin::callIsolation().checkerTimeout);
    if (auto loaded = plugin.load(typeKey, std::string_view(bytes).substr(0, len)); loaded.ok())
      return failed(fmt::format("the module factory '{}' accepted the saved module truncated to "
                                "{} of {} bytes",
                                typeKey, len, n));
  }
  for (int i = 0; i < 8 && n > 0; ++i) {
    // Half the flips land in the first 64 bytes, where formats keep their
    // headers and lengths.
    size_t at = size_t(rng() % (i % 2 == 0 ? std::min<size_t>(n, 64) : n));
    std::string damaged = bytes;
    damaged[at] = char(uint8_t(damaged[at]) ^ uint8_t(1 + rng() % 255));
    channel.mark(plugin.name(), fmt::format("the module factory '{}' on the saved module with byte {} of {} "
                             "changed",
                             typeKey, at, n),
                 plugin::callIsolation().checkerTimeout);
    (void)plugin.load(typeKey, damaged); // refused or accepted: either is fine
  }
  return {};
}

Outcome runCase(const plugin::LoadedPlugin &plugin, const KitCase &kc, const std::string &symbol,
                uint64_t seed, std::string *source, plugin::ChildChannel &channel) {
  const plugin::CallIsolation limits = plugin::callIsolation();
  // 1. The checker.
  plugin::CheckResult check;
  if (kc.pattern.empty()) {
    auto desc = bridge::OpDescHolder::fromCall(*kc.ops.at(0)->as<ir::CallNode>());
    if (!desc.ok())
      return failed("internal: " + desc.error().str());
    channel.mark(plugin.name(), "check_op", limits.checkerTimeout);
    check = plugin.checkOp((*desc)->desc());
  } else {
    auto list = bridge::OpDescList::fromCalls(kc.ops);
    if (!list.ok())
      return failed("internal: " + list.error().str());
    channel.mark(plugin.name(), "check_pattern", limits.checkerTimeout);
    check = plugin.checkPattern(kc.pattern, std::span(list->data(), list->size()));
  }
  // An SDK checker that throws declines with "checker error: ..." (the C
  // ABI has no error channel there): a broken checker, not a decision.
  if (!check.supported && check.reason.starts_with(plugin::kCheckerErrorPrefix))
    return failed("the checker failed instead of deciding: " + check.reason);
  if (!check.supported)
    return {Outcome::Declined, check.reason.empty() ? "(no reason given)" : check.reason};

  // 2. Codegen, save, load through the module factory.
  ir::Function main = kc.module.find("main");
  auto graph = bridge::GraphHolder::fromFunction(main, symbol, plugin.codegenFlags());
  if (!graph.ok())
    return failed("internal: " + graph.error().str());
  if (source)
    *source = (*graph)->json();
  channel.mark(plugin.name(), "codegen.compile", limits.codegenTimeout);
  auto compiled = plugin.compile((*graph)->graph());
  if (!compiled.ok())
    return failed("compile: " + compiled.error().str());
  channel.mark(plugin.name(), "the module's save", limits.codegenTimeout);
  auto bytes = (*compiled)->save();
  if (!bytes.ok())
    return failed("save: " + bytes.error().str());
  channel.mark(plugin.name(), fmt::format("the module factory '{}' on the saved module", (*compiled)->typeKey()),
               limits.codegenTimeout);
  auto loaded = plugin.load((*compiled)->typeKey(), *bytes);
  if (!loaded.ok())
    return failed("load: " + loaded.error().str());

  // 3. Random inputs, the reference, both modules; a symbolic case at each
  // of its sizes, with the values its symbols take there.
  std::mt19937_64 rng(seed ^ hashString(kc.label) ^ 0x5eed);
  const std::vector<ir::Module> plain{kc.module};
  for (const ir::Module &at : kc.sizes.empty() ? plain : kc.sizes) {
    const ir::Function atMain = at.find("main");
    std::vector<int64_t> values;
    std::string size;
    if (!kc.sizes.empty()) {
      auto v = symbolValuesAt(main, atMain, (*graph)->symbolDims());
      if (!v.ok())
        return failed("internal: " + v.error().str());
      values = std::move(*v);
      size = fmt::format(" at {}", atMain->params()[0]->type().str());
    }
    std::vector<ir::Tensor> inputs;
    for (size_t i = 0; i < atMain->params().size(); ++i)
      inputs.push_back(randomTensor(atMain->params()[i]->type(), kc.inputDomains.at(i), rng));
    channel.mark("", "the reference interpreter", std::chrono::milliseconds(-1));
    auto want = interp::run(at, inputs);
    if (!want.ok())
      return failed("internal: reference interpreter: " + want.error().str());
    std::vector<ir::Tensor> expected = want->flatten();
    const auto &extra = (*graph)->extraInputs();
    channel.mark(plugin.name(), fmt::format("a call of the compiled module's '{}'{}", symbol, size),
                 limits.codegenTimeout);
    Outcome o = runModule(**compiled, symbol, inputs, extra, expected, values);
    if (o.kind != Outcome::Pass) {
      o.detail = "compiled module" + size + ": " + o.detail;
      return o;
    }
    channel.mark(plugin.name(), fmt::format("a call of the reloaded module's '{}'{}", symbol, size),
                 limits.codegenTimeout);
    o = runModule(**loaded, symbol, inputs, extra, expected, values);
    if (o.kind != Outcome::Pass) {
      o.detail = "module reloaded through factory '" + (*compiled)->typeKey() + "'" + size +
                 ": " + o.detail;
      return o;
    }
  }
  // 4. Damaged bytes.
  return fuzzFactory(plugin, (*compiled)->typeKey(), *bytes, rng, channel);
}

/// runCase in a child process when plugin calls are isolated: a crash,
/// abort, exit or hang is this case's FAIL, naming the step, and the kit
/// goes on with the next case.
Outcome runCaseIsolated(const plugin::LoadedPlugin &plugin, const KitCase &kc,
                        const std::string &symbol, uint64_t seed, std::string *source) {
  const plugin::CallIsolation limits = plugin::callIsolation();
  if (!limits.enabled) {
    plugin::ChildChannel inProcess;
    return runCase(plugin, kc, symbol, seed, source, inProcess);
  }
  plugin::ChildEnd end = plugin::runChild(
      [&](plugin::ChildChannel &channel) -> Expected<std::string> {
        std::string text;
        Outcome o = runCase(plugin, kc, symbol, seed, &text, channel);
        // kind, the detail's length, the detail, the source.
        std::string out(1, char('0' + int(o.kind)));
        out += fmt::format("{:08x}", o.detail.size());
        return out + o.detail + text;
      },
      limits.checkerTimeout);
  if (end.kind == plugin::ChildEnd::Failed)
    return failed("internal: " + end.payload);
  if (end.kind != plugin::ChildEnd::Answered)
    return failed(fmt::format("{} {} in {}", end.lastPlugin.empty() ? "Tessera" : "the plugin",
                              end.how(), end.lastMark.empty() ? "the case" : end.lastMark));
  const std::string &a = end.payload;
  size_t size = a.size() >= 9 ? std::stoul(a.substr(1, 8), nullptr, 16) : 0;
  if (a.size() < 9 + size || a[0] < '0' || a[0] > '2')
    return failed("internal: a malformed answer from the case's child process");
  if (source)
    *source = a.substr(9 + size);
  return {Outcome::Kind(a[0] - '0'), a.substr(9, size)};
}

class Reporter {
public:
  Reporter(std::ostream &out, bool verbose) : out_(out), verbose_(verbose) {}

  void report(const std::string &label, const Outcome &o, const std::string &source) {
    switch (o.kind) {
    case Outcome::Pass:
      ++summary.passed;
      out_ << "PASS " << label << "\n";
      break;
    case Outcome::Fail:
      ++summary.failed;
      out_ << "FAIL " << label << ": " << o.detail << "\n";
      if (verbose_ && !source.empty())
        out_ << "  graph: " << source << "\n";
      break;
    case Outcome::Declined:
      ++summary.declined;
      out_ << "DECLINED " << label << ": " << o.detail << "\n";
      break;
    }
    if (verbose_ && o.kind == Outcome::Pass && !source.empty())
      out_ << "  graph: " << source << "\n";
    out_.flush();
  }

  KitSummary summary;

private:
  std::ostream &out_;
  bool verbose_;
};

} // namespace

KitSummary runKit(const plugin::LoadedPlugin &plugin, const KitOptions &options, std::ostream &out) {
  Reporter rep(out, options.verbose);
  out << fmt::format("plugin-check: plugin '{}' {} (ABI {}.{}) from {}\n", plugin.name(),
                     plugin.version(), plugin.abiMajor(), plugin.abiMinor(), plugin.path());
  out << "comparing with the reference interpreter: f32/f64 rtol 1e-4 atol 1e-5, f16/bf16 rtol "
         "1e-2 atol 1e-3, integers and bool exact\n";
  int symbolCount = 0;
  bool any = false;
  auto run = [&](const KitCase &kc) {
    std::string source;
    std::string symbol = fmt::format("tessera_kit_{}", symbolCount++);
    Outcome o = runCaseIsolated(plugin, kc, symbol, options.seed, &source);
    rep.report(kc.label, o, source);
  };

  std::set<std::string> seen;
  for (const std::string &op : plugin.ops()) {
    if (!seen.insert(op).second || (!options.filter.empty() && op != options.filter))
      continue;
    any = true;
    std::vector<OpSample> samples = samplesFor(op);
    if (samples.empty()) {
      rep.report(op, failed("no samples for op " + op), {});
      continue;
    }
    for (size_t k = 0; k < samples.size(); ++k) {
      const OpSample &s = samples[k];
      auto kc = buildOpCase(s, options.seed);
      if (!kc.ok()) {
        rep.report(s.label(), failed("internal: " + kc.error().str()), {});
        continue;
      }
      run(*kc);
      // A plugin that takes symbolic dims: the first sample again over a
      // symbolic dim 0, where the op admits one.
      if (k == 0 && plugin.takesSymbolicDims())
        if (std::optional<KitCase> sym = buildSymbolicCase(*kc))
          run(*sym);
    }
  }
  for (const auto &[name, text] : plugin.patterns()) {
    if (!options.filter.empty() && name != options.filter)
      continue;
    any = true;
    auto pattern = bridge::parsePattern(name, text);
    if (!pattern.ok()) {
      rep.report("pattern " + name, failed(pattern.error().str()), {});
      continue;
    }
    for (const PatternVariant &v : instantiatePattern(*pattern, plugin.name(), options.seed)) {
      if (v.kase)
        run(*v.kase);
      else
        rep.report(v.label, failed(v.error), {});
    }
  }
  if (!any)
    rep.report(options.filter.empty() ? "plugin" : options.filter,
               failed(!options.filter.empty()
                          ? "the plugin claims no op or pattern named '" + options.filter + "'"
                      : plugin.hasPartitionHook()
                          ? "the plugin claims no op and no pattern (the kit does not test the "
                            "whole-graph partition hook)"
                          : "the plugin claims no op and no pattern"),
               {});
  out << fmt::format("{} passed, {} failed, {} declined\n", rep.summary.passed, rep.summary.failed,
                     rep.summary.declined);
  return rep.summary;
}

} // namespace tessera::kit
