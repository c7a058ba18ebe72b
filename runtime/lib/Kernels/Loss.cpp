//===- Loss.cpp - MSE, cross-entropy, BCE-with-logits losses (CPU) --------===//
//
// Forward of the loss family (the fused linear + cross-entropy head is
// LossHead.cpp); its backward is LossBackward.cpp. Row math is NormMath.h,
// shared with CUDA/Loss.cuh.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "nncc/Kernels/NormMath.h"

using namespace nncc::kernels;

namespace {

template <typename T>
int mse(int64_t n, const T *a, const T *b, T *out) {
  if (n <= 0 || !a || !b || !out)
    return NNCC_K_EINVAL;
  double s = 0;
#pragma omp parallel for reduction(+ : s) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    double d = double(a[i]) - double(b[i]);
    s += d * d;
  }
  *out = T(s / double(n));
  return NNCC_K_OK;
}

template <typename T>
int crossEntropy(int64_t N, int64_t C, const T *logits, const int64_t *tgt,
                 int64_t ignore, T *out) {
  if (N <= 0 || C <= 0 || !logits || !tgt || !out)
    return NNCC_K_EINVAL;
  for (int64_t i = 0; i < N; ++i)
    if (tgt[i] != ignore && (tgt[i] < 0 || tgt[i] >= C))
      return NNCC_K_ERANGE;
  double s = 0;
  int64_t cnt = 0;
#pragma omp parallel for reduction(+ : s, cnt) schedule(static)
  for (int64_t i = 0; i < N; ++i) {
    if (tgt[i] == ignore)
      continue;
    s += cross_entropy_row<T, double>(logits + i * C, C, tgt[i]);
    ++cnt;
  }
  // All targets ignored: 0/0 = NaN, as PyTorch.
  *out = T(s / double(cnt));
  return NNCC_K_OK;
}

template <typename T>
int bceLogits(int64_t N, int64_t C, const T *x, const T *y, const T *pw,
              T *out) {
  if (N <= 0 || C <= 0 || !x || !y || !out)
    return NNCC_K_EINVAL;
  double s = 0;
#pragma omp parallel for reduction(+ : s) schedule(static)
  for (int64_t i = 0; i < N * C; ++i)
    s += bce_logits_elem<double>(x[i], y[i], pw ? double(pw[i % C]) : 1.0);
  *out = T(s / double(N * C));
  return NNCC_K_OK;
}

} // namespace

#define NNCC_DEFINE_LOSS(S, T)                                                 \
  extern "C" int nncc_mse_loss_##S(int64_t n, const T *a, const T *b, T *o) {  \
    return mse<T>(n, a, b, o);                                                 \
  }                                                                            \
  extern "C" int nncc_cross_entropy_##S(int64_t N, int64_t C, const T *l,      \
                                        const int64_t *t, int64_t ig, T *o) {  \
    return crossEntropy<T>(N, C, l, t, ig, o);                                 \
  }                                                                            \
  extern "C" int nncc_bce_with_logits_##S(int64_t N, int64_t C, const T *x,    \
                                          const T *y, const T *pw, T *o) {     \
    return bceLogits<T>(N, C, x, y, pw, o);                                    \
  }

NNCC_DEFINE_LOSS(f32, float)
NNCC_DEFINE_LOSS(f64, double)
