//===- ir/dtype.h - Element types ------------------------------*- C++ -*-===//
//
// The element types of the core IR, their names in the text format and their
// mapping onto DLPack's DLDataType. Half-precision values are stored as their
// raw 16-bit patterns; the conversions live here.
//
// Integer dtypes: i8, i16, i32, i64 (signed) and u8, u16, u32, u64
// (unsigned). Tensor's integer element access goes through int64: every
// value of every integer dtype fits, except u64 values >= 2^63, which int64
// holds as their bit pattern (so they read as negative numbers). Kernels that
// order, divide or convert u64 values use the exact unsigned path
// (Tensor::getUInt / setUInt); wrapping arithmetic (add, subtract, multiply,
// sums and products) is the same on the bit pattern.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <dlpack/dlpack.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tessera::ir {

// New enumerators go at the end, so existing values keep their numbers.
enum class DType : uint8_t { F32, F16, BF16, F64, I8, U8, I32, I64, Bool, I16, U16, U32, U64 };

inline constexpr DType kAllDTypes[] = {
    DType::F32, DType::F16, DType::BF16, DType::F64, DType::I8,  DType::I16, DType::I32,
    DType::I64, DType::U8,  DType::U16,  DType::U32, DType::U64, DType::Bool};

/// Text-format name: f32, f16, bf16, f64, i8, i16, i32, i64, u8, u16, u32,
/// u64, bool.
std::string_view dtypeName(DType t);
std::optional<DType> parseDType(std::string_view name);

size_t dtypeSize(DType t);
bool isFloat(DType t);           // f32, f16, bf16, f64
bool isInteger(DType t);         // i8..i64 and u8..u64 (not bool)
bool isSignedInteger(DType t);   // i8, i16, i32, i64
bool isUnsignedInteger(DType t); // u8, u16, u32, u64
inline bool isBool(DType t) { return t == DType::Bool; }

DLDataType toDLDataType(DType t);
std::optional<DType> fromDLDataType(DLDataType t);

float halfToFloat(uint16_t bits);
uint16_t floatToHalf(float value);   // round to nearest even
float bfloat16ToFloat(uint16_t bits);
uint16_t floatToBfloat16(float value); // round to nearest even

} // namespace tessera::ir
