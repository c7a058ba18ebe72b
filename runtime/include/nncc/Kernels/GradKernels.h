/*
 * GradKernels.h - host helpers of the generated training code that have no
 * libnncc_kernels counterpart (docs/autodiff.md "Execution"): the broadcast
 * of a reduction's adjoint and the ODE gradient (adjoint method and
 * backpropagation through the solver steps; ode_grad_with, shared with the
 * CUDA target through an element-loop backend) that calls back into the
 * emitted region lambdas; its scratch is an arena workspace
 * (nncc_ode_grad_workspace_size). Recurrent, attention, layer-norm, embedding and
 * loss gradients are the fused kernels of libnncc_kernels (Kernels.h).
 */
#ifndef NNCC_RUNTIME_GRADKERNELS_H
#define NNCC_RUNTIME_GRADKERNELS_H

#include "nncc/Kernels/ODESolver.h"

#include <cmath>
#include <cstdint>
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

/// The gradient driver of both targets: `ops` gives the element loops
/// (OdeHostOps on the CPU, cuda::OdeDeviceOps on the GPU); h, a, gtheta
/// and ws are where ops computes.
template <typename T, typename Ops, typename Dyn, typename Vjp>
int ode_grad_with(Ops &ops, int method, int64_t steps, int64_t maxSteps, double rtol,
                  double atol, int adjoint, int64_t n, int64_t rowLen, const T *rowScale,
                  double s0, double s1, const T *h, T *a, int64_t P, T *gtheta, void *ws,
                  Dyn &&dyn, Vjp &&vjp) {
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
  const T *noScale = nullptr;
  if (adjoint) {
    // Augmented state [h, a, a_θ] integrated from s1 back to s0 with the
    // same method and steps (Chen et al. 2018).
    const int64_t m = 2 * n + P;
    T *aug = at(L.aug), *sa = at(L.sa);
    if (int rc = ops.copy(aug, h, n))
      return rc;
    if (int rc = ops.copy(aug + n, a, n))
      return rc;
    if (int rc = ops.zero(aug + 2 * n, P))
      return rc;
    T *k[7];
    for (int st = 0; st < S; ++st)
      k[st] = at(L.kb) + (size_t)st * m;
    auto f = [&](double s, const T *in, T *out) -> int {
      if (int rc = dyn(s, in, out))
        return rc;
      // out[:n] *= sc, sa = in[n:2n] * sc (the identity without row scales).
      const T *aIn = in + n;
      if (rowScale) {
        if (int rc = ops.axpy(n, rowLen, rowScale, 1.0, 1.0, out, out, false))
          return rc;
        if (int rc = ops.axpy(n, rowLen, rowScale, 1.0, 1.0, aIn, sa, false))
          return rc;
        aIn = sa;
      }
      if (int rc = vjp(s, in, aIn, out + n, out + 2 * n))
        return rc;
      return ops.axpy(m - n, 1, noScale, 1.0, -1.0, out + n, out + n, false);
    };
    if (int rc = ode_integrate_with<T>(ops, method, steps, rtol, atol, m, m, noScale, s1, s0, aug,
                                       k, at(L.stage), at(L.err), f, (int64_t *)nullptr))
      return rc;
    if (int rc = ops.copy(a, aug + n, n))
      return rc;
    return ops.axpy(P, 1, noScale, 1.0, 1.0, aug + 2 * n, gtheta, true);
  }
  // Through the steps: the accepted steps (s_i, ds_i) — fixed steps, or
  // those of the adaptive dopri5 solve run again (its step sizes are then
  // constants of the discrete map: no gradient flows through the step-size
  // controller) — then the states, then per step (last first) the stages'
  // inputs and backpropagation through the stage combinations.
  T *Hs = at(L.Hs), *Y = at(L.Y), *K = at(L.K), *kbar = at(L.kbar), *hbar = at(L.hbar),
    *ybar = at(L.ybar), *th = at(L.th);
  const bool adaptive = steps <= 0 && method == OdeDopri5;
  const int64_t logLen = adaptive && maxSteps > 0 ? maxSteps : 0;
  double *stepS = adaptive ? ops.hostDoubles(0, base + L.stepS, logLen) : nullptr;
  double *stepDs = adaptive ? ops.hostDoubles(1, base + L.stepDs, logLen) : nullptr;
  int64_t nSteps = 0;
  double fixedDs = 0.0;
  if (adaptive) {
    // The re-solve's scratch lives in Y..ybar (not yet in use).
    T *hh = Y, *kb = Y + n, *stage = kb + (size_t)S * n, *err = stage + n;
    if (int rc = ops.copy(hh, h, n))
      return rc;
    T *k[7];
    for (int st = 0; st < S; ++st)
      k[st] = kb + (size_t)st * n;
    // Past maxSteps accepted steps the next evaluation stops the solve.
    auto bounded = [&](double s, const T *in, T *out) -> int {
      if (nSteps > maxSteps)
        return OdeGradTooManySteps;
      return dyn(s, in, out);
    };
    auto logStep = [&](double s, double ds) {
      if (nSteps < maxSteps) {
        stepS[nSteps] = s;
        stepDs[nSteps] = ds;
      }
      ++nSteps;
    };
    if (int rc = ode_integrate_with<T>(ops, method, 0, rtol, atol, n, rowLen, rowScale, s0, s1,
                                       hh, k, stage, err, bounded, (int64_t *)nullptr, logStep))
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
  T *Kj[7];
  for (int j = 0; j < S; ++j)
    Kj[j] = K + (size_t)j * n;
  double b[7];
  for (int j = 0; j < used; ++j)
    b[j] = ode_b(method, j);
  if (int rc = ops.copy(Hs, h, n))
    return rc;
  // Stage inputs Y_s and slopes K_s of the step of size ds from hs at s,
  // the solver's own stage combinations.
  auto stagesOf = [&](double s, double ds, const T *hs) -> int {
    for (int st = 0; st < used; ++st) {
      T *y = Y + (size_t)st * n;
      if (st == 0) {
        if (int rc = ops.copy(y, hs, n))
          return rc;
      } else {
        double coef[7];
        for (int j = 0; j < st; ++j)
          coef[j] = ode_a(method, st, j);
        if (int rc = ops.lincomb(n, rowLen, rowScale, ds, coef, Kj, st, hs, y))
          return rc;
      }
      if (int rc = dyn(s + ode_c(method, st) * ds, y, Kj[st]))
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
    if (int rc = ops.lincomb(n, rowLen, rowScale, ds, b, Kj, used, hs, Hs + (size_t)(it + 1) * n))
      return rc;
  }
  for (int64_t it = nSteps - 1; it >= 0; --it) {
    double s, ds;
    stepAt(it, s, ds);
    if (int rc = stagesOf(s, ds, Hs + (size_t)it * n))
      return rc;
    for (int j = 0; j < used; ++j)
      if (int rc = ops.axpy(n, rowLen, rowScale, ds, b[j], a, kbar + (size_t)j * n, false))
        return rc;
    if (int rc = ops.copy(hbar, a, n))
      return rc;
    for (int st = used - 1; st >= 0; --st) {
      if (int rc = vjp(s + ode_c(method, st) * ds, Y + (size_t)st * n, kbar + (size_t)st * n,
                       ybar, th))
        return rc;
      if (int rc = ops.axpy(P, 1, noScale, 1.0, 1.0, th, gtheta, true))
        return rc;
      if (int rc = ops.axpy(n, 1, noScale, 1.0, 1.0, ybar, hbar, true))
        return rc;
      for (int j = 0; j < st; ++j) {
        const double c = ode_a(method, st, j);
        if (c != 0.0)
          if (int rc = ops.axpy(n, rowLen, rowScale, ds, c, ybar, kbar + (size_t)j * n, true))
            return rc;
      }
    }
    if (int rc = ops.copy(a, hbar, n))
      return rc;
  }
  return 0;
}

/// The CPU gradient: ode_grad_with on host memory.
template <typename T, typename Dyn, typename Vjp>
int ode_grad(int method, int64_t steps, int64_t maxSteps, double rtol, double atol,
             int adjoint, int64_t n, int64_t rowLen, const T *rowScale, double s0, double s1,
             const T *h, T *a, int64_t P, T *gtheta, void *ws, Dyn &&dyn, Vjp &&vjp) {
  nncc::kernels::OdeHostOps<T> ops;
  return ode_grad_with<T>(ops, method, steps, maxSteps, rtol, atol, adjoint, n, rowLen, rowScale,
                          s0, s1, h, a, P, gtheta, ws, static_cast<Dyn &&>(dyn),
                          static_cast<Vjp &&>(vjp));
}

/// The ODE-RNN backward's arrays after ode_grad's scratch in the op's
/// workspace, in elements of T: dθ [Pd], dφ [Pc], the cell VJP's dφ
/// [Pc + 1], delta, tcur, tprev [B], hprev, htil, a, carry, dhtil [n], x_t,
/// dx_t [B I], the re-solve's slots [(S + 2) n].
struct OdeRnnGradLayout {
  int64_t scratch = 0; // bytes of ode_grad's scratch (the arrays start here)
  int64_t thacc = 0, phacc = 0, phtmp = 0, delta = 0, tcur = 0, tprev = 0, hprev = 0, htil = 0,
          a = 0, carry = 0, dhtil = 0, xt = 0, dxt = 0, kb = 0, elems = 0;
};

inline OdeRnnGradLayout ode_rnn_grad_layout(int method, int64_t steps, int64_t maxSteps,
                                            int adjoint, int64_t B, int64_t I, int64_t H,
                                            int64_t Pd, int64_t Pc, int64_t elemSize) {
  OdeRnnGradLayout L;
  const int64_t n = B * H, S = nncc::kernels::ode_stages(method);
  L.scratch = ode_grad_layout(method, steps, maxSteps, adjoint, n, Pd, elemSize).bytes;
  int64_t at = 0;
  auto take = [&](int64_t count) {
    const int64_t o = at;
    at += count;
    return o;
  };
  L.thacc = take(Pd);
  L.phacc = take(Pc);
  L.phtmp = take(Pc + 1);
  L.delta = take(B);
  L.tcur = take(B);
  L.tprev = take(B);
  L.hprev = take(n);
  L.htil = take(n);
  L.a = take(n);
  L.carry = take(n);
  L.dhtil = take(n);
  L.xt = take(B * I);
  L.dxt = take(B * I);
  L.kb = take((S + 2) * n);
  L.elems = at;
  return L;
}

/// The ODE-RNN backward (nnk.ode_rnn_grad) of both targets: BPTT over the
/// observations, last first. Per observation i the state before the cell
/// (hs[:, i-1], h0 or zeros at i = 0) is evolved again over [t_{i-1}, t_i]
/// (none at i = 0), then the cell VJP (dx[:, i], dh̃, the cell's parameter
/// gradients), then the segment's ode_grad_with. x [B, Tn, I], times
/// [B, Tn], hs, dhs [B, Tn, H]; h0 may be null (zeros). ws: ode_grad's
/// scratch then OdeRnnGradLayout's arrays. dtheta [Pd], dphi [Pc] are
/// overwritten (they may be the layout's accumulators). The callbacks:
/// dyn(s, in, out) and dynvjp(s, h, a, out_h, out_theta), which find the
/// rows' times in ws + tcur, and cellvjp(x_t, h, a, dx_t, dh, dphi_t).
template <typename T, typename Ops, typename Dyn, typename DynVjp, typename CellVjp>
int ode_rnn_grad_with(Ops &ops, int method, int64_t steps, int64_t maxSteps, double rtol,
                      double atol, int adjoint, int64_t B, int64_t Tn, int64_t I, int64_t H,
                      const T *x, const T *times, const T *h0, const T *hs, const T *dhs, T *dx,
                      T *dh0, int64_t Pd, T *dtheta, int64_t Pc, T *dphi, void *ws, Dyn &&dyn,
                      DynVjp &&dynvjp, CellVjp &&cellvjp) {
  using namespace nncc::kernels;
  if (method < OdeEuler || method > OdeDopri5)
    return OdeBadMethod;
  const int S = ode_stages(method);
  const bool adaptive = steps <= 0 && method == OdeDopri5;
  const int64_t n = B * H;
  const OdeRnnGradLayout L = ode_rnn_grad_layout(method, steps, maxSteps, adjoint, B, I, H, Pd,
                                                 Pc, (int64_t)sizeof(T));
  T *arr = (T *)((char *)ws + L.scratch);
  T *thacc = arr + L.thacc, *phacc = arr + L.phacc, *phtmp = arr + L.phtmp,
    *delta = arr + L.delta, *tcur = arr + L.tcur, *tprev = arr + L.tprev,
    *hprev = arr + L.hprev, *htil = arr + L.htil, *a = arr + L.a, *carry = arr + L.carry,
    *dhtil = arr + L.dhtil, *xt = arr + L.xt, *dxt = arr + L.dxt, *kb = arr + L.kb;
  const T *noScale = nullptr;
  if (int rc = ops.zero(thacc, Pd + 2 * Pc + 1))
    return rc;
  if (int rc = ops.zero(carry, n))
    return rc;
  T *k[7];
  for (int s = 0; s < S; ++s)
    k[s] = kb + (int64_t)s * n;
  auto dynT = [&](double s, const T *in, T *out) -> int {
    if (int rc = ops.rowTimes(B, s, tprev, delta, tcur))
      return rc;
    return dyn(s, in, out);
  };
  auto vjpT = [&](double s, const T *hin, const T *ain, T *dh, T *th) -> int {
    if (int rc = ops.rowTimes(B, s, tprev, delta, tcur))
      return rc;
    return dynvjp(s, hin, ain, dh, th);
  };
  for (int64_t i = Tn - 1; i >= 0; --i) {
    int rc = i > 0 ? ops.rows(B, hprev, H, hs + (i - 1) * H, Tn * H, H)
             : h0  ? ops.copy(hprev, h0, n)
                   : ops.zero(hprev, n);
    if (rc || (rc = ops.copy(htil, hprev, n)))
      return rc;
    if (i > 0) {
      if ((rc = ops.interval(B, Tn, i, times, tprev, delta)))
        return rc;
      if ((rc = ode_integrate_with<T>(ops, method, steps, rtol, atol, n, H, delta, 0.0, 1.0,
                                      htil, k, kb + (int64_t)S * n,
                                      adaptive ? kb + (int64_t)(S + 1) * n : (T *)nullptr, dynT,
                                      (int64_t *)nullptr)))
        return rc;
    }
    if ((rc = ops.rows(B, xt, I, x + i * I, Tn * I, I)) ||
        (rc = ops.adjointIn(B, Tn, H, i, dhs, carry, a)) ||
        (rc = cellvjp(xt, htil, a, dxt, dhtil, phtmp)) ||
        (rc = ops.axpy(Pc, 1, noScale, 1.0, 1.0, phtmp, phacc, true)) ||
        (rc = ops.rows(B, dx + i * I, Tn * I, dxt, I, I)))
      return rc;
    if (i > 0 && (rc = ode_grad_with<T>(ops, method, steps, maxSteps, rtol, atol, adjoint, n, H,
                                        delta, 0.0, 1.0, adjoint ? htil : hprev, dhtil, Pd,
                                        thacc, ws, dynT, vjpT)))
      return rc;
    if ((rc = ops.copy(carry, dhtil, n)))
      return rc;
  }
  if (int rc = ops.copy(dh0, carry, n))
    return rc;
  if (int rc = ops.copy(dtheta, thacc, Pd))
    return rc;
  return ops.copy(dphi, phacc, Pc);
}

/// The CPU's ODE-RNN backward: ode_rnn_grad_with on host memory.
template <typename T, typename Dyn, typename DynVjp, typename CellVjp>
int ode_rnn_grad(int method, int64_t steps, int64_t maxSteps, double rtol, double atol,
                 int adjoint, int64_t B, int64_t Tn, int64_t I, int64_t H, const T *x,
                 const T *times, const T *h0, const T *hs, const T *dhs, T *dx, T *dh0,
                 int64_t Pd, T *dtheta, int64_t Pc, T *dphi, void *ws, Dyn &&dyn,
                 DynVjp &&dynvjp, CellVjp &&cellvjp) {
  nncc::kernels::OdeHostOps<T> ops;
  return ode_rnn_grad_with<T>(ops, method, steps, maxSteps, rtol, atol, adjoint, B, Tn, I, H, x,
                              times, h0, hs, dhs, dx, dh0, Pd, dtheta, Pc, dphi, ws,
                              static_cast<Dyn &&>(dyn), static_cast<DynVjp &&>(dynvjp),
                              static_cast<CellVjp &&>(cellvjp));
}

} // namespace grad
} // namespace nncc

#endif
