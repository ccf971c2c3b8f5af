//===- tests/unit/plugin_versions_test.cpp - Version rules and the child runner ===//
#include "plugin/probe.h"
#include "plugin/versions.h"

#include <catch2/catch.hpp>

#include <csignal>
#include <cstdlib>
#include <thread>

using namespace tessera::plugin;

TEST_CASE("plugin versions: parsing", "[plugin]") {
  CHECK(parseVersion("1.2.3") == Version{1, 2, 3});
  CHECK(parseVersion("2") == Version{2, 0, 0});
  CHECK(parseVersion("v1.4") == Version{1, 4, 0});
  CHECK(parseVersion("1.2.3-rc1+git") == Version{1, 2, 3});
  CHECK(parseVersion("1.2.") == Version{1, 2, 0});
  CHECK_FALSE(parseVersion(""));
  CHECK_FALSE(parseVersion("abc"));
  CHECK_FALSE(parseVersion("99999999999999999999"));
}

TEST_CASE("plugin versions: rules", "[plugin]") {
  auto rule = [](const char *text) { return VersionRule::parse(text).value(); };
  VersionRule range = rule(">=1.0 <3");
  CHECK(range.admits({1, 0, 0}));
  CHECK(range.admits({2, 9, 9}));
  CHECK_FALSE(range.admits({0, 9, 0}));
  CHECK_FALSE(range.admits({3, 0, 0}));
  VersionRule caret = rule("^1.4");
  CHECK(caret.admits({1, 4, 0}));
  CHECK(caret.admits({1, 9, 2}));
  CHECK_FALSE(caret.admits({1, 3, 9}));
  CHECK_FALSE(caret.admits({2, 0, 0}));
  CHECK(rule("=1.0.0, >0").admits({1, 0, 0}));
  CHECK_FALSE(rule("=1.0.0").admits({1, 0, 1}));
  CHECK(rule("*").admits({7, 0, 0}));
  CHECK(rule("").admits({7, 0, 0}));
  CHECK(VersionRule::sameMajor({2, 3, 0}).admits({2, 0, 0}));
  CHECK_FALSE(VersionRule::sameMajor({2, 3, 0}).admits({1, 9, 0}));
  CHECK(VersionRule::sameMajor({2, 3, 0}).str() == "^2");

  CHECK(VersionRule::parse(">=x").error().message() ==
        "'x' after '>=' is not a version (MAJOR[.MINOR[.PATCH]])");
  CHECK(VersionRule::parse("~1.2").error().message() ==
        "'~1.2' is not a comparator (>=, >, <=, <, =, ^ or *)");
}

TEST_CASE("child runner: answers, errors, crashes, exits, hangs", "[plugin]") {
  using namespace std::chrono_literals;
  ChildEnd ok = runChild([](ChildChannel &) -> tessera::Expected<std::string> { return "yes"; },
                         5s);
  CHECK(ok.kind == ChildEnd::Answered);
  CHECK(ok.payload == "yes");

  // A large answer arrives whole.
  ChildEnd big = runChild(
      [](ChildChannel &) -> tessera::Expected<std::string> { return std::string(5 << 20, 'x'); },
      5s);
  REQUIRE(big.kind == ChildEnd::Answered);
  CHECK(big.payload.size() == size_t(5 << 20));

  ChildEnd failed = runChild(
      [](ChildChannel &) -> tessera::Expected<std::string> { return tessera::Error("no"); }, 5s);
  CHECK(failed.kind == ChildEnd::Failed);
  CHECK(failed.payload == "no");

  ChildEnd crashed = runChild(
      [](ChildChannel &c) -> tessera::Expected<std::string> {
        c.mark("acme", "check_op for conv2d 'c1'");
        std::raise(SIGSEGV);
        return "";
      },
      5s);
  CHECK(crashed.kind == ChildEnd::Crashed);
  CHECK(crashed.describe() == "plugin 'acme' crashed (SIGSEGV) in check_op for conv2d 'c1'");

  // After idle(), a crash is the core's.
  ChildEnd core = runChild(
      [](ChildChannel &c) -> tessera::Expected<std::string> {
        c.mark("acme", "check_op");
        c.idle();
        std::abort();
      },
      5s);
  CHECK(core.describe() == "crashed (SIGABRT)");

  ChildEnd exited = runChild(
      [](ChildChannel &) -> tessera::Expected<std::string> { std::_Exit(3); }, 5s);
  CHECK(exited.describe() == "exited (status 3)");

  // A mark's own timeout wins over the default; the core's idle time has none.
  ChildEnd hung = runChild(
      [](ChildChannel &c) -> tessera::Expected<std::string> {
        c.idle();
        std::this_thread::sleep_for(300ms); // no deadline while idle
        c.mark("acme", "codegen.compile", 200ms);
        for (;;)
          std::this_thread::sleep_for(1s);
      },
      100ms);
  CHECK(hung.kind == ChildEnd::TimedOut);
  CHECK(hung.describe() == "plugin 'acme' did not finish within 0.2 s (killed) in codegen.compile");
}
