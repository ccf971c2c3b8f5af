//===- python/src/runtime_module.cpp - tessera._runtime -------------------===//
//
// The extension behind `tessera.runtime`: Model and Session over
// libtessera_runtime's C API (tessera/c/runtime.h, through the header-only
// tessera/runtime.hpp), and nothing of the compiler: an app that only runs
// artifacts imports this module with no compiler library, LLVM or protobuf
// present (tests/test_runtime_only.py checks what it links).
//
// Session.run binds each input in place when the object hands out dense,
// aligned memory (the buffer protocol: NumPy; __dlpack__: PyTorch CPU
// tensors) and copies it otherwise (numpy.ascontiguousarray / asarray); the
// GIL is released while the model runs; outputs are copied into new NumPy
// arrays that own their memory. Every C status becomes the tessera.Error
// subclass of its code (tessera/_base.py) with the runtime's own message.
//
//===----------------------------------------------------------------------===//
#include "common.h"

#include "runtime/artifact.h"
#include "tessera/runtime.hpp"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace py = pybind11;
using namespace tessera::python;
namespace rt = tessera::rt;

namespace {

/// A dim of an input/output shape for Python: an int, or the symbol's name.
py::tuple pyShape(const rt::Model &model, const std::vector<int64_t> &shape) {
  py::tuple t(shape.size());
  for (size_t i = 0; i < shape.size(); ++i)
    t[i] = shape[i] < 0 ? py::object(py::str(model.symbol(size_t(-1 - shape[i])).name))
                        : py::object(py::int_(shape[i]));
  return t;
}

py::object tensorInfo(const rt::Model &model, const rt::TensorInfo &info) {
  if (info.sequence) { // one None per element dim
    py::tuple dims(size_t(std::max(info.elementRank, 0)));
    for (size_t i = 0; i < dims.size(); ++i)
      dims[i] = py::none();
    return types().attr("TensorInfo")(info.name, dims, numpyDtype(info.dtype), true);
  }
  return types().attr("TensorInfo")(info.name, pyShape(model, info.shape), numpyDtype(info.dtype));
}

rt::Model loadModel(const py::object &source);

/// A loaded artifact (tessera_model_t), shared by its sessions.
struct PyModel {
  rt::Model model;

  py::list inputs() const {
    py::list out;
    for (size_t i = 0; i < model.numInputs(); ++i)
      out.append(tensorInfo(model, model.input(i)));
    return out;
  }
  py::list outputs() const {
    py::list out;
    for (size_t i = 0; i < model.numOutputs(); ++i)
      out.append(tensorInfo(model, model.output(i)));
    return out;
  }
  py::dict symbols() const {
    py::dict out;
    for (size_t i = 0; i < model.numSymbols(); ++i) {
      rt::Model::Symbol s = model.symbol(i);
      out[py::str(s.name)] =
          py::make_tuple(s.lo, s.hi < 0 ? py::object(py::none()) : py::object(py::int_(s.hi)));
    }
    return out;
  }
};

/// The artifact of a Model, a path (str or os.PathLike), bytes-like data, or
/// an object with `_tessera_artifact_bytes()` (tessera.Artifact).
rt::Model loadModel(const py::object &source) {
  if (py::isinstance<PyModel>(source))
    return source.cast<const PyModel &>().model;
  py::object src = source;
  if (py::hasattr(src, "_tessera_artifact_bytes"))
    src = src.attr("_tessera_artifact_bytes")();
  std::optional<rt::Model> model;
  if (PyObject_CheckBuffer(src.ptr())) {
    py::buffer_info info = py::reinterpret_borrow<py::buffer>(src).request();
    const void *data = info.ptr;
    const size_t size = size_t(info.size * info.itemsize);
    py::gil_scoped_release nogil;
    model.emplace(rt::Model::fromBytes(data, size));
    return *model;
  }
  if (py::isinstance<py::str>(src) || py::hasattr(src, "__fspath__")) {
    std::string path = py::str(py::module_::import("os").attr("fspath")(src));
    py::gil_scoped_release nogil;
    model.emplace(rt::Model::load(path));
    return *model;
  }
  throw py::type_error(
      "expected an artifact: a tessera.Artifact, a tessera.runtime.Model, a path (str or "
      "os.PathLike) or bytes, got " +
      std::string(py::str(py::type::of(source).attr("__name__"))));
}

/// One session: a tessera_session_t, its model, and a mutex so that two
/// Python threads sharing a session take turns (the C API wants one thread
/// at a time per session).
class PySession {
public:
  PySession(const py::object &source, int threads) : model_(loadModel(source)) {
    tessera_status_t *status = nullptr;
    if (threads < 0)
      raise(TESSERA_STATUS_INVALID_ARGUMENT,
            cat("threads must be 0 (every core) or more, not ", threads));
    {
      py::gil_scoped_release nogil;
      tessera_session_options_t o{sizeof(tessera_session_options_t), threads};
      status = tessera_session_create(model_.get(), &o, &session_);
    }
    throwIfError(status);
    for (size_t i = 0; i < model_.numInputs(); ++i) {
      rt::TensorInfo info = model_.input(i);
      inputIndex_.emplace(info.name, i);
      inputs_.push_back(
          InputSlot{info.name, numpyDtype(info.dtype), py::str(info.name), info.sequence});
    }
    for (size_t i = 0; i < model_.numOutputs(); ++i) {
      rt::TensorInfo info = model_.output(i);
      outputIndex_.emplace(info.name, i);
      outputs_.push_back(
          OutputSlot{info.name, numpyDtype(info.dtype), py::str(info.name), info.sequence});
    }
  }
  ~PySession() { tessera_session_release(session_); }

