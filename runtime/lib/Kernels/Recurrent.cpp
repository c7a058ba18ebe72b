//===- Recurrent.cpp - CPU twin of the fused recurrent layers -------------===//
//
// Per layer and direction: ONE GEMM projects the inputs of all time steps
// (xg = X W_ih^T + b_ih), then a time loop does, per step, one GEMM for the
// recurrent product of the still-active rows and one fused pass of gate math
// (RecurrentMath.h, the same functions the CUDA kernel calls).
//
// Variable lengths: rows are kept in an order sorted by decreasing length
// (stable), so the rows still active at step s are a prefix and the
// recurrent GEMM shrinks with them. The reverse direction processes, at step
// s, time index len_b-1-s of each sequence. Outputs past a length are zero
// and h_n/c_n hold the state after the last valid step (PyTorch packed
// sequence semantics).
//
//===----------------------------------------------------------------------===//
#include "Internal.h"
#include "RecurrentCommon.h"
#include "nncc/Kernels/RandomMasks.h"
#include "nncc/Kernels/RecurrentMath.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

using namespace nncc::kernels;

namespace {

struct RnnShape {
  int64_t B, T, I, H, L, D;
  int cell;
};

/// LSTM zoneout in training (0: off): per unit and step, keep the previous
/// h and c with probability p (one mask for both), drawn from
/// Philox(seed, offset + counter), counter = lstm_zoneout_counter(...).
struct Zoneout {
  double p = 0.0;
  uint64_t seed = 0, offset = 0;
};

template <typename T> struct RnnWork {
  int32_t *perm, *lens;
  T *xg, *layerA, *layerB, *h, *c, *hg, *r, *z, *rh, *hrh;
  // f32 only (RecurrentFast.cpp): the second h buffer and the packed W_hh.
  T *hAlt, *packed;
};

/// Workspace of the whole stack (`stack`: input projection and the
/// inter-layer buffers) or of one layer and direction over a given
/// projection (nncc_rnn_layer_*).
template <typename T>
RnnWork<T> carve(Arena &a, const RnnShape &s, bool stack = true) {
  int64_t G = cell_gates(s.cell);
  RnnWork<T> w;
  w.perm = a.take<int32_t>(s.B);
  w.lens = a.take<int32_t>(s.B);
  w.xg = a.take<T>(stack ? s.B * s.T * G * s.H : 0);
  bool inter = stack && s.L > 1;
  w.layerA = a.take<T>(inter ? s.B * s.T * s.D * s.H : 0);
  w.layerB = a.take<T>(stack && s.L > 2 ? s.B * s.T * s.D * s.H : 0);
  w.h = a.take<T>(s.B * s.H);
  w.c = a.take<T>(s.cell == CellLstm ? s.B * s.H : 0);
  w.hg = a.take<T>(s.B * G * s.H);
  bool cho = s.cell == CellGruCho;
  w.r = a.take<T>(cho ? s.B * s.H : 0);
  w.z = a.take<T>(cho ? s.B * s.H : 0);
  w.rh = a.take<T>(cho ? s.B * s.H : 0);
  w.hrh = a.take<T>(cho ? s.B * s.H : 0);
  // Declared whatever the CPU, so that the plan does not depend on it; f32
  // only, and left out of the plans of other targets (cpuOnlyCounted).
  const bool fast = sizeof(T) == 4 && takeCpuOnly(a) &&
                    fastScanPackedFloats(s.cell, s.H) > 0;
  w.hAlt = a.take<T>(fast ? s.B * s.H : 0);
  w.packed = a.take<T>(fast ? fastScanPackedFloats(s.cell, s.H) : 0);
  return w;
}

/// The time loop of one layer and direction over the input projection
/// `xgAll` [B, T, G*H] (x W_ih^T + b_ih of every step): reads state slot
/// `sd` of h0/c0 ([L*D, B, H]), writes columns [col*H, (col+1)*H) of `out`
/// [B, T, D*H] at the valid steps and slot `sd` of h_n/c_n. Rows are in
/// w.perm order (decreasing length), so the active rows are a prefix that
/// shrinks as sequences end.
/// h_n (and c_n) of direction `sd` from the sorted rows of `w`, back in
/// batch order.
template <int Kind, typename T>
void storeFinalStates(int64_t B, int64_t H, int64_t sd, const RnnWork<T> &w, T *hn, T *cn) {
  for (int64_t k = 0; k < B; ++k) {
    int64_t b = w.perm[k];
    if (hn)
      std::memcpy(hn + (sd * B + b) * H, w.h + k * H, sizeof(T) * H);
    if (Kind == CellLstm && cn)
      std::memcpy(cn + (sd * B + b) * H, w.c + k * H, sizeof(T) * H);
  }
}

template <int Kind, typename T>
void scanDirection(const RnnShape &s, int64_t sd, int64_t col, bool reverse,
                   const T *xgAll, const T *whh, const T *bhh, const T *h0,
                   const T *c0, T *out, T *hn, T *cn, const RnnWork<T> &w,
                   T *saved, const Zoneout &zo = Zoneout(), T *ckc = nullptr,
                   int64_t every = 0) {
  const int64_t B = s.B, Tn = s.T, H = s.H, D = s.D;
  const int G = cell_gates(Kind);
  const int64_t GH = G * H;
  const int slots = cell_saved_slots(Kind);
  const int64_t d = col;

  // Initial state, in sorted-row order.
  for (int64_t k = 0; k < B; ++k) {
    int64_t b = w.perm[k];
    for (int64_t j = 0; j < H; ++j) {
      w.h[k * H + j] = h0 ? h0[(sd * B + b) * H + j] : T(0);
      if (Kind == CellLstm)
        w.c[k * H + j] = c0 ? c0[(sd * B + b) * H + j] : T(0);
    }
  }

  // The unit math reads the recurrent bias unconditionally (gateRow), so a
  // layer without one reads zeros.
  std::vector<T> zeroBias;
  const T *bias = bhh;
  if (!bias) {
    zeroBias.assign(GH, T(0));
    bias = zeroBias.data();
  }

  // Time loop.
  const int64_t maxLen = B > 0 ? w.lens[0] : 0;
  if constexpr (std::is_same_v<T, float>) {
    if (zo.p == 0 && fastScanAvailable(Kind) && maxLen > 0) {
      fastScanPack(Kind, H, whh, w.packed);
      FastScan f{Kind,   B,        Tn,      H,   D,      col,   sd,
                 reverse, xgAll,   w.packed, bias, w.perm, w.lens, w.h,
                 w.hAlt, w.c,      out,      saved, ckc,   w.hg,  every};
      fastScanRun(f);
      storeFinalStates<Kind>(B, H, sd, w, hn, cn);
      return;
    }
  }
  int64_t n = B;
  for (int64_t st = 0; st < maxLen; ++st) {
    while (n > 0 && w.lens[n - 1] <= st)
      --n;
    if (n == 0)
      break;
    if (Kind == CellGruCho)
      gemm(false, true, n, 2 * H, H, T(1), w.h, H, whh, H, T(0), w.hg, GH);
    else
      gemm(false, true, n, GH, H, T(1), w.h, H, whh, H, T(0), w.hg, GH);

    // Rows outer, units inner: the unit loop is branch-free (see gateRow)
    // and vectorises.
    const int64_t work = n * H;
#pragma omp parallel for schedule(static) if (work > 8192)
    for (int64_t k = 0; k < n; ++k) {
      const int64_t b = w.perm[k];
      const int64_t t = rnn_time_index((int)st, w.lens[k], reverse);
      const T *xr = xgAll + (b * Tn + t) * GH;
      T *sv = saved ? saved + (((sd * B + b) * Tn + t) * slots) * H : nullptr;
      T *orow = out + (b * Tn + t) * D * H + d * H;
      // Per-kind scratch rows (null in the workspace of other kinds).
      T *crow = Kind == CellLstm ? w.c + k * H : nullptr;
      const bool cho = Kind == CellGruCho;
      T *rh = cho ? w.rh + k * H : nullptr, *r = cho ? w.r + k * H : nullptr,
        *z = cho ? w.z + k * H : nullptr;
      if (Kind == CellLstm && zo.p > 0) {
        // Zoneout (training): a unit whose mask is set keeps h and c; the
        // saved c slot holds the kept c (the next step's c_prev), the
        // backward regenerates the mask and routes the adjoints.
        const float pf = (float)zo.p;
        T *hrow = w.h + k * H;
        for (int64_t j = 0; j < H; ++j) {
          T cnew, hnew;
          lstm_unit(xr, w.hg + k * GH, bias, (int)H, (int)j, crow[j], cnew,
                    hnew, sv);
          if (zoneout_keep_prev(lstm_zoneout_key(zo.seed, sd), zo.offset,
                                lstm_zoneout_counter(sd, t, b, j, B, Tn, H),
                                pf)) {
            cnew = crow[j];
            hnew = hrow[j];
            if (sv)
              sv[4 * H + j] = cnew;
          }
          crow[j] = cnew;
          hrow[j] = hnew;
          orow[j] = hnew;
        }
      } else if (sv)
        gateRow<Kind, true>(H, 0, H, xr, w.hg + k * GH, bias, w.h + k * H, crow,
                            orow, sv, rh, r, z);
      else
        gateRow<Kind, false>(H, 0, H, xr, w.hg + k * GH, bias, w.h + k * H, crow,
                             orow, static_cast<T *>(nullptr), rh, r, z);
    }
    if (Kind == CellGruCho) {
      gemm(false, true, n, H, H, T(1), w.rh, H, whh + 2 * H * H, H, T(0),
           w.hrh, H);
#pragma omp parallel for schedule(static) if (work > 8192)
      for (int64_t e = 0; e < work; ++e) {
        const int64_t k = e / H, j = e % H;
        const int64_t b = w.perm[k];
        const int64_t t = rnn_time_index((int)st, w.lens[k], reverse);
        const T *xr = xgAll + (b * Tn + t) * GH;
        T *sv =
            saved ? saved + (((sd * B + b) * Tn + t) * slots) * H : nullptr;
        T hnew = gru_cho_update(xr, w.hrh[k * H + j], bhh, (int)H, (int)j,
                                w.h[k * H + j], w.r[k * H + j], w.z[k * H + j],
                                sv);
        w.h[k * H + j] = hnew;
        out[(b * Tn + t) * D * H + d * H + j] = hnew;
      }
    }
    // BPTT checkpoint (LSTM): the cell state entering step st + 1 when that
    // step starts a segment, for the rows still active there.
    if (Kind == CellLstm && ckc && (st + 1) % every == 0 && st + 1 < maxLen) {
      T *dst = ckc + ((st + 1) / every - 1) * B * H;
      for (int64_t k = 0; k < n && w.lens[k] > st + 1; ++k)
        std::memcpy(dst + w.perm[k] * H, w.c + k * H, sizeof(T) * H);
    }
  }

  storeFinalStates<Kind>(B, H, sd, w, hn, cn);
}

/// One layer, one direction of the stack. `in` is [B, T, inSize]; writes
/// columns [d*H, (d+1)*H) of `out` [B, T, D*H].
template <int Kind, typename T>
void runDirection(const RnnShape &s, int64_t l, int64_t d, const T *in,
                  int64_t inSize, const T *wih, const T *whh, const T *bih,
                  const T *bhh, const T *h0, const T *c0, T *out, T *hn,
                  T *cn, const RnnWork<T> &w, T *saved) {
  const int64_t B = s.B, Tn = s.T, H = s.H;
  const int64_t GH = cell_gates(Kind) * H;
  // Input projection of every time step in one GEMM (bias pre-filled).
  if (bih) {
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < B * Tn; ++r)
      std::memcpy(w.xg + r * GH, bih, sizeof(T) * GH);
  }
  gemm(false, true, B * Tn, GH, inSize, T(1), in, inSize, wih, inSize,
       bih ? T(1) : T(0), w.xg, GH);
  scanDirection<Kind, T>(s, l * s.D + d, d, d == 1, w.xg, whh, bhh, h0, c0,
                         out, hn, cn, w, saved);
}

