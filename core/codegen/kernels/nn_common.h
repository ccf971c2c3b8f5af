//===- codegen/kernels/nn_common.h - Helpers of the nn kernel family -*- C++ -*-===//
//
// Private to the nn family's kernels (nn_*.cpp, reduce.cpp):
//  - Dt<DTYPE>: tk.h's element traits indexed by dtype code;
//  - TK_NN_DISPATCH_*: the dtype switch that picks a template instantiation;
//  - buffer conversions into a compute type (scratch) and back;
//  - the one GEMM (tiled, vectorisable once shapes are constants) behind
//    dense, matmul, batch_matmul, conv2d (im2col) and conv2d_transpose.
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

//===----------------------------------------------------------------------===//
// GEMM: C[m, n] = sum_k A[m, k] * B[k, n], over a batch
//===----------------------------------------------------------------------===//

// Batch b's operands: its flat index unravelled over `bshape` (brank dims)
// and dotted with the element strides a_bstride / b_bstride (0 for a
// broadcast dim); C's batches are dense (c_bstride apart).
template <typename T> struct Gemm {
  int64_t M, N, K;
  const T *A;
  int64_t a_rs, a_ks; // A[m, k] = A[m*a_rs + k*a_ks]
  const T *B;
  int64_t b_ks, b_ns; // B[k, n] = B[k*b_ks + n*b_ns]
  T *C;
  int64_t c_rs, c_bstride; // C[m, n] = C[m*c_rs + n]
  int64_t batches;
  int32_t brank;
  const int64_t *bshape, *a_bstride, *b_bstride;
};

template <typename T>
inline void batchOffsets(const Gemm<T> &g, int64_t b, int64_t &ao, int64_t &bo) {
  ao = 0, bo = 0;
  for (int32_t d = g.brank - 1; d >= 0; --d) {
    int64_t dim = g.bshape[d], i = b % dim;
    b /= dim;
    ao += i * g.a_bstride[d];
    bo += i * g.b_bstride[d];
  }
}

// Register tile MR x NR (one 64-byte row of NR values per A row), tiles of
// MT x NT for the threads, and K in blocks of KC (B's panel stays in cache).
constexpr int kMR = 4;
constexpr int64_t kMT = 64, kNT = 256, kKC = 256;
template <typename T> constexpr int kNR = 64 / (int)sizeof(T);

/// C[0:MR, 0:NR] (+)= A[0:MR, 0:kc] x B[0:kc, 0:NR], B rows contiguous.
template <typename T>
inline void microFull(int64_t kc, const T *A, int64_t a_rs, int64_t a_ks, const T *B, int64_t b_ks,
                      T *C, int64_t c_rs, bool accumulate) {
  constexpr int NR = kNR<T>;
  T acc[kMR][NR];
  for (int r = 0; r < kMR; ++r)
    for (int j = 0; j < NR; ++j)
      acc[r][j] = accumulate ? C[r * c_rs + j] : T(0);
  for (int64_t k = 0; k < kc; ++k) {
    const T *b = B + k * b_ks;
    for (int r = 0; r < kMR; ++r) {
      T av = A[r * a_rs + k * a_ks];
      for (int j = 0; j < NR; ++j)
        acc[r][j] += av * b[j];
    }
  }
  for (int r = 0; r < kMR; ++r)
    for (int j = 0; j < NR; ++j)
      C[r * c_rs + j] = acc[r][j];
}

/// The same for an edge tile of mr <= MR rows and nr <= NR columns.
template <typename T>
inline void microEdge(int64_t mr, int64_t nr, int64_t kc, const T *A, int64_t a_rs, int64_t a_ks,
                      const T *B, int64_t b_ks, T *C, int64_t c_rs, bool accumulate) {
  constexpr int NR = kNR<T>;
  T acc[kMR][NR];
  for (int64_t r = 0; r < mr; ++r)
    for (int64_t j = 0; j < nr; ++j)
      acc[r][j] = accumulate ? C[r * c_rs + j] : T(0);
  for (int64_t k = 0; k < kc; ++k) {
    const T *b = B + k * b_ks;
    for (int64_t r = 0; r < mr; ++r) {
      T av = A[r * a_rs + k * a_ks];
      for (int64_t j = 0; j < nr; ++j)
        acc[r][j] += av * b[j];
    }
  }
  for (int64_t r = 0; r < mr; ++r)
    for (int64_t j = 0; j < nr; ++j)
      C[r * c_rs + j] = acc[r][j];
}

