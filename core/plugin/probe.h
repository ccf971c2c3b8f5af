//===- plugin/probe.h - Running plugin code in a child process -*- C++ -*-===//
//
// Crash safety: plugin code can fault, abort, exit or hang, at load (static
// constructors, the query) and in every call (checker, codegen, factory).
// runChild runs a piece of work in a forked child that reports back through
// a pipe: marks saying what it is doing now ("check_op for conv2d 'c1'"),
// then its answer. When the child dies or stays silent, the caller learns
// how and during which mark, and words the message (docs/design/0011).
//
// The child is a fork: it sees the parent's memory as it was (the IR, the
// plugin's state, the C structs to pass) without serialising anything, and
// sends back only bytes. Exported for the compiler's conformance kit, which
// runs each case in a child.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "support/error.h"
#include "support/export.h"

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

namespace tessera::plugin {

/// The child's side: what it is doing now. A no-op outside a child.
class TESSERA_RT_EXPORT ChildChannel {
public:
  explicit ChildChannel(int fd = -1) : fd_(fd) {}
  /// Says that the child now runs code of `plugin` ("" for the core's own
  /// work) doing `what` ("check_op for conv2d 'c1'"). Sent at once. The
  /// parent's deadline becomes now + `timeout` (runChild's when zero).
  void mark(std::string_view plugin, std::string_view what,
            std::chrono::milliseconds timeout = {});
  /// Back in the core's own code: no deadline until the next mark, and a
  /// crash from here on is not the last plugin's.
  void idle();

private:
  int fd_;
};

/// The channel of the child this process is (inside runChild's work), or
/// null in a process that is no such child.
TESSERA_RT_EXPORT ChildChannel *currentChild();

/// How a child ended.
struct TESSERA_RT_EXPORT ChildEnd {
  enum Kind { Answered, Failed, Crashed, Exited, TimedOut } kind = Answered;
  std::string payload;    // Answered: the work's bytes; Failed: its error message
  std::string lastPlugin; // the plugin of the last mark ("" when none, or after idle())
  std::string lastMark;   // what the last mark said ("" when none)
  int signal = 0;         // Crashed
  int exitStatus = 0;     // Exited
  double timeoutSeconds = 0;

  /// For a child that ended without an answer: "crashed (SIGSEGV)", "exited
  /// (status 3)", "did not finish within 5 s (killed)".
  std::string how() const;
  /// The whole story: "plugin 'acme' crashed (SIGSEGV) in check_op for
  /// conv2d 'c1'"; without a plugin, "crashed (SIGSEGV)" and where the
  /// core was.
  std::string describe() const;
};

/// Forks; the child runs `work` and sends its answer (or error); the parent
/// waits until `timeout` passes without a mark or an answer (negative: no
/// deadline until a mark sets one), then kills it. Inside the work,
/// currentChild() is the child's channel.
/// `quiet`: the host's log callback stays silent in the child (the probe:
/// the same load is repeated in-process).
TESSERA_RT_EXPORT ChildEnd runChild(const std::function<Expected<std::string>(ChildChannel &)> &work,
                                    std::chrono::milliseconds timeout, bool quiet = false);

/// The probe of discovery: the result is the child's Status, or an error
/// saying how the child ended without one: "crashed while loading
/// (SIGSEGV)", "timed out while loading (no answer within 10 s)", "exited
/// while loading (exit status 3)". No path prefix.
Status runInChild(const std::function<Status()> &work, std::chrono::milliseconds timeout);

/// Whether the current process is a quiet child (the host's log callback
/// stays quiet there, so that a plugin's messages are not printed twice).
bool inProbeChild();

} // namespace tessera::plugin