  /// run(feeds) -> dict; run(output_names, feeds) -> list (ORT's order).
  py::object run(const py::object &first, const py::object &second) {
    const bool ortStyle = !second.is_none() || first.is_none() || !isMapping(first);
    const py::object &feeds = ortStyle ? second : first;
    if (!isMapping(feeds))
      raise(TESSERA_STATUS_INVALID_ARGUMENT,
            "run: feeds must be a dict of input name -> array, e.g. "
            "sess.run({'x': array}) or sess.run(None, {'x': array})");
    std::vector<size_t> wanted = selectOutputs(ortStyle ? first : py::none());
    if (!session_)
      raise(TESSERA_STATUS_FAILED_PRECONDITION, "run: the session is closed");

    std::vector<std::vector<BoundInput>> bound = bindFeeds(feeds);
    lastRunCopies_ = 0;
    for (const auto &input : bound)
      for (const BoundInput &b : input)
        lastRunCopies_ += b.copied;
    std::vector<const DLTensor *> results(wanted.size(), nullptr);
    std::vector<size_t> counts(wanted.size(), 1); // a sequence output's elements
    std::unique_lock<std::mutex> lock;
    tessera_status_t *st = nullptr;
    {
      py::gil_scoped_release nogil;
      lock = std::unique_lock<std::mutex>(mu_);
      if (!session_) {
        st = tessera_status_create(TESSERA_STATUS_FAILED_PRECONDITION,
                                   "run: the session was closed by another thread");
      }
      for (size_t i = 0; !st && i < bound.size(); ++i) {
        if (inputs_[i].sequence) {
          std::vector<DLTensor> elements;
          for (const BoundInput &b : bound[i])
            elements.push_back(b.tensor);
          st = tessera_session_set_input_sequence(session_, i, elements.data(), elements.size());
        } else {
          st = tessera_session_set_input_checked(session_, i, &bound[i][0].tensor,
                                                 bound[i][0].bytes);
        }
      }
      if (!st)
        st = tessera_session_run(session_);
      for (size_t k = 0; !st && k < wanted.size(); ++k)
        st = outputs_[wanted[k]].sequence
                 ? tessera_session_get_output_sequence(session_, wanted[k], &results[k], &counts[k])
                 : tessera_session_get_output(session_, wanted[k], &results[k]);
    }
    throwIfError(st);
    auto result = [&](size_t k) -> py::object {
      const OutputSlot &o = outputs_[wanted[k]];
      if (!o.sequence)
        return copyOut(*results[k], o.dtype);
      py::list elements;
      for (size_t e = 0; e < counts[k]; ++e)
        elements.append(copyOut(results[k][e], o.dtype));
      return elements;
    };
    if (!ortStyle) {
      py::dict out;
      for (size_t k = 0; k < wanted.size(); ++k)
        out[outputs_[wanted[k]].pyName] = result(k);
      return out;
    }
    py::list out(wanted.size());
    for (size_t k = 0; k < wanted.size(); ++k)
      out[k] = result(k);
    return out;
  }

