//===- plugins/ccompiler/ops_nn.cpp - Products and windows as C -----------===//
//
// conv2d (grouped, dilated, padded; im2col into scratch, then a product),
// dense, matmul (numpy batching), max/avg pooling and global pooling, with
// the semantics of the reference kernels (core/ir/ops/nn*.cpp).
//
// Every product goes through emitGemm: C[M x N] = A[M x K] x B[K x N] with
// the loop order i-k-j, four rows of C at a time over a tile of 256
// columns, so that the innermost loop runs over contiguous B and C and the
// C compiler vectorises it. A fused bias and activation run on each tile of
// C right after its sum, while it is in cache.
//
//===----------------------------------------------------------------------===//
#include "ops_internal.h"

namespace tessera::ccompiler::detail {

namespace {

constexpr int64_t kTile = 256; // columns of C per tile
constexpr int kRows = 4;       // rows of C per step

struct Gemm {
  int64_t M = 0, N = 0, K = 0;
  std::string A, B, C; // C pointer expressions
  int64_t lda = 0, ldb = 0, ldc = 0;
  std::string rowBias, colBias; // pointers indexed by row / column, or ""
  std::optional<std::string> act; // C expression of the double v
};

/// The epilogue of `rows` rows c0.. of the current tile (row index i + r).
void emitEpilogue(Body &b, const Gemm &g, int rows) {
  if (g.rowBias.empty() && g.colBias.empty() && !g.act)
    return;
  b.open("for (j = 0; j < nj; ++j) {");
  for (int r = 0; r < rows; ++r) {
    std::string c = cat("c", r, "[j]");
    std::string s = c;
    if (!g.rowBias.empty())
      s = cat(c, " + ", g.rowBias, "[i + ", r, "]");
    else if (!g.colBias.empty())
      s = cat(c, " + ", g.colBias, "[j0 + j]");
    if (!g.act)
      b.line(c, " = ", s, ";");
    else if (*g.act == "(v < 0.0 ? 0.0 : v)") // relu: the same in f32
      b.line("{ const float s = ", s, "; ", c, " = s < 0.0f ? 0.0f : s; }");
    else
      b.line("{ const double v = (float)(", s, "); ", c, " = (float)", *g.act, "; }");
  }
  b.close();
}

void emitGemm(Body &b, const Gemm &g) {
  b.open("{");
  b.line("/* product: C[", g.M, " x ", g.N, "] = A[", g.M, " x ", g.K, "] x B[", g.K, " x ", g.N,
         "], f32 sums in k order */");
  b.line("const float *restrict A = ", g.A, ";");
  b.line("const float *restrict B = ", g.B, ";");
  b.line("float *restrict C = ", g.C, ";");
  b.line("int64_t j0, i, j, k;");
  b.open("for (j0 = 0; j0 < ", g.N, "; j0 += ", kTile, ") {");
  b.line("const int64_t nj = ", g.N, " - j0 < ", kTile, " ? ", g.N, " - j0 : ", kTile, ";");
  for (int rows : {kRows, 1}) {
    if (rows == kRows)
      b.open("for (i = 0; i + ", kRows, " <= ", g.M, "; i += ", kRows, ") {");
    else
      b.open("for (; i < ", g.M, "; ++i) {");
    std::string zero;
    for (int r = 0; r < rows; ++r) {
      b.line("float *restrict c", r, " = C + (i + ", r, ") * ", g.ldc, " + j0;");
      zero += cat("c", r, "[j] = ");
    }
    b.open("for (j = 0; j < nj; ++j)");
    b.line(zero, "0.0f;");
    b.close("");
    b.open("for (k = 0; k < ", g.K, "; ++k) {");
    b.line("const float *restrict bk = B + k * ", g.ldb, " + j0;");
    for (int r = 0; r < rows; ++r)
      b.line("const float a", r, " = A[(i + ", r, ") * ", g.lda, " + k];");
    b.open("for (j = 0; j < nj; ++j) {");
    std::string sum;
    for (int r = 0; r < rows; ++r)
      sum += cat(r ? " " : "", "c", r, "[j] += a", r, " * bk[j];");
    b.line(sum);
    b.close();
    b.close();
    emitEpilogue(b, g, rows);
    b.close();
  }
  b.close();
  b.close();
}

std::optional<std::string> actOf(const Epilogue &epi) {
  return epi.act ? unaryExpr(*epi.act) : std::nullopt;
}

} // namespace

//===----------------------------------------------------------------------===//
// Products
//===----------------------------------------------------------------------===//

// conv2d(data [N, C, H, W], weight [O, C/groups, KH, KW]) -> [N, O, OH, OW]:
// per image and group, the input is unfolded into scratch (im2col: row
// (c, kh, kw), column (oh, ow), zero in the padding) and multiplied by the
// group's weights [O/groups, C/groups*KH*KW]. A 1x1, stride-1, unpadded
// convolution multiplies the input directly.
OpCode emitConv2d(const OpDesc &op, const Epilogue &epi) {
  Conv2dParams conv = checkConv2d(op, epi.bias);
  const Window2d &win = conv.window;
  const Shape &xs = inputShape(op, 0), &ws = inputShape(op, 1);
  int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], O = ws[0], CG = ws[1], KH = ws[2], KW = ws[3],
          OH = conv.output[2], OW = conv.output[3], G = conv.groups, OG = O / G, P = OH * OW,
          KD = CG * KH * KW;
  bool direct = KH == 1 && KW == 1 && win.s[0] == 1 && win.s[1] == 1 && win.p0[0] == 0 &&
                win.p0[1] == 0 && OH == H && OW == W;
  Body b;
  b.line("/* in0 data [N, C, H, W], in1 weight [O, C/groups, KH, KW]",
         epi.bias ? ", in2 bias [O]" : "", " */");
  b.open("for (int64_t n = 0; n < ", N, "; ++n)");
  b.open("for (int64_t g = 0; g < ", G, "; ++g) {");
  b.line("const float *restrict xg = in0 + (n * ", C, " + g * ", CG, ") * ", H * W, ";");
  if (!direct) {
    b.line("float *restrict col = scratch; /* im2col [", KD, " x ", P, "] */");
    b.open("for (int64_t c = 0; c < ", CG, "; ++c)");
    b.open("for (int64_t kh = 0; kh < ", KH, "; ++kh)");
    b.open("for (int64_t kw = 0; kw < ", KW, "; ++kw) {");
    b.line("float *restrict dst = col + ((c * ", KH, " + kh) * ", KW, " + kw) * ", P, ";");
    b.open("for (int64_t oh = 0; oh < ", OH, "; ++oh) {");
    b.line("const int64_t ih = oh * ", win.s[0], " - ", win.p0[0], " + kh * ", win.d[0], ";");
    b.line("float *restrict row = dst + oh * ", OW, ";");
    b.line("const float *restrict src;");
    b.open("if (ih < 0 || ih >= ", H, ") {");
    b.line("memset(row, 0, ", OW, " * sizeof(float));");
    b.line("continue;");
    b.close();
    b.line("src = xg + (c * ", H, " + ih) * ", W, ";");
    b.open("for (int64_t ow = 0; ow < ", OW, "; ++ow) {");
    b.line("const int64_t iw = ow * ", win.s[1], " - ", win.p0[1], " + kw * ", win.d[1], ";");
    b.line("row[ow] = iw >= 0 && iw < ", W, " ? src[iw] : 0.0f;");
    b.close().close().close().close("").close("");
  }
  Gemm g;
  g.M = OG, g.N = P, g.K = KD;
  g.A = cat("in1 + g * ", OG * KD), g.lda = KD;
  g.B = direct ? "xg" : "col", g.ldb = P;
  g.C = cat("out + (n * ", O, " + g * ", OG, ") * ", P), g.ldc = P;
  if (epi.bias)
    g.rowBias = cat("(in2 + g * ", OG, ")");
  g.act = actOf(epi);
  emitGemm(b, g);
  b.close().close("");
  return {b.text(), direct ? 0 : size_t(KD * P), cat(win.str(), ", groups=", G)};
}

