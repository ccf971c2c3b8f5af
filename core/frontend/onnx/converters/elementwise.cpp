//===- frontend/onnx/converters/elementwise.cpp - ONNX elementwise converters ----===//
//
// Converters for the elementwise ONNX op types: binary arithmetic (with the
// pre-opset-7 'broadcast'/'axis' attributes), variadic Sum/Mean/Max/Min,
// unary math, activations (several composed from core ops), comparisons,
// logic, BitShift, Where, Cast/CastLike, Identity and inference-mode Dropout.
//
// Every converter maps onto core ops one to one where the core op set has
// the ONNX semantics, and otherwise composes core ops exactly (within the
// conformance tolerance). Some converters are written but held back (see
// registerElementwiseConverters): an op type is registered only when every
// ONNX backend test that uses it passes.
//
// This file holds the arithmetic, the predicates, Cast/CastLike, Identity,
// Dropout and registerElementwiseConverters(); the activations with
// attributes or composed from core ops are in elementwise_activation.cpp
// (shared declarations: elementwise_internal.h).
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/converters/elementwise_internal.h"

#include <cstdint>
#include <utility>

namespace tessera::frontend::onnx {

namespace elementwise_detail {

constexpr int64_t kMaxOpset = 17;

//===----------------------------------------------------------------------===//
// Small builders
//===----------------------------------------------------------------------===//

Expected<Expr> call1(NodeContext &ctx, std::string_view op, Expr a, ir::Attrs attrs) {
  return ctx.call(op, {std::move(a)}, std::move(attrs));
}
Expected<Expr> call2(NodeContext &ctx, std::string_view op, Expr a, Expr b) {
  return ctx.call(op, {std::move(a), std::move(b)});
}
Expected<Expr> call3(NodeContext &ctx, std::string_view op, Expr a, Expr b, Expr c) {
  return ctx.call(op, {std::move(a), std::move(b), std::move(c)});
}
Expected<Outputs> single(Expected<Expr> e) {
  if (!e.ok())
    return std::move(e).error();
  return Outputs{std::move(e).value()};
}

/// The float attribute `name` (ONNX FLOAT; an INT is accepted).
Expected<double> floatAttr(const NodeContext &ctx, std::string_view name, float fallback) {
  TS_ASSIGN_OR_RETURN(float v, ctx.attrFloat(name, fallback));
  return double(v);
}

namespace {

/// The two inputs of a binary op. From opset 7 they broadcast as numpy does;
/// before, they must have equal shapes unless 'broadcast' = 1, in which case
/// B's shape matches a run of A's dims starting at 'axis' (default: A's
/// trailing dims) and B is unsqueezed to A's rank so that numpy broadcasting
/// gives the legacy result.
Expected<std::pair<Expr, Expr>> binaryInputs(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr a, tensorInput(ctx, 0));
  TS_ASSIGN_OR_RETURN(Expr b, tensorInput(ctx, 1));
  if (ctx.opset() >= 7)
    return std::pair{a, b};
  TS_ASSIGN_OR_RETURN(int64_t broadcast, ctx.attrInt("broadcast", 0));
  const ir::Shape &sa = shapeOf(a), &sb = shapeOf(b);
  if (broadcast == 0) {
    if (sa != sb)
      return ctx.error("input shapes {} and {} differ and attribute 'broadcast' is 0 (opset {})",
                       ir::shapeStr(sa), ir::shapeStr(sb), ctx.opset());
    return std::pair{a, b};
  }
  int64_t ra = int64_t(sa.size()), rb = int64_t(sb.size());
  TS_ASSIGN_OR_RETURN(int64_t axis, ctx.attrInt("axis", ra - rb));
  if (axis < 0)
    axis += ra;
  bool fits = rb <= ra && axis >= 0 && axis + rb <= ra;
  for (int64_t i = 0; fits && i < rb; ++i)
    fits = sb[size_t(i)] == 1 || sb[size_t(i)] == sa[size_t(axis + i)];
  if (!fits)
    return ctx.error("legacy broadcast of {} onto {} at attribute 'axis' = {} does not fit",
                     ir::shapeStr(sb), ir::shapeStr(sa), axis);
  std::vector<int64_t> axes;
  for (int64_t i = 0; i < ra; ++i)
    if (i < axis || i >= axis + rb)
      axes.push_back(i);
  if (!axes.empty()) {
    TS_ASSIGN_OR_RETURN(b, call1(ctx, "unsqueeze", b, {{"axes", axes}}));
  }
  return std::pair{a, b};
}

//===----------------------------------------------------------------------===//
// Converter factories
//===----------------------------------------------------------------------===//

/// One input, one core op with no attributes.
Converter unary(std::string coreOp) {
  return [coreOp](NodeContext &ctx) -> Expected<Outputs> {
    TS_ASSIGN_OR_RETURN(Expr x, tensorInput(ctx, 0));
    return single(call1(ctx, coreOp, x));
  };
}

/// Two broadcast inputs, one core op.
Converter binary(std::string coreOp) {
  return [coreOp](NodeContext &ctx) -> Expected<Outputs> {
    TS_ASSIGN_OR_RETURN(auto ab, binaryInputs(ctx));
    return single(call2(ctx, coreOp, ab.first, ab.second));
  };
}

/// Sum, Max, Min (and Mean, divided afterwards): a left fold of the core
/// binary op over one or more inputs with numpy broadcasting (a superset of
/// the equal shapes required before opset 8).
Converter variadic(std::string coreOp, bool mean) {
  return [coreOp, mean](NodeContext &ctx) -> Expected<Outputs> {
    if (ctx.numInputs() == 0)
      return ctx.error("needs at least one input");
    TS_ASSIGN_OR_RETURN(Expr acc, tensorInput(ctx, 0));
    for (size_t i = 1; i < ctx.numInputs(); ++i) {
      TS_ASSIGN_OR_RETURN(Expr x, tensorInput(ctx, i));
      TS_ASSIGN_OR_RETURN(acc, call2(ctx, coreOp, acc, x));
    }
    if (mean && ctx.numInputs() > 1)
      return single(call2(ctx, "divide", acc, scalar(ctx, dtypeOf(acc), double(ctx.numInputs()))));
    return Outputs{acc};
  };
}

//===----------------------------------------------------------------------===//
// Arithmetic
//===----------------------------------------------------------------------===//

// Pow: same dtypes map to core power. Mixed dtypes (opset 12+: the exponent
// may have another type): integer pairs are computed in i64 and wrapped
// back to the base dtype; pairs involving a float are computed in f64 and
// cast back to the base dtype (ints truncate), which is numpy's result.
Expected<Outputs> convertPow(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(auto ab, binaryInputs(ctx));
  auto [x, y] = ab;
  DType tx = dtypeOf(x), ty = dtypeOf(y);
  if (tx == ty)
    return single(call2(ctx, "power", x, y));
  if (ir::isBool(tx) || ir::isBool(ty))
    return ctx.error("bool operands are not supported (base {}, exponent {})", ir::dtypeName(tx),
                     ir::dtypeName(ty));
  DType work = ir::isInteger(tx) && ir::isInteger(ty) ? DType::I64 : DType::F64;
  TS_ASSIGN_OR_RETURN(Expr wx, castTo(ctx, x, work));
  TS_ASSIGN_OR_RETURN(Expr wy, castTo(ctx, y, work));
  TS_ASSIGN_OR_RETURN(Expr p, call2(ctx, "power", wx, wy));
  return single(castTo(ctx, p, tx));
}

// Mod: core mod; 'fmod' (0 or 1) is passed on.
Expected<Outputs> convertMod(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr a, tensorInput(ctx, 0));
  TS_ASSIGN_OR_RETURN(Expr b, tensorInput(ctx, 1));
  TS_ASSIGN_OR_RETURN(int64_t fmod, ctx.attrInt("fmod", 0));
  if (fmod == 0 && ir::isFloat(dtypeOf(a)))
    return ctx.error("attribute 'fmod' must be 1 for float inputs ({})", a->type().str());
  return single(ctx.call("mod", {a, b}, {{"fmod", fmod}}));
}

// BitShift (opset 11): core bit_shift; 'direction' "LEFT" or "RIGHT"
// (required); unsigned integer inputs of one dtype, numpy broadcasting.
Expected<Outputs> convertBitShift(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr a, tensorInput(ctx, 0));
  TS_ASSIGN_OR_RETURN(Expr b, tensorInput(ctx, 1));
  TS_ASSIGN_OR_RETURN(std::string direction, ctx.attrString("direction"));
  if (direction != "LEFT" && direction != "RIGHT")
    return ctx.error("attribute 'direction' must be \"LEFT\" or \"RIGHT\", got \"{}\"",
                     direction);
  return single(ctx.call("bit_shift", {a, b},
                         {{"direction", std::string(direction == "LEFT" ? "left" : "right")}}));
}

