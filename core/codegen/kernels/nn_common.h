//===- codegen/kernels/nn_common.h - Helpers of the nn kernel family -*- C++ -*-===//
//
// Private to the nn family's kernels (nn_*.cpp, reduce.cpp):
//  - Dt<DTYPE>: tk.h's element traits indexed by dtype code;
//  - TK_NN_DISPATCH_*: the dtype switch that picks a template instantiation;
//  - buffer conversions into a compute type (scratch) and back;
// (the GEMM and Vec64 are nn_gemm.h's, which includes this).
// Everything lives in an anonymous namespace: each kernel file gets its own
// copy, so nothing here can clash with another family's helpers.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_CODEGEN_KERNELS_NN_COMMON_H
#define TESSERA_CODEGEN_KERNELS_NN_COMMON_H

#include "codegen/kernels/tk.h"

namespace tk_nn {
namespace {

//===----------------------------------------------------------------------===//
// Dtypes
//===----------------------------------------------------------------------===//

// The nn family's view of the kernels' element traits (tk_elem, tk.h),
// indexed by dtype code: S the storage type, V the type values are
// compared and combined in (float for f16/bf16, the storage type
// otherwise), get/put convert, putd stores a double as Tensor::setDouble
// does for float dtypes.
template <int DT> struct Dt {
  using E = tk_elem<typename tk_tag_of<DT>::type>;
  using S = typename E::S;
  using V = typename E::C;
  static constexpr bool fp = E::kind == 0;
  static V get(const S *p, int64_t i) { return E::load(p, i); }
  static void put(S *p, int64_t i, V v) { E::store(p, i, v); }
  static void putd(S *p, int64_t i, double v) { E::store(p, i, (V)v); }
};

// `return FN<DTYPE>(args...)` for the tensor dtype `dt`.
#define TK_NN_CASE(D, FN, ...)                                                                     \
  case D:                                                                                          \
    return FN<D>(__VA_ARGS__);
#define TK_NN_FLOAT_CASES(FN, ...)                                                                 \
  TK_NN_CASE(TK_F32, FN, __VA_ARGS__)                                                              \
  TK_NN_CASE(TK_F64, FN, __VA_ARGS__)                                                              \
  TK_NN_CASE(TK_F16, FN, __VA_ARGS__)                                                              \
  TK_NN_CASE(TK_BF16, FN, __VA_ARGS__)
#define TK_NN_INT_CASES(FN, ...)                                                                   \
  TK_NN_CASE(TK_I8, FN, __VA_ARGS__)                                                               \
  TK_NN_CASE(TK_U8, FN, __VA_ARGS__)                                                               \
  TK_NN_CASE(TK_I16, FN, __VA_ARGS__)                                                              \
  TK_NN_CASE(TK_U16, FN, __VA_ARGS__)                                                              \
  TK_NN_CASE(TK_I32, FN, __VA_ARGS__)                                                              \
  TK_NN_CASE(TK_U32, FN, __VA_ARGS__)                                                              \
  TK_NN_CASE(TK_I64, FN, __VA_ARGS__)                                                              \
  TK_NN_CASE(TK_U64, FN, __VA_ARGS__)
#define TK_NN_DISPATCH_FLOAT(dt, FN, ...)                                                          \
  switch (dt) {                                                                                    \
    TK_NN_FLOAT_CASES(FN, __VA_ARGS__)                                                             \
  default: return TESSERA_HOST_ERR_INTERNAL;                                                       \
  }
#define TK_NN_DISPATCH_NUMERIC(dt, FN, ...)                                                        \
  switch (dt) {                                                                                    \
    TK_NN_FLOAT_CASES(FN, __VA_ARGS__)                                                             \
    TK_NN_INT_CASES(FN, __VA_ARGS__)                                                               \
  default: return TESSERA_HOST_ERR_INTERNAL;                                                       \
  }
#define TK_NN_DISPATCH_ALL(dt, FN, ...)                                                            \
  switch (dt) {                                                                                    \
    TK_NN_FLOAT_CASES(FN, __VA_ARGS__)                                                             \
    TK_NN_INT_CASES(FN, __VA_ARGS__)                                                               \
    TK_NN_CASE(TK_BOOL, FN, __VA_ARGS__)                                                           \
  default: return TESSERA_HOST_ERR_INTERNAL;                                                       \
  }

/// An int64 whose signed order is the order of the values (ir's orderKey):
/// u64 bit patterns get their top bit flipped.
template <int DT> inline int64_t orderKey(typename Dt<DT>::S v) {
  if constexpr (DT == TK_U64)
    return (int64_t)(v ^ (uint64_t(1) << 63));
  else
    return (int64_t)v;
}

template <typename S> constexpr bool kSigned = false;
template <> constexpr bool kSigned<int8_t> = true;
template <> constexpr bool kSigned<int16_t> = true;
template <> constexpr bool kSigned<int32_t> = true;
template <> constexpr bool kSigned<int64_t> = true;

/// The smallest and largest values of an integer storage type.
template <typename S> inline S minValue() {
  if constexpr (kSigned<S>)
    return (S)((uint64_t)1 << (8 * sizeof(S) - 1));
  else
    return (S)0;
}
template <typename S> inline S maxValue() {
  if constexpr (kSigned<S>)
    return (S)(((uint64_t)1 << (8 * sizeof(S) - 1)) - 1);
  else
    return (S) ~(uint64_t)0;
}

template <bool B, typename T, typename F> struct Cond { using type = T; };
template <typename T, typename F> struct Cond<false, T, F> { using type = F; };

inline int64_t ceilDiv(int64_t a, int64_t b) { // b > 0
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

template <typename T> inline T tkMin(T a, T b) {
  return a < b ? a : b;
}
template <typename T> inline T tkMax(T a, T b) {
  return a < b ? b : a;
}

//===----------------------------------------------------------------------===//
// Compute types and buffer conversion
//===----------------------------------------------------------------------===//

// The GEMM-based kernels compute f32/f16/bf16 in float, f64 in double, and
// integers in the unsigned type of 32 or 64 bits: integer products wrap,
// and the low bits of a wrapped sum do not depend on the width it wraps at.

/// Reads n elements of dtype `dt` at `p` into `dst` as CT.
template <typename CT> inline void loadAs(const void *p, int32_t dt, int64_t n, CT *dst) {
  switch (dt) {
#define TK_NN_LOAD(D)                                                                              \
  case D: {                                                                                        \
    const typename Dt<D>::S *s = (const typename Dt<D>::S *)p;                                     \
    for (int64_t i = 0; i < n; ++i)                                                                \
      dst[i] = (CT)Dt<D>::get(s, i);                                                               \
    return;                                                                                        \
  }
    TK_NN_LOAD(TK_F32)
    TK_NN_LOAD(TK_F64)
    TK_NN_LOAD(TK_F16)
    TK_NN_LOAD(TK_BF16)
    TK_NN_LOAD(TK_I8)
    TK_NN_LOAD(TK_U8)
    TK_NN_LOAD(TK_I16)
    TK_NN_LOAD(TK_U16)
    TK_NN_LOAD(TK_I32)
    TK_NN_LOAD(TK_U32)
    TK_NN_LOAD(TK_I64)
    TK_NN_LOAD(TK_U64)
#undef TK_NN_LOAD
  default: return;
  }
}

/// Writes n CT values to `p` as dtype `dt` (floats as Tensor::setDouble
/// does; integers keep their low bits, as Tensor::setInt does).
template <typename CT> inline void storeAs(const CT *src, int32_t dt, int64_t n, void *p) {
  switch (dt) {
  case TK_F32:
    for (int64_t i = 0; i < n; ++i)
      ((float *)p)[i] = (float)src[i];
    return;
  case TK_F64:
    for (int64_t i = 0; i < n; ++i)
      ((double *)p)[i] = (double)src[i];
    return;
  case TK_F16:
    for (int64_t i = 0; i < n; ++i)
      ((uint16_t *)p)[i] = tk_float_to_half((float)src[i]);
    return;
  case TK_BF16:
    for (int64_t i = 0; i < n; ++i)
      ((uint16_t *)p)[i] = tk_float_to_bf16((float)src[i]);
    return;
#define TK_NN_STORE(D, U)                                                                          \
  case D:                                                                                          \
    for (int64_t i = 0; i < n; ++i)                                                                \
      ((U *)p)[i] = (U)(uint64_t)src[i];                                                           \
    return;
    TK_NN_STORE(TK_I8, uint8_t)
    TK_NN_STORE(TK_U8, uint8_t)
    TK_NN_STORE(TK_I16, uint16_t)
    TK_NN_STORE(TK_U16, uint16_t)
    TK_NN_STORE(TK_I32, uint32_t)
    TK_NN_STORE(TK_U32, uint32_t)
    TK_NN_STORE(TK_I64, uint64_t)
    TK_NN_STORE(TK_U64, uint64_t)
#undef TK_NN_STORE
  default: return;
  }
}

/// Scratch memory at byte offset `off` (the lowering's layout), or null for
/// an offset of -1 (not used).
template <typename T> inline T *scratchAt(const tk_args *a, int64_t off) {
  return off < 0 ? (T *)0 : (T *)((char *)a->scratch + off);
}

/// The data of input `i` as CT: converted into scratch at `off`, or the
/// tensor itself when `off` is -1 (its storage is CT already).
template <typename CT> inline const CT *inputAs(const tk_args *a, int i, int64_t off) {
  if (off < 0)
    return (const CT *)a->in[i].data;
  CT *dst = scratchAt<CT>(a, off);
  loadAs<CT>(a->in[i].data, a->in[i].dtype, tk_numel(a->in[i]), dst);
  return dst;
}

/// dst[c*rows + r] = src[r*cols + c] for `count` matrices of rows x cols.
template <typename T>
inline void transposeMatrices(const T *src, int64_t count, int64_t rows, int64_t cols, T *dst) {
  for (int64_t m = 0; m < count; ++m) {
    const T *s = src + m * rows * cols;
    T *d = dst + m * rows * cols;
    for (int64_t r0 = 0; r0 < rows; r0 += 16)
      for (int64_t c = 0; c < cols; ++c)
        for (int64_t r = r0; r < tkMin(rows, r0 + 16); ++r)
          d[c * rows + r] = s[r * cols + c];
  }
}

} // namespace
} // namespace tk_nn

#endif // TESSERA_CODEGEN_KERNELS_NN_COMMON_H
