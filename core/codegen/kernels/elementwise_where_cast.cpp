//===- codegen/kernels/elementwise_where_cast.cpp - where and cast --------===//
//
// The where and cast kernels of the tensor family (the other elementwise
// kernels are in elementwise.cpp):
//   where    condition ? x : y, 3-way broadcasting
//   cast     every dtype pair, with the reference kernels' semantics
//            (core/ir/ops/elementwise.cpp)
//
// ia layouts are documented next to the lowerings (codegen/host_ops_tensor.cpp).
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/tensor_common.h"
#include "codegen/kernels/tensor_ops.h"

namespace {

//===----------------------------------------------------------------------===//
// where
//===----------------------------------------------------------------------===//

template <class R> struct WhereBody {
  tk_walk<3> w;
  const uint8_t *c;
  const R *x, *y;
  R *out;

  void operator()(int64_t begin, int64_t end) const {
    tk_walk_range(w, begin, end, [&](int64_t o, const int64_t *src, int64_t n, const int64_t *st) {
      const uint8_t *pc = c + src[0];
      const R *px = x + src[1], *py = y + src[2];
      R *po = out + o;
      if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
        for (int64_t i = 0; i < n; ++i)
          po[i] = pc[i] ? px[i] : py[i];
      } else {
        for (int64_t i = 0; i < n; ++i)
          po[i] = pc[i * st[0]] ? px[i * st[1]] : py[i * st[2]];
      }
    });
  }
};

//===----------------------------------------------------------------------===//
// cast
//===----------------------------------------------------------------------===//

template <class T> struct tk_limits;
#define TK_LIMITS(T, lo, hi)                                                                       \
  template <> struct tk_limits<T> { static constexpr T min = lo, max = hi; };
TK_LIMITS(int8_t, INT8_MIN, INT8_MAX)
TK_LIMITS(uint8_t, 0, UINT8_MAX)
TK_LIMITS(int16_t, INT16_MIN, INT16_MAX)
TK_LIMITS(uint16_t, 0, UINT16_MAX)
TK_LIMITS(int32_t, INT32_MIN, INT32_MAX)
TK_LIMITS(uint32_t, 0, UINT32_MAX)
TK_LIMITS(int64_t, INT64_MIN, INT64_MAX)
TK_LIMITS(uint64_t, 0, UINT64_MAX)
#undef TK_LIMITS

// A C cast of an out-of-range float is undefined: saturate, NaN gives 0
// (ir::Tensor::setDouble).
template <class T> static inline T tk_saturate(double v) {
  if (v != v)
    return 0;
  if (v <= (double)tk_limits<T>::min)
    return tk_limits<T>::min;
  if (v >= (double)tk_limits<T>::max)
    return tk_limits<T>::max;
  return (T)v;
}

// One element from dtype F to dtype T, as the reference cast kernel does.
template <class F, class T>
static inline void tk_cast1(const typename tk_elem<F>::S *x, typename tk_elem<T>::S *o, int64_t i) {
  using EF = tk_elem<F>;
  using ET = tk_elem<T>;
  if constexpr (tk_is_float<F>) {
    double v = (double)EF::load(x, i);
    if constexpr (tk_same<T, tk_bool_t>::value)
      o[i] = v != 0.0; // NaN -> true
    else if constexpr (tk_is_float<T>)
      ET::store(o, i, (typename ET::C)v);
    else
      o[i] = tk_saturate<T>(v); // truncates toward zero
  } else {
    // Integers and bool; u64 keeps its unsigned value.
    using V = typename tk_elem<F>::C;
    V v = EF::load(x, i);
    if constexpr (tk_same<T, tk_bool_t>::value)
      o[i] = v != 0;
    else if constexpr (tk_same<T, float>::value)
      o[i] = (float)v; // one rounding
    else if constexpr (tk_is_float<T>)
      ET::store(o, i, (typename ET::C)(double)v);
    else
      o[i] = (T)v; // wraps
  }
}

template <class F, class T> struct CastBody {
  const typename tk_elem<F>::S *x;
  typename tk_elem<T>::S *out;
  void operator()(int64_t begin, int64_t end) const {
    for (int64_t i = begin; i < end; ++i)
      tk_cast1<F, T>(x, out, i);
  }
};

} // namespace

// where: ia = [elem_size, rank, shape[rank], strides_cond[rank], strides_x[rank],
// strides_y[rank]].
TK_KERNEL(where) {
  tk_walk<3> w;
  tk_read_walk(a->ia + 1, w);
  int64_t n = tk_walk_numel(w.rank, w.shape);
  return tk_dispatch_size(a->ia[0], [&](auto raw) TK_INLINE_LAMBDA -> int32_t {
    using R = decltype(raw);
    WhereBody<R> body{w, (const uint8_t *)a->in[0].data, (const R *)a->in[1].data,
                      (const R *)a->in[2].data, (R *)a->out[0].data};
    tk_parallel_elems(ctx, n, TK_CHUNK, body);
    return TESSERA_HOST_OK;
  });
}

// cast: no attributes; the dtypes are the tensors'.
TK_KERNEL(cast) {
  int64_t n = tk_numel(a->in[0]);
  return tk_dispatch(a->in[0].dtype, [&](auto from) TK_INLINE_LAMBDA -> int32_t {
    using F = decltype(from);
    return tk_dispatch(a->out[0].dtype, [&](auto to) TK_INLINE_LAMBDA -> int32_t {
      using T = decltype(to);
      CastBody<F, T> body{(const typename tk_elem<F>::S *)a->in[0].data,
                          (typename tk_elem<T>::S *)a->out[0].data};
      tk_parallel_elems(ctx, n, TK_CHUNK, body);
      return TESSERA_HOST_OK;
    });
  });
}
