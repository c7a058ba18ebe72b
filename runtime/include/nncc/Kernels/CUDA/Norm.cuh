//===- Norm.cuh - Layer norm (fused residual add), softmax -----*- CUDA -*-===//
//
// The norm family's forward on CUDA (its backward is NormBackward.cuh):
// the layer norm and the softmax along an axis (softmax_axis_kernel).
// y = LN(x + residual) * gamma + beta with the two-pass mean / variance,
// element math through layer_norm_apply (NormMath.h), shared with the CPU
// twin. Rows of up to kLnWarpMaxCols columns (every encoder width in the
// seeds) run one warp per row with the row in registers: x and residual
// read once, y written once, warp-shuffle sums, no barriers. Wider rows run
// one block per row with the row in shared memory.
//
// T is the storage type of x, residual, gamma, beta, y and sum_out; the
// arithmetic, eps and the statistics (mean_out, rstd_out) are acc_t<T>
// (Bf16.h): bf16_t rows are widened to float, normalised in fp32 and
// rounded once when y and sum_out are stored.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_CUDA_NORM_CUH
#define NNCC_KERNELS_CUDA_NORM_CUH

#include "nncc/Kernels/Bf16.h"
#include "nncc/Kernels/CUDA/Common.cuh"
#include "nncc/Kernels/NormMath.h"

#include <type_traits>

