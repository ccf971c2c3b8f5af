//===- plugins/dnnl/ops.cpp - The ops the dnnl plugin takes ---------------===//
//
// analyzeOp(): per core op, the attribute defaults of docs/ops.md, the shape
// checks of the core's type relations, and the oneDNN parameters. Each
// failure throws sdk::Error with the part of the reason after "dnnl: <op>: ".
//
//===----------------------------------------------------------------------===//
#include "ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace tessera::dnnl_plugin {

using dnnl::algorithm;
using sdk::Error;
using sdk::OpDesc;

namespace {

std::string shapeStr(const Dims &s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i)
    out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

//===----------------------------------------------------------------------===//
// Attributes and shapes
//===----------------------------------------------------------------------===//

int64_t intAttr(const OpDesc &op, const char *name, int64_t dflt) {
  return op.attrs.has(name) ? op.attrs.getInt(name) : dflt;
}
double floatAttr(const OpDesc &op, const char *name, double dflt) {
  return op.attrs.has(name) ? op.attrs.getFloat(name) : dflt;
}
bool boolAttr(const OpDesc &op, const char *name, bool dflt) {
  return op.attrs.has(name) ? op.attrs.getBool(name) : dflt;
}
std::string stringAttr(const OpDesc &op, const char *name, const char *dflt) {
  return op.attrs.has(name) ? op.attrs.getString(name) : dflt;
}
/// An int list of `n` values, each at least `min`.
Dims intsAttr(const OpDesc &op, const char *name, Dims dflt, size_t n, int64_t min) {
  Dims v = op.attrs.has(name) ? op.attrs.getInts(name) : dflt;
  if (v.size() != n)
    throw Error("attribute '" + std::string(name) + "' must have " + std::to_string(n) +
                " values, got " + std::to_string(v.size()));
  for (int64_t x : v)
    if (x < min)
      throw Error("attribute '" + std::string(name) + "' must be " +
                  (min > 0 ? "positive" : "non-negative") + ", got " + shapeStr(v));
  return v;
}

const Dims &in(const OpDesc &op, size_t i) {
  return op.inputs[i].shape;
}

void requireInputs(const OpDesc &op, size_t lo, size_t hi) {
  if (op.inputs.size() < lo || op.inputs.size() > hi)
    throw Error("expects " + std::to_string(lo) + (hi > lo ? ".." + std::to_string(hi) : "") +
                " inputs, got " + std::to_string(op.inputs.size()));
}

void requireRank(const OpDesc &op, size_t i, size_t rank, const char *name) {
  if (in(op, i).size() != rank)
    throw Error("input " + std::to_string(i) + " ('" + name + "') must have rank " +
                std::to_string(rank) + ", got " + op.inputs[i].str());
}

void requireOutput(const OpDesc &op, const Dims &computed) {
  if (op.outputs[0].shape != computed)
    throw Error("the declared output " + op.outputs[0].str() + " is not the computed shape " +
                shapeStr(computed));
}

int64_t numel(const Dims &s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

/// numpy broadcasting; false when the shapes do not broadcast.
bool broadcast(const Dims &a, const Dims &b, Dims &result) {
  size_t r = std::max(a.size(), b.size());
  result.assign(r, 1);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      return false;
    result[i] = da == 1 ? db : da;
  }
  return true;
}

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
  requireInputs(op, 1, 1);
  if (!eltwiseOf(op, info.eltwise))
    throw Error("not an elementwise op");
  requireOutput(op, in(op, 0));
  info.kind = OpKind::Eltwise;
}

