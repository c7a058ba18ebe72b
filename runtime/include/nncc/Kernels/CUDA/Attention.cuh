//===- Attention.cuh - Flash-style dense and banded dilated attention -*- CUDA -*-===//
//
// Same conventions as the CPU twins (AttentionMath.h): q/k/v rows of stride
// ld_in, head h at columns [h*dh, (h+1)*dh); key_padding_mask != 0 = ignore;
// rows without admissible keys give zeros. Head sizes up to 128 run the
// CTA-tiled kernel (attention_tile_fwd_kernel: 64 queries per CTA, K/V tiles
// in shared memory, register micro-tiles, the online softmax of
// OnlineSoftmax done per tile with warp shuffles); larger heads the
// one-query-per-thread kernels, which run OnlineSoftmax itself.
// Training forwards (the *_train launchers) add attention dropout (the CPU's
// Philox counters, AttentionMath.h) and the log-sum-exp the backward
// (AttentionBackward.cuh) reads. fp32 and the BF16 forward ran on an H100
// (docs/cuda.md, "First run on an H100 (2026-11-26)"); fp64 and TF32 have not.
// bf16 training forwards (a bf16 lse, as generated code passes it:
// attn_bf16_exact_v) run attention_tile_fwd_kernel<bf16_t>, the fp32 SIMT
// kernel on rows widened when staged: exactly the f32 out and lse for the
// widened inputs, rounded once (head sizes up to 128; emulation-tested,
// and run on an H200 in the bf16 training steps of 2026-11-27).
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_CUDA_ATTENTION_CUH
#define NNCC_KERNELS_CUDA_ATTENTION_CUH

#include "nncc/Kernels/AttentionMath.h"
#include "nncc/Kernels/Bf16.h"
#include "nncc/Kernels/CUDA/Common.cuh"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <type_traits>

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

/// Flash attention forward, one query per thread (the launchers use it for
/// head sizes above 128). grid = (ceil(T/BQ), H, B), block = BQ threads;
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

/// Banded dilated sliding-window attention with global tokens, O(T*w), one
/// query per thread (the launchers use it for head sizes above 128).
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

/// The global-token tables of dilated attention on the device.
struct DilatedGlobals {
  const uint8_t *is_global = nullptr; // [T] flags
  const int32_t *list = nullptr;      // sorted distinct positions < T
  int n = 0;
};

//===----------------------------------------------------------------------===//
// CTA-tiled forward (dense and banded dilated), head sizes up to 128.
//
// A CTA of 128 threads (4 warps) owns BQ = 64 query rows; warp w the rows
// [16w, 16w + 16). Lane = 8 r + c: the thread's score micro-tile is rows
// 16w + r + 4m (m < 4) x keys c + 8n (n < BK/8) of the current key tile, its
// output micro-tile the same rows x columns 8 VW g + VW c + e (VW = 16 bytes
// of T: 4 floats / 2 doubles). Q (scaled) stays in shared memory for the
// whole CTA; per key tile K and V are staged in shared memory, the scores
// go through the online softmax in registers (row max over the 8 lanes of a
// row by xor shuffles; the row sum stays per lane until the end), and the
// weights P through shared memory into P.V. Every shared-memory read of the
// two inner products is one 16-byte load per lane, conflict-free (rows are
// padded by VW elements). A head size below the kernel's DH is zero-padded
// in shared memory (the padding adds exact zeros).
//===----------------------------------------------------------------------===//

/// Which queries and keys a tile CTA serves (attention_tile_fwd_kernel).
enum AttnTileMode : int {
  /// Queries [64 x, 64 x + 64), keys 0..T-1 (causal: up to the last query).
  kAttnTileDense = 0,
  /// Queries of one residue class modulo the dilation (i = r + d u for 64
  /// consecutive u): their band keys are the same class over one contiguous
  /// range of u, staged once; then the global tokens outside each query's
  /// band. Global queries are skipped (attention_global_rows_kernel).
  kAttnTileBand = 1,
};

/// Tile shape of attention_tile_fwd_kernel for element type T and head
/// size DH (32, 64 or 128).
template <typename T, int DH> struct AttnTile {
  static_assert(DH == 32 || DH == 64 || DH == 128, "tile kernel head sizes");
  static constexpr int VW = 16 / (int)sizeof(T); // elements per 16-byte load
  static constexpr int BQ = 64, NT = 128;
  static constexpr int BK = DH * (int)sizeof(T) >= 512 ? 32 : 64;
  static constexpr int TM = 4, TN = BK / 8, TG = DH / (8 * VW);
  static constexpr int LDQ = DH + VW, LDP = BK + VW; // padded row strides
  static constexpr size_t smem_bytes =
      sizeof(T) * (size_t)(BQ * LDQ + BK * LDQ + BK * DH + BQ * LDP) + sizeof(int) * BK;
  static_assert(DH % (8 * VW) == 0, "whole 16-byte column groups per lane");
};

/// 16 bytes of T, loaded and stored as one vector access.
template <typename T> struct alignas(16) AttnVec {
  T e[16 / sizeof(T)];
};

template <typename T> __device__ __forceinline__ AttnVec<T> attn_ld16(const T *p) {
  return *reinterpret_cast<const AttnVec<T> *>(p);
}

/// fp32 -> tf32 (round to nearest, ties away from zero, as cvt.rna), kept
/// as fp32 bits with the low 13 mantissa bits zero.
__device__ __forceinline__ uint32_t attn_to_tf32(float x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && !defined(NNCC_CUDA_EMULATION)
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
#else
  uint32_t u = __float_as_uint(x);
  if ((u & 0x7f800000u) != 0x7f800000u) // finite: add half an ulp of tf32
    u += 0x1000u;
  return u & 0xffffe000u;
#endif
}

/// Words w[0..N) of every lane of the warp, for the fallbacks of the
/// warp-wide instructions below (mma, ldmatrix): get(i, l) = lane l's w[i],
/// by one shuffle each (sm < 80) or, under the host emulation, from one
/// warp collective (__nncc_emu_warp_gather: the emulation's cost is per
/// collective, so an mma is one instead of 32 or 64). Every lane of the
/// warp must take part, as in the instructions.
template <int N> struct AttnWarpWords {
#if defined(NNCC_CUDA_EMULATION)
  const uint32_t (*all)[8];
  __device__ explicit AttnWarpWords(const uint32_t (&w)[N]) : all(__nncc_emu_warp_gather(w, N)) {}
  __device__ uint32_t get(int i, int lane) const { return all[lane][i]; }
#else
  uint32_t w[N];
  __device__ explicit AttnWarpWords(const uint32_t (&v)[N]) {
#pragma unroll
    for (int i = 0; i < N; ++i)
      w[i] = v[i];
  }
  __device__ uint32_t get(int i, int lane) const { return __shfl_sync(0xffffffffu, w[i], lane); }
#endif
};

/// d += A B for one m16n8k8 TF32 tensor-core tile, fp32 accumulation, in
/// PTX's fragment layout (g = lane / 4, t = lane % 4): a = A[g][t],
/// A[g+8][t], A[g][t+4], A[g+8][t+4]; b = B[t][g], B[t+4][g]; d = D[g][2t],
/// D[g][2t+1], D[g+8][2t], D[g+8][2t+1]. Without the instruction (sm < 80,
/// the host emulation) the same product from the lanes' fragments
/// (AttnWarpWords).
__device__ __forceinline__ void attn_mma_tf32(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                              uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && !defined(NNCC_CUDA_EMULATION)
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, "
               "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const uint32_t mine[6] = {a[0], a[1], a[2], a[3], b0, b1};
  const AttnWarpWords<6> w(mine);
#pragma unroll
  for (int kk = 0; kk < 8; ++kk) {
    const bool hi = kk >= 4;
    const int kl = kk & 3;
    const float aLo = __uint_as_float(w.get(hi ? 2 : 0, g * 4 + kl));
    const float aHi = __uint_as_float(w.get(hi ? 3 : 1, g * 4 + kl));
    const float bE = __uint_as_float(w.get(hi ? 5 : 4, 8 * t + kl));
    const float bO = __uint_as_float(w.get(hi ? 5 : 4, 8 * t + 4 + kl));
    d[0] += aLo * bE;
    d[1] += aLo * bO;
    d[2] += aHi * bE;
    d[3] += aHi * bO;
  }
#endif
}

/// Stage `R` rows of a head into shared memory (row stride LD): row rr comes
/// from src + row(rr) * ld_in (row(rr) < 0: zeros), columns >= dh are zero;
/// times `mul` (bf16: in fp32, rounded back), rounded to tf32 when Tf32.
/// `vec`: 16-byte global loads are aligned (launcher-checked).
template <typename T, int DH, int R, int LD, int NT, bool Tf32 = false, typename RowOf>
__device__ __forceinline__ void attn_stage_rows(T *dst, const T *src, int64_t ld_in, int dh,
                                                bool vec, acc_t<T> mul, RowOf rowOf) {
  constexpr int VW = 16 / (int)sizeof(T), CPR = DH / VW; // 16-byte chunks per row
  for (int e = threadIdx.x; e < R * CPR; e += NT) {
    const int rr = e / CPR, d0 = (e % CPR) * VW;
    const int row = rowOf(rr);
    AttnVec<T> x;
    if (row >= 0 && vec && d0 < dh) {
      x = attn_ld16(src + (int64_t)row * ld_in + d0);
    } else {
#pragma unroll
      for (int u = 0; u < VW; ++u)
        x.e[u] = row >= 0 && d0 + u < dh ? src[(int64_t)row * ld_in + d0 + u] : T{};
    }
#pragma unroll
    for (int u = 0; u < VW; ++u) {
      if constexpr (is_bf16_v<T>) {
        if (mul != 1.f)
          x.e[u] = bf16_from_float(bf16_to_float(x.e[u]) * mul);
      } else {
        x.e[u] *= mul;
      }
      if constexpr (Tf32)
        x.e[u] = __uint_as_float(attn_to_tf32(x.e[u]));
    }
    *reinterpret_cast<AttnVec<T> *>(dst + rr * LD + d0) = x;
  }
}

/// attn_stage_rows of rows stored as S into a shared tile of T: S = T is
/// attn_stage_rows itself; bf16 rows are widened to fp32 (T = float, no
/// TF32) and times `mul` in fp32 (the product the fp32 rows would get),
/// 16-byte loads when `vec` (aligned rows, dh a multiple of 8).
template <typename T, int DH, int R, int LD, int NT, bool Tf32 = false, typename S = T,
          typename RowOf>