//===----------------------------------------------------------------------===//
// Predicates, Cast, Identity, Dropout
//===----------------------------------------------------------------------===//

// IsInf: core isinf; 'detect_positive' / 'detect_negative' (default 1).
Expected<Outputs> convertIsInf(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr x, tensorInput(ctx, 0));
  TS_ASSIGN_OR_RETURN(int64_t pos, ctx.attrInt("detect_positive", 1));
  TS_ASSIGN_OR_RETURN(int64_t neg, ctx.attrInt("detect_negative", 1));
  return single(
      call1(ctx, "isinf", x, {{"detect_positive", pos != 0}, {"detect_negative", neg != 0}}));
}

// Cast (opset 6+: 'to' is a TensorProto.DataType): core cast between our
// dtypes (float -> int truncates, -> f16/bf16 rounds to nearest even).
Expected<Outputs> convertCast(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr x, tensorInput(ctx, 0));
  TS_ASSIGN_OR_RETURN(int64_t to, ctx.attrInt("to"));
  TS_ASSIGN_OR_RETURN(DType t, dtypeFromOnnx(ctx, to));
  return single(castTo(ctx, x, t));
}

// CastLike: core cast to the dtype of input 1.
Expected<Outputs> convertCastLike(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr x, tensorInput(ctx, 0));
  TS_ASSIGN_OR_RETURN(Expr like, tensorInput(ctx, 1));
  return single(castTo(ctx, x, dtypeOf(like)));
}

