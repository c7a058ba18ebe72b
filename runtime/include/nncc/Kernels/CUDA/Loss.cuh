//===- Loss.cuh - MSE, cross-entropy, BCE losses ---------------*- CUDA -*-===//
//
// The loss family's forward on CUDA, the twin of runtime/lib/Kernels/Loss.cpp
// (the fused linear + cross-entropy head is LossHead.cuh): per-CTA double
// partials, then one CTA finishes the mean in a fixed order. Cross-entropy
// takes i32 or i64 targets and ignore_index; a target out of range sets the
// index-check flag (raise_flag). BCE takes an optional pos_weight. Row math
// is NormMath.h (cross_entropy_row, bce_logits_elem), shared with the CPU.
//
// Element types: float, double and bf16_t (Bf16.h): elements are read
// through load_acc, accumulated in double and the loss stored once through
// store_acc<T>. Scratch sizes do not depend on T.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_CUDA_LOSS_CUH
#define NNCC_KERNELS_CUDA_LOSS_CUH

#include "nncc/Kernels/Bf16.h"
#include "nncc/Kernels/CUDA/Common.cuh"
#include "nncc/Kernels/NormMath.h"

namespace nncc {
namespace kernels {
namespace cuda {

constexpr int kLossBlocks = 256;
constexpr int kLossThreads = 256;

/// Bytes of scratch the loss launchers need.
inline int64_t loss_scratch_bytes() { return 2 * kLossBlocks * (int64_t)sizeof(double); }

__device__ __forceinline__ void block_partial(double v, double c, double *part) {
  __shared__ double sv[kLossThreads], sc[kLossThreads];
  sv[threadIdx.x] = v;
  sc[threadIdx.x] = c;
  __syncthreads();
  for (int w = kLossThreads / 2; w > 0; w >>= 1) {
    if ((int)threadIdx.x < w) {
      sv[threadIdx.x] += sv[threadIdx.x + w];
      sc[threadIdx.x] += sc[threadIdx.x + w];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    part[blockIdx.x] = sv[0];
    part[kLossBlocks + blockIdx.x] = sc[0];
  }
}

/// out[0] = sum(partials) / sum(counts) (0/0 = NaN, as PyTorch).
template <typename T>
__global__ void loss_finish_kernel(int nparts, const double *part, T *out) {
  __shared__ double sv[kLossThreads], sc[kLossThreads];
  double v = 0, c = 0;
  for (int i = threadIdx.x; i < nparts; i += blockDim.x) {
    v += part[i];
    c += part[kLossBlocks + i];
  }
  sv[threadIdx.x] = v;
  sc[threadIdx.x] = c;
  __syncthreads();
  for (int w = kLossThreads / 2; w > 0; w >>= 1) {
    if ((int)threadIdx.x < w) {
      sv[threadIdx.x] += sv[threadIdx.x + w];
      sc[threadIdx.x] += sc[threadIdx.x + w];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0)
    out[0] = store_acc<T>((acc_t<T>)(sv[0] / sc[0]));
}

template <typename T>
__global__ void mse_partial_kernel(int64_t n, const T *a, const T *b, double *part) {
  double s = 0;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const double d = (double)load_acc(a[i]) - (double)load_acc(b[i]);
    s += d * d;
  }
  block_partial(s, blockIdx.x == 0 && threadIdx.x == 0 ? (double)n : 0.0, part);
}

/// Mean over the rows whose target is not ignore_index; a target outside
/// [0, C) raises the flag.
template <typename T, typename I>
__global__ void cross_entropy_partial_kernel(int64_t N, int64_t C, const T *logits,
                                             const I *target, int64_t ignore, double *part,
                                             int *flag, int code) {
  double s = 0, cnt = 0;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < N;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t t = (int64_t)target[i];
    if (t == ignore)
      continue;
    if (t < 0 || t >= C) {
      raise_flag(flag, code);
      continue;
    }
    s += cross_entropy_row<T, double>(logits + i * C, C, t);
    cnt += 1;
  }
  block_partial(s, cnt, part);
}

template <typename T>
__global__ void bce_partial_kernel(int64_t N, int64_t C, const T *x, const T *y,
                                   const T *pw, double *part) {
  double s = 0;
  const int64_t n = N * C;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    s += bce_logits_elem<double>((double)load_acc(x[i]), (double)load_acc(y[i]),
                                 pw ? (double)load_acc(pw[i % C]) : 1.0);
  block_partial(s, blockIdx.x == 0 && threadIdx.x == 0 ? (double)n : 0.0, part);
}

inline unsigned loss_grid(int64_t n) {
  int64_t g = (n + kLossThreads - 1) / kLossThreads;
  return (unsigned)(g < 1 ? 1 : (g > kLossBlocks ? kLossBlocks : g));
}

template <typename T>
inline cudaError_t launch_mse_loss(int64_t n, const T *a, const T *b, T *out, void *scratch,
                                   cudaStream_t stream) {
  double *part = static_cast<double *>(scratch);
  const unsigned g = loss_grid(n);
  mse_partial_kernel<T><<<g, kLossThreads, 0, stream>>>(n, a, b, part);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    return e;
  loss_finish_kernel<T><<<1, kLossThreads, 0, stream>>>((int)g, part, out);
  return cudaGetLastError();
}

template <typename T, typename I>
inline cudaError_t launch_cross_entropy(int64_t N, int64_t C, const T *logits,
                                        const I *target, int64_t ignore, T *out,
                                        void *scratch, int *flag, int code,
                                        cudaStream_t stream) {
  if (C <= 0)
    return cudaErrorInvalidValue;
  double *part = static_cast<double *>(scratch);
  const unsigned g = loss_grid(N);
  cross_entropy_partial_kernel<T, I><<<g, kLossThreads, 0, stream>>>(
      N, C, logits, target, ignore, part, flag, code);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    return e;
  loss_finish_kernel<T><<<1, kLossThreads, 0, stream>>>((int)g, part, out);
  return cudaGetLastError();
}

template <typename T>
inline cudaError_t launch_bce_with_logits(int64_t N, int64_t C, const T *x, const T *y,
                                          const T *pw, T *out, void *scratch,
                                          cudaStream_t stream) {
  double *part = static_cast<double *>(scratch);
  const unsigned g = loss_grid(N * C);
  bce_partial_kernel<T><<<g, kLossThreads, 0, stream>>>(N, C, x, y, pw, part);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    return e;
  loss_finish_kernel<T><<<1, kLossThreads, 0, stream>>>((int)g, part, out);
  return cudaGetLastError();
}

} // namespace cuda
} // namespace kernels
} // namespace nncc

#endif // NNCC_KERNELS_CUDA_LOSS_CUH
