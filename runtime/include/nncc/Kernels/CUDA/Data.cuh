//===- Data.cuh - Data movement, reductions, gathers and losses -*- CUDA -*-===//
//
// The CUDA side of the generated launch sequence for the ops that the CPU
// runs through libnncc_model_support / libnncc_kernels:
//
//   copy_nd_kernel        nnk.transpose / slice / concat / split (strided copy)
//   launch_reduce         nnk.reduce (sum / mean over an axis mask, double acc.,
//                         launch_col_sums of Common.cuh)
//   embedding_kernel      nnk.embedding (row gather; out-of-range -> error flag)
//   loss kernels          mse, cross-entropy (i32/i64 targets, ignore_index),
//                         BCE with logits (pos_weight): per-CTA double partials,
//                         then one CTA finishes the mean (deterministic order)
//
// Row math is NormMath.h (cross_entropy_row, bce_logits_elem), index math
// IndexMath.h (strided_offsets, masked_offset, merge_reduce_dims): the
// functions the CPU twins call. Index errors cannot return from a kernel: the kernel
// records the first failing launch in a device flag (atomicCAS 0 -> code)
// that the generated forward reads back once at its end.
//
// Element types: float, double and bf16_t (Bf16.h). Copies and gathers move
// elements unchanged; reduce and the losses read them through load_acc,
// accumulate in double for every T (at least acc_t<T>; scratch sizes do not
// depend on T) and store the result once through store_acc<T> (bf16: the
// double rounded to float, then to bf16).
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_CUDA_DATA_CUH
#define NNCC_KERNELS_CUDA_DATA_CUH

#include "nncc/Kernels/Bf16.h"
#include "nncc/Kernels/CUDA/Common.cuh"
#include "nncc/Kernels/IndexMath.h"
#include "nncc/Kernels/NormMath.h"

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

/// Records `code` in *flag unless an earlier launch already did.
__device__ __forceinline__ void raise_flag(int *flag, int code) {
  if (flag)
    atomicCAS(flag, 0, code);
}

/// out[i, :] = table[idx[i], :]; an index outside [0, V) raises the flag
/// with `code` and writes zeros for that row (the forward then fails).
template <typename T, typename I>
__global__ void embedding_kernel(int64_t n, int64_t V, int64_t E, const I *__restrict__ idx,
                                 const T *__restrict__ table, T *__restrict__ out,
                                 int *flag, int code) {
  const int64_t total = n * E;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = i / E, e = i % E;
    const int64_t k = (int64_t)idx[r];
    if (k < 0 || k >= V) {
      if (e == 0)
        raise_flag(flag, code);
      out[i] = store_acc<T>(acc_t<T>(0));
      continue;
    }
    out[i] = table[k * E + e];
  }
}

template <typename T, typename I>
inline cudaError_t launch_embedding(int64_t n, int64_t V, int64_t E, const I *idx,
                                    const T *table, T *out, int *flag, int code,
                                    cudaStream_t stream) {
  if (n <= 0 || E <= 0)
    return cudaSuccess;
  embedding_kernel<T, I><<<grid_for(n * E, 256), 256, 0, stream>>>(n, V, E, idx, table,
                                                                   out, flag, code);
  return cudaGetLastError();
}

//===----------------------------------------------------------------------===//
// Losses: per-CTA partial (sum, count) in double, then one CTA finishes.
//===----------------------------------------------------------------------===//

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

#endif // NNCC_KERNELS_CUDA_DATA_CUH