// dense(data [..., K], weight [U, K]) -> [..., U]: x [rows, K] x wT [K, U]. A
// constant weight arrives transposed (codegen did it once); otherwise it is
// transposed into scratch per call.
OpCode emitDense(const OpDesc &op, const Epilogue &epi) {
  // With weightTransposed, in1 is [K, U].
  DenseDims d = checkDense(op, epi.bias, epi.weightTransposed);
  int64_t rows = d.rows, K = d.K, U = d.units;
  Body b;
  b.line("/* in0 data [", rows, ", ", K, "], in1 weight ",
         epi.weightTransposed ? cat("transposed at codegen [", K, ", ", U, "]")
                              : cat("[", U, ", ", K, "]"),
         epi.bias ? ", in2 bias [U]" : "", " */");
  std::string wT = "in1";
  if (!epi.weightTransposed) {
    b.open("for (int64_t u = 0; u < ", U, "; ++u)");
    b.open("for (int64_t k = 0; k < ", K, "; ++k)");
    b.line("scratch[k * ", U, " + u] = in1[u * ", K, " + k];");
    b.close("").close("");
    wT = "scratch";
  }
  Gemm g;
  g.M = rows, g.N = U, g.K = K;
  g.A = "in0", g.lda = K;
  g.B = wT, g.ldb = U;
  g.C = "out", g.ldc = U;
  if (epi.bias)
    g.colBias = "in2";
  g.act = actOf(epi);
  emitGemm(b, g);
  return {b.text(), epi.weightTransposed ? 0 : size_t(K * U), ""};
}

