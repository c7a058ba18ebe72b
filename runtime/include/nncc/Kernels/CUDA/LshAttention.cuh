//===- LshAttention.cuh - Reformer LSH attention on the GPU -----*- CUDA -*-===//
//
// The CUDA twin of lshAttention in runtime/lib/Kernels/Attention.cpp (Reformer
// semantics, docs/kernels.md "LSH"), as five stream-ordered launches:
//
//   1. lsh_normalize_keys_kernel  k^_t = qk_t / |qk_t|       [B, H, T, dh]
//   2. lsh_bucket_kernel          bucket_r(t) = lsh_bucket() [B, H, R, T]
//   3. lsh_sort_kernel            stable counting sort by (bucket, position):
//                                 one warp per (b, h, round), ties resolved
//                                 in position order with __match_any_sync
//   4. lsh_chunk_tile_kernel      per (64 queries of a chunk, h*R + r, b):
//                                 the queries of the chunk attend the keys
//                                 of their own and the previous chunk (no
//                                 wrap-around), gathered K/V tiles in
//                                 shared memory, register micro-tiles and
//                                 the online softmax of Attention.cuh's tile
//                                 kernels, self masked; writes o_r and
//                                 lse_r (dh > 128: lsh_chunk_attention_kernel,
//                                 one query per thread, OnlineSoftmax)
//   5. lsh_combine_kernel         out = sum_r softmax_r(lse_r) o_r
//                                 (lse_round_weights, duplicates counted);
//                                 self alone when no round offers another
//                                 key (lsh_self_only, Reformer's self mask)
//
// Every decision (bucket argmax and its ties, admissibility, the online
// softmax, the round weights) is an NNCC_HD function of AttentionMath.h, the
// code the CPU twin runs; only the thread mapping differs. Rotations can be
// drawn on the device from Philox (lsh_rotations_kernel): the same values
// as the CPU's nncc_rng_fill_normal (bit-identical for f32).
// launch_lsh_attention_train adds attention dropout (per hash round, the
// CPU's counters) and the combined log-sum-exp the backward reads
// (AttentionBackward.cuh). fp32 forward and training ran on an H100
// (reformer_lsh, electra_reformer: docs/cuda.md, "First run on an H100
// (2026-11-26)"); fp64 and the TF32 paths have not run on a GPU.
//
// bf16 (launch_lsh_attention<bf16_t>, launch_lsh_attention_train<bf16_t>):
// qk, v, out and the training lse are bf16, everything else fp32
// (acc_t<T>): the rotations, the normalised keys, the per-round o_r / lse_r
// in the scratch, all arithmetic. Rows are widened when loaded (buckets:
// lsh_bucket_widened_kernel; chunks: the fp32 SIMT tile kernel, never
// TF32), so the launch computes the f32 launch's buckets and values
// (dropout included) for the widened inputs and rounds only the output and
// lse. The backward (AttentionBackward.cuh) recomputes in fp32. Not yet run
// on a GPU.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_CUDA_LSHATTENTION_CUH
#define NNCC_KERNELS_CUDA_LSHATTENTION_CUH

#include "nncc/Kernels/CUDA/Attention.cuh"

#include "nncc/Runtime/Philox.h"

namespace nncc {
namespace kernels {
namespace cuda {

/// Most hash rounds served (per-thread round weights live in registers).
constexpr int kLshMaxRounds = 32;

inline int64_t lsh_align(int64_t n) { return (n + 255) / 256 * 256; }

/// Device scratch of launch_lsh_attention<T> (bytes): normalised keys,
/// buckets, sorted order, per-round outputs and log-sum-exps. elem:
/// sizeof(acc_t<T>) (the intermediates are fp32 for bf16).
inline int64_t lsh_attention_scratch_bytes(int64_t B, int64_t Tn, int64_t H, int64_t dh,
                                           int64_t rounds, int64_t elem) {
  const int64_t bhrt = B * H * rounds * Tn;
  return lsh_align(B * H * Tn * dh * elem) + 2 * lsh_align(bhrt * 4) +
         lsh_align(bhrt * dh * elem) + lsh_align(bhrt * elem);
}

/// rot[i] = N(0, 1) from Philox(seed, stream 0x15A, index i): the values
/// the CPU launch sequence draws with nncc_rng_fill_normal_{f32,f64}, in
/// acc_t<T> (bf16: the f32 draw).
template <typename T>
__global__ void lsh_rotations_kernel(int64_t n, uint64_t seed, acc_t<T> *rot) {
  using A = acc_t<T>;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    if (sizeof(A) == sizeof(float))
      rot[i] = (A)NNCC_RNG_FMA(1.0f, nncc_rng_normal(seed, 0x15AULL, (uint64_t)i), 0.0f);
    else
      rot[i] = (A)(0.0 + 1.0 * nncc_rng_normal_double(seed, 0x15AULL, (uint64_t)i));
  }
}

/// dst[i] = src[i] in acc_t<T>.
template <typename T>
__global__ void lsh_widen_kernel(int64_t n, const T *__restrict__ src, acc_t<T> *dst) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    dst[i] = load_acc(src[i]);
}

/// Device bytes lsh_rotations_acc<T> needs for n given rotations (0 but
/// for bf16).
template <typename T> inline int64_t lsh_rotations_acc_bytes(int64_t n) {
  return is_bf16_v<T> ? n * (int64_t)sizeof(acc_t<T>) : 0;
}

/// Given rotations (n elements of T on the device) as the kernels read
/// them, in acc_t<T>: f32 / f64 ones in place, bf16 ones widened into `buf`
/// (lsh_rotations_acc_bytes<T>(n) bytes) on `stream`.
template <typename T>
inline const acc_t<T> *lsh_rotations_acc(const T *rot, int64_t n, void *buf,
                                         cudaStream_t stream) {
  if constexpr (is_bf16_v<T>) {
    acc_t<T> *w = static_cast<acc_t<T> *>(buf);
    if (n > 0)
      lsh_widen_kernel<T><<<grid_for(n, 256), 256, 0, stream>>>(n, rot, w);
    return w;
  } else {
    (void)n, (void)buf, (void)stream;
    return rot;
  }
}

/// kn[b, h, t, :] = qk[b, t, h*dh : (h+1)*dh] / |.| (0 for a zero row);
/// inv_norm[b, h, t] = 1/|.| (0 for a zero row) when given (the backward).
/// One warp per row, lanes over the head's columns (coalesced), the sum of
/// squares by a fixed shuffle tree. qk in T, kn and inv_norm in acc_t<T>.
template <typename T>
__global__ void lsh_normalize_keys_kernel(int B, int Tn, int H, int dh,
                                          const T *__restrict__ qk, int64_t ld_in,
                                          acc_t<T> *__restrict__ kn, acc_t<T> *inv_norm) {
  using A = acc_t<T>;
  const int64_t rows = (int64_t)B * H * Tn;
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5);
  for (int64_t i = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5; i < rows;
       i += warps) {
    const int64_t t = i % Tn, h = (i / Tn) % H, b = i / ((int64_t)Tn * H);
    const T *x = qk + (b * Tn + t) * ld_in + h * dh;
    A ss = A(0);
    for (int d = lane; d < dh; d += 32)
      ss += load_acc(x[d]) * load_acc(x[d]);
    ss = warp_sum(ss);
    const A inv = ss > A(0) ? A(1) / nsqrt(ss) : A(0);
    for (int d = lane; d < dh; d += 32)
      kn[i * dh + d] = load_acc(x[d]) * inv;
    if (inv_norm && lane == 0)
      inv_norm[i] = inv;
  }
}

template <typename T>
inline cudaError_t lsh_normalize_keys(int B, int Tn, int H, int dh, const T *qk, int64_t ld_in,
                                      acc_t<T> *kn, acc_t<T> *inv_norm, cudaStream_t stream) {
  lsh_normalize_keys_kernel<T><<<grid_for((int64_t)B * H * Tn * 32, 256), 256, 0, stream>>>(
      B, Tn, H, dh, qk, ld_in, kn, inv_norm);
  return cudaGetLastError();
}

