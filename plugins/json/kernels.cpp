//===- plugins/json/kernels.cpp - Portable f32 kernels --------------------===//
//
// Straightforward loops, arranged so that the innermost loop runs over
// contiguous memory (the compiler vectorises those). Formulas are the core
// reference kernels' (core/ir/ops/elementwise.cpp, nn.cpp, nn_conv.cpp), in
// double, so that results match the reference interpreter.
//
//===----------------------------------------------------------------------===//
#include "kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>

namespace tessera::json_plugin {

using sdk::broadcastStrides;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// Logistic function, stable for large |x|.
double sigmoid(double x) {
  if (x >= 0)
    return 1.0 / (1.0 + std::exp(-x));
  double e = std::exp(x);
  return e / (1.0 + e);
}

/// Clamps to [0, 1]; NaN passes through.
double clamp01(double v) {
  return std::isnan(v) ? v : std::clamp(v, 0.0, 1.0);
}

/// Calls body(fn) with fn the double -> double function of `f`, so that the
/// switch runs once per buffer rather than once per element.
template <typename Body> void withUnary(const Unary &f, Body &&body) {
  const double a = f.a, b = f.b;
  switch (f.kind) {
  case UnaryKind::Identity: return body([](double x) { return x; });
  case UnaryKind::Relu: return body([](double x) { return x < 0 ? 0.0 : x; });
  case UnaryKind::LeakyRelu: return body([a](double x) { return x < 0 ? a * x : x; });
  case UnaryKind::Sigmoid: return body(sigmoid);
  case UnaryKind::Tanh: return body([](double x) { return std::tanh(x); });
  case UnaryKind::Clip:
    return body([a, b](double x) { return std::isnan(x) ? x : std::min(std::max(x, a), b); });
  case UnaryKind::HardSigmoid: return body([a, b](double x) { return clamp01(a * x + b); });
  case UnaryKind::HardSwish: return body([](double x) { return x * clamp01(x / 6.0 + 0.5); });
  case UnaryKind::Silu: return body([](double x) { return x * sigmoid(x); });
  case UnaryKind::Mish: return body([](double x) { return x * std::tanh(std::log1p(std::exp(x))); });
  case UnaryKind::Gelu:
    return body([](double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); });
  case UnaryKind::GeluTanh:
    return body([](double x) {
      const double k = std::sqrt(2.0 / std::numbers::pi);
      return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
    });
  case UnaryKind::Exp: return body([](double x) { return std::exp(x); });
  case UnaryKind::Log: return body([](double x) { return std::log(x); });
  case UnaryKind::Sqrt: return body([](double x) { return std::sqrt(x); });
  case UnaryKind::Abs: return body([](double x) { return std::abs(x); });
  case UnaryKind::Neg: return body([](double x) { return -x; });
  case UnaryKind::Erf: return body([](double x) { return std::erf(x); });
  case UnaryKind::Reciprocal: return body([](double x) { return 1.0 / x; });
  case UnaryKind::Floor: return body([](double x) { return std::floor(x); });
  case UnaryKind::Ceil: return body([](double x) { return std::ceil(x); });
  }
}

/// Row-major strides of a shape.
Shape stridesOf(const Shape &s) {
  Shape st(s.size());
  int64_t stride = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = stride;
    stride *= s[i];
  }
  return st;
}

/// Visits the output of shape `ys` row by row (the last dim), tracking the
/// offsets of two operands whose per-output-dim strides are sa and sb
/// (0 along broadcast dims). row(base, offA, offB) handles one row.
template <typename Row>
void forEachRow(const Shape &ys, const Shape &sa, const Shape &sb, Row &&row) {
  int64_t n = numel(ys);
  if (n == 0)
    return;
  if (ys.empty()) {
    row(int64_t(0), int64_t(0), int64_t(0));
    return;
  }
  size_t r = ys.size();
  int64_t inner = ys[r - 1];
  Shape idx(r, 0);
  int64_t offA = 0, offB = 0;
  for (int64_t base = 0; base < n; base += inner) {
    row(base, offA, offB);
    for (size_t d = r - 1; d-- > 0;) {
      if (++idx[d] < ys[d]) {
        offA += sa[d];
        offB += sb[d];
        break;
      }
      offA -= sa[d] * (ys[d] - 1);
      offB -= sb[d] * (ys[d] - 1);
      idx[d] = 0;
    }
  }
}

