//===- Blas.cuh - cuBLAS from the kernels' launchers ------------*- CUDA -*-===//
//
// The CPU kernels' row-major gemm() on cuBLAS, for launchers that run GEMMs
// of their own (recurrent training, the fused loss head). The handle is in
// CUBLAS_POINTER_MODE_HOST (its default; the generated code's own GEMMs
// assume it too). A failing cuBLAS status is reported as a cudaError_t
// (cublas_error), so launchers keep returning cudaError_t only.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_CUDA_BLAS_CUH
#define NNCC_KERNELS_CUDA_BLAS_CUH

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <limits.h>
#include <stdint.h>

#include "nncc/Kernels/Bf16.h"

namespace nncc {
namespace kernels {
namespace cuda {

/// ALLOC_FAILED -> cudaErrorMemoryAllocation, INVALID_VALUE ->
/// cudaErrorInvalidValue, NOT_SUPPORTED / ARCH_MISMATCH ->
/// cudaErrorNotSupported, NOT_INITIALIZED -> cudaErrorInitializationError,
/// EXECUTION_FAILED -> cudaErrorLaunchFailure, others -> cudaErrorUnknown.
inline cudaError_t cublas_error(cublasStatus_t s) {
  switch (s) {
  case CUBLAS_STATUS_SUCCESS:
    return cudaSuccess;
  case CUBLAS_STATUS_ALLOC_FAILED:
    return cudaErrorMemoryAllocation;
  case CUBLAS_STATUS_INVALID_VALUE:
    return cudaErrorInvalidValue;
  case CUBLAS_STATUS_NOT_SUPPORTED:
  case CUBLAS_STATUS_ARCH_MISMATCH:
    return cudaErrorNotSupported;
  case CUBLAS_STATUS_NOT_INITIALIZED:
    return cudaErrorInitializationError;
  case CUBLAS_STATUS_EXECUTION_FAILED:
    return cudaErrorLaunchFailure;
  default:
    return cudaErrorUnknown;
  }
}

inline cublasStatus_t cublas_gemm(cublasHandle_t h, cublasOperation_t a, cublasOperation_t b,
                                  int m, int n, int k, const float *alpha, const float *A,
                                  int lda, const float *B, int ldb, const float *beta, float *C,
                                  int ldc) {
  return cublasSgemm(h, a, b, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}
inline cublasStatus_t cublas_gemm(cublasHandle_t h, cublasOperation_t a, cublasOperation_t b,
                                  int m, int n, int k, const double *alpha, const double *A,
                                  int lda, const double *B, int ldb, const double *beta,
                                  double *C, int ldc) {
  return cublasDgemm(h, a, b, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}
/// bf16 operands, fp32 accumulation; C in bf16 (rounded once) or in fp32.
inline cublasStatus_t cublas_gemm(cublasHandle_t h, cublasOperation_t a, cublasOperation_t b,
                                  int m, int n, int k, const float *alpha, const bf16_t *A,
                                  int lda, const bf16_t *B, int ldb, const float *beta,
                                  bf16_t *C, int ldc) {
  return cublasGemmEx(h, a, b, m, n, k, alpha, A, CUDA_R_16BF, lda, B, CUDA_R_16BF, ldb, beta, C,
                      CUDA_R_16BF, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}
inline cublasStatus_t cublas_gemm(cublasHandle_t h, cublasOperation_t a, cublasOperation_t b,
                                  int m, int n, int k, const float *alpha, const bf16_t *A,
                                  int lda, const bf16_t *B, int ldb, const float *beta, float *C,
                                  int ldc) {
  return cublasGemmEx(h, a, b, m, n, k, alpha, A, CUDA_R_16BF, lda, B, CUDA_R_16BF, ldb, beta, C,
                      CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

/// Row-major C[M, N] = alpha op(A) op(B) + beta C, the CPU kernels' gemm():
/// cuBLAS computes the column-major C^T = op(B)^T op(A)^T. Empty products
/// with beta = 1 are no-ops (every such use accumulates). bf16 A and B
/// accumulate in fp32 into a bf16 or an fp32 C.
template <typename T, typename Out = T>
inline cudaError_t gemm_rowmajor(cublasHandle_t blas, bool ta, bool tb, int64_t M, int64_t N,
                                 int64_t K, acc_t<T> alpha, const T *A, int64_t lda, const T *B,
                                 int64_t ldb, acc_t<T> beta, Out *C, int64_t ldc) {
  if (M == 0 || N == 0 || (K == 0 && beta == acc_t<T>(1)))
    return cudaSuccess;
  if (M > INT_MAX || N > INT_MAX || K > INT_MAX || lda > INT_MAX || ldb > INT_MAX ||
      ldc > INT_MAX)
    return cudaErrorInvalidValue;
  return cublas_error(cublas_gemm(blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                                  ta ? CUBLAS_OP_T : CUBLAS_OP_N, (int)N, (int)M, (int)K,
                                  &alpha, B, (int)ldb, A, (int)lda, &beta, C, (int)ldc));
}

} // namespace cuda
} // namespace kernels
} // namespace nncc

#endif
