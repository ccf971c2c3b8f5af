//===- tessera/runtime.hpp - C++ wrapper of the runtime C API --*- C++ -*-===//
//
// Header-only RAII classes over tessera/c/runtime.h (C++17):
//
//   tessera::rt::Model    a loaded artifact (shared by sessions; copyable:
//                         copies share the handle)
//   tessera::rt::Session  one per thread; move-only
//   tessera::rt::Tensor   an owning tensor: 64-byte-aligned memory, its shape
//                         and the DLTensor over both (bound with its size,
//                         so a short buffer cannot happen)
//   tessera::rt::Error    thrown on any non-NULL status (what() is the
//                         message, code() the tessera_status_code_t)
//
//   auto model = tessera::rt::Model::load("model.tsr");
//   tessera::rt::Session session(model);
//   auto x = tessera::rt::Tensor::zeros(model.input(0));
//   x.data<float>()[0] = 1.0f;
//   session.setInput("x", x);        // zero-copy, size-checked
//   session.run();
//   const DLTensor &y = session.output("logits");
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tessera/c/runtime.h"
#include "tessera/profile.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessera::rt {

class Error : public std::runtime_error {
public:
  Error(tessera_status_code_t code, const std::string &message)
      : std::runtime_error(message), code_(code) {}
  tessera_status_code_t code() const { return code_; }

private:
  tessera_status_code_t code_;
};

/// Throws an Error for a non-NULL status (and releases it).
inline void check(tessera_status_t *status) {
  if (!status)
    return;
  Error e(tessera_status_code(status), tessera_status_message(status));
  tessera_status_free(status);
  throw e;
}

inline std::string version() {
  return tessera_runtime_version();
}

/// "f32", "i64", "bool", ... for the dtypes models use.
inline std::string dtypeName(DLDataType t) {
  const char *base = t.code == kDLFloat    ? "f"
                     : t.code == kDLBfloat ? "bf"
                     : t.code == kDLInt    ? "i"
                     : t.code == kDLUInt   ? "u"
                                           : nullptr;
  if (t.code == TESSERA_DL_BOOL && t.bits == 8)
    return "bool";
  if (!base || t.lanes != 1)
    return "dtype(" + std::to_string(t.code) + "," + std::to_string(t.bits) + "," +
           std::to_string(t.lanes) + ")";
  return base + std::to_string(t.bits);
}

/// An input's or output's name, dtype and shape.
struct TensorInfo {
  std::string name;
  DLDataType dtype{};
  std::vector<int64_t> shape;
  /// A sequence (a list of tensors the data sizes): dtype is the elements',
  /// elementRank their rank (-1: any), shape empty.
  bool sequence = false;
  int32_t elementRank = -1;

  /// The element count (0 while a dim is a symbol: see Model::symbol).
  int64_t numElements() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d < 0 ? 0 : d;
    return n;
  }
  /// Whether a dim is a symbol (negative: symbol -1 - d of the model).
  bool symbolic() const {
    for (int64_t d : shape)
      if (d < 0)
        return true;
    return false;
  }
  size_t bytes() const {
    return size_t(numElements()) * (dtype.code == TESSERA_DL_BOOL ? 1 : (dtype.bits * dtype.lanes + 7) / 8);
  }
  /// "f32[1, 3, 224, 224]"
  /// "seq(f32[_, _])" for a sequence (elements of any rank: "seq(f32)").
  std::string sequenceStr() const {
    std::string s = "seq(" + dtypeName(dtype);
    if (elementRank >= 0) {
      s += "[";
      for (int32_t i = 0; i < elementRank; ++i)
        s += i ? ", _" : "_";
      s += "]";
    }
    return s + ")";
  }
  std::string str() const {
    if (sequence)
      return sequenceStr();
    std::string s = dtypeName(dtype) + "[";
    for (size_t i = 0; i < shape.size(); ++i)
      s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
  }
};

/// A DLTensor over caller memory (CPU, compact); `shape` must outlive it,
/// so a temporary (`makeTensor(p, dtype, {2, 3})`) does not compile. The
/// buffer's size is not known: Tensor, or setInput with a byte count, checks.
inline DLTensor makeTensor(void *data, DLDataType dtype, const std::vector<int64_t> &shape) {
  DLTensor t{};
  t.data = data;
  t.device = {kDLCPU, 0};
  t.ndim = int32_t(shape.size());
  t.dtype = dtype;
  t.shape = const_cast<int64_t *>(shape.data());
  return t;
}
DLTensor makeTensor(void *data, DLDataType dtype, std::vector<int64_t> &&shape) = delete;