/// One MT x NT tile of one batch (B with contiguous rows: b_ns == 1).
template <typename T>
inline void gemmTile(const Gemm<T> &g, const T *A, const T *B, T *C, int64_t i0, int64_t i1,
                     int64_t j0, int64_t j1) {
  constexpr int NR = kNR<T>;
  int64_t k0 = 0;
  do { // at least once, so that K == 0 writes zeros
    int64_t kc = tkMin(kKC, g.K - k0);
    bool accumulate = k0 > 0;
    const T *Ak = A + k0 * g.a_ks;
    const T *Bk = B + k0 * g.b_ks;
    for (int64_t j = j0; j < j1; j += NR) {
      int64_t nr = tkMin<int64_t>(NR, j1 - j);
      for (int64_t i = i0; i < i1; i += kMR) {
        int64_t mr = tkMin<int64_t>(kMR, i1 - i);
        const T *a = Ak + i * g.a_rs;
        T *c = C + i * g.c_rs + j;
        if (mr == kMR && nr == NR)
          microFull<T>(kc, a, g.a_rs, g.a_ks, Bk + j, g.b_ks, c, g.c_rs, accumulate);
        else
          microEdge<T>(mr, nr, kc, a, g.a_rs, g.a_ks, Bk + j, g.b_ks, c, g.c_rs, accumulate);
      }
    }
    k0 += kKC;
  } while (k0 < g.K);
}

/// C[m, n] for n in [j0, j1) as dot products over k, B with contiguous
/// columns (b_ks == 1): the better order for few rows of A and a transposed
/// B (dense on one row). Partial sums in L lanes vectorise without
/// reassociating a float sum.
template <typename T>
inline void gemmDotRow(const Gemm<T> &g, const T *A, const T *B, T *C, int64_t m, int64_t j0,
                       int64_t j1) {
  constexpr int L = kNR<T>;
  const T *a = A + m * g.a_rs;
  for (int64_t n = j0; n < j1; ++n) {
    const T *b = B + n * g.b_ns;
    T part[L];
    for (int l = 0; l < L; ++l)
      part[l] = T(0);
    int64_t k = 0;
    for (; k + L <= g.K; k += L)
      for (int l = 0; l < L; ++l)
        part[l] += a[(k + l) * g.a_ks] * b[k + l];
    T sum = T(0);
    for (int l = 0; l < L; ++l)
      sum += part[l];
    for (; k < g.K; ++k)
      sum += a[k * g.a_ks] * b[k];
    C[m * g.c_rs + n] = sum;
  }
}

template <typename T> struct GemmRun {
  const Gemm<T> *g;
  bool dot; // gemmDotRow (b_ks == 1) instead of gemmTile (b_ns == 1)
  int64_t tm, tn;
};

template <typename T> void gemmBody(void *closure, int64_t begin, int64_t end) {
  const GemmRun<T> &r = *(const GemmRun<T> *)closure;
  const Gemm<T> &g = *r.g;
  for (int64_t t = begin; t < end; ++t) {
    int64_t b = t / (r.tm * r.tn), rest = t % (r.tm * r.tn);
    int64_t im = rest / r.tn, in = rest % r.tn;
    int64_t ao, bo;
    batchOffsets(g, b, ao, bo);
    const T *A = g.A + ao, *B = g.B + bo;
    T *C = g.C + b * g.c_bstride;
    if (r.dot) {
      int64_t j0 = in * kNT, j1 = tkMin(g.N, j0 + kNT);
      gemmDotRow<T>(g, A, B, C, im, j0, j1);
    } else {
      int64_t i0 = im * kMT, j0 = in * kNT;
      gemmTile<T>(g, A, B, C, i0, tkMin(g.M, i0 + kMT), j0, tkMin(g.N, j0 + kNT));
    }
  }
}

/// Runs the GEMM on the runtime's threads: tiles (or, with `dot`, rows by
/// column blocks) of every batch are independent.
template <typename T>
inline void gemmRun(const Gemm<T> &g, bool dot, const tessera_host_ctx_t *ctx) {
  if (g.M <= 0 || g.N <= 0 || g.batches <= 0)
    return;
  GemmRun<T> r{&g, dot, dot ? g.M : (g.M + kMT - 1) / kMT, (g.N + kNT - 1) / kNT};
  tk_parallel_for(ctx, g.batches * r.tm * r.tn, &gemmBody<T>, &r);
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