/// Stable order by decreasing length into w.perm / w.lens; false when a
/// length is outside [0, T].
template <typename T, typename L>
bool sortRows(const RnnShape &s, const L *lengths, const RnnWork<T> &w) {
  const int64_t B = s.B, Tn = s.T;
  for (int64_t b = 0; b < B; ++b) {
    int64_t len = lengths ? (int64_t)lengths[b] : Tn;
    if (len < 0 || len > Tn)
      return false;
    w.perm[b] = (int32_t)b;
  }
  std::stable_sort(w.perm, w.perm + B, [&](int32_t a, int32_t b2) {
    int64_t la = lengths ? (int64_t)lengths[a] : Tn;
    int64_t lb = lengths ? (int64_t)lengths[b2] : Tn;
    return la > lb;
  });
  for (int64_t k = 0; k < B; ++k)
    w.lens[k] = lengths ? (int32_t)lengths[w.perm[k]] : (int32_t)Tn;
  return true;
}

template <typename T>
int rnnLayer(int cell, int64_t B, int64_t Tn, int64_t H, int64_t D,
             int64_t stateIndex, int reverse, const T *xproj, const T *whh,
             const T *bhh, const T *h0, const T *c0, const int32_t *len32,
             const int64_t *len64, T *y, T *hn, T *cn, void *workspace,
             T *saved, const Zoneout &zo = Zoneout(), T *ckc = nullptr,
             int64_t every = 0) {
  if (!(zo.p >= 0 && zo.p < 1) || (zo.p > 0 && cell != CellLstm))
    return NNCC_K_EINVAL;
  if (!validCell(cell) || B < 0 || Tn < 0 || H <= 0 || (D != 1 && D != 2) ||
      stateIndex < 0 || !whh || !workspace || !y || (len32 && len64) ||
      (B * Tn > 0 && !xproj) || (ckc && every < 1))
    return NNCC_K_EINVAL;
  RnnShape s{B, Tn, 0, H, 1, D, cell};
  Arena arena(workspace);
  RnnWork<T> w = carve<T>(arena, s, /*stack=*/false);
  bool ok = len64 ? sortRows<T>(s, len64, w) : sortRows<T>(s, len32, w);
  if (!ok)
    return NNCC_K_EINVAL;
  const int64_t col = (D == 2 && reverse) ? 1 : 0;
  // Steps past a length are zero in this direction's columns.
#pragma omp parallel for schedule(static) if (B * Tn * H > 65536)
  for (int64_t k = 0; k < B; ++k) {
    const int64_t b = w.perm[k];
    for (int64_t t = w.lens[k]; t < Tn; ++t)
      std::memset(y + (b * Tn + t) * D * H + col * H, 0, sizeof(T) * H);
  }
#define NNCC_SCAN(K)                                                           \
  scanDirection<K, T>(s, stateIndex, col, reverse != 0, xproj, whh, bhh, h0,   \
                      c0, y, hn, cn, w, saved, zo, ckc, every)
  switch (cell) {
  case CellRnnTanh:
    NNCC_SCAN(CellRnnTanh);
    break;
  case CellRnnRelu:
    NNCC_SCAN(CellRnnRelu);
    break;
  case CellLstm:
    NNCC_SCAN(CellLstm);
    break;
  case CellGru:
    NNCC_SCAN(CellGru);
    break;
  default:
    NNCC_SCAN(CellGruCho);
    break;
  }
#undef NNCC_SCAN
  return NNCC_K_OK;
}

