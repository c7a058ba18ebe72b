//===- LossHead.cuh - the fused linear + cross-entropy on CUDA --*- CUDA -*-===//
//
// nnk.linear_cross_entropy, the twin of runtime/lib/Kernels/LossHead.cpp:
// the loss of cross_entropy(x w^T + b, target) and its gradients for a unit
// loss adjoint, without the [N, V] logits or their gradient. Per chunk of
// nncc_linear_ce_chunk_rows(N, V) rows: one GEMM for the chunk's logits
// (scratch), the softmax gradient in place (one CTA per row, the CPU's
// cross_entropy_grad_row_inplace order of operations), one GEMM for the
// chunk's dx rows, one accumulating dw, and db's column sums in row order.
// The loss sums the rows' NLL in a fixed order. A target out of range sets
// the index-check flag (the forward reports it) and its row contributes
// nothing. bf16: fp32 logits and softmax gradient, rounded to bf16 once as
// the dx / dw GEMMs' operand (launch_linear_cross_entropy). Compiled with
// nvcc and run under the emulation; not yet run on a GPU.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_CUDA_LOSSHEAD_CUH
#define NNCC_KERNELS_CUDA_LOSSHEAD_CUH

#include "nncc/Kernels/CUDA/LossBackward.cuh"
#include "nncc/Kernels/CUDA/Blas.cuh"
#include "nncc/Kernels/CUDA/Common.cuh"
#include "nncc/Kernels/Kernels.h"

