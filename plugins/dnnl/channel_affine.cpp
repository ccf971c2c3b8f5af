//===- plugins/dnnl/channel_affine.cpp - Per-channel x * s + t, channels last ===//
//
// See channel_affine.h. A task is a range of pixels; in each, the channels
// go 16 lanes a vector op, then 8, then one.
//
//===----------------------------------------------------------------------===//
#include "channel_affine.h"

#include <cstring>

#include <omp.h>

namespace tessera::dnnl_plugin {

namespace {

template <typename Lanes>
__attribute__((always_inline)) inline void affineLanes(const float *x, float *y, const float *s,
                                                       const float *t, bool relu) {
  Lanes v, a, b;
  std::memcpy(&v, x, sizeof v);
  std::memcpy(&a, s, sizeof a);
  std::memcpy(&b, t, sizeof b);
  v = v * a + b;
  if (relu) {
    const Lanes zero = v - v; // (NaN stays NaN: v < 0 is false)
    v = v < zero ? zero : v;
  }
  std::memcpy(y, &v, sizeof v);
}
typedef float Lanes16 __attribute__((vector_size(16 * sizeof(float))));
typedef float Lanes8 __attribute__((vector_size(8 * sizeof(float))));

__attribute__((target_clones("avx512f", "avx2", "default"))) void
affinePixels(const float *x, float *y, const float *s, const float *t, int64_t begin, int64_t end,
             int64_t C, bool relu) {
  for (int64_t p = begin; p < end; ++p) {
    const float *xp = x + p * C;
    float *yp = y + p * C;
    int64_t c = 0;
    for (; c + 16 <= C; c += 16)
      affineLanes<Lanes16>(xp + c, yp + c, s + c, t + c, relu);
    for (; c + 8 <= C; c += 8)
      affineLanes<Lanes8>(xp + c, yp + c, s + c, t + c, relu);
    for (; c < C; ++c) {
      float v = xp[c] * s[c] + t[c];
      yp[c] = relu && v < 0.0f ? 0.0f : v;
    }
  }
}

} // namespace

void channelAffine(const float *x, float *y, const float *scale, const float *shift,
                   int64_t pixels, int64_t C, bool relu) {
  // Small steps are not worth waking other threads for (kSerialBytes' 8K
  // floats, as for oneDNN's elementwise steps).
  if (pixels * C < (int64_t(1) << 13) || omp_get_max_threads() == 1) {
    affinePixels(x, y, scale, shift, 0, pixels, C, relu);
    return;
  }
#pragma omp parallel
  {
    const int64_t threads = omp_get_num_threads(), me = omp_get_thread_num();
    affinePixels(x, y, scale, shift, pixels * me / threads, pixels * (me + 1) / threads, C, relu);
  }
}

} // namespace tessera::dnnl_plugin
