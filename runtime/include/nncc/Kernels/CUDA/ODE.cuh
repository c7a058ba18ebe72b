//===- ODE.cuh - The ODE solves and their gradients on the GPU --*- CUDA -*-===//
//
// nnk.ode_solve, nnk.ode_rnn and the training ops nnk.ode_solve_grad /
// nnk.ode_rnn_grad run as host loops of launches. The solver loop and the
// gradients are the CPU's own drivers, ode_integrate_with (ODESolver.h) and
// nncc::grad::ode_grad_with (GradKernels.h), given OdeDeviceOps: each loop
// over the elements is one kernel here with the CPU's arithmetic (double
// accumulation, the same association, one rounding to T), dopri5's error
// norm reduced on the device and one double read back per attempt. So both
// targets take the same steps, f64 results agree to rounding and the dopri5
// decisions differ only if an error norm lands within rounding of 1. The
// ODE-RNN's forward and backward are ode_rnn_with (ODESolver.h) and
// ode_rnn_grad_with (GradKernels.h) the same way. The
// workspace layouts (ode_grad_layout, ode_rnn_grad_layout) are the CPU's,
// in the op's arena slot. The callbacks (the regions' launches) are the
// generated code's.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_CUDA_ODE_CUH
#define NNCC_KERNELS_CUDA_ODE_CUH

#include "nncc/Kernels/CUDA/Loss.cuh" // the error norm: the losses' two-pass mean
#include "nncc/Kernels/CUDA/Tensor.cuh"
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

