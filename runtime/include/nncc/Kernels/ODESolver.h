//===- ODESolver.h - Runge-Kutta tableaus and the ODE solver loop -*- C++ -*-===//
//
// The explicit Runge-Kutta methods of nnk.ode_solve / nnk.ode_rnn:
//   euler   1 stage
//   rk4     classic (c = 0, 1/2, 1/2, 1; b = 1/6, 1/3, 1/3, 1/6)
//   dopri5  Dormand-Prince 5(4), 7 stages; fifth-order solution, the
//           embedded fourth-order one gives the error estimate.
// The tableaus (ode_stages/ode_c/ode_a/ode_b/ode_e) and the adaptive step
// controller (ode_error_ratio, ode_step_accepted, ode_step_factor,
// ode_first_step) are NNCC_HD functions (ODE.cuh's error-norm kernel uses
// them too). `ode_integrate_with` is the solver loop of both targets,
// written once over an element-loop backend (OdeHostOps here, the CUDA
// launches of ODE.cuh's OdeDeviceOps): per stage ONE evaluation of the
// dynamics (a callback: the generated code of the op's region), then ONE
// fused loop forming the next stage input h + dt*sum_j a_sj k_j; after the
// last stage one fused loop for the update (dopri5 adaptive: the error and
// its norm in one loop). `ode_integrate` is the CPU's solve.
//
// The integration variable s runs from s0 to s1. Each state row r (rows of
// `rowLen` elements) may scale the step: the row integrates with dt_r =
// ds * rowScale[r] (ode_rnn integrates every row over s in [0, 1] with
// rowScale = t_i - t_{i-1} of that row, which is a reparameterisation of
// dh/dt = f(t, h); rowScale NULL means 1 and s is the time itself).
//
// Adaptive dopri5 (steps == 0): error norm
//   sqrt(mean((err / (atol + rtol*max(|h|, |h_new|)))^2))   over all elements
// accept if <= 1; ds <- ds * clamp(0.9 * norm^(-1/5), 0.2, 10); the first ds
// is (s1 - s0)/100 and the last step is clipped to s1 (torchdiffeq's dopri5
// with a fixed first step). k7 of an accepted step is k1 of the next (FSAL):
// the same value the dynamics would return, one evaluation saved per step.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_ODESOLVER_H
#define NNCC_KERNELS_ODESOLVER_H

#include "nncc/Kernels/Common.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

