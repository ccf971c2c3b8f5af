//===- codegen/kernels/tk.h - The host kernel library's conventions -===//
//
// The host code generator's op kernels are written once, in plain C++ over
// raw pointers, and compiled at build time by clang-19 into LLVM bitcode
// that is embedded in the code generator. For a model, the code generator
// emits one small function per host step that calls the op's kernel with
// the step's shapes and attributes as constants, links the kernels' bitcode
// in, and lets LLVM inline and specialise them for those constants (loop
// bounds, strides, the dtype switch) and vectorise for the target CPU
// before it emits object code (docs/design/0007).
//
// The same sources are also compiled natively into the unit tests, which
// call the kernels directly and compare them with the reference interpreter.
//
// Rules for kernel sources (core/codegen/kernels/*.cpp):
//  - Only this header, <stdint.h>, <stddef.h>, <math.h> and <string.h>: no
//    C++ standard library, no exceptions, no RTTI, no static constructors,
//    no allocation (scratch space comes from the caller, see tk_args).
//  - Every kernel is   TK_KERNEL(name)   i.e.
//      extern "C" int32_t tk_<name>(const tk_args *a, const tessera_host_ctx_t *ctx)
//    and returns TESSERA_HOST_OK, or TESSERA_HOST_ERR_INVALID for data
//    that makes the op undefined at run time (an index out of range).
//  - Templates and static inline helpers are fine (one kernel per op, the
//    dtype chosen by a switch on tk_tensor::dtype, which folds away once the
//    dtype is a constant).
//  - Outer loops may be split with tk_parallel_for (below).
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_CODEGEN_KERNELS_TK_H
#define TESSERA_CODEGEN_KERNELS_TK_H

#include "runtime/host_abi.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

// Element types: the numeric values of tessera::ir::DType.
enum tk_dtype : int32_t {
  TK_F32 = 0,
  TK_F16 = 1,
  TK_BF16 = 2,
  TK_F64 = 3,
  TK_I8 = 4,
  TK_U8 = 5,
  TK_I32 = 6,
  TK_I64 = 7,
  TK_BOOL = 8, // one byte, 0 or 1
  TK_I16 = 9,
  TK_U16 = 10,
  TK_U32 = 11,
  TK_U64 = 12,
};

struct tk_tensor {
  void *data;
  const int64_t *shape;
  int32_t rank;
  int32_t dtype; // tk_dtype
};

// One call of a kernel. `ia` and `fa` are the op's attributes, flattened in
// the order the op's lowering (core/codegen/host_ops_*.cpp) documents next
// to the kernel. `scratch` is `scratch_bytes` of 64-byte aligned memory the
// lowering asked for (KernelCall::scratchBytes), or null.
struct tk_args {
  const tk_tensor *in;
  const tk_tensor *out;
  const int64_t *ia;
  const double *fa;
  void *scratch;
  int32_t nin, nout, nia, nfa;
};

#define TK_KERNEL(name)                                                                            \
  extern "C" int32_t tk_##name(const tk_args *a, const tessera_host_ctx_t *ctx)

// Runs body(closure, begin, end) over [0, n) on the runtime's threads.
static inline void tk_parallel_for(const tessera_host_ctx_t *ctx, int64_t n,
                                   tessera_host_body_t body, void *closure) {
  if (n <= 0)
    return;
  if (!ctx || !ctx->parallel_for || ctx->num_threads <= 1 || n == 1)
    body(closure, 0, n);
  else
    ctx->parallel_for(ctx, n, body, closure);
}

static inline int64_t tk_numel(const tk_tensor &t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t.rank; ++i)
    n *= t.shape[i];
  return n;
}

