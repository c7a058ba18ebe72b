//===- Ode.cuh - The ODE solves and their gradients on the GPU --*- CUDA -*-===//
//
// nnk.ode_solve, nnk.ode_rnn and the training ops nnk.ode_solve_grad /
// nnk.ode_rnn_grad run as host loops of launches: ode_integrate_device,
// ode_grad_device and ode_rnn_grad_device are host drivers that follow the
// CPU's ode_integrate (ODESolver.h), nncc::grad::ode_grad (GradKernels.h)
// and the CPU's ODE-RNN backward loop statement for statement: the same
// steps, the same accepted / rejected dopri5 steps (double step sizes, FSAL,
// the same end test; the error norm reduced on the device and one double
// read back per attempt), the same workspace layout (ode_grad_layout) in
// the op's arena slot. Each CPU loop over the elements is one kernel here
// with the CPU's arithmetic (double accumulation, the same association, one
// rounding to T), so f64 results agree to rounding and the dopri5 decisions
// differ only if an error norm lands within rounding of 1. The callbacks
// (the regions' launches) are the generated code's; the tableaus and the
// step controller are ODESolver.h's NNCC_HD functions.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_CUDA_ODE_CUH
#define NNCC_KERNELS_CUDA_ODE_CUH

#include "nncc/Kernels/CUDA/Data.cuh"
#include "nncc/Kernels/GradKernels.h"
#include "nncc/Kernels/ODESolver.h"

#include <vector>

namespace nncc {
namespace kernels {
namespace cuda {

constexpr int kOdeMaxStages = 7;

//===----------------------------------------------------------------------===//
// Kernels: one per loop over the elements of the CPU solver and ode_grad
//===----------------------------------------------------------------------===//

/// Up to 7 terms sum_j c_j k_j (k_j device pointers, passed by value).
template <typename T> struct OdeTerms {
  int32_t nk;
  double c[kOdeMaxStages];
  const T *k[kOdeMaxStages];
};

/// The CPU solver's combination: y[i] = (T)(h[i] + ds * sc_i * sum_j c_j k_j[i])
/// in double, terms with c_j = 0 skipped, sc_i = row_scale[i / row_len] or 1.
/// y may be h (each element reads only its own h[i]).
template <typename T>
__global__ void ode_lincomb_kernel(OdeTerms<T> t, int64_t n, int64_t row_len,
                                  const T *__restrict__ row_scale, double ds, const T *h,
                                  T *y) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    double acc = 0.0;
    for (int j = 0; j < t.nk; ++j)
      if (t.c[j] != 0.0)
        acc += t.c[j] * (double)load_acc(t.k[j][i]);
    const double sc = row_scale ? (double)load_acc(row_scale[i / row_len]) : 1.0;
    y[i] = store_acc<T>((acc_t<T>)((double)load_acc(h[i]) + ds * sc * acc));
  }
}

/// y[i] = [y[i] +] (T)(ds * sc_i * c * x[i]) (double product, one rounding):
/// the row scaling, negation, slope adjoints and accumulations of ode_grad.
template <typename T>
__global__ void ode_axpy_kernel(int64_t n, int64_t row_len, const T *__restrict__ row_scale,
                                double ds, double c, const T *x, T *y, bool accumulate) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const double sc = row_scale ? (double)load_acc(row_scale[i / row_len]) : 1.0;
    const acc_t<T> v = (acc_t<T>)(ds * sc * c * (double)load_acc(x[i]));
    y[i] = store_acc<T>(accumulate ? (acc_t<T>)(load_acc(y[i]) + v) : v);
  }
}

