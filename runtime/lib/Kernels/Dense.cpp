//===- Dense.cpp - GEMM wrapper, linear with fused epilogue ---------------===//
#include "Internal.h"

using namespace nncc::kernels;

namespace {

template <typename T>
int gemmImpl(int ta, int tb, int64_t M, int64_t N, int64_t K, T alpha,
             const T *A, int64_t lda, const T *B, int64_t ldb, T beta, T *C,
             int64_t ldc) {
  if (M < 0 || N < 0 || K < 0 || (M * N > 0 && !C) ||
      (M * N * K > 0 && (!A || !B)))
    return NNCC_K_EINVAL;
  gemm(ta != 0, tb != 0, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  return NNCC_K_OK;
}

template <typename T>
int linearImpl(int64_t M, int64_t N, int64_t K, const T *x, const T *w,
               const T *bias, const T *residual, int act, double alpha, T *y) {
  if (M < 0 || N < 0 || K < 0 || !y || (K > 0 && (!x || !w)) || act < 0 ||
      act > ActSigmoid)
    return NNCC_K_EINVAL;
  if (K == 0) {
    for (int64_t i = 0; i < M * N; ++i)
      y[i] = T(0);
  } else {
    gemm(false, true, M, N, K, T(1), x, K, w, K, T(0), y, N);
  }
  // Epilogue in one pass over y: bias, activation, residual.
  if (!bias && act == ActNone && !residual)
    return NNCC_K_OK;
  T a = T(alpha);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < M; ++i) {
    T *row = y + i * N;
    const T *res = residual ? residual + i * N : nullptr;
    for (int64_t j = 0; j < N; ++j)
      row[j] = linear_epilogue(row[j], bias, (int)j, act, a,
                               res ? res + j : nullptr);
  }
  return NNCC_K_OK;
}

template <typename T>
int activationImpl(int64_t n, const T *x, int act, double alpha, T *y) {
  if (n < 0 || (n > 0 && (!x || !y)) || act < 0 || act > ActSigmoid)
    return NNCC_K_EINVAL;
  T a = T(alpha);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i)
    y[i] = activate(act, x[i], a);
  return NNCC_K_OK;
}

template <typename T> int addImpl(int64_t n, const T *x, const T *r, T *y) {
  if (n < 0 || (n > 0 && (!x || !r || !y)))
    return NNCC_K_EINVAL;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i)
    y[i] = x[i] + r[i];
  return NNCC_K_OK;
}

} // namespace

#define NNCC_DEFINE_DENSE(S, T)                                                \
  extern "C" int nncc_gemm_##S(int ta, int tb, int64_t M, int64_t N,          \
                               int64_t K, T alpha, const T *A, int64_t lda,    \
                               const T *B, int64_t ldb, T beta, T *C,          \
                               int64_t ldc) {                                  \
    return gemmImpl<T>(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);  \
  }                                                                            \
  extern "C" int nncc_linear_##S(int64_t M, int64_t N, int64_t K, const T *x,  \
                                 const T *w, const T *b, const T *r, int act,  \
                                 double alpha, T *y) {                         \
    return linearImpl<T>(M, N, K, x, w, b, r, act, alpha, y);                  \
  }                                                                            \
  extern "C" int nncc_activation_##S(int64_t n, const T *x, int act,           \
                                     double alpha, T *y) {                     \
    return activationImpl<T>(n, x, act, alpha, y);                             \
  }                                                                            \
  extern "C" int nncc_add_##S(int64_t n, const T *x, const T *r, T *y) {       \
    return addImpl<T>(n, x, r, y);                                             \
  }

NNCC_DEFINE_DENSE(f32, float)
NNCC_DEFINE_DENSE(f64, double)