  void close() {
    py::gil_scoped_release nogil;
    std::lock_guard<std::mutex> lock(mu_);
    tessera_session_release(session_);
    session_ = nullptr;
  }
  bool closed() const { return session_ == nullptr; }
  PyModel model() const { return PyModel{model_}; }

  /// Profiling (tessera/profile.hpp): on drops what was recorded before.
  void setProfiling(bool on) {
    tessera_status_t *st = nullptr;
    {
      py::gil_scoped_release nogil;
      std::lock_guard<std::mutex> lock(mu_);
      st = session_ ? tessera_session_set_profiling(session_, on ? 1 : 0)
                    : tessera_status_create(TESSERA_STATUS_FAILED_PRECONDITION,
                                            "profile: the session is closed");
    }
    throwIfError(st);
  }
  /// What the runs since setProfiling(true) recorded.
  rt::Profile profile() {
    const tessera_profile_record_t *records = nullptr;
    size_t count = 0;
    rt::Profile out;
    tessera_status_t *st = nullptr;
    {
      py::gil_scoped_release nogil;
      std::lock_guard<std::mutex> lock(mu_);
      st = session_ ? tessera_session_get_profile(session_, &records, &count)
                    : tessera_status_create(TESSERA_STATUS_FAILED_PRECONDITION,
                                            "profile: the session is closed");
      if (!st)
        out = rt::makeProfile(records, count);
    }
    throwIfError(st);
    return out;
  }
  int lastRunCopies() const { return lastRunCopies_; }

private:
  struct InputSlot {
    std::string name;
    py::object npDtype;
    py::str pyName;
    bool sequence = false; // fed as a list of arrays
  };
  struct OutputSlot {
    std::string name;
    py::object dtype;
    py::str pyName;
    bool sequence = false; // returned as a list of arrays
  };

  static bool isMapping(const py::object &o) {
    return PyDict_Check(o.ptr()) || (!o.is_none() && PyMapping_Check(o.ptr()) &&
                                     py::hasattr(o, "items") && !py::isinstance<py::str>(o));
  }

  std::string inputNames() const {
    std::string s;
    for (const InputSlot &in : inputs_)
      s += (s.empty() ? "'" : ", '") + in.name + "'";
    return s.empty() ? "none" : s;
  }
  std::string outputNames() const {
    std::string s;
    for (const OutputSlot &out : outputs_)
      s += (s.empty() ? "'" : ", '") + out.name + "'";
    return s;
  }

  std::vector<size_t> selectOutputs(const py::object &names) const {
    std::vector<size_t> out;
    if (names.is_none()) {
      for (size_t i = 0; i < outputs_.size(); ++i)
        out.push_back(i);
      return out;
    }
    if (py::isinstance<py::str>(names) || !py::isinstance<py::iterable>(names))
      raise(TESSERA_STATUS_INVALID_ARGUMENT,
            "run: output_names must be a list of output names or None");
    for (py::handle h : names) {
      if (!py::isinstance<py::str>(h))
        raise(TESSERA_STATUS_INVALID_ARGUMENT,
              "run: output_names must be a list of output names or None");
      std::string name = h.cast<std::string>();
      auto it = outputIndex_.find(name);
      if (it == outputIndex_.end())
        raise(TESSERA_STATUS_NOT_FOUND,
              cat("run: the model has no output '", name, "' (its outputs: ", outputNames(), ")"));
      out.push_back(it->second);
    }
    return out;
  }

