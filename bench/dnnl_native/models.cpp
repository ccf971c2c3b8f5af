//===- bench/dnnl_native/models.cpp - The two benchmark networks ----------===//
//
// ResNet-18 and MobileNetV3-Small on a Net, mirroring make_models.py layer
// by layer (see models.h). BatchNormalization is folded into the preceding
// convolution here, at setup, as an expert would: scale = gamma /
// sqrt(var + 1e-5), w' = w * scale, b' = beta - mean * scale.
//
//===----------------------------------------------------------------------===//
#include "models.h"

#include "tools/npy.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace bench {

namespace npy = tessera::tools::npy;

namespace {

std::string shapeStr(const std::vector<int64_t> &shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

/// make_models.py's channels(): c * width rounded to a multiple of 8, at
/// least 8.
int64_t channels(double c, double width) {
  return std::max<int64_t>(8, int64_t(c * width + 4) / 8 * 8);
}

/// A convolution's weights and bias, BatchNormalization folded in.
struct ConvWeights {
  std::vector<float> w, b;
};

/// Takes the weights of make_models.py's conv() (+ bn()): "w" (cout x
/// cin/group x k x k), "b" when `bias`, then gamma/beta/mean/var when `bn`.
ConvWeights takeConv(Weights &wt, int64_t cin, int64_t cout, int64_t k, int64_t group, bool bias,
                     bool bn) {
  ConvWeights cw;
  cw.w = wt.take("w", {cout, cin / group, k, k});
  cw.b = bias ? wt.take("b", {cout}) : std::vector<float>(size_t(cout), 0.f);
  if (!bn)
    return cw;
  std::vector<float> gamma = wt.take("gamma", {cout}), beta = wt.take("beta", {cout}),
                     mean = wt.take("mean", {cout}), var = wt.take("var", {cout});
  size_t per = cw.w.size() / size_t(cout);
  for (size_t o = 0; o < size_t(cout); ++o) {
    double scale = double(gamma[o]) / std::sqrt(double(var[o]) + 1e-5);
    for (size_t i = 0; i < per; ++i)
      cw.w[o * per + i] = float(cw.w[o * per + i] * scale);
    cw.b[o] = float(beta[o] + (double(cw.b[o]) - mean[o]) * scale);
  }
  return cw;
}

ConvSpec spec(int64_t cout, int64_t k, int64_t stride, int64_t group = 1) {
  return ConvSpec{cout, k, stride, k / 2, group};
}

} // namespace

Weights::Weights(std::vector<npy::Array> arrays) {
  for (npy::Array &a : arrays)
    arrays_.emplace(a.name, std::move(a));
}

Weights::~Weights() = default;

std::vector<float> Weights::take(const std::string &base, const std::vector<int64_t> &shape) {
  std::string name = base + std::to_string(count_[base]++);
  auto it = arrays_.find(name);
  if (it == arrays_.end())
    throw std::runtime_error("weights: no initializer '" + name + "' (is the network the one "
                             "make_models.py wrote, with the same --width?)");
  const npy::Array &a = it->second;
  if (a.dtype.code != kDLFloat || a.dtype.bits != 32 || a.shape != shape)
    throw std::runtime_error("weights: initializer '" + name + "' is " + shapeStr(a.shape) +
                             ", expected float32 " + shapeStr(shape));
  std::vector<float> v(size_t(a.numel()));
  std::memcpy(v.data(), a.data.data(), v.size() * sizeof(float));
  ++taken_;
  return v;
}

void Weights::checkAllTaken() const {
  if (taken_ != arrays_.size())
    throw std::runtime_error("weights: " + std::to_string(arrays_.size() - taken_) + " of " +
                             std::to_string(arrays_.size()) +
                             " initializers unused: the network differs from make_models.py's");
}

Tensor buildResnet18(Net &net, Weights &wt, Tensor x, double width) {
  int64_t c = channels(64, width);
  ConvWeights stem = takeConv(wt, 3, c, 7, 1, false, true);
  Tensor y = net.conv(x, spec(c, 7, 2), stem.w, stem.b, {Act::Relu});
  x = net.maxPool(y, 3, 2, 1);
  net.release(y);
  int64_t cin = c;
  const int64_t bases[] = {64, 128, 256, 512};
  for (int stage = 0; stage < 4; ++stage) {
    int64_t cout = channels(double(bases[stage]), width);
    for (int block = 0; block < 2; ++block) {
      int64_t stride = stage > 0 && block == 0 ? 2 : 1;
      bool project = stride != 1 || cin != cout;
      // The script's order: conv1+bn, conv2+bn, then the shortcut's conv+bn.
      ConvWeights w1 = takeConv(wt, cin, cout, 3, 1, false, true);
      ConvWeights w2 = takeConv(wt, cout, cout, 3, 1, false, true);
      ConvWeights ws;
      if (project)
        ws = takeConv(wt, cin, cout, 1, 1, false, true);
      // Run the shortcut first, so conv2 adds onto it in place (sum
      // post-op), then relu.
      Tensor h = net.conv(x, spec(cout, 3, stride), w1.w, w1.b, {Act::Relu});
      Tensor shortcut = x;
      if (project) {
        shortcut = net.conv(x, spec(cout, 1, stride), ws.w, ws.b, {});
        net.release(x);
      }
      x = net.conv(h, spec(cout, 3, 1), w2.w, w2.b, {}, &shortcut, {Act::Relu});
      net.release(h);
      cin = cout;
    }
  }
  Tensor pooled = net.globalAvgPool(x);
  net.release(x);
  std::vector<float> fw = wt.take("fc_w", {1000, cin}), fb = wt.take("fc_b", {1000});
  Tensor logits = net.dense(pooled, 1000, fw, fb, {}, true);
  net.release(pooled);
  return logits;
}

namespace {

// make_models.py's MOBILENETV3_SMALL: kernel, expansion, output,
// squeeze-excite, activation, stride.
struct Block {
  int64_t k, exp, out;
  bool se;
  Act act;
  int64_t stride;
};
const Block kMobilenetV3Small[] = {
    {3, 16, 16, true, Act::Relu, 2},       {3, 72, 24, false, Act::Relu, 2},
    {3, 88, 24, false, Act::Relu, 1},      {5, 96, 40, true, Act::HardSwish, 2},
    {5, 240, 40, true, Act::HardSwish, 1}, {5, 240, 40, true, Act::HardSwish, 1},
    {5, 120, 48, true, Act::HardSwish, 1}, {5, 144, 48, true, Act::HardSwish, 1},
    {5, 288, 96, true, Act::HardSwish, 2}, {5, 576, 96, true, Act::HardSwish, 1},
    {5, 576, 96, true, Act::HardSwish, 1},
};

/// A 1x1 or kxk conv with bias (make_models.py's conv(..., bias=True)).
Tensor convBias(Net &net, Weights &wt, const Tensor &x, int64_t cin, int64_t cout, int64_t k,
                int64_t stride, int64_t group, const std::vector<Act> &acts,
                Tensor *residual = nullptr) {
  ConvWeights cw = takeConv(wt, cin, cout, k, group, true, false);
  return net.conv(x, spec(cout, k, stride, group), cw.w, cw.b, acts, residual);
}

} // namespace

Tensor buildMobilenetV3(Net &net, Weights &wt, Tensor x, double width) {
  int64_t c = channels(16, width);
  x = convBias(net, wt, x, 3, c, 3, 2, 1, {Act::HardSwish});
  for (const Block &b : kMobilenetV3Small) {
    int64_t e = channels(double(b.exp), width), o = channels(double(b.out), width);
    Tensor y = x;
    if (e != c)
      y = convBias(net, wt, x, c, e, 1, 1, 1, {b.act});
    Tensor d = convBias(net, wt, y, e, e, b.k, b.stride, e, {b.act}); // depthwise
    if (e != c)
      net.release(y);
    if (b.se) {
      // x * hard_sigmoid(conv(relu(conv(avg(x))))), the product in place.
      int64_t s = channels(double(e) / 4, 1.0);
      Tensor g = net.globalAvgPool(d);
      Tensor g1 = convBias(net, wt, g, e, s, 1, 1, 1, {Act::Relu});
      net.release(g);
      Tensor g2 = convBias(net, wt, g1, s, e, 1, 1, 1, {Act::HardSigmoid});
      net.release(g1);
      net.mulChannels(d, g2);
      net.release(g2);
    }
    // Projection (linear); Add(x, y) when the shapes match, as a sum
    // post-op into x's memory.
    if (b.stride == 1 && c == o) {
      x = convBias(net, wt, d, e, o, 1, 1, 1, {}, &x);
    } else {
      Tensor p = convBias(net, wt, d, e, o, 1, 1, 1, {});
      net.release(x);
      x = p;
    }
    net.release(d);
    c = o;
  }
  int64_t last = channels(576, width);
  Tensor h = convBias(net, wt, x, c, last, 1, 1, 1, {Act::HardSwish});
  net.release(x);
  Tensor pooled = net.globalAvgPool(h);
  net.release(h);
  std::vector<float> w1 = wt.take("fc_w", {1024, last}), b1 = wt.take("fc_b", {1024});
  Tensor f = net.dense(pooled, 1024, w1, b1, {Act::HardSwish}, false);
  net.release(pooled);
  std::vector<float> w2 = wt.take("fc_w", {1000, 1024}), b2 = wt.take("fc_b", {1000});
  Tensor logits = net.dense(f, 1000, w2, b2, {}, true);
  net.release(f);
  return logits;
}

} // namespace bench
