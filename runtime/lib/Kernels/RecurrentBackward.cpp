//===- RecurrentBackward.cpp - BPTT of RNN / LSTM / GRU layers (CPU) ------===//
//
// Per layer and direction (nncc_rnn_layer_backward_*): a reverse time loop
// over the saved gates of the forward (nncc_rnn_layer_* with `saved`) and
// the layer's output y (which holds h_t, so h_{t-1} is read, not recomputed).
// Per step: one parallel pass of unit derivatives (BackwardMath.h) over the
// rows still active at that step (rows sorted by decreasing length, a prefix
// as in the forward) and ONE GEMM dh_prev = dhg . W_hh (Cho's GRU: one more,
// for the r*h product). The gate adjoints of all steps are kept in
// [B, T, G*H] buffers, so the weight gradients are GEMMs over all steps at
// the end: dW_hh += dhg^T h_prev, dW_ih += dxg^T x, dx += dxg W_ih, and the
// bias gradients column sums (fixed order: deterministic).
//
// The whole stack (nncc_rnn_backward_*) re-runs the forward of every layer
// into its workspace (gates and layer outputs), then runs the layer backward
// from the last layer down.
//
//===----------------------------------------------------------------------===//
#include "Internal.h"
#include "RecurrentCommon.h"
#include "nncc/Kernels/BackwardMath.h"
#include "nncc/Kernels/RandomMasks.h"
#include "nncc/Kernels/RecurrentMath.h"
#include "nncc/Kernels/Revolve.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

using namespace nncc::kernels;

