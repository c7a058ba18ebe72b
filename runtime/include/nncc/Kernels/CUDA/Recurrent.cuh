//===- Recurrent.cuh - Persistent recurrent layer kernel --------*- CUDA -*-===//
//
// One launch per layer and direction. The input projection of all time
// steps, xg = X W_ih^T + b_ih [B, T, G*H], is ONE cuBLAS GEMM done by the
// caller before the launch. Then each CTA owns a slice of `rows` batch rows
// and loops over time inside the kernel (persistent): per step it forms the
// recurrent product W_hh h for its rows (W_hh held in shared memory when it
// fits, otherwise streamed from L2), __syncthreads, and applies the gate
// math of RecurrentMath.h -- the same functions as the CPU twin.
//
// Variable lengths: row b is active while s < len_b; the reverse direction
// processes t = len_b-1-s. The kernel zeroes its own output columns past
// each length; h_n / c_n get the state after each row's last valid step.
// Lengths are clamped to [0, T].
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_CUDA_RECURRENT_CUH
#define NNCC_KERNELS_CUDA_RECURRENT_CUH

#include "nncc/Kernels/CUDA/Common.cuh"
#include "nncc/Kernels/Philox.h"
#include "nncc/Kernels/RecurrentMath.h"

#include <limits.h>