/// A tensor that owns its memory (64-byte aligned, zeroed) and its shape;
/// movable, not copyable (its DLTensor points into it).
class Tensor {
public:
  Tensor(DLDataType dtype, std::vector<int64_t> shape) : shape_(std::move(shape)) {
    for (int64_t d : shape_)
      if (d < 0)
        throw Error(TESSERA_STATUS_INVALID_ARGUMENT, "rt::Tensor: a negative dimension");
    bytes_ = TensorInfo{{}, dtype, shape_}.bytes();
    const size_t allocated = (bytes_ + 63) / 64 * 64 + 64;
    data_.reset(static_cast<unsigned char *>(::operator new[](allocated, std::align_val_t(64))));
    std::fill(data_.get(), data_.get() + allocated, static_cast<unsigned char>(0));
    dl_ = makeTensor(data_.get(), dtype, shape_);
  }
  /// Zeros of an input's or output's dtype and shape; a symbolic input's
  /// dims come from Model::shape: `Tensor(info.dtype, model.shape(info,
  /// {{"H", 224}, {"W", 224}}))`.
  static Tensor zeros(const TensorInfo &info) {
    for (int64_t d : info.shape)
      if (d < 0)
        throw Error(TESSERA_STATUS_INVALID_ARGUMENT,
                    "rt::Tensor::zeros: '" + info.name + "' has symbolic dims: make it with "
                    "Tensor(info.dtype, model.shape(info, {{\"H\", 224}, ...}))");
    return Tensor(info.dtype, info.shape);
  }

  Tensor(Tensor &&other) noexcept { *this = std::move(other); }
  Tensor &operator=(Tensor &&other) noexcept {
    shape_ = std::move(other.shape_);
    data_ = std::move(other.data_);
    bytes_ = other.bytes_;
    dl_ = other.dl_;
    dl_.shape = shape_.data(); // the vector's buffer moved with it
    other.bytes_ = 0;
    other.dl_ = DLTensor{};
    return *this;
  }
  Tensor(const Tensor &) = delete;
  Tensor &operator=(const Tensor &) = delete;

  const DLTensor &dl() const { return dl_; }
  size_t bytes() const { return bytes_; }
  const std::vector<int64_t> &shape() const { return shape_; }
  template <typename T> T *data() { return reinterpret_cast<T *>(data_.get()); }
  template <typename T> const T *data() const { return reinterpret_cast<const T *>(data_.get()); }

private:
  struct Free {
    void operator()(unsigned char *p) const { ::operator delete[](p, std::align_val_t(64)); }
  };
  std::vector<int64_t> shape_;
  std::unique_ptr<unsigned char[], Free> data_;
  size_t bytes_ = 0;
  DLTensor dl_{};
};


/// Where plugins are looked for, in place of TESSERA_PLUGIN_PATH (colon-
/// separated folders and files; the shipped folder still comes last). Call
/// before the first Model::load (tessera_set_plugin_path).
inline void setPluginPath(const std::string &path) {
  check(tessera_set_plugin_path(path.c_str()));
}

class Model {
public:
  static Model load(const std::string &path) {
    tessera_model_t *m = nullptr;
    check(tessera_model_load(path.c_str(), &m));
    return Model(m);
  }
  static Model fromBytes(const void *data, size_t size) {
    tessera_model_t *m = nullptr;
    check(tessera_model_load_bytes(data, size, &m));
    return Model(m);
  }

  size_t numInputs() const { return tessera_model_num_inputs(get()); }
  size_t numOutputs() const { return tessera_model_num_outputs(get()); }
  TensorInfo input(size_t index) const {
    return info(tessera_model_input_name(get(), index),
                tessera_model_input_is_sequence(get(), index) != 0,
                [&](DLDataType *t, int32_t *n, const int64_t **s) {
                  return tessera_model_input_info(get(), index, t, n, s);
                });
  }
  TensorInfo output(size_t index) const {
    return info(tessera_model_output_name(get(), index),
                tessera_model_output_is_sequence(get(), index) != 0,
                [&](DLDataType *t, int32_t *n, const int64_t **s) {
                  return tessera_model_output_info(get(), index, t, n, s);
                });
  }
  std::string metadataJson() const { return tessera_model_metadata_json(get()); }
  /// The CPU level of host code loaded ("x86-64-v3"); "" without host code.
  std::string hostCpu() const { return tessera_model_host_cpu(get()); }