/// buckets[b, h, r, t] = argmax([x R_r ; -x R_r]) of the shared QK row.
template <typename T>
__global__ void lsh_bucket_kernel(int B, int Tn, int H, int dh, int rounds, int nb2,
                                  const T *__restrict__ qk, int64_t ld_in,
                                  const T *__restrict__ rot, int32_t *buckets) {
  const int64_t n = (int64_t)B * H * rounds * Tn;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t t = i % Tn, r = (i / Tn) % rounds, h = (i / ((int64_t)Tn * rounds)) % H,
                  b = i / ((int64_t)Tn * rounds * H);
    buckets[i] = lsh_bucket(qk + (b * Tn + t) * ld_in + h * dh,
                            rot + r * (int64_t)dh * nb2, dh, nb2);
  }
}

/// lsh_bucket_kernel for bf16 qk: one warp per (b, h, t), its row widened
/// into shared memory (dh floats per warp), lanes over the rounds: lsh_bucket
/// on the widened values, lsh_bucket_kernel<float>'s buckets for them.
template <typename T>
__global__ void lsh_bucket_widened_kernel(int B, int Tn, int H, int dh, int rounds, int nb2,
                                          const T *__restrict__ qk, int64_t ld_in,
                                          const acc_t<T> *__restrict__ rot, int32_t *buckets) {
  using A = acc_t<T>;
  extern __shared__ __align__(16) unsigned char nncc_lsh_bucket_smem[];
  const int lane = threadIdx.x & 31;
  A *xs = reinterpret_cast<A *>(nncc_lsh_bucket_smem) + (threadIdx.x >> 5) * dh;
  const int64_t rows = (int64_t)B * H * Tn;
  const int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5);
  for (int64_t i = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5; i < rows;
       i += warps) {
    const int64_t t = i % Tn, bh = i / Tn, h = bh % H, b = bh / H;
    const T *x = qk + (b * Tn + t) * ld_in + h * dh;
    __syncwarp(); // the previous row's readers are done
    for (int d = lane; d < dh; d += 32)
      xs[d] = load_acc(x[d]);
    __syncwarp();
    for (int r = lane; r < rounds; r += 32)
      buckets[(bh * rounds + r) * Tn + t] = lsh_bucket(xs, rot + r * (int64_t)dh * nb2, dh, nb2);
  }
}

/// Stable counting sort of one (b, h, round): order[p] = the position with
/// rank p under (bucket, position). One warp per CTA; dynamic shared memory
/// holds nbuckets counters. Deterministic: ranks inside a 32-position group
/// come from __match_any_sync, groups are taken in position order.
static __global__ void lsh_sort_kernel(int Tn, int nbuckets, const int32_t *buckets,
                                       int32_t *order) {
  extern __shared__ int32_t nncc_lsh_start[];
  const int64_t task = blockIdx.x;
  const int32_t *bk = buckets + task * Tn;
  int32_t *ord = order + task * Tn;
  const int lane = threadIdx.x;
  for (int c = lane; c < nbuckets; c += 32)
    nncc_lsh_start[c] = 0;
  __syncwarp();
  for (int t = lane; t < Tn; t += 32) {
    const int c = bk[t];
    if (c >= 0 && c < nbuckets)
      atomicAdd(&nncc_lsh_start[c], 1);
  }
  __syncwarp();
  if (lane == 0) { // exclusive scan (nbuckets is small)
    int run = 0;
    for (int c = 0; c < nbuckets; ++c) {
      const int n = nncc_lsh_start[c];
      nncc_lsh_start[c] = run;
      run += n;
    }
  }
  __syncwarp();
  const unsigned lower = (1u << lane) - 1u;
  for (int t0 = 0; t0 < Tn; t0 += 32) {
    const int t = t0 + lane;
    const bool in = t < Tn;
    const unsigned active = __ballot_sync(0xffffffffu, in);
    int c = in ? bk[t] : -1;
    const unsigned peers = __match_any_sync(0xffffffffu, c);
    if (in && c >= 0 && c < nbuckets) {
      const int rank = __popc(peers & lower);
      ord[nncc_lsh_start[c] + rank] = t;
    }
    __syncwarp();
    // The lowest lane of each group advances its bucket's cursor.
    if (in && c >= 0 && c < nbuckets && (peers & lower) == 0)
      nncc_lsh_start[c] += __popc(peers & active);
    __syncwarp();
  }
}