/// dopri5's error of a step, as the CPU solver computes it: e_i = ds * sc_i *
/// sum_j e_j k_j[i] in double (written rounded to err when given), and the
/// per-CTA partial sums of ode_error_ratio(e_i, h[i], hn[i])^2 (unrounded e_i).
template <typename T>
__global__ void ode_step_error_kernel(OdeTerms<T> t, int64_t n, int64_t row_len,
                                     const T *__restrict__ row_scale, double ds,
                                     const T *__restrict__ h, const T *__restrict__ hn,
                                     T *__restrict__ err, double atol, double rtol,
                                     double *part) {
  double s = 0;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    double acc = 0.0;
    for (int j = 0; j < t.nk; ++j)
      if (t.c[j] != 0.0)
        acc += t.c[j] * (double)load_acc(t.k[j][i]);
    const double sc = row_scale ? (double)load_acc(row_scale[i / row_len]) : 1.0;
    const double ei = ds * sc * acc;
    if (err)
      err[i] = store_acc<T>((acc_t<T>)ei);
    const double q =
        ode_error_ratio(ei, (double)load_acc(h[i]), (double)load_acc(hn[i]), atol, rtol);
    s += q * q;
  }
  block_partial(s, blockIdx.x == 0 && threadIdx.x == 0 ? (double)n : 0.0, part);
}

/// ODE-RNN segment i > 0: tprev[b] = times[b, i-1], delta[b] = times[b, i] -
/// tprev[b] (times [B, Tn]; the CPU backward's row scale).
template <typename T>
__global__ void ode_rnn_interval_kernel(int64_t B, int64_t Tn, int64_t i,
                                        const T *__restrict__ times, T *__restrict__ tprev,
                                        T *__restrict__ delta) {
  for (int64_t b = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; b < B;
       b += (int64_t)gridDim.x * blockDim.x) {
    const T t0 = times[b * Tn + i - 1];
    tprev[b] = t0;
    delta[b] = store_acc<T>(load_acc(times[b * Tn + i]) - load_acc(t0));
  }
}

/// Each row's time at integration variable s in [0, 1]:
/// t[b] = (T)(tprev[b] + s * delta[b]) in double.
template <typename T>
__global__ void ode_rnn_row_time_kernel(int64_t B, double s, const T *__restrict__ tprev,
                                        const T *__restrict__ delta, T *__restrict__ t) {
  for (int64_t b = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; b < B;
       b += (int64_t)gridDim.x * blockDim.x)
    t[b] = store_acc<T>((acc_t<T>)((double)load_acc(tprev[b]) + s * (double)load_acc(delta[b])));
}

/// The cell's adjoint at observation i: a[b, j] = dhs[b, i, j] + carry[b, j]
/// (dhs [B, Tn, H]).
template <typename T>
__global__ void ode_rnn_adjoint_in_kernel(int64_t B, int64_t Tn, int64_t H, int64_t i,
                                          const T *__restrict__ dhs,
                                          const T *__restrict__ carry, T *__restrict__ a) {
  const int64_t n = B * H;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n;
       e += (int64_t)gridDim.x * blockDim.x) {
    const int64_t b = e / H, j = e % H;
    a[e] = store_acc<T>(load_acc(dhs[(b * Tn + i) * H + j]) + load_acc(carry[e]));
  }
}

/// Device context of the host drivers: the stream, dopri5's error-norm
/// scratch (device memory: loss_scratch_bytes() for the partials and one
/// double) and the first failing CUDA call's error, set when a driver
/// returns OdeDeviceError.
struct OdeDevice {
  cudaStream_t stream = nullptr;
  void *norm_scratch = nullptr;
  double *norm = nullptr;
  cudaError_t error = cudaSuccess;
};

/// The drivers' status: 0, a callback's nonzero status, ODESolver.h's /
/// GradKernels.h's codes (< 0), or this one (see OdeDevice::error).
enum : int { OdeDeviceError = -5 };

#define NNCC_ODE_DEVICE_CHECK(dev, call)                                                   \
  do {                                                                                     \
    cudaError_t e_ = (call);                                                               \
    if (e_ == cudaSuccess)                                                                 \
      e_ = cudaGetLastError();                                                             \
    if (e_ != cudaSuccess) {                                                               \
      (dev).error = e_;                                                                    \
      return OdeDeviceError;                                                               \
    }                                                                                      \
  } while (0)

