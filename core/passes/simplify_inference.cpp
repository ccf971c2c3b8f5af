//===- passes/simplify_inference.cpp - Inference-time simplification -----===//
//
// 1. batch_norm(x, gamma, beta, mean, var) becomes x * scale + shift with
//      scale = gamma / sqrt(var + epsilon),  shift = beta - mean * scale,
//    reshaped to broadcast along the channel axis. With constant parameters
//    scale and shift are computed here (in double); otherwise as ops.
// 2. A per-channel constant scale of a conv2d or dense with constant weights
//    is folded into the weights: conv2d(x, W) * s -> conv2d(x, W * s), also
//    through a bias (bias_add(conv2d(x, W), b) * s -> bias_add(conv2d(x, W*s), b*s)).
// 3. A per-channel constant added to a conv2d or dense becomes its bias:
//    conv2d(x, W) + t -> bias_add(conv2d(x, W), t); bias_add(P, b) + t ->
//    bias_add(P, b + t).
// Folding happens only when the conv2d/dense has no other user. Run
// fold-constants afterwards for parameters that were not constants.
// 4. A conv2d with constant weights drops the kernel rows and columns that
//    read only padding for every output (a dilated conv wider than its
//    input: DeepLabV3's ASPP at rates 12 to 36 on a 14x14 map is a 1x1 conv
//    in effect), with its pads reduced by what the dropped taps spanned.
//    Padding taps add nothing (the reference skips them), so the outputs
//    are the same, bit for bit; the work and the weights shrink.
// A batch_norm whose constant parameters make a scale or shift that is not
// finite (variance + epsilon = 0, or an overflow in the dtype) stays as it
// is: there it divides by zero, and x * scale + shift would not give the
// same infinities and NaNs. (With parameters that are not constants this is
// known only when the model runs; the decomposed form is used.)
//
//===----------------------------------------------------------------------===//
#include "passes/pass.h"

#include "ir/visit.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <unordered_map>

namespace tessera::passes {

using namespace ir;

namespace {

const Tensor *constantOf(const Expr &e) {
  const auto *k = e->as<ConstantNode>();
  return k ? &k->data() : nullptr;
}

const CallNode *callOf(const Expr &e, std::string_view op) {
  const auto *c = e->as<CallNode>();
  return c && c->op() && c->op()->name == op ? c : nullptr;
}

/// The channel axis of a conv2d (1) or dense (last) result, if `e` is one
/// with constant weights.
std::optional<size_t> producerChannelAxis(const Expr &e) {
  if (const auto *c = callOf(e, "conv2d"); c && constantOf(c->args()[1]))
    return 1;
  if (const auto *c = callOf(e, "dense"); c && constantOf(c->args()[1]))
    return e->type().rank() - 1;
  return std::nullopt;
}

/// If `t` broadcast against `outShape` varies only along `axis` (and does not
/// grow the result), its C values along that axis.
std::optional<std::vector<double>> perChannel(const Tensor &t, const Shape &outShape,
                                              size_t axis) {
  if (t.rank() > outShape.size())
    return std::nullopt;
  size_t offset = outShape.size() - t.rank();
  int64_t channels = outShape[axis];
  bool alongAxis = false;
  for (size_t i = 0; i < t.rank(); ++i) {
    int64_t d = t.shape()[i];
    if (offset + i == axis && d == channels && d != 1)
      alongAxis = true;
    else if (d != 1)
      return std::nullopt;
  }
  std::vector<double> out(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c)
    out[size_t(c)] = t.getDouble(alongAxis ? c : 0);
  return out;
}

/// Multiplies slice c of `w` along dim 0 by s[c].
Tensor scaleRows(const Tensor &w, const std::vector<double> &s) {
  Tensor out(w.dtype(), w.shape());
  int64_t rows = w.shape()[0], inner = w.numel() / std::max<int64_t>(rows, 1);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < inner; ++i)
      out.setDouble(r * inner + i, w.getDouble(r * inner + i) * s[size_t(r)]);
  return out;
}

Tensor vectorOf(DType dtype, const std::vector<double> &v) {
  return Tensor::fromDoubles(dtype, {int64_t(v.size())}, v);
}

const PassInfo kSimplifyInferenceInfo{
    "simplify-inference",
    "Decompose batch_norm, fold per-channel scales and shifts into conv2d/dense weights and "
    "biases, drop conv2d taps that read only padding",
    "Turns `batch_norm` into a multiply and add, folds per-channel scales into the weights "
    "of a preceding `conv2d`/`dense` and per-channel shifts into its `bias_add`. A "
    "`batch_norm` whose constant parameters give a scale or shift that is not finite "
    "(variance + epsilon = 0) stays: there it divides by zero, and the decomposed form "
    "would put NaNs elsewhere. A `conv2d` with constant weights drops the kernel rows and "
    "columns that read only padding for every output, and the pads they spanned (a dilated "
    "conv wider than its input, as DeepLabV3's ASPP at rates 12-36 on a 14x14 map, becomes "
    "the 1x1 conv it is in effect); the outputs are the same bit for bit.",
    {
        {"batch-norms-decomposed", "batch_norms turned into a multiply and an add"},
        {"batch-norms-kept", "batch_norms kept because their scale or shift is not finite"},
        {"scales-folded", "per-channel scales folded into conv2d/dense weights"},
        {"biases-folded", "per-channel shifts folded into a bias_add"},
        {"conv-padding-taps-dropped",
         "conv2d kernel taps dropped because they read only padding"},
    }};

class SimplifyInference final : public FunctionPass {
public:
  const PassInfo &info() const override { return kSimplifyInferenceInfo; }

