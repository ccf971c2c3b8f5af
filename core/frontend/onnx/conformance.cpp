//===- frontend/onnx/conformance.cpp - ONNX backend test runner ----------===//
//
// For each test folder and each of its test_data_set_* folders:
//   1. import the model as it is; op types without a converter make the test
//      UNSUPPORTED (nothing else does);
//   2. read input_N.pb (the N-th graph input that is not an initializer) and
//      output_N.pb;
//   3. import again with the data's shapes bound (dynamic dims) when the
//      parameters' types differ from the data's, and once more with the
//      inputs that converters wanted as constants bound to the data;
//   4. run @main with the reference interpreter (or ConformanceOptions::run)
//      and compare every output.
//
// Sequence and optional inputs and outputs are read as the model declares
// them (SequenceProto / OptionalProto); sequence inputs are bound to their
// data's length and element shapes (ImportOptions::valueTypes) and fed
// element by element; sequence outputs are compared element by element.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/conformance.h"
#include "frontend/onnx/conformance_internal.h"

#include "frontend/onnx/converter.h"
#include "frontend/onnx/importer.h"
#include "frontend/onnx/tensor_proto.h"
#include "interp/interpreter.h"
#include "ir/visit.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <set>
#include <cmath>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>

namespace fs = std::filesystem;

