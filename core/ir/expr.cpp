//===- ir/expr.cpp - Expression nodes and builders -----------------------===//
#include "ir/expr.h"

#include "support/log.h"

#include <cstdlib>

namespace tessera::ir {

//===----------------------------------------------------------------------===//
// Iterative destruction. Releasing the last reference to the head of a
// 100,000-node chain must not recurse 100,000 times. The outermost destructor
// on a thread drains a worklist; nested destructors only hand their operands
// to it.
//===----------------------------------------------------------------------===//

namespace {
thread_local std::vector<Expr> *pendingRelease = nullptr;
}

ExprNode::ExprNode(ExprKind kind, Type type, std::vector<Expr> operands, std::string name,
                   Span span)
    : kind_(kind), numOperands_(uint32_t(operands.size())), type_(std::move(type)),
      name_(std::move(name)), span_(span) {
  Expr *to = inline_;
  if (numOperands_ > kInlineOperands) {
    heap_ = static_cast<Expr *>(::operator new(sizeof(Expr) * numOperands_));
    to = heap_;
  }
  for (uint32_t i = 0; i < numOperands_; ++i)
    new (to + i) Expr(std::move(operands[i]));
}

ExprNode::~ExprNode() {
  Expr *ops = operandData();
  std::vector<Expr> work;
  std::vector<Expr> *sink = pendingRelease ? pendingRelease : &work;
  for (uint32_t i = 0; i < numOperands_; ++i) {
    if (ops[i])
      sink->push_back(std::move(ops[i]));
    ops[i].~Expr();
  }
  if (numOperands_ > kInlineOperands)
    ::operator delete(heap_);
  if (sink != &work)
    return;
  pendingRelease = &work;
  while (!work.empty()) {
    Expr e = std::move(work.back());
    work.pop_back();
    e.reset(); // may run a nested ~ExprNode, which appends to `work`
  }
  pendingRelease = nullptr;
}

namespace {
Type functionType(const std::vector<Var> &params, const Expr &body) {
  std::vector<Type> ps;
  ps.reserve(params.size());
  for (const auto &p : params)
    ps.push_back(p->type());
  return Type::func(std::move(ps), body->type());
}
} // namespace

// `body` is copied, not moved, into the operand list: the type is computed
// from it in the same argument list, and argument evaluation order is
// unspecified.
FunctionNode::FunctionNode(std::vector<Var> params, Expr body, Attrs attrs, std::string name,
                           Span span)
    : ExprNode(kKind, functionType(params, body), {body}, std::move(name), span),
      params_(std::move(params)), attrs_(std::move(attrs)) {}

const FunctionNode *CallNode::localFn() const {
  return calleeKind_ == CalleeKind::Local ? operands()[0]->as<FunctionNode>() : nullptr;
}

std::string CallNode::calleeName() const {
  switch (calleeKind_) {
  case CalleeKind::Op: return op_->name;
  case CalleeKind::Global: return "@" + global_;
  case CalleeKind::Local: return "fn";
  }
  return "?";
}

//===----------------------------------------------------------------------===//
// Builders
//===----------------------------------------------------------------------===//

Var makeVar(std::string name, Type type, Span span) {
  return std::make_shared<VarNode>(std::move(name), std::move(type), span);
}

Expr makeConstant(Tensor data, std::string name, Span span) {
  return std::make_shared<ConstantNode>(std::move(data), std::move(name), span);
}

namespace {
std::vector<Type> typesOf(std::span<const Expr> args) {
  std::vector<Type> types;
  types.reserve(args.size());
  for (const auto &a : args)
    types.push_back(a->type());
  return types;
}

/// Checks argument types against a function type's parameters.
Status checkCallArgs(const std::string &callee, const Type &fnType, std::span<const Expr> args) {
  if (!fnType.isFunc())
    return Error::format("{} is not a function (type {})", callee, fnType.str());
  const auto &params = fnType.fields();
  if (params.size() != args.size())
    return Error::format("{} takes {} argument{}, got {}", callee, params.size(),
                         params.size() == 1 ? "" : "s", args.size());
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i]->type() != params[i])
      return Error::format("argument {} of {} has type {}, expected {}", i, callee,
                           args[i]->type().str(), params[i].str());
  return okStatus();
}
} // namespace

Expected<Expr> makeCall(const Op *op, std::vector<Expr> args, Attrs attrs, std::string name,
                        Span span) {
  TS_ASSIGN_OR_RETURN(Attrs normalized, op->normalizeAttrs(attrs));
  auto types = typesOf(args);
  TS_ASSIGN_OR_RETURN(Type type, op->inferType(types, normalized));
  // No op may make a type that sizes cannot be computed on (ir/type.h).
  if (Status s = checkShapes(type); !s.ok())
    return Error::format("{}: result type {}: {}", op->name, type.str(), s.error().message());
  return Expr(std::make_shared<CallNode>(CallNode::CalleeKind::Op, op, std::string(),
                                         std::move(normalized), std::move(type), std::move(args),
                                         std::move(name), span));
}

Expected<Expr> makeCall(std::string_view opName, std::vector<Expr> args, Attrs attrs,
                        std::string name, Span span) {
  const Op *op = OpRegistry::global().find(opName);
  if (!op)
    return Error::format("unknown op '{}'", opName);
  return makeCall(op, std::move(args), std::move(attrs), std::move(name), span);
}

