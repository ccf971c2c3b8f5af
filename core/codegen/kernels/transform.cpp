//===- codegen/kernels/transform.cpp - Data-movement host kernels --------===//
//
// Kernels that move elements as raw bytes (any dtype), for the injective
// ops of the tensor family:
//   copy          reshape, flatten, squeeze, unsqueeze: one memcpy
//   strided_copy  transpose, slice, expand: out[i] = in[base + sum(i_d * stride_d)]
//   concat        variadic concatenation along an axis
//   split         several outputs, slices along an axis
//   pad           constant, reflect and edge modes (negative pads crop)
// The lowerings (codegen/host_ops_tensor.cpp) collapse the dims and compute
// the source strides; ia layouts are documented next to each kernel.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/tensor_common.h"
#include "codegen/kernels/tensor_ops.h"

namespace {

// Bytes per parallel chunk of a plain copy.
constexpr int64_t kCopyChunk = 1 << 18;

struct CopyBody {
  const uint8_t *in;
  uint8_t *out;
  void operator()(int64_t begin, int64_t end) const {
    memcpy(out + begin, in + begin, (size_t)(end - begin));
  }
};

template <class R> struct StridedBody {
  tk_walk<1> w;
  const R *in;
  R *out;
  void operator()(int64_t begin, int64_t end) const {
    tk_walk_range(w, begin, end, [&](int64_t o, const int64_t *src, int64_t n, const int64_t *st) {
      const R *p = in + src[0];
      R *q = out + o;
      if (st[0] == 1)
        memcpy(q, p, (size_t)n * sizeof(R));
      else if (st[0] == 0)
        for (int64_t i = 0; i < n; ++i)
          q[i] = p[0];
      else
        for (int64_t i = 0; i < n; ++i)
          q[i] = p[i * st[0]];
    });
  }
};

// A transposing copy: the source is contiguous along the output's
// second-to-last dim (A) and strided by `sb` along the last (B). Copies
// kTile x kTile blocks so that both sides stay in cache. Work items are
// (outer index, block row) pairs; the outer dims' source offsets come from
// the walk's strides.
constexpr int64_t kTile = 32;

template <class R> struct TransposeBody {
  tk_walk<1> w;
  const R *in;
  R *out;

  void operator()(int64_t begin, int64_t end) const {
    const int32_t r = w.rank;
    const int64_t A = w.shape[r - 2], B = w.shape[r - 1], sb = w.strides[0][r - 1];
    const int64_t tilesA = (A + kTile - 1) / kTile;
    for (int64_t item = begin; item < end; ++item) {
      int64_t outer = item / tilesA, i0 = (item % tilesA) * kTile;
      // The source offset of this outer index.
      int64_t src = 0, rest = outer;
      for (int32_t d = r - 3; d >= 0; --d) {
        src += (rest % w.shape[d]) * w.strides[0][d];
        rest /= w.shape[d];
      }
      const R *p = in + src;
      R *q = out + outer * A * B;
      int64_t i1 = i0 + kTile < A ? i0 + kTile : A;
      for (int64_t j0 = 0; j0 < B; j0 += kTile) {
        int64_t j1 = j0 + kTile < B ? j0 + kTile : B;
        for (int64_t i = i0; i < i1; ++i)
          for (int64_t j = j0; j < j1; ++j)
            q[i * B + j] = p[i + j * sb];
      }
    }
  }
};

struct ConcatBody {
  const tk_args *a;
  int64_t esize, outRow;
  const int64_t *lens;
  void operator()(int64_t begin, int64_t end) const {
    uint8_t *out = (uint8_t *)a->out[0].data;
    for (int64_t o = begin; o < end; ++o) {
      int64_t offset = o * outRow;
      for (int32_t j = 0; j < a->nin; ++j) {
        int64_t len = lens[j];
        if (len > 0)
          memcpy(out + offset * esize, (const uint8_t *)a->in[j].data + o * len * esize,
                 (size_t)(len * esize));
        offset += len;
      }
    }
  }
};

struct SplitBody {
  const tk_args *a;
  int64_t esize, inRow;
  const int64_t *pieces; // (offset, len) per output
  void operator()(int64_t begin, int64_t end) const {
    const uint8_t *in = (const uint8_t *)a->in[0].data;
    for (int64_t o = begin; o < end; ++o)
      for (int32_t j = 0; j < a->nout; ++j) {
        int64_t offset = pieces[2 * j], len = pieces[2 * j + 1];
        if (len > 0)
          memcpy((uint8_t *)a->out[j].data + o * len * esize, in + (o * inRow + offset) * esize,
                 (size_t)(len * esize));
      }
  }
};

// One dim of a pad: the output size, the input stride, the leading pad
// (>= 0), and the kept input range [lo, lo + n).
struct PadDim {
  int64_t out, stride, begin, lo, n;
};

// The input position that output position `o` reads along a dim, or -1 for
// the constant fill.
static inline int64_t tk_pad_source(const PadDim &d, int64_t o, int64_t mode) {
  int64_t pos = o - d.begin;
  if (pos < 0 || pos >= d.n) {
    if (mode == TK_PAD_CONSTANT)
      return -1;
    if (mode == TK_PAD_EDGE)
      pos = pos < 0 ? 0 : d.n - 1;
    else // reflect: the pads are smaller than n, one reflection suffices
      pos = pos < 0 ? -pos : 2 * (d.n - 1) - pos;
  }
  return d.lo + pos;
}

template <class R> struct PadBody {
  const R *in;
  R *out;
  int32_t rank;
  int64_t mode;
  R fill;
  const int64_t *dims; // PadDim as 5 int64 per dim

  PadDim dim(int32_t d) const {
    const int64_t *p = dims + 5 * d;
    return PadDim{p[0], p[1], p[2], p[3], p[4]};
  }

  // Rows = every output dim but the last.
  void operator()(int64_t begin, int64_t end) const {
    const PadDim last = dim(rank - 1);
    for (int64_t row = begin; row < end; ++row) {
      R *q = out + row * last.out;
      // The source offset of this row, or -1 when it lies in the fill.
      int64_t src = 0, rest = row;
      for (int32_t d = rank - 2; d >= 0 && src >= 0; --d) {
        PadDim pd = dim(d);
        int64_t o = rest % pd.out;
        rest /= pd.out;
        int64_t s = tk_pad_source(pd, o, mode);
        src = s < 0 ? -1 : src + s * pd.stride;
      }
      if (src < 0) {
        for (int64_t i = 0; i < last.out; ++i)
          q[i] = fill;
        continue;
      }
      const R *p = in + src;
      // The leading pad, the kept middle (contiguous), the trailing pad.
      int64_t midEnd = last.begin + last.n;
      for (int64_t i = 0; i < last.begin && i < last.out; ++i) {
        int64_t s = tk_pad_source(last, i, mode);
        q[i] = s < 0 ? fill : p[s];
      }
      if (last.n > 0)
        memcpy(q + last.begin, p + last.lo, (size_t)last.n * sizeof(R));
      for (int64_t i = midEnd; i < last.out; ++i) {
        int64_t s = tk_pad_source(last, i, mode);
        q[i] = s < 0 ? fill : p[s];
      }
    }
  }
};

template <class Body> static void tk_rows_trampoline(void *closure, int64_t begin, int64_t end) {
  (*(const Body *)closure)(begin, end);
}

// Splits `rows` rows of `rowElems` elements each over the threads when the
// total is large enough.
template <class Body>
static inline void tk_parallel_rows(const tessera_host_ctx_t *ctx, int64_t rows, int64_t rowElems,
                                    const Body &body) {
  if (rows <= 0)
    return;
  if (rows == 1 || rows * rowElems < TK_CHUNK)
    body(0, rows);
  else
    tk_parallel_for(ctx, rows, &tk_rows_trampoline<Body>, (void *)&body);
}

} // namespace