__device__ __forceinline__ void attn_stage_rows_from(T *dst, const S *src, int64_t ld_in, int dh,
                                                     bool vec, T mul, RowOf rowOf) {
  if constexpr (std::is_same_v<S, T>) {
    attn_stage_rows<T, DH, R, LD, NT, Tf32>(dst, src, ld_in, dh, vec, mul, rowOf);
  } else {
    static_assert(is_bf16_v<S> && std::is_same_v<T, acc_t<S>> && !Tf32, "bf16 to fp32");
    constexpr int VW = 16 / (int)sizeof(S), CPR = DH / VW, TW = 16 / (int)sizeof(T);
    for (int e = threadIdx.x; e < R * CPR; e += NT) {
      const int rr = e / CPR, d0 = (e % CPR) * VW;
      const int row = rowOf(rr);
      AttnVec<S> x;
      if (row >= 0 && vec && d0 < dh) {
        x = attn_ld16(src + (int64_t)row * ld_in + d0);
      } else {
#pragma unroll
        for (int u = 0; u < VW; ++u)
          x.e[u] = row >= 0 && d0 + u < dh ? src[(int64_t)row * ld_in + d0 + u] : S{};
      }
#pragma unroll
      for (int w = 0; w < VW / TW; ++w) {
        AttnVec<T> y;
#pragma unroll
        for (int u = 0; u < TW; ++u)
          y.e[u] = load_acc(x.e[w * TW + u]) * mul;
        *reinterpret_cast<AttnVec<T> *>(dst + rr * LD + d0 + w * TW) = y;
      }
    }
  }
}

/// 16 bytes global -> shared without a register round trip (cp.async.cg,
/// sm >= 80; zeros when !valid); attn_cp_async_wait<N>() waits until at
/// most N committed groups are in flight. Without the instruction (the host
/// emulation) a plain copy, complete at once.
__device__ __forceinline__ void attn_cp_async16(void *smem, const void *gmem, bool valid) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && !defined(NNCC_CUDA_EMULATION)
  const unsigned dst = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem),
               "r"(valid ? 16 : 0));
#else
  AttnVec<uint32_t> x = {{0, 0, 0, 0}};
  if (valid)
    x = *static_cast<const AttnVec<uint32_t> *>(gmem);
  *static_cast<AttnVec<uint32_t> *>(smem) = x;
#endif
}

__device__ __forceinline__ void attn_cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && !defined(NNCC_CUDA_EMULATION)
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}

template <int N> __device__ __forceinline__ void attn_cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && !defined(NNCC_CUDA_EMULATION)
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

/// attn_stage_rows for 16-bit T with aligned rows and dh a multiple of 8
/// (vec), by cp.async: row rr of src + row(rr) * ld_in into dst + rr * LD,
/// zeros for row(rr) < 0 and for the column groups at or past dh. The
/// caller commits and waits.
/// A thread copies the same column group of rows NT / CPR apart (a static
/// trip count, no division per copy).
template <typename T, int DH, int R, int LD, int NT, typename RowOf>
__device__ __forceinline__ void attn_stage_rows_async(T *dst, const T *src, int64_t ld_in, int dh,
                                                      RowOf rowOf) {
  static_assert(sizeof(T) == 2, "16-bit elements");
  constexpr int VW = 8, CPR = DH / VW, RSTEP = NT / CPR;
  static_assert(NT % CPR == 0 && R % RSTEP == 0, "whole rows per pass");
  const int d0 = (threadIdx.x % CPR) * VW, r0 = threadIdx.x / CPR;
  const bool colValid = d0 < dh;
#pragma unroll
  for (int i = 0; i < R / RSTEP; ++i) {
    const int rr = r0 + i * RSTEP, row = rowOf(rr);
    const bool valid = colValid && row >= 0;
    attn_cp_async16(dst + rr * LD + d0, valid ? src + (int64_t)row * ld_in + d0 : src, valid);
  }
}

/// ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16: four 8 x 8 matrices of
/// 16-bit elements; lane l gives the address of row l % 8 of matrix l / 8
/// (base + off, 16-byte aligned) and receives in r[i] matrix i's elements
/// (g, 2t) and (g, 2t + 1), or with Trans (2t, g) and (2t + 1, g) (g = l / 4,
/// t = l % 4; the first in the low half): mma B fragments of K^T from key
/// rows, and of V from its rows with Trans. Without the instruction the same
/// from the lanes' offsets (AttnWarpWords).
template <bool Trans>
__device__ __forceinline__ void attn_ldmatrix_x4(uint32_t (&r)[4], const bf16_t *base, int off) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && !defined(NNCC_CUDA_EMULATION)
  const unsigned a = (unsigned)__cvta_generic_to_shared(base + off);
  if constexpr (Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
#else
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const uint32_t mine[1] = {(uint32_t)off};
  const AttnWarpWords<1> w(mine);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int o0 = (int)w.get(0, 8 * i + (Trans ? 2 * t : g));
    const int o1 = (int)w.get(0, 8 * i + (Trans ? 2 * t + 1 : g));
    const int c0 = Trans ? g : 2 * t, c1 = Trans ? g : 2 * t + 1;
    r[i] = (uint32_t)base[o0 + c0].bits | ((uint32_t)base[o1 + c1].bits << 16);
  }
#endif
}

/// Two floats as a bf16 pair (lo in the low half, as mma fragments want
/// consecutive columns), rounded to nearest even.
__device__ __forceinline__ uint32_t attn_pack_bf16x2(float lo, float hi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && !defined(NNCC_CUDA_EMULATION)
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
#else
  return (uint32_t)bf16_from_float(lo).bits | ((uint32_t)bf16_from_float(hi).bits << 16);
#endif
}

/// Two consecutive bf16 of shared memory (4-byte aligned) as one register.
__device__ __forceinline__ uint32_t attn_ld_bf16x2(const bf16_t *p) {
  return *reinterpret_cast<const uint32_t *>(p);
}

/// d += A B for one m16n8k16 BF16 tensor-core tile, fp32 accumulation, in
/// PTX's fragment layout (g = lane / 4, t = lane % 4; each register holds
/// two bf16, the lower column or row in the low half): a = A[g][2t..2t+1],
/// A[g+8][2t..2t+1], A[g][2t+8..2t+9], A[g+8][2t+8..2t+9]; b = B[2t..2t+1][g],
/// B[2t+8..2t+9][g]; d as attn_mma_tf32. Without the instruction the same
/// product from the lanes' fragments (AttnWarpWords; bf16 products are
/// exact in fp32).
__device__ __forceinline__ void attn_mma_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                              uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && !defined(NNCC_CUDA_EMULATION)
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
               "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  auto half = [](uint32_t x, int hi) { return bf16_bits_float(hi ? x & 0xffff0000u : x << 16); };
  const uint32_t mine[6] = {a[0], a[1], a[2], a[3], b0, b1};
  const AttnWarpWords<6> w(mine);
#pragma unroll
  for (int kk = 0; kk < 16; ++kk) {
    const bool hi = kk >= 8;
    const int kl = kk & 7, src = kl >> 1, h = kl & 1;
    const float aLo = half(w.get(hi ? 2 : 0, g * 4 + src), h);
    const float aHi = half(w.get(hi ? 3 : 1, g * 4 + src), h);
    const float bE = half(w.get(hi ? 5 : 4, 8 * t + src), h);
    const float bO = half(w.get(hi ? 5 : 4, 8 * t + 4 + src), h);
    d[0] += aLo * bE;
    d[1] += aLo * bO;
    d[2] += aHi * bE;
    d[3] += aHi * bO;
  }
#endif
}

/// Register micro-tiles of the tile kernels (128 threads): warp w owns the
/// rows [w M/4, (w + 1) M/4) of an M-row product (M = 16 TM); lane 8 r + c
/// the rows w M/4 + r + 4 m (m < TM), the columns c + 8 n (n < TN) of a
/// row-by-row product (attn_mt_dot) and the head columns 8 VW g + VW c + e
/// (g < TG, e < VW) of a rows-times-matrix one (attn_mt_accum). Shared
/// rows padded by VW elements keep every 16-byte load conflict-free.

/// s[m][n] += A[4 m] . B[8 n] over the head (DH columns, the first dh when
/// !Exact): A and B in shared memory at the thread's first row (row
/// strides LDA, LDB).
template <typename T, int DH, int TM, int TN, int LDA, int LDB, bool Exact>
__device__ __forceinline__ void attn_mt_dot(T (&s)[TM][TN], const T *A, const T *B, int dh) {
  constexpr int VW = 16 / (int)sizeof(T);
#pragma unroll 4
  for (int d0 = 0; d0 < DH; d0 += VW) {
    if (!Exact && d0 >= dh)
      break;
    AttnVec<T> av[TM];
#pragma unroll
    for (int m = 0; m < TM; ++m)
      av[m] = attn_ld16(A + 4 * m * LDA + d0);
#pragma unroll
    for (int n = 0; n < TN; ++n) {
      const AttnVec<T> bv = attn_ld16(B + 8 * n * LDB + d0);
#pragma unroll
      for (int m = 0; m < TM; ++m)
#pragma unroll
        for (int u = 0; u < VW; ++u)
          s[m][n] += av[m].e[u] * bv.e[u];
    }
  }
}

/// s = A . B on the micro-tile (attn_mt_dot from zero).
template <typename T, int DH, int TM, int TN, int LDA, int LDB, bool Exact>
__device__ __forceinline__ void attn_mt_scores(T (&s)[TM][TN], const T *A, const T *B, int dh) {
#pragma unroll
  for (int m = 0; m < TM; ++m)
#pragma unroll
    for (int n = 0; n < TN; ++n)
      s[m][n] = T(0);
  attn_mt_dot<T, DH, TM, TN, LDA, LDB, Exact>(s, A, B, dh);
}

/// acc[m][VW g + e] += sum_{j < NJ} P[4 m][j] V[j][8 VW g + e]: P in shared
/// memory at the thread's first row (stride LDP), V at the thread's first
/// column VW c (row stride LDV).
template <typename T, int TM, int TG, int NJ, int LDP, int LDV>
__device__ __forceinline__ void attn_mt_accum(T (&acc)[TM][TG * (16 / sizeof(T))], const T *P,
                                              const T *V) {
  constexpr int VW = 16 / (int)sizeof(T);
#pragma unroll 2
  for (int j0 = 0; j0 < NJ; j0 += VW) {
    AttnVec<T> pv[TM];
#pragma unroll
    for (int m = 0; m < TM; ++m)
      pv[m] = attn_ld16(P + 4 * m * LDP + j0);
#pragma unroll
    for (int u = 0; u < VW; ++u)
#pragma unroll
      for (int g = 0; g < TG; ++g) {
        const AttnVec<T> vv = attn_ld16(V + (j0 + u) * LDV + g * 8 * VW);
#pragma unroll
        for (int m = 0; m < TM; ++m)
#pragma unroll
          for (int e = 0; e < VW; ++e)
            acc[m][g * VW + e] += pv[m].e[u] * vv.e[e];
      }
  }
}

