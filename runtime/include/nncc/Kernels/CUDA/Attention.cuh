//===- Attention.cuh - Flash-style dense and banded dilated attention -*- CUDA -*-===//
//
// Same conventions as the CPU twins (AttentionMath.h): q/k/v rows of stride
// ld_in, head h at columns [h*dh, (h+1)*dh); key_padding_mask != 0 = ignore;
// rows without admissible keys give zeros. Every score passes through
// OnlineSoftmax (push_tile / push), the very code the CPU kernels run.
// Training forwards (the *_train launchers) add attention dropout (the CPU's
// Philox counters, AttentionMath.h) and the log-sum-exp the backward
// (AttentionBackward.cuh) reads; compiled with nvcc, not yet run on a GPU.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_CUDA_ATTENTION_CUH
#define NNCC_KERNELS_CUDA_ATTENTION_CUH

#include "nncc/Kernels/AttentionMath.h"
#include "nncc/Kernels/CUDA/Common.cuh"

namespace nncc {
namespace kernels {
namespace cuda {

/// The attention dropout of a call with rate `p` (0 = off), exactly as the
/// CPU builds it from nncc_attention_params (attentionDropoutOf).
template <typename T>
inline AttentionDropout<T> attention_dropout_of(double p, uint64_t seed, uint64_t offset) {
  AttentionDropout<T> d;
  if (p > 0.0) {
    d.p = (float)p;
    d.keep_scale = T(1) / (T(1) - T(p));
    d.seed = seed;
    d.offset = offset;
  }
  return d;
}

/// Whether `p` is a rate the kernels serve ([0, 1), as the CPU checks).
inline bool attention_dropout_valid(double p) { return p >= 0.0 && p < 1.0; }

/// Key rows per shared-memory tile for a head size: the K and V tiles of
/// BK x DH values stay within 32 KiB of static shared memory (32 rows for
/// fp32 up to dh 128, fewer for fp64 and larger heads).
template <typename T, int DH> constexpr int attn_tile_keys() {
  return (16384 / (DH * (int)sizeof(T))) > 32
             ? 32
             : ((16384 / (DH * (int)sizeof(T))) < 8 ? 8 : 16384 / (DH * (int)sizeof(T)));
}

/// Flash attention forward. grid = (ceil(T/BQ), H, B), block = BQ threads;
/// one query row per thread, K/V tiles of BK rows staged in shared memory,
/// online softmax over tiles: the T x T matrix is never formed.
/// Exact = true: the head size is DH (fully unrolled); Exact = false: the
/// head size is the run-time `dh_rt` <= DH (generic fallback). `drop`: the
/// weights after the softmax statistics times their dropout multipliers
/// (counter ((b*H + h)*T + i)*T + j), as the CPU's dense tiles.
template <typename T, int DH, int BQ = 64, int BK = 32, bool Exact = true>
__global__ void __launch_bounds__(BQ)
    flash_attention_fwd_kernel(int Tn, const T *__restrict__ q,
                               const T *__restrict__ k,
                               const T *__restrict__ v, int64_t ld_in, T *out,
                               int64_t ld_out, const uint8_t *kpm, int causal,
                               T scale, T *lse, int dh_rt = DH,
                               AttentionDropout<T> drop = AttentionDropout<T>()) {
  __shared__ T Ks[BK][DH];
  __shared__ T Vs[BK][DH];
  const int dh = Exact ? DH : dh_rt;
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
    qr[d] = valid && d < dh ? q[((int64_t)b * Tn + i) * ld_in + h * dh + d] * scale
                            : T(0);
    acc[d] = T(0);
  }
  const int kEnd = causal ? min(Tn, q0 + BQ) : Tn;
  for (int k0 = 0; k0 < kEnd; k0 += BK) {
    const int nk = min(BK, kEnd - k0);
    for (int e = threadIdx.x; e < BK * DH; e += BQ) {
      const int jj = e / DH, d = e % DH;
      const bool in = jj < nk && d < dh;
      const int64_t row = ((int64_t)b * Tn + k0 + jj) * ld_in + h * dh + d;
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
          for (int d = 0; d < DH; ++d) {
            if (!Exact && d >= dh)
              break;
            sc += qr[d] * Ks[jj][d];
          }
          tmax = sc > tmax ? sc : tmax;
        }
        s[jj] = sc;
      }
      if (tmax > neg_big<T>()) {
        const T alpha = sm.push_tile(s, BK, tmax);
#pragma unroll
        for (int d = 0; d < DH; ++d)
          acc[d] *= alpha;
        if (drop.on()) {
          T mult[BK];
          const int64_t first = (((int64_t)b * H + h) * Tn + i) * (int64_t)Tn + k0;
          attention_dropout_row(drop.seed, drop.offset, (uint64_t)first, nk, drop.p,
                                drop.keep_scale, mult);
          for (int jj = 0; jj < nk; ++jj)
            s[jj] *= mult[jj];
        }
#pragma unroll 2
        for (int jj = 0; jj < BK; ++jj) {
#pragma unroll
          for (int d = 0; d < DH; ++d) {
            if (!Exact && d >= dh)
              break;
            acc[d] += s[jj] * Vs[jj][d];
          }
        }
      }
    }
    __syncthreads();
  }
  if (valid) {
    const T inv = sm.inv();
#pragma unroll
    for (int d = 0; d < DH; ++d)
      if (d < dh)
        out[((int64_t)b * Tn + i) * ld_out + h * dh + d] = acc[d] * inv;
    if (lse)
      lse[((int64_t)b * H + h) * Tn + i] = sm.lse();
  }
}

