//===- frontend/onnx/importer.cpp - ONNX models into the core IR ---------===//
//
// The import runs in this order, so that the cheap checks that explain most
// failures come first:
//   1. parse the ModelProto; find the default domain's opset; a Loop's
//      sequences that only grow become scan outputs (appended_sequences.cpp);
//   2. list the op types without a converter, or whose converter does not
//      cover that opset, and fail with ONE error naming all of them, with
//      counts and node names (so a model of opset 6 imports only when all
//      its converters cover opset 6; opsets above 17 are rejected);
//   3. initializers become constants; the other graph inputs become @main's
//      parameters (typed from their declarations and ImportOptions::
//      inputShapes) or constants (ImportOptions::constantInputs); sequence
//      inputs become one parameter per element, packed into a tuple, and
//      optional inputs their value or nothing (ImportOptions::valueTypes);
//   4. nodes are converted in topological order (the model's own order when
//      it is one) by their converters; Constant nodes are built in unless a
//      registry supplies a converter for them;
//      control-flow converters (control_flow.cpp) convert sub-graphs through
//      NodeContext::convertSubgraph, which runs the same node loop on the
//      sub-graph in a new scope (outer values visible by name); step 2
//      scans sub-graphs too;
//   5. @main returns the graph outputs, checked against their declared
//      types; infer-types and the verifier run when options.verify is set.
//
// The Importer class (importer_internal.h) is defined along these steps:
// this file holds steps 1, 2 and 5 and the entry points;
// importer_inputs.cpp step 3 and importer_nodes.cpp step 4.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/importer.h"

#include "frontend/onnx/importer_internal.h"
#include "frontend/onnx/tensor_proto.h"
#include "ir/symbol.h"
#include "passes/pass.h"
#include "support/file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

namespace tessera::frontend::onnx {

namespace importer_detail {

namespace {

constexpr int64_t kMinOpset = 7;
constexpr int64_t kMaxOpset = 17;

bool isDefaultDomain(const std::string &d) { return d.empty() || d == "ai.onnx"; }

std::string joined(const std::vector<std::string> &names, std::string_view sep = ", ") {
  std::string out;
  for (const auto &n : names) {
    if (!out.empty())
      out += sep;
    out += n;
  }
  return out;
}

std::string moduleNameFor(const std::string &graphName, const std::string &displayName) {
  std::string base = graphName;
  if (base.empty())
    base = std::filesystem::path(displayName).stem().string();
  std::string out;
  for (char c : base)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0])))
    out = "m_" + out;
  return out;
}

} // namespace

Expected<ir::Module> Importer::run() {
  findOpset();
  collectNames();
  TS_RETURN_IF_ERROR(checkSupported());
  TS_RETURN_IF_ERROR(checkOpset());
  TS_RETURN_IF_ERROR(checkOptionNames());
  TS_RETURN_IF_ERROR(bindInitializers());
  TS_RETURN_IF_ERROR(bindInputs());
  TS_ASSIGN_OR_RETURN(std::vector<int> order, topologicalOrder(graph_));
  for (int i : order)
    TS_RETURN_IF_ERROR(convertNode(graph_.node(i), i));
  return finish();
}

void Importer::findOpset() {
  for (const auto &o : model_.opset_import())
    if (isDefaultDomain(o.domain())) {
      opset_ = o.version();
      hasOpset_ = true;
    }
  report_.opset = opset_;
}

std::string Importer::opsetError() const {
  return fmt::format("opset {} of the default ONNX domain is not supported (Tessera imports "
                     "opsets {} to {})",
                     opset_, kMinOpset, kMaxOpset);
}

/// Opsets above 17 are rejected; older ones pass when checkSupported()
/// found converters for all their op types.
Status Importer::checkOpset() {
  if (!hasOpset_)
    return Error("the model imports no opset of the default ONNX domain");
  if (opset_ > kMaxOpset || opset_ < 1)
    return Error(opsetError());
  return okStatus();
}

void Importer::collectNames() {
  for (const auto &t : graph_.initializer())
    initializerNames_.insert(t.name());
  for (const auto &t : graph_.sparse_initializer())
    initializerNames_.insert(t.values().name());
  for (const auto &in : graph_.input())
    if (!initializerNames_.count(in.name()))
      report_.graphInputs.push_back(in.name());
  for (const auto &out : graph_.output())
    report_.outputNames.push_back(out.name());
}

/// The node's name, or "<OpType>_<index>" when the model gives none.
std::string Importer::nodeName(const NodeProto &n, int index) {
  return n.name().empty() ? fmt::format("{}_{}", n.op_type(), index) : n.name();
}

