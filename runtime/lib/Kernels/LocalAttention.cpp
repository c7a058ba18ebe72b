//===- LocalAttention.cpp - Chunked local attention (Reformer's) ----------===//
//
// Hugging Face's LocalSelfAttention (ReformerModel's "local" layers). With
// T > chunk the sequence is cut into nc = ceil(T / chunk) chunks and the
// queries of chunk c attend to the keys of chunks c - before ... c + after,
// in that order, the chunk indices wrapping around (chunk 0 looks back at
// chunk nc - 1; a chunk reached twice counts twice); with T <= chunk every
// query attends to all T keys (HF's standard path). A key that is padded,
// or later than the query under `causal` (absolute positions, so a wrapped
// look-back is masked too), scores -1e9 instead of its product: it gets
// weight 0 beside any real key, and a query with nothing but masked keys
// weighs its window as HF does (exp(S - lse): the mean in f64; in f32,
// where -1e9 + log n rounds to -1e9, the sum). The last chunk of a T that
// is not a multiple of the chunk is short (HF's module asks for a multiple).
// ReformerModel pads its input to a multiple of its chunk lengths' least
// common multiple; with that padding (padMultiple, padAbove) the chunks are
// cut from the padded length, the padded keys absent.
//
// One OpenMP task per (batch, head); per tile of at most kRows queries of
// one chunk, S = scale Q Kᵀ over the window's chunks (one single-threaded
// OpenBLAS GEMM each), the row's softmax over its whole window at once,
// then O = P V:
//
//   backward, with the forward's lse L (saved, or the forward again) and
//   D = dO . O: P = exp(S - L), dP = dO Vᵀ, dS = scale P (c dP - D) (0 at
//   a masked key: its score is a constant), dQ = dS K, dK += dSᵀ Q,
//   dV += (c P)ᵀ dO.
//
// Attention dropout as the dense kernel's: counter ((b H + h) T + i) T + j.
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

/// The score of a masked key (HF's mask_value_float32).
template <typename T> constexpr T maskedScore() { return T(-1e9); }

/// How one head's sequence is cut.
struct LocalPlan {
  int64_t C, nc;   // chunk length, chunks
  int64_t spans;   // key chunks per window (1 on the standard path)
  bool chunked;    // T > chunk
};

/// With ReformerModel's padding the chunks are cut from T' (a.T up to the
/// next multiple of padMultiple when a.T > padAbove); keys past a.T are
/// absent, which equals HF's masked padding but for a window of nothing
/// but masked keys.
template <typename T> LocalPlan localPlan(const LocalAttentionArgs<T> &a) {
  int64_t Tp = a.T;
  if (a.padMultiple > 1 && a.T > a.padAbove && a.T % a.padMultiple != 0)
    Tp = (a.T / a.padMultiple + 1) * a.padMultiple;
  LocalPlan p;
  p.chunked = Tp > a.chunk;
  p.C = p.chunked ? a.chunk : std::max<int64_t>(1, Tp);
  p.nc = (Tp + p.C - 1) / p.C;
  p.spans = p.chunked ? a.before + a.after + 1 : 1;
  return p;
}

/// Key positions [lo, hi) of span s of chunk c's window.
inline void keySpan(const LocalPlan &p, int64_t Tn, int64_t c, int64_t s, int64_t before,
                    int64_t &lo, int64_t &hi) {
  int64_t kc = c;
  if (p.chunked)
    kc = ((c + s - before) % p.nc + p.nc) % p.nc;
  lo = std::min(Tn, kc * p.C);
  hi = std::min(Tn, kc * p.C + p.C);
}

/// Per-thread tiles of one task.
template <typename T> struct LocalScratch {
  std::vector<T> S, dP, O, lse, D;
  std::vector<int64_t> lo, n; // the window's spans
  LocalScratch(const LocalPlan &p, int64_t dh)
      : S(kRows * p.spans * p.C), dP(kRows * p.spans * p.C), O(kRows * dh), lse(kRows),
        D(kRows), lo(p.spans), n(p.spans) {}
  int64_t width() const { return S.size() / kRows; }
};

