//===- plugins/ccompiler/cc.cpp - Running the system C compiler -----------===//
//
// posix_spawnp with the compiler's stdout and stderr sent to a log file in
// the temporary folder; no shell is involved, so nothing in the environment
// variables is interpreted beyond the split at spaces.
//
//===----------------------------------------------------------------------===//
#include "cc.h"

#include "tessera/sdk/plugin.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <vector>

extern char **environ;

namespace tessera::ccompiler {

namespace {

using sdk::Error;

std::vector<std::string> splitWords(const std::string &s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string w; in >> w;)
    out.push_back(w);
  return out;
}

std::string envOr(const char *name, const std::string &dflt) {
  const char *v = std::getenv(name);
  return v && *v ? std::string(v) : dflt;
}

/// A temporary folder, removed with its files when it goes out of scope.
class TempDir {
public:
  TempDir() {
    std::string base = envOr("TMPDIR", "/tmp") + "/tessera-ccompiler-XXXXXX";
    std::vector<char> buf(base.begin(), base.end());
    buf.push_back('\0');
    if (!mkdtemp(buf.data()))
      throw Error("ccompiler: cannot create a temporary folder " + base + ": " +
                  std::strerror(errno));
    path_ = buf.data();
  }
  ~TempDir() {
    for (const std::string &f : files_)
      ::unlink((path_ + "/" + f).c_str());
    ::rmdir(path_.c_str());
  }
  /// The path of `name` in the folder (removed with it).
  std::string file(const std::string &name) {
    files_.insert(name);
    return path_ + "/" + name;
  }

private:
  std::string path_;
  std::set<std::string> files_;
};

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string joined(const std::vector<std::string> &argv) {
  std::string s;
  for (const std::string &a : argv)
    s += (s.empty() ? "" : " ") + a;
  return s;
}

/// The lines of `source` that the compiler's `log` names as <file>:L:C:.
std::string quoteLines(const std::string &log, const std::string &file,
                       const std::string &source) {
  std::vector<std::string> lines;
  std::istringstream in(source);
  for (std::string l; std::getline(in, l);)
    lines.push_back(l);
  std::regex where(std::regex_replace(file, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") +
                   R"(:(\d+):(\d+):)");
  std::set<long> seen;
  std::string out;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), where);
       it != std::sregex_iterator() && seen.size() < 5; ++it) {
    long n = std::stol((*it)[1].str());
    if (n < 1 || size_t(n) > lines.size() || !seen.insert(n).second)
      continue;
    out += "  " + file + ":" + std::to_string(n) + " | " + lines[size_t(n - 1)] + "\n";
  }
  return out;
}

} // namespace

std::string compilerCommand() {
  return envOr("TESSERA_CC", envOr("CC", "cc"));
}

std::string compilerFlags() {
  return envOr("TESSERA_CCOMPILER_CFLAGS", kDefaultCFlags);
}

CompiledC compileC(const std::string &source, const std::string &symbol,
                   std::string_view targetCpu) {
  CompiledC result{{}, targetCpu.empty() ? "native" : std::string(targetCpu)};
  TempDir dir;
  std::string cFile = symbol + ".c";
  std::string cPath = dir.file(cFile), soPath = dir.file(symbol + ".so"),
              logPath = dir.file("cc.log");
  {
    std::ofstream out(cPath, std::ios::binary);
    out << source;
    if (!out.flush())
      throw Error("ccompiler: cannot write " + cPath);
  }
  std::vector<std::string> argv = splitWords(compilerCommand());
  if (argv.empty())
    argv.push_back("cc");
  const std::vector<std::string> flags = splitWords(compilerFlags());
  bool march = false;
  for (const std::string &f : flags)
    if (f.starts_with("-march=")) {
      march = true;
      result.cpu = f.substr(7); // the last one is GCC's
    }
  if (!march)
    argv.push_back("-march=" + result.cpu);
  argv.insert(argv.end(), flags.begin(), flags.end());
  for (const char *a : {"-o", soPath.c_str(), cPath.c_str(), "-lm"})
    argv.emplace_back(a);
  std::vector<char *> cargv;
  for (std::string &a : argv)
    cargv.push_back(a.data());
  cargv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, logPath.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, cargv[0], &actions, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  std::string command = joined(argv);
  if (rc != 0)
    throw Error("ccompiler: cannot run the C compiler '" + argv[0] + "': " + std::strerror(rc) +
                    " (set TESSERA_CC or CC to a C compiler; command: " + command + ")",
                TESSERA_STATUS_FAILED_PRECONDITION);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::string log = readFile(logPath);
  bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!ok) {
    std::string how = WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                        : "killed by signal " + std::to_string(WTERMSIG(status));
    if (log.size() > 4000)
      log = log.substr(0, 4000) + "\n[... compiler output truncated]";
    std::string quoted = quoteLines(log, cFile, source);
    throw Error("ccompiler: the C compiler failed (" + how + "): " + command + "\n" + log +
                    (quoted.empty() ? "" : "generated C:\n" + quoted),
                TESSERA_STATUS_INTERNAL);
  }
  result.so = readFile(soPath);
  if (result.so.empty())
    throw Error("ccompiler: the C compiler wrote no shared object (" + command + ")",
                TESSERA_STATUS_INTERNAL);
  return result;
}

} // namespace tessera::ccompiler
