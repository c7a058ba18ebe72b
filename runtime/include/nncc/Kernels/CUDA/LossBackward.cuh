//===- LossBackward.cuh - Backward of the losses ---------------*- CUDA -*-===//
//
// The twin of runtime/lib/Kernels/LossBackward.cpp, with the same formulas
// (BackwardMath.h, NormMath.h). The loss adjoint `g` is a device scalar
// (NULL = 1). fp32 ran on an H100 in the seed models' training steps
// (docs/cuda.md, "First run on an H100 (2026-11-26)"), bf16 on an H200
// (2026-11-27); fp64 has not run on a GPU.
//
// Element types: float, double and bf16_t (Bf16.h). T is the storage type
// of every tensor; elements are read through load_acc and each output is
// stored once through store_acc<T>, from double arithmetic for every T, so a
// bf16 output is the float kernel's output rounded once to bf16. Every sum
// over rows runs in a fixed order: results do not depend on scheduling.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_CUDA_LOSS_BACKWARD_CUH
#define NNCC_KERNELS_CUDA_LOSS_BACKWARD_CUH

#include "nncc/Kernels/BackwardMath.h"
#include "nncc/Kernels/Bf16.h"
#include "nncc/Kernels/CUDA/Common.cuh"
#include "nncc/Kernels/NormMath.h"

namespace nncc {
namespace kernels {
namespace cuda {

template <typename T>
__global__ void mse_backward_kernel(int64_t n, const T *a, const T *b, const T *g, T *da) {
  const double s = 2.0 * (g ? (double)load_acc(g[0]) : 1.0) / (double)n;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    da[i] = store_acc<T>((acc_t<T>)(((double)load_acc(a[i]) - (double)load_acc(b[i])) * s));
}

template <typename T>
__global__ void bce_backward_kernel(int64_t N, int64_t C, const T *x, const T *y, const T *pw,
                                    const T *g, T *dx) {
  const double s = (g ? (double)load_acc(g[0]) : 1.0) / (double)(N * C);
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < N * C;
       i += (int64_t)gridDim.x * blockDim.x)
    dx[i] = store_acc<T>((acc_t<T>)(bce_logits_grad_elem<double>(
                                         (double)load_acc(x[i]), (double)load_acc(y[i]),
                                         pw ? (double)load_acc(pw[i % C]) : 1.0) *
                                     s));
}

/// count[0] = the targets that are not `ignore` (one CTA, fixed order).
template <typename I>
__global__ void count_targets_kernel(int64_t N, const I *tgt, int64_t ignore, double *count) {
  __shared__ double scratch[32];
  double c = 0;
  for (int64_t i = threadIdx.x; i < N; i += blockDim.x)
    c += (int64_t)tgt[i] != ignore ? 1.0 : 0.0;
  c = block_sum(c, scratch);
  if (threadIdx.x == 0)
    count[0] = c;
}

/// One CTA per row: (softmax - onehot(t)) * g / count; ignored rows 0 (NaN
/// when every row is ignored: 0/0, as PyTorch and the CPU). A target out of
/// range (the forward's index check reports it) leaves its row at 0.
template <typename T, typename I>
__global__ void cross_entropy_backward_kernel(int64_t N, int64_t C, const T *logits,
                                              const I *tgt, int64_t ignore, const T *g,
                                              const double *count, T *dl) {
  __shared__ double scratch[32];
  const double cnt = count[0];
  const double s = (g ? (double)load_acc(g[0]) : 1.0) / cnt;
  for (int64_t r = blockIdx.x; r < N; r += gridDim.x) {
    const T *lr = logits + r * C;
    T *dr = dl + r * C;
    const int64_t t = (int64_t)tgt[r];
    if (t == ignore || t < 0 || t >= C) {
      const T fill = store_acc<T>((acc_t<T>)(t == ignore && cnt == 0 ? s : 0.0));
      for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
        dr[c] = fill;
      continue;
    }
    double mx = -INFINITY;
    for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
      mx = fmax(mx, (double)load_acc(lr[c]));
    mx = block_max(mx, scratch);
    double sum = 0;
    for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
      sum += exp((double)load_acc(lr[c]) - mx);
    sum = block_sum(sum, scratch);
    for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
      dr[c] = store_acc<T>(
          (acc_t<T>)((exp((double)load_acc(lr[c]) - mx) / sum - (c == t ? 1.0 : 0.0)) * s));
  }
}

template <typename T>
cudaError_t launch_mse_loss_backward(int64_t n, const T *a, const T *b, const T *g, T *da,
                                     cudaStream_t stream) {
  if (n <= 0)
    return cudaErrorInvalidValue;
  mse_backward_kernel<T><<<grid_for(n, kBackwardThreads), kBackwardThreads, 0, stream>>>(
      n, a, b, g, da);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_bce_with_logits_backward(int64_t N, int64_t C, const T *x, const T *y,
                                            const T *pw, const T *g, T *dx,
                                            cudaStream_t stream) {
  if (N <= 0 || C <= 0)
    return cudaErrorInvalidValue;
  bce_backward_kernel<T><<<grid_for(N * C, kBackwardThreads), kBackwardThreads, 0, stream>>>(
      N, C, x, y, pw, g, dx);
  return cudaGetLastError();
}

/// `scratch`: cross_entropy_backward_scratch_bytes() of device memory.
inline uint64_t cross_entropy_backward_scratch_bytes() { return sizeof(double); }

template <typename T, typename I>
cudaError_t launch_cross_entropy_backward(int64_t N, int64_t C, const T *logits, const I *tgt,
                                          int64_t ignore, const T *g, T *dl, char *scratch,
                                          cudaStream_t stream) {
  if (N <= 0 || C <= 0)
    return cudaErrorInvalidValue;
  double *count = reinterpret_cast<double *>(scratch);
  count_targets_kernel<I><<<1, kBackwardThreads, 0, stream>>>(N, tgt, ignore, count);
  cross_entropy_backward_kernel<T, I>
      <<<grid_for(N, 1, 65535u * 4u), kBackwardThreads, 0, stream>>>(N, C, logits, tgt, ignore,
                                                                     g, count, dl);
  return cudaGetLastError();
}

} // namespace cuda
} // namespace kernels
} // namespace nncc

#endif // NNCC_KERNELS_CUDA_LOSS_BACKWARD_CUH
