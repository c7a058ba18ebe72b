//===- Common.h - Shared host/device helpers for nncc kernels ---*- C++ -*-===//
//
// Every piece of kernel math lives in NNCC_HD inline functions so the CUDA
// kernels (.cuh) and their CPU twins (runtime/lib/Kernels) run the same code.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_COMMON_H
#define NNCC_KERNELS_COMMON_H

#include "nncc/Kernels/Codes.h"
#include "nncc/Kernels/HostDevice.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

// The recurrent unit functions are called inside the CPU kernels' unit loops
// (one call per hidden unit); GCC's inliner gives up on the larger ones (the
// LSTM's three sigmoids and two tanh), which leaves a call in the loop and
// keeps it scalar. Forcing them inline on the host lets those loops
// vectorise. Device code: NNCC_HD (already __forceinline__).
#if defined(__CUDACC__)
#define NNCC_HD_UNIT NNCC_HD
#else
#define NNCC_HD_UNIT inline __attribute__((always_inline))
#endif

namespace nncc {
namespace kernels {

/// Activation codes of the C ABI (`act` arguments, NNCC_ACT_* of Codes.h).
enum Activation : int {
  ActNone = NNCC_ACT_NONE,
  ActRelu = NNCC_ACT_RELU,
  ActLeakyRelu = NNCC_ACT_LEAKY_RELU, // alpha = negative slope
  ActGeluErf = NNCC_ACT_GELU,         // x * Phi(x), exact (PyTorch approximate='none')
  ActGeluTanh = NNCC_ACT_GELU_TANH,   // PyTorch approximate='tanh'
  ActTanh = NNCC_ACT_TANH,
  ActSigmoid = NNCC_ACT_SIGMOID,
};

#if !defined(__CUDA_ARCH__)
/// e^x in float without a libm call, so that host loops over it vectorise:
/// x = n ln2 + r with |r| <= ln2/2 (ln2 split in two parts for an exact
/// product), e^r by a degree-6 polynomial (relative error below 2e-7), and
/// 2^n built from exponent bits as 2^(n-1) * 2 so n = 128 stays finite.
/// Results below 2^-125 flush to zero, above FLT_MAX are +inf, NaN stays
/// NaN.
inline float nexp_poly(float x) {
  const float hi = 88.7228391f, lo = -86.6f;
  // Both comparisons run unconditionally (no nested ?:), so the compiler
  // turns every choice below into a blend instead of a branch. A NaN is
  // computed as 0 (n must stay in range: converting NaN to int32_t and
  // shifting the result is undefined) and returned at the end.
  const bool over = x > hi, under = x < lo, nan = x != x;
  float xc = over ? hi : x;
  xc = under ? lo : xc;
  xc = nan ? 0.0f : xc;
  // Round to nearest by adding and subtracting 1.5 * 2^23 (|x log2 e| < 2^22):
  // no libm call, so the loop still vectorises without -fno-trapping-math.
  const float shifter = 12582912.0f;
  float n = (xc * 1.44269504088896341f + shifter) - shifter;
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  int32_t bits = ((int32_t)n + 126) << 23;
  float scale;
  memcpy(&scale, &bits, sizeof(scale));
  float y = p * scale * 2.0f;
  y = under ? 0.0f : y;
  y = over ? INFINITY : y;
  y = nan ? x : y;
  return y;
}

/// tanh in float from nexp_poly: (1 - e^-2|x|) / (1 + e^-2|x|), and the odd
/// Taylor series below |x| = 1/8 where 1 - e^-2|x| would cancel.
inline float ntanh_poly(float x) {
  float a = fabsf(x);
  float e = nexp_poly(-2.0f * a);
  float t = (1.0f - e) / (1.0f + e);
  float a2 = a * a;
  float s = a * (1.0f + a2 * (-1.0f / 3.0f + a2 * (2.0f / 15.0f + a2 * (-17.0f / 315.0f))));
  t = a < 0.125f ? s : t;
  return copysignf(t, x);
}

/// erf in float, branch-free: the Maclaurin series to x^21 below |x| = 1
/// (truncation < 2e-9, full relative accuracy near 0), Abramowitz & Stegun
/// 7.1.26 with nexp_poly above (absolute error below 2e-7 overall).
inline float nerf_poly(float x) {
  float a = fabsf(x);
  float a2 = a * a;
  float s = a * (1.128379167f + a2 * (-0.376126389f + a2 * (0.1128379167f + a2 * (-0.02686617065f + a2 * (0.005223977625f + a2 * (-0.0008548327023f + a2 * (0.0001205533298f + a2 * (-1.492565036e-05f + a2 * (1.646211437e-06f + a2 * (-1.636584469e-07f + a2 * 1.480719282e-08f))))))))));
  float t = 1.0f / (1.0f + 0.3275911f * a);
  float q = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
  float l = 1.0f - q * nexp_poly(-a2);
  return copysignf(a < 1.0f ? s : l, x);
}
#endif

#if !defined(__CUDA_ARCH__)
/// Lanes of a host row reduction: one AVX-512 register of A (16 floats,
/// 8 doubles; two AVX2 registers).
template <typename A> constexpr int kReductionLanes = int(64 / sizeof(A));

/// Row reductions in kReductionLanes<A> independent partial results, so
/// that the loop vectorises: one running sum or max is a chain of dependent
/// operations the compiler may not reorder without -ffast-math. The order
/// is fixed, so a result does not depend on the thread count.
/// lane_reduce combines term(j), j < n, with combine(acc, value) from init.
template <typename A, typename Term, typename Combine>
inline A lane_reduce(int64_t n, A init, Term term, Combine combine) {
  constexpr int L = kReductionLanes<A>;
  A lane[L];
  for (int k = 0; k < L; ++k)
    lane[k] = init;
  int64_t j = 0;
  for (; j + L <= n; j += L)
    for (int k = 0; k < L; ++k)
      lane[k] = combine(lane[k], term(j + k));
  A acc = init;
  for (int k = 0; k < L; ++k)
    acc = combine(acc, lane[k]);
  for (; j < n; ++j)
    acc = combine(acc, term(j));
  return acc;
}

/// sum_{j < n} term(j) in partial sums (lane_reduce).
template <typename A, typename Term> inline A lane_sum(int64_t n, Term term) {
  return lane_reduce<A>(n, A(0), term, [](A a, A b) { return a + b; });
}
#endif

// Overloads so templates pick the right precision on host and device. Host
// float exp/tanh/erf are the vectorisable polynomials above; double and
// device code use the math library.
#if defined(__CUDA_ARCH__)
NNCC_HD float nexp(float x) { return expf(x); }
#else
NNCC_HD float nexp(float x) { return nexp_poly(x); }
#endif
NNCC_HD double nexp(double x) { return exp(x); }
NNCC_HD float nlog(float x) { return logf(x); }
NNCC_HD double nlog(double x) { return log(x); }
NNCC_HD float nlog1p(float x) { return log1pf(x); }
NNCC_HD double nlog1p(double x) { return log1p(x); }
#if defined(__CUDA_ARCH__)
NNCC_HD float ntanh(float x) { return tanhf(x); }
#else
NNCC_HD float ntanh(float x) { return ntanh_poly(x); }
#endif
NNCC_HD double ntanh(double x) { return tanh(x); }
#if defined(__CUDA_ARCH__)
NNCC_HD float nerf(float x) { return erff(x); }
#else
NNCC_HD float nerf(float x) { return nerf_poly(x); }
#endif
NNCC_HD double nerf(double x) { return erf(x); }
NNCC_HD float nsqrt(float x) { return sqrtf(x); }
NNCC_HD double nsqrt(double x) { return sqrt(x); }

template <typename T> NNCC_HD T nmax(T a, T b) { return a > b ? a : b; }
template <typename T> NNCC_HD T nabs(T a) { return a < T(0) ? -a : a; }

/// Numerically stable logistic sigmoid.
template <typename T> NNCC_HD T sigmoid(T x);
#if !defined(__CUDA_ARCH__)
/// Host float: branch-free (vectorises); nexp saturates to 0 / +inf, so both
/// tails are exact limits.
template <> inline float sigmoid<float>(float x) { return 1.0f / (1.0f + nexp(-x)); }
#endif
template <typename T> NNCC_HD T sigmoid(T x) {
  if (x >= T(0)) {
    T e = nexp(-x);
    return T(1) / (T(1) + e);
  }
  T e = nexp(x);
  return e / (T(1) + e);
}

template <typename T> NNCC_HD T gelu_erf(T x) {
  return T(0.5) * x * (T(1) + nerf(x * T(0.70710678118654752440)));
}

template <typename T> NNCC_HD T gelu_tanh(T x) {
  const T k = T(0.79788456080286535588); // sqrt(2/pi)
  return T(0.5) * x * (T(1) + ntanh(k * (x + T(0.044715) * x * x * x)));
}

/// Apply activation `act` (see Activation) with parameter `alpha`.
template <typename T> NNCC_HD T activate(int act, T x, T alpha) {
  switch (act) {
  case ActRelu:
    return x > T(0) ? x : T(0);
  case ActLeakyRelu:
    return x >= T(0) ? x : alpha * x;
  case ActGeluErf:
    return gelu_erf(x);
  case ActGeluTanh:
    return gelu_tanh(x);
  case ActTanh:
    return ntanh(x);
  case ActSigmoid:
    return sigmoid(x);
  default:
    return x;
  }
}

/// Fused GEMM epilogue for one element: act(acc + bias) + residual.
template <typename T>
NNCC_HD T linear_epilogue(T acc, const T *bias, int col, int act, T alpha,
                          const T *residual) {
  T v = acc + (bias ? bias[col] : T(0));
  v = activate(act, v, alpha);
  if (residual)
    v += *residual;
  return v;
}

/// Large negative used instead of -inf where arithmetic must stay finite.
template <typename T> NNCC_HD T neg_big() { return T(-1e30); }

} // namespace kernels
} // namespace nncc

#endif // NNCC_KERNELS_COMMON_H