template <typename T>
inline cudaError_t launch_ode_lincomb(const OdeDevice &dev, int64_t n, int64_t row_len,
                                      const T *row_scale, double ds, const double *c,
                                      T *const *k, int count, const T *h, T *y) {
  if (n <= 0)
    return cudaSuccess;
  OdeTerms<T> t{};
  t.nk = count;
  for (int j = 0; j < count; ++j) {
    t.c[j] = c[j];
    t.k[j] = k[j];
  }
  ode_lincomb_kernel<T><<<grid_for(n, 256), 256, 0, dev.stream>>>(t, n, row_len, row_scale,
                                                                   ds, h, y);
  return cudaGetLastError();
}

template <typename T>
inline cudaError_t launch_ode_axpy(const OdeDevice &dev, int64_t n, int64_t row_len,
                                   const T *row_scale, double ds, double c, const T *x, T *y,
                                   bool accumulate) {
  if (n <= 0)
    return cudaSuccess;
  ode_axpy_kernel<T><<<grid_for(n, 256), 256, 0, dev.stream>>>(n, row_len, row_scale, ds, c,
                                                                x, y, accumulate);
  return cudaGetLastError();
}

/// Device-to-device copy of n elements on the driver's stream.
template <typename T>
inline cudaError_t ode_copy(const OdeDevice &dev, T *dst, const T *src, int64_t n) {
  if (n <= 0 || dst == src)
    return cudaSuccess;
  return cudaMemcpyAsync(dst, src, (size_t)n * sizeof(T), cudaMemcpyDeviceToDevice,
                         dev.stream);
}

