//===- plugins/dnnl/lower.cpp - Nodes to oneDNN primitives ----------------===//
//
// The lowering half of PlanBuilder (builder.h). Products (conv2d,
// conv2d_transpose, dense with format "any"; matmul over its plain operands)
// are fused with what follows them; the other ops take their input in the
// layout it already has when oneDNN supports that (pooling, eltwise, binary,
// batch_norm, concat) and plain otherwise (softmax, layer_norm, views).
//
//===----------------------------------------------------------------------===//
#include "builder.h"
#include "max_pool.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

namespace tessera::dnnl_plugin {

using dnnl::algorithm;
using dnnl::memory;
using dnnl::prop_kind;
using Tag = memory::format_tag;

namespace {

constexpr auto kF32 = memory::data_type::f32;

memory::desc anyMd(const memory::dims &dims) {
  return memory::desc(dims, kF32, Tag::any);
}

/// A plain desc with explicit strides (transposed and grouped views).
memory::desc stridedMd(const memory::dims &dims, const memory::dims &strides) {
  return memory::desc(dims, kF32, strides);
}

/// The strides of a dense row-major tensor of `dims`.
memory::dims rowMajorStrides(const memory::dims &dims) {
  memory::dims s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;)
    s[i - 1] = s[i] * dims[i];
  return s;
}

/// `md`'s channel-blocked or channels-last layout applied to `dims` (a
/// per-channel broadcast operand [1, C, 1, 1] of a tensor in that layout),
/// when `md` has one of those layouts.
std::optional<memory::desc> sameLayout(const memory::desc &md, const memory::dims &dims) {
  static const std::vector<std::vector<Tag>> byRank = {
      {},
      {},
      {},
      {Tag::nCw16c, Tag::nCw8c, Tag::nwc},
      {Tag::nChw16c, Tag::nChw8c, Tag::nhwc},
      {Tag::nCdhw16c, Tag::nCdhw8c, Tag::ndhwc}};
  size_t r = size_t(md.dims().size());
  if (r >= byRank.size() || dims.size() != r)
    return std::nullopt;
  for (Tag t : byRank[r])
    if (memory::desc(md.dims(), kF32, t) == md)
      return memory::desc(dims, kF32, t);
  return std::nullopt;
}

/// Whether a convolution should run as Winograd (F(2x2, 3x3) or F(4x4,
/// 3x3), as oneDNN picks): a dense 3x3, stride 1, 2-D convolution with at
/// least 16 input and output channels. Measured on AVX-512 (oneDNN 2.6, one
/// thread, against its brgconv): 1.3x-3x faster from 16 to 512 channels on
/// 7x7 to 147x147 maps; 2.7x slower with 3 input channels, where the
/// transforms outweigh the products. Its results differ from a direct
/// convolution's by about 1e-6 of the output's range (products summed in
/// another order through the transforms), well inside the kit's tolerance.
bool winogradPays(const OpInfo &info, const Dims &weights) {
  auto all = [](const Dims &d, int64_t v) {
    return std::all_of(d.begin(), d.end(), [v](int64_t x) { return x == v; });
  };
  return info.groups == 1 && weights.size() == 4 && weights[2] == 3 && weights[3] == 3 &&
         weights[0] >= 16 && weights[1] >= 16 && all(info.strides, 1) && all(info.dilation, 0);
}

} // namespace

sdk::OpDesc PlanBuilder::descOf(const FNode &n) const {
  sdk::OpDesc d;
  d.op = n.node->op;
  d.name = n.node->name;
  d.attrs = n.node->attrs;
  for (int l : n.ins)
    d.inputs.push_back(logicals_[size_t(l)].type);
  d.outputs = n.node->outputs;
  return d;
}

void PlanBuilder::consumed(FNode &n) {
  n.done = true;
  for (int l : n.ins)
    logicals_[size_t(l)].remaining--;
}

/// May `buffer` be overwritten now? Every logical living in it must be dead
/// (no consumer left to lower; the fused add was consumed already) and none
/// may be a function output.
bool PlanBuilder::freeAfter(int buffer) const {
  // A view shares its root's bytes, and so with the root's other views:
  // every logical on any of them counts.
  const int root = rootOf(plan_->buffers, buffer).first;
  if (plan_->buffers[size_t(root)].kind != Buffer::Kind::Temp)
    return false;
  for (size_t b = 0; b < plan_->buffers.size(); ++b) {
    if (int(b) != root && plan_->buffers[b].parent != root)
      continue;
    for (int l : owners_[b]) {
      const Logical &lg = logicals_[size_t(l)];
      if (lg.output || lg.remaining > 0)
        return false;
    }
  }
  return true;
}

