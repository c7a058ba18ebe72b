//===- DilatedAttention.cpp - Dilated attention in residue-class BLAS tiles -===//
//
// Dilated sliding-window attention (Longformer; seed thesis eq. 27): query
// i sees the keys j = i + o d, |o| <= w/2, and the global tokens; a global
// query sees every key. The band only pairs positions of the same residue
// class r = i mod d, and within class r (positions r + m d) it is a plain
// sliding window |m - m'| <= w/2. So per class, kBQ queries and their
// kBQ + w band keys are rows of stride d of q, k and v, and every product
// is one single-threaded OpenBLAS GEMM with leading dimension d * ld:
//
//   forward, per (b, h, class tile): S = scale Q K_band^T and, against the
//     global keys outside the band, Sg = scale Q K_glob^T; one softmax per
//     row over both (lse = m + log l), the weights times the attention-
//     dropout multipliers c, O = (c P) V_band + (c Pg) V_glob, divided by l.
//     Global queries: one dense row over every admissible key.
//   backward, per (b, h): the tiles again with P = exp(S - lse),
//     dS = scale P (c dO V^T - D), D = dO . O:
//     dQ = dS K, dK += dS^T Q, dV += (c P)^T dO for the band and the global
//     keys, and the global queries' dense rows.
//
// The same pairs and dropout counters as the key-list kernels of the CUDA
// side (for_each_dilated_key); only the order of the sums differs. The
// backward's task owns one head, so the result does not depend on the
// thread count.
//
// Global tokens are shared by the batch (static positions) or per example
// (a global mask). In Longformer's convention (Hugging Face's
// LongformerSelfAttention) a global query's dense row reads its own
// projections (q, k, v + a.globalOffset) and writes its gradients there,
// and a padded query's row is zero.
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

constexpr int64_t kBQ = 64; // class queries per tile

/// Queries [m0, m0 + nq) of residue class r (positions r + m d) and their
/// band keys [k0, k0 + nk) of the same class.
struct ClassTile {
  int64_t r, m0, nq, k0, nk;
};

/// Every class tile of a head, in class order.
template <typename T> std::vector<ClassTile> classTiles(const DenseAttentionArgs<T> &a) {
  std::vector<ClassTile> tiles;
  const int64_t d = a.dilation, half = a.window / 2;
  for (int64_t r = 0; r < std::min<int64_t>(d, a.T); ++r) {
    const int64_t M = (a.T - r + d - 1) / d;
    for (int64_t m0 = 0; m0 < M; m0 += kBQ) {
      const int64_t nq = std::min(kBQ, M - m0);
      const int64_t k0 = std::max<int64_t>(0, m0 - half);
      int64_t k1 = std::min(M, m0 + nq + half);
      if (a.causal)
        k1 = std::min(k1, m0 + nq);
      tiles.push_back({r, m0, nq, k0, k1 - k0});
    }
  }
  return tiles;
}

/// One head's rows (row 0 of head h of batch row b).
template <typename T> struct DilatedHead {
  int64_t b, h;
  const T *q, *k, *v, *dout; // dout: backward only (row stride a.ldo)
  const T *qg, *kg, *vg;     // what the global queries' rows read
  const uint8_t *kpmRow;
  const uint8_t *isGlobal;   // [T]: this row's global tokens
  /// Dropout counter of (query i, key 0) (Kernels.h numbering).
  uint64_t counter(const DenseAttentionArgs<T> &a, int64_t i) const {
    return (uint64_t)(((b * a.H + h) * a.T + i) * a.T);
  }
};

template <typename T>
DilatedHead<T> headOf(const DenseAttentionArgs<T> &a, int64_t b, int64_t h, const T *dout) {
  const int64_t io = b * a.T * a.ldi + h * a.dh, go = io + a.globalOffset;
  return {b,
          h,
          a.q + io,
          a.k + io,
          a.v + io,
          dout ? dout + b * a.T * a.ldo + h * a.dh : nullptr,
          a.q + go,
          a.k + go,
          a.v + go,
          a.kpm ? a.kpm + b * a.T : nullptr,
          a.dilated->flags(b)};
}

