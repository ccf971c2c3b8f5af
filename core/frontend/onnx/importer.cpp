//===- frontend/onnx/importer.cpp - ONNX models into the core IR ---------===//
//
// The import runs in this order, so that the cheap checks that explain most
// failures come first:
//   1. parse the ModelProto; find the default domain's opset;
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
//===----------------------------------------------------------------------===//
#include "frontend/onnx/importer.h"

#include "frontend/onnx/converter.h"
#include "frontend/onnx/tensor_proto.h"
#include "ir/visit.h"
#include "passes/pass.h"
#include "support/file.h"

#include <onnx/onnx_pb.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <deque>
#include <exception>
#include <filesystem>
#include <functional>
#include <fstream>
#include <sstream>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace tessera::frontend::onnx {

namespace {

using ::onnx::AttributeProto;
using ::onnx::ModelProto;
using ::onnx::NodeProto;
using ::onnx::TensorProto;
using ::onnx::ValueInfoProto;

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

/// "[N, 3, ?, 224]": a declared shape with its symbolic dims.
std::string declaredShapeStr(const ::onnx::TensorShapeProto &s) {
  std::string out = "[";
  for (int i = 0; i < s.dim_size(); ++i) {
    if (i)
      out += ", ";
    const auto &d = s.dim(i);
    if (d.has_dim_value())
      out += std::to_string(d.dim_value());
    else if (d.has_dim_param() && !d.dim_param().empty())
      out += d.dim_param();
    else
      out += "?";
  }
  return out + "]";
}

/// An ONNX attribute as a plain value; graphs and sparse tensors are left out
/// (no converter uses them).
Expected<std::optional<OnnxAttr>> convertAttr(const AttributeProto &a, const std::string &baseDir,
                                              const std::string &nodeName) {
  auto type = a.type();
  if (type == AttributeProto::UNDEFINED) { // very old models: guess from the fields
    if (a.has_f())
      type = AttributeProto::FLOAT;
    else if (a.has_i())
      type = AttributeProto::INT;
    else if (a.has_s())
      type = AttributeProto::STRING;
    else if (a.has_t())
      type = AttributeProto::TENSOR;
    else if (a.floats_size())
      type = AttributeProto::FLOATS;
    else if (a.ints_size())
      type = AttributeProto::INTS;
    else if (a.strings_size())
      type = AttributeProto::STRINGS;
  }
  switch (type) {
  case AttributeProto::INT: return std::optional<OnnxAttr>(int64_t(a.i()));
  case AttributeProto::FLOAT: return std::optional<OnnxAttr>(a.f());
  case AttributeProto::STRING: return std::optional<OnnxAttr>(a.s());
  case AttributeProto::INTS:
    return std::optional<OnnxAttr>(std::vector<int64_t>(a.ints().begin(), a.ints().end()));
  case AttributeProto::FLOATS:
    return std::optional<OnnxAttr>(std::vector<float>(a.floats().begin(), a.floats().end()));
  case AttributeProto::STRINGS:
    return std::optional<OnnxAttr>(
        std::vector<std::string>(a.strings().begin(), a.strings().end()));
  case AttributeProto::TENSOR: {
    TS_ASSIGN_OR_RETURN(
        ir::Tensor t,
        tensorFromProto(a.t(), baseDir,
                        fmt::format("attribute '{}' of node '{}'", a.name(), nodeName)));
    return std::optional<OnnxAttr>(std::move(t));
  }
  default: return std::optional<OnnxAttr>();
  }
}

/// The built-in converter of ONNX Constant (value, value_float(s),
/// value_int(s); strings and sparse tensors are rejected).
Expected<std::vector<ir::Expr>> convertConstant(NodeContext &ctx) {
  if (ctx.attrs().size() != 1)
    return ctx.error("expected exactly one value attribute, got {}", ctx.attrs().size());
  const auto &[name, value] = *ctx.attrs().begin();
  if (name == "value") {
    TS_ASSIGN_OR_RETURN(ir::Tensor t, ctx.attrTensor("value"));
    return std::vector<ir::Expr>{ctx.constant(std::move(t))};
  }
  if (name == "value_float") {
    TS_ASSIGN_OR_RETURN(float v, ctx.attrFloat(name));
    double d = v;
    return std::vector<ir::Expr>{ctx.constant(ir::Tensor::fromDoubles(ir::DType::F32, {}, {&d, 1}))};
  }
  if (name == "value_floats") {
    TS_ASSIGN_OR_RETURN(auto v, ctx.attrFloats(name));
    std::vector<double> d(v.begin(), v.end());
    return std::vector<ir::Expr>{
        ctx.constant(ir::Tensor::fromDoubles(ir::DType::F32, {int64_t(d.size())}, d))};
  }
  if (name == "value_int") {
    TS_ASSIGN_OR_RETURN(int64_t v, ctx.attrInt(name));
    return std::vector<ir::Expr>{ctx.constant(ir::Tensor::fromInts(ir::DType::I64, {}, {&v, 1}))};
  }
  if (name == "value_ints") {
    TS_ASSIGN_OR_RETURN(auto v, ctx.attrInts(name));
    return std::vector<ir::Expr>{
        ctx.constant(ir::Tensor::fromInts(ir::DType::I64, {int64_t(v.size())}, v))};
  }
  if (name == "value_string" || name == "value_strings")
    return ctx.error("string constants are not supported");
  if (name == "sparse_value")
    return ctx.error("sparse constants are not supported");
  return ctx.error("unknown attribute '{}'", name);
}

/// Forwards TupleGetItem(Tuple(...)) to the field, so that folded tuples
/// (Split of a constant) stay constants.
ir::Expr forwardTupleItem(ir::Expr e) {
  if (const auto *g = e->as<ir::TupleGetItemNode>())
    if (const auto *t = g->tuple()->as<ir::TupleNode>())
      return t->fields()[size_t(g->index())];
  return e;
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

class Importer {
public:
  Importer(const ModelProto &model, const std::string &baseDir, const std::string &displayName,
           const ImportOptions &options, ImportReport &report)
      : model_(model), graph_(model.graph()), baseDir_(baseDir), displayName_(displayName),
        options_(options), report_(report),
        registry_(options.registry ? *options.registry : ConverterRegistry::standard()) {}

  Expected<ir::Module> run() {
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

private:
  void findOpset() {
    for (const auto &o : model_.opset_import())
      if (isDefaultDomain(o.domain())) {
        opset_ = o.version();
        hasOpset_ = true;
      }
    report_.opset = opset_;
  }

  std::string opsetError() const {
    return fmt::format("opset {} of the default ONNX domain is not supported (Tessera imports "
                       "opsets {} to {})",
                       opset_, kMinOpset, kMaxOpset);
  }

  /// Opsets above 17 are rejected; older ones pass when checkSupported()
  /// found converters for all their op types.
  Status checkOpset() {
    if (!hasOpset_)
      return Error("the model imports no opset of the default ONNX domain");
    if (opset_ > kMaxOpset || opset_ < 1)
      return Error(opsetError());
    return okStatus();
  }

  void collectNames() {
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
  static std::string nodeName(const NodeProto &n, int index) {
    return n.name().empty() ? fmt::format("{}_{}", n.op_type(), index) : n.name();
  }

  /// Every op type without a converter, in one error. A converter covers the
  /// opsets [minOpset, maxOpset] of its spec (the built-in Constant covers
  /// 1..17); nothing covers opsets above 17. So a model of opset 6 imports
  /// when every converter it needs also handles opset 6, and is otherwise
  /// rejected by op type ("Relu (opset 6)").
  Status checkSupported() {
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
  static std::string foreignTypeVariant(const NodeProto &n,
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

  Status checkOptionNames() {
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

  Status bindInitializers() {
    for (const auto &t : graph_.initializer()) {
      TS_ASSIGN_OR_RETURN(ir::Tensor value,
                          tensorFromProto(t, baseDir_, fmt::format("initializer '{}'", t.name())));
      values_[t.name()] = ir::makeConstant(std::move(value), t.name());
    }
    if (graph_.sparse_initializer_size())
      return Error::format("sparse initializer '{}' is not supported",
                           graph_.sparse_initializer(0).values().name());
    return okStatus();
  }

  /// The static type of a graph input from its declaration and the bound
  /// shape, if any.
  Expected<ir::Type> inputType(const ValueInfoProto &vi) {
    const std::string &name = vi.name();
    if (!vi.type().has_tensor_type())
      return Error::format("input '{}' is not a tensor", name);
    const auto &tt = vi.type().tensor_type();
    auto dtype = dtypeFromOnnx(tt.elem_type());
    if (!dtype)
      return Error::format("input '{}': unsupported element type {}", name,
                           onnxDTypeName(tt.elem_type()));
    auto tensor = [&](const ir::Shape &shape) -> Expected<ir::Type> {
      if (Status st = ir::checkShape(shape); !st.ok())
        return Error::format("input '{}': {}", name, st.error().message());
      return ir::Type::tensor(*dtype, shape);
    };
    auto bound = options_.inputShapes.find(name);
    if (!tt.has_shape()) {
      if (bound == options_.inputShapes.end())
        return Error::format("input '{}' declares no shape; give one (e.g. --input-shape "
                             "{}=1,3,224,224)",
                             name, name);
      return tensor(bound->second);
    }
    const auto &s = tt.shape();
    if (bound != options_.inputShapes.end()) {
      const auto &shape = bound->second;
      if (int64_t(shape.size()) != s.dim_size())
        return Error::format("input '{}': the bound shape {} has {} dims, the model declares {} "
                             "({})",
                             name, ir::shapeStr(shape), shape.size(), s.dim_size(),
                             declaredShapeStr(s));
      for (int i = 0; i < s.dim_size(); ++i)
        if (s.dim(i).has_dim_value() && s.dim(i).dim_value() != shape[size_t(i)])
          return Error::format("input '{}': dim {} is {} in the model ({}), the bound shape {} "
                               "gives {}",
                               name, i, s.dim(i).dim_value(), declaredShapeStr(s),
                               ir::shapeStr(shape), shape[size_t(i)]);
      return tensor(shape);
    }
    ir::Shape shape;
    for (int i = 0; i < s.dim_size(); ++i) {
      const auto &d = s.dim(i);
      if (d.has_dim_value() && d.dim_value() >= 0) {
        shape.push_back(d.dim_value());
      } else if (i == 0) {
        shape.push_back(1); // an unbound batch dim
      } else {
        std::string param = d.has_dim_param() && !d.dim_param().empty()
                                ? fmt::format(" ('{}')", d.dim_param())
                                : std::string();
        return Error::format("input '{}': dim {}{} of {} is dynamic; bind the input's shape "
                             "(e.g. --input-shape {}=...)",
                             name, i, param, declaredShapeStr(s), name);
      }
    }
    return tensor(shape);
  }

  Status bindInputs() {
    for (const auto &vi : graph_.input()) {
      const std::string &name = vi.name();
      if (initializerNames_.count(name))
        continue;
      if (values_.count(name))
        return Error::format("graph input '{}' is declared twice", name);
      if (auto c = options_.constantInputs.find(name); c != options_.constantInputs.end()) {
        if (!vi.type().has_tensor_type() && vi.type().value_case() != ::onnx::TypeProto::VALUE_NOT_SET)
          return Error::format("input '{}' is a {}; only tensor inputs can be bound as constants",
                               name, onnxTypeStr(vi.type()));
        TS_RETURN_IF_ERROR(checkBoundConstant(vi, c->second));
        values_[name] = ir::makeConstant(c->second, name);
        continue;
      }
      if (!vi.type().has_tensor_type()) {
        TS_RETURN_IF_ERROR(bindStructuredInput(vi));
        continue;
      }
      if (options_.valueTypes.count(name))
        return Error::format("input '{}' is a tensor: bind its shape with an input shape, not a "
                             "value type",
                             name);
      TS_ASSIGN_OR_RETURN(ir::Type type, inputType(vi));
      ir::Var v = ir::makeVar(name, type);
      params_.push_back(v);
      report_.params.push_back({name, {}});
      values_[name] = v;
    }
    return okStatus();
  }

  /// "sequence of tensor(FLOAT)", "optional of tensor(INT32) [4]", ...
  static std::string onnxTypeStr(const ::onnx::TypeProto &t) {
    if (t.has_tensor_type()) {
      const auto &tt = t.tensor_type();
      std::string s = fmt::format("tensor({})", tt.elem_type() ? onnxDTypeName(tt.elem_type())
                                                               : std::string("?"));
      if (tt.has_shape())
        s += " " + declaredShapeStr(tt.shape());
      return s;
    }
    if (t.has_sequence_type())
      return "sequence of " + onnxTypeStr(t.sequence_type().elem_type());
    if (t.has_optional_type())
      return "optional of " + onnxTypeStr(t.optional_type().elem_type());
    if (t.has_map_type())
      return "map";
    if (t.has_sparse_tensor_type())
      return "sparse tensor";
    return "value of unknown type";
  }

  /// Does the computed or bound type `t` fit the declared ONNX type (dtype
  /// and static dims of tensors, sequences as tuples, optionals as their
  /// value)? An undeclared type fits everything.
  /// With shapes = false only element types and structure are checked (the
  /// declared shapes inside sub-graphs are often inexact in real models).
  static bool typeFits(const ::onnx::TypeProto &d, const ir::Type &t, bool shapes = true) {
    switch (d.value_case()) {
    case ::onnx::TypeProto::VALUE_NOT_SET: return true;
    case ::onnx::TypeProto::kTensorType: {
      if (!t.isTensor())
        return false;
      const auto &tt = d.tensor_type();
      if (tt.elem_type() != 0) {
        auto dtype = dtypeFromOnnx(tt.elem_type());
        if (!dtype || *dtype != t.dtype())
          return false;
      }
      if (!tt.has_shape() || !shapes)
        return true;
      const auto &s = tt.shape();
      if (int64_t(t.rank()) != s.dim_size())
        return false;
      for (int i = 0; i < s.dim_size(); ++i)
        if (s.dim(i).has_dim_value() && s.dim(i).dim_value() != t.shape()[size_t(i)])
          return false;
      return true;
    }
    case ::onnx::TypeProto::kSequenceType: {
      if (!t.isTuple())
        return false;
      for (const auto &f : t.fields())
        if (!typeFits(d.sequence_type().elem_type(), f, shapes))
          return false;
      return true;
    }
    case ::onnx::TypeProto::kOptionalType:
      return typeFits(d.optional_type().elem_type(), t, shapes);
    default: return false;
    }
  }

  /// A sequence or optional graph input: parameters for its tensors (one per
  /// sequence element, named "x.0", "x.1", ...), packed into tuples; nothing
  /// for an absent optional.
  Status bindStructuredInput(const ValueInfoProto &vi) {
    const std::string &name = vi.name();
    const auto &type = vi.type();
    if (!type.has_sequence_type() && !type.has_optional_type())
      return Error::format("input '{}' is a {}, which Tessera does not support", name,
                           onnxTypeStr(type));
    std::optional<ir::Type> bound;
    if (auto b = options_.valueTypes.find(name); b != options_.valueTypes.end()) {
      bound = b->second;
      if (bound && !typeFits(type, *bound))
        return Error::format("input '{}' is declared {}, the type bound to it is {}", name,
                             onnxTypeStr(type), bound->str());
      if (!bound && !type.has_optional_type())
        return Error::format("input '{}' is a {}, not an optional: it cannot be bound to an "
                             "absent value",
                             name, onnxTypeStr(type));
    } else if (type.has_optional_type() && type.optional_type().elem_type().has_tensor_type()) {
      // An unbound optional tensor: present, with its declared type.
      ValueInfoProto inner;
      inner.set_name(name);
      *inner.mutable_type() = type.optional_type().elem_type();
      TS_ASSIGN_OR_RETURN(ir::Type t, inputType(inner));
      bound = t;
    } else {
      return Error::format("input '{}' is a {}: bind its length and element shapes (the "
                           "importer's value types; the conformance runner binds them from the "
                           "test data)",
                           name, onnxTypeStr(type));
    }
    if (!bound) {
      values_[name] = nullptr; // an absent optional
      return okStatus();
    }
    TS_ASSIGN_OR_RETURN(values_[name], paramsFor(name, *bound, name, {}));
    return okStatus();
  }

  Expected<ir::Expr> paramsFor(const std::string &input, const ir::Type &t,
                               const std::string &paramName, std::vector<int64_t> path) {
    if (t.isTensor()) {
      ir::Var v = ir::makeVar(paramName, t);
      params_.push_back(v);
      report_.params.push_back({input, std::move(path)});
      return ir::Expr(v);
    }
    if (!t.isTuple())
      return Error::format("input '{}': cannot bind a value of type {}", input, t.str());
    std::vector<ir::Expr> fields;
    for (size_t i = 0; i < t.fields().size(); ++i) {
      std::vector<int64_t> p = path;
      p.push_back(int64_t(i));
      TS_ASSIGN_OR_RETURN(ir::Expr f,
                          paramsFor(input, t.fields()[i], fmt::format("{}.{}", paramName, i), p));
      fields.push_back(std::move(f));
    }
    return ir::makeTuple(std::move(fields), input);
  }

  Status checkBoundConstant(const ValueInfoProto &vi, const ir::Tensor &t) {
    if (!vi.type().has_tensor_type())
      return okStatus();
    const auto &tt = vi.type().tensor_type();
    auto dtype = dtypeFromOnnx(tt.elem_type());
    if (tt.elem_type() != 0 && (!dtype || *dtype != t.dtype()))
      return Error::format("input '{}' is {}, the constant bound to it is {}", vi.name(),
                           onnxDTypeName(tt.elem_type()), t.type().str());
    if (!tt.has_shape())
      return okStatus();
    const auto &s = tt.shape();
    bool ok = int64_t(t.rank()) == s.dim_size();
    for (int i = 0; ok && i < s.dim_size(); ++i)
      ok = !s.dim(i).has_dim_value() || s.dim(i).dim_value() == t.shape()[size_t(i)];
    if (!ok)
      return Error::format("input '{}' is declared {}, the constant bound to it is {}", vi.name(),
                           declaredShapeStr(s), t.type().str());
    return okStatus();
  }

  /// The model's node order when it is topological (ONNX requires it), else
  /// a stable topological sort; an undefined input or a cycle is an error.
  Expected<std::vector<int>> topologicalOrder(const ::onnx::GraphProto &graph_) {
    const int n = graph_.node_size();
    std::unordered_map<std::string, int> producer;
    for (int i = 0; i < n; ++i)
      for (const auto &o : graph_.node(i).output())
        if (!o.empty())
          producer.emplace(o, i);
    std::vector<std::vector<int>> users(static_cast<size_t>(n));
    std::vector<int> pending(static_cast<size_t>(n), 0);
    bool inOrder = true;
    for (int i = 0; i < n; ++i) {
      const NodeProto &node = graph_.node(i);
      for (const auto &in : node.input()) {
        if (in.empty() || isDefined(in))
          continue;
        auto p = producer.find(in);
        if (p == producer.end())
          return Error::format("node '{}' ({}): input '{}' is not produced by any node, "
                               "initializer or graph input",
                               nodeName(node, i), node.op_type(), in);
        inOrder = inOrder && p->second < i;
        users[size_t(p->second)].push_back(i);
        ++pending[size_t(i)];
      }
    }
    std::vector<int> order(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i)
      order[size_t(i)] = i;
    if (inOrder)
      return order;
    order.clear();
    std::deque<int> ready;
    for (int i = 0; i < n; ++i)
      if (!pending[size_t(i)])
        ready.push_back(i);
    while (!ready.empty()) {
      int i = ready.front();
      ready.pop_front();
      order.push_back(i);
      for (int u : users[size_t(i)])
        if (--pending[size_t(u)] == 0)
          ready.push_back(u);
    }
    if (int64_t(order.size()) != n)
      for (int i = 0; i < n; ++i)
        if (pending[size_t(i)])
          return Error::format("the graph has a cycle through node '{}' ({})",
                               nodeName(graph_.node(i), i), graph_.node(i).op_type());
    return order;
  }

  Status convertNode(const NodeProto &node, int index) {
    const std::string name = nodeName(node, index);
    const std::string where = fmt::format("node '{}' ({})", name, node.op_type());
    std::vector<ir::Expr> inputs;
    for (const auto &in : node.input()) {
      if (in.empty()) {
        inputs.push_back(nullptr);
        continue;
      }
      if (const std::string *m = findMissing(in))
        return Error::format("{}: input '{}' is {}, which Tessera does not produce", where, in,
                             *m);
      const ir::Expr *v = findValue(in);
      if (!v)
        return Error::format("{}: input '{}' is not defined", where, in);
      inputs.push_back(*v);
    }
    if (++convertedNodes_ > kMaxConvertedNodes)
      return Error::format("{}: the model unrolls to more than {} nodes (control flow is "
                           "unrolled at import time)",
                           where, kMaxConvertedNodes);
    std::vector<std::string> graphAttrs;
    for (const auto &a : node.attribute())
      if (a.type() == AttributeProto::GRAPH || a.has_g())
        graphAttrs.push_back(a.name());
    std::map<std::string, OnnxAttr, std::less<>> attrs;
    for (const auto &a : node.attribute()) {
      TS_ASSIGN_OR_RETURN(auto value, convertAttr(a, baseDir_, name));
      if (value)
        attrs[a.name()] = std::move(*value);
    }
    NodeContext ctx(node.op_type(), name, opset_, std::move(inputs), size_t(node.output_size()),
                    std::move(attrs));
    std::vector<ir::Expr> asked; // inputs wanted as constants that are not
    ctx.setConstantWishes(&asked);
    SubgraphConverter subgraphs = [&](std::string_view attr,
                                      std::vector<ir::Expr> values) -> Expected<std::vector<ir::Expr>> {
      for (const auto &a : node.attribute())
        if (a.name() == attr && a.has_g())
          return convertSubgraph(a.g(), std::move(values))
              .withContext(fmt::format("{}: sub-graph '{}'", where, attr));
      return Error::format("{}: no sub-graph attribute '{}'", where, attr);
    };
    ctx.setSubgraphs(std::move(graphAttrs), &subgraphs);

    const ConverterSpec *spec = registry_.find(node.op_type());
    Expected<std::vector<ir::Expr>> outputs = std::vector<ir::Expr>{};
    try {
      outputs = spec ? spec->convert(ctx) : convertConstant(ctx);
    } catch (const std::exception &e) {
      return Error::format("{}: internal error in the converter: {}", where, e.what());
    }
    if (!outputs.ok()) {
      reportWishes(asked);
      Error e = std::move(outputs).error();
      if (e.str().rfind("node '", 0) != 0)
        e.addContext(where);
      return e;
    }
    if (outputs->size() > size_t(node.output_size()))
      return Error::format("{}: the converter returned {} outputs, the node has {}", where,
                           outputs->size(), node.output_size());
    for (int k = 0; k < node.output_size(); ++k) {
      const std::string &out = node.output(k);
      if (out.empty())
        continue;
      if (values_.count(out) || missing_.count(out))
        return Error::format("{}: output '{}' is defined twice", where, out);
      if (size_t(k) >= outputs->size()) {
        missing_[out] = fmt::format("output {} of {}", k, where);
        continue;
      }
      ir::Expr e = (*outputs)[size_t(k)];
      if (!e)
        return Error::format("{}: the converter returned no value for output {}", where, k);
      e = forwardTupleItem(std::move(e));
      if (!isValueType(e->type()))
        return Error::format("{}: output {} is {}, not a tensor or a sequence", where, k,
                             e->type().str());
      values_[out] = std::move(e);
    }
    return okStatus();
  }

  /// The value of `name` in the innermost scope that defines it, or null.
  const ir::Expr *findValue(const std::string &name) const {
    if (auto v = values_.find(name); v != values_.end())
      return &v->second;
    for (auto s = outer_.rbegin(); s != outer_.rend(); ++s)
      if (auto v = s->values.find(name); v != s->values.end())
        return &v->second;
    return nullptr;
  }
  const std::string *findMissing(const std::string &name) const {
    if (auto m = missing_.find(name); m != missing_.end())
      return &m->second;
    for (auto s = outer_.rbegin(); s != outer_.rend(); ++s)
      if (auto m = s->missing.find(name); m != s->missing.end())
        return &m->second;
    return nullptr;
  }
  bool isDefined(const std::string &name) const { return findValue(name) || findMissing(name); }

  /// Converts a sub-graph in a new scope: its inputs are bound to `inputs`
  /// (in order), its initializers become constants, the enclosing scopes'
  /// values are visible by name; returns its outputs (null for an absent
  /// optional). Control-flow converters call this once per branch or
  /// unrolled iteration.
  Expected<std::vector<ir::Expr>> convertSubgraph(const ::onnx::GraphProto &g,
                                                  std::vector<ir::Expr> inputs) {
    if (int64_t(inputs.size()) != g.input_size())
      return Error::format("the sub-graph '{}' has {} inputs, {} given", g.name(), g.input_size(),
                           inputs.size());
    if (outer_.size() >= kMaxSubgraphDepth)
      return Error::format("sub-graphs are nested more than {} deep", kMaxSubgraphDepth);
    outer_.push_back(Scope{std::move(values_), std::move(missing_)});
    values_.clear();
    missing_.clear();
    auto result = convertSubgraphInScope(g, std::move(inputs));
    values_ = std::move(outer_.back().values);
    missing_ = std::move(outer_.back().missing);
    outer_.pop_back();
    return result;
  }

  Expected<std::vector<ir::Expr>> convertSubgraphInScope(const ::onnx::GraphProto &g,
                                                         std::vector<ir::Expr> inputs) {
    for (const auto &t : g.initializer()) {
      TS_ASSIGN_OR_RETURN(ir::Tensor value,
                          tensorFromProto(t, baseDir_, fmt::format("initializer '{}'", t.name())));
      values_[t.name()] = ir::makeConstant(std::move(value), t.name());
    }
    if (g.sparse_initializer_size())
      return Error::format("sparse initializer '{}' is not supported",
                           g.sparse_initializer(0).values().name());
    for (int i = 0; i < g.input_size(); ++i) {
      const auto &vi = g.input(i);
      const ir::Expr &v = inputs[size_t(i)];
      // Declared shapes inside sub-graphs are not checked: ONNX models often
      // declare them loosely (e.g. a sequence element shape of []).
      if (v && !typeFits(vi.type(), v->type(), /*shapes=*/false))
        return Error::format("sub-graph input '{}' is declared {}, the value bound to it is {}",
                             vi.name(), onnxTypeStr(vi.type()), v->type().str());
      values_[vi.name()] = v;
    }
    TS_ASSIGN_OR_RETURN(std::vector<int> order, topologicalOrder(g));
    for (int i : order)
      TS_RETURN_IF_ERROR(convertNode(g.node(i), i));
    std::vector<ir::Expr> outputs;
    for (const auto &vi : g.output()) {
      if (const std::string *m = findMissing(vi.name()))
        return Error::format("sub-graph output '{}' is {}, which Tessera does not produce",
                             vi.name(), *m);
      const ir::Expr *v = findValue(vi.name());
      if (!v)
        return Error::format("sub-graph output '{}' is not produced by any node", vi.name());
      if (*v && !typeFits(vi.type(), (*v)->type(), /*shapes=*/false))
        return Error::format("sub-graph output '{}' is declared {} but the graph computes {}",
                             vi.name(), onnxTypeStr(vi.type()), (*v)->type().str());
      outputs.push_back(*v);
    }
    return outputs;
  }

  /// A tensor, or a tuple of them (a sequence), nested.
  static bool isValueType(const ir::Type &t) {
    if (t.isTensor())
      return true;
    if (!t.isTuple())
      return false;
    for (const auto &f : t.fields())
      if (!isValueType(f))
        return false;
    return true;
  }

  /// The graph inputs that the non-constant inputs a failed converter asked
  /// for are computed from: binding them makes those inputs constants.
  void reportWishes(const std::vector<ir::Expr> &asked) {
    std::set<std::string> names(report_.wantedConstants.begin(), report_.wantedConstants.end());
    for (const auto &e : asked)
      for (const ir::ExprNode *n : ir::postOrder(e, /*intoFunctions=*/false))
        if (n->as<ir::VarNode>())
          names.insert(n->name());
    report_.wantedConstants.assign(names.begin(), names.end());
  }

  /// The declared type of a graph output agrees with the computed one.
  Status checkOutput(const ValueInfoProto &vi, const ir::Type &t) {
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
      for (int i = 0; ok && i < s.dim_size(); ++i)
        ok = !s.dim(i).has_dim_value() || s.dim(i).dim_value() == t.shape()[size_t(i)];
    }
    if (!ok)
      return Error::format("output '{}': the model declares {} but the graph computes {}",
                           vi.name(), declared, t.str());
    return okStatus();
  }

  Expected<ir::Module> finish() {
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

  const ModelProto &model_;
  const ::onnx::GraphProto &graph_;
  const std::string &baseDir_;
  const std::string &displayName_;
  const ImportOptions &options_;
  ImportReport &report_;
  const ConverterRegistry &registry_;
  int64_t opset_ = 0;
  std::unordered_set<std::string> initializerNames_;
  std::unordered_map<std::string, ir::Expr> values_;
  /// Outputs a converter did not produce -> "output 1 of node 'd' (Dropout)".
  std::unordered_map<std::string, std::string> missing_;
  std::vector<ir::Var> params_;
  bool hasOpset_ = false;
  /// The scopes enclosing the sub-graph being converted (values_ and
  /// missing_ are the innermost one), outermost first.
  struct Scope {
    std::unordered_map<std::string, ir::Expr> values;
    std::unordered_map<std::string, std::string> missing;
  };
  std::vector<Scope> outer_;
  static constexpr size_t kMaxSubgraphDepth = 64;
  /// Nodes converted so far, unrolled iterations included (capped).
  static constexpr int64_t kMaxConvertedNodes = 1000000;
  int64_t convertedNodes_ = 0;
};

} // namespace

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
  while (true) {
    size_t comma = dims.find(',');
    std::string_view d = dims.substr(0, comma);
    int64_t v = -1;
    auto [ptr, ec] = std::from_chars(d.data(), d.data() + d.size(), v);
    if (d.empty() || ec != std::errc() || ptr != d.data() + d.size() || v < 0)
      return Error::format("bad input shape '{}': dim {} ('{}') is not a non-negative integer",
                           spec, shape.size(), d);
    shape.push_back(v);
    if (comma == std::string_view::npos)
      break;
    dims = dims.substr(comma + 1);
  }
  return std::make_pair(std::move(name), std::move(shape));
}

} // namespace tessera::frontend::onnx