// matmul: numpy / ONNX MatMul (1-D operands promoted, batch dims broadcast).
OpCode emitMatmul(const OpDesc &op, const Epilogue &epi) {
  noEpilogue(op, epi);
  MatmulDims m = checkMatmul(op);
  const Shape &batch = m.batch;
  Shape aBatch(m.a.begin(), m.a.end() - 2), bBatch(m.b.begin(), m.b.end() - 2);
  int64_t M = m.M, K = m.K, N = m.N, NB = numel(batch);
  // The offsets of each batch's a and b matrices (broadcast), as tables.
  size_t r = batch.size();
  Shape sa = broadcastStrides(aBatch, r), sb = broadcastStrides(bBatch, r);
  std::string offA, offB;
  for (int64_t bi = 0; bi < NB; ++bi) {
    int64_t rem = bi, oa = 0, ob = 0;
    for (size_t d = r; d-- > 0;) {
      int64_t idx = rem % batch[d];
      rem /= batch[d];
      oa += idx * sa[d];
      ob += idx * sb[d];
    }
    offA += cat(bi ? ", " : "", oa * M * K);
    offB += cat(bi ? ", " : "", ob * K * N);
  }
  Body b;
  b.line("static const int64_t offA[", NB, "] = {", offA, "};");
  b.line("static const int64_t offB[", NB, "] = {", offB, "};");
  b.open("for (int64_t bi = 0; bi < ", NB, "; ++bi)");
  Gemm g;
  g.M = M, g.N = N, g.K = K;
  g.A = "in0 + offA[bi]", g.lda = K;
  g.B = "in1 + offB[bi]", g.ldb = N;
  g.C = cat("out + bi * ", M * N), g.ldc = N;
  emitGemm(b, g);
  b.close("");
  return {b.text(), 0, ""};
}