/// Every op type without a converter, in one error. A converter covers the
/// opsets [minOpset, maxOpset] of its spec (the built-in Constant covers
/// 1..17); nothing covers opsets above 17. So a model of opset 6 imports
/// when every converter it needs also handles opset 6, and is otherwise
/// rejected by op type ("Relu (opset 6)").
Status Importer::checkSupported() {
  std::map<std::string, UnsupportedOpType> missing;
  // Element types the IR lacks (STRING, COMPLEX64, ...) of the main graph's
  // inputs and initializers, by value name.
  std::map<std::string, int32_t> foreignTypes;
  for (const auto &in : graph_.input())
    if (in.type().has_tensor_type() && !dtypeFromOnnx(in.type().tensor_type().elem_type()))
      foreignTypes[in.name()] = in.type().tensor_type().elem_type();
  for (const auto &t : graph_.initializer())
    if (!dtypeFromOnnx(t.data_type()))
      foreignTypes[t.name()] = t.data_type();
  // Sub-graphs (If's branches, Loop's body, ...) are scanned too, so that
  // an op type without a converter inside them is reported here.
  std::function<void(const ::onnx::GraphProto &)> scan = [&](const ::onnx::GraphProto &g) {
  for (int i = 0; i < g.node_size(); ++i) {
    const NodeProto &n = g.node(i);
    for (const auto &a : n.attribute()) {
      if (a.has_g())
        scan(a.g());
      for (const auto &sub : a.graphs())
        scan(sub);
    }
    std::string key;
    if (!isDefaultDomain(n.domain())) {
      key = n.domain() + "::" + n.op_type();
    } else if (!hasOpset_) {
      continue; // checkOpset() reports it
    } else {
      const ConverterSpec *spec = registry_.find(n.op_type());
      bool builtin = !spec && n.op_type() == "Constant";
      bool covered = opset_ >= 1 && opset_ <= kMaxOpset &&
                     (spec ? opset_ >= spec->minOpset && opset_ <= spec->maxOpset : builtin);
      if (!covered)
        key = (spec || builtin) ? fmt::format("{} (opset {})", n.op_type(), opset_)
                                : n.op_type();
      else
        key = foreignTypeVariant(n, foreignTypes);
    }
    if (key.empty())
      continue;
    auto &u = missing[key];
    u.opType = key;
    if (u.count++ < 3)
      u.nodes.push_back(nodeName(n, i));
  }
  };
  scan(graph_);
  for (auto &[k, u] : missing)
    report_.unsupported.push_back(std::move(u));
  if (report_.unsupported.empty())
    return okStatus();
  if (hasOpset_ && opset_ > kMaxOpset)
    return Error(opsetError());
  // The caller adds the display name as context, which gives the message
  // describeUnsupported() documents.
  std::string msg = describeUnsupported("", report_.unsupported).substr(2);
  if (hasOpset_ && opset_ < kMinOpset)
    msg += fmt::format(" (Tessera imports opsets {} to {}, and older ones only where the "
                       "converters handle them)",
                       kMinOpset, kMaxOpset);
  return Error(msg);
}

/// "Cast (to STRING)" or "Concat (STRING)" when node `n` casts to, or reads
/// a graph input or initializer of, an element type the IR lacks: the op
/// type is rejected for that type by name, like "Relu (opset 6)" for an
/// opset. Empty otherwise.
std::string Importer::foreignTypeVariant(const NodeProto &n,
                                         const std::map<std::string, int32_t> &foreignTypes) {
  if (n.op_type() == "Cast")
    for (const auto &a : n.attribute())
      if (a.name() == "to" && !dtypeFromOnnx(int32_t(a.i())))
        return fmt::format("Cast (to {})", onnxDTypeName(int32_t(a.i())));
  for (const auto &in : n.input())
    if (auto it = foreignTypes.find(in); it != foreignTypes.end())
      return fmt::format("{} ({})", n.op_type(), onnxDTypeName(it->second));
  return {};
}

Status Importer::checkOptionNames() {
  std::unordered_set<std::string> known(report_.graphInputs.begin(), report_.graphInputs.end());
  auto check = [&](const std::string &name, const char *what) -> Status {
    if (known.count(name))
      return okStatus();
    return Error::format("{} names '{}', which is not a graph input (the inputs are: {})", what,
                         name,
                         report_.graphInputs.empty() ? "none" : joined(report_.graphInputs));
  };
  for (const auto &[name, shape] : options_.inputShapes)
    TS_RETURN_IF_ERROR(check(name, "an input shape"));
  for (const auto &[name, value] : options_.constantInputs)
    TS_RETURN_IF_ERROR(check(name, "a constant binding"));
  for (const auto &[name, type] : options_.valueTypes)
    TS_RETURN_IF_ERROR(check(name, "a value type binding"));
  return okStatus();
}

