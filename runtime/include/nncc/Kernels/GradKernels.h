/*
 * GradKernels.h - host helpers of the generated training code that have no
 * libnncc_kernels counterpart (docs/autodiff.md "Execution"): the broadcast
 * of a reduction's adjoint and the ODE gradient loops (adjoint method and
 * backpropagation through the solver steps) that call back into the
 * emitted region lambdas; their scratch is an arena workspace
 * (nncc_ode_grad_workspace_size). Recurrent, attention, layer-norm, embedding and
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
 * dL/dh(s1), out dL/dh(s0). gtheta [P] is accumulated (+=).
 *
 * Scratch: one workspace of nncc_ode_grad_workspace_size bytes (Kernels.h;
 * an arena slot of the buffer plan), carved by ode_grad_layout; nothing is
 * allocated on the heap. Adaptive dopri5 through the steps keeps one state
 * per accepted step: at most maxSteps (the op's `max_steps`), more is the
 * error OdeGradTooManySteps. */
enum : int {
  OdeGradTooManySteps = -4 // adaptive dopri5 through the steps: > max_steps accepted
};

inline const char *ode_grad_error_string(int rc) {
  if (rc == OdeGradTooManySteps)
    return "dopri5 through the steps (adjoint = false) took more accepted steps than "
           "max_steps; the backward keeps one state per accepted step: raise max_steps, "
           "loosen rtol/atol, use fixed steps or adjoint = true";
  return nncc::kernels::ode_error_string(rc);
}

/// Byte offsets of ode_grad's scratch in its workspace (each piece 64-byte
/// aligned) and the total; nncc_ode_grad_workspace_size returns `bytes`.
/// adjoint: the augmented state [h, a, a_θ] (m = 2n + P), its S stage slots,
/// stage input, error, and the scaled adjoint (n). Through the steps: the
/// accepted steps' (s, ds) (adaptive only, maxSteps each, doubles), the
/// states H [N + 1, n] (N = steps, or maxSteps adaptive), the stage inputs
/// Y and slopes K [S, n], their adjoints kbar [S, n], hbar, ybar [n], θ̄ [P].
/// The adaptive re-solve's own scratch (h, S slots, stage input, error:
/// (S + 3) n) reuses Y..ybar ((3S + 2) n), free at that point.
struct OdeGradLayout {
  int64_t bytes = 0;
  int64_t aug = 0, kb = 0, stage = 0, err = 0, sa = 0;               // adjoint
  int64_t stepS = 0, stepDs = 0, Hs = 0, Y = 0, K = 0, kbar = 0, hbar = 0, // steps
      ybar = 0, th = 0;
};

inline OdeGradLayout ode_grad_layout(int method, int64_t steps, int64_t maxSteps, int adjoint,
                                     int64_t n, int64_t P, int64_t elemSize) {
  OdeGradLayout L;
  const int64_t S = nncc::kernels::ode_stages(method);
  auto take = [&](int64_t count, int64_t size) {
    const int64_t at = L.bytes;
    L.bytes += (count * size + 63) / 64 * 64;
    return at;
  };
  if (n < 0)
    n = 0;
  if (P < 0)
    P = 0;
  if (adjoint) {
    const int64_t m = 2 * n + P;
    L.aug = take(m, elemSize);
    L.kb = take(S * m, elemSize);
    L.stage = take(m, elemSize);
    L.err = take(m, elemSize);
    L.sa = take(n, elemSize);
    return L;
  }
  const bool adaptive = steps <= 0 && method == nncc::kernels::OdeDopri5;
  const int64_t N = adaptive ? (maxSteps > 0 ? maxSteps : 0) : (steps > 0 ? steps : 1);
  if (adaptive) {
    L.stepS = take(N, (int64_t)sizeof(double));
    L.stepDs = take(N, (int64_t)sizeof(double));
  }
  L.Hs = take((N + 1) * n, elemSize);
  L.Y = take(S * n, elemSize);
  L.K = take(S * n, elemSize);
  L.kbar = take(S * n, elemSize);
  L.hbar = take(n, elemSize);
  L.ybar = take(n, elemSize);
  L.th = take(P, elemSize);
  return L;
}

