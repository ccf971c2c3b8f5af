//===- plugins/dnnl/channel_affine.h - Per-channel x * s + t, channels last -*- C++ -*-===//
//
// The per-channel affine step a batch_norm that did not fold into a
// convolution leaves (lowerAffine, lower_ops.cpp), with a relu after it, in
// the channels-last layout (NHWC) that brgconv picks on AVX-512 CPUs. There
// oneDNN 2.6's batch_normalization (bnorm_jit:avx512_core) streams about
// 20 GB/s against 40-45 over nChw16c (an AVX-512 Xeon, one thread, [1, C,
// H, W] from 64 x 56 x 56 to 992 x 7 x 7): DenseNet-121's 62 of them took
// 7 ms of 51. Here each pixel's C channels are one vector loop, 16 lanes,
// then 8, then one at a time (AVX-512 or AVX2 where the CPU has it).
//
// y = x * scale + shift, then relu as the reference interpreter's (max(x,
// 0): NaN passes through).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>

namespace tessera::dnnl_plugin {

/// y[p, c] = x[p, c] * scale[c] + shift[c] (relu'd when `relu`) for
/// `pixels` rows of C channels, over the calling thread's OpenMP threads.
void channelAffine(const float *x, float *y, const float *scale, const float *shift,
                   int64_t pixels, int64_t C, bool relu);

} // namespace tessera::dnnl_plugin
