//===- plugins/dnnl/lower_ops.cpp - The other nodes to oneDNN primitives ---===//
//
// The lowering (builder.h) of every op but the products (lower.cpp) and
// concat (lower_concat.cpp): pooling (max pooling by the plugin's own
// kernel, max_pool.h), elementwise and binary ops, per-channel affine
// arithmetic (channels last by the plugin's own kernel, channel_affine.h),
// normalisations, softmax, resampling, views, transposes and
// slices; each in the layout its input has where oneDNN runs it well there.
//
//===----------------------------------------------------------------------===//
#include "builder.h"
#include "channel_affine.h"
#include "layouts.h"
#include "max_pool.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace tessera::dnnl_plugin {

using dnnl::algorithm;
using dnnl::memory;
using dnnl::prop_kind;
using Tag = memory::format_tag;

/// Max pooling by the plugin's own kernel (max_pool.h), in the layout the
/// input has when it is NCHW, NHWC or channel-blocked by 8 or 16.
bool PlanBuilder::lowerOwnMaxPool(FNode &n, const OpInfo &info) {
  const Dims &xs = logicals_[size_t(n.ins[0])].type.shape, &ys = n.node->outputs[0].shape;
  if (info.alg != algorithm::pooling_max || xs.size() != 4 || ys.size() != 4)
    return false;
  const Value src = value(producerValue(n.ins[0]));
  const int64_t C = xs[1];
  std::optional<ChannelBlocks> layout;
  std::optional<memory::desc> dstMd;
  for (auto [tag, block] : {std::pair{Tag::nchw, int64_t(1)}, std::pair{Tag::nChw8c, int64_t(8)},
                            std::pair{Tag::nChw16c, int64_t(16)}, std::pair{Tag::nhwc, C}})
    if (memory::desc(dnnlDims(xs), kF32, tag) == src.md) {
      layout = ChannelBlocks{block, (C + block - 1) / block};
      dstMd = memory::desc(dnnlDims(ys), kF32, tag);
      break;
    }
  if (!layout)
    return false;
  MaxPoolShape shape;
  shape.N = xs[0], shape.H = xs[2], shape.W = xs[3], shape.OH = ys[2], shape.OW = ys[3];
  shape.layout = *layout;
  for (size_t i = 0; i < 2; ++i) { // (oneDNN's conventions: dilation 0 = dense)
    shape.window.k[i] = info.kernel[i], shape.window.s[i] = info.strides[i];
    shape.window.d[i] = info.dilation[i] + 1, shape.window.p0[i] = info.padL[i];
    shape.window.p1[i] = info.padR[i];
  }
  consumed(n);
  const int dst = newBuffer(Buffer::Kind::Temp, dstMd->get_size());
  addOwnStep(
      [shape](const std::unordered_map<int, memory> &args) {
        maxPool2d(static_cast<const float *>(args.at(DNNL_ARG_SRC).get_data_handle()),
                  static_cast<float *>(args.at(DNNL_ARG_DST).get_data_handle()), shape);
      },
      {{DNNL_ARG_SRC, src.buffer, src.md}, {DNNL_ARG_DST, dst, *dstMd}}, n.where, "pooling",
      "tessera:max_pool");
  addValue(n.out, dst, *dstMd);
  return true;
}

void PlanBuilder::lowerPool(FNode &n, const OpInfo &info) {
  if (lowerOwnMaxPool(n, info))
    return;
  consumed(n);
  Value src = value(producerValue(n.ins[0]));
  const Dims &ys = n.node->outputs[0].shape;
  memory::dims dd(ys.begin(), ys.end());
  dnnl::pooling_v2_forward::desc desc(prop_kind::forward_inference, info.alg, src.md, anyMd(dd),
                                      memory::dims(info.strides.begin(), info.strides.end()),
                                      memory::dims(info.kernel.begin(), info.kernel.end()),
                                      memory::dims(info.dilation.begin(), info.dilation.end()),
                                      memory::dims(info.padL.begin(), info.padL.end()),
                                      memory::dims(info.padR.begin(), info.padR.end()));
  dnnl::pooling_v2_forward::primitive_desc pd(desc, baseAttr(), cpuEngine());
  int dst = newBuffer(Buffer::Kind::Temp, pd.dst_desc().get_size());
  addStep(dnnl::pooling_v2_forward(pd),
          {{DNNL_ARG_SRC, src.buffer, src.md}, {DNNL_ARG_DST, dst, pd.dst_desc()}}, n.where, pd);
  addValue(n.out, dst, pd.dst_desc());
}