  /// Per model input, in input order, from `feeds`: one DLTensor, or a
  /// sequence input's elements (a list or tuple of arrays).
  std::vector<std::vector<BoundInput>> bindFeeds(const py::object &feeds) const {
    py::dict dict = PyDict_Check(feeds.ptr()) ? py::reinterpret_borrow<py::dict>(feeds)
                                              : py::dict(feeds.attr("items")());
    std::vector<std::vector<BoundInput>> bound;
    bound.reserve(inputs_.size());
    for (const InputSlot &in : inputs_) {
      PyObject *value = PyDict_GetItemWithError(dict.ptr(), in.pyName.ptr());
      if (!value) {
        if (PyErr_Occurred())
          throw py::error_already_set();
        checkFeedNames(dict); // a misspelt name says so
        raise(TESSERA_STATUS_INVALID_ARGUMENT,
              cat("run: input '", in.name, "' is not given (every input is needed: ", inputNames(),
                  ")"));
      }
      const auto feed = py::reinterpret_borrow<py::object>(value);
      std::vector<BoundInput> elements;
      if (!in.sequence) {
        elements.push_back(bindInput(feed, in.name, in.npDtype));
      } else {
        if (!py::isinstance<py::list>(feed) && !py::isinstance<py::tuple>(feed))
          raise(TESSERA_STATUS_INVALID_ARGUMENT,
                cat("run: input '", in.name, "' is a sequence: give a list of arrays, not ",
                    typeName(feed)));
        size_t k = 0;
        for (py::handle e : feed)
          elements.push_back(bindInput(py::reinterpret_borrow<py::object>(e),
                                       cat(in.name, "[", k++, "]"), in.npDtype));
      }
      bound.push_back(std::move(elements));
    }
    if (size_t(PyDict_Size(dict.ptr())) != inputs_.size())
      checkFeedNames(dict);
    return bound;
  }

  /// Raises for a feed that names no input.
  void checkFeedNames(const py::dict &dict) const {
    for (auto item : dict) {
      if (!py::isinstance<py::str>(item.first))
        raise(TESSERA_STATUS_INVALID_ARGUMENT,
              "run: feed keys must be input names (str), got " + typeName(item.first));
      std::string name = item.first.cast<std::string>();
      if (!inputIndex_.count(name))
        raise(TESSERA_STATUS_NOT_FOUND,
              cat("run: the model has no input '", name, "' (its inputs: ", inputNames(), ")"));
    }
  }

  static py::object copyOut(const DLTensor &t, const py::object &dtype) {
    if (dtype.is_none())
      raise(TESSERA_STATUS_UNIMPLEMENTED,
            cat("an output of dtype ", rt::dtypeName(t.dtype), " has no NumPy dtype"));
    std::vector<py::ssize_t> shape(t.shape, t.shape + t.ndim);
    py::array a(py::reinterpret_borrow<py::dtype>(dtype), shape);
    const size_t bytes = size_t(a.nbytes());
    if (bytes)
      std::memcpy(a.mutable_data(), static_cast<const char *>(t.data) + t.byte_offset, bytes);
    return a;
  }

  rt::Model model_;
  tessera_session_t *session_ = nullptr;
  std::mutex mu_;
  int lastRunCopies_ = 0;
  std::vector<InputSlot> inputs_;
  std::vector<OutputSlot> outputs_;
  std::unordered_map<std::string, size_t> inputIndex_, outputIndex_;
};

/// The verified metadata JSON of an artifact's bytes, without loading any
/// of its code (what tessera.Artifact reads).
std::string artifactMetadata(const py::bytes &bytes, const std::string &display) {
  std::string data = bytes;
  auto artifact = tessera::runtime::Artifact::fromBytes(std::move(data), display);
  if (!artifact)
    raise(TESSERA_STATUS_DATA_LOSS, artifact.error().str());
  auto sections = artifact->sectionsOf(tessera::runtime::SectionKind::Metadata);
  if (sections.size() != 1)
    raise(TESSERA_STATUS_DATA_LOSS,
          cat(display, ": expected one metadata section, found ", sections.size()));
  return std::string(sections[0].bytes);
}

/// `with session.profile() as p:` profiles the runs inside; p's data is the
/// session's profile while inside, and what it was at the exit after.
struct PyProfiling {
  py::object owner; // keeps the session alive
  PySession *session;
  bool active;
  rt::Profile done;