/// Per-thread tiles; `ng` and `glist` are the current head's global tokens.
template <typename T> struct DilatedScratch {
  int64_t ldS, ng = 0;
  const int32_t *glist = nullptr;
  std::vector<T> S, dP, Sg, dPg, O, lse, D, inv;
  std::vector<T> Kg, Vg, dKg, dVg; // the global keys' rows [ng, dh]
  std::vector<T> row, drow;        // a global query's dense row [T]
  DilatedScratch(const DenseAttentionArgs<T> &a, bool backward)
      : ldS(std::max<int64_t>(
            1, std::min<int64_t>((a.T + a.dilation - 1) / a.dilation,
                                 kBQ + 2 * (int64_t)(a.window / 2)))),
        S(kBQ * ldS), Sg(kBQ * a.dilated->maxCount), O(kBQ * a.dh), lse(kBQ), D(kBQ),
        inv(kBQ), Kg(a.dilated->maxCount * a.dh), Vg(a.dilated->maxCount * a.dh), row(a.T) {
    if (!backward)
      return;
    dP.resize(S.size());
    dPg.resize(Sg.size());
    dKg.resize(Kg.size());
    dVg.resize(Vg.size());
    drow.resize(a.T);
  }
  /// Head hd's global tokens, and their keys' k and v rows.
  void gatherGlobals(const DenseAttentionArgs<T> &a, const DilatedHead<T> &hd) {
    ng = a.dilated->count(hd.b);
    glist = a.dilated->positions(hd.b);
    for (int64_t g = 0; g < ng; ++g) {
      const int64_t j = glist[g];
      std::memcpy(&Kg[g * a.dh], hd.k + j * a.ldi, sizeof(T) * a.dh);
      std::memcpy(&Vg[g * a.dh], hd.v + j * a.ldi, sizeof(T) * a.dh);
    }
  }
};

/// Whether band key jj of the tile is one of class query m's keys (within
/// the window, admissible), and whether global key g is one of query i's
/// (outside its band, admissible). Non-global queries only.
template <typename T>
inline bool bandPair(const DenseAttentionArgs<T> &a, const DilatedHead<T> &hd,
                     const ClassTile &ct, int64_t m, int64_t jj) {
  const int64_t mk = ct.k0 + jj, diff = m > mk ? m - mk : mk - m;
  if (diff > a.window / 2)
    return false;
  return key_admissible((int)(ct.r + m * a.dilation), (int)(ct.r + mk * a.dilation), a.causal,
                        hd.kpmRow);
}

template <typename T>
inline bool globalPair(const DenseAttentionArgs<T> &a, const DilatedHead<T> &hd,
                       const DilatedScratch<T> &s, int64_t i, int64_t g) {
  const int j = s.glist[g];
  return !dilated_band((int)i, j, a.window, a.dilation) &&
         key_admissible((int)i, j, a.causal, hd.kpmRow);
}

/// Whether query i's row is one of the band tiles': not a global query,
/// and not a padded one in Longformer's convention (whose rows are zero).
template <typename T>
inline bool bandQuery(const DenseAttentionArgs<T> &a, const DilatedHead<T> &hd, int64_t i) {
  return !hd.isGlobal[i] && !(a.zeroPaddedQueries && hd.kpmRow && hd.kpmRow[i]);
}

