//===- LshAttention.cpp - LSH (Reformer) attention in BLAS chunk tiles ----===//
//
// One OpenMP task per (batch, head). Per hash round the positions are
// sorted by (bucket, position) and the query rows qk, the keys
// k^ = qk/|qk| and the values gathered in that order, so the queries of a
// chunk and their keys (the own and the previous chunk) are contiguous rows
// and every product is one single-threaded OpenBLAS GEMM over at most
// kRows x 2 chunk scores (the T x T matrix never exists):
//
//   forward, per chunk: S = scale Q K^T, masked (not itself, causal,
//     padding, other buckets under same_bucket); the row's softmax over its
//     whole key set at once (lse = m + log l), P scaled by the attention-
//     dropout multipliers c, O = (c P) V / l. The rounds are combined with
//     softmax(lse_r) weights; a query that no round offers another key
//     (lsh_self_only) attends to itself in every round, 1/R each.
//   backward, per round and chunk, with the combined lse L and
//     D = dO . O (the forward's, or the forward again):
//     P = exp(S - L), dP = dO V^T, dS = scale P (c dP - D),
//     dQ = dS K, dK^ += dS^T Q, dV += (c P)^T dO,
//   accumulated in sorted order and added to the rows of each position; the
//   key path goes through k^ = qk/|qk| into the shared projection's
//   gradient, together with the query path.
//
// The same pairs, scores, lse and dropout counters as the CUDA kernels
// (LshAttention.cuh, AttentionBackward.cuh): only the order of the sums
// differs. One task owns one head, so the result does not depend on the
// thread count.
//
//===----------------------------------------------------------------------===//
#include "AttentionCommon.h"
#include "nncc/Kernels/AttentionMath.h"
#include "nncc/Kernels/BackwardMath.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace nncc {
namespace kernels {
namespace {

constexpr int64_t kRows = 64; // query rows per tile

/// Per-thread buffers of one (batch, head) task.
template <typename T> struct LshScratch {
  std::vector<T> kn, invn;             // k^ rows [T, dh], 1/|qk| [T]
  std::vector<int32_t> bucket, order;  // per round [R, T]
  std::vector<int32_t> count;          // counting sort
  std::vector<T> Qs, Ks, Vs;           // one round's rows in sorted order
  std::vector<T> S, Ot, inv;           // score tile, output tile, 1/l
  std::vector<T> o, lse;               // per-round outputs [R, T, dh], lse [R, T]
  std::vector<T> L, Dq, O;             // backward: combined lse, dO . O, out row
  std::vector<T> dOs, dP, dQs, dKs, dVs, dkn;
  std::vector<uint8_t> selfOnly;

  LshScratch(const LshAttentionArgs<T> &a, bool backward)
      : kn(a.T * a.dh), invn(a.T), bucket(a.rounds * a.T), order(a.rounds * a.T),
        count(a.nbuckets + 1), Qs(a.T * a.dh), Ks(a.T * a.dh), Vs(a.T * a.dh),
        S(kRows * keyStride(a)), Ot(kRows * a.dh), inv(kRows), o(a.rounds * a.T * a.dh),
        lse(a.rounds * a.T) {
    if (!backward)
      return;
    L.resize(a.T);
    Dq.resize(a.T);
    O.resize(a.dh);
    dOs.resize(a.T * a.dh);
    dP.resize(S.size());
    dQs.resize(a.T * a.dh);
    dKs.resize(a.T * a.dh);
    dVs.resize(a.T * a.dh);
    dkn.resize(a.T * a.dh);
    selfOnly.resize(a.T);
  }
  /// Row stride of the score tiles: a chunk's keys (own and previous).
  static int64_t keyStride(const LshAttentionArgs<T> &a) {
    return std::max<int64_t>(1, std::min<int64_t>(a.T, 2 * (int64_t)a.chunk));
  }
};

/// The positions' rows of head (b, h).
template <typename T> struct LshHead {
  int64_t b, h;
  const T *qk, *v;         // row stride a.ldi
  const uint8_t *kpmRow;   // null without padding
};

template <typename T>
LshHead<T> headOf(const LshAttentionArgs<T> &a, int64_t task) {
  const int64_t b = task / a.H, h = task % a.H;
  return {b, h, a.qk + b * a.T * a.ldi + h * a.dh, a.v + b * a.T * a.ldi + h * a.dh,
          a.kpm ? a.kpm + b * a.T : nullptr};
}

/// k^ = qk/|qk| of every position, then the buckets of every round and the
/// positions sorted by (bucket, position) (stable counting sort).
template <typename T>
void hashHead(const LshAttentionArgs<T> &a, const LshHead<T> &hd, LshScratch<T> &s) {
  const int64_t Tn = a.T, dh = a.dh;
  const int nb2 = a.nbuckets / 2;
  for (int64_t t = 0; t < Tn; ++t) {
    const T *x = hd.qk + t * a.ldi;
    const T ss = laneDot(x, x, dh);
    const T inv = ss > T(0) ? T(1) / nsqrt(ss) : T(0);
    s.invn[t] = inv;
    for (int64_t d = 0; d < dh; ++d)
      s.kn[t * dh + d] = x[d] * inv;
  }
  for (int r = 0; r < a.rounds; ++r) {
    const T *R = a.rot + (int64_t)r * dh * nb2;
    int32_t *bk = s.bucket.data() + r * Tn, *ord = s.order.data() + r * Tn;
    for (int64_t t = 0; t < Tn; ++t)
      bk[t] = lsh_bucket(hd.qk + t * a.ldi, R, (int)dh, nb2);
    std::fill(s.count.begin(), s.count.end(), 0);
    for (int64_t t = 0; t < Tn; ++t)
      ++s.count[bk[t] + 1];
    for (int c = 0; c < a.nbuckets; ++c)
      s.count[c + 1] += s.count[c];
    for (int64_t t = 0; t < Tn; ++t)
      ord[s.count[bk[t]]++] = (int32_t)t;
  }
}

/// Round r's query, key and value rows (and dout's, when given) in sorted
/// order.
template <typename T>
void gatherRound(const LshAttentionArgs<T> &a, const LshHead<T> &hd, int r, LshScratch<T> &s,
                 const T *dout) {
  const int64_t dh = a.dh;
  const int32_t *ord = s.order.data() + r * a.T;
  for (int64_t p = 0; p < a.T; ++p) {
    const int64_t t = ord[p];
    std::memcpy(&s.Qs[p * dh], hd.qk + t * a.ldi, sizeof(T) * dh);
    std::memcpy(&s.Ks[p * dh], &s.kn[t * dh], sizeof(T) * dh);
    std::memcpy(&s.Vs[p * dh], hd.v + t * a.ldi, sizeof(T) * dh);
    if (dout)
      std::memcpy(&s.dOs[p * dh], dout + t * a.ldo, sizeof(T) * dh);
  }
}

/// Whether position u is one of query t's keys in a round of buckets bk:
/// another admissible position (of t's bucket under same_bucket), or t
/// itself when selfOnly (may be null) marks t as self-only.
template <typename T>
inline bool admits(const LshAttentionArgs<T> &a, const LshHead<T> &hd, const int32_t *bk,
                   const uint8_t *selfOnly, int t, int u) {
  if (u == t)
    return selfOnly && selfOnly[t];
  if (!key_admissible(t, u, a.causal, hd.kpmRow))
    return false;
  return !a.sameBucket || bk[u] == bk[t];
}

/// Sorted key positions [lo, hi) of the queries of chunk c: their own
/// chunk and the previous one.
inline void chunkKeys(int64_t c, int64_t chunk, int64_t Tn, int64_t &lo, int64_t &hi) {
  lo = c > 0 ? (c - 1) * chunk : 0;
  hi = std::min<int64_t>(Tn, (c + 1) * chunk);
}

/// Dropout counter of (round r, query t)'s key 0 (Kernels.h numbering).
template <typename T>
inline uint64_t rowCounter(const LshAttentionArgs<T> &a, const LshHead<T> &hd, int r,
                           int64_t t) {
  return (uint64_t)((((hd.b * a.H + hd.h) * a.rounds + r) * a.T + t) * a.T);
}

/// Calls f(p0, nq, lo, nk) for every tile of round-sorted query rows
/// [p0, p0 + nq) (at most kRows, within one chunk) and their keys [lo, lo + nk).
template <typename T, typename F> void forEachTile(const LshAttentionArgs<T> &a, F &&f) {
  const int64_t chunk = a.chunk;
  for (int64_t c0 = 0; c0 < a.T; c0 += chunk) {
    int64_t lo, hi;
    chunkKeys(c0 / chunk, chunk, a.T, lo, hi);
    const int64_t cEnd = std::min<int64_t>(a.T, c0 + chunk);
    for (int64_t p0 = c0; p0 < cEnd; p0 += kRows)
      f(p0, std::min<int64_t>(kRows, cEnd - p0), lo, hi - lo);
  }
}

/// Round r's forward of the tile (p0, nq, lo, nk) (rows gathered): each
/// query's log-sum-exp into s.lse[r, t] (neg_big when it has no key) and
/// its normalised output into s.o[r, t].
template <typename T>
void forwardTile(const LshAttentionArgs<T> &a, const LshHead<T> &hd, int r, int64_t p0,
                 int64_t nq, int64_t lo, int64_t nk, const uint8_t *selfOnly, LshScratch<T> &s) {
  const int64_t dh = a.dh, ldS = LshScratch<T>::keyStride(a);
  const int32_t *bk = s.bucket.data() + r * a.T, *ord = s.order.data() + r * a.T;
  gemm(false, true, nq, nk, dh, a.scale, &s.Qs[p0 * dh], dh, &s.Ks[lo * dh], dh, T(0),
       s.S.data(), ldS);
  for (int64_t i = 0; i < nq; ++i) {
    const int t = ord[p0 + i];
    T *row = s.S.data() + i * ldS;
    T m = neg_big<T>();
    for (int64_t jj = 0; jj < nk; ++jj) {
      if (!admits(a, hd, bk, selfOnly, t, ord[lo + jj]))
        row[jj] = neg_big<T>();
      else
        m = row[jj] > m ? row[jj] : m;
    }
    if (!(m > neg_big<T>())) { // no key in this round
      std::fill(row, row + nk, T(0));
      s.inv[i] = T(0);
      s.lse[r * a.T + t] = neg_big<T>();
      continue;
    }
    T l = T(0);
    for (int64_t jj = 0; jj < nk; ++jj) {
      const T p = row[jj] <= neg_big<T>() ? T(0) : nexp(row[jj] - m);
      row[jj] = p;
      l += p;
    }
    s.inv[i] = T(1) / l;
    s.lse[r * a.T + t] = m + nlog(l);
    if (a.drop.on()) {
      const uint64_t rc = rowCounter(a, hd, r, t);
      for (int64_t jj = 0; jj < nk; ++jj)
        if (row[jj] != T(0))
          row[jj] *= a.drop.mult(rc + (uint64_t)ord[lo + jj]);
    }
  }
  gemm(false, false, nq, dh, nk, T(1), s.S.data(), ldS, &s.Vs[lo * dh], dh, T(0), s.Ot.data(),
       dh);
  for (int64_t i = 0; i < nq; ++i) {
    const T *src = &s.Ot[i * dh];
    T *dst = &s.o[((int64_t)r * a.T + ord[p0 + i]) * dh];
    for (int64_t d = 0; d < dh; ++d)
      dst[d] = src[d] * s.inv[i];
  }
}

/// Every round's lse and output (s.lse, s.o) of head hd.
template <typename T>
void forwardRounds(const LshAttentionArgs<T> &a, const LshHead<T> &hd, const uint8_t *selfOnly,
                   LshScratch<T> &s) {
  for (int r = 0; r < a.rounds; ++r) {
    gatherRound(a, hd, r, s, static_cast<const T *>(nullptr));
    forEachTile(a, [&](int64_t p0, int64_t nq, int64_t lo, int64_t nk) {
      forwardTile(a, hd, r, p0, nq, lo, nk, selfOnly, s);
    });
  }
}

/// Round r's backward of the tile (p0, nq, lo, nk) (rows and dout
/// gathered): dQ of its queries into s.dQs, their shares of dK^ and dV
/// added to s.dKs, s.dVs (sorted order).
template <typename T>
void backwardTile(const LshAttentionArgs<T> &a, const LshHead<T> &hd, int r, int64_t p0,
                  int64_t nq, int64_t lo, int64_t nk, LshScratch<T> &s) {
  const int64_t dh = a.dh, ldS = LshScratch<T>::keyStride(a);
  const int32_t *bk = s.bucket.data() + r * a.T, *ord = s.order.data() + r * a.T;
  gemm(false, true, nq, nk, dh, a.scale, &s.Qs[p0 * dh], dh, &s.Ks[lo * dh], dh, T(0),
       s.S.data(), ldS);
  gemm(false, true, nq, nk, dh, T(1), &s.dOs[p0 * dh], dh, &s.Vs[lo * dh], dh, T(0),
       s.dP.data(), ldS);
  for (int64_t i = 0; i < nq; ++i) {
    const int t = ord[p0 + i];
    T *prow = s.S.data() + i * ldS, *dsrow = s.dP.data() + i * ldS;
    const T Lt = s.L[t], Dt = s.Dq[t];
    if (!(Lt > neg_big<T>())) { // no key in any round: no gradient
      std::fill(prow, prow + nk, T(0));
      std::fill(dsrow, dsrow + nk, T(0));
      continue;
    }
    const uint64_t rc = rowCounter(a, hd, r, t);
    for (int64_t jj = 0; jj < nk; ++jj) {
      const int u = ord[lo + jj];
      if (!admits(a, hd, bk, s.selfOnly.data(), t, u)) {
        prow[jj] = dsrow[jj] = T(0);
        continue;
      }
      backwardPair(prow[jj], dsrow[jj], Lt, Dt, a.drop.mult(rc + (uint64_t)u), a.scale);
    }
  }
  gemm(false, false, nq, dh, nk, T(1), s.dP.data(), ldS, &s.Ks[lo * dh], dh, T(0),
       &s.dQs[p0 * dh], dh);
  gemm(true, false, nk, dh, nq, T(1), s.dP.data(), ldS, &s.Qs[p0 * dh], dh, T(1),
       &s.dKs[lo * dh], dh);
  gemm(true, false, nk, dh, nq, T(1), s.S.data(), ldS, &s.dOs[p0 * dh], dh, T(1),
       &s.dVs[lo * dh], dh);
}

/// Marks the queries that no round offers another key (and that are not
/// padded themselves): their key list is themselves, in every round.
template <typename T>
void markSelfOnly(const LshAttentionArgs<T> &a, const LshHead<T> &hd, LshScratch<T> &s) {
  std::vector<uint8_t> &other = s.selfOnly; // "has another key" first
  std::fill(other.begin(), other.end(), (uint8_t)0);
  for (int r = 0; r < a.rounds; ++r) {
    const int32_t *bk = s.bucket.data() + r * a.T, *ord = s.order.data() + r * a.T;
    forEachTile(a, [&](int64_t p0, int64_t nq, int64_t lo, int64_t nk) {
      for (int64_t i = 0; i < nq; ++i) {
        const int t = ord[p0 + i];
        for (int64_t jj = 0; jj < nk && !other[t]; ++jj)
          if (admits(a, hd, bk, static_cast<const uint8_t *>(nullptr), t, ord[lo + jj]))
            other[t] = 1;
      }
    });
  }
  for (int64_t t = 0; t < a.T; ++t)
    other[t] = !other[t] && key_admissible((int)t, (int)t, a.causal, hd.kpmRow);
}

} // namespace

template <typename T>
void lshAttentionForward(const LshAttentionArgs<T> &a, T *out, int32_t *bucketsOut, T *lseOut) {
  const int64_t tasks = a.B * a.H, Tn = a.T, dh = a.dh;
  const int R = a.rounds;
  SerialBlasScope serialBlas;
#pragma omp parallel
  {
    LshScratch<T> s(a, false);
    std::vector<T> w(R), l(R);
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < tasks; ++task) {
      const LshHead<T> hd = headOf(a, task);
      hashHead(a, hd, s);
      if (bucketsOut)
        std::memcpy(bucketsOut + task * R * Tn, s.bucket.data(), sizeof(int32_t) * R * Tn);
      forwardRounds(a, hd, static_cast<const uint8_t *>(nullptr), s);
      // Combine the rounds with softmax(lse_r) weights (duplicates counted).
      for (int64_t t = 0; t < Tn; ++t) {
        for (int r = 0; r < R; ++r)
          l[r] = s.lse[r * Tn + t];
        T *orow = out + (hd.b * Tn + t) * a.ldo + hd.h * dh;
        if (lsh_self_only(l.data(), R) && key_admissible((int)t, (int)t, a.causal, hd.kpmRow)) {
          // No round offered another key: the query attends to itself in
          // every round, each round weighted 1/R (with its dropout draw).
          T mult = T(0);
          for (int r = 0; r < R; ++r)
            mult += a.drop.mult(rowCounter(a, hd, r, t) + (uint64_t)t);
          mult /= T(R);
          const T *vr = hd.v + t * a.ldi;
          for (int64_t d = 0; d < dh; ++d)
            orow[d] = mult * vr[d];
          if (lseOut) {
            const T self = laneDot(hd.qk + t * a.ldi, &s.kn[t * dh], dh);
            lseOut[task * Tn + t] = lsh_self_lse(self * a.scale, R);
          }
          continue;
        }
        lse_round_weights(l.data(), R, w.data());
        if (lseOut)
          lseOut[task * Tn + t] = logsumexp_rounds(l.data(), R);
        for (int64_t d = 0; d < dh; ++d) {
          T acc = T(0);
          for (int r = 0; r < R; ++r)
            acc += w[r] * s.o[(r * Tn + t) * dh + d];
          orow[d] = acc;
        }
      }
    }
  }
}

