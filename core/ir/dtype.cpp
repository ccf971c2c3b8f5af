//===- ir/dtype.cpp - Element types ---------------------------------------===//
#include "ir/dtype.h"
#include "tessera/c/dtype.h"

#include <bit>
#include <cmath>
#include <cstring>

namespace tessera::ir {


std::string_view dtypeName(DType t) {
  switch (t) {
  case DType::F32: return "f32";
  case DType::F16: return "f16";
  case DType::BF16: return "bf16";
  case DType::F64: return "f64";
  case DType::I8: return "i8";
  case DType::U8: return "u8";
  case DType::I32: return "i32";
  case DType::I64: return "i64";
  case DType::I16: return "i16";
  case DType::U16: return "u16";
  case DType::U32: return "u32";
  case DType::U64: return "u64";
  case DType::Bool: return "bool";
  }
  return "?";
}

std::optional<DType> parseDType(std::string_view name) {
  for (DType t : kAllDTypes)
    if (dtypeName(t) == name)
      return t;
  return std::nullopt;
}

size_t dtypeSize(DType t) {
  switch (t) {
  case DType::F64:
  case DType::I64:
  case DType::U64: return 8;
  case DType::F32:
  case DType::I32:
  case DType::U32: return 4;
  case DType::F16:
  case DType::BF16:
  case DType::I16:
  case DType::U16: return 2;
  case DType::I8:
  case DType::U8:
  case DType::Bool: return 1;
  }
  return 0;
}

bool isFloat(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::F64;
}

bool isInteger(DType t) { return isSignedInteger(t) || isUnsignedInteger(t); }

bool isSignedInteger(DType t) {
  return t == DType::I8 || t == DType::I16 || t == DType::I32 || t == DType::I64;
}

bool isUnsignedInteger(DType t) {
  return t == DType::U8 || t == DType::U16 || t == DType::U32 || t == DType::U64;
}

DLDataType toDLDataType(DType t) {
  switch (t) {
  case DType::F32: return {kDLFloat, 32, 1};
  case DType::F16: return {kDLFloat, 16, 1};
  case DType::BF16: return {kDLBfloat, 16, 1};
  case DType::F64: return {kDLFloat, 64, 1};
  case DType::I8: return {kDLInt, 8, 1};
  case DType::U8: return {kDLUInt, 8, 1};
  case DType::I32: return {kDLInt, 32, 1};
  case DType::I64: return {kDLInt, 64, 1};
  case DType::I16: return {kDLInt, 16, 1};
  case DType::U16: return {kDLUInt, 16, 1};
  case DType::U32: return {kDLUInt, 32, 1};
  case DType::U64: return {kDLUInt, 64, 1};
  case DType::Bool: return {TESSERA_DL_BOOL, 8, 1};
  }
  return {kDLFloat, 32, 1};
}

std::optional<DType> fromDLDataType(DLDataType t) {
  for (DType d : kAllDTypes) {
    DLDataType x = toDLDataType(d);
    if (x.code == t.code && x.bits == t.bits && t.lanes == 1)
      return d;
  }
  return std::nullopt;
}

float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else { // subnormal: renormalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400) == 0);
      bits = sign | (uint32_t(127 - 15 - e) << 23) | ((mant & 0x3ff) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(bits);
}

uint16_t floatToHalf(float value) {
  uint32_t x = std::bit_cast<uint32_t>(value);
  uint16_t sign = uint16_t((x >> 16) & 0x8000);
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) // inf or nan
    return sign | 0x7c00 | (absx > 0x7f800000u ? 0x200 : 0);
  if (absx >= 0x477ff000u) // rounds to >= 65520: overflow to inf
    return sign | 0x7c00;
  if (absx < 0x38800000u) { // below the smallest normal half: subnormal or 0
    float f = std::bit_cast<float>(absx);
    // Scale so that the subnormal step (2^-24) becomes 1, round to nearest even.
    float scaled = f * 16777216.0f;
    auto m = uint32_t(std::nearbyint(scaled));
    return sign | uint16_t(m);
  }
  uint32_t mant = absx & 0x7fffff;
  uint32_t exp = (absx >> 23) - 127 + 15;
  uint32_t h = (exp << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
    ++h; // may carry into the exponent, which is correct
  return sign | uint16_t(h);
}

float bfloat16ToFloat(uint16_t bits) {
  return std::bit_cast<float>(uint32_t(bits) << 16);
}

uint16_t floatToBfloat16(float value) {
  uint32_t x = std::bit_cast<uint32_t>(value);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return uint16_t((x >> 16) | 0x40); // quiet nan
  uint32_t lsb = (x >> 16) & 1;
  x += 0x7fff + lsb;
  return uint16_t(x >> 16);
}

} // namespace tessera::ir
