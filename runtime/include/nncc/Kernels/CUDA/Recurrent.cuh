//===- Recurrent.cuh - Persistent recurrent layer kernels -------*- CUDA -*-===//
//
// One launch per layer and direction. The input projection of all time
// steps, xg = X W_ih^T + b_ih [B, T, G*H], is ONE cuBLAS GEMM done by the
// caller before the launch. Two persistent kernels then loop over time:
//  - rnn_scan_kernel: each CTA owns a slice of `rows` batch rows: per step
//    it forms the recurrent product W_hh h for its rows (W_hh held in shared
//    memory when it fits, otherwise streamed from L2), __syncthreads, and
//    applies the gate math of RecurrentMath.h -- the CPU twin's functions;
//  - rnn_grid_kernel (one cooperative launch): each CTA owns a slice of the
//    hidden units with W_hh's rows of them resident in shared memory, all
//    batch rows, and a grid-wide barrier per step (see its section).
// launch_rnn_scan_ckpt picks one (NNCC_CUDA_RNN=auto|scan|grid).
//
// Variable lengths: row b is active while s < len_b; the reverse direction
// processes t = len_b-1-s. The kernel zeroes its own output columns past
// each length; h_n / c_n get the state after each row's last valid step.
// Lengths are clamped to [0, T].
//
// bf16 (T = bf16_t, inference): xg, W_hh, b_hh, h0/c0 and the outputs y,
// h_n, c_n are bf16 storage; the recurrent state (h, c, the products hg,
// Cho's r*h) stays fp32 (acc_t<T>) in shared memory and registers for the
// whole sequence, and W_hh stays bf16 in shared memory (half of f32's bytes),
// widened when read. The arithmetic is the float instantiation's, in the
// same order: a bf16 output is the float kernel's output on the widened
// inputs, rounded once. The grid kernel exchanges the fp32 h through the
// caller's scratch instead of reading it back from (rounded) y. Run on an
// H200 on 2026-11-27 in the bf16 inference of lstm_lm, gru_forecaster and
// bilstm_tagger (docs/design.md, "Precisions").
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_CUDA_RECURRENT_CUH
#define NNCC_KERNELS_CUDA_RECURRENT_CUH

#include "nncc/Kernels/CUDA/Common.cuh"
#include "nncc/Kernels/RandomMasks.h"
#include "nncc/Kernels/RecurrentMath.h"

#include <cooperative_groups.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

namespace nncc {
namespace kernels {
namespace cuda {

/// Shared memory of one CTA of rnn_scan_kernel: the state of its `rows`
/// batch rows (h, c for LSTM, the recurrent product hg, r*h for Cho's GRU)
/// in acc_t<T> and, when `weights_in_smem`, W_hh^T [H, G*H] in T (bf16:
/// fp32 state, bf16 weights).
template <typename T, int Kind>
__host__ __device__ inline size_t rnn_smem_bytes(int rows, int H,
                                                 bool weights_in_smem) {
  const int G = cell_gates(Kind);
  size_t n = (size_t)rows * H                       // h
             + (Kind == CellLstm ? (size_t)rows * H : 0) // c
             + (size_t)rows * G * H                 // hg
             + (Kind == CellGruCho ? (size_t)rows * H : 0); // r*h
  return n * sizeof(acc_t<T>) + (weights_in_smem ? (size_t)G * H * H * sizeof(T) : 0);
}

/// b[i] in the arithmetic type, 0 without a bias (bias_at of RecurrentMath.h).
template <typename T>
__device__ __forceinline__ acc_t<T> rnn_bias_acc(const T *b, int i) {
  return b ? load_acc(b[i]) : acc_t<T>(0);
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
/// lstm_zoneout_counter(sd, t, b, j, B, T, H), zo_p) (RandomMasks.h, the CPU's
/// mask bit for bit); the saved c slot and the checkpoints hold the kept c.
/// bf16: the state (h, c, hg, r*h) in fp32 shared memory, W_hh^T in bf16,
/// each unit's xg, hg and b_hh gathered widened into registers for the gate
/// math (stride 1, as the grid kernel); outputs rounded once when stored.
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
  typedef acc_t<T> S; // the state's and the arithmetic's type
  extern __shared__ unsigned char nncc_rnn_smem[];
  const int G = cell_gates(Kind), GH = G * H;
  S *sh = reinterpret_cast<S *>(nncc_rnn_smem);
  S *sc = sh + rows * H;
  S *shg = sc + (Kind == CellLstm ? rows * H : 0);
  S *srh = shg + rows * GH;
  T *sw = reinterpret_cast<T *>(srh + (Kind == CellGruCho ? rows * H : 0));
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
    sh[i] = h0 ? load_acc(h0[(int64_t)b * H + j]) : S(0);
    if (Kind == CellLstm)
      sc[i] = c0 ? load_acc(c0[(int64_t)b * H + j]) : S(0);
  }
  __syncthreads();

