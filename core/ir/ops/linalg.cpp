//===- ir/ops/linalg.cpp - Linear algebra ops -----------------------------===//
//
// Linear algebra on the trailing matrix dims, with ONNX semantics:
//   det   ONNX Det (opset 11): determinant of square matrices [..., M, M] -> [...]
//
// The reference kernel factors each matrix by LU decomposition with partial
// pivoting, computed in double and rounded once to the output dtype.
//
//===----------------------------------------------------------------------===//
#include "ir/ops/common.h"
#include "ir/ops/ops.h"

#include <fmt/format.h>

#include <cmath>
#include <utility>
#include <vector>

namespace tessera::ir::ops {

namespace {

// --- det ------------------------------------------------------------------------

/// [..., M, M] float -> [...]: the batch dims of the input.
Expected<Type> detRelation(std::span<const Type> in, const Attrs &) {
  TS_RETURN_IF_ERROR(requireFloat(in, 0));
  TS_RETURN_IF_ERROR(requireMinRank(in, 0, 2, "x"));
  const Shape &s = in[0].shape();
  int64_t m = s[s.size() - 2], n = s.back();
  if (m != n)
    return Error::format("the last two dims must be equal (square matrices), got {} x {}", m, n);
  return Type::tensor(in[0].dtype(), Shape(s.begin(), s.end() - 2));
}

/// Determinant of the n x n row-major matrix `a` (destroyed): LU with partial
/// pivoting; a zero pivot column means a singular matrix (det 0).
double luDeterminant(std::vector<double> &a, int64_t n) {
  double det = 1.0;
  for (int64_t k = 0; k < n; ++k) {
    int64_t p = k;
    for (int64_t i = k + 1; i < n; ++i)
      if (std::abs(a[size_t(i * n + k)]) > std::abs(a[size_t(p * n + k)]))
        p = i;
    double pivot = a[size_t(p * n + k)];
    if (std::isnan(pivot))
      return NAN;
    if (pivot == 0.0)
      return 0.0;
    if (p != k) {
      for (int64_t j = 0; j < n; ++j)
        std::swap(a[size_t(k * n + j)], a[size_t(p * n + j)]);
      det = -det;
    }
    det *= pivot;
    for (int64_t i = k + 1; i < n; ++i) {
      double f = a[size_t(i * n + k)] / pivot;
      if (f == 0.0)
        continue;
      for (int64_t j = k + 1; j < n; ++j)
        a[size_t(i * n + j)] -= f * a[size_t(k * n + j)];
    }
  }
  return det;
}

Expected<std::vector<Tensor>> detKernel(std::span<const Tensor> in, const Attrs &,
                                        const Type &outType) {
  const Tensor &x = in[0];
  int64_t n = x.shape().back();
  Tensor out(outType.dtype(), outType.shape());
  std::vector<double> a(size_t(n * n));
  for (int64_t b = 0; b < out.numel(); ++b) {
    for (int64_t i = 0; i < n * n; ++i)
      a[size_t(i)] = x.getDouble(b * n * n + i);
    out.setDouble(b, luDeterminant(a, n)); // 0 x 0 matrices: det 1
  }
  return std::vector<Tensor>{std::move(out)};
}

} // namespace

Status registerLinalgOps(OpRegistry &r) {
  TS_RETURN_IF_ERROR(r.add(Op{
      "det",
      "Determinant of each square matrix in the last two dims: [..., M, M] -> [...] (ONNX Det).",
      {"x"},
      1,
      1,
      {},
      OpPattern::Opaque,
      detRelation,
      detKernel,
  }));
  return okStatus();
}

} // namespace tessera::ir::ops