/// Forward of class tile ct (band queries; the row of another query is
/// left empty: out zeros, lse neg_big): per query its log-sum-exp into
/// s.lse and its normalised output into O (row stride ldO).
template <typename T>
void forwardTile(const DenseAttentionArgs<T> &a, const DilatedHead<T> &hd, const ClassTile &ct,
                 DilatedScratch<T> &s, T *O, int64_t ldO) {
  const int64_t d = a.dilation, dh = a.dh, ld = d * a.ldi, ng = s.ng;
  const T *qb = hd.q + (ct.r + ct.m0 * d) * a.ldi;
  const int64_t kOff = (ct.r + ct.k0 * d) * a.ldi;
  gemm(false, true, ct.nq, ct.nk, dh, a.scale, qb, ld, hd.k + kOff, ld, T(0), s.S.data(),
       s.ldS);
  if (ng)
    gemm(false, true, ct.nq, ng, dh, a.scale, qb, ld, s.Kg.data(), dh, T(0), s.Sg.data(), ng);
  for (int64_t x = 0; x < ct.nq; ++x) {
    const int64_t m = ct.m0 + x, i = ct.r + m * d;
    T *srow = &s.S[x * s.ldS], *grow = ng ? &s.Sg[x * ng] : nullptr;
    const bool active = bandQuery(a, hd, i);
    T mx = neg_big<T>();
    for (int64_t jj = 0; jj < ct.nk; ++jj) {
      if (active && bandPair(a, hd, ct, m, jj))
        mx = srow[jj] > mx ? srow[jj] : mx;
      else
        srow[jj] = neg_big<T>();
    }
    for (int64_t g = 0; g < ng; ++g) {
      if (active && globalPair(a, hd, s, i, g))
        mx = grow[g] > mx ? grow[g] : mx;
      else
        grow[g] = neg_big<T>();
    }
    if (!(mx > neg_big<T>())) { // no key (or a global query)
      std::fill(srow, srow + ct.nk, T(0));
      std::fill(grow, grow + ng, T(0));
      s.inv[x] = T(0);
      s.lse[x] = neg_big<T>();
      continue;
    }
    T l = T(0);
    for (int64_t jj = 0; jj < ct.nk; ++jj) {
      const T p = srow[jj] <= neg_big<T>() ? T(0) : nexp(srow[jj] - mx);
      srow[jj] = p;
      l += p;
    }
    for (int64_t g = 0; g < ng; ++g) {
      const T p = grow[g] <= neg_big<T>() ? T(0) : nexp(grow[g] - mx);
      grow[g] = p;
      l += p;
    }
    s.inv[x] = T(1) / l;
    s.lse[x] = mx + nlog(l);
    if (a.drop.on()) {
      const uint64_t c0 = hd.counter(a, i);
      for (int64_t jj = 0; jj < ct.nk; ++jj)
        if (srow[jj] != T(0))
          srow[jj] *= a.drop.mult(c0 + (uint64_t)(ct.r + (ct.k0 + jj) * d));
      for (int64_t g = 0; g < ng; ++g)
        if (grow[g] != T(0))
          grow[g] *= a.drop.mult(c0 + (uint64_t)s.glist[g]);
    }
  }
  gemm(false, false, ct.nq, dh, ct.nk, T(1), s.S.data(), s.ldS, hd.v + kOff, ld, T(0), O, ldO);
  if (ng)
    gemm(false, false, ct.nq, dh, ng, T(1), s.Sg.data(), ng, s.Vg.data(), dh, T(1), O, ldO);
  for (int64_t x = 0; x < ct.nq; ++x)
    for (T *o = O + x * ldO, *e = o + dh; o < e; ++o)
      *o *= s.inv[x];
}

/// Global query i (every admissible key): its scores into s.row as the
/// dropped-out weights exp(s - lse) c, output into orow; returns its lse
/// (neg_big without keys).
template <typename T>
T globalRowForward(const DenseAttentionArgs<T> &a, const DilatedHead<T> &hd, int64_t i,
                   DilatedScratch<T> &s, T *orow) {
  const int64_t Tn = a.T, dh = a.dh;
  T *row = s.row.data();
  gemm(false, true, 1, Tn, dh, a.scale, hd.qg + i * a.ldi, a.ldi, hd.kg, a.ldi, T(0), row, Tn);
  T mx = neg_big<T>();
  for (int64_t j = 0; j < Tn; ++j) {
    if (key_admissible((int)i, (int)j, a.causal, hd.kpmRow))
      mx = row[j] > mx ? row[j] : mx;
    else
      row[j] = neg_big<T>();
  }
  if (!(mx > neg_big<T>())) {
    std::fill(orow, orow + dh, T(0));
    return neg_big<T>();
  }
  T l = T(0);
  for (int64_t j = 0; j < Tn; ++j) {
    const T p = row[j] <= neg_big<T>() ? T(0) : nexp(row[j] - mx);
    row[j] = p;
    l += p;
  }
  if (a.drop.on()) {
    const uint64_t c0 = hd.counter(a, i);
    for (int64_t j = 0; j < Tn; ++j)
      if (row[j] != T(0))
        row[j] *= a.drop.mult(c0 + (uint64_t)j);
  }
  gemm(false, false, 1, dh, Tn, T(1), row, Tn, hd.vg, a.ldi, T(0), orow, dh);
  const T inv = T(1) / l;
  for (int64_t c = 0; c < dh; ++c)
    orow[c] *= inv;
  return mx + nlog(l);
}

