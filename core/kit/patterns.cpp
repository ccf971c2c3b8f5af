//===- kit/patterns.cpp - Pattern instantiation ---------------------------===//
//
// Pattern instantiation for the vendor conformance kit: graphs a plugin's
// pattern matches (every alternative, every optional op present and
// absent), shaped from the ops' first catalogue samples, with attribute
// predicates satisfied, matched and outlined as composites exactly as the
// partitioner outlines them. See kit.h.
//
//===----------------------------------------------------------------------===//
#include "kit/kit.h"

#include "ir/op.h"
#include "bridge/plugin_bridge.h"
#include "kit/internal.h"

#include <algorithm>
#include <set>

namespace tessera::kit {

using ir::Attrs;
using ir::DType;
using ir::Shape;
using ir::Type;
using Ints = std::vector<int64_t>;

using detail::compactType;
using detail::f32;
using detail::hashString;
using detail::I;
using detail::withDType;

namespace {

//===----------------------------------------------------------------------===//
// Pattern instantiation
//===----------------------------------------------------------------------===//

/// A pattern with every choice made: one op per op term, optional ops
/// present or dropped, one alternative per alternation.
struct Concrete {
  bridge::PatternNode::Kind kind = bridge::PatternNode::Kind::Any; // Any, Const or Op
  const ir::Op *op = nullptr;
  const bridge::PatternNode *src = nullptr;
  std::vector<Concrete> args;

