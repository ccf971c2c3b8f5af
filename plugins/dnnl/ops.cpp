//===- plugins/dnnl/ops.cpp - The ops the dnnl plugin takes ---------------===//
//
// analyzeOp(): per core op, the attribute defaults of docs/ops.md, the shape
// checks of the core's type relations, and the oneDNN parameters. Each
// failure throws sdk::Error with the part of the reason after "dnnl: <op>: ".
//
//===----------------------------------------------------------------------===//
#include "ops.h"

#include "tessera/sdk/op_helpers.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace tessera::dnnl_plugin {

using dnnl::algorithm;
// The shape checks and attribute readers are the SDK's op helpers
// (tessera/sdk/op_helpers.hpp).
using namespace sdk;

namespace {

//===----------------------------------------------------------------------===//
// Shapes in oneDNN terms
//===----------------------------------------------------------------------===//

/// `s` with leading 1s up to rank `r` (at least 1).
Dims padRank(const Dims &s, size_t r) {
  r = std::max<size_t>(r, 1);
  Dims out(r - std::min(r, s.size()), 1);
  out.insert(out.end(), s.begin(), s.end());
  return out;
}

//===----------------------------------------------------------------------===//
// Per op family
//===----------------------------------------------------------------------===//

void analyzeEltwise(const OpDesc &op, OpInfo &info) {
  requireInputs(op, 1);
  if (!eltwiseOf(op, info.eltwise))
    throw Error("not an elementwise op");
  requireOutput(op, inputShape(op, 0));
  info.kind = OpKind::Eltwise;
}

void analyzeBinary(const OpDesc &op, OpInfo &info) {
  static const std::map<std::string, algorithm, std::less<>> algs = {
      {"add", algorithm::binary_add},      {"subtract", algorithm::binary_sub},
      {"multiply", algorithm::binary_mul}, {"divide", algorithm::binary_div},
      {"maximum", algorithm::binary_max},  {"minimum", algorithm::binary_min}};
  info.kind = OpKind::Binary;
  info.alg = algs.at(op.op);
  Dims ys = checkBroadcastBinary(op);
  const Dims &as = inputShape(op, 0), &bs = inputShape(op, 1);
  // oneDNN broadcasts src1 only: src0 must have the output's shape. A
  // subtract swaps too and negates the result (exactly: -(b - a) = a - b).
  bool commutes = op.op != "divide";
  if (padRank(as, ys.size()) == padRank(ys, ys.size())) {
    info.src1Dims = padRank(bs, ys.size());
  } else if (commutes && padRank(bs, ys.size()) == padRank(ys, ys.size())) {
    info.swapOperands = true;
    info.negate = op.op == "subtract";
    info.src1Dims = padRank(as, ys.size());
  } else {
    throw Error("oneDNN broadcasts only the second operand, and " + shapeStr(as) + " with " +
                shapeStr(bs) + " broadcasts " + (commutes ? "both" : "the first"));
  }
}

void analyzeBiasAdd(const OpDesc &op, OpInfo &info) {
  int64_t axis = checkBiasAdd(op);
  const Dims &xs = inputShape(op, 0);
  info.kind = OpKind::Binary;
  info.alg = algorithm::binary_add;
  info.axis = axis;
  info.src1Dims.assign(xs.size(), 1);
  info.src1Dims[size_t(axis)] = xs[size_t(axis)];
}

void analyzeBatchNorm(const OpDesc &op, OpInfo &info) {
  requireInputs(op, 5);
  const Dims &xs = inputShape(op, 0);
  if (xs.size() < 2 || xs.size() > 5)
    throw Error("oneDNN normalizes tensors of rank 2 to 5, got " + op.inputs[0].str());
  int64_t axis = normalizeAxis(intAttr(op, "axis", 1), xs.size());
  if (axis != 1)
    throw Error("attribute 'axis' = " + std::to_string(axis) +
                " unsupported (oneDNN normalizes along axis 1)");
  BatchNormParams p = checkBatchNorm(op);
  info.kind = OpKind::BatchNorm;
  info.epsilon = float(p.epsilon);
}

void analyzeLayerNorm(const OpDesc &op, OpInfo &info) {
  requireInputs(op, 2, 3);
  const Dims &xs = inputShape(op, 0);
  if (xs.empty())
    throw Error("data must have rank >= 1");
  int64_t axis = normalizeAxis(intAttr(op, "axis", -1), xs.size());
  Dims inner(xs.begin() + axis, xs.end());
  // Scale and shift of the normalised shape, or broadcasting to it
  // (InstanceNormalization's [1]: the plan expands them, lower_ops.cpp).
  for (size_t i = 1; i < op.inputs.size(); ++i) {
    const Dims &ps = inputShape(op, i);
    bool broadcasts = ps.size() <= inner.size();
    for (size_t d = 0; broadcasts && d < ps.size(); ++d)
      broadcasts = ps[d] == 1 || ps[d] == inner[inner.size() - ps.size() + d];
    if (!broadcasts)
      throw Error("input " + std::to_string(i) + " must have shape " + shapeStr(inner) +
                  " or broadcast to it, got " + op.inputs[i].str());
  }
  requireOutput(op, xs);
  info.kind = OpKind::LayerNorm;
  info.axis = axis;
  info.epsilon = float(floatAttr(op, "epsilon", 1e-5));
  info.hasShift = op.inputs.size() == 3;
}

void analyzeSoftmax(const OpDesc &op, OpInfo &info) {
  info.kind = OpKind::Softmax;
  info.axis = checkSoftmax(op);
  info.alg = op.op == "log_softmax" ? algorithm::softmax_log : algorithm::softmax_accurate;
}

void analyzeDense(const OpDesc &op, OpInfo &info) {
  DenseDims d = checkDense(op);
  info.units = d.units;
  info.K = d.K;
  info.rows = d.rows;
  info.kind = OpKind::Dense;
}

void analyzeMatmul(const OpDesc &op, OpInfo &info) {
  info.kind = OpKind::Matmul;
  Dims a, b, ys;
  if (op.op == "batch_matmul") {
    BatchMatmulDims d = checkBatchMatmul(op);
    a = inputShape(op, 0), b = inputShape(op, 1);
    info.transA = d.transA;
    info.transB = d.transB;
    // Logical (untransposed) dims; the memory descs carry the transposes.
    if (info.transA)
      std::swap(a[1], a[2]);
    if (info.transB)
      std::swap(b[1], b[2]);
    ys = outputShape(op);
  } else {
    // Both operands at the rank of the result before the promoted dims
    // are dropped: oneDNN broadcasts batch dims of size 1.
    MatmulDims m = checkMatmul(op);
    size_t r = m.batch.size() + 2;
    a = padRank(m.a, r);
    b = padRank(m.b, r);
    ys = m.batch;
    ys.push_back(m.M);
    ys.push_back(m.N);
    // A weight without batch dims (torch's nn.MultiheadAttention projects
    // [L, N, E] inputs: 197 GEMMs of one row each for ViT) multiplies every
    // row of a alike: one GEMM over all of them.
    int64_t rows = m.M;
    for (size_t i = 0; i < m.batch.size(); ++i)
      rows *= a[i];
    bool bBroadcast = std::all_of(b.begin(), b.end() - 2, [](int64_t d) { return d == 1; });
    if (r > 2 && bBroadcast && rows > m.M) {
      a = {rows, m.K};
      b = {m.K, m.N};
      ys = {rows, m.N};
      info.foldedBatch = true;
    }
  }
  if (a.size() > 12)
    throw Error("rank " + std::to_string(a.size()) + " exceeds oneDNN's 12");
  info.aDims = a, info.bDims = b, info.yDims = ys;
}

/// A 2-D window in oneDNN's conventions (dilation 0 = dense, right pads).
void setWindow(const Window2d &w, OpInfo &info) {
  info.kernel = {w.k[0], w.k[1]};
  info.strides = {w.s[0], w.s[1]};
  info.dilation = {w.d[0] - 1, w.d[1] - 1};
  info.padL = {w.p0[0], w.p0[1]};
  info.padR = {w.p1[0], w.p1[1]};
}

void analyzeConv(const OpDesc &op, OpInfo &info) {
  if (op.op == "conv2d") {
    Conv2dParams p = checkConv2d(op);
    info.kind = OpKind::Conv;
    info.groups = p.groups;
    setWindow(p.window, info);
    return;
  }
  // conv2d_transpose: weight [C, O/groups, KH, KW]; output_padding widens
  // the bottom/right, which oneDNN expresses as less right padding.
  requireInputs(op, 2);
  requireRank(op, 0, 4, "data");
  requireRank(op, 1, 4, "weight");
  const Dims &xs = inputShape(op, 0), &ws = inputShape(op, 1);
  Window2d win = convWindow(op);
  int64_t g = groupsAttr(op);
  info.kind = OpKind::Deconv;
  info.groups = g;
  setWindow(win, info);
  Dims outPad = intsAttr(op, "output_padding", {0, 0}, 2, 0);
  if (xs[1] != ws[0] || xs[1] % g != 0)
    throw Error("channels do not match groups " + std::to_string(g) + ": data " +
                op.inputs[0].str() + ", weight " + op.inputs[1].str());
  Dims ys = {xs[0], ws[1] * g, 0, 0};
  for (int i = 0; i < 2; ++i) {
    size_t k = size_t(i);
    ys[2 + k] = win.s[i] * (xs[2 + k] - 1) + outPad[k] + win.extent(i) - win.p0[i] - win.p1[i];
    info.padR[k] -= outPad[k];
    if (info.padR[k] < 0)
      throw Error("attribute 'output_padding' larger than the bottom/right pads unsupported");
  }
  requirePositiveOutput(ys[2], ys[3]);
  requireOutput(op, ys);
}

void analyzePool(const OpDesc &op, OpInfo &info) {
  info.kind = OpKind::Pool;
  if (op.op == "global_avg_pool2d" || op.op == "global_max_pool2d") {
    checkGlobalPool2d(op);
    const Dims &xs = inputShape(op, 0);
    info.kernel = {xs[2], xs[3]};
    info.strides = {1, 1};
    info.dilation = {0, 0};
    info.padL = info.padR = {0, 0};
    info.alg = op.op == "global_max_pool2d" ? algorithm::pooling_max
                                            : algorithm::pooling_avg_exclude_padding;
    return;
  }
  Pool2dParams p = checkPool2d(op);
  setWindow(p.window, info);
  info.alg = op.op == "max_pool2d" ? algorithm::pooling_max
             : p.countIncludePad   ? algorithm::pooling_avg_include_padding
                                   : algorithm::pooling_avg_exclude_padding;
  const Dims &xs = inputShape(op, 0);
  for (int i = 0; i < 2; ++i) {
    size_t k = size_t(i);
    // oneDNN has no ceil_mode: widen the right padding so that its floor
    // gives the same size. Max pooling ignores padding; average pooling
    // without count_include_pad too; with it, the widened taps would count.
    int64_t padR =
        (p.output[2 + k] - 1) * p.window.s[i] + p.window.extent(i) - xs[2 + k] - p.window.p0[i];
    if (padR > info.padR[k] && p.countIncludePad)
      throw Error("ceil_mode with count_include_pad unsupported when the last window passes the "
                  "padding");
    info.padR[k] = std::max(info.padR[k], padR);
  }
}

void analyzeConcat(const OpDesc &op, OpInfo &info) {
  if (!op.inputs.empty() && inputShape(op, 0).empty())
    throw Error("inputs must have rank >= 1");
  int64_t axis = checkConcat(op);
  for (size_t i = 0; i < op.inputs.size(); ++i)
    if (inputShape(op, i)[size_t(axis)] == 0)
      throw Error("input " + std::to_string(i) + " is empty along axis " + std::to_string(axis));
  info.kind = OpKind::Concat;
  info.axis = axis;
}

// resize2d: oneDNN's resampling maps output x to (x + 0.5) * in / out - 0.5
// (half_pixel, with the scale the sizes give); linear interpolates between
// the clamped neighbours, nearest takes floor(that + 0.5) (ties up:
// round_prefer_ceil). Every other mode is declined.
void analyzeResize(const OpDesc &op, OpInfo &info) {
  requireInputs(op, 1);
  requireRank(op, 0, 4, "data");
  const Dims &xs = inputShape(op, 0);
  if (!op.attrs.has("size"))
    throw Error("missing attribute 'size'");
  Dims size = intsAttr(op, "size", {}, 2, 1);
  requireOutput(op, {xs[0], xs[1], size[0], size[1]});
  std::string mode = stringAttr(op, "mode", "nearest");
  std::string coord = stringAttr(op, "coordinate_transformation_mode", "half_pixel");
  std::string nearest = stringAttr(op, "nearest_mode", "round_prefer_floor");
  // Nearest by a whole factor s (torch's nn.Upsample(scale_factor=2): an
  // "asymmetric" resize with nearest_mode floor) reads floor(x / s), and so
  // does oneDNN's half_pixel: (x + 0.5) / s - 0.5 is floor(x / s) plus less
  // than a half either way, never a tie, so it rounds to it whichever way
  // ties go.
  const bool wholeFactor =
      mode == "nearest" && size[0] % xs[2] == 0 && size[1] % xs[3] == 0 && size[0] >= xs[2] &&
      size[1] >= xs[3] &&
      ((coord == "asymmetric" && nearest == "floor") ||
       (coord == "half_pixel" && (nearest == "round_prefer_floor" || nearest == "round_prefer_ceil")));
  if (coord != "half_pixel" && !wholeFactor)
    throw Error("coordinate_transformation_mode \"" + coord +
                "\" unsupported (oneDNN resamples half_pixel; asymmetric only for nearest "
                "with floor by a whole factor)");
  if (mode == "linear") {
    if (boolAttr(op, "exclude_outside", false))
      throw Error("attribute 'exclude_outside' unsupported");
    info.alg = algorithm::resampling_linear;
  } else if (mode == "nearest") {
    if (nearest != "round_prefer_ceil" && !wholeFactor)
      throw Error("nearest_mode \"" + nearest +
                  "\" unsupported (oneDNN rounds half_pixel ties up: round_prefer_ceil)");
    info.alg = algorithm::resampling_nearest;
  } else {
    throw Error("mode \"" + mode + "\" unsupported (nearest or linear)");
  }
  // (An empty list arrives as ints through the tessera.graph JSON.)
  std::vector<double> scales;
  if (const sdk::AttrValue *v = op.attrs.find("scales")) {
    if (const auto *f = std::get_if<std::vector<double>>(v))
      scales = *f;
    else if (const auto *i = std::get_if<std::vector<int64_t>>(v))
      scales.assign(i->begin(), i->end());
  }
  for (size_t i = 0; i < scales.size() && i < 2; ++i)
    if (scales.size() != 2 || scales[i] != double(size[i]) / double(xs[2 + i]))
      throw Error("attribute 'scales' other than size / input size unsupported");
  info.kind = OpKind::Resample;
}

void analyzeView(const OpDesc &op, OpInfo &info) {
  checkView(op);
  info.kind = OpKind::View;
}

void analyzeTranspose(const OpDesc &op, OpInfo &info) {
  info.perm = checkTranspose(op);
  if (info.perm.size() > DNNL_MAX_NDIMS)
    throw Error("rank " + std::to_string(info.perm.size()) + " exceeds oneDNN's " +
                std::to_string(DNNL_MAX_NDIMS));
  info.kind = OpKind::Transpose;
}

// slice (ONNX Slice): starts and ends count from the end when negative and
// are clamped to the dim; positive steps only (oneDNN has no negative
// strides).
void analyzeSlice(const OpDesc &op, OpInfo &info) {
  requireInputs(op, 1);
  const Dims &xs = inputShape(op, 0);
  if (xs.empty() || xs.size() > DNNL_MAX_NDIMS)
    throw Error("data must have rank 1 to " + std::to_string(DNNL_MAX_NDIMS) + ", got " +
                op.inputs[0].str());
  Dims starts = intsAttr(op, "starts", {}), ends = intsAttr(op, "ends", {});
  Dims axes = intsAttr(op, "axes", {}), steps = intsAttr(op, "steps", {});
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(int64_t(i));
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    throw Error("attributes 'starts', 'ends', 'axes' and 'steps' must have one value per axis");
  info.kind = OpKind::Slice;
  info.starts.assign(xs.size(), 0);
  info.steps.assign(xs.size(), 1);
  Dims ys = xs;
  std::vector<bool> seen(xs.size(), false);
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t axis = normalizeAxis(axes[i], xs.size());
    if (seen[size_t(axis)])
      throw Error("axis " + std::to_string(axis) + " is sliced twice");
    seen[size_t(axis)] = true;
    int64_t d = xs[size_t(axis)], step = steps[i];
    if (step <= 0)
      throw Error("steps other than positive unsupported (oneDNN has no negative strides), got " +
                  std::to_string(step));
    auto clampIndex = [d](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + d : v, 0, d); };
    int64_t b = clampIndex(starts[i]), e = clampIndex(ends[i]);
    info.starts[size_t(axis)] = b;
    info.steps[size_t(axis)] = step;
    ys[size_t(axis)] = e > b ? (e - b + step - 1) / step : 0;
  }
  requireOutput(op, ys);
}

