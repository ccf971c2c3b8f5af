//===- plugins/dnnl/lower_deconv.cpp - A deconvolution as a matrix product ===//
//
// lowerDeconvAsMatmul (builder.h): the PlanBuilder's lowering of a
// conv2d_transpose whose kernel is its stride, which lowerProduct
// (lower.cpp) tries first for every deconvolution it does not fuse with a
// residual or a folded batch_norm.
//
//===----------------------------------------------------------------------===//
#include "builder.h"
#include "layouts.h"

namespace tessera::dnnl_plugin {

using dnnl::memory;

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

} // namespace tessera::dnnl_plugin
