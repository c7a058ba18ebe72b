//===- AttentionBackward.cuh - Backward of dense / dilated / LSH attention -*- CUDA -*-===//
//
// CUDA twins of nncc_attention_backward_* (runtime/lib/Kernels/
// AttentionBackward.cpp, DenseAttention.cpp; docs/kernels.md "Backward"),
// for nnk.attention_grad. Same operands, layouts, masks, dropout counters
// and scaling as the CPU. With c the dropout multiplier (1 without dropout),
// p = exp(scale q.k - lse), D_i = dO_i . O_i:
//   dv_j += c p dO_i,  ds = scale softmax_score_grad(p, c dO_i.v_j, D_i),
//   dq_i += ds k_j,    dk_j += ds q_i.
//
// Saved / recomputed forward (as the CPU): with `saved_lse` (the training
// forward's log-sum-exp [B, H, T]) `saved_out` is the forward's output and
// nothing of the forward runs again; without, the training forward
// (Attention.cuh / LshAttention.cuh, same dropout) runs first into the
// scratch (its output into `core` when given, for the out-projection's
// weight gradient) and the backward then reads it.
//
// Deterministic, no atomics: every output element has one owner thread
// that adds its terms in a fixed order.
//   dense, dh 32/64/128: D per row; FlashAttention-2's two kernels on the
//            forward's register micro-tiles (below, "CTA-tiled backward"):
//            attention_tile_bwd_dkdv_kernel (a CTA owns a tile of keys,
//            K/V in shared memory, walks the query tiles that see them:
//            Q, dO, lse, D staged; causal tiles before the keys skipped;
//            dK, dV accumulated in registers) and
//            attention_tile_bwd_dq_kernel (a CTA owns 64 queries, walks
//            their K/V tiles; dQ in registers); P and dS recomputed in both
//            from the kept log-sum-exp (no T x T buffer).
//   dilated, dh 32/64/128: the same kernels in band mode (the forward's
//            kAttnTileBand: a CTA's rows are one residue class, their
//            partners one contiguous range of that class plus the global
//            tokens outside each band), and attention_bwd_global_kernel
//            for the rows of global tokens (dQ of a global query over
//            every key, dK/dV of a global key over every query).
//   other head sizes (<= kMaxHeadDim): one thread per row, whole head rows
//            in registers (flash_attention_bwd_{dkdv,dq}_kernel;
//            dilated_attention_bwd_{dq,dkdv}_kernel over each query's keys,
//            for_each_dilated_key, and each key's queries,
//            for_each_dilated_query, the exact mirror): O(T (w + |G|)).
//   LSH:     keys normalised, buckets and the stable sort recomputed (the
//            forward's kernels), each position's rank per round, the
//            self-only flags (Reformer's self mask); then, dh <= 128 (padded
//            to 32/64/128 as the forward's tile kernel), the same micro-tiles
//            one hash round per launch: lsh_tile_bwd_key_kernel (a CTA owns
//            64 sorted keys of a chunk, k^ and V staged once, and walks the
//            query tiles of its own and the next chunk, gathered by sorted
//            position: dV and dk^ added to the previous rounds' in the same
//            rows; the last round turns dk^ into the key-path gradient
//            through k^ = qk/|qk|, unit_norm_grad) R times, then
//            lsh_tile_bwd_query_kernel (64 sorted queries against the key
//            tiles of their own and the previous chunk; dqk summed over the
//            rounds, the last adding the key path of its own row) R times.
//            dh > 128: one thread per key, then per query, over every
//            round (lsh_attention_bwd_{key,query}_kernel), terms in the
//            CPU's order. O(R T) scratch (no per-round gradient copies).
//
// Tile shapes (AttnBwdTile; 128 threads, BC = 32 columns per tile) and
// ptxas -v registers, dense / band (sm_90, CUDA 13.0; no spills unless
// said, spills as bytes stored / loaded):
//   T, dh     dK/dV: keys, registers          dQ: queries, registers
//   f32, 32   64, 128 / 128 (band 12/20 B)    64, 128 / 128
//   f32, 64   64, 168 / 168                   64, 168 / 168
//   f32, 128  32, 128 (8/8 B) / 168           64, 168 (4/8 B) / 230
//   f64, 32   64, 230 / 234                   64, 176 / 176
//   f64, 64   32, 168 / 164                   64, 242 / 246
//   f64, 128  16, 168 / 134                   32, 174 / 168
// attention_bwd_global_kernel: 32-48 registers (f32 dh 32 query side 4/4 B
// spilled). LSH tile kernels (key / query, exact dh): f32 32: 128 (4/4 B) /
// 128 (4/20 B); f32 64: 168 / 168; f32 128: 128 (16/32 B) / 168; f64: 138-240
// / 166-255, no spills; padded dh adds up to 20/80 B (f32 128 query side). The one-thread-per-row kernels these replace at dh 32/64/128
// used 168-255 registers and spilled everywhere but f32 dh 32 (f32 dh 64,
// dK/dV / dQ: 400 / 104 B dense, 564 / 276 B dilated; f64 dh 128: up to
// 20 KB); they remain for other head sizes (dh 256 kernels: 2.2-31 KB).
//
// bf16 (T = bf16_t): dense and dilated attention at dh 32/64/128 on BF16
// tensor cores (below, "bf16: the dense and band backward on BF16 tensor
// cores": the forward recomputed by attention_tile_bf16_kernel, then
// FlashAttention-2's dK/dV and dQ kernels on m16n8k16 mma, fp32
// accumulation, dense or band mode, the dilated global rows in fp32; P and
// dS rounded to bf16 as mma operands, so within a tolerance of the f32
// gradients, not bit for bit). Every other case (other head sizes, LSH):
// the f32 launcher in recompute mode on fp32 copies of the inputs in the
// workspace, outputs rounded once (below, "bf16: the fp32 backward on
// widened copies"): bit for bit the f32 gradients of the widened inputs,
// rounded; fp32 SIMT throughout.
//
// Status: compiled with nvcc (sm_90, -Werror all-warnings) for fp32 and
// fp64; fp32 ran on an H100 in the seed models' training steps (docs/cuda.md,
// "First run on an H100 (2026-11-26)"), fp64 has not run on a GPU. bf16:
// compiled with nvcc, tested under the host emulation
// (cuda-emu-attention-train-bf16.test); the widened path ran on an H200 in
// the bf16 training steps of BERT-small, the reversible dilated BERT and
// the Reformer (docs/design.md, "Precisions"); the tensor-core backward
// is tested under the emulation only, not yet on a GPU.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_CUDA_ATTENTIONBACKWARD_CUH
#define NNCC_KERNELS_CUDA_ATTENTIONBACKWARD_CUH

#include "nncc/Kernels/AttentionMath.h"
#include "nncc/Kernels/BackwardMath.h"
#include "nncc/Kernels/CUDA/Attention.cuh"
#include "nncc/Kernels/CUDA/LshAttention.cuh"

#include <type_traits>

namespace nncc {
namespace kernels {
namespace cuda {

//===----------------------------------------------------------------------===//
// Shared pieces
//===----------------------------------------------------------------------===//

/// Byte offsets of a workspace carved in 256-byte aligned pieces; with a
/// null base it only counts (the *_workspace_bytes functions), so the size
/// and the layout come from the same code.
struct AttnScratch {
  char *base = nullptr;
  int64_t used = 0;
  char *take(int64_t bytes) {
    char *p = base ? base + used : nullptr;
    used += lsh_align(bytes > 0 ? bytes : 0);
    return p;
  }
};

//===----------------------------------------------------------------------===//
// bf16: the fp32 backward on widened copies
//
// The bf16 launchers (T = bf16_t: bf16 q, k, v, dout, gradients and core,
// fp32 scale and LSH rotations; but dense and dilated at dh 32/64/128,
// "bf16: the dense and band backward on BF16 tensor cores") widen q, k, v
// and dout into fp32 copies in their workspace, run the f32 launcher on
// them in recompute mode (the
// saved bf16 lse, 8 significant bits, is too coarse for exp(s - lse): the
// saved output and lse are never read) inside an AttentionNoTf32Scope (the
// fp32 SIMT forward, as the bf16 training forward), then round dq, dk, dv
// and the recomputed output (into `core` when given) once. So every bf16
// output is exactly the f32 launcher's (recompute mode) for the widened
// inputs, rounded. The *_workspace_bytes functions give this layout for
// elem == sizeof(bf16_t), whatever `recompute` says (dense and dilated at
// dh 32/64/128: attention_bf16_tc_backward_layout): the f32 launcher's
// recompute-mode scratch, then the fp32 copies (attention_bf16_backward_layout).
//===----------------------------------------------------------------------===//

/// Workspace of a bf16 backward: `f32` (f32_bytes: the f32 launcher's
/// scratch), then fp32 [rows, E] copies (row stride E), 256-byte aligned
/// each, of the nin inputs (q, k, v, dout; LSH: qk, v, dout) and the ngrad
/// gradients (dq, dk, dv; LSH: dqk, dv), in that order.
struct AttnBf16BackwardLayout {
  char *f32 = nullptr;
  char *in[4] = {nullptr, nullptr, nullptr, nullptr};
  char *grad[3] = {nullptr, nullptr, nullptr};
  int64_t bytes = 0;
};
inline AttnBf16BackwardLayout attention_bf16_backward_layout(char *base, int64_t rows, int64_t E,
                                                             int64_t f32_bytes, int nin,
                                                             int ngrad) {
  AttnScratch a{base};
  AttnBf16BackwardLayout l;
  l.f32 = a.take(f32_bytes);
  for (int i = 0; i < nin; ++i)
    l.in[i] = a.take(rows * E * (int64_t)sizeof(float));
  for (int i = 0; i < ngrad; ++i)
    l.grad[i] = a.take(rows * E * (int64_t)sizeof(float));
  l.bytes = a.used;
  return l;
}

/// Up to four [rows, cols] row blocks to convert (blockIdx.y picks one),
/// each with its own row strides.
struct AttnRowBlocks {
  const void *src[4];
  void *dst[4];
  int64_t ld_src[4], ld_dst[4];
};

/// dst[r, c] = src[r, c] as To (load_acc, then store_acc<To>: bf16 widened
/// exactly, or fp32 rounded once to nearest even) for block blockIdx.y.
template <typename From, typename To>
__global__ void attn_convert_rows_kernel(int64_t rows, int cols, AttnRowBlocks blk) {
  const int y = blockIdx.y;
  const From *src = static_cast<const From *>(blk.src[y]);
  To *dst = static_cast<To *>(blk.dst[y]);
  const int64_t lds = blk.ld_src[y], ldd = blk.ld_dst[y], n = rows * cols;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = i / cols, c = i % cols;
    dst[r * ldd + c] = store_acc<To>(load_acc(src[r * lds + c]));
  }
}

/// The row blocks (src, ld_src, dst, ld_dst) whose src and dst are both
/// given, converted From -> To in one launch.
template <typename From, typename To, int N>
inline cudaError_t attn_convert_rows(int64_t rows, int cols, const From *const (&src)[N],
                                     const int64_t (&ld_src)[N], To *const (&dst)[N],
                                     const int64_t (&ld_dst)[N], cudaStream_t stream) {
  static_assert(N <= 4, "four blocks per launch");
  AttnRowBlocks blk{};
  int n = 0;
  for (int i = 0; i < N; ++i)
    if (src[i] && dst[i]) {
      blk.src[n] = src[i];
      blk.dst[n] = dst[i];
      blk.ld_src[n] = ld_src[i];
      blk.ld_dst[n] = ld_dst[i];
      ++n;
    }
  if (n == 0 || rows <= 0 || cols <= 0)
    return cudaSuccess;
  attn_convert_rows_kernel<From, To>
      <<<dim3(grid_for(rows * cols, 256), (unsigned)n), 256, 0, stream>>>(rows, cols, blk);
  return cudaGetLastError();
}

/// A bf16 backward over the layout `l` (see above): widens q, k, v, dout
/// (k null: LSH's shared qk, no dk) into l.in, runs run(in, grad) (the f32
/// launcher in recompute mode on l.in / l.grad, row stride E, scratch l.f32)
/// without TF32, then rounds l.grad into dq, dk, dv and, when `core` is
/// given, the recomputed output out32 (row stride E) into it.
template <typename Run>
inline cudaError_t attn_bf16_backward(int64_t rows, int E, const bf16_t *q, const bf16_t *k,
                                      const bf16_t *v, int64_t ld_in, const bf16_t *dout,
                                      int64_t ld_dout, bf16_t *dq, bf16_t *dk, bf16_t *dv,
                                      int64_t ld_grad, bf16_t *core, const float *out32,
                                      const AttnBf16BackwardLayout &l, Run &&run,
                                      cudaStream_t stream) {
  auto f32 = [](char *p) { return reinterpret_cast<float *>(p); };
  const bool hasK = k != nullptr;
  float *q32 = f32(l.in[0]), *k32 = hasK ? f32(l.in[1]) : nullptr;
  float *v32 = f32(l.in[hasK ? 2 : 1]), *dout32 = f32(l.in[hasK ? 3 : 2]);
  float *dq32 = f32(l.grad[0]), *dk32 = hasK ? f32(l.grad[1]) : nullptr;
  float *dv32 = f32(l.grad[hasK ? 2 : 1]);
  cudaError_t e;
  if ((e = attn_convert_rows<bf16_t, float, 4>(rows, E, {q, k, v, dout},
                                               {ld_in, ld_in, ld_in, ld_dout},
                                               {q32, k32, v32, dout32}, {E, E, E, E},
                                               stream)) != cudaSuccess)
    return e;
  {
    AttentionNoTf32Scope noTf32;
    if ((e = run(q32, k32, v32, dout32, dq32, dk32, dv32)) != cudaSuccess)
      return e;
  }
  return attn_convert_rows<float, bf16_t, 4>(rows, E, {dq32, dk32, dv32, out32}, {E, E, E, E},
                                             {dq, dk, dv, core},
                                             {ld_grad, ld_grad, ld_grad, ld_dout}, stream);
}

/// Runs f(std::integral_constant<int, DH>, std::bool_constant<Exact>) for
/// head size dh: DHS = 32/64/128 builds only that kernel (dh must match);
/// DHS = 0: exact kernels for 32, 64, 128, the generic one (loops bounded
/// by the run-time dh) for any other dh <= kMaxHeadDim. f returns the
/// launch's cudaError_t.
template <int DHS, typename F> inline cudaError_t attention_dispatch_dh(int dh, F &&f) {
  if constexpr (DHS != 0) {
    if (dh != DHS)
      return cudaErrorInvalidValue;
    return f(std::integral_constant<int, DHS>(), std::true_type());
  } else {
    switch (dh) {
    case 32:
      return f(std::integral_constant<int, 32>(), std::true_type());
    case 64:
      return f(std::integral_constant<int, 64>(), std::true_type());
    case 128:
      return f(std::integral_constant<int, 128>(), std::true_type());
    default:
      if (dh <= 0 || dh > kMaxHeadDim)
        return cudaErrorInvalidValue;
      return f(std::integral_constant<int, kMaxHeadDim>(), std::false_type());
    }
  }
}

/// sum_d a[d] b[d] over the head size (a in registers).
template <typename T, int DH, bool Exact>
__device__ __forceinline__ T attn_row_dot(const T (&a)[DH], const T *b, int dh) {
  T s = T(0);
#pragma unroll
  for (int d = 0; d < DH; ++d) {
    if (!Exact && d >= dh)
      break;
    s += a[d] * b[d];
  }
  return s;
}

/// acc[d] += w b[d] over the head size.
template <typename T, int DH, bool Exact>
__device__ __forceinline__ void attn_row_axpy(T (&acc)[DH], T w, const T *b, int dh) {
#pragma unroll
  for (int d = 0; d < DH; ++d) {
    if (!Exact && d >= dh)
      break;
    acc[d] += w * b[d];
  }
}

/// Loads a head row into registers (zeros past dh).
template <typename T, int DH>
__device__ __forceinline__ void attn_row_load(T (&r)[DH], const T *src, int dh, bool valid) {
#pragma unroll
  for (int d = 0; d < DH; ++d)
    r[d] = valid && d < dh ? src[d] : T(0);
}

/// The score adjoint of one (query, key) pair, as listBackward forms it:
/// s = q.k and dp = dO.v unscaled; p = exp(scale s - lse); returns ds
/// (scale included) and sets cp = c p, the weight of dO in dv.
template <typename T>
__device__ __forceinline__ T attn_pair_grad(T s, T dp, T scale, T lse, T Dq, T c, T &cp) {
  const T p = nexp(s * scale - lse);
  cp = c * p;
  return softmax_score_grad(p, c * dp, Dq) * scale;
}

/// A key's share of one (query, key) pair: dv += c p dO_q and dk += ds q
/// (the key's k, v and both accumulators in registers).
template <typename T, int DH, bool Exact>
__device__ __forceinline__ void attn_key_pair(const T (&kr)[DH], const T (&vr)[DH], const T *qr,
                                              const T *dor, T lse, T Dq, T scale, T c, int dh,
                                              T (&dka)[DH], T (&dva)[DH]) {
  const T s = attn_row_dot<T, DH, Exact>(kr, qr, dh);
  const T dp = attn_row_dot<T, DH, Exact>(vr, dor, dh);
  T cp;
  const T ds = attn_pair_grad(s, dp, scale, lse, Dq, c, cp);
  attn_row_axpy<T, DH, Exact>(dva, cp, dor, dh);
  attn_row_axpy<T, DH, Exact>(dka, ds, qr, dh);
}

/// A query's share of one (query, key) pair: dq += ds k (the query's q, dO
/// and the accumulator in registers).
template <typename T, int DH, bool Exact>
__device__ __forceinline__ void attn_query_pair(const T (&qr)[DH], const T (&dor)[DH],
                                                const T *kr, const T *vr, T lse, T Dq, T scale,
                                                T c, int dh, T (&acc)[DH]) {
  const T s = attn_row_dot<T, DH, Exact>(qr, kr, dh);
  const T dp = attn_row_dot<T, DH, Exact>(dor, vr, dh);
  T cp;
  attn_row_axpy<T, DH, Exact>(acc, attn_pair_grad(s, dp, scale, lse, Dq, c, cp), kr, dh);
}

/// D[b, h, t] = dO_t . O_t over head h in acc_t<T> (bf16 widened): one
/// warp per row (lanes over the head's columns: coalesced reads), the
/// lanes' partial sums added by a fixed shuffle tree (deterministic).
template <typename T>
__global__ void attention_bwd_rowdot_kernel(int B, int Tn, int H, int dh,
                                            const T *__restrict__ dout, int64_t ld_dout,
                                            const T *__restrict__ out, int64_t ld_out,
                                            acc_t<T> *__restrict__ D) {
  const int64_t n = (int64_t)B * H * Tn;
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5);
  for (int64_t i = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5; i < n; i += warps) {
    const int64_t t = i % Tn, h = (i / Tn) % H, b = i / ((int64_t)Tn * H);
    const T *a = dout + (b * Tn + t) * ld_dout + h * dh;
    const T *o = out + (b * Tn + t) * ld_out + h * dh;
    acc_t<T> s = acc_t<T>(0);
    for (int d = lane; d < dh; d += 32)
      s += load_acc(a[d]) * load_acc(o[d]);
    s = warp_sum(s);
    if (lane == 0)
      D[i] = s;
  }
}

template <typename T>
inline cudaError_t attention_bwd_rowdot(int B, int Tn, int H, int dh, const T *dout,
                                        int64_t ld_dout, const T *out, int64_t ld_out,
                                        acc_t<T> *D, cudaStream_t stream) {
  attention_bwd_rowdot_kernel<T><<<grid_for((int64_t)B * H * Tn * 32, 256), 256, 0, stream>>>(
      B, Tn, H, dh, dout, ld_dout, out, ld_out, D);
  return cudaGetLastError();
}

/// Where the backward reads the forward's output and log-sum-exp: the saved
/// ones, or the recomputation's (into `core` when given, else scratch).
template <typename T> struct AttnForwardRefs {
  const T *out = nullptr;
  int64_t ld_out = 0;
  const T *lse = nullptr;
};

//===----------------------------------------------------------------------===//
// Dense (flash) attention
//===----------------------------------------------------------------------===//

/// dK, dV of the keys j0 + threadIdx.x (one thread per key; grid =
/// (ceil(T/BKV), H, B)). Query tiles of BQ rows of Q and dO, with their lse
/// and D, staged in shared memory; under `causal` the queries before j0
/// (which see none of these keys) are skipped. Rows with no admissible key
/// (lse = neg_big) contribute nothing. Overwrites dk, dv rows.
template <typename T, int DH, int BKV, int BQ, bool Exact>
__global__ void __launch_bounds__(BKV) flash_attention_bwd_dkdv_kernel(
    int Tn, const T *__restrict__ q, const T *__restrict__ k, const T *__restrict__ v,
    int64_t ld_in, const T *__restrict__ dout, int64_t ld_dout, const T *__restrict__ lse,
    const T *__restrict__ Dq, T *dk, T *dv, int64_t ld_grad, const uint8_t *kpm, int causal,
    T scale, AttentionDropout<T> drop, int dh_rt) {
  __shared__ T Qs[BQ][DH];
  __shared__ T dOs[BQ][DH];
  __shared__ T Ls[BQ];
  __shared__ T Ds[BQ];
  const int dh = Exact ? DH : dh_rt;
  const int b = blockIdx.z, h = blockIdx.y, H = gridDim.y;
  const int j0 = blockIdx.x * BKV;
  const int j = j0 + threadIdx.x;
  const bool valid = j < Tn;
  const uint8_t *kpmRow = kpm ? kpm + (int64_t)b * Tn : nullptr;
  const int64_t bh = (int64_t)b * H + h;

  T kr[DH], vr[DH], dka[DH], dva[DH];
  attn_row_load(kr, k + ((int64_t)b * Tn + j) * ld_in + h * dh, dh, valid);
  attn_row_load(vr, v + ((int64_t)b * Tn + j) * ld_in + h * dh, dh, valid);
#pragma unroll
  for (int d = 0; d < DH; ++d) {
    dka[d] = T(0);
    dva[d] = T(0);
  }
  const int iStart = causal ? j0 : 0;
  for (int i0 = iStart; i0 < Tn; i0 += BQ) {
    const int nq = min(BQ, Tn - i0);
    for (int e = threadIdx.x; e < BQ * DH; e += BKV) {
      const int ii = e / DH, d = e % DH;
      const bool in = ii < nq && d < dh;
      const int64_t row = ((int64_t)b * Tn + i0 + ii);
      Qs[ii][d] = in ? q[row * ld_in + h * dh + d] : T(0);
      dOs[ii][d] = in ? dout[row * ld_dout + h * dh + d] : T(0);
    }
    for (int ii = threadIdx.x; ii < BQ; ii += BKV) {
      Ls[ii] = ii < nq ? lse[bh * Tn + i0 + ii] : neg_big<T>();
      Ds[ii] = ii < nq ? Dq[bh * Tn + i0 + ii] : T(0);
    }
    __syncthreads();
    if (valid) {
      for (int ii = 0; ii < nq; ++ii) {
        const int i = i0 + ii;
        const T L = Ls[ii];
        if (!(L > neg_big<T>()) || !key_admissible(i, j, causal != 0, kpmRow))
          continue;
        attn_key_pair<T, DH, Exact>(kr, vr, Qs[ii], dOs[ii], L, Ds[ii], scale,
                                    drop.mult((uint64_t)((bh * Tn + i) * (int64_t)Tn + j)), dh,
                                    dka, dva);
      }
    }
    __syncthreads();
  }
  if (valid) {
    T *dkr = dk + ((int64_t)b * Tn + j) * ld_grad + h * dh;
    T *dvr = dv + ((int64_t)b * Tn + j) * ld_grad + h * dh;
#pragma unroll
    for (int d = 0; d < DH; ++d)
      if (d < dh) {
        dkr[d] = dka[d];
        dvr[d] = dva[d];
      }
  }
}

/// dQ of the queries q0 + threadIdx.x (one thread per query; grid =
/// (ceil(T/BQ), H, B)), K/V tiles of BK rows in shared memory as in the
/// forward, causal tiles past the diagonal skipped. Overwrites dq rows.
template <typename T, int DH, int BQ, int BK, bool Exact>
__global__ void __launch_bounds__(BQ) flash_attention_bwd_dq_kernel(
    int Tn, const T *__restrict__ q, const T *__restrict__ k, const T *__restrict__ v,
    int64_t ld_in, const T *__restrict__ dout, int64_t ld_dout, const T *__restrict__ lse,
    const T *__restrict__ Dq, T *dq, int64_t ld_grad, const uint8_t *kpm, int causal, T scale,
    AttentionDropout<T> drop, int dh_rt) {
  __shared__ T Ks[BK][DH];
  __shared__ T Vs[BK][DH];
  const int dh = Exact ? DH : dh_rt;
  const int b = blockIdx.z, h = blockIdx.y, H = gridDim.y;
  const int q0 = blockIdx.x * BQ;
  const int i = q0 + threadIdx.x;
  const bool valid = i < Tn;
  const uint8_t *kpmRow = kpm ? kpm + (int64_t)b * Tn : nullptr;
  const int64_t bh = (int64_t)b * H + h;
  const T L = valid ? lse[bh * Tn + i] : neg_big<T>();
  const T Di = valid ? Dq[bh * Tn + i] : T(0);
  const bool live = valid && L > neg_big<T>();

  T qr[DH], dor[DH], acc[DH];
  attn_row_load(qr, q + ((int64_t)b * Tn + i) * ld_in + h * dh, dh, live);
  attn_row_load(dor, dout + ((int64_t)b * Tn + i) * ld_dout + h * dh, dh, live);
#pragma unroll
  for (int d = 0; d < DH; ++d)
    acc[d] = T(0);
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
    if (live) {
      for (int jj = 0; jj < nk; ++jj) {
        const int j = k0 + jj;
        if (!key_admissible(i, j, causal != 0, kpmRow))
          continue;
        attn_query_pair<T, DH, Exact>(qr, dor, Ks[jj], Vs[jj], L, Di, scale,
                                      drop.mult((uint64_t)((bh * Tn + i) * (int64_t)Tn + j)),
                                      dh, acc);
      }
    }
    __syncthreads();
  }
  if (valid) {
    T *dqr = dq + ((int64_t)b * Tn + i) * ld_grad + h * dh;
#pragma unroll
    for (int d = 0; d < DH; ++d)
      if (d < dh)
        dqr[d] = acc[d];
  }
}

