//===- codegen/kernels/elementwise.cpp - Elementwise host kernels --------===//
//
// The elementwise and broadcast kernels of the tensor family:
//   unary    every one-input elementwise op (op code in ia[0])
//   binary   arithmetic with numpy broadcasting (op code in ia[0])
//   compare  comparisons and logical ops, bool result
// (where and cast are in elementwise_where_cast.cpp).
// Semantics are those of the reference kernels (core/ir/ops/elementwise.cpp):
// integers compute in int64 and wrap to the dtype (u64 in uint64 for
// ordering, division and powers), integer division or modulo by zero (and
// 0 to a negative power) is TESSERA_HOST_ERR_INVALID, shifts by the width
// or more give 0. Floats compute in float (f16, bf16, f32) or double (f64);
// exact operations (+ - * / sqrt, comparisons, fmod, rounding) give the
// reference's result bit for bit, the transcendental functions are within
// the conformance tolerances.
//
// ia layouts are documented next to the lowerings (codegen/host_ops_tensor.cpp).
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/fast_math.h"
#include "codegen/kernels/tensor_common.h"
#include "codegen/kernels/tensor_ops.h"

// The float functions of fast_math.h for the host code's fused loops
// (codegen/elementwise.cpp calls them by these names), and the parallel
// runner of fused steps (codegen/host.cpp): emitted ("used") although
// nothing here calls them, and inlined wherever they are called.
#define TK_MATH_EXPORT extern "C" inline __attribute__((always_inline, used))
TK_MATH_EXPORT float tk_math_expf(float x) {
  return tk_fast_expf(x);
}
TK_MATH_EXPORT float tk_math_tanhf(float x) {
  return tk_fast_tanhf(x);
}
TK_MATH_EXPORT float tk_math_erff(float x) {
  return tk_fast_erff(x);
}
TK_MATH_EXPORT float tk_math_erfcf(float x) {
  return tk_fast_erfcf(x);
}
TK_MATH_EXPORT float tk_math_mishf(float x) {
  return tk_fast_mishf(x);
}

namespace {
/// A fused loop nest's range function (codegen/llvm_util.h) and its operands.
struct FusedRange {
  void (*range)(const float *const *inputs, float *out, int64_t begin, int64_t end);
  const float *const *inputs;
  float *out;
};
void fusedRangeBody(void *closure, int64_t begin, int64_t end) {
  const FusedRange &f = *(const FusedRange *)closure;
  f.range(f.inputs, f.out, begin, end);
}
} // namespace

/// Runs a fused elementwise loop nest (host code's fused steps) over the
/// n iterations of its outermost loop on the runtime's threads.
TK_MATH_EXPORT void tk_fused_parallel(const tessera_host_ctx_t *ctx, int64_t n,
                                      void (*range)(const float *const *, float *, int64_t,
                                                    int64_t),
                                      const float *const *inputs, float *out) {
  FusedRange f{range, inputs, out};
  tk_parallel_for(ctx, n, &fusedRangeBody, &f);
}
#undef TK_MATH_EXPORT

namespace {

// float / double overloads of the math functions the kernels use: libm's,
// but fast_math.h's in float for exp, tanh and erf.
#define TK_MATH1_AS(name, floatFn)                                                                 \
  static inline float tk_##name(float x) {                                                         \
    return floatFn(x);                                                                             \
  }                                                                                                \
  static inline double tk_##name(double x) {                                                       \
    return name(x);                                                                                \
  }
