//===- Ode.cuh - Runge-Kutta stage combinations on the GPU ------*- CUDA -*-===//
//
// nnk.ode_solve / nnk.ode_rnn run as host loops of launches (the dynamics'
// kernels per stage). Between stages ONE fused kernel forms the next stage
// input y = h + dt * sum_j a_j k_j; after the last stage one fused kernel
// forms h_new = h + dt * sum_j b_j k_j and, for dopri5, the error
// e = dt * sum_j (b_j - b*_j) k_j in the same pass. dt is a scalar, or one
// value per row (ODE-RNN: each row has its own observation times).
// The adaptive dopri5 loop reduces the error norm
// sqrt(mean((e / (atol + rtol * max(|h|, |h_new|)))^2)) on the device and
// reads one double back per step. The tableaus and the step controller are
// ODESolver.h's NNCC_HD functions, the ones the CPU solver runs.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_CUDA_ODE_CUH
#define NNCC_KERNELS_CUDA_ODE_CUH

#include "nncc/Kernels/CUDA/Data.cuh"
#include "nncc/Kernels/ODESolver.h"

namespace nncc {
namespace kernels {
namespace cuda {

constexpr int kOdeMaxStages = 7;

/// Coefficients of one combination: k_j = k + j * slot_stride, j < nk.
struct OdeCombine {
  int32_t nk;
  double a[kOdeMaxStages];   // y = h + dt * sum a_j k_j
  double e[kOdeMaxStages];   // err = dt * sum e_j k_j (when err != null)
};

/// y[i] = h[i] + dt_i * sum_j a_j k_j[i] (sum in ascending j, in T);
/// dt_i = dt_rows[i / row_len] when dt_rows is given, else dt.
template <typename T>
__global__ void ode_combine_kernel(OdeCombine c, int64_t n, int64_t row_len,
                                   const T *__restrict__ h, const T *__restrict__ k,
                                   int64_t slot_stride, T dt, const T *__restrict__ dt_rows,
                                   T *__restrict__ y, T *__restrict__ err) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const T d = dt_rows ? dt_rows[i / row_len] : dt;
    T s = T(0), se = T(0);
    for (int j = 0; j < c.nk; ++j) {
      const T kj = k[j * slot_stride + i];
      if (c.a[j] != 0.0)
        s += T(c.a[j]) * kj;
      if (err && c.e[j] != 0.0)
        se += T(c.e[j]) * kj;
    }
    const T hi = h[i];
    y[i] = hi + d * s;
    if (err)
      err[i] = d * se;
  }
}

template <typename T>
inline cudaError_t launch_ode_combine(const OdeCombine &c, int64_t n, int64_t row_len,
                                      const T *h, const T *k, int64_t slot_stride, T dt,
                                      const T *dt_rows, T *y, T *err,
                                      cudaStream_t stream) {
  if (n <= 0)
    return cudaSuccess;
  ode_combine_kernel<T><<<grid_for(n, 256), 256, 0, stream>>>(c, n, row_len, h, k,
                                                              slot_stride, dt, dt_rows, y,
                                                              err);
  return cudaGetLastError();
}

/// Per-CTA partial sums of (e / (atol + rtol max(|h|, |h_new|)))^2.
template <typename T>
__global__ void ode_error_partial_kernel(int64_t n, const T *h, const T *hn, const T *e,
                                         double atol, double rtol, double *part) {
  double s = 0;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const double q = ode_error_ratio((double)e[i], (double)h[i], (double)hn[i], atol, rtol);
    s += q * q;
  }
  block_partial(s, blockIdx.x == 0 && threadIdx.x == 0 ? (double)n : 0.0, part);
}

/// mean of the squared scaled error into *out (device double); the caller
/// copies it back and takes the square root. scratch: loss_scratch_bytes().
template <typename T>
inline cudaError_t launch_ode_error_norm(int64_t n, const T *h, const T *hn, const T *e,
                                         double atol, double rtol, void *scratch,
                                         double *out, cudaStream_t stream) {
  double *part = static_cast<double *>(scratch);
  const unsigned g = loss_grid(n);
  ode_error_partial_kernel<T><<<g, kLossThreads, 0, stream>>>(n, h, hn, e, atol, rtol, part);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    return err;
  loss_finish_kernel<double><<<1, kLossThreads, 0, stream>>>((int)g, part, out);
  return cudaGetLastError();
}

/// ODE-RNN per-row times: dt[b] = (times[b, i] - times[b, i-1]) / steps and
/// t[b] = times[b, i-1] + (step + c) * dt[b] (times [B, Tn]).
template <typename T>
__global__ void ode_rnn_times_kernel(int64_t B, int64_t Tn, int64_t i, int64_t steps,
                                     double step_plus_c, const T *times, T *dt, T *t) {
  for (int64_t b = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; b < B;
       b += (int64_t)gridDim.x * blockDim.x) {
    const T t0 = times[b * Tn + i - 1], t1 = times[b * Tn + i];
    const T d = (t1 - t0) / T(steps);
    dt[b] = d;
    t[b] = t0 + T(step_plus_c) * d;
  }
}

} // namespace cuda
} // namespace kernels
} // namespace nncc

#endif // NNCC_KERNELS_CUDA_ODE_CUH