//===----------------------------------------------------------------------===//
// CTA-tiled backward (dense and banded dilated), head sizes 32, 64, 128.
//
// FlashAttention-2's split, in the forward's micro-tiles (Attention.cuh:
// 128 threads, attn_mt_dot / attn_mt_accum, the AttnTileSchedule). The
// dK/dV kernel owns BR_KV keys (rows) and walks the query tiles that see
// them (columns, AttnTileSchedule with KeyRows); the dQ kernel owns BR_Q
// queries and walks their key tiles. Per tile both recompute S and dP on
// the micro-tile, form c P and dS = scale P (c dP - D) (attn_pair_grad,
// masked to zero where the pair is not admissible or the query row is
// empty), pass them through the warp's own rows of shared memory and
// accumulate dV += (c P)^T dO, dK += dS^T Q or dQ += dS K in registers.
// Each output element has one owner thread adding its terms tile by tile
// in a fixed order: deterministic, no atomics. Band mode: as the forward;
// the rows of global tokens (dQ of a global query, dK/dV of a global key)
// are left to attention_bwd_global_kernel.
//===----------------------------------------------------------------------===//

/// Tile shape of the backward tile kernels for T and head size DH. Rows
/// per CTA (at most 64) keep each thread's accumulators (dK and dV: 2 TM
/// DH/8 values, dQ: TM DH/8; TM = rows / 16) within 64 registers; BC
/// columns per tile (queries for dK/dV, keys for dQ).
template <typename T, int DH> struct AttnBwdTile {
  static_assert(DH == 32 || DH == 64 || DH == 128, "tile kernel head sizes");
  static constexpr int VW = 16 / (int)sizeof(T), NT = 128;
  static constexpr int cap(int bytes) {
    return bytes / (DH * (int)sizeof(T)) < 64 ? bytes / (DH * (int)sizeof(T)) : 64;
  }
  static constexpr int BR_KV = cap(64 * 64 * 4), BR_Q = cap(64 * 128 * 4), BC = 32;
  static constexpr int TN = BC / 8, TG = DH / (8 * VW);
  static constexpr int LDQ = DH + VW, LDP = BC + VW; // padded row strides
  /// dK/dV: K, V [BR_KV][LDQ]; Q, dO [BC][LDQ]; c P^T, dS^T [BR_KV][LDP];
  /// the columns' query, lse and D.
  static constexpr size_t smem_dkdv = sizeof(T) * (size_t)(2 * BR_KV * LDQ + 2 * BC * LDQ +
                                                           2 * BR_KV * LDP + 2 * BC) +
                                      sizeof(int) * BC;
  /// dQ: Q, dO [BR_Q][LDQ]; K, V [BC][LDQ]; dS [BR_Q][LDP]; the columns' keys.
  static constexpr size_t smem_dq =
      sizeof(T) * (size_t)(2 * BR_Q * LDQ + 2 * BC * LDQ + BR_Q * LDP) + sizeof(int) * BC;
  /// Dense dropout: the pairs' multipliers, drawn once per tile with one
  /// Philox block per four consecutive keys (attn_tile_dropout_mults), in
  /// a query-major tile whose rows hold consecutive keys; padded so that
  /// the micro-tile's reads are conflict-free. Added to the dynamic shared
  /// memory only when dropout is on.
  static constexpr int LDM_KV = BR_KV + 4, LDM_Q = BC + 8;
  static constexpr size_t drop_dkdv = sizeof(T) * (size_t)BC * LDM_KV;
  static constexpr size_t drop_dq = sizeof(T) * (size_t)BR_Q * LDM_Q;
  static_assert(BR_KV % 16 == 0 && BR_Q % 16 == 0, "whole rows per warp");
  static_assert(DH % (8 * VW) == 0, "whole 16-byte column groups per lane");
};

/// The micro-tile's unscaled scores s = A.B and score adjoints dp = dA.dB
/// of the backward tile kernels (rows of A and dA, columns of B and dB in
/// shared memory at the thread's first row / column, stride LDQ).
template <typename T, int DH, int TM, int TN, int LDQ>
__device__ __forceinline__ void attn_tile_scores(T (&s)[TM][TN], T (&dp)[TM][TN], const T *A,
                                                 const T *B, const T *dA, const T *dB) {
  attn_mt_scores<T, DH, TM, TN, LDQ, LDQ, true>(s, A, B, DH);
  attn_mt_scores<T, DH, TM, TN, LDQ, LDQ, true>(dp, dA, dB, DH);
}

/// The dropout multipliers of a dense tile's pairs into M (NQ query lines
/// of NK consecutive keys, line stride LDM): query line l is position
/// firstQuery + l, key x of it position firstKey + x; NT / NQ threads per
/// line, each a run of consecutive counters (attention_dropout_row: one
/// Philox block per four). Positions past T draw values no pair reads.
template <typename T, int NQ, int NK, int LDM, int NT>
__device__ __forceinline__ void attn_tile_dropout_mults(T *M, const AttentionDropout<T> &drop,
                                                        int64_t bh, int Tn, int firstQuery,
                                                        int firstKey) {
  static_assert(NT % NQ == 0 && NK % (NT / NQ) == 0, "whole runs per thread");
  constexpr int PER = NT / NQ, RUN = NK / PER;
  const int line = threadIdx.x / PER, x0 = (threadIdx.x % PER) * RUN;
  const uint64_t first =
      (uint64_t)((bh * Tn + firstQuery + line) * (int64_t)Tn + firstKey + x0);
  attention_dropout_row(drop.seed, drop.offset, first, RUN, drop.p, drop.keep_scale,
                        M + line * LDM + x0);
}

/// c P and dS of one micro-tile (rows x columns of the score tiles s, dp,
/// both unscaled) into the warp's rows of Pw (when given) and dSw: zero
/// where `pair(m, n, i, j)` says the pair is not one of the forward's;
/// (i, j) = (query, key) of the element, L and Dq the query's lse and D;
/// c = mult(m, n, i, j), its dropout multiplier.
template <typename T, int TM, int TN, int LDP, typename Pair, typename Mult>
__device__ __forceinline__ void attn_tile_pair_grads(const T (&s)[TM][TN], const T (&dp)[TM][TN],
                                                     T scale, T *Pw, T *dSw, Pair &&pair,
                                                     Mult &&mult) {
#pragma unroll
  for (int m = 0; m < TM; ++m)
#pragma unroll
    for (int n = 0; n < TN; ++n) {
      int i, j;
      T L, Dq;
      T cp = T(0), ds = T(0);
      if (pair(m, n, i, j, L, Dq))
        ds = attn_pair_grad(s[m][n], dp[m][n], scale, L, Dq, mult(m, n, i, j), cp);
      if (Pw)
        Pw[4 * m * LDP + 8 * n] = cp;
      dSw[4 * m * LDP + 8 * n] = ds;
    }
}

/// The dK/dV tile kernels' shared memory (AttnBwdTile::smem_dkdv; at
/// `extra`, past it, what a kernel adds).
template <typename T, int DH> struct AttnBwdKvSmem {
  using C = AttnBwdTile<T, DH>;
  T *Ks, *Vs;          // [BR_KV][LDQ] the CTA's key rows
  T *Qs, *dOs;         // [BC][LDQ] the tile's query columns
  T *Ps, *dSs;         // [BR_KV][LDP] c P^T, dS^T (each warp its own rows)
  T *colL, *colD;      // [BC] the columns' lse and D (neg_big, 0: none)
  int *colQ;           // [BC] the columns' query or -1
  unsigned char *extra;
  __device__ explicit AttnBwdKvSmem(unsigned char *base) {
    Ks = reinterpret_cast<T *>(base);
    Vs = Ks + C::BR_KV * C::LDQ;
    Qs = Vs + C::BR_KV * C::LDQ;
    dOs = Qs + C::BC * C::LDQ;
    Ps = dOs + C::BC * C::LDQ;
    dSs = Ps + C::BR_KV * C::LDP;
    colL = dSs + C::BR_KV * C::LDP;
    colD = colL + C::BC;
    colQ = reinterpret_cast<int *>(colD + C::BC);
    extra = base + C::smem_dkdv;
  }
};

/// The dQ tile kernels' shared memory (AttnBwdTile::smem_dq; `extra` as
/// above).
template <typename T, int DH> struct AttnBwdQSmem {
  using C = AttnBwdTile<T, DH>;
  T *Qs, *dOs;         // [BR_Q][LDQ] the CTA's query rows
  T *Ks, *Vs;          // [BC][LDQ] the tile's key columns
  T *dSs;              // [BR_Q][LDP] dS (each warp its own rows)
  int *kadm;           // [BC] the columns' key, -1: none or padded
  unsigned char *extra;
  __device__ explicit AttnBwdQSmem(unsigned char *base) {
    Qs = reinterpret_cast<T *>(base);
    dOs = Qs + C::BR_Q * C::LDQ;
    Ks = dOs + C::BR_Q * C::LDQ;
    Vs = Ks + C::BC * C::LDQ;
    dSs = Vs + C::BC * C::LDQ;
    kadm = reinterpret_cast<int *>(dSs + C::BR_Q * C::LDP);
    extra = base + C::smem_dq;
  }
};

/// Stages a dK/dV tile's query columns: the q and dO rows of queryOf(jj)
/// (-1: none, zeros) and each column's query, lse and D (lse, Dq at the
/// head's row 0).
template <typename T, int DH, typename QueryOf>
__device__ __forceinline__ void attn_bwd_stage_queries(const AttnBwdKvSmem<T, DH> &sm,
                                                       const T *q, int64_t ld_in,
                                                       const T *dout, int64_t ld_dout, int dh,
                                                       bool vec, const T *lse, const T *Dq,
                                                       QueryOf &&queryOf) {
  using C = AttnBwdTile<T, DH>;
  attn_stage_rows<T, DH, C::BC, C::LDQ, C::NT>(sm.Qs, q, ld_in, dh, vec, T(1), queryOf);
  attn_stage_rows<T, DH, C::BC, C::LDQ, C::NT>(sm.dOs, dout, ld_dout, dh, vec, T(1), queryOf);
  for (int jj = threadIdx.x; jj < C::BC; jj += C::NT) {
    const int i = queryOf(jj);
    sm.colQ[jj] = i;
    sm.colL[jj] = i >= 0 ? lse[i] : neg_big<T>();
    sm.colD[jj] = i >= 0 ? Dq[i] : T(0);
  }
}

/// dK and dV of the tile CTA's keys (see above). grid: dense (ceil(T/BR_KV),
/// H, B); band (min(dilation, T) * ceil(ceil(T/dilation)/BR_KV), H, B).
/// Dynamic shared memory AttnBwdTile<T, DH>::smem_dkdv. Overwrites the dk,
/// dv rows of its keys (band mode: not of global keys).
template <typename T, int DH, int Mode>
__global__ void __launch_bounds__(128) attention_tile_bwd_dkdv_kernel(
    int Tn, const T *__restrict__ q, const T *__restrict__ k, const T *__restrict__ v,
    int64_t ld_in, const T *__restrict__ dout, int64_t ld_dout, const T *__restrict__ lse,
    const T *__restrict__ Dq, T *dk, T *dv, int64_t ld_grad, const uint8_t *kpm, int causal,
    T scale, int vec, int window, int dilation, const uint8_t *is_global,
    const int32_t *globals, int n_global, AttentionDropout<T> drop) {
  using C = AttnBwdTile<T, DH>;
  constexpr int BR = C::BR_KV, BC = C::BC, NT = C::NT, VW = C::VW;
  constexpr int TM = BR / 16, TN = C::TN, TG = C::TG, LDQ = C::LDQ, LDP = C::LDP;
  extern __shared__ __align__(16) unsigned char nncc_attn_bwd_smem[];
  const AttnBwdKvSmem<T, DH> sm(nncc_attn_bwd_smem);
  T *Ks = sm.Ks, *Vs = sm.Vs, *Qs = sm.Qs, *dOs = sm.dOs, *Ps = sm.Ps, *dSs = sm.dSs;
  // Dense dropout: [BC][LDM_KV] multipliers, query-major.
  T *Ms = reinterpret_cast<T *>(sm.extra);
  const bool tileMults = Mode == kAttnTileDense && drop.on();

  const int b = blockIdx.z, h = blockIdx.y, H = gridDim.y;
  const int64_t bh = (int64_t)b * H + h;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int r = lane >> 3, c = lane & 7, row0 = warp * (BR / 4) + r;
  const uint8_t *kpmRow = kpm ? kpm + (int64_t)b * Tn : nullptr;
  AttnTileSchedule<Mode, BR, BC, true> S;
  if (!S.init(Tn, causal, window, dilation, globals, n_global)) // CTA-uniform
    return;

  const int64_t headIn = (int64_t)b * Tn * ld_in + (int64_t)h * DH;
  const int64_t headOut = (int64_t)b * Tn * ld_dout + (int64_t)h * DH;
  auto keyOf = [&](int t) { return t < S.nq ? S.row(t) : -1; };
  attn_stage_rows<T, DH, BR, LDQ, NT>(Ks, k + headIn, ld_in, DH, vec != 0, T(1), keyOf);
  attn_stage_rows<T, DH, BR, LDQ, NT>(Vs, v + headIn, ld_in, DH, vec != 0, T(1), keyOf);

  int kj[TM]; // the thread's keys; -1: past the end or padded (no query sees it)
  T dka[TM][TG * VW], dva[TM][TG * VW];
#pragma unroll
  for (int m = 0; m < TM; ++m) {
    const int t = row0 + 4 * m;
    kj[m] = t < S.nq && !(kpmRow && kpmRow[S.row(t)]) ? S.row(t) : -1;
#pragma unroll
    for (int x = 0; x < TG * VW; ++x)
      dka[m][x] = dva[m][x] = T(0);
  }

  for (int tile = 0; tile < S.nTiles; ++tile) {
    const bool gTile = S.globalTile(tile);
    attn_bwd_stage_queries(sm, q + headIn, ld_in, dout + headOut, ld_dout, DH, vec != 0,
                           lse + bh * Tn, Dq + bh * Tn,
                           [&](int jj) { return S.col(tile, jj); });
    if (tileMults) // dense: the columns are queries S.kBegin + tile BC + jj
      attn_tile_dropout_mults<T, BC, BR, C::LDM_KV, NT>(Ms, drop, bh, Tn,
                                                       S.kBegin + tile * BC, S.row(0));
    __syncthreads();

    T s[TM][TN], dp[TM][TN];
    attn_tile_scores<T, DH, TM, TN, LDQ>(s, dp, Ks + row0 * LDQ, Qs + c * LDQ,
                                         Vs + row0 * LDQ, dOs + c * LDQ);
    attn_tile_pair_grads<T, TM, TN, LDP>(
        s, dp, scale, Ps + row0 * LDP + c, dSs + row0 * LDP + c,
        [&](int m, int n, int &i, int &j, T &L, T &D) {
          i = sm.colQ[c + 8 * n], j = kj[m], L = sm.colL[c + 8 * n], D = sm.colD[c + 8 * n];
          return i >= 0 && L > neg_big<T>() && S.admits(i, j, gTile);
        },
        [&](int m, int n, int i, int j) {
          return tileMults ? Ms[(c + 8 * n) * C::LDM_KV + row0 + 4 * m]
                           : drop.mult((uint64_t)((bh * Tn + i) * (int64_t)Tn + j));
        });
    __syncwarp(); // Ps, dSs rows are private to their warp
    attn_mt_accum<T, TM, TG, BC, LDP, LDQ>(dva, Ps + row0 * LDP, dOs + c * VW);
    attn_mt_accum<T, TM, TG, BC, LDP, LDQ>(dka, dSs + row0 * LDP, Qs + c * VW);
    __syncthreads(); // before the next tile overwrites Qs, dOs, the columns
  }

#pragma unroll
  for (int m = 0; m < TM; ++m) {
    const int t = row0 + 4 * m;
    if (t >= S.nq)
      continue;
    const int j = S.row(t);
    if (Mode == kAttnTileBand && is_global[j])
      continue;
    T *dkr = dk + ((int64_t)b * Tn + j) * ld_grad + (int64_t)h * DH;
    T *dvr = dv + ((int64_t)b * Tn + j) * ld_grad + (int64_t)h * DH;
    attn_mt_row_cols<TG, VW, true>(c, DH, [&](int x, int col) {
      dkr[col] = dka[m][x];
      dvr[col] = dva[m][x];
    });
  }
}

