//===- ir/ops/nn_matmul.cpp - NN ops: matrix products --------------------===//
//
// The matrix products of the NN family: dense, matmul and batch_matmul
// (ints accumulate in int64, floats in double). Each op has a type relation
// and a reference kernel; semantics follow ONNX (opset 13-17).
//
//===----------------------------------------------------------------------===//
#include "ir/ops/common.h"
#include "ir/ops/ops.h"

#include <span>
#include <utility>
#include <vector>

namespace tessera::ir::ops {

namespace {

//===----------------------------------------------------------------------===//
// Shared helpers of the products
//===----------------------------------------------------------------------===//

// Integer products wrap (two's complement) instead of overflowing.
int64_t wrapMulAdd(int64_t acc, int64_t a, int64_t b) {
  return int64_t(uint64_t(acc) + uint64_t(a) * uint64_t(b));
}

/// out[o] = sum_k a[aOff(o) + k*aStep] * b[bOff(o) + k*bStep]: the one inner
/// loop behind dense, matmul and batch_matmul. `offsets` yields, per output
/// element, the start offsets into a and b.
template <typename Offsets>
Tensor productKernel(const Tensor &a, const Tensor &b, const Type &outType, int64_t K,
                     int64_t aStep, int64_t bStep, Offsets offsets) {
  Tensor y(outType.dtype(), outType.shape());
  bool fp = isFloat(outType.dtype());
  for (int64_t o = 0; o < y.numel(); ++o) {
    auto [ao, bo] = offsets(o);
    if (fp) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc += a.getDouble(ao + k * aStep) * b.getDouble(bo + k * bStep);
      y.setDouble(o, acc);
    } else {
      int64_t acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc = wrapMulAdd(acc, a.getInt(ao + k * aStep), b.getInt(bo + k * bStep));
      y.setInt(o, acc);
    }
  }
  return y;
}

//===----------------------------------------------------------------------===//
// dense(data [..., K], weight [U, K]) -> [..., U]: y = data x weight^T
// (ONNX Gemm with transB=1, generalised to leading batch dims).
//===----------------------------------------------------------------------===//

Expected<Type> denseRelation(std::span<const Type> in, const Attrs &) {
  TS_RETURN_IF_ERROR(requireMinRank(in, 0, 1, "data"));
  TS_RETURN_IF_ERROR(requireRank(in, 1, 2, "weight"));
  TS_RETURN_IF_ERROR(requireNumeric(in, 0));
  TS_RETURN_IF_ERROR(requireSameDType(in));
  const Shape &x = in[0].shape(), &w = in[1].shape();
  if (x.back() != w[1])
    return Error::format("inner dimensions do not match: data has {}, weight has {}", x.back(),
                         w[1]);
  Shape out = x;
  out.back() = w[0];
  return Type::tensor(in[0].dtype(), out);
}

Expected<std::vector<Tensor>> denseKernel(std::span<const Tensor> in, const Attrs &,
                                          const Type &outType) {
  int64_t K = in[1].shape()[1], U = in[1].shape()[0];
  return std::vector<Tensor>{productKernel(in[0], in[1], outType, K, 1, 1, [&](int64_t o) {
    return std::pair<int64_t, int64_t>{(o / U) * K, (o % U) * K};
  })};
}

//===----------------------------------------------------------------------===//
// matmul(a, b): numpy / ONNX MatMul. A 1-D a is [1, K] and a 1-D b is [K, 1],
// with the added dim removed from the result; leading (batch) dims broadcast.
//===----------------------------------------------------------------------===//

struct MatmulShapes {
  Shape a, b;  // promoted to rank >= 2
  Shape batch; // broadcast batch dims
  Shape out;   // result shape (promoted dims removed)
};

Expected<MatmulShapes> matmulShapes(std::span<const Type> in) {
  TS_RETURN_IF_ERROR(requireMinRank(in, 0, 1, "a"));
  TS_RETURN_IF_ERROR(requireMinRank(in, 1, 1, "b"));
  TS_RETURN_IF_ERROR(requireNumeric(in, 0));
  TS_RETURN_IF_ERROR(requireSameDType(in));
  MatmulShapes s;
  s.a = in[0].shape();
  s.b = in[1].shape();
  if (s.a.size() == 1)
    s.a.insert(s.a.begin(), 1);
  if (s.b.size() == 1)
    s.b.push_back(1);
  int64_t K = s.a.back(), K2 = s.b[s.b.size() - 2];
  if (K != K2)
    return Error::format("inner dimensions do not match: a has {}, b has {}", K, K2);
  std::span<const int64_t> aBatch(s.a.data(), s.a.size() - 2), bBatch(s.b.data(), s.b.size() - 2);
  auto batch = broadcastShapes(aBatch, bBatch);
  if (!batch.ok())
    return Error::format("batch dimensions: {}", batch.error().message());
  s.batch = *batch;
  s.out = s.batch;
  if (in[0].rank() >= 2)
    s.out.push_back(s.a[s.a.size() - 2]);
  if (in[1].rank() >= 2)
    s.out.push_back(s.b.back());
  return s;
}

Expected<Type> matmulRelation(std::span<const Type> in, const Attrs &) {
  TS_ASSIGN_OR_RETURN(MatmulShapes s, matmulShapes(in));
  return Type::tensor(in[0].dtype(), s.out);
}

Expected<std::vector<Tensor>> matmulKernel(std::span<const Tensor> in, const Attrs &,
                                           const Type &outType) {
  Type types[2] = {in[0].type(), in[1].type()};
  TS_ASSIGN_OR_RETURN(MatmulShapes s, matmulShapes(types));
  int64_t M = s.a[s.a.size() - 2], K = s.a.back(), N = s.b.back();
  std::span<const int64_t> aBatch(s.a.data(), s.a.size() - 2), bBatch(s.b.data(), s.b.size() - 2);
  std::vector<int64_t> bidx(s.batch.size());
  return std::vector<Tensor>{productKernel(in[0], in[1], outType, K, 1, N, [&](int64_t o) {
    int64_t n = o % N, m = (o / N) % M, batch = o / (N * M);
    unravelIndex(batch, s.batch, bidx);
    int64_t ab = broadcastSourceIndex(bidx, aBatch), bb = broadcastSourceIndex(bidx, bBatch);
    return std::pair<int64_t, int64_t>{(ab * M + m) * K, bb * K * N + n};
  })};
}

//===----------------------------------------------------------------------===//
// batch_matmul(a [B, M, K], b [B, K, N]) -> [B, M, N]; transpose_a /
// transpose_b swap the last two dims of a / b first; a batch of 1 broadcasts.
//===----------------------------------------------------------------------===//

struct BatchMatmulDims {
  int64_t B, M, K, N;
};

Expected<BatchMatmulDims> batchMatmulDims(std::span<const Type> in, const Attrs &attrs) {
  TS_RETURN_IF_ERROR(requireRank(in, 0, 3, "a"));
  TS_RETURN_IF_ERROR(requireRank(in, 1, 3, "b"));
  TS_RETURN_IF_ERROR(requireNumeric(in, 0));
  TS_RETURN_IF_ERROR(requireSameDType(in));
  const Shape &a = in[0].shape(), &b = in[1].shape();
  bool ta = attrs.getBool("transpose_a"), tb = attrs.getBool("transpose_b");
  int64_t M = ta ? a[2] : a[1], K = ta ? a[1] : a[2];
  int64_t K2 = tb ? b[2] : b[1], N = tb ? b[1] : b[2];
  if (a[0] != b[0] && a[0] != 1 && b[0] != 1)
    return Error::format("batch sizes {} and {} do not match (must be equal or 1)", a[0], b[0]);
  if (K != K2)
    return Error::format("inner dimensions do not match: a has {}, b has {}", K, K2);
  return BatchMatmulDims{a[0] == 1 ? b[0] : a[0], M, K, N};
}

Expected<Type> batchMatmulRelation(std::span<const Type> in, const Attrs &attrs) {
  TS_ASSIGN_OR_RETURN(BatchMatmulDims d, batchMatmulDims(in, attrs));
  return Type::tensor(in[0].dtype(), {d.B, d.M, d.N});
}

Expected<std::vector<Tensor>> batchMatmulKernel(std::span<const Tensor> in, const Attrs &attrs,
                                                const Type &outType) {
  Type types[2] = {in[0].type(), in[1].type()};
  TS_ASSIGN_OR_RETURN(BatchMatmulDims d, batchMatmulDims(types, attrs));
  bool ta = attrs.getBool("transpose_a"), tb = attrs.getBool("transpose_b");
  bool aBcast = in[0].shape()[0] == 1, bBcast = in[1].shape()[0] == 1;
  int64_t aStep = ta ? d.M : 1, bStep = tb ? 1 : d.N;
  return std::vector<Tensor>{
      productKernel(in[0], in[1], outType, d.K, aStep, bStep, [&](int64_t o) {
        int64_t n = o % d.N, m = (o / d.N) % d.M, batch = o / (d.N * d.M);
        int64_t ab = aBcast ? 0 : batch, bb = bBcast ? 0 : batch;
        int64_t ao = ab * d.M * d.K + (ta ? m : m * d.K);
        int64_t bo = bb * d.K * d.N + (tb ? n * d.K : n);
        return std::pair<int64_t, int64_t>{ao, bo};
      })};
}

} // namespace

