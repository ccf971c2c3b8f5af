//===- bench/dnnl_native/models.h - The two benchmark networks --*- C++ -*-===//
//
// ResNet-18 and MobileNetV3-Small exactly as bench/models/make_models.py
// writes them (same layers, order, strides, pads, activations), built on a
// Net from that script's initializers (its --weights-npz file, keyed by
// initializer name). make_models.py names initializers "<base><n>" with one
// counter per base ("w", "b", "gamma", "beta", "mean", "var", "fc_w",
// "fc_b") in creation order; Weights::take replays those counters, so the
// layers here must take their weights in the script's order. Every array's
// shape is checked, and every initializer must be used.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "net.h"

#include <map>
#include <string>
#include <vector>

namespace tessera::tools::npy {
struct Array;
}

namespace bench {

/// The initializers of one model, handed out in make_models.py's order.
class Weights {
public:
  explicit Weights(std::vector<tessera::tools::npy::Array> arrays);
  ~Weights();

  /// The next "<base><n>" initializer as floats; throws unless it exists
  /// with this shape.
  std::vector<float> take(const std::string &base, const std::vector<int64_t> &shape);
  /// Throws unless every initializer was taken.
  void checkAllTaken() const;

private:
  std::map<std::string, tessera::tools::npy::Array> arrays_;
  std::map<std::string, int> count_;
  size_t taken_ = 0;
};

/// Builds the network on `net` from `x` (1x3xHxW); returns the logits
/// (1 x 1000, plain).
Tensor buildResnet18(Net &net, Weights &w, Tensor x, double width);
Tensor buildMobilenetV3(Net &net, Weights &w, Tensor x, double width);

} // namespace bench
