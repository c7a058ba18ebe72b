/*
 * GradKernels.h - host helpers of the generated training code that have no
 * libnncc_kernels counterpart (docs/autodiff.md "Execution"): the broadcast
 * of a reduction's adjoint and the ODE gradient loops (adjoint method and
 * backpropagation through fixed solver steps) that call back into the
 * emitted region lambdas. Recurrent, attention, layer-norm, embedding and
 * loss gradients are the fused kernels of libnncc_kernels (Kernels.h).
 */
#ifndef NNCC_RUNTIME_GRADKERNELS_H
#define NNCC_RUNTIME_GRADKERNELS_H

#include "nncc/Kernels/ODESolver.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace nncc {
namespace grad {

/* out[i] = dy[i with the masked dims dropped] (/ count when mean). */
template <typename T>
void broadcast_axes(int rank, const int64_t *shape, uint32_t mask, int mean, const T *dy,
                    T *out) {
  int64_t n = 1, m = 1;
  for (int d = 0; d < rank; ++d) {
    n *= shape[d];
    if (!(mask >> d & 1))
      m *= shape[d];
  }
  double scale = mean && m ? (double)m / (double)n : 1.0;
  std::vector<int64_t> idx(rank, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t j = 0;
    for (int d = 0; d < rank; ++d)
      if (!(mask >> d & 1))
        j = j * shape[d] + idx[d];
    out[i] = (T)(dy[j] * scale);
    for (int d = rank - 1; d >= 0; --d) {
      if (++idx[d] < shape[d])
        break;
      idx[d] = 0;
    }
  }
}

/* ---- ODE gradients (nnk.ode_solve_grad / nnk.ode_rnn_grad) ----
 * dyn(s, h, out) -> int: the dynamics at integration variable s (the
 * caller maps s to each row's time); vjp(s, h, a, out_h, out_theta) -> int:
 * aᵀ∂f/∂h into out_h [n] and aᵀ∂f/∂θ into out_theta [P] (overwritten).
 * Rows of rowLen elements may scale the step (dt_r = ds·rowScale[r], as in
 * ode_integrate; NULL = 1). h: h(s1) with adjoint, else h(s0). a: in
 * dL/dh(s1), out dL/dh(s0). gtheta [P] is accumulated (+=). */
inline const char *ode_grad_error_string(int rc) {
  return nncc::kernels::ode_error_string(rc);
}

template <typename T, typename Dyn, typename Vjp>
int ode_grad(int method, int64_t steps, double rtol, double atol, int adjoint, int64_t n,
             int64_t rowLen, const T *rowScale, double s0, double s1, const T *h, T *a,
             int64_t P, T *gtheta, Dyn &&dyn, Vjp &&vjp) {
  using namespace nncc::kernels;
  if (method < OdeEuler || method > OdeDopri5)
    return OdeBadMethod;
  if (rowLen <= 0)
    rowLen = 1;
  const int S = ode_stages(method);
  auto sc = [&](int64_t i) { return rowScale ? (double)rowScale[i / rowLen] : 1.0; };
  if (adjoint) {
    // Augmented state [h, a, a_θ] integrated from s1 back to s0 with the
    // same method and steps (Chen et al. 2018).
    const int64_t m = 2 * n + P;
    std::vector<T> aug(m, T(0)), kb((size_t)S * m), stage(m), err(m), sa(n);
    std::memcpy(aug.data(), h, sizeof(T) * n);
    std::memcpy(aug.data() + n, a, sizeof(T) * n);
    T *k[7];
    for (int st = 0; st < S; ++st)
      k[st] = kb.data() + (size_t)st * m;
    auto f = [&](double s, const T *in, T *out) -> int {
      if (int rc = dyn(s, in, out))
        return rc;
      for (int64_t i = 0; i < n; ++i) {
        out[i] = (T)((double)out[i] * sc(i));
        sa[i] = (T)((double)in[n + i] * sc(i));
      }
      if (int rc = vjp(s, in, sa.data(), out + n, out + 2 * n))
        return rc;
      for (int64_t i = n; i < m; ++i)
        out[i] = -out[i];
      return 0;
    };
    int rc = ode_integrate<T>(method, steps, rtol, atol, m, m, (const T *)nullptr, s1, s0,
                              aug.data(), k, stage.data(), err.data(), f, (int64_t *)nullptr);
    if (rc)
      return rc;
    std::memcpy(a, aug.data() + n, sizeof(T) * n);
    for (int64_t i = 0; i < P; ++i)
      gtheta[i] += aug[2 * n + i];
    return 0;
  }
  // Through the steps: the accepted steps (s_i, ds_i) — fixed steps, or
  // those of the adaptive dopri5 solve run again (its step sizes are then
  // constants of the discrete map: no gradient flows through the step-size
  // controller) — then the states, then per step (last first) the stages'
  // inputs and backpropagation through the stage combinations.
  std::vector<double> stepS, stepDs;
  if (steps <= 0 && method == OdeDopri5) {
    std::vector<T> hh(h, h + n), kb((size_t)S * n), stage(n), err(n);
    T *k[7];
    for (int st = 0; st < S; ++st)
      k[st] = kb.data() + (size_t)st * n;
    int rc = ode_integrate<T>(method, 0, rtol, atol, n, rowLen, rowScale, s0, s1,
                              hh.data(), k, stage.data(), err.data(), dyn,
                              (int64_t *)nullptr, [&](double s, double ds) {
                                stepS.push_back(s);
                                stepDs.push_back(ds);
                              });
    if (rc)
      return rc;
  } else {
    if (steps <= 0)
      steps = 1;
    const double ds = (s1 - s0) / (double)steps;
    for (int64_t it = 0; it < steps; ++it) {
      stepS.push_back(s0 + (double)it * ds);
      stepDs.push_back(ds);
    }
  }
  const int64_t nSteps = (int64_t)stepS.size();
  // dopri5's last stage (b = 0) only serves FSAL: the step map needs S - 1.
  const int used = ode_b(method, S - 1) == 0.0 ? S - 1 : S;
  std::vector<T> Hs((size_t)(nSteps + 1) * n), Y((size_t)S * n), K((size_t)S * n);
  std::vector<T> kbar((size_t)S * n), hbar(n), ybar(n), th(P);
  std::memcpy(Hs.data(), h, sizeof(T) * n);
  // Stage inputs Y_s and slopes K_s of the step of size ds from hs at s;
  // the same arithmetic as ode_integrate's combine.
  auto stagesOf = [&](double s, double ds, const T *hs) -> int {
    for (int st = 0; st < used; ++st) {
      T *y = Y.data() + (size_t)st * n;
      for (int64_t i = 0; i < n; ++i) {
        double acc = 0.0;
        for (int j = 0; j < st; ++j) {
          double c = ode_a(method, st, j);
          if (c != 0.0)
            acc += c * (double)K[(size_t)j * n + i];
        }
        y[i] = st == 0 ? hs[i] : (T)((double)hs[i] + ds * sc(i) * acc);
      }
      if (int rc = dyn(s + ode_c(method, st) * ds, y, K.data() + (size_t)st * n))
        return rc;
    }
    return 0;
  };
  for (int64_t it = 0; it < nSteps; ++it) {
    const double s = stepS[it], ds = stepDs[it];
    const T *hs = Hs.data() + (size_t)it * n;
    if (int rc = stagesOf(s, ds, hs))
      return rc;
    T *hn = Hs.data() + (size_t)(it + 1) * n;
    for (int64_t i = 0; i < n; ++i) {
      double acc = 0.0;
      for (int j = 0; j < used; ++j) {
        double b = ode_b(method, j);
        if (b != 0.0)
          acc += b * (double)K[(size_t)j * n + i];
      }
      hn[i] = (T)((double)hs[i] + ds * sc(i) * acc);
    }
  }
  for (int64_t it = nSteps - 1; it >= 0; --it) {
    const double s = stepS[it], ds = stepDs[it];
    if (int rc = stagesOf(s, ds, Hs.data() + (size_t)it * n))
      return rc;
    for (int j = 0; j < used; ++j)
      for (int64_t i = 0; i < n; ++i)
        kbar[(size_t)j * n + i] = (T)(ds * sc(i) * ode_b(method, j) * (double)a[i]);
    for (int64_t i = 0; i < n; ++i)
      hbar[i] = a[i];
    for (int st = used - 1; st >= 0; --st) {
      if (int rc = vjp(s + ode_c(method, st) * ds, Y.data() + (size_t)st * n,
                       kbar.data() + (size_t)st * n, ybar.data(), th.data()))
        return rc;
      for (int64_t i = 0; i < P; ++i)
        gtheta[i] += th[i];
      for (int64_t i = 0; i < n; ++i)
        hbar[i] += ybar[i];
      for (int j = 0; j < st; ++j) {
        double c = ode_a(method, st, j);
        if (c != 0.0)
          for (int64_t i = 0; i < n; ++i)
            kbar[(size_t)j * n + i] += (T)(ds * sc(i) * c * (double)ybar[i]);
      }
    }
    std::memcpy(a, hbar.data(), sizeof(T) * n);
  }
  return 0;
}

} // namespace grad
} // namespace nncc

#endif
