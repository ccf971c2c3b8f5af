//===- bridge/plugin_bridge.cpp - IR to plugin ABI structures -------------===//
#include "bridge/plugin_bridge.h"

#include "ir/symbol.h"
#include "ir/visit.h"
#include "tessera/sdk/json_graph.hpp"

#include <cassert>
#include <tuple>
#include <unordered_map>

// The IR's limit on shapes is the one the plugin ABI promises plugins.
static_assert(tessera::ir::kMaxElements == TESSERA_MAX_ELEMENTS);

namespace tessera::bridge {

namespace {

/// "'%conv1'" for a named node, else what it is ("conv2d call").
std::string exprLabel(const ir::ExprNode &e) {
  if (!e.name().empty())
    return "'%" + e.name() + "'";
  if (const auto *c = e.as<ir::CallNode>())
    return c->calleeName() + " call";
  return "unnamed node";
}

/// Dims or an int attribute's values with each symbolic dim -1, and the
/// symbols' indices (a type's symbols, tessera_attr_t::symbols; empty when there is
/// none).
std::pair<std::vector<int64_t>, std::vector<int32_t>> splitSymbols(std::span<const int64_t> values,
                                                                   SymbolList &symbols) {
  std::vector<int64_t> out(values.begin(), values.end());
  std::vector<int32_t> index;
  for (size_t k = 0; k < out.size(); ++k)
    if (ir::isSymbol(out[k])) {
      index.resize(out.size(), -1);
      index[k] = symbols.indexOf(out[k]);
      out[k] = -1;
    }
  return {std::move(out), std::move(index)};
}

sdk::TensorType toSdkType(const ir::Type &t, SymbolList &symbols) {
  sdk::TensorType out;
  out.dtype = ir::toDLDataType(t.dtype());
  std::tie(out.shape, out.symbols) = splitSymbols(t.shape(), symbols);
  return out;
}

sdk::AttrValue toSdkAttr(const ir::AttrValue &v) {
  return std::visit(
      [](const auto &x) -> sdk::AttrValue {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, ir::DType>)
          return ir::toDLDataType(x);
        else
          return x;
      },
      v);
}

} // namespace

//===----------------------------------------------------------------------===//
// Op descriptions
//===----------------------------------------------------------------------===//

int32_t SymbolList::indexOf(int64_t dim) {
  for (size_t k = 0; k < dims_.size(); ++k)
    if (dims_[k] == dim)
      return int32_t(k);
  const ir::SymbolInfo &info = ir::symbolInfo(dim);
  dims_.push_back(dim);
  const std::string &name = names_.emplace_back(info.derived() ? ir::dimStr(dim) : info.name);
  tessera_symbol_t &s = symbols_.emplace_back();
  s.struct_size = sizeof(tessera_symbol_t);
  s.name = name.c_str();
  s.lo = info.lo;
  s.hi = info.bounded() ? info.hi : -1;
  s.runtime = info.runtime || !info.roots.empty();
  // The first probe: every relation was evaluated there, so the values of
  // all symbols at it are consistent (ir/symbol.h).
  s.example = info.probes[0];
  ptrs_.push_back(&s);
  return int32_t(dims_.size() - 1);
}

std::vector<sdk::Symbol> SymbolList::sdkSymbols() const {
  std::vector<sdk::Symbol> out;
  for (const tessera_symbol_t &s : symbols_)
    out.push_back(sdk::toSymbol(s));
  return out;
}

void TensorTypeStore::add(const ir::Type &type, SymbolList *symbols) {
  if (type.isTuple()) {
    for (const ir::Type &f : type.fields())
      add(f, symbols);
    return;
  }
  // A uniqued type's shape lives until the process exits: point at it.
  const ir::Shape &shape = type.shape();
  const tessera_tensor_type_t *before = types_.data();
  tessera_tensor_type_t &t = types_.emplace_back();
  t.struct_size = sizeof(tessera_tensor_type_t);
  t.dtype = ir::toDLDataType(type.dtype());
  t.ndim = int32_t(shape.size());
  t.shape = shape.empty() ? nullptr : shape.data();
  if (!ir::isStatic(shape)) {
    assert(symbols && "a symbolic type needs a symbol list");
    auto [dims, index] = splitSymbols(shape, *symbols);
    t.shape = owned_.emplace_back(std::move(dims)).data();
    t.symbols = symbolIndex_.emplace_back(std::move(index)).data();
  }
  if (types_.data() != before) { // moved: point at the new copies
    ptrs_.clear();
    for (const tessera_tensor_type_t &x : types_)
      ptrs_.push_back(&x);
  } else {
    ptrs_.push_back(&t);
  }
}