void PlanBuilder::lowerEltwise(FNode &n, const OpInfo &info) {
  consumed(n);
  // In the layout the input has, unless oneDNN 2.6 would run its reference
  // kernel there (logistic and mish on blocked layouts): then plain.
  memory::desc md = value(producerValue(n.ins[0])).md;
  auto build = [&](const memory::desc &m) {
    std::vector<dnnl::eltwise_forward::primitive_desc> pds;
    for (const Eltwise &e : info.eltwise)
      pds.emplace_back(
          dnnl::eltwise_forward::desc(prop_kind::forward_inference, e.alg, m, e.alpha, e.beta),
          baseAttr(), cpuEngine());
    return pds;
  };
  auto pds = build(md);
  memory::desc plain = plainMd(logicals_[size_t(n.ins[0])].type.shape);
  if (!(md == plain) && std::any_of(pds.begin(), pds.end(), [](const auto &pd) {
        return isReference(pd);
      })) {
    md = plain;
    pds = build(md);
  }
  int from = value(need(n.ins[0], md)).buffer;
  int dst = newBuffer(Buffer::Kind::Temp, md.get_size());
  for (const auto &pd : pds) {
    addStep(dnnl::eltwise_forward(pd), {{DNNL_ARG_SRC, from, md}, {DNNL_ARG_DST, dst, md}},
            n.where, pd);
    from = dst; // a second operation (hard_sigmoid's clip) runs in place
  }
  addValue(n.out, dst, md);
}

void PlanBuilder::lowerBinary(FNode &n, const OpInfo &info) {
  consumed(n);
  int a = n.ins[0], b = n.ins[1];
  if (info.swapOperands)
    std::swap(a, b);
  const Dims &ys = n.node->outputs[0].shape;
  const Dims &as = logicals_[size_t(a)].type.shape, &bs = logicals_[size_t(b)].type.shape;
  const bool sameB = bs == ys;
  memory::desc plain = plainMd(ys);
  memory::dims d1 = dnnlDims(info.src1Dims);
  memory::desc plain1 = plainMd(Dims(d1.begin(), d1.end()));
  dnnl::primitive_attr attr = baseAttr();
  if (info.negate) {
    dnnl::post_ops po;
    po.append_eltwise(1.0f, algorithm::eltwise_linear, -1.0f, 0.0f);
    attr.set_post_ops(po);
  }
  // Layouts to try, best first: src0 as it is with src1 in the same layout
  // (oneDNN 2.6's jit kernel broadcasts a per-channel src1 over a blocked
  // src0 only then), src0 as it is with src1 plain, both plain. The first
  // that oneDNN runs in a jit kernel wins; both plain when none does.
  std::vector<std::pair<memory::desc, memory::desc>> layouts;
  memory::desc cur = value(producerValue(a)).md;
  if (as == ys && !(cur == plain)) {
    if (sameB) {
      layouts.emplace_back(cur, cur);
    } else {
      if (auto same = sameLayout(cur, d1))
        layouts.emplace_back(cur, *same);
      layouts.emplace_back(cur, plain1);
    }
  }
  layouts.emplace_back(plain, sameB ? plain : plain1);
  std::optional<dnnl::binary::primitive_desc> chosen;
  memory::desc src0, md1;
  for (size_t i = 0; i < layouts.size() && !chosen; ++i) {
    const bool last = i + 1 == layouts.size();
    const auto &[m0, m1] = layouts[i];
    try {
      dnnl::binary::primitive_desc pd(dnnl::binary::desc(info.alg, m0, m1, m0), attr,
                                      cpuEngine());
      if (!isReference(pd) || last)
        chosen = pd, src0 = m0, md1 = m1;
    } catch (const dnnl::error &) {
      if (last)
        throw;
    }
  }
  int buf0 = value(need(a, as == ys ? src0 : plainMd(as))).buffer;
  int buf1;
  if (sameB) {
    buf1 = value(need(b, src0)).buffer;
  } else {
    // src1's plain bytes are a view of it at the padded rank; a blocked
    // src1 is a reorder of that view (once, now, for a constant).
    buf1 = value(need(b, plainMd(bs))).buffer;
    if (!(md1 == plain1)) {
      if (const void *data = constData(b)) {
        buf1 = constBuffer(plain1, data, md1);
      } else {
        int from = buf1;
        buf1 = newBuffer(Buffer::Kind::Temp, md1.get_size());
        addReorder(from, plain1, buf1, md1, "reorder of the broadcast operand of " + n.where);
      }
    }
  }
  int dst = newBuffer(Buffer::Kind::Temp, src0.get_size());
  addStep(dnnl::binary(*chosen),
          {{DNNL_ARG_SRC_0, buf0, src0}, {DNNL_ARG_SRC_1, buf1, md1}, {DNNL_ARG_DST, dst, src0}},
          n.where, *chosen);
  addValue(n.out, dst, src0);
}

