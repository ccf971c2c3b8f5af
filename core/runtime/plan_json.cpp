//===- runtime/plan_json.cpp - Executor plan: JSON ----------------------===//
//
// The JSON form of a plan: what the artifact's plan section holds.
// nlohmann/json stays private to this file.
//
//===----------------------------------------------------------------------===//
#include "runtime/plan.h"
#include "runtime/plan_internal.h"
#include "tessera/c/dtype.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>
#include <map>

namespace tessera::runtime {

using plan_detail::stepName;

namespace {

using nlohmann::json;

const char *kBufferKinds[] = {"input", "output", "constant", "activation"};
const char *kStepKinds[] = {"host",      "external",  "copy",       "jump",
                            "loop_test", "increment", "set_symbol", "sequence"};

json infoJson(const TensorInfo &info) {
  json j = json::object();
  if (!info.name.empty())
    j["name"] = info.name;
  j["dtype"] = dtypeString(info.dtype);
  j["shape"] = info.shape;
  if (info.sequence)
    j["sequence_rank"] = info.elementRank; // a sequence, its elements' rank (-1: any)
  return j;
}

/// Checked reads; errors name the field by its JSON path.
class Reader {
public:
  static Expected<const json *> field(const json &obj, const std::string &path, const char *key,
                                      bool required = true) {
    auto it = obj.find(key);
    if (it == obj.end()) {
      if (required)
        return Error::format("{}: missing field '{}'", path, key);
      return static_cast<const json *>(nullptr);
    }
    return &*it;
  }

  static Expected<uint64_t> u64(const json &j, const std::string &path) {
    if (!j.is_number_unsigned() && !(j.is_number_integer() && j.get<int64_t>() >= 0))
      return Error::format("{}: expected an unsigned integer, got {}", path, j.dump());
    return j.get<uint64_t>();
  }

  static Expected<uint64_t> u64Field(const json &obj, const std::string &path, const char *key,
                                     std::optional<uint64_t> fallback = std::nullopt) {
    TS_ASSIGN_OR_RETURN(const json *f, field(obj, path, key, !fallback.has_value()));
    if (!f)
      return *fallback;
    return u64(*f, path + "." + key);
  }

  static Expected<std::string> str(const json &obj, const std::string &path, const char *key,
                                   bool required = true) {
    TS_ASSIGN_OR_RETURN(const json *f, field(obj, path, key, required));
    if (!f)
      return std::string();
    if (!f->is_string())
      return Error::format("{}.{}: expected a string, got {}", path, key, f->dump());
    return f->get<std::string>();
  }

  static Expected<std::vector<uint32_t>> ids(const json &obj, const std::string &path,
                                             const char *key) {
    TS_ASSIGN_OR_RETURN(const json *f, field(obj, path, key));
    const std::string p = path.empty() ? std::string(key) : path + "." + key;
    if (!f->is_array())
      return Error::format("{}: expected an array, got {}", p, f->dump());
    std::vector<uint32_t> out;
    for (size_t i = 0; i < f->size(); ++i) {
      TS_ASSIGN_OR_RETURN(uint64_t v, u64((*f)[i], fmt::format("{}[{}]", p, i)));
      if (v > std::numeric_limits<uint32_t>::max())
        return Error::format("{}[{}]: {} is too large", p, i, v);
      out.push_back(uint32_t(v));
    }
    return out;
  }

  static Expected<const json *> array(const json &obj, const char *key) {
    TS_ASSIGN_OR_RETURN(const json *f, field(obj, "plan", key));
    if (!f->is_array())
      return Error::format("plan.{}: expected an array", key);
    return f;
  }

