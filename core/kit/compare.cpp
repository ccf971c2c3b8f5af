//===- kit/compare.cpp - Random data and comparison -----------------------===//
//
// Random inputs and constants for the kit's cases (drawn from each
// argument's domain), and the comparison of a plugin's outputs with the
// reference interpreter's within the dtype's tolerance. See plugin_kit.h.
//
//===----------------------------------------------------------------------===//
#include "kit/kit.h"

#include <cmath>

namespace tessera::kit {

using ir::DType;
using ir::Shape;
using ir::Type;

//===----------------------------------------------------------------------===//
// Random data and comparison
//===----------------------------------------------------------------------===//

ir::Tensor randomTensor(const Type &type, Domain domain, std::mt19937_64 &rng) {
  ir::Tensor t(type.dtype(), type.shape());
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::uniform_int_distribution<int64_t> small(1, 5);
  for (int64_t i = 0; i < t.numel(); ++i) {
    bool negative = unit(rng) < 0.5;
    if (ir::isBool(t.dtype())) {
      t.setInt(i, negative ? 1 : 0);
    } else if (ir::isFloat(t.dtype())) {
      double u = unit(rng), v = 0;
      switch (domain) {
      case Domain::Any: v = 2 * u - 1; break;
      case Domain::Positive: v = 0.5 + 1.5 * u; break;
      case Domain::NonZero: v = (negative ? -1 : 1) * (0.5 + 1.5 * u); break;
      case Domain::Unit: v = 1.8 * u - 0.9; break;
      case Domain::AboveOne: v = 1.1 + 1.9 * u; break;
      }
      t.setDouble(i, v);
    } else {
      int64_t v = small(rng);
      bool isSigned = ir::isSignedInteger(t.dtype());
      switch (domain) {
      case Domain::Any: v = isSigned ? v - 3 : v - 1; break; // [-2, 2] or [0, 4]
      case Domain::NonZero: v = isSigned && negative ? -v : v; break;
      default: break;
      }
      t.setInt(i, v);
    }
  }
  return t;
}

namespace {

std::pair<double, double> tolerance(DType d) { // (rtol, atol)
  if (d == DType::F32 || d == DType::F64)
    return {1e-4, 1e-5};
  if (d == DType::F16 || d == DType::BF16)
    return {1e-2, 1e-3};
  return {0, 0};
}

std::string indexStr(int64_t flat, const Shape &shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  return ir::shapeStr(idx);
}

} // namespace

std::string compareTensors(const ir::Tensor &got, const ir::Tensor &want) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape())
    return fmt::format("got {}, want {}", got.type().str(), want.type().str());
  auto [rtol, atol] = tolerance(want.dtype());
  bool isFloat = ir::isFloat(want.dtype());
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < want.numel(); ++i) {
    bool ok;
    if (isFloat) {
      double g = got.getDouble(i), w = want.getDouble(i);
      if (std::isnan(w) || std::isnan(g))
        ok = std::isnan(w) && std::isnan(g);
      else if (std::isinf(w) || std::isinf(g))
        ok = g == w;
      else
        ok = std::abs(g - w) <= atol + rtol * std::abs(w);
    } else {
      ok = got.getInt(i) == want.getInt(i);
    }
    if (!ok && bad++ == 0)
      first = i;
  }
  if (bad == 0)
    return {};
  std::string g =
      isFloat ? fmt::format("{:.7g}", got.getDouble(first)) : std::to_string(got.getInt(first));
  std::string w =
      isFloat ? fmt::format("{:.7g}", want.getDouble(first)) : std::to_string(want.getInt(first));
  return fmt::format("{} of {} elements differ, first at {}: got {}, want {}", bad, want.numel(),
                     indexStr(first, want.shape()), g, w);
}

} // namespace tessera::kit