/// ode_integrate (ODESolver.h) on the device: h [n] (device) evolves in
/// place; kIn: the stage slots, stageIn, err (dopri5 adaptive) device
/// buffers; dyn(s, in, out) -> int launches the dynamics. Adaptive dopri5
/// reads its error norm back once per attempt.
template <typename T, typename Dyn, typename OnAccept = OdeIgnoreSteps>
int ode_integrate_device(OdeDevice &dev, int method, int64_t steps, double rtol, double atol,
                         int64_t n, int64_t rowLen, const T *rowScale, double s0, double s1,
                         T *h, T *const *kIn, T *stageIn, T *err, Dyn &&dyn, int64_t *nSteps,
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
  auto stages = [&](double s, double ds, bool haveK1) -> int {
    for (int st = 0; st < S; ++st) {
      const T *in = h;
      if (st > 0) {
        double coef[7];
        for (int j = 0; j < st; ++j)
          coef[j] = ode_a(method, st, j);
        NNCC_ODE_DEVICE_CHECK(
            dev, launch_ode_lincomb<T>(dev, n, rowLen, rowScale, ds, coef, k, st, h, stageIn));
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
      NNCC_ODE_DEVICE_CHECK(dev, launch_ode_lincomb<T>(dev, n, rowLen, rowScale, ds, b, k, S, h, h));
      if (nSteps)
        ++*nSteps;
      onAccept(s, ds);
    }
    return 0;
  }

  // Adaptive Dormand-Prince 5(4): ode_integrate's loop.
  const double span = s1 - s0;
  if (span == 0.0)
    return 0;
  const double dir = span > 0 ? 1.0 : -1.0;
  double s = s0, ds = ode_first_step(span);
  bool haveK1 = false;
  double *part = static_cast<double *>(dev.norm_scratch);
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
    double norm = 0.0; // sqrt(mean(ratio^2)), 0 without elements
    if (n > 0) {
      OdeTerms<T> t{};
      t.nk = 7;
      for (int j = 0; j < 7; ++j) {
        t.c[j] = ode_e(j);
        t.k[j] = k[j];
      }
      const unsigned g = loss_grid(n);
      ode_step_error_kernel<T><<<g, kLossThreads, 0, dev.stream>>>(t, n, rowLen, rowScale, ds, h,
                                                                   stageIn, err, atol, rtol, part);
      NNCC_ODE_DEVICE_CHECK(dev, cudaGetLastError());
      loss_finish_kernel<double><<<1, kLossThreads, 0, dev.stream>>>((int)g, part, dev.norm);
      NNCC_ODE_DEVICE_CHECK(dev, cudaGetLastError());
      double mean = 0;
      NNCC_ODE_DEVICE_CHECK(dev, cudaMemcpyAsync(&mean, dev.norm, sizeof(double),
                                                 cudaMemcpyDeviceToHost, dev.stream));
      NNCC_ODE_DEVICE_CHECK(dev, cudaStreamSynchronize(dev.stream));
      norm = sqrt(mean);
    }
    if (ode_step_accepted(norm)) {
      NNCC_ODE_DEVICE_CHECK(dev, ode_copy<T>(dev, h, stageIn, n));
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

/// nncc::grad::ode_grad (GradKernels.h) on the device, the same algorithm
/// and workspace layout (ode_grad_layout; ws is device memory, the adaptive
/// solve's accepted steps are kept on the host). h, a, gtheta and ws are
/// device pointers; dyn(s, in, out) and vjp(s, h, a, out_h, out_theta)
/// launch the regions. a: in dL/dh(s1), out dL/dh(s0); gtheta [P] += dθ.
template <typename T, typename Dyn, typename Vjp>
int ode_grad_device(OdeDevice &dev, int method, int64_t steps, int64_t maxSteps, double rtol,
                    double atol, int adjoint, int64_t n, int64_t rowLen, const T *rowScale,
                    double s0, double s1, const T *h, T *a, int64_t P, T *gtheta, void *ws,
                    Dyn &&dyn, Vjp &&vjp) {
  using nncc::grad::OdeGradLayout;
  if (method < OdeEuler || method > OdeDopri5)
    return OdeBadMethod;
  if (rowLen <= 0)
    rowLen = 1;
  const int S = ode_stages(method);
  const OdeGradLayout L =
      nncc::grad::ode_grad_layout(method, steps, maxSteps, adjoint, n, P, (int64_t)sizeof(T));
  char *base = (char *)ws;
  auto at = [&](int64_t off) { return (T *)(base + off); };
  if (adjoint) {
    // The augmented state [h, a, a_θ] from s1 back to s0 (Chen et al. 2018).
    const int64_t m = 2 * n + P;
    T *aug = at(L.aug), *sa = at(L.sa);
    NNCC_ODE_DEVICE_CHECK(dev, ode_copy<T>(dev, aug, h, n));
    NNCC_ODE_DEVICE_CHECK(dev, ode_copy<T>(dev, aug + n, a, n));
    if (P > 0)
      NNCC_ODE_DEVICE_CHECK(dev, cudaMemsetAsync(aug + 2 * n, 0, sizeof(T) * P, dev.stream));
    T *k[7];
    for (int st = 0; st < S; ++st)
      k[st] = at(L.kb) + (size_t)st * m;
    auto f = [&](double s, const T *in, T *out) -> int {
      if (int rc = dyn(s, in, out))
        return rc;
      // out[:n] *= sc, sa = in[n:2n] * sc (the identity without row scales).
      const T *aIn = in + n;
      if (rowScale) {
        NNCC_ODE_DEVICE_CHECK(dev, launch_ode_axpy<T>(dev, n, rowLen, rowScale, 1.0, 1.0, out, out, false));
        NNCC_ODE_DEVICE_CHECK(dev, launch_ode_axpy<T>(dev, n, rowLen, rowScale, 1.0, 1.0, aIn, sa, false));
        aIn = sa;
      }
      if (int rc = vjp(s, in, aIn, out + n, out + 2 * n))
        return rc;
      NNCC_ODE_DEVICE_CHECK(dev, launch_ode_axpy<T>(dev, m - n, 1, (const T *)nullptr, 1.0, -1.0,
                                                    out + n, out + n, false));
      return 0;
    };
    int rc = ode_integrate_device<T>(dev, method, steps, rtol, atol, m, m, (const T *)nullptr,
                                     s1, s0, aug, k, at(L.stage), at(L.err), f,
                                     (int64_t *)nullptr);
    if (rc)
      return rc;
    NNCC_ODE_DEVICE_CHECK(dev, ode_copy<T>(dev, a, aug + n, n));
    NNCC_ODE_DEVICE_CHECK(dev, launch_ode_axpy<T>(dev, P, 1, (const T *)nullptr, 1.0, 1.0,
                                                  aug + 2 * n, gtheta, true));
    return 0;
  }
  // Through the steps: the accepted steps, the states H_i, then per step
  // (last first) the stage inputs again and the adjoint through the stages.
  T *Hs = at(L.Hs), *Y = at(L.Y), *K = at(L.K), *kbar = at(L.kbar), *hbar = at(L.hbar),
    *ybar = at(L.ybar), *th = at(L.th);
  const bool adaptive = steps <= 0 && method == OdeDopri5;
  std::vector<double> stepS, stepDs;
  int64_t nSteps = 0;
  double fixedDs = 0.0;
  if (adaptive) {
    // The re-solve's scratch lives in Y..ybar (not yet in use).
    T *hh = Y, *kb = Y + n, *stage = kb + (size_t)S * n, *err = stage + n;
    NNCC_ODE_DEVICE_CHECK(dev, ode_copy<T>(dev, hh, h, n));
    T *k[7];
    for (int st = 0; st < S; ++st)
      k[st] = kb + (size_t)st * n;
    auto bounded = [&](double s, const T *in, T *out) -> int {
      if (nSteps > maxSteps)
        return nncc::grad::OdeGradTooManySteps;
      return dyn(s, in, out);
    };
    int rc = ode_integrate_device<T>(dev, method, 0, rtol, atol, n, rowLen, rowScale, s0, s1, hh,
                                     k, stage, err, bounded, (int64_t *)nullptr,
                                     [&](double s, double ds) {
                                       if (nSteps < maxSteps) {
                                         stepS.push_back(s);
                                         stepDs.push_back(ds);
                                       }
                                       ++nSteps;
                                     });
    if (rc)
      return rc;
    if (nSteps > maxSteps)
      return nncc::grad::OdeGradTooManySteps;
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
  NNCC_ODE_DEVICE_CHECK(dev, ode_copy<T>(dev, Hs, h, n));
  auto stagesOf = [&](double s, double ds, const T *hs) -> int {
    for (int st = 0; st < used; ++st) {
      T *y = Y + (size_t)st * n;
      if (st == 0) {
        NNCC_ODE_DEVICE_CHECK(dev, ode_copy<T>(dev, y, hs, n));
      } else {
        double coef[7];
        for (int j = 0; j < st; ++j)
          coef[j] = ode_a(method, st, j);
        NNCC_ODE_DEVICE_CHECK(dev, launch_ode_lincomb<T>(dev, n, rowLen, rowScale, ds, coef, Kj,
                                                         st, hs, y));
      }
      if (int rc = dyn(s + ode_c(method, st) * ds, y, Kj[st]))
        return rc;
    }
    return 0;
  };
  double b[7];
  for (int j = 0; j < used; ++j)
    b[j] = ode_b(method, j);
  for (int64_t it = 0; it < nSteps; ++it) {
    double s, ds;
    stepAt(it, s, ds);
    const T *hs = Hs + (size_t)it * n;
    if (int rc = stagesOf(s, ds, hs))
      return rc;
    NNCC_ODE_DEVICE_CHECK(dev, launch_ode_lincomb<T>(dev, n, rowLen, rowScale, ds, b, Kj, used, hs,
                                                     Hs + (size_t)(it + 1) * n));
  }
  for (int64_t it = nSteps - 1; it >= 0; --it) {
    double s, ds;
    stepAt(it, s, ds);
    if (int rc = stagesOf(s, ds, Hs + (size_t)it * n))
      return rc;
    for (int j = 0; j < used; ++j)
      NNCC_ODE_DEVICE_CHECK(dev, launch_ode_axpy<T>(dev, n, rowLen, rowScale, ds, b[j], a,
                                                    kbar + (size_t)j * n, false));
    NNCC_ODE_DEVICE_CHECK(dev, ode_copy<T>(dev, hbar, a, n));
    for (int st = used - 1; st >= 0; --st) {
      if (int rc = vjp(s + ode_c(method, st) * ds, Y + (size_t)st * n, kbar + (size_t)st * n,
                       ybar, th))
        return rc;
      NNCC_ODE_DEVICE_CHECK(dev, launch_ode_axpy<T>(dev, P, 1, (const T *)nullptr, 1.0, 1.0, th,
                                                    gtheta, true));
      NNCC_ODE_DEVICE_CHECK(dev, launch_ode_axpy<T>(dev, n, 1, (const T *)nullptr, 1.0, 1.0, ybar,
                                                    hbar, true));
      for (int j = 0; j < st; ++j) {
        const double c = ode_a(method, st, j);
        if (c != 0.0)
          NNCC_ODE_DEVICE_CHECK(dev, launch_ode_axpy<T>(dev, n, rowLen, rowScale, ds, c, ybar,
                                                        kbar + (size_t)j * n, true));
      }
    }
    NNCC_ODE_DEVICE_CHECK(dev, ode_copy<T>(dev, a, hbar, n));
  }
  return 0;
}

/// The ODE-RNN backward's arrays after ode_grad's scratch in the op's arena
/// slot, in elements of T (the CPU backward's layout): dθ [Pd], dφ [Pc], the
/// cell VJP's dφ [Pc + 1], delta, tcur, tprev [B], hprev, htil, a, carry,
/// dhtil [n], x_t, dx_t [B I], the re-solve's slots [(S + 2) n].
struct OdeRnnGradLayout {
  int64_t scratch = 0; // bytes of ode_grad's scratch (the arrays start here)
  int64_t thacc = 0, phacc = 0, phtmp = 0, delta = 0, tcur = 0, tprev = 0, hprev = 0, htil = 0,
          a = 0, carry = 0, dhtil = 0, xt = 0, dxt = 0, kb = 0, elems = 0;
};

inline OdeRnnGradLayout ode_rnn_grad_layout(int method, int64_t steps, int64_t maxSteps,
                                            int adjoint, int64_t B, int64_t I, int64_t H,
                                            int64_t Pd, int64_t Pc, int64_t elemSize) {
  OdeRnnGradLayout L;
  const int64_t n = B * H, S = ode_stages(method);
  L.scratch = nncc::grad::ode_grad_layout(method, steps, maxSteps, adjoint, n, Pd, elemSize).bytes;
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

/// The ODE-RNN backward (nnk.ode_rnn_grad) on the device, the CPU loop's
/// order: per observation i, last first, the state before the cell
/// (hs[:, i-1], h0 or zeros at i = 0) evolved again over [t_{i-1}, t_i]
/// (none at i = 0), the cell VJP (dx[:, i], dh̃, cell parameter gradients),
/// then the segment's ode_grad_device. x [B, Tn, I], times [B, Tn], hs, dhs
/// [B, Tn, H]; h0 may be null (zeros). ws: the arena slot, ode_grad's
/// scratch then OdeRnnGradLayout's arrays. dtheta [Pd], dphi [Pc] are
/// overwritten. The callbacks: dyn(s, in, out) and dynvjp(s, h, a, out_h,
/// out_theta) with the rows' times already in ws + tcur, and cellvjp(x_t,
/// h, a, dx_t, dh, dphi_t).
template <typename T, typename Dyn, typename DynVjp, typename CellVjp>
int ode_rnn_grad_device(OdeDevice &dev, int method, int64_t steps, int64_t maxSteps, double rtol,
                        double atol, int adjoint, int64_t B, int64_t Tn, int64_t I, int64_t H,
                        const T *x, const T *times, const T *h0, const T *hs, const T *dhs,
                        T *dx, T *dh0, int64_t Pd, T *dtheta, int64_t Pc, T *dphi, void *ws,
                        Dyn &&dyn, DynVjp &&dynvjp, CellVjp &&cellvjp) {
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
  NNCC_ODE_DEVICE_CHECK(dev, cudaMemsetAsync(thacc, 0, sizeof(T) * (Pd + 2 * Pc + 1), dev.stream));
  NNCC_ODE_DEVICE_CHECK(dev, cudaMemsetAsync(carry, 0, sizeof(T) * n, dev.stream));
  T *k[7];
  for (int s = 0; s < S; ++s)
    k[s] = kb + (int64_t)s * n;
  auto setTime = [&](double s) -> int {
    if (B > 0)
      ode_rnn_row_time_kernel<T><<<grid_for(B, 256), 256, 0, dev.stream>>>(B, s, tprev, delta,
                                                                           tcur);
    NNCC_ODE_DEVICE_CHECK(dev, cudaGetLastError());
    return 0;
  };
  auto dynT = [&](double s, const T *in, T *out) -> int {
    if (int rc = setTime(s))
      return rc;
    return dyn(s, in, out);
  };
  auto vjpT = [&](double s, const T *hin, const T *ain, T *dh, T *th) -> int {
    if (int rc = setTime(s))
      return rc;
    return dynvjp(s, hin, ain, dh, th);
  };
  auto rows = [&](T *dst, int64_t dstStride, const T *src, int64_t srcStride, int64_t cols) {
    CopyNd c{};
    c.rank = 2;
    c.shape[0] = B;
    c.dst_stride[0] = dstStride;
    c.src_stride[0] = srcStride;
    c.shape[1] = cols;
    c.dst_stride[1] = 1;
    c.src_stride[1] = 1;
    return launch_copy_nd<T>(c, dst, src, dev.stream);
  };
  for (int64_t i = Tn - 1; i >= 0; --i) {
    if (i > 0)
      NNCC_ODE_DEVICE_CHECK(dev, rows(hprev, H, hs + (i - 1) * H, Tn * H, H));
    else if (h0)
      NNCC_ODE_DEVICE_CHECK(dev, ode_copy<T>(dev, hprev, h0, n));
    else
      NNCC_ODE_DEVICE_CHECK(dev, cudaMemsetAsync(hprev, 0, sizeof(T) * n, dev.stream));
    NNCC_ODE_DEVICE_CHECK(dev, ode_copy<T>(dev, htil, hprev, n));
    if (i > 0) {
      if (B > 0)
        ode_rnn_interval_kernel<T><<<grid_for(B, 256), 256, 0, dev.stream>>>(B, Tn, i, times,
                                                                             tprev, delta);
      NNCC_ODE_DEVICE_CHECK(dev, cudaGetLastError());
      if (int rc = ode_integrate_device<T>(dev, method, steps, rtol, atol, n, H, delta, 0.0, 1.0,
                                           htil, k, kb + (int64_t)S * n,
                                           adaptive ? kb + (int64_t)(S + 1) * n : (T *)nullptr,
                                           dynT, (int64_t *)nullptr))
        return rc;
    }
    NNCC_ODE_DEVICE_CHECK(dev, rows(xt, I, x + i * I, Tn * I, I));
    if (n > 0)
      ode_rnn_adjoint_in_kernel<T><<<grid_for(n, 256), 256, 0, dev.stream>>>(B, Tn, H, i, dhs,
                                                                             carry, a);
    NNCC_ODE_DEVICE_CHECK(dev, cudaGetLastError());
    if (int rc = cellvjp(xt, htil, a, dxt, dhtil, phtmp))
      return rc;
    NNCC_ODE_DEVICE_CHECK(dev, launch_ode_axpy<T>(dev, Pc, 1, (const T *)nullptr, 1.0, 1.0, phtmp,
                                                  phacc, true));
    NNCC_ODE_DEVICE_CHECK(dev, rows(dx + i * I, Tn * I, dxt, I, I));
    if (i > 0)
      if (int rc = ode_grad_device<T>(dev, method, steps, maxSteps, rtol, atol, adjoint, n, H,
                                      delta, 0.0, 1.0, adjoint ? htil : hprev, dhtil, Pd, thacc,
                                      ws, dynT, vjpT))
        return rc;
    NNCC_ODE_DEVICE_CHECK(dev, ode_copy<T>(dev, carry, dhtil, n));
  }
  NNCC_ODE_DEVICE_CHECK(dev, ode_copy<T>(dev, dh0, carry, n));
  NNCC_ODE_DEVICE_CHECK(dev, ode_copy<T>(dev, dtheta, thacc, Pd));
  NNCC_ODE_DEVICE_CHECK(dev, ode_copy<T>(dev, dphi, phacc, Pc));
  return 0;
}

#undef NNCC_ODE_DEVICE_CHECK

} // namespace cuda
} // namespace kernels
} // namespace nncc

#endif // NNCC_KERNELS_CUDA_ODE_CUH
