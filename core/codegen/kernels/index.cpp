//===- codegen/kernels/index.cpp - Index-driven host kernels -------------===//
//
// Kernels whose element positions come from an index tensor (i32 or i64,
// negative values counting from the end of their axis):
//   gather, gather_elements, gather_nd   raw element copies
//   scatter_elements, scatter_nd         a copy of data, then the updates in
//                                        row-major order of the indices,
//                                        replacing or combined by a reduction
// An index outside -dim..dim-1 returns TESSERA_HOST_ERR_INVALID (the
// reference kernels' error), checked before anything is written. Scatter
// reductions follow the reference's combine(): floats compute in float
// (f16, bf16, f32; exact for one + or * of two values) or double, max/min
// propagate NaN; integers wrap (add, mul) and compare exactly (u64
// unsigned).
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/tensor_common.h"
#include "codegen/kernels/tensor_ops.h"
#include "ir/ops/nms_select.h"
#include "ir/ops/unique_select.h"

namespace {

// Copies `n` elements of `esize` bytes.
static inline void tk_copy_elems(uint8_t *dst, const uint8_t *src, int64_t n, int64_t esize) {
  memcpy(dst, src, (size_t)(n * esize));
}

// True when every index of `t` is in -dim..dim-1.
static inline bool tk_indices_ok(const tk_tensor &t, int64_t dim) {
  int64_t n = tk_numel(t);
  bool ok = true;
  if (t.dtype == TK_I32) {
    const int32_t *p = (const int32_t *)t.data;
    for (int64_t i = 0; i < n; ++i)
      ok &= p[i] >= -dim && p[i] < dim;
  } else {
    const int64_t *p = (const int64_t *)t.data;
    for (int64_t i = 0; i < n; ++i)
      ok &= p[i] >= -dim && p[i] < dim;
  }
  return ok;
}

static inline int64_t tk_wrap_index(int64_t v, int64_t dim) {
  return v < 0 ? v + dim : v;
}

struct GatherBody {
  const uint8_t *data;
  const tk_tensor *indices;
  uint8_t *out;
  int64_t esize, dim, nidx, inner;
  // Rows: (outer index, index position) pairs.
  void operator()(int64_t begin, int64_t end) const {
    for (int64_t r = begin; r < end; ++r) {
      int64_t o = r / nidx, k = r % nidx;
      int64_t v = tk_wrap_index(tk_load_index(*indices, k), dim);
      tk_copy_elems(out + r * inner * esize, data + (o * dim + v) * inner * esize, inner, esize);
    }
  }
};

template <class R> struct GatherElementsBody {
  const R *data;
  const tk_tensor *indices;
  R *out;
  int32_t rank, axis;
  int64_t dim;
  const int64_t *shape, *strides; // output (= indices) shape, data strides
  void operator()(int64_t begin, int64_t end) const {
    int64_t idx[TK_MAX_RANK];
    int64_t rest = begin;
    for (int32_t d = rank - 1; d >= 0; --d) {
      idx[d] = rest % shape[d];
      rest /= shape[d];
    }
    for (int64_t i = begin; i < end; ++i) {
      int64_t src = 0;
      for (int32_t d = 0; d < rank; ++d)
        if (d != axis)
          src += idx[d] * strides[d];
      src += tk_wrap_index(tk_load_index(*indices, i), dim) * strides[axis];
      out[i] = data[src];
      for (int32_t d = rank - 1; d >= 0; --d) {
        if (++idx[d] < shape[d])
          break;
        idx[d] = 0;
      }
    }
  }
};

// out[dst] = out[dst] (red) upd[src], per the element type T.
template <class T>
static inline void tk_combine(typename tk_elem<T>::S *out, int64_t dst,
                              const typename tk_elem<T>::S *upd, int64_t src, int64_t red) {
  using E = tk_elem<T>;
  if (red == TK_R_NONE) {
    out[dst] = upd[src];
    return;
  }
  if constexpr (tk_is_float<T>) {
    using C = typename E::C;
    C a = E::load(out, dst), b = E::load(upd, src);
    bool nan = a != a || b != b;
    switch (red) {
    case TK_R_ADD: a = a + b; break;
    case TK_R_MUL: a = a * b; break;
    case TK_R_MAX: a = nan ? (C)NAN : a < b ? b : a; break;
    case TK_R_MIN: a = nan ? (C)NAN : b < a ? b : a; break;
    default: break;
    }
    E::store(out, dst, a);
  } else if constexpr (tk_same<T, uint64_t>::value) {
    uint64_t a = out[dst], b = upd[src];
    switch (red) {
    case TK_R_ADD: a = a + b; break;
    case TK_R_MUL: a = a * b; break;
    case TK_R_MAX: a = a < b ? b : a; break;
    case TK_R_MIN: a = b < a ? b : a; break;
    default: break;
    }
    out[dst] = a;
  } else {
    int64_t a = (int64_t)E::load(out, dst), b = (int64_t)E::load(upd, src);
    switch (red) {
    case TK_R_ADD: a = (int64_t)((uint64_t)a + (uint64_t)b); break;
    case TK_R_MUL: a = (int64_t)((uint64_t)a * (uint64_t)b); break;
    case TK_R_MAX: a = a < b ? b : a; break;
    case TK_R_MIN: a = b < a ? b : a; break;
    default: break;
    }
    E::store(out, dst, (typename E::C)a); // wraps to the dtype
  }
}

} // namespace