/// Banded dilated sliding-window attention with global tokens, O(T*w).
/// One thread per (b, h, query); is_global [T] flags, globals [n_global]
/// sorted unique positions (< T). grid = (ceil(T/blockDim), H, B).
/// Exact / dh_rt as for flash_attention_fwd_kernel; `lse` (optional)
/// [B, H, T]; `drop` as the CPU's dilated key lists (counter
/// ((b*H + h)*T + i)*T + j).
template <typename T, int DH, bool Exact = true>
__global__ void dilated_attention_fwd_kernel(
    int Tn, const T *__restrict__ q, const T *__restrict__ k,
    const T *__restrict__ v, int64_t ld_in, T *out, int64_t ld_out,
    const uint8_t *kpm, int causal, T scale, int window, int dilation,
    const uint8_t *is_global, const int32_t *globals, int n_global,
    int dh_rt = DH, T *lse = nullptr, AttentionDropout<T> drop = AttentionDropout<T>()) {
  const int dh = Exact ? DH : dh_rt;
  const int b = blockIdx.z, h = blockIdx.y;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= Tn)
    return;
  const uint8_t *kpmRow = kpm ? kpm + (int64_t)b * Tn : nullptr;
  const uint64_t rowCounter =
      (uint64_t)((((int64_t)b * gridDim.y + h) * Tn + i) * (int64_t)Tn);
  const T *kb = k + (int64_t)b * Tn * ld_in + h * dh;
  const T *vb = v + (int64_t)b * Tn * ld_in + h * dh;
  T qr[DH], acc[DH];
#pragma unroll
  for (int d = 0; d < DH; ++d) {
    qr[d] = d < dh ? q[((int64_t)b * Tn + i) * ld_in + h * dh + d] * scale : T(0);
    acc[d] = T(0);
  }
  OnlineSoftmax<T> sm;
  sm.init();
  auto visit = [&](int j) {
    const T *kr = kb + (int64_t)j * ld_in;
    T sc = T(0);
#pragma unroll
    for (int d = 0; d < DH; ++d) {
      if (!Exact && d >= dh)
        break;
      sc += qr[d] * kr[d];
    }
    T p;
    const T alpha = sm.push(sc, p);
    p *= drop.mult(rowCounter + (uint64_t)j);
    const T *vr = vb + (int64_t)j * ld_in;
#pragma unroll
    for (int d = 0; d < DH; ++d) {
      if (!Exact && d >= dh)
        break;
      acc[d] = acc[d] * alpha + p * vr[d];
    }
  };
  for_each_dilated_key(i, Tn, window, dilation, is_global, globals, n_global,
                       causal != 0, kpmRow, visit);
  const T inv = sm.inv();
#pragma unroll
  for (int d = 0; d < DH; ++d)
    if (d < dh)
      out[((int64_t)b * Tn + i) * ld_out + h * dh + d] = acc[d] * inv;
  if (lse)
    lse[((int64_t)b * gridDim.y + h) * Tn + i] = sm.lse();
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
  flash_attention_fwd_kernel<T, DH, BQ, attn_tile_keys<T, DH>()><<<grid, BQ, 0, stream>>>(
      Tn, q, k, v, ld_in, out, ld_out, kpm, causal, scale, lse);
  return cudaGetLastError();
}