/// The rows and column tiles of one tile CTA (the kernels' common
/// schedule). Rows are queries and columns their keys (the forward, the
/// backward's dQ), or with KeyRows the transpose (the backward's dK/dV:
/// rows are keys, columns the queries that see them; the band is
/// symmetric, causal keeps the queries at or after the key).
template <int Mode, int BQ, int BK, bool KeyRows = false> struct AttnTileSchedule {
  int qbase, qstep = 1, nq;     // rows row(t) = qbase + qstep t, t < nq
  int cls = 0, kBegin = 0, kEnd = 0; // band: residue class; dense: columns [kBegin, kEnd)
  int ulo = 0, nBand = 0;       // band: class positions [ulo, ulo + nBand)
  int bandTiles, nTiles, reach; // column tiles (band, then globals); band reach
  int window, dilation, causal;
  const int32_t *globals;
  int nGlobal;

  /// False when the CTA has no row (a short residue class).
  __device__ bool init(int Tn, int causal_, int window_, int dilation_, const int32_t *globals_,
                       int n_global) {
    causal = causal_, window = window_, dilation = dilation_;
    globals = globals_, nGlobal = n_global;
    reach = (window / 2) * dilation;
    int u0 = 0;
    if (Mode == kAttnTileDense) {
      qbase = blockIdx.x * BQ;
    } else {
      const int perClass = ((Tn + dilation - 1) / dilation + BQ - 1) / BQ;
      cls = blockIdx.x / perClass;
      u0 = (blockIdx.x % perClass) * BQ;
      qbase = cls + dilation * u0;
      qstep = dilation;
    }
    if (qbase >= Tn)
      return false;
    nq = min(BQ, (Tn - 1 - qbase) / qstep + 1);
    if (Mode == kAttnTileDense) {
      kBegin = KeyRows && causal ? qbase : 0;
      kEnd = !KeyRows && causal ? min(Tn, qbase + nq) : Tn;
      bandTiles = (kEnd - kBegin + BK - 1) / BK;
      nTiles = bandTiles;
    } else {
      const int half = window / 2;
      const int clsLen = (Tn - 1 - cls) / dilation + 1;
      ulo = max(0, u0 - (KeyRows && causal ? 0 : half));
      const int uhi = min(clsLen - 1, u0 + nq - 1 + (!KeyRows && causal ? 0 : half));
      nBand = uhi - ulo + 1;
      bandTiles = nBand > 0 ? (nBand + BK - 1) / BK : 0;
      nTiles = bandTiles + (nGlobal + BK - 1) / BK;
    }
    return true;
  }
  __device__ int row(int t) const { return qbase + qstep * t; }
  __device__ bool globalTile(int tile) const { return Mode == kAttnTileBand && tile >= bandTiles; }
  /// Column jj of `tile`, or -1 past the end.
  __device__ int col(int tile, int jj) const {
    if (Mode == kAttnTileDense) {
      const int j = kBegin + tile * BK + jj;
      return j < kEnd ? j : -1;
    }
    if (tile < bandTiles) {
      const int u = tile * BK + jj;
      return u < nBand ? cls + dilation * (ulo + u) : -1;
    }
    const int gi = (tile - bandTiles) * BK + jj;
    return gi < nGlobal ? globals[gi] : -1;
  }
  /// Whether query i attends key j (j from the staged admissibility: -1 =
  /// out of range or padded) in `tile` (with KeyRows a global tile holds
  /// global queries, which see the keys outside their band this way).
  __device__ bool admits(int i, int j, bool gTile) const {
    bool ok = j >= 0 && !(causal && j > i);
    if (Mode == kAttnTileBand)
      ok = ok && (gTile ? !dilated_band(i, j, window, dilation) : (i - j <= reach && j - i <= reach));
    return ok;
  }
  /// Whether every key of dense `tile` is admissible for the query rows
  /// [t0, t0 + 16) (a warp's): no padding mask, the whole tile inside
  /// [kBegin, kEnd) and, when causal, not past the rows' first query. Rows
  /// past nq are never stored, so they need no mask either.
  __device__ bool denseTileFull(int tile, int t0, bool padded) const {
    if (Mode != kAttnTileDense || KeyRows || padded)
      return false;
    const int last = kBegin + (tile + 1) * BK - 1;
    return last < kEnd && (!causal || last <= qbase + t0);
  }
};

/// Dropout on the weights a warp wrote to Ps (after the statistics): two
/// threads per query row, BK/2 consecutive weights each (the rows of warp w
/// are 16w..16w+15, so only the warp's own rows are touched). Dense keys
/// are consecutive: one Philox block serves four counters.
template <typename T, int Mode, int BQ, int BK, int LDP>
__device__ __forceinline__ void attn_tile_dropout(T *Ps, const int *kadm,
                                                  const AttnTileSchedule<Mode, BQ, BK> &S,
                                                  int tile, int b, int h, int H, int Tn,
                                                  const AttentionDropout<T> &drop) {
  constexpr int SEG = BK / 2;
  const int t = threadIdx.x >> 1, jj0 = (threadIdx.x & 1) * SEG;
  if (t >= S.nq)
    return;
  const int i = S.row(t);
  T *pr = Ps + t * LDP + jj0;
  const uint64_t rowCounter = (uint64_t)((((int64_t)b * H + h) * Tn + i) * (int64_t)Tn);
  if (Mode == kAttnTileDense) {
    // Draw `first` of the stream (drop.offset counts draws, RandomMasks.h).
    const uint64_t first = drop.offset + rowCounter + (uint64_t)(S.kBegin + tile * BK + jj0);
    const uint64_t key = drop.seed ^ kAttentionDropoutSalt;
    nncc_philox_u32x4 blk = philox_stream_block(key, first >> 2);
#pragma unroll
    for (int x = 0; x < SEG; ++x) {
      const uint64_t cnt = first + (uint64_t)x;
      const int w = (int)(cnt & 3);
      if (x > 0 && w == 0)
        blk = philox_stream_block(key, cnt >> 2);
      const uint32_t bits = w == 0 ? blk.x[0] : w == 1 ? blk.x[1] : w == 2 ? blk.x[2] : blk.x[3];
      pr[x] *= nncc_rng_u32_to_unit_float(bits) >= drop.p ? drop.keep_scale : T(0);
    }
  } else {
    for (int x = 0; x < SEG; ++x)
      if (pr[x] != T(0))
        pr[x] *= drop.mult(rowCounter + (uint64_t)kadm[jj0 + x]);
  }
}

/// One key tile of the tile forwards' online softmax on the micro-tile
/// (lane c of a row's 8 lanes holds the columns c + 8 n): masks s where
/// admits(m, n) is false, reduces each row's maximum over its 8 lanes,
/// writes the weights into the warp's own rows of shared memory (row m at
/// Pw + 4 m LDP, column 8 n) and updates the running maxima, sums and the
/// rescaled accumulators.
template <typename T, int TM, int TN, int NA, int LDP, typename Admits>
__device__ __forceinline__ void attn_tile_softmax_step(T (&s)[TM][TN], T (&mrow)[TM],
                                                       T (&lrow)[TM], T (&acc)[TM][NA], T *Pw,
                                                       Admits &&admits) {
#pragma unroll
  for (int m = 0; m < TM; ++m) {
    T tmax = neg_big<T>();
#pragma unroll
    for (int n = 0; n < TN; ++n) {
      s[m][n] = admits(m, n) ? s[m][n] : neg_big<T>();
      tmax = s[m][n] > tmax ? s[m][n] : tmax;
    }
#pragma unroll
    for (int x = 1; x < 8; x <<= 1) {
      const T o = __shfl_xor_sync(0xffffffffu, tmax, x);
      tmax = o > tmax ? o : tmax;
    }
    const T mnew = tmax > mrow[m] ? tmax : mrow[m];
    const T alpha = nexp(mrow[m] - mnew);
    T sum = T(0);
#pragma unroll
    for (int n = 0; n < TN; ++n) {
      const T p = s[m][n] <= neg_big<T>() ? T(0) : nexp(s[m][n] - mnew);
      sum += p;
      Pw[4 * m * LDP + 8 * n] = p;
    }
    lrow[m] = lrow[m] * alpha + sum;
    mrow[m] = mnew;
#pragma unroll
    for (int x = 0; x < NA; ++x)
      acc[m][x] *= alpha;
  }
}

/// f(x, col) for each of the thread's head columns col = 8 VW g + VW c + e
/// of a micro-tile row (its accumulator element x = VW g + e): those below
/// dh unless Exact.
template <int TG, int VW, bool Exact, typename F>
__device__ __forceinline__ void attn_mt_row_cols(int c, int dh, F &&f) {
#pragma unroll
  for (int g = 0; g < TG; ++g)
#pragma unroll
    for (int e = 0; e < VW; ++e) {
      const int col = g * 8 * VW + c * VW + e;
      if (Exact || col < dh)
        f(g * VW + e, col);
    }
}