#define TK_MATH1(name) TK_MATH1_AS(name, name##f)
TK_MATH1(sqrt)
TK_MATH1(log)
TK_MATH1(floor)
TK_MATH1(ceil)
TK_MATH1(nearbyint)
TK_MATH1(sin)
TK_MATH1(cos)
TK_MATH1(tan)
TK_MATH1(asin)
TK_MATH1(acos)
TK_MATH1(atan)
TK_MATH1(sinh)
TK_MATH1(cosh)
TK_MATH1(asinh)
TK_MATH1(acosh)
TK_MATH1(atanh)
TK_MATH1(fabs)
TK_MATH1_AS(exp, tk_fast_expf)
TK_MATH1_AS(tanh, tk_fast_tanhf)
TK_MATH1_AS(erf, tk_fast_erff)
#undef TK_MATH1
#undef TK_MATH1_AS
/// 1 + erf(u), GELU's factor: erfc(-u) in float, accurate where erf is near -1.
static inline float tk_one_plus_erf(float u) {
  return tk_fast_erfcf(-u);
}
static inline double tk_one_plus_erf(double u) {
  return 1.0 + erf(u);
}
static inline float tk_mish(float x) {
  return tk_fast_mishf(x);
}
static inline double tk_mish(double x) {
  return x * tanh(log1p(exp(x)));
}
static inline float tk_pow(float a, float b) {
  return powf(a, b);
}
static inline double tk_pow(double a, double b) {
  return pow(a, b);
}
static inline float tk_fmod(float a, float b) {
  return fmodf(a, b);
}
static inline double tk_fmod(double a, double b) {
  return fmod(a, b);
}
static inline float tk_copysign(float a, float b) {
  return copysignf(a, b);
}
static inline double tk_copysign(double a, double b) {
  return copysign(a, b);
}

template <class C> static inline bool tk_isnan(C x) {
  return x != x;
}

// Two's-complement arithmetic on int64 without signed-overflow UB.
static inline int64_t tk_wadd(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a + (uint64_t)b);
}
static inline int64_t tk_wsub(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a - (uint64_t)b);
}
static inline int64_t tk_wmul(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a * (uint64_t)b);
}
static inline int64_t tk_wneg(int64_t a) {
  return (int64_t)(0 - (uint64_t)a);
}

//===----------------------------------------------------------------------===//
// unary
//===----------------------------------------------------------------------===//

// Clamps to [0, 1]; NaN passes through.
template <class C> static inline C tk_clamp01(C v) {
  return tk_isnan(v) ? v : v < (C)0 ? (C)0 : v > (C)1 ? (C)1 : v;
}

template <class C> TK_ALWAYS_INLINE C tk_unary_float(int64_t op, C x, C p0, C p1) {
  switch (op) {
  case TK_U_ABS: return tk_fabs(x);
  case TK_U_NEG: return -x;
  case TK_U_RELU: return x < (C)0 ? (C)0 : x;
  case TK_U_LEAKY_RELU: return x < (C)0 ? p0 * x : x;
  case TK_U_SIGMOID:
    if (x >= (C)0)
      return (C)1 / ((C)1 + tk_exp(-x));
    else {
      C e = tk_exp(x);
      return e / ((C)1 + e);
    }
  case TK_U_TANH: return tk_tanh(x);
  case TK_U_HARD_SIGMOID: return tk_clamp01(p0 * x + p1);
  case TK_U_HARD_SWISH: return x * tk_clamp01(x / (C)6 + (C)0.5);
  case TK_U_SILU: return x / ((C)1 + tk_exp(-x));
  case TK_U_MISH: return tk_mish(x);
  case TK_U_GELU: return (C)0.5 * x * tk_one_plus_erf(x / tk_sqrt((C)2));
  case TK_U_GELU_TANH: {
    const C k = (C)0.7978845608028654; // sqrt(2 / pi)
    return (C)0.5 * x * ((C)1 + tk_tanh(k * (x + (C)0.044715 * x * x * x)));
  }
  case TK_U_CLIP: {
    if (tk_isnan(x))
      return x;
    C v = x < p0 ? p0 : x;  // std::max(x, lo)
    return p1 < v ? p1 : v; // std::min(v, hi)
  }
  case TK_U_SQRT: return tk_sqrt(x);
  case TK_U_EXP: return tk_exp(x);
  case TK_U_LOG: return tk_log(x);
  case TK_U_ERF: return tk_erf(x);
  case TK_U_FLOOR: return tk_floor(x);
  case TK_U_CEIL: return tk_ceil(x);
  case TK_U_ROUND: return tk_nearbyint(x); // the default mode: ties to even
  case TK_U_RECIPROCAL: return (C)1 / x;
  case TK_U_SIGN: return tk_isnan(x) ? x : x > (C)0 ? (C)1 : x < (C)0 ? (C)-1 : (C)0;
  case TK_U_SIN: return tk_sin(x);
  case TK_U_COS: return tk_cos(x);
  case TK_U_TAN: return tk_tan(x);
  case TK_U_ASIN: return tk_asin(x);
  case TK_U_ACOS: return tk_acos(x);
  case TK_U_ATAN: return tk_atan(x);
  case TK_U_SINH: return tk_sinh(x);
  case TK_U_COSH: return tk_cosh(x);
  case TK_U_ASINH: return tk_asinh(x);
  case TK_U_ACOSH: return tk_acosh(x);
  case TK_U_ATANH: return tk_atanh(x);
  case TK_U_LOGICAL_NOT: return x == (C)0 ? (C)1 : (C)0;
  default: return x;
  }
}

