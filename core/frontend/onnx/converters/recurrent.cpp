//===- frontend/onnx/converters/recurrent.cpp - ONNX recurrent converters ---===//
//
// Converters for the ONNX recurrent ops RNN, GRU and LSTM. A recurrence
// that a core op expresses becomes that one op (ir/ops/recurrent.cpp): f32
// without clip; an LSTM with the default activations and no peepholes or
// input_forget (lstm), a GRU with the default activations (gru), an RNN
// with Tanh, Relu or Sigmoid (rnn). The others run as a `loop` per
// direction over a cell of core ops (dense, add, multiply, activations,
// slice) compiled once, never unrolled; the sequence length and the batch
// may be symbols.
//
// Recurrent ops (opsets 7-17): directions forward, reverse, bidirectional;
// optional B, initial_h, initial_c, P (peepholes); sequence_lens must be a
// constant whose values all equal the sequence length (per-batch lengths are
// an error); activations with activation_alpha/activation_beta (Relu, Tanh,
// Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu,
// Softsign, Softplus; alpha/beta values are consumed in order by the
// activations that take them); clip (applied to the gate pre-activations);
// GRU linear_before_reset; LSTM input_forget; layout (opset 14); any subset
// of the outputs Y, Y_h, Y_c.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/converters/recurrent_internal.h"
#include "ir/symbol.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>

