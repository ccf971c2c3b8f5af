//===- passes/fuse_activations.cpp - Decomposed activations as one op ----===//
//
// Exporters write activations that ONNX (up to opset 17) has no op for as
// chains of arithmetic. This pass recognises them and puts the one core op
// in their place, so that a backend sees one activation it can fuse into the
// producing convolution or matmul (oneDNN's eltwise post-ops) or run in one
// pass over memory, instead of three to five elementwise ops:
//
//   hard_sigmoid  clip(x + 3, 0, 6) / 6           (also * (1/6); in general
//                 clip(x + b, lo, hi) * s with lo * s = 0 and hi * s = 1)
//   hard_swish    x * hard_sigmoid(x) with alpha = 1/6, beta = 1/2;
//                 x * clip(x + 3, 0, 6) / 6 grouped as (x * clip) / 6
//   silu          x * sigmoid(x)                   (SiLU, swish; EfficientNet)
//   mish          x * tanh(log(1 + exp(x)))        (ONNX Softplus as imported; YOLOv4)
//   gelu          x * 0.5 * (1 + erf(x / sqrt(2))) in any grouping of the
//                 three factors, with x * (1/sqrt(2)) as well
//                 (torch.onnx's F.gelu; approximate = "none")
//   gelu (tanh)   0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
//                 with x^3 as power(x, 3) or x * x * x (approximate = "tanh")
//
// Bottom-up, so forms compose: clip(x + 3, 0, 6) / 6 becomes hard_sigmoid
// first, and x * hard_sigmoid(x) then hard_swish. Every node a form swallows,
// other than x, must have no other user; constants must be scalars (one
// element) that do not broadcast the result; everything must be floats of
// one dtype. Constants are matched to within float32 rounding (1e-6
// relative), since exporters write f32 literals of 1/sqrt(2) and sqrt(2/pi).
//
// The fused op computes the same function; the results differ from the
// chain's by float rounding only (the chain rounds after every step).
//
//===----------------------------------------------------------------------===//
#include "passes/pass.h"

#include "ir/visit.h"

#include <cmath>
#include <numbers>
#include <optional>
#include <unordered_map>

namespace tessera::passes {

using namespace ir;

namespace {

const CallNode *callOf(const Expr &e, std::string_view op) {
  const auto *c = e->as<CallNode>();
  return c && c->calleeKind() == CallNode::CalleeKind::Op && c->op() && c->op()->name == op
             ? c
             : nullptr;
}

/// The value of a one-element float constant.
std::optional<double> scalarOf(const Expr &e) {
  const auto *k = e->as<ConstantNode>();
  if (!k || k->data().numel() != 1 || !isFloat(k->data().dtype()))
    return std::nullopt;
  return k->data().getDouble(0);
}

bool near(std::optional<double> v, double want) {
  return v && std::abs(*v - want) <= 1e-6 * std::max(1.0, std::abs(want));
}

bool sameType(const Expr &a, const Expr &b) {
  return a->type() == b->type();
}

const PassInfo kFuseActivationsInfo{
    "fuse-activations",
    "Replace decomposed activations (hard_sigmoid, hard_swish, silu, mish, gelu) by one op",
    "Puts one op in place of the activations exporters decompose (ONNX up to opset 17 has "
    "no op for them): `clip(x + 3, 0, 6) / 6` becomes `hard_sigmoid`, `x * hard_sigmoid(x)` "
    "and `x * clip(x + 3, 0, 6) / 6` `hard_swish`, `x * sigmoid(x)` `silu`, `x * "
    "tanh(log(exp(x) + 1))` (ONNX Softplus as imported) `mish`, `x * 0.5 * (1 + erf(x / "
    "sqrt 2))` (any grouping) and its tanh approximation `gelu`. Nodes a form swallows must "
    "have no other user; constants must be scalars, matched to 1e-6 relative. A backend "
    "then fuses one activation into the producing convolution or matmul (oneDNN post-ops) "
    "or runs it in one pass.",
    {
        {"fused-hard_sigmoid", "hard_sigmoid forms replaced"},
        {"fused-hard_swish", "hard_swish forms replaced"},
        {"fused-silu", "silu forms replaced"},
        {"fused-mish", "mish forms replaced"},
        {"fused-gelu", "gelu forms replaced (erf or tanh)"},
    }};

class FuseActivations final : public FunctionPass {
public:
  const PassInfo &info() const override { return kFuseActivationsInfo; }

  Expected<Function> runOnFunction(const Module &, const std::string &, const Function &f,
                                   PassContext &ctx) override {
    auto uses = useCounts(f->body());
    // Uses of each rebuilt node, carried over from the node it replaces.
    std::unordered_map<const ExprNode *, int> rebuiltUses;
    Matcher m{rebuiltUses, nullptr};
    return rewriteFunction(f, [&](const Expr &orig, const Expr &node) -> Expected<Expr> {
      Expr result = node;
      const auto *c = node->as<CallNode>();
      if (c && c->calleeKind() == CallNode::CalleeKind::Op && isFloatTensor(node)) {
        m.root = node.get();
        if (std::optional<Fused> fused = m.match(node, *c)) {
          TS_ASSIGN_OR_RETURN(Expr e, makeCall(fused->op, {fused->x}, std::move(fused->attrs),
                                                c->name(), c->span()));
          // (Every form keeps the type; a relation that disagrees keeps the chain.)
          if (e->type() == node->type()) {
            result = std::move(e);
            ++ctx.stat("fused-" + fused->op);
          }
        }
      }
      rebuiltUses[result.get()] = uses[orig.get()];
      return result;
    });
  }

private:
  static bool isFloatTensor(const Expr &e) {
    return e->type().isTensor() && isFloat(e->type().dtype());
  }

