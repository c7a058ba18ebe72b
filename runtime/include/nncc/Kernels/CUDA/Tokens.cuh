//===- Tokens.cuh - Token masking, Gumbel-max sampling, axial positions -*- CUDA -*-===//
//
// CUDA twins of runtime/lib/Kernels/Tokens.cpp, on the element math of
// TokenMath.h (same keys, noise and rows, so the same positions, samples and
// sums as the CPU):
//
//   mask_tokens_kernel      one CTA per row: each position's rank among the
//                           row's (key, t) pairs; rank < floor(p*n) -> masked
//   sample_kernel           one CTA per row: argmax of logit + Gumbel noise,
//                           block reduction keeping the first index on ties
//                           (bf16 logits widened: f32's samples for them)
//   axial_position_kernel   y = x + the axial row of t (one thread/element;
//                           bf16: the fp32 sum rounded once)
//   axial_position_backward_kernel
//                           one thread per (row of w0 or w1, column): a fixed-
//                           order sum over the batch and the grid positions
//                           (double for every T; bf16_t dy is widened with
//                           load_acc and dw0 / dw1 rounded once, so they are
//                           the float kernel's outputs rounded to bf16)
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_CUDA_TOKENS_CUH
#define NNCC_KERNELS_CUDA_TOKENS_CUH

#include "nncc/Kernels/Bf16.h"
#include "nncc/Kernels/CUDA/Blas.cuh"
#include "nncc/Kernels/CUDA/Common.cuh"
#include "nncc/Kernels/Kernels.h"
#include "nncc/Kernels/TokenMath.h"