template <typename F>
void broadcastBinary(F f, const float *a, const Shape &as, const float *b, const Shape &bs,
                     float *y, const Shape &ys) {
  int64_t n = numel(ys);
  if (as == ys && bs == ys) { // the common case: no broadcasting
    for (int64_t i = 0; i < n; ++i)
      y[i] = float(f(double(a[i]), double(b[i])));
    return;
  }
  Shape sa = broadcastStrides(as, ys.size()), sb = broadcastStrides(bs, ys.size());
  int64_t ia = ys.empty() ? 0 : sa.back(), ib = ys.empty() ? 0 : sb.back();
  int64_t inner = ys.empty() ? 1 : ys.back();
  forEachRow(ys, sa, sb, [&](int64_t base, int64_t offA, int64_t offB) {
    for (int64_t j = 0; j < inner; ++j)
      y[base + j] = float(f(double(a[offA + j * ia]), double(b[offB + j * ib])));
  });
}


} // namespace

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

float applyUnary(const Unary &f, float x) {
  float r = x;
  withUnary(f, [&](auto fn) { r = float(fn(double(x))); });
  return r;
}

void unary(const Unary &f, const float *x, float *y, int64_t n) {
  withUnary(f, [&](auto fn) {
    for (int64_t i = 0; i < n; ++i)
      y[i] = float(fn(double(x[i])));
  });
}

void binary(BinaryKind op, const float *a, const Shape &as, const float *b, const Shape &bs,
            float *y, const Shape &ys) {
  switch (op) {
  case BinaryKind::Add:
    return broadcastBinary([](double p, double q) { return p + q; }, a, as, b, bs, y, ys);
  case BinaryKind::Subtract:
    return broadcastBinary([](double p, double q) { return p - q; }, a, as, b, bs, y, ys);
  case BinaryKind::Multiply:
    return broadcastBinary([](double p, double q) { return p * q; }, a, as, b, bs, y, ys);
  case BinaryKind::Divide:
    return broadcastBinary([](double p, double q) { return p / q; }, a, as, b, bs, y, ys);
  case BinaryKind::Power:
    return broadcastBinary([](double p, double q) { return std::pow(p, q); }, a, as, b, bs, y, ys);
  case BinaryKind::Maximum: // NaN propagates, as in ONNX Max
    return broadcastBinary(
        [](double p, double q) { return std::isnan(p) || std::isnan(q) ? kNaN : std::max(p, q); },
        a, as, b, bs, y, ys);
  case BinaryKind::Minimum:
    return broadcastBinary(
        [](double p, double q) { return std::isnan(p) || std::isnan(q) ? kNaN : std::min(p, q); },
        a, as, b, bs, y, ys);
  }
}

void biasAdd(const float *x, const Shape &xs, int64_t axis, const float *bias, float *y) {
  int64_t outer = numel(std::span(xs).first(size_t(axis)));
  int64_t dim = xs[size_t(axis)];
  int64_t inner = numel(std::span(xs).subspan(size_t(axis) + 1));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < dim; ++c) {
      double bv = bias[c];
      int64_t base = (o * dim + c) * inner;
      for (int64_t i = 0; i < inner; ++i)
        y[base + i] = float(double(x[base + i]) + bv);
    }
}

void batchNorm(const float *x, const Shape &xs, int64_t axis, const float *gamma, const float *beta,
               const float *mean, const float *var, double epsilon, float *y) {
  int64_t outer = numel(std::span(xs).first(size_t(axis)));
  int64_t dim = xs[size_t(axis)];
  int64_t inner = numel(std::span(xs).subspan(size_t(axis) + 1));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < dim; ++c) {
      double m = mean[c], g = gamma[c], b = beta[c];
      double sd = std::sqrt(double(var[c]) + epsilon);
      int64_t base = (o * dim + c) * inner;
      for (int64_t i = 0; i < inner; ++i)
        y[base + i] = float((double(x[base + i]) - m) / sd * g + b);
    }
}