  /// A symbolic dim: its name and inclusive bounds (hi < 0: none). A
  /// negative dim d of an input's or output's shape is symbol -1 - d.
  struct Symbol {
    std::string name;
    int64_t lo = 0, hi = -1;
  };
  size_t numSymbols() const { return tessera_model_num_symbols(get()); }
  Symbol symbol(size_t index) const {
    Symbol out;
    const char *name = nullptr;
    check(tessera_model_symbol(get(), index, &name, &out.lo, &out.hi));
    out.name = name ? name : "";
    return out;
  }
  /// `info`'s shape with its symbolic dims given by name (`{{"N", 1},
  /// {"H", 224}, {"W", 224}}`), for an input's tensor: INVALID_ARGUMENT when
  /// one is missing or outside its bounds.
  std::vector<int64_t> shape(const TensorInfo &info,
                             const std::map<std::string, int64_t> &dims) const {
    std::vector<int64_t> out = info.shape;
    for (int64_t &d : out) {
      if (d >= 0)
        continue;
      const Symbol sym = symbol(size_t(-1 - d));
      auto it = dims.find(sym.name);
      if (it == dims.end())
        throw Error(TESSERA_STATUS_INVALID_ARGUMENT,
                    "'" + info.name + "' (" + str(info) + "): give dim '" + sym.name + "'");
      if (it->second < sym.lo || (sym.hi >= 0 && it->second > sym.hi))
        throw Error(TESSERA_STATUS_INVALID_ARGUMENT,
                    "'" + info.name + "': dim " + sym.name + " = " + std::to_string(it->second) +
                        " is outside " + std::to_string(sym.lo) + ".." +
                        (sym.hi >= 0 ? std::to_string(sym.hi) : std::string()));
      d = it->second;
    }
    return out;
  }

  /// "f32[N, 3, 224, 224]": `info` with its symbols by name.
  std::string str(const TensorInfo &info) const {
    if (info.sequence)
      return info.sequenceStr();
    std::string s = dtypeName(info.dtype) + "[";
    for (size_t i = 0; i < info.shape.size(); ++i) {
      const int64_t d = info.shape[i];
      s += (i ? ", " : "") + (d < 0 ? symbol(size_t(-1 - d)).name : std::to_string(d));
    }
    return s + "]";
  }

  tessera_model_t *get() const { return handle_.get(); }

private:
  explicit Model(tessera_model_t *m) : handle_(m, &tessera_model_release) {}

  template <typename F> static TensorInfo info(const char *name, bool sequence, F &&query) {
    TensorInfo out;
    int32_t ndim = 0;
    const int64_t *shape = nullptr;
    check(query(&out.dtype, &ndim, &shape));
    out.name = name ? name : "";
    out.sequence = sequence;
    if (sequence)
      out.elementRank = ndim;
    else
      out.shape.assign(shape, shape + ndim);
    return out;
  }

  std::shared_ptr<tessera_model_t> handle_;
};

struct SessionOptions {
  int32_t numThreads = 0; // 0: every core
};

/// The outputs of one Session::runWith (tessera_run_result_t): views valid
/// while it lives; movable, not copyable. It may outlive its session.
class RunResult {
public:
  /// Output `index` (or the one named `name`).
  const DLTensor &output(size_t index) const {
    const DLTensor *t = nullptr;
    check(tessera_run_result_get_output(get(), index, &t));
    return *t;
  }
  const DLTensor &output(const std::string &name) const {
    const DLTensor *t = nullptr;
    check(tessera_run_result_get_output_by_name(get(), name.c_str(), &t));
    return *t;
  }
  /// A sequence output's elements.
  std::vector<DLTensor> outputSequence(size_t index) const {
    const DLTensor *elements = nullptr;
    size_t count = 0;
    check(tessera_run_result_get_output_sequence(get(), index, &elements, &count));
    return std::vector<DLTensor>(elements, elements + count);
  }
  tessera_run_result_t *get() const { return handle_.get(); }

private:
  friend class Session;
  explicit RunResult(tessera_run_result_t *r) : handle_(r) {}
  struct Release {
    void operator()(tessera_run_result_t *r) const { tessera_run_result_release(r); }
  };
  std::unique_ptr<tessera_run_result_t, Release> handle_;
};

