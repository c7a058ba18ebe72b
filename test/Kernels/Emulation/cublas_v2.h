//===- cublas_v2.h - host emulation of the cuBLAS subset --------*- C++ -*-===//
//
// Test-only: a plain column-major reference GEMM (operands widened to
// double, each dot product accumulated in double) behind cuBLAS's argument checks (m, n, k >= 0, batch >= 0,
// lda >= max(1, rows of op(A) as stored), ldb likewise, ldc >= max(1, m)).
// beta == 0 does not read C (cuBLAS's rule: C may hold NaN then). Alpha and
// beta are host pointers (CUBLAS_POINTER_MODE_HOST only). cublasGemmEx and
// its strided-batched form serve bf16 A, B, C with CUBLAS_COMPUTE_32F and
// float alpha / beta (the sum rounded to bf16 once, as cuBLAS stores it);
// cublasGemmEx also an fp32 C with bf16 A and B. Any other type
// combination is refused.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_TEST_EMU_CUBLAS_V2_H
#define NNCC_TEST_EMU_CUBLAS_V2_H

#include "cuda_runtime.h"
#include "nncc/Kernels/Bf16.h"

#include <cstdint>
#include <type_traits>
#include <vector>

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
// library_types.h / cublas_api.h values.
enum cudaDataType_t { CUDA_R_32F = 0, CUDA_R_64F = 1, CUDA_R_16BF = 14 };
typedef cudaDataType_t cudaDataType;
enum cublasComputeType_t { CUBLAS_COMPUTE_32F = 68, CUBLAS_COMPUTE_32F_FAST_TF32 = 77 };
enum cublasGemmAlgo_t { CUBLAS_GEMM_DEFAULT = -1 };

namespace emu {
inline long gemms = 0;
inline int one_if_zero(int v) { return v > 1 ? v : 1; }

/// Element value as the GEMM reads it, and the store (bf16: rounded).
template <class T> double gemm_load(T x) { return (double)nncc::kernels::load_acc(x); }
template <class T, class S> T gemm_store(S v) {
  if constexpr (std::is_same_v<T, nncc::kernels::bf16_t>)
    return nncc::kernels::bf16_from_float((float)v);
  else
    return (T)v;
}

/// The rows of op(X) (rows x k, X column-major with leading dimension ld,
/// transposed when `t`) widened to double, each row contiguous.
template <class T>
void pack_rows(std::vector<double> &out, const T *X, bool t, int64_t rows, int64_t k,
               int64_t ld) {
  out.resize(rows * k);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t p = 0; p < k; ++p)
      out[r * k + p] = gemm_load(t ? X[p + r * ld] : X[r + p * ld]);
}

/// sum x[p] y[p] over p < k in double (four partial sums).
inline double dot(const double *x, const double *y, int64_t k) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t p = 0;
  for (; p + 4 <= k; p += 4) {
    s0 += x[p] * y[p];
    s1 += x[p + 1] * y[p + 1];
    s2 += x[p + 2] * y[p + 2];
    s3 += x[p + 3] * y[p + 3];
  }
  for (; p < k; ++p)
    s0 += x[p] * y[p];
  return (s0 + s1) + (s2 + s3);
}

/// T: A's and B's element type; S: alpha's and beta's (float for bf16); O:
/// C's (T, or float for bf16 operands).
template <class T, class S = T, class O = T>
cublasStatus_t gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                    const S *alpha, const T *A, int lda, long long sA, const T *B, int ldb,
                    long long sB, const S *beta, O *C, int ldc, long long sC, int batch) {
  ++gemms;
  const bool at = ta != CUBLAS_OP_N, bt = tb != CUBLAS_OP_N;
  if (m < 0 || n < 0 || k < 0 || batch < 0 || lda < one_if_zero(at ? k : m) ||
      ldb < one_if_zero(bt ? n : k) || ldc < one_if_zero(m) || !alpha || !beta) {
    fprintf(stderr, "EMU cuBLAS: invalid gemm arguments m %d n %d k %d lda %d ldb %d ldc %d (%c%c)\n",
            m, n, k, lda, ldb, ldc, at ? 'T' : 'N', bt ? 'T' : 'N');
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  std::vector<double> rowsA, colsB;
  for (int b = 0; b < batch; ++b) {
    pack_rows(rowsA, A + b * sA, at, m, k, lda);
    pack_rows(colsB, B + b * sB, !bt, n, k, ldb); // the columns of op(B)
    O *Cb = C + b * sC;
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) {
        const double s = dot(&rowsA[(int64_t)i * k], &colsB[(int64_t)j * k], k);
        O &c = Cb[i + (long long)j * ldc];
        c = *beta == S(0) ? gemm_store<O>(*alpha * (S)s)
                          : gemm_store<O>(*alpha * (S)s + *beta * (S)gemm_load(c));
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

namespace emu {
inline bool gemm_ex_bf16(cudaDataType_t a, cudaDataType_t b, cudaDataType_t c,
                         cublasComputeType_t compute) {
  if (a == CUDA_R_16BF && b == CUDA_R_16BF && (c == CUDA_R_16BF || c == CUDA_R_32F) &&
      compute == CUBLAS_COMPUTE_32F)
    return true;
  fprintf(stderr, "EMU cuBLAS: cublasGemmEx types outside the emulated bf16 subset\n");
  return false;
}
} // namespace emu
inline cublasStatus_t cublasGemmEx(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb,
                                   int m, int n, int k, const void *al, const void *A,
                                   cudaDataType_t at, int lda, const void *B, cudaDataType_t bt,
                                   int ldb, const void *be, void *C, cudaDataType_t ct, int ldc,
                                   cublasComputeType_t compute, cublasGemmAlgo_t) {
  using nncc::kernels::bf16_t;
  if (!emu::gemm_ex_bf16(at, bt, ct, compute))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  if (ct == CUDA_R_32F)
    return emu::gemm<bf16_t, float, float>(ta, tb, m, n, k, (const float *)al,
                                           (const bf16_t *)A, lda, 0, (const bf16_t *)B, ldb, 0,
                                           (const float *)be, (float *)C, ldc, 0, 1);
  return emu::gemm<bf16_t, float>(ta, tb, m, n, k, (const float *)al, (const bf16_t *)A, lda, 0,
                                  (const bf16_t *)B, ldb, 0, (const float *)be, (bf16_t *)C, ldc,
                                  0, 1);
}
inline cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
    const void *al, const void *A, cudaDataType_t at, int lda, long long sA, const void *B,
    cudaDataType_t bt, int ldb, long long sB, const void *be, void *C, cudaDataType_t ct, int ldc,
    long long sC, int batch, cublasComputeType_t compute, cublasGemmAlgo_t) {
  using nncc::kernels::bf16_t;
  if (!emu::gemm_ex_bf16(at, bt, ct, compute))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  return emu::gemm<bf16_t, float>(ta, tb, m, n, k, (const float *)al, (const bf16_t *)A, lda, sA,
                                  (const bf16_t *)B, ldb, sB, (const float *)be, (bf16_t *)C, ldc,
                                  sC, batch);
}

#endif