  rt::Profile current() const { return active ? session->profile() : done; }
};

/// The fields rows and records share: what ran, where, inside what.
template <typename R> py::dict profileDict(const R &r) {
  py::dict d;
  d["name"] = r.name;
  d["category"] = r.category;
  d["nodes"] = r.nodes;
  d["impl"] = r.impl;
  d["step"] = r.step;
  d["parent"] = r.parent >= 0 ? py::object(py::int_(r.parent)) : py::object(py::none());
  return d;
}

py::dict rowDict(const rt::ProfileRow &r) {
  py::dict d = profileDict(r);
  d["calls"] = r.calls;
  d["total_ms"] = r.totalMs;
  d["ms_per_run"] = r.msPerRun;
  d["share"] = r.share;
  return d;
}

py::dict recordDict(const rt::ProfileRecord &r) {
  py::dict d = profileDict(r);
  d["start_ns"] = r.startNs;
  d["duration_ns"] = r.durationNs;
  d["thread"] = r.thread;
  d["run"] = r.run;
  return d;
}

void bindProfile(py::module_ &m) {
  py::class_<PyProfiling>(m, "Profile",
                          "Where the profiled runs' time went (Session.profile()); the same "
                          "records and table as `tessera run --profile`")
      .def(
          "__enter__",
          [](PyProfiling &p) -> PyProfiling & {
            p.session->setProfiling(true);
            p.active = true;
            return p;
          },
          py::return_value_policy::reference)
      .def("__exit__",
           [](PyProfiling &p, py::args) {
             if (!p.active)
               return;
             p.done = p.session->profile();
             p.active = false;
             p.session->setProfiling(false);
           })
      .def_property_readonly("runs", [](const PyProfiling &p) { return p.current().runs(); })
      .def_property_readonly("ms_per_run",
                             [](const PyProfiling &p) { return p.current().msPerRun(); })
      .def_property_readonly(
          "steps_ms_per_run", [](const PyProfiling &p) { return p.current().stepsMsPerRun(); },
          "The steps' time per run (the rest is the executor's own work)")
      .def_property_readonly(
          "table",
          [](const PyProfiling &p) {
            py::list rows;
            for (const rt::ProfileRow &r : p.current().table())
              rows.append(rowDict(r));
            return rows;
          },
          "Rows as dicts (name, category, nodes, impl, step, parent, calls, total_ms, "
          "ms_per_run, share): each step by time, each plugin step followed by the primitives "
          "or kernels its plugin reported (parent: the step's row)")
      .def_property_readonly(
          "records",
          [](const PyProfiling &p) {
            py::list out;
            const rt::Profile profile = p.current(); // records() refers into it
            for (const rt::ProfileRecord &r : profile.records())
              out.append(recordDict(r));
            return out;
          },
          "Every record (runs, steps, kernels) as a dict")
      .def(
          "format", [](const PyProfiling &p) { return p.current().format(); },
          "The table as text, as `tessera run --profile` prints it")
      .def(
          "chrome_trace", [](const PyProfiling &p) { return p.current().chromeTrace(); },
          "A Chrome trace (JSON text) for Perfetto or chrome://tracing")
      .def(
          "save",
          [](const PyProfiling &p, const py::object &where) {
            const std::string path =
                py::str(py::module_::import("os").attr("fspath")(where)).cast<std::string>();
            std::ofstream out(path, std::ios::binary);
            out << p.current().chromeTrace();
            out.close();
            if (!out)
              raise(TESSERA_STATUS_INVALID_ARGUMENT,
                    cat("profile.save: cannot write '", path, "'"));
          },
          py::arg("path"), "Writes chrome_trace() to `path` (str or os.PathLike)")
      .def("__repr__", [](const PyProfiling &p) { return p.current().format(); });
}

} // namespace