/// dQ of the tile CTA's queries (see above). grid: dense (ceil(T/BR_Q), H,
/// B); band (min(dilation, T) * ceil(ceil(T/dilation)/BR_Q), H, B).
/// Dynamic shared memory AttnBwdTile<T, DH>::smem_dq. Overwrites the dq
/// rows of its queries (band mode: not of global queries).
template <typename T, int DH, int Mode>
__global__ void __launch_bounds__(128) attention_tile_bwd_dq_kernel(
    int Tn, const T *__restrict__ q, const T *__restrict__ k, const T *__restrict__ v,
    int64_t ld_in, const T *__restrict__ dout, int64_t ld_dout, const T *__restrict__ lse,
    const T *__restrict__ Dq, T *dq, int64_t ld_grad, const uint8_t *kpm, int causal, T scale,
    int vec, int window, int dilation, const uint8_t *is_global, const int32_t *globals,
    int n_global, AttentionDropout<T> drop) {
  using C = AttnBwdTile<T, DH>;
  constexpr int BR = C::BR_Q, BC = C::BC, NT = C::NT, VW = C::VW;
  constexpr int TM = BR / 16, TN = C::TN, TG = C::TG, LDQ = C::LDQ, LDP = C::LDP;
  extern __shared__ __align__(16) unsigned char nncc_attn_bwd_smem[];
  const AttnBwdQSmem<T, DH> sm(nncc_attn_bwd_smem);
  T *Qs = sm.Qs, *dOs = sm.dOs, *Ks = sm.Ks, *Vs = sm.Vs, *dSs = sm.dSs;
  int *kadm = sm.kadm;
  // Dense dropout: [BR][LDM_Q] multipliers of the CTA's queries.
  T *Ms = reinterpret_cast<T *>(sm.extra);
  const bool tileMults = Mode == kAttnTileDense && drop.on();

  const int b = blockIdx.z, h = blockIdx.y, H = gridDim.y;
  const int64_t bh = (int64_t)b * H + h;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int r = lane >> 3, c = lane & 7, row0 = warp * (BR / 4) + r;
  const uint8_t *kpmRow = kpm ? kpm + (int64_t)b * Tn : nullptr;
  AttnTileSchedule<Mode, BR, BC> S;
  if (!S.init(Tn, causal, window, dilation, globals, n_global)) // CTA-uniform
    return;

  const int64_t headIn = (int64_t)b * Tn * ld_in + (int64_t)h * DH;
  const int64_t headOut = (int64_t)b * Tn * ld_dout + (int64_t)h * DH;
  auto queryOf = [&](int t) { return t < S.nq ? S.row(t) : -1; };
  attn_stage_rows<T, DH, BR, LDQ, NT>(Qs, q + headIn, ld_in, DH, vec != 0, T(1), queryOf);
  attn_stage_rows<T, DH, BR, LDQ, NT>(dOs, dout + headOut, ld_dout, DH, vec != 0, T(1),
                                      queryOf);

  int qi[TM];
  T rowL[TM], rowD[TM], acc[TM][TG * VW];
#pragma unroll
  for (int m = 0; m < TM; ++m) {
    const int t = row0 + 4 * m;
    qi[m] = S.row(t);
    rowL[m] = t < S.nq ? lse[bh * Tn + qi[m]] : neg_big<T>();
    rowD[m] = t < S.nq ? Dq[bh * Tn + qi[m]] : T(0);
#pragma unroll
    for (int x = 0; x < TG * VW; ++x)
      acc[m][x] = T(0);
  }

  for (int tile = 0; tile < S.nTiles; ++tile) {
    const bool gTile = S.globalTile(tile);
    auto keyOf = [&](int jj) { return S.col(tile, jj); };
    attn_stage_rows<T, DH, BC, LDQ, NT>(Ks, k + headIn, ld_in, DH, vec != 0, T(1), keyOf);
    attn_stage_rows<T, DH, BC, LDQ, NT>(Vs, v + headIn, ld_in, DH, vec != 0, T(1), keyOf);
    for (int jj = threadIdx.x; jj < BC; jj += NT) {
      const int j = S.col(tile, jj);
      kadm[jj] = j >= 0 && !(kpmRow && kpmRow[j]) ? j : -1;
    }
    if (tileMults) // dense: the columns are keys S.kBegin + tile BC + jj
      attn_tile_dropout_mults<T, BR, BC, C::LDM_Q, NT>(Ms, drop, bh, Tn, S.row(0),
                                                      S.kBegin + tile * BC);
    __syncthreads();

    T s[TM][TN], dp[TM][TN];
    attn_tile_scores<T, DH, TM, TN, LDQ>(s, dp, Qs + row0 * LDQ, Ks + c * LDQ,
                                         dOs + row0 * LDQ, Vs + c * LDQ);
    attn_tile_pair_grads<T, TM, TN, LDP>(
        s, dp, scale, (T *)nullptr, dSs + row0 * LDP + c,
        [&](int m, int n, int &i, int &j, T &L, T &D) {
          i = qi[m], j = kadm[c + 8 * n], L = rowL[m], D = rowD[m];
          return L > neg_big<T>() && S.admits(i, j, gTile);
        },
        [&](int m, int n, int i, int j) {
          return tileMults ? Ms[(row0 + 4 * m) * C::LDM_Q + c + 8 * n]
                           : drop.mult((uint64_t)((bh * Tn + i) * (int64_t)Tn + j));
        });
    __syncwarp(); // dSs rows are private to their warp
    attn_mt_accum<T, TM, TG, BC, LDP, LDQ>(acc, dSs + row0 * LDP, Ks + c * VW);
    __syncthreads(); // before the next tile overwrites Ks, Vs, kadm
  }

#pragma unroll
  for (int m = 0; m < TM; ++m) {
    const int t = row0 + 4 * m, i = qi[m];
    if (t >= S.nq || (Mode == kAttnTileBand && is_global[i]))
      continue;
    T *dqr = dq + ((int64_t)b * Tn + i) * ld_grad + (int64_t)h * DH;
    attn_mt_row_cols<TG, VW, true>(c, DH, [&](int x, int col) { dqr[col] = acc[m][x]; });
  }
}

/// The global tokens' rows of the dilated backward, which pair with every
/// admissible position: KeyOwner = false, dQ of global query i over all
/// its keys; KeyOwner = true, dK and dV of global key j over all the
/// queries that see it. grid = (n_global, H, B), block = 256: per tile of
/// 256 partners thread t forms the pair's ds (and c p) into shared memory;
/// then thread t adds column t % DH of every (256 / DH)-th partner of the
/// tile; the 256 / DH partial sums are added in a fixed order at the end.
/// S: the storage of q, k, v, dout and the gradients (T, or bf16_t with T =
/// float: widened when read, rounded once when stored).
template <typename T, int DH, bool KeyOwner, typename S = T>
__global__ void __launch_bounds__(256) attention_bwd_global_kernel(
    int Tn, const S *__restrict__ q, const S *__restrict__ k, const S *__restrict__ v,
    int64_t ld_in, const S *__restrict__ dout, int64_t ld_dout, const T *__restrict__ lse,
    const T *__restrict__ Dq, S *g1, S *g2, int64_t ld_grad, const uint8_t *kpm, int causal,
    T scale, const int32_t *globals, AttentionDropout<T> drop) {
  constexpr int NT = 256, NKG = NT / DH;
  static_assert(NT % DH == 0, "whole partner groups");
  // The owner's two rows (q, dO or k, v), the partners' weights ds and c p.
  __shared__ T own1[DH], own2[DH], w1[NT], w2[NT];
  const int b = blockIdx.z, h = blockIdx.y, H = gridDim.y;
  const int64_t bh = (int64_t)b * H + h;
  const int o = globals[blockIdx.x];
  const int d = threadIdx.x % DH, pg = threadIdx.x / DH;
  const uint8_t *kpmRow = kpm ? kpm + (int64_t)b * Tn : nullptr;
  const S *qb = q + (int64_t)b * Tn * ld_in + (int64_t)h * DH;
  const S *kb = k + (int64_t)b * Tn * ld_in + (int64_t)h * DH;
  const S *vb = v + (int64_t)b * Tn * ld_in + (int64_t)h * DH;
  const S *dob = dout + (int64_t)b * Tn * ld_dout + (int64_t)h * DH;
  // Partner rows: the keys' k, v (query owner) or the queries' q, dO (key owner).
  const S *p1 = KeyOwner ? qb : kb, *p2 = KeyOwner ? dob : vb;
  const int64_t ld2 = KeyOwner ? ld_dout : ld_in;
  for (int x = threadIdx.x; x < DH; x += NT) {
    own1[x] = load_acc(KeyOwner ? kb[(int64_t)o * ld_in + x] : qb[(int64_t)o * ld_in + x]);
    own2[x] = load_acc(KeyOwner ? vb[(int64_t)o * ld_in + x] : dob[(int64_t)o * ld_dout + x]);
  }
  const T ownL = KeyOwner ? T(0) : lse[bh * Tn + o], ownD = KeyOwner ? T(0) : Dq[bh * Tn + o];
  __syncthreads();

  T a1 = T(0), a2 = T(0);
  for (int p0 = 0; p0 < Tn; p0 += NT) {
    const int pt = p0 + threadIdx.x;
    const int i = KeyOwner ? pt : o, j = KeyOwner ? o : pt;
    T ds = T(0), cp = T(0);
    if (pt < Tn && key_admissible(i, j, causal != 0, kpmRow)) {
      const T L = KeyOwner ? lse[bh * Tn + i] : ownL;
      if (L > neg_big<T>()) {
        const S *r1 = p1 + (int64_t)pt * ld_in, *r2 = p2 + (int64_t)pt * ld2;
        T s = T(0), dp = T(0);
#pragma unroll 8
        for (int x = 0; x < DH; ++x) {
          s += own1[x] * load_acc(r1[x]);
          dp += own2[x] * load_acc(r2[x]);
        }
        ds = attn_pair_grad(s, dp, scale, L, KeyOwner ? Dq[bh * Tn + i] : ownD,
                            drop.mult((uint64_t)((bh * Tn + i) * (int64_t)Tn + j)), cp);
      }
    }
    w1[threadIdx.x] = ds;
    w2[threadIdx.x] = cp;
    __syncthreads();
    const int np = min(NT, Tn - p0);
    for (int pp = pg; pp < np; pp += NKG) {
      a1 += w1[pp] * load_acc(p1[(int64_t)(p0 + pp) * ld_in + d]);
      if (KeyOwner)
        a2 += w2[pp] * load_acc(p2[(int64_t)(p0 + pp) * ld2 + d]);
    }
    __syncthreads(); // w1, w2 are rewritten by the next tile
  }
  w1[threadIdx.x] = a1;
  w2[threadIdx.x] = a2;
  __syncthreads();
  if (threadIdx.x < DH) {
    T s1 = T(0), s2 = T(0);
#pragma unroll
    for (int x = 0; x < NKG; ++x) {
      s1 += w1[x * DH + threadIdx.x];
      s2 += w2[x * DH + threadIdx.x];
    }
    const int64_t row = ((int64_t)b * Tn + o) * ld_grad + (int64_t)h * DH + threadIdx.x;
    g1[row] = store_acc<S>(s1);
    if (KeyOwner)
      g2[row] = store_acc<S>(s2);
  }
}

/// The dilated backward's global-token rows (none when g.n == 0): dk, dv of
/// the global keys, then dq of the global queries (attention_bwd_global_kernel,
/// computing in T on rows stored as S).
template <typename T, int DH, typename S>
inline cudaError_t attn_bwd_global_rows(int B, int Tn, int H, const S *q, const S *k, const S *v,
                                        int64_t ld_in, const S *dout, int64_t ld_dout,
                                        const T *lse, const T *D, S *dq, S *dk, S *dv,
                                        int64_t ld_grad, const uint8_t *kpm, int causal, T scale,
                                        const DilatedGlobals &g, const AttentionDropout<T> &drop,
                                        cudaStream_t stream) {
  if (g.n <= 0)
    return cudaSuccess;
  const dim3 grid(g.n, H, B);
  attention_bwd_global_kernel<T, DH, true, S><<<grid, 256, 0, stream>>>(
      Tn, q, k, v, ld_in, dout, ld_dout, lse, D, dk, dv, ld_grad, kpm, causal, scale, g.list,
      drop);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    return e;
  attention_bwd_global_kernel<T, DH, false, S><<<grid, 256, 0, stream>>>(
      Tn, q, k, v, ld_in, dout, ld_dout, lse, D, dq, nullptr, ld_grad, kpm, causal, scale, g.list,
      drop);
  return cudaGetLastError();
}

/// Whether the backward tile kernels may use 16-byte loads of q, k, v and
/// dout rows.
template <typename T>
inline bool attn_bwd_vec_loads(const T *q, const T *k, const T *v, int64_t ld_in,
                               const T *dout, int64_t ld_dout, int dh) {
  constexpr int VW = 16 / (int)sizeof(T);
  return attn_vec_loads(q, k, v, ld_in, dh) && ((uintptr_t)dout & 15u) == 0 &&
         ld_dout % VW == 0;
}

/// The tile backward of head size DH: dK/dV, dQ and, in band mode with
/// global tokens, their global rows. The dK/dV and dQ kernels write
/// disjoint outputs and could overlap; they share `stream`.
template <typename T, int DH, int Mode>
inline cudaError_t attn_tile_backward(int B, int Tn, int H, const T *q, const T *k,
                                      const T *v, int64_t ld_in, const T *dout,
                                      int64_t ld_dout, const T *lse, const T *D, T *dq, T *dk,
                                      T *dv, int64_t ld_grad, const uint8_t *kpm, int causal,
                                      T scale, int window, int dilation,
                                      const DilatedGlobals &g, const AttentionDropout<T> &drop,
                                      cudaStream_t stream) {
  using C = AttnBwdTile<T, DH>;
  const int vec = attn_bwd_vec_loads(q, k, v, ld_in, dout, ld_dout, DH) ? 1 : 0;
  auto gridFor = [&](int rows) {
    if (Mode == kAttnTileDense)
      return dim3((Tn + rows - 1) / rows, H, B);
    const int perClass = ((Tn + dilation - 1) / dilation + rows - 1) / rows;
    return dim3(std::min(dilation, Tn) * perClass, H, B); // classes r >= T are empty
  };
  cudaError_t e;
  // Dense dropout adds the multiplier tiles to the shared memory.
  const bool tileMults = Mode == kAttnTileDense && drop.on();
  const size_t smemKv = C::smem_dkdv + (tileMults ? C::drop_dkdv : 0);
  const size_t smemQ = C::smem_dq + (tileMults ? C::drop_dq : 0);
  auto dkdv = attention_tile_bwd_dkdv_kernel<T, DH, Mode>;
  if ((e = cudaFuncSetAttribute(dkdv, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)smemKv)) != cudaSuccess)
    return e;
  dkdv<<<gridFor(C::BR_KV), C::NT, smemKv, stream>>>(
      Tn, q, k, v, ld_in, dout, ld_dout, lse, D, dk, dv, ld_grad, kpm, causal, scale, vec,
      window, dilation, g.is_global, g.list, g.n, drop);
  if ((e = cudaGetLastError()) != cudaSuccess)
    return e;
  auto dqk = attention_tile_bwd_dq_kernel<T, DH, Mode>;
  if ((e = cudaFuncSetAttribute(dqk, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)smemQ)) != cudaSuccess)
    return e;
  dqk<<<gridFor(C::BR_Q), C::NT, smemQ, stream>>>(
      Tn, q, k, v, ld_in, dout, ld_dout, lse, D, dq, ld_grad, kpm, causal, scale, vec, window,
      dilation, g.is_global, g.list, g.n, drop);
  if ((e = cudaGetLastError()) != cudaSuccess)
    return e;
  if (Mode == kAttnTileBand)
    return attn_bwd_global_rows<T, DH>(B, Tn, H, q, k, v, ld_in, dout, ld_dout, lse, D, dq, dk,
                                       dv, ld_grad, kpm, causal, scale, g, drop, stream);
  return cudaSuccess;
}

//===----------------------------------------------------------------------===//
// bf16: the dense and band backward on BF16 tensor cores
//
// FlashAttention-2's backward for bf16 q, k, v, dout at dh 32, 64, 128 with
// the dense and dilated launchers' masks (causal, key padding, dropout;
// window, dilation, global tokens): the forward recomputed by
// attention_tile_bf16_kernel (bf16 output, fp32 lse; dilated: with
// attention_global_rows_kernel) into the workspace or `core`, D =
// rowsum(dO * O) in fp32 (attention_bwd_rowdot), then two kernels on
// m16n8k16 BF16 mma with fp32 accumulation, dense or band mode (Mode, as
// the fp32 tile kernels): attention_bf16_bwd_dkdv_kernel (a CTA owns 64
// keys and walks the query tiles that see them) and
// attention_bf16_bwd_dq_kernel (a CTA owns 64 queries and walks their key
// tiles); band mode leaves the global tokens' rows to
// attention_bwd_global_kernel<float, DH, KeyOwner, bf16_t> (fp32 SIMT on
// the bf16 rows, widened when read). Both recompute S, P = exp(scale S -
// lse) (fp32, ex2 in base 2), dP and dS = P (c dP - D) (c: the pair's
// dropout multiplier, AttentionDropout::mult on the forward's counters, so
// the mask is the forward's bit for bit), with the schedule and masks of
// the forward (AttnTileSchedule; no T x T buffer, no atomics: every output
// element has one owner thread that adds its terms in a fixed order). P
// and dS are rounded to bf16 as mma A operands (FlashAttention-2's register
// reuse of the accumulators), the gradients once at the end: not the f32
// launcher's values bit for bit (cuda-emu-attention-train-bf16.test holds
// them to a tolerance). K/V or Q/dO tiles are staged synchronously (no
// cp.async pipeline). Other head sizes take the widened path above.
//
// ptxas -v registers, dense / band (sm_90, CUDA 13.0, -O3; no spills, no
// stack; the bf16 global-row kernels 32 (query) / 48 (key)):
//   dh    dK/dV (64 keys, BC_KV queries a tile)   dQ (64 queries, 64 keys a tile)
//   32    145 / 157 (64 queries)                  127 / 128
//   64    185 / 194 (64 queries)                  135 / 162
//   128   238 / 237 (32 queries)                  171 / 234
// Compiled and tested under the host emulation only; not yet run on a GPU.
//===----------------------------------------------------------------------===//

