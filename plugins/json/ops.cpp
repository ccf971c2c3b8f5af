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

#include "tessera/sdk/op_helpers.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>

namespace tessera::json_plugin {

// The shape checks and attribute readers are the SDK's op helpers
// (tessera/sdk/op_helpers.hpp).
using namespace sdk;

namespace {

using Consts = std::span<const float *const>;
using Prepare = Kernel (*)(const OpDesc &, Consts, const Fusion &);

void noFusion(const OpDesc &op, const Fusion &f) {
  if (f.bias || f.act.kind != UnaryKind::Identity)
    throw Error("op '" + op.op + "' cannot take a fused bias or activation");
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

Kernel prepareUnary(const OpDesc &op, Consts, const Fusion &fusion) {
  noFusion(op, fusion);
  checkUnary(op);
  Unary f = *activationOf(op);
  int64_t n = numel(inputShape(op, 0));
  return [f, n](std::span<const float *const> x, float *y) { unary(f, x[0], y, n); };
}

template <BinaryKind K> Kernel prepareBinary(const OpDesc &op, Consts, const Fusion &fusion) {
  noFusion(op, fusion);
  Shape ys = checkBroadcastBinary(op);
  const Shape &as = inputShape(op, 0), &bs = inputShape(op, 1);
  return [as, bs, ys](std::span<const float *const> x, float *y) {
    binary(K, x[0], as, x[1], bs, y, ys);
  };
}

Kernel prepareBiasAdd(const OpDesc &op, Consts, const Fusion &fusion) {
  noFusion(op, fusion);
  int64_t axis = checkBiasAdd(op);
  return [xs = inputShape(op, 0), axis](std::span<const float *const> x, float *y) {
    biasAdd(x[0], xs, axis, x[1], y);
  };
}

Kernel prepareBatchNorm(const OpDesc &op, Consts, const Fusion &fusion) {
  noFusion(op, fusion);
  BatchNormParams p = checkBatchNorm(op);
  return [xs = inputShape(op, 0), p](std::span<const float *const> x, float *y) {
    batchNorm(x[0], xs, p.axis, x[1], x[2], x[3], x[4], p.epsilon, y);
  };
}

template <bool Log> Kernel prepareSoftmax(const OpDesc &op, Consts, const Fusion &fusion) {
  noFusion(op, fusion);
  int64_t axis = checkSoftmax(op);
  return [xs = inputShape(op, 0), axis](std::span<const float *const> x, float *y) {
    softmax(x[0], xs, axis, Log, y);
  };
}

//===----------------------------------------------------------------------===//
// Products
//===----------------------------------------------------------------------===//

// dense(data [..., K], weight [U, K]) -> [..., U]. The weight is transposed
// to [K, U] so that the product runs i-k-j; a constant weight is transposed
// once, here (the "pre-pack" a vendor library would do in init).
Kernel prepareDense(const OpDesc &op, Consts consts, const Fusion &fusion) {
  DenseDims d = checkDense(op, fusion.bias);
  int64_t rows = d.rows, K = d.K, U = d.units;
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
  checkMatmul(op);
  const Shape &as = inputShape(op, 0), &bs = inputShape(op, 1);
  return [as, bs](std::span<const float *const> x, float *y) { matmul(x[0], as, x[1], bs, y); };
}

Kernel prepareBatchMatmul(const OpDesc &op, Consts, const Fusion &fusion) {
  noFusion(op, fusion);
  BatchMatmulDims d = checkBatchMatmul(op);
  const Shape &a = inputShape(op, 0), &b = inputShape(op, 1), &ys = outputShape(op);
  return [a, b, d, ys](std::span<const float *const> x, float *y) {
    batchMatmul(x[0], a, d.transA, x[1], b, d.transB, y, ys);
  };
}

//===----------------------------------------------------------------------===//
// Sliding windows
//===----------------------------------------------------------------------===//

// conv2d(data [N, C, H, W], weight [O, C/groups, KH, KW]), grouped and
// dilated, zero padding (ONNX Conv).
Kernel prepareConv2d(const OpDesc &op, Consts, const Fusion &fusion) {
  Conv2dParams p = checkConv2d(op, fusion.bias);
  const Shape &xs = inputShape(op, 0), &ws = inputShape(op, 1);
  return [xs, ws, p, fusion](std::span<const float *const> x, float *y) {
    conv2d(x[0], xs, x[1], ws, p.window, p.groups, y, p.output, fusion.bias ? x[2] : nullptr,
           fusion.act);
  };
}

template <bool Max> Kernel preparePool2d(const OpDesc &op, Consts, const Fusion &fusion) {
  noFusion(op, fusion);
  Pool2dParams p = checkPool2d(op);
  return [xs = inputShape(op, 0), p](std::span<const float *const> x, float *y) {
    if constexpr (Max)
      maxPool2d(x[0], xs, p.window, y, p.output);
    else
      avgPool2d(x[0], xs, p.window, p.countIncludePad, y, p.output);
  };
}

template <bool Max> Kernel prepareGlobalPool(const OpDesc &op, Consts, const Fusion &fusion) {
  noFusion(op, fusion);
  checkGlobalPool2d(op);
  return [xs = inputShape(op, 0)](std::span<const float *const> x, float *y) {
    globalPool2d(x[0], xs, Max, y);
  };
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

// reshape, flatten, squeeze, unsqueeze keep the row-major element order: the
// declared output shape (inferred by the core) says everything, the kernel
// copies the bytes.
Kernel prepareCopy(const OpDesc &op, Consts, const Fusion &fusion) {
  noFusion(op, fusion);
  checkView(op);
  int64_t n = numel(inputShape(op, 0));
  return [n](std::span<const float *const> x, float *y) {
    if (n > 0)
      std::memcpy(y, x[0], size_t(n) * sizeof(float));
  };
}

Kernel prepareTranspose(const OpDesc &op, Consts, const Fusion &fusion) {
  noFusion(op, fusion);
  Shape perm = checkTranspose(op);
  const Shape &xs = inputShape(op, 0);
  return [xs, perm](std::span<const float *const> x, float *y) { transpose(x[0], xs, perm, y); };
}

Kernel prepareConcat(const OpDesc &op, Consts, const Fusion &fusion) {
  noFusion(op, fusion);
  int64_t axis = checkConcat(op);
  std::vector<Shape> shapes;
  for (const TensorType &t : op.inputs)
    shapes.push_back(t.shape);
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
      {"silu", prepareUnary},
      {"mish", prepareUnary},
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

const std::vector<std::string> &supportedOps() {
  static const std::vector<std::string> ops = keysOf(prepareTable());
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
      {"silu", UnaryKind::Silu},
      {"mish", UnaryKind::Mish},
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
  requireResults(op, 1);
  requireDType(op, DLDataType{kDLFloat, 32, 1});
  std::vector<const float *> consts(constants.begin(), constants.end());
  consts.resize(op.inputs.size(), nullptr);
  return it->second(op, consts, fusion);
}

} // namespace tessera::json_plugin