  Expected<Function> runOnFunction(const Module &, const std::string &, const Function &f,
                                   PassContext &ctx) override {
    auto uses = useCounts(f->body());
    // Uses of each rebuilt node, carried over from the node it replaces.
    std::unordered_map<const ExprNode *, int> rebuiltUses;
    auto singleUse = [&](const Expr &e) {
      auto it = rebuiltUses.find(e.get());
      return it != rebuiltUses.end() && it->second == 1;
    };
    return rewriteFunction(f, [&](const Expr &orig, const Expr &node) -> Expected<Expr> {
      Expr result = node;
      if (const auto *bn = callOf(node, "batch_norm")) {
        TS_ASSIGN_OR_RETURN(result, decomposeBatchNorm(node, *bn, ctx));
        // The multiply created here may fold into the producer right away.
        if (const auto *add = callOf(result, "add"))
          if (add->args()[0]->as<CallNode>()) {
            TS_ASSIGN_OR_RETURN(Expr folded, foldMultiply(add->args()[0], singleUse, ctx));
            TS_ASSIGN_OR_RETURN(result, makeCall("add", {folded, add->args()[1]}, {}, add->name(),
                                                 add->span()));
            rebuiltUses[folded.get()] = 1;
            TS_ASSIGN_OR_RETURN(result, foldAdd(result, singleUse, ctx));
          }
      } else if (const auto *conv = callOf(node, "conv2d")) {
        TS_ASSIGN_OR_RETURN(result, trimPaddingTaps(node, *conv, ctx));
      } else if (callOf(node, "multiply")) {
        TS_ASSIGN_OR_RETURN(result, foldMultiply(node, singleUse, ctx));
      } else if (callOf(node, "add")) {
        TS_ASSIGN_OR_RETURN(result, foldAdd(node, singleUse, ctx));
      }
      rebuiltUses[result.get()] = uses[orig.get()];
      return result;
    });
  }

private:
  /// add(multiply(x, scale), shift), or `node` itself when constant
  /// parameters give a scale or shift that is not finite (a variance plus
  /// epsilon of 0): there batch_norm divides by zero, and the decomposed form
  /// would make other elements NaN than batch_norm does.
  static Expected<Expr> decomposeBatchNorm(const Expr &node, const CallNode &bn,
                                           PassContext &ctx) {
    const Expr &x = bn.args()[0];
    size_t rank = x->type().rank();
    TS_ASSIGN_OR_RETURN(int64_t axis, [&]() -> Expected<int64_t> {
      int64_t a = bn.attrs().getInt("axis");
      return a < 0 ? a + int64_t(rank) : a;
    }());
    double eps = bn.attrs().getFloat("epsilon");
    DType dtype = x->type().dtype();
    int64_t channels = x->type().shape()[size_t(axis)];
    // [C, 1, ..., 1]: broadcasts along `axis` of x.
    Shape bshape(rank - size_t(axis), 1);
    bshape[0] = channels;

    const Tensor *g = constantOf(bn.args()[1]), *b = constantOf(bn.args()[2]),
                 *mean = constantOf(bn.args()[3]), *var = constantOf(bn.args()[4]);
    Expr scale, shift;
    if (g && b && mean && var) {
      std::vector<double> s(static_cast<size_t>(channels)), t(static_cast<size_t>(channels));
      for (int64_t c = 0; c < channels; ++c) {
        s[size_t(c)] = g->getDouble(c) / std::sqrt(var->getDouble(c) + eps);
        t[size_t(c)] = b->getDouble(c) - mean->getDouble(c) * s[size_t(c)];
      }
      Tensor st = Tensor::fromDoubles(dtype, bshape, s), tt = Tensor::fromDoubles(dtype, bshape, t);
      for (int64_t c = 0; c < channels; ++c)
        if (!std::isfinite(st.getDouble(c)) || !std::isfinite(tt.getDouble(c))) {
          ++ctx.stat("batch-norms-kept");
          return node;
        }
      scale = makeConstant(std::move(st));
      shift = makeConstant(std::move(tt));
    } else {
      Expr epsC = makeConstant(Tensor::fromDoubles(dtype, {}, std::vector<double>{eps}));
      TS_ASSIGN_OR_RETURN(Expr ve, makeCall("add", {bn.args()[4], epsC}));
      TS_ASSIGN_OR_RETURN(Expr sd, makeCall("sqrt", {ve}));
      TS_ASSIGN_OR_RETURN(Expr s, makeCall("divide", {bn.args()[1], sd}));
      TS_ASSIGN_OR_RETURN(Expr ms, makeCall("multiply", {bn.args()[3], s}));
      TS_ASSIGN_OR_RETURN(Expr t, makeCall("subtract", {bn.args()[2], ms}));
      Attrs reshape{{"newshape", std::vector<int64_t>(bshape.begin(), bshape.end())}};
      TS_ASSIGN_OR_RETURN(scale, makeCall("reshape", {s}, reshape));
      TS_ASSIGN_OR_RETURN(shift, makeCall("reshape", {t}, reshape));
    }
    ++ctx.stat("batch-norms-decomposed");
    TS_ASSIGN_OR_RETURN(Expr scaled, makeCall("multiply", {x, scale}));
    return makeCall("add", {scaled, shift}, {}, bn.name(), bn.span());
  }