/// One step of a cell (nnk.recurrent_cell) for all B rows: x [B, G*H]
/// input projection, h/c [B, H]; hg is a [B, G*H] scratch, rh/hrh [B, H]
/// (cho only).
template <typename T>
int rnnCell(int cell, int64_t B, int64_t H, const T *xproj, const T *h,
            const T *c, const T *whh, const T *bhh, T *hOut, T *cOut,
            void *workspace) {
  if (!validCell(cell) || B < 0 || H <= 0 || !whh || !workspace || !hOut ||
      (B > 0 && (!xproj || !h)) || (cell == CellLstm && !cOut))
    return NNCC_K_EINVAL;
  const int64_t G = cell_gates(cell), GH = G * H;
  Arena a(workspace);
  T *hg = a.take<T>(B * GH);
  T *rh = a.take<T>(cell == CellGruCho ? B * H : 0);
  T *hrh = a.take<T>(cell == CellGruCho ? B * H : 0);
  cellRecurrentInputs(cell, B, H, xproj, h, whh, bhh, hg, rh, hrh);
#pragma omp parallel for schedule(static) if (B * H > 8192)
  for (int64_t e = 0; e < B * H; ++e) {
    const int64_t b = e / H, j = e % H;
    const T *xr = xproj + b * GH, *hr = hg + b * GH;
    switch (cell) {
    case CellLstm: {
      T cn, hn;
      lstm_unit(xr, hr, bhh, (int)H, (int)j, c ? c[e] : T(0), cn, hn,
                (T *)nullptr);
      cOut[e] = cn;
      hOut[e] = hn;
      break;
    }
    case CellGru:
      hOut[e] = gru_unit(xr, hr, bhh, (int)H, (int)j, h[e], (T *)nullptr);
      break;
    case CellGruCho: {
      T r, z;
      gru_cho_gates(xr, hr, bhh, (int)H, (int)j, h[e], r, z);
      hOut[e] = gru_cho_update(xr, hrh[e], bhh, (int)H, (int)j, h[e], r, z,
                               (T *)nullptr);
      break;
    }
    default:
      hOut[e] = rnn_unit(xr, hr, bhh, (int)j, cell == CellRnnRelu,
                         (T *)nullptr, (int)H);
      break;
    }
  }
  return NNCC_K_OK;
}

