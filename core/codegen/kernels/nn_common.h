//===- codegen/kernels/nn_common.h - Helpers of the nn kernel family -*- C++ -*-===//
//
// Private to the nn family's kernels (nn_*.cpp, reduce.cpp):
//  - Dt<DTYPE>: tk.h's element traits indexed by dtype code;
//  - TK_NN_DISPATCH_*: the dtype switch that picks a template instantiation;
//  - buffer conversions into a compute type (scratch) and back;
//  - the one GEMM (B packed per thread, a 6 x 64-byte register tile of
//    explicit vectors; a GEMV for few rows) behind dense, matmul,
//    batch_matmul, conv2d (im2col) and conv2d_transpose;
//  - Vec64, the 64-byte vector type the GEMM and the depthwise kernel use.
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
  /// What a B packer other than StridedB reads (a conv's shape).
  const void *aux;
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

// Loops that are not hot (packing, edges) stay scalar and rolled: vectorised
// they run no faster, and cost LLVM time in every model's compile.
#if defined(__clang__)
#define TK_COLD_LOOP _Pragma("clang loop vectorize(disable) unroll(disable)")
#else
#define TK_COLD_LOOP
#endif

// The blocked GEMM. Each thread tile of at most MT x NT computes C in blocks
// of KC along K; per block it packs B into panels of NR columns ([KC][NR],
// one at a time, zero-padded at the edge) on the thread's stack, so that the
// micro-kernel reads B sequentially whatever its strides. A is read in place
// when its rows are contiguous (a_ks == 1); otherwise, and for an edge of
// fewer than MR rows, it is packed into MR-row slivers ([KC][MR], zero
// rows below the edge). The micro-kernel always computes a full MR x NR
// tile in registers: NR is one 64-byte vector row, so 6 rows hold 6 AVX-512
// or 12 AVX2 accumulators, with registers left for the B row and the
// broadcast A value. Stack use: at most 88 KB. Every C element is still the
// sum of its products in order of k (the reference interpreter's order).
constexpr int kMR = 6; // microKernel names its six accumulators
constexpr int64_t kMT = 72, kNT = 256; // kMT: the most rows of a tile, a multiple of kMR
template <typename T> constexpr int kNR = 64 / (int)sizeof(T);
template <typename T> constexpr int64_t kKC = 1024 / (int64_t)sizeof(T);

/// Packs rows [i0, i1) x K-columns [k0, k0 + kc) of A into MR-row slivers.
template <typename T>
inline void packA(const Gemm<T> &g, const T *A, int64_t i0, int64_t i1, int64_t k0, int64_t kc,
                  T *dst) {
  for (int64_t i = i0; i < i1; i += kMR, dst += kMR * kc) {
    int64_t mr = tkMin<int64_t>(kMR, i1 - i);
    const T *a = A + i * g.a_rs + k0 * g.a_ks;
    TK_COLD_LOOP
    for (int64_t k = 0; k < kc; ++k)
      TK_COLD_LOOP
      for (int64_t r = 0; r < kMR; ++r)
        dst[k * kMR + r] = r < mr ? a[r * g.a_rs + k * g.a_ks] : T(0);
  }
}

/// Packs B's K-rows [k0, k0 + kc) x columns [j, j + nr) into a [kc][NR] panel.
template <typename T>
inline void packB(const Gemm<T> &g, const T *B, int64_t k0, int64_t kc, int64_t j, int64_t nr,
                  T *dst) {
  constexpr int NR = kNR<T>;
  const T *b = B + k0 * g.b_ks + j * g.b_ns;
  if (nr == NR && g.b_ns == 1) {
    for (int64_t k = 0; k < kc; ++k, b += g.b_ks, dst += NR)
      __builtin_memcpy(dst, b, sizeof(T) * NR);
    return;
  }
  TK_COLD_LOOP
  for (int64_t k = 0; k < kc; ++k, b += g.b_ks, dst += NR)
    TK_COLD_LOOP
    for (int64_t jj = 0; jj < NR; ++jj)
      dst[jj] = jj < nr ? b[jj * g.b_ns] : T(0);
}

/// gemmTile's B panels packed from B with its strides (B[k, n] at
/// B[k*b_ks + n*b_ns]); a kernel whose B is a function of another tensor
/// (conv2d: the taps of the input, nn_conv.cpp) packs its own.
template <typename T> struct StridedB {
  static void pack(const Gemm<T> &g, const T *B, int64_t k0, int64_t kc, int64_t j, int64_t nr,
                   T *dst) {
    packB<T>(g, B, k0, kc, j, nr, dst);
  }
};