namespace {

template <typename T> struct BwdWork {
  int32_t *perm, *lens;
  T *dh, *dc, *direct, *dstep, *dhTmp, *dah, *drh;
  T *dxg, *dhg, *hprev, *rh;
  T *zero; // [H] zeros: the row of an absent h0, c0 or dy
  // f32 only (RecurrentFast.cpp): W_hh packed for the step product, and
  // two [B] buffers of the step's gate-adjoint row offsets.
  T *packed;
  int64_t *rowOff;
};

template <typename T>
BwdWork<T> carveBwd(Arena &a, int cell, int64_t B, int64_t Tn, int64_t H,
                    bool ownDxg) {
  const int64_t G = cell_gates(cell), GH = G * H;
  const bool cho = cell == CellGruCho;
  const bool twoG = cell == CellGru || cho;
  BwdWork<T> w;
  w.perm = a.take<int32_t>(B);
  w.lens = a.take<int32_t>(B);
  w.dh = a.take<T>(B * H);
  w.dc = a.take<T>(cell == CellLstm ? B * H : 0);
  w.direct = a.take<T>(B * H);
  w.dstep = a.take<T>(B * GH);
  w.dhTmp = a.take<T>(B * H);
  w.dah = a.take<T>(cho ? B * H : 0);
  w.drh = a.take<T>(cho ? B * H : 0);
  w.dxg = a.take<T>(ownDxg ? B * Tn * GH : 0);
  w.dhg = a.take<T>(twoG ? B * Tn * GH : 0);
  w.hprev = a.take<T>(B * Tn * H);
  w.rh = a.take<T>(cho ? B * Tn * H : 0);
  w.zero = a.take<T>(H);
  // Declared whatever the CPU, so that the plan does not depend on it; f32
  // only, and left out of the plans of other targets (cpuOnlyCounted).
  const int64_t pk =
      sizeof(T) == 4 && takeCpuOnly(a) ? fastBackwardPackedFloats(cell, H) : 0;
  w.packed = a.take<T>(pk);
  w.rowOff = a.take<int64_t>(pk > 0 ? 2 * B : 0);
  return w;
}

template <typename L>
bool sortRows(int64_t B, int64_t Tn, const L *lengths, int32_t *perm,
              int32_t *lens) {
  for (int64_t b = 0; b < B; ++b) {
    int64_t len = lengths ? (int64_t)lengths[b] : Tn;
    if (len < 0 || len > Tn)
      return false;
    perm[b] = (int32_t)b;
  }
  std::stable_sort(perm, perm + B, [&](int32_t a, int32_t b2) {
    int64_t la = lengths ? (int64_t)lengths[a] : Tn;
    int64_t lb = lengths ? (int64_t)lengths[b2] : Tn;
    return la > lb;
  });
  for (int64_t k = 0; k < B; ++k)
    lens[k] = lengths ? (int32_t)lengths[perm[k]] : (int32_t)Tn;
  return true;
}

/// Column sums of a [rows, n] matrix added into out[n]. Each column is
/// summed in row order from 0 (fixed order: the same bits for any thread
/// count), but the matrix is walked row by row, a block of columns per
/// thread, so the reads are contiguous and the adds vectorise along the row
/// (a column-by-column walk strides lda elements per add).
template <typename T>
void colSumAdd(int64_t rows, int64_t n, const T *a, int64_t lda, T *out,
               T *out2 = nullptr) {
  constexpr int64_t Blk = 256; // columns per task: an L1-resident row slice
  const int64_t nb = (n + Blk - 1) / Blk;
#pragma omp parallel for schedule(static) if (rows * n > 65536 && nb > 1)
  for (int64_t cb = 0; cb < nb; ++cb) {
    const int64_t j0 = cb * Blk, jn = std::min(n, j0 + Blk) - j0;
    T s[Blk];
    for (int64_t j = 0; j < jn; ++j)
      s[j] = T(0);
    for (int64_t r = 0; r < rows; ++r) {
      const T *__restrict ar = a + r * lda + j0;
      for (int64_t j = 0; j < jn; ++j)
        s[j] += ar[j];
    }
    for (int64_t j = 0; j < jn; ++j) {
      out[j0 + j] += s[j];
      if (out2)
        out2[j0 + j] += s[j];
    }
  }
}

struct LayerArgs {
  int64_t B, T, I, H, D, sd, col;
  bool reverse;
};

/// LSTM zoneout of the forward (Recurrent.cpp): p = 0 is off.
struct Zoneout {
  double p = 0.0;
  uint64_t seed = 0, offset = 0;
};

/// The zoneout of a stack call; false when p is outside [0, 1) or a
/// non-LSTM cell asks for p > 0.
bool makeZoneout(int cell, double p, uint64_t seed, uint64_t offset,
                 Zoneout &zo) {
  if (!(p >= 0 && p < 1) || (p > 0 && cell != CellLstm))
    return false;
  zo.p = p;
  zo.seed = seed;
  zo.offset = offset;
  return true;
}

/// Unit derivatives of one row at one step (BackwardMath.h), no zoneout.
/// Rows: sv the saved gates of this step (slot stride H), hp h_{t-1}, cp
/// c_{t-1} (LSTM), dy this step's output adjoint (zeros when absent), dh the
/// carried adjoint of h_t. Writes the gate adjoints, one row per gate: a0..a3
/// of the input projection (dxg), b0..b2 of the recurrent product (dhg; GRU
/// only: for the RNN and the LSTM they are dxg), the direct path of dh_prev,
/// dc in place (LSTM), and for Cho's GRU dah and rh = r * h_{t-1} (its r
/// gate is phase 2, choRowBackward2). Every row is a distinct buffer and its
/// own __restrict parameter, so the unit loop vectorises without alias checks
/// (rows carved from one pointer would need more run-time checks than GCC
/// allows); not inlined, since inside the OpenMP body GCC drops the
/// __restrict (see gateRow in Recurrent.cpp).
template <int Kind, typename T>
__attribute__((noinline)) void
unitRowBackward(int64_t j0, int64_t j1, int64_t H, const T *__restrict sv,
                const T *__restrict hp,
                const T *__restrict cp, const T *__restrict dy,
                const T *__restrict dh, T *__restrict dc, T *__restrict a0,
                T *__restrict a1, T *__restrict a2, T *__restrict a3,
                T *__restrict b0, T *__restrict b1, T *__restrict b2,
                T *__restrict direct, T *__restrict dah, T *__restrict rh) {
  const int h = (int)H, je = (int)j1;
  for (int j = (int)j0; j < je; ++j) {
    const T dht = dh[j] + dy[j];
    if (Kind == CellLstm) {
      T dcj = dc[j], di, df, dg, dout;
      lstm_unit_grads(sv, h, j, cp[j], dht, dcj, di, df, dg, dout);
      dc[j] = dcj;
      a0[j] = di;
      a1[j] = df;
      a2[j] = dg;
      a3[j] = dout;
      direct[j] = T(0);
    } else if (Kind == CellGru) {
      T dar, daz, dan, dhn;
      direct[j] = gru_unit_grads(sv, h, j, hp[j], dht, dar, daz, dan, dhn);
      a0[j] = dar;
      a1[j] = daz;
      a2[j] = dan;
      b0[j] = dar;
      b1[j] = daz;
      b2[j] = dhn;
    } else if (Kind == CellGruCho) {
      T daz, dahj;
      direct[j] = gru_cho_grads1(sv, h, j, hp[j], dht, daz, dahj);
      dah[j] = dahj;
      a1[j] = daz;
      a2[j] = dahj;
      b1[j] = daz;
      b2[j] = dahj;
      rh[j] = sv[j] * hp[j];
    } else {
      a0[j] = rnn_unit_backward(sv[j], Kind == CellRnnRelu, dht);
      direct[j] = T(0);
    }
  }
}

/// Cho's GRU, phase 2 of one row: the r gate from drh = dah . W_hh[2H:3H]
/// (a0 / b0: the r rows of dxg / dhg).
template <typename T>
__attribute__((noinline)) void
choRowBackward2(int64_t H, const T *__restrict sv, const T *__restrict hp,
                const T *__restrict drh, T *__restrict a0, T *__restrict b0,
                T *__restrict direct) {
  const int h = (int)H;
  for (int j = 0; j < h; ++j) {
    T dar;
    direct[j] += gru_cho_grads2(sv, j, hp[j], drh[j], dar);
    a0[j] = dar;
    b0[j] = dar;
  }
}

/// Where the scan's per-step rows live. Full: the forward's saved gates
/// [L*D, B, T, slots*H] and [B, T, ...] gate-adjoint buffers, by time index.
/// Segment (BPTT checkpointing): the scan steps [s0, s0 + K) of sorted row
/// k, at local step j = st - s0: adjoint rows k*K + j, saved rows
/// k*(K+1) + j + 1 (row k*(K+1) holds, in its c slot, the cell state
/// entering the segment).
struct FullIndex {
  int64_t Tn, sdB; // T; state slot * B
  int64_t row(int64_t b, int64_t, int64_t t, int64_t) const {
    return b * Tn + t;
  }
  int64_t saved(int64_t b, int64_t, int64_t t, int64_t) const {
    return (sdB + b) * Tn + t;
  }
  int64_t savedPrev(int64_t b, int64_t, int64_t tp, int64_t) const {
    return (sdB + b) * Tn + tp;
  }
};
struct SegmentIndex {
  int64_t K, s0;
  int64_t row(int64_t, int64_t k, int64_t, int64_t st) const {
    return k * K + (st - s0);
  }
  int64_t saved(int64_t, int64_t k, int64_t, int64_t st) const {
    return k * (K + 1) + (st - s0) + 1;
  }
  int64_t savedPrev(int64_t, int64_t k, int64_t, int64_t st) const {
    return k * (K + 1) + (st - s0);
  }
};

/// The carried state adjoints from dh_n / dc_n (slot sd), in sorted-row order.
template <int Kind, typename T>
void scanBackwardBegin(const LayerArgs &s, const T *dhn, const T *dcn,
                       const BwdWork<T> &w) {
  const int64_t B = s.B, H = s.H, sd = s.sd;
  for (int64_t k = 0; k < B; ++k) {
    const int64_t b = w.perm[k];
    for (int64_t j = 0; j < H; ++j) {
      w.dh[k * H + j] = dhn ? dhn[(sd * B + b) * H + j] : T(0);
      if (Kind == CellLstm)
        w.dc[k * H + j] = dcn ? dcn[(sd * B + b) * H + j] : T(0);
    }
  }
  std::memset(w.zero, 0, sizeof(T) * H);
}

/// dh0 / dc0 slot sd from the carried adjoints after step 0.
template <int Kind, typename T>
void scanBackwardEnd(const LayerArgs &s, T *dh0, T *dc0, const BwdWork<T> &w) {
  const int64_t B = s.B, H = s.H, sd = s.sd;
  for (int64_t k = 0; k < B; ++k) {
    const int64_t b = w.perm[k];
    if (dh0)
      std::memcpy(dh0 + (sd * B + b) * H, w.dh + k * H, sizeof(T) * H);
    if (Kind == CellLstm && dc0)
      std::memcpy(dc0 + (sd * B + b) * H, w.dc + k * H, sizeof(T) * H);
  }
}

/// Reverse time loop of one layer and direction over the scan steps
/// [stBegin, stEnd), last first, carrying w.dh / w.dc. Fills the gate
/// adjoints dxg / dhg of every valid step (the caller zeroes the others),
/// w.hprev (and w.rh) at the rows `ix` gives; `saved` holds the gates there.
/// scanBackwardSteps on AVX-512 (f32; Elman, LSTM, PyTorch's GRU; no
/// zoneout): one OpenMP region over the reverse time loop, the threads
/// splitting the units in panels of 64. Per step each thread runs the unit
/// backward of its units for every active row (gate adjoints, dc, the
/// direct path of dh_prev), a barrier, then the step product of its units,
/// dh_prev = direct + dg W_hh (fastBackwardStep, the gate adjoints of the
/// step read in place in dxg / dhg), which the same thread's units read at
/// the next step: one barrier per step. Thread 0 also writes the rows'
/// offsets, double-buffered by step parity.
template <int Kind, typename Index>
void fastBackwardSteps(const LayerArgs &s, const Index &ix, int64_t stBegin,
                       int64_t stEnd, const float *whh, const float *saved,
                       const float *y, const float *h0, const float *c0,
                       const float *dy, const BwdWork<float> &w, float *dxg,
                       float *dhg) {
  const int64_t B = s.B, Tn = s.T, H = s.H, DH = s.D * s.H, sd = s.sd;
  const int64_t GH = cell_gates(Kind) * H;
  const int slots = cell_saved_slots(Kind);
  const int64_t cofs = s.col * H;
  const bool reverse = s.reverse;
  constexpr bool twoG = Kind == CellGru;
  float *gA = twoG ? dhg : dxg;
  fastBackwardPack(Kind, H, whh, w.packed);
  const int64_t P = fastBackwardPanels(H);
  int nt = omp_in_parallel() ? 1 : omp_get_max_threads();
  if ((int64_t)nt > P)
    nt = (int)P;
  if (!recurrentStepThreads(B, GH, H) || nt < 1)
    nt = 1;
  StepBarrier barrier;
#pragma omp parallel num_threads(nt)
  {
    const int tid = omp_get_thread_num(), nth = omp_get_num_threads();
    const int64_t p0 = P * tid / nth, p1 = P * (tid + 1) / nth;
    const int64_t j0 = std::min(H, p0 * 64), j1 = std::min(H, p1 * 64);
    float *nul = nullptr;
    int64_t n = 0;
    for (int64_t st = stEnd - 1; st >= stBegin; --st) {
      while (n < B && w.lens[n] > st)
        ++n;
      int64_t *off = w.rowOff + (st & 1) * B;
      for (int64_t k = 0; k < n; ++k) {
        const int64_t b = w.perm[k];
        const int len = w.lens[k];
        const int64_t t = rnn_time_index((int)st, len, reverse);
        const int64_t tp = reverse ? t + 1 : t - 1;
        const bool hasPrev = st > 0;
        const int64_t r = ix.row(b, k, t, st);
        if (tid == 0)
          off[k] = r * GH;
        if (j1 <= j0)
          continue;
        const float *hp = hasPrev ? y + (b * Tn + tp) * DH + cofs
                                  : (h0 ? h0 + (sd * B + b) * H : w.zero);
        const float *cp =
            Kind != CellLstm ? w.zero
            : hasPrev ? saved + ix.savedPrev(b, k, tp, st) * slots * H + 4 * H
                      : (c0 ? c0 + (sd * B + b) * H : w.zero);
        const float *dyr = dy ? dy + (b * Tn + t) * DH + cofs : w.zero;
        const float *sv = saved + ix.saved(b, k, t, st) * slots * H;
        float *dxr = dxg + r * GH;
        float *dhr = twoG ? dhg + r * GH : dxr;
        std::memcpy(w.hprev + r * H + j0, hp + j0, sizeof(float) * (j1 - j0));
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wrestrict"
        unitRowBackward<Kind, float>(
            j0, j1, H, sv, hp, cp, dyr, w.dh + k * H,
            Kind == CellLstm ? w.dc + k * H : nul, dxr, dxr + H, dxr + 2 * H,
            Kind == CellLstm ? dxr + 3 * H : nul, twoG ? dhr : nul,
            twoG ? dhr + H : nul, twoG ? dhr + 2 * H : nul, w.direct + k * H,
            nul, nul);
#pragma GCC diagnostic pop
      }
      barrier.wait(nth);
      if (j1 > j0)
        fastBackwardStep(n, GH, H, gA, off, w.packed, p0, p1, w.direct, w.dh);
    }
  }
}

template <int Kind, typename T, typename Index>
void scanBackwardSteps(const LayerArgs &s, const Index &ix, int64_t stBegin,
                       int64_t stEnd, const T *whh, const T *saved, const T *y,
                       const T *h0, const T *c0, const T *dy,
                       const BwdWork<T> &w, T *dxg, T *dhg,
                       const Zoneout &zo = Zoneout()) {
  const int64_t B = s.B, Tn = s.T, H = s.H, DH = s.D * s.H, sd = s.sd;
  const int G = cell_gates(Kind);
  const int64_t GH = G * H;
  const int slots = cell_saved_slots(Kind);
  const int64_t cofs = s.col * H;
  const bool reverse = s.reverse;
  const bool zoneout = Kind == CellLstm && zo.p > 0;
  if constexpr (std::is_same_v<T, float> && Kind != CellGruCho) {
    if (!zoneout && stEnd > stBegin && fastBackwardAvailable(Kind)) {
      fastBackwardSteps<Kind>(s, ix, stBegin, stEnd, whh, saved, y, h0, c0,
                              dy, w, dxg, dhg);
      return;
    }
  }
  int64_t n = 0;
  for (int64_t st = stEnd - 1; st >= stBegin; --st) {
    while (n < B && w.lens[n] > st)
      ++n;
    const int64_t work = n * H;
#pragma omp parallel for schedule(static) if (work > 8192)
    for (int64_t k = 0; k < n; ++k) {
      const int64_t b = w.perm[k];
      const int len = w.lens[k];
      const int64_t t = rnn_time_index((int)st, len, reverse);
      const int64_t tp = reverse ? t + 1 : t - 1;
      const bool hasPrev = st > 0;
      const int64_t r = ix.row(b, k, t, st);
      const T *hp = hasPrev ? y + (b * Tn + tp) * DH + cofs
                            : (h0 ? h0 + (sd * B + b) * H : w.zero);
      const T *cp = Kind != CellLstm ? w.zero
                    : hasPrev
                        ? saved + ix.savedPrev(b, k, tp, st) * slots * H + 4 * H
                        : (c0 ? c0 + (sd * B + b) * H : w.zero);
      const T *dyr = dy ? dy + (b * Tn + t) * DH + cofs : w.zero;
      const T *sv = saved + ix.saved(b, k, t, st) * slots * H;
      T *dxr = dxg + r * GH;
      T *dst = w.dstep + k * GH;
      std::memcpy(w.hprev + r * H, hp, sizeof(T) * H);
      if (zoneout) {
        for (int64_t j = 0; j < H; ++j) {
          const T dht = w.dh[k * H + j] + dyr[j];
          if (zoneout_keep_prev(lstm_zoneout_key(zo.seed, sd), zo.offset,
                                lstm_zoneout_counter(sd, t, b, j, B, Tn, H),
                                (float)zo.p)) {
            // Zoned-out unit: h_t = h_{t-1}, c_t = c_{t-1}. The adjoints
            // pass straight through; the gates of this step get none.
            for (int gi = 0; gi < 4; ++gi) {
              dxr[gi * H + j] = T(0);
              dst[gi * H + j] = T(0);
            }
            w.direct[k * H + j] = dht;
          } else {
            T dc = w.dc[k * H + j];
            lstm_unit_backward(sv, (int)H, (int)j, cp[j], dht, dc, dxr);
            w.dc[k * H + j] = dc;
            for (int gi = 0; gi < 4; ++gi)
              dst[gi * H + j] = dxr[gi * H + j];
            w.direct[k * H + j] = T(0);
          }
        }
      } else {
        const bool twoG = Kind == CellGru || Kind == CellGruCho;
        const bool cho = Kind == CellGruCho;
        T *dhr = twoG ? dhg + r * GH : dxr;
        T *nul = nullptr;
        // Rows a kind does not use are null, never dereferenced.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wrestrict"
        unitRowBackward<Kind, T>(
            0, H, H, sv, hp, cp, dyr, w.dh + k * H,
            Kind == CellLstm ? w.dc + k * H : nul, dxr, dxr + H, dxr + 2 * H,
            Kind == CellLstm ? dxr + 3 * H : nul, twoG ? dhr : nul,
            twoG ? dhr + H : nul, twoG ? dhr + 2 * H : nul, w.direct + k * H,
            cho ? w.dah + k * H : nul, cho ? w.rh + r * H : nul);
#pragma GCC diagnostic pop
        // The step GEMM's operand: this row of dhg (Cho: the z block here,
        // the r block after phase 2).
        if (cho)
          std::memcpy(dst + H, dhr + H, sizeof(T) * H);
        else
          std::memcpy(dst, dhr, sizeof(T) * GH);
      }
    }
    if (Kind == CellGruCho) {
      // drh = dah . W_hh[2H:3H]  ([n,H] x [H,H])
      gemm(false, false, n, H, H, T(1), w.dah, H, whh + 2 * H * H, H, T(0),
           w.drh, H);
#pragma omp parallel for schedule(static) if (work > 8192)
      for (int64_t k = 0; k < n; ++k) {
        const int64_t b = w.perm[k];
        const int64_t t = rnn_time_index((int)st, w.lens[k], reverse);
        const int64_t r = ix.row(b, k, t, st);
        T *dhr = dhg + r * GH;
        choRowBackward2<T>(H, saved + ix.saved(b, k, t, st) * slots * H,
                           w.hprev + r * H, w.drh + k * H, dxg + r * GH, dhr,
                           w.direct + k * H);
        std::memcpy(w.dstep + k * GH, dhr, sizeof(T) * H);
      }
    }
    // dh_prev = direct + dhg . W_hh (Cho: only the r, z rows multiply h).
    const int64_t Gc = Kind == CellGruCho ? 2 * H : GH;
    gemm(false, false, n, H, Gc, T(1), w.dstep, GH, whh, H, T(0), w.dhTmp, H);
#pragma omp parallel for schedule(static) if (work > 8192)
    for (int64_t e = 0; e < work; ++e)
      w.dh[e] = w.direct[e] + w.dhTmp[e];
  }
}

/// The whole reverse scan of one layer and direction over the forward's
/// saved gates; writes dh0/dc0 slot sd.
template <int Kind, typename T>
void scanBackward(const LayerArgs &s, const T *whh, const T *saved,
                  const T *y, const T *h0, const T *c0, const T *dy,
                  const T *dhn, const T *dcn, T *dh0, T *dc0,
                  const BwdWork<T> &w, T *dxg, T *dhg,
                  const Zoneout &zo = Zoneout()) {
  scanBackwardBegin<Kind, T>(s, dhn, dcn, w);
  const int64_t maxLen = s.B > 0 ? w.lens[0] : 0;
  scanBackwardSteps<Kind, T>(s, FullIndex{s.T, s.sd * s.B}, 0, maxLen, whh,
                             saved, y, h0, c0, dy, w, dxg, dhg, zo);
  scanBackwardEnd<Kind, T>(s, dh0, dc0, w);
}

template <typename T>
int layerBackward(int cell, int64_t B, int64_t Tn, int64_t I, int64_t H,
                  int64_t D, int64_t sd, int reverse, const T *x,
                  const T *wih, const T *whh, const T *saved, const T *y,
                  const T *h0, const T *c0, const int32_t *len32,
                  const int64_t *len64, const T *dy, const T *dhn,
                  const T *dcn, T *dx, T *dh0, T *dc0, T *dwih, T *dwhh,
                  T *dbih, T *dbhh, T *dxproj, void *workspace,
                  const Zoneout &zo = Zoneout()) {
  if (!(zo.p >= 0 && zo.p < 1) || (zo.p > 0 && cell != CellLstm))
    return NNCC_K_EINVAL;
  if (!validCell(cell) || B < 0 || Tn < 0 || H <= 0 || I < 0 ||
      (D != 1 && D != 2) || sd < 0 || !whh || !workspace ||
      (len32 && len64) || (B * Tn > 0 && (!saved || !y)))
    return NNCC_K_EINVAL;
  if ((dx && (!wih || I <= 0)) || (dwih && (!x || I <= 0)))
    return NNCC_K_EINVAL;
  const int64_t G = cell_gates(cell), GH = G * H;
  Arena a(workspace);
  BwdWork<T> w = carveBwd<T>(a, cell, B, Tn, H, dxproj == nullptr);
  bool ok = len64 ? sortRows(B, Tn, len64, w.perm, w.lens)
                  : sortRows(B, Tn, len32, w.perm, w.lens);
  if (!ok)
    return NNCC_K_EINVAL;
  T *dxg = dxproj ? dxproj : w.dxg;
  const bool twoG = cell == CellGru || cell == CellGruCho;
  T *dhg = twoG ? w.dhg : dxg;
  // The scan writes every row of a valid step; the steps past a length
  // must read zero in the weight-gradient GEMMs (none when all are full).
  if (B > 0 && w.lens[B - 1] < Tn) {
    std::memset(dxg, 0, sizeof(T) * B * Tn * GH);
    if (twoG)
      std::memset(dhg, 0, sizeof(T) * B * Tn * GH);
    std::memset(w.hprev, 0, sizeof(T) * B * Tn * H);
    if (cell == CellGruCho)
      std::memset(w.rh, 0, sizeof(T) * B * Tn * H);
  }
  LayerArgs s{B, Tn, I, H, D, sd, (D == 2 && reverse) ? 1 : 0, reverse != 0};
#define NNCC_BWD(K)                                                            \
  scanBackward<K, T>(s, whh, saved, y, h0, c0, dy, dhn, dcn, dh0, dc0, w, dxg, \
                     dhg, zo)
  switch (cell) {
  case CellRnnTanh:
    NNCC_BWD(CellRnnTanh);
    break;
  case CellRnnRelu:
    NNCC_BWD(CellRnnRelu);
    break;
  case CellLstm:
    NNCC_BWD(CellLstm);
    break;
  case CellGru:
    NNCC_BWD(CellGru);
    break;
  default:
    NNCC_BWD(CellGruCho);
    break;
  }
#undef NNCC_BWD
  const int64_t BT = B * Tn;
  // Weight gradients: GEMMs over all steps (padded steps have zero adjoints).
  if (dwhh) {
    if (cell == CellGruCho) {
      gemm(true, false, 2 * H, H, BT, T(1), dhg, GH, w.hprev, H, T(1), dwhh,
           H);
      gemm(true, false, H, H, BT, T(1), dhg + 2 * H, GH, w.rh, H, T(1),
           dwhh + 2 * H * H, H);
    } else {
      gemm(true, false, GH, H, BT, T(1), dhg, GH, w.hprev, H, T(1), dwhh, H);
    }
  }
  if (dhg == dxg && dbhh && dbih) {
    // RNN / LSTM: both bias adjoints are the gate adjoints (one pass).
    colSumAdd(BT, GH, dxg, GH, dbih, dbhh);
  } else {
    if (dbhh)
      colSumAdd(BT, GH, dhg, GH, dbhh);
    if (dbih)
      colSumAdd(BT, GH, dxg, GH, dbih);
  }
  if (dwih)
    gemm(true, false, GH, I, BT, T(1), dxg, GH, x, I, T(1), dwih, I);
  if (dx)
    gemm(false, false, BT, I, GH, T(1), dxg, GH, wih, I, T(1), dx, I);
  return NNCC_K_OK;
}

/// Checkpoints (LSTM cell states) per layer and direction for segments of
/// `every` steps: one per segment after the first.
int64_t ckptCount(int64_t Tn, int64_t every) {
  return every > 0 && Tn > 0 ? (Tn - 1) / every : 0;
}

/// Workspace of one checkpointed layer backward: the scan state and K-step
/// gate-adjoint buffers of carveBwd, then the segment's recomputed gates
/// (K + 1 rows per batch row), its recurrent projection, Cho's
/// W_hn (r*h), and the gathered layer input (also dx's scratch).
template <typename T> struct SegWork {
  BwdWork<T> w;
  T *saved, *hg, *hrh, *xs;
};

template <typename T>
SegWork<T> carveSeg(Arena &a, int cell, int64_t B, int64_t K, int64_t H,
                    int64_t inSize) {
  const int64_t GH = cell_gates(cell) * H;
  SegWork<T> sw;
  sw.w = carveBwd<T>(a, cell, B, K, H, true);
  sw.saved = a.take<T>(B * (K + 1) * cell_saved_slots(cell) * H);
  sw.hg = a.take<T>(B * K * GH);
  sw.hrh = a.take<T>(cell == CellGruCho ? B * K * H : 0);
  sw.xs = a.take<T>(B * K * inSize);
  return sw;
}

int64_t segWorkspace(int cell, int64_t B, int64_t K, int64_t H,
                     int64_t inSize, int64_t elem) {
  Arena a(nullptr);
  if (elem == 4)
    carveSeg<float>(a, cell, B, K, H, inSize);
  else
    carveSeg<double>(a, cell, B, K, H, inSize);
  return (int64_t)a.size() + 64;
}

/// The binomial schedule's LSTM cell states (nncc_rnn_backward, snapshots):
/// `snapshots` slots [snapshots, B, H] and the working state `cur` [B, H],
/// rows in the scan's sorted order, and the cursor's positions.
template <typename T> struct RevolveWork {
  int64_t snapshots = 0;
  T *snaps = nullptr, *cur = nullptr;
  int64_t *pos = nullptr;
};

template <typename T>
RevolveWork<T> carveRevolve(Arena &a, int cell, int64_t B, int64_t H,
                            int64_t snapshots) {
  RevolveWork<T> rv;
  if (cell != CellLstm) // h_t is a layer output: no state to keep
    return rv;
  rv.snapshots = snapshots;
  rv.snaps = a.take<T>(snapshots * B * H);
  rv.cur = a.take<T>(B * H);
  rv.pos = a.take<int64_t>(snapshots + 1);
  return rv;
}

/// BPTT of one layer and direction with checkpointing (nncc_rnn_backward, every):
/// the scan steps in segments of K, last segment first. Per segment the
/// forward gates are recomputed from the kept layer input `in`, output `y`
/// (h_{t-1}) and, for the LSTM, the cell state entering the segment (ckc
/// [ckptCount, B, H]; c0 for the first), with the cell math of
/// RecurrentMath.h and all steps' projections as two GEMMs (only the LSTM's
/// c recursion is sequential). Then the reverse scan of the segment
/// (scanBackwardSteps) and the weight gradients as GEMMs over its steps:
/// accumulates dx, dw_ih, dw_hh, db_ih, db_hh (each may be null).
/// With `rv` (the binomial schedule, K = 1; LSTM: rv->cur set) the cell
/// state entering each step comes from a RevolveCursor instead of ckc: it
/// advances the c recursion from the nearest snapshot (the same gates and
/// zoneout masks as the forward), storing snapshots on the way.
template <int Kind, typename T>
void layerBackwardCkpt(const LayerArgs &s, int64_t K, const T *in,
                       const T *wih, const T *whh, const T *bih,
                       const T *bhh, const T *y, const T *h0, const T *c0,
                       const T *ckc, const T *dy, const T *dhn, const T *dcn,
                       T *dx, T *dh0, T *dc0, T *dwih, T *dwhh, T *dbih,
                       T *dbhh, const SegWork<T> &sw, const Zoneout &zo,
                       const RevolveWork<T> *rv = nullptr,
                       int64_t *advanced = nullptr) {
  const int64_t B = s.B, Tn = s.T, I = s.I, H = s.H, DH = s.D * s.H;
  const int64_t sd = s.sd, cofs = s.col * H;
  const int64_t GH = cell_gates(Kind) * H, M = B * K;
  const int slots = cell_saved_slots(Kind);
  const bool twoG = Kind == CellGru || Kind == CellGruCho;
  const bool cho = Kind == CellGruCho;
  const BwdWork<T> &w = sw.w;
  T *dxg = w.dxg, *dhg = twoG ? w.dhg : w.dxg;
  const bool reverse = s.reverse;
  const bool zoneout = Kind == CellLstm && zo.p > 0;
  scanBackwardBegin<Kind, T>(s, dhn, dcn, w);
  const int64_t maxLen = B > 0 ? w.lens[0] : 0;
  // The binomial schedule's state operations on rv->cur (sorted rows).
  // advance(st) recomputes step st's gates for the rows active there with
  // the segment's buffers (free between segments) and keeps c only.
  const bool revolve = Kind == CellLstm && rv && rv->cur;
  struct RevolveOps {
    const LayerArgs &s;
    const RevolveWork<T> &rv;
    const SegWork<T> &sw;
    const T *in, *wih, *whh, *bih, *bhh, *y, *h0, *c0;
    const Zoneout &zo;
    void reset() {
      const int64_t B = s.B, H = s.H;
      for (int64_t k = 0; k < B; ++k) {
        const T *src = c0 ? c0 + (s.sd * B + sw.w.perm[k]) * H : sw.w.zero;
        std::memcpy(rv.cur + k * H, src, sizeof(T) * H);
      }
    }
    void load(int64_t slot) {
      std::memcpy(rv.cur, rv.snaps + slot * s.B * s.H, sizeof(T) * s.B * s.H);
    }
    void store(int64_t slot) {
      std::memcpy(rv.snaps + slot * s.B * s.H, rv.cur, sizeof(T) * s.B * s.H);
    }
    void advance(int64_t st) {
      const int64_t B = s.B, Tn = s.T, I = s.I, H = s.H, DH = s.D * s.H;
      const int64_t GH = 4 * H, cofs = s.col * H;
      const BwdWork<T> &w = sw.w;
      int64_t n = 0;
      while (n < B && w.lens[n] > st)
        ++n;
      for (int64_t k = 0; k < n; ++k) {
        const int64_t b = w.perm[k];
        const int64_t t = rnn_time_index((int)st, w.lens[k], s.reverse);
        const int64_t tp = s.reverse ? t + 1 : t - 1;
        std::memcpy(sw.xs + k * I, in + (b * Tn + t) * I, sizeof(T) * I);
        const T *hp = st > 0 ? y + (b * Tn + tp) * DH + cofs
                      : h0  ? h0 + (s.sd * B + b) * H
                            : w.zero;
        std::memcpy(w.hprev + k * H, hp, sizeof(T) * H);
        if (bih)
          std::memcpy(w.dxg + k * GH, bih, sizeof(T) * GH);
      }
      gemm(false, true, n, GH, I, T(1), sw.xs, I, wih, I, bih ? T(1) : T(0),
           w.dxg, GH);
      gemm(false, true, n, GH, H, T(1), w.hprev, H, whh, H, T(0), sw.hg, GH);
#pragma omp parallel for schedule(static) if (n * H > 8192)
      for (int64_t k = 0; k < n; ++k) {
        const int64_t b = w.perm[k];
        const int64_t t = rnn_time_index((int)st, w.lens[k], s.reverse);
        T *c = rv.cur + k * H;
        for (int64_t j = 0; j < H; ++j) {
          T cn, hn;
          lstm_unit(w.dxg + k * GH, sw.hg + k * GH, bhh, (int)H, (int)j, c[j],
                    cn, hn, (T *)nullptr);
          if (!(zo.p > 0 &&
                zoneout_keep_prev(lstm_zoneout_key(zo.seed, s.sd), zo.offset,
                                  lstm_zoneout_counter(s.sd, t, b, j, B, Tn, H),
                                  (float)zo.p)))
            c[j] = cn;
        }
      }
    }
  };
  RevolveWork<T> noRv;
  int64_t noPos = 0;
  RevolveOps ops{s,  revolve ? *rv : noRv, sw, in, wih, whh, bih, bhh,
                 y,  h0,                    c0, zo};
  RevolveCursor cursor(revolve ? rv->snapshots : 0, revolve ? rv->pos : &noPos);
  for (int64_t m = (maxLen + K - 1) / K - 1; m >= 0; --m) {
    const int64_t s0 = m * K, s1 = std::min(s0 + K, maxLen);
    if (revolve)
      cursor.seek(s0, ops);
    // Entries (row, step) past a row's length or the last segment's end
    // stay zero in every buffer the segment's GEMMs read.
    const bool full = s1 - s0 == K && w.lens[B - 1] >= s1;
    if (!full) {
      std::memset(sw.xs, 0, sizeof(T) * M * I);
      std::memset(w.hprev, 0, sizeof(T) * M * H);
      if (cho)
        std::memset(w.rh, 0, sizeof(T) * M * H);
    }
    // 1. Gather the segment's inputs and previous states.
#pragma omp parallel for schedule(static) if (M * (I + H) > 65536)
    for (int64_t k = 0; k < B; ++k) {
      const int64_t b = w.perm[k];
      for (int64_t st = s0; st < s1 && st < w.lens[k]; ++st) {
        const int64_t t = rnn_time_index((int)st, w.lens[k], reverse);
        const int64_t tp = reverse ? t + 1 : t - 1, r = k * K + (st - s0);
        std::memcpy(sw.xs + r * I, in + (b * Tn + t) * I, sizeof(T) * I);
        const T *hp = st > 0 ? y + (b * Tn + tp) * DH + cofs
                      : h0  ? h0 + (sd * B + b) * H
                            : w.zero;
        std::memcpy(w.hprev + r * H, hp, sizeof(T) * H);
      }
    }
    // 2. Projections of all its steps: xg (in dxg) = x W_ih^T + b_ih,
    //    hg = h_{t-1} W_hh^T (Cho: the r, z blocks).
    if (bih) {
      for (int64_t r = 0; r < M; ++r)
        std::memcpy(dxg + r * GH, bih, sizeof(T) * GH);
    }
    gemm(false, true, M, GH, I, T(1), sw.xs, I, wih, I, bih ? T(1) : T(0),
         dxg, GH);
    gemm(false, true, M, cho ? 2 * H : GH, H, T(1), w.hprev, H, whh, H, T(0),
         sw.hg, GH);
    // 3. The gates (saved slots) of every step.
#pragma omp parallel for schedule(static) if (M * H > 8192)
    for (int64_t k = 0; k < B; ++k) {
      const int64_t b = w.perm[k];
      T *svRow = sw.saved + k * (K + 1) * slots * H;
      if (Kind == CellLstm) {
        const T *cIn = revolve ? rv->cur + k * H
                       : s0 > 0 ? ckc + ((m - 1) * B + b) * H
                       : c0   ? c0 + (sd * B + b) * H
                              : w.zero;
        std::memcpy(svRow + 4 * H, cIn, sizeof(T) * H);
      }
      for (int64_t st = s0; st < s1 && st < w.lens[k]; ++st) {
        const int64_t r = k * K + (st - s0);
        const T *xr = dxg + r * GH, *hr = sw.hg + r * GH;
        const T *hp = w.hprev + r * H;
        T *sv = svRow + (st - s0 + 1) * slots * H;
        if (Kind == CellLstm) {
          const T *cp = sv - slots * H + 4 * H;
          const int64_t t = rnn_time_index((int)st, w.lens[k], reverse);
          for (int64_t j = 0; j < H; ++j) {
            T cn, hn;
            lstm_unit(xr, hr, bhh, (int)H, (int)j, cp[j], cn, hn, sv);
            if (zoneout &&
                zoneout_keep_prev(lstm_zoneout_key(zo.seed, sd), zo.offset,
                                  lstm_zoneout_counter(sd, t, b, j, B, Tn, H),
                                  (float)zo.p))
              sv[4 * H + j] = cp[j];
          }
        } else if (Kind == CellGru) {
          for (int64_t j = 0; j < H; ++j)
            gru_unit(xr, hr, bhh, (int)H, (int)j, hp[j], sv);
        } else if (Kind == CellGruCho) {
          for (int64_t j = 0; j < H; ++j) {
            T rg, zg;
            w.rh[r * H + j] =
                gru_cho_gates(xr, hr, bhh, (int)H, (int)j, hp[j], rg, zg);
            sv[j] = rg;
            sv[H + j] = zg;
          }
        } else {
          for (int64_t j = 0; j < H; ++j)
            rnn_unit(xr, hr, bhh, (int)j, Kind == CellRnnRelu, sv, (int)H);
        }
      }
    }
    if (cho) {
      gemm(false, true, M, H, H, T(1), w.rh, H, whh + 2 * H * H, H, T(0),
           sw.hrh, H);
#pragma omp parallel for schedule(static) if (M * H > 8192)
      for (int64_t k = 0; k < B; ++k) {
        for (int64_t st = s0; st < s1 && st < w.lens[k]; ++st) {
          const int64_t r = k * K + (st - s0);
          T *sv = sw.saved + (k * (K + 1) + st - s0 + 1) * slots * H;
          for (int64_t j = 0; j < H; ++j)
            gru_cho_update(dxg + r * GH, sw.hrh[r * H + j], bhh, (int)H,
                           (int)j, w.hprev[r * H + j], sv[j], sv[H + j], sv);
        }
      }
    }
    // 4. The reverse scan of the segment into the gate adjoints.
    if (!full) {
      std::memset(dxg, 0, sizeof(T) * M * GH);
      if (twoG)
        std::memset(dhg, 0, sizeof(T) * M * GH);
    }
    scanBackwardSteps<Kind, T>(s, SegmentIndex{K, s0}, s0, s1, whh, sw.saved,
                               y, h0, c0, dy, w, dxg, dhg, zo);
    // 5. Weight gradients over the segment's steps; dx through xs.
    if (dwhh) {
      if (cho) {
        gemm(true, false, 2 * H, H, M, T(1), dhg, GH, w.hprev, H, T(1), dwhh,
             H);
        gemm(true, false, H, H, M, T(1), dhg + 2 * H, GH, w.rh, H, T(1),
             dwhh + 2 * H * H, H);
      } else {
        gemm(true, false, GH, H, M, T(1), dhg, GH, w.hprev, H, T(1), dwhh, H);
      }
    }
    if (dhg == dxg && dbhh && dbih) {
      colSumAdd(M, GH, dxg, GH, dbih, dbhh);
    } else {
      if (dbhh)
        colSumAdd(M, GH, dhg, GH, dbhh);
      if (dbih)
        colSumAdd(M, GH, dxg, GH, dbih);
    }
    if (dwih)
      gemm(true, false, GH, I, M, T(1), dxg, GH, sw.xs, I, T(1), dwih, I);
    if (dx) {
      gemm(false, false, M, I, GH, T(1), dxg, GH, wih, I, T(0), sw.xs, I);
#pragma omp parallel for schedule(static) if (M * I > 65536)
      for (int64_t k = 0; k < B; ++k) {
        const int64_t b = w.perm[k];
        for (int64_t st = s0; st < s1 && st < w.lens[k]; ++st) {
          const int64_t t = rnn_time_index((int)st, w.lens[k], reverse);
          T *dr = dx + (b * Tn + t) * I;
          const T *sr = sw.xs + (k * K + (st - s0)) * I;
          for (int64_t e = 0; e < I; ++e)
            dr[e] += sr[e];
        }
      }
    }
  }
  scanBackwardEnd<Kind, T>(s, dh0, dc0, w);
  if (advanced)
    *advanced += cursor.advanced();
}

int64_t layerBwdWorkspace(int cell, int64_t B, int64_t Tn, int64_t H,
                          int64_t elem, bool ownDxg) {
  Arena a(nullptr);
  if (elem == 4)
    carveBwd<float>(a, cell, B, Tn, H, ownDxg);
  else
    carveBwd<double>(a, cell, B, Tn, H, ownDxg);
  return (int64_t)a.size() + 64;
}

/// The reserve of a stack (what the backward needs from the forward), in
/// elements: every layer's output [L, B·T, D·H], then the saved gates of
/// every layer and direction [L·D, B·T·slots·H].
int64_t reserveElems(int cell, int64_t B, int64_t Tn, int64_t H, int64_t L,
                     int64_t D) {
  return L * B * Tn * D * H + L * D * B * Tn * cell_saved_slots(cell) * H;
}

/// Stack workspace: layer outputs, saved gates of every layer, one input
/// projection, the forward layer workspace, two d(layer input) buffers and
/// the layer backward workspace.
struct StackWork {
  int64_t outs, saved, xg, fws, din, bws, total;
};

StackWork stackLayout(int cell, int64_t B, int64_t Tn, int64_t H, int64_t L,
                      int64_t D, int64_t elem, bool recompute = true) {
  StackWork s;
  const int64_t G = cell_gates(cell);
  auto up = [](int64_t v) { return (v + 63) & ~int64_t(63); };
  int64_t off = 0;
  s.outs = off;
  s.saved = off;
  s.xg = off;
  s.fws = off;
  if (recompute) { // the forward's outputs and gates, and its scratch
    off += up(L * B * Tn * D * H * elem);
    s.saved = off;
    off += up(L * D * B * Tn * cell_saved_slots(cell) * H * elem);
    s.xg = off;
    off += up(B * Tn * G * H * elem);
    s.fws = off;
    off += up(nncc_rnn_layer_workspace_size(cell, B, H, elem));
  }
  s.din = off;
  off += up(2 * B * Tn * D * H * elem);
  s.bws = off;
  off += up(layerBwdWorkspace(cell, B, Tn, H, elem, true));
  s.total = off + 64;
  return s;
}

/// The forward of the whole stack: every layer's output into outs
/// [L, B·T, D·H] and its gates into saved (slot l·D + d; may be null); the
/// final states into hn / cn when given. xg [B·T, G·H] and fws are scratch.
/// With ck (LSTM, BPTT checkpointing every `every` steps), slot l·D + d of
/// ck [L·D, ckptCount, B, H] receives the cell states entering the
/// segments (rnnLayerTrain).
template <typename T>
int stackForward(int cell, int64_t B, int64_t Tn, int64_t I, int64_t H,
                 int64_t L, int64_t D, int hasBias, const T *x,
                 const T *const *weights, const T *h0, const T *c0,
                 const int32_t *lengths, T *outs, T *saved, T *hn, T *cn,
                 T *xg, void *fws, const Zoneout &zo, T *ck = nullptr,
                 int64_t every = 0) {
  const int per = rnn_weights_per_cell(hasBias);
  const int64_t GH = cell_gates(cell) * H, DH = D * H, BT = B * Tn;
  for (int64_t l = 0; l < L; ++l) {
    const T *in = l == 0 ? x : outs + (l - 1) * BT * DH;
    const int64_t inSize = l == 0 ? I : DH;
    for (int64_t d = 0; d < D; ++d) {
      const T *const *wp = weights + (l * D + d) * per;
      const T *bih = hasBias ? wp[2] : nullptr;
      if (bih) {
        for (int64_t r = 0; r < BT; ++r)
          std::memcpy(xg + r * GH, bih, sizeof(T) * GH);
      }
      gemm(false, true, BT, GH, inSize, T(1), in, inSize, wp[0], inSize,
           bih ? T(1) : T(0), xg, GH);
      // saved is indexed by state slot: pass the layer's base so that slot
      // l*D+d lands in [l, d].
      int rc = rnnLayerTrain<T>(
          cell, B, Tn, H, D, l * D + d, (int)d, xg, wp[1],
          hasBias ? wp[3] : nullptr, h0, c0, lengths, outs + l * BT * DH, hn,
          cn, fws, saved, zo.p, zo.seed, zo.offset,
          ck ? ck + (l * D + d) * ckptCount(Tn, every) * B * H : nullptr,
          every);
      if (rc)
        return rc;
    }
  }
  return NNCC_K_OK;
}

/// BPTT of the whole stack. With `reserve` (stackForward's outs and saved
/// back to back) the forward is not run again; without, it is recomputed
/// into the workspace.
/// Zeroes a stack backward's outputs that accumulate: every weight
/// gradient (in _flat_weights order, `per` per layer and direction) and dx.
template <typename T>
void zeroStackGradients(T *const *dweights, T *dx, int64_t L, int64_t D, int64_t per,
                        int64_t I, int64_t DH, int64_t H, int64_t GH, int64_t BT) {
  const int nW = (int)(L * D * per);
  for (int i = 0; i < nW; ++i) {
    if (!dweights || !dweights[i])
      continue;
    const int64_t l = i / (D * per), kind = i % per;
    const int64_t inSize = l == 0 ? I : DH;
    const int64_t n = kind == 0 ? GH * inSize : kind == 1 ? GH * H : GH;
    std::memset(dweights[i], 0, sizeof(T) * n);
  }
  if (dx)
    std::memset(dx, 0, sizeof(T) * BT * I);
}

template <typename T>
int stackBackward(int cell, int64_t B, int64_t Tn, int64_t I, int64_t H,
                  int64_t L, int64_t D, int hasBias, const T *x,
                  const T *const *weights, const T *h0, const T *c0,
                  const int32_t *lengths, const T *reserve, const T *dy,
                  const T *dhn, const T *dcn, T *dx, T *dh0, T *dc0,
                  T *const *dweights, void *workspace,
                  const Zoneout &zo = Zoneout()) {
  if (!stackArgsValid(cell, B, Tn, I, H, L, D, hasBias, x,
                      reinterpret_cast<const void *const *>(weights),
                      lengths) ||
      !workspace)
    return NNCC_K_EINVAL;
  const int per = rnn_weights_per_cell(hasBias);
  const int64_t GH = cell_gates(cell) * H, DH = D * H, BT = B * Tn;
  StackWork lay = stackLayout(cell, B, Tn, H, L, D, sizeof(T), !reserve);
  char *base = static_cast<char *>(workspace);
  base += (64 - (reinterpret_cast<uintptr_t>(base) & 63)) & 63;
  const T *outs, *saved;
  if (reserve) {
    outs = reserve;
    saved = reserve + L * BT * DH;
  } else {
    // 1. Forward recomputation: every layer's output and gates.
    T *o = reinterpret_cast<T *>(base + lay.outs);
    T *sv = reinterpret_cast<T *>(base + lay.saved);
    int rc = stackForward<T>(cell, B, Tn, I, H, L, D, hasBias, x, weights, h0,
                             c0, lengths, o, sv, nullptr, nullptr,
                             reinterpret_cast<T *>(base + lay.xg),
                             base + lay.fws, zo);
    if (rc)
      return rc;
    outs = o;
    saved = sv;
  }
  T *din = reinterpret_cast<T *>(base + lay.din);
  void *bws = base + lay.bws;
  (void)GH;

  // 2. Backward, last layer first.
  zeroStackGradients<T>(dweights, dx, L, D, per, I, DH, H, GH, BT);
  for (int64_t l = L - 1; l >= 0; --l) {
    const T *dyl = l == L - 1 ? dy : din + ((l + 1) % 2) * BT * DH;
    T *dxl = l == 0 ? dx : din + (l % 2) * BT * DH;
    const T *in = l == 0 ? x : outs + (l - 1) * BT * DH;
    const int64_t inSize = l == 0 ? I : DH;
    if (l > 0)
      std::memset(dxl, 0, sizeof(T) * BT * DH);
    for (int64_t d = 0; d < D; ++d) {
      const T *const *wp = weights + (l * D + d) * per;
      T *const *dwp = dweights ? dweights + (l * D + d) * per : nullptr;
      int rc = layerBackward<T>(
          cell, B, Tn, inSize, H, D, l * D + d, (int)d, in, wp[0], wp[1],
          saved, outs + l * BT * DH, h0, c0, lengths, nullptr, dyl, dhn, dcn,
          dxl, dh0, dc0, dwp ? dwp[0] : nullptr, dwp ? dwp[1] : nullptr,
          (dwp && hasBias) ? dwp[2] : nullptr,
          (dwp && hasBias) ? dwp[3] : nullptr, nullptr, bws, zo);
      if (rc)
        return rc;
    }
  }
  return NNCC_K_OK;
}

/// The training forward of a stack: stackForward into `reserve`, the last
/// layer's output copied to y. every > 0: the checkpointed reserve of
/// stackBackwardCkpt; every < 0: the layer outputs only (the binomial
/// schedule's reserve).
template <typename T>
int stackForwardTrain(int cell, int64_t B, int64_t Tn, int64_t I, int64_t H,
                      int64_t L, int64_t D, int hasBias, const T *x,
                      const T *const *weights, const T *h0, const T *c0,
                      const int32_t *lengths, T *y, T *hn, T *cn, T *reserve,
                      void *workspace, const Zoneout &zo, int64_t every = 0) {
  if (!stackArgsValid(cell, B, Tn, I, H, L, D, hasBias, x,
                      reinterpret_cast<const void *const *>(weights),
                      lengths) ||
      !workspace || !y || (B * Tn > 0 && !reserve))
    return NNCC_K_EINVAL;
  const int64_t BT = B * Tn, DH = D * H;
  Arena a(workspace);
  T *xg = a.take<T>(BT * cell_gates(cell) * H);
  void *fws = a.take<char>(nncc_rnn_layer_workspace_size(cell, B, H, sizeof(T)));
  // Checkpointed: the layer outputs, then the LSTM's cell-state
  // checkpoints; no gates.
  T *outs = reserve, *rest = reserve + L * BT * DH;
  T *saved = every != 0 ? nullptr : rest;
  T *ck = every > 0 && cell == CellLstm ? rest : nullptr;
  int rc = stackForward<T>(cell, B, Tn, I, H, L, D, hasBias, x, weights, h0,
                           c0, lengths, outs, saved, hn, cn, xg, fws, zo, ck,
                           every > 0 ? every : 0);
  if (rc)
    return rc;
  std::memcpy(y, outs + (L - 1) * BT * DH, sizeof(T) * BT * DH);
  return NNCC_K_OK;
}

/// Workspace of stackBackwardCkpt: two d(layer input) buffers, then one
/// checkpointed layer backward's (with `snapshots` > 0, the binomial
/// schedule: one-step segments, then the LSTM's snapshots).
struct CkptWork {
  int64_t din, bws, total;
};

int64_t revolveWorkspace(int cell, int64_t B, int64_t H, int64_t snapshots,
                         int64_t elem) {
  Arena a(nullptr);
  if (elem == 4)
    carveRevolve<float>(a, cell, B, H, snapshots);
  else
    carveRevolve<double>(a, cell, B, H, snapshots);
  return (int64_t)a.size() + 64;
}

CkptWork ckptLayout(int cell, int64_t B, int64_t Tn, int64_t I, int64_t H,
                    int64_t L, int64_t D, int64_t every, int64_t elem,
                    int64_t snapshots = 0) {
  auto up = [](int64_t v) { return (v + 63) & ~int64_t(63); };
  const int64_t K =
      snapshots > 0 ? 1 : std::max<int64_t>(1, std::min(every, Tn));
  CkptWork c;
  c.din = 0;
  c.bws = up(2 * B * Tn * D * H * elem);
  c.total = c.bws +
            up(segWorkspace(cell, B, K, H, L > 1 ? std::max(I, D * H) : I,
                            elem)) +
            (snapshots > 0 ? up(revolveWorkspace(cell, B, H, snapshots, elem))
                           : 0) +
            64;
  return c;
}

/// BPTT of the whole stack from the checkpointed nncc_rnn_forward_train's reserve
/// (layer outputs, then the LSTM's checkpoints): layerBackwardCkpt per
/// layer (last first) and direction. With `snapshots` > 0 instead of
/// `every` (the binomial schedule; the reserve holds the layer outputs
/// only): one-step segments whose LSTM cell states a RevolveCursor serves
/// from at most `snapshots` snapshots; `advanced` (optional) accumulates
/// the forward steps it recomputed for them.
template <typename T>
int stackBackwardCkpt(int cell, int64_t B, int64_t Tn, int64_t I, int64_t H,
                      int64_t L, int64_t D, int hasBias, const T *x,
                      const T *const *weights, const T *h0, const T *c0,
                      const int32_t *lengths, const T *reserve, const T *dy,
                      const T *dhn, const T *dcn, T *dx, T *dh0, T *dc0,
                      T *const *dweights, void *workspace, const Zoneout &zo,
                      int64_t every, int64_t snapshots = 0,
                      int64_t *advanced = nullptr) {
  if (!stackArgsValid(cell, B, Tn, I, H, L, D, hasBias, x,
                      reinterpret_cast<const void *const *>(weights),
                      lengths) ||
      !workspace || (every < 1) == (snapshots < 1) ||
      (B * Tn > 0 && !reserve))
    return NNCC_K_EINVAL;
  const int per = rnn_weights_per_cell(hasBias);
  const int64_t GH = cell_gates(cell) * H, DH = D * H, BT = B * Tn;
  const int64_t K =
      snapshots > 0 ? 1 : std::max<int64_t>(1, std::min(every, Tn));
  const int64_t nck = snapshots > 0 ? 0 : ckptCount(Tn, every);
  const CkptWork lay =
      ckptLayout(cell, B, Tn, I, H, L, D, every, sizeof(T), snapshots);
  char *base = static_cast<char *>(workspace);
  base += (64 - (reinterpret_cast<uintptr_t>(base) & 63)) & 63;
  T *din = reinterpret_cast<T *>(base + lay.din);
  const T *outs = reserve, *ck = reserve + L * BT * DH;

  zeroStackGradients<T>(dweights, dx, L, D, per, I, DH, H, GH, BT);
  for (int64_t l = L - 1; l >= 0; --l) {
    const T *dyl = l == L - 1 ? dy : din + ((l + 1) % 2) * BT * DH;
    T *dxl = l == 0 ? dx : din + (l % 2) * BT * DH;
    const T *in = l == 0 ? x : outs + (l - 1) * BT * DH;
    const int64_t inSize = l == 0 ? I : DH;
    if (l > 0)
      std::memset(dxl, 0, sizeof(T) * BT * DH);
    for (int64_t d = 0; d < D; ++d) {
      const int64_t sd = l * D + d;
      const T *const *wp = weights + sd * per;
      T *const *dwp = dweights ? dweights + sd * per : nullptr;
      Arena a(base + lay.bws);
      SegWork<T> sw = carveSeg<T>(a, cell, B, K, H, inSize);
      // After the segment's largest carve (inSize <= max(I, D·H)).
      Arena ar(base + lay.bws +
               ((segWorkspace(cell, B, K, H, L > 1 ? std::max(I, DH) : I,
                              sizeof(T)) +
                 63) &
                ~int64_t(63)));
      RevolveWork<T> rv = snapshots > 0
                              ? carveRevolve<T>(ar, cell, B, H, snapshots)
                              : RevolveWork<T>();
      if (!sortRows(B, Tn, lengths, sw.w.perm, sw.w.lens))
        return NNCC_K_EINVAL;
      LayerArgs s{B, Tn, inSize, H, D, sd, d, d == 1};
#define NNCC_BWD_CKPT(KIND)                                                    \
  layerBackwardCkpt<KIND, T>(                                                  \
      s, K, in, wp[0], wp[1], hasBias ? wp[2] : nullptr,                       \
      hasBias ? wp[3] : nullptr, outs + l * BT * DH, h0, c0,                   \
      ck + sd * nck * B * H, dyl, dhn, dcn, dxl, dh0, dc0,                     \
      dwp ? dwp[0] : nullptr, dwp ? dwp[1] : nullptr,                          \
      (dwp && hasBias) ? dwp[2] : nullptr,                                     \
      (dwp && hasBias) ? dwp[3] : nullptr, sw, zo, &rv, advanced)
      switch (cell) {
      case CellRnnTanh:
        NNCC_BWD_CKPT(CellRnnTanh);
        break;
      case CellRnnRelu:
        NNCC_BWD_CKPT(CellRnnRelu);
        break;
      case CellLstm:
        NNCC_BWD_CKPT(CellLstm);
        break;
      case CellGru:
        NNCC_BWD_CKPT(CellGru);
        break;
      default:
        NNCC_BWD_CKPT(CellGruCho);
        break;
      }
#undef NNCC_BWD_CKPT
    }
  }
  return NNCC_K_OK;
}

/// Backward of one cell step (nnk.recurrent_cell): recomputes the gates.
template <typename T>
int cellBackward(int cell, int64_t B, int64_t H, const T *xproj, const T *h,
                 const T *c, const T *whh, const T *bhh, const T *dhOut,
                 const T *dcOut, T *dxproj, T *dh, T *dc, T *dwhh, T *dbhh,
                 void *workspace) {
  if (!validCell(cell) || B < 0 || H <= 0 || !whh || !workspace ||
      (B > 0 && (!xproj || !h || !dxproj || !dh)) ||
      (cell == CellLstm && B > 0 && !dc))
    return NNCC_K_EINVAL;
  const int64_t G = cell_gates(cell), GH = G * H;
  const int slots = cell_saved_slots(cell);
  Arena a(workspace);
  T *hg = a.take<T>(B * GH);
  T *sv = a.take<T>(B * slots * H);
  T *rh = a.take<T>(cell == CellGruCho ? B * H : 0);
  T *hrh = a.take<T>(cell == CellGruCho ? B * H : 0);
  T *dhg = a.take<T>(B * GH);
  T *direct = a.take<T>(B * H);
  // Forward gates.
  cellRecurrentInputs(cell, B, H, xproj, h, whh, bhh, hg, rh, hrh);
  for (int64_t e = 0; e < B * H; ++e) {
    const int64_t b = e / H, j = e % H;
    const T *xr = xproj + b * GH, *hr = hg + b * GH;
    T *s = sv + b * slots * H;
    switch (cell) {
    case CellLstm: {
      T cn, hn;
      lstm_unit(xr, hr, bhh, (int)H, (int)j, c ? c[e] : T(0), cn, hn, s);
      break;
    }
    case CellGru:
      gru_unit(xr, hr, bhh, (int)H, (int)j, h[e], s);
      break;
    case CellGruCho: {
      T r, z;
      gru_cho_gates(xr, hr, bhh, (int)H, (int)j, h[e], r, z);
      gru_cho_update(xr, hrh[e], bhh, (int)H, (int)j, h[e], r, z, s);
      break;
    }
    default:
      rnn_unit(xr, hr, bhh, (int)j, cell == CellRnnRelu, s, (int)H);
      break;
    }
  }
  // Unit derivatives.
  for (int64_t e = 0; e < B * H; ++e) {
    const int64_t b = e / H, j = e % H;
    const T *s = sv + b * slots * H;
    T *dxr = dxproj + b * GH, *dhr = dhg + b * GH;
    const T d = dhOut ? dhOut[e] : T(0);
    switch (cell) {
    case CellLstm: {
      T dcv = dcOut ? dcOut[e] : T(0);
      lstm_unit_backward(s, (int)H, (int)j, c ? c[e] : T(0), d, dcv, dxr);
      dc[e] = dcv;
      for (int gi = 0; gi < 4; ++gi)
        dhr[gi * H + j] = dxr[gi * H + j];
      direct[e] = T(0);
      break;
    }
    case CellGru:
      direct[e] = gru_unit_backward(s, (int)H, (int)j, h[e], d, dxr, dhr);
      break;
    case CellGruCho: {
      T dah;
      direct[e] = gru_cho_backward1(s, (int)H, (int)j, h[e], d, dxr, dhr, dah);
      hrh[e] = dah; // reuse as dah
      break;
    }
    default: {
      T da = rnn_unit_backward(s[j], cell == CellRnnRelu, d);
      dxr[j] = da;
      dhr[j] = da;
      direct[e] = T(0);
    }
    }
  }
  if (cell == CellGruCho) {
    T *drh = hg; // [B,H] view, no longer needed (stride H)
    gemm(false, false, B, H, H, T(1), hrh, H, whh + 2 * H * H, H, T(0), drh,
         H);
    for (int64_t e = 0; e < B * H; ++e) {
      const int64_t b = e / H, j = e % H;
      direct[e] += gru_cho_backward2(sv + b * slots * H, (int)H, (int)j, h[e],
                                     drh[e], dxproj + b * GH, dhg + b * GH);
    }
    if (dwhh) {
      gemm(true, false, 2 * H, H, B, T(1), dhg, GH, h, H, T(1), dwhh, H);
      gemm(true, false, H, H, B, T(1), dhg + 2 * H, GH, rh, H, T(1),
           dwhh + 2 * H * H, H);
    }
  } else if (dwhh) {
    gemm(true, false, GH, H, B, T(1), dhg, GH, h, H, T(1), dwhh, H);
  }
  if (dbhh)
    colSumAdd(B, GH, dhg, GH, dbhh);
  std::memcpy(dh, direct, sizeof(T) * B * H);
  gemm(false, false, B, H, cell == CellGruCho ? 2 * H : GH, T(1), dhg, GH,
       whh, H, T(1), dh, H);
  return NNCC_K_OK;
}

/// The zoneout and the schedule of an nncc_rnn_params, checked: false for
/// a zoneout rate outside [0, 1) or on a cell other than LSTM, a negative
/// schedule integer or both schedules at once.
bool stackOptionsOf(const nncc_rnn_params *p, Zoneout &zo) {
  return p && makeZoneout(p->cell, p->zoneout, p->seed, p->offset, zo) &&
         p->checkpoint_every >= 0 && p->checkpoint_snapshots >= 0 &&
         !(p->checkpoint_every > 0 && p->checkpoint_snapshots > 0);
}

/// nncc_rnn_forward_train: the reserve of p's schedule (stackForwardTrain's
/// `every`: the segment length, -1 for the binomial schedule's layer
/// outputs only, 0 for every step's gates).
template <typename T>
int stackForwardTrainOf(const nncc_rnn_params *p, const T *x, const T *const *w, const T *h0,
                        const T *c0, T *y, T *hn, T *cn, T *reserve, void *ws) {
  Zoneout zo;
  if (!stackOptionsOf(p, zo))
    return NNCC_K_EINVAL;
  const int64_t every = p->checkpoint_every > 0 ? p->checkpoint_every
                        : p->checkpoint_snapshots > 0 ? -1
                                                      : 0;
  return stackForwardTrain<T>(p->cell, p->batch, p->steps, p->input_size, p->hidden_size,
                              p->num_layers, p->num_directions, p->has_bias, x, w, h0, c0,
                              p->lengths, y, hn, cn, reserve, ws, zo, every);
}

/// nncc_rnn_backward: from the reserve of p's schedule, or (no reserve, no
/// schedule) re-running the forward into the workspace.
template <typename T>
int stackBackwardOf(const nncc_rnn_params *p, const T *x, const T *const *w, const T *h0,
                    const T *c0, const T *reserve, const T *dy, const T *dhn, const T *dcn,
                    T *dx, T *dh0, T *dc0, T *const *dw, void *ws, int64_t *recomputedSteps) {
  Zoneout zo;
  if (!stackOptionsOf(p, zo))
    return NNCC_K_EINVAL;
  if (recomputedSteps)
    *recomputedSteps = 0;
  const int64_t every = p->checkpoint_every, snapshots = p->checkpoint_snapshots;
  if (every == 0 && snapshots == 0)
    return stackBackward<T>(p->cell, p->batch, p->steps, p->input_size, p->hidden_size,
                            p->num_layers, p->num_directions, p->has_bias, x, w, h0, c0,
                            p->lengths, reserve, dy, dhn, dcn, dx, dh0, dc0, dw, ws, zo);
  if (!reserve && p->batch * p->steps > 0)
    return NNCC_K_EINVAL; // a schedule's backward reads its reserve
  return stackBackwardCkpt<T>(p->cell, p->batch, p->steps, p->input_size, p->hidden_size,
                              p->num_layers, p->num_directions, p->has_bias, x, w, h0, c0,
                              p->lengths, reserve, dy, dhn, dcn, dx, dh0, dc0, dw, ws, zo,
                              every, snapshots, recomputedSteps);
}

} // namespace