/// The sum of x over the 8 lanes that hold one micro-tile row (lanes
/// 8 r .. 8 r + 7); every lane of the warp must call it.
template <typename T> __device__ __forceinline__ T attn_row_lanes_sum(T x) {
#pragma unroll
  for (int o = 1; o < 8; o <<= 1)
    x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

/// The end of the tile forwards: each row's sum over its 8 lanes, the
/// output row out = acc / l (0 for an empty row) at outRow(m) (null: not
/// stored; the thread's columns VW c + 8 VW g + e, those below dh unless
/// Exact; stored as the pointer's element type, store_acc: bf16 rounded
/// once) and, from lane c = 0, lseOut(m, m_row + log l, or neg_big).
template <typename T, int TM, int NA, int VW, bool Exact, typename OutRow, typename LseOut>
__device__ __forceinline__ void attn_tile_finish_rows(const T (&mrow)[TM], const T (&lrow)[TM],
                                                      const T (&acc)[TM][NA], int c, int dh,
                                                      OutRow &&outRow, LseOut &&lseOut) {
  constexpr int TG = NA / VW;
#pragma unroll
  for (int m = 0; m < TM; ++m) {
    const T l = attn_row_lanes_sum(lrow[m]);
    auto *orow = outRow(m);
    if (!orow)
      continue;
    using O = std::remove_pointer_t<decltype(orow)>;
    const T inv = l > T(0) ? T(1) / l : T(0);
    attn_mt_row_cols<TG, VW, Exact>(
        c, dh, [&](int x, int col) { orow[col] = store_acc<O>(acc[m][x] * inv); });
    if (c == 0)
      lseOut(m, l > T(0) ? mrow[m] + nlog(l) : neg_big<T>());
  }
}

/// The tiled forward (see above). grid: dense (ceil(T/64), H, B); band
/// (min(dilation, T) * ceil(ceil(T/dilation)/64), H, B). Dynamic shared memory
/// AttnTile<acc_t<T>, DH>::smem_bytes. Exact: dh == DH, else dh_rt < DH
/// (padded). `vec`: q, k, v rows allow aligned 16-byte loads. Dropout
/// multiplies the weights after the softmax statistics (counter
/// ((b H + h) T + i) T + j), as the CPU does; `lse` (optional) [B, H, T].
/// T = bf16_t: q, k, v widened to fp32 when staged, the f32 kernel's
/// arithmetic (A = float, never TF32), out and lse rounded once: the f32
/// instantiation's values for the widened inputs (the bf16 training
/// forwards; inference runs attention_tile_bf16_kernel).
template <typename T, int DH, int Mode, bool Exact>
__global__ void __launch_bounds__(128)
    attention_tile_fwd_kernel(int Tn, const T *__restrict__ q, const T *__restrict__ k,
                              const T *__restrict__ v, int64_t ld_in, T *out, int64_t ld_out,
                              const uint8_t *kpm, int causal, acc_t<T> scale, T *lse, int dh_rt,
                              int vec, int window, int dilation, const uint8_t *is_global,
                              const int32_t *globals, int n_global,
                              AttentionDropout<acc_t<T>> drop) {
  using A = acc_t<T>;
  using C = AttnTile<A, DH>;
  constexpr int BQ = C::BQ, BK = C::BK, NT = C::NT, VW = C::VW;
  constexpr int TM = C::TM, TN = C::TN, TG = C::TG, LDQ = C::LDQ, LDP = C::LDP;
  extern __shared__ __align__(16) unsigned char nncc_attn_tile_smem[];
  A *Qs = reinterpret_cast<A *>(nncc_attn_tile_smem); // [BQ][LDQ]
  A *Ks = Qs + BQ * LDQ;                                // [BK][LDQ]
  A *Vs = Ks + BK * LDQ;                                // [BK][DH]
  A *Ps = Vs + BK * DH;                                 // [BQ][LDP]
  int *kadm = reinterpret_cast<int *>(Ps + BQ * LDP);   // [BK] key or -1

  const int dh = Exact ? DH : dh_rt;
  const int b = blockIdx.z, h = blockIdx.y, H = gridDim.y;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int r = lane >> 3, c = lane & 7;
  const uint8_t *kpmRow = kpm ? kpm + (int64_t)b * Tn : nullptr;
  AttnTileSchedule<Mode, BQ, BK> S;
  if (!S.init(Tn, causal, window, dilation, globals, n_global)) // CTA-uniform
    return;

  const int64_t headOff = (int64_t)b * Tn * ld_in + (int64_t)h * dh;
  attn_stage_rows_from<A, DH, BQ, LDQ, NT, false, T>(
      Qs, q + headOff, ld_in, dh, vec != 0, scale,
      [&](int t) { return t < S.nq ? S.row(t) : -1; });

  int qi[TM];
  A mrow[TM], lrow[TM], acc[TM][TG * VW];
#pragma unroll
  for (int m = 0; m < TM; ++m) {
    qi[m] = S.row(warp * 16 + r + 4 * m);
    mrow[m] = neg_big<A>();
    lrow[m] = A(0);
#pragma unroll
    for (int x = 0; x < TG * VW; ++x)
      acc[m][x] = A(0);
  }

  for (int tile = 0; tile < S.nTiles; ++tile) {
    const bool gTile = S.globalTile(tile);
    auto rowOf = [&](int jj) { return S.col(tile, jj); };
    attn_stage_rows_from<A, DH, BK, LDQ, NT, false, T>(Ks, k + headOff, ld_in, dh, vec != 0,
                                                       A(1), rowOf);
    attn_stage_rows_from<A, DH, BK, DH, NT, false, T>(Vs, v + headOff, ld_in, dh, vec != 0,
                                                      A(1), rowOf);
    for (int jj = threadIdx.x; jj < BK; jj += NT) {
      const int j = S.col(tile, jj);
      kadm[jj] = j >= 0 && !(kpmRow && kpmRow[j]) ? j : -1;
    }
    __syncthreads();

    // S = (scale Q) K^T on the micro-tile.
    A s[TM][TN];
    attn_mt_scores<A, DH, TM, TN, LDQ, LDQ, Exact>(s, Qs + (warp * 16 + r) * LDQ, Ks + c * LDQ,
                                                  dh);

    // Masks, online softmax, weights into the warp's own rows of Ps.
    attn_tile_softmax_step<A, TM, TN, TG * VW, LDP>(
        s, mrow, lrow, acc, Ps + (warp * 16 + r) * LDP + c,
        [&](int m, int n) { return S.admits(qi[m], kadm[c + 8 * n], gTile); });
    __syncwarp(); // Ps rows are private to their warp
    if (drop.on()) {
      attn_tile_dropout<A, Mode, BQ, BK, LDP>(Ps, kadm, S, tile, b, h, H, Tn, drop);
      __syncwarp();
    }

    // O += P V on the micro-tile.
    attn_mt_accum<A, TM, TG, BK, LDP, DH>(acc, Ps + (warp * 16 + r) * LDP, Vs + c * VW);
    __syncthreads(); // before the next tile overwrites Ks, Vs, kadm
  }

  attn_tile_finish_rows<A, TM, TG * VW, VW, Exact>(
      mrow, lrow, acc, c, dh,
      [&](int m) -> T * {
        const int t = warp * 16 + r + 4 * m, i = qi[m];
        if (t >= S.nq || (Mode == kAttnTileBand && is_global[i]))
          return nullptr;
        return out + ((int64_t)b * Tn + i) * ld_out + (int64_t)h * dh;
      },
      [&](int m, A value) {
        if (lse)
          lse[((int64_t)b * H + h) * Tn + qi[m]] = store_acc<T>(value);
      });
}

/// Zeros N mma accumulator tiles (4 floats per thread each).
template <int N> __device__ __forceinline__ void attn_mma_zero(float (&a)[N][4]) {
#pragma unroll
  for (int n = 0; n < N; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      a[n][e] = 0.f;
}

/// 2^x by the special-function unit (ex2.approx.ftz: about 2 ulp; 0 for
/// very negative x). Without the instruction (the host emulation) exp2f.
__device__ __forceinline__ float attn_exp2(float x) {
#if defined(__CUDA_ARCH__) && !defined(NNCC_CUDA_EMULATION)
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#else
  return exp2f(x);
#endif
}

/// log2(e) and ln(2): the mma kernels' softmax runs in base 2.
inline constexpr float kAttnLog2e = 1.4426950408889634f, kAttnLn2 = 0.6931471805599453f;

/// One key tile of the online softmax in the mma accumulator layout (the
/// TF32 and BF16 kernels): a thread holds s[n][2 hr + e] = S[g + 8 hr][8 n +
/// 2 t + e]. Masks the scores where !admits(hr, n, e), multiplies the others
/// by `scaleLog2` (the softmax scale times log2(e): scores in base 2, so
/// each weight is one ex2), reduces each row's maximum over its 4 lanes,
/// replaces s by the weights, updates the running maxima (base 2) and sums
/// and rescales the NO output accumulators; then s[n][2 hr + e] =
/// weight(hr, n, e, p) (the sums keep the weights before it: dropout).
/// Full (a tile every score of which is admitted, and scaleLog2 > 0): no
/// masks, the maximum taken over the raw scores and each weight one FFMA
/// and one ex2 (FlashAttention-2's form); attn_mma_softmax_tile compiles
/// both forms and runs the masked one only on the tiles that need it (the fp32 SIMT kernel
/// keeps one: its FMAs dwarf the masks, and a second copy cost it registers,
/// dh 32: 128 -> 158, one CTA per SM less). `weight` runs once per score; a
/// per-score branch in it (dropout) splits the exponentials into basic
/// blocks that cannot overlap — callers apply dropout in a pass of its own
/// after the step.
template <bool Full = false, int NS, int NO, typename Admits, typename Weight>
__device__ __forceinline__ void attn_mma_softmax_step(float (&s)[NS][4], float (&mrow)[2],
                                                      float (&lrow)[2], float (&oacc)[NO][4],
                                                      float scaleLog2, Admits &&admits,
                                                      Weight &&weight) {
  // Row maxima and sums over KP partial accumulators (key group n % KP):
  // chains of NS/KP dependent instructions instead of 2 NS.
  constexpr int KP = NS % 4 == 0 ? 4 : NS % 2 == 0 ? 2 : 1;
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    float part[KP];
#pragma unroll
    for (int u = 0; u < KP; ++u)
      part[u] = neg_big<float>();
#pragma unroll
    for (int n = 0; n < NS; ++n)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float &sv = s[n][2 * hr + e];
        if constexpr (!Full)
          sv = admits(hr, n, e) ? sv * scaleLog2 : neg_big<float>();
        part[n % KP] = fmaxf(part[n % KP], sv);
      }
    float tmax = part[0];
#pragma unroll
    for (int u = 1; u < KP; ++u)
      tmax = fmaxf(tmax, part[u]);
#pragma unroll
    for (int x = 1; x < 4; x <<= 1)
      tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, x));
    const float mnew = fmaxf(mrow[hr], Full ? tmax * scaleLog2 : tmax);
    const float alpha = attn_exp2(mrow[hr] - mnew);
#pragma unroll
    for (int u = 0; u < KP; ++u)
      part[u] = 0.f;
#pragma unroll
    for (int n = 0; n < NS; ++n)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float &sv = s[n][2 * hr + e];
        float p;
        if constexpr (Full)
          p = attn_exp2(fmaf(sv, scaleLog2, -mnew));
        else
          p = sv <= neg_big<float>() ? 0.f : attn_exp2(sv - mnew);
        part[n % KP] += p;
        sv = weight(hr, n, e, p);
      }
    float sum = part[0];
#pragma unroll
    for (int u = 1; u < KP; ++u)
      sum += part[u];
    lrow[hr] = lrow[hr] * alpha + sum;
    mrow[hr] = mnew;
#pragma unroll
    for (int n = 0; n < NO; ++n) {
      oacc[n][2 * hr] *= alpha;
      oacc[n][2 * hr + 1] *= alpha;
    }
  }
}

/// attn_mma_softmax_step for one tile: the unmasked form when `full` (every
/// score of the tile admitted) and scaleLog2 > 0, else the masked one.
template <int NS, int NO, typename Admits, typename Weight>
__device__ __forceinline__ void attn_mma_softmax_tile(bool full, float (&s)[NS][4],
                                                      float (&mrow)[2], float (&lrow)[2],
                                                      float (&oacc)[NO][4], float scaleLog2,
                                                      Admits &&admits, Weight &&weight) {
  if (full && scaleLog2 > 0.f)
    attn_mma_softmax_step<true>(s, mrow, lrow, oacc, scaleLog2, admits, weight);
  else
    attn_mma_softmax_step(s, mrow, lrow, oacc, scaleLog2, admits, weight);
}

/// The end of the mma-layout tile forwards: each row's sum over its 4
/// lanes; row hr's output out = O / l (0 for an empty row) at outRow(hr)
/// (null: not stored), the thread's columns 8 n + 2 t + e below dh unless
/// Exact, stored as OT; from lane t = 0 the log-sum-exp into lse (may be
/// null) at lseIndex(hr).
template <typename OT, int NO, bool Exact, typename OutRow, typename LseIndex>
__device__ __forceinline__ void attn_mma_finish_rows(const float (&mrow)[2], const float (&lrow)[2],
                                                     const float (&oacc)[NO][4], int t4, int dh,
                                                     float *lse, OutRow &&outRow,
                                                     LseIndex &&lseIndex) {
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    float l = lrow[hr];
#pragma unroll
    for (int x = 1; x < 4; x <<= 1)
      l += __shfl_xor_sync(0xffffffffu, l, x);
    OT *orow = outRow(hr);
    if (!orow)
      continue;
    const float inv = l > 0.f ? 1.f / l : 0.f;
#pragma unroll
    for (int n = 0; n < NO; ++n)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int col = 8 * n + 2 * t4 + e;
        if (Exact || col < dh)
          orow[col] = store_acc<OT>(oacc[n][2 * hr + e] * inv);
      }
    if (lse && t4 == 0)
      lse[lseIndex(hr)] = l > 0.f ? kAttnLn2 * (mrow[hr] + log2f(l)) : neg_big<float>();
  }
}