/// The element loops of the shared ODE drivers (OdeHostOps' members, see
/// ODESolver.h) as launches on the driver's stream, the same arithmetic
/// per element. dopri5's error norm is reduced on the device and read back
/// (one double per attempt); the adaptive solve's accepted steps are kept
/// in host vectors. A failing CUDA call sets dev.error and returns
/// OdeDeviceError.
template <typename T> struct OdeDeviceOps {
  OdeDevice &dev;
  std::vector<double> stepLog[2];

  explicit OdeDeviceOps(OdeDevice &d) : dev(d) {}

  int lincomb(int64_t n, int64_t rowLen, const T *rowScale, double ds, const double *c,
              T *const *k, int count, const T *h, T *y) {
    NNCC_ODE_DEVICE_CHECK(dev,
                          launch_ode_lincomb<T>(dev, n, rowLen, rowScale, ds, c, k, count, h, y));
    return 0;
  }
  int axpy(int64_t n, int64_t rowLen, const T *rowScale, double ds, double c, const T *x, T *y,
           bool accumulate) {
    NNCC_ODE_DEVICE_CHECK(dev,
                          launch_ode_axpy<T>(dev, n, rowLen, rowScale, ds, c, x, y, accumulate));
    return 0;
  }
  int errorNorm(int64_t n, int64_t rowLen, const T *rowScale, double ds, T *const *k,
                const T *h, const T *hn, T *err, double atol, double rtol, double &norm) {
    norm = 0.0;
    if (n <= 0)
      return 0;
    OdeTerms<T> t{};
    t.nk = 7;
    for (int j = 0; j < 7; ++j) {
      t.c[j] = ode_e(j);
      t.k[j] = k[j];
    }
    double *part = static_cast<double *>(dev.norm_scratch);
    const unsigned g = loss_grid(n);
    ode_step_error_kernel<T><<<g, kLossThreads, 0, dev.stream>>>(t, n, rowLen, rowScale, ds, h,
                                                                 hn, err, atol, rtol, part);
    NNCC_ODE_DEVICE_CHECK(dev, cudaGetLastError());
    loss_finish_kernel<double><<<1, kLossThreads, 0, dev.stream>>>((int)g, part, dev.norm);
    NNCC_ODE_DEVICE_CHECK(dev, cudaGetLastError());
    double mean = 0;
    NNCC_ODE_DEVICE_CHECK(dev, cudaMemcpyAsync(&mean, dev.norm, sizeof(double),
                                               cudaMemcpyDeviceToHost, dev.stream));
    NNCC_ODE_DEVICE_CHECK(dev, cudaStreamSynchronize(dev.stream));
    norm = sqrt(mean);
    return 0;
  }
  int copy(T *dst, const T *src, int64_t n) {
    NNCC_ODE_DEVICE_CHECK(dev, ode_copy<T>(dev, dst, src, n));
    return 0;
  }
  int zero(T *dst, int64_t n) {
    if (n > 0)
      NNCC_ODE_DEVICE_CHECK(dev, cudaMemsetAsync(dst, 0, sizeof(T) * (size_t)n, dev.stream));
    return 0;
  }
  int rows(int64_t B, T *dst, int64_t dstStride, const T *src, int64_t srcStride,
           int64_t cols) {
    CopyNd c{};
    c.rank = 2;
    c.shape[0] = B;
    c.dst_stride[0] = dstStride;
    c.src_stride[0] = srcStride;
    c.shape[1] = cols;
    c.dst_stride[1] = 1;
    c.src_stride[1] = 1;
    NNCC_ODE_DEVICE_CHECK(dev, launch_copy_nd<T>(c, dst, src, dev.stream));
    return 0;
  }
  int interval(int64_t B, int64_t Tn, int64_t i, const T *times, T *tprev, T *delta) {
    if (B > 0)
      ode_rnn_interval_kernel<T><<<grid_for(B, 256), 256, 0, dev.stream>>>(B, Tn, i, times,
                                                                           tprev, delta);
    NNCC_ODE_DEVICE_CHECK(dev, cudaGetLastError());
    return 0;
  }
  int rowTimes(int64_t B, double s, const T *tprev, const T *delta, T *t) {
    if (B > 0)
      ode_rnn_row_time_kernel<T><<<grid_for(B, 256), 256, 0, dev.stream>>>(B, s, tprev, delta, t);
    NNCC_ODE_DEVICE_CHECK(dev, cudaGetLastError());
    return 0;
  }
  int adjointIn(int64_t B, int64_t Tn, int64_t H, int64_t i, const T *dhs, const T *carry,
                T *a) {
    const int64_t n = B * H;
    if (n > 0)
      ode_rnn_adjoint_in_kernel<T><<<grid_for(n, 256), 256, 0, dev.stream>>>(B, Tn, H, i, dhs,
                                                                             carry, a);
    NNCC_ODE_DEVICE_CHECK(dev, cudaGetLastError());
    return 0;
  }
  /// The step log lives on the host, not in the (device) workspace.
  double *hostDoubles(int slot, void * /*inWorkspace*/, int64_t count) {
    stepLog[slot].assign(count > 0 ? (size_t)count : 0, 0.0);
    return stepLog[slot].data();
  }
};

/// ode_integrate (ODESolver.h) on the device: ode_integrate_with, the CPU's
/// loop, with the device's element loops. h [n] (device) evolves in place;
/// kIn: the stage slots, stageIn, err (dopri5 adaptive) device buffers;
/// dyn(s, in, out) -> int launches the dynamics.
template <typename T, typename Dyn, typename OnAccept = OdeIgnoreSteps>
int ode_integrate_device(OdeDevice &dev, int method, int64_t steps, double rtol, double atol,
                         int64_t n, int64_t rowLen, const T *rowScale, double s0, double s1,
                         T *h, T *const *kIn, T *stageIn, T *err, Dyn &&dyn, int64_t *nSteps,
                         OnAccept &&onAccept = OnAccept()) {
  OdeDeviceOps<T> ops(dev);
  return ode_integrate_with<T>(ops, method, steps, rtol, atol, n, rowLen, rowScale, s0, s1, h,
                               kIn, stageIn, err, static_cast<Dyn &&>(dyn), nSteps,
                               static_cast<OnAccept &&>(onAccept));
}

