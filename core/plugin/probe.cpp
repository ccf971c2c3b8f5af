//===- plugin/probe.cpp - Running plugin code in a child process ----------===//
//
// fork(); the child runs the work and writes records to a pipe: a tag byte,
// a little-endian u64 length, the bytes. 'M' is a mark (what the child does
// now), 'R' the answer, 'E' an error. It leaves with _exit (no atexit
// handlers, no destructors of the parent's objects). The parent reads with
// a deadline that each record pushes back, then reaps the child; a child
// that dies by a signal, exits without an answer or stays silent past the
// deadline (and is killed) is reported as such.
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
#include <optional>

namespace tessera::plugin {

namespace {

std::atomic<bool> gInProbeChild{false};
ChildChannel *gChannel = nullptr; // set in a child only
constexpr auto kNoDeadline = std::chrono::hours(24 * 365);

bool writeAll(int fd, std::string_view text) {
  const char *p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    p += n;
    left -= size_t(n);
  }
  return true;
}

bool writeRecord(int fd, char tag, std::string_view bytes) {
  char head[9];
  head[0] = tag;
  uint64_t size = bytes.size();
  for (int i = 0; i < 8; ++i)
    head[1 + i] = char((size >> (8 * i)) & 0xff);
  return writeAll(fd, std::string_view(head, sizeof head)) && writeAll(fd, bytes);
}

/// "SIGSEGV", or "signal 42" for one without a name.
std::string signalName(int sig) {
  const char *abbrev = ::sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : fmt::format("signal {}", sig);
}

[[noreturn]] void childMain(int fd, const std::function<Expected<std::string>(ChildChannel &)> &work,
                            bool quiet) {
  gInProbeChild = quiet;
  // A crash here is the answer, not something for the host's crash handler
  // (a test framework's, a crash reporter's) to report; and it should not
  // leave a core file behind.
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS})
    ::signal(sig, SIG_DFL);
  struct rlimit noCore {};
  ::setrlimit(RLIMIT_CORE, &noCore);
  ChildChannel channel(fd);
  gChannel = &channel;
  try {
    Expected<std::string> answer = work(channel);
    if (answer.ok())
      writeRecord(fd, 'R', *answer);
    else
      writeRecord(fd, 'E', answer.error().message());
  } catch (const std::exception &e) {
    writeRecord(fd, 'E', std::string("internal error: ") + e.what());
  } catch (...) {
    writeRecord(fd, 'E', "internal error");
  }
  std::fflush(nullptr); // what the work printed (stdio); iostreams share it
  ::_exit(0);
}

/// The parent's side of one child: the records read so far.
class Reader {
public:
  Reader(int fd, pid_t pid, std::chrono::milliseconds timeout)
      : stepTimeout(timeout), fd_(fd), pid_(pid), timeout_(timeout) {
    setDeadline(timeout);
  }

  /// Reads until the child is gone (true, its wait status in `waitStatus`)
  /// or the deadline passes without a record (false).
  bool run(int &waitStatus) {
    using namespace std::chrono;
    bool eof = false;
    for (;;) {
      // Poll in short slices: a grandchild the plugin spawned could hold
      // the pipe open after the child is gone, so EOF alone is not enough.
      auto left = duration_cast<milliseconds>(deadline_ - steady_clock::now()).count();
      if (!eof) {
        pollfd p{fd_, POLLIN, 0};
        int ready = ::poll(&p, 1, int(std::clamp<long long>(left, 0, 50)));
        if (ready > 0) {
          if (readSome())
            continue;
          eof = true;
        }
      } else if (left > 0) {
        ::usleep(5000);
      }
      pid_t done = ::waitpid(pid_, &waitStatus, WNOHANG);
      if (done < 0 && errno == ECHILD)
        waitStatus = 0; // SIGCHLD is ignored: the child was reaped for us
      if (done == pid_ || (done < 0 && errno == ECHILD)) {
        // Drain what the child wrote before it went.
        ::fcntl(fd_, F_SETFL, O_NONBLOCK);
        while (!eof && readSome()) {
        }
        return true;
      }
      if (steady_clock::now() >= deadline_)
        return false;
    }
  }

  std::optional<std::pair<char, std::string>> final; // 'R' or 'E' and its bytes
  std::string lastPlugin, lastMark;
  std::chrono::milliseconds stepTimeout; // the timeout of the step under way

private:
  void setDeadline(std::chrono::milliseconds step) {
    stepTimeout = step;
    deadline_ = std::chrono::steady_clock::now() +
                (step.count() < 0 ? std::chrono::milliseconds(kNoDeadline) : step);
  }

  /// One read(); false at EOF or on an error.
  bool readSome() {
    constexpr size_t kChunk = size_t(1) << 20;
    const size_t had = buf_.size();
    buf_.resize(had + kChunk);
    ssize_t n;
    do {
      n = ::read(fd_, buf_.data() + had, kChunk);
    } while (n < 0 && errno == EINTR);
    buf_.resize(had + size_t(std::max<ssize_t>(n, 0)));
    if (n <= 0)
      return false;
    parse();
    return true;
  }

