//===- codegen/kernels/tensor_common.h - Helpers of the tensor kernels -===//
//
// Private helpers of the tensor family's kernels (elementwise, transform,
// index, image): element traits per dtype (storage, compute type, load and
// store with the conversions of tessera::ir::Tensor), the dtype dispatch,
// typed element copies, and the broadcast walker that visits a flat range of
// the output as contiguous runs of the innermost dim.
//
// Same rules as tk.h: no standard library, no allocation, no globals.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_CODEGEN_KERNELS_TENSOR_COMMON_H
#define TESSERA_CODEGEN_KERNELS_TENSOR_COMMON_H

#include "codegen/kernels/tk.h"

// The most dims a (collapsed) shape may have; lowerings reject more.
#define TK_MAX_RANK 16
// Elementwise work is split into chunks of this many elements.
#define TK_CHUNK 16384

// Kernels are inlined into the step functions, where ia, fa and the
// dtypes are constants: the dispatch (dtype switch, op switch, the lambdas
// it calls) must inline too so that it folds to the one loop it selects.
#define TK_ALWAYS_INLINE static inline __attribute__((always_inline))
#define TK_INLINE_LAMBDA __attribute__((always_inline))

template <class T> static constexpr bool tk_is_float = tk_elem<T>::kind == 0;
template <class A, class B> struct tk_same { static constexpr bool value = false; };
template <class A> struct tk_same<A, A> { static constexpr bool value = true; };

// Calls f(Tag{}) for the tag of dtype `dt`; returns f's result, or
// TESSERA_HOST_ERR_INTERNAL for an unknown dtype.
template <class F> TK_ALWAYS_INLINE int32_t tk_dispatch(int32_t dt, F &&f) {
  switch (dt) {
  case TK_F32: return f(float{});
  case TK_F16: return f(tk_f16_t{});
  case TK_BF16: return f(tk_bf16_t{});
  case TK_F64: return f(double{});
  case TK_I8: return f(int8_t{});
  case TK_U8: return f(uint8_t{});
  case TK_I32: return f(int32_t{});
  case TK_I64: return f(int64_t{});
  case TK_BOOL: return f(tk_bool_t{});
  case TK_I16: return f(int16_t{});
  case TK_U16: return f(uint16_t{});
  case TK_U32: return f(uint32_t{});
  case TK_U64: return f(uint64_t{});
  default: return TESSERA_HOST_ERR_INTERNAL;
  }
}

// Same, for the float dtypes only.
template <class F> TK_ALWAYS_INLINE int32_t tk_dispatch_float(int32_t dt, F &&f) {
  switch (dt) {
  case TK_F32: return f(float{});
  case TK_F16: return f(tk_f16_t{});
  case TK_BF16: return f(tk_bf16_t{});
  case TK_F64: return f(double{});
  default: return TESSERA_HOST_ERR_INTERNAL;
  }
}

// Calls f(tk_int<op>{}) for a run-time op code in [0, N): each op gets
// its own instantiation (its switches fold at compile time); once the op
// code is a constant, the comparisons fold too.
template <int V> struct tk_int { static constexpr int value = V; };
template <int N, class F> TK_ALWAYS_INLINE int32_t tk_dispatch_op(int64_t op, F &&f) {
  if constexpr (N == 0) {
    (void)op;
    return TESSERA_HOST_ERR_INTERNAL;
  } else {
    if (op == N - 1)
      return f(tk_int<N - 1>{});
    return tk_dispatch_op<N - 1>(op, f);
  }
}

// Element `i` of a float tensor as double, and a double stored into a float
// tensor (f32/f16/bf16 round through float, as ir::Tensor::setDouble).
static inline double tk_load_f64(const tk_tensor &t, int64_t i) {
  switch (t.dtype) {
  case TK_F32: return ((const float *)t.data)[i];
  case TK_F16: return tk_half_to_float(((const uint16_t *)t.data)[i]);
  case TK_BF16: return tk_bf16_to_float(((const uint16_t *)t.data)[i]);
  case TK_F64: return ((const double *)t.data)[i];
  default: return 0;
  }
}
static inline void tk_store_f64(const tk_tensor &t, int64_t i, double v) {
  switch (t.dtype) {
  case TK_F32: ((float *)t.data)[i] = (float)v; return;
  case TK_F16: ((uint16_t *)t.data)[i] = tk_float_to_half((float)v); return;
  case TK_BF16: ((uint16_t *)t.data)[i] = tk_float_to_bf16((float)v); return;
  case TK_F64: ((double *)t.data)[i] = v; return;
  default: return;
  }
}

// Index tensors (i32 or i64) read as int64.
static inline int64_t tk_load_index(const tk_tensor &t, int64_t i) {
  return t.dtype == TK_I32 ? (int64_t)((const int32_t *)t.data)[i] : ((const int64_t *)t.data)[i];
}

static inline int64_t tk_dtype_size(int32_t dt) {
  switch (dt) {
  case TK_F64:
  case TK_I64:
  case TK_U64: return 8;
  case TK_F32:
  case TK_I32:
  case TK_U32: return 4;
  case TK_F16:
  case TK_BF16:
  case TK_I16:
  case TK_U16: return 2;
  default: return 1;
  }
}

