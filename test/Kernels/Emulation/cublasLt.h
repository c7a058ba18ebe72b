//===- cublasLt.h - host emulation of the cuBLASLt subset -------*- C++ -*-===//
//
// Test-only: the cuBLASLt calls the generated CUDA makes for a fused
// nnk.gemm (lt_gemm of LtGemm.cuh), nothing more; any other attribute, data
// type, compute type or epilogue is refused, so the emulation fails where
// the generated code strays from the subset. cublasLtMatmul computes
// D = epilogue(alpha op(A) op(B) + beta C) column-major as cuBLASLt
// defines it: the bias (one per row of D) is added to that sum and the
// activation applied after (RELU max(x, 0); GELU the tanh approximation
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))). beta == 0 does not
// read C. The heuristic returns one algorithm that remembers the
// preference's minimum alignments; the matmul refuses pointers aligned
// less. Calls are counted (emu::lt_matmuls, emu_model.h reports them).
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_TEST_EMU_CUBLASLT_H
#define NNCC_TEST_EMU_CUBLASLT_H

#include "cublas_v2.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

enum cublasLtEpilogue_t {
  CUBLASLT_EPILOGUE_DEFAULT = 1,
  CUBLASLT_EPILOGUE_RELU = 2,
  CUBLASLT_EPILOGUE_BIAS = 4,
  CUBLASLT_EPILOGUE_RELU_BIAS = 6,
  CUBLASLT_EPILOGUE_GELU = 32,
  CUBLASLT_EPILOGUE_GELU_BIAS = 36,
};
enum cublasLtMatmulDescAttributes_t {
  CUBLASLT_MATMUL_DESC_TRANSA = 3,
  CUBLASLT_MATMUL_DESC_TRANSB = 4,
  CUBLASLT_MATMUL_DESC_EPILOGUE = 7,
  CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8,
};
enum cublasLtMatmulPreferenceAttributes_t {
  CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8,
};

struct emu_lt_desc {
  cublasComputeType_t compute;
  cublasOperation_t trans[2] = {CUBLAS_OP_N, CUBLAS_OP_N};
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void *bias = nullptr;
};
struct emu_lt_layout {
  uint64_t rows, cols;
  int64_t ld;
  cudaDataType_t type;
};
struct emu_lt_pref {
  uint64_t workspace = 0;
  uint32_t align[4] = {256, 256, 256, 256}; // A, B, C, D
};
typedef struct emu_lt_context *cublasLtHandle_t;
typedef emu_lt_desc *cublasLtMatmulDesc_t;
typedef emu_lt_layout *cublasLtMatrixLayout_t;
typedef emu_lt_pref *cublasLtMatmulPreference_t;
struct cublasLtMatmulAlgo_t {
  uint64_t data[8];
};
struct cublasLtMatmulHeuristicResult_t {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
};

namespace emu {
inline long lt_matmuls = 0;
inline const uint64_t kLtAlgoTag = 0x4c54454d55ull; // marks the heuristic's algorithms

inline cublasStatus_t lt_refuse(const char *what) {
  fprintf(stderr, "EMU cuBLASLt: %s\n", what);
  return CUBLAS_STATUS_INVALID_VALUE;
}
// rows x cols of op(L).
inline void lt_op_shape(const emu_lt_layout *l, cublasOperation_t t, uint64_t &r, uint64_t &c) {
  r = t == CUBLAS_OP_N ? l->rows : l->cols;
  c = t == CUBLAS_OP_N ? l->cols : l->rows;
}
// The checks the heuristic and the matmul share: shapes agree, leading
// dims hold their rows, a bias epilogue has its pointer.
inline cublasStatus_t lt_check(const emu_lt_desc *d, const emu_lt_layout *a,
                               const emu_lt_layout *b, const emu_lt_layout *c,
                               const emu_lt_layout *dl) {
  if (!d || !a || !b || !c || !dl)
    return lt_refuse("null descriptor");
  uint64_t m, k, k2, n;
  lt_op_shape(a, d->trans[0], m, k);
  lt_op_shape(b, d->trans[1], k2, n);
  if (k != k2 || c->rows != m || c->cols != n || dl->rows != m || dl->cols != n)
    return lt_refuse("op(A) op(B), C and D do not agree in shape");
  for (const emu_lt_layout *l : {a, b, c, dl})
    if (l->ld < (int64_t)(l->rows > 1 ? l->rows : 1))
      return lt_refuse("a leading dimension below its rows");
  for (const emu_lt_layout *l : {b, c, dl})
    if (l->type != a->type)
      return lt_refuse("matrices of different types");
  if ((d->epilogue & CUBLASLT_EPILOGUE_BIAS) && !d->bias)
    return lt_refuse("a bias epilogue without CUBLASLT_MATMUL_DESC_BIAS_POINTER");
  return CUBLAS_STATUS_SUCCESS;
}
inline double lt_gelu(double x) {
  return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}
} // namespace emu