// gather: ia = [elem_size, outer, dim, nidx, inner]: out[o, k, i] =
// data[o, indices[k], i] with data viewed as [outer, dim, inner] and the
// indices flattened to nidx.
TK_KERNEL(gather) {
  int64_t esize = a->ia[0], outer = a->ia[1], dim = a->ia[2], nidx = a->ia[3], inner = a->ia[4];
  if (!tk_indices_ok(a->in[1], dim))
    return TESSERA_HOST_ERR_INVALID;
  GatherBody body{(const uint8_t *)a->in[0].data,
                  &a->in[1],
                  (uint8_t *)a->out[0].data,
                  esize,
                  dim,
                  nidx,
                  inner};
  int64_t rows = outer * nidx;
  if (rows * inner >= TK_CHUNK && rows > 1)
    tk_parallel_for(
        ctx, rows, [](void *c, int64_t b, int64_t e) { (*(const GatherBody *)c)(b, e); }, &body);
  else
    body(0, rows);
  return TESSERA_HOST_OK;
}

// gather_elements: ia = [elem_size, rank, axis, dim, shape[rank],
// data_strides[rank]]: out (the indices' shape) [i] = data[i with i[axis]
// replaced by indices[i]]. rank >= 1.
TK_KERNEL(gather_elements) {
  int32_t rank = (int32_t)a->ia[1], axis = (int32_t)a->ia[2];
  int64_t dim = a->ia[3];
  const int64_t *shape = a->ia + 4, *strides = a->ia + 4 + rank;
  if (!tk_indices_ok(a->in[1], dim))
    return TESSERA_HOST_ERR_INVALID;
  int64_t n = tk_numel(a->in[1]);
  return tk_dispatch_size(a->ia[0], [&](auto raw) TK_INLINE_LAMBDA -> int32_t {
    using R = decltype(raw);
    GatherElementsBody<R> body{
        (const R *)a->in[0].data, &a->in[1], (R *)a->out[0].data, rank, axis, dim, shape, strides};
    tk_parallel_elems(ctx, n, TK_CHUNK, body);
    return TESSERA_HOST_OK;
  });
}

// gather_nd: ia = [elem_size, batches, tuples, k, slice, batch_stride,
// (dim_j, stride_j) for the k indexed axes]: for each batch b and index
// tuple t, copies the slice of `slice` elements at
// b * batch_stride + sum(index_j * stride_j).
TK_KERNEL(gather_nd) {
  int64_t esize = a->ia[0], batches = a->ia[1], tuples = a->ia[2], k = a->ia[3], slice = a->ia[4];
  int64_t batchStride = a->ia[5];
  const int64_t *axes = a->ia + 6;
  const tk_tensor &indices = a->in[1];
  int64_t rows = batches * tuples;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < k; ++j) {
      int64_t v = tk_load_index(indices, r * k + j), dim = axes[2 * j];
      if (v < -dim || v >= dim)
        return TESSERA_HOST_ERR_INVALID;
    }
  const uint8_t *data = (const uint8_t *)a->in[0].data;
  uint8_t *out = (uint8_t *)a->out[0].data;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t src = (r / tuples) * batchStride;
    for (int64_t j = 0; j < k; ++j)
      src += tk_wrap_index(tk_load_index(indices, r * k + j), axes[2 * j]) * axes[2 * j + 1];
    if (slice > 0)
      tk_copy_elems(out + r * slice * esize, data + src * esize, slice, esize);
  }
  (void)ctx;
  return TESSERA_HOST_OK;
}

