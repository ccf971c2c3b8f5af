//===- tools/npy.cpp - NumPy .npy and .npz files --------------------------===//
//
// The .npy header (a Python dict literal) is parsed by a small scanner of
// exactly the three keys NumPy writes; the .npz reader walks the ZIP central
// directory (sizes from there: NumPy writes local headers with ZIP64 sizes)
// and inflates deflated members with zlib (raw deflate). See npy.h.
//
//===----------------------------------------------------------------------===//
#include "tools/npy.h"

#include "ir/type.h"
#include "support/file.h"
#include "tessera/c/dtype.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace tessera::tools::npy {

namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

struct DescrEntry {
  const char *descr;
  DLDataType dtype;
};

// The first entry per dtype is the one written.
const DescrEntry kDescrs[] = {
    {"<f4", {kDLFloat, 32, 1}}, {"<f2", {kDLFloat, 16, 1}}, {"<f8", {kDLFloat, 64, 1}},
    {"|i1", {kDLInt, 8, 1}},    {"<i1", {kDLInt, 8, 1}},    {"<i2", {kDLInt, 16, 1}},
    {"<i4", {kDLInt, 32, 1}},   {"<i8", {kDLInt, 64, 1}},   {"|u1", {kDLUInt, 8, 1}},
    {"<u1", {kDLUInt, 8, 1}},   {"<u2", {kDLUInt, 16, 1}},  {"<u4", {kDLUInt, 32, 1}},
    {"<u8", {kDLUInt, 64, 1}},  {"|b1", {TESSERA_DL_BOOL, 8, 1}}, {"<b1", {TESSERA_DL_BOOL, 8, 1}},
};

