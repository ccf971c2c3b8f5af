//===- bench/dnnl_native/net.h - A hand-written oneDNN inference net -*- C++ -*-===//
//
// The building blocks an expert uses to hand-write a CNN for inference with
// the oneDNN 2.6 C++ API, and nothing more:
//   - convolutions (groups, strides, pads) with the bias and a chain of
//     eltwise post-ops (relu, hard_swish, hard_sigmoid as linear + clip),
//     optionally a residual add as a sum post-op into the shortcut's memory
//     and eltwise post-ops after it;
//   - max pooling and global average pooling, on whatever (blocked) layout
//     the producer picked;
//   - a per-channel multiply (squeeze-excite) as an in-place binary primitive;
//   - inner product (dense) with eltwise post-ops.
// Convolution and inner-product weights and destinations use format_tag::any:
// oneDNN picks the layouts, weights are reordered once at setup, and an
// activation is reordered only when the consumer wants another layout than
// its producer wrote. Every primitive runs with a user scratchpad: one buffer,
// sized for the largest. Activations live in buffers allocated at setup and
// reused once released (Net::release), so a run allocates nothing.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace bench {

/// The activation applied by an eltwise post-op (ONNX semantics).
enum class Act { None, Relu, HardSwish, HardSigmoid };

/// An activation tensor: NCHW dims (C x 1 x 1 after a dense) and its memory
/// in the layout its producer wrote.
struct Tensor {
  dnnl::memory mem;
  int buffer = -1; // the Net's buffer holding it
  dnnl::memory::dims dims() const { return mem.get_desc().dims(); }
};

/// A convolution's geometry (ONNX Conv: symmetric pads).
struct ConvSpec {
  int64_t out = 0, kernel = 1, stride = 1, pad = 0, groups = 1;
};

class Net {
public:
  Net();

  /// The network's input, 1xCxHxW in plain NCHW, read from `data` at run
  /// time (zero copy).
  Tensor input(const dnnl::memory::dims &dims, float *data);

  /// conv(x) + bias, then `acts`, then (with `residual`) + residual in place
  /// of it (sum post-op; the result lives in the residual's buffer), then
  /// `after`. Weights in OIHW (or G x O/G x I/G x KH x KW order for groups),
  /// bias per output channel; both copied and reordered here.
  Tensor conv(const Tensor &x, const ConvSpec &spec, const std::vector<float> &weights,
              const std::vector<float> &bias, const std::vector<Act> &acts,
              Tensor *residual = nullptr, const std::vector<Act> &after = {});
  /// Max pooling (ONNX MaxPool, symmetric pads).
  Tensor maxPool(const Tensor &x, int64_t kernel, int64_t stride, int64_t pad);
  /// Global average pooling to 1 x C x 1 x 1.
  Tensor globalAvgPool(const Tensor &x);
  /// x *= gate (1 x C x 1 x 1, broadcast over H and W), in place.
  void mulChannels(Tensor &x, const Tensor &gate);
  /// Dense (Gemm with transB = 1): x flattened to 1 x K, weights `out` x K,
  /// then `acts`. Gives a 1 x out tensor (plain "nc" when `plainOut`).
  Tensor dense(const Tensor &x, int64_t out, const std::vector<float> &weights,
               const std::vector<float> &bias, const std::vector<Act> &acts, bool plainOut);
  /// `t`'s buffer may hold later tensors.
  void release(Tensor &t);

  /// Allocates the scratchpad; call once, after the last layer.
  void finalize();
  /// One inference: every primitive in order, then waits for the stream.
  void run();
  /// The implementation oneDNN picked for each primitive, one per line.
  std::string describe() const;

  dnnl::engine &engine() { return eng_; }
  dnnl::stream &stream() { return strm_; }

private:
  struct Step {
    dnnl::primitive prim;
    std::unordered_map<int, dnnl::memory> args;
    dnnl::memory::desc scratchpad; // zero size: none
    std::string impl;
  };
  struct Buffer {
    void *data = nullptr;
    size_t bytes = 0;
    bool free = false;
  };
  struct FreeDeleter {
    void operator()(void *p) const;
  };

  /// A tensor of `desc` in a free buffer (or a new one).
  Tensor alloc(const dnnl::memory::desc &desc);
  /// `x` in layout `desc`: itself, or a new tensor and a reorder step.
  Tensor toLayout(const Tensor &x, const dnnl::memory::desc &desc, bool *copied);
  /// Weights in user layout `user`, reordered once into `desc`.
  dnnl::memory constWeights(const std::vector<float> &data, const dnnl::memory::desc &user,
                            const dnnl::memory::desc &desc);
  void add(const dnnl::primitive &prim, const dnnl::primitive_desc_base &pd,
           std::unordered_map<int, dnnl::memory> args);

  dnnl::engine eng_;
  dnnl::stream strm_;
  std::vector<Step> steps_;
  std::vector<Buffer> buffers_;
  std::vector<std::unique_ptr<void, FreeDeleter>> owned_;
  std::vector<dnnl::memory> constants_;
  void *scratch_ = nullptr;
};

} // namespace bench
