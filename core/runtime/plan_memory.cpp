//===- runtime/plan_memory.cpp - Executor plan: memory ------------------===//
//
// planMemory assigns arena offsets by liveness: best fit over a free list
// of 64-byte aligned ranges, the arena growing at its end when none fits.
//
//===----------------------------------------------------------------------===//
#include "runtime/plan.h"
#include "runtime/plan_internal.h"
#include "tessera/c/dtype.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <map>

namespace tessera::runtime {

using plan_detail::stepName;

namespace {

uint64_t alignUp(uint64_t v) {
  return (v + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
}


/// The arena's free ranges, offset -> size, coalesced; the arena grows at
/// its end when no free range fits.
class ArenaAllocator {
public:
  uint64_t allocate(uint64_t size) {
    // Best fit: the smallest free range that holds `size` (lowest offset on ties).
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it)
      if (it->second >= size && (best == free_.end() || it->second < best->second))
        best = it;
    if (best != free_.end()) {
      uint64_t offset = best->first, left = best->second - size;
      free_.erase(best);
      if (left > 0)
        free_[offset + size] = left;
      return offset;
    }
    // Grow: a free range that ends at the arena's end is extended.
    if (!free_.empty()) {
      auto last = std::prev(free_.end());
      if (last->first + last->second == end_) {
        uint64_t offset = last->first;
        free_.erase(last);
        end_ = offset + size;
        return offset;
      }
    }
    uint64_t offset = end_;
    end_ += size;
    return offset;
  }

  void release(uint64_t offset, uint64_t size) {
    auto [it, inserted] = free_.emplace(offset, size);
    // Merge with the next and the previous range.
    auto next = std::next(it);
    if (next != free_.end() && it->first + it->second == next->first) {
      it->second += next->second;
      free_.erase(next);
    }
    if (it != free_.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == it->first) {
        prev->second += it->second;
        free_.erase(it);
      }
    }
  }

  uint64_t size() const { return end_; }

private:
  std::map<uint64_t, uint64_t> free_;
  uint64_t end_ = 0;
};

} // namespace

std::vector<bool> symbolsFollowing(const Plan &plan, size_t k) {
  std::vector<bool> follows(plan.symbols.size(), false);
  follows[k] = true;
  for (size_t j = k + 1; j < plan.symbols.size(); ++j)
    for (const PlanSymbol::Term &t : plan.symbols[j].terms)
      for (uint32_t i : t.symbols)
        follows[j] = follows[j] || (i < j && follows[i]);
  return follows;
}

Expected<std::vector<LiveRange>> liveRanges(const Plan &plan) {
  constexpr int64_t kNever = -1;
  const size_t nb = plan.buffers.size();
  std::vector<int64_t> firstWrite(nb, kNever), lastRead(nb, kNever);
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const Step &step = plan.steps[s];
    for (size_t a = 0; a < step.args.size(); ++a) {
      uint32_t b = step.args[a];
      if (b >= nb)
        return Error::format("{}: buffer {} out of range ({} buffers)", stepName(plan, s), b, nb);
      if (plan.buffers[b].kind != BufferKind::Activation)
        continue;
      if (a < step.numInputs) {
        if (firstWrite[b] == kNever)
          return Error::format("{}: reads activation buffer {} before any step writes it",
                               stepName(plan, s), b);
        lastRead[b] = int64_t(s);
      } else if (firstWrite[b] == kNever) {
        firstWrite[b] = int64_t(s);
      }
    }
  }

  // A buffer written but never read lives for its writing step; one never
  // used lives at step 0 (it still gets distinct bytes, so that every
  // activation range is valid).
  std::vector<LiveRange> live(nb);
  for (uint32_t b = 0; b < nb; ++b) {
    live[b].first = firstWrite[b] == kNever ? 0 : firstWrite[b];
    live[b].last = std::max(live[b].first, lastRead[b]);
  }
  // A loop is the range [target, s] of a backward jump at step s. A buffer
  // used in it and outside it must keep its bytes through every iteration:
  // its range widens to the whole loop (repeated for nested loops).
  std::vector<std::pair<int64_t, int64_t>> loops;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const Step &step = plan.steps[s];
    if ((step.kind == StepKind::Jump || step.kind == StepKind::LoopTest) && step.target <= s)
      loops.emplace_back(int64_t(step.target), int64_t(s));
  }
  for (bool changed = !loops.empty(); changed;) {
    changed = false;
    for (const auto &[head, back] : loops)
      for (LiveRange &r : live) {
        const bool used = r.first <= back && r.last >= head;
        const bool crosses = r.first < head || r.last > back;
        const bool whole = r.first <= head && r.last >= back;
        if (used && crosses && !whole) {
          r.first = std::min(r.first, head);
          r.last = std::max(r.last, back);
          changed = true;
        }
      }
  }
  return live;
}

Status planMemory(Plan &plan, const std::vector<int64_t> &symbolValues) {
  const size_t nb = plan.buffers.size();
  const std::vector<int64_t> values =
      symbolValues.empty() ? plan.nominalSymbolValues() : symbolValues;
  auto sizeOf = [&](uint32_t b) {
    const TensorInfo &info = plan.buffers[b].info;
    return plan.symbols.empty() || !info.symbolic() ? info.bytes() : info.resolved(values).bytes();
  };
  TS_ASSIGN_OR_RETURN(std::vector<LiveRange> live, liveRanges(plan));

  // Buffers that start (end) at each step.
  const size_t ns = std::max<size_t>(plan.steps.size(), 1);
  std::vector<std::vector<uint32_t>> starts(ns), ends(ns);
  plan.activationBytesNoReuse = 0;
  for (uint32_t b = 0; b < nb; ++b) {
    if (plan.buffers[b].kind != BufferKind::Activation)
      continue;
    starts[size_t(live[b].first)].push_back(b);
    ends[size_t(live[b].last)].push_back(b);
    plan.activationBytesNoReuse += alignUp(sizeOf(b));
  }

  ArenaAllocator arena;
  for (size_t s = 0; s < ns; ++s) {
    // Larger buffers first: fewer holes.
    std::stable_sort(starts[s].begin(), starts[s].end(), [&](uint32_t a, uint32_t b) {
      return sizeOf(a) > sizeOf(b);
    });
    for (uint32_t b : starts[s])
      plan.buffers[b].offset =
          arena.allocate(std::max<uint64_t>(alignUp(sizeOf(b)), kBufferAlignment));
    // Freed after the step: a step's inputs never share bytes with its outputs.
    for (uint32_t b : ends[s])
      arena.release(plan.buffers[b].offset,
                    std::max<uint64_t>(alignUp(sizeOf(b)), kBufferAlignment));
  }
  plan.arenaBytes = arena.size();
  return okStatus();
}

} // namespace tessera::runtime
