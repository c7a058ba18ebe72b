//===- Attention.cuh - Flash-style dense and banded dilated attention -*- CUDA -*-===//
//
// Same conventions as the CPU twins (AttentionMath.h): q/k/v rows of stride
// ld_in, head h at columns [h*DH, (h+1)*DH); key_padding_mask != 0 = ignore;
// rows without admissible keys give zeros. Every score passes through
// OnlineSoftmax (push_tile / push), the very code the CPU kernels run.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_CUDA_ATTENTION_CUH
#define NNCC_KERNELS_CUDA_ATTENTION_CUH

#include "nncc/Kernels/AttentionMath.h"
#include "nncc/Kernels/CUDA/Common.cuh"

namespace nncc {
namespace kernels {
namespace cuda {

/// Flash attention forward. grid = (ceil(T/BQ), H, B), block = BQ threads;
/// one query row per thread, K/V tiles of BK rows staged in shared memory,
/// online softmax over tiles: the T x T matrix is never formed.
template <typename T, int DH, int BQ = 64, int BK = 32>
__global__ void __launch_bounds__(BQ)
    flash_attention_fwd_kernel(int Tn, const T *__restrict__ q,
                               const T *__restrict__ k,
                               const T *__restrict__ v, int64_t ld_in, T *out,
                               int64_t ld_out, const uint8_t *kpm, int causal,
                               T scale, T *lse) {
  __shared__ T Ks[BK][DH];
  __shared__ T Vs[BK][DH];
  const int b = blockIdx.z, h = blockIdx.y;
  const int H = gridDim.y;
  const int q0 = blockIdx.x * BQ;
  const int i = q0 + threadIdx.x;
  const bool valid = i < Tn;
  const uint8_t *kpmRow = kpm ? kpm + (int64_t)b * Tn : nullptr;

  T qr[DH], acc[DH], s[BK];
  OnlineSoftmax<T> sm;
  sm.init();
#pragma unroll
  for (int d = 0; d < DH; ++d) {
    qr[d] = valid ? q[((int64_t)b * Tn + i) * ld_in + h * DH + d] * scale
                  : T(0);
    acc[d] = T(0);
  }
  const int kEnd = causal ? min(Tn, q0 + BQ) : Tn;
  for (int k0 = 0; k0 < kEnd; k0 += BK) {
    const int nk = min(BK, kEnd - k0);
    for (int e = threadIdx.x; e < BK * DH; e += BQ) {
      const int jj = e / DH, d = e % DH;
      const bool in = jj < nk;
      const int64_t row = ((int64_t)b * Tn + k0 + jj) * ld_in + h * DH + d;
      Ks[jj][d] = in ? k[row] : T(0);
      Vs[jj][d] = in ? v[row] : T(0);
    }
    __syncthreads();
    if (valid) {
      T tmax = neg_big<T>();
#pragma unroll 2
      for (int jj = 0; jj < BK; ++jj) {
        T sc = neg_big<T>();
        if (jj < nk && key_admissible(i, k0 + jj, causal != 0, kpmRow)) {
          sc = T(0);
#pragma unroll
          for (int d = 0; d < DH; ++d)
            sc += qr[d] * Ks[jj][d];
          tmax = sc > tmax ? sc : tmax;
        }
        s[jj] = sc;
      }
      if (tmax > neg_big<T>()) {
        const T alpha = sm.push_tile(s, BK, tmax);
#pragma unroll
        for (int d = 0; d < DH; ++d)
          acc[d] *= alpha;
#pragma unroll 2
        for (int jj = 0; jj < BK; ++jj) {
#pragma unroll
          for (int d = 0; d < DH; ++d)
            acc[d] += s[jj] * Vs[jj][d];
        }
      }
    }
    __syncthreads();
  }
  if (valid) {
    const T inv = sm.inv();
#pragma unroll
    for (int d = 0; d < DH; ++d)
      out[((int64_t)b * Tn + i) * ld_out + h * DH + d] = acc[d] * inv;
    if (lse)
      lse[((int64_t)b * H + h) * Tn + i] = sm.lse();
  }
}

/// Banded dilated sliding-window attention with global tokens, O(T*w).
/// One thread per (b, h, query); is_global [T] flags, globals [n_global]
/// sorted unique positions (< T). grid = (ceil(T/blockDim), H, B).
template <typename T, int DH>
__global__ void dilated_attention_fwd_kernel(
    int Tn, const T *__restrict__ q, const T *__restrict__ k,
    const T *__restrict__ v, int64_t ld_in, T *out, int64_t ld_out,
    const uint8_t *kpm, int causal, T scale, int window, int dilation,
    const uint8_t *is_global, const int32_t *globals, int n_global) {
  const int b = blockIdx.z, h = blockIdx.y;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= Tn)
    return;
  const uint8_t *kpmRow = kpm ? kpm + (int64_t)b * Tn : nullptr;
  const T *kb = k + (int64_t)b * Tn * ld_in + h * DH;
  const T *vb = v + (int64_t)b * Tn * ld_in + h * DH;
  T qr[DH], acc[DH];
#pragma unroll
  for (int d = 0; d < DH; ++d) {
    qr[d] = q[((int64_t)b * Tn + i) * ld_in + h * DH + d] * scale;
    acc[d] = T(0);
  }
  OnlineSoftmax<T> sm;
  sm.init();
  auto visit = [&](int j) {
    const T *kr = kb + (int64_t)j * ld_in;
    T sc = T(0);
#pragma unroll
    for (int d = 0; d < DH; ++d)
      sc += qr[d] * kr[d];
    T p;
    const T alpha = sm.push(sc, p);
    const T *vr = vb + (int64_t)j * ld_in;
#pragma unroll
    for (int d = 0; d < DH; ++d)
      acc[d] = acc[d] * alpha + p * vr[d];
  };
  if (is_global[i]) {
    for (int j = 0; j < Tn; ++j)
      if (key_admissible(i, j, causal != 0, kpmRow))
        visit(j);
  } else {
    const int half = window / 2;
    for (int o = -half; o <= half; ++o) {
      const int j = i + o * dilation;
      if (j >= 0 && j < Tn && key_admissible(i, j, causal != 0, kpmRow))
        visit(j);
    }
    for (int g = 0; g < n_global; ++g) {
      const int j = globals[g];
      if (!dilated_band(i, j, window, dilation) &&
          key_admissible(i, j, causal != 0, kpmRow))
        visit(j);
    }
  }
  const T inv = sm.inv();
#pragma unroll
  for (int d = 0; d < DH; ++d)
    out[((int64_t)b * Tn + i) * ld_out + h * DH + d] = acc[d] * inv;
}

template <typename T, int DH>
inline cudaError_t launch_flash_attention(int B, int Tn, int H, const T *q,
                                          const T *k, const T *v,
                                          int64_t ld_in, T *out,
                                          int64_t ld_out, const uint8_t *kpm,
                                          int causal, T scale, T *lse,
                                          cudaStream_t stream = 0) {
  constexpr int BQ = 64;
  dim3 grid((Tn + BQ - 1) / BQ, H, B);
  flash_attention_fwd_kernel<T, DH, BQ><<<grid, BQ, 0, stream>>>(
      Tn, q, k, v, ld_in, out, ld_out, kpm, causal, scale, lse);
  return cudaGetLastError();
}

template <typename T, int DH>
inline cudaError_t launch_dilated_attention(
    int B, int Tn, int H, const T *q, const T *k, const T *v, int64_t ld_in,
    T *out, int64_t ld_out, const uint8_t *kpm, int causal, T scale,
    int window, int dilation, const uint8_t *is_global,
    const int32_t *globals, int n_global, cudaStream_t stream = 0) {
  dim3 grid((Tn + 127) / 128, H, B);
  dilated_attention_fwd_kernel<T, DH><<<grid, 128, 0, stream>>>(
      Tn, q, k, v, ld_in, out, ld_out, kpm, causal, scale, window, dilation,
      is_global, globals, n_global);
  return cudaGetLastError();
}

} // namespace cuda
} // namespace kernels
} // namespace nncc

#endif
