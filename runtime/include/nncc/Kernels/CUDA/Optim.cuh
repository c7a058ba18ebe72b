//===- Optim.cuh - the optimizer step on the device -------------*- CUDA -*-===//
//
// train_step on CUDA (docs/training.md): the global gradient norm as a sum
// of squares in double, in a fixed order (per-CTA partials of a fixed grid,
// then one CTA), and the fused SGD / Adam / AdamW updates of OptimMath.h,
// the element functions the CPU kernels (runtime/lib/Kernels/Optim.cpp)
// call. Compiled with nvcc; not yet run on a GPU.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_CUDA_OPTIM_CUH
#define NNCC_KERNELS_CUDA_OPTIM_CUH

#include "nncc/Kernels/CUDA/Common.cuh"
#include "nncc/Kernels/OptimMath.h"

#include <cmath>

namespace nncc {
namespace kernels {
namespace cuda {

/// CTAs (and partials) per tensor of the gradient norm.
constexpr int kSumSquaresBlocks = 256;
constexpr int kOptimThreads = 256;

/// part[blockIdx.x] = sum of g[i]^2 over the CTA's grid-stride share.
template <typename T>
__global__ void sum_squares_partial_kernel(int64_t n, const T *g, double *part) {
  __shared__ double scratch[32];
  double s = 0.0;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    s += (double)g[i] * (double)g[i];
  s = block_sum(s, scratch);
  if (threadIdx.x == 0)
    part[blockIdx.x] = s;
}

/// out[0] = sum of part[0, count), one CTA.
__global__ void sum_partials_kernel(int64_t count, const double *part, double *out) {
  __shared__ double scratch[32];
  double s = 0.0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x)
    s += part[i];
  s = block_sum(s, scratch);
  if (threadIdx.x == 0)
    out[0] = s;
}

/// Writes kSumSquaresBlocks partials of sum(g^2) to `part`.
template <typename T>
cudaError_t launch_sum_squares_partials(int64_t n, const T *g, double *part,
                                        cudaStream_t stream) {
  sum_squares_partial_kernel<T><<<kSumSquaresBlocks, kOptimThreads, 0, stream>>>(n, g, part);
  return cudaGetLastError();
}

inline cudaError_t launch_sum_partials(int64_t count, const double *part, double *out,
                                       cudaStream_t stream) {
  sum_partials_kernel<<<1, kOptimThreads, 0, stream>>>(count, part, out);
  return cudaGetLastError();
}

template <typename T>
__global__ void sgd_step_kernel(int64_t n, T *p, const T *g, T *buf, T scale, bool scaled,
                                T lr, T momentum, T wd, bool nesterov, bool first) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    T gi = scaled ? g[i] * scale : g[i];
    T none = T(0);
    sgdUpdate<T>(p[i], gi, buf ? buf[i] : none, lr, buf ? momentum : T(0), wd, nesterov,
                 first);
  }
}

template <typename T>
__global__ void adam_step_kernel(int64_t n, T *p, const T *g, T *m, T *v, T scale,
                                 bool scaled, T lr, T beta1, T beta2, T eps, T wd,
                                 bool decoupled, T bc1, T bc2) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    T gi = scaled ? g[i] * scale : g[i];
    adamUpdate<T>(p[i], gi, m[i], v[i], lr, beta1, beta2, eps, wd, decoupled, bc1, bc2);
  }
}

/// SGD with momentum (buf may be NULL when momentum is 0), as nncc_sgd_step.
template <typename T>
cudaError_t launch_sgd_step(int64_t n, T *p, const T *g, T *buf, double gscale, double lr,
                            double momentum, double wd, int nesterov, int first,
                            cudaStream_t stream) {
  if (n <= 0)
    return cudaSuccess;
  if (momentum != 0.0 && !buf)
    return cudaErrorInvalidValue;
  sgd_step_kernel<T><<<grid_for(n, kOptimThreads), kOptimThreads, 0, stream>>>(
      n, p, g, buf, T(gscale), gscale != 1.0, T(lr), T(momentum), T(wd), nesterov != 0,
      first != 0);
  return cudaGetLastError();
}

/// Adam / AdamW, as nncc_adam_step: the bias corrections in double on the
/// host (as torch computes them), the update per element.
template <typename T>
cudaError_t launch_adam_step(int64_t n, T *p, const T *g, T *m, T *v, double gscale,
                             double lr, double beta1, double beta2, double eps, double wd,
                             int decoupled, int64_t step, cudaStream_t stream) {
  if (n <= 0)
    return cudaSuccess;
  if (step < 1 || !m || !v)
    return cudaErrorInvalidValue;
  const T bc1 = T(1.0 - std::pow(beta1, double(step)));
  const T bc2 = T(1.0 - std::pow(beta2, double(step)));
  adam_step_kernel<T><<<grid_for(n, kOptimThreads), kOptimThreads, 0, stream>>>(
      n, p, g, m, v, T(gscale), gscale != 1.0, T(lr), T(beta1), T(beta2), T(eps), T(wd),
      decoupled != 0, bc1, bc2);
  return cudaGetLastError();
}

} // namespace cuda
} // namespace kernels
} // namespace nncc

#endif