namespace nncc {
namespace kernels {

/// Method codes (NNCC_ODE_* of Codes.h).
enum OdeMethod : int {
  OdeEuler = NNCC_ODE_EULER,
  OdeRk4 = NNCC_ODE_RK4,
  OdeDopri5 = NNCC_ODE_DOPRI5
};

/// Failure codes of ode_integrate (< 0; > 0 is the callback's status).
enum : int {
  OdeStepUnderflow = -1, // adaptive step size fell below 1e-12 of the span
  OdeTooManySteps = -2,  // more than kOdeMaxSteps attempts
  OdeBadMethod = -3
};
constexpr int64_t kOdeMaxSteps = 1000000;

inline const char *ode_error_string(int rc) {
  switch (rc) {
  case OdeStepUnderflow:
    return "dopri5: the adaptive step size underflowed (the dynamics are stiff, "
           "diverge or produce NaN/Inf; loosen rtol/atol or use fixed steps)";
  case OdeTooManySteps:
    return "dopri5: more than 1000000 step attempts (loosen rtol/atol or use fixed "
           "steps)";
  case OdeBadMethod:
    return "unknown ODE method";
  default:
    return "ODE solve failed";
  }
}

NNCC_HD int ode_stages(int method) {
  return method == OdeEuler ? 1 : method == OdeRk4 ? 4 : 7;
}

/// Butcher tableau entries: c_s, a_sj (j < s), b_j, and e_j = b_j - b*_j.
NNCC_HD double ode_c(int method, int s) {
  if (method == OdeRk4) {
    const double c[4] = {0.0, 0.5, 0.5, 1.0};
    return c[s];
  }
  if (method == OdeDopri5) {
    const double c[7] = {0.0, 1.0 / 5, 3.0 / 10, 4.0 / 5, 8.0 / 9, 1.0, 1.0};
    return c[s];
  }
  return 0.0;
}

NNCC_HD double ode_a(int method, int s, int j) {
  if (method == OdeRk4) {
    // rows 1..3: (1/2), (0, 1/2), (0, 0, 1)
    if (s == 1 && j == 0)
      return 0.5;
    if (s == 2 && j == 1)
      return 0.5;
    if (s == 3 && j == 2)
      return 1.0;
    return 0.0;
  }
  if (method == OdeDopri5) {
    const double a[7][6] = {
        {0, 0, 0, 0, 0, 0},
        {1.0 / 5, 0, 0, 0, 0, 0},
        {3.0 / 40, 9.0 / 40, 0, 0, 0, 0},
        {44.0 / 45, -56.0 / 15, 32.0 / 9, 0, 0, 0},
        {19372.0 / 6561, -25360.0 / 2187, 64448.0 / 6561, -212.0 / 729, 0, 0},
        {9017.0 / 3168, -355.0 / 33, 46732.0 / 5247, 49.0 / 176, -5103.0 / 18656, 0},
        {35.0 / 384, 0, 500.0 / 1113, 125.0 / 192, -2187.0 / 6784, 11.0 / 84}};
    return a[s][j];
  }
  return 0.0;
}

NNCC_HD double ode_b(int method, int j) {
  if (method == OdeEuler)
    return 1.0;
  if (method == OdeRk4) {
    const double b[4] = {1.0 / 6, 1.0 / 3, 1.0 / 3, 1.0 / 6};
    return b[j];
  }
  const double b[7] = {35.0 / 384, 0, 500.0 / 1113, 125.0 / 192, -2187.0 / 6784, 11.0 / 84, 0};
  return b[j];
}

/// dopri5: b_j - b*_j (fifth minus embedded fourth order weights).
NNCC_HD double ode_e(int j) {
  const double e[7] = {35.0 / 384 - 5179.0 / 57600,
                       0,
                       500.0 / 1113 - 7571.0 / 16695,
                       125.0 / 192 - 393.0 / 640,
                       -2187.0 / 6784 + 92097.0 / 339200,
                       11.0 / 84 - 187.0 / 2100,
                       -1.0 / 40};
  return e[j];
}

/// dopri5's scaled error of one element: e / (atol + rtol max(|h|, |h_new|)).
/// The error norm is sqrt(mean(ratio^2)) over all elements.
NNCC_HD double ode_error_ratio(double e, double h, double h_new, double atol,
                               double rtol) {
  const double a = fabs(h), b = fabs(h_new);
  return e / (atol + rtol * (a > b ? a : b));
}

/// A dopri5 step is accepted iff its error norm is <= 1 (never for NaN).
NNCC_HD bool ode_step_accepted(double norm) { return norm <= 1.0; }

/// The step-size factor after a step with error `norm`:
/// clamp(0.9 norm^(-1/5), 0.2, 10); 10 for norm 0, 0.2 for NaN or inf.
NNCC_HD double ode_step_factor(double norm) {
  if (!(norm == norm) || isinf(norm))
    return 0.2;
  if (norm == 0.0)
    return 10.0;
  const double f = 0.9 * pow(norm, -0.2);
  return f < 0.2 ? 0.2 : (f > 10.0 ? 10.0 : f);
}

/// dopri5's first step: 1/100 of the span.
NNCC_HD double ode_first_step(double span) { return span / 100.0; }

/// No-op observer of accepted steps.
struct OdeIgnoreSteps {
  void operator()(double, double) const {}
};

/// The element loops of the ODE drivers. Each driver (ode_integrate_with
/// below, nncc::grad::ode_grad_with in GradKernels.h) is written once, for
/// both targets; a target gives it these loops: OdeHostOps (the CPU's,
/// here) or cuda::OdeDeviceOps (ODE.cuh: one kernel per loop with the same
/// arithmetic, so both targets take the same steps). sc_i is
/// rowScale[i / rowLen], or 1 without row scales. Every member returns 0
/// or a failure status that the driver returns.
template <typename T> struct OdeHostOps {
  /// y[i] = (T)(h[i] + ds sc_i sum_{j < count, c_j != 0} c_j k_j[i]),
  /// double arithmetic, one rounding; y may be h (each element reads only
  /// its own h[i]).
  int lincomb(int64_t n, int64_t rowLen, const T *rowScale, double ds, const double *c,
              T *const *k, int count, const T *h, T *y) const {
#ifdef _OPENMP // the compiler includes this header too, for the tableaus
#pragma omp parallel for schedule(static) if (n > 16384)
#endif
    for (int64_t i = 0; i < n; ++i) {
      double acc = 0.0;
      for (int j = 0; j < count; ++j)
        if (c[j] != 0.0)
          acc += c[j] * (double)k[j][i];
      const double sc = rowScale ? (double)rowScale[i / rowLen] : 1.0;
      y[i] = (T)((double)h[i] + ds * sc * acc);
    }
    return 0;
  }
  /// y[i] = [y[i] +] (T)(ds sc_i c x[i]) (double product, one rounding):
  /// the row scaling, negation, slope adjoints and accumulations of
  /// ode_grad; y may be x.
  int axpy(int64_t n, int64_t rowLen, const T *rowScale, double ds, double c, const T *x, T *y,
           bool accumulate) const {
    for (int64_t i = 0; i < n; ++i) {
      const double sc = rowScale ? (double)rowScale[i / rowLen] : 1.0;
      const T v = (T)(ds * sc * c * (double)x[i]);
      if (accumulate)
        y[i] += v;
      else
        y[i] = v;
    }
    return 0;
  }
  /// dopri5's error norm of a step from h to hn: e_i = ds sc_i sum_j
  /// ode_e(j) k_j[i] in double (rounded into err when given), norm =
  /// sqrt(mean(ode_error_ratio(e_i, h[i], hn[i])^2)), 0 without elements.
  int errorNorm(int64_t n, int64_t rowLen, const T *rowScale, double ds, T *const *k,
                const T *h, const T *hn, T *err, double atol, double rtol, double &norm) const {
    double e[7];
    for (int j = 0; j < 7; ++j)
      e[j] = ode_e(j);
    double sq = 0.0;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) reduction(+ : sq) if (n > 16384)
#endif
    for (int64_t i = 0; i < n; ++i) {
      double acc = 0.0;
      for (int j = 0; j < 7; ++j)
        if (e[j] != 0.0)
          acc += e[j] * (double)k[j][i];
      const double sc = rowScale ? (double)rowScale[i / rowLen] : 1.0;
      const double ei = ds * sc * acc;
      if (err)
        err[i] = (T)ei;
      const double q = ode_error_ratio(ei, (double)h[i], (double)hn[i], atol, rtol);
      sq += q * q;
    }
    norm = n > 0 ? sqrt(sq / (double)n) : 0.0;
    return 0;
  }
  int copy(T *dst, const T *src, int64_t n) const {
    if (n > 0 && dst != src)
      memcpy(dst, src, sizeof(T) * (size_t)n);
    return 0;
  }
  int zero(T *dst, int64_t n) const {
    if (n > 0)
      memset(dst, 0, sizeof(T) * (size_t)n);
    return 0;
  }
  // The ODE-RNN backward's loops (nncc::grad::ode_rnn_grad_with).
  /// B rows of `cols` elements from src (row stride srcStride) to dst.
  int rows(int64_t B, T *dst, int64_t dstStride, const T *src, int64_t srcStride,
           int64_t cols) const {
    for (int64_t b = 0; b < B; ++b)
      if (cols > 0)
        memcpy(dst + b * dstStride, src + b * srcStride, sizeof(T) * (size_t)cols);
    return 0;
  }
  /// Segment i > 0: tprev[b] = times[b, i-1], delta[b] = times[b, i] -
  /// tprev[b] (times [B, Tn]).
  int interval(int64_t B, int64_t Tn, int64_t i, const T *times, T *tprev, T *delta) const {
    for (int64_t b = 0; b < B; ++b) {
      tprev[b] = times[b * Tn + i - 1];
      delta[b] = times[b * Tn + i] - tprev[b];
    }
    return 0;
  }
  /// Each row's time at integration variable s in [0, 1]:
  /// t[b] = (T)(tprev[b] + s delta[b]) in double.
  int rowTimes(int64_t B, double s, const T *tprev, const T *delta, T *t) const {
    for (int64_t b = 0; b < B; ++b)
      t[b] = (T)((double)tprev[b] + s * (double)delta[b]);
    return 0;
  }
  /// The cell's adjoint at observation i: a[b, j] = dhs[b, i, j] +
  /// carry[b, j] (dhs [B, Tn, H]).
  int adjointIn(int64_t B, int64_t Tn, int64_t H, int64_t i, const T *dhs, const T *carry,
                T *a) const {
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < H; ++j)
        a[b * H + j] = dhs[(b * Tn + i) * H + j] + carry[b * H + j];
    return 0;
  }
  /// `count` doubles of host memory for the driver's own bookkeeping (the
  /// accepted steps of an adaptive solve): `inWorkspace`, the place the
  /// workspace layout gives them (the CPU's workspace is host memory).
  double *hostDoubles(int /*slot*/, void *inWorkspace, int64_t /*count*/) const {
    return static_cast<double *>(inWorkspace);
  }
};