void softmax(const float *x, const Shape &xs, int64_t axis, bool log, float *y) {
  int64_t outer = numel(std::span(xs).first(size_t(axis)));
  int64_t n = xs[size_t(axis)];
  int64_t inner = numel(std::span(xs).subspan(size_t(axis) + 1));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t k) { return (o * n + k) * inner + i; };
      double mx = -INFINITY;
      for (int64_t k = 0; k < n; ++k)
        mx = std::max(mx, double(x[at(k)]));
      double sum = 0;
      for (int64_t k = 0; k < n; ++k)
        sum += std::exp(double(x[at(k)]) - mx);
      for (int64_t k = 0; k < n; ++k) {
        double shifted = double(x[at(k)]) - mx;
        y[at(k)] = float(log ? shifted - std::log(sum) : std::exp(shifted) / sum);
      }
    }
}

//===----------------------------------------------------------------------===//
// Products
//===----------------------------------------------------------------------===//

void gemm(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb,
          float *C, int64_t ldc, const Epilogue &epi) {
  std::vector<double> acc(static_cast<size_t>(N)); // one output row, in double
  for (int64_t i = 0; i < M; ++i) {
    std::fill(acc.begin(), acc.end(), 0.0);
    const float *a = A + i * lda;
    for (int64_t k = 0; k < K; ++k) {
      double av = a[k];
      const float *b = B + k * ldb;
      for (int64_t j = 0; j < N; ++j)
        acc[size_t(j)] += av * double(b[j]);
    }
    // Epilogue: round the sum, then add the bias and round again, as the
    // separate ops would.
    float *c = C + i * ldc;
    if (epi.rowBias) {
      double bv = epi.rowBias[i];
      for (int64_t j = 0; j < N; ++j)
        c[j] = float(double(float(acc[size_t(j)])) + bv);
    } else if (epi.colBias) {
      for (int64_t j = 0; j < N; ++j)
        c[j] = float(double(float(acc[size_t(j)])) + double(epi.colBias[j]));
    } else {
      for (int64_t j = 0; j < N; ++j)
        c[j] = float(acc[size_t(j)]);
    }
    if (epi.act.kind != UnaryKind::Identity)
      unary(epi.act, c, c, N);
  }
}

void transpose2d(const float *in, int64_t R, int64_t C, float *out) {
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < C; ++c)
      out[c * R + r] = in[r * C + c];
}

void denseTransposed(const float *x, int64_t rows, int64_t K, const float *wT, int64_t U, float *y,
                     const Epilogue &epi) {
  gemm(rows, U, K, x, K, wT, U, y, U, epi);
}

void matmul(const float *a, const Shape &as, const float *b, const Shape &bs, float *y) {
  Shape A = as, B = bs;
  if (A.size() == 1)
    A.insert(A.begin(), 1);
  if (B.size() == 1)
    B.push_back(1);
  int64_t M = A[A.size() - 2], K = A.back(), N = B.back();
  Shape aBatch(A.begin(), A.end() - 2), bBatch(B.begin(), B.end() - 2);
  size_t r = std::max(aBatch.size(), bBatch.size());
  Shape batch(r, 1);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - aBatch.size() ? 1 : aBatch[i - (r - aBatch.size())];
    int64_t db = i < r - bBatch.size() ? 1 : bBatch[i - (r - bBatch.size())];
    batch[i] = da == 1 ? db : da;
  }
  // Offsets of the a and b matrices for each batch index (broadcast).
  Shape sa = broadcastStrides(aBatch, r), sb = broadcastStrides(bBatch, r);
  int64_t nb = numel(batch);
  Shape idx(r, 0);
  for (int64_t bi = 0; bi < nb; ++bi) {
    int64_t rem = bi, oa = 0, ob = 0;
    for (size_t d = r; d-- > 0;) {
      idx[d] = rem % batch[d];
      rem /= batch[d];
      oa += idx[d] * sa[d];
      ob += idx[d] * sb[d];
    }
    gemm(M, N, K, a + oa * M * K, K, b + ob * K * N, N, y + bi * M * N, N);
  }
}

