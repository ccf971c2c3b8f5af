//===- tessera/sdk/json_runtime_bytes.hpp - JsonRuntime's saved form -*- C++ -*-===//
//
// JsonRuntime::save and load (json_runtime.hpp, which includes this header
// after the class): the module's bytes as magic, format version, type key
// and per function its symbol, graph JSON and constants, read back with
// every length and count checked; and digest64, the checksum plugins keep
// beside native code in their bytes.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tessera/sdk/json_runtime.hpp"

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace tessera::sdk {

/// A 64-bit FNV-1a digest of `bytes`. Every change of a single byte (and of
/// the length) changes it; a module that keeps native code in its bytes
/// stores this digest of the code and checks it before mapping the code, so
/// that damaged bytes are refused instead of crashing the loader. Not a
/// defence against tampering (an artifact's SHA-256 digests are).
inline uint64_t digest64(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : bytes)
    h = (h ^ c) * 0x100000001b3ull;
  return h;
}

namespace detail {

/// Little-endian integers into a Writer.
class ByteWriter {
public:
  explicit ByteWriter(const Writer &out) : out_(out) {}
  template <typename T> void uint(T v) {
    unsigned char b[sizeof(T)];
    for (size_t i = 0; i < sizeof(T); ++i)
      b[i] = static_cast<unsigned char>(uint64_t(v) >> (8 * i));
    out_(b, sizeof b);
  }
  void str(std::string_view s) {
    uint<uint64_t>(s.size());
    out_(s);
  }
  void raw(const void *p, size_t n) { out_(p, n); }

private:
  const Writer &out_;
};

/// Bounds-checked reads; every failure names the byte and the item.
class ByteReader {
public:
  ByteReader(std::string_view bytes, std::string prefix)
      : bytes_(bytes), prefix_(std::move(prefix)) {}

  size_t offset() const { return pos_; }
  size_t left() const { return bytes_.size() - pos_; }

  [[noreturn]] void truncated(size_t need, const std::string &what) const {
    throw Error(prefix_ + "truncated at byte " + std::to_string(pos_) + " while reading " + what +
                    " (needs " + std::to_string(need) + " bytes, " + std::to_string(left()) +
                    " left)",
                TESSERA_STATUS_DATA_LOSS);
  }
  [[noreturn]] void corrupt(const std::string &what) const {
    throw Error(prefix_ + "corrupted at byte " + std::to_string(pos_) + ": " + what,
                TESSERA_STATUS_DATA_LOSS);
  }
  const char *take(size_t n, const std::string &what) {
    if (n > left())
      truncated(n, what);
    const char *p = bytes_.data() + pos_;
    pos_ += n;
    return p;
  }
  template <typename T> T uint(const std::string &what) {
    const unsigned char *p = reinterpret_cast<const unsigned char *>(take(sizeof(T), what));
    uint64_t v = 0;
    for (size_t i = 0; i < sizeof(T); ++i)
      v |= uint64_t(p[i]) << (8 * i);
    return static_cast<T>(v);
  }
  /// A length-prefixed string; the length is checked against what is left
  /// before anything is allocated.
  std::string str(const std::string &what) {
    uint64_t n = uint<uint64_t>(what + " length");
    if (n > left())
      truncated(n > std::numeric_limits<size_t>::max() ? std::numeric_limits<size_t>::max()
                                                       : size_t(n),
                what);
    return std::string(take(size_t(n), what), size_t(n));
  }
  /// A count of items that take at least `minBytes` each.
  uint64_t count(size_t minBytes, const std::string &what) {
    uint64_t n = uint<uint64_t>(what);
    if (minBytes > 0 && n > left() / minBytes)
      corrupt(what + " " + std::to_string(n) + " does not fit in the " + std::to_string(left()) +
              " bytes left");
    return n;
  }

private:
  std::string_view bytes_;
  std::string prefix_;
  size_t pos_ = 0;
};

} // namespace detail

inline void JsonRuntime::save(const Writer &out) const {
  detail::ByteWriter w(out);
  w.raw(kMagic, sizeof kMagic);
  w.uint<uint32_t>(kFormatVersion);
  w.str(typeKey());
  w.uint<uint64_t>(functions_.size());
  for (const JsonFunction &f : functions_) {
    w.str(f.symbol);
    w.str(f.json);
    w.uint<uint64_t>(f.constants.size());
    for (size_t k = 0; k < f.constants.size(); ++k) {
      const JsonConstant &c = f.constants[k];
      w.str(c.name());
      w.uint<uint8_t>(c.type().dtype.code);
      w.uint<uint8_t>(c.type().dtype.bits);
      w.uint<uint16_t>(c.type().dtype.lanes);
      w.uint<uint32_t>(uint32_t(c.type().shape.size()));
      for (int64_t d : c.type().shape)
        w.uint<uint64_t>(uint64_t(d));
      w.uint<uint64_t>(c.bytes());
      if (constantReleased(f.index, k) && c.bytes() > 0) {
        JsonConstant plain(c.name(), c.type()); // one constant at a time
        restore_[f.index][k](plain.data());
        w.raw(plain.data(), plain.bytes());
      } else {
        w.raw(c.data(), c.bytes());
      }
    }
  }
}

