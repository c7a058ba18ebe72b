//===- RecurrentCommon.h - Shared by recurrent forward and backward -*- C++ -*-===//
#ifndef NNCC_LIB_KERNELS_RECURRENTCOMMON_H
#define NNCC_LIB_KERNELS_RECURRENTCOMMON_H

#include "Internal.h"
#include "nncc/Kernels/Bf16.h"
#include "nncc/Kernels/RecurrentMath.h"

namespace nncc {
namespace kernels {

/// The recurrent inputs of one cell step for all B rows: hg = h W_hh^T
/// ([B, G*H]; for Cho's GRU only the r and z blocks), and for Cho's GRU also
/// rh = r * h and hrh = rh W_hn^T ([B, H] each), which its candidate needs.
template <typename T>
void cellRecurrentInputs(int cell, int64_t B, int64_t H, const T *xproj,
                         const T *h, const T *whh, const T *bhh, T *hg, T *rh,
                         T *hrh) {
  const int64_t GH = cell_gates(cell) * H;
  gemm(false, true, B, cell == CellGruCho ? 2 * H : GH, H, T(1), h, H, whh, H,
       T(0), hg, GH);
  if (cell != CellGruCho)
    return;
  for (int64_t e = 0; e < B * H; ++e) {
    const int64_t b = e / H, j = e % H;
    T r, z;
    rh[e] = gru_cho_gates(xproj + b * GH, hg + b * GH, bhh, (int)H, (int)j, h[e],
                          r, z);
  }
  gemm(false, true, B, H, H, T(1), rh, H, whh + 2 * H * H, H, T(0), hrh, H);
}

/// The element size a CPU workspace slot is sized for: bf16 libraries never
/// run the CPU kernels, but their plans (shared by both targets) keep the
/// slot, sized as f32's.
inline int64_t workspaceElem(int64_t elem) { return acc_elem_bytes(elem); }

/// Whether `cell` is one of the kernel cell codes (RecurrentMath.h).
inline bool validCell(int cell) {
  return cell >= CellRnnTanh && cell <= CellGruCho;
}

/// Valid arguments of a whole recurrent stack (forward or backward): cell,
/// sizes, every weight present, lengths within [0, T].
inline bool stackArgsValid(int cell, int64_t B, int64_t Tn, int64_t I,
                           int64_t H, int64_t L, int64_t D, int hasBias,
                           const void *x, const void *const *weights,
                           const int32_t *lengths) {
  if (!validCell(cell) || B < 0 || Tn < 0 || I <= 0 || H <= 0 || L <= 0 ||
      (D != 1 && D != 2) || !weights || (B * Tn > 0 && !x))
    return false;
  const int per = rnn_weights_per_cell(hasBias);
  for (int64_t i = 0; i < L * D * per; ++i)
    if (!weights[i])
      return false;
  if (lengths)
    for (int64_t b = 0; b < B; ++b)
      if (lengths[b] < 0 || lengths[b] > Tn)
        return false;
  return true;
}

/// nncc_rnn_layer_zoneout_S (Recurrent.cpp) for the stack kernels of
/// RecurrentBackward.cpp. With `ckc` (LSTM, BPTT checkpointing) it also
/// stores the cell state entering every segment of `every` scan steps after
/// the first: entry m - 1 of ckc [ceil(T/every) - 1, B, H] (batch order) is
/// c entering step m * every, written for the rows still running there.
template <typename T>
int rnnLayerTrain(int cell, int64_t B, int64_t Tn, int64_t H, int64_t D,
                  int64_t stateIndex, int reverse, const T *xproj,
                  const T *whh, const T *bhh, const T *h0, const T *c0,
                  const int32_t *lengths, T *y, T *hn, T *cn, void *workspace,
                  T *saved, double zoneout, uint64_t seed, uint64_t offset,
                  T *ckc, int64_t every);

} // namespace kernels
} // namespace nncc

#endif