// Integers (and bool) other than u64, in int64; lo/hi are clip's bounds.
TK_ALWAYS_INLINE int64_t tk_unary_int(int64_t op, int64_t x, int64_t lo, int64_t hi) {
  switch (op) {
  case TK_U_ABS: return x < 0 ? tk_wneg(x) : x;
  case TK_U_NEG: return tk_wneg(x);
  case TK_U_RELU: return x < 0 ? 0 : x;
  case TK_U_SIGN: return (int64_t)(x > 0) - (int64_t)(x < 0);
  case TK_U_CLIP: {
    int64_t v = x < lo ? lo : x;
    return hi < v ? hi : v;
  }
  case TK_U_LOGICAL_NOT: return x == 0;
  default: return x;
  }
}

TK_ALWAYS_INLINE uint64_t tk_unary_u64(int64_t op, uint64_t x, uint64_t lo, uint64_t hi) {
  switch (op) {
  case TK_U_SIGN: return x != 0;
  case TK_U_CLIP: {
    uint64_t v = x < lo ? lo : x;
    return hi < v ? hi : v;
  }
  case TK_U_NEG: return 0 - x;
  case TK_U_LOGICAL_NOT: return x == 0;
  default: return x; // abs, relu
  }
}

// The op is a template parameter: each (dtype, op) gets its own loop, in
// which the op's switch folds, so that the loop vectorises even where the
// op code cannot be propagated into the body (it runs behind
// tk_parallel_for's function pointer).
template <class T, int op> struct UnaryBody {
  using E = tk_elem<T>;
  using S = typename E::S;
  const S *x;
  void *out;
  int64_t i1, i2;
  double f0, f1;

  void operator()(int64_t begin, int64_t end) const {
    if constexpr (tk_is_float<T>) {
      using C = typename E::C;
      if constexpr (op == TK_U_ISNAN || op == TK_U_ISINF) {
        uint8_t *o = (uint8_t *)out;
        const C inf = (C)INFINITY;
        for (int64_t i = begin; i < end; ++i) {
          C v = E::load(x, i);
          o[i] = op == TK_U_ISNAN ? tk_isnan(v) : ((i1 && v == inf) || (i2 && v == -inf));
        }
      } else {
        S *o = (S *)out;
        const C p0 = (C)f0, p1 = (C)f1;
        for (int64_t i = begin; i < end; ++i)
          E::store(o, i, tk_unary_float<C>(op, E::load(x, i), p0, p1));
      }
    } else if constexpr (tk_same<T, uint64_t>::value) {
      S *o = (S *)out;
      for (int64_t i = begin; i < end; ++i)
        o[i] = tk_unary_u64(op, x[i], (uint64_t)i1, (uint64_t)i2);
    } else {
      S *o = (S *)out;
      for (int64_t i = begin; i < end; ++i)
        E::store(o, i, (typename E::C)tk_unary_int(op, (int64_t)E::load(x, i), i1, i2));
    }
  }
};