/// Tile shape of the TF32 kernel: AttnTile<float, DH>'s, V rows padded to
/// DH + 8 so the B fragments of P.V (V[t][g], t = lane % 4 rows apart) fall
/// into distinct banks.
template <int DH> struct AttnTileTf32 {
  using C = AttnTile<float, DH>;
  static constexpr int LDV = DH + 8;
  static constexpr size_t smem_bytes =
      sizeof(float) * (size_t)(C::BQ * C::LDQ + C::BK * C::LDQ + C::BK * LDV + C::BQ * C::LDP) +
      sizeof(int) * C::BK;
};

/// The TF32 tile kernels' mma steps (AttnTile<float, DH> CTAs, warp w's
/// query rows 16 w .. 16 w + 15 one m16 tile; g = lane / 4, t4 = lane % 4,
/// row0 = 16 w + g). Q's A fragments of the whole head from Qs (stride LDQ),
/// rounded to TF32 when staged.
template <int KD, int LDQ>
__device__ __forceinline__ void attn_tf32_q_frags(uint32_t (&qa)[KD][4], const float *Qs, int row0,
                                                  int t4) {
#pragma unroll
  for (int kd = 0; kd < KD; ++kd) {
    const float *q0 = Qs + row0 * LDQ + 8 * kd + t4;
    qa[kd][0] = __float_as_uint(q0[0]);
    qa[kd][1] = __float_as_uint(q0[8 * LDQ]);
    qa[kd][2] = __float_as_uint(q0[4]);
    qa[kd][3] = __float_as_uint(q0[8 * LDQ + 4]);
  }
}

/// s = Q K^T of the warp's rows and the BK = 8 NS keys of Ks (stride LDQ):
/// NS x KD mma, the head steps past dh skipped unless Exact.
template <int NS, int KD, int LDQ, bool Exact>
__device__ __forceinline__ void attn_tf32_scores(float (&s)[NS][4], const uint32_t (&qa)[KD][4],
                                                 const float *Ks, int g, int t4, int dh) {
  attn_mma_zero(s);
#pragma unroll
  for (int kd = 0; kd < KD; ++kd) {
    if (!Exact && 8 * kd >= dh)
      break;
#pragma unroll
    for (int n = 0; n < NS; ++n) {
      const float *k0 = Ks + (8 * n + g) * LDQ + 8 * kd + t4;
      attn_mma_tf32(s[n], qa[kd], __float_as_uint(k0[0]), __float_as_uint(k0[4]));
    }
  }
}

/// O += P V: the warp's weights from its rows of Ps (stride LDP; rounded to
/// TF32 here, after dropout) as A fragments, V rows of Vs (stride LDV) as B.
template <int NS, int KD, int LDP, int LDV, bool Exact>
__device__ __forceinline__ void attn_tf32_pv(float (&oacc)[KD][4], const float *Ps,
                                             const float *Vs, int row0, int g, int t4, int dh) {
#pragma unroll
  for (int ks = 0; ks < NS; ++ks) {
    const float *p0 = Ps + row0 * LDP + 8 * ks + t4;
    const uint32_t pa[4] = {attn_to_tf32(p0[0]), attn_to_tf32(p0[8 * LDP]),
                            attn_to_tf32(p0[4]), attn_to_tf32(p0[8 * LDP + 4])};
#pragma unroll
    for (int n = 0; n < KD; ++n) {
      if (!Exact && 8 * n >= dh)
        break;
      const float *v0 = Vs + (8 * ks + t4) * LDV + 8 * n + g;
      attn_mma_tf32(oacc[n], pa, __float_as_uint(v0[0]), __float_as_uint(v0[4 * LDV]));
    }
  }
}

/// attention_tile_fwd_kernel on TF32 tensor cores (fp32 only; chosen at
/// launch when NNCC_CUDA_ALLOW_TF32 allows it). Same CTA, schedule, masks,
/// dropout and outputs; warp w's 16 query rows are one m16 tile: QK^T as
/// BK/8 x DH/8 and P.V as DH/8 x BK/8 m16n8k8 mma with Q's fragments held in
/// registers for the whole CTA, K, V (and P when loaded as fragments)
/// rounded to TF32, fp32 accumulation and softmax. A thread owns rows
/// g, g + 8 (g = lane / 4) and columns 8n + 2t, 8n + 2t + 1 (t = lane % 4) of
/// S and O, so row statistics reduce over 4 lanes.
template <int DH, int Mode, bool Exact>
__global__ void __launch_bounds__(128)
    attention_tile_tf32_kernel(int Tn, const float *__restrict__ q, const float *__restrict__ k,
                               const float *__restrict__ v, int64_t ld_in, float *out,
                               int64_t ld_out, const uint8_t *kpm, int causal, float scale,
                               float *lse, int dh_rt, int vec, int window, int dilation,
                               const uint8_t *is_global, const int32_t *globals, int n_global,
                               AttentionDropout<float> drop) {
  using C = AttnTile<float, DH>;
  constexpr int BQ = C::BQ, BK = C::BK, NT = C::NT, LDQ = C::LDQ, LDP = C::LDP;
  constexpr int LDV = AttnTileTf32<DH>::LDV, NS = BK / 8, KD = DH / 8;
  extern __shared__ __align__(16) unsigned char nncc_attn_tf32_smem[];
  float *Qs = reinterpret_cast<float *>(nncc_attn_tf32_smem); // [BQ][LDQ]
  float *Ks = Qs + BQ * LDQ;                                   // [BK][LDQ]
  float *Vs = Ks + BK * LDQ;                                   // [BK][LDV]
  float *Ps = Vs + BK * LDV;                                   // [BQ][LDP]
  int *kadm = reinterpret_cast<int *>(Ps + BQ * LDP);          // [BK] key or -1

  const int dh = Exact ? DH : dh_rt;
  const int b = blockIdx.z, h = blockIdx.y, H = gridDim.y;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t4 = lane & 3;
  const int row0 = warp * 16 + g; // and row0 + 8
  const uint8_t *kpmRow = kpm ? kpm + (int64_t)b * Tn : nullptr;
  AttnTileSchedule<Mode, BQ, BK> S;
  if (!S.init(Tn, causal, window, dilation, globals, n_global)) // CTA-uniform
    return;

  const int64_t headOff = (int64_t)b * Tn * ld_in + (int64_t)h * dh;
  attn_stage_rows<float, DH, BQ, LDQ, NT, true>(
      Qs, q + headOff, ld_in, dh, vec != 0, scale,
      [&](int t) { return t < S.nq ? S.row(t) : -1; });
  __syncthreads();
  uint32_t qa[KD][4]; // Q's A fragments, all of the head
  attn_tf32_q_frags<KD, LDQ>(qa, Qs, row0, t4);
  const int qi[2] = {S.row(row0), S.row(row0 + 8)};
  float mrow[2] = {neg_big<float>(), neg_big<float>()}, lrow[2] = {0.f, 0.f};
  float oacc[KD][4];
  attn_mma_zero(oacc);

  for (int tile = 0; tile < S.nTiles; ++tile) {
    const bool gTile = S.globalTile(tile);
    auto rowOf = [&](int jj) { return S.col(tile, jj); };
    attn_stage_rows<float, DH, BK, LDQ, NT, true>(Ks, k + headOff, ld_in, dh, vec != 0, 1.f,
                                                  rowOf);
    attn_stage_rows<float, DH, BK, LDV, NT, true>(Vs, v + headOff, ld_in, dh, vec != 0, 1.f,
                                                  rowOf);
    for (int jj = threadIdx.x; jj < BK; jj += NT) {
      const int j = S.col(tile, jj);
      kadm[jj] = j >= 0 && !(kpmRow && kpmRow[j]) ? j : -1;
    }
    __syncthreads();

    float sacc[NS][4];
    attn_tf32_scores<NS, KD, LDQ, Exact>(sacc, qa, Ks, g, t4, dh);

    // Masks, online softmax (rows row0 and row0 + 8; Q carries the scale),
    // weights into Ps.
    auto admits = [&](int hr, int n, int e) {
      return S.admits(qi[hr], kadm[8 * n + 2 * t4 + e], gTile);
    };
    auto toPs = [&](int hr, int n, int e, float p) {
      Ps[(row0 + 8 * hr) * LDP + 8 * n + 2 * t4 + e] = p;
      return p;
    };
    attn_mma_softmax_tile(S.denseTileFull(tile, 16 * warp, kpmRow != nullptr), sacc, mrow, lrow,
                          oacc, kAttnLog2e, admits, toPs);
    __syncwarp(); // Ps rows are private to their warp
    if (drop.on()) {
      attn_tile_dropout<float, Mode, BQ, BK, LDP>(Ps, kadm, S, tile, b, h, H, Tn, drop);
      __syncwarp();
    }

    // O += P V: P's A fragments from Ps (rounded there, after dropout).
    attn_tf32_pv<NS, KD, LDP, LDV, Exact>(oacc, Ps, Vs, row0, g, t4, dh);
    __syncthreads(); // before the next tile overwrites Ks, Vs, kadm
  }

  attn_mma_finish_rows<float, KD, Exact>(
      mrow, lrow, oacc, t4, dh, lse,
      [&](int hr) -> float * {
        const int t = row0 + 8 * hr, i = qi[hr];
        if (t >= S.nq || (Mode == kAttnTileBand && is_global[i]))
          return nullptr;
        return out + ((int64_t)b * Tn + i) * ld_out + (int64_t)h * dh;
      },
      [&](int hr) { return ((int64_t)b * H + h) * Tn + qi[hr]; });
}

/// Tile shape of the BF16 kernel: 64 queries (4 warps of 16 rows) per CTA,
/// BK keys per tile, two K/V stages (the next tile's copies in flight while
/// this one is computed). Dense heads up to 64 take 128 keys per tile: each
/// warp then has 16 independent accumulator tiles per k step of QK^T and
/// half as many softmax reductions and barriers per key (with one or two
/// warps per scheduler at small B x heads, that independence is what hides
/// the mma latency); dh 128 (registers) and the band (its tiles are mostly
/// masked past the window) keep 64. Q is staged once in the second K
/// buffer, then held as A fragments. K and V rows are padded to DH + 8: the
/// 8 rows of each ldmatrix phase (K's and V's) hit 32 distinct banks.
template <int DH, int Mode> struct AttnTileBf16 {
  static_assert(DH == 32 || DH == 64 || DH == 128, "tile kernel head sizes");
  static constexpr int BQ = 64, NT = 128, LD = DH + 8;
  static constexpr int BK = Mode == kAttnTileDense && DH <= 64 ? 128 : 64;
  static constexpr int STAGE = 2 * BK * LD; // K then V of one tile, elements
  static constexpr size_t smem_bytes =
      sizeof(bf16_t) * (size_t)(2 * STAGE) + sizeof(int) * 2 * BK;
  static_assert(BQ <= BK, "Q is staged in a K buffer");
};

