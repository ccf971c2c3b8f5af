//===- codegen/host_ops_tensor_internal.h - Tensor lowerings' helpers -*- C++ -*-===//
//
// What the tensor family's host lowerings (host_ops_tensor.cpp,
// host_ops_image.cpp) share: element counts and sizes, rank checks, fill
// values as bits, and broadcast walks collapsed over contiguous dims.
// Private to codegen/.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/host_ops.h"
#include "ir/tensor.h"

#include <cstring>
#include <vector>

namespace tessera::codegen::tensor_lowering {

using Ints = std::vector<int64_t>;
using ir::DType;

// Must match TK_MAX_RANK of codegen/kernels/tensor_common.h.
inline constexpr size_t kMaxRank = 16;

inline int64_t numel(const Ints &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

inline int64_t product(const Ints &shape, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end && i < shape.size(); ++i)
    n *= shape[i];
  return n;
}

inline int64_t elemSize(const ir::Type &t) {
  return int64_t(ir::dtypeSize(t.dtype()));
}

inline Status checkRank(size_t rank) {
  if (rank > kMaxRank)
    return Error::format("rank {} exceeds the host kernels' maximum of {}", rank, kMaxRank);
  return okStatus();
}

/// The bytes of `v` stored in `dtype` as ir::Tensor::setDouble stores it,
/// little-endian in an int64 (the kernels copy the low elem-size bytes).
inline int64_t fillBits(DType dtype, double v) {
  ir::Tensor t(dtype, {1});
  t.setDouble(0, v);
  uint64_t bits = 0;
  std::memcpy(&bits, t.bytes(), ir::dtypeSize(dtype));
  return int64_t(bits);
}

/// An output shape and, per source, element strides per output dim.
struct Walk {
  Ints shape;
  std::vector<Ints> strides;
};

/// Drops size-1 dims and merges neighbours that are contiguous for every
/// source, so the innermost run is as long as possible; at least one dim.
/// An empty output becomes [0].
inline Expected<Walk> collapse(Walk w) {
  if (numel(w.shape) == 0)
    return Walk{{0}, std::vector<Ints>(w.strides.size(), Ints{0})};
  Walk out;
  out.strides.resize(w.strides.size());
  for (size_t d = 0; d < w.shape.size(); ++d) {
    if (w.shape[d] == 1)
      continue;
    bool merge = !out.shape.empty();
    for (size_t k = 0; merge && k < w.strides.size(); ++k)
      merge = out.strides[k].back() == w.strides[k][d] * w.shape[d];
    if (merge) {
      out.shape.back() *= w.shape[d];
      for (size_t k = 0; k < w.strides.size(); ++k)
        out.strides[k].back() = w.strides[k][d];
    } else {
      out.shape.push_back(w.shape[d]);
      for (size_t k = 0; k < w.strides.size(); ++k)
        out.strides[k].push_back(w.strides[k][d]);
    }
  }
  if (out.shape.empty()) {
    out.shape = {1};
    for (Ints &s : out.strides)
      s = {0};
  }
  TS_RETURN_IF_ERROR(checkRank(out.shape.size()));
  return out;
}

/// Appends rank, shape, then each source's strides (tk_read_walk).
inline void appendWalk(Ints &ia, const Walk &w) {
  ia.push_back(int64_t(w.shape.size()));
  ia.insert(ia.end(), w.shape.begin(), w.shape.end());
  for (const Ints &s : w.strides)
    ia.insert(ia.end(), s.begin(), s.end());
}

/// Numpy broadcasting: the element strides of an input of shape `in` per
/// dim of `out` (0 where the input is broadcast).
inline Ints broadcastStrides(const Ints &out, const Ints &in) {
  Ints rowStrides = ir::rowMajorStrides(in);
  Ints s(out.size(), 0);
  size_t offset = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i)
    s[offset + i] = in[i] == 1 ? 0 : rowStrides[i];
  return s;
}

/// The collapsed broadcast walk of the output over every input.
inline Expected<Walk> broadcastWalk(const HostOpTypes &t) {
  Walk w{t.outputs[0].shape(), {}};
  for (const ir::Type &in : t.inputs)
    w.strides.push_back(broadcastStrides(w.shape, in.shape()));
  return collapse(std::move(w));
}


/// resize2d and the other image ops (host_ops_image.cpp).
void addImage(LoweringTable &table);

} // namespace tessera::codegen::tensor_lowering