/// Chunked attention of one round. grid = (ceil(T/chunk), H*rounds, B),
/// block = BQ threads, each thread one query (sorted position) at a time;
/// keys of sorted positions [lo, hi) staged in tiles of BK rows.
/// Outputs per round, indexed by the original position t:
/// o [B, H, R, T, dh] (normalised), lse [B, H, R, T]. `drop`: weights times
/// their multipliers (counter ((((b*H + h)*R + r)*T + t)*T + u)). qk and v
/// in T (widened when read), the rest in A = acc_t<T>.
template <typename T, int DH, int BQ, int BK, bool Exact>
__global__ void __launch_bounds__(BQ) lsh_chunk_attention_kernel(
    int Tn, int H, int rounds, int chunk, int causal, int same_bucket, acc_t<T> scale,
    const T *__restrict__ qk, const T *__restrict__ v, int64_t ld_in,
    const acc_t<T> *__restrict__ kn, const int32_t *__restrict__ buckets,
    const int32_t *__restrict__ order, const uint8_t *kpm, acc_t<T> *o_r, acc_t<T> *lse_r,
    int dh_rt, AttentionDropout<acc_t<T>> drop) {
  using A = acc_t<T>;
  __shared__ A Ks[BK][DH];
  __shared__ A Vs[BK][DH];
  __shared__ int32_t Kpos[BK];
  const int dh = Exact ? DH : dh_rt;
  const int c = blockIdx.x, hr = blockIdx.y, b = blockIdx.z;
  const int h = hr / rounds, r = hr % rounds;
  const int64_t task = ((int64_t)b * H + h) * rounds + r;
  const int32_t *ord = order + task * Tn;
  const int32_t *bk = buckets + task * Tn;
  const uint8_t *kpmRow = kpm ? kpm + (int64_t)b * Tn : nullptr;
  const T *qb = qk + (int64_t)b * Tn * ld_in + h * dh;
  const T *vb = v + (int64_t)b * Tn * ld_in + h * dh;
  const A *knb = kn + ((int64_t)b * H + h) * Tn * dh;

  const int p0 = c * chunk, p1 = min(Tn, p0 + chunk);
  const int lo = c > 0 ? p0 - chunk : 0, hi = p1;
  for (int g0 = p0; g0 < p1; g0 += BQ) {
    const int p = g0 + threadIdx.x;
    const bool valid = p < p1;
    const int t = valid ? ord[p] : 0;
    const int bt = valid ? bk[t] : 0;
    A qr[DH], acc[DH], s[BK];
#pragma unroll
    for (int d = 0; d < DH; ++d) {
      qr[d] = valid && d < dh ? load_acc(qb[(int64_t)t * ld_in + d]) : A(0);
      acc[d] = A(0);
    }
    OnlineSoftmax<A> sm;
    sm.init();
    for (int k0 = lo; k0 < hi; k0 += BK) {
      const int nk = min(BK, hi - k0);
      __syncthreads();
      for (int e = threadIdx.x; e < BK * DH; e += BQ) {
        const int jj = e / DH, d = e % DH;
        const bool in = jj < nk && d < dh;
        const int u = jj < nk ? ord[k0 + jj] : 0;
        Ks[jj][d] = in ? knb[(int64_t)u * dh + d] : A(0);
        Vs[jj][d] = in ? load_acc(vb[(int64_t)u * ld_in + d]) : A(0);
        if (d == 0)
          Kpos[jj] = jj < nk ? u : -1;
      }
      __syncthreads();
      if (!valid)
        continue;
      A tmax = neg_big<A>();
      for (int jj = 0; jj < BK; ++jj) {
        const int u = Kpos[jj];
        A sc = neg_big<A>();
        if (u >= 0 && u != t && key_admissible(t, u, causal != 0, kpmRow) &&
            (!same_bucket || bk[u] == bt)) {
          sc = A(0);
#pragma unroll
          for (int d = 0; d < DH; ++d) {
            if (!Exact && d >= dh)
              break;
            sc += qr[d] * Ks[jj][d];
          }
          sc *= scale;
          tmax = sc > tmax ? sc : tmax;
        }
        s[jj] = sc;
      }
      if (tmax > neg_big<A>()) {
        const A alpha = sm.push_tile(s, BK, tmax);
#pragma unroll
        for (int d = 0; d < DH; ++d)
          acc[d] *= alpha;
        if (drop.on()) {
          const uint64_t row = (uint64_t)((task * Tn + t) * (int64_t)Tn);
          for (int jj = 0; jj < BK; ++jj)
            if (s[jj] > A(0)) // masked keys have weight 0 already
              s[jj] *= drop.mult(row + (uint64_t)Kpos[jj]);
        }
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
    if (!valid)
      continue;
    A *orow = o_r + (task * Tn + t) * dh;
    // No other key in this round: o_r = 0, lse_r = neg_big (self is masked;
    // lsh_combine_kernel handles queries that no round offers a key).
    const A inv = sm.inv();
#pragma unroll
    for (int d = 0; d < DH; ++d)
      if (d < dh)
        orow[d] = acc[d] * inv;
    lse_r[task * Tn + t] = sm.lse();
  }
}

/// Where a tile CTA of one LSH round sits: batch row b = blockIdx.z, head
/// h, hash round `round`; blockIdx.x = chunk ch times ceil(chunk / BR) +
/// the CTA's group in the chunk. Its rows are the sorted positions
/// [p0, p0 + rows) of chunk ch (at most BR), `ord` and `bk` the round's
/// sorted order and buckets, the chunk ends at cEnd.
struct LshTileCta {
  int b, ch, p0, rows, cEnd;
  int64_t bh, task; // (b H + h), (b H + h) R + round
  const int32_t *ord, *bk;
  const uint8_t *kpmRow;
  /// false: the CTA has no rows (CTA-uniform: it returns).
  __device__ bool init(int Tn, int H, int rounds, int h, int round, int chunk, int BR,
                       const int32_t *order, const int32_t *buckets, const uint8_t *kpm) {
    b = blockIdx.z;
    bh = (int64_t)b * H + h;
    task = bh * rounds + round;
    ord = order + task * Tn;
    bk = buckets + task * Tn;
    kpmRow = kpm ? kpm + (int64_t)b * Tn : nullptr;
    const int groups = (chunk + BR - 1) / BR;
    ch = blockIdx.x / groups;
    cEnd = (int)min((int64_t)Tn, ((int64_t)ch + 1) * chunk);
    p0 = ch * chunk + (blockIdx.x % groups) * BR;
    rows = p0 < cEnd ? min(BR, cEnd - p0) : 0;
    return rows > 0;
  }
};

/// A forward chunk CTA (lsh_chunk_tile_kernel, lsh_chunk_tile_tf32_kernel):
/// LshTileCta for the round blockIdx.y % rounds of head h = blockIdx.y /
/// rounds, its head's query-key and value rows qb, vb (storage S, stride
/// ld_in), normalised keys knb (acc_t<S>, stride dh) and its keys' sorted
/// positions [lo, hi): its own chunk and the previous one.
template <typename S> struct LshChunkCta : LshTileCta {
  int lo, hi;
  const S *qb, *vb;
  const acc_t<S> *knb;
  /// false: the CTA has no rows (CTA-uniform: it returns).
  __device__ bool init(int Tn, int H, int rounds, int chunk, int BR, int dh, const S *qk,
                       const S *v, int64_t ld_in, const acc_t<S> *kn, const int32_t *order,
                       const int32_t *buckets, const uint8_t *kpm) {
    const int h = blockIdx.y / rounds;
    if (!LshTileCta::init(Tn, H, rounds, h, blockIdx.y % rounds, chunk, BR, order, buckets,
                          kpm))
      return false;
    qb = qk + (int64_t)b * Tn * ld_in + (int64_t)h * dh;
    vb = v + (int64_t)b * Tn * ld_in + (int64_t)h * dh;
    knb = kn + bh * Tn * dh;
    lo = ch > 0 ? (ch - 1) * chunk : 0;
    hi = cEnd;
    return true;
  }
};

/// attn_stage_rows_from (Attention.cuh): rows stored as S staged as T (bf16
/// rows widened to fp32).
template <typename T, int DH, int R, int LD, int NT, bool Tf32 = false, typename S = T,
          typename RowOf>
__device__ __forceinline__ void lsh_stage_rows(T *dst, const S *src, int64_t ld_in, int dh,
                                               bool vec, T mul, RowOf rowOf) {
  attn_stage_rows_from<T, DH, R, LD, NT, Tf32, S>(dst, src, ld_in, dh, vec, mul, rowOf);
}

/// Stages the LSH key tile of sorted positions [k0, min(k0 + BK, hi)): the
/// normalised key rows (knb, stride dh) into Ks (stride LDK), the value rows
/// (vb, storage S, stride ld_in) into Vs (stride LDV), rounded to TF32 when
/// Tf32; and each key's position (-1: none or padded) and bucket.
template <typename T, int DH, int BK, int LDK, int LDV, int NT, bool Tf32 = false,
          typename S = T>
__device__ __forceinline__ void lsh_stage_keys(T *Ks, T *Vs, int *kpos, int *kbkt, const T *knb,
                                               const S *vb, int64_t ld_in, int dh, bool vec,
                                               int k0, int hi, const int32_t *ord,
                                               const int32_t *bk, const uint8_t *kpmRow) {
  auto keyOf = [&](int jj) { return k0 + jj < hi ? ord[k0 + jj] : -1; };
  attn_stage_rows<T, DH, BK, LDK, NT, Tf32>(Ks, knb, dh, dh, vec, T(1), keyOf);
  lsh_stage_rows<T, DH, BK, LDV, NT, Tf32>(Vs, vb, ld_in, dh, vec, T(1), keyOf);
  for (int jj = threadIdx.x; jj < BK; jj += NT) {
    const int u = keyOf(jj);
    kpos[jj] = u >= 0 && !(kpmRow && kpmRow[u]) ? u : -1;
    kbkt[jj] = u >= 0 ? bk[u] : -1;
  }
}

/// Dropout on the weights the warps wrote to Ps (stride LDP; query row t is
/// sorted position p0 + t, nq rows): two threads per row of the warp's own
/// 16, BK/2 weights each, counter (task T + t) T + u.
template <typename T, int BK, int LDP>
__device__ __forceinline__ void lsh_tile_dropout(T *Ps, const int *kpos, int nq,
                                                 const int32_t *ord, int p0, int64_t task,
                                                 int Tn, const AttentionDropout<T> &drop) {
  constexpr int SEG = BK / 2;
  const int t = threadIdx.x >> 1, jj0 = (threadIdx.x & 1) * SEG;
  if (t >= nq)
    return;
  const uint64_t rowCounter = (uint64_t)((task * Tn + ord[p0 + t]) * (int64_t)Tn);
  T *pr = Ps + t * LDP + jj0;
  for (int x = 0; x < SEG; ++x)
    if (pr[x] != T(0))
      pr[x] *= drop.mult(rowCounter + (uint64_t)kpos[jj0 + x]);
}

/// lsh_chunk_attention_kernel on the tile kernels' register micro-tiles
/// (Attention.cuh: attn_stage_rows, attn_mt_dot, attn_mt_accum; head sizes
/// zero-padded to DH = 32/64/128). A CTA of 128 threads serves up to 64
/// sorted queries of a chunk (grid = (ceil(T/chunk) * ceil(chunk/64),
/// H*rounds, B)); the keys, sorted positions [lo, hi) of its own and the
/// previous chunk, are gathered into shared memory BK at a time (the
/// normalised keys k^ and the values), scores masked (self, causal, padding,
/// other buckets under same_bucket), the online softmax per tile as in
/// attention_tile_fwd_kernel, dropout per weight (counter
/// (task T + t) T + u). Writes o_r and lse_r as lsh_chunk_attention_kernel.
/// qk and v in T (bf16: widened when staged), the rest in A = acc_t<T>.
/// Dynamic shared memory: lsh_chunk_tile_smem_bytes<A, DH>().
template <typename A, int DH>
constexpr size_t lsh_chunk_tile_smem_bytes() {
  return AttnTile<A, DH>::smem_bytes + sizeof(int) * AttnTile<A, DH>::BK;
}

template <typename T, int DH, bool Exact>
__global__ void __launch_bounds__(128) lsh_chunk_tile_kernel(
    int Tn, int H, int rounds, int chunk, int causal, int same_bucket, acc_t<T> scale,
    const T *__restrict__ qk, const T *__restrict__ v, int64_t ld_in,
    const acc_t<T> *__restrict__ kn, const int32_t *__restrict__ buckets,
    const int32_t *__restrict__ order, const uint8_t *kpm, acc_t<T> *o_r, acc_t<T> *lse_r,
    int dh_rt, int vec, AttentionDropout<acc_t<T>> drop) {
  using A = acc_t<T>;
  using C = AttnTile<A, DH>;
  constexpr int BQ = C::BQ, BK = C::BK, NT = C::NT, VW = C::VW;
  constexpr int TM = C::TM, TN = C::TN, TG = C::TG, LDQ = C::LDQ, LDP = C::LDP;
  extern __shared__ __align__(16) unsigned char nncc_lsh_tile_smem[];
  A *Qs = reinterpret_cast<A *>(nncc_lsh_tile_smem); // [BQ][LDQ] (scaled)
  A *Ks = Qs + BQ * LDQ;                              // [BK][LDQ] k^ rows
  A *Vs = Ks + BK * LDQ;                              // [BK][DH]
  A *Ps = Vs + BK * DH;                               // [BQ][LDP]
  int *kpos = reinterpret_cast<int *>(Ps + BQ * LDP); // [BK] key position or -1
  int *kbkt = kpos + BK;                              // [BK] its bucket

  const int dh = Exact ? DH : dh_rt;
  LshChunkCta<T> cta;
  if (!cta.init(Tn, H, rounds, chunk, BQ, dh, qk, v, ld_in, kn, order, buckets, kpm))
    return;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int rr = lane >> 3, c = lane & 7;

  lsh_stage_rows<A, DH, BQ, LDQ, NT>(Qs, cta.qb, ld_in, dh, vec != 0, scale, [&](int t) {
    return t < cta.rows ? cta.ord[cta.p0 + t] : -1;
  });
  int qt[TM], qbk[TM];
  A mrow[TM], lrow[TM], acc[TM][TG * VW];
#pragma unroll
  for (int m = 0; m < TM; ++m) {
    const int t = warp * 16 + rr + 4 * m;
    qt[m] = t < cta.rows ? cta.ord[cta.p0 + t] : -1;
    qbk[m] = qt[m] >= 0 ? cta.bk[qt[m]] : -1;
    mrow[m] = neg_big<A>();
    lrow[m] = A(0);
#pragma unroll
    for (int x = 0; x < TG * VW; ++x)
      acc[m][x] = A(0);
  }

  for (int k0 = cta.lo; k0 < cta.hi; k0 += BK) {
    lsh_stage_keys<A, DH, BK, LDQ, DH, NT>(Ks, Vs, kpos, kbkt, cta.knb, cta.vb, ld_in, dh,
                                           vec != 0, k0, cta.hi, cta.ord, cta.bk, cta.kpmRow);
    __syncthreads();

    A s[TM][TN];
    attn_mt_scores<A, DH, TM, TN, LDQ, LDQ, Exact>(s, Qs + (warp * 16 + rr) * LDQ, Ks + c * LDQ,
                                                  dh);
    attn_tile_softmax_step<A, TM, TN, TG * VW, LDP>(
        s, mrow, lrow, acc, Ps + (warp * 16 + rr) * LDP + c, [&](int m, int n) {
          const int u = kpos[c + 8 * n];
          return qt[m] >= 0 && u >= 0 && u != qt[m] && !(causal && u > qt[m]) &&
                 (!same_bucket || kbkt[c + 8 * n] == qbk[m]);
        });
    __syncwarp(); // Ps rows are private to their warp
    if (drop.on()) {
      lsh_tile_dropout<A, BK, LDP>(Ps, kpos, cta.rows, cta.ord, cta.p0, cta.task, Tn, drop);
      __syncwarp();
    }
    attn_mt_accum<A, TM, TG, BK, LDP, DH>(acc, Ps + (warp * 16 + rr) * LDP, Vs + c * VW);
    __syncthreads(); // before the next tile overwrites Ks, Vs, kpos, kbkt
  }

  attn_tile_finish_rows<A, TM, TG * VW, VW, Exact>(
      mrow, lrow, acc, c, dh,
      [&](int m) { return qt[m] < 0 ? nullptr : o_r + (cta.task * Tn + qt[m]) * dh; },
      [&](int m, A value) { lse_r[cta.task * Tn + qt[m]] = value; });
}

/// lsh_chunk_tile_kernel on TF32 tensor cores (fp32; when
/// NNCC_CUDA_ALLOW_TF32 allows it): attention_tile_tf32_kernel's fragments,
/// mma steps and softmax (Attention.cuh) over the chunk CTA's sorted queries
/// and the gathered keys of its own and the previous chunk; masks, dropout
/// and outputs as lsh_chunk_tile_kernel. Dynamic shared memory:
/// lsh_chunk_tf32_smem_bytes<DH>().
template <int DH> constexpr size_t lsh_chunk_tf32_smem_bytes() {
  return AttnTileTf32<DH>::smem_bytes + sizeof(int) * AttnTile<float, DH>::BK;
}

template <int DH, bool Exact>
__global__ void __launch_bounds__(128) lsh_chunk_tile_tf32_kernel(
    int Tn, int H, int rounds, int chunk, int causal, int same_bucket, float scale,
    const float *__restrict__ qk, const float *__restrict__ v, int64_t ld_in,
    const float *__restrict__ kn, const int32_t *__restrict__ buckets,
    const int32_t *__restrict__ order, const uint8_t *kpm, float *o_r, float *lse_r, int dh_rt,
    int vec, AttentionDropout<float> drop) {
  using C = AttnTile<float, DH>;
  constexpr int BQ = C::BQ, BK = C::BK, NT = C::NT, LDQ = C::LDQ, LDP = C::LDP;
  constexpr int LDV = AttnTileTf32<DH>::LDV, NS = BK / 8, KD = DH / 8;
  extern __shared__ __align__(16) unsigned char nncc_lsh_tf32_smem[];
  float *Qs = reinterpret_cast<float *>(nncc_lsh_tf32_smem); // [BQ][LDQ] (scaled)
  float *Ks = Qs + BQ * LDQ;                                  // [BK][LDQ] k^ rows
  float *Vs = Ks + BK * LDQ;                                  // [BK][LDV]
  float *Ps = Vs + BK * LDV;                                  // [BQ][LDP]
  int *kpos = reinterpret_cast<int *>(Ps + BQ * LDP);         // [BK] key position or -1
  int *kbkt = kpos + BK;                                      // [BK] its bucket

  const int dh = Exact ? DH : dh_rt;
  LshChunkCta<float> cta;
  if (!cta.init(Tn, H, rounds, chunk, BQ, dh, qk, v, ld_in, kn, order, buckets, kpm))
    return;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t4 = lane & 3;
  const int row0 = warp * 16 + g; // and row0 + 8

  attn_stage_rows<float, DH, BQ, LDQ, NT, true>(Qs, cta.qb, ld_in, dh, vec != 0, scale, [&](int t) {
    return t < cta.rows ? cta.ord[cta.p0 + t] : -1;
  });
  __syncthreads();
  uint32_t qa[KD][4];
  attn_tf32_q_frags<KD, LDQ>(qa, Qs, row0, t4);
  int qt[2], qbk[2];
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    const int t = row0 + 8 * hr;
    qt[hr] = t < cta.rows ? cta.ord[cta.p0 + t] : -1;
    qbk[hr] = qt[hr] >= 0 ? cta.bk[qt[hr]] : -1;
  }
  float mrow[2] = {neg_big<float>(), neg_big<float>()}, lrow[2] = {0.f, 0.f};
  float oacc[KD][4];
  attn_mma_zero(oacc);

  for (int k0 = cta.lo; k0 < cta.hi; k0 += BK) {
    lsh_stage_keys<float, DH, BK, LDQ, LDV, NT, true>(Ks, Vs, kpos, kbkt, cta.knb, cta.vb, ld_in,
                                                      dh, vec != 0, k0, cta.hi, cta.ord, cta.bk,
                                                      cta.kpmRow);
    __syncthreads();

    float sacc[NS][4];
    attn_tf32_scores<NS, KD, LDQ, Exact>(sacc, qa, Ks, g, t4, dh);
    attn_mma_softmax_step(
        sacc, mrow, lrow, oacc, kAttnLog2e,
        [&](int hr, int n, int e) {
          const int jj = 8 * n + 2 * t4 + e, u = kpos[jj];
          return qt[hr] >= 0 && u >= 0 && u != qt[hr] && !(causal && u > qt[hr]) &&
                 (!same_bucket || kbkt[jj] == qbk[hr]);
        },
        [&](int hr, int n, int e, float p) {
          Ps[(row0 + 8 * hr) * LDP + 8 * n + 2 * t4 + e] = p;
          return p;
        });
    __syncwarp(); // Ps rows are private to their warp
    if (drop.on()) {
      lsh_tile_dropout<float, BK, LDP>(Ps, kpos, cta.rows, cta.ord, cta.p0, cta.task, Tn, drop);
      __syncwarp();
    }
    attn_tf32_pv<NS, KD, LDP, LDV, Exact>(oacc, Ps, Vs, row0, g, t4, dh);
    __syncthreads(); // before the next tile overwrites Ks, Vs, kpos, kbkt
  }

  attn_mma_finish_rows<float, KD, Exact>(
      mrow, lrow, oacc, t4, dh, lse_r,
      [&](int hr) { return qt[hr] < 0 ? nullptr : o_r + (cta.task * Tn + qt[hr]) * dh; },
      [&](int hr) { return cta.task * Tn + qt[hr]; });
}

/// out[b, t, h*dh + d] = sum_r w_r o_r[b, h, r, t, d], w = softmax of the
/// rounds' log-sum-exps (lse_round_weights); a query that no round offers
/// another key attends to itself alone (lsh_self_only), if not padded: out
/// = (mean of its rounds' dropout multipliers) v, lse = lsh_self_lse. `lse`
/// (optional) [B, H, T]: the combined log-sum-exp (logsumexp_rounds), as
/// the CPU forward writes it. v, qk and out in T, the rest in acc_t<T>;
/// L: lse's element type (acc_t<T>, or bf16_t: rounded once).
template <typename T, typename L = acc_t<T>>
__global__ void lsh_combine_kernel(int B, int Tn, int H, int dh, int rounds,
                                   const acc_t<T> *__restrict__ o_r,
                                   const acc_t<T> *__restrict__ lse_r,
                                   const T *__restrict__ v, int64_t ld_in,
                                   const uint8_t *kpm, T *out, int64_t ld_out,
                                   const T *__restrict__ qk, const acc_t<T> *__restrict__ kn,
                                   acc_t<T> scale, L *lse,
                                   AttentionDropout<acc_t<T>> drop) {
  using A = acc_t<T>;
  // One warp per (b, t, h) row, lanes over the head's columns (coalesced
  // o_r, v and out rows); every lane forms the row's round weights.
  const int64_t n = (int64_t)B * Tn * H;
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5);
  for (int64_t i = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5; i < n; i += warps) {
    const int64_t h = i % H, t = (i / H) % Tn, b = i / ((int64_t)H * Tn);
    const int64_t task0 = (b * H + h) * rounds;
    A l[kLshMaxRounds], w[kLshMaxRounds];
    for (int r = 0; r < rounds; ++r)
      l[r] = lse_r[(task0 + r) * Tn + t];
    T *orow = out + (b * Tn + t) * ld_out + h * dh;
    // Self is never in the future: only padding can mask it. A padded
    // query with no other key falls through to all-zero round weights.
    if (lsh_self_only(l, rounds) &&
        key_admissible((int)t, (int)t, false, kpm ? kpm + b * Tn : nullptr)) {
      const T *vr = v + (b * Tn + t) * ld_in + h * dh;
      const T *x = qk + (b * Tn + t) * ld_in + h * dh;
      const A *kr = kn + ((b * H + h) * Tn + t) * dh;
      A mult = A(0), s = A(0);
      for (int r = 0; r < rounds; ++r)
        mult += drop.mult((uint64_t)(((task0 + r) * Tn + t) * Tn + t));
      mult /= A(rounds);
      for (int d = lane; d < dh; d += 32) {
        orow[d] = store_acc<T>(mult * load_acc(vr[d]));
        s += load_acc(x[d]) * kr[d];
      }
      s = warp_sum(s);
      if (lse && lane == 0)
        lse[(b * H + h) * Tn + t] = store_acc<L>(lsh_self_lse(s * scale, rounds));
      continue;
    }
    lse_round_weights(l, rounds, w);
    if (lse && lane == 0)
      lse[(b * H + h) * Tn + t] = store_acc<L>(logsumexp_rounds(l, rounds));
    for (int d = lane; d < dh; d += 32) {
      A s = A(0);
      for (int r = 0; r < rounds; ++r)
        s += w[r] * o_r[((task0 + r) * Tn + t) * dh + d];
      orow[d] = store_acc<T>(s);
    }
  }
}


