//===- python/src/compiler_module.cpp - tessera._compiler -----------------===//
//
// The extension behind `tessera.compile`, `partition`, `plugins`,
// `import_onnx` and `interpret` (tessera/compiler.py wraps it). Each is the
// library call its CLI command makes (core/tools/cmd_*.cpp), with the model
// given as a path or as ONNX bytes: frontend::loadModelFile /
// importOnnxBytes, compile::compileModule, partition::partitionModule and
// the report functions, the plugin registry, interp::run. The GIL is
// released while the compiler works. Errors raise tessera.CompileError
// (NotFound for a missing file) with the compiler's message.
//
//===----------------------------------------------------------------------===//
#include "common.h"

#include "compile/compile.h"
#include "compile/placement.h"
#include "compile/lower.h"
#include "frontend/load.h"
#include "interp/interpreter.h"
#include "ir/dtype.h"
#include "ir/printer.h"
#include "ir/symbol.h"
#include "partition/driver.h"
#include "partition/report.h"
#include "plugin/registry.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>

namespace py = pybind11;
using namespace tessera;
using namespace tessera::python;

namespace {

[[noreturn]] void raiseCompile(const Error &e) {
  py::object cls = types().attr("CompileError");
  PyErr_SetObject(cls.ptr(), py::str(e.str()).ptr());
  throw py::error_already_set();
}

/// The compiler's calls take turns: Python threads may call tessera.compile
/// at once, and the compiler's process-wide state (the plugin registry,
/// plugin call isolation, LLVM's initialisation) is not meant for that.
std::mutex compilerMutex;

/// Calls `f` (returning an Expected) with the GIL released and the compiler
/// to itself; its value, or its error raised as tessera.CompileError.
template <typename F> auto released(F &&f) {
  std::optional<decltype(f())> result;
  {
    py::gil_scoped_release nogil;
    std::lock_guard<std::mutex> lock(compilerMutex);
    result.emplace(f());
  }
  if (!result->ok())
    raiseCompile(result->error());
  return std::move(**result);
}

/// A model given from Python: a path (text IR, or ONNX by its suffix) or
/// the bytes of an ONNX ModelProto (tessera/compiler.py serializes an
/// onnx.ModelProto), with input shapes for ONNX's symbolic dims.
struct ModelSource {
  std::optional<std::string> path;
  std::string bytes;
  frontend::InputShapes shapes;

  static ModelSource from(const py::object &model, const py::object &inputShapes) {
    ModelSource s;
    if (py::isinstance<py::str>(model) || py::hasattr(model, "__fspath__")) {
      s.path = py::str(py::module_::import("os").attr("fspath")(model)).cast<std::string>();
      if (!std::filesystem::exists(*s.path))
        raise(TESSERA_STATUS_NOT_FOUND, cat("no such model file: '", *s.path, "'"));
    } else if (py::isinstance<py::bytes>(model) || py::isinstance<py::bytearray>(model) ||
               py::isinstance<py::memoryview>(model)) {
      s.bytes = py::bytes(model).cast<std::string>();
    } else {
      throw py::type_error("model must be a path (str or os.PathLike), the bytes of an ONNX "
                           "model or an onnx.ModelProto, not " +
                           typeName(model));
    }
    if (!inputShapes.is_none()) {
      // {"x": (1, "N", "H:32..640")} -> "x=1,N,H:32..640", as --input-shape takes it.
      std::vector<std::string> specs;
      for (auto item : py::dict(inputShapes)) {
        std::string spec = py::str(item.first).cast<std::string>() + "=";
        if (py::isinstance<py::str>(item.second) || !py::isinstance<py::iterable>(item.second))
          raise(TESSERA_STATUS_INVALID_ARGUMENT,
                cat("input_shapes['", std::string(py::str(item.first)),
                    "'] must be a tuple of dims (ints, or symbol names such as 'N' or "
                    "'N:1..64'), not ",
                    std::string(py::repr(item.second))));
        bool first = true;
        for (py::handle d : item.second) {
          spec += (first ? "" : ",") + py::str(d).cast<std::string>();
          first = false;
        }
        specs.push_back(std::move(spec));
      }
      auto shapes = frontend::parseInputShapes(specs);
      if (!shapes.ok())
        raise(TESSERA_STATUS_INVALID_ARGUMENT, "input_shapes: " + shapes.error().str());
      s.shapes = std::move(*shapes);
    }
    return s;
  }

