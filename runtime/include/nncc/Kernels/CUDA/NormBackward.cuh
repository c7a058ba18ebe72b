//===- NormBackward.cuh - Backward of the fused layer norm -----*- CUDA -*-===//
//
// y = LN(x + res) * gamma (+ beta): dx (= dres), dgamma and dbeta, the twin
// of runtime/lib/Kernels/NormBackward.cpp (formulas in NormMath.h). Rows of
// up to kLnWarpMaxCols columns run one warp per row (Norm.cuh's layout);
// dgamma / dbeta are launch_col_sums over the rows in a fixed order.
//
// Element types: float, double and bf16_t (Bf16.h). T is the storage type
// of every tensor; elements are read through load_acc and each output is
// stored once through store_acc<T>, from double arithmetic for every T, so a
// bf16 output is the float kernel's output rounded once to bf16. Every sum
// over rows runs in a fixed order: results do not depend on scheduling.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_CUDA_NORM_BACKWARD_CUH
#define NNCC_KERNELS_CUDA_NORM_BACKWARD_CUH

#include "nncc/Kernels/BackwardMath.h"
#include "nncc/Kernels/Bf16.h"
#include "nncc/Kernels/CUDA/Common.cuh"
#include "nncc/Kernels/CUDA/Norm.cuh"