//===----------------------------------------------------------------------===//
// Hugging Face's conventions (NNCC_LSH_HF; docs/kernels.md "LSH")
//===----------------------------------------------------------------------===//
//
// The twin of the CPU's hfForward / hfBackward (LshAttention.cpp): keys
// k = qk / sqrt(|qk|^2 + dh 1e-6), per-head rotations [H, dh, R, nb/2],
// padded positions in bucket nb, the rounds' sorted entries as one sequence
// of N = R T with one chunk of look-back wrapping across rounds (T >
// chunk), or one plain attention over all T (T <= chunk); the self score
// lsh_hf_self_score(). Launched when the launchers' `flags` carry
// kLshHfConvention: the entry kernel (one thread per (b, h, sorted
// entry)), then the combination over the rounds. Plain per-thread loops
// over global memory, no tiles: correct first, not yet tuned.

/// Bits of the launchers' `same_bucket` argument (0 or 1 before the HF
/// convention existed, so those calls keep their meaning).
constexpr int kLshSameBucket = 1;
constexpr int kLshHfConvention = 2;

/// The sorted sequence of one head under the HF convention (hfPlan's).
struct LshHfGeom {
  int Tn, C, Rq;
  int64_t N, nc;
  bool chunked;
};
NNCC_HD LshHfGeom lsh_hf_geom(int Tn, int chunk, int rounds) {
  LshHfGeom g;
  g.Tn = Tn;
  g.chunked = Tn > chunk;
  g.Rq = g.chunked ? rounds : 1;
  g.N = (int64_t)g.Rq * Tn;
  g.C = g.chunked ? chunk : (Tn > 0 ? Tn : 1);
  g.nc = (g.N + g.C - 1) / g.C;
  return g;
}
/// Position of sorted entry P (ordTask: the head's [R, T] sorted orders).
__device__ __forceinline__ int lsh_hf_pos(const LshHfGeom &g, const int32_t *ordTask, int64_t P) {
  return g.chunked ? ordTask[P] : (int)P;
}
/// Sorted entry of position t's round-r entry (rankTask: [R, T] ranks).
__device__ __forceinline__ int64_t lsh_hf_entry(const LshHfGeom &g, const int32_t *rankTask,
                                                int r, int t) {
  return g.chunked ? (int64_t)r * g.Tn + rankTask[(int64_t)r * g.Tn + t] : (int64_t)t;
}
/// Chunk c's entries [lo, hi) and its look-back chunk's [plo, phi).
__device__ __forceinline__ void lsh_hf_window(const LshHfGeom &g, int64_t c, int64_t &lo,
                                              int64_t &hi, int64_t &plo, int64_t &phi) {
  lo = c * g.C;
  hi = lo + g.C < g.N ? lo + g.C : g.N;
  plo = phi = 0;
  if (g.chunked) {
    plo = ((c + g.nc - 1) % g.nc) * g.C;
    phi = plo + g.C < g.N ? plo + g.C : g.N;
  }
}