  /// conv2d(x, W) with the taps of W that read only padding dropped (4.).
  static Expected<Expr> trimPaddingTaps(const Expr &node, const CallNode &conv,
                                        PassContext &ctx) {
    const Tensor *w = constantOf(conv.args()[1]);
    const Type &xt = conv.args()[0]->type();
    if (!w || !xt.isTensor() || xt.rank() != 4 || w->shape().size() != 4 ||
        !node->type().isTensor())
      return node;
    const Shape &xs = xt.shape(), &ws = w->shape(), &ys = node->type().shape();
    std::vector<int64_t> strides = conv.attrs().getInts("strides"),
                         dilation = conv.attrs().getInts("dilation"),
                         pads = conv.attrs().getInts("pads");
    int64_t lo[2], hi[2]; // the live taps [lo, hi) of rows and columns
    for (size_t d = 0; d < 2; ++d) {
      int64_t in = xs[2 + d], out = ys[2 + d], s = strides[d], dl = dilation[d], p = pads[d];
      lo[d] = ws[2 + d], hi[d] = 0;
      for (int64_t t = 0; t < ws[2 + d]; ++t) {
        // Tap t reads input positions first + m*s, m in [0, out).
        int64_t first = t * dl - p;
        int64_t m = first >= 0 ? 0 : (-first + s - 1) / s;
        if (m < out && first + m * s < in)
          lo[d] = std::min(lo[d], t), hi[d] = t + 1;
      }
      if (lo[d] >= hi[d])
        return node; // every tap reads padding: leave it to the kernels
    }
    if (lo[0] == 0 && hi[0] == ws[2] && lo[1] == 0 && hi[1] == ws[3])
      return node;
    std::vector<int64_t> newPads{pads[0] - lo[0] * dilation[0], pads[1] - lo[1] * dilation[1],
                                 pads[2] - (ws[2] - hi[0]) * dilation[0],
                                 pads[3] - (ws[3] - hi[1]) * dilation[1]};
    if (std::any_of(newPads.begin(), newPads.end(), [](int64_t v) { return v < 0; }))
      return node; // the live taps reach past the input's edge: it would need a crop
    Tensor trimmed(w->dtype(), Shape{ws[0], ws[1], hi[0] - lo[0], hi[1] - lo[1]});
    size_t esize = dtypeSize(w->dtype());
    uint8_t *dst = trimmed.bytes();
    for (int64_t oc = 0; oc < ws[0] * ws[1]; ++oc)
      for (int64_t kh = lo[0]; kh < hi[0]; ++kh) {
        size_t row = size_t(hi[1] - lo[1]) * esize;
        std::memcpy(dst, w->bytes() + size_t((oc * ws[2] + kh) * ws[3] + lo[1]) * esize, row);
        dst += row;
      }
    Attrs attrs = conv.attrs();
    attrs.set("pads", newPads);
    TS_ASSIGN_OR_RETURN(Expr trimmedConv,
                        makeCall(conv.op(), {conv.args()[0], makeConstant(std::move(trimmed))},
                                 std::move(attrs), conv.name(), conv.span()));
    if (trimmedConv->type() != node->type())
      return node;
    ++ctx.stat("conv-padding-taps-dropped");
    return trimmedConv;
  }

