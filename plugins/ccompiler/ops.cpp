//===- plugins/ccompiler/ops.cpp - Elementwise, softmax, data movement ----===//
//
// The op table, the unary functions as C expressions, broadcast binary ops,
// bias_add, batch_norm, softmax/log_softmax and the copies (reshape,
// flatten, squeeze, unsqueeze); the products and windows are in ops_nn.cpp.
// Formulas are the reference kernels' (core/ir/ops/elementwise.cpp, nn.cpp).
//
//===----------------------------------------------------------------------===//
#include "ops_internal.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <numbers>

namespace tessera::ccompiler {

using namespace detail;

//===----------------------------------------------------------------------===//
// Literals and the prelude
//===----------------------------------------------------------------------===//

std::string doubleLiteral(double v) {
  if (std::isnan(v))
    return "NAN";
  if (std::isinf(v))
    return v > 0 ? "INFINITY" : "-INFINITY";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v); // hexadecimal: exact
  return buf;
}

std::string floatLiteral(float v) {
  if (std::isnan(v))
    return "NAN";
  if (std::isinf(v))
    return v > 0 ? "INFINITY" : "-INFINITY";
  return doubleLiteral(double(v)) + "f";
}

// Helpers with the reference's NaN behaviour: clip, clamp and the minimum /
// maximum of two values let a NaN through (ONNX Min/Max propagate it).
const char *cPrelude() {
  return R"(/* Helpers (the reference kernels' formulas, in double). */
static inline double tsc_sigmoid(double x) {
  double e;
  if (x >= 0.0)
    return 1.0 / (1.0 + exp(-x));
  e = exp(x);
  return e / (1.0 + e);
}
static inline double tsc_clamp01(double v) { return v != v ? v : v < 0.0 ? 0.0 : 1.0 < v ? 1.0 : v; }
static inline double tsc_clip(double x, double lo, double hi) {
  double m;
  if (x != x)
    return x;
  m = x < lo ? lo : x;
  return hi < m ? hi : m;
}
static inline double tsc_max(double p, double q) { return p != p || q != q ? NAN : p < q ? q : p; }
static inline double tsc_min(double p, double q) { return p != p || q != q ? NAN : q < p ? q : p; }
)";
}

//===----------------------------------------------------------------------===//
// Unary ops
//===----------------------------------------------------------------------===//

std::optional<std::string> unaryExpr(const OpDesc &op) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  const std::string &n = op.op;
  if (n == "relu")
    return "(v < 0.0 ? 0.0 : v)";
  if (n == "leaky_relu")
    return "(v < 0.0 ? " + doubleLiteral(floatAttr(op, "alpha", 0.01)) + " * v : v)";
  if (n == "sigmoid")
    return "tsc_sigmoid(v)";
  if (n == "tanh")
    return "tanh(v)";
  if (n == "clip")
    return "tsc_clip(v, " + doubleLiteral(floatAttr(op, "min", -inf)) + ", " +
           doubleLiteral(floatAttr(op, "max", inf)) + ")";
  if (n == "hard_sigmoid")
    return "tsc_clamp01(" + doubleLiteral(floatAttr(op, "alpha", 0.2)) + " * v + " +
           doubleLiteral(floatAttr(op, "beta", 0.5)) + ")";
  if (n == "hard_swish")
    return "(v * tsc_clamp01(v / 6.0 + 0.5))";
  if (n == "silu")
    return "(v * tsc_sigmoid(v))";
  if (n == "mish")
    return "(v * tanh(log1p(exp(v))))";
  if (n == "gelu") {
    std::string approximate = stringAttr(op, "approximate", "none");
    if (approximate == "none")
      return "(0.5 * v * (1.0 + erf(v / sqrt(2.0))))";
    if (approximate == "tanh")
      return "(0.5 * v * (1.0 + tanh(" + doubleLiteral(std::sqrt(2.0 / std::numbers::pi)) +
             " * (v + 0.044715 * v * v * v))))";
    throw Error("attribute 'approximate' = \"" + approximate +
                "\" is not supported (\"none\" or \"tanh\")");
  }
  static const std::map<std::string, std::string, std::less<>> plain = {
      {"exp", "exp(v)"},   {"log", "log(v)"},     {"sqrt", "sqrt(v)"},
      {"abs", "fabs(v)"},  {"neg", "(-v)"},       {"erf", "erf(v)"},
      {"reciprocal", "(1.0 / v)"}, {"floor", "floor(v)"}, {"ceil", "ceil(v)"},
  };
  auto it = plain.find(n);
  if (it == plain.end())
    return std::nullopt;
  return it->second;
}