template <typename T>
void lshAttentionBackward(const LshAttentionArgs<T> &a, const T *dout, T *dqk, T *dv,
                          int64_t ldg, T *out, const T *savedLse) {
  const int64_t tasks = a.B * a.H, Tn = a.T, dh = a.dh;
  const int R = a.rounds;
  SerialBlasScope serialBlas;
#pragma omp parallel
  {
    LshScratch<T> s(a, true);
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < tasks; ++task) {
      const LshHead<T> hd = headOf(a, task);
      const T *dobase = dout + hd.b * Tn * a.ldo + hd.h * dh;
      T *dqbase = dqk + hd.b * Tn * ldg + hd.h * dh;
      T *dvbase = dv + hd.b * Tn * ldg + hd.h * dh;
      hashHead(a, hd, s);
      markSelfOnly(a, hd, s);
      if (savedLse) {
        // The forward's combined log-sum-exp and output.
        for (int64_t t = 0; t < Tn; ++t) {
          s.L[t] = savedLse[task * Tn + t];
          s.Dq[t] = s.L[t] > neg_big<T>()
                        ? laneDot(dobase + t * a.ldo, out + (hd.b * Tn + t) * a.ldo + hd.h * dh,
                                  dh)
                        : T(0);
        }
      } else {
        // The forward again (self-only queries see themselves in every
        // round), its rounds combined; Dq = dO . O.
        forwardRounds(a, hd, s.selfOnly.data(), s);
        for (int64_t t = 0; t < Tn; ++t) {
          T mx = neg_big<T>();
          for (int r = 0; r < R; ++r)
            mx = nmax(mx, s.lse[r * Tn + t]);
          T *orow = out ? out + (hd.b * Tn + t) * a.ldo + hd.h * dh : s.O.data();
          std::fill(orow, orow + dh, T(0));
          if (!(mx > neg_big<T>())) {
            s.L[t] = neg_big<T>();
            s.Dq[t] = T(0);
            continue;
          }
          T sum = T(0);
          for (int r = 0; r < R; ++r)
            if (s.lse[r * Tn + t] > neg_big<T>())
              sum += nexp(s.lse[r * Tn + t] - mx);
          s.L[t] = mx + nlog(sum);
          for (int r = 0; r < R; ++r) {
            if (!(s.lse[r * Tn + t] > neg_big<T>()))
              continue;
            const T wr = nexp(s.lse[r * Tn + t] - s.L[t]);
            for (int64_t d = 0; d < dh; ++d)
              orow[d] += wr * s.o[(r * Tn + t) * dh + d];
          }
          s.Dq[t] = laneDot(dobase + t * a.ldo, orow, dh);
        }
      }
      // Gradients, round by round in sorted order, then added to the rows.
      for (int64_t t = 0; t < Tn; ++t) {
        std::memset(dqbase + t * ldg, 0, sizeof(T) * dh);
        std::memset(dvbase + t * ldg, 0, sizeof(T) * dh);
      }
      std::fill(s.dkn.begin(), s.dkn.end(), T(0));
      for (int r = 0; r < R; ++r) {
        gatherRound(a, hd, r, s, dobase);
        std::fill(s.dKs.begin(), s.dKs.end(), T(0));
        std::fill(s.dVs.begin(), s.dVs.end(), T(0));
        forEachTile(a, [&](int64_t p0, int64_t nq, int64_t lo, int64_t nk) {
          backwardTile(a, hd, r, p0, nq, lo, nk, s);
        });
        const int32_t *ord = s.order.data() + r * Tn;
        for (int64_t p = 0; p < Tn; ++p) {
          const int64_t t = ord[p];
          T *dqr = dqbase + t * ldg, *dvr = dvbase + t * ldg, *dkr = &s.dkn[t * dh];
          const T *gq = &s.dQs[p * dh], *gk = &s.dKs[p * dh], *gv = &s.dVs[p * dh];
          for (int64_t d = 0; d < dh; ++d)
            dqr[d] += gq[d];
          for (int64_t d = 0; d < dh; ++d)
            dkr[d] += gk[d];
          for (int64_t d = 0; d < dh; ++d)
            dvr[d] += gv[d];
        }
      }
      // Key path through k^ = qk/|qk| into the shared projection.
      for (int64_t t = 0; t < Tn; ++t) {
        const T *kh = &s.kn[t * dh], *dkh = &s.dkn[t * dh];
        const T kd = laneDot(kh, dkh, dh);
        T *dr = dqbase + t * ldg;
        for (int64_t d = 0; d < dh; ++d)
          dr[d] += unit_norm_grad(kh[d], dkh[d], kd, s.invn[t]);
      }
    }
  }
}

template void lshAttentionForward<float>(const LshAttentionArgs<float> &, float *, int32_t *,
                                         float *);
template void lshAttentionForward<double>(const LshAttentionArgs<double> &, double *, int32_t *,
                                          double *);
template void lshAttentionBackward<float>(const LshAttentionArgs<float> &, const float *,
                                          float *, float *, int64_t, float *, const float *);
template void lshAttentionBackward<double>(const LshAttentionArgs<double> &, const double *,
                                           double *, double *, int64_t, double *,
                                           const double *);

} // namespace kernels
} // namespace nncc