/// The declared type of a graph output agrees with the computed one.
Status Importer::checkOutput(const ValueInfoProto &vi, const ir::Type &t) {
  if (!vi.type().has_tensor_type()) {
    if (!typeFits(vi.type(), t))
      return Error::format("output '{}': the model declares {} but the graph computes {}",
                           vi.name(), onnxTypeStr(vi.type()), t.str());
    return okStatus();
  }
  const auto &tt = vi.type().tensor_type();
  std::string declared = tt.elem_type() ? onnxDTypeName(tt.elem_type()) : std::string("?");
  bool ok = true;
  if (tt.elem_type() != 0) {
    auto dtype = dtypeFromOnnx(tt.elem_type());
    ok = dtype && *dtype == t.dtype();
  }
  if (tt.has_shape()) {
    const auto &s = tt.shape();
    declared += " " + declaredShapeStr(s);
    ok = ok && int64_t(t.rank()) == s.dim_size();
    // A size the data decides (a run-time symbol, or one computed from one)
    // cannot be checked here: the declaration holds for one example at most.
    for (int i = 0; ok && i < s.dim_size(); ++i) {
      const int64_t d = t.shape()[size_t(i)];
      ok = !s.dim(i).has_dim_value() || s.dim(i).dim_value() == d ||
           (ir::isSymbol(d) && !ir::symbolInfo(d).roots.empty());
    }
  }
  if (!ok)
    return Error::format("output '{}': the model declares {} but the graph computes {}",
                         vi.name(), declared, t.str());
  return okStatus();
}

Expected<ir::Module> Importer::finish() {
  if (graph_.output_size() == 0)
    return Error("the graph has no outputs");
  std::vector<ir::Expr> results;
  for (const auto &vi : graph_.output()) {
    if (auto m = missing_.find(vi.name()); m != missing_.end())
      return Error::format("graph output '{}' is {}, which Tessera does not produce", vi.name(),
                           m->second);
    auto v = values_.find(vi.name());
    if (v == values_.end())
      return Error::format("graph output '{}' is not produced by any node", vi.name());
    if (!v->second)
      return Error::format("graph output '{}' is an absent optional, which Tessera does not "
                           "return",
                           vi.name());
    TS_RETURN_IF_ERROR(checkOutput(vi, v->second->type()));
    // A shape value holding symbols (Shape of a symbolic input, a sequence's
    // run-time length) is returned as the symbols' values of the run.
    const auto *k = v->second->as<ir::ConstantNode>();
    if (k && holdsSymbols(k->data())) {
      TS_ASSIGN_OR_RETURN(
          ir::Expr values,
          ir::makeCall("symbol_values", {},
                       {{"values", k->data().toInts()}, {"shape", k->data().shape()}},
                       vi.name()));
      results.push_back(std::move(values));
      continue;
    }
    results.push_back(v->second);
  }
  ir::Expr body = results.size() == 1 ? results[0] : ir::makeTuple(results);
  ir::Attrs attrs;
  attrs.set("output_names", joined(report_.outputNames, ";"));
  ir::Module m(moduleNameFor(graph_.name(), displayName_));
  m.set("main", ir::makeFunction(params_, body, std::move(attrs), "main"));
  if (options_.verify) {
    passes::PassContext pctx;
    TS_RETURN_IF_ERROR(passes::createInferTypesPass()->run(m, pctx));
    TS_RETURN_IF_ERROR(passes::verifyModule(m));
  }
  return m;
}

} // namespace importer_detail

using namespace importer_detail;

std::string describeUnsupported(const std::string &displayName,
                                const std::vector<UnsupportedOpType> &unsupported) {
  std::string out = fmt::format("{}: {} unsupported op type{}: ", displayName, unsupported.size(),
                                unsupported.size() == 1 ? "" : "s");
  for (size_t i = 0; i < unsupported.size(); ++i) {
    const auto &u = unsupported[i];
    out += fmt::format("{}{} ({} node{}: {}{})", i ? ", " : "", u.opType, u.count,
                       u.count == 1 ? "" : "s", joined(u.nodes),
                       u.count > int64_t(u.nodes.size()) ? ", ..." : "");
  }
  return out;
}