using Analyze = void (*)(const OpDesc &, OpInfo &);

const std::map<std::string, Analyze, std::less<>> &table() {
  static const std::map<std::string, Analyze, std::less<>> t = {
      {"add", analyzeBinary},
      {"subtract", analyzeBinary},
      {"multiply", analyzeBinary},
      {"divide", analyzeBinary},
      {"maximum", analyzeBinary},
      {"minimum", analyzeBinary},
      {"bias_add", analyzeBiasAdd},
      {"relu", analyzeEltwise},
      {"leaky_relu", analyzeEltwise},
      {"sigmoid", analyzeEltwise},
      {"tanh", analyzeEltwise},
      {"clip", analyzeEltwise},
      {"hard_sigmoid", analyzeEltwise},
      {"hard_swish", analyzeEltwise},
      {"silu", analyzeEltwise},
      {"mish", analyzeEltwise},
      {"gelu", analyzeEltwise},
      {"exp", analyzeEltwise},
      {"log", analyzeEltwise},
      {"sqrt", analyzeEltwise},
      {"abs", analyzeEltwise},
      {"neg", analyzeEltwise},
      {"batch_norm", analyzeBatchNorm},
      {"layer_norm", analyzeLayerNorm},
      {"softmax", analyzeSoftmax},
      {"log_softmax", analyzeSoftmax},
      {"dense", analyzeDense},
      {"matmul", analyzeMatmul},
      {"batch_matmul", analyzeMatmul},
      {"conv2d", analyzeConv},
      {"conv2d_transpose", analyzeConv},
      {"max_pool2d", analyzePool},
      {"avg_pool2d", analyzePool},
      {"global_avg_pool2d", analyzePool},
      {"global_max_pool2d", analyzePool},
      {"concat", analyzeConcat},
      {"reshape", analyzeView},
      {"flatten", analyzeView},
      {"squeeze", analyzeView},
      {"unsqueeze", analyzeView},
      {"transpose", analyzeTranspose},
      {"slice", analyzeSlice},
      {"resize2d", analyzeResize},
  };
  return t;
}