void batchMatmul(const float *a, const Shape &as, bool ta, const float *b, const Shape &bs, bool tb,
                 float *y, const Shape &ys) {
  int64_t batches = ys[0], M = ys[1], N = ys[2], K = ta ? as[1] : as[2];
  std::vector<float> aT(ta ? size_t(M * K) : 0), bT(tb ? size_t(K * N) : 0);
  for (int64_t i = 0; i < batches; ++i) {
    const float *ap = a + (as[0] == 1 ? 0 : i) * M * K;
    const float *bp = b + (bs[0] == 1 ? 0 : i) * K * N;
    if (ta) { // stored [K, M]
      transpose2d(ap, K, M, aT.data());
      ap = aT.data();
    }
    if (tb) { // stored [N, K]
      transpose2d(bp, N, K, bT.data());
      bp = bT.data();
    }
    gemm(M, N, K, ap, K, bp, N, y + i * M * N, N);
  }
}

//===----------------------------------------------------------------------===//
// Sliding windows
//===----------------------------------------------------------------------===//

namespace {

/// Unfolds one group of one image into col [Cg*KH*KW, OH*OW]: row
/// (c, kh, kw), column (oh, ow), zero where the tap falls in the padding.
void im2col(const float *x, int64_t Cg, int64_t H, int64_t W, int64_t KH, int64_t KW,
            const Window &win, int64_t OH, int64_t OW, float *col) {
  int64_t P = OH * OW;
  for (int64_t c = 0; c < Cg; ++c)
    for (int64_t kh = 0; kh < KH; ++kh)
      for (int64_t kw = 0; kw < KW; ++kw) {
        float *dst = col + ((c * KH + kh) * KW + kw) * P;
        for (int64_t oh = 0; oh < OH; ++oh) {
          float *row = dst + oh * OW;
          int64_t ih = oh * win.s[0] - win.p0[0] + kh * win.d[0];
          if (ih < 0 || ih >= H) {
            std::fill(row, row + OW, 0.0f);
            continue;
          }
          const float *src = x + (c * H + ih) * W;
          for (int64_t ow = 0; ow < OW; ++ow) {
            int64_t iw = ow * win.s[1] - win.p0[1] + kw * win.d[1];
            row[ow] = iw >= 0 && iw < W ? src[iw] : 0.0f;
          }
        }
      }
}

} // namespace

void conv2d(const float *x, const Shape &xs, const float *w, const Shape &ws, const Window &win,
            int64_t groups, float *y, const Shape &ys, const float *bias, const Unary &act) {
  int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  int64_t O = ws[0], Cg = ws[1], KH = ws[2], KW = ws[3];
  int64_t OH = ys[2], OW = ys[3], Og = O / groups, P = OH * OW, Kdim = Cg * KH * KW;
  // A 1x1, stride-1, unpadded convolution is a plain product with the input.
  bool direct = KH == 1 && KW == 1 && win.s[0] == 1 && win.s[1] == 1 && win.p0[0] == 0 &&
                win.p0[1] == 0 && OH == H && OW == W;
  std::vector<float> col(direct ? 0 : size_t(Kdim * P)); // per-call scratch
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < groups; ++g) {
      const float *xg = x + (n * C + g * Cg) * H * W;
      if (!direct)
        im2col(xg, Cg, H, W, KH, KW, win, OH, OW, col.data());
      Epilogue epi;
      epi.rowBias = bias ? bias + g * Og : nullptr;
      epi.act = act;
      gemm(Og, P, Kdim, w + g * Og * Kdim, Kdim, direct ? xg : col.data(), P,
           y + (n * O + g * Og) * P, P, epi);
    }
}

// max_pool2d: the maximum over the window's taps inside the input; padding
// never wins; a window of padding only gives 0 (as the reference does).
void maxPool2d(const float *x, const Shape &xs, const Window &win, float *y, const Shape &ys) {
  int64_t H = xs[2], W = xs[3], OH = ys[2], OW = ys[3];
  int64_t planes = ys[0] * ys[1];
  for (int64_t p = 0; p < planes; ++p) {
    const float *xp = x + p * H * W;
    float *yp = y + p * OH * OW;
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        bool found = false;
        float best = 0;
        for (int64_t kh = 0; kh < win.k[0]; ++kh) {
          int64_t ih = oh * win.s[0] - win.p0[0] + kh * win.d[0];
          if (ih < 0 || ih >= H)
            continue;
          for (int64_t kw = 0; kw < win.k[1]; ++kw) {
            int64_t iw = ow * win.s[1] - win.p0[1] + kw * win.d[1];
            if (iw < 0 || iw >= W)
              continue;
            float v = xp[ih * W + iw];
            if (!found || v > best) // a leading NaN sticks, as in the reference
              best = v, found = true;
          }
        }
        yp[oh * OW + ow] = found ? best : 0.0f;
      }
  }
}