/// The rows of head (b, h).
template <typename T> struct LocalHead {
  int64_t b, h;
  const T *q, *k, *v; // position 0's row of the head
  const uint8_t *kpmRow;
};

template <typename T> LocalHead<T> localHead(const LocalAttentionArgs<T> &a, int64_t task) {
  const int64_t b = task / a.H, h = task % a.H, off = b * a.T * a.ldi + h * a.dh;
  return {b, h, a.q + off, a.k + off, a.v + off, a.kpm ? a.kpm + b * a.T : nullptr};
}

/// Calls f(c, t0, nq) for every tile of queries [t0, t0 + nq) within chunk c.
template <typename F> void forEachTile(const LocalPlan &p, int64_t Tn, F &&f) {
  for (int64_t c = 0; c < p.nc; ++c) {
    const int64_t end = std::min(Tn, (c + 1) * p.C);
    for (int64_t t0 = c * p.C; t0 < end; t0 += kRows)
      f(c, t0, std::min(kRows, end - t0));
  }
}

/// The window of chunk c into s.lo / s.n; returns its key count.
template <typename T>
int64_t window(const LocalAttentionArgs<T> &a, const LocalPlan &p, int64_t c,
               LocalScratch<T> &s) {
  int64_t nk = 0;
  for (int64_t sp = 0; sp < p.spans; ++sp) {
    int64_t lo, hi;
    keySpan(p, a.T, c, sp, a.before, lo, hi);
    s.lo[sp] = lo;
    s.n[sp] = hi - lo;
    nk += hi - lo;
  }
  return nk;
}

/// Key position of window column jj.
template <typename T> int64_t keyAt(const LocalScratch<T> &s, int64_t spans, int64_t jj) {
  for (int64_t sp = 0; sp < spans; ++sp) {
    if (jj < s.n[sp])
      return s.lo[sp] + jj;
    jj -= s.n[sp];
  }
  return -1;
}

/// M[nq, window] = alpha A Bᵀ, A the tile's rows of `A0` (stride lda) and
/// B the window's rows of `B0` (stride ldb), span after span.
template <typename T>
void windowProduct(const LocalPlan &p, const LocalScratch<T> &s, int64_t nq, int64_t dh, T alpha,
                   const T *A, int64_t lda, const T *B0, int64_t ldb, T *M, int64_t ldM) {
  int64_t col = 0;
  for (int64_t sp = 0; sp < p.spans; ++sp) {
    if (s.n[sp] > 0)
      gemm(false, true, nq, s.n[sp], dh, alpha, A, lda, B0 + s.lo[sp] * ldb, ldb, T(0), M + col,
           ldM);
    col += s.n[sp];
  }
}

/// Masked keys of query t's score row take maskedScore().
template <typename T>
void maskScores(const LocalAttentionArgs<T> &a, const LocalHead<T> &hd, const LocalScratch<T> &s,
                int64_t spans, int64_t t, T *row) {
  if (!a.causal && !hd.kpmRow)
    return;
  int64_t jj = 0;
  for (int64_t sp = 0; sp < spans; ++sp)
    for (int64_t u = s.lo[sp]; u < s.lo[sp] + s.n[sp]; ++u, ++jj)
      if (!key_admissible((int)t, (int)u, a.causal, hd.kpmRow))
        row[jj] = maskedScore<T>();
}

/// Dropout counter of (query t, key 0) of head hd.
template <typename T>
uint64_t rowCounter(const LocalAttentionArgs<T> &a, const LocalHead<T> &hd, int64_t t) {
  return (uint64_t)(((hd.b * a.H + hd.h) * a.T + t) * a.T);
}

