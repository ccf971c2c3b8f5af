//===- frontend/onnx/converters/recurrent_parse.cpp - RNN/GRU/LSTM attributes ---===//
//
// A recurrent node's attributes and inputs read, checked and normalised to
// layout 0 (recurrent_internal.h's Recurrence), for recurrent.cpp.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/converters/recurrent_internal.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace tessera::frontend::onnx::recurrent_detail {

using ir::DType;
using ir::Expr;

Expected<Recurrence> parseRecurrence(NodeContext &ctx, Cell cell) {
  Recurrence rc;
  rc.cell = cell;
  rc.gates = cell == Cell::RNN ? 1 : cell == Cell::GRU ? 3 : 4;
  rc.actsPerDir = cell == Cell::RNN ? 1 : cell == Cell::GRU ? 2 : 3;
  for (size_t i = 0; i < 3; ++i)
    if (!ctx.hasInput(i))
      return ctx.error("input {} is missing (X, W and R are required)", i);
  // sequence_lens decides which steps run: it must be known.
  wishConstants(ctx, {4});

  rc.x = ctx.input(0);
  rc.w = ctx.input(1);
  rc.r = ctx.input(2);
  if (!ir::isFloat(dtypeOf(rc.x)))
    return ctx.error("X must be a float tensor, got {}", rc.x->type().str());
  if (rankOf(rc.x) != 3 || rankOf(rc.w) != 3 || rankOf(rc.r) != 3)
    return ctx.error("X, W and R must have rank 3, got {}, {}, {}", rc.x->type().str(),
                     rc.w->type().str(), rc.r->type().str());

  TS_ASSIGN_OR_RETURN(rc.layout, ctx.attrInt("layout", int64_t(0)));
  if (rc.layout != 0 && rc.layout != 1)
    return ctx.error("attribute 'layout' = {} must be 0 or 1", rc.layout);
  if (rc.layout == 1) {
    TS_ASSIGN_OR_RETURN(rc.x, transpose(ctx, rc.x, {1, 0, 2}));
  }
  rc.seq = shapeOf(rc.x)[0];
  rc.batch = shapeOf(rc.x)[1];
  rc.inputSize = shapeOf(rc.x)[2];

  TS_ASSIGN_OR_RETURN(std::string direction, ctx.attrString("direction", std::string("forward")));
  if (direction == "forward" || direction == "reverse")
    rc.dirs = 1;
  else if (direction == "bidirectional")
    rc.dirs = 2;
  else
    return ctx.error("attribute 'direction' = \"{}\" is not one of \"forward\", \"reverse\", "
                     "\"bidirectional\"",
                     direction);
  rc.forwardOnlyReverse = direction == "reverse";

  // hidden_size: the attribute, else from R's shape.
  int64_t fromR = shapeOf(rc.r)[2];
  TS_ASSIGN_OR_RETURN(rc.hidden, ctx.attrInt("hidden_size", fromR));
  int64_t H = rc.hidden, G = rc.gates, D = rc.dirs;
  if (H <= 0)
    return ctx.error("attribute 'hidden_size' = {} must be positive", H);
  auto expectShape = [&](const Expr &e, const Ints &shape, const char *name) -> Status {
    if (shapeOf(e) != shape || dtypeOf(e) != dtypeOf(rc.x))
      return ctx.error("input '{}' must be {}{}, got {}", name, ir::dtypeName(dtypeOf(rc.x)),
                       ir::shapeStr(shape), e->type().str());
    return okStatus();
  };
  TS_RETURN_IF_ERROR(expectShape(rc.w, {D, G * H, rc.inputSize}, "W"));
  TS_RETURN_IF_ERROR(expectShape(rc.r, {D, G * H, H}, "R"));
  if (ctx.hasInput(3)) {
    rc.b = ctx.input(3);
    TS_RETURN_IF_ERROR(expectShape(rc.b, {D, 2 * G * H}, "B"));
  }
  if (ctx.hasInput(4)) {
    TS_ASSIGN_OR_RETURN(const ir::Tensor *lens, requireConstant(ctx, 4, "sequence_lens"));
    if (lens->shape() != Ints{rc.batch} || !ir::isInteger(lens->dtype()))
      return ctx.error("input 4 ('sequence_lens') must be an integer tensor of shape [{}], got {}",
                       rc.batch, lens->type().str());
    for (int64_t i = 0; i < lens->numel(); ++i)
      if (lens->getInt(i) != rc.seq)
        return ctx.error("input 4 ('sequence_lens') has value {} for batch {}; only lengths "
                         "equal to the sequence length {} are supported",
                         lens->getInt(i), i, rc.seq);
  }
  auto state = [&](size_t i, const char *name, Expr &out) -> Status {
    if (!ctx.hasInput(i))
      return okStatus();
    Expr e = ctx.input(i);
    if (rc.layout == 1) {
      TS_RETURN_IF_ERROR(expectShape(e, {rc.batch, D, H}, name));
      TS_ASSIGN_OR_RETURN(e, transpose(ctx, e, {1, 0, 2}));
    } else {
      TS_RETURN_IF_ERROR(expectShape(e, {D, rc.batch, H}, name));
    }
    out = e;
    return okStatus();
  };
  TS_RETURN_IF_ERROR(state(5, "initial_h", rc.h0));
  if (cell == Cell::LSTM) {
    TS_RETURN_IF_ERROR(state(6, "initial_c", rc.c0));
    if (ctx.hasInput(7)) {
      rc.p = ctx.input(7);
      TS_RETURN_IF_ERROR(expectShape(rc.p, {D, 3 * H}, "P"));
    }
  }

  // Activations, default per cell type, one list per direction.
  std::vector<std::string> defaults = cell == Cell::RNN ? std::vector<std::string>{"Tanh"}
                                      : cell == Cell::GRU
                                          ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                          : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
  std::vector<std::string> names;
  if (ctx.hasAttr("activations")) {
    using Strings = std::vector<std::string>;
    const OnnxAttr *a = ctx.attr("activations");
    if (!std::holds_alternative<Strings>(*a))
      return ctx.error("attribute 'activations' must be a list of strings");
    names = std::get<Strings>(*a);
  } else {
    for (int64_t d = 0; d < D; ++d)
      names.insert(names.end(), defaults.begin(), defaults.end());
  }
  if (names.size() != rc.actsPerDir * size_t(D))
    return ctx.error("attribute 'activations' must have {} names ({} per direction), got {}",
                     rc.actsPerDir * size_t(D), rc.actsPerDir, names.size());
  TS_ASSIGN_OR_RETURN(std::vector<float> alphas,
                      ctx.attrFloats("activation_alpha", std::vector<float>{}));
  TS_ASSIGN_OR_RETURN(std::vector<float> betas,
                      ctx.attrFloats("activation_beta", std::vector<float>{}));
  size_t ai = 0, bi = 0;
  for (const std::string &n : names) {
    std::optional<Activation> act = makeActivation(n);
    if (!act)
      return ctx.error("attribute 'activations': \"{}\" is not supported (Relu, Tanh, Sigmoid, "
                       "Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, "
                       "Softsign, Softplus are)",
                       n);
    int params = activationParams(act->name);
    if (params >= 1 && ai < alphas.size())
      act->alpha = alphas[ai++];
    if (params >= 2 && bi < betas.size())
      act->beta = betas[bi++];
    rc.acts.push_back(*act);
  }

  if (ctx.hasAttr("clip")) {
    TS_ASSIGN_OR_RETURN(float c, ctx.attrFloat("clip"));
    if (!(c > 0))
      return ctx.error("attribute 'clip' = {} must be positive", c);
    rc.clip = c;
  }
  if (cell == Cell::GRU) {
    TS_ASSIGN_OR_RETURN(rc.linearBeforeReset, ctx.attrInt("linear_before_reset", int64_t(0)));
  }
  if (cell == Cell::LSTM) {
    TS_ASSIGN_OR_RETURN(rc.inputForget, ctx.attrInt("input_forget", int64_t(0)));
  }
  return rc;
}

} // namespace tessera::frontend::onnx::recurrent_detail
