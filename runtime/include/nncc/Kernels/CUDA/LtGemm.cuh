//===- LtGemm.cuh - nnk.gemm with its epilogue fused, on cuBLASLt -*- CUDA -*-===//
//
// A generated model whose nnk.gemm sites fuse their epilogue (bias, ReLU,
// GELU, a residual as C) runs each as one cublasLtMatmul. The model's state
// holds one LtState: the handle, one workspace buffer and one LtPlan per
// site, rebuilt when the bound dims or the pointers' alignment change.
// Included only by the models that have such a site (CudaEmitter).
//
// y[rows, cols] = act(x[rows, K] W[cols, K]^T + bias) + residual is, column
// major, y^T [cols x rows] = epilogue(W^T x^T (+ C)): W as stored is
// K x cols (transposed), x is K x rows. fp32 and bf16 (fp32 accumulation
// and scale); fp64 takes cuBLAS and the epilogue kernel (lt_gemm_choice).
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_CUDA_LTGEMM_CUH
#define NNCC_KERNELS_CUDA_LTGEMM_CUH

#include "nncc/Kernels/Bf16.h"

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <initializer_list>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <type_traits>

namespace nncc {
namespace kernels {
namespace cuda {

constexpr uint64_t kLtWorkspaceBytes = (uint64_t)4 << 20;

/// One fused GEMM site's descriptors and algorithm.
struct LtPlan {
  int64_t rows = -1, cols = -1, k = -1; // the nnk.gemm's M, N, K it was built for
  uint32_t align = 0;                   // the alignment (bytes) its algorithm assumes
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t w = nullptr, x = nullptr, y = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  cublasLtMatmulAlgo_t algo;
};

/// A model's cuBLASLt state; `plans` points at its array of one plan per
/// fused site (lt_destroy releases them).
struct LtState {
  bool tf32 = false; // NNCC_CUDA_ALLOW_TF32: the fp32 compute type
  cublasLtHandle_t handle = nullptr;
  void *workspace = nullptr; // kLtWorkspaceBytes, at the first fused GEMM
  LtPlan *plans = nullptr;
  int numPlans = 0;
  const char *failed = ""; // the cuBLASLt step that failed last
};

/// 1: fused GEMMs on cuBLASLt, 0: cuBLAS + the epilogue kernel, -1: an
/// invalid NNCC_CUDA_GEMM (neither lt nor cublas). fp64 is always 0.
template <typename T> int lt_gemm_choice() {
  const char *v = getenv("NNCC_CUDA_GEMM");
  const int lt = !v || !*v || strcmp(v, "lt") == 0 ? 1 : strcmp(v, "cublas") == 0 ? 0 : -1;
  return std::is_same<T, double>::value ? (lt < 0 ? -1 : 0) : lt;
}

inline void lt_release(LtPlan *p) {
  if (p->desc)
    (void)cublasLtMatmulDescDestroy(p->desc);
  for (cublasLtMatrixLayout_t l : {p->w, p->x, p->y})
    if (l)
      (void)cublasLtMatrixLayoutDestroy(l);
  if (p->pref)
    (void)cublasLtMatmulPreferenceDestroy(p->pref);
  *p = LtPlan();
}

/// The handle; `plans` (numPlans of them) become the state's.
inline cublasStatus_t lt_create(LtState *s, LtPlan *plans, int numPlans, bool tf32) {
  s->tf32 = tf32;
  s->plans = plans;
  s->numPlans = numPlans;
  const cublasStatus_t cs = cublasLtCreate(&s->handle);
  if (cs != CUBLAS_STATUS_SUCCESS)
    s->handle = nullptr;
  return cs;
}

/// Releases the plans, the workspace and the handle (teardown cannot
/// report; errors here leave nothing behind to fix).
inline void lt_destroy(LtState *s) {
  for (int i = 0; i < s->numPlans; ++i)
    lt_release(&s->plans[i]);
  if (s->workspace)
    (void)cudaFree(s->workspace);
  if (s->handle)
    (void)cublasLtDestroy(s->handle);
  s->workspace = nullptr;
  s->handle = nullptr;
}

/// The largest power of two up to 256 that divides every non-null address.
inline uint32_t lt_align(std::initializer_list<const void *> ptrs) {
  uintptr_t bits = 256;
  for (const void *q : ptrs)
    bits |= (uintptr_t)q;
  return (uint32_t)(bits & (~bits + 1));
}

template <typename T> constexpr cudaDataType_t lt_data_type() {
  return std::is_same<T, double>::value ? CUDA_R_64F
         : std::is_same<T, bf16_t>::value ? CUDA_R_16BF
                                          : CUDA_R_32F;
}

// The first failing step returns its status and names itself in s->failed.
#define NNCC_LT_TRY(call)                                                                  \
  do {                                                                                     \
    cublasStatus_t s_ = (call);                                                            \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                     \
      s->failed = #call;                                                                   \
      return s_;                                                                           \
    }                                                                                      \
  } while (0)
#define NNCC_LT_SET(setter, object, attribute, value)                                      \
  NNCC_LT_TRY(setter(object, attribute, &(value), sizeof(value)))

/// A plan's descriptors, layouts and the heuristic's algorithm.
template <typename T>
cublasStatus_t lt_build(LtState *s, LtPlan *p, cublasLtEpilogue_t epilogue, int64_t rows,
                        int64_t cols, int64_t k, const T *bias, uint32_t align) {
  const cublasOperation_t transW = CUBLAS_OP_T, transX = CUBLAS_OP_N;
  const cublasComputeType_t compute = !std::is_same<T, bf16_t>::value && s->tf32
                                          ? CUBLAS_COMPUTE_32F_FAST_TF32
                                          : CUBLAS_COMPUTE_32F;
  const cudaDataType_t type = lt_data_type<T>();
  NNCC_LT_TRY(cublasLtMatmulDescCreate(&p->desc, compute, CUDA_R_32F));
  NNCC_LT_SET(cublasLtMatmulDescSetAttribute, p->desc, CUBLASLT_MATMUL_DESC_TRANSA, transW);
  NNCC_LT_SET(cublasLtMatmulDescSetAttribute, p->desc, CUBLASLT_MATMUL_DESC_TRANSB, transX);
  NNCC_LT_SET(cublasLtMatmulDescSetAttribute, p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue);
  // The heuristic reads the bias pointer's alignment.
  if (bias)
    NNCC_LT_SET(cublasLtMatmulDescSetAttribute, p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
  NNCC_LT_TRY(cublasLtMatrixLayoutCreate(&p->w, type, (uint64_t)k, (uint64_t)cols, k));
  NNCC_LT_TRY(cublasLtMatrixLayoutCreate(&p->x, type, (uint64_t)k, (uint64_t)rows, k));
  NNCC_LT_TRY(cublasLtMatrixLayoutCreate(&p->y, type, (uint64_t)cols, (uint64_t)rows, cols));
  if (!s->workspace && cudaMalloc(&s->workspace, kLtWorkspaceBytes) != cudaSuccess) {
    s->workspace = nullptr;
    s->failed = "cudaMalloc of the cuBLASLt workspace";
    return CUBLAS_STATUS_ALLOC_FAILED;
  }
  const uint64_t workspace = kLtWorkspaceBytes;
  NNCC_LT_TRY(cublasLtMatmulPreferenceCreate(&p->pref));
  NNCC_LT_SET(cublasLtMatmulPreferenceSetAttribute, p->pref,
              CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, workspace);
  for (cublasLtMatmulPreferenceAttributes_t a :
       {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    NNCC_LT_SET(cublasLtMatmulPreferenceSetAttribute, p->pref, a, align);
  cublasLtMatmulHeuristicResult_t best = {};
  int found = 0;
  NNCC_LT_TRY(cublasLtMatmulAlgoGetHeuristic(s->handle, p->desc, p->w, p->x, p->y, p->y, p->pref,
                                             1, &best, &found));
  if (found < 1) {
    s->failed = "cublasLtMatmulAlgoGetHeuristic found no algorithm";
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  p->algo = best.algo;
  p->rows = rows;
  p->cols = cols;
  p->k = k;
  p->align = align;
  return CUBLAS_STATUS_SUCCESS;
}

/// nnk.gemm at fused site `plan` as one cublasLtMatmul with `epilogue`
/// (ltEpilogue of LinearLaunch.cpp); the residual, when given, is C with
/// beta = 1. The plan is rebuilt when rows, cols, k or the alignment
/// changed since its last call.
template <typename T>
cublasStatus_t lt_gemm(LtState *s, int plan, cublasLtEpilogue_t epilogue, int64_t rows,
                       int64_t cols, int64_t k, const T *w, const T *x, const T *bias,
                       const T *residual, T *y, cudaStream_t stream) {
  if (rows == 0 || cols == 0)
    return CUBLAS_STATUS_SUCCESS;
  if (plan < 0 || plan >= s->numPlans) {
    s->failed = "lt_gemm: no such plan";
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  LtPlan *p = &s->plans[plan];
  const uint32_t align = lt_align({w, x, bias, residual, y});
  if (p->rows != rows || p->cols != cols || p->k != k || p->align != align) {
    lt_release(p);
    const cublasStatus_t st = lt_build<T>(s, p, epilogue, rows, cols, k, bias, align);
    if (st != CUBLAS_STATUS_SUCCESS) {
      lt_release(p);
      return st;
    }
  } else if (bias) {
    NNCC_LT_SET(cublasLtMatmulDescSetAttribute, p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
  }
  const acc_t<T> one = 1, beta = residual ? 1 : 0;
  NNCC_LT_TRY(cublasLtMatmul(s->handle, p->desc, &one, w, p->w, x, p->x, &beta,
                             residual ? residual : y, p->y, y, p->y, &p->algo, s->workspace,
                             kLtWorkspaceBytes, stream));
  return CUBLAS_STATUS_SUCCESS;
}

#undef NNCC_LT_SET
#undef NNCC_LT_TRY

} // namespace cuda
} // namespace kernels
} // namespace nncc

#endif // NNCC_KERNELS_CUDA_LTGEMM_CUH
