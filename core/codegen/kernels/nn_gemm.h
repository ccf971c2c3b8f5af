//===- codegen/kernels/nn_gemm.h - The nn family's GEMM ---------*- C++ -*-===//
//
// Private to the nn family's kernels (nn_*.cpp): the one GEMM
// behind dense, matmul, batch_matmul, conv2d (im2col or taps gathered into
// its panels) and conv2d_transpose. B is packed per thread into panels of
// one 64-byte vector row; a 6-row register tile of explicit vectors (6 x 16
// floats with AVX2, 6 x 32 with AVX-512, chosen per CPU level by
// tk_target_wide_gemm); a GEMV of dot products for few rows. Also Vec64,
// the 64-byte vector type the GEMM and the depthwise kernel use.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_CODEGEN_KERNELS_NN_GEMM_H
#define TESSERA_CODEGEN_KERNELS_NN_GEMM_H

#include "codegen/kernels/nn_common.h"

/// Whether the GEMM computes tiles two panels wide (microKernelWide): set
/// where the CPU has 32 vector registers (AVX-512). The host code generator
/// defines it for each CPU level it builds, as a constant that LLVM folds
/// (codegen/llvm_util.h, defineTargetConstants); the kernels compiled natively (tests)
/// define it in nn_linalg.cpp, 0 unless a test sets it.
extern "C" int tk_target_wide_gemm;

