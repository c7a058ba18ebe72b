//===- RevolveTests.cpp - the binomial checkpointing schedule -------------===//
//
// nncc/Kernels/Revolve.h (the schedule nncc_rnn_backward runs with snapshots):
// RevolveCursor serves every state of a reverse sweep correctly, never
// holds more than its snapshots, and advances exactly the minimal number
// of forward steps, which equals Griewank-Walther's closed form
// r·l − C(c + r, c + 1) and an exhaustive dynamic programme.
//
//===----------------------------------------------------------------------===//
#include "nncc/Kernels/Revolve.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

using namespace nncc::kernels;

namespace {

/// The minimal forward steps to reverse l steps with c checkpoints (the
/// initial state included): F(1, c) = 0, F(l, 1) = l(l-1)/2,
/// F(l, c) = min_m m + F(l - m, c - 1) + F(m, c).
std::vector<std::vector<int64_t>> optimum(int64_t maxL, int64_t maxC) {
  std::vector<std::vector<int64_t>> F(maxL + 1, std::vector<int64_t>(maxC + 1, 0));
  for (int64_t l = 1; l <= maxL; ++l)
    for (int64_t c = 1; c <= maxC; ++c) {
      if (l == 1)
        F[l][c] = 0;
      else if (c == 1)
        F[l][c] = l * (l - 1) / 2;
      else {
        int64_t best = INT64_MAX;
        for (int64_t m = 1; m < l; ++m)
          best = std::min(best, m + F[l - m][c - 1] + F[m][c]);
        F[l][c] = best;
      }
    }
  return F;
}

/// A chain whose state is the step index; counts what the cursor does.
struct Chain {
  std::vector<int64_t> slots;
  int64_t state = -1, maxUsed = 0;
  explicit Chain(int64_t s) : slots(s, -1) {}
  void reset() { state = 0; }
  void load(int64_t slot) {
    ASSERT_GE(slots[slot], 0);
    state = slots[slot];
  }
  void store(int64_t slot) {
    slots[slot] = state;
    maxUsed = std::max(maxUsed, slot + 1);
  }
  void advance(int64_t st) {
    ASSERT_EQ(state, st);
    state = st + 1;
  }
};

TEST(Revolve, BinomialNumbers) {
  EXPECT_EQ(revolve_beta(3, 2), 10); // C(5, 3)
  EXPECT_EQ(revolve_beta(9, -1), 0);
  EXPECT_EQ(revolve_repetitions(10, 3), 2);
  EXPECT_EQ(revolve_repetitions(11, 3), 3);
  // Saturates instead of overflowing.
  EXPECT_EQ(revolve_beta(1000, 1000), int64_t(1) << 62);
}

TEST(Revolve, CursorIsOptimalAndCorrect) {
  const int64_t maxL = 300, maxS = 7;
  auto F = optimum(maxL, maxS + 1);
  for (int64_t s = 1; s <= maxS; ++s)
    for (int64_t l = 1; l <= maxL; ++l) {
      Chain chain(s);
      std::vector<int64_t> pos(s + 1);
      RevolveCursor cursor(s, pos.data());
      for (int64_t st = l - 1; st >= 0; --st) {
        cursor.seek(st, chain);
        ASSERT_EQ(chain.state, st) << "l=" << l << " s=" << s;
      }
      EXPECT_LE(chain.maxUsed, s);
      EXPECT_EQ(cursor.advanced(), F[l][s + 1]) << "l=" << l << " s=" << s;
      EXPECT_EQ(revolve_forward_steps(l, s), F[l][s + 1]) << "l=" << l << " s=" << s;
    }
}

TEST(Revolve, LongChains) {
  // T = 4096: the closed form, at most r forward steps per step.
  for (int64_t s : {2, 12, 64}) {
    Chain chain(s);
    std::vector<int64_t> pos(s + 1);
    RevolveCursor cursor(s, pos.data());
    for (int64_t st = 4095; st >= 0; --st)
      cursor.seek(st, chain);
    const int64_t r = revolve_repetitions(4096, s + 1);
    EXPECT_EQ(cursor.advanced(), r * 4096 - revolve_beta(s + 2, r - 1));
    EXPECT_EQ(cursor.advanced(), revolve_forward_steps(4096, s));
    EXPECT_LE(cursor.advanced(), r * 4096);
  }
  EXPECT_EQ(revolve_forward_steps(4096, 8), 21573);
  EXPECT_EQ(revolve_forward_steps(4096, 64), 10010);
}

} // namespace