void analyzeBinary(const OpDesc &op, OpInfo &info) {
  static const std::map<std::string, algorithm, std::less<>> algs = {
      {"add", algorithm::binary_add},      {"subtract", algorithm::binary_sub},
      {"multiply", algorithm::binary_mul}, {"divide", algorithm::binary_div},
      {"maximum", algorithm::binary_max},  {"minimum", algorithm::binary_min}};
  requireInputs(op, 2, 2);
  info.kind = OpKind::Binary;
  info.alg = algs.at(op.op);
  Dims ys;
  if (!broadcast(in(op, 0), in(op, 1), ys))
    throw Error("cannot broadcast " + shapeStr(in(op, 0)) + " with " + shapeStr(in(op, 1)));
  requireOutput(op, ys);
  // oneDNN broadcasts src1 only: src0 must have the output's shape. A
  // subtract swaps too and negates the result (exactly: -(b - a) = a - b).
  bool commutes = op.op != "divide";
  if (padRank(in(op, 0), ys.size()) == padRank(ys, ys.size())) {
    info.src1Dims = padRank(in(op, 1), ys.size());
  } else if (commutes && padRank(in(op, 1), ys.size()) == padRank(ys, ys.size())) {
    info.swapOperands = true;
    info.negate = op.op == "subtract";
    info.src1Dims = padRank(in(op, 0), ys.size());
  } else {
    throw Error("oneDNN broadcasts only the second operand, and " + shapeStr(in(op, 0)) + " with " +
                shapeStr(in(op, 1)) + " broadcasts " + (commutes ? "both" : "the first"));
  }
}

void analyzeBiasAdd(const OpDesc &op, OpInfo &info) {
  requireInputs(op, 2, 2);
  requireRank(op, 1, 1, "bias");
  const Dims &xs = in(op, 0);
  int64_t axis = normalizeAxis(intAttr(op, "axis", 1), xs.size());
  if (in(op, 1)[0] != xs[size_t(axis)])
    throw Error("bias length " + std::to_string(in(op, 1)[0]) + " does not match data dimension " +
                std::to_string(xs[size_t(axis)]) + " at axis " + std::to_string(axis));
  requireOutput(op, xs);
  info.kind = OpKind::Binary;
  info.alg = algorithm::binary_add;
  info.axis = axis;
  info.src1Dims.assign(xs.size(), 1);
  info.src1Dims[size_t(axis)] = xs[size_t(axis)];
}

void analyzeBatchNorm(const OpDesc &op, OpInfo &info) {
  requireInputs(op, 5, 5);
  const Dims &xs = in(op, 0);
  if (xs.size() < 2 || xs.size() > 5)
    throw Error("oneDNN normalizes tensors of rank 2 to 5, got " + op.inputs[0].str());
  int64_t axis = normalizeAxis(intAttr(op, "axis", 1), xs.size());
  if (axis != 1)
    throw Error("attribute 'axis' = " + std::to_string(axis) +
                " unsupported (oneDNN normalizes along axis 1)");
  static const char *const names[] = {"data", "gamma", "beta", "mean", "var"};
  for (size_t i = 1; i < 5; ++i)
    if (in(op, i) != Dims{xs[1]})
      throw Error("input " + std::to_string(i) + " ('" + names[i] + "') must have shape [" +
                  std::to_string(xs[1]) + "], got " + op.inputs[i].str());
  requireOutput(op, xs);
  info.kind = OpKind::BatchNorm;
  info.epsilon = float(floatAttr(op, "epsilon", 1e-5));
}

void analyzeLayerNorm(const OpDesc &op, OpInfo &info) {
  requireInputs(op, 2, 3);
  const Dims &xs = in(op, 0);
  if (xs.empty())
    throw Error("data must have rank >= 1");
  int64_t axis = normalizeAxis(intAttr(op, "axis", -1), xs.size());
  Dims inner(xs.begin() + axis, xs.end());
  for (size_t i = 1; i < op.inputs.size(); ++i)
    if (in(op, i) != inner)
      throw Error("input " + std::to_string(i) + " must have shape " + shapeStr(inner) + ", got " +
                  op.inputs[i].str());
  requireOutput(op, xs);
  info.kind = OpKind::LayerNorm;
  info.axis = axis;
  info.epsilon = float(floatAttr(op, "epsilon", 1e-5));
  info.hasShift = op.inputs.size() == 3;
}

void analyzeSoftmax(const OpDesc &op, OpInfo &info) {
  requireInputs(op, 1, 1);
  info.kind = OpKind::Softmax;
  info.axis = normalizeAxis(intAttr(op, "axis", -1), in(op, 0).size());
  info.alg = op.op == "log_softmax" ? algorithm::softmax_log : algorithm::softmax_accurate;
  requireOutput(op, in(op, 0));
}