class Session {
public:
  explicit Session(const Model &model, SessionOptions options = {}) {
    tessera_session_options_t opts{sizeof(tessera_session_options_t), options.numThreads};
    tessera_session_t *s = nullptr;
    check(tessera_session_create(model.get(), &opts, &s));
    handle_.reset(s);
  }

  /// Zero-copy: `tensor.data` must stay valid and unchanged while runs use it.
  void setInput(size_t index, const DLTensor &tensor) {
    check(tessera_session_set_input(get(), index, &tensor));
  }
  void setInput(const std::string &name, const DLTensor &tensor) {
    check(tessera_session_set_input_by_name(get(), name.c_str(), &tensor));
  }
  /// The same, refusing a buffer of `bufferBytes` too short for `tensor`.
  void setInput(size_t index, const DLTensor &tensor, size_t bufferBytes) {
    check(tessera_session_set_input_checked(get(), index, &tensor, bufferBytes));
  }
  void setInput(const std::string &name, const DLTensor &tensor, size_t bufferBytes) {
    check(tessera_session_set_input_by_name_checked(get(), name.c_str(), &tensor, bufferBytes));
  }
  /// An owning tensor: size-checked. It must outlive the runs that read it.
  void setInput(size_t index, const Tensor &tensor) { setInput(index, tensor.dl(), tensor.bytes()); }
  void setInput(const std::string &name, const Tensor &tensor) {
    setInput(name, tensor.dl(), tensor.bytes());
  }
  void setInput(size_t, Tensor &&) = delete; // would dangle after this line
  void setInput(const std::string &, Tensor &&) = delete;
  /// Runs write output `index` into `tensor`'s memory from now on.
  void setOutput(size_t index, const DLTensor &tensor) {
    check(tessera_session_set_output(get(), index, &tensor));
  }
  /// Output `index` goes back to the session's storage.
  void resetOutput(size_t index) { check(tessera_session_set_output(get(), index, nullptr)); }

  /// Binds a sequence input to a list of tensors (copied).
  void setInputSequence(size_t index, const std::vector<DLTensor> &elements) {
    check(tessera_session_set_input_sequence(get(), index, elements.data(), elements.size()));
  }
  /// After a run, a sequence output's elements: views valid until the next
  /// run or the session's end.
  std::vector<DLTensor> outputSequence(size_t index) {
    const DLTensor *elements = nullptr;
    size_t count = 0;
    check(tessera_session_get_output_sequence(get(), index, &elements, &count));
    return std::vector<DLTensor>(elements, elements + count);
  }

  void run() { check(tessera_session_run(get())); }

  /// Runs on `inputs` (one per model input, in order; read in place until
  /// it returns) and returns the outputs. Safe to call from many threads at
  /// once on one session (tessera_session_run_with), unlike the stateful
  /// setInput / run / output, which are for one thread at a time.
  RunResult runWith(const std::vector<DLTensor> &inputs) const {
    tessera_run_result_t *r = nullptr;
    check(tessera_session_run_with(get(), inputs.data(), inputs.size(), &r));
    return RunResult(r);
  }
  RunResult runWith(std::initializer_list<std::reference_wrapper<const Tensor>> inputs) const {
    std::vector<DLTensor> dl;
    for (const Tensor &t : inputs)
      dl.push_back(t.dl());
    return runWith(dl);
  }

  /// Profiling (tessera/profile.hpp): on, each run records where its time
  /// goes (what was recorded before is dropped); off, runs cost nothing more.
  void setProfiling(bool enabled) { check(tessera_session_set_profiling(get(), enabled ? 1 : 0)); }
  /// The runs profiled since setProfiling(true), copied.
  Profile profile() const {
    const tessera_profile_record_t *records = nullptr;
    size_t count = 0;
    check(tessera_session_get_profile(get(), &records, &count));
    return makeProfile(records, count);
  }

  /// Valid until the next run or the session's end.
  const DLTensor &output(size_t index) {
    const DLTensor *t = nullptr;
    check(tessera_session_get_output(get(), index, &t));
    return *t;
  }
  const DLTensor &output(const std::string &name) {
    const DLTensor *t = nullptr;
    check(tessera_session_get_output_by_name(get(), name.c_str(), &t));
    return *t;
  }

  tessera_session_t *get() const { return handle_.get(); }

private:
  struct Release {
    void operator()(tessera_session_t *s) const { tessera_session_release(s); }
  };
  std::unique_ptr<tessera_session_t, Release> handle_;
};

} // namespace tessera::rt