// scatter_nd: ia = [reduction, tuples, k, slice, (dim_j, stride_j) for the
// first k axes of data]: out = data, then for each index tuple t in order,
// the slice of `slice` elements at sum(index_j * stride_j) is combined with
// updates[t].
TK_KERNEL(scatter_nd) {
  int64_t red = a->ia[0], tuples = a->ia[1], k = a->ia[2], slice = a->ia[3];
  const int64_t *axes = a->ia + 4;
  const tk_tensor &indices = a->in[1];
  for (int64_t t = 0; t < tuples; ++t)
    for (int64_t j = 0; j < k; ++j) {
      int64_t v = tk_load_index(indices, t * k + j), dim = axes[2 * j];
      if (v < -dim || v >= dim)
        return TESSERA_HOST_ERR_INVALID;
    }
  (void)ctx;
  return tk_dispatch(a->in[0].dtype, [&](auto tag) TK_INLINE_LAMBDA -> int32_t {
    using T = decltype(tag);
    using S = typename tk_elem<T>::S;
    const S *upd = (const S *)a->in[2].data;
    S *out = (S *)a->out[0].data;
    if (a->in[0].data != a->out[0].data)
      memcpy(out, a->in[0].data, (size_t)tk_numel(a->in[0]) * sizeof(S));
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t dst = 0;
      for (int64_t j = 0; j < k; ++j)
        dst += tk_wrap_index(tk_load_index(indices, t * k + j), axes[2 * j]) * axes[2 * j + 1];
      for (int64_t e = 0; e < slice; ++e)
        tk_combine<T>(out, dst + e, upd, t * slice + e, red);
    }
    return TESSERA_HOST_OK;
  });
}

// scatter_elements: ia = [reduction, rank, axis, dim, shape[rank],
// data_strides[rank]] with `shape` the indices' shape: out = data, then for
// each position i of indices in row-major order, out[i with i[axis] =
// indices[i]] is combined with updates[i]. rank >= 1.
TK_KERNEL(scatter_elements) {
  int64_t red = a->ia[0], dim = a->ia[3];
  int32_t rank = (int32_t)a->ia[1], axis = (int32_t)a->ia[2];
  const int64_t *shape = a->ia + 4, *strides = a->ia + 4 + rank;
  const tk_tensor &indices = a->in[1];
  if (!tk_indices_ok(indices, dim))
    return TESSERA_HOST_ERR_INVALID;
  int64_t n = tk_numel(indices);
  (void)ctx;
  return tk_dispatch(a->in[0].dtype, [&](auto tag) TK_INLINE_LAMBDA -> int32_t {
    using T = decltype(tag);
    using S = typename tk_elem<T>::S;
    const S *upd = (const S *)a->in[2].data;
    S *out = (S *)a->out[0].data;
    if (a->in[0].data != a->out[0].data)
      memcpy(out, a->in[0].data, (size_t)tk_numel(a->in[0]) * sizeof(S));
    int64_t idx[TK_MAX_RANK];
    for (int32_t d = 0; d < rank; ++d)
      idx[d] = 0;
    for (int64_t i = 0; i < n; ++i) {
      int64_t dst = tk_wrap_index(tk_load_index(indices, i), dim) * strides[axis];
      for (int32_t d = 0; d < rank; ++d)
        if (d != axis)
          dst += idx[d] * strides[d];
      tk_combine<T>(out, dst, upd, i, red);
      for (int32_t d = rank - 1; d >= 0; --d) {
        if (++idx[d] < shape[d])
          break;
        idx[d] = 0;
      }
    }
    return TESSERA_HOST_OK;
  });
}

// nonzero: ia = [elem_size, rank, dims...] of the input (a scalar as [1]);
// out[0] = i64 [rank, count] indices of the non-zero elements in row-major
// order, laid out for this run's count (its buffer is planned for every
// element); out[1] = i64 [1] count, from which a SetSymbol step sets the
// run-time symbol (runtime/plan.h). Floats compare by value (-0 is zero,
// NaN is not), other dtypes by their bytes.
TK_KERNEL(nonzero) {
  const int64_t esize = a->ia[0], rank = a->ia[1];
  const int64_t *dims = a->ia + 2;
  int64_t n = 1;
  for (int64_t d = 0; d < rank; ++d)
    n *= dims[d];
  const uint8_t *x = (const uint8_t *)a->in[0].data;
  const bool fp = a->in[0].dtype == TK_F32 || a->in[0].dtype == TK_F64 ||
                  a->in[0].dtype == TK_F16 || a->in[0].dtype == TK_BF16;
  auto nonzero = [&](int64_t i) {
    const uint8_t *p = x + i * esize;
    uint8_t any = 0;
    for (int64_t b = 0; b < esize; ++b) // little-endian: the sign is the top bit of the last byte
      any |= (fp && b == esize - 1) ? (p[b] & 0x7f) : p[b];
    return any != 0;
  };
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i)
    count += nonzero(i);
  int64_t *out = (int64_t *)a->out[0].data;
  int64_t k = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!nonzero(i))
      continue;
    int64_t rest = i;
    for (int64_t d = rank - 1; d >= 0; --d) {
      out[d * count + k] = rest % dims[d];
      rest /= dims[d];
    }
    ++k;
  }
  *(int64_t *)a->out[1].data = count;
  (void)ctx;
  return TESSERA_HOST_OK;
}

