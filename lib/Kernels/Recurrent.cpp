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
#include "nncc/Kernels/RecurrentMath.h"

#include <algorithm>
#include <cstring>

using namespace nncc::kernels;

namespace {

struct RnnShape {
  int64_t B, T, I, H, L, D;
  int cell;
};

bool validCell(int cell) { return cell >= CellRnnTanh && cell <= CellGruCho; }

template <typename T> struct RnnWork {
  int32_t *perm, *lens;
  T *xg, *layerA, *layerB, *h, *c, *hg, *r, *z, *rh, *hrh;
};

template <typename T>
RnnWork<T> carve(Arena &a, const RnnShape &s) {
  int64_t G = cell_gates(s.cell);
  RnnWork<T> w;
  w.perm = a.take<int32_t>(s.B);
  w.lens = a.take<int32_t>(s.B);
  w.xg = a.take<T>(s.B * s.T * G * s.H);
  bool inter = s.L > 1;
  w.layerA = a.take<T>(inter ? s.B * s.T * s.D * s.H : 0);
  w.layerB = a.take<T>(s.L > 2 ? s.B * s.T * s.D * s.H : 0);
  w.h = a.take<T>(s.B * s.H);
  w.c = a.take<T>(s.cell == CellLstm ? s.B * s.H : 0);
  w.hg = a.take<T>(s.B * G * s.H);
  bool cho = s.cell == CellGruCho;
  w.r = a.take<T>(cho ? s.B * s.H : 0);
  w.z = a.take<T>(cho ? s.B * s.H : 0);
  w.rh = a.take<T>(cho ? s.B * s.H : 0);
  w.hrh = a.take<T>(cho ? s.B * s.H : 0);
  return w;
}

/// One layer, one direction. `in` is [B, T, inSize]; writes columns
/// [d*H, (d+1)*H) of `out` [B, T, D*H].
template <int Kind, typename T>
void runDirection(const RnnShape &s, int64_t l, int64_t d, const T *in,
                  int64_t inSize, const T *wih, const T *whh, const T *bih,
                  const T *bhh, const T *h0, const T *c0, T *out, T *hn,
                  T *cn, const RnnWork<T> &w, T *saved) {
  const int64_t B = s.B, Tn = s.T, H = s.H, D = s.D;
  const int G = cell_gates(Kind);
  const int64_t GH = G * H;
  const bool reverse = d == 1;
  const int slots = cell_saved_slots(Kind);

  // 1. Input projection of every time step in one GEMM (bias pre-filled).
  if (bih) {
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < B * Tn; ++r)
      std::memcpy(w.xg + r * GH, bih, sizeof(T) * GH);
  }
  gemm(false, true, B * Tn, GH, inSize, T(1), in, inSize, wih, inSize,
       bih ? T(1) : T(0), w.xg, GH);

  // 2. Initial state, in sorted-row order.
  const int64_t sd = l * D + d; // state slot
  for (int64_t k = 0; k < B; ++k) {
    int64_t b = w.perm[k];
    for (int64_t j = 0; j < H; ++j) {
      w.h[k * H + j] = h0 ? h0[(sd * B + b) * H + j] : T(0);
      if (Kind == CellLstm)
        w.c[k * H + j] = c0 ? c0[(sd * B + b) * H + j] : T(0);
    }
  }

  // 3. Time loop.
  const int64_t maxLen = B > 0 ? w.lens[0] : 0;
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

    const int64_t work = n * H;
#pragma omp parallel for schedule(static) if (work > 8192)
    for (int64_t e = 0; e < work; ++e) {
      const int64_t k = e / H, j = e % H;
      const int64_t b = w.perm[k];
      const int64_t t = rnn_time_index((int)st, w.lens[k], reverse);
      const T *xr = w.xg + (b * Tn + t) * GH;
      const T *hr = w.hg + k * GH;
      T *sv = saved ? saved + (((sd * B + b) * Tn + t) * slots) * H : nullptr;
      T hp = w.h[k * H + j];
      T hnew;
      if (Kind == CellLstm) {
        T cnew;
        lstm_unit(xr, hr, bhh, (int)H, (int)j, w.c[k * H + j], cnew, hnew, sv);
        w.c[k * H + j] = cnew;
      } else if (Kind == CellGru) {
        hnew = gru_unit(xr, hr, bhh, (int)H, (int)j, hp, sv);
      } else if (Kind == CellGruCho) {
        T r, z;
        w.rh[k * H + j] = gru_cho_gates(xr, hr, bhh, (int)H, (int)j, hp, r, z);
        w.r[k * H + j] = r;
        w.z[k * H + j] = z;
        continue;
      } else {
        hnew = rnn_unit(xr, hr, bhh, (int)j, Kind == CellRnnRelu, sv, (int)H);
      }
      w.h[k * H + j] = hnew;
      out[(b * Tn + t) * D * H + d * H + j] = hnew;
    }
    if (Kind == CellGruCho) {
      gemm(false, true, n, H, H, T(1), w.rh, H, whh + 2 * H * H, H, T(0),
           w.hrh, H);
#pragma omp parallel for schedule(static) if (work > 8192)
      for (int64_t e = 0; e < work; ++e) {
        const int64_t k = e / H, j = e % H;
        const int64_t b = w.perm[k];
        const int64_t t = rnn_time_index((int)st, w.lens[k], reverse);
        const T *xr = w.xg + (b * Tn + t) * GH;
        T *sv =
            saved ? saved + (((sd * B + b) * Tn + t) * slots) * H : nullptr;
        T hnew = gru_cho_update(xr, w.hrh[k * H + j], bhh, (int)H, (int)j,
                                w.h[k * H + j], w.r[k * H + j], w.z[k * H + j],
                                sv);
        w.h[k * H + j] = hnew;
        out[(b * Tn + t) * D * H + d * H + j] = hnew;
      }
    }
  }

  // 4. Final states back in batch order.
  for (int64_t k = 0; k < B; ++k) {
    int64_t b = w.perm[k];
    if (hn)
      std::memcpy(hn + (sd * B + b) * H, w.h + k * H, sizeof(T) * H);
    if (Kind == CellLstm && cn)
      std::memcpy(cn + (sd * B + b) * H, w.c + k * H, sizeof(T) * H);
  }
}

