//===- NormMath.h - Layer norm, softmax, positions, losses ------*- C++ -*-===//
//
// Row-level math shared by the CPU kernels (runtime/lib/Kernels/Norm.cpp,
// Loss.cpp, Token.cpp and their backward files) and the CUDA kernels
// (CUDA/Norm.cuh, Loss.cuh, Token.cuh and their backward headers). Reductions accumulate
// in the accumulator type A (double for the CPU twins). Stored elements are
// read through load_acc (Bf16.h: bf16_t widens to float, float and double
// pass through unchanged).
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_NORMMATH_H
#define NNCC_KERNELS_NORMMATH_H

#include "nncc/Kernels/Bf16.h"
#include "nncc/Kernels/Common.h"

namespace nncc {
namespace kernels {

/// Affine layer-norm output for one element given the row statistics
/// (PyTorch: biased variance, eps inside the square root), in the
/// arithmetic type A; gamma and beta are stored elements T (A = acc_t<T>).
template <typename A, typename T>
NNCC_HD A layer_norm_apply(A x, A mean, A rstd, const T *gamma,
                           const T *beta, int64_t j) {
  A v = (x - mean) * rstd;
  if (gamma)
    v *= load_acc(gamma[j]);
  if (beta)
    v += load_acc(beta[j]);
  return v;
}

/// Two-pass statistics of one row of n values (x + residual if given).
template <typename T, typename A>
NNCC_HD void layer_norm_stats(const T *x, const T *res, int64_t n, A eps,
                              A &mean, A &rstd) {
#if defined(__CUDA_ARCH__)
  A s = A(0);
  for (int64_t j = 0; j < n; ++j)
    s += A(x[j]) + (res ? A(res[j]) : A(0));
  mean = s / A(n);
  A v = A(0);
  for (int64_t j = 0; j < n; ++j) {
    A d = A(x[j]) + (res ? A(res[j]) : A(0)) - mean;
    v += d * d;
  }
#else
  // With and without the residual apart, so each loop is branch-free.
  A v;
  if (res) {
    mean = lane_sum<A>(n, [&](int64_t j) { return A(x[j]) + A(res[j]); }) / A(n);
    v = lane_sum<A>(n, [&](int64_t j) {
      const A d = A(x[j]) + A(res[j]) - mean;
      return d * d;
    });
  } else {
    mean = lane_sum<A>(n, [&](int64_t j) { return A(x[j]); }) / A(n);
    v = lane_sum<A>(n, [&](int64_t j) {
      const A d = A(x[j]) - mean;
      return d * d;
    });
  }
#endif
  rstd = A(1) / nsqrt(v / A(n) + eps);
}

/// Sinusoidal position encoding (Vaswani et al.): PE(t, 2i) =
/// sin(t / 10000^(2i/E)), PE(t, 2i+1) = cos(t / 10000^(2i/E)).
template <typename T> NNCC_HD T sinusoidal_pe(int64_t t, int64_t e, int64_t E) {
  int64_t i2 = e & ~int64_t(1);
  double freq = exp(-(double)i2 / (double)E * log(10000.0));
  double a = (double)t * freq;
  return (T)((e & 1) ? cos(a) : sin(a));
}

/// Element of BCE-with-logits, stable form:
/// l = (1-y) x + (1 + (pw-1) y) (log(1 + exp(-|x|)) + max(-x, 0)).
template <typename A> NNCC_HD A bce_logits_elem(A x, A y, A pw) {
  A lw = A(1) + (pw - A(1)) * y;
  A sp = nlog1p(nexp(-nabs(x))) + (x < A(0) ? -x : A(0));
  return (A(1) - y) * x + lw * sp;
}

/// Negative log-likelihood of class `t` for one row of C logits.
template <typename T, typename A>
NNCC_HD A cross_entropy_row(const T *logits, int64_t C, int64_t t) {
  auto z = [&](int64_t c) { return A(load_acc(logits[c])); };
  A mx = z(0);
  for (int64_t c = 1; c < C; ++c)
    mx = z(c) > mx ? z(c) : mx;
  A s = A(0);
  for (int64_t c = 0; c < C; ++c)
    s += nexp(z(c) - mx);
  return mx + nlog(s) - z(t);
}

/// In place, one row of C logits (target t in [0, C)) becomes the row of
/// the cross-entropy's logits gradient, (softmax - onehot(t)) * s; returns
/// the row's negative log-likelihood. The fused loss head's per-row step.
template <typename T, typename A>
NNCC_HD A cross_entropy_grad_row_inplace(T *row, int64_t C, int64_t t, A s) {
  A mx = A(row[0]);
  for (int64_t c = 1; c < C; ++c)
    mx = A(row[c]) > mx ? A(row[c]) : mx;
  const A zt = A(row[t]);
  A sum = A(0);
  for (int64_t c = 0; c < C; ++c) {
    A e = nexp(A(row[c]) - mx);
    row[c] = T(e);
    sum += e;
  }
  for (int64_t c = 0; c < C; ++c)
    row[c] = T((A(row[c]) / sum - (c == t ? A(1) : A(0))) * s);
  return mx + nlog(sum) - zt;
}

} // namespace kernels
} // namespace nncc

#endif // NNCC_KERNELS_NORMMATH_H
