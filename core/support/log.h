//===- support/log.h - Logging through spdlog ------------------*- C++ -*-===//
//
// One logger for the whole core. The level comes from TESSERA_LOG_LEVEL
// (trace, debug, info, warn, error, off; default warn) or from a tool's
// --log-level flag, which overrides the environment.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <spdlog/spdlog.h>

#include <string_view>

namespace tessera {

/// Returns the core's logger, creating it on first use (level from the
/// environment).
spdlog::logger &logger();

/// Sets the level by name. Returns false when the name is not a level.
bool setLogLevel(std::string_view level);

} // namespace tessera

#define TS_LOG_TRACE(...) ::tessera::logger().trace(__VA_ARGS__)
#define TS_LOG_DEBUG(...) ::tessera::logger().debug(__VA_ARGS__)
#define TS_LOG_INFO(...) ::tessera::logger().info(__VA_ARGS__)
#define TS_LOG_WARN(...) ::tessera::logger().warn(__VA_ARGS__)
#define TS_LOG_ERROR(...) ::tessera::logger().error(__VA_ARGS__)