  std::string str() const {
    if (kind == bridge::PatternNode::Kind::Any)
      return "*";
    if (kind == bridge::PatternNode::Kind::Const)
      return "const";
    std::string s = op->name + "(";
    for (size_t i = 0; i < args.size(); ++i)
      s += (i ? ", " : "") + args[i].str();
    return s + ")";
  }
};

/// The op terms of a concrete pattern.
int opCount(const Concrete &c) {
  int n = c.kind == bridge::PatternNode::Kind::Op;
  for (const Concrete &a : c.args)
    n += opCount(a);
  return n;
}

std::vector<Concrete> variants(const bridge::PatternNode &p) {
  std::vector<Concrete> out;
  switch (p.kind) {
  case bridge::PatternNode::Kind::Any:
  case bridge::PatternNode::Kind::Const: out.push_back(Concrete{p.kind, nullptr, &p, {}}); return out;
  case bridge::PatternNode::Kind::Alt:
    for (const bridge::PatternNode &alt : p.args)
      for (Concrete &c : variants(alt))
        if (out.size() < kMaxPatternVariants)
          out.push_back(std::move(c));
    return out;
  case bridge::PatternNode::Kind::Op: break;
  }
  std::vector<std::vector<Concrete>> argVariants;
  for (const bridge::PatternNode &a : p.args)
    argVariants.push_back(variants(a));
  for (const ir::Op *op : p.ops) {
    // The cartesian product of the arguments' variants, as an odometer.
    std::vector<size_t> pick(p.args.size(), 0);
    while (out.size() < kMaxPatternVariants) {
      Concrete c{bridge::PatternNode::Kind::Op, op, &p, {}};
      for (size_t i = 0; i < pick.size(); ++i)
        c.args.push_back(argVariants[i][pick[i]]);
      out.push_back(std::move(c));
      size_t i = 0;
      for (; i < pick.size(); ++i) {
        if (++pick[i] < argVariants[i].size())
          break;
        pick[i] = 0;
      }
      if (i == pick.size())
        break;
    }
  }
  if (p.optional)
    for (Concrete &c : argVariants[0])
      if (out.size() < kMaxPatternVariants)
        out.push_back(std::move(c));
  return out;
}

ir::AttrValue convertTo(const ir::AttrValue &v, ir::AttrKind kind) {
  switch (kind) {
  case ir::AttrKind::Float:
    if (const auto *i = std::get_if<int64_t>(&v))
      return double(*i);
    break;
  case ir::AttrKind::DType:
    if (const auto *s = std::get_if<std::string>(&v))
      if (auto d = ir::parseDType(*s))
        return *d;
    break;
  case ir::AttrKind::Floats:
    if (const auto *i = std::get_if<Ints>(&v))
      return std::vector<double>(i->begin(), i->end());
    break;
  default: break;
  }
  return v;
}

/// A value other than `v` (for '!=' predicates that the default violates).
ir::AttrValue perturb(const ir::AttrValue &v, const std::string &attr, const ir::Op &op,
                      const Type &t0) {
  if (attr == "groups" && op.name == "conv2d" && t0.rank() == 4 && t0.shape()[1] > 1)
    return t0.shape()[1]; // depthwise
  return std::visit(
      [](const auto &x) -> ir::AttrValue {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, int64_t>)
          return x + 1;
        else if constexpr (std::is_same_v<T, double>)
          return x + 0.5;
        else if constexpr (std::is_same_v<T, bool>)
          return !x;
        else if constexpr (std::is_same_v<T, DType>)
          return x == DType::F16 ? DType::F32 : DType::F16;
        else if constexpr (std::is_same_v<T, Ints> || std::is_same_v<T, std::vector<double>>) {
          T y = x;
          if (y.empty())
            y.push_back(1);
          else
            y[0] += 1;
          return y;
        } else
          return x + "_other";
      },
      v);
}

/// Ops whose output has the shape of their first argument (given operands
/// shaped as the kit shapes them), so a shape wanted of the output can be
/// asked of the first argument.
bool keepsFirstShape(const ir::Op &op) {
  static const std::set<std::string, std::less<>> extra = {"softmax", "log_softmax", "batch_norm",
                                                           "layer_norm"};
  return op.pattern == ir::OpPattern::Elementwise || op.pattern == ir::OpPattern::Broadcast ||
         extra.count(op.name) != 0;
}

/// Attributes for an op inside a pattern: the first sample's, made to fit
/// the first argument where they depend on its shape.
Attrs patternAttrs(const ir::Op &op, const OpSample &tmpl, const Type &t0) {
  if (op.name == "reshape")
    return {{"newshape", Ints{0, -1}}};
  if (op.name == "unsqueeze")
    return {{"axes", Ints{0}}};
  if (op.name == "squeeze")
    return {};
  if (op.name == "split" && t0.rank() > 0) {
    int64_t d = t0.shape()[0];
    return {{"axis", I(0)}, {"sizes", d > 1 ? Ints{d - d / 2, d / 2} : Ints{d}}};
  }
  return tmpl.attrs;
}

/// The type of argument `i > 0` of `op`, given the first argument's type.
Type otherArgType(const ir::Op &op, size_t i, const Type &t0, const Attrs &attrs,
                  bridge::PatternNode::Kind leaf, const OpSample &tmpl) {
  const Shape &s = t0.shape();
  auto t = [&](Shape shape) { return Type::tensor(t0.dtype(), std::move(shape)); };
  auto axisDim = [&](int64_t axis) {
    int64_t r = int64_t(s.size());
    axis = axis < 0 ? axis + r : axis;
    return axis >= 0 && axis < r ? s[size_t(axis)] : 1;
  };
  const std::string &n = op.name;
  if (n == "bias_add" || n == "batch_norm")
    return t({axisDim(attrs.getInt("axis", 1))});
  if (n == "layer_norm") {
    int64_t r = int64_t(s.size()), axis = attrs.getInt("axis", -1);
    axis = axis < 0 ? axis + r : axis;
    return t(Shape(s.begin() + std::clamp<int64_t>(axis, 0, r), s.end()));
  }
  if (n == "dense" && !s.empty()) {
    int64_t units =
        tmpl.args.size() > 1 && tmpl.args[1].type.rank() == 2 ? tmpl.args[1].type.shape()[0] : 4;
    return t({units, s.back()});
  }
  if (n == "matmul" && !s.empty())
    return t({s.back(), 5});
  if (n == "batch_matmul" && s.size() == 3) {
    int64_t k = attrs.getBool("transpose_a") ? s[1] : s[2];
    return attrs.getBool("transpose_b") ? t({s[0], 5, k}) : t({s[0], k, 5});
  }
  if (n == "conv2d" && s.size() == 4 && tmpl.args.size() > 1) {
    int64_t g = std::max<int64_t>(1, attrs.getInt("groups", 1));
    const Shape &w = tmpl.args[1].type.shape();
    int64_t oc = w[0] % g == 0 ? w[0] : 2 * g;
    return t({oc, s[1] / g, w[2], w[3]});
  }
  if (n == "concat")
    return t0;
  if (op.pattern == ir::OpPattern::Broadcast && op.maxArgs == 2) {
    if (leaf != bridge::PatternNode::Kind::Const || s.empty())
      return t0;
    return s.size() == 4 ? t({s[1], 1, 1}) : t({s.back()}); // per channel
  }
  if (i < tmpl.args.size())
    return withDType(tmpl.args[i].type, t0.dtype());
  return t0;
}

class PatternBuilder {
public:
  explicit PatternBuilder(uint64_t seed) : rng_(seed) {}