void PlanBuilder::lower(size_t index) {
  FNode &n = nodes_[index];
  OpInfo info;
  try {
    info = analyzeOp(descOf(n));
  } catch (const sdk::Error &e) {
    fail(n.where, e.what());
  }
  try {
    switch (info.kind) {
    case OpKind::Conv:
    case OpKind::Deconv:
    case OpKind::Dense:
    case OpKind::Matmul: lowerProduct(index, info); break;
    case OpKind::BatchNorm: lowerBatchNorm(n, info); break;
    case OpKind::LayerNorm: lowerLayerNorm(n, info); break;
    case OpKind::Pool: lowerPool(n, info); break;
    case OpKind::Eltwise: lowerEltwise(n, info); break;
    case OpKind::Binary:
      if (!lowerAffine(index))
        lowerBinary(n, info);
      break;
    case OpKind::Softmax: lowerSoftmax(n, info); break;
    case OpKind::Concat: lowerConcat(n, info); break;
    case OpKind::Resample: lowerResample(n, info); break;
    case OpKind::View: lowerView(n); break;
    case OpKind::Transpose:
    case OpKind::Slice: lowerStridedCopy(n, info); break;
    }
  } catch (const dnnl::error &e) {
    fail(n.where, std::string("oneDNN: ") + e.what());
  }
}

//===----------------------------------------------------------------------===//
// Products with fusion
//===----------------------------------------------------------------------===//

/// A matmul operand of logical dims `logical` over row-major bytes; a
/// transposed one is stored with its last two dims swapped, so its last two
/// strides swap. Dims of size 1 broadcast (any stride).
memory::desc PlanBuilder::matmulView(const Dims &logical, bool transposed) {
  memory::dims d(logical.begin(), logical.end());
  memory::dims stored = d;
  size_t r = d.size();
  if (transposed)
    std::swap(stored[r - 1], stored[r - 2]);
  memory::dims s = rowMajorStrides(stored);
  if (transposed)
    std::swap(s[r - 1], s[r - 2]);
  for (size_t i = 0; i < r; ++i)
    if (d[i] == 1)
      s[i] = i + 1 < r ? s[i] : 1;
  return memory::desc(d, kF32, s);
}