bool sameDtype(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

uint16_t rd16(const char *p) {
  return uint16_t(uint8_t(p[0]) | uint8_t(p[1]) << 8);
}
uint32_t rd32(const char *p) {
  return uint32_t(rd16(p)) | uint32_t(rd16(p + 2)) << 16;
}
uint64_t rd64(const char *p) {
  return uint64_t(rd32(p)) | uint64_t(rd32(p + 4)) << 32;
}
void wr16(std::string &s, uint16_t v) {
  s.push_back(char(v & 0xff));
  s.push_back(char(v >> 8));
}
void wr32(std::string &s, uint32_t v) {
  wr16(s, uint16_t(v & 0xffff));
  wr16(s, uint16_t(v >> 16));
}

/// Scans the header dict: {'descr': '<f4', 'fortran_order': False,
/// 'shape': (2, 3), }
class HeaderScanner {
public:
  HeaderScanner(std::string_view text, const std::string &display) : s_(text), display_(display) {}

  Status scan(std::string &descr, bool &fortran, std::vector<int64_t> &shape) {
    bool haveDescr = false, haveFortran = false, haveShape = false;
    skipSpace();
    if (!eat('{'))
      return bad("the header is not a dict");
    while (true) {
      skipSpace();
      if (eat('}'))
        break;
      TS_ASSIGN_OR_RETURN(std::string key, quoted());
      skipSpace();
      if (!eat(':'))
        return bad(fmt::format("expected ':' after '{}'", key));
      skipSpace();
      if (key == "descr") {
        if (peek() == '[')
          return bad("structured dtypes are not supported");
        TS_ASSIGN_OR_RETURN(descr, quoted());
        haveDescr = true;
      } else if (key == "fortran_order") {
        if (word("True"))
          fortran = true;
        else if (word("False"))
          fortran = false;
        else
          return bad("'fortran_order' is neither True nor False");
        haveFortran = true;
      } else if (key == "shape") {
        TS_RETURN_IF_ERROR(tuple(shape));
        haveShape = true;
      } else {
        return bad(fmt::format("unexpected key '{}'", key));
      }
      skipSpace();
      if (eat(','))
        continue;
      skipSpace();
      if (eat('}'))
        break;
      return bad("expected ',' or '}'");
    }
    if (!haveDescr || !haveFortran || !haveShape)
      return bad(fmt::format("missing key '{}'", !haveDescr     ? "descr"
                                                 : !haveFortran ? "fortran_order"
                                                                : "shape"));
    return okStatus();
  }

private:
  char peek() const { return at_ < s_.size() ? s_[at_] : '\0'; }
  bool eat(char c) {
    if (peek() != c)
      return false;
    ++at_;
    return true;
  }
  bool word(std::string_view w) {
    if (s_.substr(at_, w.size()) != w)
      return false;
    at_ += w.size();
    return true;
  }
  void skipSpace() {
    while (at_ < s_.size() && (s_[at_] == ' ' || s_[at_] == '\t' || s_[at_] == '\n'))
      ++at_;
  }
  Error bad(const std::string &what) const {
    return Error::format("{}: bad .npy header: {}", display_, what);
  }
  Expected<std::string> quoted() {
    char q = peek();
    if (q != '\'' && q != '"')
      return bad("expected a quoted string");
    ++at_;
    size_t end = s_.find(q, at_);
    if (end == std::string_view::npos)
      return bad("unterminated string");
    std::string out(s_.substr(at_, end - at_));
    at_ = end + 1;
    return out;
  }
  Status tuple(std::vector<int64_t> &shape) {
    if (!eat('('))
      return bad("'shape' is not a tuple");
    shape.clear();
    while (true) {
      skipSpace();
      if (eat(')'))
        return okStatus();
      if (!std::isdigit(uint8_t(peek())))
        return bad("'shape' holds something other than non-negative integers");
      int64_t v = 0;
      while (std::isdigit(uint8_t(peek()))) {
        if (v > (int64_t(1) << 48))
          return bad("a dimension of 'shape' is too large");
        v = v * 10 + (s_[at_++] - '0');
      }
      if (peek() == 'L')
        ++at_;
      shape.push_back(v);
      skipSpace();
      if (eat(','))
        continue;
      skipSpace();
      if (eat(')'))
        return okStatus();
      return bad("expected ',' or ')' in 'shape'");
    }
  }

  std::string_view s_;
  const std::string &display_;
  size_t at_ = 0;
};

Expected<std::string> readWhole(const std::string &path) {
  TS_RETURN_IF_ERROR(checkReadableFile(path));
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Error::format("cannot open '{}': {}", path, std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad())
    return Error::format("cannot read '{}'", path);
  return ss.str();
}

Status writeWhole(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (out)
    out.write(bytes.data(), std::streamsize(bytes.size()));
  out.close();
  if (!out)
    return Error::format("cannot write '{}': {}", path, std::strerror(errno));
  return okStatus();
}

bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

} // namespace

int64_t Array::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

Expected<std::string> descrOf(DLDataType dtype) {
  if (dtype.code == kDLBfloat && dtype.bits == 16 && dtype.lanes == 1)
    return std::string("<u2");
  for (const DescrEntry &e : kDescrs)
    if (sameDtype(e.dtype, dtype))
      return std::string(e.descr);
  return Error::format("no NumPy dtype for type code {} with {} bits", int(dtype.code),
                       int(dtype.bits));
}

Expected<DLDataType> dtypeOfDescr(std::string_view descr) {
  for (const DescrEntry &e : kDescrs)
    if (descr == e.descr)
      return e.dtype;
  if (descr.size() == 3 && descr[0] == '>')
    return Error::format("dtype '{}' is big-endian; only little-endian data is supported", descr);
  return Error::format("dtype '{}' is not supported (supported: <f2 <f4 <f8 |i1 <i2 <i4 <i8 |u1 "
                       "<u2 <u4 <u8 |b1)",
                       descr);
}

bool compatible(DLDataType wanted, DLDataType given) {
  if (sameDtype(wanted, given))
    return true;
  return wanted.code == kDLBfloat && wanted.bits == 16 && wanted.lanes == 1 &&
         sameDtype(given, DLDataType{kDLUInt, 16, 1});
}

//===- .npy ------------------------------------------------------------------===//