//===----------------------------------------------------------------------===//
// binary / compare
//===----------------------------------------------------------------------===//

template <class C> TK_ALWAYS_INLINE C tk_binary_float(int64_t op, C a, C b) {
  switch (op) {
  case TK_B_ADD: return a + b;
  case TK_B_SUB: return a - b;
  case TK_B_MUL: return a * b;
  case TK_B_DIV: return a / b;
  case TK_B_POW: return tk_pow(a, b);
  // numpy maximum/minimum: NaN in either operand gives NaN.
  case TK_B_MAX: return tk_isnan(a) || tk_isnan(b) ? (C)NAN : a < b ? b : a;
  case TK_B_MIN: return tk_isnan(a) || tk_isnan(b) ? (C)NAN : b < a ? b : a;
  case TK_B_MOD: {
    C r = tk_fmod(a, b);
    if (r != (C)0 && ((r < (C)0) != (b < (C)0)))
      r += b;
    else if (r == (C)0)
      r = tk_copysign((C)0, b);
    return r;
  }
  case TK_B_FMOD: return tk_fmod(a, b);
  default: return a;
  }
}

// Integers other than u64 in int64; `err` is set for a division (or
// modulo) by zero and zero to a negative power. `bits` is the dtype's width.
TK_ALWAYS_INLINE int64_t tk_binary_int(int64_t op, int64_t a, int64_t b, int64_t bits,
                                       int32_t &err) {
  switch (op) {
  case TK_B_ADD: return tk_wadd(a, b);
  case TK_B_SUB: return tk_wsub(a, b);
  case TK_B_MUL: return tk_wmul(a, b);
  case TK_B_DIV:
    if (b == 0) {
      err = 1;
      return 0;
    }
    return b == -1 ? tk_wneg(a) : a / b; // INT64_MIN / -1 would overflow
  case TK_B_POW: {
    if (b < 0) {
      if (a == 0)
        err = 1;
      return a == 1 ? 1 : a == -1 ? ((b % 2 == 0) ? 1 : -1) : 0;
    }
    int64_t result = 1, base = a;
    for (uint64_t e = (uint64_t)b; e; e >>= 1) {
      if (e & 1)
        result = tk_wmul(result, base);
      base = tk_wmul(base, base);
    }
    return result;
  }
  case TK_B_MAX: return a < b ? b : a;
  case TK_B_MIN: return b < a ? b : a;
  case TK_B_MOD:
  case TK_B_FMOD: {
    if (b == 0) {
      err = 1;
      return 0;
    }
    if (b == -1)
      return 0;
    int64_t r = a % b;
    if (op == TK_B_MOD && r != 0 && ((r < 0) != (b < 0)))
      r += b;
    return r;
  }
  case TK_B_SHL:
  case TK_B_SHR: {
    uint64_t x = (uint64_t)a, n = (uint64_t)b;
    return n >= (uint64_t)bits ? 0 : (int64_t)(op == TK_B_SHL ? x << n : x >> n);
  }
  default: return a;
  }
}

TK_ALWAYS_INLINE uint64_t tk_binary_u64(int64_t op, uint64_t a, uint64_t b, int32_t &err) {
  switch (op) {
  case TK_B_ADD: return a + b;
  case TK_B_SUB: return a - b;
  case TK_B_MUL: return a * b;
  case TK_B_DIV:
    if (b == 0) {
      err = 1;
      return 0;
    }
    return a / b;
  case TK_B_POW: {
    uint64_t result = 1, base = a;
    for (uint64_t e = b; e; e >>= 1) {
      if (e & 1)
        result *= base;
      base *= base;
    }
    return result;
  }
  case TK_B_MAX: return a < b ? b : a;
  case TK_B_MIN: return b < a ? b : a;
  case TK_B_MOD:
  case TK_B_FMOD:
    if (b == 0) {
      err = 1;
      return 0;
    }
    return a % b;
  case TK_B_SHL: return b >= 64 ? 0 : a << b;
  case TK_B_SHR: return b >= 64 ? 0 : a >> b;
  default: return a;
  }
}