void PlanBuilder::lowerProduct(size_t index, const OpInfo &info, bool fuse) {
  FNode &p = nodes_[index];
  const sdk::TensorType &yt = p.node->outputs[0];
  const bool rowsLast = info.kind == OpKind::Dense || info.kind == OpKind::Matmul;
  size_t channelAxis = rowsLast ? yt.shape.size() - 1 : 1;
  // A matmul whose operands oneDNN sees promoted (a 1-D operand) or padded
  // runs alone: its epilogue would live in other dims than the result's.
  // (Folded batch dims keep the last one: the same bytes, the same epilogue.)
  if (info.kind == OpKind::Matmul && yt.shape != info.yDims && !info.foldedBatch)
    fuse = false;
  int64_t channels = yt.shape[channelAxis];
  int x = p.ins[0], w = p.ins[1];

  // Constant weights (possibly with a folded batch_norm), as plain f32.
  std::vector<float> folded, foldedBias;
  int bias = -1; // a logical, or -1
  bool foldedBn = false;
  dnnl::post_ops po;
  int residual = -1; // the sum post-op's logical
  int cur = p.out;
  int eltwiseCount = 0;
  // oneDNN 2.6's jit kernels mis-apply two eltwise post-ops of one
  // algorithm with different parameters (leaky_relu, sum, relu gives
  // negative outputs): such a chain stops before the second one.
  std::vector<Eltwise> fused;
  auto compatible = [&](const std::vector<Eltwise> &next) {
    for (const Eltwise &e : next)
      for (const Eltwise &f : fused)
        if (e.alg == f.alg && (e.alpha != f.alpha || e.beta != f.beta))
          return false;
    return true;
  };
  std::vector<FNode *> absorbed; // marked consumed once the primitive exists
  while (fuse) {
    Logical &c = logicals_[size_t(cur)];
    if (c.output || c.consumers.size() != 1)
      break;
    FNode &n = nodes_[size_t(c.consumers[0])];
    if (n.done || n.ins.empty())
      break;
    sdk::OpDesc d = descOf(n);
    OpInfo ni;
    try {
      ni = analyzeOp(d);
    } catch (const sdk::Error &) {
      break; // lowered (and reported) on its own
    }
    const std::string &op = n.node->op;
    bool first = bias < 0 && !foldedBn && eltwiseCount == 0 && residual < 0;
    auto other = [&]() -> int {
      if (n.ins.size() != 2)
        return -1;
      if (n.ins[0] == cur && n.ins[1] != cur)
        return n.ins[1];
      if (n.ins[1] == cur && n.ins[0] != cur && op != "bias_add")
        return n.ins[0];
      return -1;
    };
    if ((op == "bias_add" || op == "add") && first && other() >= 0 &&
        !logicals_[size_t(other())].values.empty()) {
      // A bias: bias_add along the channel axis, or an add of one value
      // per channel laid out along it ([O, 1, 1] after a conv2d).
      const Dims &bs = logicals_[size_t(other())].type.shape;
      bool isBias = false;
      if (op == "bias_add")
        isBias = ni.axis == int64_t(channelAxis);
      else if (bs.size() <= yt.shape.size()) {
        int64_t numel = 1;
        for (int64_t dd : bs)
          numel *= dd;
        size_t lead = yt.shape.size() - bs.size();
        isBias = numel == channels && channelAxis >= lead && bs[channelAxis - lead] == channels;
      }
      if (isBias) {
        bias = other();
        absorbed.push_back(&n);
        cur = n.out;
        continue;
      }
    }
    if (op == "batch_norm" && first && info.kind == OpKind::Conv && n.ins[0] == cur &&
        constData(w) && constData(n.ins[1]) && constData(n.ins[2]) && constData(n.ins[3]) &&
        constData(n.ins[4])) {
      // Folded into the weights and a bias, once, here.
      const float *W = static_cast<const float *>(constData(w));
      const float *gamma = static_cast<const float *>(constData(n.ins[1]));
      const float *beta = static_cast<const float *>(constData(n.ins[2]));
      const float *mean = static_cast<const float *>(constData(n.ins[3]));
      const float *var = static_cast<const float *>(constData(n.ins[4]));
      int64_t per = logicals_[size_t(w)].type.numel() / channels;
      std::vector<float> weights(static_cast<size_t>(channels * per));
      std::vector<float> shifts(static_cast<size_t>(channels));
      bool finite = true;
      for (int64_t o = 0; o < channels; ++o) {
        double s = double(gamma[o]) / std::sqrt(double(var[o]) + double(ni.epsilon));
        for (int64_t k = 0; k < per; ++k) {
          weights[size_t(o * per + k)] = float(double(W[o * per + k]) * s);
          finite = finite && std::isfinite(weights[size_t(o * per + k)]);
        }
        shifts[size_t(o)] = float(double(beta[o]) - double(mean[o]) * s);
        finite = finite && std::isfinite(shifts[size_t(o)]);
      }
      // A variance + epsilon of 0 (or an overflow) makes the folded weights
      // infinite or NaN where batch_norm divides by zero in its own way: the
      // batch_norm then runs as its own primitive.
      if (finite) {
        folded = std::move(weights);
        foldedBias = std::move(shifts);
        foldedBn = true;
        absorbed.push_back(&n);
        cur = n.out;
        continue;
      }
    }
    if (auto lin = scalarLinear(n, cur); lin && eltwiseCount < 8 && compatible({*lin})) {
      // x * k, x + k, x - k, k - x, x / k with a scalar constant k.
      po.append_eltwise(1.0f, lin->alg, lin->alpha, lin->beta);
      fused.push_back(*lin);
      eltwiseCount++;
      absorbed.push_back(&n);
      cur = n.out;
      continue;
    }
    if (ni.kind == OpKind::Eltwise && eltwiseCount < 8 && compatible(ni.eltwise)) {
      for (const Eltwise &e : ni.eltwise) {
        po.append_eltwise(1.0f, e.alg, e.alpha, e.beta);
        fused.push_back(e);
      }
      eltwiseCount++;
      absorbed.push_back(&n);
      cur = n.out;
      continue;
    }
    if (op == "add" && residual < 0 && other() >= 0 &&
        logicals_[size_t(other())].type == logicals_[size_t(cur)].type &&
        !logicals_[size_t(other())].values.empty()) {
      residual = other();
      po.append_sum(1.0f);
      absorbed.push_back(&n);
      cur = n.out;
      continue;
    }
    break;
  }

  // The primitive descriptor, oneDNN picking the layouts. A fused chain
  // oneDNN has no implementation for is given up for the plain product.
  dnnl::primitive_attr attr = baseAttr();
  attr.set_post_ops(po);
  if (info.kind == OpKind::Deconv && residual < 0 && !foldedBn &&
      lowerDeconvAsMatmul(p, info, bias, attr, absorbed, cur))
    return;
  const Dims &xs = logicals_[size_t(x)].type.shape, &ws = logicals_[size_t(w)].type.shape;
  bool hasBias = bias >= 0 || foldedBn;
  memory::desc biasMd(memory::dims{channels}, kF32, Tag::x);
  memory::desc wView; // the weight as stored (plain), in oneDNN's logical dims
  memory::desc srcArgMd, dstArgMd;
  std::unique_ptr<dnnl::primitive_desc> pdHolder;
  dnnl::primitive prim;
  memory::desc srcWant, wWant, dstMd;
  try {
    if (info.kind == OpKind::Matmul) {
      // Row-major operands read in place; a transposed one swaps its last
      // two strides. The bias is [1, ..., 1, N] over the result.
      memory::desc a = matmulView(info.aDims, info.transA), b = matmulView(info.bDims, info.transB);
      dstArgMd = plainMd(info.yDims);
      memory::dims bd(info.yDims.size(), 1);
      bd.back() = channels;
      biasMd = plainMd(bd);
      // Constant weights in the layout the matmul prefers (reordered once,
      // at init); computed ones read in place.
      memory::desc bArg = constData(w) ? anyMd(memory::dims(info.bDims.begin(), info.bDims.end()))
                                       : b;
      auto desc = hasBias ? dnnl::matmul::desc(a, bArg, biasMd, dstArgMd)
                          : dnnl::matmul::desc(a, bArg, dstArgMd);
      auto pd = dnnl::matmul::primitive_desc(desc, attr, cpuEngine());
      srcArgMd = a;
      srcWant = plainMd(xs);
      wView = b;
      wWant = pd.weights_desc();
      dstMd = plainMd(yt.shape);
      prim = dnnl::matmul(pd);
      pdHolder = std::make_unique<dnnl::primitive_desc>(pd);
    } else if (info.kind == OpKind::Dense) {
      memory::dims sd{info.rows, info.K}, wd{info.units, info.K}, dd{info.rows, info.units};
      srcArgMd = plainMd(sd);
      dstArgMd = plainMd(dd);
      wView = plainMd(wd);
      auto desc = hasBias ? dnnl::inner_product_forward::desc(prop_kind::forward_inference,
                                                              srcArgMd, anyMd(wd), biasMd, dstArgMd)
                          : dnnl::inner_product_forward::desc(prop_kind::forward_inference,
                                                              srcArgMd, anyMd(wd), dstArgMd);
      auto pd = dnnl::inner_product_forward::primitive_desc(desc, attr, cpuEngine());
      srcWant = plainMd(xs);
      wWant = pd.weights_desc();
      dstMd = plainMd(yt.shape);
      prim = dnnl::inner_product_forward(pd);
      pdHolder = std::make_unique<dnnl::primitive_desc>(pd);
    } else {
      int64_t g = info.groups;
      memory::dims sd(xs.begin(), xs.end()), dd(yt.shape.begin(), yt.shape.end()), wd;
      if (info.kind == OpKind::Conv) {
        // [O, C/g, KH, KW] = [g, O/g, C/g, KH, KW] in the same bytes.
        wd = g == 1 ? memory::dims{ws[0], ws[1], ws[2], ws[3]}
                    : memory::dims{g, ws[0] / g, ws[1], ws[2], ws[3]};
        wView = plainMd(wd);
      } else {
        // conv2d_transpose: stored [C, O/g, KH, KW]; oneDNN's logical dims are
        // [g, O/g, C/g, KH, KW] (i and o swapped: "giohw").
        int64_t ic = ws[0] / g, oc = ws[1], hw = ws[2] * ws[3];
        wd = g == 1 ? memory::dims{oc, ws[0], ws[2], ws[3]} : memory::dims{g, oc, ic, ws[2], ws[3]};
        wView = g == 1 ? stridedMd(wd, {hw, oc * hw, ws[3], 1})
                       : stridedMd(wd, {ic * oc * hw, hw, oc * hw, ws[3], 1});
      }
      memory::dims strides(info.strides.begin(), info.strides.end());
      memory::dims dil(info.dilation.begin(), info.dilation.end());
      memory::dims pl(info.padL.begin(), info.padL.end()), pr(info.padR.begin(), info.padR.end());
      if (info.kind == OpKind::Conv) {
        memory::desc srcM = anyMd(sd), dstM = anyMd(dd);
        auto convPd = [&](algorithm alg) {
          auto desc = hasBias ? dnnl::convolution_forward::desc(prop_kind::forward_inference, alg,
                                                                srcM, anyMd(wd), biasMd, dstM,
                                                                strides, dil, pl, pr)
                              : dnnl::convolution_forward::desc(prop_kind::forward_inference, alg,
                                                                srcM, anyMd(wd), dstM, strides,
                                                                dil, pl, pr);
          return dnnl::convolution_forward::primitive_desc(desc, attr, cpuEngine());
        };
        // Winograd where it pays (winogradPays), else direct. oneDNN 2.6
        // has Winograd only for AVX-512: elsewhere the pd is unimplemented
        // and the direct one is taken.
        std::optional<dnnl::convolution_forward::primitive_desc> wino;
        if (winogradPays(info, ws))
          try {
            wino = convPd(algorithm::convolution_winograd);
          } catch (const dnnl::error &) {
          }
        auto pd = wino ? *wino : convPd(algorithm::convolution_direct);
        srcWant = pd.src_desc(), wWant = pd.weights_desc(), dstMd = pd.dst_desc();
        prim = dnnl::convolution_forward(pd);
        pdHolder = std::make_unique<dnnl::primitive_desc>(pd);
      } else {
        auto deconvPd = [&](const memory::desc &srcM, const memory::desc &dstM) {
          auto desc = hasBias ? dnnl::deconvolution_forward::desc(
                                    prop_kind::forward_inference, algorithm::deconvolution_direct,
                                    srcM, anyMd(wd), biasMd, dstM, strides, dil, pl, pr)
                              : dnnl::deconvolution_forward::desc(
                                    prop_kind::forward_inference, algorithm::deconvolution_direct,
                                    srcM, anyMd(wd), dstM, strides, dil, pl, pr);
          return dnnl::deconvolution_forward::primitive_desc(desc, attr, cpuEngine());
        };
        auto pd = deconvPd(anyMd(sd), anyMd(dd));
        // A blocked layout pads the channels to its block (8 or 16): a
        // deconvolution to one channel (a U-Net's or a text detector's mask)
        // then computes 16 channels to keep one, 70 ms of a U-Net's 104 on
        // AVX-512 (issue 40). Where the block pads a side's channels more
        // than 4x, that side stays plain.
        auto overPadded = [](const memory::desc &md) {
          return md.data.ndims > 1 && md.data.padded_dims[1] > 4 * md.data.dims[1];
        };
        if (overPadded(pd.src_desc()) || overPadded(pd.dst_desc()))
          try {
            pd = deconvPd(overPadded(pd.src_desc()) ? plainMd(xs) : anyMd(sd),
                          overPadded(pd.dst_desc()) ? plainMd(yt.shape) : anyMd(dd));
          } catch (const dnnl::error &) {
          }
        srcWant = pd.src_desc(), wWant = pd.weights_desc(), dstMd = pd.dst_desc();
        prim = dnnl::deconvolution_forward(pd);
        pdHolder = std::make_unique<dnnl::primitive_desc>(pd);
      }
      srcArgMd = srcWant;
      dstArgMd = dstMd;
    }
  } catch (const dnnl::error &) {
    if (!fuse || absorbed.empty())
      throw;
    return lowerProduct(index, info, false);
  }
  // A chain oneDNN runs only with its reference kernel (a YOLO bottleneck:
  // conv, SiLU as x * sigmoid(x) and a residual add made convolutions
  // "ref:any", 1.1-1.7 s each against 12 ms unfused) is given up too: the
  // product runs alone, its followers as their own steps.
  if (fuse && !absorbed.empty() && isReference(*pdHolder))
    return lowerProduct(index, info, false);
  consumed(p);
  for (FNode *n : absorbed)
    consumed(*n);

  // Operands in the chosen layouts; constant weights reordered once, now.
  int srcBuf = value(need(x, srcWant)).buffer;
  int wBuf;
  if (foldedBn)
    wBuf = constBuffer(wView, folded.data(), wWant);
  else if (const void *wd = constData(w))
    wBuf = constBuffer(wView, wd, wWant);
  else if (info.kind == OpKind::Matmul)
    wBuf = value(need(w, plainMd(ws))).buffer; // (wWant is a view of these bytes)
  else {
    int plainW = value(need(w, plainMd(ws))).buffer;
    wBuf = newBuffer(Buffer::Kind::Temp, wWant.get_size());
    addReorder(plainW, wView, wBuf, wWant, "reorder of the weights of " + p.where);
  }
  int biasBuf = -1;
  if (foldedBn) // (a fused bias and a folded batch_norm exclude each other)
    biasBuf = constBuffer(biasMd, foldedBias.data(), biasMd);
  else if (bias >= 0) {
    biasBuf = value(need(bias, plainMd(logicals_[size_t(bias)].type.shape))).buffer;
  }

  // The destination: the residual's buffer when it is free afterwards (in
  // place), else a fresh one that the residual is first copied into.
  int dstBuf;
  if (residual >= 0) {
    memory::desc resMd = rowsLast ? plainMd(yt.shape) : dstMd;
    int rv = need(residual, resMd);
    int rb = value(rv).buffer;
    // In place only when this step does not also read those bytes (a
    // concat's input is a view of the concat's result).
    auto shares = [&](int other) {
      return other >= 0 && rootOf(plan_->buffers, other).first == rootOf(plan_->buffers, rb).first;
    };
    if (!shares(srcBuf) && !shares(wBuf) && !shares(biasBuf) && freeAfter(rb)) {
      dstBuf = value(rv).buffer;
    } else {
      dstBuf = newBuffer(Buffer::Kind::Temp, resMd.get_size());
      addReorder(value(rv).buffer, resMd, dstBuf, resMd, "copy of the residual of " + p.where);
    }
  } else {
    dstBuf = newBuffer(Buffer::Kind::Temp, dstMd.get_size());
  }
  std::vector<StepArg> args{{DNNL_ARG_SRC, srcBuf, srcArgMd},
                            {DNNL_ARG_WEIGHTS, wBuf, wWant},
                            {DNNL_ARG_DST, dstBuf, dstArgMd}};
  if (biasBuf >= 0)
    args.push_back({DNNL_ARG_BIAS, biasBuf, biasMd});
  addStep(prim, std::move(args), p.where, *pdHolder);
  addValue(cur, dstBuf, dstMd);
}