  template <size_t N>
  static Expected<size_t> enumField(const json &obj, const std::string &path, const char *key,
                                    const char *const (&names)[N]) {
    TS_ASSIGN_OR_RETURN(std::string s, str(obj, path, key));
    for (size_t i = 0; i < N; ++i)
      if (s == names[i])
        return i;
    return Error::format("{}.{}: unknown value '{}' (expected {})", path, key, s,
                         fmt::join(names, ", "));
  }
};

Expected<TensorInfo> parseInfo(const json &j, const std::string &path) {
  TensorInfo info;
  TS_ASSIGN_OR_RETURN(info.name, Reader::str(j, path, "name", false));
  TS_ASSIGN_OR_RETURN(std::string dtype, Reader::str(j, path, "dtype"));
  auto t = parseDtypeString(dtype);
  if (!t.ok())
    return Error::format("{}.dtype: {}", path, t.error().str());
  info.dtype = *t;
  TS_ASSIGN_OR_RETURN(const json *shape, Reader::field(j, path, "shape"));
  if (!shape->is_array())
    return Error::format("{}.shape: expected an array, got {}", path, shape->dump());
  for (size_t i = 0; i < shape->size(); ++i) {
    const json &d = (*shape)[i];
    if (d.is_number_integer() && d.get<int64_t>() < 0) { // a symbol (validatePlan checks which)
      info.shape.push_back(d.get<int64_t>());
      continue;
    }
    TS_ASSIGN_OR_RETURN(uint64_t v, Reader::u64(d, fmt::format("{}.shape[{}]", path, i)));
    if (v > uint64_t(std::numeric_limits<int64_t>::max()))
      return Error::format("{}.shape[{}]: {} is too large", path, i, v);
    info.shape.push_back(int64_t(v));
  }
  if (const auto it = j.find("sequence_rank"); it != j.end()) {
    if (!it->is_number_integer() || it->get<int64_t>() < -1 || !info.shape.empty())
      return Error::format("{}.sequence_rank: expected -1 or a rank (with an empty shape), got {}",
                           path, it->dump());
    info.sequence = true;
    info.elementRank = it->get<int64_t>();
  }
  return info;
}

/// A derived symbol's formula (PlanSymbol): integers checked for type only;
/// validatePlan checks what they refer to.
Status parseDerivedSymbol(const json &js, const std::string &path, PlanSymbol &sym) {
  auto integer = [&](const json &v, const std::string &where) -> Expected<int64_t> {
    if (!v.is_number_integer())
      return Error::format("{}: expected an integer, got {}", where, v.dump());
    return v.get<int64_t>();
  };
  TS_ASSIGN_OR_RETURN(sym.divisor, integer(js["divisor"], path + ".divisor"));
  if (sym.divisor < 1)
    return Error::format("{}.divisor: {} is not a positive divisor", path, sym.divisor);
  TS_ASSIGN_OR_RETURN(const json *c, Reader::field(js, path, "constant"));
  TS_ASSIGN_OR_RETURN(sym.constant, integer(*c, path + ".constant"));
  TS_ASSIGN_OR_RETURN(sym.definedBy, Reader::str(js, path, "definedBy", false));
  if (js.contains("at_least")) {
    TS_ASSIGN_OR_RETURN(sym.atLeast, integer(js["at_least"], path + ".at_least"));
  }
  if (js.contains("at_most")) {
    TS_ASSIGN_OR_RETURN(sym.atMost, integer(js["at_most"], path + ".at_most"));
  }
  TS_ASSIGN_OR_RETURN(const json *terms, Reader::field(js, path, "terms"));
  if (!terms->is_array())
    return Error::format("{}.terms: expected an array, got {}", path, terms->dump());
  for (size_t t = 0; t < terms->size(); ++t) {
    const std::string tp = fmt::format("{}.terms[{}]", path, t);
    const json &jt = (*terms)[t];
    if (!jt.is_object())
      return Error::format("{}: expected {{\"coefficient\", \"symbols\"}}", tp);
    PlanSymbol::Term term;
    TS_ASSIGN_OR_RETURN(const json *k, Reader::field(jt, tp, "coefficient"));
    TS_ASSIGN_OR_RETURN(term.coefficient, integer(*k, tp + ".coefficient"));
    TS_ASSIGN_OR_RETURN(term.symbols, Reader::ids(jt, tp, "symbols"));
    sym.terms.push_back(std::move(term));
  }
  return okStatus();
}

} // namespace

std::string serializePlan(const Plan &plan) {
  json j = json::object();
  j["format"] = 1;
  if (!plan.symbols.empty()) { // absent from static plans: their bytes are as before
    json symbols = json::array();
    for (const PlanSymbol &sym : plan.symbols) {
      json js = {{"name", sym.name}, {"lo", sym.lo}, {"hi", sym.hi}};
      if (sym.derived()) {
        json terms = json::array();
        for (const PlanSymbol::Term &t : sym.terms)
          terms.push_back({{"coefficient", t.coefficient}, {"symbols", t.symbols}});
        js["constant"] = sym.constant;
        js["terms"] = std::move(terms);
        js["divisor"] = sym.divisor;
        js["definedBy"] = sym.definedBy;
        if (sym.atLeast != std::numeric_limits<int64_t>::min())
          js["at_least"] = sym.atLeast;
        if (sym.atMost != std::numeric_limits<int64_t>::max())
          js["at_most"] = sym.atMost;
      }
      if (sym.runtime)
        js["runtime"] = true;
      symbols.push_back(std::move(js));
    }
    j["symbols"] = std::move(symbols);
  }
  json buffers = json::array();
  for (const Buffer &b : plan.buffers) {
    json jb = infoJson(b.info);
    jb["kind"] = kBufferKinds[size_t(b.kind)];
    if (b.kind == BufferKind::Input || b.kind == BufferKind::Output)
      jb["index"] = b.index;
    else
      jb["offset"] = b.offset;
    buffers.push_back(std::move(jb));
  }
  j["buffers"] = std::move(buffers);
  json steps = json::array();
  for (const Step &s : plan.steps) {
    json js = json::object();
    js["kind"] = kStepKinds[size_t(s.kind)];
    if (!s.symbol.empty())
      js["symbol"] = s.symbol;
    if (s.kind == StepKind::External)
      js["module"] = s.module;
    if (!s.symbols.empty())
      js["symbols"] = s.symbols;
    if (s.kind == StepKind::Jump || s.kind == StepKind::LoopTest ||
        s.kind == StepKind::SetSymbol || s.kind == StepKind::Sequence)
      js["target"] = s.target;
    js["args"] = s.args;
    js["num_inputs"] = s.numInputs;
    js["label"] = s.label;
    if (!s.nodes.empty())
      js["nodes"] = s.nodes;
    steps.push_back(std::move(js));
  }
  j["steps"] = std::move(steps);
  j["inputs"] = plan.inputs;
  j["outputs"] = plan.outputs;
  json modules = json::array();
  for (const ModuleRef &m : plan.modules)
    modules.push_back({{"type_key", m.typeKey},
                       {"plugin", m.plugin},
                       {"plugin_version", m.pluginVersion},
                       {"section", m.section}});
  j["modules"] = std::move(modules);
  j["arena_bytes"] = plan.arenaBytes;
  j["weights_bytes"] = plan.weightsBytes;
  j["activation_bytes_no_reuse"] = plan.activationBytesNoReuse;
  return j.dump(1);
}

Expected<Plan> parsePlan(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    return Error("plan: not valid JSON");
  if (!j.is_object())
    return Error("plan: expected a JSON object");
  TS_ASSIGN_OR_RETURN(uint64_t format, Reader::u64Field(j, "plan", "format"));
  if (format != 1)
    return Error::format("plan.format: version {}, this runtime reads version 1", format);

  Plan plan;
  if (j.contains("symbols")) {
    TS_ASSIGN_OR_RETURN(const json *symbols, Reader::array(j, "symbols"));
    for (size_t i = 0; i < symbols->size(); ++i) {
      const json &js = (*symbols)[i];
      const std::string path = fmt::format("plan.symbols[{}]", i);
      if (!js.is_object() || !js.contains("lo") || !js["lo"].is_number_integer() ||
          !js.contains("hi") || !js["hi"].is_number_integer())
        return Error::format("{}: expected {{\"name\", \"lo\", \"hi\"}} with integer bounds",
                             path);
      PlanSymbol sym;
      TS_ASSIGN_OR_RETURN(sym.name, Reader::str(js, path, "name"));
      sym.lo = js["lo"].get<int64_t>();
      sym.hi = js["hi"].get<int64_t>();
      if (js.contains("divisor"))
        TS_RETURN_IF_ERROR(parseDerivedSymbol(js, path, sym));
      if (js.contains("runtime")) {
        if (!js["runtime"].is_boolean())
          return Error::format("{}.runtime: expected true or false", path);
        sym.runtime = js["runtime"].get<bool>();
      }
      plan.symbols.push_back(std::move(sym));
    }
  }
  TS_ASSIGN_OR_RETURN(const json *buffers, Reader::array(j, "buffers"));
  for (size_t i = 0; i < buffers->size(); ++i) {
    const json &jb = (*buffers)[i];
    const std::string path = fmt::format("plan.buffers[{}]", i);
    if (!jb.is_object())
      return Error::format("{}: expected an object", path);
    Buffer b;
    TS_ASSIGN_OR_RETURN(size_t kind, Reader::enumField(jb, path, "kind", kBufferKinds));
    b.kind = BufferKind(kind);
    TS_ASSIGN_OR_RETURN(b.info, parseInfo(jb, path));
    if (b.kind == BufferKind::Input || b.kind == BufferKind::Output) {
      TS_ASSIGN_OR_RETURN(uint64_t index, Reader::u64Field(jb, path, "index"));
      if (index > std::numeric_limits<uint32_t>::max())
        return Error::format("{}.index: {} is too large", path, index);
      b.index = uint32_t(index);
    } else {
      TS_ASSIGN_OR_RETURN(b.offset, Reader::u64Field(jb, path, "offset"));
    }
    plan.buffers.push_back(std::move(b));
  }

  TS_ASSIGN_OR_RETURN(const json *steps, Reader::array(j, "steps"));
  for (size_t i = 0; i < steps->size(); ++i) {
    const json &js = (*steps)[i];
    const std::string path = fmt::format("plan.steps[{}]", i);
    if (!js.is_object())
      return Error::format("{}: expected an object", path);
    Step s;
    TS_ASSIGN_OR_RETURN(size_t kind, Reader::enumField(js, path, "kind", kStepKinds));
    s.kind = StepKind(kind);
    const bool named = s.kind == StepKind::Host || s.kind == StepKind::External ||
                       s.kind == StepKind::Sequence;
    TS_ASSIGN_OR_RETURN(s.symbol, Reader::str(js, path, "symbol", named));
    if (s.kind == StepKind::Jump || s.kind == StepKind::LoopTest ||
        s.kind == StepKind::SetSymbol || s.kind == StepKind::Sequence) {
      TS_ASSIGN_OR_RETURN(uint64_t target, Reader::u64Field(js, path, "target"));
      if (target > uint64_t(std::numeric_limits<uint32_t>::max()))
        return Error::format("{}.target: {} is too large", path, target);
      s.target = uint32_t(target);
    }
    if (s.kind == StepKind::External) {
      TS_ASSIGN_OR_RETURN(uint64_t m, Reader::u64Field(js, path, "module"));
      if (m > uint64_t(std::numeric_limits<int32_t>::max()))
        return Error::format("{}.module: {} is too large", path, m);
      s.module = int32_t(m);
      if (js.contains("symbols")) {
        TS_ASSIGN_OR_RETURN(s.symbols, Reader::ids(js, path, "symbols"));
      }
    }
    TS_ASSIGN_OR_RETURN(s.args, Reader::ids(js, path, "args"));
    TS_ASSIGN_OR_RETURN(uint64_t numInputs, Reader::u64Field(js, path, "num_inputs"));
    if (numInputs > s.args.size())
      return Error::format("{}.num_inputs: {} but only {} args", path, numInputs, s.args.size());
    s.numInputs = uint32_t(numInputs);
    TS_ASSIGN_OR_RETURN(s.label, Reader::str(js, path, "label", false));
    TS_ASSIGN_OR_RETURN(s.nodes, Reader::str(js, path, "nodes", false));
    plan.steps.push_back(std::move(s));
  }

  TS_ASSIGN_OR_RETURN(plan.inputs, Reader::ids(j, "plan", "inputs"));
  TS_ASSIGN_OR_RETURN(plan.outputs, Reader::ids(j, "plan", "outputs"));

  TS_ASSIGN_OR_RETURN(const json *modules, Reader::array(j, "modules"));
  for (size_t i = 0; i < modules->size(); ++i) {
    const json &jm = (*modules)[i];
    const std::string path = fmt::format("plan.modules[{}]", i);
    if (!jm.is_object())
      return Error::format("{}: expected an object", path);
    ModuleRef m;
    TS_ASSIGN_OR_RETURN(m.typeKey, Reader::str(jm, path, "type_key"));
    TS_ASSIGN_OR_RETURN(m.plugin, Reader::str(jm, path, "plugin"));
    TS_ASSIGN_OR_RETURN(m.pluginVersion, Reader::str(jm, path, "plugin_version", false));
    TS_ASSIGN_OR_RETURN(uint64_t section, Reader::u64Field(jm, path, "section"));
    if (section > std::numeric_limits<uint32_t>::max())
      return Error::format("{}.section: {} is too large", path, section);
    m.section = uint32_t(section);
    plan.modules.push_back(std::move(m));
  }
  TS_ASSIGN_OR_RETURN(plan.arenaBytes, Reader::u64Field(j, "plan", "arena_bytes"));
  TS_ASSIGN_OR_RETURN(plan.weightsBytes, Reader::u64Field(j, "plan", "weights_bytes"));
  TS_ASSIGN_OR_RETURN(plan.activationBytesNoReuse,
                      Reader::u64Field(j, "plan", "activation_bytes_no_reuse", 0));
  auto valid = validatePlan(plan);
  if (!valid.ok())
    return Error::format("plan: {}", valid.error().str());
  return plan;
}

} // namespace tessera::runtime