  /// Takes the complete records at the front of the buffer.
  void parse() {
    while (!final && buf_.size() - pos_ >= 9) {
      uint64_t size = 0;
      for (int i = 0; i < 8; ++i)
        size |= uint64_t(uint8_t(buf_[pos_ + 1 + size_t(i)])) << (8 * i);
      if (buf_.size() - pos_ - 9 < size) {
        if (buf_.capacity() < pos_ + 9 + size)
          buf_.reserve(pos_ + 9 + size + (size_t(1) << 20)); // an answer: grow once
        return;
      }
      char tag = buf_[pos_];
      if (tag == 'M' && size >= 8) {
        // A mark: its timeout in ms (0: the default, < 0: none), then the
        // plugin, a NUL, and what it does.
        uint64_t ms = 0;
        for (int i = 0; i < 8; ++i)
          ms |= uint64_t(uint8_t(buf_[pos_ + 9 + size_t(i)])) << (8 * i);
        std::chrono::milliseconds step(int64_t(ms) != 0 ? int64_t(ms) : timeout_.count());
        setDeadline(step);
        std::string_view text = std::string_view(buf_).substr(pos_ + 17, size - 8);
        size_t nul = text.find('\0');
        lastPlugin.assign(text.substr(0, nul));
        lastMark.assign(nul == std::string_view::npos ? std::string_view() : text.substr(nul + 1));
        pos_ += 9 + size;
      } else {
        if (pos_ == 0 && buf_.size() == 9 + size) {
          buf_.erase(0, 9); // the common case for a large answer: no copy
          final.emplace(tag, std::move(buf_));
        } else {
          final.emplace(tag, buf_.substr(pos_ + 9, size));
        }
        buf_.clear();
        pos_ = 0;
        return;
      }
      if (pos_ == buf_.size()) {
        buf_.clear();
        pos_ = 0;
      }
    }
  }

  int fd_;
  pid_t pid_;
  std::chrono::milliseconds timeout_;
  std::chrono::steady_clock::time_point deadline_;
  std::string buf_;
  size_t pos_ = 0;
};

} // namespace

void ChildChannel::mark(std::string_view plugin, std::string_view what,
                        std::chrono::milliseconds timeout) {
  if (fd_ < 0)
    return;
  std::string record(8, '\0');
  for (int i = 0; i < 8; ++i)
    record[size_t(i)] = char((uint64_t(timeout.count()) >> (8 * i)) & 0xff);
  record += plugin;
  record += '\0';
  record += what;
  writeRecord(fd_, 'M', record);
}

void ChildChannel::idle() {
  mark({}, {}, std::chrono::milliseconds(-1));
}

ChildChannel *currentChild() {
  return gChannel;
}

std::string ChildEnd::how() const {
  switch (kind) {
  case Crashed: return fmt::format("crashed ({})", signalName(signal));
  case Exited: return fmt::format("exited (status {})", exitStatus);
  case TimedOut: return fmt::format("did not finish within {:g} s (killed)", timeoutSeconds);
  case Answered:
  case Failed: break;
  }
  return "answered";
}

std::string ChildEnd::describe() const {
  if (!lastPlugin.empty())
    return fmt::format("plugin '{}' {} in {}", lastPlugin, how(), lastMark);
  return lastMark.empty() ? how() : fmt::format("{} in {}", how(), lastMark);
}

bool inProbeChild() {
  return gInProbeChild;
}

ChildEnd runChild(const std::function<Expected<std::string>(ChildChannel &)> &work,
                  std::chrono::milliseconds timeout, bool quiet) {
  ChildEnd end;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    end.kind = ChildEnd::Failed;
    end.payload = fmt::format("cannot start a child process (pipe: {})", std::strerror(errno));
    return end;
  }
  // Buffered output would otherwise be written twice if the child exits
  // through exit() (a plugin may call it).
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) {
    int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    end.kind = ChildEnd::Failed;
    end.payload = fmt::format("cannot start a child process (fork: {})", std::strerror(err));
    return end;
  }
  if (pid == 0) {
    ::close(fds[0]);
    childMain(fds[1], work, quiet);
  }
  ::close(fds[1]);

  Reader reader(fds[0], pid, timeout);
  int waitStatus = 0;
  bool reaped = reader.run(waitStatus);
  ::close(fds[0]);
  end.lastPlugin = std::move(reader.lastPlugin);
  end.lastMark = std::move(reader.lastMark);
  if (!reaped) {
    ::kill(pid, SIGKILL);
    while (::waitpid(pid, &waitStatus, 0) < 0 && errno == EINTR) {
    }
    end.kind = ChildEnd::TimedOut;
    end.timeoutSeconds = double(reader.stepTimeout.count()) / 1000.0;
    return end;
  }
  if (WIFSIGNALED(waitStatus)) {
    end.kind = ChildEnd::Crashed;
    end.signal = WTERMSIG(waitStatus);
    return end;
  }
  if (reader.final) {
    end.kind = reader.final->first == 'R' ? ChildEnd::Answered : ChildEnd::Failed;
    end.payload = std::move(reader.final->second);
    return end;
  }
  end.kind = ChildEnd::Exited;
  end.exitStatus = WIFEXITED(waitStatus) ? WEXITSTATUS(waitStatus) : -1;
  return end;
}

Status runInChild(const std::function<Status()> &work, std::chrono::milliseconds timeout) {
  ChildEnd end = runChild(
      [&](ChildChannel &) -> Expected<std::string> {
        Status status = work();
        if (!status.ok())
          return std::move(status).error();
        return std::string();
      },
      timeout, /*quiet=*/true);
  switch (end.kind) {
  case ChildEnd::Answered: return okStatus();
  case ChildEnd::Failed: return Error(end.payload);
  case ChildEnd::Crashed:
    return Error::format("crashed while loading ({})", signalName(end.signal));
  case ChildEnd::TimedOut:
    return Error::format("timed out while loading (no answer within {:g} s)", end.timeoutSeconds);
  case ChildEnd::Exited: break;
  }
  return Error::format("exited while loading (exit status {})", end.exitStatus);
}

} // namespace tessera::plugin
