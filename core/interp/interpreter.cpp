//===- interp/interpreter.cpp - Reference interpreter --------------------===//
//
// Evaluates a function body in post-order with the ops' reference kernels.
// Values are dropped after their last use, so peak memory follows the live
// set, not the graph. Calls of functions (global or local) evaluate the
// callee's body the same way; that recursion follows the call nesting of the
// program, never the depth of a graph.
//
// Symbolic modules run too (docs/design/0013-dynamic-shapes.md): the
// inputs give their symbols' values, a data-dependent op (Op::
// dataDependent) gives its run-time symbol's, and a derived symbol is
// computed from the definitions the IR recorded for it. Each call's kernel
// sees its type and int attributes with every symbol replaced by its value.
//
//===----------------------------------------------------------------------===//
#include "interp/interpreter.h"

#include "ir/symbol.h"
#include "ir/visit.h"

#include <cstring>
#include <unordered_map>

namespace tessera::interp {

using namespace ir;

Value Value::ofSequence(std::vector<Tensor> elements) {
  Value v;
  v.isSequence = true;
  for (auto &e : elements)
    v.fields.push_back(ofTensor(std::move(e)));
  return v;
}

std::vector<Tensor> Value::flatten() const {
  if (!isTuple && !isSequence)
    return {tensor};
  std::vector<Tensor> out;
  for (const auto &f : fields) {
    auto sub = f.flatten();
    out.insert(out.end(), sub.begin(), sub.end());
  }
  return out;
}

namespace {

Value fromTensors(const Type &type, std::vector<Tensor> tensors) {
  if (!type.isTuple())
    return Value::ofTensor(std::move(tensors.at(0)));
  std::vector<Value> fields;
  for (auto &t : tensors)
    fields.push_back(Value::ofTensor(std::move(t)));
  return Value::ofTuple(std::move(fields));
}

std::string describe(const ExprNode &n) {
  std::string s = n.as<CallNode>() ? n.as<CallNode>()->calleeName() : "value";
  if (!n.name().empty())
    s += fmt::format(" '%{}'", n.name());
  return s;
}

/// A one-element value as the type `like` (shape [] or [1]; same dtype).
Value asType(Value v, const Type &like) {
  if (!v.isTuple && like.isTensor() && v.tensor.shape() != like.shape())
    v.tensor = v.tensor.reshaped(like.shape());
  return v;
}

} // namespace

/// The values of the symbols of one run (see the file comment).
class SymbolValues {
public:
  Status bind(int64_t dim, int64_t value, std::string_view who) {
    if (!isSymbol(dim))
      return dim == value ? okStatus()
                          : Error::format("{}: expected {}, got {}", who, dim, value);
    const SymbolInfo &s = symbolInfo(dim);
    if (value < s.lo || (s.bounded() && value > s.hi))
      return Error::format("{}: {} = {} is outside its bounds {}..{}", who, dimStr(dim), value,
                           s.lo, s.bounded() ? std::to_string(s.hi) : std::string());
    auto [it, fresh] = values_.emplace(dim, value);
    if (!fresh && it->second != value)
      return Error::format("{}: {} = {}, but it was {} before", who, dimStr(dim), value,
                           it->second);
    return okStatus();
  }

  Expected<int64_t> valueOf(int64_t dim) {
    if (!isSymbol(dim))
      return dim;
    if (auto it = values_.find(dim); it != values_.end())
      return it->second;
    const std::vector<SymbolDefinition> defs = symbolDefinitions(dim);
    if (defs.empty())
      return Error::format("symbol {} has no value here (an input's dim, set by no input, or "
                           "a run-time dim read before the op that decides it)",
                           dimStr(dim));
    std::vector<int64_t> sources;
    for (int64_t s : defs[0].sources) {
      TS_ASSIGN_OR_RETURN(int64_t v, valueOf(s));
      sources.push_back(v);
    }
    const std::optional<int64_t> v = defs[0].eval(sources);
    if (!v)
      return Error::format("{} ({}) cannot be computed from its symbols' values", dimStr(dim),
                           defs[0].what);
    values_.emplace(dim, *v);
    return *v;
  }

  Expected<Type> resolve(const Type &t) {
    if (t.isTuple()) {
      std::vector<Type> fields;
      for (const Type &f : t.fields()) {
        TS_ASSIGN_OR_RETURN(Type r, resolve(f));
        fields.push_back(std::move(r));
      }
      return Type::tuple(std::move(fields));
    }
    if (!t.isTensor() || t.isStatic())
      return t;
    Shape shape = t.shape();
    for (int64_t &d : shape) {
      TS_ASSIGN_OR_RETURN(d, valueOf(d));
    }
    return Type::tensor(t.dtype(), std::move(shape));
  }