/// `n` as an eltwise_linear alpha * cur + beta, when it is an add,
/// subtract, multiply or divide of `cur` and a one-element constant that
/// keeps cur's shape (a constant divisor becomes its reciprocal).
std::optional<Eltwise> PlanBuilder::scalarLinear(const FNode &n, int cur) const {
  const std::string &op = n.node->op;
  if (n.ins.size() != 2 || n.ins[0] == n.ins[1] ||
      (op != "add" && op != "subtract" && op != "multiply" && op != "divide"))
    return std::nullopt;
  int k = n.ins[0] == cur ? 1 : n.ins[1] == cur ? 0 : -1;
  if (k < 0)
    return std::nullopt;
  int c = n.ins[size_t(k)];
  const void *data = constData(c);
  if (!data || logicals_[size_t(c)].type.numel() != 1 ||
      n.node->outputs[0].shape != logicals_[size_t(cur)].type.shape)
    return std::nullopt;
  float v = *static_cast<const float *>(data);
  bool curFirst = k == 1;
  const algorithm lin = algorithm::eltwise_linear;
  if (op == "add")
    return Eltwise{lin, 1.0f, v};
  if (op == "multiply")
    return Eltwise{lin, v, 0.0f};
  if (op == "subtract")
    return curFirst ? Eltwise{lin, 1.0f, -v} : Eltwise{lin, -1.0f, v};
  if (curFirst && v != 0 && std::isfinite(1.0f / v))
    return Eltwise{lin, 1.0f / v, 0.0f};
  return std::nullopt;
}

/// The C values of constant `constant` broadcast against `shape` (rank 2-5)
/// when it varies along axis 1 only (a single value counts, repeated).
std::optional<std::vector<float>> PlanBuilder::perChannel(int constant, const Dims &shape) const {
  const void *data = constData(constant);
  const Dims &ks = logicals_[size_t(constant)].type.shape;
  if (!data || shape.size() < 2 || shape.size() > 5 || ks.size() > shape.size())
    return std::nullopt;
  int64_t channels = shape[1];
  size_t lead = shape.size() - ks.size();
  int64_t numel = 1;
  for (size_t i = 0; i < ks.size(); ++i) {
    numel *= ks[i];
    if (ks[i] != 1 && !(lead + i == 1 && ks[i] == channels))
      return std::nullopt;
  }
  const float *v = static_cast<const float *>(data);
  std::vector<float> out(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c)
    out[size_t(c)] = v[numel == 1 ? 0 : c];
  return out;
}

