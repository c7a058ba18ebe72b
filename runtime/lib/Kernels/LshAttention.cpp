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
    for (int64_t jj = 0; jj < nk; ++jj)
      if (!admits(a, hd, bk, selfOnly, t, ord[lo + jj]))
        row[jj] = neg_big<T>();
    const T m = rowMax(row, nk);
    if (!(m > neg_big<T>())) { // no key in this round
      std::fill(row, row + nk, T(0));
      s.inv[i] = T(0);
      s.lse[r * a.T + t] = neg_big<T>();
      continue;
    }
    const T l = rowExpSum(row, nk, m);
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


//===----------------------------------------------------------------------===//
// Hugging Face's conventions (NNCC_LSH_HF; transformers' LSHSelfAttention)
//===----------------------------------------------------------------------===//
//
// Keys k = qk / sqrt(|qk|^2 + dh 1e-6) (lsh_hf_inv_norm), scores q.k times
// a.scale (1 by default). Padded positions hash to the extra bucket
// nbuckets. With T > chunk the rounds' sorted entries form one sequence of
// N = R T (round r's positions sorted by (bucket, position), then round
// r + 1's), cut into nc = ceil(N / chunk) chunks; the queries of chunk c
// see the keys of chunk c - 1 (wrapping: chunk 0 sees chunk nc - 1, so a
// round's first chunk sees the previous round's last) and of chunk c. A
// key at the query's own position scores lsh_hf_self_score() (-1e5), a
// padded or (causal) later one is left out; everything else counts, a
// position met twice (from two rounds) twice. Each round's entry of a
// position gives an output and a log-sum-exp, combined over the rounds by
// softmax(lse_r). With T <= chunk: one plain attention over all T (HF's
// standard path), the same masks, no hashing, no rounds.

/// The sorted sequence of one head under the HF conventions.
struct HfPlan {
  int64_t N, C, nc; // entries, chunk length, chunks
  int Rq;           // rounds of queries (1 on the standard path)
  bool chunked;     // T > chunk
  int64_t W;        // widest key window (score tile stride)
};

template <typename T> HfPlan hfPlan(const LshAttentionArgs<T> &a) {
  HfPlan p;
  p.chunked = a.T > a.chunk;
  p.Rq = p.chunked ? a.rounds : 1;
  p.N = (int64_t)p.Rq * a.T;
  p.C = p.chunked ? (int64_t)a.chunk : std::max<int64_t>(1, a.T);
  p.nc = (p.N + p.C - 1) / p.C;
  p.W = p.chunked ? 2 * p.C : p.C;
  return p;
}

/// The sorted entries [lo, hi) of chunk c and of the chunk its queries
/// look back at ([plo, phi), empty on the standard path).
inline void hfWindow(const HfPlan &p, int64_t c, int64_t &lo, int64_t &hi, int64_t &plo,
                     int64_t &phi) {
  lo = c * p.C;
  hi = std::min(p.N, lo + p.C);
  plo = phi = 0;
  if (p.chunked) {
    const int64_t pc = (c + p.nc - 1) % p.nc;
    plo = pc * p.C;
    phi = std::min(p.N, plo + p.C);
  }
}

template <typename T> struct HfScratch {
  std::vector<T> kn, invn;
  std::vector<int32_t> bucket, order, count;
  std::vector<T> Qs, Ks, Vs, S, Ot, inv, o, lse;
  std::vector<T> L, Dq, O, dOs, dP, dQs, dKs, dVs, dkn, nself;

  HfScratch(const LshAttentionArgs<T> &a, const HfPlan &p, bool backward)
      : kn(a.T * a.dh), invn(a.T), bucket(a.rounds * a.T), order(std::max(p.N, a.T)),
        count(a.nbuckets + 2), Qs(p.N * a.dh), Ks(p.N * a.dh), Vs(p.N * a.dh),
        S(kRows * p.W), Ot(kRows * a.dh), inv(kRows), o(p.N * a.dh), lse(p.N) {
    if (!backward)
      return;
    L.resize(a.T);
    Dq.resize(a.T);
    O.resize(a.dh);
    dOs.resize(p.N * a.dh);
    dP.resize(S.size());
    dQs.resize(p.N * a.dh);
    dKs.resize(p.N * a.dh);
    dVs.resize(p.N * a.dh);
    dkn.resize(a.T * a.dh);
    nself.resize(a.T);
  }
};

