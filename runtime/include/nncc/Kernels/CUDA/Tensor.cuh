//===- Tensor.cuh - Fills, copies, reductions ------------------*- CUDA -*-===//
//
// The tensor family on CUDA (the CPU copies are libnncc_model_support's
// nncc_ms_copy_nd; max, top-k and cumsum are CPU only, Tensor.cpp):
//
//   fill_kernel           nnk.fill (and the ODE regions' time scalar)
//   copy_nd_kernel        nnk.transpose / slice / concat / split (strided copy)
//   launch_reduce         nnk.reduce (sum / mean over an axis mask, double acc.,
//                         launch_col_sums of Common.cuh)
//
// Index math is IndexMath.h (strided_offsets, masked_offset,
// merge_reduce_dims), the functions the CPU side calls. The backward of a
// reduction is TensorBackward.cuh.
//
// Element types: float, double and bf16_t (Bf16.h). Copies move elements
// unchanged; reduce reads them through load_acc, accumulates in double for
// every T and stores the result once through store_acc<T>.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_CUDA_TENSOR_CUH
#define NNCC_KERNELS_CUDA_TENSOR_CUH

#include "nncc/Kernels/Bf16.h"
#include "nncc/Kernels/CUDA/Common.cuh"
#include "nncc/Kernels/IndexMath.h"

namespace nncc {
namespace kernels {
namespace cuda {

constexpr int kMaxCopyRank = 16;

/// y[i] = v for i < n (nnk.fill, the ODE regions' time scalar); any
/// element type.
template <typename T> __global__ void fill_kernel(int64_t n, T v, T *y) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    y[i] = v;
}

/// Shape and strides (in elements) of a strided copy, passed by value.
struct CopyNd {
  int32_t rank;
  int64_t shape[kMaxCopyRank];
  int64_t dst_stride[kMaxCopyRank];
  int64_t src_stride[kMaxCopyRank];
};

/// dst[sum j_d dst_stride_d] = src[sum j_d src_stride_d] for every index j of
/// shape (the same contract as nncc_ms_copy_nd). One thread per element,
/// consecutive threads on the innermost dim.
template <typename E>
__global__ void copy_nd_kernel(CopyNd c, int64_t n, E *__restrict__ dst,
                               const E *__restrict__ src) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t so, dof;
    strided_offsets(i, c.rank, c.shape, c.src_stride, &so, c.dst_stride, &dof);
    dst[dof] = src[so];
  }
}

template <typename E>
inline cudaError_t launch_copy_nd(const CopyNd &c, E *dst, const E *src,
                                  cudaStream_t stream) {
  if (c.rank < 0 || c.rank > kMaxCopyRank)
    return cudaErrorInvalidValue;
  int64_t n = 1;
  for (int d = 0; d < c.rank; ++d)
    n *= c.shape[d];
  if (n <= 0)
    return cudaSuccess;
  copy_nd_kernel<E><<<grid_for(n, 256), 256, 0, stream>>>(c, n, dst, src);
  return cudaGetLastError();
}

/// x [shape], reduce the dims whose bit is set in `mask`; y holds the kept
/// dims in order. Double accumulation in row-major order of the reduced
/// index within each slice of launch_col_sums (Common.cuh), the slices in
/// order: deterministic, and parallel over the reduced extent too.
struct ReduceNd {
  int32_t rank;
  uint32_t mask;
  int64_t shape[kMaxCopyRank];
};

/// Element k of the reduced index, output o: x[base(o) + offset(k)].
template <typename T> struct ReduceTerms {
  ReduceNd r;
  int64_t stride[kMaxCopyRank];
  const T *x;
  __device__ void operator()(int64_t k, int64_t o, double acc[1]) const {
    acc[0] += (double)load_acc(x[masked_offset(o, r.rank, r.shape, stride, r.mask, 0u) +
                                 masked_offset(k, r.rank, r.shape, stride, r.mask, 1u)]);
  }
};

template <typename T> struct ReduceStore {
  T *y;
  int mean;
  int64_t nred;
  __device__ void operator()(int64_t o, const double sums[1]) const {
    y[o] = store_acc<T>(
        (acc_t<T>)(mean ? (nred ? sums[0] / (double)nred : 0.0 / 0.0) : sums[0]));
  }
};

/// Device scratch of launch_reduce: nout outputs of nred elements each.
inline uint64_t reduce_scratch_bytes(int64_t nout, int64_t nred) {
  return col_sum_scratch_bytes(nred, nout, 1);
}

/// `scratch`: reduce_scratch_bytes(nout, nred) bytes of device memory.
template <typename T>
inline cudaError_t launch_reduce(const ReduceNd &r, int mean, const T *x, T *y, void *scratch,
                                 cudaStream_t stream) {
  if (r.rank < 0 || r.rank > kMaxCopyRank)
    return cudaErrorInvalidValue;
  int64_t nout = 1, nred = 1;
  for (int d = 0; d < r.rank; ++d)
    (r.mask >> d & 1u ? nred : nout) *= r.shape[d];
  if (nout <= 0)
    return cudaSuccess;
  // Fewer, larger dims (the CPU twin's merge): the same element order.
  ReduceTerms<T> f{};
  f.r.rank = merge_reduce_dims(r.rank, r.shape, r.mask, f.r.shape, &f.r.mask);
  f.x = x;
  int64_t s = 1;
  for (int d = f.r.rank - 1; d >= 0; --d) {
    f.stride[d] = s;
    s *= f.r.shape[d];
  }
  const ReduceStore<T> store{y, mean, nred};
  // The common case after merging (bias gradients): x [nred] or [nred,
  // nout] row-major, the leading dim reduced; no index arithmetic per element.
  if (f.r.rank <= 2 && f.r.mask == 1u)
    return launch_col_sums<1>(nred, nout, RowMajorColTerms<T>{x, nout}, store, scratch,
                              stream);
  return launch_col_sums<1>(nred, nout, f, store, scratch, stream);
}

} // namespace cuda
} // namespace kernels
} // namespace nncc

#endif // NNCC_KERNELS_CUDA_TENSOR_CUH