Expected<std::unique_ptr<OpDescHolder>> OpDescHolder::fromCall(const ir::CallNode &call) {
  if (call.calleeKind() != ir::CallNode::CalleeKind::Op)
    return Error::format("{} is a call of {}, not of a core op", exprLabel(call),
                         call.calleeName());
  std::unique_ptr<OpDescHolder> h(new OpDescHolder);
  h->op_ = call.op()->name;
  h->name_ = call.name();
  // At most two strings per attribute (its name and a string value).
  h->attrs_.reserve(call.attrs().size());
  h->strings_.reserve(2 * call.attrs().size());
  h->attrPtrs_.reserve(call.attrs().size());
  for (const auto &[name, value] : call.attrs()) {
    tessera_attr_t &a = h->attrs_.emplace_back();
    a.struct_size = sizeof(tessera_attr_t);
    a.name = h->strings_.emplace_back(name).c_str();
    std::visit(
        [&](const auto &x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, int64_t>) {
            a.kind = TESSERA_ATTR_INT;
            a.i = x;
            if (ir::isSymbol(x)) {
              a.symbols = h->attrSymbols_.emplace_back(1, h->symbols_.indexOf(x)).data();
              a.i = -1;
            }
          } else if constexpr (std::is_same_v<T, double>) {
            a.kind = TESSERA_ATTR_FLOAT;
            a.f = x;
          } else if constexpr (std::is_same_v<T, std::string>) {
            a.kind = TESSERA_ATTR_STRING;
            a.s = h->strings_.emplace_back(x).c_str();
          } else if constexpr (std::is_same_v<T, bool>) {
            a.kind = TESSERA_ATTR_BOOL;
            a.b = x;
          } else if constexpr (std::is_same_v<T, ir::DType>) {
            a.kind = TESSERA_ATTR_DTYPE;
            a.dtype = ir::toDLDataType(x);
          } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
            a.kind = TESSERA_ATTR_INTS;
            auto [values, symbols] = splitSymbols(x, h->symbols_);
            a.ints = h->ints_.emplace_back(std::move(values)).data();
            a.count = x.size();
            if (!symbols.empty())
              a.symbols = h->attrSymbols_.emplace_back(std::move(symbols)).data();
          } else {
            a.kind = TESSERA_ATTR_FLOATS;
            a.floats = h->floats_.emplace_back(x).data();
            a.count = x.size();
          }
        },
        value);
    h->attrPtrs_.push_back(&a);
  }
  for (const ir::Expr &arg : call.args())
    h->inputs_.add(arg->type(), &h->symbols_);
  h->outputs_.add(call.type(), &h->symbols_);

  tessera_op_desc_t &d = h->desc_;
  d.struct_size = sizeof(tessera_op_desc_t);
  d.op = h->op_.c_str();
  d.name = h->name_.c_str();
  d.attrs = h->attrPtrs_.data();
  d.num_attrs = h->attrPtrs_.size();
  d.inputs = h->inputs_.data();
  d.num_inputs = h->inputs_.size();
  d.outputs = h->outputs_.data();
  d.num_outputs = h->outputs_.size();
  d.symbols = h->symbols_.data();
  d.num_symbols = h->symbols_.size();
  return h;
}

Expected<OpDescList> OpDescList::fromCalls(const std::vector<ir::Expr> &calls) {
  OpDescList list;
  for (const ir::Expr &e : calls) {
    const auto *call = e->as<ir::CallNode>();
    if (!call)
      return Error::format("{} is not a call", exprLabel(*e));
    TS_ASSIGN_OR_RETURN(auto h, OpDescHolder::fromCall(*call));
    list.ptrs_.push_back(&h->desc());
    list.holders_.push_back(std::move(h));
  }
  return list;
}

//===----------------------------------------------------------------------===//
// Graphs
//===----------------------------------------------------------------------===//

/// Builds one graph level (the function, or a composite's body) into an
/// sdk::Graph. Composite bodies get a child builder whose `parent_` feeds
/// constants that must come in as inputs.
class GraphBuilder {
public:
  GraphBuilder(GraphHolder &holder, GraphBuilder *parent, std::string where)
      : holder_(holder), parent_(parent), where_(std::move(where)) {}