/// The solver loop of both targets. h [n] evolves in place. k: `stages`
/// slots of n elements, stageIn: n, err: n (dopri5 adaptive only, else may
/// be null), all where `ops` computes. dyn(s, in, out) -> int: evaluates
/// the dynamics at integration variable s (the callback maps it to each
/// row's time) from `in` into `out`; nonzero stops the solve and is
/// returned. *nSteps receives the number of accepted steps (may be null);
/// onAccept(s, ds) is called for each accepted step from s of size ds, in
/// order.
template <typename T, typename Ops, typename Dyn, typename OnAccept = OdeIgnoreSteps>
int ode_integrate_with(Ops &ops, int method, int64_t steps, double rtol, double atol,
                       int64_t n, int64_t rowLen, const T *rowScale, double s0, double s1, T *h,
                       T *const *kIn, T *stageIn, T *err, Dyn &&dyn, int64_t *nSteps,
                       OnAccept &&onAccept = OnAccept()) {
  if (method < OdeEuler || method > OdeDopri5)
    return OdeBadMethod;
  const int S = ode_stages(method);
  T *k[7];
  for (int s = 0; s < S; ++s)
    k[s] = kIn[s];
  if (nSteps)
    *nSteps = 0;
  if (rowLen <= 0)
    rowLen = 1;

  // One step of size ds from s: stages 1..S (k1 given when haveK1), each
  // stage input h + ds * scale_r * sum_{j<s} a_sj k_j in one fused loop.
  auto stages = [&](double s, double ds, bool haveK1) -> int {
    for (int st = 0; st < S; ++st) {
      const T *in = h;
      if (st > 0) {
        double coef[7];
        for (int j = 0; j < st; ++j)
          coef[j] = ode_a(method, st, j);
        if (int rc = ops.lincomb(n, rowLen, rowScale, ds, coef, k, st, h, stageIn))
          return rc;
        in = stageIn;
      } else if (haveK1) {
        continue;
      }
      if (int rc = dyn(s + ode_c(method, st) * ds, in, k[st]))
        return rc;
    }
    return 0;
  };

  if (steps > 0 || method != OdeDopri5) {
    if (steps <= 0)
      steps = 1;
    const double ds = (s1 - s0) / (double)steps;
    double b[7];
    for (int j = 0; j < S; ++j)
      b[j] = ode_b(method, j);
    for (int64_t it = 0; it < steps; ++it) {
      const double s = s0 + (double)it * ds;
      if (int rc = stages(s, ds, false))
        return rc;
      if (int rc = ops.lincomb(n, rowLen, rowScale, ds, b, k, S, h, h)) // in place
        return rc;
      if (nSteps)
        ++*nSteps;
      onAccept(s, ds);
    }
    return 0;
  }

  // Adaptive Dormand-Prince 5(4).
  const double span = s1 - s0;
  if (span == 0.0)
    return 0;
  const double dir = span > 0 ? 1.0 : -1.0;
  double s = s0, ds = ode_first_step(span);
  bool haveK1 = false;
  for (int64_t attempt = 0;; ++attempt) {
    if ((s1 - s) * dir <= 1e-12 * fabs(span))
      return 0;
    if (attempt >= kOdeMaxSteps)
      return OdeTooManySteps;
    if ((s + ds - s1) * dir > 0)
      ds = s1 - s;
    if (fabs(ds) < 1e-12 * fabs(span))
      return OdeStepUnderflow;
    if (int rc = stages(s, ds, haveK1))
      return rc;
    haveK1 = true;
    // stageIn holds the 7th stage input = the fifth-order solution.
    double norm = 0.0;
    if (int rc = ops.errorNorm(n, rowLen, rowScale, ds, k, h, stageIn, err, atol, rtol, norm))
      return rc;
    if (ode_step_accepted(norm)) {
      if (int rc = ops.copy(h, stageIn, n))
        return rc;
      onAccept(s, ds);
      s += ds;
      T *t = k[0]; // FSAL: k7 = f(s + ds, y5) is the next k1
      k[0] = k[6];
      k[6] = t;
      if (nSteps)
        ++*nSteps;
    }
    ds *= ode_step_factor(norm);
  }
}