/// The ODE-RNN forward (nnk.ode_rnn) on the device: ode_rnn_with
/// (ODESolver.h), the CPU's loop over the observations, with the device's
/// element loops; every pointer is device memory (tcur null when the
/// dynamics do not read the rows' times).
template <typename T, typename Dyn, typename Cell>
int ode_rnn_device(OdeDevice &dev, int method, int64_t steps, double rtol, double atol,
                   int64_t B, int64_t Tn, int64_t I, int64_t H, const T *x, const T *times,
                   const T *h0, T *hs, T *work, int64_t K, T *xt, T *delta, T *tprev, T *tcur,
                   Dyn &&dyn, Cell &&cell) {
  OdeDeviceOps<T> ops(dev);
  return ode_rnn_with<T>(ops, method, steps, rtol, atol, B, Tn, I, H, x, times, h0, hs, work, K,
                         xt, delta, tprev, tcur, static_cast<Dyn &&>(dyn),
                         static_cast<Cell &&>(cell));
}

/// nncc::grad::ode_grad (GradKernels.h) on the device: ode_grad_with, the
/// CPU's algorithm and workspace layout (ode_grad_layout; ws is device
/// memory), with the device's element loops. h, a, gtheta and ws are device
/// pointers; dyn(s, in, out) and vjp(s, h, a, out_h, out_theta) launch the
/// regions. a: in dL/dh(s1), out dL/dh(s0); gtheta [P] += dθ.
template <typename T, typename Dyn, typename Vjp>
int ode_grad_device(OdeDevice &dev, int method, int64_t steps, int64_t maxSteps, double rtol,
                    double atol, int adjoint, int64_t n, int64_t rowLen, const T *rowScale,
                    double s0, double s1, const T *h, T *a, int64_t P, T *gtheta, void *ws,
                    Dyn &&dyn, Vjp &&vjp) {
  OdeDeviceOps<T> ops(dev);
  return nncc::grad::ode_grad_with<T>(ops, method, steps, maxSteps, rtol, atol, adjoint, n,
                                      rowLen, rowScale, s0, s1, h, a, P, gtheta, ws,
                                      static_cast<Dyn &&>(dyn), static_cast<Vjp &&>(vjp));
}

/// The ODE-RNN backward's workspace layout is the CPU's.
using nncc::grad::ode_rnn_grad_layout;
using nncc::grad::OdeRnnGradLayout;

/// The ODE-RNN backward (nnk.ode_rnn_grad) on the device:
/// nncc::grad::ode_rnn_grad_with (GradKernels.h), the CPU's loop over the
/// observations, with the device's element loops; every pointer is device
/// memory, ws the op's arena slot (ode_grad's scratch, then
/// OdeRnnGradLayout's arrays). The callbacks find the rows' times in
/// ws + tcur, set by the driver.
template <typename T, typename Dyn, typename DynVjp, typename CellVjp>
int ode_rnn_grad_device(OdeDevice &dev, int method, int64_t steps, int64_t maxSteps, double rtol,
                        double atol, int adjoint, int64_t B, int64_t Tn, int64_t I, int64_t H,
                        const T *x, const T *times, const T *h0, const T *hs, const T *dhs,
                        T *dx, T *dh0, int64_t Pd, T *dtheta, int64_t Pc, T *dphi, void *ws,
                        Dyn &&dyn, DynVjp &&dynvjp, CellVjp &&cellvjp) {
  OdeDeviceOps<T> ops(dev);
  return nncc::grad::ode_rnn_grad_with<T>(
      ops, method, steps, maxSteps, rtol, atol, adjoint, B, Tn, I, H, x, times, h0, hs, dhs, dx,
      dh0, Pd, dtheta, Pc, dphi, ws, static_cast<Dyn &&>(dyn), static_cast<DynVjp &&>(dynvjp),
      static_cast<CellVjp &&>(cellvjp));
}

#undef NNCC_ODE_DEVICE_CHECK

} // namespace cuda
} // namespace kernels
} // namespace nncc

#endif // NNCC_KERNELS_CUDA_ODE_CUH