/// Whether a query's combined log-sum-exp L says it saw only its own
/// position (every other key masked): L = -1e5 + log(copies) then, while any
/// other key of score s gives L >= s (|s| <= |qk|, far above -5e4).
template <typename T> inline bool hfSelfOnly(T L) { return L < lsh_hf_self_score<T>() / 2; }

/// Keys, buckets (padded positions: bucket nbuckets) and the sorted
/// sequence order[0, N) of head hd; every row gathered in that order (and
/// dout's when given).
template <typename T>
void hfPrepareHead(const LshAttentionArgs<T> &a, const HfPlan &p, const LshHead<T> &hd,
                   HfScratch<T> &s, const T *dout) {
  const int64_t Tn = a.T, dh = a.dh;
  const int nb2 = a.nbuckets / 2;
  for (int64_t t = 0; t < Tn; ++t) {
    const T *x = hd.qk + t * a.ldi;
    const T inv = lsh_hf_inv_norm(laneDot(x, x, dh), dh);
    s.invn[t] = inv;
    for (int64_t d = 0; d < dh; ++d)
      s.kn[t * dh + d] = x[d] * inv;
  }
  const int64_t ldr = (int64_t)a.rounds * nb2;
  for (int r = 0; r < a.rounds; ++r) {
    const T *R = a.rot + hd.h * dh * ldr + (int64_t)r * nb2;
    int32_t *bk = s.bucket.data() + r * Tn;
    for (int64_t t = 0; t < Tn; ++t)
      bk[t] = hd.kpmRow && hd.kpmRow[t] ? a.nbuckets
                                        : lsh_bucket_strided(hd.qk + t * a.ldi, R, (int)dh,
                                                             nb2, ldr);
    if (!p.chunked)
      continue;
    int32_t *ord = s.order.data() + r * Tn;
    std::fill(s.count.begin(), s.count.end(), 0);
    for (int64_t t = 0; t < Tn; ++t)
      ++s.count[bk[t] + 1];
    for (int c = 0; c <= a.nbuckets; ++c)
      s.count[c + 1] += s.count[c];
    for (int64_t t = 0; t < Tn; ++t)
      ord[s.count[bk[t]]++] = (int32_t)t;
  }
  if (!p.chunked)
    for (int64_t t = 0; t < Tn; ++t)
      s.order[t] = (int32_t)t;
  for (int64_t P = 0; P < p.N; ++P) {
    const int64_t t = s.order[P];
    std::memcpy(&s.Qs[P * dh], hd.qk + t * a.ldi, sizeof(T) * dh);
    std::memcpy(&s.Ks[P * dh], &s.kn[t * dh], sizeof(T) * dh);
    std::memcpy(&s.Vs[P * dh], hd.v + t * a.ldi, sizeof(T) * dh);
    if (dout)
      std::memcpy(&s.dOs[P * dh], dout + t * a.ldo, sizeof(T) * dh);
  }
}

/// Calls f(p0, nq, plo, nkp, lo, nko) for every tile of sorted queries
/// [p0, p0 + nq) (at most kRows, within one chunk) with its look-back keys
/// [plo, plo + nkp) and own-chunk keys [lo, lo + nko).
template <typename F> void hfForEachTile(const HfPlan &p, F &&f) {
  for (int64_t c = 0; c < p.nc; ++c) {
    int64_t lo, hi, plo, phi;
    hfWindow(p, c, lo, hi, plo, phi);
    for (int64_t p0 = lo; p0 < hi; p0 += kRows)
      f(p0, std::min<int64_t>(kRows, hi - p0), plo, phi - plo, lo, hi - lo);
  }
}

/// S[:, 0, nkp) = A Bᵀ over the look-back rows, S[:, nkp, nkp + nko) over
/// the own chunk's (alpha, row stride ldS).
template <typename T>
void hfScores(int64_t nq, int64_t dh, T alpha, const T *A, const T *Bm, int64_t plo,
              int64_t nkp, int64_t lo, int64_t nko, T *S, int64_t ldS) {
  if (nkp > 0)
    gemm(false, true, nq, nkp, dh, alpha, A, dh, Bm + plo * dh, dh, T(0), S, ldS);
  gemm(false, true, nq, nko, dh, alpha, A, dh, Bm + lo * dh, dh, T(0), S + nkp, ldS);
}

/// Sorted index of key column jj of a tile.
inline int64_t hfKeyIndex(int64_t jj, int64_t plo, int64_t nkp, int64_t lo) {
  return jj < nkp ? plo + jj : lo + (jj - nkp);
}

