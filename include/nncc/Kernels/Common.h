//===- Common.h - Shared host/device helpers for nncc kernels ---*- C++ -*-===//
//
// Every piece of kernel math lives in NNCC_HD inline functions so the CUDA
// kernels (.cuh) and their CPU twins (lib/Kernels) run the same code.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_COMMON_H
#define NNCC_KERNELS_COMMON_H

#include <math.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define NNCC_HD __host__ __device__ __forceinline__
#else
#define NNCC_HD inline
#endif

namespace nncc {
namespace kernels {

/// Activation codes shared by the C ABI (`act` arguments) and the math.
enum Activation : int {
  ActNone = 0,
  ActRelu = 1,
  ActLeakyRelu = 2, // alpha = negative slope
  ActGeluErf = 3,   // x * Phi(x), exact (PyTorch approximate='none')
  ActGeluTanh = 4,  // PyTorch approximate='tanh'
  ActTanh = 5,
  ActSigmoid = 6,
};

// Overloads so templates pick the right precision on host and device.
NNCC_HD float nexp(float x) { return expf(x); }
NNCC_HD double nexp(double x) { return exp(x); }
NNCC_HD float nlog(float x) { return logf(x); }
NNCC_HD double nlog(double x) { return log(x); }
NNCC_HD float nlog1p(float x) { return log1pf(x); }
NNCC_HD double nlog1p(double x) { return log1p(x); }
NNCC_HD float ntanh(float x) { return tanhf(x); }
NNCC_HD double ntanh(double x) { return tanh(x); }
NNCC_HD float nerf(float x) { return erff(x); }
NNCC_HD double nerf(double x) { return erf(x); }
NNCC_HD float nsqrt(float x) { return sqrtf(x); }
NNCC_HD double nsqrt(double x) { return sqrt(x); }
NNCC_HD float nsin(float x) { return sinf(x); }
NNCC_HD double nsin(double x) { return sin(x); }
NNCC_HD float ncos(float x) { return cosf(x); }
NNCC_HD double ncos(double x) { return cos(x); }
NNCC_HD float npow(float x, float y) { return powf(x, y); }
NNCC_HD double npow(double x, double y) { return pow(x, y); }

template <typename T> NNCC_HD T nmax(T a, T b) { return a > b ? a : b; }
template <typename T> NNCC_HD T nmin(T a, T b) { return a < b ? a : b; }
template <typename T> NNCC_HD T nabs(T a) { return a < T(0) ? -a : a; }

/// Numerically stable logistic sigmoid.
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