// Identity: the input itself, a tensor or a sequence (a tuple); a present
// optional is its value (an absent one, a null input, is an error).
Expected<Outputs> convertIdentity(NodeContext &ctx) {
  if (!ctx.hasInput(0))
    return ctx.error("missing required input 0 (or an absent optional)");
  return Outputs{ctx.input(0)};
}

/// A constant scalar input as a double, or an error saying it must be one.
Expected<double> constantScalarInput(NodeContext &ctx, size_t i, std::string_view name) {
  const Tensor *t = ctx.constantInput(i);
  if (!t)
    return ctx.error("input {} ('{}') must be a constant", i, name);
  if (t->numel() != 1)
    return ctx.error("input {} ('{}') must be a scalar, got {}", i, name, t->type().str());
  return t->getDouble(0);
}

/// numpy's legacy RandomState: MT19937 seeded with init_genrand(seed) and
/// doubles made of 53 random bits from two 32-bit draws.
class NumpyLegacyRandom {
public:
  explicit NumpyLegacyRandom(uint32_t seed) {
    state_[0] = seed;
    for (uint32_t i = 1; i < kN; ++i)
      state_[i] = 1812433253u * (state_[i - 1] ^ (state_[i - 1] >> 30)) + i;
  }
  double uniform() {
    const uint32_t a = next() >> 5, b = next() >> 6;
    return (double(a) * 67108864.0 + double(b)) / 9007199254740992.0;
  }

private:
  static constexpr uint32_t kN = 624, kM = 397;
  uint32_t next() {
    if (pos_ == kN) {
      for (uint32_t i = 0; i < kN; ++i) {
        const uint32_t y = (state_[i] & 0x80000000u) | (state_[(i + 1) % kN] & 0x7fffffffu);
        state_[i] = state_[(i + kM) % kN] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
      }
      pos_ = 0;
    }
    uint32_t y = state_[pos_++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    return y ^ (y >> 18);
  }
  uint32_t state_[kN];
  uint32_t pos_ = kN;
};

// Dropout in inference: output 0 is the input; the optional mask (output 1)
// is all true (all ones of the input dtype before opset 10). Training mode
// (opset < 7 'is_test' = 0, opset 12+ 'training_mode' input true) with ratio
// 0 is the identity too; with another ratio it needs a 'seed', from which
// the mask is drawn at import as numpy's RandomState(seed).uniform(0, 1) >=
// ratio would (the ONNX reference's definition), and the kept values are
// scaled by 1 / (1 - ratio).
Expected<Outputs> convertDropout(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr x, tensorInput(ctx, 0));
  bool training = false;
  double ratio = 0.5;
  if (ctx.opset() < 7) {
    TS_ASSIGN_OR_RETURN(int64_t isTest, ctx.attrInt("is_test", 0));
    training = isTest == 0;
    TS_ASSIGN_OR_RETURN(ratio, floatAttr(ctx, "ratio", 0.5f));
  } else if (ctx.opset() < 12) {
    TS_ASSIGN_OR_RETURN(ratio, floatAttr(ctx, "ratio", 0.5f));
  } else if (ctx.hasInput(2)) {
    // Ask for both as constants at once, so that one re-import with bound
    // inputs can satisfy them.
    Expected<double> mode = constantScalarInput(ctx, 2, "training_mode");
    Expected<double> r =
        ctx.hasInput(1) ? constantScalarInput(ctx, 1, "ratio") : Expected<double>(0.5);
    if (!mode.ok())
      return std::move(mode).error();
    training = *mode != 0;
    if (training) {
      if (!r.ok())
        return std::move(r).error();
      ratio = *r;
    }
  }
  const DType maskType = ctx.opset() >= 10 ? DType::Bool : dtypeOf(x);
  Tensor mask(maskType, shapeOf(x));
  Outputs outs{x};
  if (!training || ratio == 0) {
    for (int64_t i = 0; i < mask.numel(); ++i)
      mask.setInt(i, 1);
  } else {
    // A random mask is reproducible only from a seed: the mask becomes a
    // constant drawn like numpy's np.random.seed(seed); uniform(0, 1) >= ratio,
    // which is how the ONNX reference defines the seeded output.
    if (!ctx.hasAttr("seed"))
      return ctx.error("training mode with ratio {} and no 'seed' attribute is not supported "
                       "(the output would be random)",
                       ratio);
    if (ratio < 0 || ratio >= 1)
      return ctx.error("'ratio' must be in [0, 1) in training mode, got {}", ratio);
    TS_ASSIGN_OR_RETURN(int64_t seed, ctx.attrInt("seed", 0));
    NumpyLegacyRandom rng{uint32_t(seed)};
    for (int64_t i = 0; i < mask.numel(); ++i)
      mask.setInt(i, rng.uniform() >= ratio ? 1 : 0);
    Tensor scale(dtypeOf(x), {});
    scale.setDouble(0, 1.0 / (1.0 - ratio));
    TS_ASSIGN_OR_RETURN(Expr keep, castTo(ctx, ctx.constant(mask), dtypeOf(x)));
    TS_ASSIGN_OR_RETURN(Expr kept, call2(ctx, "multiply", x, keep));
    TS_ASSIGN_OR_RETURN(outs[0], call2(ctx, "multiply", kept, ctx.constant(std::move(scale))));
  }
  if (ctx.numOutputs() >= 2)
    outs.push_back(ctx.constant(std::move(mask)));
  return outs;
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

Status add(ConverterRegistry &r, std::string opType, int64_t minOpset, Converter convert,
           std::string notes) {
  return r.add(
      ConverterSpec{std::move(opType), minOpset, kMaxOpset, std::move(convert), std::move(notes)});
}

} // namespace
} // namespace elementwise_detail