  Status build(const ir::FunctionNode &fn) {
    for (const ir::Var &p : fn.params()) {
      if (!p->type().isTensor())
        return err(fmt::format("parameter '%{}' has type {}; plugin graphs take tensor inputs "
                               "only",
                               p->name(), p->type().str()));
      sdk::Node n;
      n.kind = sdk::Node::Kind::Input;
      n.name = p->name();
      n.outputs.push_back(toSdkType(p->type(), holder_.symbols_));
      refs_[p.get()] = {sdk::NodeRef{addNode(std::move(n), p), 0}};
      graph_.inputs.push_back(int64_t(graph_.nodes.size() - 1));
    }
    for (const ir::Expr &e : ir::postOrderExprs(fn.body(), /*intoFunctions=*/false))
      TS_RETURN_IF_ERROR(visit(e));
    TS_ASSIGN_OR_RETURN(auto outs, refsOf(fn.body()));
    graph_.outputs = std::move(outs);
    return okStatus();
  }

  sdk::Graph &graph() { return graph_; }
  /// Constants that this body receives as extra inputs, in order.
  const std::vector<ir::Expr> &constantInputs() const { return constantInputs_; }

private:
  Error err(const std::string &message) const { return Error::format("{}: {}", where_, message); }

  int64_t addNode(sdk::Node n, const ir::Expr &e) {
    // Where the symbols first appear (a composite's body is added before
    // the composite node, so its ops are named rather than the composite).
    auto &where = holder_.symbolWhere_;
    where.resize(holder_.symbols_.size());
    for (const sdk::TensorType &t : n.outputs)
      for (size_t d = 0; d < t.shape.size(); ++d)
        if (int32_t k = t.symbolOf(d); k >= 0 && where[size_t(k)].empty())
          where[size_t(k)] = fmt::format(
              "dim {} of {} '{}'", d,
              n.kind == sdk::Node::Kind::Input ? "input" : n.op.empty() ? "constant" : n.op,
              n.name);
    graph_.nodes.push_back(std::move(n));
    if (!parent_)
      holder_.nodeExprs_.push_back(e);
    return int64_t(graph_.nodes.size() - 1);
  }

  Expected<std::vector<sdk::NodeRef>> refsOf(const ir::Expr &e) const {
    auto it = refs_.find(e.get());
    if (it != refs_.end())
      return it->second;
    if (e->as<ir::FunctionNode>())
      return err("a function value that is not called as a composite");
    if (e->as<ir::VarNode>())
      return err(fmt::format("use of '%{}', which is not a parameter of the function", e->name()));
    return err("internal: " + exprLabel(*e) + " was not visited");
  }

  /// The single tensor reference of an operand.
  Expected<sdk::NodeRef> refOf(const ir::Expr &e) const {
    TS_ASSIGN_OR_RETURN(auto refs, refsOf(e));
    if (refs.size() != 1 || !e->type().isTensor())
      return err(exprLabel(*e) + " is a tuple where a tensor is needed (nested tuples are not "
                                 "supported)");
    return refs[0];
  }

  /// The reference for a constant: a "const" node, or an input.
  sdk::NodeRef constantRef(const ir::Expr &e) {
    auto it = refs_.find(e.get());
    if (it != refs_.end())
      return it->second[0];
    const auto &c = *e->as<ir::ConstantNode>();
    sdk::Node n;
    n.name = c.name();
    n.outputs.push_back(toSdkType(c.type(), holder_.symbols_));
    if (holder_.constantsAsInputs_) {
      n.kind = sdk::Node::Kind::Input;
      if (!parent_) {
        if (n.name.empty())
          n.name = fmt::format("const_{}", holder_.extraInputs_.size());
        holder_.extraInputs_.push_back(c.data());
      } else {
        if (n.name.empty())
          n.name = fmt::format("const_{}", constantInputs_.size());
        constantInputs_.push_back(e);
      }
      graph_.inputs.push_back(int64_t(graph_.nodes.size()));
    } else {
      n.kind = sdk::Node::Kind::Const;
      n.constant = holder_.constantIndex(e);
      if (n.name.empty())
        n.name = holder_.constantNames_[size_t(n.constant)];
    }
    sdk::NodeRef r{addNode(std::move(n), e), 0};
    refs_[e.get()] = {r};
    return r;
  }

  Status visit(const ir::Expr &e) {
    switch (e->kind()) {
    case ir::ExprKind::Var:
    case ir::ExprKind::Function: return okStatus(); // parameters; callees of composites
    case ir::ExprKind::Constant: constantRef(e); return okStatus();
    case ir::ExprKind::TupleGetItem: {
      const auto *g = e->as<ir::TupleGetItemNode>();
      TS_ASSIGN_OR_RETURN(auto refs, refsOf(g->tuple()));
      if (size_t(g->index()) >= refs.size())
        return err("tuple index out of range at " + exprLabel(*e));
      if (!e->type().isTensor())
        return err(exprLabel(*e) + ": nested tuples are not supported");
      refs_[e.get()] = {refs[size_t(g->index())]};
      return okStatus();
    }
    case ir::ExprKind::Tuple: {
      std::vector<sdk::NodeRef> refs;
      for (const ir::Expr &f : e->as<ir::TupleNode>()->fields()) {
        TS_ASSIGN_OR_RETURN(auto r, refOf(f));
        refs.push_back(r);
      }
      refs_[e.get()] = std::move(refs);
      return okStatus();
    }
    case ir::ExprKind::Call: return visitCall(e);
    }
    return okStatus();
  }

