//===- ir/ops/data_dependent.cpp - Ops whose result size the data decides -===//
//
// nonzero: the size of its result is a run-time symbol (ir/symbol.h
// runtimeSymbol) given as attribute 'count'; the op returns that size too,
// as an i64 [1] tensor, so that the interpreter and the executor learn the
// symbol's value when it runs (Op::dataDependent;
// docs/design/0013-dynamic-shapes.md, "Run-time values").
//
//===----------------------------------------------------------------------===//
#include "ir/ops/common.h"
#include "ir/ops/ops.h"

namespace tessera::ir::ops {

namespace {

/// The dim a data-dependent op's result has: its 'count' attribute (a
/// run-time symbol, or a constant in a model whose data is known).
Expected<int64_t> countAttr(const Attrs &attrs) {
  const int64_t count = attrs.getInt("count");
  if (count < 0)
    return Error::format("attribute 'count' = {} must be a size (a run-time symbol)", count);
  return count;
}

// --- nonzero --------------------------------------------------------------------

/// ONNX NonZero: the i64 [rank, count] indices of the non-zero elements in
/// row-major order (a scalar counts as 1-d), and [count].
Expected<Type> nonzeroRelation(std::span<const Type> in, const Attrs &attrs) {
  TS_ASSIGN_OR_RETURN(int64_t count, countAttr(attrs));
  const int64_t rank = std::max<int64_t>(int64_t(in[0].rank()), 1);
  return Type::tuple({Type::tensor(DType::I64, {rank, count}), Type::tensor(DType::I64, {1})});
}

Expected<std::vector<Tensor>> nonzeroKernel(std::span<const Tensor> in, const Attrs &,
                                            const Type &) {
  const Tensor &x = in[0];
  Shape shape = x.shape();
  if (shape.empty())
    shape = {1};
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < x.numel(); ++i)
    if (isFloat(x.dtype()) ? x.getDouble(i) != 0 : x.getInt(i) != 0)
      hits.push_back(i);
  const auto rank = int64_t(shape.size()), n = int64_t(hits.size());
  Tensor indices(DType::I64, {rank, n});
  std::vector<int64_t> index(shape.size());
  for (int64_t k = 0; k < n; ++k) {
    unravelIndex(hits[size_t(k)], shape, index);
    for (int64_t d = 0; d < rank; ++d)
      indices.data<int64_t>()[d * n + k] = index[size_t(d)];
  }
  return std::vector<Tensor>{indices, Tensor::fromInts(DType::I64, {1}, std::vector<int64_t>{n})};
}

} // namespace

Status registerDataDependentOps(OpRegistry &r) {
  using K = AttrKind;
  Op nonzero{
      "nonzero",
      "The i64 [rank, count] indices of the non-zero elements, in row-major order (ONNX "
      "NonZero), and count as an i64 [1] tensor; count is a run-time symbol the data decides.",
      {"data"},
      1,
      1,
      {{"count", K::Int, std::nullopt,
        "the number of non-zero elements: a run-time symbol (bounded by the elements)"}},
      OpPattern::Opaque,
      nonzeroRelation,
      nonzeroKernel,
  };
  nonzero.dataDependent = true;
  TS_RETURN_IF_ERROR(r.add(std::move(nonzero)));
  return okStatus();
}

} // namespace tessera::ir::ops