/// conv2d_transpose with kernel == stride, no padding and one group (a
/// U-Net's upsampling, a mask head): each output pixel reads one input
/// pixel through one tap, so it is the matrix product [N, H*W, C] x
/// [C, O*KH*KW] (the weights as stored, [C, O, KH, KW]) and a reorder that
/// puts each tap's block in its place (depth-to-space). oneDNN's
/// deconvolution kernels compute these at a fraction of a GEMM's speed
/// (the U-Net's 16 -> 1 channel head: 11.9 ms for 8.4 MFLOP, issue 40).
/// The bias (constant) is repeated per tap; eltwise post-ops apply to the
/// product, as the reorder only moves values. False, having changed
/// nothing, when it does not apply.
bool PlanBuilder::lowerDeconvAsMatmul(FNode &p, const OpInfo &info, int bias,
                                      const dnnl::primitive_attr &attr,
                                      const std::vector<FNode *> &absorbed, int cur) {
  const int x = p.ins[0], w = p.ins[1];
  const Dims &xs = logicals_[size_t(x)].type.shape, &ws = logicals_[size_t(w)].type.shape;
  const Dims &ys = p.node->outputs[0].shape;
  if (info.groups != 1 || xs.size() != 4 || ws.size() != 4 || ys.size() != 4)
    return false;
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], O = ws[1], KH = ws[2], KW = ws[3];
  const bool whole = info.strides == Dims{KH, KW} && info.padL == Dims{0, 0} &&
                     info.padR == Dims{0, 0} && info.dilation == Dims{0, 0} &&
                     ys == Dims{N, O, H * KH, W * KW} && ws[0] == C;
  const void *weights = constData(w);
  const auto *biasData = bias >= 0 ? static_cast<const float *>(constData(bias)) : nullptr;
  if (!whole || !weights || (bias >= 0 && !biasData))
    return false;
  const int64_t M = H * W, K = O * KH * KW;
  const memory::desc a = stridedMd({N, M, C}, {C * M, 1, M}); // NCHW read as [N, HW, C]
  const memory::desc b = plainMd({1, C, K}), y = plainMd({N, M, K}), biasMd = plainMd({1, 1, K});
  std::optional<dnnl::matmul::primitive_desc> pd;
  try {
    auto desc = bias >= 0 ? dnnl::matmul::desc(a, anyMd({1, C, K}), biasMd, y)
                          : dnnl::matmul::desc(a, anyMd({1, C, K}), y);
    pd = dnnl::matmul::primitive_desc(desc, attr, cpuEngine());
  } catch (const dnnl::error &) {
    return false;
  }
  if (isReference(*pd))
    return false;
  consumed(p);
  for (FNode *n : absorbed)
    consumed(*n);
  std::vector<StepArg> args{{DNNL_ARG_SRC, value(need(x, plainMd(xs))).buffer, a},
                            {DNNL_ARG_WEIGHTS, constBuffer(b, weights, pd->weights_desc()),
                             pd->weights_desc()}};
  if (biasData) {
    std::vector<float> perTap(static_cast<size_t>(K));
    for (int64_t k = 0; k < K; ++k)
      perTap[size_t(k)] = biasData[k / (KH * KW)];
    args.push_back({DNNL_ARG_BIAS, constBuffer(biasMd, perTap.data(), biasMd), biasMd});
  }
  const int product = newBuffer(Buffer::Kind::Temp, y.get_size());
  args.push_back({DNNL_ARG_DST, product, y});
  addStep(dnnl::matmul(*pd), std::move(args), p.where, *pd);
  // [N, H, W, O, KH, KW] -> [N, O, H, KH, W, KW], which is [N, O, H*KH, W*KW].
  const memory::desc from = stridedMd({N, O, H, KH, W, KW}, {M * K, KH * KW, W * K, KW, K, 1});
  const memory::desc to = plainMd({N, O, H, KH, W, KW});
  const int dst = newBuffer(Buffer::Kind::Temp, to.get_size());
  addReorder(product, from, dst, to, "depth-to-space of " + p.where);
  addValue(cur, dst, plainMd(ys));
  return true;
}