Status registerMatmulOps(OpRegistry &r) {
  TS_RETURN_IF_ERROR(r.add(Op{
      .name = "dense",
      .description = "fully connected layer: data [..., K] x weight [U, K]^T -> [..., U]",
      .argNames = {"data", "weight"},
      .minArgs = 2,
      .maxArgs = 2,
      .attrs = {},
      .pattern = OpPattern::ComputeHeavy,
      .relation = denseRelation,
      .kernel = denseKernel,
  }));

  TS_RETURN_IF_ERROR(r.add(Op{
      .name = "matmul",
      .description = "matrix product with numpy/ONNX MatMul broadcasting and 1-D promotion",
      .argNames = {"a", "b"},
      .minArgs = 2,
      .maxArgs = 2,
      .attrs = {},
      .pattern = OpPattern::ComputeHeavy,
      .relation = matmulRelation,
      .kernel = matmulKernel,
  }));

  TS_RETURN_IF_ERROR(r.add(Op{
      .name = "batch_matmul",
      .description = "batched matrix product [B, M, K] x [B, K, N] -> [B, M, N]",
      .argNames = {"a", "b"},
      .minArgs = 2,
      .maxArgs = 2,
      .attrs = {AttrSpec{"transpose_a", AttrKind::Bool, AttrValue(false),
                         "use a with its last two dims swapped"},
                AttrSpec{"transpose_b", AttrKind::Bool, AttrValue(false),
                         "use b with its last two dims swapped"}},
      .pattern = OpPattern::ComputeHeavy,
      .relation = batchMatmulRelation,
      .kernel = batchMatmulKernel,
  }));
  return okStatus();
}

} // namespace tessera::ir::ops
