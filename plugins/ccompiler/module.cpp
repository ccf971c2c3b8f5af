//===- plugins/ccompiler/module.cpp - The compiled C as a module ----------===//
#include "module.h"

#include <dlfcn.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

namespace tessera::ccompiler {

namespace {

using sdk::Error;
using sdk::detail::ByteReader;
using sdk::detail::ByteWriter;

constexpr size_t kScratchAlign = 64;

std::string prefix() { return "ccompiler runtime module: "; }

void writeType(ByteWriter &w, const sdk::TensorType &t) {
  w.uint<uint8_t>(t.dtype.code);
  w.uint<uint8_t>(t.dtype.bits);
  w.uint<uint16_t>(t.dtype.lanes);
  w.uint<uint32_t>(uint32_t(t.shape.size()));
  for (int64_t d : t.shape)
    w.uint<uint64_t>(uint64_t(d));
}

sdk::TensorType readType(ByteReader &r, const std::string &what) {
  sdk::TensorType t;
  t.dtype.code = r.uint<uint8_t>("the dtype of " + what);
  t.dtype.bits = r.uint<uint8_t>("the dtype of " + what);
  t.dtype.lanes = r.uint<uint16_t>("the dtype of " + what);
  if (!(t.dtype == DLDataType{kDLFloat, 32, 1}))
    r.corrupt(what + " has dtype " + sdk::dtypeName(t.dtype) + " (only f32)");
  uint32_t rank = r.uint<uint32_t>("the rank of " + what);
  if (rank > r.left() / 8)
    r.truncated(size_t(rank) * 8, "the shape of " + what);
  uint64_t numel = 1;
  for (uint32_t d = 0; d < rank; ++d) {
    int64_t dim = int64_t(r.uint<uint64_t>("the shape of " + what));
    if (dim < 0 || dim > (int64_t(1) << 40))
      r.corrupt(what + " has dimension " + std::to_string(dim));
    numel = dim == 0 ? 0 : numel;
    if (numel > (uint64_t(1) << 40) / uint64_t(std::max<int64_t>(dim, 1)))
      r.corrupt(what + " has an impossible shape");
    numel *= uint64_t(dim);
    t.shape.push_back(dim);
  }
  return t;
}

std::string fdPath(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

/// Is a library of this path loaded in the process?
bool isLoadedPath(const std::string &path) {
  struct Search {
    const std::string *path;
    bool found = false;
  } search{&path};
  dl_iterate_phdr(
      [](dl_phdr_info *info, size_t, void *data) {
        auto *s = static_cast<Search *>(data);
        if (info->dlpi_name && *s->path == info->dlpi_name)
          s->found = true;
        return s->found ? 1 : 0;
      },
      &search);
  return search.found;
}

} // namespace

//===----------------------------------------------------------------------===//
// Creating, saving, loading
//===----------------------------------------------------------------------===//

std::unique_ptr<CModule> CModule::create(const Translation &t, std::string so, std::string cpu) {
  std::unique_ptr<CModule> m(new CModule);
  m->source_ = t.source;
  m->so_ = std::move(so);
  m->cpu_ = std::move(cpu);
  for (const Weight &w : t.weights) {
    sdk::JsonConstant c(w.name, w.type);
    if (c.bytes())
      std::memcpy(c.data(), w.data.data(), c.bytes());
    m->weights_.push_back(std::move(c));
  }
  m->signatures_.push_back({t.symbol, t.inputs, t.outputs});
  m->open();
  return m;
}

void CModule::save(const sdk::Writer &out) const {
  ByteWriter w(out);
  w.raw(kMagic, sizeof kMagic);
  w.uint<uint32_t>(kFormatVersion);
  w.str(typeKey());
  w.str(source_);
  w.str(so_);
  w.uint<uint64_t>(sdk::digest64(so_));
  w.uint<uint64_t>(weights_.size());
  for (const sdk::JsonConstant &c : weights_) {
    w.str(c.name());
    writeType(w, c.type());
    w.uint<uint64_t>(c.bytes());
    w.raw(c.data(), c.bytes());
  }
  w.uint<uint64_t>(signatures_.size());
  for (const Signature &s : signatures_) {
    w.str(s.symbol);
    for (const auto *types : {&s.inputs, &s.outputs}) {
      w.uint<uint32_t>(uint32_t(types->size()));
      for (const sdk::TensorType &t : *types)
        writeType(w, t);
    }
  }
}

std::unique_ptr<CModule> CModule::load(std::string_view bytes) {
  ByteReader r(bytes, prefix());
  const char *magic = r.take(sizeof kMagic, "the magic");
  if (std::memcmp(magic, kMagic, sizeof kMagic) != 0)
    throw Error(prefix() + "not a saved ccompiler module (no \"TSCC\" magic)",
                TESSERA_STATUS_DATA_LOSS);
  uint32_t version = r.uint<uint32_t>("the format version");
  if (version != kFormatVersion)
    throw Error(prefix() + "format version " + std::to_string(version) +
                    " is not supported (this plugin reads version " +
                    std::to_string(kFormatVersion) + ")",
                TESSERA_STATUS_DATA_LOSS);
  std::string key = r.str("the type key");
  if (key != kTypeKey)
    throw Error(prefix() + "the bytes were saved by a '" + key + "' module",
                TESSERA_STATUS_DATA_LOSS);
  std::unique_ptr<CModule> m(new CModule);
  m->source_ = r.str("the C source");
  m->so_ = r.str("the shared object");
  // The code is mapped and run: damaged bytes must not reach dlopen.
  if (r.uint<uint64_t>("the digest of the shared object") != sdk::digest64(m->so_))
    r.corrupt("the shared object does not match its digest (the bytes were damaged)");
  uint64_t numWeights = r.count(24, "the weight count");
  for (uint64_t i = 0; i < numWeights; ++i) {
    std::string what = "weight " + std::to_string(i);
    std::string name = r.str("the name of " + what);
    sdk::TensorType type = readType(r, what);
    uint64_t size = r.uint<uint64_t>("the byte count of " + what);
    if (size != type.bytes())
      r.corrupt(what + " has " + std::to_string(size) + " bytes, but " + type.str() + " takes " +
                std::to_string(type.bytes()));
    const char *data = r.take(size_t(size), "the data of " + what);
    sdk::JsonConstant c(std::move(name), std::move(type));
    if (size)
      std::memcpy(c.data(), data, size_t(size));
    m->weights_.push_back(std::move(c));
  }
  uint64_t numFunctions = r.count(16, "the function count");
  for (uint64_t i = 0; i < numFunctions; ++i) {
    Signature s;
    s.symbol = r.str("the symbol of function " + std::to_string(i));
    for (auto *types : {&s.inputs, &s.outputs}) {
      std::string kind = types == &s.inputs ? "input" : "output";
      uint32_t n = r.uint<uint32_t>("the " + kind + " count of '" + s.symbol + "'");
      if (n > r.left() / 8)
        r.corrupt("function '" + s.symbol + "' has " + std::to_string(n) + " " + kind + "s");
      for (uint32_t k = 0; k < n; ++k)
        types->push_back(readType(r, kind + " " + std::to_string(k) + " of '" + s.symbol + "'"));
    }
    m->signatures_.push_back(std::move(s));
  }
  if (r.left() != 0)
    r.corrupt(std::to_string(r.left()) + " bytes follow the last function");
  m->open();
  return m;
}

std::string CModule::source(std::string_view format) const {
  if (!format.empty() && format != "c")
    throw Error(prefix() + "no '" + std::string(format) + "' source (formats: c)",
                TESSERA_STATUS_UNIMPLEMENTED);
  return source_;
}

//===----------------------------------------------------------------------===//
// The shared object, in memory
//===----------------------------------------------------------------------===//

void CModule::open() {
  int fd = memfd_create("tessera_ccompiler", MFD_CLOEXEC);
  if (fd < 0)
    throw Error(prefix() + "memfd_create failed: " + std::strerror(errno));
  size_t done = 0;
  while (done < so_.size()) {
    ssize_t n = ::write(fd, so_.data() + done, so_.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      int e = errno;
      ::close(fd);
      throw Error(prefix() + "cannot write the shared object to memory: " + std::strerror(e));
    }
    done += size_t(n);
  }
  // dlopen recognises a library by its path first: a loaded library named
  // /proc/self/fd/N whose fd was closed since (the host code, another
  // plugin's module) would be handed back for our N. So the fd is moved to
  // a number no loaded library is named after, and stays open while the
  // module lives (which keeps our own modules' paths distinct).
  std::vector<int> taken;
  while (isLoadedPath(fdPath(fd))) {
    taken.push_back(fd);
    fd = ::dup(fd); // the lowest free number: not one of `taken`
    if (fd < 0)
      break;
  }
  for (int t : taken)
    ::close(t);
  if (fd < 0)
    throw Error(prefix() + "dup failed: " + std::strerror(errno));
  fd_ = fd;
  std::string path = fdPath(fd);
  handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char *e = dlerror();
    throw Error(prefix() + "cannot load the compiled code: " + (e ? e : "dlopen failed"),
                TESSERA_STATUS_DATA_LOSS);
  }
  for (const sdk::JsonConstant &c : weights_)
    weightPtrs_.push_back(c.as<float>());
  for (size_t i = 0; i < signatures_.size(); ++i) {
    const std::string &sym = signatures_[i].symbol;
    auto resolve = [&](const std::string &name) {
      void *p = dlsym(handle_, name.c_str());
      if (!p)
        throw Error(prefix() + "the compiled code has no symbol '" + name + "'",
                    TESSERA_STATUS_DATA_LOSS);
      return p;
    };
    Resolved r;
    r.entry = reinterpret_cast<Entry>(resolve(sym));
    auto scratch = reinterpret_cast<uint64_t (*)()>(resolve(sym + "_scratch_bytes"));
    auto numWeights = reinterpret_cast<uint64_t (*)()>(resolve(sym + "_num_weights"));
    r.scratchBytes = size_t(scratch());
    if (numWeights() != weights_.size())
      throw Error(prefix() + "function '" + sym + "' takes " + std::to_string(numWeights()) +
                      " weights, the module holds " + std::to_string(weights_.size()),
                  TESSERA_STATUS_DATA_LOSS);
    resolved_.push_back(std::move(r));
    bound_.push_back(std::make_unique<Bound>(this, i));
  }
}

CModule::~CModule() {
  for (Resolved &r : resolved_)
    for (float *p : r.pool)
      ::operator delete(p, std::align_val_t(kScratchAlign));
  if (handle_)
    dlclose(handle_);
  if (fd_ >= 0)
    ::close(fd_);
}

sdk::Function *CModule::function(std::string_view symbol) {
  for (size_t i = 0; i < signatures_.size(); ++i)
    if (signatures_[i].symbol == symbol)
      return bound_[i].get();
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Calls
//===----------------------------------------------------------------------===//

float *CModule::takeScratch(size_t index) {
  Resolved &r = resolved_[index];
  if (r.scratchBytes == 0)
    return nullptr;
  {
    std::lock_guard<std::mutex> lock(poolMutex_);
    if (!r.pool.empty()) {
      float *p = r.pool.back();
      r.pool.pop_back();
      return p;
    }
  }
  return static_cast<float *>(::operator new(r.scratchBytes, std::align_val_t(kScratchAlign)));
}

void CModule::giveScratch(size_t index, float *p) {
  if (!p)
    return;
  std::lock_guard<std::mutex> lock(poolMutex_);
  resolved_[index].pool.push_back(p);
}

void CModule::call(size_t index, std::span<const DLTensor *const> args) {
  const Signature &s = signatures_[index];
  size_t numIn = s.inputs.size(), numOut = s.outputs.size();
  auto fn = [&] { return prefix() + "function '" + s.symbol + "'"; };
  if (std::string why = sdk::argumentCountMismatch(numIn, numOut, args.size()); !why.empty())
    throw Error(fn() + " " + why);
  for (size_t i = 0; i < args.size(); ++i) {
    const sdk::TensorType &want = i < numIn ? s.inputs[i] : s.outputs[i - numIn];
    if (std::string why = sdk::argumentMismatch(args[i], want); !why.empty()) {
      std::string which =
          i < numIn ? "input " + std::to_string(i) : "output " + std::to_string(i - numIn);
      throw Error(fn() + " argument " + std::to_string(i) + " (" + which + "): " + why);
    }
  }
  float *scratch = takeScratch(index);
  int32_t rc = resolved_[index].entry(args.data(), weightPtrs_.data(), scratch);
  giveScratch(index, scratch);
  if (rc != 0)
    throw Error(fn() + " failed (the C entry returned " + std::to_string(rc) + ")",
                TESSERA_STATUS_INTERNAL);
}

} // namespace tessera::ccompiler