namespace nncc {
namespace kernels {
namespace cuda {

/// Shared memory of one CTA of rnn_scan_kernel: the state of its `rows`
/// batch rows (h, c for LSTM, the recurrent product hg, r*h for Cho's GRU)
/// and, when `weights_in_smem`, W_hh^T [H, G*H].
template <typename T, int Kind>
__host__ __device__ inline size_t rnn_smem_bytes(int rows, int H,
                                                 bool weights_in_smem) {
  const int G = cell_gates(Kind);
  size_t n = (size_t)rows * H                       // h
             + (Kind == CellLstm ? (size_t)rows * H : 0) // c
             + (size_t)rows * G * H                 // hg
             + (Kind == CellGruCho ? (size_t)rows * H : 0); // r*h
  if (weights_in_smem)
    n += (size_t)G * H * H;
  return n * sizeof(T);
}

/// wt[k * GH + o] = w[o * H + k]: W_hh [GH, H] -> W_hh^T [H, GH], so that
/// consecutive threads (consecutive outputs o) read consecutive addresses
/// in the recurrent product, from shared or global memory alike.
template <typename T>
__global__ void rnn_transpose_whh_kernel(int64_t GH, int64_t H,
                                         const T *__restrict__ w,
                                         T *__restrict__ wt) {
  const int64_t n = GH * H;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t k = i / GH, o = i % GH;
    wt[i] = w[o * H + k];
  }
}

/// Length of row b clamped to [0, T] (absent lengths: T).
template <typename L>
__device__ __forceinline__ int rnn_len(const L *lengths, int b, int Tn) {
  if (!lengths)
    return Tn;
  const long long l = (long long)lengths[b];
  return l < 0 ? 0 : (l > Tn ? Tn : (int)l);
}

/// Persistent kernel: ONE launch runs one layer and one direction over all
/// time steps. CTA x owns batch rows [x*rows, x*rows + rows); per step it
/// forms the recurrent product hg = h W_hh^T for its active rows (W_hh^T in
/// shared memory when it fits, else read from global/L2), __syncthreads,
/// and applies the gate math of RecurrentMath.h (the CPU twin's functions).
/// A row takes part while s < len_b (no work past a length); the reverse
/// direction processes t = len_b - 1 - s, i.e. starts at the row's own last
/// valid step. After the loop the CTA zeroes its rows' output columns
/// [col_off, col_off + H) for t >= len_b and writes h_n / c_n (the state
/// after each row's last valid step; h0 when len_b = 0).
/// h0/c0/hn/cn point at this (layer, direction)'s [B, H] slice (may be
/// null), wt = W_hh^T [H, G*H] in global memory.
/// Training (RecurrentBackward.cuh): `saved` receives the gates at
/// saved + (b*T + t)*saved_stride_bt (RecurrentMath.h slots), and, for the
/// LSTM with BPTT checkpointing, `ckc` [*, B, H] the cell state entering
/// scan step m*every (m >= 1) at entry m-1, for the rows still running there
/// (the CPU's rnnLayerTrain). Both null in inference.
/// LSTM zoneout (training; zo_p = 0: off): unit j of row b at time t keeps
/// the previous h and c iff zoneout_keep_prev(zo_seed, zo_offset,
/// lstm_zoneout_counter(sd, t, b, j, B, T, H), zo_p) (Philox.h, the CPU's
/// mask bit for bit); the saved c slot and the checkpoints hold the kept c.
template <typename T, typename L, int Kind, bool WeightsInSmem>
__global__ void rnn_scan_kernel(int B, int Tn, int H, int reverse,
                                int64_t ld_out, int col_off, int rows,
                                const L *__restrict__ lengths,
                                const T *__restrict__ xg,
                                const T *__restrict__ wt,
                                const T *__restrict__ bhh, const T *h0,
                                const T *c0, T *out, T *hn, T *cn, T *saved,
                                int64_t saved_stride_bt, T *ckc, int every,
                                float zo_p, uint64_t zo_seed,
                                uint64_t zo_offset, int sd) {
  extern __shared__ unsigned char nncc_rnn_smem[];
  const int G = cell_gates(Kind), GH = G * H;
  T *sh = reinterpret_cast<T *>(nncc_rnn_smem);
  T *sc = sh + rows * H;
  T *shg = sc + (Kind == CellLstm ? rows * H : 0);
  T *srh = shg + rows * GH;
  T *sw = srh + (Kind == CellGruCho ? rows * H : 0);
  const T *W = WeightsInSmem ? sw : wt;

  const int b0 = blockIdx.x * rows;
  const int nr = min(rows, B - b0);
  if (nr <= 0)
    return;
  if (WeightsInSmem)
    for (int64_t i = threadIdx.x; i < (int64_t)GH * H; i += blockDim.x)
      sw[i] = wt[i];
  int maxLen = 0;
  for (int r = 0; r < nr; ++r)
    maxLen = max(maxLen, rnn_len(lengths, b0 + r, Tn));
  for (int i = threadIdx.x; i < nr * H; i += blockDim.x) {
    const int b = b0 + i / H, j = i % H;
    sh[i] = h0 ? h0[(int64_t)b * H + j] : T(0);
    if (Kind == CellLstm)
      sc[i] = c0 ? c0[(int64_t)b * H + j] : T(0);
  }
  __syncthreads();

  const int GHa = Kind == CellGruCho ? 2 * H : GH; // outputs of the first product
  for (int s = 0; s < maxLen; ++s) {
    // Recurrent product for the active rows: hg[r, o] = sum_k h[r, k] W[o, k].
    for (int i = threadIdx.x; i < nr * GHa; i += blockDim.x) {
      const int r = i / GHa, o = i % GHa;
      if (s >= rnn_len(lengths, b0 + r, Tn))
        continue;
      const T *hr = sh + r * H;
      T acc = T(0);
      for (int k = 0; k < H; ++k)
        acc += W[(int64_t)k * GH + o] * hr[k];
      shg[r * GH + o] = acc;
    }
    __syncthreads();
    // Gate math (shared with the CPU twin).
    for (int i = threadIdx.x; i < nr * H; i += blockDim.x) {
      const int r = i / H, j = i % H, b = b0 + r;
      const int len = rnn_len(lengths, b, Tn);
      if (s >= len)
        continue;
      const int t = rnn_time_index(s, len, reverse != 0);
      const T *xr = xg + ((int64_t)b * Tn + t) * GH;
      const T *hr = shg + r * GH;
      T *sv = saved ? saved + ((int64_t)b * Tn + t) * saved_stride_bt : nullptr;
      const T hp = sh[i];
      if (Kind == CellGruCho) {
        T rg, zg;
        srh[i] = gru_cho_gates(xr, hr, bhh, H, j, hp, rg, zg);
        // Each thread owns unit j of row r: park r, z in its own hg slots
        // (they were read above by this thread only).
        shg[r * GH + j] = rg;
        shg[r * GH + H + j] = zg;
        continue;
      }
      T hnew;
      if (Kind == CellLstm) {
        T cnew;
        lstm_unit(xr, hr, bhh, H, j, sc[i], cnew, hnew, sv);
        if (zo_p > 0.0f &&
            zoneout_keep_prev(zo_seed, zo_offset,
                              lstm_zoneout_counter(sd, t, b, j, B, Tn, H),
                              zo_p)) {
          // Zoned-out unit: h and c stay; the saved c slot holds the kept
          // c (the next step's c_prev, as on the CPU).
          cnew = sc[i];
          hnew = hp;
          if (sv)
            sv[4 * H + j] = cnew;
        }
        sc[i] = cnew;
        if (ckc && s + 1 < len && (s + 1) % every == 0)
          ckc[((int64_t)(s + 1) / every - 1) * B * H + (int64_t)b * H + j] = cnew;
      } else if (Kind == CellGru) {
        hnew = gru_unit(xr, hr, bhh, H, j, hp, sv);
      } else {
        hnew = rnn_unit(xr, hr, bhh, j, Kind == CellRnnRelu, sv, H);
      }
      sh[i] = hnew;
      out[((int64_t)b * Tn + t) * ld_out + col_off + j] = hnew;
    }
    if (Kind == CellGruCho) {
      __syncthreads();
      // Second recurrent product: W_hh[2H:3H] (r*h).
      for (int i = threadIdx.x; i < nr * H; i += blockDim.x) {
        const int r = i / H, o = i % H;
        if (s >= rnn_len(lengths, b0 + r, Tn))
          continue;
        const T *rh = srh + r * H;
        T acc = T(0);
        for (int k = 0; k < H; ++k)
          acc += W[(int64_t)k * GH + 2 * H + o] * rh[k];
        shg[r * GH + 2 * H + o] = acc;
      }
      __syncthreads();
      for (int i = threadIdx.x; i < nr * H; i += blockDim.x) {
        const int r = i / H, j = i % H, b = b0 + r;
        const int len = rnn_len(lengths, b, Tn);
        if (s >= len)
          continue;
        const int t = rnn_time_index(s, len, reverse != 0);
        const T *xr = xg + ((int64_t)b * Tn + t) * GH;
        T *sv = saved ? saved + ((int64_t)b * Tn + t) * saved_stride_bt : nullptr;
        T hnew = gru_cho_update(xr, shg[r * GH + 2 * H + j], bhh, H, j, sh[i],
                                shg[r * GH + j], shg[r * GH + H + j], sv);
        sh[i] = hnew;
        out[((int64_t)b * Tn + t) * ld_out + col_off + j] = hnew;
      }
    }
    __syncthreads();
  }
  // Zeros past each length (this direction's columns only), then the state.
  for (int64_t i = threadIdx.x; i < (int64_t)nr * Tn * H; i += blockDim.x) {
    const int r = (int)(i / ((int64_t)Tn * H));
    const int t = (int)((i / H) % Tn), j = (int)(i % H), b = b0 + r;
    if (t >= rnn_len(lengths, b, Tn))
      out[((int64_t)b * Tn + t) * ld_out + col_off + j] = T(0);
  }
  for (int i = threadIdx.x; i < nr * H; i += blockDim.x) {
    const int64_t b = b0 + i / H, j = i % H;
    if (hn)
      hn[b * H + j] = sh[i];
    if (Kind == CellLstm && cn)
      cn[b * H + j] = sc[i];
  }
}

/// Picks the CTA size in batch rows and whether W_hh^T fits in shared
/// memory (opt-in limit of the device). Returns false when even one row's
/// state does not fit.
template <typename T, int Kind>
inline bool rnn_scan_config(int B, int H, int sms, int optin, int &rows,
                            bool &inSmem, size_t &smem) {
  // One or a few sequences per CTA: about two CTAs per SM before sharing.
  rows = (B + 2 * sms - 1) / (2 * (sms > 0 ? sms : 1));
  rows = rows < 1 ? 1 : (rows > 8 ? 8 : rows);
  inSmem = rnn_smem_bytes<T, Kind>(rows, H, true) <= (size_t)optin;
  smem = rnn_smem_bytes<T, Kind>(rows, H, inSmem);
  while (smem > (size_t)optin && rows > 1) {
    rows /= 2;
    smem = rnn_smem_bytes<T, Kind>(rows, H, inSmem);
  }
  return smem <= (size_t)optin;
}

/// Whether an LSTM zoneout rate is valid for the cell: p in [0, 1), and
/// p > 0 only for the LSTM (the CPU's NNCC_K_EINVAL otherwise).
inline bool rnn_zoneout_ok(int cell, double p) {
  return p >= 0 && p < 1 && (p == 0 || cell == CellLstm);
}

/// launch_rnn_scan plus the LSTM's BPTT checkpoints `ckc` every `every`
/// scan steps (see rnn_scan_kernel; ckc null: none, every ignored) and LSTM
/// zoneout (rate `zoneout`, 0: off; `seed`, `offset` and the state slot
/// `state_index` = l*D + d of the mask counter, as nncc_rnn_layer_zoneout).
template <typename T, typename L, int Kind>
inline cudaError_t launch_rnn_scan_ckpt(int B, int Tn, int H, int reverse,
                                        int64_t ld_out, int col_off,
                                        const L *lengths, const T *xg,
                                        const T *whh, const T *bhh,
                                        const T *h0, const T *c0, T *out,
                                        T *hn, T *cn, T *saved,
                                        int64_t saved_stride_bt, T *ckc,
                                        int every, T *wt_scratch,
                                        cudaStream_t stream,
                                        double zoneout = 0, uint64_t seed = 0,
                                        uint64_t offset = 0,
                                        int64_t state_index = 0) {
  if (!rnn_zoneout_ok(Kind, zoneout) || state_index < 0 ||
      state_index > INT_MAX)
    return cudaErrorInvalidValue;
  if (B <= 0 || H <= 0)
    return cudaSuccess;
  if (ckc && (Kind != CellLstm || every < 1))
    return cudaErrorInvalidValue;
  const int GH = cell_gates(Kind) * H;
  cudaError_t e;
  int dev = 0, optin = 48 * 1024, sms = 1;
  if ((e = cudaGetDevice(&dev)) != cudaSuccess)
    return e;
  if ((e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin,
                                  dev)) != cudaSuccess)
    return e;
  if ((e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) !=
      cudaSuccess)
    return e;
  int rows;
  bool inSmem;
  size_t smem;
  if (!rnn_scan_config<T, Kind>(B, H, sms, optin, rows, inSmem, smem))
    return cudaErrorInvalidConfiguration;
  rnn_transpose_whh_kernel<T><<<grid_for((int64_t)GH * H, 256), 256, 0, stream>>>(
      GH, H, whh, wt_scratch);
  if ((e = cudaGetLastError()) != cudaSuccess)
    return e;
  const unsigned grid = (unsigned)((B + rows - 1) / rows);
  auto k = inSmem ? rnn_scan_kernel<T, L, Kind, true> : rnn_scan_kernel<T, L, Kind, false>;
  if ((e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)smem)) != cudaSuccess)
    return e;
  k<<<grid, 256, smem, stream>>>(B, Tn, H, reverse, ld_out, col_off, rows, lengths,
                                 xg, wt_scratch, bhh, h0, c0, out, hn, cn, saved,
                                 saved_stride_bt, ckc, every, (float)zoneout,
                                 seed, offset, (int)state_index);
  return cudaGetLastError();
}

