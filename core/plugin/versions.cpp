//===- plugin/versions.cpp - Plugin versions and the rules between them ---===//
#include "plugin/versions.h"

#include "plugin/registry.h"

#include <spdlog/spdlog.h>

#include <cctype>

namespace tessera::plugin {

namespace {

/// Reads digits at `i`; nullopt when there are none (or too many).
std::optional<uint64_t> number(std::string_view text, size_t &i) {
  size_t start = i;
  uint64_t v = 0;
  while (i < text.size() && std::isdigit(uint8_t(text[i])) && i - start < 18)
    v = v * 10 + uint64_t(text[i++] - '0');
  if (i == start || (i < text.size() && std::isdigit(uint8_t(text[i]))))
    return std::nullopt;
  return v;
}

} // namespace

std::optional<Version> parseVersion(std::string_view text) {
  size_t i = 0;
  if (i < text.size() && (text[i] == 'v' || text[i] == 'V'))
    ++i;
  Version v;
  uint64_t *parts[] = {&v.major, &v.minor, &v.patch};
  for (int k = 0; k < 3; ++k) {
    if (k > 0) {
      if (i + 1 >= text.size() || text[i] != '.' || !std::isdigit(uint8_t(text[i + 1])))
        break;
      ++i;
    }
    auto n = number(text, i);
    if (!n)
      return std::nullopt;
    *parts[k] = *n;
  }
  return v;
}

Expected<VersionRule> VersionRule::parse(std::string_view text) {
  VersionRule rule;
  rule.text_ = std::string(text);
  size_t i = 0;
  auto skip = [&] {
    while (i < text.size() && (text[i] == ' ' || text[i] == ',' || text[i] == '\t'))
      ++i;
  };
  for (skip(); i < text.size(); skip()) {
    if (text[i] == '*') {
      ++i;
      continue;
    }
    std::string_view rest = text.substr(i);
    Op op = Op::Eq;
    bool caret = false;
    size_t len = 0;
    if (rest.starts_with(">="))
      op = Op::Ge, len = 2;
    else if (rest.starts_with("<="))
      op = Op::Le, len = 2;
    else if (rest.starts_with(">"))
      op = Op::Gt, len = 1;
    else if (rest.starts_with("<"))
      op = Op::Lt, len = 1;
    else if (rest.starts_with("="))
      op = Op::Eq, len = 1;
    else if (rest.starts_with("^"))
      caret = true, len = 1;
    else
      return Error::format("'{}' is not a comparator (>=, >, <=, <, =, ^ or *)",
                           std::string(rest.substr(0, rest.find(' '))));
    i += len;
    size_t end = text.find_first_of(" ,\t", i);
    std::string_view word = text.substr(i, end == std::string_view::npos ? text.size() - i : end - i);
    std::optional<Version> v = parseVersion(word);
    if (!v)
      return Error::format("'{}' after '{}' is not a version (MAJOR[.MINOR[.PATCH]])",
                           std::string(word), std::string(rest.substr(0, len)));
    i += word.size();
    if (caret) {
      rule.terms_.emplace_back(Op::Ge, *v);
      rule.terms_.emplace_back(Op::Lt, Version{v->major + 1, 0, 0});
    } else {
      rule.terms_.emplace_back(op, *v);
    }
  }
  return rule;
}

VersionRule VersionRule::sameMajor(const Version &v) {
  VersionRule rule;
  rule.text_ = fmt::format("^{}", v.major);
  rule.terms_.emplace_back(Op::Ge, Version{v.major, 0, 0});
  rule.terms_.emplace_back(Op::Lt, Version{v.major + 1, 0, 0});
  return rule;
}

bool VersionRule::admits(const Version &v) const {
  for (const auto &[op, bound] : terms_) {
    bool ok = op == Op::Ge   ? v >= bound
              : op == Op::Gt ? v > bound
              : op == Op::Le ? v <= bound
              : op == Op::Lt ? v < bound
                             : v == bound;
    if (!ok)
      return false;
  }
  return true;
}

Status LoadedPlugin::checkModuleVersion(std::string_view recorded) const {
  if (recorded == version_)
    return okStatus();
  std::optional<Version> was = parseVersion(recorded), is = parseVersion(version_);
  if (!was || !is) {
    spdlog::warn("plugin '{}': the artifact's module was compiled with version '{}'; loading it "
                 "with version '{}' ({}); the versions cannot be compared",
                 name_, recorded, version_, path_);
    return okStatus();
  }
  VersionRule rule = compatibleVersions_.empty() ? VersionRule::sameMajor(*is)
                                                 : VersionRule::parse(compatibleVersions_).value();
  std::string declared = compatibleVersions_.empty()
                             ? fmt::format("{} (its own major version: it declares no rule)",
                                           rule.str())
                             : rule.str();
  if (!rule.admits(*was))
    return Error::format("plugin '{}': the module was compiled with version {}; the loaded plugin "
                         "is version {} ({}), which loads modules of versions {} only: recompile "
                         "the model, or put version {} of '{}' on the plugin search path",
                         name_, recorded, version_, path_, declared, recorded, name_);
  spdlog::warn("plugin '{}': the artifact's module was compiled with version {}; loading it with "
               "version {} ({}), which loads modules of versions {}",
               name_, recorded, version_, path_, declared);
  return okStatus();
}

} // namespace tessera::plugin