  Expected<ir::Expr> build(const Concrete &c, std::optional<Type> hint, Domain domain) {
    if (c.kind == bridge::PatternNode::Kind::Any) {
      ir::Var v = ir::makeVar(fmt::format("x{}", params_.size()), hint.value_or(f32({1, 4, 6, 6})));
      params_.push_back(v);
      domains_.push_back(domain);
      return ir::Expr(v);
    }
    if (c.kind == bridge::PatternNode::Kind::Const)
      return ir::makeConstant(randomTensor(hint.value_or(f32({4})), domain, rng_),
                              fmt::format("w{}", constants_++));
    const ir::Op &op = *c.op;
    std::vector<OpSample> samples = samplesFor(op.name);
    if (samples.empty())
      return Error::format("no samples for op '{}' (needed to instantiate the pattern)", op.name);
    const OpSample &tmpl = samples[0];

    // The first argument decides the shapes of the others.
    std::optional<Type> h0 = hint && keepsFirstShape(op) ? hint : tmpl.args[0].type;
    std::vector<ir::Expr> args;
    TS_ASSIGN_OR_RETURN(ir::Expr e0, build(c.args[0], h0, argDomain(op.name, 0)));
    Type t0 = e0->type();
    args.push_back(e0);

    Attrs attrs = patternAttrs(op, tmpl, t0);
    for (const bridge::AttrPredicate &pred : c.src->predicates) {
      const ir::AttrSpec *spec = op.findAttr(pred.attr);
      if (!spec)
        continue; // parsePattern rejects these
      if (!pred.negated) {
        attrs.set(pred.attr, convertTo(pred.value, spec->kind));
        continue;
      }
      const ir::AttrValue *cur = attrs.find(pred.attr);
      if (!cur && spec->defaultValue)
        cur = &*spec->defaultValue;
      if (cur && pred.holds(*cur))
        continue;
      ir::AttrValue base = cur ? *cur : convertTo(pred.value, spec->kind);
      attrs.set(pred.attr, perturb(base, pred.attr, op, t0));
    }
    for (size_t i = 1; i < c.args.size(); ++i) {
      Type ti = otherArgType(op, i, t0, attrs, c.args[i].kind, tmpl);
      TS_ASSIGN_OR_RETURN(ir::Expr e, build(c.args[i], ti, argDomain(op.name, i)));
      args.push_back(e);
    }
    return ir::makeCall(op.name, std::move(args), std::move(attrs), op.name);
  }

  const std::vector<ir::Var> &params() const { return params_; }
  const std::vector<Domain> &domains() const { return domains_; }

private:
  std::mt19937_64 rng_;
  std::vector<ir::Var> params_;
  std::vector<Domain> domains_;
  int constants_ = 0;
};

} // namespace

std::vector<PatternVariant> instantiatePattern(const bridge::Pattern &pattern,
                                               const std::string &pluginName, uint64_t seed) {
  std::vector<PatternVariant> out;
  for (const Concrete &c : variants(pattern.root)) {
    if (c.kind != bridge::PatternNode::Kind::Op)
      continue; // everything optional dropped: nothing to match
    if (opCount(c) < 2)
      continue; // one op: merge-composite leaves it to the checkers (the op's own samples)
    PatternVariant v;
    v.label = "pattern " + pattern.name + ": " + c.str();
    PatternBuilder b(seed ^ hashString(v.label));
    auto root = b.build(c, std::nullopt, Domain::Any);
    if (root.ok()) {
      for (const ir::Var &p : b.params())
        v.label += " " + compactType(p->type());
    }
    auto fail = [&](const std::string &why) {
      v.error = why;
      out.push_back(std::move(v));
    };
    if (!root.ok()) {
      fail("cannot instantiate: " + root.error().str());
      continue;
    }
    auto match = bridge::matchPattern(pattern, *root);
    if (!match) {
      fail("internal: the instantiated graph does not match the pattern");
      continue;
    }
    auto call = bridge::outlineComposite(*match, pluginName + "." + pattern.name);
    if (!call.ok()) {
      fail("cannot outline: " + call.error().str());
      continue;
    }
    KitCase kc;
    kc.label = v.label;
    kc.pattern = pattern.name;
    kc.ops = match->ops;
    kc.inputDomains = b.domains();
    kc.module.set("main", ir::makeFunction(b.params(), *call));
    v.kase = std::move(kc);
    out.push_back(std::move(v));
  }
  return out;
}

} // namespace tessera::kit