/// x * s (+ t), x + t with per-channel constants s, t along axis 1 (a
/// batch_norm that did not fold into a convolution, as simplify-inference
/// leaves it), and a relu after it: one batch_normalization primitive with
/// mean 0, variance 1 and epsilon 0 (exactly s * x + t), which oneDNN runs
/// in a jit kernel on every layout, where a broadcast binary on a blocked
/// layout runs its reference kernel. False when `index` is no such op.
bool PlanBuilder::lowerAffine(size_t index) {
  FNode &n = nodes_[index];
  const std::string &op = n.node->op;
  const Dims &ys = n.node->outputs[0].shape;
  if ((op != "multiply" && op != "add") || n.ins.size() != 2)
    return false;
  int x = -1;
  std::optional<std::vector<float>> k;
  for (int i : {0, 1})
    if (!k && logicals_[size_t(n.ins[size_t(i)])].type.shape == ys &&
        (k = perChannel(n.ins[size_t(1 - i)], ys)))
      x = n.ins[size_t(i)];
  if (!k || logicals_[size_t(x)].values.empty())
    return false;
  size_t channels = k->size();
  std::vector<float> scale(channels, 1.0f), shift(channels, 0.0f);
  (op == "multiply" ? scale : shift) = std::move(*k);
  std::vector<FNode *> absorbed{&n};
  int cur = n.out;
  // The single user of `cur`, not yet lowered.
  auto next = [&]() -> FNode * {
    const Logical &c = logicals_[size_t(cur)];
    if (c.output || c.consumers.size() != 1)
      return nullptr;
    FNode &m = nodes_[size_t(c.consumers[0])];
    return m.done ? nullptr : &m;
  };
  if (FNode *m = next(); m && op == "multiply" && m->node->op == "add" && m->ins.size() == 2 &&
                         m->node->outputs[0].shape == ys) {
    int other = m->ins[0] == cur ? m->ins[1] : m->ins[0];
    if (other != cur)
      if (auto t = perChannel(other, ys)) {
        shift = std::move(*t);
        absorbed.push_back(m);
        cur = m->out;
      }
  }
  bool relu = false;
  if (FNode *m = next(); m && m->node->op == "relu") {
    relu = true;
    absorbed.push_back(m);
    cur = m->out;
  }

  auto flags = dnnl::normalization_flags::use_global_stats | dnnl::normalization_flags::use_scale |
               dnnl::normalization_flags::use_shift;
  auto build = [&](const memory::desc &md) -> std::optional<dnnl::batch_normalization_forward::primitive_desc> {
    dnnl::primitive_attr attr = baseAttr();
    if (relu) {
      dnnl::post_ops po;
      po.append_eltwise(1.0f, algorithm::eltwise_relu, 0.0f, 0.0f);
      attr.set_post_ops(po);
    }
    try {
      dnnl::batch_normalization_forward::primitive_desc pd(
          dnnl::batch_normalization_forward::desc(prop_kind::forward_inference, md, 0.0f, flags),
          attr, cpuEngine());
      if (!isReference(pd))
        return pd;
    } catch (const dnnl::error &) {
    }
    return std::nullopt;
  };
  memory::desc md = value(producerValue(x)).md, plain = plainMd(ys);
  if (channelsLast(md, dnnlDims(ys))) {
    // Channels last: the plugin's own kernel, twice as fast as oneDNN's
    // batch_normalization there (channel_affine.h).
    for (FNode *m : absorbed)
      consumed(*m);
    const int src = value(need(x, md)).buffer, dst = newBuffer(Buffer::Kind::Temp, md.get_size());
    const int64_t C = int64_t(channels), pixels = int64_t(md.get_size() / sizeof(float)) / C;
    addOwnStep(
        [scale, shift, pixels, C, relu](const std::unordered_map<int, memory> &args) {
          channelAffine(static_cast<const float *>(args.at(DNNL_ARG_SRC).get_data_handle()),
                        static_cast<float *>(args.at(DNNL_ARG_DST).get_data_handle()),
                        scale.data(), shift.data(), pixels, C, relu);
        },
        {{DNNL_ARG_SRC, src, md}, {DNNL_ARG_DST, dst, md}}, n.where, "affine",
        "tessera:channel_affine");
    addValue(cur, dst, md);
    return true;
  }
  auto pd = build(md);
  if (!pd && !(md == plain))
    pd = build(md = plain);
  if (!pd)
    return false;
  for (FNode *m : absorbed)
    consumed(*m);
  int src = value(need(x, md)).buffer;
  memory::desc vec = plainMd({int64_t(channels)});
  std::vector<float> zeros(channels, 0.0f), ones(channels, 1.0f);
  int dst = newBuffer(Buffer::Kind::Temp, md.get_size());
  addStep(dnnl::batch_normalization_forward(*pd),
          {{DNNL_ARG_SRC, src, md},
           {DNNL_ARG_SCALE, constBuffer(vec, scale.data(), vec), vec},
           {DNNL_ARG_SHIFT, constBuffer(vec, shift.data(), vec), vec},
           {DNNL_ARG_MEAN, constBuffer(vec, zeros.data(), vec), vec},
           {DNNL_ARG_VARIANCE, constBuffer(vec, ones.data(), vec), vec},
           {DNNL_ARG_DST, dst, md}},
          n.where, *pd);
  addValue(cur, dst, md);
  return true;
}