Expected<Array> parseNpy(std::string_view bytes, const std::string &display) {
  if (bytes.size() < 10 || bytes.substr(0, 6) != kMagic)
    return Error::format("{}: not a .npy file (no \\x93NUMPY magic)", display);
  int major = uint8_t(bytes[6]);
  size_t headerLen, headerStart;
  if (major == 1) {
    headerLen = rd16(bytes.data() + 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return Error::format("{}: truncated .npy header", display);
    headerLen = rd32(bytes.data() + 8);
    headerStart = 12;
  } else {
    return Error::format("{}: .npy format version {}.{} is not supported (1.0, 2.0, 3.0 are)",
                         display, major, int(uint8_t(bytes[7])));
  }
  if (headerStart + headerLen > bytes.size())
    return Error::format("{}: truncated .npy header ({} bytes announced, {} present)", display,
                         headerLen, bytes.size() - headerStart);
  std::string descr;
  bool fortran = false;
  Array a;
  HeaderScanner scanner(bytes.substr(headerStart, headerLen), display);
  TS_RETURN_IF_ERROR(scanner.scan(descr, fortran, a.shape));
  auto dtype = dtypeOfDescr(descr);
  if (!dtype)
    return Error::format("{}: {}", display, dtype.error().str());
  a.dtype = *dtype;
  // Within the IR's limit on shapes, so that the byte count cannot overflow.
  if (!ir::shapeFits(a.shape))
    return Error::format("{}: shape ({}) has more than 2^48 elements", display,
                         fmt::join(a.shape, ", "));
  std::string_view data = bytes.substr(headerStart + headerLen);
  uint64_t want = uint64_t(a.numel()) * a.elementSize();
  if (data.size() != want)
    return Error::format("{}: {} data: expected {} bytes for shape ({}), found {}", display,
                         data.size() < want ? "truncated" : "extra", want, fmt::join(a.shape, ", "),
                         data.size());
  if (!fortran || a.shape.size() < 2) {
    a.data.assign(data);
    return a;
  }
  // Fortran order (column-major, as NumPy writes an F-contiguous array):
  // read into C order, as Python's tessera does with numpy.
  const size_t rank = a.shape.size(), element = a.elementSize();
  a.data.assign(data.size(), '\0');
  std::vector<int64_t> index(rank, 0);
  for (int64_t c = 0, n = a.numel(); c < n; ++c) { // c: the C-order position of `index`
    int64_t f = 0; // its Fortran-order position: the first dim varies fastest
    for (size_t d = rank; d-- > 0;)
      f = f * a.shape[d] + index[d];
    std::memcpy(a.data.data() + size_t(c) * element, data.data() + size_t(f) * element, element);
    for (size_t d = rank; d-- > 0;) { // the next C-order index: the last dim fastest
      if (++index[d] < a.shape[d])
        break;
      index[d] = 0;
    }
  }
  return a;
}

Expected<std::string> writeNpy(const Array &a) {
  TS_ASSIGN_OR_RETURN(std::string descr, descrOf(a.dtype));
  if (a.data.size() != uint64_t(a.numel()) * a.elementSize())
    return Error::format("array '{}': {} data bytes for {} elements", a.name, a.data.size(),
                         a.numel());
  std::string shape = "(";
  for (size_t i = 0; i < a.shape.size(); ++i)
    shape += fmt::format("{}{}", i ? ", " : "", a.shape[i]);
  shape += a.shape.size() == 1 ? ",)" : ")";
  std::string dict =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr, shape);
  // Header + padding + '\n' ends on a multiple of 64 bytes.
  bool v2 = dict.size() + 11 > 65535;
  size_t prefix = v2 ? 12 : 10;
  size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict.push_back('\n');
  std::string out(kMagic);
  out.push_back(char(v2 ? 2 : 1));
  out.push_back(0);
  if (v2)
    wr32(out, uint32_t(dict.size()));
  else
    wr16(out, uint16_t(dict.size()));
  out += dict;
  out += a.data;
  return out;
}

//===- .npz ------------------------------------------------------------------===//

