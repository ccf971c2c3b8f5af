//===- plugins/dnnl/lower.cpp - Nodes to oneDNN primitives: products -----===//
//
// The lowering half of PlanBuilder (builder.h): lower() picks each node's
// lowering. Products (conv2d, conv2d_transpose, dense with format "any";
// matmul over its plain operands) are here, fused with what follows them;
// the other ops take their input in the layout it already has when oneDNN
// supports that (lower_ops.cpp: pooling, eltwise, binary, batch_norm;
// plain for softmax, layer_norm, views), and concat's inputs are written
// into its result where they can be (lower_concat.cpp). A deconvolution
// whose kernel is its stride runs as a matrix product (lower_deconv.cpp).
//
//===----------------------------------------------------------------------===//
#include "builder.h"
#include "layouts.h"

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

/// Whether a convolution oneDNN would run as brgconv (channels-last) runs
/// faster channel-blocked, where oneDNN's direct jit kernel takes it: a
/// strided (downsampling) spatial kernel over at least 256 input channels.
/// Measured on a Zen 4 (AVX-512, oneDNN 2.6, one thread, nChw16c against
/// the brgconv oneDNN picks): the wav2vec2 front end's 1-D convolutions
/// (512 -> 512, kernel 3, stride 2, 3199 to 199 samples) 1.13-1.27x faster,
/// ResNet-50's 3x3 stride-2 convolutions over 256 and 512 channels 1.3x;
/// over 32 to 128 channels neither wins by more than 6%, nor does either for
/// stride 1 or 1x1 kernels. A widening one (YOLOv5s's 256 -> 512, 3x3,
/// stride 2, 40x40) ran 3-4% slower blocked: only as many or fewer output
/// channels than input ones.
bool blockedPaysOverBrgconv(const OpInfo &info, const Dims &weights,
                            const dnnl::primitive_desc_base &pd) {
  const bool strided =
      std::any_of(info.strides.begin(), info.strides.end(), [](int64_t s) { return s > 1; });
  return info.groups == 1 && weights.size() == 4 && weights[2] * weights[3] > 1 &&
         weights[1] >= 256 && weights[0] <= weights[1] && strided &&
         std::string_view(pd.impl_info_str()).rfind("brgconv:", 0) == 0;
}

/// Whether a matmul with constant weights runs as an inner product: a
/// untransposed over row-major rows, b without batch dims (or all 1), so
/// that the product is [rows, K] x [K, N]. oneDNN 2.6's matmul takes its
/// weights plain and packs them at every call; the inner product takes
/// them packed. Measured on an AVX-512 Xeon (one thread, brgemm both):
/// BERT's 128 x 768 -> 3072 6.8 -> 3.5 ms, 49 x 768 -> 3072 3.1 -> 1.5 ms,
/// ViT's 197-row products 5-10% faster, one-row ones (memory-bound) and a
/// 1280 -> 1000 classifier within noise; none slower.
bool weightsAsDense(const OpInfo &info) {
  const Dims &b = info.bDims;
  return !info.transA && info.aDims.size() >= 2 && b.size() >= 2 &&
         std::all_of(b.begin(), b.end() - 2, [](int64_t d) { return d == 1; });
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
  // [rows, K] x [U, K] (weights `wd`) from srcArgMd to dstArgMd, over the
  // input's and the result's plain bytes.
  auto innerProduct = [&](const memory::dims &wd) {
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
  };
  try {
    if (info.kind == OpKind::Matmul && constData(w) && weightsAsDense(info)) {
      // [rows, K] x constant [K, N] as an inner product: its weights are
      // reordered once, at init, into the blocked layout its brgemm kernel
      // reads, where oneDNN 2.6's matmul takes plain weights only and
      // copies them into blocks at every call (weightsAsDense).
      const size_t r = info.bDims.size();
      const int64_t K = info.bDims[r - 2], N = info.bDims[r - 1];
      const int64_t rows = logicals_[size_t(x)].type.numel() / K;
      memory::dims sd{rows, K}, wd{N, K}, dd{rows, N};
      srcArgMd = plainMd(sd);
      dstArgMd = plainMd(dd);
      wView = info.transB ? plainMd(wd) : stridedMd(wd, {1, N});
      biasMd = memory::desc(memory::dims{N}, kF32, Tag::x);
      innerProduct(wd);
    } else if (info.kind == OpKind::Matmul) {
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
      innerProduct(wd);
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
        if (!wino && blockedPaysOverBrgconv(info, ws, pd))
          if (std::optional<memory::desc> src = channelBlocked(sd, 16),
              dst = channelBlocked(dd, 16);
              src && dst && sd[1] % 16 == 0 && dd[1] % 16 == 0) {
            srcM = *src, dstM = *dst;
            try {
              auto b = convPd(algorithm::convolution_direct);
              if (!isReference(b))
                pd = b;
            } catch (const dnnl::error &) {
            }
            if (pd.src_desc() != *src)
              srcM = anyMd(sd), dstM = anyMd(dd);
          }
        // A result that a channel concat of batch 1 reads can be written
        // straight into its piece of the concat's result (concatInPlace)
        // unless it is channels-last, where the pieces interleave (AVX-512
        // brgconv picks nhwc): ask for a channel-blocked result instead,
        // which oneDNN's direct kernels write as fast.
        if (readByChannelConcat(cur) && channelsLast(pd.dst_desc(), dd))
          for (int64_t block : {16, 8}) {
            std::optional<memory::desc> blocked = channelBlocked(dd, block);
            if (!blocked || dd[1] % block != 0)
              continue;
            dstM = *blocked;
            try {
              auto b = convPd(wino ? algorithm::convolution_winograd
                                   : algorithm::convolution_direct);
              if (!isReference(b)) {
                pd = b;
                break;
              }
            } catch (const dnnl::error &) {
            }
          }
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

} // namespace tessera::dnnl_plugin