namespace nncc {
namespace kernels {
namespace cuda {

/// One CTA per row of the chunk: the row's logits become their gradient,
/// (softmax - onehot(t)) / count, and nll[r] its negative log-likelihood.
template <typename T, typename I>
__global__ void ce_grad_rows_kernel(int64_t m, int64_t V, T *z, const I *tgt, int64_t ignore,
                                    const double *count, double *nll, int *flag, int code) {
  __shared__ double scratch[32];
  const double cnt = count[0];
  const double s = 1.0 / cnt;
  for (int64_t r = blockIdx.x; r < m; r += gridDim.x) {
    T *row = z + r * V;
    const int64_t t = (int64_t)tgt[r];
    if (t == ignore || t < 0 || t >= V) {
      if (t != ignore && threadIdx.x == 0 && flag)
        atomicCAS(flag, 0, code);
      const T fill = (T)(t == ignore && cnt == 0 ? s : 0.0);
      for (int64_t c = threadIdx.x; c < V; c += blockDim.x)
        row[c] = fill;
      if (threadIdx.x == 0)
        nll[r] = 0.0;
      continue;
    }
    const double zt = (double)row[t]; // read before the barriers below
    double mx = -INFINITY;
    for (int64_t c = threadIdx.x; c < V; c += blockDim.x)
      mx = fmax(mx, (double)row[c]);
    mx = block_max(mx, scratch);
    double sum = 0;
    for (int64_t c = threadIdx.x; c < V; c += blockDim.x) {
      const double e = exp((double)row[c] - mx);
      row[c] = (T)e;
      sum += e;
    }
    sum = block_sum(sum, scratch);
    for (int64_t c = threadIdx.x; c < V; c += blockDim.x)
      row[c] = (T)(((double)row[c] / sum - (c == t ? 1.0 : 0.0)) * s);
    if (threadIdx.x == 0)
      nll[r] = mx + log(sum) - zt;
  }
}

/// db[c] += sum over the chunk's rows of z[., c], rows in order.
template <typename T>
__global__ void column_sum_add_kernel(int64_t m, int64_t V, const T *z, T *db) {
  for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < V;
       c += (int64_t)gridDim.x * blockDim.x) {
    T acc = db[c];
    for (int64_t i = 0; i < m; ++i)
      acc += z[i * V + c];
    db[c] = acc;
  }
}

/// loss = sum(nll) / count (one CTA, fixed order).
template <typename T>
__global__ void loss_from_nll_kernel(int64_t N, const double *nll, const double *count,
                                     T *loss) {
  __shared__ double scratch[32];
  double s = 0;
  for (int64_t i = threadIdx.x; i < N; i += blockDim.x)
    s += nll[i];
  s = block_sum(s, scratch);
  if (threadIdx.x == 0)
    loss[0] = store_acc<T>((acc_t<T>)(s / count[0]));
}

inline uint64_t loss_head_align(uint64_t n) { return (n + 255) & ~(uint64_t)255; }

/// The scratch of launch_linear_cross_entropy, carved in this order: the
/// chunk's logits (then their gradient) in acc_t<T>, every row's NLL, the
/// count of counted rows; for bf16 (elem 2) also the chunk's gradient
/// rounded to bf16 (the GEMMs' operand), fp32 db and, with more than one
/// chunk, an fp32 dw accumulated over the chunks.
struct LinearCeScratch {
  uint64_t z = 0, nll = 0, count = 0, zb = 0, db = 0, dw = 0, total = 0;
  LinearCeScratch(int64_t N, int64_t K, int64_t V, uint64_t elem) {
    const uint64_t R = (uint64_t)nncc_linear_ce_chunk_rows(N, V);
    const uint64_t v = (uint64_t)(V > 0 ? V : 1), k = (uint64_t)(K > 0 ? K : 1);
    const uint64_t acc = (uint64_t)acc_elem_bytes((int64_t)elem);
    const bool bf16 = acc != elem;
    uint64_t at = 0;
    auto take = [&](uint64_t bytes) {
      const uint64_t here = at;
      at += loss_head_align(bytes);
      return here;
    };
    z = take(R * v * acc);
    nll = take((uint64_t)(N > 0 ? N : 1) * sizeof(double));
    count = take(sizeof(double));
    if (bf16) {
      zb = take(R * v * elem);
      db = take(v * acc);
      if ((uint64_t)(N > 0 ? N : 1) > R)
        dw = take(v * k * acc);
    }
    total = at;
  }
};

/// Scratch of launch_linear_cross_entropy (elem: sizeof(T)).
inline uint64_t linear_cross_entropy_scratch_bytes(int64_t N, int64_t K, int64_t V,
                                                   uint64_t elem) {
  return LinearCeScratch(N, K, V, elem).total;
}

/// As nncc_linear_cross_entropy (targets of type I read as they are);
/// `logits` (optional) receives every row's logits; flag/code: the
/// index check of an out-of-range target. bf16 x, w and b: the logits,
/// their softmax gradient, db and (over several chunks) dw are fp32; the
/// gradient is rounded to bf16 once as the GEMMs' operand for dx and dw,
/// which accumulate in fp32 (cuBLAS) and are rounded once.
template <typename T, typename I>
cudaError_t launch_linear_cross_entropy(cublasHandle_t blas, int64_t N, int64_t K, int64_t V,
                                        const T *x, const T *w, const T *b, const I *tgt,
                                        int64_t ignore, T *loss, T *dx, T *dw, T *db,
                                        T *logits, int *flag, int code, char *scratch,
                                        cudaStream_t stream) {
  if (N <= 0 || K <= 0 || V <= 0 || !scratch)
    return cudaErrorInvalidValue;
  cudaError_t e = cublas_error(cublasSetStream(blas, stream));
  if (e != cudaSuccess)
    return e;
  using A = acc_t<T>;
  constexpr bool bf16 = is_bf16_v<T>;
  const int64_t R = nncc_linear_ce_chunk_rows(N, V);
  const LinearCeScratch at(N, K, V, sizeof(T));
  A *z = reinterpret_cast<A *>(scratch + at.z);
  double *nll = reinterpret_cast<double *>(scratch + at.nll);
  double *count = reinterpret_cast<double *>(scratch + at.count);
  // The GEMMs' operand (z itself unless bf16) and where db and dw add up.
  const T *zOperand = bf16 ? reinterpret_cast<T *>(scratch + at.zb) : (const T *)(const void *)z;
  A *dbSum = bf16 ? reinterpret_cast<A *>(scratch + at.db) : (A *)(void *)db;
  A *dwSum = bf16 && at.dw ? reinterpret_cast<A *>(scratch + at.dw) : nullptr;
  count_targets_kernel<I><<<1, kBackwardThreads, 0, stream>>>(N, tgt, ignore, count);
  if ((e = cudaMemsetAsync(dbSum, 0, sizeof(A) * (size_t)V, stream)) != cudaSuccess)
    return e;
  for (int64_t r0 = 0; r0 < N; r0 += R) {
    const int64_t m = R < N - r0 ? R : N - r0;
    const T *xc = x + r0 * K;
    if ((e = gemm_rowmajor<T>(blas, false, true, m, V, K, A(1), xc, K, w, K, A(0), z, V)))
      return e;
    if (b)
      add_bias_rows_kernel<T, A><<<grid_for(m * V, kBackwardThreads), kBackwardThreads, 0,
                                   stream>>>(m, V, b, z);
    if (logits) {
      if constexpr (bf16)
        e = convert_elements(m * V, (const A *)z, logits + r0 * V, stream);
      else
        e = cudaMemcpyAsync(logits + r0 * V, z, sizeof(T) * (size_t)(m * V),
                            cudaMemcpyDeviceToDevice, stream);
      if (e)
        return e;
    }
    ce_grad_rows_kernel<A, I><<<grid_for(m, 1, 65535u * 4u), kBackwardThreads, 0, stream>>>(
        m, V, z, tgt + r0, ignore, count, nll + r0, flag, code);
    if (bf16 && (e = convert_elements(m * V, (const A *)z, (T *)zOperand, stream)))
      return e;
    if ((e = gemm_rowmajor<T>(blas, false, false, m, K, V, A(1), zOperand, V, w, K, A(0),
                              dx + r0 * K, K)))
      return e;
    const A dwBeta = A(r0 == 0 ? 0 : 1);
    e = dwSum ? gemm_rowmajor<T>(blas, true, false, V, K, m, A(1), zOperand, V, xc, K, dwBeta,
                                 dwSum, K)
              : gemm_rowmajor<T>(blas, true, false, V, K, m, A(1), zOperand, V, xc, K, dwBeta,
                                 dw, K);
    if (e)
      return e;
    column_sum_add_kernel<A><<<grid_for(V, kBackwardThreads), kBackwardThreads, 0, stream>>>(
        m, V, z, dbSum);
  }
  if (bf16 && ((e = convert_elements(V, (const A *)dbSum, db, stream)) ||
               (e = convert_elements(V * K, (const A *)dwSum, dw, stream))))
    return e;
  loss_from_nll_kernel<T><<<1, kBackwardThreads, 0, stream>>>(N, nll, count, loss);
  return cudaGetLastError();
}

} // namespace cuda
} // namespace kernels
} // namespace nncc

#endif