extern "C" int64_t nncc_rnn_layer_backward_workspace_size(int cell, int64_t B,
                                                          int64_t Tn,
                                                          int64_t H,
                                                          int64_t elem) {
  const CpuOnlySizes scope(cpuOnlyFor(elem));
  if (!validCell(cell) || (elem != 4 && elem != 8) || B < 0 || Tn < 0 ||
      H <= 0)
    return -1;
  return layerBwdWorkspace(cell, B, Tn, H, elem, true);
}

extern "C" int64_t nncc_rnn_backward_workspace_size(int cell, int64_t B,
                                                    int64_t Tn, int64_t I,
                                                    int64_t H, int64_t L,
                                                    int64_t D, int64_t elem) {
  const CpuOnlySizes scope(cpuOnlyFor(elem));
  (void)I;
  elem = workspaceElem(elem);
  if (!validCell(cell) || (elem != 4 && elem != 8) || B < 0 || Tn < 0 ||
      H <= 0 || L <= 0 || (D != 1 && D != 2))
    return -1;
  return stackLayout(cell, B, Tn, H, L, D, elem).total;
}

extern "C" int64_t nncc_rnn_reserve_size(int cell, int64_t B, int64_t Tn,
                                         int64_t H, int64_t L, int64_t D,
                                         int64_t elem) {
  if (!validCell(cell) || (elem != 4 && elem != 8) || B < 0 || Tn < 0 ||
      H <= 0 || L <= 0 || (D != 1 && D != 2))
    return -1;
  return reserveElems(cell, B, Tn, H, L, D) * elem;
}

