//===- Common.cuh - CUDA helpers for nncc kernels ---------------*- CUDA -*-===//
#ifndef NNCC_KERNELS_CUDA_COMMON_CUH
#define NNCC_KERNELS_CUDA_COMMON_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "nncc/Kernels/Bf16.h"
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

/// z[i, c] += b[c] over m rows of V (the bias of a launcher's own GEMM; a
/// bf16 bias may be added to fp32 rows).
template <typename T, typename Z = T>
__global__ void add_bias_rows_kernel(int64_t m, int64_t V, const T *b, Z *z) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < m * V;
       i += (int64_t)gridDim.x * blockDim.x)
    z[i] += load_acc(b[i % V]);
}

inline unsigned grid_for(int64_t n, int block, unsigned cap = 65535u * 8u) {
  int64_t g = (n + block - 1) / block;
  if (g < 1)
    g = 1;
  return (unsigned)(g > (int64_t)cap ? cap : g);
}

/// dst[i] = src[i] in the other element type (load_acc, store_acc<To>).
template <typename From, typename To>
__global__ void convert_elements_kernel(int64_t n, const From *__restrict__ src,
                                        To *__restrict__ dst) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    dst[i] = store_acc<To>(load_acc(src[i]));
}

/// Converts n elements (nothing when either pointer is null or n <= 0).
template <typename From, typename To>
inline cudaError_t convert_elements(int64_t n, const From *src, To *dst, cudaStream_t stream) {
  if (!src || !dst || n <= 0)
    return cudaSuccess;
  convert_elements_kernel<From, To><<<grid_for(n, 256), 256, 0, stream>>>(n, src, dst);
  return cudaGetLastError();
}

//===----------------------------------------------------------------------===//
// Deterministic column sums
//===----------------------------------------------------------------------===//
//
// sum over r of f(r, j) for every column j of a [rows, cols] problem (bias
// and layer-norm parameter gradients, reductions over leading dims). A CTA
// of kColSumWarps warps owns 32 consecutive columns (lane = column: each
// warp reads 32 neighbouring elements of a row, coalesced in row-major
// data) and a slice of kColSliceRows rows: warp w adds the slice's rows w,
// w + kColSumWarps, ... in order, then the warps' sums meet in a fixed tree
// in warp 0. One slice: that is the result (g). More: each slice's sums
// go to double partials and a second pass adds the slices in order. The
// split depends on the shape only, so results are the same on every run
// and every GPU; rows over 16 warps and slices over CTAs keep enough loads
// in flight to run at memory speed, which one thread per (slice, column)
// walking its rows one load at a time did not.
//
// F: `__device__ void operator()(int64_t r, int64_t j, double acc[NS]) const`
//    adds row r's terms of column j; G: `__device__ void operator()(int64_t
//    j, const double sums[NS]) const` stores them.

constexpr int kColSumWarps = 16;
constexpr int64_t kColSliceRows = 16 * kColSumWarps;

inline int64_t col_sum_slices(int64_t rows) {
  return rows > kColSliceRows ? (rows + kColSliceRows - 1) / kColSliceRows : 1;
}

/// Device scratch of launch_col_sums (0 when one pass does).
inline uint64_t col_sum_scratch_bytes(int64_t rows, int64_t cols, int NS) {
  const int64_t slices = col_sum_slices(rows);
  return slices > 1 ? (uint64_t)slices * (uint64_t)(cols > 0 ? cols : 0) * NS * sizeof(double)
                    : 0;
}

/// The f of a row-major matrix: row r's term of column j is a[r lda + j]
/// (bf16_t widened by load_acc).
template <typename T> struct RowMajorColTerms {
  const T *a;
  int64_t lda;
  __device__ void operator()(int64_t r, int64_t j, double acc[1]) const {
    acc[0] += (double)load_acc(a[r * lda + j]);
  }
};