/// HF keys: kn = qk / sqrt(|qk|^2 + dh eps) (lsh_hf_inv_norm), inv_norm
/// that factor when given. One warp per row, as lsh_normalize_keys_kernel.
template <typename T>
__global__ void lsh_hf_normalize_keys_kernel(int B, int Tn, int H, int dh,
                                             const T *__restrict__ qk, int64_t ld_in,
                                             acc_t<T> *__restrict__ kn, acc_t<T> *inv_norm) {
  using A = acc_t<T>;
  const int64_t rows = (int64_t)B * H * Tn;
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5);
  for (int64_t i = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5; i < rows;
       i += warps) {
    const int64_t t = i % Tn, h = (i / Tn) % H, b = i / ((int64_t)Tn * H);
    const T *x = qk + (b * Tn + t) * ld_in + h * dh;
    A ss = A(0);
    for (int d = lane; d < dh; d += 32)
      ss += load_acc(x[d]) * load_acc(x[d]);
    ss = warp_sum(ss);
    const A inv = lsh_hf_inv_norm(ss, dh);
    for (int d = lane; d < dh; d += 32)
      kn[i * dh + d] = load_acc(x[d]) * inv;
    if (inv_norm && lane == 0)
      inv_norm[i] = inv;
  }
}

/// buckets[b, h, r, t]: lsh_bucket_strided of the widened row against head
/// h's rotations of round r (rot [H, dh, R, nb2] in acc_t<T>), nbuckets for
/// a padded position.
template <typename T>
__global__ void lsh_hf_bucket_kernel(int B, int Tn, int H, int dh, int rounds, int nbuckets,
                                     const T *__restrict__ qk, int64_t ld_in,
                                     const acc_t<T> *__restrict__ rot, const uint8_t *kpm,
                                     int32_t *buckets) {
  using A = acc_t<T>;
  const int nb2 = nbuckets / 2;
  const int64_t ldr = (int64_t)rounds * nb2;
  const int64_t n = (int64_t)B * H * rounds * Tn;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t t = i % Tn, r = (i / Tn) % rounds, h = (i / ((int64_t)Tn * rounds)) % H,
                  b = i / ((int64_t)Tn * rounds * H);
    if (kpm && kpm[b * Tn + t]) {
      buckets[i] = nbuckets;
      continue;
    }
    const T *x = qk + (b * Tn + t) * ld_in + h * dh;
    const A *R = rot + h * dh * ldr + r * nb2;
    // lsh_bucket_strided on the widened row (same sums, same ties).
    int imax = 0, imin = 0;
    A vmax = neg_big<A>(), vmin = -neg_big<A>();
    for (int c = 0; c < nb2; ++c) {
      A sc = A(0);
      for (int d = 0; d < dh; ++d)
        sc += load_acc(x[d]) * R[d * ldr + c];
      if (sc > vmax) {
        vmax = sc;
        imax = c;
      }
      if (sc < vmin) {
        vmin = sc;
        imin = c;
      }
    }
    buckets[i] = (-vmin > vmax) ? nb2 + imin : imax;
  }
}

