//===- codegen/kernels/fast_math.h - Vectorisable float exp, tanh, erf -*- C++ -*-===//
//
// expf, tanhf, erff, erfcf and mish without a libm call, for the activations that
// real exports are made of (sigmoid, SiLU, GELU, tanh): a call to libm's
// expf cannot be vectorised, and was 15% of EfficientNet-B0's host time.
// Branch-free (selects only), so that a loop of them vectorises. Float
// only; double keeps libm.
//
// Accuracy against double-precision libm, checked over every 101st float of
// [-110, 110] by tests/unit/fast_math_test.cpp (worst seen, with and
// without FMA contraction, in parentheses):
//   tk_fast_expf    within 2 ulp (1.0), results below FLT_MIN rounded once;
//   tk_fast_tanhf   within 2 ulp (1.3);
//   tk_fast_erfcf   relative error below 1e-5 (7.6e-6, at x = 8.3 where
//                   erfc is 1e-31: e^-x^2 of a rounded argument);
//   tk_fast_erff    relative error below 1e-6 (3.1e-7);
//   tk_fast_mishf   within 5 ulp (4.1) where e^x is a normal float (x > -87.3;
//                   below, x e^x keeps a denormal's precision).
// NaN propagates; +-inf give the limits.
//
// The host code's fused loops (codegen/elementwise.cpp) call the extern "C"
// wrappers tk_math_* (defined in kernels/elementwise.cpp), linked from the
// kernel library's bitcode and inlined like every kernel.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_CODEGEN_KERNELS_FAST_MATH_H
#define TESSERA_CODEGEN_KERNELS_FAST_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

namespace tk_fast {

/// 2^n for an integer n in [-126, 127], by its exponent bits.
static inline float pow2i(int32_t n) {
  int32_t bits = (n + 127) << 23;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

} // namespace tk_fast

/// e^x: x = n ln2 + r (Cody-Waite, |r| <= ln2 / 2), e^r by Cephes expf's
/// degree-6 polynomial, times 2^n applied as two factors so that n may run
/// from -150 (denormal results, rounded once) to 128 (overflow to inf).
static inline float tk_fast_expf(float x) {
  float xc = x < -104.0f ? -104.0f : x > 88.8f ? 88.8f : x;
  float n = floorf(xc * 1.44269504088896341f + 0.5f);
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  int32_t ni = (int32_t)n, half = ni >> 1;
  float y = p * tk_fast::pow2i(half) * tk_fast::pow2i(ni - half);
  return x != x ? x : y;
}

/// tanh x: Cephes tanhf's odd polynomial below |x| = 0.625, else
/// 1 - 2 / (e^2|x| + 1) with the sign of x.
static inline float tk_fast_tanhf(float x) {
  float ax = fabsf(x), z = x * x;
  float small = -5.70498872745e-3f;
  small = small * z + 2.06390887954e-2f;
  small = small * z - 5.37397155531e-2f;
  small = small * z + 1.33314422036e-1f;
  small = small * z - 3.33332819422e-1f;
  small = copysignf(small * z * ax + ax, x); // keeps -0
  float big = copysignf(1.0f - 2.0f / (tk_fast_expf(2.0f * ax) + 1.0f), x);
  return ax < 0.625f ? small : big; // NaN: big, which is NaN
}

/// erfc x: Numerical Recipes' Chebyshev fit (fractional error below 1.2e-7
/// in exact arithmetic) of t e^(-x^2 + P(t)), t = 1 / (1 + |x| / 2), and
/// 2 - erfc(|x|) below 0. Relative accuracy holds far into the tail, where
/// 1 - erf(x) would cancel: GELU's 1 + erf(u) is erfc(-u).
static inline float tk_fast_erfcf(float x) {
  float ax = fabsf(x);
  float t = 1.0f / (1.0f + 0.5f * ax);
  float p = 0.17087277f;
  p = p * t - 0.82215223f;
  p = p * t + 1.48851587f;
  p = p * t - 1.13520398f;
  p = p * t + 0.27886807f;
  p = p * t - 0.18628806f;
  p = p * t + 0.09678418f;
  p = p * t + 0.37409196f;
  p = p * t + 1.00002368f;
  p = p * t - 1.26551223f;
  float e = t * tk_fast_expf(p - ax * ax);
  return x < 0.0f ? 2.0f - e : e; // NaN: e, which is NaN
}

/// mish x = x tanh(log(1 + e^x)) = x n / (n + 2) with n = e^x (e^x + 2):
/// one exp, no log; e^x saturates at x = 20, where n / (n + 2) is 1 in float.
static inline float tk_fast_mishf(float x) {
  float e = tk_fast_expf(x > 20.0f ? 20.0f : x); // NaN stays NaN
  float n = e * (e + 2.0f);
  return x * (n / (n + 2.0f));
}

/// erf x: its Maclaurin series to x^13 below |x| = 0.5 (truncation below
/// 2e-8 relative), else 1 - erfc(|x|) with the sign of x.
static inline float tk_fast_erff(float x) {
  float z = x * x;
  float s = 1.0f / 9360.0f;
  s = s * z - 1.0f / 1320.0f;
  s = s * z + 1.0f / 216.0f;
  s = s * z - 1.0f / 42.0f;
  s = s * z + 1.0f / 10.0f;
  s = s * z - 1.0f / 3.0f;
  s = s * z + 1.0f;
  float small = 1.12837916709551257f * x * s; // 2 / sqrt(pi)
  float big = copysignf(1.0f - tk_fast_erfcf(fabsf(x)), x);
  return fabsf(x) < 0.5f ? small : big; // NaN: big, which is NaN
}

#endif // TESSERA_CODEGEN_KERNELS_FAST_MATH_H