/// One 64-byte vector of T (NR lanes); GCC and clang vector extensions.
template <typename T> struct Vec64 {
  typedef T type __attribute__((vector_size(64)));
};

/// C[0:mr, 0:nr] (+)= A[0:MR, 0:kc] x the packed panel b, where A[r, k] is
/// a[r*rs + k*ks]: a packed sliver (rs 1, ks MR) or A in place (rs a_rs,
/// ks 1). One straight-line body for every case (an edge tile goes through
/// a zero-padded copy), with the accumulators as explicit vectors, so that
/// they stay in registers whatever LLVM proves about aliasing, and so that
/// the kernel is cheap to optimise in every model.
template <typename T>
inline void microKernel(int64_t kc, const T *a, int64_t rs, int64_t ks, const T *b, T *C,
                        int64_t c_rs, int64_t mr, int64_t nr, bool accumulate) {
  using V = typename Vec64<T>::type;
  constexpr int NR = kNR<T>;
  alignas(64) T edge[kMR * NR];
  bool full = mr == kMR && nr == NR;
  T *c = full ? C : edge;
  int64_t cs = full ? c_rs : NR;
  if (!full)
    TK_COLD_LOOP
    for (int64_t i = 0; i < kMR * NR; ++i) {
      int64_t r = i / NR, j = i % NR;
      edge[i] = accumulate && r < mr && j < nr ? C[r * c_rs + j] : T(0);
    }
  V c0 = V{}, c1 = V{}, c2 = V{}, c3 = V{}, c4 = V{}, c5 = V{};
  if (accumulate) {
    __builtin_memcpy(&c0, c, sizeof(V));
    __builtin_memcpy(&c1, c + cs, sizeof(V));
    __builtin_memcpy(&c2, c + 2 * cs, sizeof(V));
    __builtin_memcpy(&c3, c + 3 * cs, sizeof(V));
    __builtin_memcpy(&c4, c + 4 * cs, sizeof(V));
    __builtin_memcpy(&c5, c + 5 * cs, sizeof(V));
  }
  const T *a0 = a, *a1 = a + rs, *a2 = a + 2 * rs, *a3 = a + 3 * rs, *a4 = a + 4 * rs,
          *a5 = a + 5 * rs;
  for (int64_t k = 0; k < kc; ++k, b += NR) {
    V bv;
    __builtin_memcpy(&bv, b, sizeof(V));
    int64_t o = k * ks;
    c0 += bv * a0[o], c1 += bv * a1[o], c2 += bv * a2[o];
    c3 += bv * a3[o], c4 += bv * a4[o], c5 += bv * a5[o];
  }
  __builtin_memcpy(c, &c0, sizeof(V));
  __builtin_memcpy(c + cs, &c1, sizeof(V));
  __builtin_memcpy(c + 2 * cs, &c2, sizeof(V));
  __builtin_memcpy(c + 3 * cs, &c3, sizeof(V));
  __builtin_memcpy(c + 4 * cs, &c4, sizeof(V));
  __builtin_memcpy(c + 5 * cs, &c5, sizeof(V));
  if (!full)
    TK_COLD_LOOP
    for (int64_t r = 0; r < mr; ++r)
      TK_COLD_LOOP
      for (int64_t j = 0; j < nr; ++j)
        C[r * c_rs + j] = edge[r * NR + j];
}

/// One tile of one batch: C[i0:i1, j0:j1].
template <typename T, typename PackB>
inline void gemmTile(const Gemm<T> &g, const T *A, const T *B, T *C, int64_t i0, int64_t i1,
                     int64_t j0, int64_t j1) {
  constexpr int NR = kNR<T>;
  constexpr int64_t KC = kKC<T>;
  alignas(64) T ap[kMT * KC];
  alignas(64) T bp[KC * NR];
  // Rows [i0, iDirect) are read in place, the rest from packed slivers.
  int64_t iDirect = g.a_ks == 1 ? i0 + (i1 - i0) / kMR * kMR : i0;
  int64_t k0 = 0;
  do { // at least once, so that K == 0 writes zeros
    int64_t kc = tkMin(KC, g.K - k0);
    bool accumulate = k0 > 0;
    packA<T>(g, A, iDirect, i1, k0, kc, ap);
    for (int64_t j = j0; j < j1; j += NR) {
      int64_t nr = tkMin<int64_t>(NR, j1 - j);
      PackB::pack(g, B, k0, kc, j, nr, bp);
      int64_t i = i0;
      for (; i < iDirect; i += kMR)
        microKernel<T>(kc, A + i * g.a_rs + k0, g.a_rs, 1, bp, C + i * g.c_rs + j, g.c_rs, kMR,
                       nr, accumulate);
      for (; i < i1; i += kMR)
        microKernel<T>(kc, ap + (i - iDirect) * kc, 1, kMR, bp, C + i * g.c_rs + j, g.c_rs,
                       tkMin<int64_t>(kMR, i1 - i), nr, accumulate);
    }
    k0 += KC;
  } while (k0 < g.K);
}

