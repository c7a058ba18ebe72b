//===- LinearBackward.cpp - Backward of the fused linear (CPU) ------------===//
//
// db sums rows in a fixed order per column, so results do not depend on
// the thread count.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "nncc/Kernels/BackwardMath.h"

#include <cstring>

using namespace nncc::kernels;

namespace {

/// y = act(x w^T + b): dz = dy * act'(z) (z or y given), dx = dz w,
/// dw = dz^T x, db = sum dz. Any of dx/dw/db may be NULL. accumulate != 0
/// adds into dx/dw/db instead of overwriting. `dz_out` (optional, [M,N])
/// receives dz; otherwise workspace [M*N] is used (NULL when act = none).
template <typename T>
int linearBackward(int64_t M, int64_t N, int64_t K, const T *x, const T *w,
                   const T *zy, int isOutput, int act, double alpha,
                   const T *dy, T *dx, T *dw, T *db, int accumulate,
                   T *dzOut, void *ws) {
  if (M < 0 || N <= 0 || K <= 0 || (M > 0 && !dy) || act < 0 ||
      act > ActSigmoid || (dx && !w) || (dw && M > 0 && !x))
    return NNCC_K_EINVAL;
  const T *dz = dy;
  if (act != ActNone) {
    T *buf = dzOut ? dzOut : static_cast<T *>(ws);
    if (!buf || (M > 0 && !zy))
      return NNCC_K_EINVAL;
    int rc = activationBackward<T>(M * N, zy, isOutput, act, alpha, dy, buf);
    if (rc)
      return rc;
    dz = buf;
  } else if (dzOut) {
    std::memcpy(dzOut, dy, sizeof(T) * M * N);
  }
  const T beta = accumulate ? T(1) : T(0);
  if (dx)
    gemm(false, false, M, K, N, T(1), dz, N, w, K, beta, dx, K);
  if (dw) {
    if (M == 0) {
      if (!accumulate)
        std::memset(dw, 0, sizeof(T) * N * K);
    } else {
      gemm(true, false, N, K, M, T(1), dz, N, x, K, beta, dw, K);
    }
  }
  if (db) {
#pragma omp parallel for schedule(static) if (M * N > 65536)
    for (int64_t j = 0; j < N; ++j) {
      T s = T(0);
      for (int64_t r = 0; r < M; ++r)
        s += dz[r * N + j];
      db[j] = accumulate ? db[j] + s : s;
    }
  }
  return NNCC_K_OK;
}

} // namespace

#define NNCC_DEFINE_LINEAR_BACKWARD(S, T)                                      \
  extern "C" int nncc_linear_backward_##S(                                     \
      int64_t M, int64_t N, int64_t K, const T *x, const T *w, const T *zy,    \
      int is_out, int act, double alpha, const T *dy, T *dx, T *dw, T *db,     \
      int acc, T *dz, void *ws) {                                              \
    return linearBackward<T>(M, N, K, x, w, zy, is_out, act, alpha, dy, dx,    \
                             dw, db, acc, dz, ws);                             \
  }

NNCC_DEFINE_LINEAR_BACKWARD(f32, float)
NNCC_DEFINE_LINEAR_BACKWARD(f64, double)