/// Tile shapes of the BF16 backward kernels: 128 threads, warp w owns rows
/// [16 w, 16 w + 16) of the CTA's 64 (keys for dK/dV, queries for dQ) and
/// a thread rows g, g + 8 and columns 8 n + 2 t, 8 n + 2 t + 1 of every
/// accumulator tile (g = lane / 4, t = lane % 4: the mma layout). Columns
/// per tile: BC_KV queries (64; 32 at dh 128, whose dK and dV accumulators
/// alone are 128 registers a thread), BC_Q keys. Registers a thread: S and
/// dP 8 BC / 8 (dK/dV: 64, dh 128: 32; dQ: 64), the accumulators dK, dV:
/// DH (dQ: DH / 2); A and B fragments come from shared memory by ldmatrix.
/// Shared rows padded to DH + 8 as AttnTileBf16 (conflict-free ldmatrix).
template <int DH> struct AttnBwdBf16Tile {
  static_assert(DH == 32 || DH == 64 || DH == 128, "tile kernel head sizes");
  static constexpr int NT = 128, BR = 64, LD = DH + 8;
  static constexpr int BC_KV = DH == 128 ? 32 : 64, BC_Q = 64;
  /// dK/dV: K, V [BR][LD] (staged once); Q, dO [BC_KV][LD] (per tile); the
  /// columns' lse (base 2) and D (fp32) and query (-1: none).
  static constexpr size_t smem_dkdv =
      sizeof(bf16_t) * (size_t)(2 * BR * LD + 2 * BC_KV * LD) +
      (2 * sizeof(float) + sizeof(int)) * BC_KV;
  /// dQ: Q, dO [BR][LD] (staged once); K, V [BC_Q][LD] (per tile); the
  /// columns' key (-1: none or padded).
  static constexpr size_t smem_dq =
      sizeof(bf16_t) * (size_t)(2 * BR * LD + 2 * BC_Q * LD) + sizeof(int) * BC_Q;
};

/// Whether the BF16 tensor-core backward (dense and dilated) serves head
/// size dh.
inline bool attn_bf16_tc_backward_covers(int dh) { return dh == 32 || dh == 64 || dh == 128; }

/// Lane `lane`'s ldmatrix.x4 offsets (elements, row stride LD) from a tile's
/// first row: A fragments of 16 rows x 16 columns (with .trans: the B
/// fragments of two 8-column groups of 16 k-major rows, as the forward's V)
/// and, aOff vs bOff, the B fragments of two 8-row groups of n-major rows
/// (as the forward's K).
template <int LD> __device__ __forceinline__ int attn_bf16_a_off(int lane) {
  return ((lane & 7) + 8 * ((lane >> 3) & 1)) * LD + 8 * (lane >> 4);
}
template <int LD> __device__ __forceinline__ int attn_bf16_b_off(int lane) {
  return ((lane & 7) + 8 * (lane >> 4)) * LD + 8 * ((lane >> 3) & 1);
}

/// acc = A B^T over DH columns for the warp's 16 rows of A (As, its first
/// row) and NC rows of B (Bs): acc[n][2 hr + e] = A[g + 8 hr] . B[8 n + 2 t
/// + e] (mma layout).
template <int DH, int NC, int LD>
__device__ __forceinline__ void attn_bf16_bwd_abt(float (&acc)[NC / 8][4], const bf16_t *As,
                                                  const bf16_t *Bs, int aOff, int bOff) {
  attn_mma_zero(acc);
#pragma unroll
  for (int kd = 0; kd < DH / 16; ++kd) {
    uint32_t a[4];
    attn_ldmatrix_x4<false>(a, As, aOff + 16 * kd);
#pragma unroll
    for (int n = 0; n < NC / 8; n += 2) {
      uint32_t bb[4];
      attn_ldmatrix_x4<false>(bb, Bs, bOff + 8 * n * LD + 16 * kd);
      attn_mma_bf16(acc[n], a, bb[0], bb[1]);
      attn_mma_bf16(acc[n + 1], a, bb[2], bb[3]);
    }
  }
}

/// acc += W M: W the warp's 16 x NC weights in the mma layout (w[n][2 hr +
/// e] = W[g + 8 hr][8 n + 2 t + e]; rounded to bf16 as A fragments: tiles
/// 2 ks and 2 ks + 1 are k step ks), M's NC rows of DH columns at Ms
/// (ldmatrix.trans): DH / 8 output tiles.
template <int DH, int NC, int LD>
__device__ __forceinline__ void attn_bf16_bwd_accum(float (&acc)[DH / 8][4],
                                                    const float (&w)[NC / 8][4],
                                                    const bf16_t *Ms, int aOff) {
#pragma unroll
  for (int ks = 0; ks < NC / 16; ++ks) {
    const uint32_t wa[4] = {attn_pack_bf16x2(w[2 * ks][0], w[2 * ks][1]),
                            attn_pack_bf16x2(w[2 * ks][2], w[2 * ks][3]),
                            attn_pack_bf16x2(w[2 * ks + 1][0], w[2 * ks + 1][1]),
                            attn_pack_bf16x2(w[2 * ks + 1][2], w[2 * ks + 1][3])};
#pragma unroll
    for (int n = 0; n < DH / 8; n += 2) {
      uint32_t bb[4];
      attn_ldmatrix_x4<true>(bb, Ms, aOff + 16 * ks * LD + 8 * n);
      attn_mma_bf16(acc[n], wa, bb[0], bb[1]);
      attn_mma_bf16(acc[n + 1], wa, bb[2], bb[3]);
    }
  }
}

/// The pairs of one tile in the mma layout: s (unscaled scores) becomes c P
/// and dp (unscaled dO . v) becomes dS / scale = P (c dp - D); zero where
/// pair(n, hr, e, i, j, L2, D) is false (not one of the forward's pairs),
/// else (i, j) = (query, key), L2 the query's lse in base 2 and D its D.
template <int NS, typename Pair>
__device__ __forceinline__ void attn_bf16_bwd_pairs(float (&s)[NS][4], float (&dp)[NS][4],
                                                    float scaleLog2, int64_t bh, int Tn,
                                                    const AttentionDropout<float> &drop,
                                                    Pair &&pair) {
#pragma unroll
  for (int n = 0; n < NS; ++n)
#pragma unroll
    for (int hr = 0; hr < 2; ++hr)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        int i, j;
        float L2, D, p = 0.f, c = 0.f;
        if (pair(n, hr, e, i, j, L2, D)) {
          p = attn_exp2(fmaf(s[n][2 * hr + e], scaleLog2, -L2));
          c = drop.mult((uint64_t)((bh * Tn + i) * (int64_t)Tn + j));
          dp[n][2 * hr + e] = softmax_score_grad(p, c * dp[n][2 * hr + e], D);
        } else {
          dp[n][2 * hr + e] = 0.f;
        }
        s[n][2 * hr + e] = c * p;
      }
}

/// The end of both kernels: the warp's rows of `acc` (mma layout; rows
/// row0, row0 + 8 of the CTA's, columns 8 n + 2 t4 + e) times `mul`, rounded
/// into dst's rows (head column h0, row stride ld; row base0 + S.row(t)),
/// but rows past the CTA's and, in band mode, global rows.
template <int Mode, int ND, typename Sched>
__device__ __forceinline__ void attn_bf16_bwd_store(bf16_t *dst, const float (&acc)[ND][4],
                                                    float mul, const Sched &S, int row0, int t4,
                                                    int64_t base0, int64_t h0, int64_t ld,
                                                    const uint8_t *is_global) {
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    const int t = row0 + 8 * hr;
    if (t >= S.nq || (Mode == kAttnTileBand && is_global[S.row(t)]))
      continue;
    bf16_t *row = dst + (base0 + S.row(t)) * ld + h0;
#pragma unroll
    for (int n = 0; n < ND; ++n)
#pragma unroll
      for (int e = 0; e < 2; ++e)
        row[8 * n + 2 * t4 + e] = bf16_from_float(acc[n][2 * hr + e] * mul);
  }
}

/// dK and dV of the CTA's 64 keys: per tile of BC_KV queries that see them
/// (AttnTileSchedule with KeyRows: dense from the first key's on when
/// causal; band the class's range, then the global queries) S^T = K Q^T
/// and dP^T = V dO^T, then dV += (c P)^T dO and dK += dS^T Q; dk = scale dK.
/// grid: dense (ceil(T/64), H, B); band (min(dilation, T) *
/// ceil(ceil(T/dilation)/64), H, B). Dynamic shared memory
/// AttnBwdBf16Tile<DH>::smem_dkdv. lse (natural log) and Dq fp32 [B, H, T].
/// Overwrites the dk, dv rows of its keys (zeros for padded keys; band
/// mode: not of global keys).
template <int DH, int Mode>
__global__ void __launch_bounds__(128) attention_bf16_bwd_dkdv_kernel(
    int Tn, const bf16_t *__restrict__ q, const bf16_t *__restrict__ k,
    const bf16_t *__restrict__ v, int64_t ld_in, const bf16_t *__restrict__ dout,
    int64_t ld_dout, const float *__restrict__ lse, const float *__restrict__ Dq, bf16_t *dk,
    bf16_t *dv, int64_t ld_grad, const uint8_t *kpm, int causal, float scale, int vec,
    int window, int dilation, const uint8_t *is_global, const int32_t *globals, int n_global,
    AttentionDropout<float> drop) {
  using C = AttnBwdBf16Tile<DH>;
  constexpr int BR = C::BR, BC = C::BC_KV, NT = C::NT, LD = C::LD, NS = BC / 8, ND = DH / 8;
  extern __shared__ __align__(16) unsigned char nncc_attn_bf16_bwd_smem[];
  bf16_t *Ks = reinterpret_cast<bf16_t *>(nncc_attn_bf16_bwd_smem), *Vs = Ks + BR * LD;
  bf16_t *Qs = Vs + BR * LD, *dOs = Qs + BC * LD;
  float *colL = reinterpret_cast<float *>(dOs + BC * LD), *colD = colL + BC;
  int *colQ = reinterpret_cast<int *>(colD + BC);

  const int b = blockIdx.z, h = blockIdx.y, H = gridDim.y;
  const int64_t bh = (int64_t)b * H + h;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t4 = lane & 3;
  const int row0 = warp * 16 + g; // and row0 + 8
  const int aOff = attn_bf16_a_off<LD>(lane), bOff = attn_bf16_b_off<LD>(lane);
  const uint8_t *kpmRow = kpm ? kpm + (int64_t)b * Tn : nullptr;
  AttnTileSchedule<Mode, BR, BC, true> S;
  if (!S.init(Tn, causal, window, dilation, globals, n_global)) // CTA-uniform
    return;

  const int64_t headIn = (int64_t)b * Tn * ld_in + (int64_t)h * DH;
  const int64_t headOut = (int64_t)b * Tn * ld_dout + (int64_t)h * DH;
  auto keyOf = [&](int t) { return t < S.nq ? S.row(t) : -1; };
  attn_stage_rows<bf16_t, DH, BR, LD, NT>(Ks, k + headIn, ld_in, DH, vec != 0, 1.f, keyOf);
  attn_stage_rows<bf16_t, DH, BR, LD, NT>(Vs, v + headIn, ld_in, DH, vec != 0, 1.f, keyOf);
  int kj[2]; // the thread's keys; -1: past the end or padded (no query sees it)
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    const int t = row0 + 8 * hr;
    kj[hr] = t < S.nq && !(kpmRow && kpmRow[S.row(t)]) ? S.row(t) : -1;
  }
  float dka[ND][4], dva[ND][4];
  attn_mma_zero(dka);
  attn_mma_zero(dva);
  const float scaleLog2 = scale * kAttnLog2e;

  for (int tile = 0; tile < S.nTiles; ++tile) {
    const bool gTile = S.globalTile(tile);
    auto queryOf = [&](int jj) { return S.col(tile, jj); };
    attn_stage_rows<bf16_t, DH, BC, LD, NT>(Qs, q + headIn, ld_in, DH, vec != 0, 1.f, queryOf);
    attn_stage_rows<bf16_t, DH, BC, LD, NT>(dOs, dout + headOut, ld_dout, DH, vec != 0, 1.f,
                                            queryOf);
    for (int jj = threadIdx.x; jj < BC; jj += NT) {
      const int i = S.col(tile, jj);
      const float L = i >= 0 ? lse[bh * Tn + i] : neg_big<float>();
      colQ[jj] = L > neg_big<float>() ? i : -1; // a query without keys has no pairs
      colL[jj] = L * kAttnLog2e;
      colD[jj] = i >= 0 ? Dq[bh * Tn + i] : 0.f;
    }
    __syncthreads();

    float s[NS][4], dp[NS][4];
    attn_bf16_bwd_abt<DH, BC, LD>(s, Ks + 16 * warp * LD, Qs, aOff, bOff);
    attn_bf16_bwd_abt<DH, BC, LD>(dp, Vs + 16 * warp * LD, dOs, aOff, bOff);
    attn_bf16_bwd_pairs(s, dp, scaleLog2, bh, Tn, drop,
                        [&](int n, int hr, int e, int &i, int &j, float &L2, float &D) {
                          const int jj = 8 * n + 2 * t4 + e;
                          i = colQ[jj], j = kj[hr], L2 = colL[jj], D = colD[jj];
                          return i >= 0 && S.admits(i, j, gTile);
                        });
    attn_bf16_bwd_accum<DH, BC, LD>(dva, s, dOs, aOff);
    attn_bf16_bwd_accum<DH, BC, LD>(dka, dp, Qs, aOff);
    __syncthreads(); // before the next tile overwrites Qs, dOs, the columns
  }

  attn_bf16_bwd_store<Mode>(dk, dka, scale, S, row0, t4, (int64_t)b * Tn, (int64_t)h * DH,
                            ld_grad, is_global);
  attn_bf16_bwd_store<Mode>(dv, dva, 1.f, S, row0, t4, (int64_t)b * Tn, (int64_t)h * DH,
                            ld_grad, is_global);
}

/// dQ of the CTA's 64 queries: per tile of BC_Q keys (the forward's: dense
/// up to the last query when causal; band the class's range, then the
/// global keys) S = Q K^T and dP = dO V^T, then dQ += dS K; dq = scale dQ.
/// Grid as the dK/dV kernel's, dynamic shared memory
/// AttnBwdBf16Tile<DH>::smem_dq; operands as the dK/dV kernel. Overwrites
/// the dq rows of its queries (band mode: not of global queries).
template <int DH, int Mode>
__global__ void __launch_bounds__(128) attention_bf16_bwd_dq_kernel(
    int Tn, const bf16_t *__restrict__ q, const bf16_t *__restrict__ k,
    const bf16_t *__restrict__ v, int64_t ld_in, const bf16_t *__restrict__ dout,
    int64_t ld_dout, const float *__restrict__ lse, const float *__restrict__ Dq, bf16_t *dq,
    int64_t ld_grad, const uint8_t *kpm, int causal, float scale, int vec, int window,
    int dilation, const uint8_t *is_global, const int32_t *globals, int n_global,
    AttentionDropout<float> drop) {
  using C = AttnBwdBf16Tile<DH>;
  constexpr int BR = C::BR, BC = C::BC_Q, NT = C::NT, LD = C::LD, NS = BC / 8, ND = DH / 8;
  extern __shared__ __align__(16) unsigned char nncc_attn_bf16_bwd_smem[];
  bf16_t *Qs = reinterpret_cast<bf16_t *>(nncc_attn_bf16_bwd_smem), *dOs = Qs + BR * LD;
  bf16_t *Ks = dOs + BR * LD, *Vs = Ks + BC * LD;
  int *kadm = reinterpret_cast<int *>(Vs + BC * LD);

  const int b = blockIdx.z, h = blockIdx.y, H = gridDim.y;
  const int64_t bh = (int64_t)b * H + h;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t4 = lane & 3;
  const int row0 = warp * 16 + g; // and row0 + 8
  const int aOff = attn_bf16_a_off<LD>(lane), bOff = attn_bf16_b_off<LD>(lane);
  const uint8_t *kpmRow = kpm ? kpm + (int64_t)b * Tn : nullptr;
  AttnTileSchedule<Mode, BR, BC> S;
  if (!S.init(Tn, causal, window, dilation, globals, n_global)) // CTA-uniform
    return;

  const int64_t headIn = (int64_t)b * Tn * ld_in + (int64_t)h * DH;
  const int64_t headOut = (int64_t)b * Tn * ld_dout + (int64_t)h * DH;
  auto queryOf = [&](int t) { return t < S.nq ? S.row(t) : -1; };
  attn_stage_rows<bf16_t, DH, BR, LD, NT>(Qs, q + headIn, ld_in, DH, vec != 0, 1.f, queryOf);
  attn_stage_rows<bf16_t, DH, BR, LD, NT>(dOs, dout + headOut, ld_dout, DH, vec != 0, 1.f,
                                          queryOf);
  int qi[2]; // the thread's queries; -1: past the end or without keys
  float rowL[2], rowD[2];
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    const int t = row0 + 8 * hr;
    const float L = t < S.nq ? lse[bh * Tn + S.row(t)] : neg_big<float>();
    qi[hr] = L > neg_big<float>() ? S.row(t) : -1;
    rowL[hr] = L * kAttnLog2e;
    rowD[hr] = t < S.nq ? Dq[bh * Tn + S.row(t)] : 0.f;
  }
  float dqa[ND][4];
  attn_mma_zero(dqa);
  const float scaleLog2 = scale * kAttnLog2e;

  for (int tile = 0; tile < S.nTiles; ++tile) {
    const bool gTile = S.globalTile(tile);
    auto keyOf = [&](int jj) { return S.col(tile, jj); };
    attn_stage_rows<bf16_t, DH, BC, LD, NT>(Ks, k + headIn, ld_in, DH, vec != 0, 1.f, keyOf);
    attn_stage_rows<bf16_t, DH, BC, LD, NT>(Vs, v + headIn, ld_in, DH, vec != 0, 1.f, keyOf);
    for (int jj = threadIdx.x; jj < BC; jj += NT) {
      const int j = S.col(tile, jj);
      kadm[jj] = j >= 0 && !(kpmRow && kpmRow[j]) ? j : -1;
    }
    __syncthreads();

    float s[NS][4], dp[NS][4];
    attn_bf16_bwd_abt<DH, BC, LD>(s, Qs + 16 * warp * LD, Ks, aOff, bOff);
    attn_bf16_bwd_abt<DH, BC, LD>(dp, dOs + 16 * warp * LD, Vs, aOff, bOff);
    attn_bf16_bwd_pairs(s, dp, scaleLog2, bh, Tn, drop,
                        [&](int n, int hr, int e, int &i, int &j, float &L2, float &D) {
                          i = qi[hr], j = kadm[8 * n + 2 * t4 + e], L2 = rowL[hr], D = rowD[hr];
                          return i >= 0 && S.admits(i, j, gTile);
                        });
    attn_bf16_bwd_accum<DH, BC, LD>(dqa, dp, Ks, aOff);
    __syncthreads(); // before the next tile overwrites Ks, Vs, kadm
  }

  attn_bf16_bwd_store<Mode>(dq, dqa, scale, S, row0, t4, (int64_t)b * Tn, (int64_t)h * DH,
                            ld_grad, is_global);
}

