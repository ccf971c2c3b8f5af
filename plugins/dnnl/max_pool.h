//===- plugins/dnnl/max_pool.h - The plugin's own 2-D max pooling -*- C++ -*-===//
//
// oneDNN 2.6's max pooling is slow on AVX2 machines: its jit:avx2 kernel
// took 0.67 ms for a 3x3 window over [1, 256, 28, 28] in nChw8c where its
// average pooling took 0.07 ms and a plain loop of vector maxima 0.13 ms
// (AMD EPYC, one thread, 2026-12-07); GoogLeNet's eleven max pools cost
// 4.4 ms in oneDNN against ONNX Runtime's 1.0 ms. And over plain NCHW
// (simple_nchw) it took 10 ms. So the plugin runs max pooling itself, in the
// layout its input has: each (batch, channel block, output row) is a task
// over the calling thread's OpenMP threads; the window's taps inside the
// input are maxed 16 channels at a time, then 8, then one (one vector op
// per tap: AVX-512 or AVX2 where the CPU has it). NHWC, which brgconv picks
// on AVX-512 CPUs, is one block of C lanes: a scalar loop over them made
// GoogLeNet's max pools 12 ms of 31 on a Zen 4, 0.9 ms now.
//
// Semantics are the reference interpreter's (core/ir/ops/nn_pool.cpp):
// padded positions never win, a window holding no input element gives 0,
// and a NaN taken first sticks (x > m ? x : m).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tessera/sdk/op_helpers.hpp"

#include <cstdint>

namespace tessera::dnnl_plugin {

/// Where the element (n, c, h, w) of a 4-D tensor is: channels in blocks of
/// `block` lanes (the last one padded), ((n * blocks + c / block) * H + h) *
/// W + w) * block + c % block. nChw8c is block 8, nChw16c 16, NCHW 1 (blocks
/// = C) and NHWC C (blocks = 1).
struct ChannelBlocks {
  int64_t block = 1, blocks = 1;
};

struct MaxPoolShape {
  int64_t N = 1, H = 1, W = 1, OH = 1, OW = 1;
  ChannelBlocks layout; // the input's and the output's
  sdk::Window2d window; // kernel, strides, dilation (1: dense), pads
};

/// y = max_pool2d(x) over the calling thread's OpenMP threads.
void maxPool2d(const float *x, float *y, const MaxPoolShape &s);

} // namespace tessera::dnnl_plugin
