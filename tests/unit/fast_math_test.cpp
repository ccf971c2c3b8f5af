// The host kernels' vectorisable float exp, tanh, erf and erfc
// (codegen/kernels/fast_math.h) against double-precision libm: the error
// bounds the header states, over a dense sample of [-110, 110] and the
// special values.
#include "codegen/kernels/fast_math.h"

#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace {

/// Every 101st float of [-110, 110] by bit pattern (about 2 x 10^9 / 101),
/// plus the small magnitudes down to 2^-30.
std::vector<float> samples() {
  std::vector<float> xs;
  auto addRange = [&](float from, float to) { // 0 <= from < to, both signs
    uint32_t lo, hi;
    std::memcpy(&lo, &from, 4);
    std::memcpy(&hi, &to, 4);
    for (uint32_t b = lo; b <= hi; b += 101) {
      float x;
      std::memcpy(&x, &b, 4);
      xs.push_back(x);
      xs.push_back(-x);
    }
  };
  addRange(std::ldexp(1.0f, -30), 110.0f);
  return xs;
}

/// |got - want| in units of the last place of want rounded to float.
double ulps(float got, double want) {
  float w = float(want);
  if (std::isinf(w))
    return std::isinf(got) && std::signbit(got) == std::signbit(w) ? 0 : 1e30;
  double spacing = std::nextafter(std::fabs(w), INFINITY) - std::fabs(w);
  if (std::fabs(w) < FLT_MIN)
    spacing = std::ldexp(1.0, -149); // denormal results: absolute
  return std::fabs(double(got) - want) / spacing;
}

double relative(float got, double want) {
  return want == 0 ? std::fabs(got) : std::fabs((double(got) - want) / want);
}

/// The largest error(x) over the samples, and where.
struct Worst {
  double error = 0;
  float at = 0;
};
template <typename Error> Worst worstOver(Error error) {
  Worst w;
  for (float x : samples()) {
    double e = error(x);
    if (e > w.error)
      w = {e, x};
  }
  return w;
}

} // namespace

TEST_CASE("fast expf is within 2 ulp of exp", "[host-kernels][fast-math]") {
  Worst w = worstOver([](float x) { return ulps(tk_fast_expf(x), std::exp(double(x))); });
  INFO("worst " << w.error << " ulp at x = " << w.at);
  CHECK(w.error <= 2.0);
  CHECK(tk_fast_expf(0.0f) == 1.0f);
  CHECK(std::isinf(tk_fast_expf(89.0f)));
  CHECK(tk_fast_expf(88.72f) < FLT_MAX);
  CHECK(tk_fast_expf(-120.0f) == 0.0f);
  CHECK(std::isinf(tk_fast_expf(INFINITY)));
  CHECK(tk_fast_expf(-INFINITY) == 0.0f);
  CHECK(std::isnan(tk_fast_expf(NAN)));
}

TEST_CASE("fast tanhf is within 2 ulp of tanh", "[host-kernels][fast-math]") {
  Worst w = worstOver([](float x) { return ulps(tk_fast_tanhf(x), std::tanh(double(x))); });
  INFO("worst " << w.error << " ulp at x = " << w.at);
  CHECK(w.error <= 2.0);
  CHECK(tk_fast_tanhf(INFINITY) == 1.0f);
  CHECK(tk_fast_tanhf(-INFINITY) == -1.0f);
  CHECK(std::isnan(tk_fast_tanhf(NAN)));
  CHECK(std::signbit(tk_fast_tanhf(-0.0f)));
}

TEST_CASE("fast erfcf is relatively accurate into the tail", "[host-kernels][fast-math]") {
  Worst w = worstOver([](float x) {
    double want = std::erfc(double(x));
    return want < FLT_MIN ? 0.0 : relative(tk_fast_erfcf(x), want); // denormal or 0: skipped
  });
  INFO("worst relative error " << w.error << " at x = " << w.at);
  CHECK(w.error < 1e-5);
  CHECK(tk_fast_erfcf(INFINITY) == 0.0f);
  CHECK(tk_fast_erfcf(-INFINITY) == 2.0f);
  CHECK(std::isnan(tk_fast_erfcf(NAN)));
}

TEST_CASE("fast mish is within 5 ulp of x tanh(log1p(exp x))", "[host-kernels][fast-math]") {
  // Below x = -87.3, e^x is a denormal float and so is the result's precision
  // (an absolute error below 1e-38): skipped.
  Worst w = worstOver([](float x) {
    double want = double(x) * std::tanh(std::log1p(std::exp(double(x))));
    return std::exp(double(x)) < FLT_MIN ? 0.0 : ulps(tk_fast_mishf(x), want);
  });
  INFO("worst " << w.error << " ulp at x = " << w.at);
  CHECK(w.error <= 5.0);
  CHECK(tk_fast_mishf(0.0f) == 0.0f);
  CHECK(tk_fast_mishf(INFINITY) == INFINITY);
  CHECK(tk_fast_mishf(1e30f) == 1e30f);
  CHECK(std::isnan(tk_fast_mishf(NAN)));
}

TEST_CASE("fast erff is relatively accurate", "[host-kernels][fast-math]") {
  Worst w = worstOver([](float x) { return relative(tk_fast_erff(x), std::erf(double(x))); });
  INFO("worst relative error " << w.error << " at x = " << w.at);
  CHECK(w.error < 1e-6);
  CHECK(tk_fast_erff(0.0f) == 0.0f);
  CHECK(tk_fast_erff(INFINITY) == 1.0f);
  CHECK(tk_fast_erff(-INFINITY) == -1.0f);
  CHECK(std::isnan(tk_fast_erff(NAN)));
}