/// The forward of tile (c, t0, nq): each query's log-sum-exp into s.lse and
/// its output into O (row stride ldO). Leaves the window in s.lo / s.n.
template <typename T>
void forwardTile(const LocalAttentionArgs<T> &a, const LocalPlan &p, const LocalHead<T> &hd,
                 int64_t c, int64_t t0, int64_t nq, LocalScratch<T> &s, T *O, int64_t ldO) {
  const int64_t nk = window(a, p, c, s), ldS = s.width();
  windowProduct(p, s, nq, a.dh, a.scale, hd.q + t0 * a.ldi, a.ldi, hd.k, a.ldi, s.S.data(), ldS);
  for (int64_t i = 0; i < nq; ++i) {
    T *row = s.S.data() + i * ldS;
    maskScores(a, hd, s, p.spans, t0 + i, row);
    const T m = rowMax(row, nk);
    const T l = rowExpSum(row, nk, m); // masked keys score -1e9 > neg_big: exp taken
    // P = exp(S - lse) as HF computes it: where lse rounds to m (a window of
    // masked keys in f32, -1e9 + log n), every weight is 1, not 1/n.
    s.lse[i] = m + nlog(l);
    const T inv = nexp(m - s.lse[i]);
    const uint64_t rc = rowCounter(a, hd, t0 + i);
    for (int64_t jj = 0; jj < nk; ++jj)
      row[jj] *= inv * a.drop.mult(rc + (uint64_t)keyAt(s, p.spans, jj));
  }
  for (int64_t i = 0; i < nq; ++i)
    std::fill(O + i * ldO, O + i * ldO + a.dh, T(0));
  int64_t col = 0;
  for (int64_t sp = 0; sp < p.spans; ++sp) {
    if (s.n[sp] > 0)
      gemm(false, false, nq, a.dh, s.n[sp], T(1), s.S.data() + col, ldS,
           hd.v + s.lo[sp] * a.ldi, a.ldi, T(1), O, ldO);
    col += s.n[sp];
  }
}

/// The backward of tile (c, t0, nq) given its lse (s.lse) and D (s.D).
template <typename T>
void backwardTile(const LocalAttentionArgs<T> &a, const LocalPlan &p, const LocalHead<T> &hd,
                  int64_t c, int64_t t0, int64_t nq, const T *dob, LocalScratch<T> &s, T *dq,
                  T *dk, T *dv, int64_t ldg) {
  window(a, p, c, s);
  const int64_t ldS = s.width();
  windowProduct(p, s, nq, a.dh, a.scale, hd.q + t0 * a.ldi, a.ldi, hd.k, a.ldi, s.S.data(), ldS);
  windowProduct(p, s, nq, a.dh, T(1), dob, a.ldo, hd.v, a.ldi, s.dP.data(), ldS);
  for (int64_t i = 0; i < nq; ++i) {
    const int64_t t = t0 + i;
    T *prow = s.S.data() + i * ldS, *dsrow = s.dP.data() + i * ldS;
    const uint64_t rc = rowCounter(a, hd, t);
    int64_t jj = 0;
    for (int64_t sp = 0; sp < p.spans; ++sp)
      for (int64_t u = s.lo[sp]; u < s.lo[sp] + s.n[sp]; ++u, ++jj) {
        const T mult = a.drop.mult(rc + (uint64_t)u);
        if (key_admissible((int)t, (int)u, a.causal, hd.kpmRow)) {
          backwardPair(prow[jj], dsrow[jj], s.lse[i], s.D[i], mult, a.scale);
        } else { // constant score: a weight for dV, no score gradient
          prow[jj] = mult * nexp(maskedScore<T>() - s.lse[i]);
          dsrow[jj] = T(0);
        }
      }
  }
  // dQ = dS K; dK += dSᵀ Q; dV += (c P)ᵀ dO, span after span.
  int64_t col = 0;
  for (int64_t sp = 0; sp < p.spans; ++sp) {
    const int64_t lo = s.lo[sp], n = s.n[sp];
    if (n == 0)
      continue;
    gemm(false, false, nq, a.dh, n, T(1), s.dP.data() + col, ldS, hd.k + lo * a.ldi, a.ldi, T(1),
         dq + t0 * ldg, ldg);
    gemm(true, false, n, a.dh, nq, T(1), s.dP.data() + col, ldS, hd.q + t0 * a.ldi, a.ldi, T(1),
         dk + lo * ldg, ldg);
    gemm(true, false, n, a.dh, nq, T(1), s.S.data() + col, ldS, dob, a.ldo, T(1), dv + lo * ldg,
         ldg);
    col += n;
  }
}

} // namespace

