//===- support/file.h - Paths checked before they are used -----*- C++ -*-===//
//
// Every tool and the C API take paths from users. A directory, a FIFO or an
// unreadable file where a file is expected, or an output whose folder does
// not exist, gets one clear message here, before any work starts, instead
// of a bad_alloc (a directory "read" as a file), a hang (a FIFO with no
// writer) or an error after minutes of compiling.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "support/error.h"
#include "support/export.h"

#include <string>

namespace tessera {

/// OK when `path` names a regular file this process can read (symlinks
/// followed). Else "PATH: cannot open the file (no such file)", "PATH: is a
/// directory, not a file", "PATH: is a FIFO, not a regular file", "PATH:
/// cannot open the file (permission denied)".
TESSERA_RT_EXPORT Status checkReadableFile(const std::string &path);

/// OK when a file can be written at `path`: not a directory, and its folder
/// exists and is writable. Else "PATH: is a directory; give a file name",
/// "PATH: the folder 'DIR' does not exist", "PATH: cannot write in 'DIR'
/// (permission denied)".
TESSERA_RT_EXPORT Status checkWritableFile(const std::string &path);

} // namespace tessera