  /// multiply(P, s) with P = conv2d/dense or bias_add(conv2d/dense, b).
  template <typename SingleUse>
  static Expected<Expr> foldMultiply(const Expr &node, SingleUse &singleUse, PassContext &ctx) {
    const auto *mul = node->as<CallNode>();
    const Tensor *s = constantOf(mul->args()[1]);
    Expr producer = mul->args()[0];
    if (!s || !singleUse(producer))
      return node;
    const CallNode *biasAdd = callOf(producer, "bias_add");
    Expr inner = biasAdd ? biasAdd->args()[0] : producer;
    if (biasAdd && (!singleUse(inner) || !constantOf(biasAdd->args()[1])))
      return node;
    auto axis = producerChannelAxis(inner);
    if (!axis || s->dtype() != inner->type().dtype())
      return node;
    auto scales = perChannel(*s, inner->type().shape(), *axis);
    if (!scales)
      return node;
    if (biasAdd && biasAdd->attrs().getInt("axis") != int64_t(*axis) &&
        biasAdd->attrs().getInt("axis") != int64_t(*axis) - int64_t(inner->type().rank()))
      return node;
    const auto *p = inner->as<CallNode>();
    Expr w = makeConstant(scaleRows(*constantOf(p->args()[1]), *scales));
    TS_ASSIGN_OR_RETURN(Expr scaled, makeCall(p->op(), {p->args()[0], w}, p->attrs(), p->name(),
                                              p->span()));
    ++ctx.stat("scales-folded");
    if (!biasAdd)
      return scaled;
    const Tensor &b = *constantOf(biasAdd->args()[1]);
    std::vector<double> nb(scales->size());
    for (size_t c = 0; c < nb.size(); ++c)
      nb[c] = b.getDouble(int64_t(c)) * (*scales)[c];
    return makeCall("bias_add", {scaled, makeConstant(vectorOf(b.dtype(), nb))},
                    biasAdd->attrs(), biasAdd->name(), biasAdd->span());
  }

  /// add(P, t) with t per-channel: a bias of P.
  template <typename SingleUse>
  static Expected<Expr> foldAdd(const Expr &node, SingleUse &singleUse, PassContext &ctx) {
    const auto *add = node->as<CallNode>();
    const Tensor *t = constantOf(add->args()[1]);
    Expr producer = add->args()[0];
    if (!t || t->dtype() != producer->type().dtype())
      return node;
    if (const CallNode *biasAdd = callOf(producer, "bias_add")) {
      const Tensor *b = constantOf(biasAdd->args()[1]);
      auto axis = producerChannelAxis(biasAdd->args()[0]);
      if (!b || !axis || !singleUse(producer))
        return node;
      auto shifts = perChannel(*t, producer->type().shape(), *axis);
      if (!shifts || int64_t(shifts->size()) != b->numel())
        return node;
      std::vector<double> nb(shifts->size());
      for (size_t c = 0; c < nb.size(); ++c)
        nb[c] = b->getDouble(int64_t(c)) + (*shifts)[c];
      ++ctx.stat("biases-folded");
      return makeCall("bias_add", {biasAdd->args()[0], makeConstant(vectorOf(b->dtype(), nb))},
                      biasAdd->attrs(), add->name(), add->span());
    }
    auto axis = producerChannelAxis(producer);
    if (!axis)
      return node;
    auto shifts = perChannel(*t, producer->type().shape(), *axis);
    if (!shifts)
      return node;
    ++ctx.stat("biases-folded");
    return makeCall("bias_add", {producer, makeConstant(vectorOf(t->dtype(), *shifts))},
                    {{"axis", int64_t(*axis)}}, add->name(), add->span());
  }
};

} // namespace

std::unique_ptr<Pass> createSimplifyInferencePass() {
  return std::make_unique<SimplifyInference>();
}

} // namespace tessera::passes
