//===- tools/cmd_inspect.cpp - `tessera inspect` ---------------------------===//
//
//   tessera inspect MODEL.tsr [--json] [--steps]
//   tessera inspect MODEL.tsr --source PLUGIN_OR_TYPE_KEY [--format F]
//
// What an artifact holds, without loading any of its code (no plugin is
// needed): the container (format version, size, sections with their sizes
// and, for plugin modules, type keys), the metadata the compiler wrote
// (inputs, outputs, target triple and CPU, plugins and versions, regions per
// plugin) and the plan's numbers (steps by kind, arena, weights, activation
// bytes with and without reuse). The file is verified in full first (its
// digests), so a damaged file is reported, not described.
//
// --source prints the source of the plugin modules whose plugin name or type
// key matches (e.g. the C that the ccompiler plugin generated): those
// modules are loaded through their plugins' module factories (the plugins
// must be installed) and asked for their default source format, or for
// --format's (e.g. "plan" for dnnl: its oneDNN steps and weights).
//
//===----------------------------------------------------------------------===//
#include "commands.h"
#include "tool_support.h"

#include "plugin/registry.h"
#include "runtime/artifact.h"
#include "runtime/cpu_features.h"
#include "runtime/host_levels.h"
#include "runtime/plan.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <iostream>
#include <map>
#include <memory>

