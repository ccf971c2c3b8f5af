//===- plugins/ccompiler/module.h - The compiled C as a module --*- C++ -*-===//
//
// CModule: the runtime module of the ccompiler plugin (type key
// "ccompiler"). It owns the generated C (for get_source), the shared object
// the C compiler built (bytes), the handed-over weights (64-byte aligned)
// and, per function, its symbol and signature.
//
// The shared object is never written to the file system: its bytes go into
// an anonymous memory file (memfd_create, MFD_CLOEXEC) that is dlopen'ed as
// /proc/self/fd/N (RTLD_NOW | RTLD_LOCAL), so loading needs no compiler and
// no temporary files; each module gets its own copy of the code (the fd
// number is one no loaded library is named after, and stays open while the
// module lives: dlopen would otherwise hand back a library of the same path).
//
// A call is validated (count, CPU, f32, shape, compact row-major; the
// JsonRuntime helpers) and then runs the C entry with the weights and a
// scratch buffer taken from a per-module pool (one buffer per concurrent
// call), so the module may be called from several threads at once.
//
// SAVED FORMAT (integers little-endian; str = u64 length + bytes)
//   "TSCC"  u32 format version (1)  str type key ("ccompiler")
//   str C source  str shared object bytes
//   u64 weight count, per weight: str name, type, u64 byte count, raw f32
//   u64 function count, per function: str symbol,
//       u32 input count, types, u32 output count, types
//   type = u8 dtype code, u8 bits, u16 lanes, u32 rank, i64 dims[rank]
// Parsing is bounds-checked: truncated or corrupted bytes give an
// sdk::Error, never a crash.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "translate.h"

#include "tessera/sdk/json_runtime.hpp"
#include "tessera/sdk/plugin.hpp"

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::ccompiler {

class CModule final : public sdk::Module {
public:
  static constexpr const char *kTypeKey = "ccompiler";
  static constexpr char kMagic[4] = {'T', 'S', 'C', 'C'};
  static constexpr uint32_t kFormatVersion = 2; // 2: the shared object's digest64

  struct Signature {
    std::string symbol;
    std::vector<sdk::TensorType> inputs, outputs;
  };

  /// From codegen: the translation and the shared object compiled for `cpu`.
  static std::unique_ptr<CModule> create(const Translation &t, std::string so, std::string cpu);
  /// From save()'s bytes.
  static std::unique_ptr<CModule> load(std::string_view bytes);

  ~CModule() override;

  sdk::Function *function(std::string_view symbol) override;
  void save(const sdk::Writer &out) const override;
  std::string source(std::string_view format) const override;
  /// The -march the shared object was compiled with; empty for a loaded
  /// module (the artifact recorded it when it was compiled).
  std::string targetCpu() const override { return cpu_; }

private:
  CModule() : Module(kTypeKey) {}

  using Entry = int32_t (*)(const DLTensor *const *, const float *const *, float *);

  class Bound : public sdk::Function {
  public:
    Bound(CModule *m, size_t index) : m_(m), index_(index) {}
    void run(std::span<const DLTensor *const> args) override { m_->call(index_, args); }

  private:
    CModule *m_;
    size_t index_;
  };

  /// Loads the shared object and resolves every function's entry points.
  void open();
  void call(size_t index, std::span<const DLTensor *const> args);
  float *takeScratch(size_t index);
  void giveScratch(size_t index, float *p);

  std::string source_, so_, cpu_;
  std::vector<sdk::JsonConstant> weights_;
  std::vector<const float *> weightPtrs_;
  std::vector<Signature> signatures_;

  int fd_ = -1; // the memory file holding the shared object
  void *handle_ = nullptr;
  struct Resolved {
    Entry entry = nullptr;
    size_t scratchBytes = 0;
    std::vector<float *> pool; // free scratch buffers
  };
  std::vector<Resolved> resolved_;
  std::vector<std::unique_ptr<Bound>> bound_;
  std::mutex poolMutex_;
};

} // namespace tessera::ccompiler