namespace nncc {
namespace kernels {
namespace cuda {

/// Rows up to this length keep their keys in shared memory (48 KiB); longer
/// rows recompute them.
constexpr int64_t kMaskSharedKeys = 12288;

template <typename I>
__global__ void mask_tokens_kernel(int64_t n, int64_t k, int64_t mask_id,
                                   uint64_t seed, uint64_t offset,
                                   const I *tokens, I *masked, uint8_t *mask) {
  extern __shared__ uint32_t keys[];
  const int64_t r = blockIdx.x;
  const bool shared = n <= kMaskSharedKeys;
  if (shared)
    for (int64_t t = threadIdx.x; t < n; t += blockDim.x)
      keys[t] = mask_key(seed, offset, r, n, t);
  __syncthreads();
  for (int64_t t = threadIdx.x; t < n; t += blockDim.x) {
    const uint32_t key = shared ? keys[t] : mask_key(seed, offset, r, n, t);
    int64_t rank = 0;
    for (int64_t u = 0; u < n && rank < k; ++u) {
      const uint32_t other = shared ? keys[u] : mask_key(seed, offset, r, n, u);
      rank += mask_key_less(other, u, key, t);
    }
    const bool m = rank < k;
    masked[r * n + t] = m ? (I)mask_id : tokens[r * n + t];
    mask[r * n + t] = m;
  }
}

template <typename I>
inline cudaError_t launch_mask_tokens(int64_t rows, int64_t n, double p,
                                      int64_t mask_id, uint64_t seed,
                                      uint64_t offset, const I *tokens,
                                      I *masked, uint8_t *mask,
                                      cudaStream_t stream = 0) {
  if (rows <= 0 || n <= 0)
    return cudaSuccess;
  const size_t smem = n <= kMaskSharedKeys ? (size_t)n * sizeof(uint32_t) : 0;
  mask_tokens_kernel<I><<<(unsigned)rows, 256, smem, stream>>>(
      n, masked_per_row(p, n), mask_id, seed, offset, tokens, masked, mask);
  return cudaGetLastError();
}

template <typename T>
__global__ void sample_kernel(int64_t row0, int64_t V, uint64_t seed, uint64_t offset,
                              const T *logits, const uint8_t *rows_mask,
                              int32_t *out) {
  __shared__ double best_score[32];
  __shared__ int64_t best_index[32];
  // `logits` holds the rows from row0 on; the noise, mask and output use
  // the global row.
  const int64_t r = row0 + blockIdx.x;
  logits -= row0 * V;
  if (rows_mask && !rows_mask[r]) {
    if (threadIdx.x == 0)
      out[r] = 0;
    return;
  }
  double best = -INFINITY;
  int64_t arg = V;
  for (int64_t v = threadIdx.x; v < V; v += blockDim.x) {
    const double s = (double)load_acc(logits[r * V + v]) + sample_noise(seed, offset, r, V, v);
    if (s > best) { // v increases: the first maximum is kept
      best = s;
      arg = v;
    }
  }
  // Reduce (score, index): larger score wins, the smaller index on ties.
  for (int o = 16; o > 0; o >>= 1) {
    const double s = __shfl_xor_sync(0xffffffffu, best, o);
    const int64_t i = __shfl_xor_sync(0xffffffffu, arg, o);
    if (s > best || (s == best && i < arg)) {
      best = s;
      arg = i;
    }
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) {
    best_score[warp] = best;
    best_index[warp] = arg;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < (int)((blockDim.x + 31) >> 5); ++w)
      if (best_score[w] > best || (best_score[w] == best && best_index[w] < arg)) {
        best = best_score[w];
        arg = best_index[w];
      }
    out[r] = (int32_t)(arg < V ? arg : 0);
  }
}

template <typename T>
inline cudaError_t launch_sample(int64_t rows, int64_t V, uint64_t seed,
                                 uint64_t offset, const T *logits,
                                 const uint8_t *rows_mask, int32_t *out,
                                 cudaStream_t stream = 0) {
  if (rows <= 0)
    return cudaSuccess;
  sample_kernel<T><<<(unsigned)rows, 256, 0, stream>>>(0, V, seed, offset, logits,
                                                        rows_mask, out);
  return cudaGetLastError();
}

/// Scratch of launch_linear_sample: one chunk of logits (fp32 for bf16,
/// elem 2).
inline uint64_t linear_sample_scratch_bytes(int64_t N, int64_t V, uint64_t elem) {
  return (uint64_t)nncc_linear_ce_chunk_rows(N, V) * (uint64_t)(V > 0 ? V : 1) *
         (uint64_t)acc_elem_bytes((int64_t)elem);
}

/// nnk.linear_sample, the twin of nncc_linear_sample: samples of
/// x w^T + b without the [N, V] logits, a chunk of
/// nncc_linear_ce_chunk_rows(N, V) rows at a time, with the same noise as
/// launch_sample. Unlike the CPU kernel, which gathers the drawn rows first,
/// every row's logits are computed (the mask is on the device) and only the
/// drawn ones are sampled; the results are the same. bf16 x, w and b: the
/// logits are fp32 (GEMM accumulated and stored in fp32, the bias added in
/// fp32), so the samples are f32's for the same bf16 values.
template <typename T>
cudaError_t launch_linear_sample(cublasHandle_t blas, int64_t N, int64_t K, int64_t V,
                                 uint64_t seed, uint64_t offset, const T *x, const T *w,
                                 const T *b, const uint8_t *rows_mask, char *scratch,
                                 int32_t *out, cudaStream_t stream) {
  if (N < 0 || K <= 0 || V <= 0 || V > INT32_MAX)
    return cudaErrorInvalidValue;
  if (N == 0)
    return cudaSuccess;
  cudaError_t e = cublas_error(cublasSetStream(blas, stream));
  if (e != cudaSuccess)
    return e;
  const int64_t R = nncc_linear_ce_chunk_rows(N, V);
  using A = acc_t<T>;
  A *z = reinterpret_cast<A *>(scratch);
  for (int64_t r0 = 0; r0 < N; r0 += R) {
    const int64_t m = R < N - r0 ? R : N - r0;
    if ((e = gemm_rowmajor<T>(blas, false, true, m, V, K, A(1), x + r0 * K, K, w, K, A(0), z,
                              V)))
      return e;
    if (b)
      add_bias_rows_kernel<T, A><<<grid_for(m * V, 256), 256, 0, stream>>>(m, V, b, z);
    sample_kernel<A><<<(unsigned)m, 256, 0, stream>>>(r0, V, seed, offset, z, rows_mask, out);
  }
  return cudaGetLastError();
}

template <typename T>
__global__ void axial_position_kernel(int64_t B, int64_t Tn, int64_t n2,
                                      int64_t d1, int64_t d2, const T *x,
                                      const T *w0, const T *w1, T *y) {
  const int64_t E = d1 + d2, n = B * Tn * E;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t e = i % E, t = (i / E) % Tn;
    y[i] = store_acc<T>(load_acc(x[i]) + load_acc(axial_value<T>(w0, w1, n2, d1, d2, t, e)));
  }
}

template <typename T>
__global__ void axial_position_backward_kernel(int64_t B, int64_t Tn,
                                               int64_t n1, int64_t n2,
                                               int64_t d1, int64_t d2,
                                               const T *dy, T *dw0, T *dw1) {
  const int64_t E = d1 + d2, n = n1 * d1 + n2 * d2;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const bool first = i < n1 * d1;
    const int64_t j = first ? i : i - n1 * d1, d = first ? d1 : d2;
    const int64_t row = j / d, e = j % d, col = first ? e : d1 + e;
    const int64_t count = first ? n2 : n1;
    double acc = 0;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t c = 0; c < count; ++c) {
        const int64_t t = first ? row * n2 + c : c * n2 + row;
        if (t < Tn)
          acc += (double)load_acc(dy[(b * Tn + t) * E + col]);
      }
    (first ? dw0 : dw1)[j] = store_acc<T>((acc_t<T>)acc);
  }
}

template <typename T>
inline cudaError_t launch_axial_position(int64_t B, int64_t Tn, int64_t n2,
                                         int64_t d1, int64_t d2, const T *x,
                                         const T *w0, const T *w1, T *y,
                                         cudaStream_t stream = 0) {
  const int64_t n = B * Tn * (d1 + d2);
  if (n <= 0)
    return cudaSuccess;
  axial_position_kernel<T><<<grid_for(n, 256), 256, 0, stream>>>(B, Tn, n2, d1,
                                                                 d2, x, w0, w1, y);
  return cudaGetLastError();
}

template <typename T>
inline cudaError_t launch_axial_position_backward(int64_t B, int64_t Tn,
                                                  int64_t n1, int64_t n2,
                                                  int64_t d1, int64_t d2,
                                                  const T *dy, T *dw0, T *dw1,
                                                  cudaStream_t stream = 0) {
  const int64_t n = n1 * d1 + n2 * d2;
  axial_position_backward_kernel<T><<<grid_for(n, 256), 256, 0, stream>>>(
      B, Tn, n1, n2, d1, d2, dy, dw0, dw1);
  return cudaGetLastError();
}

} // namespace cuda
} // namespace kernels
} // namespace nncc

#endif // NNCC_KERNELS_CUDA_TOKENS_CUH
