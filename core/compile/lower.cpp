//===- compile/lower.cpp - @main to an executor plan ----------------------===//
//
// The one post-order walk of @main that builds the plan (lower.h,
// lower_internal.h): buffers, op calls, fused trees, region calls and the
// outputs; the run-time control flow is in lower_control.cpp, region
// compilation through the plugins in compile_regions.cpp.
//
//===----------------------------------------------------------------------===//
#include "compile/lower_internal.h"

#include "compile/fuse.h"
#include "ir/symbol.h"
#include "ir/visit.h"

#include <fmt/ranges.h>

namespace tessera::compile {

namespace detail {

void flattenInto(const Value &v, std::vector<uint32_t> &out) {
  // Tuples nest shallowly (a few levels at most); an explicit stack anyway.
  std::vector<const Value *> stack{&v};
  while (!stack.empty()) {
    const Value *cur = stack.back();
    stack.pop_back();
    if (cur->buffer >= 0) {
      out.push_back(uint32_t(cur->buffer));
      continue;
    }
    for (auto it = cur->fields.rbegin(); it != cur->fields.rend(); ++it)
      stack.push_back(&*it);
  }
}

std::string describeNode(const ExprNode &n) {
  if (const auto *c = n.as<CallNode>())
    return n.name().empty() ? c->calleeName() : fmt::format("{} '{}'", c->calleeName(), n.name());
  return n.name().empty() ? std::string("a value") : fmt::format("'{}'", n.name());
}

Lowerer::Lowerer(const Module &m, const std::vector<CompiledRegion> &regions)
    : module_(m), regions_(regions) {
  for (size_t i = 0; i < regions.size(); ++i)
    regionIndex_[regions[i].global] = i;
}

Expected<LoweredModel> Lowerer::run() {
  Function main = module_.find("main");
  if (!main)
    return Error("the module has no function '@main'");
  for (const CompiledRegion &r : regions_)
    out_.plan.modules.push_back({r.typeKey, r.plugin, r.pluginVersion, 0});
  for (size_t i = 0; i < out_.plan.modules.size(); ++i)
    out_.plan.modules[i].section = uint32_t(i);

  for (const Var &p : main->params()) {
    if (!p->type().isTensor() && !p->type().isSequence())
      return Error::format("input '{}' has type {}: model inputs must be tensors or sequences",
                           p->name(), p->type().str());
    if (int64_t d = 0; hasDerivedDim(p->type(), &d))
      return Error::format("input '{}' has type {}: {} is not a symbol an input can give",
                           p->name(), p->type().str(), dimStr(d));
    uint32_t id = addBuffer(runtime::BufferKind::Input, p->type(), p->name());
    out_.plan.buffers[id].index = uint32_t(out_.plan.inputs.size());
    out_.plan.inputs.push_back(id);
    values_[p.get()] = Value{int64_t(id), {}};
  }

  std::vector<const ExprNode *> order = postOrder(main->body(), /*intoFunctions=*/false);
  // The weights are appended in one buffer: reserve it once (an upper
  // bound: shared constants count twice), rather than let 346 MB of ViT
  // grow by doubling.
  size_t weightBytes = 0;
  for (const ExprNode *n : order)
    if (const auto *c = n->as<ConstantNode>())
      weightBytes += c->data().nbytes() + runtime::kBufferAlignment;
  out_.weights.reserve(weightBytes);
  findPackedOnly(order, *main);
  for (const ExprNode *n : order)
    TS_RETURN_IF_ERROR(visit(*n));

  TS_RETURN_IF_ERROR(bindOutputs(*main));
  out_.plan.weightsBytes = out_.weights.size();
  TS_RETURN_IF_ERROR(runtime::planMemory(out_.plan));
  TS_RETURN_IF_ERROR(runtime::validatePlan(out_.plan));
  return std::move(out_);
}

Status Lowerer::addDerivedDims(const Type &type, const ExprNode &n) {
  return symbols_.addDerivedDims(type, describeNode(n));
}

void Lowerer::findPackedOnly(const std::vector<const ExprNode *> &order, const FunctionNode &main) {
  std::unordered_map<const ExprNode *, size_t> uses, packedUses;
  ++uses[main.body().get()];
  for (const ExprNode *n : order) {
    for (const Expr &o : n->operands())
      ++uses[o.get()];
    const auto *call = n->as<CallNode>();
    if (!call || call->calleeKind() != CallNode::CalleeKind::Op || call->op()->controlFlow ||
        call->op()->sequence)
      continue;
    std::optional<codegen::KernelCall> lowered;
    if (isSymbolic(*call)) { // lowered by its fit
      if (auto k = fitSymbolicKernel(*call); k.ok()) {
        lowered = k->call;
        fitted_.emplace(call, std::move(*k));
      }
    } else if (auto l = codegen::lowerHostOp(*call); l.ok()) {
      lowered = std::move(*l);
    }
    if (!lowered)
      continue; // reported when the call is lowered
    for (const codegen::PackedInput &p : lowered->packed)
      if (call->args()[p.input]->as<ConstantNode>())
        ++packedUses[call->args()[p.input].get()];
    if (!isSymbolic(*call))
      lowered_.emplace(call, std::move(*lowered));
  }
  for (const auto &[node, n] : packedUses)
    if (uses[node] == n)
      packedOnly_.insert(node);
}

uint32_t Lowerer::addBuffer(runtime::BufferKind kind, const Type &type, std::string name) {
  runtime::Buffer b;
  b.kind = kind;
  b.info.name = std::move(name);
  b.info.dtype = toDLDataType(type.dtype());
  b.info.sequence = type.isSequence(); // the session holds its list
  b.info.elementRank = type.isSequence() ? type.elementRank() : -1;
  b.info.shape = type.shape();
  for (int64_t &d : b.info.shape) // derived ones were added by newValue
    if (isSymbol(d))
      d = runtime::symbolDim(planSymbol(d));
  out_.plan.buffers.push_back(std::move(b));
  return uint32_t(out_.plan.buffers.size() - 1);
}

uint32_t Lowerer::addConstant(const Tensor &t, const std::string &name) {
  auto key = std::make_pair(static_cast<const void *>(t.bytes()), t.type().str());
  if (t.nbytes() > 0)
    if (auto it = constants_.find(key); it != constants_.end())
      return it->second;
  std::string &w = out_.weights;
  w.resize((w.size() + runtime::kBufferAlignment - 1) / runtime::kBufferAlignment *
               runtime::kBufferAlignment,
           '\0');
  uint32_t id = addBuffer(runtime::BufferKind::Constant, t.type(), name);
  out_.plan.buffers[id].offset = w.size();
  w.append(reinterpret_cast<const char *>(t.bytes()), t.nbytes());
  if (t.nbytes() > 0)
    constants_[key] = id;
  return id;
}

Expected<Value> Lowerer::newValue(const Type &type, const ExprNode &n) {
  TS_RETURN_IF_ERROR(addDerivedDims(type, n));
  if (type.isTensor() || type.isSequence())
    return Value{int64_t(addBuffer(runtime::BufferKind::Activation, type)), {}};
  if (!type.isTuple())
    return Error::format("{}: a value of type {} cannot be stored in a buffer", describeNode(n),
                         type.str());
  Value v;
  for (const Type &field : type.fields()) {
    TS_ASSIGN_OR_RETURN(Value f, newValue(field, n));
    v.fields.push_back(std::move(f));
  }
  return v;
}

Status Lowerer::visit(const ExprNode &n) {
  switch (n.kind()) {
  case ExprKind::Var:
    if (!values_.count(&n))
      return Error::format("'%{}' is not a parameter of @main", n.name());
    return okStatus();
  case ExprKind::Constant:
    if (packedOnly_.count(&n))
      return okStatus();
    values_[&n] = Value{int64_t(addConstant(n.as<ConstantNode>()->data(), n.name())), {}};
    return okStatus();
  case ExprKind::Tuple: {
    Value v;
    for (const Expr &f : n.operands()) {
      TS_ASSIGN_OR_RETURN(const Value *field, valueOf(*f));
      v.fields.push_back(*field);
    }
    values_[&n] = std::move(v);
    return okStatus();
  }
  case ExprKind::TupleGetItem: {
    const auto *g = n.as<TupleGetItemNode>();
    TS_ASSIGN_OR_RETURN(const Value *tuple, valueOf(*g->tuple()));
    const Value &t = *tuple;
    if (g->index() < 0 || size_t(g->index()) >= t.fields.size())
      return Error::format("{}: tuple index {} out of range", describeNode(n), g->index());
    values_[&n] = t.fields[size_t(g->index())];
    return okStatus();
  }
  case ExprKind::Function:
    // The callee of a local call (handled there); any other use of a
    // function value is refused by valueOf.
    return okStatus();
  case ExprKind::Call: break;
  }
  const auto *call = n.as<CallNode>();
  switch (call->calleeKind()) {
  case CallNode::CalleeKind::Op: return lowerOpCall(*call);
  case CallNode::CalleeKind::Global: return lowerRegionCall(*call);
  case CallNode::CalleeKind::Local:
    if (isHostFusedCall(*call))
      return lowerFusedCall(*call);
    return Error::format("{}: a call of a local function in @main cannot be compiled (only op "
                         "calls and region calls can)",
                         describeNode(n));
  }
  return okStatus();
}

Expected<const Value *> Lowerer::valueOf(const ExprNode &n) const {
  auto it = values_.find(&n);
  if (it == values_.end())
    return Error::format("{}: a function value in @main cannot be compiled", describeNode(n));
  return &it->second;
}

Expected<std::vector<uint32_t>> Lowerer::argBuffers(const CallNode &call,
                                                    std::vector<codegen::PackedInput> packed) {
  std::vector<uint32_t> args;
  for (size_t i = 0; i < call.args().size(); ++i) {
    const Expr &a = call.args()[i];
    auto p = std::find_if(packed.begin(), packed.end(),
                          [&](const codegen::PackedInput &q) { return q.input == i; });
    if (p != packed.end()) {
      keptAlive_.push_back(std::move(p->data)); // constants_ keys on its bytes
      args.push_back(addConstant(keptAlive_.back(), a->name() + ".packed"));
      continue;
    }
    TS_ASSIGN_OR_RETURN(const Value *v, valueOf(*a));
    flattenInto(*v, args);
  }
  return args;
}

Status Lowerer::lowerOpCall(const CallNode &call) {
  if (call.op()->sequence)
    return lowerSequenceCall(call);
  if (call.op()->controlFlow && call.op()->name == "loop")
    return lowerLoop(call);
  if (call.op()->controlFlow) { // if; dims its branches disagree on follow the results
    TS_RETURN_IF_ERROR(lowerIf(call));
    const std::vector<int64_t> joins = call.attrs().getInts("joins");
    for (size_t j = 0; j < joins.size(); ++j)
      setSymbol(joins[j], values_[&call].fields[values_[&call].fields.size() - joins.size() + j],
                describeNode(call) + ": a dim of its result");
    return okStatus();
  }
  TS_RETURN_IF_ERROR(addDerivedDims(call.type(), call));
  TS_RETURN_IF_ERROR(symbols_.addDerivedAttrs(call.attrs(), describeNode(call)));
  codegen::HostStepSpec spec;
  TS_ASSIGN_OR_RETURN(spec.types, codegen::hostOpTypes(call));
  std::optional<codegen::SymbolicInt> scratch; // its size over plan symbols, when it grows
  if (isSymbolic(call)) {
    // Fitted already by findPackedOnly: taken once (a node lowered again, a
    // constant-free node shared by a function and its caller, fits again).
    auto found = fitted_.find(&call);
    Expected<SymbolicKernel> fit =
        found != fitted_.end() ? Expected<SymbolicKernel>(std::move(found->second))
                               : fitSymbolicKernel(call);
    if (found != fitted_.end())
      fitted_.erase(found);
    TS_ASSIGN_OR_RETURN(SymbolicKernel k, std::move(fit));
    spec.call = std::move(k.call);
    for (int64_t d : k.symbols)
      spec.symbols.emplace_back(d, planSymbol(d));
    // The fit numbers symbols by their position in k.symbols; the step
    // reads them by their plan index.
    auto toPlan = [&](codegen::SymbolicInt &v) {
      for (auto &term : v.terms)
        for (uint32_t &j : term.symbols)
          j = spec.symbols[j].second;
    };
    for (codegen::SymbolicInt &v : k.ia) {
      toPlan(v);
      spec.ia.push_back(std::move(v));
    }
    if (k.scratch)
      toPlan(*(scratch = std::move(k.scratch)));
  } else if (auto it = lowered_.find(&call); it != lowered_.end()) {
    spec.call = std::move(it->second); // by findPackedOnly
    lowered_.erase(it);
  } else {
    TS_ASSIGN_OR_RETURN(spec.call, codegen::lowerHostOp(call));
  }
  std::string label =
      call.name().empty() ? call.op()->name : fmt::format("{} '{}'", call.op()->name, call.name());
  if (call.op()->findAttr("message")) // check: what a failure means
    label += ": " + call.attrs().getString("message");
  TS_RETURN_IF_ERROR(addHostStep(call, std::move(spec), label, std::move(scratch)));
  if (!call.op()->dataDependent)
    return okStatus();
  // Its last result holds the count the data decided (ir/op.h).
  if (const int64_t count = call.attrs().getInt("count"); isSymbol(count))
    setSymbol(count, values_[&call].fields.back(), label + ": its count");
  return okStatus();
}

Status Lowerer::lowerFusedCall(const CallNode &call) {
  TS_RETURN_IF_ERROR(addDerivedDims(call.type(), call));
  codegen::HostStepSpec spec;
  spec.fused = std::static_pointer_cast<const FunctionNode>(call.localFnExpr());
  for (const Expr &a : call.args())
    spec.types.inputs.push_back(a->type());
  spec.types.outputs.push_back(call.type());
  if (!call.type().isStatic() && !rowsFit(call.type(), spec.types.inputs)) {
    for (const auto *list : {&spec.types.inputs, &spec.types.outputs}) // a symbolic loop nest
      for (const Type &t : *list)
        for (int64_t d : t.shape())
          if (isSymbol(d))
            spec.symbols.emplace_back(d, planSymbol(d));
  } else if (!call.type().isStatic()) { // rows of a static shape (compile/fuse.h)
    const int64_t n = call.type().shape()[0];
    TS_ASSIGN_OR_RETURN(spec.fused, oneRow(*call.localFn(), n));
    spec.rows = planSymbol(n);
    spec.symbols.emplace_back(n, *spec.rows);
    spec.rowElements = rowElements(spec.types.inputs, n);
    spec.outputRowElements = rowElements(spec.types.outputs, n)[0];
  }
  // Label: the ops inside, root last ("fused add+relu 'r'").
  std::vector<std::string> ops;
  for (const ExprNode *e : postOrder(call.localFn()->body()))
    if (const auto *c = e->as<CallNode>(); c && c->op())
      ops.push_back(c->op()->name);
  return addHostStep(call, std::move(spec),
                     fmt::format("fused {}{}", fmt::join(ops, "+"),
                                 call.name().empty() ? "" : fmt::format(" '{}'", call.name())));
}

Status Lowerer::addHostStep(const CallNode &call, codegen::HostStepSpec spec, std::string label,
                            std::optional<codegen::SymbolicInt> scratch) {
  spec.symbol = fmt::format("tessera_host_{}", out_.hostSteps.size());
  TS_ASSIGN_OR_RETURN(Value result, newValue(call.type(), call));
  runtime::Step step;
  step.kind = runtime::StepKind::Host;
  step.symbol = spec.symbol;
  TS_ASSIGN_OR_RETURN(step.args, argBuffers(call, std::move(spec.call.packed)));
  spec.call.packed.clear();
  step.numInputs = uint32_t(step.args.size());
  flattenInto(result, step.args);
  // The kernel's scratch memory: one more buffer after the outputs
  // (codegen/host.cpp passes buffers[inputs + outputs] as tk_args::scratch),
  // live during this step only.
  if (spec.call.scratchBytes > 0)
    step.args.push_back(addBuffer(runtime::BufferKind::Activation,
                                  Type::tensor(DType::U8, {int64_t(spec.call.scratchBytes)})));
  if (scratch) // a size each run computes (symbols without an upper bound)
    out_.plan.buffers[step.args.back()].info.shape = {runtime::symbolDim(
        symbols_.addFormula(spec.symbol + ".scratch", *scratch, "the scratch of " + label))};
  step.label = std::move(label);
  // The nodes it computes: a fused step's named op calls (root last), or the call's.
  std::vector<std::string> nodes;
  if (call.localFn()) {
    for (const ExprNode *e : postOrder(call.localFn()->body()))
      if (const auto *c = e->as<CallNode>(); c && c->op() && !c->name().empty())
        nodes.push_back(c->name());
  } else if (!call.name().empty()) {
    nodes.push_back(call.name());
  }
  step.nodes = fmt::format("{}", fmt::join(nodes, ", "));
  out_.plan.steps.push_back(std::move(step));
  out_.hostSteps.push_back(std::move(spec));
  values_[&call] = std::move(result);
  return okStatus();
}

Status Lowerer::lowerRegionCall(const CallNode &call) {
  auto it = regionIndex_.find(call.global());
  if (it == regionIndex_.end()) {
    Function fn = module_.find(call.global());
    if (fn && !fn->attrs().has(partition::kCompilerAttr))
      return Error::format("{}: @main calls @{}, which is not a region; only op calls and "
                           "region calls can be compiled",
                           describeNode(call), call.global());
    return Error::format("{}: region @{} was not compiled", describeNode(call), call.global());
  }
  const CompiledRegion &r = regions_[it->second];
  runtime::Step step;
  step.label = fmt::format("{} ({})", r.symbol, r.plugin);
  // A symbolic region's function takes its symbols' values, derived ones
  // included (also the dims inside it that no buffer of the plan holds),
  // named by where they appear in it.
  for (size_t k = 0; k < r.symbolDims.size(); ++k) {
    const int64_t dim = r.symbolDims[k];
    if (symbolInfo(dim).derived())
      TS_RETURN_IF_ERROR(symbols_.addDerived(
          dim, fmt::format("{} in region {}", r.symbolWhere.at(k), step.label)));
    step.symbols.push_back(symbols_.index(dim));
  }
  TS_ASSIGN_OR_RETURN(Value result, newValue(call.type(), call));
  step.kind = runtime::StepKind::External;
  step.symbol = r.symbol;
  step.module = int32_t(it->second);
  TS_ASSIGN_OR_RETURN(step.args, argBuffers(call));
  for (size_t i = 0; i < r.extraInputs.size(); ++i)
    step.args.push_back(addConstant(r.extraInputs[i], fmt::format("{}.const{}", r.symbol, i)));
  step.numInputs = uint32_t(step.args.size());
  flattenInto(result, step.args);
  out_.plan.steps.push_back(std::move(step));
  values_[&call] = std::move(result);
  return okStatus();
}

Status Lowerer::bindOutputs(const FunctionNode &main) {
  std::vector<uint32_t> results;
  TS_ASSIGN_OR_RETURN(const Value *body, valueOf(*main.body()));
  flattenInto(*body, results);
  std::vector<std::string> names = outputNames(main, results.size());
  auto &plan = out_.plan;
  for (size_t i = 0; i < results.size(); ++i) {
    uint32_t b = results[i];
    if (plan.buffers[b].kind == runtime::BufferKind::Activation) {
      // The step that writes it writes the output directly.
      plan.buffers[b].kind = runtime::BufferKind::Output;
      plan.buffers[b].index = uint32_t(i);
      plan.buffers[b].info.name = names[i];
      plan.outputs.push_back(b);
      continue;
    }
    // An input, a constant or an earlier output: copied.
    runtime::Buffer copy = plan.buffers[b];
    copy.kind = runtime::BufferKind::Output;
    copy.index = uint32_t(i);
    copy.offset = 0;
    copy.info.name = names[i];
    plan.buffers.push_back(std::move(copy));
    uint32_t id = uint32_t(plan.buffers.size() - 1);
    runtime::Step step;
    step.kind = runtime::StepKind::Copy;
    step.args = {b, id};
    step.numInputs = 1;
    step.label = fmt::format("copy to output '{}'", names[i]);
    plan.steps.push_back(std::move(step));
    plan.outputs.push_back(id);
  }
  return okStatus();
}

} // namespace detail

Expected<LoweredModel> lowerMain(const ir::Module &m, const std::vector<CompiledRegion> &regions) {
  return detail::Lowerer(m, regions).run();
}

} // namespace tessera::compile
