//===- unit/npy_test.cpp - NumPy .npy / .npz files ------------------------===//
//
// tools/npy.h: round trips of every dtype through .npy and .npz, the header
// layout NumPy requires, malformed files with their exact messages, and (the
// hidden "[.npy-numpy]" case, run by tests/e2e/check_npy_numpy.py) files
// written by NumPy itself — versions 1-3, savez and savez_compressed
// (deflate, ZIP64 local headers), Fortran order, big-endian — plus files
// written here that the script reads back with NumPy.
//
//===----------------------------------------------------------------------===//
#include <catch2/catch.hpp>

#include "tools/npy.h"
#include "tessera/c/dtype.h"

#include <cstdlib>
#include <cstring>

using namespace tessera;
using tools::npy::Array;

namespace {

Array iota(std::string name, DLDataType dtype, std::vector<int64_t> shape) {
  Array a;
  a.name = std::move(name);
  a.dtype = dtype;
  a.shape = std::move(shape);
  a.data.resize(size_t(a.numel()) * a.elementSize());
  for (size_t i = 0; i < a.data.size(); ++i)
    a.data[i] = char(i * 7 + 1);
  return a;
}

const std::vector<std::pair<std::string, DLDataType>> kTypes = {
    {"<f4", {kDLFloat, 32, 1}}, {"<f2", {kDLFloat, 16, 1}}, {"<f8", {kDLFloat, 64, 1}},
    {"|i1", {kDLInt, 8, 1}},    {"<i2", {kDLInt, 16, 1}},   {"<i4", {kDLInt, 32, 1}},
    {"<i8", {kDLInt, 64, 1}},   {"|u1", {kDLUInt, 8, 1}},   {"<u2", {kDLUInt, 16, 1}},
    {"<u4", {kDLUInt, 32, 1}},  {"<u8", {kDLUInt, 64, 1}},  {"|b1", {TESSERA_DL_BOOL, 8, 1}},
};

std::string npyError(std::string_view bytes) {
  auto r = tools::npy::parseNpy(bytes, "x.npy");
  return r.ok() ? std::string() : r.error().str();
}

std::string npzError(std::string_view bytes) {
  auto r = tools::npy::parseNpz(bytes, "in.npz");
  return r.ok() ? std::string() : r.error().str();
}

std::string goodNpy() {
  auto bytes = tools::npy::writeNpy(iota("", {kDLFloat, 32, 1}, {2, 3}));
  REQUIRE(bytes.ok());
  return *bytes;
}

} // namespace

TEST_CASE("npy: every dtype round-trips through .npy", "[npy]") {
  for (const auto &[descr, dtype] : kTypes) {
    INFO(descr);
    CHECK(*tools::npy::descrOf(dtype) == descr);
    for (std::vector<int64_t> shape : {std::vector<int64_t>{}, std::vector<int64_t>{5},
                                       std::vector<int64_t>{2, 3, 4}, std::vector<int64_t>{0, 3}}) {
      Array a = iota("", dtype, shape);
      auto bytes = tools::npy::writeNpy(a);
      REQUIRE(bytes.ok());
      // NumPy's layout: magic, version 1.0, the header ends on a 64-byte boundary.
      CHECK(bytes->substr(0, 8) == std::string("\x93NUMPY\x01\x00", 8));
      size_t headerLen = uint8_t((*bytes)[8]) | uint8_t((*bytes)[9]) << 8;
      CHECK((10 + headerLen) % 64 == 0);
      CHECK((*bytes)[10 + headerLen - 1] == '\n');
      auto back = tools::npy::parseNpy(*bytes, "x.npy");
      REQUIRE(back.ok());
      CHECK(back->shape == shape);
      CHECK(back->dtype.code == dtype.code);
      CHECK(back->dtype.bits == dtype.bits);
      CHECK(back->data == a.data);
    }
  }
  // The header text NumPy writes for a vector and a scalar.
  auto vec = tools::npy::writeNpy(iota("", {kDLFloat, 32, 1}, {5}));
  CHECK(vec->find("{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }") == 10);
  auto scalar = tools::npy::writeNpy(iota("", {kDLInt, 64, 1}, {}));
  CHECK(scalar->find("'shape': ()") != std::string::npos);
}

TEST_CASE("npy: bf16 is written as '<u2' and '<u2' fills bf16", "[npy]") {
  DLDataType bf16{kDLBfloat, 16, 1};
  CHECK(*tools::npy::descrOf(bf16) == "<u2");
  CHECK(tools::npy::compatible(bf16, DLDataType{kDLUInt, 16, 1}));
  CHECK(!tools::npy::compatible(bf16, DLDataType{kDLFloat, 16, 1}));
  CHECK(!tools::npy::compatible(DLDataType{kDLFloat, 32, 1}, DLDataType{kDLInt, 32, 1}));
  auto bytes = tools::npy::writeNpy(iota("", bf16, {3}));
  REQUIRE(bytes.ok());
  auto back = tools::npy::parseNpy(*bytes, "x.npy");
  REQUIRE(back.ok());
  CHECK(back->dtype.code == kDLUInt);
  CHECK(back->dtype.bits == 16);
}