// copy: ia = [nbytes].
TK_KERNEL(copy) {
  CopyBody body{(const uint8_t *)a->in[0].data, (uint8_t *)a->out[0].data};
  if (a->in[0].data != a->out[0].data)
    tk_parallel_elems(ctx, a->ia[0], kCopyChunk, body);
  return TESSERA_HOST_OK;
}

namespace {

/// out (collapsed to the walk's shape, row-major) [i] = in[base + sum(i_d *
/// strides_d)], the walk read from ia + 2.
int32_t stridedCopy(const tk_args *a, const tessera_host_ctx_t *ctx, int64_t base) {
  tk_walk<1> w;
  tk_read_walk(a->ia + 2, w);
  int64_t n = tk_walk_numel(w.rank, w.shape);
  return tk_dispatch_size(a->ia[0], [&](auto raw) TK_INLINE_LAMBDA -> int32_t {
    using R = decltype(raw);
    const int32_t r = w.rank;
    if (r >= 2 && w.strides[0][r - 2] == 1 && w.strides[0][r - 1] > 1 && w.shape[r - 2] >= 8 &&
        w.shape[r - 1] >= 8) {
      TransposeBody<R> body{w, (const R *)a->in[0].data + base, (R *)a->out[0].data};
      int64_t A = w.shape[r - 2], B = w.shape[r - 1];
      int64_t items = n / (A * B) * ((A + kTile - 1) / kTile);
      if (items > 1 && n >= TK_CHUNK)
        tk_parallel_for(ctx, items, &tk_rows_trampoline<TransposeBody<R>>, (void *)&body);
      else
        body(0, items);
      return TESSERA_HOST_OK;
    }
    StridedBody<R> body{w, (const R *)a->in[0].data + base, (R *)a->out[0].data};
    tk_parallel_elems(ctx, n, TK_CHUNK, body);
    return TESSERA_HOST_OK;
  });
}

} // namespace