/// Backward of class tile ct given s.lse and D = dO . O of its queries:
/// dq rows of its queries overwritten, its shares of dk, dv (band keys)
/// and s.dKg, s.dVg (global keys) added.
template <typename T>
void backwardTile(const DenseAttentionArgs<T> &a, const DilatedHead<T> &hd, const ClassTile &ct,
                  DilatedScratch<T> &s, T *dqh, T *dkh, T *dvh, int64_t ldg) {
  const int64_t d = a.dilation, dh = a.dh, ld = d * a.ldi, ldo = d * a.ldo, ng = s.ng;
  const T *qb = hd.q + (ct.r + ct.m0 * d) * a.ldi;
  const T *dob = hd.dout + (ct.r + ct.m0 * d) * a.ldo;
  const int64_t kOff = (ct.r + ct.k0 * d) * a.ldi;
  gemm(false, true, ct.nq, ct.nk, dh, a.scale, qb, ld, hd.k + kOff, ld, T(0), s.S.data(),
       s.ldS);
  gemm(false, true, ct.nq, ct.nk, dh, T(1), dob, ldo, hd.v + kOff, ld, T(0), s.dP.data(),
       s.ldS);
  if (ng) {
    gemm(false, true, ct.nq, ng, dh, a.scale, qb, ld, s.Kg.data(), dh, T(0), s.Sg.data(), ng);
    gemm(false, true, ct.nq, ng, dh, T(1), dob, ldo, s.Vg.data(), dh, T(0), s.dPg.data(), ng);
  }
  // On the pairs S <- c P, dP <- dS (backwardPair).
  for (int64_t x = 0; x < ct.nq; ++x) {
    const int64_t m = ct.m0 + x, i = ct.r + m * d;
    T *srow = &s.S[x * s.ldS], *dsrow = &s.dP[x * s.ldS];
    T *grow = ng ? &s.Sg[x * ng] : nullptr, *dgrow = ng ? &s.dPg[x * ng] : nullptr;
    const T lse = s.lse[x], D = s.D[x];
    if (!bandQuery(a, hd, i) || !(lse > neg_big<T>())) {
      std::fill(srow, srow + ct.nk, T(0));
      std::fill(dsrow, dsrow + ct.nk, T(0));
      std::fill(grow, grow + ng, T(0));
      std::fill(dgrow, dgrow + ng, T(0));
      continue;
    }
    const uint64_t c0 = hd.counter(a, i);
    for (int64_t jj = 0; jj < ct.nk; ++jj) {
      if (bandPair(a, hd, ct, m, jj))
        backwardPair(srow[jj], dsrow[jj], lse, D,
                     a.drop.mult(c0 + (uint64_t)(ct.r + (ct.k0 + jj) * d)), a.scale);
      else
        srow[jj] = dsrow[jj] = T(0);
    }
    for (int64_t g = 0; g < ng; ++g) {
      if (globalPair(a, hd, s, i, g))
        backwardPair(grow[g], dgrow[g], lse, D, a.drop.mult(c0 + (uint64_t)s.glist[g]),
                     a.scale);
      else
        grow[g] = dgrow[g] = T(0);
    }
  }
  const int64_t ldgc = d * ldg;
  T *dqb = dqh + (ct.r + ct.m0 * d) * ldg;
  gemm(false, false, ct.nq, dh, ct.nk, T(1), s.dP.data(), s.ldS, hd.k + kOff, ld, T(0), dqb,
       ldgc);
  const int64_t gOff = (ct.r + ct.k0 * d) * ldg;
  gemm(true, false, ct.nk, dh, ct.nq, T(1), s.dP.data(), s.ldS, qb, ld, T(1), dkh + gOff, ldgc);
  gemm(true, false, ct.nk, dh, ct.nq, T(1), s.S.data(), s.ldS, dob, ldo, T(1), dvh + gOff, ldgc);
  if (ng) {
    gemm(false, false, ct.nq, dh, ng, T(1), s.dPg.data(), ng, s.Kg.data(), dh, T(1), dqb, ldgc);
    gemm(true, false, ng, dh, ct.nq, T(1), s.dPg.data(), ng, qb, ld, T(1), s.dKg.data(), dh);
    gemm(true, false, ng, dh, ct.nq, T(1), s.Sg.data(), ng, dob, ldo, T(1), s.dVg.data(), dh);
  }
}

} // namespace

