//===- interp/interpreter.cpp - Reference interpreter --------------------===//
//
// Evaluates a function body in post-order with the ops' reference kernels.
// Values are dropped after their last use, so peak memory follows the live
// set, not the graph. Calls of functions (global or local) evaluate the
// callee's body the same way; that recursion follows the call nesting of the
// program, never the depth of a graph.
//
//===----------------------------------------------------------------------===//
#include "interp/interpreter.h"

#include "ir/visit.h"

#include <unordered_map>

namespace tessera::interp {

using namespace ir;

std::vector<Tensor> Value::flatten() const {
  if (!isTuple)
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

/// if and loop (ir/ops/control.cpp): `vals` are the non-function arguments.
Expected<Value> evalControl(const Module &m, const CallNode &c, std::vector<Value> vals) {
  auto fnArg = [&](size_t i) { return c.args()[i]->as<FunctionNode>(); };
  if (c.op()->name == "if") {
    const bool cond = vals.at(0).tensor.getDouble(0) != 0;
    vals.erase(vals.begin());
    auto out = evalFunction(m, *fnArg(cond ? 1 : 2), std::move(vals));
    if (!out.ok())
      return std::move(out).withContext(cond ? "in the then branch" : "in the else branch")
          .error();
    return out;
  }
  // loop(trip_count, cond, body, carried..., captured...)
  const FunctionNode &body = *fnArg(2);
  const int64_t trip = vals.at(0).tensor.getInt(0);
  const size_t n = size_t(c.attrs().getInt("carried"));
  Value cond = asType(vals.at(1), body.params()[1]->type());
  std::vector<Value> carried(vals.begin() + 2, vals.begin() + 2 + ptrdiff_t(n));
  const std::vector<Value> captured(vals.begin() + 2 + ptrdiff_t(n), vals.end());
  for (int64_t iter = 0; iter < trip && cond.tensor.getDouble(0) != 0; ++iter) {
    std::vector<Value> args;
    args.push_back(Value::ofTensor(Tensor::fromInts(DType::I64, {}, std::vector<int64_t>{iter})));
    args.push_back(cond);
    args.insert(args.end(), carried.begin(), carried.end());
    args.insert(args.end(), captured.begin(), captured.end());
    auto out = evalFunction(m, body, std::move(args));
    if (!out.ok())
      return std::move(out).withContext(fmt::format("in iteration {} of the body", iter)).error();
    cond = std::move(out->fields.at(0));
    for (size_t i = 0; i < n; ++i)
      carried[i] = std::move(out->fields.at(1 + i));
  }
  return Value::ofTuple(std::move(carried));
}

Expected<Value> evalFunction(const Module &m, const FunctionNode &f, std::vector<Value> args) {
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
      if (c->op() && c->op()->controlFlow) {
        auto out = evalControl(m, *c, std::move(args));
        if (!out.ok())
          return std::move(out).withContext("while running " + describe(*n)).error();
        values[n] = std::move(out).value();
      } else if (c->calleeKind() == CallNode::CalleeKind::Op) {
        std::vector<Tensor> inputs;
        for (auto &a : args) {
          if (a.isTuple)
            return Error::format("{}: argument is a tuple", describe(*n));
          inputs.push_back(std::move(a.tensor));
        }
        auto out = c->op()->kernel(inputs, c->attrs(), c->type());
        if (!out.ok())
          return std::move(out).withContext("while running " + describe(*n)).error();
        values[n] = fromTensors(c->type(), std::move(out).value());
      } else if (c->calleeKind() == CallNode::CalleeKind::Global) {
        Function callee = m.find(c->global());
        if (!callee)
          return Error::format("call of unknown global '@{}'", c->global());
        auto out = evalFunction(m, *callee, std::move(args));
        if (!out.ok())
          return std::move(out).withContext("in @" + c->global()).error();
        values[n] = std::move(out).value();
      } else {
        auto out = evalFunction(m, *c->localFn(), std::move(args));
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
  Function f = m.find(entry);
  if (!f)
    return Error::format("module '{}' has no function '@{}'", m.name(), entry);
  TS_RETURN_IF_ERROR(m.checkNoRecursion()); // it would recurse until the stack overflows
  if (inputs.size() != f->params().size())
    return Error::format("@{} takes {} input{}, got {}", entry, f->params().size(),
                         f->params().size() == 1 ? "" : "s", inputs.size());
  std::vector<Value> args;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto &p = f->params()[i];
    if (!p->type().isStatic())
      return Error::format("input '{}' (#{}) of @{} has symbolic dims ({}): the reference "
                           "interpreter runs fixed shapes (docs/design/0013-dynamic-shapes.md)",
                           p->name(), i, entry, p->type().str());
    if (inputs[i].type() != p->type())
      return Error::format("input '{}' (#{}) of @{} expects {}, got {}", p->name(), i, entry,
                           p->type().str(), inputs[i].type().str());
    args.push_back(Value::ofTensor(inputs[i]));
  }
  return evalFunction(m, *f, std::move(args));
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
