//===- ir/ops/common.cpp - Helpers shared by the op families -------------===//
#include "ir/ops/common.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace tessera::ir::ops {

Expected<Shape> broadcastShapes(std::span<const int64_t> a, std::span<const int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return Error::format("cannot broadcast {} with {}", shapeStr(a), shapeStr(b));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Expected<int64_t> normalizeAxis(int64_t axis, int64_t rank, std::string_view attrName) {
  if (axis < -rank || axis >= rank || rank == 0)
    return Error::format("attribute '{}' = {} is out of range for rank {} (expected {}..{})",
                         attrName, axis, rank, -rank, rank - 1);
  return axis < 0 ? axis + rank : axis;
}

Status requireSameDType(std::span<const Type> inputs) {
  for (size_t i = 1; i < inputs.size(); ++i)
    if (inputs[i].dtype() != inputs[0].dtype())
      return Error::format("argument {} has dtype {}, expected {} (as argument 0)", i,
                           dtypeName(inputs[i].dtype()), dtypeName(inputs[0].dtype()));
  return okStatus();
}

Status requireRank(std::span<const Type> inputs, size_t index, size_t rank,
                   std::string_view argName) {
  if (inputs[index].rank() == rank)
    return okStatus();
  return Error::format("argument {} ('{}') must have rank {}, got {}", index, argName, rank,
                       inputs[index].str());
}

Status requireMinRank(std::span<const Type> inputs, size_t index, size_t rank,
                      std::string_view argName) {
  if (inputs[index].rank() >= rank)
    return okStatus();
  return Error::format("argument {} ('{}') must have rank >= {}, got {}", index, argName, rank,
                       inputs[index].str());
}

Status requireNumeric(std::span<const Type> inputs, size_t index) {
  if (!isBool(inputs[index].dtype()))
    return okStatus();
  return Error::format("argument {} must be a numeric tensor, got {}", index, inputs[index].str());
}

Status requireFloat(std::span<const Type> inputs, size_t index) {
  if (isFloat(inputs[index].dtype()))
    return okStatus();
  return Error::format("argument {} must be a float tensor, got {}", index, inputs[index].str());
}

std::pair<int64_t, int64_t> intRange(DType t) {
  switch (t) {
  case DType::I8: return {std::numeric_limits<int8_t>::min(), std::numeric_limits<int8_t>::max()};
  case DType::U8: return {0, std::numeric_limits<uint8_t>::max()};
  case DType::I16:
    return {std::numeric_limits<int16_t>::min(), std::numeric_limits<int16_t>::max()};
  case DType::U16: return {0, std::numeric_limits<uint16_t>::max()};
  case DType::I32:
    return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
  case DType::U32: return {0, std::numeric_limits<uint32_t>::max()};
  case DType::U64: return {0, std::numeric_limits<int64_t>::max()};
  case DType::Bool: return {0, 1};
  default:
    return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
  }
}

/// A float clip bound as an integer bound of dtype `t`: the lower bound
/// rounds up and the upper bound down (so x >= lo holds exactly), both are
/// limited to the dtype's range, and NaN means no bound. (u64 uses
/// uintBound.)
int64_t intBound(double v, bool lower, DType t) {
  auto [mn, mx] = intRange(t);
  if (std::isnan(v))
    return lower ? mn : mx;
  double r = lower ? std::ceil(v) : std::floor(v);
  if (r <= double(mn))
    return mn;
  if (r >= double(mx))
    return mx;
  return int64_t(r);
}

/// intBound for u64: limited to [0, 2^64 - 1].
uint64_t uintBound(double v, bool lower) {
  constexpr uint64_t mx = std::numeric_limits<uint64_t>::max();
  if (std::isnan(v))
    return lower ? 0 : mx;
  double r = lower ? std::ceil(v) : std::floor(v);
  if (r <= 0.0)
    return 0;
  if (r >= 18446744073709551616.0) // 2^64
    return mx;
  return uint64_t(r);
}

void unravelIndex(int64_t flat, std::span<const int64_t> shape, std::span<int64_t> out) {
  for (size_t i = shape.size(); i-- > 0;) {
    int64_t d = shape[i];
    out[i] = d == 0 ? 0 : flat % d;
    flat = d == 0 ? 0 : flat / d;
  }
}

int64_t broadcastSourceIndex(std::span<const int64_t> outIndex, std::span<const int64_t> inShape) {
  size_t offset = outIndex.size() - inShape.size();
  int64_t flat = 0;
  for (size_t i = 0; i < inShape.size(); ++i) {
    int64_t idx = inShape[i] == 1 ? 0 : outIndex[offset + i];
    flat = flat * inShape[i] + idx;
  }
  return flat;
}

} // namespace tessera::ir::ops
