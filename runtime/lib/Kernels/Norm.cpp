//===- Norm.cpp - Layer norm and softmax (CPU) ----------------------------===//
//
// Forward of the norm family; its backward is NormBackward.cpp. Row math
// is NormMath.h, shared with CUDA/Norm.cuh.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "nncc/Kernels/NormMath.h"

using namespace nncc::kernels;

namespace {

template <typename T>
int layerNorm(int64_t rows, int64_t N, const T *x, const T *res,
              const T *gamma, const T *beta, double eps, T *y, T *sumOut,
              T *meanOut, T *rstdOut) {
  if (rows < 0 || N <= 0 || (rows > 0 && (!x || !y)) || !(eps >= 0))
    return NNCC_K_EINVAL;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const T *xr = x + r * N;
    const T *rr = res ? res + r * N : nullptr;
    double mean, rstd;
    layer_norm_stats<T, double>(xr, rr, N, eps, mean, rstd);
    T *yr = y + r * N;
    for (int64_t j = 0; j < N; ++j) {
      T s = xr[j] + (rr ? rr[j] : T(0));
      if (sumOut)
        sumOut[r * N + j] = s;
      yr[j] = layer_norm_apply<T>(s, T(mean), T(rstd), gamma, beta, j);
    }
    if (meanOut)
      meanOut[r] = T(mean);
    if (rstdOut)
      rstdOut[r] = T(rstd);
  }
  return NNCC_K_OK;
}

template <typename T>
int softmax(int64_t outer, int64_t N, int64_t inner, const T *x, T *y) {
  if (outer < 0 || N <= 0 || inner <= 0 || (outer > 0 && (!x || !y)))
    return NNCC_K_EINVAL;
#pragma omp parallel for schedule(static)
  for (int64_t oi = 0; oi < outer * inner; ++oi) {
    const int64_t o = oi / inner, in = oi % inner;
    const T *xr = x + o * N * inner + in;
    T *yr = y + o * N * inner + in;
    T mx = xr[0];
    for (int64_t j = 1; j < N; ++j)
      mx = nmax(mx, xr[j * inner]);
    double s = 0;
    for (int64_t j = 0; j < N; ++j) {
      T e = nexp(xr[j * inner] - mx);
      yr[j * inner] = e;
      s += e;
    }
    T inv = T(1.0 / s);
    for (int64_t j = 0; j < N; ++j)
      yr[j * inner] *= inv;
  }
  return NNCC_K_OK;
}

} // namespace

#define NNCC_DEFINE_NORM(S, T)                                                 \
  extern "C" int nncc_layer_norm_##S(int64_t rows, int64_t N, const T *x,      \
                                     const T *r, const T *g, const T *b,       \
                                     double eps, T *y, T *so, T *m, T *rs) {   \
    return layerNorm<T>(rows, N, x, r, g, b, eps, y, so, m, rs);               \
  }                                                                            \
  extern "C" int nncc_softmax_##S(int64_t o, int64_t N, int64_t in,            \
                                  const T *x, T *y) {                          \
    return softmax<T>(o, N, in, x, y);                                         \
  }

NNCC_DEFINE_NORM(f32, float)
NNCC_DEFINE_NORM(f64, double)
