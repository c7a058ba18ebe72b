//===- LayerNorm.cuh - Layer norm fused with the residual add ---*- CUDA -*-===//
//
// One block per row: y = LN(x + residual) * gamma + beta (two-pass mean /
// variance from the row held in shared memory), element math through
// layer_norm_apply (NormMath.h), shared with the CPU twin.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_CUDA_LAYERNORM_CUH
#define NNCC_KERNELS_CUDA_LAYERNORM_CUH

#include "nncc/Kernels/CUDA/Common.cuh"
#include "nncc/Kernels/NormMath.h"

namespace nncc {
namespace kernels {
namespace cuda {

/// Dynamic shared memory: N * sizeof(T) + 32 * sizeof(T).
template <typename T>
__global__ void layer_norm_kernel(int64_t N, const T *x, const T *residual,
                                  const T *gamma, const T *beta, T eps, T *y,
                                  T *sum_out, T *mean_out, T *rstd_out) {
  extern __shared__ unsigned char nncc_ln_smem[];
  T *row = reinterpret_cast<T *>(nncc_ln_smem);
  T *scratch = row + N;
  const int64_t r = blockIdx.x;
  const T *xr = x + r * N;
  const T *rr = residual ? residual + r * N : nullptr;
  T s = T(0);
  for (int64_t j = threadIdx.x; j < N; j += blockDim.x) {
    T v = xr[j] + (rr ? rr[j] : T(0));
    row[j] = v;
    if (sum_out)
      sum_out[r * N + j] = v;
    s += v;
  }
  const T mean = block_sum(s, scratch) / T(N);
  T q = T(0);
  for (int64_t j = threadIdx.x; j < N; j += blockDim.x) {
    T d = row[j] - mean;
    q += d * d;
  }
  const T var = block_sum(q, scratch) / T(N);
  const T rstd = T(1) / nsqrt(var + eps);
  for (int64_t j = threadIdx.x; j < N; j += blockDim.x)
    y[r * N + j] = layer_norm_apply(row[j], mean, rstd, gamma, beta, j);
  if (threadIdx.x == 0) {
    if (mean_out)
      mean_out[r] = mean;
    if (rstd_out)
      rstd_out[r] = rstd;
  }
}

template <typename T>
inline cudaError_t launch_layer_norm(int64_t rows, int64_t N, const T *x,
                                     const T *residual, const T *gamma,
                                     const T *beta, T eps, T *y, T *sum_out,
                                     T *mean_out, T *rstd_out,
                                     cudaStream_t stream = 0) {
  size_t smem = (size_t)(N + 32) * sizeof(T);
  if (smem > 48 * 1024) {
    cudaError_t e = cudaFuncSetAttribute(
        layer_norm_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
        (int)smem);
    if (e != cudaSuccess)
      return e;
  }
  layer_norm_kernel<T><<<(unsigned)rows, 256, smem, stream>>>(
      N, x, residual, gamma, beta, eps, y, sum_out, mean_out, rstd_out);
  return cudaGetLastError();
}

} // namespace cuda
} // namespace kernels
} // namespace nncc

#endif