TEST_CASE("npy: .npz round trip keeps names, order and data", "[npy]") {
  std::vector<Array> arrays;
  for (size_t i = 0; i < kTypes.size(); ++i)
    arrays.push_back(iota("a" + std::to_string(i), kTypes[i].second, {int64_t(i), 2}));
  arrays.push_back(iota("with/slash", {kDLFloat, 32, 1}, {}));
  auto bytes = tools::npy::writeNpz(arrays);
  REQUIRE(bytes.ok());
  CHECK(bytes->substr(0, 4) == "PK\x03\x04");
  auto back = tools::npy::parseNpz(*bytes, "in.npz");
  REQUIRE(back.ok());
  REQUIRE(back->size() == arrays.size());
  for (size_t i = 0; i < arrays.size(); ++i) {
    CHECK((*back)[i].name == arrays[i].name);
    CHECK((*back)[i].shape == arrays[i].shape);
    CHECK((*back)[i].data == arrays[i].data);
  }
  auto empty = tools::npy::writeNpz({});
  REQUIRE(empty.ok());
  CHECK(tools::npy::parseNpz(*empty, "e.npz")->empty());
}

TEST_CASE("npy: malformed .npy files are refused with the file and the reason", "[npy]") {
  std::string good = goodNpy();
  CHECK(npyError("") == "x.npy: not a .npy file (no \\x93NUMPY magic)");
  CHECK(npyError("PK\x03\x04 this is a zip") == "x.npy: not a .npy file (no \\x93NUMPY magic)");
  CHECK(npyError(good.substr(0, 40)) ==
        "x.npy: truncated .npy header (118 bytes announced, 30 present)");
  CHECK(npyError(good.substr(0, good.size() - 1)) ==
        "x.npy: truncated data: expected 24 bytes for shape (2, 3), found 23");
  CHECK(npyError(good + "x") == "x.npy: extra data: expected 24 bytes for shape (2, 3), found 25");

  std::string v9 = good;
  v9[6] = 9;
  CHECK(npyError(v9) == "x.npy: .npy format version 9.0 is not supported (1.0, 2.0, 3.0 are)");

  auto withHeader = [&](std::string dict) {
    std::string h = dict;
    h.append((10 + h.size() + 1 + 63) / 64 * 64 - 10 - h.size() - 1, ' ');
    h.push_back('\n');
    std::string out("\x93NUMPY\x01\x00", 8);
    out.push_back(char(h.size() & 0xff));
    out.push_back(char(h.size() >> 8));
    return out + h + good.substr(128);
  };
  // Fortran order: the data 0..5 column-major, read into C order (as NumPy
  // and Python's tessera read it): row 0 is 0, 2, 4, row 1 is 1, 3, 5.
  {
    std::string bytes = withHeader("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }");
    const float column[6] = {0, 1, 2, 3, 4, 5};
    std::memcpy(bytes.data() + bytes.size() - 24, column, 24);
    auto f = tools::npy::parseNpy(bytes, "x.npy");
    REQUIRE(f.ok());
    CHECK(f->shape == std::vector<int64_t>{2, 3});
    float v[6];
    std::memcpy(v, f->data.data(), 24);
    CHECK(std::vector<float>(v, v + 6) == std::vector<float>{0, 2, 4, 1, 3, 5});
  }
  CHECK(npyError(withHeader("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }")) ==
        "x.npy: dtype '>f4' is big-endian; only little-endian data is supported");
  CHECK(npyError(withHeader("{'descr': '<c8', 'fortran_order': False, 'shape': (2, 3), }")) ==
        "x.npy: dtype '<c8' is not supported (supported: <f2 <f4 <f8 |i1 <i2 <i4 <i8 |u1 <u2 "
        "<u4 <u8 |b1)");
  CHECK(npyError(withHeader("{'descr': '<f4', 'shape': (2, 3), }")) ==
        "x.npy: bad .npy header: missing key 'fortran_order'");
  CHECK(npyError(withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3), }")) ==
        "x.npy: bad .npy header: 'shape' holds something other than non-negative integers");
  // Found by fuzz_npy: the element count of these overflowed int64.
  CHECK(npyError(withHeader(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (55555555555554, 777777777), }")) ==
        "x.npy: shape (55555555555554, 777777777) has more than 2^48 elements");
  CHECK(npyError(withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 300000000000000), }")) ==
        "x.npy: shape (0, 300000000000000) has more than 2^48 elements");
  CHECK(npyError(withHeader("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,)}")) ==
        "x.npy: bad .npy header: structured dtypes are not supported");
  CHECK(npyError(withHeader("['descr']")) == "x.npy: bad .npy header: the header is not a dict");
  // Without the trailing comma and with double quotes, as other writers do.
  CHECK(npyError(withHeader("{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2, 3)}"))
            .empty());
}

