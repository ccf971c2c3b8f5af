//===- support/ptr_index.h - A flat hash table from pointers to ints -*- C++ -*-===//
//
// The traversals of 100,000-node graphs look every node up several times.
// std::unordered_map allocates one heap node per entry and chases a pointer
// per lookup; this table keeps keys and values in two flat arrays (open
// addressing, linear probing, power-of-two capacity, at most half full), so
// an insert allocates nothing until the table doubles.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace tessera {

class PtrIndex {
public:
  explicit PtrIndex(size_t expected = 16) { rehash(capacityFor(expected)); }

  /// The value stored for `p`, or -1.
  int64_t find(const void *p) const {
    for (size_t i = slot(p);; i = (i + 1) & mask_) {
      if (keys_[i] == p)
        return values_[i];
      if (!keys_[i])
        return -1;
    }
  }
  bool contains(const void *p) const { return find(p) >= 0; }

  /// Stores `value` (>= 0) for `p` unless `p` is present. Returns the value
  /// stored for `p` and whether it was inserted.
  std::pair<int64_t, bool> insert(const void *p, int64_t value) {
    if (2 * (size_ + 1) > keys_.size())
      rehash(keys_.size() * 2);
    size_t i = slot(p);
    for (; keys_[i]; i = (i + 1) & mask_)
      if (keys_[i] == p)
        return {values_[i], false};
    keys_[i] = p;
    values_[i] = value;
    ++size_;
    return {value, true};
  }

  size_t size() const { return size_; }

private:
  static size_t capacityFor(size_t expected) {
    size_t c = 16;
    while (c < 2 * expected)
      c *= 2;
    return c;
  }
  size_t slot(const void *p) const {
    // Fibonacci hashing of the address (the low bits are alignment).
    return size_t((uint64_t(reinterpret_cast<uintptr_t>(p)) * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  void rehash(size_t capacity) {
    std::vector<const void *> keys(capacity, nullptr);
    std::vector<int64_t> values(capacity, -1);
    keys.swap(keys_);
    values.swap(values_);
    mask_ = capacity - 1;
    shift_ = 64;
    for (size_t c = capacity; c > 1; c >>= 1)
      --shift_;
    size_ = 0;
    for (size_t i = 0; i < keys.size(); ++i)
      if (keys[i])
        insert(keys[i], values[i]);
  }

  std::vector<const void *> keys_;
  std::vector<int64_t> values_;
  size_t size_ = 0;
  size_t mask_ = 0;
  int shift_ = 64;
};

} // namespace tessera