inline std::vector<JsonFunction> JsonRuntime::parse(std::string_view bytes,
                                                    std::string_view typeKey) {
  detail::ByteReader r(bytes, prefix(typeKey));
  const char *magic = r.take(sizeof kMagic, "the magic");
  if (std::memcmp(magic, kMagic, sizeof kMagic) != 0)
    throw Error(prefix(typeKey) + "not a saved JsonRuntime module (no \"TSJR\" magic)",
                TESSERA_STATUS_DATA_LOSS);
  uint32_t version = r.uint<uint32_t>("the format version");
  if (version != kFormatVersion)
    throw Error(prefix(typeKey) + "format version " + std::to_string(version) +
                    " is not supported (this SDK reads version " + std::to_string(kFormatVersion) +
                    ")",
                TESSERA_STATUS_DATA_LOSS);
  std::string savedKey = r.str("the type key");
  if (savedKey != typeKey)
    throw Error(prefix(typeKey) + "the bytes were saved by a '" + savedKey + "' module",
                TESSERA_STATUS_DATA_LOSS);
  // A function takes at least three u64s (two string lengths, a count).
  uint64_t numFunctions = r.count(24, "the function count");
  std::vector<JsonFunction> functions;
  for (uint64_t fi = 0; fi < numFunctions; ++fi) {
    std::string fn = "function " + std::to_string(fi);
    std::string symbol = r.str("the symbol of " + fn);
    fn += " ('" + symbol + "')";
    std::string json = r.str("the JSON of " + fn);
    // A constant takes at least 8 + 4 + 4 + 8 bytes.
    uint64_t numConstants = r.count(24, "the constant count of " + fn);
    std::vector<JsonConstant> constants;
    for (uint64_t ci = 0; ci < numConstants; ++ci) {
      std::string c = "constant " + std::to_string(ci) + " of " + fn;
      std::string name = r.str("the name of " + c);
      TensorType type;
      type.dtype.code = r.uint<uint8_t>("the dtype of " + c);
      type.dtype.bits = r.uint<uint8_t>("the dtype of " + c);
      type.dtype.lanes = r.uint<uint16_t>("the dtype of " + c);
      if (type.dtype.bits == 0 || type.dtype.lanes == 0)
        r.corrupt("constant " + std::to_string(ci) + " of " + fn + " has dtype " +
                  dtypeName(type.dtype));
      uint32_t ndim = r.uint<uint32_t>("the rank of " + c);
      if (ndim > r.left() / 8)
        r.truncated(size_t(ndim) * 8, "the shape of " + c);
      for (uint32_t d = 0; d < ndim; ++d) {
        int64_t dim = int64_t(r.uint<uint64_t>("the shape of " + c));
        if (dim < 0)
          r.corrupt("constant " + std::to_string(ci) + " of " + fn + " has dimension " +
                    std::to_string(dim));
        type.shape.push_back(dim);
      }
      // Within the limits every type keeps (kMaxElements), the byte count
      // is computed without overflow.
      if (!shapeFits(type.shape))
        r.corrupt(c + " has an impossible shape " + type.str());
      const uint64_t numel = uint64_t(type.numel()), elemBytes = dtypeBytes(type.dtype);
      if (numel != 0 && elemBytes > std::numeric_limits<uint64_t>::max() / numel)
        r.corrupt(c + " has an impossible shape " + type.str());
      uint64_t size = r.uint<uint64_t>("the byte count of " + c);
      if (size != numel * elemBytes)
        r.corrupt(c + " has " + std::to_string(size) + " bytes, but " + type.str() + " takes " +
                  std::to_string(numel * elemBytes));
      if (size > r.left())
        r.truncated(size_t(size), "the data of " + c);
      const char *data = r.take(size_t(size), "the data of " + c);
      JsonConstant k(std::move(name), std::move(type));
      if (size > 0)
        std::memcpy(k.data(), data, size_t(size));
      constants.push_back(std::move(k));
    }
    functions.push_back(
        makeFunction(std::move(symbol), std::move(json), std::move(constants), typeKey));
  }
  if (r.left() != 0)
    r.corrupt(std::to_string(r.left()) + " bytes follow the last function");
  return functions;
}

} // namespace tessera::sdk