namespace tessera::frontend::onnx {

namespace {

using ir::DType;
using ir::Expr;
using namespace recurrent_detail;

/// Elements [start, end) of axis `axis`.
Expected<Expr> sliceAxis(NodeContext &ctx, const Expr &x, int64_t axis, int64_t start,
                         int64_t end) {
  return ctx.call("slice", {x},
                  {{"starts", Ints{start}}, {"ends", Ints{end}}, {"axes", Ints{axis}}});
}

//===----------------------------------------------------------------------===//
// Recurrent ops
//===----------------------------------------------------------------------===//

/// The per-direction slice [d] of a [D, ...] tensor with the leading dim
/// dropped, reshaped to `shape`.
Expected<Expr> direction(NodeContext &ctx, const Expr &x, int64_t d, const Ints &shape) {
  TS_ASSIGN_OR_RETURN(Expr s, sliceAxis(ctx, x, 0, d, d + 1));
  return reshapeTo(ctx, s, shape);
}

/// Rows [g*H, (g+1)*H) of axis `axis` (gate g).
Expected<Expr> gate(NodeContext &ctx, const Expr &x, int64_t axis, int64_t g, int64_t H) {
  return sliceAxis(ctx, x, axis, g * H, (g + 1) * H);
}

/// What one direction's step reads besides its states (absent ones null):
/// R (RNN, LSTM), R's z/r rows and hidden rows and their biases (GRU), the
/// peepholes (LSTM).
struct CellWeights {
  Expr r, rzr, rh, rbzr, rbh, pi, po, pf;
  std::vector<Expr *> all() { return {&r, &rzr, &rh, &rbzr, &rbh, &pi, &po, &pf}; }
};

/// One step of a recurrence: the states (h, c) after an input projection
/// xt [B, G*H] (X_t W^T + Wb, and Rb but for GRU).
Expected<std::pair<Expr, Expr>> cellStep(NodeContext &ctx, const Recurrence &rc,
                                         const Activation *acts, const CellWeights &w, Expr h,
                                         Expr c, const Expr &xt) {
  const int64_t H = rc.hidden;
  auto clipped = [&](const Expr &e) -> Expected<Expr> {
    if (!rc.clip)
      return e;
    return ctx.call("clip", {e}, {{"min", -*rc.clip}, {"max", *rc.clip}});
  };
  auto act = [&](size_t k, const Expr &e) -> Expected<Expr> {
    TS_ASSIGN_OR_RETURN(Expr ce, clipped(e));
    return applyActivation(ctx, acts[k], ce);
  };
  auto add = [&](const Expr &a, const Expr &b) { return binary(ctx, "add", a, b); };
  auto mul = [&](const Expr &a, const Expr &b) { return binary(ctx, "multiply", a, b); };
  if (rc.cell == Cell::RNN) {
    TS_ASSIGN_OR_RETURN(Expr hr, ctx.call("dense", {h, w.r}));
    TS_ASSIGN_OR_RETURN(Expr pre, add(xt, hr));
    TS_ASSIGN_OR_RETURN(h, act(0, pre));
    return std::pair{h, c};
  }
  if (rc.cell == Cell::GRU) {
    // Gates z, r, h.
    TS_ASSIGN_OR_RETURN(Expr hzr, ctx.call("dense", {h, w.rzr}));
    if (w.rbzr) {
      TS_ASSIGN_OR_RETURN(hzr, add(hzr, w.rbzr));
    }
    TS_ASSIGN_OR_RETURN(Expr xzr, sliceAxis(ctx, xt, 1, 0, 2 * H));
    TS_ASSIGN_OR_RETURN(Expr xh, gate(ctx, xt, 1, 2, H));
    TS_ASSIGN_OR_RETURN(Expr zr, add(xzr, hzr));
    TS_ASSIGN_OR_RETURN(Expr zrAct, act(0, zr));
    TS_ASSIGN_OR_RETURN(Expr z, gate(ctx, zrAct, 1, 0, H));
    TS_ASSIGN_OR_RETURN(Expr rg, gate(ctx, zrAct, 1, 1, H));
    Expr hh;
    if (rc.linearBeforeReset) {
      TS_ASSIGN_OR_RETURN(hh, ctx.call("dense", {h, w.rh}));
      if (w.rbh) {
        TS_ASSIGN_OR_RETURN(hh, add(hh, w.rbh));
      }
      TS_ASSIGN_OR_RETURN(hh, mul(rg, hh));
    } else {
      TS_ASSIGN_OR_RETURN(Expr rh_, mul(rg, h));
      TS_ASSIGN_OR_RETURN(hh, ctx.call("dense", {rh_, w.rh}));
      if (w.rbh) {
        TS_ASSIGN_OR_RETURN(hh, add(hh, w.rbh));
      }
    }
    TS_ASSIGN_OR_RETURN(Expr pre, add(xh, hh));
    TS_ASSIGN_OR_RETURN(Expr cand, act(1, pre));
    // h = (1 - z) * cand + z * h = cand + z * (h - cand)
    TS_ASSIGN_OR_RETURN(Expr diff, binary(ctx, "subtract", h, cand));
    TS_ASSIGN_OR_RETURN(Expr zd, mul(z, diff));
    TS_ASSIGN_OR_RETURN(h, add(cand, zd));
    return std::pair{h, c};
  }
  // LSTM: gates i, o, f, c.
  TS_ASSIGN_OR_RETURN(Expr hr, ctx.call("dense", {h, w.r}));
  TS_ASSIGN_OR_RETURN(Expr pre, add(xt, hr));
  TS_ASSIGN_OR_RETURN(Expr gi, gate(ctx, pre, 1, 0, H));
  TS_ASSIGN_OR_RETURN(Expr go, gate(ctx, pre, 1, 1, H));
  TS_ASSIGN_OR_RETURN(Expr gf, gate(ctx, pre, 1, 2, H));
  TS_ASSIGN_OR_RETURN(Expr gc, gate(ctx, pre, 1, 3, H));
  if (w.pi) {
    TS_ASSIGN_OR_RETURN(Expr a, mul(c, w.pi));
    TS_ASSIGN_OR_RETURN(gi, add(gi, a));
    TS_ASSIGN_OR_RETURN(Expr f, mul(c, w.pf));
    TS_ASSIGN_OR_RETURN(gf, add(gf, f));
  }
  TS_ASSIGN_OR_RETURN(Expr i, act(0, gi));
  Expr f;
  if (rc.inputForget) {
    TS_ASSIGN_OR_RETURN(f, binary(ctx, "subtract", scalar(ctx, dtypeOf(rc.x), 1.0), i));
  } else {
    TS_ASSIGN_OR_RETURN(f, act(0, gf));
  }
  TS_ASSIGN_OR_RETURN(Expr cand, act(1, gc));
  TS_ASSIGN_OR_RETURN(Expr fc, mul(f, c));
  TS_ASSIGN_OR_RETURN(Expr ic, mul(i, cand));
  TS_ASSIGN_OR_RETURN(c, add(fc, ic));
  if (w.po) {
    TS_ASSIGN_OR_RETURN(Expr a, mul(c, w.po));
    TS_ASSIGN_OR_RETURN(go, add(go, a));
  }
  TS_ASSIGN_OR_RETURN(Expr o, act(0, go));
  TS_ASSIGN_OR_RETURN(Expr hc, applyActivation(ctx, acts[2], c));
  TS_ASSIGN_OR_RETURN(h, mul(o, hc));
  return std::pair{h, c};
}

/// One direction's result: the hidden state of every step [S, B, H] in
/// time order, the last hidden state and the last cell state [B, H].
struct DirectionResult {
  Expr ys, hLast, cLast;
};

/// A state [B, H] of direction d from `given` [D, B, H], or zeros.
Expected<Expr> initialState(NodeContext &ctx, const Recurrence &rc, const Expr &given,
                            int64_t d) {
  if (given)
    return direction(ctx, given, d, {rc.batch, rc.hidden});
  const Expr zero = ctx.constant(ir::Tensor(dtypeOf(rc.x), {}));
  return ctx.call("expand", {zero}, {{"shape", Ints{rc.batch, rc.hidden}}});
}

/// Runs one direction as a `loop` over a compiled cell: the body takes the
/// input projection's row at the step (`dynamic_slice`, from the end for a
/// reverse direction), carries h (and c) and scans h; the trip count and the
/// scan's length are the sequence length (a constant or a symbol).
Expected<DirectionResult> runDirection(NodeContext &ctx, const Recurrence &rc, int64_t d,
                                       bool reverse) {
  const int64_t H = rc.hidden, G = rc.gates, B = rc.batch, S = rc.seq;
  const Activation *acts = &rc.acts[size_t(d) * rc.actsPerDir];
  const bool lstm = rc.cell == Cell::LSTM;

  CellWeights w;
  TS_ASSIGN_OR_RETURN(w.r, direction(ctx, rc.r, d, {G * H, H}));
  // The input projection of every step at once: [S, B, G*H] + Wb (+ Rb for
  // RNN and LSTM; GRU keeps Rb apart, its hidden gate adds it inside the
  // reset product when linear_before_reset is 1).
  TS_ASSIGN_OR_RETURN(Expr wx, direction(ctx, rc.w, d, {G * H, rc.inputSize}));
  TS_ASSIGN_OR_RETURN(Expr xw, ctx.call("dense", {rc.x, wx}));
  Expr rb; // recurrent bias [G*H], GRU only
  if (rc.b) {
    TS_ASSIGN_OR_RETURN(Expr bd, direction(ctx, rc.b, d, {2 * G * H}));
    TS_ASSIGN_OR_RETURN(Expr wb, sliceAxis(ctx, bd, 0, 0, G * H));
    TS_ASSIGN_OR_RETURN(rb, sliceAxis(ctx, bd, 0, G * H, 2 * G * H));
    TS_ASSIGN_OR_RETURN(xw, binary(ctx, "add", xw, wb));
    if (rc.cell != Cell::GRU) {
      TS_ASSIGN_OR_RETURN(xw, binary(ctx, "add", xw, rb));
      rb = nullptr;
    }
  }
  TS_ASSIGN_OR_RETURN(Expr h0, initialState(ctx, rc, rc.h0, d));
  Expr c0;
  if (lstm) {
    TS_ASSIGN_OR_RETURN(c0, initialState(ctx, rc, rc.c0, d));
  }
  if (rc.p) {
    TS_ASSIGN_OR_RETURN(Expr pd, direction(ctx, rc.p, d, {3 * H}));
    TS_ASSIGN_OR_RETURN(w.pi, gate(ctx, pd, 0, 0, H));
    TS_ASSIGN_OR_RETURN(w.po, gate(ctx, pd, 0, 1, H));
    TS_ASSIGN_OR_RETURN(w.pf, gate(ctx, pd, 0, 2, H));
  }
  if (rc.cell == Cell::GRU) { // R split into the z/r rows and the hidden rows, Rb likewise
    TS_ASSIGN_OR_RETURN(w.rzr, sliceAxis(ctx, w.r, 0, 0, 2 * H));
    TS_ASSIGN_OR_RETURN(w.rh, gate(ctx, w.r, 0, 2, H));
    w.r = nullptr;
    if (rb) {
      TS_ASSIGN_OR_RETURN(w.rbzr, sliceAxis(ctx, rb, 0, 0, 2 * H));
      TS_ASSIGN_OR_RETURN(w.rbh, gate(ctx, rb, 0, 2, H));
    }
  }

  // The body: (iteration, cond, h, [c], xw, weights..., [last]) ->
  // (cond, h', [c'], h'); every outer value passed in (a closed function).
  const ir::Var iter = ir::makeVar("iteration", ir::Type::tensor(DType::I64, {}));
  const ir::Var cond = ir::makeVar("cond", ir::Type::tensor(DType::Bool, {}));
  const ir::Var h = ir::makeVar("h", h0->type());
  std::vector<ir::Var> params{iter, cond, h};
  std::vector<Expr> args{h0};
  ir::Var c;
  if (lstm) {
    params.push_back(c = ir::makeVar("c", c0->type()));
    args.push_back(c0);
  }
  const size_t carried = args.size();
  params.push_back(ir::makeVar("xw", xw->type()));
  args.push_back(xw);
  const ir::Var xwIn = params.back();
  CellWeights inner = w;
  for (Expr *e : inner.all())
    if (*e) {
      params.push_back(ir::makeVar(fmt::format("w{}", params.size()), (*e)->type()));
      args.push_back(std::exchange(*e, params.back()));
    }
  TS_ASSIGN_OR_RETURN(Expr trip, ir::isSymbol(S)
                                     ? ctx.call("symbol_values", {},
                                                {{"values", Ints{S}}, {"shape", Ints{}}})
                                     : Expected<Expr>(ctx.constant(ir::Tensor::fromInts(
                                           DType::I64, {}, Ints{S}))));
  Expr at = iter;
  if (reverse) { // step k reads row S - 1 - k
    params.push_back(ir::makeVar("last", ir::Type::tensor(DType::I64, {})));
    TS_ASSIGN_OR_RETURN(at, ir::makeCall("subtract", {params.back(), iter}));
    TS_ASSIGN_OR_RETURN(args.emplace_back(), binary(ctx, "subtract", trip, scalar(ctx, DType::I64, 1)));
  }
  TS_ASSIGN_OR_RETURN(Expr starts, ir::makeCall("reshape", {at}, {{"newshape", Ints{1}}}));
  TS_ASSIGN_OR_RETURN(Expr row, ir::makeCall("dynamic_slice", {xwIn, starts},
                                             {{"axes", Ints{0}}, {"sizes", Ints{1}}}));
  TS_ASSIGN_OR_RETURN(row, reshapeTo(ctx, row, {B, G * H}));
  TS_ASSIGN_OR_RETURN(auto next, cellStep(ctx, rc, acts, inner, h, c, row));
  std::vector<Expr> results{cond, next.first};
  if (lstm)
    results.push_back(next.second);
  results.push_back(next.first);
  const ir::Function body = ir::makeFunction(std::move(params), ir::makeTuple(std::move(results)));
  std::vector<Expr> loopArgs{trip, ctx.constant(ir::Tensor::fromInts(DType::Bool, {}, Ints{1})),
                             body};
  loopArgs.insert(loopArgs.end(), args.begin(), args.end());
  TS_ASSIGN_OR_RETURN(Expr loop, ctx.call("loop", std::move(loopArgs),
                                          {{"carried", int64_t(carried)},
                                           {"scans", int64_t(1)},
                                           {"count", S}}));
  // The loop's results: h, [c], the scanned h's, the count.
  DirectionResult res;
  TS_ASSIGN_OR_RETURN(res.hLast, ir::makeTupleGetItem(loop, 0));
  if (lstm) {
    TS_ASSIGN_OR_RETURN(res.cLast, ir::makeTupleGetItem(loop, 1));
  }
  TS_ASSIGN_OR_RETURN(res.ys, ir::makeTupleGetItem(loop, int(carried)));
  if (reverse) { // rows in step order: the last step's is time 0
    TS_ASSIGN_OR_RETURN(res.ys, ctx.call("slice", {res.ys},
                                         {{"starts", Ints{-1}},
                                          {"ends", Ints{std::numeric_limits<int64_t>::min()}},
                                          {"axes", Ints{0}},
                                          {"steps", Ints{-1}}}));
  }
  return res;
}

/// The core op (ir/ops/recurrent.cpp) that expresses `rc`, or "" when none
/// does: f32 without clip; lstm with the default activations and no
/// peepholes or coupled gates; gru with the default activations; rnn with
/// one of tanh, relu, sigmoid, the same in both directions.
std::string coreRecurrentOp(const Recurrence &rc) {
  if (dtypeOf(rc.x) != DType::F32 || rc.clip)
    return "";
  auto actsAre = [&](std::vector<std::string> names) {
    for (size_t k = 0; k < rc.acts.size(); ++k)
      if (rc.acts[k].name != names[k % names.size()])
        return false;
    return true;
  };
  if (rc.cell == Cell::LSTM)
    return !rc.inputForget && !rc.p && actsAre({"sigmoid", "tanh", "tanh"}) ? "lstm" : "";
  if (rc.cell == Cell::GRU)
    return actsAre({"sigmoid", "tanh"}) ? "gru" : "";
  const std::string &f = rc.acts[0].name;
  return (f == "tanh" || f == "relu" || f == "sigmoid") && actsAre({f}) ? "rnn" : "";
}

/// The recurrence as one core op `op`; absent B and initial states as
/// zeros. The sequence length may be a symbol (the kernels loop over it).
Expected<Outputs> convertCoreRecurrent(NodeContext &ctx, const Recurrence &rc,
                                       const std::string &op) {
  const int64_t H = rc.hidden, B = rc.batch, D = rc.dirs, G = rc.gates;
  const bool lstm = op == "lstm";
  // Absent B and states are zeros (over a symbolic batch: broadcast).
  auto orZeros = [&](const Expr &e, const Ints &shape) -> Expected<Expr> {
    if (e)
      return e;
    if (ir::isStatic(shape))
      return ctx.constant(ir::Tensor(DType::F32, shape));
    return ctx.call("expand", {ctx.constant(ir::Tensor(DType::F32, {}))}, {{"shape", shape}});
  };
  const std::string direction = D == 2                  ? "bidirectional"
                                : rc.forwardOnlyReverse ? "reverse"
                                                        : "forward";
  std::vector<Expr> args = {rc.x, rc.w, rc.r};
  TS_ASSIGN_OR_RETURN(args.emplace_back(), orZeros(rc.b, {D, 2 * G * H}));
  TS_ASSIGN_OR_RETURN(args.emplace_back(), orZeros(rc.h0, {D, B, H}));
  ir::Attrs attrs{{"direction", direction}};
  if (lstm) {
    TS_ASSIGN_OR_RETURN(args.emplace_back(), orZeros(rc.c0, {D, B, H}));
  } else if (op == "gru")
    attrs.set("linear_before_reset", rc.linearBeforeReset);
  else
    attrs.set("activation", rc.acts[0].name);
  TS_ASSIGN_OR_RETURN(Expr t, ctx.call(op, args, attrs));
  TS_ASSIGN_OR_RETURN(Outputs outs, unpackTuple(ctx, t));
  if (rc.layout == 1) {
    TS_ASSIGN_OR_RETURN(outs[0], transpose(ctx, outs[0], {2, 0, 1, 3}));
    for (size_t i = 1; i < outs.size(); ++i) {
      TS_ASSIGN_OR_RETURN(outs[i], transpose(ctx, outs[i], {1, 0, 2}));
    }
  }
  outs.resize(std::min(ctx.numOutputs(), outs.size()));
  return outs;
}

/// RNN, GRU, LSTM: see the banner.
Expected<Outputs> convertRecurrent(NodeContext &ctx, Cell cell) {
  TS_ASSIGN_OR_RETURN(Recurrence rc, parseRecurrence(ctx, cell));
  if (std::string op = coreRecurrentOp(rc); !op.empty())
    return convertCoreRecurrent(ctx, rc, op);
  const int64_t H = rc.hidden, B = rc.batch, S = rc.seq, D = rc.dirs;
  if (ir::isSymbol(B))
    return ctx.error("X has the symbolic batch {}: this {} runs as a loop over its cell, whose "
                     "scanned states need a static batch; bind it (--input-shape)",
                     ir::dimStr(B),
                     cell == Cell::RNN   ? "RNN"
                     : cell == Cell::GRU ? "GRU"
                                         : "LSTM");
  std::vector<DirectionResult> dirs;
  for (int64_t d = 0; d < D; ++d) {
    bool reverse = rc.forwardOnlyReverse || d == 1;
    TS_ASSIGN_OR_RETURN(DirectionResult dr, runDirection(ctx, rc, d, reverse));
    dirs.push_back(std::move(dr));
  }
  size_t nOut = std::min(ctx.numOutputs(), size_t(cell == Cell::LSTM ? 3 : 2));
  Outputs outs;
  // Y [S, D, B, H].
  if (nOut >= 1) {
    std::vector<Expr> parts;
    for (const DirectionResult &dr : dirs) {
      TS_ASSIGN_OR_RETURN(Expr y, reshapeTo(ctx, dr.ys, {S, 1, B, H}));
      parts.push_back(y);
    }
    Expr y = parts[0];
    if (D == 2) {
      TS_ASSIGN_OR_RETURN(y, ctx.call("concat", parts, {{"axis", int64_t(1)}}));
    }
    if (rc.layout == 1) {
      TS_ASSIGN_OR_RETURN(y, transpose(ctx, y, {2, 0, 1, 3}));
    }
    outs.push_back(y);
  }
  // Y_h, Y_c [D, B, H].
  auto last = [&](bool cellState) -> Expected<Expr> {
    std::vector<Expr> parts;
    for (const DirectionResult &dr : dirs) {
      TS_ASSIGN_OR_RETURN(Expr e, reshapeTo(ctx, cellState ? dr.cLast : dr.hLast, {1, B, H}));
      parts.push_back(e);
    }
    Expr e = parts[0];
    if (parts.size() > 1) {
      TS_ASSIGN_OR_RETURN(e, ctx.call("concat", parts, {{"axis", int64_t(0)}}));
    }
    if (rc.layout == 1) {
      TS_ASSIGN_OR_RETURN(e, transpose(ctx, e, {1, 0, 2}));
    }
    return e;
  };
  if (nOut >= 2) {
    TS_ASSIGN_OR_RETURN(outs.emplace_back(), last(false));
  }
  if (nOut >= 3) {
    TS_ASSIGN_OR_RETURN(outs.emplace_back(), last(true));
  }
  return outs;
}

} // namespace

Status registerRecurrentConverters(ConverterRegistry &r) {
  const char *rnnNotes =
      "forward, reverse, bidirectional; optional B, initial states, P; sequence_lens only when "
      "all equal the sequence length; activations with alpha/beta, clip, layout; any subset of "
      "the outputs";
  const std::string unrolled = "else a loop over a compiled cell per direction; ";
  TS_RETURN_IF_ERROR(r.add(ConverterSpec{
      "RNN", 7, 17, [](NodeContext &ctx) { return convertRecurrent(ctx, Cell::RNN); },
      "one core rnn op when f32 with Tanh, Relu or Sigmoid and no clip, " + unrolled + rnnNotes}));
  TS_RETURN_IF_ERROR(r.add(ConverterSpec{
      "GRU", 7, 17, [](NodeContext &ctx) { return convertRecurrent(ctx, Cell::GRU); },
      "one core gru op when f32 with the default activations and no clip, " + unrolled +
          rnnNotes + "; linear_before_reset"}));
  TS_RETURN_IF_ERROR(r.add(ConverterSpec{
      "LSTM", 7, 17, [](NodeContext &ctx) { return convertRecurrent(ctx, Cell::LSTM); },
      "one core lstm op when f32 with the default activations and no clip, peepholes or "
      "input_forget, " +
          unrolled + rnnNotes + "; peepholes, input_forget"}));
  return okStatus();
}

} // namespace tessera::frontend::onnx