/// rank[task, ord[task, p]] = p for every (b, h, round) task of n = B H R T.
static __global__ void lsh_hf_rank_kernel(int64_t n, int Tn, const int32_t *__restrict__ order,
                                          int32_t *__restrict__ rank) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    rank[(i / Tn) * Tn + order[i]] = (int32_t)(i % Tn);
}

/// Score of query row q (widened on the fly) with key u of head knb.
template <typename T>
__device__ __forceinline__ acc_t<T> lsh_hf_dot(const T *q, const acc_t<T> *knb, int u, int dh) {
  acc_t<T> s = acc_t<T>(0);
  for (int d = 0; d < dh; ++d)
    s += load_acc(q[d]) * knb[(int64_t)u * dh + d];
  return s;
}

/// One thread per (b, h, sorted entry P): the entry's softmax over its
/// window (look-back chunk, then its own), o_e [B, H, N, dh] normalised,
/// lse_e [B, H, N]. Dropout counter of key u: (((b H + h) R + r) T + t) T + u.
template <typename T>
__global__ void lsh_hf_entry_kernel(int B, int Tn, int H, int dh, int rounds, int chunk,
                                    int causal, acc_t<T> scale, const T *__restrict__ qk,
                                    const T *__restrict__ v, int64_t ld_in,
                                    const acc_t<T> *__restrict__ kn,
                                    const int32_t *__restrict__ order, const uint8_t *kpm,
                                    acc_t<T> *o_e, acc_t<T> *lse_e,
                                    AttentionDropout<acc_t<T>> drop) {
  using A = acc_t<T>;
  const LshHfGeom g = lsh_hf_geom(Tn, chunk, rounds);
  const A selfScore = lsh_hf_self_score<A>();
  const int64_t n = (int64_t)B * H * g.N;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t task = i / g.N, P = i % g.N, b = task / H, h = task % H;
    const int32_t *ordT = order + task * rounds * Tn;
    const uint8_t *kpmRow = kpm ? kpm + b * Tn : nullptr;
    const A *knb = kn + task * Tn * dh;
    const int t = lsh_hf_pos(g, ordT, P);
    const int r = g.chunked ? (int)(P / Tn) : 0;
    const T *q = qk + (b * Tn + t) * ld_in + h * dh;
    int64_t lo, hi, plo, phi;
    lsh_hf_window(g, P / g.C, lo, hi, plo, phi);
    auto score = [&](int u, A &sc) -> bool {
      if (u == t) {
        sc = selfScore;
        return true;
      }
      if (!key_admissible(t, u, causal != 0, kpmRow))
        return false;
      sc = lsh_hf_dot(q, knb, u, dh) * scale;
      return true;
    };
    A m = neg_big<A>();
    for (int pass = 0; pass < 2; ++pass)
      for (int64_t Q = pass ? lo : plo; Q < (pass ? hi : phi); ++Q) {
        A sc;
        if (score(lsh_hf_pos(g, ordT, Q), sc))
          m = sc > m ? sc : m;
      }
    A *orow = o_e + (task * g.N + P) * dh;
    for (int d = 0; d < dh; ++d)
      orow[d] = A(0);
    const uint64_t rc = (uint64_t)(((task * rounds + r) * Tn + t) * (int64_t)Tn);
    A l = A(0);
    for (int pass = 0; pass < 2; ++pass)
      for (int64_t Q = pass ? lo : plo; Q < (pass ? hi : phi); ++Q) {
        const int u = lsh_hf_pos(g, ordT, Q);
        A sc;
        if (!score(u, sc))
          continue;
        const A e = nexp(sc - m);
        l += e;
        const A w = e * drop.mult(rc + (uint64_t)u);
        const T *vr = v + (b * Tn + u) * ld_in + h * dh;
        for (int d = 0; d < dh; ++d)
          orow[d] += w * load_acc(vr[d]);
      }
    const A inv = A(1) / l;
    for (int d = 0; d < dh; ++d)
      orow[d] *= inv;
    lse_e[task * g.N + P] = m + nlog(l);
  }
}

/// out[b, t, h dh + d] = sum_r softmax_r(lse_r) o_r over position t's round
/// entries; lse (optional) [B, H, T] their logsumexp_rounds.
template <typename T, typename L = acc_t<T>>
__global__ void lsh_hf_combine_kernel(int B, int Tn, int H, int dh, int rounds, int chunk,
                                      const acc_t<T> *__restrict__ o_e,
                                      const acc_t<T> *__restrict__ lse_e,
                                      const int32_t *__restrict__ rank, T *out, int64_t ld_out,
                                      L *lse) {
  using A = acc_t<T>;
  const LshHfGeom g = lsh_hf_geom(Tn, chunk, rounds);
  const int64_t n = (int64_t)B * Tn * H;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t h = i % H, t = (i / H) % Tn, b = i / ((int64_t)H * Tn);
    const int64_t task = b * H + h;
    const int32_t *rankT = rank + task * rounds * Tn;
    A l[kLshMaxRounds], w[kLshMaxRounds];
    int64_t e[kLshMaxRounds];
    for (int r = 0; r < g.Rq; ++r) {
      e[r] = task * g.N + lsh_hf_entry(g, rankT, r, (int)t);
      l[r] = lse_e[e[r]];
    }
    lse_round_weights(l, g.Rq, w);
    if (lse)
      lse[task * Tn + t] = store_acc<L>(logsumexp_rounds(l, g.Rq));
    T *orow = out + (b * Tn + t) * ld_out + h * dh;
    for (int d = 0; d < dh; ++d) {
      A s = A(0);
      for (int r = 0; r < g.Rq; ++r)
        s += w[r] * o_e[e[r] * dh + d];
      orow[d] = store_acc<T>(s);
    }
  }
}