template <class V> TK_ALWAYS_INLINE bool tk_compare(int64_t op, V a, V b) {
  switch (op) {
  case TK_C_EQ: return a == b;
  case TK_C_LT: return a < b;
  case TK_C_GT: return a > b;
  case TK_C_LE: return a <= b;
  case TK_C_GE: return a >= b;
  case TK_C_AND: return a != (V)0 && b != (V)0;
  case TK_C_OR: return a != (V)0 || b != (V)0;
  case TK_C_XOR: return (a != (V)0) != (b != (V)0);
  default: return false;
  }
}

// One run of a broadcast binary loop: out[i] = f(a[i * sa], b[i * sb]) for
// i < n, with the contiguous and scalar cases spelled out for the
// vectoriser.
template <class F> static inline void tk_run2(int64_t n, int64_t sa, int64_t sb, F &&f) {
  if (sa == 1 && sb == 1) {
    for (int64_t i = 0; i < n; ++i)
      f(i, i, i);
  } else if (sa == 1 && sb == 0) {
    for (int64_t i = 0; i < n; ++i)
      f(i, i, 0);
  } else if (sa == 0 && sb == 1) {
    for (int64_t i = 0; i < n; ++i)
      f(i, 0, i);
  } else {
    for (int64_t i = 0; i < n; ++i)
      f(i, i * sa, i * sb);
  }
}

// Computes `out` from two broadcast inputs; Compare selects the bool-result
// ops.
template <class T, bool Compare, int op> struct BinaryBody {
  using E = tk_elem<T>;
  using S = typename E::S;
  using C = typename E::C;
  tk_walk<2> w;
  const S *a, *b;
  void *out;
  int64_t bits;
  int32_t *error;

  void operator()(int64_t begin, int64_t end) const {
    int32_t err = 0;
    tk_walk_range(w, begin, end, [&](int64_t o, const int64_t *src, int64_t n, const int64_t *st) {
      const S *pa = a + src[0], *pb = b + src[1];
      if constexpr (Compare) {
        uint8_t *po = (uint8_t *)out + o;
        tk_run2(n, st[0], st[1], [&](int64_t i, int64_t ia, int64_t ib) {
          if constexpr (tk_is_float<T> || tk_same<T, uint64_t>::value)
            po[i] = tk_compare<C>(op, E::load(pa, ia), E::load(pb, ib));
          else
            po[i] = tk_compare<int64_t>(op, (int64_t)E::load(pa, ia), (int64_t)E::load(pb, ib));
        });
      } else {
        S *po = (S *)out + o;
        tk_run2(n, st[0], st[1], [&](int64_t i, int64_t ia, int64_t ib) {
          if constexpr (tk_is_float<T>)
            E::store(po, i, tk_binary_float<C>(op, E::load(pa, ia), E::load(pb, ib)));
          else if constexpr (tk_same<T, uint64_t>::value)
            po[i] = tk_binary_u64(op, pa[ia], pb[ib], err);
          else
            E::store(po, i,
                     (C)tk_binary_int(op, (int64_t)E::load(pa, ia), (int64_t)E::load(pb, ib), bits,
                                      err));
        });
      }
    });
    if (err)
      tk_set_error(error, TESSERA_HOST_ERR_INVALID);
  }
};

