//===- Internal.h - Helpers private to the CPU kernel library ---*- C++ -*-===//
#ifndef NNCC_LIB_KERNELS_INTERNAL_H
#define NNCC_LIB_KERNELS_INTERNAL_H

#include "nncc/Kernels/Common.h"
#include "nncc/Kernels/Kernels.h"

#include <cblas.h>
#include <cstddef>
#include <cstdint>

namespace nncc {
namespace kernels {

/// Row-major GEMM through OpenBLAS: C = alpha op(A) op(B) + beta C.
/// Call from the master thread, or inside an OpenMP region while a
/// SerialBlasScope is alive.
inline void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                 const float *A, int64_t lda, const float *B, int64_t ldb,
                 float beta, float *C, int64_t ldc) {
  if (M <= 0 || N <= 0)
    return;
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
              tb ? CblasTrans : CblasNoTrans, (int)M, (int)N, (int)K, alpha, A,
              (int)lda, B, (int)ldb, beta, C, (int)ldc);
}
inline void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K,
                 double alpha, const double *A, int64_t lda, const double *B,
                 int64_t ldb, double beta, double *C, int64_t ldc) {
  if (M <= 0 || N <= 0)
    return;
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
              tb ? CblasTrans : CblasNoTrans, (int)M, (int)N, (int)K, alpha, A,
              (int)lda, B, (int)ldb, beta, C, (int)ldc);
}

/// While alive, OpenBLAS runs each call on the calling thread, so gemm() may
/// be called from inside OpenMP regions (one tile per thread) without
/// oversubscribing the cores. Only the pthreads build needs this: the OpenMP
/// build already runs single-threaded inside a parallel region. The setting
/// is process-wide; kernels run one at a time, so restoring it is safe.
struct SerialBlasScope {
  int saved = 0;
  SerialBlasScope() {
    if (openblas_get_parallel() == 1) {
      saved = openblas_get_num_threads();
      if (saved != 1)
        openblas_set_num_threads(1);
    }
  }
  ~SerialBlasScope() {
    if (saved > 1)
      openblas_set_num_threads(saved);
  }
  SerialBlasScope(const SerialBlasScope &) = delete;
  SerialBlasScope &operator=(const SerialBlasScope &) = delete;
};

/// Bump allocator over a caller-provided workspace (64-byte aligned pieces).
struct Arena {
  char *base;
  size_t off = 0;
  explicit Arena(void *p) : base(static_cast<char *>(p)) {}
  template <typename U> U *take(int64_t n) {
    off = (off + 63) & ~size_t(63);
    U *r = base ? reinterpret_cast<U *>(base + off) : nullptr;
    off += size_t(n > 0 ? n : 0) * sizeof(U);
    return r;
  }
  size_t size() const { return (off + 63) & ~size_t(63); }
};

} // namespace kernels
} // namespace nncc

#endif
