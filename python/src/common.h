//===- python/src/common.h - Shared by tessera's two extensions -*- C++ -*-===//
//
// Errors (the tessera.Error subclass of each status code, tessera/_base.py),
// dtypes (DLPack <-> NumPy) and input binding (any array-like object -> a
// DLTensor over its memory, or over a copy). Links libtessera_runtime only:
// tessera._runtime uses it with no compiler present.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tessera/c/runtime.h"

#include <pybind11/pybind11.h>

#include <sstream>
#include <string>
#include <vector>

namespace tessera::python {

namespace py = pybind11;

/// The module tessera._base (errors, TensorInfo), imported once.
py::module_ types();

/// Raises the tessera.Error subclass of `code` with `message`.
[[noreturn]] void raise(tessera_status_code_t code, const std::string &message);
/// Raises the error a non-NULL status carries (and frees it).
void throwIfError(tessera_status_t *status);
/// Turns tessera::rt::Error (tessera/runtime.hpp) into its tessera.Error.
void registerErrorTranslator();

/// Concatenates its arguments with operator<<.
template <typename... A> std::string cat(const A &...args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

/// The NumPy dtype of a DLPack dtype (bf16: uint16, its raw bits), or None
/// when NumPy has none.
py::object numpyDtype(DLDataType t);
/// An object's type name, for messages.
std::string typeName(py::handle o);

/// An input bound for one run: a DLTensor over the caller's memory when it
/// is dense and aligned, else over a copy that `keep` owns. Move-only;
/// release with the GIL held (the destructor releases the buffer view and
/// the DLPack tensor).
struct BoundInput {
  DLTensor tensor{};
  size_t bytes = 0;
  std::vector<int64_t> shape;
  Py_buffer view{};
  bool hasView = false;
  DLManagedTensor *managed = nullptr;
  py::object keep;
  bool copied = false; // for tests and docs: whether the memory is a copy

  BoundInput() = default;
  BoundInput(BoundInput &&other) noexcept;
  BoundInput &operator=(BoundInput &&) = delete;
  BoundInput(const BoundInput &) = delete;
  ~BoundInput();
};

/// Binds `value` (for input `name`, whose dtype is `npDtype`: used to
/// convert objects that are not arrays, such as lists).
BoundInput bindInput(const py::object &value, const std::string &name, const py::object &npDtype);

} // namespace tessera::python
