//===- Token.cuh - Embeddings, positions, masking, sampling ----*- CUDA -*-===//
//
// CUDA twins of runtime/lib/Kernels/Token.cpp (the backward is
// TokenBackward.cuh), on the element math of TokenMath.h and NormMath.h (same keys, noise and rows, so the same positions, samples and
// sums as the CPU):
//
//   mask_tokens_kernel      one CTA per row: each position's rank among the
//                           row's (key, t) pairs; rank < floor(p*n) -> masked
//   sample_kernel           one CTA per row: argmax of logit + Gumbel noise,
//                           block reduction keeping the first index on ties
//                           (bf16 logits widened: f32's samples for them)
//   axial_position_kernel   y = x + the axial row of t (one thread/element;
//                           bf16: the fp32 sum rounded once)
//   embedding_kernel        out[i, :] = table[idx[i], :] (an index out of
//                           range raises the index-check flag)
//   sinusoidal_position_kernel
//                           y = x + the sinusoidal encoding of t
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_CUDA_TOKEN_CUH
#define NNCC_KERNELS_CUDA_TOKEN_CUH

#include "nncc/Kernels/Bf16.h"
#include "nncc/Kernels/CUDA/Blas.cuh"
#include "nncc/Kernels/CUDA/Common.cuh"
#include "nncc/Kernels/Kernels.h"
#include "nncc/Kernels/NormMath.h"
#include "nncc/Kernels/TokenMath.h"

namespace nncc {
namespace kernels {
namespace cuda {

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

template <typename T>
__global__ void sinusoidal_position_kernel(int64_t B, int64_t Tn, int64_t E,
                                           const T *x, T *y) {
  const int64_t n = B * Tn * E;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t e = i % E, t = (i / E) % Tn;
    y[i] = store_acc<T>(load_acc(x[i]) + sinusoidal_pe<acc_t<T>>(t, e, E));
  }
}

/// y = x + the sinusoidal encoding of each position (x, y: [B, Tn, E]).
template <typename T>
inline cudaError_t launch_sinusoidal_position(int64_t B, int64_t Tn, int64_t E, const T *x,
                                              T *y, cudaStream_t stream = 0) {
  const int64_t n = B * Tn * E;
  if (n <= 0)
    return cudaSuccess;
  sinusoidal_position_kernel<T><<<grid_for(n, 256), 256, 0, stream>>>(B, Tn, E, x, y);
  return cudaGetLastError();
}

/// Vector path: 16-byte accesses (4 floats, 2 doubles, 8 bf16).

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

} // namespace cuda
} // namespace kernels
} // namespace nncc

#endif // NNCC_KERNELS_CUDA_TOKEN_CUH
