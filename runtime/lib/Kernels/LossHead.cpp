//===- LossHead.cpp - Fused, chunked linear + softmax cross-entropy (CPU) -===//
//
// nnk.linear_cross_entropy: the loss of cross_entropy(x w^T + b, target) and
// its gradients for a unit loss adjoint, without the [N, V] logits or their
// gradient: per chunk of rows, one GEMM for the chunk's logits (workspace),
// the softmax gradient in place (cross_entropy_grad_row_inplace, shared with
// the CUDA twin), one GEMM for the chunk's dx rows and one accumulating dw.
// db sums over rows in a fixed order per column (thread-count independent).
//
//===----------------------------------------------------------------------===//
#include "Internal.h"
#include "nncc/Kernels/NormMath.h"

#include <algorithm>
#include <cstring>

using namespace nncc::kernels;

/// About 2^21 logits per chunk (8 MiB in f32): the GEMMs keep M in the
/// hundreds for vocabularies of 10^4, and the workspace stays bounded.
extern "C" int64_t nncc_linear_ce_chunk_rows(int64_t N, int64_t V) {
  if (N <= 0 || V <= 0)
    return 1;
  return std::max<int64_t>(1, std::min<int64_t>(N, (int64_t(1) << 21) / V));
}

extern "C" int64_t nncc_linear_ce_workspace_size(int64_t N, int64_t V,
                                                 int64_t elem_size) {
  return nncc_linear_ce_chunk_rows(N, V) * std::max<int64_t>(V, 1) * elem_size;
}

namespace {

template <typename T>
int linearCrossEntropy(int64_t N, int64_t K, int64_t V, const T *x, const T *w,
                       const T *b, const int64_t *tgt, int64_t ignore, T *loss,
                       T *dx, T *dw, T *db, T *logits, void *workspace) {
  if (N <= 0 || K <= 0 || V <= 0 || !x || !w || !tgt || !loss || !dx || !dw ||
      !db || !workspace)
    return NNCC_K_EINVAL;
  int64_t cnt = 0;
  for (int64_t i = 0; i < N; ++i) {
    if (tgt[i] == ignore)
      continue;
    if (tgt[i] < 0 || tgt[i] >= V)
      return NNCC_K_ERANGE;
    ++cnt;
  }
  // All rows ignored: the loss is 0/0 = NaN and so are its gradients, as
  // PyTorch (and nncc_cross_entropy{,_backward}).
  const double s = 1.0 / double(cnt);
  const int64_t R = nncc_linear_ce_chunk_rows(N, V);
  T *z = static_cast<T *>(workspace);
  double total = 0;
  std::fill(db, db + V, T(0));
  for (int64_t r0 = 0; r0 < N; r0 += R) {
    const int64_t m = std::min(R, N - r0);
    const T *xc = x + r0 * K;
    gemm(false, true, m, V, K, T(1), xc, K, w, K, T(0), z, V);
    if (b) {
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t c = 0; c < V; ++c)
          z[i * V + c] += b[c];
    }
    if (logits)
      std::memcpy(logits + r0 * V, z, size_t(m * V) * sizeof(T));
    double part = 0;
#pragma omp parallel for reduction(+ : part) schedule(static)
    for (int64_t i = 0; i < m; ++i) {
      T *row = z + i * V;
      const int64_t t = tgt[r0 + i];
      if (t == ignore) {
        std::fill(row, row + V, T(cnt ? 0.0 : s));
        continue;
      }
      part += cross_entropy_grad_row_inplace<T, double>(row, V, t, s);
    }
    total += part;
    // dx rows = dz w; dw (+)= dz^T x; db += column sums of dz.
    gemm(false, false, m, K, V, T(1), z, V, w, K, T(0), dx + r0 * K, K);
    gemm(true, false, V, K, m, T(1), z, V, xc, K, T(r0 == 0 ? 0 : 1), dw, K);
    constexpr int64_t kCols = 256;
#pragma omp parallel for schedule(static)
    for (int64_t c0 = 0; c0 < V; c0 += kCols) {
      const int64_t c1 = std::min(V, c0 + kCols);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t c = c0; c < c1; ++c)
          db[c] += z[i * V + c];
    }
  }
  *loss = T(total / double(cnt));
  return NNCC_K_OK;
}

} // namespace

#define NNCC_DEFINE_LOSS_HEAD(S, T)                                            \
  extern "C" int nncc_linear_cross_entropy_##S(                                \
      int64_t N, int64_t K, int64_t V, const T *x, const T *w, const T *b,     \
      const int64_t *target, int64_t ignore_index, T *loss, T *dx, T *dw,      \
      T *db, T *logits, void *workspace) {                                     \
    return linearCrossEntropy<T>(N, K, V, x, w, b, target, ignore_index, loss, \
                                 dx, dw, db, logits, workspace);               \
  }
NNCC_DEFINE_LOSS_HEAD(f32, float)
NNCC_DEFINE_LOSS_HEAD(f64, double)