/// Largest head size served (generic kernels beyond 32/64/128).
constexpr int kMaxHeadDim = 256;

/// The flash forward kernel for head size dh with dropout `drop` (off:
/// inference): DHS = 32/64/128 builds only that kernel (dh must match);
/// DHS = 0 dispatches at run time, exact kernels for dh = 32, 64, 128 and
/// the generic one for any other dh <= kMaxHeadDim.
template <typename T, int DHS = 0>
inline cudaError_t flash_attention_forward(int dh, int B, int Tn, int H, const T *q,
                                           const T *k, const T *v, int64_t ld_in, T *out,
                                           int64_t ld_out, const uint8_t *kpm, int causal,
                                           T scale, T *lse, const AttentionDropout<T> &drop,
                                           cudaStream_t stream) {
  if (B <= 0 || Tn <= 0)
    return cudaSuccess;
  constexpr int BQ = 64;
  dim3 grid((Tn + BQ - 1) / BQ, H, B);
  if constexpr (DHS != 0) {
    if (dh != DHS)
      return cudaErrorInvalidValue;
    flash_attention_fwd_kernel<T, DHS, BQ, attn_tile_keys<T, DHS>()><<<grid, BQ, 0, stream>>>(
        Tn, q, k, v, ld_in, out, ld_out, kpm, causal, scale, lse, DHS, drop);
  } else {
    switch (dh) {
    case 32:
      flash_attention_fwd_kernel<T, 32, BQ, attn_tile_keys<T, 32>()><<<grid, BQ, 0, stream>>>(
          Tn, q, k, v, ld_in, out, ld_out, kpm, causal, scale, lse, 32, drop);
      break;
    case 64:
      flash_attention_fwd_kernel<T, 64, BQ, attn_tile_keys<T, 64>()><<<grid, BQ, 0, stream>>>(
          Tn, q, k, v, ld_in, out, ld_out, kpm, causal, scale, lse, 64, drop);
      break;
    case 128:
      flash_attention_fwd_kernel<T, 128, BQ, attn_tile_keys<T, 128>()>
          <<<grid, BQ, 0, stream>>>(Tn, q, k, v, ld_in, out, ld_out, kpm, causal, scale, lse,
                                    128, drop);
      break;
    default:
      if (dh <= 0 || dh > kMaxHeadDim)
        return cudaErrorInvalidValue;
      flash_attention_fwd_kernel<T, kMaxHeadDim, BQ, attn_tile_keys<T, kMaxHeadDim>(), false>
          <<<grid, BQ, 0, stream>>>(Tn, q, k, v, ld_in, out, ld_out, kpm, causal, scale, lse,
                                    dh, drop);
      break;
    }
  }
  return cudaGetLastError();
}

/// Flash attention with the head size known at run time only: exact
/// kernels for dh = 32, 64, 128, a generic one (loops bounded by the
/// run-time dh, smaller key tiles) for any other dh <= kMaxHeadDim.
template <typename T>
inline cudaError_t launch_flash_attention_dyn(int dh, int B, int Tn, int H,
                                              const T *q, const T *k, const T *v,
                                              int64_t ld_in, T *out, int64_t ld_out,
                                              const uint8_t *kpm, int causal, T scale,
                                              T *lse, cudaStream_t stream = 0) {
  return flash_attention_forward<T, 0>(dh, B, Tn, H, q, k, v, ld_in, out, ld_out, kpm, causal,
                                       scale, lse, AttentionDropout<T>(), stream);
}

/// Training forward of nnk.flash_attention: attention dropout with rate
/// `dropout` (0 = off), Philox key `seed`, step offset `offset`, and the
/// log-sum-exp [B, H, T] into `lse` (may be NULL). DHS as for
/// flash_attention_forward.
template <typename T, int DHS = 0>
inline cudaError_t launch_flash_attention_train(int dh, int B, int Tn, int H, const T *q,
                                                const T *k, const T *v, int64_t ld_in, T *out,
                                                int64_t ld_out, const uint8_t *kpm, int causal,
                                                T scale, T *lse, double dropout, uint64_t seed,
                                                uint64_t offset, cudaStream_t stream = 0) {
  if (!attention_dropout_valid(dropout))
    return cudaErrorInvalidValue;
  return flash_attention_forward<T, DHS>(dh, B, Tn, H, q, k, v, ld_in, out, ld_out, kpm, causal,
                                         scale, lse,
                                         attention_dropout_of<T>(dropout, seed, offset), stream);
}