template <typename T>
int rnnForward(int cell, int64_t B, int64_t Tn, int64_t I, int64_t H,
               int64_t L, int64_t D, int hasBias, const T *x,
               const T *const *weights, const T *h0, const T *c0,
               const int32_t *lengths, T *y, T *hn, T *cn, void *workspace,
               T *saved) {
  if (!validCell(cell) || B < 0 || Tn < 0 || I <= 0 || H <= 0 || L <= 0 ||
      (D != 1 && D != 2) || !weights || !workspace || !y ||
      (B * Tn > 0 && !x))
    return NNCC_K_EINVAL;
  RnnShape s{B, Tn, I, H, L, D, cell};
  Arena arena(workspace);
  RnnWork<T> w = carve<T>(arena, s);

  // Stable order by decreasing length.
  for (int64_t b = 0; b < B; ++b) {
    int32_t len = lengths ? lengths[b] : (int32_t)Tn;
    if (len < 0 || len > Tn)
      return NNCC_K_EINVAL;
    w.perm[b] = (int32_t)b;
  }
  std::stable_sort(w.perm, w.perm + B, [&](int32_t a, int32_t b2) {
    int32_t la = lengths ? lengths[a] : (int32_t)Tn;
    int32_t lb = lengths ? lengths[b2] : (int32_t)Tn;
    return la > lb;
  });
  for (int64_t k = 0; k < B; ++k)
    w.lens[k] = lengths ? lengths[w.perm[k]] : (int32_t)Tn;

  const int per = hasBias ? 4 : 2;
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

extern "C" int64_t nncc_rnn_workspace_size(int cell, int64_t B, int64_t Tn,
                                           int64_t I, int64_t H, int64_t L,
                                           int64_t D, int64_t elem) {
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

extern "C" int64_t nncc_rnn_saved_size(int cell, int64_t B, int64_t Tn,
                                       int64_t H, int64_t L, int64_t D) {
  if (!validCell(cell))
    return -1;
  return L * D * B * Tn * cell_saved_slots(cell) * H;
}

#define NNCC_DEFINE_RNN(S, T)                                                  \
  extern "C" int nncc_rnn_forward_##S(                                         \
      int cell, int64_t B, int64_t Tn, int64_t I, int64_t H, int64_t L,        \
      int64_t D, int hb, const T *x, const T *const *w, const T *h0,           \
      const T *c0, const int32_t *len, T *y, T *hn, T *cn, void *ws,           \
      T *saved) {                                                              \
    return rnnForward<T>(cell, B, Tn, I, H, L, D, hb, x, w, h0, c0, len, y,    \
                         hn, cn, ws, saved);                                   \
  }                                                                            \
  extern "C" int nncc_lstm_forward_##S(                                        \
      int64_t B, int64_t Tn, int64_t I, int64_t H, int64_t L, int64_t D,       \
      int hb, const T *x, const T *const *w, const T *h0, const T *c0,         \
      const int32_t *len, T *y, T *hn, T *cn, void *ws, T *saved) {            \
    return rnnForward<T>(CellLstm, B, Tn, I, H, L, D, hb, x, w, h0, c0, len,   \
                         y, hn, cn, ws, saved);                                \
  }                                                                            \
  extern "C" int nncc_gru_forward_##S(                                         \
      int cho, int64_t B, int64_t Tn, int64_t I, int64_t H, int64_t L,         \
      int64_t D, int hb, const T *x, const T *const *w, const T *h0,           \
      const int32_t *len, T *y, T *hn, void *ws, T *saved) {                   \
    return rnnForward<T>(cho ? CellGruCho : CellGru, B, Tn, I, H, L, D, hb, x, \
                         w, h0, nullptr, len, y, hn, nullptr, ws, saved);      \
  }                                                                            \
  extern "C" int nncc_elman_forward_##S(                                       \
      int relu, int64_t B, int64_t Tn, int64_t I, int64_t H, int64_t L,        \
      int64_t D, int hb, const T *x, const T *const *w, const T *h0,           \
      const int32_t *len, T *y, T *hn, void *ws, T *saved) {                   \
    return rnnForward<T>(relu ? CellRnnRelu : CellRnnTanh, B, Tn, I, H, L, D,  \
                         hb, x, w, h0, nullptr, len, y, hn, nullptr, ws,       \
                         saved);                                               \
  }

NNCC_DEFINE_RNN(f32, float)
NNCC_DEFINE_RNN(f64, double)
