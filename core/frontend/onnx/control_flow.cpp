//===- frontend/onnx/control_flow.cpp - If, Loop, Scan, SequenceMap -------===//
//
// ONNX control flow is specialised at import time where it can be, and
// kept as run-time control flow where it must: the importer converts a
// sub-graph attribute on
// request (NodeContext::convertSubgraph, with the outer scopes' values
// visible by name), and these converters call it once per taken branch or
// unrolled iteration.
//   - If: a constant condition inlines the taken branch; a run-time one
//     gives an `if` op over both branches as closed functions
//     (ir/ops/control.cpp, NodeContext::outlineSubgraphs).
//   - Loop: with a constant trip count (at most kMaxUnrolled, or any with
//     scan outputs) and condition, the body is converted once per iteration
//     and its condition output must fold to a constant each time (scan
//     outputs are stacked on a new axis 0); otherwise a `loop` op runs the
//     body as a closed function. Its scan outputs then have a run-time
//     length (a run-time symbol, bounded by the trip count when that is a
//     constant).
//   - Scan (control_flow_scan.cpp): unrolled over a static sequence length;
//     over a symbolic one, a `loop` whose body slices the scan inputs at the
//     iteration.
//   - SequenceMap: unrolled over the sequence (a tuple) length.
// Unrolling is capped at kMaxIterations iterations (and the importer caps
// the total number of converted nodes).
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/control_flow_internal.h"
#include "ir/symbol.h"

