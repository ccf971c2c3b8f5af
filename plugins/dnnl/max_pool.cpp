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

using Taps = sdk::TapRange;

/// The taps k in [0, K) of a window starting at `start` (stride-scaled
/// output position minus the padding) with `step` between taps whose
/// position start + k * step is inside [0, size).
Taps tapsInside(int64_t start, int64_t K, int64_t step, int64_t size) {
  return sdk::tapsInside(start, K, step, 0, size);
}

/// The maximum over a window's taps of a vector of `Lanes` from `first` (the first
/// tap inside the input) to `out`: `rows` rows of `taps` taps, `rowStep` and
/// `tapStep` floats apart. One vector op per tap (GCC's vector extension:
/// one zmm with AVX-512, two ymm with AVX2, SSE2 quads in the default clone).
template <typename Lanes>
__attribute__((always_inline)) inline void maxLanes(const float *first, float *out, int64_t rows,
                                                    int64_t taps, int64_t rowStep,
                                                    int64_t tapStep) {
  Lanes m, p;
  std::memcpy(&m, first, sizeof m);
  const float *row = first;
  for (int64_t r = 0; r < rows; ++r, row += rowStep) {
    const float *tap = row;
    for (int64_t k = 0; k < taps; ++k, tap += tapStep) {
      std::memcpy(&p, tap, sizeof p);
      m = p > m ? p : m;
    }
  }
  std::memcpy(out, &m, sizeof m);
}
typedef float Lanes16 __attribute__((vector_size(16 * sizeof(float))));
typedef float Lanes8 __attribute__((vector_size(8 * sizeof(float))));

/// One output row of one channel block: `x` is the block's [H, W, L] plane,
/// `y` the row's [OW, L]. The L lanes (8 or 16 in nChw8c/nChw16c, every
/// channel in NHWC, one in NCHW) go 16, then 8, then one at a time.
__attribute__((always_inline)) inline void poolRow(const float *__restrict x, float *__restrict y,
                                                   int64_t oh, const MaxPoolShape &s,
                                                   const Taps *columns, int64_t L) {
  const sdk::Window2d &win = s.window;
  const int64_t h0 = oh * win.s[0] - win.p0[0];
  const Taps rows = tapsInside(h0, win.k[0], win.d[0], s.H);
  const int64_t rowStep = win.d[0] * s.W * L, tapStep = win.d[1] * L;
  for (int64_t ow = 0; ow < s.OW; ++ow) {
    float *__restrict out = y + ow * L;
    const int64_t w0 = ow * win.s[1] - win.p0[1];
    const Taps cols = columns[ow];
    if (rows.first == rows.end || cols.first == cols.end) {
      std::memset(out, 0, size_t(L) * sizeof(float)); // no input element: 0
      continue;
    }
    const float *first = x + ((h0 + rows.first * win.d[0]) * s.W + w0 + cols.first * win.d[1]) * L;
    const int64_t nr = rows.end - rows.first, nt = cols.end - cols.first;
    int64_t l = 0;
    for (; l + 16 <= L; l += 16)
      maxLanes<Lanes16>(first + l, out + l, nr, nt, rowStep, tapStep);
    for (; l + 8 <= L; l += 8)
      maxLanes<Lanes8>(first + l, out + l, nr, nt, rowStep, tapStep);
    for (; l < L; ++l)
      maxLanes<float>(first + l, out + l, nr, nt, rowStep, tapStep);
  }
}

/// Tasks [begin, end): task t is output row t % OH of channel block t / OH.
/// `columns`: each output column's taps inside the input. AVX-512 or AVX2
/// where the CPU has it (GCC's function multi-versioning picks the clone
/// when the plugin is loaded); the baseline is SSE2.
__attribute__((target_clones("avx512f", "avx2", "default"))) void
poolTasks(const float *x, float *y, const MaxPoolShape &s, const Taps *columns, int64_t begin,
          int64_t end) {
  const int64_t L = s.layout.block;
  const int64_t plane = s.H * s.W * L, outPlane = s.OH * s.OW * L;
  for (int64_t t = begin; t < end; ++t) {
    const int64_t b = t / s.OH, oh = t % s.OH;
    poolRow(x + b * plane, y + b * outPlane + oh * s.OW * L, oh, s, columns, L);
  }
}

} // namespace

void maxPool2d(const float *x, float *y, const MaxPoolShape &s) {
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
    poolTasks(x, y, s, columns.data(), 0, tasks);
    return;
  }
#pragma omp parallel
  {
    const int64_t threads = omp_get_num_threads(), me = omp_get_thread_num();
    poolTasks(x, y, s, columns.data(), tasks * me / threads, tasks * (me + 1) / threads);
  }
}

} // namespace tessera::dnnl_plugin