void analyzeDense(const OpDesc &op, OpInfo &info) {
  requireInputs(op, 2, 2);
  if (in(op, 0).empty())
    throw Error("input 0 ('data') must have rank >= 1, got " + op.inputs[0].str());
  requireRank(op, 1, 2, "weight");
  info.units = in(op, 1)[0];
  info.K = in(op, 1)[1];
  if (in(op, 0).back() != info.K)
    throw Error("inner dimensions do not match: data has " + std::to_string(in(op, 0).back()) +
                ", weight has " + std::to_string(info.K));
  Dims ys = in(op, 0);
  ys.back() = info.units;
  requireOutput(op, ys);
  info.rows = numel(Dims(in(op, 0).begin(), in(op, 0).end() - 1));
  info.kind = OpKind::Dense;
}

void analyzeMatmul(const OpDesc &op, OpInfo &info) {
  requireInputs(op, 2, 2);
  info.kind = OpKind::Matmul;
  Dims a = in(op, 0), b = in(op, 1), ys;
  if (op.op == "batch_matmul") {
    requireRank(op, 0, 3, "a");
    requireRank(op, 1, 3, "b");
    info.transA = boolAttr(op, "transpose_a", false);
    info.transB = boolAttr(op, "transpose_b", false);
    // Logical (untransposed) dims; the memory descs carry the transposes.
    if (info.transA)
      std::swap(a[1], a[2]);
    if (info.transB)
      std::swap(b[1], b[2]);
    if (a[0] != b[0] && a[0] != 1 && b[0] != 1)
      throw Error("batch sizes " + std::to_string(a[0]) + " and " + std::to_string(b[0]) +
                  " do not match (must be equal or 1)");
    ys = {a[0] == 1 ? b[0] : a[0], a[1], b[2]};
  } else {
    if (a.empty() || b.empty())
      throw Error("operands must have rank >= 1");
    if (a.size() == 1)
      a.insert(a.begin(), 1);
    if (b.size() == 1)
      b.push_back(1);
    Dims batch;
    if (!broadcast(Dims(a.begin(), a.end() - 2), Dims(b.begin(), b.end() - 2), batch))
      throw Error("batch dimensions " + shapeStr(a) + " and " + shapeStr(b) + " do not broadcast");
    size_t r = batch.size() + 2;
    a = padRank(a, r);
    b = padRank(b, r);
    ys = batch;
    ys.push_back(a[r - 2]);
    ys.push_back(b[r - 1]);
    Dims declared = batch;
    if (in(op, 0).size() >= 2)
      declared.push_back(a[r - 2]);
    if (in(op, 1).size() >= 2)
      declared.push_back(b[r - 1]);
    requireOutput(op, declared);
  }
  if (a.back() != b[b.size() - 2])
    throw Error("inner dimensions do not match: a has " + std::to_string(a.back()) + ", b has " +
                std::to_string(b[b.size() - 2]));
  if (op.op == "batch_matmul")
    requireOutput(op, ys);
  if (a.size() > 12)
    throw Error("rank " + std::to_string(a.size()) + " exceeds oneDNN's 12");
  info.aDims = a, info.bDims = b, info.yDims = ys;
}

/// strides, pads, dilation of a 2-D window of size kh x kw, in oneDNN terms.
void readWindow(const OpDesc &op, int64_t kh, int64_t kw, OpInfo &info) {
  Dims strides = intsAttr(op, "strides", {1, 1}, 2, 1);
  Dims pads = intsAttr(op, "pads", {0, 0, 0, 0}, 4, 0);
  Dims dilation = intsAttr(op, "dilation", {1, 1}, 2, 1);
  info.kernel = {kh, kw};
  info.strides = strides;
  info.dilation = {dilation[0] - 1, dilation[1] - 1};
  info.padL = {pads[0], pads[1]};
  info.padR = {pads[2], pads[3]};
}

int64_t extent(const OpInfo &info, int i) {
  return (info.dilation[size_t(i)] + 1) * (info.kernel[size_t(i)] - 1) + 1;
}