extern "C" int64_t nncc_rnn_forward_train_workspace_size(int cell, int64_t B,
                                                         int64_t Tn, int64_t H,
                                                         int64_t elem) {
  const CpuOnlySizes scope(cpuOnlyFor(elem));
  elem = workspaceElem(elem);
  if (!validCell(cell) || (elem != 4 && elem != 8) || B < 0 || Tn < 0 ||
      H <= 0)
    return -1;
  Arena a(nullptr);
  a.take<char>(B * Tn * cell_gates(cell) * H * elem);
  a.take<char>(nncc_rnn_layer_workspace_size(cell, B, H, elem));
  return (int64_t)a.size() + 64;
}

extern "C" int64_t nncc_rnn_backward_reserved_workspace_size(
    int cell, int64_t B, int64_t Tn, int64_t H, int64_t L, int64_t D,
    int64_t elem) {
  const CpuOnlySizes scope(cpuOnlyFor(elem));
  elem = workspaceElem(elem);
  if (!validCell(cell) || (elem != 4 && elem != 8) || B < 0 || Tn < 0 ||
      H <= 0 || L <= 0 || (D != 1 && D != 2))
    return -1;
  return stackLayout(cell, B, Tn, H, L, D, elem, false).total;
}

extern "C" int64_t nncc_rnn_reserve_ckpt_size(int cell, int64_t B,
                                              int64_t Tn, int64_t H,
                                              int64_t L, int64_t D,
                                              int64_t every, int64_t elem) {
  if (!validCell(cell) || (elem != 4 && elem != 8) || B < 0 || Tn < 0 ||
      H <= 0 || L <= 0 || (D != 1 && D != 2) || every < 1)
    return -1;
  const int64_t ck = cell == CellLstm ? L * D * ckptCount(Tn, every) * B * H : 0;
  return (L * B * Tn * D * H + ck) * elem;
}