  const int GHa = Kind == CellGruCho ? 2 * H : GH; // outputs of the first product
  for (int s = 0; s < maxLen; ++s) {
    // Recurrent product for the active rows: hg[r, o] = sum_k h[r, k] W[o, k].
    for (int i = threadIdx.x; i < nr * GHa; i += blockDim.x) {
      const int r = i / GHa, o = i % GHa;
      if (s >= rnn_len(lengths, b0 + r, Tn))
        continue;
      const S *hr = sh + r * H;
      S acc = S(0);
      for (int k = 0; k < H; ++k)
        acc += load_acc(W[(int64_t)k * GH + o]) * hr[k];
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
      const S *hr = shg + r * GH;
      T *sv = saved ? saved + ((int64_t)b * Tn + t) * saved_stride_bt : nullptr;
      const S hp = sh[i];
      if constexpr (is_bf16_v<T>) {
        // The unit's gate values widened into registers, the gate math at
        // gate stride 1 (the float kernel's sums: bias 0 without b_hh, as
        // bias_at), the saved slots in registers.
        constexpr int Gc = cell_gates(Kind), NS = cell_saved_slots(Kind);
        const int Ga = Kind == CellGruCho ? 2 : Gc; // products formed so far
        S xl[Gc], hl[Gc], bl[Gc], sl[NS];
#pragma unroll
        for (int g = 0; g < Gc; ++g) {
          xl[g] = load_acc(xr[g * H + j]);
          hl[g] = g < Ga ? hr[g * H + j] : S(0);
          bl[g] = rnn_bias_acc(bhh, g * H + j);
        }
        if (Kind == CellGruCho) {
          S rg, zg;
          srh[i] = gru_cho_gates(xl, hl, bl, 1, 0, hp, rg, zg);
          shg[r * GH + j] = rg; // own slots, read above by this thread only
          shg[r * GH + H + j] = zg;
          continue;
        }
        S hnew;
        if (Kind == CellLstm) {
          S cnew;
          lstm_unit(xl, hl, bl, 1, 0, sc[i], cnew, hnew, sl);
          if (zo_p > 0.0f &&
              zoneout_keep_prev(lstm_zoneout_key(zo_seed, sd), zo_offset,
                                lstm_zoneout_counter(sd, t, b, j, B, Tn, H), zo_p)) {
            cnew = sc[i]; // zoned out: h and c stay, the saved c slot the kept c
            hnew = hp;
            sl[NS - 1] = cnew;
          }
          sc[i] = cnew;
          if (ckc && s + 1 < len && (s + 1) % every == 0)
            ckc[((int64_t)(s + 1) / every - 1) * B * H + (int64_t)b * H + j] =
                store_acc<T>(cnew);
        } else if (Kind == CellGru) {
          hnew = gru_unit(xl, hl, bl, 1, 0, hp, sl);
        } else {
          hnew = rnn_unit(xl, hl, bl, 0, Kind == CellRnnRelu, sl, 1);
        }
        if (sv)
#pragma unroll
          for (int q = 0; q < NS; ++q)
            sv[(int64_t)q * H + j] = store_acc<T>(sl[q]);
        sh[i] = hnew;
        out[((int64_t)b * Tn + t) * ld_out + col_off + j] = store_acc<T>(hnew);
      } else { // float, double: in place at gate stride H
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
              zoneout_keep_prev(lstm_zoneout_key(zo_seed, sd), zo_offset,
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
    }
    if (Kind == CellGruCho) {
      __syncthreads();
      // Second recurrent product: W_hh[2H:3H] (r*h).
      for (int i = threadIdx.x; i < nr * H; i += blockDim.x) {
        const int r = i / H, o = i % H;
        if (s >= rnn_len(lengths, b0 + r, Tn))
          continue;
        const S *rh = srh + r * H;
        S acc = S(0);
        for (int k = 0; k < H; ++k)
          acc += load_acc(W[(int64_t)k * GH + 2 * H + o]) * rh[k];
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
        if constexpr (is_bf16_v<T>) {
          S xl[3], bl[3], sl[3];
#pragma unroll
          for (int g = 0; g < 3; ++g) {
            xl[g] = load_acc(xr[g * H + j]);
            bl[g] = rnn_bias_acc(bhh, g * H + j);
          }
          const S hnew = gru_cho_update(xl, shg[r * GH + 2 * H + j], bl, 1, 0, sh[i],
                                        shg[r * GH + j], shg[r * GH + H + j], sl);
          if (sv)
#pragma unroll
            for (int q = 0; q < 3; ++q)
              sv[(int64_t)q * H + j] = store_acc<T>(sl[q]);
          sh[i] = hnew;
          out[((int64_t)b * Tn + t) * ld_out + col_off + j] = store_acc<T>(hnew);
        } else {
          T hnew = gru_cho_update(xr, shg[r * GH + 2 * H + j], bhh, H, j, sh[i],
                                  shg[r * GH + j], shg[r * GH + H + j], sv);
          sh[i] = hnew;
          out[((int64_t)b * Tn + t) * ld_out + col_off + j] = hnew;
        }
      }
    }
    __syncthreads();
  }
  // Zeros past each length (this direction's columns only), then the state.
  for (int64_t i = threadIdx.x; i < (int64_t)nr * Tn * H; i += blockDim.x) {
    const int r = (int)(i / ((int64_t)Tn * H));
    const int t = (int)((i / H) % Tn), j = (int)(i % H), b = b0 + r;
    if (t >= rnn_len(lengths, b, Tn))
      out[((int64_t)b * Tn + t) * ld_out + col_off + j] = T{};
  }
  for (int i = threadIdx.x; i < nr * H; i += blockDim.x) {
    const int64_t b = b0 + i / H, j = i % H;
    if (hn)
      hn[b * H + j] = store_acc<T>(sh[i]);
    if (Kind == CellLstm && cn)
      cn[b * H + j] = store_acc<T>(sc[i]);
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

// ---------------------------------------------------------------------------
// The cooperative-grid persistent kernel (Diamos et al. 2016, Persistent
// RNNs): the recurrent weights stay on chip for the whole sequence, split
// across the CTAs of one cooperative launch.
//
// CTA c of nc owns the hidden units [j0, j0 + u), j0 = c*H/nc (u = 1..us,
// us = ceil(H/nc)), with ALL G gates of them, so the gate math stays local.
// Its W_hh rows (G*u of [G*H, H], local row g*us + jj = W_hh row
// g*H + j0 + jj) live in shared memory for the whole launch. Per step s it
// stages h_{s-1} of the active rows (read back from the layer output y,
// where every CTA wrote its units the step before; h0 at s = 0) into shared
// memory, forms its G*u x B products warp-cooperatively with 16-byte loads,
// applies RecurrentMath.h's gate math to its units, writes them to y, and
// meets the other CTAs at grid.sync(). c (LSTM) and the units' own h stay in
// the CTA. Cho's GRU multiplies W_hh[2H:3H] by r*h, which needs all units:
// r*h goes through a [B, H] global buffer and a second grid.sync().
// ---------------------------------------------------------------------------

/// Threads per CTA of rnn_grid_kernel; output rows x batch rows of one warp
/// item of its products (register tile).
constexpr int kRnnGridThreads = 256;
constexpr int kRnnGridRows = 4;
constexpr int kRnnGridBatch = 4;

/// 16-byte vector of T for the products (shared-memory rows are padded to
/// a multiple of its length with zeros).
template <typename T> struct RnnVec;
template <> struct RnnVec<float> {
  typedef float4 type;
  static constexpr int n = 4;
  static __device__ __forceinline__ const float4 &widen(const float4 &a) { return a; }
  static __device__ __forceinline__ float dot(const float4 &a, const float4 &b) {
    return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
  }
};
template <> struct RnnVec<double> {
  typedef double2 type;
  static constexpr int n = 2;
  static __device__ __forceinline__ const double2 &widen(const double2 &a) { return a; }
  static __device__ __forceinline__ double dot(const double2 &a, const double2 &b) {
    return a.x * b.x + a.y * b.y;
  }
};
/// bf16 weights: 8-byte vectors of 4 (two 32-bit words, little-endian: the
/// first bf16 in the low half), widened to a float4 when loaded, then
/// multiplied as float's (the float kernel's sums on the widened values).
struct __align__(8) RnnBf16x4 {
  uint32_t lo, hi;
};
template <> struct RnnVec<bf16_t> {
  typedef RnnBf16x4 type;
  static constexpr int n = 4;
  static __device__ __forceinline__ float4 widen(const RnnBf16x4 &a) {
    float4 f;
    f.x = bf16_bits_float(a.lo << 16);
    f.y = bf16_bits_float(a.lo & 0xffff0000u);
    f.z = bf16_bits_float(a.hi << 16);
    f.w = bf16_bits_float(a.hi & 0xffff0000u);
    return f;
  }
};

/// Shared-memory shape of one CTA of rnn_grid_kernel for units-per-CTA us:
/// hp = H padded to the vector length; rp = rows of the weight slice and of
/// each batch row's products (G*us, padded so that every warp item's
/// kRnnGridRows rows exist: Cho's second product starts at row 2*us).
struct RnnGridShape {
  int hp, rp;
};
template <typename T, int Kind>
__host__ __device__ inline RnnGridShape rnn_grid_shape(int H, int us) {
  const int V = RnnVec<T>::n, RO = kRnnGridRows, G = cell_gates(Kind);
  RnnGridShape s;
  s.hp = (H + V - 1) / V * V;
  s.rp = (G * us + RO - 1) / RO * RO;
  if (Kind == CellGruCho) {
    const int second = 2 * us + (us + RO - 1) / RO * RO;
    s.rp = s.rp > second ? s.rp : second;
  }
  return s;
}

/// Dynamic shared memory of one CTA: the weight slice [rp, hp] and the
/// step's xg [B, rp] in T; the staged h (or r*h) [B, hp], the products
/// [B, rp] and the units' h and (LSTM) c [B, us] in acc_t<T> (bf16: fp32
/// state, bf16 weights and xg); the clamped lengths [B] (int).
template <typename T, int Kind>
__host__ __device__ inline size_t rnn_grid_smem_bytes(int B, int H, int us) {
  const RnnGridShape s = rnn_grid_shape<T, Kind>(H, us);
  return ((size_t)s.rp * s.hp + (size_t)B * s.rp) * sizeof(T) +
         ((size_t)B * s.hp + (size_t)B * s.rp + (size_t)B * us * (Kind == CellLstm ? 2 : 1)) *
             sizeof(acc_t<T>) +
         (size_t)B * sizeof(int);
}

/// Bytes of the grid kernel's exchange buffer in the caller's scratch
/// (acc_t<T>): Cho's r*h [B, H], after, for bf16, the fp32 h of the
/// previous and the current step [2, B, H] (y holds h rounded).
template <typename T, int Kind>
__host__ __device__ inline size_t rnn_grid_exchange_bytes(int B, int H) {
  const size_t n = (Kind == CellGruCho ? 1 : 0) + (is_bf16_v<T> ? 2 : 0);
  return n * (size_t)B * H * sizeof(acc_t<T>);
}

/// prod[b*rp + r] = W_slice[r, :] . hs[b, :] for rows r in [lo, hi), all B
/// batch rows. One warp item = kRnnGridRows rows x kRnnGridBatch batch rows
/// held in registers; lanes stride over the vectors of a row (consecutive
/// lanes, consecutive 16 bytes: conflict-free), then a butterfly reduction.
/// Rows past hi inside an item exist (rp padding) and are not stored.
/// The weights in T, hs and prod in S = acc_t<T> (bf16: 8-byte vectors of 4
/// weights, widened to float4 when loaded; 16 bytes per lane otherwise).
template <typename T, typename S>
__device__ __forceinline__ void rnn_grid_product(const T *sw, const S *hs, S *prod, int B,
                                                 int hp, int rp, int lo, int hi) {
  typedef RnnVec<S> Vec;
  typedef typename RnnVec<T>::type V;
  typedef typename Vec::type HV;
  static_assert(RnnVec<T>::n == Vec::n, "as many weights as states per vector");
  constexpr int RO = kRnnGridRows, RB = kRnnGridBatch;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  const int groups = (hi - lo + RO - 1) / RO, chunks = (B + RB - 1) / RB;
  const int nv = hp / Vec::n;
  for (int item = warp; item < groups * chunks; item += nwarps) {
    const int r0 = lo + (item % groups) * RO, b0 = (item / groups) * RB;
    const int nb = min(RB, B - b0);
    const V *w = reinterpret_cast<const V *>(sw + (int64_t)r0 * hp);
    const HV *h = reinterpret_cast<const HV *>(hs + (int64_t)b0 * hp);
    S acc[RO][RB];
#pragma unroll
    for (int o = 0; o < RO; ++o)
#pragma unroll
      for (int b = 0; b < RB; ++b)
        acc[o][b] = S(0);
    for (int q = lane; q < nv; q += 32) {
      HV wv[RO];
#pragma unroll
      for (int o = 0; o < RO; ++o)
        wv[o] = RnnVec<T>::widen(w[o * nv + q]);
#pragma unroll
      for (int b = 0; b < RB; ++b) {
        if (b < nb) {
          const HV hv = h[b * nv + q];
#pragma unroll
          for (int o = 0; o < RO; ++o)
            acc[o][b] += Vec::dot(wv[o], hv);
        }
      }
    }
#pragma unroll
    for (int o = 0; o < RO; ++o)
#pragma unroll
      for (int b = 0; b < RB; ++b) {
        S v = acc[o][b];
#pragma unroll
        for (int m = 16; m > 0; m >>= 1)
          v += __shfl_xor_sync(0xffffffffu, v, m);
        if (lane == 0 && r0 + o < hi && b < nb)
          prod[(b0 + b) * rp + r0 + o] = v;
      }
  }
}

/// For i in [0, n) with ok(i): st(i, ld(i)), loads issued K at a time
/// before their stores, so a thread waits for one round trip to L2 per K
/// elements instead of one per element.
template <int K, typename T, typename Ok, typename Ld, typename St>
__device__ __forceinline__ void rnn_grid_gather(int n, Ok ok, Ld ld, St st) {
  for (int i0 = threadIdx.x; i0 < n; i0 += K * blockDim.x) {
    T v[K];
    bool a[K];
#pragma unroll
    for (int q = 0; q < K; ++q) {
      const int i = i0 + q * blockDim.x;
      a[q] = i < n && ok(i);
      v[q] = a[q] ? ld(i) : T{};
    }
#pragma unroll
    for (int q = 0; q < K; ++q)
      if (a[q])
        st(i0 + q * blockDim.x, v[q]);
  }
}

/// Stages B rows into dst [B, stride] (stride >= n): row b's columns
/// [0, n) from row(b), read through L2 (__ldcg: other CTAs of the launch
/// wrote them), zeros past n and in the rows where row(b) is null (rows not
/// active at this step). In E-sized pieces: 16-byte vectors when the caller
/// knows every row to be 16-byte aligned with n a multiple of the vector
/// length, else elements. A thread walks its items with an incremental
/// (row, piece) pair instead of dividing, holds K loads in flight before
/// their stores, and runs mid() once after its first loads are issued, so
/// that the step's other staging overlaps their latency.
template <int K, typename E, typename T, typename Row, typename Mid>
__device__ __forceinline__ void rnn_grid_stage_rows_as(int B, int nq, int sq, Row &row,
                                                       T *dst_t, Mid &mid) {
  E *dst = reinterpret_cast<E *>(dst_t);
  const int step = blockDim.x, rounds = (B * sq + K * step - 1) / (K * step);
  const int db = step / sq, dq = step % sq;
  int b = threadIdx.x / sq, q = threadIdx.x % sq;
  for (int r = 0; r < rounds; ++r) {
    E v[K];
    int at[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
      at[k] = -1;
      v[k] = E{};
      if (b < B) {
        at[k] = b * sq + q;
        const T *src = q < nq ? row(b) : nullptr;
        if (src)
          v[k] = __ldcg(reinterpret_cast<const E *>(src) + q);
      }
      q += dq;
      b += db;
      if (q >= sq) {
        q -= sq;
        ++b;
      }
    }
    if (r == 0)
      mid();
#pragma unroll
    for (int k = 0; k < K; ++k)
      if (at[k] >= 0)
        dst[at[k]] = v[k];
  }
  if (rounds == 0)
    mid();
}
template <int K, typename T, typename Row, typename Mid>
__device__ __forceinline__ void rnn_grid_stage_rows(int B, int n, int stride, bool vec, Row row,
                                                    T *dst, Mid mid) {
  typedef RnnVec<T> Vec;
  if (vec)
    rnn_grid_stage_rows_as<K, typename Vec::type>(B, n / Vec::n, stride / Vec::n, row, dst, mid);
  else
    rnn_grid_stage_rows_as<K, T>(B, n, stride, row, dst, mid);
}

/// Whether p is 16-byte aligned (the vector path of rnn_grid_stage_rows).
__device__ __forceinline__ bool rnn_aligned16(const void *p) {
  return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}

/// The persistent multi-CTA kernel: ONE cooperative launch of nc CTAs runs
/// one layer and direction over all time steps (see the section comment).
/// Arguments as rnn_scan_kernel, with whh = W_hh [G*H, H] itself (no
/// transpose), us = ceil(H / gridDim.x) and rh_x a [B, H] buffer for Cho's
/// r*h (null otherwise). Every CTA runs the same max-length loop, so all
/// reach the same grid.sync() calls: one per step, two for Cho's GRU, one
/// more at the first step (h0 may alias y or h_n).
/// Values written by other CTAs in this launch (y, rh_x) are read through
/// L2 (__ldcg), never through the non-coherent path.
/// bf16: rh_x (fp32, rnn_grid_exchange_bytes) holds h_s at
/// rh_x + (s & 1) * B * H, which the next step stages instead of the
/// rounded y (h0 widened into the slot of step -1 before a first grid.sync,
/// which also covers h0 aliasing y or h_n), and Cho's r*h after both.
template <typename T, typename L, int Kind>
__global__ void __launch_bounds__(kRnnGridThreads)
    rnn_grid_kernel(int B, int Tn, int H, int reverse, int64_t ld_out, int col_off, int us,
                    const L *__restrict__ lengths, const T *__restrict__ xg,
                    const T *__restrict__ whh, const T *__restrict__ bhh, const T *h0,
                    const T *c0, T *out, T *hn, T *cn, T *saved, int64_t saved_stride_bt,
                    T *ckc, int every, float zo_p, uint64_t zo_seed, uint64_t zo_offset, int sd,
                    acc_t<T> *rh_x) {
  typedef acc_t<T> S; // the state's and the arithmetic's type
  constexpr bool BF = is_bf16_v<T>;
  namespace cg = cooperative_groups;
  extern __shared__ __align__(16) unsigned char nncc_rnn_grid_smem[];
  cg::grid_group grid = cg::this_grid();
  constexpr int G = cell_gates(Kind), NS = cell_saved_slots(Kind);
  const int GH = G * H;
  const RnnGridShape sh = rnn_grid_shape<T, Kind>(H, us);
  const int hp = sh.hp, rp = sh.rp;
  T *sw = reinterpret_cast<T *>(nncc_rnn_grid_smem);        // [rp, hp] weight slice
  S *shs = reinterpret_cast<S *>(sw + (int64_t)rp * hp);     // [B, hp] staged h or r*h
  S *shg = shs + (int64_t)B * hp;                            // [B, rp] products
  T *sxg = reinterpret_cast<T *>(shg + (int64_t)B * rp);     // [B, rp] this step's xg
  S *sho = reinterpret_cast<S *>(sxg + (int64_t)B * rp);     // [B, us] own units' h
  S *sc = sho + (int64_t)B * us;                             // [B, us] own units' c (LSTM)
  int *slen = reinterpret_cast<int *>(sc + (Kind == CellLstm ? (int64_t)B * us : 0)); // [B]
  // bf16: the fp32 h of step s at hx + (s & 1) * B * H; Cho's r*h.
  S *const hx = rh_x;
  S *const rh = rh_x + (BF ? 2 * (int64_t)B * H : 0);

  const int nc = gridDim.x, c = blockIdx.x;
  const int j0 = (int)((int64_t)c * H / nc), u = (int)((int64_t)(c + 1) * H / nc) - j0;
  const int Gu = G * u;
  // The weight slice, zero rows past u and zero columns past H.
  for (int64_t i = threadIdx.x; i < (int64_t)rp * hp; i += blockDim.x) {
    const int r = (int)(i / hp), k = (int)(i % hp), g = r / us, jj = r % us;
    sw[i] = g < G && jj < u && k < H ? whh[((int64_t)g * H + j0 + jj) * H + k] : T{};
  }
  for (int i = threadIdx.x; i < B * u; i += blockDim.x) {
    const int b = i / u, j = j0 + i % u;
    sho[b * us + i % u] = h0 ? load_acc(h0[(int64_t)b * H + j]) : S(0);
    if (Kind == CellLstm)
      sc[b * us + i % u] = c0 ? load_acc(c0[(int64_t)b * H + j]) : S(0);
  }
  if constexpr (BF) {
    // h0 of the own units, widened, where step 0 stages h_{-1} from; then
    // every CTA has read all it reads of h0 (it may alias y or h_n).
    if (h0)
      for (int i = threadIdx.x; i < B * u; i += blockDim.x) {
        const int b = i / u, j = j0 + i % u;
        hx[(int64_t)B * H + (int64_t)b * H + j] = load_acc(h0[(int64_t)b * H + j]);
      }
    grid.sync();
  }
  for (int b = threadIdx.x; b < B; b += blockDim.x)
    slen[b] = rnn_len(lengths, b, Tn);
  int maxLen = 0;
  for (int b = 0; b < B; ++b)
    maxLen = max(maxLen, rnn_len(lengths, b, Tn));
  __syncthreads();

  constexpr int Ga = Kind == CellGruCho ? 2 : G; // gates of the first product
  // Whether the staged rows (h0's, y's, Cho's r*h) can move in vectors.
  constexpr int V = RnnVec<T>::n;
  const bool vec_hx = BF && H % V == 0 && rnn_aligned16(hx) && rnn_aligned16(hx + (int64_t)B * H);
  const bool vec_h0 = BF ? vec_hx : H % V == 0 && (!h0 || rnn_aligned16(h0));
  const bool vec_out =
      BF ? vec_hx : H % V == 0 && ld_out % V == 0 && col_off % V == 0 && rnn_aligned16(out);
  const bool vec_rh = H % V == 0 && rh && rnn_aligned16(rh);
  for (int s = 0; s < maxLen; ++s) {
    // h_{s-1} of the active rows (from y, where its owners wrote it the
    // step before; h0 or zeros at s = 0), row by row in vectors, and this
    // step's xg of the own units while those loads are in flight.
    rnn_grid_stage_rows<8>(
        B, H, hp, s == 0 ? vec_h0 : vec_out,
        [&](int b) -> const S * {
          if (s >= slen[b])
            return nullptr;
          if constexpr (BF) {
            return s == 0 && !h0 ? nullptr : hx + (int64_t)((s + 1) & 1) * B * H + (int64_t)b * H;
          } else {
            if (s == 0)
              return h0 ? h0 + (int64_t)b * H : nullptr;
            const int tp = rnn_time_index(s - 1, slen[b], reverse != 0);
            return out + ((int64_t)b * Tn + tp) * ld_out + col_off;
          }
        },
        shs,
        [&] {
          rnn_grid_gather<8, T>(
              B * Gu, [&](int i) { return s < slen[i / Gu]; },
              [&](int i) -> T {
                const int b = i / Gu, r = i % Gu;
                const int t = rnn_time_index(s, slen[b], reverse != 0);
                return xg[((int64_t)b * Tn + t) * GH + (r / u) * H + j0 + r % u];
              },
              [&](int i, T v) {
                const int b = i / Gu, r = i % Gu;
                sxg[b * rp + (r / u) * us + r % u] = v;
              });
        });
    // h0 may be y's or h_n's own buffer (a cell step in place): every CTA
    // has read all of it before any writes there (bf16: before the loop).
    if (!BF && s == 0)
      grid.sync();
    __syncthreads();
    rnn_grid_product(sw, shs, shg, B, hp, rp, 0, Ga * us);
    __syncthreads();
    // Gate math of the own units: the unit's G gate values gathered into
    // registers, then RecurrentMath.h's functions at gate stride 1 (bias
    // zeros without b_hh, as bias_at; the saved slots always in registers).
    for (int i = threadIdx.x; i < B * u; i += blockDim.x) {
      const int b = i / u, jj = i % u, j = j0 + jj;
      const int len = slen[b];
      if (s >= len)
        continue;
      const int t = rnn_time_index(s, len, reverse != 0);
      T *sv = saved ? saved + ((int64_t)b * Tn + t) * saved_stride_bt : nullptr;
      S xl[G], hl[G], bl[G], sl[NS];
#pragma unroll
      for (int g = 0; g < G; ++g) {
        xl[g] = load_acc(sxg[b * rp + g * us + jj]);
        hl[g] = g < Ga ? shg[b * rp + g * us + jj] : S(0);
        bl[g] = rnn_bias_acc(bhh, g * H + j);
      }
      const S hprev = sho[b * us + jj];
      if (Kind == CellGruCho) {
        S rg, zg;
        rh[(int64_t)b * H + j] = gru_cho_gates(xl, hl, bl, 1, 0, hprev, rg, zg);
        shg[b * rp + jj] = rg; // own slots, read above by this thread only
        shg[b * rp + us + jj] = zg;
        continue;
      }
      S hnew;
      if (Kind == CellLstm) {
        const S cprev = sc[b * us + jj];
        S cnew;
        lstm_unit(xl, hl, bl, 1, 0, cprev, cnew, hnew, sl);
        if (zo_p > 0.0f &&
            zoneout_keep_prev(lstm_zoneout_key(zo_seed, sd), zo_offset, lstm_zoneout_counter(sd, t, b, j, B, Tn, H),
                              zo_p)) {
          cnew = cprev; // zoned out: h and c stay, the saved c slot the kept c
          hnew = hprev;
          sl[NS - 1] = cnew;
        }
        sc[b * us + jj] = cnew;
        if (ckc && s + 1 < len && (s + 1) % every == 0)
          ckc[((int64_t)(s + 1) / every - 1) * B * H + (int64_t)b * H + j] = store_acc<T>(cnew);
      } else if (Kind == CellGru) {
        hnew = gru_unit(xl, hl, bl, 1, 0, hprev, sl);
      } else {
        hnew = rnn_unit(xl, hl, bl, 0, Kind == CellRnnRelu, sl, 1);
      }
      if (sv)
#pragma unroll
        for (int q = 0; q < NS; ++q)
          sv[(int64_t)q * H + j] = store_acc<T>(sl[q]);
      sho[b * us + jj] = hnew;
      out[((int64_t)b * Tn + t) * ld_out + col_off + j] = store_acc<T>(hnew);
      if constexpr (BF)
        hx[(int64_t)(s & 1) * B * H + (int64_t)b * H + j] = hnew;
    }
    if (Kind == CellGruCho) {
      grid.sync(); // every unit's r*h is in rh_x
      rnn_grid_stage_rows<8>(
          B, H, hp, vec_rh,
          [&](int b) -> const S * { return s < slen[b] ? rh + (int64_t)b * H : nullptr; },
          shs, [] {});
      __syncthreads();
      rnn_grid_product(sw, shs, shg, B, hp, rp, 2 * us, 3 * us);
      __syncthreads();
      for (int i = threadIdx.x; i < B * u; i += blockDim.x) {
        const int b = i / u, jj = i % u, j = j0 + jj;
        const int len = slen[b];
        if (s >= len)
          continue;
        const int t = rnn_time_index(s, len, reverse != 0);
        T *sv = saved ? saved + ((int64_t)b * Tn + t) * saved_stride_bt : nullptr;
        S xl[3], bl[3], sl[NS];
#pragma unroll
        for (int g = 0; g < 3; ++g) {
          xl[g] = load_acc(sxg[b * rp + g * us + jj]);
          bl[g] = rnn_bias_acc(bhh, g * H + j);
        }
        const S hnew = gru_cho_update(xl, shg[b * rp + 2 * us + jj], bl, 1, 0, sho[b * us + jj],
                                      shg[b * rp + jj], shg[b * rp + us + jj], sl);
        if (sv)
#pragma unroll
          for (int q = 0; q < NS; ++q)
            sv[(int64_t)q * H + j] = store_acc<T>(sl[q]);
        sho[b * us + jj] = hnew;
        out[((int64_t)b * Tn + t) * ld_out + col_off + j] = store_acc<T>(hnew);
        if constexpr (BF)
          hx[(int64_t)(s & 1) * B * H + (int64_t)b * H + j] = hnew;
      }
    }
    // Step s + 1 reads every unit's h_s from y (after the last step nothing
    // is read across CTAs any more).
    if (s + 1 < maxLen)
      grid.sync();
  }
  __syncthreads();
  // Zeros past each length in the own columns, then the final state.
  for (int64_t i = threadIdx.x; i < (int64_t)B * Tn * u; i += blockDim.x) {
    const int b = (int)(i / ((int64_t)Tn * u)), t = (int)((i / u) % Tn), j = j0 + (int)(i % u);
    if (t >= slen[b])
      out[((int64_t)b * Tn + t) * ld_out + col_off + j] = T{};
  }
  for (int i = threadIdx.x; i < B * u; i += blockDim.x) {
    const int64_t b = i / u, jj = i % u;
    if (hn)
      hn[b * H + j0 + jj] = store_acc<T>(sho[b * us + jj]);
    if (Kind == CellLstm && cn)
      cn[b * H + j0 + jj] = store_acc<T>(sc[b * us + jj]);
  }
}

/// Batch rows up to which NNCC_CUDA_RNN=auto prefers the grid kernel (see
/// docs/cuda.md: per step it costs a grid barrier plus B*H staged and
/// B*G*H*H/nc products per CTA; the scan kernel's CTAs each form G*H*H
/// products per row and stream W_hh from L2 once H outgrows shared memory).
constexpr int kRnnGridMaxBatch = 64;
/// Hidden size from which auto prefers it (below, W_hh^T of the scan kernel
/// fits one CTA's shared memory and a grid barrier per step does not pay).
constexpr int kRnnGridMinHidden = 64;

/// The shape of a grid kernel `k` (kRnnGridThreads threads per CTA) that
/// splits H hidden units over nc = min(H, SMs) CTAs of us = ceil(H / nc)
/// units needing bytes(us) of dynamic shared memory (the attribute is set):
/// cudaErrorNotSupported without cooperative launches,
/// cudaErrorCooperativeLaunchTooLarge when the slices do not fit shared
/// memory or not all CTAs are co-resident.
template <typename K, typename Bytes>
inline cudaError_t rnn_grid_fit(K k, int H, int &nc, int &us, size_t &smem, Bytes bytes) {
  cudaError_t e;
  int dev = 0, coop = 0, sms = 1, optin = 48 * 1024;
  if ((e = cudaGetDevice(&dev)) != cudaSuccess ||
      (e = cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev)) != cudaSuccess ||
      (e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) != cudaSuccess ||
      (e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev)) !=
          cudaSuccess)
    return e;
  if (!coop)
    return cudaErrorNotSupported;
  nc = H < sms ? H : sms;
  us = (H + nc - 1) / nc;
  smem = bytes(us);
  if (smem > (size_t)optin)
    return cudaErrorCooperativeLaunchTooLarge;
  if ((e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem)) !=
      cudaSuccess)
    return e;
  int perSm = 0;
  if ((e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, k, kRnnGridThreads, smem)) !=
      cudaSuccess)
    return e;
  return (int64_t)perSm * sms < nc ? cudaErrorCooperativeLaunchTooLarge : cudaSuccess;
}

/// Launch shape of rnn_grid_kernel for B rows of hidden size H: nc =
/// min(H, SMs) CTAs of kRnnGridThreads threads, us = ceil(H / nc) units
/// each, `smem` bytes of dynamic shared memory (the attribute is set). It
/// can run when the device supports cooperative launches, the slices fit
/// shared memory with all CTAs co-resident, and the exchange buffer
/// (rnn_grid_exchange_bytes: Cho's r*h [B, H]; bf16 also the fp32 h
/// [2, B, H], so B <= G*H/4, Cho's B <= H/2) fits the caller's [G*H, H]
/// scratch of T. Otherwise: cudaErrorNotSupported (no
/// cooperative launch, or the exchange buffer does not fit) or
/// cudaErrorCooperativeLaunchTooLarge (the slices do not fit on chip).
template <typename T, typename L, int Kind>
inline cudaError_t rnn_grid_config(int B, int H, int &nc, int &us, size_t &smem) {
  if (rnn_grid_exchange_bytes<T, Kind>(B, H) > (size_t)cell_gates(Kind) * H * H * sizeof(T))
    return cudaErrorNotSupported;
  return rnn_grid_fit(rnn_grid_kernel<T, L, Kind>, H, nc, us, smem,
                      [&](int u) { return rnn_grid_smem_bytes<T, Kind>(B, H, u); });
}

/// The cooperative launch of rnn_grid_kernel in the shape of
/// rnn_grid_config (which must have succeeded). `scratch` holds the
/// exchange buffer (Cho's r*h; bf16's fp32 h).
template <typename T, typename L, int Kind>
inline cudaError_t launch_rnn_grid(int nc, int us, size_t smem, int B, int Tn, int H,
                                   int reverse, int64_t ld_out, int col_off, const L *lengths,
                                   const T *xg, const T *whh, const T *bhh, const T *h0,
                                   const T *c0, T *out, T *hn, T *cn, T *saved,
                                   int64_t saved_stride_bt, T *ckc, int every, T *scratch,
                                   cudaStream_t stream, float zo_p, uint64_t seed,
                                   uint64_t offset, int sd) {
  acc_t<T> *rh =
      Kind == CellGruCho || is_bf16_v<T> ? reinterpret_cast<acc_t<T> *>(scratch) : nullptr;
  void *args[] = {&B,   &Tn,    &H,    &reverse, &ld_out, &col_off, &us,
                  &lengths, &xg, &whh,  &bhh,     &h0,     &c0,      &out,
                  &hn,  &cn,    &saved, &saved_stride_bt, &ckc, &every, &zo_p,
                  &seed, &offset, &sd, &rh};
  return cudaLaunchCooperativeKernel(rnn_grid_kernel<T, L, Kind>, dim3((unsigned)nc),
                                     dim3(kRnnGridThreads), args, smem, stream);
}

/// NNCC_CUDA_RNN: which recurrent kernel launch_rnn_scan_ckpt runs.
enum RnnKernelChoice { RnnKernelAuto, RnnKernelScan, RnnKernelGrid, RnnKernelBad };
inline RnnKernelChoice rnn_kernel_choice() {
  const char *v = getenv("NNCC_CUDA_RNN");
  if (!v || !*v || !strcmp(v, "auto"))
    return RnnKernelAuto;
  if (!strcmp(v, "scan"))
    return RnnKernelScan;
  if (!strcmp(v, "grid"))
    return RnnKernelGrid;
  return RnnKernelBad;
}

/// Whether to try a grid kernel for B rows of hidden size H under `c`
/// (auto: small batches, H from kRnnGridMinHidden).
inline bool rnn_try_grid(RnnKernelChoice c, int B, int H) {
  return c == RnnKernelGrid ||
         (c == RnnKernelAuto && B <= kRnnGridMaxBatch && H >= kRnnGridMinHidden);
}

/// After a grid kernel's shape check failed with `e`: whether to run the
/// scan kernel (auto, and the grid kernel cannot run) or return e.
inline bool rnn_fall_back(RnnKernelChoice c, cudaError_t e) {
  return c == RnnKernelAuto &&
         (e == cudaErrorNotSupported || e == cudaErrorCooperativeLaunchTooLarge);
}

/// launch_rnn_scan plus the LSTM's BPTT checkpoints `ckc` every `every`
/// scan steps (see rnn_scan_kernel; ckc null: none, every ignored) and LSTM
/// zoneout (rate `zoneout`, 0: off; `seed`, `offset` and the state slot
/// `state_index` = l*D + d of the mask counter, as nncc_rnn_layer_zoneout).
/// The kernel: NNCC_CUDA_RNN=grid runs rnn_grid_kernel or returns why it
/// cannot (rnn_grid_config's error); =scan runs rnn_scan_kernel; auto (or
/// unset) runs the grid kernel for B <= kRnnGridMaxBatch and
/// H >= kRnnGridMinHidden when it can run, else the scan kernel; any other
/// value: cudaErrorInvalidValue. Both serve every argument.
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
  // The grid kernel when forced, or (auto) for small batches when it fits.
  const RnnKernelChoice choice = rnn_kernel_choice();
  if (choice == RnnKernelBad)
    return cudaErrorInvalidValue;
  if (rnn_try_grid(choice, B, H)) {
    int nc = 0, us = 0;
    size_t gsmem = 0;
    e = rnn_grid_config<T, L, Kind>(B, H, nc, us, gsmem);
    if (e == cudaSuccess)
      return launch_rnn_grid<T, L, Kind>(nc, us, gsmem, B, Tn, H, reverse, ld_out, col_off,
                                         lengths, xg, whh, bhh, h0, c0, out, hn, cn, saved,
                                         saved_stride_bt, ckc, every, wt_scratch, stream,
                                         (float)zoneout, seed, offset, (int)state_index);
    if (!rnn_fall_back(choice, e))
      return e;
  }
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