  /// `attrs` with the symbols in int and int-list attributes replaced.
  Expected<Attrs> resolve(const Attrs &attrs) {
    for (int64_t d : attrs.symbols())
      if (auto v = valueOf(d); !v.ok())
        return std::move(v).error();
    return attrs.withSymbols([&](int64_t d) { return values_.at(d); });
  }

private:
  std::unordered_map<int64_t, int64_t> values_;
};

namespace {

/// An op call's kernel on `inputs`, its type and attributes resolved; a
/// data-dependent op's run-time symbol is bound from its last result.
Expected<std::vector<Tensor>> runOp(const CallNode &c, std::span<const Tensor> inputs,
                                    SymbolValues &symbols) {
  const Op &op = *c.op();
  const bool symbolic = !c.type().isStatic() || c.attrs().holdsSymbols();
  if (!symbolic)
    return op.kernel(inputs, c.attrs(), c.type());
  if (op.dataDependent) { // its own count is what it computes
    TS_ASSIGN_OR_RETURN(std::vector<Tensor> out, op.kernel(inputs, c.attrs(), c.type()));
    TS_RETURN_IF_ERROR(symbols.bind(c.attrs().getInt("count"), out.back().getInt(0),
                                    "the count it found"));
    return out;
  }
  TS_ASSIGN_OR_RETURN(Type type, symbols.resolve(c.type()));
  TS_ASSIGN_OR_RETURN(Attrs attrs, symbols.resolve(c.attrs()));
  return op.kernel(inputs, attrs, type);
}

} // namespace

Expected<Value> evalFunctionIn(const Module &m, const FunctionNode &f, std::vector<Value> args,
                               SymbolValues &symbols);

namespace {

/// Position argument `v` of a sequence of n elements, in [-n, n - 1] (or
/// [-n, n] when `end` allows the place after the last), made non-negative.
Expected<size_t> positionIn(const Value &v, size_t n, bool end) {
  const int64_t p = v.tensor.getInt(0), count = int64_t(n);
  if (p < -count || p > (end ? count : count - 1))
    return Error::format("position {} is out of range for a sequence of {} element{}", p, n,
                         n == 1 ? "" : "s");
  return size_t(p < 0 ? p + count : p);
}

/// Binds the dims of `t` (an element taken out of a sequence) to the call's
/// result type: constants must match, symbols take their values.
Status bindResult(const CallNode &c, const Tensor &t, SymbolValues &symbols) {
  const Shape &want = c.type().shape();
  if (t.rank() != want.size())
    return Error::format("the element is {}, the result must have rank {}", t.type().str(),
                         want.size());
  for (size_t d = 0; d < want.size(); ++d)
    TS_RETURN_IF_ERROR(symbols.bind(want[d], t.shape()[d],
                                    fmt::format("dim {} of the element {}", d, t.type().str())));
  return okStatus();
}

/// concat_from_seq's kernel: every element has the first one's rank and
/// dims but (without new_axis) along the axis.
Expected<Tensor> concatElements(const std::vector<Value> &elems, int64_t axis, bool newAxis) {
  if (elems.empty())
    return Error("cannot concatenate an empty sequence");
  const Tensor &first = elems[0].tensor;
  const int64_t rank = int64_t(first.rank()) + (newAxis ? 1 : 0);
  if (axis < -rank || axis >= rank)
    return Error::format("axis {} is out of range for rank {}", axis, rank);
  const size_t a = size_t(axis < 0 ? axis + rank : axis);
  Shape shape = first.shape();
  if (newAxis)
    shape.insert(shape.begin() + ptrdiff_t(a), 0);
  shape[a] = 0; // the sum below
  for (size_t i = 0; i < elems.size(); ++i) {
    const Tensor &e = elems[i].tensor;
    bool fits = e.rank() == first.rank();
    for (size_t d = 0; fits && d < e.rank(); ++d)
      fits = e.shape()[d] == first.shape()[d] || (!newAxis && d == a);
    if (!fits)
      return Error::format("element {} is {}, element 0 {}: they differ {}", i, e.type().str(),
                           first.type().str(), newAxis ? "(stacked elements must agree)"
                                                       : "outside the axis");
    shape[a] += newAxis ? 1 : e.shape()[a];
  }
  Tensor out(first.dtype(), shape);
  int64_t outer = 1;
  for (size_t d = 0; d < a; ++d)
    outer *= first.shape()[d];
  const size_t elemSize = dtypeSize(first.dtype());
  uint8_t *dst = out.bytes();
  for (int64_t o = 0; o < outer; ++o)
    for (const Value &v : elems) {
      const size_t chunk = size_t(v.tensor.numel() / std::max<int64_t>(outer, 1)) * elemSize;
      if (outer == 0)
        break;
      std::memcpy(dst, v.tensor.bytes() + size_t(o) * chunk, chunk);
      dst += chunk;
    }
  return out;
}

/// The sequence ops (ir/ops/sequence.cpp) on the interpreter's values.
Expected<Value> evalSequence(const CallNode &c, std::vector<Value> vals, SymbolValues &symbols) {
  const std::string &op = c.op()->name;
  if (op == "seq_empty")
    return Value::ofSequence({});
  if (op == "seq_construct") {
    std::vector<Tensor> elems;
    for (auto &v : vals)
      elems.push_back(std::move(v.tensor));
    return Value::ofSequence(std::move(elems));
  }
  Value s = std::move(vals.at(0));
  const size_t n = s.fields.size();
  if (op == "seq_length")
    return Value::ofTensor(Tensor::fromInts(DType::I64, {}, std::vector<int64_t>{int64_t(n)}));
  if (op == "seq_insert") {
    size_t p = n;
    if (vals.size() > 2) {
      TS_ASSIGN_OR_RETURN(p, positionIn(vals[2], n, /*end=*/true));
    }
    s.fields.insert(s.fields.begin() + ptrdiff_t(p), std::move(vals[1]));
    return s;
  }
  if (op == "seq_erase") {
    if (n == 0)
      return Error("cannot erase from an empty sequence");
    size_t p = n - 1;
    if (vals.size() > 1) {
      TS_ASSIGN_OR_RETURN(p, positionIn(vals[1], n, /*end=*/false));
    }
    s.fields.erase(s.fields.begin() + ptrdiff_t(p));
    return s;
  }
  if (op == "seq_at") {
    TS_ASSIGN_OR_RETURN(size_t p, positionIn(vals[1], n, /*end=*/false));
    Value e = std::move(s.fields[p]);
    TS_RETURN_IF_ERROR(bindResult(c, e.tensor, symbols));
    return e;
  }
  if (op == "concat_from_seq") {
    TS_ASSIGN_OR_RETURN(Tensor t, concatElements(s.fields, c.attrs().getInt("axis"),
                                                 c.attrs().getBool("new_axis")));
    TS_RETURN_IF_ERROR(bindResult(c, t, symbols));
    return Value::ofTensor(std::move(t));
  }
  return Error::format("no interpreter for sequence op '{}'", op);
}

} // namespace

/// if and loop (ir/ops/control.cpp): `vals` are the non-function arguments.
Expected<Value> evalControl(const Module &m, const CallNode &c, std::vector<Value> vals,
                            SymbolValues &symbols) {
  auto fnArg = [&](size_t i) { return c.args()[i]->as<FunctionNode>(); };
  if (c.op()->name == "if") {
    const bool cond = vals.at(0).tensor.getDouble(0) != 0;
    vals.erase(vals.begin());
    auto out = evalFunctionIn(m, *fnArg(cond ? 1 : 2), std::move(vals), symbols);
    if (!out.ok())
      return std::move(out).withContext(cond ? "in the then branch" : "in the else branch")
          .error();
    // Dims the branches disagree on: their values follow the results.
    const std::vector<int64_t> joins = c.attrs().getInts("joins");
    for (size_t j = 0; j < joins.size(); ++j) {
      const Value &v = out->fields.at(out->fields.size() - joins.size() + j);
      TS_RETURN_IF_ERROR(symbols.bind(joins[j], v.tensor.getInt(0), "the branch's result"));
    }
    return out;
  }
  // loop(trip_count, cond, body, carried..., captured...)
  const FunctionNode &body = *fnArg(2);
  const int64_t trip = vals.at(0).tensor.getInt(0);
  const size_t n = size_t(c.attrs().getInt("carried"));
  Value cond = asType(vals.at(1), body.params()[1]->type());
  std::vector<Value> carried(vals.begin() + 2, vals.begin() + 2 + ptrdiff_t(n));
  const std::vector<Value> captured(vals.begin() + 2 + ptrdiff_t(n), vals.end());
  const size_t k = size_t(c.attrs().getInt("scans"));
  std::vector<std::vector<Tensor>> slices(k);
  int64_t iter = 0;
  for (; iter < trip && cond.tensor.getDouble(0) != 0; ++iter) {
    std::vector<Value> args;
    args.push_back(Value::ofTensor(Tensor::fromInts(DType::I64, {}, std::vector<int64_t>{iter})));
    args.push_back(cond);
    args.insert(args.end(), carried.begin(), carried.end());
    args.insert(args.end(), captured.begin(), captured.end());
    // Run-time symbols the body decides (a slice x[0:i+1]) take a value per
    // iteration: each one sees the symbols of the loop's scope afresh.
    SymbolValues local = symbols;
    auto out = evalFunctionIn(m, body, std::move(args), local);
    if (!out.ok())
      return std::move(out).withContext(fmt::format("in iteration {} of the body", iter)).error();
    cond = std::move(out->fields.at(0));
    for (size_t i = 0; i < n; ++i)
      carried[i] = std::move(out->fields.at(1 + i));
    for (size_t j = 0; j < k; ++j)
      slices[j].push_back(out->fields.at(1 + n + j).tensor);
  }
  if (k == 0)
    return Value::ofTuple(std::move(carried));
  // Scan outputs: the slices stacked on a new axis 0, then the count.
  for (size_t j = 0; j < k; ++j) {
    const Type &slice = body.type().result().fields()[1 + n + j];
    Shape shape{iter};
    shape.insert(shape.end(), slice.shape().begin(), slice.shape().end());
    Tensor stacked(slice.dtype(), shape);
    for (size_t i = 0; i < slices[j].size(); ++i) {
      const Tensor &part = slices[j][i];
      std::memcpy(stacked.bytes() + i * part.nbytes(), part.bytes(), part.nbytes());
    }
    carried.push_back(Value::ofTensor(std::move(stacked)));
  }
  carried.push_back(Value::ofTensor(Tensor::fromInts(DType::I64, {1}, std::vector<int64_t>{iter})));
  TS_RETURN_IF_ERROR(symbols.bind(c.attrs().getInt("count"), iter, "the loop's iterations"));
  return Value::ofTuple(std::move(carried));
}

Expected<Value> evalFunction(const Module &m, const FunctionNode &f, std::vector<Value> args) {
  SymbolValues symbols;
  return evalFunctionIn(m, f, std::move(args), symbols);
}

Expected<Value> evalFunctionIn(const Module &m, const FunctionNode &f, std::vector<Value> args,
                               SymbolValues &symbols) {
  if (args.size() != f.params().size())
    return Error::format("function takes {} arguments, got {}", f.params().size(), args.size());
  std::unordered_map<const ExprNode *, Value> values;
  for (size_t i = 0; i < args.size(); ++i)
    values[f.params()[i].get()] = std::move(args[i]);

  // Nested functions are leaves here: they run when called.
  auto order = postOrder(f.body(), /*intoFunctions=*/false);
  std::unordered_map<const ExprNode *, int> remaining;
  for (const ExprNode *n : order)
    for (const auto &op : n->operands())
      if (n->kind() != ExprKind::Function && op->kind() != ExprKind::Function)
        ++remaining[op.get()];

  auto take = [&](const ExprNode *operand) -> Value {
    auto it = values.find(operand);
    if (--remaining[operand] == 0 && operand != f.body().get()) {
      Value v = std::move(it->second);
      values.erase(it);
      return v;
    }
    return it->second;
  };

  for (const ExprNode *n : order) {
    switch (n->kind()) {
    case ExprKind::Var:
      if (!values.count(n))
        return Error::format("variable '%{}' is not a parameter of the function", n->name());
      break;
    case ExprKind::Function:
      break; // evaluated by the calls that use it
    case ExprKind::Constant:
      values[n] = Value::ofTensor(n->as<ConstantNode>()->data());
      break;
    case ExprKind::Tuple: {
      std::vector<Value> fields;
      for (const auto &op : n->operands())
        fields.push_back(take(op.get()));
      values[n] = Value::ofTuple(std::move(fields));
      break;
    }
    case ExprKind::TupleGetItem: {
      const auto *g = n->as<TupleGetItemNode>();
      Value t = take(g->tuple().get());
      values[n] = t.fields.at(size_t(g->index()));
      break;
    }
    case ExprKind::Call: {
      const auto *c = n->as<CallNode>();
      std::vector<Value> args;
      for (const auto &a : c->args())
        if (a->kind() != ExprKind::Function) // the functions of if and loop
          args.push_back(take(a.get()));
      if (c->op() && c->op()->sequence) {
        auto out = evalSequence(*c, std::move(args), symbols);
        if (!out.ok())
          return std::move(out).withContext("while running " + describe(*n)).error();
        values[n] = std::move(out).value();
      } else if (c->op() && c->op()->controlFlow) {
        auto out = evalControl(m, *c, std::move(args), symbols);
        if (!out.ok())
          return std::move(out).withContext("while running " + describe(*n)).error();
        values[n] = std::move(out).value();
      } else if (c->calleeKind() == CallNode::CalleeKind::Op) {
        std::vector<Tensor> inputs;
        for (auto &a : args) {
          if (a.isTuple || a.isSequence)
            return Error::format("{}: argument is a {}", describe(*n),
                                 a.isTuple ? "tuple" : "sequence");
          inputs.push_back(std::move(a.tensor));
        }
        auto out = runOp(*c, inputs, symbols);
        if (!out.ok())
          return std::move(out).withContext("while running " + describe(*n)).error();
        values[n] = fromTensors(c->type(), std::move(out).value());
      } else if (c->calleeKind() == CallNode::CalleeKind::Global) {
        Function callee = m.find(c->global());
        if (!callee)
          return Error::format("call of unknown global '@{}'", c->global());
        auto out = evalFunctionIn(m, *callee, std::move(args), symbols);
        if (!out.ok())
          return std::move(out).withContext("in @" + c->global()).error();
        values[n] = std::move(out).value();
      } else {
        auto out = evalFunctionIn(m, *c->localFn(), std::move(args), symbols);
        if (!out.ok())
          return std::move(out).withContext("in " + describe(*n)).error();
        values[n] = std::move(out).value();
      }
      break;
    }
    }
  }
  return values.at(f.body().get());
}

Expected<Value> run(const Module &m, const std::vector<Tensor> &inputs, const std::string &entry) {
  std::vector<Value> values;
  for (const Tensor &t : inputs)
    values.push_back(Value::ofTensor(t));
  return runValues(m, std::move(values), entry);
}

Expected<Value> runValues(const Module &m, std::vector<Value> inputs, const std::string &entry) {
  Function f = m.find(entry);
  if (!f)
    return Error::format("module '{}' has no function '@{}'", m.name(), entry);
  TS_RETURN_IF_ERROR(m.checkNoRecursion()); // it would recurse until the stack overflows
  if (inputs.size() != f->params().size())
    return Error::format("@{} takes {} input{}, got {}", entry, f->params().size(),
                         f->params().size() == 1 ? "" : "s", inputs.size());
  SymbolValues symbols;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto &p = f->params()[i];
    const Type &want = p->type();
    if (want.isSequence() || inputs[i].isSequence) {
      bool fits = want.isSequence() && inputs[i].isSequence;
      for (size_t k = 0; fits && k < inputs[i].fields.size(); ++k) {
        const Tensor &e = inputs[i].fields[k].tensor;
        fits = e.dtype() == want.dtype() &&
               (want.elementRank() < 0 || int64_t(e.rank()) == want.elementRank());
      }
      if (!fits)
        return Error::format("input '{}' (#{}) of @{} expects {}, got {}", p->name(), i, entry,
                             want.str(), inputs[i].isSequence ? "a sequence that differs"
                                                              : "a tensor");
      continue;
    }
    const Type got = inputs[i].tensor.type();
    bool fits = want.isTensor() && !inputs[i].isTuple && got.dtype() == want.dtype() &&
                got.rank() == want.rank();
    for (size_t d = 0; fits && d < want.rank(); ++d)
      fits = isSymbol(want.shape()[d]) ? !symbolInfo(want.shape()[d]).derived()
                                       : want.shape()[d] == got.shape()[d];
    if (!fits)
      return Error::format("input '{}' (#{}) of @{} expects {}, got {}", p->name(), i, entry,
                           want.str(), got.str());
    for (size_t d = 0; d < want.rank(); ++d)
      TS_RETURN_IF_ERROR(symbols.bind(want.shape()[d], got.shape()[d],
                                      fmt::format("input '{}' (#{}) dim {}", p->name(), i, d)));
  }
  return evalFunctionIn(m, *f, std::move(inputs), symbols);
}

Expected<Value> runDL(const Module &m, const std::vector<DLTensor> &inputs,
                      const std::string &entry) {
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!fromDLDataType(inputs[i].dtype))
      return Error::format("input #{} has an unsupported DLPack dtype (code {}, bits {}, lanes {})",
                           i, int(inputs[i].dtype.code), int(inputs[i].dtype.bits),
                           int(inputs[i].dtype.lanes));
    if (inputs[i].device.device_type != kDLCPU)
      return Error::format("input #{} is not on the CPU", i);
    tensors.push_back(Tensor::copyOf(inputs[i]));
  }
  return run(m, tensors, entry);
}

} // namespace tessera::interp