template <typename T>
int rnnForward(int cell, int64_t B, int64_t Tn, int64_t I, int64_t H,
               int64_t L, int64_t D, int hasBias, const T *x,
               const T *const *weights, const T *h0, const T *c0,
               const int32_t *lengths, T *y, T *hn, T *cn, void *workspace,
               T *saved) {
  if (!stackArgsValid(cell, B, Tn, I, H, L, D, hasBias, x,
                      reinterpret_cast<const void *const *>(weights),
                      lengths) ||
      !workspace || !y)
    return NNCC_K_EINVAL;
  RnnShape s{B, Tn, I, H, L, D, cell};
  Arena arena(workspace);
  RnnWork<T> w = carve<T>(arena, s);

  // Stable order by decreasing length.
  if (!sortRows<T>(s, lengths, w))
    return NNCC_K_EINVAL;

  const int per = rnn_weights_per_cell(hasBias);
  const T *in = x;
  int64_t inSize = I;
  for (int64_t l = 0; l < L; ++l) {
    T *out = (l == L - 1) ? y : ((l % 2 == 0) ? w.layerA : w.layerB);
    // Rows past a length stay zero (also the next layer's input there).
    if (lengths) {
#pragma omp parallel for schedule(static)
      for (int64_t b = 0; b < B; ++b)
        for (int64_t t = lengths[b]; t < Tn; ++t)
          std::memset(out + (b * Tn + t) * D * H, 0, sizeof(T) * D * H);
    }
    for (int64_t d = 0; d < D; ++d) {
      const T *const *wp = weights + (l * D + d) * per;
      const T *wih = wp[0], *whh = wp[1];
      const T *bih = hasBias ? wp[2] : nullptr;
      const T *bhh = hasBias ? wp[3] : nullptr;
      if (!wih || !whh)
        return NNCC_K_EINVAL;
#define NNCC_RUN(K)                                                            \
  runDirection<K, T>(s, l, d, in, inSize, wih, whh, bih, bhh, h0, c0, out, hn, \
                     cn, w, saved)
      switch (cell) {
      case CellRnnTanh:
        NNCC_RUN(CellRnnTanh);
        break;
      case CellRnnRelu:
        NNCC_RUN(CellRnnRelu);
        break;
      case CellLstm:
        NNCC_RUN(CellLstm);
        break;
      case CellGru:
        NNCC_RUN(CellGru);
        break;
      default:
        NNCC_RUN(CellGruCho);
        break;
      }
#undef NNCC_RUN
    }
    in = out;
    inSize = D * H;
  }
  return NNCC_K_OK;
}

} // namespace