/// Ops that oneDNN has a primitive for but that the host runs faster
/// (measured): declined with the reason, so that they stay on the host.
/// lstm: oneDNN 2.6's lstm_forward (brgemm, its only f32 implementation
/// here) took 1.5x the time of the host's lstm kernel on the zoo's 2-layer
/// LSTM at 1 thread and 1.6x at 2 (batch 1, --mcpu native; bench/zoo,
/// issue 21: 19.5 against 13.0 ms, 10.7 against 6.8 ms).
const std::map<std::string, std::string, std::less<>> &hostFaster() {
  static const std::map<std::string, std::string, std::less<>> t = {
      {"lstm", "runs on the host: oneDNN 2.6's lstm_forward measured 1.5x slower than the "
               "host's lstm kernel (batch 1, 1 and 2 threads)"},
  };
  return t;
}

} // namespace

dnnl::memory::dims dnnlDims(const Dims &shape) {
  if (shape.empty())
    return {1};
  return dnnl::memory::dims(shape.begin(), shape.end());
}

std::string declineReason(const std::string &op, const std::string &what) {
  return "dnnl: " + op + ": " + what;
}

const std::vector<std::string> &supportedOps() {
  static const std::vector<std::string> ops = [] {
    std::vector<std::string> out = keysOf(table()), host = keysOf(hostFaster());
    out.insert(out.end(), host.begin(), host.end());
    std::sort(out.begin(), out.end());
    return out;
  }();
  return ops;
}