/// c[w] = sum_k a[k*a_ks] * B[(n + w)*b_ns + k] for w < W: W dot products
/// over k at once, each with its partial sums in L lanes, so that W
/// independent chains of vector FMAs are in flight. Lane l sums k = l, l+L,
/// ... in order, then the lanes and the tail in order; a float sum is never
/// reassociated otherwise.
template <typename T, bool UNIT_A, int W> // UNIT_A: a_ks == 1, A's row loads as vectors
inline void dotColumns(const Gemm<T> &g, const T *a, const T *B, int64_t n, T *c) {
  constexpr int L = kNR<T>;
  const int64_t a_ks = UNIT_A ? 1 : g.a_ks;
  const T *b = B + n * g.b_ns;
  T part[W][L] = {};
  int64_t k = 0;
  for (; k + L <= g.K; k += L)
    for (int l = 0; l < L; ++l) {
      T av = a[(k + l) * a_ks];
      for (int w = 0; w < W; ++w)
        part[w][l] += av * b[w * g.b_ns + k + l];
    }
  for (int w = 0; w < W; ++w) {
    T sum = T(0);
    for (int l = 0; l < L; ++l)
      sum += part[w][l];
    for (int64_t kk = k; kk < g.K; ++kk)
      sum += a[kk * a_ks] * b[w * g.b_ns + kk];
    c[w] = sum;
  }
}

/// C[m, n] for n in [j0, j1) as dot products over k, B with contiguous
/// columns (b_ks == 1): the better order for few rows of A and a transposed
/// B (dense on one row: a GEMV that streams B once). Four columns at a time.
template <typename T, bool UNIT_A>
inline void gemmDotRowOf(const Gemm<T> &g, const T *A, const T *B, T *C, int64_t m, int64_t j0,
                         int64_t j1) {
  const T *a = A + m * g.a_rs;
  T *c = C + m * g.c_rs;
  int64_t n = j0;
  for (; n + 4 <= j1; n += 4)
    dotColumns<T, UNIT_A, 4>(g, a, B, n, c + n);
  for (; n < j1; ++n)
    dotColumns<T, UNIT_A, 1>(g, a, B, n, c + n);
}

template <typename T>
inline void gemmDotRow(const Gemm<T> &g, const T *A, const T *B, T *C, int64_t m, int64_t j0,
                       int64_t j1) {
  if (g.a_ks == 1)
    gemmDotRowOf<T, true>(g, A, B, C, m, j0, j1);
  else
    gemmDotRowOf<T, false>(g, A, B, C, m, j0, j1);
}

template <typename T> struct GemmRun {
  const Gemm<T> *g;
  bool dot; // gemmDotRow (b_ks == 1) instead of gemmTile
  int64_t tm, tn;
  int64_t rows; // rows of a tile (gemmTile): M split evenly, a multiple of kMR
};

template <typename T, typename PackB> void gemmBody(void *closure, int64_t begin, int64_t end) {
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
      int64_t i0 = im * r.rows, j0 = in * kNT;
      gemmTile<T, PackB>(g, A, B, C, i0, tkMin(g.M, i0 + r.rows), j0, tkMin(g.N, j0 + kNT));
    }
  }
}

/// Runs the GEMM on the runtime's threads: tiles (or, with `dot`, rows by
/// column blocks) of every batch are independent. The rows are split into
/// tiles of equal height (64 rows are one tile of 64, not 60 and 4: each
/// tile packs all of B once). PackB makes B's panels (`dot` reads B as
/// strided).
template <typename T, typename PackB = StridedB<T>>
inline void gemmRun(const Gemm<T> &g, bool dot, const tessera_host_ctx_t *ctx) {
  if (g.M <= 0 || g.N <= 0 || g.batches <= 0)
    return;
  GemmRun<T> r{&g, dot, 0, (g.N + kNT - 1) / kNT, 0};
  if (dot) {
    r.tm = g.M;
  } else {
    r.tm = (g.M + kMT - 1) / kMT;
    r.rows = ((g.M + r.tm - 1) / r.tm + kMR - 1) / kMR * kMR; // <= kMT
    r.tm = (g.M + r.rows - 1) / r.rows;
  }
  tk_parallel_for(ctx, g.batches * r.tm * r.tn, &gemmBody<T, PackB>, &r);
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
