//===- TensorBackward.cuh - A reduce's adjoint -----------------*- CUDA -*-===//
//
// nnk.broadcast_axes: the gradient of Tensor.cuh's reduce (GradKernels.h's
// broadcast_axes on the CPU). bf16: the double product rounded once.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_CUDA_TENSOR_BACKWARD_CUH
#define NNCC_KERNELS_CUDA_TENSOR_BACKWARD_CUH

#include "nncc/Kernels/Bf16.h"
#include "nncc/Kernels/CUDA/Common.cuh"
#include "nncc/Kernels/CUDA/Tensor.cuh"

namespace nncc {
namespace kernels {
namespace cuda {

/// out[shape] = dy[shape without the masked dims] (x kept / total on mean).
template <typename T>
__global__ void broadcast_axes_kernel(ReduceNd r, int64_t n, double scale, const T *dy,
                                      T *out) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t rest = i, j = 0, jstride = 1;
    for (int d = r.rank - 1; d >= 0; --d) {
      const int64_t k = rest % r.shape[d];
      rest /= r.shape[d];
      if (!(r.mask >> d & 1u)) {
        j += k * jstride;
        jstride *= r.shape[d];
      }
    }
    out[i] = store_acc<T>((acc_t<T>)((double)load_acc(dy[j]) * scale));
  }
}

template <typename T>
cudaError_t launch_broadcast_axes(const ReduceNd &r, int mean, const T *dy, T *out,
                                  cudaStream_t stream) {
  if (r.rank < 0 || r.rank > kMaxCopyRank)
    return cudaErrorInvalidValue;
  int64_t n = 1, m = 1;
  for (int d = 0; d < r.rank; ++d) {
    n *= r.shape[d];
    if (!(r.mask >> d & 1u))
      m *= r.shape[d];
  }
  if (n <= 0)
    return cudaSuccess;
  const double scale = mean && m ? (double)m / (double)n : 1.0;
  broadcast_axes_kernel<T><<<grid_for(n, kBackwardThreads), kBackwardThreads, 0, stream>>>(
      r, n, scale, dy, out);
  return cudaGetLastError();
}

} // namespace cuda
} // namespace kernels
} // namespace nncc

#endif // NNCC_KERNELS_CUDA_TENSOR_BACKWARD_CUH
