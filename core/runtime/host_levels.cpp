//===- runtime/host_levels.cpp - Host code for several CPU levels ---------===//
#include "runtime/host_levels.h"

#include "runtime/cpu_features.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>

namespace tessera::runtime {

namespace {

using nlohmann::json;

Expected<std::vector<std::string>> stringList(const json &entry, const std::string &where) {
  std::vector<std::string> out;
  auto it = entry.find("features");
  if (it == entry.end())
    return out;
  if (!it->is_array())
    return Error::format("metadata: '{}.features' is not a list of strings", where);
  for (const json &f : *it) {
    if (!f.is_string())
      return Error::format("metadata: '{}.features' is not a list of strings", where);
    out.push_back(f.get<std::string>());
  }
  return out;
}

Expected<HostLevel> parseLevel(const json &e, const std::string &where) {
  if (!e.is_object() || !e.contains("cpu") || !e["cpu"].is_string() || !e.contains("section") ||
      !e["section"].is_number_unsigned() || !e.contains("encoding") ||
      !e["encoding"].is_string() || !e.contains("size") || !e["size"].is_number_unsigned())
    return Error::format("metadata: '{}' must be {{\"cpu\", \"features\", \"section\", "
                         "\"encoding\", \"size\"}}",
                         where);
  HostLevel level;
  level.cpu = e["cpu"].get<std::string>();
  TS_ASSIGN_OR_RETURN(level.features, stringList(e, where));
  level.section = e["section"].get<uint32_t>();
  level.size = e["size"].get<uint64_t>();
  const std::string encoding = e["encoding"].get<std::string>();
  if (encoding != "raw" && encoding != "zlib")
    return Error::format("metadata: '{}.encoding' is '{}' (expected raw or zlib)", where,
                         encoding);
  level.zlib = encoding == "zlib";
  return level;
}

} // namespace

Expected<std::vector<HostLevel>> hostLevels(std::string_view metadataJson, size_t sections) {
  json meta = json::parse(metadataJson, nullptr, /*allow_exceptions=*/false);
  if (meta.is_discarded() || !meta.is_object())
    return Error("metadata: not a JSON object");
  std::vector<HostLevel> levels;
  auto list = meta.find("host_code");
  if (list == meta.end()) {
    // One shared object, described by "target" (or by nothing, before the
    // target was recorded).
    if (sections > 1)
      return Error::format("{} host code sections and no 'host_code' list in the metadata",
                           sections);
    if (sections == 0)
      return levels;
    HostLevel level;
    if (auto t = meta.find("target"); t != meta.end() && t->is_object()) {
      if (t->contains("cpu") && (*t)["cpu"].is_string())
        level.cpu = (*t)["cpu"].get<std::string>();
      TS_ASSIGN_OR_RETURN(level.features, stringList(*t, "target"));
    }
    levels.push_back(std::move(level));
    return levels;
  }
  if (!list->is_array())
    return Error("metadata: 'host_code' must be an array");
  for (size_t i = 0; i < list->size(); ++i) {
    TS_ASSIGN_OR_RETURN(HostLevel level,
                        parseLevel((*list)[i], fmt::format("host_code[{}]", i)));
    if (level.section >= sections)
      return Error::format("metadata: host_code[{}] ({}) is in host code section {}, the "
                           "artifact has {}",
                           i, level.cpu, level.section, sections);
    for (const HostLevel &other : levels)
      if (other.section == level.section || other.cpu == level.cpu)
        return Error::format("metadata: host_code[{}] ({}, section {}) repeats a CPU or a "
                             "section of an earlier entry",
                             i, level.cpu, level.section);
    levels.push_back(std::move(level));
  }
  if (levels.size() != sections)
    return Error::format("metadata: 'host_code' lists {} levels, the artifact has {} host code "
                         "sections",
                         levels.size(), sections);
  return levels;
}

std::string forcedHostCpu() {
  const char *env = std::getenv("TESSERA_HOST_CPU");
  return env ? std::string(env) : std::string();
}

Expected<size_t> chooseHostLevel(const std::vector<HostLevel> &levels) {
  if (levels.empty())
    return Error("the artifact has no host code");
  auto name = [](const HostLevel &l) {
    return l.cpu.empty() ? std::string("host code")
                         : fmt::format("host code (compiled for {})", l.cpu);
  };
  std::vector<std::string> cpus;
  for (const HostLevel &l : levels)
    cpus.push_back(l.cpu);
  if (const std::string forced = forcedHostCpu(); !forced.empty()) {
    auto it = std::find(cpus.begin(), cpus.end(), forced);
    if (it == cpus.end())
      return Error::format("TESSERA_HOST_CPU={}: the host code is built for {} only", forced,
                           fmt::join(cpus, ", "));
    const size_t i = size_t(it - cpus.begin());
    if (Status s = requireCpuFeatures(levels[i].features, name(levels[i])); !s.ok())
      return std::move(s).error().addContext("TESSERA_HOST_CPU=" + forced);
    return i;
  }
  for (size_t i = 0; i < levels.size(); ++i)
    if (missingCpuFeatures(levels[i].features).empty())
      return i;
  // None fits, the last (the most portable) included: what it needs is what
  // to say.
  std::string what = name(levels.back());
  if (levels.size() > 1) {
    cpus.pop_back();
    what = fmt::format("host code (compiled for {}, also for {})", levels.back().cpu,
                       fmt::join(cpus, ", "));
  }
  return requireCpuFeatures(levels.back().features, what).error();
}

} // namespace tessera::runtime
