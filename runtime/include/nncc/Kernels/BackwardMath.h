//===- BackwardMath.h - Shared math of the backward kernels -----*- C++ -*-===//
//
// The per-element / per-unit derivative formulas of the backward kernels, as
// NNCC_HD functions so a CUDA twin runs the same code as the CPU kernels in
// runtime/lib/Kernels/*Backward.cpp (see docs/kernels.md, "Backward").
//
// Recurrent units: each function takes the incoming adjoint of h' (dh: the
// carried state adjoint plus this step's dy) and the values the forward
// saved (RecurrentMath.h slot layout, stride H), and writes
//   dxg : adjoint of the input projection row  (W_ih x + b_ih)   [G*H]
//   dhg : adjoint of the recurrent product row (W_hh h + b_hh)   [G*H]
// (equal except for the GRU n gate), returning the part of dh_prev that does
// not go through W_hh ("direct" path). dh_prev = direct + dhg . W_hh.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_BACKWARDMATH_H
#define NNCC_KERNELS_BACKWARDMATH_H

#include "nncc/Kernels/Common.h"


namespace nncc {
namespace kernels {

// ---------------------------------------------------------------------------
// Activations
// ---------------------------------------------------------------------------

/// d act(x) / dx from the pre-activation x.
template <typename T> NNCC_HD T activation_grad_pre(int act, T x, T alpha) {
  switch (act) {
  case ActRelu:
    return x > T(0) ? T(1) : T(0);
  case ActLeakyRelu:
    return x >= T(0) ? T(1) : alpha;
  case ActGeluErf: {
    // 0.5 (1 + erf(x/sqrt2)) + x * phi(x)
    const T cdf = T(0.5) * (T(1) + nerf(x * T(0.70710678118654752440)));
    const T pdf = nexp(T(-0.5) * x * x) * T(0.39894228040143267794);
    return cdf + x * pdf;
  }
  case ActGeluTanh: {
    const T k = T(0.79788456080286535588);
    const T x3 = T(0.044715) * x * x * x;
    const T th = ntanh(k * (x + x3));
    return T(0.5) * (T(1) + th) +
           T(0.5) * x * (T(1) - th * th) * k * (T(1) + T(3) * T(0.044715) * x * x);
  }
  case ActTanh: {
    T y = ntanh(x);
    return T(1) - y * y;
  }
  case ActSigmoid: {
    T y = sigmoid(x);
    return y * (T(1) - y);
  }
  default:
    return T(1);
  }
}

/// True when the derivative can be formed from the activation's output
/// (none, relu, leaky_relu with alpha > 0, tanh, sigmoid; not gelu).
NNCC_HD bool activation_grad_from_output_ok(int act, double alpha) {
  return act == ActNone || act == ActRelu || act == ActTanh ||
         act == ActSigmoid || (act == ActLeakyRelu && alpha > 0);
}

/// d act / dx from the post-activation y (see activation_grad_from_output_ok).
template <typename T> NNCC_HD T activation_grad_post(int act, T y, T alpha) {
  switch (act) {
  case ActRelu:
    return y > T(0) ? T(1) : T(0);
  case ActLeakyRelu:
    return y >= T(0) ? T(1) : alpha;
  case ActTanh:
    return T(1) - y * y;
  case ActSigmoid:
    return y * (T(1) - y);
  default:
    return T(1);
  }
}

// ---------------------------------------------------------------------------
// Recurrent units (one hidden unit j of one row)
// ---------------------------------------------------------------------------

/// Elman RNN: returns da = dh * act'(a) (= dxg_j = dhg_j); direct path 0.
template <typename T> NNCC_HD_UNIT T rnn_unit_backward(T h, bool relu, T dh) {
  return relu ? (h > T(0) ? dh : T(0)) : dh * (T(1) - h * h);
}

// The *_grads forms return the gate adjoints by value (the CPU scan stores
// them itself, through row pointers the vectoriser can tell apart); the
// *_backward forms store them at stride H (CUDA, the cell kernel). Same math.

/// LSTM: `dc` is the carried cell adjoint in, dc_prev out; di..dout the gate
/// pre-activation adjoints (i f g o). Direct path 0.
template <typename T>
NNCC_HD_UNIT void lstm_unit_grads(const T *sv, int H, int j, T c_prev, T dh,
                                  T &dc, T &di, T &df, T &dg, T &dout) {
  const T i = sv[j], f = sv[H + j], g = sv[2 * H + j], o = sv[3 * H + j],
          c = sv[4 * H + j];
  const T tc = ntanh(c);
  const T dcc = dc + dh * o * (T(1) - tc * tc);
  di = dcc * g * i * (T(1) - i);
  df = dcc * c_prev * f * (T(1) - f);
  dg = dcc * i * (T(1) - g * g);
  dout = dh * tc * o * (T(1) - o);
  dc = dcc * f;
}

/// LSTM, adjoints stored: da[4 strides H] (i f g o).
template <typename T>
NNCC_HD_UNIT void lstm_unit_backward(const T *sv, int H, int j, T c_prev, T dh,
                                     T &dc, T *da) {
  T di, df, dg, dout;
  lstm_unit_grads(sv, H, j, c_prev, dh, dc, di, df, dg, dout);
  da[j] = di;
  da[H + j] = df;
  da[2 * H + j] = dg;
  da[3 * H + j] = dout;
}

/// PyTorch GRU: h' = (1-z) n + z h, n = tanh(xn + r (W_hn h + b_hn)).
/// dxg = (dar, daz, dan), dhg = (dar, daz, dan * r); returns the direct path.
template <typename T>
NNCC_HD_UNIT T gru_unit_grads(const T *sv, int H, int j, T h_prev, T dh, T &dar,
                              T &daz, T &dan, T &dhn) {
  const T r = sv[j], z = sv[H + j], n = sv[2 * H + j], hn = sv[3 * H + j];
  dan = dh * (T(1) - z) * (T(1) - n * n);
  dar = dan * hn * r * (T(1) - r);
  daz = dh * (h_prev - n) * z * (T(1) - z);
  dhn = dan * r;
  return dh * z;
}

template <typename T>
NNCC_HD_UNIT T gru_unit_backward(const T *sv, int H, int j, T h_prev, T dh,
                                 T *dxg, T *dhg) {
  T dar, daz, dan, dhn;
  const T direct = gru_unit_grads(sv, H, j, h_prev, dh, dar, daz, dan, dhn);
  dxg[j] = dar;
  dhg[j] = dar;
  dxg[H + j] = daz;
  dhg[H + j] = daz;
  dxg[2 * H + j] = dan;
  dhg[2 * H + j] = dhn;
  return direct;
}

/// Cho GRU phase 1 (before the product with W_hh[2H:3H]): z and h~ gates.
/// Returns the direct path dh (1-z); `daz` the z adjoint (dxg = dhg), `dah`
/// the adjoint of the h~ pre-activation (also the adjoint of
/// W_hh[2H:3H] (r h) + b_hh_n; dxg = dhg).
template <typename T>
NNCC_HD_UNIT T gru_cho_grads1(const T *sv, int H, int j, T h_prev, T dh, T &daz,
                              T &dah) {
  const T z = sv[H + j], ht = sv[2 * H + j];
  dah = dh * z * (T(1) - ht * ht);
  daz = dh * (ht - h_prev) * z * (T(1) - z);
  return dh * (T(1) - z);
}

template <typename T>
NNCC_HD_UNIT T gru_cho_backward1(const T *sv, int H, int j, T h_prev, T dh,
                                 T *dxg, T *dhg, T &dah) {
  T daz;
  const T direct = gru_cho_grads1(sv, H, j, h_prev, dh, daz, dah);
  dxg[H + j] = daz;
  dhg[H + j] = daz;
  dxg[2 * H + j] = dah;
  dhg[2 * H + j] = dah;
  return direct;
}

/// Cho GRU phase 2: `drh` = (dah . W_hh[2H:3H])_j, the adjoint of r*h.
/// `dar` the r adjoint (dxg = dhg); returns the extra direct path drh * r.
template <typename T>
NNCC_HD_UNIT T gru_cho_grads2(const T *sv, int j, T h_prev, T drh, T &dar) {
  const T r = sv[j];
  dar = drh * h_prev * r * (T(1) - r);
  return drh * r;
}

template <typename T>
NNCC_HD_UNIT T gru_cho_backward2(const T *sv, int H, int j, T h_prev, T drh,
                                 T *dxg, T *dhg) {
  (void)H;
  T dar;
  const T direct = gru_cho_grads2(sv, j, h_prev, drh, dar);
  dxg[j] = dar;
  dhg[j] = dar;
  return direct;
}

// ---------------------------------------------------------------------------
// Attention: score adjoint of one (query, key) pair.
//   p = exp(s - lse), dp = dO . v, ds = p (dp - Dq), Dq = dO . O.
// ---------------------------------------------------------------------------
template <typename T> NNCC_HD T softmax_score_grad(T p, T dp, T Dq) {
  return p * (dp - Dq);
}

/// Gradient through k^ = k / |k| : dk = (dk^ - k^ (k^ . dk^)) / |k|.
/// `inv_norm` = 1/|k| (0 for a zero vector: gradient 0).
template <typename T>
NNCC_HD T unit_norm_grad(T khat_d, T dkhat_d, T khat_dot_dkhat, T inv_norm) {
  return (dkhat_d - khat_d * khat_dot_dkhat) * inv_norm;
}

// ---------------------------------------------------------------------------
// Losses (mean reduction; g = adjoint of the scalar loss)
// ---------------------------------------------------------------------------

/// d/dx of the BCE-with-logits element (NormMath.h bce_logits_elem):
/// (1-y) + (1 + (pw-1) y) (sigmoid(x) - 1).
template <typename A> NNCC_HD A bce_logits_grad_elem(A x, A y, A pw) {
  const A lw = A(1) + (pw - A(1)) * y;
  return (A(1) - y) + lw * (sigmoid(x) - A(1));
}

} // namespace kernels
} // namespace nncc

#endif // NNCC_KERNELS_BACKWARDMATH_H