namespace nncc {
namespace kernels {
namespace cuda {

/// nnk.softmax along the middle axis of [outer, N, inner], one thread per
/// row: the row's max in acc_t<T>, the sum of exp in double, each output
/// rounded once.
template <typename T>
__global__ void softmax_axis_kernel(int64_t outer, int64_t n, int64_t inner, const T *x, T *y) {
  for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < outer * inner;
       r += (int64_t)gridDim.x * blockDim.x) {
    const int64_t o = r / inner, in = r % inner, base = o * n * inner + in;
    acc_t<T> mx = load_acc(x[base]);
    for (int64_t k = 1; k < n; ++k) {
      const acc_t<T> xk = load_acc(x[base + k * inner]);
      mx = xk > mx ? xk : mx;
    }
    double s = 0;
    for (int64_t k = 0; k < n; ++k)
      s += exp((double)(load_acc(x[base + k * inner]) - mx));
    for (int64_t k = 0; k < n; ++k)
      y[base + k * inner] =
          store_acc<T>((acc_t<T>)(exp((double)(load_acc(x[base + k * inner]) - mx)) / s));
  }
}

/// Dynamic shared memory: (N + 32) * sizeof(acc_t<T>) (the row in acc_t<T>).
template <typename T>
__global__ void layer_norm_kernel(int64_t N, const T *x, const T *residual,
                                  const T *gamma, const T *beta, acc_t<T> eps, T *y,
                                  T *sum_out, acc_t<T> *mean_out, acc_t<T> *rstd_out) {
  using A = acc_t<T>;
  extern __shared__ unsigned char nncc_ln_smem[];
  A *row = reinterpret_cast<A *>(nncc_ln_smem);
  A *scratch = row + N;
  const int64_t r = blockIdx.x;
  const T *xr = x + r * N;
  const T *rr = residual ? residual + r * N : nullptr;
  A s = A(0);
  for (int64_t j = threadIdx.x; j < N; j += blockDim.x) {
    A v = load_acc(xr[j]) + (rr ? load_acc(rr[j]) : A(0));
    row[j] = v;
    if (sum_out)
      sum_out[r * N + j] = store_acc<T>(v);
    s += v;
  }
  const A mean = block_sum(s, scratch) / A(N);
  A q = A(0);
  for (int64_t j = threadIdx.x; j < N; j += blockDim.x) {
    A d = row[j] - mean;
    q += d * d;
  }
  const A var = block_sum(q, scratch) / A(N);
  const A rstd = A(1) / nsqrt(var + eps);
  for (int64_t j = threadIdx.x; j < N; j += blockDim.x)
    y[r * N + j] = store_acc<T>(layer_norm_apply(row[j], mean, rstd, gamma, beta, j));
  if (threadIdx.x == 0) {
    if (mean_out)
      mean_out[r] = mean;
    if (rstd_out)
      rstd_out[r] = rstd;
  }
}

/// Widest row of the warp-per-row kernels (32 values per lane).
constexpr int64_t kLnWarpMaxCols = 1024;
/// Rows (warps) per CTA of the warp-per-row kernels.
constexpr int kLnWarpRows = 4;

/// Values per lane for a row of N <= kLnWarpMaxCols columns: the power of
/// two >= ceil(N / 32), so one instantiation serves a range of widths.
inline int ln_values_per_lane(int64_t N) {
  int v = 1;
  while (32 * (int64_t)v < N)
    v *= 2;
  return v;
}

/// Runs f(std::integral_constant<int, VPL>()) for the row width N
/// (N <= kLnWarpMaxCols).
template <typename F> inline cudaError_t ln_dispatch_vpl(int64_t N, F &&f) {
  switch (ln_values_per_lane(N)) {
  case 1:
    return f(std::integral_constant<int, 1>());
  case 2:
    return f(std::integral_constant<int, 2>());
  case 4:
    return f(std::integral_constant<int, 4>());
  case 8:
    return f(std::integral_constant<int, 8>());
  case 16:
    return f(std::integral_constant<int, 16>());
  default:
    return f(std::integral_constant<int, 32>());
  }
}

/// One warp per row (kLnWarpRows rows per CTA), lane l holding columns
/// l + 32 k, k < VPL (coalesced: each k is one 32-wide row segment).
template <typename T, int VPL>
__global__ void __launch_bounds__(kLnWarpRows * 32)
    layer_norm_warp_kernel(int64_t rows, int64_t N, const T *__restrict__ x,
                           const T *__restrict__ residual, const T *__restrict__ gamma,
                           const T *__restrict__ beta, acc_t<T> eps, T *__restrict__ y,
                           T *__restrict__ sum_out, acc_t<T> *__restrict__ mean_out,
                           acc_t<T> *__restrict__ rstd_out) {
  using A = acc_t<T>;
  const int lane = threadIdx.x & 31;
  const int64_t r = (int64_t)blockIdx.x * kLnWarpRows + (threadIdx.x >> 5);
  if (r >= rows) // a whole warp leaves; no barrier follows
    return;
  const T *xr = x + r * N;
  const T *rr = residual ? residual + r * N : nullptr;
  A v[VPL];
  A s = A(0);
#pragma unroll
  for (int k = 0; k < VPL; ++k) {
    const int64_t j = lane + 32 * k;
    v[k] = A(0);
    if (j < N) {
      v[k] = load_acc(xr[j]) + (rr ? load_acc(rr[j]) : A(0));
      if (sum_out)
        sum_out[r * N + j] = store_acc<T>(v[k]);
      s += v[k];
    }
  }
  const A mean = warp_sum(s) / A(N);
  A q = A(0);
#pragma unroll
  for (int k = 0; k < VPL; ++k)
    if (lane + 32 * k < N) {
      const A d = v[k] - mean;
      q += d * d;
    }
  const A rstd = A(1) / nsqrt(warp_sum(q) / A(N) + eps);
#pragma unroll
  for (int k = 0; k < VPL; ++k) {
    const int64_t j = lane + 32 * k;
    if (j < N)
      y[r * N + j] = store_acc<T>(layer_norm_apply(v[k], mean, rstd, gamma, beta, j));
  }
  if (lane == 0) {
    if (mean_out)
      mean_out[r] = mean;
    if (rstd_out)
      rstd_out[r] = rstd;
  }
}

template <typename T>
inline cudaError_t launch_layer_norm(int64_t rows, int64_t N, const T *x,
                                     const T *residual, const T *gamma,
                                     const T *beta, acc_t<T> eps, T *y, T *sum_out,
                                     acc_t<T> *mean_out, acc_t<T> *rstd_out,
                                     cudaStream_t stream = 0) {
  if (rows <= 0 || N <= 0)
    return rows < 0 || N < 0 ? cudaErrorInvalidValue : cudaSuccess;
  if (N <= kLnWarpMaxCols)
    return ln_dispatch_vpl(N, [&](auto vpl) {
      layer_norm_warp_kernel<T, decltype(vpl)::value>
          <<<(unsigned)((rows + kLnWarpRows - 1) / kLnWarpRows), kLnWarpRows * 32, 0, stream>>>(
              rows, N, x, residual, gamma, beta, eps, y, sum_out, mean_out, rstd_out);
      return cudaGetLastError();
    });
  size_t smem = (size_t)(N + 32) * sizeof(acc_t<T>);
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