/// is_global[t] = 1 for t in globals (sorted, unique, < T), else 0.
static __global__ void dilated_mark_globals_kernel(int Tn, const int32_t *globals,
                                                   int n_global, uint8_t *is_global) {
  for (int t = blockIdx.x * blockDim.x + threadIdx.x; t < Tn; t += gridDim.x * blockDim.x) {
    uint8_t g = 0;
    for (int i = 0; i < n_global; ++i)
      g |= globals[i] == t;
    is_global[t] = g;
  }
}

/// Bytes of device scratch launch_dilated_attention_dyn needs.
inline int64_t dilated_attention_scratch_bytes(int64_t Tn, int64_t n_global) {
  return ((Tn + 255) / 256) * 256 + 4 * (n_global > 0 ? n_global : 1);
}

/// The global-token tables of dilated attention on the device.
struct DilatedGlobals {
  const uint8_t *is_global = nullptr; // [T] flags
  const int32_t *list = nullptr;      // sorted distinct positions < T
  int n = 0;
};

/// Builds the tables in `scratch` (dilated_attention_scratch_bytes(T, n))
/// from the host positions `host_globals` (any order; duplicates and
/// positions >= T dropped as the CPU twin does; negative positions are the
/// caller's error): an H2D copy and one flag kernel, stream-ordered.
inline cudaError_t dilated_upload_globals(int Tn, const int32_t *host_globals,
                                          int n_host_globals, void *scratch, DilatedGlobals &g,
                                          cudaStream_t stream) {
  uint8_t *isG = static_cast<uint8_t *>(scratch);
  int32_t *gl = reinterpret_cast<int32_t *>(isG + ((Tn + 255) / 256) * 256);
  // Sorted unique positions < T (insertion sort: the list is a handful).
  int32_t sorted[64];
  int ng = 0;
  for (int i = 0; i < n_host_globals; ++i) {
    const int32_t j = host_globals[i];
    if (j < 0 || j >= Tn)
      continue;
    if (ng >= 64)
      return cudaErrorInvalidValue;
    int p = ng;
    bool dup = false;
    for (int u = 0; u < ng; ++u)
      dup |= sorted[u] == j;
    if (dup)
      continue;
    while (p > 0 && sorted[p - 1] > j) {
      sorted[p] = sorted[p - 1];
      --p;
    }
    sorted[p] = j;
    ++ng;
  }
  cudaError_t e;
  if (ng > 0 && (e = cudaMemcpyAsync(gl, sorted, sizeof(int32_t) * ng,
                                     cudaMemcpyHostToDevice, stream)) != cudaSuccess)
    return e;
  dilated_mark_globals_kernel<<<grid_for(Tn, 256), 256, 0, stream>>>(Tn, gl, ng, isG);
  if ((e = cudaGetLastError()) != cudaSuccess)
    return e;
  g.is_global = isG;
  g.list = gl;
  g.n = ng;
  return cudaSuccess;
}

