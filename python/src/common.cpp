//===- python/src/common.cpp - Errors, dtypes and input binding ----------===//
#include "common.h"

#include "tessera/runtime.hpp"

#include <pybind11/numpy.h>

#include <cstdint>
#include <cstring>

namespace tessera::python {

py::module_ types() {
  static PyObject *mod = py::module_::import("tessera._base").release().ptr(); // never freed
  return py::reinterpret_borrow<py::module_>(mod);
}

namespace {

const char *errorClassName(tessera_status_code_t code) {
  switch (code) {
  case TESSERA_STATUS_INVALID_ARGUMENT: return "InvalidArgument";
  case TESSERA_STATUS_NOT_FOUND: return "NotFound";
  case TESSERA_STATUS_FAILED_PRECONDITION: return "FailedPrecondition";
  case TESSERA_STATUS_DATA_LOSS: return "DataLoss";
  case TESSERA_STATUS_UNIMPLEMENTED: return "Unimplemented";
  case TESSERA_STATUS_INTERNAL: return "InternalError";
  case TESSERA_STATUS_OUT_OF_MEMORY: return "OutOfMemory";
  default: return "Error";
  }
}

} // namespace

void raise(tessera_status_code_t code, const std::string &message) {
  py::object cls = types().attr(errorClassName(code));
  PyErr_SetObject(cls.ptr(), py::str(message).ptr());
  throw py::error_already_set();
}

void throwIfError(tessera_status_t *status) {
  if (!status)
    return;
  tessera_status_code_t code = tessera_status_code(status);
  std::string message = tessera_status_message(status);
  tessera_status_free(status);
  raise(code, message);
}

void registerErrorTranslator() {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p)
        std::rethrow_exception(p);
    } catch (const rt::Error &e) {
      py::object cls = types().attr(errorClassName(e.code()));
      PyErr_SetObject(cls.ptr(), py::str(std::string(e.what())).ptr());
    }
  });
}

std::string typeName(py::handle o) {
  return py::str(py::type::of(o).attr("__name__"));
}

py::object numpyDtype(DLDataType t) {
  if (t.lanes != 1)
    return py::none();
  if (t.code == TESSERA_DL_BOOL && t.bits == 8)
    return py::dtype("bool");
  if (t.code == kDLBfloat && t.bits == 16)
    return py::dtype("uint16"); // NumPy has no bfloat16: the raw bits, as `tessera run` writes
  const char *base = t.code == kDLFloat  ? "float"
                     : t.code == kDLInt  ? "int"
                     : t.code == kDLUInt ? "uint"
                                         : nullptr;
  const bool sized =
      t.bits == 16 || t.bits == 32 || t.bits == 64 || (t.bits == 8 && t.code != kDLFloat);
  if (!base || !sized)
    return py::none();
  return py::dtype(std::string(base) + std::to_string(t.bits));
}

BoundInput::BoundInput(BoundInput &&o) noexcept
    : tensor(o.tensor), bytes(o.bytes), shape(std::move(o.shape)), view(o.view), hasView(o.hasView),
      managed(o.managed), keep(std::move(o.keep)), copied(o.copied) {
  o.hasView = false;
  o.managed = nullptr;
}

BoundInput::~BoundInput() {
  if (hasView)
    PyBuffer_Release(&view);
  if (managed && managed->deleter)
    managed->deleter(managed);
}