// f16 / bf16 <-> f32 (round to nearest even), as tessera::ir does.
static inline float tk_half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else { // subnormal
      exp = 127 - 15 + 1;
      while (!(man & 0x400u)) {
        man <<= 1;
        --exp;
      }
      man &= 0x3ffu;
      bits = sign | (exp << 23) | (man << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (man << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

static inline uint16_t tk_float_to_half(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) // inf or NaN
    return (uint16_t)(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u));
  if (absx >= 0x477ff000u) // rounds to >= 65520: inf
    return (uint16_t)(sign | 0x7c00u);
  if (absx < 0x38800000u) { // subnormal or zero: scale the step 2^-24 to 1, round to even
    float af;
    memcpy(&af, &absx, 4);
    return (uint16_t)(sign | (uint32_t)nearbyintf(af * 16777216.0f));
  }
  uint32_t h = ((absx >> 13) - (112u << 10));
  uint32_t rem = absx & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
    ++h;
  return (uint16_t)(sign | h);
}

static inline float tk_bf16_to_float(uint16_t b) {
  uint32_t bits = (uint32_t)b << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

static inline uint16_t tk_float_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) // NaN stays a quiet NaN
    return (uint16_t)((x >> 16) | 0x40u);
  uint32_t lsb = (x >> 16) & 1u;
  return (uint16_t)((x + 0x7fffu + lsb) >> 16);
}


//===----------------------------------------------------------------------===//
// Element traits: the kernels' one set, per dtype
//===----------------------------------------------------------------------===//

// Tag types for the dtypes without a C++ type of their own.
struct tk_f16_t {};
struct tk_bf16_t {};
struct tk_bool_t {};

// tk_elem<Tag>: S = storage type, C = compute type, kind: 0 float, 1
// integer, 2 bool. load/store convert between them as tessera::ir::Tensor
// does (f16/bf16 round through float; a bool is stored as 0 or 1). Floats
// compute in float (f16, bf16, f32) or double (f64).
// Stored as computed: the integers, f32 and f64.
template <class T, int Kind> struct tk_elem_as_is {
  using S = T;
  using C = T;
  static constexpr int kind = Kind;
  static inline C load(const S *p, int64_t i) { return p[i]; }
  static inline void store(S *p, int64_t i, C v) { p[i] = v; }
};
template <class T> struct tk_elem : tk_elem_as_is<T, 1> {};
template <> struct tk_elem<float> : tk_elem_as_is<float, 0> {};
template <> struct tk_elem<double> : tk_elem_as_is<double, 0> {};
// 16-bit floats: stored as bits, computed in float. (Chosen by a flag, not
// by the conversions as template arguments: those have internal linkage,
// which a base class in a header may not name.)
template <bool BF16> struct tk_elem_half {
  using S = uint16_t;
  using C = float;
  static constexpr int kind = 0;
  static inline C load(const S *p, int64_t i) {
    return BF16 ? tk_bf16_to_float(p[i]) : tk_half_to_float(p[i]);
  }
  static inline void store(S *p, int64_t i, C v) {
    p[i] = BF16 ? tk_float_to_bf16(v) : tk_float_to_half(v);
  }
};
template <> struct tk_elem<tk_f16_t> : tk_elem_half<false> {};
template <> struct tk_elem<tk_bf16_t> : tk_elem_half<true> {};
template <> struct tk_elem<tk_bool_t> {
  using S = uint8_t;
  using C = uint8_t;
  static constexpr int kind = 2;
  static inline C load(const S *p, int64_t i) { return p[i] ? 1 : 0; }
  static inline void store(S *p, int64_t i, C v) { p[i] = v ? 1 : 0; }
};

// The tag of each dtype code, for code that is templated on the code
// (tk_elem<tk_tag_of<TK_F16>::type> is f16's traits).
template <int DT> struct tk_tag_of;
template <> struct tk_tag_of<TK_F32> { using type = float; };
template <> struct tk_tag_of<TK_F64> { using type = double; };
template <> struct tk_tag_of<TK_F16> { using type = tk_f16_t; };
template <> struct tk_tag_of<TK_BF16> { using type = tk_bf16_t; };
template <> struct tk_tag_of<TK_I8> { using type = int8_t; };
template <> struct tk_tag_of<TK_U8> { using type = uint8_t; };
template <> struct tk_tag_of<TK_I16> { using type = int16_t; };
template <> struct tk_tag_of<TK_U16> { using type = uint16_t; };
template <> struct tk_tag_of<TK_I32> { using type = int32_t; };
template <> struct tk_tag_of<TK_U32> { using type = uint32_t; };
template <> struct tk_tag_of<TK_I64> { using type = int64_t; };
template <> struct tk_tag_of<TK_U64> { using type = uint64_t; };
template <> struct tk_tag_of<TK_BOOL> { using type = tk_bool_t; };

#endif // TESSERA_CODEGEN_KERNELS_TK_H