template <typename T> void dilatedAttentionForward(const DenseAttentionArgs<T> &a) {
  const std::vector<ClassTile> tiles = classTiles(a);
  const int64_t nt = (int64_t)tiles.size(), heads = a.B * a.H, ng = a.dilated->maxCount;
  const int64_t d = a.dilation;
  SerialBlasScope serialBlas;
#pragma omp parallel
  {
    DilatedScratch<T> s(a, false);
    int64_t lastHead = -1;
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < heads * nt; ++task) {
      const int64_t head = task / nt;
      const DilatedHead<T> hd = headOf(a, head / a.H, head % a.H, static_cast<const T *>(nullptr));
      if (head != lastHead) {
        s.gatherGlobals(a, hd);
        lastHead = head;
      }
      const ClassTile &ct = tiles[task % nt];
      const int64_t first = hd.b * a.T + ct.r + ct.m0 * d;
      forwardTile(a, hd, ct, s, a.out + first * a.ldo + hd.h * a.dh, d * a.ldo);
      if (a.lse)
        for (int64_t x = 0; x < ct.nq; ++x)
          a.lse[head * a.T + ct.r + (ct.m0 + x) * d] = s.lse[x];
    }
    // Global queries: one dense row each (their band tiles left them empty);
    // up to the largest count of a batch row.
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < heads * ng; ++task) {
      const int64_t head = task / ng, b = head / a.H;
      if (task % ng >= a.dilated->count(b))
        continue;
      const int64_t i = a.dilated->positions(b)[task % ng];
      const DilatedHead<T> hd = headOf(a, b, head % a.H, static_cast<const T *>(nullptr));
      const T lse =
          globalRowForward(a, hd, i, s, a.out + (hd.b * a.T + i) * a.ldo + hd.h * a.dh);
      if (a.lse)
        a.lse[head * a.T + i] = lse;
    }
  }
}

