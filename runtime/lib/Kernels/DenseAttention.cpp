//===- DenseAttention.cpp - Dense attention forward/backward in BLAS tiles -===//
//
// Flash-style dense attention on the CPU: queries in blocks of kBQ, keys in
// blocks of kBK, every tile product a single-threaded OpenBLAS GEMM inside
// one OpenMP task (so the T x T score matrix never exists; per thread a few
// kBQ x kBK tiles):
//
//   forward, per (b, h, query block):  S = scale Q Kᵀ; online softmax over
//     key blocks (OnlineSoftmax::push_tile); O = O·alpha + P V.
//   backward, per (b, h): for each query block, the forward's output O and
//     log-sum-exp lse when the caller kept them, else the forward block
//     again (O written out when the caller wants it),
//     D = rowsum(dO ∘ O), then per key block
//     P = exp(S - lse), dP = dO Vᵀ, dS = scale P ∘ (c ∘ dP - D),
//     dV += (c ∘ P)ᵀ dO, dQ += dS K, dK += dSᵀ Q,
//   where c is the attention-dropout multiplier (1 without dropout). One
//   task owns one head, so dK/dV accumulate without races and the result
//   does not depend on the thread count.
//
//===----------------------------------------------------------------------===//
#include "AttentionCommon.h"
#include "nncc/Kernels/AttentionMath.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace nncc {
namespace kernels {
namespace {

// OpenBLAS packs the key tile again for every query block: 256 queries per
// block pack the keys a quarter as often as 64 did (B1 T4096 E256: 139 ->
// 113 ms). Tiles of S and dP: 256 KB each per thread.
constexpr int64_t kBQ = 256; // queries per tile
constexpr int64_t kBK = 256; // keys per tile

/// Per-thread tiles.
template <typename T> struct DenseScratch {
  std::vector<T> S, dP, O, lse, D, mult;
  std::vector<OnlineSoftmax<T>> sm;
  explicit DenseScratch(int64_t dh)
      : S(kBQ * kBK), dP(kBQ * kBK), O(kBQ * dh), lse(kBQ), D(kBQ),
        mult(kBK), sm(kBQ) {}
};

/// Masks inadmissible scores of row `i` of a tile to neg_big (causal, key
/// padding).
template <typename T>
void maskRow(const DenseAttentionArgs<T> &a, const uint8_t *kpmRow, int64_t i,
             int64_t k0, int64_t nk, T *srow) {
  if (!a.causal && !kpmRow)
    return;
  for (int64_t jj = 0; jj < nk; ++jj)
    if (!key_admissible((int)i, (int)(k0 + jj), a.causal, kpmRow))
      srow[jj] = neg_big<T>();
}

/// Multiplies row i's weights by its dropout multipliers (kept in s.mult).
template <typename T>
void dropoutRow(const DenseAttentionArgs<T> &a, int64_t b, int64_t h,
                int64_t i, int64_t k0, int64_t nk, DenseScratch<T> &s) {
  const uint64_t first = (uint64_t)(((b * a.H + h) * a.T + i) * a.T + k0);
  attention_dropout_row(a.drop.seed, a.drop.offset, first, (int)nk, a.drop.p,
                        a.drop.keep_scale, s.mult.data());
}

/// Forward of query rows [q0, q0 + nq) of head (b, h): the normalised output
/// into O (row stride ldO) and each row's log-sum-exp into s.lse.
template <typename T>
void forwardBlock(const DenseAttentionArgs<T> &a, int64_t b, int64_t h,
                  int64_t q0, int64_t nq, DenseScratch<T> &s, T *O,
                  int64_t ldO) {
  const T *qb = a.q + (b * a.T + q0) * a.ldi + h * a.dh;
  const T *kb = a.k + b * a.T * a.ldi + h * a.dh;
  const T *vb = a.v + b * a.T * a.ldi + h * a.dh;
  const uint8_t *kpmRow = a.kpm ? a.kpm + b * a.T : nullptr;
  for (int64_t i = 0; i < nq; ++i) {
    s.sm[i].init();
    std::fill(O + i * ldO, O + i * ldO + a.dh, T(0));
  }
  const int64_t kEnd = a.causal ? std::min(a.T, q0 + nq) : a.T;
  for (int64_t k0 = 0; k0 < kEnd; k0 += kBK) {
    const int64_t nk = std::min(kBK, kEnd - k0);
    gemm(false, true, nq, nk, a.dh, a.scale, qb, a.ldi, kb + k0 * a.ldi,
         a.ldi, T(0), s.S.data(), kBK);
    for (int64_t i = 0; i < nq; ++i) {
      T *srow = s.S.data() + i * kBK;
      maskRow(a, kpmRow, q0 + i, k0, nk, srow);
      const T tmax = rowMax(srow, nk);
      if (!(tmax > neg_big<T>())) {
        std::fill(srow, srow + nk, T(0)); // nothing admissible in this tile
        continue;
      }
      const T alpha = pushRowTile(s.sm[i], srow, nk, tmax);
      if (alpha != T(1))
        for (T *o = O + i * ldO, *e = o + a.dh; o < e; ++o)
          *o *= alpha;
      if (a.drop.on()) {
        dropoutRow(a, b, h, q0 + i, k0, nk, s);
        for (int64_t jj = 0; jj < nk; ++jj)
          srow[jj] *= s.mult[jj];
      }
    }
    gemm(false, false, nq, a.dh, nk, T(1), s.S.data(), kBK, vb + k0 * a.ldi,
         a.ldi, T(1), O, ldO);
  }
  for (int64_t i = 0; i < nq; ++i) {
    const T inv = s.sm[i].inv();
    for (T *o = O + i * ldO, *e = o + a.dh; o < e; ++o)
      *o *= inv;
    s.lse[i] = s.sm[i].lse();
  }
}

} // namespace

template <typename T> void denseAttentionForward(const DenseAttentionArgs<T> &a) {
  const int64_t nqb = (a.T + kBQ - 1) / kBQ;
  const int64_t tasks = a.B * a.H * nqb;
  SerialBlasScope serialBlas;
#pragma omp parallel
  {
    DenseScratch<T> s(a.dh);
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < tasks; ++task) {
      const int64_t b = task / (a.H * nqb), h = (task / nqb) % a.H;
      const int64_t q0 = (task % nqb) * kBQ, nq = std::min(kBQ, a.T - q0);
      forwardBlock(a, b, h, q0, nq, s,
                   a.out + (b * a.T + q0) * a.ldo + h * a.dh, a.ldo);
      if (a.lse)
        std::copy(s.lse.begin(), s.lse.begin() + nq,
                  a.lse + (b * a.H + h) * a.T + q0);
    }
  }
}