// batch_matmul(a [B|1, M, K], b [B|1, K, N]) -> [B, M, N]; an operand with
// transpose_a / transpose_b is stored [.., K, M] / [.., N, K] and is
// transposed into scratch per batch before the product.
OpCode emitBatchMatmul(const OpDesc &op, const Epilogue &epi) {
  noEpilogue(op, epi);
  BatchMatmulDims d = checkBatchMatmul(op);
  const Shape &as = inputShape(op, 0), &bs = inputShape(op, 1);
  const int64_t B = std::max(as[0], bs[0]), M = d.M, K = d.K, N = d.N;
  const bool bcastA = as[0] == 1, bcastB = bs[0] == 1;
  Body b;
  b.line("/* in0 a [", as[0], ", ", as[1], ", ", as[2], "]", d.transA ? " (transposed)" : "",
         ", in1 b [", bs[0], ", ", bs[1], ", ", bs[2], "]", d.transB ? " (transposed)" : "",
         " */");
  b.open("for (int64_t bi = 0; bi < ", B, "; ++bi) {");
  b.line("const float *a = in0 + ", bcastA ? "0" : cat("bi * ", M * K), ";");
  b.line("const float *bm = in1 + ", bcastB ? "0" : cat("bi * ", K * N), ";");
  std::string A = "a", Bm = "bm";
  if (d.transA) { // stored [K, M]
    b.open("for (int64_t k = 0; k < ", K, "; ++k)");
    b.open("for (int64_t i = 0; i < ", M, "; ++i)");
    b.line("scratch[i * ", K, " + k] = a[k * ", M, " + i];");
    b.close("").close("");
    A = "scratch";
  }
  if (d.transB) { // stored [N, K]
    const int64_t at = d.transA ? M * K : 0;
    b.open("for (int64_t j = 0; j < ", N, "; ++j)");
    b.open("for (int64_t k = 0; k < ", K, "; ++k)");
    b.line("scratch[", at, " + k * ", N, " + j] = bm[j * ", K, " + k];");
    b.close("").close("");
    Bm = cat("(scratch + ", at, ")");
  }
  Gemm g;
  g.M = M, g.N = N, g.K = K;
  g.A = A, g.lda = K;
  g.B = Bm, g.ldb = N;
  g.C = cat("out + bi * ", M * N), g.ldc = N;
  emitGemm(b, g);
  b.close();
  size_t scratch = size_t((d.transA ? M * K : 0) + (d.transB ? K * N : 0));
  return {b.text(), scratch,
          cat("transpose_a=", d.transA ? "true" : "false", ", transpose_b=",
              d.transB ? "true" : "false")};
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

namespace {

// Output size per spatial dim (ONNX MaxPool / AveragePool):
//   floor_or_ceil((in + pads - (dilation*(k-1) + 1)) / stride) + 1, and with
// ceil_mode a last window that would start in the right padding is dropped.
// The checks of docs/ops.md (sdk::checkPool2d), and the attributes for the
// comment.
Window2d poolWindow(const OpDesc &op, bool isMax, bool &includePad, std::string &attrs) {
  Pool2dParams p = checkPool2d(op);
  includePad = p.countIncludePad;
  attrs = cat("pool_size=[", p.size[0], ", ", p.size[1], "], ", p.window.str(),
              ", ceil_mode=", p.ceilMode ? "true" : "false",
              isMax ? "" : cat(", count_include_pad=", includePad ? "true" : "false"));
  return p.window;
}

} // namespace

// max_pool2d: the maximum over the taps inside the input; padding never
// wins; a window of padding only gives 0 (as the reference does).
OpCode emitMaxPool2d(const OpDesc &op, const Epilogue &epi) {
  noEpilogue(op, epi);
  bool includePad;
  std::string attrs;
  Window2d w = poolWindow(op, true, includePad, attrs);
  int64_t H = inputShape(op, 0)[2], W = inputShape(op, 0)[3], OH = outputShape(op)[2],
          OW = outputShape(op)[3];
  Body b;
  b.open("for (int64_t p = 0; p < ", outputShape(op)[0] * outputShape(op)[1], "; ++p)");
  b.open("for (int64_t oh = 0; oh < ", OH, "; ++oh)");
  b.open("for (int64_t ow = 0; ow < ", OW, "; ++ow) {");
  b.line("const float *xp = in0 + p * ", H * W, ";");
  b.line("int found = 0;");
  b.line("float best = 0.0f;");
  b.open("for (int64_t kh = 0; kh < ", w.k[0], "; ++kh) {");
  b.line("const int64_t ih = oh * ", w.s[0], " - ", w.p0[0], " + kh * ", w.d[0], ";");
  b.open("if (ih < 0 || ih >= ", H, ")");
  b.line("continue;");
  b.close("");
  b.open("for (int64_t kw = 0; kw < ", w.k[1], "; ++kw) {");
  b.line("const int64_t iw = ow * ", w.s[1], " - ", w.p0[1], " + kw * ", w.d[1], ";");
  b.line("float v;");
  b.open("if (iw < 0 || iw >= ", W, ")");
  b.line("continue;");
  b.close("");
  b.line("v = xp[ih * ", W, " + iw];");
  b.open("if (!found || v > best) { /* a leading NaN sticks, as in the reference */");
  b.line("best = v;");
  b.line("found = 1;");
  b.close().close().close();
  b.line("out[(p * ", OH, " + oh) * ", OW, " + ow] = found ? best : 0.0f;");
  b.close().close("").close("");
  return {b.text(), 0, attrs};
}

// avg_pool2d: the sum of the taps inside the input over the number of taps
// inside the input (or, with count_include_pad, inside the padded input);
// a window of padding only gives NaN (0/0), as the reference does.
OpCode emitAvgPool2d(const OpDesc &op, const Epilogue &epi) {
  noEpilogue(op, epi);
  bool includePad;
  std::string attrs;
  Window2d w = poolWindow(op, false, includePad, attrs);
  int64_t H = inputShape(op, 0)[2], W = inputShape(op, 0)[3], OH = outputShape(op)[2],
          OW = outputShape(op)[3];
  int64_t loH = includePad ? -w.p0[0] : 0, hiH = includePad ? H + w.p1[0] : H;
  int64_t loW = includePad ? -w.p0[1] : 0, hiW = includePad ? W + w.p1[1] : W;
  Body b;
  b.open("for (int64_t oh = 0; oh < ", OH, "; ++oh)");
  b.open("for (int64_t ow = 0; ow < ", OW, "; ++ow) {");
  b.line("const int64_t hs = oh * ", w.s[0], " - ", w.p0[0], ", ws = ow * ", w.s[1], " - ",
         w.p0[1], ";");
  b.line("int64_t countH = 0, countW = 0, k;");
  b.open("for (k = 0; k < ", w.k[0], "; ++k)");
  b.line("countH += hs + k * ", w.d[0], " >= ", loH, " && hs + k * ", w.d[0], " < ", hiH, ";");
  b.close("");
  b.open("for (k = 0; k < ", w.k[1], "; ++k)");
  b.line("countW += ws + k * ", w.d[1], " >= ", loW, " && ws + k * ", w.d[1], " < ", hiW, ";");
  b.close("");
  b.open("for (int64_t p = 0; p < ", outputShape(op)[0] * outputShape(op)[1], "; ++p) {");
  b.line("const float *xp = in0 + p * ", H * W, ";");
  b.line("double sum = 0.0;");
  b.open("for (int64_t kh = 0; kh < ", w.k[0], "; ++kh) {");
  b.line("const int64_t ih = hs + kh * ", w.d[0], ";");
  b.open("if (ih < 0 || ih >= ", H, ")");
  b.line("continue;");
  b.close("");
  b.open("for (int64_t kw = 0; kw < ", w.k[1], "; ++kw) {");
  b.line("const int64_t iw = ws + kw * ", w.d[1], ";");
  b.open("if (iw >= 0 && iw < ", W, ")");
  b.line("sum += xp[ih * ", W, " + iw];");
  b.close("").close().close();
  b.line("out[(p * ", OH, " + oh) * ", OW, " + ow] = (float)(sum / (double)(countH * countW));");
  b.close().close().close("");
  return {b.text(), 0, attrs};
}

// global_avg_pool2d / global_max_pool2d: [N, C, H, W] -> [N, C, 1, 1].
OpCode emitGlobalPool2d(const OpDesc &op, const Epilogue &epi) {
  noEpilogue(op, epi);
  checkGlobalPool2d(op);
  const Shape &xs = inputShape(op, 0);
  int64_t plane = xs[2] * xs[3];
  Body b;
  b.open("for (int64_t p = 0; p < ", xs[0] * xs[1], "; ++p) {");
  b.line("const float *xp = in0 + p * ", plane, ";");
  if (op.op == "global_max_pool2d") {
    b.line("float best = xp[0];");
    b.open("for (int64_t i = 1; i < ", plane, "; ++i)");
    b.line("best = xp[i] > best ? xp[i] : best;");
    b.close("");
    b.line("out[p] = best;");
  } else {
    b.line("double sum = 0.0;");
    b.open("for (int64_t i = 0; i < ", plane, "; ++i)");
    b.line("sum += xp[i];");
    b.close("");
    b.line("out[p] = (float)(sum / ", plane, ".0);");
  }
  b.close();
  return {b.text(), 0, ""};
}

} // namespace tessera::ccompiler::detail
