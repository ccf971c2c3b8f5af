//===- frontend/onnx/converters/signal.cpp - ONNX signal converters ---===//
//
// Converters for the ONNX signal-processing ops and Det:
//   HannWindow, HammingWindow, BlackmanWindow  constants computed at import
//   MelWeightMatrix              a constant computed at import
//   DFT                          composed: one matmul with a constant
//                                [L * c, K * 2] cos/sin matrix over the static
//                                DFT length (c = 1 real, 2 complex input)
//   STFT                         composed: frames by gather with constant
//                                indices, window multiply, then the DFT
//   Det                          the core det op
//
// Inputs that decide shapes or values computed at import (window sizes, DFT
// and frame lengths, frame steps, the MelWeightMatrix parameters) must be
// constants; the importer can bind them from test data when they are graph
// inputs.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/converters/common.h"
#include "frontend/onnx/tensor_proto.h"

#include <cmath>
#include <numbers>

namespace tessera::frontend::onnx {

namespace {

using ir::DType;
using ir::Expr;
using ir::Tensor;

constexpr double kPi = std::numbers::pi;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

Expected<Expr> requireInput(NodeContext &ctx, size_t i, std::string_view name) {
  if (!ctx.hasInput(i))
    return ctx.error("input {} ('{}') is missing", i, name);
  return ctx.input(i);
}

/// Constant input i holding one element (shape [] or [1]), as a tensor.
Expected<const Tensor *> constantScalar(NodeContext &ctx, size_t i, std::string_view name) {
  TS_ASSIGN_OR_RETURN(const Tensor *t, requireConstant(ctx, i, name));
  if (t->numel() != 1)
    return ctx.error("input {} ('{}') must be a scalar, got {}", i, name, t->type().str());
  return t;
}

/// Constant integer scalar input i.
Expected<int64_t> constantInt(NodeContext &ctx, size_t i, std::string_view name) {
  TS_ASSIGN_OR_RETURN(const Tensor *t, constantScalar(ctx, i, name));
  if (ir::isFloat(t->dtype()) || t->dtype() == DType::Bool)
    return ctx.error("input {} ('{}') must be an integer, got {}", i, name, t->type().str());
  return t->getInt(0);
}

/// Constant float (or integer) scalar input i, as a double.
Expected<double> constantDouble(NodeContext &ctx, size_t i, std::string_view name) {
  TS_ASSIGN_OR_RETURN(const Tensor *t, constantScalar(ctx, i, name));
  return t->getDouble(0);
}

/// Constants built at import are limited to this many elements, so that a
/// malformed size gives an error instead of exhausting memory.
constexpr int64_t kMaxConstantElements = int64_t(1) << 26;

/// Error unless a constant of rows x cols elements stays within the limit.
Status checkConstantSize(NodeContext &ctx, int64_t rows, int64_t cols, std::string_view what) {
  if (rows > kMaxConstantElements || cols > kMaxConstantElements ||
      (rows > 0 && cols > kMaxConstantElements / rows))
    return ctx.error("the {} ({} x {} elements) exceeds the limit of {} elements", what, rows, cols,
                     kMaxConstantElements);
  return okStatus();
}

/// The dtype named by attribute 'output_datatype' (a TensorProto.DataType,
/// default FLOAT); must be numeric.
Expected<DType> outputDType(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(int64_t code, ctx.attrInt("output_datatype", 1));
  std::optional<DType> dt = dtypeFromOnnx(int32_t(code));
  if (!dt || *dt == DType::Bool)
    return ctx.error("attribute 'output_datatype' = {} ({}) is not supported", code,
                     onnxDTypeName(int32_t(code)));
  return *dt;
}

//===----------------------------------------------------------------------===//
// Windows
//===----------------------------------------------------------------------===//

// HannWindow, HammingWindow, BlackmanWindow (opset 17): input 'size' (a
// constant integer scalar), 'periodic' (default 1: denominator N, else
// N - 1), 'output_datatype'. w[n] = a0 - a1 cos(2 pi n / D) + a2 cos(4 pi n / D).
Converter windowConverter(double a0, double a1, double a2) {
  return [=](NodeContext &ctx) -> Expected<Outputs> {
    TS_ASSIGN_OR_RETURN(int64_t size, constantInt(ctx, 0, "size"));
    TS_ASSIGN_OR_RETURN(int64_t periodic, ctx.attrInt("periodic", 1));
    TS_ASSIGN_OR_RETURN(DType dt, outputDType(ctx));
    if (size < 0)
      return ctx.error("input 0 ('size') must not be negative, got {}", size);
    TS_RETURN_IF_ERROR(checkConstantSize(ctx, size, 1, "window"));
    int64_t denom = periodic != 0 ? size : size - 1;
    std::vector<double> w(size_t(size), 0.0);
    for (int64_t n = 0; n < size; ++n) {
      double x = denom > 0 ? 2.0 * kPi * double(n) / double(denom) : 0.0;
      w[size_t(n)] = a0 - a1 * std::cos(x) + a2 * std::cos(2.0 * x);
    }
    return Outputs{ctx.constant(Tensor::fromDoubles(dt, {size}, w))};
  };
}

//===----------------------------------------------------------------------===//
// MelWeightMatrix
//===----------------------------------------------------------------------===//

// MelWeightMatrix (opset 17): all five inputs constant scalars;
// 'output_datatype'. Output [dft_length / 2 + 1, num_mel_bins] of triangular
// filters over num_mel_bins + 2 points evenly spaced in mel
// (mel = 2595 log10(1 + hz / 700)), placed at the spectrogram bins
// floor((dft_length + 1) * hz / sample_rate), as the ONNX reference does.
Expected<Outputs> convertMelWeightMatrix(NodeContext &ctx) {
  wishConstants(ctx, {0, 1, 2, 3, 4});
  TS_ASSIGN_OR_RETURN(int64_t numMelBins, constantInt(ctx, 0, "num_mel_bins"));
  TS_ASSIGN_OR_RETURN(int64_t dftLength, constantInt(ctx, 1, "dft_length"));
  TS_ASSIGN_OR_RETURN(int64_t sampleRate, constantInt(ctx, 2, "sample_rate"));
  TS_ASSIGN_OR_RETURN(double lowerHz, constantDouble(ctx, 3, "lower_edge_hertz"));
  TS_ASSIGN_OR_RETURN(double upperHz, constantDouble(ctx, 4, "upper_edge_hertz"));
  TS_ASSIGN_OR_RETURN(DType dt, outputDType(ctx));
  if (numMelBins <= 0 || dftLength <= 0 || sampleRate <= 0)
    return ctx.error("num_mel_bins ({}), dft_length ({}) and sample_rate ({}) must be positive",
                     numMelBins, dftLength, sampleRate);
  if (!(lowerHz >= 0 && lowerHz <= upperHz))
    return ctx.error("the edges must satisfy 0 <= lower_edge_hertz ({}) <= upper_edge_hertz ({})",
                     lowerHz, upperHz);
  int64_t numSpecBins = dftLength / 2 + 1;
  TS_RETURN_IF_ERROR(checkConstantSize(ctx, numSpecBins, numMelBins, "weight matrix"));
  auto toMel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
  double lowMel = toMel(lowerHz), highMel = toMel(upperHz);
  double melStep = (highMel - lowMel) / double(numMelBins + 2);
  std::vector<int64_t> bins(size_t(numMelBins + 2));
  for (int64_t i = 0; i < numMelBins + 2; ++i) {
    double hz = 700.0 * (std::pow(10.0, (double(i) * melStep + lowMel) / 2595.0) - 1.0);
    double bin = std::floor(double(dftLength + 1) * hz / double(sampleRate));
    if (!(bin >= 0 && bin < double(numSpecBins)))
      return ctx.error("upper_edge_hertz ({}) lies beyond the {} spectrogram bins of dft_length {} "
                       "at sample_rate {}",
                       upperHz, numSpecBins, dftLength, sampleRate);
    bins[size_t(i)] = int64_t(bin);
  }
  std::vector<double> w(size_t(numSpecBins * numMelBins), 0.0);
  auto at = [&](int64_t j, int64_t i) -> double & { return w[size_t(j * numMelBins + i)]; };
  for (int64_t i = 0; i < numMelBins; ++i) {
    int64_t lo = bins[size_t(i)], center = bins[size_t(i + 1)], hi = bins[size_t(i + 2)];
    if (center == lo)
      at(center, i) = 1.0;
    else
      for (int64_t j = lo; j <= center; ++j)
        at(j, i) = double(j - lo) / double(center - lo);
    for (int64_t j = center; j < hi; ++j)
      at(j, i) = double(hi - j) / double(hi - center);
  }
  return Outputs{ctx.constant(Tensor::fromDoubles(dt, {numSpecBins, numMelBins}, w))};
}

//===----------------------------------------------------------------------===//
// DFT
//===----------------------------------------------------------------------===//

/// The DFT of x [..., N, ..., c] (c = 1: real, 2: complex) along `axis`
/// (normalised, < rank - 1) over `length` points (x is cut or zero-padded
/// along the axis), as [..., K, ..., 2] with K = length / 2 + 1 when
/// `onesided`, else length. The transform is one matmul of x, with the axis
/// and the component dim moved last and merged, by a constant
/// [length * c, K * 2] matrix; the inverse divides by length.
Expected<Expr> dftAlongAxis(NodeContext &ctx, Expr x, int64_t axis, int64_t length, bool inverse,
                            bool onesided) {
  int64_t r = rankOf(x);
  Ints shape = shapeOf(x);
  int64_t c = shape.back(), n = shape[size_t(axis)];
  if (length > kMaxConstantElements)
    return ctx.error("the DFT length {} exceeds the limit of {}", length, kMaxConstantElements);
  int64_t K = onesided ? length / 2 + 1 : length;
  TS_RETURN_IF_ERROR(checkConstantSize(ctx, length * c, K * 2, "DFT matrix"));
  // Cut or zero-pad to `length` points.
  if (n != length) {
    Ints pads(size_t(2 * r), 0);
    pads[size_t(r + axis)] = length - n;
    TS_ASSIGN_OR_RETURN(x, ctx.call("pad", {x}, {{"pads", pads}}));
    shape[size_t(axis)] = length;
  }
  // Move the axis next to the component dim: [..., length, c].
  Ints perm;
  for (int64_t d = 0; d < r - 1; ++d)
    if (d != axis)
      perm.push_back(d);
  perm.push_back(axis);
  perm.push_back(r - 1);
  bool moved = axis != r - 2;
  if (moved) {
    TS_ASSIGN_OR_RETURN(x, transpose(ctx, x, perm));
  }
  Ints batch(perm.size() - 2);
  for (size_t i = 0; i + 2 < perm.size(); ++i)
    batch[i] = shape[size_t(perm[i])];

  // W[(t, ci), (k, co)]: row t * c + ci (input point t, component ci),
  // column k * 2 + co (output bin k, component co).
  double sign = inverse ? 1.0 : -1.0, scale = inverse ? 1.0 / double(length) : 1.0;
  std::vector<double> w(size_t(length * c * K * 2));
  for (int64_t t = 0; t < length; ++t)
    for (int64_t k = 0; k < K; ++k) {
      // (t * k) mod length keeps the angle small and exact.
      double theta = 2.0 * kPi * double((t * k) % length) / double(length);
      double cs = std::cos(theta) * scale, sn = sign * std::sin(theta) * scale;
      // (a + ib)(cos + i sign sin) = a cos - b sign sin + i (b cos + a sign sin)
      size_t row = size_t(t * c), col = size_t(k * 2), cols = size_t(K * 2);
      w[row * cols + col] = cs;
      w[row * cols + col + 1] = sn;
      if (c == 2) {
        w[(row + 1) * cols + col] = -sn;
        w[(row + 1) * cols + col + 1] = cs;
      }
    }
  Expr mat = ctx.constant(Tensor::fromDoubles(dtypeOf(x), {length * c, K * 2}, w));

  Ints flat = batch;
  flat.push_back(length * c);
  TS_ASSIGN_OR_RETURN(x, reshapeTo(ctx, x, flat));
  TS_ASSIGN_OR_RETURN(Expr y, ctx.call("matmul", {x, mat}));
  Ints out = batch;
  out.push_back(K);
  out.push_back(2);
  TS_ASSIGN_OR_RETURN(y, reshapeTo(ctx, y, out));
  if (moved) {
    Ints inv(perm.size());
    for (size_t i = 0; i < perm.size(); ++i)
      inv[size_t(perm[i])] = int64_t(i);
    TS_ASSIGN_OR_RETURN(y, transpose(ctx, y, inv));
  }
  return y;
}

/// Checks a signal [..., c] with c = 1 or 2 and a float dtype.
Status checkSignal(NodeContext &ctx, const Expr &x, int64_t minRank) {
  if (!ir::isFloat(dtypeOf(x)))
    return ctx.error("input 0 must be a float tensor, got {}", x->type().str());
  if (rankOf(x) < minRank || (shapeOf(x).back() != 1 && shapeOf(x).back() != 2))
    return ctx.error("input 0 must have rank >= {} and a last dim of 1 (real) or 2 (complex), "
                     "got {}",
                     minRank, x->type().str());
  return okStatus();
}

// DFT (opset 17): 'axis' (default 1; negative counts from the back, the last
// dim excluded), 'inverse', 'onesided' (real input only, not with inverse),
// optional constant 'dft_length' (cuts or zero-pads the axis). Real
// [..., 1] or complex [..., 2] input; output [..., 2].
Expected<Outputs> convertDFT(NodeContext &ctx) {
  wishConstants(ctx, {1});
  TS_ASSIGN_OR_RETURN(Expr x, requireInput(ctx, 0, "input"));
  TS_RETURN_IF_ERROR(checkSignal(ctx, x, 2));
  TS_ASSIGN_OR_RETURN(int64_t axis, ctx.attrInt("axis", 1));
  TS_ASSIGN_OR_RETURN(int64_t inverse, ctx.attrInt("inverse", 0));
  TS_ASSIGN_OR_RETURN(int64_t onesided, ctx.attrInt("onesided", 0));
  int64_t r = rankOf(x);
  if (axis < -r || axis > r - 2 || axis == -1)
    return ctx.error("attribute 'axis' = {} is out of range for rank {} (expected {}..-2 or 0..{})",
                     axis, r, -r, r - 2);
  if (axis < 0)
    axis += r;
  int64_t length = shapeOf(x)[size_t(axis)];
  if (ctx.hasInput(1)) {
    TS_ASSIGN_OR_RETURN(length, constantInt(ctx, 1, "dft_length"));
    if (length < 1)
      return ctx.error("input 1 ('dft_length') must be positive, got {}", length);
  }
  if (onesided != 0 && (inverse != 0 || shapeOf(x).back() == 2))
    return ctx.error("attribute 'onesided' = 1 needs a real input and a forward transform");
  TS_ASSIGN_OR_RETURN(Expr y, dftAlongAxis(ctx, x, axis, length, inverse != 0, onesided != 0));
  return Outputs{y};
}

//===----------------------------------------------------------------------===//
// STFT
//===----------------------------------------------------------------------===//

// STFT (opset 17): signal [batch, length, 1 or 2]; constant 'frame_step';
// optional 'window' [frame_length] (any expression); optional constant
// 'frame_length' (one of the two required; equal when both are given);
// 'onesided' (default 1; real signals only). Output [batch, frames, bins, 2]
// with frames = (length - frame_length) / frame_step + 1.
Expected<Outputs> convertSTFT(NodeContext &ctx) {
  wishConstants(ctx, {1, 3});
  TS_ASSIGN_OR_RETURN(Expr x, requireInput(ctx, 0, "signal"));
  TS_RETURN_IF_ERROR(checkSignal(ctx, x, 3));
  if (rankOf(x) != 3)
    return ctx.error("input 0 ('signal') must have rank 3, got {}", x->type().str());
  TS_ASSIGN_OR_RETURN(int64_t step, constantInt(ctx, 1, "frame_step"));
  TS_ASSIGN_OR_RETURN(int64_t onesided, ctx.attrInt("onesided", 1));
  int64_t frameLength = -1;
  if (ctx.hasInput(3)) {
    TS_ASSIGN_OR_RETURN(frameLength, constantInt(ctx, 3, "frame_length"));
  }
  Expr window;
  if (ctx.hasInput(2)) {
    window = ctx.input(2);
    if (rankOf(window) != 1)
      return ctx.error("input 2 ('window') must have rank 1, got {}", window->type().str());
    int64_t wl = shapeOf(window)[0];
    if (frameLength >= 0 && frameLength != wl)
      return ctx.error("input 3 ('frame_length') = {} differs from the window length {}",
                       frameLength, wl);
    frameLength = wl;
  }
  if (frameLength < 0)
    return ctx.error("needs input 2 ('window') or input 3 ('frame_length')");
  int64_t signalLength = shapeOf(x)[1];
  if (step < 1)
    return ctx.error("input 1 ('frame_step') must be positive, got {}", step);
  if (frameLength < 1 || frameLength > signalLength)
    return ctx.error("frame length {} must be in 1..{} (the signal length)", frameLength,
                     signalLength);
  if (onesided != 0 && shapeOf(x).back() == 2)
    return ctx.error("attribute 'onesided' = 1 needs a real signal");

  // Frames: gather along the signal axis with indices [frames, frame_length].
  int64_t frames = (signalLength - frameLength) / step + 1;
  TS_RETURN_IF_ERROR(checkConstantSize(ctx, frames, frameLength, "frame index table"));
  std::vector<int64_t> idx(size_t(frames * frameLength));
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t t = 0; t < frameLength; ++t)
      idx[size_t(f * frameLength + t)] = f * step + t;
  Expr indices = ctx.constant(Tensor::fromInts(DType::I64, {frames, frameLength}, idx));
  TS_ASSIGN_OR_RETURN(Expr framed, ctx.call("gather", {x, indices}, {{"axis", int64_t(1)}}));
  if (window) {
    TS_ASSIGN_OR_RETURN(Expr w, castTo(ctx, window, dtypeOf(x)));
    TS_ASSIGN_OR_RETURN(w, reshapeTo(ctx, w, {frameLength, 1}));
    TS_ASSIGN_OR_RETURN(framed, ctx.call("multiply", {framed, w}));
  }
  TS_ASSIGN_OR_RETURN(Expr y, dftAlongAxis(ctx, framed, 2, frameLength, false, onesided != 0));
  return Outputs{y};
}

//===----------------------------------------------------------------------===//
// Det
//===----------------------------------------------------------------------===//

// Det (opset 11): the core det op; float [..., M, M] -> [...].
Expected<Outputs> convertDet(NodeContext &ctx) {
  TS_ASSIGN_OR_RETURN(Expr x, requireInput(ctx, 0, "X"));
  TS_ASSIGN_OR_RETURN(Expr y, ctx.call("det", {x}));
  return Outputs{y};
}

} // namespace

