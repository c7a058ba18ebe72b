//===- MiscBackward.cpp - Backward of layer norm, softmax, embedding, linear,
//                        activations, losses, dropout (CPU) ---------------===//
//
// Also the byte size of the ODE backward loop's workspace (GradKernels.h).
//
// Reductions over rows (dgamma, dbeta, db, embedding rows) run in a fixed
// order per output element (parallel over columns), so results do not
// depend on the thread count.
//
//===----------------------------------------------------------------------===//
#include "Internal.h"
#include "nncc/Kernels/BackwardMath.h"
#include "nncc/Kernels/GradKernels.h"
#include "nncc/Kernels/NormMath.h"
#include "nncc/Kernels/RandomMasks.h"

#include <algorithm>
#include <cstring>
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

/// dtable[V,E] = scatter-add of dy rows by index (overwrites dtable). Each
/// thread owns a column range and walks the indices in order: deterministic.
template <typename T, typename I>
int embeddingBackward(int64_t n, int64_t V, int64_t E, const I *idx,
                      const T *dy, int64_t paddingIdx, T *dtable) {
  if (n < 0 || V <= 0 || E <= 0 || !dtable || (n > 0 && (!idx || !dy)))
    return NNCC_K_EINVAL;
  for (int64_t i = 0; i < n; ++i)
    if (idx[i] < 0 || (int64_t)idx[i] >= V)
      return NNCC_K_ERANGE;
  std::memset(dtable, 0, sizeof(T) * V * E);
  const int64_t CB = 64;
  const int64_t nb = (E + CB - 1) / CB;
#pragma omp parallel for schedule(static)
  for (int64_t cb = 0; cb < nb; ++cb) {
    const int64_t c0 = cb * CB, c1 = c0 + CB < E ? c0 + CB : E;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t v = (int64_t)idx[i];
      if (v == paddingIdx)
        continue;
      T *dr = dtable + v * E;
      const T *sr = dy + i * E;
      for (int64_t c = c0; c < c1; ++c)
        dr[c] += sr[c];
    }
  }
  return NNCC_K_OK;
}

template <typename T>
int activationBackward(int64_t n, const T *xy, int isOutput, int act,
                       double alpha, const T *dy, T *dx) {
  if (n < 0 || (n > 0 && (!xy || !dy || !dx)) || act < 0 || act > ActSigmoid)
    return NNCC_K_EINVAL;
  if (isOutput && !activation_grad_from_output_ok(act, alpha))
    return NNCC_K_EINVAL;
  const T a = T(alpha);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i)
    dx[i] = dy[i] * (isOutput ? activation_grad_post(act, xy[i], a)
                              : activation_grad_pre(act, xy[i], a));
  return NNCC_K_OK;
}

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

template <typename T>
int mseBackward(int64_t n, const T *a, const T *b, const T *g, T *da, T *db) {
  if (n <= 0 || !a || !b || (!da && !db))
    return NNCC_K_EINVAL;
  const double s = 2.0 * (g ? double(*g) : 1.0) / double(n);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const double d = (double(a[i]) - double(b[i])) * s;
    if (da)
      da[i] = T(d);
    if (db)
      db[i] = T(-d);
  }
  return NNCC_K_OK;
}

template <typename T>
int crossEntropyBackward(int64_t N, int64_t C, const T *logits,
                         const int64_t *tgt, int64_t ignore, const T *g,
                         T *dl) {
  if (N <= 0 || C <= 0 || !logits || !tgt || !dl)
    return NNCC_K_EINVAL;
  int64_t cnt = 0;
  for (int64_t i = 0; i < N; ++i) {
    if (tgt[i] == ignore)
      continue;
    if (tgt[i] < 0 || tgt[i] >= C)
      return NNCC_K_ERANGE;
    ++cnt;
  }
  // All rows ignored: the loss is NaN (0/0); its gradient is NaN too, as
  // PyTorch.
  const double s = (g ? double(*g) : 1.0) / double(cnt);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < N; ++i) {
    const T *lr = logits + i * C;
    T *dr = dl + i * C;
    if (tgt[i] == ignore) {
      for (int64_t c = 0; c < C; ++c)
        dr[c] = T(cnt ? 0.0 : s);
      continue;
    }
    double mx = double(lr[0]);
    for (int64_t c = 1; c < C; ++c)
      mx = nmax(mx, double(lr[c]));
    double sum = 0;
    for (int64_t c = 0; c < C; ++c)
      sum += exp(double(lr[c]) - mx);
    for (int64_t c = 0; c < C; ++c)
      dr[c] = T((exp(double(lr[c]) - mx) / sum - (c == tgt[i] ? 1.0 : 0.0)) *
                s);
  }
  return NNCC_K_OK;
}