/// The CPU solve: ode_integrate_with on host memory.
template <typename T, typename Dyn, typename OnAccept = OdeIgnoreSteps>
int ode_integrate(int method, int64_t steps, double rtol, double atol, int64_t n,
                  int64_t rowLen, const T *rowScale, double s0, double s1, T *h,
                  T *const *kIn, T *stageIn, T *err, Dyn &&dyn, int64_t *nSteps,
                  OnAccept &&onAccept = OnAccept()) {
  OdeHostOps<T> ops;
  return ode_integrate_with<T>(ops, method, steps, rtol, atol, n, rowLen, rowScale, s0, s1, h,
                               kIn, stageIn, err, static_cast<Dyn &&>(dyn), nSteps,
                               static_cast<OnAccept &&>(onAccept));
}

/// The ODE-RNN forward (nnk.ode_rnn, Rubanova et al. 2019) of both
/// targets: the first observation is folded in at t_0 without evolution;
/// then per observation i > 0 every row evolves over its own
/// [t_{i-1}, t_i] (s in [0, 1], row scale delta = t_i - t_{i-1}), then the
/// cell. x [B, Tn, I], times [B, Tn], h0 [n] or null (zeros), hs
/// [B, Tn, H] the states after each cell. work: K + 2 slots of n = B H
/// elements (the solver's S stage slots, its stage input and, adaptive,
/// its error; h at slot K, the cell's output at K + 1); xt [B, I] the
/// cell's input; delta, tprev [B]; tcur [B] the rows' times, set before
/// each dyn call (null: the dynamics do not read the time). dyn(s, in,
/// out) -> int; cell() -> int maps (xt, work slot K) to slot K + 1.
template <typename T, typename Ops, typename Dyn, typename Cell>
int ode_rnn_with(Ops &ops, int method, int64_t steps, double rtol, double atol, int64_t B,
                 int64_t Tn, int64_t I, int64_t H, const T *x, const T *times, const T *h0,
                 T *hs, T *work, int64_t K, T *xt, T *delta, T *tprev, T *tcur, Dyn &&dyn,
                 Cell &&cell) {
  if (method < OdeEuler || method > OdeDopri5)
    return OdeBadMethod;
  const int S = ode_stages(method);
  const bool adaptive = steps <= 0 && method == OdeDopri5;
  const int64_t n = B * H;
  T *k[7];
  for (int s = 0; s < S; ++s)
    k[s] = work + (int64_t)s * n;
  T *h = work + K * n, *hNext = work + (K + 1) * n;
  auto dynT = [&](double s, const T *in, T *out) -> int {
    if (tcur)
      if (int rc = ops.rowTimes(B, s, tprev, delta, tcur))
        return rc;
    return dyn(s, in, out);
  };
  if (int rc = h0 ? ops.copy(h, h0, n) : ops.zero(h, n))
    return rc;
  for (int64_t i = 0; i < Tn; ++i) {
    int rc = 0;
    if (i > 0 && ((rc = ops.interval(B, Tn, i, times, tprev, delta)) ||
                  (rc = ode_integrate_with<T>(ops, method, steps, rtol, atol, n, H, delta, 0.0,
                                              1.0, h, k, work + S * n,
                                              adaptive ? work + (S + 1) * n : (T *)nullptr,
                                              dynT, (int64_t *)nullptr))))
      return rc;
    if ((rc = ops.rows(B, xt, I, x + i * I, Tn * I, I)) || (rc = cell()) ||
        (rc = ops.copy(h, hNext, n)) || (rc = ops.rows(B, hs + i * H, Tn * H, h, H, H)))
      return rc;
  }
  return 0;
}

/// The CPU's ODE-RNN forward: ode_rnn_with on host memory.
template <typename T, typename Dyn, typename Cell>
int ode_rnn(int method, int64_t steps, double rtol, double atol, int64_t B, int64_t Tn,
            int64_t I, int64_t H, const T *x, const T *times, const T *h0, T *hs, T *work,
            int64_t K, T *xt, T *delta, T *tprev, T *tcur, Dyn &&dyn, Cell &&cell) {
  OdeHostOps<T> ops;
  return ode_rnn_with<T>(ops, method, steps, rtol, atol, B, Tn, I, H, x, times, h0, hs, work, K,
                         xt, delta, tprev, tcur, static_cast<Dyn &&>(dyn),
                         static_cast<Cell &&>(cell));
}

} // namespace kernels
} // namespace nncc

#endif // NNCC_KERNELS_ODESOLVER_H