void PlanBuilder::lowerBatchNorm(FNode &n, const OpInfo &info) {
  consumed(n);
  Value src = value(producerValue(n.ins[0]));
  auto flags = dnnl::normalization_flags::use_global_stats | dnnl::normalization_flags::use_scale |
               dnnl::normalization_flags::use_shift;
  dnnl::batch_normalization_forward::desc desc(prop_kind::forward_inference, src.md, info.epsilon,
                                               flags);
  dnnl::batch_normalization_forward::primitive_desc pd(desc, baseAttr(), cpuEngine());
  int64_t c = logicals_[size_t(n.ins[0])].type.shape[1];
  memory::desc vec = plainMd({c});
  auto param = [&](int i) { return value(need(n.ins[size_t(i)], vec)).buffer; };
  int dst = newBuffer(Buffer::Kind::Temp, src.md.get_size());
  addStep(dnnl::batch_normalization_forward(pd),
          {{DNNL_ARG_SRC, src.buffer, src.md},
           {DNNL_ARG_SCALE, param(1), vec},
           {DNNL_ARG_SHIFT, param(2), vec},
           {DNNL_ARG_MEAN, param(3), vec},
           {DNNL_ARG_VARIANCE, param(4), vec},
           {DNNL_ARG_DST, dst, src.md}},
          n.where, pd);
  addValue(n.out, dst, src.md);
}

void PlanBuilder::lowerLayerNorm(FNode &n, const OpInfo &info) {
  consumed(n);
  const Dims &xs = logicals_[size_t(n.ins[0])].type.shape;
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < xs.size(); ++i)
    (int64_t(i) < info.axis ? outer : inner) *= xs[i];
  memory::desc md2 = plainMd({outer, inner}), vec = plainMd({inner});
  auto flags = dnnl::normalization_flags::use_scale;
  if (info.hasShift)
    flags = flags | dnnl::normalization_flags::use_shift;
  dnnl::layer_normalization_forward::desc desc(prop_kind::forward_inference, md2, info.epsilon,
                                               flags);
  dnnl::layer_normalization_forward::primitive_desc pd(desc, baseAttr(), cpuEngine());
  const Dims innerDims(xs.begin() + info.axis, xs.end());
  // A scale or shift of the normalised shape is bound as it is; one that
  // broadcasts to it (InstanceNormalization's [1]) is expanded first, by a
  // binary add onto zeros: oneDNN takes only [inner] vectors.
  auto param = [&](int logical) {
    const Dims &ps = logicals_[size_t(logical)].type.shape;
    const int given = value(need(logical, plainMd(ps))).buffer;
    if (ps == innerDims)
      return given;
    Dims padded(innerDims.size() - ps.size(), 1);
    padded.insert(padded.end(), ps.begin(), ps.end());
    const memory::desc full = plainMd(innerDims), part = plainMd(padded);
    const std::vector<float> zeros(size_t(inner), 0.0f);
    dnnl::binary::primitive_desc pd(dnnl::binary::desc(algorithm::binary_add, full, part, full),
                                    baseAttr(), cpuEngine());
    const int expanded = newBuffer(Buffer::Kind::Temp, full.get_size());
    addStep(dnnl::binary(pd),
            {{DNNL_ARG_SRC_0, constBuffer(full, zeros.data(), full), full},
             {DNNL_ARG_SRC_1, given, part},
             {DNNL_ARG_DST, expanded, full}},
            n.where, pd);
    return expanded;
  };
  int src = value(need(n.ins[0], plainMd(xs))).buffer;
  int dst = newBuffer(Buffer::Kind::Temp, md2.get_size());
  std::vector<StepArg> args{
      {DNNL_ARG_SRC, src, md2}, {DNNL_ARG_DST, dst, md2}, {DNNL_ARG_SCALE, param(n.ins[1]), vec}};
  if (info.hasShift)
    args.push_back({DNNL_ARG_SHIFT, param(n.ins[2]), vec});
  // Statistics, when the implementation wants somewhere to put them.
  for (auto [arg, md] :
       {std::pair{DNNL_ARG_MEAN, pd.mean_desc()}, std::pair{DNNL_ARG_VARIANCE, pd.variance_desc()}})
    if (md.get_size() > 0)
      args.push_back({arg, newBuffer(Buffer::Kind::Temp, md.get_size()), md});
  addStep(dnnl::layer_normalization_forward(pd), std::move(args), n.where, pd);
  addValue(n.out, dst, plainMd(xs));
}