namespace {

Expected<std::string> inflateRaw(std::string_view in, uint64_t size, const std::string &display) {
  std::string out(size, '\0');
  z_stream zs{};
  if (inflateInit2(&zs, -15) != Z_OK)
    return Error::format("{}: cannot start zlib inflate", display);
  zs.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(in.data()));
  zs.avail_in = uInt(in.size());
  zs.next_out = reinterpret_cast<Bytef *>(out.data());
  zs.avail_out = uInt(out.size());
  int rc = inflate(&zs, Z_FINISH);
  uint64_t produced = zs.total_out;
  std::string why = rc == Z_STREAM_END ? "wrong size" : zs.msg ? zs.msg : "incomplete stream";
  inflateEnd(&zs);
  if (rc != Z_STREAM_END || produced != size)
    return Error::format("{}: corrupt deflate data ({})", display, why);
  return out;
}

} // namespace

Expected<std::vector<Array>> parseNpz(std::string_view bytes, const std::string &display) {
  auto bad = [&](const std::string &what) {
    return Error::format("{}: not a valid .npz (ZIP) file: {}", display, what);
  };
  // The end of central directory record: the last "PK\5\6" within 64 KiB + 22.
  if (bytes.size() < 22)
    return bad("too short");
  size_t eocd = std::string_view::npos;
  size_t lowest = bytes.size() > 22 + 65535 ? bytes.size() - 22 - 65535 : 0;
  for (size_t at = bytes.size() - 22 + 1; at-- > lowest;)
    if (rd32(bytes.data() + at) == 0x06054b50) {
      eocd = at;
      break;
    }
  if (eocd == std::string_view::npos)
    return bad("no end of central directory record");
  uint64_t count = rd16(bytes.data() + eocd + 10);
  uint64_t cdOffset = rd32(bytes.data() + eocd + 16);
  // ZIP64: the locator precedes the record.
  if ((count == 0xffff || cdOffset == 0xffffffff) && eocd >= 20 &&
      rd32(bytes.data() + eocd - 20) == 0x07064b50) {
    uint64_t rec = rd64(bytes.data() + eocd - 20 + 8);
    if (rec + 56 > bytes.size() || rd32(bytes.data() + rec) != 0x06064b50)
      return bad("broken ZIP64 end of central directory");
    count = rd64(bytes.data() + rec + 32);
    cdOffset = rd64(bytes.data() + rec + 48);
  }
  std::vector<Array> out;
  size_t at = cdOffset;
  for (uint64_t i = 0; i < count; ++i) {
    if (at + 46 > bytes.size() || rd32(bytes.data() + at) != 0x02014b50)
      return bad(fmt::format("central directory entry {} is damaged", i));
    const char *e = bytes.data() + at;
    uint16_t flags = rd16(e + 8), method = rd16(e + 10);
    uint32_t crc = rd32(e + 16);
    uint64_t csize = rd32(e + 20), usize = rd32(e + 24);
    uint16_t nameLen = rd16(e + 28), extraLen = rd16(e + 30), commentLen = rd16(e + 32);
    uint64_t local = rd32(e + 42);
    if (at + 46 + nameLen + extraLen + commentLen > bytes.size())
      return bad(fmt::format("central directory entry {} is damaged", i));
    std::string name(bytes.substr(at + 46, nameLen));
    // ZIP64 extended information: the fields that are all ones, in order.
    std::string_view extra = bytes.substr(at + 46 + nameLen, extraLen);
    for (size_t x = 0; x + 4 <= extra.size();) {
      uint16_t id = rd16(extra.data() + x), len = rd16(extra.data() + x + 2);
      if (x + 4 + len > extra.size())
        break;
      if (id == 1) {
        size_t f = x + 4;
        auto next = [&](uint64_t &field) {
          if (field == 0xffffffff && f + 8 <= x + 4 + len) {
            field = rd64(extra.data() + f);
            f += 8;
          }
        };
        next(usize);
        next(csize);
        next(local);
      }
      x += 4 + size_t(len);
    }
    at += 46 + size_t(nameLen) + extraLen + commentLen;

    std::string member = fmt::format("{}: member '{}'", display, name);
    if (flags & 1)
      return Error::format("{}: encrypted members are not supported", member);
    if (local + 30 > bytes.size() || rd32(bytes.data() + local) != 0x04034b50)
      return Error::format("{}: damaged local header", member);
    uint64_t dataStart =
        local + 30 + rd16(bytes.data() + local + 26) + rd16(bytes.data() + local + 28);
    if (dataStart + csize > bytes.size())
      return Error::format("{}: truncated data", member);
    std::string_view raw = bytes.substr(dataStart, csize);
    std::string plain;
    if (method == 0) {
      if (csize != usize)
        return Error::format("{}: stored member with differing sizes", member);
      plain.assign(raw);
    } else if (method == 8) {
      TS_ASSIGN_OR_RETURN(plain, inflateRaw(raw, usize, member));
    } else {
      return Error::format("{}: compression method {} is not supported (stored and deflate are)",
                           member, method);
    }
    uLong actual = crc32(0L, reinterpret_cast<const Bytef *>(plain.data()), uInt(plain.size()));
    if (actual != crc)
      return Error::format("{}: CRC-32 mismatch (the archive is damaged)", member);
    if (!endsWith(name, ".npy"))
      return Error::format("{}: not a .npy member", member);
    TS_ASSIGN_OR_RETURN(Array a, parseNpy(plain, member));
    a.name = name.substr(0, name.size() - 4);
    out.push_back(std::move(a));
  }
  return out;
}

