//===- Revolve.h - Binomial checkpointing schedule of a reversed scan -*- C++ -*-===//
//
// Griewank & Walther's binomial schedule (Revolve, ACM TOMS 26(1), 2000)
// for reversing a chain of l steps whose state can be stored in `s`
// snapshot slots besides the initial state, which is always available.
// With c = s + 1 checkpoints (the initial one included) and r the smallest
// integer with l <= beta(c, r) = C(c + r, c), the schedule advances
//
//   t(l, c) = r * l - C(c + r, c + 1)
//
// forward steps in all (the minimum), never more than r per step. The
// reversed steps themselves (recomputed once more to get their
// intermediates) are not counted.
//
// RevolveCursor produces the states in the order a reverse sweep needs
// them: seek(l - 1), seek(l - 2), ..., seek(0), each leaving the state
// entering that step in the working state. It is header-only and
// allocation-free so that kernels (nncc_rnn_backward's binomial schedule)
// and tests share it.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_REVOLVE_H
#define NNCC_KERNELS_REVOLVE_H

#include <cstdint>

namespace nncc {
namespace kernels {

/// beta(c, r) = C(c + r, c) for r >= 0 (0 for r < 0), saturating at 2^62.
inline int64_t revolve_beta(int64_t c, int64_t r) {
  if (r < 0)
    return 0;
  const int64_t cap = int64_t(1) << 62;
  int64_t b = 1;
  for (int64_t i = 1; i <= r; ++i) {
    if (b > cap / (c + i))
      return cap;
    b = b * (c + i) / i; // C(c+i, i) = C(c+i-1, i-1) (c+i) / i, exact
  }
  return b;
}

/// The smallest r with l <= beta(c, r): the repetition number (c >= 1).
inline int64_t revolve_repetitions(int64_t l, int64_t c) {
  int64_t r = 0;
  while (revolve_beta(c, r) < l)
    ++r;
  return r;
}

/// Forward steps the schedule advances to reverse l >= 0 steps with
/// `snapshots` >= 0 slots besides the initial state (t(l, s + 1) above).
inline int64_t revolve_forward_steps(int64_t l, int64_t snapshots) {
  if (l <= 1)
    return 0;
  const int64_t c = snapshots + 1;
  const int64_t r = revolve_repetitions(l, c);
  return r * l - revolve_beta(c + 1, r - 1);
}

/// Optimal length of the first advance when reversing l >= 2 steps with c
/// >= 2 checkpoints: the smallest m in [beta(c, r-2), beta(c, r-1)] with
/// l - m <= beta(c - 1, r), which is optimal (Griewank-Walther, Prop. 1).
inline int64_t revolve_split(int64_t l, int64_t c) {
  const int64_t r = revolve_repetitions(l, c);
  int64_t m = revolve_beta(c, r - 2);
  const int64_t rest = l - revolve_beta(c - 1, r);
  if (rest > m)
    m = rest;
  return m < 1 ? 1 : m;
}

/// Serves the states entering steps l-1, l-2, ..., 0 of a chain by the
/// binomial schedule. `pos` is caller storage for snapshots + 1 positions.
/// Ops (all on the caller's state):
///   void reset();              working state := initial state (step 0)
///   void load(int64_t slot);   working state := snapshot `slot`
///   void store(int64_t slot);  snapshot `slot` := working state
///   void advance(int64_t st);  working state: entering st -> entering st+1
class RevolveCursor {
public:
  RevolveCursor(int64_t snapshots, int64_t *pos)
      : snapshots_(snapshots), pos_(pos) {
    pos_[0] = 0;
  }

  /// Leaves the state entering step `st` in the working state; `st` must
  /// decrease from call to call.
  template <typename Ops> void seek(int64_t st, Ops &ops) {
    while (pos_[top_] > st) // snapshots past st are no longer needed
      --top_;
    int64_t p = pos_[top_];
    if (cur_ != p) {
      if (top_ == 0)
        ops.reset();
      else
        ops.load(top_ - 1);
      cur_ = p;
    }
    // Split the remaining range [p, st] by the binomial rule while slots
    // are free; then advance to st without storing.
    while (st - p >= 1 && top_ < snapshots_) {
      const int64_t m = p + revolve_split(st + 1 - p, snapshots_ - top_ + 1);
      for (; p < m; ++p, ++advanced_)
        ops.advance(p);
      pos_[++top_] = m;
      ops.store(top_ - 1);
    }
    for (; p < st; ++p, ++advanced_)
      ops.advance(p);
    cur_ = st;
  }

  /// Forward steps advanced so far.
  int64_t advanced() const { return advanced_; }

private:
  int64_t snapshots_;
  int64_t *pos_;
  int64_t top_ = 0;     // pos_[0..top_]: initial state, then the snapshots
  int64_t cur_ = -1;    // step the working state enters (-1: unset)
  int64_t advanced_ = 0;
};

} // namespace kernels
} // namespace nncc

#endif // NNCC_KERNELS_REVOLVE_H