namespace {

/// The DLPack dtype of a buffer-protocol format, or code 255 when it has none.
DLDataType dtypeOfFormat(const char *format, py::ssize_t itemsize, bool *bigEndian) {
  DLDataType t{255, uint8_t(itemsize * 8), 1};
  *bigEndian = false;
  if (!format)
    format = "B";
  while (*format == '@' || *format == '=' || *format == '<' || *format == '>' || *format == '!') {
    if (*format == '>' || *format == '!')
      *bigEndian = true;
    ++format;
  }
  if (format[0] == '\0' || format[1] != '\0')
    return t;
  switch (format[0]) {
  case '?': t.code = TESSERA_DL_BOOL; break;
  case 'b':
  case 'h':
  case 'i':
  case 'l':
  case 'q':
  case 'n': t.code = kDLInt; break;
  case 'B':
  case 'H':
  case 'I':
  case 'L':
  case 'Q':
  case 'N': t.code = kDLUInt; break;
  case 'e':
  case 'f':
  case 'd': t.code = kDLFloat; break;
  default: break;
  }
  if (*bigEndian && itemsize > 1)
    t.code = 255;
  return t;
}

py::module_ numpy() {
  static PyObject *mod = py::module_::import("numpy").release().ptr();
  return py::reinterpret_borrow<py::module_>(mod);
}

/// A view of `value`'s buffer when it is dense and aligned; false otherwise
/// (nothing held).
bool bindBuffer(BoundInput &b, const py::object &value, const std::string &name) {
  if (PyObject_GetBuffer(value.ptr(), &b.view, PyBUF_RECORDS_RO) != 0) {
    py::error_already_set e; // fetches and clears the Python error
    raise(TESSERA_STATUS_INVALID_ARGUMENT,
          cat("input '", name, "': a ", typeName(value), " that gives no buffer: ", e.what()));
  }
  b.hasView = true;
  bool bigEndian = false;
  DLDataType dt = dtypeOfFormat(b.view.format, b.view.itemsize, &bigEndian);
  if (dt.code == 255)
    raise(TESSERA_STATUS_INVALID_ARGUMENT,
          cat("input '", name, "': elements of buffer format '",
              b.view.format ? b.view.format : "B", "' are not a tensor dtype Tessera knows",
              bigEndian ? " (big-endian)" : ""));
  const bool aligned = reinterpret_cast<uintptr_t>(b.view.buf) % uintptr_t(b.view.itemsize) == 0;
  if (!aligned || !PyBuffer_IsContiguous(&b.view, 'C')) {
    PyBuffer_Release(&b.view);
    b.hasView = false;
    return false;
  }
  b.shape.assign(b.view.shape, b.view.shape + b.view.ndim);
  b.tensor.data = b.view.buf;
  b.tensor.device = {kDLCPU, 0};
  b.tensor.ndim = b.view.ndim;
  b.tensor.dtype = dt;
  b.tensor.shape = b.shape.data();
  b.bytes = size_t(b.view.len);
  return true;
}

/// A DLPack tensor from `value.__dlpack__()` when it is a dense, aligned
/// CPU tensor; false otherwise (the capsule is dropped, unconsumed).
bool bindDlpack(BoundInput &b, const py::object &value, const std::string &name) {
  py::object capsule;
  try {
    capsule = value.attr("__dlpack__")();
  } catch (py::error_already_set &e) { // torch: a tensor that requires grad, ...
    raise(TESSERA_STATUS_INVALID_ARGUMENT,
          cat("input '", name, "': a ", typeName(value), " refused to export itself (",
              e.what(), ")"));
  }
  if (!PyCapsule_IsValid(capsule.ptr(), "dltensor"))
    raise(TESSERA_STATUS_INVALID_ARGUMENT,
          cat("input '", name, "': __dlpack__() of a ", typeName(value),
              " did not return a 'dltensor' capsule"));
  auto *managed = static_cast<DLManagedTensor *>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  const DLTensor &t = managed->dl_tensor;
  if (t.device.device_type != kDLCPU)
    raise(TESSERA_STATUS_INVALID_ARGUMENT,
          cat("input '", name, "': a tensor on device type ", int(t.device.device_type),
              "; Tessera runs on the CPU (move it with .cpu() first)"));
  const int64_t itemBytes = (int64_t(t.dtype.bits) * t.dtype.lanes + 7) / 8;
  bool compact = true;
  int64_t numel = 1, expected = 1;
  for (int32_t i = t.ndim - 1; i >= 0; --i) {
    if (t.strides && t.shape[i] != 1 && t.strides[i] != expected)
      compact = false;
    expected *= t.shape[i];
    numel *= t.shape[i];
  }
  const uintptr_t address = reinterpret_cast<uintptr_t>(t.data) + t.byte_offset;
  if (!compact || (itemBytes > 0 && address % uintptr_t(itemBytes) != 0))
    return false;
  PyCapsule_SetName(capsule.ptr(), "used_dltensor");
  b.managed = managed;
  b.tensor = t;
  b.tensor.strides = nullptr;
  b.bytes = size_t(t.byte_offset) + size_t(numel * itemBytes);
  return true;
}

} // namespace

BoundInput bindInput(const py::object &value, const std::string &name, const py::object &npDtype) {
  BoundInput b;
  if (PyObject_CheckBuffer(value.ptr())) {
    if (bindBuffer(b, value, name))
      return b;
    b.keep = numpy().attr("array")(value, py::arg("order") = "C"); // a new, aligned copy
  } else if (py::hasattr(value, "__dlpack__")) {
    if (bindDlpack(b, value, name))
      return b;
    b.keep = numpy().attr("array")(numpy().attr("from_dlpack")(value), py::arg("order") = "C");
  } else {
    if (value.is_none())
      raise(TESSERA_STATUS_INVALID_ARGUMENT, cat("input '", name, "': None is not a tensor"));
    try {
      b.keep = numpy().attr("asarray")(value, npDtype);
    } catch (py::error_already_set &e) {
      raise(TESSERA_STATUS_INVALID_ARGUMENT,
            cat("input '", name, "': a ", typeName(value),
                " is not an array (NumPy could not convert it: ", e.what(), ")"));
    }
  }
  b.copied = true;
  if (!bindBuffer(b, b.keep, name))
    raise(TESSERA_STATUS_INTERNAL, cat("input '", name, "': its copy is not dense"));
  return b;
}

} // namespace tessera::python