template <typename T>
void dilatedAttentionBackward(const DenseAttentionArgs<T> &a, const T *dout, T *dq, T *dk,
                              T *dv, int64_t ldg) {
  const std::vector<ClassTile> tiles = classTiles(a);
  const int64_t heads = a.B * a.H, d = a.dilation, dh = a.dh;
  SerialBlasScope serialBlas;
#pragma omp parallel
  {
    DilatedScratch<T> s(a, true);
#pragma omp for schedule(dynamic, 1)
    for (int64_t head = 0; head < heads; ++head) {
      const DilatedHead<T> hd = headOf(a, head / a.H, head % a.H, dout);
      const int64_t go = hd.b * a.T * ldg + hd.h * dh;
      T *dqh = dq + go, *dkh = dk + go, *dvh = dv + go;
      // Where the global queries' rows put their gradients.
      T *dqgh = dqh + a.globalOffset, *dkgh = dkh + a.globalOffset, *dvgh = dvh + a.globalOffset;
      for (int64_t t = 0; t < a.T; ++t)
        for (T *rowStart : {dqh, dkh, dvh, dqgh, dkgh, dvgh})
          std::memset(rowStart + t * ldg, 0, sizeof(T) * dh);
      s.gatherGlobals(a, hd);
      std::fill(s.dKg.begin(), s.dKg.end(), T(0));
      std::fill(s.dVg.begin(), s.dVg.end(), T(0));
      T *outh = a.out ? a.out + hd.b * a.T * a.ldo + hd.h * dh : nullptr;
      for (const ClassTile &ct : tiles) {
        // The forward's output and lse (kept, or the tile again: into the
        // caller's output when given).
        const int64_t first = ct.r + ct.m0 * d;
        const T *O;
        int64_t ldO;
        if (a.savedLse) {
          O = outh + first * a.ldo;
          ldO = d * a.ldo;
          for (int64_t x = 0; x < ct.nq; ++x)
            s.lse[x] = a.savedLse[head * a.T + first + x * d];
        } else {
          T *Ow = outh ? outh + first * a.ldo : s.O.data();
          ldO = outh ? d * a.ldo : dh;
          forwardTile(a, hd, ct, s, Ow, ldO);
          O = Ow;
        }
        for (int64_t x = 0; x < ct.nq; ++x)
          s.D[x] = s.lse[x] > neg_big<T>()
                       ? laneDot(hd.dout + (first + x * d) * a.ldo, O + x * ldO, dh)
                       : T(0);
        backwardTile(a, hd, ct, s, dqh, dkh, dvh, ldg);
      }
      // Global queries: dense rows over every admissible key.
      for (int64_t g = 0; g < s.ng; ++g) {
        const int64_t i = s.glist[g];
        const T *dor = hd.dout + i * a.ldo;
        T lse;
        const T *orow;
        if (a.savedLse) {
          lse = a.savedLse[head * a.T + i];
          orow = outh + i * a.ldo;
        } else {
          T *o = outh ? outh + i * a.ldo : s.O.data();
          lse = globalRowForward(a, hd, i, s, o);
          orow = o;
        }
        if (!(lse > neg_big<T>()))
          continue;
        T *row = s.row.data(), *drow = s.drow.data();
        const T D = laneDot(dor, orow, dh);
        gemm(false, true, 1, a.T, dh, T(1), dor, a.ldo, hd.vg, a.ldi, T(0), drow, a.T);
        gemm(false, true, 1, a.T, dh, a.scale, hd.qg + i * a.ldi, a.ldi, hd.kg, a.ldi, T(0), row,
             a.T);
        const uint64_t c0 = hd.counter(a, i);
        for (int64_t j = 0; j < a.T; ++j) {
          if (!key_admissible((int)i, (int)j, a.causal, hd.kpmRow)) {
            row[j] = drow[j] = T(0);
            continue;
          }
          backwardPair(row[j], drow[j], lse, D, a.drop.mult(c0 + (uint64_t)j), a.scale);
        }
        gemm(false, false, 1, dh, a.T, T(1), drow, a.T, hd.kg, a.ldi, T(0), dqgh + i * ldg, ldg);
        gemm(true, false, a.T, dh, 1, T(1), drow, a.T, hd.qg + i * a.ldi, a.ldi, T(1), dkgh,
             ldg);
        gemm(true, false, a.T, dh, 1, T(1), row, a.T, dor, a.ldo, T(1), dvgh, ldg);
      }
      for (int64_t g = 0; g < s.ng; ++g) {
        const int64_t j = s.glist[g];
        for (int64_t c = 0; c < dh; ++c) {
          dkh[j * ldg + c] += s.dKg[g * dh + c];
          dvh[j * ldg + c] += s.dVg[g * dh + c];
        }
      }
    }
  }
}

template void dilatedAttentionForward<float>(const DenseAttentionArgs<float> &);
template void dilatedAttentionForward<double>(const DenseAttentionArgs<double> &);
template void dilatedAttentionBackward<float>(const DenseAttentionArgs<float> &, const float *,
                                              float *, float *, float *, int64_t);
template void dilatedAttentionBackward<double>(const DenseAttentionArgs<double> &,
                                               const double *, double *, double *, double *,
                                               int64_t);

} // namespace kernels
} // namespace nncc