//===----------------------------------------------------------------------===//
// Other ops
//===----------------------------------------------------------------------===//

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
      layout = ChannelBlocks{block, block == C ? 1 : (C + block - 1) / block};
      dstMd = memory::desc(dnnlDims(ys), kF32, tag);
      break;
    }
  if (!layout)
    return false;
  MaxPoolShape shape;
  shape.N = xs[0], shape.H = xs[2], shape.W = xs[3], shape.OH = ys[2], shape.OW = ys[3];
  shape.layout = *layout;
  shape.KH = info.kernel[0], shape.KW = info.kernel[1];
  shape.SH = info.strides[0], shape.SW = info.strides[1];
  shape.DH = info.dilation[0] + 1, shape.DW = info.dilation[1] + 1;
  shape.padTop = info.padL[0], shape.padLeft = info.padL[1];
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

void PlanBuilder::lowerConcat(FNode &n, const OpInfo &info) {
  consumed(n);
  std::vector<memory::desc> mds;
  std::vector<int> bufs;
  for (int l : n.ins) {
    Value v = value(producerValue(l));
    mds.push_back(v.md);
    bufs.push_back(v.buffer);
  }
  auto make = [&]() -> std::optional<dnnl::concat::primitive_desc> {
    try {
      dnnl::concat::primitive_desc pd(int(info.axis), mds, cpuEngine(), baseAttr());
      if (!isReference(pd))
        return pd;
    } catch (const dnnl::error &) {
    }
    return std::nullopt;
  };
  // The inputs as they are; else all in one input's layout (oneDNN 2.6
  // copies only inputs of one layout in its fast kernel: mixed ones, as a
  // DenseNet's growing concat of a region's plain input and blocked
  // convolution results, go to its reference kernel); else all plain,
  // which oneDNN always takes.
  std::optional<dnnl::concat::primitive_desc> pd = make();
  auto relayout = [&](const std::function<memory::desc(size_t)> &mdOf) {
    for (size_t i = 0; i < n.ins.size(); ++i) {
      mds[i] = mdOf(i);
      bufs[i] = value(need(n.ins[i], mds[i])).buffer;
    }
  };
  auto dimsOf = [&](size_t i) {
    const Dims &d = logicals_[size_t(n.ins[i])].type.shape;
    return memory::dims(d.begin(), d.end());
  };
  // Each input's layout in turn, blocked ones first (the convolutions that
  // read the result want them).
  std::vector<memory::desc> targets;
  for (size_t i = 0; i < n.ins.size(); ++i)
    if (!(mds[i] == plainMd(logicals_[size_t(n.ins[i])].type.shape)) &&
        std::none_of(targets.begin(), targets.end(), [&](const memory::desc &t) {
          return sameLayout(t, dimsOf(i)) == std::optional<memory::desc>(mds[i]);
        }))
      targets.push_back(mds[i]);
  for (size_t t = 0; t < targets.size() && !pd; ++t) {
    std::vector<memory::desc> same;
    for (size_t i = 0; i < n.ins.size(); ++i)
      if (auto md = sameLayout(targets[t], dimsOf(i)))
        same.push_back(*md);
    if (same.size() != n.ins.size())
      continue;
    std::swap(mds, same); // tried before any step is added
    if ((pd = make()))
      relayout([&](size_t i) { return mds[i]; });
    else
      std::swap(mds, same);
  }
  if (!pd) {
    relayout([&](size_t i) { return plainMd(logicals_[size_t(n.ins[i])].type.shape); });
    pd = dnnl::concat::primitive_desc(int(info.axis), mds, cpuEngine(), baseAttr());
  }
  if (concatInPlace(n, info, mds, bufs, pd->dst_desc()))
    return;
  std::vector<StepArg> args;
  for (size_t i = 0; i < mds.size(); ++i)
    args.push_back({DNNL_ARG_MULTIPLE_SRC + int(i), bufs[i], mds[i]});
  int dst = newBuffer(Buffer::Kind::Temp, pd->dst_desc().get_size());
  args.push_back({DNNL_ARG_DST, dst, pd->dst_desc()});
  addStep(dnnl::concat(*pd), std::move(args), n.where, *pd);
  addValue(n.out, dst, pd->dst_desc());
}

