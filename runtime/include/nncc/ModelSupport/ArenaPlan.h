//===- ArenaPlan.h - offsets of the buffer plan in the arena -----*- C++ -*-===//
//
// The one placement algorithm of nncc's buffer plan, shared by the runtime
// (libnncc_model_support sizes the arena when the dims are bound) and the
// compiler (`nncc inspect --memory` and the rematerialisation pass predict
// the same offsets before anything runs). Header-only, no dependencies.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_MODELSUPPORT_ARENAPLAN_H
#define NNCC_MODELSUPPORT_ARENAPLAN_H

#include <algorithm>
#include <cstdint>
#include <vector>

namespace nncc::plan {

/// Every planned region starts at a multiple of this (NNCC_ARENA_ALIGNMENT).
constexpr uint64_t kAlignment = 64;

inline uint64_t alignUp(uint64_t bytes) {
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

/// Offsets for `n` buffers of `bytes[i]` live from launch `first[i]` to
/// `last[i]` (inclusive): buffers whose ranges overlap never share bytes.
/// Largest first (stable), each at the lowest aligned offset that fits
/// between the already placed buffers it overlaps. Returns the arena size.
inline uint64_t placeBuffers(int32_t n, const uint64_t *bytes, const int32_t *first,
                             const int32_t *last, uint64_t *offsets) {
  std::vector<int32_t> order(static_cast<size_t>(std::max(n, 0)));
  for (int32_t i = 0; i < n; ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return bytes[a] > bytes[b]; });
  struct Busy {
    uint64_t begin, end;
  };
  std::vector<int32_t> placed;
  std::vector<Busy> busy;
  uint64_t total = 0;
  for (int32_t i : order) {
    const uint64_t size = alignUp(bytes[i]);
    busy.clear();
    for (int32_t j : placed)
      if (!(last[j] < first[i] || last[i] < first[j]))
        busy.push_back({offsets[j], offsets[j] + alignUp(bytes[j])});
    std::sort(busy.begin(), busy.end(),
              [](const Busy &a, const Busy &b) { return a.begin < b.begin; });
    uint64_t at = 0;
    for (const Busy &b : busy) {
      if (b.begin >= at + size)
        break;
      at = std::max(at, b.end);
    }
    offsets[i] = at;
    total = std::max(total, at + size);
    placed.push_back(i);
  }
  return total;
}

/// Does buffer [first, last] meet the launch range [lo, hi)?
inline bool meets(int32_t first, int32_t last, int32_t lo, int32_t hi) {
  return first < hi && last >= lo;
}

} // namespace nncc::plan

#endif // NNCC_MODELSUPPORT_ARENAPLAN_H
