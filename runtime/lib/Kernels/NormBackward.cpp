//===- NormBackward.cpp - Backward of layer norm and softmax (CPU) --------===//
//
// Reductions over rows (dgamma, dbeta) run in a fixed order per output
// element (parallel over columns), so results do not depend on the thread
// count.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "nncc/Kernels/BackwardMath.h"
#include "nncc/Kernels/NormMath.h"

#include <algorithm>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

using namespace nncc::kernels;

namespace {

/// dx of one row of layerNormBackward, with the residual and gamma known at
/// compile time so that every loop is branch-free: the two reductions in
/// partial sums (lane_sum), then dx = rstd (g - mean(g) - xhat mean(g xhat))
/// (+ dsum), g = dy gamma.
template <bool HasRes, bool HasGamma, typename T>
void layerNormRowGrad(int64_t N, const T *xr, const T *rr, const T *gamma, const T *dyr,
                      const T *dsumr, double mean, double rstd, T *dxr) {
  auto g = [&](int64_t j) {
    double v = double(dyr[j]);
    if constexpr (HasGamma)
      v *= double(gamma[j]);
    return v;
  };
  auto xhat = [&](int64_t j) {
    double v = double(xr[j]);
    if constexpr (HasRes)
      v += double(rr[j]);
    return (v - mean) * rstd;
  };
  const double sg = lane_sum<double>(N, g) / double(N);
  const double sgx = lane_sum<double>(N, [&](int64_t j) { return g(j) * xhat(j); }) / double(N);
  if (dsumr) {
    for (int64_t j = 0; j < N; ++j)
      dxr[j] = T(rstd * (g(j) - sg - xhat(j) * sgx) + double(dsumr[j]));
  } else {
    for (int64_t j = 0; j < N; ++j)
      dxr[j] = T(rstd * (g(j) - sg - xhat(j) * sgx));
  }
}

/// y = LN(s)*gamma + beta, s = x + residual. Writes ds (= dx = dresidual);
/// dsum (optional) is an extra adjoint arriving at s (sum_out).
template <typename T>
int layerNormBackward(int64_t rows, int64_t N, const T *x, const T *res,
                      const T *gamma, const T *meanIn, const T *rstdIn,
                      double eps, const T *dy, const T *dsum, T *dx,
                      T *dgamma, T *dbeta) {
  if (rows < 0 || N <= 0 || (rows > 0 && (!x || !dy || !dx)) || !(eps >= 0) ||
      (!meanIn) != (!rstdIn))
    return NNCC_K_EINVAL;
  // Row pass: dx. Row statistics recomputed unless given.
  auto rowGrad = res ? (gamma ? &layerNormRowGrad<true, true, T> : &layerNormRowGrad<true, false, T>)
                     : (gamma ? &layerNormRowGrad<false, true, T> : &layerNormRowGrad<false, false, T>);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const T *xr = x + r * N, *rr = res ? res + r * N : nullptr;
    const T *dyr = dy + r * N;
    double mean, rstd;
    if (meanIn) {
      mean = meanIn[r];
      rstd = rstdIn[r];
    } else {
      layer_norm_stats<T, double>(xr, rr, N, eps, mean, rstd);
    }
    rowGrad(N, xr, rr, gamma, dyr, dsum ? dsum + r * N : nullptr, mean, rstd, dx + r * N);
  }
  if (!dgamma && !dbeta)
    return NNCC_K_OK;
  // Column pass: dgamma = sum dy * xhat, dbeta = sum dy, every column summed
  // in row order (so the result does not depend on the thread count). Each
  // thread owns a block of columns and walks the rows in chunks, recomputing
  // a chunk's statistics once per block (no rows-sized workspace).
  constexpr int64_t kRowChunk = 64;
#pragma omp parallel
  {
    int64_t nth = 1, tid = 0;
#ifdef _OPENMP
    nth = omp_get_num_threads();
    tid = omp_get_thread_num();
#endif
    const int64_t per = (N + nth - 1) / nth;
    const int64_t j0 = std::min(N, tid * per), j1 = std::min(N, j0 + per);
    if (j0 < j1) {
      std::vector<double> sgam(j1 - j0, 0.0), sbet(j1 - j0, 0.0);
      double mean[kRowChunk], rstd[kRowChunk];
      for (int64_t r0 = 0; r0 < rows; r0 += kRowChunk) {
        const int64_t nr = std::min(kRowChunk, rows - r0);
        for (int64_t i = 0; i < nr; ++i) {
          const int64_t r = r0 + i;
          if (meanIn) {
            mean[i] = meanIn[r];
            rstd[i] = rstdIn[r];
          } else {
            layer_norm_stats<T, double>(x + r * N, res ? res + r * N : nullptr,
                                        N, eps, mean[i], rstd[i]);
          }
        }
        for (int64_t i = 0; i < nr; ++i) {
          const int64_t r = r0 + i;
          const T *xr = x + r * N, *rr = res ? res + r * N : nullptr;
          const T *dyr = dy + r * N;
          for (int64_t j = j0; j < j1; ++j) {
            const double s = double(xr[j]) + (rr ? double(rr[j]) : 0.0);
            sgam[j - j0] += double(dyr[j]) * (s - mean[i]) * rstd[i];
            sbet[j - j0] += double(dyr[j]);
          }
        }
      }
      for (int64_t j = j0; j < j1; ++j) {
        if (dgamma)
          dgamma[j] = T(sgam[j - j0]);
        if (dbeta)
          dbeta[j] = T(sbet[j - j0]);
      }
    }
  }
  return NNCC_K_OK;
}

template <typename T>
int softmaxBackward(int64_t outer, int64_t N, int64_t inner, const T *y,
                    const T *dy, T *dx) {
  if (outer < 0 || N <= 0 || inner <= 0 || (outer > 0 && (!y || !dy || !dx)))
    return NNCC_K_EINVAL;
#pragma omp parallel for schedule(static)
  for (int64_t oi = 0; oi < outer * inner; ++oi) {
    const int64_t o = oi / inner, in = oi % inner;
    const int64_t base = o * N * inner + in;
    double s = 0;
    for (int64_t j = 0; j < N; ++j)
      s += double(y[base + j * inner]) * double(dy[base + j * inner]);
    for (int64_t j = 0; j < N; ++j)
      dx[base + j * inner] =
          T(double(y[base + j * inner]) * (double(dy[base + j * inner]) - s));
  }
  return NNCC_K_OK;
}

} // namespace

#define NNCC_DEFINE_NORM_BACKWARD(S, T)                                        \
  extern "C" int nncc_layer_norm_backward_##S(                                 \
      int64_t rows, int64_t N, const T *x, const T *r, const T *g,             \
      const T *mean, const T *rstd, double eps, const T *dy, const T *dsum,    \
      T *dx, T *dg, T *db) {                                                   \
    return layerNormBackward<T>(rows, N, x, r, g, mean, rstd, eps, dy, dsum,   \
                                dx, dg, db);                                   \
  }                                                                            \
  extern "C" int nncc_softmax_backward_##S(int64_t o, int64_t N, int64_t in,   \
                                           const T *y, const T *dy, T *dx) {   \
    return softmaxBackward<T>(o, N, in, y, dy, dx);                            \
  }

NNCC_DEFINE_NORM_BACKWARD(f32, float)
NNCC_DEFINE_NORM_BACKWARD(f64, double)