template <typename T, typename Dyn, typename Vjp>
int ode_grad(int method, int64_t steps, int64_t maxSteps, double rtol, double atol,
             int adjoint, int64_t n, int64_t rowLen, const T *rowScale, double s0, double s1,
             const T *h, T *a, int64_t P, T *gtheta, void *ws, Dyn &&dyn, Vjp &&vjp) {
  using namespace nncc::kernels;
  if (method < OdeEuler || method > OdeDopri5)
    return OdeBadMethod;
  if (rowLen <= 0)
    rowLen = 1;
  const int S = ode_stages(method);
  const OdeGradLayout L =
      ode_grad_layout(method, steps, maxSteps, adjoint, n, P, (int64_t)sizeof(T));
  char *base = (char *)ws;
  auto at = [&](int64_t off) { return (T *)(base + off); };
  auto sc = [&](int64_t i) { return rowScale ? (double)rowScale[i / rowLen] : 1.0; };
  if (adjoint) {
    // Augmented state [h, a, a_θ] integrated from s1 back to s0 with the
    // same method and steps (Chen et al. 2018).
    const int64_t m = 2 * n + P;
    T *aug = at(L.aug), *sa = at(L.sa);
    std::memcpy(aug, h, sizeof(T) * n);
    std::memcpy(aug + n, a, sizeof(T) * n);
    std::memset(aug + 2 * n, 0, sizeof(T) * P);
    T *k[7];
    for (int st = 0; st < S; ++st)
      k[st] = at(L.kb) + (size_t)st * m;
    auto f = [&](double s, const T *in, T *out) -> int {
      if (int rc = dyn(s, in, out))
        return rc;
      for (int64_t i = 0; i < n; ++i) {
        out[i] = (T)((double)out[i] * sc(i));
        sa[i] = (T)((double)in[n + i] * sc(i));
      }
      if (int rc = vjp(s, in, sa, out + n, out + 2 * n))
        return rc;
      for (int64_t i = n; i < m; ++i)
        out[i] = -out[i];
      return 0;
    };
    int rc = ode_integrate<T>(method, steps, rtol, atol, m, m, (const T *)nullptr, s1, s0, aug,
                              k, at(L.stage), at(L.err), f, (int64_t *)nullptr);
    if (rc)
      return rc;
    std::memcpy(a, aug + n, sizeof(T) * n);
    for (int64_t i = 0; i < P; ++i)
      gtheta[i] += aug[2 * n + i];
    return 0;
  }
  // Through the steps: the accepted steps (s_i, ds_i) — fixed steps, or
  // those of the adaptive dopri5 solve run again (its step sizes are then
  // constants of the discrete map: no gradient flows through the step-size
  // controller) — then the states, then per step (last first) the stages'
  // inputs and backpropagation through the stage combinations.
  T *Hs = at(L.Hs), *Y = at(L.Y), *K = at(L.K), *kbar = at(L.kbar), *hbar = at(L.hbar),
    *ybar = at(L.ybar), *th = at(L.th);
  const bool adaptive = steps <= 0 && method == OdeDopri5;
  double *stepS = adaptive ? (double *)(base + L.stepS) : nullptr;
  double *stepDs = adaptive ? (double *)(base + L.stepDs) : nullptr;
  int64_t nSteps = 0;
  double fixedDs = 0.0;
  if (adaptive) {
    // The re-solve's scratch lives in Y..ybar (not yet in use).
    T *hh = Y, *kb = Y + n, *stage = kb + (size_t)S * n, *err = stage + n;
    std::memcpy(hh, h, sizeof(T) * n);
    T *k[7];
    for (int st = 0; st < S; ++st)
      k[st] = kb + (size_t)st * n;
    // Past maxSteps accepted steps the next evaluation stops the solve.
    auto bounded = [&](double s, const T *in, T *out) -> int {
      if (nSteps > maxSteps)
        return OdeGradTooManySteps;
      return dyn(s, in, out);
    };
    int rc = ode_integrate<T>(method, 0, rtol, atol, n, rowLen, rowScale, s0, s1, hh, k, stage,
                              err, bounded, (int64_t *)nullptr, [&](double s, double ds) {
                                if (nSteps < maxSteps) {
                                  stepS[nSteps] = s;
                                  stepDs[nSteps] = ds;
                                }
                                ++nSteps;
                              });
    if (rc)
      return rc;
    if (nSteps > maxSteps)
      return OdeGradTooManySteps;
  } else {
    nSteps = steps > 0 ? steps : 1;
    fixedDs = (s1 - s0) / (double)nSteps;
  }
  auto stepAt = [&](int64_t it, double &s, double &ds) {
    if (adaptive) {
      s = stepS[it];
      ds = stepDs[it];
    } else {
      s = s0 + (double)it * fixedDs;
      ds = fixedDs;
    }
  };
  // dopri5's last stage (b = 0) only serves FSAL: the step map needs S - 1.
  const int used = ode_b(method, S - 1) == 0.0 ? S - 1 : S;
  std::memcpy(Hs, h, sizeof(T) * n);
  // Stage inputs Y_s and slopes K_s of the step of size ds from hs at s;
  // the same arithmetic as ode_integrate's combine.
  auto stagesOf = [&](double s, double ds, const T *hs) -> int {
    for (int st = 0; st < used; ++st) {
      T *y = Y + (size_t)st * n;
      for (int64_t i = 0; i < n; ++i) {
        double acc = 0.0;
        for (int j = 0; j < st; ++j) {
          double c = ode_a(method, st, j);
          if (c != 0.0)
            acc += c * (double)K[(size_t)j * n + i];
        }
        y[i] = st == 0 ? hs[i] : (T)((double)hs[i] + ds * sc(i) * acc);
      }
      if (int rc = dyn(s + ode_c(method, st) * ds, y, K + (size_t)st * n))
        return rc;
    }
    return 0;
  };
  for (int64_t it = 0; it < nSteps; ++it) {
    double s, ds;
    stepAt(it, s, ds);
    const T *hs = Hs + (size_t)it * n;
    if (int rc = stagesOf(s, ds, hs))
      return rc;
    T *hn = Hs + (size_t)(it + 1) * n;
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
    double s, ds;
    stepAt(it, s, ds);
    if (int rc = stagesOf(s, ds, Hs + (size_t)it * n))
      return rc;
    for (int j = 0; j < used; ++j)
      for (int64_t i = 0; i < n; ++i)
        kbar[(size_t)j * n + i] = (T)(ds * sc(i) * ode_b(method, j) * (double)a[i]);
    for (int64_t i = 0; i < n; ++i)
      hbar[i] = a[i];
    for (int st = used - 1; st >= 0; --st) {
      if (int rc = vjp(s + ode_c(method, st) * ds, Y + (size_t)st * n, kbar + (size_t)st * n,
                       ybar, th))
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
    std::memcpy(a, hbar, sizeof(T) * n);
  }
  return 0;
}

} // namespace grad
} // namespace nncc

#endif