namespace tessera::frontend::onnx {

namespace control_detail {

using ir::Expr;

/// Stacks tensors of one shape along a new axis `axis` (in the result).
Expected<Expr> stack(NodeContext &ctx, const Outputs &parts, int64_t axis) {
  Outputs expanded;
  for (const Expr &p : parts) {
    if (!p || !p->type().isTensor())
      return ctx.error("a scan output must be a tensor, got {}",
                       p ? p->type().str() : std::string("an absent optional"));
    TS_ASSIGN_OR_RETURN(Expr u, ctx.call("unsqueeze", {p}, {{"axes", Ints{axis}}}));
    expanded.push_back(std::move(u));
  }
  if (expanded.size() == 1)
    return expanded[0];
  return ctx.call("concat", expanded, {{"axis", axis}});
}

/// Element `index` of axis `axis` of x, with that axis removed.
Expected<Expr> takeAxis(NodeContext &ctx, const Expr &x, int64_t axis, int64_t index) {
  TS_ASSIGN_OR_RETURN(Expr s, ctx.call("slice", {x},
                                       {{"starts", Ints{index}},
                                        {"ends", Ints{index + 1}},
                                        {"axes", Ints{axis}},
                                        {"steps", Ints{1}}}));
  return ctx.call("squeeze", {s}, {{"axes", Ints{axis}}});
}

/// The items of a tuple-typed value.
Expected<Outputs> itemsOf(NodeContext &ctx, const Expr &tuple, size_t count) {
  Outputs out;
  for (size_t i = 0; i < count; ++i) {
    TS_ASSIGN_OR_RETURN(Expr item, ir::makeTupleGetItem(tuple, int(i), ctx.nodeName()));
    out.push_back(std::move(item));
  }
  return out;
}

} // namespace control_detail

namespace {

using ir::DType;
using ir::Expr;
using namespace control_detail;

/// A Loop without scan outputs runs at run time when its constant trip
/// count is above this (or absent): unrolling it costs compile time.
constexpr int64_t kMaxUnrolled = 64;

/// The value of a constant scalar (one element) as a bool, or nullopt.
std::optional<bool> constantBool(const Expr &e) {
  if (!e)
    return std::nullopt;
  const auto *c = e->as<ir::ConstantNode>();
  if (!c || c->data().numel() != 1)
    return std::nullopt;
  return c->data().getDouble(0) != 0;
}

Expected<bool> requireBool(NodeContext &ctx, size_t i, std::string_view name) {
  TS_ASSIGN_OR_RETURN(const ir::Tensor *t, requireConstant(ctx, i, name));
  if (t->numel() != 1)
    return ctx.error("input {} ('{}') must have one element, got {}", i, name, t->type().str());
  return t->getDouble(0) != 0;
}

/// The upper bound of a dim (a constant, a bounded symbol); nullopt when
/// it has none.
std::optional<int64_t> dimBound(int64_t d) {
  if (!ir::isSymbol(d))
    return d;
  const ir::SymbolInfo &s = ir::symbolInfo(d);
  return s.bounded() ? std::optional<int64_t>(s.hi) : std::nullopt;
}

/// Branches whose results agree but in some dims (an empty tensor against
/// a count the data decides): each such dim becomes a run-time symbol of
/// the `if`'s 'joins', and each branch returns its value after its results
/// (ir/ops/control.cpp). Nullopt when they differ in more than dims.
Expected<std::optional<std::vector<int64_t>>> joinBranches(NodeContext &ctx,
                                                           std::vector<ir::Function> &fns) {
  const ir::Type &a = fns[0]->body()->type(), &b = fns[1]->body()->type();
  if (!a.isTuple() || !b.isTuple() || a.fields().size() != b.fields().size())
    return std::optional<std::vector<int64_t>>();
  std::vector<int64_t> joins;
  std::array<std::vector<int64_t>, 2> values; // per branch, the joined dims' values
  for (size_t i = 0; i < a.fields().size(); ++i) {
    const ir::Type &x = a.fields()[i], &y = b.fields()[i];
    if (!x.isTensor() || !y.isTensor() || x.dtype() != y.dtype() || x.rank() != y.rank())
      return std::optional<std::vector<int64_t>>();
    for (size_t d = 0; d < x.rank(); ++d) {
      if (x.shape()[d] == y.shape()[d])
        continue;
      const std::optional<int64_t> hx = dimBound(x.shape()[d]), hy = dimBound(y.shape()[d]);
      if (!hx || !hy)
        return ctx.error("output {} of the branches is {} against {}: a dim that differs "
                         "between them must have an upper bound",
                         i, x.str(), y.str());
      TS_ASSIGN_OR_RETURN(int64_t j, countSymbol(ctx, std::max(*hx, *hy)));
      joins.push_back(j);
      values[0].push_back(x.shape()[d]);
      values[1].push_back(y.shape()[d]);
    }
  }
  if (joins.empty())
    return std::optional<std::vector<int64_t>>();
  for (size_t f = 0; f < 2; ++f) {
    std::vector<Expr> fields;
    for (size_t i = 0; i < a.fields().size(); ++i) {
      TS_ASSIGN_OR_RETURN(Expr item, ir::makeTupleGetItem(fns[f]->body(), int(i)));
      fields.push_back(std::move(item));
    }
    for (int64_t v : values[f]) {
      TS_ASSIGN_OR_RETURN(Expr value, ctx.call("symbol_values", {},
                                               {{"values", std::vector<int64_t>{v}},
                                                {"shape", std::vector<int64_t>{1}}}));
      fields.push_back(std::move(value));
    }
    fns[f] = ir::makeFunction(fns[f]->params(), ir::makeTuple(std::move(fields)), fns[f]->attrs(),
                              fns[f]->name(), fns[f]->span());
  }
  return std::optional<std::vector<int64_t>>(std::move(joins));
}

// If with a run-time condition: both branches become closed functions of
// the values they read, and one `if` op runs one of them.
Expected<Outputs> runtimeIf(NodeContext &ctx) {
  const Expr &cond = ctx.input(0);
  auto outlined = ctx.outlineSubgraphs({"then_branch", "else_branch"}, {{}, {}});
  if (!outlined.ok()) {
    ctx.constantInput(0); // a constant would inline one branch instead
    return std::move(outlined).error();
  }
  OutlinedSubgraphs o = std::move(outlined).value();
  TS_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> joins, joinBranches(ctx, o.functions));
  std::vector<Expr> args{cond, o.functions[0], o.functions[1]};
  args.insert(args.end(), o.captured.begin(), o.captured.end());
  auto built = ctx.call("if", std::move(args),
                        joins ? ir::Attrs{{"joins", *joins}} : ir::Attrs{});
  if (!built.ok()) {
    ctx.constantInput(0); // binding 'cond' would inline one branch instead
    return std::move(built).withContext("with 'cond' known only at run time (binding it as a "
                                        "constant inlines one branch)").error();
  }
  const size_t results = (*built)->type().fields().size() - (joins ? joins->size() : 0);
  if (results != ctx.numOutputs())
    return ctx.error("the branches have {} outputs, the node {}", results, ctx.numOutputs());
  return itemsOf(ctx, *built, results);
}

// If (1-17): a constant 'cond' inlines the chosen branch (then_branch /
// else_branch); a run-time one gives an `if` op over both (runtimeIf).
Expected<Outputs> convertIf(NodeContext &ctx) {
  if (!ctx.hasInput(0))
    return ctx.error("input 0 ('cond') is missing");
  if (!ctx.input(0)->as<ir::ConstantNode>())
    return runtimeIf(ctx);
  TS_ASSIGN_OR_RETURN(bool cond, requireBool(ctx, 0, "cond"));
  TS_ASSIGN_OR_RETURN(Outputs outs,
                      ctx.convertSubgraph(cond ? "then_branch" : "else_branch", {}));
  if (outs.size() != ctx.numOutputs())
    return ctx.error("the {} branch has {} outputs, the node {}", cond ? "then" : "else",
                     outs.size(), ctx.numOutputs());
  return outs;
}

// A Loop run at import time: M and cond (each optional) must be constants
// and the body's cond must fold to a constant after every iteration.
// Loop-carried values may be sequences (tuples) or absent optionals; scan
// outputs are stacked on a new axis 0 (at least one iteration is needed for
// them).
Expected<Outputs> unrollLoop(NodeContext &ctx) {
  wishConstants(ctx, {0, 1}); // ask for both at once
  std::optional<int64_t> tripCount;
  if (ctx.hasInput(0)) {
    TS_ASSIGN_OR_RETURN(const ir::Tensor *m, requireConstant(ctx, 0, "M"));
    if (m->numel() != 1)
      return ctx.error("input 0 ('M') must have one element, got {}", m->type().str());
    tripCount = m->getInt(0);
  }
  bool cond = true;
  if (ctx.hasInput(1)) {
    TS_ASSIGN_OR_RETURN(cond, requireBool(ctx, 1, "cond"));
  }
  if (!tripCount && !ctx.hasInput(1))
    return ctx.error("neither a trip count nor a condition is given (an infinite loop)");
  Outputs carried;
  for (size_t i = 2; i < ctx.numInputs(); ++i)
    carried.push_back(ctx.hasInput(i) ? ctx.input(i) : nullptr);
  const size_t n = carried.size();
  if (ctx.numOutputs() < n)
    return ctx.error("the node has {} outputs, fewer than its {} loop-carried values",
                     ctx.numOutputs(), n);
  const size_t k = ctx.numOutputs() - n;
  std::vector<Outputs> scans(k);
  int64_t iter = 0;
  for (; cond && (!tripCount || iter < *tripCount); ++iter) {
    if (iter >= kMaxIterations)
      return ctx.error("the loop runs more than {} iterations, which is more than Tessera "
                       "unrolls",
                       kMaxIterations);
    Outputs in;
    in.push_back(ctx.constant(ir::Tensor::fromInts(DType::I64, {}, {&iter, 1})));
    int64_t c = 1;
    in.push_back(ctx.constant(ir::Tensor::fromInts(DType::Bool, {}, {&c, 1})));
    in.insert(in.end(), carried.begin(), carried.end());
    TS_ASSIGN_OR_RETURN(Outputs out, ctx.convertSubgraph("body", std::move(in)));
    if (out.size() != 1 + n + k)
      return ctx.error("the body has {} outputs, expected {} (cond, {} loop-carried values, {} "
                       "scan outputs)",
                       out.size(), 1 + n + k, n, k);
    std::optional<bool> next = constantBool(out[0]);
    if (!next)
      return ctx.error("the body's condition output does not fold to a constant in iteration "
                       "{} (Tessera unrolls loops at import time)",
                       iter);
    cond = *next;
    for (size_t i = 0; i < n; ++i)
      carried[i] = out[1 + i];
    for (size_t j = 0; j < k; ++j)
      scans[j].push_back(out[1 + n + j]);
  }
  Outputs result = carried;
  for (size_t j = 0; j < k; ++j) {
    if (scans[j].empty())
      return ctx.error("scan output {} is empty (the loop runs no iteration), which has no "
                       "static shape",
                       j);
    TS_ASSIGN_OR_RETURN(Expr s, stack(ctx, scans[j], 0));
    result.push_back(std::move(s));
  }
  return result;
}

// A Loop run at run time: one `loop` op over the body as a closed function.
// Scan outputs have a run-time length (the iterations run): a run-time
// symbol bounded by the trip count when it is a constant (their buffers are
// planned at it), else unbounded (the session grows them as rows arrive).
Expected<Outputs> runtimeLoop(NodeContext &ctx) {
  const size_t n = ctx.numInputs() < 2 ? 0 : ctx.numInputs() - 2;
  if (ctx.numOutputs() < n)
    return ctx.error("the node has {} outputs, fewer than its {} loop-carried values",
                     ctx.numOutputs(), n);
  const size_t k = ctx.numOutputs() - n;
  const ir::Tensor *m = ctx.hasInput(0) ? ctx.constantInput(0) : nullptr;
  const bool symbolic = m && holdsSymbols(*m); // a symbol: its value when the model runs
  // The scan outputs' count: bounded by a constant trip count, or by the
  // bound of a symbolic one.
  int64_t bound = ir::kUnbounded;
  if (m && m->numel() == 1 && !symbolic)
    bound = std::max<int64_t>(m->getInt(0), 0);
  else if (symbolic && m->numel() == 1 && ir::symbolInfo(m->getInt(0)).bounded())
    bound = ir::symbolInfo(m->getInt(0)).hi;
  int64_t count = -1;
  if (k > 0) {
    TS_ASSIGN_OR_RETURN(count, countSymbol(ctx, bound));
  }
  Expr trip = ctx.hasInput(0) ? ctx.input(0)
                              : ctx.constant(ir::Tensor::fromInts(
                                    DType::I64, {}, std::vector<int64_t>{INT64_MAX}));
  if (symbolic) {
    TS_ASSIGN_OR_RETURN(trip, ctx.call("symbol_values", {},
                                       {{"values", m->toInts()}, {"shape", m->shape()}}));
  }
  Expr cond = ctx.hasInput(1)
                  ? ctx.input(1)
                  : ctx.constant(ir::Tensor::fromInts(DType::Bool, {}, std::vector<int64_t>{1}));
  std::vector<ir::Type> leading{ir::Type::tensor(DType::I64, {}), cond->type()};
  std::vector<Expr> args{trip, cond, nullptr};
  for (size_t i = 2; i < ctx.numInputs(); ++i) {
    if (!ctx.hasInput(i))
      return ctx.error("loop-carried value {} is an absent optional, which a loop run at run "
                       "time cannot carry",
                       i - 2);
    leading.push_back(ctx.input(i)->type());
    args.push_back(ctx.input(i));
  }
  auto outlined = ctx.outlineSubgraphs({"body"}, {leading});
  if (!outlined.ok()) {
    wishConstants(ctx, {0, 1}); // constants would unroll it instead
    return std::move(outlined).error();
  }
  // A carried sequence of import-time length (a tuple) whose length the body
  // changes becomes a sequence of run-time length; when the body inserts
  // elements of another rank, of any rank.
  for (int round = 0; round < 2; ++round) {
    TS_ASSIGN_OR_RETURN(bool changed, carrySequences(ctx, *outlined, leading, args));
    if (!changed)
      break;
    outlined = ctx.outlineSubgraphs({"body"}, {leading});
    if (!outlined.ok())
      return std::move(outlined).error();
  }
  OutlinedSubgraphs o = std::move(outlined).value();
  // A carried tensor that the body grows by a concat is scanned instead.
  TS_ASSIGN_OR_RETURN(std::vector<GrownCarry> grown, scanGrownCarries(ctx, o, n));
  if (!grown.empty() && k == 0) {
    TS_ASSIGN_OR_RETURN(count, countSymbol(ctx, bound));
  }
  const size_t scans = k + grown.size();
  args[2] = o.functions[0];
  args.insert(args.end(), o.captured.begin(), o.captured.end());
  ir::Attrs attrs{{"carried", int64_t(n)}};
  if (scans > 0) {
    attrs.set("scans", int64_t(scans));
    attrs.set("count", count);
  }
  Expected<Expr> loop = ctx.call("loop", std::move(args), std::move(attrs));
  if (!loop.ok()) { // a carried value whose type changes (a sequence that grows)
    wishConstants(ctx, {0, 1});
    return std::move(loop).error();
  }
  TS_ASSIGN_OR_RETURN(Outputs items, itemsOf(ctx, *loop, n + scans));
  for (size_t g = 0; g < grown.size(); ++g) {
    TS_ASSIGN_OR_RETURN(items[grown[g].carried],
                        appendScanned(ctx, items[grown[g].carried], items[n + k + g],
                                      grown[g].axis));
  }
  items.resize(n + k); // the count (last) is not an ONNX output
  return items;
}

// Loop (1-17): inputs M (trip count), cond, v_initial...; the body maps
// (iteration_num, cond, v...) to (cond, v..., scan_outputs...). Unrolled at
// import time when M and cond are constants, the body's condition folds and
// the loop is short (or has scan outputs, so that their length is static);
// else one `loop` op runs it.
Expected<Outputs> convertLoop(NodeContext &ctx) {
  // A shape value holding a symbol (x.size(0) in a scripted loop) is known
  // only at run time.
  auto isConstant = [&](size_t i) {
    if (!ctx.hasInput(i))
      return true;
    const auto *k = ctx.input(i)->as<ir::ConstantNode>();
    return k && !holdsSymbols(k->data());
  };
  const size_t carried = ctx.numInputs() < 2 ? 0 : ctx.numInputs() - 2;
  const bool scans = ctx.numOutputs() > carried;
  if (isConstant(0) && isConstant(1)) {
    const ir::Tensor *m = ctx.hasInput(0) ? ctx.constantInput(0) : nullptr;
    const bool longLoop = !m || m->numel() != 1 || m->getInt(0) > kMaxUnrolled;
    if (scans || !longLoop) {
      auto unrolled = unrollLoop(ctx);
      // With scan outputs and no trip count, unrolling is the only way.
      if (unrolled.ok() || (scans && !m))
        return unrolled;
    }
  }
  return runtimeLoop(ctx);
}

/// The elements of a sequence (tuple) value.
Expected<Outputs> elementsOf(const NodeContext &ctx, const Expr &s) {
  if (const auto *t = s->as<ir::TupleNode>())
    return Outputs(t->fields().begin(), t->fields().end());
  Outputs out;
  for (size_t i = 0; i < s->type().fields().size(); ++i) {
    TS_ASSIGN_OR_RETURN(Expr item, ir::makeTupleGetItem(s, int(i), ctx.nodeName()));
    out.push_back(std::move(item));
  }
  return out;
}

// SequenceMap (17): input_sequence and additional inputs (sequences of the
// same length, or tensors passed to every iteration); the body runs once per
// element and each output is a sequence of its per-element results.
Expected<Outputs> convertSequenceMap(NodeContext &ctx) {
  std::vector<std::optional<Outputs>> seqs;
  size_t len = 0;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    if (!ctx.hasInput(i))
      return ctx.error("input {} is missing", i);
    const Expr &e = ctx.input(i);
    if (e->type().isSequence())
      return ctx.error("input {} is a sequence of run-time length ({}), which SequenceMap does "
                       "not map over yet: bind its length and element shapes (the importer's "
                       "value types), or write the loop out (Loop, SequenceAt, SequenceInsert)",
                       i, e->type().str());
    if (!e->type().isTuple()) {
      if (i == 0)
        return ctx.error("input 0 must be a sequence, got {}", e->type().str());
      seqs.push_back(std::nullopt);
      continue;
    }
    TS_ASSIGN_OR_RETURN(Outputs elems, elementsOf(ctx, e));
    if (i == 0)
      len = elems.size();
    else if (elems.size() != len)
      return ctx.error("input {} has {} elements, input 0 has {}", i, elems.size(), len);
    seqs.push_back(std::move(elems));
  }
  if (int64_t(len) > kMaxIterations)
    return ctx.error("the sequence has {} elements, more than the {} Tessera unrolls", len,
                     kMaxIterations);
  std::vector<Outputs> results(ctx.numOutputs());
  for (size_t t = 0; t < len; ++t) {
    Outputs in;
    for (size_t i = 0; i < seqs.size(); ++i)
      in.push_back(seqs[i] ? (*seqs[i])[t] : ctx.input(i));
    TS_ASSIGN_OR_RETURN(Outputs out, ctx.convertSubgraph("body", std::move(in)));
    if (out.size() != results.size())
      return ctx.error("the body has {} outputs, the node {}", out.size(), results.size());
    for (size_t j = 0; j < out.size(); ++j) {
      if (!out[j] || !out[j]->type().isTensor())
        return ctx.error("body output {} must be a tensor", j);
      results[j].push_back(out[j]);
    }
  }
  Outputs outs;
  for (auto &r : results)
    outs.push_back(ir::makeTuple(std::move(r), ctx.nodeName()));
  return outs;
}

} // namespace

Status registerControlFlowConverters(ConverterRegistry &r) {
  TS_RETURN_IF_ERROR(r.add({"If", 1, 17, convertIf,
                            "a constant cond inlines the taken branch; a run-time cond runs one "
                            "of the two branches (same output types) at run time"}));
  TS_RETURN_IF_ERROR(r.add({"Loop", 1, 17, convertLoop,
                            "constant M (at most 64, or 10000 with scan outputs) and cond with a "
                            "folding body cond: unrolled; otherwise run at run time (scan "
                            "outputs of run-time length, bounded by M when it is a constant; a "
                            "carried tensor the body grows by Concat becomes a scan output)"}));
  TS_RETURN_IF_ERROR(r.add({"Scan", 8, 17, convertScan,
                            "unrolled over a static sequence length; over a symbolic one (opset "
                            "9+), one loop over windows of the scan inputs; opset 8 without "
                            "sequence_lens"}));
  TS_RETURN_IF_ERROR(r.add({"SequenceMap", 17, 17, convertSequenceMap,
                            "unrolled over the sequence length"}));
  return okStatus();
}

} // namespace tessera::frontend::onnx
