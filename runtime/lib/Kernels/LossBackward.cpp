//===- LossBackward.cpp - Backward of the losses (CPU) --------------------===//

#include "Internal.h"
#include "nncc/Kernels/BackwardMath.h"
#include "nncc/Kernels/NormMath.h"

using namespace nncc::kernels;

namespace {

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

} // namespace

#define NNCC_DEFINE_LOSS_BACKWARD(S, T)                                        \
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
  }

NNCC_DEFINE_LOSS_BACKWARD(f32, float)
NNCC_DEFINE_LOSS_BACKWARD(f64, double)