namespace tk_nn {
namespace {

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

// The blocked GEMM. Each thread tile of at most MT x NT (all M rows with A
// read in place, where the column blocks keep the threads busy) computes C
// in blocks of KC along K; per block it packs B into panels of NR columns
// ([KC][NR], one or two at a time, zero-padded at the edge) on the thread's
// stack, so that the micro-kernel reads B sequentially whatever its
// strides. A is read in place when its rows are contiguous (a_ks == 1);
// otherwise, and for an edge of fewer than MR rows, it is packed into
// MR-row slivers ([KC][MR], zero rows below the edge). The micro-kernel
// always computes a full MR x NR tile in registers: NR is one 64-byte
// vector row, so 6 rows hold 12 AVX2 accumulators, with registers left for
// the B row and the broadcast A value; with AVX-512's 32 registers two
// panels at once (MR x 2 NR, 12 accumulators: microKernelWide). Stack use:
// at most 104 KB. Every C element is still the sum of its products in
// order of k (the reference interpreter's order).
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

/// An edge tile (fewer than kMR rows or than W columns of C) goes through
/// a zero-padded kMR x W copy: edgeIn fills it (from C when accumulating),
/// edgeOut writes its rows [0, mr) x [0, nr) back.
template <typename T, int W>
inline void edgeIn(T *edge, const T *C, int64_t c_rs, int64_t mr, int64_t nr, bool accumulate) {
  TK_COLD_LOOP
  for (int64_t i = 0; i < kMR * W; ++i) {
    int64_t r = i / W, j = i % W;
    edge[i] = accumulate && r < mr && j < nr ? C[r * c_rs + j] : T(0);
  }
}

template <typename T, int W>
inline void edgeOut(const T *edge, T *C, int64_t c_rs, int64_t mr, int64_t nr) {
  TK_COLD_LOOP
  for (int64_t r = 0; r < mr; ++r)
    TK_COLD_LOOP
    for (int64_t j = 0; j < nr; ++j)
      C[r * c_rs + j] = edge[r * W + j];
}

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
    edgeIn<T, NR>(edge, C, c_rs, mr, nr, accumulate);
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
    edgeOut<T, NR>(edge, C, c_rs, mr, nr);
}

/// microKernel over two panels at once: C[0:mr, 0:nr] (+)= A x [b0 b1],
/// nr <= 2 NR, b1 the panel of columns NR.. (zero-padded like b0). Twelve
/// accumulators are 12 of AVX-512's 32 registers: per k two vector loads
/// of B and six broadcasts feed twelve FMAs (one panel: one load and six
/// broadcasts for six), the balance microKernel has with AVX2's 16.
template <typename T>
inline void microKernelWide(int64_t kc, const T *a, int64_t rs, int64_t ks, const T *b0,
                            const T *b1, T *C, int64_t c_rs, int64_t mr, int64_t nr,
                            bool accumulate) {
  using V = typename Vec64<T>::type;
  constexpr int NR = kNR<T>, W = 2 * NR;
  alignas(64) T edge[kMR * W];
  bool full = mr == kMR && nr == W;
  T *c = full ? C : edge;
  int64_t cs = full ? c_rs : W;
  if (!full)
    edgeIn<T, W>(edge, C, c_rs, mr, nr, accumulate);
  V c0 = V{}, c1 = V{}, c2 = V{}, c3 = V{}, c4 = V{}, c5 = V{};
  V d0 = V{}, d1 = V{}, d2 = V{}, d3 = V{}, d4 = V{}, d5 = V{};
  if (accumulate) {
    __builtin_memcpy(&c0, c, sizeof(V)), __builtin_memcpy(&d0, c + NR, sizeof(V));
    __builtin_memcpy(&c1, c + cs, sizeof(V)), __builtin_memcpy(&d1, c + cs + NR, sizeof(V));
    __builtin_memcpy(&c2, c + 2 * cs, sizeof(V));
    __builtin_memcpy(&d2, c + 2 * cs + NR, sizeof(V));
    __builtin_memcpy(&c3, c + 3 * cs, sizeof(V));
    __builtin_memcpy(&d3, c + 3 * cs + NR, sizeof(V));
    __builtin_memcpy(&c4, c + 4 * cs, sizeof(V));
    __builtin_memcpy(&d4, c + 4 * cs + NR, sizeof(V));
    __builtin_memcpy(&c5, c + 5 * cs, sizeof(V));
    __builtin_memcpy(&d5, c + 5 * cs + NR, sizeof(V));
  }
  const T *a0 = a, *a1 = a + rs, *a2 = a + 2 * rs, *a3 = a + 3 * rs, *a4 = a + 4 * rs,
          *a5 = a + 5 * rs;
  for (int64_t k = 0; k < kc; ++k, b0 += NR, b1 += NR) {
    V bv, bw;
    __builtin_memcpy(&bv, b0, sizeof(V));
    __builtin_memcpy(&bw, b1, sizeof(V));
    int64_t o = k * ks;
    T x0 = a0[o], x1 = a1[o], x2 = a2[o], x3 = a3[o], x4 = a4[o], x5 = a5[o];
    c0 += bv * x0, d0 += bw * x0, c1 += bv * x1, d1 += bw * x1;
    c2 += bv * x2, d2 += bw * x2, c3 += bv * x3, d3 += bw * x3;
    c4 += bv * x4, d4 += bw * x4, c5 += bv * x5, d5 += bw * x5;
  }
  __builtin_memcpy(c, &c0, sizeof(V)), __builtin_memcpy(c + NR, &d0, sizeof(V));
  __builtin_memcpy(c + cs, &c1, sizeof(V)), __builtin_memcpy(c + cs + NR, &d1, sizeof(V));
  __builtin_memcpy(c + 2 * cs, &c2, sizeof(V)), __builtin_memcpy(c + 2 * cs + NR, &d2, sizeof(V));
  __builtin_memcpy(c + 3 * cs, &c3, sizeof(V)), __builtin_memcpy(c + 3 * cs + NR, &d3, sizeof(V));
  __builtin_memcpy(c + 4 * cs, &c4, sizeof(V)), __builtin_memcpy(c + 4 * cs + NR, &d4, sizeof(V));
  __builtin_memcpy(c + 5 * cs, &c5, sizeof(V)), __builtin_memcpy(c + 5 * cs + NR, &d5, sizeof(V));
  if (!full)
    edgeOut<T, W>(edge, C, c_rs, mr, nr);
}

/// One tile of one batch: C[i0:i1, j0:j1]. With wide tiles
/// (tk_target_wide_gemm), two panels of B at a time through
/// microKernelWide; a last single panel through microKernel.
template <typename T, typename PackB>
inline void gemmTile(const Gemm<T> &g, const T *A, const T *B, T *C, int64_t i0, int64_t i1,
                     int64_t j0, int64_t j1) {
  constexpr int NR = kNR<T>;
  constexpr int64_t KC = kKC<T>;
  alignas(64) T ap[kMT * KC];
  alignas(64) T bp[2 * KC * NR];
  const bool wide = tk_target_wide_gemm != 0;
  // Rows [i0, iDirect) are read in place, the rest from packed slivers.
  int64_t iDirect = g.a_ks == 1 ? i0 + (i1 - i0) / kMR * kMR : i0;
  int64_t k0 = 0;
  do { // at least once, so that K == 0 writes zeros
    int64_t kc = tkMin(KC, g.K - k0);
    bool accumulate = k0 > 0;
    packA<T>(g, A, iDirect, i1, k0, kc, ap);
    for (int64_t j = j0; j < j1;) {
      if (wide && j1 - j > NR) {
        int64_t nr = tkMin<int64_t>(2 * NR, j1 - j);
        T *bq = bp + KC * NR;
        PackB::pack(g, B, k0, kc, j, NR, bp);
        PackB::pack(g, B, k0, kc, j + NR, nr - NR, bq);
        int64_t i = i0;
        for (; i < iDirect; i += kMR)
          microKernelWide<T>(kc, A + i * g.a_rs + k0, g.a_rs, 1, bp, bq, C + i * g.c_rs + j,
                             g.c_rs, kMR, nr, accumulate);
        for (; i < i1; i += kMR)
          microKernelWide<T>(kc, ap + (i - iDirect) * kc, 1, kMR, bp, bq, C + i * g.c_rs + j,
                             g.c_rs, tkMin<int64_t>(kMR, i1 - i), nr, accumulate);
        j += nr;
        continue;
      }
      int64_t nr = tkMin<int64_t>(NR, j1 - j);
      PackB::pack(g, B, k0, kc, j, nr, bp);
      int64_t i = i0;
      for (; i < iDirect; i += kMR)
        microKernel<T>(kc, A + i * g.a_rs + k0, g.a_rs, 1, bp, C + i * g.c_rs + j, g.c_rs, kMR,
                       nr, accumulate);
      for (; i < i1; i += kMR)
        microKernel<T>(kc, ap + (i - iDirect) * kc, 1, kMR, bp, C + i * g.c_rs + j, g.c_rs,
                       tkMin<int64_t>(kMR, i1 - i), nr, accumulate);
      j += nr;
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

/// Whether gemmRun computes every row of a column block in one tile, so
/// that each panel of B is packed (or gathered, ConvPanels) once: where M
/// fits one tile, or A is read in place (only its last M % kMR rows are
/// packed: gemmTile's buffer holds kMT rows) and the column blocks alone
/// keep the threads busy.
template <typename T>
inline bool gemmRowsInOneTile(const Gemm<T> &g, const tessera_host_ctx_t *ctx) {
  if (g.M <= kMT)
    return true;
  const int64_t threads = ctx && ctx->num_threads > 1 ? ctx->num_threads : 1;
  const int64_t tn = (g.N + kNT - 1) / kNT;
  return g.a_ks == 1 && (threads == 1 || g.batches * tn >= 4 * threads);
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
    // (ResNet-50's 512-row layers packed their im2col columns 8 times.)
    if (r.tm > 1 && gemmRowsInOneTile(g, ctx)) {
      r.tm = 1;
      r.rows = g.M;
    }
  }
  tk_parallel_for(ctx, g.batches * r.tm * r.tn, &gemmBody<T, PackB>, &r);
}

} // namespace
} // namespace tk_nn

#endif // TESSERA_CODEGEN_KERNELS_NN_GEMM_H
