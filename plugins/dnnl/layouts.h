//===- plugins/dnnl/layouts.h - Memory descs the lowering makes (internal) -*- C++ -*-===//
//
// Small helpers of the lowering (lower*.cpp): f32 memory descs with format
// "any", explicit strides, row-major strides, and a blocked or
// channels-last layout carried over to other dims.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <optional>
#include <vector>

namespace tessera::dnnl_plugin {

using dnnl::memory;
using Tag = memory::format_tag;

inline constexpr auto kF32 = memory::data_type::f32;

inline memory::desc anyMd(const memory::dims &dims) {
  return memory::desc(dims, kF32, Tag::any);
}

/// A plain desc with explicit strides (transposed and grouped views).
inline memory::desc stridedMd(const memory::dims &dims, const memory::dims &strides) {
  return memory::desc(dims, kF32, strides);
}

/// The strides of a dense row-major tensor of `dims`.
inline memory::dims rowMajorStrides(const memory::dims &dims) {
  memory::dims s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;)
    s[i - 1] = s[i] * dims[i];
  return s;
}

/// `md`'s channel-blocked or channels-last layout applied to `dims` (a
/// per-channel broadcast operand [1, C, 1, 1] of a tensor in that layout),
/// when `md` has one of those layouts.
inline std::optional<memory::desc> sameLayout(const memory::desc &md, const memory::dims &dims) {
  static const std::vector<std::vector<Tag>> byRank = {
      {},
      {},
      {},
      {Tag::nCw16c, Tag::nCw8c, Tag::nwc},
      {Tag::nChw16c, Tag::nChw8c, Tag::nhwc},
      {Tag::nCdhw16c, Tag::nCdhw8c, Tag::ndhwc}};
  size_t r = size_t(md.dims().size());
  if (r >= byRank.size() || dims.size() != r)
    return std::nullopt;
  for (Tag t : byRank[r])
    if (memory::desc(md.dims(), kF32, t) == md)
      return memory::desc(dims, kF32, t);
  return std::nullopt;
}

/// Whether `md` is the channels-last layout (nwc, nhwc, ndhwc) of `dims`.
inline bool channelsLast(const memory::desc &md, const memory::dims &dims) {
  static const Tag byRank[] = {Tag::undef, Tag::undef, Tag::undef, Tag::nwc, Tag::nhwc, Tag::ndhwc};
  return dims.size() >= 3 && dims.size() <= 5 && md == memory::desc(dims, kF32, byRank[dims.size()]);
}

/// The layout of `dims` blocked over the channels by `block` (8 or 16:
/// nChw16c for rank 4), for ranks 3 to 5.
inline std::optional<memory::desc> channelBlocked(const memory::dims &dims, int64_t block) {
  static const Tag by16[] = {Tag::undef, Tag::undef, Tag::undef, Tag::nCw16c, Tag::nChw16c,
                             Tag::nCdhw16c};
  static const Tag by8[] = {Tag::undef, Tag::undef, Tag::undef, Tag::nCw8c, Tag::nChw8c,
                            Tag::nCdhw8c};
  if (dims.size() < 3 || dims.size() > 5 || (block != 8 && block != 16))
    return std::nullopt;
  return memory::desc(dims, kF32, (block == 16 ? by16 : by8)[dims.size()]);
}

} // namespace tessera::dnnl_plugin
