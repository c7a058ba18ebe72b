//===- RecurrentMath.h - Gate equations of RNN / LSTM / GRU -----*- C++ -*-===//
//
// One function per cell computes the update of ONE hidden unit j of ONE batch
// row, given
//   xg  : the input projection row   W_ih x_t + b_ih   [G*H]
//   hg  : the recurrent projection   W_hh h_{t-1}      [G*H] (no bias)
//   bhh : b_hh [G*H] or null
// Gate order follows PyTorch: LSTM (i, f, g, o), GRU (r, z, n), RNN (h).
// These are called by the CPU twin (runtime/lib/Kernels/Recurrent.cpp) and by the
// persistent CUDA kernel (CUDA/Recurrent.cuh).
//
// `saved` (may be null) receives the values a backward pass needs, at stride
// `H` (so unit j writes saved[j], saved[H + j], ...):
//   rnn      : h'                                  (1 slot)
//   lstm     : i, f, g, o, c'                       (5 slots)
//   gru      : r, z, n, (W_hn h + b_hn)             (4 slots)
//   gru cho  : r, z, h~                             (3 slots)
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_RECURRENTMATH_H
#define NNCC_KERNELS_RECURRENTMATH_H

#include "nncc/Kernels/Common.h"


namespace nncc {
namespace kernels {

/// Cell codes of the C ABI (NNCC_CELL_* of Codes.h).
enum CellKind : int {
  CellRnnTanh = NNCC_CELL_RNN_TANH,
  CellRnnRelu = NNCC_CELL_RNN_RELU,
  CellLstm = NNCC_CELL_LSTM,
  // PyTorch nn.GRU: n = tanh(W_in x + b_in + r*(W_hn h + b_hn)),
  //                 h' = (1-z)*n + z*h
  CellGru = NNCC_CELL_GRU,
  // Cho et al. 2014 (seed notes eqs. 21-24):
  //   h~ = tanh(W_xh x + W_hh (r*h) + b), h' = (1-z)*h + z*h~
  CellGruCho = NNCC_CELL_GRU_CHO2014,
};

/// Weights per layer and direction in a recurrent stack's weight table
/// (PyTorch's _flat_weights order): w_ih, w_hh, and b_ih, b_hh with biases.
NNCC_HD int rnn_weights_per_cell(bool hasBias) { return hasBias ? 4 : 2; }

NNCC_HD constexpr int cell_gates(int kind) {
  return kind == CellLstm ? 4 : (kind == CellGru || kind == CellGruCho) ? 3 : 1;
}

NNCC_HD constexpr int cell_saved_slots(int kind) {
  switch (kind) {
  case CellLstm:
    return 5;
  case CellGru:
    return 4;
  case CellGruCho:
    return 3;
  default:
    return 1;
  }
}

template <typename T> NNCC_HD T bias_at(const T *b, int i) {
  return b ? b[i] : T(0);
}

/// Elman RNN: h' = act(W_ih x + b_ih + W_hh h + b_hh).
template <typename T>
NNCC_HD_UNIT T rnn_unit(const T *xg, const T *hg, const T *bhh, int j,
                        bool relu, T *saved, int H) {
  T a = xg[j] + hg[j] + bias_at(bhh, j);
  T h = relu ? (a > T(0) ? a : T(0)) : ntanh(a);
  if (saved)
    saved[j] = h;
  (void)H;
  return h;
}

/// LSTM (gates i f g o): c' = f*c + i*g, h' = o*tanh(c'). The gates and the
/// new state by value (the CPU scan stores the saved slots itself, through
/// pointers the vectoriser can tell apart).
template <typename T>
NNCC_HD_UNIT void lstm_gates(const T *xg, const T *hg, const T *bhh, int H,
                             int j, T c_prev, T &i, T &f, T &g, T &o, T &c_new,
                             T &h_new) {
  i = sigmoid(xg[j] + hg[j] + bias_at(bhh, j));
  f = sigmoid(xg[H + j] + hg[H + j] + bias_at(bhh, H + j));
  g = ntanh(xg[2 * H + j] + hg[2 * H + j] + bias_at(bhh, 2 * H + j));
  o = sigmoid(xg[3 * H + j] + hg[3 * H + j] + bias_at(bhh, 3 * H + j));
  c_new = f * c_prev + i * g;
  h_new = o * ntanh(c_new);
}

/// LSTM unit with the saved slots written at stride H (see lstm_gates).
template <typename T>
NNCC_HD_UNIT void lstm_unit(const T *xg, const T *hg, const T *bhh, int H,
                            int j, T c_prev, T &c_new, T &h_new, T *saved) {
  T i, f, g, o;
  lstm_gates(xg, hg, bhh, H, j, c_prev, i, f, g, o, c_new, h_new);
  if (saved) {
    saved[j] = i;
    saved[H + j] = f;
    saved[2 * H + j] = g;
    saved[3 * H + j] = o;
    saved[4 * H + j] = c_new;
  }
}

/// PyTorch GRU (gates r z n): the gates by value (see lstm_gates); hn is
/// W_hn h + b_hn. Returns h'.
template <typename T>
NNCC_HD_UNIT T gru_gates(const T *xg, const T *hg, const T *bhh, int H, int j,
                         T h_prev, T &r, T &z, T &n, T &hn) {
  r = sigmoid(xg[j] + hg[j] + bias_at(bhh, j));
  z = sigmoid(xg[H + j] + hg[H + j] + bias_at(bhh, H + j));
  hn = hg[2 * H + j] + bias_at(bhh, 2 * H + j);
  n = ntanh(xg[2 * H + j] + r * hn);
  return (T(1) - z) * n + z * h_prev;
}

/// PyTorch GRU unit with the saved slots written at stride H.
template <typename T>
NNCC_HD_UNIT T gru_unit(const T *xg, const T *hg, const T *bhh, int H, int j,
                        T h_prev, T *saved) {
  T r, z, n, hn;
  const T h = gru_gates(xg, hg, bhh, H, j, h_prev, r, z, n, hn);
  if (saved) {
    saved[j] = r;
    saved[H + j] = z;
    saved[2 * H + j] = n;
    saved[3 * H + j] = hn;
  }
  return h;
}

/// Cho et al. 2014 GRU, phase 1: reset and update gates from the first 2H
/// rows of the recurrent projection; returns r*h (input of the second
/// recurrent product W_hh[2H:3H] (r*h)).
template <typename T>
NNCC_HD_UNIT T gru_cho_gates(const T *xg, const T *hg, const T *bhh, int H,
                             int j, T h_prev, T &r, T &z) {
  r = sigmoid(xg[j] + hg[j] + bias_at(bhh, j));
  z = sigmoid(xg[H + j] + hg[H + j] + bias_at(bhh, H + j));
  return r * h_prev;
}

/// Cho et al. 2014 GRU, phase 2: `hrh` = (W_hh[2H:3H] (r*h))_j.
/// h~ = tanh(W_xh x + b_ih_n + W_hh (r*h) + b_hh_n), h' = (1-z)*h + z*h~.
template <typename T>
NNCC_HD_UNIT T gru_cho_update(const T *xg, T hrh, const T *bhh, int H, int j,
                              T h_prev, T r, T z, T *saved) {
  T ht = ntanh(xg[2 * H + j] + hrh + bias_at(bhh, 2 * H + j));
  if (saved) {
    saved[j] = r;
    saved[H + j] = z;
    saved[2 * H + j] = ht;
  }
  return (T(1) - z) * h_prev + z * ht;
}

/// Time index processed at step s for a sequence of length `len`.
/// Forward: s; reverse: len-1-s (each sequence starts at its own last step).
NNCC_HD int rnn_time_index(int s, int len, bool reverse) {
  return reverse ? len - 1 - s : s;
}

} // namespace kernels
} // namespace nncc

#endif // NNCC_KERNELS_RECURRENTMATH_H