template <typename T>
void denseAttentionBackward(const DenseAttentionArgs<T> &a, const T *dout,
                            T *dq, T *dk, T *dv, int64_t ldg) {
  const int64_t tasks = a.B * a.H;
  SerialBlasScope serialBlas;
#pragma omp parallel
  {
    DenseScratch<T> s(a.dh);
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < tasks; ++task) {
      const int64_t b = task / a.H, h = task % a.H;
      const int64_t io = b * a.T * a.ldi + h * a.dh;
      const int64_t go = b * a.T * ldg + h * a.dh;
      const T *kb = a.k + io, *vb = a.v + io;
      const uint8_t *kpmRow = a.kpm ? a.kpm + b * a.T : nullptr;
      for (int64_t t = 0; t < a.T; ++t) {
        std::memset(dq + go + t * ldg, 0, sizeof(T) * a.dh);
        std::memset(dk + go + t * ldg, 0, sizeof(T) * a.dh);
        std::memset(dv + go + t * ldg, 0, sizeof(T) * a.dh);
      }
      for (int64_t q0 = 0; q0 < a.T; q0 += kBQ) {
        const int64_t nq = std::min(kBQ, a.T - q0);
        const T *qb = a.q + io + q0 * a.ldi;
        const T *dob = dout + (b * a.T + q0) * a.ldo + h * a.dh;
        // The forward's output and log-sum-exp when given; else the forward
        // block again (into the caller's output when given).
        T *O = a.out ? a.out + (b * a.T + q0) * a.ldo + h * a.dh : s.O.data();
        const int64_t ldO = a.out ? a.ldo : a.dh;
        if (a.savedLse)
          std::copy(a.savedLse + (b * a.H + h) * a.T + q0,
                    a.savedLse + (b * a.H + h) * a.T + q0 + nq, s.lse.begin());
        else
          forwardBlock(a, b, h, q0, nq, s, O, ldO);
        for (int64_t i = 0; i < nq; ++i) {
          T d = T(0);
          for (int64_t c = 0; c < a.dh; ++c)
            d += dob[i * a.ldo + c] * O[i * ldO + c];
          s.D[i] = d;
        }
        const int64_t kEnd = a.causal ? std::min(a.T, q0 + nq) : a.T;
        for (int64_t k0 = 0; k0 < kEnd; k0 += kBK) {
          const int64_t nk = std::min(kBK, kEnd - k0);
          gemm(false, true, nq, nk, a.dh, a.scale, qb, a.ldi, kb + k0 * a.ldi,
               a.ldi, T(0), s.S.data(), kBK);
          gemm(false, true, nq, nk, a.dh, T(1), dob, a.ldo, vb + k0 * a.ldi,
               a.ldi, T(0), s.dP.data(), kBK);
          for (int64_t i = 0; i < nq; ++i) {
            T *prow = s.S.data() + i * kBK, *dsrow = s.dP.data() + i * kBK;
            const T lse = s.lse[i], Di = s.D[i];
            if (!(lse > neg_big<T>())) { // no admissible key: no gradient
              std::fill(prow, prow + nk, T(0));
              std::fill(dsrow, dsrow + nk, T(0));
              continue;
            }
            maskRow(a, kpmRow, q0 + i, k0, nk, prow);
            rowExpSum(prow, nk, lse); // P = exp(S - lse), 0 where masked
            if (a.drop.on()) {
              dropoutRow(a, b, h, q0 + i, k0, nk, s);
              for (int64_t jj = 0; jj < nk; ++jj) {
                dsrow[jj] = a.scale * prow[jj] * (s.mult[jj] * dsrow[jj] - Di);
                prow[jj] *= s.mult[jj];
              }
            } else {
              for (int64_t jj = 0; jj < nk; ++jj)
                dsrow[jj] = a.scale * prow[jj] * (dsrow[jj] - Di);
            }
          }
          gemm(true, false, nk, a.dh, nq, T(1), s.S.data(), kBK, dob, a.ldo,
               T(1), dv + go + k0 * ldg, ldg);
          gemm(false, false, nq, a.dh, nk, T(1), s.dP.data(), kBK,
               kb + k0 * a.ldi, a.ldi, T(1), dq + go + q0 * ldg, ldg);
          gemm(true, false, nk, a.dh, nq, T(1), s.dP.data(), kBK, qb, a.ldi,
               T(1), dk + go + k0 * ldg, ldg);
        }
      }
    }
  }
}

template void denseAttentionForward<float>(const DenseAttentionArgs<float> &);
template void denseAttentionForward<double>(const DenseAttentionArgs<double> &);
template void denseAttentionBackward<float>(const DenseAttentionArgs<float> &,
                                            const float *, float *, float *,
                                            float *, int64_t);
template void denseAttentionBackward<double>(const DenseAttentionArgs<double> &,
                                             const double *, double *, double *,
                                             double *, int64_t);

} // namespace kernels
} // namespace nncc