inline cublasStatus_t cublasLtCreate(cublasLtHandle_t *h) {
  *h = (cublasLtHandle_t)0x2;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtDestroy(cublasLtHandle_t) { return CUBLAS_STATUS_SUCCESS; }

inline cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t ct,
                                               cudaDataType_t scale) {
  if ((ct != CUBLAS_COMPUTE_32F && ct != CUBLAS_COMPUTE_32F_FAST_TF32) || scale != CUDA_R_32F)
    return emu::lt_refuse("only fp32 compute with an fp32 scale is emulated");
  *d = new emu_lt_desc();
  (*d)->compute = ct;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) {
  delete d;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d,
                                                     cublasLtMatmulDescAttributes_t attr,
                                                     const void *buf, size_t size) {
  switch (attr) {
  case CUBLASLT_MATMUL_DESC_TRANSA:
  case CUBLASLT_MATMUL_DESC_TRANSB:
    if (size != sizeof(int32_t))
      break;
    memcpy(&d->trans[attr == CUBLASLT_MATMUL_DESC_TRANSB], buf, size);
    return CUBLAS_STATUS_SUCCESS;
  case CUBLASLT_MATMUL_DESC_EPILOGUE: {
    uint32_t e;
    if (size != sizeof(e))
      break;
    memcpy(&e, buf, size);
    switch (e) {
    case CUBLASLT_EPILOGUE_DEFAULT:
    case CUBLASLT_EPILOGUE_RELU:
    case CUBLASLT_EPILOGUE_BIAS:
    case CUBLASLT_EPILOGUE_RELU_BIAS:
    case CUBLASLT_EPILOGUE_GELU:
    case CUBLASLT_EPILOGUE_GELU_BIAS:
      d->epilogue = (cublasLtEpilogue_t)e;
      return CUBLAS_STATUS_SUCCESS;
    default:
      return emu::lt_refuse("an epilogue outside the emulated subset");
    }
  }
  case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
    if (size != sizeof(void *))
      break;
    memcpy(&d->bias, buf, size);
    return CUBLAS_STATUS_SUCCESS;
  }
  return emu::lt_refuse("a matmul descriptor attribute outside the emulated subset");
}

inline cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType t,
                                                 uint64_t rows, uint64_t cols, int64_t ld) {
  if (t != CUDA_R_32F && t != CUDA_R_16BF)
    return emu::lt_refuse("only fp32 and bf16 matrices are emulated");
  *l = new emu_lt_layout{rows, cols, ld, t};
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) {
  delete l;
  return CUBLAS_STATUS_SUCCESS;
}

inline cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p) {
  *p = new emu_lt_pref();
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) {
  delete p;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t
cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                     cublasLtMatmulPreferenceAttributes_t attr, const void *buf,
                                     size_t size) {
  if (attr == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES && size == sizeof(uint64_t)) {
    memcpy(&p->workspace, buf, size);
    return CUBLAS_STATUS_SUCCESS;
  }
  if (attr >= CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES &&
      attr <= CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES && size == sizeof(uint32_t)) {
    memcpy(&p->align[attr - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES], buf, size);
    return CUBLAS_STATUS_SUCCESS;
  }
  return emu::lt_refuse("a preference attribute outside the emulated subset");
}

