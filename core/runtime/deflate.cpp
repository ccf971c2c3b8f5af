//===- runtime/deflate.cpp - zlib compression of artifact sections --------===//
#include "runtime/deflate.h"

#include <zlib.h>

namespace tessera::runtime {

Expected<std::string> deflateBytes(std::string_view bytes) {
  uLongf size = compressBound(uLong(bytes.size()));
  std::string out(size, '\0');
  int rc = compress2(reinterpret_cast<Bytef *>(out.data()), &size,
                     reinterpret_cast<const Bytef *>(bytes.data()), uLong(bytes.size()), 6);
  if (rc != Z_OK)
    return Error::format("zlib could not compress {} bytes (error {})", bytes.size(), rc);
  out.resize(size);
  return out;
}

Expected<std::string> inflateBytes(std::string_view compressed, size_t size) {
  std::string out(size, '\0');
  uLongf got = size;
  uLong read = uLong(compressed.size());
  // uncompress2 reports how much it read: bytes after the stream are damage too.
  int rc = uncompress2(reinterpret_cast<Bytef *>(out.data()), &got,
                       reinterpret_cast<const Bytef *>(compressed.data()), &read);
  if (rc == Z_BUF_ERROR && got == size)
    return Error::format("the compressed bytes hold more than the {} bytes recorded", size);
  if (rc != Z_OK) // zlib reports a stream cut short as damaged too
    return Error::format("the compressed bytes do not inflate ({})",
                         rc == Z_DATA_ERROR ? "damaged or cut short"
                                            : "zlib error " + std::to_string(rc));
  if (got != size)
    return Error::format("the compressed bytes inflate to {} bytes, {} were recorded", got, size);
  if (read != compressed.size())
    return Error::format("{} bytes follow the compressed stream", compressed.size() - read);
  return out;
}

} // namespace tessera::runtime
