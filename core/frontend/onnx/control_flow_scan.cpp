//===- frontend/onnx/control_flow_scan.cpp - ONNX Scan -----------------------===//
//
// Scan: unrolled over a static sequence length (the body converted once per
// element, the scan outputs stacked); over a symbolic one, a `loop` whose
// body takes each scan input's window at the iteration (runtimeScan).
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/control_flow_internal.h"
#include "ir/visit.h"

#include <algorithm>
#include <limits>
#include <unordered_map>

namespace tessera::frontend::onnx::control_detail {

namespace {

using ir::DType;
using ir::Expr;

/// Scan over a sequence of symbolic length `len`: one `loop` whose trip
/// count is the length, whose body slices each scan input at the iteration
/// (`dynamic_slice`, from the end for a reverse direction) and then computes
/// the outlined Scan body on the slices; the scan outputs are the loop's,
/// `len` rows each (reversed for a reverse output direction), moved to
/// their scan_output_axes.
Expected<Outputs> runtimeScan(NodeContext &ctx, const Outputs &states, const Outputs &xs,
                              int64_t len, const Ints &inAxes, const Ints &inDirs,
                              const Ints &outAxes, const Ints &outDirs, size_t k) {
  using ir::makeCall;
  const size_t n = states.size(), m = xs.size();
  std::vector<ir::Type> leading;
  for (const Expr &e : states)
    leading.push_back(e->type());
  for (size_t j = 0; j < m; ++j) {
    ir::Shape shape = shapeOf(xs[j]);
    shape.erase(shape.begin() + inAxes[j]);
    leading.push_back(ir::Type::tensor(dtypeOf(xs[j]), std::move(shape)));
  }
  TS_ASSIGN_OR_RETURN(OutlinedSubgraphs o, ctx.outlineSubgraphs({"body"}, {leading}));
  const ir::FunctionNode &inner = *o.functions[0];
  if (inner.body()->type().fields().size() != n + k)
    return ctx.error("the body has {} outputs, expected {} ({} states, {} scan outputs)",
                     inner.body()->type().fields().size(), n + k, n, k);

  // The loop body: (iteration, cond, states..., scan inputs..., captured...).
  const ir::Var iter = ir::makeVar("iteration", ir::Type::tensor(DType::I64, {}));
  const ir::Var cond = ir::makeVar("cond", ir::Type::tensor(DType::Bool, {}));
  std::vector<ir::Var> params{iter, cond};
  std::unordered_map<const ir::ExprNode *, Expr> subst;
  for (size_t i = 0; i < n; ++i) {
    params.push_back(ir::makeVar(fmt::format("state{}", i), states[i]->type()));
    subst[inner.params()[i].get()] = params.back();
  }
  // len - 1 for reverse directions: computed before the loop, a parameter.
  const bool reverse = std::any_of(inDirs.begin(), inDirs.end(), [](int64_t d) { return d; });
  const ir::Var last = ir::makeVar("last", ir::Type::tensor(DType::I64, {}));
  for (size_t j = 0; j < m; ++j) {
    params.push_back(ir::makeVar(fmt::format("scan_input{}", j), xs[j]->type()));
    Expr at = iter;
    if (inDirs[j]) {
      TS_ASSIGN_OR_RETURN(at, makeCall("subtract", {last, iter}));
    }
    TS_ASSIGN_OR_RETURN(Expr starts, makeCall("reshape", {at}, {{"newshape", Ints{1}}}));
    TS_ASSIGN_OR_RETURN(Expr window, makeCall("dynamic_slice", {params.back(), starts},
                                              {{"axes", Ints{inAxes[j]}}, {"sizes", Ints{1}}}));
    TS_ASSIGN_OR_RETURN(Expr slice, makeCall("squeeze", {window}, {{"axes", Ints{inAxes[j]}}}));
    subst[inner.params()[n + j].get()] = slice;
  }
  for (size_t c = 0; c < o.captured.size(); ++c) {
    params.push_back(ir::makeVar(fmt::format("captured{}", c), o.captured[c]->type()));
    subst[inner.params()[n + m + c].get()] = params.back();
  }
  if (reverse)
    params.push_back(last);
  TS_ASSIGN_OR_RETURN(Expr computed, ir::rewrite(
                                         inner.body(),
                                         [&](const Expr &orig, const Expr &rebuilt) -> Expected<Expr> {
                                           auto it = subst.find(orig.get());
                                           return it != subst.end() ? it->second : rebuilt;
                                         },
                                         /*intoFunctions=*/false));
  std::vector<Expr> results{cond};
  for (size_t i = 0; i < n + k; ++i) {
    TS_ASSIGN_OR_RETURN(Expr item, ir::makeTupleGetItem(computed, int(i)));
    results.push_back(std::move(item));
  }
  const ir::Function body = ir::makeFunction(std::move(params), ir::makeTuple(std::move(results)));

  TS_ASSIGN_OR_RETURN(Expr trip, ctx.call("symbol_values", {},
                                          {{"values", Ints{len}}, {"shape", Ints{}}}));
  std::vector<Expr> args{
      trip, ctx.constant(ir::Tensor::fromInts(DType::Bool, {}, std::vector<int64_t>{1})), body};
  args.insert(args.end(), states.begin(), states.end());
  args.insert(args.end(), xs.begin(), xs.end());
  args.insert(args.end(), o.captured.begin(), o.captured.end());
  if (reverse) {
    TS_ASSIGN_OR_RETURN(Expr l, ctx.call("subtract", {trip, ctx.constant(ir::Tensor::fromInts(
                                                                DType::I64, {}, Ints{1}))}));
    args.push_back(l);
  }
  ir::Attrs attrs{{"carried", int64_t(n)}};
  if (k > 0) {
    attrs.set("scans", int64_t(k));
    attrs.set("count", len);
  }
  TS_ASSIGN_OR_RETURN(Expr loop, ctx.call("loop", std::move(args), std::move(attrs)));
  TS_ASSIGN_OR_RETURN(Outputs out, itemsOf(ctx, loop, n + k));
  for (size_t j = 0; j < k; ++j) { // rows on axis 0 -> scan_output_axes[j]
    if (outDirs[j]) { // prepended: the last iteration's row first
      TS_ASSIGN_OR_RETURN(out[n + j],
                          ctx.call("slice", {out[n + j]},
                                   {{"starts", Ints{-1}},
                                    {"ends", Ints{std::numeric_limits<int64_t>::min()}},
                                    {"axes", Ints{0}},
                                    {"steps", Ints{-1}}}));
    }
    const int64_t r = rankOf(out[n + j]);
    const int64_t axis = outAxes[j] < 0 ? outAxes[j] + r : outAxes[j];
    if (axis < 0 || axis >= r)
      return ctx.error("scan_output_axes[{}] = {} is out of range for rank {}", j, outAxes[j], r);
    if (axis == 0)
      continue;
    Ints perm;
    for (int64_t d = 1; d <= axis; ++d)
      perm.push_back(d);
    perm.push_back(0);
    for (int64_t d = axis + 1; d < r; ++d)
      perm.push_back(d);
    TS_ASSIGN_OR_RETURN(out[n + j], transpose(ctx, out[n + j], perm));
  }
  return out;
}

/// The core of Scan (opset 9 semantics) on one batch element.
Expected<Outputs> scanCore(NodeContext &ctx, Outputs states, const Outputs &xs,
                           const Ints &inAxes, const Ints &inDirs, const Ints &outAxes,
                           const Ints &outDirs, size_t k) {
  const size_t n = states.size();
  int64_t len = -1;
  bool lenSet = false;
  for (size_t j = 0; j < xs.size(); ++j) {
    int64_t d = shapeOf(xs[j])[size_t(inAxes[j])];
    if (lenSet && d != len)
      return ctx.error("scan inputs have different sequence lengths ({} and {})",
                       ir::dimStr(len), ir::dimStr(d));
    len = d;
    lenSet = true;
  }
  if (ir::isSymbol(len))
    return runtimeScan(ctx, states, xs, len, inAxes, inDirs, outAxes, outDirs, k);
  if (len > kMaxIterations)
    return ctx.error("the scan runs {} iterations, more than the {} Tessera unrolls", len,
                     kMaxIterations);
  std::vector<Outputs> scans(k);
  for (int64_t t = 0; t < len; ++t) {
    Outputs in = states;
    for (size_t j = 0; j < xs.size(); ++j) {
      int64_t idx = inDirs[j] ? len - 1 - t : t;
      TS_ASSIGN_OR_RETURN(Expr x, takeAxis(ctx, xs[j], inAxes[j], idx));
      in.push_back(std::move(x));
    }
    TS_ASSIGN_OR_RETURN(Outputs out, ctx.convertSubgraph("body", std::move(in)));
    if (out.size() != n + k)
      return ctx.error("the body has {} outputs, expected {} ({} states, {} scan outputs)",
                       out.size(), n + k, n, k);
    for (size_t i = 0; i < n; ++i)
      states[i] = out[i];
    for (size_t j = 0; j < k; ++j)
      scans[j].push_back(out[n + j]);
  }
  Outputs result = states;
  for (size_t j = 0; j < k; ++j) {
    if (scans[j].empty())
      return ctx.error("scan output {} is empty (the sequence length is 0)", j);
    if (!scans[j][0] || !scans[j][0]->type().isTensor())
      return ctx.error("scan output {} must be a tensor", j);
    Outputs parts = scans[j];
    if (outDirs[j])
      std::reverse(parts.begin(), parts.end());
    int64_t r = rankOf(parts[0]) + 1;
    int64_t axis = outAxes[j] < 0 ? outAxes[j] + r : outAxes[j];
    if (axis < 0 || axis >= r)
      return ctx.error("scan_output_axes[{}] = {} is out of range for rank {}", j, outAxes[j], r);
    TS_ASSIGN_OR_RETURN(Expr s, stack(ctx, parts, axis));
    result.push_back(std::move(s));
  }
  return result;
}

/// A per-input attribute list (directions, axes) of length `count`.
Expected<Ints> perInput(NodeContext &ctx, std::string_view name, size_t count) {
  TS_ASSIGN_OR_RETURN(Ints v, ctx.attrInts(name, Ints(count, 0)));
  if (v.size() != count)
    return ctx.error("attribute '{}' has {} values, expected {}", name, v.size(), count);
  return v;
}

} // namespace

// Scan 8: inputs (sequence_lens, states..., scan inputs...) with a batch
// axis 0 and the sequence on axis 1; 'directions'. sequence_lens must be
// absent. Scan 9-17: inputs (states..., scan inputs...), scan_input_axes,
// scan_input_directions, scan_output_axes, scan_output_directions.
Expected<Outputs> convertScan(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(int64_t m, ctx.attrInt("num_scan_inputs"));
  const bool v8 = ctx.opset() < 9;
  const size_t first = v8 ? 1 : 0;
  if (m < 1 || size_t(m) + first > ctx.numInputs())
    return ctx.error("num_scan_inputs = {} does not fit the {} inputs", m, ctx.numInputs());
  if (v8 && ctx.hasInput(0))
    return ctx.error("input 0 ('sequence_lens') is not supported");
  const size_t n = ctx.numInputs() - first - size_t(m);
  if (ctx.numOutputs() < n)
    return ctx.error("the node has {} outputs, fewer than its {} states", ctx.numOutputs(), n);
  const size_t k = ctx.numOutputs() - n;
  Outputs states, xs;
  for (size_t i = first; i < ctx.numInputs(); ++i) {
    TS_ASSIGN_OR_RETURN(Expr e, tensorInput(ctx, i));
    (i < first + n ? states : xs).push_back(std::move(e));
  }
  if (!v8) {
    TS_ASSIGN_OR_RETURN(Ints inAxes, perInput(ctx, "scan_input_axes", size_t(m)));
    TS_ASSIGN_OR_RETURN(Ints inDirs, perInput(ctx, "scan_input_directions", size_t(m)));
    TS_ASSIGN_OR_RETURN(Ints outAxes, perInput(ctx, "scan_output_axes", k));
    TS_ASSIGN_OR_RETURN(Ints outDirs, perInput(ctx, "scan_output_directions", k));
    for (size_t j = 0; j < xs.size(); ++j) {
      int64_t r = rankOf(xs[j]);
      int64_t a = inAxes[j] < 0 ? inAxes[j] + r : inAxes[j];
      if (a < 0 || a >= r)
        return ctx.error("scan_input_axes[{}] = {} is out of range for rank {}", j, inAxes[j], r);
      inAxes[j] = a;
    }
    return scanCore(ctx, states, xs, inAxes, inDirs, outAxes, outDirs, k);
  }
  TS_ASSIGN_OR_RETURN(Ints dirs, perInput(ctx, "directions", size_t(m)));
  for (const Expr &e : states)
    if (rankOf(e) < 1)
      return ctx.error("a state must have a batch axis, got {}", e->type().str());
  for (const Expr &e : xs)
    if (rankOf(e) < 2)
      return ctx.error("a scan input must have batch and sequence axes, got {}", e->type().str());
  int64_t batch = shapeOf(xs[0])[0];
  std::vector<Outputs> perBatch(n + k);
  for (int64_t b = 0; b < batch; ++b) {
    Outputs sb, xb;
    for (const Expr &e : states) {
      TS_ASSIGN_OR_RETURN(Expr t, takeAxis(ctx, e, 0, b));
      sb.push_back(std::move(t));
    }
    for (const Expr &e : xs) {
      TS_ASSIGN_OR_RETURN(Expr t, takeAxis(ctx, e, 0, b));
      xb.push_back(std::move(t));
    }
    TS_ASSIGN_OR_RETURN(Outputs out, scanCore(ctx, sb, xb, Ints(size_t(m), 0), dirs,
                                              Ints(k, 0), Ints(k, 0), k));
    for (size_t i = 0; i < out.size(); ++i)
      perBatch[i].push_back(out[i]);
  }
  if (batch < 1)
    return ctx.error("the batch is empty");
  Outputs result;
  for (auto &parts : perBatch) {
    TS_ASSIGN_OR_RETURN(Expr s, stack(ctx, parts, 0));
    result.push_back(std::move(s));
  }
  return result;
}

} // namespace tessera::frontend::onnx::control_detail