Expected<ir::Module> importModelBytes(std::string_view bytes, const std::string &baseDir,
                                      const std::string &displayName,
                                      const ImportOptions &options, ImportReport *report) {
  ImportReport local;
  ImportReport &r = report ? *report : local;
  r = ImportReport{};
  if (bytes.size() > size_t(INT32_MAX))
    return Error::format("{}: models larger than 2 GiB are not supported", displayName);
  ModelProto model;
  if (!model.ParseFromArray(bytes.data(), int(bytes.size())))
    return Error::format("{}: not an ONNX model (protobuf parse failed)", displayName);
  if (!model.has_graph())
    return Error::format("{}: not an ONNX model (no graph)", displayName);
  stackAppendedSequences(*model.mutable_graph());
  Importer importer(model, baseDir, displayName, options, r);
  return importer.run().withContext(displayName);
}

Expected<ir::Module> importModelFile(const std::string &path, const ImportOptions &options,
                                     ImportReport *report) {
  TS_RETURN_IF_ERROR(checkReadableFile(path));
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty())
    dir = ".";
  // A regular file is mapped, not read: protobuf parses the page cache in
  // place (ViT-B/16's 346 MB were read byte by byte through a stream, then
  // copied). Pipes and other files that do not map are read.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Error::format("cannot open '{}': {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    void *map = ::mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (map != MAP_FAILED) {
      struct Unmap {
        void *p;
        size_t n;
        ~Unmap() { ::munmap(p, n); }
      } unmap{map, size_t(st.st_size)};
      return importModelBytes(std::string_view((const char *)map, size_t(st.st_size)), dir, path,
                              options, report);
    }
  } else {
    ::close(fd);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Error::format("cannot open '{}': {}", path, std::strerror(errno));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad())
    return Error::format("cannot read '{}'", path);
  return importModelBytes(buffer.str(), dir, path, options, report);
}

namespace importer_detail {

std::string rangeSymbolName(std::string_view input, size_t dim) {
  std::string out = fmt::format("{}_{}", input, dim);
  for (char &c : out)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
      c = '_';
  if (std::isdigit(static_cast<unsigned char>(out[0])))
    out.insert(0, "_");
  return out;
}

} // namespace importer_detail

Expected<std::pair<std::string, std::vector<int64_t>>> parseInputShape(std::string_view spec) {
  size_t eq = spec.rfind('=');
  if (eq == std::string_view::npos)
    return Error::format("bad input shape '{}': expected NAME=D1,D2,... (e.g. x=1,3,224,224)",
                         spec);
  std::string name(spec.substr(0, eq));
  std::string_view dims = spec.substr(eq + 1);
  if (name.empty())
    return Error::format("bad input shape '{}': the input name is empty", spec);
  if (dims.empty())
    return Error::format("bad input shape '{}': no dims after '='", spec);
  std::vector<int64_t> shape;
  auto integer = [](std::string_view d, int64_t &v) {
    auto [ptr, ec] = std::from_chars(d.data(), d.data() + d.size(), v);
    return !d.empty() && ec == std::errc() && ptr == d.data() + d.size() && v >= 0;
  };
  while (true) {
    size_t comma = dims.find(',');
    std::string_view d = dims.substr(0, comma);
    int64_t v = -1;
    if (!integer(d, v)) {
      // A symbol: NAME, NAME:LO..HI, or LO..HI (named after the input and
      // the dim, "x_2"; the importer renames it after the model's dim_param).
      std::string_view symbol = d, range;
      if (size_t colon = d.find(':'); colon != std::string_view::npos) {
        symbol = d.substr(0, colon);
        range = d.substr(colon + 1);
      } else if (d.find("..") != std::string_view::npos) {
        symbol = {};
        range = d;
      }
      int64_t lo = 1, hi = ir::kUnbounded;
      size_t dots = range.find("..");
      // "32.." has a lower bound only.
      const bool rangeOk =
          range.empty() ||
          (dots != std::string_view::npos && integer(range.substr(0, dots), lo) &&
           (dots + 2 == range.size() || integer(range.substr(dots + 2), hi)));
      if (!rangeOk || (!symbol.empty() && !ir::isSymbolName(symbol)) || (symbol.empty() && range.empty()))
        return Error::format("bad input shape '{}': dim {} ('{}') is not a non-negative integer, "
                             "a symbol name (N), or a range (1..8, N:1..8, H:32..)",
                             spec, shape.size(), d);
      const std::string symName = symbol.empty() ? importer_detail::rangeSymbolName(name, shape.size())
                                                 : std::string(symbol);
      auto sym = ir::namedSymbol(symName, lo, hi);
      if (!sym.ok())
        return Error::format("bad input shape '{}': dim {} ('{}'): {}", spec, shape.size(), d,
                             sym.error().message());
      v = *sym;
    }
    shape.push_back(v);
    if (comma == std::string_view::npos)
      break;
    dims = dims.substr(comma + 1);
  }
  return std::make_pair(std::move(name), std::move(shape));
}

} // namespace tessera::frontend::onnx