template <typename T> void localAttentionForward(const LocalAttentionArgs<T> &a, T *out, T *lse) {
  const LocalPlan p = localPlan(a);
  const int64_t tasks = a.B * a.H;
  SerialBlasScope serialBlas;
#pragma omp parallel
  {
    LocalScratch<T> s(p, a.dh);
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < tasks; ++task) {
      const LocalHead<T> hd = localHead(a, task);
      forEachTile(p, a.T, [&](int64_t c, int64_t t0, int64_t nq) {
        forwardTile(a, p, hd, c, t0, nq, s, out + (hd.b * a.T + t0) * a.ldo + hd.h * a.dh, a.ldo);
        if (lse)
          std::copy(s.lse.begin(), s.lse.begin() + nq, lse + task * a.T + t0);
      });
    }
  }
}

template <typename T>
void localAttentionBackward(const LocalAttentionArgs<T> &a, const T *dout, T *dq, T *dk, T *dv,
                            int64_t ldg, T *out, const T *savedLse) {
  const LocalPlan p = localPlan(a);
  const int64_t tasks = a.B * a.H;
  SerialBlasScope serialBlas;
#pragma omp parallel
  {
    LocalScratch<T> s(p, a.dh);
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < tasks; ++task) {
      const LocalHead<T> hd = localHead(a, task);
      const int64_t go = hd.b * a.T * ldg + hd.h * a.dh;
      for (int64_t t = 0; t < a.T; ++t) {
        std::memset(dq + go + t * ldg, 0, sizeof(T) * a.dh);
        std::memset(dk + go + t * ldg, 0, sizeof(T) * a.dh);
        std::memset(dv + go + t * ldg, 0, sizeof(T) * a.dh);
      }
      forEachTile(p, a.T, [&](int64_t c, int64_t t0, int64_t nq) {
        const T *dob = dout + (hd.b * a.T + t0) * a.ldo + hd.h * a.dh;
        // The forward's output and lse when given; else the tile again
        // (into the caller's output when given).
        T *O = out ? out + (hd.b * a.T + t0) * a.ldo + hd.h * a.dh : s.O.data();
        const int64_t ldO = out ? a.ldo : a.dh;
        if (savedLse)
          std::copy(savedLse + task * a.T + t0, savedLse + task * a.T + t0 + nq, s.lse.begin());
        else
          forwardTile(a, p, hd, c, t0, nq, s, O, ldO);
        for (int64_t i = 0; i < nq; ++i)
          s.D[i] = laneDot(dob + i * a.ldo, O + i * ldO, a.dh);
        backwardTile(a, p, hd, c, t0, nq, dob, s, dq + go, dk + go, dv + go, ldg);
      });
    }
  }
}

template void localAttentionForward<float>(const LocalAttentionArgs<float> &, float *, float *);
template void localAttentionForward<double>(const LocalAttentionArgs<double> &, double *,
                                            double *);
template void localAttentionBackward<float>(const LocalAttentionArgs<float> &, const float *,
                                            float *, float *, float *, int64_t, float *,
                                            const float *);
template void localAttentionBackward<double>(const LocalAttentionArgs<double> &, const double *,
                                             double *, double *, double *, int64_t, double *,
                                             const double *);

} // namespace kernels
} // namespace nncc
