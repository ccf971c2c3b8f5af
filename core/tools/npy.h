//===- tools/npy.h - NumPy .npy and .npz files ------------------*- C++ -*-===//
//
// What `tessera run` reads its inputs from and writes its outputs to:
//   .npy  one array: the "\x93NUMPY" magic, format version 1, 2 or 3, a
//         Python-dict header ('descr', 'fortran_order', 'shape') padded to a
//         multiple of 64 bytes, then the raw little-endian data in C order;
//   .npz  a ZIP archive of .npy members named "<name>.npy". Members may be
//         stored or deflated (np.savez_compressed); ZIP64 size fields are
//         read. Written archives store their members.
// Element types: '<f4' '<f2' '<f8' '|i1' '<i2' '<i4' '<i8' '|u1' '<u2'
// '<u4' '<u8' '|b1' ('<'/'|' interchangeable for one-byte types). bf16 has no
// NumPy dtype: it is written as '<u2' (the raw bit patterns), and a '<u2'
// array is accepted where a bf16 tensor is expected (see bf16Compatible).
// Fortran-order arrays, big-endian and other dtypes are refused.
// Every error names the file (or archive member) and the problem.
// No dependency on the compiler: `tessera run` uses the runtime only.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "support/error.h"

#include <dlpack/dlpack.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::tools::npy {

struct Array {
  std::string name; // npz member name without ".npy"; empty for a .npy file
  DLDataType dtype{kDLFloat, 32, 1};
  std::vector<int64_t> shape;
  std::string data; // C order, little-endian, numel * element size bytes

  int64_t numel() const;
  size_t elementSize() const { return size_t((dtype.bits + 7) / 8); }
};

/// "<f4" for f32, ...; bf16 gives "<u2". Error for dtypes NumPy lacks.
Expected<std::string> descrOf(DLDataType dtype);
/// The dtype of a descr ("<f4" -> f32); the error quotes the descr.
Expected<DLDataType> dtypeOfDescr(std::string_view descr);
/// Whether an array of `given` may fill a tensor of `wanted`: equal, or
/// a '<u2' array for a bf16 tensor.
bool compatible(DLDataType wanted, DLDataType given);

/// Parses one .npy image; `display` names it in errors ("x.npy",
/// "in.npz: member 'x.npy'").
Expected<Array> parseNpy(std::string_view bytes, const std::string &display);
/// The .npy image of `a` (format 1.0, or 2.0 when the header needs it).
Expected<std::string> writeNpy(const Array &a);

/// The members of a .npz image, in archive order (names without ".npy").
Expected<std::vector<Array>> parseNpz(std::string_view bytes, const std::string &display);
/// A .npz image storing each array as "<name>.npy".
Expected<std::string> writeNpz(const std::vector<Array> &arrays);

Expected<Array> readNpyFile(const std::string &path);
Expected<std::vector<Array>> readNpzFile(const std::string &path);
Status writeNpyFile(const std::string &path, const Array &a);
Status writeNpzFile(const std::string &path, const std::vector<Array> &arrays);

} // namespace tessera::tools::npy