/// Keys (kn, and inv_norm when given), buckets, the stable sort (padded
/// positions last, in bucket nbuckets) and the ranks of the HF convention.
/// Without chunking (T <= chunk) only the keys.
template <typename T>
inline cudaError_t lsh_hf_prepare(int dh, int B, int Tn, int H, int rounds, int nbuckets,
                                  int chunk, const T *qk, int64_t ld_in, const acc_t<T> *rot,
                                  const uint8_t *kpm, acc_t<T> *kn, acc_t<T> *inv_norm,
                                  int32_t *bk, int32_t *ord, int32_t *rank,
                                  cudaStream_t stream) {
  const int64_t bhrt = (int64_t)B * H * rounds * Tn;
  lsh_hf_normalize_keys_kernel<T><<<grid_for((int64_t)B * H * Tn * 32, 256), 256, 0, stream>>>(
      B, Tn, H, dh, qk, ld_in, kn, inv_norm);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess || Tn <= chunk)
    return e;
  lsh_hf_bucket_kernel<T><<<grid_for(bhrt, 256), 256, 0, stream>>>(
      B, Tn, H, dh, rounds, nbuckets, qk, ld_in, rot, kpm, bk);
  if ((e = cudaGetLastError()) != cudaSuccess)
    return e;
  const size_t sortSmem = sizeof(int32_t) * (size_t)(nbuckets + 1);
  if (sortSmem > 48 * 1024 &&
      (e = cudaFuncSetAttribute(lsh_sort_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)sortSmem)) != cudaSuccess)
    return e;
  lsh_sort_kernel<<<(unsigned)((int64_t)B * H * rounds), 32, sortSmem, stream>>>(
      Tn, nbuckets + 1, bk, ord);
  if ((e = cudaGetLastError()) != cudaSuccess)
    return e;
  lsh_hf_rank_kernel<<<grid_for(bhrt, 256), 256, 0, stream>>>(bhrt, Tn, ord, rank);
  return cudaGetLastError();
}

/// The HF forward into the launchers' scratch (lsh_attention_scratch_bytes:
/// keys, buckets then ranks, order, per-entry outputs and lse).
template <typename T, typename L>
inline cudaError_t lsh_hf_forward(int dh, int B, int Tn, int H, int rounds, int nbuckets,
                                  int chunk, int causal, acc_t<T> scale, const T *qk,
                                  const T *v, int64_t ld_in, const acc_t<T> *rot, T *out,
                                  int64_t ld_out, const uint8_t *kpm, L *lse,
                                  const AttentionDropout<acc_t<T>> &drop, void *scratch,
                                  cudaStream_t stream) {
  using A = acc_t<T>;
  const int64_t bhrt = (int64_t)B * H * rounds * Tn;
  char *base = static_cast<char *>(scratch);
  A *kn = reinterpret_cast<A *>(base);
  base += lsh_align((int64_t)B * H * Tn * dh * sizeof(A));
  int32_t *bk = reinterpret_cast<int32_t *>(base); // buckets, then the ranks
  base += lsh_align(bhrt * 4);
  int32_t *ord = reinterpret_cast<int32_t *>(base);
  base += lsh_align(bhrt * 4);
  A *o_e = reinterpret_cast<A *>(base);
  base += lsh_align(bhrt * dh * sizeof(A));
  A *lse_e = reinterpret_cast<A *>(base);
  // The ranks overwrite the buckets: nothing reads those after the sort.
  cudaError_t e = lsh_hf_prepare<T>(dh, B, Tn, H, rounds, nbuckets, chunk, qk, ld_in, rot, kpm,
                                    kn, (A *)nullptr, bk, ord, bk, stream);
  if (e != cudaSuccess)
    return e;
  const LshHfGeom g = lsh_hf_geom(Tn, chunk, rounds);
  lsh_hf_entry_kernel<T><<<grid_for((int64_t)B * H * g.N, 128), 128, 0, stream>>>(
      B, Tn, H, dh, rounds, chunk, causal, scale, qk, v, ld_in, kn, ord, kpm, o_e, lse_e, drop);
  if ((e = cudaGetLastError()) != cudaSuccess)
    return e;
  lsh_hf_combine_kernel<T, L><<<grid_for((int64_t)B * Tn * H, 128), 128, 0, stream>>>(
      B, Tn, H, dh, rounds, chunk, o_e, lse_e, bk, out, ld_out, lse);
  return cudaGetLastError();
}

template <typename T, int DH, bool Exact>
inline void lsh_launch_chunks(dim3 grid, cudaStream_t stream, int Tn, int H, int rounds,
                              int chunk, int causal, int same_bucket, acc_t<T> scale,
                              const T *qk, const T *v, int64_t ld_in, const acc_t<T> *kn,
                              const int32_t *bk, const int32_t *ord, const uint8_t *kpm,
                              acc_t<T> *o_r, acc_t<T> *lse_r, int dh,
                              const AttentionDropout<acc_t<T>> &drop) {
  constexpr int BK = attn_tile_keys<acc_t<T>, DH>();
  lsh_chunk_attention_kernel<T, DH, 64, BK, Exact><<<grid, 64, 0, stream>>>(
      Tn, H, rounds, chunk, causal, same_bucket, scale, qk, v, ld_in, kn, bk, ord, kpm,
      o_r, lse_r, dh, drop);
}