namespace {

OpCode emitUnary(const OpDesc &op, const Epilogue &epi) {
  noEpilogue(op, epi);
  checkUnary(op);
  std::string expr = *unaryExpr(op);
  Body b;
  b.line("const int64_t n = ", numel(inputShape(op, 0)), ";");
  b.open("for (int64_t i = 0; i < n; ++i) {");
  b.line("const double v = in0[i];");
  b.line("out[i] = (float)", expr, ";");
  b.close();
  return {b.text(), 0, ""};
}

//===----------------------------------------------------------------------===//
// Binary ops with numpy broadcasting
//===----------------------------------------------------------------------===//

/// The C expression of a binary op on the f32 values `a` and `b`.
std::string binaryExpr(const std::string &op, const std::string &a, const std::string &b) {
  if (op == "add")
    return a + " + " + b;
  if (op == "subtract")
    return a + " - " + b;
  if (op == "multiply")
    return a + " * " + b;
  if (op == "divide")
    return a + " / " + b;
  if (op == "power")
    return "(float)pow((double)" + a + ", (double)" + b + ")";
  if (op == "maximum")
    return "(float)tsc_max(" + a + ", " + b + ")";
  return "(float)tsc_min(" + a + ", " + b + ")"; // minimum
}

OpCode emitBinary(const OpDesc &op, const Epilogue &epi) {
  noEpilogue(op, epi);
  Shape ys = checkBroadcastBinary(op);
  const Shape &as = inputShape(op, 0), &bs = inputShape(op, 1);
  Body b;
  int64_t n = numel(ys);
  std::string aIdx = numel(as) == 1 ? "0" : "i", bIdx = numel(bs) == 1 ? "0" : "i";
  if ((as == ys || numel(as) == 1) && (bs == ys || numel(bs) == 1)) {
    // No broadcasting, or a scalar operand: one flat loop.
    b.line("const int64_t n = ", n, ";");
    b.open("for (int64_t i = 0; i < n; ++i)");
    b.line("out[i] = ", binaryExpr(op.op, "in0[" + aIdx + "]", "in1[" + bIdx + "]"), ";");
    b.close("");
    return {b.text(), 0, ""};
  }
  // One loop per output dim; the operands step with their broadcast strides
  // (0 along a broadcast dim), the innermost loop runs over an output row.
  size_t r = ys.size();
  Shape sa = broadcastStrides(as, r), sb = broadcastStrides(bs, r);
  std::string offA = "0", offB = "0", offY = "0";
  int64_t ystride = ys[r - 1];
  for (size_t d = 0; d + 1 < r; ++d) {
    std::string i = "i" + std::to_string(d);
    b.open("for (int64_t ", i, " = 0; ", i, " < ", ys[d], "; ++", i, ") {");
    offA += cat(" + ", i, " * ", sa[d]);
    offB += cat(" + ", i, " * ", sb[d]);
    int64_t yst = 1;
    for (size_t k = d + 1; k < r; ++k)
      yst *= ys[k];
    offY += cat(" + ", i, " * ", yst);
  }
  (void)ystride;
  b.line("const float *a = in0 + (", offA, ");");
  b.line("const float *b = in1 + (", offB, ");");
  b.line("float *y = out + (", offY, ");");
  b.open("for (int64_t j = 0; j < ", ys[r - 1], "; ++j)");
  b.line("y[j] = ", binaryExpr(op.op, cat("a[j * ", sa[r - 1], "]"), cat("b[j * ", sb[r - 1], "]")),
         ";");
  b.close("");
  for (size_t d = 0; d + 1 < r; ++d)
    b.close();
  return {b.text(), 0, ""};
}

//===----------------------------------------------------------------------===//
// Per-channel ops and softmax
//===----------------------------------------------------------------------===//

/// outer x dim x inner around `axis`.
void splitAxis(const Shape &s, int64_t axis, int64_t &outer, int64_t &dim, int64_t &inner) {
  outer = numel(Shape(s.begin(), s.begin() + axis));
  dim = s[size_t(axis)];
  inner = numel(Shape(s.begin() + axis + 1, s.end()));
}

OpCode emitBiasAdd(const OpDesc &op, const Epilogue &epi) {
  noEpilogue(op, epi);
  int64_t axis = checkBiasAdd(op);
  int64_t outer, dim, inner;
  splitAxis(inputShape(op, 0), axis, outer, dim, inner);
  Body b;
  b.open("for (int64_t o = 0; o < ", outer, "; ++o)");
  b.open("for (int64_t c = 0; c < ", dim, "; ++c) {");
  b.line("const float bc = in1[c];");
  b.line("const int64_t base = (o * ", dim, " + c) * ", inner, ";");
  b.open("for (int64_t i = 0; i < ", inner, "; ++i)");
  b.line("out[base + i] = in0[base + i] + bc;");
  b.close("").close().close("");
  return {b.text(), 0, cat("axis=", axis)};
}

OpCode emitBatchNorm(const OpDesc &op, const Epilogue &epi) {
  noEpilogue(op, epi);
  BatchNormParams p = checkBatchNorm(op);
  int64_t axis = p.axis;
  double eps = p.epsilon;
  int64_t outer, dim, inner;
  splitAxis(inputShape(op, 0), axis, outer, dim, inner);
  Body b;
  b.open("for (int64_t o = 0; o < ", outer, "; ++o)");
  b.open("for (int64_t c = 0; c < ", dim, "; ++c) {");
  b.line("/* in1 gamma, in2 beta, in3 mean, in4 var */");
  b.line("const double g = in1[c], be = in2[c], m = in3[c];");
  b.line("const double sd = sqrt((double)in4[c] + ", doubleLiteral(eps), ");");
  b.line("const int64_t base = (o * ", dim, " + c) * ", inner, ";");
  b.open("for (int64_t i = 0; i < ", inner, "; ++i)");
  b.line("out[base + i] = (float)(((double)in0[base + i] - m) / sd * g + be);");
  b.close("").close().close("");
  return {b.text(), 0, cat("axis=", axis, ", epsilon=", eps)};
}

template <bool Log> OpCode emitSoftmax(const OpDesc &op, const Epilogue &epi) {
  noEpilogue(op, epi);
  int64_t axis = checkSoftmax(op);
  int64_t outer, n, inner;
  splitAxis(inputShape(op, 0), axis, outer, n, inner);
  Body b;
  b.open("for (int64_t o = 0; o < ", outer, "; ++o)");
  b.open("for (int64_t i = 0; i < ", inner, "; ++i) {");
  b.line("const float *x = in0 + o * ", n * inner, " + i;");
  b.line("float *y = out + o * ", n * inner, " + i;");
  b.line("double mx = -INFINITY, sum = 0.0;");
  b.line("int64_t k;");
  b.open("for (k = 0; k < ", n, "; ++k)");
  b.line("mx = (double)x[k * ", inner, "] > mx ? (double)x[k * ", inner, "] : mx;");
  b.close("");
  b.open("for (k = 0; k < ", n, "; ++k)");
  b.line("sum += exp((double)x[k * ", inner, "] - mx);");
  b.close("");
  b.open("for (k = 0; k < ", n, "; ++k)");
  if (Log)
    b.line("y[k * ", inner, "] = (float)(((double)x[k * ", inner, "] - mx) - log(sum));");
  else
    b.line("y[k * ", inner, "] = (float)(exp((double)x[k * ", inner, "] - mx) / sum);");
  b.close("").close().close("");
  return {b.text(), 0, cat("axis=", axis)};
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

// reshape, flatten, squeeze, unsqueeze keep the row-major order: a copy.
OpCode emitCopy(const OpDesc &op, const Epilogue &epi) {
  noEpilogue(op, epi);
  checkView(op);
  int64_t n = numel(inputShape(op, 0));
  Body b;
  b.line("memcpy(out, in0, ", n, " * sizeof(float));");
  return {b.text(), 0, ""};
}

// transpose: out.shape[i] = in.shape[perm[i]] (empty perm: reversed). Each
// output element reads the input at the offset its index gives, the dims
// unrolled with their strides as constants.
OpCode emitTranspose(const OpDesc &op, const Epilogue &epi) {
  noEpilogue(op, epi);
  const Shape perm = checkTranspose(op);
  const Shape &in = inputShape(op, 0), &out = outputShape(op);
  const size_t r = in.size();
  Shape inStride(r, 1);
  for (size_t i = r; i-- > 1;)
    inStride[i - 1] = inStride[i] * in[i];
  Body b;
  b.open("for (int64_t o = 0; o < ", numel(out), "; ++o) {");
  b.line("int64_t rem = o, src = 0;");
  for (size_t i = r; i-- > 0;) {
    if (out[i] == 1)
      continue;
    b.line("src += (rem % ", out[i], ") * ", inStride[size_t(perm[i])], "; rem /= ", out[i], ";");
  }
  b.line("out[o] = in0[src];");
  b.close();
  return {b.text(), 0, cat("perm=", shapeStr(perm))};
}

// concat along `axis`: per outer index, each input's block in turn.
OpCode emitConcat(const OpDesc &op, const Epilogue &epi) {
  noEpilogue(op, epi);
  const int64_t axis = checkConcat(op);
  int64_t outer, dim, inner;
  splitAxis(outputShape(op), axis, outer, dim, inner);
  Body b;
  b.open("for (int64_t o = 0; o < ", outer, "; ++o) {");
  int64_t offset = 0;
  for (size_t k = 0; k < op.inputs.size(); ++k) {
    int64_t block = inputShape(op, k)[size_t(axis)] * inner;
    if (block > 0)
      b.line("memcpy(out + o * ", dim * inner, " + ", offset, ", in", k, " + o * ", block, ", ",
             block, " * sizeof(float));");
    offset += block;
  }
  b.close();
  return {b.text(), 0, cat("axis=", axis)};
}

using Emit = OpCode (*)(const OpDesc &, const Epilogue &);

const std::map<std::string, Emit, std::less<>> &table() {
  static const std::map<std::string, Emit, std::less<>> t = {
      {"add", emitBinary},        {"subtract", emitBinary},     {"multiply", emitBinary},
      {"divide", emitBinary},     {"power", emitBinary},        {"maximum", emitBinary},
      {"minimum", emitBinary},    {"relu", emitUnary},          {"leaky_relu", emitUnary},
      {"sigmoid", emitUnary},     {"tanh", emitUnary},          {"clip", emitUnary},
      {"hard_sigmoid", emitUnary}, {"hard_swish", emitUnary},
      {"silu", emitUnary},   {"mish", emitUnary},   {"gelu", emitUnary},
      {"exp", emitUnary},         {"log", emitUnary},           {"sqrt", emitUnary},
      {"abs", emitUnary},         {"neg", emitUnary},           {"erf", emitUnary},
      {"reciprocal", emitUnary},  {"floor", emitUnary},         {"ceil", emitUnary},
      {"bias_add", emitBiasAdd},  {"batch_norm", emitBatchNorm}, {"softmax", emitSoftmax<false>},
      {"log_softmax", emitSoftmax<true>},
      {"dense", emitDense},       {"matmul", emitMatmul},       {"conv2d", emitConv2d},
      {"max_pool2d", emitMaxPool2d}, {"avg_pool2d", emitAvgPool2d},
      {"global_avg_pool2d", emitGlobalPool2d}, {"global_max_pool2d", emitGlobalPool2d},
      {"reshape", emitCopy},      {"flatten", emitCopy},        {"squeeze", emitCopy},
      {"unsqueeze", emitCopy},    {"transpose", emitTranspose}, {"concat", emitConcat},
      {"batch_matmul", emitBatchMatmul},
  };
  return t;
}

} // namespace

const std::vector<std::string> &supportedOps() {
  static const std::vector<std::string> ops = keysOf(table());
  return ops;
}

bool isChannelBias(const OpDesc &op, const sdk::TensorType &product, size_t channel) {
  if (op.inputs.size() != 2 || op.outputs.size() != 1 || !(op.outputs[0] == product) ||
      !(op.inputs[0] == product) || channel >= product.shape.size())
    return false;
  int64_t channels = product.shape[channel];
  const Shape &b = op.inputs[1].shape;
  if (op.op == "bias_add") {
    int64_t axis = intAttr(op, "axis", 1), rank = int64_t(product.shape.size());
    if (axis < 0)
      axis += rank;
    return axis == int64_t(channel) && b == Shape{channels};
  }
  if (op.op != "add" || b.size() > product.shape.size() || numel(b) != channels)
    return false;
  size_t lead = product.shape.size() - b.size();
  return channel >= lead && b[channel - lead] == channels;
}

OpCode emitOp(const OpDesc &op, const Epilogue &epi) {
  auto it = table().find(op.op);
  if (it == table().end())
    throw Error("op '" + op.op + "' is not supported");
  requireResults(op, 1);
  requireDType(op, DLDataType{kDLFloat, 32, 1});
  if (epi.act) {
    auto act = unaryExpr(*epi.act);
    if (!act)
      throw Error("op '" + epi.act->op + "' is not an activation");
  }
  return it->second(op, epi);
}

} // namespace tessera::ccompiler
