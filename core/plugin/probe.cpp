//===- plugin/probe.cpp - Loading a candidate in a child process ----------===//
//
// fork(); the child runs the load and writes one reply to a pipe ("+" for
// success, "-" and the reason for a rejection) and leaves with _exit (no
// atexit handlers, no destructors of the parent's objects); the parent reads
// the reply with a deadline and then reaps the child. A child that dies by a
// signal, exits early or stays silent past the deadline (and is killed) is
// reported as such.
//
//===----------------------------------------------------------------------===//
#include "plugin/probe.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace tessera::plugin {

namespace {

std::atomic<bool> gInProbeChild{false};

void writeAll(int fd, const std::string &text) {
  const char *p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return;
    p += n;
    left -= size_t(n);
  }
}

/// "SIGSEGV", or "signal 42" for one without a name.
std::string signalName(int sig) {
  const char *abbrev = ::sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : fmt::format("signal {}", sig);
}

[[noreturn]] void childMain(int replyFd, const std::function<Status()> &work) {
  gInProbeChild = true;
  // A crash here is the answer, not something for the host's crash handler
  // (a test framework's, a crash reporter's) to report; and it should not
  // leave a core file behind.
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS})
    ::signal(sig, SIG_DFL);
  struct rlimit noCore {};
  ::setrlimit(RLIMIT_CORE, &noCore);
  std::string reply;
  try {
    Status status = work();
    reply = status.ok() ? "+" : "-" + status.error().message();
  } catch (const std::exception &e) {
    reply = std::string("-internal error while probing: ") + e.what();
  } catch (...) {
    reply = "-internal error while probing";
  }
  writeAll(replyFd, reply);
  ::_exit(0);
}

/// Reads from `fd` until EOF, the child's exit or the deadline. Returns
/// whether the child was reaped (its wait status in `waitStatus`).
bool readReply(int fd, pid_t pid, std::chrono::steady_clock::time_point deadline,
               std::string &reply, int &waitStatus) {
  using namespace std::chrono;
  bool eof = false;
  for (;;) {
    // Poll in short slices: a grandchild the plugin spawned could hold the
    // pipe open after the child is gone, so EOF alone is not enough.
    auto left = duration_cast<milliseconds>(deadline - steady_clock::now()).count();
    if (!eof) {
      pollfd p{fd, POLLIN, 0};
      int ready = ::poll(&p, 1, int(std::clamp<long long>(left, 0, 50)));
      if (ready > 0) {
        char buf[4096];
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n > 0) {
          reply.append(buf, size_t(n));
          continue;
        }
        if (n == 0 || errno != EINTR)
          eof = true;
      }
    } else if (left > 0) {
      ::usleep(5000);
    }
    pid_t done = ::waitpid(pid, &waitStatus, WNOHANG);
    if (done < 0 && errno == ECHILD)
      waitStatus = 0; // SIGCHLD is ignored: the child was reaped for us
    if (done == pid || (done < 0 && errno == ECHILD)) {
      // Drain what the child wrote before it went.
      char buf[4096];
      ssize_t n;
      ::fcntl(fd, F_SETFL, O_NONBLOCK);
      while (!eof && (n = ::read(fd, buf, sizeof buf)) > 0)
        reply.append(buf, size_t(n));
      return true;
    }
    if (steady_clock::now() >= deadline)
      return false;
  }
}

} // namespace

bool inProbeChild() {
  return gInProbeChild;
}

Status runInChild(const std::function<Status()> &work, std::chrono::milliseconds timeout) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return Error::format("cannot probe the file (pipe: {})", std::strerror(errno));
  // Buffered output would otherwise be written twice if the child exits
  // through exit() (a plugin may call it).
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) {
    int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    return Error::format("cannot probe the file (fork: {})", std::strerror(err));
  }
  if (pid == 0) {
    ::close(fds[0]);
    childMain(fds[1], work);
  }
  ::close(fds[1]);

  std::string reply;
  int waitStatus = 0;
  bool reaped =
      readReply(fds[0], pid, std::chrono::steady_clock::now() + timeout, reply, waitStatus);
  ::close(fds[0]);
  if (!reaped) {
    ::kill(pid, SIGKILL);
    while (::waitpid(pid, &waitStatus, 0) < 0 && errno == EINTR) {
    }
    return Error::format("timed out while loading (no answer within {:g} s)",
                         double(timeout.count()) / 1000.0);
  }
  if (WIFSIGNALED(waitStatus))
    return Error::format("crashed while loading ({})", signalName(WTERMSIG(waitStatus)));
  if (!reply.empty() && reply[0] == '+')
    return okStatus();
  if (!reply.empty() && reply[0] == '-')
    return Error(reply.substr(1));
  return Error::format("exited while loading (exit status {})",
                       WIFEXITED(waitStatus) ? WEXITSTATUS(waitStatus) : -1);
}

} // namespace tessera::plugin
