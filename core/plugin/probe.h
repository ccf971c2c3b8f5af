//===- plugin/probe.h - Loading a candidate in a child process -*- C++ -*-===//
//
// Crash safety for discovery: a plugin file runs code as soon as it is
// loaded (static constructors, then its query), and that code can fault,
// abort, exit or hang. runInChild runs the whole load in a forked child that
// reports back through a pipe, so the core only ever loads in-process a file
// that loaded cleanly once already. Private to plugin/.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "support/error.h"

#include <chrono>
#include <functional>

namespace tessera::plugin {

/// Forks; the child runs `work` and reports its Status; the parent waits at
/// most `timeout`. The result is the child's Status, or an error saying how
/// the child ended without one: "crashed while loading (SIGSEGV)", "timed out
/// while loading (no answer within 10 s)", "exited while loading (exit
/// status 3)". No path prefix.
Status runInChild(const std::function<Status()> &work, std::chrono::milliseconds timeout);

/// Whether the current process is a probe child (the host's log callback
/// stays quiet there, so that a plugin's messages are not printed twice).
bool inProbeChild();

} // namespace tessera::plugin
