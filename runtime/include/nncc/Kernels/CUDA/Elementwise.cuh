//===- Elementwise.cuh - GEMM epilogue, dropout, zoneout -------*- CUDA -*-===//
//
// The GEMM itself is cuBLAS (caller); these kernels are the fused epilogue
// y = act(acc + bias) + residual, and the other elementwise ops, all through
// the NNCC_HD functions of Common.h / RandomMasks.h that the CPU
// twins call. The epilogue and dropout also take T = bf16_t: elements are
// widened by load_acc, computed in acc_t<T> (float) with acc_t<T> scalars
// and rounded once by store_acc (Bf16.h); f32 / f64 are unaffected.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_CUDA_ELEMENTWISE_CUH
#define NNCC_KERNELS_CUDA_ELEMENTWISE_CUH

#include "nncc/Kernels/Bf16.h"
#include "nncc/Kernels/CUDA/Common.cuh"
#include "nncc/Kernels/RandomMasks.h"

namespace nncc {
namespace kernels {
namespace cuda {

/// VW consecutive elements of T as one aligned access (VW sizeof(T) bytes,
/// at most 16 per load or store instruction).
template <typename T, int VW> struct alignas(VW * sizeof(T)) ElemVec {
  T e[VW];
};

/// Whether p allows aligned accesses of `bytes` (null counts as aligned).
inline bool aligned_to(const void *p, size_t bytes) {
  return ((uintptr_t)p & (bytes - 1)) == 0;
}

/// In place on y [M, N] (the GEMM output): y = act(y + bias) + residual,
/// VW consecutive elements of a row per access (VW > 1: N % VW == 0 and y,
/// bias, residual aligned to VW elements; launcher-checked). Rows over
/// blockIdx.y (striding by gridDim.y), vectors of a row over x: no index
/// division. Arithmetic in acc_t<T>, one rounding per stored element.
template <typename T, int VW>
__global__ void linear_epilogue_kernel(int64_t M, int64_t N, T *y,
                                       const T *bias, int act, acc_t<T> alpha,
                                       const T *residual) {
  using A = acc_t<T>;
  using V = ElemVec<T, VW>;
  const int64_t nv = N / VW;
  for (int64_t r = blockIdx.y; r < M; r += gridDim.y)
    for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < nv;
         c += (int64_t)gridDim.x * blockDim.x) {
      const int64_t i = r * nv + c;
      V v = reinterpret_cast<const V *>(y)[i], b = {}, res = {};
      if (bias)
        b = reinterpret_cast<const V *>(bias)[c];
      if (residual)
        res = reinterpret_cast<const V *>(residual)[i];
#pragma unroll
      for (int u = 0; u < VW; ++u) {
        const A x = activate(act, load_acc(v.e[u]) + (bias ? load_acc(b.e[u]) : A(0)), alpha);
        v.e[u] = store_acc<T>(residual ? x + load_acc(res.e[u]) : x);
      }
      reinterpret_cast<V *>(y)[i] = v;
    }
}

/// Rows of the epilogue grid (blockIdx.y): at most this many CTAs per
/// column range; larger M loops.
constexpr unsigned kEpilogueGridRows = 4096;

/// Calls f(i, u_i) for every element i < n of the mask stream (seed,
/// offset), u_i = philox_uniform(seed, offset, i): a thread per Philox block
/// of four consecutive elements, one block computed for all four (the
/// per-element form computes each block four times, which made these
/// kernels compute-bound).
template <typename F>
__device__ __forceinline__ void for_each_mask_uniform(int64_t n, uint64_t seed,
                                                      uint64_t offset, F &&f) {
  const int64_t blocks = (n + 3) / 4;
  const bool aligned = (offset & 3) == 0; // whole Philox blocks (RandomMasks.h)
  for (int64_t b = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; b < blocks;
       b += (int64_t)gridDim.x * blockDim.x) {
    if (!aligned) {
      for (int w = 0; w < 4; ++w)
        if (4 * b + w < n)
          f(4 * b + w, philox_uniform(seed, offset, (uint64_t)(4 * b + w)));
      continue;
    }
    const nncc_philox_u32x4 bits = philox_mask_block(seed, offset, (uint64_t)b);
#pragma unroll
    for (int w = 0; w < 4; ++w)
      if (4 * b + w < n)
        f(4 * b + w, nncc_rng_u32_to_unit_float(bits.x[w]));
  }
}

/// Same bits as the CPU twin: keep_i = philox_uniform(seed, offset, i) >= p
/// (compared in float, dropout_keep), and the same scale 1 / (1 - p) in
/// acc_t<T>.
/// Vec: the four elements of a Philox block as one aligned access of x and
/// y and one 4-byte store of the mask (n % 4 == 0, offset % 4 == 0 and the
/// pointers aligned: launcher-checked).
template <typename T, bool Vec = false>
__global__ void dropout_kernel(int64_t n, double p, uint64_t seed,
                               uint64_t offset, const T *x, T *y,
                               uint8_t *mask) {
  using A = acc_t<T>;
  const A scale = A(1) / (A(1) - A(p));
  const float pf = (float)p;
  if constexpr (Vec) {
    using V = ElemVec<T, 4>;
    for (int64_t b = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; b < n / 4;
         b += (int64_t)gridDim.x * blockDim.x) {
      const nncc_philox_u32x4 bits = philox_mask_block(seed, offset, (uint64_t)b);
      V v = reinterpret_cast<const V *>(x)[b];
      uint32_t m = 0;
#pragma unroll
      for (int w = 0; w < 4; ++w) {
        const bool keep = nncc_rng_u32_to_unit_float(bits.x[w]) >= pf;
        v.e[w] = store_acc<T>(keep ? load_acc(v.e[w]) * scale : A(0));
        m |= (uint32_t)keep << (8 * w);
      }
      reinterpret_cast<V *>(y)[b] = v;
      if (mask)
        reinterpret_cast<uint32_t *>(mask)[b] = m; // little-endian: byte w = element w
    }
  } else {
    for_each_mask_uniform(n, seed, offset, [&](int64_t i, float u) {
      const bool keep = u >= pf;
      y[i] = store_acc<T>(keep ? load_acc(x[i]) * scale : A(0));
      if (mask)
        mask[i] = keep;
    });
  }
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
inline cudaError_t launch_linear_epilogue(int64_t M, int64_t N, T *y,
                                          const T *bias, int act, acc_t<T> alpha,
                                          const T *residual,
                                          cudaStream_t stream = 0) {
  if (M <= 0 || N <= 0)
    return cudaSuccess;
  constexpr int VW = 16 / (int)sizeof(T);
  const bool vec =
      N % VW == 0 && aligned_to(y, 16) && aligned_to(bias, 16) && aligned_to(residual, 16);
  const int64_t nv = vec ? N / VW : N;
  const int block = nv >= 256 ? 256 : (int)((nv + 31) / 32 * 32);
  const dim3 grid(grid_for(nv, block, 65535u),
                  (unsigned)(M < (int64_t)kEpilogueGridRows ? M : kEpilogueGridRows));
  if (vec)
    linear_epilogue_kernel<T, VW><<<grid, block, 0, stream>>>(M, N, y, bias, act, alpha,
                                                              residual);
  else
    linear_epilogue_kernel<T, 1><<<grid, block, 0, stream>>>(M, N, y, bias, act, alpha,
                                                             residual);
  return cudaGetLastError();
}

template <typename T>
inline cudaError_t launch_dropout(int64_t n, double p, uint64_t seed,
                                  uint64_t offset, const T *x, T *y,
                                  uint8_t *mask, cudaStream_t stream = 0) {
  if (n <= 0)
    return cudaSuccess;
  const unsigned grid = grid_for((n + 3) / 4, 256);
  if (n % 4 == 0 && offset % 4 == 0 && aligned_to(x, 4 * sizeof(T)) &&
      aligned_to(y, 4 * sizeof(T)) && aligned_to(mask, 4))
    dropout_kernel<T, true><<<grid, 256, 0, stream>>>(n, p, seed, offset, x, y, mask);
  else
    dropout_kernel<T, false><<<grid, 256, 0, stream>>>(n, p, seed, offset, x, y, mask);
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