/// Pass 1: CTA-uniform loop over (slice of slice_rows rows, 32-column
/// block) pairs, column blocks fastest; sums to g (partial == null: one
/// slice) or to partial.
template <int NS, typename F, typename G>
__global__ void __launch_bounds__(32 * kColSumWarps)
    col_sum_slices_kernel(int64_t rows, int64_t cols, int64_t slice_rows, int64_t slices, F f,
                          G g, double *partial) {
  // The warps' sums meet in a tree (warp w + half into warp w, half = 8,
  // 4, 2, 1): a fixed order, and 2 KiB of shared memory per sum.
  __shared__ double upper[NS][kColSumWarps / 2][32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t colBlocks = (cols + 31) / 32;
  for (int64_t blk = blockIdx.x; blk < colBlocks * slices; blk += gridDim.x) {
    const int64_t sl = blk / colBlocks, j = (blk % colBlocks) * 32 + lane;
    const int64_t r1 = (sl + 1) * slice_rows < rows ? (sl + 1) * slice_rows : rows;
    double acc[NS];
    for (int q = 0; q < NS; ++q)
      acc[q] = 0;
    if (j < cols)
      for (int64_t r = sl * slice_rows + warp; r < r1; r += kColSumWarps)
        f(r, j, acc);
    for (int half = kColSumWarps / 2; half >= 1; half >>= 1) {
      if (warp >= half && warp < 2 * half)
        for (int q = 0; q < NS; ++q)
          upper[q][warp - half][lane] = acc[q];
      __syncthreads();
      if (warp < half)
        for (int q = 0; q < NS; ++q)
          acc[q] += upper[q][warp][lane];
      __syncthreads(); // upper is rewritten by the next level / pair
    }
    if (warp == 0 && j < cols) {
      if (!partial)
        g(j, acc);
      else
        for (int q = 0; q < NS; ++q)
          partial[((int64_t)q * slices + sl) * cols + j] = acc[q];
    }
  }
}

/// Pass 2 (several slices): one thread per column adds the slices in order.
template <int NS, typename G>
__global__ void col_sum_finish_kernel(int64_t cols, int64_t slices, const double *partial,
                                      G g) {
  for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < cols;
       j += (int64_t)gridDim.x * blockDim.x) {
    double acc[NS];
    for (int q = 0; q < NS; ++q) {
      acc[q] = 0;
      for (int64_t sl = 0; sl < slices; ++sl)
        acc[q] += partial[((int64_t)q * slices + sl) * cols + j];
    }
    g(j, acc);
  }
}

/// The column sums of f over rows, stored by g; `scratch` holds
/// col_sum_scratch_bytes(rows, cols, NS) bytes of device memory.
template <int NS, typename F, typename G>
inline cudaError_t launch_col_sums(int64_t rows, int64_t cols, F f, G g, void *scratch,
                                   cudaStream_t stream) {
  if (rows < 0 || cols < 0)
    return cudaErrorInvalidValue;
  if (cols == 0)
    return cudaSuccess;
  const int64_t slices = col_sum_slices(rows);
  double *partial = nullptr;
  if (slices > 1) {
    if (!scratch)
      return cudaErrorInvalidValue;
    partial = static_cast<double *>(scratch);
  }
  col_sum_slices_kernel<NS, F, G>
      <<<grid_for(slices * ((cols + 31) / 32), 1), 32 * kColSumWarps, 0, stream>>>(
          rows, cols, kColSliceRows, slices, f, g, partial);
  if (slices > 1)
    col_sum_finish_kernel<NS, G><<<grid_for(cols, 256), 256, 0, stream>>>(cols, slices,
                                                                          partial, g);
  return cudaGetLastError();
}

/// Threads per CTA of the one-thread-per-element backward kernels.
constexpr int kBackwardThreads = 256;

/// Records `code` in *flag (the index-check flag the generated forward
/// reads back once at its end) unless an earlier launch already did.
__device__ __forceinline__ void raise_flag(int *flag, int code) {
  if (flag)
    atomicCAS(flag, 0, code);
}

} // namespace cuda
} // namespace kernels
} // namespace nncc

#endif