// An unsigned integer type of `Bytes` bytes, for raw element copies.
template <int Bytes> struct tk_raw;
template <> struct tk_raw<1> { using T = uint8_t; };
template <> struct tk_raw<2> { using T = uint16_t; };
template <> struct tk_raw<4> { using T = uint32_t; };
template <> struct tk_raw<8> { using T = uint64_t; };

// Calls f(tk_raw<N>::T{}) for element size `esize` (1, 2, 4 or 8 bytes).
template <class F> TK_ALWAYS_INLINE int32_t tk_dispatch_size(int64_t esize, F &&f) {
  switch (esize) {
  case 1: return f(uint8_t{});
  case 2: return f(uint16_t{});
  case 4: return f(uint32_t{});
  case 8: return f(uint64_t{});
  default: return TESSERA_HOST_ERR_INTERNAL;
  }
}

// The error flag shared by the chunks of a parallel loop.
static inline void tk_set_error(int32_t *flag, int32_t code) {
  __atomic_store_n(flag, code, __ATOMIC_RELAXED);
}
static inline int32_t tk_get_error(int32_t *flag) {
  return __atomic_load_n(flag, __ATOMIC_RELAXED);
}

//===----------------------------------------------------------------------===//
// The broadcast walker
//===----------------------------------------------------------------------===//

// An output of `rank` dims `shape` (row-major) and NIN sources, each with
// element strides per output dim (0 along broadcast dims). Lowerings
// collapse the dims first (codegen/host_ops_tensor.cpp), so rank is small
// and the innermost dim as long as possible.
template <int NIN> struct tk_walk {
  int32_t rank;
  const int64_t *shape;
  const int64_t *strides[NIN];
};

// Visits the flat output elements [begin, end) as runs along the innermost
// dim: run(outFlat, src[NIN] offsets, count, innerStride[NIN]).
template <int NIN, class Run>
static inline void tk_walk_range(const tk_walk<NIN> &w, int64_t begin, int64_t end, Run &&run) {
  if (begin >= end)
    return;
  const int32_t r = w.rank;
  const int64_t inner = w.shape[r - 1];
  int64_t idx[TK_MAX_RANK];
  // The multi-index of `begin`.
  int64_t rest = begin;
  for (int32_t d = r - 1; d >= 0; --d) {
    idx[d] = rest % w.shape[d];
    rest /= w.shape[d];
  }
  int64_t src[NIN], innerStride[NIN];
  for (int k = 0; k < NIN; ++k) {
    src[k] = 0;
    for (int32_t d = 0; d < r; ++d)
      src[k] += idx[d] * w.strides[k][d];
    innerStride[k] = w.strides[k][r - 1];
  }
  int64_t pos = begin;
  while (pos < end) {
    int64_t n = inner - idx[r - 1];
    if (n > end - pos)
      n = end - pos;
    run(pos, (const int64_t *)src, n, (const int64_t *)innerStride);
    pos += n;
    if (pos >= end)
      break;
    // Next row: the innermost dim restarts, the outer index counter steps.
    for (int k = 0; k < NIN; ++k)
      src[k] -= idx[r - 1] * innerStride[k];
    idx[r - 1] = 0;
    for (int32_t d = r - 2; d >= 0; --d) {
      for (int k = 0; k < NIN; ++k)
        src[k] += w.strides[k][d];
      if (++idx[d] < w.shape[d])
        break;
      for (int k = 0; k < NIN; ++k)
        src[k] -= idx[d] * w.strides[k][d];
      idx[d] = 0;
    }
  }
}

// Reads a walk from ia: rank, shape[rank], then NIN x strides[rank].
// Returns the number of entries read.
template <int NIN> static inline int64_t tk_read_walk(const int64_t *ia, tk_walk<NIN> &w) {
  w.rank = (int32_t)ia[0];
  w.shape = ia + 1;
  for (int k = 0; k < NIN; ++k)
    w.strides[k] = ia + 1 + (int64_t)w.rank * (1 + k);
  return 1 + (int64_t)w.rank * (1 + NIN);
}

static inline int64_t tk_walk_numel(int32_t rank, const int64_t *shape) {
  int64_t n = 1;
  for (int32_t d = 0; d < rank; ++d)
    n *= shape[d];
  return n;
}

// Runs body(begin, end) over [0, n) elements in chunks of TK_CHUNK on the
// runtime's threads. Closure is any struct with a member
//   void operator()(int64_t begin, int64_t end) const.
template <class Body> static void tk_chunk_trampoline(void *closure, int64_t begin, int64_t end) {
  const Body &body = *(const Body *)closure;
  body(begin, end);
}
template <class Body>
TK_ALWAYS_INLINE void tk_parallel_elems(const tessera_host_ctx_t *ctx, int64_t n, int64_t grain,
                                        const Body &body) {
  if (n <= 0)
    return;
  int64_t chunks = (n + grain - 1) / grain;
  if (chunks <= 1) {
    body(0, n);
    return;
  }
  struct Chunked {
    const Body *body;
    int64_t n, grain;
    void operator()(int64_t b, int64_t e) const {
      int64_t lo = b * grain, hi = e * grain;
      (*body)(lo, hi < n ? hi : n);
    }
  } chunked{&body, n, grain};
  tk_parallel_for(ctx, chunks, &tk_chunk_trampoline<Chunked>, (void *)&chunked);
}

#endif // TESSERA_CODEGEN_KERNELS_TENSOR_COMMON_H
