//===- codegen/host_ops_nn.cpp - Lowerings of the nn op family ------------===//
//
// conv2d, conv2d_transpose, pooling, dense / matmul / batch_matmul, det,
// bias_add, batch_norm, layer_norm, softmax, log_softmax, the reductions,
// argmax / argmin, cumsum and topk as calls of the kernels in
// codegen/kernels/{nn_conv,nn_pool,nn_linalg,nn_norm,reduce}.cpp.
//
// Next to each lowering: the layout of `ia` / `fa` its kernel reads. Scratch
// offsets are byte offsets into KernelCall::scratchBytes (each region 64-byte
// aligned), -1 for a region the kernel does not use. The GEMM-based kernels
// compute f32/f16/bf16 in float, f64 in double and integers in u32 / u64
// (wrapping products keep their low bits); an operand whose storage is not
// the compute type is converted into scratch first.
//
//===----------------------------------------------------------------------===//
#include "codegen/host_ops.h"

#include <fmt/format.h>

#include <cstring>

#include <algorithm>

namespace tessera::codegen {

namespace {

using ir::DType;
using ir::Shape;

int64_t product(const Shape &s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i)
    p *= s[i];
  return p;
}
int64_t numel(const ir::Type &t) {
  return product(t.shape(), 0, t.rank());
}

int64_t normAxis(int64_t axis, size_t rank) {
  return axis < 0 ? axis + int64_t(rank) : axis;
}


/// Size of the GEMM compute type of `d` (float / double / u32 / u64).
uint64_t computeSize(DType d) {
  return d == DType::F64 || d == DType::I64 || d == DType::U64 ? 8 : 4;
}
/// Whether tensors of `d` are used by the GEMM kernels as they are.
bool computeInPlace(DType d) {
  return d == DType::F32 || d == DType::F64 || d == DType::I32 || d == DType::U32 ||
         d == DType::I64 || d == DType::U64;
}
/// A converted copy of a tensor of type `t` in scratch, or -1.
int64_t takeConverted(Scratch &s, const ir::Type &t) {
  return computeInPlace(t.dtype()) ? -1 : s.take(uint64_t(numel(t)) * computeSize(t.dtype()));
}

/// The view [outer, n, inner] of a shape around `axis`.
struct AxisView {
  int64_t outer, n, inner;
};
AxisView axisView(const Shape &s, int64_t axis) {
  return {product(s, 0, size_t(axis)), s[size_t(axis)], product(s, size_t(axis) + 1, s.size())};
}

//===----------------------------------------------------------------------===//
// Products: one batched GEMM kernel (tk_matmul)
//===----------------------------------------------------------------------===//

// tk_matmul ia: M, K, N, batches, a_rs, a_ks, b_ks, b_ns, mode, offA, offB,
//   offP, offC, bcount, brank, bshape[brank], a_bstride[brank], b_bstride[brank]
// A[m, k] = a[m*a_rs + k*a_ks], B[k, n] = b[k*b_ks + n*b_ns] per batch, the
// batch's offsets its index unravelled over bshape dotted with the element
// strides; C dense [batches, M, N]. mode 0: tiled GEMM (b_ns == 1); 1: b's
// bcount matrices [N, K] transposed into scratch (offP) first; 2: dot
// products (b_ks == 1: few rows, or N == 1). offA/offB/offC: operands converted to
// the compute type.
struct ProductPlan {
  int64_t M, K, N, batches, a_rs, a_ks, b_ks, b_ns, bcount;
  std::vector<int64_t> bshape, aStride, bStride;
};

KernelCall lowerProduct(const ProductPlan &p, const HostOpTypes &t) {
  Scratch s;
  // Dot products for a matrix times a vector (N == 1) and for few rows
  // against a transposed B; else the tiled GEMM, on B transposed first when
  // its rows are not contiguous.
  int64_t mode = p.b_ns == 1                 ? (p.N == 1 && p.b_ks == 1 ? 2 : 0)
                 : p.M < 4 && !t.anySize ? 2
                                         : 1;
  int64_t offA = takeConverted(s, t.inputs[0]);
  int64_t offB = takeConverted(s, t.inputs[1]);
  int64_t offP =
      mode == 1 ? s.take(uint64_t(numel(t.inputs[1])) * computeSize(t.inputs[1].dtype())) : -1;
  int64_t offC = takeConverted(s, t.outputs[0]);
  KernelCall call{"matmul",
                  {p.M, p.K, p.N, p.batches, p.a_rs, p.a_ks, p.b_ks, p.b_ns, mode, offA, offB, offP,
                   offC, p.bcount, int64_t(p.bshape.size())},
                  {},
                  s.bytes, {}};
  for (const auto *v : {&p.bshape, &p.aStride, &p.bStride})
    call.ia.insert(call.ia.end(), v->begin(), v->end());
  return call;
}

// dense(x [..., K], w [U, K]): M = prod(x.shape[:-1]) rows against w^T.
Expected<KernelCall> lowerDense(const ir::Attrs &, const HostOpTypes &t) {
  const Shape &x = t.inputs[0].shape(), &w = t.inputs[1].shape();
  int64_t K = w[1], U = w[0];
  ProductPlan p{product(x, 0, x.size() - 1), K, U, 1, K, 1, 1, K, 1, {}, {}, {}};
  return lowerProduct(p, t);
}

// matmul: numpy broadcasting over the batch dims, 1-D operands promoted.
Expected<KernelCall> lowerMatmul(const ir::Attrs &, const HostOpTypes &t) {
  Shape a = t.inputs[0].shape(), b = t.inputs[1].shape();
  if (a.size() == 1)
    a.insert(a.begin(), 1);
  if (b.size() == 1)
    b.push_back(1);
  int64_t M = a[a.size() - 2], K = a.back(), N = b.back();
  size_t ab = a.size() - 2, bb = b.size() - 2, rank = std::max(ab, bb);
  ProductPlan p{M, K, N, 1, K, 1, N, 1, 0, {}, {}, {}};
  int64_t as = M * K, bs = K * N; // strides of the next batch dim, from the right
  p.bshape.resize(rank), p.aStride.resize(rank), p.bStride.resize(rank);
  for (size_t i = rank; i-- > 0;) {
    size_t fromRight = rank - 1 - i;
    int64_t da = fromRight < ab ? a[ab - 1 - fromRight] : 1;
    int64_t db = fromRight < bb ? b[bb - 1 - fromRight] : 1;
    p.bshape[i] = da == 1 ? db : da;
    p.aStride[i] = da == 1 ? 0 : as;
    p.bStride[i] = db == 1 ? 0 : bs;
    as *= da, bs *= db;
    p.batches *= p.bshape[i];
  }
  // B shared by every batch and A dense over them ([..., M, K] with no dim
  // broadcast): one GEMM of batches * M rows. ViT's projections multiply a
  // [197, 1, 768] input by one weight; as 197 products of one row each,
  // every row read the whole weight again.
  bool bShared = std::all_of(p.bStride.begin(), p.bStride.end(), [](int64_t s) { return s == 0; });
  if (p.batches > 1 && bShared && product(a, 0, ab) == p.batches) {
    p.M *= p.batches;
    p.batches = 1;
    p.bshape.clear(), p.aStride.clear(), p.bStride.clear();
  }
  return lowerProduct(p, t);
}

// batch_matmul(a [Ba, M, K], b [Bb, K, N]) with transpose_a / transpose_b;
// a batch of 1 broadcasts.
Expected<KernelCall> lowerBatchMatmul(const ir::Attrs &attrs, const HostOpTypes &t) {
  const Shape &a = t.inputs[0].shape(), &b = t.inputs[1].shape();
  bool ta = attrs.getBool("transpose_a"), tb = attrs.getBool("transpose_b");
  int64_t M = ta ? a[2] : a[1], K = ta ? a[1] : a[2], N = tb ? b[1] : b[2];
  int64_t B = t.outputs[0].shape()[0];
  ProductPlan p{M,
                K,
                N,
                B,
                ta ? 1 : K,
                ta ? M : 1,
                tb ? 1 : N,
                tb ? K : 1,
                b[0],
                {B},
                {a[0] == 1 ? 0 : M * K},
                {b[0] == 1 ? 0 : K * N}};
  if (B > 1 && b[0] == 1 && a[0] == B && !ta) { // one GEMM of B * M rows (see lowerMatmul)
    p.M *= B;
    p.batches = 1;
    p.bshape = {1}, p.aStride = {0}, p.bStride = {0};
  }
  return lowerProduct(p, t);
}

// det: ia = batches, n, offMatrix (one n x n double matrix).
Expected<KernelCall> lowerDet(const ir::Attrs &, const HostOpTypes &t) {
  int64_t n = t.inputs[0].shape().back();
  Scratch s;
  int64_t off = s.take(uint64_t(n * n) * 8);
  return KernelCall{"det", {numel(t.outputs[0]), n, off}, {}, s.bytes, {}};
}

//===----------------------------------------------------------------------===//
// Convolutions
//===----------------------------------------------------------------------===//

struct Window {
  int64_t sh, sw, dh, dw, pt, pl, pb, pr;
};
Window window(const ir::Attrs &attrs) {
  auto strides = attrs.getInts("strides"), dilation = attrs.getInts("dilation"),
       pads = attrs.getInts("pads");
  return {strides[0], strides[1], dilation[0], dilation[1], pads[0], pads[1], pads[2], pads[3]};
}

// conv2d: ia = sh, sw, dh, dw, pad_top, pad_left, groups, mode, offX, offW,
// offCol, offY, offTrim, offCentre, lines. mode 2 (direct) when each group has one input
// channel; 1 (GEMM on the input) for a 1x1 stride-1 unpadded conv; else 3
// (the input's taps gathered as the GEMM packs them) for at most
// kConvGatherRows output channels per group at column stride 1 over rows of
// whole 64-byte panels and static sizes, 0 (im2col into offCol, Cg*KH*KW x
// OH*OW values) otherwise; over sizes known at run
// time, offTrim: room for the weights of the taps that read the input,
// and offCentre >= 0 when the weights are laid out with their centre taps
// after them, at that element, then (lines = 1) their centre rows and
// columns).
Expected<KernelCall> lowerConv2d(const ir::Attrs &attrs, const HostOpTypes &t) {
  Window w = window(attrs);
  int64_t groups = attrs.getInt("groups");
  const Shape &ws = t.inputs[1].shape(), &ys = t.outputs[0].shape();
  DType d = t.inputs[0].dtype();
  uint64_t cs = computeSize(d);
  // Taps gathered by the GEMM (mode 3) where that beats im2col: each tile
  // of output channels (the GEMM's row tile, kMT in codegen/kernels/
  // nn_gemm.h) gathers them again, and a panel of 64 bytes of outputs
  // is one copy only when it lies in one output row at stride 1. Measured
  // (1 thread, AVX2): U-Net's 16-64-channel convs over rows of 64-256
  // outputs 25% faster in all; DenseNet-121's 32-channel convs over rows
  // of 56 and 28, 8% slower, so they keep im2col. Over sizes known at run
  // time, im2col (the mode must not change with the sizes). The kernel
  // gathers in mode 0 too where the GEMM keeps every row of output channels
  // in one tile (nn_conv.cpp), which the lowering cannot know: it depends
  // on the thread count.
  constexpr int64_t kConvGatherRows = 72;
  const bool gather = !t.anySize && ws[0] / groups <= kConvGatherRows && w.sw == 1 &&
                      ys[3] % (64 / int64_t(cs)) == 0;
  int64_t mode = ws[1] == 1 ? 2
                 : ws[2] == 1 && ws[3] == 1 && w.sh == 1 && w.sw == 1 && w.pt == 0 && w.pl == 0 &&
                         w.pb == 0 && w.pr == 0
                     ? 1
                 : gather ? 3
                          : 0;
  Scratch s;
  // Sizes known at run time: the kernel drops the taps that read only
  // padding there, as simplify-inference does at compile time. (First: a
  // region of static size keeps the later offsets polynomials in the sizes.)
  int64_t offTrim = (mode == 0 || mode == 3) && t.anySize ? s.take(uint64_t(ws[0] * ws[1] * ws[2] * ws[3]) * cs)
                                           : -1;
  int64_t offX = takeConverted(s, t.inputs[0]), offW = takeConverted(s, t.inputs[1]);
  int64_t offCol = mode == 0 ? s.take(uint64_t(ws[1] * ws[2] * ws[3] * ys[2] * ys[3]) * cs) : -1;
  int64_t offY = takeConverted(s, t.outputs[0]);
  KernelCall call{
      "conv2d",
      {w.sh, w.sw, w.dh, w.dw, w.pt, w.pl, groups, mode, offX, offW, offCol, offY, offTrim, -1,
       0},
      {},
      s.bytes,
      {}};
  // Constant weights of a kernel with a centre tap: its weights laid out
  // after them too ([O, Cg]), so that a map no wider than the dilation (the
  // centre tap alone reads it) needs no copy per run; for a dilated kernel
  // also its centre row [O, Cg, 1, KW] and column [O, Cg, KH, 1] (a map
  // that narrow in one direction only: DeepLabV3's ASPP on wide images).
  const ir::Tensor *weights = constantInput(t, 1);
  if (offTrim >= 0 && offW < 0 && weights && ws[2] % 2 == 1 && ws[3] % 2 == 1) {
    const int64_t taps = ws[2] * ws[3], oc = ws[0] * ws[1], KH = ws[2], KW = ws[3];
    const bool lines = w.dh > 1 || w.dw > 1;
    ir::Tensor packed(weights->dtype(), {oc * (taps + 1 + (lines ? KW + KH : 0))});
    const size_t es = ir::dtypeSize(weights->dtype());
    std::memcpy(packed.bytes(), weights->bytes(), weights->nbytes());
    uint8_t *out = packed.bytes() + size_t(oc * taps) * es;
    auto put = [&](int64_t i, int64_t r, int64_t c) { // tap (r, c) of filter slice i
      std::memcpy(out, weights->bytes() + size_t(i * taps + r * KW + c) * es, es);
      out += es;
    };
    for (int64_t i = 0; i < oc; ++i)
      put(i, KH / 2, KW / 2);
    for (int64_t i = 0; lines && i < oc; ++i)
      for (int64_t c = 0; c < KW; ++c)
        put(i, KH / 2, c);
    for (int64_t i = 0; lines && i < oc; ++i)
      for (int64_t r = 0; r < KH; ++r)
        put(i, r, KW / 2);
    call.ia[13] = oc * taps;
    call.ia[14] = lines;
    call.packed.push_back({1, std::move(packed)});
  }
  return call;
}

// conv2d_transpose: ia = sh, sw, dh, dw, pad_top, pad_left, groups, offX,
// offW, offCol, offY (offCol: Og*KH*KW x H*W values). output_padding only
// shapes the output (its type).
Expected<KernelCall> lowerConv2dTranspose(const ir::Attrs &attrs, const HostOpTypes &t) {
  Window w = window(attrs);
  const Shape &xs = t.inputs[0].shape(), &ws = t.inputs[1].shape();
  uint64_t cs = computeSize(t.inputs[0].dtype());
  Scratch s;
  int64_t offX = takeConverted(s, t.inputs[0]), offW = takeConverted(s, t.inputs[1]);
  int64_t offCol = s.take(uint64_t(ws[1] * ws[2] * ws[3] * xs[2] * xs[3]) * cs);
  int64_t offY = takeConverted(s, t.outputs[0]);
  return KernelCall{
      "conv2d_transpose",
      {w.sh, w.sw, w.dh, w.dw, w.pt, w.pl, attrs.getInt("groups"), offX, offW, offCol, offY},
      {},
      s.bytes, {}};
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

/// KH, KW, sh, sw, dh, dw, pad_top, pad_left (every pooling kernel starts so).
std::vector<int64_t> poolWindow(const ir::Attrs &attrs) {
  auto k = attrs.getInts("pool_size");
  Window w = window(attrs);
  return {k[0], k[1], w.sh, w.sw, w.dh, w.dw, w.pt, w.pl};
}

// max_pool2d: ia = the pool window. ceil_mode only shapes the output.
Expected<KernelCall> lowerMaxPool(const ir::Attrs &attrs, const HostOpTypes &) {
  return KernelCall{"max_pool2d", poolWindow(attrs), {}, 0, {}};
}

// max_pool2d_indices: ia = the pool window, column_major (storage_order 1).
Expected<KernelCall> lowerMaxPoolIndices(const ir::Attrs &attrs, const HostOpTypes &) {
  auto ia = poolWindow(attrs);
  ia.push_back(attrs.getInt("storage_order") == 1);
  return KernelCall{"max_pool2d_indices", ia, {}, 0, {}};
}

// avg_pool2d: ia = the pool window, pad_bottom, pad_right, count_include_pad.
Expected<KernelCall> lowerAvgPool(const ir::Attrs &attrs, const HostOpTypes &) {
  auto ia = poolWindow(attrs);
  Window w = window(attrs);
  ia.insert(ia.end(), {w.pb, w.pr, int64_t(attrs.getBool("count_include_pad"))});
  return KernelCall{"avg_pool2d", ia, {}, 0, {}};
}

//===----------------------------------------------------------------------===//
// Bias, normalisation, softmax
//===----------------------------------------------------------------------===//

// bias_add: ia = outer, C, inner around 'axis'.
Expected<KernelCall> lowerBiasAdd(const ir::Attrs &attrs, const HostOpTypes &t) {
  const Shape &s = t.inputs[0].shape();
  AxisView v = axisView(s, normAxis(attrs.getInt("axis"), s.size()));
  return KernelCall{"bias_add", {v.outer, v.n, v.inner}, {}, 0, {}};
}

// batch_norm: ia = outer, C, inner around 'axis'; fa = epsilon.
Expected<KernelCall> lowerBatchNorm(const ir::Attrs &attrs, const HostOpTypes &t) {
  const Shape &s = t.inputs[0].shape();
  AxisView v = axisView(s, normAxis(attrs.getInt("axis"), s.size()));
  return KernelCall{"batch_norm", {v.outer, v.n, v.inner}, {attrs.getFloat("epsilon")}, 0, {}};
}

// layer_norm: ia = outer, inner, R, has_beta, offGamma, offBeta,
// normShape[R], gammaStrides[R], betaStrides[R]; fa = epsilon. The strides
// are gamma's / beta's element strides over the normalised shape (0 where
// they broadcast); scratch holds both expanded, as doubles.
Expected<KernelCall> lowerLayerNorm(const ir::Attrs &attrs, const HostOpTypes &t) {
  const Shape &s = t.inputs[0].shape();
  size_t axis = size_t(normAxis(attrs.getInt("axis"), s.size())), R = s.size() - axis;
  int64_t inner = product(s, axis, s.size());
  int64_t outer = inner == 0 ? 0 : product(s, 0, axis);
  bool hasBeta = t.inputs.size() > 2;
  Scratch scratch;
  int64_t offG = scratch.take(uint64_t(inner) * 8);
  int64_t offB = scratch.take(hasBeta ? uint64_t(inner) * 8 : 0);
  std::vector<int64_t> ia = {outer, inner, int64_t(R), hasBeta, offG, offB};
  ia.insert(ia.end(), s.begin() + std::ptrdiff_t(axis), s.end());
  for (size_t arg = 1; arg < 3; ++arg) {
    std::vector<int64_t> strides(R, 0);
    if (arg < t.inputs.size()) {
      const Shape &p = t.inputs[arg].shape();
      int64_t stride = 1;
      for (size_t i = p.size(); i-- > 0;) {
        if (p[i] != 1)
          strides[R - p.size() + i] = stride;
        stride *= p[i];
      }
    }
    ia.insert(ia.end(), strides.begin(), strides.end());
  }
  return KernelCall{"layer_norm", ia, {attrs.getFloat("epsilon")}, scratch.bytes, {}};
}

// softmax, log_softmax: ia = outer, n, inner around 'axis', log.
Lowering softmaxLowering(bool log) {
  return [log](const ir::Attrs &attrs, const HostOpTypes &t) -> Expected<KernelCall> {
    const Shape &s = t.inputs[0].shape();
    AxisView v = axisView(s, normAxis(attrs.getInt("axis"), s.size()));
    return KernelCall{"softmax", {v.outer, v.n, v.inner, log}, {}, 0, {}};
  };
}

//===----------------------------------------------------------------------===//
// Reductions, arg-reductions, cumsum, topk
//===----------------------------------------------------------------------===//

constexpr size_t kMaxReduceRank = 16; // reduce.cpp's limit on collapsed dims

// reduce_*: ia = kind (0 sum, 1 mean, 2 max, 3 min, 4 prod), r, outN, count,
// par, offAcc, dims[r], reduced[r], ostride[r]. The input shape collapsed:
// size-1 dims dropped, neighbours that are both kept or both reduced merged;
// ostride: a kept dim's element stride in the output (0 for reduced dims);
// par: the largest kept dim, split over the threads (-1: none); count: the
// elements folded into each output; offAcc: outN 16-byte accumulators.
Lowering reduceLowering(int64_t kind) {
  return [kind](const ir::Attrs &attrs, const HostOpTypes &t) -> Expected<KernelCall> {
    const Shape &s = t.inputs[0].shape();
    std::vector<int64_t> axes = attrs.getInts("axes");
    std::vector<bool> reduced(s.size(), axes.empty());
    for (int64_t a : axes)
      reduced[size_t(normAxis(a, s.size()))] = true;
    std::vector<int64_t> dims, flags;
    int64_t count = 1;
    for (size_t i = 0; i < s.size(); ++i) {
      if (reduced[i])
        count *= s[i];
      if (s[i] == 1)
        continue;
      if (!dims.empty() && flags.back() == int64_t(reduced[i]))
        dims.back() *= s[i];
      else
        dims.push_back(s[i]), flags.push_back(reduced[i]);
    }
    if (dims.empty())
      dims.push_back(1), flags.push_back(1);
    if (dims.size() > kMaxReduceRank)
      return Error::format("the input {} has more than {} alternating kept and reduced dims",
                           t.inputs[0].str(), kMaxReduceRank);
    size_t r = dims.size();
    std::vector<int64_t> ostride(r, 0);
    int64_t par = -1;
    for (size_t i = r, stride = 1; i-- > 0;)
      if (!flags[i]) {
        ostride[i] = int64_t(stride);
        stride *= size_t(dims[i]);
        if (par < 0 || dims[i] > dims[size_t(par)])
          par = int64_t(i);
      }
    int64_t outN = numel(t.outputs[0]);
    Scratch scratch;
    int64_t offAcc = scratch.take(uint64_t(outN) * 16);
    std::vector<int64_t> ia = {kind, int64_t(r), outN, count, par, offAcc};
    for (const auto *v : {&dims, &flags, &ostride})
      ia.insert(ia.end(), v->begin(), v->end());
    return KernelCall{"reduce", ia, {}, scratch.bytes, {}};
  };
}

// argmax, argmin: ia = outer, n, inner around 'axis', is_max, select_last_index.
Lowering argLowering(bool isMax) {
  return [isMax](const ir::Attrs &attrs, const HostOpTypes &t) -> Expected<KernelCall> {
    const Shape &s = t.inputs[0].shape();
    AxisView v = axisView(s, normAxis(attrs.getInt("axis"), s.size()));
    return KernelCall{
        "argmax", {v.outer, v.n, v.inner, isMax, attrs.getBool("select_last_index")}, {}, 0, {}};
  };
}

// cumsum: ia = outer, n, inner around 'axis', exclusive, reverse.
Expected<KernelCall> lowerCumsum(const ir::Attrs &attrs, const HostOpTypes &t) {
  const Shape &s = t.inputs[0].shape();
  AxisView v = axisView(s, normAxis(attrs.getInt("axis"), s.size()));
  return KernelCall{"nn_cumsum",
                    {v.outer, v.n, v.inner, attrs.getBool("exclusive"), attrs.getBool("reverse")},
                    {},
                    0, {}};
}

// topk: ia = outer, n, inner around 'axis', k, largest, offKeys, offOrder,
// offTmp, offSelect (n 8-byte keys, two arrays of n indices, n keys the
// selection reorders, one after the other: the offsets are multiples of n,
// so a step over a run-time n computes them).
Expected<KernelCall> lowerTopk(const ir::Attrs &attrs, const HostOpTypes &t) {
  const Shape &s = t.inputs[0].shape();
  AxisView v = axisView(s, normAxis(attrs.getInt("axis"), s.size()));
  return KernelCall{"nn_topk",
                    {v.outer, v.n, v.inner, attrs.getInt("k"), attrs.getBool("largest"), 0,
                     8 * v.n, 16 * v.n, 24 * v.n},
                    {},
                    uint64_t(32 * std::max<int64_t>(v.n, 1)), {}};
}

} // namespace

void addNnLowerings(LoweringTable &table) {
  table.add("conv2d", lowerConv2d);
  table.add("conv2d_transpose", lowerConv2dTranspose);
  table.add("max_pool2d", lowerMaxPool);
  table.add("max_pool2d_indices", lowerMaxPoolIndices);
  table.add("avg_pool2d", lowerAvgPool);
  table.add("global_avg_pool2d",
            [](const ir::Attrs &, const HostOpTypes &) -> Expected<KernelCall> {
              return KernelCall{"global_avg_pool2d", {}, {}, 0, {}};
            });
  table.add("global_max_pool2d",
            [](const ir::Attrs &, const HostOpTypes &) -> Expected<KernelCall> {
              return KernelCall{"global_max_pool2d", {}, {}, 0, {}};
            });
  table.add("dense", lowerDense);
  table.add("matmul", lowerMatmul);
  table.add("batch_matmul", lowerBatchMatmul);
  table.add("det", lowerDet);
  table.add("bias_add", lowerBiasAdd);
  table.add("batch_norm", lowerBatchNorm);
  table.add("layer_norm", lowerLayerNorm);
  table.add("softmax", softmaxLowering(false));
  table.add("log_softmax", softmaxLowering(true));
  const char *reductions[] = {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min",
                              "reduce_prod"};
  for (int64_t kind = 0; kind < 5; ++kind)
    table.add(reductions[kind], reduceLowering(kind));
  table.add("argmax", argLowering(true));
  table.add("argmin", argLowering(false));
  table.add("cumsum", lowerCumsum);
  table.add("topk", lowerTopk);
}

} // namespace tessera::codegen