/// The two BF16 backward kernels of head size DH (they write disjoint
/// outputs; both on `stream`) and, in band mode with global tokens, the
/// global rows (attention_bwd_global_kernel in fp32 on the bf16 rows).
/// lse, D: fp32 [B, H, T].
template <int DH, int Mode>
inline cudaError_t attn_bf16_tc_backward(int B, int Tn, int H, const bf16_t *q, const bf16_t *k,
                                         const bf16_t *v, int64_t ld_in, const bf16_t *dout,
                                         int64_t ld_dout, const float *lse, const float *D,
                                         bf16_t *dq, bf16_t *dk, bf16_t *dv, int64_t ld_grad,
                                         const uint8_t *kpm, int causal, float scale, int window,
                                         int dilation, const DilatedGlobals &g,
                                         const AttentionDropout<float> &drop,
                                         cudaStream_t stream) {
  using C = AttnBwdBf16Tile<DH>;
  const int vec = attn_bwd_vec_loads(q, k, v, ld_in, dout, ld_dout, DH) ? 1 : 0;
  // Band: perClass CTAs for each residue class r < min(dilation, T).
  const int perClass = ((Tn + dilation - 1) / dilation + C::BR - 1) / C::BR;
  const dim3 grid(Mode == kAttnTileDense ? (Tn + C::BR - 1) / C::BR
                                         : std::min(dilation, Tn) * perClass,
                  H, B);
  cudaError_t e;
  auto dkdv = attention_bf16_bwd_dkdv_kernel<DH, Mode>;
  if ((e = cudaFuncSetAttribute(dkdv, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)C::smem_dkdv)) != cudaSuccess)
    return e;
  dkdv<<<grid, C::NT, C::smem_dkdv, stream>>>(Tn, q, k, v, ld_in, dout, ld_dout, lse, D, dk, dv,
                                              ld_grad, kpm, causal, scale, vec, window, dilation,
                                              g.is_global, g.list, g.n, drop);
  if ((e = cudaGetLastError()) != cudaSuccess)
    return e;
  auto dqk = attention_bf16_bwd_dq_kernel<DH, Mode>;
  if ((e = cudaFuncSetAttribute(dqk, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)C::smem_dq)) != cudaSuccess)
    return e;
  dqk<<<grid, C::NT, C::smem_dq, stream>>>(Tn, q, k, v, ld_in, dout, ld_dout, lse, D, dq,
                                           ld_grad, kpm, causal, scale, vec, window, dilation,
                                           g.is_global, g.list, g.n, drop);
  if ((e = cudaGetLastError()) != cudaSuccess)
    return e;
  if (Mode == kAttnTileBand)
    return attn_bwd_global_rows<float, DH>(B, Tn, H, q, k, v, ld_in, dout, ld_dout, lse, D, dq,
                                           dk, dv, ld_grad, kpm, causal, scale, g, drop, stream);
  return cudaSuccess;
}

/// Workspace of the BF16 tensor-core backward: the dilated kernels'
/// global-token tables (globals_bytes, as launch_dilated_attention_dyn;
/// none for dense), the recomputed forward's lse and D (fp32 [B, H, T])
/// and its output (bf16 [B T, H dh]; unused when it goes to `core`).
struct AttnBf16TcBackwardLayout {
  char *globals = nullptr, *lse = nullptr, *D = nullptr, *out = nullptr;
  int64_t bytes = 0;
};
inline AttnBf16TcBackwardLayout attention_bf16_tc_backward_layout(char *base, int64_t B,
                                                                  int64_t Tn, int64_t H,
                                                                  int64_t dh,
                                                                  int64_t globals_bytes) {
  AttnScratch a{base};
  AttnBf16TcBackwardLayout l;
  if (globals_bytes > 0)
    l.globals = a.take(globals_bytes);
  l.lse = a.take(B * H * Tn * (int64_t)sizeof(float));
  l.D = a.take(B * H * Tn * (int64_t)sizeof(float));
  l.out = a.take(B * Tn * H * dh * (int64_t)sizeof(bf16_t));
  l.bytes = a.used;
  return l;
}

/// The BF16 tensor-core backward (dh 32/64/128; DHS 0 or dh) over the
/// layout l: forward(out, ld_out, lse) recomputes the forward (into `core`
/// when given and nothing is saved, as the f32 launchers, else l.out), then
/// D and the Mode kernels.
template <int DHS, int Mode, typename Forward>
inline cudaError_t attn_bf16_tc_backward_run(
    int dh, int B, int Tn, int H, const bf16_t *q, const bf16_t *k, const bf16_t *v,
    int64_t ld_in, const bf16_t *dout, int64_t ld_dout, bf16_t *dq, bf16_t *dk, bf16_t *dv,
    int64_t ld_grad, const uint8_t *kpm, int causal, float scale, int window, int dilation,
    const DilatedGlobals &g, const AttentionDropout<float> &drop, bool toCore, bf16_t *core,
    const AttnBf16TcBackwardLayout &l, Forward &&forward, cudaStream_t stream) {
  bf16_t *out = toCore ? core : reinterpret_cast<bf16_t *>(l.out);
  const int64_t ldOut = toCore ? ld_dout : (int64_t)H * dh;
  float *lse = reinterpret_cast<float *>(l.lse), *D = reinterpret_cast<float *>(l.D);
  cudaError_t e;
  if ((e = forward(out, ldOut, lse)) != cudaSuccess ||
      (e = attention_bwd_rowdot<bf16_t>(B, Tn, H, dh, dout, ld_dout, out, ldOut, D, stream)) !=
          cudaSuccess)
    return e;
  auto run = [&](auto dhc) -> cudaError_t {
    return attn_bf16_tc_backward<decltype(dhc)::value, Mode>(
        B, Tn, H, q, k, v, ld_in, dout, ld_dout, lse, D, dq, dk, dv, ld_grad, kpm, causal, scale,
        window, dilation, g, drop, stream);
  };
  if constexpr (DHS != 0)
    return run(std::integral_constant<int, DHS>());
  else
    return dh == 32   ? run(std::integral_constant<int, 32>())
           : dh == 64 ? run(std::integral_constant<int, 64>())
                      : run(std::integral_constant<int, 128>());
}

/// Workspace layout of the dense and dilated backwards (bytes from their
/// scratch): the dilated kernels' global-token tables (globals_bytes, as
/// launch_dilated_attention_dyn; none for dense), D, and when recomputing
/// (no saved lse) the lse and the output.
struct AttnBackwardLayout {
  char *globals = nullptr, *D = nullptr, *lse = nullptr, *out = nullptr;
  int64_t bytes = 0;
};
inline AttnBackwardLayout attention_backward_layout(char *base, int64_t B, int64_t Tn,
                                                    int64_t H, int64_t dh, int64_t elem,
                                                    bool recompute, int64_t globals_bytes) {
  AttnScratch a{base};
  AttnBackwardLayout l;
  if (globals_bytes > 0)
    l.globals = a.take(globals_bytes);
  l.D = a.take(B * H * Tn * elem);
  if (recompute) {
    l.lse = a.take(B * H * Tn * elem);
    l.out = a.take(B * Tn * H * dh * elem);
  }
  l.bytes = a.used;
  return l;
}

/// Device scratch (bytes) of launch_flash_attention_backward; `recompute`
/// = no saved log-sum-exp is passed. elem = sizeof(bf16_t): the bf16
/// launcher's, which always recomputes (dh 32/64/128:
/// attention_bf16_tc_backward_layout, else attention_bf16_backward_layout).
inline int64_t flash_attention_backward_workspace_bytes(int64_t B, int64_t Tn, int64_t H,
                                                        int64_t dh, int64_t elem,
                                                        int recompute) {
  if (elem == (int64_t)sizeof(bf16_t) && attn_bf16_tc_backward_covers((int)dh))
    return attention_bf16_tc_backward_layout(nullptr, B, Tn, H, dh, 0).bytes;
  if (elem == (int64_t)sizeof(bf16_t))
    return attention_bf16_backward_layout(
               nullptr, B * Tn, H * dh,
               flash_attention_backward_workspace_bytes(B, Tn, H, dh, sizeof(float), 1), 4, 3)
        .bytes;
  return attention_backward_layout(nullptr, B, Tn, H, dh, elem, recompute != 0, 0).bytes;
}

/// The forward the backward reads (the saved one, or the training forward
/// run again into the scratch / `core`), per kind below.
template <typename T>
inline bool attention_backward_refs(const T *saved_out, const T *saved_lse, T *core,
                                    int64_t ld_dout, T *scratch_out, int64_t ld_scratch,
                                    T *scratch_lse, AttnForwardRefs<T> &r, T *&fwd_out,
                                    int64_t &fwd_ld, T *&fwd_lse) {
  if (saved_lse) {
    if (!saved_out)
      return false;
    r.out = saved_out;
    r.ld_out = ld_dout;
    r.lse = saved_lse;
    fwd_out = nullptr;
    fwd_lse = nullptr;
    return true;
  }
  fwd_out = core ? core : scratch_out;
  fwd_ld = core ? ld_dout : ld_scratch;
  fwd_lse = scratch_lse;
  r.out = fwd_out;
  r.ld_out = fwd_ld;
  r.lse = fwd_lse;
  return true;
}

/// nnk.attention_grad, kind dense (nncc_attention_backward with
/// NNCC_ATTN_DENSE). q, k, v: rows of stride ld_in (head h at columns
/// [h*dh, (h+1)*dh)); dout rows of stride ld_dout; overwrites dq, dk, dv
/// (row stride ld_grad). Dropout: rate, Philox seed and step offset of the
/// forward. saved_out / saved_lse: the training forward's output (row
/// stride ld_dout) and log-sum-exp [B, H, T] (both or neither); without
/// them the forward runs again and `core` (optional, stride ld_dout)
/// receives its output. scratch: flash_attention_backward_workspace_bytes(
/// B, T, H, dh, sizeof(T), saved_lse == NULL). DHS as flash_attention_forward.
/// f32 / f64 (bf16: the overload below).
template <typename T, int DHS = 0, std::enable_if_t<!is_bf16_v<T>, int> = 0>
inline cudaError_t launch_flash_attention_backward(
    int dh, int B, int Tn, int H, const T *q, const T *k, const T *v, int64_t ld_in,
    const T *dout, int64_t ld_dout, T *dq, T *dk, T *dv, int64_t ld_grad, const uint8_t *kpm,
    int causal, acc_t<T> scale, double dropout, uint64_t seed, uint64_t offset,
    const T *saved_out, const T *saved_lse, T *core, char *scratch, cudaStream_t stream = 0) {
  if (!attention_dropout_valid(dropout) || dh <= 0 || dh > kMaxHeadDim)
    return cudaErrorInvalidValue;
  if (B <= 0 || Tn <= 0)
    return cudaSuccess;
  const AttentionDropout<T> drop = attention_dropout_of<T>(dropout, seed, offset);
  const AttnBackwardLayout l =
      attention_backward_layout(scratch, B, Tn, H, dh, sizeof(T), saved_lse == nullptr, 0);
  AttnForwardRefs<T> r;
  T *fwdOut, *fwdLse;
  int64_t fwdLd = 0;
  if (!attention_backward_refs<T>(saved_out, saved_lse, core, ld_dout,
                                  reinterpret_cast<T *>(l.out), (int64_t)H * dh,
                                  reinterpret_cast<T *>(l.lse), r, fwdOut, fwdLd, fwdLse))
    return cudaErrorInvalidValue;
  cudaError_t e;
  if (fwdLse &&
      (e = flash_attention_forward<T, DHS>(dh, B, Tn, H, q, k, v, ld_in, fwdOut, fwdLd, kpm,
                                           causal, scale, fwdLse, drop, stream)) != cudaSuccess)
    return e;
  T *D = reinterpret_cast<T *>(l.D);
  if ((e = attention_bwd_rowdot<T>(B, Tn, H, dh, dout, ld_dout, r.out, r.ld_out, D, stream)) !=
      cudaSuccess)
    return e;
  const T *lse = r.lse;
  return attention_dispatch_dh<DHS>(dh, [&](auto dhc, auto exact) -> cudaError_t {
    constexpr int DH = decltype(dhc)::value;
    constexpr bool Exact = decltype(exact)::value;
    if constexpr (Exact) { // dh 32, 64, 128: the tile kernels
      return attn_tile_backward<T, DH, kAttnTileDense>(B, Tn, H, q, k, v, ld_in, dout, ld_dout,
                                                       lse, D, dq, dk, dv, ld_grad, kpm, causal,
                                                       scale, 0, 1, DilatedGlobals(), drop,
                                                       stream);
    } else {
      constexpr int BT = attn_tile_keys<T, DH>();
      constexpr int NT = 64; // threads: keys (dK/dV) or queries (dQ) per CTA
      dim3 grid((Tn + NT - 1) / NT, H, B);
      flash_attention_bwd_dkdv_kernel<T, DH, NT, BT, Exact><<<grid, NT, 0, stream>>>(
          Tn, q, k, v, ld_in, dout, ld_dout, lse, D, dk, dv, ld_grad, kpm, causal, scale, drop,
          dh);
      cudaError_t err = cudaGetLastError();
      if (err != cudaSuccess)
        return err;
      flash_attention_bwd_dq_kernel<T, DH, NT, BT, Exact><<<grid, NT, 0, stream>>>(
          Tn, q, k, v, ld_in, dout, ld_dout, lse, D, dq, ld_grad, kpm, causal, scale, drop, dh);
      return cudaGetLastError();
    }
  });
}

/// The bf16 dense backward: dh 32/64/128 on BF16 tensor cores (see "bf16:
/// the dense backward on BF16 tensor cores"), other head sizes
/// launch_flash_attention_backward<float, DHS> in recompute mode on fp32
/// copies of q, k, v, dout, its dq, dk, dv and output rounded once (see
/// "bf16: the fp32 backward on widened copies"). Both recompute the
/// forward: saved_out / saved_lse (both or neither) are not read, but as in
/// f32 the recomputed output goes to `core` only without them. Operands
/// otherwise as the f32 launcher. scratch:
/// flash_attention_backward_workspace_bytes(B, T, H, dh, sizeof(bf16_t), any).
template <typename T, int DHS = 0, std::enable_if_t<is_bf16_v<T>, int> = 0>
inline cudaError_t launch_flash_attention_backward(
    int dh, int B, int Tn, int H, const T *q, const T *k, const T *v, int64_t ld_in,
    const T *dout, int64_t ld_dout, T *dq, T *dk, T *dv, int64_t ld_grad, const uint8_t *kpm,
    int causal, acc_t<T> scale, double dropout, uint64_t seed, uint64_t offset,
    const T *saved_out, const T *saved_lse, T *core, char *scratch, cudaStream_t stream = 0) {
  if (!attention_dropout_valid(dropout) || dh <= 0 || dh > kMaxHeadDim ||
      (DHS != 0 && dh != DHS) || (saved_lse && !saved_out))
    return cudaErrorInvalidValue;
  if (B <= 0 || Tn <= 0)
    return cudaSuccess;
  const int E = H * dh;
  if (attn_bf16_tc_backward_covers(dh)) {
    const AttentionDropout<float> drop = attention_dropout_of<float>(dropout, seed, offset);
    return attn_bf16_tc_backward_run<DHS, kAttnTileDense>(
        dh, B, Tn, H, q, k, v, ld_in, dout, ld_dout, dq, dk, dv, ld_grad, kpm, causal, scale, 0,
        1, DilatedGlobals(), drop, core && !saved_lse, core,
        attention_bf16_tc_backward_layout(scratch, B, Tn, H, dh, 0),
        [&](T *out, int64_t ldOut, float *lse) {
          return flash_attention_forward<T, DHS>(dh, B, Tn, H, q, k, v, ld_in, out, ldOut, kpm,
                                                 causal, scale, lse, drop, stream);
        },
        stream);
  }
  const int64_t rows = (int64_t)B * Tn;
  const AttnBf16BackwardLayout l = attention_bf16_backward_layout(
      scratch, rows, E, flash_attention_backward_workspace_bytes(B, Tn, H, dh, sizeof(float), 1),
      4, 3);
  const float *out32 = reinterpret_cast<const float *>(
      attention_backward_layout(l.f32, B, Tn, H, dh, sizeof(float), true, 0).out);
  return attn_bf16_backward(
      rows, E, q, k, v, ld_in, dout, ld_dout, dq, dk, dv, ld_grad,
      saved_lse ? nullptr : core, out32, l,
      [&](const float *q32, const float *k32, const float *v32, const float *dout32, float *dq32,
          float *dk32, float *dv32) {
        return launch_flash_attention_backward<float, DHS>(
            dh, B, Tn, H, q32, k32, v32, E, dout32, E, dq32, dk32, dv32, E, kpm, causal, scale,
            dropout, seed, offset, nullptr, nullptr, nullptr, l.f32, stream);
      },
      stream);
}

//===----------------------------------------------------------------------===//
// Dilated sliding window + global tokens
//===----------------------------------------------------------------------===//

/// The queries i whose key list (for_each_dilated_key) holds key j, each
/// once: the mirror of that function (the band is symmetric; a global key
/// is seen by every query, a global query sees every key; causal keeps
/// i >= j; a padded key is in no list, padding never masks a query).
template <typename Visit>
__device__ __forceinline__ void for_each_dilated_query(int j, int Tn, int window, int dilation,
                                                       const uint8_t *is_global,
                                                       const int32_t *globals, int n_global,
                                                       bool causal, const uint8_t *kpm_row,
                                                       Visit &&visit) {
  if (kpm_row && kpm_row[j])
    return;
  const int iStart = causal ? j : 0;
  if (is_global[j]) {
    for (int i = iStart; i < Tn; ++i)
      visit(i);
    return;
  }
  const int half = window / 2;
  for (int o = -half; o <= half; ++o) {
    const int i = j + o * dilation;
    if (i >= iStart && i < Tn)
      visit(i);
  }
  for (int g = 0; g < n_global; ++g) {
    const int i = globals[g];
    if (i >= iStart && !dilated_band(i, j, window, dilation))
      visit(i);
  }
}

/// dQ of query i (one thread per (b, h, i); grid = (ceil(T/128), H, B)):
/// its keys in the forward's order. Overwrites dq rows.
template <typename T, int DH, bool Exact>
__global__ void dilated_attention_bwd_dq_kernel(
    int Tn, const T *__restrict__ q, const T *__restrict__ k, const T *__restrict__ v,
    int64_t ld_in, const T *__restrict__ dout, int64_t ld_dout, const T *__restrict__ lse,
    const T *__restrict__ Dq, T *dq, int64_t ld_grad, const uint8_t *kpm, int causal, T scale,
    int window, int dilation, const uint8_t *is_global, const int32_t *globals, int n_global,
    AttentionDropout<T> drop, int dh_rt) {
  const int dh = Exact ? DH : dh_rt;
  const int b = blockIdx.z, h = blockIdx.y, H = gridDim.y;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= Tn)
    return;
  const uint8_t *kpmRow = kpm ? kpm + (int64_t)b * Tn : nullptr;
  const int64_t bh = (int64_t)b * H + h;
  const T L = lse[bh * Tn + i], Di = Dq[bh * Tn + i];
  const bool live = L > neg_big<T>();
  const T *kb = k + (int64_t)b * Tn * ld_in + h * dh;
  const T *vb = v + (int64_t)b * Tn * ld_in + h * dh;
  const uint64_t rowCounter = (uint64_t)((bh * Tn + i) * (int64_t)Tn);
  T qr[DH], dor[DH], acc[DH];
  attn_row_load(qr, q + ((int64_t)b * Tn + i) * ld_in + h * dh, dh, live);
  attn_row_load(dor, dout + ((int64_t)b * Tn + i) * ld_dout + h * dh, dh, live);
#pragma unroll
  for (int d = 0; d < DH; ++d)
    acc[d] = T(0);
  if (live)
    for_each_dilated_key(i, Tn, window, dilation, is_global, globals, n_global, causal != 0,
                         kpmRow, [&](int j) {
                           attn_query_pair<T, DH, Exact>(
                               qr, dor, kb + (int64_t)j * ld_in, vb + (int64_t)j * ld_in, L,
                               Di, scale, drop.mult(rowCounter + (uint64_t)j), dh, acc);
                         });
  T *dqr = dq + ((int64_t)b * Tn + i) * ld_grad + h * dh;
#pragma unroll
  for (int d = 0; d < DH; ++d)
    if (d < dh)
      dqr[d] = acc[d];
}

/// dK, dV of key j (one thread per (b, h, j); grid = (ceil(T/128), H, B)):
/// the queries that attend it (for_each_dilated_query). Overwrites dk, dv.
template <typename T, int DH, bool Exact>
__global__ void dilated_attention_bwd_dkdv_kernel(
    int Tn, const T *__restrict__ q, const T *__restrict__ k, const T *__restrict__ v,
    int64_t ld_in, const T *__restrict__ dout, int64_t ld_dout, const T *__restrict__ lse,
    const T *__restrict__ Dq, T *dk, T *dv, int64_t ld_grad, const uint8_t *kpm, int causal,
    T scale, int window, int dilation, const uint8_t *is_global, const int32_t *globals,
    int n_global, AttentionDropout<T> drop, int dh_rt) {
  const int dh = Exact ? DH : dh_rt;
  const int b = blockIdx.z, h = blockIdx.y, H = gridDim.y;
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= Tn)
    return;
  const uint8_t *kpmRow = kpm ? kpm + (int64_t)b * Tn : nullptr;
  const int64_t bh = (int64_t)b * H + h;
  const T *qb = q + (int64_t)b * Tn * ld_in + h * dh;
  const T *dob = dout + (int64_t)b * Tn * ld_dout + h * dh;
  T kr[DH], vr[DH], dka[DH], dva[DH];
  attn_row_load(kr, k + ((int64_t)b * Tn + j) * ld_in + h * dh, dh, true);
  attn_row_load(vr, v + ((int64_t)b * Tn + j) * ld_in + h * dh, dh, true);