// unique: ia = [outer, n, inner, sorted]: the n slices along the axis, each
// of outer x inner elements; scratch 4n i64. out[0] = i64 [count] first
// occurrences, out[1] = i64 [n] groups, out[2] = i64 [count] sizes (both
// planned for n), out[3] = i64 [1] count. The groups are the reference
// kernel's (ir/ops/unique_select.h); floats by value (NaN after numbers,
// NaNs equal), integers exactly.
TK_KERNEL(unique) {
  const int64_t outer = a->ia[0], n = a->ia[1], inner = a->ia[2];
  const bool sorted = a->ia[3] != 0;
  const tk_tensor &x = a->in[0];
  int64_t *first = (int64_t *)a->out[0].data, *inverse = (int64_t *)a->out[1].data;
  int64_t *counts = (int64_t *)a->out[2].data;
  auto group = [&](auto element) {
    return tessera::unique::groupSlices(
        n, sorted, (int64_t *)a->scratch, first, inverse, counts, [&](int64_t p, int64_t q) {
          for (int64_t o = 0; o < outer; ++o)
            for (int64_t j = 0; j < inner; ++j)
              if (int c = element((o * n + p) * inner + j, (o * n + q) * inner + j))
                return c;
          return 0;
        });
  };
  auto ints = [&](const auto *v) {
    return group([v](int64_t i, int64_t j) { return v[i] < v[j] ? -1 : (v[i] > v[j] ? 1 : 0); });
  };
  int64_t u = 0;
  switch (x.dtype) {
  case TK_F32:
  case TK_F16:
  case TK_BF16:
  case TK_F64:
    u = group([&](int64_t i, int64_t j) {
      const double p = tk_load_f64(x, i), q = tk_load_f64(x, j);
      if (p != p || q != q)
        return (p != p) == (q != q) ? 0 : (p != p ? 1 : -1);
      return p < q ? -1 : (p > q ? 1 : 0);
    });
    break;
  case TK_I8: u = ints((const int8_t *)x.data); break;
  case TK_I16: u = ints((const int16_t *)x.data); break;
  case TK_I32: u = ints((const int32_t *)x.data); break;
  case TK_I64: u = ints((const int64_t *)x.data); break;
  case TK_U8:
  case TK_BOOL: u = ints((const uint8_t *)x.data); break;
  case TK_U16: u = ints((const uint16_t *)x.data); break;
  case TK_U32: u = ints((const uint32_t *)x.data); break;
  case TK_U64: u = ints((const uint64_t *)x.data); break;
  default: return TESSERA_HOST_ERR_INTERNAL;
  }
  *(int64_t *)a->out[3].data = u;
  (void)ctx;
  return TESSERA_HOST_OK;
}

// non_max_suppression: ia = [batches, classes, n, max_output,
// use_score_threshold, center_point_box], fa = [iou_threshold,
// score_threshold], or with in[2..4] those three read from the data
// (max_output within ia[3]); scratch: n i64 (the selection), then
// nms::scratchBytes(n). out[0] = i64 [count, 3]
// rows (batch, class, box), planned for the most there can be; out[1] =
// i64 [1] count (for the SetSymbol step that follows). The selection is
// the reference kernel's (ir/ops/nms_select.h).
TK_KERNEL(non_max_suppression) {
  const int64_t batches = a->ia[0], classes = a->ia[1], n = a->ia[2];
  int64_t maxOut = a->ia[3];
  const bool useScore = a->ia[4] != 0, centre = a->ia[5] != 0;
  float iou = (float)a->fa[0], scoreThr = (float)a->fa[1];
  if (a->nin == 5) { // the thresholds as data: max_output i64, iou and score f32
    const int64_t want = *(const int64_t *)a->in[2].data;
    maxOut = want < 0 ? 0 : want < maxOut ? want : maxOut;
    iou = *(const float *)a->in[3].data;
    scoreThr = *(const float *)a->in[4].data;
  }
  int64_t *selected = (int64_t *)a->scratch;
  void *scratch = selected + n;
  const float *boxes = (const float *)a->in[0].data, *scores = (const float *)a->in[1].data;
  int64_t *rows = (int64_t *)a->out[0].data;
  int64_t count = 0;
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t c = 0; c < classes; ++c) {
      const int64_t k = tessera::nms::select(boxes + b * n * 4, scores + (b * classes + c) * n, 1,
                                             n, maxOut, iou, useScore, scoreThr, centre, selected,
                                             scratch);
      for (int64_t i = 0; i < k; ++i, ++count) {
        rows[3 * count] = b;
        rows[3 * count + 1] = c;
        rows[3 * count + 2] = selected[i];
      }
    }
  *(int64_t *)a->out[1].data = count;
  (void)ctx;
  return TESSERA_HOST_OK;
}

