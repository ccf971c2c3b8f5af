//===- plugin/versions.h - Plugin versions and the rules between them -*- C++ -*-===//
//
// An artifact records the version of each plugin that compiled its modules.
// A plugin declares which of its versions' modules it loads
// (tessera_plugin_t::compatible_versions, ABI 1.3): comparators separated by
// spaces or commas, all of which must hold:
//   >=1.2  >1.2  <=1.2  <2  =1.2.3  ^1.2 (>=1.2.0 and <2.0.0)  * (any)
// A plugin that declares nothing loads modules of its own major version
// (^MAJOR). Versions are MAJOR[.MINOR[.PATCH]], missing parts 0; anything
// after them ("-rc1", "+git") is ignored. docs/abi.md, "Versions".
//
//===----------------------------------------------------------------------===//
#pragma once

#include "support/error.h"
#include "support/export.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::plugin {

struct Version {
  uint64_t major = 0, minor = 0, patch = 0;
  auto operator<=>(const Version &) const = default;
};

/// The leading MAJOR[.MINOR[.PATCH]] of `text`; nullopt when it has none.
TESSERA_RT_EXPORT std::optional<Version> parseVersion(std::string_view text);

class TESSERA_RT_EXPORT VersionRule {
public:
  /// A declared rule; the error says what is wrong with it.
  static Expected<VersionRule> parse(std::string_view text);
  /// The rule of a plugin that declares none: its own major version.
  static VersionRule sameMajor(const Version &v);

  bool admits(const Version &v) const;
  /// As declared, or "^MAJOR" for sameMajor.
  const std::string &str() const { return text_; }

private:
  enum class Op { Ge, Gt, Le, Lt, Eq };
  std::vector<std::pair<Op, Version>> terms_;
  std::string text_;
};

} // namespace tessera::plugin
