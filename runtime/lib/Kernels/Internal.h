//===- Internal.h - Helpers private to the CPU kernel library ---*- C++ -*-===//
#ifndef NNCC_LIB_KERNELS_INTERNAL_H
#define NNCC_LIB_KERNELS_INTERNAL_H

#include "nncc/Kernels/Common.h"
#include "nncc/Kernels/Kernels.h"

#include <algorithm>
#include <cblas.h>
#include <omp.h>
#include <cstddef>
#include <cstdint>

namespace nncc {
namespace kernels {

/// A function called on each finished block of C — rows [r0, r1) x columns
/// [c0, c1) of the C that the product was given, plus (dr, dc) — while the
/// block is still in cache (the fused epilogue of nncc_linear).
struct BlockDone {
  void (*fn)(void *ctx, int64_t r0, int64_t r1, int64_t c0, int64_t c1) = nullptr;
  void *ctx = nullptr;
  int64_t dr = 0, dc = 0;
  void operator()(int64_t r0, int64_t r1, int64_t c0, int64_t c1) const {
    if (fn)
      fn(ctx, r0 + dr, r1 + dr, c0 + dc, c1 + dc);
  }
};

/// Whether the kernels' AVX-512 code runs here (the SGEMM of Gemm.cpp and
/// the recurrent loops of RecurrentFast.cpp): a CPU with AVX-512F/DQ, unless
/// NNCC_KERNELS_PORTABLE is set (not "0"); read once per process.
bool cpuHasAvx512();
/// Whether the kernels' AVX2 code runs here (the recurrent scan of
/// RecurrentFastAvx2.cpp): a CPU with AVX2 and FMA, unless
/// NNCC_KERNELS_PORTABLE is set (not "0"); read once per process.
bool cpuHasAvx2Fma();
/// Whether ownSgemm runs here (cpuHasAvx512).
bool ownSgemmAvailable();
/// C = alpha op(A) op(B) + beta C (row-major) on the calling thread with
/// nncc's AVX-512 micro-kernel (Gemm.cpp); K > 0. Each micro-tile of C is
/// passed to `done` (if given) as soon as its last K slice is stored. False
/// (C untouched) when its packing buffers cannot be allocated.
bool ownSgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
              const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
              float *C, int64_t ldc, const BlockDone *done = nullptr);

/// Products with fewer multiply-adds than this stay with OpenBLAS: packing
/// both operands would cost more than it saves.
constexpr double kOwnSgemmMinMacs = 1 << 12;

/// One single-threaded f32 product C = alpha op(A) op(B) + beta C
/// (row-major): ownSgemm where the CPU has AVX-512, else one OpenBLAS call.
/// `done` gets ownSgemm's micro-tiles, or the whole of C after OpenBLAS.
inline void blasGemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                     const float *A, int64_t lda, const float *B, int64_t ldb,
                     float beta, float *C, int64_t ldc, const BlockDone *done = nullptr) {
  if (K > 0 && (double)M * (double)N * (double)K >= kOwnSgemmMinMacs &&
      ownSgemmAvailable() &&
      ownSgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, done))
    return;
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
              tb ? CblasTrans : CblasNoTrans, (int)M, (int)N, (int)K, alpha, A,
              (int)lda, B, (int)ldb, beta, C, (int)ldc);
  if (done)
    (*done)(0, M, 0, N);
}
inline void blasGemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K,
                     double alpha, const double *A, int64_t lda, const double *B,
                     int64_t ldb, double beta, double *C, int64_t ldc,
                     const BlockDone *done = nullptr) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
              tb ? CblasTrans : CblasNoTrans, (int)M, (int)N, (int)K, alpha, A,
              (int)lda, B, (int)ldb, beta, C, (int)ldc);
  if (done)
    (*done)(0, M, 0, N);
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

/// GEMMs with fewer multiply-adds, or with fewer than kPanelMinRows rows or
/// columns (a recurrent step's batch rows), stay one single-threaded
/// OpenBLAS call: panels of those would cost an OpenMP region per time step
/// for too little work each.
constexpr double kParallelGemmMacs = 1 << 22;
constexpr int64_t kPanelMinRows = 64;