template <typename T>
int nncc::kernels::rnnLayerTrain(int cell, int64_t B, int64_t Tn, int64_t H,
                                 int64_t D, int64_t stateIndex, int reverse,
                                 const T *xproj, const T *whh, const T *bhh,
                                 const T *h0, const T *c0,
                                 const int32_t *lengths, T *y, T *hn, T *cn,
                                 void *workspace, T *saved, double zoneout,
                                 uint64_t seed, uint64_t offset, T *ckc,
                                 int64_t every) {
  Zoneout zo;
  zo.p = zoneout;
  zo.seed = seed;
  zo.offset = offset;
  return rnnLayer<T>(cell, B, Tn, H, D, stateIndex, reverse, xproj, whh, bhh,
                     h0, c0, lengths, nullptr, y, hn, cn, workspace, saved, zo,
                     ckc, every);
}
template int nncc::kernels::rnnLayerTrain<float>(
    int, int64_t, int64_t, int64_t, int64_t, int64_t, int, const float *,
    const float *, const float *, const float *, const float *,
    const int32_t *, float *, float *, float *, void *, float *, double,
    uint64_t, uint64_t, float *, int64_t);
template int nncc::kernels::rnnLayerTrain<double>(
    int, int64_t, int64_t, int64_t, int64_t, int64_t, int, const double *,
    const double *, const double *, const double *, const double *,
    const int32_t *, double *, double *, double *, void *, double *, double,
    uint64_t, uint64_t, double *, int64_t);