/// Query round of sorted entry P.
inline int hfRound(const HfPlan &p, int64_t P, int64_t Tn) {
  return p.chunked ? (int)(P / Tn) : 0;
}

/// Every query entry's lse (s.lse[P]) and normalised output (s.o[P]).
template <typename T>
void hfForwardEntries(const LshAttentionArgs<T> &a, const HfPlan &p, const LshHead<T> &hd,
                      HfScratch<T> &s) {
  const int64_t dh = a.dh, ldS = p.W;
  const T selfScore = lsh_hf_self_score<T>();
  hfForEachTile(p, [&](int64_t p0, int64_t nq, int64_t plo, int64_t nkp, int64_t lo,
                       int64_t nko) {
    const int64_t nk = nkp + nko;
    hfScores(nq, dh, a.scale, &s.Qs[p0 * dh], s.Ks.data(), plo, nkp, lo, nko, s.S.data(),
             ldS);
    for (int64_t i = 0; i < nq; ++i) {
      const int64_t P = p0 + i;
      const int t = s.order[P];
      T *row = s.S.data() + i * ldS;
      T m = neg_big<T>();
      for (int64_t jj = 0; jj < nk; ++jj) {
        const int u = s.order[hfKeyIndex(jj, plo, nkp, lo)];
        if (u == t)
          row[jj] = selfScore;
        else if (!key_admissible(t, u, a.causal, hd.kpmRow)) {
          row[jj] = neg_big<T>();
          continue;
        }
        m = row[jj] > m ? row[jj] : m;
      }
      const T l = rowExpSum(row, nk, m);
      s.inv[i] = T(1) / l;
      s.lse[P] = m + nlog(l);
      if (a.drop.on()) {
        const uint64_t rc = rowCounter(a, hd, hfRound(p, P, a.T), t);
        for (int64_t jj = 0; jj < nk; ++jj)
          if (row[jj] != T(0))
            row[jj] *= a.drop.mult(rc + (uint64_t)s.order[hfKeyIndex(jj, plo, nkp, lo)]);
      }
    }
    if (nkp > 0)
      gemm(false, false, nq, dh, nkp, T(1), s.S.data(), ldS, &s.Vs[plo * dh], dh, T(0),
           s.Ot.data(), dh);
    gemm(false, false, nq, dh, nko, T(1), s.S.data() + nkp, ldS, &s.Vs[lo * dh], dh,
         nkp > 0 ? T(1) : T(0), s.Ot.data(), dh);
    for (int64_t i = 0; i < nq; ++i) {
      const T *src = &s.Ot[i * dh];
      T *dst = &s.o[(p0 + i) * dh];
      for (int64_t d = 0; d < dh; ++d)
        dst[d] = src[d] * s.inv[i];
    }
  });
}

/// Position t's rounds combined: the output row orow and the log-sum-exp.
/// Round r's entry of t is the sorted index r T + rank, found through
/// `entry` [Rq, T].
template <typename T>
T hfCombine(const LshAttentionArgs<T> &a, const HfPlan &p, const HfScratch<T> &s,
            const int32_t *entry, int64_t t, T *orow, T *w, T *l) {
  for (int r = 0; r < p.Rq; ++r)
    l[r] = s.lse[entry[r * a.T + t]];
  lse_round_weights(l, p.Rq, w);
  for (int64_t d = 0; d < a.dh; ++d) {
    T acc = T(0);
    for (int r = 0; r < p.Rq; ++r)
      acc += w[r] * s.o[(int64_t)entry[r * a.T + t] * a.dh + d];
    orow[d] = acc;
  }
  return logsumexp_rounds(l, p.Rq);
}

/// entry[r T + t] = sorted index of position t's round-r entry.
template <typename T>
void hfEntries(const LshAttentionArgs<T> &a, const HfPlan &p, const HfScratch<T> &s,
               std::vector<int32_t> &entry) {
  for (int64_t P = 0; P < p.N; ++P)
    entry[hfRound(p, P, a.T) * a.T + s.order[P]] = (int32_t)P;
}

