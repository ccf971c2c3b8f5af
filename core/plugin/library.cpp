//===- plugin/library.cpp - ELF checks, dlopen and its errors -------------===//
//
// Before dlopen, the file's ELF header is read here: dlopen's own messages
// for a text file or a truncated copy are cryptic ("invalid ELF header",
// "file too short") and a truncated file can even fault while its segments
// are mapped. After a failed dlopen, dlerror's text is turned into a reason
// that names what is missing (a dependency, a symbol, a symbol version).
//
//===----------------------------------------------------------------------===//
#include "plugin/library.h"

#include <boost/dll/shared_library.hpp>

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>

namespace tessera::plugin {

struct LoadedLibrary::Impl {
  boost::dll::shared_library lib;
};

LoadedLibrary::LoadedLibrary() : impl_(std::make_unique<Impl>()) {}
LoadedLibrary::~LoadedLibrary() = default; // Boost.DLL's destructor dlclose()s

void *LoadedLibrary::symbol(const char *name) const {
  // get<char> yields a reference to the byte at the symbol's address.
  return impl_->lib.has(name) ? static_cast<void *>(&impl_->lib.get<char>(name)) : nullptr;
}

namespace {

//===----------------------------------------------------------------------===//
// ELF checks
//===----------------------------------------------------------------------===//

#if defined(__x86_64__)
constexpr uint16_t kHostMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr uint16_t kHostMachine = EM_AARCH64;
#elif defined(__riscv) && __riscv_xlen == 64
constexpr uint16_t kHostMachine = EM_RISCV;
#elif defined(__powerpc64__)
constexpr uint16_t kHostMachine = EM_PPC64;
#elif defined(__s390x__)
constexpr uint16_t kHostMachine = EM_S390;
#else
#error "plugin/library.cpp: add this machine's EM_* constant"
#endif

std::string machineName(uint16_t machine) {
  switch (machine) {
  case EM_386: return "x86 (i386)";
  case EM_X86_64: return "x86-64";
  case EM_ARM: return "32-bit ARM";
  case EM_AARCH64: return "AArch64";
  case EM_RISCV: return "RISC-V";
  case EM_PPC: return "PowerPC";
  case EM_PPC64: return "PowerPC64";
  case EM_S390: return "s390x";
  case EM_MIPS: return "MIPS";
  case EM_LOONGARCH: return "LoongArch";
  default: return fmt::format("ELF machine {}", machine);
  }
}

/// A file opened for reading, closed on scope exit.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0)
      ::close(fd);
  }
};

/// Reads exactly `size` bytes at `offset`; false on a short read.
bool readAt(int fd, void *out, size_t size, uint64_t offset) {
  auto *p = static_cast<char *>(out);
  while (size > 0) {
    ssize_t n = ::pread(fd, p, size, off_t(offset));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    p += n;
    size -= size_t(n);
    offset += uint64_t(n);
  }
  return true;
}

/// Whether an ET_DYN file's dynamic section has DF_1_PIE: a
/// position-independent executable, which dlopen refuses.
bool isPie(int fd, const Elf64_Phdr &dynamic, uint64_t fileSize) {
  if (dynamic.p_offset > fileSize || dynamic.p_filesz > fileSize - dynamic.p_offset)
    return false;
  size_t count = dynamic.p_filesz / sizeof(Elf64_Dyn);
  for (size_t i = 0; i < count && i < 4096; ++i) {
    Elf64_Dyn dyn;
    if (!readAt(fd, &dyn, sizeof dyn, dynamic.p_offset + i * sizeof dyn) || dyn.d_tag == DT_NULL)
      return false;
    if (dyn.d_tag == DT_FLAGS_1 && (dyn.d_un.d_val & DF_1_PIE))
      return true;
  }
  return false;
}

//===----------------------------------------------------------------------===//
// dlopen errors
//===----------------------------------------------------------------------===//

/// The dlerror text inside Boost.DLL's exception message, which reads
/// "boost::dll::shared_library::load() failed (dlerror system message: TEXT): ERRNO".
std::string dlerrorFromWhat(const std::string &what) {
  static constexpr std::string_view marker = "(dlerror system message: ";
  size_t begin = what.find(marker);
  if (begin == std::string::npos)
    return what;
  begin += marker.size();
  size_t end = what.rfind("): ");
  if (end == std::string::npos || end < begin)
    end = what.size();
  return what.substr(begin, end - begin);
}

bool sameFile(const std::string &a, const std::string &b) {
  std::error_code ec;
  return a == b || std::filesystem::equivalent(a, b, ec);
}

/// dlerror's text -> the reason shown to the user. `path` is the plugin file.
std::string describeDlopenError(const std::string &text, const std::string &path) {
  // "libfoo.so.1: cannot open shared object file: No such file or directory"
  static constexpr std::string_view cannotOpen = ": cannot open shared object file";
  if (size_t at = text.find(cannotOpen); at != std::string::npos) {
    std::string lib = text.substr(0, at);
    if (!sameFile(lib, path))
      return fmt::format("needs {}, which was not found (install it or add its folder to "
                         "LD_LIBRARY_PATH)",
                         lib);
    return fmt::format("dlopen cannot open the file ({})", text.substr(at + cannotOpen.size() + 2));
  }
  // "/x/libp.so: undefined symbol: foo" (possibly ", version V")
  static constexpr std::string_view undefined = ": undefined symbol: ";
  if (size_t at = text.find(undefined); at != std::string::npos) {
    std::string object = text.substr(0, at);
    std::string symbol = text.substr(at + undefined.size());
    if (size_t comma = symbol.find(", version "); comma != std::string::npos)
      symbol = symbol.substr(0, comma) + "@" + symbol.substr(comma + 10); // strlen@GLIBC_2.2.5
    if (sameFile(object, path))
      return fmt::format("undefined symbol '{}' (a library it was built against is missing "
                         "or older; link plugins with -Wl,--no-undefined to catch this at build "
                         "time)",
                         symbol);
    return fmt::format("undefined symbol '{}' in its dependency {}", symbol, object);
  }
  // "/lib/libc.so.6: version `GLIBC_2.38' not found (required by /x/libp.so)"
  static constexpr std::string_view version = ": version `";
  if (size_t at = text.find(version); at != std::string::npos) {
    size_t end = text.find('\'', at + version.size());
    if (end != std::string::npos)
      return fmt::format("needs version {} of {}, which this system does not have (the plugin "
                         "was built on a newer system)",
                         text.substr(at + version.size(), end - at - version.size()),
                         text.substr(0, at));
  }
  return fmt::format("dlopen failed: {}", text);
}

} // namespace