bool eltwiseOf(const OpDesc &op, std::vector<Eltwise> &out) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  auto one = [&](algorithm alg, double alpha = 0, double beta = 0) {
    out.push_back(Eltwise{alg, float(alpha), float(beta)});
    return true;
  };
  const std::string &n = op.op;
  if (n == "relu")
    return one(algorithm::eltwise_relu);
  if (n == "leaky_relu")
    return one(algorithm::eltwise_relu, floatAttr(op, "alpha", 0.01));
  if (n == "sigmoid")
    return one(algorithm::eltwise_logistic);
  if (n == "tanh")
    return one(algorithm::eltwise_tanh);
  if (n == "clip") {
    double lo = floatAttr(op, "min", -inf), hi = floatAttr(op, "max", inf);
    if (std::isnan(lo) || std::isnan(hi))
      throw Error("attribute 'min'/'max' is NaN");
    return one(algorithm::eltwise_clip_v2, lo, hi);
  }
  if (n == "hard_sigmoid") {
    // oneDNN 2.6 has no hardsigmoid: clip(alpha * x + beta, 0, 1).
    one(algorithm::eltwise_linear, floatAttr(op, "alpha", 0.2), floatAttr(op, "beta", 0.5));
    return one(algorithm::eltwise_clip_v2, 0.0, 1.0);
  }
  if (n == "hard_swish")
    return one(algorithm::eltwise_hardswish);
  if (n == "silu")
    return one(algorithm::eltwise_swish, 1.0);
  if (n == "mish")
    return one(algorithm::eltwise_mish);
  if (n == "gelu") {
    std::string approximate = stringAttr(op, "approximate", "none");
    if (approximate == "none")
      return one(algorithm::eltwise_gelu_erf);
    if (approximate == "tanh")
      return one(algorithm::eltwise_gelu_tanh);
    throw Error("attribute 'approximate' = \"" + approximate +
                "\" unsupported (\"none\" or \"tanh\")");
  }
  if (n == "exp")
    return one(algorithm::eltwise_exp);
  if (n == "log")
    return one(algorithm::eltwise_log);
  if (n == "sqrt")
    return one(algorithm::eltwise_sqrt);
  if (n == "abs")
    return one(algorithm::eltwise_abs);
  if (n == "neg")
    return one(algorithm::eltwise_linear, -1.0, 0.0);
  return false;
}

OpInfo analyzeOp(const OpDesc &op) {
  if (auto host = hostFaster().find(op.op); host != hostFaster().end())
    throw Error(host->second);
  auto it = table().find(op.op);
  if (it == table().end())
    throw Error("op unsupported");
  requireResults(op, 1);
  requireDType(op, DLDataType{kDLFloat, 32, 1});
  for (const auto *types : {&op.inputs, &op.outputs})
    for (const sdk::TensorType &t : *types) {
      int64_t n = 1;
      for (int64_t d : t.shape)
        if (d < 0 || __builtin_mul_overflow(n, d, &n) || n > (int64_t(1) << 40))
          throw Error("the tensor type " + t.str() + " is too large");
      if (n == 0)
        throw Error("empty tensors unsupported, got " + t.str());
    }
  OpInfo info;
  it->second(op, info);
  return info;
}

} // namespace tessera::dnnl_plugin