// symbol_values: ia = [n, values...]: the values (computed from this run's
// symbols by the step's fitted parameters) into out[0].
TK_KERNEL(symbol_values) {
  int64_t *out = (int64_t *)a->out[0].data;
  for (int64_t i = 0; i < a->ia[0]; ++i)
    out[i] = a->ia[1 + i];
  (void)ctx;
  return TESSERA_HOST_OK;
}

// check: ia = [elem_size]: out[0] = in[0] when every bool of in[1] holds,
// else TESSERA_HOST_ERR_INVALID (the step's label carries the op's message).
TK_KERNEL(check) {
  const uint8_t *ok = (const uint8_t *)a->in[1].data;
  const int64_t n = tk_numel(a->in[1]);
  for (int64_t i = 0; i < n; ++i)
    if (!ok[i])
      return TESSERA_HOST_ERR_INVALID;
  if (a->out[0].data != a->in[0].data)
    memcpy(a->out[0].data, a->in[0].data, (size_t)(tk_numel(a->in[0]) * a->ia[0]));
  (void)ctx;
  return TESSERA_HOST_OK;
}

// range_count: ia = []: out[0][0] = max(ceil((limit - start) / delta), 0)
// over the three scalars in[0..2] (one dtype: i32, i64, f32, f64);
// TESSERA_HOST_ERR_INVALID for delta 0 (or NaN) and counts past 2^62.
TK_KERNEL(range_count) {
  const int32_t dt = a->in[0].dtype;
  int64_t n = 0;
  if (dt == TK_F32 || dt == TK_F64) {
    auto get = [&](int k) {
      return dt == TK_F32 ? (double)*(const float *)a->in[k].data : *(const double *)a->in[k].data;
    };
    const double start = get(0), limit = get(1), delta = get(2);
    if (!(delta != 0))
      return TESSERA_HOST_ERR_INVALID;
    const double c = __builtin_ceil((limit - start) / delta);
    if (!(c < 4.6e18))
      return TESSERA_HOST_ERR_INVALID;
    n = c > 0 ? (int64_t)c : 0;
  } else if (dt == TK_I32 || dt == TK_I64) {
    auto get = [&](int k) {
      return dt == TK_I32 ? (int64_t)*(const int32_t *)a->in[k].data
                          : *(const int64_t *)a->in[k].data;
    };
    const int64_t start = get(0), limit = get(1), delta = get(2);
    if (delta == 0)
      return TESSERA_HOST_ERR_INVALID;
    const __int128 span = (__int128)limit - start;
    const __int128 c = delta > 0 ? (span + delta - 1) / delta : (span + delta + 1) / delta;
    if (c > ((__int128)1 << 62))
      return TESSERA_HOST_ERR_INVALID;
    n = c > 0 ? (int64_t)c : 0;
  } else {
    return TESSERA_HOST_ERR_INVALID;
  }
  *(int64_t *)a->out[0].data = n;
  (void)ctx;
  return TESSERA_HOST_OK;
}

// range: ia = [start, delta, n]: out[0][i] = start + i * delta (i64 or i32).
TK_KERNEL(range) {
  const int64_t start = a->ia[0], delta = a->ia[1], n = a->ia[2];
  if (a->out[0].dtype == TK_I32) {
    int32_t *out = (int32_t *)a->out[0].data;
    for (int64_t i = 0; i < n; ++i)
      out[i] = (int32_t)(start + i * delta);
  } else {
    int64_t *out = (int64_t *)a->out[0].data;
    for (int64_t i = 0; i < n; ++i)
      out[i] = start + i * delta;
  }
  (void)ctx;
  return TESSERA_HOST_OK;
}