void PlanBuilder::lowerSoftmax(FNode &n, const OpInfo &info) {
  consumed(n);
  const Dims &xs = logicals_[size_t(n.ins[0])].type.shape;
  memory::desc md = plainMd(xs);
  int src = value(need(n.ins[0], md)).buffer;
  dnnl::softmax_v2_forward::desc desc(prop_kind::forward_inference, info.alg, md, md,
                                      int(info.axis));
  dnnl::softmax_v2_forward::primitive_desc pd(desc, baseAttr(), cpuEngine());
  int dst = newBuffer(Buffer::Kind::Temp, md.get_size());
  addStep(dnnl::softmax_v2_forward(pd), {{DNNL_ARG_SRC, src, md}, {DNNL_ARG_DST, dst, md}}, n.where,
          pd);
  addValue(n.out, dst, md);
}

void PlanBuilder::lowerResample(FNode &n, const OpInfo &info) {
  consumed(n);
  Value src = value(producerValue(n.ins[0]));
  const Dims &ys = n.node->outputs[0].shape;
  dnnl::resampling_forward::desc desc(prop_kind::forward_inference, info.alg, src.md,
                                      anyMd(memory::dims(ys.begin(), ys.end())));
  dnnl::resampling_forward::primitive_desc pd(desc, baseAttr(), cpuEngine());
  int dst = newBuffer(Buffer::Kind::Temp, pd.dst_desc().get_size());
  addStep(dnnl::resampling_forward(pd),
          {{DNNL_ARG_SRC, src.buffer, src.md}, {DNNL_ARG_DST, dst, pd.dst_desc()}}, n.where, pd);
  addValue(n.out, dst, pd.dst_desc());
}

void PlanBuilder::lowerView(FNode &n) {
  consumed(n);
  // The same bytes under a new shape: no step at all.
  int v = need(n.ins[0], plainMd(logicals_[size_t(n.ins[0])].type.shape));
  int buffer = value(v).buffer;
  if (logicals_[size_t(n.ins[0])].isConst)
    logicals_[size_t(n.out)].isConst = true;
  addValue(n.out, buffer, plainMd(n.node->outputs[0].shape));
}

/// transpose and slice: one reorder. A transpose writes the input, in the
/// layout it has, into a view of the output with permuted strides; a slice
/// reads a view of the input's plain bytes with the strides multiplied by
/// the steps, from the first element taken.
void PlanBuilder::lowerStridedCopy(FNode &n, const OpInfo &info) {
  consumed(n);
  const Dims &xs = logicals_[size_t(n.ins[0])].type.shape, &ys = n.node->outputs[0].shape;
  const size_t r = xs.size();
  memory::desc dst = plainMd(ys);
  int out = newBuffer(Buffer::Kind::Temp, dst.get_size());
  if (info.kind == OpKind::Transpose && r > 0) {
    // The output's bytes seen in the input's dims (input dim perm[i] steps
    // as output dim i), written straight from the input's layout, blocked
    // or not: one pass.
    memory::dims yStrides = rowMajorStrides(dnnlDims(ys)), strides(r);
    for (size_t i = 0; i < r; ++i)
      strides[size_t(info.perm[i])] = yStrides[i];
    Value src = value(producerValue(n.ins[0]));
    addReorder(src.buffer, src.md, out, stridedMd(dnnlDims(xs), strides), n.where);
  } else {
    // The input's bytes seen in the output's dims: every step-th element
    // from the first one taken.
    memory::dims xStrides = rowMajorStrides(dnnlDims(xs)), strides(r);
    int64_t offset = 0;
    for (size_t i = 0; i < r; ++i) {
      strides[i] = xStrides[i] * info.steps[i];
      offset += info.starts[i] * xStrides[i];
    }
    int src = value(need(n.ins[0], plainMd(xs))).buffer;
    memory::desc view = r == 0 ? plainMd(ys) : stridedMd(dnnlDims(ys), strides);
    view.data.offset0 = offset;
    addReorder(src, view, out, dst, n.where);
  }
  addValue(n.out, out, dst);
}

} // namespace tessera::dnnl_plugin