namespace tessera::frontend::onnx {

namespace {

using conformance_detail::compareValue;

/// "input_3.pb" -> 3 for prefix "input_"; -1 when the name does not fit.
int dataIndex(const std::string &file, const std::string &prefix) {
  if (file.rfind(prefix, 0) != 0 || file.size() <= prefix.size() + 3 ||
      file.substr(file.size() - 3) != ".pb")
    return -1;
  std::string digits = file.substr(prefix.size(), file.size() - prefix.size() - 3);
  if (digits.empty() || digits.size() > 6 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return -1;
  return std::stoi(digits);
}

/// A test-data value, read as the message its declared type calls for
/// (a TensorProto when `declared` is null).
Expected<OnnxValue> readTestValue(const fs::path &file, const ::onnx::TypeProto *declared) {
  std::ifstream in(file, std::ios::binary);
  if (!in)
    return Error::format("cannot open '{}'", file.string());
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parseValue(bytes, declared, file.parent_path().string(),
                    fmt::format("data file '{}'", file.string()));
}

/// The values prefix_0.pb, prefix_1.pb, ... of a data set (contiguous);
/// declared[i] (when there) says what prefix_i.pb holds.
Expected<std::vector<OnnxValue>> readDataFiles(const fs::path &dir, const std::string &prefix,
                                               const std::vector<const ::onnx::TypeProto *> &declared) {
  int count = 0;
  std::error_code ec;
  for (const auto &e : fs::directory_iterator(dir, ec))
    if (int i = dataIndex(e.path().filename().string(), prefix); i >= 0)
      count = std::max(count, i + 1);
  if (ec)
    return Error::format("cannot list '{}': {}", dir.string(), ec.message());
  std::vector<OnnxValue> out;
  for (int i = 0; i < count; ++i) {
    fs::path file = dir / fmt::format("{}{}.pb", prefix, i);
    if (!fs::exists(file))
      return Error::format("'{}' is missing", file.string());
    TS_ASSIGN_OR_RETURN(OnnxValue v,
                        readTestValue(file, size_t(i) < declared.size() ? declared[size_t(i)]
                                                                        : nullptr));
    out.push_back(std::move(v));
  }
  return out;
}

/// ONNX 1.12's test generator stores bfloat16 data as UINT16 tensors holding
/// the bit patterns (numpy has no bfloat16): a u16 data tensor is read as
/// bf16 when the model declares that input or output as BFLOAT16 (`declared`
/// is the ONNX elem_type, 0 when unknown).
ir::Tensor bf16IfDeclared(const ir::Tensor &t, int32_t declared) {
  if (t.dtype() != ir::DType::U16 || declared != ::onnx::TensorProto::BFLOAT16)
    return t;
  ir::Tensor b(ir::DType::BF16, t.shape());
  std::memcpy(b.bytes(), t.bytes(), t.nbytes());
  return b;
}

/// The declared elem_type of a graph input or output (0 when not a tensor).
int32_t declaredElemType(const ::onnx::ValueInfoProto &v) {
  return v.type().has_tensor_type() ? v.type().tensor_type().elem_type() : 0;
}

/// Applies bf16IfDeclared to the tensor data of the graph inputs (by name,
/// in the order of `names`) and outputs (by position) of `model`.
void applyDeclaredBf16(const ::onnx::ModelProto &model, const std::vector<std::string> &names,
                       std::vector<OnnxValue> &inputs, std::vector<OnnxValue> &outputs) {
  const auto &g = model.graph();
  for (size_t i = 0; i < names.size() && i < inputs.size(); ++i)
    for (const auto &v : g.input())
      if (v.name() == names[i] && inputs[i].kind == OnnxValue::Kind::Tensor)
        inputs[i].tensor = bf16IfDeclared(inputs[i].tensor, declaredElemType(v));
  for (int k = 0; k < g.output_size() && size_t(k) < outputs.size(); ++k)
    if (outputs[size_t(k)].kind == OnnxValue::Kind::Tensor)
      outputs[size_t(k)].tensor =
          bf16IfDeclared(outputs[size_t(k)].tensor, declaredElemType(g.output(k)));
}

/// The declared types of the graph inputs named `names` and of the graph
/// outputs (null where a name is not found).
std::vector<const ::onnx::TypeProto *> declaredInputTypes(const ::onnx::ModelProto &model,
                                                          const std::vector<std::string> &names) {
  std::vector<const ::onnx::TypeProto *> out;
  for (const auto &n : names) {
    const ::onnx::TypeProto *t = nullptr;
    for (const auto &v : model.graph().input())
      if (v.name() == n)
        t = &v.type();
    out.push_back(t);
  }
  return out;
}

std::vector<const ::onnx::TypeProto *> declaredOutputTypes(const ::onnx::ModelProto &model) {
  std::vector<const ::onnx::TypeProto *> out;
  for (const auto &v : model.graph().output())
    out.push_back(&v.type());
  return out;
}

/// The tensor at `path` inside `v` (a sequence input's element), or null.
const ir::Tensor *tensorAt(const OnnxValue &v, const std::vector<int64_t> &path, size_t depth = 0) {
  if (depth == path.size())
    return v.kind == OnnxValue::Kind::Tensor ? &v.tensor : nullptr;
  if (v.kind != OnnxValue::Kind::Sequence || path[depth] < 0 ||
      size_t(path[depth]) >= v.elements.size())
    return nullptr;
  return tensorAt(v.elements[size_t(path[depth])], path, depth + 1);
}

/// The graph input value that feeds @main's parameter `j`
/// (ImportReport::params), or null.
const OnnxValue *inputOf(const ImportReport &r, size_t j, const std::vector<OnnxValue> &inputs) {
  if (j >= r.params.size())
    return nullptr;
  auto it = std::find(r.graphInputs.begin(), r.graphInputs.end(), r.params[j].input);
  const size_t idx = size_t(it - r.graphInputs.begin());
  return it == r.graphInputs.end() || idx >= inputs.size() ? nullptr : &inputs[idx];
}

/// The data for @main's parameter `j` (a tensor, or a sequence input's
/// element), or null.
const ir::Tensor *paramData(const ImportReport &r, size_t j, const std::vector<OnnxValue> &inputs) {
  const OnnxValue *v = inputOf(r, j, inputs);
  return v ? tensorAt(*v, r.params[j].path) : nullptr;
}

std::string oneLine(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

TestOutcome fail(TestOutcome o, std::string why) {
  o.status = TestStatus::Fail;
  o.detail = oneLine(std::move(why));
  return o;
}

TestOutcome unsupported(TestOutcome o, const std::vector<UnsupportedOpType> &ops) {
  o.status = TestStatus::Unsupported;
  for (const auto &u : ops)
    o.unsupportedOps.push_back(u.opType);
  std::string joined;
  for (const auto &s : o.unsupportedOps)
    joined += (joined.empty() ? "" : ", ") + s;
  o.detail = joined;
  return o;
}

/// Whether `v` is data for a parameter of sequence type `t`: a sequence of
/// tensors of its dtype (and element rank, when known).
bool sequenceFits(const ir::Type &t, const OnnxValue &v) {
  if (!t.isSequence() || v.kind != OnnxValue::Kind::Sequence)
    return false;
  for (const OnnxValue &e : v.elements)
    if (e.kind != OnnxValue::Kind::Tensor || e.tensor.dtype() != t.dtype() ||
        (t.elementRank() >= 0 && int64_t(e.tensor.rank()) != t.elementRank()))
      return false;
  return true;
}

/// The graph input value that feeds @main's parameter `j` whole (a
/// sequence parameter's), or null.
const OnnxValue *paramValue(const ImportReport &r, size_t j, const std::vector<OnnxValue> &inputs) {
  return j < r.params.size() && r.params[j].path.empty() ? inputOf(r, j, inputs) : nullptr;
}

/// Does @main take exactly the data's types (ImportReport::params)? Absent
/// optional data needs an import that knows it is absent; a sequence
/// parameter (of run-time length) takes a sequence of its element type,
/// other sequence data needs an import that binds its structure.
bool paramsMatch(const ir::Module &m, const ImportReport &r,
                 const std::vector<OnnxValue> &inputs) {
  ir::Function main = m.find("main");
  if (!main || main->params().size() != r.params.size())
    return false;
  std::set<std::string> sequences; // inputs fed whole to sequence parameters
  for (size_t j = 0; j < main->params().size(); ++j) {
    const ir::Type &type = main->params()[j]->type();
    if (type.isSequence()) {
      const OnnxValue *v = paramValue(r, j, inputs);
      if (!v || !sequenceFits(type, *v))
        return false;
      sequences.insert(r.params[j].input);
      continue;
    }
    const ir::Tensor *t = paramData(r, j, inputs);
    if (!t || type != t->type())
      return false;
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].kind != OnnxValue::Kind::Tensor &&
        (i >= r.graphInputs.size() || !sequences.count(r.graphInputs[i])))
      return false; // sequences and optionals: bind their structure
  return true;
}

/// For a module whose parameters do not all match the data: zeros of the
/// declared type for each mismatching parameter that the body never reads,
/// or nothing when a mismatching parameter is read (or the data is not
/// plain tensors).
std::map<size_t, ir::Tensor> zerosForUnreadMismatches(const ir::Module &m, const ImportReport &r,
                                                      const std::vector<OnnxValue> &inputs) {
  ir::Function main = m.find("main");
  if (!main || main->params().size() != r.params.size())
    return {};
  for (const auto &v : inputs)
    if (v.kind != OnnxValue::Kind::Tensor)
      return {};
  const auto uses = ir::useCounts(main->body());
  std::map<size_t, ir::Tensor> zeros;
  for (size_t j = 0; j < main->params().size(); ++j) {
    const ir::Tensor *t = paramData(r, j, inputs);
    const ir::Expr &p = main->params()[j];
    if (t && p->type() == t->type())
      continue;
    if (!t || uses.count(p.get()) || !p->type().isTensor())
      return {};
    zeros.emplace(j, ir::Tensor(p->type().dtype(), p->type().shape()));
  }
  return zeros;
}

/// The number of results in a value of `type` (tuples flattened; a
/// tensor or a sequence is one).
size_t leafCount(const ir::Type &type) {
  if (!type.isTuple())
    return 1;
  size_t n = 0;
  for (const ir::Type &f : type.fields())
    n += leafCount(f);
  return n;
}

/// A runner's flat results (from `next` on, leafCount(type) of them) in the
/// shape of `type`: a tensor or a sequence, or a tuple of such values.
interp::Value regroup(const ir::Type &type, const std::vector<interp::Value> &flat, size_t &next) {
  if (!type.isTuple())
    return flat[next++];
  std::vector<interp::Value> fields;
  for (const ir::Type &f : type.fields())
    fields.push_back(regroup(f, flat, next));
  return interp::Value::ofTuple(std::move(fields));
}

/// A sequence input's data as the interpreter's value.
interp::Value sequenceValue(const OnnxValue &v) {
  std::vector<ir::Tensor> elements;
  for (const OnnxValue &e : v.elements)
    elements.push_back(e.tensor);
  return interp::Value::ofSequence(std::move(elements));
}

TestOutcome runBackendTestImpl(const std::string &dirArg, const ConformanceOptions &options,
                               std::ostream *verbose) {
  fs::path dir(dirArg);
  TestOutcome o;
  o.name = dir.filename().string();
  if (o.name.empty())
    o.name = dir.parent_path().filename().string();
  const std::string modelPath = (dir / "model.onnx").string();
  std::ifstream in(modelPath, std::ios::binary);
  if (!in)
    return fail(o, fmt::format("cannot open '{}'", modelPath));
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string display = o.name + "/model.onnx";

  ImportOptions base;
  base.registry = options.registry;
  ImportReport probeReport;
  auto probe = importModelBytes(bytes, dir.string(), display, base, &probeReport);
  if (!probe.ok() && !probeReport.unsupported.empty())
    return unsupported(o, probeReport.unsupported);

  std::vector<fs::path> dataSets;
  std::error_code ec;
  for (const auto &e : fs::directory_iterator(dir, ec))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0)
      dataSets.push_back(e.path());
  std::sort(dataSets.begin(), dataSets.end());
  if (dataSets.empty())
    return fail(o, probe.ok() ? "no test_data_set_* folder" : probe.error().str());
  ::onnx::ModelProto model; // for the declared dtypes of the data (bf16 quirk)
  if (!model.ParseFromString(bytes))
    return fail(o, fmt::format("{}: not a ModelProto (protobuf parse failed)", display));

  for (const auto &ds : dataSets) {
    const std::string dsName = ds.filename().string();
    auto inputs =
        readDataFiles(ds, "input_", declaredInputTypes(model, probeReport.graphInputs));
    if (!inputs.ok())
      return fail(o, fmt::format("{}: {}", dsName, inputs.error().str()));
    auto expected = readDataFiles(ds, "output_", declaredOutputTypes(model));
    if (!expected.ok())
      return fail(o, fmt::format("{}: {}", dsName, expected.error().str()));
    applyDeclaredBf16(model, probeReport.graphInputs, *inputs, *expected);

    // The model as it is, or specialised to the data's shapes, or with the
    // inputs that converters need as constants bound to the data.
    ImportReport report = probeReport;
    Expected<ir::Module> module = probe.ok() ? Expected<ir::Module>(*probe)
                                             : Expected<ir::Module>(probe.error());
    ImportOptions opts = base;
    const auto &names = probeReport.graphInputs;
    std::map<size_t, ir::Tensor> unreadArgs; // @main parameter -> zeros of its type
    if (module.ok() && !paramsMatch(*module, report, *inputs)) {
      // Data that contradicts the declared type of an input the model never
      // reads (CastLike's 'like' in ONNX 1.12's bf16 tests) cannot change
      // the result: run with zeros of the declared type and say so.
      unreadArgs = zerosForUnreadMismatches(*module, report, *inputs);
      for (const auto &[j, zeros] : unreadArgs) {
          const ir::Tensor *data = paramData(report, j, *inputs);
          o.detail += fmt::format("{}input '{}': the test data is {}, the model declares {} "
                                  "and never reads it",
                                  o.detail.empty() ? "" : "; ", report.params[j].input,
                                  data ? data->type().str() : "missing", zeros.type().str());
        }
    }
    if (!module.ok() || (unreadArgs.empty() && !paramsMatch(*module, report, *inputs))) {
      const auto declared = declaredInputTypes(model, names);
      for (size_t i = 0; i < names.size() && i < inputs->size(); ++i) {
        const OnnxValue &v = (*inputs)[i];
        if (v.kind == OnnxValue::Kind::Tensor && declared[i] && declared[i]->has_tensor_type())
          opts.inputShapes[names[i]] = v.tensor.shape();
        else
          opts.valueTypes[names[i]] = v.irType();
      }
      module = importModelBytes(bytes, dir.string(), display, opts, &report);
    }
    if (!module.ok() && !report.wantedConstants.empty()) {
      std::string bound;
      for (const auto &w : report.wantedConstants) {
        auto it = std::find(names.begin(), names.end(), w);
        size_t idx = size_t(it - names.begin());
        if (it == names.end() || idx >= inputs->size() ||
            (*inputs)[idx].kind != OnnxValue::Kind::Tensor || opts.valueTypes.count(w))
          continue;
        opts.constantInputs[w] = (*inputs)[idx].tensor;
        opts.inputShapes.erase(w);
        bound += (bound.empty() ? "" : ", ") + w;
      }
      if (verbose)
        *verbose << "  " << dsName << ": binding as constants: " << bound << "\n";
      module = importModelBytes(bytes, dir.string(), display, opts, &report);
    }
    if (!module.ok()) {
      if (!report.unsupported.empty())
        return unsupported(o, report.unsupported);
      return fail(o, module.error().str());
    }

    ir::Function main = module->find("main");
    std::vector<interp::Value> args;
    for (size_t j = 0; j < main->params().size(); ++j) {
      const auto &p = main->params()[j];
      if (p->type().isSequence()) {
        const OnnxValue *v = paramValue(report, j, *inputs);
        if (!v || !sequenceFits(p->type(), *v))
          return fail(o, fmt::format("{}: no sequence data for parameter '{}' ({})", dsName,
                                     p->name(), p->type().str()));
        args.push_back(sequenceValue(*v));
        if (verbose)
          *verbose << "  " << dsName << ": parameter %" << p->name() << ": " << p->type().str()
                   << " <- " << report.params[j].input << " (" << v->str() << ")\n";
        continue;
      }
      const ir::Tensor *t = paramData(report, j, *inputs);
      if (auto it = unreadArgs.find(j); it != unreadArgs.end())
        t = &it->second;
      if (!t)
        return fail(o, fmt::format("{}: no input data for parameter '{}'", dsName, p->name()));
      args.push_back(interp::Value::ofTensor(*t));
      if (verbose)
        *verbose << "  " << dsName << ": parameter %" << p->name() << ": "
                 << p->type().str() << " <- " << report.params[j].input << "\n";
    }
    Expected<interp::Value> result = Error("not run");
    if (options.run) {
      auto flat = options.run(*module, args);
      if (!flat.ok())
        return fail(o, fmt::format("{}: {}", dsName, flat.error().str()));
      const size_t want = leafCount(main->resultType());
      if (flat->size() != want)
        return fail(o, fmt::format("{}: the runner returned {} tensors, @main's "
                                   "result type {} has {}",
                                   dsName, flat->size(), main->resultType().str(), want));
      size_t next = 0;
      result = regroup(main->resultType(), *flat, next);
    } else {
      result = interp::runValues(*module, args);
      if (!result.ok())
        return fail(o, fmt::format("{}: run failed: {}", dsName, result.error().str()));
    }
    // One output: the result itself; several: a tuple of them.
    std::vector<interp::Value> got;
    if (report.outputNames.size() == 1)
      got.push_back(*result);
    else
      got = result->fields;
    if (got.size() != expected->size())
      return fail(o, fmt::format("{}: the model computes {} outputs, the test data has {}",
                                 dsName, got.size(), expected->size()));
    std::string firstMismatch;
    for (size_t k = 0; k < got.size(); ++k) {
      std::string m = compareValue(fmt::format("output {}", k), got[k], (*expected)[k], verbose);
      if (!m.empty() && firstMismatch.empty())
        firstMismatch = m;
    }
    if (!firstMismatch.empty())
      return fail(o, dataSets.size() > 1 ? dsName + ": " + firstMismatch : firstMismatch);
  }
  o.status = TestStatus::Pass;
  return o;
}

} // namespace

TestOutcome runBackendTest(const std::string &dir, const ConformanceOptions &options,
                           std::ostream *verboseOut) {
  try {
    return runBackendTestImpl(dir, options, verboseOut);
  } catch (const std::exception &e) {
    TestOutcome o;
    o.name = fs::path(dir).filename().string();
    return fail(o, fmt::format("internal error: {}", e.what()));
  }
}

Expected<std::vector<std::string>> findBackendTests(const std::vector<std::string> &dirs) {
  std::vector<std::string> tests;
  for (std::string d : dirs) {
    while (d.size() > 1 && d.back() == '/') // "test_relu/" names test_relu
      d.pop_back();
    std::error_code ec;
    if (!fs::is_directory(d, ec))
      return Error::format("'{}' is not a directory", d);
    if (fs::exists(fs::path(d) / "model.onnx", ec)) {
      tests.push_back(d);
      continue;
    }
    std::vector<std::string> found;
    for (const auto &e : fs::directory_iterator(d, ec))
      if (e.is_directory() && fs::exists(e.path() / "model.onnx"))
        found.push_back(e.path().string());
    if (ec)
      return Error::format("cannot list '{}': {}", d, ec.message());
    if (found.empty())
      return Error::format("'{}' holds no ONNX backend test (no model.onnx in it or in its "
                           "sub-folders)",
                           d);
    std::sort(found.begin(), found.end());
    tests.insert(tests.end(), found.begin(), found.end());
  }
  return tests;
}

Expected<ConformanceSummary> runConformance(const std::vector<std::string> &dirs,
                                            const ConformanceOptions &options, std::ostream &out) {
  TS_ASSIGN_OR_RETURN(std::vector<std::string> tests, findBackendTests(dirs));
  ConformanceSummary s;
  for (const auto &t : tests) {
    std::string name = fs::path(t).filename().string();
    if (!options.filter.empty() && name.find(options.filter) == std::string::npos)
      continue;
    std::ostringstream details;
    TestOutcome o = runBackendTest(t, options, options.verbose ? &details : nullptr);
    switch (o.status) {
    case TestStatus::Pass:
      ++s.passed;
      out << "PASS " << o.name << (o.detail.empty() ? "" : " (note: " + o.detail + ")") << "\n";
      break;
    case TestStatus::Fail:
      ++s.failed;
      out << "FAIL " << o.name << ": " << o.detail << "\n";
      break;
    case TestStatus::Unsupported:
      ++s.unsupported;
      for (const auto &op : o.unsupportedOps)
        ++s.blockedBy[op];
      out << "UNSUPPORTED " << o.name << ": " << o.detail << "\n";
      break;
    }
    if (options.verbose)
      out << details.str();
    out.flush();
  }
  if (options.summary && !s.blockedBy.empty()) {
    std::vector<std::pair<std::string, int>> ops(s.blockedBy.begin(), s.blockedBy.end());
    std::stable_sort(ops.begin(), ops.end(),
                     [](const auto &a, const auto &b) { return a.second > b.second; });
    out << "unsupported op types by number of tests blocked:\n";
    for (const auto &[op, n] : ops)
      out << fmt::format("  {:<32} {}\n", op, n);
  }
  // Always the last line, for scripts.
  out << fmt::format("{} passed, {} failed, {} unsupported\n", s.passed, s.failed, s.unsupported);
  return s;
}

} // namespace tessera::frontend::onnx