  Status visitCall(const ir::Expr &e) {
    const auto &call = *e->as<ir::CallNode>();
    sdk::Node n;
    n.name = call.name();
    for (const ir::Expr &arg : call.args()) {
      TS_ASSIGN_OR_RETURN(auto r, refOf(arg));
      n.inputs.push_back(r);
    }
    if (call.type().isTuple()) {
      for (const ir::Type &f : call.type().fields()) {
        if (!f.isTensor())
          return err(exprLabel(call) + ": nested tuples are not supported");
        n.outputs.push_back(toSdkType(f, holder_.symbols_));
      }
    } else {
      n.outputs.push_back(toSdkType(call.type(), holder_.symbols_));
    }
    switch (call.calleeKind()) {
    case ir::CallNode::CalleeKind::Op:
      n.kind = sdk::Node::Kind::Op;
      n.op = call.op()->name;
      for (const auto &[k, v] : call.attrs()) {
        n.attrs.set(k, toSdkAttr(v));
        // Symbolic dims in int attributes: -1, with their symbols beside.
        std::vector<int64_t> ints;
        if (const auto *i = std::get_if<int64_t>(&v))
          ints = {*i};
        else if (const auto *is = std::get_if<std::vector<int64_t>>(&v))
          ints = *is;
        auto [values, symbols] = splitSymbols(ints, holder_.symbols_);
        if (symbols.empty())
          continue;
        if (std::holds_alternative<int64_t>(v))
          n.attrs.set(k, values[0]);
        else
          n.attrs.set(k, values);
        n.attrs.setSymbols(k, std::move(symbols));
      }
      break;
    case ir::CallNode::CalleeKind::Global:
      return err(fmt::format("{} calls global function '@{}' (a plugin graph holds core ops, "
                             "constants and composites only)",
                             exprLabel(call), call.global()));
    case ir::CallNode::CalleeKind::Local: {
      const ir::FunctionNode &fn = *call.localFn();
      const ir::AttrValue *comp = fn.attrs().find("Composite");
      const std::string *compName = comp ? std::get_if<std::string>(comp) : nullptr;
      if (!compName || compName->empty())
        return err(exprLabel(call) +
                   " calls a local function without a Composite attribute (only composites "
                   "go to a plugin)");
      size_t dot = compName->find('.');
      if (dot == 0 || dot == std::string::npos || dot + 1 == compName->size())
        return err(fmt::format("{} calls a composite named '{}', which is not "
                               "'<plugin>.<pattern>'",
                               exprLabel(call), *compName));
      n.kind = sdk::Node::Kind::Composite;
      n.op = *compName;
      GraphBuilder body(holder_, this, where_ + ": composite '" + *compName + "'");
      TS_RETURN_IF_ERROR(body.build(fn));
      for (const ir::Expr &c : body.constantInputs())
        n.inputs.push_back(constantRef(c));
      n.body = std::make_shared<sdk::Graph>(std::move(body.graph()));
      break;
    }
    }
    int64_t idx = addNode(std::move(n), e);
    std::vector<sdk::NodeRef> refs;
    for (size_t i = 0; i < graph_.nodes[size_t(idx)].outputs.size(); ++i)
      refs.push_back({idx, int64_t(i)});
    refs_[e.get()] = std::move(refs);
    return okStatus();
  }

  GraphHolder &holder_;
  GraphBuilder *parent_;
  std::string where_;
  sdk::Graph graph_;
  std::unordered_map<const ir::ExprNode *, std::vector<sdk::NodeRef>> refs_;
  std::vector<ir::Expr> constantInputs_;
};