inline cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t h, cublasLtMatmulDesc_t d, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
    cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t dl, cublasLtMatmulPreference_t p,
    int requested, cublasLtMatmulHeuristicResult_t results[], int *returned) {
  if (!h || !p || requested < 1 || !results || !returned)
    return emu::lt_refuse("invalid heuristic arguments");
  if (cublasStatus_t s = emu::lt_check(d, a, b, c, dl); s != CUBLAS_STATUS_SUCCESS)
    return s;
  results[0] = {};
  results[0].algo.data[0] = emu::kLtAlgoTag;
  for (int i = 0; i < 4; ++i)
    results[0].algo.data[1 + i] = p->align[i];
  results[0].state = CUBLAS_STATUS_SUCCESS;
  results[0].wavesCount = 1;
  *returned = 1;
  return CUBLAS_STATUS_SUCCESS;
}

inline cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t d,
                                     const void *alpha, const void *A, cublasLtMatrixLayout_t a,
                                     const void *B, cublasLtMatrixLayout_t b, const void *beta,
                                     const void *C, cublasLtMatrixLayout_t c, void *D,
                                     cublasLtMatrixLayout_t dl, const cublasLtMatmulAlgo_t *algo,
                                     void *, size_t, cudaStream_t) {
  ++emu::lt_matmuls;
  if (!h || !alpha || !beta || !algo || algo->data[0] != emu::kLtAlgoTag)
    return emu::lt_refuse("invalid matmul arguments (no algorithm from the heuristic?)");
  if (cublasStatus_t s = emu::lt_check(d, a, b, c, dl); s != CUBLAS_STATUS_SUCCESS)
    return s;
  const void *ptrs[4] = {A, B, C, D};
  for (int i = 0; i < 4; ++i)
    if ((uintptr_t)ptrs[i] % algo->data[1 + i] != 0)
      return emu::lt_refuse("a matrix aligned less than the algorithm's preference");
  const float al = *(const float *)alpha, be = *(const float *)beta;
  // fp32 or bf16 matrices (and bias, of D's type); bf16 D is rounded once.
  const bool bf16 = a->type == CUDA_R_16BF;
  auto elem = [&](const void *p, int64_t i) -> float {
    return bf16 ? nncc::kernels::bf16_to_float(((const nncc::kernels::bf16_t *)p)[i])
                : ((const float *)p)[i];
  };
  auto store = [&](int64_t i, double v) {
    if (bf16)
      ((nncc::kernels::bf16_t *)D)[i] = nncc::kernels::bf16_from_float((float)v);
    else
      ((float *)D)[i] = (float)v;
  };
  const bool at = d->trans[0] != CUBLAS_OP_N, bt = d->trans[1] != CUBLAS_OP_N;
  const int64_t m = (int64_t)dl->rows, n = (int64_t)dl->cols;
  const int64_t k = (int64_t)(at ? a->rows : a->cols);
  // The rows of op(A) and the columns of op(B), widened and contiguous.
  std::vector<double> rowsA(m * k), colsB(n * k);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p)
      rowsA[i * k + p] = elem(A, at ? p + i * a->ld : i + p * a->ld);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t p = 0; p < k; ++p)
      colsB[j * k + p] = elem(B, bt ? j + p * b->ld : p + j * b->ld);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) {
      const double s = emu::dot(&rowsA[i * k], &colsB[j * k], k);
      double v = (double)al * (double)s;
      if (be != 0.0f)
        v += (double)be * elem(C, i + j * c->ld);
      if (d->epilogue & CUBLASLT_EPILOGUE_BIAS)
        v += elem(d->bias, i);
      if (d->epilogue & CUBLASLT_EPILOGUE_RELU)
        v = v > 0 ? v : 0;
      if (d->epilogue & CUBLASLT_EPILOGUE_GELU)
        v = emu::lt_gelu(v);
      store(i + j * dl->ld, v);
    }
  return CUBLAS_STATUS_SUCCESS;
}

#endif