// avg_pool2d: the sum of the taps inside the input divided by the number of
// taps inside the input (or, with count_include_pad, inside the padded
// input); taps past the padded input (ceil_mode) never count.
void avgPool2d(const float *x, const Shape &xs, const Window &win, bool countIncludePad, float *y,
               const Shape &ys) {
  int64_t H = xs[2], W = xs[3], OH = ys[2], OW = ys[3];
  int64_t planes = ys[0] * ys[1];
  for (int64_t oh = 0; oh < OH; ++oh)
    for (int64_t ow = 0; ow < OW; ++ow) {
      int64_t hs = oh * win.s[0] - win.p0[0], wst = ow * win.s[1] - win.p0[1];
      int64_t count = countIncludePad
              ? sdk::tapsInside(hs, win.k[0], win.d[0], -win.p0[0], H + win.p1[0]).count() *
                    sdk::tapsInside(wst, win.k[1], win.d[1], -win.p0[1], W + win.p1[1]).count()
              : sdk::tapsInside(hs, win.k[0], win.d[0], 0, H).count() *
                    sdk::tapsInside(wst, win.k[1], win.d[1], 0, W).count();
      for (int64_t p = 0; p < planes; ++p) {
        const float *xp = x + p * H * W;
        double sum = 0;
        for (int64_t kh = 0; kh < win.k[0]; ++kh) {
          int64_t ih = hs + kh * win.d[0];
          if (ih < 0 || ih >= H)
            continue;
          for (int64_t kw = 0; kw < win.k[1]; ++kw) {
            int64_t iw = wst + kw * win.d[1];
            if (iw >= 0 && iw < W)
              sum += xp[ih * W + iw];
          }
        }
        // count == 0 (padding only) gives NaN, as the reference does.
        y[p * OH * OW + oh * OW + ow] = float(sum / double(count));
      }
    }
}

void globalPool2d(const float *x, const Shape &xs, bool max, float *y) {
  int64_t planes = xs[0] * xs[1], plane = xs[2] * xs[3];
  for (int64_t p = 0; p < planes; ++p) {
    const float *xp = x + p * plane;
    if (max) {
      float best = xp[0];
      for (int64_t i = 1; i < plane; ++i)
        if (xp[i] > best)
          best = xp[i];
      y[p] = best;
    } else {
      double sum = 0;
      for (int64_t i = 0; i < plane; ++i)
        sum += xp[i];
      y[p] = float(sum / double(plane));
    }
  }
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

void transpose(const float *x, const Shape &xs, const std::vector<int64_t> &perm, float *y) {
  size_t r = xs.size();
  Shape ys(r), st = stridesOf(xs), src(r);
  for (size_t i = 0; i < r; ++i) {
    ys[i] = xs[size_t(perm[i])];
    src[i] = st[size_t(perm[i])]; // input stride along output dim i
  }
  int64_t step = r ? src.back() : 0, inner = r ? ys.back() : 1;
  forEachRow(ys, src, src, [&](int64_t base, int64_t off, int64_t) {
    for (int64_t j = 0; j < inner; ++j)
      y[base + j] = x[off + j * step];
  });
}

void concat(std::span<const float *const> xs, const std::vector<Shape> &shapes, int64_t axis,
            float *y) {
  const Shape &s0 = shapes[0];
  int64_t outer = numel(std::span(s0).first(size_t(axis)));
  int64_t inner = numel(std::span(s0).subspan(size_t(axis) + 1));
  float *out = y;
  for (int64_t o = 0; o < outer; ++o)
    for (size_t i = 0; i < xs.size(); ++i) {
      int64_t chunk = shapes[i][size_t(axis)] * inner;
      if (chunk > 0)
        std::memcpy(out, xs[i] + o * chunk, size_t(chunk) * sizeof(float));
      out += chunk;
    }
}

} // namespace tessera::json_plugin