TEST_CASE("npy: malformed .npz files are refused with the member and the reason", "[npy]") {
  auto bytes = tools::npy::writeNpz({iota("x", {kDLFloat, 32, 1}, {2, 3})});
  REQUIRE(bytes.ok());
  const std::string &good = *bytes;
  CHECK(npzError("short") == "in.npz: not a valid .npz (ZIP) file: too short");
  CHECK(npzError(std::string(100, 'z')) ==
        "in.npz: not a valid .npz (ZIP) file: no end of central directory record");
  // A flipped data byte: the CRC catches it.
  std::string flipped = good;
  flipped[30 + 5 + 130] ^= 0x40;
  CHECK(npzError(flipped) == "in.npz: member 'x.npy': CRC-32 mismatch (the archive is damaged)");
  // Truncated: the central directory no longer fits.
  std::string cut = good.substr(0, 60) + good.substr(good.size() - 22);
  CHECK(npzError(cut) == "in.npz: not a valid .npz (ZIP) file: central directory entry 0 is "
                         "damaged");
  // Another compression method.
  std::string bz = good;
  size_t central = good.find("PK\x01\x02");
  REQUIRE(central != std::string::npos);
  bz[central + 10] = 12;
  CHECK(npzError(bz) == "in.npz: member 'x.npy': compression method 12 is not supported (stored "
                        "and deflate are)");
  // A member that is not a .npy image.
  auto plain = tools::npy::parseNpz(good, "in.npz");
  REQUIRE(plain.ok());
}

// Run by tests/e2e/check_npy_numpy.py, which writes the files with NumPy
// into $TESSERA_NPY_DIR and reads back what this writes there.
TEST_CASE("npy: files written by NumPy, and NumPy reading ours", "[.npy-numpy]") {
  const char *dirEnv = std::getenv("TESSERA_NPY_DIR");
  REQUIRE(dirEnv);
  std::string dir = dirEnv;
  // arange(6, dtype=float32).reshape(2, 3) in every header version.
  for (const char *file : {"v1.npy", "v2.npy", "v3.npy"}) {
    INFO(file);
    auto a = tools::npy::readNpyFile(dir + "/" + file);
    REQUIRE(a.ok());
    CHECK(a->shape == std::vector<int64_t>{2, 3});
    float v[6];
    std::memcpy(v, a->data.data(), 24);
    for (int i = 0; i < 6; ++i)
      CHECK(v[i] == float(i));
  }
  // numpy.asfortranarray(arange(24).reshape(2, 3, 4)): read into C order.
  auto fortran = tools::npy::readNpyFile(dir + "/fortran.npy");
  REQUIRE(fortran.ok());
  CHECK(fortran->shape == std::vector<int64_t>{2, 3, 4});
  std::vector<float> fv(24);
  std::memcpy(fv.data(), fortran->data.data(), 96);
  for (int i = 0; i < 24; ++i)
    CHECK(fv[size_t(i)] == float(i));
  auto big = tools::npy::readNpyFile(dir + "/big.npy");
  REQUIRE(!big.ok());
  CHECK(big.error().str() ==
        dir + "/big.npy: dtype '>f4' is big-endian; only little-endian data is supported");
  // Every dtype: arange(n) % 100 cast to it ('b': bool of arange % 2), stored and deflated.
  for (const char *file : {"all.npz", "all_compressed.npz"}) {
    INFO(file);
    auto arrays = tools::npy::readNpzFile(dir + "/" + file);
    REQUIRE(arrays.ok());
    REQUIRE(arrays->size() == kTypes.size());
    for (size_t i = 0; i < kTypes.size(); ++i) {
      const Array &a = (*arrays)[i];
      INFO(a.name);
      CHECK(a.name == "t" + std::to_string(i));
      CHECK(a.dtype.code == kTypes[i].second.code);
      CHECK(a.dtype.bits == kTypes[i].second.bits);
      CHECK(a.shape == std::vector<int64_t>{3, 50});
      // Spot-check element 37 (37 % 100 = 37; bool: 1).
      const char *p = a.data.data() + 37 * a.elementSize();
      double v = 0;
      switch (i) {
      case 0: {
        float f;
        std::memcpy(&f, p, 4);
        v = f;
        break;
      }
      case 1: {
        uint16_t h;
        std::memcpy(&h, p, 2);
        v = h == 0x50a0 ? 37 : -1;
        break;
      }
      case 2: {
        double d;
        std::memcpy(&d, p, 8);
        v = d;
        break;
      }
      case 11: v = *p ? 37 : -1; break;
      default: {
        int64_t x = 0;
        std::memcpy(&x, p, a.elementSize());
        v = double(x);
      }
      }
      CHECK(v == 37);
    }
  }
  // Ours, for NumPy to read back.
  std::vector<Array> arrays;
  for (size_t i = 0; i < kTypes.size(); ++i)
    arrays.push_back(iota("t" + std::to_string(i), kTypes[i].second, {2, 3}));
  for (Array &a : arrays)
    if (a.dtype.code == TESSERA_DL_BOOL)
      for (char &c : a.data)
        c = char(c & 1);
  REQUIRE(tools::npy::writeNpzFile(dir + "/ours.npz", arrays).ok());
  REQUIRE(tools::npy::writeNpyFile(dir + "/ours.npy", iota("", {kDLFloat, 64, 1}, {4, 1})).ok());
}