extern "C" int64_t nncc_rnn_backward_ckpt_workspace_size(
    int cell, int64_t B, int64_t Tn, int64_t I, int64_t H, int64_t L,
    int64_t D, int64_t every, int64_t elem) {
  const CpuOnlySizes scope(cpuOnlyFor(elem));
  elem = workspaceElem(elem);
  if (!validCell(cell) || (elem != 4 && elem != 8) || B < 0 || Tn < 0 ||
      I <= 0 || H <= 0 || L <= 0 || (D != 1 && D != 2) || every < 1)
    return -1;
  return ckptLayout(cell, B, Tn, I, H, L, D, every, elem).total;
}

extern "C" int64_t nncc_rnn_backward_revolve_workspace_size(
    int cell, int64_t B, int64_t Tn, int64_t I, int64_t H, int64_t L,
    int64_t D, int64_t snapshots, int64_t elem) {
  const CpuOnlySizes scope(cpuOnlyFor(elem));
  elem = workspaceElem(elem);
  if (!validCell(cell) || (elem != 4 && elem != 8) || B < 0 || Tn < 0 ||
      I <= 0 || H <= 0 || L <= 0 || (D != 1 && D != 2) || snapshots < 1)
    return -1;
  return ckptLayout(cell, B, Tn, I, H, L, D, 0, elem, snapshots).total;
}