/// Host launcher of one layer and direction (nnk.recurrent_scan): the
/// W_hh^T transpose into `wt_scratch` ([G*H, H] elements), then ONE
/// persistent launch. Every CUDA call is checked; the first error returns.
/// LSTM zoneout in training (nncc_rnn_layer_zoneout): rate `zoneout` (0:
/// off), `seed`, `offset` and the mask counter's state slot `state_index`.
template <typename T, typename L, int Kind>
inline cudaError_t launch_rnn_scan(int B, int Tn, int H, int reverse,
                                   int64_t ld_out, int col_off,
                                   const L *lengths, const T *xg,
                                   const T *whh, const T *bhh, const T *h0,
                                   const T *c0, T *out, T *hn, T *cn,
                                   T *saved, int64_t saved_stride_bt,
                                   T *wt_scratch, cudaStream_t stream,
                                   double zoneout = 0, uint64_t seed = 0,
                                   uint64_t offset = 0,
                                   int64_t state_index = 0) {
  return launch_rnn_scan_ckpt<T, L, Kind>(
      B, Tn, H, reverse, ld_out, col_off, lengths, xg, whh, bhh, h0, c0, out,
      hn, cn, saved, saved_stride_bt, (T *)nullptr, 0, wt_scratch, stream,
      zoneout, seed, offset, state_index);
}

} // namespace cuda
} // namespace kernels
} // namespace nncc

#endif
