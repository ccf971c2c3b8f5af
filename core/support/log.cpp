//===- support/log.cpp - Logging through spdlog ---------------------------===//
#include "support/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdlib>

namespace tessera {

namespace {
std::shared_ptr<spdlog::logger> makeLogger() {
  auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  auto log = std::make_shared<spdlog::logger>("tessera", sink);
  log->set_pattern("tessera: %^%l%$: %v");
  log->set_level(spdlog::level::warn);
  if (const char *env = std::getenv("TESSERA_LOG_LEVEL")) {
    auto level = spdlog::level::from_str(env);
    // from_str maps unknown names to "off"; only accept real names.
    if (level != spdlog::level::off || std::string_view(env) == "off")
      log->set_level(level);
    else
      log->warn("ignoring TESSERA_LOG_LEVEL='{}': expected trace, debug, "
                "info, warn, error or off",
                env);
  }
  return log;
}
} // namespace

spdlog::logger &logger() {
  static std::shared_ptr<spdlog::logger> log = makeLogger();
  return *log;
}

bool setLogLevel(std::string_view name) {
  auto level = spdlog::level::from_str(std::string(name));
  if (level == spdlog::level::off && name != "off")
    return false;
  logger().set_level(level);
  return true;
}

} // namespace tessera
