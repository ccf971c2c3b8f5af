//===- frontend/onnx/conformance_compare.cpp - Comparing outputs --------===//
//
// The conformance runner's comparison (conformance.h states the rule):
// dtype and shape equal; floats within |a - b| <= 1e-5 + 1e-3 * |b| (bf16:
// one bf16 ulp); integers and bools exactly; sequences element by element.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/conformance_internal.h"

#include <cmath>
#include <ostream>

namespace tessera::frontend::onnx::conformance_detail {

namespace {

constexpr double kRtol = 1e-3;
constexpr double kAtol = 1e-5;
/// bf16 outputs: one bf16 ulp (2^-7 relative). ONNX 1.12 made its bf16 data
/// by truncating float32, Tessera rounds to nearest even (as PyTorch and
/// ONNX Runtime do); the two differ by at most one ulp.
constexpr double kRtolBf16 = 1.0 / 128;

std::string formatValue(const ir::Tensor &t, int64_t i) {
  if (ir::isFloat(t.dtype()))
    return fmt::format("{:.9g}", t.getDouble(i));
  if (t.dtype() == ir::DType::U64)
    return std::to_string(t.getUInt(i));
  return std::to_string(t.getInt(i));
}

bool closeEnough(double got, double want, ir::DType dtype) {
  if (std::isnan(want) || std::isnan(got))
    return std::isnan(want) && std::isnan(got);
  if (std::isinf(want) || std::isinf(got))
    return got == want;
  const double rtol = dtype == ir::DType::BF16 ? kRtolBf16 : kRtol;
  return std::fabs(got - want) <= kAtol + rtol * std::fabs(want);
}

} // namespace

/// Empty when `got` matches `want`, else the first mismatch (all of them,
/// up to 10, to `verbose`). `k` names the output ("output 0", "output 1[2]"
/// for element 2 of a sequence output).
std::string compareOutput(const std::string &k, const ir::Tensor &got, const ir::Tensor &want,
                          std::ostream *verbose) {
  if (got.dtype() != want.dtype())
    return fmt::format("{}: got dtype {}, expected {}", k, ir::dtypeName(got.dtype()),
                       ir::dtypeName(want.dtype()));
  if (got.shape() != want.shape())
    return fmt::format("{}: got shape {}, expected {}", k, ir::shapeStr(got.shape()),
                       ir::shapeStr(want.shape()));
  std::string first;
  int shown = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    bool ok = ir::isFloat(got.dtype()) ? closeEnough(got.getDouble(i), want.getDouble(i), got.dtype())
                                       : got.getInt(i) == want.getInt(i);
    if (ok)
      continue;
    std::string msg = fmt::format("{} element {}: got {}, expected {} (shape {})", k, i,
                                  formatValue(got, i), formatValue(want, i),
                                  ir::shapeStr(got.shape()));
    if (first.empty())
      first = msg;
    if (!verbose)
      break;
    if (shown++ < 10)
      *verbose << "    " << msg << "\n";
  }
  return first;
}

/// compareOutput over sequences, element by element.
std::string compareValue(const std::string &k, const interp::Value &got, const OnnxValue &want,
                         std::ostream *verbose) {
  switch (want.kind) {
  case OnnxValue::Kind::None: return fmt::format("{}: expected an absent optional", k);
  case OnnxValue::Kind::Tensor:
    if (got.isTuple || got.isSequence)
      return fmt::format("{}: got a sequence of {} elements, expected a tensor", k,
                         got.fields.size());
    return compareOutput(k, got.tensor, want.tensor, verbose);
  case OnnxValue::Kind::Sequence: {
    if (!got.isTuple && !got.isSequence)
      return fmt::format("{}: got a tensor, expected a sequence", k);
    if (got.fields.size() != want.elements.size())
      return fmt::format("{}: got a sequence of {} elements, expected {}", k, got.fields.size(),
                         want.elements.size());
    std::string first;
    for (size_t i = 0; i < got.fields.size(); ++i) {
      std::string m = compareValue(fmt::format("{}[{}]", k, i), got.fields[i],
                                   want.elements[i], verbose);
      if (first.empty())
        first = m;
    }
    return first;
  }
  }
  return "?";
}

} // namespace tessera::frontend::onnx::conformance_detail