/// A concat whose producers write its inputs into its result. Possible
/// where each input is one contiguous piece of the result in the layout the
/// input has: every dim before the axis is 1 (batch 1 along the channels),
/// and the layout is plain, or blocked over the channels (nChw8c) by a
/// block that divides every input's channels (no padding inside). Input i
/// then starts (its offset on the axis) x (the elements after the axis)
/// into the result. An input alone in a Temp buffer of its size becomes a
/// view of its piece: its producer writes there and nothing is copied (a
/// U-Net's skip and upsampled halves, a YOLO neck's branches). Another one
/// (a function input, a constant, a tensor already part of another
/// concat's result) is copied to its piece by a reorder. Returns false,
/// adding nothing, where the layout does not allow it or no input can be a
/// view (then the concat primitive copies them all as fast).
bool PlanBuilder::concatInPlace(FNode &n, const OpInfo &info, const std::vector<memory::desc> &mds,
                                const std::vector<int> &bufs, const memory::desc &dst) {
  const Dims &ys = n.node->outputs[0].shape;
  const size_t axis = size_t(info.axis);
  if (axis >= ys.size() || mds.size() != n.ins.size())
    return false;
  for (size_t d = 0; d < axis; ++d)
    if (ys[d] != 1)
      return false;
  const bool plain = dst == plainMd(ys);
  int64_t block = 1;
  if (!plain) {
    const dnnl_blocking_desc_t &blk = dst.data.format_desc.blocking;
    if (axis != 1 || dst.data.format_kind != dnnl_blocked || blk.inner_nblks != 1 ||
        blk.inner_idxs[0] != 1 || sameLayout(dst, dnnlDims(ys)) != std::optional(dst))
      return false;
    block = blk.inner_blks[0];
  }
  int64_t inner = 1;
  for (size_t d = axis + 1; d < ys.size(); ++d)
    inner *= ys[d];
  std::vector<size_t> within; // bytes into the result
  int64_t along = 0;
  for (size_t i = 0; i < mds.size(); ++i) {
    const Dims &xs = logicals_[size_t(n.ins[i])].type.shape;
    if (xs[axis] % block != 0)
      return false;
    if (plain ? !(mds[i] == plainMd(xs)) : sameLayout(dst, dnnlDims(xs)) != std::optional(mds[i]))
      return false;
    within.push_back(size_t(along * inner) * sizeof(float));
    along += xs[axis];
  }
  // Inputs that can be views: Temp, not views already and with no views
  // of their own, of exactly the input's size, each read once here.
  std::vector<bool> view(mds.size(), false);
  for (size_t i = 0; i < mds.size(); ++i) {
    const Buffer &b = plan_->buffers[size_t(bufs[i])];
    bool alone = b.kind == Buffer::Kind::Temp && b.parent < 0 && b.bytes == mds[i].get_size() &&
                 std::count(bufs.begin(), bufs.end(), bufs[i]) == 1;
    for (const Buffer &o : plan_->buffers)
      alone = alone && o.parent != bufs[i];
    view[i] = alone;
  }
  const size_t views = size_t(std::count(view.begin(), view.end(), true));
  if (views == 0)
    return false;
  const int result = newBuffer(Buffer::Kind::Temp, dst.get_size());
  for (size_t i = 0; i < mds.size(); ++i) {
    int piece = bufs[i];
    if (!view[i]) {
      piece = newBuffer(Buffer::Kind::Temp, mds[i].get_size());
      addReorder(bufs[i], mds[i], piece, mds[i],
                 "copy of input " + std::to_string(i) + " of " + n.where);
    }
    // (freeAfter counts the logicals on the piece as the result's.)
    plan_->buffers[size_t(piece)].parent = result;
    plan_->buffers[size_t(piece)].within = within[i];
  }
  plan_->inPlace.push_back(n.where + ": " + std::to_string(views) + " of " +
                           std::to_string(mds.size()) + " inputs written in place");
  addValue(n.out, result, dst);
  return true;
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