template <typename T>
int bceBackward(int64_t N, int64_t C, const T *x, const T *y, const T *pw,
                const T *g, T *dx) {
  if (N <= 0 || C <= 0 || !x || !y || !dx)
    return NNCC_K_EINVAL;
  const double s = (g ? double(*g) : 1.0) / double(N * C);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < N * C; ++i)
    dx[i] = T(bce_logits_grad_elem<double>(x[i], y[i],
                                           pw ? double(pw[i % C]) : 1.0) *
              s);
  return NNCC_K_OK;
}

template <typename T>
int dropoutBackward(int64_t n, double p, uint64_t seed, uint64_t offset,
                    const T *dy, T *dx) {
  if (n < 0 || !(p >= 0 && p < 1) || (n > 0 && (!dy || !dx)))
    return NNCC_K_EINVAL;
  const float pf = (float)p;
  const T scale = T(1) / (T(1) - T(p));
  // The forward's mask (dropout_keep), a batch of Philox blocks at a time.
  constexpr int64_t kChunk = 4 * kMaskBatch;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    uint32_t bits[kChunk];
    philox_mask_chunk(seed, offset, (uint64_t)c, bits);
    const int64_t i0 = c * kChunk, m = std::min<int64_t>(kChunk, n - i0);
    for (int64_t j = 0; j < m; ++j)
      dx[i0 + j] = nncc_rng_u32_to_unit_float(bits[j]) >= pf ? dy[i0 + j] * scale : T(0);
  }
  return NNCC_K_OK;
}

} // namespace

#define NNCC_DEFINE_MISC_BWD(S, T)                                             \
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
  }                                                                            \
  extern "C" int nncc_embedding_backward_##S(int64_t n, int64_t V, int64_t E,  \
                                             const int64_t *idx, const T *dy,  \
                                             int64_t pad, T *dt) {             \
    return embeddingBackward<T, int64_t>(n, V, E, idx, dy, pad, dt);           \
  }                                                                            \
  extern "C" int nncc_embedding_backward_i32_##S(                              \
      int64_t n, int64_t V, int64_t E, const int32_t *idx, const T *dy,        \
      int64_t pad, T *dt) {                                                    \
    return embeddingBackward<T, int32_t>(n, V, E, idx, dy, pad, dt);           \
  }                                                                            \
  extern "C" int nncc_activation_backward_##S(int64_t n, const T *xy,          \
                                              int is_out, int act,             \
                                              double alpha, const T *dy,       \
                                              T *dx) {                         \
    return activationBackward<T>(n, xy, is_out, act, alpha, dy, dx);           \
  }                                                                            \
  extern "C" int nncc_linear_backward_##S(                                     \
      int64_t M, int64_t N, int64_t K, const T *x, const T *w, const T *zy,    \
      int is_out, int act, double alpha, const T *dy, T *dx, T *dw, T *db,     \
      int acc, T *dz, void *ws) {                                              \
    return linearBackward<T>(M, N, K, x, w, zy, is_out, act, alpha, dy, dx,    \
                             dw, db, acc, dz, ws);                             \
  }                                                                            \
  extern "C" int nncc_mse_loss_backward_##S(int64_t n, const T *a,             \
                                            const T *b, const T *g, T *da,     \
                                            T *db) {                           \
    return mseBackward<T>(n, a, b, g, da, db);                                 \
  }                                                                            \
  extern "C" int nncc_cross_entropy_backward_##S(                              \
      int64_t N, int64_t C, const T *l, const int64_t *t, int64_t ig,          \
      const T *g, T *dl) {                                                     \
    return crossEntropyBackward<T>(N, C, l, t, ig, g, dl);                     \
  }                                                                            \
  extern "C" int nncc_bce_with_logits_backward_##S(                            \
      int64_t N, int64_t C, const T *x, const T *y, const T *pw, const T *g,   \
      T *dx) {                                                                 \
    return bceBackward<T>(N, C, x, y, pw, g, dx);                              \
  }                                                                            \
  extern "C" int nncc_dropout_backward_##S(int64_t n, double p, uint64_t seed, \
                                           uint64_t off, const T *dy, T *dx) { \
    return dropoutBackward<T>(n, p, seed, off, dy, dx);                        \
  }

NNCC_DEFINE_MISC_BWD(f32, float)
NNCC_DEFINE_MISC_BWD(f64, double)

extern "C" int64_t nncc_ode_grad_workspace_size(int method, int64_t steps, int64_t max_steps,
                                                int adjoint, int64_t n, int64_t P,
                                                int64_t elem_size) {
  return nncc::grad::ode_grad_layout(method, steps, max_steps, adjoint, n, P, elem_size).bytes;
}
