//===- Optim.cpp - fused optimizer kernels and the global gradient norm ---===//
//
// One pass per parameter tensor: clipping scale, state update, bias
// correction (Adam), decoupled or L2 weight decay, parameter update.
//
//===----------------------------------------------------------------------===//
#include "nncc/Kernels/Kernels.h"
#include "nncc/Kernels/OptimMath.h"

#include <cmath>

using namespace nncc::kernels;

namespace {

template <typename T> double sumSquares(int64_t n, const T *g) {
  double s = 0.0;
#pragma omp parallel for reduction(+ : s) if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i)
    s += double(g[i]) * double(g[i]);
  return s;
}

template <typename T>
int sgdStep(int64_t n, T *p, const T *g, T *buf, double gscale, double lr, double momentum,
            double wd, int nesterov, int first) {
  if (n < 0 || (n && (!p || !g || (momentum != 0.0 && !buf))))
    return NNCC_K_EINVAL;
  const T s = T(gscale), l = T(lr), mo = T(momentum), w = T(wd);
#pragma omp parallel for if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) {
    T gi = gscale == 1.0 ? g[i] : g[i] * s;
    T none = T(0);
    sgdUpdate<T>(p[i], gi, buf ? buf[i] : none, l, buf ? mo : T(0), w, nesterov != 0,
                 first != 0);
  }
  return NNCC_K_OK;
}

template <typename T>
int adamStep(int64_t n, T *p, const T *g, T *m, T *v, double gscale, double lr, double beta1,
             double beta2, double eps, double wd, int decoupled, int64_t step) {
  if (n < 0 || step < 1 || (n && (!p || !g || !m || !v)))
    return NNCC_K_EINVAL;
  // Bias corrections in double, as torch computes them on the host.
  const T bc1 = T(1.0 - std::pow(beta1, double(step)));
  const T bc2 = T(1.0 - std::pow(beta2, double(step)));
  const T s = T(gscale), l = T(lr), b1 = T(beta1), b2 = T(beta2), e = T(eps), w = T(wd);
#pragma omp parallel for if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) {
    T gi = gscale == 1.0 ? g[i] : g[i] * s;
    adamUpdate<T>(p[i], gi, m[i], v[i], l, b1, b2, e, w, decoupled != 0, bc1, bc2);
  }
  return NNCC_K_OK;
}

template <typename T>
int gradMean(int64_t n, T *mean, const T *g, double alpha, int first) {
  if (n < 0 || (n && (!mean || !g)) || !(alpha > 0.0 && alpha <= 1.0))
    return NNCC_K_EINVAL;
  const T a = T(alpha);
#pragma omp parallel for if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) {
    if (first)
      mean[i] = g[i];
    else
      runningMeanUpdate<T>(mean[i], g[i], a);
  }
  return NNCC_K_OK;
}

} // namespace

extern "C" {
double nncc_sum_squares_f32(int64_t n, const float *g) { return sumSquares(n, g); }
double nncc_sum_squares_f64(int64_t n, const double *g) { return sumSquares(n, g); }
int nncc_sgd_step_f32(int64_t n, float *p, const float *g, float *buf, double gscale,
                      double lr, double momentum, double wd, int nesterov, int first) {
  return sgdStep(n, p, g, buf, gscale, lr, momentum, wd, nesterov, first);
}
int nncc_sgd_step_f64(int64_t n, double *p, const double *g, double *buf, double gscale,
                      double lr, double momentum, double wd, int nesterov, int first) {
  return sgdStep(n, p, g, buf, gscale, lr, momentum, wd, nesterov, first);
}
int nncc_adam_step_f32(int64_t n, float *p, const float *g, float *m, float *v,
                       double gscale, double lr, double beta1, double beta2, double eps,
                       double wd, int decoupled, int64_t step) {
  return adamStep(n, p, g, m, v, gscale, lr, beta1, beta2, eps, wd, decoupled, step);
}
int nncc_adam_step_f64(int64_t n, double *p, const double *g, double *m, double *v,
                       double gscale, double lr, double beta1, double beta2, double eps,
                       double wd, int decoupled, int64_t step) {
  return adamStep(n, p, g, m, v, gscale, lr, beta1, beta2, eps, wd, decoupled, step);
}
int nncc_grad_mean_f32(int64_t n, float *mean, const float *g, double alpha, int first) {
  return gradMean(n, mean, g, alpha, first);
}
int nncc_grad_mean_f64(int64_t n, double *mean, const double *g, double alpha, int first) {
  return gradMean(n, mean, g, alpha, first);
}
}