Status checkElfFile(const std::string &path) {
  Fd file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (file.fd < 0)
    return Error::format("cannot open the file ({})", std::strerror(errno));
  struct stat st {};
  if (::fstat(file.fd, &st) != 0)
    return Error::format("cannot read the file ({})", std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return Error("not a regular file");
  uint64_t size = uint64_t(st.st_size);

  unsigned char ident[EI_NIDENT] = {};
  size_t identBytes = std::min<uint64_t>(size, EI_NIDENT);
  if (!readAt(file.fd, ident, identBytes, 0) || identBytes < SELFMAG ||
      std::memcmp(ident, ELFMAG, SELFMAG) != 0)
    return Error("not a shared object (no ELF header)");
  if (ident[EI_CLASS] != ELFCLASS64)
    return Error::format("ELF for another machine ({}, this core is 64-bit)",
                         ident[EI_CLASS] == ELFCLASS32 ? "32-bit ELF" : "unknown ELF class");
  if (ident[EI_DATA] != ELFDATA2LSB)
    return Error::format("ELF for another machine ({}, this core is little-endian)",
                         ident[EI_DATA] == ELFDATA2MSB ? "big-endian ELF" : "unknown byte order");

  Elf64_Ehdr ehdr;
  if (size < sizeof ehdr || !readAt(file.fd, &ehdr, sizeof ehdr, 0))
    return Error::format("not a shared object (truncated: the ELF header needs {} bytes, the "
                         "file has {})",
                         sizeof ehdr, size);
  if (ehdr.e_machine != kHostMachine)
    return Error::format("ELF for another machine ({}, this core runs on {})",
                         machineName(ehdr.e_machine), machineName(kHostMachine));
  switch (ehdr.e_type) {
  case ET_DYN: break;
  case ET_EXEC: return Error("not a shared object (an ELF executable)");
  case ET_REL: return Error("not a shared object (an ELF relocatable object file, not linked)");
  case ET_CORE: return Error("not a shared object (an ELF core dump)");
  default: return Error::format("not a shared object (ELF file type {})", ehdr.e_type);
  }

  // Every byte the headers promise must be in the file: a truncated copy
  // would otherwise fault when dlopen maps its segments.
  uint64_t needed = 0;
  auto need = [&](uint64_t offset, uint64_t count, uint64_t entry) {
    if (count && entry)
      needed = std::max(needed,
                        offset <= UINT64_MAX - count * entry ? offset + count * entry : UINT64_MAX);
  };
  need(ehdr.e_phoff, ehdr.e_phnum, ehdr.e_phentsize);
  need(ehdr.e_shoff, ehdr.e_shnum, ehdr.e_shentsize);
  if (ehdr.e_phentsize != sizeof(Elf64_Phdr) || ehdr.e_phnum == 0)
    return Error("not a shared object (no ELF program headers)");
  if (needed > size)
    return Error::format("not a shared object (truncated or corrupt: the ELF headers describe {} "
                         "bytes, the file has {})",
                         needed, size);
  std::optional<Elf64_Phdr> dynamic;
  for (unsigned i = 0; i < ehdr.e_phnum; ++i) {
    Elf64_Phdr ph;
    if (!readAt(file.fd, &ph, sizeof ph, ehdr.e_phoff + uint64_t(i) * sizeof ph))
      return Error("not a shared object (unreadable ELF program headers)");
    if (ph.p_type == PT_LOAD || ph.p_type == PT_DYNAMIC)
      need(ph.p_offset, 1, ph.p_filesz);
    if (ph.p_type == PT_DYNAMIC)
      dynamic = ph;
  }
  if (needed > size)
    return Error::format("not a shared object (truncated or corrupt: the ELF headers describe {} "
                         "bytes, the file has {})",
                         needed, size);
  // A PIE is ET_DYN too; DF_1_PIE tells it from a library (an interpreter
  // does not: libc.so.6 has one, and is a library).
  if (dynamic && isPie(file.fd, *dynamic, size))
    return Error("not a shared object (an ELF executable)");
  return okStatus();
}

Expected<std::shared_ptr<LoadedLibrary>> openLibrary(const std::string &path) {
  TS_RETURN_IF_ERROR(checkElfFile(path));
  std::shared_ptr<LoadedLibrary> library(new LoadedLibrary());
  namespace mode = boost::dll::load_mode;
  try {
    library->impl_->lib.load(std::filesystem::path(path), mode::rtld_now | mode::rtld_local);
  } catch (const std::system_error &e) {
    // The exception's error code is a stale errno; the text is dlerror's.
    return Error(describeDlopenError(dlerrorFromWhat(e.what()), path));
  }
  return library;
}

} // namespace tessera::plugin
