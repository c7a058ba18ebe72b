//===- Common.cuh - CUDA helpers for nncc kernels ---------------*- CUDA -*-===//
#ifndef NNCC_KERNELS_CUDA_COMMON_CUH
#define NNCC_KERNELS_CUDA_COMMON_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "nncc/Kernels/Common.h"

namespace nncc {
namespace kernels {
namespace cuda {

/// Sum over a warp (all 32 lanes participate).
template <typename T> __device__ __forceinline__ T warp_sum(T v) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

/// Sum over the block; every thread gets the result. `scratch` holds >= 32
/// values of T in shared memory. Contains __syncthreads(): call uniformly.
template <typename T> __device__ T block_sum(T v, T *scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int nwarps = (blockDim.x + 31) >> 5;
  v = warp_sum(v);
  __syncthreads();
  if (lane == 0)
    scratch[warp] = v;
  __syncthreads();
  // Only warp 0 reads the partials: thread 0 overwrites scratch[0] below,
  // after its warp's reads (warp_sum synchronises the warp) and while the
  // other warps wait at the barrier. (Every warp reading them raced with
  // that write: racecheck's hazard in layer_norm_kernel.)
  if (warp == 0) {
    T r = lane < nwarps ? scratch[lane] : T(0);
    r = warp_sum(r);
    if (lane == 0)
      scratch[0] = r;
  }
  __syncthreads();
  return scratch[0];
}

/// Maximum over the block; every thread gets the result. `scratch` holds
/// >= 32 values of T in shared memory. Contains __syncthreads(): call
/// uniformly.
template <typename T> __device__ T block_max(T v, T *scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int nwarps = (blockDim.x + 31) >> 5;
  for (int o = 16; o > 0; o >>= 1) {
    T other = __shfl_xor_sync(0xffffffffu, v, o);
    v = other > v ? other : v;
  }
  __syncthreads();
  if (lane == 0)
    scratch[warp] = v;
  __syncthreads();
  T r = scratch[0];
  for (int w = 1; w < nwarps; ++w)
    r = scratch[w] > r ? scratch[w] : r;
  __syncthreads();
  return r;
}

/// z[i, c] += b[c] over m rows of V (the bias of a launcher's own GEMM).
template <typename T>
__global__ void add_bias_rows_kernel(int64_t m, int64_t V, const T *b, T *z) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < m * V;
       i += (int64_t)gridDim.x * blockDim.x)
    z[i] += b[i % V];
}

inline unsigned grid_for(int64_t n, int block, unsigned cap = 65535u * 8u) {
  int64_t g = (n + block - 1) / block;
  if (g < 1)
    g = 1;
  return (unsigned)(g > (int64_t)cap ? cap : g);
}

} // namespace cuda
} // namespace kernels
} // namespace nncc

#endif