/// attention_tile_fwd_kernel for bf16 q, k, v and output on BF16 tensor
/// cores: m16n8k16 mma with fp32 accumulation for QK^T (DH/16 x BK/8 per
/// warp and tile, K's B fragments of two key groups per ldmatrix.x4) and
/// P.V (BK/16 x DH/8, V's B fragments by ldmatrix.x4.trans); dense tiles
/// that need no mask skip it (AttnTileSchedule::denseTileFull),
/// the scale, masks, online softmax, dropout and log-sum-exp (fp32) in
/// registers. A thread owns rows g, g + 8 (g = lane / 4) and columns 8n + 2t,
/// 8n + 2t + 1 (t = lane % 4) of S and O; S's accumulators become P's A
/// fragments directly (FlashAttention-2's register reuse), rounded to bf16
/// after dropout; the softmax statistics use the unrounded weights. K/V
/// tiles are double-buffered with cp.async when rows allow 16-byte copies
/// (vec), else staged through registers. Same grid, schedule and outputs
/// as the fp32 kernel; dropout masks are the CPU's counters.
template <int DH, int Mode, bool Exact>
__global__ void __launch_bounds__(128)
    attention_tile_bf16_kernel(int Tn, const bf16_t *__restrict__ q,
                               const bf16_t *__restrict__ k, const bf16_t *__restrict__ v,
                               int64_t ld_in, bf16_t *out, int64_t ld_out, const uint8_t *kpm,
                               int causal, float scale, float *lse, int dh_rt, int vec,
                               int window, int dilation, const uint8_t *is_global,
                               const int32_t *globals, int n_global,
                               AttentionDropout<float> drop) {
  using C = AttnTileBf16<DH, Mode>;
  constexpr int BQ = C::BQ, BK = C::BK, NT = C::NT, LD = C::LD, STAGE = C::STAGE;
  constexpr int NS = BK / 8, KD = DH / 16, ND = DH / 8;
  extern __shared__ __align__(16) unsigned char nncc_attn_bf16_smem[];
  bf16_t *stages = reinterpret_cast<bf16_t *>(nncc_attn_bf16_smem); // [2][K, V][BK][LD]
  int *kadmAll = reinterpret_cast<int *>(stages + 2 * STAGE);        // [2][BK] key or -1

  const int dh = Exact ? DH : dh_rt;
  const int b = blockIdx.z, h = blockIdx.y, H = gridDim.y;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t4 = lane & 3;
  const int row0 = warp * 16 + g; // and row0 + 8
  const uint8_t *kpmRow = kpm ? kpm + (int64_t)b * Tn : nullptr;
  AttnTileSchedule<Mode, BQ, BK> S;
  if (!S.init(Tn, causal, window, dilation, globals, n_global)) // CTA-uniform
    return;

  const int64_t headOff = (int64_t)b * Tn * ld_in + (int64_t)h * dh;
  {
    bf16_t *Qs = stages + STAGE; // the second stage's K buffer
    attn_stage_rows<bf16_t, DH, BQ, LD, NT>(Qs, q + headOff, ld_in, dh, vec != 0, 1.f,
                                            [&](int t) { return t < S.nq ? S.row(t) : -1; });
    __syncthreads();
  }
  uint32_t qa[KD][4]; // Q's A fragments, all of the head
#pragma unroll
  for (int kd = 0; kd < KD; ++kd) {
    const bf16_t *q0 = stages + STAGE + row0 * LD + 16 * kd + 2 * t4;
    qa[kd][0] = attn_ld_bf16x2(q0);
    qa[kd][1] = attn_ld_bf16x2(q0 + 8 * LD);
    qa[kd][2] = attn_ld_bf16x2(q0 + 8);
    qa[kd][3] = attn_ld_bf16x2(q0 + 8 * LD + 8);
  }
  __syncthreads(); // tile 1's copies overwrite Q

  // Tile `tile`'s K, V and admissible keys into stage `st` (copies in flight
  // until the wait when vec).
  auto stageTile = [&](int tile, int st) {
    bf16_t *Ks = stages + st * STAGE, *Vs = Ks + BK * LD;
    auto rowOf = [&](int jj) { return S.col(tile, jj); };
    if (vec) {
      attn_stage_rows_async<bf16_t, DH, BK, LD, NT>(Ks, k + headOff, ld_in, dh, rowOf);
      attn_stage_rows_async<bf16_t, DH, BK, LD, NT>(Vs, v + headOff, ld_in, dh, rowOf);
    } else {
      attn_stage_rows<bf16_t, DH, BK, LD, NT>(Ks, k + headOff, ld_in, dh, false, 1.f, rowOf);
      attn_stage_rows<bf16_t, DH, BK, LD, NT>(Vs, v + headOff, ld_in, dh, false, 1.f, rowOf);
    }
    for (int jj = threadIdx.x; jj < BK; jj += NT) {
      const int j = S.col(tile, jj);
      kadmAll[st * BK + jj] = j >= 0 && !(kpmRow && kpmRow[j]) ? j : -1;
    }
    attn_cp_async_commit();
  };

  const int qi[2] = {S.row(row0), S.row(row0 + 8)};
  float mrow[2] = {neg_big<float>(), neg_big<float>()}, lrow[2] = {0.f, 0.f};
  float oacc[ND][4];
  attn_mma_zero(oacc);
  // V's ldmatrix rows: lane l reads row 8 ((l / 8) & 1) + l % 8 of a key
  // step and the column group 8 (l / 16) of a pair of head column groups.
  const int vOff = (8 * ((lane >> 3) & 1) + (lane & 7)) * LD + 8 * (lane >> 4);
  // K's ldmatrix rows: lane l reads key row 8 (l / 16) + l % 8 of a pair of
  // key groups and the head columns 8 ((l / 8) & 1) of a k step: the B
  // fragments (both halves) of two key groups.
  const int kOff = (8 * (lane >> 4) + (lane & 7)) * LD + 8 * ((lane >> 3) & 1);

  if (S.nTiles > 0)
    stageTile(0, 0);
  for (int tile = 0; tile < S.nTiles; ++tile) {
    const int st = tile & 1;
    if (tile + 1 < S.nTiles) {
      stageTile(tile + 1, st ^ 1);
      attn_cp_async_wait<1>();
    } else {
      attn_cp_async_wait<0>();
    }
    __syncthreads();
    const bf16_t *Ks = stages + st * STAGE, *Vs = Ks + BK * LD;
    const int *kadm = kadmAll + st * BK;
    const bool gTile = S.globalTile(tile);

    float sacc[NS][4];
    attn_mma_zero(sacc);
#pragma unroll
    for (int kd = 0; kd < KD; ++kd) {
      if (!Exact && 16 * kd >= dh)
        break;
#pragma unroll
      for (int n = 0; n < NS; n += 2) {
        uint32_t kb[4];
        attn_ldmatrix_x4<false>(kb, Ks, kOff + 8 * n * LD + 16 * kd);
        attn_mma_bf16(sacc[n], qa[kd], kb[0], kb[1]);
        attn_mma_bf16(sacc[n + 1], qa[kd], kb[2], kb[3]);
      }
    }

    // Scale, masks, online softmax (rows row0 and row0 + 8); the weights
    // stay in sacc, dropped out after the statistics.
    auto admits = [&](int hr, int n, int e) {
      return S.admits(qi[hr], kadm[8 * n + 2 * t4 + e], gTile);
    };
    attn_mma_softmax_tile(S.denseTileFull(tile, 16 * warp, kpmRow != nullptr), sacc, mrow, lrow,
                          oacc, scale * kAttnLog2e, admits,
                          [](int, int, int, float p) { return p; });
    if (drop.on()) { // one uniform branch: the exponentials above stay one block
#pragma unroll
      for (int hr = 0; hr < 2; ++hr) {
        const uint64_t row = (uint64_t)((((int64_t)b * H + h) * Tn + qi[hr]) * (int64_t)Tn);
#pragma unroll
        for (int n = 0; n < NS; ++n)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            float &p = sacc[n][2 * hr + e];
            if (p != 0.f)
              p *= drop.mult(row + (uint64_t)kadm[8 * n + 2 * t4 + e]);
          }
      }
    }

    // O += P V: key tiles 2 ks and 2 ks + 1 of S are the A fragment of key
    // step ks; one ldmatrix.x4.trans gives the B fragments of two head
    // column groups.
#pragma unroll
    for (int ks = 0; ks < NS / 2; ++ks) {
      const uint32_t pa[4] = {attn_pack_bf16x2(sacc[2 * ks][0], sacc[2 * ks][1]),
                              attn_pack_bf16x2(sacc[2 * ks][2], sacc[2 * ks][3]),
                              attn_pack_bf16x2(sacc[2 * ks + 1][0], sacc[2 * ks + 1][1]),
                              attn_pack_bf16x2(sacc[2 * ks + 1][2], sacc[2 * ks + 1][3])};
#pragma unroll
      for (int n = 0; n < ND; n += 2) {
        if (!Exact && 8 * n >= dh)
          break;
        uint32_t vb[4];
        attn_ldmatrix_x4<true>(vb, Vs, vOff + 16 * ks * LD + 8 * n);
        attn_mma_bf16(oacc[n], pa, vb[0], vb[1]);
        attn_mma_bf16(oacc[n + 1], pa, vb[2], vb[3]);
      }
    }
    __syncthreads(); // before tile + 2's copies overwrite this stage
  }

  attn_mma_finish_rows<bf16_t, ND, Exact>(
      mrow, lrow, oacc, t4, dh, lse,
      [&](int hr) -> bf16_t * {
        const int t = row0 + 8 * hr, i = qi[hr];
        if (t >= S.nq || (Mode == kAttnTileBand && is_global[i]))
          return nullptr;
        return out + ((int64_t)b * Tn + i) * ld_out + (int64_t)h * dh;
      },
      [&](int hr) { return ((int64_t)b * H + h) * Tn + qi[hr]; });
}