#pragma unroll
  for (int d = 0; d < DH; ++d) {
    dka[d] = T(0);
    dva[d] = T(0);
  }
  for_each_dilated_query(j, Tn, window, dilation, is_global, globals, n_global, causal != 0,
                         kpmRow, [&](int i) {
                           const T L = lse[bh * Tn + i];
                           if (!(L > neg_big<T>()))
                             return;
                           attn_key_pair<T, DH, Exact>(
                               kr, vr, qb + (int64_t)i * ld_in, dob + (int64_t)i * ld_dout, L,
                               Dq[bh * Tn + i], scale,
                               drop.mult((uint64_t)((bh * Tn + i) * (int64_t)Tn + j)), dh, dka,
                               dva);
                         });
  T *dkr = dk + ((int64_t)b * Tn + j) * ld_grad + h * dh;
  T *dvr = dv + ((int64_t)b * Tn + j) * ld_grad + h * dh;
#pragma unroll
  for (int d = 0; d < DH; ++d)
    if (d < dh) {
      dkr[d] = dka[d];
      dvr[d] = dva[d];
    }
}

/// Device scratch (bytes) of launch_dilated_attention_backward; n_global =
/// the number of host global positions passed. elem = sizeof(bf16_t): the
/// bf16 launcher's, which always recomputes (dh 32/64/128:
/// attention_bf16_tc_backward_layout, else attention_bf16_backward_layout).
inline int64_t dilated_attention_backward_workspace_bytes(int64_t B, int64_t Tn, int64_t H,
                                                          int64_t dh, int64_t n_global,
                                                          int64_t elem, int recompute) {
  if (elem == (int64_t)sizeof(bf16_t) && attn_bf16_tc_backward_covers((int)dh))
    return attention_bf16_tc_backward_layout(nullptr, B, Tn, H, dh,
                                             dilated_attention_scratch_bytes(Tn, n_global))
        .bytes;
  if (elem == (int64_t)sizeof(bf16_t))
    return attention_bf16_backward_layout(nullptr, B * Tn, H * dh,
                                          dilated_attention_backward_workspace_bytes(
                                              B, Tn, H, dh, n_global, sizeof(float), 1),
                                          4, 3)
        .bytes;
  return attention_backward_layout(nullptr, B, Tn, H, dh, elem, recompute != 0,
                                   dilated_attention_scratch_bytes(Tn, n_global))
      .bytes;
}

/// nnk.attention_grad, kind dilated (nncc_attention_backward with
/// NNCC_ATTN_DILATED): operands as launch_flash_attention_backward, window,
/// dilation and host global positions as launch_dilated_attention_dyn (at
/// most 64 distinct ones < T). The CPU runs residue-class tiles
/// (DilatedAttention.cpp) over the same keys and counters, so the key lists
/// here give the same gradients up to rounding.
/// scratch: dilated_attention_backward_workspace_bytes(B, T, H, dh,
/// n_host_globals, sizeof(T), saved_lse == NULL). f32 / f64 (bf16: the
/// overload below).
template <typename T, int DHS = 0, std::enable_if_t<!is_bf16_v<T>, int> = 0>
inline cudaError_t launch_dilated_attention_backward(
    int dh, int B, int Tn, int H, const T *q, const T *k, const T *v, int64_t ld_in,
    const T *dout, int64_t ld_dout, T *dq, T *dk, T *dv, int64_t ld_grad, const uint8_t *kpm,
    int causal, acc_t<T> scale, int window, int dilation, const int32_t *host_globals,
    int n_host_globals, double dropout, uint64_t seed, uint64_t offset, const T *saved_out,
    const T *saved_lse, T *core, char *scratch, cudaStream_t stream = 0) {
  if (!attention_dropout_valid(dropout) || dh <= 0 || dh > kMaxHeadDim || window < 1 ||
      dilation < 1 || n_host_globals < 0)
    return cudaErrorInvalidValue;
  if (B <= 0 || Tn <= 0)
    return cudaSuccess;
  const AttentionDropout<T> drop = attention_dropout_of<T>(dropout, seed, offset);
  const AttnBackwardLayout l =
      attention_backward_layout(scratch, B, Tn, H, dh, sizeof(T), saved_lse == nullptr,
                                dilated_attention_scratch_bytes(Tn, n_host_globals));
  AttnForwardRefs<T> r;
  T *fwdOut, *fwdLse;
  int64_t fwdLd = 0;
  if (!attention_backward_refs<T>(saved_out, saved_lse, core, ld_dout,
                                  reinterpret_cast<T *>(l.out), (int64_t)H * dh,
                                  reinterpret_cast<T *>(l.lse), r, fwdOut, fwdLd, fwdLse))
    return cudaErrorInvalidValue;
  DilatedGlobals g;
  cudaError_t e = dilated_upload_globals(Tn, host_globals, n_host_globals, l.globals, g, stream);
  if (e != cudaSuccess)
    return e;
  if (fwdLse && (e = dilated_attention_forward<T, DHS>(dh, B, Tn, H, q, k, v, ld_in, fwdOut,
                                                       fwdLd, kpm, causal, scale, window,
                                                       dilation, g, fwdLse, drop, stream)) !=
                    cudaSuccess)
    return e;
  T *D = reinterpret_cast<T *>(l.D);
  if ((e = attention_bwd_rowdot<T>(B, Tn, H, dh, dout, ld_dout, r.out, r.ld_out, D, stream)) !=
      cudaSuccess)
    return e;
  const T *lse = r.lse;
  return attention_dispatch_dh<DHS>(dh, [&](auto dhc, auto exact) -> cudaError_t {
    constexpr int DH = decltype(dhc)::value;
    constexpr bool Exact = decltype(exact)::value;
    if constexpr (Exact) { // dh 32, 64, 128: the band tile kernels
      return attn_tile_backward<T, DH, kAttnTileBand>(B, Tn, H, q, k, v, ld_in, dout, ld_dout,
                                                      lse, D, dq, dk, dv, ld_grad, kpm, causal,
                                                      scale, window, dilation, g, drop, stream);
    } else {
      dim3 grid((Tn + 127) / 128, H, B);
      dilated_attention_bwd_dkdv_kernel<T, DH, Exact><<<grid, 128, 0, stream>>>(
          Tn, q, k, v, ld_in, dout, ld_dout, lse, D, dk, dv, ld_grad, kpm, causal, scale, window,
          dilation, g.is_global, g.list, g.n, drop, dh);
      cudaError_t err = cudaGetLastError();
      if (err != cudaSuccess)
        return err;
      dilated_attention_bwd_dq_kernel<T, DH, Exact><<<grid, 128, 0, stream>>>(
          Tn, q, k, v, ld_in, dout, ld_dout, lse, D, dq, ld_grad, kpm, causal, scale, window,
          dilation, g.is_global, g.list, g.n, drop, dh);
      return cudaGetLastError();
    }
  });
}

/// The bf16 dilated backward, as the bf16 launch_flash_attention_backward:
/// dh 32/64/128 on BF16 tensor cores in band mode (the global rows in fp32
/// on the bf16 rows: attention_bwd_global_kernel), other head sizes
/// launch_dilated_attention_backward<float, DHS> in recompute mode on fp32
/// copies. scratch: dilated_attention_backward_workspace_bytes(B, T, H, dh,
/// n_host_globals, sizeof(bf16_t), any).
template <typename T, int DHS = 0, std::enable_if_t<is_bf16_v<T>, int> = 0>
inline cudaError_t launch_dilated_attention_backward(
    int dh, int B, int Tn, int H, const T *q, const T *k, const T *v, int64_t ld_in,
    const T *dout, int64_t ld_dout, T *dq, T *dk, T *dv, int64_t ld_grad, const uint8_t *kpm,
    int causal, acc_t<T> scale, int window, int dilation, const int32_t *host_globals,
    int n_host_globals, double dropout, uint64_t seed, uint64_t offset, const T *saved_out,
    const T *saved_lse, T *core, char *scratch, cudaStream_t stream = 0) {
  if (!attention_dropout_valid(dropout) || dh <= 0 || dh > kMaxHeadDim ||
      (DHS != 0 && dh != DHS) || window < 1 || dilation < 1 || n_host_globals < 0 ||
      (saved_lse && !saved_out))
    return cudaErrorInvalidValue;
  if (B <= 0 || Tn <= 0)
    return cudaSuccess;
  if (attn_bf16_tc_backward_covers(dh)) {
    const AttentionDropout<float> drop = attention_dropout_of<float>(dropout, seed, offset);
    const AttnBf16TcBackwardLayout l = attention_bf16_tc_backward_layout(
        scratch, B, Tn, H, dh, dilated_attention_scratch_bytes(Tn, n_host_globals));
    DilatedGlobals g;
    const cudaError_t e =
        dilated_upload_globals(Tn, host_globals, n_host_globals, l.globals, g, stream);
    if (e != cudaSuccess)
      return e;
    return attn_bf16_tc_backward_run<DHS, kAttnTileBand>(
        dh, B, Tn, H, q, k, v, ld_in, dout, ld_dout, dq, dk, dv, ld_grad, kpm, causal, scale,
        window, dilation, g, drop, core && !saved_lse, core, l,
        [&](T *out, int64_t ldOut, float *lse) {
          return dilated_attention_forward<T, DHS>(dh, B, Tn, H, q, k, v, ld_in, out, ldOut, kpm,
                                                   causal, scale, window, dilation, g, lse, drop,
                                                   stream);
        },
        stream);
  }
  const int E = H * dh;
  const int64_t rows = (int64_t)B * Tn;
  const AttnBf16BackwardLayout l = attention_bf16_backward_layout(
      scratch, rows, E,
      dilated_attention_backward_workspace_bytes(B, Tn, H, dh, n_host_globals, sizeof(float), 1),
      4, 3);
  const float *out32 = reinterpret_cast<const float *>(
      attention_backward_layout(l.f32, B, Tn, H, dh, sizeof(float), true,
                                dilated_attention_scratch_bytes(Tn, n_host_globals))
          .out);
  return attn_bf16_backward(
      rows, E, q, k, v, ld_in, dout, ld_dout, dq, dk, dv, ld_grad,
      saved_lse ? nullptr : core, out32, l,
      [&](const float *q32, const float *k32, const float *v32, const float *dout32, float *dq32,
          float *dk32, float *dv32) {
        return launch_dilated_attention_backward<float, DHS>(
            dh, B, Tn, H, q32, k32, v32, E, dout32, E, dq32, dk32, dv32, E, kpm, causal, scale,
            window, dilation, host_globals, n_host_globals, dropout, seed, offset, nullptr,
            nullptr, nullptr, l.f32, stream);
      },
      stream);
}

//===----------------------------------------------------------------------===//
// LSH (Reformer)
//===----------------------------------------------------------------------===//

/// rank[task, order[task, p]] = p: each position's place in its round's
/// sorted order (task = (b*H + h)*R + r).
static __global__ void lsh_rank_kernel(int64_t n, int Tn, const int32_t *__restrict__ order,
                                       int32_t *__restrict__ rank) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t task = i / Tn;
    rank[task * Tn + order[i]] = (int32_t)(i % Tn);
  }
}

/// Sorted positions [lo, hi) of the keys of the query at sorted position
/// pos: its own chunk and the previous one (none before chunk 0).
__device__ __forceinline__ void lsh_key_window(int pos, int chunk, int Tn, int &lo, int &hi) {
  const int64_t c = pos / chunk;
  lo = c > 0 ? (int)((c - 1) * chunk) : 0;
  hi = (int)((c + 1) * chunk < (int64_t)Tn ? (c + 1) * chunk : (int64_t)Tn);
}

/// Whether key u (u != t) is one of query t's other keys in a round
/// (buckets bk of that round), as the CPU's keyList.
__device__ __forceinline__ bool lsh_other_key(int t, int u, bool causal,
                                              const uint8_t *kpm_row, bool same_bucket,
                                              const int32_t *bk) {
  return u != t && key_admissible(t, u, causal, kpm_row) && (!same_bucket || bk[u] == bk[t]);
}

/// self_only[b, h, t]: no round offers t another admissible key and t is
/// not padded (lsh_self_only + the CPU backward's selfOnly): then t's key
/// list is itself, in every round.
static __global__ void lsh_self_only_kernel(int B, int Tn, int H, int rounds, int chunk,
                                            int causal, int same_bucket,
                                            const int32_t *__restrict__ buckets,
                                            const int32_t *__restrict__ order,
                                            const int32_t *__restrict__ rank,
                                            const uint8_t *kpm, uint8_t *self_only) {
  const int64_t n = (int64_t)B * H * Tn;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int t = (int)(i % Tn);
    const int64_t bh = i / Tn, b = bh / H;
    const uint8_t *kpmRow = kpm ? kpm + b * Tn : nullptr;
    bool other = false;
    for (int r = 0; r < rounds && !other; ++r) {
      const int64_t task = bh * rounds + r;
      const int32_t *ord = order + task * Tn, *bk = buckets + task * Tn;
      int lo, hi;
      lsh_key_window(rank[task * Tn + t], chunk, Tn, lo, hi);
      for (int pp = lo; pp < hi && !other; ++pp)
        other = lsh_other_key(t, ord[pp], causal != 0, kpmRow, same_bucket != 0, bk);
    }
    self_only[i] = !other && key_admissible(t, t, causal != 0, kpmRow);
  }
}

/// Key path of key u (one thread per (b, h, u); grid = (ceil(T/128), H,
/// B)): in every round its queries are the sorted positions of its own and
/// the next chunk that list it (itself only when self-only). Overwrites
/// dv rows; gkey[b, h, u] = the gradient through k^ = qk/|qk|
/// (unit_norm_grad), which the query kernel adds to dqk.
template <typename T, int DH, bool Exact>
__global__ void lsh_attention_bwd_key_kernel(
    int Tn, int H, int rounds, int chunk, int causal, int same_bucket, T scale,
    const T *__restrict__ qk, const T *__restrict__ v, int64_t ld_in,
    const T *__restrict__ dout, int64_t ld_dout, const T *__restrict__ kn,
    const T *__restrict__ inv_norm, const int32_t *__restrict__ buckets,
    const int32_t *__restrict__ order, const int32_t *__restrict__ rank,
    const uint8_t *__restrict__ self_only, const T *__restrict__ lse,
    const T *__restrict__ Dq, const uint8_t *kpm, T *dv, int64_t ld_grad, T *gkey,
    AttentionDropout<T> drop, int dh_rt) {
  const int dh = Exact ? DH : dh_rt;
  const int b = blockIdx.z, h = blockIdx.y;
  const int u = blockIdx.x * blockDim.x + threadIdx.x;
  if (u >= Tn)
    return;
  const uint8_t *kpmRow = kpm ? kpm + (int64_t)b * Tn : nullptr;
  const int64_t bh = (int64_t)b * H + h;
  const T *qb = qk + (int64_t)b * Tn * ld_in + h * dh;
  const T *dob = dout + (int64_t)b * Tn * ld_dout + h * dh;
  const bool selfU = self_only[bh * Tn + u] != 0;
  T kr[DH], vr[DH], dka[DH], dva[DH];
  attn_row_load(kr, kn + (bh * Tn + u) * dh, dh, true);
  attn_row_load(vr, v + ((int64_t)b * Tn + u) * ld_in + h * dh, dh, true);
#pragma unroll
  for (int d = 0; d < DH; ++d) {
    dka[d] = T(0);
    dva[d] = T(0);
  }
  for (int r = 0; r < rounds; ++r) {
    const int64_t task = bh * rounds + r;
    const int32_t *ord = order + task * Tn, *bk = buckets + task * Tn;
    const int64_t cu = rank[task * Tn + u] / chunk;
    const int p0 = (int)(cu * chunk);
    const int p1 = (int)((cu + 2) * chunk < (int64_t)Tn ? (cu + 2) * chunk : (int64_t)Tn);
    for (int pp = p0; pp < p1; ++pp) {
      const int t = ord[pp];
      if (t == u ? !selfU : !lsh_other_key(t, u, causal != 0, kpmRow, same_bucket != 0, bk))
        continue;
      const T L = lse[bh * Tn + t];
      if (!(L > neg_big<T>()))
        continue;
      attn_key_pair<T, DH, Exact>(kr, vr, qb + (int64_t)t * ld_in, dob + (int64_t)t * ld_dout, L,
                                  Dq[bh * Tn + t], scale,
                                  drop.mult((uint64_t)((task * Tn + t) * (int64_t)Tn + u)), dh,
                                  dka, dva);
    }
  }
  T *dvr = dv + ((int64_t)b * Tn + u) * ld_grad + h * dh;
  T *g = gkey + (bh * Tn + u) * dh;
  const T kd = attn_row_dot<T, DH, Exact>(kr, dka, dh);
  const T inv = inv_norm[bh * Tn + u];
#pragma unroll
  for (int d = 0; d < DH; ++d)
    if (d < dh) {
      dvr[d] = dva[d];
      g[d] = unit_norm_grad(kr[d], dka[d], kd, inv);
    }
}

/// Query path of query t (one thread per (b, h, t)): its keys k^_u in every
/// round (self only when self-only), then its own key path gkey[t].
/// Overwrites dqk rows.
template <typename T, int DH, bool Exact>
__global__ void lsh_attention_bwd_query_kernel(
    int Tn, int H, int rounds, int chunk, int causal, int same_bucket, T scale,
    const T *__restrict__ qk, const T *__restrict__ v, int64_t ld_in,
    const T *__restrict__ dout, int64_t ld_dout, const T *__restrict__ kn,
    const int32_t *__restrict__ buckets, const int32_t *__restrict__ order,
    const int32_t *__restrict__ rank, const uint8_t *__restrict__ self_only,
    const T *__restrict__ lse, const T *__restrict__ Dq, const uint8_t *kpm,
    const T *__restrict__ gkey, T *dqk, int64_t ld_grad, AttentionDropout<T> drop,
    int dh_rt) {
  const int dh = Exact ? DH : dh_rt;
  const int b = blockIdx.z, h = blockIdx.y;
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= Tn)
    return;
  const uint8_t *kpmRow = kpm ? kpm + (int64_t)b * Tn : nullptr;
  const int64_t bh = (int64_t)b * H + h;
  const T L = lse[bh * Tn + t], Di = Dq[bh * Tn + t];
  const bool live = L > neg_big<T>();
  const bool selfT = self_only[bh * Tn + t] != 0;
  const T *vb = v + (int64_t)b * Tn * ld_in + h * dh;
  const T *knb = kn + bh * Tn * dh;
  T qr[DH], dor[DH], acc[DH];
  attn_row_load(qr, qk + ((int64_t)b * Tn + t) * ld_in + h * dh, dh, live);
  attn_row_load(dor, dout + ((int64_t)b * Tn + t) * ld_dout + h * dh, dh, live);
#pragma unroll
  for (int d = 0; d < DH; ++d)
    acc[d] = T(0);
  for (int r = 0; r < rounds && live; ++r) {
    const int64_t task = bh * rounds + r;
    const int32_t *ord = order + task * Tn, *bk = buckets + task * Tn;
    int lo, hi;
    lsh_key_window(rank[task * Tn + t], chunk, Tn, lo, hi);
    for (int pp = lo; pp < hi; ++pp) {
      const int u = ord[pp];
      if (u == t ? !selfT : !lsh_other_key(t, u, causal != 0, kpmRow, same_bucket != 0, bk))
        continue;
      attn_query_pair<T, DH, Exact>(qr, dor, knb + (int64_t)u * dh, vb + (int64_t)u * ld_in, L,
                                    Di, scale,
                                    drop.mult((uint64_t)((task * Tn + t) * (int64_t)Tn + u)),
                                    dh, acc);
    }
  }
  T *dr = dqk + ((int64_t)b * Tn + t) * ld_grad + h * dh;
  const T *g = gkey + (bh * Tn + t) * dh;
#pragma unroll
  for (int d = 0; d < DH; ++d)
    if (d < dh)
      dr[d] = acc[d] + g[d];
}