Status registerElementwiseConverters(ConverterRegistry &r) {
  using namespace elementwise_detail;
  // Binary arithmetic (opset 1-6: legacy 'broadcast'/'axis'; 7+: numpy).
  const char *legacy = "; opsets < 7: 'broadcast'/'axis' attributes";
  TS_RETURN_IF_ERROR(add(r, "Add", 1, binary("add"), std::string("core add") + legacy));
  TS_RETURN_IF_ERROR(add(r, "Sub", 1, binary("subtract"), std::string("core subtract") + legacy));
  TS_RETURN_IF_ERROR(add(r, "Mul", 1, binary("multiply"), std::string("core multiply") + legacy));
  TS_RETURN_IF_ERROR(
      add(r, "Div", 1, binary("divide"), std::string("core divide (integers truncate)") + legacy));
  TS_RETURN_IF_ERROR(add(r, "Sum", 1, variadic("add", false),
                         "one or more inputs, folded with core add (numpy broadcasting)"));
  TS_RETURN_IF_ERROR(add(r, "Mean", 1, variadic("add", true),
                         "one or more inputs: core add folded, then divide by the count"));

  // Unary math (opset 1 'consumed_inputs' is ignored).
  struct Unary {
    const char *onnx, *core;
    int64_t minOpset;
    const char *notes;
  };
  static const Unary unaries[] = {
      {"Neg", "neg", 1, "core neg; floats and signed integers"},
      {"Abs", "abs", 1, "core abs; every numeric dtype"},
      {"Sqrt", "sqrt", 1, "core sqrt; floats"},
      {"Exp", "exp", 1, "core exp; floats"},
      {"Log", "log", 1, "core log; floats"},
      {"Erf", "erf", 9, "core erf; floats"},
      {"Floor", "floor", 1, "core floor; floats"},
      {"Ceil", "ceil", 1, "core ceil; floats"},
      {"Round", "round", 11, "core round (half to even); floats"},
      {"Reciprocal", "reciprocal", 1, "core reciprocal; floats"},
      {"Sign", "sign", 9, "core sign; every numeric dtype"},
      {"Sin", "sin", 7, "core sin; floats"},
      {"Cos", "cos", 7, "core cos; floats"},
      {"Tan", "tan", 7, "core tan; floats"},
      {"Asin", "asin", 7, "core asin; floats"},
      {"Acos", "acos", 7, "core acos; floats"},
      {"Atan", "atan", 7, "core atan; floats"},
      {"Sinh", "sinh", 9, "core sinh; floats"},
      {"Cosh", "cosh", 9, "core cosh; floats"},
      {"Asinh", "asinh", 9, "core asinh; floats"},
      {"Acosh", "acosh", 9, "core acosh; floats"},
      {"Atanh", "atanh", 9, "core atanh; floats"},
      {"IsNaN", "isnan", 9, "core isnan; floats"},
      {"Not", "logical_not", 1, "core logical_not; bool"},
      {"Relu", "relu", 1, "core relu; floats and (opset 14) integers"},
      {"Sigmoid", "sigmoid", 1, "core sigmoid; floats"},
      {"Tanh", "tanh", 1, "core tanh; floats"},
      {"HardSwish", "hard_swish", 14, "core hard_swish; floats"},
  };
  for (const Unary &u : unaries)
    TS_RETURN_IF_ERROR(add(r, u.onnx, u.minOpset, unary(u.core), u.notes));

  // Activations with attributes or composed from core ops.
  TS_RETURN_IF_ERROR(add(r, "LeakyRelu", 1, convertLeakyRelu, "core leaky_relu; 'alpha'"));
  TS_RETURN_IF_ERROR(
      add(r, "HardSigmoid", 1, convertHardSigmoid, "core hard_sigmoid; 'alpha', 'beta'"));
  TS_RETURN_IF_ERROR(
      add(r, "Elu", 1, convertElu, "'alpha'; composed: where(x < 0, alpha*(exp(x)-1), x)"));
  TS_RETURN_IF_ERROR(add(r, "Selu", 1, convertSelu,
                         "'alpha', 'gamma'; composed from greater, exp, where, multiply"));
  TS_RETURN_IF_ERROR(add(r, "Celu", 12, convertCelu,
                         "'alpha'; composed: max(0, x) + min(0, alpha*(exp(x/alpha)-1))"));
  TS_RETURN_IF_ERROR(add(r, "Softplus", 1, convertSoftplus, "composed: log(exp(x) + 1)"));
  TS_RETURN_IF_ERROR(add(r, "Softsign", 1, convertSoftsign, "composed: x / (1 + |x|)"));
  TS_RETURN_IF_ERROR(add(r, "ThresholdedRelu", 10, convertThresholdedRelu,
                         "'alpha'; composed: where(x > alpha, x, 0)"));
  TS_RETURN_IF_ERROR(add(r, "Shrink", 9, convertShrink,
                         "'bias', 'lambd'; composed from less, greater, where (integers via f64)"));
  TS_RETURN_IF_ERROR(add(r, "PRelu", 1, convertPRelu,
                         "slope broadcast to x (opsets < 7: 1-D slope per channel); composed: "
                         "where(x < 0, x * slope, x)"));
  TS_RETURN_IF_ERROR(add(r, "Clip", 1, convertClip,
                         "bounds as attributes (< 11) or optional scalar inputs (11+, constant "
                         "or not); integer dtypes too"));

  // Comparisons and logic (opsets < 7: legacy broadcast attributes).
  TS_RETURN_IF_ERROR(add(r, "Equal", 1, binary("equal"), std::string("core equal") + legacy));
  TS_RETURN_IF_ERROR(add(r, "Less", 1, binary("less"), std::string("core less") + legacy));
  TS_RETURN_IF_ERROR(add(r, "Greater", 1, binary("greater"), std::string("core greater") + legacy));
  TS_RETURN_IF_ERROR(add(r, "LessOrEqual", 12, binary("less_equal"), "core less_equal"));
  TS_RETURN_IF_ERROR(add(r, "GreaterOrEqual", 12, binary("greater_equal"), "core greater_equal"));
  TS_RETURN_IF_ERROR(
      add(r, "And", 1, binary("logical_and"), std::string("core logical_and") + legacy));
  TS_RETURN_IF_ERROR(
      add(r, "Or", 1, binary("logical_or"), std::string("core logical_or") + legacy));
  TS_RETURN_IF_ERROR(
      add(r, "Xor", 1, binary("logical_xor"), std::string("core logical_xor") + legacy));
  TS_RETURN_IF_ERROR(
      add(r, "IsInf", 10, convertIsInf, "core isinf; 'detect_positive', 'detect_negative'"));
  TS_RETURN_IF_ERROR(add(
      r, "Where", 9,
      [](NodeContext &ctx) -> Expected<Outputs> {
        TS_ASSIGN_OR_RETURN(Expr c, tensorInput(ctx, 0));
        TS_ASSIGN_OR_RETURN(Expr x, tensorInput(ctx, 1));
        TS_ASSIGN_OR_RETURN(Expr y, tensorInput(ctx, 2));
        return single(call3(ctx, "where", c, x, y));
      },
      "core where; three-way numpy broadcasting"));

  // Arithmetic on every integer dtype (i8..i64, u8..u64) and float.
  TS_RETURN_IF_ERROR(
      add(r, "Pow", 1, convertPow,
          std::string("core power; mixed base/exponent dtypes via i64 or f64") + legacy));
  TS_RETURN_IF_ERROR(add(r, "Mod", 10, convertMod, "core mod; 'fmod'"));
  TS_RETURN_IF_ERROR(add(r, "Max", 1, variadic("maximum", false),
                         "one or more inputs, folded with core maximum"));
  TS_RETURN_IF_ERROR(add(r, "Min", 1, variadic("minimum", false),
                         "one or more inputs, folded with core minimum"));
  TS_RETURN_IF_ERROR(add(r, "BitShift", 11, convertBitShift,
                         "core bit_shift; 'direction' LEFT/RIGHT; unsigned integers"));

  TS_RETURN_IF_ERROR(add(r, "Identity", 1, convertIdentity,
                         "tensors, sequences and present optionals"));

  // Casts to or from STRING (no string dtype in the IR) are rejected by the
  // importer as "Cast (to STRING)" / "CastLike (STRING)".
  TS_RETURN_IF_ERROR(add(r, "Cast", 6, convertCast, "core cast between the IR's dtypes"));
  TS_RETURN_IF_ERROR(add(r, "CastLike", 15, convertCastLike, "core cast to input 1's dtype"));
  TS_RETURN_IF_ERROR(add(r, "Dropout", 1, convertDropout,
                         "inference: identity, mask all true; training mode: ratio 0, or a "
                         "'seed' (mask drawn like numpy's seeded RandomState)"));
  return okStatus();
}

} // namespace tessera::frontend::onnx