  /// Imports/parses it; call with the GIL released.
  Expected<ir::Module> load() const {
    if (path)
      return frontend::loadModelFile(*path, shapes);
    frontend::onnx::ImportOptions options;
    options.inputShapes = shapes;
    return frontend::importOnnxBytes(bytes, "<onnx bytes>", std::filesystem::current_path(),
                                     options);
  }
  std::string display() const { return path ? *path : "<onnx bytes>"; }
};

std::vector<std::string> targetList(const py::object &targets) {
  if (targets.is_none())
    return {};
  if (py::isinstance<py::str>(targets))
    throw py::type_error("targets must be a list of plugin names, e.g. ['dnnl', 'ccompiler']");
  return targets.cast<std::vector<std::string>>();
}

py::tuple compileModel(const py::object &model, const py::object &targets,
                       const py::object &inputShapes, const py::object &mcpu,
                       const py::object &optLevel, const std::string &placement,
                       const py::object &placementFile, double tuneBudget, int tuneThreads,
                       const py::object &onHost) {
  ModelSource source = ModelSource::from(model, inputShapes);
  compile::CompileOptions options;
  options.targets = targetList(targets);
  if (!onHost.is_none()) {
    if (py::isinstance<py::str>(onHost))
      throw py::type_error("on_host must be a list of node names, e.g. ['/final/ConvTranspose']");
    options.hostNodes = onHost.cast<std::vector<std::string>>();
  }
  const std::string cpus = mcpu.is_none() ? std::string(compile::kDefaultCpus)
                                           : mcpu.cast<std::string>();
  if (Status s = compile::setCpus(options, cpus); !s.ok())
    raiseCompile(s.error());
  if (!optLevel.is_none()) {
    int level = optLevel.cast<int>();
    if (level < 0 || level > 3)
      raise(TESSERA_STATUS_INVALID_ARGUMENT, cat("opt_level must be 0, 1, 2 or 3, not ", level));
    options.codegen.optLevel = level;
  }
  compile::PlacementRequest request; // the same as `tessera compile --placement`
  request.mode = placement;
  request.budgetSeconds = tuneBudget;
  request.threads = tuneThreads;
  if (!placementFile.is_none())
    request.file = py::str(placementFile).cast<std::string>();
  std::string report;
  compile::CompileResult r = released([&]() -> Expected<compile::CompileResult> {
    TS_ASSIGN_OR_RETURN(ir::Module module, source.load());
    TS_ASSIGN_OR_RETURN(std::optional<compile::Placement> placed,
                        compile::applyPlacement(module, request, options,
                                                &plugin::PluginRegistry::global()));
    if (placed)
      report = placed->report();
    auto result = compile::compileModule(module, options, &plugin::PluginRegistry::global());
    if (!result) // as `tessera compile` says it
      return std::move(result).error().addContext(source.display());
    return result;
  });
  return py::make_tuple(py::bytes(r.artifact), report + r.partitionSummary);
}

py::dict partitionModel(const py::object &model, const py::object &targets,
                        const py::object &inputShapes, const std::string &title) {
  ModelSource source = ModelSource::from(model, inputShapes);
  partition::PartitionOptions options;
  options.targets = targetList(targets);
  if (options.targets.empty())
    raise(TESSERA_STATUS_INVALID_ARGUMENT, "partition: give targets, e.g. targets=['dnnl']");
  struct Parted {
    partition::PartitionResult result;
    partition::PartitionGraph graph;
  };
  Parted parted = released([&]() -> Expected<Parted> {
    TS_ASSIGN_OR_RETURN(ir::Module module, source.load());
    TS_ASSIGN_OR_RETURN(
        partition::PartitionResult result,
        partition::partitionModule(std::move(module), options, plugin::PluginRegistry::global()));
    TS_ASSIGN_OR_RETURN(partition::PartitionGraph graph,
                        partition::buildPartitionGraph(result.module, "main", result.targets));
    return Parted{std::move(result), std::move(graph)};
  });
  const partition::PartitionResult &r = parted.result;
  py::list regions;
  for (const partition::RegionInfo &info : r.log.regions) {
    py::dict d;
    d["symbol"] = info.symbol;
    d["target"] = info.target;
    d["ops"] = info.ops;
    d["flops"] = info.flops;
    d["inputs"] = info.inputs;
    d["outputs"] = info.outputs;
    regions.append(d);
  }
  py::list host;
  for (const partition::HostOp &h : r.host) {
    py::list reasons;
    for (const partition::HostDecision &dec : h.decisions) {
      const char *kind = dec.kind == partition::HostDecision::Kind::NoTarget   ? "no_target"
                         : dec.kind == partition::HostDecision::Kind::Declined ? "declined"
                                                                               : "pruned";
      reasons.append(py::dict(py::arg("kind") = kind, py::arg("target") = dec.target,
                              py::arg("reason") = dec.reason));
    }
    host.append(py::dict(py::arg("function") = h.function, py::arg("node") = h.node,
                         py::arg("op") = h.op, py::arg("decisions") = reasons));
  }
  std::string html =
      partition::htmlReport(r, parted.graph, title.empty() ? source.display() : title);
  py::dict out;
  out["targets"] = r.targets;
  out["regions"] = regions;
  out["host"] = host;
  out["offloaded_ops"] = r.offloadedOps;
  out["summary"] = partition::summaryText(r);
  out["report"] = partition::reportText(r);
  out["dot"] = partition::dotGraph(parted.graph);
  out["html"] = html;
  out["ir"] = ir::printModule(r.module);
  return out;
}

py::dict listPlugins() {
  const plugin::PluginRegistry *registry = nullptr;
  {
    py::gil_scoped_release nogil;
    std::lock_guard<std::mutex> lock(compilerMutex);
    registry = &plugin::PluginRegistry::global();
  }
  py::list loaded, rejected, path;
  for (const auto &p : registry->plugins()) {
    py::dict d;
    d["name"] = p->name();
    d["version"] = p->version();
    d["abi"] = py::make_tuple(p->abiMajor(), p->abiMinor());
    d["path"] = p->path();
    d["description"] = p->description();
    d["ops"] = p->ops();
    d["patterns"] = p->patterns();
    d["module_types"] = p->typeKeys();
    loaded.append(d);
  }
  for (const auto &r : registry->rejected())
    rejected.append(py::dict(py::arg("path") = r.path, py::arg("reason") = r.reason));
  for (const auto &e : registry->searchPath())
    path.append(py::dict(py::arg("path") = e.path, py::arg("origin") = e.origin));
  return py::dict(py::arg("loaded") = loaded, py::arg("rejected") = rejected,
                  py::arg("search_path") = path);
}

std::string importOnnx(const py::object &model, const py::object &inputShapes) {
  ModelSource source = ModelSource::from(model, inputShapes);
  return ir::printModule(released([&] { return source.load(); }));
}

py::object tensorToNumpy(const ir::Tensor &t) {
  DLTensor dl = t.dl();
  py::object dtype = numpyDtype(dl.dtype);
  if (dtype.is_none())
    raise(TESSERA_STATUS_UNIMPLEMENTED,
          cat("an output of dtype ", t.type().str(), " has no NumPy dtype"));
  std::vector<py::ssize_t> shape(dl.shape, dl.shape + dl.ndim);
  py::array a(py::reinterpret_borrow<py::dtype>(dtype), shape);
  if (a.nbytes())
    std::memcpy(a.mutable_data(), static_cast<const char *>(dl.data) + dl.byte_offset,
                size_t(a.nbytes()));
  return a;
}

/// Runs @main with the reference interpreter; returns {output name: array}
/// named as the compiled artifact names them (compile::outputNames).
py::dict interpretModel(const py::object &model, const py::dict &feeds,
                        const py::object &inputShapes) {
  ModelSource source = ModelSource::from(model, inputShapes);
  ir::Module m = released([&] { return source.load(); });
  ir::Function main = m.find("main");
  if (!main)
    raiseCompile(Error::format("{}: the module has no function '@main'", source.display()));
  std::vector<interp::Value> inputs; // copies: the interpreter owns its values
  for (const auto &p : main->params()) {
    PyObject *value = PyDict_GetItemString(feeds.ptr(), p->name().c_str());
    if (!value)
      raise(TESSERA_STATUS_INVALID_ARGUMENT,
            cat("interpret: input '", p->name(), "' is not given"));
    const py::object feed = py::reinterpret_borrow<py::object>(value);
    const py::object dtype = p->type().isTensor() || p->type().isSequence()
                                 ? numpyDtype(ir::toDLDataType(p->type().dtype()))
                                 : py::object(py::none());
    auto tensorOf = [&](const py::object &v, const std::string &name) {
      BoundInput b = bindInput(v, name, dtype);
      return ir::Tensor::copyOf(b.tensor);
    };
    if (!p->type().isSequence()) {
      ir::Tensor t = tensorOf(feed, p->name());
      // The shape the model takes (a symbolic dim takes any size), checked
      // here: the interpreter's own type check would say less.
      const ir::Shape &want = p->type().shape();
      bool fits = p->type().isTensor() && want.size() == t.shape().size();
      for (size_t d = 0; fits && d < want.size(); ++d)
        fits = ir::isSymbol(want[d]) || want[d] == t.shape()[d];
      if (!fits)
        raise(TESSERA_STATUS_INVALID_ARGUMENT,
              cat("interpret: input '", p->name(), "': expected ", p->type().str(), ", got ",
                  t.type().str()));
      inputs.push_back(interp::Value::ofTensor(std::move(t)));
      continue;
    }
    if (!py::isinstance<py::list>(feed) && !py::isinstance<py::tuple>(feed))
      raise(TESSERA_STATUS_INVALID_ARGUMENT,
            cat("interpret: input '", p->name(), "' is a sequence: give a list of arrays, not ",
                typeName(feed)));
    std::vector<ir::Tensor> elements;
    size_t k = 0;
    for (py::handle e : feed)
      elements.push_back(
          tensorOf(py::reinterpret_borrow<py::object>(e), cat(p->name(), "[", k++, "]")));
    inputs.push_back(interp::Value::ofSequence(std::move(elements)));
  }
  if (feeds.size() != main->params().size())
    for (auto item : feeds) {
      bool known = false;
      for (const auto &p : main->params())
        known = known || p->name() == py::str(item.first).cast<std::string>();
      if (!known)
        raise(TESSERA_STATUS_NOT_FOUND,
              cat("interpret: the model has no input '", std::string(py::str(item.first)), "'"));
    }
  interp::Value result = released([&] { return interp::runValues(m, std::move(inputs)); });
  std::vector<interp::Value> leaves =
      main->resultType().isTuple() ? result.fields : std::vector<interp::Value>{result};
  std::vector<std::string> names = compile::outputNames(*main, leaves.size());
  py::dict out;
  for (size_t i = 0; i < leaves.size(); ++i) {
    py::object v;
    if (leaves[i].isSequence) { // a list of arrays
      py::list elements;
      for (const interp::Value &e : leaves[i].fields)
        elements.append(tensorToNumpy(e.tensor));
      v = elements;
    } else {
      v = tensorToNumpy(leaves[i].tensor);
    }
    out[py::str(i < names.size() ? names[i] : "output_" + std::to_string(i))] = v;
  }
  return out;
}

} // namespace

PYBIND11_MODULE(_compiler, m) {
  m.doc() = "Tessera's compiler (tessera.compile, partition, plugins, import_onnx, interpret)";
  registerErrorTranslator();
  m.def("compile", &compileModel, py::arg("model"), py::arg("targets"), py::arg("input_shapes"),
        py::arg("mcpu"), py::arg("opt_level"), py::arg("placement"), py::arg("placement_file"),
        py::arg("tune_budget"), py::arg("tune_threads"), py::arg("on_host"));
  m.def("partition", &partitionModel, py::arg("model"), py::arg("targets"), py::arg("input_shapes"),
        py::arg("title"));
  m.def("plugins", &listPlugins);
  m.def("import_onnx", &importOnnx, py::arg("model"), py::arg("input_shapes"));
  m.def("interpret", &interpretModel, py::arg("model"), py::arg("feeds"), py::arg("input_shapes"));
}