/// The LSH backward on the tile kernels' micro-tiles (dh <= 128, padded to
/// DH = 32/64/128 as the forward's lsh_chunk_tile_kernel), one hash round
/// per launch: grid = (ceil(T/chunk) ceil(chunk/BR), H, B), a CTA owns BR
/// sorted positions of one chunk of round `round`. A row's terms of every
/// round go into the same output row, launch after launch (the first round
/// overwrites it): each launch has one owner per row, so the sums stay
/// deterministic without atomics, and no per-round copies are kept.
/// Admissible pairs as lsh_self_only_kernel / the CPU's keyList: a query's
/// other keys in the round (not itself, causal, not padded, its bucket
/// under same_bucket), or itself alone when it is self-only.

/// Key path: the CTA's keys u (k^ and v rows staged once) against the query
/// columns of the sorted positions of their own and the next chunk, BC at a
/// time; dv[u] and dkhat[u] (the gradient of k^_u) accumulate over the
/// rounds. The last round turns dkhat[u] into the gradient through
/// k^ = qk/|qk| (unit_norm_grad), which the query kernel's last round adds
/// to dqk. Dynamic shared memory: AttnBwdTile<T, DH>::smem_dkdv + BC ints.
template <typename T, int DH, bool Exact>
__global__ void __launch_bounds__(128) lsh_tile_bwd_key_kernel(
    int Tn, int rounds, int round, int chunk, int causal, int same_bucket, T scale,
    const T *__restrict__ qk, const T *__restrict__ v, int64_t ld_in,
    const T *__restrict__ dout, int64_t ld_dout, const T *__restrict__ kn,
    const T *__restrict__ inv_norm, const int32_t *__restrict__ buckets,
    const int32_t *__restrict__ order, const uint8_t *__restrict__ self_only,
    const T *__restrict__ lse, const T *__restrict__ Dq, const uint8_t *kpm, T *dv,
    int64_t ld_grad, T *dkhat, int dh_rt, int vec, AttentionDropout<T> drop) {
  using C = AttnBwdTile<T, DH>;
  constexpr int BR = C::BR_KV, BC = C::BC, VW = C::VW;
  constexpr int TM = BR / 16, TN = C::TN, TG = C::TG, LDQ = C::LDQ, LDP = C::LDP;
  extern __shared__ __align__(16) unsigned char nncc_lsh_bwd_smem[];
  const AttnBwdKvSmem<T, DH> sm(nncc_lsh_bwd_smem);
  int *colBucket = reinterpret_cast<int *>(sm.extra); // [BC]

  const int dh = Exact ? DH : dh_rt;
  const int h = blockIdx.y;
  LshTileCta cta; // rows: the CTA's keys
  if (!cta.init(Tn, gridDim.y, rounds, h, round, chunk, BR, order, buckets, kpm))
    return;
  const int b = cta.b, ch = cta.ch, p0 = cta.p0, nk = cta.rows;
  const int64_t bh = cta.bh, task = cta.task;
  const int32_t *ord = cta.ord, *bk = cta.bk;
  const uint8_t *kpmRow = cta.kpmRow;
  // The queries that may list these keys: sorted positions of chunks ch, ch + 1.
  const int q0 = ch * chunk, q1 = (int)min((int64_t)Tn, ((int64_t)ch + 2) * chunk);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int c = lane & 7, row0 = warp * (BR / 4) + (lane >> 3);

  const int64_t headIn = (int64_t)b * Tn * ld_in + (int64_t)h * dh;
  const int64_t headOut = (int64_t)b * Tn * ld_dout + (int64_t)h * dh;
  auto keyOf = [&](int t) { return t < nk ? ord[p0 + t] : -1; };
  attn_stage_rows<T, DH, BR, LDQ, C::NT>(sm.Ks, kn + bh * Tn * dh, dh, dh, vec != 0, T(1),
                                         keyOf);
  attn_stage_rows<T, DH, BR, LDQ, C::NT>(sm.Vs, v + headIn, ld_in, dh, vec != 0, T(1), keyOf);

  int kj[TM], kbk[TM]; // the thread's keys (-1: none or padded) and their buckets
  bool kself[TM];      // the key is self-only (its one query is itself)
  T dka[TM][TG * VW], dva[TM][TG * VW];
#pragma unroll
  for (int m = 0; m < TM; ++m) {
    const int u = keyOf(row0 + 4 * m);
    kj[m] = u >= 0 && !(kpmRow && kpmRow[u]) ? u : -1;
    kbk[m] = u >= 0 ? bk[u] : -1;
    kself[m] = u >= 0 && self_only[bh * Tn + u] != 0;
#pragma unroll
    for (int x = 0; x < TG * VW; ++x)
      dka[m][x] = dva[m][x] = T(0);
  }

  for (int i0 = q0; i0 < q1; i0 += BC) {
    auto queryOf = [&](int jj) { return i0 + jj < q1 ? ord[i0 + jj] : -1; };
    attn_bwd_stage_queries(sm, qk + headIn, ld_in, dout + headOut, ld_dout, dh, vec != 0,
                           lse + bh * Tn, Dq + bh * Tn, queryOf);
    for (int jj = threadIdx.x; jj < BC; jj += C::NT) {
      const int i = queryOf(jj);
      colBucket[jj] = i >= 0 ? bk[i] : -1;
    }
    __syncthreads();

    T s[TM][TN], dp[TM][TN];
    attn_tile_scores<T, DH, TM, TN, LDQ>(s, dp, sm.Ks + row0 * LDQ, sm.Qs + c * LDQ,
                                         sm.Vs + row0 * LDQ, sm.dOs + c * LDQ);
    attn_tile_pair_grads<T, TM, TN, LDP>(
        s, dp, scale, sm.Ps + row0 * LDP + c, sm.dSs + row0 * LDP + c,
        [&](int m, int n, int &i, int &j, T &L, T &D) {
          const int col = c + 8 * n;
          i = sm.colQ[col], j = kj[m], L = sm.colL[col], D = sm.colD[col];
          return i >= 0 && j >= 0 && L > neg_big<T>() &&
                 (i == j ? kself[m]
                         : !(causal && j > i) && (!same_bucket || colBucket[col] == kbk[m]));
        },
        [&](int, int, int i, int j) {
          return drop.mult((uint64_t)((task * Tn + i) * (int64_t)Tn + j));
        });
    __syncwarp(); // Ps, dSs rows are private to their warp
    attn_mt_accum<T, TM, TG, BC, LDP, LDQ>(dva, sm.Ps + row0 * LDP, sm.dOs + c * VW);
    attn_mt_accum<T, TM, TG, BC, LDP, LDQ>(dka, sm.dSs + row0 * LDP, sm.Qs + c * VW);
    __syncthreads(); // before the next tile overwrites the columns
  }

  const bool last = round == rounds - 1;
#pragma unroll
  for (int m = 0; m < TM; ++m) {
    const int t = row0 + 4 * m;
    const bool mine = t < nk;
    const int u = mine ? ord[p0 + t] : 0;
    T *dvr = dv + ((int64_t)b * Tn + u) * ld_grad + (int64_t)h * dh;
    T *dkr = dkhat + (bh * Tn + u) * dh;
    if (mine && round > 0)
      attn_mt_row_cols<TG, VW, Exact>(c, dh, [&](int x, int col) {
        dva[m][x] += dvr[col];
        dka[m][x] += dkr[col];
      });
    if (last) { // every lane takes part in the row sum
      T kd = T(0);
      attn_mt_row_cols<TG, VW, Exact>(
          c, dh, [&](int x, int col) { kd += sm.Ks[t * LDQ + col] * dka[m][x]; });
      kd = attn_row_lanes_sum(kd);
      if (mine) {
        const T inv = inv_norm[bh * Tn + u];
        attn_mt_row_cols<TG, VW, Exact>(c, dh, [&](int x, int col) {
          dka[m][x] = unit_norm_grad(sm.Ks[t * LDQ + col], dka[m][x], kd, inv);
        });
      }
    }
    if (mine)
      attn_mt_row_cols<TG, VW, Exact>(c, dh, [&](int x, int col) {
        dvr[col] = dva[m][x];
        dkr[col] = dka[m][x];
      });
  }
}

/// Query path: the CTA's queries (q and dO rows staged once) against the
/// key columns of the sorted positions of their own and the previous chunk,
/// BC at a time (k^ and v rows); dqk accumulates over the rounds, the last
/// adding the key path gkey of its own row. Dynamic shared memory:
/// AttnBwdTile<T, DH>::smem_dq + BC ints.
template <typename T, int DH, bool Exact>
__global__ void __launch_bounds__(128) lsh_tile_bwd_query_kernel(
    int Tn, int rounds, int round, int chunk, int causal, int same_bucket, T scale,
    const T *__restrict__ qk, const T *__restrict__ v, int64_t ld_in,
    const T *__restrict__ dout, int64_t ld_dout, const T *__restrict__ kn,
    const int32_t *__restrict__ buckets, const int32_t *__restrict__ order,
    const uint8_t *__restrict__ self_only, const T *__restrict__ lse,
    const T *__restrict__ Dq, const uint8_t *kpm, const T *__restrict__ gkey, T *dqk,
    int64_t ld_grad, int dh_rt, int vec, AttentionDropout<T> drop) {
  using C = AttnBwdTile<T, DH>;
  constexpr int BR = C::BR_Q, BC = C::BC, VW = C::VW;
  constexpr int TM = BR / 16, TN = C::TN, TG = C::TG, LDQ = C::LDQ, LDP = C::LDP;
  extern __shared__ __align__(16) unsigned char nncc_lsh_bwd_smem[];
  const AttnBwdQSmem<T, DH> sm(nncc_lsh_bwd_smem);
  int *keyBucket = reinterpret_cast<int *>(sm.extra); // [BC]

  const int dh = Exact ? DH : dh_rt;
  const int h = blockIdx.y;
  LshTileCta cta; // rows: the CTA's queries
  if (!cta.init(Tn, gridDim.y, rounds, h, round, chunk, BR, order, buckets, kpm))
    return;
  const int b = cta.b, ch = cta.ch, p0 = cta.p0, nq = cta.rows;
  const int64_t bh = cta.bh, task = cta.task;
  const int32_t *ord = cta.ord, *bk = cta.bk;
  const uint8_t *kpmRow = cta.kpmRow;
  // The query's keys: sorted positions of chunks ch - 1 (none before 0), ch.
  const int lo = ch > 0 ? (ch - 1) * chunk : 0, hi = cta.cEnd;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int c = lane & 7, row0 = warp * (BR / 4) + (lane >> 3);

  const int64_t headIn = (int64_t)b * Tn * ld_in + (int64_t)h * dh;
  const int64_t headOut = (int64_t)b * Tn * ld_dout + (int64_t)h * dh;
  auto queryOf = [&](int t) { return t < nq ? ord[p0 + t] : -1; };
  attn_stage_rows<T, DH, BR, LDQ, C::NT>(sm.Qs, qk + headIn, ld_in, dh, vec != 0, T(1),
                                         queryOf);
  attn_stage_rows<T, DH, BR, LDQ, C::NT>(sm.dOs, dout + headOut, ld_dout, dh, vec != 0, T(1),
                                         queryOf);

  int qi[TM], qbk[TM];
  bool qself[TM];
  T rowL[TM], rowD[TM], acc[TM][TG * VW];
#pragma unroll
  for (int m = 0; m < TM; ++m) {
    const int i = queryOf(row0 + 4 * m);
    qi[m] = i;
    qbk[m] = i >= 0 ? bk[i] : -1;
    qself[m] = i >= 0 && self_only[bh * Tn + i] != 0;
    rowL[m] = i >= 0 ? lse[bh * Tn + i] : neg_big<T>();
    rowD[m] = i >= 0 ? Dq[bh * Tn + i] : T(0);
#pragma unroll
    for (int x = 0; x < TG * VW; ++x)
      acc[m][x] = T(0);
  }

  for (int j0 = lo; j0 < hi; j0 += BC) {
    auto keyOf = [&](int jj) { return j0 + jj < hi ? ord[j0 + jj] : -1; };
    attn_stage_rows<T, DH, BC, LDQ, C::NT>(sm.Ks, kn + bh * Tn * dh, dh, dh, vec != 0, T(1),
                                           keyOf);
    attn_stage_rows<T, DH, BC, LDQ, C::NT>(sm.Vs, v + headIn, ld_in, dh, vec != 0, T(1),
                                           keyOf);
    for (int jj = threadIdx.x; jj < BC; jj += C::NT) {
      const int u = keyOf(jj);
      sm.kadm[jj] = u >= 0 && !(kpmRow && kpmRow[u]) ? u : -1;
      keyBucket[jj] = u >= 0 ? bk[u] : -1;
    }
    __syncthreads();

    T s[TM][TN], dp[TM][TN];
    attn_tile_scores<T, DH, TM, TN, LDQ>(s, dp, sm.Qs + row0 * LDQ, sm.Ks + c * LDQ,
                                         sm.dOs + row0 * LDQ, sm.Vs + c * LDQ);
    attn_tile_pair_grads<T, TM, TN, LDP>(
        s, dp, scale, (T *)nullptr, sm.dSs + row0 * LDP + c,
        [&](int m, int n, int &i, int &j, T &L, T &D) {
          const int col = c + 8 * n;
          i = qi[m], j = sm.kadm[col], L = rowL[m], D = rowD[m];
          return j >= 0 && L > neg_big<T>() &&
                 (i == j ? qself[m]
                         : !(causal && j > i) && (!same_bucket || keyBucket[col] == qbk[m]));
        },
        [&](int, int, int i, int j) {
          return drop.mult((uint64_t)((task * Tn + i) * (int64_t)Tn + j));
        });
    __syncwarp(); // dSs rows are private to their warp
    attn_mt_accum<T, TM, TG, BC, LDP, LDQ>(acc, sm.dSs + row0 * LDP, sm.Ks + c * VW);
    __syncthreads(); // before the next tile overwrites the columns
  }

  const bool last = round == rounds - 1;
#pragma unroll
  for (int m = 0; m < TM; ++m) {
    const int i = qi[m];
    if (i < 0)
      continue;
    T *dqr = dqk + ((int64_t)b * Tn + i) * ld_grad + (int64_t)h * dh;
    const T *g = gkey + (bh * Tn + i) * dh;
    attn_mt_row_cols<TG, VW, Exact>(c, dh, [&](int x, int col) {
      dqr[col] = acc[m][x] + (round > 0 ? dqr[col] : T(0)) + (last ? g[col] : T(0));
    });
  }
}

/// The 2 R launches of the tiled LSH backward: every round's key path
/// (the last one leaves the key-path gradient in gkey), then every round's
/// query path.
template <typename T, int DH, bool Exact>
inline cudaError_t lsh_tile_backward(int dh, int B, int Tn, int H, int rounds, int chunk,
                                     int causal, int same_bucket, T scale, const T *qk,
                                     const T *v, int64_t ld_in, const T *dout, int64_t ld_dout,
                                     const T *kn, const T *inv_norm, const int32_t *bk,
                                     const int32_t *ord, const uint8_t *self_only,
                                     const T *lse, const T *D, const uint8_t *kpm, T *dqk,
                                     T *dv, int64_t ld_grad, T *gkey,
                                     const AttentionDropout<T> &drop, cudaStream_t stream) {
  using C = AttnBwdTile<T, DH>;
  // k^ rows have stride dh (kn is 256-byte aligned scratch).
  const int vec = attn_bwd_vec_loads(qk, kn, v, ld_in, dout, ld_dout, dh) ? 1 : 0;
  const int64_t nChunks = (Tn + chunk - 1) / chunk;
  auto gridFor = [&](int rows) {
    return dim3((unsigned)(nChunks * ((chunk + rows - 1) / rows)), (unsigned)H, (unsigned)B);
  };
  const size_t smemKey = C::smem_dkdv + sizeof(int) * C::BC;
  const size_t smemQuery = C::smem_dq + sizeof(int) * C::BC;
  auto keyKernel = lsh_tile_bwd_key_kernel<T, DH, Exact>;
  auto queryKernel = lsh_tile_bwd_query_kernel<T, DH, Exact>;
  cudaError_t e;
  if ((e = cudaFuncSetAttribute(keyKernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)smemKey)) != cudaSuccess ||
      (e = cudaFuncSetAttribute(queryKernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)smemQuery)) != cudaSuccess)
    return e;
  for (int r = 0; r < rounds; ++r) {
    keyKernel<<<gridFor(C::BR_KV), C::NT, smemKey, stream>>>(
        Tn, rounds, r, chunk, causal, same_bucket, scale, qk, v, ld_in, dout, ld_dout, kn,
        inv_norm, bk, ord, self_only, lse, D, kpm, dv, ld_grad, gkey, dh, vec, drop);
    if ((e = cudaGetLastError()) != cudaSuccess)
      return e;
  }
  for (int r = 0; r < rounds; ++r) {
    queryKernel<<<gridFor(C::BR_Q), C::NT, smemQuery, stream>>>(
        Tn, rounds, r, chunk, causal, same_bucket, scale, qk, v, ld_in, dout, ld_dout, kn, bk,
        ord, self_only, lse, D, kpm, gkey, dqk, ld_grad, dh, vec, drop);
    if ((e = cudaGetLastError()) != cudaSuccess)
      return e;
  }
  return cudaSuccess;
}

/// Workspace layout of launch_lsh_attention_backward.
struct LshBackwardLayout {
  char *kn = nullptr, *inv_norm = nullptr, *buckets = nullptr, *order = nullptr,
       *rank = nullptr, *self_only = nullptr, *D = nullptr, *gkey = nullptr, *lse = nullptr,
       *out = nullptr, *fwd = nullptr;
  int64_t bytes = 0;
};
inline LshBackwardLayout lsh_attention_backward_layout(char *base, int64_t B, int64_t Tn,
                                                       int64_t H, int64_t dh, int64_t rounds,
                                                       int64_t elem, bool recompute) {
  AttnScratch a{base};
  LshBackwardLayout l;
  const int64_t bht = B * H * Tn, bhrt = bht * rounds;
  l.kn = a.take(bht * dh * elem);
  l.inv_norm = a.take(bht * elem);
  l.buckets = a.take(bhrt * 4);
  l.order = a.take(bhrt * 4);
  l.rank = a.take(bhrt * 4);
  l.self_only = a.take(bht);
  l.D = a.take(bht * elem);
  l.gkey = a.take(bht * dh * elem);
  if (recompute) {
    l.lse = a.take(bht * elem);
    l.out = a.take(B * Tn * H * dh * elem);
    l.fwd = a.take(lsh_attention_scratch_bytes(B, Tn, H, dh, rounds, elem));
  }
  l.bytes = a.used;
  return l;
}


/// HF convention (LshAttention.cuh, the CPU's hfBackward): whether query
/// t's combined log-sum-exp says it saw only its own position.
template <typename T> __device__ __forceinline__ bool lsh_hf_self_only(T L) {
  return L < lsh_hf_self_score<T>() / 2;
}

/// nself[b, h, t]: the self copies in all of t's windows when t saw only
/// itself (0 otherwise), each such copy weighing 1/nself exactly.
template <typename T>
__global__ void lsh_hf_nself_kernel(int B, int Tn, int H, int rounds, int chunk,
                                    const int32_t *__restrict__ order,
                                    const int32_t *__restrict__ rank, const T *__restrict__ lse,
                                    uint8_t *nself) {
  const LshHfGeom g = lsh_hf_geom(Tn, chunk, rounds);
  const int64_t n = (int64_t)B * H * Tn;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t task = i / Tn;
    const int t = (int)(i % Tn);
    int cnt = 0;
    if (lsh_hf_self_only(lse[i])) {
      const int32_t *ordT = order + task * rounds * Tn, *rankT = rank + task * rounds * Tn;
      for (int r = 0; r < g.Rq; ++r) {
        int64_t lo, hi, plo, phi;
        lsh_hf_window(g, lsh_hf_entry(g, rankT, r, t) / g.C, lo, hi, plo, phi);
        for (int pass = 0; pass < 2; ++pass)
          for (int64_t Q = pass ? lo : plo; Q < (pass ? hi : phi); ++Q)
            cnt += lsh_hf_pos(g, ordT, Q) == t;
      }
    }
    nself[i] = (uint8_t)cnt;
  }
}

