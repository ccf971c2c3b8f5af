//===- runtime/plan.cpp - Executor plan: tensor infos and dtypes ----------===//
//
// The plan's tensor infos and dtype names. The rest of the plan is in files
// of their own: plan_memory.cpp (arena offsets by liveness),
// plan_validate.cpp (every id, index and range a session will trust),
// plan_json.cpp (the artifact's plan section), plan_symbols.cpp.
//
//===----------------------------------------------------------------------===//
#include "runtime/plan.h"
#include "runtime/plan_internal.h"
#include "tessera/c/dtype.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <map>

namespace tessera::runtime {

namespace {

struct DtypeName {
  const char *name;
  DLDataType type;
};

constexpr DtypeName kDtypes[] = {
    {"f32", {kDLFloat, 32, 1}},  {"f16", {kDLFloat, 16, 1}}, {"bf16", {kDLBfloat, 16, 1}},
    {"f64", {kDLFloat, 64, 1}},  {"i8", {kDLInt, 8, 1}},     {"i16", {kDLInt, 16, 1}},
    {"i32", {kDLInt, 32, 1}},    {"i64", {kDLInt, 64, 1}},   {"u8", {kDLUInt, 8, 1}},
    {"u16", {kDLUInt, 16, 1}},   {"u32", {kDLUInt, 32, 1}},  {"u64", {kDLUInt, 64, 1}},
    {"bool", {TESSERA_DL_BOOL, 8, 1}},
};

bool sameType(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

} // namespace

//===----------------------------------------------------------------------===//
// Tensor info and dtypes
//===----------------------------------------------------------------------===//

uint64_t TensorInfo::bytes() const {
  if (sequence)
    return 0;
  uint64_t n = 1;
  for (int64_t d : shape)
    n *= uint64_t(d < 0 ? 0 : d);
  const uint64_t elem =
      dtype.code == TESSERA_DL_BOOL ? 1 : (uint64_t(dtype.bits) * dtype.lanes + 7) / 8;
  return n * elem;
}

/// "seq(f32[_, _])", "seq(f32)".
std::string sequenceStr(const TensorInfo &info) {
  if (info.elementRank < 0)
    return fmt::format("seq({})", dtypeString(info.dtype));
  std::vector<std::string> dims(size_t(info.elementRank), "_");
  return fmt::format("seq({}[{}])", dtypeString(info.dtype), fmt::join(dims, ", "));
}

bool isSequenceStepOp(std::string_view op) {
  for (const char *o : {"seq_empty", "seq_construct", "seq_insert", "seq_erase", "seq_at",
                        "seq_length", "concat_from_seq", "stack_from_seq"})
    if (op == o)
      return true;
  return false;
}

std::string TensorInfo::str() const {
  if (sequence)
    return sequenceStr(*this);
  std::vector<std::string> dims;
  for (int64_t d : shape)
    dims.push_back(isSymbolDim(d) ? fmt::format("${}", symbolIndexOf(d)) : std::to_string(d));
  return fmt::format("{}[{}]", dtypeString(dtype), fmt::join(dims, ", "));
}

bool TensorInfo::symbolic() const {
  return std::any_of(shape.begin(), shape.end(), isSymbolDim);
}

TensorInfo TensorInfo::resolved(const std::vector<int64_t> &values) const {
  TensorInfo out = *this;
  for (int64_t &d : out.shape)
    if (isSymbolDim(d))
      d = symbolIndexOf(d) < values.size() ? values[symbolIndexOf(d)] : 0;
  return out;
}

std::string Plan::str(const TensorInfo &info) const {
  if (info.sequence)
    return sequenceStr(info);
  std::vector<std::string> dims;
  for (int64_t d : info.shape)
    dims.push_back(!isSymbolDim(d)                      ? std::to_string(d)
                   : symbolIndexOf(d) < symbols.size() ? symbols[symbolIndexOf(d)].name
                                                       : fmt::format("${}", symbolIndexOf(d)));
  return fmt::format("{}[{}]", dtypeString(info.dtype), fmt::join(dims, ", "));
}

std::vector<int64_t> Plan::nominalSymbolValues() const {
  std::vector<int64_t> v;
  for (const PlanSymbol &s : symbols)
    v.push_back(s.hi >= 0 ? s.hi : s.lo);
  std::vector<int64_t> derived = v;
  if (deriveSymbolValues(symbols, derived).ok()) // else validatePlan says why
    v = std::move(derived);
  return v;
}

std::string dtypeString(DLDataType t) {
  for (const auto &d : kDtypes)
    if (sameType(d.type, t))
      return d.name;
  return fmt::format("dtype(code {}, bits {}, lanes {})", int(t.code), int(t.bits), int(t.lanes));
}

Expected<DLDataType> parseDtypeString(std::string_view s) {
  for (const auto &d : kDtypes)
    if (s == d.name)
      return d.type;
  return Error::format("unknown dtype '{}' (expected one of f32, f16, bf16, f64, i8, i16, i32, "
                       "i64, u8, u16, u32, u64, bool)",
                       s);
}

namespace plan_detail {

/// "step 3 (conv2d 'c1')" or "step 3" without a label.
std::string stepName(const Plan &plan, size_t s) {
  const std::string &label = plan.steps[s].label;
  return label.empty() ? fmt::format("step {}", s) : fmt::format("step {} ({})", s, label);
}

} // namespace plan_detail

} // namespace tessera::runtime