Expected<Expr> makeGlobalCall(std::string global, const Type &fnType, std::vector<Expr> args,
                              std::string name, Span span) {
  TS_RETURN_IF_ERROR(checkCallArgs("@" + global, fnType, args));
  return Expr(std::make_shared<CallNode>(CallNode::CalleeKind::Global, nullptr, std::move(global),
                                         Attrs(), fnType.result(), std::move(args),
                                         std::move(name), span));
}

Expected<Expr> makeLocalCall(Expr fn, std::vector<Expr> args, std::string name, Span span) {
  if (!fn->as<FunctionNode>())
    return Error::format("callee is not a function (type {})", fn->type().str());
  TS_RETURN_IF_ERROR(checkCallArgs("local function", fn->type(), args));
  Type result = fn->type().result();
  args.insert(args.begin(), std::move(fn));
  return Expr(std::make_shared<CallNode>(CallNode::CalleeKind::Local, nullptr, std::string(),
                                         Attrs(), std::move(result), std::move(args),
                                         std::move(name), span));
}

Expr makeTuple(std::vector<Expr> fields, std::string name, Span span) {
  Type type = Type::tuple(typesOf(fields));
  return std::make_shared<TupleNode>(std::move(type), std::move(fields), std::move(name), span);
}

Expected<Expr> makeTupleGetItem(Expr tuple, int index, std::string name, Span span) {
  const Type &t = tuple->type();
  if (!t.isTuple())
    return Error::format("cannot take field {} of non-tuple type {}", index, t.str());
  if (index < 0 || size_t(index) >= t.fields().size())
    return Error::format("tuple field {} is out of range for {} ({} field{})", index, t.str(),
                         t.fields().size(), t.fields().size() == 1 ? "" : "s");
  Type type = t.fields()[size_t(index)];
  return Expr(std::make_shared<TupleGetItemNode>(std::move(type), std::move(tuple), index,
                                                 std::move(name), span));
}

Function makeFunction(std::vector<Var> params, Expr body, Attrs attrs, std::string name,
                      Span span) {
  return std::make_shared<FunctionNode>(std::move(params), std::move(body), std::move(attrs),
                                        std::move(name), span);
}

Expected<Expr> withOperands(const Expr &node, std::vector<Expr> operands) {
  auto current = node->operands();
  if (operands.size() == current.size() &&
      std::equal(operands.begin(), operands.end(), current.begin()))
    return node;
  switch (node->kind()) {
  case ExprKind::Var:
  case ExprKind::Constant:
    return node;
  case ExprKind::Call: {
    const auto *c = node->as<CallNode>();
    switch (c->calleeKind()) {
    case CallNode::CalleeKind::Op: {
      // With operands of the same types, the attributes are already
      // normalised and inference would give the same type again (it reads
      // only types and attributes): keep both.
      bool sameTypes = operands.size() == current.size();
      for (size_t i = 0; sameTypes && i < operands.size(); ++i)
        sameTypes = operands[i]->type() == current[i]->type();
      if (!sameTypes)
        return makeCall(c->op(), std::move(operands), c->attrs(), c->name(), c->span());
      return Expr(std::make_shared<CallNode>(CallNode::CalleeKind::Op, c->op(), std::string(),
                                             c->attrs(), c->type(), std::move(operands),
                                             c->name(), c->span()));
    }
    case CallNode::CalleeKind::Global: {
      std::vector<Type> params = typesOf(operands);
      // Argument types may change when a pass rewrites them; the callee's
      // type is checked against the module by the verifier.
      return Expr(std::make_shared<CallNode>(CallNode::CalleeKind::Global, nullptr, c->global(),
                                             Attrs(), c->type(), std::move(operands), c->name(),
                                             c->span()));
    }
    case CallNode::CalleeKind::Local: {
      Expr fn = operands.front();
      operands.erase(operands.begin());
      return makeLocalCall(std::move(fn), std::move(operands), c->name(), c->span());
    }
    }
    return node;
  }
  case ExprKind::Tuple: {
    bool sameTypes = operands.size() == current.size();
    for (size_t i = 0; sameTypes && i < operands.size(); ++i)
      sameTypes = operands[i]->type() == current[i]->type();
    if (!sameTypes)
      return makeTuple(std::move(operands), node->name(), node->span());
    return Expr(std::make_shared<TupleNode>(node->type(), std::move(operands), node->name(),
                                            node->span()));
  }
  case ExprKind::TupleGetItem:
    return makeTupleGetItem(std::move(operands[0]), node->as<TupleGetItemNode>()->index(),
                            node->name(), node->span());
  case ExprKind::Function: {
    const auto *f = node->as<FunctionNode>();
    return Expr(makeFunction(f->params(), std::move(operands[0]), f->attrs(), f->name(),
                             f->span()));
  }
  }
  return node;
}

Expr expectOk(Expected<Expr> e) {
  if (!e.ok()) {
    TS_LOG_ERROR("internal error: {}", e.error().str());
    std::abort();
  }
  return std::move(e).value();
}

} // namespace tessera::ir
