//===- cublas_v2.h - host emulation of the cuBLAS subset --------*- C++ -*-===//
//
// Test-only: a plain column-major reference GEMM (accumulating in long
// double) behind cuBLAS's argument checks (m, n, k >= 0, batch >= 0,
// lda >= max(1, rows of op(A) as stored), ldb likewise, ldc >= max(1, m)).
// beta == 0 does not read C (cuBLAS's rule: C may hold NaN then). Alpha and
// beta are host pointers (CUBLAS_POINTER_MODE_HOST only).
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_TEST_EMU_CUBLAS_V2_H
#define NNCC_TEST_EMU_CUBLAS_V2_H

#include "cuda_runtime.h"

typedef struct emu_cublas_context *cublasHandle_t;
enum cublasStatus_t {
  CUBLAS_STATUS_SUCCESS = 0,
  CUBLAS_STATUS_NOT_INITIALIZED = 1,
  CUBLAS_STATUS_ALLOC_FAILED = 3,
  CUBLAS_STATUS_INVALID_VALUE = 7,
  CUBLAS_STATUS_ARCH_MISMATCH = 8,
  CUBLAS_STATUS_MAPPING_ERROR = 11,
  CUBLAS_STATUS_EXECUTION_FAILED = 13,
  CUBLAS_STATUS_INTERNAL_ERROR = 14,
  CUBLAS_STATUS_NOT_SUPPORTED = 15,
};
enum cublasOperation_t { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 };
enum cublasPointerMode_t { CUBLAS_POINTER_MODE_HOST = 0, CUBLAS_POINTER_MODE_DEVICE = 1 };
enum cublasMath_t { CUBLAS_DEFAULT_MATH = 0, CUBLAS_TF32_TENSOR_OP_MATH = 3 };

namespace emu {
inline long gemms = 0;
inline int one_if_zero(int v) { return v > 1 ? v : 1; }

template <class T>
cublasStatus_t gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                    const T *alpha, const T *A, int lda, long long sA, const T *B, int ldb,
                    long long sB, const T *beta, T *C, int ldc, long long sC, int batch) {
  ++gemms;
  const bool at = ta != CUBLAS_OP_N, bt = tb != CUBLAS_OP_N;
  if (m < 0 || n < 0 || k < 0 || batch < 0 || lda < one_if_zero(at ? k : m) ||
      ldb < one_if_zero(bt ? n : k) || ldc < one_if_zero(m) || !alpha || !beta) {
    fprintf(stderr, "EMU cuBLAS: invalid gemm arguments m %d n %d k %d lda %d ldb %d ldc %d (%c%c)\n",
            m, n, k, lda, ldb, ldc, at ? 'T' : 'N', bt ? 'T' : 'N');
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  for (int b = 0; b < batch; ++b) {
    const T *Ab = A + b * sA, *Bb = B + b * sB;
    T *Cb = C + b * sC;
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) {
        long double s = 0;
        for (int p = 0; p < k; ++p) {
          const T a = at ? Ab[p + (long long)i * lda] : Ab[i + (long long)p * lda];
          const T v = bt ? Bb[j + (long long)p * ldb] : Bb[p + (long long)j * ldb];
          s += (long double)a * v;
        }
        T &c = Cb[i + (long long)j * ldc];
        c = *beta == T(0) ? T(*alpha * (T)s) : T(*alpha * (T)s + *beta * c);
      }
  }
  return CUBLAS_STATUS_SUCCESS;
}
} // namespace emu

inline cublasStatus_t cublasCreate(cublasHandle_t *h) {
  *h = (cublasHandle_t)0x1;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasDestroy(cublasHandle_t) { return CUBLAS_STATUS_SUCCESS; }
inline cublasStatus_t cublasSetStream(cublasHandle_t, cudaStream_t) { return CUBLAS_STATUS_SUCCESS; }
inline cublasStatus_t cublasSetPointerMode(cublasHandle_t, cublasPointerMode_t m) {
  return m == CUBLAS_POINTER_MODE_HOST ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_SUPPORTED;
}
inline cublasStatus_t cublasSetMathMode(cublasHandle_t, cublasMath_t) { return CUBLAS_STATUS_SUCCESS; }
inline const char *cublasGetStatusString(cublasStatus_t s) {
  return s == CUBLAS_STATUS_SUCCESS ? "CUBLAS_STATUS_SUCCESS" : "cuBLAS error (emulation)";
}

#define EMU_GEMMS(P, T)                                                                    \
  inline cublasStatus_t cublas##P##gemm(cublasHandle_t, cublasOperation_t ta,               \
                                        cublasOperation_t tb, int m, int n, int k,          \
                                        const T *al, const T *A, int lda, const T *B,       \
                                        int ldb, const T *be, T *C, int ldc) {              \
    return emu::gemm<T>(ta, tb, m, n, k, al, A, lda, 0, B, ldb, 0, be, C, ldc, 0, 1);      \
  }                                                                                         \
  inline cublasStatus_t cublas##P##gemmStridedBatched(                                     \
      cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,      \
      const T *al, const T *A, int lda, long long sA, const T *B, int ldb, long long sB,    \
      const T *be, T *C, int ldc, long long sC, int batch) {                                \
    return emu::gemm<T>(ta, tb, m, n, k, al, A, lda, sA, B, ldb, sB, be, C, ldc, sC,       \
                        batch);                                                             \
  }
EMU_GEMMS(S, float)
EMU_GEMMS(D, double)
#undef EMU_GEMMS

#endif