int64_t floorDiv(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

void analyzeConv(const OpDesc &op, OpInfo &info) {
  requireInputs(op, 2, 2);
  requireRank(op, 0, 4, "data");
  requireRank(op, 1, 4, "weight");
  const Dims &xs = in(op, 0), &ws = in(op, 1);
  if (ws[2] <= 0 || ws[3] <= 0)
    throw Error("kernel size must be positive, got " + op.inputs[1].str());
  readWindow(op, ws[2], ws[3], info);
  int64_t g = intAttr(op, "groups", 1);
  if (g <= 0)
    throw Error("attribute 'groups' must be positive, got " + std::to_string(g));
  info.groups = g;
  Dims ys;
  if (op.op == "conv2d") {
    info.kind = OpKind::Conv;
    if (xs[1] % g != 0 || ws[0] % g != 0 || xs[1] != ws[1] * g)
      throw Error("channels do not match groups " + std::to_string(g) + ": data " +
                  op.inputs[0].str() + ", weight " + op.inputs[1].str());
    ys = {xs[0], ws[0], 0, 0};
    for (int i = 0; i < 2; ++i)
      ys[2 + size_t(i)] = floorDiv(xs[2 + size_t(i)] + info.padL[size_t(i)] + info.padR[size_t(i)] -
                                       extent(info, i),
                                   info.strides[size_t(i)]) +
                          1;
  } else {
    // conv2d_transpose: weight [C, O/groups, KH, KW]; output_padding widens
    // the bottom/right, which oneDNN expresses as less right padding.
    info.kind = OpKind::Deconv;
    Dims outPad = intsAttr(op, "output_padding", {0, 0}, 2, 0);
    if (xs[1] != ws[0] || xs[1] % g != 0)
      throw Error("channels do not match groups " + std::to_string(g) + ": data " +
                  op.inputs[0].str() + ", weight " + op.inputs[1].str());
    ys = {xs[0], ws[1] * g, 0, 0};
    for (int i = 0; i < 2; ++i) {
      size_t k = size_t(i);
      ys[2 + k] = info.strides[k] * (xs[2 + k] - 1) + outPad[k] + extent(info, i) - info.padL[k] -
                  info.padR[k];
      info.padR[k] -= outPad[k];
      if (info.padR[k] < 0)
        throw Error("attribute 'output_padding' larger than the bottom/right pads unsupported");
    }
  }
  if (ys[2] <= 0 || ys[3] <= 0)
    throw Error("computed output size [" + std::to_string(ys[2]) + ", " + std::to_string(ys[3]) +
                "] is not positive");
  requireOutput(op, ys);
}

void analyzePool(const OpDesc &op, OpInfo &info) {
  requireInputs(op, 1, 1);
  requireRank(op, 0, 4, "data");
  const Dims &xs = in(op, 0);
  info.kind = OpKind::Pool;
  if (op.op == "global_avg_pool2d" || op.op == "global_max_pool2d") {
    if (xs[2] * xs[3] == 0)
      throw Error("spatial size must not be empty, got " + op.inputs[0].str());
    info.kernel = {xs[2], xs[3]};
    info.strides = {1, 1};
    info.dilation = {0, 0};
    info.padL = info.padR = {0, 0};
    info.alg = op.op == "global_max_pool2d" ? algorithm::pooling_max
                                            : algorithm::pooling_avg_exclude_padding;
    requireOutput(op, {xs[0], xs[1], 1, 1});
    return;
  }
  if (!op.attrs.has("pool_size"))
    throw Error("missing attribute 'pool_size'");
  Dims size = intsAttr(op, "pool_size", {}, 2, 1);
  readWindow(op, size[0], size[1], info);
  bool max = op.op == "max_pool2d";
  bool ceilMode = boolAttr(op, "ceil_mode", false);
  bool includePad = !max && boolAttr(op, "count_include_pad", false);
  info.alg = max          ? algorithm::pooling_max
             : includePad ? algorithm::pooling_avg_include_padding
                          : algorithm::pooling_avg_exclude_padding;
  Dims ys{xs[0], xs[1], 0, 0};
  for (int i = 0; i < 2; ++i) {
    size_t k = size_t(i);
    int64_t span = xs[2 + k] + info.padL[k] + info.padR[k] - extent(info, i);
    int64_t s = info.strides[k];
    int64_t o = (ceilMode ? -floorDiv(-span, s) : floorDiv(span, s)) + 1;
    if (ceilMode && o > 0 && (o - 1) * s >= xs[2 + k] + info.padL[k])
      --o;
    ys[2 + k] = o;
    // oneDNN has no ceil_mode: widen the right padding so that its floor
    // gives the same size. Max pooling ignores padding; average pooling
    // without count_include_pad too; with it, the widened taps would count.
    int64_t padR = (o - 1) * s + extent(info, i) - xs[2 + k] - info.padL[k];
    if (padR > info.padR[k] && includePad)
      throw Error("ceil_mode with count_include_pad unsupported when the last window passes the "
                  "padding");
    info.padR[k] = std::max(info.padR[k], padR);
  }
  if (ys[2] <= 0 || ys[3] <= 0)
    throw Error("computed output size [" + std::to_string(ys[2]) + ", " + std::to_string(ys[3]) +
                "] is not positive");
  requireOutput(op, ys);
}

void analyzeConcat(const OpDesc &op, OpInfo &info) {
  if (op.inputs.empty())
    throw Error("expects at least 1 input, got 0");
  const Dims &s0 = in(op, 0);
  if (s0.empty())
    throw Error("inputs must have rank >= 1");
  int64_t axis = normalizeAxis(intAttr(op, "axis", 0), s0.size());
  Dims ys = s0;
  ys[size_t(axis)] = 0;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const Dims &s = in(op, i);
    bool ok = s.size() == s0.size();
    for (size_t d = 0; ok && d < s.size(); ++d)
      ok = d == size_t(axis) || s[d] == s0[d];
    if (!ok)
      throw Error("input " + std::to_string(i) + " " + op.inputs[i].str() +
                  " does not match input 0 " + op.inputs[0].str() + " outside axis " +
                  std::to_string(axis));
    if (s[size_t(axis)] == 0)
      throw Error("input " + std::to_string(i) + " is empty along axis " + std::to_string(axis));
    ys[size_t(axis)] += s[size_t(axis)];
  }
  requireOutput(op, ys);
  info.kind = OpKind::Concat;
  info.axis = axis;
}

