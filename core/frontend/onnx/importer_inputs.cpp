//===- frontend/onnx/importer_inputs.cpp - Initializers and graph inputs ---===//
//
// Step 3 of an import (see importer.cpp): initializers become constants; the
// other graph inputs become @main's parameters, typed from their
// declarations and ImportOptions::inputShapes, or constants
// (ImportOptions::constantInputs); sequence and optional inputs get their
// structure from ImportOptions::valueTypes. Also the checks of computed or
// bound values against declared ONNX types, which the other steps use too.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/importer_internal.h"

#include "frontend/onnx/tensor_proto.h"
#include "ir/symbol.h"

#include <optional>

namespace tessera::frontend::onnx::importer_detail {

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

Status Importer::bindInitializers() {
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
Expected<ir::Type> Importer::inputType(const ValueInfoProto &vi) {
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
  auto bound = boundShapes_.find(name);
  if (!tt.has_shape()) {
    if (bound == boundShapes_.end())
      return Error::format("input '{}' declares no shape; give one (e.g. --input-shape "
                           "{}=1,3,224,224)",
                           name, name);
    return tensor(bound->second);
  }
  const auto &s = tt.shape();
  if (bound != boundShapes_.end()) {
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
                             ir::shapeStr(shape), ir::dimStr(shape[size_t(i)]));
    return tensor(shape);
  }
  ir::Shape shape;
  for (int i = 0; i < s.dim_size(); ++i) {
    const auto &d = s.dim(i);
    if (d.has_dim_value() && d.dim_value() >= 0) {
      shape.push_back(d.dim_value());
      continue;
    }
    const std::string param = d.has_dim_param() ? d.dim_param() : std::string();
    if (auto it = symbolIndex_.find(param); !param.empty() && it != symbolIndex_.end()) {
      // A symbol another input's bound shape (or an earlier pin) gave.
      ImportReport::Symbol &sym = report_.symbols[it->second];
      sym.dims.push_back({name, i});
      shape.push_back(sym.value);
    } else {
      // An unbound dim stays symbolic (1.., no upper bound): one artifact
      // for every size (docs/design/0013). Named after its dim_param, or
      // after the input and dim when it has none (or one that cannot name a
      // symbol).
      std::string symbol = ir::isSymbolName(param) ? param : rangeSymbolName(name, size_t(i));
      auto dim = ir::namedSymbol(symbol, 1);
      if (!dim.ok())
        return std::move(dim).error().addContext(
            fmt::format("input '{}' dim {} ({})", name, i, declaredShapeStr(s)));
      if (!param.empty())
        symbolIndex_[param] = report_.symbols.size();
      report_.symbols.push_back({param, *dim, true, {{name, i}}});
      shape.push_back(*dim);
    }
  }
  return tensor(shape);
}

/// The dim_params of the inputs whose shapes are bound: each is one symbol,
/// whose value every other input that declares it takes.
Status Importer::collectBoundSymbols() {
  for (const auto &[input, shape] : options_.inputShapes)
    boundShapes_[input] = shape;
  for (const auto &vi : graph_.input()) {
    auto bound = boundShapes_.find(vi.name());
    if (bound == boundShapes_.end() || !vi.type().has_tensor_type() ||
        !vi.type().tensor_type().has_shape())
      continue;
    const auto &s = vi.type().tensor_type().shape();
    if (int64_t(bound->second.size()) != s.dim_size())
      continue; // inputType names the mismatch
    for (int i = 0; i < s.dim_size(); ++i) {
      const auto &d = s.dim(i);
      if (d.has_dim_value() || !d.has_dim_param() || d.dim_param().empty())
        continue;
      int64_t &value = bound->second[size_t(i)];
      // A range bound without a name ("x=1..8,...", named "x_0" by
      // parseInputShape) takes the model's dim_param as its name.
      if (ir::isSymbol(value)) {
        const ir::SymbolInfo &sym = ir::symbolInfo(value);
        if (sym.name == rangeSymbolName(vi.name(), size_t(i))) {
          auto renamed = ir::namedSymbol(d.dim_param(), sym.lo, sym.hi);
          if (renamed.ok())
            value = *renamed;
        }
      }
      auto [it, fresh] = symbolIndex_.emplace(d.dim_param(), report_.symbols.size());
      if (fresh) {
        report_.symbols.push_back({d.dim_param(), value, false, {{vi.name(), i}}});
        continue;
      }
      ImportReport::Symbol &sym = report_.symbols[it->second];
      if (sym.value != value)
        return Error::format("symbolic dim '{}' is {} in the --input-shape of '{}' (dim {}) and "
                             "{} in that of '{}' (dim {}): inputs that declare the same "
                             "dim_param must agree",
                             sym.name, ir::dimStr(sym.value), sym.dims[0].first,
                             sym.dims[0].second, ir::dimStr(value), vi.name(), i);
      sym.dims.push_back({vi.name(), i});
    }
  }
  return okStatus();
}

Status Importer::bindInputs() {
  TS_RETURN_IF_ERROR(collectBoundSymbols());
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
std::string Importer::onnxTypeStr(const ::onnx::TypeProto &t) {
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
bool Importer::typeFits(const ::onnx::TypeProto &d, const ir::Type &t, bool shapes) {
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
    if (t.isSequence()) { // of run-time length: its dtype
      const auto &e = d.sequence_type().elem_type();
      if (!e.has_tensor_type() || e.tensor_type().elem_type() == 0)
        return true;
      auto dtype = dtypeFromOnnx(e.tensor_type().elem_type());
      return dtype && *dtype == t.dtype();
    }
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
Status Importer::bindStructuredInput(const ValueInfoProto &vi) {
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
    // A sequence (or a present optional sequence) of run-time length.
    TS_ASSIGN_OR_RETURN(ir::Type t, sequenceInputType(vi));
    bound = t;
  }
  if (!bound) {
    values_[name] = nullptr; // an absent optional
    return okStatus();
  }
  TS_ASSIGN_OR_RETURN(values_[name], paramsFor(name, *bound, name, {}));
  return okStatus();
}

/// An unbound sequence input's type: a sequence of run-time length of its
/// declared element dtype, and rank when the element type has a shape.
Expected<ir::Type> Importer::sequenceInputType(const ValueInfoProto &vi) {
  const ::onnx::TypeProto *t = &vi.type();
  if (t->has_optional_type())
    t = &t->optional_type().elem_type();
  const ::onnx::TypeProto *e = t->has_sequence_type() ? &t->sequence_type().elem_type() : nullptr;
  if (!e || !e->has_tensor_type())
    return Error::format("input '{}' is a {}: Tessera takes sequences of tensors", vi.name(),
                         onnxTypeStr(vi.type()));
  auto dtype = dtypeFromOnnx(e->tensor_type().elem_type());
  if (!dtype)
    return Error::format("input '{}' is a {}, whose element type Tessera does not support",
                         vi.name(), onnxTypeStr(vi.type()));
  const auto &tt = e->tensor_type();
  return ir::Type::sequence(*dtype, tt.has_shape() ? tt.shape().dim_size() : -1);
}

Expected<ir::Expr> Importer::paramsFor(const std::string &input, const ir::Type &t,
                                       const std::string &paramName, std::vector<int64_t> path) {
  if (t.isTensor() || t.isSequence()) {
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

Status Importer::checkBoundConstant(const ValueInfoProto &vi, const ir::Tensor &t) {
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

} // namespace tessera::frontend::onnx::importer_detail

namespace tessera::frontend::onnx {

std::vector<std::string> unboundSymbolNotes(const ImportReport &report) {
  std::vector<std::string> notes;
  for (const ImportReport::Symbol &sym : report.symbols) {
    if (!sym.unbound)
      continue;
    std::string where;
    for (const auto &[input, dim] : sym.dims)
      where += fmt::format("{}input '{}' dim {}", where.empty() ? "" : ", ", input, dim);
    const std::string name = ir::symbolInfo(sym.value).name;
    notes.push_back(fmt::format("{} ({}) is not bound: it stays symbolic ({}: 1..), one artifact "
                                "for every size (--input-shape {}=... compiles for one size; "
                                "{}:1..64 there bounds it)",
                                sym.name.empty() ? std::string("a dynamic dim")
                                                 : fmt::format("symbolic dim '{}'", sym.name),
                                where, name, sym.dims[0].first, name));
  }
  return notes;
}

} // namespace tessera::frontend::onnx