PYBIND11_MODULE(_runtime, m) {
  m.doc() = "Tessera's runtime (libtessera_runtime): load compiled artifacts and run them";
  registerErrorTranslator();
  m.def("version", &rt::version, "The runtime library's version, 'MAJOR.MINOR.PATCH'.");
  m.def(
      "set_plugin_path",
      [](const std::string &path) { throwIfError(tessera_set_plugin_path(path.c_str())); },
      py::arg("path"),
      "Where plugins are looked for, in place of TESSERA_PLUGIN_PATH (colon-separated); "
      "call before the first load that needs a plugin.");
  m.def("_artifact_metadata", &artifactMetadata, py::arg("data"), py::arg("display"));

  py::class_<PyModel>(m, "Model", "A loaded, verified artifact; shared by its sessions.")
      .def(py::init([](const py::object &source) { return PyModel{loadModel(source)}; }),
           py::arg("artifact"))
      .def_property_readonly("inputs", &PyModel::inputs,
                             "TensorInfo(name, shape, dtype) per input; a symbolic dim is "
                             "its symbol's name")
      .def_property_readonly("outputs", &PyModel::outputs)
      .def_property_readonly("symbols", &PyModel::symbols,
                             "name -> (lo, hi) of each symbolic dim (hi None: unbounded)")
      .def_property_readonly("metadata_json",
                             [](const PyModel &p) { return p.model.metadataJson(); })
      .def_property_readonly(
          "host_cpu", [](const PyModel &p) { return p.model.hostCpu(); },
          "the CPU level of the host code loaded ('x86-64-v3'; TESSERA_HOST_CPU forces "
          "one); '' without host code");

  bindProfile(m);

  py::class_<PySession>(m, "Session", "One session on a model: run it with NumPy arrays.")
      .def(py::init<const py::object &, int>(), py::arg("artifact"), py::arg("threads") = 0)
      .def("run", &PySession::run, py::arg("output_names_or_feeds"), py::arg("feeds") = py::none(),
           "run(feeds) -> dict of output name -> numpy.ndarray; run(output_names, feeds) -> "
           "list (ONNX Runtime's form; None: every output)")
      .def(
          "profile",
          [](py::object self) {
            return PyProfiling{self, &self.cast<PySession &>(), false, rt::Profile()};
          },
          "A context in which runs are profiled: `with sess.profile() as p: sess.run(...)`; "
          "then p.table (rows as dicts), p.records, p.format(), p.chrome_trace(), p.save(path)")
      .def("close", &PySession::close, "Releases the session; later runs raise.")
      .def_property_readonly("closed", &PySession::closed)
      .def_property_readonly("model", &PySession::model)
      .def_property_readonly("_last_run_copies", &PySession::lastRunCopies,
                             "How many inputs the last run copied (not dense, or not aligned)")
      .def_property_readonly("inputs", [](const PySession &s) { return s.model().inputs(); })
      .def_property_readonly("outputs", [](const PySession &s) { return s.model().outputs(); })
      // ONNX Runtime's names for the same lists.
      .def("get_inputs", [](const PySession &s) { return s.model().inputs(); })
      .def("get_outputs", [](const PySession &s) { return s.model().outputs(); })
      .def("__repr__",
           [](const PySession &s) {
             std::string text = "<tessera.runtime.Session";
             for (const char *kind : {"inputs", "outputs"}) {
               text += std::string(" ") + kind + " [";
               py::list infos =
                   std::string(kind) == "inputs" ? s.model().inputs() : s.model().outputs();
               for (size_t i = 0; i < infos.size(); ++i)
                 text += (i ? ", " : "") + infos[i].attr("name").cast<std::string>() + ": " +
                         std::string(py::str(infos[i].attr("dtype"))) +
                         std::string(py::str(py::list(infos[i].attr("shape"))));
               text += "]";
             }
             return text + (s.closed() ? " (closed)>" : ">");
           })
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](PySession &s, py::args) { s.close(); });
}