Expected<std::unique_ptr<GraphHolder>>
GraphHolder::fromFunction(const ir::Function &fn, std::string symbol, uint64_t codegenFlags) {
  std::unique_ptr<GraphHolder> h(new GraphHolder);
  h->symbol_ = std::move(symbol);
  h->constantsAsInputs_ = (codegenFlags & TESSERA_CODEGEN_CONSTANTS_AS_INPUTS) != 0;
  GraphBuilder builder(*h, nullptr, "plugin graph '" + h->symbol_ + "'");
  TS_RETURN_IF_ERROR(builder.build(*fn));
  builder.graph().symbol = h->symbol_;
  builder.graph().symbols = h->symbols_.sdkSymbols();
  h->symbolWhere_.resize(h->symbols_.size());
  for (std::string &w : h->symbolWhere_)
    if (w.empty())
      w = "a dim"; // only in a type no node has (none today)
  try {
    h->json_ = sdk::writeGraph(builder.graph());
  } catch (const std::exception &e) {
    return Error::format("plugin graph '{}': {}", h->symbol_, e.what());
  }

  for (const ir::Tensor &t : h->constants_)
    h->dlConstants_.push_back(t.dl());
  for (const DLTensor &t : h->dlConstants_)
    h->dlConstantPtrs_.push_back(&t);
  for (const std::string &n : h->constantNames_)
    h->constantNamePtrs_.push_back(n.c_str());
  tessera_graph_t &g = h->graph_;
  g.struct_size = sizeof(tessera_graph_t);
  g.symbol = h->symbol_.c_str();
  g.json = h->json_.c_str();
  g.json_size = h->json_.size();
  g.constant_names = h->constantNamePtrs_.data();
  g.constants = h->dlConstantPtrs_.data();
  g.num_constants = h->constants_.size();
  return h;
}

int64_t GraphHolder::constantIndex(const ir::Expr &e) {
  auto it = constantIndex_.find(e.get());
  if (it != constantIndex_.end())
    return it->second;
  const auto &c = *e->as<ir::ConstantNode>();
  int64_t idx = int64_t(constants_.size());
  constants_.push_back(c.data());
  constantNames_.push_back(c.name().empty() ? fmt::format("const_{}", idx) : c.name());
  constantIndex_[e.get()] = idx;
  return idx;
}

//===----------------------------------------------------------------------===//
// Outlining
//===----------------------------------------------------------------------===//

Expected<ir::Expr> outlineComposite(const PatternMatch &match, const std::string &compositeName) {
  return outlineComposite(match, compositeName,
                          std::vector<ir::Expr>(match.inputs.begin(), match.inputs.end()));
}

Expected<ir::Expr> outlineComposite(const PatternMatch &match, const std::string &compositeName,
                                    std::vector<ir::Expr> args) {
  if (args.size() != match.inputs.size())
    return Error::format("outlining '{}': {} arguments for {} inputs", compositeName, args.size(),
                         match.inputs.size());
  // Original node -> its value inside the body. A match holds a handful of
  // nodes (its pattern's size), so a flat list beats a hash map here.
  std::vector<std::pair<const ir::ExprNode *, ir::Expr>> mapped;
  mapped.reserve(match.inputs.size() + match.ops.size());
  auto lookup = [&](const ir::ExprNode *n) -> ir::Expr * {
    for (auto &[k, v] : mapped)
      if (k == n)
        return &v;
    return nullptr;
  };
  std::vector<ir::Var> params;
  for (size_t i = 0; i < match.inputs.size(); ++i) {
    const ir::Expr &in = match.inputs[i];
    ir::Var v = ir::makeVar(in->name().empty() ? fmt::format("in{}", i) : in->name(), in->type());
    if (!lookup(in.get()))
      mapped.emplace_back(in.get(), v);
    params.push_back(v);
  }
  // Post-order: each op's operands are mapped before the op is rebuilt.
  for (const ir::Expr &op : match.ops) {
    std::vector<ir::Expr> operands;
    operands.reserve(op->operands().size());
    for (const ir::Expr &x : op->operands()) {
      if (const ir::Expr *m = lookup(x.get()))
        operands.push_back(*m);
      else if (x->as<ir::ConstantNode>())
        operands.push_back(x);
      else
        return Error::format("outlining '{}': operand {} of {} is neither matched nor a leaf",
                             compositeName, exprLabel(*x), exprLabel(*op));
    }
    TS_ASSIGN_OR_RETURN(ir::Expr rebuilt, ir::withOperands(op, std::move(operands)));
    if (ir::Expr *m = lookup(op.get()))
      *m = rebuilt;
    else
      mapped.emplace_back(op.get(), rebuilt);
  }
  const ir::Expr *root = lookup(match.root.get());
  if (!root)
    return Error::format("outlining '{}': the match's root is not one of its ops", compositeName);
  ir::Function fn =
      ir::makeFunction(params, *root, ir::Attrs{{"Composite", std::string(compositeName)}});
  return ir::makeLocalCall(fn, std::move(args), match.root->name());
}

} // namespace tessera::bridge
