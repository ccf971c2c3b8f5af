//===- ir/dtype.h - Element types ------------------------------*- C++ -*-===//
//
// The element types of the core IR, their names in the text format and their
// mapping onto DLPack's DLDataType. Half-precision values are stored as their
// raw 16-bit patterns; the conversions live here.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <dlpack/dlpack.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tessera::ir {

enum class DType : uint8_t { F32, F16, BF16, F64, I8, U8, I32, I64, Bool };

inline constexpr DType kAllDTypes[] = {DType::F32, DType::F16, DType::BF16,
                                       DType::F64, DType::I8,  DType::U8,
                                       DType::I32, DType::I64, DType::Bool};

/// Text-format name: f32, f16, bf16, f64, i8, u8, i32, i64, bool.
std::string_view dtypeName(DType t);
std::optional<DType> parseDType(std::string_view name);

size_t dtypeSize(DType t);
bool isFloat(DType t);          // f32, f16, bf16, f64
bool isInteger(DType t);        // i8, u8, i32, i64 (not bool)
inline bool isBool(DType t) { return t == DType::Bool; }

DLDataType toDLDataType(DType t);
std::optional<DType> fromDLDataType(DLDataType t);

float halfToFloat(uint16_t bits);
uint16_t floatToHalf(float value);   // round to nearest even
float bfloat16ToFloat(uint16_t bits);
uint16_t floatToBfloat16(float value); // round to nearest even

} // namespace tessera::ir
