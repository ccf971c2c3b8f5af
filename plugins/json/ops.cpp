//===- plugins/json/ops.cpp - The ops the json plugin runs ----------------===//
//
// For each supported core op: read its attributes (with the defaults of
// docs/ops.md, so that a hand-written graph may leave them out), check the
// call the way the core's type relation does, and return a Kernel that
// captures everything static. A vendor adding an op adds one entry to
// kPrepare and, usually, one kernel to kernels.cpp.
//
//===----------------------------------------------------------------------===//
#include "ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>

namespace tessera::json_plugin {


using sdk::Error;
using sdk::OpDesc;

namespace {

using Consts = std::span<const float *const>;
using Prepare = Kernel (*)(const OpDesc &, Consts, const Fusion &);

std::string shapeStr(std::span<const int64_t> s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i)
    out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

//===----------------------------------------------------------------------===//
// Attributes, with the defaults of docs/ops.md
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
std::vector<int64_t> intsAttr(const OpDesc &op, const char *name, std::vector<int64_t> dflt) {
  return op.attrs.has(name) ? op.attrs.getInts(name) : dflt;
}

/// An int list of `n` values, each at least `min`.
std::vector<int64_t> intsAttr(const OpDesc &op, const char *name, std::vector<int64_t> dflt,
                              size_t n, int64_t min) {
  std::vector<int64_t> v = intsAttr(op, name, std::move(dflt));
  if (v.size() != n)
    throw Error("attribute '" + std::string(name) + "' must have " + std::to_string(n) +
                " values, got " + std::to_string(v.size()));
  for (int64_t x : v)
    if (x < min)
      throw Error("attribute '" + std::string(name) + "' must be " +
                  (min > 0 ? "positive" : "non-negative") + ", got " + shapeStr(v));
  return v;
}

//===----------------------------------------------------------------------===//
// Shape checks
//===----------------------------------------------------------------------===//

const Shape &in(const OpDesc &op, size_t i) {
  return op.inputs[i].shape;
}
const Shape &out(const OpDesc &op) {
  return op.outputs[0].shape;
}

void requireInputs(const OpDesc &op, size_t n) {
  if (op.inputs.size() != n)
    throw Error("expects " + std::to_string(n) + " inputs, got " +
                std::to_string(op.inputs.size()));
}

void requireRank(const OpDesc &op, size_t i, size_t rank, const char *name) {
  if (in(op, i).size() != rank)
    throw Error("input " + std::to_string(i) + " ('" + name + "') must have rank " +
                std::to_string(rank) + ", got " + op.inputs[i].str());
}

void requireMinRank(const OpDesc &op, size_t i, size_t rank, const char *name) {
  if (in(op, i).size() < rank)
    throw Error("input " + std::to_string(i) + " ('" + name +
                "') must have rank >= " + std::to_string(rank) + ", got " + op.inputs[i].str());
}

/// The declared output shape must be the one the op computes.
void requireOutput(const OpDesc &op, const Shape &computed) {
  if (out(op) != computed)
    throw Error("the declared output " + op.outputs[0].str() + " is not the computed shape " +
                shapeStr(computed));
}

/// numpy broadcasting; false when the shapes do not broadcast.
bool broadcast(const Shape &a, const Shape &b, Shape &result) {
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

void noFusion(const OpDesc &op, const Fusion &f) {
  if (f.bias || f.act.kind != UnaryKind::Identity)
    throw Error("op '" + op.op + "' cannot take a fused bias or activation");
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

Kernel prepareUnary(const OpDesc &op, Consts, const Fusion &fusion) {
  noFusion(op, fusion);
  requireInputs(op, 1);
  requireOutput(op, in(op, 0));
  Unary f = *activationOf(op);
  int64_t n = numel(in(op, 0));
  return [f, n](std::span<const float *const> x, float *y) { unary(f, x[0], y, n); };
}

template <BinaryKind K> Kernel prepareBinary(const OpDesc &op, Consts, const Fusion &fusion) {
  noFusion(op, fusion);
  requireInputs(op, 2);
  Shape ys;
  if (!broadcast(in(op, 0), in(op, 1), ys))
    throw Error("cannot broadcast " + shapeStr(in(op, 0)) + " with " + shapeStr(in(op, 1)));
  requireOutput(op, ys);
  return [as = in(op, 0), bs = in(op, 1), ys](std::span<const float *const> x, float *y) {
    binary(K, x[0], as, x[1], bs, y, ys);
  };
}

Kernel prepareBiasAdd(const OpDesc &op, Consts, const Fusion &fusion) {
  noFusion(op, fusion);
  requireInputs(op, 2);
  requireRank(op, 1, 1, "bias");
  int64_t axis = normalizeAxis(intAttr(op, "axis", 1), in(op, 0).size());
  if (in(op, 1)[0] != in(op, 0)[size_t(axis)])
    throw Error("bias length " + std::to_string(in(op, 1)[0]) + " does not match data dimension " +
                std::to_string(in(op, 0)[size_t(axis)]) + " at axis " + std::to_string(axis));
  requireOutput(op, in(op, 0));
  return [xs = in(op, 0), axis](std::span<const float *const> x, float *y) {
    biasAdd(x[0], xs, axis, x[1], y);
  };
}

Kernel prepareBatchNorm(const OpDesc &op, Consts, const Fusion &fusion) {
  noFusion(op, fusion);
  requireInputs(op, 5);
  int64_t axis = normalizeAxis(intAttr(op, "axis", 1), in(op, 0).size());
  double eps = floatAttr(op, "epsilon", 1e-5);
  static const char *const names[] = {"data", "gamma", "beta", "mean", "var"};
  Shape c{in(op, 0)[size_t(axis)]};
  for (size_t i = 1; i < 5; ++i)
    if (in(op, i) != c)
      throw Error("input " + std::to_string(i) + " ('" + names[i] + "') must have shape " +
                  shapeStr(c) + ", got " + op.inputs[i].str());
  requireOutput(op, in(op, 0));
  return [xs = in(op, 0), axis, eps](std::span<const float *const> x, float *y) {
    batchNorm(x[0], xs, axis, x[1], x[2], x[3], x[4], eps, y);
  };
}

template <bool Log> Kernel prepareSoftmax(const OpDesc &op, Consts, const Fusion &fusion) {
  noFusion(op, fusion);
  requireInputs(op, 1);
  int64_t axis = normalizeAxis(intAttr(op, "axis", -1), in(op, 0).size());
  requireOutput(op, in(op, 0));
  return [xs = in(op, 0), axis](std::span<const float *const> x, float *y) {
    softmax(x[0], xs, axis, Log, y);
  };
}

//===----------------------------------------------------------------------===//
// Products
//===----------------------------------------------------------------------===//

/// The fused bias of a conv2d/dense: the extra input, holding `n` values.
void checkFusedBias(const OpDesc &op, const Fusion &fusion, int64_t n) {
  if (fusion.bias && numel(in(op, 2)) != n)
    throw Error("the fused bias " + op.inputs[2].str() + " does not hold " + std::to_string(n) +
                " values");
}

// dense(data [..., K], weight [U, K]) -> [..., U]. The weight is transposed
// to [K, U] so that the product runs i-k-j; a constant weight is transposed
// once, here (the "pre-pack" a vendor library would do in init).
Kernel prepareDense(const OpDesc &op, Consts consts, const Fusion &fusion) {
  requireInputs(op, fusion.bias ? 3 : 2);
  requireMinRank(op, 0, 1, "data");
  requireRank(op, 1, 2, "weight");
  int64_t U = in(op, 1)[0], K = in(op, 1)[1];
  checkFusedBias(op, fusion, U);
  if (in(op, 0).back() != K)
    throw Error("inner dimensions do not match: data has " + std::to_string(in(op, 0).back()) +
                ", weight has " + std::to_string(K));
  Shape ys = in(op, 0);
  ys.back() = U;
  requireOutput(op, ys);
  int64_t rows = numel(std::span(in(op, 0)).first(in(op, 0).size() - 1));
  std::shared_ptr<const std::vector<float>> packed;
  if (consts.size() > 1 && consts[1]) {
    auto wT = std::make_shared<std::vector<float>>(size_t(K * U));
    transpose2d(consts[1], U, K, wT->data());
    packed = std::move(wT);
  }
  return [rows, K, U, packed, fusion](std::span<const float *const> x, float *y) {
    std::vector<float> scratch;
    const float *wT = packed ? packed->data() : nullptr;
    if (!wT) {
      scratch.resize(size_t(K * U));
      transpose2d(x[1], U, K, scratch.data());
      wT = scratch.data();
    }
    Epilogue epi;
    epi.colBias = fusion.bias ? x[2] : nullptr;
    epi.act = fusion.act;
    denseTransposed(x[0], rows, K, wT, U, y, epi);
  };
}

// matmul: numpy / ONNX MatMul (1-D promotion, broadcast batch dims).
Kernel prepareMatmul(const OpDesc &op, Consts, const Fusion &fusion) {
  noFusion(op, fusion);
  requireInputs(op, 2);
  requireMinRank(op, 0, 1, "a");
  requireMinRank(op, 1, 1, "b");
  Shape a = in(op, 0), b = in(op, 1);
  if (a.size() == 1)
    a.insert(a.begin(), 1);
  if (b.size() == 1)
    b.push_back(1);
  if (a.back() != b[b.size() - 2])
    throw Error("inner dimensions do not match: a has " + std::to_string(a.back()) + ", b has " +
                std::to_string(b[b.size() - 2]));
  Shape batch;
  if (!broadcast(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2), batch))
    throw Error("batch dimensions " + shapeStr(a) + " and " + shapeStr(b) + " do not broadcast");
  Shape ys = batch;
  if (in(op, 0).size() >= 2)
    ys.push_back(a[a.size() - 2]);
  if (in(op, 1).size() >= 2)
    ys.push_back(b.back());
  requireOutput(op, ys);
  return [as = in(op, 0), bs = in(op, 1)](std::span<const float *const> x, float *y) {
    matmul(x[0], as, x[1], bs, y);
  };
}

Kernel prepareBatchMatmul(const OpDesc &op, Consts, const Fusion &fusion) {
  noFusion(op, fusion);
  requireInputs(op, 2);
  requireRank(op, 0, 3, "a");
  requireRank(op, 1, 3, "b");
  const Shape &a = in(op, 0), &b = in(op, 1);
  bool ta = boolAttr(op, "transpose_a", false), tb = boolAttr(op, "transpose_b", false);
  int64_t M = ta ? a[2] : a[1], K = ta ? a[1] : a[2];
  int64_t K2 = tb ? b[2] : b[1], N = tb ? b[1] : b[2];
  if (a[0] != b[0] && a[0] != 1 && b[0] != 1)
    throw Error("batch sizes " + std::to_string(a[0]) + " and " + std::to_string(b[0]) +
                " do not match (must be equal or 1)");
  if (K != K2)
    throw Error("inner dimensions do not match: a has " + std::to_string(K) + ", b has " +
                std::to_string(K2));
  Shape ys{a[0] == 1 ? b[0] : a[0], M, N};
  requireOutput(op, ys);
  return [a, b, ta, tb, ys](std::span<const float *const> x, float *y) {
    batchMatmul(x[0], a, ta, x[1], b, tb, y, ys);
  };
}

//===----------------------------------------------------------------------===//
// Sliding windows
//===----------------------------------------------------------------------===//

int64_t floorDiv(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
int64_t ceilDiv(int64_t a, int64_t b) {
  return -floorDiv(-a, b);
}

/// strides, pads and dilation of a window of size kh x kw.
Window readWindow(const OpDesc &op, int64_t kh, int64_t kw) {
  auto strides = intsAttr(op, "strides", {1, 1}, 2, 1);
  auto pads = intsAttr(op, "pads", {0, 0, 0, 0}, 4, 0);
  auto dilation = intsAttr(op, "dilation", {1, 1}, 2, 1);
  Window w;
  w.k[0] = kh, w.k[1] = kw;
  for (int i = 0; i < 2; ++i) {
    w.s[i] = strides[size_t(i)];
    w.d[i] = dilation[size_t(i)];
    w.p0[i] = pads[size_t(i)];
    w.p1[i] = pads[size_t(i) + 2];
  }
  return w;
}

int64_t extent(const Window &w, int i) {
  return w.d[i] * (w.k[i] - 1) + 1;
}

void requirePositiveOutput(int64_t oh, int64_t ow) {
  if (oh <= 0 || ow <= 0)
    throw Error("computed output size [" + std::to_string(oh) + ", " + std::to_string(ow) +
                "] is not positive");
}

// conv2d(data [N, C, H, W], weight [O, C/groups, KH, KW]), grouped and
// dilated, zero padding (ONNX Conv).
Kernel prepareConv2d(const OpDesc &op, Consts, const Fusion &fusion) {
  requireInputs(op, fusion.bias ? 3 : 2);
  requireRank(op, 0, 4, "data");
  requireRank(op, 1, 4, "weight");
  const Shape &xs = in(op, 0), &ws = in(op, 1);
  checkFusedBias(op, fusion, ws[0]);
  if (ws[2] <= 0 || ws[3] <= 0)
    throw Error("kernel size [" + std::to_string(ws[2]) + ", " + std::to_string(ws[3]) +
                "] must be positive");
  Window win = readWindow(op, ws[2], ws[3]);
  int64_t groups = intAttr(op, "groups", 1);
  if (groups <= 0)
    throw Error("attribute 'groups' must be positive, got " + std::to_string(groups));
  if (xs[1] % groups != 0 || ws[0] % groups != 0 || xs[1] != ws[1] * groups)
    throw Error("channels do not match groups " + std::to_string(groups) + ": data " +
                op.inputs[0].str() + ", weight " + op.inputs[1].str());
  int64_t o[2];
  for (int i = 0; i < 2; ++i)
    o[i] = floorDiv(xs[2 + size_t(i)] + win.p0[i] + win.p1[i] - extent(win, i), win.s[i]) + 1;
  requirePositiveOutput(o[0], o[1]);
  Shape ys{xs[0], ws[0], o[0], o[1]};
  requireOutput(op, ys);
  return [xs, ws, win, groups, ys, fusion](std::span<const float *const> x, float *y) {
    conv2d(x[0], xs, x[1], ws, win, groups, y, ys, fusion.bias ? x[2] : nullptr, fusion.act);
  };
}

// Pooling output size per spatial dim (ONNX MaxPool / AveragePool):
//   floor_or_ceil((in + pads - (dilation*(k-1) + 1)) / stride) + 1, and with
// ceil_mode a last window that would start in the right padding is dropped.
template <bool Max> Kernel preparePool2d(const OpDesc &op, Consts, const Fusion &fusion) {
  noFusion(op, fusion);
  requireInputs(op, 1);
  requireRank(op, 0, 4, "data");
  if (!op.attrs.has("pool_size"))
    throw Error("missing attribute 'pool_size'");
  auto size = intsAttr(op, "pool_size", {}, 2, 1);
  Window win = readWindow(op, size[0], size[1]);
  bool ceilMode = boolAttr(op, "ceil_mode", false);
  bool includePad = Max ? false : boolAttr(op, "count_include_pad", false);
  const Shape &xs = in(op, 0);
  int64_t o[2];
  for (int i = 0; i < 2; ++i) {
    int64_t span = xs[2 + size_t(i)] + win.p0[i] + win.p1[i] - extent(win, i);
    o[i] = (ceilMode ? ceilDiv(span, win.s[i]) : floorDiv(span, win.s[i])) + 1;
    if (ceilMode && o[i] > 0 && (o[i] - 1) * win.s[i] >= xs[2 + size_t(i)] + win.p0[i])
      --o[i];
  }
  requirePositiveOutput(o[0], o[1]);
  Shape ys{xs[0], xs[1], o[0], o[1]};
  requireOutput(op, ys);
  return [xs, win, includePad, ys](std::span<const float *const> x, float *y) {
    if constexpr (Max)
      maxPool2d(x[0], xs, win, y, ys);
    else
      avgPool2d(x[0], xs, win, includePad, y, ys);
  };
}

template <bool Max> Kernel prepareGlobalPool(const OpDesc &op, Consts, const Fusion &fusion) {
  noFusion(op, fusion);
  requireInputs(op, 1);
  requireRank(op, 0, 4, "data");
  const Shape &xs = in(op, 0);
  if (xs[2] * xs[3] == 0)
    throw Error("spatial size [" + std::to_string(xs[2]) + ", " + std::to_string(xs[3]) +
                "] must not be empty");
  requireOutput(op, {xs[0], xs[1], 1, 1});
  return [xs](std::span<const float *const> x, float *y) { globalPool2d(x[0], xs, Max, y); };
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

// reshape, flatten, squeeze, unsqueeze keep the row-major element order: the
// declared output shape (inferred by the core) says everything, the kernel
// copies the bytes.
Kernel prepareCopy(const OpDesc &op, Consts, const Fusion &fusion) {
  noFusion(op, fusion);
  requireInputs(op, 1);
  int64_t n = numel(in(op, 0));
  if (numel(out(op)) != n)
    throw Error("the declared output " + op.outputs[0].str() + " does not have the " +
                std::to_string(n) + " elements of " + op.inputs[0].str());
  return [n](std::span<const float *const> x, float *y) {
    if (n > 0)
      std::memcpy(y, x[0], size_t(n) * sizeof(float));
  };
}

Kernel prepareTranspose(const OpDesc &op, Consts, const Fusion &fusion) {
  noFusion(op, fusion);
  requireInputs(op, 1);
  const Shape &xs = in(op, 0);
  std::vector<int64_t> perm = intsAttr(op, "perm", {});
  if (perm.empty())
    for (size_t i = xs.size(); i-- > 0;)
      perm.push_back(int64_t(i));
  std::vector<bool> seen(xs.size(), false);
  bool ok = perm.size() == xs.size();
  for (size_t i = 0; ok && i < perm.size(); ++i) {
    ok = perm[i] >= 0 && size_t(perm[i]) < xs.size() && !seen[size_t(perm[i])];
    if (ok)
      seen[size_t(perm[i])] = true;
  }
  if (!ok)
    throw Error("attribute 'perm' = " + shapeStr(perm) + " is not a permutation of the " +
                std::to_string(xs.size()) + " dims");
  Shape ys(xs.size());
  for (size_t i = 0; i < xs.size(); ++i)
    ys[i] = xs[size_t(perm[i])];
  requireOutput(op, ys);
  return [xs, perm](std::span<const float *const> x, float *y) { transpose(x[0], xs, perm, y); };
}

Kernel prepareConcat(const OpDesc &op, Consts, const Fusion &fusion) {
  noFusion(op, fusion);
  if (op.inputs.empty())
    throw Error("expects at least 1 input, got 0");
  const Shape &s0 = in(op, 0);
  int64_t axis = normalizeAxis(intAttr(op, "axis", 0), s0.size());
  Shape ys = s0;
  ys[size_t(axis)] = 0;
  std::vector<Shape> shapes;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const Shape &s = in(op, i);
    bool ok = s.size() == s0.size();
    for (size_t d = 0; ok && d < s.size(); ++d)
      ok = d == size_t(axis) || s[d] == s0[d];
    if (!ok)
      throw Error("input " + std::to_string(i) + " " + op.inputs[i].str() +
                  " does not match input 0 " + op.inputs[0].str() + " outside axis " +
                  std::to_string(axis));
    ys[size_t(axis)] += s[size_t(axis)];
    shapes.push_back(s);
  }
  requireOutput(op, ys);
  return [shapes, axis](std::span<const float *const> x, float *y) { concat(x, shapes, axis, y); };
}

//===----------------------------------------------------------------------===//
// The table
//===----------------------------------------------------------------------===//

const std::map<std::string, Prepare, std::less<>> &prepareTable() {
  static const std::map<std::string, Prepare, std::less<>> table = {
      // elementwise binary, numpy broadcasting
      {"add", prepareBinary<BinaryKind::Add>},
      {"subtract", prepareBinary<BinaryKind::Subtract>},
      {"multiply", prepareBinary<BinaryKind::Multiply>},
      {"divide", prepareBinary<BinaryKind::Divide>},
      {"power", prepareBinary<BinaryKind::Power>},
      {"maximum", prepareBinary<BinaryKind::Maximum>},
      {"minimum", prepareBinary<BinaryKind::Minimum>},
      // elementwise unary and activations (activationOf reads the attributes)
      {"relu", prepareUnary},
      {"leaky_relu", prepareUnary},
      {"sigmoid", prepareUnary},
      {"tanh", prepareUnary},
      {"clip", prepareUnary},
      {"hard_sigmoid", prepareUnary},
      {"hard_swish", prepareUnary},
      {"gelu", prepareUnary},
      {"exp", prepareUnary},
      {"log", prepareUnary},
      {"sqrt", prepareUnary},
      {"abs", prepareUnary},
      {"neg", prepareUnary},
      {"erf", prepareUnary},
      {"reciprocal", prepareUnary},
      {"floor", prepareUnary},
      {"ceil", prepareUnary},
      // normalisation and softmax
      {"bias_add", prepareBiasAdd},
      {"batch_norm", prepareBatchNorm},
      {"softmax", prepareSoftmax<false>},
      {"log_softmax", prepareSoftmax<true>},
      // products
      {"dense", prepareDense},
      {"matmul", prepareMatmul},
      {"batch_matmul", prepareBatchMatmul},
      // sliding windows
      {"conv2d", prepareConv2d},
      {"max_pool2d", preparePool2d<true>},
      {"avg_pool2d", preparePool2d<false>},
      {"global_avg_pool2d", prepareGlobalPool<false>},
      {"global_max_pool2d", prepareGlobalPool<true>},
      // data movement
      {"reshape", prepareCopy},
      {"flatten", prepareCopy},
      {"squeeze", prepareCopy},
      {"unsqueeze", prepareCopy},
      {"transpose", prepareTranspose},
      {"concat", prepareConcat},
  };
  return table;
}

} // namespace

int64_t normalizeAxis(int64_t axis, size_t rank, const char *attr) {
  int64_t r = int64_t(rank);
  if (axis < -r || axis >= r)
    throw Error("attribute '" + std::string(attr) + "' = " + std::to_string(axis) +
                " is out of range for rank " + std::to_string(r) + " (expected " +
                std::to_string(-r) + ".." + std::to_string(r - 1) + ")");
  return axis < 0 ? axis + r : axis;
}

const std::vector<std::string> &supportedOps() {
  static const std::vector<std::string> ops = [] {
    std::vector<std::string> v;
    for (const auto &entry : prepareTable())
      v.push_back(entry.first);
    return v;
  }();
  return ops;
}

std::optional<Unary> activationOf(const OpDesc &op) {
  static const std::map<std::string, UnaryKind, std::less<>> kinds = {
      {"relu", UnaryKind::Relu},
      {"leaky_relu", UnaryKind::LeakyRelu},
      {"sigmoid", UnaryKind::Sigmoid},
      {"tanh", UnaryKind::Tanh},
      {"clip", UnaryKind::Clip},
      {"hard_sigmoid", UnaryKind::HardSigmoid},
      {"hard_swish", UnaryKind::HardSwish},
      {"gelu", UnaryKind::Gelu},
      {"exp", UnaryKind::Exp},
      {"log", UnaryKind::Log},
      {"sqrt", UnaryKind::Sqrt},
      {"abs", UnaryKind::Abs},
      {"neg", UnaryKind::Neg},
      {"erf", UnaryKind::Erf},
      {"reciprocal", UnaryKind::Reciprocal},
      {"floor", UnaryKind::Floor},
      {"ceil", UnaryKind::Ceil},
  };
  auto it = kinds.find(op.op);
  if (it == kinds.end())
    return std::nullopt;
  Unary f{it->second, 0, 0};
  constexpr double inf = std::numeric_limits<double>::infinity();
  switch (f.kind) {
  case UnaryKind::LeakyRelu: f.a = floatAttr(op, "alpha", 0.01); break;
  case UnaryKind::Clip:
    f.a = floatAttr(op, "min", -inf);
    f.b = floatAttr(op, "max", inf);
    break;
  case UnaryKind::HardSigmoid:
    f.a = floatAttr(op, "alpha", 0.2);
    f.b = floatAttr(op, "beta", 0.5);
    break;
  case UnaryKind::Gelu: {
    std::string approximate = stringAttr(op, "approximate", "none");
    if (approximate == "tanh")
      f.kind = UnaryKind::GeluTanh;
    else if (approximate != "none")
      throw Error("attribute 'approximate' = \"" + approximate +
                  "\" is not supported (\"none\" or \"tanh\")");
    break;
  }
  default: break;
  }
  return f;
}

Kernel prepareOp(const OpDesc &op, std::span<const float *const> constants, const Fusion &fusion) {
  const auto &table = prepareTable();
  auto it = table.find(op.op);
  if (it == table.end())
    throw Error("op '" + op.op + "' is not supported");
  if (op.outputs.size() != 1)
    throw Error("expects 1 result, got " + std::to_string(op.outputs.size()));
  for (const auto *types : {&op.inputs, &op.outputs})
    for (const sdk::TensorType &t : *types)
      if (!(t.dtype == DLDataType{kDLFloat, 32, 1}))
        throw Error("only f32, got " + sdk::dtypeName(t.dtype));
  std::vector<const float *> consts(constants.begin(), constants.end());
  consts.resize(op.inputs.size(), nullptr);
  return it->second(op, consts, fusion);
}

} // namespace tessera::json_plugin
