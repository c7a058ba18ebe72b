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
// processes t = len_b-1-s. Outputs past a length must be zeroed by the
// caller (rnn_zero_padding_kernel); h_n / c_n get the state after each
// row's last valid step.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_CUDA_RECURRENT_CUH
#define NNCC_KERNELS_CUDA_RECURRENT_CUH

#include "nncc/Kernels/CUDA/Common.cuh"
#include "nncc/Kernels/RecurrentMath.h"

namespace nncc {
namespace kernels {
namespace cuda {

struct RnnLayerArgs {
  int B, T, H;
  int reverse;        // 0 forward, 1 reverse
  int64_t ld_out;     // row stride of out (D*H)
  int col_off;        // d*H
  const int32_t *lengths; // [B] or null (all T)
  int64_t saved_stride_bt; // elements per (b, t) in saved = slots*H
};

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

/// grid.x = ceil(B / rows), block = any multiple of 32 (256 is a good default).
template <typename T, int Kind, bool WeightsInSmem>
__global__ void rnn_layer_persistent_kernel(RnnLayerArgs a, int rows,
                                            const T *__restrict__ xg,
                                            const T *__restrict__ whh,
                                            const T *__restrict__ bhh,
                                            const T *h0, const T *c0, T *out,
                                            T *hn, T *cn, T *saved) {
  extern __shared__ unsigned char nncc_rnn_smem[];
  const int H = a.H, G = cell_gates(Kind), GH = G * H;
  T *sh = reinterpret_cast<T *>(nncc_rnn_smem);
  T *sc = sh + rows * H;
  T *shg = sc + (Kind == CellLstm ? rows * H : 0);
  T *srh = shg + rows * GH;
  T *sw = srh + (Kind == CellGruCho ? rows * H : 0);
  const T *W = WeightsInSmem ? sw : whh;

  const int b0 = blockIdx.x * rows;
  const int nr = min(rows, a.B - b0);
  if (nr <= 0)
    return;
  if (WeightsInSmem)
    for (int i = threadIdx.x; i < GH * H; i += blockDim.x)
      sw[i] = whh[i];
  int maxLen = 0;
  for (int r = 0; r < nr; ++r)
    maxLen = max(maxLen, a.lengths ? a.lengths[b0 + r] : a.T);
  for (int i = threadIdx.x; i < nr * H; i += blockDim.x) {
    const int b = b0 + i / H, j = i % H;
    sh[i] = h0 ? h0[(int64_t)b * H + j] : T(0);
    if (Kind == CellLstm)
      sc[i] = c0 ? c0[(int64_t)b * H + j] : T(0);
  }
  __syncthreads();

  const int slots = cell_saved_slots(Kind);
  const int GHa = Kind == CellGruCho ? 2 * H : GH; // rows of W_hh used first
  for (int s = 0; s < maxLen; ++s) {
    // Recurrent product for the active rows.
    for (int i = threadIdx.x; i < nr * GHa; i += blockDim.x) {
      const int r = i / GHa, o = i % GHa;
      const int len = a.lengths ? a.lengths[b0 + r] : a.T;
      if (s >= len)
        continue;
      const T *wr = W + (int64_t)o * H;
      const T *hr = sh + r * H;
      T acc = T(0);
      for (int k = 0; k < H; ++k)
        acc += wr[k] * hr[k];
      shg[r * GH + o] = acc;
    }
    __syncthreads();
    // Gate math (shared with the CPU twin).
    for (int i = threadIdx.x; i < nr * H; i += blockDim.x) {
      const int r = i / H, j = i % H, b = b0 + r;
      const int len = a.lengths ? a.lengths[b] : a.T;
      if (s >= len)
        continue;
      const int t = rnn_time_index(s, len, a.reverse != 0);
      const T *xr = xg + ((int64_t)b * a.T + t) * GH;
      const T *hr = shg + r * GH;
      T *sv = saved ? saved + ((int64_t)b * a.T + t) * a.saved_stride_bt
                    : nullptr;
      const T hp = sh[i];
      if (Kind == CellGruCho) {
        T rg, zg;
        srh[i] = gru_cho_gates(xr, hr, bhh, H, j, hp, rg, zg);
        // Each thread owns unit j: park r, z in its own hg slots.
        shg[r * GH + j] = rg;
        shg[r * GH + H + j] = zg;
        continue;
      }
      T hnew;
      if (Kind == CellLstm) {
        T cnew;
        lstm_unit(xr, hr, bhh, H, j, sc[i], cnew, hnew, sv);
        sc[i] = cnew;
      } else if (Kind == CellGru) {
        hnew = gru_unit(xr, hr, bhh, H, j, hp, sv);
      } else {
        hnew = rnn_unit(xr, hr, bhh, j, Kind == CellRnnRelu, sv, H);
      }
      sh[i] = hnew;
      out[((int64_t)b * a.T + t) * a.ld_out + a.col_off + j] = hnew;
    }
    if (Kind == CellGruCho) {
      __syncthreads();
      // Second recurrent product: W_hh[2H:3H] (r*h).
      for (int i = threadIdx.x; i < nr * H; i += blockDim.x) {
        const int r = i / H, o = i % H;
        const int len = a.lengths ? a.lengths[b0 + r] : a.T;
        if (s >= len)
          continue;
        const T *wr = W + (int64_t)(2 * H + o) * H;
        const T *rh = srh + r * H;
        T acc = T(0);
        for (int k = 0; k < H; ++k)
          acc += wr[k] * rh[k];
        shg[r * GH + 2 * H + o] = acc;
      }
      __syncthreads();
      for (int i = threadIdx.x; i < nr * H; i += blockDim.x) {
        const int r = i / H, j = i % H, b = b0 + r;
        const int len = a.lengths ? a.lengths[b] : a.T;
        if (s >= len)
          continue;
        const int t = rnn_time_index(s, len, a.reverse != 0);
        const T *xr = xg + ((int64_t)b * a.T + t) * GH;
        T *sv = saved ? saved + ((int64_t)b * a.T + t) * a.saved_stride_bt
                      : nullptr;
        T hnew = gru_cho_update(xr, shg[r * GH + 2 * H + j], bhh, H, j, sh[i],
                                shg[r * GH + j], shg[r * GH + H + j], sv);
        sh[i] = hnew;
        out[((int64_t)b * a.T + t) * a.ld_out + a.col_off + j] = hnew;
      }
    }
    __syncthreads();
  }
  (void)slots;
  for (int i = threadIdx.x; i < nr * H; i += blockDim.x) {
    const int64_t b = b0 + i / H, j = i % H;
    if (hn)
      hn[b * H + j] = sh[i];
    if (Kind == CellLstm && cn)
      cn[b * H + j] = sc[i];
  }
}

/// Zero out[b, t, :] for t >= len_b (all D*H columns).
template <typename T>
__global__ void rnn_zero_padding_kernel(int B, int Tn, int64_t width,
                                        const int32_t *lengths, T *out) {
  const int64_t n = (int64_t)B * Tn * width;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t bt = i / width;
    if (bt % Tn >= lengths[bt / Tn])
      out[i] = T(0);
  }
}

/// Host launcher for one layer and direction. h0/c0/hn/cn point at this
/// (layer, direction)'s [B, H] slice; saved at its [B, T, slots*H] slice.
template <typename T, int Kind>
inline cudaError_t launch_rnn_layer(const RnnLayerArgs &a, const T *xg,
                                    const T *whh, const T *bhh, const T *h0,
                                    const T *c0, T *out, T *hn, T *cn,
                                    T *saved, cudaStream_t stream = 0,
                                    int rows = 8) {
  int dev = 0, optin = 48 * 1024;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
  if (rows > a.B)
    rows = a.B > 0 ? a.B : 1;
  bool inSmem = rnn_smem_bytes<T, Kind>(rows, a.H, true) <= (size_t)optin;
  size_t smem = rnn_smem_bytes<T, Kind>(rows, a.H, inSmem);
  while (smem > (size_t)optin && rows > 1) {
    rows /= 2;
    smem = rnn_smem_bytes<T, Kind>(rows, a.H, inSmem);
  }
  if (smem > (size_t)optin)
    return cudaErrorInvalidConfiguration;
  const unsigned grid = (unsigned)((a.B + rows - 1) / rows);
  if (inSmem) {
    auto k = rnn_layer_persistent_kernel<T, Kind, true>;
    cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                         (int)smem);
    k<<<grid, 256, smem, stream>>>(a, rows, xg, whh, bhh, h0, c0, out, hn, cn,
                                   saved);
  } else {
    auto k = rnn_layer_persistent_kernel<T, Kind, false>;
    cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                         (int)smem);
    k<<<grid, 256, smem, stream>>>(a, rows, xg, whh, bhh, h0, c0, out, hn, cn,
                                   saved);
  }
  return cudaGetLastError();
}

} // namespace cuda
} // namespace kernels
} // namespace nncc

#endif