/// The rows of the global queries of dilated attention (every admissible
/// key): a single query per CTA against all Tn keys, so the keys are split
/// over the CTA's warps instead of being swept in block-wide tiles. grid =
/// (n_global, H, B), block = 512 (kAttnGlobalWarps warps). Lane l holds the
/// dims l, l + 32, ... of q, of its keys' rows and of the output (rows read
/// coalesced); each warp walks the keys warp*U, warp*U + NW*U, ... U at a
/// time (their K and V loads in flight together), scores them with a warp
/// reduction and keeps its own online-softmax state (m, l, acc); the warps'
/// states are merged once at the end. A global query is one CTA per head,
/// so its latency is the pass's: 16 warps with 16 / E keys in flight each
/// (on an H200, 8 warps x 4 keys made the pass most of dilated attention's
/// time at T 4096). Exact / dh_rt as
/// attention_tile_fwd_kernel (DH = 32, 64, 128). S: the element type of q,
/// k, v and out (bf16_t with T = float: widened when read, rounded when
/// stored); LseT: lse's (T, or bf16_t: rounded when stored).
constexpr int kAttnGlobalWarps = 16;
template <typename T, int DH, bool Exact, typename S = T, typename LseT = T>
__global__ void __launch_bounds__(32 * kAttnGlobalWarps)
    attention_global_rows_kernel(int Tn, const S *__restrict__ q, const S *__restrict__ k,
                                 const S *__restrict__ v, int64_t ld_in, S *out, int64_t ld_out,
                                 const uint8_t *kpm, int causal, T scale, LseT *lse, int dh_rt,
                                 const int32_t *globals, AttentionDropout<T> drop) {
  // Keys in flight per warp: 16 rows of fp32 (8 of fp64) dims per lane
  // (K and V registers within the 128 a 512-thread CTA allows).
  constexpr int NW = kAttnGlobalWarps, E = DH / 32, U = (sizeof(T) == 8 ? 8 : 16) / E;
  static_assert(DH % 32 == 0, "whole dims per lane");
  __shared__ T accs[NW][DH];
  __shared__ T ms[NW], ls[NW];
  const int dh = Exact ? DH : dh_rt;
  const int b = blockIdx.z, h = blockIdx.y, H = gridDim.y;
  const int i = globals[blockIdx.x];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const uint8_t *kpmRow = kpm ? kpm + (int64_t)b * Tn : nullptr;
  const int64_t headOff = (int64_t)b * Tn * ld_in + (int64_t)h * dh;
  const uint64_t rowCounter = (uint64_t)((((int64_t)b * H + h) * Tn + i) * (int64_t)Tn);
  auto live = [&](int e) { return Exact || lane + 32 * e < dh; };
  T qr[E], acc[E];
#pragma unroll
  for (int e = 0; e < E; ++e) {
    qr[e] = live(e) ? load_acc(q[headOff + (int64_t)i * ld_in + lane + 32 * e]) * scale : T(0);
    acc[e] = T(0);
  }
  T m = neg_big<T>(), l = T(0);
  for (int j0 = warp * U; j0 < Tn; j0 += NW * U) {
    T kr[U][E], vr[U][E], sc[U];
    bool ok[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int j = j0 + u;
      ok[u] = j < Tn && key_admissible(i, j, causal != 0, kpmRow);
      const int64_t row = headOff + (int64_t)j * ld_in + lane;
#pragma unroll
      for (int e = 0; e < E; ++e) {
        kr[u][e] = ok[u] && live(e) ? load_acc(k[row + 32 * e]) : T(0);
        vr[u][e] = ok[u] && live(e) ? load_acc(v[row + 32 * e]) : T(0);
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      T d = T(0);
#pragma unroll
      for (int e = 0; e < E; ++e)
        d += qr[e] * kr[u][e];
#pragma unroll
      for (int x = 16; x > 0; x >>= 1)
        d += __shfl_xor_sync(0xffffffffu, d, x);
      sc[u] = ok[u] ? d : neg_big<T>();
    }
    T tmax = m;
#pragma unroll
    for (int u = 0; u < U; ++u)
      tmax = sc[u] > tmax ? sc[u] : tmax;
    const T alpha = nexp(m - tmax);
    l *= alpha;
#pragma unroll
    for (int e = 0; e < E; ++e)
      acc[e] *= alpha;
    T p[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      p[u] = sc[u] <= neg_big<T>() ? T(0) : nexp(sc[u] - tmax);
      l += p[u];
    }
    if (drop.on()) // one branch, not one per key between the exponentials
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (p[u] != T(0))
          p[u] *= drop.mult(rowCounter + (uint64_t)(j0 + u));
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int e = 0; e < E; ++e)
        acc[e] += p[u] * vr[u][e];
    m = tmax;
  }
  // Merge the warps' states: M = max m_w, L = sum l_w e^(m_w - M), out =
  // sum acc_w e^(m_w - M) / L.
  if (lane == 0) {
    ms[warp] = m;
    ls[warp] = l;
  }
#pragma unroll
  for (int e = 0; e < E; ++e)
    accs[warp][lane + 32 * e] = acc[e];
  __syncthreads();
  T M = neg_big<T>();
#pragma unroll
  for (int w = 0; w < NW; ++w)
    M = ms[w] > M ? ms[w] : M;
  T L = T(0);
#pragma unroll
  for (int w = 0; w < NW; ++w)
    L += ls[w] * nexp(ms[w] - M);
  const T inv = L > T(0) ? T(1) / L : T(0);
  for (int d = threadIdx.x; d < dh; d += blockDim.x) {
    T a = T(0);
#pragma unroll
    for (int w = 0; w < NW; ++w)
      a += accs[w][d] * nexp(ms[w] - M);
    out[((int64_t)b * Tn + i) * ld_out + (int64_t)h * dh + d] = store_acc<S>(a * inv);
  }
  if (lse && threadIdx.x == 0)
    lse[((int64_t)b * H + h) * Tn + i] = store_acc<LseT>(L > T(0) ? M + nlog(L) : neg_big<T>());
}

/// Whether q, k, v rows of a head allow aligned 16-byte loads.
template <typename T>
inline bool attn_vec_loads(const T *q, const T *k, const T *v, int64_t ld_in, int dh) {
  constexpr int VW = 16 / (int)sizeof(T);
  auto al = [](const T *p) { return ((uintptr_t)p & 15u) == 0; };
  return al(q) && al(k) && al(v) && ld_in % VW == 0 && dh % VW == 0;
}

/// While one of these lives on a host thread, attention_tf32_allowed() is
/// false there: the bf16 backwards (AttentionBackward.cuh) run the fp32
/// launchers on widened copies inside one, so that the forward they
/// recompute is the fp32 SIMT one the bf16 training forward runs.
struct AttentionNoTf32Scope {
  AttentionNoTf32Scope() { ++depth(); }
  ~AttentionNoTf32Scope() { --depth(); }
  AttentionNoTf32Scope(const AttentionNoTf32Scope &) = delete;
  AttentionNoTf32Scope &operator=(const AttentionNoTf32Scope &) = delete;
  static int &depth() {
    static thread_local int d = 0;
    return d;
  }
};

/// Whether the user allows TF32 tensor cores (NNCC_CUDA_ALLOW_TF32 set and
/// not "0", read at each launch; off by default, as PyTorch's allow_tf32),
/// outside an AttentionNoTf32Scope.
inline bool attention_tf32_allowed() {
  if (AttentionNoTf32Scope::depth() > 0)
    return false;
  const char *e = getenv("NNCC_CUDA_ALLOW_TF32");
  return e && *e && strcmp(e, "0") != 0;
}

/// Whether a forward over storage T keeping its log-sum-exp as L runs the
/// exact bf16 path: bf16 q, k, v, out and a bf16 lse (the bf16 training
/// forwards of generated code, where every float tensor is real_t). Their
/// values are the fp32 forward's for the widened inputs, rounded once:
/// attention_tile_fwd_kernel<bf16_t> (fp32 SIMT, never TF32), the global
/// rows in fp32. bf16 with an fp32 (or no) lse runs the BF16 tensor-core
/// kernel: faster, but its weights are rounded to bf16 before P.V.
template <typename T, typename L>
inline constexpr bool attn_bf16_exact_v = is_bf16_v<T> && is_bf16_v<L>;

/// Launch the tile kernel <T, DH, Mode, Exact> on `grid`: for bf16_t the
/// BF16 one, or attention_tile_fwd_kernel<bf16_t> with a bf16 lse
/// (attn_bf16_exact_v); the TF32 one for fp32 when attention_tf32_allowed(),
/// else attention_tile_fwd_kernel. L: lse's element type (acc_t<T>, or T).
template <typename T, int DH, int Mode, bool Exact, typename L>
inline cudaError_t attn_tile_launch(dim3 grid, int Tn, const T *q, const T *k, const T *v,
                                    int64_t ld_in, T *out, int64_t ld_out, const uint8_t *kpm,
                                    int causal, acc_t<T> scale, L *lse, int dh, int window,
                                    int dilation, const DilatedGlobals &g,
                                    const AttentionDropout<acc_t<T>> &drop, cudaStream_t stream) {
  const int vec = attn_vec_loads(q, k, v, ld_in, dh) ? 1 : 0;
  auto launch = [&](auto kern, size_t smem) -> cudaError_t {
    cudaError_t e =
        cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (e != cudaSuccess)
      return e;
    kern<<<grid, 128, smem, stream>>>(Tn, q, k, v, ld_in, out, ld_out, kpm, causal, scale, lse,
                                      dh, vec, window, dilation, g.is_global, g.list, g.n, drop);
    return cudaGetLastError();
  };
  static_assert(AttnTile<acc_t<T>, DH>::NT == 128 && AttnTileBf16<DH, Mode>::NT == 128,
                "128-thread CTAs");
  static_assert(std::is_same_v<L, acc_t<T>> || std::is_same_v<L, T>, "lse in acc_t<T> or T");
  if constexpr (attn_bf16_exact_v<T, L>) {
    return launch(attention_tile_fwd_kernel<T, DH, Mode, Exact>,
                  AttnTile<acc_t<T>, DH>::smem_bytes);
  } else if constexpr (is_bf16_v<T>) {
    return launch(attention_tile_bf16_kernel<DH, Mode, Exact>,
                  AttnTileBf16<DH, Mode>::smem_bytes);
  } else {
    if constexpr (std::is_same_v<T, float>)
      if (attention_tf32_allowed())
        return launch(attention_tile_tf32_kernel<DH, Mode, Exact>, AttnTileTf32<DH>::smem_bytes);
    return launch(attention_tile_fwd_kernel<T, DH, Mode, Exact>, AttnTile<T, DH>::smem_bytes);
  }
}

/// Runs run(std::integral_constant<int, DH>, std::bool_constant<Exact>) for
/// the tile kernels' head size of dh: DHS = 32/64/128 only that one (exact);
/// DHS = 0: dh 32, 64, 128 exact, other dh < 128 zero-padded to the next of
/// them (Exact false). cudaErrorInvalidValue for dh outside (0, 128].
template <int DHS, typename Run> inline cudaError_t attn_tile_dispatch(int dh, Run &&run) {
  using std::integral_constant;
  if constexpr (DHS == 32 || DHS == 64 || DHS == 128) {
    return run(integral_constant<int, DHS>(), integral_constant<bool, true>());
  } else {
    switch (dh) {
    case 32: return run(integral_constant<int, 32>(), integral_constant<bool, true>());
    case 64: return run(integral_constant<int, 64>(), integral_constant<bool, true>());
    case 128: return run(integral_constant<int, 128>(), integral_constant<bool, true>());
    default: break;
    }
    if (dh > 0 && dh < 32)
      return run(integral_constant<int, 32>(), integral_constant<bool, false>());
    if (dh > 32 && dh < 64)
      return run(integral_constant<int, 64>(), integral_constant<bool, false>());
    if (dh > 64 && dh < 128)
      return run(integral_constant<int, 128>(), integral_constant<bool, false>());
    return cudaErrorInvalidValue;
  }
}