// Which (dtype, op) pairs the relations accept, so that only those get a
// loop: integer unary ops, float-only ops, unsigned-only shifts, logical
// ops on bool.
template <class T> static constexpr bool tk_unary_accepts(int op) {
  if constexpr (tk_is_float<T>)
    return op != TK_U_LOGICAL_NOT;
  else if constexpr (tk_same<T, tk_bool_t>::value)
    return op == TK_U_LOGICAL_NOT;
  else
    return op == TK_U_ABS || op == TK_U_NEG || op == TK_U_RELU || op == TK_U_SIGN ||
           op == TK_U_CLIP;
}
template <class T, bool Compare> static constexpr bool tk_binary_accepts(int op) {
  if constexpr (Compare) {
    if constexpr (tk_same<T, tk_bool_t>::value)
      return op == TK_C_EQ || op == TK_C_AND || op == TK_C_OR || op == TK_C_XOR;
    else
      return op == TK_C_EQ || op == TK_C_LT || op == TK_C_GT || op == TK_C_LE || op == TK_C_GE;
  } else {
    if constexpr (tk_same<T, tk_bool_t>::value)
      return false;
    else if constexpr (tk_is_float<T>)
      return op != TK_B_SHL && op != TK_B_SHR;
    else
      return true;
  }
}

template <bool Compare>
TK_ALWAYS_INLINE int32_t tk_binary_kernel(const tk_args *a, const tessera_host_ctx_t *ctx) {
  tk_walk<2> w;
  tk_read_walk(a->ia + 1, w);
  int64_t n = tk_walk_numel(w.rank, w.shape);
  int32_t error = TESSERA_HOST_OK;
  int32_t rc = tk_dispatch(a->in[0].dtype, [&](auto tag) TK_INLINE_LAMBDA -> int32_t {
    using T = decltype(tag);
    using S = typename tk_elem<T>::S;
    constexpr int kOps = Compare ? (int)TK_C_COUNT : (int)TK_B_COUNT;
    return tk_dispatch_op<kOps>(a->ia[0], [&](auto opc) TK_INLINE_LAMBDA -> int32_t {
      constexpr int op = decltype(opc)::value;
      if constexpr (!tk_binary_accepts<T, Compare>(op)) {
        return TESSERA_HOST_ERR_INTERNAL;
      } else {
        BinaryBody<T, Compare, op> body{w,
                                        (const S *)a->in[0].data,
                                        (const S *)a->in[1].data,
                                        a->out[0].data,
                                        8 * (int64_t)sizeof(S),
                                        &error};
        tk_parallel_elems(ctx, n, TK_CHUNK, body);
        return TESSERA_HOST_OK;
      }
    });
  });
  return rc != TESSERA_HOST_OK ? rc : tk_get_error(&error);
}

} // namespace

// unary: ia = [op, i1, i2], fa = [f0, f1] (see tensor_ops.h per op).
TK_KERNEL(unary) {
  int64_t n = tk_numel(a->in[0]);
  return tk_dispatch(a->in[0].dtype, [&](auto tag) TK_INLINE_LAMBDA -> int32_t {
    using T = decltype(tag);
    return tk_dispatch_op<TK_U_COUNT>(a->ia[0], [&](auto opc) TK_INLINE_LAMBDA -> int32_t {
      constexpr int op = decltype(opc)::value;
      if constexpr (!tk_unary_accepts<T>(op)) {
        return TESSERA_HOST_ERR_INTERNAL;
      } else {
        UnaryBody<T, op> body{(const typename tk_elem<T>::S *)a->in[0].data,
                              a->out[0].data,
                              a->nia > 1 ? a->ia[1] : 0,
                              a->nia > 2 ? a->ia[2] : 0,
                              a->nfa > 0 ? a->fa[0] : 0.0,
                              a->nfa > 1 ? a->fa[1] : 0.0};
        tk_parallel_elems(ctx, n, TK_CHUNK, body);
        return TESSERA_HOST_OK;
      }
    });
  });
}

// binary / compare: ia = [op, rank, shape[rank], strides_a[rank], strides_b[rank]].
TK_KERNEL(binary) {
  return tk_binary_kernel<false>(a, ctx);
}
TK_KERNEL(compare) {
  return tk_binary_kernel<true>(a, ctx);
}