  /// The one op that replaces a matched form: op(x) with `attrs`.
  struct Fused {
    std::string op;
    Expr x;
    Attrs attrs;
  };

  struct Matcher {
    std::unordered_map<const ExprNode *, int> &uses;
    /// The node being matched: it is replaced whole, so it may have any
    /// number of users.
    const ExprNode *root;

    bool single(const Expr &e) const {
      if (e.get() == root)
        return true;
      auto it = uses.find(e.get());
      return it != uses.end() && it->second == 1;
    }

    /// `e` is `op(x, k)` or `op(k, x)` (commuting ops) with a scalar k, x of
    /// the result's type, and no other user: x and k.
    std::optional<std::pair<Expr, double>> withScalar(const Expr &e, std::string_view op,
                                                      bool commutes) const {
      const CallNode *c = callOf(e, op);
      if (!c || c->args().size() != 2 || !single(e))
        return std::nullopt;
      for (int i : {0, 1}) {
        if (i == 0 && !commutes)
          continue;
        const Expr &x = c->args()[size_t(1 - i)];
        if (auto k = scalarOf(c->args()[size_t(i)]); k && sameType(x, e))
          return std::pair{x, *k};
      }
      return std::nullopt;
    }

    /// `e` = x * k or x / k with a scalar k: x and the factor (1/k).
    std::optional<std::pair<Expr, double>> scaled(const Expr &e) const {
      if (auto m = withScalar(e, "multiply", true))
        return m;
      if (auto d = withScalar(e, "divide", false); d && d->second != 0)
        return std::pair{d->first, 1.0 / d->second};
      return std::nullopt;
    }

    /// clip(x + b, lo, hi) (or clip(x, lo, hi): b = 0), with no other user:
    /// x, b, lo, hi.
    struct ClipOfShift {
      Expr x;
      double b, lo, hi;
    };
    std::optional<ClipOfShift> clipOfShift(const Expr &e) const {
      const CallNode *c = callOf(e, "clip");
      if (!c || !single(e))
        return std::nullopt;
      double lo = c->attrs().getFloat("min"), hi = c->attrs().getFloat("max");
      if (!std::isfinite(lo) || !std::isfinite(hi))
        return std::nullopt;
      const Expr &in = c->args()[0];
      if (auto a = withScalar(in, "add", true))
        return ClipOfShift{a->first, a->second, lo, hi};
      if (auto s = withScalar(in, "subtract", false))
        return ClipOfShift{s->first, -s->second, lo, hi};
      return ClipOfShift{in, 0.0, lo, hi};
    }

    /// clip(x + b, lo, hi) * s with lo * s = 0 and hi * s = 1:
    /// hard_sigmoid(x, alpha = s, beta = b * s).
    std::optional<Fused> hardSigmoid(const Expr &node) const {
      auto sc = scaled(node);
      if (!sc || !callOf(sc->first, "clip"))
        return std::nullopt;
      auto clip = clipOfShift(sc->first);
      double s = sc->second;
      if (!clip || !near(clip->lo * s, 0.0) || !near(clip->hi * s, 1.0))
        return std::nullopt;
      return Fused{"hard_sigmoid", clip->x, {{"alpha", s}, {"beta", clip->b * s}}};
    }

    /// The factors of a product of single-use multiplies rooted at `node`,
    /// at most `limit` (deeper products stay one factor).
    void factors(const Expr &node, std::vector<Expr> &out, size_t limit) const {
      const CallNode *c = callOf(node, "multiply");
      if (c && single(node) && out.size() + 2 <= limit) {
        factors(c->args()[0], out, limit - 1);
        factors(c->args()[1], out, limit);
        return;
      }
      // A scalar factor may broadcast: it is kept as it is.
      out.push_back(node);
    }

    /// 1 + f(...) with f = `op`, no other user: f's argument.
    std::optional<Expr> onePlus(const Expr &e, std::string_view op) const {
      auto a = withScalar(e, "add", true);
      if (!a || !near(a->second, 1.0))
        return std::nullopt;
      const CallNode *f = callOf(a->first, op);
      if (!f || !single(a->first))
        return std::nullopt;
      return f->args()[0];
    }

    /// x^3 as power(x, 3) or a product x * x * x: x.
    std::optional<Expr> cube(const Expr &e) const {
      if (const CallNode *p = callOf(e, "power"); p && single(e) && near(scalarOf(p->args()[1]), 3))
        return p->args()[0];
      std::vector<Expr> fs;
      factors(e, fs, 3);
      if (fs.size() == 3 && fs[0] == fs[1] && fs[1] == fs[2] && single(e))
        return fs[0];
      return std::nullopt;
    }