Expected<std::string> writeNpz(const std::vector<Array> &arrays) {
  std::string out, central;
  for (const Array &a : arrays) {
    TS_ASSIGN_OR_RETURN(std::string npy, writeNpy(a));
    if (npy.size() >= 0xffffffffu || out.size() >= 0xffffffffu)
      return Error::format("array '{}': too large for a .npz without ZIP64", a.name);
    std::string name = a.name + ".npy";
    uint32_t crc =
        uint32_t(crc32(0L, reinterpret_cast<const Bytef *>(npy.data()), uInt(npy.size())));
    uint32_t offset = uint32_t(out.size());
    // Local header: version 2.0, no flags, stored, 1980-01-01 00:00.
    wr32(out, 0x04034b50);
    wr16(out, 20);
    wr16(out, 0);
    wr16(out, 0);
    wr16(out, 0);
    wr16(out, 0x21);
    wr32(out, crc);
    wr32(out, uint32_t(npy.size()));
    wr32(out, uint32_t(npy.size()));
    wr16(out, uint16_t(name.size()));
    wr16(out, 0);
    out += name;
    out += npy;
    wr32(central, 0x02014b50);
    wr16(central, 20);
    wr16(central, 20);
    wr16(central, 0);
    wr16(central, 0);
    wr16(central, 0);
    wr16(central, 0x21);
    wr32(central, crc);
    wr32(central, uint32_t(npy.size()));
    wr32(central, uint32_t(npy.size()));
    wr16(central, uint16_t(name.size()));
    wr16(central, 0);
    wr16(central, 0);
    wr16(central, 0);
    wr16(central, 0);
    wr32(central, 0);
    wr32(central, offset);
    central += name;
  }
  uint32_t cdOffset = uint32_t(out.size());
  out += central;
  wr32(out, 0x06054b50);
  wr16(out, 0);
  wr16(out, 0);
  wr16(out, uint16_t(arrays.size()));
  wr16(out, uint16_t(arrays.size()));
  wr32(out, uint32_t(central.size()));
  wr32(out, cdOffset);
  wr16(out, 0);
  return out;
}

//===- Files -----------------------------------------------------------------===//

Expected<Array> readNpyFile(const std::string &path) {
  TS_ASSIGN_OR_RETURN(std::string bytes, readWhole(path));
  return parseNpy(bytes, path);
}

Expected<std::vector<Array>> readNpzFile(const std::string &path) {
  TS_ASSIGN_OR_RETURN(std::string bytes, readWhole(path));
  return parseNpz(bytes, path);
}

Status writeNpyFile(const std::string &path, const Array &a) {
  TS_ASSIGN_OR_RETURN(std::string bytes, writeNpy(a));
  return writeWhole(path, bytes);
}

Status writeNpzFile(const std::string &path, const std::vector<Array> &arrays) {
  TS_ASSIGN_OR_RETURN(std::string bytes, writeNpz(arrays));
  return writeWhole(path, bytes);
}

} // namespace tessera::tools::npy