// resize2d: oneDNN's resampling maps output x to (x + 0.5) * in / out - 0.5
// (half_pixel, with the scale the sizes give); linear interpolates between
// the clamped neighbours, nearest takes floor(that + 0.5) (ties up:
// round_prefer_ceil). Every other mode is declined.
void analyzeResize(const OpDesc &op, OpInfo &info) {
  requireInputs(op, 1, 1);
  requireRank(op, 0, 4, "data");
  const Dims &xs = in(op, 0);
  if (!op.attrs.has("size"))
    throw Error("missing attribute 'size'");
  Dims size = intsAttr(op, "size", {}, 2, 1);
  requireOutput(op, {xs[0], xs[1], size[0], size[1]});
  std::string mode = stringAttr(op, "mode", "nearest");
  std::string coord = stringAttr(op, "coordinate_transformation_mode", "half_pixel");
  std::string nearest = stringAttr(op, "nearest_mode", "round_prefer_floor");
  if (coord != "half_pixel")
    throw Error("coordinate_transformation_mode \"" + coord +
                "\" unsupported (oneDNN resamples half_pixel)");
  if (mode == "linear") {
    if (boolAttr(op, "exclude_outside", false))
      throw Error("attribute 'exclude_outside' unsupported");
    info.alg = algorithm::resampling_linear;
  } else if (mode == "nearest") {
    if (nearest != "round_prefer_ceil")
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
  requireInputs(op, 1, 1);
  if (numel(in(op, 0)) != numel(op.outputs[0].shape))
    throw Error("the declared output " + op.outputs[0].str() + " does not have the elements of " +
                op.inputs[0].str());
  info.kind = OpKind::View;
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
      {"resize2d", analyzeResize},
  };
  return t;
}

} // namespace

int64_t normalizeAxis(int64_t axis, size_t rank, const char *attr) {
  int64_t r = int64_t(rank);
  if (axis < -r || axis >= r)
    throw Error("attribute '" + std::string(attr) + "' = " + std::to_string(axis) +
                " is out of range for rank " + std::to_string(r));
  return axis < 0 ? axis + r : axis;
}

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
    std::vector<std::string> v;
    for (const auto &entry : table())
      v.push_back(entry.first);
    return v;
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
  auto it = table().find(op.op);
  if (it == table().end())
    throw Error("op unsupported");
  if (op.outputs.size() != 1)
    throw Error("expects 1 result, got " + std::to_string(op.outputs.size()));
  for (const auto *types : {&op.inputs, &op.outputs})
    for (const sdk::TensorType &t : *types)
      if (!(t.dtype == DLDataType{kDLFloat, 32, 1}))
        throw Error("only f32, got " + sdk::dtypeName(t.dtype));
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
