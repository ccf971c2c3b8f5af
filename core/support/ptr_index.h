//===- support/ptr_index.h - A flat hash table from pointers to ints -*- C++ -*-===//
//
// The traversals of 100,000-node graphs look every node up several times.
// std::unordered_map allocates one heap node per entry and chases a pointer
// per lookup; this table keeps keys and values in one flat array (open
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
      const Entry &e = entries_[i];
      if (e.key == p)
        return e.value;
      if (!e.key)
        return -1;
    }
  }
  bool contains(const void *p) const { return find(p) >= 0; }

  /// Stores `value` (>= 0) for `p` unless `p` is present. Returns the value
  /// stored for `p` and whether it was inserted.
  std::pair<int64_t, bool> insert(const void *p, int64_t value) {
    if (2 * (size_ + 1) > entries_.size())
      rehash(entries_.size() * 2);
    size_t i = slot(p);
    for (; entries_[i].key; i = (i + 1) & mask_)
      if (entries_[i].key == p)
        return {entries_[i].value, false};
    entries_[i] = {p, value};
    ++size_;
    return {value, true};
  }

  /// Replaces the value stored for `p`; does nothing when `p` is absent.
  void assign(const void *p, int64_t value) {
    for (size_t i = slot(p); entries_[i].key; i = (i + 1) & mask_)
      if (entries_[i].key == p) {
        entries_[i].value = value;
        return;
      }
  }

  size_t size() const { return size_; }

  /// Replaces every stored value v by f(v), in one sweep of the table.
  template <typename F> void transformValues(F f) {
    for (Entry &e : entries_)
      if (e.key)
        e.value = f(e.value);
  }

private:
  // Key and value side by side: a lookup touches one cache line.
  struct Entry {
    const void *key;
    int64_t value;
  };

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
    std::vector<Entry> entries(capacity, Entry{nullptr, -1});
    entries.swap(entries_);
    mask_ = capacity - 1;
    shift_ = 64;
    for (size_t c = capacity; c > 1; c >>= 1)
      --shift_;
    size_ = 0;
    for (const Entry &e : entries)
      if (e.key)
        insert(e.key, e.value);
  }

  std::vector<Entry> entries_;
  size_t size_ = 0;
  size_t mask_ = 0;
  int shift_ = 64;
};

} // namespace tessera