    /// The argument of erf in gelu: x / sqrt(2) or x * (1 / sqrt(2)).
    std::optional<Expr> erfArg(const Expr &e) const {
      auto sc = scaled(e);
      if (sc && near(sc->second, 1.0 / std::numbers::sqrt2))
        return sc->first;
      return std::nullopt;
    }

    /// The argument of tanh in tanh-gelu: sqrt(2/pi) * (x + 0.044715 x^3).
    std::optional<Expr> tanhArg(const Expr &e) const {
      auto sc = scaled(e);
      if (!sc || !near(sc->second, std::sqrt(2.0 / std::numbers::pi)))
        return std::nullopt;
      const CallNode *add = callOf(sc->first, "add");
      if (!add || !single(sc->first))
        return std::nullopt;
      for (int i : {0, 1}) {
        const Expr &x = add->args()[size_t(i)];
        auto k = scaled(add->args()[size_t(1 - i)]);
        if (k && near(k->second, 0.044715)) {
          if (auto c = cube(k->first); c && *c == x)
            return x;
        }
      }
      return std::nullopt;
    }

    /// x * 0.5 * (1 + erf(x / sqrt 2)), or the tanh form, in any grouping.
    std::optional<Fused> gelu(const Expr &node) const {
      std::vector<Expr> fs;
      factors(node, fs, 3);
      if (fs.size() != 3)
        return std::nullopt;
      // One factor 0.5, one x, one 1 + erf(x / sqrt 2) (or 1 + tanh(...)).
      for (size_t h = 0; h < 3; ++h) {
        if (!near(scalarOf(fs[h]), 0.5))
          continue;
        for (size_t xi = 0; xi < 3; ++xi) {
          if (xi == h || !sameType(fs[xi], node))
            continue;
          const Expr &x = fs[xi], &rest = fs[3 - h - xi];
          if (auto e = onePlus(rest, "erf"); e && erfArg(*e) == x)
            return Fused{"gelu", x, {{"approximate", std::string("none")}}};
          if (auto t = onePlus(rest, "tanh"); t && tanhArg(*t) == x)
            return Fused{"gelu", x, {{"approximate", std::string("tanh")}}};
        }
      }
      return std::nullopt;
    }

    /// log(1 + exp(x)) (ONNX Softplus as the importer composes it), with no
    /// other user: x.
    std::optional<Expr> softplusOf(const Expr &e) const {
      const CallNode *l = callOf(e, "log");
      if (!l || !single(e))
        return std::nullopt;
      return onePlus(l->args()[0], "exp");
    }

    /// x * g(x) for a gate g: silu for sigmoid, hard_swish for
    /// hard_sigmoid(1/6, 1/2), mish for tanh(softplus(x)).
    std::optional<Fused> gated(const Expr &node, const CallNode &mul) const {
      for (int i : {0, 1}) {
        const Expr &x = mul.args()[size_t(i)], &g = mul.args()[size_t(1 - i)];
        if (!sameType(x, node) || !single(g))
          continue;
        if (const CallNode *s = callOf(g, "sigmoid"); s && s->args()[0] == x)
          return Fused{"silu", x, {}};
        if (const CallNode *h = callOf(g, "hard_sigmoid");
            h && h->args()[0] == x && near(h->attrs().getFloat("alpha"), 1.0 / 6) &&
            near(h->attrs().getFloat("beta"), 0.5))
          return Fused{"hard_swish", x, {}};
        if (const CallNode *t = callOf(g, "tanh"); t && softplusOf(t->args()[0]) == x)
          return Fused{"mish", x, {}};
      }
      return std::nullopt;
    }

    /// (x * clip(x + 3, 0, 6)) / 6: hard_swish.
    std::optional<Fused> hardSwishAfter(const Expr &node) const {
      auto sc = scaled(node);
      if (!sc || !near(sc->second, 1.0 / 6))
        return std::nullopt;
      const CallNode *mul = callOf(sc->first, "multiply");
      if (!mul || !single(sc->first))
        return std::nullopt;
      for (int i : {0, 1}) {
        const Expr &x = mul->args()[size_t(i)];
        auto clip = clipOfShift(mul->args()[size_t(1 - i)]);
        if (clip && clip->x == x && sameType(x, node) && near(clip->b, 3) &&
            near(clip->lo, 0) && near(clip->hi, 6))
          return Fused{"hard_swish", x, {}};
      }
      return std::nullopt;
    }

    std::optional<Fused> match(const Expr &node, const CallNode &c) const {
      std::string_view op = c.op()->name;
      if (op != "multiply" && op != "divide")
        return std::nullopt;
      if (auto r = hardSigmoid(node))
        return r;
      if (auto r = hardSwishAfter(node))
        return r;
      if (op != "multiply")
        return std::nullopt;
      if (auto r = gated(node, c))
        return r;
      return gelu(node);
    }
  };
};

} // namespace

std::unique_ptr<Pass> createFuseActivationsPass() {
  return std::make_unique<FuseActivations>();
}

} // namespace tessera::passes