namespace tessera::tools {

namespace {

using nlohmann::json;

struct InspectArgs {
  std::string model;
  bool json = false;
  std::string source; // plugin name or type key, for --source
  std::string format; // the source format, for --source ("": the module's default)
  bool steps = false; // list the plan's steps in order
};

/// "x: f32[N, 3, 224, 224]": a negative dim d is symbol -1 - d of `symbols`
/// (the metadata's, runtime/plan.h).
std::string tensorStr(const json &t, const json &symbols) {
  if (t.contains("sequence_rank")) { // a list of tensors: "seq(f32[_, _])", a list of ...
    const int64_t rank = t.value("sequence_rank", int64_t(-1));
    std::string dims;
    for (int64_t i = 0; i < rank; ++i)
      dims += i ? ", _" : "_";
    return fmt::format("{}: seq({}{}) (a list of tensors; the data decides how many and their "
                       "sizes)",
                       t.value("name", std::string()), t.value("dtype", "?"),
                       rank >= 0 ? "[" + dims + "]" : std::string());
  }
  std::string shape;
  for (const auto &d : t.value("shape", json::array())) {
    const int64_t v = d.get<int64_t>();
    const size_t k = size_t(-1 - v);
    std::string dim = v >= 0 ? std::to_string(v)
                      : k < symbols.size() ? symbols[k].value("name", std::string("?"))
                                           : "?";
    shape += (shape.empty() ? "" : ", ") + dim;
  }
  return fmt::format("{}: {}[{}]", t.value("name", std::string()), t.value("dtype", "?"), shape);
}

Expected<json> describe(const std::string &path) {
  TS_ASSIGN_OR_RETURN(runtime::Artifact artifact, runtime::Artifact::readFile(path));
  json out;
  out["file"] = path;
  out["file_size"] = artifact.size();
  out["format_version"] = runtime::kArtifactFormatVersion;
  json sections = json::array();
  for (const runtime::Section &s : artifact.sections()) {
    json j = {{"kind", runtime::sectionKindName(s.kind)}, {"size", s.bytes.size()}};
    if (s.kind == uint32_t(runtime::SectionKind::ExternalModule)) {
      auto m = runtime::unpackExternalModule(s.bytes);
      if (!m)
        return std::move(m).error().addContext(path);
      j["type_key"] = std::string(m->typeKey);
    }
    sections.push_back(std::move(j));
  }
  out["sections"] = std::move(sections);

  auto metadata = artifact.sectionsOf(runtime::SectionKind::Metadata);
  if (metadata.size() != 1)
    return Error::format("{}: expected one metadata section, found {}", path, metadata.size());
  json meta = json::parse(metadata[0].bytes, nullptr, /*allow_exceptions=*/false);
  if (meta.is_discarded() || !meta.is_object())
    return Error::format("{}: the metadata section is not a JSON object", path);
  out["metadata"] = meta;
  // Which host code level this machine runs (runtime/host_levels.h).
  auto levels = runtime::hostLevels(meta.dump(),
                                    artifact.sectionsOf(runtime::SectionKind::HostCode).size());
  if (!levels)
    return std::move(levels).error().addContext(path);
  if (!levels->empty()) {
    auto here = runtime::chooseHostLevel(*levels);
    out["host_code_here"] = here ? json((*levels)[*here].cpu) : json(nullptr);
    if (!here)
      out["host_code_refused"] = here.error().str();
  }

  auto plans = artifact.sectionsOf(runtime::SectionKind::Plan);
  if (plans.size() != 1)
    return Error::format("{}: expected one plan section, found {}", path, plans.size());
  auto plan = runtime::parsePlan(plans[0].bytes);
  if (!plan)
    return std::move(plan).error().addContext(path + ": plan");
  size_t counts[8] = {0, 0, 0, 0, 0, 0, 0, 0}; // per StepKind
  for (const runtime::Step &s : plan->steps)
    ++counts[size_t(s.kind)];
  // Every step in the order the runtime executes them, with the buffers it
  // reads and writes.
  auto bufferStr = [&](uint32_t id) {
    const runtime::Buffer &b = plan->buffers[id];
    std::string who = !b.info.name.empty() ? b.info.name
                      : b.kind == runtime::BufferKind::Constant ? fmt::format("const#{}", id)
                                                                : fmt::format("#{}", id);
    return who + ": " + plan->str(b.info);
  };
  static const char *const kKinds[] = {"host", "plugin", "copy", "jump",
                                       "loop", "incr",   "set",  "seq"};
  json order = json::array();
  for (const runtime::Step &s : plan->steps) {
    json j = {{"kind", kKinds[size_t(s.kind)]}, {"symbol", s.symbol}, {"label", s.label}};
    if (s.kind == runtime::StepKind::External && s.module >= 0 &&
        size_t(s.module) < plan->modules.size())
      j["plugin"] = plan->modules[size_t(s.module)].plugin;
    if (s.kind == runtime::StepKind::Jump || s.kind == runtime::StepKind::LoopTest)
      j["target"] = s.target;
    json ins = json::array(), outs = json::array();
    for (size_t a = 0; a < s.args.size(); ++a)
      (a < s.numInputs ? ins : outs).push_back(bufferStr(s.args[a]));
    j["inputs"] = std::move(ins);
    j["outputs"] = std::move(outs);
    order.push_back(std::move(j));
  }
  out["plan"] = {{"steps", plan->steps.size()},
                 {"order", std::move(order)},
                 {"host_steps", counts[size_t(runtime::StepKind::Host)]},
                 {"external_steps", counts[size_t(runtime::StepKind::External)]},
                 {"copy_steps", counts[size_t(runtime::StepKind::Copy)]},
                 {"control_steps", counts[size_t(runtime::StepKind::Jump)] +
                                       counts[size_t(runtime::StepKind::LoopTest)] +
                                       counts[size_t(runtime::StepKind::Increment)] +
                                       counts[size_t(runtime::StepKind::SetSymbol)]},
                 {"sequence_steps", counts[size_t(runtime::StepKind::Sequence)]},
                 {"buffers", plan->buffers.size()},
                 {"arena_bytes", plan->arenaBytes},
                 {"activation_bytes_no_reuse", plan->activationBytesNoReuse},
                 {"weights_bytes", plan->weightsBytes}};
  return out;
}

void printText(const json &d, bool steps) {
  const json &meta = d["metadata"];
  const json &plan = d["plan"];
  std::cout << fmt::format("{}: Tessera artifact, format {}, {} bytes, Tessera {}\n",
                           d["file"].get<std::string>(), d["format_version"].get<uint32_t>(),
                           d["file_size"].get<uint64_t>(),
                           meta.value("tessera_version", std::string("?")));
  std::cout << "Sections:\n";
  for (const auto &s : d["sections"])
    std::cout << fmt::format(
        "  {:<16} {:>12} bytes{}\n", s["kind"].get<std::string>(), s["size"].get<uint64_t>(),
        s.contains("type_key") ? "  (type key '" + s["type_key"].get<std::string>() + "')"
                               : std::string());
  const json symbols = meta.value("symbols", json::array());
  for (const char *key : {"inputs", "outputs"}) {
    std::cout << fmt::format("{}{}:\n", char(std::toupper(key[0])), key + 1);
    for (const auto &t : meta.value(key, json::array()))
      std::cout << "  " << tensorStr(t, symbols) << "\n";
  }
  if (!symbols.empty()) {
    std::cout << "Symbols (sizes each run takes from its inputs, computes from them, or learns "
                 "from the data):\n";
    for (const auto &sym : symbols) {
      const int64_t lo = sym.value("lo", int64_t(0)), hi = sym.value("hi", int64_t(-1));
      const std::string bounds = fmt::format(
          "{}..{}", lo, hi >= 0 ? std::to_string(hi) : std::string("(no upper bound)"));
      if (sym.contains("formula"))
        std::cout << fmt::format("  {} = {}: {} ({})\n", sym.value("name", std::string("?")),
                                 sym.value("formula", std::string()), bounds,
                                 sym.value("defined_by", std::string()));
      else if (sym.contains("set_by"))
        std::cout << fmt::format("  {}: {}, the data decides ({})\n",
                                 sym.value("name", std::string("?")), bounds,
                                 sym.value("set_by", std::string()));
      else
        std::cout << fmt::format("  {}: {}\n", sym.value("name", std::string("?")), bounds);
    }
  }
  json target = meta.value("target", json::object());
  std::string triple = target.value("triple", std::string()),
              cpu = target.value("cpu", std::string());
  std::cout << fmt::format("Target: {} (cpu {})\n", triple.empty() ? "-" : triple,
                           cpu.empty() ? "-" : cpu);
  // What the native code needs: the host code's, then each plugin module's
  // that was compiled for a CPU (ccompiler).
  auto needs = [](const json &entry, const std::string &what) {
    const auto features = entry.find("features");
    if (features == entry.end() || !features->is_array())
      return;
    std::vector<std::string> names;
    for (const json &f : *features)
      if (f.is_string())
        names.push_back(f.get<std::string>());
    std::vector<std::string> missing = runtime::missingCpuFeatures(names);
    std::cout << fmt::format("  {} needs: {}\n", what,
                             names.empty() ? std::string("no ISA extension")
                                           : fmt::format("{}", fmt::join(names, " ")));
    if (!missing.empty())
      std::cout << fmt::format("  this CPU ({}) lacks: {}: the artifact will not load here\n",
                               runtime::cpuBrand(), fmt::join(missing, " "));
  };
  const json hostLevels = meta.value("host_code", json::array());
  if (meta.value("host_steps", 0) > 0 && hostLevels.size() <= 1) {
    needs(target, "host code");
  } else if (meta.value("host_steps", 0) > 0) {
    std::cout << fmt::format("Host code for {} CPUs, the first this CPU runs is loaded "
                             "(TESSERA_HOST_CPU=CPU forces one):\n",
                             hostLevels.size());
    for (const json &l : hostLevels) {
      std::vector<std::string> names;
      for (const json &f : l.value("features", json::array()))
        if (f.is_string())
          names.push_back(f.get<std::string>());
      std::cout << fmt::format("  {}, {} KiB{}\n    needs: {}\n", l.value("cpu", "?"),
                               l.value("size", uint64_t(0)) / 1024,
                               l.value("encoding", "") == "zlib" ? " (stored compressed)" : "",
                               fmt::join(names, " "));
      if (auto missing = runtime::missingCpuFeatures(names); !missing.empty())
        std::cout << fmt::format("    this CPU ({}) lacks: {}\n", runtime::cpuBrand(),
                                 fmt::join(missing, " "));
    }
    if (d.contains("host_code_here") && d["host_code_here"].is_string())
      std::cout << fmt::format("  this machine runs the host code for {}\n",
                               d["host_code_here"].get<std::string>());
    else
      std::cout << fmt::format("  the artifact will not load here: {}\n",
                               d.value("host_code_refused", std::string()));
  }
  for (const json &r : meta.value("regions", json::array()))
    if (r.is_object() && r.contains("cpu") && r["cpu"].is_string())
      needs(r, fmt::format("region {} ({}, compiled for {})", r.value("symbol", "?"),
                           r.value("plugin", "?"), r["cpu"].get<std::string>()));
  // Regions per plugin.
  std::map<std::string, std::pair<size_t, int64_t>> perPlugin; // regions, ops
  for (const auto &r : meta.value("regions", json::array())) {
    auto &e = perPlugin[r.value("plugin", std::string("?"))];
    ++e.first;
    e.second += r.value("ops", int64_t(0));
  }
  json plugins = meta.value("plugins", json::array());
  std::cout << (plugins.empty() ? "Plugins: none\n" : "Plugins:\n");
  for (const auto &p : plugins) {
    std::string name = p.value("name", std::string("?"));
    std::string keys;
    for (const auto &k : p.value("type_keys", json::array()))
      keys += (keys.empty() ? "" : ", ") + k.get<std::string>();
    auto [regions, ops] = perPlugin[name];
    std::cout << fmt::format("  {} {}: {} region{} ({} ops), type keys: {}\n", name,
                             p.value("version", std::string("?")), regions, regions == 1 ? "" : "s",
                             ops, keys);
  }
  // How the placement was chosen (tessera compile --placement measure).
  if (const json place = meta.value("placement", json()); place.is_object()) {
    // How a candidate's regions were decided (compile/placement.h's CandidateRule).
    auto rule = [](const json &j) {
      const std::string r = j.value("rule", std::string("measured"));
      return r == "priority"   ? std::string(" (priority order)")
             : r == "withheld" ? std::string(" (losing nodes withheld)")
                               : std::string();
    };
    std::cout << fmt::format("Placement: {} on {}, chose {}{}\n",
                             place.value("mode", std::string("?")),
                             place.value("cpu", std::string("?")),
                             place.value("targets", json::array()).empty()
                                 ? std::string("the host alone")
                                 : place["targets"].dump(),
                             rule(place));
    for (const json &c : place.value("candidates", json::array())) {
      const double ms = c.value("ms", -1.0);
      std::cout << fmt::format("  candidate {}{}: {}, {} region(s)\n",
                               c.value("targets", json::array()).empty()
                                   ? std::string("host only")
                                   : c["targets"].dump(),
                               rule(c),
                               ms < 0 ? std::string("not timed") : fmt::format("{:.3f} ms", ms),
                               c.value("regions", int64_t(-1)));
    }
    const json placed = place.value("regions", json::object());
    for (const auto &[key, r] : placed.items()) {
      const double ms = r.value("plugin_ms", -1.0), estimate = r.value("estimate", 0.0);
      std::cout << fmt::format(
          "  region {} ({}): {}: {}\n", r.value("target", std::string("?")),
          r.value("ops", std::string("?")),
          ms < 0 && estimate > 0
              ? fmt::format("estimated {:.3g}x the host's speed by its plugin", estimate)
              : fmt::format("{:.3f} ms, host {:.3f} ms", ms, r.value("host_ms", -1.0)),
          r.value("keep", false) ? "kept" : "sent back");
      for (const json &n : r.value("losing", json::array())) // nodes slower on the plugin
        std::cout << fmt::format("    losing node '{}': {:.3f} ms, host {:.3f} ms\n",
                                 n.value("node", std::string("?")), n.value("plugin_ms", -1.0),
                                 n.value("host_ms", -1.0));
    }
  }
  const size_t control = plan.value("control_steps", size_t(0)),
               sequence = plan.value("sequence_steps", size_t(0));
  std::cout << fmt::format("Steps: {} ({} host, {} plugin, {} copies{}{}){}\n",
                           plan["steps"].get<size_t>(), plan["host_steps"].get<size_t>(),
                           plan["external_steps"].get<size_t>(), plan["copy_steps"].get<size_t>(),
                           control ? fmt::format(", {} control", control) : std::string(),
                           sequence ? fmt::format(", {} on sequences", sequence) : std::string(),
                           steps ? ", in order:" : "");
  if (steps) {
    size_t i = 0;
    for (const auto &s : plan["order"]) {
      auto list = [](const json &a) {
        std::string t;
        for (const auto &x : a)
          t += (t.empty() ? "" : ", ") + x.get<std::string>();
        return t;
      };
      // The label says what runs ("tanh 't1'", "<region> (dnnl)"); the
      // symbol follows when the label does not name it.
      std::string symbol = s["symbol"].get<std::string>(), what = s["label"].get<std::string>();
      if (what.empty())
        what = symbol;
      else if (!symbol.empty() && what.find(symbol) == std::string::npos)
        what += " [" + symbol + "]";
      if (s.contains("target")) // a jump or a loop test: where it goes
        what += fmt::format(" -> step {}", s["target"].get<size_t>());
      std::cout << fmt::format("  {:>4}  {:<6}  {}: ({}) -> ({})\n", i++,
                               s["kind"].get<std::string>(), what, list(s["inputs"]),
                               list(s["outputs"]));
    }
  }
  std::cout << fmt::format("Memory: arena {} bytes (peak activations; {} bytes without reuse), "
                           "weights {} bytes\n",
                           plan["arena_bytes"].get<uint64_t>(),
                           plan["activation_bytes_no_reuse"].get<uint64_t>(),
                           plan["weights_bytes"].get<uint64_t>());
}

/// The source of every module of plugin (or type key) `which`, in file order.
Expected<std::string> moduleSources(const std::string &path, const std::string &which,
                                    const std::string &format) {
  TS_ASSIGN_OR_RETURN(runtime::Artifact artifact, runtime::Artifact::readFile(path));
  const plugin::PluginRegistry &registry = plugin::PluginRegistry::global();
  std::vector<std::string> available;
  std::string out;
  bool found = false;
  for (const runtime::Section &s : artifact.sectionsOf(runtime::SectionKind::ExternalModule)) {
    auto m = runtime::unpackExternalModule(s.bytes);
    if (!m)
      return std::move(m).error().addContext(path);
    std::string key(m->typeKey);
    std::shared_ptr<const plugin::LoadedPlugin> p = registry.findFactory(key);
    std::string label = p && p->name() != key ? p->name() + " (type key '" + key + "')" : key;
    if (std::find(available.begin(), available.end(), label) == available.end())
      available.push_back(label);
    if (which != key && !(p && p->name() == which))
      continue;
    found = true;
    if (!p)
      return Error::format("{}: no loaded plugin has a module factory for type key '{}'", path,
                           key);
    auto module = p->load(key, m->bytes);
    if (!module)
      return std::move(module).error().addContext(path);
    auto text = (*module)->source(format);
    if (!text)
      return std::move(text).error().addContext(path + ": module of plugin '" + p->name() + "'");
    out += *text;
    if (!out.empty() && out.back() != '\n')
      out += '\n';
  }
  if (!found) {
    std::string list;
    for (const std::string &a : available)
      list += (list.empty() ? "" : ", ") + a;
    return Error::format("no module of plugin '{}' in {}; it has: {}", which, path,
                         list.empty() ? "no plugin modules" : list);
  }
  return out;
}

} // namespace

Subcommand addInspectCommand(CLI::App &app) {
  auto args = std::make_shared<InspectArgs>();
  auto *cmd = app.add_subcommand(
      "inspect", "Describe a compiled artifact (.tsr): sections, inputs and outputs, target, "
                 "plugins, regions, steps and memory; loads none of its code");
  cmd->add_option("model", args->model, "The artifact")->required();
  cmd->add_flag("--json", args->json,
                "Print the description as JSON (plan.order lists every step)");
  cmd->add_flag("--steps", args->steps,
                "List the plan's steps in the order they run, with the buffers each reads and "
                "writes");
  auto *source = cmd->add_option("--source", args->source,
                                 "Print the source of the plugin modules of this plugin (name or "
                                 "type key), e.g. the C of the ccompiler plugin")
                     ->excludes("--json");
  cmd->add_option("--format", args->format,
                  "With --source: the source format (default: the module's own; e.g. 'plan' for "
                  "dnnl, its oneDNN steps and what became of each weight)")
      ->needs(source);
  return {cmd, [args] {
            if (!args->source.empty()) {
              auto text = moduleSources(args->model, args->source, args->format);
              if (!text)
                return reportError("tessera inspect", text.error());
              std::cout << *text;
              return 0;
            }
            auto d = describe(args->model);
            if (!d)
              return reportError("tessera inspect", d.error());
            if (args->json)
              std::cout << d->dump(2) << "\n";
            else
              printText(*d, args->steps);
            return 0;
          }};
}

} // namespace tessera::tools