extern "C" int64_t nncc_rnn_revolve_forward_steps(int cell, int64_t Tn,
                                                  int64_t L, int64_t D,
                                                  int64_t snapshots) {
  if (!validCell(cell) || Tn < 0 || L <= 0 || (D != 1 && D != 2) ||
      snapshots < 1)
    return -1;
  return cell == CellLstm ? L * D * revolve_forward_steps(Tn, snapshots) : 0;
}

extern "C" int64_t nncc_rnn_cell_backward_workspace_size(int cell, int64_t B,
                                                         int64_t H,
                                                         int64_t elem) {
  elem = workspaceElem(elem);
  if (!validCell(cell) || (elem != 4 && elem != 8) || B < 0 || H <= 0)
    return -1;
  const int64_t G = cell_gates(cell);
  return (2 * B * G * H + B * cell_saved_slots(cell) * H + 3 * B * H) * elem +
         7 * 64;
}

#define NNCC_DEFINE_RNN_BWD(S, T)                                              \
  extern "C" int nncc_rnn_layer_backward_##S(                                  \
      int cell, int64_t B, int64_t Tn, int64_t I, int64_t H, int64_t D,        \
      int64_t si, int reverse, const T *x, const T *wih, const T *whh,         \
      const T *saved, const T *y, const T *h0, const T *c0,                    \
      const int32_t *len, const int64_t *len64, const T *dy, const T *dhn,     \
      const T *dcn, T *dx, T *dh0, T *dc0, T *dwih, T *dwhh, T *dbih,          \
      T *dbhh, T *dxproj, void *ws) {                                          \
    return layerBackward<T>(cell, B, Tn, I, H, D, si, reverse, x, wih, whh,    \
                            saved, y, h0, c0, len, len64, dy, dhn, dcn, dx,    \
                            dh0, dc0, dwih, dwhh, dbih, dbhh, dxproj, ws);     \
  }                                                                            \
  extern "C" int nncc_rnn_forward_train_##S(                                   \
      const nncc_rnn_params *p, const T *x, const T *const *w, const T *h0,    \
      const T *c0, T *y, T *hn, T *cn, T *reserve, void *ws) {                 \
    return stackForwardTrainOf<T>(p, x, w, h0, c0, y, hn, cn, reserve, ws);    \
  }                                                                            \
  extern "C" int nncc_rnn_backward_##S(                                        \
      const nncc_rnn_params *p, const T *x, const T *const *w, const T *h0,    \
      const T *c0, const T *reserve, const T *dy, const T *dhn,                \
      const T *dcn, T *dx, T *dh0, T *dc0, T *const *dw, void *ws,             \
      int64_t *recomputed_steps) {                                             \
    return stackBackwardOf<T>(p, x, w, h0, c0, reserve, dy, dhn, dcn, dx, dh0, \
                              dc0, dw, ws, recomputed_steps);                  \
  }                                                                            \
  extern "C" int nncc_rnn_cell_backward_##S(                                   \
      int cell, int64_t B, int64_t H, const T *xproj, const T *h, const T *c,  \
      const T *whh, const T *bhh, const T *dh_out, const T *dc_out,            \
      T *dxproj, T *dh, T *dc, T *dwhh, T *dbhh, void *ws) {                   \
    return cellBackward<T>(cell, B, H, xproj, h, c, whh, bhh, dh_out, dc_out,  \
                           dxproj, dh, dc, dwhh, dbhh, ws);                    \
  }

NNCC_DEFINE_RNN_BWD(f32, float)
NNCC_DEFINE_RNN_BWD(f64, double)