/// The five launches of LSH attention (see the top of this file) with
/// dropout `drop` (off: inference) and the combined log-sum-exp into `lse`
/// (may be NULL; L = acc_t<T>, or bf16_t for bf16: rounded once). Arguments
/// as launch_lsh_attention.
template <typename T, int DHS = 0, typename L = acc_t<T>>
inline cudaError_t lsh_attention_forward(int dh, int B, int Tn, int H, int rounds,
                                         int nbuckets, int chunk, int causal, acc_t<T> scale,
                                         int same_bucket, const T *qk, const T *v,
                                         int64_t ld_in, const acc_t<T> *rot, T *out,
                                         int64_t ld_out, const uint8_t *kpm, L *lse,
                                         const AttentionDropout<acc_t<T>> &drop, void *scratch,
                                         cudaStream_t stream) {
  using A = acc_t<T>;
  static_assert(std::is_same_v<L, A> || std::is_same_v<L, T>, "lse in acc_t<T> or T");
  if (dh <= 0 || dh > kMaxHeadDim || (DHS != 0 && dh != DHS) || rounds < 1 ||
      rounds > kLshMaxRounds || nbuckets < 2 || nbuckets % 2 || chunk < 1 ||
      same_bucket < 0 || same_bucket > kLshHfConvention) // HF: no same-bucket mask
    return cudaErrorInvalidValue;
  if (B <= 0 || Tn <= 0)
    return cudaSuccess;
  if (same_bucket & kLshHfConvention)
    return lsh_hf_forward<T, L>(dh, B, Tn, H, rounds, nbuckets, chunk, causal, scale, qk, v,
                                ld_in, rot, out, ld_out, kpm, lse, drop, scratch, stream);
  const int64_t bhrt = (int64_t)B * H * rounds * Tn;
  char *base = static_cast<char *>(scratch);
  A *kn = reinterpret_cast<A *>(base);
  base += lsh_align((int64_t)B * H * Tn * dh * sizeof(A));
  int32_t *bk = reinterpret_cast<int32_t *>(base);
  base += lsh_align(bhrt * 4);
  int32_t *ord = reinterpret_cast<int32_t *>(base);
  base += lsh_align(bhrt * 4);
  A *o_r = reinterpret_cast<A *>(base);
  base += lsh_align(bhrt * dh * sizeof(A));
  A *lse_r = reinterpret_cast<A *>(base);

  cudaError_t e;
  if ((e = lsh_normalize_keys<T>(B, Tn, H, dh, qk, ld_in, kn, (A *)nullptr, stream)) !=
      cudaSuccess)
    return e;
  if constexpr (is_bf16_v<T>) {
    const int64_t bht = (int64_t)B * H * Tn;
    // 256 threads: 8 warps, a widened row each.
    lsh_bucket_widened_kernel<T><<<grid_for(bht * 32, 256), 256, 8 * sizeof(A) * dh, stream>>>(
        B, Tn, H, dh, rounds, nbuckets / 2, qk, ld_in, rot, bk);
  } else {
    lsh_bucket_kernel<T><<<grid_for(bhrt, 256), 256, 0, stream>>>(
        B, Tn, H, dh, rounds, nbuckets / 2, qk, ld_in, rot, bk);
  }
  if ((e = cudaGetLastError()) != cudaSuccess)
    return e;
  const size_t sortSmem = sizeof(int32_t) * (size_t)nbuckets;
  if (sortSmem > 48 * 1024 &&
      (e = cudaFuncSetAttribute(lsh_sort_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)sortSmem)) != cudaSuccess)
    return e;
  lsh_sort_kernel<<<(unsigned)((int64_t)B * H * rounds), 32, sortSmem, stream>>>(
      Tn, nbuckets, bk, ord);
  if ((e = cudaGetLastError()) != cudaSuccess)
    return e;
  const int nChunks = (Tn + chunk - 1) / chunk;
  if (dh <= kMaxTileHeadDim) {
    // The tile kernel (head size padded to 32/64/128).
    const int groups = (chunk + AttnTile<A, 32>::BQ - 1) / AttnTile<A, 32>::BQ;
    const dim3 grid((unsigned)((int64_t)nChunks * groups), (unsigned)(H * rounds), (unsigned)B);
    // k^ rows have stride dh (kn is 256-byte aligned scratch); bf16: 16-byte
    // loads of qk and v rows, then also of kn's (dh % 8 == 0).
    int vec;
    if constexpr (is_bf16_v<T>)
      vec = attn_vec_loads(qk, qk, v, ld_in, dh) && attn_vec_loads(kn, kn, kn, dh, dh) ? 1 : 0;
    else
      vec = attn_vec_loads(qk, kn, v, ld_in, dh) ? 1 : 0;
    e = attn_tile_dispatch<DHS>(dh, [&](auto dhTag, auto exactTag) -> cudaError_t {
      constexpr int DH = decltype(dhTag)::value;
      constexpr bool Exact = decltype(exactTag)::value;
      auto launch = [&](auto kern, size_t smem) -> cudaError_t {
        cudaError_t err =
            cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
        if (err != cudaSuccess)
          return err;
        kern<<<grid, 128, smem, stream>>>(Tn, H, rounds, chunk, causal, same_bucket, scale, qk,
                                          v, ld_in, kn, bk, ord, kpm, o_r, lse_r, dh, vec, drop);
        return cudaGetLastError();
      };
      static_assert(AttnTile<A, DH>::NT == 128, "128-thread CTAs");
      if constexpr (std::is_same_v<T, float>) // not bf16: the fp32 SIMT kernel
        if (attention_tf32_allowed())
          return launch(lsh_chunk_tile_tf32_kernel<DH, Exact>, lsh_chunk_tf32_smem_bytes<DH>());
      return launch(lsh_chunk_tile_kernel<T, DH, Exact>, lsh_chunk_tile_smem_bytes<A, DH>());
    });
    if (e != cudaSuccess)
      return e;
  } else if constexpr (DHS == 0) {
    // 128 < dh <= kMaxHeadDim: one query per thread.
    const dim3 grid((unsigned)nChunks, (unsigned)(H * rounds), (unsigned)B);
    lsh_launch_chunks<T, kMaxHeadDim, false>(grid, stream, Tn, H, rounds, chunk, causal,
                                             same_bucket, scale, qk, v, ld_in, kn, bk, ord, kpm,
                                             o_r, lse_r, dh, drop);
    if ((e = cudaGetLastError()) != cudaSuccess)
      return e;
  } else {
    return cudaErrorInvalidValue;
  }
  lsh_combine_kernel<T, L><<<grid_for((int64_t)B * Tn * H * 32, 256), 256, 0, stream>>>(
      B, Tn, H, dh, rounds, o_r, lse_r, v, ld_in, kpm, out, ld_out, qk, kn, scale, lse, drop);
  return cudaGetLastError();
}

/// nnk.lsh_attention on the GPU. qk/v: rows of stride ld_in (shared QK at
/// head columns of qk, values of v); rot [rounds, dh, nbuckets/2] on the
/// device, in acc_t<T> (lsh_rotations_kernel, lsh_rotations_acc); with
/// same_bucket = kLshHfConvention Hugging Face's convention (rot [H, dh,
/// rounds, nbuckets/2]; otherwise 0, or kLshSameBucket for nncc's
/// same-bucket mask); scratch:
/// lsh_attention_scratch_bytes(..., sizeof(acc_t<T>)). Returns the first
/// CUDA error, or cudaErrorInvalidValue for arguments the kernels do not
/// serve (dh > kMaxHeadDim, rounds > kLshMaxRounds, odd nbuckets, chunk < 1).
/// DHS = 32/64/128: only that head size's kernel is built (dh must match).
/// T = bf16_t: bf16 qk, v and out, fp32 arithmetic (see the top of the file).
template <typename T, int DHS = 0>
inline cudaError_t launch_lsh_attention(int dh, int B, int Tn, int H, int rounds,
                                        int nbuckets, int chunk, int causal, acc_t<T> scale,
                                        int same_bucket, const T *qk, const T *v,
                                        int64_t ld_in, const acc_t<T> *rot, T *out,
                                        int64_t ld_out, const uint8_t *kpm, void *scratch,
                                        cudaStream_t stream = 0) {
  return lsh_attention_forward<T, DHS>(dh, B, Tn, H, rounds, nbuckets, chunk, causal, scale,
                                       same_bucket, qk, v, ld_in, rot, out, ld_out, kpm,
                                       (acc_t<T> *)nullptr, AttentionDropout<acc_t<T>>(),
                                       scratch, stream);
}

/// Training forward of nnk.lsh_attention: launch_lsh_attention plus
/// attention dropout per hash round (rate, seed, step offset as
/// launch_flash_attention_train) and the combined log-sum-exp [B, H, T]
/// into `lse` (may be NULL). Same scratch. T = bf16_t: bf16 qk, v, out and
/// lse around the fp32 kernels, as the bf16 inference (see the top of the
/// file), the same dropout counters: exactly the f32 training forward's out
/// and lse for the widened inputs, rounded once.
template <typename T, int DHS = 0>
inline cudaError_t launch_lsh_attention_train(int dh, int B, int Tn, int H, int rounds,
                                              int nbuckets, int chunk, int causal,
                                              acc_t<T> scale, int same_bucket, const T *qk,
                                              const T *v, int64_t ld_in, const acc_t<T> *rot,
                                              T *out, int64_t ld_out, const uint8_t *kpm, T *lse,
                                              double dropout, uint64_t seed, uint64_t offset,
                                              void *scratch, cudaStream_t stream = 0) {
  if (!attention_dropout_valid(dropout))
    return cudaErrorInvalidValue;
  return lsh_attention_forward<T, DHS>(dh, B, Tn, H, rounds, nbuckets, chunk, causal, scale,
                                       same_bucket, qk, v, ld_in, rot, out, ld_out, kpm, lse,
                                       attention_dropout_of<acc_t<T>>(dropout, seed, offset),
                                       scratch, stream);
}

} // namespace cuda
} // namespace kernels
} // namespace nncc

#endif // NNCC_KERNELS_CUDA_LSHATTENTION_CUH
