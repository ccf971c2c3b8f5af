//===- support/file.cpp - Paths checked before they are used --------------===//
#include "support/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace tessera {

namespace {

const char *kindOf(mode_t mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISSOCK(mode))
    return "a socket";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  return "not a regular file";
}

} // namespace

Status checkReadableFile(const std::string &path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return Error::format("{}: cannot open the file ({})", path,
                         errno == ENOENT ? "no such file" : std::strerror(errno))
        .setCode(ErrorCode::NotFound);
  if (S_ISDIR(st.st_mode))
    return Error::format("{}: is a directory, not a file", path)
        .setCode(ErrorCode::InvalidArgument);
  if (!S_ISREG(st.st_mode))
    return Error::format("{}: is {}, not a regular file", path, kindOf(st.st_mode))
        .setCode(ErrorCode::InvalidArgument);
  if (::access(path.c_str(), R_OK) != 0)
    return Error::format("{}: cannot open the file ({})", path, std::strerror(errno))
        .setCode(ErrorCode::NotFound);
  return okStatus();
}

Status checkWritableFile(const std::string &path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return Error::format("{}: is a directory; give a file name", path);
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (parent.empty())
    parent = ".";
  struct stat dir {};
  if (::stat(parent.c_str(), &dir) != 0 || !S_ISDIR(dir.st_mode))
    return Error::format("{}: the folder '{}' does not exist", path, parent.string());
  if (::access(parent.c_str(), W_OK) != 0)
    return Error::format("{}: cannot write in '{}' ({})", path, parent.string(),
                         std::strerror(errno));
  return okStatus();
}

} // namespace tessera