template <typename T>
void hfForward(const LshAttentionArgs<T> &a, T *out, int32_t *bucketsOut, T *lseOut) {
  const HfPlan p = hfPlan(a);
  const int64_t tasks = a.B * a.H, Tn = a.T, dh = a.dh;
  SerialBlasScope serialBlas;
#pragma omp parallel
  {
    HfScratch<T> s(a, p, false);
    std::vector<T> w(a.rounds), l(a.rounds);
    std::vector<int32_t> entry(p.N);
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < tasks; ++task) {
      const LshHead<T> hd = headOf(a, task);
      hfPrepareHead(a, p, hd, s, static_cast<const T *>(nullptr));
      if (bucketsOut)
        std::memcpy(bucketsOut + task * a.rounds * Tn, s.bucket.data(),
                    sizeof(int32_t) * a.rounds * Tn);
      hfForwardEntries(a, p, hd, s);
      hfEntries(a, p, s, entry);
      for (int64_t t = 0; t < Tn; ++t) {
        const T L = hfCombine(a, p, s, entry.data(), t, out + (hd.b * Tn + t) * a.ldo + hd.h * dh,
                              w.data(), l.data());
        if (lseOut)
          lseOut[task * Tn + t] = L;
      }
    }
  }
}

template <typename T>
void hfBackward(const LshAttentionArgs<T> &a, const T *dout, T *dqk, T *dv, int64_t ldg, T *out,
                const T *savedLse) {
  const HfPlan p = hfPlan(a);
  const int64_t tasks = a.B * a.H, Tn = a.T, dh = a.dh, ldS = p.W;
  const T selfScore = lsh_hf_self_score<T>();
  SerialBlasScope serialBlas;
#pragma omp parallel
  {
    HfScratch<T> s(a, p, true);
    std::vector<T> w(a.rounds), l(a.rounds);
    std::vector<int32_t> entry(p.N);
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < tasks; ++task) {
      const LshHead<T> hd = headOf(a, task);
      const T *dobase = dout + hd.b * Tn * a.ldo + hd.h * dh;
      T *dqbase = dqk + hd.b * Tn * ldg + hd.h * dh;
      T *dvbase = dv + hd.b * Tn * ldg + hd.h * dh;
      hfPrepareHead(a, p, hd, s, dobase);
      if (savedLse) {
        for (int64_t t = 0; t < Tn; ++t) {
          s.L[t] = savedLse[task * Tn + t];
          s.Dq[t] = laneDot(dobase + t * a.ldo, out + (hd.b * Tn + t) * a.ldo + hd.h * dh, dh);
        }
      } else {
        hfForwardEntries(a, p, hd, s);
        hfEntries(a, p, s, entry);
        for (int64_t t = 0; t < Tn; ++t) {
          T *orow = out ? out + (hd.b * Tn + t) * a.ldo + hd.h * dh : s.O.data();
          s.L[t] = hfCombine(a, p, s, entry.data(), t, orow, w.data(), l.data());
          s.Dq[t] = laneDot(dobase + t * a.ldo, orow, dh);
        }
      }
      // A query that saw only itself: each of its self copies (all rounds'
      // windows) weighs 1/copies exactly. exp(-1e5 - L) would say the same
      // but loses f32's precision at L ~ -1e5 (HF's f32 does).
      bool anySelfOnly = false;
      for (int64_t t = 0; t < Tn; ++t)
        anySelfOnly = anySelfOnly || hfSelfOnly(s.L[t]);
      if (anySelfOnly) {
        std::fill(s.nself.begin(), s.nself.end(), T(0));
        hfForEachTile(p, [&](int64_t p0, int64_t nq, int64_t plo, int64_t nkp, int64_t lo,
                             int64_t nko) {
          for (int64_t i = 0; i < nq; ++i) {
            const int t = s.order[p0 + i];
            if (hfSelfOnly(s.L[t]))
              for (int64_t jj = 0; jj < nkp + nko; ++jj)
                s.nself[t] += s.order[hfKeyIndex(jj, plo, nkp, lo)] == t ? T(1) : T(0);
          }
        });
      }
      std::fill(s.dKs.begin(), s.dKs.end(), T(0));
      std::fill(s.dVs.begin(), s.dVs.end(), T(0));
      hfForEachTile(p, [&](int64_t p0, int64_t nq, int64_t plo, int64_t nkp, int64_t lo,
                           int64_t nko) {
        const int64_t nk = nkp + nko;
        hfScores(nq, dh, a.scale, &s.Qs[p0 * dh], s.Ks.data(), plo, nkp, lo, nko, s.S.data(),
                 ldS);
        hfScores(nq, dh, T(1), &s.dOs[p0 * dh], s.Vs.data(), plo, nkp, lo, nko, s.dP.data(),
                 ldS);
        for (int64_t i = 0; i < nq; ++i) {
          const int64_t P = p0 + i;
          const int t = s.order[P];
          T *prow = s.S.data() + i * ldS, *dsrow = s.dP.data() + i * ldS;
          const T Lt = s.L[t], Dt = s.Dq[t];
          const uint64_t rc = rowCounter(a, hd, hfRound(p, P, Tn), t);
          for (int64_t jj = 0; jj < nk; ++jj) {
            const int u = s.order[hfKeyIndex(jj, plo, nkp, lo)];
            if (u == t) { // constant score: weight for dV, no score gradient
              prow[jj] = a.drop.mult(rc + (uint64_t)u) *
                         (hfSelfOnly(Lt) ? T(1) / s.nself[t] : nexp(selfScore - Lt));
              dsrow[jj] = T(0);
            } else if (!key_admissible(t, u, a.causal, hd.kpmRow)) {
              prow[jj] = dsrow[jj] = T(0);
            } else {
              backwardPair(prow[jj], dsrow[jj], Lt, Dt, a.drop.mult(rc + (uint64_t)u), a.scale);
            }
          }
        }
        // dQ = dS K; dK^ += dSᵀ Q; dV += (c P)ᵀ dO, look-back and own keys.
        if (nkp > 0)
          gemm(false, false, nq, dh, nkp, T(1), s.dP.data(), ldS, &s.Ks[plo * dh], dh, T(0),
               &s.dQs[p0 * dh], dh);
        gemm(false, false, nq, dh, nko, T(1), s.dP.data() + nkp, ldS, &s.Ks[lo * dh], dh,
             nkp > 0 ? T(1) : T(0), &s.dQs[p0 * dh], dh);
        if (nkp > 0) {
          gemm(true, false, nkp, dh, nq, T(1), s.dP.data(), ldS, &s.Qs[p0 * dh], dh, T(1),
               &s.dKs[plo * dh], dh);
          gemm(true, false, nkp, dh, nq, T(1), s.S.data(), ldS, &s.dOs[p0 * dh], dh, T(1),
               &s.dVs[plo * dh], dh);
        }
        gemm(true, false, nko, dh, nq, T(1), s.dP.data() + nkp, ldS, &s.Qs[p0 * dh], dh, T(1),
             &s.dKs[lo * dh], dh);
        gemm(true, false, nko, dh, nq, T(1), s.S.data() + nkp, ldS, &s.dOs[p0 * dh], dh, T(1),
             &s.dVs[lo * dh], dh);
      });
      // Sorted entries to positions, then the key path through the norm.
      for (int64_t t = 0; t < Tn; ++t) {
        std::memset(dqbase + t * ldg, 0, sizeof(T) * dh);
        std::memset(dvbase + t * ldg, 0, sizeof(T) * dh);
      }
      std::fill(s.dkn.begin(), s.dkn.end(), T(0));
      for (int64_t P = 0; P < p.N; ++P) {
        const int64_t t = s.order[P];
        T *dqr = dqbase + t * ldg, *dvr = dvbase + t * ldg, *dkr = &s.dkn[t * dh];
        const T *gq = &s.dQs[P * dh], *gk = &s.dKs[P * dh], *gv = &s.dVs[P * dh];
        for (int64_t d = 0; d < dh; ++d) {
          dqr[d] += gq[d];
          dkr[d] += gk[d];
          dvr[d] += gv[d];
        }
      }
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

//===----------------------------------------------------------------------===//
// ReformerModel's padding (padMultiple): a T above padAbove that is not a
// multiple of padMultiple runs as T' (the next multiple) with positions
// [T, T') padded — what ReformerModel does to its input. A padded position
// hashes to the padding bucket and is nobody's key, so its values do not
// matter (zeros here); it still takes its slots in the sorted sequence,
// which moves the chunk boundaries. Outputs and gradients of [0, T) only.
//===----------------------------------------------------------------------===//

/// T' of `a` (a.T when no padding applies).
template <typename T> int64_t hfPaddedLength(const LshAttentionArgs<T> &a) {
  if (!a.hf || a.padMultiple <= 1 || a.T <= a.padAbove || a.T % a.padMultiple == 0)
    return a.T;
  return (a.T / a.padMultiple + 1) * a.padMultiple;
}

/// The padded copy of a call's operands: rows [B, T', H dh] (zeros past T).
template <typename T> struct HfPadded {
  int64_t Tp, E;
  std::vector<T> qk, v;
  std::vector<uint8_t> kpm;
  LshAttentionArgs<T> a;
  HfPadded(const LshAttentionArgs<T> &in, int64_t Tp)
      : Tp(Tp), E(in.H * in.dh), qk(in.B * Tp * E), v(in.B * Tp * E), kpm(in.B * Tp, 1), a(in) {
    for (int64_t b = 0; b < in.B; ++b)
      for (int64_t t = 0; t < in.T; ++t) {
        std::memcpy(&qk[(b * Tp + t) * E], in.qk + (b * in.T + t) * in.ldi, sizeof(T) * E);
        std::memcpy(&v[(b * Tp + t) * E], in.v + (b * in.T + t) * in.ldi, sizeof(T) * E);
        kpm[b * Tp + t] = in.kpm ? in.kpm[b * in.T + t] : 0;
      }
    a.T = Tp;
    a.qk = qk.data();
    a.v = v.data();
    a.ldi = a.ldo = E;
    a.kpm = kpm.data();
  }
  /// Rows [0, T) of `src` [B, T', E] into `dst` [B, T, ld].
  void unpad(const T *src, int64_t T0, T *dst, int64_t ld) const {
    for (int64_t b = 0; b < a.B; ++b)
      for (int64_t t = 0; t < T0; ++t)
        std::memcpy(dst + (b * T0 + t) * ld, src + (b * Tp + t) * E, sizeof(T) * E);
  }
};

template <typename T>
void hfPaddedForward(const LshAttentionArgs<T> &in, int64_t Tp, T *out, int32_t *bucketsOut,
                     T *lseOut) {
  HfPadded<T> p(in, Tp);
  std::vector<T> o(in.B * Tp * p.E), lse(lseOut ? in.B * in.H * Tp : 0);
  std::vector<int32_t> bk(bucketsOut ? in.B * in.H * in.rounds * Tp : 0);
  hfForward(p.a, o.data(), bucketsOut ? bk.data() : nullptr, lseOut ? lse.data() : nullptr);
  p.unpad(o.data(), in.T, out, in.ldo);
  for (int64_t r = 0; lseOut && r < in.B * in.H; ++r)
    std::memcpy(lseOut + r * in.T, &lse[r * Tp], sizeof(T) * in.T);
  for (int64_t r = 0; bucketsOut && r < in.B * in.H * in.rounds; ++r)
    std::memcpy(bucketsOut + r * in.T, &bk[r * Tp], sizeof(int32_t) * in.T);
}

/// The backward on the padded sequence; the forward is recomputed there
/// (a padded query has no saved log-sum-exp), `out` receiving rows [0, T).
template <typename T>
void hfPaddedBackward(const LshAttentionArgs<T> &in, int64_t Tp, const T *dout, T *dqk, T *dv,
                      int64_t ldg, T *out) {
  HfPadded<T> p(in, Tp);
  std::vector<T> dO(in.B * Tp * p.E, T(0)), g1(dO.size()), g2(dO.size()), o(dO.size());
  for (int64_t b = 0; b < in.B; ++b)
    for (int64_t t = 0; t < in.T; ++t)
      std::memcpy(&dO[(b * Tp + t) * p.E], dout + (b * in.T + t) * in.ldo, sizeof(T) * p.E);
  hfBackward(p.a, dO.data(), g1.data(), g2.data(), p.E, o.data(), static_cast<const T *>(nullptr));
  p.unpad(g1.data(), in.T, dqk, ldg);
  p.unpad(g2.data(), in.T, dv, ldg);
  if (out)
    p.unpad(o.data(), in.T, out, in.ldo);
}

} // namespace

template <typename T>
void lshAttentionForward(const LshAttentionArgs<T> &a, T *out, int32_t *bucketsOut, T *lseOut) {
  if (a.hf && hfPaddedLength(a) != a.T)
    return hfPaddedForward(a, hfPaddedLength(a), out, bucketsOut, lseOut);
  if (a.hf)
    return hfForward(a, out, bucketsOut, lseOut);
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
  if (a.hf && hfPaddedLength(a) != a.T) // the saved lse is of T, not T'
    return hfPaddedBackward(a, hfPaddedLength(a), dout, dqk, dv, ldg,
                            savedLse ? static_cast<T *>(nullptr) : out);
  if (a.hf)
    return hfBackward(a, dout, dqk, dv, ldg, out, savedLse);
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
