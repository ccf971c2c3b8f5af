//===- frontend/onnx/importer_nodes.cpp - Node conversion -----------------===//
//
// Step 4 of an import (see importer.cpp): the nodes are converted in
// topological order (the model's own order when it is one) by their
// converters, with their attributes as plain values; Constant nodes are
// built in unless the registry supplies a converter for them. Control-flow
// converters (control_flow.cpp) convert sub-graphs through
// NodeContext::convertSubgraph, which runs the same node loop on the
// sub-graph in a new scope (outer values visible by name).
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/importer_internal.h"

#include "frontend/onnx/tensor_proto.h"
#include "ir/visit.h"

#include <deque>
#include <exception>
#include <optional>
#include <set>
#include <unordered_set>

namespace tessera::frontend::onnx::importer_detail {

namespace {

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

} // namespace

/// The model's node order when it is topological (ONNX requires it), else
/// a stable topological sort; an undefined input or a cycle is an error.
Expected<std::vector<int>> Importer::topologicalOrder(const ::onnx::GraphProto &graph_) {
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

Status Importer::convertNode(const NodeProto &node, int index) {
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
            .withContext(fmt::format("sub-graph '{}'", attr))
            .withLocation(where);
    return Error::format("{}: no sub-graph attribute '{}'", where, attr);
  };
  SubgraphOutliner outline = [&](const std::vector<std::string> &names,
                                 const std::vector<std::vector<ir::Type>> &leading)
      -> Expected<OutlinedSubgraphs> {
    std::vector<const ::onnx::GraphProto *> graphs;
    for (const std::string &n : names)
      for (const auto &a : node.attribute())
        if (a.name() == n && a.has_g())
          graphs.push_back(&a.g());
    if (graphs.size() != names.size() || leading.size() != names.size())
      return Error::format("{}: internal: {} sub-graphs asked for, {} found", where, names.size(),
                           graphs.size());
    return outlineSubgraphs(graphs, leading).withLocation(where);
  };
  ctx.setSubgraphs(std::move(graphAttrs), &subgraphs, &outline);

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
    if (!e.located()) // a converter's ctx.error() names the node already
      e.addLocation(where);
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
const ir::Expr *Importer::findValue(const std::string &name) const {
  if (auto v = values_.find(name); v != values_.end())
    return &v->second;
  for (auto s = outer_.rbegin(); s != outer_.rend(); ++s)
    if (auto v = s->values.find(name); v != s->values.end())
      return &v->second;
  return nullptr;
}

const std::string *Importer::findMissing(const std::string &name) const {
  if (auto m = missing_.find(name); m != missing_.end())
    return &m->second;
  for (auto s = outer_.rbegin(); s != outer_.rend(); ++s)
    if (auto m = s->missing.find(name); m != s->missing.end())
      return &m->second;
  return nullptr;
}

bool Importer::isDefined(const std::string &name) const {
  return findValue(name) || findMissing(name);
}

/// Converts a sub-graph in a new scope: its inputs are bound to `inputs`
/// (in order), its initializers become constants, the enclosing scopes'
/// values are visible by name; returns its outputs (null for an absent
/// optional). Control-flow converters call this once per branch or
/// unrolled iteration.
Expected<std::vector<ir::Expr>>
Importer::convertSubgraph(const ::onnx::GraphProto &g, std::vector<ir::Expr> inputs,
                          const std::unordered_map<std::string, ir::Expr> *bindings) {
  if (int64_t(inputs.size()) != g.input_size())
    return Error::format("the sub-graph '{}' has {} inputs, {} given", g.name(), g.input_size(),
                         inputs.size());
  if (outer_.size() >= kMaxSubgraphDepth)
    return Error::format("sub-graphs are nested more than {} deep", kMaxSubgraphDepth);
  outer_.push_back(Scope{std::move(values_), std::move(missing_)});
  values_.clear();
  missing_.clear();
  if (bindings)
    values_.insert(bindings->begin(), bindings->end());
  auto result = convertSubgraphInScope(g, std::move(inputs));
  values_ = std::move(outer_.back().values);
  missing_ = std::move(outer_.back().missing);
  outer_.pop_back();
  return result;
}

Expected<std::vector<ir::Expr>> Importer::convertSubgraphInScope(const ::onnx::GraphProto &g,
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

namespace {

/// Appends to `out` (once each, in order of first use) the names `g` reads
/// without defining them: inputs of its nodes and its outputs that are not
/// its inputs, initializers or node outputs, also inside nested sub-graphs.
void freeNames(const ::onnx::GraphProto &g, std::vector<std::string> &out) {
  std::unordered_set<std::string> defined;
  for (const auto &vi : g.input())
    defined.insert(vi.name());
  for (const auto &t : g.initializer())
    defined.insert(t.name());
  for (const auto &n : g.node())
    for (const auto &o : n.output())
      defined.insert(o);
  auto use = [&](const std::string &name) {
    if (!name.empty() && !defined.count(name) &&
        std::find(out.begin(), out.end(), name) == out.end())
      out.push_back(name);
  };
  for (const auto &n : g.node()) {
    for (const auto &in : n.input())
      use(in);
    for (const auto &a : n.attribute()) {
      std::vector<std::string> inner;
      if (a.has_g())
        freeNames(a.g(), inner);
      for (const auto &sub : a.graphs())
        freeNames(sub, inner);
      for (const auto &name : inner)
        use(name);
    }
  }
  for (const auto &vi : g.output())
    use(vi.name());
}

} // namespace

/// Sub-graphs as closed functions: every non-constant value they read from
/// the enclosing scopes becomes a parameter of each function (its own Var
/// per function), bound while the graph is converted; the outputs become
/// the function's tuple result.
Expected<OutlinedSubgraphs>
Importer::outlineSubgraphs(const std::vector<const ::onnx::GraphProto *> &gs,
                           const std::vector<std::vector<ir::Type>> &leading) {
  std::vector<std::string> names;
  for (const auto *g : gs)
    freeNames(*g, names);
  OutlinedSubgraphs out;
  std::vector<std::string> capturedNames;
  std::unordered_map<std::string, ir::Expr> constants;
  for (const std::string &name : names) {
    if (const std::string *m = findMissing(name))
      return Error::format("a sub-graph reads '{}', which is {}, which Tessera does not produce",
                           name, *m);
    const ir::Expr *v = findValue(name);
    if (!v)
      continue; // the conversion reports it as not defined
    if (!*v || (*v)->as<ir::ConstantNode>()) {
      constants[name] = *v; // absent optionals and constants stay as they are
      continue;
    }
    if (!isValueType((*v)->type()))
      return Error::format("a sub-graph reads '{}' of type {}, which cannot be passed to it",
                           name, (*v)->type().str());
    capturedNames.push_back(name);
    out.captured.push_back(*v);
  }
  for (size_t i = 0; i < gs.size(); ++i) {
    const ::onnx::GraphProto &g = *gs[i];
    if (int64_t(leading[i].size()) != g.input_size())
      return Error::format("the sub-graph '{}' has {} inputs, {} given", g.name(), g.input_size(),
                           leading[i].size());
    std::unordered_map<std::string, ir::Expr> bindings = constants;
    std::vector<ir::Var> params;
    for (int j = 0; j < g.input_size(); ++j)
      params.push_back(ir::makeVar(g.input(j).name(), leading[i][size_t(j)]));
    std::vector<ir::Expr> inputs(params.begin(), params.end());
    for (size_t c = 0; c < capturedNames.size(); ++c) {
      ir::Var p = ir::makeVar(capturedNames[c], out.captured[c]->type());
      bindings[capturedNames[c]] = p;
      params.push_back(std::move(p));
    }
    SymbolScope scope; // symbols set outside have their values when it runs
    TS_ASSIGN_OR_RETURN(std::vector<ir::Expr> results,
                        convertSubgraph(*gs[i], std::move(inputs), &bindings)
                            .withContext(fmt::format("sub-graph '{}'", gs[i]->name())));
    for (size_t r = 0; r < results.size(); ++r)
      if (!results[r])
        return Error::format("sub-graph '{}': output {} is an absent optional, which a function "
                             "decided at run time cannot return",
                             gs[i]->name(), r);
    out.functions.push_back(ir::makeFunction(std::move(params), ir::makeTuple(std::move(results)),
                                             {}, gs[i]->name()));
  }
  return out;
}

/// A tensor, a tuple of them (a sequence of import-time length), nested, or
/// a sequence of run-time length.
bool Importer::isValueType(const ir::Type &t) {
  if (t.isTensor() || t.isSequence())
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
void Importer::reportWishes(const std::vector<ir::Expr> &asked) {
  std::set<std::string> names(report_.wantedConstants.begin(), report_.wantedConstants.end());
  for (const auto &e : asked)
    for (const ir::ExprNode *n : ir::postOrder(e, /*intoFunctions=*/false))
      if (n->as<ir::VarNode>())
        names.insert(n->name());
  report_.wantedConstants.assign(names.begin(), names.end());
}

} // namespace tessera::frontend::onnx::importer_detail