// strided_copy: ia = [elem_size, base, rank, shape[rank], strides[rank]]:
// out (collapsed to `shape`, row-major) [i] = in[base + sum(i_d * strides_d)].
TK_KERNEL(strided_copy) {
  return stridedCopy(a, ctx, a->ia[1]);
}

// dynamic_slice: ia = [elem_size, 0, rank, shape[rank], strides[rank], k,
// (dim, size, stride) per sliced axis]: strided_copy from base sum(start_j
// * stride_j), start_j = in[1][j] (i32 or i64; negative counts from the
// end); a window that does not fit its axis is TESSERA_HOST_ERR_INVALID.
TK_KERNEL(dynamic_slice) {
  const int64_t *ia = a->ia, *axes = ia + 3 + 2 * ia[2] + 1;
  const int64_t k = ia[3 + 2 * ia[2]];
  const bool wide = a->in[1].dtype == TK_I64;
  int64_t base = 0;
  for (int64_t j = 0; j < k; ++j) {
    const int64_t dim = axes[3 * j], size = axes[3 * j + 1], stride = axes[3 * j + 2];
    int64_t start = wide ? ((const int64_t *)a->in[1].data)[j]
                         : (int64_t)((const int32_t *)a->in[1].data)[j];
    if (start < 0)
      start += dim;
    if (start < 0 || start > dim - size)
      return TESSERA_HOST_ERR_INVALID;
    base += start * stride;
  }
  return stridedCopy(a, ctx, base);
}

// concat: ia = [elem_size, outer, out_row, len[nin]]: per outer index, the
// output row of out_row elements is the inputs' rows of len_j elements.
TK_KERNEL(concat) {
  ConcatBody body{a, a->ia[0], a->ia[2], a->ia + 3};
  tk_parallel_rows(ctx, a->ia[1], a->ia[2], body);
  return TESSERA_HOST_OK;
}

// split: ia = [elem_size, outer, in_row, (offset_j, len_j) per output]: per
// outer index, output j's row is elements [offset_j, offset_j + len_j) of
// the input row.
TK_KERNEL(split) {
  SplitBody body{a, a->ia[0], a->ia[2], a->ia + 3};
  tk_parallel_rows(ctx, a->ia[1], a->ia[2], body);
  return TESSERA_HOST_OK;
}

// pad: ia = [elem_size, rank, mode, fill_bits, (out, in_stride, begin, lo, n)
// per dim]; fill_bits holds the fill value's bytes (little-endian) in the
// dtype. rank >= 1.
TK_KERNEL(pad) {
  int32_t rank = (int32_t)a->ia[1];
  const int64_t *dims = a->ia + 4;
  int64_t rows = 1;
  for (int32_t d = 0; d + 1 < rank; ++d)
    rows *= dims[5 * d];
  int64_t rowElems = dims[5 * (rank - 1)];
  if (rowElems == 0)
    return TESSERA_HOST_OK;
  return tk_dispatch_size(a->ia[0], [&](auto raw) TK_INLINE_LAMBDA -> int32_t {
    using R = decltype(raw);
    R fill;
    memcpy(&fill, &a->ia[3], sizeof(R));
    PadBody<R> body{(const R *)a->in[0].data, (R *)a->out[0].data, rank, a->ia[2], fill, dims};
    tk_parallel_rows(ctx, rows, rowElems, body);
    return TESSERA_HOST_OK;
  });
}