Status registerSignalConverters(ConverterRegistry &r) {
  auto add = [&](std::string opType, int64_t minOpset, Converter convert, std::string notes) {
    return r.add(
        ConverterSpec{std::move(opType), minOpset, 17, std::move(convert), std::move(notes)});
  };
  TS_RETURN_IF_ERROR(add("HannWindow", 17, windowConverter(0.5, 0.5, 0.0),
                         "constant size; periodic, output_datatype; a constant"));
  TS_RETURN_IF_ERROR(add("HammingWindow", 17, windowConverter(25.0 / 46.0, 21.0 / 46.0, 0.0),
                         "constant size; periodic, output_datatype; a constant"));
  TS_RETURN_IF_ERROR(add("BlackmanWindow", 17, windowConverter(0.42, 0.5, 0.08),
                         "constant size; periodic, output_datatype; a constant"));
  TS_RETURN_IF_ERROR(add("MelWeightMatrix", 17, convertMelWeightMatrix,
                         "constant inputs; output_datatype; a constant (ONNX reference bins)"));
  TS_RETURN_IF_ERROR(add("DFT", 17, convertDFT,
                         "axis, inverse, onesided (real forward), constant dft_length; real or "
                         "complex input; composed (one matmul with a constant cos/sin matrix)"));
  TS_RETURN_IF_ERROR(add("STFT", 17, convertSTFT,
                         "constant frame_step and frame_length, window, onesided; composed "
                         "(gather frames, multiply window, DFT matmul)"));
  TS_RETURN_IF_ERROR(add("Det", 11, convertDet, "core det (LU with partial pivoting)"));
  return okStatus();
}

} // namespace tessera::frontend::onnx