/// Key path of position u (one thread per (b, h, u)): every query entry
/// whose window holds one of u's entries (the entry's chunk and the next,
/// wrapping; all queries on the standard path). Overwrites u's dv row and
/// gkey[b, h, u] = the gradient through k = qk / sqrt(|qk|^2 + dh eps)
/// (unit_norm_grad), which lsh_hf_bwd_query_kernel adds to dqk.
template <typename T>
__global__ void lsh_hf_bwd_key_kernel(int B, int Tn, int H, int dh, int rounds, int chunk,
                                      int causal, T scale, const T *__restrict__ qk,
                                      const T *__restrict__ v, int64_t ld_in,
                                      const T *__restrict__ dout, int64_t ld_dout,
                                      const T *__restrict__ kn, const T *__restrict__ inv_norm,
                                      const int32_t *__restrict__ order,
                                      const int32_t *__restrict__ rank,
                                      const uint8_t *__restrict__ nself,
                                      const T *__restrict__ lse, const T *__restrict__ Dq,
                                      const uint8_t *kpm, T *dv, int64_t ld_grad, T *gkey,
                                      AttentionDropout<T> drop) {
  const LshHfGeom g = lsh_hf_geom(Tn, chunk, rounds);
  const T selfScore = lsh_hf_self_score<T>();
  const int64_t n = (int64_t)B * H * Tn;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t task = i / Tn, b = task / H, h = task % H;
    const int u = (int)(i % Tn);
    const int32_t *ordT = order + task * rounds * Tn, *rankT = rank + task * rounds * Tn;
    const uint8_t *kpmRow = kpm ? kpm + b * Tn : nullptr;
    const T *knb = kn + task * Tn * dh, *vu = v + (b * Tn + u) * ld_in + h * dh;
    T *dvu = dv + (b * Tn + u) * ld_grad + h * dh, *gk = gkey + i * dh;
    for (int d = 0; d < dh; ++d)
      dvu[d] = gk[d] = T(0);
    for (int r = 0; r < g.Rq; ++r) {
      const int64_t cq = lsh_hf_entry(g, rankT, r, u) / g.C;
      // The queries of chunk cq and of the chunk that looks back at it.
      const int nq = g.chunked ? 2 : 1;
      for (int k = 0; k < nq; ++k) {
        const int64_t c = (cq + k) % g.nc;
        const int64_t lo = c * g.C, hi = lo + g.C < g.N ? lo + g.C : g.N;
        for (int64_t P = lo; P < hi; ++P) {
          const int t = lsh_hf_pos(g, ordT, P);
          const int rq = g.chunked ? (int)(P / Tn) : 0;
          const T Lt = lse[task * Tn + t];
          const T cm = drop.mult((uint64_t)(((task * rounds + rq) * Tn + t) * (int64_t)Tn + u));
          const T *dot = dout + (b * Tn + t) * ld_dout + h * dh;
          if (u == t) {
            const T w = cm * (lsh_hf_self_only(Lt) ? T(1) / T(nself[task * Tn + t])
                                                   : nexp(selfScore - Lt));
            for (int d = 0; d < dh; ++d)
              dvu[d] += w * dot[d];
            continue;
          }
          if (!key_admissible(t, u, causal != 0, kpmRow))
            continue;
          const T *qt = qk + (b * Tn + t) * ld_in + h * dh;
          T sc = T(0), dp = T(0);
          for (int d = 0; d < dh; ++d) {
            sc += qt[d] * knb[(int64_t)u * dh + d];
            dp += dot[d] * vu[d];
          }
          const T pe = nexp(sc * scale - Lt);
          const T ds = softmax_score_grad(pe, cm * dp, Dq[task * Tn + t]) * scale, pr = cm * pe;
          for (int d = 0; d < dh; ++d) {
            dvu[d] += pr * dot[d];
            gk[d] += ds * qt[d];
          }
        }
      }
    }
    T kd = T(0);
    for (int d = 0; d < dh; ++d)
      kd += knb[(int64_t)u * dh + d] * gk[d];
    for (int d = 0; d < dh; ++d)
      gk[d] = unit_norm_grad(knb[(int64_t)u * dh + d], gk[d], kd, inv_norm[i]);
  }
}

/// Query path of position t (one thread per (b, h, t)): its entries'
/// windows; dqk row = sum of dS k over them + gkey (the key path).
template <typename T>
__global__ void lsh_hf_bwd_query_kernel(int B, int Tn, int H, int dh, int rounds, int chunk,
                                        int causal, T scale, const T *__restrict__ qk,
                                        const T *__restrict__ v, int64_t ld_in,
                                        const T *__restrict__ dout, int64_t ld_dout,
                                        const T *__restrict__ kn,
                                        const int32_t *__restrict__ order,
                                        const int32_t *__restrict__ rank,
                                        const T *__restrict__ lse, const T *__restrict__ Dq,
                                        const uint8_t *kpm, const T *__restrict__ gkey, T *dqk,
                                        int64_t ld_grad, AttentionDropout<T> drop) {
  const LshHfGeom g = lsh_hf_geom(Tn, chunk, rounds);
  const int64_t n = (int64_t)B * H * Tn;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t task = i / Tn, b = task / H, h = task % H;
    const int t = (int)(i % Tn);
    const int32_t *ordT = order + task * rounds * Tn, *rankT = rank + task * rounds * Tn;
    const uint8_t *kpmRow = kpm ? kpm + b * Tn : nullptr;
    const T *knb = kn + task * Tn * dh, *qt = qk + (b * Tn + t) * ld_in + h * dh;
    const T *dot = dout + (b * Tn + t) * ld_dout + h * dh;
    const T Lt = lse[i], Dt = Dq[i];
    T *dq = dqk + (b * Tn + t) * ld_grad + h * dh;
    for (int d = 0; d < dh; ++d)
      dq[d] = gkey[i * dh + d];
    for (int r = 0; r < g.Rq; ++r) {
      const int64_t P = lsh_hf_entry(g, rankT, r, t);
      const int rq = g.chunked ? (int)(P / Tn) : 0;
      const uint64_t rc = (uint64_t)(((task * rounds + rq) * Tn + t) * (int64_t)Tn);
      int64_t lo, hi, plo, phi;
      lsh_hf_window(g, P / g.C, lo, hi, plo, phi);
      for (int pass = 0; pass < 2; ++pass)
        for (int64_t Q = pass ? lo : plo; Q < (pass ? hi : phi); ++Q) {
          const int u = lsh_hf_pos(g, ordT, Q);
          if (u == t || !key_admissible(t, u, causal != 0, kpmRow))
            continue;
          const T *vu = v + (b * Tn + u) * ld_in + h * dh;
          T sc = T(0), dp = T(0);
          for (int d = 0; d < dh; ++d) {
            sc += qt[d] * knb[(int64_t)u * dh + d];
            dp += dot[d] * vu[d];
          }
          const T ds =
              softmax_score_grad(nexp(sc * scale - Lt), drop.mult(rc + (uint64_t)u) * dp, Dt) *
              scale;
          for (int d = 0; d < dh; ++d)
            dq[d] += ds * knb[(int64_t)u * dh + d];
        }
    }
  }
}

/// The HF backward (flags kLshHfConvention) of launch_lsh_attention_backward
/// on its layout: keys with inv_norm, buckets, sort, ranks, nself, then the
/// key and query kernels. lse / D: the combined log-sum-exp and dO . O.
template <typename T>
inline cudaError_t lsh_hf_backward(int dh, int B, int Tn, int H, int rounds, int nbuckets,
                                   int chunk, int causal, T scale, const T *qk, const T *v,
                                   int64_t ld_in, const T *rot, const T *dout, int64_t ld_dout,
                                   T *dqk, T *dv, int64_t ld_grad, const uint8_t *kpm,
                                   const T *lse, const T *D, const LshBackwardLayout &l,
                                   const AttentionDropout<T> &drop, cudaStream_t stream) {
  T *kn = reinterpret_cast<T *>(l.kn), *invn = reinterpret_cast<T *>(l.inv_norm);
  int32_t *bk = reinterpret_cast<int32_t *>(l.buckets);
  int32_t *ord = reinterpret_cast<int32_t *>(l.order);
  int32_t *rank = reinterpret_cast<int32_t *>(l.rank);
  uint8_t *nself = reinterpret_cast<uint8_t *>(l.self_only);
  T *gkey = reinterpret_cast<T *>(l.gkey);
  const int64_t bht = (int64_t)B * H * Tn;
  cudaError_t e = lsh_hf_prepare<T>(dh, B, Tn, H, rounds, nbuckets, chunk, qk, ld_in, rot, kpm,
                                    kn, invn, bk, ord, rank, stream);
  if (e != cudaSuccess)
    return e;
  lsh_hf_nself_kernel<T><<<grid_for(bht, 128), 128, 0, stream>>>(B, Tn, H, rounds, chunk, ord,
                                                                 rank, lse, nself);
  if ((e = cudaGetLastError()) != cudaSuccess)
    return e;
  lsh_hf_bwd_key_kernel<T><<<grid_for(bht, 128), 128, 0, stream>>>(
      B, Tn, H, dh, rounds, chunk, causal, scale, qk, v, ld_in, dout, ld_dout, kn, invn, ord,
      rank, nself, lse, D, kpm, dv, ld_grad, gkey, drop);
  if ((e = cudaGetLastError()) != cudaSuccess)
    return e;
  lsh_hf_bwd_query_kernel<T><<<grid_for(bht, 128), 128, 0, stream>>>(
      B, Tn, H, dh, rounds, chunk, causal, scale, qk, v, ld_in, dout, ld_dout, kn, ord, rank,
      lse, D, kpm, gkey, dqk, ld_grad, drop);
  return cudaGetLastError();
}

/// Device scratch (bytes) of launch_lsh_attention_backward. elem =
/// sizeof(bf16_t): the bf16 launcher's (attention_bf16_backward_layout: qk,
/// v, dout, dqk, dv; it always recomputes).
inline int64_t lsh_attention_backward_workspace_bytes(int64_t B, int64_t Tn, int64_t H,
                                                      int64_t dh, int64_t rounds,
                                                      int64_t elem, int recompute) {
  if (elem == (int64_t)sizeof(bf16_t))
    return attention_bf16_backward_layout(
               nullptr, B * Tn, H * dh,
               lsh_attention_backward_workspace_bytes(B, Tn, H, dh, rounds, sizeof(float), 1), 3,
               2)
        .bytes;
  return lsh_attention_backward_layout(nullptr, B, Tn, H, dh, rounds, elem, recompute != 0)
      .bytes;
}

/// nnk.attention_grad, kind lsh (nncc_attention_backward with
/// NNCC_ATTN_LSH): qk (shared query-key) and v rows of stride ld_in; rot
/// [rounds, dh, nbuckets/2] on the device (the forward's); overwrites dqk
/// (query and key path) and dv (row stride ld_grad). Buckets and sort
/// order are recomputed (constants: no gradient through the argmax).
/// saved_out / saved_lse / core, dropout as launch_flash_attention_backward
/// (the saved lse is the combined one of launch_lsh_attention_train).
/// scratch: lsh_attention_backward_workspace_bytes(B, T, H, dh, rounds,
/// sizeof(T), saved_lse == NULL). f32 / f64 (bf16: the overload below).
template <typename T, int DHS = 0, std::enable_if_t<!is_bf16_v<T>, int> = 0>
inline cudaError_t launch_lsh_attention_backward(
    int dh, int B, int Tn, int H, int rounds, int nbuckets, int chunk, int causal,
    acc_t<T> scale, int same_bucket, const T *qk, const T *v, int64_t ld_in,
    const acc_t<T> *rot, const T *dout,
    int64_t ld_dout, T *dqk, T *dv, int64_t ld_grad, const uint8_t *kpm, double dropout,
    uint64_t seed, uint64_t offset, const T *saved_out, const T *saved_lse, T *core,
    char *scratch, cudaStream_t stream = 0) {
  if (!attention_dropout_valid(dropout) || dh <= 0 || dh > kMaxHeadDim ||
      (DHS != 0 && dh != DHS) || rounds < 1 || rounds > kLshMaxRounds || nbuckets < 2 ||
      nbuckets % 2 || chunk < 1 || same_bucket < 0 || same_bucket > kLshHfConvention)
    return cudaErrorInvalidValue;
  if (B <= 0 || Tn <= 0)
    return cudaSuccess;
  const AttentionDropout<T> drop = attention_dropout_of<T>(dropout, seed, offset);
  const LshBackwardLayout l = lsh_attention_backward_layout(scratch, B, Tn, H, dh, rounds,
                                                            sizeof(T), saved_lse == nullptr);
  AttnForwardRefs<T> r;
  T *fwdOut, *fwdLse;
  int64_t fwdLd = 0;
  if (!attention_backward_refs<T>(saved_out, saved_lse, core, ld_dout,
                                  reinterpret_cast<T *>(l.out), (int64_t)H * dh,
                                  reinterpret_cast<T *>(l.lse), r, fwdOut, fwdLd, fwdLse))
    return cudaErrorInvalidValue;
  cudaError_t e;
  if (fwdLse && (e = lsh_attention_forward<T, DHS>(dh, B, Tn, H, rounds, nbuckets, chunk,
                                                   causal, scale, same_bucket, qk, v, ld_in,
                                                   rot, fwdOut, fwdLd, kpm, fwdLse, drop,
                                                   l.fwd, stream)) != cudaSuccess)
    return e;
  if (same_bucket & kLshHfConvention) {
    T *D = reinterpret_cast<T *>(l.D);
    if ((e = attention_bwd_rowdot<T>(B, Tn, H, dh, dout, ld_dout, r.out, r.ld_out, D,
                                     stream)) != cudaSuccess)
      return e;
    return lsh_hf_backward<T>(dh, B, Tn, H, rounds, nbuckets, chunk, causal, scale, qk, v,
                              ld_in, rot, dout, ld_dout, dqk, dv, ld_grad, kpm, r.lse, D, l,
                              drop, stream);
  }
  T *kn = reinterpret_cast<T *>(l.kn), *invn = reinterpret_cast<T *>(l.inv_norm);
  int32_t *bk = reinterpret_cast<int32_t *>(l.buckets);
  int32_t *ord = reinterpret_cast<int32_t *>(l.order);
  int32_t *rank = reinterpret_cast<int32_t *>(l.rank);
  uint8_t *selfOnly = reinterpret_cast<uint8_t *>(l.self_only);
  T *D = reinterpret_cast<T *>(l.D), *gkey = reinterpret_cast<T *>(l.gkey);
  const int64_t bht = (int64_t)B * H * Tn, bhrt = bht * rounds;
  // Keys, buckets and the sorted order of every round: the forward's kernels.
  if ((e = lsh_normalize_keys<T>(B, Tn, H, dh, qk, ld_in, kn, invn, stream)) != cudaSuccess)
    return e;
  lsh_bucket_kernel<T><<<grid_for(bhrt, 256), 256, 0, stream>>>(B, Tn, H, dh, rounds,
                                                                nbuckets / 2, qk, ld_in, rot, bk);
  if ((e = cudaGetLastError()) != cudaSuccess)
    return e;
  const size_t sortSmem = sizeof(int32_t) * (size_t)nbuckets;
  if (sortSmem > 48 * 1024 &&
      (e = cudaFuncSetAttribute(lsh_sort_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)sortSmem)) != cudaSuccess)
    return e;
  lsh_sort_kernel<<<(unsigned)((int64_t)B * H * rounds), 32, sortSmem, stream>>>(Tn, nbuckets,
                                                                                 bk, ord);
  if ((e = cudaGetLastError()) != cudaSuccess)
    return e;
  lsh_rank_kernel<<<grid_for(bhrt, 256), 256, 0, stream>>>(bhrt, Tn, ord, rank);
  if ((e = cudaGetLastError()) != cudaSuccess)
    return e;
  lsh_self_only_kernel<<<grid_for(bht, 256), 256, 0, stream>>>(
      B, Tn, H, rounds, chunk, causal, same_bucket, bk, ord, rank, kpm, selfOnly);
  if ((e = cudaGetLastError()) != cudaSuccess)
    return e;
  if ((e = attention_bwd_rowdot<T>(B, Tn, H, dh, dout, ld_dout, r.out, r.ld_out, D, stream)) !=
      cudaSuccess)
    return e;
  const T *lse = r.lse;
  if (dh <= kMaxTileHeadDim)
    return attn_tile_dispatch<DHS>(dh, [&](auto dhc, auto exact) -> cudaError_t {
      return lsh_tile_backward<T, decltype(dhc)::value, decltype(exact)::value>(
          dh, B, Tn, H, rounds, chunk, causal, same_bucket, scale, qk, v, ld_in, dout, ld_dout,
          kn, invn, bk, ord, selfOnly, lse, D, kpm, dqk, dv, ld_grad, gkey, drop, stream);
    });
  if constexpr (DHS == 0) {
    // 128 < dh <= kMaxHeadDim: one thread per row (kMaxHeadDim registers).
    constexpr int DH = kMaxHeadDim;
    const dim3 grid((Tn + 127) / 128, H, B);
    lsh_attention_bwd_key_kernel<T, DH, false><<<grid, 128, 0, stream>>>(
        Tn, H, rounds, chunk, causal, same_bucket, scale, qk, v, ld_in, dout, ld_dout, kn, invn,
        bk, ord, rank, selfOnly, lse, D, kpm, dv, ld_grad, gkey, drop, dh);
    if ((e = cudaGetLastError()) != cudaSuccess)
      return e;
    lsh_attention_bwd_query_kernel<T, DH, false><<<grid, 128, 0, stream>>>(
        Tn, H, rounds, chunk, causal, same_bucket, scale, qk, v, ld_in, dout, ld_dout, kn, bk,
        ord, rank, selfOnly, lse, D, kpm, gkey, dqk, ld_grad, drop, dh);
    return cudaGetLastError();
  } else {
    return cudaErrorInvalidValue; // dh past the one head size built
  }
}

/// The bf16 LSH backward: launch_lsh_attention_backward<float, DHS> in
/// recompute mode on fp32 copies of qk, v and dout (rot is fp32 already),
/// its dqk, dv and output rounded once, as the bf16
/// launch_flash_attention_backward. scratch:
/// lsh_attention_backward_workspace_bytes(B, T, H, dh, rounds,
/// sizeof(bf16_t), any).
template <typename T, int DHS = 0, std::enable_if_t<is_bf16_v<T>, int> = 0>
inline cudaError_t launch_lsh_attention_backward(
    int dh, int B, int Tn, int H, int rounds, int nbuckets, int chunk, int causal,
    acc_t<T> scale, int same_bucket, const T *qk, const T *v, int64_t ld_in,
    const acc_t<T> *rot, const T *dout, int64_t ld_dout, T *dqk, T *dv, int64_t ld_grad,
    const uint8_t *kpm, double dropout, uint64_t seed, uint64_t offset, const T *saved_out,
    const T *saved_lse, T *core, char *scratch, cudaStream_t stream = 0) {
  if (!attention_dropout_valid(dropout) || dh <= 0 || dh > kMaxHeadDim ||
      (DHS != 0 && dh != DHS) || rounds < 1 || rounds > kLshMaxRounds || nbuckets < 2 ||
      nbuckets % 2 || chunk < 1 || (saved_lse && !saved_out))
    return cudaErrorInvalidValue;
  if (B <= 0 || Tn <= 0)
    return cudaSuccess;
  const int E = H * dh;
  const int64_t rows = (int64_t)B * Tn;
  const AttnBf16BackwardLayout l = attention_bf16_backward_layout(
      scratch, rows, E,
      lsh_attention_backward_workspace_bytes(B, Tn, H, dh, rounds, sizeof(float), 1), 3, 2);
  const float *out32 = reinterpret_cast<const float *>(
      lsh_attention_backward_layout(l.f32, B, Tn, H, dh, rounds, sizeof(float), true).out);
  return attn_bf16_backward(
      rows, E, qk, (const T *)nullptr, v, ld_in, dout, ld_dout, dqk, (T *)nullptr, dv, ld_grad,
      saved_lse ? nullptr : core, out32, l,
      [&](const float *qk32, const float *, const float *v32, const float *dout32,
          float *dqk32, float *, float *dv32) {
        return launch_lsh_attention_backward<float, DHS>(
            dh, B, Tn, H, rounds, nbuckets, chunk, causal, scale, same_bucket, qk32, v32, E, rot,
            dout32, E, dqk32, dv32, E, kpm, dropout, seed, offset, nullptr, nullptr, nullptr,
            l.f32, stream);
      },
      stream);
}

} // namespace cuda
} // namespace kernels
} // namespace nncc

#endif // NNCC_KERNELS_CUDA_ATTENTIONBACKWARD_CUH
