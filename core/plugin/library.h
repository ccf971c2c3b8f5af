//===- plugin/library.h - Opening a plugin file ----------------*- C++ -*-===//
//
// The file-level half of loading a plugin, private to plugin/: the ELF checks
// made before dlopen (so that a text file, a truncated copy or a binary for
// another machine is named as such instead of whatever dlopen makes of it),
// dlopen itself through Boost.DLL (RTLD_NOW | RTLD_LOCAL), and the reading of
// dlopen's error into one actionable reason. Errors carry the reason only;
// the caller prefixes the path.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "support/error.h"
#include "tessera/c/plugin.h"

#include <memory>
#include <string>

namespace tessera::plugin {

/// What the host hands a plugin (tessera_host_t) and what its log callback
/// needs. Lives as long as the library, at a stable address.
struct HostContext {
  tessera_host_t host{};
  std::string label; // "plugin 'json'" once the name is known, else the file name
};

/// A dlopen'ed plugin file. Unloaded (dlclose) when the last owner lets go.
class LoadedLibrary {
public:
  ~LoadedLibrary();
  LoadedLibrary(const LoadedLibrary &) = delete;
  LoadedLibrary &operator=(const LoadedLibrary &) = delete;

  /// The address of an exported symbol, or null.
  void *symbol(const char *name) const;
  HostContext &hostContext() { return host_; }

private:
  friend Expected<std::shared_ptr<LoadedLibrary>> openLibrary(const std::string &path);
  LoadedLibrary();

  struct Impl; // boost::dll::shared_library, kept out of this header
  std::unique_ptr<Impl> impl_;
  HostContext host_;
};

/// Checks that `path` is a readable ELF shared object for this machine
/// (header, class, byte order, machine, type, extent). Reads the file only.
Status checkElfFile(const std::string &path);

/// checkElfFile, then dlopen; the error is the reason ("needs libfoo.so.1,
/// which was not found (...)").
Expected<std::shared_ptr<LoadedLibrary>> openLibrary(const std::string &path);

} // namespace tessera::plugin