namespace nncc {
namespace kernels {
namespace cuda {

/// One CTA per row: the row's mean and rstd (kept in `stats` for the
/// column pass) and dx = rstd (g - mean(g) - xhat mean(g xhat)) (+ dsum).
template <typename T>
__global__ void layer_norm_backward_rows_kernel(int64_t rows, int64_t N, const T *x,
                                                const T *res, const T *gamma, double eps,
                                                const T *dy, const T *dsum, T *dx,
                                                double *stats) {
  __shared__ double scratch[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T *xr = x + r * N, *rr = res ? res + r * N : nullptr, *dyr = dy + r * N;
    auto sAt = [&](int64_t j) {
      return (double)load_acc(xr[j]) + (rr ? (double)load_acc(rr[j]) : 0.0);
    };
    double s = 0;
    for (int64_t j = threadIdx.x; j < N; j += blockDim.x)
      s += sAt(j);
    const double mean = block_sum(s, scratch) / (double)N;
    double v = 0;
    for (int64_t j = threadIdx.x; j < N; j += blockDim.x) {
      const double d = sAt(j) - mean;
      v += d * d;
    }
    const double rstd = 1.0 / sqrt(block_sum(v, scratch) / (double)N + eps);
    double sg = 0, sgx = 0;
    for (int64_t j = threadIdx.x; j < N; j += blockDim.x) {
      const double gj = (double)load_acc(dyr[j]) * (gamma ? (double)load_acc(gamma[j]) : 1.0);
      sg += gj;
      sgx += gj * (sAt(j) - mean) * rstd;
    }
    sg = block_sum(sg, scratch) / (double)N;
    sgx = block_sum(sgx, scratch) / (double)N;
    for (int64_t j = threadIdx.x; j < N; j += blockDim.x) {
      const double xh = (sAt(j) - mean) * rstd;
      const double gj = (double)load_acc(dyr[j]) * (gamma ? (double)load_acc(gamma[j]) : 1.0);
      double val = rstd * (gj - sg - xh * sgx);
      if (dsum)
        val += (double)load_acc(dsum[r * N + j]);
      dx[r * N + j] = store_acc<T>((acc_t<T>)val);
    }
    if (stats && threadIdx.x == 0) {
      stats[2 * r] = mean;
      stats[2 * r + 1] = rstd;
    }
    __syncthreads();
  }
}

/// layer_norm_backward_rows_kernel for rows of N <= 32 VPL columns: one
/// warp per row (kLnWarpRows per CTA), the row's x + res and dy in
/// registers (each read once), the same double arithmetic.
template <typename T, int VPL>
__global__ void __launch_bounds__(kLnWarpRows * 32)
    layer_norm_backward_warp_kernel(int64_t rows, int64_t N, const T *__restrict__ x,
                                    const T *__restrict__ res, const T *__restrict__ gamma,
                                    double eps, const T *__restrict__ dy,
                                    const T *__restrict__ dsum, T *__restrict__ dx,
                                    double *__restrict__ stats) {
  const int lane = threadIdx.x & 31;
  const int64_t r = (int64_t)blockIdx.x * kLnWarpRows + (threadIdx.x >> 5);
  if (r >= rows) // a whole warp leaves; no barrier follows
    return;
  double sv[VPL];   // x + res as the CTA kernel's sAt forms it
  acc_t<T> gv[VPL]; // dy, widened
  double s = 0;
#pragma unroll
  for (int k = 0; k < VPL; ++k) {
    const int64_t j = lane + 32 * k;
    sv[k] = 0;
    gv[k] = acc_t<T>(0);
    if (j < N) {
      sv[k] = (double)load_acc(x[r * N + j]) + (res ? (double)load_acc(res[r * N + j]) : 0.0);
      gv[k] = load_acc(dy[r * N + j]);
      s += sv[k];
    }
  }
  const double mean = warp_sum(s) / (double)N;
  double v = 0;
#pragma unroll
  for (int k = 0; k < VPL; ++k)
    if (lane + 32 * k < N) {
      const double d = sv[k] - mean;
      v += d * d;
    }
  const double rstd = 1.0 / sqrt(warp_sum(v) / (double)N + eps);
  double sg = 0, sgx = 0;
#pragma unroll
  for (int k = 0; k < VPL; ++k) {
    const int64_t j = lane + 32 * k;
    if (j < N) {
      const double gj = (double)gv[k] * (gamma ? (double)load_acc(gamma[j]) : 1.0);
      sg += gj;
      sgx += gj * (sv[k] - mean) * rstd;
    }
  }
  sg = warp_sum(sg) / (double)N;
  sgx = warp_sum(sgx) / (double)N;
#pragma unroll
  for (int k = 0; k < VPL; ++k) {
    const int64_t j = lane + 32 * k;
    if (j < N) {
      const double xh = (sv[k] - mean) * rstd;
      const double gj = (double)gv[k] * (gamma ? (double)load_acc(gamma[j]) : 1.0);
      double val = rstd * (gj - sg - xh * sgx);
      if (dsum)
        val += (double)load_acc(dsum[r * N + j]);
      dx[r * N + j] = store_acc<T>((acc_t<T>)val);
    }
  }
  if (stats && lane == 0) {
    stats[2 * r] = mean;
    stats[2 * r + 1] = rstd;
  }
}

/// Row r's terms of column j: dgamma += dy xhat, dbeta += dy.
template <typename T> struct LayerNormParamTerms {
  int64_t N;
  const T *x, *res, *dy;
  const double *stats;
  __device__ void operator()(int64_t r, int64_t j, double acc[2]) const {
    const double s =
        (double)load_acc(x[r * N + j]) + (res ? (double)load_acc(res[r * N + j]) : 0.0);
    const double d = (double)load_acc(dy[r * N + j]);
    acc[0] += d * (s - stats[2 * r]) * stats[2 * r + 1];
    acc[1] += d;
  }
};

template <typename T> struct LayerNormParamStore {
  T *dgamma, *dbeta;
  __device__ void operator()(int64_t j, const double sums[2]) const {
    if (dgamma)
      dgamma[j] = store_acc<T>((acc_t<T>)sums[0]);
    if (dbeta)
      dbeta[j] = store_acc<T>((acc_t<T>)sums[1]);
  }
};

/// Scratch for launch_layer_norm_backward: the rows' statistics, then the
/// column-sum partials of dgamma / dbeta.
inline uint64_t layer_norm_stats_bytes(int64_t rows) {
  return ((uint64_t)(rows > 0 ? rows : 1) * 2 * sizeof(double) + 255) / 256 * 256;
}
inline uint64_t layer_norm_backward_scratch_bytes(int64_t rows, int64_t N) {
  return layer_norm_stats_bytes(rows) + col_sum_scratch_bytes(rows, N, 2);
}

/// dx per row (a warp per row up to kLnWarpMaxCols columns, else a CTA
/// per row); dgamma / dbeta as deterministic column
/// sums over the rows (launch_col_sums). `scratch`:
/// layer_norm_backward_scratch_bytes(rows, N) bytes.
template <typename T>
cudaError_t launch_layer_norm_backward(int64_t rows, int64_t N, const T *x, const T *res,
                                       const T *gamma, double eps, const T *dy, const T *dsum,
                                       T *dx, T *dgamma, T *dbeta, char *scratch,
                                       cudaStream_t stream) {
  if (rows < 0 || N <= 0 || !(eps >= 0))
    return cudaErrorInvalidValue;
  if (rows == 0)
    return cudaSuccess;
  double *stats = (dgamma || dbeta) ? reinterpret_cast<double *>(scratch) : nullptr;
  cudaError_t e;
  if (N <= kLnWarpMaxCols)
    e = ln_dispatch_vpl(N, [&](auto vpl) {
      layer_norm_backward_warp_kernel<T, decltype(vpl)::value>
          <<<(unsigned)((rows + kLnWarpRows - 1) / kLnWarpRows), kLnWarpRows * 32, 0, stream>>>(
              rows, N, x, res, gamma, eps, dy, dsum, dx, stats);
      return cudaGetLastError();
    });
  else {
    layer_norm_backward_rows_kernel<T><<<grid_for(rows, 1, 65535u * 4u), kBackwardThreads, 0,
                                         stream>>>(rows, N, x, res, gamma, eps, dy, dsum, dx,
                                                   stats);
    e = cudaGetLastError();
  }
  if (e != cudaSuccess || !stats)
    return e;
  return launch_col_sums<2>(rows, N, LayerNormParamTerms<T>{N, x, res, dy, stats},
                            LayerNormParamStore<T>{dgamma, dbeta},
                            scratch + layer_norm_stats_bytes(rows), stream);
}

} // namespace cuda
} // namespace kernels
} // namespace nncc

#endif // NNCC_KERNELS_CUDA_NORM_BACKWARD_CUH