/// The tile kernel for head size dh <= 128 (DHS as flash_attention_forward;
/// dh 32/64/128 exact, others padded to the next of them) and, for band
/// mode with global tokens, the global-query rows. L: lse's element type
/// (attn_tile_launch).
template <typename T, int DHS, int Mode, typename L>
inline cudaError_t attn_tile_forward(int dh, dim3 grid, int Tn, const T *q, const T *k,
                                     const T *v, int64_t ld_in, T *out, int64_t ld_out,
                                     const uint8_t *kpm, int causal, acc_t<T> scale, L *lse,
                                     int window, int dilation, const DilatedGlobals &g,
                                     const AttentionDropout<acc_t<T>> &drop, cudaStream_t stream) {
  auto run = [&](auto dhTag, auto exactTag) -> cudaError_t {
    constexpr int DH = decltype(dhTag)::value;
    constexpr bool Exact = decltype(exactTag)::value;
    cudaError_t e = attn_tile_launch<T, DH, Mode, Exact>(grid, Tn, q, k, v, ld_in, out, ld_out,
                                                         kpm, causal, scale, lse, dh, window,
                                                         dilation, g, drop, stream);
    if constexpr (Mode == kAttnTileBand) {
      if (e != cudaSuccess || g.n == 0)
        return e;
      attention_global_rows_kernel<acc_t<T>, DH, Exact, T, L>
          <<<dim3(g.n, grid.y, grid.z), 32 * kAttnGlobalWarps, 0, stream>>>(
          Tn, q, k, v, ld_in, out, ld_out, kpm, causal, scale, lse, dh, g.list, drop);
      return cudaGetLastError();
    }
    return e;
  };
  return attn_tile_dispatch<DHS>(dh, run);
}

/// Largest head size served (the tile kernels up to 128, the one-query-per-
/// thread kernels beyond).
constexpr int kMaxHeadDim = 256;
/// Largest head size of the tile kernels.
constexpr int kMaxTileHeadDim = 128;

/// Flash attention forward with the head size DH known statically.
template <typename T, int DH>
inline cudaError_t launch_flash_attention(int B, int Tn, int H, const T *q,
                                          const T *k, const T *v,
                                          int64_t ld_in, T *out,
                                          int64_t ld_out, const uint8_t *kpm,
                                          int causal, acc_t<T> scale, acc_t<T> *lse,
                                          cudaStream_t stream = 0) {
  if (B <= 0 || Tn <= 0)
    return cudaSuccess;
  constexpr int BQ = 64;
  dim3 grid((Tn + BQ - 1) / BQ, H, B);
  if constexpr (DH <= kMaxTileHeadDim) {
    return attn_tile_forward<T, DH, kAttnTileDense>(DH, grid, Tn, q, k, v, ld_in, out, ld_out,
                                                    kpm, causal, scale, lse, 0, 1,
                                                    DilatedGlobals(), AttentionDropout<acc_t<T>>(),
                                                    stream);
  } else if constexpr (is_bf16_v<T>) { // bf16: the tile kernels' head sizes only
    return cudaErrorInvalidValue;
  } else {
    flash_attention_fwd_kernel<T, DH, BQ, attn_tile_keys<T, DH>()><<<grid, BQ, 0, stream>>>(
        Tn, q, k, v, ld_in, out, ld_out, kpm, causal, scale, lse);
    return cudaGetLastError();
  }
}

/// The flash forward for head size dh with dropout `drop` (off:
/// inference): DHS = 32/64/128 builds only that kernel (dh must match);
/// DHS = 0 dispatches at run time: the tile kernel (exact for dh = 32, 64,
/// 128, zero-padded to the next of them below 128), the one-query-per-thread
/// kernel for 128 < dh <= kMaxHeadDim (not bf16). L: lse's element type
/// (acc_t<T>, or bf16_t for bf16: attn_bf16_exact_v).
template <typename T, int DHS = 0, typename L = acc_t<T>>
inline cudaError_t flash_attention_forward(int dh, int B, int Tn, int H, const T *q,
                                           const T *k, const T *v, int64_t ld_in, T *out,
                                           int64_t ld_out, const uint8_t *kpm, int causal,
                                           acc_t<T> scale, L *lse, const AttentionDropout<acc_t<T>> &drop,
                                           cudaStream_t stream) {
  if (B <= 0 || Tn <= 0)
    return cudaSuccess;
  if (DHS != 0 && dh != DHS)
    return cudaErrorInvalidValue;
  if (dh <= 0 || dh > kMaxHeadDim)
    return cudaErrorInvalidValue;
  constexpr int BQ = 64;
  dim3 grid((Tn + BQ - 1) / BQ, H, B);
  if (dh <= kMaxTileHeadDim)
    return attn_tile_forward<T, DHS, kAttnTileDense>(dh, grid, Tn, q, k, v, ld_in, out, ld_out,
                                                     kpm, causal, scale, lse, 0, 1,
                                                     DilatedGlobals(), drop, stream);
  if constexpr (DHS == 0 && !is_bf16_v<T>) {
    flash_attention_fwd_kernel<T, kMaxHeadDim, BQ, attn_tile_keys<T, kMaxHeadDim>(), false>
        <<<grid, BQ, 0, stream>>>(Tn, q, k, v, ld_in, out, ld_out, kpm, causal, scale, lse, dh,
                                  drop);
    return cudaGetLastError();
  }
  return cudaErrorInvalidValue;
}

/// Flash attention with the head size known at run time only: exact
/// kernels for dh = 32, 64, 128, a generic one (loops bounded by the
/// run-time dh, smaller key tiles) for any other dh <= kMaxHeadDim.
template <typename T>
inline cudaError_t launch_flash_attention_dyn(int dh, int B, int Tn, int H,
                                              const T *q, const T *k, const T *v,
                                              int64_t ld_in, T *out, int64_t ld_out,
                                              const uint8_t *kpm, int causal, acc_t<T> scale,
                                              acc_t<T> *lse, cudaStream_t stream = 0) {
  return flash_attention_forward<T, 0>(dh, B, Tn, H, q, k, v, ld_in, out, ld_out, kpm, causal,
                                       scale, lse, AttentionDropout<acc_t<T>>(), stream);
}

/// Training forward of nnk.flash_attention: attention dropout with rate
/// `dropout` (0 = off), Philox key `seed`, step offset `offset`, and the
/// log-sum-exp [B, H, T] into `lse` (may be NULL). DHS as for
/// flash_attention_forward. L, lse's element type: acc_t<T>, or for bf16
/// T also bf16_t (what generated code passes: every float tensor is
/// real_t), which makes it exactly the f32 training forward's out and lse
/// for q, k, v widened to fp32, rounded once (attn_bf16_exact_v: rows
/// widened when staged into the fp32 SIMT tile kernel, never TF32; the
/// same dropout counters; head sizes up to 128). bf16 with an fp32 lse runs
/// the faster BF16 tensor-core kernel instead.
template <typename T, int DHS = 0, typename L = acc_t<T>>
inline cudaError_t launch_flash_attention_train(int dh, int B, int Tn, int H, const T *q,
                                                const T *k, const T *v, int64_t ld_in, T *out,
                                                int64_t ld_out, const uint8_t *kpm, int causal,
                                                acc_t<T> scale, L *lse, double dropout, uint64_t seed,
                                                uint64_t offset, cudaStream_t stream = 0) {
  if (!attention_dropout_valid(dropout))
    return cudaErrorInvalidValue;
  return flash_attention_forward<T, DHS>(dh, B, Tn, H, q, k, v, ld_in, out, ld_out, kpm, causal,
                                         scale, lse,
                                         attention_dropout_of<acc_t<T>>(dropout, seed, offset), stream);
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

/// The dilated forward for head size dh (DHS as for flash_attention_forward)
/// over uploaded global tables; `lse` may be NULL. dh <= 128: the band tile
/// kernel plus, with global tokens, attention_global_rows_kernel; larger
/// heads (not bf16): the one-query-per-thread kernel. L: lse's element type
/// as flash_attention_forward.
template <typename T, int DHS = 0, typename L = acc_t<T>>
inline cudaError_t dilated_attention_forward(int dh, int B, int Tn, int H, const T *q,
                                             const T *k, const T *v, int64_t ld_in, T *out,
                                             int64_t ld_out, const uint8_t *kpm, int causal,
                                             acc_t<T> scale, int window, int dilation,
                                             const DilatedGlobals &g, L *lse,
                                             const AttentionDropout<acc_t<T>> &drop,
                                             cudaStream_t stream) {
  if (B <= 0 || Tn <= 0)
    return cudaSuccess;
  if ((DHS != 0 && dh != DHS) || dh <= 0 || dh > kMaxHeadDim || dilation < 1)
    return cudaErrorInvalidValue;
  if (dh <= kMaxTileHeadDim) {
    constexpr int BQ = AttnTile<acc_t<T>, 32>::BQ;
    const int perClass = ((Tn + dilation - 1) / dilation + BQ - 1) / BQ;
    dim3 grid(std::min(dilation, Tn) * perClass, H, B); // classes r >= T are empty
    return attn_tile_forward<T, DHS, kAttnTileBand>(dh, grid, Tn, q, k, v, ld_in, out, ld_out,
                                                    kpm, causal, scale, lse, window, dilation,
                                                    g, drop, stream);
  }
  if constexpr (DHS == 0 && !is_bf16_v<T>) {
    dim3 grid((Tn + 127) / 128, H, B);
    dilated_attention_fwd_kernel<T, kMaxHeadDim, false><<<grid, 128, 0, stream>>>(
        Tn, q, k, v, ld_in, out, ld_out, kpm, causal, scale, window, dilation, g.is_global,
        g.list, g.n, dh, lse, drop);
    return cudaGetLastError();
  }
  return cudaErrorInvalidValue;
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
    T *out, int64_t ld_out, const uint8_t *kpm, int causal, acc_t<T> scale, int window,
    int dilation, const int32_t *host_globals, int n_host_globals, void *scratch,
    cudaStream_t stream = 0) {
  if (B <= 0 || Tn <= 0)
    return cudaSuccess;
  DilatedGlobals g;
  cudaError_t e = dilated_upload_globals(Tn, host_globals, n_host_globals, scratch, g, stream);
  if (e != cudaSuccess)
    return e;
  return dilated_attention_forward<T, DHS>(dh, B, Tn, H, q, k, v, ld_in, out, ld_out, kpm,
                                           causal, scale, window, dilation, g, (acc_t<T> *)nullptr,
                                           AttentionDropout<acc_t<T>>(), stream);
}

/// Training forward of nnk.banded_attention: launch_dilated_attention_dyn
/// plus attention dropout (rate, seed, step offset as
/// launch_flash_attention_train) and the log-sum-exp [B, H, T] into `lse`
/// (may be NULL). `scratch`: dilated_attention_scratch_bytes(T, n). L as
/// for launch_flash_attention_train (a bf16 lse: exactly f32's values,
/// rounded; the global rows by attention_global_rows_kernel in fp32).
template <typename T, int DHS = 0, typename L = acc_t<T>>
inline cudaError_t launch_dilated_attention_train(
    int dh, int B, int Tn, int H, const T *q, const T *k, const T *v, int64_t ld_in, T *out,
    int64_t ld_out, const uint8_t *kpm, int causal, acc_t<T> scale, int window, int dilation,
    const int32_t *host_globals, int n_host_globals, L *lse, double dropout, uint64_t seed,
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
                                           attention_dropout_of<acc_t<T>>(dropout, seed, offset),
                                           stream);
}

} // namespace cuda
} // namespace kernels
} // namespace nncc

#endif
