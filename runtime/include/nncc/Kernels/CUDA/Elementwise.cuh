//===- Elementwise.cuh - GEMM epilogue, dropout, zoneout -------*- CUDA -*-===//
//
// The GEMM itself is cuBLAS (caller); these kernels are the fused epilogue
// y = act(acc + bias) + residual, and the other elementwise ops, all through
// the NNCC_HD functions of Common.h / Philox.h / NormMath.h that the CPU
// twins call.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_CUDA_ELEMENTWISE_CUH
#define NNCC_KERNELS_CUDA_ELEMENTWISE_CUH

#include "nncc/Kernels/CUDA/Common.cuh"
#include "nncc/Kernels/NormMath.h"
#include "nncc/Kernels/Philox.h"

namespace nncc {
namespace kernels {
namespace cuda {

/// In place on y [M, N] (the GEMM output): y = act(y + bias) + residual.
template <typename T>
__global__ void linear_epilogue_kernel(int64_t M, int64_t N, T *y,
                                       const T *bias, int act, T alpha,
                                       const T *residual) {
  const int64_t n = M * N;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int col = (int)(i % N);
    y[i] = linear_epilogue(y[i], bias, col, act, alpha,
                           residual ? residual + i : nullptr);
  }
}

/// Calls f(i, u_i) for every element i < n of the mask stream (seed,
/// offset), u_i = philox_uniform(seed, offset, i): a thread per Philox block
/// of four consecutive elements, one block computed for all four (the
/// per-element form computes each block four times, which made these
/// kernels compute-bound).
template <typename F>
__device__ __forceinline__ void for_each_mask_uniform(int64_t n, uint64_t seed,
                                                      uint64_t offset, F &&f) {
  const int64_t blocks = (n + 3) / 4;
  for (int64_t b = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; b < blocks;
       b += (int64_t)gridDim.x * blockDim.x) {
    const nncc_philox_u32x4 bits = philox_mask_block(seed, offset, (uint64_t)b);
#pragma unroll
    for (int w = 0; w < 4; ++w)
      if (4 * b + w < n)
        f(4 * b + w, nncc_rng_u32_to_unit_float(bits.x[w]));
  }
}

/// Same bits as the CPU twin: keep_i = philox_uniform(seed, offset, i) >= p
/// (compared in float, dropout_keep), and the same scale 1 / (1 - p) in T.
template <typename T>
__global__ void dropout_kernel(int64_t n, double p, uint64_t seed,
                               uint64_t offset, const T *x, T *y,
                               uint8_t *mask) {
  const T scale = T(1) / (T(1) - T(p));
  const float pf = (float)p;
  for_each_mask_uniform(n, seed, offset, [&](int64_t i, float u) {
    const bool keep = u >= pf;
    y[i] = keep ? x[i] * scale : T(0);
    if (mask)
      mask[i] = keep;
  });
}

/// The previous state where zoneout_keep_prev (u < p), else the new one.
template <typename T>
__global__ void zoneout_kernel(int64_t n, float p, uint64_t seed,
                               uint64_t offset, const T *newState,
                               const T *prev, T *y) {
  for_each_mask_uniform(n, seed, offset, [&](int64_t i, float u) {
    y[i] = u < p ? prev[i] : newState[i];
  });
}

template <typename T>
__global__ void sinusoidal_position_kernel(int64_t B, int64_t Tn, int64_t E,
                                           const T *x, T *y) {
  const int64_t n = B * Tn * E;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t e = i % E, t = (i / E) % Tn;
    y[i] = x[i] + sinusoidal_pe<T>(t, e, E);
  }
}

template <typename T>
inline cudaError_t launch_linear_epilogue(int64_t M, int64_t N, T *y,
                                          const T *bias, int act, T alpha,
                                          const T *residual,
                                          cudaStream_t stream = 0) {
  linear_epilogue_kernel<T><<<grid_for(M * N, 256), 256, 0, stream>>>(
      M, N, y, bias, act, alpha, residual);
  return cudaGetLastError();
}

template <typename T>
inline cudaError_t launch_dropout(int64_t n, double p, uint64_t seed,
                                  uint64_t offset, const T *x, T *y,
                                  uint8_t *mask, cudaStream_t stream = 0) {
  dropout_kernel<T><<<grid_for((n + 3) / 4, 256), 256, 0, stream>>>(n, p, seed, offset, x, y,
                                                                    mask);
  return cudaGetLastError();
}

template <typename T>
inline cudaError_t launch_zoneout(int64_t n, float p, uint64_t seed,
                                  uint64_t offset, const T *newState,
                                  const T *prev, T *y,
                                  cudaStream_t stream = 0) {
  zoneout_kernel<T><<<grid_for((n + 3) / 4, 256), 256, 0, stream>>>(n, p, seed, offset,
                                                                    newState, prev, y);
  return cudaGetLastError();
}

} // namespace cuda
} // namespace kernels
} // namespace nncc

#endif