/// Row-major GEMM: C = alpha op(A) op(B) + beta C, then done (if given) on
/// each finished block of C while it is still in cache: ownSgemm's
/// micro-tiles, or whole panels after OpenBLAS.
/// Outside an OpenMP region a large product is split into panels of C along
/// the longer of M and N, each a single-threaded product on an OpenMP
/// thread: OpenBLAS's own pthreads stay asleep, so they cannot fight the
/// OpenMP threads (which spin after every parallel region) for the cores.
/// Inside a region (tile kernels) it is one product on the calling thread;
/// the caller holds a SerialBlasScope there.
template <typename T>
inline void gemmBlocks(bool ta, bool tb, int64_t M, int64_t N, int64_t K, T alpha,
                       const T *A, int64_t lda, const T *B, int64_t ldb, T beta, T *C,
                       int64_t ldc, const BlockDone *done) {
  if (M <= 0 || N <= 0)
    return;
  const int nt = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (nt < 2 || std::min(M, N) < kPanelMinRows ||
      (double)M * (double)N * (double)K < kParallelGemmMacs) {
    if (omp_in_parallel()) {
      blasGemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, done);
    } else {
      // Single-threaded as well: one call that wakes OpenBLAS's threads
      // leaves them spinning against the OpenMP threads for a long while.
      SerialBlasScope serial;
      blasGemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, done);
    }
    return;
  }
  SerialBlasScope serial;
  const bool splitM = M >= N;
  const int64_t extent = splitM ? M : N;
  // One panel of whole SIMD tiles (multiples of 16) per thread: every panel
  // packs the whole other operand again, and at BERT-small's shapes (M 1024,
  // K 256) four panels per thread made its inference 11% slower on a quiet
  // 2-core machine (98 against 87 ms) than one. Handed out dynamically all
  // the same, so a thread that is late to start takes none.
  const int64_t panels = std::max<int64_t>(1, std::min<int64_t>(nt, extent / 64));
  const int64_t step = ((extent + panels - 1) / panels + 15) / 16 * 16;
  const int64_t count = (extent + step - 1) / step;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
  for (int64_t p = 0; p < count; ++p) {
    const int64_t lo = p * step, hi = std::min(extent, lo + step);
    BlockDone panel = done ? *done : BlockDone();
    (splitM ? panel.dr : panel.dc) += lo;
    if (splitM)
      blasGemm(ta, tb, hi - lo, N, K, alpha, ta ? A + lo : A + lo * lda, lda, B, ldb,
               beta, C + lo * ldc, ldc, &panel);
    else
      blasGemm(ta, tb, M, hi - lo, K, alpha, A, lda, tb ? B + lo * ldb : B + lo, ldb,
               beta, C + lo, ldc, &panel);
  }
}

/// gemmBlocks with after(r0, r1, c0, c1) on each finished block.
template <typename T, typename After>
inline void gemmPanels(bool ta, bool tb, int64_t M, int64_t N, int64_t K, T alpha,
                       const T *A, int64_t lda, const T *B, int64_t ldb, T beta, T *C,
                       int64_t ldc, const After &after) {
  BlockDone done;
  done.fn = [](void *ctx, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    (*static_cast<const After *>(ctx))(r0, r1, c0, c1);
  };
  done.ctx = const_cast<void *>(static_cast<const void *>(&after));
  gemmBlocks(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, &done);
}

/// gemmBlocks with nothing after the product.
template <typename T>
inline void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, T alpha,
                 const T *A, int64_t lda, const T *B, int64_t ldb, T beta, T *C,
                 int64_t ldc) {
  gemmBlocks(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, nullptr);
}

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

/// dx = dy * act'(xy) elementwise, xy the activation's input (isOutput = 0)
/// or output (ElementwiseBackward.cpp; the linear backward's epilogue too).
/// Instantiated for float and double.
template <typename T>
int activationBackward(int64_t n, const T *xy, int isOutput, int act, double alpha,
                       const T *dy, T *dx);

} // namespace kernels
} // namespace nncc

#endif
