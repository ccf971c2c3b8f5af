//===- plugins/dnnl/max_pool.cpp - The plugin's own 2-D max pooling -------===//
//
// See max_pool.h. One task is one output row of one channel block; its
// windows' tap ranges are clipped to the input once per row (rows) and once
// per column (columns), so the inner loops carry no bounds checks.
//
//===----------------------------------------------------------------------===//
#include "max_pool.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include <omp.h>

namespace tessera::dnnl_plugin {

namespace {

/// The taps k in [0, K) of a window starting at `start` (stride-scaled
/// output position minus the padding) with `step` between taps whose
/// position start + k * step is inside [0, size).
struct Taps {
  int64_t first = 0, end = 0;
};
Taps tapsInside(int64_t start, int64_t K, int64_t step, int64_t size) {
  Taps t;
  t.first = start < 0 ? (-start + step - 1) / step : 0;
  const int64_t last = size - 1 - start; // the largest offset still inside
  t.end = last < 0 ? 0 : std::min(K, last / step + 1);
  if (t.end < t.first)
    t.end = t.first;
  return t;
}

/// One output row of one channel block: `x` is the block's [H, W, B]
/// plane, `y` the row's [OW, B]. B > 0: a compile-time lane count (one
/// vector op per tap); B == 0: `lanes` at run time.
template <int B>
__attribute__((always_inline)) inline void poolRow(const float *__restrict x, float *__restrict y,
                                                   int64_t oh, const MaxPoolShape &s,
                                                   const Taps *columns, int64_t lanes) {
  const int64_t L = B > 0 ? B : lanes;
  const sdk::Window2d &win = s.window;
  const int64_t h0 = oh * win.s[0] - win.p0[0];
  const Taps rows = tapsInside(h0, win.k[0], win.d[0], s.H);
  for (int64_t ow = 0; ow < s.OW; ++ow) {
    float *__restrict out = y + ow * L;
    const int64_t w0 = ow * win.s[1] - win.p0[1];
    const Taps cols = columns[ow];
    if (rows.first == rows.end || cols.first == cols.end) {
      std::memset(out, 0, size_t(L) * sizeof(float)); // no input element: 0
      continue;
    }
    const float *first = x + ((h0 + rows.first * win.d[0]) * s.W + w0 + cols.first * win.d[1]) * L;
    if constexpr (B > 0) {
      // The block in registers (GCC's vector extension: one or two AVX2
      // vectors, SSE2 pairs in the default clone): one max per tap.
      typedef float Block __attribute__((vector_size(B * sizeof(float))));
      Block m, p;
      std::memcpy(&m, first, sizeof m);
      const int64_t rowStep = win.d[0] * s.W * B, tapStep = win.d[1] * B;
      const int64_t taps = cols.end - cols.first;
      const float *row = first;
      for (int64_t kh = rows.first; kh < rows.end; ++kh, row += rowStep) {
        const float *tap = row;
        for (int64_t kw = 0; kw < taps; ++kw, tap += tapStep) {
          std::memcpy(&p, tap, sizeof p);
          m = p > m ? p : m;
        }
      }
      std::memcpy(out, &m, sizeof m);
    } else {
      for (int64_t l = 0; l < L; ++l)
        out[l] = first[l];
      for (int64_t kh = rows.first; kh < rows.end; ++kh) {
        const float *row = x + (h0 + kh * win.d[0]) * s.W * L;
        for (int64_t kw = cols.first; kw < cols.end; ++kw) {
          const float *p = row + (w0 + kw * win.d[1]) * L;
          for (int64_t l = 0; l < L; ++l)
            out[l] = p[l] > out[l] ? p[l] : out[l];
        }
      }
    }
  }
}

/// Tasks [begin, end): task t is output row t % OH of channel block t / OH.
/// `columns`: each output column's taps inside the input.
template <int B>
__attribute__((always_inline)) inline void poolTasks(const float *x, float *y,
                                                     const MaxPoolShape &s, const Taps *columns,
                                                     int64_t begin, int64_t end) {
  const int64_t L = s.layout.block;
  const int64_t plane = s.H * s.W * L, outPlane = s.OH * s.OW * L;
  for (int64_t t = begin; t < end; ++t) {
    const int64_t b = t / s.OH, oh = t % s.OH;
    poolRow<B>(x + b * plane, y + b * outPlane + oh * s.OW * L, oh, s, columns, L);
  }
}

// AVX2 where the CPU has it (GCC's function multi-versioning picks the
// clone when the plugin is loaded); the baseline is SSE2.
using TasksFn = void (*)(const float *, float *, const MaxPoolShape &, const Taps *, int64_t,
                         int64_t);
__attribute__((target_clones("avx2", "default"))) void tasks8(const float *x, float *y,
                                                              const MaxPoolShape &s,
                                                              const Taps *columns, int64_t begin,
                                                              int64_t end) {
  poolTasks<8>(x, y, s, columns, begin, end);
}
__attribute__((target_clones("avx2", "default"))) void tasks16(const float *x, float *y,
                                                               const MaxPoolShape &s,
                                                               const Taps *columns, int64_t begin,
                                                               int64_t end) {
  poolTasks<16>(x, y, s, columns, begin, end);
}
__attribute__((target_clones("avx2", "default"))) void tasksAny(const float *x, float *y,
                                                                const MaxPoolShape &s,
                                                                const Taps *columns, int64_t begin,
                                                                int64_t end) {
  poolTasks<0>(x, y, s, columns, begin, end);
}

} // namespace

void maxPool2d(const float *x, float *y, const MaxPoolShape &s) {
  const TasksFn run = s.layout.block == 8 ? tasks8 : s.layout.block == 16 ? tasks16 : tasksAny;
  const int64_t tasks = s.N * s.layout.blocks * s.OH;
  // Small pools are not worth waking other threads for (kSerialBytes' 8K
  // floats of output, as for oneDNN's elementwise steps).
  const int64_t outputs = tasks * s.OW * s.layout.block;
  // Each column's taps, once (two divisions each).
  std::vector<Taps> columns(size_t(s.OW));
  for (int64_t ow = 0; ow < s.OW; ++ow)
    columns[size_t(ow)] =
        tapsInside(ow * s.window.s[1] - s.window.p0[1], s.window.k[1], s.window.d[1], s.W);
  if (outputs < (int64_t(1) << 13) || omp_get_max_threads() == 1) {
    run(x, y, s, columns.data(), 0, tasks);
    return;
  }
#pragma omp parallel
  {
    const int64_t threads = omp_get_num_threads(), me = omp_get_thread_num();
    run(x, y, s, columns.data(), tasks * me / threads, tasks * (me + 1) / threads);
  }
}

} // namespace tessera::dnnl_plugin