extern "C" int64_t nncc_rnn_workspace_size(int cell, int64_t B, int64_t Tn,
                                           int64_t I, int64_t H, int64_t L,
                                           int64_t D, int64_t elem) {
  const CpuOnlySizes scope(cpuOnlyFor(elem));
  elem = workspaceElem(elem);
  (void)I;
  if (!validCell(cell) || (elem != 4 && elem != 8))
    return -1;
  RnnShape s{B, Tn, I, H, L, D, cell};
  Arena a(nullptr);
  if (elem == 4)
    carve<float>(a, s);
  else
    carve<double>(a, s);
  return (int64_t)a.size() + 64;
}

extern "C" int64_t nncc_rnn_layer_workspace_size(int cell, int64_t B,
                                                 int64_t H, int64_t elem) {
  const CpuOnlySizes scope(cpuOnlyFor(elem));
  elem = workspaceElem(elem);
  if (!validCell(cell) || (elem != 4 && elem != 8) || B < 0 || H <= 0)
    return -1;
  RnnShape s{B, 1, 0, H, 1, 1, cell};
  Arena a(nullptr);
  if (elem == 4)
    carve<float>(a, s, false);
  else
    carve<double>(a, s, false);
  return (int64_t)a.size() + 64;
}

extern "C" int64_t nncc_rnn_cell_workspace_size(int cell, int64_t B, int64_t H,
                                                int64_t elem) {
  elem = workspaceElem(elem);
  if (!validCell(cell) || (elem != 4 && elem != 8) || B < 0 || H <= 0)
    return -1;
  const int64_t G = cell_gates(cell);
  return (B * G * H + 2 * B * H) * elem + 3 * 64;
}

extern "C" int64_t nncc_rnn_saved_size(int cell, int64_t B, int64_t Tn,
                                       int64_t H, int64_t L, int64_t D) {
  if (!validCell(cell))
    return -1;
  return L * D * B * Tn * cell_saved_slots(cell) * H;
}

#define NNCC_DEFINE_RNN(S, T)                                                  \
  extern "C" int nncc_rnn_forward_##S(                                         \
      const nncc_rnn_params *p, const T *x, const T *const *w, const T *h0,    \
      const T *c0, T *y, T *hn, T *cn, void *ws, T *saved) {                   \
    if (!p || p->zoneout != 0 || p->checkpoint_every != 0 ||                   \
        p->checkpoint_snapshots != 0)                                          \
      return NNCC_K_EINVAL; /* training options: nncc_rnn_forward_train */    \
    return rnnForward<T>(p->cell, p->batch, p->steps, p->input_size,          \
                         p->hidden_size, p->num_layers, p->num_directions,    \
                         p->has_bias, x, w, h0, c0, p->lengths, y, hn, cn, ws, \
                         saved);                                               \
  }                                                                            \
  extern "C" int nncc_rnn_layer_##S(                                           \
      int cell, int64_t B, int64_t Tn, int64_t H, int64_t D, int64_t si,       \
      int reverse, const T *xproj, const T *whh, const T *bhh, const T *h0,    \
      const T *c0, const int32_t *len, const int64_t *len64, T *y, T *hn,      \
      T *cn, void *ws, T *saved) {                                             \
    return rnnLayer<T>(cell, B, Tn, H, D, si, reverse, xproj, whh, bhh, h0,    \
                       c0, len, len64, y, hn, cn, ws, saved);                  \
  }                                                                            \
  extern "C" int nncc_rnn_layer_zoneout_##S(                                   \
      int cell, int64_t B, int64_t Tn, int64_t H, int64_t D, int64_t si,       \
      int reverse, const T *xproj, const T *whh, const T *bhh, const T *h0,    \
      const T *c0, const int32_t *len, const int64_t *len64, T *y, T *hn,      \
      T *cn, void *ws, T *saved, double zoneout, uint64_t seed,                \
      uint64_t offset) {                                                       \
    Zoneout zo;                                                                \
    zo.p = zoneout;                                                            \
    zo.seed = seed;                                                            \
    zo.offset = offset;                                                        \
    return rnnLayer<T>(cell, B, Tn, H, D, si, reverse, xproj, whh, bhh, h0,    \
                       c0, len, len64, y, hn, cn, ws, saved, zo);              \
  }                                                                            \
  extern "C" int nncc_rnn_cell_##S(int cell, int64_t B, int64_t H,             \
                                   const T *xproj, const T *h, const T *c,     \
                                   const T *whh, const T *bhh, T *h_out,       \
                                   T *c_out, void *ws) {                       \
    return rnnCell<T>(cell, B, H, xproj, h, c, whh, bhh, h_out, c_out, ws);    \
  }

NNCC_DEFINE_RNN(f32, float)
NNCC_DEFINE_RNN(f64, double)