/// The dilated forward kernel for head size dh (DHS as for
/// flash_attention_forward) over uploaded global tables; `lse` may be NULL.
template <typename T, int DHS = 0>
inline cudaError_t dilated_attention_forward(int dh, int B, int Tn, int H, const T *q,
                                             const T *k, const T *v, int64_t ld_in, T *out,
                                             int64_t ld_out, const uint8_t *kpm, int causal,
                                             T scale, int window, int dilation,
                                             const DilatedGlobals &g, T *lse,
                                             const AttentionDropout<T> &drop,
                                             cudaStream_t stream) {
  if (B <= 0 || Tn <= 0)
    return cudaSuccess;
  dim3 grid((Tn + 127) / 128, H, B);
  if constexpr (DHS != 0) {
    if (dh != DHS)
      return cudaErrorInvalidValue;
    dilated_attention_fwd_kernel<T, DHS><<<grid, 128, 0, stream>>>(
        Tn, q, k, v, ld_in, out, ld_out, kpm, causal, scale, window, dilation, g.is_global,
        g.list, g.n, DHS, lse, drop);
  } else {
    switch (dh) {
    case 32:
      dilated_attention_fwd_kernel<T, 32><<<grid, 128, 0, stream>>>(
          Tn, q, k, v, ld_in, out, ld_out, kpm, causal, scale, window, dilation, g.is_global,
          g.list, g.n, 32, lse, drop);
      break;
    case 64:
      dilated_attention_fwd_kernel<T, 64><<<grid, 128, 0, stream>>>(
          Tn, q, k, v, ld_in, out, ld_out, kpm, causal, scale, window, dilation, g.is_global,
          g.list, g.n, 64, lse, drop);
      break;
    case 128:
      dilated_attention_fwd_kernel<T, 128><<<grid, 128, 0, stream>>>(
          Tn, q, k, v, ld_in, out, ld_out, kpm, causal, scale, window, dilation, g.is_global,
          g.list, g.n, 128, lse, drop);
      break;
    default:
      if (dh <= 0 || dh > kMaxHeadDim)
        return cudaErrorInvalidValue;
      dilated_attention_fwd_kernel<T, kMaxHeadDim, false><<<grid, 128, 0, stream>>>(
          Tn, q, k, v, ld_in, out, ld_out, kpm, causal, scale, window, dilation, g.is_global,
          g.list, g.n, dh, lse, drop);
      break;
    }
  }
  return cudaGetLastError();
}

/// Banded dilated attention with run-time head size (DHS = 32/64/128: the
/// caller knows the head size statically and only that kernel is built;
/// DHS = 0: run-time dispatch) and the global
/// positions given on the host (`host_globals`, any order, duplicates and
/// positions >= T are dropped as the CPU twin does; negative positions are
/// the caller's error). `scratch`: dilated_attention_scratch_bytes(T, n).
template <typename T, int DHS = 0>
inline cudaError_t launch_dilated_attention_dyn(
    int dh, int B, int Tn, int H, const T *q, const T *k, const T *v, int64_t ld_in,
    T *out, int64_t ld_out, const uint8_t *kpm, int causal, T scale, int window,
    int dilation, const int32_t *host_globals, int n_host_globals, void *scratch,
    cudaStream_t stream = 0) {
  if (B <= 0 || Tn <= 0)
    return cudaSuccess;
  DilatedGlobals g;
  cudaError_t e = dilated_upload_globals(Tn, host_globals, n_host_globals, scratch, g, stream);
  if (e != cudaSuccess)
    return e;
  return dilated_attention_forward<T, DHS>(dh, B, Tn, H, q, k, v, ld_in, out, ld_out, kpm,
                                           causal, scale, window, dilation, g, (T *)nullptr,
                                           AttentionDropout<T>(), stream);
}

/// Training forward of nnk.banded_attention: launch_dilated_attention_dyn
/// plus attention dropout (rate, seed, step offset as
/// launch_flash_attention_train) and the log-sum-exp [B, H, T] into `lse`
/// (may be NULL). `scratch`: dilated_attention_scratch_bytes(T, n).
template <typename T, int DHS = 0>
inline cudaError_t launch_dilated_attention_train(
    int dh, int B, int Tn, int H, const T *q, const T *k, const T *v, int64_t ld_in, T *out,
    int64_t ld_out, const uint8_t *kpm, int causal, T scale, int window, int dilation,
    const int32_t *host_globals, int n_host_globals, T *lse, double dropout, uint64_t seed,
    uint64_t offset, void *scratch, cudaStream_t stream = 0) {
  if (!attention_dropout_valid(dropout) || window < 1 || dilation < 1)
    return cudaErrorInvalidValue;
  if (B <= 0 || Tn <= 0)
    return cudaSuccess;
  DilatedGlobals g;
  cudaError_t e = dilated_upload_globals(Tn, host_globals, n_host_globals, scratch, g, stream);
  if (e != cudaSuccess)
    return e;
  return dilated_attention_forward<T, DHS>(dh, B, Tn, H, q, k, v, ld_in, out, ld_out, kpm,
                                           causal, scale, window, dilation, g, lse,
                                           attention_dropout_of<T>(dropout, seed, offset),
                                           stream);
}

} // namespace cuda
} // namespace kernels
} // namespace nncc

#endif
